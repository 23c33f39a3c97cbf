"""Which inputs are to blame: every open dim at once with the flags that fix it, and the graph inputs behind a node
that failed on generated data."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "FailedNode",
    "NodeCulprits",
    "OpenDim",
    "RunCulprit",
    "describe_open_dims",
    "example_range",
    "example_value",
    "explain_run_failure",
    "failed_node",
    "find_open_dims",
    "trace_to_inputs",
]


# ------------------------------------------------------------------------------------------- open dims


@dataclass(frozen=True)
class OpenDim:
    """A dim of a model input that no flag, data file or default fixes."""

    input: str
    axis: int
    label: str | None  # the symbolic name or expression; None for an unnamed dim
    shape_text: str  # the input's declared shape, e.g. "[1, 3, height, width]"
    names: tuple[str, ...] = ()  # the symbols to bind (the names inside an expression such as "seq*2")


_EXAMPLE_VALUES: tuple[tuple[re.Pattern[str], int], ...] = tuple(
    (re.compile(p, re.IGNORECASE), v)
    for p, v in (
        (r"batch|^bs$|^n$|num_images|num_seq", 1),
        (r"seq|len|token|time|step|frame|past|total|context|position", 128),
        (r"height|width|^h$|^w$|img|image|size|resolution", 224),
        (r"chan|^c$", 3),
        (r"sample|audio|wave|signal", 16000),
    )
)


def _named_value(name: str | None) -> int | None:
    if name:
        for pattern, value in _EXAMPLE_VALUES:
            if pattern.search(name):
                return value
    return None


def example_value(name: str | None) -> int:
    """A plausible value for a symbolic dim, from its name ("seq_len" 128, "height" 224), else 1."""
    value = _named_value(name)
    return 1 if value is None else value


def _positional_value(shape: Sequence[int | str | None], axis: int) -> int:
    """A plausible value for a dim whose name says nothing: image-like [N, C, H, W] inputs get 224 x 224."""
    if len(shape) == 4 and shape[1] in (1, 3) and axis in (2, 3):
        return 224
    dim = shape[axis]
    return example_value(dim if isinstance(dim, str) else None)


def find_open_dims(
    inputs: Iterable[Any],
    bindings: Mapping[str, int],
    evaluate: Callable[[str, Mapping[str, int]], int | None],
    names_of: Callable[[str], list[str]],
    lead_default: int = 1,
) -> tuple[list[OpenDim], dict[str, tuple[int | str | None, ...]]]:
    """Every dim of these inputs (TensorInfo: name, shape, shape_text()) that neither a binding nor an expression
    over the bindings fixes, and the partly known shape of each input with an unnamed open dim.

    A leading dim is never open here: it has a default (1, or the batch setting) before this is asked.
    """
    found: list[OpenDim] = []
    shapes: dict[str, tuple[int | str | None, ...]] = {}
    for info in inputs:
        if not info.has_shape:
            continue
        known: list[int | str | None] = []
        for axis, dim in enumerate(info.shape):
            if isinstance(dim, int):
                known.append(dim)
            elif axis == 0 and dim is None:
                known.append(lead_default)
            elif isinstance(dim, str) and (dim in bindings or evaluate(dim, bindings) is not None):
                known.append(bindings[dim] if dim in bindings else evaluate(dim, bindings))
            else:
                names = tuple(n for n in names_of(dim) if n not in bindings) if isinstance(dim, str) else ()
                found.append(OpenDim(info.name, axis, dim, info.shape_text(), names or ((dim,) if dim else ())))
                known.append(dim)
        if any(d.input == info.name for d in found):
            shapes[info.name] = tuple(known)
    return found, shapes


def describe_open_dims(
    open_dims: Sequence[OpenDim], full_shapes: Mapping[str, tuple[int | str | None, ...]]
) -> tuple[str, str]:
    """One message naming every open dim and one hint with a flag line that fixes them all.

    ``full_shapes`` holds, for inputs with an open dim, the shape with every dim as far as it is known (ints) or
    open (str / None). An input whose open dims are unnamed or have names that say nothing gets ``--shape``;
    the others get ``--dim`` per symbol.
    """
    by_input: dict[str, list[OpenDim]] = {}
    for dim in open_dims:
        by_input.setdefault(dim.input, []).append(dim)
    parts = []
    for name, dims in by_input.items():
        axes = ", ".join(f"dim {d.axis} ({d.label!r})" if d.label else f"dim {d.axis} (unnamed)" for d in dims)
        parts.append(f"input {name!r} {axes} of {dims[0].shape_text}")
    count = len(open_dims)
    message = f"{count} dim{'s' if count != 1 else ''} of the model's inputs {'are' if count != 1 else 'is'} not " + (
        "fixed by any flag: " + "; ".join(parts)
    )
    flags: list[str] = []
    seen: set[str] = set()
    for name, dims in by_input.items():
        if any(d.label is None or _named_value(d.label) is None for d in dims) and name in full_shapes:
            # an unnamed dim, or names that say nothing (`p2o.DynamicDimension.1`): the whole shape is clearer
            shape = full_shapes[name]
            text = "x".join(
                str(d) if isinstance(d, int) else str(_positional_value(shape, a)) for a, d in enumerate(shape)
            )
            flags.append(f"--shape {name}={text}")
            continue
        for dim in dims:
            for symbol in dim.names or ((dim.label,) if dim.label else ()):
                if symbol not in seen:
                    seen.add(symbol)
                    flags.append(f"--dim {symbol}={example_value(symbol)}")
    hint = f"pass {' '.join(flags)} (example values: use your data's sizes)"
    return message, hint


# ------------------------------------------------------------------------------------------- failed nodes

# "Non-zero status code returned while running Range node. Name:'/Range' Status Message: ..."
_FAILED_NODE = re.compile(r"while running (?P<op>\w{1,80}) node\.\s{0,3}Name:\s{0,3}'(?P<node>[^'\n]{0,500})'")
MAX_WALK = 200_000  # nodes visited while walking upstream; a graph larger than this is walked that far


@dataclass(frozen=True)
class FailedNode:
    op: str
    name: str


@dataclass(frozen=True)
class NodeCulprits:
    """The graph inputs the failing node consumes, directly or through other nodes."""

    node: FailedNode
    inputs: tuple[str, ...]  # graph inputs upstream of the node, nearest first
    found_in_graph: bool  # False when the node name is not in the model (a node ORT created, e.g. a fusion)


def failed_node(message: str) -> FailedNode | None:
    """The innermost node ORT names in a run error (a node inside an If/Loop comes after the If)."""
    found = list(_FAILED_NODE.finditer(message))
    if not found:
        return None
    last = found[-1]
    return FailedNode(last.group("op"), last.group("node"))


def trace_to_inputs(model_path: Path, node: FailedNode, graph_inputs: Iterable[str]) -> NodeCulprits:
    """Walk the graph upstream from ``node`` to the graph inputs it depends on (subgraphs included)."""
    import onnx

    model = onnx.load(str(model_path), load_external_data=False)
    wanted = set(graph_inputs)
    located = _locate(model.graph, node.name, ())
    if located is None:
        return NodeCulprits(node, (), False)
    start, parents = located
    order: list[str] = []
    _walk(start, parents, wanted, order)
    return NodeCulprits(node, tuple(order), True)


def _locate(graph: Any, name: str, parents: tuple[Any, ...]) -> tuple[Any, tuple[Any, ...]] | None:
    """The node with this name and the chain of graphs that contain it (innermost last)."""
    chain = (*parents, graph)
    for candidate in graph.node:
        if candidate.name == name:
            return candidate, chain
    for candidate in graph.node:
        for attribute in candidate.attribute:
            for sub in (*([attribute.g] if attribute.HasField("g") else []), *attribute.graphs):
                found = _locate(sub, name, chain)
                if found is not None:
                    return found
    return None


def _walk(start: Any, chain: tuple[Any, ...], wanted: set[str], order: list[str]) -> None:
    """Breadth-first from ``start`` through producers; a name no graph in ``chain`` produces is a graph input."""
    producers = [{out: n for n in g.node for out in n.output if out} for g in chain]
    queue: deque[str] = deque(_consumed(start))
    seen: set[str] = set()
    visited = 0
    while queue and visited < MAX_WALK:
        value = queue.popleft()
        if not value or value in seen:
            continue
        seen.add(value)
        visited += 1
        producer = next((p[value] for p in reversed(producers) if value in p), None)
        if producer is not None:
            queue.extend(_consumed(producer))
        elif value in wanted and value not in order:
            order.append(value)


def _consumed(node: Any) -> list[str]:
    """A node's inputs, plus the outer names its subgraphs read (an If branch reading a graph input)."""
    names = list(node.input)
    for attribute in node.attribute:
        for sub in (*([attribute.g] if attribute.HasField("g") else []), *attribute.graphs):
            produced = {out for n in sub.node for out in n.output} | {i.name for i in sub.input}
            produced |= {t.name for t in sub.initializer}
            names.extend(i for n in sub.node for i in n.input if i and i not in produced)
    return names


