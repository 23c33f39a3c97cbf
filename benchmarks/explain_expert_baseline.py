"""A blind expert reader as the baseline for `ortgpu explain` on unseen pastes: what the paste text supports.

Helpers that never saw explain's code, records, the labels or the label notes read each paste's text alone and chose
the most likely cause from the knowledge base's entries as they stood at that set's first run (id, family, title and
cause; "NONE" allowed), plus up to two alternatives (benchmarks/data/explain_expert_answers.json). Two experts worked
on each set independently. This script scores them against the thread labels, next to explain's answers at the same
set's first unseen run (the stored records), so the 90% target can be read against what a careful reader of the same
text, with the same knowledge, reaches.

    python benchmarks/explain_expert_baseline.py --out benchmarks/results --stamp 2026-12-02
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from explain_examples_replay import MEASUREMENTS, ORDER, _record
from explain_heldout import publish_record, record_head

HERE = Path(__file__).resolve().parent
ANSWERS = HERE / "data" / "explain_expert_answers.json"


def labels(set_name: str) -> dict[str, list[str]]:
    """The thread labels of a set's pastes, by id."""
    out: dict[str, list[str]] = {}
    for name in dict(ORDER)[set_name]:
        for p in json.loads((HERE / "data" / name).read_text(encoding="utf-8"))["pastes"]:
            out[p["id"]] = p["expected"]
    return out


def explain_first_run(set_name: str) -> dict[str, bool]:
    """Whether explain was right on each paste of the set at its first unseen run."""
    for _row, name, records, split, _extra, first in MEASUREMENTS:
        if name == set_name and first:
            rows = [r for rec in records for r in json.loads(_record(rec).read_text(encoding="utf-8"))["rows"]]
            return {r["id"]: bool(r["correct"]) for r in rows if split is None or r.get("split") == split}
    raise SystemExit(f"no first-run record for the {set_name} set")


def score(set_name: str, experts: dict[str, dict[str, dict]]) -> dict:
    """Each expert's top-1 and top-3 against the labels, explain's first run, and where they differ."""
    truth = labels(set_name)
    ex = explain_first_run(set_name)
    ids = sorted(truth)
    new = [i for i in ids if all(e.startswith("NEW:") for e in truth[i])]
    out: dict = {"pastes": len(ids), "new_class": len(new), "explain_right": sum(ex[i] for i in ids), "experts": {}}
    right: dict[str, set[str]] = {}
    for k, answers in sorted(experts.items()):
        missing = [i for i in ids if i not in answers]
        if missing:
            raise SystemExit(f"expert {k} of the {set_name} set has no answer for {', '.join(missing)}")
        right[k] = {i for i in ids if answers[i]["top"] in truth[i]}
        top3 = {i for i in ids if any(a in truth[i] for a in [answers[i]["top"], *answers[i].get("alt", [])])}
        none = sum(answers[i]["top"] == "NONE" for i in ids)
        out["experts"][k] = {"top1": len(right[k]), "top3": len(top3), "none": none}
    keys = sorted(right)
    if len(keys) >= 2:
        a, b = experts[keys[0]], experts[keys[1]]
        out["experts_agree"] = sum(a[i]["top"] == b[i]["top"] for i in ids)
        out["either_expert"] = len(right[keys[0]] | right[keys[1]])
        out["both_experts"] = len(right[keys[0]] & right[keys[1]])
        both = right[keys[0]] & right[keys[1]]
        out["both_experts_right_explain_wrong"] = sorted(i for i in both if not ex[i])
        out["explain_right_no_expert"] = sorted(i for i in ids if ex[i] and not any(i in right[k] for k in keys))
    return out


def markdown(doc: dict) -> str:
    lines = [
        "# A blind expert reader against explain on unseen pastes",
        "",
        f"`{doc['command']}` — ortgpu {doc['ortgpu']}, Python {doc['python']}.",
        "",
        __doc__.split("\n\n")[1].replace("\n", " "),
        "",
        f"Answers: {doc['description']}",
        "",
        "| set | knowledge base of | pastes | NEW class | explain, first run | expert 1 top-1 | expert 2 top-1 | "
        "experts agree | both experts right | expert 1 top-3 | expert 2 top-3 |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    pooled = {"pastes": 0, "explain": 0, "e1": 0, "e2": 0, "both": 0}
    for name, s in doc["sets"].items():
        n = s["pastes"]
        e1, e2 = s["experts"]["1"], s["experts"]["2"]

        def pct(v: int, n: int = n) -> str:
            return f"{v} ({v / n:.1%})"

        lines.append(
            f"| {name} | {s['kb']} | {n} | {s['new_class']} | {pct(s['explain_right'])} | {pct(e1['top1'])} | "
            f"{pct(e2['top1'])} | {s['experts_agree']} | {pct(s['both_experts'])} | {pct(e1['top3'])} | "
            f"{pct(e2['top3'])} |"
        )
        pooled["pastes"] += n
        pooled["explain"] += s["explain_right"]
        pooled["e1"] += e1["top1"]
        pooled["e2"] += e2["top1"]
        pooled["both"] += s["both_experts"]
    n = max(pooled["pastes"], 1)
    lines += [
        f"| pooled | | {pooled['pastes']} | | {pooled['explain']} ({pooled['explain'] / n:.1%}) | "
        f"{pooled['e1']} ({pooled['e1'] / n:.1%}) | {pooled['e2']} ({pooled['e2'] / n:.1%}) | | "
        f"{pooled['both']} ({pooled['both'] / n:.1%}) | | |",
        "",
        "Where both experts were right and explain was not (what the text supported and explain missed):",
        "",
    ]
    for name, s in doc["sets"].items():
        lines.append(f"- {name}: {', '.join(s['both_experts_right_explain_wrong']) or '-'}")
    lines += ["", "Where explain was right and neither expert was:", ""]
    for name, s in doc["sets"].items():
        lines.append(f"- {name}: {', '.join(s['explain_right_no_expert']) or '-'}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--stamp", default=time.strftime("%Y-%m-%d"))
    parser.add_argument("--answers", type=Path, default=ANSWERS)
    args = parser.parse_args(argv)
    doc_in = json.loads(args.answers.read_text(encoding="utf-8"))
    sets = {}
    for name, s in doc_in["sets"].items():
        sets[name] = {"kb": s["knowledge_base"], **score(name, s["experts"])}
    doc = {
        **record_head("explain_expert_baseline.py", argv),
        "description": doc_in["description"],
        "sets": sets,
    }
    return publish_record(args.out, f"{args.stamp}-cpu-explain-expert-baseline", doc, markdown(doc))


if __name__ == "__main__":
    raise SystemExit(main())
