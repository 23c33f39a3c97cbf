"""Models and datasets the infer tests build in code (small)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest


@pytest.fixture(scope="session")
def demo_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from ortgpu.model.zoo import build_demo_model

    return build_demo_model(tmp_path_factory.mktemp("models") / "demo.onnx")


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from ortgpu.model.zoo import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny.onnx")


@pytest.fixture
def make_images():
    return _make_images


@pytest.fixture
def read_outputs():
    return _read_outputs


def _make_images(folder: Path, count: int, seed: int = 0) -> Path:
    """``count`` files s000.npz... each one ``image`` float32 [3, 32, 32] (one sample, no batch axis)."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for i in range(count):
        np.savez(folder / f"s{i:03d}.npz", image=rng.standard_normal((3, 32, 32)).astype(np.float32))
    return folder


def _read_outputs(folder: Path) -> dict[str, dict[str, np.ndarray]]:
    out = {}
    for path in sorted(folder.glob("*.npz")):
        with np.load(path, allow_pickle=False) as data:
            out[path.stem] = {k: data[k] for k in data.files}
    return out
