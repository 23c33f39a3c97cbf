"""`check --package`: the model through a package's own ONNX Runtime C library, in child processes.

Three runs through :func:`ortgpu.capi.runner.run_package_model`, each in its own child process: a cold one
without profiling (session creation, first run and the warm runs are timed there, since the verbose log that
placement needs lengthens session creation), a profiled one for the placement, and, when outputs are compared
with the CPU EP, one on the CPU EP of the same library. Nothing here loads the library into this process.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortgpu.check.result import GpuMemory, PackageLibrary, Timings
from ortgpu.check.run import CheckRequest, Execution
from ortgpu.config import Config, ExecutionProvider, Fallback
from ortgpu.placement import PlacementSource
from ortgpu.session.options import device_of, effective_provider_options

if TYPE_CHECKING:  # pragma: no cover
    from ortgpu.capi.library_locator import LocatedLibrary
    from ortgpu.capi.runner import PackageRunResult
    from ortgpu.model.inspect import ModelInfo

__all__ = ["default_gpu_reason", "default_package_ep", "package_session_settings", "run_through_package"]

Progress = Callable[[str, float | None], None]

# [session] settings the C-API runner has no use for: runs already log at warning only (RunOptions).
_NOT_FOR_THE_RUNNER = frozenset({"run_log_severity_level"})
_CHILD_TIMEOUT_S = 600.0  # each child: a cuDNN EXHAUSTIVE search on a large model takes minutes, not hours


def package_session_settings(config: Config) -> dict[str, object]:
    """The config's [session] settings for the C-API runner, checked now: exit 2 for one the C API cannot set."""
    from ortgpu.capi.runner import normalize_session_settings

    settings = {k: v for k, v in config.session.items() if k not in _NOT_FOR_THE_RUNNER}
    normalize_session_settings(settings)  # refuses before anything runs; the runner applies what it returns
    return settings


def default_package_ep() -> tuple[ExecutionProvider, str | None]:
    """CUDA when a driver sees a GPU (the library then has to prove it can enable it), else CPU and why."""
    from ortgpu.host.nvml import query_driver

    driver = query_driver()
    if not driver.present:
        return ExecutionProvider.CPU, f"CPU: no NVIDIA driver answers ({driver.error})"
    if not driver.gpus:
        return ExecutionProvider.CPU, f"CPU: the NVIDIA driver {driver.version} sees no GPU"
    return ExecutionProvider.CUDA, None


def default_gpu_reason(member: str, refusal: str | None = None) -> str:
    """Why the default EP of a GPU host ended as it did: the library's CUDA EP loaded, or `refusal` is why not."""
    if refusal is None:
        return f"CUDA: a driver sees a GPU and {member} enables its CUDA EP"
    return f"CPU: {member} cannot enable the CUDA EP here: {refusal}"


