"""make_inputs and the flag parsers: every dtype, dims from flags, ranges, embedding bounds, npz data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from ortgpu.errors import ExitCode
from ortgpu.model import zoo
from ortgpu.model.inputs import InputError, InputSpec, make_inputs, parse_dim, parse_range, parse_shape
from ortgpu.model.inspect import ModelInfo, inspect_model


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ModelInfo]:
    folder = tmp_path_factory.mktemp("zoo")
    return {name: inspect_model(entry.build(folder)) for name, entry in zoo.MODELS.items()}


def _error(exc: pytest.ExceptionInfo[InputError], *words: str) -> str:
    assert exc.value.exit_code == ExitCode.BAD_INPUT
    line = exc.value.one_line()
    assert "\n" not in line and exc.value.hint
    for word in words:
        assert word in line, (word, line)
    return line


# ------------------------------------------------------------------------------------------------ parsers


def test_parse_shape_forms() -> None:
    assert parse_shape("image=1x3x224x224") == ("image", (1, 3, 224, 224))
    assert parse_shape("image = 1,3,224,224") == ("image", (1, 3, 224, 224))
    assert parse_shape("input:0=[2x5]") == ("input:0", (2, 5))
    assert parse_shape("sr=") == ("sr", ())
    assert parse_shape("sr=scalar") == ("sr", ())
    assert parse_shape("x=0x4") == ("x", (0, 4))


@pytest.mark.parametrize("text", ["image", "=1x3", "image=1xax3", "image=1x-3", "image=1x3.5"])
def test_parse_shape_rejects(text: str) -> None:
    with pytest.raises(InputError) as exc:
        parse_shape(text)
    _error(exc, "--shape")


def test_parse_dim_and_range() -> None:
    assert parse_dim("batch=8") == ("batch", 8)
    assert parse_dim("seq*2=16") == ("seq*2", 16)
    assert parse_range("x=-1,1") == ("x", (-1.0, 1.0))
    assert parse_range("ids=0,30521") == ("ids", (0.0, 30521.0))
    for bad in ("batch", "batch=eight", "batch=-1"):
        with pytest.raises(InputError):
            parse_dim(bad)
    for bad in ("x=1", "x=a,b", "x=2,1", "x=0,inf", "x=1,2,3"):
        with pytest.raises(InputError) as exc:
            parse_range(bad)
        _error(exc, "--range")


# ------------------------------------------------------------------------------------------------ dtypes, seeds


def test_every_dtype_is_generated_with_the_model_dtype(models: dict[str, ModelInfo]) -> None:
    info = models["all_dtypes"]
    resolved = make_inputs(info, InputSpec())
    assert len(resolved.feeds) == 13
    for tensor in info.inputs:
        array = resolved.feeds[tensor.name]
        assert array.dtype == np.dtype(tensor.dtype), tensor.name
        assert array.shape == (1, 3)
    assert all(isinstance(v, str) for v in resolved.feeds["x_string"].ravel())
    assert resolved.sources == {t.name: "generated" for t in info.inputs}


def test_same_seed_same_data_other_seed_other_data(models: dict[str, ModelInfo]) -> None:
    info = models["demo"]
    first = make_inputs(info, InputSpec(seed=7)).feeds["image"]
    again = make_inputs(info, InputSpec(seed=7)).feeds["image"]
    other = make_inputs(info, InputSpec(seed=8)).feeds["image"]
    assert np.array_equal(first, again)
    assert not np.array_equal(first, other)
    assert first.min() >= 0.0 and first.max() < 1.0


def test_an_input_keeps_its_values_when_other_inputs_change(models: dict[str, ModelInfo]) -> None:
    info = models["tokens"]
    base = make_inputs(info, InputSpec(dims={"batch": 2, "sequence": 8}))
    ranged = make_inputs(info, InputSpec(dims={"batch": 2, "sequence": 8}, ranges={"attention_mask": (1, 1)}))
    assert np.array_equal(base.feeds["input_ids"], ranged.feeds["input_ids"])
    assert (ranged.feeds["attention_mask"] == 1).all()


# ------------------------------------------------------------------------------------------------ shapes


def test_leading_dim_defaults_to_one_and_is_reported(models: dict[str, ModelInfo]) -> None:
    resolved = make_inputs(models["demo"], InputSpec())
    assert resolved.shapes == {"image": (1, 3, 32, 32)}
    assert resolved.batch == 1
    assert resolved.notes == ("input 'image': leading dim 'batch' defaulted to 1",)


def test_batch_overrides_open_leading_dims_and_follows_the_symbol(models: dict[str, ModelInfo]) -> None:
    resolved = make_inputs(models["scalar_if"], InputSpec(batch=4))
    assert resolved.shapes == {"audio": (4, 16), "sr": (), "state": (2, 4, 8)}
    assert resolved.batch == 4
    assert resolved.notes == ()
    # --shape keeps its other dims; the batch setting replaces its open leading dim (bench's batch sweep)
    resolved = make_inputs(models["tiny"], InputSpec(shapes={"x": (1, 4)}, batch=8))
    assert resolved.shapes == {"x": (8, 4)}
    with pytest.raises(InputError):
        make_inputs(models["tiny"], InputSpec(batch=0))


def test_default_batch_binds_the_same_symbol_elsewhere(models: dict[str, ModelInfo]) -> None:
    resolved = make_inputs(models["scalar_if"], InputSpec())
    assert resolved.shapes["state"] == (2, 1, 8)
    assert resolved.feeds["sr"].shape == () and resolved.feeds["sr"].dtype == np.int64


def test_dims_shapes_and_expressions(models: dict[str, ModelInfo]) -> None:
    info = models["symbolic_dims"]
    spec = InputSpec(
        dims={"N": 2, "height": 5, "width": 6, "seq": 4}, shapes={"unnamed": (2, 3, 4), "question": (2, 9)}
    )
    shapes = make_inputs(info, spec).shapes
    assert shapes == {
        "named": (2, 5, 6),
        "unnamed": (2, 3, 4),
        "minus_one": (1, 3),
        "zero": (0, 2),
        "question": (2, 9),
        "expression": (2, 8),
    }
    # the expression's whole text can be set too
    spec = InputSpec(dims={"height": 1, "width": 1, "seq*2": 3}, shapes={"unnamed": (1, 1, 4), "question": (1, 1)})
    assert make_inputs(info, spec).shapes["expression"] == (1, 3)


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        (
            InputSpec(dims={"width": 6, "seq": 4}, shapes={"unnamed": (1, 2, 4), "question": (1, 7)}),
            ("'named'", "'height'", "--dim height=224"),
        ),
        (
            InputSpec(dims={"height": 5, "width": 6, "seq": 4}, shapes={"question": (1, 7)}),
            ("'unnamed'", "dim 1", "--shape unnamed="),
        ),
        (
            InputSpec(dims={"height": 5, "width": 6}, shapes={"unnamed": (1, 2, 4), "question": (1, 7)}),
            ("'expression'", "seq*2", "--dim seq=128"),
        ),
    ],
    ids=["named", "unnamed", "expression"],
)
def test_a_dim_nothing_fixes_is_an_error_naming_input_dim_and_flag(
    models: dict[str, ModelInfo], spec: InputSpec, words: tuple[str, ...]
) -> None:
    with pytest.raises(InputError) as exc:
        make_inputs(models["symbolic_dims"], spec)
    _error(exc, *words)


def test_shape_errors(models: dict[str, ModelInfo]) -> None:
    demo = models["demo"]
    with pytest.raises(InputError) as exc:
        make_inputs(demo, InputSpec(shapes={"images": (1, 3, 32, 32)}))
    _error(exc, "'images'", "'image'")
    with pytest.raises(InputError) as exc:
        make_inputs(demo, InputSpec(shapes={"image": (3, 32, 32)}))
    _error(exc, "rank 3", "rank 4")
    with pytest.raises(InputError) as exc:
        make_inputs(demo, InputSpec(shapes={"image": (1, 4, 32, 32)}))
    _error(exc, "fixes it to 3", "--shape image=1x3x32x32")
    with pytest.raises(InputError) as exc:
        make_inputs(models["scalar_if"], InputSpec(dims={"batch": 2}, shapes={"audio": (3, 16)}))
    _error(exc, "'batch'", "2", "3")


def test_a_model_without_shape_needs_shape_flag(tmp_path: Path) -> None:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["a"], ["y"])],
        "g",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    path = tmp_path / "noshape.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    info = inspect_model(path, check=False)
    with pytest.raises(InputError) as exc:
        make_inputs(info, InputSpec())
    _error(exc, "'a'", "--shape a=")
    assert make_inputs(info, InputSpec(shapes={"a": (2, 2)})).feeds["a"].shape == (2, 2)


def test_unsupported_dtype_is_refused(tmp_path: Path) -> None:
    graph = helper.make_graph(
        [helper.make_node("Identity", ["b"], ["y"])],
        "g",
        [helper.make_tensor_value_info("b", TensorProto.BFLOAT16, [2])],
        [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [2])],
    )
    path = tmp_path / "bf16.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    with pytest.raises(InputError) as exc:
        make_inputs(inspect_model(path), InputSpec())
    _error(exc, "'b'", "bfloat16")


# ------------------------------------------------------------------------------------------------ ranges, bounds


def test_ranges_float_half_open_int_inclusive(models: dict[str, ModelInfo]) -> None:
    info = models["all_dtypes"]
    spec = InputSpec(
        shapes={"x_float": (1, 3)},
        batch=2000,
        ranges={"x_float": (-2, -1), "x_uint8": (250, 255), "x_int8": (-3, 3), "x_float16": (10, 20)},
    )
    feeds = make_inputs(info, spec).feeds
    assert feeds["x_float"].min() >= -2 and feeds["x_float"].max() < -1
    assert set(np.unique(feeds["x_uint8"])) == set(range(250, 256))
    assert set(np.unique(feeds["x_int8"])) == set(range(-3, 4))
    assert feeds["x_float16"].min() >= 10 and feeds["x_float16"].max() <= 20
    assert set(np.unique(feeds["x_int64"])) == {0, 1}  # the default integer range
    assert set(np.unique(feeds["x_bool"])) == {False, True}


@pytest.mark.parametrize(
    ("ranges", "words"),
    [
        ({"x_nothing": (0, 1)}, ("'x_nothing'", "'x_float'")),
        ({"x_bool": (0, 1)}, ("x_bool", "bool")),
        ({"x_string": (0, 1)}, ("x_string", "string")),
        ({"x_uint8": (0, 300)}, ("x_uint8", "uint8")),
        ({"x_int32": (0.5, 3)}, ("x_int32", "whole")),
    ],
)
def test_range_errors(models: dict[str, ModelInfo], ranges: dict, words: tuple[str, ...]) -> None:
    with pytest.raises(InputError) as exc:
        make_inputs(models["all_dtypes"], InputSpec(ranges=ranges))
    _error(exc, *words)


def test_token_ids_stay_inside_their_embedding_tables(models: dict[str, ModelInfo]) -> None:
    resolved = make_inputs(models["tokens"], InputSpec(dims={"batch": 4, "sequence": 64}))
    ids, types = resolved.feeds["input_ids"], resolved.feeds["token_type_ids"]
    assert ids.min() >= 0 and ids.max() < zoo.TOKEN_VOCAB and ids.max() > 1  # the whole table, not just 0/1
    assert set(np.unique(types)) <= {0, 1}
    assert set(np.unique(resolved.feeds["attention_mask"])) == {0, 1}
    assert any("100 rows" in note for note in resolved.notes)
    # an explicit range wins, and going past the table is said
    resolved = make_inputs(models["tokens"], InputSpec(dims={"sequence": 4}, ranges={"input_ids": (0, 500)}))
    assert any("outside the embedding table" in note for note in resolved.notes)


def test_large_inputs_are_vectorised(models: dict[str, ModelInfo]) -> None:
    feeds = make_inputs(models["demo"], InputSpec(shapes={"image": (64, 3, 32, 32)})).feeds
    assert feeds["image"].shape == (64, 3, 32, 32) and feeds["image"].dtype == np.float32
    assert len(np.unique(feeds["image"][:, 0, 0, 0])) == 64  # rows differ: real random data, not a broadcast


# ------------------------------------------------------------------------------------------------ npz


def test_npz_data_is_used_and_missing_inputs_generated(models: dict[str, ModelInfo], tmp_path: Path) -> None:
    ids = np.arange(12, dtype=np.int64).reshape(2, 6)
    path = tmp_path / "real.npz"
    np.savez(path, input_ids=ids)
    resolved = make_inputs(models["tokens"], InputSpec(npz=path))
    assert np.array_equal(resolved.feeds["input_ids"], ids)
    assert resolved.shapes["attention_mask"] == (2, 6)  # symbols bound from the data
    assert resolved.sources == {"input_ids": "npz", "attention_mask": "generated", "token_type_ids": "generated"}
    assert any("generated" in note and "'attention_mask'" in note for note in resolved.notes)
    assert resolved.batch == 2


def test_npz_batch_one_is_repeated_for_a_batch_sweep(models: dict[str, ModelInfo], tmp_path: Path) -> None:
    path = tmp_path / "one.npz"
    image = np.random.default_rng(0).random((1, 3, 32, 32), dtype=np.float32)
    np.savez(path, image=image)
    resolved = make_inputs(models["demo"], InputSpec(npz=path, batch=3))
    assert resolved.feeds["image"].shape == (3, 3, 32, 32)
    assert np.array_equal(resolved.feeds["image"][2], image[0])


def test_npz_string_input(models: dict[str, ModelInfo], tmp_path: Path) -> None:
    path = tmp_path / "text.npz"
    np.savez(path, x_string=np.array([["a", "bb", "ccc"]]))
    resolved = make_inputs(models["all_dtypes"], InputSpec(npz=path))
    assert resolved.feeds["x_string"].dtype == object
    assert resolved.feeds["x_string"].tolist() == [["a", "bb", "ccc"]]


@pytest.mark.parametrize(
    ("arrays", "words"),
    [
        ({"imgs": np.zeros((1, 3, 32, 32), np.float32)}, ("'imgs'", "'image'")),
        ({"image": np.zeros((1, 3, 32, 32), np.float64)}, ("'image'", "float64", "float32")),
        ({"image": np.zeros((3, 32, 32), np.float32)}, ("'image'", "rank 3", "rank 4")),
        ({"image": np.zeros((1, 3, 16, 16), np.float32)}, ("'image'", "32")),
        ({"image": np.array([[{"a": 1}]], dtype=object)}, ("'image'", "pickled")),
    ],
    ids=["unknown-name", "dtype", "rank", "fixed-dim", "pickle"],
)
def test_npz_errors(models: dict[str, ModelInfo], tmp_path: Path, arrays: dict, words: tuple[str, ...]) -> None:
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    with pytest.raises(InputError) as exc:
        make_inputs(models["demo"], InputSpec(npz=path))
    _error(exc, *words)


def test_npz_file_errors(models: dict[str, ModelInfo], tmp_path: Path) -> None:
    with pytest.raises(InputError) as exc:
        make_inputs(models["demo"], InputSpec(npz=tmp_path / "absent.npz"))
    _error(exc, "not found")
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(InputError) as exc:
        make_inputs(models["demo"], InputSpec(npz=garbage))
    _error(exc, "garbage.npz")
    single = tmp_path / "single.npy"
    np.save(single, np.zeros(3))
    with pytest.raises(InputError) as exc:
        make_inputs(models["demo"], InputSpec(npz=single))
    _error(exc, ".npy")
    path = tmp_path / "ok.npz"
    np.savez(path, image=np.zeros((2, 3, 32, 32), np.float32))
    with pytest.raises(InputError) as exc:
        make_inputs(models["demo"], InputSpec(npz=path, shapes={"image": (1, 3, 32, 32)}))
    _error(exc, "--shape")
    with pytest.raises(InputError) as exc:
        make_inputs(models["demo"], InputSpec(npz=path, batch=4))
    _error(exc, "batch 2", "batch 4")


def test_npz_token_ids_past_the_embedding_table_are_refused(models: dict[str, ModelInfo], tmp_path: Path) -> None:
    path = tmp_path / "other_vocab.npz"
    np.savez(path, input_ids=np.array([[101, 7592, 102]], dtype=np.int64))
    with pytest.raises(InputError) as exc:
        make_inputs(models["tokens"], InputSpec(npz=path))
    _error(exc, "'input_ids'", "7592", "100 rows")
