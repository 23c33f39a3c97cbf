"""`ortgpu infer --ray`: the tasks as a Ray Data dataset, run by `map_batches` on an actor pool, one actor per GPU.

Each actor (``num_gpus=1``: Ray sets its ``CUDA_VISIBLE_DEVICES``, so it runs on device 0) holds the same
verified session as a local worker (:class:`ortgpu.infer.worker.InferWorker`), reads its tasks' files and writes
their outputs itself: ``--inputs`` and ``--out`` must be the same path on every node (a shared file system).
The driver writes the manifest.

Faults, as the local pool handles them. An actor that dies is restarted by Ray (``max_restarts=-1``: its session
is built again, in a new process). Its tasks are not retried by Ray (``max_task_retries=0``: Ray Data's default of
endless retries on the same actor would hang the run on an input that kills every actor that runs it); the block
that held them is dropped (``max_errored_blocks=-1``), and the driver runs the tasks that did not come back again
in a next round, up to ``max_attempts`` tries each, one task per block and per actor at a time, so only the task an
actor died on is charged again. A task that fails ``max_attempts`` times has its items reported as bad. Outputs are
written once, so a retried task keeps what an attempt that died had written, and a task that comes back twice is
counted once.
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import sys
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import asdict, replace
from typing import Any

from ortgpu.errors import OrtgpuError
from ortgpu.infer.dataset import Item, Task
from ortgpu.infer.local import PoolEvents, PoolOutcome, WorkerStartError
from ortgpu.infer.worker import InferWorker, ItemRecord, WorkerInfo, WorkerSpec
from ortgpu.scale.ray_cluster import Cluster, RayUnavailableError, import_ray

__all__ = ["RayInferActor", "run_ray"]

_BLOCKS_PER_ACTOR = 8  # the first round's blocks per actor (later rounds: one task per block)
_CALLS_PER_ACTOR = (
    8  # the first round's calls at once per actor: seven read (and copy to the GPU) or write while one runs
)


def _task_json(task: Task) -> str:
    return json.dumps(
        {
            "index": task.index,
            "items": [[i.name, i.source, i.start, i.stop] for i in task.items],
            "record": sorted(task.record) if task.record is not None else None,
        }
    )


def _task_from_json(text: str) -> Task:
    doc = json.loads(text)
    record = doc["record"]
    return Task(
        doc["index"], tuple(Item(*fields) for fields in doc["items"]), frozenset(record) if record is not None else None
    )


class RayInferActor:
    """The map_batches class: one verified session per actor; each call runs the tasks of one batch of rows.
    A task that raises is returned with its error (the driver retries it), so one failure does not end the job.
    An actor that cannot build its session returns that error for every task: the driver stops the run with it
    (as a local worker's start error does; Ray would only pass on its text)."""

    def __init__(self, spec: WorkerSpec) -> None:
        import ray

        self.actor = ray.get_runtime_context().get_actor_id() or ""
        self.running = threading.Lock()
        self.fatal = ""
        try:
            self.worker = InferWorker(spec, f"ray-{self.actor[:8]}")
        except OrtgpuError as exc:
            self.fatal = json.dumps([exc.message, exc.hint, int(exc.exit_code)])
            return
        self.info = json.dumps(asdict(self.worker.info))

    def _process(self, task: Task) -> list[ItemRecord]:
        """Read, run, write: the runs one at a time (the lock), reading and writing beside them when Ray Data gives
        the actor two calls at once (as a local worker's reader and writer threads do)."""
        prepared = self.worker.prepare(task)
        with self.running:
            self.worker.compute(prepared)
        return self.worker.write(prepared)

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {
            "task": [],
            "records": [],
            "error": [],
            "fatal": [],
            "actor": [],
            "worker": [],
            "started": [],
            "ended": [],
        }
        for text in batch["task"]:
            task = _task_from_json(str(text))
            records, error = "[]", ""
            out["started"].append(time.time())
            if not self.fatal:
                try:
                    records = json.dumps([asdict(r) for r in self._process(task)])
                except Exception as exc:  # a bug or a resource error: retried elsewhere like a death, then reported
                    error = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            out["ended"].append(time.time())
            out["task"].append(task.index)
            out["records"].append(records)
            out["error"].append(error)
            out["fatal"].append(self.fatal)
            out["actor"].append(self.actor)
            out["worker"].append("" if self.fatal else self.info)
        return out


@contextlib.contextmanager
def _data_context(**settings: Any) -> Iterator[None]:
    """Ray Data's settings for this run only (a dataset copies them when it is created)."""
    import ray.data

    context = ray.data.DataContext.get_current()
    before = {name: getattr(context, name) for name in settings}
    for name, value in settings.items():
        setattr(context, name, value)
    try:
        yield
    finally:
        for name, value in before.items():
            setattr(context, name, value)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """While the job runs: Ray's driver prints the raylet's messages (a worker died...) to ``sys.stdout``, which
    holds the result (``--json``): they go to stderr. Ray Data's console shows only its warnings (e.g. that the
    cluster lacks the resources for an actor): its info lines, and the errors with their tracebacks that the run
    reports itself in one line (a dropped block, an actor that could not start), go only to its log file
    (``ray-data.log`` in the Ray session's folder)."""

    def warnings_only(record: logging.LogRecord) -> bool:
        return record.levelno == logging.WARNING and "Progress bars disabled" not in str(record.msg)

    consoles = [
        h
        for h in logging.getLogger("ray.data").handlers
        if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)
    ]
    for handler in consoles:
        handler.addFilter(warnings_only)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        for handler in consoles:
            handler.removeFilter(warnings_only)


