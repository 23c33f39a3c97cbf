"""Typed ctypes binding to ONNX Runtime's C API, for one libonnxruntime / onnxruntime.dll file.

How the API is reached never changed since C API 1: the library exports ``OrtGetApiBase``, a struct of two
pointers (``GetApi(version)``, ``GetVersionString()``), and ``GetApi`` returns ``OrtApi``, a table of function
pointers that only ever grows at its end. So a member's slot index is the same in every release since the one
that added it (checked against the released headers 1.14 ... 1.29 and at run time on 1.14.0, 1.31.1 and
1.32.0). Every object made here is released by ``close()`` / the context manager, every returned ``OrtStatus``
is read, released and turned into one of ortgpu's errors.
"""

from __future__ import annotations

import ctypes
import os
import re
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from ctypes import POINTER, byref, c_char_p, c_int, c_int64, c_size_t, c_uint32, c_void_p, c_wchar_p
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import Any, NamedTuple

from ortgpu.errors import BadInputError, EnvironmentUnfitError, OrtgpuError

__all__ = [
    "MIN_API_VERSION",
    "TARGET_API_VERSION",
    "CapiVersionError",
    "CudaProviderOptions",
    "ElementType",
    "Env",
    "ExecutionMode",
    "GraphOptimizationLevel",
    "LibraryLoadError",
    "LogRecord",
    "LoggingLevel",
    "NotOrtLibraryError",
    "OrtErrorCode",
    "OrtInputError",
    "OrtLibrary",
    "OrtModelError",
    "OrtRuntimeError",
    "OrtStatusInfo",
    "PreparedRun",
    "ProviderLoadError",
    "ProviderOptionError",
    "RunOptions",
    "Session",
    "SessionOptions",
    "TensorRtProviderOptions",
    "TensorSpec",
    "UnsupportedValueError",
    "Value",
    "api_version_of",
    "negotiate_api_version",
]

IS_WINDOWS = sys.platform == "win32"
# ORT_API_CALL is __stdcall on Windows (the same as cdecl on x64, it matters for 32-bit x86) and empty elsewhere.
_FUNCTYPE = ctypes.WINFUNCTYPE if IS_WINDOWS else ctypes.CFUNCTYPE  # type: ignore[attr-defined]
# ORTCHAR_T is wchar_t on Windows and char elsewhere; only file paths use it, every other string is UTF-8 char*.
_PATH_P = c_wchar_p if IS_WINDOWS else c_char_p

MIN_API_VERSION = 11  # the V2 CUDA / TensorRT provider-option objects (slots 170-208) appeared in C API 11
TARGET_API_VERSION = 15  # the newest slot we call (GetBuildInfoString) is from C API 15


def _ortchar(path: str | os.PathLike[str]) -> str | bytes:
    """A path as ORTCHAR_T* wants it: UTF-16 on Windows (c_wchar_p), the file-system bytes elsewhere."""
    return str(path) if IS_WINDOWS else os.fsencode(path)


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
            if name not in ("object",) and _numpy_dtype(name) == dtype:
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


def _numpy_dtype(name: str) -> Any:
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
    index: int
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
        error = cls(f"{prefix}: {_readable(status.message)}", hint)  # type: ignore[call-arg]
        error.status = status
        return error  # type: ignore[return-value]


# "/onnxruntime_src/.../provider_bridge_ort.cc:2043 onnxruntime::Provider& ...::Get() [ONNXRuntimeError] : 1 : FAIL :"
_SOURCE_PREFIX = re.compile(r"^.*\[ONNXRuntimeError\] : \d+ : \w+ : ", re.S)


def _readable(message: str) -> str:
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


