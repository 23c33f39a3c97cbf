"""`explain` stays linear on hostile text: every pattern, and the whole pipeline on 1 MB of adversarial input."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from ortgpu.explain import MAX_TEXT_CHARS, explain
from ortgpu.knowledge import load_knowledge_base
from ortgpu.knowledge.base import KnowledgeBase
from ortgpu.knowledge.matcher import find_hits, normalise

KB = load_knowledge_base()
BUDGET_S = 2.0  # CPU seconds for a full megabyte through `explain` (CPU time: other processes on a shared box
# do not count against it; a quadratic pattern costs minutes either way)
PATTERN_ATTACK_CHARS = 40_000  # a quadratic pattern takes tens of seconds at this size, a linear one milliseconds
PATTERN_BUDGET_S = 0.75


def _fill(unit: str, size: int) -> str:
    return (unit * (size // max(len(unit), 1) + 1))[:size]


# The two reported attacks (64 KB took 58 s and 54 s), and the classic shapes of catastrophic backtracking.
WHOLE_PIPELINE_ATTACKS = {
    "repeated libcudnn": lambda n: _fill("libcudnn", n),
    "one long word then a bang": lambda n: "a" * (n - 1) + "!",
    "repeated near-miss library": lambda n: _fill("libcudnn_x.so.", n),
    "repeated dll stem": lambda n: _fill("cudnn64_8_", n),
    "repeated log prefix without its bracket": lambda n: _fill("[E:onnxruntime:", n),
    "repeated escape starts": lambda n: _fill("\x1b[1;", n),
    "repeated quotes after a loader phrase": lambda n: _fill('Error loading "', n),
    "digits": lambda n: "9" * n,
    "spaced letters (UTF-16 as text)": lambda n: _fill("l i b c u d n n ", n),
    "NUL-interleaved": lambda n: _fill("l\x00i\x00b\x00", n),
    "one short line repeated": lambda n: _fill("CUDA failure 1: x GPU=\n", n),
    "many wrapped lines of one width": lambda n: _fill("x" * 79 + "\n", n),
    "path separators": lambda n: _fill("C:\\a\\", n),
    "python frames": lambda n: _fill('  File "x", line 1, in ', n),
    # the structural extractors' own anchors, repeated without what completes them
    "loader phrases without a library": lambda n: _fill('depends on "Could not load library Unable to load ', n),
    "library names without a failure": lambda n: _fill("libcublasLt.so.12 cudnn64_9.dll ", n),
    "cuDNN statuses": lambda n: _fill("CUDNN failure 1: CUDNN_STATUS_", n),
    "failing nodes without a name": lambda n: _fill("while running Conv node. Name:'", n),
    "provider choices": lambda n: _fill("choose from 'cpu', ", n),
    "provider lists": lambda n: _fill("available ['CPUExecutionProvider', ", n),
    "fp16 numbers": lambda n: _fill("fp16 nan 65,504,000 ", n),
    "package listings": lambda n: _fill("pip install onnxruntime onnxruntime-gpu ", n),
    "NUL-interleaved UTF-16 text": lambda n: _fill("E\x00r\x00r\x00o\x00r\x00 \x00", n),
    "localised loader messages": lambda n: _fill("共有オブジェクトファイルを開けません", n),
    # graph_family_signals' anchors: initialisation failures in optimizer / kernel files, inserted casts, genai nodes
    "optimizer failures without their end": lambda n: _fill("Exception during initialization: /core/optimizer/a_", n),
    "kernel constructors without an end": lambda n: _fill("Exception during initialization: /contrib_ops/a.cc x::", n),
    "inserted casts": lambda n: _fill("Non-zero status InsertedPrecisionFreeCast_", n),
    "genai contrib nodes": lambda n: _fill("onnxruntime_genai while running RotaryEmbedding node Status Message: ", n),
}


@pytest.mark.parametrize("name", sorted(WHOLE_PIPELINE_ATTACKS))
def test_a_megabyte_of_hostile_text_is_explained_within_the_budget(name: str) -> None:
    text = WHOLE_PIPELINE_ATTACKS[name](MAX_TEXT_CHARS)
    start = time.process_time()
    explain(text)
    elapsed = time.process_time() - start
    assert elapsed < BUDGET_S, f"{name}: {elapsed:.1f} s for {len(text):,} characters"


def _near_misses(entry) -> list[str]:
    """Texts built to make this entry's patterns backtrack: each matched text minus its last character, repeated,
    with and without separators; and the same with the spaces squeezed out."""
    units: list[str] = []
    for example in entry.examples:
        joined = "\n".join(normalise(example.text))
        for pattern in entry.compiled:
            for m in pattern.finditer(joined):
                s = m.group(0)
                if len(s) > 1:
                    units += [s[:-1], s[:-1] + " ", s[:-1].replace(" ", ""), s[: len(s) // 2]]
    return list(dict.fromkeys(u for u in units if u.strip()))


@pytest.mark.parametrize("entry", KB.matchable, ids=lambda e: e.id)
def test_no_pattern_backtracks_on_repeated_near_misses(entry) -> None:
    single = KnowledgeBase((entry,))
    for unit in _near_misses(entry):
        text = _fill(unit, PATTERN_ATTACK_CHARS)
        start = time.process_time()
        find_hits(text, single)
        elapsed = time.process_time() - start
        assert elapsed < PATTERN_BUDGET_S, f"{entry.id}: {elapsed:.2f} s on {unit[:40]!r} x {len(text) // len(unit)}"


@pytest.mark.parametrize("text", ["libcudnn" * 8000, "a" * 50000 + "!"], ids=["libcudnn x 8000", "a x 50000 + !"])
def test_the_reported_command_line_attacks_finish_quickly(text: str) -> None:
    """The issue's reproduction, end to end: `python3 -c "print(...)" | ortgpu explain -` (58 s and 54 s before)."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "ortgpu", "explain", "-"], input=text + "\n", capture_output=True, text=True, timeout=60
    )
    elapsed = time.perf_counter() - start
    assert done.returncode in (0, 1), done.stderr
    assert elapsed < BUDGET_S + 1.5, f"{elapsed:.1f} s (interpreter start-up included)"
