"""A trained linear model over a paste's words, scored in plain Python: the probability of each knowledge-base entry.

The weights are those of a multinomial logistic regression fitted (with scikit-learn, at build time only) on labelled
pastes' distinct informative tokens and structural features, TF-IDF weighted and L2-normalised; only the largest
weights are kept (MAX_WEIGHTS), so scoring a paste is bounded by its distinct terms and the weights each carries.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["MAX_WEIGHTS", "SCHEMA", "LinearModel", "from_json", "prune"]

SCHEMA = 1
MAX_WEIGHTS = 40_000  # the largest weights kept (by magnitude): about 0.6 MB of JSON


@dataclass(frozen=True)
class LinearModel:
    """Classes (entry ids), their intercepts, each term's IDF and its kept weights as (class index, weight)."""

    classes: tuple[str, ...]
    intercepts: tuple[float, ...]
    idf: Mapping[str, float]
    weights: Mapping[str, tuple[tuple[int, float], ...]]

    def probabilities(self, words: Iterable[str]) -> dict[str, float]:
        """The softmax probability of every class for a paste of these terms (duplicates count once)."""
        terms = [t for t in dict.fromkeys(words) if t in self.idf]
        norm = math.sqrt(sum(self.idf[t] ** 2 for t in terms)) or 1.0
        logits = list(self.intercepts)
        for term in terms:
            x = self.idf[term] / norm
            for i, w in self.weights.get(term, ()):
                logits[i] += x * w
        top = max(logits)
        exps = [math.exp(v - top) for v in logits]
        total = sum(exps)
        return {c: e / total for c, e in zip(self.classes, exps, strict=True)}

    def to_json(self) -> dict:
        return {
            "schema": SCHEMA,
            "classes": list(self.classes),
            "intercepts": [round(b, 4) for b in self.intercepts],
            "idf": {t: round(v, 4) for t, v in sorted(self.idf.items())},
            "weights": {t: [[i, round(w, 4)] for i, w in ws] for t, ws in sorted(self.weights.items())},
        }


def from_json(doc: Mapping) -> LinearModel:
    """A model from its to_json() form."""
    if doc.get("schema") != SCHEMA:
        raise ValueError(f"linear model: schema {doc.get('schema')!r}, expected {SCHEMA}")
    return LinearModel(
        tuple(str(c) for c in doc["classes"]),
        tuple(float(b) for b in doc["intercepts"]),
        {str(t): float(v) for t, v in doc["idf"].items()},
        {str(t): tuple((int(i), float(w)) for i, w in ws) for t, ws in doc["weights"].items()},
    )


def prune(
    classes: Sequence[str],
    intercepts: Sequence[float],
    idf: Mapping[str, float],
    coefficients: Mapping[str, Sequence[tuple[int, float]]],
    keep: int = MAX_WEIGHTS,
) -> LinearModel:
    """A model keeping only the `keep` largest weights by magnitude (coefficients: per term, (class index, weight))."""
    flat = sorted(
        ((abs(w), t, i, w) for t, ws in coefficients.items() for i, w in ws if w),
        key=lambda x: (-x[0], x[1], x[2]),
    )[:keep]
    weights: dict[str, list[tuple[int, float]]] = {}
    for _, t, i, w in flat:
        weights.setdefault(t, []).append((i, w))
    return LinearModel(
        tuple(classes),
        tuple(float(b) for b in intercepts),
        dict(idf),
        {t: tuple(sorted(ws)) for t, ws in weights.items()},
    )
