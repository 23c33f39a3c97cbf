"""Version strings as ortgpu compares them: dotted numbers ("2.28", "12.4.1", "580.159.04") to tuples."""

from __future__ import annotations

import re

__all__ = ["version_at_least", "version_tuple"]


def version_tuple(text: str | None) -> tuple[int, ...]:
    """Parse a dotted version: "2.28" -> (2, 28); a non-numeric part ends it; None -> ()."""
    out: list[int] = []
    for part in (text or "").split("."):
        match = re.match(r"\d+", part)
        if not match:
            break
        out.append(int(match.group()))
    return tuple(out)


def version_at_least(version: str | None, minimum: tuple[int, ...]) -> bool:
    """Whether ``version`` is at least ``minimum``, compared on the parts ``minimum`` has; unknown is not."""
    return bool(version) and version_tuple(version)[: len(minimum)] >= minimum
