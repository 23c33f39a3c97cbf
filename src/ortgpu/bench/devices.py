"""`bench --devices 0,1`: the same bench in one process per GPU (or CPU worker), timed runs started together.

Each worker is a fresh process (``spawn``: no CUDA state inherited), pinned to its GPU by ``CUDA_VISIBLE_DEVICES``
(see :mod:`ortgpu.scale.devices`), and runs :func:`ortgpu.bench.runner.run_bench` on the same model, config and
shapes. Before the timed runs of each case every worker waits at one barrier (:mod:`ortgpu.bench.gate`), so the
GPUs are measured at the same time; each worker records when it passed and whether all workers were at the same
case. The result holds every worker's own BenchResult, the GPU it ran on, and per case the aggregate throughput.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ortgpu.atomic import atomic_write_text
from ortgpu.bench.gate import gated
from ortgpu.bench.modes import BenchMode
from ortgpu.bench.result import BenchCase, BenchResult, CaseStatus
from ortgpu.bench.runner import BenchInputError, BenchRequest, run_bench
from ortgpu.config import load_config
from ortgpu.errors import EnvironmentUnfitError, OrtgpuError
from ortgpu.model.inspect import inspect_model
from ortgpu.output_paths import check_outputs
from ortgpu.progress import silent
from ortgpu.results import envelope
from ortgpu.scale.devices import DeviceKind, DeviceSlot, DeviceSpec, plan_slots
from ortgpu.scale.procs import WorkerProcess, wait_any
from ortgpu.session import best_available_ep

__all__ = [
    "AggregateCase",
    "DeviceRun",
    "DeviceWorkerError",
    "DevicesBenchResult",
    "GateStart",
    "run_bench_devices",
    "run_on_slots",
]

Progress = Callable[[str, "float | None"], None]
_INTERRUPT_GRACE_S = 30.0  # after Ctrl-C: how long the workers get to hand back what they measured


class DeviceWorkerError(OrtgpuError):
    """A worker process failed; carries the exit code its own error had (3 when it died without a word)."""

    def __init__(self, message: str, hint: str | None = None, exit_code: int = 3) -> None:
        super().__init__(message, hint)
        self.exit_code = exit_code  # type: ignore[assignment]


@dataclass(frozen=True)
class GateStart:
    """One worker at the start of one case's timed runs: when it passed the gate (CLOCK_MONOTONIC, ns, the same
    clock in every process of the machine) and whether every worker was at the same case."""

    key: str
    passed_ns: int
    synchronised: bool


@dataclass(frozen=True)
class DeviceRun:
    """One worker: where it ran, its process id, its own bench result and its gate passages."""

    slot: DeviceSlot
    pid: int
    result: BenchResult
    starts: tuple[GateStart, ...]


@dataclass(frozen=True)
class AggregateCase:
    """One case over every worker. ``throughput``: the sum of the workers' samples/s (their timed runs started
    together: ``synchronised``, within ``start_spread_ms``). ``spread``: (max - min) / max of the per-worker
    throughputs. ``measured`` of ``workers`` measured it (a failed or skipped one adds nothing)."""

    key: str
    label: str
    batch: int
    workers: int
    measured: int
    throughput: float | None
    per_worker: tuple[float | None, ...]
    spread: float | None
    p50_ms: tuple[float | None, ...]
    synchronised: bool
    start_spread_ms: float | None


@dataclass(frozen=True)
class DevicesBenchResult:
    """Everything ``bench --devices`` produced: the devices, each worker's result, the aggregate per case."""

    devices: str  # the --devices value
    ep: Any  # ExecutionProvider
    model: Path
    parent_cuda_visible_devices: str | None
    runs: tuple[DeviceRun, ...]
    cases: tuple[AggregateCase, ...]
    interrupted: bool
    elapsed_s: float
    saved_to: Path | None = None

    @property
    def failed_cases(self) -> tuple[BenchCase, ...]:
        return tuple(c for run in self.runs for c in run.result.failed_cases)


def case_gate_key(case: BenchCase) -> str:
    """The key the runner's gate uses for ``case`` (see ``_Plan.key`` in the runner)."""
    return f"{case.ep.value}/{case.mode.value}/b{case.batch}/x{case.concurrency}/s{case.sessions}"


# ------------------------------------------------------------------------------------------------ worker


