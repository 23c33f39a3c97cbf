"""What `ortgpu tune` found: every trial with its status and reason, the best one, and the files written."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from ortgpu.ep import ExecutionProvider

__all__ = ["Objective", "TrialRecord", "TrialStatus", "TuneResult", "WrittenFile"]


class Objective(Enum):
    """What the search optimises: a latency percentile (lower is better) or samples per second (higher)."""

    P50 = "p50"
    P95 = "p95"
    P99 = "p99"
    THROUGHPUT = "throughput"

    @property
    def maximize(self) -> bool:
        return self is Objective.THROUGHPUT

    @property
    def unit(self) -> str:
        return "samples/s" if self.maximize else "ms"


class TrialStatus(Enum):
    """How one trial ended. Everything but OK says why in ``TrialRecord.reason``."""

    OK = "ok"  # measured, outputs within tolerance of the fp32 reference, within the memory budget
    PRUNED = "pruned"  # not run: the combination cannot work (known before running), or stopped early as slower
    REFUSED = "refused"  # the session could not do it with these settings (e.g. nodes on the CPU for a CUDA graph)
    REJECTED = "rejected"  # ran, but outputs off the fp32 reference or peak memory over --memory-budget
    FAILED = "failed"  # ORT raised, the process crashed, hung past the time limit or ran out of memory
    DUPLICATE = "duplicate"  # the sampler proposed a configuration already measured: not run again


@dataclass(frozen=True)
class TrialRecord:
    """One trial. ``value`` in the objective's unit (None when not measured); ``per_batch``: batch -> metrics."""

    number: int
    params: dict[str, Any]
    status: TrialStatus
    value: float | None = None
    reason: str | None = None
    per_batch: dict[str, dict[str, float]] = field(default_factory=dict)
    seconds: float = 0.0
    variant: str = "fp32-none"
    gpu_memory_peak_bytes: int | None = None
    host_memory_peak_bytes: int | None = None
    sm_clock_mhz: int | None = None
    max_abs_error: float | None = None
    is_defaults: bool = False


@dataclass(frozen=True)
class WrittenFile:
    path: Path
    sha256: str
    what: str


@dataclass(frozen=True)
class TuneResult:
    """Everything one tune produced; the table and the JSON render from it. ``trials`` are ranked: measured ones
    best first, then the others by trial number. ``speedup``: the defaults' objective against the best's (>1 is
    better, for throughput too)."""

    model: Path
    model_sha256: str
    ep: ExecutionProvider
    objective: Objective
    batches: tuple[int, ...]
    space_size: int
    trials: tuple[TrialRecord, ...]
    best: TrialRecord | None
    defaults: TrialRecord | None
    speedup: float | None
    config_path: Path | None
    files: tuple[WrittenFile, ...]
    journal: Path
    elapsed_s: float
    budget_s: float
    resumed_trials: int = 0
    stopped: str = ""  # why the search ended: budget, trial limit, space exhausted, interrupted
    notes: tuple[str, ...] = ()

    @property
    def measured(self) -> tuple[TrialRecord, ...]:
        return tuple(t for t in self.trials if t.status is TrialStatus.OK)
