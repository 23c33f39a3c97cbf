"""Which nodes must stay fp32: rules read from the fp32 run's measured tensor ranges, the layer-wise divergence of
the fp16 model, and the normalisation chains of the graph (never from a list of model names)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from ortgpu.accuracy.graph import consumers_of, producers_of

if TYPE_CHECKING:  # pragma: no cover
    import onnx

    from ortgpu.accuracy.layerwise import TensorComparison

__all__ = [
    "FP16_MAX",
    "FP16_SMALLEST",
    "OVERFLOW_MARGIN",
    "ChainGroup",
    "KeepRule",
    "KeptNode",
    "TensorRange",
    "chain_groups",
    "chain_rule",
    "divergence_rule",
    "overflow_failures",
    "range_rule",
]

FP16_MAX = 65504.0
FP16_SMALLEST = 2.0**-24  # the smallest fp16 subnormal: anything below rounds to 0
OVERFLOW_MARGIN = 0.5  # a tensor whose fp32 range reaches half of FP16_MAX is at risk: fp16 rounding and
# accumulation in fp16 push values further than the fp32 run shows

_REDUCTIONS = frozenset({"ReduceMean", "ReduceSum", "ReduceSumSquare", "ReduceL2", "ReduceL1", "ReduceLogSumExp"})
# ops a normalisation statistic flows through between its reduction and the node that applies it
_ELEMENTWISE = frozenset(
    {"Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Reciprocal", "Exp", "Log", "Neg", "Abs", "Clip", "Max", "Min",
     "Identity", "Cast", "Expand", "Unsqueeze", "Squeeze", "Reshape"}
)  # fmt: skip
_CHAIN_FORWARD_STEPS = 6
_CHAIN_BACKWARD_STEPS = 4


class KeepRule(Enum):
    ASKED = "asked"  # named by the user
    CONVERTER = "converter"  # an op type ORT's converter always leaves in fp32
    OVERFLOW = "overflow"  # makes or reads a tensor whose fp32 values reach fp16's limit
    UNDERFLOW = "underflow"  # makes or reads a tensor whose every non-zero fp32 value rounds to 0 in fp16
    CHAIN = "chain"  # belongs to a normalisation chain with a kept node: kept whole
    DIVERGENCE = "divergence"  # the fp16 model first departs from fp32 at this node (layer-wise)
    FEEDS_DIVERGENCE = "feeds-divergence"  # feeds a kept node that still departs: its fp16 input loses too much


@dataclass(frozen=True)
class KeptNode:
    """One node on the keep-list, and why (the measured number that put it there)."""

    name: str
    op_type: str
    rule: KeepRule
    reason: str
    iteration: int  # the attempt after which it was added (0: before the first conversion)


@dataclass(frozen=True)
class TensorRange:
    """A tensor's values in the fp32 run, over every sample."""

    name: str
    max_abs: float | None  # largest finite |x|
    min_nonzero: float | None  # smallest non-zero |x|
    nonfinite: int = 0


@dataclass(frozen=True)
class ChainGroup:
    """A normalisation chain: a reduction whose statistic is applied back to the tensor it came from
    (LayerNorm's variance, RMSNorm, L2-normalise, a decomposed Softmax, mean-centring)."""

    nodes: tuple[str, ...]  # node names in graph order
    reduction: str
    applied_by: str

    def text(self, ops: Mapping[str, str]) -> str:
        return " -> ".join(ops.get(n, "?") for n in self.nodes)


def _node_ops(model: onnx.ModelProto) -> dict[str, str]:
    return {n.name: n.op_type for n in model.graph.node}


