"""Which engine can validate an fp16 model honestly on the requested EP: ONNX Runtime when it computes the fp16
nodes in fp16, onnx's reference evaluator when ORT would quietly compute them in fp32 (the CPU EP)."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortgpu.accuracy.engines import OrtEngine, ReferenceEngine, TensorEngine
from ortgpu.config import Config, ExecutionProvider
from ortgpu.runtime.guard import import_onnxruntime

if TYPE_CHECKING:  # pragma: no cover
    import onnx

__all__ = ["EngineChoice", "EngineKind", "choose_engine", "open_engine", "upcast_nodes"]

# ORT's InsertCastTransformer names the Casts it adds around fp16 nodes an EP has no fp16 kernel for.
_INSERTED_CAST = "InsertedPrecisionFreeCast_"


class EngineKind(Enum):
    ORT = "onnxruntime"
    REFERENCE = "onnx-reference"


@dataclass(frozen=True)
class EngineChoice:
    kind: EngineKind
    label: str  # "CUDAExecutionProvider (onnxruntime 1.31.1)", "onnx reference evaluator (numpy float16)"
    reason: str  # why this engine validated the model
    upcast: tuple[str, ...] = ()  # nodes ORT would compute in fp32 on the EP for lack of an fp16 kernel


def upcast_nodes(
    model: onnx.ModelProto, ep: ExecutionProvider, config: Config, device_id: int | None, ep_options: Mapping[str, str]
) -> tuple[str, ...]:
    """Nodes of the fp16 ``model`` that ORT runs in fp32 on ``ep``: it wraps them in Casts it names
    ``InsertedPrecisionFreeCast_*`` (read from the graph ORT writes after partitioning, optimisations off)."""
    import onnx

    ort = import_onnxruntime("validating an fp16 model")

    from ortgpu.session.options import provider_chain

    names, options = provider_chain(ep, config, ep_options, device_id)
    copy = onnx.ModelProto()
    copy.CopyFrom(model)  # saving with external data empties the tensors of the proto it is given
    with tempfile.TemporaryDirectory(prefix="ortgpu-fp16-") as folder:
        source = Path(folder) / "model.onnx"
        onnx.save_model(copy, str(source), save_as_external_data=True, location="model.data", size_threshold=1024)
        written = Path(folder) / "partitioned.onnx"
        session_options = ort.SessionOptions()
        session_options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        session_options.optimized_model_filepath = str(written)
        session_options.log_severity_level = 3
        ort.InferenceSession(str(source), session_options, providers=names, provider_options=options)
        partitioned = onnx.load(str(written), load_external_data=False)
    inserted = {out for n in partitioned.graph.node if n.name.startswith(_INSERTED_CAST) for out in n.output}
    return tuple(
        n.name
        for n in partitioned.graph.node
        if not n.name.startswith(_INSERTED_CAST) and any(i in inserted for i in n.input)
    )


def choose_engine(
    model: onnx.ModelProto,
    ep: ExecutionProvider,
    config: Config,
    device_id: int | None = None,
    ep_options: Mapping[str, str] | None = None,
) -> EngineChoice:
    """ORT on ``ep`` unless that is the CPU EP and it lacks fp16 kernels for some nodes: then the reference
    evaluator, which computes float16 tensors in float16. A GPU EP is always validated by ORT itself (it is what
    will run the model), with the nodes it runs in fp32 named."""
    ort = import_onnxruntime("validating an fp16 model")

    ep_options = dict(ep_options or {})
    lifted = upcast_nodes(model, ep, config, device_id, ep_options)
    version = ort.__version__
    if ep is ExecutionProvider.CPU and lifted:
        shown = ", ".join(lifted[:4]) + (f" and {len(lifted) - 4} more" if len(lifted) > 4 else "")
        return EngineChoice(
            EngineKind.REFERENCE,
            "onnx reference evaluator (numpy, float16 tensors computed in float16)",
            f"the CPU EP of onnxruntime {version} has no fp16 kernel for {len(lifted)} node(s) ({shown}) and would "
            "run them in fp32 (its InsertCastTransformer), hiding any fp16 overflow; the reference evaluator "
            "computes them in fp16",
            lifted,
        )
    reason = f"{ep.ort_name} of onnxruntime {version}, the EP the model is for"
    if lifted:
        reason += f"; it runs {len(lifted)} node(s) in fp32 for lack of an fp16 kernel, as it will in deployment"
    return EngineChoice(EngineKind.ORT, f"{ep.ort_name} (onnxruntime {version})", reason, lifted)


def open_engine(
    choice: EngineChoice,
    model: onnx.ModelProto,
    feeds: Mapping[str, Any],
    ep: ExecutionProvider,
    config: Config,
    device_id: int | None = None,
    ep_options: Mapping[str, str] | None = None,
) -> TensorEngine:
    """The engine ``choice`` names, on ``model`` with ``feeds``."""
    if choice.kind is EngineKind.REFERENCE:
        engine: TensorEngine = ReferenceEngine(model, feeds)
    else:
        engine = OrtEngine(model, feeds, ep, config, device_id, ep_options)
    engine.label = choice.label
    return engine
