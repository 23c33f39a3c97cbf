"""What `ortgpu check` found: one frozen result that the table and the JSON both render from."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

from ortgpu.accuracy.layerwise import LayerwiseReport
from ortgpu.accuracy.nonfinite import NonFinite
from ortgpu.check.parity import OutputParity, ParityStatus
from ortgpu.config import ExecutionProvider
from ortgpu.placement import PlacementReport

if TYPE_CHECKING:  # pragma: no cover
    from ortgpu.capi.runner import PackageRunResult
    from ortgpu.check.fixed_dims import FixedDimsProbe

__all__ = [
    "CheckResult",
    "GpuMemory",
    "InputSummary",
    "PackageLibrary",
    "ParityReport",
    "PlacementStatus",
    "ReferenceKind",
    "Timings",
    "verdict_line",
]


class ReferenceKind(Enum):
    CPU_EP = "cpu-ep"  # the same model and inputs on the CPU EP
    FILE = "file"  # --reference FILE.npz
    NONE = "none"  # not compared (the requested EP is the CPU EP and no file was given)


class PlacementStatus(Enum):
    ALL_ON_EP = "all-on-ep"  # every compute node on the EP that runs the session
    PARTIAL = "partial"  # some compute nodes elsewhere (a failure only with --strict-placement)
    UNKNOWN = "unknown"  # ORT told nothing readable; `placement_note` says why


@dataclass(frozen=True)
class InputSummary:
    name: str
    dtype: str
    shape: tuple[int, ...]
    source: str  # "generated" or "npz"


@dataclass(frozen=True)
class Timings:
    creation_s: float  # InferenceSession construction (graph optimisation, EP partitioning, kernel creation)
    first_run_s: float  # the first run: kernel choices, allocations, cuDNN algorithm search
    warm_median_s: float | None  # median of the warm runs
    warm_min_s: float | None
    warm_runs: int


@dataclass(frozen=True)
class GpuMemory:
    """Device memory used by the session, from NVML before the session and after the warm runs.

    Device-wide numbers: another process allocating on the same GPU at the same time counts too.
    ``used_bytes`` is None when not measured; ``note`` then says why.
    """

    used_bytes: int | None
    before_bytes: int | None = None
    after_bytes: int | None = None
    nvml_index: int | None = None
    note: str | None = None


@dataclass(frozen=True)
class PackageLibrary:
    """The ONNX Runtime C library a ``--package`` check ran through (its C API, in a child process)."""

    source: Path  # what was given: archive, folder, wheel or the library file
    library: Path  # the libonnxruntime used, as found in ``source`` (inside an archive: source/member)
    ort_version: str  # the library's own answer (OrtGetApiBase()->GetVersionString())
    api_version: int  # the C API version negotiated with it
    build_info: str | None  # the library's build string (git commit, build type), when it has GetBuildInfoString
    compiled_providers: tuple[str, ...]  # EPs compiled into the build: not proof they can load
    provider_setup_s: float  # loading the provider libraries: part of ``Timings.creation_s``

    @classmethod
    def from_run(cls, source: Path, run: PackageRunResult) -> PackageLibrary:
        """The library as a child run through it answered (its own version, API, build and providers)."""
        return cls(
            source=source,
            library=run.library,
            ort_version=run.ort_version,
            api_version=run.api_version,
            build_info=run.build_info,
            compiled_providers=run.compiled_providers,
            provider_setup_s=run.provider_setup_s,
        )


@dataclass(frozen=True)
class ParityReport:
    reference: ReferenceKind
    status: ParityStatus
    reason: str | None = None  # why it was skipped
    reference_path: Path | None = None
    outputs: tuple[OutputParity, ...] = ()
    extra_reference_names: tuple[str, ...] = ()  # arrays in the reference file that are not model outputs


@dataclass(frozen=True)
class CheckResult:
    """Everything `check` proved (or could not), and the verdict."""

    model: Path
    model_sha256: str
    model_node_count: int  # as exported, subgraphs included (ORT's optimised graph may have fewer)
    ort_version: str  # of the ORT that ran the model: the wheel's, or the package library's
    requested_ep: ExecutionProvider
    active_ep: ExecutionProvider
    providers: tuple[str, ...]  # as ORT reports them for the session
    ep_reason: str | None  # why this EP, when none was asked for
    fallback_used: bool
    fallback_reason: str | None
    device_id: int | None  # None on the CPU EP
    provider_options: dict[str, str]
    inputs: tuple[InputSummary, ...]
    input_notes: tuple[str, ...]
    timings: Timings
    gpu_memory: GpuMemory
    placement: PlacementReport | None
    placement_status: PlacementStatus
    placement_note: str | None
    strict_placement: bool
    parity: ParityReport
    saved_outputs: Path | None
    failures: tuple[str, ...]  # one line each; empty when the check passed
    passed: bool
    verdict: str  # one line: "PASS: ..." or "FAIL: <first failure>"
    package: PackageLibrary | None = None  # None: the onnxruntime wheel Python imports ran the model
    cuda_libraries: str | None = None  # GPU EPs through the wheel: how CUDA/cuDNN were loaded (preload_dlls or not)
    fixed_dims: FixedDimsProbe | None = None  # nodes off the EP: the placement with the open dims fixed
    nonfinite: tuple[NonFinite, ...] = ()  # outputs holding NaN/Inf (a failure unless allow_nonfinite)
    allow_nonfinite: bool = False
    samples: tuple[str, ...] = ()  # labels of the data set's samples, when more than one ran
    dataset_source: str | None = None  # where the inputs came from, in words
    dataset_notes: tuple[str, ...] = ()
    report_to: Path | None = None  # the HTML report written
    layerwise: LayerwiseReport | None = None  # every intermediate tensor compared (--layerwise)


def verdict_line(
    failures: tuple[str, ...],
    placement: PlacementReport | None,
    parity: ParityReport,
    fallback_used: bool,
    active_ep: ExecutionProvider,
) -> str:
    """e.g. "PASS: 152/152 compute nodes on CUDAExecutionProvider, 0 Memcpy; outputs match the CPU EP"."""
    if failures:
        more = f" (+{len(failures) - 1} more)" if len(failures) > 1 else ""
        return f"FAIL: {failures[0]}{more}"
    parts = []
    if placement is not None:
        parts.append(placement.summary())
    if parity.status is ParityStatus.PASS:
        against = "the CPU EP" if parity.reference is ReferenceKind.CPU_EP else "the reference file"
        parts.append(f"outputs match {against}")
    else:
        short = (parity.reason or "").split(":", 1)[0]
        parts.append(f"parity {parity.status.value} ({short})" if short else f"parity {parity.status.value}")
    if fallback_used:
        parts.append(f"FALLBACK to {active_ep.value} (allowed by the config)")
    return "PASS: " + "; ".join(parts)
