"""The nearest known problem for a paste no rule recognised: BM25 over the knowledge base's own words.

Each entry is a document (title, meaning, cause, examples, the words of its patterns and signal claims; a merged
entry's words count for the entry it was merged into). A paste is a query of its informative tokens: identifiers,
error and status names, library, provider and op names, source file names, 2-4 digit codes and 8-digit HRESULTs.
The best entry is offered only above a calibrated score and a margin over the runner-up, and never as a certain
diagnosis. Work is bounded: the paste is cut to MAX_QUERY_CHARS and MAX_QUERY_TOKENS distinct tokens.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ortgpu.knowledge.base import FailureMode, KnowledgeBase
from ortgpu.knowledge.matcher import Hit
from ortgpu.knowledge.paste import Paste

__all__ = [
    "MARGIN",
    "MAX_QUERY_CHARS",
    "MAX_QUERY_TOKENS",
    "THRESHOLD",
    "Nearest",
    "closest_hit",
    "lead_hit",
    "nearest",
    "rank",
    "tokens",
    "vocabulary",
]

MAX_QUERY_CHARS = 20_000  # the error is in the first screens of a paste; a long log adds only noise
MAX_QUERY_TOKENS = 400  # distinct tokens scored per paste
THRESHOLD = 15.0  # calibrated on the five seen sets (benchmarks/explain_nearest.py); below it: not recognised
MARGIN = 1.5  # the best score must be this many times the runner-up's: a near tie is no lead
_K1 = 1.2
_B = 0.75

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]{1,80}|(?<![\w.])\d{2,4}(?![\w.])|(?<![\w])[0-9A-Fa-f]{8}(?![\w])")
_CAMEL = re.compile(r"[A-Z]{2,}(?=[A-Z][a-z]|\d|\b)|[A-Z]?[a-z]{2,}|\d{2,}")
# words that say nothing about which problem a paste shows: English, stack traces, paths, log noise
_STOP = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "not",
        "this",
        "that",
        "from",
        "are",
        "was",
        "were",
        "has",
        "have",
        "had",
        "but",
        "can",
        "cannot",
        "will",
        "would",
        "could",
        "should",
        "into",
        "onto",
        "than",
        "then",
        "there",
        "their",
        "they",
        "them",
        "you",
        "your",
        "our",
        "its",
        "also",
        "any",
        "all",
        "one",
        "two",
        "when",
        "what",
        "which",
        "while",
        "where",
        "who",
        "how",
        "why",
        "been",
        "being",
        "does",
        "did",
        "done",
        "get",
        "got",
        "use",
        "used",
        "using",
        "run",
        "runs",
        "running",
        "file",
        "files",
        "line",
        "lines",
        "traceback",
        "most",
        "recent",
        "call",
        "last",
        "self",
        "return",
        "site",
        "packages",
        "python",
        "usr",
        "home",
        "root",
        "local",
        "lib",
        "bin",
        "opt",
        "users",
        "appdata",
        "program",
        "programs",
        "error",
        "errors",
        "failed",
        "failure",
        "fail",
        "exception",
        "warning",
        "info",
        "debug",
        "message",
        "status",
        "code",
        "onnxruntime",
        "ort",
        "onnx",
        "session",
        "model",
        "models",
        "inference",
        "py",
        "cc",
        "cpp",
        "dll",
        "so",
        "exe",
        "main",
        "init",
        "none",
        "true",
        "false",
        "null",
        "nan",
        "version",
        "see",
        "please",
        "reference",
        "docs",
        "https",
        "http",
        "www",
        "com",
        "org",
        "github",
        "issues",
        "issue",
        "net",
        "core",
        "src",
        "build",
        "default",
    ]
)


def tokens(text: str) -> list[str]:
    """The informative tokens of a text, lower-cased: whole identifiers and their camel-case / snake-case parts."""
    out: list[str] = []
    for m in itertools.islice(_WORD.finditer(text[:MAX_QUERY_CHARS]), 4 * MAX_QUERY_TOKENS):
        word = m.group(0)
        parts = [word] if word[0].isdigit() else [word, *_split(word)]
        for part in dict.fromkeys(p.lower() for p in parts):
            if len(part) >= 2 and part not in _STOP:
                out.append(part)
    return out


def _split(word: str) -> list[str]:
    pieces = [p for chunk in word.split("_") for p in _CAMEL.findall(chunk)]
    return pieces if len(pieces) > 1 else []


@dataclass(frozen=True)
class Nearest:
    """The closest entry to a paste, its score, and the runner-up's score."""

    entry: FailureMode
    score: float
    runner_up: float
    terms: tuple[str, ...]  # the paste's tokens that carried the score, strongest first


@dataclass(frozen=True)
class _Index:
    entries: tuple[FailureMode, ...]
    counts: tuple[Counter[str], ...]
    lengths: tuple[int, ...]
    average: float
    idf: dict[str, float]


def _document(entry: FailureMode, merged: list[FailureMode]) -> list[str]:
    words: list[str] = []
    for e in (entry, *merged):
        words += tokens(e.title) * 2 + tokens(e.meaning) + tokens(e.cause)
        for example in e.examples:
            words += tokens(example.text)
        for pattern in e.patterns:
            words += tokens(re.sub(r"\\[A-Za-z]", " ", pattern))
        for claim in e.claims:
            words += tokens(claim.kind.value)
            for values in claim.constraints.values():
                words += tokens(" ".join(str(v) for v in values))
    return words


