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
import threading
from collections.abc import Mapping, Sequence
from ctypes import byref, c_char_p, c_int, c_size_t, c_void_p
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ortgpu.capi.api import (
    _CPU_DEVICE_ALLOCATOR,
    _LOGGING_FUNCTION,
    _MEM_TYPE_DEFAULT,
    IS_WINDOWS,
    MIN_API_VERSION,
    TARGET_API_VERSION,
    CapiVersionError,
    ElementType,
    ExecutionMode,
    GraphOptimizationLevel,
    LibraryLoadError,
    LoggingLevel,
    NotOrtLibraryError,
    OrtErrorCode,
    OrtInputError,
    OrtModelError,
    OrtRuntimeError,
    OrtStatusInfo,
    ProviderLoadError,
    ProviderOptionError,
    UnsupportedValueError,
    _onnx_type_name,
    _OnnxType,
    _provider_error,
    _run_error,
    _session_error,
    api_version_of,
    negotiate_api_version,
)
from ortgpu.capi.library import OrtLibrary, OwnedHandle
from ortgpu.capi.values import (
    TensorSpec,
    Value,
    _dims,
    _tensor_to_numpy,
)
from ortgpu.errors import OrtgpuError

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


def _ortchar(path: str | os.PathLike[str]) -> str | bytes:
    """A path as ORTCHAR_T* wants it: UTF-16 on Windows (c_wchar_p), the file-system bytes elsewhere."""
    return str(path) if IS_WINDOWS else os.fsencode(path)


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


class Env(OwnedHandle):
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


class _ProviderOptionsV2(OwnedHandle):
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


class SessionOptions(OwnedHandle):
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


class RunOptions(OwnedHandle):
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
# Session


class Session(OwnedHandle):
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
