"""One inference worker: a verified session (``ortgpu.load``) that runs tasks and writes each item's outputs once.

The same class runs in a local worker process (:func:`serve`) and in a Ray actor. A task's valid items are run
together: consecutive items whose arrays fit one batch (same trailing dims) are concatenated and run in slices
of ``batch`` rows, the outputs split back per item. An item that cannot be read or fed is reported with its
reason and skipped; when ORT refuses a batch, each of its items is run alone to find the ones at fault. The
rows that go into each run depend only on the task, so any number of workers gives the same bits.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortgpu.errors import OrtgpuError
from ortgpu.infer.dataset import Item, ItemError, ItemReader, SourceKind, Task
from ortgpu.infer.store import npz_bytes, write_once
from ortgpu.runtime.guard import import_onnxruntime
from ortgpu.session import load

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["STAGES", "InferWorker", "ItemRecord", "WorkerInfo", "WorkerSpec", "input_digest", "reader_threads", "serve"]

# The stages a local worker times per task (seconds, summed by the run): ``read`` (read and check the files, on
# reader threads), ``starved`` (the session thread waiting for a read task: the time a bare loop does not lose),
# ``run`` (the session runs), ``write`` (outputs hashed and written once, on writer threads).
STAGES = ("read", "starved", "run", "write")
# Input bytes a worker holds on the GPU ahead of their runs (see InferWorker.prepare): the copies must never crowd
# out the session's own memory, so past this the items wait on the host as they would without the copy
DEVICE_COPY_BUDGET = 1 << 30
WRITERS = 2  # writer threads per worker (each output's fsync waits on the disk: two overlap it)


@dataclass(frozen=True)
class WorkerSpec:
    """What every worker is built from: the model, the config, the EP, the batch and the folders."""

    model: str
    config: str | None
    ep: str | None
    out: str
    kind: SourceKind
    batch: int
    device_id: int | None = None
    provider_options: Mapping[str, str] = field(default_factory=dict)
    readers: int = 2  # reader threads per worker (see reader_threads)


def reader_threads(workers: int, cpus: int | None = None) -> int:
    """Reader threads per worker: enough that reading never starves the session (a big uncompressed file takes
    about twice a GPU run to read and check on one thread, four times when the thread also copies it to the GPU),
    at most 8 (each holds a task's arrays), and no more than the CPUs shared by the workers allow."""
    cpus = cpus if cpus is not None else (os.cpu_count() or 2)
    return max(2, min(8, cpus // max(1, workers)))


@dataclass(frozen=True)
class WorkerInfo:
    """A worker as it reported itself once its session was verified."""

    name: str
    pid: int
    host: str
    active_ep: str
    device_id: int
    cuda_visible_devices: str | None
    ort_version: str
    session_s: float


@dataclass
class _Prepared:
    """A task read and checked: the items ready to run (item, feeds, rows) and the records of those that are not."""

    task: Task
    ready: list[tuple[Item, dict[str, np.ndarray], int]] = field(default_factory=list)
    records: dict[str, ItemRecord] = field(default_factory=dict)
    outputs: list[tuple[Item, int, list[np.ndarray]]] = field(default_factory=list)
    device: dict[str, dict[str, Any]] = field(default_factory=dict)  # item -> its feeds already on the GPU
    device_bytes: int = 0  # their size, counted against DEVICE_COPY_BUDGET until the task has run
    seconds: dict[str, float] = field(default_factory=dict)  # per stage (STAGES), as serve measured them


@dataclass(frozen=True)
class ItemRecord:
    """What happened to one item. ``status``: done (written now), kept (a complete output was already there),
    bad (skipped: ``reason``)."""

    name: str
    status: str
    rows: int = 0
    input_stat: str | None = None
    output_sha256: str | None = None
    reason: str | None = None
    worker: str = ""


class InferWorker:
    """A verified session plus the loop that turns a task into written outputs and records."""

    def __init__(self, spec: WorkerSpec, name: str) -> None:
        import socket

        onnxruntime = import_onnxruntime()

        self.spec = spec
        self.name = name
        overrides: dict[str, Any] = {}
        if spec.ep is not None:
            overrides["ep"] = spec.ep
        if spec.device_id is not None:
            overrides["device_id"] = spec.device_id
        if spec.provider_options:
            overrides["provider_options"] = dict(spec.provider_options)
        started = time.perf_counter()
        self.session = load(spec.model, spec.config, fallback="none", collect_placement=False, **overrides)
        self.info = WorkerInfo(
            name=name,
            pid=os.getpid(),
            host=socket.gethostname(),
            active_ep=self.session.active_ep.value,
            device_id=self.session.device_id,
            cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
            ort_version=onnxruntime.__version__,
            session_s=time.perf_counter() - started,
        )
        self.inputs = {i.name: i for i in self.session.model.inputs}
        self.outputs = self.session.output_names
        self.packable = _packable(self.session.model)
        self.reader = ItemReader(spec.kind)
        self.out = Path(spec.out)
        self.device_bytes = 0  # input bytes copied to the GPU and not run yet (DEVICE_COPY_BUDGET)
        self._device_lock = threading.Lock()

    def close(self) -> None:
        self.session.close()

    # -- one task ---------------------------------------------------------------------------------------------

    def process(self, task: Task) -> list[ItemRecord]:
        """Run every item of ``task`` and write its outputs; one record per recorded item, in task order."""
        return self.execute(self.prepare(task))

    def prepare(self, task: Task) -> _Prepared:
        """Read and check the task's items (no session call: a second thread may do this for the next task). On a
        GPU, the items that make their own runs are copied to the device here, beside the run of another task."""
        prepared = _Prepared(task)
        for item in task.items:
            try:
                feeds, rows = self._feeds(self.reader.read(item))
            except ItemError as exc:
                prepared.records[item.name] = ItemRecord(item.name, "bad", reason=str(exc), worker=self.name)
                continue
            prepared.ready.append((item, feeds, rows))
            if self._runs_alone(task, rows):
                self._copy_to_device(prepared, item, feeds)
        return prepared

    def _copy_to_device(self, prepared: _Prepared, item: Item, feeds: Mapping[str, np.ndarray]) -> None:
        size = sum(int(a.nbytes) for a in feeds.values())
        with self._device_lock:
            if self.device_bytes + size > DEVICE_COPY_BUDGET:
                return
            self.device_bytes += size
        try:
            device = self.session.to_device(feeds)
        except OrtgpuError:
            device = None  # the run on host feeds reports what is wrong
        if device is None:
            self._release_device(size)
            return
        prepared.device[item.name] = device
        prepared.device_bytes += size

    def _release_device(self, size: int) -> None:
        with self._device_lock:
            self.device_bytes -= size

    def _runs_alone(self, task: Task, rows: int) -> bool:
        """Whether an item's arrays make exactly its own run(s): then a reader thread may copy them to the GPU."""
        return not self.packable or rows == self.spec.batch or (len(task.items) == 1 and rows <= self.spec.batch)

    def execute(self, prepared: _Prepared) -> list[ItemRecord]:
        """Run the prepared items and write the outputs of those the task records."""
        return self.write(self.compute(prepared))

    def compute(self, prepared: _Prepared) -> _Prepared:
        """Run the prepared items; their outputs wait in ``prepared.outputs`` for :meth:`write`."""
        task, records = prepared.task, prepared.records
        for group in self._groups(prepared.ready):
            try:
                outputs: list[list[np.ndarray] | None] = list(self._run_group(group, prepared.device))
            except ItemError as exc:
                if len(group) == 1:
                    item = group[0][0]
                    records[item.name] = ItemRecord(item.name, "bad", group[0][2], reason=str(exc), worker=self.name)
                    continue
                outputs = []
                for member in group:  # find the items at fault: each alone (a deterministic second pass)
                    try:
                        outputs.extend(self._run_group([member]))
                    except ItemError as alone:
                        records[member[0].name] = ItemRecord(
                            member[0].name, "bad", member[2], reason=str(alone), worker=self.name
                        )
                        outputs.append(None)
            for (item, _, rows), result in zip(group, outputs, strict=True):
                if result is not None and task.records(item.name):
                    prepared.outputs.append((item, rows, result))
        prepared.ready, prepared.device = [], {}  # the inputs are not needed any more
        self._release_device(prepared.device_bytes)
        prepared.device_bytes = 0
        return prepared

    def write(self, prepared: _Prepared) -> list[ItemRecord]:
        """Write the computed outputs (once each); one record per recorded item, in task order."""
        task, records = prepared.task, prepared.records
        for item, rows, result in prepared.outputs:
            records[item.name] = self._write(item, rows, result)
        return [records[item.name] for item in task.items if task.records(item.name) and item.name in records]

    def _feeds(self, arrays: Mapping[str, np.ndarray]) -> tuple[dict[str, np.ndarray], int]:
        """The model's inputs from an item's arrays (extra arrays are ignored), with a leading sample axis."""
        import numpy as np

        feeds: dict[str, np.ndarray] = {}
        rows: set[int] = set()
        missing = [name for name in self.inputs if name not in arrays]
        if missing:
            have = ", ".join(sorted(arrays)) or "none"
            raise ItemError(
                f"no array named {missing[0]!r} (the model's inputs: {', '.join(self.inputs)}; it has {have})"
            )
        for name, info in self.inputs.items():
            array = arrays[name]
            if info.dtype != "unsupported" and array.dtype != np.dtype(info.dtype):
                raise ItemError(f"{name} is {array.dtype}, the model takes {info.dtype}: save it as {info.dtype}")
            rank = info.rank
            if rank is not None and self.packable and array.ndim == rank - 1:
                array = array[np.newaxis]  # one sample without its batch axis
            if rank is not None and array.ndim != rank:
                raise ItemError(f"{name} has {array.ndim} dims {_dims(array.shape)}, the model takes {rank}")
            if rank is not None:
                for axis, (want, got) in enumerate(zip(info.shape, array.shape, strict=True)):
                    if isinstance(want, int) and want != got and not (axis == 0 and self.packable):
                        raise ItemError(
                            f"{name} is {_dims(array.shape)}, the model takes {_dims(info.shape)} (dim {axis})"
                        )
            feeds[name] = array
            rows.add(int(array.shape[0]) if array.ndim else 1)
        if self.packable and len(rows) > 1:
            raise ItemError(f"its inputs have different row counts ({', '.join(str(r) for r in sorted(rows))})")
        count = rows.pop() if rows else 1
        if self.packable and count == 0:
            raise ItemError("it has no rows")
        return feeds, count

    def _groups(
        self, ready: Sequence[tuple[Item, dict[str, np.ndarray], int]]
    ) -> list[list[tuple[Item, dict[str, np.ndarray], int]]]:
        """Consecutive items that can share runs: same trailing dims (packable models), else one item each."""
        groups: list[list[tuple[Item, dict[str, np.ndarray], int]]] = []
        for entry in ready:
            if self.packable and groups and _trailing(groups[-1][-1][1]) == _trailing(entry[1]):
                groups[-1].append(entry)
            else:
                groups.append([entry])
        return groups

    def _run_group(
        self, group: Sequence[tuple[Item, dict[str, np.ndarray], int]], device: Mapping[str, Any] | None = None
    ) -> list[list[np.ndarray]]:
        """Outputs per item of ``group``: concatenated, run in slices of ``batch`` rows, split back. Items whose
        feeds are on the GPU already (``device``) each make their own run: the same rows as a slice would."""
        import numpy as np

        if device and all(g[0].name in device for g in group):
            return [self._run_on_device(device[g[0].name], g[2] if self.packable else None) for g in group]
        if not self.packable:
            return [self._run(group[0][1], None)]
        names = list(self.inputs)
        joined = {n: np.concatenate([g[1][n] for g in group]) if len(group) > 1 else group[0][1][n] for n in names}
        total = sum(g[2] for g in group)
        parts: list[list[np.ndarray]] = []
        for start in range(0, total, self.spec.batch):
            feeds = {n: joined[n][start : start + self.spec.batch] for n in names}
            parts.append(self._run(feeds, min(self.spec.batch, total - start)))
        outputs = [
            np.concatenate([p[k] for p in parts]) if len(parts) > 1 else parts[0][k] for k in range(len(self.outputs))
        ]
        split: list[list[np.ndarray]] = [[] for _ in group]
        for array in outputs:
            start = 0
            for n, entry in enumerate(group):
                split[n].append(array[start : start + entry[2]])
                start += entry[2]
        return split

    def _run(self, feeds: Mapping[str, np.ndarray], rows: int | None) -> list[np.ndarray]:
        try:
            outputs = self.session.run(feeds)
        except OrtgpuError as exc:
            raise ItemError(exc.one_line()) from None
        return self._checked(outputs, rows)

    def _run_on_device(self, feeds: Mapping[str, Any], rows: int | None) -> list[np.ndarray]:
        try:
            outputs = self.session.run_on_device(feeds)
        except OrtgpuError as exc:
            raise ItemError(exc.one_line()) from None
        return self._checked(outputs, rows)

    def _checked(self, outputs: list[np.ndarray], rows: int | None) -> list[np.ndarray]:
        if rows is not None:
            for name, array in zip(self.outputs, outputs, strict=True):
                if array.ndim == 0 or array.shape[0] != rows:
                    raise ItemError(
                        f"output {name} is {_dims(array.shape)} for {rows} input rows: it is not one row per sample"
                    )
        return outputs

    def _write(self, item: Item, rows: int, outputs: Sequence[np.ndarray]) -> ItemRecord:
        arrays = dict(zip(self.outputs, outputs, strict=True))
        expected = {name: tuple(a.shape) for name, a in arrays.items()}
        try:
            input_stat = input_digest(item)
            written = write_once(self.out / item.output_name, npz_bytes(arrays), expected)
        except ItemError as exc:
            return ItemRecord(item.name, "bad", rows, reason=str(exc), worker=self.name)
        except OSError as exc:
            return ItemRecord(item.name, "bad", rows, reason=f"cannot read it again: {exc.strerror}", worker=self.name)
        status = "kept" if written.existed else "done"
        note = "an earlier attempt's output was kept; this run's differs in its bits" if written.differs else None
        return ItemRecord(item.name, status, rows, input_stat, written.sha256, note, self.name)


def input_digest(item: Item, cache: dict[str, str] | None = None) -> str:
    """The identity of an item's input as the manifest records it: the file's size and modification time (ns),
    plus the row range of a columnar source. A stat, not a hash: hashing every input would cost as much reading as
    the inference itself; the outputs are hashed (sha256)."""
    del cache
    stat = os.stat(item.source)
    mark = f"size={stat.st_size},mtime_ns={stat.st_mtime_ns}"
    return mark if item.start is None else f"{mark},rows={item.start}-{item.stop}"


def _packable(model: Any) -> bool:
    """True when every input and output has a leading dim that is not fixed: rows of several items can share a run
    (and the outputs split back by rows)."""
    tensors = [*model.inputs, *model.outputs]
    return bool(tensors) and all(t.has_shape and t.shape and not isinstance(t.shape[0], int) for t in tensors)


def _trailing(feeds: Mapping[str, np.ndarray]) -> tuple[tuple[str, str, tuple[int, ...]], ...]:
    return tuple((name, str(a.dtype), tuple(a.shape[1:])) for name, a in feeds.items())


def _dims(shape: Sequence[Any]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


# ------------------------------------------------------------------------------------------------ local process


def serve(payload: tuple[WorkerSpec, str], channel: Any) -> None:
    """The local worker process (see :mod:`ortgpu.scale.worker`): build the session, then run tasks until told
    to stop. Messages out: ("ready", WorkerInfo), ("done", task index, records, seconds per stage); in: ("task",
    Task), ("stop",).

    Three stages overlap: reader threads read and check the next tasks' files (paths come through the pipe, never
    arrays), this thread runs the session (ONNX Runtime releases the GIL while it runs), writer threads write the
    outputs and report each task done. The parent bounds the tasks a worker holds, so the read-ahead is bounded.
    """
    import queue
    import threading
    from concurrent.futures import ThreadPoolExecutor

    spec, name = payload
    worker = InferWorker(spec, name)
    channel.send(("ready", worker.info))
    futures: queue.Queue[Any] = queue.Queue()
    readers = ThreadPoolExecutor(spec.readers, thread_name_prefix="ortgpu-infer-read")
    writer = ThreadPoolExecutor(WRITERS, thread_name_prefix="ortgpu-infer-write")
    sending = threading.Lock()  # one message at a time on the pipe

    def prepare(task: Task) -> _Prepared:
        started = time.perf_counter()
        prepared = worker.prepare(task)
        prepared.seconds["read"] = time.perf_counter() - started
        return prepared

    def receive() -> None:
        try:
            while True:
                message = channel.recv()
                if message[0] != "task":
                    break
                futures.put(readers.submit(prepare, message[1]))
        except (EOFError, OSError):
            pass
        futures.put(None)

    def write(prepared: _Prepared) -> None:
        started = time.perf_counter()
        records = worker.write(prepared)
        prepared.seconds["write"] = time.perf_counter() - started
        with sending:
            channel.send(("done", prepared.task.index, records, dict(prepared.seconds)))

    threading.Thread(target=receive, name="ortgpu-infer-receive", daemon=True).start()
    try:
        while True:
            waiting = time.perf_counter()
            future = futures.get()
            if future is None:
                break
            prepared = future.result()
            started = time.perf_counter()
            prepared.seconds["starved"] = started - waiting
            worker.compute(prepared)
            prepared.seconds["run"] = time.perf_counter() - started
            writer.submit(write, prepared).add_done_callback(_raise_in_main)
    finally:
        writer.shutdown(wait=True)
        readers.shutdown(wait=False, cancel_futures=True)
        worker.close()


def _raise_in_main(future: Any) -> None:
    """A writer that failed (a bug, or the parent gone) ends the process: the parent then retries its task."""
    error = future.exception()
    if error is not None and not isinstance(error, (EOFError, OSError)):
        os._exit(70)
