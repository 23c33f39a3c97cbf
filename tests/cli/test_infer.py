"""`ortgpu infer` in-process: JSON envelope, exit codes, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ortgpu.cli.main import main


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from ortgpu.model.zoo import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("cli_infer") / "tiny.onnx")


@pytest.mark.slow
def test_json_and_exit_1_for_a_bad_input(model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    np.savez(inputs / "a.npz", x=np.ones((3, 4), np.float32))
    np.savez(inputs / "b.npz", x=np.ones((3, 4), np.int64))
    args = ["infer", str(model), "--inputs", str(inputs), "--out", str(tmp_path / "out"), "--ep", "cpu"]
    assert main([*args, "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "ortgpu.infer/v1"
    result = doc["result"]
    assert (result["written"], result["rows"], [b["name"] for b in result["bad"]]) == (1, 3, ["b"])
    assert "int64" in result["bad"][0]["reason"]
    assert main([*args, "--fail-fast"]) == 2  # the bad input again, now stopping the run
    assert "bad b" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--workers", "2"], "--workers is for --ray"),
        (["--batch", "0"], "--batch 0"),
        (["--devices", "0,1"], "names GPUs"),
        (["--ray", "--devices", "cpu:2"], "--devices and --ray"),
    ],
)
def test_bad_usage_is_exit_2_with_one_line(
    model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    np.savez(inputs / "a.npz", x=np.ones((1, 4), np.float32))
    args = ["infer", str(model), "--inputs", str(inputs), "--out", str(tmp_path / "out"), "--ep", "cpu", *extra]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()  # refused before anything was written
