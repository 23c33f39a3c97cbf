"""The built wheel: package data inside, no ONNX Runtime requirement; installing it never touches the user's ORT.

The network tests install the real onnxruntime-gpu / onnxruntime-openvino wheels from PyPI (cached like the
other real packages, in ``~/.cache/ortgpu-tests/wheels`` or ORTGPU_TEST_CACHE) into a throwaway venv, then
ortgpu from its built wheel (its dependencies from the index), and check that every file of that ORT is
byte-identical, its provider is still listed and no CPU `onnxruntime` distribution appeared. A last one runs
`ortgpu doctor --fix --yes` for real on a venv where `pip install onnxruntime` landed on top of another build.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from ortless import SRC, ortless_env, ortless_site
from realpackages import real_wheel, wheel_cache

REPO = SRC.parent
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
LINUX_X86 = sys.platform.startswith("linux") and platform.machine() == "x86_64"
PIP_QUIET = ["--quiet", "--disable-pip-version-check"]


def _run(*argv: str | Path, env: dict[str, str] | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, env=env, timeout=timeout, check=False)
    assert done.returncode == 0, f"{argv}: {done.stdout[-3000:]}{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory) -> Path:
    """ortgpu's wheel, built the way CI builds it (`pip wheel --no-deps`)."""
    out = tmp_path_factory.mktemp("wheel")
    _run(sys.executable, "-m", "pip", "wheel", *PIP_QUIET, "--no-deps", "-w", out, REPO)
    (wheel,) = out.glob("ortgpu-*.whl")
    return wheel


@pytest.mark.slow  # builds the wheel (~10 s)
def test_wheel_has_the_package_data_and_no_ort_requirement(built_wheel) -> None:
    names = set(zipfile.ZipFile(built_wheel).namelist())
    package = SRC / "ortgpu"
    wanted = {
        f"ortgpu/{p.relative_to(package).as_posix()}"
        for p in package.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }
    assert wanted - names == set()  # every module and data file (data/*.json: matrix, failure modes) ships
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(built_wheel).read(metadata).decode()
    requires = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Requires-Dist:")]
    unconditional = [r for r in requires if "extra ==" not in r]
    assert not [r for r in unconditional if r.lower().startswith("onnxruntime")], unconditional
    assert "onnx>=1.15" in unconditional
    extras = {line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Provides-Extra:")}
    assert {"cpu", "gpu", "ray", "test"} <= extras
    assert 'onnxruntime>=1.17; extra == "cpu"' in requires
    assert 'onnxruntime-gpu[cuda,cudnn]>=1.21; extra == "gpu"' in requires
    assert not [r for r in requires if r.startswith("onnxruntime") and 'extra == "test"' in r]  # .[gpu,test] is safe


def _venv(path: Path) -> Path:
    _run(sys.executable, "-m", "venv", path)
    return path / "bin" / "python"


def _hashes(folder: Path) -> dict[str, str]:
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            out[path.relative_to(folder).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _site(python: Path) -> Path:
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return Path(_run(python, "-c", code).stdout.strip())


def _pip_env() -> dict[str, str]:
    """pip finds the cached real wheels first (offline re-runs, and --force-reinstall of exactly that file)."""
    links = " ".join(filter(None, [str(wheel_cache()), os.environ.get("PIP_FIND_LINKS", "")]))
    return {**os.environ, "PIP_FIND_LINKS": links}


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.skipif(not LINUX_X86, reason="installs Linux x86_64 wheels")
@pytest.mark.parametrize(
    ("distribution", "version", "provider"),
    [
        ("onnxruntime-gpu", "1.31.1", "CUDAExecutionProvider"),
        ("onnxruntime-openvino", "1.24.1", "OpenVINOExecutionProvider"),
    ],
)
def test_installing_ortgpu_leaves_the_users_ort_alone(tmp_path, built_wheel, distribution, version, provider) -> None:
    wheel = real_wheel(version, "manylinux_2_28_x86_64", python=PYTHON, distribution=distribution)
    python = _venv(tmp_path / "venv")
    env = _pip_env()
    # the ORT as a user has it (its own small dependencies; the nvidia-* extras of the GPU build are not needed here)
    _run(python, "-m", "pip", "install", *PIP_QUIET, wheel, env=env)
    module = _site(python) / "onnxruntime"
    before = _hashes(module)
    _run(python, "-m", "pip", "install", *PIP_QUIET, built_wheel, env=env)
    assert _hashes(module) == before  # not one file of the user's ORT changed
    listed = json.loads(_run(python, "-m", "pip", "list", "--format", "json").stdout)
    names = {item["name"].lower() for item in listed}
    assert "onnxruntime" not in names and distribution in names and "ortgpu" in names
    code = "import onnxruntime as o; print(o.__file__); print(o.get_available_providers())"
    loaded = _run(python, "-c", code).stdout.splitlines()
    assert loaded[0].startswith(str(module)) and provider in loaded[1]
    version_line = _run(python.parent / "ortgpu", "--version").stdout.splitlines()[2]
    assert version_line == f"onnxruntime: {distribution} {version} ({module})"


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.skipif(not LINUX_X86, reason="installs Linux x86_64 wheels")
def test_doctor_fix_yes_repairs_a_cpu_build_installed_on_top(tmp_path) -> None:
    openvino = real_wheel("1.24.1", "manylinux_2_28_x86_64", python=PYTHON, distribution="onnxruntime-openvino")
    cpu = real_wheel("1.32.0", "manylinux_2_28_x86_64", python=PYTHON, distribution="onnxruntime")
    python = _venv(tmp_path / "venv")
    pip_env = _pip_env()
    _run(python, "-m", "pip", "install", *PIP_QUIET, "--no-deps", openvino, env=pip_env)
    _run(python, "-m", "pip", "install", *PIP_QUIET, "--no-deps", cpu, env=pip_env)  # the files now are the CPU build's
    # ortgpu and its dependencies from this environment, minus any onnxruntime: the venv's ORT is the only one seen
    env = ortless_env(ortless_site(tmp_path / "deps"), PIP_FIND_LINKS=pip_env["PIP_FIND_LINKS"])
    done = subprocess.run(
        [str(python), "-m", "ortgpu", "doctor", "--fix", "--yes", "--json"],
        capture_output=True, text=True, env=env, timeout=900, check=False,
    )  # fmt: skip
    result = json.loads(done.stdout)["result"]
    commands = [step["command"][3:] for step in result["plan"]["steps"]]
    assert commands == [
        ["uninstall", "-y", "onnxruntime"],
        ["install", "--force-reinstall", "--no-deps", "onnxruntime-openvino==1.24.1"],
    ]
    assert all(step["command"][0] == str(python) for step in result["plan"]["steps"])
    assert [run["returncode"] for run in result["runs"]] == [0, 0], result["runs"]
    assert result["before"]["distributions"] == ["onnxruntime 1.32.0 (cpu)", "onnxruntime-openvino 1.24.1 (openvino)"]
    assert result["after"]["distributions"] == ["onnxruntime-openvino 1.24.1 (openvino)"]
    assert "OpenVINOExecutionProvider" in result["after"]["providers"]
    assert "OpenVINOExecutionProvider" not in result["before"]["providers"]
    assert done.returncode == 3  # no GPU here: the environment is repaired, the machine is still not GPU ready