def _our_actors() -> dict[str, int]:
    """This driver's infer actors in Ray's actor table -> their restarts (empty when the table cannot be read)."""
    try:
        import ray
        from ray._private import state  # what RuntimeContext.was_current_actor_reconstructed reads

        job = ray.get_runtime_context().get_job_id()
        return {
            actor: int(info.get("NumRestarts") or 0)
            for actor, info in state.actors().items()
            if info.get("JobID") == job and "RayInferActor" in str(info.get("ActorClassName"))
        }
    except Exception:  # a private table: its shape may change between Ray versions
        return {}


class _Workers:
    """The actors' reports, named per process: an actor that Ray restarted (same actor, new pid) is ``NAME#1``..."""

    def __init__(self, events: PoolEvents) -> None:
        self.events = events
        self.names: dict[tuple[str, int], str] = {}
        self.lives: collections.Counter[str] = collections.Counter()
        self.infos: list[WorkerInfo] = []
        self.replaced = 0

    def name(self, actor: str, info_json: str) -> str:
        info = WorkerInfo(**json.loads(info_json))
        key = (actor, info.pid)
        if key not in self.names:
            life = self.lives[actor]
            self.lives[actor] += 1
            self.replaced += 1 if life else 0
            self.names[key] = info.name + (f"#{life}" if life else "")
            info = replace(info, name=self.names[key])
            self.infos.append(info)
            self.events.started(info)
        return self.names[key]


def run_ray(
    spec: WorkerSpec,
    tasks: Sequence[Task],
    events: PoolEvents,
    cluster: Cluster,
    workers: int | None,
    *,
    max_attempts: int = 3,
) -> PoolOutcome:
    """Run ``tasks`` on ``workers`` actors (default: one per GPU of the cluster, or 1 on the CPU EP); see the module
    docstring for what happens when an actor dies."""
    import_ray()
    try:
        import ray.data  # noqa: F401 - Ray Data needs pyarrow and pandas, which a bare `pip install ray` lacks
    except ImportError as exc:
        raise RayUnavailableError(
            f"--ray needs Ray Data, which cannot be imported here ({exc})", "pip install 'ortgpu[ray]' (ray[data])"
        ) from None

    gpu = spec.ep not in (None, "cpu")
    if gpu and cluster.gpus < 1:
        raise RayUnavailableError(
            f"the Ray cluster has no GPU ({cluster.nodes} nodes, {cluster.cpus} CPUs) for the {spec.ep} EP",
            "add GPU nodes, or run with --ep cpu --workers N",
        )
    count = workers or (cluster.gpus if gpu else 1)
    if gpu:
        spec = replace(spec, device_id=0)  # Ray gives each actor its GPU as CUDA_VISIBLE_DEVICES
    run = _Rounds(spec, tasks, events, count, gpu, max_attempts)
    earlier = set(_our_actors())  # an earlier run of this process: not this one's
    interrupted = False
    try:
        with _quiet():
            run.run()
    except KeyboardInterrupt:
        interrupted = run.stopped = True
    except Exception as exc:  # Ray wraps the actor's error in its own exception types
        cause = _ortgpu_cause(exc)
        if cause is not None:
            raise cause from None
        if isinstance(exc, OrtgpuError):
            raise
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[-1]
        raise RayUnavailableError(f"the Ray job failed: {first_line}", "see the Ray logs of the cluster") from None
    restarts = sum(n for actor, n in _our_actors().items() if actor not in earlier)
    replaced = max(run.workers.replaced, restarts)  # the table counts restarts of actors that never reported
    busy = run.span[1] - run.span[0] if run.span else None
    return PoolOutcome(tuple(run.workers.infos), replaced, run.retried, run.stopped, interrupted, busy)


