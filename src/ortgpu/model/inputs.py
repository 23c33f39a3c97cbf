"""Inputs for any model: shapes from --shape / --dim / batch, value ranges, real data from .npz, reproducible."""

from __future__ import annotations

import ast
import operator
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ortgpu.errors import BadInputError, EnvironmentUnfitError, quoted
from ortgpu.limits import INPUT_DATA_LIMIT, InputTooLargeError
from ortgpu.model.culprits import describe_open_dims, find_open_dims
from ortgpu.model.inspect import ModelInfo, TensorInfo
from ortgpu.npz import load_npz
from ortgpu.untrusted import human_bytes

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = [
    "DEFAULT_FLOAT_RANGE",
    "DEFAULT_INT_RANGE",
    "MAX_DIM",
    "InputError",
    "InputSpec",
    "ResolvedInputs",
    "make_inputs",
    "merge_input_spec",
    "resolve_shapes",
]

DEFAULT_FLOAT_RANGE = (0.0, 1.0)  # uniform in [low, high)
DEFAULT_INT_RANGE = (0, 1)  # inclusive: a sensible default for masks, flags and small indices
MAX_DIM = 2**63 - 1  # ONNX dims are int64
_MAX_EXPRESSION_CHARS = 200  # an exporter's dim expression ("seq*2", "past + 1") is short; longer is not evaluated
_STRING_WORDS = ("alpha", "beta", "gamma", "delta", "onnx", "runtime", "gpu", "cuda", "token", "a", "", "the")


class InputError(BadInputError):
    """An input flag or input file does not fit the model (exit 2)."""


@dataclass(frozen=True)
class InputSpec:
    """How to build the inputs of a model; every field is optional.

    ``shapes``: input name -> full shape (``--shape``). ``dims``: symbolic dim name -> value (``--dim``).
    ``ranges``: input name -> (low, high) (``--range``; floats uniform in [low, high), integers in
    [low, high] inclusive). ``npz``: real data (``--inputs``). ``seed``: random generator seed.
    ``batch``: overrides the leading dim of every input whose leading dim is symbolic or unknown.
    """

    shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    dims: Mapping[str, int] = field(default_factory=dict)
    ranges: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    npz: Path | None = None
    seed: int = 0
    batch: int | None = None


@dataclass(frozen=True)
class ResolvedInputs:
    """The feeds for one run, their shapes, and what was decided on the user's behalf (``notes``).

    ``batch`` is the leading dim used for inputs whose leading dim the model leaves open (None when none does).
    ``sources`` says where each feed came from: ``"npz"`` or ``"generated"``.
    """

    feeds: dict[str, np.ndarray]
    shapes: dict[str, tuple[int, ...]]
    notes: tuple[str, ...]
    batch: int | None
    sources: dict[str, str] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------- flag parsing


# --------------------------------------------------------------------------------------------- shapes

_BINARY_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Div: operator.floordiv,  # dims are integers; exporters write "/" for integer division
    ast.Mod: operator.mod,
}


def _eval_dim_expression(text: str, bindings: Mapping[str, int]) -> int | None:
    """Value of an exporter's dim expression such as ``"seq*2"`` or ``"past + 1"``; None when it cannot be
    evaluated with the bound names (only + - * / // % on integers and names are understood).

    The text comes from the model: an expression longer than a real exporter writes is not evaluated, and
    neither is anything the parser cannot take (deep nesting), so a hostile dim cannot exhaust the stack."""
    tree = _parse_expression(text)
    if tree is None:
        return None

    def value(node: ast.AST) -> int | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            return bindings.get(node.id)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY_OPS:
            left, right = value(node.left), value(node.right)
            if left is None or right is None or (right == 0 and isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod))):
                return None
            return _BINARY_OPS[type(node.op)](left, right)
        return None

    result = value(tree.body)
    return result if result is not None and result >= 0 else None


def _parse_expression(text: str) -> ast.Expression | None:
    if len(text) > _MAX_EXPRESSION_CHARS:
        return None
    try:
        return ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _valid_names(model: ModelInfo) -> str:
    return ", ".join(repr(n) for n in model.input_names) or "(none)"


def _check_names(model: ModelInfo, names: Mapping[str, object], flag: str, example: str) -> None:
    known = set(model.input_names)
    for name in names:
        if name not in known:
            raise InputError(
                f"{flag}: model {model.path.name} has no input {name!r}; its inputs are {_valid_names(model)}",
                f"e.g. {flag} {example}",
            )


