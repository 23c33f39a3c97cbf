"""How ortgpu gets ORT's CUDA/cuDNN libraries loaded: ``onnxruntime.preload_dlls()`` aimed at the nvidia-* pip folders.

The nvidia-* pip wheels (what ``onnxruntime-gpu[cuda,cudnn]`` and ``ortgpu[gpu]`` install) put CUDA and cuDNN in
``site-packages/nvidia/.../lib``, a folder the dynamic loader never searches. ORT >= 1.21 has
``onnxruntime.preload_dlls()``: called with no argument it looks for ``nvidia/`` beside the onnxruntime package
only, then falls back to the loader's own search (so an ORT unpacked elsewhere picks the system copies); with
``directory=`` it loads from that folder by full path. A library loaded by full path then satisfies the CUDA
provider's DT_NEEDED by soname, whatever the loader's search would have found.

ortgpu's rule, the same in ``doctor`` (its load child), ``check``, ``bench``, ``demo`` and ``ortgpu.load()``: when
a GPU EP is requested, the ORT has ``preload_dlls`` and nvidia-* pip library folders exist on the Python path,
preload from them (one call per folder, CUDA and cuDNN apart so neither falls back to a system copy of the
other); with no such folders, call nothing and let the loader find the system CUDA/cuDNN.
"""

from __future__ import annotations

import contextlib
import functools
import io
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "PreloadCall",
    "PreloadOutcome",
    "PreloadPlan",
    "ensure_preloaded",
    "plan_for",
    "plan_preload",
    "run_preload",
]

# nvidia/<folder> for the CUDA side of a CUDA major (ORT's own layout table: CUDA >= 13 is one consolidated folder).
_CUDA12_FOLDERS = ("cuda_runtime/lib", "cublas/lib", "cufft/lib", "curand/lib", "cuda_nvrtc/lib")
_CUDNN_FOLDER = "cudnn/lib"


def _cuda_folders(cuda_major: int) -> tuple[str, ...]:
    return (f"cu{cuda_major}/lib",) if cuda_major >= 13 else _CUDA12_FOLDERS


@dataclass(frozen=True)
class PreloadCall:
    """One ``onnxruntime.preload_dlls(...)`` call."""

    cuda: bool
    cudnn: bool
    directory: Path | None  # None: ORT's default (nvidia/ beside the onnxruntime package, then the loader)

    def kwargs(self) -> dict[str, Any]:
        if self.directory is None:
            return {}
        return {"cuda": self.cuda, "cudnn": self.cudnn, "directory": str(self.directory)}

    def text(self) -> str:
        if self.directory is None:
            return "onnxruntime.preload_dlls()"
        return f"onnxruntime.preload_dlls(cuda={self.cuda}, cudnn={self.cudnn}, directory='{self.directory}')"


@dataclass(frozen=True)
class PreloadPlan:
    calls: tuple[PreloadCall, ...]  # empty: nothing to preload, the loader's own search decides
    reason: str  # why these calls, or why none
    folders: tuple[Path, ...] = ()  # the library folders the calls load from

    def covers(self, library: Path) -> bool:
        """Will the calls load this file (it sits in one of their folders)?"""
        return any(library.parent.resolve() == folder.resolve() for folder in self.folders)

    def texts(self) -> tuple[str, ...]:
        return tuple(call.text() for call in self.calls)


@dataclass(frozen=True)
class PreloadOutcome:
    """What ortgpu did about CUDA/cuDNN before a GPU session: the calls made, or why none."""

    calls: tuple[str, ...]  # the preload_dlls calls made, as text
    summary: str  # one line for results: "CUDA/cuDNN preloaded from the nvidia-* pip packages: ..."
    output: str = ""  # what preload_dlls printed (it reports failures on stdout); captured, never shown raw
    error: str | None = None  # a call that raised


