"""Output parity: per-output error numbers and a pass/fail against tolerances that fit the dtype and the EP."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, TypedDict

from ortgpu.accuracy.metrics import ErrorHistogram, error_metrics
from ortgpu.errors import BadInputError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = [
    "DEFAULT_TOLERANCES",
    "OutputParity",
    "ParityStatus",
    "Precision",
    "Tolerance",
    "ToleranceError",
    "ToleranceRule",
    "check_output_names",
    "compare_output",
    "parse_tolerances",
    "worst_sample",
]


class ToleranceError(BadInputError):
    """An --atol / --rtol value that cannot be used (exit 2)."""


class ParityStatus(Enum):
    PASS = "pass"
    FAIL = "fail"
    SKIPPED = "skipped"  # not compared; `reason` says why


class Precision(Enum):
    """What limits the accuracy a float output can have on the EP that ran it (picks the default tolerance)."""

    FP64 = "float64"
    FP32 = "float32"  # fp32 on the CPU EP
    FP32_GPU = "float32 on GPU"  # fp32 on CUDA without TF32: cuDNN/cuBLAS algorithms differ from the CPU's
    TF32 = "float32 with TF32"  # Ampere+ tensor cores round fp32 MatMul/Conv inputs to 10-bit mantissas
    FP16 = "float16"  # fp16 outputs, or a TensorRT engine built with FP16
    EXACT = "exact"  # integers, bools, strings


@dataclass(frozen=True)
class ToleranceRule:
    """Default tolerance: pass when |out - ref| <= atol + rtol * |ref| element by element, with
    atol = atol_scale * max(1, largest finite |ref|) so it follows the output's magnitude."""

    rtol: float
    atol_scale: float


DEFAULT_TOLERANCES: dict[Precision, ToleranceRule] = {
    Precision.FP64: ToleranceRule(rtol=1e-6, atol_scale=1e-9),
    Precision.FP32: ToleranceRule(rtol=1e-3, atol_scale=1e-5),
    Precision.FP32_GPU: ToleranceRule(rtol=1e-3, atol_scale=1e-4),
    Precision.TF32: ToleranceRule(rtol=1e-2, atol_scale=1e-2),
    Precision.FP16: ToleranceRule(rtol=2e-2, atol_scale=2e-2),
    Precision.EXACT: ToleranceRule(rtol=0.0, atol_scale=0.0),
}


@dataclass(frozen=True)
class Tolerance:
    """User tolerances: a global value (float outputs) and per-output values (any numeric output)."""

    default: float | None = None
    per_output: Mapping[str, float] = field(default_factory=dict)

    def for_output(self, name: str, is_float: bool) -> float | None:
        if name in self.per_output:
            return self.per_output[name]
        return self.default if is_float else None


def parse_tolerances(values: Sequence[str], flag: str) -> Tolerance:
    """``["1e-3", "logits:1e-2"]`` -> global 1e-3, ``logits`` 1e-2. The last global value wins."""
    default: float | None = None
    per_output: dict[str, float] = {}
    for text in values:
        name, sep, number = str(text).rpartition(":")
        value_text = number if sep else str(text)
        try:
            value = float(value_text)
        except ValueError:
            raise ToleranceError(
                f"{flag} {text!r}: {value_text!r} is not a number", f"e.g. {flag} 1e-3 or {flag} logits:1e-2"
            ) from None
        if not math.isfinite(value) or value < 0:
            raise ToleranceError(f"{flag} {text!r}: must be a finite number >= 0", f"e.g. {flag} 1e-3")
        if sep:
            if not name:
                raise ToleranceError(f"{flag} {text!r}: empty output name before ':'", f"e.g. {flag} logits:1e-2")
            per_output[name] = value
        else:
            default = value
    return Tolerance(default=default, per_output=per_output)


