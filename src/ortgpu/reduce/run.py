"""`run_reduce`: bisect a failing model to the smallest subgraph that still fails (Polygraphy's reduce idea: cut
the outputs, then the inputs, with onnx.utils.Extractor; intermediate tensors made inputs are fed from a
reference run), and write it with the steps taken."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortgpu.accuracy.dataset import load_dataset
from ortgpu.accuracy.engines import OrtEngine
from ortgpu.accuracy.graph import TensorSlot, intermediate_tensors, load_model, name_unnamed_nodes, topological_order
from ortgpu.atomic import atomic_write, atomic_write_bytes
from ortgpu.config import load_config
from ortgpu.ep import ExecutionProvider
from ortgpu.errors import BadInputError
from ortgpu.model.inputs import InputSpec
from ortgpu.model.inspect import inspect_model
from ortgpu.output_paths import check_outputs
from ortgpu.progress import silent
from ortgpu.reduce.conditions import Condition, ConditionKind, Outcome, condition_for

if TYPE_CHECKING:  # pragma: no cover
    import onnx

__all__ = ["ReduceError", "ReduceRequest", "ReduceResult", "Step", "run_reduce"]

Progress = Callable[[str, "float | None"], None]


class ReduceError(BadInputError):
    """A reduction that cannot be asked for (exit 2)."""


@dataclass(frozen=True)
class ReduceRequest:
    """``condition``: what failing means (see ConditionKind). ``output``: where the smallest failing subgraph is
    written (atomically); ``save_inputs``: an .npz of the feeds that make it fail. ``rtol`` / ``atol_scale``: the
    check condition's tolerance (atol = atol_scale x max(1, largest |CPU value|))."""

    model: Path
    output: Path
    condition: ConditionKind = ConditionKind.NONFINITE
    ep: ExecutionProvider = ExecutionProvider.CPU
    config: Path | None = None
    device_id: int | None = None
    inputs: InputSpec | None = None
    save_inputs: Path | None = None
    rtol: float = 1e-2
    atol_scale: float = 1e-2


@dataclass(frozen=True)
class Step:
    """One candidate tried: which phase, which nodes (topological positions), and what the condition said."""

    phase: str  # "whole", "outputs", "inputs", "result"
    first: int
    last: int
    nodes: int
    fails: bool
    detail: str


@dataclass(frozen=True)
class ReduceResult:
    model: Path
    condition: ConditionKind
    ep: ExecutionProvider
    reproduced: bool  # the whole model fails the condition
    output: Path | None  # the reduced model, when written
    inputs_file: Path | None
    nodes_before: int
    nodes_after: int
    inputs: tuple[str, ...]  # the reduced model's inputs (graph inputs or cut tensors)
    outputs: tuple[str, ...]
    kept_nodes: tuple[str, ...]  # "op (name)" in order
    failure: str  # what the reduced model shows
    steps: tuple[Step, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    verdict: str = ""


def _prepare(model: onnx.ModelProto) -> list[Any]:
    """Named nodes in topological order (the model itself is reordered: Extractor reads it in order)."""
    name_unnamed_nodes(model)
    available = {i.name for i in model.graph.input} | {t.name for t in model.graph.initializer}
    ordered = topological_order(list(model.graph.node), available)
    del model.graph.node[:]
    model.graph.node.extend(ordered)
    return ordered


def _typed(model: onnx.ModelProto, slots: Sequence[TensorSlot]) -> None:
    """value_info for every intermediate tensor (Extractor makes inputs and outputs from them); a tensor whose type
    inference cannot tell (the output of an op nobody knows) gets a name-only entry, enough to cut there."""
    import onnx
    from onnx import helper

    known = {v.name for v in model.graph.value_info} | {o.name for o in model.graph.output}
    typed = {s.name for s in slots}
    model.graph.value_info.extend(
        helper.make_tensor_value_info(s.name, s.elem_type, None) for s in slots if s.name not in known
    )
    for node in model.graph.node:
        for name in node.output:
            if name and name not in known and name not in typed:
                model.graph.value_info.append(onnx.ValueInfoProto(name=name))


class _Cutter:
    def __init__(self, model: onnx.ModelProto, nodes: Sequence[Any]) -> None:
        from onnx.utils import Extractor

        self.model = model
        self.nodes = list(nodes)
        self.extractor = Extractor(model)
        self.graph_inputs = [
            i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}
        ]
        self.graph_outputs = {o.name for o in model.graph.output}
        self.initializers = {t.name for t in model.graph.initializer}
        self.position = {out: i for i, n in enumerate(self.nodes) for out in n.output if out}

    def frontier(self, last: int) -> list[str]:
        """Tensors made by nodes 0..last that a later node reads or that are graph outputs."""
        made = [out for n in self.nodes[: last + 1] for out in n.output if out]
        later = {name for n in self.nodes[last + 1 :] for name in n.input}
        return [t for t in made if t in later or t in self.graph_outputs]

    def cut_inputs(self, first: int, last: int) -> list[str]:
        """What nodes first..last read that an earlier node makes, or that is a graph input."""
        inside = {out for n in self.nodes[first : last + 1] for out in n.output}
        needed = []
        for node in self.nodes[first : last + 1]:
            for name in node.input:
                if not name or name in inside or name in self.initializers or name in needed:
                    continue
                needed.append(name)
        return needed

    def extract(self, inputs: Sequence[str], outputs: Sequence[str]) -> onnx.ModelProto:
        return self.extractor.extract_model(list(inputs), list(outputs))