def plan_preload(
    module_dir: Path | None, cuda_major: int | None, sys_path: Sequence[str] | None = None, *, has_preload: bool = True
) -> PreloadPlan:
    """The preload_dlls calls that load the nvidia-* pip CUDA/cuDNN libraries for an ORT built for ``cuda_major``."""
    if module_dir is None:
        return PreloadPlan((), "onnxruntime is not installed")
    if cuda_major is None:
        return PreloadPlan((), "this onnxruntime is not a CUDA build")
    if not has_preload:
        return PreloadPlan((), "this onnxruntime has no preload_dlls() (it came in 1.21)")
    if cuda_major < 12:
        return PreloadPlan((), f"preload_dlls() does not load CUDA {cuda_major} libraries (12 or newer only)")
    wanted = (*_cuda_folders(cuda_major), _CUDNN_FOLDER)
    beside = module_dir.parent / "nvidia"
    present = tuple(beside / folder for folder in wanted if (beside / folder).is_dir())
    if present:
        reason = f"nvidia-* pip libraries beside the onnxruntime package ({beside})"
        return PreloadPlan((PreloadCall(True, True, None),), reason, present)
    found: dict[str, Path] = {}
    for entry in sys.path if sys_path is None else sys_path:
        nvidia = Path(entry or ".") / "nvidia"
        for folder in wanted:
            if folder not in found and (nvidia / folder).is_dir():
                found[folder] = nvidia / folder
    calls = [PreloadCall(True, False, found[f]) for f in _cuda_folders(cuda_major) if f in found]
    if _CUDNN_FOLDER in found:
        calls.append(PreloadCall(False, True, found[_CUDNN_FOLDER]))
    if not calls:
        return PreloadPlan(
            (), "no nvidia-* pip CUDA/cuDNN libraries on the Python path: the loader finds the system ones"
        )
    folders = tuple(c.directory for c in calls if c.directory is not None)
    listed = ", ".join(str(f) for f in folders)
    return PreloadPlan(
        tuple(calls), f"nvidia-* pip libraries on the Python path, away from onnxruntime ({listed})", folders
    )


def run_preload(ort: Any, plan: PreloadPlan) -> PreloadOutcome:
    """Make the plan's calls on the imported onnxruntime module, with what they print captured."""
    if not plan.calls:
        return PreloadOutcome((), f"no preload_dlls() call: {plan.reason}")
    said = io.StringIO()
    done: list[str] = []
    error = None
    with contextlib.redirect_stdout(said):
        for call in plan.calls:
            try:
                ort.preload_dlls(**call.kwargs())
            except Exception as exc:  # preload_dlls raises RuntimeError for a bad folder; report, never crash a load
                error = f"{call.text()} raised {type(exc).__name__}: {exc}"
                break
            done.append(call.text())
    summary = f"CUDA/cuDNN preloaded ({plan.reason}): " + "; ".join(done) if done else "no preload_dlls() call made"
    if error:
        summary += f"; {error}"
    return PreloadOutcome(tuple(done), summary, said.getvalue().strip(), error)


_lock = threading.Lock()


def plan_for(ort: Any) -> PreloadPlan:
    """The plan for an imported onnxruntime module: its folder, its build's CUDA major, this sys.path."""
    from ortgpu.env.distributions import read_package_info
    from ortgpu.env.platform_probe import version_tuple

    module_dir = Path(ort.__file__).parent
    info = read_package_info(module_dir)
    cuda = version_tuple(info.cuda_version)[0] if info and version_tuple(info.cuda_version) else None
    return plan_preload(module_dir, cuda, has_preload=hasattr(ort, "preload_dlls"))


@functools.cache
def _preload_once() -> PreloadOutcome:
    from ortgpu.runtime.guard import import_onnxruntime

    ort = import_onnxruntime()
    return run_preload(ort, plan_for(ort))


def ensure_preloaded() -> PreloadOutcome:
    """Run the preload plan once per process (before the first GPU session); later calls return the same outcome.

    Linux only: on Windows ORT's DLL search differs (``ortgpu doctor`` says whether preload_dlls() is needed there).
    """
    if not sys.platform.startswith("linux"):
        return PreloadOutcome((), f"no preload_dlls() call: nothing to preload on {sys.platform}")
    with _lock:
        return _preload_once()
