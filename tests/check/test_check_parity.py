"""Parity numbers and tolerances: NaN/Inf, scale-aware atol, TF32/FP16 defaults, exact ints and strings."""

from __future__ import annotations

import numpy as np
import pytest

from ortgpu.check import (
    DEFAULT_TOLERANCES,
    ParityStatus,
    Precision,
    Tolerance,
    ToleranceError,
    compare_output,
    parse_tolerances,
)
from ortgpu.check.parity import worst_sample

# --------------------------------------------------------------------------------------------- compare_output


def test_nan_never_matches_not_even_nan_and_inf_matches_only_itself() -> None:
    ref = np.array([np.nan, np.inf, -np.inf, 1.0], np.float32)
    same = compare_output("y", ref.copy(), ref, Precision.FP32)
    assert same.status is ParityStatus.FAIL and same.mismatches == 1 and same.worst_index == (0,)
    infinities = np.array([1.0, np.inf, -np.inf, 1.0], np.float32)
    assert compare_output("y", infinities, infinities.copy(), Precision.FP32).status is ParityStatus.PASS
    flipped = np.array([1.0, -np.inf, -np.inf, 1.0], np.float32)
    result = compare_output("y", flipped, infinities, Precision.FP32)
    assert result.status is ParityStatus.FAIL and result.mismatches == 1 and result.worst_index == (1,)
    assert result.nan_count == 0 and result.inf_count == 2 and result.reference_inf_count == 2
    assert result.nonfinite_mismatches == 1 and "1 where NaN/Inf meets another value" in result.failure_line()


def test_metrics_snr_median_and_the_tolerances_that_would_pass() -> None:
    ref = np.array([1.0, 2.0, 4.0, 0.0], np.float64)
    got = ref + np.array([0.0, 0.01, -0.04, 0.001])
    result = compare_output("y", got, ref, Precision.FP64, atol=0.0, rtol=1e-3)
    assert result.status is ParityStatus.FAIL
    assert result.median_abs == pytest.approx((0.001 + 0.01) / 2)
    signal, noise = 1 + 4 + 16, 0.01**2 + 0.04**2 + 0.001**2
    assert result.snr_db == pytest.approx(10 * np.log10(signal / noise))
    # smallest atol with rtol 1e-3: max(|d| - 1e-3 |ref|) = 0.04 - 0.004
    assert result.min_atol == pytest.approx(0.036)
    # no rtol passes with atol 0: the last element's reference is 0 and it is off
    assert result.min_rtol is None
    loose = compare_output("y", got, ref, Precision.FP64, atol=0.002, rtol=0.0)
    assert loose.min_rtol == pytest.approx((0.04 - 0.002) / 4)
    passing = compare_output("y", got, ref, Precision.FP64, atol=loose.min_atol, rtol=0.0)
    assert passing.status is ParityStatus.PASS
    assert "would pass with atol 0.036" in result.failure_line()
    histogram = result.histogram
    assert histogram is not None and histogram.exact == 1 and sum(histogram.counts) == 3
    assert histogram.edges[0] <= 0.001 and histogram.edges[-1] >= 0.04


def test_identical_outputs_have_infinite_snr_and_one_exact_bar() -> None:
    ref = np.linspace(-1, 1, 10).astype(np.float32)
    result = compare_output("y", ref.copy(), ref, Precision.FP32)
    assert result.snr_db == float("inf") and result.min_atol == 0.0 and result.min_rtol == 0.0
    assert result.histogram is not None and result.histogram.exact == 10 and result.histogram.counts == ()


def test_worst_sample_is_named_with_the_failure_count() -> None:
    ref = np.ones(4, np.float32)
    good = compare_output("y", ref.copy(), ref, Precision.FP32)
    bad = compare_output("y", ref * 2, ref, Precision.FP32)
    worse = compare_output("y", ref * 3, ref, Precision.FP32)
    merged = worst_sample([("a.npz", good), ("b.npz", worse), ("c.npz", bad)])
    assert merged.sample == "b.npz" and merged.samples == 3 and merged.samples_failed == 2
    assert merged.max_abs == 2.0 and "worst of 3 samples: b.npz, 2 failed" in merged.failure_line()


