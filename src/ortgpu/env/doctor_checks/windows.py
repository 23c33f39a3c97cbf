"""Checks of a Windows host, for `doctor` and `doctor --package`: CPU, VC++ runtime, every DLL, CUDA_PATH, driver.

Each check judges facts from ortgpu.env.windows_host and the search-order emulation of
ortgpu.env.windows_loader: the CPU and emulation, the VC++ runtime that will load, each DLL ORT's
libraries need, CUDA_PATH and PATH, ORT_CUDA_UNAVAILABLE, the driver and its model, other
onnxruntime.dll copies, and a real LoadLibraryExW attempt. Fixes are written for PowerShell/cmd
users; fix texts the knowledge base already has (FM-24, FM-25, FM-28, FM-29, FM-31, FM-59, FM-70)
are reused by id.
"""

from __future__ import annotations

import ntpath
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ortgpu.env.checks import Check, Status
from ortgpu.env.load_attempt import LoadAttempt, LoadOutcome
from ortgpu.env.package import Component, LibraryRole, NeedKind, PackageAnalysis
from ortgpu.env.platform_probe import PlatformInfo, version_tuple
from ortgpu.env.windows_host import (
    CudaFacts,
    DllFolder,
    FolderKind,
    HostFacts,
    PythonFlavour,
    WindowsDriver,
    WindowsHost,
    host_facts,
    same_dir,
    windows_error_code,
)
from ortgpu.env.windows_loader import (
    BuildNeeds,
    DllCopy,
    DllResolution,
    DllResolver,
    DllStatus,
    LibraryImports,
    LoadContext,
    VcRuntimeReport,
    WindowsReport,
    survey,
)

__all__ = [
    "WindowsDiagnosis",
    "diagnose_windows",
    "platform_info",
    "windows_package_checks",
]

Progress = Callable[[str, "float | None"], None]

_REDIST = "https://aka.ms/vs/17/release/vc_redist.x64.exe"
_ESSENTIAL = {LibraryRole.CORE, LibraryRole.PYTHON_BINDING, LibraryRole.PROVIDERS_SHARED, LibraryRole.CUDA}
_OPTIONAL_AT_RUN_TIME = {Component.CUFFT, Component.CURAND, Component.NVRTC}
_CUDA_STACK = {Component.CUDA_RUNTIME, Component.CUBLAS, Component.CUFFT, Component.CURAND, Component.NVRTC}
# Which unresolved component to name first: the one whose fix unblocks the most.
_FIRST = [Component.ORT, Component.CUDA_RUNTIME, Component.CUBLAS, Component.CUFFT, Component.CUDNN, Component.OTHER]
_RUN_TIME = (NeedKind.LAZY, NeedKind.INDIRECT)


def _kb(entry: str) -> str:
    from ortgpu.env.matrix import Platform
    from ortgpu.knowledge.base import lookup

    return lookup(entry).fix_for(Platform.WINDOWS)


def _ge(version: str | None, minimum: tuple[int, ...]) -> bool:
    return bool(version) and version_tuple(version)[: len(minimum)] >= minimum


def _major(name: str, component: Component) -> int | None:
    """The stack major a DLL name pins: cudart64_110.dll -> CUDA 11, cudnn_ops64_9.dll -> cuDNN 9."""
    from ortgpu.env import matrix

    if component is Component.CUDNN:
        return matrix.cudnn_major_from_libraries([name])
    if component is Component.TENSORRT:
        return matrix.tensorrt_major_from_libraries([name])
    return matrix.cuda_major_from_libraries([name])


# --- fix texts ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _FixEnv:
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


def _redist_fix() -> str:
    return (
        "install the latest VC++ 2015-2022 x64 redistributable "
        f"(`winget install Microsoft.VCRedist.2015+.x64` or {_REDIST})"
    )


def _folder_of(copy: DllCopy, folders: Sequence[DllFolder]) -> DllFolder | None:
    return next((f for f in folders if same_dir(f.path, ntpath.dirname(copy.path))), None)


_FOLDER_PREFERENCE = [
    FolderKind.CUDA_TOOLKIT,
    FolderKind.CUDNN,
    FolderKind.CONDA,
    FolderKind.NVIDIA_PIP,
    FolderKind.TENSORRT,
    FolderKind.TORCH,
]


def _pick_off_path(need: DllResolution, env: _FixEnv) -> tuple[DllCopy, DllFolder | None]:
    """The installed copy to point PATH at: one for the build's CUDA major first, then by kind of install."""

    def key(copy: DllCopy) -> tuple[int, int]:
        folder = _folder_of(copy, env.cuda.folders)
        if folder is None:
            return 0, len(_FOLDER_PREFERENCE)
        other_cuda = folder.cuda is not None and env.build.cuda_major is not None
        other_cuda = other_cuda and version_tuple(folder.cuda)[:1] != (env.build.cuda_major,)
        return int(other_cuda), _FOLDER_PREFERENCE.index(folder.kind)

    best = min(need.off_path, key=key)
    return best, _folder_of(best, env.cuda.folders)


def _install_cuda(major: int, env: _FixEnv) -> str:
    bin_dir = "bin\\x64" if major >= 13 else "bin"
    text = f"install the CUDA {major}.x toolkit (it sets CUDA_PATH_V{major}_x) and add its {bin_dir} folder to PATH"
    if not env.context.python:
        return text + ", or copy the CUDA DLLs ORT names next to your .exe"
    if _ge(env.build.version, (1, 21)):
        return (
            text + f', or `pip install "{env.build.distribution}[cuda,cudnn]=={env.build.version}"` and call '
            "onnxruntime.preload_dlls() after `import onnxruntime`"
        )
    suffix = f"-cu{major}" if major < 13 else ""
    return (
        text + f", or `pip install nvidia-cuda-runtime{suffix} nvidia-cublas{suffix} nvidia-cufft{suffix}` and add "
        "their site-packages\\nvidia\\*\\bin folders to PATH"
    )


def _install_cudnn(major: int, env: _FixEnv) -> str:
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
        if _ge(env.build.version, (1, 21))
        else "add site-packages\\nvidia\\cudnn\\bin to PATH"
    )
    return text + f', or `pip install "nvidia-cudnn-cu{cuda}=={major}.*"` and {then}'


def _off_path_fix(need: DllResolution, env: _FixEnv) -> str:
    copy, folder = _pick_off_path(need, env)
    directory = ntpath.dirname(copy.path)
    if folder is not None and folder.kind is FolderKind.NVIDIA_PIP:
        if _ge(env.build.version, (1, 21)):
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