def run_through_package(
    request: CheckRequest, package: Path, model: ModelInfo, feeds: Mapping[str, Any], report: Progress
) -> Execution:
    """Run ``model`` through the C library found in ``package``: cold timings, placement, CPU reference.

    Bad input (no library in the path, a library for another platform or too old, a setting the C API cannot
    apply, a rejected provider option) is exit 2 before or at the first run. A provider that cannot be enabled
    is ProviderLoadError (exit 3) with ORT's own text, unless the config allows a CPU fallback.
    """
    from ortgpu.capi.binding import ProviderLoadError
    from ortgpu.capi.library_locator import locate_library

    settings = package_session_settings(request.config)
    requested, ep_reason = (request.ep, None) if request.ep is not None else default_package_ep()
    trying_default_gpu = request.ep is None and requested.is_gpu
    options = effective_provider_options(requested, request.config, request.ep_options, request.device_id)
    report(f"finding ONNX Runtime's C library in {package}", 0.08)
    with locate_library(package) as located:
        active, fallback_reason = requested, None
        report(f"building the session on {requested.ort_name} through {located.member}", 0.1)
        try:
            cold = _run(located, model, feeds, requested, options, settings, request.warm_runs, profile=False)
        except ProviderLoadError as exc:
            active = ExecutionProvider.CPU
            if trying_default_gpu:
                ep_reason = default_gpu_reason(located.member, exc.message)
                requested = active
                # as on the wheel path, which would have picked the CPU EP up front: options given are refused
                options = effective_provider_options(active, request.config, request.ep_options, request.device_id)
            elif requested.is_gpu and request.config.fallback is Fallback.CPU:
                fallback_reason = exc.message
                options = {}  # the CPU EP takes none; those given were valid for the EP asked for
            else:
                raise
            report(f"building the session on {active.ort_name} through {located.member}", 0.15)
            cold = _run(located, model, feeds, active, options, settings, request.warm_runs, profile=False)
        if trying_default_gpu and active is ExecutionProvider.CUDA:
            ep_reason = default_gpu_reason(located.member)
        report("reading placement from a profiled run", 0.4)
        profiled = _run(located, model, feeds, active, options, settings, 0, profile=True)
        expected: dict[str, Any] = {}
        if request.reference is None and active is not ExecutionProvider.CPU:
            report("running the CPU EP of the same library", 0.6)
            reference_settings = package_session_settings(Config())  # as the wheel path: a default CPU session
            expected = _run(located, model, feeds, ExecutionProvider.CPU, {}, reference_settings, 0, False).outputs
    return _execution(package, cold, profiled, requested, active, ep_reason, fallback_reason, options, expected)


def _run(
    located: LocatedLibrary,
    model: ModelInfo,
    feeds: Mapping[str, Any],
    ep: ExecutionProvider,
    options: Mapping[str, str],
    settings: Mapping[str, object],
    iterations: int,
    profile: bool,
) -> PackageRunResult:
    from ortgpu.capi.runner import run_package_model

    return run_package_model(
        located,
        model.path,
        feeds,
        ep.value,
        dict(options),
        device_of(options) if ep.is_gpu else 0,
        iterations=iterations,
        warmup=0,
        profile=profile,
        timeout_s=_CHILD_TIMEOUT_S,
        session_settings=settings,
    )


def _execution(
    package: Path,
    cold: PackageRunResult,
    profiled: PackageRunResult,
    requested: ExecutionProvider,
    active: ExecutionProvider,
    ep_reason: str | None,
    fallback_reason: str | None,
    options: Mapping[str, str],
    expected: dict[str, Any],
) -> Execution:
    warm = [ns / 1e9 for ns in cold.latencies_ns]
    placement = profiled.placement
    if placement is None:
        note: str | None = "the library logged no node placement and its profile recorded no node"
    elif placement.source is PlacementSource.PROFILE:
        note = "from ORT profiling of one run: nodes that did not run (untaken If branches) are not seen"
    else:
        note = None
    providers = tuple(dict.fromkeys([*cold.appended_providers, ExecutionProvider.CPU.ort_name]))
    memory_note = (
        "not measured: the session runs on the CPU EP"
        if active is ExecutionProvider.CPU
        else "not measured: the session ran in a child process through the package's C library"
    )
    return Execution(
        outputs=dict(cold.outputs),
        requested_ep=requested,
        active_ep=active,
        providers=providers,
        ep_reason=ep_reason,
        fallback_used=fallback_reason is not None,
        fallback_reason=fallback_reason,
        device_id=device_of(options) if active.is_gpu else 0,
        # as ORT reports them (every option, defaults included), which is what the tolerances are chosen from
        provider_options=dict(cold.provider_options.get(active.ort_name, {})),
        timings=Timings(
            creation_s=cold.session_creation_s,
            first_run_s=cold.first_run_s,
            warm_median_s=statistics.median(warm) if warm else None,
            warm_min_s=min(warm) if warm else None,
            warm_runs=len(warm),
        ),
        gpu_memory=GpuMemory(used_bytes=None, note=memory_note),
        placement=placement,
        placement_note=note,
        ort_version=cold.ort_version,
        cpu_reference=lambda: expected,
        package=PackageLibrary.from_run(package, cold),
    )