# ------------------------------------------------------------------------------------------- run failures


def example_range(name: str, dtype: str) -> str:
    """A plausible ``--range`` for an input that broke a run with generated values."""
    if re.search(r"(?:^|_)sr$|sample_?rate|sampling", name, re.IGNORECASE):
        return "16000,16000"
    if dtype.startswith(("int", "uint")):
        return "1,16"
    return "-1,1"


@dataclass(frozen=True)
class RunCulprit:
    """What to say about a run that failed: the node, the graph inputs behind it, and the flags that fix them."""

    message: str
    hint: str
    generated_only: bool  # every input behind the node was generated by ortgpu (none came from --inputs)


_SHAPE_TROUBLE = re.compile(r"dimension|shape|reshape|broadcast|axis|rank|size mismatch|mismatch", re.IGNORECASE)


def explain_run_failure(
    ort_message: str,
    model_path: Path,
    dtypes: Mapping[str, str],
    sources: Mapping[str, str],
    ranges: Mapping[str, tuple[float, float]],
    shapes: Mapping[str, tuple[int, ...]] | None = None,
) -> RunCulprit | None:
    """Trace the node ORT names back to the graph inputs it consumes; None when the message names no node or the
    node reads no graph input (then there is nothing input-related to say).

    A shape complaint points at the shapes fed (``--shape``); any other failure at the values of generated
    integer inputs (``--range``: sizes, rates, indices drawn from [0, 1]); real data always fits (``--inputs``).
    """
    node = failed_node(ort_message)
    if node is None:
        return None
    traced = trace_to_inputs(model_path, node, dtypes)
    if not traced.inputs:
        return None
    shapes = shapes or {}
    by_shape = bool(_SHAPE_TROUBLE.search(ort_message.split("Status Message:", 1)[-1]))
    described = []
    for name in traced.inputs:
        low, high = ranges.get(name, (0, 0))
        if sources.get(name) == "npz":
            origin = "from --inputs"
        elif by_shape and name in shapes:
            origin = "fed with shape " + "x".join(str(d) for d in shapes[name])
        else:
            origin = f"generated in [{low:g}, {high:g}]"
        described.append(f"{name!r} ({dtypes.get(name, '?')}, {origin})")
    generated = [n for n in traced.inputs if sources.get(n) != "npz"]
    message = (
        f"node {node.name!r} ({node.op}) failed, and it reads the model input"
        f"{'s' if len(traced.inputs) > 1 else ''} {', '.join(described)}: {ort_message}"
    )
    integers = [n for n in generated if dtypes.get(n, "").startswith(("int", "uint"))]
    if not generated:
        hint = "the values in the --inputs file reach this node: check them against what the model expects"
    elif by_shape:
        named = ", ".join(repr(n) for n in generated)
        hint = (
            f"the shape fed to {named} does not fit what this node needs: give the size the model was exported for "
            "(--shape NAME=...), or real data with --inputs FILE.npz"
        )
    elif integers:
        flags = " ".join(f"--range {n}={example_range(n, dtypes[n])}" for n in integers)
        hint = f"give values the model accepts: {flags} (example values), or real data with --inputs FILE.npz"
    else:
        hint = "random values reach this node: run it on real data with --inputs FILE.npz (or narrow --range)"
    return RunCulprit(message, hint, generated_only=len(generated) == len(traced.inputs))
