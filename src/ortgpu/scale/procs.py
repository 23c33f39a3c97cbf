"""The parent's side of a worker process: start it on a slot with a job, exchange messages, see it die."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from ortgpu.scale.devices import DeviceSlot

__all__ = ["WorkerProcess", "wait_any"]


class WorkerProcess:
    """One ``python -m ortgpu.scale.worker`` process pinned to ``slot``, running ``module.function(payload)``.

    ``connection`` is what :func:`wait_any` watches; ``recv`` raises EOFError once the process is gone.
    """

    def __init__(self, slot: DeviceSlot, module: str, function: str, payload: Any, name: str | None = None) -> None:
        from multiprocessing.connection import Connection

        self.slot = slot
        self.name = name or slot.label
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        env = {**os.environ, **slot.environment()}
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "ortgpu.scale.worker", str(to_child_r), str(from_child_w), self.name],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=sys.stderr.fileno() if _has_fileno(sys.stderr) else subprocess.DEVNULL,
                pass_fds=(to_child_r, from_child_w),
                close_fds=True,
            )
        finally:
            os.close(to_child_r)
            os.close(from_child_w)
        self._out = Connection(to_child_w, readable=False)
        self.connection = Connection(from_child_r, writable=False)
        self._out.send((module, function, payload))

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    @property
    def exitcode(self) -> int | None:
        return self.process.poll()

    def send(self, message: Any) -> bool:
        """Send ``message``; False when the process is gone."""
        try:
            self._out.send(message)
        except (OSError, EOFError):
            return False
        return True

    def recv(self) -> Any:
        return self.connection.recv()

    def kill(self) -> None:
        if self.alive:
            self.process.kill()

    def close(self, timeout: float = 10.0) -> None:
        """Wait for the process to end (killed after ``timeout`` seconds) and close the pipes."""
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for conn in (self._out, self.connection):
            conn.close()

    def describe_exit(self) -> str:
        code = self.exitcode
        if code is None:
            return "still running"
        return f"signal {-code}" if code < 0 else f"exit status {code}"


def _has_fileno(stream: Any) -> bool:
    try:
        stream.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    return True


def wait_any(workers: Sequence[WorkerProcess], timeout: float | None) -> list[WorkerProcess]:
    """The workers with a message to read, or whose process ended, within ``timeout`` seconds."""
    from multiprocessing.connection import wait

    ready = wait([w.connection for w in workers], timeout=timeout)
    return [w for w in workers if w.connection in ready]