def range_rule(
    model: onnx.ModelProto, ranges: Mapping[str, TensorRange], kept: Iterable[str], iteration: int
) -> dict[str, KeptNode]:
    """Nodes that make or read a tensor whose fp32 values reach OVERFLOW_MARGIN x 65504, or whose non-zero values
    all lie below fp16's smallest subnormal (they would all become 0). Both sides of such a tensor stay fp32 so it
    never exists in fp16."""
    producers, consumers = producers_of(model), consumers_of(model)
    kept = set(kept)
    found: dict[str, KeptNode] = {}
    limit = OVERFLOW_MARGIN * FP16_MAX
    for name, measured in ranges.items():
        largest = measured.max_abs
        if largest is None or largest == 0.0:
            continue
        if largest >= limit:
            rule, what = KeepRule.OVERFLOW, f"up to {largest:.4g} in fp32 (fp16 ends at 65504)"
        elif largest < FP16_SMALLEST:
            rule, what = KeepRule.UNDERFLOW, f"at most {largest:.3g} in fp32: every value rounds to 0 in fp16"
        else:
            continue
        producer = producers.get(name)
        if producer is not None and producer.name not in kept and producer.name not in found:
            found[producer.name] = KeptNode(producer.name, producer.op_type, rule, f"makes {name!r}, {what}", iteration)
        for consumer in consumers.get(name, []):
            if consumer.name not in kept and consumer.name not in found:
                found[consumer.name] = KeptNode(
                    consumer.name, consumer.op_type, rule, f"reads {name!r}, {what}", iteration
                )
    return found


def chain_groups(model: onnx.ModelProto) -> list[ChainGroup]:
    """Every normalisation chain in the graph, found from its structure: a reduction R of tensor s, whose result
    flows through elementwise ops (at most 6) into a node D that also reads s or a tensor s was made from (at
    most 4 elementwise steps back). The chain is every node on those paths."""
    producers, consumers = producers_of(model), consumers_of(model)
    groups: list[ChainGroup] = []
    seen: set[tuple[str, ...]] = set()
    order = {n.name: i for i, n in enumerate(model.graph.node)}
    for reduction in model.graph.node:
        if reduction.op_type not in _REDUCTIONS or not reduction.input:
            continue
        source = reduction.input[0]
        # s and what it was made from: tensor -> the nodes between it and s
        ancestry: dict[str, list[str]] = {source: []}
        frontier = [source]
        for _ in range(_CHAIN_BACKWARD_STEPS):
            step = []
            for tensor in frontier:
                maker = producers.get(tensor)
                if maker is None or maker.op_type not in _ELEMENTWISE or not maker.input:
                    continue
                upstream = maker.input[0]
                if upstream not in ancestry:
                    ancestry[upstream] = [maker.name, *ancestry[tensor]]
                    step.append(upstream)
            frontier = step
        found = _apply_point(reduction, ancestry, consumers)
        if found is None:
            continue
        path, applier, via = found
        nodes = tuple(sorted({*ancestry[via], reduction.name, *path, applier.name}, key=lambda n: order.get(n, 0)))
        if nodes not in seen:
            seen.add(nodes)
            groups.append(ChainGroup(nodes, reduction.name, applier.name))
    return groups


def _apply_point(
    reduction: Any, ancestry: Mapping[str, list[str]], consumers: Mapping[str, list[Any]]
) -> tuple[list[str], Any, str] | None:
    """Walk forward from the reduction to the first node that reads the statistic and a tensor of ``ancestry``."""
    frontier: list[tuple[str, list[str]]] = [(out, []) for out in reduction.output if out]
    for _ in range(_CHAIN_FORWARD_STEPS):
        step: list[tuple[str, list[str]]] = []
        for tensor, path in frontier:
            for user in consumers.get(tensor, []):
                if user.op_type not in _ELEMENTWISE:
                    continue
                others = [i for i in user.input if i and i != tensor]
                via = next((i for i in others if i in ancestry), None)
                if via is not None and user.name != reduction.name:
                    return path, user, via
                step.extend((out, [*path, user.name]) for out in user.output if out)
        frontier = step
    return None


