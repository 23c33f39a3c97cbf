"""Facts read from the graph alone: op histogram, subgraphs, initializer sizes, external files, symbolic dims."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortgpu.inspect.result import (
    CustomOp,
    DimUse,
    ExternalFile,
    InitializerInfo,
    OpCount,
    OpOrigin,
    SubgraphInfo,
    SymbolicDim,
    TensorReport,
)
from ortgpu.model.inspect import ModelInfo, TensorInfo, dim_value, walk_tensors

if TYPE_CHECKING:  # pragma: no cover
    import onnx

__all__ = [
    "GraphNode",
    "Inference",
    "custom_ops",
    "external_files",
    "infer_shapes",
    "initializers",
    "op_histogram",
    "strip_large_tensors",
    "subgraphs",
    "symbolic_dims",
    "tensor_reports",
    "walk",
]

DEFAULT_DOMAIN = "ai.onnx"
_ONNX_DOMAINS = frozenset({"", DEFAULT_DOMAIN})
_ML_DOMAIN = "ai.onnx.ml"
# Tensors bigger than this lose their data before shape inference runs: inference needs types and dims, and only
# the small constants that feed shapes (Reshape targets, Slice bounds) for data propagation.
_KEEP_DATA_BYTES = 4096
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_.:]*")


def domain_name(domain: str) -> str:
    return DEFAULT_DOMAIN if domain in _ONNX_DOMAINS else domain


@dataclass(frozen=True)
class GraphNode:
    """A node with where it sits: its graph's nesting depth (0 = the main graph)."""

    proto: Any
    depth: int


def _graph_attributes(node: Any) -> Iterator[tuple[str, Any]]:
    for attr in node.attribute:
        if attr.HasField("g"):
            yield attr.name, attr.g
        for graph in attr.graphs:
            yield attr.name, graph


def walk(graph: Any, depth: int = 0) -> Iterator[GraphNode]:
    """Every node of ``graph`` and of the graphs its nodes carry, depth first."""
    for node in graph.node:
        yield GraphNode(node, depth)
        for _, sub in _graph_attributes(node):
            yield from walk(sub, depth + 1)


