"""A paste made ready for matching: decoded, stripped of log noise, bounded, and split into clean lines."""

from __future__ import annotations

import bisect
import re
from collections import Counter
from dataclasses import dataclass

from ortgpu.knowledge.text import repair, squeeze

__all__ = ["MAX_LINE_CHARS", "MAX_TOKEN_CHARS", "Paste", "normalise", "prepare"]

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
_ORT_LOG_PREFIX = re.compile(
    r"\[[VIWEF]:onnxruntime:[^\]\[\n,]{0,100},?\s{0,3}(?:(\w{1,80})\.(?:cc|h|cpp))?[^\]\[\n]{0,300}\]\s*"
)
# source positions: provider_bridge_ort.cc:1209, D:\a\_work\1\s\...\foo.cc:743, bar.py:200
_SOURCE_POSITION = re.compile(r"(\.(?:cc|cpp|cxx|cu|cuh|h|hpp|c|py)):\d+\b")
_HOSTNAME = re.compile(r"\bhostname=[^\s;]+")
_FRAME_PATH = re.compile(r'File "(/|~|[A-Za-z]:\\\\?)')  # where a Python frame's file lives: the platform
_PY_FRAME = re.compile(r'^\s*File "[^"]*", line \d+(?:, in .*)?$')
_PY_NOISE = re.compile(
    r"^\s*(?:Traceback \(most recent call last\):|[\^~]+|\.\.\.|During handling of the above exception.*)\s*$"
)
_SPACES = re.compile(r"[ \t]+")
MAX_TOKEN_CHARS = 300
MAX_LINE_CHARS = 2_000
_LONG_TOKEN = re.compile(rf"(?<!\S)\S{{{MAX_TOKEN_CHARS + 1},}}")


# A line that begins a record of its own (a traceback's frame or exception, a log line, a prompt) is never the tail of
# a hard-wrapped line: a wrap at fixed width rarely breaks exactly there, while a source line Python echoes is often
# as long as the error under it.
_RECORD_START = re.compile(
    r"\s*(?:Traceback \(|File \"|at [\w.$<>]+\(|\d{4}-\d{2}-\d{2}[ T]|\[[EWIF]:|>>> |\$ |PS [A-Z]:\\)"
    r"|[A-Za-z_][\w.]{0,200}(?:Error|Exception|Fail|Failure|Warning)\b:|[A-Za-z_]\w{0,60}(?:\.\w{1,60}){1,8}: "
)


def _unwrap(lines: list[str]) -> list[str]:
    """Re-join lines that a terminal, a mail client or an issue tracker hard-wrapped at a fixed width.

    Only when the paste looks wrapped: the most common length among lines of 60+ characters occurs twice or more,
    and fewer lines are longer than that width than are exactly as long (a wrapping tool leaves none longer; two
    lines of one length among longer ones are chance, and joining them would glue an error to the line before);
    each line of exactly that length is joined to the next.
    """
    lengths = Counter(len(line) for line in lines if len(line) >= 60)
    if not lengths:
        return lines
    width, count = lengths.most_common(1)[0]
    if count < 2 or sum(n for length, n in lengths.items() if length > width) >= count:
        return lines
    out: list[str] = []
    carry: list[str] = []
    for line, after in zip(lines, [*lines[1:], ""], strict=True):
        carry.append(line)
        if len(line) != width or _RECORD_START.match(after):
            out.append("".join(carry))
            carry = []
    if carry:
        out.append("".join(carry))
    return out


def _once(lines: list[str]) -> list[str]:
    """The lines right-stripped, each run of one line repeated kept once (before the wrap heuristic, which would
    take a flood of equal lines for a paragraph hard-wrapped at their width)."""
    out: list[str] = []
    for line in lines:
        line = line.rstrip()
        if not out or line != out[-1]:
            out.append(line)
    return out