def _check_against_model(info: TensorInfo, shape: tuple[int, ...], source: str) -> None:
    """A full shape given by the user (``--shape`` or npz data) must keep the model's rank and fixed dims."""
    if info.rank is not None and len(shape) != info.rank:
        raise InputError(
            f"input {info.name!r}: {source} has rank {len(shape)} {list(shape)}, the model expects rank {info.rank} "
            f"{info.shape_text()}",
            f"give {info.rank} dims" + (", e.g. --shape " + _example_shape(info) if info.rank else ""),
        )
    for axis, (want, got) in enumerate(zip(info.shape, shape, strict=False)):  # rank checked above
        if isinstance(want, int) and want != got:
            raise InputError(
                f"input {info.name!r}: {source} gives {got} for dim {axis}, the model fixes it to {want} "
                f"{info.shape_text()}",
                f"use --shape {_example_shape(info, {axis: want}, shape)}",
            )


def _example_shape(info: TensorInfo, fixed: Mapping[int, int] | None = None, base: tuple[int, ...] = ()) -> str:
    dims = []
    for axis, dim in enumerate(info.shape):
        if fixed and axis in fixed:
            dims.append(str(fixed[axis]))
        elif axis < len(base):
            dims.append(str(base[axis]))
        elif isinstance(dim, int):
            dims.append(str(dim))
        else:
            dims.append("1" if axis == 0 else "N")
    return f"{info.name}=" + "x".join(dims)


def _bind(bindings: dict[str, int], origin: dict[str, str], symbol: str, value: int, source: str) -> None:
    if symbol in bindings and bindings[symbol] != value:
        raise InputError(
            f"dim {symbol!r} is {bindings[symbol]} from {origin[symbol]} but {value} from {source}",
            f"make them agree, e.g. --dim {symbol}={bindings[symbol]}",
        )
    bindings.setdefault(symbol, value)
    origin.setdefault(symbol, source)


def _leading_is_open(info: TensorInfo) -> bool:
    return info.rank is not None and info.rank > 0 and not isinstance(info.shape[0], int)


def resolve_shapes(
    model: ModelInfo, spec: InputSpec, given: Mapping[str, tuple[int, ...]] | None = None
) -> tuple[dict[str, tuple[int, ...]], tuple[str, ...], int | None]:
    """Concrete shapes for every real input, the notes on what was defaulted, and the batch used.

    ``given`` holds the shapes of inputs that come from real data (npz); they fix the symbols they carry.
    Order of authority: ``spec.batch`` (leading dims left open by the model), then real data, ``--shape``
    and ``--dim``, then the leading-dim default of 1. Any other dim left open is an error naming the flag.
    """
    given = dict(given or {})
    _check_names(model, spec.shapes, "--shape", _example_shape(model.inputs[0]) if model.inputs else "x=1x3")
    for info in model.inputs:
        if info.name in spec.shapes:
            _check_against_model(info, tuple(spec.shapes[info.name]), "--shape")
    bindings: dict[str, int] = {}
    origin: dict[str, str] = {}
    notes: list[str] = []
    if spec.batch is not None:
        if spec.batch < 1:
            raise InputError(f"batch {spec.batch} is not a positive whole number", "use a batch of 1 or more")
        for info in model.inputs:
            if _leading_is_open(info) and isinstance(info.shape[0], str):
                bindings[info.shape[0]] = spec.batch
                origin[info.shape[0]] = "the batch setting"
    for name, value in spec.dims.items():
        if value < 0:
            raise InputError(f"--dim {name}={value}: negative", f"e.g. --dim {name}=1")
        if name in bindings and spec.batch is not None:
            continue  # the batch sweep overrides a --dim for the same symbol
        _bind(bindings, origin, name, int(value), f"--dim {name}")
    for source_label, table in (("the inputs file", given), ("--shape", spec.shapes)):
        for info in model.inputs:
            shape = table.get(info.name)
            if shape is None or info.rank is None:
                continue
            for axis, (dim, value) in enumerate(zip(info.shape, shape, strict=True)):
                if isinstance(dim, str) and not (axis == 0 and spec.batch is not None):
                    _bind(bindings, origin, dim, int(value), f"{source_label} for {info.name!r}")
    # Leading dims nothing fixed default to 1 (or the batch setting); bound here so other inputs follow.
    lead_default = spec.batch if spec.batch is not None else 1
    for info in model.inputs:
        if info.name in spec.shapes or info.name in given or not _leading_is_open(info):
            continue
        lead = info.shape[0]
        if isinstance(lead, str) and (lead in bindings or _eval_dim_expression(lead, bindings) is not None):
            continue
        if isinstance(lead, str):
            bindings[lead] = lead_default
            origin[lead] = f"the default for input {info.name!r}"
        if spec.batch is None:
            label = f"{lead!r}" if isinstance(lead, str) else "(unknown)"
            notes.append(f"input {info.name!r}: leading dim {label} defaulted to {lead_default}")

    unfixed = [i for i in model.inputs if i.name not in given and i.name not in spec.shapes]
    open_dims, partial = find_open_dims(unfixed, bindings, _eval_dim_expression, _expression_names, lead_default)
    if open_dims:  # every open dim in one message, with one flag line that fixes them all
        raise InputError(*describe_open_dims(open_dims, partial))
    shapes: dict[str, tuple[int, ...]] = {}
    for info in model.inputs:
        if info.name in given:
            shapes[info.name] = tuple(given[info.name])
            continue
        if info.name in spec.shapes:
            dims = list(spec.shapes[info.name])
            if spec.batch is not None and _leading_is_open(info) and dims[0] != spec.batch:
                notes.append(f"input {info.name!r}: leading dim {dims[0]} from --shape replaced by batch {spec.batch}")
                dims[0] = spec.batch
            shapes[info.name] = tuple(dims)
            continue
        if info.rank is None:
            raise InputError(
                f"input {info.name!r}: the model gives no shape for it (rank unknown)",
                f"give its full shape with --shape {info.name}=1x3x224x224 (your dims)",
            )
        shapes[info.name] = tuple(
            _resolve_dim(info, axis, dim, bindings, lead_default) for axis, dim in enumerate(info.shape)
        )
    open_leading = [shapes[i.name][0] for i in model.inputs if _leading_is_open(i)]
    batch_used = spec.batch if spec.batch is not None else (open_leading[0] if open_leading else None)
    return shapes, tuple(notes), batch_used


