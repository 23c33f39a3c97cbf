"""Paste normalisation and matching for `explain`: strip log noise, find the failure modes, pull out the specifics."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from ortgpu.knowledge.base import FailureMode, Family, KnowledgeBase, Severity, load_knowledge_base
from ortgpu.knowledge.matrix import LibraryFamily, Platform, library_info

__all__ = ["Hit", "PasteFacts", "extract_facts", "find_hits", "normalise"]

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
_ORT_LOG_PREFIX = re.compile(r"\[[VIWEF]:onnxruntime:[^\]]*\]\s*")
# source positions: provider_bridge_ort.cc:1209, D:\a\_work\1\s\...\foo.cc:743, bar.py:200
_SOURCE_POSITION = re.compile(r"(\.(?:cc|cpp|cxx|cu|cuh|h|hpp|c|py)):\d+\b")
_HOSTNAME = re.compile(r"\bhostname=[^\s;]+")
_PY_FRAME = re.compile(r'^\s*File "[^"]*", line \d+(?:, in .*)?$')
_PY_NOISE = re.compile(
    r"^\s*(?:Traceback \(most recent call last\):|[\^~]+|\.\.\.|During handling of the above exception.*)\s*$"
)
_SPACES = re.compile(r"[ \t]+")

_LIBRARY_TOKEN = re.compile(r"[A-Za-z0-9_+.-]+\.so(?:\.\d+)+|[A-Za-z0-9_+.-]+\.dll\b", re.IGNORECASE)
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
    carry = ""
    for line in lines:
        if len(line) == width:
            carry += line
            continue
        out.append(carry + line)
        carry = ""
    if carry:
        out.append(carry)
    return out


def normalise(text: str) -> tuple[str, ...]:
    """The paste as clean lines: no ANSI codes, timestamps, ORT log prefixes, source positions, hostnames,
    Python stack frames, doubled backslashes or blank lines."""
    text = _ANSI.sub("", text).replace("\\\\", "\\")
    raw = _unwrap([line.rstrip() for line in text.splitlines()])
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


def _line_index(starts: list[int], offset: int) -> int:
    lo, hi = 0, len(starts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if starts[mid] <= offset:
            lo = mid
        else:
            hi = mid - 1
    return lo


def find_hits(text: str, kb: KnowledgeBase | None = None) -> tuple[Hit, ...]:
    """Every failure mode whose patterns match the paste, best first.

    Order: GPU problems (by priority), then model/input errors, then informational notes; ties by position.
    A generic entry is dropped when a specific one matched the same lines.
    """
    kb = kb or load_knowledge_base()
    lines = normalise(text)
    joined = "\n".join(lines)
    starts: list[int] = []
    offset = 0
    for line in lines:
        starts.append(offset)
        offset += len(line) + 1
    hits: list[Hit] = []
    for entry in kb.matchable:
        matches = sorted((m for pattern in entry.compiled for m in pattern.finditer(joined)), key=lambda m: m.start())
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
        first_line = _line_index(starts, first.start())
        last_line = _line_index(starts, max(first.end() - 1, first.start())) if starts else 0
        covered = sorted(
            {
                i
                for m in matches
                for i in range(_line_index(starts, m.start()), _line_index(starts, max(m.end() - 1, m.start())) + 1)
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


def extract_facts(text: str) -> PasteFacts:
    """Platform, ORT version, the build's CUDA/cuDNN majors and the libraries a paste names."""
    lines = normalise(text)
    joined = "\n".join(lines)
    windows = len(_WINDOWS_HINT.findall(joined))
    linux = len(_LINUX_HINT.findall(joined))
    platform = Platform.WINDOWS if windows > linux else Platform.LINUX if linux > windows else None
    needs = _BUILD_NEEDS.search(joined)
    version = next((m.group(1) for p in _ORT_VERSION for m in [p.search(joined)] if m), None)
    libraries: list[str] = []
    for token in _LIBRARY_TOKEN.findall(joined):
        info = library_info(token)
        if info is not None and info.family is not LibraryFamily.ORT and info.name not in libraries:
            libraries.append(info.name)
    codes = tuple(dict.fromkeys(int(c) for c in _CUDA_FAILURE.findall(joined)))
    return PasteFacts(
        platform=platform,
        ort_version=version,
        build_cuda_major=int(needs.group(2)) if needs else None,
        build_cudnn_major=int(needs.group(1)) if needs else None,
        libraries=tuple(libraries),
        cuda_error_codes=codes,
    )
