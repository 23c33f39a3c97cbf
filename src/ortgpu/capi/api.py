"""The shape of ONNX Runtime's C API as ortgpu reads it: versions, enums, element types, the function table, errors.

``OrtGetApiBase`` returns ``GetApi(version)``, whose table of function pointers only ever grows at its end, so
each member's slot index (``_SLOTS``) is the same in every release since the one that added it. Every returned
``OrtStatus`` becomes one of the errors defined here.
"""

from __future__ import annotations

import ctypes
import re
import sys
from collections.abc import Callable
from ctypes import POINTER, c_char_p, c_int, c_int64, c_size_t, c_void_p, c_wchar_p
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, NamedTuple

from ortgpu.errors import BadInputError, EnvironmentUnfitError, OrtgpuError

IS_WINDOWS = sys.platform == "win32"
# ORT_API_CALL is __stdcall on Windows (the same as cdecl on x64, it matters for 32-bit x86) and empty elsewhere.
_FUNCTYPE = ctypes.WINFUNCTYPE if IS_WINDOWS else ctypes.CFUNCTYPE  # type: ignore[attr-defined]
# ORTCHAR_T is wchar_t on Windows and char elsewhere; only file paths use it, every other string is UTF-8 char*.
_PATH_P = c_wchar_p if IS_WINDOWS else c_char_p

MIN_API_VERSION = 11  # the V2 CUDA / TensorRT provider-option objects (slots 170-208) appeared in C API 11
TARGET_API_VERSION = 15  # the newest slot we call (GetBuildInfoString) is from C API 15


# ---------------------------------------------------------------------------------------------------------------
# Enums of the C API (values are the C enum values)


class OrtErrorCode(IntEnum):
    OK = 0
    FAIL = 1
    INVALID_ARGUMENT = 2
    NO_SUCHFILE = 3
    NO_MODEL = 4
    ENGINE_ERROR = 5
    RUNTIME_EXCEPTION = 6
    INVALID_PROTOBUF = 7
    MODEL_LOADED = 8
    NOT_IMPLEMENTED = 9
    INVALID_GRAPH = 10
    EP_FAIL = 11
    MODEL_LOAD_CANCELED = 12
    MODEL_REQUIRES_COMPILATION = 13
    NOT_FOUND = 14
    DEVICE_RESET = 15

    @classmethod
    def of(cls, code: int) -> OrtErrorCode | int:
        try:
            return cls(code)
        except ValueError:  # a code added after this table: keep the number
            return code


class LoggingLevel(IntEnum):
    VERBOSE = 0
    INFO = 1
    WARNING = 2
    ERROR = 3
    FATAL = 4


class GraphOptimizationLevel(IntEnum):
    DISABLE_ALL = 0
    BASIC = 1
    EXTENDED = 2
    LAYOUT = 3  # ORT_ENABLE_LAYOUT, ORT 1.22+; older libraries reject it
    ALL = 99


class ExecutionMode(IntEnum):
    SEQUENTIAL = 0
    PARALLEL = 1


class _OnnxType(IntEnum):
    UNKNOWN = 0
    TENSOR = 1
    SEQUENCE = 2
    MAP = 3
    OPAQUE = 4
    SPARSETENSOR = 5
    OPTIONAL = 6


def _onnx_type_name(code: int) -> str:
    try:
        return _OnnxType(code).name.lower()
    except ValueError:
        return f"onnx type {code}"


class ElementType(IntEnum):
    """ONNXTensorElementDataType, with the ONNX name and the numpy dtype name of each."""

    UNDEFINED = 0
    FLOAT = 1
    UINT8 = 2
    INT8 = 3
    UINT16 = 4
    INT16 = 5
    INT32 = 6
    INT64 = 7
    STRING = 8
    BOOL = 9
    FLOAT16 = 10
    DOUBLE = 11
    UINT32 = 12
    UINT64 = 13
    COMPLEX64 = 14
    COMPLEX128 = 15
    BFLOAT16 = 16
    FLOAT8E4M3FN = 17
    FLOAT8E4M3FNUZ = 18
    FLOAT8E5M2 = 19
    FLOAT8E5M2FNUZ = 20
    UINT4 = 21
    INT4 = 22
    FLOAT4E2M1 = 23

    @property
    def onnx_name(self) -> str:
        return self.name.lower()

    @property
    def numpy_name(self) -> str | None:
        """The numpy dtype this element type maps to ("object" for strings); None when there is none."""
        return _NUMPY_NAMES.get(self)

    @classmethod
    def of(cls, code: int) -> ElementType | None:
        try:
            return cls(code)
        except ValueError:
            return None

    @classmethod
    def from_numpy(cls, dtype: Any) -> ElementType:
        import numpy as np

        dtype = np.dtype(dtype)
        if dtype.kind in "USO":
            return cls.STRING
        for element, name in _NUMPY_NAMES.items():
            if name not in ("object",) and numpy_dtype(name) == dtype:
                return element
        raise UnsupportedValueError(
            f"numpy dtype {dtype} has no ONNX tensor element type",
            "give numeric (int/uint 8-64, float 16/32/64, complex), bool or string arrays",
        )


