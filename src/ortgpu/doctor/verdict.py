"""One diagnostic check: its status, the evidence, and when it fails the cause and a concrete fix."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

__all__ = ["Check", "Status"]


class Status(Enum):
    OK = "ok"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"  # could not be checked here; `evidence` says why
    INFO = "info"

    @property
    def symbol(self) -> str:
        return {Status.OK: "✓", Status.WARN: "!", Status.FAIL: "✗", Status.SKIP: "-", Status.INFO: "·"}[self]

    @property
    def style(self) -> str:
        return {Status.OK: "green", Status.WARN: "yellow", Status.FAIL: "red", Status.SKIP: "dim", Status.INFO: "cyan"}[
            self
        ]


@dataclass(frozen=True)
class Check:
    """A check's outcome. A failed or warned check always carries a cause and a fix."""

    id: str  # stable, dotted: "driver.present", "ort.distributions", "cuda.libcublasLt.so.12"
    title: str
    status: Status
    evidence: str
    cause: str | None = None
    fix: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status in (Status.FAIL, Status.WARN) and not (self.cause and self.fix):
            raise ValueError(f"check {self.id}: a {self.status.value} needs a cause and a fix")
