"""The result of one `ortgpu infer` run: what was written, skipped, kept or refused, by which workers, how fast."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path

from ortgpu.infer.worker import WorkerInfo

__all__ = ["Backend", "BadItem", "InferResult"]


class Backend(enum.Enum):
    LOCAL = "local"  # worker processes on this machine
    RAY = "ray"  # Ray Data actors on a cluster


@dataclass(frozen=True)
class BadItem:
    name: str
    reason: str


@dataclass(frozen=True)
class InferResult:
    """One run. ``written``: outputs written now; ``kept``: complete outputs already there (an attempt that died
    before it reported) taken as they are; ``verified``: done by an earlier run, output and input hashes checked,
    not run again; ``bad``: reported and skipped. ``rows_per_s``: rows run / ``compute_s`` (from the first
    worker ready to the last task done: reading, running and writing; session creation is ``workers[].session_s``).
    ``stage_s``: (stage, seconds summed over the tasks run) for :data:`ortgpu.infer.worker.STAGES`, local workers
    only (empty on Ray); ``starved`` is the time the session waited for input, which a bare loop does not lose.
    """

    model: Path
    model_sha256: str
    inputs: Path
    source_kind: str
    out: Path
    manifest: Path
    backend: Backend
    ep: str
    batch: int
    items: int
    tasks: int
    written: int
    kept: int
    verified: int
    bad: tuple[BadItem, ...]
    rows: int
    workers: tuple[WorkerInfo, ...]
    replaced: int
    retried: int
    compute_s: float
    elapsed_s: float
    stopped: bool = False  # --fail-fast stopped it at a bad item
    interrupted: bool = False
    ignored_files: tuple[str, ...] = ()
    ray_address: str | None = None
    stage_s: tuple[tuple[str, float], ...] = ()
    busy_s: float | None = None  # Ray: the actors' first task start to last task end (PoolOutcome.busy_s)

    @property
    def rows_per_s(self) -> float | None:
        return self.rows / self.compute_s if self.compute_s > 0 and self.rows else None

    @property
    def complete(self) -> bool:
        return not self.bad and not self.stopped and not self.interrupted
