"""A real (small) bench result for the report tests, measured once per session on the CPU EP."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def cpu_result(tmp_path_factory: pytest.TempPathFactory):
    from ortgpu.bench.modes import BenchMode
    from ortgpu.bench.runner import BenchRequest, run_bench
    from ortgpu.ep import ExecutionProvider
    from ortgpu.model.zoo import build_tiny_model

    model = build_tiny_model(tmp_path_factory.mktemp("report") / "tiny.onnx")
    return run_bench(
        BenchRequest(
            model=model,
            ep=ExecutionProvider.CPU,
            modes=tuple(BenchMode),
            all_modes=True,
            batches=(1, 4),
            concurrency=(1, 2),
            iterations=40,
            warmup=3,
        )
    )


@pytest.fixture(scope="session")
def gpu_like_result(cpu_result):
    """The CPU result relabelled as a CUDA run with a CPU comparison: exercises the GPU-only plots on any machine."""
    import dataclasses

    from ortgpu.bench.runner import with_speedups
    from ortgpu.ep import ExecutionProvider

    gpu = [dataclasses.replace(c, ep=ExecutionProvider.CUDA) for c in cpu_result.cases]
    cpu = [c for c in cpu_result.cases if c.mode.value == "run"]
    settings = dataclasses.replace(cpu_result.settings, compare_cpu=True)
    return dataclasses.replace(
        cpu_result, ep=ExecutionProvider.CUDA, cases=tuple(with_speedups(gpu + cpu)), settings=settings
    )
