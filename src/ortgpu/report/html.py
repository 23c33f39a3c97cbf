"""The bench report: one self-contained HTML page (plots embedded as PNG), rendered from a BenchResult."""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from ortgpu.atomic import atomic_write_text
from ortgpu.bench.result import BenchCase, BenchResult

__all__ = ["STYLE", "Figure", "escape", "figures", "png", "render_html", "write_report"]

_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1180px;color:#1d2430}
h1{font-size:1.5em;margin-bottom:4px} h2{font-size:1.15em;margin-top:28px;border-bottom:1px solid #d8dde6}
.sub{color:#5a6474} table{border-collapse:collapse;font-size:.86em;margin:8px 0}
th,td{border:1px solid #d8dde6;padding:3px 7px;text-align:right} th{background:#f2f4f8}
td.l,th.l{text-align:left} .ok{color:#17803d} .warn{color:#b26b00} .bad{color:#c0262d} .dim{color:#8a93a2}
.hint{margin:4px 0;padding:6px 10px;border-left:4px solid #b26b00;background:#fff8ec}
.hint.failed,.hint.gpu-slower-than-cpu{border-color:#c0262d;background:#fff0f0}
figure{margin:14px 0} figure img{max-width:100%;border:1px solid #e4e7ee} figcaption{color:#5a6474;font-size:.9em}
code{background:#f2f4f8;padding:1px 4px}
"""


class Figure:
    """One plot of the report: its id, title, caption, and the PNG bytes (None when it does not apply)."""

    def __init__(self, ident: str, title: str, caption: str, png: bytes | None, missing: str | None = None) -> None:
        self.ident = ident
        self.title = title
        self.caption = caption
        self.png = png
        self.missing = missing  # why the plot is absent, said on the page

    def html(self) -> str:
        if self.png is None:
            missing = _e(self.missing or "")
            return f'<h3>{_e(self.title)}</h3><p class="dim" id="{self.ident}">Not plotted: {missing}</p>'
        data = base64.b64encode(self.png).decode("ascii")
        return (
            f'<figure id="{self.ident}"><h3>{_e(self.title)}</h3>'
            f'<img alt="{_e(self.title)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{_e(self.caption)}</figcaption></figure>"
        )


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _png(draw: Callable[[Any], None], size: tuple[float, float]) -> bytes:
    from matplotlib.figure import Figure as MplFigure

    fig = MplFigure(figsize=size, dpi=100, layout="constrained")
    draw(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def _series_label(case: BenchCase) -> str:
    return f"{case.ep.value}/{case.mode.value}"


def _group(cases: Iterable[BenchCase], key: Callable[[BenchCase], Any]) -> dict[Any, list[BenchCase]]:
    groups: dict[Any, list[BenchCase]] = {}
    for case in cases:
        groups.setdefault(key(case), []).append(case)
    return groups


def _distribution(cases: Sequence[BenchCase]) -> Figure:
    title = "Latency distribution per mode"
    chosen = [c for c in cases if c.concurrency == 1 and c.stats and len(c.stats.quantiles_ms) == 101][:24]
    if not chosen:
        return Figure("plot-distribution", title, "", None, "no single-thread case was measured")

    def draw(fig: Any) -> None:
        ax = fig.add_subplot()
        boxes = []
        for case in chosen:
            q = case.latency.quantiles_ms
            boxes.append(
                {
                    "label": f"{_series_label(case)} b{case.batch}",
                    "whislo": q[1],
                    "q1": q[25],
                    "med": q[50],
                    "q3": q[75],
                    "whishi": q[99],
                    "mean": case.latency.mean_ms,
                    "fliers": [q[0], q[100]],
                }
            )
        ax.bxp(
            boxes,
            orientation="horizontal",
            showmeans=True,
            patch_artist=True,
            boxprops={"facecolor": "#cfe0f5"},
            flierprops={"marker": "|", "markeredgecolor": "#8a93a2"},
        )
        ax.set_xscale("log")
        ax.set_xlabel("latency per run (ms, log scale)")
        ax.invert_yaxis()
        ax.grid(axis="x", alpha=0.3)

    return Figure(
        "plot-distribution",
        title,
        "Boxes: p25-p75 with the median; whiskers p1-p99; bars at min and max; triangle: mean. Single-thread cases.",
        _png(draw, (10, 1.2 + 0.42 * len(chosen))),
    )


def _batch_sweep(cases: Sequence[BenchCase], batches: Sequence[int]) -> Figure:
    title = "Batch sweep: latency and throughput"
    if len(batches) < 2:
        return Figure("plot-batch", title, "", None, "one batch size only (use --batch 1,8,32)")
    series = _group([c for c in cases if c.concurrency == 1 and c.stats], _series_label)

    def draw(fig: Any) -> None:
        left, right = fig.subplots(1, 2)
        for label, items in series.items():
            items = sorted(items, key=lambda c: c.batch)
            xs = [c.batch for c in items]
            p50 = [c.latency.p50_ms for c in items]
            p95 = [c.latency.p95_ms - c.latency.p50_ms for c in items]
            left.errorbar(xs, p50, yerr=[[0] * len(xs), p95], marker="o", capsize=3, label=label)
            right.plot(xs, [c.latency.throughput for c in items], marker="o", label=label)
        for ax, ylabel in ((left, "p50 latency (ms); bar up to p95"), (right, "throughput (samples/s)")):
            ax.set_xscale("log", base=2)
            ax.set_xticks(list(batches), [str(b) for b in batches])
            ax.minorticks_off()
            ax.set_yscale("log")
            ax.set_xlabel("batch")
            ax.set_ylabel(ylabel)
            ax.grid(alpha=0.3)
        left.legend(fontsize=8)

    return Figure("plot-batch", title, "Single-thread cases, per EP and mode.", _png(draw, (10, 4)))


def _concurrency(cases: Sequence[BenchCase], levels: Sequence[int]) -> Figure:
    title = "Concurrency: throughput and latency against threads"
    if len(levels) < 2:
        return Figure("plot-concurrency", title, "", None, "one concurrency level only (use --concurrency 1,4,16)")
    series = _group([c for c in cases if c.stats], lambda c: f"{_series_label(c)} b{c.batch}")

    def draw(fig: Any) -> None:
        left, right = fig.subplots(1, 2)
        for label, items in series.items():
            items = sorted(items, key=lambda c: c.concurrency)
            if len(items) < 2:
                continue
            xs = [c.concurrency for c in items]
            left.plot(xs, [c.latency.throughput for c in items], marker="o", label=label)
            right.plot(xs, [c.latency.p50_ms for c in items], marker="o", label=label)
        for ax, ylabel in ((left, "throughput (samples/s)"), (right, "p50 latency (ms)")):
            ax.set_xscale("log", base=2)
            ax.set_xticks(list(levels), [str(v) for v in levels])
            ax.minorticks_off()
            ax.set_xlabel("threads")
            ax.set_ylabel(ylabel)
            ax.grid(alpha=0.3)
        left.legend(fontsize=8)

    return Figure("plot-concurrency", title, "Threads share sessions as set by --sessions.", _png(draw, (10, 4)))


def _cpu_vs_gpu(cases: Sequence[BenchCase]) -> Figure:
    title = "CPU vs GPU"
    measured = [c for c in cases if c.stats and c.concurrency == 1]
    gpu = [c for c in measured if c.ep.is_gpu]
    cpu = [c for c in measured if not c.ep.is_gpu]
    if not gpu or not cpu:
        return Figure("plot-cpu-gpu", title, "", None, "needs a GPU EP and --compare-cpu")
    batches = sorted({c.batch for c in measured})
    series = _group(measured, _series_label)

    def draw(fig: Any) -> None:
        ax = fig.add_subplot()
        width = 0.8 / max(len(series), 1)
        for i, (label, items) in enumerate(series.items()):
            by_batch = {c.batch: c.latency.p50_ms for c in items}
            xs = [b + (i - (len(series) - 1) / 2) * width for b in range(len(batches))]
            values = [by_batch.get(b, 0.0) for b in batches]
            bars = ax.bar(xs, values, width, label=label)
            for bar, case_batch in zip(bars, batches, strict=True):
                case = next((c for c in items if c.batch == case_batch), None)
                if case is not None and case.speedup_vs_cpu:
                    ax.annotate(
                        f"{case.speedup_vs_cpu:.1f}x",
                        (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                        ha="center",
                        va="bottom",
                        fontsize=7,
                    )
        ax.set_xticks(range(len(batches)), [f"batch {b}" for b in batches])
        ax.set_yscale("log")
        ax.set_ylabel("p50 latency (ms, log scale)")
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8)

    return Figure(
        "plot-cpu-gpu",
        title,
        "p50 per batch; labels: GPU speed-up over the CPU EP (CPU p50 / GPU p50).",
        _png(draw, (10, 4)),
    )


def _timeline(cases: Sequence[BenchCase]) -> Figure:
    title = "Latency over the run (drift, throttling, stalls)"
    chosen = [c for c in cases if c.timeline_ms and c.concurrency == 1][:8]
    if not chosen:
        return Figure("plot-timeline", title, "", None, "no single-thread case was measured")

    def draw(fig: Any) -> None:
        ax = fig.add_subplot()
        for case in chosen:
            label = f"{_series_label(case)} b{case.batch}"
            count = len(case.timeline_ms)
            xs = [100.0 * i / max(count - 1, 1) for i in range(count)]  # cases differ in run count: share one axis
            ax.plot(xs, case.timeline_ms, lw=0.8, label=label)
        ax.set_yscale("log")
        ax.set_xlabel("progress through the timed runs (%; evenly sampled, in order)")
        ax.set_ylabel("latency (ms, log scale)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)

    return Figure(
        "plot-timeline",
        title,
        "A flat line is a steady measurement; steps or a slope mean the machine changed under the benchmark.",
        _png(draw, (10, 3.5)),
    )


def figures(result: BenchResult) -> list[Figure]:
    """Every plot of the report, in page order (absent ones say why)."""
    cases = result.measured_cases
    return [
        _distribution(cases),
        _batch_sweep(cases, result.settings.batches),
        _concurrency(cases, result.settings.concurrency),
        _cpu_vs_gpu(cases),
        _timeline(cases),
    ]


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _cases_table(result: BenchResult) -> str:
    head = (
        "case",
        "status",
        "runs",
        "p50 ms",
        "p90",
        "p95",
        "p99",
        "mean",
        "std",
        "cv",
        "samples/s",
        "first run ms",
        "session s",
        "GPU mem MiB",
        "vs CPU",
    )
    rows = []
    for case in result.cases:
        s = case.stats
        status_class = {"ok": "ok", "skipped": "dim", "failed": "bad", "interrupted": "warn"}[case.status.value]
        cold = case.cold
        cells = [
            f'<td class="l">{_e(case.key.label)}</td>',
            f'<td class="l {status_class}">{_e(case.status.value)}'
            + (f'<br><span class="dim">{_e(case.reason)}</span>' if case.reason else "")
            + "</td>",
        ]
        if s is not None:
            unstable = "" if s.stable else ' class="warn" title="' + _e("; ".join(s.problems)) + '"'
            cells += [
                f"<td>{s.count}</td>",
                f"<td><b>{_ms(s.p50_ms)}</b></td>",
                f"<td>{_ms(s.p90_ms)}</td>",
                f"<td>{_ms(s.p95_ms)}</td>",
                f"<td>{_ms(s.p99_ms)}</td>",
                f"<td>{_ms(s.mean_ms)}</td>",
                f"<td>{_ms(s.std_ms)}</td>",
                f"<td{unstable}>{s.cv:.1%}</td>",
                f"<td>{s.throughput:,.1f}</td>",
            ]
        else:
            cells += ['<td class="dim">–</td>'] * 9
        cells += [
            f"<td>{_ms(cold.first_run_ms) if cold else '–'}</td>",
            f"<td>{'' if not cold or cold.session_creation_s is None else f'{cold.session_creation_s:.2f}'}"
            f"{' (reused)' if cold and cold.session_reused else ''}</td>",
            f"<td>{'–' if case.gpu_memory_used_bytes is None else f'{case.gpu_memory_used_bytes / 2**20:,.0f}'}</td>",
            f"<td>{'–' if case.speedup_vs_cpu is None else f'{case.speedup_vs_cpu:.2f}x'}</td>",
        ]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    header = "".join(f'<th class="{"l" if i < 2 else ""}">{_e(h)}</th>' for i, h in enumerate(head))
    return f'<table id="cases"><tr>{header}</tr>{"".join(rows)}</table>'


def _comparison(result: BenchResult) -> str:
    comp = result.comparison
    if comp is None:
        return ""
    rows = "".join(
        f'<tr><td class="l">{_e(c.key.label)}</td><td>{_ms(c.baseline_p50_ms)}</td><td>{_ms(c.p50_ms)}</td>'
        f"<td>{c.p50_delta:+.1%}</td><td>{_ms(c.baseline_p95_ms)}</td><td>{_ms(c.p95_ms)}</td>"
        f'<td>{c.p95_delta:+.1%}</td><td>{_ms(c.noise_ms)}</td><td class="l '
        f'{ {"regressed": "bad", "improved": "ok", "same": ""}[c.verdict.value] }">{_e(c.verdict.value)}</td></tr>'
        for c in comp.cases
    )
    extra = "".join(
        f"<li>{_e(t)}</li>"
        for t in (
            *(f"only in this run: {x}" for x in comp.only_in_run),
            *(f"only in the baseline: {x}" for x in comp.only_in_baseline),
            *(f"environment changed: {x}" for x in comp.environment_changes),
        )
    )
    return (
        f"<h2>Against the baseline</h2><p>{_e(comp.baseline)} ({_e(comp.baseline_date)}); a case regresses when "
        f"p50 or p95 grew by more than {comp.max_regression:.0%} and by more than the baseline's spread.</p>"
        '<table id="baseline"><tr><th class="l">case</th><th>base p50</th><th>p50</th><th>Δ</th><th>base p95</th>'
        f'<th>p95</th><th>Δ</th><th>base spread</th><th class="l">verdict</th></tr>{rows}</table>'
        + (f"<ul>{extra}</ul>" if extra else "")
    )


def _against_defaults(result: BenchResult) -> str:
    """With --against-defaults: each configured case next to ORT's defaults at the same batch (the tuned config's
    effect, measured in the same process)."""
    if result.defaults is None:
        return ""
    defaults = {c.batch: c for c in result.defaults.measured_cases}
    speedups = result.speedups_over_defaults()
    config = result.settings.config.name if result.settings.config else "this config"
    rows = []
    for case in result.measured_cases:
        base = defaults.get(case.batch)
        if base is not None:
            rows.append(
                f'<tr><td>{case.batch}</td><td class="l">ORT defaults (run)</td><td>{_ms(base.latency.p50_ms)}</td>'
                f"<td>{_ms(base.latency.p95_ms)}</td><td>{base.latency.throughput:,.0f}</td><td>1.00x</td></tr>"
            )
        speedup = speedups.get(case.key.label)
        stats = case.latency
        rows.append(
            f'<tr><td>{case.batch}</td><td class="l">{_e(config)} ({_e(case.mode.value)})</td>'
            f"<td><b>{_ms(stats.p50_ms)}</b></td><td>{_ms(stats.p95_ms)}</td>"
            f"<td>{stats.throughput:,.0f}</td><td><b>{'–' if speedup is None else f'{speedup:.2f}x'}</b></td></tr>"
        )
    return (
        f"<h2>Against ORT's defaults</h2><p>{_e(config)} against ORT's defaults (no config, numpy in/out), measured "
        "in the same process after the configured cases.</p>"
        '<table id="against-defaults"><tr><th>batch</th><th class="l">setup</th><th>p50 ms</th><th>p95</th>'
        f"<th>samples/s</th><th>speed-up</th></tr>{''.join(rows)}</table>"
    )


def _environment(result: BenchResult) -> str:
    env = result.environment
    rows: list[tuple[str, object]] = [
        ("date (UTC)", env.date_utc),
        ("ortgpu", env.ortgpu_version),
        ("ONNX Runtime", f"{env.ort_version} ({', '.join(env.ort_distributions) or 'no distribution found'})"),
        ("ORT build", env.ort_build_info),
        ("ORT built for CUDA / cuDNN", f"{env.ort_cuda_version or '–'} / {env.ort_cudnn_version or '–'}"),
        ("execution provider", f"{result.ep.value}: {result.ep_reason}"),
        ("active providers", ", ".join(env.active_providers) or "–"),
        ("provider options", "; ".join(f"{k}: {v}" for k, v in env.provider_options.items()) or "–"),
        ("session options", ", ".join(f"{k}={v}" for k, v in env.session_options.items()) or "–"),
        (
            "GPU",
            f"{env.gpu.name} (sm_{env.gpu.compute_capability[0]}{env.gpu.compute_capability[1]}, "
            f"{env.gpu.memory_total_bytes / 2**30:.0f} GiB, NVML index {env.gpu.nvml_index})"
            if env.gpu
            else "–",
        ),
        ("driver / CUDA driver API", f"{env.driver_version or '–'} / {env.cuda_driver_version or '–'}"),
        ("CUDA_VISIBLE_DEVICES", env.cuda_visible_devices if env.cuda_visible_devices is not None else "(unset)"),
        ("loaded GPU libraries", ", ".join(env.loaded_libraries) or "–"),
        ("CUDA runtime / cuDNN loaded", f"{env.cuda_runtime_version or '–'} / {env.cudnn_version or '–'}"),
        ("CPU", f"{env.cpu} ({env.cpu_count} logical cores)"),
        ("OS", env.os),
        ("Python", env.python),
        (
            "model",
            f"{result.model.path.name} sha256 {result.model.sha256}, {result.model.size_bytes:,} bytes, "
            f"{result.model.node_count} nodes",
        ),
        ("inputs", "; ".join(result.model.inputs)),
        ("outputs", "; ".join(result.model.outputs)),
    ]
    if env.nvml_error and result.ep.is_gpu:
        rows.append(("NVML", env.nvml_error))
    rows += [("note", n) for n in (*env.notes, *result.input_notes)]
    body = "".join(f'<tr><th class="l">{_e(k)}</th><td class="l">{_e(v)}</td></tr>' for k, v in rows)
    return f'<table id="environment">{body}</table>'


def _settings(result: BenchResult) -> str:
    s = result.settings
    measure = f"{s.iterations} runs" if s.iterations is not None else f"{s.duration_s:g} s (at least 10 runs)"
    warm = "until stable" if s.warmup is None else f"{s.warmup} runs"
    return (
        f"<p>Modes {', '.join(m.value for m in s.modes)}; batch {', '.join(map(str, s.batches))}; threads "
        f"{', '.join(map(str, s.concurrency))} on up to {s.sessions} session(s); warm-up {warm}; measured "
        f"{measure} per case; timed on the host with <code>perf_counter_ns</code> around each run, after the "
        "device finished (outputs on the host, or IO binding synchronised).</p>"
    )


def render_html(result: BenchResult, title: str | None = None, sections: Sequence[tuple[str, str]] = ()) -> str:
    """The whole report as one HTML string: no external file, script or font is referenced.

    ``sections``: (heading, trusted HTML) pairs shown before the bench results (the demo adds doctor and check).
    """
    verdict = "interrupted: partial results" if result.interrupted else f"{len(result.measured_cases)} case(s) measured"
    hints = (
        "".join(
            f'<div class="hint {h.kind.value}"><b>{_e(h.kind.value)}</b>: {_e(h.message)}</div>' for h in result.hints
        )
        or '<p class="ok">No warnings: the measurements are steady.</p>'
    )
    plots = "".join(f.html() for f in figures(result))
    heading = title or f"ortgpu bench: {result.model.path.name}"
    extra = "".join(f"<h2>{_e(name)}</h2>{body}" for name, body in sections)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_e(heading)}</title>
<style>{_STYLE}</style></head><body>
<h1>{_e(heading)}</h1>
<p class="sub">{_e(result.ep.value)} EP: {_e(result.ep_reason)}<br>{_e(verdict)} in {result.elapsed_s:.1f} s,
{_e(result.environment.date_utc)}</p>
{extra}<h2>Hints</h2>{hints}
<h2>Results</h2>{_settings(result)}{_cases_table(result)}
{_comparison(result)}{_against_defaults(result)}
<h2>Plots</h2>{plots}
<h2>Environment</h2>{_environment(result)}
</body></html>
"""


def write_report(
    result: BenchResult, path: str | Path, title: str | None = None, sections: Sequence[tuple[str, str]] = ()
) -> Path:
    """Write the report atomically; returns the path."""

    return atomic_write_text(path, render_html(result, title, sections))


def escape(text: object) -> str:
    """HTML-escape ``text`` (for callers building ``sections``)."""
    return _e(text)


# The page style and the PNG renderer, for the other reports built from the same parts (`ortgpu profile`).
STYLE = _STYLE
png = _png
