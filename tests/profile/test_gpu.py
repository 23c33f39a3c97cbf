"""On a GPU: a node without a CUDA kernel shows in inspect (before running) and in profile (Memcpy, CPU time)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ortgpu.ep import ExecutionProvider
from ortgpu.inspect import InspectRequest, KernelSource, KernelStatus, inspect_model_file
from ortgpu.model import zoo
from ortgpu.profile import GpuTiming, ProfileRequest, run_profile

pytestmark = pytest.mark.gpu
CPU = "CPUExecutionProvider"


def test_inspect_names_the_node_without_a_cuda_kernel(tmp_path: Path) -> None:
    model = zoo.build_cpu_only_op_model(tmp_path / "det.onnx")
    kernels = inspect_model_file(InspectRequest(model)).kernels
    assert kernels.status is KernelStatus.DETERMINED and kernels.source is KernelSource.SESSION
    off = {n.op_type: n for n in kernels.off_ep}
    assert off[zoo.CPU_ONLY_OP].provider == CPU and off[zoo.CPU_ONLY_OP].reason == "no-kernel"
    assert kernels.memcpy_count and kernels.memcpy_count >= 1


@pytest.mark.parametrize("timing", [GpuTiming.SYNC, GpuTiming.ASYNC])
def test_profile_on_cuda_shows_copies_and_cpu_time(tmp_path: Path, timing: GpuTiming) -> None:
    model = zoo.build_cpu_only_op_model(tmp_path / "det.onnx")
    run = run_profile(
        ProfileRequest(model, ep=ExecutionProvider.CUDA, runs=5, warmup=2, trace=tmp_path / "t.json", gpu_timing=timing)
    ).main
    assert run.ep is ExecutionProvider.CUDA and run.gpu_timing is timing
    assert run.memcpy.nodes >= 1 and run.memcpy.calls_per_run >= 1
    assert [c.op_type for c in run.cpu_in_gpu] == [zoo.CPU_ONLY_OP]
    assert run.cpu_in_gpu[0].reason == "no-kernel"
    assert "CUDAExecutionProvider" in run.provider_share and CPU in run.provider_share
