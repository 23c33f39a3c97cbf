"""`ortgpu fp16 MODEL -o OUT.onnx`: ORT's fp16 conversion, validated on data, with an automatic keep-list."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ortgpu.cli.accuracy_render import num, render_nonfinite, render_parity_table
from ortgpu.cli.check import render_layerwise
from ortgpu.cli.options import input_spec, model_input_options
from ortgpu.cli.output import emit, json_option, progress_reporter
from ortgpu.cli.output import safe as escape
from ortgpu.cli.params import FlagError, int_flag, parse_ep_option
from ortgpu.config import load_config
from ortgpu.ep import ExecutionProvider
from ortgpu.fp16 import Fp16Request, run_fp16

__all__ = ["command", "render"]


def _float_flag(text: str | None, flag: str) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        raise FlagError(f"{flag} {text!r} is not a number", f"e.g. {flag} 1e-2") from None
    if not (value >= 0 and value != float("inf")):
        raise FlagError(f"{flag} {text!r}: must be a finite number >= 0", f"e.g. {flag} 1e-2")
    return value


@click.command("fp16")
@click.argument("model", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True, help="Where the fp16 model goes.")
@click.option(
    "--ep", "ep_name", default="cuda", show_default=True, metavar="EP", help="Validate on cuda, tensorrt or cpu."
)
@click.option("--ep-option", "ep_options", multiple=True, metavar="KEY=VALUE", help="Provider option (repeatable).")
@click.option("--device", "device_text", metavar="N", help="CUDA device id.")
@click.option("--config", "config_path", type=click.Path(path_type=Path), help="ortgpu.toml (see docs/config.md).")
@model_input_options
@click.option("--samples", "samples_text", metavar="N", help="Generated samples (or the most taken from --inputs).")
@click.option("--atol", "atol_text", metavar="VALUE", help="Absolute output tolerance against fp32.")
@click.option("--rtol", "rtol_text", metavar="VALUE", help="Relative output tolerance against fp32.")
@click.option("--keep", multiple=True, metavar="NODE", help="Keep this node in fp32 (repeatable).")
@click.option("--no-auto-keep", is_flag=True, help="Do not grow the keep-list when validation fails.")
@click.option("--max-iterations", "iterations_text", default="8", show_default=True, metavar="N", help="Conversions.")
@click.option("--no-keep-io-types", is_flag=True, help="Make float inputs and outputs fp16 too.")
@click.option("--force", is_flag=True, help="Write OUT even when validation fails.")
@click.option("--no-bench", is_flag=True, help="Do not time fp16 against fp32 on the GPU.")
@click.option("--bench-batch", "bench_batch_text", metavar="N", help="Time at this batch (default: the data's).")
@click.option(
    "--write-config",
    "config_out",
    type=click.Path(path_type=Path),
    help="Write a new ortgpu.toml whose [model] makes load/check/bench run OUT.",
)
@json_option
def command(
    model: Path,
    output: Path,
    ep_name: str,
    ep_options: tuple[str, ...],
    device_text: str | None,
    config_path: Path | None,
    shapes: tuple[tuple[str, tuple[int, ...]], ...],
    dims: tuple[tuple[str, int], ...],
    ranges: tuple[tuple[str, tuple[float, float]], ...],
    npz: Path | None,
    samples_text: str | None,
    seed: int | None,
    atol_text: str | None,
    rtol_text: str | None,
    keep: tuple[str, ...],
    no_auto_keep: bool,
    iterations_text: str,
    no_keep_io_types: bool,
    force: bool,
    no_bench: bool,
    bench_batch_text: str | None,
    config_out: Path | None,
    as_json: bool,
) -> int:
    """Convert MODEL to fp16 with ONNX Runtime's converter and prove it against fp32 on data.

    When validation fails (NaN/Inf, a tensor past fp16's 65504, outputs off tolerance) the nodes to keep in fp32
    are found from the fp32 run's tensor ranges, the layer-wise divergence and the normalisation chains, and
    the model is converted again until it passes. OUT is written (atomically) only when it passes, or --force.
    Exit 0 pass; 1 it does not pass; 2 bad input; 3 the EP is not available (--ep cpu validates with onnx's
    reference evaluator, which computes in fp16).
    """

    config = load_config(config_path)
    request = Fp16Request(
        model=model,
        output=output,
        ep=ExecutionProvider.parse(ep_name),
        config=config_path,
        device_id=int_flag(device_text, "--device"),
        ep_options=dict(parse_ep_option(o) for o in ep_options),
        inputs=input_spec(config.inputs, shapes, dims, ranges, npz, seed),
        samples=int_flag(samples_text, "--samples", minimum=1),
        atol=_float_flag(atol_text, "--atol"),
        rtol=_float_flag(rtol_text, "--rtol"),
        keep_io_types=not no_keep_io_types,
        keep=tuple(keep),
        auto_keep=not no_auto_keep,
        max_iterations=int_flag(iterations_text, "--max-iterations", minimum=1) or 1,
        force=force,
        bench=not no_bench,
        bench_batch=int_flag(bench_batch_text, "--bench-batch", minimum=1),
        config_out=config_out,
    )
    with progress_reporter(not as_json) as progress:
        result = run_fp16(request, progress)
    emit("fp16", result, as_json, render)
    return 0 if result.passed else 1


def _mib(value: int) -> str:
    if value < 2**20:
        return f"{value / 2**10:.1f} KiB"
    return f"{value / 2**20:.1f} MiB"


def render(result: Any, console: Any) -> None:
    """The human rendering of an Fp16Result."""
    from rich.table import Table

    console.print(
        f"[bold]{escape(result.model.name)}[/] -> fp16 (ORT's converter, keep_io_types={result.keep_io_types})"
    )
    console.print(f"  validated on [bold]{escape(result.engine)}[/] against {escape(result.reference)}")
    console.print(f"  [dim]why: {escape(result.engine_reason)}[/]")
    console.print(f"  data: {escape(result.dataset)}")
    for note in result.notes:
        console.print(f"  [dim]{escape(note)}[/]")
    if result.keep:
        table = Table(title="Kept in fp32", title_justify="left", show_edge=False, pad_edge=False)
        for column in ("node", "op", "rule", "why"):
            table.add_column(column, overflow="fold")
        for item in result.keep:
            table.add_row(escape(item.name), escape(item.op_type), item.rule.value, escape(item.reason))
        console.print(table)
    else:
        console.print("  no node kept in fp32")
    attempts = Table(title="Attempts", title_justify="left", show_edge=False, pad_edge=False)
    for column in ("#", "kept", "result", "then kept"):
        attempts.add_column(column, overflow="fold")
    for attempt in result.attempts:
        verdict = "[green]pass[/]" if attempt.passed else f"[red]fail[/]: {escape(attempt.failures[0])}"
        attempts.add_row(str(attempt.iteration), str(attempt.kept), verdict, escape(", ".join(attempt.added)))
    console.print(attempts)
    console.print("\n[bold]Outputs against fp32[/]")
    render_parity_table(result.parity, console)
    render_nonfinite(result.nonfinite, console)
    for line in result.overflow:
        console.print(f"  [red]{escape(line)}[/]")
    if result.layerwise is not None:
        render_layerwise(result.layerwise, console, shown=5)
    sizes = result.sizes
    console.print(
        f"\n[bold]Size[/]  {_mib(sizes.fp32_bytes)} fp32 -> {_mib(sizes.fp16_bytes)} fp16 ({sizes.ratio:.2f}x)"
    )
    speed = result.speed
    if speed.fp32_p50_ms is not None and speed.fp16_p50_ms is not None:
        console.print(
            f"[bold]Speed[/]  {speed.ep.value} {speed.mode} batch {speed.batch}: p50 {num(speed.fp32_p50_ms)} ms fp32 "
            f"-> {num(speed.fp16_p50_ms)} ms fp16 ({speed.speedup:.2f}x)"
        )
    if speed.note:
        console.print(
            f"[bold]Speed[/]  [dim]{escape(speed.note)}[/]"
            if speed.fp16_p50_ms is None
            else f"  [dim]{escape(speed.note)}[/]"
        )
    if result.config_written is not None:
        console.print(f"config written to {escape(str(result.config_written))} (its [model] runs the fp16 model)")
    elif result.config_section:
        console.print("[dim]to make ortgpu.load / check / bench run it, put in your ortgpu.toml:[/]")
        console.print(escape(result.config_section), highlight=False)
    colour = "green" if result.passed else "red"
    console.print(f"\n[bold {colour}]{escape(result.verdict)}[/]")
