"""The HTML report: one self-contained page with the plots, the tables, the environment and the hints."""

from __future__ import annotations

import re
from pathlib import Path

from ortgpu.report.html import figures, render_html, write_report


def test_page_is_self_contained_and_complete(gpu_like_result) -> None:
    page = render_html(gpu_like_result)
    for ident in (
        "cases",
        "environment",
        "plot-distribution",
        "plot-batch",
        "plot-concurrency",
        "plot-cpu-gpu",
        "plot-timeline",
    ):
        assert f'id="{ident}"' in page
    images = re.findall(r'<img [^>]*src="([^"]+)"', page)
    assert len(images) == 5 and all(src.startswith("data:image/png;base64,") for src in images)
    # nothing fetched from elsewhere: no script, stylesheet link, or remote URL
    assert "<script" not in page and "<link" not in page
    assert not re.search(r'(src|href)="(https?:|//|file:)', page)
    assert gpu_like_result.model.sha256 in page
    assert "vs CPU" in page and "x</td>" in page  # the speed-up column is filled


def test_plots_that_do_not_apply_say_why(cpu_result) -> None:
    import dataclasses

    single = dataclasses.replace(
        cpu_result, settings=dataclasses.replace(cpu_result.settings, batches=(1,), concurrency=(1,))
    )
    by_id = {f.ident: f for f in figures(single)}
    assert by_id["plot-batch"].png is None and "--batch" in by_id["plot-batch"].missing
    assert by_id["plot-concurrency"].png is None and "--concurrency" in by_id["plot-concurrency"].missing
    assert by_id["plot-cpu-gpu"].png is None and "--compare-cpu" in by_id["plot-cpu-gpu"].missing
    assert "Not plotted: needs a GPU EP and --compare-cpu" in render_html(single)


def test_hints_and_skips_are_on_the_page(cpu_result) -> None:
    page = render_html(cpu_result)
    assert "skipped" in page and "CUDA graphs need a GPU" in page
    for hint in cpu_result.hints:
        assert hint.kind.value in page


def test_write_report_is_atomic(tmp_path: Path, cpu_result) -> None:
    path = write_report(cpu_result, tmp_path / "report.html")
    assert path.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_every_case_status_and_verdict_renders(cpu_result, tmp_path: Path) -> None:
    import dataclasses

    from ortgpu.bench.archive import compare_to_baseline
    from ortgpu.bench.result import BaselineVerdict, CaseStatus
    from ortgpu.cli.bench import render
    from ortgpu.cli.output import stdout_console

    base = cpu_result.cases[0]
    cases = tuple(dataclasses.replace(base, status=s, reason=f"because {s.value}") for s in CaseStatus)
    result = dataclasses.replace(cpu_result, cases=cases)
    comparison = compare_to_baseline(result, result, tmp_path / "b.json", 0.1)
    rows = tuple(dataclasses.replace(comparison.cases[0], verdict=v) for v in BaselineVerdict)
    result = dataclasses.replace(result, comparison=dataclasses.replace(comparison, cases=rows))
    page = render_html(result)
    for status in CaseStatus:
        assert f"because {status.value}" in page
    for verdict in BaselineVerdict:
        assert f">{verdict.value}</td>" in page
    render(result, stdout_console())  # the table renderer knows every status and verdict too
