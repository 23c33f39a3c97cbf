"""`ortgpu doctor` for this machine: every check with its evidence, then one verdict and the fix that matters most.

Checks run in this order: platform, Python, ORT distributions, the ORT build, its provider
libraries and what they need, a real load attempt in a child process, the NVIDIA driver and
GPUs, CUDA_VISIBLE_DEVICES, the version matrix. The verdict picks the most fundamental failure:
no driver beats missing CUDA/cuDNN libraries, which beat a CPU-only ORT shadowing the GPU one.
A Windows host (real, or simulated through `Probes.windows`) runs the same order with the Windows
checks of ortgpu.doctor.checks.windows and the same verdict.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ortgpu.binfmt.binary import BinaryFormatError, read_elf
from ortgpu.binfmt.fatbin import KernelArchs, read_kernel_archs
from ortgpu.doctor.checks import gpu as gpu_checks
from ortgpu.doctor.checks import host, loading
from ortgpu.doctor.checks import ort as ort_checks
from ortgpu.doctor.checks.facts import MappedLibrary, OrtBuild, ProviderLibrary
from ortgpu.doctor.checks.windows import diagnose_windows
from ortgpu.doctor.mapped import mapped_libraries
from ortgpu.doctor.timing import ProbeTimer
from ortgpu.doctor.verdict import Check, root_cause
from ortgpu.errors import ExitCode
from ortgpu.host.distributions import DistributionFlavour, DistributionsReport, find_distributions
from ortgpu.host.load_attempt import LoadAttempt, PrestartedChild, attempt_load, provider_libraries
from ortgpu.host.nvml import (
    DriverInfo,
    VisibleDevices,
    kernel_module_version,
    map_visible_devices,
    nvidia_pci_devices,
    query_driver,
)
from ortgpu.host.platform_probe import PlatformInfo, probe_platform
from ortgpu.host.windows import RealWindowsHost, WindowsHost
from ortgpu.knowledge.matrix import (
    OrtBuildRequirements,
    SmArchs,
    cuda_major_from_libraries,
    cudnn_major_from_libraries,
    known_sm_archs,
    requirements_for,
    tensorrt_major_from_libraries,
)
from ortgpu.loader.linux import LibraryResolution, LibStatus, LoaderEnv, Source, resolve, resolve_needs
from ortgpu.loader.windows import WindowsReport
from ortgpu.progress import Progress, silent
from ortgpu.runtime.preload import PreloadPlan, plan_preload
from ortgpu.versions import version_tuple

__all__ = ["DoctorReport", "MappedLibrary", "OrtBuild", "Probes", "ProviderLibrary", "diagnose", "query_ort"]


@dataclass(frozen=True)
class Probes:
    """Every input of the diagnosis, replaceable so tests can simulate any machine."""

    environ: Mapping[str, str] | None = None  # None: os.environ
    sys_path: Sequence[str] | None = None  # None: sys.path
    ldconfig_text: str | None = None  # `ldconfig -p` output; None: read this machine's cache
    loader_root: Path = Path("/")  # where the loader's default directories (/lib, /usr/lib...) live
    nvml: Any = None  # a pynvml-like object; None: pynvml itself
    platform: PlatformInfo | None = None
    ort_query: Callable[[Path | None], OrtBuild] | None = None  # None: import onnxruntime here
    load: Callable[..., LoadAttempt] = attempt_load
    # start the load child at once, importing onnxruntime while the probes run (only with the real `load`)
    prestart: Callable[..., PrestartedChild] | None = PrestartedChild
    proc_driver: Path = Path("/proc/driver/nvidia/version")
    sys_pci: Path = Path("/sys/bus/pci/devices")
    load_timeout_s: float = 120.0
    windows: WindowsHost | None = None  # diagnose this (simulated or real) host as a Windows machine


@dataclass(frozen=True)
class DoctorReport:
    ready: bool
    verdict: str  # one line: "GPU ready: ..." or "not ready: <root cause>"
    root_cause: str | None
    fix: str | None
    checks: tuple[Check, ...]
    platform: PlatformInfo
    distributions: DistributionsReport
    ort: OrtBuild
    providers: tuple[ProviderLibrary, ...]
    load_attempt: LoadAttempt | None
    preload_attempt: LoadAttempt | None  # a second attempt with onnxruntime.preload_dlls() first
    mapped: tuple[MappedLibrary, ...]  # which CUDA files the session really used, and why
    driver: DriverInfo
    visible: VisibleDevices | None
    kernel_archs: KernelArchs | None
    requirements: OrtBuildRequirements | None
    duration_s: float
    windows: WindowsReport | None = None  # on a Windows host, else None
    # Linux: the onnxruntime.preload_dlls() calls the load attempt made first, as ortgpu's own GPU sessions do
    # (ortgpu.runtime.preload); no calls when no nvidia-* pip libraries are on the path
    cuda_preload: PreloadPlan | None = None
    # seconds each probe took, measured where it ran (threads and the child overlap, so these add up to more than
    # duration_s); Linux only
    timings: Mapping[str, float] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return int(ExitCode.OK if self.ready else ExitCode.ENVIRONMENT)

    @property
    def libraries(self) -> tuple[LibraryResolution, ...]:
        """Every provider library's needs, once each, in report order."""
        seen: set[tuple[str, str]] = set()
        out = []
        for provider in self.providers:
            for need in provider.needs:
                key = (need.soname, need.requested_by)
                if key not in seen:
                    seen.add(key)
                    out.append(need)
        return tuple(out)


