"""Run a benchmark: plan the cases, warm up, time tight loops, and turn samples into a BenchResult."""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortgpu.bench.clocks import ClockWatch
from ortgpu.bench.gate import start_gate
from ortgpu.bench.modes import BenchMode, Device, ModeRefusedError, ModeRunner, OutputSpec, device_for, mode_class
from ortgpu.bench.result import (
    BaselineComparison,
    BenchCase,
    BenchResult,
    BenchSettings,
    CaseKey,
    CaseStatus,
    ColdStart,
    Hint,
    HintKind,
    ModelSummary,
    Verdict,
    WarmupReport,
)
from ortgpu.bench.stats import MIN_RUNS, compute_stats
from ortgpu.errors import BadInputError, OrtgpuError
from ortgpu.model.free_dims import FixedDims, fixed_dims_for, input_dim_labels
from ortgpu.output_paths import check_outputs
from ortgpu.runtime.guard import import_onnxruntime

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from ortgpu.bench.environment import Environment
    from ortgpu.check.result import PackageLibrary
    from ortgpu.config import Config, ExecutionProvider
    from ortgpu.model.inputs import InputSpec
    from ortgpu.model.inspect import ModelInfo

__all__ = [
    "DEFAULT_DURATION_S",
    "BenchInputError",
    "BenchRequest",
    "Measured",
    "Progress",
    "parse_int_list",
    "parse_modes",
    "parse_percent",
    "parse_seconds",
    "parse_warmup",
    "run_bench",
]

Progress = Callable[[str, "float | None"], None]

DEFAULT_DURATION_S = 2.0
MAX_CONCURRENCY = 1024
_CHUNK_S = 0.1  # timed runs between two looks at the clock, the progress bar and Ctrl-C (threads)
_SETTLE_WINDOW_S = 0.05  # auto warm-up: each window lasts about this long
_SETTLE_TOLERANCE = 0.05  # ... and the last three window medians agree within 5%
_THREAD_WARMUP_RUNS = 5  # warm-up of the other threads in a concurrency case (thread 0 follows the policy)
_TIMELINE_POINTS = 300
_LAUNCH_BOUND_US_PER_NODE = 20.0  # a GPU kernel launch costs ~5-10 µs: below this per node, launches dominate
_PCIE_BYTES_PER_S = 10e9  # pageable host<->device copies, for the copy-bound estimate


class BenchInputError(BadInputError):
    """A bench setting that makes no sense (exit 2)."""


