"""`ortgpu --version`: ortgpu, Python, and the ORT that `import onnxruntime` would load, without importing it."""

from __future__ import annotations

import platform
import subprocess
import sys

from fake_libs import install_dist, package_info

from ortgpu import __version__
from ortgpu.cli.main import main
from ortgpu.runtime.identity import version_info


def _ort(site, name: str, version: str, cuda: str | None = None) -> None:
    files = {
        "onnxruntime/__init__.py": b"",
        "onnxruntime/capi/build_and_package_info.py": package_info(name, version, cuda),
    }
    install_dist(site, name, version, files)


def test_names_the_distribution_that_loads(tmp_path) -> None:
    _ort(tmp_path, "onnxruntime-gpu", "1.31.1", "13.0")
    lines = version_info([str(tmp_path)]).lines()
    assert lines[0] == f"ortgpu {__version__}"
    assert lines[1].startswith(f"Python {platform.python_version()} ") and sys.executable in lines[1]
    assert lines[2] == f"onnxruntime: onnxruntime-gpu 1.31.1 ({tmp_path / 'onnxruntime'})"


def test_a_second_distribution_is_named_as_a_conflict(tmp_path) -> None:
    _ort(tmp_path, "onnxruntime-gpu", "1.31.1", "13.0")
    _ort(tmp_path, "onnxruntime", "1.32.0")  # written last: its files are the ones on disk now
    line = version_info([str(tmp_path)]).lines()[2]
    assert line.startswith("onnxruntime: onnxruntime 1.32.0 ")
    assert "also installed: onnxruntime-gpu 1.31.1 (conflict: ortgpu doctor --fix)" in line


def test_nothing_installed(tmp_path) -> None:
    assert version_info([str(tmp_path)]).lines()[2].startswith("onnxruntime: not installed (pip install 'ortgpu[cpu]'")


def test_cli_version_does_not_import_onnxruntime(capsys) -> None:
    assert main(["--version"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"ortgpu {__version__}" and out[2].startswith("onnxruntime: ")
    code = "from ortgpu.cli.main import main; main(['--version']); import sys; print('onnxruntime' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "False"
