"""Batch inference over a dataset with verified sessions: local worker processes per GPU, or Ray Data actors."""

from __future__ import annotations

from ortgpu.infer.dataset import InferInputError, SourceKind
from ortgpu.infer.result import Backend, BadItem, InferResult
from ortgpu.infer.run import InferRequest, run_infer

__all__ = ["Backend", "BadItem", "InferInputError", "InferRequest", "InferResult", "SourceKind", "run_infer"]
