"""`ortgpu profile`: where a model's time goes, per op type and node, by provider, from ORT's own profiler."""

from __future__ import annotations

from ortgpu.profile.result import (
    CompareRow,
    CpuNodeTime,
    FusionReport,
    GpuTiming,
    Hint,
    HintKind,
    KernelRow,
    MemcpyReport,
    NodeRow,
    OpRow,
    ProfileResult,
    ProfileRun,
    RunTimes,
    TimelineEntry,
)
from ortgpu.profile.run import OutputPathError, ProfileRequest, compare_runs, run_profile

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
    "OutputPathError",
    "ProfileRequest",
    "ProfileResult",
    "ProfileRun",
    "RunTimes",
    "TimelineEntry",
    "compare_runs",
    "run_profile",
]