# bfloat16 and the float8 types come from ml_dtypes (a dependency of onnx); 4-bit types are packed two per byte
# by ORT and have no numpy layout that matches, so they are not mapped.
_NUMPY_NAMES: dict[ElementType, str] = {
    ElementType.FLOAT: "float32",
    ElementType.UINT8: "uint8",
    ElementType.INT8: "int8",
    ElementType.UINT16: "uint16",
    ElementType.INT16: "int16",
    ElementType.INT32: "int32",
    ElementType.INT64: "int64",
    ElementType.STRING: "object",
    ElementType.BOOL: "bool",
    ElementType.FLOAT16: "float16",
    ElementType.DOUBLE: "float64",
    ElementType.UINT32: "uint32",
    ElementType.UINT64: "uint64",
    ElementType.COMPLEX64: "complex64",
    ElementType.COMPLEX128: "complex128",
    ElementType.BFLOAT16: "bfloat16",
    ElementType.FLOAT8E4M3FN: "float8_e4m3fn",
    ElementType.FLOAT8E4M3FNUZ: "float8_e4m3fnuz",
    ElementType.FLOAT8E5M2: "float8_e5m2",
    ElementType.FLOAT8E5M2FNUZ: "float8_e5m2fnuz",
}


def numpy_dtype(name: str) -> Any:
    """np.dtype(name), looking in ml_dtypes for the names numpy lacks; None when neither has it."""
    import numpy as np

    try:
        return np.dtype(name)
    except TypeError:
        pass
    try:
        import ml_dtypes
    except ImportError:
        return None
    kind = getattr(ml_dtypes, name, None)
    return np.dtype(kind) if kind is not None else None


# ---------------------------------------------------------------------------------------------------------------
# The OrtApi slots used: index in the table, the C API version that added it, restype, argtypes.
# A restype of _STATUS means the function returns OrtStatus* (NULL on success).

_P = c_void_p  # any opaque Ort* handle
_PP = POINTER(c_void_p)
_STATUS = c_void_p


class _Slot(NamedTuple):
    position: int  # in the OrtApi table (not "index": that is tuple.index)
    since: int
    restype: Any
    argtypes: tuple[Any, ...]