def _need_fix(need: DllResolution, env: _FixEnv) -> str:
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
        return _kb("FM-24")
    if need.component is Component.ORT:
        return _kb("FM-31") + " Reinstall the onnxruntime-gpu wheel, or extract the whole lib\\ folder of the zip."
    if need.component is Component.TENSORRT:
        return "only if you use the TensorRT EP: " + _kb("FM-59")
    major = _major(name, need.component)
    if need.component in _CUDA_STACK and major:
        fix = _install_cuda(major, env)
        other = sorted({_major(ntpath.basename(c.path), need.component) or 0 for c in need.other_versions} - {0})
        if need.status is DllStatus.WRONG_MAJOR and other:
            fix += f", or use an onnxruntime-gpu built for CUDA {other[-1]}"
        return fix
    if need.component is Component.CUDNN and name.lower().startswith("cudnn_"):
        if major == 8:
            return _kb("FM-25")
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


def _need_text(need: DllResolution) -> str:
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


def _cause(need: DllResolution) -> str:
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


def _blocking(need: DllResolution, role: LibraryRole) -> bool | None:
    """True: the CUDA EP cannot work without it; False: only some operators or TensorRT; None: judged elsewhere."""
    if need.ok or need.component in (Component.CUDA_DRIVER, Component.VC_RUNTIME):
        return None  # the driver and VC++ checks judge these
    if role not in _ESSENTIAL:
        return False
    return not (need.kind in _RUN_TIME and need.component in _OPTIONAL_AT_RUN_TIME)


def _root_needs(blocking: Sequence[DllResolution]) -> list[DllResolution]:
    """Leave out what follows from another problem: cuDNN's sub-libraries (and zlib) when cudnn64_N.dll is missing."""
    main_missing = any(re.match(r"^cudnn64_\d+\.dll$", n.name, re.IGNORECASE) for n in blocking)
    if not main_missing:
        return list(blocking)
    return [n for n in blocking if not (n.kind in _RUN_TIME and n.requested_by.lower().startswith("cudnn64_"))]


def _rank(need: DllResolution) -> tuple[int, int]:
    first = _FIRST.index(need.component) if need.component in _FIRST else len(_FIRST)
    return int(need.status is not DllStatus.BAD_IMAGE), first


# --- the checks (named "windows.*" / "host.*" for doctor / doctor --package) ----------------------------------------


@dataclass(frozen=True)
class _Ids:
    platform: str
    vc: str
    cuda_path: str
    path: str
    disabled: str
    driver: str
    driver_model: str
    shadowing: str


_DOCTOR_IDS = _Ids(
    platform="platform.os",
    vc="windows.vcruntime",
    cuda_path="windows.cuda_path",
    path="windows.path",
    disabled="windows.ort_cuda_unavailable",
    driver="driver.present",
    driver_model="windows.driver_model",
    shadowing="windows.shadowing",
)
_PACKAGE_IDS = _Ids(
    platform="host.platform",
    vc="host.vcruntime",
    cuda_path="host.cuda_path",
    path="host.path",
    disabled="host.ort_cuda_unavailable",
    driver="host.driver",
    driver_model="host.driver_model",
    shadowing="host.shadowing",
)


def platform_check(facts: HostFacts, check_id: str, package_machine: str | None = None) -> Check:
    """CPU and emulation: the CUDA EP needs an x64 process on an x64 Windows PC (W01, W25)."""
    title = "Operating system and CPU"
    evidence = f"Windows {facts.windows_version}, {facts.native_machine} CPU, {facts.process_machine} process"
    if package_machine:
        evidence += f"; the package is {package_machine}"
    details: dict[str, Any] = {"process_machine": facts.process_machine, "native_machine": facts.native_machine}
    if facts.native_machine == "arm64":
        if package_machine == "x64" and facts.process_machine == "arm64":
            cause = "an x64 package cannot load into this ARM64 process (error 193)"
        elif facts.process_machine == "x64":
            cause = "Windows on ARM64 runs this x64 Python under emulation: the x64 package installs and imports"
        else:
            cause = "Windows on ARM64: onnxruntime-gpu ships no win_arm64 build"
        details["problem"] = "Windows on ARM64 has no CUDA"
        return Check(
            check_id,
            title,
            Status.FAIL,
            evidence,
            cause=cause + ", but no NVIDIA CUDA driver exists for Windows on ARM, so the CUDA EP cannot load",
            fix="run on an x64 Windows PC with an NVIDIA GPU; on Windows on ARM use onnxruntime-directml "
            "(DirectML EP) or onnxruntime-qnn (Qualcomm NPU) instead",
            details=details,
        )
    if facts.process_machine != "x64" or (package_machine and package_machine != facts.process_machine):
        details["problem"] = f"{facts.process_machine} process"
        return Check(
            check_id,
            title,
            Status.FAIL,
            evidence,
            cause=f"onnxruntime-gpu is built for x64 only; this process is {facts.process_machine} "
            "(its DLLs fail with error 193)",
            fix="install 64-bit (x64) Python from python.org and reinstall onnxruntime-gpu in it",
            details=details,
        )
    if version_tuple(facts.windows_version) < (10, 0, 10240):
        details["problem"] = "Windows older than 10"
        return Check(
            check_id,
            title,
            Status.FAIL,
            evidence,
            cause="ONNX Runtime supports Windows 10 / Server 2016 and later",
            fix="upgrade Windows",
            details=details,
        )
    return Check(check_id, title, Status.OK, evidence, details=details)


def python_flavour_check(facts: HostFacts) -> Check:
    """Store Python never searches PATH; conda ships its own VC++ runtime (W02)."""
    evidence = f"{facts.python_flavour.value} Python {facts.python_version} at {facts.python_executable}"
    if facts.python_flavour is not PythonFlavour.STORE:
        return Check("windows.python", "Python installation", Status.INFO, evidence)
    return Check(
        "windows.python",
        "Python installation",
        Status.WARN,
        evidence,
        cause="Microsoft Store Python is a packaged app: its DLL search is the provider's folder and System32 only, "
        "never PATH, so CUDA/cuDNN folders on PATH are invisible to ONNX Runtime",
        fix="install Python from python.org (or `winget install Python.Python.3.12`), or keep the CUDA/cuDNN DLLs in "
        "the pip packages and call onnxruntime.preload_dlls() (ORT >= 1.21)",
    )


def _vc_text(need: DllResolution) -> str:
    if need.chosen is None:
        return f"{need.name} missing"
    return f"{need.name} {need.chosen.file_version or '(no version)'} at {need.chosen.path} ({need.chosen.where})"