class OrtLibrary:
    """One loaded ONNX Runtime C library and its API table.

    Loaded by absolute path, so the loader never picks another copy (e.g. System32's onnxruntime.dll).
    A ctypes library is never unloaded, so objects kept alive for ORT's callbacks live on this object.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).absolute()
        self._keepalive: list[Any] = []
        self._fns: dict[str, Any] = {}
        if not self.path.is_file():
            raise NotOrtLibraryError(
                f"{self.path}: no such file", "give the path of libonnxruntime.so* / onnxruntime.dll"
            )
        try:
            if IS_WINDOWS:
                # the DLLs next to onnxruntime.dll (providers_shared, VC++ runtime copies) must resolve too
                self._keepalive.append(os.add_dll_directory(str(self.path.parent)))  # type: ignore[attr-defined]
                self._dll = ctypes.WinDLL(str(self.path))  # type: ignore[attr-defined]
            else:
                self._dll = ctypes.CDLL(str(self.path), mode=getattr(os, "RTLD_LOCAL", 0))
        except OSError as exc:
            raise LibraryLoadError(
                f"the loader refused {self.path.name}: {exc}",
                "a library it needs is missing or too old on this machine; `ortgpu doctor --package PATH` lists them",
            ) from None
        try:
            get_api_base = self._dll.OrtGetApiBase
        except AttributeError:
            raise NotOrtLibraryError(
                f"{self.path.name} is not an ONNX Runtime library (it does not export OrtGetApiBase)",
                "give libonnxruntime.so* / onnxruntime.dll from an ONNX Runtime release",
            ) from None
        get_api_base.restype, get_api_base.argtypes = c_void_p, []
        base = get_api_base()
        if not base:
            raise NotOrtLibraryError(f"{self.path.name}: OrtGetApiBase() returned NULL", "re-download the package")
        # OrtApiBase is exactly two pointers, forever (ORT static_asserts it): GetApi, GetVersionString
        pointers = (c_void_p * 2).from_address(base)
        self._get_api = _FUNCTYPE(c_void_p, c_uint32)(pointers[0])
        self.version: str = (_FUNCTYPE(c_char_p)(pointers[1])() or b"").decode("utf-8", "replace")
        library_api = api_version_of(self.version)
        if library_api is None:
            raise NotOrtLibraryError(
                f"{self.path.name} reports version {self.version!r}, which is not an ONNX Runtime 1.x version",
                "give libonnxruntime.so* / onnxruntime.dll from an ONNX Runtime release",
            )
        self.library_api_version: int = library_api
        self.api_version: int = negotiate_api_version(library_api, self.version)
        api = self._get_api(self.api_version)
        if not api:  # GetApi prints its refusal on stderr and returns NULL; callers that don't check it crash
            raise CapiVersionError(
                f"ONNX Runtime {self.version} refused C API {self.api_version}",
                f"use an ONNX Runtime 1.{MIN_API_VERSION} or newer release",
            )
        self._api: int = api

    def __repr__(self) -> str:
        return f"OrtLibrary({str(self.path)!r}, version={self.version!r}, api={self.api_version})"

    # -- raw access ------------------------------------------------------------------------------------------
    def has(self, name: str) -> bool:
        """Whether this library's table has the slot (never call a slot newer than the library)."""
        return _SLOTS[name].since <= self.library_api_version

    def fn(self, name: str) -> Any:
        function = self._fns.get(name)
        if function is None:
            slot = _SLOTS[name]
            if slot.since > self.library_api_version:
                # past the end of an older table lies another table or garbage: the call would be wild
                raise CapiVersionError(
                    f"ONNX Runtime {self.version} lacks {name} (C API {slot.since}+)",
                    f"use ONNX Runtime 1.{slot.since} or newer for this feature",
                )
            address = c_void_p.from_address(self._api + slot.index * ctypes.sizeof(c_void_p)).value
            if not address:
                raise NotOrtLibraryError(f"{self.path.name}: OrtApi slot {slot.index} ({name}) is NULL", "")
            function = _FUNCTYPE(slot.restype, *slot.argtypes)(address)
            self._fns[name] = function
        return function

    def call(self, name: str, *args: Any) -> Any:
        """Call a slot that returns no status (release functions, GetErrorMessage, ...)."""
        return self.fn(name)(*args)

    def check(self, name: str, *args: Any, error: Callable[[OrtStatusInfo], OrtgpuError] = _default_error) -> None:
        """Call a status-returning slot; a non-NULL status is read, released and raised as ``error(status)``."""
        status = self.fn(name)(*args)
        if status:
            raise error(self.take_status(name, status))

    def take_status(self, function: str, status: int) -> OrtStatusInfo:
        """Copy a status's code and message (the message lives inside it), then release it."""
        try:
            code = OrtErrorCode.of(self.call("GetErrorCode", status))
            message = (self.call("GetErrorMessage", status) or b"").decode("utf-8", "replace")
        finally:
            self.call("ReleaseStatus", status)
        return OrtStatusInfo(function=function, code=code, message=message.strip())

    # -- library-level facts ---------------------------------------------------------------------------------
    @property
    def build_info(self) -> str | None:
        """GetBuildInfoString (C API 15+): git commit and build type; None on older libraries."""
        if not self.has("GetBuildInfoString"):
            return None
        raw = self.call("GetBuildInfoString")
        return raw.decode("utf-8", "replace") if raw else None

    def available_providers(self) -> tuple[str, ...]:
        """The EPs compiled into this build (not whether their libraries can load)."""
        names, count = POINTER(c_char_p)(), c_int()
        self.check("GetAvailableProviders", byref(names), byref(count))
        try:
            return tuple(names[i].decode("utf-8", "replace") for i in range(count.value))
        finally:
            self.check("ReleaseAvailableProviders", names, count)

    def default_allocator(self) -> c_void_p:
        """ORT's default CPU allocator (owned by ORT: never released)."""
        allocator = c_void_p()
        self.check("GetAllocatorWithDefaultOptions", byref(allocator))
        return allocator

    def take_string(self, pointer: c_void_p, allocator: c_void_p) -> str:
        """A char* ORT allocated with ``allocator``: copy it, then free it."""
        if not pointer.value:
            return ""
        try:
            return ctypes.string_at(pointer.value).decode("utf-8", "replace")
        finally:
            self.check("AllocatorFree", allocator, pointer)


