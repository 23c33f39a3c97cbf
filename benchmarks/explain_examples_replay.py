"""An honest replay of explain's learned fallback on every unseen measurement whose per-paste results are stored.

For each unseen measurement (benchmarks/results/2026-12-01-cpu-explain-unseen-summary.md), the stored record says what
explain answered AT THAT TIME for each paste. Where the rules of that time said nothing (verdict not_recognised), and
separately where they gave only a closest lead (verdict closest_known), this script asks what the learned fallback
would have answered had it been built only from the sets committed BEFORE that set (for a held-out half measured after
development on its dev half, the dev half too), with the knowledge base of that time (from git: the commit that added
the record; the current one if that fails to load, with its examples from the set's own issues removed either way).
Threshold and margin are the shipped ones (knowledge/examples.py), fixed by the leave-one-set-out CV, not by this
replay. No old code is run: the rules' answers are the stored ones.

    python benchmarks/explain_examples_replay.py --out benchmarks/results --stamp 2026-12-01
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from explain_examples_cv import _accepted, _labelled, _pastes
from explain_heldout import write_record
from explain_nearest import _without_same_issue

from ortgpu import __version__
from ortgpu.knowledge import load_knowledge_base
from ortgpu.knowledge.base import KnowledgeBase
from ortgpu.knowledge.examples import FEATURES, MARGIN, THRESHOLD, build_examples, entry_documents, features_of
from ortgpu.knowledge.nearest import nearest, rank, reports_failure
from ortgpu.knowledge.paste import prepare

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
# the sets in the order they were committed (benchmarks/data), each with its data files
ORDER = [
    ("heldout", ["explain_pastes.json"]),
    ("fresh", ["explain_pastes_fresh.json"]),
    ("third", ["explain_pastes_third.json"]),
    ("fourth", ["explain_pastes_fourth.json"]),
    ("fifth", ["explain_pastes_fifth.json"]),
    ("sixth", ["explain_pastes_sixth.json"]),
    ("seventh", ["explain_pastes_seventh.json"]),
    ("eighth", ["explain_pastes_eighth.json"]),
    ("ninth", ["explain_pastes_ninth_dev.json", "explain_pastes_ninth_heldout.json"]),
    ("tenth", ["explain_pastes_tenth_dev.json", "explain_pastes_tenth_heldout.json"]),
    ("eleventh", ["explain_pastes_eleventh_dev.json", "explain_pastes_eleventh_heldout.json"]),
    ("twelfth", ["explain_pastes_twelfth_dev.json", "explain_pastes_twelfth_heldout.json"]),
    ("thirteenth", ["explain_pastes_thirteenth_dev.json", "explain_pastes_thirteenth_heldout.json"]),
    ("fourteenth", ["explain_pastes_fourteenth_dev.json", "explain_pastes_fourteenth_heldout.json"]),
    ("fifteenth", ["explain_pastes_fifteenth.json"]),
    ("sixteenth", ["explain_pastes_sixteenth.json"]),
    ("seventeenth", ["explain_pastes_seventeenth.json"]),
    ("eighteenth", ["explain_pastes_eighteenth_dev.json", "explain_pastes_eighteenth_heldout.json"]),
    ("nineteenth", ["explain_pastes_nineteenth_dev.json", "explain_pastes_nineteenth_heldout.json"]),
    ("twentieth", ["explain_pastes_twentieth.json"]),
    ("twentyfirst", ["explain_pastes_twentyfirst.json"]),
]
# (summary row, set, records, the split of the record's rows that is unseen or None for all, extra files learnt from,
# whether this row is each paste's FIRST unseen run)
MEASUREMENTS = [
    ("1", "heldout", ["heldout"], "heldout", [], True),
    ("2", "fresh", ["fresh"], None, [], True),
    ("3", "third", ["third"], None, [], True),
    ("4", "fourth", ["fourth"], None, [], True),
    ("5", "fifth", ["fifth"], None, [], True),
    ("6", "sixth", ["sixth"], None, [], True),
    ("7", "seventh", ["seventh"], None, [], True),
    ("8", "eighth", ["eighth"], None, [], True),
    ("9", "ninth", ["ninth-dev-before", "ninth-heldout-before"], None, [], True),
    ("10", "ninth", ["ninth-heldout"], None, ["explain_pastes_ninth_dev.json"], False),
    ("11", "tenth", ["tenth-dev-before", "tenth-heldout-before"], None, [], True),
    ("12", "tenth", ["tenth-heldout"], None, ["explain_pastes_tenth_dev.json"], False),
    ("13", "eleventh", ["eleventh-dev-before", "eleventh-heldout-before"], None, [], True),
    ("14", "twelfth", ["twelfth-dev-before", "twelfth-heldout-before"], None, [], True),
    ("15", "twelfth", ["twelfth-heldout"], None, ["explain_pastes_twelfth_dev.json"], False),
    ("16", "thirteenth", ["thirteenth-dev-before", "thirteenth-heldout-before"], None, [], True),
    ("17", "fourteenth", ["fourteenth-dev-before", "fourteenth-heldout-before"], None, [], True),
    ("18", "fourteenth", ["fourteenth-dev-blind", "fourteenth-heldout-blind"], None, [], False),
    ("19", "fourteenth", ["fourteenth-heldout"], None, ["explain_pastes_fourteenth_dev.json"], False),
    ("20", "fifteenth", ["fifteenth-before"], None, [], True),
    ("21", "sixteenth", ["sixteenth-before"], None, [], True),
    ("22", "seventeenth", ["seventeenth-before"], None, [], True),
    ("23", "eighteenth", ["eighteenth-dev-before", "eighteenth-heldout-before"], None, [], True),
    ("24", "eighteenth", ["eighteenth-heldout"], None, ["explain_pastes_eighteenth_dev.json"], False),
    ("25", "nineteenth", ["nineteenth-dev-before", "nineteenth-heldout-before"], None, [], True),
    ("26", "nineteenth", ["nineteenth-heldout"], None, ["explain_pastes_nineteenth_dev.json"], False),
    ("27", "twentieth", ["twentieth-before"], None, [], True),
    ("28", "twentyfirst", ["twentyfirst-before"], None, [], True),
]


def _record(name: str) -> Path:
    """The record of a run by its name, whichever day it was made (the newest if several)."""
    found = sorted(RESULTS.glob(f"????-??-??-cpu-explain-{name}.json"))
    return found[-1] if found else RESULTS / f"2026-12-01-cpu-explain-{name}.json"


def _kb_then(record: Path, kb_now: KnowledgeBase) -> tuple[KnowledgeBase, str]:
    """The knowledge base of the commit that added this record, or the current one if that cannot be loaded."""
    try:
        rel = record.relative_to(HERE.parent).as_posix()
        run = {"cwd": HERE.parent, "capture_output": True, "text": True, "check": True, "timeout": 60}
        commits = subprocess.run(["git", "log", "--diff-filter=A", "--format=%H", "--", rel], **run).stdout.split()  # type: ignore[call-overload]
        text = subprocess.run(["git", "show", f"{commits[-1]}:src/ortgpu/data/failure_modes.json"], **run).stdout  # type: ignore[call-overload]
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "failure_modes.json"
            path.write_text(text, encoding="utf-8")
            return load_knowledge_base(path), commits[-1][:7]
    except (OSError, IndexError, ValueError, KeyError, TypeError, subprocess.SubprocessError):
        return kb_now, "current"


def _trained(ranking: str, p_min: float, before: list[str], kb: KnowledgeBase):
    """For --trained: a function (paste text, kb, BM25 extra, features) -> the entry offered or None, with the model
    of benchmarks/explain_examples_linear.py fitted on the sets before only (kb: less the examples of every issue of
    the replayed set, as a CV fold's)."""
    from explain_examples_linear import _fit, _words, export

    model = export(*_fit(_labelled(_pastes(before), kb), kb))

    def offer(text: str, kb_paste: KnowledgeBase, extra: dict, more: list[str]) -> str | None:
        if not reports_failure(text):
            return None
        probs = model.probabilities(_words(text))
        if ranking in ("linear", "chain"):
            got = max(probs, key=lambda e: (probs[e], e))
            if ranking == "chain" and probs[got] < p_min:  # else the BM25 ranking's lead at its shipped point
                found = nearest(prepare(text).joined, kb_paste, THRESHOLD, MARGIN, extra, more)
                return found.entry.id if found else None
        else:  # combo: the BM25 ranking's top entry, offered on the model's probability of it
            ranked = rank(prepare(text).joined, kb_paste, extra, more)
            got = ranked[0][1].id if ranked else None
        return got if got is not None and probs.get(got, 0.0) >= p_min else None

    return offer


def _measure(
    measurement: tuple,
    kb_now: KnowledgeBase,
    point: tuple[float, float, tuple[str, ...]],
    trained: tuple[str, float] | None = None,
) -> dict:
    row_id, name, records, split, extra_files, first = measurement
    before = [f for s, files in ORDER[: [s for s, _ in ORDER].index(name)] for f in files] + list(extra_files)
    texts = {p["id"]: p for p in _pastes(dict(ORDER)[name])}
    out: dict = {"row": row_id, "set": name, "records": records, "learnt_from": before, "first_run": first}
    stored = [r for rec in records for r in json.loads(_record(rec).read_text(encoding="utf-8"))["rows"]]
    stored = [r for r in stored if split is None or r.get("split") == split]
    kb_then, version = _kb_then(_record(records[0]), kb_now)
    out["knowledge_base"] = version
    threshold, margin, prefixes = point
    examples = build_examples(_labelled(_pastes(before), kb_then), kb_then, before, prefixes) if before else None
    extra = entry_documents(examples, kb_then) if examples else {}
    offer = None
    if trained and before:
        kb_fit = kb_then
        for paste in texts.values():
            kb_fit = _without_same_issue(kb_fit, paste)
        offer = _trained(trained[0], trained[1], before, kb_fit)
    counts = {
        "pastes": len(stored),
        "correct_then": sum(r["correct"] for r in stored),
        "silent": 0,
        "silent_offered": 0,
        "silent_right": 0,
        "closest": 0,
        "closest_right_then": 0,
        "closest_offered": 0,
        "closest_right": 0,
    }
    details = []
    for r in stored:
        verdict = r["verdict"]
        if verdict not in ("not_recognised", "closest_known"):
            continue
        paste = texts[r["id"]]
        kb = _without_same_issue(kb_then, paste)
        prepared = prepare(paste["text"])
        more = features_of(prepared, prefixes)
        if trained:
            got = offer(paste["text"], kb, extra, more) if offer else None
        else:
            found = nearest(prepared.joined, kb, threshold, margin, extra, more)
            got = found.entry.id if found else None
        right = got is not None and got in _accepted(paste["expected"], kb)
        kind = "silent" if verdict == "not_recognised" else "closest"
        counts[kind] += 1
        counts[f"{kind}_offered"] += got is not None
        counts[f"{kind}_right"] += right
        if kind == "closest":
            counts["closest_right_then"] += bool(r["correct"])
        details.append(
            {
                "id": r["id"],
                "then": verdict,
                "then_got": r.get("got"),
                "expected": paste["expected"],
                "replay_got": got,
                "replay_right": right,
            }
        )
    counts["correct_replay"] = (
        counts["correct_then"] - counts["closest_right_then"] + counts["silent_right"] + counts["closest_right"]
    )
    out.update(counts)
    out["details"] = details
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--stamp", required=True)
    parser.add_argument("--threshold", type=float, default=THRESHOLD, help="default: the shipped one")
    parser.add_argument("--margin", type=float, default=MARGIN, help="default: the shipped one")
    parser.add_argument(
        "--features", nargs="*", default=list(FEATURES), help="kinds of feature, e.g. sig: lib: (default: shipped)"
    )
    parser.add_argument(
        "--trained",
        nargs=2,
        metavar=("RANKING", "P"),
        help="replay benchmarks/explain_examples_linear.py's ranking (linear, combo or chain) at probability P instead",
    )
    args = parser.parse_args(argv)
    start = time.perf_counter()
    kb_now = load_knowledge_base()
    point = (args.threshold, args.margin, tuple(args.features))
    trained = (args.trained[0], float(args.trained[1])) if args.trained else None
    rows = [_measure(m, kb_now, point, trained) for m in MEASUREMENTS]
    first = [r for r in rows if r["first_run"]]
    keys = (
        "pastes",
        "correct_then",
        "correct_replay",
        "silent",
        "silent_offered",
        "silent_right",
        "closest",
        "closest_right_then",
        "closest_offered",
        "closest_right",
    )
    options = f" --threshold {args.threshold} --margin {args.margin} --features {' '.join(args.features)}".rstrip()
    options += f" --trained {args.trained[0]} {args.trained[1]}" if args.trained else ""
    doc = {
        "schema": 1,
        "command": f"python benchmarks/explain_examples_replay.py --out {args.out.as_posix()} --stamp {args.stamp}"
        + options,
        "ortgpu": __version__,
        "python": platform.python_version(),
        "threshold": args.threshold,
        "margin": args.margin,
        "features": list(args.features),
        "trained": args.trained,
        "first_runs": {k: sum(r[k] for r in first) for k in keys},
        "seconds": round(time.perf_counter() - start, 1),
        "measurements": rows,
    }
    write_record(args.out, f"{args.stamp}-cpu-explain-examples-replay", doc, _markdown(doc))
    print(_markdown(doc))
    return 0


def _markdown(doc: dict) -> str:
    lines = [
        "# explain's learned fallback replayed on the unseen measurements (CPU)",
        "",
        f"`{doc['command']}` — ortgpu {doc['ortgpu']}, Python {doc['python']}, {doc['seconds']} s; threshold "
        f"{doc['threshold']}, margin {doc['margin']} (the shipped values, fixed by the leave-one-set-out CV).",
        "",
        "Each row is an unseen measurement of the summary (`2026-12-01-cpu-explain-unseen-summary.md`), with explain's "
        "answers as stored then. Where the rules of that time said nothing (silent) or gave only a closest lead, the "
        "fallback built only from the sets committed before that set (a held-out half measured after development also "
        "learns from its dev half) answers, with the knowledge base of that time (git) less its examples from the "
        "paste's own issue. The rules' answers are not re-run. Row 13's closest leads came from the first learned "
        "fallback already (sets 1-10), so that row replays the same kind of fallback. Row 1's stored record "
        "(`2026-12-01-cpu-explain-heldout.json`) was re-written after that set's first run (37/37 where the summary "
        "says 33/37), so the totals below count 4 more right than the summary; it holds no silent paste or closest "
        "lead, so the fallback's counts do not depend on it.",
        "",
        "| row | set | KB of | pastes | right then | silent | fallback offered / right there | closest leads "
        "(right then) | fallback offered / right there | right with replay |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in doc["measurements"]:
        lines.append(
            f"| {r['row']}{'' if r['first_run'] else ' (a re-run, not a first run)'} | {r['set']} | "
            f"{r['knowledge_base']} | {r['pastes']} | {r['correct_then']} | {r['silent']} | "
            f"{r['silent_offered']} / {r['silent_right']} | {r['closest']} ({r['closest_right_then']}) | "
            f"{r['closest_offered']} / {r['closest_right']} | {r['correct_replay']} |"
        )
    f = doc["first_runs"]
    first_rows = ", ".join(r["row"] for r in doc["measurements"] if r["first_run"])
    silent_wrong = f["silent_offered"] - f["silent_right"]
    closest_wrong = f["closest_offered"] - f["closest_right"]
    lines += [
        "",
        f"Each paste at its first unseen run (rows {first_rows}): {f['pastes']} pastes, right then "
        f"{f['correct_then']} ({f['correct_then'] / f['pastes']:.1%}), right with the replayed fallback "
        f"{f['correct_replay']} ({f['correct_replay'] / f['pastes']:.1%}). Where the rules were silent "
        f"({f['silent']}): the fallback offered {f['silent_offered']}, {f['silent_right']} right, {silent_wrong} "
        f"wrong. Where the rules gave only a closest lead ({f['closest']}, {f['closest_right_then']} right then): it "
        f"offered {f['closest_offered']}, {f['closest_right']} right, {closest_wrong} wrong.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