_SLOTS: dict[str, _Slot] = {
    "CreateStatus": _Slot(0, 1, c_void_p, (c_int, c_char_p)),
    "GetErrorCode": _Slot(1, 1, c_int, (c_void_p,)),
    "GetErrorMessage": _Slot(2, 1, c_char_p, (c_void_p,)),
    "CreateEnvWithCustomLogger": _Slot(4, 1, _STATUS, (c_void_p, c_void_p, c_int, c_char_p, _PP)),
    "CreateSession": _Slot(7, 1, _STATUS, (_P, _PATH_P, _P, _PP)),
    "Run": _Slot(9, 1, _STATUS, (_P, _P, POINTER(c_char_p), _PP, c_size_t, POINTER(c_char_p), c_size_t, _PP)),
    "CreateSessionOptions": _Slot(10, 1, _STATUS, (_PP,)),
    "SetSessionExecutionMode": _Slot(13, 1, _STATUS, (_P, c_int)),
    "EnableProfiling": _Slot(14, 1, _STATUS, (_P, _PATH_P)),
    "EnableMemPattern": _Slot(16, 1, _STATUS, (_P,)),
    "DisableMemPattern": _Slot(17, 1, _STATUS, (_P,)),
    "EnableCpuMemArena": _Slot(18, 1, _STATUS, (_P,)),
    "DisableCpuMemArena": _Slot(19, 1, _STATUS, (_P,)),
    "SetSessionLogSeverityLevel": _Slot(22, 1, _STATUS, (_P, c_int)),
    "SetSessionGraphOptimizationLevel": _Slot(23, 1, _STATUS, (_P, c_int)),
    "SetIntraOpNumThreads": _Slot(24, 1, _STATUS, (_P, c_int)),
    "SetInterOpNumThreads": _Slot(25, 1, _STATUS, (_P, c_int)),
    "SessionGetInputCount": _Slot(30, 1, _STATUS, (_P, POINTER(c_size_t))),
    "SessionGetOutputCount": _Slot(31, 1, _STATUS, (_P, POINTER(c_size_t))),
    "SessionGetInputTypeInfo": _Slot(33, 1, _STATUS, (_P, c_size_t, _PP)),
    "SessionGetOutputTypeInfo": _Slot(34, 1, _STATUS, (_P, c_size_t, _PP)),
    "SessionGetInputName": _Slot(36, 1, _STATUS, (_P, c_size_t, _P, _PP)),
    "SessionGetOutputName": _Slot(37, 1, _STATUS, (_P, c_size_t, _P, _PP)),
    "CreateRunOptions": _Slot(39, 1, _STATUS, (_PP,)),
    "RunOptionsSetRunLogSeverityLevel": _Slot(41, 1, _STATUS, (_P, c_int)),
    "CreateTensorAsOrtValue": _Slot(48, 1, _STATUS, (_P, POINTER(c_int64), c_size_t, c_int, _PP)),
    "CreateTensorWithDataAsOrtValue": _Slot(
        49, 1, _STATUS, (_P, c_void_p, c_size_t, POINTER(c_int64), c_size_t, c_int, _PP)
    ),
    "GetTensorMutableData": _Slot(51, 1, _STATUS, (_P, _PP)),
    "FillStringTensor": _Slot(52, 1, _STATUS, (_P, POINTER(c_char_p), c_size_t)),
    "GetStringTensorDataLength": _Slot(53, 1, _STATUS, (_P, POINTER(c_size_t))),
    "GetStringTensorContent": _Slot(54, 1, _STATUS, (_P, c_void_p, c_size_t, POINTER(c_size_t), c_size_t)),
    "CastTypeInfoToTensorInfo": _Slot(55, 1, _STATUS, (_P, _PP)),
    "GetOnnxTypeFromTypeInfo": _Slot(56, 1, _STATUS, (_P, POINTER(c_int))),
    "GetTensorElementType": _Slot(60, 1, _STATUS, (_P, POINTER(c_int))),
    "GetDimensionsCount": _Slot(61, 1, _STATUS, (_P, POINTER(c_size_t))),
    "GetDimensions": _Slot(62, 1, _STATUS, (_P, POINTER(c_int64), c_size_t)),
    "GetSymbolicDimensions": _Slot(63, 1, _STATUS, (_P, POINTER(c_char_p), c_size_t)),
    "GetTensorShapeElementCount": _Slot(64, 1, _STATUS, (_P, POINTER(c_size_t))),
    "GetTensorTypeAndShape": _Slot(65, 1, _STATUS, (_P, _PP)),
    "GetValueType": _Slot(67, 1, _STATUS, (_P, POINTER(c_int))),
    "CreateCpuMemoryInfo": _Slot(69, 1, _STATUS, (c_int, c_int, _PP)),
    "AllocatorFree": _Slot(76, 1, _STATUS, (_P, c_void_p)),
    "GetAllocatorWithDefaultOptions": _Slot(78, 1, _STATUS, (_PP,)),
    "ReleaseEnv": _Slot(92, 1, None, (_P,)),
    "ReleaseStatus": _Slot(93, 1, None, (_P,)),
    "ReleaseMemoryInfo": _Slot(94, 1, None, (_P,)),
    "ReleaseSession": _Slot(95, 1, None, (_P,)),
    "ReleaseValue": _Slot(96, 1, None, (_P,)),
    "ReleaseRunOptions": _Slot(97, 1, None, (_P,)),
    "ReleaseTypeInfo": _Slot(98, 1, None, (_P,)),
    "ReleaseTensorTypeAndShapeInfo": _Slot(99, 1, None, (_P,)),
    "ReleaseSessionOptions": _Slot(100, 1, None, (_P,)),
    "SessionEndProfiling": _Slot(110, 2, _STATUS, (_P, _P, _PP)),
    "GetAvailableProviders": _Slot(125, 4, _STATUS, (POINTER(POINTER(c_char_p)), POINTER(c_int))),
    # ReleaseAvailableProviders is ORT_API2_STATUS: it returns a status, unlike the ORT_CLASS_RELEASE functions
    "ReleaseAvailableProviders": _Slot(126, 4, _STATUS, (POINTER(c_char_p), c_int)),
    "AddSessionConfigEntry": _Slot(130, 5, _STATUS, (_P, c_char_p, c_char_p)),
    "SessionOptionsAppendExecutionProvider_TensorRT_V2": _Slot(170, 9, _STATUS, (_P, _P)),
    "CreateTensorRTProviderOptions": _Slot(171, 9, _STATUS, (_PP,)),
    "UpdateTensorRTProviderOptions": _Slot(172, 9, _STATUS, (_P, POINTER(c_char_p), POINTER(c_char_p), c_size_t)),
    "GetTensorRTProviderOptionsAsString": _Slot(173, 9, _STATUS, (_P, _P, _PP)),
    "ReleaseTensorRTProviderOptions": _Slot(174, 9, None, (_P,)),
    "SessionOptionsAppendExecutionProvider_CUDA_V2": _Slot(204, 11, _STATUS, (_P, _P)),
    "CreateCUDAProviderOptions": _Slot(205, 11, _STATUS, (_PP,)),
    "UpdateCUDAProviderOptions": _Slot(206, 11, _STATUS, (_P, POINTER(c_char_p), POINTER(c_char_p), c_size_t)),
    "GetCUDAProviderOptionsAsString": _Slot(207, 11, _STATUS, (_P, _P, _PP)),
    "ReleaseCUDAProviderOptions": _Slot(208, 11, None, (_P,)),  # a plain void(*)(ptr), not ORT_CLASS_RELEASE
    "UpdateEnvWithCustomLogLevel": _Slot(226, 14, _STATUS, (_P, c_int)),
    "GetBuildInfoString": _Slot(254, 15, c_char_p, ()),
}