class _Handle:
    """An owned Ort* object: released once, by close() or the end of a ``with`` block."""

    _release: str = ""

    def __init__(self, library: OrtLibrary) -> None:
        self.library = library
        self.handle = c_void_p()

    def close(self) -> None:
        if self.handle:
            handle, self.handle = self.handle, c_void_p()
            self.library.call(self._release, handle)

    @property
    def closed(self) -> bool:
        return not self.handle

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------------------------------------------------------
# Env and its logger


@dataclass(frozen=True)
class LogRecord:
    """One line ORT logged through our logger."""

    severity: LoggingLevel | int
    category: str
    logid: str
    code_location: str
    message: str

    def one_line(self) -> str:
        severity = self.severity.name if isinstance(self.severity, LoggingLevel) else str(self.severity)
        where = f" {self.code_location}" if self.code_location else ""
        return f"[{severity}]{where}: {' '.join(self.message.split())}"


class Env(_Handle):
    """OrtEnv created with a custom logger, so ORT's log lines (e.g. why an EP library did not load) are kept
    in ``records`` instead of going to stderr."""

    _release = "ReleaseEnv"

    def __init__(self, library: OrtLibrary, level: LoggingLevel = LoggingLevel.WARNING, logid: str = "ortgpu") -> None:
        super().__init__(library)
        self.records: list[LogRecord] = []
        self._lock = threading.Lock()
        callback = _LOGGING_FUNCTION(self._on_log)
        # ORT may still call the logger while another Env holds the process-wide OrtEnv: keep it as long as the
        # library (ctypes never unloads it)
        library._keepalive.append(callback)
        library.check(
            "CreateEnvWithCustomLogger",
            ctypes.cast(callback, c_void_p),
            None,
            int(level),
            logid.encode(),
            byref(self.handle),
        )

    def _on_log(
        self,
        _param: int,
        severity: int,
        category: bytes | None,
        logid: bytes | None,
        where: bytes | None,
        message: bytes | None,
    ) -> None:
        # runs on ORT's threads; an exception here would only be printed by ctypes, so nothing may raise
        try:
            level: LoggingLevel | int = LoggingLevel(severity)
        except ValueError:
            level = severity
        record = LogRecord(
            severity=level,
            category=(category or b"").decode("utf-8", "replace"),
            logid=(logid or b"").decode("utf-8", "replace"),
            code_location=(where or b"").decode("utf-8", "replace"),
            message=(message or b"").decode("utf-8", "replace"),
        )
        with self._lock:
            self.records.append(record)

    def set_level(self, level: LoggingLevel) -> bool:
        """Change the minimum severity passed to the logger (C API 14+); False when the library is older."""
        if not self.library.has("UpdateEnvWithCustomLogLevel"):
            return False
        self.library.check("UpdateEnvWithCustomLogLevel", self.handle, int(level))
        return True

    def records_since(self, mark: int, minimum: LoggingLevel = LoggingLevel.VERBOSE) -> list[LogRecord]:
        with self._lock:
            return [r for r in self.records[mark:] if int(r.severity) >= int(minimum)]


