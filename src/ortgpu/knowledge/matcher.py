"""Paste normalisation and matching for `explain`: strip log noise, find the failure modes, pull out the specifics."""

from __future__ import annotations

import bisect
import itertools
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from ortgpu.env.matrix import LibraryFamily, Platform, library_info
from ortgpu.knowledge.base import FailureMode, Family, KnowledgeBase, Severity, load_knowledge_base

__all__ = ["Hit", "Paste", "PasteFacts", "extract_facts", "find_hits", "normalise", "prepare"]

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_TIMESTAMPS = (
    # 2024-05-01 10:00:00.123456789, 2024-05-01T10:00:00Z, [2024-05-01 10:00:00,123]
    re.compile(r"\[?\b\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\b\]?"),
    # TensorRT's [05/01/2024-10:36:56]
    re.compile(r"\[\d{2}/\d{2}/\d{4}-\d{2}:\d{2}:\d{2}\]"),
    # a bare time at the start of a line: 10:00:00.123
    re.compile(r"^\s*\[?\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\]?"),
)
# [E:onnxruntime:Default, provider_bridge_ort.cc:1548 TryGetProviderInfo_CUDA]
_ORT_LOG_PREFIX = re.compile(r"\[[VIWEF]:onnxruntime:[^\]\[\n]{0,300}\]\s*")
# source positions: provider_bridge_ort.cc:1209, D:\a\_work\1\s\...\foo.cc:743, bar.py:200
_SOURCE_POSITION = re.compile(r"(\.(?:cc|cpp|cxx|cu|cuh|h|hpp|c|py)):\d+\b")
_HOSTNAME = re.compile(r"\bhostname=[^\s;]+")
_PY_FRAME = re.compile(r'^\s*File "[^"]*", line \d+(?:, in .*)?$')
_PY_NOISE = re.compile(
    r"^\s*(?:Traceback \(most recent call last\):|[\^~]+|\.\.\.|During handling of the above exception.*)\s*$"
)
_SPACES = re.compile(r"[ \t]+")
MAX_TOKEN_CHARS = 300
MAX_LIBRARY_TOKENS = 200
MAX_LINE_CHARS = 2_000
_LONG_TOKEN = re.compile(rf"(?<!\S)\S{{{MAX_TOKEN_CHARS + 1},}}")

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


def _unwrap(lines: list[str]) -> list[str]:
    """Re-join lines that a terminal, a mail client or an issue tracker hard-wrapped at a fixed width.

    Only when the paste looks wrapped: the most common length among lines of 60+ characters occurs twice or more;
    each line of exactly that length is joined to the next.
    """
    lengths = Counter(len(line) for line in lines if len(line) >= 60)
    if not lengths:
        return lines
    width, count = lengths.most_common(1)[0]
    if count < 2:
        return lines
    out: list[str] = []
    carry: list[str] = []
    for line in lines:
        carry.append(line)
        if len(line) != width:
            out.append("".join(carry))
            carry = []
    if carry:
        out.append("".join(carry))
    return out


