"""`ortgpu check MODEL`: strict session on one EP, per-node placement, parity, timings, GPU memory."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ortgpu.check import CheckRequest, parse_tolerances, run_check
from ortgpu.check.result import CheckResult
from ortgpu.cli.accuracy_render import num, render_parity_table
from ortgpu.cli.options import ep_options, input_spec, model_input_options
from ortgpu.cli.output import emit, json_option, progress_reporter
from ortgpu.cli.output import safe as x
from ortgpu.cli.output import safe_name as n
from ortgpu.cli.params import FlagError, WholeNumber
from ortgpu.config import load_config
from ortgpu.ep import ExecutionProvider
from ortgpu.report.accuracy import write_check_report

if TYPE_CHECKING:  # rich loads only when a command renders, not for --help
    from rich.console import Console

__all__ = ["FlagError", "command", "render", "render_layerwise"]

_MAX_NODES_SHOWN = 20
_REASONS = {
    "no-kernel": "no kernel on the requested EP",
    "cpu-preferred": "kept on CPU by ORT on purpose (shape computation)",
    "unknown": "ORT logged no reason",
}


@click.command("check")
@click.argument("model", type=click.Path(path_type=Path))
@ep_options(
    ep_help="cuda, tensorrt or cpu (default: the best available, said why).",
    device_default=None,
    device_help="CUDA device id (wins over the config's device_id).",
)
@click.option("--config", "config_path", type=click.Path(path_type=Path), help="ortgpu.toml (see docs/config.md).")
@model_input_options
@click.option(
    "--samples", type=WholeNumber(1), metavar="N", help="Generated samples to run (or the most from --inputs)."
)
@click.option("--allow-nonfinite", is_flag=True, help="NaN/Inf in an output is not a failure by itself.")
@click.option("--report", type=click.Path(path_type=Path), help="Write an HTML report (error histograms) here.")
@click.option("--layerwise", is_flag=True, help="Compare every intermediate tensor; name where the sides first part.")
@click.option("--reference", type=click.Path(path_type=Path), help="Compare with these outputs (.npz) instead of CPU.")
@click.option("--atol", multiple=True, metavar="[OUTPUT:]VALUE", help="Absolute tolerance, global or per output.")
@click.option("--rtol", multiple=True, metavar="[OUTPUT:]VALUE", help="Relative tolerance, global or per output.")
@click.option("--strict-placement", is_flag=True, help="Fail (exit 1) when any compute node left the requested EP.")
@click.option("--save-outputs", type=click.Path(path_type=Path), help="Write the outputs to this .npz (atomic).")
@click.option("--warm-runs", type=WholeNumber(0), default="5", show_default=True, metavar="N", help="Warm runs timed.")
@click.option(
    "--package",
    type=click.Path(path_type=Path),
    metavar="PATH",
    help="Run through this ORT C library (release archive or folder, wheel, libonnxruntime file), not the wheel.",
)
@json_option
def command(
    model: Path,
    ep: ExecutionProvider | None,
    ep_options: tuple[tuple[str, str], ...],
    device_id: int | None,
    config_path: Path | None,
    shapes: tuple[tuple[str, tuple[int, ...]], ...],
    dims: tuple[tuple[str, int], ...],
    ranges: tuple[tuple[str, tuple[float, float]], ...],
    npz: Path | None,
    seed: int | None,
    samples: int | None,
    allow_nonfinite: bool,
    report: Path | None,
    layerwise: bool,
    reference: Path | None,
    atol: tuple[str, ...],
    rtol: tuple[str, ...],
    strict_placement: bool,
    save_outputs: Path | None,
    warm_runs: int,
    package: Path | None,
    as_json: bool,
) -> int:
    """Prove MODEL runs on the requested execution provider, every node, with the right numbers.

    Exit 0 pass; 1 parity off, NaN/Inf in an output (unless --allow-nonfinite) or (with --strict-placement) nodes
    off the EP; 2 bad input; 3 the EP cannot be
    active here (the cause is named; never a quiet CPU run unless the config says fallback = "cpu").
    With --package the model runs through that package's own C library (its C API, in a child process) and is
    compared with the CPU EP of the same library.
    """
    config = load_config(config_path)
    request = CheckRequest(
        model=model,
        ep=ep,
        ep_options=dict(ep_options),
        device_id=device_id,
        config=config,
        inputs=input_spec(config.inputs, shapes, dims, ranges, npz, seed),
        reference=reference,
        atol=parse_tolerances(atol, "--atol"),
        rtol=parse_tolerances(rtol, "--rtol"),
        strict_placement=strict_placement,
        save_outputs=save_outputs,
        warm_runs=warm_runs,
        package=package,
        samples=samples,
        allow_nonfinite=allow_nonfinite,
        report=report,
        layerwise=layerwise,
    )
    with progress_reporter(not as_json) as progress:
        result = run_check(request, progress)
    if result.report_to is not None:
        write_check_report(result, result.report_to)
    emit("check", result, as_json, render)
    return 0 if result.passed else 1


def _ms(seconds: float | None) -> str:
    return "–" if seconds is None else f"{seconds * 1000:.3f} ms"


def _render_nonfinite(result: Any, console: Any) -> None:
    if not result.nonfinite:
        return
    colour = "yellow" if result.allow_nonfinite else "red"
    allowed = " (allowed by --allow-nonfinite)" if result.allow_nonfinite else ""
    console.print(f"\n[bold {colour}]NaN/Inf in the outputs[/]{allowed}")
    for item in result.nonfinite[:_MAX_NODES_SHOWN]:
        console.print(f"  [{colour}]{x(item.line())}[/]")
    if len(result.nonfinite) > _MAX_NODES_SHOWN:
        console.print(f"  ... {len(result.nonfinite) - _MAX_NODES_SHOWN} more (see --json)")


def render_layerwise(report: Any, console: Any, shown: int = 10) -> None:
    """The layer-wise section: the summary, the first tensors that diverge (roots marked), the notes."""
    from rich.table import Table

    colour = "red" if report.diverged else "green"
    console.print(f"\n[bold]Layer-wise[/]  [{colour}]{x(report.summary())}[/]")
    if report.first_divergent:
        table = Table(show_edge=False, pad_edge=False)
        for column in ("#", "tensor", "op", "node", "max abs", "NaN/Inf", "root"):
            table.add_column(column, justify="right" if column in ("#", "max abs", "NaN/Inf") else "left")
        for item in report.first_divergent[:shown]:
            table.add_row(
                str(item.position),
                x(item.name),
                x(item.op_type),
                x(item.node_name),
                num(item.max_abs),
                str(item.nonfinite),
                "yes" if item.root else "",
            )
        console.print(table)
        if len(report.first_divergent) > shown:
            console.print(f"  [dim]... {report.diverged - shown} more (see --json)[/]")
    for note in report.notes:
        console.print(f"  [dim]{x(note)}[/]")
    for item in report.skipped[:5]:
        console.print(f"  [dim]skipped {x(item.name)}: {x(item.reason)}[/]")


def _mib(value: int | None) -> str:
    return "–" if value is None else f"{value / 2**20:.1f} MiB"


def render(result: CheckResult, console: Console) -> None:
    """The human rendering of a CheckResult."""
    from rich.table import Table

    console.print(
        f"[bold]{n(result.model.name)}[/]  ({result.model_node_count} nodes as exported, onnxruntime "
        f"{x(result.ort_version)}, sha256 {result.model_sha256[:12]})"
    )
    package = result.package
    if package is not None:
        console.print(
            f"  through the C library of ONNX Runtime {x(package.ort_version)} (C API {package.api_version}), "
            f"in a child process:\n    [bold]{x(package.library)}[/]"
        )
        build = f"{package.build_info}; " if package.build_info else ""
        console.print(f"  [dim]{x(build + 'compiled-in EPs: ' + ', '.join(package.compiled_providers))}[/]")
    active = ", ".join(result.providers)
    console.print(
        f"  EP: requested [bold]{result.requested_ep.value}[/], active [bold]{active}[/]"
        + (f" (device {result.device_id})" if result.device_id is not None else "")
    )
    if result.ep_reason:
        console.print(f"  [dim]why this EP: {x(result.ep_reason)}[/]")
    if result.cuda_libraries:
        console.print(f"  [dim]CUDA libraries: {x(result.cuda_libraries)}[/]")
    if result.fallback_used:
        console.print(f"  [yellow]fallback to CPU (allowed by the config): {x(result.fallback_reason)}[/]")
    for item in result.inputs:
        console.print(f"  input {n(item.name)}: {item.dtype} {list(item.shape)} ({item.source})")
    if result.samples:
        console.print(f"  data set: {x(result.dataset_source or '')}")
    for note in result.dataset_notes:
        console.print(f"  [dim]{x(note)}[/]")
    for note in result.input_notes:
        console.print(f"  [dim]{x(note)}[/]")
    _render_placement(result, console, Table)
    _render_nonfinite(result, console)
    _render_parity(result, console, Table)
    if result.layerwise is not None:
        render_layerwise(result.layerwise, console)
    t = result.timings
    console.print(
        f"\n[bold]Times[/]  session creation {_ms(t.creation_s)}, first run {_ms(t.first_run_s)}, "
        f"warm median {_ms(t.warm_median_s)} over {t.warm_runs} runs"
    )
    if package is not None:
        console.print(
            f"  [dim]C API runs without profiling; creation includes {_ms(package.provider_setup_s)} of provider "
            "setup (loading the provider libraries); a run is the Run call plus the release of its outputs[/]"
        )
    memory = result.gpu_memory
    if memory.used_bytes is not None:
        console.print(
            f"[bold]GPU memory[/]  {_mib(memory.used_bytes)} used by the session (NVML GPU "
            f"{memory.nvml_index}: {_mib(memory.before_bytes)} -> {_mib(memory.after_bytes)})"
        )
    else:
        console.print(f"[bold]GPU memory[/]  {x(memory.note)}")
    if result.saved_outputs is not None:
        console.print(f"outputs saved to {x(result.saved_outputs)}")
    if result.report_to is not None:
        console.print(f"report written to {x(result.report_to)}")
    colour = "green" if result.passed else "red"
    console.print(f"\n[bold {colour}]{x(result.verdict)}[/]")
    for failure in result.failures[1:]:
        console.print(f"[red]  also: {x(failure)}[/]")


def _render_placement(result: CheckResult, console: Console, table_type: Any) -> None:
    placement = result.placement
    if placement is None:
        console.print(f"\n[bold]Placement[/]  unknown: {x(result.placement_note)}")
        return
    source = "ORT's session log" if placement.source.value == "log" else "ORT profiling of one run"
    summary = x(placement.summary())
    console.print(f"\n[bold]Placement[/] (from {source}, after graph optimisation): {summary}")
    table = table_type(show_edge=False, pad_edge=False)
    table.add_column("provider")
    table.add_column("compute nodes", justify="right")
    for provider, count in placement.compute_per_provider.items():
        style = "" if provider == placement.requested_provider else "yellow"
        table.add_row(f"[{style}]{n(provider)}[/]" if style else n(provider), str(count))
    table.add_row("Memcpy (inserted by ORT)", str(placement.memcpy_count))
    console.print(table)
    if placement.off_requested:
        strict = "red" if result.strict_placement else "yellow"
        console.print(
            f"[{strict}]  {placement.off_requested_count} compute node(s) not on {n(placement.requested_provider)}:[/]"
        )
        for node in placement.off_requested[:_MAX_NODES_SHOWN]:
            why = f"  [dim]{_REASONS[node.reason.value]}[/]" if node.reason else ""
            console.print(f"    {n(node.op_type)} ({n(node.name or 'unnamed')}) on {n(node.provider)}{why}")
        if len(placement.off_requested) > _MAX_NODES_SHOWN:
            console.print(f"    ... {len(placement.off_requested) - _MAX_NODES_SHOWN} more (see --json)")
    if placement.memcpy_nodes:
        names = ", ".join(f"{n(node.op_type)} ({n(node.name)})" for node in placement.memcpy_nodes[:6])
        more = " ..." if len(placement.memcpy_nodes) > 6 else ""
        console.print(f"  [dim]Memcpy nodes: {names}{more}[/]")
    if result.placement_note:
        console.print(f"  [dim]{x(result.placement_note)}[/]")
    fixed = result.fixed_dims
    if fixed is not None:
        colour = "green" if fixed.moved > 0 else "dim"
        console.print(f"  [{colour}]{x(fixed.message(placement.requested_provider))}[/]")


def _render_parity(result: CheckResult, console: Console, table_type: Any) -> None:
    parity = result.parity
    if parity.reference.value == "none":
        console.print(f"\n[bold]Parity[/]: {parity.status.value}: {x(parity.reason)}")
        return
    cpu = "the CPU EP" if result.package is None else f"the CPU EP of the same library ({result.package.ort_version})"
    against = cpu if parity.reference.value == "cpu-ep" else str(parity.reference_path)
    console.print(
        f"\n[bold]Parity[/] against {x(against)}: {parity.status.value}"
        + (f" ({x(parity.reason)})" if parity.reason else "")
    )
    render_parity_table(parity.outputs, console, tolerance_basis=True)
    if parity.extra_reference_names:
        extra = x(", ".join(parity.extra_reference_names))
        console.print(f"  [dim]in the reference but not model outputs: {extra}[/]")
