"""Shared CLI plumbing: the --json flag, result rendering, stderr messages and progress."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

import click

from ortgpu.progress import Progress, silent
from ortgpu.results import envelope

if TYPE_CHECKING:  # pragma: no cover
    from rich.console import Console

ResultT = TypeVar("ResultT")  # the result object a command renders

__all__ = ["emit", "json_option", "progress_reporter", "stderr_console", "stdout_console"]

json_option = click.option("--json", "as_json", is_flag=True, help="Print the result as versioned JSON.")


def stdout_console() -> Console:
    from rich.console import Console

    return Console(file=sys.stdout, soft_wrap=False)


def stderr_console() -> Console:
    from rich.console import Console

    return Console(file=sys.stderr, soft_wrap=False)


def emit(command: str, result: ResultT, as_json: bool, render: Callable[[ResultT, Console], None]) -> None:
    """Write one result: the JSON envelope on stdout, or the human rendering."""
    if as_json:
        click.echo(json.dumps(envelope(command, result), indent=2, sort_keys=False))
    else:
        render(result, stdout_console())


@contextmanager
def progress_reporter(enabled: bool = True) -> Iterator[Progress]:
    """A progress callback for the library: (message, fraction or None), drawn on stderr.

    Silent when stderr is not a terminal, so logs and pipes stay clean.
    """
    if not enabled or not sys.stderr.isatty():
        yield silent
        return
    from rich.progress import BarColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as RichProgress

    with RichProgress(
        TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), console=stderr_console(), transient=True
    ) as bar:
        task = bar.add_task("starting", total=1.0)

        def report(message: str, fraction: float | None = None) -> None:
            bar.update(task, description=message, completed=fraction if fraction is not None else 0.0)

        yield report