# typedef void (*OrtLoggingFunction)(void* param, OrtLoggingLevel severity, const char* category,
#                                    const char* logid, const char* code_location, const char* message);
_LOGGING_FUNCTION = _FUNCTYPE(None, c_void_p, c_int, c_char_p, c_char_p, c_char_p, c_char_p)
_CPU_DEVICE_ALLOCATOR, _MEM_TYPE_DEFAULT = 0, 0


# ---------------------------------------------------------------------------------------------------------------
# Errors


@dataclass(frozen=True)
class OrtStatusInfo:
    """What a failed OrtStatus said: the function that returned it, ORT's error code and message."""

    function: str
    code: OrtErrorCode | int
    message: str

    @property
    def code_name(self) -> str:
        return f"ORT_{self.code.name}" if isinstance(self.code, OrtErrorCode) else f"code {self.code}"

    def describe(self) -> str:
        return f"{self.function}: {self.code_name}: {self.message}"


class _StatusErrorMixin:
    """The OrtStatus behind an error, when there was one."""

    status: OrtStatusInfo | None = None

    @classmethod
    def from_status(cls, status: OrtStatusInfo, prefix: str, hint: str | None) -> OrtgpuError:
        error = cls(f"{prefix}: {readable_message(status.message)}", hint)  # type: ignore[call-arg]
        error.status = status
        return error  # type: ignore[return-value]


# "/onnxruntime_src/.../provider_bridge_ort.cc:2043 onnxruntime::Provider& ...::Get() [ONNXRuntimeError] : 1 : FAIL :"
_SOURCE_PREFIX = re.compile(r"^.*\[ONNXRuntimeError\] : \d+ : \w+ : ", re.S)


def readable_message(message: str) -> str:
    """ORT's message without the C++ source location and error-code banner it sometimes starts with."""
    return _SOURCE_PREFIX.sub("", message).strip() or message


class LibraryLoadError(_StatusErrorMixin, EnvironmentUnfitError):
    """The library file exists and is for this platform, but the loader refused it (a dependency, glibc)."""


class NotOrtLibraryError(BadInputError):
    """The file is a shared library but not ONNX Runtime's (no OrtGetApiBase export)."""


