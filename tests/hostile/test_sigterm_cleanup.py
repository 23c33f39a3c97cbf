"""SIGTERM (`timeout`, `docker stop`, `kill`) during `doctor --package` or `bundle`: temp folders are removed as on
Ctrl-C and the process exits 143 (128 + SIGTERM)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

# Runs the real CLI with one step slowed down: the package analysis first drops a marker, then sleeps, so the
# signal lands while the package is extracted and the bundle is being assembled.
SLOW_CLI = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path

    import ortgpu.package.analysis as package

    marker = Path(sys.argv.pop(1))
    real = package.analyse_with_binaries

    def slow(*args, **kwargs):
        marker.write_text("analysing")
        time.sleep(30)
        return real(*args, **kwargs)

    package.analyse_with_binaries = slow
    from ortgpu.cli.main import run

    run()
    """
)


def package_zip(path: Path) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("onnxruntime-linux-x64-1.20.0/VERSION_NUMBER", "1.20.0\n")
        archive.writestr("onnxruntime-linux-x64-1.20.0/lib/libonnxruntime.so.1.20.0", b"\x7fELF" + b"\0" * 4096)
        archive.writestr("onnxruntime-linux-x64-1.20.0/include/onnxruntime_c_api.h", "/* api */\n")
    return path


def terminate_mid_run(tmp_path: Path, *args: str) -> tuple[int, str, list[str]]:
    """Start ``ortgpu ARGS``, send SIGTERM once the analysis is under way; exit code, stderr, temp folder left."""
    system_tmp = tmp_path / "system-tmp"
    system_tmp.mkdir()
    script = tmp_path / "slow_cli.py"
    script.write_text(SLOW_CLI)
    marker = tmp_path / "marker"
    env = {**os.environ, "TMPDIR": str(system_tmp)}
    child = subprocess.Popen(
        [sys.executable, str(script), str(marker), *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 30
        while not marker.exists():
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "the command never reached the analysis"
            time.sleep(0.02)
        assert [p.name for p in system_tmp.iterdir() if p.name.startswith("ortgpu-package-")]  # extracted: in use
        child.send_signal(signal.SIGTERM)
        _, err = child.communicate(timeout=20)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    return child.returncode, err.decode(), sorted(p.name for p in system_tmp.iterdir())


def test_sigterm_during_doctor_package_removes_the_extracted_files(tmp_path: Path) -> None:
    package = package_zip(tmp_path / "pkg.zip")
    code, err, left = terminate_mid_run(tmp_path, "doctor", "--package", str(package))
    assert left == []
    assert code == 143, err
    assert err.strip().splitlines()[-1] == "ortgpu: interrupted"  # one line, no traceback


def test_sigterm_during_bundle_removes_the_partial_bundle_and_the_extraction(tmp_path: Path) -> None:
    package = package_zip(tmp_path / "pkg.zip")
    out = tmp_path / "work" / "bundle"
    out.parent.mkdir()
    code, err, left = terminate_mid_run(tmp_path, "bundle", "--package", str(package), "--out", str(out))
    assert left == []
    assert list(out.parent.iterdir()) == []  # no .bundle.*.partial, no bundle
    assert code == 143, err
