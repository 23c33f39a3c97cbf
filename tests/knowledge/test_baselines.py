"""The committed explain baselines (blind experts, the paste audit) are what their scripts compute from the data."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"


@pytest.fixture(scope="module")
def bench_path() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    yield
    sys.path.remove(str(ROOT / "benchmarks"))


def test_the_expert_baseline_record_is_what_the_committed_answers_score(bench_path: None) -> None:
    baseline = importlib.import_module("explain_expert_baseline")
    answers = json.loads(baseline.ANSWERS.read_text(encoding="utf-8"))
    record = json.loads((RESULTS / "2026-12-02-cpu-explain-expert-baseline.json").read_text(encoding="utf-8"))
    for name, s in answers["sets"].items():
        scored = baseline.score(name, s["experts"])
        assert record["sets"][name] == {"kb": s["knowledge_base"], **scored}
        # explain's first run in the record is the stored first-run record's, not a number typed in
        assert scored["explain_right"] == sum(baseline.explain_first_run(name).values())


def test_an_expert_none_or_a_wrong_top_counts_as_a_miss_and_an_alternative_only_in_top3(bench_path: None) -> None:
    baseline = importlib.import_module("explain_expert_baseline")
    truth = baseline.labels("twentieth")
    ids = sorted(truth)
    right = {i: {"top": truth[i][0], "alt": []} for i in ids}
    wrong_first = dict(right, **{ids[0]: {"top": "NONE", "alt": [truth[ids[0]][0]]}})
    got = baseline.score("twentieth", {"1": right, "2": wrong_first})
    n_new = got["new_class"]
    # a NEW label has no entry an expert can name: "right" there would be the NEW id itself, which is no entry
    assert got["experts"]["1"]["top1"] == len(ids)
    assert got["experts"]["2"]["top1"] == len(ids) - 1
    assert got["experts"]["2"]["top3"] == len(ids)
    assert got["experts"]["2"]["none"] == 1
    assert n_new == sum(all(e.startswith("NEW:") for e in truth[i]) for i in ids)


def test_the_audit_record_is_what_the_committed_verdicts_and_first_runs_give(bench_path: None) -> None:
    audit_mod = importlib.import_module("explain_diagnosability")
    audit = json.loads(audit_mod.AUDIT.read_text(encoding="utf-8"))
    record = json.loads((RESULTS / "2026-12-02-cpu-explain-diagnosability.json").read_text(encoding="utf-8"))
    table = audit_mod.tabulate(audit_mod.first_runs(), audit["verdicts"])
    assert record["table"] == table
    assert table["missing_audit"] == []
    assert sum(b["right"] for b in table["by_verdict"].values()) == sum(
        r["correct"] for r in audit_mod.first_runs().values()
    )
