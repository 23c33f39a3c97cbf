"""`ortgpu check`: prove a model runs on the requested EP, node by node, with the right numbers."""

from __future__ import annotations

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
    PackageLibrary,
    ParityReport,
    PlacementStatus,
    ReferenceKind,
    Timings,
)
from ortgpu.check.run import CheckRequest, OutputFileError, ReferenceFileError, merge_input_spec, run_check

__all__ = [
    "DEFAULT_TOLERANCES",
    "CheckRequest",
    "CheckResult",
    "GpuMemory",
    "InputSummary",
    "OutputFileError",
    "OutputParity",
    "PackageLibrary",
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
