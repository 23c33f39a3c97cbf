"""One tune trial, run as `python -m ortgpu.tune.child` in its own process: build, check, warm up, measure in stages.

Protocol: the parent writes the trial spec as one JSON line on stdin; the child answers with JSON lines on its
real stdout (anything a library prints goes to stderr instead). After each ``stage`` line the child waits for
``go`` or ``stop`` on stdin, so the parent's pruner can end a slow trial early. The last line is ``done``,
``refused`` (cannot run with these settings), ``rejected`` (ran, but outputs off the fp32 reference) or ``error``.
"""

from __future__ import annotations

import json
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import IO, Any

from ortgpu.bench.clocks import ClockWatch
from ortgpu.bench.environment import nvml_index_for
from ortgpu.bench.modes import BenchMode, OutputSpec, device_for, mode_class
from ortgpu.bench.stats import compute_stats
from ortgpu.check.parity import ParityStatus, Precision, compare_output
from ortgpu.config import Config, validate_ep_options
from ortgpu.ep import ExecutionProvider
from ortgpu.errors import OrtgpuError
from ortgpu.host import nvml
from ortgpu.host.nvml import device_memory_used_bytes
from ortgpu.session import open_session

__all__ = ["main", "objective_value"]

_WINDOW_S = 0.05
_SETTLE = 0.05


def objective_value(objective: str, per_batch: Mapping[int, Any]) -> float:
    """The number the study optimises: a latency percentile in ms (geometric mean over batches), or samples/s."""
    if objective == "throughput":
        return sum(stats.throughput for stats in per_batch.values()) / len(per_batch)
    attr = {"p50": "p50_ms", "p95": "p95_ms", "p99": "p99_ms"}[objective]
    values = [max(getattr(stats, attr), 1e-9) for stats in per_batch.values()]
    return math.exp(sum(math.log(v) for v in values) / len(values))


class _MemoryPeak:
    """Peak device memory in use (NVML, device-wide) while the trial runs, sampled every 20 ms."""

    def __init__(self, device_id: int) -> None:
        self.read = device_memory_used_bytes
        self.index = nvml_index_for(device_id, nvml.query_driver().gpus)
        self.before = self.read(self.index) if self.index is not None else None
        self.peak = self.before
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        if self.before is not None:
            self.thread.start()

    def _run(self) -> None:
        index = self.index
        if index is None:  # never: the thread starts only when the first reading worked
            return
        while not self.stop.wait(0.02):
            value = self.read(index)
            if value is not None and (self.peak is None or value > self.peak):
                self.peak = value

    def finish(self) -> int | None:
        self.stop.set()
        if self.before is None or self.peak is None:
            return None
        return max(0, self.peak - self.before)


