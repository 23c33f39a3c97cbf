"""SIGTERM handled like Ctrl-C: `timeout`, `docker stop` and `kill` let every cleanup run, then exit 143."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType

__all__ = ["TERMINATED_EXIT_CODE", "Terminated", "call_handling_sigterm"]

TERMINATED_EXIT_CODE = 143  # 128 + SIGTERM, what a shell reports for a process SIGTERM ended


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when SIGTERM arrives. A KeyboardInterrupt, so every handler that stops work on
    Ctrl-C (finally blocks, temp folder cleanups, bench keeping what finished) does the same on SIGTERM."""


def call_handling_sigterm(main: Callable[[], int]) -> int:
    """Run ``main`` with SIGTERM raising Terminated; its exit code, or 143 when SIGTERM arrived.

    A second SIGTERM while the first one's cleanups run is ignored, so they finish (SIGKILL still ends the process).
    Outside the main thread (where Python cannot install handlers) ``main`` runs as it is.
    """
    if threading.current_thread() is not threading.main_thread():
        return main()
    received = False

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal received
        if received:
            return
        received = True
        raise Terminated

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        code = main()
    except Terminated:  # arrived after main's own handlers had returned
        code = TERMINATED_EXIT_CODE
    finally:
        signal.signal(signal.SIGTERM, previous)
    return TERMINATED_EXIT_CODE if received else code
