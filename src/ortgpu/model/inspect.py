"""Read an ONNX model safely: real inputs, symbolic dims, opsets, node counts, contained external data."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING, Any

from ortgpu.errors import BadInputError

if TYPE_CHECKING:  # pragma: no cover
    import onnx

__all__ = [
    "ELEM_TYPE_TO_DTYPE",
    "ModelError",
    "ModelInfo",
    "TensorInfo",
    "dim_value",
    "inspect_model",
    "load_model",
    "walk_tensors",
]

# ONNX tensor element type name -> numpy dtype name, for every type ORT's Python API takes as numpy input.
ELEM_TYPE_TO_DTYPE: dict[str, str] = {
    "float": "float32",
    "float16": "float16",
    "double": "float64",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "int64": "int64",
    "uint8": "uint8",
    "uint16": "uint16",
    "uint32": "uint32",
    "uint64": "uint64",
    "bool": "bool",
    "string": "object",
}

# Ops that pass integer indices through unchanged on their way to a Gather (embedding lookups).
_INDEX_PASSTHROUGH_OPS = frozenset({"Cast", "Unsqueeze", "Squeeze", "Reshape", "Flatten", "Identity", "Expand"})

_MODEL_HINT = "give the path of an .onnx model file (protobuf ModelProto), e.g. one exported with torch.onnx.export"


class ModelError(BadInputError):
    """The model file cannot be used: missing, not ONNX, corrupt, or unsafe external data (exit 2)."""


@dataclass(frozen=True)
class TensorInfo:
    """One graph input or output as the model declares it.

    ``shape`` holds an int for a fixed dim (0 included: ORT enforces it), a str for a symbolic dim (its name, or
    an expression such as ``"batch*2"`` kept verbatim) and None for an unknown dim (unnamed, ``?``, negative).
    ``has_shape`` is False when the model gives no shape at all (rank unknown); ``shape`` is then ``()``.
    ``dtype`` is the numpy dtype name, or ``"unsupported"`` for a type ORT's Python API cannot feed from numpy
    (bfloat16, float8, sequences, maps...).
    """

    name: str
    elem_type: str
    dtype: str
    shape: tuple[int | str | None, ...]
    has_shape: bool = True

    @property
    def rank(self) -> int | None:
        return len(self.shape) if self.has_shape else None

    @property
    def is_dynamic(self) -> bool:
        return not self.has_shape or any(not isinstance(d, int) for d in self.shape)

    def shape_text(self) -> str:
        """Human form, e.g. ``[batch, 3, ?, ?]``; ``[]`` for a scalar and ``?`` when the rank is unknown."""
        if not self.has_shape:
            return "?"
        return "[" + ", ".join("?" if d is None else str(d) for d in self.shape) + "]"


@dataclass(frozen=True)
class ModelInfo:
    """What ``inspect_model`` learned from a model file, without running it."""

    path: Path
    sha256: str
    size_bytes: int
    ir_version: int
    opsets: dict[str, int]
    producer: str
    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]
    node_count: int
    op_types: dict[str, int]
    external_data: tuple[str, ...]
    # Integer input name -> number of rows of the embedding table it indexes (valid ids are [0, rows)).
    index_bounds: dict[str, int] = field(default_factory=dict)
    graph_name: str = ""
    initializer_count: int = 0
    has_subgraphs: bool = False

    def input(self, name: str) -> TensorInfo:
        """The real input called ``name``; KeyError when there is none."""
        for info in self.inputs:
            if info.name == name:
                return info
        raise KeyError(name)

    @property
    def input_names(self) -> tuple[str, ...]:
        return tuple(i.name for i in self.inputs)

    @property
    def output_names(self) -> tuple[str, ...]:
        return tuple(o.name for o in self.outputs)


def inspect_model(path: str | Path, *, check: bool = True) -> ModelInfo:
    """Load ``path`` without its external data, validate it, and describe it.

    Raises ModelError (exit 2) for a missing path, a directory, an empty / truncated / non-ONNX file, a model
    the ONNX checker rejects (``check=False`` skips the checker), and external data that is missing or that
    points outside the model's folder (``..``, absolute paths, symlinks leading out).
    """
    return load_model(path, check=check)[0]


def load_model(path: str | Path, *, check: bool = True) -> tuple[ModelInfo, onnx.ModelProto]:
    """:func:`inspect_model` plus the parsed ModelProto (external data not loaded), for callers that read more."""
    path = Path(path)
    data = _read_model_bytes(path)
    model = _parse_model(path, data)
    external = _external_data_locations(path, model)  # refuse escaping locations before anything reads them
    if check:
        _check_model(path)
    graph = model.graph
    initializer_names = {t.name for t in graph.initializer} | {s.values.name for s in graph.sparse_initializer}
    # Old exporters (IR < 4) list every initializer in graph.input; ORT does not ask for those.
    real_inputs = tuple(_tensor_info(vi) for vi in graph.input if vi.name not in initializer_names)
    outputs = tuple(_tensor_info(vi) for vi in graph.output)
    op_types: Counter[str] = Counter()
    has_subgraphs = False
    for node, depth in _walk_nodes(graph):
        op_types[node.op_type] += 1
        has_subgraphs = has_subgraphs or depth > 0
    producer = " ".join(p for p in (model.producer_name, model.producer_version) if p)
    info = ModelInfo(
        path=path,
        sha256=hashlib.sha256(data).hexdigest(),
        size_bytes=len(data),
        ir_version=int(model.ir_version),
        opsets={(o.domain or "ai.onnx"): int(o.version) for o in model.opset_import},
        producer=producer,
        inputs=real_inputs,
        outputs=outputs,
        node_count=sum(op_types.values()),
        op_types=dict(sorted(op_types.items())),
        external_data=external,
        index_bounds=_embedding_index_bounds(graph, real_inputs),
        graph_name=graph.name,
        initializer_count=len(initializer_names),
        has_subgraphs=has_subgraphs,
    )
    return info, model


def _read_model_bytes(path: Path) -> bytes:
    from ortgpu.limits import MODEL_LIMIT, check_input_file, read_input_bytes

    directory_hint = _MODEL_HINT
    try:
        if path.is_dir():
            found = sorted(p.name for p in path.glob("*.onnx"))[:5]
            directory_hint = f"pass the model file inside it, e.g. {path / found[0]}" if found else _MODEL_HINT
    except OSError:  # a name too long or a loop: check_input_file says which
        pass
    # size, file type and readability are checked before a byte is read (a FIFO or /dev/zero never ends)
    check_input_file(path, "model", _MODEL_HINT, error=ModelError, directory_hint=directory_hint)
    data = read_input_bytes(path, MODEL_LIMIT, _MODEL_HINT, what="model", error=ModelError)
    if not data:
        raise ModelError(f"model file is empty (0 bytes): {path}", "the export or download did not finish; redo it")
    return data


def _parse_model(path: Path, data: bytes) -> onnx.ModelProto:
    import onnx
    from google.protobuf.message import DecodeError

    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise ModelError(
            f"not a valid ONNX model (protobuf parse failed: {exc}): {path}",
            "the file is truncated or not ONNX; re-export or re-download it (an .ort file is not ONNX either)",
        ) from None
    # Random bytes can parse as an almost empty protobuf: a real model has an IR version, opsets and a graph.
    if model.ir_version <= 0 or not model.HasField("graph") or not model.opset_import:
        raise ModelError(f"not an ONNX model (no IR version, opset or graph found): {path}", _MODEL_HINT)
    return model


def _check_model(path: Path) -> None:
    import onnx

    try:
        # By path, so the checker resolves external data against the model's folder, not the working directory.
        onnx.checker.check_model(str(path))
    except (onnx.checker.ValidationError, ValueError) as exc:
        first_line = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
        raise ModelError(
            f"model fails ONNX validation: {first_line} ({path})",
            "the file is truncated or the exporter produced an invalid graph; re-export it",
        ) from None


def _dtype_and_elem(type_proto: Any) -> tuple[str, str]:
    import onnx

    kind = type_proto.WhichOneof("value")
    if kind == "tensor_type":
        elem_type = onnx.TensorProto.DataType.Name(type_proto.tensor_type.elem_type).lower()
        return elem_type, ELEM_TYPE_TO_DTYPE.get(elem_type, "unsupported")
    if kind == "sparse_tensor_type":
        elem_type = onnx.TensorProto.DataType.Name(type_proto.sparse_tensor_type.elem_type).lower()
        return f"sparse({elem_type})", "unsupported"
    if kind == "sequence_type":
        inner, _ = _dtype_and_elem(type_proto.sequence_type.elem_type)
        return f"seq({inner})", "unsupported"
    if kind == "optional_type":
        inner, _ = _dtype_and_elem(type_proto.optional_type.elem_type)
        return f"optional({inner})", "unsupported"
    if kind == "map_type":
        return "map", "unsupported"
    return "undefined", "unsupported"


def _dim(dim: Any) -> int | str | None:
    kind = dim.WhichOneof("value")
    if kind == "dim_value":
        # Some exporters write -1 for "dynamic" (ORT treats any negative value so). A 0 stays a fixed 0:
        # ORT enforces it ("Got: 1 Expected: 0"), so only empty tensors can feed that dim.
        return int(dim.dim_value) if dim.dim_value >= 0 else None
    if kind == "dim_param":
        text = dim.dim_param.strip()
        if text in ("", "?", "-1", "None", "unk"):
            return None
        if re.fullmatch(r"\+?[0-9]{1,18}", text):  # a number written as a string is still a fixed size
            return int(text)
        return text  # anything else (also "²" or 5,000 digits) is a symbol that --dim or --shape can set
    return None


def _tensor_info(value_info: Any) -> TensorInfo:
    elem_type, dtype = _dtype_and_elem(value_info.type)
    tensor_type = value_info.type.tensor_type if value_info.type.HasField("tensor_type") else None
    if tensor_type is None or not tensor_type.HasField("shape"):
        return TensorInfo(value_info.name, elem_type, dtype, (), has_shape=False)
    return TensorInfo(value_info.name, elem_type, dtype, tuple(_dim(d) for d in tensor_type.shape.dim))


def _subgraphs(node: Any) -> Iterator[Any]:
    for attr in node.attribute:
        if attr.HasField("g"):
            yield attr.g
        yield from attr.graphs


def _walk_nodes(graph: Any, depth: int = 0) -> Iterator[tuple[Any, int]]:
    """Every node of ``graph`` and, recursively, of its If / Loop / Scan subgraphs, with its nesting depth."""
    for node in graph.node:
        yield node, depth
        for sub in _subgraphs(node):
            yield from _walk_nodes(sub, depth + 1)


def _walk_tensors(graph: Any) -> Iterator[Any]:
    """Every TensorProto stored in the graph: initializers, sparse initializers, tensor attributes, subgraphs."""
    yield from graph.initializer
    for sparse in graph.sparse_initializer:
        yield sparse.values
        yield sparse.indices
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            yield from attr.tensors
            if attr.HasField("sparse_tensor"):
                yield attr.sparse_tensor.values
                yield attr.sparse_tensor.indices
        for sub in _subgraphs(node):
            yield from _walk_tensors(sub)


def _external_data_locations(path: Path, model: onnx.ModelProto) -> tuple[str, ...]:
    import onnx

    folder = path.parent.resolve()
    locations: dict[str, int] = {}  # location -> bytes needed (offset + length), 0 when unknown
    for tensor in _walk_tensors(model.graph):
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        entries = {e.key: e.value for e in tensor.external_data}
        location = entries.get("location", "")
        _refuse_unsafe_location(path, tensor.name, location, folder)
        try:
            needed = int(entries.get("offset", 0) or 0) + int(entries.get("length", 0) or 0)
        except ValueError:
            raise ModelError(
                f"tensor {tensor.name!r}: bad external data offset/length in {path}", "re-export the model"
            ) from None
        locations[location] = max(locations.get(location, 0), needed)
    for location, needed in locations.items():
        target = path.parent / location
        if not target.is_file():
            raise ModelError(
                f"external data file {location!r} of {path.name} is missing (looked in {path.parent})",
                "copy the model's data file(s) next to the .onnx file; they travel together",
            )
        size = target.stat().st_size
        if needed > size:
            raise ModelError(
                f"external data file {location!r} is truncated: {size} bytes, the model needs {needed}",
                "copy the data file again; it did not arrive whole",
            )
    return tuple(locations)


def _refuse_unsafe_location(path: Path, tensor_name: str, location: str, folder: Path) -> None:
    hint = "external data must sit inside the model's folder; re-save the model with a plain relative location"
    if not location:
        raise ModelError(f"tensor {tensor_name!r} has external data without a location in {path}", hint)
    posix, windows = PurePosixPath(location), PureWindowsPath(location)
    if posix.is_absolute() or windows.is_absolute() or windows.drive or location.startswith(("/", "\\")):
        raise ModelError(f"tensor {tensor_name!r}: external data location '{location}' is an absolute path", hint)
    if ".." in posix.parts or ".." in windows.parts:
        raise ModelError(f"tensor {tensor_name!r}: external data location '{location}' leaves the model's folder", hint)
    resolved = (path.parent / location).resolve()
    if not resolved.is_relative_to(folder):
        raise ModelError(
            f"tensor {tensor_name!r}: external data '{location}' resolves outside the model's folder "
            f"(to {resolved}, through a symlink)",
            hint,
        )


def _embedding_index_bounds(graph: Any, inputs: tuple[TensorInfo, ...]) -> dict[str, int]:
    """Integer inputs that reach a Gather's indices (directly or through Cast/Unsqueeze/Reshape...) whose data
    is a constant table: input name -> table rows along the gathered axis (smallest table wins)."""
    int_inputs = [i.name for i in inputs if i.dtype.startswith(("int", "uint"))]
    if not int_inputs:
        return {}
    constants: dict[str, tuple[int, ...]] = {t.name: tuple(t.dims) for t in graph.initializer}
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        if node.op_type == "Constant":
            for attr in node.attribute:
                if attr.name == "value" and attr.HasField("t"):
                    constants[node.output[0]] = tuple(attr.t.dims)
        for position, name in enumerate(node.input):
            consumers.setdefault(name, []).append((node, position))
    bounds: dict[str, int] = {}
    for name in int_inputs:
        seen: set[str] = set()
        frontier = [name]
        while frontier:
            value = frontier.pop()
            if value in seen:
                continue
            seen.add(value)
            for node, position in consumers.get(value, []):
                if node.op_type == "Gather" and position == 1 and node.input[0] in constants:
                    rows = _gather_rows(node, constants[node.input[0]])
                    if rows:
                        bounds[name] = min(rows, bounds.get(name, rows))
                elif node.op_type in _INDEX_PASSTHROUGH_OPS and position == 0:
                    frontier.extend(node.output)
    return bounds


def _gather_rows(node: Any, table_dims: tuple[int, ...]) -> int | None:
    axis = next((int(a.i) for a in node.attribute if a.name == "axis"), 0)
    if not table_dims or not -len(table_dims) <= axis < len(table_dims):
        return None
    rows = table_dims[axis]
    return rows if rows > 0 else None


# Public names for other rooms: `ortgpu inspect` reads the same dims and walks the same tensors.
dim_value = _dim
walk_tensors = _walk_tensors