def _bounded(line: str) -> list[str]:
    """The line with every run of non-space characters cut to MAX_TOKEN_CHARS, in pieces of at most MAX_LINE_CHARS.

    No message word is that long (a path is at most a few hundred characters), and bounding both keeps every
    pattern's work per character constant: explain stays linear in the paste's size.
    """
    if len(line) > MAX_TOKEN_CHARS:
        line = _LONG_TOKEN.sub(lambda m: m.group(0)[:MAX_TOKEN_CHARS], line)
    pieces: list[str] = []
    while len(line) > MAX_LINE_CHARS:
        cut = line.rfind(" ", MAX_LINE_CHARS // 2, MAX_LINE_CHARS)
        cut = cut if cut > 0 else MAX_LINE_CHARS
        pieces.append(line[:cut])
        line = line[cut:]
    pieces.append(line)
    return pieces


def normalise(text: str) -> tuple[str, ...]:
    """The paste as clean lines: no ANSI codes, timestamps, ORT log prefixes, source positions, hostnames,
    Python stack frames, doubled backslashes or blank lines."""
    text = _ANSI.sub("", text).replace("\\\\", "\\")
    raw = [piece for line in _unwrap([line.rstrip() for line in text.splitlines()]) for piece in _bounded(line)]
    out: list[str] = []
    after_frame = False
    for line in raw:
        if _PY_FRAME.match(line):
            after_frame = True
            continue
        if after_frame and line[:1].isspace():  # the source line Python echoes under a frame
            after_frame = False
            continue
        after_frame = False
        if _PY_NOISE.match(line):
            continue
        for pattern in _TIMESTAMPS:
            line = pattern.sub("", line)
        line = _ORT_LOG_PREFIX.sub("", line)
        line = _SOURCE_POSITION.sub(r"\1", line)
        line = _HOSTNAME.sub("hostname=<host>", line)
        line = _SPACES.sub(" ", line).strip()
        if line:
            out.append(line)
    return tuple(out)


@dataclass(frozen=True)
class Paste:
    """A paste normalised once for every matcher: clean lines, the lines joined, and a lower-cased copy."""

    lines: tuple[str, ...]
    joined: str
    lowered: str
    starts: tuple[int, ...]  # offset of each line in `joined`

    def line_index(self, offset: int) -> int:
        return max(bisect.bisect_right(self.starts, offset) - 1, 0)


def prepare(text: str | Paste) -> Paste:
    """Normalise a paste (once); a Paste passes through unchanged."""
    if isinstance(text, Paste):
        return text
    lines = normalise(text)
    joined = "\n".join(lines)
    starts: list[int] = []
    offset = 0
    for line in lines:
        starts.append(offset)
        offset += len(line) + 1
    return Paste(lines, joined, joined.lower(), tuple(starts))


MAX_MATCHES_PER_PATTERN = 32  # the first matches carry the specifics; a log repeating a line adds nothing


def _matches(entry: FailureMode, paste: Paste) -> list[re.Match[str]]:
    found: list[re.Match[str]] = []
    for pattern, prefilter in zip(entry.compiled, entry.prefilters or (None,) * len(entry.compiled), strict=True):
        if prefilter is not None and not prefilter.admits(paste.joined, paste.lowered):
            continue
        found.extend(itertools.islice(pattern.finditer(paste.joined), MAX_MATCHES_PER_PATTERN))
    return sorted(found, key=lambda m: m.start())


def find_hits(text: str | Paste, kb: KnowledgeBase | None = None) -> tuple[Hit, ...]:
    """Every failure mode whose patterns match the paste, best first.

    Order: GPU problems (by priority), then model/input errors, then informational notes; ties by position.
    A generic entry is dropped when a specific one matched the same lines.
    """
    kb = kb or load_knowledge_base()
    paste = prepare(text)
    lines = paste.lines
    hits: list[Hit] = []
    for entry in kb.matchable:
        matches = _matches(entry, paste)
        if not matches:
            continue
        groups: dict[str, str] = {}
        libraries: list[str] = []
        for m in matches:
            for name, value in m.groupdict().items():
                if value is not None:
                    groups.setdefault(name, value)
                    if name == "lib" and value not in libraries:
                        libraries.append(value)
        first = matches[0]
        first_line = paste.line_index(first.start())
        last_line = paste.line_index(max(first.end() - 1, first.start()))
        covered = sorted(
            {
                i
                for m in matches
                for i in range(paste.line_index(m.start()), paste.line_index(max(m.end() - 1, m.start())) + 1)
            }
        )
        hits.append(
            Hit(
                entry=entry,
                position=first.start(),
                line=" ".join(lines[first_line : last_line + 1]) if lines else "",
                line_indices=tuple(covered),
                groups=groups,
                libraries=tuple(libraries),
            )
        )
    specific_lines = {i for h in hits if not h.entry.generic for i in h.line_indices}
    hits = [h for h in hits if not (h.entry.generic and specific_lines & set(h.line_indices))]
    return tuple(sorted(hits, key=_rank_key))


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
