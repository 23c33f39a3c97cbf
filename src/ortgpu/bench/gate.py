"""The start gate each case waits at before its timed runs: lets several bench processes start measuring together.

Nothing waits unless a caller installs a gate (``bench --devices`` does, in each worker process): ``start_gate``
is then called with the case's key after its warm-up and before its first timed run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["gated", "start_gate"]

_gates: list[Callable[[str], None]] = []  # the installed gate, innermost last; empty: no gate


def start_gate(key: str) -> None:
    """Wait at the installed gate, if any (``key`` names the case, so the gate can tell cases apart)."""
    if _gates:
        _gates[-1](key)


@contextmanager
def gated(gate: Callable[[str], None]) -> Iterator[None]:
    """Install ``gate`` for this process while the block runs (every thread of the process sees it)."""
    _gates.append(gate)
    try:
        yield
    finally:
        _gates.remove(gate)
