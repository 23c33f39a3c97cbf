"""What a bench run will do: the request and its checks, the input shapes per batch, and the planned cases.

Shared by every bench backend (:mod:`ortgpu.bench.backend`), so the backends depend on this module and never on
each other or on :mod:`ortgpu.bench.runner`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortgpu.bench.modes import BenchMode, mode_class
from ortgpu.bench.result import BenchCase, CaseStatus
from ortgpu.ep import ExecutionProvider
from ortgpu.errors import BadInputError
from ortgpu.model.inputs import InputSpec, make_inputs
from ortgpu.model.inspect import ModelInfo

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = [
    "DEFAULT_DURATION_S",
    "MAX_CONCURRENCY",
    "SETTLE_TOLERANCE",
    "SETTLE_WINDOW_S",
    "BenchInputError",
    "BenchRequest",
    "Plan",
    "Shapes",
    "make_case",
    "median_ns",
    "plan_cases",
    "resolve_shapes",
    "sample_timeline",
]

DEFAULT_DURATION_S = 2.0
MAX_CONCURRENCY = 1024
SETTLE_WINDOW_S = 0.05  # auto warm-up: each window lasts about this long
SETTLE_TOLERANCE = 0.05  # ... and the last three window medians agree within 5%
_TIMELINE_POINTS = 300


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


def median_ns(values: Sequence[int]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return float(ordered[mid]) if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2.0


@dataclass(frozen=True)
class Plan:
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
class Shapes:
    batch: int
    feeds: dict[str, np.ndarray]
    shapes: dict[str, tuple[int, ...]]
    notes: tuple[str, ...]


def _open_leading(model: ModelInfo) -> bool:
    return any(i.rank and not isinstance(i.shape[0], int) for i in model.inputs)


def resolve_shapes(model: ModelInfo, spec: InputSpec, batches: tuple[int, ...]) -> list[Shapes]:
    if not batches:
        resolved = make_inputs(model, spec)
        batch = resolved.batch
        if batch is None or not _open_leading(model):
            first = next((s for s in resolved.shapes.values() if len(s) >= 2), None)
            batch = first[0] if first else 1
        return [Shapes(batch, resolved.feeds, resolved.shapes, resolved.notes)]
    if not _open_leading(model):
        fixed = ", ".join(f"{i.name} {list(i.shape)}" for i in model.inputs)
        raise BenchInputError(
            f"--batch: every input has a fixed leading dim ({fixed}); the model cannot be batched",
            "drop --batch, or export the model with a dynamic batch dim",
        )
    out = []
    for batch in batches:
        resolved = make_inputs(model, dataclasses.replace(spec, batch=batch))
        out.append(Shapes(batch, resolved.feeds, resolved.shapes, resolved.notes))
    return out


def plan_cases(request: BenchRequest, ep: ExecutionProvider, batches: list[int]) -> list[Plan]:
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
                    plans.append(Plan(current, mode, batch, concurrency, sessions, skip))
    return plans


def sample_timeline(samples: list[int]) -> tuple[float, ...]:
    stride = max(1, math.ceil(len(samples) / _TIMELINE_POINTS))
    return tuple(s / 1e6 for s in samples[::stride])


def make_case(plan: Plan, status: CaseStatus, shapes: Shapes, **fields: Any) -> BenchCase:
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
