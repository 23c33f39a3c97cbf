"""Accuracy of `ortgpu explain` on a fresh set of real pastes: labelled before any run, no code changed.

By default the second set (benchmarks/data/explain_pastes_fresh.json, split 'fresh'); `--data`, `--split`, `--name` and
`--title` point it at another set of the same schema. Scoring is the held-out benchmark's own
(benchmarks/explain_heldout.py): a paste counts as diagnosed when explain's top match is one of its expected entries.

    python benchmarks/explain_fresh.py --out benchmarks/results --stamp 2026-12-01
    python benchmarks/explain_fresh.py --data benchmarks/data/explain_pastes_third.json --split third --name third \
        --title "third measurement" --out benchmarks/results --stamp 2026-12-01
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import sys
import time
from pathlib import Path

from explain_heldout import evaluate, summarise, write_record

from ortgpu import __version__
from ortgpu.explain import explain

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "explain_pastes_fresh.json"
SPLIT = "fresh"
TITLE = "second measurement"


def _said(text: str, closest: bool = True) -> dict:
    """What explain told the user for one paste: verdict, summary and the matches with their titles."""
    result = explain(text, closest=closest)
    return {
        "verdict": result.verdict.value,
        "summary": result.summary,
        "matches": [{"id": m.id, "title": m.title, "matched_by": m.matched_by} for m in result.matches],
    }


def _markdown(doc: dict) -> str:
    split = doc.get("split", SPLIT)
    s = doc["summary"][split]
    looked = doc.get("looked", [])
    title = doc.get("title", TITLE) if not looked else "a re-run after rules were written for its misses: NOT unseen"
    lines = [
        f"# `ortgpu explain` on a fresh set of real pastes ({title})",
        "",
        f"Command: `{doc['command']}`  ",
        f"ortgpu {doc['ortgpu_version']}, Python {doc['python']}; data: "
        f"`{doc.get('data', 'benchmarks/data/explain_pastes_fresh.json')}` "
        f"({s['n']} pastes from {doc['projects']} projects).",
        "",
        *[f"- {note}" for note in doc["notes"]],
        "",
        "| set | pastes | diagnosed | accuracy | not recognised |",
        "|---|---|---|---|---|",
        f"| {split} | {s['n']} | {s['correct']} | {s['accuracy']:.1%} | {s['not_recognised']} |",
    ]
    amb = doc["summary"]["unambiguous"]
    lines.append(f"| {split}, labels not marked AMBIGUOUS | {amb['n']} | {amb['correct']} | {amb['accuracy']:.1%} | |")
    if looked:
        lines.append(
            f"\nLooked at and acted on after the first measurement (no longer unseen): {', '.join(looked)}. "
            "The honest unseen number of this set stays the first measurement's."
        )
    lines += ["", "By class:", "", "| class | diagnosed / pastes |", "|---|---|"]
    for cls, v in s["by_class"].items():
        lines.append(f"| {cls} | {v['correct']} / {v['n']} |")
    misses = [r for r in doc["rows"] if not r["correct"]]
    lines += ["", f"Misses ({len(misses)}):", ""]
    for r in misses:
        said = r["said"]
        top = said["matches"][0] if said["matches"] else None
        got = f"{top['id']} ({top['title']})" if top else "nothing (not recognised)"
        lines.append(
            f"- **{r['id']}** [{r['class']}] {r['source']} — expected {', '.join(r['expected'])}; "
            f"explain said: verdict `{said['verdict']}`, top {got}; all: {', '.join(r['all']) or '-'}."
        )
        if r["note"]:
            lines.append(f"  Label note: {r['note']}")
    lines += ["", "Every paste:", "", "| id | class | expected | got | ok |", "|---|---|---|---|---|"]
    for r in doc["rows"]:
        ok = "yes" if r["correct"] else "NO"
        lines.append(f"| {r['id']} | {r['class']} | {', '.join(r['expected'])} | {r['got']} | {ok} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the labelled pastes (JSON, the held-out set's schema)")
    parser.add_argument("--split", default=SPLIT, help="the split of the data file to score")
    parser.add_argument("--name", default="fresh", help="the record's name: <stamp>-cpu-explain-<name>.json and .md")
    parser.add_argument("--title", default=TITLE, help="what this measurement is, for the record's heading")
    parser.add_argument("--out", type=Path, help="folder for <stamp>-cpu-explain-<name>.json and .md")
    parser.add_argument("--stamp", default=time.strftime("%Y-%m-%d"))
    parser.add_argument("--note", action="append", default=[], help="a line for the record's notes (repeatable)")
    parser.add_argument(
        "--looked", default="", help="comma-separated ids whose misses were looked at and acted on: not unseen"
    )
    parser.add_argument("--no-closest", action="store_true", help="turn off the nearest-entry fallback")
    args = parser.parse_args(argv)
    looked = [i for i in args.looked.split(",") if i]

    data = json.loads(args.data.read_text(encoding="utf-8"))
    pastes = data["pastes"]
    rows = evaluate(pastes, closest=not args.no_closest)
    by_id = {p["id"]: p for p in pastes}
    for r in rows:
        r["note"] = by_id[r["id"]].get("note", "")
        r["said"] = _said(by_id[r["id"]]["text"], closest=not args.no_closest)
    summary = summarise(rows, splits=(args.split,))
    clear = [r for r in rows if "AMBIGUOUS" not in r["note"]]
    right = sum(r["correct"] for r in clear)
    summary["unambiguous"] = {
        "n": len(clear),
        "correct": right,
        "accuracy": round(right / len(clear), 4) if clear else None,
    }
    for r in rows:
        mark = "ok  " if r["correct"] else "MISS"
        print(f"{mark} {r['id']} {r['class']:<14} expected {','.join(r['expected']):<22} got {r['got']}")
    p = summary[args.split]
    print(f"{args.split}: {p['correct']}/{p['n']} = {p['accuracy']:.1%} (not recognised: {p['not_recognised']})")
    u = summary["unambiguous"]
    print(f"labels not marked AMBIGUOUS: {u['correct']}/{u['n']} = {u['accuracy']:.1%}")
    if args.out:
        options = []
        if args.data != DATA:
            options += ["--data", args.data.as_posix()]
        for flag, value, default in (
            ("--split", args.split, SPLIT),
            ("--name", args.name, "fresh"),
            ("--title", args.title, TITLE),
        ):
            if value != default:
                options += [flag, value]
        options += ["--out", args.out.as_posix(), "--stamp", args.stamp]
        if args.no_closest:
            options.append("--no-closest")
        command = "python benchmarks/explain_fresh.py " + shlex.join(options)
        if looked:
            command += f" --looked {args.looked}"
        if args.note:
            command += " --note ... (the notes below)"
        doc = {
            "schema": "ortgpu.bench-explain-fresh/v1",
            "command": command,
            "data": args.data.resolve().relative_to(HERE.parent).as_posix()
            if args.data.resolve().is_relative_to(HERE.parent)
            else args.data.as_posix(),
            "split": args.split,
            "title": args.title,
            "looked": looked,
            "ortgpu_version": __version__,
            "python": platform.python_version(),
            "projects": len({p["project"] for p in pastes}),
            "summary": summary,
            "notes": args.note,
            "rows": rows,
        }
        base = write_record(args.out, f"{args.stamp}-cpu-explain-{args.name}", doc, _markdown(doc))
        print(f"wrote {base}.json and .md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
