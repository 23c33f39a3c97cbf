"""`ortgpu inspect`: what a model takes and returns, what it is made of, and which nodes the CUDA EP takes."""

from __future__ import annotations

from ortgpu.inspect.result import (
    CustomOp,
    DimUse,
    ExternalFile,
    InitializerInfo,
    InspectResult,
    KernelCoverage,
    KernelSource,
    KernelStatus,
    NodeOffEp,
    OpCount,
    OpOrigin,
    SubgraphInfo,
    SymbolicDim,
    TensorReport,
)
from ortgpu.inspect.run import InspectRequest, inspect_model_file

__all__ = [
    "CustomOp",
    "DimUse",
    "ExternalFile",
    "InitializerInfo",
    "InspectRequest",
    "InspectResult",
    "KernelCoverage",
    "KernelSource",
    "KernelStatus",
    "NodeOffEp",
    "OpCount",
    "OpOrigin",
    "SubgraphInfo",
    "SymbolicDim",
    "TensorReport",
    "inspect_model_file",
]
