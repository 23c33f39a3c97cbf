"""The `check` backend of the onnxruntime wheel Python imports: the session in this process, timed, with placement.

It also measures the GPU memory the session took (an NVML delta) and reads placement from a profiled run when
the build log gave none.
"""

from __future__ import annotations

import os
import statistics
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ortgpu.check.backend import CheckRequest, Execution
from ortgpu.check.fixed_dims import probe_fixed_dims
from ortgpu.check.result import GpuMemory, Timings
from ortgpu.config import Config
from ortgpu.ep import ExecutionProvider
from ortgpu.host import nvml
from ortgpu.model.inspect import ModelInfo
from ortgpu.placement import PlacementReport, parse_profile_file
from ortgpu.progress import Progress
from ortgpu.runtime.guard import import_onnxruntime
from ortgpu.session import VerifiedSession, best_available_ep, open_session
from ortgpu.session.options import device_of, effective_provider_options

__all__ = ["WheelBackend"]


class WheelBackend:
    """Runs the model through the onnxruntime wheel that ``import onnxruntime`` loads here."""

    def execute(
        self,
        request: CheckRequest,
        model: ModelInfo,
        feeds: Mapping[str, Any],
        report: Progress,
        extra: Sequence[Mapping[str, Any]] = (),
    ) -> Execution:
        return _run_through_wheel(request, model, feeds, report, list(extra))


def _run_through_wheel(
    request: CheckRequest,
    model: ModelInfo,
    feeds: Mapping[str, Any],
    report: Progress,
    extra: list[Mapping[str, Any]] | None = None,
) -> Execution:
    """The session through the onnxruntime wheel, in this process: creation, first and warm runs, placement."""
    ort = import_onnxruntime()

    ep, ep_reason = (request.ep, None) if request.ep is not None else best_available_ep()
    # Validated before anything runs: a bad --ep-option is exit 2 here, not after a GPU session was built.
    options = effective_provider_options(ep, request.config, request.ep_options, request.device_id)
    memory_probe = _MemoryProbe.start(ep, device_of(options))
    report(f"building the session on {ep.ort_name}", 0.1)
    session = open_session(
        model.path,
        ep,
        request.config,
        request.device_id,
        request.ep_options,
        collect_placement=True,
        model_info=model,
    )
    with session:
        report("first run", 0.3)
        outputs_list = session.run(feeds)
        first_run_s = session.last_run_s or 0.0
        warm = []
        for index in range(request.warm_runs):
            report(f"warm run {index + 1}/{request.warm_runs}", 0.35 + 0.3 * index / max(request.warm_runs, 1))
            session.run(feeds)
            warm.append(session.last_run_s or 0.0)
        gpu_memory = memory_probe.finish(session)
        outputs = dict(zip(session.output_names, outputs_list, strict=True))
        more = []
        for index, sample in enumerate(extra or []):
            report(f"sample {index + 2}/{len(extra or []) + 1}", 0.65 + 0.05 * index / max(len(extra or []), 1))
            more.append(dict(zip(session.output_names, session.run(sample), strict=True)))
        timings = Timings(
            creation_s=session.creation_s,
            first_run_s=first_run_s,
            warm_median_s=statistics.median(warm) if warm else None,
            warm_min_s=min(warm) if warm else None,
            warm_runs=len(warm),
        )
        placement, placement_note = session.placement, session.placement_note
    if placement is None:
        report("reading placement from a profiled run", 0.7)
        placement, placement_note = _profile_placement(model, ep, request, feeds, placement_note)
    fixed = None
    if placement is not None and placement.off_requested_count:
        report("placement with the open dims fixed", 0.75)
        shapes = {name: tuple(array.shape) for name, array in feeds.items()}
        fixed = probe_fixed_dims(
            model.path, ep, request.config, shapes, placement, open_session,
            device_id=request.device_id, ep_options=request.ep_options, model_info=model,
        )  # fmt: skip

    def cpu_references() -> list[dict[str, Any]]:
        with open_session(model.path, ExecutionProvider.CPU, Config(), model_info=model) as cpu:
            return [dict(zip(cpu.output_names, cpu.run(f), strict=True)) for f in [feeds, *(extra or [])]]

    def cpu_reference() -> dict[str, Any]:
        return cpu_references()[0]

    return Execution(
        outputs=outputs,
        requested_ep=session.requested_ep,
        active_ep=session.active_ep,
        providers=tuple(session.providers),
        ep_reason=ep_reason,
        fallback_used=session.fallback_used,
        fallback_reason=session.fallback_reason,
        device_id=session.device_id,
        provider_options=dict(session.provider_options),
        timings=timings,
        gpu_memory=gpu_memory,
        placement=placement,
        placement_note=placement_note,
        ort_version=ort.__version__,
        cpu_reference=cpu_reference,
        more_outputs=tuple(more),
        cpu_references=cpu_references,
        cuda_libraries=session.cuda_libraries,
        fixed_dims=fixed,
    )


