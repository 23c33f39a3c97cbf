"""Calibration of explain's nearest-entry fallback (knowledge/nearest.py) on the SEEN paste sets only.

The fallback runs only when no rule fires, and on the seen sets the rules now recognise almost every paste, so its
effect in the pipeline says little. This script therefore also scores the fallback ALONE on every seen paste, as if no
rule had fired, with the knowledge-base examples taken from the same issue as the paste left out (many examples were
written from these pastes). For each threshold and margin it counts the pastes offered a closest entry, how many of
those are right, how many wrong, and how many model-input (NG-*) or benign (FM-65) pastes would be turned into a GPU
entry. Unrelated texts (no ORT error at all) must stay below the threshold.

    python benchmarks/explain_nearest.py --out benchmarks/results --stamp 2026-12-01-after-widen3
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from explain_heldout import _accepted, write_record

from ortgpu import __version__
from ortgpu.explain import explain
from ortgpu.knowledge import load_knowledge_base
from ortgpu.knowledge.base import KnowledgeBase
from ortgpu.knowledge.matcher import find_hits
from ortgpu.knowledge.nearest import MARGIN, THRESHOLD, rank, reports_failure
from ortgpu.knowledge.text import squeeze

HERE = Path(__file__).resolve().parent
SETS = {
    "heldout": "explain_pastes.json",
    "fresh": "explain_pastes_fresh.json",
    "third": "explain_pastes_third.json",
    "fourth": "explain_pastes_fourth.json",
    "fifth": "explain_pastes_fifth.json",
}
# the first (unseen) measurement of each set: its "not recognised" pastes are the population the fallback is for
FIRST_RECORDS = {name: f"2026-12-01-cpu-explain-{name}.json" for name in SETS}
THRESHOLDS = (0.0, 10.0, 15.0, 20.0, 25.0)
MARGINS = (1.0, 1.15, 1.3, 1.5, 2.0)
UNRELATED = (
    "The quick brown fox jumps over the lazy dog.",
    "ModuleNotFoundError: No module named 'cv2'",
    "Segmentation fault (core dumped)",
    "TypeError: unsupported operand type(s) for +: 'int' and 'str'",
    "KeyError: 'images'",
    "npm ERR! code ERESOLVE",
    "fatal: not a git repository (or any of the parent directories): .git",
    "My program crashes when I run it on the GPU",
    "RuntimeError: CUDA error: device-side assert triggered",
)


def _issue(url: str | None) -> tuple[str, str] | None:
    m = re.search(r"github\.com/([^/]+/[^/]+)/(?:issues|pull|discussions)/(\d+)", url or "")
    return (m.group(1).lower(), m.group(2)) if m else None


def _without_same_issue(kb: KnowledgeBase, paste: dict) -> KnowledgeBase:
    """The knowledge base without the examples taken from this paste's issue or containing its text."""
    text = squeeze(paste["text"])
    issue = _issue(paste.get("source"))
    entries = []
    for entry in kb.entries:
        kept = []
        for example in entry.examples:
            ex = squeeze(example.text)
            same = bool(ex[:60] and ex[:60] in text) or text[:60] in ex
            if issue:
                repo, number = issue
                source = example.source.lower()
                same = same or f"{repo}#{number}" in source
                same = same or (repo == "microsoft/onnxruntime" and re.search(rf"(?<![\w/])#{number}\b", source))
            if not same:
                kept.append(example)
        entries.append(dataclasses.replace(entry, examples=tuple(kept)))
    return KnowledgeBase(tuple(entries))


