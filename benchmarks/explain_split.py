"""Join collected paste files into one set and split it into a dev half and a held-out half, before any run.

Runs no ortgpu code on the texts: it checks the sets for duplicate threads and near-copies (difflib, as the
collectors did) and splits each input file's pastes in half with a seeded shuffle, so both halves hold as many
pastes from each collector. The two halves are written as separate files, so development can read one only.

    python benchmarks/explain_split.py benchmarks/data/explain_pastes_ninth_a.json \
        benchmarks/data/explain_pastes_ninth_b.json --name ninth --seed 20261209
        # -> benchmarks/data/explain_pastes_ninth_dev.json and explain_pastes_ninth_heldout.json
"""

from __future__ import annotations

import argparse
import difflib
import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
NEAR_COPY = 0.80


def _pastes(path: Path) -> tuple[dict, list[dict]]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    return doc, doc["pastes"]


def _near_copies(mine: list[dict], others: list[dict]) -> list[tuple[str, str, float]]:
    found = []
    for a in mine:
        for b in others:
            if a is b:
                continue
            matcher = difflib.SequenceMatcher(None, a["text"], b["text"], autojunk=False)
            # The cheap upper bounds first: most pairs are far apart.
            if matcher.real_quick_ratio() < NEAR_COPY or matcher.quick_ratio() < NEAR_COPY:
                continue
            ratio = matcher.ratio()
            if ratio >= NEAR_COPY:
                found.append((a["id"], b["id"], round(ratio, 3)))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="+", type=Path, help="collected paste files (the held-out set's schema)")
    parser.add_argument("--name", required=True, help="the set's name: explain_pastes_<name>_dev/_heldout.json")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--out", type=Path, default=DATA)
    parser.add_argument(
        "--no-learn",
        action="store_true",
        help='mark the dev half "learn": false too (the held-out half always is: explain\'s examples skip it)',
    )
    args = parser.parse_args(argv)

    docs = [_pastes(path) for path in args.inputs]
    mine = [p for _, pastes in docs for p in pastes]
    inputs = {path.resolve() for path in args.inputs}
    earlier = []
    for path in sorted(DATA.glob("explain_pastes*.json")):
        if path.resolve() in inputs or f"_{args.name}_" in path.name:
            continue
        earlier.extend(_pastes(path)[1])

    ids = [p["id"] for p in mine]
    if len(set(ids)) != len(ids):
        print("duplicate ids across the inputs", file=sys.stderr)
        return 2
    earlier_urls = {p["source"] for p in earlier}
    seen_urls: dict[str, str] = {}
    for p in mine:
        if p["source"] in earlier_urls:
            print(f"{p['id']}: thread already in an earlier set: {p['source']}", file=sys.stderr)
        if p["source"] in seen_urls:
            print(f"{p['id']}: same thread as {seen_urls[p['source']]}: {p['source']}", file=sys.stderr)
        seen_urls.setdefault(p["source"], p["id"])
    copies = _near_copies(mine, mine + earlier)
    for a, b, ratio in copies:
        print(f"near-copy: {a} ~ {b} ({ratio})", file=sys.stderr)

    rng = random.Random(args.seed)
    halves: dict[str, list[dict]] = {"dev": [], "heldout": []}
    for _, pastes in docs:
        order = sorted(pastes, key=lambda p: p["id"])
        rng.shuffle(order)
        cut = (len(order) + 1) // 2 if len(halves["dev"]) <= len(halves["heldout"]) else len(order) // 2
        for split, part in (("dev", order[:cut]), ("heldout", order[cut:])):
            halves[split].extend({**p, "split": f"{args.name}-{split}"} for p in part)

    new_labels: dict[str, str] = {}
    for doc, _ in docs:
        new_labels.update(doc.get("new_labels", {}))
    for split, pastes in halves.items():
        pastes.sort(key=lambda p: p["id"])
        used = {label for p in pastes for label in p["expected"] if label.startswith("NEW:")}
        description = (
            f"The {split} half of the {args.name} set: {len(pastes)} of {len(mine)} real pastes joined from "
            + ", ".join(path.name for path in args.inputs)
            + f" (whose descriptions follow) and split by benchmarks/explain_split.py --seed {args.seed} (each "
            "input halved by a seeded shuffle) before explain ran on any of them. "
            + ("Development may read this half." if split == "dev" else "Held out: development never reads it.")
            + " Inputs: "
            + " | ".join(doc["description"] for doc, _ in docs)
        )
        out = {
            "schema": 1,
            "description": description,
            # explain's learned examples must not see a held-out half (until it has been measured and is released)
            **({"learn": False} if args.no_learn or split == "heldout" else {}),
            "new_labels": {k: v for k, v in new_labels.items() if k in used},
            "pastes": pastes,
        }
        path = args.out / f"explain_pastes_{args.name}_{split}.json"
        path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"{path.name}: {len(pastes)} pastes")
    print(f"near-copies at >= {NEAR_COPY}: {len(copies)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
