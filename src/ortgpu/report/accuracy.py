"""Accuracy reports: one self-contained HTML page per check or compare, with the parity table, NaN/Inf,
error histograms and the layer-wise divergence."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortgpu.report.html import _STYLE, Figure, _e, _png

if TYPE_CHECKING:  # pragma: no cover
    from ortgpu.accuracy.layerwise import LayerwiseReport
    from ortgpu.accuracy.metrics import ErrorHistogram
    from ortgpu.accuracy.nonfinite import NonFinite
    from ortgpu.check.parity import OutputParity
    from ortgpu.check.result import CheckResult
    from ortgpu.compare.result import CompareResult

__all__ = [
    "histogram_figure",
    "layerwise_html",
    "nonfinite_html",
    "page",
    "parity_html",
    "render_check_html",
    "render_compare_html",
    "write_check_report",
    "write_compare_report",
]


def _num(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float) and math.isinf(value):
        return "∞" if value > 0 else "-∞"
    return f"{value:.{digits}g}"


def histogram_figure(name: str, histogram: ErrorHistogram | None, ident: str) -> Figure:
    """Bar chart of |error| by decade for one output (exact matches as their own bar)."""
    title = f"Errors of {name}"
    if histogram is None or histogram.total == 0:
        return Figure(ident, title, "", None, "no element finite on both sides")
    labels = ["exact"] + [f"≤{e:.0e}" for e in histogram.edges[1:]]
    counts = [histogram.exact, *histogram.counts]

    def draw(fig: Any) -> None:
        ax = fig.add_subplot()
        bars = ax.bar(range(len(counts)), counts, color=["#17803d"] + ["#3a6fb0"] * (len(counts) - 1))
        ax.set_xticks(range(len(counts)), labels, rotation=45, ha="right", fontsize=8)
        ax.set_ylabel("elements")
        ax.set_xlabel("|actual - reference|")
        if max(counts) > 0:
            ax.set_yscale("symlog", linthresh=1)
        for bar, count in zip(bars, counts, strict=True):
            if count:
                ax.annotate(
                    str(count),
                    (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                    ha="center",
                    va="bottom",
                    fontsize=7,
                )
        ax.grid(axis="y", alpha=0.3)

    caption = f"{histogram.total} elements finite on both sides, by decade of absolute error."
    return Figure(ident, title, caption, _png(draw, (8, 3)))


def parity_html(outputs: Sequence[OutputParity]) -> str:
    """The per-output table: status, every metric, the tolerance used and the one that would pass."""
    head = (
        "<tr><th class=l>output</th><th>result</th><th>max abs</th><th>max rel</th><th>mean abs</th>"
        "<th>median abs</th><th>cosine</th><th>SNR dB</th><th>atol / rtol used</th><th>would pass with atol</th>"
        "<th>or rtol</th><th>NaN/Inf</th><th class=l>worst sample</th></tr>"
    )
    rows = []
    for out in outputs:
        css = {"pass": "ok", "fail": "bad", "skipped": "dim"}[out.status.value]
        verdict = out.status.value + (f": {out.mismatches}/{out.elements} off" if out.status.value == "fail" else "")
        sample = f"{out.sample} ({out.samples_failed}/{out.samples} failed)" if out.samples > 1 else ""
        rows.append(
            f"<tr><td class=l>{_e(out.name)}</td><td class='{css}'>{_e(verdict)}</td><td>{_num(out.max_abs)}</td>"
            f"<td>{_num(out.max_rel)}</td><td>{_num(out.mean_abs)}</td><td>{_num(out.median_abs)}</td>"
            f"<td>{_num(out.cosine, 7)}</td><td>{_num(out.snr_db)}</td>"
            f"<td>{_num(out.atol)} / {_num(out.rtol)}</td><td>{_num(out.min_atol)}</td><td>{_num(out.min_rtol)}</td>"
            f"<td>{out.nan_count}/{out.inf_count}</td><td class=l>{_e(sample)}</td></tr>"
        )
        if out.reason:
            rows.append(f"<tr><td class=l></td><td class='l dim' colspan=12>{_e(out.reason)}</td></tr>")
    return f"<table class=parity>{head}{''.join(rows)}</table>"


def nonfinite_html(items: Sequence[NonFinite], allowed: bool) -> str:
    if not items:
        return "<p class=ok>No NaN or Inf in any output.</p>"
    css = "warn" if allowed else "bad"
    lines = "".join(f"<li class={css}>{_e(item.line())}</li>" for item in items)
    note = " (allowed: --allow-nonfinite)" if allowed else ""
    return f"<p class={css}>NaN/Inf found{_e(note)}:</p><ul>{lines}</ul>"


def layerwise_html(report: LayerwiseReport | None) -> str:
    if report is None:
        return ""
    lines = [f"<p>{_e(report.summary())}</p>"]
    lines += [f"<p class=dim>{_e(note)}</p>" for note in report.notes]
    shown = report.first_divergent[:40]
    if shown:
        head = (
            "<tr><th>#</th><th class=l>tensor</th><th class=l>op</th><th class=l>node</th><th>max abs</th>"
            "<th>max rel</th><th>cosine</th><th>NaN/Inf</th><th class=l>root</th></tr>"
        )
        rows = "".join(
            f"<tr><td>{t.position}</td><td class=l>{_e(t.name)}</td><td class=l>{_e(t.op_type)}</td>"
            f"<td class=l>{_e(t.node_name)}</td><td>{_num(t.max_abs)}</td><td>{_num(t.max_rel)}</td>"
            f"<td>{_num(t.cosine, 6)}</td><td>{t.nonfinite}</td><td class=l>{'yes' if t.root else ''}</td></tr>"
            for t in shown
        )
        lines.append(f"<table class=layerwise>{head}{rows}</table>")
    return "".join(lines)


def page(title: str, subtitle: str, sections: Sequence[tuple[str, str]]) -> str:
    """A whole self-contained page: no external file, script or font."""
    body = "".join(f"<h2>{_e(name)}</h2>{html}" for name, html in sections if html)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>
<style>{_STYLE}</style></head><body>
<h1>{_e(title)}</h1><p class="sub">{_e(subtitle)}</p>
{body}
</body></html>
"""


