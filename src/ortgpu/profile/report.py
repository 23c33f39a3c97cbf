"""The profile report: one self-contained HTML page (charts embedded as PNG), rendered from a ProfileResult."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ortgpu.atomic import atomic_write_text
from ortgpu.profile.result import ProfileResult, ProfileRun
from ortgpu.report.html import STYLE, Figure, escape, png

__all__ = ["figures", "render_html", "write_report"]

_TOP_OPS = 15
_PALETTE = ("#3b6fb6", "#e07b39", "#5aa05a", "#c04848", "#8c6bb1", "#8a93a2", "#d4a017", "#2a9d8f")


def _short(provider: str) -> str:
    return provider.removesuffix("ExecutionProvider") or provider


def _colours(keys: Sequence[str]) -> dict[str, str]:
    return {k: _PALETTE[i % len(_PALETTE)] for i, k in enumerate(dict.fromkeys(keys))}


def _top_ops(run: ProfileRun, ident: str) -> Figure:
    title = f"Top op types per run ({run.label})"
    rows = [r for r in run.ops if r.share is not None][:_TOP_OPS]
    if not rows:
        return Figure(ident, title, "", None, "no node ran")
    colours = _colours([r.provider for r in rows])

    def draw(fig: Any) -> None:
        ax = fig.add_subplot()
        labels = [f"{r.op_type} ({_short(r.provider)})" for r in rows]
        values = [r.per_run_us / 1000 for r in rows]
        bars = ax.barh(range(len(rows)), values, color=[colours[r.provider] for r in rows])
        for bar, row in zip(bars, rows, strict=True):
            ax.annotate(
                f" {row.share:.0%}", (bar.get_width(), bar.get_y() + bar.get_height() / 2), va="center", fontsize=8
            )
        ax.set_yticks(range(len(rows)), labels)
        ax.invert_yaxis()
        ax.set_xlabel("time per run (ms); label: share of the node time")
        ax.grid(axis="x", alpha=0.3)

    return Figure(ident, title, "Heaviest first; colour: provider.", png(draw, (10, 1.0 + 0.32 * len(rows))))


def _provider_split(run: ProfileRun, ident: str) -> Figure:
    title = f"Node time by provider ({run.label})"
    shares = {k: v for k, v in run.provider_share.items() if v > 0}
    if not shares:
        return Figure(ident, title, "", None, "no node time recorded")
    colours = _colours(list(shares))

    def draw(fig: Any) -> None:
        ax = fig.add_subplot()
        left = 0.0
        for key, share in shares.items():
            ax.barh([0], [share * 100], left=[left], color=colours[key], label=f"{_short(key)} {share:.1%}")
            left += share * 100
        ax.set_xlim(0, 100)
        ax.set_yticks([])
        ax.set_xlabel("share of the node time (%)")
        ax.legend(fontsize=8, ncol=min(len(shares), 4), loc="upper center", bbox_to_anchor=(0.5, -0.45))

    return Figure(ident, title, "Memcpy: the copies ORT inserted between the GPU and the CPU.", png(draw, (10, 1.8)))


def _timeline(run: ProfileRun, ident: str) -> Figure:
    title = f"Timeline of the median profiled run ({run.label})"
    entries = [e for e in run.timeline if e.op_type not in ("If", "Loop", "Scan")]
    if not entries:
        return Figure(ident, title, "", None, "no node of the run was recorded")
    ops = [r.op_type for r in run.ops if r.share is not None][:8]
    colours = {**_colours(ops), "other": "#c8ccd4"}
    lanes = list(dict.fromkeys(_short(e.provider) for e in entries))

    def draw(fig: Any) -> None:
        ax = fig.add_subplot()
        for lane, provider in enumerate(lanes):
            for entry in (e for e in entries if _short(e.provider) == provider):
                key = entry.op_type if entry.op_type in ops else "other"
                ax.broken_barh(
                    [(entry.start_us / 1000, max(entry.dur_us, 0.5) / 1000)], (lane - 0.4, 0.8), color=colours[key]
                )
        ax.set_yticks(range(len(lanes)), lanes)
        ax.set_xlabel("time since the run started (ms)")
        from matplotlib.patches import Patch

        handles = [Patch(color=colours[k], label=k) for k in colours]
        ax.legend(handles=handles, fontsize=7, ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.3))
        ax.grid(axis="x", alpha=0.3)

    return Figure(
        ident,
        title,
        "One bar per node, one lane per provider; colour: op type (the heaviest eight). The full trace of every run "
        "is in the chrome-trace file.",
        png(draw, (10, 2.2 + 0.5 * len(lanes))),
    )


def figures(result: ProfileResult) -> list[Figure]:
    """Every chart of the report, in page order (absent ones say why)."""
    out = []
    for index, run in enumerate(result.runs):
        out += [
            _top_ops(run, f"plot-ops-{index}"),
            _provider_split(run, f"plot-providers-{index}"),
            _timeline(run, f"plot-timeline-{index}"),
        ]
    return out


def _us(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:,.1f}"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def _table(ident: str, head: Sequence[str], rows: Sequence[Sequence[object]], left: int = 1) -> str:
    header = "".join(f'<th class="{"l" if i < left else ""}">{escape(h)}</th>' for i, h in enumerate(head))
    body = "".join(
        "<tr>" + "".join(f'<td class="{"l" if i < left else ""}">{escape(c)}</td>' for i, c in enumerate(row)) + "</tr>"
        for row in rows
    )
    return f'<table id="{ident}"><tr>{header}</tr>{body}</table>'


def _run_section(run: ProfileRun, index: int, plots: dict[str, Figure]) -> str:
    times = run.run_times
    hints = "".join(f'<div class="hint"><b>{escape(h.kind.value)}</b>: {escape(h.message)}</div>' for h in run.hints)
    ops = _table(
        f"ops-{index}",
        ("op type", "provider", "nodes", "calls", "µs per run", "µs per call", "share"),
        [
            (
                r.op_type + (" (includes its subgraph)" if r.contains_subgraph else ""),
                _short(r.provider),
                r.nodes,
                r.calls,
                _us(r.per_run_us),
                _us(r.mean_us),
                _pct(r.share),
            )
            for r in run.ops
        ],
        left=2,
    )
    nodes = _table(
        f"nodes-{index}",
        ("node", "op type", "provider", "calls", "µs per run", "µs per call", "share"),
        [
            (r.name, r.op_type, _short(r.provider), r.calls, _us(r.per_run_us), _us(r.mean_us), _pct(r.share))
            for r in run.nodes
        ],
        left=3,
    )
    parts = [
        f"<h2>{escape(run.label)}: {escape(run.ep.value)} EP</h2>",
        f'<p class="sub">{run.runs_profiled} profiled run(s) after {run.warmup_runs} warm-up run(s) (left out); '
        f"run time under the profiler: mean {times.mean_us / 1000:.3f} ms, median {times.median_us / 1000:.3f} ms, "
        f"min {times.min_us / 1000:.3f} ms; "
        f"node time {times.node_us_per_run / 1000:.3f} ms per run ({times.node_coverage:.0%} of the run).<br>"
        f"{escape(run.timing_note)}<br>providers: {escape(', '.join(run.providers))}; provider options: "
        f"{escape('; '.join(f'{k}={v}' for k, v in run.provider_options.items()) or 'defaults')}<br>"
        f"trace for chrome://tracing or ui.perfetto.dev: <code>{escape(run.trace)}</code></p>",
        "<h3>Hints</h3>" + (hints or '<p class="ok">Nothing stands out.</p>'),
        plots[f"plot-ops-{index}"].html(),
        plots[f"plot-providers-{index}"].html(),
        "<h3>Op types</h3>" + ops,
        f"<h3>Nodes (heaviest {len(run.nodes)} of {run.node_count})</h3>" + nodes,
    ]
    if run.memcpy.nodes:
        parts.append(
            f"<h3>Memcpy</h3><p>{run.memcpy.nodes} copy node(s), {run.memcpy.calls_per_run:g} copies and "
            f"{_us(run.memcpy.per_run_us)} µs per run ({_pct(run.memcpy.share)} of the node time); they serve: "
            f"{escape('; '.join(run.memcpy.serves) or 'not known')}</p>"
        )
    if run.cpu_in_gpu:
        parts.append(
            f"<h3>CPU EP inside the GPU run ({_pct(run.cpu_in_gpu_share)})</h3>"
            + _table(
                f"cpu-{index}",
                ("node", "op type", "µs per run", "share", "why on CPU"),
                [(c.name, c.op_type, _us(c.per_run_us), _pct(c.share), c.reason or "–") for c in run.cpu_in_gpu],
                left=2,
            )
        )
    if run.kernels:
        parts.append(
            "<h3>CUDA kernels</h3>"
            + _table(
                f"kernels-{index}",
                ("kernel", "node", "op type", "calls", "µs per run"),
                [(k.kernel, k.node, k.op_type, k.calls, _us(k.per_run_us)) for k in run.kernels],
                left=3,
            )
        )
    elif run.kernels_note:
        parts.append(f'<h3>CUDA kernels</h3><p class="dim">{escape(run.kernels_note)}</p>')
    fusion = run.fusion
    if fusion.available:
        changes = [(op, f"-{n}") for op, n in fusion.removed.items()] + [
            (op, f"+{n}") for op, n in fusion.created.items()
        ]
        parts.append(
            f"<h3>Fusion</h3><p>{escape(fusion.note)}.</p>"
            + (_table(f"fusion-{index}", ("op type", "nodes"), changes) if changes else "")
        )
    else:
        parts.append(f'<h3>Fusion</h3><p class="dim">{escape(fusion.note)}</p>')
    parts.append(plots[f"plot-timeline-{index}"].html())
    parts += [f'<p class="dim">{escape(n)}</p>' for n in run.notes]
    return "".join(parts)


def _comparison(result: ProfileResult) -> str:
    if not result.comparison:
        return ""
    base, other = result.runs[0], result.runs[1]
    rows = [
        (
            r.op_type,
            _us(r.base_per_run_us),
            _pct(r.base_share),
            _us(r.other_per_run_us),
            _pct(r.other_share),
            f"{r.delta_us:+,.1f}",
        )
        for r in result.comparison
    ]
    head = ("op type", f"{base.label} µs/run", "share", f"{other.label} µs/run", "share", "Δ µs/run")
    return (
        f"<h2>{escape(base.label)} vs {escape(other.label)}</h2><p>Median run {base.run_times.median_us / 1000:.3f} "
        f"ms vs {other.run_times.median_us / 1000:.3f} ms under the profiler.</p>" + _table("compare", head, rows)
    )


def render_html(result: ProfileResult) -> str:
    """The whole report as one HTML string: no external file, script or font is referenced."""
    plots = {f.ident: f for f in figures(result)}
    heading = f"ortgpu profile: {result.model.name}"
    sections = "".join(_run_section(run, i, plots) for i, run in enumerate(result.runs))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(heading)}</title>
<style>{STYLE}</style></head><body>
<h1>{escape(heading)}</h1>
<p class="sub">{result.model_node_count} nodes as exported, sha256 {escape(result.model_sha256[:16])},
onnxruntime {escape(result.ort_version)}, profiled in {result.elapsed_s:.1f} s</p>
{_comparison(result)}{sections}
</body></html>
"""


def write_report(result: ProfileResult, path: str | Path) -> Path:
    """Write the report atomically; returns the path."""

    return atomic_write_text(path, render_html(result))
