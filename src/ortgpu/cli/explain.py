"""`ortgpu explain TEXT|-`: parse the text argument, call ortgpu.explain.explain, render the diagnosis."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from ortgpu.cli.output import emit, json_option
from ortgpu.cli.output import safe as x
from ortgpu.explain import MAX_TEXT_CHARS, ExplainInputError, ExplainResult, PasteKind, explain
from ortgpu.limits import read_stream

if TYPE_CHECKING:  # rich loads only when a command renders, not for --help
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
    """Standard input, read no further than explain takes (``< /dev/zero`` ends at once, exit 2)."""

    hint = f"explain takes a pasted message of at most {MAX_TEXT_CHARS:,} characters; pipe in the error lines"
    raw = getattr(sys.stdin, "buffer", None)
    if raw is None:  # a text stream (embedding, tests): the same cap, counted in characters
        text = sys.stdin.read(MAX_TEXT_CHARS + 1)
        if len(text) > MAX_TEXT_CHARS:
            raise ExplainInputError(f"standard input is over {MAX_TEXT_CHARS:,} characters", hint)
        return text
    # UTF-8 takes at most 4 bytes a character; pasted Windows logs often carry bytes of another code page:
    # they are kept (replaced) instead of failing
    return read_stream(raw, 4 * MAX_TEXT_CHARS, "standard input", hint).decode("utf-8", errors="replace")


def _render(result: ExplainResult, console: Console) -> None:
    from rich.table import Table

    style = {
        PasteKind.GPU_PROBLEM: "bold red",
        PasteKind.CONFIGURATION: "bold yellow",
        PasteKind.HOST_MEMORY: "bold yellow",
        PasteKind.NOT_GPU: "bold yellow",
        PasteKind.BENIGN: "bold green",
        PasteKind.NOT_RECOGNISED: "bold",
        PasteKind.CLOSEST: "bold magenta",
    }[result.verdict]
    console.print(f"[{style}]{x(result.summary)}[/]")
    if result.matches:
        top = result.matches[0]
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column(overflow="fold")
        grid.add_row("Matched", x(top.matched_line))
        if top.detail:
            grid.add_row("Specifics", x(top.detail))
        grid.add_row("Meaning", x(top.meaning))
        grid.add_row("Cause", x(top.cause))
        grid.add_row("Fix", x(top.fix))
        if top.related:
            grid.add_row("See also", x(", ".join(f"{r.id} {r.title}" for r in top.related)))
        grid.add_row("Sources", x(", ".join(top.sources[:6]) + (" …" if len(top.sources) > 6 else "")))
        console.print(grid)
    if result.build_note:
        console.print(f"[bold]Build[/]  {x(result.build_note)}")
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
            table.add_row(x(m.id), kind, x(what))
        console.print(table)
    console.print(f"[bold]Next[/]  {x(result.next_step)}")
