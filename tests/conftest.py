"""Shared test setup: the `gpu` marker skips unless an NVIDIA GPU and onnxruntime-gpu are present."""

from __future__ import annotations

import functools
import importlib.util

import pytest


def pytest_configure(config: pytest.Config) -> None:
    # ortgpu depends on no ONNX Runtime (docs/install.md); the suite runs models, so it needs one installed
    if importlib.util.find_spec("onnxruntime") is None:
        raise pytest.UsageError(
            "the test suite needs an ONNX Runtime here: pip install -e '.[cpu,test]' (or '.[gpu,test]' with a GPU)"
        )


@functools.cache
def gpu_available() -> bool:
    try:
        import onnxruntime as ort
        import pynvml

        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
        pynvml.nvmlShutdown()
    except Exception:
        return False
    return count > 0 and "CUDAExecutionProvider" in ort.get_available_providers()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU and onnxruntime-gpu")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
