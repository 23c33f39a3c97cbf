"""What `ortgpu fp16` did: one frozen result the table, the JSON and the report render from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ortgpu.accuracy.layerwise import LayerwiseReport
from ortgpu.accuracy.nonfinite import NonFinite
from ortgpu.check.parity import OutputParity
from ortgpu.config import ExecutionProvider
from ortgpu.fp16.keeplist import KeptNode

__all__ = ["Attempt", "Fp16Result", "Sizes", "Speed"]


@dataclass(frozen=True)
class Attempt:
    """One conversion and its validation."""

    iteration: int
    kept: int  # nodes kept in fp32 for this attempt
    passed: bool
    failures: tuple[str, ...]  # the first few, one line each
    added: tuple[str, ...] = ()  # nodes this attempt's failure put on the keep-list for the next one
    casts_removed: int = 0  # fp32 -> fp16 -> fp32 Cast pairs removed between kept nodes


@dataclass(frozen=True)
class Sizes:
    fp32_bytes: int
    fp16_bytes: int

    @property
    def ratio(self) -> float:
        return self.fp16_bytes / self.fp32_bytes if self.fp32_bytes else 0.0


@dataclass(frozen=True)
class Speed:
    """fp32 against fp16 with the bench engine (same EP, mode, shapes); None numbers with ``note`` when not
    measured."""

    ep: ExecutionProvider
    mode: str
    batch: int | None
    fp32_p50_ms: float | None
    fp16_p50_ms: float | None
    note: str | None = None

    @property
    def speedup(self) -> float | None:
        if not self.fp32_p50_ms or not self.fp16_p50_ms:
            return None
        return self.fp32_p50_ms / self.fp16_p50_ms


@dataclass(frozen=True)
class Fp16Result:
    model: Path
    output: Path
    written: bool  # OUT was written (it passed, or --force)
    forced: bool
    passed: bool
    ep: ExecutionProvider
    engine: str  # what computed the fp16 model for validation
    engine_reason: str
    reference: str  # what computed the fp32 outputs and ranges
    dataset: str
    samples: tuple[str, ...]
    keep_io_types: bool
    keep: tuple[KeptNode, ...]
    chains: tuple[str, ...]  # normalisation chains found in the graph, as op sequences
    attempts: tuple[Attempt, ...]
    parity: tuple[OutputParity, ...]  # of the last attempt, against the fp32 outputs
    nonfinite: tuple[NonFinite, ...]
    overflow: tuple[str, ...]  # tensors past 65504 in fp32 that the last attempt still held in fp16
    sizes: Sizes
    speed: Speed
    layerwise: LayerwiseReport | None  # the last layer-wise comparison run (None when none was needed)
    upcast: tuple[str, ...]  # nodes the EP computes in fp32 for lack of an fp16 kernel
    failures: tuple[str, ...]
    verdict: str
    notes: tuple[str, ...] = ()
    config_section: str | None = None  # the [model] section that makes load/check/bench run OUT for MODEL
    config_written: Path | None = None  # the ortgpu.toml written with it (--write-config)