def chain_rule(
    model: onnx.ModelProto, groups: Sequence[ChainGroup], kept: Mapping[str, KeptNode], iteration: int
) -> dict[str, KeptNode]:
    """Every node of a chain that has a kept node: a statistic half in fp32 and half in fp16 only moves the
    overflow or the rounding to the next node of the chain."""
    ops = _node_ops(model)
    found: dict[str, KeptNode] = {}
    for group in groups:
        anchor = next((n for n in group.nodes if n in kept), None)
        if anchor is None:
            continue
        for name in group.nodes:
            if name not in kept and name not in found:
                reason = f"in the normalisation chain {group.text(ops)} with kept node {anchor!r}"
                found[name] = KeptNode(name, ops.get(name, "?"), KeepRule.CHAIN, reason, iteration)
    return found


def divergence_rule(
    model: onnx.ModelProto, roots: Sequence[TensorComparison], kept: Mapping[str, KeptNode], iteration: int
) -> dict[str, KeptNode]:
    """The nodes where the fp16 model first departs from fp32 (layer-wise roots). A root whose node is kept
    already departs because of what it reads in fp16: walking up through kept nodes, the first nodes that are not
    kept (the ones that still make those tensors in fp16) are kept instead."""
    producers = producers_of(model)
    by_name = {n.name: n for n in model.graph.node}
    found: dict[str, KeptNode] = {}
    for root in roots:
        node = by_name.get(root.node_name)
        if node is None:
            continue
        numbers = _departure(root)
        if node.name not in kept:
            if node.name not in found:
                reason = f"the fp16 model departs from fp32 here first: {root.name!r} {numbers}"
                found[node.name] = KeptNode(node.name, node.op_type, KeepRule.DIVERGENCE, reason, iteration)
            continue
        for maker, tensor in _fp16_feeders(node, producers, kept):
            if maker.name not in found:
                reason = (
                    f"makes {tensor!r}, which reaches kept node {node.name!r} in fp16; {node.name!r} still departs "
                    f"{numbers}"
                )
                found[maker.name] = KeptNode(maker.name, maker.op_type, KeepRule.FEEDS_DIVERGENCE, reason, iteration)
    return found


def _fp16_feeders(node: Any, producers: Mapping[str, Any], kept: Mapping[str, KeptNode]) -> list[tuple[Any, str]]:
    """The nearest nodes upstream of ``node`` that are not kept, through any number of kept ones."""
    found: list[tuple[Any, str]] = []
    seen = {node.name}
    frontier = [node]
    while frontier:
        step = []
        for current in frontier:
            for tensor in current.input:
                maker = producers.get(tensor)
                if maker is None or maker.name in seen:
                    continue
                seen.add(maker.name)
                if maker.name in kept:
                    step.append(maker)
                else:
                    found.append((maker, tensor))
        frontier = step
    return found


def _departure(root: TensorComparison) -> str:
    if root.nonfinite and not root.reference_nonfinite:
        return f"has {root.nonfinite} NaN/Inf where fp32 has numbers"
    parts = []
    if root.max_abs is not None:
        parts.append(f"max abs error {root.max_abs:.3g}")
    if root.reference_max_abs is not None:
        parts.append(f"values up to {root.reference_max_abs:.3g}")
    if root.cosine is not None:
        parts.append(f"cosine {root.cosine:.4f}")
    return "(" + ", ".join(parts) + ")"


def overflow_failures(model: onnx.ModelProto, ranges: Mapping[str, TensorRange], kept: Iterable[str]) -> list[str]:
    """Tensors whose fp32 values pass 65504 and that the converted model still holds in fp16 somewhere (made by a
    node that is not kept, or read by one): one line each."""
    producers, consumers = producers_of(model), consumers_of(model)
    kept = set(kept)
    lines = []
    for name, measured in ranges.items():
        if measured.max_abs is None or measured.max_abs <= FP16_MAX:
            continue
        producer = producers.get(name)
        made_fp16 = producer is not None and producer.name not in kept
        read_fp16 = [c.name for c in consumers.get(name, []) if c.name not in kept]
        if made_fp16 or read_fp16:
            where = f"made by {producer.name!r}" if made_fp16 and producer is not None else f"read by {read_fp16[0]!r}"
            lines.append(
                f"tensor {name!r} reaches {measured.max_abs:.4g} in the fp32 run, past fp16's 65504, and is fp16 "
                f"in the converted model ({where})"
            )
    return lines
