"""The bench result objects (one frozen dataclass tree) and their exact rebuild from saved JSON."""

from __future__ import annotations

import dataclasses
import enum
import math
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ortgpu.bench import environment
from ortgpu.bench.clocks import GpuClocks
from ortgpu.bench.environment import Environment
from ortgpu.bench.modes import BenchMode
from ortgpu.bench.stats import LatencyStats
from ortgpu.capi.package_run import CApiLibrary
from ortgpu.ep import ExecutionProvider

__all__ = [
    "BaselineComparison",
    "BaselineVerdict",
    "BenchCase",
    "BenchResult",
    "BenchSettings",
    "CaseComparison",
    "CaseKey",
    "CaseStatus",
    "ColdStart",
    "Hint",
    "HintKind",
    "ModelSummary",
    "WarmupReport",
    "from_jsonable",
]


class CaseStatus(enum.Enum):
    """What happened to one case. Skipped and failed cases carry the reason."""

    OK = "ok"
    SKIPPED = "skipped"  # not run: the combination cannot work here (reason says why)
    FAILED = "failed"  # ONNX Runtime raised while preparing or running it (reason holds the error)
    INTERRUPTED = "interrupted"  # Ctrl-C: stats cover the runs that finished


class HintKind(enum.Enum):
    """The kinds of advice a bench can give."""

    UNSTABLE = "unstable"
    WARMUP_UNSETTLED = "warmup-unsettled"
    LAUNCH_BOUND = "launch-bound"
    COPY_BOUND = "copy-bound"
    GPU_SLOWER_THAN_CPU = "gpu-slower-than-cpu"
    CPU_ONLY = "cpu-only"
    FAILED = "failed"
    INTERRUPTED = "interrupted"


class BaselineVerdict(enum.Enum):
    """A case against its baseline."""

    REGRESSED = "regressed"
    IMPROVED = "improved"
    SAME = "same"  # within the threshold or within the baseline's own spread


@dataclass(frozen=True)
class CaseKey:
    """What identifies a case across runs (baseline matching)."""

    ep: str
    mode: str
    batch: int
    concurrency: int
    sessions: int

    @property
    def label(self) -> str:
        text = f"{self.ep}/{self.mode} batch {self.batch}"
        if self.concurrency > 1 or self.sessions > 1:
            text += f" x{self.concurrency} threads"
            if self.sessions > 1:
                text += f" on {self.sessions} sessions"
        return text


@dataclass(frozen=True)
class WarmupReport:
    """Untimed runs before measuring. ``settled``: the last windows agreed (auto) or a count was given."""

    runs: int
    seconds: float
    settled: bool
    policy: str  # "auto" or "count"
    clocks: GpuClocks | None = None  # GPU cases: the SM clock around the warm-up and after the measurement


@dataclass(frozen=True)
class ColdStart:
    """Cold-start costs, reported apart from the steady state.

    ``session_creation_s``: creating the session this case ran on (``session_reused``: it was created for an
    earlier case). ``first_run_ms``: the first run of this case (new shape, binding or graph capture).
    """

    session_creation_s: float | None
    session_reused: bool
    first_run_ms: float | None


@dataclass(frozen=True)
class BenchCase:
    """One measured (or skipped) combination of EP, mode, batch and concurrency."""

    ep: ExecutionProvider
    mode: BenchMode
    batch: int
    concurrency: int
    sessions: int
    status: CaseStatus
    reason: str | None = None
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    stats: LatencyStats | None = None
    warmup: WarmupReport | None = None
    cold: ColdStart | None = None
    gpu_memory_used_bytes: int | None = None
    provider_options: dict[str, str] = field(default_factory=dict)
    speedup_vs_cpu: float | None = None  # CPU EP p50 / this p50 at the same batch and concurrency
    timeline_ms: tuple[float, ...] = ()  # up to a few hundred latencies in run order (for drift plots)
    cpu_per_wall: float | None = None  # process CPU seconds per wall second over the timed runs (None: not known)
    cpu_ms_per_run: tuple[float, ...] = ()  # process CPU ms per run, one value per slice (~1/8 of 0.1 s) of runs
    # [session] free-dim overrides the case's own session was built with (CUDA graph: the shapes it captures)
    fixed_dims: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def key(self) -> CaseKey:
        return CaseKey(self.ep.value, self.mode.value, self.batch, self.concurrency, self.sessions)

    @property
    def measured(self) -> bool:
        return self.stats is not None and self.status in (CaseStatus.OK, CaseStatus.INTERRUPTED)

    @property
    def latency(self) -> LatencyStats:
        """``stats`` of a case known to have them (callers pick cases by ``measured`` or ``stats`` first)."""
        if self.stats is None:
            raise ValueError(f"case {self.key.label} has no latency statistics ({self.status.value})")
        return self.stats