def render_check_html(result: CheckResult) -> str:
    parity = result.parity
    against = {"cpu-ep": "the CPU EP", "file": str(parity.reference_path), "none": "nothing"}[parity.reference.value]
    plots = "".join(
        histogram_figure(out.name, out.histogram, f"hist-{i}").html() for i, out in enumerate(parity.outputs)
    )
    data = result.dataset_source or "generated"
    sections = [
        (
            "Verdict",
            f"<p class={'ok' if result.passed else 'bad'}>{_e(result.verdict)}</p>"
            + "".join(f"<p class=bad>{_e(f)}</p>" for f in result.failures[1:]),
        ),
        ("NaN and Inf", nonfinite_html(result.nonfinite, result.allow_nonfinite)),
        (
            f"Parity against {against}",
            f"<p>{_e(parity.status.value)}"
            + (f": {_e(parity.reason)}" if parity.reason else "")
            + "</p>"
            + parity_html(parity.outputs),
        ),
        ("Error histograms", plots),
        ("Layer-wise", layerwise_html(getattr(result, "layerwise", None))),
    ]
    subtitle = (
        f"{result.requested_ep.value} EP (active {', '.join(result.providers)}), onnxruntime {result.ort_version}; "
        f"inputs: {data}"
    )
    return page(f"ortgpu check: {result.model.name}", subtitle, sections)


def write_check_report(result: CheckResult, path: str | Path) -> Path:
    """Write the check report atomically; returns the path."""
    from ortgpu.atomic import atomic_write_text

    return atomic_write_text(path, render_check_html(result))


def _latency_html(result: CompareResult) -> str:
    latency = result.latency
    if latency is None:
        return ""
    if latency.note:
        return f"<p class=dim>{_e(latency.note)}</p>"
    delta = latency.delta
    css = "bad" if latency.regressed else "ok"
    rows = (
        f"<tr><th class=l></th><th>p50 ms</th><th>p95 ms</th></tr>"
        f"<tr><td class=l>A</td><td>{_num(latency.a_p50_ms, 4)}</td><td>{_num(latency.a_p95_ms, 4)}</td></tr>"
        f"<tr><td class=l>B</td><td>{_num(latency.b_p50_ms, 4)}</td><td>{_num(latency.b_p95_ms, 4)}</td></tr>"
    )
    change = "–" if delta is None else f"{delta:+.1%}"
    return (
        f"<p>{_e(latency.method)}; batch {latency.batch}.</p><table>{rows}</table>"
        f"<p class={css}>B against A: {_e(change)} (allowed: +{latency.max_regression:.0%})</p>"
    )


def _needs_html(result: CompareResult) -> str:
    needs = result.needs
    if needs is None:
        return ""
    if needs.error:
        return f"<p class=warn>not analysed: {_e(needs.error)}</p>"
    rows = "".join(
        f"<tr><td class=l>{_e(r.kind)}</td><td class=l>{_e(r.a or '–')}</td><td class=l>{_e(r.b or '–')}</td>"
        f"<td class='l {'warn' if r.changed else 'dim'}'>{'changed' if r.changed else 'same'}</td></tr>"
        for r in needs.requirements
    )
    rows += (
        f"<tr><td class=l>providers</td><td class=l>{_e(', '.join(needs.providers_a))}</td>"
        f"<td class=l>{_e(', '.join(needs.providers_b))}</td><td></td></tr>"
    )
    table = f"<table><tr><th class=l>needs</th><th class=l>A</th><th class=l>B</th><th></th></tr>{rows}</table>"
    extra = ""
    if needs.needs_added:
        extra += f"<p>B also needs: {_e(', '.join(needs.needs_added))}</p>"
    if needs.needs_removed:
        extra += f"<p>B no longer needs: {_e(', '.join(needs.needs_removed))}</p>"
    return f"<p>A: {_e(needs.a)}<br>B: {_e(needs.b)}</p>{table}{extra}"


def render_compare_html(result: CompareResult) -> str:
    plots = "".join(
        histogram_figure(out.name, out.histogram, f"hist-{i}").html() for i, out in enumerate(result.outputs)
    )
    nonfinite = "".join(nonfinite_html(side.nonfinite, True) for side in (result.a, result.b) if side.nonfinite)
    sides = f"<p>{_e(result.a.label)}<br>{_e(result.b.label)}</p><p>data: {_e(result.dataset)}</p>"
    sections = [
        (
            "Verdict",
            f"<p class={'ok' if result.passed else 'bad'}>{_e(result.verdict)}</p>"
            + "".join(f"<p class=bad>{_e(f)}</p>" for f in result.failures[1:]),
        ),
        ("Sides", sides),
        ("Outputs: B against A", parity_html(result.outputs) + nonfinite),
        ("Error histograms", plots),
        ("Layer-wise", layerwise_html(result.layerwise)),
        ("Latency", _latency_html(result)),
        ("Library needs", _needs_html(result)),
    ]
    return page(f"ortgpu compare: {result.a.path.name} vs {result.b.path.name}", result.verdict, sections)


def write_compare_report(result: CompareResult, path: str | Path) -> Path:
    """Write the compare report atomically; returns the path."""
    from ortgpu.atomic import atomic_write_text

    return atomic_write_text(path, render_compare_html(result))