def bench_job(payload: tuple[DeviceSlot, BenchRequest], channel: Any) -> None:
    """In the worker process (see :mod:`ortgpu.scale.worker`): run the bench, the gate asked of the parent."""
    slot, request = payload
    starts: list[GateStart] = []

    def gate(key: str) -> None:
        channel.send(("gate", key))
        reply = channel.recv()  # ("go", every worker at this same case)
        starts.append(GateStart(key, time.monotonic_ns(), bool(reply[1])))

    def progress(message: str, fraction: float | None = None) -> None:
        channel.send(("progress", message, fraction))

    with gated(gate):
        result = run_bench(dataclasses.replace(request, device_id=slot.device_id), progress)
    channel.send(("result", result, tuple(starts)))


# ------------------------------------------------------------------------------------------------ parent


def run_on_slots(
    request: BenchRequest, slots: Sequence[DeviceSlot], progress: Progress | None = None
) -> tuple[tuple[DeviceRun, ...], bool]:
    """Run ``request`` in one worker process per slot, all at once; (runs in slot order, interrupted).

    The request is run as given in every worker except its ``device_id`` (the slot's); the EP is the request's.
    The gate: a worker that reached the timed runs of a case waits until every worker still running waits too;
    then all are released at once, told whether they were all at the same case. Raises DeviceWorkerError when a
    worker fails (with that worker's exit code) or dies.
    """
    tell = progress or silent
    workers = [WorkerProcess(slot, __name__, "bench_job", (slot, request)) for slot in slots]
    outcome: list[tuple[Any, ...] | None] = [None] * len(workers)
    waiting: dict[int, str] = {}  # worker index -> the case key it waits at
    fractions = [0.0] * len(workers)
    interrupted = False
    deadline: float | None = None

    def release() -> None:
        running = [i for i, o in enumerate(outcome) if o is None]
        if waiting and all(i in waiting for i in running):
            same = len(set(waiting.values())) == 1 and len(waiting) == len(workers)
            for i in list(waiting):
                workers[i].send(("go", same))
            waiting.clear()

    try:
        while any(o is None for o in outcome):
            pending = [i for i, o in enumerate(outcome) if o is None]
            try:
                ready = wait_any([workers[i] for i in pending], timeout=0.5)
            except KeyboardInterrupt:
                interrupted = True
                deadline = time.monotonic() + _INTERRUPT_GRACE_S
                for i in pending:  # a worker may not share the terminal's process group
                    if workers[i].alive:
                        os.kill(workers[i].pid, signal.SIGINT)
                continue
            for worker in ready:
                i = workers.index(worker)
                try:
                    message = worker.recv()
                except (EOFError, OSError):
                    worker.process.wait()
                    outcome[i] = ("died",)
                    waiting.pop(i, None)
                    continue
                if message[0] == "progress":
                    fractions[i] = float(message[2] or 0.0)
                    tell(f"{slots[i].label}: {message[1]}", sum(fractions) / len(fractions))
                elif message[0] == "gate":
                    waiting[i] = message[1]
                else:
                    outcome[i] = message
            release()
            if any(o is not None and o[0] != "result" for o in outcome) and not interrupted:
                break
            if deadline is not None and time.monotonic() > deadline:
                break
    finally:
        for i, worker in enumerate(workers):
            if outcome[i] is None:
                worker.kill()  # failed elsewhere, or still running after Ctrl-C and the grace period
            worker.close()
    runs = []
    for slot, worker, item in zip(slots, workers, outcome, strict=True):
        if item is None or (interrupted and item[0] != "result"):
            continue  # interrupted before it finished
        if item[0] == "result":
            runs.append(DeviceRun(slot, worker.pid, item[1], item[2]))
        elif item[0] == "error":
            raise DeviceWorkerError(f"{slot.label}: {item[1]}", item[2], item[3])
        elif item[0] == "crash":
            raise RuntimeError(f"{slot.label} worker: {item[1]}")
        else:
            hint = "check the kernel log (out of memory?)"
            if slot.requested is not None:
                hint = f"run `ortgpu bench --device {slot.requested}` alone to see its error; " + hint
            raise DeviceWorkerError(
                f"{slot.label}: the worker process (pid {worker.pid}) died ({worker.describe_exit()}) before it "
                "reported",
                hint,
            )
    return tuple(runs), interrupted or any(r.result.interrupted for r in runs)


