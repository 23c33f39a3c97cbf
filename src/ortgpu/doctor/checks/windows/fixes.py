"""What one DLL need means on a Windows host and how to fix it: evidence, cause, blocking, PowerShell fix texts."""

from __future__ import annotations

import ntpath
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ortgpu.host.windows import same_dir
from ortgpu.host.windows_facts import CudaFacts, DllFolder, FolderKind, HostFacts
from ortgpu.knowledge import matrix
from ortgpu.knowledge.base import lookup
from ortgpu.knowledge.matrix import Platform
from ortgpu.loader.windows import BuildNeeds, DllCopy, DllResolution, DllStatus, LoadContext
from ortgpu.package.analysis import Component, LibraryRole, NeedKind
from ortgpu.versions import version_at_least, version_tuple

__all__ = [
    "ESSENTIAL_ROLES",
    "OPTIONAL_AT_RUN_TIME",
    "RUN_TIME_KINDS",
    "FixEnv",
    "folder_of",
    "install_cuda_fix",
    "is_blocking",
    "kb_fix",
    "need_cause",
    "need_fix",
    "need_rank",
    "need_text",
    "redist_fix",
    "root_needs",
]


_REDIST = "https://aka.ms/vs/17/release/vc_redist.x64.exe"
ESSENTIAL_ROLES = {LibraryRole.CORE, LibraryRole.PYTHON_BINDING, LibraryRole.PROVIDERS_SHARED, LibraryRole.CUDA}
OPTIONAL_AT_RUN_TIME = {Component.CUFFT, Component.CURAND, Component.NVRTC}
_CUDA_STACK = {Component.CUDA_RUNTIME, Component.CUBLAS, Component.CUFFT, Component.CURAND, Component.NVRTC}
# Which unresolved component to name first: the one whose fix unblocks the most.
_FIRST = [Component.ORT, Component.CUDA_RUNTIME, Component.CUBLAS, Component.CUFFT, Component.CUDNN, Component.OTHER]
RUN_TIME_KINDS = (NeedKind.LAZY, NeedKind.INDIRECT)


def kb_fix(entry: str) -> str:
    return lookup(entry).fix_for(Platform.WINDOWS)


def _major(name: str, component: Component) -> int | None:
    """The stack major a DLL name pins: cudart64_110.dll -> CUDA 11, cudnn_ops64_9.dll -> cuDNN 9."""

    if component is Component.CUDNN:
        return matrix.cudnn_major_from_libraries([name])
    if component is Component.TENSORRT:
        return matrix.tensorrt_major_from_libraries([name])
    return matrix.cuda_major_from_libraries([name])


@dataclass(frozen=True)
class FixEnv:
    build: BuildNeeds
    cuda: CudaFacts
    facts: HostFacts
    context: LoadContext


def _path_fix(folder: str) -> str:
    return (
        f"add {folder} to PATH (PowerShell, for your user: `[Environment]::SetEnvironmentVariable('Path', "
        f"'{folder};' + [Environment]::GetEnvironmentVariable('Path', 'User'), 'User')`, then open a new "
        f"terminal; this terminal only: `$env:Path = '{folder};' + $env:Path`)"
    )


def redist_fix() -> str:
    return (
        "install the latest VC++ 2015-2022 x64 redistributable "
        f"(`winget install Microsoft.VCRedist.2015+.x64` or {_REDIST})"
    )


def folder_of(copy: DllCopy, folders: Sequence[DllFolder]) -> DllFolder | None:
    return next((f for f in folders if same_dir(f.path, ntpath.dirname(copy.path))), None)


_FOLDER_PREFERENCE = [
    FolderKind.CUDA_TOOLKIT,
    FolderKind.CUDNN,
    FolderKind.CONDA,
    FolderKind.NVIDIA_PIP,
    FolderKind.TENSORRT,
    FolderKind.TORCH,
]


def _pick_off_path(need: DllResolution, env: FixEnv) -> tuple[DllCopy, DllFolder | None]:
    """The installed copy to point PATH at: one for the build's CUDA major first, then by kind of install."""

    def key(copy: DllCopy) -> tuple[int, int]:
        folder = folder_of(copy, env.cuda.folders)
        if folder is None:
            return 0, len(_FOLDER_PREFERENCE)
        other_cuda = folder.cuda is not None and env.build.cuda_major is not None
        other_cuda = other_cuda and version_tuple(folder.cuda)[:1] != (env.build.cuda_major,)
        return int(other_cuda), _FOLDER_PREFERENCE.index(folder.kind)

    best = min(need.off_path, key=key)
    return best, folder_of(best, env.cuda.folders)