@dataclass(frozen=True)
class OutputParity:
    """One output compared with its reference. Error numbers are over elements finite in both arrays."""

    name: str
    status: ParityStatus
    reason: str | None = None
    dtype: str | None = None
    shape: tuple[int, ...] | None = None
    reference_dtype: str | None = None
    reference_shape: tuple[int, ...] | None = None
    precision: Precision | None = None
    atol: float | None = None
    rtol: float | None = None
    tolerance_given: bool = False  # atol/rtol came from the user, not the defaults for `precision`
    elements: int = 0
    mismatches: int = 0
    nonfinite_mismatches: int = 0  # of the mismatches: NaN/Inf on one side where the other has another value
    max_abs: float | None = None
    max_rel: float | None = None  # over elements whose reference is not 0
    mean_abs: float | None = None
    cosine: float | None = None
    median_abs: float | None = None
    snr_db: float | None = None  # inf: no error at all
    min_atol: float | None = None  # the smallest atol that would pass the finite elements with this rtol
    min_rtol: float | None = None  # the smallest rtol that would pass them with this atol (None: none would)
    histogram: ErrorHistogram | None = None
    nan_count: int = 0
    inf_count: int = 0
    reference_nan_count: int = 0
    reference_inf_count: int = 0
    worst_index: tuple[int, ...] | None = None
    worst_value: float | str | None = None
    worst_reference: float | str | None = None
    sample: str | None = None  # the sample these numbers come from (the worst one, over a data set)
    samples: int = 1  # samples compared
    samples_failed: int = 0

    def failure_line(self) -> str:
        """One line for a failed output, with the numbers."""
        if self.reason and self.max_abs is None:
            return f"output {self.name!r}: {self.reason}"
        where = f" at {list(self.worst_index)}" if self.worst_index is not None else ""
        special = (
            f" ({self.nonfinite_mismatches} where NaN/Inf meets another value)" if self.nonfinite_mismatches else ""
        )
        in_sample = (
            f" (worst of {self.samples} samples: {self.sample}, {self.samples_failed} failed)"
            if (self.samples > 1)
            else ""
        )
        passing = ""
        if self.min_atol is not None and not self.nonfinite_mismatches:
            rtol_text = "none" if self.min_rtol is None else f"{self.min_rtol:.3g}"
            passing = f"; would pass with atol {self.min_atol:.3g} or rtol {rtol_text}"
        return (
            f"output {self.name!r}{in_sample}: {self.mismatches} of {self.elements} values off tolerance{special} "
            f"(atol {self.atol:.3g}, rtol {self.rtol:.3g}); max abs {_fmt(self.max_abs)}, max rel {_fmt(self.max_rel)}"
            f"; worst{where}: {_value(self.worst_value)} vs {_value(self.worst_reference)}{passing}"
        )


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}"


def _value(value: float | str | None) -> str:
    return f"{value:.7g}" if isinstance(value, float) else repr(value)


def _precision(dtype: np.dtype, base: Precision) -> Precision:
    """Float outputs take the EP's precision; float64 and float16 outputs keep their own."""
    if dtype.kind != "f":
        return Precision.EXACT
    if dtype.itemsize == 8:
        return Precision.FP64 if base in (Precision.FP32, Precision.FP32_GPU, Precision.FP64) else base
    if dtype.itemsize == 2:
        return Precision.FP16
    return base


class _Shapes(TypedDict):
    """The dtypes and shapes of an output and its reference, shared by every verdict past the first checks."""

    dtype: str
    shape: tuple[int, ...]
    reference_dtype: str
    reference_shape: tuple[int, ...]
    elements: int


class _Metrics(TypedDict):
    """The error numbers over the elements finite on both sides (all None when there are none)."""

    max_abs: float | None
    max_rel: float | None
    mean_abs: float | None
    cosine: float | None
    median_abs: float | None
    snr_db: float | None
    min_atol: float | None
    min_rtol: float | None
    histogram: ErrorHistogram | None