@dataclass(frozen=True)
class BenchRequest:
    """What to benchmark and how; validated by :func:`run_bench` before anything runs.

    ``ep`` None: the best available EP. ``modes`` empty: the config's [run] mode.
    ``all_modes``: the user asked for every mode, so a mode the EP cannot do
    is skipped with its reason instead of refused (exit 3). ``batches`` empty: the model's default shapes.
    ``warmup`` None: warm up until three consecutive windows agree (at most ``max_warmup_s``). Measurement:
    ``iterations`` runs, or ``duration_s`` seconds (at least MIN_RUNS runs); neither: DEFAULT_DURATION_S.
    ``shapes`` / ``dims`` / ``ranges`` / ``npz`` / ``seed`` are merged over the config's [inputs];
    ``provider_options`` over its [ep.<name>] (for the benchmarked EP). ``max_regression``: fraction (0.10 = 10%).
    ``package``: time the model through the ONNX Runtime C library in this release archive, folder, wheel or
    library file, in child processes (mode run, one thread; see :mod:`ortgpu.bench.package`), not the wheel.
    """

    model: Path
    ep: ExecutionProvider | None = None
    ep_reason: str | None = None  # why the caller chose ``ep`` (shown with the results)
    modes: tuple[BenchMode, ...] = (BenchMode.RUN,)
    all_modes: bool = False
    batches: tuple[int, ...] = ()
    concurrency: tuple[int, ...] = (1,)
    sessions: int = 1
    warmup: int | None = None
    max_warmup_s: float = 3.0
    iterations: int | None = None
    duration_s: float | None = None
    compare_cpu: bool = False
    shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    dims: Mapping[str, int] = field(default_factory=dict)
    ranges: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    npz: Path | None = None
    seed: int | None = None
    provider_options: Mapping[str, str] = field(default_factory=dict)
    config: Path | None = None
    device_id: int = 0
    save: Path | None = None
    report: Path | None = None
    baseline: Path | None = None
    max_regression: float = 0.10
    package: Path | None = None
    against_defaults: bool = False  # then bench ORT's defaults (no config, mode run) too, in the same process

    def validate(self) -> None:
        """Raise BenchInputError (exit 2) for settings that cannot be measured."""
        if not self.modes:
            raise BenchInputError("no mode given", "use --mode run, iobinding, cudagraph or all")
        for flag, values in (("--batch", self.batches), ("--concurrency", self.concurrency)):
            for value in values:
                if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                    raise BenchInputError(f"{flag} {value!r}: not a whole number of 1 or more", f"e.g. {flag} 1,8,32")
        if not self.concurrency:
            raise BenchInputError("--concurrency: no value", "e.g. --concurrency 1,4,16")
        if max(self.concurrency) > MAX_CONCURRENCY:
            raise BenchInputError(
                f"--concurrency {max(self.concurrency)}: over {MAX_CONCURRENCY} threads",
                "threads beyond the core count only queue; use fewer",
            )
        if self.sessions < 1:
            raise BenchInputError(f"--sessions {self.sessions}: needs 1 or more", "e.g. --sessions 4")
        if self.iterations is not None and self.duration_s is not None:
            raise BenchInputError("--iterations and --duration both given", "measure by one of them")
        if self.iterations is not None and self.iterations < 1:
            raise BenchInputError(f"--iterations {self.iterations}: needs 1 or more", "e.g. --iterations 200")
        if self.duration_s is not None and not (math.isfinite(self.duration_s) and self.duration_s > 0):
            raise BenchInputError(
                f"--duration {self.duration_s}: needs a positive number of seconds", "e.g. --duration 5"
            )
        if self.warmup is not None and self.warmup < 0:
            raise BenchInputError(f"--warmup {self.warmup}: negative", "give a count (0 or more) or auto")
        if not (math.isfinite(self.max_regression) and self.max_regression >= 0):
            raise BenchInputError(f"--max-regression {self.max_regression}: needs 0% or more", "e.g. 10%")
        if self.device_id < 0:
            raise BenchInputError(f"--device {self.device_id}: negative", "CUDA device ids start at 0")
        if self.package is not None:
            from ortgpu.bench.package import validate_package_request

            validate_package_request(self)


# ------------------------------------------------------------------------------------------- flag values


def parse_int_list(text: str, flag: str) -> tuple[int, ...]:
    """ "1,8,32" -> (1, 8, 32); anything that is not a list of positive whole numbers is a BenchInputError."""
    values = []
    for part in str(text).split(","):
        part = part.strip()
        if not part.isdigit() or int(part) < 1:
            raise BenchInputError(
                f"{flag} {text!r}: {part!r} is not a whole number of 1 or more",
                f"give a comma-separated list, e.g. {flag} 1,8,32",
            )
        values.append(int(part))
    return tuple(dict.fromkeys(values))


def parse_seconds(text: str, flag: str = "--duration") -> float:
    """ "5", "5s", "500ms", "1.5" -> seconds (positive, finite)."""
    raw = str(text).strip().lower()
    scale = 1.0
    if raw.endswith("ms"):
        raw, scale = raw[:-2], 1e-3
    elif raw.endswith("s"):
        raw = raw[:-1]
    try:
        value = float(raw) * scale
    except ValueError:
        value = float("nan")
    if not (math.isfinite(value) and value > 0):
        raise BenchInputError(f"{flag} {text!r}: not a positive time", f"e.g. {flag} 5 (seconds) or {flag} 500ms")
    return value


def parse_percent(text: str, flag: str = "--max-regression") -> float:
    """ "10%" or "10" -> 0.10 (a fraction)."""
    raw = str(text).strip().rstrip("%").strip()
    try:
        value = float(raw) / 100.0
    except ValueError:
        value = float("nan")
    if not (math.isfinite(value) and value >= 0):
        raise BenchInputError(f"{flag} {text!r}: not a percentage", f"e.g. {flag} 10%")
    return value


def parse_warmup(text: str) -> int | None:
    """ "auto" -> None (until stable); "20" -> 20 runs."""
    raw = str(text).strip().lower()
    if raw == "auto":
        return None
    if not raw.isdigit():
        raise BenchInputError(f"--warmup {text!r}: not a run count or 'auto'", "e.g. --warmup 50 or --warmup auto")
    return int(raw)


