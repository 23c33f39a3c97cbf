"""What explain's fallback learns from real labelled pastes: their informative tokens, per knowledge-base entry.

The packaged data/explain_examples.json holds, for each labelled paste of the seen benchmark sets, the entry it was
labelled with and its informative tokens (knowledge/nearest.py's tokens()) and structural features (features(): the
signal kinds explain extracts, shared libraries by base name and major version), kept only when a token occurs in at
least MIN_PASTES different pastes or in the knowledge base's own words: no user names, random ids or paths, and no
texts. When no rule fires, each entry's BM25 document gains the tokens of its labelled pastes (entry_documents), and
the closest entry is offered above THRESHOLD and MARGIN (calibrated by leave-one-set-out cross-validation,
benchmarks/explain_examples_cv.py) where knowledge/linear.py's trained model offers no lead of its own.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ortgpu.knowledge.base import KnowledgeBase
from ortgpu.knowledge.nearest import MAX_QUERY_CHARS, tokens, vocabulary
from ortgpu.knowledge.paste import Paste, prepare
from ortgpu.knowledge.signals import extract_signals, failing_nodes

__all__ = [
    "FEATURES",
    "MARGIN",
    "MIN_PASTES",
    "SCHEMA",
    "THRESHOLD",
    "Example",
    "Examples",
    "build_examples",
    "entry_documents",
    "features",
    "features_of",
    "load_examples",
    "shipped_documents",
    "shipped_features",
]

SCHEMA = 1
MIN_PASTES = 2  # a token from fewer pastes than this (and not in the knowledge base's words) is dropped
THRESHOLD = 25.0  # the score floor of the BM25 ranking, by the CV below
# the kinds of features() the shipped examples are built with (tools/build_explain_examples.py), by the CV: signal kinds
# and their attributes, and shared libraries by base name and major version (failing ops and bindings: 2 right leads
# fewer on twenty sets, 756 of 840; 2 more on nineteen; nothing on seventeen)
FEATURES: tuple[str, ...] = ("sig:", "lib:")
# over the runner-up, by leave-one-set-out CV on twenty sets (1,366 pastes) with FEATURES: 758 right of 838 offered,
# 90.5%, no unrelated text offered a lead (20 / 1.15 on thirteen sets, 20 / 1.2 on fifteen, 15 / 1.25 on seventeen,
# 15 / 1.2 on eighteen and nineteen). explain offers knowledge/linear.py's trained model's lead first and this one
# where the model is unsure (benchmarks/explain_examples_linear.py)
MARGIN = 1.2


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
    features: tuple[str, ...] = ()  # the kinds of features() in the tokens (by prefix): a query must carry them too

    def to_json(self) -> dict:
        return {
            "schema": SCHEMA,
            "description": "informative tokens of labelled explain pastes (no texts), by knowledge-base entry; built "
            "by tools/build_explain_examples.py",
            "built_from": list(self.built_from),
            "min_pastes": MIN_PASTES,
            "features": list(self.features),
            "examples": [{"entry": e.entry, "tokens": list(e.tokens)} for e in self.examples],
        }


# a shared library named in a paste: libcublasLt.so.11 / cublasLt64_11.dll / cudnn_ops_infer64_8.dll
_SO = re.compile(r"\blib([A-Za-z][A-Za-z0-9_+-]{1,60}?)\.so(?:\.(\d{1,3}))?\b")
_DLL = re.compile(r"\b([A-Za-z][A-Za-z0-9_+-]{1,60}?)(?:64)?(?:_(\d{1,3}))?\.dll\b", re.IGNORECASE)
# the binding a paste comes from, by its stack frames and package names
_BINDINGS = (
    ("python", re.compile(r'File "[^"\n]{1,300}\.py", line \d|Traceback \(most recent call last\)')),
    ("csharp", re.compile(r"Microsoft\.ML\.OnnxRuntime|\.cs:line \d|System\.\w+Exception")),
    ("java", re.compile(r"ai\.onnxruntime\.|\.java:\d|OrtException")),
    ("javascript", re.compile(r"onnxruntime-(?:web|node|react-native)|\.m?js:\d|\bwasm\b", re.IGNORECASE)),
    ("rust", re.compile(r"\bort::|\.rs:\d|cargo\b")),
    ("cpp", re.compile(r"Ort::|OrtApi|\.(?:cpp|cc|hpp):\d")),
)
MAX_FEATURES = 64


def features(paste: Paste) -> list[str]:
    """Structural features of a paste, as tokens no word can be (they hold ':' or '@'): the signal kinds explain
    extracts and their attributes (knowledge/signals.py), shared libraries by base name and major version, the op ORT
    names as failing, and the binding; from the first MAX_QUERY_CHARS characters, at most MAX_FEATURES."""
    if len(paste.joined) > MAX_QUERY_CHARS:  # as the words: the first screens carry the error
        paste = prepare(paste.joined[:MAX_QUERY_CHARS])
    out: list[str] = []
    for signal in extract_signals(paste):
        kind = signal.kind.value
        out.append(f"sig:{kind}")
        out += [f"sig:{kind}:{k}={str(v).lower()}" for k, v in sorted(signal.attributes.items()) if k != "name"]
    text = paste.joined
    for m in itertools.islice(itertools.chain(_SO.finditer(text), _DLL.finditer(text)), 32):
        base = re.sub(r"[^a-z0-9]", "", m.group(1).lower())
        if base:
            out.append(f"lib:{base}")
            if m.group(2):
                out.append(f"lib:{base}@{m.group(2)}")
    out += [f"op:{node.op.lower()}" for node in failing_nodes(paste)[:8]]
    out += [f"binding:{name}" for name, pattern in _BINDINGS if pattern.search(text)]
    return list(dict.fromkeys(out))[:MAX_FEATURES]


def features_of(paste: Paste, kinds: tuple[str, ...]) -> list[str]:
    """The paste's features of these kinds (prefixes such as "sig:"); none without kinds."""
    return [f for f in features(paste) if f.startswith(kinds)] if kinds else []


def build_examples(
    labelled: Iterable[tuple[str, str]], kb: KnowledgeBase, built_from: Iterable[str], kinds: tuple[str, ...] = ()
) -> Examples:
    """Examples from (entry id, paste text) pairs: each paste's distinct informative tokens and its features of these
    kinds, less those that occur in fewer than MIN_PASTES pastes and are not in the knowledge base's words.
    Deterministic (sorted)."""
    prepared = [(entry, prepare(text)) for entry, text in labelled]
    raw = [(entry, frozenset(tokens(p.joined) + features_of(p, kinds))) for entry, p in prepared]
    df: Counter[str] = Counter()
    for _, words in raw:
        df.update(words)
    known = vocabulary(kb)
    kept = [
        Example(entry, tuple(sorted(t for t in words if df[t] >= MIN_PASTES or t in known))) for entry, words in raw
    ]
    kept = [e for e in kept if e.tokens]
    kept.sort(key=lambda e: (e.entry, e.tokens))
    return Examples(tuple(sorted(built_from)), tuple(kept), tuple(kinds))


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
        tuple(str(k) for k in doc.get("features", ())),
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


def shipped_features(paste: Paste) -> list[str]:
    """The paste's features of the kinds the packaged examples were built with (the fallback's extra query terms)."""
    return features_of(paste, load_examples().features)
