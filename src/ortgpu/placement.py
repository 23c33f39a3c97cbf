"""Which execution provider each node runs on, read from ORT's own verbose log or profiling output."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import Any

__all__ = [
    "MEMCPY_OP_TYPES",
    "OffReason",
    "PlacedNode",
    "PlacementReport",
    "PlacementSource",
    "build_report",
    "parse_off_reasons",
    "parse_profile",
    "parse_profile_file",
    "parse_verbose_log",
]

# The copy nodes ORT inserts between a device EP and the CPU EP (onnxruntime/core/optimizer/transformer_memcpy.cc).
MEMCPY_OP_TYPES = frozenset({"MemcpyToHost", "MemcpyFromHost"})

# session_state.cc, VerifyEachNodeIsAssignedToAnEp: "Node placements", then either one line
# " All nodes placed on [EP]. Number of nodes: N" or, per EP, " Node(s) placed on [EP]. Number of nodes: N"
# followed by one "  OpType (node name)" line per node (subgraph nodes included).
_LOG_MARKER = "VerifyEachNodeIsAssignedToAnEp]"
_ALL_ON = re.compile(r"^\s*All nodes placed on \[(?P<ep>[^\]]+)\]\. Number of nodes: (?P<n>\d+)")
_SOME_ON = re.compile(r"^\s*Node\(s\) placed on \[(?P<ep>[^\]]+)\]\. Number of nodes: (?P<n>\d+)")
_NODE = re.compile(r"^\s+(?P<op>\S+) \((?P<name>.*)\)\s*$")
# Why a node left the device EP, as ORT logs it at INFO while partitioning (EP GetCapability and
# fallback_cpu_capability.cc). The first names nodes the EP cannot run; the second nodes ORT keeps on CPU on purpose.
_NO_KERNEL = re.compile(r"kernel not found in registries for Op type: (?P<op>\S+) node name: (?P<name>.*?)\s*$")
_CPU_PREFERRED = re.compile(r"Force fallback to CPU execution for node: (?P<name>.*?)(?: because .*)?\s*$")


class OffReason(Enum):
    """Why a compute node is not on the requested EP, from ORT's own partitioning log."""

    NO_KERNEL = "no-kernel"  # the EP has no kernel for this op / type / opset: a real fallback
    CPU_PREFERRED = "cpu-preferred"  # ORT kept it on CPU on purpose: it computes shapes, cheaper there than a copy
    UNKNOWN = "unknown"  # ORT logged no reason (e.g. an EP that rejects the node for its attributes)


class PlacementSource(Enum):
    LOG = "log"  # the session's verbose log at creation: every node, subgraphs included, whether it runs or not
    PROFILE = "profile"  # ORT profiling of one run: only the nodes that ran


@dataclass(frozen=True)
class PlacedNode:
    name: str
    op_type: str
    provider: str  # as ORT names it: "CUDAExecutionProvider"
    reason: OffReason | None = None  # set for compute nodes off the requested EP

    @property
    def is_memcpy(self) -> bool:
        return self.op_type in MEMCPY_OP_TYPES


@dataclass(frozen=True)
class PlacementReport:
    """Where the nodes of one session run, counted per EP, compute nodes apart from the Memcpy nodes ORT added.

    ``names_known`` is False when ORT only logged "All nodes placed on [EP]" (it lists no names then; nothing
    can be off the requested EP in that case). ``complete`` is False for a profile, which only sees nodes that ran.
    """

    requested_provider: str
    source: PlacementSource
    node_count: int
    compute_count: int
    memcpy_count: int
    compute_per_provider: dict[str, int]
    off_requested: tuple[PlacedNode, ...]  # compute nodes that did not land on the requested EP
    memcpy_nodes: tuple[PlacedNode, ...]
    names_known: bool
    complete: bool
    off_reasons: dict[str, int] = field(default_factory=dict)  # OffReason value -> nodes off the EP for it

    @property
    def all_on_requested(self) -> bool:
        return not self.off_requested and self.compute_per_provider.get(self.requested_provider, 0) == (
            self.compute_count
        )

    @property
    def off_requested_count(self) -> int:
        return self.compute_count - self.compute_per_provider.get(self.requested_provider, 0)

    def summary(self) -> str:
        """One line, e.g. "152/155 compute nodes on CUDAExecutionProvider, 3 on CPU, 4 Memcpy"."""
        on = self.compute_per_provider.get(self.requested_provider, 0)
        others = ", ".join(
            f"{count} on {_short(ep)}"
            for ep, count in sorted(self.compute_per_provider.items())
            if ep != self.requested_provider
        )
        text = f"{on}/{self.compute_count} compute nodes on {self.requested_provider}"
        if others:
            text += f", {others}"
        text += f", {self.memcpy_count} Memcpy"
        if self.off_reasons:
            text += " (off the EP: " + ", ".join(f"{n} {r}" for r, n in sorted(self.off_reasons.items())) + ")"
        if not self.complete:
            text += " (nodes that ran)"
        return text


def _short(provider: str) -> str:
    return provider.removesuffix("ExecutionProvider") or provider


