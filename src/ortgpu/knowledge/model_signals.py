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

__all__ = ["op_shape_errors", "unimplemented_variants"]

_STATUS = re.compile(
    r"while running (?P<op>[A-Za-z]\w{0,60}) node\.?\s{0,3}Name\s{0,3}:\s{0,3}'(?P<node>[^'\n]{0,300})'"
    r"\s{0,3}Status Message:\s{0,3}(?P<msg>[^\n]{0,600})"
    # older releases: "while running Node: ZipMap Status Message: ..." (the node's name only)
    r"|while running Node:\s{0,3}(?P<node2>[^\s:]{1,300})\s{1,3}Status Message:\s{0,3}(?P<msg2>[^\n]{0,600})"
)
# what a kernel says when the data's shape or an index does not fit: ORT's CPU kernels' recurring words
_SHAPE_WORDS = re.compile(
    r"\b(?:shape|dims?|dimensions?|num_dims|rank|axis|axes|broadcast\w{0,3}|indices|index|idx|out of (?:range|bounds)"
    r"|mismatch\w{0,3}|features?|channels?|(?:\d{1,2}[- ]?)?dimensional|\d-?D|scalar|indices?)\b"
    # two counts compared and found different: "features_per_batch[1] != number of classlabels[5]"
    r"|\w\[-?\d{1,9}\]\s{0,2}!=\s{0,2}\w",
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


# onnxruntime saying a GPU provider is NOT there: the run that failed was on the CPU, so the GPU stack is not involved
_NO_GPU_PROVIDER = re.compile(
    r"Specified provider '\w{1,40}' is not in available provider names|^\s{0,8}\S{0,40}Available providers:"
    r"|\bUserWarning: Specified provider",
    re.IGNORECASE,
)
# ops whose kernels fail on the data's shape even with an empty status message (a C# app shows none)
_SHAPE_OPS = frozenset(
    (
        *("Reshape", "Expand", "Concat", "Split", "Slice", "Gather", "GatherND", "GatherElements", "ScatterND"),
        *("ScatterElements", "Tile", "Squeeze", "Unsqueeze", "Transpose", "Flatten", "Pad", "MatMul", "Gemm", "Where"),
        *("Range", "ConstantOfShape"),
    )
)


def _parts(m: re.Match[str]) -> tuple[str, str, str]:
    """The op, node name and status message of a _STATUS match (an old-format line names the node only)."""
    if m.group("op"):
        return m.group("op"), m.group("node"), m.group("msg") or ""
    return m.group("node2"), m.group("node2"), m.group("msg2") or ""


def _names_gpu_stack(paste: Paste) -> bool:
    """Whether the paste names the GPU stack other than in onnxruntime's warning that a GPU provider is absent."""
    if not _GPU_STACK.search(paste.joined[:200_000]):
        return False
    return any(_GPU_STACK.search(line) and not _NO_GPU_PROVIDER.search(line) for line in paste.lines)


def op_shape_errors(paste: Paste) -> Iterator[Signal]:
    """A node's kernel rejecting the shapes or indices of its data, in a paste that names no GPU library."""
    if "status message" not in paste.lowered or _names_gpu_stack(paste):
        return
    for index, line in enumerate(paste.lines):
        if "Status Message" not in line:
            continue
        m = _STATUS.search(line)
        if m is None:
            continue
        op, node, msg = _parts(m)
        shaped = _SHAPE_WORDS.search(msg) or (not msg.strip() and op in _SHAPE_OPS)
        if not shaped or _GRAPH_VALIDITY.search(msg) or _UNIMPLEMENTED.search(msg):
            continue
        values = {"op": op, "node": node}
        yield Signal(SignalKind.OP_SHAPE_ERROR, index, paste.starts[index] + m.start(), {}, values)
        return


# ---------------------------------------------------------------- a kernel that exists but not for this variant

# what a kernel says when it has no code for this input's rank, type or attribute ("Only 4-D tensor is supported" in
# GridSample), or what ORT says when a node got no kernel at all ("OpKernel was null"): no implementation, not bad data
_UNIMPLEMENTED = re.compile(
    r"\bonly\s{1,3}(?:\d-?D|\d{1,2}[- ]?dimensional|[\w-]{1,20})\s{1,3}(?:tensors?|inputs?)?\s{0,3}"
    r"(?:is|are)\s{1,3}supported"
    r"|\bnot (?:yet )?(?:implemented|supported)\b|\bunsupported\b|\bNOT_IMPLEMENTED\b",
    re.IGNORECASE,
)
_NULL_KERNEL = re.compile(r"OpKernel was null|kernel != nullptr was false|\bKernel not found\b", re.IGNORECASE)
# the GPU EP named, or the CPU said to work ("works on CPU", "CPU正常", "CPU is fine"): the missing code is the GPU's
_GPU_EP = re.compile(
    r"(?:CUDA|Tensorrt|ROCM|MIGraphX|Dml)ExecutionProvider|onnxruntime[-_]gpu|\bon (?:the )?(?:GPU|CUDA)\b"
    r"|(?<![A-Za-z])CPU(?![A-Za-z])[^\n]{0,12}?(?:works?|fine|ok(?:ay)?\b|正常|没问题|可以)"
    r"|\b(?:works?|worked|runs?|ran|fine)\b[^\n]{0,20}?\b(?:on|with) (?:the )?CPU\b",
    re.IGNORECASE,
)
# "... for CUDA", or the kernel named by its EP ("is not supported in GroupQueryAttention cuda kernel")
_KERNEL_FOR = re.compile(
    r"\bfor (?:the )?(?P<ep>CUDA|TensorRT|ROCm|GPU|DirectML)\b|\b(?:CUDA|ROCm|DirectML|DML)\s{1,3}kernels?\b",
    re.IGNORECASE,
)
# a line that starts a new log record, not the rest of a status message the terminal wrapped
_NEW_RECORD = re.compile(r"^\s{0,8}(?:\[?\d{4}-\d\d-\d\d|\[[EWIVF]:|Traceback|File |\w{0,40}(?:Error|Exception)\b)")
# ops whose CPU kernel takes more ranks than a GPU kernel (ORT's CUDA GridSample: "Only 4-D tensor is
# supported", the CPU one says "Only 4-D or 5-D"): that rank limit named by such an op is the GPU kernel's own text
_GPU_RANK_LIMITED = frozenset({"gridsample"})
_RANK_LIMIT = re.compile(r"\bonly\s{1,3}\d-?D\s{1,3}tensors?\s{1,3}(?:is|are)\s{1,3}supported", re.IGNORECASE)


def unimplemented_variants(paste: Paste) -> Iterator[Signal]:
    """A node whose kernel has no code for this variant of its op (a rank, type or mode it does not implement), or
    that got no kernel at all: a missing kernel, on the GPU EP when the paste runs one or says the CPU works."""
    low = paste.lowered
    if "status message" not in low and "nullptr" not in low and "kernel" not in low:
        return
    gpu = bool(_GPU_EP.search(paste.joined[:200_000]))
    for index, line in enumerate(paste.lines):
        m = _STATUS.search(line) if "Status Message" in line else None
        wrapped = False
        if m is None and index > 0 and line.lstrip().startswith("Name:") and "Status Message" in line:
            # "... while running <op> node." wrapped before its "Name:'...' Status Message: ..."
            m = _STATUS.search(f"{paste.lines[index - 1][-200:]} {line}")
            wrapped = m is not None
        null = _NULL_KERNEL.search(line)
        op, node, msg = _parts(m) if m else ("a node", "", "")
        if m is not None and len(msg) < 200 and index + 1 < len(paste.lines):
            following = paste.lines[index + 1]
            if not _NEW_RECORD.match(following):  # the message wrapped after its first words
                msg = f"{msg} {following[:300]}"
        if not null and (m is None or not _UNIMPLEMENTED.search(msg)):
            continue
        named = _KERNEL_FOR.search(msg) if m else None
        rank_limited = bool(m) and op.lower() in _GPU_RANK_LIMITED and bool(_RANK_LIMIT.search(msg))
        on_gpu = gpu or named is not None or rank_limited
        values = {"op": op, "node": node} if m else {"op": "a node"}
        values["ep"] = "the GPU provider" if on_gpu else "the CPU (none named)"
        attributes: dict[str, str | int] = {"ep": "gpu" if on_gpu else "cpu", "op": values["op"]}
        position = paste.starts[index] + (0 if wrapped else m.start() if m else null.start() if null else 0)
        yield Signal(SignalKind.MISSING_KERNEL, index, position, attributes, values)
        return
