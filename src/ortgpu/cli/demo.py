"""`ortgpu demo`: doctor summary, check and bench of a built-in model on the best EP here, and an HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from ortgpu.cli.bench import render as render_bench
from ortgpu.cli.output import emit, json_option, progress_reporter
from ortgpu.cli.output import safe as x
from ortgpu.demo import DemoResult, run_demo

if TYPE_CHECKING:  # rich loads only when a command renders, not for --help
    from rich.console import Console

__all__ = ["command", "render"]


@click.command("demo")
@click.option(
    "--out-dir",
    type=click.Path(path_type=Path),
    help="Where to write ortgpu-demo-report.html (default: the current folder).",
)
@json_option
def command(out_dir: Path | None, as_json: bool) -> int:
    """The main job on a built-in model, no arguments needed: is this machine ready (doctor), does the model run
    on the best execution provider here (check), how fast (bench), all in one report.

    Exit 0 when the check passed and every bench case ran; 1 otherwise.
    """

    with progress_reporter(not as_json) as progress:
        result = run_demo(out_dir, progress)
    emit("demo", result, as_json, render)
    return 0 if result.passed else 1


def render(result: DemoResult, console: Console) -> None:
    """The human rendering of a DemoResult: four steps, then where the report is."""

    console.print(f"[bold]ortgpu demo[/]: {x(result.model)}")
    colour = "green" if result.doctor.ready else "yellow"
    console.print(f"\n[bold]1. doctor[/] [{colour}]{x(result.doctor.verdict)}[/]")
    if result.doctor.root_cause:
        console.print(f"   cause: {x(result.doctor.root_cause)}\n   fix: {x(str(result.doctor.fix))}")
    for fact in result.doctor.facts:
        console.print(f"   [dim]{x(fact)}[/]")
    console.print(f"\n[bold]2. execution provider[/]: [bold]{result.ep.value}[/] ({x(result.ep_reason)})")
    colour = "green" if result.check.passed else "red"
    console.print(f"\n[bold]3. check[/] [{colour}]{x(result.check.verdict)}[/]")
    console.print("\n[bold]4. bench[/] (modes run, iobinding, cudagraph; batch 1, 8, 32)")
    render_bench(result.bench, console)
    steps = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in result.steps_s.items())
    console.print(f"\nreport: [bold]{x(str(result.report))}[/]")
    console.print(f"done in {result.elapsed_s:.1f} s ({steps})")