def vc_runtime_check(vc: VcRuntimeReport, facts: HostFacts, check_id: str, context: LoadContext) -> Check:
    """The msvcp140/vcruntime140 that will load, against what the build needs (W12).

    Only msvcp140*.dll is held to the build's toolset: what fails ORT's initialisation (error 1114) is the
    STL's constexpr mutex change in msvcp140 14.40; python.org ships an older vcruntime140.dll, and that works.
    """
    title = "VC++ runtime"
    required = vc.required
    evidence = "; ".join(_vc_text(n) for n in vc.loads) or "ORT imports no VC++ DLL"
    evidence += f"; registry: {vc.registry.version or 'no VC++ 2015-2022 redistributable recorded'}"
    if required:
        evidence += f"; msvcp140 needs >= {required} ({vc.required_evidence})"
    details: dict[str, Any] = {"required": required, "registry": vc.registry.version, "component": "VC++ runtime"}
    missing = [n for n in vc.loads if not n.ok]
    if missing:
        names = ", ".join(n.name for n in missing)
        details["problem"] = f"the VC++ runtime ({names}) is missing"
        effect = (
            "`import onnxruntime` fails (DLL load failed, error 126)"
            if context.python
            else "onnxruntime.dll cannot load (error 126, or 0xc0000135 when the .exe starts)"
        )
        ship = "" if context.python else " (or ship the VC++ DLLs ORT imports next to your .exe)"
        return Check(
            check_id,
            title,
            Status.FAIL,
            evidence,
            cause=f"{names} not found: {effect}",
            fix=_redist_fix() + ship,
            details=details,
        )
    stl = [(n, n.chosen) for n in vc.loads if n.chosen is not None and n.name.lower().startswith("msvcp140")]
    if required:
        old = [(n, c) for n, c in stl if version_tuple(c.file_version)[:2] < version_tuple(required)[:2]]
        if old:
            return _vc_too_old(old[0][0], old[0][1], vc, facts, check_id, evidence, details)
        unknown = [n for n, c in stl if not c.file_version]
        if unknown:
            return Check(
                check_id,
                title,
                Status.WARN,
                evidence,
                cause=f"the version of {unknown[0].name} cannot be read, so it cannot be compared with {required}",
                fix=_redist_fix(),
                details=details,
            )
    return Check(check_id, title, Status.OK, evidence, details=details)


def _vc_too_old(
    need: DllResolution,
    chosen: DllCopy,
    vc: VcRuntimeReport,
    facts: HostFacts,
    check_id: str,
    evidence: str,
    details: dict[str, Any],
) -> Check:
    required = vc.required or ""
    folder = ntpath.dirname(chosen.path)
    in_system = same_dir(folder, facts.system_dir)
    fixes = []
    if not in_system and facts.python_flavour is PythonFlavour.CONDA and same_dir(folder, facts.app_dir):
        fixes.append('update the environment\'s copy: `conda install -c conda-forge "vc14_runtime>=14.40"`')
    elif not in_system:
        fixes.append(f"delete or update the old {chosen.path}: a copy there ({chosen.where}) wins over System32's")
    registry = vc.registry.version
    if in_system or registry is None or version_tuple(registry)[:2] < version_tuple(required)[:2]:
        fixes.append(_redist_fix())
    details["problem"] = f"{need.name} {chosen.file_version} is older than {required}"
    return Check(
        check_id,
        "VC++ runtime",
        Status.FAIL,
        evidence,
        cause=f"{need.name} {chosen.file_version} from {chosen.path} ({chosen.where}) loads first, older than the "
        f"{required} this ORT was built with: ORT's initialisation fails with \"A dynamic link library (DLL) "
        'initialization routine failed" (WinError 1114)',
        fix="; ".join(fixes),
        details=details,
    )


def provider_check(library: LibraryImports, env: _FixEnv, provider: str, attempt: LoadAttempt | None = None) -> Check:
    """Every DLL one provider's load brings in (W04-W10): the most fundamental problem named, with its fix."""
    check_id, title = f"ort.provider.{provider}", f"{library.name} needs"
    relevant = [n for n in library.needs if not n.system and n.component is not Component.ORT]
    judged = [(n, _blocking(n, library.role)) for n in library.needs]
    blocking = [n for n, b in judged if b]
    optional = [n for n, b in judged if b is False]
    evidence = f"{sum(n.ok for n in relevant)}/{len(relevant)} DLLs resolve ({library.order.value}: {library.search})"
    if env.build.cuda_major:
        evidence += f"; built for CUDA {env.build.cuda_major}"
        evidence += f", cuDNN {env.build.cudnn_major}" if env.build.cudnn_major else ""
    details: dict[str, Any] = {
        "path": library.path,
        "needs": [n.name for n in library.needs],
        "unresolved": {n.name: n.status.value for n in library.needs if not n.ok},
    }
    if provider == "tensorrt" or not blocking:
        problems = blocking + optional
        if not problems:
            return Check(check_id, title, Status.OK, evidence, details=details)
        cause = (
            "the TensorRT EP cannot load (the CUDA EP does not need these)"
            if provider == "tensorrt"
            else "DLLs the CUDA EP opens only for some operators (FFT, random numbers, runtime-compiled kernels) "
            "are missing"
        )
        trt = [n for n in problems if n.component is Component.TENSORRT]
        fix = _need_fix(trt[0] if trt else min(problems, key=_rank), env)
        if trt and len(trt) < len(problems):
            fix += "; and the CUDA/cuDNN DLLs as the CUDA EP check says"
        return Check(
            check_id,
            title,
            Status.WARN,
            evidence + ": " + "; ".join(_need_text(n) for n in problems),
            cause=cause,
            fix=fix,
            details=details,
        )
    first = min(blocking, key=_rank)
    fixes = list(dict.fromkeys(_need_fix(n, env) for n in sorted(_root_needs(blocking), key=_rank)))
    cause = "the CUDA EP cannot load: " + _cause(first)
    if len(blocking) > 1:
        others = [n.name for n in blocking if n is not first]
        cause += f" (+{len(others)} more: {', '.join(others[:4])}{', ...' if len(others) > 4 else ''})"
    if attempt is not None and attempt.ok:
        # The real loader found them although the emulated search did not: trust it, and say so.
        return Check(
            check_id,
            title,
            Status.WARN,
            evidence + ": " + "; ".join(_need_text(n) for n in blocking),
            cause="the emulated search misses " + ", ".join(n.name for n in blocking) + " but the real load attempt "
            "succeeded: they are reached in a way ortgpu does not model (already loaded, SetDllDirectory, an "
            "installer's side-by-side copy)",
            fix="nothing to do while it works; the fix below makes the setup explicit: " + fixes[0],
            details=details,
        )
    return Check(
        check_id,
        title,
        Status.FAIL,
        evidence + ": " + "; ".join(_need_text(n) for n in blocking),
        cause=cause,
        fix="; then ".join(fixes[:3]),
        details={**details, "component": first.component.value},
    )


