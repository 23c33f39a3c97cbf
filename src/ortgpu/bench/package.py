"""`bench --package`: time the model through a package's own ONNX Runtime C library, in child processes.

Each case is one child process of :func:`ortgpu.capi.runner.run_package_model` (a fresh session: its creation
and first run are the case's cold start), doing the warm-up and the timed runs back to back; the runs come back
as nanoseconds and go through the same LatencyStats, hints and BenchResult as the wheel path. Only mode ``run``
on one thread: a timed run is ``Run`` with its outputs copied to the host and released, as a C/C++ application's
Run. ``--duration`` and ``--warmup auto`` need the time of one run first, so such a case starts with a short
probe child (``_PROBE_RUNS`` runs) and is then measured by count.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ortgpu.bench.modes import mode_class
from ortgpu.bench.result import BenchCase, CaseStatus, ColdStart, WarmupReport
from ortgpu.bench.runner import (
    _SETTLE_TOLERANCE,
    _SETTLE_WINDOW_S,
    DEFAULT_DURATION_S,
    BenchInputError,
    BenchRequest,
    Measured,
    Progress,
    _case,
    _median,
    _Plan,
    _plan,
    _Shapes,
    _timeline,
)
from ortgpu.bench.stats import MIN_RUNS, compute_stats

if TYPE_CHECKING:  # pragma: no cover
    from ortgpu.capi.library_locator import LocatedLibrary
    from ortgpu.capi.runner import PackageRunResult
    from ortgpu.check.result import PackageLibrary
    from ortgpu.config import Config, ExecutionProvider
    from ortgpu.model.inspect import ModelInfo

__all__ = ["measure_through_package", "validate_package_request"]

_PROBE_RUNS = 10  # timed runs of the probe child: enough for a median that sizes the warm-up and the measurement
_AUTO_WARMUP_S = 0.5  # --warmup auto: warm-up runs filling about this long (or max_warmup_s when shorter)
_MAX_RUNS = 1_000_000  # a --duration on a microsecond model: the child sends every latency back as JSON
_CHILD_TIMEOUT_S = 600.0  # session creation and first run (a cuDNN EXHAUSTIVE search takes minutes, not hours)
_UNKNOWN_RUN_BOUND_S = 1.0  # per run, on top, when no probe measured a run (--iterations and --warmup N given)


def validate_package_request(request: BenchRequest) -> None:
    """Refuse (exit 2, one line) what a package's C library cannot be timed with: modes other than run (unless
    every mode was asked for: they are then skipped with the reason), several threads or sessions."""
    if not request.all_modes:
        for mode in request.modes:
            reason = mode_class(mode).package_refusal()
            if reason is not None:
                raise BenchInputError(
                    f"--mode {mode.value} with --package: {reason}",
                    "use --mode run with --package, or drop --package to time it through the wheel",
                )
    if max(request.concurrency) > 1 or request.sessions > 1:
        given = (
            f"--concurrency {max(request.concurrency)}"
            if max(request.concurrency) > 1
            else f"--sessions {request.sessions}"
        )
        raise BenchInputError(
            f"{given} with --package: a package's C library is timed on one thread with one session per case",
            "drop --concurrency / --sessions with --package, or drop --package to time threads through the wheel",
        )


def measure_through_package(
    request: BenchRequest,
    package: Path,
    config: Config,
    model: ModelInfo,
    by_batch: Mapping[int, _Shapes],
    tell: Progress,
) -> Measured:
    """Every planned case through the C library in ``package``, each in its own child process.

    Without ``request.ep``: CUDA when a driver sees a GPU and the library can enable it, else CPU with the reason.
    A provider asked for that cannot load raises ProviderLoadError (exit 3, ORT's own text): no fallback, since
    the numbers would be CPU numbers under a GPU label. A run that fails (e.g. out of memory at a large batch)
    fails its case; the other cases still run.
    """
    from ortgpu.capi.binding import ProviderLoadError
    from ortgpu.capi.library_locator import locate_library
    from ortgpu.check.package import default_gpu_reason, default_package_ep, package_session_settings
    from ortgpu.config import ExecutionProvider

    settings = package_session_settings(config)  # a setting the C API cannot apply: exit 2 before any run
    tell(f"finding ONNX Runtime's C library in {package}", None)
    with locate_library(package) as located:
        args = (located, request, config, model, by_batch, settings, tell)
        if request.ep is not None:
            return _measure(*args, request.ep, request.ep_reason or "asked for with --ep", auto_ep=False)
        ep, reason = default_package_ep()
        if ep is ExecutionProvider.CPU:
            return _measure(*args, ep, reason or "CPU", auto_ep=True)
        try:
            reason = default_gpu_reason(located.member)
            return _measure(*args, ep, reason, auto_ep=True)
        except ProviderLoadError as exc:
            reason = default_gpu_reason(located.member, exc.message)
            return _measure(*args, ExecutionProvider.CPU, reason, auto_ep=True)


def _measure(
    located: LocatedLibrary,
    request: BenchRequest,
    config: Config,
    model: ModelInfo,
    by_batch: Mapping[int, _Shapes],
    settings: Mapping[str, object],
    tell: Progress,
    ep: ExecutionProvider,
    ep_reason: str,
    auto_ep: bool,
) -> Measured:
    from ortgpu.bench.environment import collect_package_environment
    from ortgpu.config import ExecutionProvider
    from ortgpu.session.options import effective_provider_options

    options = effective_provider_options(ep, config, request.provider_options, request.device_id)
    plans = _plan(request, ep, list(by_batch))
    cases: list[BenchCase] = []
    runs: dict[ExecutionProvider, PackageRunResult] = {}  # the first run per EP: what the library said
    interrupted = False
    for index, plan in enumerate(plans):
        shapes = by_batch[plan.batch]
        if plan.skip is not None:
            cases.append(_case(plan, CaseStatus.SKIPPED, shapes, reason=plan.skip))
            continue
        label = f"[{index + 1}/{len(plans)}] {plan.ep.value}/{plan.mode.value} batch {shapes.batch}"
        tell(f"{label} through {located.member}", index / len(plans))
        try:
            case, run = _run_case(located, request, plan, shapes, model, options if plan.ep is ep else {}, settings)
        except KeyboardInterrupt:
            reason = "the runs of its child process were lost"
            cases.append(_case(plan, CaseStatus.INTERRUPTED, shapes, reason=reason))
            interrupted = True
            break
        cases.append(case)
        if run is not None:
            runs.setdefault(plan.ep, run)
    tell("recording the environment", 1.0)
    main = runs.get(ep)
    library = _library(located, main or next(iter(runs.values()), None))
    active = tuple(dict.fromkeys([*main.appended_providers, ExecutionProvider.CPU.ort_name])) if main else ()
    environment = collect_package_environment(
        ep.value,
        request.device_id,
        library,
        active,
        # every active provider, the CPU EP's empty options included, as the wheel's get_provider_options() has it
        {name: dict(main.provider_options.get(name, {})) for name in active} if main else {},
        dict(config.session),
    )
    return Measured(ep, ep_reason, auto_ep, tuple(cases), interrupted, environment, library)


def _run_case(
    located: LocatedLibrary,
    request: BenchRequest,
    plan: _Plan,
    shapes: _Shapes,
    model: ModelInfo,
    options: Mapping[str, str],
    settings: Mapping[str, object],
) -> tuple[BenchCase, PackageRunResult | None]:
    """One case: a probe child when a run's time is needed first, then the measuring child."""
    from ortgpu.capi.binding import OrtInputError, OrtRuntimeError
    from ortgpu.capi.runner import PackageRunError

    def child(iterations: int, timeout_s: float) -> PackageRunResult:
        return _child(located, model, shapes, plan.ep, options, settings, iterations, timeout_s)

    try:
        typical: float | None = None
        if request.iterations is None or request.warmup is None:
            probe = child(_PROBE_RUNS, _CHILD_TIMEOUT_S + _PROBE_RUNS * _UNKNOWN_RUN_BOUND_S)
            typical = max(statistics.median(probe.latencies_ns) / 1e9, 1e-7)
        warm = request.warmup if request.warmup is not None else _auto_warmup_runs(typical, request.max_warmup_s)
        count = request.iterations
        if count is None:
            count = _runs_for(request.duration_s or DEFAULT_DURATION_S, typical)
        per_run = 3 * typical if typical is not None else _UNKNOWN_RUN_BOUND_S
        # the warm-up runs are timed too (and dropped): their spread tells whether --warmup auto settled
        run = child(warm + count, _CHILD_TIMEOUT_S + (warm + count) * per_run)
    except (OrtInputError, OrtRuntimeError, PackageRunError) as exc:
        status = getattr(exc, "status", None)
        if isinstance(exc, OrtRuntimeError) and status is not None and status.function != "Run":
            raise  # the session cannot be created: every case would fail the same way
        return _case(plan, CaseStatus.FAILED, shapes, reason=exc.one_line()), None
    warm_ns, timed_ns = run.latencies_ns[:warm], run.latencies_ns[warm:]
    stats = compute_stats(timed_ns, shapes.batch, sum(timed_ns) / 1e9)  # the child's loop does nothing else
    warmup = WarmupReport(
        runs=warm,
        seconds=sum(warm_ns) / 1e9,
        settled=True if request.warmup is not None else _settled(warm_ns, typical),
        policy="count" if request.warmup is not None else "auto",
    )
    cold = ColdStart(run.session_creation_s, session_reused=False, first_run_ms=run.first_run_s * 1e3)
    case = _case(
        plan, CaseStatus.OK, shapes, stats=stats, warmup=warmup, cold=cold, timeline_ms=_timeline(list(timed_ns))
    )
    return case, run


def _child(
    located: LocatedLibrary,
    model: ModelInfo,
    shapes: _Shapes,
    ep: ExecutionProvider,
    options: Mapping[str, str],
    settings: Mapping[str, object],
    iterations: int,
    timeout_s: float,
) -> PackageRunResult:
    from ortgpu.capi.runner import run_package_model
    from ortgpu.session.options import device_of

    return run_package_model(
        located,
        model.path,
        shapes.feeds,
        ep.value,
        dict(options),
        device_of(options) if ep.is_gpu else 0,
        iterations=iterations,
        warmup=0,
        profile=False,  # ORT's verbose log and profiler slow the session down: never while timing
        timeout_s=timeout_s,
        session_settings=settings,
    )


def _window(typical_s: float) -> int:
    """Runs per warm-up window, as the wheel path's auto warm-up counts them (windows of ~50 ms)."""
    return max(1, min(10_000, int(_SETTLE_WINDOW_S / typical_s)))


def _auto_warmup_runs(typical_s: float | None, max_s: float) -> int:
    """--warmup auto: runs filling ``_AUTO_WARMUP_S`` (``max_s`` when shorter), at least three windows."""
    typical = typical_s or 1e-7
    budget = min(max_s, _AUTO_WARMUP_S)
    return min(_MAX_RUNS, max(3 * _window(typical), math.ceil(budget / typical)))


def _runs_for(duration_s: float, typical_s: float | None) -> int:
    """--duration S as a run count from the probe's median run (at least MIN_RUNS)."""
    return min(_MAX_RUNS, max(MIN_RUNS, math.ceil(duration_s / (typical_s or 1e-7))))


def _settled(warm_ns: Sequence[int], typical_s: float | None) -> bool:
    """The wheel path's rule on the timed warm-up runs: the medians of the last three windows agree within 5%."""
    size = _window(typical_s or 1e-7)
    medians = [_median(warm_ns[i : i + size]) for i in range(0, len(warm_ns) - size + 1, size)]
    last = medians[-3:]
    return len(last) == 3 and (max(last) - min(last)) <= _SETTLE_TOLERANCE * min(last)


def _library(located: LocatedLibrary, run: PackageRunResult | None) -> PackageLibrary:
    """The library as check --package records it; from its file name when no child ever answered."""
    from ortgpu.capi.library_locator import SourceKind
    from ortgpu.check.result import PackageLibrary

    if run is None:
        path = located.path if located.kind is SourceKind.FILE else Path(located.source) / located.member
        return PackageLibrary(located.source, path, located.version or "unknown", 0, None, (), 0.0)
    return PackageLibrary.from_run(located.source, run)
