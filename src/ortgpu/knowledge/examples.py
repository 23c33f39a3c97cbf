"""What explain's fallback learns from real labelled pastes: their informative tokens, per knowledge-base entry.

The packaged data/explain_examples.json holds, for each labelled paste of the seen benchmark sets, the entry it was
labelled with and its informative tokens (knowledge/nearest.py's tokens()), kept only when a token occurs in at
least MIN_PASTES different pastes or in the knowledge base's own words: no user names, random ids or paths, and no
texts. When no rule fires, each entry's BM25 document gains the tokens of its labelled pastes (entry_documents), and
the closest entry is offered above THRESHOLD and MARGIN (calibrated by leave-one-set-out cross-validation,
benchmarks/explain_examples_cv.py).
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ortgpu.knowledge.base import KnowledgeBase
from ortgpu.knowledge.nearest import tokens, vocabulary
from ortgpu.knowledge.paste import prepare

__all__ = [
    "MARGIN",
    "MIN_PASTES",
    "SCHEMA",
    "THRESHOLD",
    "Example",
    "Examples",
    "build_examples",
    "entry_documents",
    "load_examples",
    "shipped_documents",
]

SCHEMA = 1
MIN_PASTES = 2  # a token from fewer pastes than this (and not in the knowledge base's words) is dropped
THRESHOLD = 15.0  # the augmented score floor: today's (on the CV a floor of 10 gains one lead)
MARGIN = 1.25  # over the runner-up, by leave-one-set-out CV on eleven sets: 279 right of 310 offered, 90.0%


@dataclass(frozen=True)
class Example:
    """One labelled paste, as the entry it shows and its kept informative tokens (distinct, sorted)."""

    entry: str
    tokens: tuple[str, ...]


@dataclass(frozen=True)
class Examples:
    """The labelled pastes the fallback learns from, and the data files they came from."""

    built_from: tuple[str, ...]
    examples: tuple[Example, ...]

    def to_json(self) -> dict:
        return {
            "schema": SCHEMA,
            "description": "informative tokens of labelled explain pastes (no texts), by knowledge-base entry; built "
            "by tools/build_explain_examples.py",
            "built_from": list(self.built_from),
            "min_pastes": MIN_PASTES,
            "examples": [{"entry": e.entry, "tokens": list(e.tokens)} for e in self.examples],
        }


def build_examples(labelled: Iterable[tuple[str, str]], kb: KnowledgeBase, built_from: Iterable[str]) -> Examples:
    """Examples from (entry id, paste text) pairs: each paste's distinct informative tokens, less those that occur in
    fewer than MIN_PASTES pastes and are not in the knowledge base's words. Deterministic (sorted)."""
    raw = [(entry, frozenset(tokens(prepare(text).joined))) for entry, text in labelled]
    df: Counter[str] = Counter()
    for _, words in raw:
        df.update(words)
    known = vocabulary(kb)
    kept = [
        Example(entry, tuple(sorted(t for t in words if df[t] >= MIN_PASTES or t in known))) for entry, words in raw
    ]
    kept = [e for e in kept if e.tokens]
    kept.sort(key=lambda e: (e.entry, e.tokens))
    return Examples(tuple(sorted(built_from)), tuple(kept))


def load_examples(path: Path | None = None) -> Examples:
    """Read an examples file (the packaged one when path is None; that one is cached)."""
    if path is None:
        return _packaged()
    return _parse(Path(path).read_text(encoding="utf-8"))


@functools.cache
def _packaged() -> Examples:
    return _parse(resources.files("ortgpu").joinpath("data/explain_examples.json").read_text(encoding="utf-8"))


def _parse(text: str) -> Examples:
    doc = json.loads(text)
    if doc.get("schema") != SCHEMA:
        raise ValueError(f"explain examples: schema {doc.get('schema')!r}, expected {SCHEMA}")
    return Examples(
        tuple(doc["built_from"]),
        tuple(Example(str(e["entry"]), tuple(str(t) for t in e["tokens"])) for e in doc["examples"]),
    )


def entry_documents(examples: Examples, kb: KnowledgeBase) -> dict[str, tuple[str, ...]]:
    """The extra words of each entry's document: the tokens of the pastes labelled with it (a merged entry's pastes
    count for the entry it was merged into; labels the knowledge base does not hold are ignored)."""
    ids = {e.id: (e.merged_into or e.id) for e in kb.entries}
    out: dict[str, list[str]] = {}
    for example in examples.examples:
        target = ids.get(example.entry)
        if target is not None:
            out.setdefault(target, []).extend(example.tokens)
    return {k: tuple(v) for k, v in sorted(out.items())}


_SHIPPED: dict[int, tuple[KnowledgeBase, Mapping[str, tuple[str, ...]]]] = {}  # by id(kb); the kb is kept


def shipped_documents(kb: KnowledgeBase) -> Mapping[str, tuple[str, ...]]:
    """entry_documents of the packaged examples for this knowledge base, built once per process and kb."""
    cached = _SHIPPED.get(id(kb))
    if cached is not None and cached[0] is kb:
        return cached[1]
    if len(_SHIPPED) >= 4:
        _SHIPPED.clear()
    documents = entry_documents(load_examples(), kb)
    _SHIPPED[id(kb)] = (kb, documents)
    return documents