def install_cuda_fix(major: int, env: FixEnv) -> str:
    bin_dir = "bin\\x64" if major >= 13 else "bin"
    text = f"install the CUDA {major}.x toolkit (it sets CUDA_PATH_V{major}_x) and add its {bin_dir} folder to PATH"
    if not env.context.python:
        return text + ", or copy the CUDA DLLs ORT names next to your .exe"
    if version_at_least(env.build.version, (1, 21)):
        return (
            text + f', or `pip install "{env.build.distribution}[cuda,cudnn]=={env.build.version}"` and call '
            "onnxruntime.preload_dlls() after `import onnxruntime`"
        )
    suffix = f"-cu{major}" if major < 13 else ""
    return (
        text + f", or `pip install nvidia-cuda-runtime{suffix} nvidia-cublas{suffix} nvidia-cufft{suffix}` and add "
        "their site-packages\\nvidia\\*\\bin folders to PATH"
    )


def _install_cudnn(major: int, env: FixEnv) -> str:
    cuda = env.build.cuda_major
    where = f"C:\\Program Files\\NVIDIA\\CUDNN\\v{major}.x\\bin\\{cuda or '<cuda>'}.x" if major >= 9 else "a bin folder"
    text = (
        f"install cuDNN {major}" + (f" for CUDA {cuda}" if cuda else "") + f" (NVIDIA's installer puts the DLLs in "
        f"{where}) and add that folder to PATH"
    )
    if not env.context.python:
        return text + ", or copy cudnn*.dll next to your .exe"
    if not cuda:
        return text
    then = (
        "call onnxruntime.preload_dlls() after `import onnxruntime`"
        if version_at_least(env.build.version, (1, 21))
        else "add site-packages\\nvidia\\cudnn\\bin to PATH"
    )
    return text + f', or `pip install "nvidia-cudnn-cu{cuda}=={major}.*"` and {then}'


def _off_path_fix(need: DllResolution, env: FixEnv) -> str:
    copy, folder = _pick_off_path(need, env)
    directory = ntpath.dirname(copy.path)
    if folder is not None and folder.kind is FolderKind.NVIDIA_PIP:
        if version_at_least(env.build.version, (1, 21)):
            return "call onnxruntime.preload_dlls() right after `import onnxruntime` (it loads the nvidia-* DLLs)"
        return (
            f"ONNX Runtime {env.build.version or ''} does not look in nvidia-* pip packages (preload_dlls() came in "
            f"1.21): {_path_fix(directory)}; or load them first by full path, e.g. `import ctypes; "
            f"ctypes.CDLL(r'{copy.path}')` (os.add_dll_directory() does not reach ORT's provider load)"
        )
    if folder is not None and folder.kind is FolderKind.TORCH:
        return f"`import torch` before onnxruntime (its {need.name} is then already loaded), or {_path_fix(directory)}"
    where = folder.label if folder else directory
    return f"{need.name} is in {where} but that folder is not searched: {_path_fix(directory)}"


def need_fix(need: DllResolution, env: FixEnv) -> str:
    name, chosen = need.name, need.chosen
    if need.status is DllStatus.BAD_IMAGE and chosen is not None:
        what = f"a {chosen.machine} DLL" if chosen.machine else "not a valid DLL (damaged or truncated)"
        machine = env.facts.process_machine
        return (
            f"remove or replace {chosen.path} ({what}): a {machine} process needs the {machine} build, and "
            f"Windows stops at the first {name} it finds (error 193)"
        )
    if need.status is DllStatus.OFF_PATH:
        return _off_path_fix(need, env)
    if name.lower() == "zlibwapi.dll":
        return kb_fix("FM-24")
    if need.component is Component.ORT:
        return kb_fix("FM-31") + " Reinstall the onnxruntime-gpu wheel, or extract the whole lib\\ folder of the zip."
    if need.component is Component.TENSORRT:
        return "only if you use the TensorRT EP: " + kb_fix("FM-59")
    major = _major(name, need.component)
    if need.component in _CUDA_STACK and major:
        fix = install_cuda_fix(major, env)
        other = sorted({_major(ntpath.basename(c.path), need.component) or 0 for c in need.other_versions} - {0})
        if need.status is DllStatus.WRONG_MAJOR and other:
            fix += f", or use an onnxruntime-gpu built for CUDA {other[-1]}"
        return fix
    if need.component is Component.CUDNN and name.lower().startswith("cudnn_"):
        if major == 8:
            return kb_fix("FM-25")
        return (
            f"the cuDNN {major} folder is incomplete: reinstall cuDNN {major} and keep all its cudnn*64_{major}.dll "
            "files in one folder on PATH"
        )
    if need.component is Component.CUDNN and major:
        return _install_cudnn(major, env)
    if env.context.python:
        return f"put the folder holding {name} on PATH"
    return f"copy {name} next to your .exe, or put its folder on PATH"