def query_ort(module_dir: Path | None) -> OrtBuild:
    """Import onnxruntime in this process and ask it what it is (no session, no provider load)."""
    if module_dir is None:
        return OrtBuild(False, "no onnxruntime module on the Python path", None, None, None, (), None)
    try:
        import onnxruntime as ort
    except (ImportError, OSError) as exc:
        return OrtBuild(False, f"{type(exc).__name__}: {exc}", None, None, None, (), None)
    build_info = ort.get_build_info() if hasattr(ort, "get_build_info") else None
    return OrtBuild(
        importable=True,
        error=None,
        version=ort.__version__,
        build_info=build_info,
        device=ort.get_device(),
        available_providers=tuple(ort.get_available_providers()),
        module_file=ort.__file__,
        has_preload_dlls=hasattr(ort, "preload_dlls"),
    )


class _Checks:
    """Collects checks in order; the verdict names the root cause among the failed ones (doctor.verdict)."""

    def __init__(self) -> None:
        self.items: list[Check] = []

    def add(self, check: Check) -> Check:
        self.items.append(check)
        return check

    def root(self) -> Check | None:
        return root_cause(self.items)


def diagnose(progress: Progress | None = None, *, probes: Probes | None = None, quick: bool = False) -> DoctorReport:
    """Diagnose this machine for running ONNX Runtime on an NVIDIA GPU with the CUDA EP.

    ``quick``: skip the child process that loads the CUDA provider and runs a session (the slowest part on a GPU
    machine); the load-attempt check then says it was skipped, and the verdict rests on the static checks."""
    started = time.perf_counter()
    probes = probes or Probes()
    report = progress or silent
    environ = os.environ if probes.environ is None else probes.environ
    sys_path = list(sys.path if probes.sys_path is None else probes.sys_path)
    checks = _Checks()

    report("platform and Python", 0.05)
    plat = probes.platform or probe_platform()
    if probes.windows is not None or (plat.os == "Windows" and sys.platform == "win32"):
        return _diagnose_windows(probes, report, started)
    linux = plat.os == "Linux"
    checks.add(host.platform_check(plat))
    checks.add(host.python_check(plat))

    report("installed onnxruntime distributions", 0.15)
    timed = ProbeTimer()
    dists = timed("distributions", find_distributions, sys_path)
    prestarted = _prestart(probes, dists, environ) if linux and not quick else None
    try:
        return _diagnose_linux(
            probes, report, started, plat, dists, environ, sys_path, checks, timed, prestarted, quick
        )
    finally:
        if prestarted is not None:
            prestarted.cancel()  # not used (no CUDA provider, or the load ran elsewhere): end it