def need_checks(libraries: Sequence[LibraryImports], env: _FixEnv) -> list[Check]:
    """doctor --package: one check per DLL the package needs from the machine (as the Linux host checks do)."""
    seen: dict[str, tuple[DllResolution, set[LibraryRole]]] = {}
    for library in libraries:
        for need in library.needs:
            seen.setdefault(need.name.lower(), (need, set()))[1].add(library.role)
    checks = []
    for need, roles in seen.values():
        if need.system or need.component in (Component.VC_RUNTIME, Component.PYTHON):
            continue  # the VC++ check judges the runtime; the OS and python3XX.dll are always there
        if need.component is Component.ORT and need.ok:
            continue  # shipped in the package, next to the library that needs it
        essential = bool(roles & _ESSENTIAL) and not (
            need.kind in _RUN_TIME and need.component in _OPTIONAL_AT_RUN_TIME
        )
        chosen = need.chosen
        details: dict[str, Any] = {
            "soname": need.name,
            "component": need.component.value,
            "status": need.status.value,
            "path": chosen.path if chosen else None,
            "source": chosen.where if chosen else None,
            "file_version": chosen.file_version if chosen else None,
            "machine": chosen.machine if chosen else None,
            "requested_by": need.requested_by,
            "lazy": need.kind in _RUN_TIME,
            "for": sorted(r.value for r in roles),
            "essential": essential,
        }
        check_id, title = f"host.lib.{need.name}", f"{need.component.value}: {need.name}"
        if need.ok:
            checks.append(Check(check_id, title, Status.OK, _need_text(need), details=details))
        elif need.component is Component.CUDA_DRIVER:
            evidence = _need_text(need) + "; see the NVIDIA driver check"
            checks.append(Check(check_id, title, Status.INFO, evidence, details=details))
        else:
            scope = "" if essential else " (only some operators need it)" if roles & _ESSENTIAL else " (TensorRT EP)"
            details["problem"] = f"{need.name} ({need.component.value}) {need.status.value}"
            checks.append(
                Check(
                    check_id,
                    title,
                    Status.FAIL if essential else Status.WARN,
                    _need_text(need) + scope,
                    cause=_cause(need),
                    fix=_need_fix(need, env),
                    details=details,
                )
            )
    return checks


def cuda_path_check(env: _FixEnv, check_id: str, hard_error: bool, unresolved: bool) -> Check:
    """CUDA_PATH / CUDA_PATH_Vx_y: stale folders, the wrong major, and 1.18's hard error (W14)."""
    title = "CUDA_PATH and the CUDA toolkits"
    kits = env.cuda.toolkits
    want = env.build.cuda_major
    if not kits:
        return Check(
            check_id, title, Status.INFO, "CUDA_PATH is not set (ORT does not read it to find DLLs; PATH does)"
        )
    evidence = "; ".join(
        f"{k.variable}={k.root} ({'CUDA ' + k.version if k.version else 'version unknown'}, "
        + ("missing" if not k.exists else "bin on PATH" if k.bin_on_path else "bin not on PATH")
        + ")"
        for k in kits
    )
    details: dict[str, Any] = {"toolkits": {k.variable: k.root for k in kits}, "component": "CUDA runtime"}
    right = [k for k in kits if k.exists and k.major == want]
    problems, fixes = [], []
    for kit in (k for k in kits if not k.exists):
        problems.append(f"{kit.variable} points at {kit.root}, which does not exist (a removed toolkit)")
        if kit.variable == "CUDA_PATH" and right:
            fixes.append(
                f"point CUDA_PATH at {right[0].root} (admin PowerShell: "
                f"`[Environment]::SetEnvironmentVariable('CUDA_PATH', '{right[0].root}', 'Machine')`)"
            )
        else:
            fixes.append(
                f"remove the stale {kit.variable} (admin PowerShell: "
                f"`[Environment]::SetEnvironmentVariable('{kit.variable}', $null, 'Machine')`), or reinstall "
                "that toolkit"
            )
    main = next((k for k in kits if k.variable == "CUDA_PATH" and k.exists), None)
    if want and main is not None and main.major not in (None, want):
        problems.append(
            f"CUDA_PATH is CUDA {main.version}, this ORT needs CUDA {want}; the variable does not make ORT load "
            "anything, the DLL folder on PATH does"
        )
        if not right:
            fixes.append(_install_cuda(want, env))
    if hard_error and unresolved:
        problems.append(
            "with CUDA_PATH set and the CUDA EP unable to load, this ORT raises \"CUDA_PATH is set but CUDA wasn't "
            'able to be loaded" instead of falling back to CPU'
        )
        fixes.append("fix the DLLs the provider check names (" + _kb("FM-29") + ")")
    if not problems:
        return Check(check_id, title, Status.OK, evidence, details=details)
    details["problem"] = problems[0]
    return Check(
        check_id,
        title,
        Status.WARN,
        evidence,
        cause="; ".join(problems),
        fix="; ".join(dict.fromkeys(fixes)) or "keep CUDA_PATH at the toolkit whose bin folder is on PATH",
        details=details,
    )


_CUDA_NAMES = re.compile(r"^(cudart|cudnn|cublas|nvinfer|zlibwapi)", re.IGNORECASE)


def path_check(facts: HostFacts, check_id: str, host: WindowsHost) -> Check:
    """PATH hygiene: a shell older than the last installer, missing, quoted or %VAR% entries, CUDA bins (W15, W16)."""
    title = "PATH"
    entries = facts.path
    dead = [e for e in entries if not e.exists]
    odd = [e for e in entries if e.quoted or e.had_variables]
    bins = [e for e in entries if re.search(r"\\CUDA\\v\d+\.\d+\\bin", e.directory, re.IGNORECASE)]
    stale = [d for d in facts.stale_path if any(_CUDA_NAMES.match(n) for n in host.listdir(d))]
    evidence = f"{len(entries)} entries"
    if bins:
        evidence += "; CUDA bins in order: " + ", ".join(f"[{e.index}] {e.directory}" for e in bins)
    if dead:
        evidence += "; missing folders: " + ", ".join(f"[{e.index}] {e.directory}" for e in dead[:5])
    if odd:
        evidence += "; quoted or %VAR% entries: " + ", ".join(f"[{e.index}] {e.raw}" for e in odd[:5])
    if facts.python_flavour is PythonFlavour.STORE:
        evidence += "; Microsoft Store Python: PATH is not searched for DLLs"
    details = {"entries": [e.directory for e in entries], "stale": list(facts.stale_path)}
    if stale:
        return Check(
            check_id,
            title,
            Status.WARN,
            evidence + "; in the registry's PATH but not in this process's: " + ", ".join(stale),
            cause="this terminal or IDE was started before an installer added CUDA/cuDNN folders to PATH",
            fix="open a new terminal (restart the IDE, or sign out and in) so it gets the current PATH",
            details=details,
        )
    if odd:
        return Check(
            check_id,
            title,
            Status.WARN,
            evidence,
            cause="PATH entries with quotes or unexpanded %VAR% are taken literally by some loaders and tools "
            "(ortgpu strips and expands them; whether the Windows loader does is not verified)",
            fix="write those entries as plain folders without quotes (Settings > System > About > Advanced system "
            "settings > Environment Variables)",
            details=details,
        )
    return Check(check_id, title, Status.INFO if dead or len(bins) > 1 else Status.OK, evidence, details=details)


