"""`inspect`, `profile` and `tune` written to a pipe or a file: a table row stays on one line, whatever its width
(a log or `grep` gets whole rows; rich folds at 80 columns when it cannot ask a terminal)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from onnx import TensorProto, helper

from ortgpu.cli.main import main

LONG = "encoder_layer_11_attention_output_dense_bias_add_with_a_name_as_long_as_exporters_write_them"


def _model(path: Path) -> Path:
    graph = helper.make_graph(
        [helper.make_node("Relu", [LONG], ["y"], name=LONG)],
        "g",
        [helper.make_tensor_value_info(LONG, TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())
    return path


def _folded_rows(out: str) -> list[str]:
    """Continuation lines of a folded row: the first cell empty, a later one not."""
    return [line for line in out.splitlines() if re.match(r"^\s+│", line)]


@pytest.mark.parametrize(
    "args",
    [
        ["inspect", "{model}", "--no-kernels"],
        ["profile", "{model}", "--ep", "cpu", "--runs", "1", "--trace", "{tmp}/t.json"],
    ],
    ids=["inspect", "profile"],
)
def test_rows_are_whole_lines(args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = _model(tmp_path / "m.onnx")
    assert main([a.format(model=model, tmp=tmp_path) for a in args]) == 0
    out = capsys.readouterr().out
    assert not _folded_rows(out), out
    assert any(LONG in line and "│" in line for line in out.splitlines())