def _resolve_dim(
    info: TensorInfo, axis: int, dim: int | str | None, bindings: Mapping[str, int], lead_default: int
) -> int:
    if isinstance(dim, int):
        return dim
    if axis == 0 and dim is None:
        return lead_default
    if isinstance(dim, str):
        if dim in bindings:
            return bindings[dim]
        value = _eval_dim_expression(dim, bindings)
        if value is not None:
            return value
        names = [n for n in _expression_names(dim) if n not in bindings] or [dim]
        flag = " ".join(f"--dim {n}=VALUE" for n in names) if len(dim) <= _MAX_EXPRESSION_CHARS else ""
        raise InputError(
            f"input {quoted(info.name)}: dim {axis} ({quoted(dim)}) of {quoted(info.shape_text(), 200)} is not "
            "fixed by any flag",
            f"pass {flag + ' or ' if flag else ''}the full shape with --shape {_example_shape(info)}",
        )
    raise InputError(
        f"input {info.name!r}: dim {axis} of {info.shape_text()} is unknown (unnamed) and no flag fixes it",
        f"pass the full shape with --shape {_example_shape(info)}",
    )


def _expression_names(text: str) -> list[str]:
    tree = _parse_expression(text)
    if tree is None:
        return [text]
    return sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)})


# --------------------------------------------------------------------------------------------- data


def _load_npz(path: Path, model: ModelInfo) -> dict[str, np.ndarray]:
    hint = "save it with numpy.savez(path, name=array, ...) using the model's input names"
    arrays = load_npz(path, what="inputs file", contents="inputs", error=InputError, hint=hint)
    unknown = sorted(set(arrays) - set(model.input_names))
    if unknown:
        raise InputError(
            f"inputs file {path.name}: {', '.join(repr(u) for u in unknown)} not an input of {model.path.name}; "
            f"its inputs are {_valid_names(model)}",
            "name the arrays after the model's inputs",
        )
    return arrays


def _known_arrays(arrays: Mapping[str, np.ndarray], path: Path, model: ModelInfo) -> dict[str, np.ndarray]:
    unknown = sorted(set(arrays) - set(model.input_names))
    if unknown:
        raise InputError(
            f"{path.name}: {', '.join(repr(u) for u in unknown)} not an input of {model.path.name}; "
            f"its inputs are {_valid_names(model)}",
            "name the arrays after the model's inputs",
        )
    return dict(arrays)