def disabled_check(value: str | None, reads_it: bool | None, check_id: str) -> Check | None:
    """ORT_CUDA_UNAVAILABLE silently disables the CUDA EP in the Python binding (W18)."""
    if not value:
        return None
    evidence = f"ORT_CUDA_UNAVAILABLE={value!r}"
    if reads_it is False:
        return Check(check_id, "ORT_CUDA_UNAVAILABLE", Status.INFO, evidence + "; this build does not read it")
    return Check(
        check_id,
        "ORT_CUDA_UNAVAILABLE",
        Status.FAIL,
        evidence,
        cause="ORT_CUDA_UNAVAILABLE is set: the Python binding never creates the CUDA EP and every session runs on CPU",
        fix="remove it: `Remove-Item Env:ORT_CUDA_UNAVAILABLE` (PowerShell) or `set ORT_CUDA_UNAVAILABLE=` (cmd), "
        "and delete it from the system environment variables",
        details={"problem": "ORT_CUDA_UNAVAILABLE is set", "component": "ONNX Runtime"},
    )


def driver_check(
    driver: Any, windriver: WindowsDriver, requirements: Any, cuda_major: int | None, check_id: str
) -> Check:
    """NVML, else nvcuda.dll's file version; against the build's CUDA major and the Windows minimum (W19)."""
    from ortgpu.env.matrix import Platform, max_cuda_for_driver

    title = "NVIDIA driver"
    version = driver.version or windriver.version_from_file
    supported = driver.cuda_driver_version or (max_cuda_for_driver(version, Platform.WINDOWS) if version else None)
    minimum = requirements.min_driver_windows if requirements is not None else None
    at_least = f" >= {minimum}" if minimum else ""
    nvcuda = (
        f"{windriver.nvcuda} {windriver.nvcuda_file_version or ''}".rstrip()
        if windriver.nvcuda
        else "no System32\\nvcuda.dll"
    )
    details: dict[str, Any] = {
        "nvcuda": windriver.nvcuda,
        "nvcuda_file_version": windriver.nvcuda_file_version,
        "component": "CUDA driver",
    }
    if not driver.present and windriver.nvcuda is None:
        details["problem"] = "no NVIDIA driver"
        return Check(
            check_id,
            title,
            Status.FAIL,
            f"NVML unavailable ({driver.error}); {nvcuda}",
            cause="no NVIDIA driver: nvcuda.dll (the CUDA driver API) is not in System32 and NVML cannot load",
            fix=f"install the NVIDIA display driver{at_least} (https://www.nvidia.com/drivers); " + _kb("FM-70"),
            details=details,
        )
    evidence = f"driver {version or 'unknown'}" + (f", supports CUDA <= {supported}" if supported else "")
    evidence += f", {len(driver.gpus)} GPU(s)" if driver.present else f"; NVML unavailable ({driver.error})"
    evidence += f"; {nvcuda}"
    if cuda_major and supported and version_tuple(supported)[:1] < (cuda_major,):
        details["problem"] = f"driver {version} supports only CUDA {supported}"
        return Check(
            check_id,
            title,
            Status.FAIL,
            evidence + f"; ORT needs CUDA {cuda_major}",
            cause=f"driver {version} supports CUDA {supported}, older than the CUDA {cuda_major} this ORT needs "
            '("CUDA driver version is insufficient for CUDA runtime version")',
            fix=f"update the NVIDIA driver{at_least} (https://www.nvidia.com/drivers), or use an ORT build for "
            f"CUDA {version_tuple(supported)[0]}",
            details=details,
        )
    if minimum and version and version_tuple(version) < version_tuple(minimum):
        return Check(
            check_id,
            title,
            Status.WARN,
            evidence + f"; the CUDA {cuda_major} build asks for >= {minimum}",
            cause=f"driver {version} is older than {minimum}: CUDA minor-version compatibility covers most work but "
            "PTX JIT can fail (CUDA error 222)",
            fix=f"update the NVIDIA driver to >= {minimum}",
            details=details,
        )
    if not driver.present:
        return Check(
            check_id,
            title,
            Status.WARN,
            evidence,
            cause="the driver is installed (nvcuda.dll) but NVML cannot be asked, so no GPU can be listed or tried",
            fix="`pip install nvidia-ml-py`"
            if driver.binding_missing
            else "run `nvidia-smi`; if it fails, reinstall the NVIDIA driver",
            details=details,
        )
    return Check(check_id, title, Status.OK, evidence, details=details)


def driver_model_check(windriver: WindowsDriver, check_id: str) -> Check | None:
    """WDDM (display GPUs: the TDR watchdog, no per-process memory figures) vs TCC/MCDM (W20)."""
    if not windriver.driver_models:
        return None
    tdr = windriver.tdr_delay_s if windriver.tdr_delay_s is not None else 2.0
    parts = []
    for index, model in windriver.driver_models:
        text = f"GPU {index}: {model}"
        if model == "WDDM":
            text += f" (TDR watchdog {tdr:g} s resets a kernel running longer; per-process GPU memory is not reported)"
        parts.append(text)
    details = {"models": dict(windriver.driver_models), "tdr_delay_s": tdr}
    return Check(check_id, "GPU driver model", Status.INFO, "; ".join(parts), details=details)


def _api_version(version: str | None) -> int | None:
    """ORT's C API version is its minor version (1.19 -> 19)."""
    parts = version_tuple(version)
    return parts[1] if len(parts) >= 2 and parts[0] == 1 else None


def shadowing_check(
    copies: Sequence[DllCopy], context: LoadContext, package_version: str | None, check_id: str
) -> Check | None:
    """Another onnxruntime.dll an .exe's search reaches: Windows 11's own System32 copy, another app's (W23)."""
    if not copies:
        return None
    title = "Other onnxruntime.dll copies"
    listed = "; ".join(f"{c.path} {c.file_version or '(no version)'} ({c.where})" for c in copies)
    if context.python:
        return Check(
            check_id,
            title,
            Status.INFO,
            f"{listed}: not used by the Python package (its core is in onnxruntime_pybind11_state.pyd), but a C/C++ "
            "program without its own onnxruntime.dll next to its .exe loads the first one",
        )
    first = copies[0]
    want, got = _api_version(package_version), _api_version(first.file_version)
    symptom = (
        f' ("The requested API version [{want}] is not available, only API versions [1, {got}] are supported")'
        if want and got and got < want
        else ""
    )
    return Check(
        check_id,
        title,
        Status.WARN,
        f"an .exe whose folder has no onnxruntime.dll reaches: {listed}",
        cause=f"unless your .exe's folder holds this package's onnxruntime.dll, Windows loads {first.path} "
        f"({first.file_version or 'another version'}) instead: System32 and earlier PATH entries come first{symptom}",
        fix="copy every DLL of the package's lib\\ folder (onnxruntime.dll, onnxruntime_providers_shared.dll, "
        "onnxruntime_providers_cuda.dll, and _tensorrt.dll if used) next to your .exe; putting lib\\ on PATH is not "
        "enough",
        details={"problem": f"{first.path} shadows the package's onnxruntime.dll", "component": "ONNX Runtime"},
    )


