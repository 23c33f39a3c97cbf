"""Evidence signals the *_signals modules share: a class recognised by its words, on the first line that shows it."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.signal_kinds import Signal, SignalKind

__all__ = ["evidence_signal", "first_evidence", "first_line_match"]


def evidence_signal(
    paste: Paste, index: int, start: int, evidence: str, values: Mapping[str, str] | None = None
) -> Signal:
    """An ANTICIPATED signal on line `index` at `start` within it; `evidence` says which class it is."""
    return Signal(
        SignalKind.ANTICIPATED, index, paste.starts[index] + start, {"evidence": evidence}, dict(values or {})
    )


def first_line_match(paste: Paste, pattern: re.Pattern[str]) -> tuple[int, re.Match[str]] | None:
    """The first line the pattern matches, with the match; None when no line does."""
    for index, line in enumerate(paste.lines):
        found = pattern.search(line)
        if found is not None:
            return index, found
    return None


def first_evidence(paste: Paste, pattern: re.Pattern[str], evidence: str) -> Iterator[Signal]:
    """At most one signal: on the first line the pattern matches."""
    hit = first_line_match(paste, pattern)
    if hit is not None:
        yield evidence_signal(paste, hit[0], hit[1].start(), evidence)
