"""Every command that writes checks its output paths before any work: special files, inputs, unwritable folders."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from ortgpu.cli.main import main

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc/self as an unwritable folder")
QUICK = ["--ep", "cpu", "--iterations", "5", "--warmup", "1"]


@pytest.fixture
def model(tmp_path: Path) -> Path:
    from ortgpu.model.zoo import build_tiny_model

    return build_tiny_model(tmp_path / "tiny.onnx")


@pytest.fixture
def no_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Running the model is an error: the refusal must come before any work."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the command ran before checking its outputs")

    import ortgpu.bench.wheel
    import ortgpu.check.wheel
    import ortgpu.doctor.machine

    monkeypatch.setattr(ortgpu.bench.wheel, "_measure_through_wheel", refuse)
    monkeypatch.setattr(ortgpu.check.wheel, "_run_through_wheel", refuse)
    monkeypatch.setattr(ortgpu.doctor.machine, "diagnose", refuse)


def one_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ortgpu: error:"), err
    return err


def test_bench_save_over_the_model_is_refused(model: Path, no_run: None, capsys) -> None:
    before = model.read_bytes()
    assert main(["bench", str(model), "--save", str(model), *QUICK]) == 2
    assert "is the input" in one_error(capsys)
    assert model.read_bytes() == before


def test_bench_save_to_a_fifo_is_refused_before_running(model: Path, no_run: None, tmp_path: Path, capsys) -> None:
    fifo = tmp_path / "result.json"
    os.mkfifo(fifo)
    assert main(["bench", str(model), "--save", str(fifo), *QUICK]) == 2
    assert "FIFO" in one_error(capsys)
    assert fifo.exists() and not fifo.is_file()


def test_bench_report_to_a_directory_is_refused(model: Path, no_run: None, tmp_path: Path, capsys) -> None:
    folder = tmp_path / "report.html"
    folder.mkdir()
    assert main(["bench", str(model), "--report", str(folder), *QUICK]) == 2
    assert "is a directory" in one_error(capsys)


def test_bench_save_and_report_to_one_file_is_refused(model: Path, no_run: None, tmp_path: Path, capsys) -> None:
    out = tmp_path / "same"
    assert main(["bench", str(model), "--save", str(out), "--report", str(out), *QUICK]) == 2
    assert "both write" in one_error(capsys)


@linux
def test_bench_into_an_unwritable_folder_fails_before_running(model: Path, no_run: None, capsys) -> None:
    assert main(["bench", str(model), "--save", "/proc/self/result.json", *QUICK]) == 2
    assert "cannot create a file" in one_error(capsys)


def test_check_save_outputs_over_the_reference_is_refused(model: Path, no_run: None, tmp_path: Path, capsys) -> None:
    reference = tmp_path / "ref.npz"
    np.savez(reference, y=np.zeros((1, 4), "f4"))
    before = reference.read_bytes()
    code = main(["check", str(model), "--ep", "cpu", "--reference", str(reference), "--save-outputs", str(reference)])
    assert code == 2
    assert "is the input" in one_error(capsys)
    assert reference.read_bytes() == before


def test_check_save_outputs_over_the_inputs_is_refused(model: Path, no_run: None, tmp_path: Path, capsys) -> None:
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.zeros((1, 4), "f4"))
    before = inputs.read_bytes()
    assert main(["check", str(model), "--ep", "cpu", "--inputs", str(inputs), "--save-outputs", str(inputs)]) == 2
    assert "is the input" in one_error(capsys)
    assert inputs.read_bytes() == before


@linux
def test_demo_into_an_unwritable_folder_fails_before_the_doctor(no_run: None, capsys) -> None:
    assert main(["demo", "--out-dir", "/proc/self"]) == 2
    assert "cannot create a file" in one_error(capsys)


def test_demo_report_name_taken_by_a_fifo_is_refused(no_run: None, tmp_path: Path, capsys) -> None:
    os.mkfifo(tmp_path / "ortgpu-demo-report.html")
    assert main(["demo", "--out-dir", str(tmp_path)]) == 2
    assert "FIFO" in one_error(capsys)
