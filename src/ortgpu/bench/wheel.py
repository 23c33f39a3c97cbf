"""The `bench` backend of the onnxruntime wheel Python imports: sessions in this process, warm-up, timed loops, threads.

The timing core is kept minimal (two clock reads, one call and one store per run, into preallocated lists);
Ctrl-C stops a case between two runs and the result keeps what finished.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortgpu.bench.backend import Measured
from ortgpu.bench.clocks import ClockWatch
from ortgpu.bench.environment import collect_environment, nvml_index_for
from ortgpu.bench.gate import start_gate
from ortgpu.bench.modes import Device, ModeRefusedError, ModeRunner, OutputSpec, device_for, mode_class
from ortgpu.bench.plan import (
    DEFAULT_DURATION_S,
    SETTLE_TOLERANCE,
    SETTLE_WINDOW_S,
    BenchRequest,
    Plan,
    Shapes,
    make_case,
    median_ns,
    plan_cases,
    sample_timeline,
)
from ortgpu.bench.result import BenchCase, CaseStatus, ColdStart, WarmupReport
from ortgpu.bench.stats import MIN_RUNS, compute_stats
from ortgpu.config import Config, Fallback
from ortgpu.ep import ExecutionProvider
from ortgpu.errors import OrtgpuError
from ortgpu.host import nvml
from ortgpu.model.free_dims import FixedDims, fixed_dims_for, input_dim_labels
from ortgpu.model.inspect import ModelInfo
from ortgpu.progress import Progress
from ortgpu.runtime.guard import import_onnxruntime
from ortgpu.session import best_available_ep, open_session
from ortgpu.session.failures import Phase, ort_exception_types, translate_ort_error

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["WheelBackend"]


class WheelBackend:
    """Times every planned case through the onnxruntime wheel that ``import onnxruntime`` loads here."""

    def validate(self, request: BenchRequest) -> None:
        """The wheel times every mode, thread count and session count the request can hold."""

    def measure(
        self,
        request: BenchRequest,
        config: Config,
        model: ModelInfo,
        by_batch: Mapping[int, Shapes],
        tell: Progress,
    ) -> Measured:
        ep, ep_reason, auto_ep = _wheel_ep(request)
        return _measure_through_wheel(request, config, model, by_batch, ep, ep_reason, auto_ep, tell)


_CHUNK_S = 0.1  # timed runs between two looks at the clock, the progress bar and Ctrl-C (threads)
_THREAD_WARMUP_RUNS = 5  # warm-up of the other threads in a concurrency case (thread 0 follows the policy)


class _Interrupted(Exception):
    """Ctrl-C inside a timed chunk; ``done`` runs of it were recorded."""

    def __init__(self, done: int) -> None:
        super().__init__(done)
        self.done = done


def _timed_chunk(step: Callable[[], Any], out: list[int], start: int, count: int) -> None:
    """Time ``count`` runs into ``out[start:start + count]`` (nanoseconds). Kept minimal: two clock reads, one
    call and one store per run; ``out`` is preallocated by the caller."""
    clock = time.perf_counter_ns
    i = start
    try:
        for i in range(start, start + count):
            t0 = clock()
            step()
            out[i] = clock() - t0
    except KeyboardInterrupt:
        raise _Interrupted(i - start) from None


_CPU_SLICES = 8  # process CPU time is read this many times per chunk, between runs (never inside a timed run)


def _timed_slices(step: Callable[[], Any], out: list[int], start: int, count: int, cpu: list[tuple[int, int]]) -> None:
    """``_timed_chunk`` in a few slices, appending (runs, process CPU ns) per slice to ``cpu``."""
    size = max(1, math.ceil(count / _CPU_SLICES))
    for first in range(0, count, size):
        n = min(size, count - first)
        before = time.process_time_ns()
        try:
            _timed_chunk(step, out, start + first, n)
        except _Interrupted as exc:
            raise _Interrupted(first + exc.done) from None
        cpu.append((n, time.process_time_ns() - before))


def _warm_up(
    step: Callable[[], Any], count: int | None, max_s: float, clocks: ClockWatch | None = None
) -> tuple[WarmupReport, float]:
    """Untimed runs before measuring; returns the report and the typical run time in seconds (for chunking).

    Auto: until the latency settled and (``clocks``, GPU cases) the SM clock is near its maximum or stable."""
    start = time.perf_counter()
    if clocks is not None:
        clocks.start()
    if count is not None:
        scratch = [0] * max(count, 1)
        if count:
            _timed_chunk(step, scratch, 0, count)
        else:
            _timed_chunk(step, scratch, 0, 1)  # one run only to size the measurement chunks; not a warm-up
        typical = median_ns(scratch) / 1e9
        if clocks is not None:
            clocks.sample()  # recorded, not waited for: the user asked for exactly this many runs
            clocks.warmed()
        return WarmupReport(count, time.perf_counter() - start, True, "count"), typical
    # Until stable: windows of ~50 ms; settled when the last three window medians agree within 5%.
    probe = [0]
    _timed_chunk(step, probe, 0, 1)
    runs = 1
    typical = probe[0] / 1e9
    medians: list[float] = []
    settled = False
    while time.perf_counter() - start < max_s:
        window = max(1, min(10_000, int(SETTLE_WINDOW_S / max(typical, 1e-7))))
        scratch = [0] * window
        _timed_chunk(step, scratch, 0, window)
        runs += window
        medians.append(median_ns(scratch))
        typical = medians[-1] / 1e9
        last = medians[-3:]
        clock_ready = clocks.sample() if clocks is not None else True
        if len(last) == 3 and (max(last) - min(last)) <= SETTLE_TOLERANCE * min(last) and clock_ready:
            settled = True
            break
    if clocks is not None:
        clocks.warmed()
    return WarmupReport(runs, time.perf_counter() - start, settled, "auto"), typical


@dataclass
class _Measurement:
    samples: list[int] = field(default_factory=list)
    start_ns: int = 0
    end_ns: int = 0
    interrupted: bool = False
    cpu_start_ns: int = 0  # process CPU time (all threads) at start and end: how much CPU the runs got
    cpu_end_ns: int = 0
    cpu_chunks: list[tuple[int, int]] = field(default_factory=list)  # (runs, process CPU ns) per timed slice

    @property
    def cpu_per_wall(self) -> float | None:
        wall = self.end_ns - self.start_ns
        return (self.cpu_end_ns - self.cpu_start_ns) / wall if wall > 0 and self.cpu_end_ns else None


def _measure(
    step: Callable[[], Any],
    iterations: int | None,
    duration_s: float,
    typical_s: float,
    on_chunk: Callable[[float], None] | None = None,
    stop: threading.Event | None = None,
) -> _Measurement:
    """Time runs in chunks of ~0.1 s until ``iterations`` runs or ``duration_s`` seconds (and MIN_RUNS) are done."""
    clock = time.perf_counter_ns
    chunk = max(1, min(100_000, int(_CHUNK_S / max(typical_s, 1e-7))))
    result = _Measurement()
    samples = result.samples
    if iterations is not None:
        samples.extend([0] * iterations)
    done = 0
    result.cpu_start_ns = time.process_time_ns()
    result.start_ns = clock()
    deadline = result.start_ns + int(duration_s * 1e9)
    while True:
        if iterations is not None:
            count = min(chunk, iterations - done)
            if count <= 0:
                break
        else:
            count = chunk
            samples.extend([0] * count)
        try:
            _timed_slices(step, samples, done, count, result.cpu_chunks)
        except _Interrupted as exc:
            done += exc.done
            result.interrupted = True
            break
        done += count
        now = clock()
        if on_chunk is not None:
            if iterations is not None:
                fraction = done / iterations
            else:
                fraction = (now - result.start_ns) / max(deadline - result.start_ns, 1)
            on_chunk(min(fraction, 1.0))
        if iterations is None and now >= deadline and done >= MIN_RUNS:
            break
        if stop is not None and stop.is_set():
            break
    result.end_ns = clock()
    result.cpu_end_ns = time.process_time_ns()
    del samples[done:]
    return result


class _Sessions:
    """The sessions of one bench: shared plain sessions per EP (created on first use), closed at the end."""

    def __init__(
        self, model: Path, config: Config, device_id: int, ep: ExecutionProvider, options: Mapping[str, str]
    ) -> None:
        self.model = model
        self.ep = ep
        self.options = dict(options)  # the user's provider options for ``ep``
        self.config = config
        self.device_id = device_id
        self._plain: dict[Any, list[Any]] = {}
        self.main: Any = None  # the first shared session of the benchmarked EP: the environment record reads it

    def open(
        self, ep: ExecutionProvider, options: dict[str, str] | None = None, session: Mapping[str, Any] | None = None
    ) -> Any:
        merged = {**(self.options if ep is self.ep else {}), **(options or {})}
        # bench never falls back, whatever the config allows: CPU numbers must never carry a GPU label
        strict = dataclasses.replace(self.config, fallback=Fallback.NONE).with_session(**(session or {}))
        return open_session(self.model, ep=ep, config=strict, device_id=self.device_id, provider_options=merged or None)

    def plain(self, ep: ExecutionProvider, count: int) -> list[tuple[Any, bool]]:
        """``count`` shared sessions on ``ep`` with (session, reused) pairs."""
        pool = self._plain.setdefault(ep, [])
        out = [(s, True) for s in pool[:count]]
        while len(pool) < count:
            session = self.open(ep)
            pool.append(session)
            out.append((session, False))
        if self.main is None and ep is self.ep:
            self.main = pool[0]
        return out

    def any_plain(self, ep: ExecutionProvider) -> Any:
        return self.plain(ep, 1)[0][0]

    def close(self) -> None:
        for pool in self._plain.values():
            for session in pool:
                session.close()
        self._plain.clear()


def _output_specs(model: ModelInfo, shapes: Shapes, probe: Callable[[], list[np.ndarray]]) -> dict[str, OutputSpec]:
    """Concrete output shapes for fixed buffers: from the model's symbolic dims, else from one probe run."""
    symbols: dict[str, int] = {}
    for info in model.inputs:
        actual = shapes.shapes.get(info.name)
        if actual is None or info.rank is None:
            continue
        for dim, value in zip(info.shape, actual, strict=False):
            if isinstance(dim, str):
                symbols.setdefault(dim, value)
    specs: dict[str, OutputSpec] = {}
    for info in model.outputs:
        if info.rank is None:
            break
        dims = [d if isinstance(d, int) else symbols.get(d) if isinstance(d, str) else None for d in info.shape]
        known = [d for d in dims if d is not None]
        if len(known) != len(dims):
            break
        specs[info.name] = OutputSpec(tuple(int(d) for d in known), info.dtype)
    else:
        return specs
    outputs = probe()
    return {
        info.name: OutputSpec(tuple(array.shape), str(array.dtype))
        for info, array in zip(model.outputs, outputs, strict=True)
    }