# ---------------------------------------------------------------------------------------------------------------
# Provider options (the opaque V2 objects: their key/value interface is stable, the V1 structs are not)


class _ProviderOptionsV2(_Handle):
    provider = ""
    _create = _update = _as_string = _append = ""

    def __init__(self, library: OrtLibrary, options: Mapping[str, object] | None = None) -> None:
        super().__init__(library)
        error = _provider_error(self.provider)
        library.check(self._create, byref(self.handle), error=error)
        try:
            # Update is called even without options: in a GPU build it is the first call that loads the provider
            # library, and its status is the only one that carries the loader's own error text
            # ("libcublasLt.so.13: cannot open shared object file"); Append only says "Failed to load".
            items = {str(k): _option_text(v) for k, v in (options or {}).items()} or {"device_id": "0"}
            keys = (c_char_p * len(items))(*[k.encode() for k in items])
            values = (c_char_p * len(items))(*[v.encode() for v in items.values()])
            library.check(self._update, self.handle, keys, values, len(items), error=error)
        except BaseException:
            self.close()
            raise

    def as_dict(self) -> dict[str, str]:
        """The effective options, every key with its value, as ORT reports them."""
        allocator = self.library.default_allocator()
        text = c_void_p()
        self.library.check(self._as_string, self.handle, allocator, byref(text), error=_provider_error(self.provider))
        pairs = (item.partition("=") for item in self.library.take_string(text, allocator).split(";") if item)
        return {key: value for key, _, value in pairs}


def _option_text(value: object) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


class CudaProviderOptions(_ProviderOptionsV2):
    """OrtCUDAProviderOptionsV2: created, updated with key/value strings, appended to session options."""

    provider = "CUDAExecutionProvider"
    _release = "ReleaseCUDAProviderOptions"
    _create = "CreateCUDAProviderOptions"
    _update = "UpdateCUDAProviderOptions"
    _as_string = "GetCUDAProviderOptionsAsString"
    _append = "SessionOptionsAppendExecutionProvider_CUDA_V2"


class TensorRtProviderOptions(_ProviderOptionsV2):
    """OrtTensorRTProviderOptionsV2, same protocol as the CUDA options."""

    provider = "TensorrtExecutionProvider"
    _release = "ReleaseTensorRTProviderOptions"
    _create = "CreateTensorRTProviderOptions"
    _update = "UpdateTensorRTProviderOptions"
    _as_string = "GetTensorRTProviderOptionsAsString"
    _append = "SessionOptionsAppendExecutionProvider_TensorRT_V2"


# ---------------------------------------------------------------------------------------------------------------
# Session options