def _warm(step: Callable[[], Any], max_s: float, clocks: ClockWatch | None) -> dict[str, Any]:
    """Until three window medians agree within 5% and the GPU clock is ready (at most ``max_s``)."""
    clock = time.perf_counter_ns
    start = time.perf_counter()
    if clocks is not None:
        clocks.start()
    t0 = clock()
    step()
    typical = max((clock() - t0) / 1e9, 1e-7)
    medians: list[float] = []
    runs, settled = 1, False
    while time.perf_counter() - start < max_s:
        count = max(1, min(10_000, int(_WINDOW_S / typical)))
        window = []
        for _ in range(count):
            t0 = clock()
            step()
            window.append(clock() - t0)
        runs += count
        window.sort()
        medians.append(window[len(window) // 2])
        typical = max(medians[-1] / 1e9, 1e-7)
        last = medians[-3:]
        ready = clocks.sample() if clocks is not None else True
        if len(last) == 3 and max(last) - min(last) <= _SETTLE * min(last) and ready:
            settled = True
            break
    if clocks is not None:
        clocks.warmed()
    return {"runs": runs, "seconds": time.perf_counter() - start, "settled": settled, "typical_s": typical}


def _timed(step: Callable[[], Any], seconds: float, out: list[int]) -> None:
    clock = time.perf_counter_ns
    deadline = clock() + int(seconds * 1e9)
    count = 0
    while True:
        t0 = clock()
        step()
        t1 = clock()
        out.append(t1 - t0)
        count += 1
        if t1 >= deadline and count >= 10:
            return


def _load_npz(path: str) -> dict[str, Any]:
    import numpy as np

    with np.load(path, allow_pickle=False) as data:
        return {name: data[name] for name in data.files}


def run_trial(spec: Mapping[str, Any], emit: Callable[[dict[str, Any]], None], ask: Callable[[], str]) -> None:
    """Everything one trial does; ``emit`` sends a protocol line, ``ask`` reads the parent's go/stop."""

    ep = ExecutionProvider(spec["ep"])
    mode = BenchMode(spec["mode"])
    device = device_for(ep, int(spec.get("device_id", 0)))
    memory = _MemoryPeak(int(spec.get("device_id", 0))) if ep.is_gpu else None
    base = Config().with_session(**spec.get("session", {}))
    options = validate_ep_options(ep, spec.get("ep_options", {}))
    config = Config(session=base.session, ep_options={ep: options})
    cls = mode_class(mode)
    mode_options = cls.provider_options(ep)
    clocks = ClockWatch.for_device(int(spec.get("device_id", 0))) if ep.is_gpu else None
    precision = Precision(spec["precision"])
    runners: dict[int, Any] = {}
    sessions: list[Any] = []
    shared = None
    created_s = 0.0
    try:
        for item in spec["batches"]:
            batch = int(item["batch"])
            feeds = _load_npz(item["inputs"])
            reference = _load_npz(item["reference"])
            fixed = item.get("free_dims")
            if fixed or cls.needs_own_session() or shared is None:
                session_config = config.with_session(**fixed) if fixed else config
                if spec.get("check_placement"):
                    with open_session(spec["model"], ep, session_config, collect_placement=True) as probe:
                        placement = probe.placement
                    if placement is not None and placement.off_requested_count:
                        off = ", ".join(sorted({n.op_type for n in placement.off_requested}))[:200]
                        emit(
                            {
                                "event": "refused",
                                "kind": "placement",
                                "message": f"{placement.off_requested_count} node(s) run on the CPU with these "
                                f"settings ({off})",
                            }
                        )
                        return
                session = open_session(spec["model"], ep, session_config, provider_options=mode_options or None)
                created_s += session.creation_s
                sessions.append(session)
                if not fixed and not cls.needs_own_session():
                    shared = session
            else:
                session = shared
            names = [o.name for o in session.ort.get_outputs()]
            outputs = {n: OutputSpec(tuple(reference[n].shape), str(reference[n].dtype)) for n in names}
            runner = cls(session.ort, feeds, device, outputs)
            runners[batch] = (runner, runner.prepare(), reference)
        warmups = {}
        for batch, (runner, step, reference) in runners.items():
            warmups[batch] = _warm(step, float(spec.get("max_warmup_s", 2.0)), clocks)
            got = dict(zip([o.name for o in runner.session.get_outputs()], runner.fetch_outputs(), strict=True))
            worst = 0.0
            for name, want in reference.items():
                parity = compare_output(name, got.get(name), want, precision)
                if parity.status is ParityStatus.FAIL:
                    emit(
                        {"event": "rejected", "kind": "accuracy", "message": f"batch {batch}: {parity.failure_line()}"}
                    )
                    return
                worst = max(worst, parity.max_abs or 0.0)
            warmups[batch]["max_abs_error"] = worst
        samples: dict[int, list[int]] = {batch: [] for batch in runners}
        stats: dict[int, Any] = {}
        stages = list(spec["stages"])
        for index, seconds in enumerate(stages):
            for batch, (_runner, step, _reference) in runners.items():
                started = time.perf_counter()
                _timed(step, seconds / len(runners), samples[batch])
                stats[batch] = compute_stats(samples[batch], batch, time.perf_counter() - started)
            value = objective_value(spec["objective"], stats)
            emit({"event": "stage", "step": index, "value": value})
            if index < len(stages) - 1 and ask() != "go":
                break
        clock_result = clocks.result() if clocks is not None else None
        emit(
            {
                "event": "done",
                "value": objective_value(spec["objective"], stats),
                "per_batch": {
                    str(b): {
                        "p50_ms": s.p50_ms,
                        "p95_ms": s.p95_ms,
                        "p99_ms": s.p99_ms,
                        "throughput": s.throughput,
                        "cv": s.cv,
                        "runs": s.count,
                    }
                    for b, s in stats.items()
                },
                "warmup": {str(b): w for b, w in warmups.items()},
                "session_creation_s": created_s,
                "gpu_memory_peak_bytes": memory.finish() if memory is not None else None,
                "host_memory_peak_bytes": _max_rss(),
                "sm_clock_mhz": clock_result.after_warmup_mhz if clock_result else None,
                "sm_clock_max_mhz": clock_result.max_mhz if clock_result else None,
            }
        )
    finally:
        for runner, _step, _reference in runners.values():
            runner.close()
        for session in sessions:
            session.close()
        if memory is not None:
            memory.finish()


def _max_rss() -> int | None:
    try:
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
    except (ImportError, OSError):
        return None


def main(stdin: IO[str] | None = None) -> int:
    """Entry point of the child: protocol lines on the original stdout, everything else to stderr."""
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a library that prints must not corrupt the protocol
    source = stdin or sys.stdin

    def emit(event: dict[str, Any]) -> None:
        protocol.write(json.dumps(event) + "\n")
        protocol.flush()

    def ask() -> str:
        return source.readline().strip()

    try:
        spec = json.loads(source.readline())
        run_trial(spec, emit, ask)
    except OrtgpuError as exc:
        emit({"event": "error", "kind": type(exc).__name__, "message": exc.one_line()})
    except Exception as exc:  # anything ORT or numpy raises: the trial failed, the tune goes on
        emit({"event": "error", "kind": type(exc).__name__, "message": str(exc)[:2000]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