def _prestart(probes: Probes, dists: DistributionsReport, environ: Mapping[str, str]) -> PrestartedChild | None:
    """The load child, started before the probes when a CUDA provider library is there to load (see Probes)."""
    if probes.prestart is None or probes.load is not attempt_load or dists.module_dir is None:
        return None
    if not (dists.module_dir / "capi" / "libonnxruntime_providers_cuda.so").is_file():
        return None
    if not (nvidia_pci_devices(probes.sys_pci) or probes.proc_driver.is_file()):
        return None  # no NVIDIA GPU in sight: the child runs no session, imports nothing, and is started as needed
    try:
        return probes.prestart(dists.module_dir.parent, env=environ)
    except OSError:
        return None  # the load attempt starts its own child and reports what goes wrong there


def _diagnose_linux(
    probes: Probes,
    report: Progress,
    started: float,
    plat: PlatformInfo,
    dists: DistributionsReport,
    environ: Mapping[str, str],
    sys_path: list[str],
    checks: _Checks,
    timed: ProbeTimer,
    prestarted: PrestartedChild | None,
    quick: bool,
) -> DoctorReport:
    linux = plat.os == "Linux"
    # The independent probes at once: importing onnxruntime here and the NVML query (threads), the child that loads
    # the CUDA provider (a process of its own: CUDA context, a session), the file reads and ELF parsing in this thread.
    # The onnxruntime import starts once the child has its work: importing the extension module holds the GIL for
    # a long dlopen, and the ELF reads here would wait for it (they took 0.46 s beside it on the H200, 0.02 s alone).
    with ThreadPoolExecutor(max_workers=3, thread_name_prefix="ortgpu-doctor") as pool:
        report("NVIDIA driver (NVML)", 0.3)
        driver_future = pool.submit(timed, "NVML driver query", query_driver, probes.nvml, environ)
        loader_env = (
            timed(
                "loader environment",
                LoaderEnv.from_system,
                environ,
                probes.ldconfig_text,
                sys_path,
                root=probes.loader_root,
            )
            if linux
            else None
        )

        report("provider libraries and what they need", 0.4)
        providers = timed("provider libraries", _provider_libraries, dists, loader_env) if linux else ()
        cuda_lib = next((p for p in providers if p.provider == "cuda"), None)
        early, early_key, early_providers = None, None, None
        if cuda_lib is not None and not quick:
            # the child starts now. What it does follows from the distribution's metadata (no onnxruntime import):
            # the preload_dlls() plan, and whether cuDNN is in question (then a Conv session, else one Add)
            early_providers = timed("lazy libraries", _resolved_lazy, providers, dists, None, loader_env)
            early_cuda = next(p for p in early_providers if p.provider == "cuda")
            early_plan = _preload_plan(early_cuda, dists, None, sys_path)
            early_session = _session_wanted(driver_future, probes, environ)
            early_key = (_calls(early_plan), early_session, _cudnn_needs_a_look(early_cuda, early_plan))
            report("loading the CUDA provider in a child process", 0.45)
            early = timed.start(
                pool,
                "load attempt (child)",
                _load_attempt,
                early_cuda,
                early_plan,
                probes,
                environ,
                early_session,
                conv=early_key[2],
                child=prestarted,
            )
        ort_future = pool.submit(timed, "onnxruntime import", probes.ort_query or query_ort, dists.module_dir)
        ort = timed.wait("onnxruntime import", ort_future)
        requirements = _requirements(dists, ort, cuda_lib)
        if early_providers is not None and _lazy_libraries(_requirements(dists, ort, cuda_lib)) == _lazy_libraries(
            _requirements(dists, None, cuda_lib)
        ):
            providers = early_providers  # onnxruntime's own version changed nothing: the same lazy libraries
            cuda_lib = next(p for p in providers if p.provider == "cuda")
        elif cuda_lib and loader_env:
            providers = timed("lazy libraries", _resolved_lazy, providers, dists, ort, loader_env)
            cuda_lib = next(p for p in providers if p.provider == "cuda")

        libcuda = _resolve_libcuda(cuda_lib, loader_env) if loader_env else None
        checks.add(host.glibc_check(plat, providers, requirements, dists))
        for check in ort_checks.distribution_checks(dists, ort):
            checks.add(check)
        checks.add(ort_checks.ort_build_check(dists, ort))
        plan = _preload_plan(cuda_lib, dists, ort, sys_path) if linux else None
        for provider in providers:
            checks.add(ort_checks.provider_check(provider, dists, ort, requirements, plan))
        # the fatbin headers while the child and NVML work (used only when NVML names a GPU)
        scanned = timed("kernel archs (fatbin headers)", _kernel_archs, cuda_lib) if cuda_lib is not None else None
        driver = timed.wait("NVML driver query", driver_future)
        visible = map_visible_devices(
            driver.gpus, environ.get("CUDA_VISIBLE_DEVICES"), environ.get("CUDA_DEVICE_ORDER")
        )
        gpu_usable = driver.present and bool(visible.devices)
        first = timed.wait("load attempt (child)", early) if early is not None else None

    attempt = None
    if quick and cuda_lib is not None:
        checks.add(loading.skipped_check(cuda_lib))
    else:
        conv = cuda_lib is not None and _cudnn_needs_a_look(cuda_lib, plan)
        if first is not None and early_key != (_calls(plan), gpu_usable, conv):
            # onnxruntime itself, or NVML, said otherwise than the metadata and the PCI bus: load again, as it is used
            first = None
        attempt = first
        if attempt is None and cuda_lib is not None:
            attempt = timed(
                "load attempt (second child)", _load_attempt, cuda_lib, plan, probes, environ, gpu_usable, conv=conv
            )
        checks.add(loading.load_check(cuda_lib, attempt, None, gpu_usable))
    mapped = (
        timed("mapped files", mapped_libraries, attempt, providers, loader_env, plan) if attempt and attempt.ok else ()
    )
    if mapped:
        checks.add(loading.mapped_check(mapped))

    report("driver and GPUs", 0.85)
    pci = timed("PCI bus and kernel module", nvidia_pci_devices, probes.sys_pci)
    kernel = kernel_module_version(probes.proc_driver)
    checks.add(gpu_checks.driver_check(driver, libcuda, pci, kernel, plat, requirements))
    if driver.present and libcuda is not None:
        checks.add(gpu_checks.libcuda_check(libcuda, plat))
    if driver.present:
        checks.add(gpu_checks.driver_cuda_check(driver, requirements, cuda_lib))
    archs = scanned if driver.gpus else None
    known = _known_archs(requirements, cuda_lib) if driver.gpus else None
    for gpu in driver.gpus:
        checks.add(gpu_checks.gpu_check(gpu, archs, cuda_lib, known))
    if driver.present:
        checks.add(gpu_checks.visible_check(visible, driver))
    checks.add(gpu_checks.matrix_check(requirements, ort, dists, cuda_lib))

    report("verdict", 1.0)
    return _judged(
        checks,
        attempt,
        visible,
        gpu_usable,
        started,
        platform=plat,
        distributions=dists,
        ort=ort,
        providers=providers,
        load_attempt=attempt,
        preload_attempt=None,
        mapped=mapped,
        driver=driver,
        visible=visible if driver.present else None,
        kernel_archs=archs,
        requirements=requirements,
        cuda_preload=plan,
        timings=timed.seconds(),
    )