def _bounded(line: str) -> list[str]:
    """The line with every run of non-space characters cut to MAX_TOKEN_CHARS, in pieces of at most MAX_LINE_CHARS.

    No message word is that long (a path is at most a few hundred characters), and bounding both keeps every
    pattern's work per character constant: explain stays linear in the paste's size.
    """
    if len(line) > MAX_TOKEN_CHARS:
        line = _LONG_TOKEN.sub(lambda m: m.group(0)[:MAX_TOKEN_CHARS], line)
    pieces: list[str] = []
    start = 0
    while len(line) - start > MAX_LINE_CHARS:
        cut = line.rfind(" ", start + MAX_LINE_CHARS // 2, start + MAX_LINE_CHARS)
        cut = cut if cut > start else start + MAX_LINE_CHARS
        pieces.append(line[start:cut])
        start = cut
    pieces.append(line[start:])
    return pieces


def normalise(text: str) -> tuple[str, ...]:
    """The paste as clean lines: no ANSI codes, timestamps, ORT log prefixes, source positions, hostnames,
    Python stack frames, doubled backslashes or blank lines."""
    return _normalise(text)[0]


def _normalise(
    text: str,
) -> tuple[tuple[str, ...], frozenset[str], tuple[str, ...], frozenset[int], frozenset[int]]:
    """The clean lines, the ORT source files named in the log prefixes that were removed (which component
    logged: `tensorrt_execution_provider.h`, `provider_bridge_ort.cc`, ...), that file per line ("" when none),
    the lines that carried the marks of tool output (a timestamp, an ORT log prefix, a source position), and the
    lines ORT logged at warning level or below ([W:onnxruntime...], [I:...], [V:...])."""
    text = repair(_ANSI.sub("", text)).replace("\\\\", "\\")
    origins: set[str] = set()
    raw = [piece for line in _unwrap(_once(text.splitlines())) for piece in _bounded(line)]
    out: list[str] = []
    line_origins: list[str] = []
    logged: set[int] = set()
    warned: set[int] = set()
    after_frame = False
    for line in raw:  # each substitution only where its anchor is (a paste can be 40,000 lines)
        if 'File "' in line and _PY_FRAME.match(line):
            after_frame = True
            continue
        if after_frame and line[:1].isspace():  # the source line Python echoes under a frame
            after_frame = False
            continue
        after_frame = False
        if _PY_NOISE.match(line):
            continue
        origin = ""
        marked = False
        warning = False
        if ":" in line:
            for pattern in _TIMESTAMPS:
                line, n = pattern.subn("", line)
                marked = marked or n > 0
            if "onnxruntime:" in line:
                prefix = _ORT_LOG_PREFIX.search(line)
                warning = prefix is not None and prefix.group(0)[1] in "WIV"
                named = [m.group(1) for m in _ORT_LOG_PREFIX.finditer(line) if m.group(1)]
                origins.update(named)
                origin = named[0] if named else origin
                line, n = _ORT_LOG_PREFIX.subn("", line)
                marked = marked or n > 0
            line, n = _SOURCE_POSITION.subn(r"\1", line)
            marked = marked or n > 0
        if "hostname=" in line:
            line = _HOSTNAME.sub("hostname=<host>", line)
        line = (_SPACES.sub(" ", line) if "  " in line or "\t" in line else line).strip()
        if line and out and line == out[-1]:
            # a line repeated on the next line says nothing new (a warning logged 1,000 times, a flood of one
            # message): kept once, so every extractor's work follows the distinct text
            if marked:
                logged.add(len(out) - 1)
            continue
        if line:
            if marked:
                logged.add(len(out))
            if warning:
                warned.add(len(out))
            out.append(line)
            line_origins.append(origin)
    return tuple(out), frozenset(origins), tuple(line_origins), frozenset(logged), frozenset(warned)


@dataclass(frozen=True)
class Paste:
    """A paste normalised once for every matcher: clean lines, the lines joined, and a lower-cased copy."""

    lines: tuple[str, ...]
    joined: str
    lowered: str
    starts: tuple[int, ...]  # offset of each line in `joined`
    origins: frozenset[str] = frozenset()  # ORT source files whose log prefixes were removed
    line_origins: tuple[str, ...] = ()  # per line: the ORT source file of its removed log prefix, or ""
    logged: frozenset[int] = frozenset()  # lines that carried a timestamp, an ORT log prefix or a source position
    warned: frozenset[int] = frozenset()  # lines ORT logged at warning level or below
    frame_paths: str = ""  # the path style of the Python stack frames removed: "windows", "posix" or ""

    def origin_of(self, index: int) -> str:
        return self.line_origins[index] if index < len(self.line_origins) else ""

    def line_index(self, offset: int) -> int:
        return max(bisect.bisect_right(self.starts, offset) - 1, 0)

    @property
    def squeezed(self) -> tuple[str, tuple[int, ...]]:
        """The joined lines lower-cased without whitespace, and where each line starts in it."""
        starts: list[int] = []
        offset = 0
        for line in self.lines:
            starts.append(offset)
            offset += len(squeeze(line))
        return squeeze(self.joined), tuple(starts)


def prepare(text: str | Paste) -> Paste:
    """Normalise a paste (once); a Paste passes through unchanged."""
    if isinstance(text, Paste):
        return text
    lines, origins, line_origins, logged, warned = _normalise(text)
    joined = "\n".join(lines)
    starts: list[int] = []
    offset = 0
    for line in lines:
        starts.append(offset)
        offset += len(line) + 1
    frame = _FRAME_PATH.search(text[:200_000])
    frame_paths = "" if frame is None else ("windows" if frame.group(1)[0].isalpha() else "posix")
    return Paste(lines, joined, joined.lower(), tuple(starts), origins, line_origins, logged, warned, frame_paths)
