"""The mapped-files evidence of a Linux load attempt: which copy of each CUDA library was loaded, and why."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ortgpu.doctor.checks.facts import MappedLibrary, ProviderLibrary
from ortgpu.doctor.cuda_fixes import component_of
from ortgpu.host.load_attempt import LoadAttempt
from ortgpu.loader.linux import LibraryResolution, LoaderEnv, Source
from ortgpu.runtime.preload import PreloadPlan

__all__ = ["mapped_libraries"]


def _origin(path: Path, pip_dirs: Sequence[Path]) -> str:
    text = str(path)
    if "libcuda.so" in path.name or "libnvidia-ml" in path.name:
        return "driver"
    if path.name.startswith("libonnxruntime"):
        return "ORT package"
    if any(str(d) in text for d in pip_dirs) or "/site-packages/nvidia/" in text or "/dist-packages/nvidia/" in text:
        return "pip package"
    return "system"


_WHY = {
    Source.RPATH: "found through the requesting library's DT_RPATH",
    Source.LD_LIBRARY_PATH: "LD_LIBRARY_PATH is searched before ld.so.cache",
    Source.RUNPATH: "found through the requesting library's DT_RUNPATH",
    Source.LD_SO_CACHE: "listed in /etc/ld.so.cache (ldconfig)",
    Source.DEFAULT_DIR: "in a default library directory",
    Source.PATH: "loaded by full path",
    Source.NVIDIA_PIP: "loaded by full path from the pip package (onnxruntime.preload_dlls() or torch)",
}


def mapped_libraries(
    attempt: LoadAttempt, providers: Sequence[ProviderLibrary], env: LoaderEnv | None, plan: PreloadPlan | None = None
) -> tuple[MappedLibrary, ...]:
    """Each CUDA/cuDNN file the load attempt mapped: its component, where it came from (driver, pip, system) and
    why the loader took that copy (the static resolution, the preload plan, or neither)."""
    pip_dirs = env.pip_dirs if env else ()
    by_real: dict[Path, LibraryResolution] = {}
    for provider in providers:
        for need in provider.needs:
            for candidate in ([need.path] if need.path else []) + [c.path for c in need.also_at]:
                by_real.setdefault(candidate.resolve(), need)
    out = []
    for path in attempt.mapped:
        if path.name.startswith("libonnxruntime"):
            continue
        resolution = by_real.get(path.resolve())
        if attempt.preload_calls and plan is not None and plan.covers(path):
            why = f"loaded by full path by onnxruntime.preload_dlls() from {path.parent}, before the provider asked"
            if resolution is not None and resolution.path is not None and resolution.path.resolve() != path.resolve():
                why += f"; without it the loader would pick {resolution.path}"
        elif resolution is None:
            why = "opened at run time by another CUDA library (not predicted by the static search)"
        elif resolution.path is not None and resolution.path.resolve() == path.resolve():
            why = _WHY.get(resolution.source, "found by the loader") if resolution.source else "found by the loader"
            if resolution.also_at:
                first = resolution.also_at[0]
                why += f"; the copy at {first.path} ({first.source.value}) is not used"
        else:
            why = "loaded before the loader's search reached its first candidate (preloaded or LD_PRELOAD)"
        out.append(MappedLibrary(path, component_of(path.name), _origin(path, pip_dirs), why))
    return tuple(out)
