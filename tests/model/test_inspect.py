"""inspect_model: real inputs, dims in every form, subgraph node counts, safe external data, clear errors."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ortgpu.errors import ExitCode
from ortgpu.model import zoo
from ortgpu.model.inspect import ModelError, inspect_model


def _save(model: onnx.ModelProto, path: Path) -> Path:
    path.write_bytes(model.SerializeToString())
    return path


def _assert_one_line_error(exc: pytest.ExceptionInfo[ModelError], *words: str) -> None:
    error = exc.value
    assert error.exit_code == ExitCode.BAD_INPUT
    assert "\n" not in error.one_line()
    assert error.hint
    for word in words:
        assert word in error.message, (word, error.message)


def test_demo_model_summary(tmp_path: Path) -> None:
    path = zoo.build_demo_model(tmp_path / "demo.onnx")
    info = inspect_model(path)
    assert [(i.name, i.dtype, i.elem_type, i.shape) for i in info.inputs] == [
        ("image", "float32", "float", ("batch", 3, 32, 32))
    ]
    assert [(o.name, o.shape) for o in info.outputs] == [("logits", ("batch", 10))]
    assert info.opsets == {"ai.onnx": zoo.OPSET}
    assert info.ir_version == 8
    assert info.producer == "ortgpu.zoo 1"
    assert info.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert info.size_bytes == path.stat().st_size
    assert info.op_types["LayerNormalization"] == 2
    assert info.node_count == sum(info.op_types.values()) == len(onnx.load(path).graph.node)
    assert info.external_data == ()
    assert info.inputs[0].rank == 4 and info.inputs[0].is_dynamic
    assert info.inputs[0].shape_text() == "[batch, 3, 32, 32]"


def test_old_style_initializers_in_graph_input_are_not_inputs(tmp_path: Path) -> None:
    path = zoo.build_old_style_model(tmp_path / "old.onnx")
    assert [vi.name for vi in onnx.load(path).graph.input] == ["x", "W", "B"]  # the fixture is what we claim
    info = inspect_model(path)
    assert info.input_names == ("x",)
    assert info.ir_version == 3
    assert info.initializer_count == 2


def test_symbolic_dims_in_every_form(tmp_path: Path) -> None:
    info = inspect_model(zoo.build_symbolic_dims_model(tmp_path / "dims.onnx"))
    shapes = {i.name: i.shape for i in info.inputs}
    assert shapes == {
        "named": ("N", "height", "width"),
        "unnamed": ("N", None, 4),
        "minus_one": (None, 3),
        "zero": (0, 2),
        "question": ("N", None),
        "expression": ("N", "seq*2"),
    }


def test_missing_shape_and_scalar_are_told_apart(tmp_path: Path) -> None:
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "s"], ["y"])],
        "g",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("s", TensorProto.FLOAT, []),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    info = inspect_model(_save(model, tmp_path / "m.onnx"), check=False)
    a, s = info.inputs
    assert (a.has_shape, a.rank, a.shape_text()) == (False, None, "?")
    assert (s.has_shape, s.rank, s.shape_text()) == (True, 0, "[]")


def test_unsupported_types_are_marked(tmp_path: Path) -> None:
    graph = helper.make_graph(
        [helper.make_node("Identity", ["b"], ["y"])],
        "g",
        [helper.make_tensor_value_info("b", TensorProto.BFLOAT16, [2])],
        [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [2])],
    )
    info = inspect_model(
        _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "m.onnx")
    )
    assert (info.inputs[0].elem_type, info.inputs[0].dtype) == ("bfloat16", "unsupported")


def test_node_count_includes_nested_subgraphs(tmp_path: Path) -> None:
    # Loop body holding an If whose branches hold one node each: 1 Loop + (1 Greater + 1 If + 2 branch) + 1 outer.
    def branch(name: str) -> onnx.GraphProto:
        return helper.make_graph(
            [helper.make_node("Identity", ["v_in"], [f"{name}_out"])],
            name,
            [],
            [helper.make_tensor_value_info(f"{name}_out", TensorProto.FLOAT, [1])],
        )

    body = helper.make_graph(
        [
            helper.make_node("Greater", ["v_in", "zero"], ["positive"]),
            helper.make_node("If", ["positive"], ["v_out"], then_branch=branch("then"), else_branch=branch("else")),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [1]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [1]),
        ],
    )
    graph = helper.make_graph(
        [
            helper.make_node("Loop", ["trips", "cond", "x"], ["looped"], body=body),
            helper.make_node("Relu", ["looped"], ["y"]),
        ],
        "g",
        [
            helper.make_tensor_value_info("trips", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
        initializer=[numpy_helper.from_array(np.zeros(1, np.float32), "zero")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    info = inspect_model(_save(model, tmp_path / "loop.onnx"))
    assert info.node_count == 7
    assert info.op_types == {"Greater": 1, "Identity": 3, "If": 1, "Loop": 1, "Relu": 1}
    assert info.has_subgraphs
    assert [i.shape for i in info.inputs] == [(), (), (1,)]


def test_embedding_bounds_through_index_chains(tmp_path: Path) -> None:
    info = inspect_model(zoo.build_token_model(tmp_path / "tokens.onnx"))
    assert info.index_bounds == {"input_ids": zoo.TOKEN_VOCAB, "token_type_ids": zoo.TOKEN_TYPES}

    # ids -> Unsqueeze -> Reshape -> Gather(axis=1) on a Constant table [4, 30]: bound by the gathered axis.
    table = numpy_helper.from_array(np.zeros((4, 30), np.float32), "table_value")
    graph = helper.make_graph(
        [
            helper.make_node("Constant", [], ["table"], value=table),
            helper.make_node("Unsqueeze", ["ids", "axes"], ["ids2"]),
            helper.make_node("Reshape", ["ids2", "flat"], ["ids3"]),
            helper.make_node("Gather", ["table", "ids3"], ["y"], axis=1),
        ],
        "g",
        [
            helper.make_tensor_value_info("ids", TensorProto.INT32, ["n"]),
            helper.make_tensor_value_info("other", TensorProto.INT64, ["n"]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[
            numpy_helper.from_array(np.array([0], np.int64), "axes"),
            numpy_helper.from_array(np.array([-1], np.int64), "flat"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    info = inspect_model(_save(model, tmp_path / "chain.onnx"), check=False)
    assert info.index_bounds == {"ids": 30}


def _file(folder: Path, name: str, content: bytes | None) -> Path:
    if content is not None:
        (folder / name).write_bytes(content)
    return folder / name


@pytest.mark.parametrize(
    ("name", "content", "word"),
    [
        ("absent.onnx", None, "not found"),
        ("", None, "is a directory"),
        ("empty.onnx", b"", "empty"),
        ("notes.txt", b"hello, I am not a model\n", "not"),
        ("random.onnx", np.random.default_rng(1).bytes(4096), "not"),
        ("png.onnx", b"\x89PNG\r\n\x1a\n" + b"\0" * 64, "not"),
    ],
    ids=["missing", "directory", "zero-byte", "text", "random-bytes", "png"],
)
def test_unusable_files_are_one_line_model_errors(tmp_path: Path, name: str, content: bytes | None, word: str) -> None:
    path = _file(tmp_path, name, content) if name else tmp_path
    with pytest.raises(ModelError) as exc:
        inspect_model(path)
    _assert_one_line_error(exc, word)


def test_special_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.onnx"
    os.mkfifo(fifo)
    with pytest.raises(ModelError) as exc:
        inspect_model(fifo)
    _assert_one_line_error(exc, "not a regular file")


def test_directory_hint_names_the_model_inside(tmp_path: Path) -> None:
    zoo.build_tiny_model(tmp_path / "tiny.onnx")
    with pytest.raises(ModelError) as exc:
        inspect_model(tmp_path)
    assert "tiny.onnx" in (exc.value.hint or "")


def test_truncated_model_is_refused(tmp_path: Path) -> None:
    data = zoo.build_demo_model(tmp_path / "demo.onnx").read_bytes()
    for cut in (len(data) // 2, len(data) - 7, 40):
        path = tmp_path / f"cut{cut}.onnx"
        path.write_bytes(data[:cut])
        with pytest.raises(ModelError) as exc:
            inspect_model(path)
        _assert_one_line_error(exc)


def test_invalid_graph_is_refused_by_the_checker(tmp_path: Path) -> None:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["not_defined_anywhere"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    path = _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "bad.onnx")
    with pytest.raises(ModelError) as exc:
        inspect_model(path)
    _assert_one_line_error(exc, "validation")
    assert inspect_model(path, check=False).input_names == ("x",)


def test_external_data_inside_the_folder_is_listed(tmp_path: Path) -> None:
    path = zoo.build_external_data_model(tmp_path / "ext.onnx")
    info = inspect_model(path)
    assert info.external_data == ("ext.onnx.data",)
    assert (tmp_path / "ext.onnx.data").stat().st_size == 8 * 8 * 4
    # and the size of the .onnx file excludes the weights
    assert info.size_bytes < 8 * 8 * 4


def test_external_data_in_a_subfolder_is_fine(tmp_path: Path) -> None:
    path = zoo.build_external_data_model(tmp_path / "ext.onnx", location="weights/w.bin")
    assert inspect_model(path).external_data == ("weights/w.bin",)


@pytest.mark.parametrize(
    ("location", "word"),
    [
        ("../outside.bin", "leaves"),
        ("sub/../../outside.bin", "leaves"),
        ("..\\outside.bin", "leaves"),
        ("/etc/passwd", "absolute"),
        ("C:\\Windows\\win.ini", "absolute"),
        ("\\\\server\\share\\w.bin", "absolute"),
    ],
)
def test_external_data_escaping_the_folder_is_refused(tmp_path: Path, location: str, word: str) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    (tmp_path / "outside.bin").write_bytes(b"\0" * 256)
    path = zoo.build_external_data_model(folder / "m.onnx", location=location)
    with pytest.raises(ModelError) as exc:
        inspect_model(path)
    _assert_one_line_error(exc, location, word)


def test_external_data_symlink_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    path = zoo.build_external_data_model(folder / "m.onnx")
    outside = tmp_path / "elsewhere.bin"
    (folder / "m.onnx.data").rename(outside)
    (folder / "m.onnx.data").symlink_to(outside)
    with pytest.raises(ModelError) as exc:
        inspect_model(path)
    _assert_one_line_error(exc, "outside", "symlink")


def test_missing_or_truncated_external_data_is_refused(tmp_path: Path) -> None:
    path = zoo.build_external_data_model(tmp_path / "m.onnx")
    data = tmp_path / "m.onnx.data"
    data.write_bytes(data.read_bytes()[:10])
    with pytest.raises(ModelError) as exc:
        inspect_model(path)
    _assert_one_line_error(exc, "truncated")
    data.unlink()
    with pytest.raises(ModelError) as exc:
        inspect_model(path)
    _assert_one_line_error(exc, "missing")


def test_model_modules_import_no_heavy_library() -> None:
    import subprocess
    import sys

    code = (
        "import sys, ortgpu.model, ortgpu.model.inspect, ortgpu.model.inputs, ortgpu.model.zoo\n"
        "print(sorted(m for m in ('numpy', 'onnx', 'onnxruntime') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