def _how(need: DllResolution) -> str:
    if need.kind is NeedKind.LAZY:
        return "opened at run time"
    if need.kind is NeedKind.INDIRECT:
        return f"opened by {need.requested_by} at run time"
    return f"imported by {need.requested_by}" + (" (delay-load)" if need.kind is NeedKind.DELAY_LOAD else "")


def need_text(need: DllResolution) -> str:
    """One line of evidence: what was asked for and what the search found."""
    how = _how(need)
    if need.ok and need.chosen is not None:
        version = f" {need.chosen.file_version}" if need.chosen.file_version else ""
        return f"{need.name}{version} at {need.chosen.path} ({need.chosen.where}; {how})"
    if need.status is DllStatus.BAD_IMAGE and need.chosen is not None:
        return f"{need.name}: the first copy, {need.chosen.path}, is {need.chosen.machine or 'unreadable'} ({how})"
    if need.status is DllStatus.OFF_PATH:
        copies = ", ".join(f"{c.path} ({c.where})" for c in need.off_path[:2])
        return f"{need.name} not on the search path; installed at {copies} ({how})"
    if need.status is DllStatus.WRONG_MAJOR:
        copies = ", ".join(f"{ntpath.basename(c.path)} ({ntpath.dirname(c.path)})" for c in need.other_versions[:3])
        return f"{need.name} missing; only {copies} ({how})"
    return f"{need.name} missing ({how})"


def need_cause(need: DllResolution) -> str:
    effect = (
        "ORT's LoadLibraryExW of the provider fails with error 126"
        if need.kind is NeedKind.LOAD_TIME
        else "it fails at run time, at the first operator that needs it"
    )
    if need.status is DllStatus.BAD_IMAGE:
        return f"{need.name} resolves to a file for another CPU or a damaged file (error 193)"
    if need.status is DllStatus.OFF_PATH:
        return f"{need.name} is installed but not in any folder the Windows loader searches: {effect}"
    if need.status is DllStatus.WRONG_MAJOR:
        majors = sorted({_major(ntpath.basename(c.path), need.component) or 0 for c in need.other_versions} - {0})
        have = f"{need.component.value} {', '.join(map(str, majors))}" if majors else "another version"
        want = _major(need.name, need.component)
        return f"{need.name} is missing: this machine has only {have}, this ORT needs {want}: {effect}"
    if need.name.lower() == "zlibwapi.dll":
        return (
            "cuDNN 8 needs zlibwapi.dll (it does not ship it) and none is on the search path: cuDNN stops at the "
            'first convolution ("Could not locate zlibwapi.dll")'
        )
    return f"{need.name} ({need.component.value}) is not found: {effect}"


def is_blocking(need: DllResolution, role: LibraryRole) -> bool | None:
    """True: the CUDA EP cannot work without it; False: only some operators or TensorRT; None: judged elsewhere."""
    if need.ok or need.component in (Component.CUDA_DRIVER, Component.VC_RUNTIME):
        return None  # the driver and VC++ checks judge these
    if role not in ESSENTIAL_ROLES:
        return False
    return not (need.kind in RUN_TIME_KINDS and need.component in OPTIONAL_AT_RUN_TIME)


def root_needs(blocking: Sequence[DllResolution]) -> list[DllResolution]:
    """Leave out what follows from another problem: cuDNN's sub-libraries (and zlib) when cudnn64_N.dll is missing."""
    main_missing = any(re.match(r"^cudnn64_\d+\.dll$", n.name, re.IGNORECASE) for n in blocking)
    if not main_missing:
        return list(blocking)
    return [n for n in blocking if not (n.kind in RUN_TIME_KINDS and n.requested_by.lower().startswith("cudnn64_"))]


def need_rank(need: DllResolution) -> tuple[int, int]:
    first = _FIRST.index(need.component) if need.component in _FIRST else len(_FIRST)
    return int(need.status is not DllStatus.BAD_IMAGE), first
