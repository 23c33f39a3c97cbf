"""Required literals and the linearity rules of knowledge-base patterns."""

from __future__ import annotations

import re

import pytest

from ortgpu.knowledge import load_knowledge_base
from ortgpu.knowledge.matcher import prepare
from ortgpu.knowledge.prefilter import linearity_problems, prefilter_for

KB = load_knowledge_base()


@pytest.mark.parametrize(
    ("pattern", "literal"),
    [
        (
            r"(?P<lib>libcublas(?:Lt)?\.so\.11)(?:\.[\d.]+)?: cannot open shared object file",
            ": cannot open shared object file",
        ),
        (r"CUDA failure (?P<code>35)\b", "CUDA failure 35"),
        (r"(?i)\btf32\b", "tf32"),
        (r"(?:a|b)x", None),
    ],
)
def test_the_longest_mandatory_literal_is_found(pattern: str, literal: str | None) -> None:
    found = prefilter_for(re.compile(pattern))
    assert (found.literal if found else None) == literal


def test_a_literal_inside_an_optional_part_is_not_required() -> None:
    found = prefilter_for(re.compile(r"ab(?:optional-literal)?cd"))
    assert found is None or found.literal != "optional-literal"


@pytest.mark.parametrize(
    ("pattern", "alternatives"),
    [
        (r"(?i)\b(?:hangs?|hung|deadlock\w*|freez(?:es|ing)|stuck)\b", ("hang", "hung", "deadlock", "freez", "stuck")),
        (r"\[Errno 12\] Cannot allocate|\bMemoryError\b", ("[Errno 12] Cannot allocate", "MemoryError")),
        (r"x(?:ab|c)", None),  # one branch too short to rule anything out
        (r"(?:abc|def)?xy", None),  # an optional alternation is not required
    ],
)
def test_a_pattern_of_alternatives_without_a_common_literal_needs_one_of_its_branches(
    pattern: str, alternatives: tuple[str, ...] | None
) -> None:
    found = prefilter_for(re.compile(pattern))
    assert (found.alternatives if found else None) == alternatives


def test_an_alternatives_prefilter_admits_every_text_its_pattern_matches_and_refuses_the_rest() -> None:
    # why: such patterns used to scan every hostile megabyte in full; the prefilter must never drop a real match
    pattern = re.compile(r"(?i)\b(?:hangs?|hung|deadlock\w*|stuck)\b")
    pre = prefilter_for(pattern)
    assert pre is not None and not pre.literal
    texts = ["the session HANGS forever", "it is stuck at load", "a Deadlocked worker", "runs fine", "hun g", "stu ck"]
    for text in texts:
        matched = pattern.search(text) is not None
        assert pre.admits(text, text.lower()) or not matched, text
    assert not pre.admits("runs fine", "runs fine")


def test_every_example_match_contains_its_patterns_literal() -> None:
    for entry in KB.matchable:
        for example in entry.examples:
            paste = prepare(example.text)
            for pattern, pre in zip(entry.compiled, entry.prefilters, strict=True):
                if pattern.search(paste.joined) and pre is not None:
                    assert pre.admits(paste.joined, paste.lowered), (entry.id, pattern.pattern)


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        (r"[\w-]*\d+_\d+\.dll", "starts with an unbounded repeat"),
        (r"EP Error [^\n]*? when using", "unbounded repeat of `.`"),
        (r'Error loading "[^"]*"', "unbounded repeat of `.`"),
        (r"Load model from (?P<path>.+?) failed", "unbounded repeat of `.`"),
    ],
)
def test_patterns_that_can_backtrack_are_refused(pattern: str, why: str) -> None:
    assert any(why in p for p in linearity_problems(pattern))


@pytest.mark.parametrize(
    "pattern",
    [
        r"(?<![\w-])[\w-]{0,100}\d_\d{1,4}\.dll",
        r"EP Error [^\n]{0,500}? when using",
        r"Got invalid dimensions for input: (?P<input>[^\s]+)",
        r"(?im)^(?=[^\n]*\bslow)(?=[^\n]*\bshapes?\b)",
    ],
)
def test_bounded_or_pinned_patterns_pass(pattern: str) -> None:
    assert linearity_problems(pattern) == []