class CapiVersionError(BadInputError):
    """The library's C API is older than the one ortgpu needs."""


class OrtModelError(_StatusErrorMixin, BadInputError):
    """ORT could not load the model file (missing, corrupt, invalid graph)."""


class OrtInputError(_StatusErrorMixin, BadInputError):
    """ORT rejected the inputs given to a run (names, types, shapes)."""


class UnsupportedValueError(BadInputError):
    """A value this binding cannot pass through the C API (e.g. a sequence or map output)."""


class ProviderOptionError(_StatusErrorMixin, BadInputError):
    """ORT rejected a provider option key or value."""


class ProviderLoadError(_StatusErrorMixin, EnvironmentUnfitError):
    """An execution provider cannot be enabled: not in this build, or its library failed to load."""


class OrtRuntimeError(_StatusErrorMixin, EnvironmentUnfitError):
    """ORT failed while creating a session or running, for a reason that is not the user's input."""


_PROVIDER_HINT = (
    "run `ortgpu doctor --package PATH` to see which library is missing; the CUDA/cuDNN libraries must be on "
    "the loader path (LD_LIBRARY_PATH on Linux, PATH on Windows)"
)


def _default_error(status: OrtStatusInfo) -> OrtgpuError:
    return OrtRuntimeError.from_status(status, f"ONNX Runtime {status.function} failed ({status.code_name})", None)


def _session_error(status: OrtStatusInfo) -> OrtgpuError:
    bad_model = (
        OrtErrorCode.NO_SUCHFILE,
        OrtErrorCode.NO_MODEL,
        OrtErrorCode.INVALID_PROTOBUF,
        OrtErrorCode.INVALID_GRAPH,
        OrtErrorCode.INVALID_ARGUMENT,
    )
    if status.code in bad_model:
        return OrtModelError.from_status(status, "ONNX Runtime cannot load the model", "check the model file")
    return OrtRuntimeError.from_status(
        status,
        f"ONNX Runtime could not create the session ({status.code_name})",
        "this library cannot run the model as asked; `ortgpu doctor --package PATH` shows what it needs",
    )


def _run_error(status: OrtStatusInfo) -> OrtgpuError:
    if status.code == OrtErrorCode.INVALID_ARGUMENT:
        return OrtInputError.from_status(
            status, "ONNX Runtime rejected the inputs", "give the input names, dtypes and shapes the model declares"
        )
    return OrtRuntimeError.from_status(status, f"ONNX Runtime run failed ({status.code_name})", None)


def _provider_error(provider: str) -> Callable[[OrtStatusInfo], OrtgpuError]:
    def make(status: OrtStatusInfo) -> OrtgpuError:
        if status.code == OrtErrorCode.INVALID_ARGUMENT:
            return ProviderOptionError.from_status(
                status, f"{provider} rejected a provider option", "check the option names and values"
            )
        hint = _PROVIDER_HINT
        if "not enabled in this build" in status.message:
            hint = "this is a CPU build of ONNX Runtime: use its GPU package (onnxruntime-*-gpu-X.Y.Z, onnxruntime-gpu)"
        return ProviderLoadError.from_status(status, f"{provider} cannot be enabled", hint)

    return make


# ---------------------------------------------------------------------------------------------------------------
# The library


_VERSION = re.compile(r"^\s*(\d+)\.(\d+)")


def api_version_of(version: str) -> int | None:
    """ORT_API_VERSION of a release: its minor version ("1.31.1" -> 31); None when the text is not a version."""
    match = _VERSION.match(version)
    return int(match.group(2)) if match and match.group(1) == "1" else None


def negotiate_api_version(library_api: int, version: str = "") -> int:
    """The C API version to ask for: the newest we use, or the library's own when it is older.

    Raises CapiVersionError when the library is older than MIN_API_VERSION.
    """
    if library_api < MIN_API_VERSION:
        shown = f"ONNX Runtime {version}" if version else "this library"
        raise CapiVersionError(
            f"{shown} has C API {library_api}; ortgpu needs C API {MIN_API_VERSION} or newer "
            f"(ONNX Runtime 1.{MIN_API_VERSION}+)",
            f"use an ONNX Runtime 1.{MIN_API_VERSION} or newer release",
        )
    return min(library_api, TARGET_API_VERSION)
