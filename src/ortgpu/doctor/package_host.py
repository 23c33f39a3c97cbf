"""Checks a Linux ORT package's needs against this machine: glibc, Python, NVIDIA driver, each needed library."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from ortgpu.binfmt.binary import ElfInfo, PeInfo
from ortgpu.doctor.verdict import Check, Status
from ortgpu.host import nvml
from ortgpu.host.nvml import DriverInfo
from ortgpu.host.platform_probe import PlatformInfo, probe_platform
from ortgpu.loader.linux import LibraryResolution, LibStatus, LoaderEnv, resolve_needs
from ortgpu.package.analysis import (
    Component,
    LibraryRole,
    NeedKind,
    PackageAnalysis,
    PackageFlavour,
    RequirementKind,
    classify_library,
)
from ortgpu.versions import version_at_least, version_tuple

__all__ = ["linux_host_checks", "python_tag_check"]

# Libraries whose needs must all be met for the CUDA EP to load; the others only serve optional providers.
_ESSENTIAL = {LibraryRole.CORE, LibraryRole.PYTHON_BINDING, LibraryRole.PROVIDERS_SHARED, LibraryRole.CUDA}
# Opened at run time only by the operators that use them (FFT, random, runtime-compiled kernels).
_OPTIONAL_AT_RUN_TIME = {Component.CUFFT, Component.CURAND, Component.NVRTC}


def linux_host_checks(
    analysis: PackageAnalysis,
    binaries: Mapping[str, ElfInfo | PeInfo],
    bundled: Collection[str],
    *,
    env: LoaderEnv | None = None,
    here: PlatformInfo | None = None,
    driver: DriverInfo | None = None,
) -> tuple[Check, ...]:
    """One check per need of the package on this machine; `env`, `here` and `driver` default to the real ones.

    `binaries` maps package members to their parsed headers (the files they point at must still exist:
    RPATH/RUNPATH `$ORIGIN` is expanded from them); `bundled` is the file names the package ships.
    """

    here = here or probe_platform()
    checks = [_glibc_check(analysis, here.glibc_version)]
    python = python_tag_check(analysis, here.python_version, here.python_implementation)
    if python:
        checks.append(python)
    if analysis.flavour is PackageFlavour.GPU:
        if driver is None:
            driver = nvml.query_driver()
        checks.append(_driver_check(analysis, driver))
    env = env or LoaderEnv.from_system()
    # soname -> (resolution, roles of the package libraries it serves, lazy)
    seen: dict[str, tuple[LibraryResolution, set[LibraryRole], bool]] = {}
    for lib in analysis.libraries:
        info = binaries.get(lib.member)
        if not isinstance(info, ElfInfo):
            continue
        lazy = [n.name for n in lib.needs if n.kind in (NeedKind.LAZY, NeedKind.INDIRECT)]
        for result in resolve_needs(info, env, lazy=lazy, recursive=True):
            entry = seen.setdefault(result.soname, (result, set(), result.lazy))
            entry[1].add(lib.role)
    system_ok: list[str] = []
    for soname, (result, roles, opened_lazily) in seen.items():
        if soname in bundled:
            continue  # shipped in the package, next to the library that needs it
        if result.system and result.ok:
            system_ok.append(soname)
            continue
        checks.append(_library_check(analysis, result, roles, opened_lazily))
    if system_ok:
        checks.append(
            Check(
                id="host.lib.system",
                title="C/C++ runtime",
                status=Status.OK,
                evidence=f"found: {', '.join(sorted(system_ok))}",
            )
        )
    return tuple(checks)


def _glibc_check(analysis: PackageAnalysis, glibc: str | None) -> Check:
    floor = analysis.glibc_floor
    if floor is None:
        return Check(id="host.glibc", title="glibc", status=Status.INFO, evidence="the package states no glibc floor")
    if glibc is None:
        return Check(
            id="host.glibc",
            title="glibc",
            status=Status.FAIL,
            evidence=f"this machine's C library is not glibc; the package needs glibc >= {floor}",
            cause="ORT's Linux packages are built against glibc (manylinux); a musl system cannot load them",
            fix="use a glibc-based distribution or container image (Debian, Ubuntu, RHEL 8+)",
            details={"problem": "the C library is not glibc"},
        )
    if version_tuple(glibc) < version_tuple(floor):
        return Check(
            id="host.glibc",
            title="glibc",
            status=Status.FAIL,
            evidence=f"glibc {glibc} here; the package needs >= {floor}",
            cause=f"glibc {glibc} is older than the {floor} the package's libraries ask for",
            fix=f"run on a system with glibc >= {floor} (e.g. Ubuntu 20.04+, RHEL 8+) or use an older ORT release",
            details={"problem": f"glibc {glibc} is older than {floor}"},
        )
    return Check(id="host.glibc", title="glibc", status=Status.OK, evidence=f"glibc {glibc} >= {floor}")


def python_tag_check(analysis: PackageAnalysis, version: str, implementation: str) -> Check | None:
    """Does the wheel's Python tag fit this Python (None: not a wheel)?"""
    req = analysis.requirement(RequirementKind.PYTHON)
    if req is None:
        return None
    major, minor = version.split(".")[:2]
    prefix = "cp" if implementation == "CPython" else "pp"
    accepted = {f"{prefix}{major}{minor}", f"py{major}", f"py{major}{minor}"}
    abi3 = any(t.split("-")[1] == "abi3" for t in analysis.wheel_tags if t.count("-") == 2)
    if set(req.value.split(", ")) & accepted or (abi3 and prefix == "cp"):
        return Check(id="host.python", title="Python", status=Status.OK, evidence=f"{req.value} fits Python {version}")
    return Check(
        id="host.python",
        title="Python",
        status=Status.WARN,
        evidence=f"the wheel is for {req.value}; this Python is {implementation} {version}",
        cause="pip installs a wheel only on the Python it was built for",
        fix="download the wheel for this Python: pip download --no-deps --only-binary=:all: "
        f"{analysis.distribution or 'onnxruntime-gpu'}=={analysis.version or 'X.Y.Z'}",
    )


