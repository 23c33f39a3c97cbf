"""Build src/ortgpu/data/explain_examples.json from the labelled explain paste sets (tokens only, never texts).

    python tools/build_explain_examples.py                      # every seen set in benchmarks/data
    python tools/build_explain_examples.py --sets explain_pastes_third.json explain_pastes_fourth.json --out x.json

Each paste's label is its first expected id, mapped through benchmarks/explain_heldout.py's NEW_LABEL_ENTRIES; a
NEW:* label without an entry, or an id the knowledge base does not hold, is skipped.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data"
OUT = ROOT / "src" / "ortgpu" / "data" / "explain_examples.json"
sys.path.insert(0, str(ROOT / "benchmarks"))

from explain_heldout import NEW_LABEL_ENTRIES  # noqa: E402

from ortgpu.knowledge import load_knowledge_base  # noqa: E402
from ortgpu.knowledge.base import KnowledgeBase  # noqa: E402
from ortgpu.knowledge.examples import FEATURES, Examples, build_examples  # noqa: E402

# a set kept as an unseen test carries "learn": false (benchmarks/explain_split.py --no-learn); it is never learnt from
LEARN_KEY = "learn"


def learnable(name: str) -> bool:
    """Whether this data file may be learnt from (it does not say "learn": false)."""
    return json.loads((DATA / name).read_text(encoding="utf-8")).get(LEARN_KEY, True) is not False


def seen_sets() -> list[str]:
    """Every labelled set in benchmarks/data that may be learnt from, by file name."""
    return sorted(p.name for p in DATA.glob("explain_pastes*.json") if learnable(p.name))


def labelled(names: list[str], kb: KnowledgeBase) -> list[tuple[str, str]]:
    """(entry id, text) of every paste of these sets with a usable label."""
    known = {e.id for e in kb.entries}
    out = []
    for name in names:
        if not learnable(name):
            raise SystemExit(f'refusing to learn from {name}: it is kept as an unseen test ("learn": false)')
        for paste in json.loads((DATA / name).read_text(encoding="utf-8"))["pastes"]:
            if not paste.get("expected"):
                continue
            label = NEW_LABEL_ENTRIES.get(paste["expected"][0], paste["expected"][0])
            if label in known:
                out.append((label, paste["text"]))
    return out


def build(names: list[str], kb: KnowledgeBase | None = None) -> Examples:
    kb = kb or load_knowledge_base()
    return build_examples(labelled(names, kb), kb, names, FEATURES)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", help="data file names in benchmarks/data (default: every seen set)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    names = sorted(args.sets) if args.sets else seen_sets()
    missing = [n for n in names if not (DATA / n).is_file()]
    if missing:
        print(f"error: no such set in benchmarks/data: {', '.join(missing)}", file=sys.stderr)
        return 2
    examples = build(names)
    args.out.write_text(json.dumps(examples.to_json(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(examples.examples)} labelled pastes from {len(names)} sets -> {args.out.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