def parse_modes(text: str) -> tuple[tuple[BenchMode, ...], bool]:
    """ "run,iobinding" -> the modes; "all" -> every mode, with the flag that skips those the EP cannot do."""
    raw = [p.strip().lower() for p in str(text).split(",") if p.strip()]
    if raw == ["all"]:
        return tuple(BenchMode), True
    modes = []
    for part in raw:
        try:
            modes.append(BenchMode(part))
        except ValueError:
            raise BenchInputError(
                f"--mode {text!r}: unknown mode {part!r}", "use run, iobinding, cudagraph (comma-separated) or all"
            ) from None
    if not modes:
        raise BenchInputError("--mode: empty", "use run, iobinding, cudagraph or all")
    return tuple(dict.fromkeys(modes)), False


# ------------------------------------------------------------------------------------------- timing core


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


def _timed_slices(
    step: Callable[[], Any], out: list[int], start: int, count: int, cpu: list[tuple[int, int]]
) -> None:
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


def _median(values: Sequence[int]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return float(ordered[mid]) if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2.0


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
        typical = _median(scratch) / 1e9
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
        window = max(1, min(10_000, int(_SETTLE_WINDOW_S / max(typical, 1e-7))))
        scratch = [0] * window
        _timed_chunk(step, scratch, 0, window)
        runs += window
        medians.append(_median(scratch))
        typical = medians[-1] / 1e9
        last = medians[-3:]
        clock_ready = clocks.sample() if clocks is not None else True
        if len(last) == 3 and (max(last) - min(last)) <= _SETTLE_TOLERANCE * min(last) and clock_ready:
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


# ------------------------------------------------------------------------------------------- planning


@dataclass(frozen=True)
class _Plan:
    ep: ExecutionProvider
    mode: BenchMode
    batch: int
    concurrency: int
    sessions: int
    skip: str | None = None

    @property
    def key(self) -> str:
        return f"{self.ep.value}/{self.mode.value}/b{self.batch}/x{self.concurrency}/s{self.sessions}"


@dataclass
class _Shapes:
    batch: int
    feeds: dict[str, np.ndarray]
    shapes: dict[str, tuple[int, ...]]
    notes: tuple[str, ...]


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
        from dataclasses import replace

        from ortgpu.config import Fallback
        from ortgpu.session import open_session

        merged = {**(self.options if ep is self.ep else {}), **(options or {})}
        # bench never falls back, whatever the config allows: CPU numbers must never carry a GPU label
        strict = replace(self.config, fallback=Fallback.NONE).with_session(**(session or {}))
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


def _open_leading(model: ModelInfo) -> bool:
    return any(i.rank and not isinstance(i.shape[0], int) for i in model.inputs)


def _resolve_shapes(model: ModelInfo, spec: InputSpec, batches: tuple[int, ...]) -> list[_Shapes]:
    from ortgpu.model.inputs import make_inputs

    if not batches:
        resolved = make_inputs(model, spec)
        batch = resolved.batch
        if batch is None or not _open_leading(model):
            first = next((s for s in resolved.shapes.values() if len(s) >= 2), None)
            batch = first[0] if first else 1
        return [_Shapes(batch, resolved.feeds, resolved.shapes, resolved.notes)]
    if not _open_leading(model):
        fixed = ", ".join(f"{i.name} {list(i.shape)}" for i in model.inputs)
        raise BenchInputError(
            f"--batch: every input has a fixed leading dim ({fixed}); the model cannot be batched",
            "drop --batch, or export the model with a dynamic batch dim",
        )
    out = []
    for batch in batches:
        resolved = make_inputs(model, dataclasses.replace(spec, batch=batch))
        out.append(_Shapes(batch, resolved.feeds, resolved.shapes, resolved.notes))
    return out


def _output_specs(model: ModelInfo, shapes: _Shapes, probe: Callable[[], list[np.ndarray]]) -> dict[str, OutputSpec]:
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
        if any(d is None for d in dims):
            break
        specs[info.name] = OutputSpec(tuple(int(d) for d in dims), info.dtype)
    else:
        return specs
    outputs = probe()
    return {
        info.name: OutputSpec(tuple(array.shape), str(array.dtype))
        for info, array in zip(model.outputs, outputs, strict=True)
    }


def _plan(request: BenchRequest, ep: ExecutionProvider, batches: list[int]) -> list[_Plan]:
    from ortgpu.config import ExecutionProvider

    modes = list(dict.fromkeys(request.modes))
    eps = [ep]
    if request.compare_cpu and ep is not ExecutionProvider.CPU:
        eps.append(ExecutionProvider.CPU)
    plans = []
    for current in eps:
        current_modes = modes if current is ep else [BenchMode.RUN]
        for batch in batches:
            for mode in current_modes:
                cls = mode_class(mode)
                refusal = (cls.package_refusal() if request.package is not None else None) or cls.refusal(current)
                for concurrency in dict.fromkeys(request.concurrency):
                    sessions = min(request.sessions, concurrency)
                    skip = refusal
                    if skip is None and cls.needs_own_session() and concurrency > sessions:
                        skip = (
                            f"a CUDA graph is captured for one thread on fixed buffers: {concurrency} threads "
                            f"need --sessions {concurrency} (one session each)"
                        )
                    plans.append(_Plan(current, mode, batch, concurrency, sessions, skip))
    return plans


# ------------------------------------------------------------------------------------------- one case


def _gpu_memory(ep: ExecutionProvider, device_id: int) -> int | None:
    if not ep.is_gpu:
        return None
    from ortgpu.bench.environment import nvml_index_for
    from ortgpu.env.nvml import device_memory_used_bytes, query_driver

    index = nvml_index_for(device_id, query_driver().gpus)
    return device_memory_used_bytes(index) if index is not None else None


def _timeline(samples: list[int]) -> tuple[float, ...]:
    stride = max(1, math.ceil(len(samples) / _TIMELINE_POINTS))
    return tuple(s / 1e6 for s in samples[::stride])


class _CaseRun:
    """Prepares, warms up and measures one case on one or several threads."""

    def __init__(
        self, request: BenchRequest, plan: _Plan, shapes: _Shapes, device: Device, report: Callable[[float], None]
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
    from ortgpu.session.failures import ort_exception_types

    return ort_exception_types()


def _translate(exc: BaseException, ep: ExecutionProvider) -> str:
    ort = import_onnxruntime()

    from ortgpu.session.failures import Phase, translate_ort_error

    return translate_ort_error(exc, Phase.RUN, ep, ort.__version__).one_line()


def _case(plan: _Plan, status: CaseStatus, shapes: _Shapes, **fields: Any) -> BenchCase:
    return BenchCase(
        ep=plan.ep,
        mode=plan.mode,
        batch=shapes.batch,
        concurrency=plan.concurrency,
        sessions=plan.sessions,
        status=status,
        shapes=dict(shapes.shapes),
        **fields,
    )


def _run_case(
    request: BenchRequest,
    plan: _Plan,
    shapes: _Shapes,
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
            return _case(plan, CaseStatus.FAILED, shapes, reason=reason, provider_options=options), False
        raise
    except KeyboardInterrupt:
        return _case(
            plan, CaseStatus.INTERRUPTED, shapes, reason="before any timed run", provider_options=options
        ), True
    except _ort_errors() as exc:  # e.g. out of memory at a large batch: the case records it, the others still run
        return _case(plan, CaseStatus.FAILED, shapes, reason=_translate(exc, plan.ep), provider_options=options), False
    finally:
        for session in own:
            session.close()
    creation = sessions[0][0].creation_s
    cold = ColdStart(session_creation_s=creation, session_reused=sessions[0][1], first_run_ms=run.first_run_ms)
    if not measurement.samples:
        return _case(
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
    return _case(
        plan,
        status,
        shapes,
        reason="stats cover the runs that finished" if measurement.interrupted else None,
        stats=stats,
        warmup=run.warmup_report(),
        cold=cold,
        gpu_memory_used_bytes=memory,
        provider_options=options,
        timeline_ms=_timeline(measurement.samples),
        cpu_per_wall=measurement.cpu_per_wall,
        # CPU time per run, slice by slice: what the runs cost whatever else the machine did (one thread only;
        # with several, the process clock mixes their slices)
        cpu_ms_per_run=tuple(ns / runs / 1e6 for runs, ns in measurement.cpu_chunks if runs)
        if plan.concurrency == 1
        else (),
        fixed_dims=fixed.session_settings() if fixed is not None and not fixed.empty else {},
    ), measurement.interrupted


# ------------------------------------------------------------------------------------------- hints


def _hints(
    cases: Sequence[BenchCase],
    model: ModelInfo,
    ep: ExecutionProvider,
    auto_ep: bool,
    ep_reason: str,
    interrupted: bool,
    intra_op_threads: int = 1,
) -> tuple[Hint, ...]:
    import os

    hints: list[Hint] = []
    measured = [c for c in cases if c.measured and c.stats is not None]
    by_key = {(c.ep, c.mode, c.batch, c.concurrency, c.sessions): c for c in measured}
    if auto_ep and not ep.is_gpu:
        hints.append(
            Hint(
                HintKind.CPU_ONLY,
                f"no GPU execution provider here ({ep_reason}): these are CPU numbers; run `ortgpu doctor` to see why",
            )
        )
    for case in cases:
        if case.status is CaseStatus.FAILED:
            hints.append(Hint(HintKind.FAILED, f"{case.key.label} failed: {case.reason}", case.key.label))
    unstable = [c for c in measured if not c.stats.stable]
    if unstable:
        worst = max(unstable, key=lambda c: c.stats.cv)
        names = ", ".join(c.key.label for c in unstable[:4]) + (
            f" and {len(unstable) - 4} more" if len(unstable) > 4 else ""
        )
        hints.append(
            Hint(
                HintKind.UNSTABLE,
                f"{len(unstable)} of {len(measured)} case(s) are not stable ({names}); "
                f"worst {worst.key.label}: "
                + "; ".join(worst.stats.problems)
                + ". Close other work, pin the clocks, measure longer (--duration)",
                worst.key.label,
            )
        )
    cores = os.cpu_count() or 1
    cpu_unstable = [c for c in unstable if not c.ep.is_gpu]
    if cpu_unstable and (intra_op_threads == 0 or intra_op_threads >= cores):
        # ORT's intra-op pool on every core competes with the timing thread: workers get descheduled for a tick
        hints.append(
            Hint(
                HintKind.UNSTABLE,
                f"the CPU EP's thread pool uses every core ({cores}), so its workers compete with the calling "
                f"thread and stall for milliseconds: set [session] intra_op_num_threads = {max(1, cores - 1)} "
                "in an ortgpu.toml (--config) and compare",
                cpu_unstable[0].key.label,
            )
        )
    unsettled = [c for c in measured if c.warmup is not None and not c.warmup.settled]
    if unsettled:
        hints.append(
            Hint(
                HintKind.WARMUP_UNSETTLED,
                f"latency{_clock_note(unsettled)} was still moving at the end of warm-up in "
                f"{len(unsettled)} case(s) ({', '.join(c.key.label for c in unsettled[:4])}); give "
                "--warmup N with a larger N",
                unsettled[0].key.label,
            )
        )
    found: dict[str, list[tuple[str, str]]] = {}  # hint text key -> [(where, detail)], one hint per key below

    def note(kind: str, case: BenchCase, detail: str) -> None:
        where = f"batch {case.batch}" + (f" x{case.concurrency}" if case.concurrency > 1 else "")
        found.setdefault(kind, []).append((where, detail))

    for case in measured:
        if not case.ep.is_gpu:
            continue
        stats = case.stats
        rest = (case.batch, case.concurrency, case.sessions)
        graph = by_key.get((case.ep, BenchMode.CUDAGRAPH, *rest))
        bound = by_key.get((case.ep, BenchMode.IOBINDING, *rest))
        if case.mode is BenchMode.IOBINDING and graph is not None and graph.stats.p50_ms < 0.9 * stats.p50_ms:
            saved = 1 - graph.stats.p50_ms / stats.p50_ms
            note("launch", case, f"{saved:.0%} ({stats.p50_ms:.3f} -> {graph.stats.p50_ms:.3f} ms)")
        elif case.mode is BenchMode.RUN and graph is None and model.node_count:
            per_node_us = stats.p50_ms * 1e3 / model.node_count
            if per_node_us < _LAUNCH_BOUND_US_PER_NODE:
                note("launch?", case, f"{per_node_us:.1f} µs per node")
        if case.mode is BenchMode.RUN and bound is not None and stats.p50_ms > 1.1 * bound.stats.p50_ms:
            share = 1 - bound.stats.p50_ms / stats.p50_ms
            note("copy", case, f"{share:.0%} ({stats.p50_ms:.3f} vs {bound.stats.p50_ms:.3f} ms)")
        elif case.mode is BenchMode.RUN and bound is None:
            copy_ms = _io_bytes(case, model) / _PCIE_BYTES_PER_S * 1e3
            if copy_ms > 0.2 * stats.p50_ms:
                note("copy?", case, f"~{copy_ms:.3f} of {stats.p50_ms:.3f}")
        if case.speedup_vs_cpu is not None and case.speedup_vs_cpu < 1.0:
            note("slower", case, f"{case.mode.value} takes {1 / case.speedup_vs_cpu:.1f}x the CPU time")
    texts = {
        "launch": (
            HintKind.LAUNCH_BOUND,
            "CUDA graph replay cut p50 against IO binding by {}: kernel launches dominate; use --mode cudagraph "
            "where input shapes are fixed",
        ),
        "launch?": (
            HintKind.LAUNCH_BOUND,
            "likely: {} (" + str(model.node_count) + " nodes), near the cost of a kernel launch; try --mode cudagraph",
        ),
        "copy": (
            HintKind.COPY_BOUND,
            "host<->device copies take {} of a numpy run (against IO binding); keep the data on the device "
            "(--mode iobinding)",
        ),
        "copy?": (
            HintKind.COPY_BOUND,
            "likely: copying the inputs takes {} ms per run at ~10 GB/s; try --mode iobinding",
        ),
        "slower": (
            HintKind.GPU_SLOWER_THAN_CPU,
            "{}: the model is too small for the GPU; batch more requests together, or serve it on the CPU",
        ),
    }
    for key, items in found.items():
        kind, template = texts[key]
        details = ", ".join(f"{detail} at {where}" for where, detail in items)
        hints.append(Hint(kind, template.format(details), None))
    if interrupted:
        hints.append(Hint(HintKind.INTERRUPTED, "only the cases that finished are reported"))
    return tuple(hints)


def _clock_note(cases: Sequence[BenchCase]) -> str:
    moving = [c.warmup.clocks for c in cases if c.warmup and c.warmup.clocks and not c.warmup.clocks.ready]
    return f" or the GPU clock ({moving[0].why})" if moving else ""


def _io_bytes(case: BenchCase, model: ModelInfo) -> int:
    import numpy as np

    total = 0
    for info in model.inputs:
        shape = case.shapes.get(info.name)
        if shape is not None and info.dtype != "object":
            total += int(np.prod(shape, dtype=np.int64)) * np.dtype(info.dtype).itemsize
    return total


def _with_speedups(cases: list[BenchCase]) -> list[BenchCase]:
    cpu = {
        (c.batch, c.concurrency, c.sessions): c
        for c in cases
        if c.measured and not c.ep.is_gpu and c.mode is BenchMode.RUN
    }
    out = []
    for case in cases:
        ref = cpu.get((case.batch, case.concurrency, case.sessions))
        if case.measured and case.ep.is_gpu and ref is not None and case.stats.p50_ms > 0:
            case = dataclasses.replace(case, speedup_vs_cpu=ref.stats.p50_ms / case.stats.p50_ms)
        out.append(case)
    return out


# ------------------------------------------------------------------------------------------- entry point


def _describe(info: Any) -> str:
    dims = ", ".join("?" if d is None else str(d) for d in info.shape) if info.rank is not None else "?"
    return f"{info.name} {info.dtype} [{dims}]"


@dataclass(frozen=True)
class Measured:
    """What one way of running the model measured: the EP it ran on and why, the cases, the environment.

    Produced by the wheel path here and by :func:`ortgpu.bench.package.measure_through_package`; ``run_bench``
    turns it into a BenchResult (speed-ups, hints, baseline) the same way for both.
    """

    ep: ExecutionProvider
    ep_reason: str
    auto_ep: bool  # the EP was picked here, not asked for
    cases: tuple[BenchCase, ...]
    interrupted: bool
    environment: Environment
    package: PackageLibrary | None = None


def _wheel_ep(request: BenchRequest) -> tuple[ExecutionProvider, str, bool]:
    """The EP the wheel runs the bench on (the best available when none is asked) and its reason; refuses a mode
    the EP cannot do (exit 3) unless every mode was asked for."""
    from ortgpu.session import best_available_ep

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
    by_batch: Mapping[int, _Shapes],
    ep: ExecutionProvider,
    ep_reason: str,
    auto_ep: bool,
    tell: Progress,
) -> Measured:
    """Every planned case through the onnxruntime wheel, in this process."""
    from ortgpu.bench.environment import collect_environment

    plans = _plan(request, ep, list(by_batch))
    pool = _Sessions(Path(request.model), config, request.device_id, ep, request.provider_options)
    cases: list[BenchCase] = []
    interrupted = False
    try:
        for index, plan in enumerate(plans):
            label = f"{plan.ep.value}/{plan.mode.value} batch {by_batch[plan.batch].batch}" + (
                f" x{plan.concurrency}" if plan.concurrency > 1 else ""
            )
            if plan.skip is not None:
                cases.append(_case(plan, CaseStatus.SKIPPED, by_batch[plan.batch], reason=plan.skip))
                continue
            tell(f"[{index + 1}/{len(plans)}] {label}", index / len(plans))

            def report(fraction: float, index: int = index, label: str = label) -> None:
                tell(f"[{index + 1}/{len(plans)}] {label}", (index + fraction) / len(plans))

            try:
                case, stopped = _run_case(request, plan, by_batch[plan.batch], model, pool, report)
            except KeyboardInterrupt:
                stopped = True
                case = _case(
                    plan, CaseStatus.INTERRUPTED, by_batch[plan.batch], reason="while opening its session"
                )
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


def _remeasure(
    request: BenchRequest,
    config: Config,
    model: ModelInfo,
    by_batch: Mapping[int, _Shapes],
    comparison: BaselineComparison,
    tell: Progress,
) -> dict[CaseKey, BenchCase]:
    """Measure each regressed case once more, the same way (its own request, no save, report or baseline)."""
    from ortgpu.config import ExecutionProvider

    again: dict[CaseKey, BenchCase] = {}
    for compared in comparison.cases:
        if compared.verdict is not Verdict.REGRESSED:
            continue
        key = compared.key
        one = dataclasses.replace(
            request,
            ep=ExecutionProvider(key.ep),
            modes=(BenchMode(key.mode),),
            all_modes=False,
            batches=(key.batch,),
            concurrency=(key.concurrency,),
            sessions=key.sessions,
            compare_cpu=False,
            save=None,
            report=None,
            baseline=None,
        )
        tell(f"re-measuring {key.label}: it looked regressed", None)
        shapes = {key.batch: by_batch[key.batch]}
        if request.package is None:
            measured = _measure_through_wheel(one, config, model, shapes, one.ep, "re-measure", False, _quiet)
        else:
            from ortgpu.bench.package import measure_through_package

            measured = measure_through_package(one, request.package, config, model, shapes, _quiet)
        found = [c for c in measured.cases if c.key == key and c.measured]
        if found:
            again[key] = found[0]
    return again


def _quiet(message: str, fraction: float | None = None) -> None:
    return None


def run_bench(request: BenchRequest, progress: Progress | None = None) -> BenchResult:
    """Benchmark ``request.model``; see BenchRequest. Ctrl-C stops it early: the result then holds what finished
    and is marked interrupted. Writes ``request.save`` / ``request.report`` when given (atomically).

    Raises BenchInputError / ModelError / InputError / BaselineError (exit 2) for bad settings or files before
    anything runs, ModeRefusedError / ProviderUnavailableError (exit 3) when this machine cannot do it. With
    ``request.package``: the library-location errors (exit 2) and ProviderLoadError (exit 3, ORT's own text).
    """
    from ortgpu.bench.archive import (
        check_same_model,
        compare_to_baseline,
        confirm_regressions,
        load_result,
        save_result,
    )
    from ortgpu.check.run import merge_input_spec
    from ortgpu.config import ExecutionProvider, load_config
    from ortgpu.model.inspect import inspect_model

    tell = progress or (lambda message, fraction=None: None)
    started = time.perf_counter()
    if not request.modes:  # no --mode: the config's [run] mode (what tune found), else run
        request = dataclasses.replace(request, modes=(BenchMode(load_config(request.config).run["mode"]),))
    request.validate()
    check_outputs(
        {"--save": request.save, "--report": request.report},
        (request.model, request.config, request.baseline, request.npz, request.package),
        error=BenchInputError,
    )
    baseline = load_result(request.baseline) if request.baseline is not None else None
    config = load_config(request.config)
    tell("inspecting the model", None)
    model = inspect_model(request.model)
    if baseline is not None:
        check_same_model(baseline, model.sha256, request.baseline)
    if request.package is None:
        ep, ep_reason, auto_ep = _wheel_ep(request)
    spec = merge_input_spec(
        config.inputs,
        shapes=request.shapes,
        dims=request.dims,
        ranges=request.ranges,
        npz=request.npz,
        seed=request.seed,
    )
    shape_sets = _resolve_shapes(model, spec, tuple(dict.fromkeys(request.batches)))
    by_batch = {s.batch: s for s in shape_sets}
    if request.package is None:
        measured = _measure_through_wheel(request, config, model, by_batch, ep, ep_reason, auto_ep, tell)
    else:
        from ortgpu.bench.package import measure_through_package

        measured = measure_through_package(request, request.package, config, model, by_batch, tell)
    ep, cases = measured.ep, _with_speedups(list(measured.cases))
    result = BenchResult(
        model=ModelSummary(
            Path(request.model),
            model.sha256,
            model.size_bytes,
            model.node_count,
            tuple(_describe(i) for i in model.inputs),
            tuple(_describe(o) for o in model.outputs),
        ),
        ep=ep,
        ep_reason=measured.ep_reason,
        settings=BenchSettings(
            modes=tuple(dict.fromkeys(request.modes)),
            batches=tuple(by_batch),
            concurrency=tuple(dict.fromkeys(request.concurrency)),
            sessions=request.sessions,
            warmup=request.warmup,
            iterations=request.iterations,
            duration_s=None if request.iterations is not None else (request.duration_s or DEFAULT_DURATION_S),
            compare_cpu=request.compare_cpu and ep is not ExecutionProvider.CPU,
            device_id=request.device_id,
            config=request.config,
        ),
        cases=tuple(cases),
        hints=_hints(
            cases,
            model,
            ep,
            measured.auto_ep,
            measured.ep_reason,
            measured.interrupted,
            int(config.session.get("intra_op_num_threads", 0)),
        ),
        environment=measured.environment,
        input_notes=shape_sets[0].notes,
        interrupted=measured.interrupted,
        elapsed_s=time.perf_counter() - started,
        package=measured.package,
    )
    if baseline is not None and result.measured_cases:
        comparison = compare_to_baseline(result, baseline, Path(request.baseline), request.max_regression)
        if comparison.regressed and not result.interrupted:  # a case that flips on a re-measure is not a regression
            again = _remeasure(request, config, model, by_batch, comparison, tell)
            comparison = confirm_regressions(comparison, again, baseline)
        result = dataclasses.replace(result, comparison=comparison)
    if request.against_defaults:
        result = dataclasses.replace(result, defaults=_defaults_of(request, spec, progress))
    if request.save is not None:
        result = dataclasses.replace(result, saved_to=Path(request.save))
    if request.report is not None:
        result = dataclasses.replace(result, report_to=Path(request.report))
    if request.save is not None:
        save_result(result, request.save)
    if request.report is not None:
        from ortgpu.report.html import write_report

        write_report(result, request.report)
    return result


def _defaults_of(request: BenchRequest, spec: InputSpec, progress: Progress | None) -> BenchResult:
    """The same model, inputs (the config's [inputs] too: tune writes the tuned shapes there), batches and
    measurement with ORT's defaults: no config, numpy in/out (what users get)."""
    plain = dataclasses.replace(
        request,
        config=None,
        shapes=dict(spec.shapes),
        dims=dict(spec.dims),
        ranges=dict(spec.ranges),
        npz=spec.npz,
        seed=spec.seed,
        modes=(BenchMode.RUN,),
        all_modes=False,
        provider_options={},
        compare_cpu=False,
        save=None,
        report=None,
        baseline=None,
        against_defaults=False,
    )
    tell = progress or (lambda message, fraction=None: None)
    return run_bench(plain, lambda message, fraction=None: tell(f"ORT defaults: {message}", fraction))
