"""What `ortgpu bundle` is asked and what it returns: the request, the target, every file and why, the manifest."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from ortgpu.ep import ExecutionProvider
from ortgpu.errors import BadInputError


class BundleError(BadInputError):
    """The bundle cannot be made from what was given (package, target, providers, output folder)."""


class Target(Enum):
    LINUX_X64 = "linux-x64"
    WIN_X64 = "win-x64"

    @property
    def is_windows(self) -> bool:
        return self is Target.WIN_X64


class FileKind(Enum):
    ORT_CORE = "ort core"
    ORT_PROVIDER = "ort provider"
    DEPENDENCY = "dependency"  # CUDA, cuDNN, TensorRT and what they need
    HEADER = "header"
    IMPORT_LIBRARY = "import library"  # onnxruntime.lib, to link on Windows
    LICENSE = "license"
    METADATA = "metadata"  # VERSION_NUMBER, GIT_COMMIT_ID


@dataclass(frozen=True)
class BundleFile:
    path: str  # relative to the bundle folder, posix separators
    size: int
    sha256: str | None  # None for a symbolic link
    kind: FileKind
    why: str
    origin: str  # package member, or the file on this machine it was copied from
    link_to: str | None = None  # a symbolic link (Linux sonames): the file it points at


@dataclass(frozen=True)
class MissingLibrary:
    name: str
    component: str  # "cuBLAS", "cuDNN", ...
    needed_by: str
    required: bool  # False: only some operators or an optional provider need it
    get_it: str


@dataclass(frozen=True)
class SystemRequirement:
    what: str  # "NVIDIA driver", "glibc", "VC++ runtime"
    minimum: str | None
    why: str


@dataclass(frozen=True)
class BundleManifest:
    ort_version: str | None
    source: str  # the package's file or folder name
    target: Target
    providers: tuple[str, ...]  # "cuda", "tensorrt"; empty: CPU EP only
    files: tuple[BundleFile, ...]
    missing: tuple[MissingLibrary, ...]
    system_requirements: tuple[SystemRequirement, ...]
    environment: dict[str, str]  # variable -> value to set (with <BUNDLE> for the bundle folder)
    complete: bool  # every required library is in the bundle
    loader_note: str = ""  # how the provider libraries find their CUDA libraries

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files if f.link_to is None)


@dataclass(frozen=True)
class BundleRequest:
    out: Path
    package: Path | None = None  # None: the installed onnxruntime(-gpu) wheel
    target: Target | None = None  # None: the package's own platform
    providers: tuple[ExecutionProvider, ...] | None = None  # None: every GPU provider the package has
    library_dirs: tuple[Path, ...] = ()  # searched first for CUDA/cuDNN/TensorRT libraries
    force: bool = False  # replace a non-empty output folder


@dataclass(frozen=True)
class BundleResult:
    out_dir: Path
    manifest: BundleManifest
    verification: str | None  # what the package analysis says of the bundle folder (same-platform only)
    warnings: tuple[str, ...] = field(default_factory=tuple)

    @property
    def complete(self) -> bool:
        return self.manifest.complete
