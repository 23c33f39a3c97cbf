"""Renders `ortgpu doctor --fix` (a FixResult): the plan as copyable commands, then what ran and before/after."""

from __future__ import annotations

from typing import Any

__all__ = ["render_fix"]


def render_fix(result: Any, console: Any) -> None:
    from rich.markup import escape

    plan = result.plan
    before = result.before
    colour = "green" if before.ready else "red"
    console.print(f"[bold]before:[/] [{colour}]{escape(before.verdict)}[/]")
    console.print(f"[dim]environment: {escape(plan.environment)} (python: {escape(plan.python)})[/]")
    if not plan.steps:
        console.print(escape(plan.note))
        if plan.outside:
            console.print(f"[yellow]outside this environment:[/] {escape(plan.outside)} (see `ortgpu doctor`)")
        return
    console.print(f"[bold]fix plan[/] ({escape(plan.note)}):")
    for number, step in enumerate(plan.steps, 1):
        console.print(f"  {number}. [dim]{escape(step.why)}[/]")
        # the command alone on its line, unstyled, so it can be copied as it is
        console.print(f"     {escape(step.text())}", soft_wrap=True, highlight=False)
    if plan.blocked:
        console.print(f"[red]cannot run here:[/] {escape(plan.blocked)}")
    if not result.applied:
        if plan.runnable and not plan.blocked and not result.stopped:
            console.print("[dim]run them yourself, or again with --fix --yes to have ortgpu run them[/]")
        if result.stopped:
            console.print(f"[red]not run:[/] {escape(result.stopped)}")
        return
    for run in result.runs:
        mark = "[green]✓[/]" if run.ok else "[red]✗[/]"
        console.print(f"{mark} {escape(run.step.text())} (exit {run.returncode}, {run.seconds:.1f} s)", soft_wrap=True)
        if not run.ok and run.output_tail:
            console.print(f"[dim]{escape(run.output_tail)}[/]", soft_wrap=True)
    if result.stopped:
        console.print(f"[red]stopped:[/] {escape(result.stopped)}")
    after = result.after
    if after is not None:
        colour = "green" if after.ready else "red"
        console.print(f"[bold]after:[/] [{colour}]{escape(after.verdict)}[/]")
        if after.error:
            console.print(f"[red]{escape(after.error)}[/]")
        console.print(
            f"  distributions: {escape(', '.join(before.distributions) or 'none')} -> "
            f"{escape(', '.join(after.distributions) or 'none')}",
            soft_wrap=True,
        )
        providers = f"{', '.join(before.providers) or 'none'} -> {', '.join(after.providers) or 'none'}"
        console.print(f"  providers: {escape(providers)}", soft_wrap=True)