def _knowledge_base_then(name: str) -> KnowledgeBase | None:
    """The knowledge base as it was when this set was first measured (from git: the commit that added its record)."""
    record = f"benchmarks/results/{FIRST_RECORDS[name]}"
    try:
        commits = subprocess.run(
            ["git", "log", "--diff-filter=A", "--format=%H", "--", record],
            cwd=HERE.parent,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout.split()
        if not commits:
            return None
        text = subprocess.run(
            ["git", "show", f"{commits[-1]}:src/ortgpu/data/failure_modes.json"],
            cwd=HERE.parent,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "failure_modes.json"
        path.write_text(text, encoding="utf-8")
        return load_knowledge_base(path)


def _then(first_unrecognised: set[tuple[str, str]]) -> list[dict]:
    """The fallback with the knowledge base of the time on the pastes no rule recognised then: what it would have
    answered had it existed at that measurement (the closest to an unseen test the seen sets allow)."""
    rows = []
    for name, file in SETS.items():
        ids = {i for n, i in first_unrecognised if n == name}
        kb_then = _knowledge_base_then(name) if ids else None
        if kb_then is None:
            continue
        for paste in json.loads((HERE / "data" / file).read_text(encoding="utf-8"))["pastes"]:
            if paste["id"] not in ids:
                continue
            ranked = rank(paste["text"], kb_then)
            best = ranked[0] if ranked else None
            rows.append(
                {
                    "set": name,
                    "id": paste["id"],
                    "expected": paste["expected"],
                    "nearest": best[1].id if best else None,
                    "score": round(best[0], 2) if best else 0.0,
                    "runner_up": round(ranked[1][0], 2) if len(ranked) > 1 else 0.0,
                    "right": bool(best and best[1].id in _accepted(paste["expected"])),
                    "reports_failure": reports_failure(paste["text"]),
                    "model_or_benign": any(e.startswith("NG-") or e == "FM-65" for e in paste["expected"]),
                }
            )
    return rows


def _grid(rows: list[dict], subset: str) -> list[dict]:
    grid = []
    for threshold in THRESHOLDS:
        for margin in MARGINS:
            offered = [
                r
                for r in rows
                if r["reports_failure"] and r["score"] >= threshold and r["score"] >= margin * r["runner_up"]
            ]
            right = sum(r["right"] for r in offered)
            turned = sum(
                1 for r in offered if r["model_or_benign"] and not r["right"] and str(r["nearest"]).startswith("FM-")
            )
            grid.append(
                {
                    "subset": subset,
                    "pastes": len(rows),
                    "threshold": threshold,
                    "margin": margin,
                    "offered": len(offered),
                    "right": right,
                    "wrong": len(offered) - right,
                    "model_or_benign_turned_gpu": turned,
                }
            )
    return grid


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="folder for <stamp>-cpu-explain-nearest.json and .md")
    parser.add_argument("--stamp", default=time.strftime("%Y-%m-%d"))
    args = parser.parse_args(argv)
    kb = load_knowledge_base()
    first_unrecognised = set()
    for name, record in FIRST_RECORDS.items():
        path = HERE / "results" / record
        if path.exists():
            rows_then = json.loads(path.read_text(encoding="utf-8"))["rows"]
            first_unrecognised |= {(name, r["id"]) for r in rows_then if r["got"] is None}
    rows = []
    for name, file in SETS.items():
        for paste in json.loads((HERE / "data" / file).read_text(encoding="utf-8"))["pastes"]:
            ranked = rank(paste["text"], _without_same_issue(kb, paste))
            best = ranked[0] if ranked else None
            accepted = _accepted(paste["expected"])
            in_pipeline = explain(paste["text"])
            rows.append(
                {
                    "set": name,
                    "id": paste["id"],
                    "expected": paste["expected"],
                    "nearest": best[1].id if best else None,
                    "score": round(best[0], 2) if best else 0.0,
                    "runner_up": round(ranked[1][0], 2) if len(ranked) > 1 else 0.0,
                    "right": bool(best and best[1].id in accepted),
                    "reports_failure": reports_failure(paste["text"]),
                    "model_or_benign": any(e.startswith("NG-") or e == "FM-65" for e in paste["expected"]),
                    "rules_fired": bool(find_hits(paste["text"], kb)),
                    "unrecognised_when_first_measured": (name, paste["id"]) in first_unrecognised,
                    "pipeline_top": in_pipeline.matches[0].id if in_pipeline.matches else None,
                    "pipeline_by": in_pipeline.matches[0].matched_by if in_pipeline.matches else None,
                }
            )
    grid = _grid(rows, "all")
    grid += _grid([r for r in rows if r["unrecognised_when_first_measured"]], "unrecognised when first measured")
    then = _then(first_unrecognised)
    grid += _grid(then, "unrecognised then, knowledge base of then")
    kb_rank = [(t, rank(t, kb) if reports_failure(t) else []) for t in UNRELATED]

    unrelated = [
        {"text": t, "score": round(r[0][0], 2) if r else 0.0, "nearest": r[0][1].id if r else None} for t, r in kb_rank
    ]
    via_fallback = [r for r in rows if r["pipeline_by"] == "closest"]
    doc = {
        "schema": "ortgpu.bench-explain-nearest/v1",
        "command": "python benchmarks/explain_nearest.py"
        + (f" --out {args.out.as_posix()} --stamp {args.stamp}" if args.out else ""),
        "ortgpu_version": __version__,
        "python": platform.python_version(),
        "threshold": THRESHOLD,
        "margin": MARGIN,
        "pastes": len(rows),
        "no_rule_fired": sum(not r["rules_fired"] for r in rows),
        "pipeline_via_fallback": [(r["id"], r["pipeline_top"], r["right"]) for r in via_fallback],
        "grid": grid,
        "unrelated": unrelated,
        "rows": rows,
        "rows_then": then,
    }
    for g in grid:
        print(
            f"{g['subset'][:20]:<20} ({g['pastes']}) threshold {g['threshold']:>5} margin {g['margin']:<4}: "
            f"offered {g['offered']:3d} right {g['right']:3d} wrong {g['wrong']:3d} "
            f"NG/benign->GPU {g['model_or_benign_turned_gpu']}"
        )
    print("unrelated texts, best score:", max(u["score"] for u in unrelated))
    print(f"pastes no rule recognises: {doc['no_rule_fired']}; answered by the fallback: {len(via_fallback)}")
    if args.out:
        base = write_record(args.out, f"{args.stamp}-cpu-explain-nearest", doc, _markdown(doc))
        print(f"wrote {base}.json and .md")
    return 0


def _markdown(doc: dict) -> str:
    chosen, hard = (
        next(
            g
            for g in doc["grid"]
            if g["threshold"] == doc["threshold"] and g["margin"] == doc["margin"] and g["subset"] == subset
        )
        for subset in ("all", "unrecognised then, knowledge base of then")
    )
    lines = [
        "# `ortgpu explain`: calibration of the nearest-entry fallback on the SEEN sets (not unseen numbers)",
        "",
        f"Command: `{doc['command']}`  ",
        f"ortgpu {doc['ortgpu_version']}, Python {doc['python']}; {doc['pastes']} pastes of the five seen sets.",
        "",
        "- The fallback scored ALONE on every paste, as if no rule had fired, with the knowledge-base examples from "
        "the same issue as the paste left out. It runs in explain only when no rule fires.",
        f"- Chosen: score >= {doc['threshold']} and >= {doc['margin']} x the runner-up: offered {chosen['offered']}, "
        f"right {chosen['right']}, wrong {chosen['wrong']}, model-input/benign pastes turned into a GPU entry "
        f"{chosen['model_or_benign_turned_gpu']} (optimistic: rules and examples were written from these pastes). "
        f"On the {hard['pastes']} pastes no rule recognised when their set was first measured, scored with the "
        "knowledge base of that time (the population the fallback is for, as close to unseen as the seen sets "
        "allow): offered "
        f"{hard['offered']}, right {hard['right']}, wrong {hard['wrong']}, model-input/benign turned into a GPU entry "
        f"{hard['model_or_benign_turned_gpu']}.",
        f"- In the pipeline: {doc['no_rule_fired']} seen paste(s) are recognised by no rule; the fallback answers "
        f"{len(doc['pipeline_via_fallback'])} of them: {doc['pipeline_via_fallback'] or 'none'}.",
        f"- Unrelated texts (no ORT error): best score {max(u['score'] for u in doc['unrelated'])}, below the "
        "threshold.",
        "",
        "| pastes | threshold | margin | offered | right | wrong | NG/benign -> GPU entry |",
        "|---|---|---|---|---|---|---|",
    ]
    for g in doc["grid"]:
        lines.append(
            f"| {g['subset']} ({g['pastes']}) | {g['threshold']} | {g['margin']} | {g['offered']} | {g['right']} | "
            f"{g['wrong']} | "
            f"{g['model_or_benign_turned_gpu']} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