def _gpu_memory(ep: ExecutionProvider, device_id: int) -> int | None:
    if not ep.is_gpu:
        return None
    index = nvml_index_for(device_id, nvml.query_driver().gpus)
    return nvml.device_memory_used_bytes(index) if index is not None else None


class _CaseRun:
    """Prepares, warms up and measures one case on one or several threads."""

    def __init__(
        self, request: BenchRequest, plan: Plan, shapes: Shapes, device: Device, report: Callable[[float], None]
    ) -> None:
        self.request = request
        self.plan = plan
        self.shapes = shapes
        self.device = device
        self.report = report
        self.duration_s = request.duration_s or DEFAULT_DURATION_S
        self.first_run_ms: float | None = None
        self.warmup: WarmupReport | None = None
        self.clocks = ClockWatch.for_device(request.device_id) if plan.ep.is_gpu else None

    def warmup_report(self) -> WarmupReport | None:
        """The warm-up, with the GPU clocks seen around it and after the measurement (GPU cases)."""
        if self.warmup is None or self.clocks is None:
            return self.warmup
        return dataclasses.replace(self.warmup, clocks=self.clocks.result())

    def _first_and_warm(self, step: Callable[[], Any], policy: bool) -> float:
        scratch = [0]
        _timed_chunk(step, scratch, 0, 1)
        if policy:
            self.first_run_ms = scratch[0] / 1e6
            self.warmup, typical = _warm_up(step, self.request.warmup, self.request.max_warmup_s, self.clocks)
            return typical
        count = _THREAD_WARMUP_RUNS if self.request.warmup is None else self.request.warmup
        return _warm_up(step, count, self.request.max_warmup_s)[1]

    def single(self, runner: ModeRunner) -> _Measurement:
        with runner:
            step = runner.prepare()
            typical = self._first_and_warm(step, policy=True)
            start_gate(self.plan.key)  # bench --devices: every process's timed runs start together
            return _measure(step, self.request.iterations, self.duration_s, typical, self.report)

    def threaded(self, runners: list[ModeRunner]) -> _Measurement:
        """Threads each with their own runner; prepared and warmed one at a time (a CUDA graph capture must not
        overlap other CUDA work), then released together."""
        count = len(runners)
        lock = threading.Lock()
        barrier = threading.Barrier(count, action=lambda: start_gate(self.plan.key))
        stop = threading.Event()
        results: list[_Measurement | None] = [None] * count
        errors: list[BaseException | None] = [None] * count

        def worker(index: int) -> None:
            runner = runners[index]
            try:
                with lock:
                    step = runner.prepare()
                    typical = self._first_and_warm(step, policy=index == 0)
                barrier.wait()
                report = self.report if index == 0 else None
                results[index] = _measure(step, self.request.iterations, self.duration_s, typical, report, stop)
            except threading.BrokenBarrierError:
                pass  # another thread failed first; its error is the one reported
            except BaseException as exc:  # handed to the main thread, which raises it
                errors[index] = exc
                barrier.abort()
            finally:
                runner.close()

        threads = [
            threading.Thread(target=worker, args=(i,), name=f"ortgpu-bench-{i}", daemon=True) for i in range(count)
        ]
        interrupted = False
        for thread in threads:
            thread.start()
        try:
            for thread in threads:
                while thread.is_alive():
                    thread.join(0.1)
        except KeyboardInterrupt:
            interrupted = True
            stop.set()
            barrier.abort()
            for thread in threads:
                thread.join()
        error = next((e for e in errors if e is not None), None)
        if error is not None:
            raise error
        done = [r for r in results if r is not None]
        merged = _Measurement(interrupted=interrupted or any(r.interrupted for r in done))
        if done:
            merged.start_ns = min(r.start_ns for r in done)
            merged.end_ns = max(r.end_ns for r in done)
            merged.cpu_start_ns = min(r.cpu_start_ns for r in done)  # process-wide clock: the outer window
            merged.cpu_end_ns = max(r.cpu_end_ns for r in done)
            for r in done:
                merged.samples.extend(r.samples)
        return merged


