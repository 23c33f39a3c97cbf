"""Local workers for `ortgpu infer`: one process per GPU (or N CPU processes), a dead one replaced, its task retried.

Each worker is a fresh ``python -m ortgpu.scale.worker`` process pinned to its device, holding one verified
session (:class:`ortgpu.infer.worker.InferWorker`). The parent hands out one task at a time to idle workers.
When a worker dies, its task goes back to the front of the queue (up to ``max_attempts`` tries, then its items
are reported as failed) and a new worker is started on the same device (up to ``max_restarts`` per device).
A worker that cannot build its session stops the run with that error: a replacement would fail the same way.
"""

from __future__ import annotations

import collections
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ortgpu.errors import EnvironmentUnfitError, OrtgpuError
from ortgpu.infer.dataset import Task
from ortgpu.infer.worker import ItemRecord, WorkerInfo, WorkerSpec
from ortgpu.scale.devices import DeviceSlot
from ortgpu.scale.procs import WorkerProcess, wait_any

__all__ = ["PoolEvents", "PoolOutcome", "WorkerStartError", "run_local"]


class WorkerStartError(OrtgpuError):
    """A worker could not build its verified session; carries that error's exit code."""

    def __init__(self, message: str, hint: str | None, exit_code: int) -> None:
        super().__init__(message, hint)
        self.exit_code = exit_code  # type: ignore[assignment]


@dataclass
class PoolEvents:
    """What the pool tells its caller. ``finished`` returns False to stop handing out tasks (--fail-fast).
    ``dispatching(task, worker, pid)`` is called just before a task is sent to a worker. ``timed(task, seconds)``:
    the seconds a worker spent on a finished task per stage (:data:`ortgpu.infer.worker.STAGES`)."""

    started: Callable[[WorkerInfo], None] = lambda info: None
    finished: Callable[[int, list[ItemRecord]], bool] = lambda index, records: True
    retried: Callable[[int, str, str], None] = lambda index, worker, why: None
    dispatching: Callable[[int, str, int], None] = lambda index, worker, pid: None
    timed: Callable[[int, Mapping[str, float]], None] = lambda index, seconds: None


@dataclass(frozen=True)
class PoolOutcome:
    workers: tuple[WorkerInfo, ...]  # every worker that came up, replacements included
    replaced: int  # workers that died and were replaced
    retried: int  # tasks handed out again after their worker died
    stopped: bool  # stopped early (--fail-fast or Ctrl-C)
    interrupted: bool
    # Ray: from the first task an actor started to the last one it finished (the actors' clocks), without Ray's
    # job start and the actors' sessions; None for local workers (their run is timed from the first one up)
    busy_s: float | None = None


@dataclass
class _Slot:
    slot: DeviceSlot
    process: WorkerProcess | None = None
    ready: bool = False
    tasks: list[Task] = dataclasses.field(default_factory=list)  # handed out, not finished: in order
    restarts: int = 0
    generation: int = 0
    retired: bool = False


def run_local(
    spec: WorkerSpec,
    slots: Sequence[DeviceSlot],
    tasks: Sequence[Task],
    events: PoolEvents | None = None,
    *,
    max_attempts: int = 3,
    max_restarts: int = 3,
    depth: int | None = None,
    start_wait_s: float = 60.0,
) -> PoolOutcome:
    """Run ``tasks`` on one worker per slot; see the module docstring. ``depth``: tasks handed to a worker at once
    (it reads the next while it runs one; default: one per reader thread, the one running and one more). Tasks
    are handed out once every worker is up (they start together), or ``start_wait_s`` after the first one is."""
    events = events or PoolEvents()
    depth = depth if depth is not None else spec.readers + 2
    queue: collections.deque[Task] = collections.deque(tasks)
    attempts: collections.Counter[int] = collections.Counter()
    states = [_Slot(slot) for slot in slots]
    infos: list[WorkerInfo] = []
    replaced = retried = 0
    stopped = interrupted = False

    def start(state: _Slot) -> None:
        name = state.slot.label + (f"#{state.generation}" if state.generation else "")
        worker_spec = dataclasses.replace(spec, device_id=state.slot.device_id if state.slot.gpu else spec.device_id)
        state.process = WorkerProcess(state.slot, "ortgpu.infer.worker", "serve", (worker_spec, name), name=name)
        state.ready = False
        state.tasks = []

    def lost(state: _Slot, why: str) -> None:
        nonlocal replaced, retried
        process = state.process
        if process is None:
            return
        process.kill()
        process.close(5)
        for task in reversed(state.tasks):  # back to the front of the queue, in their order
            attempts[task.index] += 1
            if attempts[task.index] >= max_attempts:
                reason = f"its worker died {attempts[task.index]} times on this batch ({why})"
                records = [ItemRecord(i.name, "bad", reason=reason, worker=process.name) for i in task.items]
                events.finished(task.index, [r for r in records if task.records(r.name)])
            else:
                queue.appendleft(task)
                retried += 1
                events.retried(task.index, process.name, why)
        state.process, state.tasks, state.ready = None, [], False
        state.restarts += 1
        if state.restarts > max_restarts:
            state.retired = True
            return
        state.generation += 1
        replaced += 1
        start(state)

    for state in states:
        start(state)
    first_ready: float | None = None
    try:
        while True:
            busy = [s for s in states if s.tasks]
            if not busy and (not queue or stopped):
                break
            live = [s for s in states if s.process is not None]
            if not live:
                raise EnvironmentUnfitError(
                    f"every worker died (each device restarted {max_restarts} times); {len(queue)} tasks not run",
                    "see the workers' messages above; check the kernel log (out of memory?)",
                )
            all_up = all(s.ready or s.retired for s in states)
            waited = first_ready is not None and time.monotonic() - first_ready > start_wait_s
            for state in live if all_up or waited else ():
                while state.ready and len(state.tasks) < depth and queue and not stopped:
                    task = queue.popleft()
                    state.tasks.append(task)
                    process = state.process
                    if process is None:
                        break
                    events.dispatching(task.index, process.name, process.pid)
                    if not process.send(("task", task)):
                        lost(state, f"gone ({process.describe_exit()})")
                        break
            live = [s for s in states if s.process is not None]
            for process in wait_any([s.process for s in live if s.process is not None], timeout=0.5):
                state = next(s for s in live if s.process is process)
                try:
                    message = process.recv()
                except (EOFError, OSError):
                    process.process.wait()
                    lost(state, f"died: {process.describe_exit()}")
                    continue
                kind = message[0]
                if kind == "ready":
                    state.ready = True
                    first_ready = first_ready if first_ready is not None else time.monotonic()
                    infos.append(message[1])
                    events.started(message[1])
                elif kind == "done":
                    state.tasks = [t for t in state.tasks if t.index != message[1]]
                    if len(message) > 3:
                        events.timed(message[1], message[3])
                    if not events.finished(message[1], list(message[2])):
                        stopped = True
                elif kind in ("error", "crash"):
                    if not state.ready:  # the session could not be built: every replacement would fail alike
                        if kind == "crash":
                            raise RuntimeError(f"{process.name} worker: {message[1]}")
                        raise WorkerStartError(f"{process.name}: {message[1]}", message[2], message[3])
                    lost(state, f"failed: {message[1]}")
    except KeyboardInterrupt:
        interrupted = stopped = True
    finally:
        for state in states:
            if state.process is not None:
                if not state.tasks and not interrupted:
                    state.process.send(("stop",))
                else:
                    state.process.kill()
                state.process.close(10)
    return PoolOutcome(tuple(infos), replaced, retried, stopped, interrupted)
