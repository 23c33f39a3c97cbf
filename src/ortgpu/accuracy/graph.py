"""Graph surgery the accuracy tools share: load a model into memory, sort its nodes, list its intermediate
tensors with their types (onnx shape inference), and copy it with chosen tensors exposed as outputs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortgpu.errors import BadInputError

if TYPE_CHECKING:  # pragma: no cover
    import onnx

__all__ = [
    "GraphError",
    "Skipped",
    "TensorSlot",
    "consumers_of",
    "intermediate_tensors",
    "load_model",
    "name_unnamed_nodes",
    "producers_of",
    "topological_order",
    "with_outputs",
]

# ONNX elem types that numpy can hold and ORT can return (string: compared for equality, not numbers).
_NUMERIC = {1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13}  # float, u8, i8, u16, i16, i32, i64, bool, f16, f64, u32, u64


class GraphError(BadInputError):
    """A graph the accuracy tools cannot work on (a cycle, a missing input): exit 2."""


@dataclass(frozen=True)
class TensorSlot:
    """One intermediate tensor: the node that makes it, its position in topological order, its element type."""

    name: str
    position: int  # index of the producing node in topological order
    op_type: str
    node_name: str
    elem_type: int  # onnx.TensorProto enum
    node_inputs: tuple[str, ...]  # the tensors its node reads
    elements: int | None = None  # from shape inference with the real input shapes; None when unknown


@dataclass(frozen=True)
class Skipped:
    name: str
    reason: str


def load_model(path: Path) -> onnx.ModelProto:
    """The model with its external data, in memory (the file was checked by inspect_model already)."""
    import onnx

    try:
        return onnx.load(str(path), load_external_data=True)
    except (OSError, ValueError, onnx.checker.ValidationError) as exc:
        raise GraphError(f"cannot load {path} into memory: {exc}", "check the model with ortgpu check first") from None


def topological_order(nodes: Sequence[Any], available: set[str]) -> list[Any]:
    """``nodes`` sorted so every node comes after the producers of its inputs (Kahn's algorithm, stable).

    ``available``: tensors known before any node runs (graph inputs, initializers). Subgraph attributes may read
    outer tensors: those count as inputs too.
    """
    from collections import deque

    produced_by: dict[str, int] = {}
    for index, node in enumerate(nodes):
        for out in node.output:
            if out:
                produced_by[out] = index
    needs: list[set[int]] = []
    users: dict[int, list[int]] = {i: [] for i in range(len(nodes))}
    for index, node in enumerate(nodes):
        wanted = {produced_by[name] for name in _reads(node) if name in produced_by and name not in available}
        wanted.discard(index)
        needs.append(wanted)
        for producer in wanted:
            users[producer].append(index)
    ready = deque(i for i, n in enumerate(needs) if not n)
    order: list[int] = []
    while ready:
        index = ready.popleft()
        order.append(index)
        for user in users[index]:
            needs[user].discard(index)
            if not needs[user]:
                ready.append(user)
    if len(order) != len(nodes):
        stuck = next(nodes[i] for i in range(len(nodes)) if i not in set(order))
        raise GraphError(
            f"the graph has a cycle or an input no node makes (at node {stuck.name or stuck.op_type!r})",
            "the model is not a valid ONNX graph; run onnx.checker.check_model on it",
        )
    return [nodes[i] for i in order]


def _reads(node: Any) -> list[str]:
    """Inputs of a node, including outer-scope names its subgraphs read."""
    names = [n for n in node.input if n]
    for attr in node.attribute:
        graphs = [attr.g] if attr.HasField("g") else list(attr.graphs)
        for graph in graphs:
            inner = {i.name for i in graph.input} | {t.name for t in graph.initializer}
            for sub in graph.node:
                inner.update(sub.output)
            for sub in graph.node:
                names += [n for n in _reads(sub) if n and n not in inner]
    return names


def name_unnamed_nodes(model: onnx.ModelProto) -> None:
    """Give every top-level node a unique name (in place): keep-lists and reports name nodes."""
    taken = {n.name for n in model.graph.node if n.name}
    for index, node in enumerate(model.graph.node):
        if node.name:
            continue
        candidate = f"{node.op_type}_{index}"
        while candidate in taken:
            candidate += "_"
        node.name = candidate
        taken.add(candidate)


def producers_of(model: onnx.ModelProto) -> dict[str, Any]:
    return {out: node for node in model.graph.node for out in node.output if out}


def consumers_of(model: onnx.ModelProto) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for node in model.graph.node:
        for name in dict.fromkeys(node.input):
            if name:
                found.setdefault(name, []).append(node)
    return found


def _inferred_types(
    model: onnx.ModelProto, nodes: Sequence[Any], input_shapes: Mapping[str, tuple[int, ...]] | None
) -> dict[str, Any]:
    """value_info by tensor name after shape inference (``nodes`` in topological order: inference reads them in
    order), with the graph inputs fixed to ``input_shapes``."""
    import onnx

    # Big initializers become typed inputs: inference needs their types, not their data (small ones, such as
    # Reshape targets, stay so shapes can be followed).
    work = onnx.ModelProto()
    work.ir_version = model.ir_version
    work.opset_import.extend(model.opset_import)
    work.functions.extend(model.functions)
    work.graph.node.extend(nodes)
    work.graph.input.extend(model.graph.input)
    work.graph.output.extend(model.graph.output)
    work.graph.value_info.extend(model.graph.value_info)
    listed = {i.name for i in model.graph.input}
    for init in model.graph.initializer:
        if _count(init.dims) <= _SMALL_INITIALIZER:
            work.graph.initializer.append(init)
        elif init.name not in listed:
            work.graph.input.append(onnx.helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)))
    for value in work.graph.input:
        shape = (input_shapes or {}).get(value.name)
        if shape is None or not value.type.HasField("tensor_type"):
            continue
        dims = value.type.tensor_type.shape.dim
        if len(dims) == len(shape):
            for dim, size in zip(dims, shape, strict=True):
                dim.Clear()
                dim.dim_value = int(size)
    try:
        inferred = onnx.shape_inference.infer_shapes(work, check_type=False, strict_mode=False, data_prop=True)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError, RuntimeError, ValueError):
        inferred = work  # inference gave up: only the types the model itself declares are known
    found = {v.name: v for v in inferred.graph.value_info}
    found.update({v.name: v for v in inferred.graph.output})
    return found


_SMALL_INITIALIZER = 4096


def _count(dims: Sequence[int]) -> int:
    total = 1
    for d in dims:
        total *= int(d)
    return total


def _elements(value_info: Any) -> int | None:
    if not value_info.type.HasField("tensor_type") or not value_info.type.tensor_type.HasField("shape"):
        return None
    total = 1
    for dim in value_info.type.tensor_type.shape.dim:
        if not dim.HasField("dim_value"):
            return None
        total *= int(dim.dim_value)
    return total


def intermediate_tensors(
    model: onnx.ModelProto, input_shapes: Mapping[str, tuple[int, ...]] | None = None
) -> tuple[list[TensorSlot], list[Skipped]]:
    """Every tensor a top-level node makes, in topological order, with its type from shape inference.

    Tensors whose type inference cannot tell, or that are not numeric tensors (sequences, maps, strings), are
    returned as skipped with the reason.
    """
    available = {i.name for i in model.graph.input} | {t.name for t in model.graph.initializer}
    nodes = topological_order(list(model.graph.node), available)
    types = _inferred_types(model, nodes, input_shapes)
    slots: list[TensorSlot] = []
    skipped: list[Skipped] = []
    for position, node in enumerate(nodes):
        for name in node.output:
            if not name:
                continue
            value = types.get(name)
            if value is None or not value.type.HasField("tensor_type"):
                kind = "its type is unknown to onnx shape inference" if value is None else "not a tensor"
                skipped.append(Skipped(name, kind))
                continue
            elem = value.type.tensor_type.elem_type
            if elem == 8:
                skipped.append(Skipped(name, "a string tensor"))
                continue
            if elem not in _NUMERIC:
                reason = "its element type is unknown" if elem == 0 else f"element type {elem} has no numpy dtype"
                skipped.append(Skipped(name, reason))
                continue
            slots.append(
                TensorSlot(
                    name=name,
                    position=position,
                    op_type=node.op_type,
                    node_name=node.name,
                    elem_type=elem,
                    node_inputs=tuple(i for i in node.input if i),
                    elements=_elements(value),
                )
            )
    return slots, skipped


def with_outputs(model: onnx.ModelProto, slots: Sequence[TensorSlot]) -> onnx.ModelProto:
    """A copy of ``model`` (sharing nothing) whose graph outputs are exactly ``slots``, typed, shapes left open."""
    import onnx

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    del copy.graph.output[:]
    copy.graph.output.extend(onnx.helper.make_tensor_value_info(s.name, s.elem_type, None) for s in slots)
    return copy