def _graph_refusal(exc: OrtgpuError, fixed: FixedDims | None = None) -> str:
    if "graph capture" in exc.message:
        pinned = f" even with the open dims fixed ({fixed.describe()})" if fixed is not None and not fixed.empty else ""
        left = f"; dims no override reaches: {', '.join(fixed.unfixed)}" if fixed is not None and fixed.unfixed else ""
        return (
            f"ONNX Runtime refused CUDA graph capture{pinned}: some nodes of this model run on the CPU (shape "
            f"nodes or a Memcpy){left}; `ortgpu check MODEL --ep cuda` lists them. An export with "
            "torch.onnx.export(..., dynamo=True) often leaves fewer"
        )
    return exc.one_line()


def _ort_errors() -> tuple[type[BaseException], ...]:
    return ort_exception_types()


def _translate(exc: BaseException, ep: ExecutionProvider) -> str:
    ort = import_onnxruntime()

    return translate_ort_error(exc, Phase.RUN, ep, ort.__version__).one_line()


def _run_case(
    request: BenchRequest,
    plan: Plan,
    shapes: Shapes,
    model: ModelInfo,
    pool: _Sessions,
    report: Callable[[float], None],
) -> tuple[BenchCase, bool]:
    """Measure one case; returns it and whether Ctrl-C stopped it."""
    cls = mode_class(plan.mode)
    device = device_for(plan.ep, request.device_id)
    options = cls.provider_options(plan.ep)
    own: list[Any] = []
    fixed = None
    try:
        if cls.needs_own_session():
            outputs = _output_specs(model, shapes, lambda: pool.any_plain(plan.ep).run(shapes.feeds))
            # a graph is captured for one shape: fix the open dims so ORT folds the shape nodes it keeps on the CPU
            fixed = fixed_dims_for(input_dim_labels(pool.model), shapes.shapes)
            for _ in range(plan.sessions):
                own.append(pool.open(plan.ep, options, fixed.session_settings(pool.config.session)))
            sessions = [(s, False) for s in own]
        else:
            outputs = None
            sessions = pool.plain(plan.ep, plan.sessions)
        runners = [
            cls(sessions[i % len(sessions)][0].ort, shapes.feeds, device, outputs) for i in range(plan.concurrency)
        ]
        run = _CaseRun(request, plan, shapes, device, report)
        measurement = run.single(runners[0]) if plan.concurrency == 1 else run.threaded(runners)
        memory = _gpu_memory(plan.ep, request.device_id)
    except OrtgpuError as exc:
        if cls.needs_own_session():  # graph capture refused by ORT for this model: a result, not a crash
            reason = _graph_refusal(exc, fixed)
            failed = make_case(plan, CaseStatus.FAILED, shapes, reason=reason, provider_options=options)
            return failed, False
        raise
    except KeyboardInterrupt:
        return make_case(
            plan, CaseStatus.INTERRUPTED, shapes, reason="before any timed run", provider_options=options
        ), True
    except _ort_errors() as exc:  # e.g. out of memory at a large batch: the case records it, the others still run
        failed = make_case(plan, CaseStatus.FAILED, shapes, reason=_translate(exc, plan.ep), provider_options=options)
        return failed, False
    finally:
        for session in own:
            session.close()
    creation = sessions[0][0].creation_s
    cold = ColdStart(session_creation_s=creation, session_reused=sessions[0][1], first_run_ms=run.first_run_ms)
    if not measurement.samples:
        return make_case(
            plan,
            CaseStatus.INTERRUPTED,
            shapes,
            reason="before any timed run",
            cold=cold,
            warmup=run.warmup_report(),
            provider_options=options,
        ), True
    stats = compute_stats(measurement.samples, shapes.batch, (measurement.end_ns - measurement.start_ns) / 1e9)
    status = CaseStatus.INTERRUPTED if measurement.interrupted else CaseStatus.OK
    return make_case(
        plan,
        status,
        shapes,
        reason="stats cover the runs that finished" if measurement.interrupted else None,
        stats=stats,
        warmup=run.warmup_report(),
        cold=cold,
        gpu_memory_used_bytes=memory,
        provider_options=options,
        timeline_ms=sample_timeline(measurement.samples),
        cpu_per_wall=measurement.cpu_per_wall,
        # CPU time per run, slice by slice: what the runs cost whatever else the machine did (one thread only;
        # with several, the process clock mixes their slices)
        cpu_ms_per_run=tuple(ns / runs / 1e6 for runs, ns in measurement.cpu_chunks if runs)
        if plan.concurrency == 1
        else (),
        fixed_dims=fixed.session_settings() if fixed is not None and not fixed.empty else {},
    ), measurement.interrupted


