"""explain's first unseen runs split by an independent audit of whether each paste's text alone carries its cause.

The labels of the unseen sets come from the threads (a maintainer's answer, the fix that worked), so some pastes hold
their cause in the text (a library name and version, an error code, an op) and others do not (a bare segfault, an exit
code, a message many causes share). Auditors who never saw explain's answers, code or records judged every paste of
every first unseen run from its text and its label's entries only (not the label note, which carries the thread):
"yes" (the text points to the label: an expert would name it as the most likely cause), "partial" (one of a few
plausible causes), "no" (the cause needs information outside the text). This script joins those verdicts
(benchmarks/data/explain_paste_audit.json) with what explain answered at each paste's FIRST unseen run (the stored
records of the unseen summary's first-run rows) and reports accuracy within each verdict. The auditors knew the
labels, so "yes" leans generous (hindsight); the split says where the misses lie, it does not change the target.

    python benchmarks/explain_diagnosability.py --out benchmarks/results --stamp 2026-12-02
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

from explain_examples_replay import MEASUREMENTS, _record
from explain_heldout import publish_record, record_head

HERE = Path(__file__).resolve().parent
AUDIT = HERE / "data" / "explain_paste_audit.json"
VERDICTS = ("yes", "partial", "no")


def first_runs() -> dict[str, dict]:
    """Every paste's stored row at its first unseen run, by paste id."""
    rows: dict[str, dict] = {}
    for _row, _name, records, split, _extra, first in MEASUREMENTS:
        if not first:
            continue
        for rec in records:
            for r in json.loads(_record(rec).read_text(encoding="utf-8"))["rows"]:
                if split is None or r.get("split") == split:
                    rows[r["id"]] = r
    return rows


def outcome(row: dict) -> str:
    """right, or the kind of miss: a NEW class, not recognised, a wrong rule answer, a wrong lead."""
    if row["correct"]:
        return "right"
    if all(e.startswith("NEW:") for e in row["expected"]):
        return "new_class"
    if row.get("got") is None:
        return "not_recognised"
    return "wrong_lead" if row.get("verdict") == "closest_known" else "wrong_answer"


def tabulate(rows: dict[str, dict], audit: dict[str, dict]) -> dict:
    """Counts of outcome by audit verdict, over the pastes both know."""
    ids = sorted(set(rows) & set(audit))
    table: dict[str, Counter] = {v: Counter() for v in VERDICTS}
    for i in ids:
        table[audit[i]["v"]][outcome(rows[i])] += 1
    out: dict = {"pastes": len(ids), "missing_audit": sorted(set(rows) - set(audit)), "by_verdict": {}}
    for v in VERDICTS:
        c = table[v]
        n = sum(c.values())
        out["by_verdict"][v] = {"pastes": n, "right": c["right"], **{k: c[k] for k in sorted(c) if k != "right"}}
    yes = out["by_verdict"]["yes"]
    known_yes = yes["pastes"] - yes.get("new_class", 0)
    out["yes_known_class"] = {"pastes": known_yes, "right": yes["right"]}
    return out


def markdown(doc: dict) -> str:
    t = doc["table"]
    lines = [
        "# explain's first unseen runs by whether the paste's text alone carries its cause",
        "",
        f"`{doc['command']}` — ortgpu {doc['ortgpu']}, Python {doc['python']}.",
        "",
        __doc__.split("\n\n")[1].replace("\n", " "),
        "",
        f"Audit: {doc['audit']['description']}",
        "",
        "| audit verdict | pastes | right at first run | accuracy | NEW class | not recognised | wrong rule answer "
        "| wrong lead |",
        "|---|---|---|---|---|---|---|---|",
    ]
    total = {"pastes": 0, "right": 0}
    for v in VERDICTS:
        b = t["by_verdict"][v]
        total["pastes"] += b["pastes"]
        total["right"] += b["right"]
        acc = f"{b['right'] / b['pastes']:.1%}" if b["pastes"] else "-"
        lines.append(
            f"| {v} | {b['pastes']} | {b['right']} | {acc} | {b.get('new_class', 0)} | {b.get('not_recognised', 0)} "
            f"| {b.get('wrong_answer', 0)} | {b.get('wrong_lead', 0)} |"
        )
    lines.append(
        f"| all | {total['pastes']} | {total['right']} | {total['right'] / max(total['pastes'], 1):.1%} | | | | |"
    )
    ky = t["yes_known_class"]
    lines += [
        "",
        f'Pastes whose text carries the cause and whose class had an entry ("yes", not NEW): {ky["right"]} of '
        f"{ky['pastes']} right at the first run ({ky['right'] / max(ky['pastes'], 1):.1%}).",
    ]
    if t["missing_audit"]:
        lines.append(f"Not audited ({len(t['missing_audit'])}): {', '.join(t['missing_audit'])}.")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--stamp", default=time.strftime("%Y-%m-%d"))
    parser.add_argument("--audit", type=Path, default=AUDIT)
    args = parser.parse_args(argv)
    audit = json.loads(args.audit.read_text(encoding="utf-8"))
    doc = {
        **record_head("explain_diagnosability.py", argv),
        "audit": {"description": audit["description"]},
        "table": tabulate(first_runs(), audit["verdicts"]),
    }
    return publish_record(args.out, f"{args.stamp}-cpu-explain-diagnosability", doc, markdown(doc))


if __name__ == "__main__":
    raise SystemExit(main())
