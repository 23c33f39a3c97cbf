"""`ortgpu check`: prove a model runs on the requested EP, node by node, with the right numbers."""

from __future__ import annotations

from ortgpu.capi.package_run import CApiLibrary
from ortgpu.check.backend import CheckBackend
from ortgpu.check.parity import (
    DEFAULT_TOLERANCES,
    OutputParity,
    ParityStatus,
    Precision,
    Tolerance,
    ToleranceError,
    compare_output,
    parse_tolerances,
)
from ortgpu.check.result import (
    CheckResult,
    GpuMemory,
    InputSummary,
    ParityReport,
    PlacementStatus,
    ReferenceKind,
    Timings,
)
from ortgpu.check.run import CheckRequest, OutputFileError, ReferenceFileError, merge_input_spec, run_check

__all__ = [
    "DEFAULT_TOLERANCES",
    "CApiLibrary",
    "CheckBackend",
    "CheckRequest",
    "CheckResult",
    "GpuMemory",
    "InputSummary",
    "OutputFileError",
    "OutputParity",
    "ParityReport",
    "ParityStatus",
    "PlacementStatus",
    "Precision",
    "ReferenceFileError",
    "ReferenceKind",
    "Timings",
    "Tolerance",
    "ToleranceError",
    "compare_output",
    "merge_input_spec",
    "parse_tolerances",
    "run_check",
]