def _wheel_ep(request: BenchRequest) -> tuple[ExecutionProvider, str, bool]:
    """The EP the wheel runs the bench on (the best available when none is asked) and its reason; refuses a mode
    the EP cannot do (exit 3) unless every mode was asked for."""
    if request.ep is None:
        ep, ep_reason = best_available_ep()
        auto_ep = True
    else:
        ep, ep_reason, auto_ep = request.ep, request.ep_reason or "asked for with --ep", False
    if not request.all_modes:
        for mode in request.modes:
            refusal = mode_class(mode).refusal(ep)
            if refusal:
                raise ModeRefusedError(
                    f"--mode {mode.value} on the {ep.value} EP: {refusal}",
                    "run on a machine with an NVIDIA GPU (--ep cuda), or use --mode run / iobinding",
                )
    return ep, ep_reason, auto_ep


def _measure_through_wheel(
    request: BenchRequest,
    config: Config,
    model: ModelInfo,
    by_batch: Mapping[int, Shapes],
    ep: ExecutionProvider,
    ep_reason: str,
    auto_ep: bool,
    tell: Progress,
) -> Measured:
    """Every planned case through the onnxruntime wheel, in this process."""
    plans = plan_cases(request, ep, list(by_batch))
    pool = _Sessions(Path(request.model), config, request.device_id, ep, request.provider_options)
    cases: list[BenchCase] = []
    interrupted = False
    try:
        for index, plan in enumerate(plans):
            label = f"{plan.ep.value}/{plan.mode.value} batch {by_batch[plan.batch].batch}" + (
                f" x{plan.concurrency}" if plan.concurrency > 1 else ""
            )
            if plan.skip is not None:
                cases.append(make_case(plan, CaseStatus.SKIPPED, by_batch[plan.batch], reason=plan.skip))
                continue
            tell(f"[{index + 1}/{len(plans)}] {label}", index / len(plans))

            def report(fraction: float, index: int = index, label: str = label) -> None:
                tell(f"[{index + 1}/{len(plans)}] {label}", (index + fraction) / len(plans))

            try:
                case, stopped = _run_case(request, plan, by_batch[plan.batch], model, pool, report)
            except KeyboardInterrupt:
                stopped = True
                case = make_case(plan, CaseStatus.INTERRUPTED, by_batch[plan.batch], reason="while opening its session")
            cases.append(case)
            if stopped:
                interrupted = True
                break
        tell("recording the environment", 1.0)
        environment = collect_environment(
            ep.value, request.device_id, pool.main.ort if pool.main is not None else None, dict(config.session)
        )
    finally:
        pool.close()
    return Measured(ep, ep_reason, auto_ep, tuple(cases), interrupted, environment)