def _conform_npz_array(info: TensorInfo, array: np.ndarray, path: Path) -> np.ndarray:
    import numpy as np

    if info.dtype == "unsupported":
        raise InputError(
            f"input {info.name!r} has type {info.elem_type}, which ORT's Python API cannot take from numpy",
            "feed this model from code with OrtValue, or export it with a supported input type",
        )
    if info.dtype == "object":
        if array.dtype.kind not in "USO":
            raise InputError(
                f"input {info.name!r}: {path.name} holds {array.dtype}, the model expects string",
                "store text arrays (dtype str) for string inputs",
            )
        _check_against_model(info, tuple(array.shape), path.name)
        return array.astype(object)
    if array.dtype != np.dtype(info.dtype):
        raise InputError(
            f"input {info.name!r}: {path.name} holds {array.dtype}, the model expects {info.dtype} ({info.elem_type})",
            f"save it with .astype(numpy.{info.dtype})",
        )
    _check_against_model(info, tuple(array.shape), path.name)
    return array


def _check_index_bounds(info: TensorInfo, array: np.ndarray, rows: int | None, path: Path) -> None:
    """Real token ids past the embedding table would only fail later inside ORT's Gather, obscurely."""
    if rows is None or array.size == 0:
        return
    low, high = int(array.min()), int(array.max())
    if low < -rows or high >= rows:
        raise InputError(
            f"input {info.name!r}: {path.name} holds values in [{low}, {high}], but it indexes an embedding "
            f"table of {rows} rows (valid ids are [0, {rows}))",
            "the data does not belong to this model (another vocabulary?); check the tokenizer",
        )


def _generate(
    info: TensorInfo, shape: tuple[int, ...], spec: InputSpec, bounds: Mapping[str, int], notes: list[str]
) -> np.ndarray:
    import numpy as np

    if info.dtype == "unsupported":
        raise InputError(
            f"input {info.name!r} has type {info.elem_type}, which ORT's Python API cannot take from numpy",
            "this model cannot be fed from Python with generated data",
        )
    # One stream per input name: the values of an input do not change when other inputs are added or reordered.
    rng = np.random.default_rng([spec.seed & 0xFFFFFFFF, zlib.crc32(info.name.encode())])
    dtype = np.dtype(info.dtype)
    user_range = spec.ranges.get(info.name)
    if info.dtype == "bool":
        if user_range is not None:
            raise InputError(f"--range {info.name}: the input is bool, a range does not apply", "drop the --range")
        return rng.integers(0, 2, size=shape, dtype=np.uint8).astype(bool)
    if info.dtype == "object":
        if user_range is not None:
            raise InputError(
                f"--range {info.name}: the input is a string tensor, a range does not apply",
                "drop the --range, or give real text with --inputs FILE.npz",
            )
        words = np.array(_STRING_WORDS, dtype=object)
        return words[rng.integers(0, len(words), size=shape)]
    if dtype.kind == "f":
        low, high = user_range if user_range is not None else DEFAULT_FLOAT_RANGE
        _check_float_range(info, dtype, low, high)
        if dtype == np.float64:
            return rng.uniform(low, high, size=shape)
        values = rng.random(size=shape, dtype=np.float32)
        values *= np.float32(high - low)
        values += np.float32(low)
        return values.astype(dtype, copy=False)
    info_range = np.iinfo(dtype)
    rows = bounds.get(info.name)
    if user_range is not None:
        low, high = user_range
        if low != int(low) or high != int(high):
            raise InputError(
                f"--range {info.name}={low:g},{high:g}: the input is {info.dtype}, give whole numbers",
                f"e.g. --range {info.name}={int(low)},{int(high)}",
            )
        low, high = int(low), int(high)
        if rows is not None and (low < 0 or high >= rows):
            notes.append(f"input {info.name!r}: --range {low},{high} goes outside the embedding table [0, {rows})")
    elif rows is not None:
        low, high = 0, rows - 1
        notes.append(f"input {info.name!r}: indexes an embedding table of {rows} rows, values drawn from [0, {rows})")
    else:
        low, high = DEFAULT_INT_RANGE
    if low < info_range.min or high > info_range.max:
        raise InputError(
            f"--range {info.name}={low},{high}: outside what {info.dtype} holds [{info_range.min}, {info_range.max}]",
            "use a range the input's type can hold",
        )
    return rng.integers(low, high, size=shape, dtype=dtype, endpoint=True)