# extra words per entry id (the tokens of its labelled pastes, knowledge/examples.py), added to its document
Extra = Mapping[str, Sequence[str]]
# by (id(kb), id(extra)); both are kept so that their ids are not reused
_INDEXES: dict[tuple[int, int], tuple[KnowledgeBase, Extra | None, _Index]] = {}


def _index(kb: KnowledgeBase, extra: Extra | None = None) -> _Index:
    key = (id(kb), id(extra))
    cached = _INDEXES.get(key)
    if cached is not None and cached[0] is kb and cached[1] is extra:
        return cached[2]
    if len(_INDEXES) >= 4:
        _INDEXES.clear()
    built = _build(kb, extra)
    _INDEXES[key] = (kb, extra, built)
    return built


def vocabulary(kb: KnowledgeBase) -> frozenset[str]:
    """Every token of the knowledge base's own words (the documents the nearest entry is ranked over)."""
    return frozenset(_index(kb).idf)


def _build(kb: KnowledgeBase, extra: Extra | None = None) -> _Index:
    merged: dict[str, list[FailureMode]] = {}
    for e in kb.entries:
        if e.merged_into:
            merged.setdefault(e.merged_into, []).append(e)
    entries = tuple(e for e in kb.entries if not e.merged_into)
    extra = extra or {}
    counts = tuple(Counter(_document(e, merged.get(e.id, [])) + list(extra.get(e.id, ()))) for e in entries)
    lengths = tuple(sum(c.values()) for c in counts)
    df: Counter[str] = Counter()
    for c in counts:
        df.update(c.keys())
    n = len(entries)
    idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
    return _Index(entries, counts, lengths, sum(lengths) / max(n, 1), idf)


def rank(
    text: str, kb: KnowledgeBase, extra: Extra | None = None, more: Sequence[str] = ()
) -> list[tuple[float, FailureMode, tuple[str, ...]]]:
    """Every entry with a positive BM25 score for the paste, best first, with the terms that scored most. `extra`
    adds words to entries' documents (by entry id); `more` adds terms to the query (structural features)."""
    index = _index(kb, extra)
    query = list(dict.fromkeys(t for t in tokens(text) if t in index.idf))[:MAX_QUERY_TOKENS]
    query += [t for t in dict.fromkeys(more) if t in index.idf and t not in query][:MAX_QUERY_TOKENS]
    scored = []
    for entry, counts, length in zip(index.entries, index.counts, index.lengths, strict=True):
        norm = _K1 * (1 - _B + _B * length / index.average)
        parts = []
        for term in query:
            tf = counts.get(term, 0)
            if tf:
                parts.append((index.idf[term] * tf * (_K1 + 1) / (tf + norm), term))
        if parts:
            parts.sort(reverse=True)
            scored.append((sum(p for p, _ in parts), entry, tuple(t for _, t in parts[:6])))
    scored.sort(key=lambda s: (-s[0], s[1].id))
    return scored


# a paste with none of these words reports no failure (a package list, a config file): no lead is offered for it
_FAILURE_WORD = re.compile(
    r"error|exception|fail|cannot|can't|could not|couldn't|unable|not found|missing|invalid|crash|abort|terminate"
    r"|denied|wrong|slow|hang|\bnan\b|warn|traceback|segfault|unsupported|not supported|not available|no such"
    r"|失败|错误|エラー|失敗",
    re.IGNORECASE,
)


def reports_failure(text: str) -> bool:
    """Whether a text says something failed (an error, a crash, a wrong or slow result): only then is a lead offered."""
    return bool(_FAILURE_WORD.search(text[:MAX_QUERY_CHARS]))


def nearest(
    text: str,
    kb: KnowledgeBase,
    threshold: float = THRESHOLD,
    margin: float = MARGIN,
    extra: Extra | None = None,
    more: Sequence[str] = (),
) -> Nearest | None:
    """The closest entry when the text reports a failure and the entry scores at least `threshold` and `margin` times
    the runner-up; else None."""
    if not reports_failure(text):
        return None
    ranked = rank(text, kb, extra, more)
    if not ranked:
        return None
    score, entry, terms = ranked[0]
    runner_up = ranked[1][0] if len(ranked) > 1 else 0.0
    if score < threshold or score < margin * runner_up:
        return None
    return Nearest(entry, score, runner_up, terms)


def closest_hit(
    paste: Paste,
    kb: KnowledgeBase,
    extra: Extra | None = None,
    threshold: float = THRESHOLD,
    margin: float = MARGIN,
    more: Sequence[str] = (),
) -> Hit | None:
    """The nearest entry as a low-confidence hit (how="closest"), on the paste's line that carries its best term."""
    found = nearest(paste.joined, kb, threshold, margin, extra, more)
    if found is None:
        return None
    groups = {"terms": ", ".join(found.terms), "score": f"{found.score:.1f}", "runner_up": f"{found.runner_up:.1f}"}
    return lead_hit(found.entry, paste, found.terms, groups)


def lead_hit(entry: FailureMode, paste: Paste, terms: Sequence[str], groups: dict[str, str]) -> Hit:
    """A fallback's lead as a low-confidence hit (how="closest"), on the first line holding one of its terms (the
    structural features, `kind:value`, name no line)."""
    index = 0
    for term in (t for t in terms if ":" not in t):
        index = next((i for i, line in enumerate(paste.lines[:2000]) if term in line.lower()), -1)
        if index >= 0:
            break
    index = max(index, 0)
    return Hit(
        entry=entry,
        position=paste.starts[index] if paste.starts else 0,
        line=paste.lines[index] if paste.lines else "",
        line_indices=(index,) if paste.lines else (),
        groups=groups,
        libraries=(),
        how="closest",
    )
