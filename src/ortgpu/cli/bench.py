"""`ortgpu bench MODEL`: latency percentiles and throughput per mode, batch and concurrency; save, compare, report."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ortgpu.bench.modes import BenchMode
from ortgpu.bench.result import BenchResult
from ortgpu.bench.runner import BenchRequest, run_bench
from ortgpu.cli.bench_devices import run_devices
from ortgpu.cli.options import ep_options, model_input_options
from ortgpu.cli.output import emit, json_option, progress_reporter
from ortgpu.cli.output import safe as x
from ortgpu.cli.params import DURATION, INT_LIST, MODES, PERCENT, WARMUP
from ortgpu.ep import ExecutionProvider
from ortgpu.report.html import write_report

if TYPE_CHECKING:  # rich loads only when a command renders, not for --help
    from rich.console import Console

__all__ = ["command", "render"]


@click.command("bench")
@click.argument("model", type=click.Path(path_type=Path))
@ep_options(
    ep_help="cpu, cuda or tensorrt (default: the best available here).",
    device_default=0,
    device_help="CUDA device id to run on.",
)
@click.option(
    "--mode",
    "modes",
    type=MODES,
    metavar="MODES",
    help="run (numpy in/out), iobinding (data stays on the device), cudagraph, a comma list, or all "
    "(default: the config's [run] mode, else run).",
)
@click.option(
    "--batch", "batches", type=INT_LIST, metavar="N,N", help="Batch sweep over the dynamic leading dim, e.g. 1,8,32."
)
@click.option(
    "--concurrency", type=INT_LIST, default="1", show_default=True, metavar="N,N",
    help="Threads running at once, e.g. 1,4,16.",
)  # fmt: skip
@click.option(
    "--sessions",
    type=int,
    default=1,
    show_default=True,
    help="Sessions the threads spread over; equal to the concurrency: one session per thread.",
)
@click.option(
    "--warmup",
    type=WARMUP,
    default="auto",
    show_default=True,
    metavar="N|auto",
    help="Warm-up runs, or auto: until three consecutive windows agree within 5%.",
)
@click.option("--iterations", type=int, help="Timed runs per case (instead of --duration).")
@click.option(
    "--duration", "duration_s", type=DURATION, metavar="S", help="Seconds of timed runs per case (default 2)."
)
@click.option("--compare-cpu", is_flag=True, help="Add the CPU EP at the same shapes; print the GPU speed-up.")
@click.option("--config", type=click.Path(path_type=Path), help="ortgpu.toml with [session], [ep.*], [inputs].")
@click.option(
    "--against-defaults",
    is_flag=True,
    help="Also bench ORT's defaults (no config, mode run) and show the config's speed-up over them.",
)
@click.option(
    "--devices",
    "devices_text",
    metavar="0,1|all|cpu:N",
    help="One process per GPU (or N CPU processes), timed together: per-device table and the aggregate.",
)
@model_input_options
@click.option("--save", type=click.Path(path_type=Path), help="Write every case and the environment as JSON.")
@click.option("--baseline", type=click.Path(path_type=Path), help="Compare with a file written by --save.")
@click.option(
    "--max-regression",
    type=PERCENT,
    default="10%",
    show_default=True,
    metavar="PCT",
    help="Exit 1 when p50 or p95 grew more than this (and more than the baseline's spread).",
)
@click.option("--report", type=click.Path(path_type=Path), help="Write a self-contained HTML report with plots.")
@click.option(
    "--package",
    type=click.Path(path_type=Path),
    metavar="PATH",
    help="Time through this ORT C library (release archive or folder, wheel, libonnxruntime file): mode run only.",
)
@json_option
def command(
    model: Path,
    ep: ExecutionProvider | None,
    ep_options: tuple[tuple[str, str], ...],
    device_id: int,
    modes: tuple[tuple[BenchMode, ...], bool] | None,
    batches: tuple[int, ...] | None,
    concurrency: tuple[int, ...],
    sessions: int,
    warmup: int | None,
    iterations: int | None,
    duration_s: float | None,
    compare_cpu: bool,
    config: Path | None,
    against_defaults: bool,
    devices_text: str | None,
    shapes: tuple[tuple[str, tuple[int, ...]], ...],
    dims: tuple[tuple[str, int], ...],
    ranges: tuple[tuple[str, tuple[float, float]], ...],
    npz: Path | None,
    seed: int | None,
    save: Path | None,
    baseline: Path | None,
    max_regression: float,
    report: Path | None,
    package: Path | None,
    as_json: bool,
) -> int:
    """Honest latency and throughput of MODEL: warm-up, percentiles, modes, sweeps, baseline, report.

    Exit 1 when a case failed or regressed against --baseline; 2 for bad input; 3 when this machine cannot run
    what was asked (e.g. --mode cudagraph without a GPU); 130 when interrupted (what finished is still shown).
    With --package each case runs through that package's own C library (its C API, in a child process).
    """
    chosen, all_modes = modes if modes is not None else ((), False)
    request = BenchRequest(
        model=model,
        ep=ep,
        modes=chosen,
        all_modes=all_modes,
        batches=batches or (),
        concurrency=concurrency,
        sessions=sessions,
        warmup=warmup,
        iterations=iterations,
        duration_s=duration_s,
        compare_cpu=compare_cpu,
        shapes=dict(shapes),
        dims=dict(dims),
        ranges=dict(ranges),
        npz=npz,
        seed=seed,
        provider_options=dict(ep_options),
        config=config,
        device_id=device_id,
        save=save,
        report=report,
        baseline=baseline,
        max_regression=max_regression,
        package=package,
        against_defaults=against_defaults,
    )
    if devices_text is not None:
        return run_devices(request, devices_text, as_json)
    if devices_text is not None:
        return run_devices(request, devices_text, as_json)
    with progress_reporter(not as_json) as progress:
        result = run_bench(request, progress)
    if result.report_to is not None:
        write_report(result, result.report_to)
    emit("bench", result, as_json, render)
    if result.interrupted:
        return 130
    if result.failed_cases or (result.comparison is not None and result.comparison.regressed):
        return 1
    return 0


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def render(result: BenchResult, console: Console) -> None:
    """The human rendering of a BenchResult: the cases table, the baseline deltas, hints, where files went."""
    from rich.table import Table

    console.print(f"[bold]{x(result.model.path.name)}[/] on [bold]{result.ep.value}[/]: {x(result.ep_reason)}")
    package = result.package
    if package is not None:
        console.print(
            f"  through the C library of ONNX Runtime {x(package.ort_version)} (C API {package.api_version}), "
            f"a child process per case:\n    [bold]{x(str(package.library))}[/]"
        )
    for note in result.input_notes:
        console.print(f"  [dim]{x(note)}[/]")
    with_cpu = any(c.speedup_vs_cpu is not None for c in result.cases)
    table = Table(show_edge=False, pad_edge=False)
    columns = ["EP/mode", "batch", "thr", "p50 ms", "p95", "p99", "cv", "samples/s"] + (["vs CPU"] if with_cpu else [])
    for column in columns:
        table.add_column(column, justify="left" if column == "EP/mode" else "right", no_wrap=True)
    others = []
    for case in result.cases:
        s = case.stats
        if s is None:
            others.append(case)
            continue
        cv = f"{s.cv:.0%}" if s.stable else f"[yellow]{s.cv:.0%}[/]"
        threads = str(case.concurrency) + (f"/{case.sessions}s" if case.sessions > 1 else "")
        label = f"{case.ep.value}/{case.mode.value}" + ("[yellow]*[/]" if case.status.value == "interrupted" else "")
        row = [
            label,
            str(case.batch),
            threads,
            f"[bold]{_ms(s.p50_ms)}[/]",
            _ms(s.p95_ms),
            _ms(s.p99_ms),
            cv,
            f"{s.throughput:,.0f}",
        ]
        if with_cpu:
            row.append("–" if case.speedup_vs_cpu is None else f"{case.speedup_vs_cpu:.2f}x")
        table.add_row(*row)
    if table.rows:
        console.print(table)
    grouped: dict[tuple[str, str, str, str | None], list[Any]] = {}
    for case in others:  # one line per reason: "--mode all" on CPU skips cudagraph at every batch
        grouped.setdefault((case.ep.value, case.mode.value, case.status.value, case.reason), []).append(case)
    for (ep, mode, status, reason), cases in grouped.items():
        style = "red" if status == "failed" else "dim"
        batches = ", ".join(str(b) for b in dict.fromkeys(c.batch for c in cases))
        console.print(f"[{style}]{ep}/{mode} (batch {batches}): {status}: {x(str(reason))}[/]")
    cold = next((c.cold for c in result.cases if c.cold and not c.cold.session_reused), None)
    if cold is not None and cold.session_creation_s is not None:
        console.print(
            f"cold start: session created in {cold.session_creation_s:.2f} s, first run "
            f"{_ms(cold.first_run_ms)} ms (not in the stats)" + (", in a fresh process" if package is not None else "")
        )
    clocked = next((c.warmup.clocks for c in result.cases if c.warmup and c.warmup.clocks), None)
    if clocked is not None:
        console.print(
            f"GPU SM clock: {clocked.before_warmup_mhz} MHz before the warm-up, {clocked.after_warmup_mhz} after it "
            f"({x(clocked.why)}), {clocked.after_measurement_mhz} after the timed runs (first GPU case)"
        )
    comparison = result.comparison
    if comparison is not None:
        delta = Table(
            title=f"against {x(str(comparison.baseline))} (max regression {comparison.max_regression:.0%})",
            show_edge=False,
            pad_edge=False,
        )
        for column in ("case", "base p50", "p50", "Δ p50", "base p95", "p95", "Δ p95", "P(>max)", "verdict"):
            # the verdict is what CI gates on: never elided, whatever the terminal width
            delta.add_column(
                column, justify="left" if column in ("case", "verdict") else "right", no_wrap=column == "verdict"
            )
        for c in comparison.cases:
            colour = {"regressed": "red", "improved": "green", "same": ""}[c.verdict.value]
            verdict = f"[{colour}]{c.verdict.value}[/]" if colour else c.verdict.value
            delta.add_row(
                c.key.label,
                _ms(c.baseline_p50_ms),
                _ms(c.p50_ms),
                f"{c.p50_delta:+.1%}",
                _ms(c.baseline_p95_ms),
                _ms(c.p95_ms),
                f"{c.p95_delta:+.1%}",
                "-" if c.confidence is None else f"{c.confidence:.0%}",
                verdict,
            )
        console.print(delta)
        for c in comparison.cases:  # why: the test, the re-measure, what was not counted
            for reason in c.reasons:
                console.print(f"  [dim]{x(c.key.label)}[/]: {x(reason)}", soft_wrap=True)
        regressed = [c.key.label for c in comparison.cases if c.verdict.value == "regressed"]
        if regressed:
            console.print(
                f"[red]regressed[/] beyond {comparison.max_regression:.0%}: {x(', '.join(regressed))}", soft_wrap=True
            )
        for label in comparison.only_in_run:
            console.print(f"  [dim]not in the baseline: {label}[/]")
        for label in comparison.only_in_baseline:
            console.print(f"  [dim]in the baseline only: {label}[/]")
        for change in comparison.environment_changes:
            console.print(f"  [yellow]environment changed[/]: {x(change)}")
    if result.defaults is not None:
        _render_against_defaults(result, console, x)
    for hint in result.hints:
        console.print(f"[yellow]{hint.kind.value}[/]: {x(hint.message)}")
    if result.saved_to is not None:
        console.print(f"saved: {x(str(result.saved_to))}")
    if result.report_to is not None:
        console.print(f"report: {x(str(result.report_to))}")


def _render_against_defaults(result: Any, console: Any, x: Any) -> None:
    """The configured cases next to ORT's defaults at the same batch, one table."""
    from rich.table import Table

    config = result.settings.config.name if result.settings.config else "this config"
    table = Table(title=f"{x(config)} against ORT's defaults", show_edge=False, pad_edge=False)
    for column in ("batch", "setup", "p50 ms", "p95", "samples/s", "speed-up"):
        table.add_column(column, justify="left" if column == "setup" else "right", no_wrap=True)
    speedups = result.speedups_over_defaults()
    defaults = {c.batch: c for c in result.defaults.measured_cases}
    for case in result.measured_cases:
        base = defaults.get(case.batch)
        if base is not None:
            s = base.stats
            table.add_row(
                str(case.batch), "ORT defaults (run)", _ms(s.p50_ms), _ms(s.p95_ms), f"{s.throughput:,.0f}", "1.00x"
            )
        s = case.stats
        speedup = speedups.get(case.key.label)
        table.add_row(
            str(case.batch),
            x(f"{config} ({case.mode.value})"),
            f"[bold]{_ms(s.p50_ms)}[/]",
            _ms(s.p95_ms),
            f"{s.throughput:,.0f}",
            "–" if speedup is None else f"[bold]{speedup:.2f}x[/]",
        )
    console.print(table)
