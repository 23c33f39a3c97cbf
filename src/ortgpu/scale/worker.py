"""The worker process entry, `python -m ortgpu.scale.worker FD_IN FD_OUT NAME`: runs one job function, talks by pipes.

A fresh interpreter (never a fork: no CUDA state is inherited, and the caller's ``__main__`` is never re-run).
NAME (e.g. ``gpu1``) is only there so ``ps`` shows which worker a process is.
The parent sets the environment (``CUDA_VISIBLE_DEVICES``) when it starts the process. The first message on
FD_IN is ``(module, function, payload)``; the worker imports ``module`` (an ``ortgpu.`` module only) and calls
``function(payload, channel)``. Anything a library prints goes to stderr: stdout is pointed there, so it never
mixes with the parent's output. Errors are sent back as messages, never printed as tracebacks.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from ortgpu.errors import OrtgpuError

__all__ = ["Channel", "main"]


class Channel:
    """The worker's end: ``send`` a message (any picklable value) to the parent, ``recv`` one from it."""

    def __init__(self, incoming: Any, outgoing: Any) -> None:
        self._in = incoming
        self._out = outgoing

    def send(self, message: Any) -> None:
        self._out.send(message)

    def recv(self) -> Any:
        return self._in.recv()


def main(argv: Sequence[str] | None = None) -> int:
    from multiprocessing.connection import Connection

    args = list(sys.argv[1:] if argv is None else argv)
    incoming = Connection(int(args[0]), writable=False)
    outgoing = Connection(int(args[1]), readable=False)
    os.dup2(2, 1)  # a library's print goes to stderr, never to the parent's stdout
    channel = Channel(incoming, outgoing)
    try:
        module, function, payload = channel.recv()
        if not str(module).startswith("ortgpu."):
            raise ValueError(f"refusing to run {module}.{function}: not an ortgpu module")
        target = getattr(importlib.import_module(module), function)
        target(payload, channel)
    except EOFError:
        return 0  # the parent went away
    except OrtgpuError as exc:
        channel.send(("error", exc.message, exc.hint, int(exc.exit_code)))
        return 1
    except KeyboardInterrupt:
        channel.send(("error", "interrupted", None, 130))
        return 130
    except BaseException as exc:  # a bug: sent as text; the parent decides what to show
        import traceback

        channel.send(("crash", f"{type(exc).__name__}: {exc}", traceback.format_exc()))
        return 70
    return 0


if __name__ == "__main__":  # pragma: no cover - the process entry
    sys.exit(main())
