"""Strict ONNX Runtime sessions: the requested EP is proven active, or the error names the real cause."""

from __future__ import annotations

from ortgpu.session.failures import (
    DeviceError,
    DeviceOutOfMemoryError,
    ModelNotSupportedError,
    ProviderUnavailableError,
    RunFailedError,
)
from ortgpu.session.providers import ProviderProbe, best_available_ep, probe_provider
from ortgpu.session.verified import LOAD_OVERRIDES, VerifiedSession, load, open_session

__all__ = [
    "LOAD_OVERRIDES",
    "DeviceError",
    "DeviceOutOfMemoryError",
    "ModelNotSupportedError",
    "ProviderProbe",
    "ProviderUnavailableError",
    "RunFailedError",
    "VerifiedSession",
    "best_available_ep",
    "load",
    "open_session",
    "probe_provider",
]