def _judged(
    checks: _Checks,
    attempt: LoadAttempt | None,
    visible: VisibleDevices,
    gpu_usable: bool,
    started: float,
    /,
    **facts: Any,
) -> DoctorReport:
    """The report of either platform: its checks and facts, with the verdict drawn from them.

    Positional-only: `visible` here is what the verdict reads; the report's own `visible` is in `facts`.
    """
    ready, verdict, cause, fix = _verdict(checks, attempt, visible, gpu_usable)
    return DoctorReport(
        ready=ready,
        verdict=verdict,
        root_cause=cause,
        fix=fix,
        checks=tuple(checks.items),
        duration_s=time.perf_counter() - started,
        **facts,
    )


def _diagnose_windows(probes: Probes, report: Progress, started: float) -> DoctorReport:
    """The same diagnosis on a Windows host (real, or the simulated one in `probes.windows`)."""

    host = probes.windows or RealWindowsHost()
    found = diagnose_windows(
        host, report, nvml=probes.nvml, ort_query=probes.ort_query or query_ort, load_timeout_s=probes.load_timeout_s
    )
    checks = _Checks()
    for check in found.checks:
        checks.add(check)
    report("verdict", 1.0)
    visible = found.visible or map_visible_devices((), None)
    gpu_usable = found.driver.present and bool(visible.devices)
    return _judged(
        checks,
        found.load_attempt,
        visible,
        gpu_usable,
        started,
        platform=found.platform,
        distributions=found.distributions,
        ort=found.ort,
        providers=(),
        load_attempt=found.load_attempt,
        preload_attempt=found.preload_attempt,
        mapped=found.mapped,
        driver=found.driver,
        visible=found.visible,
        kernel_archs=None,
        requirements=found.requirements,
        windows=found.report,
    )