def _scalar(value: Any) -> float | str:
    item = value.item() if hasattr(value, "item") else value
    if isinstance(item, (bytes, bytearray)):
        return item.decode("utf-8", "replace")
    if isinstance(item, bool):
        return float(item)
    return item if isinstance(item, str) else float(item)


def _is_text(array: np.ndarray) -> bool:
    return array.dtype.kind in "USO"


def compare_output(
    name: str,
    actual: Any,
    reference: Any,
    base: Precision,
    atol: float | None = None,
    rtol: float | None = None,
) -> OutputParity:
    """Compare one output with its reference. ``base`` is the EP's float precision; ``atol``/``rtol`` given
    by the user replace the defaults (an atol given is absolute, not scaled)."""
    import numpy as np

    if actual is None:
        return OutputParity(name, ParityStatus.SKIPPED, "the model returned no value (optional output)")
    if not isinstance(actual, np.ndarray):
        return OutputParity(name, ParityStatus.SKIPPED, f"{type(actual).__name__} output: only tensors are compared")
    reference = np.asarray(reference)
    shape, ref_shape = tuple(actual.shape), tuple(reference.shape)
    common = _Shapes(
        dtype=str(actual.dtype),
        shape=shape,
        reference_dtype=str(reference.dtype),
        reference_shape=ref_shape,
        elements=int(actual.size),
    )
    if shape != ref_shape:
        return OutputParity(
            name, ParityStatus.FAIL, f"shape {list(shape)} differs from the reference {list(ref_shape)}", **common
        )
    for array, what in ((actual, "output"), (reference, "reference")):
        if array.dtype.kind not in "biufUSO":
            return OutputParity(
                name, ParityStatus.SKIPPED, f"{what} dtype {array.dtype} is not numbers or text: not compared", **common
            )
    if _is_text(actual) or _is_text(reference):
        if not (_is_text(actual) and _is_text(reference)):
            return OutputParity(
                name, ParityStatus.FAIL, f"{actual.dtype} output against a {reference.dtype} reference", **common
            )
        return _compare_text(name, actual, reference, common)
    precision = _precision(actual.dtype, base)
    rule = DEFAULT_TOLERANCES[precision]
    got = actual.astype(np.float64)
    want = reference.astype(np.float64)
    finite = np.isfinite(got) & np.isfinite(want)
    scale = float(np.max(np.abs(want[finite]))) if finite.any() else 0.0
    eff_rtol = rule.rtol if rtol is None else rtol
    eff_atol = rule.atol_scale * max(1.0, scale) if atol is None else atol
    if precision is Precision.EXACT and atol is None and rtol is None:
        eff_atol, eff_rtol = 0.0, 0.0
    nan_got, nan_want = np.isnan(got), np.isnan(want)
    inf_got, inf_want = np.isinf(got), np.isinf(want)
    diff = np.zeros_like(got)
    np.subtract(got, want, out=diff, where=finite)
    np.abs(diff, out=diff)
    allowed = eff_atol + eff_rtol * np.abs(np.where(finite, want, 0.0))
    # An infinity matches the same infinity (e.g. -inf in masked logits); NaN matches nothing, not even NaN.
    special_ok = inf_got & inf_want & (np.sign(got) == np.sign(want))
    bad = np.where(finite, diff > allowed, ~special_ok)
    if eff_atol == 0.0 and eff_rtol == 0.0 and actual.dtype == reference.dtype and actual.dtype.kind in "iub":
        bad = np.asarray(actual != reference)  # exact: in the native type, so int64 beyond 2**53 stays exact
    mismatches = int(bad.sum())
    nonfinite_mismatches = int((bad & ~finite).sum())
    metrics = _metrics(got, want, finite, eff_atol, eff_rtol)
    worst = None
    if mismatches:
        excess = np.where(finite, diff - allowed, np.inf)
        excess = np.where(bad, excess, -np.inf)
        worst = np.unravel_index(int(np.argmax(excess)), actual.shape) if actual.ndim else ()
    return OutputParity(
        name,
        ParityStatus.FAIL if mismatches else ParityStatus.PASS,
        precision=precision,
        atol=float(eff_atol),
        rtol=float(eff_rtol),
        tolerance_given=atol is not None or rtol is not None,
        mismatches=mismatches,
        nonfinite_mismatches=nonfinite_mismatches,
        nan_count=int(nan_got.sum()),
        inf_count=int(inf_got.sum()),
        reference_nan_count=int(nan_want.sum()),
        reference_inf_count=int(inf_want.sum()),
        worst_index=None if worst is None else tuple(int(i) for i in worst),
        worst_value=None if worst is None else _scalar(actual[worst]),
        worst_reference=None if worst is None else _scalar(reference[worst]),
        **metrics,
        **common,
    )


