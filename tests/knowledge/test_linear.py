"""The plain-Python linear model (knowledge/linear.py): softmax over pruned TF-IDF weights, and its JSON form."""

from __future__ import annotations

import json
import math

import pytest

from ortgpu.knowledge.linear import LinearModel, from_json, prune


def _model() -> LinearModel:
    idf = {"cudnn": 2.0, "cublas": 2.0, "shape": 1.0}
    coefficients = {"cudnn": [(0, 4.0), (1, -1.0)], "cublas": [(1, 4.0)], "shape": [(2, 0.5), (0, 0.01)]}
    return prune(["FM-A", "FM-B", "FM-C"], [0.0, 0.0, 0.1], idf, coefficients, keep=4)


def test_a_term_with_a_large_weight_makes_its_entry_the_most_probable() -> None:
    probs = _model().probabilities(["cudnn", "unknown"])
    assert max(probs, key=probs.__getitem__) == "FM-A"
    assert math.isclose(sum(probs.values()), 1.0)
    assert _model().probabilities(["cublas"])["FM-B"] > 0.9


def test_unknown_words_leave_only_the_intercepts_and_duplicates_count_once() -> None:
    model = _model()
    plain = model.probabilities(["nothing", "known", "here"])
    expected = [math.exp(b) for b in (0.0, 0.0, 0.1)]
    assert plain["FM-C"] == pytest.approx(expected[2] / sum(expected))
    assert model.probabilities(["cudnn", "cudnn", "shape"]) == model.probabilities(["cudnn", "shape"])


def test_pruning_keeps_only_the_largest_weights() -> None:
    model = _model()
    kept = sorted((t, i) for t, ws in model.weights.items() for i, _ in ws)
    assert kept == [("cublas", 1), ("cudnn", 0), ("cudnn", 1), ("shape", 2)]  # the 0.01 weight is dropped
    assert model.idf["shape"] == 1.0  # every term still counts in the norm


def test_the_json_form_round_trips_and_a_wrong_schema_is_refused() -> None:
    model = _model()
    doc = json.loads(json.dumps(model.to_json()))
    assert from_json(doc).probabilities(["cudnn", "shape"]) == pytest.approx(model.probabilities(["cudnn", "shape"]))
    with pytest.raises(ValueError, match="schema"):
        from_json({**doc, "schema": 99})
