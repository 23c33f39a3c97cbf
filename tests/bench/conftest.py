"""Models and result builders shared by the bench tests (built in code, small)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from ortgpu.model.zoo import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny.onnx")


@pytest.fixture(scope="session")
def demo_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from ortgpu.model.zoo import build_demo_model

    return build_demo_model(tmp_path_factory.mktemp("models") / "demo.onnx")


@pytest.fixture(scope="session")
def fixed_batch_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """x float32 [2, 4] -> Relu -> y: every dim fixed, so it cannot be batched."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "fixed",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path_factory.mktemp("models") / "fixed.onnx"
    onnx.save(model, path)
    return path


@pytest.fixture(scope="session")
def batch_one_only_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """x float32 [batch, 4] reshaped to a constant [1, 4]: runs at batch 1, fails in ORT at any other batch."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"])],
        "batch_one_only",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor("shape", TensorProto.INT64, [2], [1, 4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path_factory.mktemp("models") / "batch_one_only.onnx"
    onnx.save(model, path)
    return path


def _environment(**changes: object):
    from ortgpu.bench.environment import Environment

    values = dict(
        ortgpu_version="0.1.0",
        date_utc="2026-12-01T00:00:00+00:00",
        python="3.11",
        os="Linux",
        machine="x86_64",
        cpu="test cpu",
        cpu_count=2,
        ort_version="1.32.0",
        ort_distributions=("onnxruntime==1.32.0",),
        ort_build_info="",
        ort_cuda_version=None,
        ort_cudnn_version=None,
        available_providers=("CPUExecutionProvider",),
        ep="cpu",
        active_providers=("CPUExecutionProvider",),
        provider_options={},
        session_options={},
        device_id=0,
        cuda_visible_devices=None,
        driver_version=None,
        cuda_driver_version=None,
        gpu=None,
    )
    values.update(changes)
    return Environment(**values)


@pytest.fixture
def make_result():
    """Build a BenchResult from (ep, mode, batch, p50_ms, jitter_ms) tuples: synthetic but shaped like a real run."""
    import numpy as np

    from ortgpu.bench.modes import BenchMode
    from ortgpu.bench.result import BenchCase, BenchResult, BenchSettings, CaseStatus, ModelSummary
    from ortgpu.bench.stats import compute_stats
    from ortgpu.config import ExecutionProvider

    def build(rows, sha: str = "a" * 64, seed: int = 0, timeline: bool = False, **env_changes: object) -> BenchResult:
        rng = np.random.default_rng(seed)
        cases = []
        for ep, mode, batch, p50, jitter in rows:
            samples = (p50 + rng.uniform(-jitter, jitter, 200)) * 1e6
            cases.append(
                BenchCase(
                    ep=ExecutionProvider(ep),
                    mode=BenchMode(mode),
                    batch=batch,
                    concurrency=1,
                    sessions=1,
                    status=CaseStatus.OK,
                    shapes={"x": (batch, 4)},
                    stats=compute_stats(samples.astype(np.int64), batch, wall_s=float(samples.sum() / 1e9)),
                    timeline_ms=tuple(float(v) for v in samples / 1e6) if timeline else (),
                )
            )
        return BenchResult(
            model=ModelSummary(Path("m.onnx"), sha, 100, 1, ("x float32 [batch, 4]",), ("y float32 [batch, 4]",)),
            ep=ExecutionProvider(rows[0][0]),
            ep_reason="test",
            settings=BenchSettings(
                modes=(BenchMode.RUN,),
                batches=(1,),
                concurrency=(1,),
                sessions=1,
                warmup=None,
                iterations=200,
                duration_s=None,
                compare_cpu=False,
                device_id=0,
            ),
            cases=tuple(cases),
            hints=(),
            environment=_environment(**env_changes),
        )

    return build