def test_default_atol_follows_the_output_scale() -> None:
    ref = np.array([1000.0, 0.0], np.float32)
    near_zero_error = np.array([1000.0, 0.005], np.float32)
    result = compare_output("y", near_zero_error, ref, Precision.FP32)
    assert result.atol == pytest.approx(1000 * DEFAULT_TOLERANCES[Precision.FP32].atol_scale)
    assert result.status is ParityStatus.PASS
    assert compare_output("y", near_zero_error, ref, Precision.FP32, atol=1e-6).status is ParityStatus.FAIL


def test_tf32_and_fp16_defaults_are_looser_than_fp32() -> None:
    ref = np.linspace(-1, 1, 101).astype(np.float32)
    off = ref * (1 + 5e-3)
    assert compare_output("y", off, ref, Precision.FP32).status is ParityStatus.FAIL
    assert compare_output("y", off, ref, Precision.TF32).status is ParityStatus.PASS
    half = compare_output("y", off.astype(np.float16), ref.astype(np.float16), Precision.FP32)
    assert half.precision is Precision.FP16 and half.status is ParityStatus.PASS


def test_integers_bools_and_strings_are_exact() -> None:
    big = np.array([2**62, 2**62 + 1], np.int64)
    result = compare_output("ids", big, np.array([2**62, 2**62], np.int64), Precision.TF32)
    assert result.precision is Precision.EXACT and result.status is ParityStatus.FAIL and result.mismatches == 1
    assert compare_output("m", np.array([True]), np.array([True]), Precision.FP32).status is ParityStatus.PASS
    words = np.array(["a", "b"], dtype=object)
    assert compare_output("w", words, np.array(["a", "b"]), Precision.FP32).status is ParityStatus.PASS
    text = compare_output("w", words, np.array(["a", "c"]), Precision.FP32)
    assert text.status is ParityStatus.FAIL and text.worst_value == "b" and text.worst_reference == "c"
    assert compare_output("w", words, np.array([1.0, 2.0]), Precision.FP32).status is ParityStatus.FAIL


def test_shape_mismatch_and_non_tensor_outputs() -> None:
    shape = compare_output("y", np.zeros((2, 3)), np.zeros((3, 2)), Precision.FP32)
    assert shape.status is ParityStatus.FAIL and "shape [2, 3] differs" in (shape.reason or "")
    assert compare_output("y", None, np.zeros(2), Precision.FP32).status is ParityStatus.SKIPPED
    assert compare_output("y", [np.zeros(2)], np.zeros(2), Precision.FP32).status is ParityStatus.SKIPPED


def test_cosine_and_errors_on_a_known_pair() -> None:
    result = compare_output("y", np.array([1.0, 0.0]), np.array([0.0, 1.0]), Precision.FP64, atol=0.0, rtol=0.0)
    assert result.cosine == pytest.approx(0.0)
    assert result.max_abs == 1.0 and result.mean_abs == 1.0 and result.max_rel == 1.0


@pytest.mark.parametrize("precision", list(Precision))
def test_every_precision_has_a_default_tolerance(precision: Precision) -> None:
    rule = DEFAULT_TOLERANCES[precision]
    assert rule.rtol >= 0 and rule.atol_scale >= 0
    assert (rule.rtol == 0) == (precision is Precision.EXACT)


def test_parse_tolerances() -> None:
    tolerance = parse_tolerances(["1e-3", "logits:0.5", "boxes:2"], "--atol")
    assert tolerance == Tolerance(default=1e-3, per_output={"logits": 0.5, "boxes": 2.0})
    assert tolerance.for_output("logits", is_float=True) == 0.5
    assert tolerance.for_output("other", is_float=True) == 1e-3
    assert tolerance.for_output("ids", is_float=False) is None  # a global tolerance never loosens integers
    for bad in ("abc", "x:-1", ":1", "nan"):
        with pytest.raises(ToleranceError):
            parse_tolerances([bad], "--atol")
