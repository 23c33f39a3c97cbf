"""Leave-one-set-out cross-validation of explain's fallback with labelled-paste examples (knowledge/examples.py).

For each of the seen sets, the examples are built from the OTHER sets only, and the
knowledge base loses the examples taken from the left-out set's issues (as benchmarks/explain_nearest.py does). The
fallback ALONE (as if no rule fired) is scored on every paste of the left-out set, for these rankings: the knowledge
base's words only, (a) each entry's document gaining the tokens of its labelled pastes, (b) the k nearest labelled
pastes voting, and (a) with structural features of some kinds (knowledge/examples.py features(): feat_*).
For each threshold and margin: pastes offered a lead (coverage) and how many of those are right (precision). The
operating point is picked on the pooled CV counts; a point where any of explain_nearest.py's UNRELATED texts gets a
lead is not chosen. Also, per left-out set: the pastes the rules do not recognise today and how many of those the
chosen fallback gets right (optimistic: the rules were developed on every set).

    python benchmarks/explain_examples_cv.py --out benchmarks/results --stamp 2026-12-01
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from collections import Counter
from pathlib import Path

from explain_heldout import NEW_LABEL_ENTRIES, write_record
from explain_nearest import UNRELATED, _without_same_issue

from ortgpu import __version__
from ortgpu.knowledge import load_knowledge_base
from ortgpu.knowledge.base import KnowledgeBase
from ortgpu.knowledge.examples import Example, Examples, build_examples, entry_documents, features
from ortgpu.knowledge.matcher import find_hits
from ortgpu.knowledge.nearest import rank, reports_failure, tokens
from ortgpu.knowledge.paste import prepare

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
SETS = {
    "heldout": ["explain_pastes.json"],
    "fresh": ["explain_pastes_fresh.json"],
    "third": ["explain_pastes_third.json"],
    "fourth": ["explain_pastes_fourth.json"],
    "fifth": ["explain_pastes_fifth.json"],
    "sixth": ["explain_pastes_sixth.json"],
    "seventh": ["explain_pastes_seventh.json"],
    "eighth": ["explain_pastes_eighth.json"],
    "ninth": ["explain_pastes_ninth_dev.json", "explain_pastes_ninth_heldout.json"],
    "tenth": ["explain_pastes_tenth_dev.json", "explain_pastes_tenth_heldout.json"],
    "eleventh": ["explain_pastes_eleventh_dev.json", "explain_pastes_eleventh_heldout.json"],
    "twelfth": ["explain_pastes_twelfth_dev.json", "explain_pastes_twelfth_heldout.json"],
    "thirteenth": ["explain_pastes_thirteenth_dev.json", "explain_pastes_thirteenth_heldout.json"],
    "fourteenth": ["explain_pastes_fourteenth_dev.json", "explain_pastes_fourteenth_heldout.json"],
    "fifteenth": ["explain_pastes_fifteenth.json"],
    "sixteenth": ["explain_pastes_sixteenth.json"],
    "seventeenth": ["explain_pastes_seventeenth.json"],
    "eighteenth": ["explain_pastes_eighteenth_dev.json", "explain_pastes_eighteenth_heldout.json"],
    "nineteenth": ["explain_pastes_nineteenth_dev.json", "explain_pastes_nineteenth_heldout.json"],
    "twentieth": ["explain_pastes_twentieth.json"],
    "twentyfirst": ["explain_pastes_twentyfirst.json"],
}
GRIDS = {
    "kb_words": ((10.0, 15.0, 20.0, 25.0), (1.0, 1.15, 1.3, 1.5, 2.0)),
    # today's floor of 15 is kept: below it short generic texts ("the web page loads slowly and takes 12 seconds")
    # get leads, and on the CV a floor of 10 gains one right lead
    "augmented": ((15.0, 20.0, 25.0, 30.0, 40.0), (1.0, 1.1, 1.15, 1.2, 1.25, 1.3, 1.5, 2.0)),
    "knn": ((5.0, 10.0, 15.0, 20.0, 30.0), (1.0, 1.3, 1.5, 2.0, 2.5, 3.0)),
    # (a) offered only where (b)'s top entry is the same: two rankings of the labelled pastes must agree
    "agree": ((15.0, 20.0, 25.0, 30.0, 40.0), (1.0, 1.1, 1.15, 1.2, 1.25, 1.3, 1.5, 2.0)),
}
# (a) with structural features (knowledge/examples.py features()) in the documents and the query, by kind of feature
FEATURE_VARIANTS = {
    "feat_sig": ("sig:",),
    "feat_lib": ("lib:",),
    "feat_sig_lib": ("sig:", "lib:"),
    "feat_all": ("sig:", "lib:", "op:", "binding:"),
}
for _variant in FEATURE_VARIANTS:
    GRIDS[_variant] = GRIDS["augmented"]
KNN_K = 5
TARGET_PRECISION = 0.90  # the operating point: most right leads with pooled CV precision at least this


def _pastes(names: list[str]) -> list[dict]:
    return [p for n in names for p in json.loads((DATA / n).read_text(encoding="utf-8"))["pastes"]]


def _accepted(expected: list[str], kb: KnowledgeBase) -> set[str]:
    ids = {e.id: (e.merged_into or e.id) for e in kb.entries}
    mapped = {NEW_LABEL_ENTRIES.get(label, label) for label in expected}
    return mapped | {ids[m] for m in mapped if m in ids}


def _labelled(pastes: list[dict], kb: KnowledgeBase) -> list[tuple[str, str]]:
    known = {e.id for e in kb.entries}
    out = []
    for p in pastes:
        label = NEW_LABEL_ENTRIES.get(p["expected"][0], p["expected"][0]) if p["expected"] else None
        if label in known:
            out.append((label, p["text"]))
    return out


def _knn(text: str, examples: Examples, kb: KnowledgeBase) -> list[tuple[float, str]]:
    """(b): BM25 over the labelled pastes; the K_NN best vote for their entries with their scores."""
    docs = [Counter(e.tokens) for e in examples.examples]
    df: Counter[str] = Counter()
    for d in docs:
        df.update(d.keys())
    n = len(docs)
    average = sum(len(e.tokens) for e in examples.examples) / max(n, 1)
    query = list(dict.fromkeys(t for t in tokens(text) if t in df))[:400]
    scores = []
    for example, d in zip(examples.examples, docs, strict=True):
        norm = 1.2 * (0.25 + 0.75 * len(example.tokens) / average)
        s = sum(math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) * 2.2 / (1 + norm) for t in query if t in d)
        if s > 0:
            scores.append((s, example.entry))
    scores.sort(reverse=True)
    ids = {e.id: (e.merged_into or e.id) for e in kb.entries}
    votes: Counter[str] = Counter()
    for s, entry in scores[:KNN_K]:
        votes[ids.get(entry, entry)] += s
    return sorted(((v, e) for e, v in votes.items()), key=lambda x: (-x[0], x[1]))


def _kept(words: list[str] | tuple[str, ...], prefixes: tuple[str, ...]) -> list[str]:
    """Plain words, and the features of these kinds."""
    return [w for w in words if ":" not in w or w.startswith(prefixes)]


def _only(examples: Examples, prefixes: tuple[str, ...]) -> Examples:
    """The featured examples with only these kinds of feature."""
    kept = tuple(Example(e.entry, tuple(_kept(e.tokens, prefixes))) for e in examples.examples)
    return Examples(examples.built_from, kept, prefixes)


def _fold(name: str, kb_full: KnowledgeBase) -> list[dict]:
    left_out = _pastes(SETS[name])
    others = [f for s, files in SETS.items() if s != name for f in files]
    kb = kb_full
    for paste in left_out:
        kb = _without_same_issue(kb, paste)
    examples = build_examples(_labelled(_pastes(others), kb), kb, others)
    extra = entry_documents(examples, kb)
    featured = build_examples(_labelled(_pastes(others), kb), kb, others, FEATURE_VARIANTS["feat_all"])
    extras = {v: entry_documents(_only(featured, prefixes), kb) for v, prefixes in FEATURE_VARIANTS.items()}
    rows = []
    for paste in left_out:
        text = prepare(paste["text"]).joined
        row = {
            "set": name,
            "id": paste["id"],
            "expected": paste["expected"],
            "failure": reports_failure(text),
            "rules_recognise": bool(find_hits(prepare(paste["text"]), kb_full)),
        }
        accepted = _accepted(paste["expected"], kb)
        feats = features(prepare(paste["text"]))
        for method, ranked in (
            ("kb_words", [(s, e.id) for s, e, _ in rank(text, kb)]),
            ("augmented", [(s, e.id) for s, e, _ in rank(text, kb, extra)]),
            ("knn", _knn(text, examples, kb)),
            *(
                (v, [(s, e.id) for s, e, _ in rank(text, kb, extras[v], _kept(feats, FEATURE_VARIANTS[v]))])
                for v in FEATURE_VARIANTS
            ),
        ):
            top = ranked[0] if ranked else (0.0, None)
            row[method] = {
                "got": top[1],
                "score": round(top[0], 3),
                "runner_up": round(ranked[1][0], 3) if len(ranked) > 1 else 0.0,
                "correct": top[1] in accepted,
            }
        agree = dict(row["augmented"])
        if row["knn"]["got"] != agree["got"]:
            agree.update(got=None, correct=False)
        row["agree"] = agree
        rows.append(row)
    return rows


def _unrelated(kb: KnowledgeBase) -> list[dict]:
    """explain_nearest.py's UNRELATED texts ranked by each ranking with examples from every set (as shipped)."""
    files = [f for fs in SETS.values() for f in fs]
    plain = entry_documents(build_examples(_labelled(_pastes(files), kb), kb, []), kb)
    featured = build_examples(_labelled(_pastes(files), kb), kb, [], FEATURE_VARIANTS["feat_all"])
    extras = {v: entry_documents(_only(featured, prefixes), kb) for v, prefixes in FEATURE_VARIANTS.items()}
    rows = []
    for text in UNRELATED:
        feats = features(prepare(text))
        row: dict = {"text": text, "failure": reports_failure(text)}
        rankings = {"kb_words": rank(text, kb), "augmented": rank(text, kb, plain)}
        for v, prefixes in FEATURE_VARIANTS.items():
            rankings[v] = rank(text, kb, extras[v], _kept(feats, prefixes))
        for method, ranked in rankings.items():
            row[method] = {
                "got": ranked[0][1].id if ranked else None,
                "score": ranked[0][0] if ranked else 0.0,
                "runner_up": ranked[1][0] if len(ranked) > 1 else 0.0,
            }
        rows.append(row)
    return rows