def _capi_dirs(dists: DistributionsReport) -> list[tuple[Path, bool]]:
    """The capi folder `import onnxruntime` uses, then those of shadowed CUDA distributions."""
    out: list[tuple[Path, bool]] = []
    if dists.module_dir is not None:
        out.append((dists.module_dir / "capi", False))
    for dist in dists.shadowed:
        capi = dist.site_dir / "onnxruntime" / "capi"
        if dist.flavour is DistributionFlavour.CUDA and all(capi.resolve() != c.resolve() for c, _ in out):
            out.append((capi, True))
    return out


def _provider_libraries(dists: DistributionsReport, env: LoaderEnv | None) -> tuple[ProviderLibrary, ...]:
    if env is None:
        return ()
    out: list[ProviderLibrary] = []
    for capi, shadowed in _capi_dirs(dists):
        for provider in ("cuda", "tensorrt"):
            path = capi / f"libonnxruntime_providers_{provider}.so"
            if not path.is_file() or any(p.provider == provider for p in out):
                continue
            try:
                info = read_elf(path)
            except BinaryFormatError:
                continue
            needs = resolve_needs(info, env)
            names = list(info.needed)
            out.append(
                ProviderLibrary(
                    provider=provider,
                    path=path,
                    needs=needs,
                    glibc_floor=info.glibc_floor,
                    cuda_major=cuda_major_from_libraries(names),
                    cudnn_major=cudnn_major_from_libraries(names),
                    tensorrt_major=tensorrt_major_from_libraries(names),
                    from_shadowed=shadowed,
                )
            )
    return tuple(out)


def _with_lazy(
    providers: tuple[ProviderLibrary, ...], lazy: Sequence[str], env: LoaderEnv
) -> tuple[ProviderLibrary, ...]:
    """Re-resolve the CUDA provider with the libraries the matrix says it opens lazily."""

    out = []
    for provider in providers:
        if provider.provider == "cuda":
            needs = resolve_needs(read_elf(provider.path), env, lazy=tuple(lazy))
            cudnn = provider.cudnn_major or cudnn_major_from_libraries(list(lazy))
            provider = ProviderLibrary(
                provider.provider,
                provider.path,
                needs,
                provider.glibc_floor,
                provider.cuda_major,
                cudnn,
                provider.tensorrt_major,
                provider.from_shadowed,
            )
        out.append(provider)
    return tuple(out)


