"""Paste normalisation and matching for `explain`: strip log noise, find the failure modes, pull out the specifics."""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass

from ortgpu.knowledge.base import FailureMode, Family, KnowledgeBase, Severity, load_knowledge_base
from ortgpu.knowledge.matrix import LibraryFamily, Platform, library_info
from ortgpu.knowledge.paste import Paste, normalise, prepare
from ortgpu.knowledge.signals import Signal, extract_signals
from ortgpu.knowledge.text import squeeze

__all__ = ["Hit", "Paste", "PasteFacts", "extract_facts", "find_hits", "normalise", "prepare"]

MAX_LIBRARY_TOKENS = 200
_LIBRARY_TOKEN = re.compile(
    r"(?<![A-Za-z0-9_+.-])[A-Za-z0-9_+.-]{1,200}?(?:\.so(?:\.\d{1,6}){1,4}|\.dll\b)", re.IGNORECASE
)
_WINDOWS_HINT = re.compile(r"\.dll\b|\b[A-Za-z]:\\|WinError|LoadLibrary|\\site-packages\\", re.IGNORECASE)
_LINUX_HINT = re.compile(
    r"\.so(?:\.\d+)*\b|(?:^|[\s\"'(])/(?:usr|home|opt|lib|root|onnxruntime_src)/|LD_LIBRARY_PATH|ldconfig"
)
_BUILD_NEEDS = re.compile(r"Require cuDNN (\d+)\.\* and CUDA (\d+)\.\*")
_CUDA_FAILURE = re.compile(r"\bCUDA failure (\d+)\b")
_ORT_VERSION = (
    re.compile(r"onnxruntime-(?:linux|win|osx)-[\w]+-(?:gpu|cuda)[\w-]*?-(\d+\.\d+\.\d+)"),
    re.compile(r"\bonnxruntime(?:[-_]gpu)?(?:==|\s+|-)(\d+\.\d+\.\d+)\b"),
    re.compile(r"\blibonnxruntime\.so\.(\d+\.\d+\.\d+)"),
    re.compile(r"onnxruntime[-_]gpu-(\d+\.\d+\.\d+)-cp\d+"),
)


@dataclass(frozen=True)
class Hit:
    """One failure mode found in a paste, with what its patterns captured."""

    entry: FailureMode
    position: int  # offset of the first match in the normalised text
    line: str  # the normalised line where it matched (joined when the match spans lines)
    line_indices: tuple[int, ...]
    groups: Mapping[str, str]  # named groups of the patterns, first value seen per name
    libraries: tuple[str, ...]  # every distinct `lib` value
    how: str = "pattern"  # "pattern", "structure" (a claimed signal) or "wrapped text" (a phrase across lines)

    @property
    def library(self) -> str | None:
        return self.libraries[0] if self.libraries else None


@dataclass(frozen=True)
class PasteFacts:
    """What a paste says about the setup, independent of any failure mode."""

    platform: Platform | None  # from .dll / C:\\ vs .so / /usr paths; None when unclear
    ort_version: str | None
    build_cuda_major: int | None  # from "Require cuDNN 9.* and CUDA 12.*": what the ORT build needs
    build_cudnn_major: int | None
    libraries: tuple[str, ...]  # CUDA / cuDNN / TensorRT / driver / runtime libraries named in the paste
    cuda_error_codes: tuple[int, ...]


MAX_MATCHES_PER_PATTERN = 32  # the first matches carry the specifics; a log repeating a line adds nothing


def _matches(entry: FailureMode, paste: Paste) -> list[re.Match[str]]:
    found: list[re.Match[str]] = []
    for pattern, prefilter in zip(entry.compiled, entry.prefilters or (None,) * len(entry.compiled), strict=True):
        if prefilter is not None and not prefilter.admits(paste.joined, paste.lowered):
            continue
        found.extend(itertools.islice(pattern.finditer(paste.joined), MAX_MATCHES_PER_PATTERN))
    return sorted(found, key=lambda m: m.start())


def find_hits(text: str | Paste, kb: KnowledgeBase | None = None) -> tuple[Hit, ...]:
    """Every failure mode the paste shows, best first: by the entries' patterns, by the structural signals they
    claim (knowledge/signals.py), and by their long literal phrases in the whitespace-free text (wrapped lines).

    Order: GPU problems (by priority), then model/input errors, then informational notes; ties by position.
    A generic entry is dropped when a specific one matched the same lines.
    """
    kb = kb or load_knowledge_base()
    paste = prepare(text)
    hits: dict[str, Hit] = {}
    for entry in kb.matchable:
        hit = _pattern_hit(entry, paste)
        if hit is not None:
            hits[entry.id] = hit
    for signal in extract_signals(paste):
        claimant = _claimant(kb, signal)
        if claimant is not None:
            hits[claimant.id] = _with_signal(hits.get(claimant.id), claimant, signal, paste)
    head = _head(paste)
    glued: Paste | None = None
    squeezed: tuple[str, tuple[int, ...]] | None = None
    for entry in kb.matchable:
        if entry.id in hits or not entry.patterns:
            continue
        glued = glued or _glued(head)
        hit = _pattern_hit(entry, head, glued)  # lines a terminal broke in the middle of a word
        if hit is not None:
            hits[entry.id] = hit
            continue
        squeezed = squeezed or head.squeezed
        hit = _wrapped_hit(entry, head, squeezed, kb.shared_literals)
        if hit is not None:
            hits[entry.id] = hit
    found = list(hits.values())
    specific_lines = {i for h in found if not h.entry.generic for i in h.line_indices}
    found = [h for h in found if not (h.entry.generic and specific_lines & set(h.line_indices))]
    prose = {h.entry.id for h in found if _prose_only(h, paste)}
    if len(prose) == len(found):  # no tool output matched: the prose is all the evidence there is
        prose = set()
    superseded = _superseded_warnings(found, paste)
    return tuple(sorted(found, key=lambda h: (h.entry.id in prose, h.entry.id in superseded, *_rank_key(h))))


