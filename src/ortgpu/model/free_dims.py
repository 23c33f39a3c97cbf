"""Free-dimension overrides: which symbolic dims of a model to fix, by name or denotation, for given input shapes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["FixedDims", "fixed_dims_for", "input_dim_labels"]


@dataclass(frozen=True)
class FixedDims:
    """The overrides that pin a model's open dims to the shapes of one set of inputs.

    ``by_name``: symbolic dim name -> value (``free_dims``); ``by_denotation``: denotation -> value for unnamed dims
    that carry one (``free_dim_denotations``). ``unfixed``: open dims no override can reach, e.g. ``"x[1]"`` for an
    unnamed dim without denotation, or a name used with two different values.
    """

    by_name: dict[str, int] = field(default_factory=dict)
    by_denotation: dict[str, int] = field(default_factory=dict)
    unfixed: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.by_name and not self.by_denotation

    @property
    def complete(self) -> bool:
        """Every open dim of every input is pinned."""
        return not self.unfixed

    def session_settings(self, current: Mapping[str, Any] | None = None) -> dict[str, dict[str, int]]:
        """[session] values with these overrides laid over ``current``'s (the config's own win on nothing: the
        values here are the shapes that will be fed)."""
        current = current or {}
        return {
            "free_dims": {**dict(current.get("free_dims") or {}), **self.by_name},
            "free_dim_denotations": {**dict(current.get("free_dim_denotations") or {}), **self.by_denotation},
        }

    def describe(self) -> str:
        parts = [f"{k}={v}" for k, v in self.by_name.items()]
        parts += [f"{k}={v} (denotation)" for k, v in self.by_denotation.items()]
        return ", ".join(parts) or "nothing"


def input_dim_labels(model_path: Path | str) -> dict[str, tuple[Any, ...]]:
    """Per graph input, per dim: its value when fixed, else (dim_param or None, denotation or None).

    Parses the model file without its external data (the weights are not needed for the graph inputs).
    """
    import onnx

    model = onnx.load(str(model_path), load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    labels: dict[str, tuple[Any, ...]] = {}
    for value in model.graph.input:
        if value.name in initializers or not value.type.HasField("tensor_type"):
            continue
        tensor = value.type.tensor_type
        if not tensor.HasField("shape"):
            continue
        dims: list[Any] = []
        for dim in tensor.shape.dim:
            if dim.HasField("dim_value") and dim.dim_value >= 0:
                dims.append(int(dim.dim_value))
            else:
                dims.append((dim.dim_param or None, dim.denotation or None))
        labels[value.name] = tuple(dims)
    return labels


def fixed_dims_for(labels: Mapping[str, tuple[Any, ...]], shapes: Mapping[str, tuple[int, ...]]) -> FixedDims:
    """The overrides that make every open dim of ``labels`` (from :func:`input_dim_labels`) equal to ``shapes``."""
    names: dict[str, set[int]] = {}
    denotations: dict[str, set[int]] = {}
    unreachable: list[str] = []
    for name, dims in labels.items():
        shape = shapes.get(name)
        if shape is None or len(shape) != len(dims):
            continue
        for index, (label, value) in enumerate(zip(dims, shape, strict=True)):
            if isinstance(label, int):
                continue
            param, denotation = label
            if param is not None:
                names.setdefault(param, set()).add(int(value))
            elif denotation is not None:
                denotations.setdefault(denotation, set()).add(int(value))
            else:
                unreachable.append(f"{name}[{index}] (unnamed)")
    by_name = {k: next(iter(v)) for k, v in names.items() if len(v) == 1}
    by_denotation = {k: next(iter(v)) for k, v in denotations.items() if len(v) == 1}
    unfixed = [f"{k} (fed {sorted(v)})" for k, v in names.items() if len(v) > 1]
    unfixed += [f"denotation {k} (fed {sorted(v)})" for k, v in denotations.items() if len(v) > 1]
    return FixedDims(by_name, by_denotation, tuple(unreachable + unfixed))
