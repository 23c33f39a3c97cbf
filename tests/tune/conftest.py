"""Small models for the tune tests, built in code."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def demo_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from ortgpu.model.zoo import build_demo_model

    return build_demo_model(tmp_path_factory.mktemp("models") / "demo.onnx")


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from ortgpu.model.zoo import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny.onnx")