def _load_failure(attempt: LoadAttempt, unresolved: Sequence[DllResolution], env: _FixEnv) -> tuple[str, str]:
    error = attempt.error or ""
    code = windows_error_code(error)
    named = ", ".join(n.name for n in unresolved if n.kind is NeedKind.LOAD_TIME)  # run-time ones cannot cause 126
    if error.startswith("import onnxruntime"):
        cause = f"`import onnxruntime` fails in a fresh Python: {error.split(': ', 1)[-1]}"
        return cause, _kb("FM-28") if "DLL load failed" in error else "reinstall onnxruntime-gpu"
    if code == 126 and named:
        return f"error 126 (module not found) loading the provider: the emulated search misses {named}", (
            "see the provider check's fix"
        )
    if code == 126:
        return (
            "error 126 (module not found) loading the provider, although the emulated search finds every DLL: this "
            "process searches differently (a restricted default DLL search); please report it",
            _kb("FM-21"),
        )
    if code == 127:
        return (
            "error 127 (procedure not found): a DLL of the right name but another version was loaded first (mixed "
            "CUDA/cuDNN versions, torch's copies, or an old VC++ runtime)",
            "make every CUDA/cuDNN DLL come from one install (`where.exe cudnn64_*.dll cublas64_*.dll` lists the "
            "copies on PATH); with torch, `import torch` first and keep its CUDA/cuDNN majors equal to ORT's",
        )
    if code == 193:
        bad = next((n for n in unresolved if n.status is DllStatus.BAD_IMAGE), None)
        fix = _need_fix(bad, env) if bad else "reinstall onnxruntime-gpu; replace x86/ARM64 CUDA DLLs on PATH"
        return "error 193: a DLL in the load is for another CPU (x86/ARM64) or damaged", fix
    if code == 1114:
        return "error 1114: a DLL's initialisation failed, usually an msvcp140.dll older than ORT's", _kb("FM-28")
    if code == 1455:
        return (
            "error 1455: the paging file is too small to map the provider DLL (0.5 GB)",
            "increase the paging file: System > About > Advanced system settings > Performance > Virtual memory",
        )
    if code == 5:
        return (
            "error 5 (access denied): an antivirus or the file permissions block the DLL",
            "allow the site-packages folder in the antivirus and check the files' permissions",
        )
    if attempt.outcome is LoadOutcome.SESSION_FAILED:
        return "the DLLs load but the CUDA session fails or falls back to CPU", f"`ortgpu explain '{error[:160]}'`"
    if attempt.outcome is LoadOutcome.TIMEOUT:
        return "loading the CUDA provider did not finish in time", "run `nvidia-smi` to see whether the GPU is hung"
    return f"the CUDA provider does not load: {error}", f"`ortgpu explain '{error[:160]}'`"


def load_check(
    cuda: LibraryImports | None, attempt: LoadAttempt | None, unresolved: Sequence[DllResolution], env: _FixEnv
) -> Check:
    """The real LoadLibraryExW in a child python.exe, keyed by the Windows error code (W07, W13)."""
    title = "CUDA EP load attempt"
    if cuda is None or attempt is None:
        return Check("load.attempt", title, Status.SKIP, "no onnxruntime_providers_cuda.dll in the installed ORT")
    what = "import onnxruntime + LoadLibraryExW(LOAD_WITH_ALTERED_SEARCH_PATH)"
    what += " + CUDA session on a 1-Conv model" if attempt.session_requested else " only (no usable GPU)"
    details: dict[str, Any] = {"mode": what, "duration_s": round(attempt.duration_s, 3)}
    if attempt.ok:
        tail = (
            f"session providers {', '.join(attempt.session_providers)}"
            if attempt.session_requested
            else f"onnxruntime_providers_shared.dll and {cuda.name} load"
        )
        return Check("load.attempt", title, Status.OK, f"{what}: {tail}", details=details)
    details["code"] = windows_error_code(attempt.error)
    cause, fix = _load_failure(attempt, unresolved, env)
    evidence = f"{what}: {attempt.outcome.value}: {attempt.error}"
    return Check("load.attempt", title, Status.FAIL, evidence, cause=cause, fix=fix, details=details)


def long_path_check(capi_dir: str) -> Check | None:
    """ORT builds its providers' path in a MAX_PATH (260) buffer (W21)."""
    length = len(capi_dir) + len("\\onnxruntime_providers_cuda.dll")
    if length < 240:
        return None
    return Check(
        "windows.long_path",
        "Install path length",
        Status.WARN,
        f"{length} characters to onnxruntime_providers_cuda.dll",
        cause="ORT reads its own folder into a 260-character buffer; a longer path gives a wrong provider path "
        "(error 126)",
        fix="move the environment to a shorter folder (e.g. C:\\venvs\\ort)",
    )


def _matrix_check(requirements: Any, build: BuildNeeds, has_cuda: bool) -> Check:
    title = "ORT / CUDA / cuDNN / driver matrix"
    if not has_cuda:
        return Check("matrix", title, Status.SKIP, "no CUDA build of ORT installed: nothing to look up")
    if requirements is None:
        return Check(
            "matrix",
            title,
            Status.INFO,
            f"ORT {build.version or '?'} (CUDA {build.cuda_major}) is not in ortgpu's matrix: the DLLs cuDNN opens at "
            "run time are unverified; the PE imports above are exact",
        )
    parts = [f"ORT {requirements.ort_version}: CUDA {requirements.cuda_build or requirements.cuda_major}"]
    if requirements.cudnn_major:
        parts.append(f"cuDNN {requirements.cudnn_major}")
    if requirements.tensorrt_major:
        parts.append(f"TensorRT {requirements.tensorrt_major}")
    if requirements.min_driver_windows:
        parts.append(f"driver >= {requirements.min_driver_windows} (Windows)")
    if requirements.indirect_libraries_windows:
        parts.append("opened at run time: " + ", ".join(requirements.indirect_libraries_windows))
    state = "confirmed" if requirements.confirmed else "unconfirmed row"
    details = {"sources": list(requirements.sources)}
    return Check("matrix", title, Status.INFO, ", ".join(parts) + f" ({state})", details=details)


# --- entry points --------------------------------------------------------------------------------------------------


