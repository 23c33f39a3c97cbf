"""Required literals of the knowledge-base patterns: a pattern runs only on text that contains its literal."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

try:  # Python >= 3.11
    from re import _constants as _sre  # type: ignore[attr-defined]
    from re import _parser as _sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _sre  # type: ignore[no-redef]
    import sre_parse as _sre_parse  # type: ignore[no-redef]

__all__ = ["MIN_LITERAL", "Prefilter", "linearity_problems", "prefilter_for"]

MIN_LITERAL = 3  # shorter literals are too common to save any work


@dataclass(frozen=True)
class Prefilter:
    """A string every match of a pattern contains (lower-cased when the pattern ignores case); or, for a pattern of
    alternatives with no literal in common (`hangs?|hung|stuck`), `literal` is empty and every match contains one of
    `alternatives`."""

    literal: str
    ignore_case: bool
    alternatives: tuple[str, ...] = ()

    def admits(self, text: str, lowered: str) -> bool:
        """False when the pattern cannot match this text (`lowered` is `text.lower()`)."""
        haystack = lowered if self.ignore_case else text
        if self.literal:
            return self.literal in haystack
        return any(alternative in haystack for alternative in self.alternatives)


def prefilter_for(pattern: re.Pattern[str]) -> Prefilter | None:
    """The longest literal run every match must contain, or None when the pattern has none worth checking."""
    try:
        parsed = _sre_parse.parse(pattern.pattern, pattern.flags & ~re.UNICODE)
    except re.error:  # pragma: no cover - compiled patterns parse
        return None
    ignore_case = bool(pattern.flags & re.IGNORECASE)
    items = list(parsed)
    best = max(_literal_runs(items), key=len, default="")
    if len(best) >= MIN_LITERAL:
        return Prefilter(best.lower() if ignore_case else best, ignore_case)
    # no literal in common: a mandatory alternation whose every branch has its own literal still rules texts out
    alternatives = _branch_literals(items)
    if not alternatives:
        return None
    return Prefilter("", ignore_case, tuple(dict.fromkeys(a.lower() if ignore_case else a for a in alternatives)))


def _branch_literals(items: list[tuple[Any, Any]]) -> tuple[str, ...]:
    """Literals of which every match contains at least one: those of a mandatory alternation in this sequence whose
    every branch has a literal (or such an alternation of its own); empty when there is none. Of several, the one
    whose shortest literal is longest."""
    best: tuple[str, ...] = ()
    for op, arg in items:
        if op is _sre.SUBPATTERN and not arg[1] and not arg[2]:
            found = _branch_literals(list(arg[3]))
        elif op is _sre.BRANCH:
            found = ()
            for branch in arg[1]:
                seq = list(branch)
                own = max(_literal_runs(seq), key=len, default="")
                literals = (own,) if len(own) >= MIN_LITERAL else _branch_literals(seq)
                if not literals:
                    found = ()
                    break
                found += literals
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) and arg[0] >= 1:
            found = _branch_literals(list(arg[2]))
        else:
            continue
        if found and (not best or min(map(len, found)) > min(map(len, best))):
            best = found
    return best


def _literal_runs(items: list[tuple[Any, Any]]) -> list[str]:
    """Runs of consecutive literal characters that are mandatory in this sequence (groups are entered)."""
    runs: list[str] = []
    current: list[str] = []
    for op, arg in items:
        if op is _sre.LITERAL:
            current.append(chr(arg))
            continue
        if op is _sre.SUBPATTERN and not arg[1] and not arg[2]:  # a plain group, no scoped flags: its contents
            inner = _literal_runs(list(arg[3]))
            # a group made only of literals continues the run around it; otherwise its runs stand alone
            if len(inner) == 1 and all(o is _sre.LITERAL for o, _ in arg[3]):
                current.append(inner[0])
                continue
            runs.append("".join(current))
            current = []
            runs.extend(inner)
            continue
        if op in (_sre.ASSERT, _sre.ASSERT_NOT, _sre.AT):  # zero-width: the literal run is not broken
            continue
        if op is _sre.MAX_REPEAT or op is _sre.MIN_REPEAT:
            low, _high, body = arg
            runs.append("".join(current))
            current = []
            if low >= 1:
                runs.extend(_literal_runs(list(body)))
            continue
        runs.append("".join(current))  # branches, classes, any: the run ends
        current = []
    runs.append("".join(current))
    return [r for r in runs if r]


def linearity_problems(pattern: str) -> list[str]:
    """Why a pattern could backtrack on hostile text (empty when it is built to stay linear).

    Two rules: a pattern never starts with an unbounded repeat (every position would start a long scan) unless a
    lookbehind or anchor pins where it may start; and a repeat of `.` or of a negated class (`[^"]`, `[^\\n]`)
    carries an upper bound, except inside a lookahead pinned to a line start (scanned once per line).
    """
    try:
        parsed = _sre_parse.parse(pattern)
    except re.error as exc:
        return [f"does not compile: {exc}"]
    items = list(parsed)
    problems: list[str] = []
    first = _first_consuming(items)
    if first is not None and first[0] in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) and first[1][1] == _sre.MAXREPEAT:
        problems.append("starts with an unbounded repeat: pin its start with a lookbehind such as (?<![\\w.-])")
    line_anchored = bool(items) and items[0][0] is _sre.AT
    if _unbounded_wide_repeat(items, in_anchored_lookahead=False, line_anchored=line_anchored):
        problems.append("an unbounded repeat of `.` or of a negated class: give it an upper bound, e.g. {0,500}")
    return problems


def _first_consuming(items: list[tuple[Any, Any]]) -> tuple[Any, Any] | None:
    for op, arg in items:
        if op is _sre.AT or op is _sre.ASSERT_NOT or op is _sre.ASSERT:
            return None  # pinned (an anchor or a lookaround decides where a match may start)
        if op is _sre.SUBPATTERN:
            return _first_consuming(list(arg[3]))
        return op, arg
    return None


def _is_wide(body: list[tuple[Any, Any]]) -> bool:
    if len(body) != 1:
        return False
    op, arg = body[0]
    if op is _sre.ANY or op is _sre.NOT_LITERAL:
        return True
    if op is not _sre.IN or not arg or arg[0][0] is not _sre.NEGATE:
        return False
    # a negated class that also excludes whitespace (`[^\s:]`) stops at the end of a word, and words are bounded
    excluded = arg[1:]
    stops_at_space = (_sre.CATEGORY, _sre.CATEGORY_SPACE) in excluded or (_sre.LITERAL, ord(" ")) in excluded
    return not stops_at_space


def _unbounded_wide_repeat(items: list[tuple[Any, Any]], *, in_anchored_lookahead: bool, line_anchored: bool) -> bool:
    for op, arg in items:
        if op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT):
            body = list(arg[2])
            if arg[1] == _sre.MAXREPEAT and _is_wide(body) and not in_anchored_lookahead:
                return True
            if _unbounded_wide_repeat(body, in_anchored_lookahead=in_anchored_lookahead, line_anchored=line_anchored):
                return True
        elif op is _sre.SUBPATTERN:
            if _unbounded_wide_repeat(
                list(arg[3]), in_anchored_lookahead=in_anchored_lookahead, line_anchored=line_anchored
            ):
                return True
        elif op in (_sre.ASSERT, _sre.ASSERT_NOT):
            if _unbounded_wide_repeat(list(arg[1]), in_anchored_lookahead=line_anchored, line_anchored=line_anchored):
                return True
        elif op is _sre.BRANCH:
            for alt in arg[1]:
                if _unbounded_wide_repeat(
                    list(alt), in_anchored_lookahead=in_anchored_lookahead, line_anchored=line_anchored
                ):
                    return True
    return False
