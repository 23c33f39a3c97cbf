"""`ortgpu infer --ray`: the tasks as a Ray Data dataset, run by `map_batches` on an actor pool, one actor per GPU.

Each actor (``num_gpus=1``: Ray sets its ``CUDA_VISIBLE_DEVICES``, so it runs on device 0) holds the same
verified session as a local worker (:class:`ortgpu.infer.worker.InferWorker`), reads its tasks' files and writes
their outputs itself: ``--inputs`` and ``--out`` must be the same path on every node (a shared file system).
An actor that dies is restarted by Ray and its task retried (Ray Data's actor defaults); outputs
are written once, so a retried task keeps what the first attempt wrote. The driver writes the manifest.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import Any

from ortgpu.errors import OrtgpuError
from ortgpu.infer.dataset import Item, Task
from ortgpu.infer.local import PoolEvents, PoolOutcome
from ortgpu.infer.worker import InferWorker, ItemRecord, WorkerInfo, WorkerSpec
from ortgpu.scale.ray_cluster import Cluster, RayUnavailableError, import_ray

__all__ = ["RayInferActor", "run_ray"]


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
    """The map_batches class: one verified session per actor; each call runs the tasks of one batch of rows."""

    def __init__(self, spec: WorkerSpec) -> None:
        import ray

        name = f"ray-{ray.get_runtime_context().get_actor_id()[-8:]}"
        self.worker = InferWorker(spec, name)
        self.info = json.dumps(asdict(self.worker.info))

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {"task": [], "records": [], "worker": []}
        for text in batch["task"]:
            task = _task_from_json(str(text))
            records = self.worker.process(task)
            out["task"].append(task.index)
            out["records"].append(json.dumps([asdict(r) for r in records]))
            out["worker"].append(self.info)
        return out


def run_ray(
    spec: WorkerSpec,
    tasks: Sequence[Task],
    events: PoolEvents,
    cluster: Cluster,
    workers: int | None,
) -> PoolOutcome:
    """Run ``tasks`` on ``workers`` actors (default: one per GPU of the cluster, or 1 on the CPU EP)."""
    import_ray()
    import ray.data

    gpu = spec.ep not in (None, "cpu")
    if gpu and cluster.gpus < 1:
        raise RayUnavailableError(
            f"the Ray cluster has no GPU ({cluster.nodes} nodes, {cluster.cpus} CPUs) for the {spec.ep} EP",
            "add GPU nodes, or run with --ep cpu --workers N",
        )
    count = workers or (cluster.gpus if gpu else 1)
    if gpu:
        spec = replace(spec, device_id=0)  # Ray gives each actor its GPU as CUDA_VISIBLE_DEVICES
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False
    rows = [{"task": _task_json(t)} for t in tasks]
    dataset = ray.data.from_items(rows, override_num_blocks=max(1, min(len(rows), count * 8)))
    resources = {"num_gpus": 1} if gpu else {"num_cpus": 1}
    mapped = dataset.map_batches(
        RayInferActor,
        fn_constructor_kwargs={"spec": spec},
        batch_size=1,
        compute=ray.data.ActorPoolStrategy(size=count),
        **resources,  # Ray Data restarts a dead actor and retries its task (max_restarts / max_task_retries -1)
    )
    seen: dict[str, WorkerInfo] = {}
    stopped = False
    try:
        for row in mapped.iter_rows():
            info = WorkerInfo(**json.loads(row["worker"]))
            if info.name not in seen:
                seen[info.name] = info
                events.started(info)
            records = [ItemRecord(**r) for r in json.loads(row["records"])]
            if not events.finished(int(row["task"]), records):
                stopped = True
                break
    except KeyboardInterrupt:
        return PoolOutcome(tuple(seen.values()), max(0, len(seen) - count), 0, True, True)
    except Exception as exc:  # Ray wraps the actor's error in its own exception types
        cause = _ortgpu_cause(exc)
        if cause is not None:
            raise cause from None
        if isinstance(exc, OrtgpuError):
            raise
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[-1]
        raise RayUnavailableError(f"the Ray job failed: {first}", "see the Ray logs of the cluster") from None
    return PoolOutcome(tuple(seen.values()), max(0, len(seen) - count), 0, stopped, False)


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