def _driver_check(analysis: PackageAnalysis, driver: DriverInfo) -> Check:
    req = analysis.requirement(RequirementKind.DRIVER)
    minimum = req.value.removeprefix(">= ") if req else None
    at_least = f" >= {minimum}" if minimum else ""
    need = f"CUDA {analysis.cuda_major}" if analysis.cuda_major else "CUDA"
    if driver.binding_missing:
        return Check(
            id="host.driver",
            title="NVIDIA driver",
            status=Status.SKIP,
            evidence="not checked: the nvidia-ml-py package (NVML binding) is not installed; "
            "the libcuda.so.1 check below still says whether the driver library is there",
        )
    if not driver.present:
        return Check(
            id="host.driver",
            title="NVIDIA driver",
            status=Status.FAIL,
            evidence=f"no NVIDIA driver: {driver.error or 'NVML not available'}",
            cause=f"the CUDA EP needs the NVIDIA driver (libcuda) for {need}; none is installed or loadable",
            fix=f"install the NVIDIA driver{at_least} and check with `nvidia-smi` "
            "(in a container: start it with --gpus all and the NVIDIA container toolkit)",
            details={"problem": "no NVIDIA driver"},
        )
    supported = driver.cuda_driver_version
    evidence = f"driver {driver.version} (CUDA up to {supported or 'unknown'})"
    supported_major = version_tuple(supported)[:1]
    if analysis.cuda_major and supported_major and supported_major[0] < analysis.cuda_major:
        return Check(
            id="host.driver",
            title="NVIDIA driver",
            status=Status.FAIL,
            evidence=f"{evidence}; the package needs {need}",
            cause=f"driver {driver.version} supports CUDA {supported}, older than the {need} this build needs "
            "(CUDA error 35: driver version is insufficient for CUDA runtime version)",
            fix=f"upgrade the NVIDIA driver{at_least}, or use an ORT build for CUDA {supported_major[0]}",
            details={"problem": f"driver {driver.version} supports only CUDA {supported}, the package needs {need}"},
        )
    if minimum and driver.version and version_tuple(driver.version) < version_tuple(minimum):
        return Check(
            id="host.driver",
            title="NVIDIA driver",
            status=Status.FAIL,
            evidence=f"{evidence}; the version matrix asks for >= {minimum}",
            cause=f"driver {driver.version} is older than the {minimum} the {need} build needs",
            fix=f"upgrade the NVIDIA driver to >= {minimum}",
            details={"problem": f"driver {driver.version} is older than {minimum}"},
        )
    return Check(id="host.driver", title="NVIDIA driver", status=Status.OK, evidence=f"{evidence}; needs {need}")