def platform_info(facts: HostFacts) -> PlatformInfo:
    return PlatformInfo(
        os="Windows",
        kernel=facts.windows_version,
        distro=None,
        arch=facts.process_machine,
        libc=None,
        glibc_version=None,
        wsl=False,
        python_version=facts.python_version,
        python_implementation="CPython",
        python_bits=32 if facts.process_machine == "x86" else 64,
        python_executable=facts.python_executable,
    )


def _paths(opened: Any, host: WindowsHost) -> dict[str, str]:
    return {member: host.display(local) for member, local in opened.files.items()}


def _hard_error(host: WindowsHost, build: BuildNeeds) -> bool:
    """ORT <= 1.18 raises instead of falling back when CUDA_PATH is set (the message is in its .pyd)."""
    return bool(build.pyd) and host.contains(build.pyd or "", b"CUDA_PATH is set but CUDA wasnt able to be loaded")


def _reads_disable_switch(host: WindowsHost, build: BuildNeeds) -> bool | None:
    return host.contains(build.pyd, b"ORT_CUDA_UNAVAILABLE") if build.pyd else None


def _common_checks(
    host: WindowsHost, win: WindowsReport, build: BuildNeeds, env: _FixEnv, ids: _Ids, unresolved: bool
) -> list[Check]:
    """CUDA_PATH, PATH, ORT_CUDA_UNAVAILABLE and other onnxruntime.dll copies: the same in both modes."""
    checks = [
        cuda_path_check(env, ids.cuda_path, _hard_error(host, build), unresolved),
        path_check(win.host, ids.path, host),
    ]
    reads = _reads_disable_switch(host, build) if win.context.python else False
    for extra in (
        disabled_check(win.cuda.ort_cuda_unavailable, reads, ids.disabled),
        shadowing_check(win.onnxruntime_dlls, win.context, build.version, ids.shadowing),
    ):
        if extra is not None:
            checks.append(extra)
    return checks


def windows_package_checks(
    analysis: PackageAnalysis, opened: Any, host: WindowsHost, driver: Any = None
) -> tuple[Check, ...]:
    """doctor --package on a Windows host: each need of the package resolved against it, as the loader will."""
    from ortgpu.env.matrix import requirements_for
    from ortgpu.env.nvml import query_driver
    from ortgpu.env.package_host import python_tag_check

    facts = host_facts(host)
    paths = _paths(opened, host)
    roles = {lib.role: paths.get(lib.member) for lib in analysis.libraries}
    wheel = LibraryRole.PYTHON_BINDING in roles
    # A wheel loads from python.exe; a release zip's DLLs are assumed next to the .exe that loads onnxruntime.dll.
    first = roles.get(LibraryRole.CORE) or roles.get(LibraryRole.PROVIDERS_SHARED) or ""
    context = LoadContext(
        python=wheel,
        app_dir=facts.app_dir if wheel else ntpath.dirname(first),
        packaged=wheel and facts.python_flavour is PythonFlavour.STORE,
    )
    win, build, _ = survey(host, facts, analysis, paths, context)
    env = _FixEnv(build, win.cuda, facts, context)
    machine = next((lib.machine for lib in analysis.libraries if lib.format == "pe"), None)
    checks = [platform_check(facts, _PACKAGE_IDS.platform, machine)]
    python = python_tag_check(analysis, facts.python_version, "CPython") if wheel else None
    if python is not None:
        checks.append(python)
    checks.append(vc_runtime_check(win.vc_runtime, facts, _PACKAGE_IDS.vc, context))
    if analysis.cuda_major is not None or LibraryRole.CUDA in roles:
        driver = driver or query_driver(host.nvml(), host.environ())
        requirements = requirements_for(analysis.version, analysis.cuda_major) if analysis.version else None
        checks.append(driver_check(driver, win.driver, requirements, analysis.cuda_major, _PACKAGE_IDS.driver))
        model = driver_model_check(win.driver, _PACKAGE_IDS.driver_model)
        if model is not None:
            checks.append(model)
    checks += need_checks(win.libraries, env)
    unresolved = any(_blocking(n, lib.role) for lib in win.libraries for n in lib.needs)
    checks += _common_checks(host, win, build, env, _PACKAGE_IDS, unresolved)
    return tuple(checks)


@dataclass(frozen=True)
class WindowsDiagnosis:
    """What `diagnose()` needs from the Windows path to build its DoctorReport."""

    checks: tuple[Check, ...]
    platform: PlatformInfo
    distributions: Any  # DistributionsReport, its paths shown as Windows paths
    ort: Any  # OrtBuild
    load_attempt: LoadAttempt | None
    preload_attempt: LoadAttempt | None
    mapped: tuple[Any, ...]  # MappedLibrary
    driver: Any  # DriverInfo
    visible: Any  # VisibleDevices | None
    requirements: Any
    report: WindowsReport


def _display_distributions(dists: Any, host: WindowsHost) -> Any:
    def show(path: Path | None) -> Path | None:
        return Path(host.display(path)) if path is not None else None

    return replace(
        dists,
        distributions=tuple(replace(d, site_dir=show(d.site_dir)) for d in dists.distributions),
        module_dir=show(dists.module_dir),
    )


def _origin(path: str, win: WindowsReport) -> str:
    folder = ntpath.dirname(path)
    if ntpath.basename(path).lower().startswith(("nvcuda", "nvml")):
        return "driver"
    known = next((f for f in win.cuda.folders if same_dir(f.path, folder)), None)
    if known is not None:
        return known.kind.value
    if same_dir(folder, win.host.app_dir):
        return "python.exe's folder"
    if any(same_dir(folder, d) for d in (win.host.system_dir, win.host.windows_dir)):
        return "system"
    return "PATH folder" if any(same_dir(folder, e.directory) for e in win.host.path) else "other"


def _mapped(attempt: LoadAttempt | None, resolver: DllResolver, win: WindowsReport) -> tuple[Any, ...]:
    """The modules the child really held after the session, each with the search step that predicted it."""
    from ortgpu.env.doctor_checks.facts import MappedLibrary
    from ortgpu.env.package import classify_library

    if attempt is None or not attempt.ok:
        return ()
    out = []
    for path in attempt.mapped:
        text = str(path)
        name = ntpath.basename(text)
        if name.lower().startswith("onnxruntime"):
            continue
        predicted = resolver.loaded.get(name.lower())
        if predicted is None or predicted.chosen is None:
            why = "opened at run time by another DLL (not predicted by the emulated search)"
        elif predicted.chosen.path.lower() == text.lower():
            why = f"found in {predicted.chosen.where}"
        else:
            why = f"loaded from elsewhere than the emulated search predicts ({predicted.chosen.path})"
        out.append(MappedLibrary(path, classify_library(name).value, _origin(text, win), why))
    return tuple(out)


