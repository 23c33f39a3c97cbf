"""Tensors across the C API: OrtValue from and to numpy (numbers, strings), and the specs of inputs and outputs."""

from __future__ import annotations

import ctypes
from ctypes import byref, c_char_p, c_int, c_int64, c_size_t, c_void_p
from dataclasses import dataclass
from typing import Any

from ortgpu.capi.api import (
    ElementType,
    UnsupportedValueError,
    _onnx_type_name,
    _OnnxType,
    numpy_dtype,
)
from ortgpu.capi.library import OrtLibrary, OwnedHandle


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


class Value(OwnedHandle):
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
    dtype = numpy_dtype(element.numpy_name) if element and element.numpy_name else None
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
