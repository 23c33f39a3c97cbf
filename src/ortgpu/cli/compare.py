"""`ortgpu compare A [B]`: outputs, latency and library needs of two runs, side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ortgpu.check import parse_tolerances
from ortgpu.cli.accuracy_render import num, render_nonfinite, render_parity_table
from ortgpu.cli.check import render_layerwise
from ortgpu.cli.options import input_spec, model_input_options
from ortgpu.cli.output import emit, json_option, progress_reporter
from ortgpu.cli.output import safe as escape
from ortgpu.cli.params import FlagError, int_flag, parse_percent, parse_seconds
from ortgpu.compare import CompareRequest, run_compare
from ortgpu.config import load_config
from ortgpu.ep import ExecutionProvider
from ortgpu.report.accuracy import write_compare_report

__all__ = ["command", "render"]


def _env_pairs(values: tuple[str, ...]) -> dict[str, str]:
    pairs = {}
    for text in values:
        name, sep, value = text.partition("=")
        if not sep or not name:
            raise FlagError(f"--python-env {text!r}: expected NAME=VALUE", "e.g. --python-env PYTHONPATH= (unsets it)")
        pairs[name] = value
    return pairs


@click.command("compare")
@click.argument("a", type=click.Path(path_type=Path))
@click.argument("b", type=click.Path(path_type=Path), required=False)
@click.option("--ep", "ep_name", metavar="EP", help="EP of both sides (default cpu).")
@click.option("--ep-a", "ep_a_name", metavar="EP", help="EP of side A (wins over --ep).")
@click.option("--ep-b", "ep_b_name", metavar="EP", help="EP of side B (wins over --ep).")
@click.option("--python", "python", metavar="OTHER_PY", help="Run side B with this interpreter's onnxruntime.")
@click.option("--python-env", "python_env", multiple=True, metavar="NAME=VALUE", help="Set for OTHER_PY; NAME= unsets.")
@click.option("--package", type=click.Path(path_type=Path), metavar="PATH", help="Run side B through this C library.")
@click.option("--package-a", type=click.Path(path_type=Path), metavar="PATH", help="Run side A through this C library.")
@click.option("--config", "config_path", type=click.Path(path_type=Path), help="ortgpu.toml (see docs/config.md).")
@click.option("--device", "device_text", metavar="N", help="CUDA device id.")
@model_input_options
@click.option("--samples", "samples_text", metavar="N", help="Generated samples (or the most taken from --inputs).")
@click.option("--atol", multiple=True, metavar="[OUTPUT:]VALUE", help="Absolute tolerance of B against A.")
@click.option("--rtol", multiple=True, metavar="[OUTPUT:]VALUE", help="Relative tolerance of B against A.")
@click.option("--layerwise", is_flag=True, help="Compare every intermediate tensor (two models in this process).")
@click.option("--no-latency", is_flag=True, help="Do not time the two sides.")
@click.option("--duration", "duration_text", default="1", show_default=True, metavar="SECONDS", help="Timing per side.")
@click.option("--max-regression", "regression_text", default="10%", show_default=True, help="B slower than A: fail.")
@click.option("--report", type=click.Path(path_type=Path), help="Write an HTML report here.")
@json_option
def command(
    a: Path,
    b: Path | None,
    ep_name: str | None,
    ep_a_name: str | None,
    ep_b_name: str | None,
    python: str | None,
    python_env: tuple[str, ...],
    package: Path | None,
    package_a: Path | None,
    config_path: Path | None,
    device_text: str | None,
    shapes: tuple[tuple[str, tuple[int, ...]], ...],
    dims: tuple[tuple[str, int], ...],
    ranges: tuple[tuple[str, tuple[float, float]], ...],
    npz: Path | None,
    samples_text: str | None,
    seed: int | None,
    atol: tuple[str, ...],
    rtol: tuple[str, ...],
    layerwise: bool,
    no_latency: bool,
    duration_text: str,
    regression_text: str,
    report: Path | None,
    as_json: bool,
) -> int:
    """Compare two runs of a model on the same data: A and B are .onnx models or .npz saved outputs.

    Two EPs on one model (--ep-a cpu --ep-b cuda), two models (fp32 vs fp16), saved outputs, another Python's
    onnxruntime (--python OTHER_PY: the upgrade check) or a release archive's C library (--package PATH).
    Exit 0 the same within tolerance; 1 outputs differ beyond tolerance, or B's latency regressed beyond
    --max-regression; 2 bad input; 3 a side cannot run here.
    """

    config = load_config(config_path)
    both = ExecutionProvider.parse(ep_name) if ep_name else ExecutionProvider.CPU
    request = CompareRequest(
        a=a,
        b=b,
        ep_a=ExecutionProvider.parse(ep_a_name) if ep_a_name else both,
        ep_b=ExecutionProvider.parse(ep_b_name) if ep_b_name else both,
        python=python,
        python_env=_env_pairs(python_env),
        package=package,
        package_a=package_a,
        config=config_path,
        device_id=int_flag(device_text, "--device"),
        inputs=input_spec(config.inputs, shapes, dims, ranges, npz, seed),
        samples=int_flag(samples_text, "--samples", minimum=1),
        atol=parse_tolerances(atol, "--atol"),
        rtol=parse_tolerances(rtol, "--rtol"),
        layerwise=layerwise,
        latency=not no_latency,
        duration_s=parse_seconds(duration_text, "--duration"),
        max_regression=parse_percent(regression_text, "--max-regression"),
        report=report,
    )
    with progress_reporter(not as_json) as progress:
        result = run_compare(request, progress)
    if result.report_to is not None:
        write_compare_report(result, result.report_to)
    emit("compare", result, as_json, render)
    return 0 if result.passed else 1


def render(result: Any, console: Any) -> None:
    """The human rendering of a CompareResult: sides, outputs, layer-wise, latency, needs, verdict."""
    from rich.table import Table

    for side in (result.a, result.b):
        console.print(f"[bold]{escape(side.label)}[/]")
        if side.providers:
            console.print(f"  [dim]providers: {escape(', '.join(side.providers))}[/]")
    console.print(f"  data: {escape(result.dataset)}")
    for note in result.notes:
        console.print(f"  [dim]{escape(note)}[/]")
    console.print("\n[bold]Outputs: B against A[/]")
    render_parity_table(result.outputs, console)
    for name in result.only_in_a:
        console.print(f"  [red]output {escape(name)!r} only in A[/]")
    for name in result.only_in_b:
        console.print(f"  [red]output {escape(name)!r} only in B[/]")
    for side in (result.a, result.b):
        if side.nonfinite:
            console.print(f"  NaN/Inf in {side.name}:")
            render_nonfinite(side.nonfinite, console, allowed=True)
    if result.layerwise is not None:
        render_layerwise(result.layerwise, console)
    latency = result.latency
    if latency is not None:
        if latency.note:
            console.print(f"\n[bold]Latency[/]  [dim]{escape(latency.note)}[/]")
        else:
            delta = latency.delta
            colour = "red" if latency.regressed else "green"
            change = "–" if delta is None else f"{delta:+.1%}"
            console.print(
                f"\n[bold]Latency[/]  p50 A {num(latency.a_p50_ms)} ms, B {num(latency.b_p50_ms)} ms: "
                f"[{colour}]{change}[/] (allowed +{latency.max_regression:.0%})"
            )
            console.print(f"  [dim]{escape(latency.method)}; batch {latency.batch}[/]")
    needs = result.needs
    if needs is not None:
        console.print("\n[bold]Library needs[/]")
        if needs.error:
            console.print(f"  [yellow]not analysed: {escape(needs.error)}[/]")
        else:
            console.print(f"  [dim]A: {escape(needs.a)}\n  B: {escape(needs.b)}[/]")
            table = Table(show_edge=False, pad_edge=False)
            for column in ("needs", "A", "B", ""):
                table.add_column(column)
            for change in needs.requirements:
                mark = "[yellow]changed[/]" if change.changed else "[dim]same[/]"
                table.add_row(escape(change.kind), escape(change.a or "–"), escape(change.b or "–"), mark)
            table.add_row("providers", escape(", ".join(needs.providers_a)), escape(", ".join(needs.providers_b)), "")
            console.print(table)
            if needs.needs_added:
                console.print(f"  B also needs: {escape(', '.join(needs.needs_added))}")
            if needs.needs_removed:
                console.print(f"  B no longer needs: {escape(', '.join(needs.needs_removed))}")
    if result.report_to is not None:
        console.print(f"\nreport written to {escape(str(result.report_to))}")
    colour = "green" if result.passed else "red"
    console.print(f"\n[bold {colour}]{escape(result.verdict)}[/]")
    for failure in result.failures[1:]:
        console.print(f"[red]  also: {escape(failure)}[/]")