@dataclass
class _MemoryProbe:
    nvml_index: int | None
    before: int | None
    note: str | None

    @classmethod
    def start(cls, ep: ExecutionProvider, device: int) -> _MemoryProbe:
        if not ep.is_gpu:
            return cls(None, None, "not measured: the session runs on the CPU EP")
        index, note = _nvml_index(device)
        if index is None:
            return cls(None, None, note)
        before = nvml.device_memory_used_bytes(index)
        if before is None:
            return cls(None, None, "not measured: NVML did not answer")
        return cls(index, before, note)

    def finish(self, session: VerifiedSession) -> GpuMemory:
        if not session.active_ep.is_gpu:
            note = self.note if session.requested_ep is session.active_ep else "not measured: fell back to CPU"
            return GpuMemory(used_bytes=None, note=note or "not measured: the session runs on the CPU EP")
        if self.nvml_index is None or self.before is None:
            return GpuMemory(used_bytes=None, note=self.note)
        after = nvml.device_memory_used_bytes(self.nvml_index)
        if after is None:
            return GpuMemory(used_bytes=None, nvml_index=self.nvml_index, note="not measured: NVML did not answer")
        return GpuMemory(
            used_bytes=after - self.before,
            before_bytes=self.before,
            after_bytes=after,
            nvml_index=self.nvml_index,
            note=self.note or "device-wide NVML delta: includes the CUDA context; other processes count too",
        )


def _nvml_index(device_id: int) -> tuple[int | None, str | None]:
    """The NVML index of CUDA device ``device_id`` under CUDA_VISIBLE_DEVICES."""
    driver = nvml.query_driver()
    if not driver.present:
        return None, f"not measured: NVML unavailable ({driver.error})"
    visible = nvml.map_visible_devices(
        driver.gpus, os.environ.get("CUDA_VISIBLE_DEVICES"), os.environ.get("CUDA_DEVICE_ORDER")
    )
    match = next((d for d in visible.devices if d.device_id == device_id), None)
    if match is None:
        return None, f"not measured: CUDA device {device_id} is not among the visible GPUs"
    return match.gpu.index, (visible.note if not visible.exact else None)


def _profile_placement(
    model: ModelInfo,
    ep: ExecutionProvider,
    request: CheckRequest,
    feeds: Mapping[str, Any],
    note: str | None,
) -> tuple[PlacementReport | None, str | None]:
    """Placement from ORT profiling of one run, when the build log gave none."""
    with (
        tempfile.TemporaryDirectory(prefix="ortgpu-profile-") as folder,
        open_session(
            model.path,
            ep,
            request.config,
            request.device_id,
            request.ep_options,
            model_info=model,
            profile_dir=Path(folder),
        ) as session,
    ):
        session.run(feeds)
        placement = parse_profile_file(session.end_profiling(), session.active_ep.ort_name)
    if placement is None:
        return None, (note or "") + "; profiling recorded no node either"
    return placement, "from ORT profiling of one run: nodes that did not run (untaken If branches) are not seen"