def aggregate(runs: Sequence[DeviceRun]) -> tuple[AggregateCase, ...]:
    """Per case (in the first worker's order), the workers' numbers side by side and their sum."""
    if not runs:
        return ()
    order: dict[str, BenchCase] = {}
    for run in runs:
        for case in run.result.cases:
            order.setdefault(case_gate_key(case), case)
    out = []
    for key, first in order.items():
        per: list[float | None] = []
        p50: list[float | None] = []
        passed: list[int] = []
        synced = True
        for run in runs:
            found = next((c for c in run.result.cases if case_gate_key(c) == key), None)
            stats = found.stats if found is not None and found.measured else None
            ok = stats is not None
            per.append(stats.throughput if stats is not None else None)
            p50.append(stats.p50_ms if stats is not None else None)
            start = next((s for s in run.starts if s.key == key), None)
            if start is None:
                synced = False if ok else synced
            else:
                passed.append(start.passed_ns)
                synced = synced and start.synchronised
        values = [v for v in per if v is not None]
        out.append(
            AggregateCase(
                key=key,
                label=first.key.label,
                batch=first.batch,
                workers=len(runs),
                measured=len(values),
                throughput=sum(values) if values else None,
                per_worker=tuple(per),
                spread=(max(values) - min(values)) / max(values) if len(values) > 1 and max(values) > 0 else None,
                p50_ms=tuple(p50),
                synchronised=synced and len(values) == len(runs),
                start_spread_ms=(max(passed) - min(passed)) / 1e6 if len(passed) > 1 else None,
            )
        )
    return tuple(out)


def run_bench_devices(request: BenchRequest, spec: DeviceSpec, progress: Progress | None = None) -> DevicesBenchResult:
    """Benchmark ``request.model`` in one process per device of ``spec``, the timed runs started together.

    Checked here before any worker starts: the request itself, the output path (``request.save``), what
    --devices cannot do (--baseline, --report, --package, --compare-cpu, --against-defaults: exit 2), and the
    devices (exit 2 for a device list that does not fit the EP, 3 for a GPU that is not here).
    ``request.save`` gets this result.
    """

    started = time.perf_counter()
    tell = progress or silent
    refused = [
        flag
        for flag, value in (
            ("--baseline", request.baseline),
            ("--report", request.report),
            ("--package", request.package),
            ("--compare-cpu", request.compare_cpu or None),
            ("--against-defaults", getattr(request, "against_defaults", False) or None),
        )
        if value is not None
    ]
    if refused:
        raise BenchInputError(
            f"{refused[0]} does not combine with --devices",
            "bench one GPU with --device N for that; --devices measures them side by side (--save keeps it)",
        )
    config = load_config(request.config)  # a bad config is one error here, not one per worker
    if not request.modes:  # no --mode: the config's [run] mode, as a single bench would
        request = dataclasses.replace(request, modes=(BenchMode(config.run["mode"]),))
    request.validate()
    check_outputs({"--save": request.save}, (request.model, request.config, request.npz), error=BenchInputError)
    inspect_model(request.model)  # a bad model is one error here, not one per worker
    ep, reason = (request.ep, request.ep_reason) if request.ep is not None else best_available_ep()
    if spec.kind is DeviceKind.GPU and request.ep is None and not ep.is_gpu:
        raise EnvironmentUnfitError(
            f"--devices {spec.text}: no GPU execution provider here ({reason})",
            "run `ortgpu doctor`, or use --devices cpu:N",
        )
    slots = plan_slots(spec, gpu_ep=ep.is_gpu)
    worker_request = dataclasses.replace(request, ep=ep, ep_reason=reason, save=None)
    tell(f"starting {len(slots)} worker processes", 0.0)
    runs, interrupted = run_on_slots(worker_request, slots, tell)
    result = DevicesBenchResult(
        devices=spec.text,
        ep=ep,
        model=Path(request.model),
        parent_cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
        runs=runs,
        cases=aggregate(runs),
        interrupted=interrupted,
        elapsed_s=time.perf_counter() - started,
    )
    if request.save is not None:
        import json

        result = dataclasses.replace(result, saved_to=Path(request.save))
        atomic_write_text(request.save, json.dumps(envelope("bench.devices", result), indent=2))
    return result


def worker_statuses(result: DevicesBenchResult) -> dict[str, CaseStatus]:
    """The worst case status of each worker (for renderers and tests)."""
    rank = {CaseStatus.OK: 0, CaseStatus.SKIPPED: 1, CaseStatus.INTERRUPTED: 2, CaseStatus.FAILED: 3}
    return {
        run.slot.label: max((c.status for c in run.result.cases), key=rank.__getitem__, default=CaseStatus.OK)
        for run in result.runs
    }