class SessionOptions(_Handle):
    """OrtSessionOptions: optimisation level, threads, config entries, profiling, execution providers."""

    _release = "ReleaseSessionOptions"

    def __init__(self, library: OrtLibrary) -> None:
        super().__init__(library)
        library.check("CreateSessionOptions", byref(self.handle))
        self.providers: list[str] = []  # appended EPs, in order (CPU is always last, implicitly)
        self.profiling_prefix: Path | None = None

    def set_graph_optimization_level(self, level: GraphOptimizationLevel) -> None:
        self.library.check("SetSessionGraphOptimizationLevel", self.handle, int(level))

    def set_execution_mode(self, mode: ExecutionMode) -> None:
        self.library.check("SetSessionExecutionMode", self.handle, int(mode))

    def set_intra_op_threads(self, count: int) -> None:
        self.library.check("SetIntraOpNumThreads", self.handle, int(count))

    def set_inter_op_threads(self, count: int) -> None:
        self.library.check("SetInterOpNumThreads", self.handle, int(count))

    def set_log_severity(self, level: LoggingLevel) -> None:
        self.library.check("SetSessionLogSeverityLevel", self.handle, int(level))

    def set_mem_pattern(self, enabled: bool) -> None:
        self.library.check("EnableMemPattern" if enabled else "DisableMemPattern", self.handle)

    def set_cpu_mem_arena(self, enabled: bool) -> None:
        self.library.check("EnableCpuMemArena" if enabled else "DisableCpuMemArena", self.handle)

    def add_config_entry(self, key: str, value: str) -> None:
        def error(status: OrtStatusInfo) -> OrtgpuError:
            return OrtInputError.from_status(status, f"session config entry {key!r} rejected", None)

        self.library.check("AddSessionConfigEntry", self.handle, key.encode(), str(value).encode(), error=error)

    def enable_profiling(self, prefix: str | os.PathLike[str]) -> None:
        """Profile to ``<prefix>_<timestamp>.json``; Session.end_profiling() gives the file name."""
        self.library.check("EnableProfiling", self.handle, _ortchar(prefix))
        self.profiling_prefix = Path(prefix)

    def append(self, options: _ProviderOptionsV2) -> None:
        """Append the EP of ``options``; a build or machine that cannot run it raises ProviderLoadError."""
        self.library.check(options._append, self.handle, options.handle, error=_provider_error(options.provider))
        self.providers.append(options.provider)


class RunOptions(_Handle):
    """OrtRunOptions; its log severity keeps a verbose session log (kept for placement) out of timed runs."""

    _release = "ReleaseRunOptions"

    def __init__(self, library: OrtLibrary, log_severity: LoggingLevel = LoggingLevel.WARNING) -> None:
        super().__init__(library)
        library.check("CreateRunOptions", byref(self.handle))
        try:
            library.check("RunOptionsSetRunLogSeverityLevel", self.handle, int(log_severity))
        except BaseException:
            self.close()
            raise


# ---------------------------------------------------------------------------------------------------------------
# Values


@dataclass(frozen=True)
class TensorSpec:
    """A session input or output as the model declares it."""

    name: str
    onnx_type: str  # "tensor", "sequence", "map", "optional", ...
    element_type: str | None  # ONNX name ("float", "int64", "string"); None for non-tensors
    dims: tuple[int | str | None, ...]  # int fixed, str symbolic name, None unnamed dynamic

    @property
    def is_tensor(self) -> bool:
        return self.onnx_type == "tensor"


