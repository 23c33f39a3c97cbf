"""Rules for what comes out of untrusted files (packages, archives, npz): bare file names and byte limits."""

from __future__ import annotations

import os
import re
import unicodedata

from ortgpu.errors import BadInputError

__all__ = [
    "NAME_MAX_BYTES",
    "ByteLimit",
    "human_bytes",
    "name_problem",
    "printable",
    "text_problem",
]

NAME_MAX_BYTES = 255  # what Linux, macOS and NTFS take for one path component
_BIDI = {"\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069"}


def _control(text: str) -> str | None:
    """The first control character in ``text`` (C0, DEL, C1 and the bidirectional overrides), or None."""
    for char in text:
        if unicodedata.category(char) == "Cc" or char in _BIDI:
            return char
    return None


def name_problem(name: str) -> str | None:
    """Why ``name`` is not a bare file name ("it holds a path separator"), or None when it is one.

    A bare name is what a package may use to name a file: not empty, not '.' or '..', no '/' or '\\', no
    control character (NUL, escape sequences, newlines), at most NAME_MAX_BYTES bytes in UTF-8.
    """
    if not name:
        return "it is empty"
    if name in (".", ".."):
        return f"it is {name!r}"
    if "/" in name or "\\" in name:
        return "it holds a path separator"
    if _control(name) is not None:
        return "it holds a control character"
    if len(name.encode("utf-8", "surrogateescape")) > NAME_MAX_BYTES:
        return f"it is longer than {NAME_MAX_BYTES} bytes"
    return None


def text_problem(text: str, max_chars: int) -> str | None:
    """Why ``text`` cannot be shown or written as one short token (a version, a commit id), or None."""
    if _control(text) is not None:
        return "it holds a control character"
    if "/" in text or "\\" in text:
        return "it holds a path separator"
    if len(text) > max_chars:
        return f"it is longer than {max_chars} characters"
    return None


def printable(text: str, limit: int = 60) -> str:
    """``text`` for a one-line message: control characters escaped (repr), its middle left out past ``limit``
    characters (the end of a path names the file)."""
    if len(text) <= limit:
        return repr(text)
    half = limit // 2
    return repr(text[:half]) + "..." + repr(text[-half:])


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


class ByteLimit:
    """A byte limit with a default, raised by an environment variable (``ORTGPU_MAX_EXTRACT=8G``).

    The limit is read when used, so a test or a caller can set the variable for one call.
    """

    def __init__(self, variable: str, default: int, what: str) -> None:
        self.variable = variable
        self.default = default
        self.what = what  # "bytes extracted from one package"

    def value(self) -> int:
        raw = os.environ.get(self.variable)
        if raw is None or not raw.strip():
            return self.default
        match = _SIZE.match(raw)
        if not match:
            raise BadInputError(
                f"{self.variable}={raw!r} is not a size", "set it to a size such as 8G, 512M or 1000000 (bytes)"
            )
        value = float(match.group(1)) * _UNITS[match.group(2).lower()]
        if value >= 2**63:  # also the 5,000-digit numbers float() makes infinite
            raise BadInputError(f"{self.variable} is larger than a 64-bit size", "set it to a size such as 8G")
        return int(value)

    def hint(self) -> str:
        """How to raise the limit, for an error message."""
        return f"the limit is {human_bytes(self.value())} of {self.what}; raise it with {self.variable}=SIZE (e.g. 8G)"


def human_bytes(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"
