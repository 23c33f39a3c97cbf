"""The nearest-entry fallback: only when no rule fires, said as a lead and not a diagnosis, bounded, and silent on
text that shares nothing distinctive with any entry."""

from __future__ import annotations

import json
import time

import pytest

from ortgpu.cli.main import main
from ortgpu.explain import PasteKind, explain
from ortgpu.knowledge import load_knowledge_base
from ortgpu.knowledge.matcher import find_hits
from ortgpu.knowledge.nearest import MAX_QUERY_TOKENS, nearest, rank, tokens

# no rule of the knowledge base fires on this (composed) text, yet its words are those of one entry
NO_RULE_BUT_CLOSE = (
    "RegisterTensorRTPluginsAsCustomOps shows up in the dependency walker as a missing export of the tensorrt "
    "provider dll"
)


def test_the_composed_text_fires_no_rule() -> None:
    assert find_hits(NO_RULE_BUT_CLOSE) == ()


def test_no_rule_but_close_words_give_the_closest_entry_as_a_lead() -> None:
    result = explain(NO_RULE_BUT_CLOSE)
    assert result.verdict is PasteKind.CLOSEST and not result.recognised
    top = result.matches[0]
    assert top.id == "FM-59" and top.matched_by == "closest"
    assert "not a certain diagnosis" in result.summary
    assert "registertensorrtpluginsascustomops" in (top.detail or "")
    assert top.fix  # the entry's fix is offered


def test_the_fallback_can_be_turned_off() -> None:
    result = explain(NO_RULE_BUT_CLOSE, closest=False)
    assert result.verdict is PasteKind.NOT_RECOGNISED and result.matches == ()


def test_a_rule_match_is_never_replaced_by_the_fallback() -> None:
    result = explain("CUDA failure 35: CUDA driver version is insufficient for CUDA runtime version")
    assert result.verdict is PasteKind.GPU_PROBLEM and result.matches[0].matched_by != "closest"


@pytest.mark.parametrize(
    "text",
    [
        "The quick brown fox jumps over the lazy dog.",
        "ModuleNotFoundError: No module named 'cv2'",
        "TypeError: unsupported operand type(s) for +: 'int' and 'str'",
        "something odd happened on my machine yesterday",
        "npm ERR! code ERESOLVE",
    ],
)
def test_text_without_distinctive_shared_words_stays_not_recognised(text: str) -> None:
    assert explain(text).verdict is PasteKind.NOT_RECOGNISED


def test_a_near_tie_between_two_entries_is_no_lead() -> None:
    kb = load_knowledge_base()
    text = "cublas cudnn"  # both libraries, no more: several entries score alike
    ranked = rank(text, kb)
    assert len(ranked) > 1
    assert nearest(text, kb, threshold=0.0, margin=ranked[0][0] / ranked[1][0] + 0.01) is None


def test_tokens_keep_identifiers_codes_and_their_parts_and_drop_noise() -> None:
    found = tokens('File "x.py", line 3: hipErrorInvalidDeviceFunction at provider_bridge_ort.cc 0x8007007E code 126')
    assert "hiperrorinvaliddevicefunction" in found and "invalid" in found and "device" in found
    assert "provider_bridge_ort" in found and "bridge" in found and "126" in found
    assert "file" not in found and "line" not in found


def test_the_query_is_bounded() -> None:
    text = " ".join(f"Word{i}Token" for i in range(60_000))  # under explain's 1,000,000-character cap
    assert len(set(tokens(text))) <= 4 * MAX_QUERY_TOKENS * 3
    start = time.process_time()
    explain(text)
    assert time.process_time() - start < 2.0


def test_cli_json_says_closest_known_and_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "--json", NO_RULE_BUT_CLOSE]) == 1
    result = json.loads(capsys.readouterr().out)["result"]
    assert result["verdict"] == "closest_known" and result["recognised"] is False
    assert result["matches"][0]["matched_by"] == "closest"


def test_cli_table_says_it_is_a_lead(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", NO_RULE_BUT_CLOSE]) == 1
    out = capsys.readouterr().out
    assert "Closest known problem" in out and "FM-59" in out