class Value(_Handle):
    """An OrtValue tensor. One made from numpy keeps the array alive: ORT reads the buffer in place."""

    _release = "ReleaseValue"

    def __init__(self, library: OrtLibrary) -> None:
        super().__init__(library)
        self._keep: Any = None

    @classmethod
    def from_numpy(cls, library: OrtLibrary, array: Any, memory_info: c_void_p, allocator: c_void_p) -> Value:
        """A CPU tensor from a numpy array (numeric, bool, float16, ml_dtypes' bfloat16/float8, or strings)."""
        import numpy as np

        array = np.asarray(array)
        element = ElementType.from_numpy(array.dtype)
        shape = (c_int64 * max(array.ndim, 1))(*array.shape)
        value = cls(library)
        try:
            if element == ElementType.STRING:
                # strings are copied into the tensor; a string with a NUL byte would be cut there (a C string)
                library.check("CreateTensorAsOrtValue", allocator, shape, array.ndim, int(element), byref(value.handle))
                items = [_string_bytes(item) for item in array.reshape(-1).tolist()]
                library.check("FillStringTensor", value.handle, (c_char_p * max(len(items), 1))(*items), len(items))
            else:
                contiguous = array if array.flags.c_contiguous else array.copy(order="C")  # keeps 0-d arrays 0-d
                value._keep = contiguous  # must outlive the OrtValue: ORT does not copy
                library.check(
                    "CreateTensorWithDataAsOrtValue",
                    memory_info,
                    contiguous.ctypes.data_as(c_void_p),
                    contiguous.nbytes,
                    shape,
                    contiguous.ndim,
                    int(element),
                    byref(value.handle),
                )
        except BaseException:
            value.close()
            raise
        return value

    def close(self) -> None:
        super().close()
        self._keep = None

    def to_numpy(self, name: str = "value") -> Any:
        """Copy the tensor into a new numpy array (strings: an object array of str, like the Python API)."""
        return _tensor_to_numpy(self.library, self.handle, name)


def _tensor_to_numpy(library: OrtLibrary, handle: c_void_p, name: str) -> Any:
    """Copy an OrtValue tensor (not owned here) into a new numpy array."""
    import numpy as np

    kind = c_int()
    library.check("GetValueType", handle, byref(kind))
    if kind.value != _OnnxType.TENSOR:
        raise UnsupportedValueError(
            f"{name} is a {_onnx_type_name(kind.value)}, not a tensor: the C-API runner passes tensors only",
            "run this model with the Python wheel",
        )
    info = c_void_p()
    library.check("GetTensorTypeAndShape", handle, byref(info))
    try:
        element_code, count = c_int(), c_size_t()
        library.check("GetTensorElementType", info, byref(element_code))
        dims = _dims(library, info, symbols=False)[0]
        library.check("GetTensorShapeElementCount", info, byref(count))
    finally:
        library.call("ReleaseTensorTypeAndShapeInfo", info)
    element = ElementType.of(element_code.value)
    shape = tuple(int(d) for d in dims)
    if element == ElementType.STRING:
        return _strings(library, handle, count.value).reshape(shape)
    dtype = _numpy_dtype(element.numpy_name) if element and element.numpy_name else None
    if dtype is None:
        shown = element.onnx_name if element else f"element type {element_code.value}"
        raise UnsupportedValueError(f"{name} is a {shown} tensor, which has no numpy dtype here", None)
    nbytes = count.value * dtype.itemsize
    if nbytes == 0:
        return np.zeros(shape, dtype=dtype)
    data = c_void_p()
    library.check("GetTensorMutableData", handle, byref(data))
    buffer = (ctypes.c_char * nbytes).from_address(data.value)
    return np.frombuffer(buffer, dtype=dtype).reshape(shape).copy()


def _strings(library: OrtLibrary, handle: c_void_p, count: int) -> Any:
    import numpy as np

    total = c_size_t()
    library.check("GetStringTensorDataLength", handle, byref(total))
    content = ctypes.create_string_buffer(max(total.value, 1))
    offsets = (c_size_t * max(count, 1))()
    library.check("GetStringTensorContent", handle, content, total.value, offsets, count)
    raw = content.raw[: total.value]
    ends = [*list(offsets)[1:count], total.value]
    out = np.empty(count, dtype=object)
    out[:] = [raw[offsets[i] : ends[i]].decode("utf-8", "replace") for i in range(count)]
    return out


def _string_bytes(item: object) -> bytes:
    return item if isinstance(item, bytes) else str(item).encode("utf-8")


