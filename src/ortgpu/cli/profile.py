"""`ortgpu profile MODEL`: ORT's profiler turned into per-op and per-node tables by provider, hints and a report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ortgpu.cli.options import input_spec, model_input_options
from ortgpu.cli.output import CELL_LIMIT, TEXT_LIMIT, emit, json_option, progress_reporter, safe
from ortgpu.cli.params import parse_ep_option
from ortgpu.config import load_config
from ortgpu.ep import ExecutionProvider
from ortgpu.model.inputs import InputSpec
from ortgpu.profile import GpuTiming, ProfileRequest, run_profile

__all__ = ["command", "render"]

_ROWS = 15


@click.command("profile")
@click.argument("model", type=click.Path(path_type=Path))
@click.option("--ep", "ep_name", metavar="EP", help="cuda, tensorrt or cpu (default: the best available, said why).")
@click.option("--ep-option", "ep_options", multiple=True, metavar="KEY=VALUE", help="Provider option (repeatable).")
@click.option("--device", "device_id", type=click.IntRange(min=0), help="CUDA device id (wins over the config).")
@click.option("--config", "config_path", type=click.Path(path_type=Path), help="ortgpu.toml (see docs/config.md).")
@click.option(
    "--compare",
    "compare_path",
    type=click.Path(path_type=Path),
    metavar="CONFIG",
    help="Profile this ortgpu.toml too and put the two op tables side by side (e.g. a tuned config).",
)
@model_input_options
@click.option("--runs", type=click.IntRange(min=1, max=100_000), default=10, show_default=True, help="Runs profiled.")
@click.option(
    "--warmup", type=click.IntRange(min=0, max=100_000), default=3, show_default=True, help="Runs left out first."
)
@click.option(
    "--gpu-timing",
    type=click.Choice(["sync", "async"]),
    default="sync",
    show_default=True,
    help="GPU EPs: sync waits for each kernel (CUDA_LAUNCH_BLOCKING=1, a child process) so node times include GPU "
    "work; async profiles as deployed (node times are host-side launches).",
)
@click.option("--trace", type=click.Path(path_type=Path), help="Keep ORT's chrome trace here [MODEL-profile.json].")
@click.option("--report", type=click.Path(path_type=Path), help="Write a self-contained HTML report with charts.")
@click.option("--top", type=click.IntRange(min=1, max=100_000), default=20, show_default=True, help="Nodes listed.")
@json_option
def command(
    model: Path,
    ep_name: str | None,
    ep_options: tuple[str, ...],
    device_id: int | None,
    config_path: Path | None,
    compare_path: Path | None,
    shapes: tuple[tuple[str, tuple[int, ...]], ...],
    dims: tuple[tuple[str, int], ...],
    ranges: tuple[tuple[str, tuple[float, float]], ...],
    npz: Path | None,
    seed: int | None,
    runs: int,
    warmup: int,
    gpu_timing: str,
    trace: Path | None,
    report: Path | None,
    top: int,
    as_json: bool,
) -> int:
    """Where MODEL's time goes: ORT's profiler on the chosen EP, per op type and node by provider, Memcpy and CPU
    nodes in a GPU run, fusion, hints, and the raw chrome trace (for chrome://tracing or Perfetto).

    Inputs and config as for check and bench. Exit 0 profiled; 1 the run failed inside ORT; 2 bad input;
    3 the EP cannot be active here.
    """

    config = load_config(config_path)
    compare = load_config(compare_path) if compare_path is not None else None
    # both sides run on the same inputs: the flags', else --config's [inputs], else --compare's (a tuned config
    # pins the shapes it was tuned for, and its fixed dims refuse any other)
    base_inputs = config.inputs
    if compare is not None and config.inputs == InputSpec():
        base_inputs = compare.inputs
    stem = model.stem or "model"
    trace = trace if trace is not None else Path(f"{stem}-profile.json")
    compare_trace = None
    if compare is not None:
        compare_trace = trace.with_name(f"{trace.stem}-{compare_path.stem if compare_path else 'compare'}.json")
    request = ProfileRequest(
        model=model,
        ep=ExecutionProvider.parse(ep_name) if ep_name else None,
        ep_options=dict(parse_ep_option(o) for o in ep_options),
        device_id=device_id,
        config=config,
        inputs=input_spec(base_inputs, shapes, dims, ranges, npz, seed),
        runs=runs,
        warmup=warmup,
        trace=trace,
        compare=compare,
        compare_trace=compare_trace,
        report=report,
        top=top,
        gpu_timing=GpuTiming(gpu_timing),
    )
    with progress_reporter(not as_json) as progress:
        result = run_profile(request, progress)
    emit("profile", result, as_json, render)
    return 0


_TEXT = TEXT_LIMIT  # one of ortgpu's own sentences quoting a model (a reason, a note, a hint)


def _x(text: object, limit: int = CELL_LIMIT) -> str:
    """Model-supplied text made safe for a rich console (one rule for every command: cli.output.safe): markup
    escaped, control characters shown as escapes; a name's middle left out past CELL_LIMIT (the JSON has it whole)."""
    return safe(text, limit)


def _short(provider: str) -> str:
    return provider.removesuffix("ExecutionProvider") or provider


def _us(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value / 1000:,.3f} ms" if value >= 1000 else f"{value:,.1f} µs"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def render(result: Any, console: Any) -> None:
    """The human rendering of a ProfileResult."""
    from rich.table import Table

    console.print(
        f"[bold]{_x(result.model.name)}[/]  ({result.model_node_count} nodes as exported, onnxruntime "
        f"{_x(result.ort_version)}, sha256 {result.model_sha256[:12]})"
    )
    for run in result.runs:
        _render_run(run, console, Table)
    if result.comparison:
        _render_comparison(result, console, Table)
    for run in result.runs:
        console.print(f"trace ({_x(run.label)}): {_x(run.trace, _TEXT)}  [dim](chrome://tracing or ui.perfetto.dev)[/]")
    if result.report is not None:
        console.print(f"report: {_x(result.report, _TEXT)}")


def _render_run(run: Any, console: Any, table_type: Any) -> None:
    times = run.run_times
    console.print(f"\n[bold]{_x(run.label)}[/] on [bold]{run.ep.value}[/] ({_x(', '.join(run.providers))})")
    if run.ep_reason:
        console.print(f"  [dim]why this EP: {_x(run.ep_reason, _TEXT)}[/]")
    console.print(
        f"  {run.runs_profiled} profiled run(s) after {run.warmup_runs} warm-up run(s) (left out); under the "
        f"profiler a run takes {_us(times.mean_us)} on average (median {_us(times.median_us)}), its nodes "
        f"{_us(times.node_us_per_run)} ({times.node_coverage:.0%} of a run, median)"
    )
    console.print(f"  [dim]{_x(run.timing_note, _TEXT)}[/]")
    split = ", ".join(f"{_x(_short(k))} {v:.1%}" for k, v in run.provider_share.items())
    console.print(f"  node time by provider: {split}")
    table = table_type(show_edge=False, pad_edge=False, title="Op types", title_justify="left")
    for column in ("op type", "provider", "nodes", "calls", "per run", "per call", "share"):
        table.add_column(column, justify="left" if column in ("op type", "provider") else "right")
    for row in run.ops[:_ROWS]:
        label = _x(row.op_type) + (" [dim](its subgraph)[/]" if row.contains_subgraph else "")
        table.add_row(
            label,
            _x(_short(row.provider)),
            str(row.nodes),
            str(row.calls),
            _us(row.per_run_us),
            _us(row.mean_us),
            _pct(row.share),
        )
    console.print(table)
    if len(run.ops) > _ROWS:
        console.print(f"  [dim]... {len(run.ops) - _ROWS} more op types (see --json or --report)[/]")
    nodes = table_type(show_edge=False, pad_edge=False, title="Heaviest nodes", title_justify="left")
    for column in ("node", "op type", "provider", "calls", "per run", "per call", "share"):
        left = column in ("node", "op type", "provider")
        nodes.add_column(column, justify="left" if left else "right", overflow="fold")
    for row in run.nodes[:_ROWS]:
        nodes.add_row(
            _x(row.name),
            _x(row.op_type),
            _x(_short(row.provider)),
            str(row.calls),
            _us(row.per_run_us),
            _us(row.mean_us),
            _pct(row.share),
        )
    console.print(nodes)
    if run.memcpy.nodes:
        console.print(
            f"[bold]Memcpy[/]: {run.memcpy.nodes} node(s), {run.memcpy.calls_per_run:g} copies and "
            f"{_us(run.memcpy.per_run_us)} per run ({_pct(run.memcpy.share)})"
        )
    if run.cpu_in_gpu:
        console.print(f"[bold]CPU EP inside the GPU run[/]: {_pct(run.cpu_in_gpu_share)} of the node time")
        for node in run.cpu_in_gpu[:8]:
            console.print(
                f"  {_x(node.op_type)} ({_x(node.name)}): {_us(node.per_run_us)} ({_pct(node.share)})"
                + (f" [dim]{_x(node.reason, _TEXT)}[/]" if node.reason else "")
            )
    if run.kernels:
        console.print("[bold]CUDA kernels[/] (device time per run):")
        for kernel in run.kernels[:10]:
            console.print(f"  {_us(kernel.per_run_us)}  {_x(kernel.kernel)} [dim]({_x(kernel.node)})[/]")
    elif run.kernels_note:
        console.print(f"  [dim]{_x(run.kernels_note, _TEXT)}[/]")
    fusion = run.fusion
    if fusion.available:
        removed = ", ".join(f"{n} {_x(op)}" for op, n in fusion.removed.items())
        created = ", ".join(f"{n} {_x(op)}" for op, n in fusion.created.items())
        console.print(f"[bold]Fusion[/]: {_x(fusion.note, _TEXT)}")
        if removed or created:
            console.print(f"  removed: {removed or 'none'}; created: {created or 'none'}")
    else:
        console.print(f"[bold]Fusion[/]: [dim]{_x(fusion.note, _TEXT)}[/]")
    for note in run.notes:
        console.print(f"  [dim]{_x(note, _TEXT)}[/]")
    for hint in run.hints:
        console.print(f"[yellow]{hint.kind.value}[/]: {_x(hint.message, _TEXT)}")


def _render_comparison(result: Any, console: Any, table_type: Any) -> None:
    base, other = result.runs[0], result.runs[1]
    table = table_type(
        show_edge=False,
        pad_edge=False,
        title=f"{_x(base.label)} vs {_x(other.label)} (median run {_us(base.run_times.median_us)} vs "
        f"{_us(other.run_times.median_us)})",
        title_justify="left",
    )
    for column in ("op type", base.label, "share", other.label, "share", "Δ per run"):
        table.add_column(_x(column), justify="left" if column == "op type" else "right")
    for row in result.comparison[:_ROWS]:
        table.add_row(
            _x(row.op_type),
            _us(row.base_per_run_us),
            _pct(row.base_share),
            _us(row.other_per_run_us),
            _pct(row.other_share),
            ("+" if row.delta_us >= 0 else "-") + _us(abs(row.delta_us)),
        )
    console.print(table)
