"""Honest latency and throughput for ONNX Runtime: timing modes, warm-up, stats, archives and baselines."""

from __future__ import annotations

# Submodules import numpy / onnxruntime inside their functions: importing the package stays light.
from ortgpu.bench.archive import BaselineError, compare_to_baseline, load_result, save_result
from ortgpu.bench.modes import BenchMode, ModeRefusedError
from ortgpu.bench.result import BenchCase, BenchResult, CaseStatus, Hint, HintKind
from ortgpu.bench.runner import BenchInputError, BenchRequest, run_bench
from ortgpu.bench.stats import LatencyStats, compute_stats

__all__ = [
    "BaselineError",
    "BenchCase",
    "BenchInputError",
    "BenchMode",
    "BenchRequest",
    "BenchResult",
    "CaseStatus",
    "Hint",
    "HintKind",
    "LatencyStats",
    "ModeRefusedError",
    "compare_to_baseline",
    "compute_stats",
    "load_result",
    "run_bench",
    "save_result",
]