def _offered(row: dict, method: str, threshold: float, margin: float) -> bool:
    r = row[method]
    return bool(row["failure"] and r["got"] and r["score"] >= threshold and r["score"] >= margin * r["runner_up"])


def _count(rows: list[dict], method: str, threshold: float, margin: float) -> dict:
    offered = [r for r in rows if _offered(r, method, threshold, margin)]
    right = sum(r[method]["correct"] for r in offered)
    return {
        "pastes": len(rows),
        "offered": len(offered),
        "right": right,
        "wrong": len(offered) - right,
        "coverage": round(len(offered) / max(len(rows), 1), 3),
        "precision": round(right / len(offered), 3) if offered else None,
    }


def _pick(rows: list[dict], method: str, unrelated: list[dict]) -> dict:
    """The threshold and margin with the most right leads at pooled precision >= TARGET_PRECISION, where no unrelated
    text (explain_nearest.py's UNRELATED, which tests/knowledge/test_nearest.py also guards) is offered a lead."""
    best = None
    thresholds, margins = GRIDS[method]
    for t in thresholds:
        for m in margins:
            c = _count(rows, method, t, m)
            if c["precision"] is None or c["precision"] < TARGET_PRECISION:
                continue
            if any(method in u and _offered(u, method, t, m) for u in unrelated):
                continue
            key = (c["right"], -c["wrong"], t, m)
            if best is None or key > best[0]:
                best = (key, {"threshold": t, "margin": m, **c})
    return best[1] if best else {"threshold": None, "margin": None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--stamp", required=True)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    kb = load_knowledge_base()
    rows = [row for name in SETS for row in _fold(name, kb)]
    unrelated = _unrelated(kb)
    doc: dict = {
        "schema": 1,
        "command": f"python benchmarks/explain_examples_cv.py --out {args.out.as_posix()} --stamp {args.stamp}",
        "ortgpu": __version__,
        "python": platform.python_version(),
        "target_precision": TARGET_PRECISION,
        "knn_k": KNN_K,
        "grids": {},
        "chosen": {},
        "per_set": {},
    }
    for method in GRIDS:
        thresholds, margins = GRIDS[method]
        doc["grids"][method] = [
            {"threshold": t, "margin": m, **_count(rows, method, t, m)} for t in thresholds for m in margins
        ]
        doc["chosen"][method] = _pick(rows, method, unrelated)
    doc["today"] = {"threshold": 15.0, "margin": 1.5, **_count(rows, "kb_words", 15.0, 1.5)}
    # what explain ships: the featured ranking with the most right leads at its chosen point
    featured = [m for m in FEATURE_VARIANTS if doc["chosen"][m].get("threshold") is not None]
    doc["shipped"] = max(featured, key=lambda m: doc["chosen"][m]["right"])
    doc["shipped_features"] = list(FEATURE_VARIANTS[doc["shipped"]])
    for name in SETS:
        fold = [r for r in rows if r["set"] == name]
        unrecognised = [r for r in fold if not r["rules_recognise"]]
        entry: dict = {"pastes": len(fold), "rules_do_not_recognise": len(unrecognised)}
        for method, chosen in doc["chosen"].items():
            if chosen["threshold"] is None:
                continue
            t, m = chosen["threshold"], chosen["margin"]
            entry[method] = _count(fold, method, t, m)
            entry[f"{method}_right_where_rules_silent"] = sum(
                _offered(r, method, t, m) and r[method]["correct"] for r in unrecognised
            )
        doc["per_set"][name] = entry
    doc["unrelated_offered"] = {
        method: [u["text"] for u in unrelated if method in u and _offered(u, method, c["threshold"], c["margin"])]
        for method, c in doc["chosen"].items()
        if c.get("threshold") is not None
    }
    doc["seconds"] = round(time.perf_counter() - start, 1)
    doc["rows"] = rows
    write_record(args.out, f"{args.stamp}-cpu-explain-examples-cv", doc, _markdown(doc))
    print(_markdown(doc))
    return 0


def _markdown(doc: dict) -> str:
    lines = [
        "# explain fallback: leave-one-set-out CV of labelled-paste examples (CPU)",
        "",
        f"`{doc['command']}` — ortgpu {doc['ortgpu']}, Python {doc['python']}, {doc['seconds']} s.",
        "",
        "The fallback alone (as if no rule fired) on every paste of each left-out set; examples built from the other "
        "sets; the knowledge base without the examples taken from the left-out set's issues. Operating point: "
        f"most right leads with pooled precision >= {doc['target_precision']:.0%}.",
        "",
        "| ranking | threshold | margin | pastes | offered (coverage) | right | wrong | precision |",
        "|---|---|---|---|---|---|---|---|",
    ]
    rows = [("kb words, today's 15 / 1.5", doc["today"])]
    rows += [(f"{k} (chosen)", v) for k, v in doc["chosen"].items() if v.get("threshold") is not None]
    for label, c in rows:
        lines.append(
            f"| {label} | {c['threshold']} | {c['margin']} | {c['pastes']} | {c['offered']} ({c['coverage']:.1%}) | "
            f"{c['right']} | {c['wrong']} | {c['precision']:.1%} |"
        )
    shipped = doc["shipped"]
    lines += [
        "",
        f"Shipped: {shipped} (features {', '.join(doc['shipped_features'])}), the featured ranking with the most "
        "right leads at its chosen point.",
        "",
        'Per left-out set, at each chosen point (right/offered). "Rules silent": pastes today\'s rules do not '
        "recognise, and how many of those the augmented fallback gets right — optimistic, since the rules were "
        "developed on every one of these sets.",
        "",
        f"| set | pastes | kb words | augmented | augmented precision, coverage | knn | agree | {shipped} (shipped) "
        f"| rules silent | augmented right there | {shipped} right there |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, e in doc["per_set"].items():
        cells = [
            f"{e[m]['right']}/{e[m]['offered']}" if m in e else "-"
            for m in ("kb_words", "augmented", "knn", "agree", shipped)
        ]
        a = e.get("augmented")
        pc = f"{a['precision']:.0%}, {a['coverage']:.0%}" if a and a["precision"] is not None else "-"
        cells.insert(2, pc)
        lines.append(
            f"| {name} | {e['pastes']} | {' | '.join(cells)} | {e['rules_do_not_recognise']} | "
            f"{e.get('augmented_right_where_rules_silent', '-')} | "
            f"{e.get(f'{shipped}_right_where_rules_silent', '-')} |"
        )
    silent = sum(e["rules_do_not_recognise"] for e in doc["per_set"].values())
    right = {
        m: sum(e.get(f"{m}_right_where_rules_silent", 0) for e in doc["per_set"].values())
        for m, c in doc["chosen"].items()
        if c.get("threshold") is not None
    }
    lines += [
        "",
        f"Right where today's rules are silent ({silent} pastes in all), by ranking at its chosen point: "
        + ", ".join(f"{m} {n}" for m, n in right.items())
        + ".",
        "",
        "Unrelated texts (benchmarks/explain_nearest.py's UNRELATED) offered a lead at each chosen point: "
        + ", ".join(f"{m} {len(t)}" for m, t in doc["unrelated_offered"].items())
        + " (a point where any is offered is not chosen).",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
