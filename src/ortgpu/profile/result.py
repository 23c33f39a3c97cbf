"""What `ortgpu profile` measured: one frozen result object; the table, the JSON and the HTML report render from it."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from ortgpu.ep import ExecutionProvider
from ortgpu.placement import PlacementReport

__all__ = [
    "CompareRow",
    "CpuNodeTime",
    "FusionReport",
    "GpuTiming",
    "Hint",
    "HintKind",
    "KernelRow",
    "MemcpyReport",
    "NodeRow",
    "OpRow",
    "ProfileResult",
    "ProfileRun",
    "RunTimes",
    "TimelineEntry",
]


class GpuTiming(Enum):
    """What a node's time means on a GPU EP."""

    SYNC = "sync"  # CUDA_LAUNCH_BLOCKING=1 in a child process: each node's time includes its GPU work
    ASYNC = "async"  # as deployed: node times are host-side (launching kernels); the GPU works behind them


@dataclass(frozen=True)
class OpRow:
    """One op type on one provider, over the profiled runs (times in microseconds)."""

    op_type: str
    provider: str
    nodes: int  # distinct nodes of this op on this provider
    calls: int  # kernel calls recorded over the profiled runs
    total_us: float  # over all profiled runs
    per_run_us: float  # total / runs profiled
    mean_us: float  # per call
    share: float | None  # of the node time of a run; None for If/Loop/Scan (their time is their subgraph's)
    contains_subgraph: bool = False


@dataclass(frozen=True)
class NodeRow:
    """One node (as ORT ran it, after its graph optimisation) on one provider."""

    name: str
    op_type: str
    provider: str
    calls: int
    total_us: float
    per_run_us: float
    mean_us: float
    share: float | None
    contains_subgraph: bool = False


@dataclass(frozen=True)
class KernelRow:
    """A CUDA kernel ORT recorded (builds with CUDA profiling only): device time per run, and the node it ran for."""

    kernel: str
    node: str
    op_type: str
    calls: int
    total_us: float
    per_run_us: float


@dataclass(frozen=True)
class CpuNodeTime:
    """A node that ran on the CPU EP inside a GPU run, with ORT's reason for leaving it there."""

    name: str
    op_type: str
    per_run_us: float
    share: float
    reason: str | None  # "no-kernel", "cpu-preferred", "unknown", None when the placement log had no entry


@dataclass(frozen=True)
class MemcpyReport:
    """The copies ORT inserted between the device EP and the CPU, and what they cost."""

    nodes: int
    calls_per_run: float
    per_run_us: float
    share: float
    by_node: tuple[NodeRow, ...]
    serves: tuple[str, ...]  # the CPU nodes the copies feed or drain (from the optimised graph or the placement)


@dataclass(frozen=True)
class FusionReport:
    """The graph as exported against the graph ORT ran (its optimised model, written by the session)."""

    available: bool
    note: str
    original_nodes: int = 0
    optimized_nodes: int = 0
    original_ops: dict[str, int] = field(default_factory=dict)
    optimized_ops: dict[str, int] = field(default_factory=dict)
    removed: dict[str, int] = field(default_factory=dict)  # op -> nodes fewer after optimisation
    created: dict[str, int] = field(default_factory=dict)  # op -> nodes more (fused ops, layout changes)

    @property
    def fused_away(self) -> int:
        return self.original_nodes - self.optimized_nodes


class HintKind(Enum):
    DOMINANT_OP = "dominant-op"
    MEMCPY = "memcpy"
    CPU_IN_GPU_RUN = "cpu-in-gpu-run"
    OUTSIDE_NODES = "outside-nodes"
    NO_FUSION = "no-fusion"
    TIMING = "timing"


@dataclass(frozen=True)
class Hint:
    kind: HintKind
    message: str


@dataclass(frozen=True)
class RunTimes:
    """Wall time of each profiled run as ORT recorded it (``model_run``), in microseconds, profiler on."""

    runs: int
    mean_us: float
    median_us: float
    min_us: float
    node_us_per_run: float  # node time inside a run (subgraph owners not double counted), mean
    node_coverage: float = 0.0  # node time / run time, the median over the runs (one stalled run does not move it)


@dataclass(frozen=True)
class TimelineEntry:
    """One node of the run drawn in the report's timeline (offsets from the run's start)."""

    name: str
    op_type: str
    provider: str
    start_us: float
    dur_us: float


@dataclass(frozen=True)
class ProfileRun:
    """One profiled session: a config, the EP it ran on, and where its time went."""

    label: str  # "defaults" or the config file's name
    config_path: Path | None
    ep: ExecutionProvider
    ep_reason: str | None
    providers: tuple[str, ...]
    provider_options: dict[str, str]
    session_options: dict[str, object]
    gpu_timing: GpuTiming | None  # None on the CPU EP
    timing_note: str
    warmup_runs: int
    runs_profiled: int
    run_times: RunTimes
    ops: tuple[OpRow, ...]  # heaviest first
    nodes: tuple[NodeRow, ...]  # heaviest first, at most ``top``
    node_count: int  # distinct nodes that ran
    provider_share: dict[str, float]  # provider -> share of node time (Memcpy counted apart under "Memcpy")
    memcpy: MemcpyReport
    cpu_in_gpu: tuple[CpuNodeTime, ...]
    cpu_in_gpu_share: float
    kernels: tuple[KernelRow, ...]
    kernels_note: str | None
    fusion: FusionReport
    placement: PlacementReport | None
    hints: tuple[Hint, ...]
    timeline: tuple[TimelineEntry, ...]  # the median profiled run
    trace: Path
    creation_s: float
    input_shapes: dict[str, tuple[int, ...]]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class CompareRow:
    """One op type in two configs: time per run and share in each (None where the op did not run)."""

    op_type: str
    base_per_run_us: float | None
    base_share: float | None
    other_per_run_us: float | None
    other_share: float | None

    @property
    def delta_us(self) -> float:
        return (self.other_per_run_us or 0.0) - (self.base_per_run_us or 0.0)


@dataclass(frozen=True)
class ProfileResult:
    """`ortgpu profile`: one profiled run, or two configs side by side."""

    model: Path
    model_sha256: str
    model_node_count: int
    ort_version: str
    runs: tuple[ProfileRun, ...]
    comparison: tuple[CompareRow, ...] = ()
    report: Path | None = None
    elapsed_s: float = 0.0

    @property
    def main(self) -> ProfileRun:
        return self.runs[0]
