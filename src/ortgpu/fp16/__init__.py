"""`ortgpu fp16`: ONNX Runtime's float16 conversion, validated on data, with a keep-list found from measurements."""

from __future__ import annotations

from ortgpu.fp16.convert import Converted, convert_to_fp16, join_kept_chains
from ortgpu.fp16.keeplist import KeepRule, KeptNode
from ortgpu.fp16.result import Attempt, Fp16Result, Sizes, Speed
from ortgpu.fp16.run import SOURCE_SHA_KEY, Fp16Error, Fp16Request, run_fp16

__all__ = [
    "SOURCE_SHA_KEY",
    "Attempt",
    "Converted",
    "Fp16Error",
    "Fp16Request",
    "Fp16Result",
    "KeepRule",
    "KeptNode",
    "Sizes",
    "Speed",
    "convert_to_fp16",
    "join_kept_chains",
    "run_fp16",
]
