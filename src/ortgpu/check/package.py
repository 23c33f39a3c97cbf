"""`check --package`: the model through a package's own ONNX Runtime C library, in child processes.

Three runs through :func:`ortgpu.capi.runner.run_package_model`, each in its own child process: a cold one
without profiling (session creation, first run and the warm runs are timed there, since the verbose log that
placement needs lengthens session creation), a profiled one for the placement, and, when outputs are compared
with the CPU EP, one on the CPU EP of the same library. Nothing here loads the library into this process.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ortgpu.capi import runner as capi_runner
from ortgpu.capi.binding import ProviderLoadError
from ortgpu.capi.library_locator import LocatedLibrary, locate_library
from ortgpu.capi.package_run import CApiLibrary, default_gpu_reason, default_package_ep, package_session_settings
from ortgpu.check.backend import CheckRequest, Execution
from ortgpu.check.result import GpuMemory, Timings
from ortgpu.config import Config, Fallback
from ortgpu.ep import ExecutionProvider
from ortgpu.model.inspect import ModelInfo
from ortgpu.placement import PlacementSource
from ortgpu.progress import Progress
from ortgpu.session.options import device_of, effective_provider_options

__all__ = ["PackageBackend", "run_through_package"]

_CHILD_TIMEOUT_S = 600.0  # each child: a cuDNN EXHAUSTIVE search on a large model takes minutes, not hours


class PackageBackend:
    """Runs the model through the ONNX Runtime C library found in ``package`` (child processes)."""

    def __init__(self, package: Path) -> None:
        self.package = package

    def execute(
        self,
        request: CheckRequest,
        model: ModelInfo,
        feeds: Mapping[str, Any],
        report: Progress,
        extra: Sequence[Mapping[str, Any]] = (),
    ) -> Execution:
        """One sample only: run_check refuses a data set of several with --package before anything runs."""
        return run_through_package(request, self.package, model, feeds, report)


def run_through_package(
    request: CheckRequest, package: Path, model: ModelInfo, feeds: Mapping[str, Any], report: Progress
) -> Execution:
    """Run ``model`` through the C library found in ``package``: cold timings, placement, CPU reference.

    Bad input (no library in the path, a library for another platform or too old, a setting the C API cannot
    apply, a rejected provider option) is exit 2 before or at the first run. A provider that cannot be enabled
    is ProviderLoadError (exit 3) with ORT's own text, unless the config allows a CPU fallback.
    """
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
) -> capi_runner.PackageRunResult:
    return capi_runner.run_package_model(
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
    cold: capi_runner.PackageRunResult,
    profiled: capi_runner.PackageRunResult,
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
        package=CApiLibrary.from_run(package, cold),
    )
