"""Checks of the Windows machine itself: CPU and emulation, Python flavour, VC++ runtime, driver, long paths."""

from __future__ import annotations

import ntpath
from typing import Any

from ortgpu.doctor.checks.windows.fixes import kb_fix, redist_fix
from ortgpu.doctor.verdict import Check, Status
from ortgpu.host.windows import same_dir
from ortgpu.host.windows_facts import HostFacts, PythonFlavour, WindowsDriver
from ortgpu.knowledge.matrix import Platform, max_cuda_for_driver
from ortgpu.loader.windows import BuildNeeds, DllCopy, DllResolution, LoadContext, VcRuntimeReport
from ortgpu.versions import version_tuple

__all__ = [
    "driver_check",
    "driver_model_check",
    "long_path_check",
    "matrix_check",
    "platform_check",
    "python_flavour_check",
    "vc_runtime_check",
]


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
            fix=redist_fix() + ship,
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
                fix=redist_fix(),
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
        fixes.append(redist_fix())
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


def driver_check(
    driver: Any, windriver: WindowsDriver, requirements: Any, cuda_major: int | None, check_id: str
) -> Check:
    """NVML, else nvcuda.dll's file version; against the build's CUDA major and the Windows minimum (W19)."""

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
            fix=f"install the NVIDIA display driver{at_least} (https://www.nvidia.com/drivers); " + kb_fix("FM-70"),
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
    parts: list[str] = []
    for index, model in windriver.driver_models:
        text = f"GPU {index}: {model}"
        if model == "WDDM":
            text += f" (TDR watchdog {tdr:g} s resets a kernel running longer; per-process GPU memory is not reported)"
        parts.append(text)
    details = {"models": dict(windriver.driver_models), "tdr_delay_s": tdr}
    return Check(check_id, "GPU driver model", Status.INFO, "; ".join(parts), details=details)


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


def matrix_check(requirements: Any, build: BuildNeeds, has_cuda: bool) -> Check:
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
    parts: list[str] = []
    if requirements.min_driver_windows:
        parts.append(f"driver >= {requirements.min_driver_windows} (Windows)")
    if requirements.indirect_libraries_windows:
        parts.append("opened at run time: " + ", ".join(requirements.indirect_libraries_windows))
    details = {"sources": list(requirements.sources)}
    return Check("matrix", title, Status.INFO, requirements.describe_row(parts), details=details)
