"""`ortgpu inspect` in-process: the table, the JSON envelope, exit 2 on hostile input, literal hostile names."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ortgpu.cli.main import main
from ortgpu.model import zoo


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    zoo.build_demo_model(tmp_path / "demo.onnx")
    zoo.build_scalar_if_model(tmp_path / "if.onnx")
    return tmp_path


def test_inspect_prints_every_section(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "demo.onnx"]) == 0
    out = capsys.readouterr().out
    for words in (
        "demo.onnx",
        "IR 8",
        "Inputs",
        "[batch, 3, 32, 32]",
        "batch: image[0] -> logits[0]",
        "Ops: 33 nodes",
        "MatMul",
        "Initializers: 23",
        "conv2.w",
        "External data: none",
        "CUDA EP kernels",
    ):
        assert words in out, words


def test_shared_dims_and_subgraphs_are_shown(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "if.onnx", "--no-kernels"]) == 0
    out = capsys.readouterr().out
    assert "batch: audio[0], state[1] shared: one value feeds all of them" in out
    assert "Subgraphs: If x1" in out and "skipped on request" in out


def test_json_is_the_versioned_envelope(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "demo.onnx", "--json", "--top", "2"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "ortgpu.inspect/v1"
    result = doc["result"]
    assert result["inputs"][0]["shape"] == ["batch", 3, 32, 32]
    assert len(result["top_initializers"]) == 2 and result["kernels"]["provider"] == "CUDAExecutionProvider"
    assert result["kernels"]["status"] in ("determined", "not-determined")


@pytest.mark.parametrize(
    ("target", "content", "words"),
    [
        ("missing.onnx", None, "model not found"),
        (".", None, "is a directory"),
        ("empty.onnx", b"", "empty"),
        ("junk.onnx", b"\x07\x03junk" * 9, "not a valid ONNX model"),
    ],
)
def test_bad_models_are_exit_2_in_one_line(
    workdir: Path, capsys: pytest.CaptureFixture[str], target: str, content: bytes | None, words: str
) -> None:
    if content is not None:
        (workdir / target).write_bytes(content)
    assert main(["inspect", target]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_missing_external_data_names_the_file(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    zoo.build_external_data_model(workdir / "ext.onnx")
    names = [p.name for p in workdir.glob("*.data")]
    for data in workdir.glob("*.data"):
        data.unlink()
    assert main(["inspect", "ext.onnx", "--json"]) == 2
    captured = capsys.readouterr()
    assert json.loads(captured.out)["error"]["exit_code"] == 2
    assert names[0] in captured.err and "missing" in captured.err


def test_hostile_names_are_printed_literally(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name = "[red]x[/red]\x1b[31m"
    graph = helper.make_graph(
        [helper.make_node("Relu", [name], ["y"], name="[link=file:///etc]n[/link]")],
        "g",
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, ["[b]dim[/b]"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["[b]dim[/b]"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "m.onnx")
    assert main(["inspect", str(tmp_path / "m.onnx"), "--no-kernels"]) == 0
    out = capsys.readouterr().out
    assert "[red]x[/red]\\x1b[31m" in out and "\x1b" not in out and "[b]dim[/b]" in out


def test_help_does_not_load_heavy_libraries() -> None:
    code = "from ortgpu.cli.main import main\nmain(['inspect', '--help'])\nimport sys\nprint(sorted(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = set(out.splitlines()[-1].strip("[]").replace("'", "").split(", "))
    assert not {"onnxruntime", "onnx", "numpy"} & loaded


@pytest.mark.slow
def test_a_500_mb_model_with_external_data_is_inspected_without_reading_its_weights(tmp_path: Path) -> None:
    """Weights on disk are never read: the time is that of the graph, not of 500 MB."""
    rng = np.random.default_rng(0)
    nodes, weights, current = [], [], "x"
    for i in range(32):  # 32 x 4 MiB x 4 bytes = 512 MiB
        weights.append(numpy_helper.from_array(rng.standard_normal((1024, 1024)).astype(np.float32), f"w{i}"))
        nodes.append(helper.make_node("MatMul", [current, f"w{i}"], [f"h{i}"], name=f"mm{i}"))
        current = f"h{i}"
    graph = helper.make_graph(
        nodes,
        "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 1024])],
        [helper.make_tensor_value_info(current, TensorProto.FLOAT, ["batch", 1024])],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "big.onnx", save_as_external_data=True, location="big.data")
    del model, weights
    start = time.perf_counter()
    assert main(["inspect", str(tmp_path / "big.onnx"), "--json", "--no-kernels"]) == 0
    assert time.perf_counter() - start < 10.0
