"""CUDA graph cases get their own session with the open dims fixed to the benchmarked shapes."""

from __future__ import annotations

from pathlib import Path

import pytest

from ortgpu.bench.modes import BenchMode
from ortgpu.bench.runner import BenchRequest, run_bench
from ortgpu.bench.wheel import _Sessions
from ortgpu.config import Config
from ortgpu.ep import ExecutionProvider
from ortgpu.model.free_dims import fixed_dims_for, input_dim_labels


def test_the_graph_session_is_built_with_the_benchmarked_batch_fixed(shape_subgraph_model: Path) -> None:
    fixed = fixed_dims_for(input_dim_labels(shape_subgraph_model), {"x": (16, 4)})
    pool = _Sessions(shape_subgraph_model, Config(), 0, ExecutionProvider.CPU, {})
    try:
        own = pool.open(ExecutionProvider.CPU, {}, fixed.session_settings(pool.config.session))
        plain = pool.any_plain(ExecutionProvider.CPU)
        assert own.ort.get_inputs()[0].shape == [16, 4]
        assert plain.ort.get_inputs()[0].shape == ["batch", 4]  # the shared sessions stay dynamic
    finally:
        pool.close()


@pytest.mark.gpu
def test_cudagraph_captures_a_dynamic_batch_model_whose_shape_nodes_sit_on_the_cpu(shape_subgraph_model: Path) -> None:
    result = run_bench(
        BenchRequest(
            shape_subgraph_model,
            ep=ExecutionProvider.CUDA,
            modes=(BenchMode.CUDAGRAPH,),
            batches=(1, 8),
            iterations=50,
            warmup=5,
        )
    )
    assert [c.status.value for c in result.cases] == ["ok", "ok"], [c.reason for c in result.cases]
    assert [c.fixed_dims["free_dims"] for c in result.cases] == [{"batch": 1}, {"batch": 8}]
