"""Engines that compute a model's intermediate tensors: an ONNX Runtime session on an EP (the tensors exposed
as outputs of a copy of the model), or onnx's reference evaluator (numpy, in each tensor's own dtype)."""

from __future__ import annotations

import tempfile
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ortgpu.accuracy.graph import TensorSlot, intermediate_tensors, topological_order, with_outputs
from ortgpu.config import Config
from ortgpu.ep import ExecutionProvider
from ortgpu.model.inspect import inspect_model
from ortgpu.runtime.guard import import_onnxruntime
from ortgpu.session import open_session

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    import onnx

__all__ = ["OrtEngine", "ReferenceEngine", "TensorEngine", "reference_evaluator_available"]


_Engine = TypeVar("_Engine", bound="TensorEngine")


class TensorEngine(ABC):
    """Runs one model on fixed feeds and returns the tensors asked for; a context manager."""

    label: str = ""

    @abstractmethod
    def values(self, slots: Sequence[TensorSlot]) -> dict[str, np.ndarray]:
        """The values of ``slots`` (by tensor name) for the engine's feeds."""

    @abstractmethod
    def outputs(self) -> dict[str, np.ndarray]:
        """The model's own outputs."""

    def close(self) -> None:  # noqa: B027 - engines that hold nothing need not override it
        """Release what the engine holds."""

    def __enter__(self: _Engine) -> _Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class OrtEngine(TensorEngine):
    """An onnxruntime session on ``ep`` per set of tensors asked for, each on a copy of the model whose outputs are
    those tensors. The model is written once (weights as external data) to a private temporary folder; every
    session is a verified one (the EP is proven active, never a quiet CPU run)."""

    def __init__(
        self,
        model: onnx.ModelProto,
        feeds: Mapping[str, Any],
        ep: ExecutionProvider,
        config: Config | None = None,
        device_id: int | None = None,
        ep_options: Mapping[str, str] | None = None,
    ) -> None:
        import onnx

        self._folder = tempfile.TemporaryDirectory(prefix="ortgpu-layers-")
        self._base = onnx.ModelProto()
        self._base.CopyFrom(model)
        self._feeds = dict(feeds)
        self._ep = ep
        self._config = config or Config()
        self._device_id = device_id
        self._ep_options = dict(ep_options or {})
        self._outputs = [o.name for o in model.graph.output]
        onnx.save_model(
            self._base,
            str(Path(self._folder.name) / "base.onnx"),
            save_as_external_data=True,
            all_tensors_to_one_file=True,
            location="weights.bin",
            size_threshold=1024,
        )
        self.label = ep.ort_name
        self.ort_version = ""
        self._types: dict[str, int] | None = None

    def _own_types(self, slots: Sequence[TensorSlot]) -> list[TensorSlot]:
        """``slots`` typed as this engine's model has them (another model's fp32 tensor may be fp16 here)."""
        from dataclasses import replace

        if self._types is None:
            own, _ = intermediate_tensors(self._base, {n: tuple(v.shape) for n, v in self._feeds.items()})
            self._types = {s.name: s.elem_type for s in own}
        types = self._types
        return [
            replace(s, elem_type=types[s.name]) if types.get(s.name, s.elem_type) != s.elem_type else s for s in slots
        ]

    def _run(self, model: onnx.ModelProto, feeds: Sequence[Mapping[str, Any]] | None = None) -> list[list[Any]]:
        """One verified session on ``model``, run on each of ``feeds`` (default: the engine's own)."""
        import onnx

        onnxruntime = import_onnxruntime("comparing a model layer by layer")

        path = Path(self._folder.name) / "exposed.onnx"
        onnx.save_model(model, str(path))
        self.ort_version = onnxruntime.__version__
        info = inspect_model(path, check=False)  # outputs left without shapes on purpose: ORT takes them
        with open_session(path, self._ep, self._config, self._device_id, self._ep_options, model_info=info) as session:
            return [session.run(f) for f in (feeds if feeds is not None else [self._feeds])]

    def values(self, slots: Sequence[TensorSlot]) -> dict[str, np.ndarray]:
        return self.values_for(slots, [self._feeds])[0]

    def values_for(self, slots: Sequence[TensorSlot], feeds: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """``slots`` for each of several feeds, through one session."""
        if not slots:
            return [{} for _ in feeds]
        runs = self._run(with_outputs(self._base, self._own_types(slots)), feeds)
        return [{slot.name: value for slot, value in zip(slots, found, strict=True)} for found in runs]

    def outputs(self) -> dict[str, np.ndarray]:
        return self.outputs_for([self._feeds])[0]

    def outputs_for(self, feeds: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The model's outputs for each of several feeds, through one session."""
        return [dict(zip(self._outputs, found, strict=True)) for found in self._run(self._base, feeds)]

    def close(self) -> None:
        self._folder.cleanup()


def reference_evaluator_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("onnx.reference") is not None


class ReferenceEngine(TensorEngine):
    """onnx's reference evaluator: numpy kernels that compute in each tensor's own dtype (a float16 model really
    rounds, overflows and accumulates in float16). One run gives every tensor; slow on big convolutions."""

    label = "onnx reference evaluator (numpy)"

    def __init__(self, model: onnx.ModelProto, feeds: Mapping[str, Any]) -> None:
        import onnx

        self._model = onnx.ModelProto()
        self._model.CopyFrom(model)
        available = {i.name for i in model.graph.input} | {t.name for t in model.graph.initializer}
        ordered = topological_order(list(self._model.graph.node), available)
        del self._model.graph.node[:]
        self._model.graph.node.extend(ordered)
        self._feeds = dict(feeds)
        self._results: dict[str, Any] | None = None
        self._evaluator_cache: Any = None

    def _evaluator(self) -> Any:
        if self._evaluator_cache is None:
            from onnx.reference import ReferenceEvaluator

            self._evaluator_cache = ReferenceEvaluator(self._model)
        return self._evaluator_cache

    def _all(self) -> dict[str, Any]:
        if self._results is None:
            import numpy as np

            with np.errstate(all="ignore"):
                self._results = dict(self._evaluator().run(None, self._feeds, intermediate=True))
        return self._results

    def values(self, slots: Sequence[TensorSlot]) -> dict[str, np.ndarray]:
        import numpy as np

        results = self._all()
        return {s.name: np.asarray(results[s.name]) for s in slots if s.name in results}

    def outputs(self) -> dict[str, np.ndarray]:
        return self.outputs_for([self._feeds])[0]

    def outputs_for(self, feeds: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The model's outputs for each of several feeds (one evaluator, built once)."""
        import numpy as np

        names = [o.name for o in self._model.graph.output]
        found = []
        for one in feeds:
            with np.errstate(all="ignore"):
                values = self._evaluator().run(None, dict(one))
            found.append({n: np.asarray(v) for n, v in zip(names, values, strict=True)})
        return found