def _check_float_range(info: TensorInfo, dtype: np.dtype, low: float, high: float) -> None:
    """A range the input's float type cannot hold (or whose width overflows it) would feed inf and NaN."""
    import numpy as np

    biggest = float(np.finfo(dtype).max)
    if max(abs(low), abs(high)) > biggest or (high - low) > biggest:
        raise InputError(
            f"--range {info.name}={low:g},{high:g}: {info.dtype} holds at most ±{biggest:.4g}, and generated values "
            f"span HIGH - LOW = {high - low:g}: that would feed inf and NaN",
            f"keep LOW and HIGH within ±{biggest / 2:.3g}, e.g. --range {info.name}=-1,1",
        )


def _validate_spec(spec: InputSpec) -> None:
    """Types and values of an InputSpec built in code (``ortgpu.load(..., inputs=...)``), said as InputError."""
    import math
    import os

    if not isinstance(spec, InputSpec):
        raise InputError(
            f"inputs must be an ortgpu InputSpec, got {type(spec).__name__}",
            "build it with ortgpu.model.inputs.InputSpec(shapes={...}, dims={...}, ranges={...})",
        )
    for field_name in ("shapes", "dims", "ranges"):
        kind = type(getattr(spec, field_name)).__name__
        if not isinstance(getattr(spec, field_name), Mapping):
            raise InputError(
                f"InputSpec.{field_name} must be a mapping of input names, got {kind}",
                f"e.g. InputSpec({field_name}={{'x': ...}})",
            )
    for name, shape in spec.shapes.items():
        ok = isinstance(shape, (tuple, list)) and all(
            isinstance(d, int) and not isinstance(d, bool) and 0 <= d <= MAX_DIM for d in shape
        )
        if not isinstance(name, str) or not ok:
            raise InputError(
                f"InputSpec.shapes[{quoted(name)}] = {quoted(shape)}: expected a tuple of whole numbers >= 0",
                "e.g. shapes={'x': (1, 3, 224, 224)}",
            )
    for name, value in spec.dims.items():
        whole = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_DIM
        if not isinstance(name, str) or not whole:
            raise InputError(
                f"InputSpec.dims[{quoted(name)}] = {quoted(value)}: expected a whole number >= 0",
                "e.g. dims={'batch': 8}",
            )
    for name, pair in spec.ranges.items():
        ok = (
            isinstance(pair, (tuple, list))
            and len(pair) == 2
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in pair)
            and pair[0] <= pair[1]
        )
        if not isinstance(name, str) or not ok:
            raise InputError(
                f"InputSpec.ranges[{quoted(name)}] = {quoted(pair)}: expected (low, high), finite, low <= high",
                "e.g. ranges={'x': (-1.0, 1.0)}",
            )
    if spec.npz is not None and not isinstance(spec.npz, (str, os.PathLike)):
        raise InputError(f"InputSpec.npz must be a path, got {type(spec.npz).__name__}", "e.g. npz='inputs.npz'")
    if isinstance(spec.seed, bool) or not isinstance(spec.seed, int) or spec.seed < 0:
        raise InputError(f"InputSpec.seed = {quoted(spec.seed)}: expected a whole number >= 0", "e.g. seed=0")
    if spec.batch is not None and (isinstance(spec.batch, bool) or not isinstance(spec.batch, int)):
        raise InputError(f"InputSpec.batch = {quoted(spec.batch)}: expected a whole number", "e.g. batch=8")


def _check_input_sizes(model: ModelInfo, shapes: Mapping[str, tuple[int, ...]], real: Mapping[str, object]) -> None:
    """Refuse, before anything is allocated, generated inputs bigger than ``INPUT_DATA_LIMIT``."""
    import numpy as np

    limit = INPUT_DATA_LIMIT.value()
    total = 0
    for info in model.inputs:
        if info.name in real:
            continue
        shape = shapes[info.name]
        elements = 1
        for dim in shape:
            elements *= int(dim)
        itemsize = 8 if info.dtype in ("object", "unsupported") else np.dtype(info.dtype).itemsize
        size = elements * itemsize
        total += size
        if any(d > MAX_DIM for d in shape) or total > limit:
            shown = "x".join(str(d) for d in shape) if len(shape) < 16 else f"{len(shape)} dims"
            raise InputTooLargeError(
                f"input {quoted(info.name)}: shape {quoted(shown, 80)} of {info.dtype} needs {human_bytes(size)}; "
                f"generated inputs may take at most {human_bytes(limit)}",
                f"give smaller dims (--shape / --dim / --batch) or raise it: {INPUT_DATA_LIMIT.variable}=SIZE",
            )


