"""`ortgpu inspect MODEL`: inputs, outputs, symbolic dims, ops, subgraphs, weights, and what the CUDA EP takes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ortgpu.cli.output import CELL_LIMIT, TEXT_LIMIT, emit, json_option, progress_reporter, safe
from ortgpu.config import load_config
from ortgpu.inspect import InspectRequest, inspect_model_file

__all__ = ["command", "render"]

_MAX_OPS = 25
_MAX_OFF = 25


@click.command("inspect")
@click.argument("model", type=click.Path(path_type=Path))
@click.option("--config", "config_path", type=click.Path(path_type=Path), help="ortgpu.toml the model will run with.")
@click.option("--device", "device_id", type=click.IntRange(min=0), help="CUDA device for the placement session.")
@click.option(
    "--top",
    type=click.IntRange(min=0, max=10_000),
    default=10,
    show_default=True,
    help="How many of the largest weights to list.",
)
@click.option(
    "--kernels/--no-kernels",
    default=True,
    show_default=True,
    help="Ask ORT which nodes its CUDA EP takes (a CUDA session where the EP starts, else ORT's kernel registry).",
)
@json_option
def command(
    model: Path, config_path: Path | None, device_id: int | None, top: int, kernels: bool, as_json: bool
) -> int:
    """What MODEL takes and returns, what it is made of, and which nodes the CUDA EP of the installed onnxruntime
    has kernels for, before anything runs. Works without a GPU (it then says what it could not determine).

    Exit 0 inspected; 2 bad input (missing, corrupt or invalid model, external data missing or outside its folder).
    """

    request = InspectRequest(
        model=model, kernels=kernels, config=load_config(config_path), device_id=device_id, top=top
    )
    with progress_reporter(not as_json) as progress:
        result = inspect_model_file(request, progress)
    emit("inspect", result, as_json, render)
    return 0


_TEXT = TEXT_LIMIT  # one of ortgpu's own sentences quoting a model (a reason, a note, a hint)


def _x(text: object, limit: int = CELL_LIMIT) -> str:
    """Model-supplied text made safe for a rich console (one rule for every command: cli.output.safe): markup
    escaped, control characters shown as escapes; a name's middle left out past CELL_LIMIT (the JSON has it whole)."""
    return safe(text, limit)


def _size(n: int | None) -> str:
    if n is None:
        return "–"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n} B"


def _shape(shape: tuple[Any, ...] | None, has_shape: bool = True) -> str:
    if shape is None or not has_shape:
        return "?"
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def render(result: Any, console: Any) -> None:
    """The human rendering of an InspectResult."""
    from rich.table import Table

    opsets = ", ".join(f"{_x(d)} {v}" for d, v in result.opsets.items())
    console.print(
        f"[bold]{_x(result.path.name)}[/]  {_size(result.size_bytes)}, sha256 {result.sha256[:12]}, "
        f"IR {result.ir_version}, "
        f"opsets {opsets}" + (f", producer {_x(result.producer)}" if result.producer else "")
    )
    for title, tensors in (("Inputs", result.inputs), ("Outputs", result.outputs)):
        table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
        for column in ("name", "type", "shape") + (("inferred shape",) if title == "Outputs" else ()):
            table.add_column(column, overflow="fold")
        for t in tensors:
            row = [_x(t.name), _x(t.elem_type), _x(_shape(t.shape, t.has_shape))]
            if title == "Outputs":
                row.append(_x(_shape(t.inferred_shape)) if t.inferred_shape is not None else "")
            table.add_row(*row)
        console.print(table)
    _render_dims(result, console)
    _render_ops(result, console, Table)
    _render_weights(result, console, Table)
    _render_kernels(result.kernels, console)
    for note in result.notes:
        console.print(f"[yellow]{_x(note, _TEXT)}[/]")
    console.print(f"[dim]inspected in {result.elapsed_s:.2f} s[/]")


def _render_dims(result: Any, console: Any) -> None:
    if not result.symbolic_dims:
        console.print("[bold]Symbolic dims[/]: none (every input dim is fixed or unnamed)")
    else:
        console.print(f"[bold]Symbolic dims[/] [dim]({_x(result.shape_inference, _TEXT)})[/]")
    for dim in result.symbolic_dims:
        ins = ", ".join(f"{_x(u.tensor)}[{u.axis}]" for u in dim.inputs)
        outs = ", ".join(
            f"{_x(u.tensor)}[{u.axis}]"
            + (f"={_x(u.expression)}" if u.expression != dim.name else "")
            + (" (inferred)" if u.inferred else "")
            for u in dim.outputs
        )
        shared = " [yellow]shared: one value feeds all of them[/]" if dim.shared else ""
        console.print(f"  {_x(dim.name)}: {ins}{shared}" + (f" -> {outs}" if outs else " -> no output carries it"))


