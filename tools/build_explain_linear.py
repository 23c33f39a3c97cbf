"""Build src/ortgpu/data/explain_linear.json: explain's trained fallback, fitted on every seen labelled set.

    python tools/build_explain_linear.py            # needs the dev-only extra: pip install -e '.[learn]'

The model is benchmarks/explain_examples_linear.py's (multinomial logistic regression over the shipped tokens and
features, one document per knowledge-base entry too), pruned to knowledge/linear.py's MAX_WEIGHTS largest weights;
its probability floor is the one that CV chose (knowledge/linear.py P_MIN). Only terms and weights are stored, never
texts; a term enters the model only when it is in at least two training documents.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "src" / "ortgpu" / "data" / "explain_linear.json"
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tools"))

from build_explain_examples import labelled, seen_sets  # noqa: E402
from explain_examples_linear import _fit, export  # noqa: E402

from ortgpu.knowledge import load_knowledge_base  # noqa: E402
from ortgpu.knowledge.examples import FEATURES  # noqa: E402
from ortgpu.knowledge.linear import P_MIN  # noqa: E402


def build(names: list[str]) -> dict:
    kb = load_knowledge_base()
    model = export(*_fit(labelled(names, kb), kb))
    return {**model.to_json(), "built_from": sorted(names), "features": list(FEATURES), "p_min": P_MIN}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    names = seen_sets()
    doc = build(names)
    args.out.write_text(json.dumps(doc, separators=(",", ":"), ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(doc['classes'])} entries, {len(doc['idf'])} terms from {len(names)} sets -> {args.out.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