def _dims(library: OrtLibrary, info: c_void_p, symbols: bool = True) -> tuple[list[int], list[str]]:
    """Dimensions (-1 dynamic) and symbolic names ("" when fixed) of an OrtTensorTypeAndShapeInfo."""
    count = c_size_t()
    library.check("GetDimensionsCount", info, byref(count))
    dims = (c_int64 * max(count.value, 1))()
    library.check("GetDimensions", info, dims, count.value)
    if not symbols:
        return list(dims)[: count.value], []
    names = (c_char_p * max(count.value, 1))()  # owned by info
    library.check("GetSymbolicDimensions", info, names, count.value)
    return list(dims)[: count.value], [(n or b"").decode("utf-8", "replace") for n in list(names)[: count.value]]


# ---------------------------------------------------------------------------------------------------------------
# Session


class Session(_Handle):
    """An OrtSession on a model file, with its declared inputs and outputs and a numpy-in/numpy-out run()."""

    _release = "ReleaseSession"

    def __init__(self, env: Env, model_path: str | os.PathLike[str], options: SessionOptions) -> None:
        library = env.library
        super().__init__(library)
        self.env = env
        self.model_path = Path(model_path)
        self._memory_info = c_void_p()
        library.check(
            "CreateSession",
            env.handle,
            _ortchar(self.model_path),
            options.handle,
            byref(self.handle),
            error=_session_error,
        )
        try:
            self._allocator = library.default_allocator()
            library.check("CreateCpuMemoryInfo", _CPU_DEVICE_ALLOCATOR, _MEM_TYPE_DEFAULT, byref(self._memory_info))
            self.inputs: tuple[TensorSpec, ...] = tuple(
                self._describe(i, True) for i in range(self._count("SessionGetInputCount"))
            )
            self.outputs: tuple[TensorSpec, ...] = tuple(
                self._describe(i, False) for i in range(self._count("SessionGetOutputCount"))
            )
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self._memory_info:
            memory_info, self._memory_info = self._memory_info, c_void_p()
            self.library.call("ReleaseMemoryInfo", memory_info)
        super().close()

    def _count(self, function: str) -> int:
        count = c_size_t()
        self.library.check(function, self.handle, byref(count))
        return count.value

    def _describe(self, index: int, is_input: bool) -> TensorSpec:
        library = self.library
        name_pointer = c_void_p()
        library.check(
            "SessionGetInputName" if is_input else "SessionGetOutputName",
            self.handle,
            index,
            self._allocator,
            byref(name_pointer),
        )
        name = library.take_string(name_pointer, self._allocator)
        type_info = c_void_p()
        library.check(
            "SessionGetInputTypeInfo" if is_input else "SessionGetOutputTypeInfo", self.handle, index, byref(type_info)
        )
        try:
            kind = c_int()
            library.check("GetOnnxTypeFromTypeInfo", type_info, byref(kind))
            onnx_type = _onnx_type_name(kind.value)
            if kind.value != _OnnxType.TENSOR:
                return TensorSpec(name=name, onnx_type=onnx_type, element_type=None, dims=())
            tensor_info = c_void_p()  # owned by type_info: never released on its own
            library.check("CastTypeInfoToTensorInfo", type_info, byref(tensor_info))
            element_code = c_int()
            library.check("GetTensorElementType", tensor_info, byref(element_code))
            dims, symbols = _dims(library, tensor_info)
            element = ElementType.of(element_code.value)
            return TensorSpec(
                name=name,
                onnx_type=onnx_type,
                element_type=element.onnx_name if element else str(element_code.value),
                dims=tuple(d if d >= 0 else (s or None) for d, s in zip(dims, symbols, strict=True)),
            )
        finally:
            library.call("ReleaseTypeInfo", type_info)

    def run(
        self, feeds: Mapping[str, Any], output_names: Sequence[str] | None = None, run_options: RunOptions | None = None
    ) -> dict[str, Any]:
        """Run once: numpy arrays in (by input name), numpy arrays out (by output name, model order)."""
        names = [spec.name for spec in self.inputs]
        missing = [n for n in names if n not in feeds]
        unknown = [n for n in feeds if n not in names]
        if missing or unknown:
            raise OrtInputError(
                f"inputs do not match the model: missing {missing or 'none'}, unknown {unknown or 'none'}",
                f"the model's inputs are {names}",
            )
        wanted = list(output_names) if output_names is not None else [spec.name for spec in self.outputs]
        values = [self.make_value(feeds[n]) for n in names]
        try:
            return self.run_values(names, values, wanted, run_options)
        finally:
            for value in values:
                value.close()

    def make_value(self, array: Any) -> Value:
        return Value.from_numpy(self.library, array, self._memory_info, self._allocator)

    def run_values(
        self,
        input_names: Sequence[str],
        values: Sequence[Value],
        output_names: Sequence[str],
        run_options: RunOptions | None = None,
    ) -> dict[str, Any]:
        """Run with ready OrtValues; outputs are copied to numpy and released."""
        return self.prepare(input_names, values, output_names, run_options).run_to_numpy()

    def prepare(
        self,
        input_names: Sequence[str],
        values: Sequence[Value],
        output_names: Sequence[str],
        run_options: RunOptions | None = None,
    ) -> PreparedRun:
        """A Run call with its arguments built once, for loops that time ORT rather than ctypes."""
        return PreparedRun(self, input_names, values, output_names, run_options)

    def end_profiling(self) -> Path | None:
        """Stop profiling and return the JSON file ORT wrote (a UTF-8 char* on every OS); None when profiling
        was not on. Profiling stays off afterwards, so later runs are not slowed by it."""
        pointer = c_void_p()
        self.library.check("SessionEndProfiling", self.handle, self._allocator, byref(pointer))
        name = self.library.take_string(pointer, self._allocator)
        return Path(name) if name else None


