"""What `ortgpu inspect` found: one frozen result object, rendered as a table, JSON or read by other commands."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

__all__ = [
    "CustomOp",
    "DimUse",
    "ExternalFile",
    "InitializerInfo",
    "InspectResult",
    "KernelCoverage",
    "KernelSource",
    "KernelStatus",
    "NodeOffEp",
    "OpCount",
    "OpOrigin",
    "SubgraphInfo",
    "SymbolicDim",
    "TensorReport",
]

Dim = int | str | None


@dataclass(frozen=True)
class TensorReport:
    """A graph input or output: as declared, and (outputs) as ONNX shape inference completes it.

    ``shape``: int fixed dim, str symbolic dim (name or expression), None unknown; ``has_shape`` False when the
    model declares no shape. ``inferred_shape`` is set only where inference told more than the declaration.
    """

    name: str
    elem_type: str
    dtype: str
    shape: tuple[Dim, ...]
    has_shape: bool = True
    inferred_shape: tuple[Dim, ...] | None = None


@dataclass(frozen=True)
class DimUse:
    """One place a symbolic dim appears: ``tensor[axis]``; ``inferred`` when only shape inference put it there."""

    tensor: str
    axis: int
    expression: str  # the dim as written, e.g. "batch" or "2*seq"
    inferred: bool = False


@dataclass(frozen=True)
class SymbolicDim:
    """A dim name of the inputs, the inputs that share it (one value feeds all), and the outputs it reaches."""

    name: str
    inputs: tuple[DimUse, ...]
    outputs: tuple[DimUse, ...]

    @property
    def shared(self) -> bool:
        return len({u.tensor for u in self.inputs}) > 1


@dataclass(frozen=True)
class OpCount:
    domain: str  # "ai.onnx" for the default domain
    op_type: str
    count: int


class OpOrigin(Enum):
    """Who provides an op outside the ONNX standard."""

    ORT_CONTRIB = "ort-contrib"  # onnxruntime has a schema for it (com.microsoft and friends)
    ONNX_ML = "onnx-ml"  # the ONNX-ML domain
    CUSTOM = "custom"  # onnxruntime has no schema: a custom-op library must be registered
    UNKNOWN = "unknown"  # onnxruntime is not installed here: not asked


@dataclass(frozen=True)
class CustomOp:
    """An op outside the default ONNX domain."""

    domain: str
    op_type: str
    count: int
    origin: OpOrigin


@dataclass(frozen=True)
class SubgraphInfo:
    """A node that carries graphs (If / Loop / Scan, or a custom op's graph attribute)."""

    owner_op: str
    owner_name: str
    owner_index: int  # the owner's position among all nodes, depth first (names may be empty or repeat)
    attribute: str
    node_count: int  # nodes inside, nested subgraphs included
    depth: int  # 1 for a subgraph of the main graph


@dataclass(frozen=True)
class InitializerInfo:
    """An initializer's size from its metadata (dims x element size); its data is never read."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    size_bytes: int | None  # None for strings (their size is in the data)
    location: str | None  # external data file, None when stored in the .onnx


@dataclass(frozen=True)
class ExternalFile:
    """A file holding tensor data next to the model, checked present, whole and inside the model's folder."""

    location: str
    size_bytes: int
    bytes_referenced: int
    tensors: int


class KernelStatus(Enum):
    DETERMINED = "determined"
    NOT_DETERMINED = "not-determined"
    SKIPPED = "skipped"


class KernelSource(Enum):
    """How ORT was asked which nodes the CUDA EP takes."""

    SESSION = "session"  # a session was built on the CUDA EP; ORT's own node placement was read
    REGISTRY = "registry"  # ORT's kernel registry, matched against each node's op, opset and types


@dataclass(frozen=True)
class NodeOffEp:
    """A node that will not run on the CUDA EP, and why (ORT's reason, or what the registry lacks)."""

    name: str
    op_type: str
    domain: str
    provider: str  # where ORT puts it (session), or "" when only the registry was asked
    reason: str  # "no-kernel", "cpu-preferred", "unknown"
    detail: str | None = None


@dataclass(frozen=True)
class KernelCoverage:
    """Which nodes the CUDA EP of the installed onnxruntime has a kernel for, asked of ORT before any run."""

    status: KernelStatus
    provider: str
    reason: str  # how it was determined, or why it was not
    source: KernelSource | None = None
    ort_version: str | None = None
    nodes_checked: int = 0
    nodes_on_ep: int = 0
    off_ep: tuple[NodeOffEp, ...] = ()
    memcpy_count: int | None = None
    seconds: float = 0.0
    notes: tuple[str, ...] = ()

    @property
    def off_by_op(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for node in self.off_ep:
            counts[node.op_type] = counts.get(node.op_type, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


@dataclass(frozen=True)
class InspectResult:
    """Everything `ortgpu inspect` learned about a model, without running it (unless a CUDA session was built)."""

    path: Path
    size_bytes: int
    sha256: str
    ir_version: int
    opsets: dict[str, int]
    producer: str
    graph_name: str
    inputs: tuple[TensorReport, ...]
    outputs: tuple[TensorReport, ...]
    symbolic_dims: tuple[SymbolicDim, ...]
    shape_inference: str  # what inference did, or why it could not
    node_count: int  # subgraph nodes included
    main_graph_nodes: int
    op_histogram: tuple[OpCount, ...]
    custom_ops: tuple[CustomOp, ...]
    subgraphs: tuple[SubgraphInfo, ...]
    initializer_count: int
    initializer_bytes: int
    top_initializers: tuple[InitializerInfo, ...]
    external_data: tuple[ExternalFile, ...]
    kernels: KernelCoverage
    elapsed_s: float
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def subgraph_counts(self) -> dict[str, int]:
        """Op type -> nodes carrying subgraphs (an If with two branches counts once)."""
        owners = {(sub.owner_index, sub.owner_op) for sub in self.subgraphs}
        counts: dict[str, int] = {}
        for _, op in sorted(owners):
            counts[op] = counts.get(op, 0) + 1
        return counts

    @property
    def external_bytes(self) -> int:
        return sum(f.size_bytes for f in self.external_data)
