"""Shared test setup: the `gpu` marker skips unless an NVIDIA GPU and onnxruntime-gpu are present."""

from __future__ import annotations

import functools

import pytest

# Real ONNX Runtime C libraries as fixtures (wheel_library, gpu_library, ort114_library...) for the tests of
# capi/, check --package and bench --package.
pytest_plugins = ["tests.support.capi_libraries"]


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
