"""Input errors that name the culprit: every open dim in one message with a flag line that works, and a run that
fails on generated data traced from the failing node to the model input behind it, with a fix that works."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ortgpu.check import CheckRequest, run_check
from ortgpu.cli.main import main
from ortgpu.config import ExecutionProvider
from ortgpu.model.culprits import failed_node
from ortgpu.model.inputs import InputError, InputSpec, parse_dim, parse_range, parse_shape
from ortgpu.session.failures import RunFailedError


def _save(graph: onnx.GraphProto, path: Path) -> Path:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


@pytest.fixture(scope="module")
def two_open_dims(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """image [1, 3, height, width] and tokens [1, seq]: three dims no default fixes."""
    image = helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, "height", "width"])
    tokens = helper.make_tensor_value_info("tokens", TensorProto.FLOAT, [1, "seq"])
    out_i = helper.make_tensor_value_info("image_out", TensorProto.FLOAT, [1, 3, "height", "width"])
    out_t = helper.make_tensor_value_info("tokens_out", TensorProto.FLOAT, [1, "seq"])
    nodes = [
        helper.make_node("Relu", ["image"], ["image_out"], name="relu"),
        helper.make_node("Neg", ["tokens"], ["tokens_out"], name="neg"),
    ]
    graph = helper.make_graph(nodes, "two_open_dims", [image, tokens], [out_i, out_t])
    return _save(graph, tmp_path_factory.mktemp("dims") / "two_open_dims.onnx")


@pytest.fixture(scope="module")
def sample_rate_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A VAD-like model: frames = Range(0, 160, sr / 100) fails when the generated sample rate is 0 or 1."""
    audio = helper.make_tensor_value_info("audio", TensorProto.FLOAT, [1, 160])
    sr = helper.make_tensor_value_info("sr", TensorProto.INT64, [])
    out = helper.make_tensor_value_info("frames", TensorProto.INT64, [None])
    scaled = helper.make_tensor_value_info("energy", TensorProto.FLOAT, [1, 160])
    inits = [
        numpy_helper.from_array(np.array(100, dtype=np.int64), "hundred"),
        numpy_helper.from_array(np.array(0, dtype=np.int64), "zero"),
        numpy_helper.from_array(np.array(160, dtype=np.int64), "limit"),
    ]
    nodes = [
        helper.make_node("Div", ["sr", "hundred"], ["hop"], name="hop_from_sr"),
        helper.make_node("Identity", ["hop"], ["hop_copy"], name="hop_copy"),
        helper.make_node("Range", ["zero", "limit", "hop_copy"], ["frames"], name="frame_starts"),
        helper.make_node("Mul", ["audio", "audio"], ["energy"], name="energy"),
    ]
    graph = helper.make_graph(nodes, "vad_like", [audio, sr], [out, scaled], initializer=inits)
    return _save(graph, tmp_path_factory.mktemp("sr") / "vad_like.onnx")


def _cpu(model: Path, spec: InputSpec) -> CheckRequest:
    return CheckRequest(model=model, ep=ExecutionProvider.CPU, warm_runs=0, inputs=spec)


def _spec_from_flags(hint: str) -> InputSpec:
    """The InputSpec the flags in a hint produce, parsed by the same functions as the CLI."""
    words = hint.split()
    shapes, dims, ranges = {}, {}, {}
    for flag, value in itertools.pairwise(words):
        if flag == "--shape":
            name, shape = parse_shape(value)
            shapes[name] = shape
        elif flag == "--dim":
            name, dim = parse_dim(value)
            dims[name] = dim
        elif flag == "--range":
            name, pair = parse_range(value)
            ranges[name] = pair
    return InputSpec(shapes=shapes, dims=dims, ranges=ranges)


def test_every_open_dim_is_named_in_one_message(two_open_dims: Path) -> None:
    with pytest.raises(InputError) as info:
        run_check(_cpu(two_open_dims, InputSpec()))
    message, hint = info.value.message, info.value.hint or ""
    assert message.startswith("3 dims")
    for word in ("'image'", "'height'", "'width'", "'tokens'", "'seq'"):
        assert word in message
    for flag in ("--dim height=224", "--dim width=224", "--dim seq=128"):
        assert flag in hint