class _Rounds:
    """The job in rounds: every task once, then the tasks that did not come back, until each is done or has failed
    ``max_attempts`` times (its items then reported as bad)."""

    def __init__(
        self,
        spec: WorkerSpec,
        tasks: Sequence[Task],
        events: PoolEvents,
        count: int,
        gpu: bool,
        max_attempts: int,
    ) -> None:
        self.spec = spec
        self.events = events
        self.count = count
        self.gpu = gpu
        self.max_attempts = max_attempts
        self.pending = {t.index: t for t in tasks}
        self.attempts: collections.Counter[int] = collections.Counter()
        self.errors: dict[int, str] = {}
        self.workers = _Workers(events)
        self.retried = 0
        self.span: list[float] = []  # the first task's start and the last one's end, as the actors saw them
        self.stopped = False

    def run(self) -> None:
        first = True
        while self.pending and not self.stopped:
            self._round(first)
            first = False
            if not self.stopped:
                self._charge()

    def _round(self, first: bool) -> None:
        """One Ray Data job over the pending tasks. The first splits them into a few blocks per actor and lets each
        actor queue Ray Data's default number of tasks; later ones (the few that failed) put one task in a block
        and one at a time on an actor, so an actor that dies takes only the task it was running with it."""
        import ray.data

        rows = [{"task": _task_json(t)} for t in self.pending.values()]
        blocks = min(len(rows), self.count * _BLOCKS_PER_ACTOR) if first else len(rows)
        settings = {"enable_progress_bars": False, "print_on_execution_start": False, "max_errored_blocks": -1}
        with _data_context(**settings), warnings.catch_warnings():
            # Ray 2.60 deprecates these remote args (gone in 2.64: pyproject pins ray below it) without a named
            # replacement for max_task_retries
            warnings.filterwarnings("ignore", message="`ray_remote_args` is deprecated")
            mapped = ray.data.from_items(rows, override_num_blocks=max(1, blocks)).map_batches(
                RayInferActor,
                fn_constructor_kwargs={"spec": self.spec},
                batch_size=1,
                compute=ray.data.ActorPoolStrategy(
                    size=min(self.count, len(rows)),
                    max_tasks_in_flight_per_actor=None if first else 1,
                    max_concurrent_calls_per_actor=_CALLS_PER_ACTOR if first else 1,
                    enable_true_multi_threading=first,
                ),
                max_restarts=-1,  # a dead actor is started again (its session built again)
                max_task_retries=0,  # its tasks come back to the driver, which counts their attempts
                num_gpus=1 if self.gpu else None,  # one GPU per actor; on the CPU EP one CPU
                num_cpus=None if self.gpu else 1,
            )
        for row in mapped.iter_rows():
            if row["fatal"]:
                message, hint, code = json.loads(row["fatal"])
                raise WorkerStartError(f"ray-{str(row['actor'])[:8]}: {message}", hint, code)
            index = int(row["task"])
            name = self.workers.name(str(row["actor"]), str(row["worker"]))
            if index not in self.pending:
                continue  # done already: counted once
            if row["error"]:
                self.errors[index] = f"failed on {name}: {row['error']}"
                continue
            task = self.pending.pop(index)
            started, ended = float(row["started"]), float(row["ended"])
            self.span = [min(self.span[0], started), max(self.span[1], ended)] if self.span else [started, ended]
            records = [replace(ItemRecord(**r), worker=name) for r in json.loads(row["records"])]
            if not self.events.finished(task.index, records):
                self.stopped = True
                return

    def _charge(self) -> None:
        """The tasks that did not come back (their actor died, or they raised): tried again, or reported as bad."""
        for index, task in list(self.pending.items()):
            self.attempts[index] += 1
            why = self.errors.pop(index, "its Ray actor died running it")
            if self.attempts[index] < self.max_attempts:
                self.retried += 1
                self.events.retried(index, "ray", why)
                continue
            del self.pending[index]
            reason = f"{why} ({self.attempts[index]} attempts)"
            records = [ItemRecord(i.name, "bad", reason=reason) for i in task.items if task.records(i.name)]
            if not self.events.finished(index, records):
                self.stopped = True
                return


def _ortgpu_cause(exc: BaseException) -> OrtgpuError | None:
    seen = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OrtgpuError):
            return current
        cause = getattr(current, "cause", None)
        if isinstance(cause, BaseException):
            current = cause
            continue
        current = current.__cause__ or current.__context__
    return None
