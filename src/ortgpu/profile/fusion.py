"""Fusion coverage: the graph as exported against the graph ORT optimised and ran (op types before and after)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortgpu.inspect.graph import DEFAULT_DOMAIN, domain_name, walk
from ortgpu.placement import MEMCPY_OP_TYPES
from ortgpu.profile.result import FusionReport

if TYPE_CHECKING:  # pragma: no cover
    import onnx

__all__ = ["fusion_report", "memcpy_neighbours", "op_counts", "read_graph"]


def _key(node: Any) -> str:
    domain = domain_name(node.domain)
    return node.op_type if domain == DEFAULT_DOMAIN else f"{domain}:{node.op_type}"


def op_counts(model: onnx.ModelProto) -> dict[str, int]:
    """Op type (``domain:op`` outside the ONNX domain) -> nodes, subgraphs included; Memcpy nodes left out."""
    counts = Counter(_key(item.proto) for item in walk(model.graph) if item.proto.op_type not in MEMCPY_OP_TYPES)
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def read_graph(path: Path) -> onnx.ModelProto:
    """The optimised model ORT wrote, without its weights."""
    import onnx

    return onnx.load(str(path), load_external_data=False)


def fusion_report(original: onnx.ModelProto, optimized: onnx.ModelProto | None, why_not: str | None) -> FusionReport:
    """What ORT's graph optimisation changed: nodes before and after, op types removed and created."""
    if optimized is None:
        return FusionReport(False, why_not or "ORT did not write its optimised model")
    before, after = op_counts(original), op_counts(optimized)
    removed = {op: n - after.get(op, 0) for op, n in before.items() if n > after.get(op, 0)}
    created = {op: n - before.get(op, 0) for op, n in after.items() if n > before.get(op, 0)}
    total_before, total_after = sum(before.values()), sum(after.values())
    if removed or created:
        note = f"{total_before} nodes as exported, {total_after} as ORT runs them"
    else:
        note = f"ORT's optimisation left the {total_before} nodes as they were"
    return FusionReport(
        available=True,
        note=note,
        original_nodes=total_before,
        optimized_nodes=total_after,
        original_ops=before,
        optimized_ops=after,
        removed=dict(sorted(removed.items(), key=lambda kv: (-kv[1], kv[0]))),
        created=dict(sorted(created.items(), key=lambda kv: (-kv[1], kv[0]))),
    )


def memcpy_neighbours(optimized: onnx.ModelProto) -> dict[str, tuple[str, str]]:
    """Memcpy node name -> (name, op type) of the node it copies for: the consumer of a MemcpyToHost's output,
    the producer of a MemcpyFromHost's input. Empty when the saved graph holds no Memcpy node."""
    nodes = [item.proto for item in walk(optimized.graph)]
    producers = {out: n for n in nodes for out in n.output if out}
    consumers: dict[str, list[Any]] = {}
    for n in nodes:
        for name in n.input:
            consumers.setdefault(name, []).append(n)
    links: dict[str, tuple[str, str]] = {}
    for n in nodes:
        if n.op_type == "MemcpyToHost":
            target = next((c for c in consumers.get(n.output[0], []) if c.op_type not in MEMCPY_OP_TYPES), None)
        elif n.op_type == "MemcpyFromHost":
            target = producers.get(n.input[0])
        else:
            continue
        if target is not None:
            links[n.name] = (target.name, target.op_type)
    return links
