"""explain's fallback: a trained linear model over a paste's words, scored in plain Python (no scikit-learn).

The weights are those of a multinomial logistic regression fitted (with scikit-learn, at build time only) on labelled
pastes' distinct informative tokens and structural features, TF-IDF weighted and L2-normalised; only the largest
weights are kept (MAX_WEIGHTS), so scoring a paste is bounded by its distinct terms and the weights each carries.
When no rule fires, the most probable entry is offered as a lead above P_MIN (closest_hit).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources

from ortgpu.knowledge.base import KnowledgeBase
from ortgpu.knowledge.examples import features_of
from ortgpu.knowledge.matcher import Hit
from ortgpu.knowledge.nearest import lead_hit, reports_failure, tokens
from ortgpu.knowledge.paste import Paste

__all__ = ["MAX_WEIGHTS", "P_MIN", "SCHEMA", "LinearModel", "closest_hit", "from_json", "prune", "shipped_model"]

SCHEMA = 1
MAX_WEIGHTS = 40_000  # the largest weights kept (by magnitude): about 0.6 MB of JSON
# the probability floor of a lead, by leave-one-set-out CV on twenty-one sets (benchmarks/explain_examples_linear.py):
# the lowest p at which no unrelated text gets a lead (the model fitted on every set gives "No module named 'cv2'" 0.57
# for FM-111) and the chain stays >= 90%: the model alone 534 right of 557 offered (95.9%), BM25 alone 783 of 866
# (90.4%); explain offers the model's lead at >= P_MIN, else the BM25 one (the "chain"): 867 of 958 (90.5%). It was 0.3
# on seventeen to nineteen sets and 0.7 on twenty
P_MIN = 0.6


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

    def contributions(self, words: Iterable[str], cls: str) -> list[tuple[float, str]]:
        """The terms that raised this class's logit, largest first, with their contributions."""
        i = self.classes.index(cls)
        terms = [t for t in dict.fromkeys(words) if t in self.idf]
        norm = math.sqrt(sum(self.idf[t] ** 2 for t in terms)) or 1.0
        out = [(self.idf[t] / norm * w, t) for t in terms for j, w in self.weights.get(t, ()) if j == i and w > 0]
        return sorted(out, reverse=True)

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


@dataclass(frozen=True)
class _Shipped:
    model: LinearModel
    features: tuple[str, ...]
    p_min: float


@functools.cache
def shipped_model() -> _Shipped:
    """The packaged model (data/explain_linear.json, tools/build_explain_linear.py), read once per process."""
    doc = json.loads(resources.files("ortgpu").joinpath("data/explain_linear.json").read_text(encoding="utf-8"))
    return _Shipped(from_json(doc), tuple(str(k) for k in doc.get("features", ())), float(doc.get("p_min", P_MIN)))


def closest_hit(paste: Paste, kb: KnowledgeBase) -> Hit | None:
    """The packaged model's most probable entry as a low-confidence hit (how="closest") when the paste reports a
    failure and the probability is at least P_MIN, on the paste's line that carries its strongest term; else None."""
    if not reports_failure(paste.joined):
        return None
    shipped = shipped_model()
    words = tokens(paste.joined) + features_of(paste, shipped.features)
    probs = shipped.model.probabilities(words)
    ranked = sorted(probs.items(), key=lambda kv: (-kv[1], kv[0]))
    best, p = ranked[0]
    entries = {e.id: e for e in kb.entries}
    entry = entries.get(best)
    if p < P_MIN or entry is None:
        return None
    if entry.merged_into and entry.merged_into in entries:
        entry = entries[entry.merged_into]
    terms = [t for _, t in shipped.model.contributions(words, best)[:6]]
    runner_up = ranked[1][1] if len(ranked) > 1 else 0.0
    groups = {"terms": ", ".join(terms), "probability": f"{p:.2f}", "runner_up": f"{runner_up:.2f}"}
    return lead_hit(entry, paste, terms, groups)