def _superseded_warnings(found: list[Hit], paste: Paste) -> set[str]:
    """Hits that rest only on lines ORT logged as warnings ("Failed to create TensorrtExecutionProvider") when a
    model/input error comes after them: that error is what failed; the warnings are listed below it."""
    logged = paste.warned | _python_warnings(paste)
    if not logged:
        return set()
    warned = {h.entry.id: max(h.line_indices) for h in found if h.line_indices and set(h.line_indices) <= logged}
    if not warned:
        return set()
    errors = [
        min(h.line_indices)
        for h in found
        if h.entry.family is Family.NOT_GPU and h.line_indices and not set(h.line_indices) <= logged
    ]
    return {eid for eid, last in warned.items() if any(first > last for first in errors)}


# Python's warnings module ("<file>:56: UserWarning: Specified provider ..."): a warning, as ORT's [W:] lines are
_PY_WARNING = re.compile(r"\b(?:User|Runtime|Deprecation|Future)Warning:\s")


def _python_warnings(paste: Paste) -> frozenset[int]:
    return frozenset(i for i, line in enumerate(paste.lines) if "Warning:" in line and _PY_WARNING.search(line))


# the user's own sentences: first person, or "this issue"; a line of tool output carries none of these
_PROSE = re.compile(
    r"(?:^|(?<=[\s(]))(?:I|I'm|I've|my|we|we're|we've|our|us|me)(?=[\s,.!?;:)]|$)|\bthis (?:issue|problem)\b",
    re.IGNORECASE,
)
# what only tool output has: ORT's error envelope, an exception class, a status line
_TOOL_OUTPUT = re.compile(
    r"\[ONNXRuntimeError\]|\[ErrorCode:|\b\w{2,60}(?:Error|Exception)\b\s?:|\bStatus Message\b|\b(?:failure|error) \d"
)


def _prose_only(hit: Hit, paste: Paste) -> bool:
    """Whether every line a hit rests on is the user's prose (no log marks, first-person wording): such a hit yields
    to any hit on tool output, whatever their priorities ("it is very slow" vs the warning the tool printed)."""
    lines = [i for i in hit.line_indices if i < len(paste.lines)]
    return bool(lines) and all(
        i not in paste.logged and _PROSE.search(paste.lines[i]) and not _TOOL_OUTPUT.search(paste.lines[i])
        for i in lines
    )


def _pattern_hit(entry: FailureMode, paste: Paste, glued: Paste | None = None) -> Hit | None:
    """The entry's pattern matches in the paste (or, given `glued`, in the paste's lines joined without breaks)."""
    matches = _matches(entry, glued or paste)
    if glued is not None:  # a zero-width match (a lookahead test of one line) says nothing once lines are glued
        matches = [m for m in matches if m.end() > m.start()]
    if not matches:
        return None
    groups: dict[str, str] = {}
    libraries: list[str] = []
    for m in matches:
        for name, value in m.groupdict().items():
            if value is not None:
                groups.setdefault(name, value)
                if name == "lib" and value not in libraries:
                    libraries.append(value)

    def line_of(offset: int) -> int:
        return paste.line_index(_unglue(paste, offset) if glued is not None else offset)

    first = matches[0]
    first_line = line_of(first.start())
    last_line = line_of(max(first.end() - 1, first.start()))
    covered = sorted({i for m in matches for i in range(line_of(m.start()), line_of(max(m.end() - 1, m.start())) + 1)})
    return Hit(
        entry=entry,
        position=paste.starts[first_line] if glued is not None else first.start(),
        line=" ".join(paste.lines[first_line : last_line + 1]) if paste.lines else "",
        line_indices=tuple(covered),
        groups=groups,
        libraries=tuple(libraries),
        how="pattern" if glued is None else "wrapped text",
    )


def _claimant(kb: KnowledgeBase, signal: Signal) -> FailureMode | None:
    """The entry whose claim fits the signal most specifically (then the higher priority)."""
    best: tuple[int, int, int] | None = None
    chosen: FailureMode | None = None
    for entry in kb.matchable:
        for claim in entry.claims:
            if claim.accepts(signal.kind, signal.attributes):
                rank = (claim.specificity, claim.closeness(signal.attributes), entry.priority)
                if best is None or rank > best:
                    best, chosen = rank, entry
    return chosen