def _render_ops(result: Any, console: Any, table_type: Any) -> None:
    nested = result.node_count - result.main_graph_nodes
    console.print(
        f"\n[bold]Ops[/]: {result.node_count} nodes ({len(result.op_histogram)} op types"
        + (f"; {nested} inside subgraphs" if nested else "")
        + ")"
    )
    table = table_type(show_edge=False, pad_edge=False)
    table.add_column("op")
    table.add_column("domain")
    table.add_column("nodes", justify="right")
    for entry in result.op_histogram[:_MAX_OPS]:
        table.add_row(_x(entry.op_type), _x(entry.domain), str(entry.count))
    console.print(table)
    if len(result.op_histogram) > _MAX_OPS:
        console.print(f"  [dim]... {len(result.op_histogram) - _MAX_OPS} more op types (see --json)[/]")
    for op in result.custom_ops:
        what = {
            "ort-contrib": "an onnxruntime contrib op",
            "onnx-ml": "ONNX-ML",
            "custom": "[yellow]custom: onnxruntime has no schema for it; register its custom-op library[/]",
            "unknown": "onnxruntime not installed: not asked",
        }[op.origin.value]
        console.print(f"  {_x(op.domain)}::{_x(op.op_type)} x{op.count}: {what}")
    if result.subgraphs:
        counts = ", ".join(f"{_x(op)} x{n}" for op, n in result.subgraph_counts.items())
        console.print(f"[bold]Subgraphs[/]: {counts}")
        for sub in result.subgraphs[:10]:
            console.print(
                f"  {_x(sub.owner_op)} {_x(sub.owner_name or 'unnamed')}.{_x(sub.attribute)}: {sub.node_count} nodes"
                + (f" (depth {sub.depth})" if sub.depth > 1 else "")
            )
        if len(result.subgraphs) > 10:
            console.print(f"  [dim]... {len(result.subgraphs) - 10} more (see --json)[/]")


def _render_weights(result: Any, console: Any, table_type: Any) -> None:
    console.print(
        f"\n[bold]Initializers[/]: {result.initializer_count}, {_size(result.initializer_bytes)} "
        "(sizes from tensor metadata; no weight was read)"
    )
    if result.top_initializers:
        table = table_type(show_edge=False, pad_edge=False)
        for column in ("name", "type", "shape", "size", "stored in"):
            table.add_column(column, justify="right" if column == "size" else "left", overflow="fold")
        for item in result.top_initializers:
            table.add_row(
                _x(item.name),
                _x(item.dtype),
                _x(_shape(item.shape)),
                _size(item.size_bytes),
                _x(item.location) if item.location is not None else "the .onnx",
            )
        console.print(table)
    if result.external_data:
        console.print(
            f"[bold]External data[/]: {len(result.external_data)} file(s), {_size(result.external_bytes)}, "
            "all present, whole and inside the model's folder"
        )
        for f in result.external_data:
            console.print(
                f"  {_x(f.location)}: {_size(f.size_bytes)} on disk, {f.tensors} tensor(s), "
                f"{_size(f.bytes_referenced)} used"
            )
    else:
        console.print("[bold]External data[/]: none (every weight is inside the .onnx)")


def _render_kernels(kernels: Any, console: Any) -> None:
    short = kernels.provider.removesuffix("ExecutionProvider")
    console.print(f"\n[bold]{short} EP kernels[/]")
    if kernels.status.value != "determined":
        colour = "yellow" if kernels.status.value == "not-determined" else "dim"
        console.print(f"  [{colour}]{_x(kernels.reason, _TEXT)}[/]")
        return
    on, total = kernels.nodes_on_ep, kernels.nodes_checked
    colour = "green" if on == total else "yellow"
    console.print(
        f"  [{colour}]{on}/{total} nodes on the {short} EP[/]"
        + (f", {kernels.memcpy_count} Memcpy node(s) ORT adds" if kernels.memcpy_count else "")
        + f" [dim]({kernels.seconds:.2f} s)[/]"
    )
    console.print(f"  [dim]{_x(kernels.reason, _TEXT)}[/]")
    if kernels.off_ep:
        console.print(f"  [yellow]will fall back ({len(kernels.off_ep)} node(s)):[/]")
        for node in kernels.off_ep[:_MAX_OFF]:
            where = f" -> {_x(node.provider)}" if node.provider else ""
            detail = f": {_x(node.detail, _TEXT)}" if node.detail else ""
            reason = _x("[" + node.reason + "]")
            console.print(f"    {_x(node.op_type)} ({_x(node.name or 'unnamed')}){where} {reason}{detail}")
        if len(kernels.off_ep) > _MAX_OFF:
            console.print(f"    ... {len(kernels.off_ep) - _MAX_OFF} more (see --json)")
    for note in kernels.notes:
        console.print(f"  [dim]{_x(note, _TEXT)}[/]")
