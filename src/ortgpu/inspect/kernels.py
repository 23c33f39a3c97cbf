"""Which nodes the CUDA EP of the installed onnxruntime takes, asked of ORT itself (no list is kept here).

With a CUDA EP that starts, a session is built on it and ORT's own node placement is read (after its graph
optimisation, exactly as the model will run, with ORT's reason for every node it leaves on the CPU). Without one,
ORT's kernel registry is read in a child process and matched node by node; when that cannot be read either the
answer is "not determined", with the cause, never a guess.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ortgpu.config import Config, Fallback
from ortgpu.ep import ExecutionProvider
from ortgpu.errors import OrtgpuError
from ortgpu.inspect.graph import Inference, domain_name, walk
from ortgpu.inspect.registry import RegistryError, match_node, read_registry
from ortgpu.inspect.result import KernelCoverage, KernelSource, KernelStatus, NodeOffEp
from ortgpu.model.inspect import ModelInfo
from ortgpu.progress import silent
from ortgpu.runtime.guard import import_onnxruntime
from ortgpu.session import ProviderUnavailableError, open_session
from ortgpu.session.providers import missing_from_build_error

if TYPE_CHECKING:  # pragma: no cover
    import onnx

__all__ = ["kernel_coverage", "ort_schema_keys", "registry_coverage"]

CUDA = ExecutionProvider.CUDA.ort_name


def ort_schema_keys() -> frozenset[tuple[str, str]] | None:
    """(domain, op type) of every operator schema onnxruntime knows (ONNX, ONNX-ML and its contrib ops); None
    without onnxruntime. Reading schemas instantiates no EP: it is safe in-process."""
    try:
        import_onnxruntime("reading ORT's operator schemas")
        import onnxruntime.capi._pybind_state as C
    except (OrtgpuError, ImportError):
        return None
    if not hasattr(C, "get_all_operator_schema"):
        return None
    return frozenset((domain_name(s.domain), s.name) for s in C.get_all_operator_schema())


def _opsets(model: onnx.ModelProto) -> dict[str, int]:
    return {domain_name(o.domain): int(o.version) for o in model.opset_import}


def registry_coverage(
    model: onnx.ModelProto,
    inference: Inference,
    provider: str = CUDA,
    reason_prefix: str = "",
    timeout_s: float = 120.0,
) -> KernelCoverage:
    """Match every node (subgraphs included) against ``provider``'s kernel registry; raises RegistryError when
    the registry cannot be read (within ``timeout_s``)."""
    start = time.perf_counter()
    nodes = [item.proto for item in walk(model.graph)]
    registry = read_registry(provider, {(n.domain, n.op_type) for n in nodes}, timeout_s)
    opsets = _opsets(model)
    off = []
    for node in nodes:
        domain = domain_name(node.domain)
        found, detail = match_node(
            registry,
            node.domain,
            node.op_type,
            opsets.get(domain, 1),
            tuple(inference.values.get(name, (None, None))[0] if name else None for name in node.input),
            tuple(inference.values.get(name, (None, None))[0] if name else None for name in node.output),
        )
        if not found:
            off.append(NodeOffEp(node.name, node.op_type, domain, "", "no-kernel", detail))
    return KernelCoverage(
        status=KernelStatus.DETERMINED,
        provider=provider,
        reason=(
            f"{reason_prefix}asked ORT {registry.ort_version}'s kernel registry: each node's op, opset version and "
            "input/output types against the kernels registered for the EP (before graph optimisation)"
        ),
        source=KernelSource.REGISTRY,
        ort_version=registry.ort_version,
        nodes_checked=len(nodes),
        nodes_on_ep=len(nodes) - len(off),
        off_ep=tuple(off),
        seconds=time.perf_counter() - start,
        notes=(
            "the registry says whether a kernel exists; ORT may still keep small shape-computing nodes on the CPU on "
            "purpose and fuses nodes first: a session on the CUDA EP shows exactly what runs where",
        ),
    )


def _session_coverage(info: ModelInfo, model: onnx.ModelProto, config: Config, device_id: int | None) -> KernelCoverage:
    ort = import_onnxruntime("asking ORT's CUDA EP which nodes it takes")

    start = time.perf_counter()
    strict = replace(config, fallback=Fallback.NONE)  # a quiet CPU session would answer for the wrong EP
    with open_session(
        info.path, ExecutionProvider.CUDA, strict, device_id, collect_placement=True, model_info=info
    ) as session:
        placement, note = session.placement, session.placement_note
    seconds = time.perf_counter() - start
    if placement is None:
        return KernelCoverage(
            KernelStatus.NOT_DETERMINED,
            CUDA,
            f"not determined: a CUDA session was built but onnxruntime {ort.__version__} logged no node placement "
            f"({note})",
            ort_version=ort.__version__,
            seconds=seconds,
        )
    domains = {item.proto.name: domain_name(item.proto.domain) for item in walk(model.graph) if item.proto.name}
    off = tuple(
        NodeOffEp(
            n.name,
            n.op_type,
            domains.get(n.name, ""),
            n.provider,
            n.reason.value if n.reason is not None else "unknown",
        )
        for n in placement.off_requested
    )
    return KernelCoverage(
        status=KernelStatus.DETERMINED,
        provider=CUDA,
        reason=(
            f"asked ORT {ort.__version__}: built a session on the CUDA EP and read its node placement (after "
            "graph optimisation: the nodes as they will run, with ORT's reason for each one left on the CPU)"
        ),
        source=KernelSource.SESSION,
        ort_version=ort.__version__,
        nodes_checked=placement.compute_count,
        nodes_on_ep=placement.compute_per_provider.get(CUDA, 0),
        off_ep=off,
        memcpy_count=placement.memcpy_count,
        seconds=seconds,
        notes=(("ORT logged only per-EP counts: every node is on the CUDA EP",) if not placement.names_known else ()),
    )


def kernel_coverage(
    info: ModelInfo,
    model: onnx.ModelProto,
    inference: Inference,
    *,
    config: Config | None = None,
    device_id: int | None = None,
    report: Callable[[str, float | None], None] | None = None,
) -> KernelCoverage:
    """Ask the installed onnxruntime which nodes its CUDA EP takes: a real CUDA session when the EP starts here,
    else its kernel registry (in a child process), else "not determined" with the cause."""
    say = report or silent
    try:
        ort = import_onnxruntime("asking ORT's CUDA EP which nodes it takes")
    except OrtgpuError:
        return KernelCoverage(KernelStatus.NOT_DETERMINED, CUDA, "not determined: onnxruntime is not installed here")

    version = ort.__version__
    if CUDA not in ort.get_available_providers():
        return KernelCoverage(
            KernelStatus.NOT_DETERMINED,
            CUDA,
            f"not determined: CUDA EP not available here ({missing_from_build_error(ExecutionProvider.CUDA).message})",
            ort_version=version,
        )
    say("building a session on the CUDA EP to read its node placement", 0.6)
    try:
        return _session_coverage(info, model, config or Config(), device_id)
    except OrtgpuError as exc:
        failure: Any = exc
    say("asking ORT's kernel registry (child process)", 0.8)
    try:
        return registry_coverage(
            model, inference, CUDA, reason_prefix=f"a CUDA session could not be built ({failure.message}); "
        )
    except RegistryError as exc:
        what = (
            "CUDA EP not available here"
            if isinstance(failure, ProviderUnavailableError)
            else "a CUDA session could not be built"
        )
        return KernelCoverage(
            KernelStatus.NOT_DETERMINED,
            CUDA,
            f"not determined: {what} ({failure.message}); ORT's kernel registry cannot be read without a working "
            f"CUDA EP either (onnxruntime {version} get_all_opkernel_def {exc})",
            ort_version=version,
        )
