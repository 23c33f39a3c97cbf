"""What `ortgpu compare` found: one frozen result the table, the JSON and the HTML report render from."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from ortgpu.accuracy.layerwise import LayerwiseReport
from ortgpu.accuracy.nonfinite import NonFinite
from ortgpu.check.parity import OutputParity
from ortgpu.compare.needs import NeedsDiff
from ortgpu.config import ExecutionProvider

__all__ = ["CompareResult", "LatencyDiff", "SideKind", "SideReport"]


class SideKind(Enum):
    MODEL = "model"  # a model run by this interpreter's onnxruntime
    PYTHON = "python"  # a model run by another interpreter's onnxruntime (--python)
    PACKAGE = "package"  # a model run through a release archive's C library (--package)
    OUTPUTS = "outputs"  # outputs saved in an .npz


@dataclass(frozen=True)
class SideReport:
    """One side of the comparison: what ran, where, with which onnxruntime."""

    name: str  # "A" or "B"
    kind: SideKind
    path: Path  # the model or the .npz
    ep: ExecutionProvider | None  # None for saved outputs
    ort_version: str | None
    runner: str  # "onnxruntime 1.32.0 in this process", "/venv/bin/python: onnxruntime 1.20.1", ...
    providers: tuple[str, ...] = ()
    nonfinite: tuple[NonFinite, ...] = ()

    @property
    def label(self) -> str:
        where = f" on {self.ep.value}" if self.ep is not None else ""
        return f"{self.name}: {self.path.name}{where} ({self.runner})"


@dataclass(frozen=True)
class LatencyDiff:
    """p50 of each side with the same shapes; ``delta`` = (B - A) / A."""

    method: str  # how both were timed
    batch: int | None
    a_p50_ms: float | None
    b_p50_ms: float | None
    a_p95_ms: float | None = None
    b_p95_ms: float | None = None
    max_regression: float = 0.10
    note: str | None = None

    @property
    def delta(self) -> float | None:
        if not self.a_p50_ms or self.b_p50_ms is None:
            return None
        return (self.b_p50_ms - self.a_p50_ms) / self.a_p50_ms

    @property
    def regressed(self) -> bool:
        delta = self.delta
        return delta is not None and delta > self.max_regression


@dataclass(frozen=True)
class CompareResult:
    a: SideReport
    b: SideReport
    dataset: str
    samples: tuple[str, ...]
    outputs: tuple[OutputParity, ...]  # B against A, each output's worst sample
    only_in_a: tuple[str, ...]
    only_in_b: tuple[str, ...]
    layerwise: LayerwiseReport | None
    latency: LatencyDiff | None
    needs: NeedsDiff | None
    failures: tuple[str, ...]
    passed: bool
    verdict: str
    notes: tuple[str, ...] = ()
    report_to: Path | None = None
