"""Timing modes: one class per mode, the same outputs as a plain run, CUDA graphs refused on CPU."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ortgpu.bench.modes import (
    BenchMode,
    CudaGraphMode,
    Device,
    ModeRefusedError,
    OutputSpec,
    device_for,
    mode_class,
)
from ortgpu.ep import ExecutionProvider
from ortgpu.errors import ExitCode


def _session(path: Path, providers: list = ["CPUExecutionProvider"]):  # noqa: B006 - read-only default
    import onnxruntime as ort

    return ort.InferenceSession(str(path), providers=providers)


@pytest.mark.parametrize("mode", list(BenchMode))
def test_every_mode_has_an_implementation(mode: BenchMode) -> None:
    cls = mode_class(mode)
    assert cls.mode is mode
    assert mode.title


@pytest.mark.parametrize("ep", list(ExecutionProvider))
def test_cudagraph_needs_a_gpu_ep(ep: ExecutionProvider) -> None:
    refusal = CudaGraphMode.refusal(ep)
    if ep.is_gpu:
        assert refusal is None
        assert set(CudaGraphMode.provider_options(ep).values()) == {"1"}
    else:
        assert "CPU" in refusal
        with pytest.raises(ModeRefusedError) as info:
            CudaGraphMode.provider_options(ep)
        assert info.value.exit_code is ExitCode.ENVIRONMENT


@pytest.mark.parametrize("mode", [BenchMode.RUN, BenchMode.IOBINDING])
def test_cpu_modes_give_the_plain_run_outputs(tiny_model: Path, mode: BenchMode) -> None:
    session = _session(tiny_model)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    expected = session.run(None, {"x": x})[0]
    with mode_class(mode)(session, {"x": x}, device_for(ExecutionProvider.CPU, 0)) as runner:
        step = runner.prepare()
        for _ in range(3):
            step()
        np.testing.assert_array_equal(runner.fetch_outputs()[0], expected)
    assert runner.step is None  # closed: bindings released


def test_cudagraph_needs_concrete_output_shapes(tiny_model: Path) -> None:
    runner = CudaGraphMode(_session(tiny_model), {"x": np.zeros((1, 4), np.float32)}, Device("cuda", 0))
    with pytest.raises(ValueError, match="output shapes"):
        runner.prepare()


@pytest.mark.gpu
def test_cudagraph_replays_the_same_outputs_on_cuda(tiny_model: Path) -> None:
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    plain = _session(tiny_model, ["CUDAExecutionProvider"])
    expected = plain.run(None, {"x": x})[0]
    graph = _session(tiny_model, [("CUDAExecutionProvider", {"enable_cuda_graph": "1"})])
    runner = CudaGraphMode(graph, {"x": x}, Device("cuda", 0), {"y": OutputSpec((2, 4), "float32")})
    with runner:
        step = runner.prepare()
        for _ in range(5):  # regular runs, capture, replays
            step()
        np.testing.assert_allclose(runner.fetch_outputs()[0], expected)
