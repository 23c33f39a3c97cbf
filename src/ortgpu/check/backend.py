"""The interface of a `check` backend: the request, what running the model gave (Execution), and the protocol.

A backend runs the model on the requested EP and returns an :class:`Execution`; parity, saved outputs and the
verdict are then worked out the same way for every backend (:mod:`ortgpu.check.run`). One file per backend:
:mod:`ortgpu.check.wheel` (the onnxruntime wheel Python imports, in this process) and
:mod:`ortgpu.check.package` (a package's own C library, in child processes). The next backend is one new file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ortgpu.capi.package_run import CApiLibrary
from ortgpu.check.fixed_dims import FixedDimsProbe
from ortgpu.check.parity import Tolerance
from ortgpu.check.result import GpuMemory, Timings
from ortgpu.config import Config
from ortgpu.ep import ExecutionProvider
from ortgpu.model.inputs import InputSpec
from ortgpu.model.inspect import ModelInfo
from ortgpu.placement import PlacementReport
from ortgpu.progress import Progress

__all__ = ["CheckBackend", "CheckRequest", "Execution"]


@dataclass(frozen=True)
class CheckRequest:
    """What to check. ``inputs`` None uses ``config.inputs``; ``ep`` None picks the best available EP.

    ``package``: run through the ONNX Runtime C library in this release archive, extracted folder, wheel, any
    folder holding libonnxruntime, or the library file itself, instead of the onnxruntime wheel Python imports.
    ``samples``: generated samples to run (or the most to take from a data set); the inputs' ``npz`` may be a
    folder of .npz files or one .npz whose arrays carry a leading sample axis. ``allow_nonfinite``: NaN/Inf in
    an output is not a failure by itself. ``report``: write an HTML report (error histograms) there.
    ``layerwise``: also compare every intermediate tensor with the CPU EP (on the first sample) and report where
    the two first part; on the CPU EP itself, where NaN/Inf first appear.
    """

    model: Path
    ep: ExecutionProvider | None = None
    ep_options: Mapping[str, str] = field(default_factory=dict)
    device_id: int | None = None
    config: Config = field(default_factory=Config)
    inputs: InputSpec | None = None
    reference: Path | None = None
    atol: Tolerance = field(default_factory=Tolerance)
    rtol: Tolerance = field(default_factory=Tolerance)
    strict_placement: bool = False
    save_outputs: Path | None = None
    warm_runs: int = 5
    package: Path | None = None
    samples: int | None = None
    allow_nonfinite: bool = False
    report: Path | None = None
    layerwise: bool = False


@dataclass(frozen=True)
class Execution:
    """What running the model on the requested EP gave, through the wheel or a package's C library."""

    outputs: dict[str, Any]  # by output name, from the first run
    requested_ep: ExecutionProvider
    active_ep: ExecutionProvider
    providers: tuple[str, ...]
    ep_reason: str | None
    fallback_used: bool
    fallback_reason: str | None
    device_id: int  # the CUDA device of the options (0 on CPU)
    provider_options: dict[str, str]
    timings: Timings
    gpu_memory: GpuMemory
    placement: PlacementReport | None
    placement_note: str | None
    ort_version: str
    cpu_reference: Callable[[], Mapping[str, Any]]  # the CPU EP's outputs on the same inputs (run when called)
    package: CApiLibrary | None = None
    more_outputs: tuple[dict[str, Any], ...] = ()  # outputs of the data set's further samples, in order
    cpu_references: Callable[[], list[dict[str, Any]]] | None = None  # the CPU EP's, for every sample
    cuda_libraries: str | None = None  # GPU EPs through the wheel: how CUDA/cuDNN were loaded (preload_dlls or not)
    fixed_dims: FixedDimsProbe | None = None  # placement with the open dims fixed, when nodes left the EP


class CheckBackend(Protocol):
    """Runs the model on the requested EP: the session, first and warm runs, placement, a CPU reference."""

    def execute(
        self,
        request: CheckRequest,
        model: ModelInfo,
        feeds: Mapping[str, Any],
        report: Progress,
        extra: Sequence[Mapping[str, Any]] = (),
    ) -> Execution:
        """Run ``feeds`` (and the data set's further samples in ``extra``, when the backend takes several)."""
        ...
