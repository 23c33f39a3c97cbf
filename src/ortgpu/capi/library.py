"""One loaded ONNX Runtime C library (by absolute path) and its negotiated API table; the owned-handle base class."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable
from ctypes import POINTER, byref, c_char_p, c_int, c_uint32, c_void_p
from pathlib import Path
from typing import Any

from ortgpu.capi.api import (
    _FUNCTYPE,
    _SLOTS,
    IS_WINDOWS,
    MIN_API_VERSION,
    CapiVersionError,
    LibraryLoadError,
    NotOrtLibraryError,
    OrtErrorCode,
    OrtStatusInfo,
    _default_error,
    api_version_of,
    negotiate_api_version,
)
from ortgpu.errors import OrtgpuError


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
        get_api, get_version_string = (c_void_p * 2).from_address(base)
        if not get_api or not get_version_string:
            raise NotOrtLibraryError(f"{self.path.name}: OrtApiBase holds a NULL function", "re-download the package")
        self._get_api = _FUNCTYPE(c_void_p, c_uint32)(get_api)
        self.version: str = (_FUNCTYPE(c_char_p)(get_version_string)() or b"").decode("utf-8", "replace")
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
            address = c_void_p.from_address(self._api + slot.position * ctypes.sizeof(c_void_p)).value
            if not address:
                raise NotOrtLibraryError(f"{self.path.name}: OrtApi slot {slot.position} ({name}) is NULL", "")
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


class OwnedHandle:
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