def _analyse_installed(dists: Any, host: WindowsHost) -> tuple[PackageAnalysis | None, dict[str, str]]:
    """The installed onnxruntime folder read as a package (its version from the dist-info beside it)."""
    from ortgpu.env.archive import PackageError, open_package
    from ortgpu.env.package import analyse_package

    if dists.module_dir is None or not (dists.module_dir / "capi").is_dir():
        return None, {}
    owner = dists.loaded_distribution
    try:
        with open_package(dists.module_dir) as opened:
            analysis = analyse_package(opened, metadata=(owner.name, owner.version) if owner else None)
            return analysis, _paths(opened, host)
    except PackageError:
        return None, {}  # no ORT library in the module folder: the distribution checks say what is wrong


def diagnose_windows(
    host: WindowsHost,
    report: Progress,
    *,
    nvml: Any = None,
    ort_query: Callable[[Path | None], Any],
    load_timeout_s: float = 120.0,
) -> WindowsDiagnosis:
    """Every Windows check of this machine, in the doctor's order (see ortgpu.env.doctor for the verdict)."""
    from ortgpu.env.distributions import find_distributions
    from ortgpu.env.doctor_checks import gpu as gpu_checks
    from ortgpu.env.doctor_checks import host as host_checks
    from ortgpu.env.doctor_checks import ort as ort_checks
    from ortgpu.env.doctor_checks.facts import ProviderLibrary
    from ortgpu.env.doctor_checks.loading import mapped_check
    from ortgpu.env.matrix import Platform, known_sm_archs, requirements_for
    from ortgpu.env.nvml import map_visible_devices, query_driver

    report("Windows, CPU and Python", 0.05)
    facts = host_facts(host)
    plat = platform_info(facts)
    checks = [platform_check(facts, _DOCTOR_IDS.platform), host_checks.python_check(plat), python_flavour_check(facts)]

    report("installed onnxruntime distributions", 0.15)
    dists = find_distributions([str(p) for p in map(host.local, host.sys_path()) if p is not None])
    ort = ort_query(dists.module_dir)
    shown = _display_distributions(dists, host)

    report("resolving ORT's DLLs as the Windows loader will", 0.3)
    analysis, paths = _analyse_installed(dists, host)
    context = LoadContext(True, facts.app_dir, facts.python_flavour is PythonFlavour.STORE)
    win, build, resolver = survey(host, facts, analysis, paths, context)
    env = _FixEnv(build, win.cuda, facts, context)
    environ = host.environ()
    driver = query_driver(nvml if nvml is not None else host.nvml(), environ)
    visible = map_visible_devices(driver.gpus, environ.get("CUDA_VISIBLE_DEVICES"), environ.get("CUDA_DEVICE_ORDER"))
    requirements = requirements_for(build.version, build.cuda_major) if build.version else None
    checks.append(vc_runtime_check(win.vc_runtime, facts, _DOCTOR_IDS.vc, context))
    checks += ort_checks.distribution_checks(shown, ort)
    checks.append(ort_checks.ort_build_check(shown, ort))
    by_role = {lib.role: lib for lib in win.libraries}
    cuda_lib, shared = by_role.get(LibraryRole.CUDA), by_role.get(LibraryRole.PROVIDERS_SHARED)

    report("loading the CUDA provider in a child process", 0.55)
    gpu_usable = driver.present and bool(visible.devices)
    attempt = preload = None
    if cuda_lib is not None and dists.module_dir is not None:
        libs = [lib.path for lib in (shared, cuda_lib) if lib is not None]
        parent = host.display(dists.module_dir.parent)
        attempt = host.load(libs, session=gpu_usable, module_parent=parent, timeout_s=load_timeout_s)
        pip_only = any(n.status is DllStatus.OFF_PATH and _in_pip_package(n, win.cuda.folders) for n in cuda_lib.needs)
        if not attempt.ok and pip_only and _ge(build.version, (1, 21)):
            preload = host.load(libs, session=gpu_usable, module_parent=parent, preload=True, timeout_s=load_timeout_s)
    unresolved = [n for lib in win.libraries for n in lib.needs if _blocking(n, lib.role)]
    if cuda_lib is not None:
        checks.append(provider_check(_with_shared(cuda_lib, shared), env, "cuda", attempt))
    if LibraryRole.TENSORRT in by_role:
        checks.append(provider_check(by_role[LibraryRole.TENSORRT], env, "tensorrt"))
    checks.append(load_check(cuda_lib, attempt, unresolved, env))
    if preload is not None:
        evidence = preload.outcome.value + (f": {preload.error}" if preload.error else "")
        checks.append(Check("load.preload", "With onnxruntime.preload_dlls() first", Status.INFO, evidence))
    mapped = _mapped(attempt, resolver, win)
    if mapped:
        checks.append(mapped_check(mapped))

    report("CUDA_PATH, PATH and the ORT switches", 0.7)
    checks += _common_checks(host, win, build, env, _DOCTOR_IDS, bool(unresolved))
    long_path = long_path_check(ntpath.dirname(cuda_lib.path)) if cuda_lib is not None else None
    if long_path is not None:
        checks.append(long_path)

    report("driver and GPUs", 0.85)
    checks.append(driver_check(driver, win.driver, requirements, build.cuda_major, _DOCTOR_IDS.driver))
    model = driver_model_check(win.driver, _DOCTOR_IDS.driver_model)
    if model is not None:
        checks.append(model)
    if cuda_lib is not None:
        # the fatbin reader is ELF-only: the matrix's Windows arch list stands in for it
        stand_in = ProviderLibrary(
            "cuda", Path(cuda_lib.path), (), None, build.cuda_major, build.cudnn_major, None, False
        )
        known = known_sm_archs(build.version, build.cuda_major, Platform.WINDOWS) if build.version else None
        checks += [gpu_checks.gpu_check(gpu, None, stand_in, known) for gpu in driver.gpus]
    if driver.present:
        checks.append(gpu_checks.visible_check(visible, driver))
    checks.append(_matrix_check(requirements, build, cuda_lib is not None))
    return WindowsDiagnosis(
        checks=tuple(checks),
        platform=plat,
        distributions=shown,
        ort=ort,
        load_attempt=attempt,
        preload_attempt=preload,
        mapped=mapped,
        driver=driver,
        visible=visible if driver.present else None,
        requirements=requirements,
        report=win,
    )


def _in_pip_package(need: DllResolution, folders: Sequence[DllFolder]) -> bool:
    return any((f := _folder_of(c, folders)) is not None and f.kind is FolderKind.NVIDIA_PIP for c in need.off_path)


def _with_shared(library: LibraryImports, shared: LibraryImports | None) -> LibraryImports:
    """ORT loads onnxruntime_providers_shared.dll first: its needs count for every provider (the CUDA EP's check)."""
    if shared is None or library.role is not LibraryRole.CUDA:
        return library
    extra = tuple(n for n in shared.needs if n.name.lower() not in {m.name.lower() for m in library.needs})
    return replace(library, needs=extra + library.needs)
