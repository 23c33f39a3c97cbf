"""`ortgpu explain TEXT|-`: parse the text argument, call ortgpu.explain.explain, render the diagnosis."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from ortgpu.cli.output import emit, json_option
from ortgpu.explain import ExplainResult, Verdict, explain

if TYPE_CHECKING:  # pragma: no cover
    from rich.console import Console

__all__ = ["command"]


@click.command(
    "explain",
    help=(
        "Explain a pasted ONNX Runtime / CUDA / cuDNN / TensorRT message: what it means, the likely cause, the fix.\n\n"
        "TEXT is the message (quote it), or - to read it from stdin. Exit codes: 0 a diagnosis was given, "
        "1 the message is not recognised, 2 the text is empty."
    ),
)
@click.argument("text", nargs=-1, required=True)
@json_option
def command(text: tuple[str, ...], as_json: bool) -> int:
    message = _read_stdin() if text == ("-",) else " ".join(text)
    result = explain(message)
    emit("explain", result, as_json, _render)
    return 0 if result.recognised else 1


def _read_stdin() -> str:
    # pasted Windows logs often carry bytes of another code page: keep them instead of failing
    raw = getattr(sys.stdin, "buffer", None)
    return raw.read().decode("utf-8", errors="replace") if raw is not None else sys.stdin.read()


def _render(result: ExplainResult, console: Console) -> None:
    from rich.markup import escape
    from rich.table import Table

    style = {
        Verdict.GPU_PROBLEM: "bold red",
        Verdict.NOT_GPU: "bold yellow",
        Verdict.BENIGN: "bold green",
        Verdict.NOT_RECOGNISED: "bold",
    }[result.verdict]
    console.print(f"[{style}]{escape(result.summary)}[/]")
    if result.matches:
        top = result.matches[0]
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column(overflow="fold")
        grid.add_row("Matched", escape(top.matched_line))
        if top.detail:
            grid.add_row("Specifics", escape(top.detail))
        grid.add_row("Meaning", escape(top.meaning))
        grid.add_row("Cause", escape(top.cause))
        grid.add_row("Fix", escape(top.fix))
        if top.related:
            grid.add_row("See also", escape(", ".join(f"{r.id} {r.title}" for r in top.related)))
        grid.add_row("Sources", escape(", ".join(top.sources[:6]) + (" …" if len(top.sources) > 6 else "")))
        console.print(grid)
    if result.build_note:
        console.print(f"[bold]Build[/]  {escape(result.build_note)}")
    if len(result.matches) > 1:
        table = Table(title="Also in this paste", title_justify="left", show_lines=False)
        table.add_column("id", no_wrap=True)
        table.add_column("kind", no_wrap=True)
        table.add_column("what", overflow="fold")
        for m in result.matches[1:]:
            kind = "not GPU" if m.family.value == "not_gpu" else m.severity.value
            what = m.title + (f" [{m.library}]" if m.library else "")
            if m.detail:
                what += f" — {m.detail}"
            table.add_row(m.id, kind, escape(what))
        console.print(table)
    console.print(f"[bold]Next[/]  {escape(result.next_step)}")