def _library_check(analysis: PackageAnalysis, result: LibraryResolution, roles: set[LibraryRole], lazy: bool) -> Check:
    component = classify_library(result.soname)
    how = "opened at run time, not in DT_NEEDED" if lazy else f"needed by {result.requested_by}"
    essential = bool(roles & _ESSENTIAL) and (not lazy or component not in _OPTIONAL_AT_RUN_TIME)
    if essential:
        scope = ""
    elif roles & _ESSENTIAL:
        scope = " (only some operators need it)"
    else:
        scope = " (only the TensorRT or another optional EP needs it)"
    details = {
        "soname": result.soname,
        "component": component.value,
        "status": result.status.value,
        "path": str(result.path) if result.path else None,
        "source": result.source.value if result.source else None,
        "requested_by": result.requested_by,
        "lazy": lazy,
        "for": sorted(r.value for r in roles),
        "essential": essential,
    }
    check_id, title = f"host.lib.{result.soname}", f"{component.value}: {result.soname}"
    if result.status is LibStatus.FOUND:
        real = f" ({result.real_name})" if result.real_name and result.real_name != result.soname else ""
        source = result.source.value if result.source else "loader"
        return Check(check_id, title, Status.OK, f"{result.path}{real} via {source}; {how}", details=details)
    severity = Status.FAIL if essential else Status.WARN
    if result.status is LibStatus.PIP_ONLY:
        preload = version_at_least(analysis.version, (1, 21))
        folder = result.path.parent if result.path else "the nvidia pip package's lib folder"
        details["problem"] = f"{result.soname} is only in a pip package the loader does not search"
        return Check(
            check_id,
            title,
            Status.WARN if preload or not essential else Status.FAIL,
            f"only in a pip package: {result.path}; {how}{scope}",
            cause=f"{result.soname} is only in an nvidia-* pip package, which the loader does not search by itself",
            fix=(
                "call onnxruntime.preload_dlls() before creating the session, or "
                if preload
                else "this ORT (< 1.21) does not preload pip libraries: "
            )
            + f"add {folder} to LD_LIBRARY_PATH",
            details=details,
        )
    fix = _install_fix(analysis, component, result.soname)
    if result.status is LibStatus.WRONG_MAJOR:
        others = ", ".join(p.name for p in result.other_versions[:4])
        details["problem"] = f"{result.soname} ({component.value}) not found, only {others}"
        return Check(
            check_id,
            title,
            severity,
            f"not found; other versions only: {others}; {how}{scope}",
            cause=f"{result.soname} is needed but this machine has only another version ({others})",
            fix=fix,
            details=details,
        )
    details["problem"] = f"{result.soname} ({component.value}) not found"
    return Check(
        check_id,
        title,
        severity,
        f"not found by the loader; {how}{scope}",
        cause=f"{result.soname} ({component.value}) is not on the loader's search path",
        fix=fix,
        details=details,
    )


_PIP_NAMES = {
    Component.CUDA_RUNTIME: "nvidia-cuda-runtime",
    Component.CUBLAS: "nvidia-cublas",
    Component.CUFFT: "nvidia-cufft",
    Component.CURAND: "nvidia-curand",
    Component.NVRTC: "nvidia-cuda-nvrtc",
}


def _install_fix(analysis: PackageAnalysis, component: Component, soname: str) -> str:
    """A concrete install command for a missing library, fitted to the package's CUDA major and ORT version."""
    cuda = analysis.cuda_major
    preload = version_at_least(analysis.version, (1, 21))
    then = (
        "then call onnxruntime.preload_dlls() before creating a session (or add its lib folder to LD_LIBRARY_PATH)"
        if preload
        else "then add its lib folder (site-packages/nvidia/.../lib) to LD_LIBRARY_PATH"
    )
    if component is Component.CUDA_DRIVER:
        return "install the NVIDIA driver (it provides libcuda.so.1) and check with `nvidia-smi`"
    if component in _PIP_NAMES and cuda:
        if "cuda" in analysis.pip_extras and analysis.distribution and analysis.version:
            extras = "cuda,cudnn" if "cudnn" in analysis.pip_extras else "cuda"
            pip = f"pip install '{analysis.distribution}[{extras}]=={analysis.version}'"
        else:
            package = _PIP_NAMES[component] + (f"-cu{cuda}" if cuda < 13 else "")  # CUDA 13 dropped the suffix
            pip = (
                f"pip install '{package}=={cuda}.*'"
                if component is Component.CUDA_RUNTIME
                else f"pip install {package}"
            )
        return f"{pip} {then}; or install the CUDA {cuda}.x toolkit and add its lib64 folder to LD_LIBRARY_PATH"
    if component is Component.CUDNN and cuda:
        cudnn = analysis.cudnn_major
        pin = f"=={cudnn}.*" if cudnn else ""
        named = f"cuDNN {cudnn}" if cudnn else "cuDNN"
        return f"pip install 'nvidia-cudnn-cu{cuda}{pin}' {then}; or install {named} for CUDA {cuda} from NVIDIA"
    if component is Component.TENSORRT:
        trt = analysis.tensorrt_major
        if trt and trt >= 10 and cuda:
            return f"pip install 'tensorrt-cu{cuda}=={trt}.*' and add its tensorrt_libs folder to LD_LIBRARY_PATH"
        if trt:
            for_cuda = f" for CUDA {cuda}" if cuda else ""
            return f"install TensorRT {trt}.x{for_cuda} and add its lib folder to LD_LIBRARY_PATH"
        return "install TensorRT and add its lib folder to LD_LIBRARY_PATH (only the TensorRT EP needs it)"
    return (
        f"install the package that provides {soname} (`apt-file search {soname}`) or add its folder to LD_LIBRARY_PATH"
    )