def _lazy_libraries(requirements: OrtBuildRequirements | None) -> tuple[str, ...]:
    """What the CUDA provider opens at run time: its own dlopens, then what cuDNN opens (matrix data)."""
    if requirements is None:
        return ()
    names = tuple(requirements.lazy_libraries) + tuple(getattr(requirements, "indirect_libraries_linux", ()))
    return tuple(dict.fromkeys(names))


def _resolved_lazy(
    providers: tuple[ProviderLibrary, ...],
    dists: DistributionsReport,
    ort: OrtBuild | None,
    env: LoaderEnv | None,
) -> tuple[ProviderLibrary, ...]:
    """The providers with the CUDA one re-resolved for what it opens lazily (``ort`` None: from the metadata)."""
    cuda_lib = next((p for p in providers if p.provider == "cuda"), None)
    lazy = _lazy_libraries(_requirements(dists, ort, cuda_lib))
    if cuda_lib is None or not lazy or env is None:
        return providers
    return _with_lazy(providers, lazy, env)


def _session_wanted(driver: Future[DriverInfo], probes: Probes, environ: Mapping[str, str]) -> bool:
    """Whether the early child should run a CUDA session: NVML's answer when it is in, else what the PCI bus and the
    kernel module say (NVML's first call can take a second on a GPU without persistence mode; the child need not
    wait for it). A wrong guess costs a second child, never a wrong verdict: diagnose() compares with NVML."""
    if driver.done() or environ.get("CUDA_VISIBLE_DEVICES", "x").strip() in ("", "-1"):
        info = driver.result()
        visible = map_visible_devices(info.gpus, environ.get("CUDA_VISIBLE_DEVICES"), environ.get("CUDA_DEVICE_ORDER"))
        return info.present and bool(visible.devices)
    if nvidia_pci_devices(probes.sys_pci) or probes.proc_driver.is_file():
        return True
    info = driver.result()
    visible = map_visible_devices(info.gpus, environ.get("CUDA_VISIBLE_DEVICES"), environ.get("CUDA_DEVICE_ORDER"))
    return info.present and bool(visible.devices)


def _requirements(
    dists: DistributionsReport, ort: OrtBuild | None, cuda_lib: ProviderLibrary | None
) -> OrtBuildRequirements | None:
    version = None
    if cuda_lib is not None and cuda_lib.from_shadowed:
        owner = next((d for d in dists.shadowed if d.flavour is DistributionFlavour.CUDA), None)
        version = owner.version if owner else None
    ort_version = ort.version if ort is not None else None
    version = version or ort_version or (dists.package_info.version if dists.package_info else None)
    if not version:
        return None
    cuda_major = cuda_lib.cuda_major if cuda_lib else None
    info = dists.package_info
    if cuda_major is None and info is not None and version_tuple(info.cuda_version):
        cuda_major = version_tuple(info.cuda_version)[0]
    return requirements_for(version, cuda_major)


def _preload_plan(
    cuda_lib: ProviderLibrary | None, dists: DistributionsReport, ort: OrtBuild | None, sys_path: Sequence[str]
) -> PreloadPlan | None:
    """The preload_dlls() calls ortgpu's GPU sessions make for this ORT (the load attempt makes the same).

    ``ort`` None: decided from the distribution's version alone (before onnxruntime is imported)."""
    if cuda_lib is None or cuda_lib.from_shadowed:
        return None
    has = ort.has_preload_dlls if ort is not None else None
    if has is None:
        version = (ort.version if ort is not None else None) or (
            dists.package_info.version if dists.package_info else None
        )
        has = version_tuple(version) >= (1, 21)
    return plan_preload(cuda_lib.path.parent.parent, cuda_lib.cuda_major, sys_path, has_preload=has)


