"""Shared CLI plumbing: the --json flag, result rendering, safe terminal text, stderr messages and progress.

Console conventions (one place, every command):

- On a terminal rich picks the width (``COLUMNS`` wins when set). Written to a pipe or a file, output is not
  wrapped at 80 columns: paths, hashes and table cells stay whole (``COLUMNS`` still wins when set).
- ``NO_COLOR`` (any non-empty value) turns colours off; pipes and files never get escape codes.
- Automatic highlighting is off: text that came from a model, package or file is shown as it is, never
  coloured by a guess (and rich's highlighter is slow on long strings).
- Every string that came from outside ortgpu goes through :func:`safe` before it reaches a console.
- A reader that goes away (``ortgpu doctor | head -1``) ends the output quietly and the command keeps its
  exit code; any other write error on stdout is one line on stderr and exit 3.
"""

from __future__ import annotations

import errno
import json
import os
import sys
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from ortgpu.errors import EnvironmentUnfitError

__all__ = [
    "CELL_LIMIT",
    "TEXT_LIMIT",
    "StdoutWriteError",
    "emit",
    "json_option",
    "plain",
    "progress_reporter",
    "safe",
    "safe_name",
    "silence_stdout",
    "stderr_console",
    "stdout_console",
]

json_option = click.option("--json", "as_json", is_flag=True, help="Print the result as versioned JSON.")

CELL_LIMIT = 200  # characters of one untrusted name shown in a table cell or line (the JSON has it whole)
TEXT_LIMIT = 2000  # characters of a longer untrusted text (evidence, messages that quote a file)
_UNWRAPPED_WIDTH = 100_000  # "no wrapping" for pipes and files; no line ortgpu prints comes near it


class StdoutWriteError(EnvironmentUnfitError):
    """Standard output cannot be written (disk full, I/O error): exit 3."""


def plain(text: object, limit: int = TEXT_LIMIT) -> str:
    """``text`` made harmless for a terminal, without markup escaping (for click.echo and error lines).

    Control and format characters (ESC, CSI/OSC sequences, BEL, backspace, CR, bidi overrides, zero-width
    characters) are shown as ``\\x1b`` / ``\\u202e`` escapes instead of acting on the terminal; newlines and
    tabs become spaces; text longer than ``limit`` characters is cut in the middle with an ellipsis that says
    how much was left out.
    """
    value = str(text)
    if len(value) > limit:
        keep = max(limit - 40, 8)
        head, tail = keep * 2 // 3, keep - keep * 2 // 3
        value = f"{value[:head]}…[{len(value) - head - tail:,} more characters]…{value[-tail:] if tail else ''}"
    if value.isprintable():
        return value
    out = []
    for char in value:
        if char in "\n\t":
            out.append(" ")
        elif char.isprintable() or char == " ":
            out.append(char)
        else:
            category = unicodedata.category(char)
            if category in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
                out.append(_escape_code(ord(char)))
            else:  # other separators (e.g. no-break space) are harmless
                out.append(char)
    return "".join(out)


def _escape_code(code: int) -> str:
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def safe(text: object, limit: int = TEXT_LIMIT) -> str:
    """``text`` from a model, package, archive or file, ready to put inside rich markup.

    What :func:`plain` does (control characters escaped, long text shortened with a note), then rich markup
    escaped, so ``[/]`` or ``[link=...]`` in a name is shown literally and never styles, links or breaks
    the output.
    """
    from rich.markup import escape

    escaped = escape(plain(text, limit))
    # rich.markup.escape leaves a lone trailing backslash, which would escape the closing tag put after it
    return escaped + "\\" if escaped.endswith("\\") and not escaped.endswith("\\\\") else escaped


def safe_name(text: object) -> str:
    """:func:`safe` for a name in a table cell or line (an input, output, node, file): at most CELL_LIMIT shown."""
    return safe(text, CELL_LIMIT)


def _width(stream: Any) -> int | None:
    """None lets rich decide (a terminal, or COLUMNS set); a wide width for pipes and files."""
    if os.environ.get("COLUMNS", "").strip().isdigit():
        return None
    try:
        if stream.isatty():
            return None
    except (AttributeError, ValueError, OSError):
        pass
    return _UNWRAPPED_WIDTH


def _console(stream: Any) -> Any:
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:  # rich would raise SystemExit(1) here; the CLI decides instead
            self.quiet = True
            raise BrokenPipeError(errno.EPIPE, "the reader of the output went away")

    no_color = True if os.environ.get("NO_COLOR", "") else None
    return _Console(file=stream, soft_wrap=False, highlight=False, width=_width(stream), no_color=no_color)


def stdout_console() -> Any:
    return _console(sys.stdout)


def stderr_console() -> Any:
    return _console(sys.stderr)


def emit(command: str, result: Any, as_json: bool, render: Callable[[Any, Any], None]) -> None:
    """Write one result: the JSON envelope on stdout, or the human rendering.

    A closed pipe ends the output quietly (the command still returns its exit code); any other error writing
    stdout raises StdoutWriteError (exit 3).
    """
    try:
        if as_json:
            from ortgpu.results import envelope

            click.echo(json.dumps(envelope(command, result), indent=2, sort_keys=False))
        else:
            render(result, stdout_console())
        sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()
    except OSError as exc:
        silence_stdout()
        raise StdoutWriteError(
            f"cannot write the output to standard output: {exc.strerror or exc}",
            "check the disk or device the output goes to (or the pipe's reader)",
        ) from None


def silence_stdout() -> None:
    """Point stdout at the null device, so nothing more (not even the flush at exit) fails or complains."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, AttributeError, ValueError):  # not a real file (tests, embedding): replace the object
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 -- lives until the process ends


@contextmanager
def progress_reporter(enabled: bool = True) -> Iterator[Callable[[str, float | None], None]]:
    """A progress callback for the library: (message, fraction or None), drawn on stderr.

    Silent when stderr is not a terminal, so logs and pipes stay clean.
    """
    if not enabled or not sys.stderr.isatty():
        yield lambda message, fraction=None: None
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), console=stderr_console(), transient=True
    ) as bar:
        task = bar.add_task("starting", total=1.0)

        def report(message: str, fraction: float | None = None) -> None:
            # messages quote model and file names: escaped, so a "[/]" in a name cannot break the bar
            bar.update(task, description=safe(message), completed=fraction if fraction is not None else 0.0)

        yield report