@dataclass(frozen=True)
class Hint:
    """Advice drawn from the measurements; ``case`` names the case it comes from, when one."""

    kind: HintKind
    message: str
    case: str | None = None


@dataclass(frozen=True)
class ModelSummary:
    """The benchmarked model as a saved result needs it: identity (sha256) and a short description."""

    path: Path
    sha256: str
    size_bytes: int
    node_count: int
    inputs: tuple[str, ...]  # "image float32 [batch, 3, 32, 32]"
    outputs: tuple[str, ...]


@dataclass(frozen=True)
class BenchSettings:
    """What was asked, after defaults: enough to re-run the same bench."""

    modes: tuple[BenchMode, ...]
    batches: tuple[int, ...]
    concurrency: tuple[int, ...]
    sessions: int
    warmup: int | None  # None: until stable
    iterations: int | None
    duration_s: float | None
    compare_cpu: bool
    device_id: int
    config: Path | None = None


@dataclass(frozen=True)
class CaseComparison:
    """One case against the baseline's case with the same key. Deltas are relative ((new - old) / old)."""

    key: CaseKey
    baseline_p50_ms: float
    p50_ms: float
    p50_delta: float
    baseline_p95_ms: float
    p95_ms: float
    p95_delta: float
    noise_ms: float  # the baseline's own spread (MAD x 1.4826: a standard deviation that stalls do not inflate)
    verdict: BaselineVerdict
    reasons: tuple[str, ...] = ()
    # the statistical test on the latencies both runs kept (method "none": an old baseline without them)
    method: str = "none"
    shift: float | None = None  # median(new) / median(baseline) - 1
    shift_ci: tuple[float, float] | None = None  # 95% bootstrap interval of the shift
    p_value: float | None = None  # one-sided Mann-Whitney U, new slower than the baseline
    confidence: float | None = None  # bootstrap probability that the shift exceeds max_regression
    remeasured: tuple[float, ...] = ()  # shifts of re-measures of a case that first looked regressed
    cpu_share: tuple[float, float] | None = None  # CPU seconds per wall second: baseline, this run (CPU EP)
    cpu_shift: float | None = None  # CPU EP: median CPU time per run, this run / baseline - 1
    cpu_p_value: float | None = None  # one-sided Mann-Whitney U on the CPU time per run


@dataclass(frozen=True)
class BaselineComparison:
    """This run against a saved one: per-case deltas, what could not be matched, what changed around it."""

    baseline: Path
    baseline_date: str
    max_regression: float  # fraction: 0.10 for "10%"
    cases: tuple[CaseComparison, ...]
    only_in_run: tuple[str, ...]
    only_in_baseline: tuple[str, ...]
    environment_changes: tuple[str, ...]

    @property
    def regressed(self) -> bool:
        return any(c.verdict is BaselineVerdict.REGRESSED for c in self.cases)