def _load_attempt(
    cuda_lib: ProviderLibrary | None,
    plan: PreloadPlan | None,
    probes: Probes,
    environ: Mapping[str, str],
    gpu_usable: bool,
    *,
    conv: bool = True,
    child: PrestartedChild | None = None,
) -> LoadAttempt | None:
    """The real load in a child, done the way ortgpu's own sessions load CUDA: preload_dlls() first when planned.

    On a usable GPU the child runs a session: one Add unless ``conv`` (a Conv, so cuDNN is loaded and initialised
    as well)."""
    if cuda_lib is None:
        return None
    capi = cuda_lib.path.parent
    extra: dict[str, Any] = {}
    if plan is not None and plan.calls:
        extra["preload_calls"] = _calls(plan)
    if child is not None:
        extra["child"] = child
    return probes.load(
        provider_libraries(capi, "cuda"),
        session=gpu_usable,
        module_parent=capi.parent.parent,
        env=environ,
        timeout_s=probes.load_timeout_s,
        conv=conv,
        **extra,
    )


def _calls(plan: PreloadPlan | None) -> list[tuple[str, Any]]:
    return [(call.text(), call.kwargs()) for call in plan.calls] if plan is not None else []


def _cudnn_needs_a_look(cuda_lib: ProviderLibrary, plan: PreloadPlan | None) -> bool:
    """Whether the session should load cuDNN too: when the static resolution cannot say which cuDNN ORT gets (not
    found, only in pip packages, another major, or a second copy the loader can reach). A preload_dlls() call that
    loads cuDNN by full path settles it: that copy is in the process before ORT asks for the name, so the loader's
    search (and any second copy) never comes into play; the child's preload step shows whether it loaded."""
    calls, folders = (plan.calls, plan.folders) if plan is not None else ((), ())
    if any(call.cudnn for call in calls) and any(folder.as_posix().endswith("cudnn/lib") for folder in folders):
        return False
    for need in cuda_lib.needs:
        if not need.soname.startswith("libcudnn"):
            continue
        if need.status is not LibStatus.FOUND:
            return True
        if any(c.source is not Source.NVIDIA_PIP for c in need.also_at):
            return True
    return False


def _resolve_libcuda(cuda_lib: ProviderLibrary | None, env: LoaderEnv) -> LibraryResolution:
    if cuda_lib is not None:
        for need in cuda_lib.needs:
            if need.soname == "libcuda.so.1":
                return need
    return resolve("libcuda.so.1", None, env, lazy=True)


def _kernel_archs(cuda_lib: ProviderLibrary | None) -> KernelArchs | None:
    if cuda_lib is None:
        return None
    return read_kernel_archs(cuda_lib.path)


def _known_archs(requirements: OrtBuildRequirements | None, cuda_lib: ProviderLibrary | None) -> SmArchs | None:
    """The matrix's arch list for this build (it knows the "a"/"f" suffixes the fatbin headers do not show)."""
    if requirements is None or cuda_lib is None:
        return None
    return known_sm_archs(requirements.ort_version, requirements.cuda_major)


def _verdict(
    checks: _Checks, attempt: LoadAttempt | None, visible: VisibleDevices, gpu_usable: bool
) -> tuple[bool, str, str | None, str | None]:
    root = checks.root()
    if root is not None:
        cause = root.cause or root.evidence
        return False, f"not ready: {cause}", cause, root.fix
    if attempt is None or not attempt.ok or not gpu_usable or not attempt.session_requested:
        cause = "the CUDA EP could not be proven to load here"
        return False, f"not ready: {cause}", cause, "see the checks below"
    device = visible.devices[0]
    gpu = device.gpu
    verdict = f"GPU ready: CUDA EP will load on GPU {device.device_id} ({gpu.name}, {gpu.sm})"
    if attempt.preload_calls:
        verdict += (
            "; CUDA/cuDNN come from the nvidia-* pip packages through onnxruntime.preload_dlls(), "
            "as ortgpu.load, check and bench call it"
        )
    return True, verdict, None, None