class PreparedRun:
    """One Run call with every argument marshalled in advance (names, input handles, output slots).

    ``run()`` costs one foreign call plus the release of the outputs, so a timed loop measures the library the
    way a C/C++ application sees it; ``run_to_numpy()`` also copies the outputs out. The inputs (and the numpy
    buffers behind them) are kept alive by this object.
    """

    def __init__(
        self,
        session: Session,
        input_names: Sequence[str],
        values: Sequence[Value],
        output_names: Sequence[str],
        run_options: RunOptions | None = None,
    ) -> None:
        library = session.library
        self.library = library
        self.output_names = tuple(output_names)
        self._values = tuple(values)
        self._session = session
        self._run = library.fn("Run")
        self._release_value = library.fn("ReleaseValue")
        count = len(self.output_names)
        self._slots = (c_void_p * max(count, 1))()  # NULLs: ORT allocates every output
        self._args = (
            session.handle,
            run_options.handle if run_options is not None else None,
            (c_char_p * max(len(input_names), 1))(*[n.encode() for n in input_names]),
            (c_void_p * max(len(values), 1))(*[v.handle.value for v in values]),
            len(values),
            (c_char_p * max(count, 1))(*[n.encode() for n in self.output_names]),
            count,
            self._slots,
        )

    def run(self) -> None:
        """Run once and release the outputs."""
        status = self._run(*self._args)
        self._release_outputs()
        if status:
            raise _run_error(self.library.take_status("Run", status))

    def run_to_numpy(self) -> dict[str, Any]:
        """Run once and return the outputs as numpy arrays (by output name)."""
        status = self._run(*self._args)
        try:
            if status:
                raise _run_error(self.library.take_status("Run", status))
            result: dict[str, Any] = {}
            for index, name in enumerate(self.output_names):
                handle = self._slots[index]
                if not handle:
                    raise OrtRuntimeError(f"ONNX Runtime returned no value for output {name!r}", None)
                result[name] = _tensor_to_numpy(self.library, c_void_p(handle), f"output {name!r}")
            return result
        finally:
            self._release_outputs()

    def _release_outputs(self) -> None:
        # also after a failed Run: any output ORT set is ours to release
        slots = self._slots
        for index in range(len(self.output_names)):
            if slots[index]:
                self._release_value(slots[index])
                slots[index] = None