def _with_signal(hit: Hit | None, entry: FailureMode, signal: Signal, paste: Paste) -> Hit:
    lib = signal.values.get("lib")
    if hit is not None:  # the entry's own pattern matched too: keep its line, add what the signal knows
        groups = {**signal.values, **hit.groups}
        libraries = hit.libraries if not lib or lib in hit.libraries else (*hit.libraries, lib)
        return dataclasses.replace(hit, groups=groups, libraries=libraries, how=hit.how)
    return Hit(
        entry=entry,
        position=signal.position,
        line=paste.lines[signal.line_index],
        line_indices=(signal.line_index,),
        groups=dict(signal.values),
        libraries=(lib,) if lib else (),
        how="structure",
    )


WRAP_REPAIR_CHARS = 65_536  # wrapped messages are pasted from a screen: repair the first 64 KB, not a whole log


def _head(paste: Paste) -> Paste:
    """The first lines of the paste, up to WRAP_REPAIR_CHARS."""
    if len(paste.joined) <= WRAP_REPAIR_CHARS:
        return paste
    count = max(bisect.bisect_right(paste.starts, WRAP_REPAIR_CHARS) - 1, 1)
    lines = paste.lines[:count]
    joined = "\n".join(lines)
    logged = frozenset(i for i in paste.logged if i < count)
    warned = frozenset(i for i in paste.warned if i < count)
    return Paste(
        lines, joined, joined.lower(), paste.starts[:count], paste.origins, paste.line_origins[:count], logged, warned
    )


def _glued(paste: Paste) -> Paste:
    """The paste's lines joined with nothing between them: one line, as the terminal had it before wrapping."""
    text = "".join(paste.lines)
    return Paste((text,), text, text.lower(), (0,))


def _unglue(paste: Paste, offset: int) -> int:
    """An offset in the glued text as an offset in paste.joined (which has a newline after each line)."""
    return offset + max(bisect.bisect_right(_glued_starts(paste), offset) - 1, 0)


def _glued_starts(paste: Paste) -> list[int]:
    return [start - index for index, start in enumerate(paste.starts)]


MIN_WRAPPED_LITERAL = 24  # shorter phrases are not distinctive enough to match without their pattern


def _wrapped_hit(
    entry: FailureMode, paste: Paste, squeezed: tuple[str, tuple[int, ...]], shared: frozenset[str]
) -> Hit | None:
    """An entry whose pattern did not match, but whose long, distinctive literal phrase is in the text once
    whitespace is ignored (lines wrapped at any column, extra or missing spaces)."""
    text, starts = squeezed
    for prefilter in entry.prefilters:
        if prefilter is None or not prefilter.literal or prefilter.literal.lower() in shared:
            continue
        phrase = squeeze(prefilter.literal)
        if len(phrase) < MIN_WRAPPED_LITERAL or prefilter.admits(paste.joined, paste.lowered):
            continue  # too short to stand alone, or intact in the text (then the pattern failed for a reason)
        at = text.find(phrase)
        if at < 0:
            continue
        first = max(bisect.bisect_right(starts, at) - 1, 0)
        last = max(bisect.bisect_right(starts, at + len(phrase) - 1) - 1, first)
        return Hit(
            entry=entry,
            position=paste.starts[first] if paste.starts else 0,
            line=" ".join(paste.lines[first : last + 1]),
            line_indices=tuple(range(first, last + 1)),
            groups={},
            libraries=(),
            how="wrapped text",
        )
    return None


def _rank_key(hit: Hit) -> tuple[int, int, int]:
    entry = hit.entry
    if entry.family is Family.NOT_GPU:
        group = 1
    elif entry.severity is Severity.INFO:
        group = 2
    else:
        group = 0
    return group, -entry.priority, hit.position


def extract_facts(text: str | Paste) -> PasteFacts:
    """Platform, ORT version, the build's CUDA/cuDNN majors and the libraries a paste names."""
    joined = prepare(text).joined
    windows = len(_WINDOWS_HINT.findall(joined))
    linux = len(_LINUX_HINT.findall(joined))
    platform = Platform.WINDOWS if windows > linux else Platform.LINUX if linux > windows else None
    needs = _BUILD_NEEDS.search(joined)
    version = next((m.group(1) for p in _ORT_VERSION for m in [p.search(joined)] if m), None)
    libraries: list[str] = []
    for token in itertools.islice(_LIBRARY_TOKEN.finditer(joined), MAX_LIBRARY_TOKENS):
        info = library_info(token.group(0))
        if info is not None and info.family is not LibraryFamily.ORT and info.name not in libraries:
            libraries.append(info.name)
    codes = tuple(
        dict.fromkeys(int(m.group(1)) for m in itertools.islice(_CUDA_FAILURE.finditer(joined), MAX_LIBRARY_TOKENS))
    )
    return PasteFacts(
        platform=platform,
        ort_version=version,
        build_cuda_major=int(needs.group(2)) if needs else None,
        build_cudnn_major=int(needs.group(1)) if needs else None,
        libraries=tuple(libraries),
        cuda_error_codes=codes,
    )
