"""`ortgpu doctor` in-process: verdict first, exit codes, --json, and the --package wiring."""

from __future__ import annotations

import ctypes
import json

import pytest

from ortgpu.cli.main import main


def _driver_present() -> bool:
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return False
    return True


no_driver = pytest.mark.skipif(_driver_present(), reason="this machine has an NVIDIA driver")


@no_driver
def test_verdict_comes_first_and_exit_code_is_3(capsys) -> None:
    assert main(["doctor"]) == 3
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("not ready: no NVIDIA driver")
    assert lines[1].startswith("fix: ")
    assert out.index("Checks") > out.index("not ready")
    assert "NVIDIA driver" in out and "Operating system" in out


@no_driver
def test_json_is_the_versioned_report(capsys) -> None:
    assert main(["doctor", "--json"]) == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "ortgpu.doctor/v1"
    result = doc["result"]
    assert result["ready"] is False
    assert result["verdict"].startswith("not ready: no NVIDIA driver")
    checks = {c["id"]: c for c in result["checks"]}
    assert checks["driver.present"]["status"] == "fail"
    assert checks["driver.present"]["fix"] == result["fix"]
    assert result["driver"]["present"] is False
    assert result["platform"]["python_bits"] in (32, 64)


def test_help_lists_the_options(capsys) -> None:
    assert main(["doctor", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--package" in out and "--json" in out and "Exit 0" in out


def test_package_that_does_not_exist_is_bad_input(tmp_path, capsys) -> None:
    missing = tmp_path / "onnxruntime_gpu-1.31.1-cp312-cp312-manylinux_2_28_x86_64.whl"
    assert main(["doctor", "--package", str(missing)]) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert len(captured.err.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())  # nothing written
