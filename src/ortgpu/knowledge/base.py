"""The failure-mode knowledge base: load and validate data/failure_modes.json, look entries up by id."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from importlib import resources
from pathlib import Path
from typing import Any

from ortgpu.knowledge.matrix import Platform
from ortgpu.knowledge.prefilter import Prefilter, linearity_problems, prefilter_for
from ortgpu.knowledge.signals import SignalKind

__all__ = [
    "ALLOWED_GROUPS",
    "CLAIM_KEYS",
    "Claim",
    "Example",
    "FailureMode",
    "Family",
    "KnowledgeBase",
    "KnowledgeBaseError",
    "Severity",
    "UnknownFailureModeError",
    "load_knowledge_base",
    "lookup",
    "validate_document",
]

# Named groups a pattern may capture; explain reports them as the specifics of a match.
ALLOWED_GROUPS = frozenset(
    {
        "lib",
        "path",
        "code",
        "provider",
        "bytes",
        "gpu",
        "symbol",
        "version",
        "max",
        "input",
        "op",
        "package",
        "count",
        "index",
        "got",
        "expected",
        "option",
    }
)
_ID_RE = re.compile(r"^(?:FM|NG)-\d{2,3}$")


class KnowledgeBaseError(ValueError):
    """The knowledge-base file is malformed (a bug in ortgpu's data, caught by the test suite)."""


class UnknownFailureModeError(KeyError):
    """No entry has this id."""


class Family(Enum):
    """Where in the stack a failure mode lives."""

    PACKAGE = "package"
    LINUX_LOADER = "linux_loader"
    WINDOWS_LOADER = "windows_loader"
    FALLBACK = "fallback"
    DRIVER_DEVICE = "driver_device"
    CUDA_LIBRARY = "cuda_library"
    MEMORY = "memory"
    PERFORMANCE = "performance"
    CONCURRENCY = "concurrency"
    TENSORRT = "tensorrt"
    BENIGN = "benign"
    NOT_GPU = "not_gpu"  # model / input errors: not a GPU setup problem
    CONFIGURATION = "configuration"  # how the program configures or calls ORT: options, provider names/order, APIs
    HOST_MEMORY = "host_memory"  # the machine's RAM, not the GPU's memory


class Severity(Enum):
    ERROR = "error"  # it fails
    WARNING = "warning"  # it degrades: CPU fallback, slowness
    INFO = "info"  # informational, nothing to fix


@dataclass(frozen=True)
class Example:
    """A real message (verbatim=True) or one composed from a documented message format (verbatim=False)."""

    text: str
    source: str
    verbatim: bool


CLAIM_KEYS = frozenset({"family", "component", "major", "platform", "name", "status", "ep", "evidence"})


@dataclass(frozen=True)
class Claim:
    """A structural signal an entry explains: its kind and the attribute values it requires (any of each list).

    Strings match case-insensitively as prefixes ("cuDNN sub-library" accepts "cuDNN sub-library adv"), numbers
    exactly. The claim with the most constraints wins when several entries claim one signal.
    """

    kind: SignalKind
    constraints: Mapping[str, tuple[str | int, ...]]

    @property
    def specificity(self) -> int:
        return len(self.constraints)

    def closeness(self, attributes: Mapping[str, str | int]) -> int:
        """How much of the signal's string values the accepted prefixes cover: "InvalidDeviceFunction" is closer to
        a claim of "InvalidDeviceFunction" than to one of "InvalidDevice"."""
        total = 0
        for key, wanted in self.constraints.items():
            value = attributes.get(key)
            if isinstance(value, str):
                total += max(
                    (len(w) for w in wanted if isinstance(w, str) and value.lower().startswith(w.lower())), default=0
                )
        return total

    def accepts(self, kind: SignalKind, attributes: Mapping[str, str | int]) -> bool:
        if kind is not self.kind:
            return False
        for key, wanted in self.constraints.items():
            value = attributes.get(key)
            if value is None:
                return False
            if isinstance(value, int):
                if value not in wanted:
                    return False
            elif not any(isinstance(w, str) and value.lower().startswith(w.lower()) for w in wanted):
                return False
        return True


@dataclass(frozen=True)
class FailureMode:
    """One entry of the knowledge base."""

    id: str
    title: str
    family: Family
    severity: Severity
    platforms: tuple[Platform, ...]
    priority: int  # higher wins when several entries match: root causes above consequences above notes
    patterns: tuple[str, ...]
    examples: tuple[Example, ...]
    meaning: str
    cause: str
    fix_any: str | None
    fix_linux: str | None
    fix_windows: str | None
    sources: tuple[str, ...]
    related: tuple[str, ...] = ()
    merged_into: str | None = None  # its message is another entry's; matched as that entry
    generic: bool = False  # a catch-all, dropped when a specific entry matched the same lines
    claims: tuple[Claim, ...] = ()  # structural signals this entry explains (knowledge/signals.py)
    compiled: tuple[re.Pattern[str], ...] = field(default=(), compare=False, repr=False)
    prefilters: tuple[Prefilter | None, ...] = field(default=(), compare=False, repr=False)  # one per pattern

    @property
    def is_gpu_problem(self) -> bool:
        """A GPU/CUDA problem that needs action (not a model error, not an informational note)."""
        return self.family is not Family.NOT_GPU and self.severity is not Severity.INFO

    def fix_for(self, platform: Platform | None) -> str:
        """The fix text for a platform; both variants (labelled) when the platform is unknown and they differ."""
        if platform is Platform.LINUX and self.fix_linux:
            return self.fix_linux
        if platform is Platform.WINDOWS and self.fix_windows:
            return self.fix_windows
        if self.fix_any:
            return self.fix_any
        variants = [(name, text) for name, text in (("Linux", self.fix_linux), ("Windows", self.fix_windows)) if text]
        if len(variants) == 1:
            return variants[0][1]
        return " ".join(f"{name}: {text}" for name, text in variants)


@dataclass(frozen=True)
class KnowledgeBase:
    entries: tuple[FailureMode, ...]

    def get(self, entry_id: str) -> FailureMode:
        for entry in self.entries:
            if entry.id == entry_id:
                return entry
        raise UnknownFailureModeError(entry_id)

    @functools.cached_property
    def shared_literals(self) -> frozenset[str]:
        """Required literals that more than one entry's patterns have (": cannot open shared object file"): they say
        which kind of message a line is, not which entry it is."""
        owners: dict[str, set[str]] = {}
        for entry in self.entries:
            for pre in entry.prefilters:
                if pre is not None and pre.literal:
                    owners.setdefault(pre.literal.lower(), set()).add(entry.id)
        literals = list(owners)
        shared = {lit for lit, ids in owners.items() if len(ids) > 1}
        shared |= {a for a in literals for b in literals if a != b and a in b and owners[a] != owners[b]}
        return frozenset(shared)

    @property
    def matchable(self) -> tuple[FailureMode, ...]:
        """Entries with patterns or claims of their own (merged entries are matched through their target)."""
        return tuple(e for e in self.entries if e.patterns or e.claims)


def validate_document(doc: Any) -> list[str]:
    """Every problem in a knowledge-base document, as sentences; empty when it is valid."""
    problems: list[str] = []
    if not isinstance(doc, dict) or doc.get("schema") != 1 or not isinstance(doc.get("entries"), list):
        return ["expected an object with schema 1 and an 'entries' list"]
    ids = [e.get("id") for e in doc["entries"] if isinstance(e, dict)]
    known = set(ids)
    with_patterns = {e.get("id") for e in doc["entries"] if isinstance(e, dict) and e.get("patterns")}
    if len(ids) != len(known):
        problems.append("duplicate ids: " + ", ".join(sorted({str(i) for i in ids if ids.count(i) > 1})))
    for e in doc["entries"]:
        if not isinstance(e, dict):
            problems.append(f"entry is not an object: {e!r}")
            continue
        eid = e.get("id")
        if not isinstance(eid, str) or not _ID_RE.match(eid):
            problems.append(f"{eid!r}: id must look like FM-01 or NG-01")
        for key in ("title", "meaning", "cause"):
            if not isinstance(e.get(key), str) or not e[key].strip():
                problems.append(f"{eid}: '{key}' is empty")
        try:
            Family(e.get("family"))
            Severity(e.get("severity"))
            if not e.get("platforms"):
                problems.append(f"{eid}: no platforms")
            for p in e.get("platforms", ()):
                Platform(p)
        except ValueError as exc:
            problems.append(f"{eid}: {exc}")
        if not isinstance(e.get("priority"), int):
            problems.append(f"{eid}: priority must be an integer")
        fix = e.get("fix")
        if not isinstance(fix, dict) or not any(isinstance(v, str) and v.strip() for v in fix.values()):
            problems.append(f"{eid}: no fix text")
        elif set(fix) - {"any", "linux", "windows"}:
            problems.append(f"{eid}: fix keys must be any/linux/windows, got {sorted(fix)}")
        if not e.get("sources"):
            problems.append(f"{eid}: no sources")
        examples = e.get("examples")
        if not examples or not all(isinstance(x, dict) and x.get("text") and x.get("source") for x in examples):
            problems.append(f"{eid}: every entry needs examples with text and source")
        merged = e.get("merged_into")
        if merged:
            if e.get("patterns"):
                problems.append(f"{eid}: a merged entry has no patterns of its own")
            if merged not in with_patterns:
                problems.append(f"{eid}: merged_into {merged!r} is not an entry with patterns")
        elif not e.get("patterns") and not e.get("signals"):
            problems.append(f"{eid}: no patterns or signals (and not merged into another entry)")
        for pattern in e.get("patterns", ()):
            try:
                compiled = re.compile(pattern)
            except re.error as exc:
                problems.append(f"{eid}: pattern {pattern!r} does not compile: {exc}")
                continue
            extra = set(compiled.groupindex) - ALLOWED_GROUPS
            if extra:
                problems.append(f"{eid}: pattern {pattern!r} has unknown groups {sorted(extra)}")
            problems.extend(f"{eid}: pattern {pattern!r} {why}" for why in linearity_problems(pattern))
        problems.extend(_claim_problems(eid, e.get("signals", [])))
        for rel in e.get("related", ()):
            if rel not in known:
                problems.append(f"{eid}: related {rel!r} does not exist")
    return problems


def _entry(e: dict[str, Any]) -> FailureMode:
    fix = e["fix"]
    compiled = tuple(re.compile(p) for p in e["patterns"])
    return FailureMode(
        id=e["id"],
        title=e["title"],
        family=Family(e["family"]),
        severity=Severity(e["severity"]),
        platforms=tuple(Platform(p) for p in e["platforms"]),
        priority=int(e["priority"]),
        patterns=tuple(e["patterns"]),
        examples=tuple(Example(x["text"], x["source"], bool(x.get("verbatim", True))) for x in e["examples"]),
        meaning=e["meaning"],
        cause=e["cause"],
        fix_any=fix.get("any"),
        fix_linux=fix.get("linux"),
        fix_windows=fix.get("windows"),
        sources=tuple(e["sources"]),
        related=tuple(e.get("related", ())),
        merged_into=e.get("merged_into"),
        generic=bool(e.get("generic", False)),
        claims=tuple(_claim(c) for c in e.get("signals", ())),
        compiled=compiled,
        prefilters=tuple(prefilter_for(p) for p in compiled),
    )


def _claim(c: dict[str, Any]) -> Claim:
    constraints = {
        key: tuple(value) if isinstance(value, list) else (value,) for key, value in c.items() if key != "kind"
    }
    return Claim(SignalKind(c["kind"]), constraints)


def _claim_problems(eid: Any, claims: Any) -> list[str]:
    if not isinstance(claims, list):
        return [f"{eid}: 'signals' must be a list"]
    problems = []
    kinds = {k.value for k in SignalKind}
    for c in claims:
        if not isinstance(c, dict) or c.get("kind") not in kinds:
            problems.append(f"{eid}: signal claim {c!r} needs a kind among {sorted(kinds)}")
            continue
        extra = set(c) - CLAIM_KEYS - {"kind"}
        if extra:
            problems.append(f"{eid}: signal claim has unknown keys {sorted(extra)}")
        for key, value in c.items():
            values = value if isinstance(value, list) else [value]
            if key != "kind" and not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in values):
                problems.append(f"{eid}: signal claim {key!r} must be strings or integers")
    return problems


def load_knowledge_base(path: Path | None = None) -> KnowledgeBase:
    """Read and validate the knowledge base (the packaged one when path is None; that one is cached)."""
    if path is None:
        return _packaged()
    return _load_text(Path(path).read_text(encoding="utf-8"), str(path))


@functools.cache
def _packaged() -> KnowledgeBase:
    text = resources.files("ortgpu").joinpath("data/failure_modes.json").read_text(encoding="utf-8")
    return _load_text(text, "data/failure_modes.json")


def _load_text(text: str, origin: str) -> KnowledgeBase:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise KnowledgeBaseError(f"{origin}: not JSON ({exc})") from exc
    problems = validate_document(doc)
    if problems:
        raise KnowledgeBaseError(f"{origin}: " + "; ".join(problems[:5]))
    return KnowledgeBase(tuple(_entry(e) for e in doc["entries"]))


def lookup(entry_id: str) -> FailureMode:
    """The entry with this id (e.g. "FM-12"), for doctor/package fix texts. Raises UnknownFailureModeError."""
    return load_knowledge_base().get(entry_id)
