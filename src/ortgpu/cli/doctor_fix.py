"""Renders `ortgpu doctor --fix` (a FixResult): the plan as copyable commands, then what ran and before/after."""

from __future__ import annotations

from typing import Any

from ortgpu.cli.output import safe

__all__ = ["render_fix"]


def render_fix(result: Any, console: Any) -> None:
    plan = result.plan
    before = result.before
    colour = "green" if before.ready else "red"
    console.print(f"[bold]before:[/] [{colour}]{safe(before.verdict)}[/]")
    console.print(f"[dim]environment: {safe(plan.environment)} (python: {safe(plan.python)})[/]")
    if not plan.steps:
        console.print(safe(plan.note))
        if plan.outside:
            console.print(f"[yellow]outside this environment:[/] {safe(plan.outside)} (see `ortgpu doctor`)")
        return
    console.print(f"[bold]fix plan[/] ({safe(plan.note)}):")
    for number, step in enumerate(plan.steps, 1):
        console.print(f"  {number}. [dim]{safe(step.why)}[/]")
        # the command alone on its line, unstyled, so it can be copied as it is
        console.print(f"     {safe(step.text())}", soft_wrap=True, highlight=False)
    if plan.blocked:
        console.print(f"[red]cannot run here:[/] {safe(plan.blocked)}")
    if not result.applied:
        if plan.runnable and not plan.blocked and not result.stopped:
            console.print("[dim]run them yourself, or again with --fix --yes to have ortgpu run them[/]")
        if result.stopped:
            console.print(f"[red]not run:[/] {safe(result.stopped)}")
        return
    for run in result.runs:
        mark = "[green]✓[/]" if run.ok else "[red]✗[/]"
        console.print(f"{mark} {safe(run.step.text())} (exit {run.returncode}, {run.seconds:.1f} s)", soft_wrap=True)
        if not run.ok and run.output_tail:
            console.print(f"[dim]{safe(run.output_tail)}[/]", soft_wrap=True)
    if result.stopped:
        console.print(f"[red]stopped:[/] {safe(result.stopped)}")
    after = result.after
    if after is not None:
        colour = "green" if after.ready else "red"
        console.print(f"[bold]after:[/] [{colour}]{safe(after.verdict)}[/]")
        if after.error:
            console.print(f"[red]{safe(after.error)}[/]")
        console.print(
            f"  distributions: {safe(', '.join(before.distributions) or 'none')} -> "
            f"{safe(', '.join(after.distributions) or 'none')}",
            soft_wrap=True,
        )
        providers = f"{', '.join(before.providers) or 'none'} -> {', '.join(after.providers) or 'none'}"
        console.print(f"  providers: {safe(providers)}", soft_wrap=True)