def _metrics(got: np.ndarray, want: np.ndarray, finite: np.ndarray, atol: float, rtol: float) -> _Metrics:
    found = error_metrics(got, want, finite, atol, rtol)
    if found is None:
        return _Metrics(
            max_abs=None,
            max_rel=None,
            mean_abs=None,
            cosine=None,
            median_abs=None,
            snr_db=None,
            min_atol=None,
            min_rtol=None,
            histogram=None,
        )
    return _Metrics(
        max_abs=found.max_abs,
        max_rel=found.max_rel,
        mean_abs=found.mean_abs,
        cosine=found.cosine,
        median_abs=found.median_abs,
        snr_db=found.snr_db,
        min_atol=found.min_atol,
        min_rtol=found.min_rtol,
        histogram=found.histogram,
    )


def _compare_text(name: str, actual: np.ndarray, reference: np.ndarray, common: _Shapes) -> OutputParity:
    import numpy as np

    def as_text(array: np.ndarray) -> np.ndarray:
        flat = [v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in array.reshape(-1).tolist()]
        return np.array(flat, dtype=object).reshape(array.shape)

    got, want = as_text(actual), as_text(reference)
    bad = got != want
    mismatches = int(np.count_nonzero(bad))
    worst = np.unravel_index(int(np.argmax(bad)), actual.shape) if mismatches and actual.ndim else None
    if mismatches and actual.ndim == 0:
        worst = ()
    return OutputParity(
        name,
        ParityStatus.FAIL if mismatches else ParityStatus.PASS,
        precision=Precision.EXACT,
        atol=0.0,
        rtol=0.0,
        mismatches=mismatches,
        worst_index=None if worst is None else tuple(int(i) for i in worst),
        worst_value=None if worst is None else str(got[worst]),
        worst_reference=None if worst is None else str(want[worst]),
        **common,
    )


def check_output_names(tolerances: Sequence[Tolerance], outputs: Sequence[str], flags: Sequence[str]) -> None:
    """Every per-output tolerance must name a model output."""
    for tolerance, flag in zip(tolerances, flags, strict=True):
        for name in tolerance.per_output:
            if name not in outputs:
                raise ToleranceError(
                    f"{flag} {name}:...: the model has no output {name!r}; its outputs are {', '.join(outputs)}",
                    f"use {flag} OUTPUT:VALUE with one of the model's output names",
                )


def _badness(parity: OutputParity) -> tuple[int, int, int, float]:
    rank = {ParityStatus.FAIL: 2, ParityStatus.PASS: 1, ParityStatus.SKIPPED: 0}[parity.status]
    excess = (parity.max_abs or 0.0) / max(parity.atol or 0.0, 1e-300)
    return rank, parity.nonfinite_mismatches, parity.mismatches, excess


def worst_sample(per_sample: Sequence[tuple[str, OutputParity]]) -> OutputParity:
    """One output compared over several samples: the numbers of its worst sample, which is named, with how many
    samples were compared and failed."""
    from dataclasses import replace

    label, worst = max(per_sample, key=lambda item: _badness(item[1]))
    failed = sum(1 for _, p in per_sample if p.status is ParityStatus.FAIL)
    return replace(worst, sample=label, samples=len(per_sample), samples_failed=failed)
