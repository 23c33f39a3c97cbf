"""`ortgpu profile` stopped by SIGTERM or Ctrl-C: one line on stderr (ORT's own log lines stay off the console),
no temporary folder left, no trace written, exit 143 / 130."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_an_interrupted_profile_says_one_line_and_leaves_nothing(signum: int, code: int, tmp_path: Path) -> None:
    from ortgpu.model.zoo import build_demo_model

    model = build_demo_model(tmp_path / "demo.onnx")
    system_tmp = tmp_path / "tmp"
    system_tmp.mkdir()
    trace = tmp_path / "trace.json"
    args = [sys.executable, "-m", "ortgpu", "profile", str(model), "--ep", "cpu", "--runs", "100000"]
    env = {**os.environ, "TMPDIR": str(system_tmp)}
    process = subprocess.Popen(
        [*args, "--trace", str(trace)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 60
        while not any(p.name.startswith("ortgpu-profile-") for p in system_tmp.iterdir()):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the profiled session never started"
            time.sleep(0.02)
        time.sleep(0.2)  # into the profiled runs
        process.send_signal(signum)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == code, err
    assert [line for line in err.splitlines() if line.strip()] == ["ortgpu: interrupted"], err
    assert not [p.name for p in system_tmp.iterdir() if p.name.startswith("ortgpu-")]
    assert not trace.exists()


def test_a_run_ort_refuses_is_one_line_without_ort_log_lines(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """ORT refusing the inputs mid-profile: its "Writing profiler data" log line went to the console too (the
    session outlived the error through the ORT exception it was raised from). capfd: ORT writes to fd 2."""
    from ortgpu.cli.main import main
    from ortgpu.model.zoo import build_tiny_model

    model = build_tiny_model(tmp_path / "tiny.onnx")
    (tmp_path / "fixed.toml").write_text("[session]\nfree_dims = { batch = 4 }\n")
    args = ["profile", str(model), "--ep", "cpu", "--runs", "1", "--config", str(tmp_path / "fixed.toml")]
    capfd.readouterr()
    code = main([*args, "--shape", "x=1x4", "--trace", str(tmp_path / "t.json")])
    import gc

    gc.collect()
    err = capfd.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code in (1, 2) and len(lines) == 1 and lines[0].startswith("ortgpu: error: "), err