def make_inputs(
    model: ModelInfo, spec: InputSpec, arrays: Mapping[str, np.ndarray] | None = None, source: str | None = None
) -> ResolvedInputs:
    """Feeds for every real input of ``model``: from ``spec.npz`` where given, generated elsewhere.

    ``arrays`` (named like the inputs, e.g. one sample of a data set) stand in for ``spec.npz``; ``source``
    names them in messages. Generated data is reproducible from ``spec.seed``; integer inputs that index an
    embedding table stay inside it. Raises InputError (exit 2) for unknown input names, wrong rank / dtype /
    fixed dims, pickled npz content, and dims nothing fixes (naming the input, the dim and the flag to use).
    """
    import numpy as np

    _validate_spec(spec)
    _check_names(model, spec.ranges, "--range", f"{model.input_names[0]}=0,1" if model.inputs else "x=0,1")
    notes: list[str] = []
    real: dict[str, np.ndarray] = {}
    if arrays is not None or spec.npz is not None:
        path = Path(source or "data") if arrays is not None else Path(spec.npz or "")
        arrays = _load_npz(path, model) if arrays is None else _known_arrays(arrays, path, model)
        for info in model.inputs:
            if info.name not in arrays:
                continue
            array = _conform_npz_array(info, arrays[info.name], path)
            _check_index_bounds(info, array, model.index_bounds.get(info.name), path)
            if info.name in spec.shapes and tuple(spec.shapes[info.name]) != array.shape:
                raise InputError(
                    f"input {info.name!r}: --shape {list(spec.shapes[info.name])} disagrees with {path.name} "
                    f"{list(array.shape)}",
                    f"drop --shape {info.name} (the data fixes its shape)",
                )
            if spec.batch is not None and _leading_is_open(info) and array.shape[0] != spec.batch:
                if array.shape[0] != 1:
                    raise InputError(
                        f"input {info.name!r}: {path.name} has batch {array.shape[0]}, batch {spec.batch} was asked",
                        "save the data with batch 1 (it is then repeated) or with the batch you ask for",
                    )
                if array.nbytes * spec.batch > INPUT_DATA_LIMIT.value():
                    raise InputTooLargeError(
                        f"input {info.name!r}: {path.name} repeated to batch {spec.batch} needs "
                        f"{human_bytes(array.nbytes * spec.batch)}, above {human_bytes(INPUT_DATA_LIMIT.value())}",
                        f"ask for a smaller batch, or raise the limit with {INPUT_DATA_LIMIT.variable}=SIZE",
                    )
                array = np.repeat(array, spec.batch, axis=0)
                notes.append(f"input {info.name!r}: data from {path.name} repeated to batch {spec.batch}")
            real[info.name] = array
        missing = [i.name for i in model.inputs if i.name not in real]
        if missing:
            notes.append(f"not in {path.name}, generated: " + ", ".join(repr(m) for m in missing))
    shapes, shape_notes, batch = resolve_shapes(model, spec, {n: a.shape for n, a in real.items()})
    notes[:0] = shape_notes
    _check_input_sizes(model, shapes, real)
    feeds: dict[str, np.ndarray] = {}
    sources: dict[str, str] = {}
    for info in model.inputs:
        if info.name in real:
            feeds[info.name] = real[info.name]
            sources[info.name] = "npz"
            continue
        try:
            feeds[info.name] = _generate(info, shapes[info.name], spec, model.index_bounds, notes)
        except MemoryError:
            raise EnvironmentUnfitError(
                f"not enough memory for input {quoted(info.name)} of shape {list(shapes[info.name])}",
                "free memory, or give smaller dims (--shape / --dim / --batch)",
            ) from None
        sources[info.name] = "generated"
    return ResolvedInputs(feeds=feeds, shapes=shapes, notes=tuple(notes), batch=batch, sources=sources)


def merge_input_spec(
    base: InputSpec,
    *,
    shapes: Mapping[str, tuple[int, ...]] | None = None,
    dims: Mapping[str, int] | None = None,
    ranges: Mapping[str, tuple[float, float]] | None = None,
    npz: Path | None = None,
    seed: int | None = None,
) -> InputSpec:
    """The config's [inputs] with command-line values laid over it, name by name (check and bench alike)."""
    return replace(
        base,
        shapes={**base.shapes, **(shapes or {})},
        dims={**base.dims, **(dims or {})},
        ranges={**base.ranges, **(ranges or {})},
        npz=npz if npz is not None else base.npz,
        seed=seed if seed is not None else base.seed,
    )
