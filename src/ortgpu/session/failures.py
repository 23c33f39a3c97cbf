"""ONNX Runtime's exceptions turned into ortgpu's typed errors, each with one line and a hint."""

from __future__ import annotations

import re
from enum import Enum

from ortgpu.config import ConfigError, ExecutionProvider
from ortgpu.errors import BadInputError, CheckFailedError, EnvironmentUnfitError, OrtgpuError
from ortgpu.runtime.guard import import_onnxruntime

__all__ = [
    "DeviceError",
    "DeviceOutOfMemoryError",
    "ModelNotSupportedError",
    "Phase",
    "ProviderUnavailableError",
    "RunFailedError",
    "clean_ort_message",
    "ort_exception_types",
    "translate_ort_error",
]


class ProviderUnavailableError(EnvironmentUnfitError):
    """The requested execution provider cannot be active on this machine; the message names the cause (exit 3)."""


class ModelNotSupportedError(BadInputError):
    """This onnxruntime cannot build a session for the model: an op or type it has no kernel for (exit 2)."""


class DeviceError(BadInputError):
    """The device asked for does not exist (exit 2)."""


class DeviceOutOfMemoryError(EnvironmentUnfitError):
    """The GPU ran out of memory (exit 3)."""


class RunFailedError(CheckFailedError):
    """The session was built but a run failed inside onnxruntime (exit 1)."""


class Phase(Enum):
    CREATE = "create"
    RUN = "run"


_PREFIX = re.compile(r"\[ONNXRuntimeError\]\s*:\s*\d+\s*:\s*[A-Z_]+\s*:\s*")
# "/onnxruntime_src/.../rnn.h:48 onnxruntime::RNN<T>::RNN(const onnxruntime::OpKernelInfo&) [with T = float] "
_SOURCE_LOCATION = re.compile(
    r"\S+\.(?:cc|cpp|h|hpp|cu):\d+\s+(?:virtual\s+)?(?:[\w:<>,*&]+\s+)*?[\w:<>~]+"
    r"\((?:[^()]|\([^()]*\))*\)(?:\s*const)?(?:\s*\[with [^\]]*\])?\s*"
)
_GPU_WORDS = re.compile(
    r"cuda|cudnn|cublas|cufft|curand|tensorrt|nvinfer|libnvrtc|providers_(?:cuda|tensorrt|shared)|"
    r"LoadLibrary|cannot open shared object|driver version|no CUDA-capable device",
    re.IGNORECASE,
)
_OOM = re.compile(r"out of memory|Failed to allocate memory|CUDNN_STATUS_ALLOC_FAILED|BFCArena", re.IGNORECASE)


def ort_exception_types() -> tuple[type[BaseException], ...]:
    """Every exception class onnxruntime's binding raises, plus the Python errors its wrapper raises."""
    import_onnxruntime()
    from onnxruntime.capi import onnxruntime_pybind11_state as state

    found = [obj for obj in vars(state).values() if isinstance(obj, type) and issubclass(obj, Exception)]
    return (*found, RuntimeError, ValueError)


def clean_ort_message(text: str) -> str:
    """One line without ORT's "[ONNXRuntimeError] : 1 : FAIL :" prefix or C++ source locations."""
    line = " ".join(str(text).split())
    line = _SOURCE_LOCATION.sub("", line)
    line = _PREFIX.sub("", line)
    return line.strip() or str(text).strip()


def translate_ort_error(exc: BaseException, phase: Phase, ep: ExecutionProvider, ort_version: str) -> OrtgpuError:
    """The ortgpu error that says what ``exc`` (raised while building or running a session on ``ep``) means."""
    message = clean_ort_message(str(exc))
    where = ep.ort_name
    if "Unknown provider option" in message:
        key = re.search(r'Unknown provider option:?\s*"?([\w.]+)"?', message)
        name = key.group(1) if key else "an option"
        return ConfigError(
            f"onnxruntime {ort_version} does not know {where} option {name!r}",
            "it was added in a newer onnxruntime; drop it or upgrade onnxruntime",
        )
    if "Invalid device ID" in message or "invalid device ordinal" in message.lower():
        return DeviceError(f"{where}: {message}", "pick a device id that exists (see ortgpu doctor)")
    if phase is Phase.CREATE:
        if "Could not find an implementation for" in message:
            return ModelNotSupportedError(
                f"onnxruntime {ort_version} has no kernel for it: {message}",
                "the op / type / opset is not implemented in this onnxruntime; try a newer one or re-export",
            )
        if _OOM.search(message) and ep.is_gpu:
            return DeviceOutOfMemoryError(
                f"out of GPU memory while building the session: {message}",
                "free the GPU or set a gpu_mem_limit; see ortgpu doctor",
            )
        if ep.is_gpu and _GPU_WORDS.search(message):
            return ProviderUnavailableError(
                f"{where} failed to start: {message}", "run ortgpu doctor to see which library or driver is at fault"
            )
        return ModelNotSupportedError(
            f"onnxruntime {ort_version} cannot build a session for this model: {message}",
            "the model uses something this onnxruntime does not support; check the opset and op types",
        )
    if re.search(
        r"invalid dimensions|Unexpected input data type|invalid rank|Invalid Feed Input Name|"
        r"input name cannot be empty|Required inputs",
        message,
        re.IGNORECASE,
    ):
        from ortgpu.model.inputs import InputError

        return InputError(
            f"onnxruntime refused the inputs: {message}", "match the model's input names, shapes and types"
        )
    if _OOM.search(message) and ep.is_gpu:
        return DeviceOutOfMemoryError(
            f"out of GPU memory during a run on {where}: {message}",
            "use a smaller batch, set gpu_mem_limit, or free the GPU",
        )
    return RunFailedError(
        f"the model failed to run on {where}: {message}",
        "the error comes from inside onnxruntime; compare with --ep cpu"
        if ep.is_gpu
        else "the CPU EP's own kernels failed, so the model or the values fed to it are at fault, not a GPU setup",
    )
