"""`run_infer`: check everything, plan the tasks, skip what is done and verified, run the rest, keep the manifest.

Before any worker starts: the model (inspected), the config, the source, the output folder (created when its
parent exists; refused when it is the input folder, a file, or holds outputs ortgpu did not write), and a lock
on it (one run at a time). An output folder written by a run with another model, config, EP, batch or item size
is refused: its outputs would mix. On a re-run an item is skipped when the manifest says it is done and both its
output and its input still hash as recorded; an output that changed, or whose input changed, is reported and
left alone (never replaced): delete it to compute it again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ortgpu import __version__
from ortgpu.config import load_config
from ortgpu.ep import ExecutionProvider
from ortgpu.infer.dataset import Dataset, InferInputError, Item, SourceKind, discover, plan_tasks
from ortgpu.infer.local import PoolEvents, PoolOutcome, run_local
from ortgpu.infer.ray_backend import run_ray
from ortgpu.infer.result import Backend, BadItem, InferResult
from ortgpu.infer.store import (
    MANIFEST_NAME,
    load_manifest,
    remove_stale_temporaries,
    sha256_file,
    write_manifest,
)
from ortgpu.infer.worker import STAGES, ItemRecord, WorkerSpec, input_digest, reader_threads
from ortgpu.model.inspect import inspect_model
from ortgpu.output_paths import check_writable_folder
from ortgpu.progress import silent
from ortgpu.scale.devices import DeviceSpec, plan_slots
from ortgpu.scale.ray_cluster import connect
from ortgpu.session import best_available_ep

__all__ = ["InferRequest", "Progress", "run_infer"]

Progress = Callable[[str, "float | None"], None]
MAX_BATCH = 1 << 20
_FLUSH_S = 2.0  # the manifest is rewritten at most this often while items finish (and at the end)
_LOCK_NAME = ".ortgpu-infer.lock"


@dataclass(frozen=True)
class InferRequest:
    """What to run. ``devices`` (local): GPU ids, all GPUs or N CPU workers; default: every visible GPU on a GPU
    EP, one CPU worker on the CPU EP. ``ray``: run on a Ray cluster (``ray_address``: which one; None: the one
    ``RAY_ADDRESS`` names, or a local one) with ``workers`` actors (default: one per GPU of the cluster; 1 on
    the CPU EP). ``batch``: rows per session run. ``rows_per_item``: rows per output file of a columnar source.
    ``max_attempts``: tries of a task whose worker died before its items are reported as failed."""

    model: Path
    inputs: Path
    out: Path
    config: Path | None = None
    ep: ExecutionProvider | None = None
    devices: DeviceSpec | None = None
    batch: int = 32
    rows_per_item: int = 1024
    fail_fast: bool = False
    ray: bool = False
    ray_address: str | None = None
    workers: int | None = None
    provider_options: Mapping[str, str] = field(default_factory=dict)
    max_attempts: int = 3

    def validate(self) -> None:
        for flag, value, top in (
            ("--batch", self.batch, MAX_BATCH),
            ("--rows-per-file", self.rows_per_item, 1 << 30),
            ("--workers", self.workers, 4096),
        ):
            if value is not None and (isinstance(value, bool) or not 1 <= value <= top):
                raise InferInputError(f"{flag} {value}: needs a whole number from 1 to {top}", f"e.g. {flag} 32")
        if self.max_attempts < 1:
            raise InferInputError(f"max_attempts {self.max_attempts}: needs 1 or more", "e.g. 3")
        if self.devices is not None and self.ray:
            raise InferInputError(
                "--devices and --ray both given", "Ray places one actor per GPU itself: give --workers N with --ray"
            )
        if self.workers is not None and not self.ray:
            raise InferInputError("--workers is for --ray", "locally, give --devices 0,1 or --devices cpu:N")


def _config_sha(path: Path | None) -> str | None:
    return sha256_file(path) if path is not None else None


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """One `ortgpu infer` per output folder at a time (an advisory lock; a second run is refused, exit 2)."""
    import fcntl

    path = folder / _LOCK_NAME
    handle = open(path, "a+")  # noqa: SIM115 - held for the whole run
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise InferInputError(
                f"--out {folder}: another ortgpu infer is writing to this folder", "wait for it, or use another --out"
            ) from None
        yield
    finally:
        handle.close()


def _prepare_out(out: Path, inputs: Path) -> Path:
    if out.exists() and not out.is_dir():
        raise InferInputError(f"--out {out}: is a file, not a folder", "give a folder (it is created if missing)")
    if not out.exists():
        if not out.parent.is_dir():
            raise InferInputError(f"--out {out}: its parent folder does not exist", "create it first")
        try:
            out.mkdir()
        except OSError as exc:
            raise InferInputError(
                f"--out {out}: cannot create it ({exc.strerror})", "give a folder you can write to"
            ) from None
    source_folder = inputs if inputs.is_dir() else inputs.parent
    if os.path.samefile(out, source_folder) and inputs.is_dir():
        raise InferInputError(
            f"--out {out} is the input folder: outputs named like the inputs would replace them",
            "give another folder",
        )
    check_writable_folder(out, "--out", InferInputError)
    return out


def _identity(request: InferRequest, model_sha: str, ep: str, dataset: Dataset) -> dict[str, Any]:
    return {
        "model_sha256": model_sha,
        "config_sha256": _config_sha(request.config),
        "ep": ep,
        "batch": request.batch,
        "rows_per_item": request.rows_per_item if dataset.kind.value != "npz-folder" else None,
        "source_kind": dataset.kind.value,
    }


_IDENTITY_WORDS = {
    "model_sha256": "another model",
    "config_sha256": "another config",
    "ep": "another execution provider",
    "batch": "another --batch",
    "rows_per_item": "another --rows-per-file",
    "source_kind": "another kind of input",
}


class _Ledger:
    """The manifest's items, updated as records arrive, written atomically at most every _FLUSH_S seconds."""

    def __init__(self, out: Path, header: dict[str, Any], entries: dict[str, Any]) -> None:
        self.out = out
        self.header = header
        self.entries = entries
        self.lock = threading.Lock()
        self.last = 0.0

    def add(self, record: ItemRecord) -> None:
        entry: dict[str, Any] = {"status": "done" if record.status in ("done", "kept") else "bad", "rows": record.rows}
        if entry["status"] == "done":
            entry.update(
                input_stat=record.input_stat,
                output=f"{record.name}.npz",
                output_sha256=record.output_sha256,
                worker=record.worker,
            )
        else:
            entry["reason"] = record.reason
        self.entries[record.name] = entry

    def flush(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last < _FLUSH_S:
            return
        self.last = now
        done = [e for e in self.entries.values() if e.get("status") == "done"]
        counts = {
            "items": len(self.entries),
            "done": len(done),
            "bad": sum(1 for e in self.entries.values() if e.get("status") == "bad"),
            "rows": sum(int(e.get("rows") or 0) for e in done),
        }
        updated = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        write_manifest(self.out, {**self.header, "updated_utc": updated, "counts": counts, "items": self.entries})


def run_infer(
    request: InferRequest, progress: Progress | None = None, *, events: PoolEvents | None = None
) -> InferResult:
    """Run ``request``; see the module docstring. ``events``: the local pool's events, for callers that watch the
    workers (tests kill one from ``dispatching``). Raises InferInputError / ModelError / ConfigError (exit 2)
    before anything runs, ProviderUnavailableError or DevicesUnavailableError (exit 3) when the workers cannot
    run here, RayUnavailableError (exit 3) for --ray without Ray or a cluster to reach."""

    started = time.perf_counter()
    tell = progress or silent
    request.validate()
    model = inspect_model(request.model)
    load_config(request.config)  # a bad config is one error here, not one per worker
    dataset = discover(Path(request.inputs), request.rows_per_item)
    cluster = None
    slots: tuple = ()
    if request.ray:
        cluster = connect(request.ray_address)
        ep = request.ep or (ExecutionProvider.CUDA if cluster.gpus else ExecutionProvider.CPU)
    else:
        ep = request.ep or best_available_ep()[0]
        devices = request.devices or (DeviceSpec(all_gpus=True) if ep.is_gpu else DeviceSpec(cpu_workers=1))
        slots = plan_slots(devices, gpu_ep=ep.is_gpu)  # devices that do not fit: refused before --out is touched
    out = _prepare_out(Path(request.out), Path(request.inputs))
    with _locked(out):
        identity = _identity(request, model.sha256, ep.value, dataset)
        manifest = load_manifest(out)
        if manifest is None:
            taken = [i.output_name for i in dataset.items if (out / i.output_name).exists()]
            if taken:
                raise InferInputError(
                    f"--out {out}: holds {taken[0]} (and {len(taken) - 1} more) but no {MANIFEST_NAME}: not written "
                    "by ortgpu infer",
                    "give an empty folder, or one a previous ortgpu infer wrote",
                )
        else:
            differs = [k for k, v in identity.items() if manifest["identity"].get(k) != v]
            if differs:
                words = ", ".join(_IDENTITY_WORDS.get(k, k) for k in differs)
                raise InferInputError(
                    f"--out {out} holds outputs of a run with {words}: they would mix with this run's",
                    "give another --out folder (or delete that one)",
                )
        entries: dict[str, Any] = dict(manifest["items"]) if manifest else {}
        tell("checking what is already done", None)
        verified, blocked = _verify(dataset.items, entries, out)
        names = {i.name for i in dataset.items}
        entries = {k: v for k, v in entries.items() if k in names}
        header = {
            "ortgpu_version": __version__,
            "model": {"path": str(request.model), "sha256": model.sha256},
            "inputs": str(request.inputs),
            "identity": identity,
        }
        ledger = _Ledger(out, header, entries)
        for name, reason in blocked.items():
            ledger.add(ItemRecord(name, "bad", reason=reason))
        ledger.flush(force=True)
        remove_stale_temporaries(out, [i.output_name for i in dataset.items])
        every = plan_tasks(dataset, max(1, request.batch // _rows_per_file(dataset, model)))
        tasks = []
        for task in every:
            todo = frozenset(i.name for i in task.items if i.name not in verified and i.name not in blocked)
            if todo:
                tasks.append(dataclasses.replace(task, record=todo if len(todo) < len(task.items) else None))
        todo_items = sum(len(t.record) if t.record is not None else len(t.items) for t in tasks)
        spec = WorkerSpec(
            model=str(request.model),
            config=str(request.config) if request.config is not None else None,
            ep=ep.value,
            out=str(out),
            kind=dataset.kind,
            batch=request.batch,
            provider_options=dict(request.provider_options),
            readers=reader_threads(max(1, len(slots))),  # local workers only: a Ray actor reads in its own call
        )
        counts = {"written": 0, "kept": 0, "rows": 0, "done": 0}
        bad: list[BadItem] = [BadItem(n, r) for n, r in blocked.items()]
        first_bad: list[BadItem] = []
        clock: dict[str, float] = {}
        stage_s = dict.fromkeys(STAGES, 0.0)

        def timed(index: int, seconds: Mapping[str, float]) -> None:
            for stage, value in seconds.items():
                if stage in stage_s:
                    stage_s[stage] += float(value)

        def finished(index: int, records: list[ItemRecord]) -> bool:
            with ledger.lock:
                for record in records:
                    ledger.add(record)
                    counts["done"] += 1
                    if record.status == "bad":
                        bad.append(BadItem(record.name, record.reason or "failed"))
                        first_bad.append(bad[-1])
                    else:
                        counts["written" if record.status == "done" else "kept"] += 1
                        counts["rows"] += record.rows
                ledger.flush()
            clock["last"] = time.perf_counter()
            rate = counts["rows"] / max(clock["last"] - clock.get("first", clock["last"]), 1e-9)
            tell(f"{counts['done']}/{todo_items} items, {rate:,.0f} rows/s", counts["done"] / max(todo_items, 1))
            return not (request.fail_fast and first_bad)

        def started_worker(info: Any) -> None:
            clock.setdefault("first", time.perf_counter())
            user = events.started if events is not None else None
            if user is not None:
                user(info)

        pool_events = dataclasses.replace(
            events or PoolEvents(), started=started_worker, finished=finished, timed=timed
        )
        tell(f"{len(tasks)} tasks ({todo_items} items) to run, {len(verified)} items already done", 0.0)
        outcome = PoolOutcome((), 0, 0, False, False)
        try:
            if tasks and cluster is not None:
                clock["first"] = time.perf_counter()  # Ray: actor start and session creation count too

                outcome = run_ray(spec, tasks, pool_events, cluster, request.workers, max_attempts=request.max_attempts)
            elif tasks:
                outcome = run_local(spec, slots, tasks, pool_events, max_attempts=request.max_attempts)
        finally:
            with ledger.lock:
                ledger.flush(force=True)
            if tasks:  # a worker killed while it wrote left its temporary file; every worker is gone now
                remove_stale_temporaries(out, [i.output_name for i in dataset.items])
    compute_s = clock.get("last", 0.0) - clock.get("first", 0.0) if "first" in clock else 0.0
    return InferResult(
        model=Path(request.model),
        model_sha256=model.sha256,
        inputs=Path(request.inputs),
        source_kind=dataset.kind.value,
        out=out,
        manifest=out / MANIFEST_NAME,
        backend=Backend.RAY if cluster is not None else Backend.LOCAL,
        ep=ep.value,
        batch=request.batch,
        items=len(dataset.items),
        tasks=len(tasks),
        written=counts["written"],
        kept=counts["kept"],
        verified=len(verified),
        bad=tuple(bad),
        rows=counts["rows"],
        workers=outcome.workers,
        replaced=outcome.replaced,
        retried=outcome.retried,
        compute_s=max(compute_s, 0.0),
        elapsed_s=time.perf_counter() - started,
        stopped=outcome.stopped and not outcome.interrupted,
        interrupted=outcome.interrupted,
        ignored_files=dataset.ignored,
        ray_address=cluster.address if cluster is not None else None,
        busy_s=outcome.busy_s,
        stage_s=tuple(stage_s.items()) if cluster is None and tasks else (),
    )


def _rows_per_file(dataset: Dataset, model: Any) -> int:
    """Rows in the first file of a folder source (its first model input's leading dim; 1 for a file that holds one
    sample without a batch axis): a task then holds about ``batch`` rows. Read from the .npy header only."""
    import zipfile

    import numpy as np

    if dataset.kind is not SourceKind.NPZ_FOLDER or not dataset.items or not model.inputs:
        return 1
    first = model.inputs[0]
    try:
        with zipfile.ZipFile(dataset.items[0].source) as archive, archive.open(f"{first.name}.npy") as handle:
            major, _ = np.lib.format.read_magic(handle)
            reader = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
            shape = reader(handle)[0]
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, EOFError, SyntaxError):
        return 1  # a bad first file is reported with its item; the plan does not depend on it
    if first.rank is None or len(shape) != first.rank or not shape:
        return 1
    return max(1, int(shape[0]))


def _verify(items: tuple[Item, ...], entries: Mapping[str, Any], out: Path) -> tuple[set[str], dict[str, str]]:
    """(items done and verified, items whose recorded output is there but changed -> why). Items whose output is
    missing are neither: they run again."""
    verified: set[str] = set()
    blocked: dict[str, str] = {}
    cache: dict[str, str] = {}
    for item in items:
        entry = entries.get(item.name)
        if not isinstance(entry, dict) or entry.get("status") != "done":
            continue
        output = out / item.output_name
        if not output.is_file():
            continue  # deleted: computed again
        if sha256_file(output) != entry.get("output_sha256"):
            blocked[item.name] = (
                f"{item.output_name} changed since it was written (its sha256 differs from the manifest): "
                "delete it to compute it again"
            )
            continue
        try:
            same_input = input_digest(item, cache) == entry.get("input_stat")
        except OSError:
            same_input = False
        if not same_input:
            blocked[item.name] = (
                f"its input changed since {item.output_name} was written: delete {item.output_name} to compute it again"
            )
            continue
        verified.add(item.name)
    return verified, blocked
