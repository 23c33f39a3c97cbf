"""`ortgpu debug`: tools for a model that fails; `debug reduce` cuts it down to the smallest failing subgraph."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ortgpu.cli.options import input_spec, model_input_options
from ortgpu.cli.output import emit, json_option, progress_reporter
from ortgpu.cli.output import safe as escape
from ortgpu.cli.params import int_flag
from ortgpu.config import load_config
from ortgpu.ep import ExecutionProvider
from ortgpu.reduce import ConditionKind, ReduceRequest, run_reduce

__all__ = ["command", "render_reduce"]


@click.group("debug")
def command() -> None:
    """Tools for a model that fails: `reduce` cuts it to the smallest subgraph that still fails."""


@command.command("reduce")
@click.argument("model", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True, help="Where the reduced model goes.")
@click.option(
    "--condition",
    type=click.Choice(["nan", "check", "refuse"]),
    default="nan",
    show_default=True,
    help="nan: NaN/Inf in an output; check: the EP's outputs leave the CPU EP's; refuse: the EP builds no session.",
)
@click.option("--ep", "ep_name", default="cpu", show_default=True, metavar="EP", help="cuda, tensorrt or cpu.")
@click.option("--device", "device_text", metavar="N", help="CUDA device id.")
@click.option("--config", "config_path", type=click.Path(path_type=Path), help="ortgpu.toml (see docs/config.md).")
@model_input_options
@click.option("--save-inputs", type=click.Path(path_type=Path), help="Write the reduced model's failing inputs here.")
@json_option
def reduce(
    model: Path,
    output: Path,
    condition: str,
    ep_name: str,
    device_text: str | None,
    config_path: Path | None,
    shapes: tuple[tuple[str, tuple[int, ...]], ...],
    dims: tuple[tuple[str, int], ...],
    ranges: tuple[tuple[str, tuple[float, float]], ...],
    npz: Path | None,
    seed: int | None,
    save_inputs: Path | None,
    as_json: bool,
) -> int:
    """Bisect MODEL to the smallest subgraph that still fails, and write it to OUTPUT with the steps taken.

    Exit 0 a reduced model was written; 1 the whole model does not fail the condition (nothing written);
    2 bad input; 3 the EP is not available.
    """

    config = load_config(config_path)
    request = ReduceRequest(
        model=model,
        output=output,
        condition=ConditionKind(condition),
        ep=ExecutionProvider.parse(ep_name),
        config=config_path,
        device_id=int_flag(device_text, "--device"),
        inputs=input_spec(config.inputs, shapes, dims, ranges, npz, seed),
        save_inputs=save_inputs,
    )
    with progress_reporter(not as_json) as progress:
        result = run_reduce(request, progress)
    emit("debug-reduce", result, as_json, render_reduce)
    return 0 if result.reproduced else 1


def render_reduce(result: Any, console: Any) -> None:
    """Steps first (what was tried, what it showed), then the reduced model and the verdict."""
    from rich.table import Table

    console.print(
        f"[bold]{escape(result.model.name)}[/]: condition [bold]{result.condition.value}[/] on {result.ep.value}"
    )
    steps = Table(title="Steps", title_justify="left", show_edge=False, pad_edge=False)
    for column in ("#", "phase", "positions", "nodes", "result", "what it showed"):
        steps.add_column(column, overflow="fold")
    for index, step in enumerate(result.steps, 1):
        verdict = "[red]fails[/]" if step.fails else "[green]passes[/]"
        span = f"{step.first}..{step.last}"
        steps.add_row(str(index), step.phase, span, str(step.nodes), verdict, escape(step.detail))
    console.print(steps)
    if result.reproduced:
        console.print(f"\nreduced model: {result.nodes_before} -> {result.nodes_after} node(s)")
        console.print(f"  inputs: {escape(', '.join(result.inputs))}")
        console.print(f"  outputs: {escape(', '.join(result.outputs))}")
        for node in result.kept_nodes[:20]:
            console.print(f"    {escape(node)}")
        if len(result.kept_nodes) > 20:
            console.print(f"    ... {len(result.kept_nodes) - 20} more")
        if result.inputs_file is not None:
            console.print(f"  inputs that make it fail: {escape(str(result.inputs_file))}")
    for note in result.notes:
        console.print(f"  [dim]{escape(note)}[/]")
    colour = "green" if result.reproduced else "yellow"
    console.print(f"\n[bold {colour}]{escape(result.verdict)}[/]")
