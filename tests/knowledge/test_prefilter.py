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
