"""`ortgpu tune`: search session and provider options, precision and fusions for the fastest correct config."""

from __future__ import annotations

from ortgpu.tune.request import TuneInputError, TuneRequest, parse_budget
from ortgpu.tune.result import Objective, TrialRecord, TrialStatus, TuneResult, WrittenFile
from ortgpu.tune.run import run_tune

__all__ = [
    "Objective",
    "TrialRecord",
    "TrialStatus",
    "TuneInputError",
    "TuneRequest",
    "TuneResult",
    "WrittenFile",
    "parse_budget",
    "run_tune",
]
