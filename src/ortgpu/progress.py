"""The progress protocol: how library functions report what they are doing, and the no-op for callers who ignore it.

The library never prints: a long operation takes ``progress`` (message, fraction 0..1 or None when unknown) and
calls it between steps; the CLI draws it on stderr. ``silent`` is the default when no callback is given.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["Progress", "silent"]


class Progress(Protocol):
    """A progress callback: ``progress("reading the model", 0.1)``; the fraction is None when unknown."""

    def __call__(self, message: str, fraction: float | None = None, /) -> None: ...


def silent(message: str, fraction: float | None = None, /) -> None:
    """The progress callback that shows nothing (used when the caller gives none)."""
