"""Execution providers: the closed set ortgpu drives, their ONNX Runtime names, and parsing a user's spelling."""

from __future__ import annotations

import difflib
from enum import Enum

from ortgpu.errors import ConfigError

__all__ = ["ExecutionProvider"]


class ExecutionProvider(Enum):
    """The execution providers ortgpu drives."""

    CPU = "cpu"
    CUDA = "cuda"
    TENSORRT = "tensorrt"

    @property
    def ort_name(self) -> str:
        return {
            ExecutionProvider.CPU: "CPUExecutionProvider",
            ExecutionProvider.CUDA: "CUDAExecutionProvider",
            ExecutionProvider.TENSORRT: "TensorrtExecutionProvider",
        }[self]

    @property
    def is_gpu(self) -> bool:
        return self is not ExecutionProvider.CPU

    @classmethod
    def from_ort_name(cls, name: str) -> ExecutionProvider | None:
        return next((ep for ep in cls if ep.ort_name == name), None)

    @classmethod
    def parse(cls, text: str) -> ExecutionProvider:
        """ "cuda", "CUDA" or "CUDAExecutionProvider" -> CUDA; anything else is a ConfigError with a did-you-mean."""
        value = text.strip()
        for ep in cls:
            if value.lower() in (ep.value, ep.ort_name.lower()):
                return ep
        close = difflib.get_close_matches(value.lower(), [e.value for e in cls], n=1, cutoff=0.6)
        raise ConfigError(
            f"unknown execution provider {text!r}" + (f" (did you mean {close[0]!r}?)" if close else ""),
            "use one of: " + ", ".join(e.value for e in cls),
        )
