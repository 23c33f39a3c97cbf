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
