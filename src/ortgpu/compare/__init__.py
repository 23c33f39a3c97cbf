"""`ortgpu compare A B`: two runs of a model on the same data — two EPs, two models, saved outputs, another
Python's onnxruntime or a package's C library — outputs, latency and library needs, side by side."""

from __future__ import annotations

from ortgpu.compare.child import ChildRun, InterpreterError, OtherOrtError, run_in_python
from ortgpu.compare.needs import NeedsDiff, PackageSource, needs_diff
from ortgpu.compare.result import CompareResult, LatencyDiff, SideKind, SideReport
from ortgpu.compare.run import CompareError, CompareRequest, run_compare

__all__ = [
    "ChildRun",
    "CompareError",
    "CompareRequest",
    "CompareResult",
    "InterpreterError",
    "LatencyDiff",
    "NeedsDiff",
    "OtherOrtError",
    "PackageSource",
    "SideKind",
    "SideReport",
    "needs_diff",
    "run_compare",
    "run_in_python",
]
