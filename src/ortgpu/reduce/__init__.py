"""`ortgpu debug reduce`: cut a failing model down to the smallest subgraph that still fails."""

from __future__ import annotations

from ortgpu.reduce.conditions import Condition, ConditionKind, Outcome, condition_for
from ortgpu.reduce.run import ReduceError, ReduceRequest, ReduceResult, Step, run_reduce

__all__ = [
    "Condition",
    "ConditionKind",
    "Outcome",
    "ReduceError",
    "ReduceRequest",
    "ReduceResult",
    "Step",
    "condition_for",
    "run_reduce",
]