def test_the_flag_line_of_the_hint_makes_the_check_pass(two_open_dims: Path) -> None:
    with pytest.raises(InputError) as info:
        run_check(_cpu(two_open_dims, InputSpec()))
    result = run_check(_cpu(two_open_dims, _spec_from_flags(info.value.hint or "")))
    assert result.passed
    assert {s.name: s.shape for s in result.inputs} == {"image": (1, 3, 224, 224), "tokens": (1, 128)}


def test_open_dims_already_given_are_not_asked_for_again(two_open_dims: Path) -> None:
    with pytest.raises(InputError) as info:
        run_check(_cpu(two_open_dims, InputSpec(dims={"height": 32, "width": 32})))
    assert info.value.message.startswith("1 dim") and "--dim seq=128" in (info.value.hint or "")
    assert "height" not in (info.value.hint or "")


def test_a_run_failure_is_traced_to_the_generated_input_behind_the_node(sample_rate_model: Path) -> None:
    with pytest.raises(InputError) as info:
        run_check(_cpu(sample_rate_model, InputSpec()))
    error = info.value
    assert error.exit_code == 2
    assert "'frame_starts' (Range)" in error.message and "'sr' (int64, generated in [0, 1])" in error.message
    assert "'audio'" not in error.message  # the other input does not reach the failing node
    assert "--range sr=16000,16000" in (error.hint or "") and "--inputs" in (error.hint or "")
    assert "--ep cpu" not in error.one_line()  # the run was already on the CPU EP


def test_the_suggested_range_makes_the_run_pass(sample_rate_model: Path) -> None:
    with pytest.raises(InputError) as info:
        run_check(_cpu(sample_rate_model, InputSpec()))
    assert run_check(_cpu(sample_rate_model, _spec_from_flags(info.value.hint or ""))).passed


def test_values_from_an_inputs_file_are_named_not_replaced(sample_rate_model: Path, tmp_path: Path) -> None:
    data = tmp_path / "bad.npz"
    np.savez(data, audio=np.zeros((1, 160), np.float32), sr=np.array(50, np.int64))
    with pytest.raises(RunFailedError) as info:
        run_check(_cpu(sample_rate_model, InputSpec(npz=data)))
    assert "'sr' (int64, from --inputs)" in info.value.message
    assert "--range" not in (info.value.hint or "")


def test_the_cli_prints_the_culprit_on_one_line(sample_rate_model: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(sample_rate_model), "--ep", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "'sr'" in err and "--range sr=16000,16000" in err and "Traceback" not in err


def test_the_innermost_failed_node_is_taken() -> None:
    message = (
        "Non-zero status code returned while running If node. Name:'If_25' Status Message: Non-zero status code "
        "returned while running FusedConv node. Name:'Conv_139' Status Message: CUDNN failure 3"
    )
    node = failed_node(message)
    assert node is not None and (node.op, node.name) == ("FusedConv", "Conv_139")


@pytest.mark.parametrize(("ep", "suggests_cpu"), [(ExecutionProvider.CPU, False), (ExecutionProvider.CUDA, True)])
def test_a_run_failure_never_suggests_what_the_run_already_did(ep: ExecutionProvider, suggests_cpu: bool) -> None:
    from ortgpu.session.failures import Phase, translate_ort_error

    error = translate_ort_error(RuntimeError("some kernel failed"), Phase.RUN, ep, "1.20.0")
    assert isinstance(error, RunFailedError)
    assert ("--ep cpu" in (error.hint or "")) is suggests_cpu


def test_a_shape_complaint_points_at_the_shape_not_the_values(tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "n"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 4])
    shape = numpy_helper.from_array(np.array([-1, 4], dtype=np.int64), "rows_of_four")
    node = helper.make_node("Reshape", ["x", "rows_of_four"], ["y"], name="to_rows")
    model = _save(helper.make_graph([node], "rows", [x], [y], initializer=[shape]), tmp_path / "rows.onnx")
    with pytest.raises(InputError) as info:
        run_check(_cpu(model, InputSpec(dims={"n": 6})))
    assert "'to_rows' (Reshape)" in info.value.message and "fed with shape 1x6" in info.value.message
    assert "--shape" in (info.value.hint or "") and "--range" not in (info.value.hint or "")
