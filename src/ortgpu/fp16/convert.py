"""FP16 conversion with ONNX Runtime's own converter, then the one repair it needs: kept (fp32) nodes that feed
each other keep the tensor between them in fp32 instead of a cast to fp16 and back."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ortgpu.accuracy.graph import topological_order
from ortgpu.errors import EnvironmentUnfitError
from ortgpu.runtime.guard import import_onnxruntime

if TYPE_CHECKING:  # pragma: no cover
    import onnx

__all__ = [
    "Converted",
    "ConverterUnavailableError",
    "convert_to_fp16",
    "converter_default_block_list",
    "join_kept_chains",
]

_FLOAT = 1
_FLOAT16 = 10


class ConverterUnavailableError(EnvironmentUnfitError):
    """This onnxruntime has no onnxruntime.transformers.float16 (exit 3)."""


@dataclass(frozen=True)
class Converted:
    """A converted model and what the repair did: Cast pairs (fp32 -> fp16 -> fp32) removed between kept nodes."""

    model: Any  # onnx.ModelProto
    kept: frozenset[str]  # node names kept in fp32 as asked
    casts_removed: int


def _converter() -> tuple[Any, frozenset[str]]:
    """ORT's ``convert_float_to_float16`` and its DEFAULT_OP_BLOCK_LIST."""
    import_onnxruntime()
    try:
        from onnxruntime.transformers.float16 import DEFAULT_OP_BLOCK_LIST, convert_float_to_float16
    except ImportError as exc:
        raise ConverterUnavailableError(
            f"onnxruntime's float16 converter cannot be imported ({exc})",
            "install onnxruntime (or onnxruntime-gpu) 1.17 or newer: it ships onnxruntime.transformers.float16",
        ) from None
    return convert_float_to_float16, frozenset(DEFAULT_OP_BLOCK_LIST)


def converter_default_block_list() -> frozenset[str]:
    """Op types ORT's converter leaves in fp32 on its own (its DEFAULT_OP_BLOCK_LIST)."""
    return _converter()[1]


def convert_to_fp16(model: onnx.ModelProto, keep: Iterable[str] = (), keep_io_types: bool = True) -> Converted:
    """``model`` (not changed) converted by ``onnxruntime.transformers.float16.convert_float_to_float16`` with the
    nodes named in ``keep`` left in fp32 (its ``node_block_list``), then repaired (:func:`join_kept_chains`) and
    sorted topologically. ``keep_io_types``: graph inputs and outputs stay float32."""
    import logging

    import onnx

    convert, _ = _converter()
    work = onnx.ModelProto()
    work.CopyFrom(model)
    original = {n.name for n in work.graph.node}
    kept = frozenset(keep)
    # The converter logs each initializer shared by fp16 and fp32 nodes at INFO: not ours to print.
    logger = logging.getLogger("onnxruntime.transformers.float16")
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        converted = convert(work, keep_io_types=keep_io_types, node_block_list=sorted(kept))
    finally:
        logger.setLevel(level)
    removed = join_kept_chains(converted, original)
    available = {i.name for i in converted.graph.input} | {t.name for t in converted.graph.initializer}
    ordered = topological_order(list(converted.graph.node), available)
    del converted.graph.node[:]
    converted.graph.node.extend(ordered)
    return Converted(model=converted, kept=kept, casts_removed=removed)


def _to(node: Any) -> int | None:
    return next((a.i for a in node.attribute if a.name == "to"), None)


def join_kept_chains(model: onnx.ModelProto, original_nodes: set[str]) -> int:
    """Remove the converter's fp32 -> fp16 -> fp32 Cast pairs, in place; returns the Casts removed.

    ORT's converter casts each kept node's output to fp16 and, before each kept consumer, back to fp32: a chain of
    kept nodes (ReduceSumSquare -> Sqrt) then overflows fp16 in between although both nodes run in fp32. Every
    consumer of such a round trip reads the fp32 tensor instead; a round trip that ends in a graph output becomes
    an Identity. Only Casts the converter added (names not in ``original_nodes``) are touched. Where the fp16 copy
    is no longer read, its Cast goes too and the fp32 tensor takes back its original name.
    """
    graph = model.graph
    outputs = {o.name for o in graph.output}
    removed = 0
    made = [n for n in graph.node if n.op_type == "Cast" and n.name not in original_nodes]
    to_half = [n for n in made if _to(n) == _FLOAT16]
    for first in to_half:
        source, half = first.input[0], first.output[0]
        consumers = [n for n in graph.node if half in n.input]
        for second in consumers:
            if second.op_type != "Cast" or second.name in original_nodes or _to(second) != _FLOAT:
                continue
            back = second.output[0]
            if back in outputs:
                second.op_type = "Identity"
                del second.attribute[:]
                second.input[0] = source
                continue
            for node in graph.node:
                for index, name in enumerate(node.input):
                    if name == back:
                        node.input[index] = source
            graph.node.remove(second)
            removed += 1
        if half not in outputs and not any(half in n.input for n in graph.node):
            graph.node.remove(first)
            removed += 1
            _rename(graph, source, half)
    _drop_stale_value_info(graph)
    return removed


def _rename(graph: Any, old: str, new: str) -> None:
    """The fp32 tensor ``old`` (the converter's ``X_cast_to_fp16``) takes back the name ``new`` (``X``) when
    nothing else holds that name, so reports and layer-wise comparisons find it under the model's own name."""
    if old in {i.name for i in graph.input} or any(new in n.output for n in graph.node):
        return
    for node in graph.node:
        for index, name in enumerate(node.output):
            if name == old:
                node.output[index] = new
        for index, name in enumerate(node.input):
            if name == old:
                node.input[index] = new
    for value in list(graph.value_info):
        if value.name == new:
            graph.value_info.remove(value)
    for value in graph.value_info:
        if value.name == old:
            value.name = new


def _drop_stale_value_info(graph: Any) -> None:
    """value_info for tensors no node makes or reads any more would only mislead ORT's type checks."""
    live = {name for n in graph.node for name in (*n.input, *n.output)}
    for value in list(graph.value_info):
        if value.name not in live:
            graph.value_info.remove(value)


def float_tensor_count(model: onnx.ModelProto) -> int:
    """Float32 initializers plus float32 graph inputs: zero means there is nothing to convert."""
    count = sum(1 for t in model.graph.initializer if t.data_type == _FLOAT)
    return count + sum(1 for i in model.graph.input if i.type.tensor_type.elem_type == _FLOAT)
