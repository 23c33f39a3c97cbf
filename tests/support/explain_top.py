"""What `explain` puts first for a paste: the tests of the knowledge base assert on it."""

from __future__ import annotations

from ortgpu.explain import explain


def top_id(text: str) -> str | None:
    """The id of explain's first match, or None when nothing matched."""
    result = explain(text)
    return result.matches[0].id if result.matches else None


def top_with_library(text: str) -> tuple[str | None, str | None]:
    """The first match's id and the library it names (None, None when nothing matched)."""
    result = explain(text)
    if not result.matches:
        return None, None
    return result.matches[0].id, result.matches[0].library


def rule_ids(text: str) -> list[str]:
    """Every entry explain's rules give, in order (the learned closest-entry fallback left out: it guesses)."""
    return [m.id for m in explain(text, closest=False).matches]


def rule_top(text: str) -> str | None:
    """The first entry explain's rules give, or None (no closest-entry fallback)."""
    ids = rule_ids(text)
    return ids[0] if ids else None
