"""`ortgpu tune` on the command line: bad input is one line and exit 2; a run prints the ranked table or JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ortgpu.cli.main import main
from ortgpu.model.zoo import build_tiny_model


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--budget", "soon"], "--budget 'soon': not a time"),
        (["--memory-budget", "lots"], "--memory-budget: cannot read 'lots'"),
        (["--batch", "0"], "--batch '0'"),
        (["--resume"], "--resume: no tune-journal.log"),
    ],
)
def test_bad_flags_exit_2_with_one_line(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = build_tiny_model(tmp_path / "tiny.onnx")
    code = main(["tune", str(model), "--ep", "cpu", "--out", str(tmp_path / "out"), *args])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err


@pytest.mark.slow
def test_a_run_prints_json_with_the_trials(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("optuna")
    model = build_tiny_model(tmp_path / "tiny.onnx")
    out = tmp_path / "out"
    args = ["tune", str(model), "--ep", "cpu", "--trials", "2", "--measure", "0.1", "--out", str(out), "--json"]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "ortgpu.tune/v1"
    result = doc["result"]
    assert result["trials"][0]["status"] == "ok" and result["config_path"] == str(out / "ortgpu.toml")
    resume = ["tune", str(model), "--ep", "cpu", "--trials", "1", "--measure", "0.1", "--out", str(out), "--resume"]
    assert main(resume) == 0
    table = capsys.readouterr().out
    assert "ORT defaults" in table and "best: trial" in table and "--against-defaults" in table


def _seq_model(path: Path) -> Path:
    """x float32 [batch, sequence, 4] -> Relu: a model with a symbolic dim that is not the batch."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "seq",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "sequence", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "sequence", 4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


@pytest.fixture
def fake_trials(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """Trials answer at once with made-up latencies (2.13 µs, then 2.47 µs...): the specs they were given."""
    import ortgpu.tune.run
    from ortgpu.tune.trial import Outcome

    specs: list[dict] = []

    def answer(spec, limits, on_stage, command):
        specs.append(dict(spec))
        return Outcome("done", result={"value": 0.00213 + 0.00034 * (len(specs) - 1)})

    monkeypatch.setattr(ortgpu.tune.run, "run_child", answer)
    return specs


def test_a_sequence_dim_is_tuned_at_the_value_given_with_dim(
    tmp_path: Path, fake_trials: list[dict], capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("optuna")
    import numpy as np

    model = _seq_model(tmp_path / "seq.onnx")
    out = tmp_path / "t"
    args = ["tune", str(model), "--ep", "cpu", "--trials", "2", "--out", str(out), "--dim", "sequence=16"]
    assert main([*args, "--batch", "2"]) == 0, capsys.readouterr().err
    with np.load(out / "work" / "inputs-b2.npz") as inputs:
        assert inputs["x"].shape == (2, 16, 4)
    assert 'x = "2x16x4"' in (out / "ortgpu.toml").read_text()
    # the journal remembers the shapes: resuming with another sequence length is refused, in words
    assert main([*args[:-1], "sequence=32", "--batch", "2", "--resume"]) == 2
    assert "input shapes" in capsys.readouterr().err


def test_sub_millisecond_trials_are_told_apart_in_the_table(
    tmp_path: Path, fake_trials: list[dict], capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("optuna")
    model = build_tiny_model(tmp_path / "tiny.onnx")
    assert main(["tune", str(model), "--ep", "cpu", "--trials", "2", "--out", str(tmp_path / "t")]) == 0
    table = capsys.readouterr().out
    assert "0.00213" in table and "0.00247" in table  # not "0.002" twice
