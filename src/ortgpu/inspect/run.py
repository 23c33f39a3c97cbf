"""`inspect_model_file`: describe a model without running it, and ask ORT which nodes its CUDA EP takes."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ortgpu.config import Config
from ortgpu.inspect import graph
from ortgpu.inspect.kernels import kernel_coverage, ort_schema_keys
from ortgpu.inspect.result import InspectResult, KernelCoverage, KernelStatus
from ortgpu.model.inspect import load_model

__all__ = ["InspectRequest", "inspect_model_file"]

Progress = Callable[[str, float | None], None]


@dataclass(frozen=True)
class InspectRequest:
    """What to inspect. ``kernels`` False skips asking ORT (no session, no child process).

    ``config`` / ``device_id`` shape the CUDA session used to read the placement (its graph optimisation level,
    provider options), so the answer is for the settings the model will run with.
    """

    model: Path
    kernels: bool = True
    config: Config = field(default_factory=Config)
    device_id: int | None = None
    top: int = 10


def _silent(message: str, fraction: float | None = None) -> None:
    """The progress callback used when the caller gives none."""


def inspect_model_file(request: InspectRequest, progress: Progress | None = None) -> InspectResult:
    """Everything about ``request.model`` a deployment asks first; never prints.

    The model is parsed without its external data (sizes come from tensor metadata); a corrupt model, one the
    ONNX checker rejects, or external data that is missing, truncated or outside the model's folder raise
    ModelError (exit 2) before anything else happens. With a config whose ``[model]`` file runs instead (what
    tune writes), that file is inspected, after the same hash checks ``check`` and ``bench`` make.
    """

    report = progress or _silent
    start = time.perf_counter()
    report("reading the model", 0.0)
    info, model = load_model(request.model)
    notes: tuple[str, ...] = ()
    # A tuned config runs its [model] file (fp16 / fused) instead: that file is the one to describe, and one that
    # changed since tune hashed it, or came from another model, is refused (ConfigError, exit 2) as check does.
    run_file = request.config.model_file_for(info.path, info.sha256)
    if run_file != info.path:
        given = info.path
        info, model = load_model(run_file)
        notes = (
            f"inspected the config's [model] file {run_file.name} "
            f"({request.config.model.get('precision', 'fp32')}): it runs instead of {given.name}, which it came from",
        )
    histogram = graph.op_histogram(model)
    subgraphs = graph.subgraphs(model)
    count, total, top = graph.initializers(model, request.top)
    external = graph.external_files(info.path, model, info.external_data)
    report("shape inference", 0.3)
    graph.strip_large_tensors(model)  # nothing below reads weights; inference serialises the graph
    inference = graph.infer_shapes(model)
    inputs, outputs = graph.tensor_reports(info, inference)
    if request.kernels:
        kernels = kernel_coverage(
            info, model, inference, config=request.config, device_id=request.device_id, report=report
        )
    else:
        kernels = KernelCoverage(KernelStatus.SKIPPED, "CUDAExecutionProvider", "skipped on request: ORT was not asked")
    report("done", 1.0)
    return InspectResult(
        path=info.path,
        size_bytes=info.size_bytes,
        sha256=info.sha256,
        ir_version=info.ir_version,
        opsets=info.opsets,
        producer=info.producer,
        graph_name=info.graph_name,
        inputs=inputs,
        outputs=outputs,
        symbolic_dims=graph.symbolic_dims(inputs, outputs),
        shape_inference=inference.note,
        node_count=info.node_count,
        main_graph_nodes=len(model.graph.node),
        op_histogram=histogram,
        custom_ops=graph.custom_ops(histogram, ort_schema_keys()),
        subgraphs=subgraphs,
        initializer_count=count,
        initializer_bytes=total,
        top_initializers=top,
        external_data=external,
        kernels=kernels,
        elapsed_s=time.perf_counter() - start,
        notes=notes,
    )