@dataclass(frozen=True)
class BenchResult:
    """Everything one ``ortgpu bench`` produced; the table, the JSON, the saved file and the report use it.

    ``package``: the ONNX Runtime C library the cases were timed through (``--package``); None for the wheel.
    """

    model: ModelSummary
    ep: ExecutionProvider
    ep_reason: str
    settings: BenchSettings
    cases: tuple[BenchCase, ...]
    hints: tuple[Hint, ...]
    environment: Environment
    input_notes: tuple[str, ...] = ()
    interrupted: bool = False
    elapsed_s: float = 0.0
    comparison: BaselineComparison | None = None
    saved_to: Path | None = None
    report_to: Path | None = None
    package: CApiLibrary | None = None
    defaults: BenchResult | None = None  # --against-defaults: the same bench with ORT's defaults, measured after

    def speedups_over_defaults(self) -> dict[str, float]:
        """Case label -> the defaults' p50 at the same batch / this case's p50 (with --against-defaults)."""
        if self.defaults is None:
            return {}
        base = {c.batch: c.latency.p50_ms for c in self.defaults.measured_cases}
        return {
            c.key.label: base[c.batch] / c.latency.p50_ms
            for c in self.measured_cases
            if c.batch in base and c.latency.p50_ms > 0
        }

    @property
    def failed_cases(self) -> tuple[BenchCase, ...]:
        return tuple(c for c in self.cases if c.status is CaseStatus.FAILED)

    @property
    def measured_cases(self) -> tuple[BenchCase, ...]:
        return tuple(c for c in self.cases if c.measured)


# ------------------------------------------------------------------------------------------------ rebuild


def _namespace() -> dict[str, Any]:
    # Names the string annotations refer to.
    names = {name: getattr(environment, name) for name in environment.__all__}
    names.update(globals())
    names["ExecutionProvider"] = ExecutionProvider
    return names


def from_jsonable(tp: Any, data: Any, _ns: dict[str, Any] | None = None) -> Any:
    """Rebuild a value of type ``tp`` (a dataclass, enum, tuple, dict, Path, scalar, optional) from plain JSON.

    Raises ValueError naming the field that does not fit.
    """
    ns = _ns if _ns is not None else _namespace()
    if tp is Any:
        return data
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if data is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return from_jsonable(arg, data, ns)
            except ValueError as exc:
                errors.append(str(exc))
        raise ValueError("; ".join(errors) or f"{data!r} fits none of {tp}")
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if not isinstance(data, dict):
            raise ValueError(f"{tp.__name__}: expected an object, got {type(data).__name__}")
        hints = typing.get_type_hints(tp, globalns=ns)
        kwargs = {}
        for f in dataclasses.fields(tp):
            if f.name not in data:
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                    raise ValueError(f"{tp.__name__}: missing field {f.name!r}")
                continue
            try:
                kwargs[f.name] = from_jsonable(hints[f.name], data[f.name], ns)
            except ValueError as exc:
                raise ValueError(f"{tp.__name__}.{f.name}: {exc}") from None
        return tp(**kwargs)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(data)
        except ValueError:
            raise ValueError(f"{data!r} is not a {tp.__name__}") from None
    if tp is Path:
        if not isinstance(data, str):
            raise ValueError(f"expected a path, got {data!r}")
        return Path(data)
    if tp is float:
        if isinstance(data, bool) or not isinstance(data, (int, float, str)):
            raise ValueError(f"expected a number, got {data!r}")
        value = float(data)  # "nan" / "inf" as written by to_jsonable
        if isinstance(data, str) and math.isfinite(value):
            raise ValueError(f"expected a number, got {data!r}")
        return value
    if tp in (int, str, bool):
        if not isinstance(data, tp) or (tp is int and isinstance(data, bool)):
            raise ValueError(f"expected {tp.__name__}, got {data!r}")
        return data
    if origin is tuple:
        if not isinstance(data, list):
            raise ValueError(f"expected a list, got {type(data).__name__}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(from_jsonable(args[0], item, ns) for item in data)
        if len(args) != len(data):
            raise ValueError(f"expected {len(args)} items, got {len(data)}")
        return tuple(from_jsonable(a, item, ns) for a, item in zip(args, data, strict=True))
    if origin in (dict, Mapping):
        if not isinstance(data, dict):
            raise ValueError(f"expected an object, got {type(data).__name__}")
        key_type, value_type = args or (str, Any)
        return {from_jsonable(key_type, k, ns): from_jsonable(value_type, v, ns) for k, v in data.items()}
    raise ValueError(f"cannot rebuild type {tp!r}")
