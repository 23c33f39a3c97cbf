"""Real ONNX Runtime C libraries as fixtures for the C-API, check --package and bench --package tests.

Libraries: the one inside the installed onnxruntime wheel (1.31+ wheels ship libonnxruntime.so), the
onnxruntime-gpu 1.31.1 manylinux wheel (CUDA 13 build) and npm's onnxruntime-node 1.14.0 (a CPU build with
Linux, Windows and macOS libraries for x64 and arm64), both downloaded once into ~/.cache/ortgpu-tests
(ORTGPU_TEST_CACHE overrides) and skipped when they cannot be fetched.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ortgpu.capi.library_locator import LocatedLibrary, locate_library
from tests.support import realpackages
from tests.support.capi_models import identity_model, mlp_model


def cache_root() -> Path:
    override = os.environ.get("ORTGPU_TEST_CACHE")
    return Path(override).parent if override else Path.home() / ".cache" / "ortgpu-tests"


def npm_package(name: str, version: str) -> Path:
    """`npm pack NAME@VERSION` into the cache (once); skips the test when npm cannot fetch it."""
    folder = cache_root() / "npm"
    target = folder / f"{name}-{version}.tgz"
    if target.is_file():
        return target
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed: cannot fetch onnxruntime-node")
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".download-") as tmp:
        try:
            done = subprocess.run(
                [npm, "pack", f"{name}@{version}", "--silent"], cwd=tmp, capture_output=True, text=True, timeout=600
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            pytest.skip(f"cannot fetch {name}@{version}: {exc}")
        packed = list(Path(tmp).glob("*.tgz"))
        if done.returncode != 0 or not packed:
            pytest.skip(f"cannot fetch {name}@{version}: {(done.stderr or done.stdout).strip()[-200:]}")
        os.replace(packed[0], target)
    return target


def installed_wheel_library() -> Path | None:
    spec = importlib.util.find_spec("onnxruntime")
    if spec is None or not spec.submodule_search_locations:
        return None
    hits = sorted(Path(next(iter(spec.submodule_search_locations)), "capi").glob("libonnxruntime.so.*"))
    return hits[0] if hits else None


@pytest.fixture(scope="session")
def wheel_library() -> Path:
    """libonnxruntime.so of the installed onnxruntime wheel (the same build the Python API runs)."""
    path = installed_wheel_library()
    if path is None or not sys.platform.startswith("linux"):
        pytest.skip("the installed onnxruntime wheel ships no libonnxruntime.so (it does from 1.31 on Linux)")
    return path


@pytest.fixture(scope="session")
def ort114_tgz() -> Path:
    return npm_package("onnxruntime-node", "1.14.0")


@pytest.fixture(scope="session")
def ort114_library(ort114_tgz: Path) -> Iterator[LocatedLibrary]:
    """libonnxruntime.so.1.14.0 (linux x64, CPU build) from npm's onnxruntime-node, extracted for the session."""
    if not sys.platform.startswith("linux"):
        pytest.skip("a Linux library")
    with locate_library(ort114_tgz) as located:
        yield located


@pytest.fixture(scope="session")
def gpu_wheel() -> Path:
    return realpackages.real_wheel("1.31.1", "manylinux_2_28_x86_64")


@pytest.fixture(scope="session")
def gpu_library(gpu_wheel: Path) -> Iterator[LocatedLibrary]:
    """libonnxruntime.so.1.31.1 with its CUDA/TensorRT provider libraries, from the onnxruntime-gpu wheel."""
    if not sys.platform.startswith("linux"):
        pytest.skip("a Linux library")
    with locate_library(gpu_wheel) as located:
        yield located


@pytest.fixture
def mlp(tmp_path: Path) -> Path:
    return mlp_model(tmp_path / "mlp model ż.onnx")  # a space and non-ASCII: ORTCHAR_T paths


@pytest.fixture
def identities(tmp_path: Path) -> Path:
    return identity_model(tmp_path / "identities.onnx")