def op_histogram(model: onnx.ModelProto) -> tuple[OpCount, ...]:
    """(domain, op type) -> nodes, subgraphs included; most frequent first."""
    counts: Counter[tuple[str, str]] = Counter(
        (domain_name(n.proto.domain), n.proto.op_type) for n in walk(model.graph)
    )
    return tuple(OpCount(d, op, c) for (d, op), c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def custom_ops(histogram: tuple[OpCount, ...], ort_schemas: frozenset[tuple[str, str]] | None) -> tuple[CustomOp, ...]:
    """Ops outside the default ONNX domain and who provides them (``ort_schemas``: what onnxruntime knows)."""
    out = []
    for entry in histogram:
        if entry.domain == DEFAULT_DOMAIN:
            continue
        if ort_schemas is None:
            origin = OpOrigin.ONNX_ML if entry.domain == _ML_DOMAIN else OpOrigin.UNKNOWN
        elif (entry.domain, entry.op_type) in ort_schemas:
            origin = OpOrigin.ONNX_ML if entry.domain == _ML_DOMAIN else OpOrigin.ORT_CONTRIB
        else:
            origin = OpOrigin.CUSTOM
        out.append(CustomOp(entry.domain, entry.op_type, entry.count, origin))
    return tuple(out)


def subgraphs(model: onnx.ModelProto) -> tuple[SubgraphInfo, ...]:
    """Every node that carries a graph, with the nodes inside (nested ones counted)."""
    out = []
    for index, item in enumerate(walk(model.graph)):
        for attribute, sub in _graph_attributes(item.proto):
            out.append(
                SubgraphInfo(
                    owner_op=item.proto.op_type,
                    owner_name=item.proto.name,
                    owner_index=index,
                    attribute=attribute,
                    node_count=sum(1 for _ in walk(sub)),
                    depth=item.depth + 1,
                )
            )
    return tuple(out)


def _element_bytes(data_type: int) -> tuple[int | None, bool]:
    """(bytes per element, packed two per byte) for an ONNX data type; (None, False) for strings / unknown."""
    import onnx

    name = onnx.TensorProto.DataType.Name(data_type) if data_type in onnx.TensorProto.DataType.values() else ""
    if name in ("STRING", "UNDEFINED", ""):
        return None, False
    if name in ("INT4", "UINT4", "FLOAT4E2M1", "INT2", "UINT2"):
        return 1, True
    try:
        return int(onnx.helper.tensor_dtype_to_np_dtype(data_type).itemsize), False
    except (KeyError, TypeError, ValueError):
        return None, False


def tensor_bytes(tensor: Any) -> int | None:
    """Size of a TensorProto's data from its dims and type; the data itself is not read."""
    size, packed = _element_bytes(tensor.data_type)
    if size is None:
        return None
    count = 1
    for dim in tensor.dims:
        count *= max(int(dim), 0)
    return (count + 1) // 2 if packed else count * size


def _external_location(tensor: Any) -> str | None:
    import onnx

    if tensor.data_location != onnx.TensorProto.EXTERNAL:
        return None
    return next((e.value for e in tensor.external_data if e.key == "location"), "")


def initializers(model: onnx.ModelProto, top: int) -> tuple[int, int, tuple[InitializerInfo, ...]]:
    """(count, total bytes, the ``top`` largest) of the main graph's initializers, from metadata only."""
    import onnx

    infos = []
    tensors = [*model.graph.initializer, *(s.values for s in model.graph.sparse_initializer)]
    for tensor in tensors:
        elem = onnx.TensorProto.DataType.Name(tensor.data_type).lower() if tensor.data_type else "undefined"
        infos.append(
            InitializerInfo(
                name=tensor.name,
                dtype=elem,
                shape=tuple(int(d) for d in tensor.dims),
                size_bytes=tensor_bytes(tensor),
                location=_external_location(tensor),
            )
        )
    total = sum(i.size_bytes or 0 for i in infos)
    ranked = sorted(infos, key=lambda i: (-(i.size_bytes or 0), i.name))
    return len(infos), total, tuple(ranked[: max(top, 0)])


def external_files(path: Path, model: onnx.ModelProto, locations: tuple[str, ...]) -> tuple[ExternalFile, ...]:
    """The external data files (already proven present, whole and inside the folder), with what they hold."""

    referenced: dict[str, int] = dict.fromkeys(locations, 0)
    tensors: Counter[str] = Counter()
    for tensor in walk_tensors(model.graph):
        location = _external_location(tensor)
        if location is None or location not in referenced:
            continue
        entries = {e.key: e.value for e in tensor.external_data}
        length = entries.get("length")
        size = int(length) if length and length.isdigit() else (tensor_bytes(tensor) or 0)
        referenced[location] += size
        tensors[location] += 1
    return tuple(
        ExternalFile(location, (path.parent / location).stat().st_size, referenced[location], tensors[location])
        for location in locations
    )


# --------------------------------------------------------------------------------------------- shapes


@dataclass(frozen=True)
class Inference:
    """What ONNX shape inference gave: value name -> (type string such as "tensor(float)", shape or None)."""

    values: Mapping[str, tuple[str, tuple[int | str | None, ...] | None]]
    note: str
    ok: bool


def strip_large_tensors(model: onnx.ModelProto) -> int:
    """Drop the data of every tensor bigger than a few KiB, in place (types and dims stay); returns bytes dropped.

    Shape inference serialises the model: without the weights a 500 MB model costs what its graph costs.
    """

    dropped = 0
    for tensor in walk_tensors(model.graph):
        size = tensor.ByteSize()
        if size <= _KEEP_DATA_BYTES:
            continue
        for name in ("raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
            tensor.ClearField(name)
        dropped += size
    return dropped


def _type_string(type_proto: Any) -> str:
    import onnx

    kind = type_proto.WhichOneof("value")
    if kind == "tensor_type":
        return f"tensor({onnx.TensorProto.DataType.Name(type_proto.tensor_type.elem_type).lower()})"
    if kind == "sequence_type":
        return f"seq({_type_string(type_proto.sequence_type.elem_type)})"
    if kind == "optional_type":
        return f"optional({_type_string(type_proto.optional_type.elem_type)})"
    return kind or "undefined"


def _shape_of(type_proto: Any) -> tuple[int | str | None, ...] | None:
    if type_proto.WhichOneof("value") != "tensor_type" or not type_proto.tensor_type.HasField("shape"):
        return None
    return tuple(dim_value(d) for d in type_proto.tensor_type.shape.dim)


def _collect(graph: Any, values: dict[str, tuple[str, tuple[int | str | None, ...] | None]]) -> None:
    import onnx

    for value_info in (*graph.input, *graph.output, *graph.value_info):
        values[value_info.name] = (_type_string(value_info.type), _shape_of(value_info.type))
    for tensor in graph.initializer:
        elem = onnx.TensorProto.DataType.Name(tensor.data_type).lower()
        values.setdefault(tensor.name, (f"tensor({elem})", tuple(int(d) for d in tensor.dims)))
    for node in graph.node:
        for _, sub in _graph_attributes(node):
            _collect(sub, values)


def infer_shapes(model: onnx.ModelProto) -> Inference:
    """ONNX shape inference with data propagation on ``model`` (strip its weights first). Never raises."""
    import onnx

    try:
        inferred = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False, data_prop=True)
    except (onnx.shape_inference.InferenceError, ValueError, RuntimeError) as exc:
        values: dict[str, tuple[str, tuple[int | str | None, ...] | None]] = {}
        _collect(model.graph, values)
        first = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
        return Inference(values, f"ONNX shape inference failed ({first}); declared shapes only", ok=False)
    values = {}
    _collect(inferred.graph, values)
    return Inference(values, "ONNX shape inference with data propagation", ok=True)


def _more_known(inferred: tuple[int | str | None, ...] | None, declared: TensorInfo) -> bool:
    if inferred is None:
        return False
    if not declared.has_shape:
        return True
    if len(inferred) != len(declared.shape):
        return False
    return any(d is None and i is not None for d, i in zip(declared.shape, inferred, strict=True))


def tensor_reports(info: ModelInfo, inference: Inference) -> tuple[tuple[TensorReport, ...], tuple[TensorReport, ...]]:
    """Inputs as declared; outputs as declared plus the shape inference gave where it told more."""
    inputs = tuple(TensorReport(i.name, i.elem_type, i.dtype, i.shape, i.has_shape) for i in info.inputs)
    outputs = []
    for out in info.outputs:
        inferred = inference.values.get(out.name, ("", None))[1]
        outputs.append(
            TensorReport(
                out.name,
                out.elem_type,
                out.dtype,
                out.shape,
                out.has_shape,
                inferred_shape=inferred if _more_known(inferred, out) else None,
            )
        )
    return inputs, tuple(outputs)


def _mentions(expression: str, symbol: str) -> bool:
    return expression == symbol or symbol in _IDENTIFIER.findall(expression)


def symbolic_dims(inputs: tuple[TensorReport, ...], outputs: tuple[TensorReport, ...]) -> tuple[SymbolicDim, ...]:
    """Each dim name of the inputs: the inputs sharing it, and the outputs whose shape (declared or inferred)
    carries it, alone or inside an expression."""
    uses: dict[str, list[DimUse]] = {}
    for tensor in inputs:
        for axis, dim in enumerate(tensor.shape):
            if not isinstance(dim, str):
                continue
            symbols = [dim] if _IDENTIFIER.fullmatch(dim) else list(dict.fromkeys(_IDENTIFIER.findall(dim)))
            for symbol in symbols:
                uses.setdefault(symbol, []).append(DimUse(tensor.name, axis, dim))
    out = []
    for symbol, input_uses in uses.items():
        output_uses = []
        for tensor in outputs:
            declared = {
                axis for axis, dim in enumerate(tensor.shape) if isinstance(dim, str) and _mentions(dim, symbol)
            }
            output_uses += [DimUse(tensor.name, axis, str(tensor.shape[axis])) for axis in sorted(declared)]
            for axis, dim in enumerate(tensor.inferred_shape or ()):
                if axis not in declared and isinstance(dim, str) and _mentions(dim, symbol):
                    output_uses.append(DimUse(tensor.name, axis, dim, inferred=True))
        out.append(SymbolicDim(symbol, tuple(input_uses), tuple(output_uses)))
    return tuple(out)
