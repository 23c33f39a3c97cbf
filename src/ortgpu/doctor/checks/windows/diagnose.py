"""The Windows entry points of `doctor` and `doctor --package`: gather facts, run every check in order."""

from __future__ import annotations

import ntpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ortgpu.doctor.checks import gpu as gpu_checks
from ortgpu.doctor.checks import host as host_checks
from ortgpu.doctor.checks import ort as ort_checks
from ortgpu.doctor.checks.facts import MappedLibrary, ProviderLibrary
from ortgpu.doctor.checks.loading import mapped_check
from ortgpu.doctor.checks.windows.dlls import load_check, need_checks, provider_check, shadowing_check
from ortgpu.doctor.checks.windows.fixes import FixEnv, folder_of, is_blocking
from ortgpu.doctor.checks.windows.machine import (
    driver_check,
    driver_model_check,
    long_path_check,
    matrix_check,
    platform_check,
    python_flavour_check,
    vc_runtime_check,
)
from ortgpu.doctor.checks.windows.variables import cuda_path_check, disabled_check, path_check
from ortgpu.doctor.package_host import python_tag_check
from ortgpu.doctor.verdict import Check, Status
from ortgpu.host import nvml as nvml_probe
from ortgpu.host.distributions import find_distributions
from ortgpu.host.load_attempt import LoadAttempt
from ortgpu.host.nvml import map_visible_devices
from ortgpu.host.platform_probe import PlatformInfo
from ortgpu.host.windows import WindowsHost, same_dir
from ortgpu.host.windows_facts import DllFolder, FolderKind, HostFacts, PythonFlavour, host_facts
from ortgpu.knowledge.matrix import Platform, known_sm_archs, requirements_for
from ortgpu.loader.windows import (
    BuildNeeds,
    DllResolution,
    DllResolver,
    DllStatus,
    LibraryImports,
    LoadContext,
    WindowsReport,
    survey,
)
from ortgpu.package.analysis import LibraryRole, PackageAnalysis, analyse_package, classify_library
from ortgpu.package.archive import PackageError, open_package
from ortgpu.progress import Progress
from ortgpu.versions import version_at_least

__all__ = [
    "WindowsDiagnosis",
    "diagnose_windows",
    "platform_info",
    "windows_package_checks",
]


# Check ids: "windows.*" for doctor, "host.*" for doctor --package (as the Linux host checks are named).
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
    host: WindowsHost, win: WindowsReport, build: BuildNeeds, env: FixEnv, ids: _Ids, unresolved: bool
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
    env = FixEnv(build, win.cuda, facts, context)
    machine = next((lib.machine for lib in analysis.libraries if lib.format == "pe"), None)
    checks = [platform_check(facts, _PACKAGE_IDS.platform, machine)]
    python = python_tag_check(analysis, facts.python_version, "CPython") if wheel else None
    if python is not None:
        checks.append(python)
    checks.append(vc_runtime_check(win.vc_runtime, facts, _PACKAGE_IDS.vc, context))
    if analysis.cuda_major is not None or LibraryRole.CUDA in roles:
        driver = driver or nvml_probe.query_driver(host.nvml(), host.environ())
        requirements = requirements_for(analysis.version, analysis.cuda_major) if analysis.version else None
        checks.append(driver_check(driver, win.driver, requirements, analysis.cuda_major, _PACKAGE_IDS.driver))
        model = driver_model_check(win.driver, _PACKAGE_IDS.driver_model)
        if model is not None:
            checks.append(model)
    checks += need_checks(win.libraries, env)
    unresolved = any(is_blocking(n, lib.role) for lib in win.libraries for n in lib.needs)
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
    """Every Windows check of this machine, in the doctor's order (see ortgpu.doctor.machine for the verdict)."""

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
    env = FixEnv(build, win.cuda, facts, context)
    environ = host.environ()
    driver = nvml_probe.query_driver(nvml if nvml is not None else host.nvml(), environ)
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
        if not attempt.ok and pip_only and version_at_least(build.version, (1, 21)):
            preload = host.load(libs, session=gpu_usable, module_parent=parent, preload=True, timeout_s=load_timeout_s)
    unresolved = [n for lib in win.libraries for n in lib.needs if is_blocking(n, lib.role)]
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
    checks.append(matrix_check(requirements, build, cuda_lib is not None))
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
    return any((f := folder_of(c, folders)) is not None and f.kind is FolderKind.NVIDIA_PIP for c in need.off_path)


def _with_shared(library: LibraryImports, shared: LibraryImports | None) -> LibraryImports:
    """ORT loads onnxruntime_providers_shared.dll first: its needs count for every provider (the CUDA EP's check)."""
    if shared is None or library.role is not LibraryRole.CUDA:
        return library
    extra = tuple(n for n in shared.needs if n.name.lower() not in {m.name.lower() for m in library.needs})
    return replace(library, needs=extra + library.needs)
