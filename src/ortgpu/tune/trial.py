"""Run one trial in a child process with a time and a host-memory limit; a crash, hang or OOM is an outcome."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ortgpu

__all__ = ["CHILD_COMMAND", "Outcome", "TrialLimits", "run_child"]

CHILD_COMMAND: tuple[str, ...] = (sys.executable, "-m", "ortgpu.tune.child")
_POLL_S = 0.05


@dataclass(frozen=True)
class TrialLimits:
    """``time_s``: wall time for the whole child; ``host_memory_bytes``: resident memory it may reach."""

    time_s: float = 300.0
    host_memory_bytes: int | None = None


@dataclass(frozen=True)
class Outcome:
    """How a child ended. ``kind``: done, refused, rejected, error (reported by the child), pruned (stopped by the
    parent after a stage), timeout, memory (killed over the host limit), crashed (died without a last line)."""

    kind: str
    message: str = ""
    result: Mapping[str, Any] = field(default_factory=dict)
    stages: tuple[float, ...] = ()
    stderr_tail: str = ""
    seconds: float = 0.0


def _rss_bytes(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _child_env() -> dict[str, str]:
    """The parent's environment, with ortgpu's own folder on PYTHONPATH so the child imports the same code."""

    env = dict(os.environ)
    root = str(Path(ortgpu.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _kill(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def run_child(
    spec: Mapping[str, Any],
    limits: TrialLimits,
    on_stage: Callable[[int, float], bool] | None = None,
    command: Sequence[str] = CHILD_COMMAND,
) -> Outcome:
    """Start ``command``, send ``spec``, follow its protocol lines; ``on_stage(step, value)`` returns False to stop.

    The child runs in its own process group (its own children die with it) and is killed past ``limits``.
    """
    started = time.perf_counter()
    process = subprocess.Popen(
        list(command),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_child_env(),
        start_new_session=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()
    stderr: list[str] = []

    def pump_out() -> None:
        for line in process.stdout:  # type: ignore[union-attr]
            lines.put(line)
        lines.put(None)

    def pump_err() -> None:
        for line in process.stderr:  # type: ignore[union-attr]
            stderr.append(line)
            del stderr[:-40]

    readers = [threading.Thread(target=pump_out, daemon=True), threading.Thread(target=pump_err, daemon=True)]
    for reader in readers:
        reader.start()
    stages: list[float] = []

    def outcome(kind: str, message: str = "", result: Mapping[str, Any] | None = None) -> Outcome:
        return Outcome(
            kind, message, result or {}, tuple(stages), "".join(stderr[-15:])[-3000:], time.perf_counter() - started
        )

    def send(text: str) -> None:
        try:
            process.stdin.write(text + "\n")  # type: ignore[union-attr]
            process.stdin.flush()  # type: ignore[union-attr]
        except (BrokenPipeError, OSError):
            pass

    final = len(spec.get("stages") or ()) - 1
    send(json.dumps(dict(spec)))
    try:
        while True:
            elapsed = time.perf_counter() - started
            if elapsed > limits.time_s:
                _kill(process)
                return outcome("timeout", f"killed after {limits.time_s:.0f} s (the trial time limit)")
            rss = _rss_bytes(process.pid)
            if limits.host_memory_bytes is not None and rss is not None and rss > limits.host_memory_bytes:
                _kill(process)
                return outcome(
                    "memory",
                    f"killed at {rss / 2**20:.0f} MiB resident, over the host memory limit of "
                    f"{limits.host_memory_bytes / 2**20:.0f} MiB",
                )
            try:
                line = lines.get(timeout=_POLL_S)
            except queue.Empty:
                continue
            if line is None:  # stdout closed: the child ended without a last line
                code = process.wait()
                for reader in readers:
                    reader.join(1.0)
                how = f"signal {-code}" if code < 0 else f"exit code {code}"
                return outcome("crashed", f"the trial process died ({how}) without a result")
            try:
                event = json.loads(line)
            except ValueError:
                continue
            kind = event.get("event")
            if kind == "stage":
                stages.append(float(event["value"]))
                step = int(event["step"])
                keep = on_stage(step, float(event["value"])) if on_stage is not None else True
                if not keep and step < final:  # after the last stage the measurement is complete: keep it
                    send("stop")
                    _kill(process)
                    return outcome("pruned", f"stopped after stage {int(event['step']) + 1} by the pruner")
                send("go")
            elif kind in ("done", "refused", "rejected", "error"):
                message = str(event.get("message", ""))
                if kind == "error" and event.get("kind"):
                    message = f"{event['kind']}: {message}"
                process.wait(timeout=30)
                return outcome(kind, message, event)
    finally:
        if process.poll() is None:
            _kill(process)
