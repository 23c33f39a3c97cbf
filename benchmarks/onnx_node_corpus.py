"""Run `ortgpu check` on every ONNX backend node test, with the test's expected outputs as the reference.

Each case passes, mismatches (with the numbers), or is refused with a one-line reason (an op, type or
input kind this onnxruntime or ortgpu does not take) - never a traceback. A Python exception that is not an
ortgpu error is a bug and is counted apart as "internal_error".

    python benchmarks/onnx_node_corpus.py [--jobs 2] [--sample N] [--out benchmarks/results] [--ep cpu]

Writes <out>/<date>-<ep>-onnx-node-corpus.json and .md (totals, refusal reasons, every mismatch).
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import datetime
import json
import platform
import re
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["CaseResult", "load_cases", "main", "run_case", "summarise"]

_CASES: list[Any] = []


@dataclass
class CaseResult:
    name: str
    status: str  # pass | mismatch | refused | internal_error
    reason: str | None = None
    outputs: list[dict[str, Any]] = field(default_factory=list)  # per compared output: the numbers
    passes_at_onnx_tolerance: bool | None = None  # for mismatches: would the test's own rtol/atol accept it?
    seconds: float = 0.0


def load_cases() -> list[Any]:
    """The onnx node test cases, generated in memory by the installed onnx (numpy warnings silenced)."""
    from onnx.backend.test.loader import load_model_tests

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(load_model_tests(kind="node"))


def _one_line(text: str, limit: int = 300) -> str:
    # the case's temporary folder is this machine's business, not the result's
    line = re.sub(r"\S*ortgpu-corpus-[^/\s]*/", "", " ".join(str(text).split()))
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _write_npz(path: Path, arrays: dict[str, Any]) -> None:
    import numpy as np

    # Text as fixed-width unicode: object arrays would need pickle to load back (and ortgpu refuses pickles).
    np.savez(path, **{k: v.astype(str) if v.dtype.kind == "O" else v for k, v in arrays.items()})


def _as_array(value: Any) -> Any:
    """Test data comes as ndarrays, numpy scalars (0-d inputs) or TensorProto (types numpy lacks): to ndarray."""
    import numpy as np
    from onnx import TensorProto, numpy_helper

    if isinstance(value, TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, np.generic):
        return np.asarray(value)
    return value


def run_case(case: Any, ep_name: str = "cpu") -> CaseResult:
    """`run_check` on one node test: its inputs from an .npz, its expected outputs as the reference file."""
    import numpy as np

    from ortgpu.check import CheckRequest, ParityStatus, compare_output, run_check
    from ortgpu.check.parity import Precision
    from ortgpu.ep import ExecutionProvider
    from ortgpu.errors import OrtgpuError
    from ortgpu.model.inputs import InputSpec

    started = time.perf_counter()
    result = CaseResult(name=case.name, status="refused")
    try:
        if not case.data_sets:
            result.reason = "the test case has no data set"
            return result
        inputs, expected = ([_as_array(v) for v in part] for part in case.data_sets[0])
        graph = case.model.graph
        initializers = {t.name for t in graph.initializer}
        input_names = [i.name for i in graph.input if i.name not in initializers]
        output_names = [o.name for o in graph.output]
        for name, value in zip(input_names, inputs, strict=False):
            if not isinstance(value, np.ndarray):
                kind = "absent optional" if value is None else type(value).__name__
                result.reason = f"input {name!r} is a {kind}, not a tensor: ortgpu check feeds tensors only"
                return result
            if value.dtype.isbuiltin != 1:
                result.reason = (
                    f"input {name!r} has type {value.dtype} (numpy knows it only through ml_dtypes), which ORT's "
                    "Python API cannot take"
                )
                return result
        reference = {n: v for n, v in zip(output_names, expected, strict=False) if isinstance(v, np.ndarray)}
        custom = [f"{n} ({v.dtype})" for n, v in reference.items() if v.dtype.isbuiltin != 1]
        if custom:
            result.reason = (
                f"output {', '.join(custom)}: a type numpy knows only through ml_dtypes, which ORT's Python API "
                "cannot return"
            )
            return result
        if not reference:
            result.reason = "no tensor output to compare (sequence / optional outputs only)"
            return result
        with tempfile.TemporaryDirectory(prefix="ortgpu-corpus-") as folder:
            root = Path(folder)
            (root / "model.onnx").write_bytes(case.model.SerializeToString())
            _write_npz(root / "inputs.npz", dict(zip(input_names, inputs, strict=False)))
            _write_npz(root / "expected.npz", reference)
            request = CheckRequest(
                model=root / "model.onnx",
                ep=ExecutionProvider.parse(ep_name),
                inputs=InputSpec(npz=root / "inputs.npz"),
                reference=root / "expected.npz",
                save_outputs=root / "actual.npz",
                warm_runs=0,
            )
            check = run_check(request)
            for out in check.parity.outputs:
                if out.status is not ParityStatus.SKIPPED:
                    result.outputs.append(
                        {
                            "name": out.name,
                            "status": out.status.value,
                            "dtype": out.dtype,
                            "max_abs": out.max_abs,
                            "max_rel": out.max_rel,
                            "mismatches": out.mismatches,
                            "elements": out.elements,
                            "atol": out.atol,
                            "rtol": out.rtol,
                            "reason": out.reason,
                        }
                    )
            if check.parity.status is ParityStatus.SKIPPED:
                result.reason = _one_line(check.parity.reason or "nothing compared")
                return result
            result.status = "pass" if check.passed else "mismatch"
            if not check.passed:
                result.reason = _one_line(check.failures[0])
                with np.load(root / "actual.npz", allow_pickle=False) as actual:
                    result.passes_at_onnx_tolerance = all(
                        compare_output(
                            n, actual[n], reference[n], Precision.FP32, atol=case.atol, rtol=case.rtol
                        ).status
                        is ParityStatus.PASS
                        for n in reference
                        if n in actual.files
                    )
    except OrtgpuError as exc:
        result.status, result.reason = "refused", _one_line(exc.one_line())
    except Exception as exc:  # a bug in ortgpu: counted apart so it gets fixed, never printed as a traceback
        result.status, result.reason = "internal_error", _one_line(f"{type(exc).__name__}: {exc}")
    finally:
        result.seconds = time.perf_counter() - started
    return result


def _init_worker() -> None:
    _CASES.extend(load_cases())


def _run_index(index: int, ep_name: str) -> dict[str, Any]:
    return asdict(run_case(_CASES[index], ep_name))


def _reason_key(reason: str | None) -> str:
    """Group refusal reasons: quoted names, opset numbers, temporary paths and hints left out."""
    text = (reason or "").split(" (hint: ")[0]
    text = re.sub(r"'[^']*'", "'...'", text)
    text = re.sub(r"\((\d+)\)", "(N)", text)
    text = re.sub(r"\S*ortgpu-corpus-\S*", "<model>", text)
    return _one_line(text, 200)


def summarise(results: list[dict[str, Any]]) -> dict[str, Any]:
    counts = collections.Counter(r["status"] for r in results)
    refusals = collections.Counter(_reason_key(r["reason"]) for r in results if r["status"] == "refused")
    return {
        "cases": len(results),
        "pass": counts.get("pass", 0),
        "mismatch": counts.get("mismatch", 0),
        "refused": counts.get("refused", 0),
        "internal_error": counts.get("internal_error", 0),
        "mismatch_within_onnx_tolerance": sum(
            1 for r in results if r["status"] == "mismatch" and r["passes_at_onnx_tolerance"]
        ),
        "refusal_reasons": dict(refusals.most_common()),
    }


def _json(doc: dict[str, Any]) -> str:
    """One case per line; passing cases keep only their name and time (the numbers are in mismatches)."""
    cases = [
        {"name": r["name"], "status": r["status"], "seconds": round(r["seconds"], 4)} if r["status"] == "pass" else r
        for r in doc["results"]
    ]
    head = json.dumps({k: v for k, v in doc.items() if k != "results"}, indent=1)[:-2]
    body = ",\n".join("  " + json.dumps(case) for case in cases)
    return f'{head},\n "results": [\n{body}\n ]\n}}\n'


def _markdown(doc: dict[str, Any], command: str) -> str:
    t = doc["totals"]
    env = doc["environment"]
    lines = [
        f"# ONNX backend node-test corpus through `ortgpu check` ({doc['ep']} EP)",
        "",
        f"Date {doc['date']}; onnxruntime {env['onnxruntime']}, onnx {env['onnx']}, numpy {env['numpy']}, "
        f"Python {env['python']}, {env['platform']}, {env['cpus']} CPU cores; {doc['wall_s']:.0f} s wall.",
        "",
        f"Command: `{command}`",
        "",
        "Each case is the test's model, its inputs as an .npz (`--inputs`) and its expected outputs as the",
        "reference (`--reference`), checked with ortgpu's default tolerances (float32: rtol 1e-3, atol 1e-5 x",
        "max(1, max|ref|); float64: rtol 1e-6; integers, bools and strings exact).",
        "",
        "| cases | pass | mismatch | refused (one-line reason) | internal error |",
        "|---:|---:|---:|---:|---:|",
        f"| {t['cases']} | {t['pass']} | {t['mismatch']} | {t['refused']} | {t['internal_error']} |",
        "",
        f"{t['mismatch_within_onnx_tolerance']} of the {t['mismatch']} mismatches pass at the test's own declared",
        "tolerance (ONNX's default rtol 1e-3, atol 1e-7 unless the test sets others).",
        "",
        "## Refusal reasons",
        "",
        "| cases | reason (quoted names, opsets and hints left out) |",
        "|---:|---|",
    ]
    for reason, count in t["refusal_reasons"].items():
        lines.append(f"| {count} | {reason.replace('|', '/')} |")
    lines += ["", "## Mismatches", "", "| case | first failure |", "|---|---|"]
    for case in doc["results"]:
        if case["status"] == "mismatch":
            lines.append(f"| {case['name']} | {(case['reason'] or '').replace('|', '/')} |")
    errors = [c for c in doc["results"] if c["status"] == "internal_error"]
    if errors:
        lines += ["", "## Internal errors (ortgpu bugs)", "", "| case | error |", "|---|---|"]
        lines += [f"| {c['name']} | {(c['reason'] or '').replace('|', '/')} |" for c in errors]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--sample", type=int, default=0, help="only every k-th case, about N cases (0: all)")
    parser.add_argument("--ep", default="cpu", help="execution provider (default cpu)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results", help="results folder")
    parser.add_argument("--date", default=datetime.date.today().isoformat(), help="date in the file names")
    args = parser.parse_args(argv)

    import numpy as np
    import onnx
    import onnxruntime as ort

    from ortgpu.atomic import atomic_write_text

    cases = load_cases()
    indices = list(range(len(cases)))
    if args.sample:
        step = max(1, len(cases) // args.sample)
        indices = indices[::step][: args.sample]
    started = time.perf_counter()
    if args.jobs > 1:
        with concurrent.futures.ProcessPoolExecutor(args.jobs, initializer=_init_worker) as pool:
            results = list(pool.map(_run_index, indices, [args.ep] * len(indices), chunksize=8))
    else:
        results = [asdict(run_case(cases[i], args.ep)) for i in indices]
    wall = time.perf_counter() - started
    doc = {
        "date": args.date,
        "ep": args.ep,
        "environment": {
            "onnxruntime": ort.__version__,
            "onnx": onnx.__version__,
            "numpy": np.__version__,
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": __import__("os").cpu_count(),
        },
        "wall_s": wall,
        "totals": summarise(results),
        "results": results,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"{args.date}-{args.ep}-onnx-node-corpus"
    command = "python benchmarks/onnx_node_corpus.py " + " ".join(argv if argv is not None else sys.argv[1:])
    atomic_write_text(stem.with_suffix(".json"), _json(doc))
    atomic_write_text(stem.with_suffix(".md"), _markdown(doc, command.strip()))
    t = doc["totals"]
    print(
        f"{t['cases']} cases: {t['pass']} pass, {t['mismatch']} mismatch, {t['refused']} refused, "
        f"{t['internal_error']} internal errors ({wall:.0f} s) -> {stem}.json / .md"
    )
    return 1 if t["internal_error"] else 0


if __name__ == "__main__":
    sys.exit(main())