def run_reduce(request: ReduceRequest, progress: Progress | None = None) -> ReduceResult:
    """Cut ``request.model`` down to the smallest subgraph that still fails ``request.condition`` on
    ``request.ep``; never prints. Bad input is exit 2 before anything runs; a condition the whole model does not
    show gives a result with ``reproduced`` False and nothing written."""
    import numpy as np

    tell = progress or silent
    out = Path(request.output)
    if out.suffix != ".onnx":
        raise ReduceError(f"-o {out}: needs a file name ending in .onnx", "e.g. -o reduced.onnx")
    if request.save_inputs is not None and Path(request.save_inputs).suffix != ".npz":
        raise ReduceError(f"--save-inputs {request.save_inputs}: must end in .npz", "e.g. --save-inputs reduced.npz")
    if request.condition is ConditionKind.CHECK and request.ep is ExecutionProvider.CPU:
        raise ReduceError(
            "--condition check compares the EP with the CPU EP: on the CPU EP there is nothing to compare",
            "give --ep cuda (or tensorrt), or use --condition nan / refuse",
        )
    config = load_config(request.config)

    npz = request.inputs.npz if request.inputs is not None else None
    check_outputs(
        {"-o": out, "--save-inputs": request.save_inputs}, (request.model, npz, config.source), error=ReduceError
    )
    info = inspect_model(request.model)
    model = load_model(info.path)
    nodes = _prepare(model)
    spec = request.inputs if request.inputs is not None else config.inputs
    feeds = dict(load_dataset(info, spec).samples[0].inputs.feeds)
    slots, skipped = intermediate_tensors(model, {n: tuple(a.shape) for n, a in feeds.items()})
    _typed(model, slots)
    condition = condition_for(
        request.condition, request.ep, config, request.device_id, request.rtol, request.atol_scale
    )
    steps: list[Step] = []
    notes: list[str] = []

    tell("running the whole model", 0.05)
    whole = condition.check(model, feeds)
    steps.append(Step("whole", 0, len(nodes) - 1, len(nodes), whole.fails, whole.detail))
    if not whole.fails:
        return ReduceResult(
            model=info.path, condition=request.condition, ep=request.ep, reproduced=False, output=None,
            inputs_file=None, nodes_before=len(nodes), nodes_after=len(nodes), inputs=(), outputs=(), kept_nodes=(),
            failure=whole.detail, steps=tuple(steps),
            verdict=f"NOT REPRODUCED: the whole model does not fail ({whole.detail}); nothing written",
        )  # fmt: skip

    values = _reference_values(request, condition, model, feeds, slots, tell, notes)
    cutter = _Cutter(model, nodes)

    def trial(phase: str, first: int, last: int, inputs: list[str], outputs: list[str]) -> tuple[Outcome, Any]:
        try:
            candidate = cutter.extract(inputs, outputs)
        except (ValueError, KeyError) as exc:
            outcome = Outcome(False, f"cannot cut there ({exc})")
            steps.append(Step(phase, first, last, 0, False, outcome.detail))
            return outcome, None
        trial_feeds = {name: (feeds[name] if name in feeds else values.get(name)) for name in inputs}
        if condition.needs_data and any(v is None for v in trial_feeds.values()):
            missing = next(n for n, v in trial_feeds.items() if v is None)
            return Outcome(False, f"no reference value for {missing!r}"), None
        if request.condition is ConditionKind.NONFINITE:
            dirty = next((n for n, v in trial_feeds.items() if v is not None and _nonfinite(v)), None)
            if dirty is not None:  # NaN fed in is not NaN made here
                outcome = Outcome(False, f"input {dirty!r} already holds NaN/Inf")
                steps.append(Step(phase, first, last, len(candidate.graph.node), False, outcome.detail))
                return outcome, candidate
        outcome = condition.check(candidate, {k: v for k, v in trial_feeds.items() if v is not None} or feeds)
        steps.append(Step(phase, first, last, len(candidate.graph.node), outcome.fails, outcome.detail))
        tell(f"{phase}: nodes {first}..{last}: {'fails' if outcome.fails else 'passes'}", None)
        return outcome, candidate

    # 1. outputs side: the shortest prefix 0..last whose frontier still fails
    low, high = 0, len(nodes) - 1
    best_last, best_outcome = high, whole
    while low < high:
        middle = (low + high) // 2
        outcome, _ = trial("outputs", 0, middle, cutter.graph_inputs, cutter.frontier(middle))
        if outcome.fails:
            high, best_last, best_outcome = middle, middle, outcome
        else:
            low = middle + 1
    if low != best_last:
        outcome, _ = trial("outputs", 0, low, cutter.graph_inputs, cutter.frontier(low))
        if outcome.fails:
            best_last, best_outcome = low, outcome
    last = best_last
    outputs = [o for o in best_outcome.failing_outputs if o in set(cutter.frontier(last))] or cutter.frontier(last)
    made_by_last = [o for o in nodes[last].output if o in outputs]
    if made_by_last:
        outcome, _ = trial("outputs", 0, last, cutter.graph_inputs, made_by_last)
        if outcome.fails:
            outputs = made_by_last

    # 2. inputs side: the latest first node whose cut still fails
    low, high = 0, last
    best_first = 0
    while low < high:
        middle = (low + high + 1) // 2
        outcome, _ = trial("inputs", middle, last, cutter.cut_inputs(middle, last), outputs)
        if outcome.fails:
            low, best_first = middle, middle
        else:
            high = middle - 1
    first = best_first
    inputs = cutter.cut_inputs(first, last) if first > 0 else cutter.graph_inputs
    final_outcome, reduced = trial("result", first, last, inputs, outputs)
    if not final_outcome.fails:  # the halves do not compose: fall back to the shortest failing prefix
        notes.append("the cut from both sides did not fail as a whole; the failing prefix is written instead")
        inputs, outputs, first = cutter.graph_inputs, cutter.frontier(last), 0
        final_outcome, reduced = trial("result", 0, last, inputs, outputs)
    if skipped:
        notes.append(
            f"{len(skipped)} tensors have no known type and cannot be cut at: " + ", ".join(s.name for s in skipped[:5])
        )

    tell(f"writing {out}", 0.95)
    if reduced is None:
        raise ReduceError("the reduced model could not be extracted", "report this model")
    atomic_write_bytes(out, reduced.SerializeToString())
    inputs_file = None
    if request.save_inputs is not None:
        arrays = {n: np.asarray(feeds[n] if n in feeds else values[n]) for n in inputs if n in feeds or n in values}
        # numpy's stub lets **kwds fill allow_pickle (a bool); these keys are the model's input names
        atomic_write(request.save_inputs, lambda handle: np.savez(handle, **arrays))  # type: ignore[arg-type]
        inputs_file = Path(request.save_inputs)
    kept = tuple(f"{n.op_type} ({n.name})" for n in reduced.graph.node)
    tell("done", 1.0)
    return ReduceResult(
        model=info.path,
        condition=request.condition,
        ep=request.ep,
        reproduced=True,
        output=out,
        inputs_file=inputs_file,
        nodes_before=len(nodes),
        nodes_after=len(reduced.graph.node),
        inputs=tuple(inputs),
        outputs=tuple(outputs),
        kept_nodes=kept,
        failure=final_outcome.detail,
        steps=tuple(steps),
        notes=tuple(notes),
        verdict=(
            f"REDUCED: {len(nodes)} -> {len(reduced.graph.node)} node(s) that still fail on {request.ep.value} "
            f"({final_outcome.detail}); written to {out}"
        ),
    )


def _nonfinite(value: Any) -> bool:
    import numpy as np

    array = np.asarray(value)
    return array.dtype.kind in "fc" and not bool(np.isfinite(array).all())


def _reference_values(
    request: ReduceRequest,
    condition: Condition,
    model: onnx.ModelProto,
    feeds: Mapping[str, Any],
    slots: Sequence[TensorSlot],
    tell: Progress,
    notes: list[str],
) -> dict[str, Any]:
    """The values cut tensors are fed with: the EP under test's own for NaN/Inf (it keeps the failing state), the
    CPU EP's for a check (so a subgraph fails on its own, not on what came in). None needed for a refusal."""
    if not condition.needs_data:
        return {}

    ep = request.ep if request.condition is ConditionKind.NONFINITE else ExecutionProvider.CPU
    tell(f"reference values of every tensor on {ep.value}", 0.1)
    with OrtEngine(model, feeds, ep, load_config(request.config), request.device_id) as engine:
        values = engine.values(slots)
    notes.append(f"cut tensors are fed with the values the whole model gives them on the {ep.value} EP")
    return values