def build_report(
    nodes: Sequence[PlacedNode],
    requested_provider: str,
    source: PlacementSource,
    *,
    unnamed_counts: Mapping[str, int] | None = None,
    reasons: Mapping[str, OffReason] | None = None,
) -> PlacementReport:
    """Count ``nodes`` (and nodes known only by count per EP, ``unnamed_counts``) against the requested EP.

    ``reasons`` maps node names to why ORT put them elsewhere; nodes off the EP without one get UNKNOWN.
    """
    reasons = reasons or {}
    nodes = [
        replace(n, reason=reasons.get(n.name, OffReason.UNKNOWN))
        if n.provider != requested_provider and not n.is_memcpy and n.reason is None
        else n
        for n in nodes
    ]
    compute = [n for n in nodes if not n.is_memcpy]
    memcpy = [n for n in nodes if n.is_memcpy]
    per_provider: Counter[str] = Counter(n.provider for n in compute)
    for provider, count in (unnamed_counts or {}).items():
        per_provider[provider] += count
    unnamed_total = sum((unnamed_counts or {}).values())
    return PlacementReport(
        requested_provider=requested_provider,
        source=source,
        node_count=len(nodes) + unnamed_total,
        compute_count=len(compute) + unnamed_total,
        memcpy_count=len(memcpy),
        compute_per_provider=dict(sorted(per_provider.items())),
        off_requested=tuple(n for n in compute if n.provider != requested_provider),
        memcpy_nodes=tuple(memcpy),
        names_known=not unnamed_total,
        complete=source is PlacementSource.LOG,
        off_reasons=dict(Counter(n.reason.value for n in compute if n.provider != requested_provider and n.reason)),
    )


def parse_off_reasons(log_text: str) -> dict[str, OffReason]:
    """Node name -> why ORT did not place it on the device EP, from the INFO lines it logs while partitioning."""
    reasons: dict[str, OffReason] = {}
    for line in log_text.splitlines():
        if match := _NO_KERNEL.search(line):
            reasons[match["name"]] = OffReason.NO_KERNEL
        elif match := _CPU_PREFERRED.search(line):
            reasons.setdefault(match["name"], OffReason.CPU_PREFERRED)
    return reasons


def _messages(log_text: str, logid: str | None) -> list[str]:
    """The placement messages of one session's log, stripped of ORT's line prefix."""
    out = []
    tag = f":{logid}," if logid else None
    for line in log_text.splitlines():
        marker = line.find(_LOG_MARKER)
        if marker < 0 or (tag is not None and tag not in line[:marker]):
            continue
        out.append(line[marker + len(_LOG_MARKER) :].removeprefix(" "))
    return out


def parse_verbose_log(log_text: str, requested_provider: str, logid: str | None = None) -> PlacementReport | None:
    """Placement from the verbose log ORT writes while it builds a session (``log_severity_level = 0``).

    ``logid`` keeps only the lines of the session whose ``SessionOptions.logid`` it is. None when the log
    holds no placement block (session built without verbose logging, or a minimal ORT build).
    """
    blocks: list[tuple[list[PlacedNode], dict[str, int]]] = []
    current: tuple[list[PlacedNode], dict[str, int]] | None = None
    provider: str | None = None
    for message in _messages(log_text, logid):
        if message.strip() == "Node placements":
            current = ([], {})
            blocks.append(current)
            provider = None
            continue
        if current is None:
            continue
        if match := _ALL_ON.match(message):
            current[1][match["ep"]] = int(match["n"])
        elif match := _SOME_ON.match(message):
            provider = match["ep"]
        elif (match := _NODE.match(message)) and provider is not None:
            current[0].append(PlacedNode(name=match["name"], op_type=match["op"], provider=provider))
    if not blocks:
        return None
    # One block per session; should a build log twice, the fullest block is the whole graph.
    nodes, unnamed = max(blocks, key=lambda b: len(b[0]) + sum(b[1].values()))
    return build_report(
        nodes, requested_provider, PlacementSource.LOG, unnamed_counts=unnamed, reasons=parse_off_reasons(log_text)
    )


def parse_profile(events: Iterable[Mapping[str, Any]], requested_provider: str) -> PlacementReport | None:
    """Placement from ORT profiling events: every "Node" event of a kernel carries ``args.provider``.

    Nodes in If/Loop/Scan subgraphs appear when they ran; a Loop body that ran ten times counts once.
    None when the profile holds no node event.
    """
    seen: dict[tuple[str, str, str], PlacedNode] = {}
    for event in events:
        if event.get("cat") != "Node":
            continue
        name = str(event.get("name", ""))
        if not name.endswith("_kernel_time"):
            continue
        args = event.get("args") or {}
        provider, op_type = args.get("provider"), args.get("op_name")
        if not provider or not op_type:
            continue
        node = PlacedNode(name=name.removesuffix("_kernel_time"), op_type=str(op_type), provider=str(provider))
        seen.setdefault((node.name, node.op_type, node.provider), node)
    if not seen:
        return None
    return build_report(list(seen.values()), requested_provider, PlacementSource.PROFILE)


def parse_profile_file(path: Path, requested_provider: str) -> PlacementReport | None:
    """:func:`parse_profile` on the JSON file ``InferenceSession.end_profiling()`` wrote."""
    events = json.loads(Path(path).read_text(encoding="utf-8"))
    if isinstance(events, dict):  # some writers wrap the list: {"traceEvents": [...]}
        events = events.get("traceEvents", [])
    return parse_profile(events, requested_provider)
