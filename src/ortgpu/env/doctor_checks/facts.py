"""Facts the doctor gathers before judging them: the ORT build, its provider libraries, the files a session mapped."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from ortgpu.env.linux_loader import LibraryResolution

__all__ = ["MappedLibrary", "OrtBuild", "ProviderLibrary", "pip"]


@dataclass(frozen=True)
class OrtBuild:
    importable: bool
    error: str | None  # the import error, verbatim
    version: str | None
    build_info: str | None  # onnxruntime.get_build_info()
    device: str | None  # onnxruntime.get_device(): "GPU" / "CPU"
    available_providers: tuple[str, ...]  # compiled in: says nothing about whether they load
    module_file: str | None
    has_preload_dlls: bool | None = None  # onnxruntime.preload_dlls exists (None: not asked; 1.21 and newer have it)


@dataclass(frozen=True)
class ProviderLibrary:
    provider: str  # "cuda", "tensorrt"
    path: Path
    needs: tuple[LibraryResolution, ...]  # DT_NEEDED, transitive, plus the lazily opened ones
    glibc_floor: str | None
    cuda_major: int | None
    cudnn_major: int | None
    tensorrt_major: int | None
    from_shadowed: bool  # read from a distribution `import onnxruntime` does not load


@dataclass(frozen=True)
class MappedLibrary:
    path: Path
    component: str  # "cuDNN", "cuBLAS", "CUDA runtime"...
    origin: str  # "pip package", "system", "ORT package", "driver"
    why: str  # which loader step put it there


def pip() -> str:
    return f"{Path(sys.executable).name} -m pip"
