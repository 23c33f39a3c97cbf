"""One diagnostic check (status, evidence, cause, fix) and the one ranking that picks the root cause among failures."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ortgpu.package.analysis import Component

__all__ = ["ROOT_CAUSE_ORDER", "Check", "Status", "cause_rank", "root_cause"]


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


# The verdict names the failed check that comes first here: the most fundamental, whose fix unblocks the most.
# A check is placed by its id (the part before ":"), else by the library component it is about; anything else
# comes after all of these, in the order the checks ran. `doctor` (this machine) and `doctor --package` (a
# package's needs here, "host.*" ids and one check per needed library) share it: their ids do not overlap.
ROOT_CAUSE_ORDER: tuple[str | Component, ...] = (
    # this machine (`doctor`)
    "platform.os",
    "python",
    "windows.python",
    "driver.present",
    "gpu.visible",
    "driver.libcuda",
    "windows.vcruntime",  # an old VC++ runtime breaks `import onnxruntime` itself
    "ort.installed",
    "platform.glibc",
    "driver.cuda",
    "ort.provider.cuda",
    "windows.ort_cuda_unavailable",
    "ort.distributions",
    "ort.build",
    "windows.shadowing",
    "windows.long_path",
    "gpu.arch",
    "load.attempt",
    "windows.cuda_path",
    "windows.path",
    # a package's needs on this machine (`doctor --package`)
    "host.platform",
    "host.glibc",
    "host.driver",
    "host.vcruntime",
    "host.ort_cuda_unavailable",
    Component.CUDA_DRIVER,
    Component.CUDA_RUNTIME,
    Component.CUBLAS,
    Component.CUDNN,
    Component.CUFFT,
    Component.CURAND,
    Component.NVRTC,
    Component.C_RUNTIME,
    Component.OS,
    Component.OTHER,
    Component.ORT,
    Component.TENSORRT,
    "host.python",
)
_BY_ID = {key: index for index, key in enumerate(ROOT_CAUSE_ORDER) if isinstance(key, str)}
_BY_COMPONENT = {key.value: index for index, key in enumerate(ROOT_CAUSE_ORDER) if isinstance(key, Component)}


def cause_rank(check: Check) -> int:
    """Where ``check`` stands in ROOT_CAUSE_ORDER (lower is more fundamental); unlisted checks come last."""
    by_id = _BY_ID.get(check.id.split(":")[0])
    if by_id is not None:
        return by_id
    return _BY_COMPONENT.get(check.details.get("component", ""), len(ROOT_CAUSE_ORDER))


def root_cause(checks: Iterable[Check]) -> Check | None:
    """The failed check the verdict names: the lowest rank, the earliest on a tie; None when nothing failed."""
    return min((c for c in checks if c.status is Status.FAIL), key=cause_rank, default=None)
