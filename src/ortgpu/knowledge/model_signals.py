"""Signals of model/input errors by structure: an op's shape complaint on a node, with no GPU library in the paste.

ORT wraps every kernel's failure as "Non-zero status code returned while running <op> node. Name:'<node>' Status
Message: <what the kernel said>". When what the kernel said is about shapes, ranks, axes or indices and nothing in
the paste names the GPU stack (CUDA, cuDNN, cuBLAS, TensorRT, memory), the op rejected the data it was given: a
model/input problem that fails the same on the CPU, whatever the op's own wording. Bounded patterns on the bounded
lines of a Paste, as in knowledge/signals.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.signal_kinds import Signal, SignalKind

__all__ = ["op_shape_errors"]

_STATUS = re.compile(
    r"while running (?P<op>[A-Za-z]\w{0,60}) node\.?\s{0,3}Name\s{0,3}:\s{0,3}'(?P<node>[^'\n]{0,300})'"
    r"\s{0,3}Status Message:\s{0,3}(?P<msg>[^\n]{0,600})"
)
# what a kernel says when the data's shape or an index does not fit: ORT's CPU kernels' recurring words
_SHAPE_WORDS = re.compile(
    r"\b(?:shape|dims?|dimensions?|num_dims|rank|axis|axes|broadcast\w{0,3}|indices|index|idx|out of (?:range|bounds)"
    r"|mismatch\w{0,3}|features?|channels?|(?:\d{1,2}[- ]?)?dimensional|\d-?D|scalar)\b",
    re.IGNORECASE,
)
# a graph the session cannot run as built (an If/Loop/Scan subgraph without output shapes, an invalid model): NG-11
_GRAPH_VALIDITY = re.compile(
    r"\bsub-?graph\b|shape set for all outputs|is not a graph input|invalid model|INVALID_GRAPH"
    r"|ShapeInferenceError|TypeInferenceError",
    re.IGNORECASE,
)
# any of these in the paste and the failure may be the GPU stack's: left to the GPU entries
_GPU_STACK = re.compile(
    r"cuda|cudnn|cublas|curand|cufft|tensorrt|\btrt\b|nvinfer|rocm|miopen|hip\b|\bdml\b|directml|openvino|coreml"
    r"|out of memory|failed to allocate|allocat\w{0,6} fail|bfcarena",
    re.IGNORECASE,
)


def op_shape_errors(paste: Paste) -> Iterator[Signal]:
    """A node's kernel rejecting the shapes or indices of its data, in a paste that names no GPU library."""
    if "status message" not in paste.lowered or _GPU_STACK.search(paste.joined[:200_000]):
        return
    for index, line in enumerate(paste.lines):
        if "Status Message" not in line:
            continue
        m = _STATUS.search(line)
        if m is None or not _SHAPE_WORDS.search(m.group("msg")) or _GRAPH_VALIDITY.search(m.group("msg")):
            continue
        values = {"op": m.group("op"), "node": m.group("node")}
        yield Signal(SignalKind.OP_SHAPE_ERROR, index, paste.starts[index] + m.start(), {}, values)
        return
