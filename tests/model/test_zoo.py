"""The zoo: every registry model runs on ORT's CPU EP with the declared output shapes; builds are reproducible."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from ortgpu.model import zoo
from ortgpu.model.inputs import InputSpec, make_inputs
from ortgpu.model.inspect import inspect_model


def _session(path: Path, providers: list[str] | None = None, **options: object) -> ort.InferenceSession:
    so = ort.SessionOptions()
    for key, value in options.items():
        setattr(so, key, value)
    return ort.InferenceSession(str(path), so, providers=providers or ["CPUExecutionProvider"])


@pytest.mark.parametrize("name", sorted(zoo.MODELS))
def test_registry_model_runs_on_cpu_with_expected_shapes(name: str, tmp_path: Path) -> None:
    entry = zoo.MODELS[name]
    path = entry.build(tmp_path)
    assert path == tmp_path / f"{name}.onnx"
    info = inspect_model(path)
    feeds = make_inputs(info, entry.spec()).feeds
    session = _session(path)
    outputs = session.run(None, feeds)
    got = {o.name: value.shape for o, value in zip(session.get_outputs(), outputs, strict=True)}
    assert got == dict(entry.expected_output_shapes)
    for value in outputs:
        if value.dtype.kind == "f":
            assert np.isfinite(value).all()
    assert set(info.output_names) == set(entry.expected_output_shapes)


def test_builds_are_byte_identical(tmp_path: Path) -> None:
    for name, entry in zoo.MODELS.items():
        first = entry.build(tmp_path / "a").read_bytes()
        second = entry.build(tmp_path / "b").read_bytes()
        assert first == second, name


def test_demo_model_contract(tmp_path: Path) -> None:
    info = inspect_model(zoo.build_demo_model(tmp_path / "demo.onnx"))
    assert [(i.name, i.dtype, i.shape) for i in info.inputs] == [("image", "float32", ("batch", 3, 32, 32))]
    assert [(o.name, o.shape) for o in info.outputs] == [("logits", ("batch", 10))]
    for op in ("Conv", "Relu", "MaxPool", "LayerNormalization", "MatMul", "Softmax", "Erf", "Add"):
        assert op in info.op_types, op
    session = _session(info.path)
    batch = make_inputs(info, InputSpec(batch=3, seed=1)).feeds
    logits = session.run(None, batch)[0]
    assert logits.shape == (3, 10)
    assert not np.allclose(logits[0], logits[1])  # the output depends on the input


def test_tiny_model_adds_its_constant(tmp_path: Path) -> None:
    path = zoo.build_tiny_model(tmp_path / "tiny.onnx")
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    (y,) = _session(path).run(None, {"x": x})
    np.testing.assert_array_equal(y, x + np.array([1, 2, 3, 4], np.float32))
    assert inspect_model(path).op_types == {"Add": 1}


def test_cpu_only_op_survives_optimisation_and_computes_det(tmp_path: Path) -> None:
    path = zoo.build_cpu_only_op_model(tmp_path / "cpu_only.onnx")
    optimised = tmp_path / "optimised.onnx"
    session = _session(
        path,
        graph_optimization_level=ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
        optimized_model_filepath=str(optimised),
    )
    assert zoo.CPU_ONLY_OP in [n.op_type for n in onnx.load(optimised).graph.node]
    x = np.random.default_rng(0).random((5, 3, 3), dtype=np.float32)
    (y,) = session.run(None, {"x": x})
    np.testing.assert_allclose(y, np.linalg.det(2 * x) + 1, rtol=1e-4, atol=1e-5)


def test_external_data_model_keeps_weights_outside_the_onnx_file(tmp_path: Path) -> None:
    path = zoo.build_external_data_model(tmp_path / "ext.onnx")
    proto = onnx.load(path, load_external_data=False)
    assert proto.graph.initializer[0].data_location == onnx.TensorProto.EXTERNAL
    full = onnx.load(path)  # onnx itself reads the data back
    weight = onnx.numpy_helper.to_array(full.graph.initializer[0])
    x = np.eye(8, dtype=np.float32)
    (y,) = _session(path).run(None, {"x": x})
    np.testing.assert_allclose(y, weight, rtol=1e-6)


def _profile_providers(session: ort.InferenceSession, feeds: dict) -> dict[str, set[str]]:
    session.run(None, feeds)
    profile = Path(session.end_profiling())
    by_op: dict[str, set[str]] = {}
    for event in json.loads(profile.read_text()):
        args = event.get("args", {})
        if event.get("cat") == "Node" and "op_name" in args:
            by_op.setdefault(args["op_name"], set()).add(args.get("provider", ""))
    profile.unlink()
    return by_op


@pytest.mark.gpu
def test_cpu_only_op_falls_back_to_cpu_with_memcpy_on_cuda(tmp_path: Path) -> None:
    path = zoo.build_cpu_only_op_model(tmp_path / "cpu_only.onnx")
    session = _session(
        path,
        ["CUDAExecutionProvider", "CPUExecutionProvider"],
        enable_profiling=True,
        profile_file_prefix=str(tmp_path / "profile"),
    )
    by_op = _profile_providers(session, {"x": np.ones((2, 3, 3), np.float32)})
    assert by_op[zoo.CPU_ONLY_OP] == {"CPUExecutionProvider"}
    assert by_op["Mul"] == {"CUDAExecutionProvider"}
    assert {"MemcpyToHost", "MemcpyFromHost"} <= set(by_op)


@pytest.mark.gpu
def test_demo_model_runs_wholly_on_cuda(tmp_path: Path) -> None:
    path = zoo.build_demo_model(tmp_path / "demo.onnx")
    session = _session(
        path,
        ["CUDAExecutionProvider", "CPUExecutionProvider"],
        enable_profiling=True,
        profile_file_prefix=str(tmp_path / "profile"),
    )
    feeds = make_inputs(inspect_model(path), InputSpec(batch=2)).feeds
    by_op = _profile_providers(session, feeds)
    assert by_op and all(providers == {"CUDAExecutionProvider"} for providers in by_op.values()), by_op
