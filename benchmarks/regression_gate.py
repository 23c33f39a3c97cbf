"""Does `bench --baseline` cry wolf? Runs of one config against its own baseline under load, and a real slowdown.

A compute-bound model (a chain of MatMul + Relu whose first weight is the product of two constant factors, which
graph optimisation folds away) is benchmarked on the CPU EP, one intra-op thread, while a background process burns
one core. A baseline is saved with the default graph optimisations; then

- ``--runs`` runs of the same config are compared with it: every "regressed" is a false alarm;
- ``--slow-runs`` runs with graph optimisations disabled are compared with it: the weight product then runs on
  every inference, about 15% more compute (the exact slowdown is measured and recorded): every "same" is a miss.

(Halving the intra-op threads was tried first: with a core burnt and other work on this 2-core machine, two threads
ran no faster than one, so it is no slowdown here; on a many-core host it would be.)

The gate on the CPU EP decides on the CPU time each run cost (kept per ~0.1 s chunk), tested with a one-sided
Mann-Whitney U test, then re-measures a case that looks regressed; the wall-clock shift is reported beside it.
For each run the script also records what the old gate (p50 or p95 over the threshold and over the baseline's MAD,
no test, no re-measure) would have said about the first measurement.

    python benchmarks/regression_gate.py --out benchmarks/results --stamp 2026-12-01
    python benchmarks/regression_gate.py --runs 3 --slow-runs 2 --out /tmp/gate   # a quick look

Writes <stamp>-cpu-regression-gate.json and .md (the exact command, the machine, every run).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ortgpu import __version__
from ortgpu.bench.result import Verdict
from ortgpu.bench.runner import BenchRequest, run_bench
from ortgpu.config import ExecutionProvider

THRESHOLD = 0.10
BURNER = "import time\nwhile True:\n    sum(i * i for i in range(10000))\n"


def build_model(path: Path, size: int = 512, layers: int = 8, rank: int = 80) -> Path:
    """x [batch, size] through ``layers`` MatMul + Relu. The first weight is the product of two constant factors
    (``size`` x ``rank`` and ``rank`` x ``size``): graph optimisation folds it into one matrix at session creation;
    without optimisation that product (2 x size^2 x rank flops, compute-bound like the rest) runs on every inference."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes, inits, current = [], [], "x"
    for i in range(layers):
        if i == 0:
            left = (rng.standard_normal((size, rank)) / size**0.5).astype(np.float32)
            right = (rng.standard_normal((rank, size)) / rank**0.5).astype(np.float32)
            inits += [numpy_helper.from_array(left, "w0_left"), numpy_helper.from_array(right, "w0_right")]
            nodes.append(helper.make_node("MatMul", ["w0_left", "w0_right"], ["w0"], name="weight_product"))
        else:
            weight = (rng.standard_normal((size, size)) / size**0.5).astype(np.float32)
            inits.append(numpy_helper.from_array(weight, f"w{i}"))
        nodes.append(helper.make_node("MatMul", [current, f"w{i}"], [f"m{i}"], name=f"matmul{i}"))
        nodes.append(helper.make_node("Relu", [f"m{i}"], [f"r{i}"], name=f"relu{i}"))
        current = f"r{i}"
    graph = helper.make_graph(
        nodes,
        "matmul_chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", size])],
        [helper.make_tensor_value_info(current, TensorProto.FLOAT, ["batch", size])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def write_config(folder: Path, name: str, optimisation: str) -> Path:
    path = folder / f"{name}.toml"
    path.write_text(
        f'[session]\nintra_op_num_threads = 1\ngraph_optimization_level = "{optimisation}"\n', encoding="utf-8"
    )
    return path


def bench(model: Path, config: Path, batch: int, seconds: float, **extra: object):
    request = BenchRequest(
        model=model,
        ep=ExecutionProvider.CPU,
        batches=(batch,),
        duration_s=seconds,
        config=config,
        max_regression=THRESHOLD,
        **extra,
    )
    return run_bench(request)


def old_gate(case) -> bool:
    """The gate before statistics: p50 or p95 over the threshold and over the baseline's MAD."""
    p50 = case.p50_delta > THRESHOLD and (case.p50_ms - case.baseline_p50_ms) > case.noise_ms
    p95 = case.p95_delta > THRESHOLD and (case.p95_ms - case.baseline_p95_ms) > case.noise_ms
    return p50 or p95


def one_comparison(model: Path, config: Path, baseline: Path, batch: int, seconds: float, kind: str) -> dict:
    started = time.perf_counter()
    result = bench(model, config, batch, seconds, baseline=baseline)
    case = result.comparison.cases[0]
    return {
        "kind": kind,
        "verdict": case.verdict.value,
        "p50_delta": round(case.p50_delta, 4),
        "cpu_share": None if case.cpu_share is None else [round(v, 3) for v in case.cpu_share],
        "p95_delta": round(case.p95_delta, 4),
        "shift": None if case.shift is None else round(case.shift, 4),
        "cpu_shift": None if case.cpu_shift is None else round(case.cpu_shift, 4),
        "shift_ci": None if case.shift_ci is None else [round(v, 4) for v in case.shift_ci],
        "p_value": case.p_value,
        "confidence": case.confidence,
        "remeasured": [round(v, 4) for v in case.remeasured],
        "flipped": bool(case.remeasured) and case.verdict is not Verdict.REGRESSED,
        "old_gate_regressed": old_gate(case),
        "reasons": list(case.reasons),
        "load_1min": os.getloadavg()[0],
        "seconds": round(time.perf_counter() - started, 2),
    }


def _markdown(doc: dict) -> str:
    same = [r for r in doc["runs"] if r["kind"] == "same config"]
    slow = [r for r in doc["runs"] if r["kind"] == "optimisations off"]
    s = doc["summary"]
    lines = [
        "# `bench --baseline` against its own baseline under load, and a real slowdown",
        "",
        f"Command: `{doc['command']}`  ",
        f"Machine: {doc['machine']}, {doc['cpu_count']} cores, Python {doc['python']}, onnxruntime "
        f"{doc['ort_version']}, ortgpu {doc['ortgpu_version']}; a background process burns one core throughout"
        + ("" if doc["burner"] else " (burner off for this record)")
        + ".",
        f"Model: {doc['model']}; batch {doc['batch']}, {doc['seconds']:g} s of timed runs per measurement "
        f"({doc['baseline_seconds']:g} s for the baseline), CPU EP, "
        f"max regression {THRESHOLD:.0%}, one intra-op thread. Baseline: graph optimisations on (default), "
        "saved under the same load "
        f"(p50 {doc['baseline_p50_ms']:.3f} ms).",
        "",
        "| runs | what | regressed (gate) | first look regressed, flipped on re-measure | old gate (threshold + MAD) |",
        "|---|---|---|---|---|",
        f"| {len(same)} | same config (false alarms) | {s['false_alarms']} | {s['flipped_same']} | "
        f"{s['old_gate_false_alarms']} |",
        f"| {len(slow)} | graph optimisations off (misses = {s['misses']}) | {s['caught']} | {s['flipped_slow']} | "
        f"{s['old_gate_caught']} |",
        "",
        f"Slowdown with optimisations off: CPU time per run {s['slow_cpu_shift_median']:+.1%} (median), wall-clock "
        f"median shift {s['slow_shift_median']:+.1%} "
        f"(range {s['slow_shift_min']:+.1%} to {s['slow_shift_max']:+.1%}); same config: median shift "
        f"{s['same_shift_median']:+.1%} (range {s['same_shift_min']:+.1%} to {s['same_shift_max']:+.1%}), CPU time "
        f"per run {s['same_cpu_shift_min']:+.1%} to {s['same_cpu_shift_max']:+.1%}.",
        f"Total time: {doc['total_s']:.0f} s.",
        "",
        "| # | what | p50 Δ | wall median shift (95% interval) | CPU/run shift | p | P(>10%) | re-measure | verdict "
        "| old gate |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(doc["runs"], 1):
        ci = "-" if r["shift_ci"] is None else f"{r['shift']:+.1%} ({r['shift_ci'][0]:+.1%}..{r['shift_ci'][1]:+.1%})"
        p = "-" if r["p_value"] is None else f"{r['p_value']:.1g}"
        conf = "-" if r["confidence"] is None else f"{r['confidence']:.0%}"
        again = ", ".join(f"{v:+.1%}" for v in r["remeasured"]) or "-"
        old = "regressed" if r["old_gate_regressed"] else "same"
        cpu = "-" if r["cpu_shift"] is None else f"{r['cpu_shift']:+.1%}"
        lines.append(
            f"| {i} | {r['kind']} | {r['p50_delta']:+.1%} | {ci} | {cpu} | {p} | {conf} | {again} | {r['verdict']} "
            f"| {old} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="comparisons of the baseline config (false alarms)")
    parser.add_argument("--slow-runs", type=int, default=10, help="comparisons with optimisations off (misses)")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=2.0, help="timed seconds per measurement")
    parser.add_argument("--baseline-seconds", type=float, default=6.0, help="timed seconds of the baseline")
    parser.add_argument("--no-burner", action="store_true", help="do not start the background CPU burner")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--stamp", default=time.strftime("%Y-%m-%d"))
    args = parser.parse_args(argv)

    started = time.perf_counter()
    burner = None if args.no_burner else subprocess.Popen([sys.executable, "-c", BURNER])
    try:
        with tempfile.TemporaryDirectory(prefix="ortgpu-gate-") as tmp:
            folder = Path(tmp)
            model = build_model(folder / "matmul_chain.onnx")
            same_config = write_config(folder, "baseline", "all")
            slow_config = write_config(folder, "unoptimised", "disable")
            baseline_path = folder / "baseline.json"
            baseline = bench(model, same_config, args.batch, args.baseline_seconds, save=baseline_path)
            runs = []
            # interleaved, so both kinds see the same spread of machine states
            order = ["same config"] * args.runs + ["optimisations off"] * args.slow_runs
            rng = np.random.default_rng(0)
            rng.shuffle(order)
            for index, kind in enumerate(order, 1):
                config = same_config if kind == "same config" else slow_config
                row = one_comparison(model, config, baseline_path, args.batch, args.seconds, kind)
                runs.append(row)
                print(f"[{index}/{len(order)}] {kind}: {row['verdict']} (p50 {row['p50_delta']:+.1%}, "
                      f"shift {row['shift']}, re-measured {row['remeasured']}, old gate "
                      f"{'regressed' if row['old_gate_regressed'] else 'same'})", flush=True)  # fmt: skip
    finally:
        if burner is not None:
            burner.terminate()
            burner.wait(timeout=10)

    same = [r for r in runs if r["kind"] == "same config"]
    slow = [r for r in runs if r["kind"] == "optimisations off"]

    def shifts(rows: list[dict], key: str = "shift") -> list[float]:
        return [r[key] if r[key] is not None else r["p50_delta"] for r in rows] or [0.0]

    import onnxruntime as ort

    doc = {
        "schema": "ortgpu.bench-regression-gate/v1",
        "command": "python benchmarks/regression_gate.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "ort_version": ort.__version__,
        "ortgpu_version": __version__,
        "burner": not args.no_burner,
        "model": "8 x (MatMul 512x512 + Relu), the first weight a foldable product of 512x80 and 80x512 factors",
        "batch": args.batch,
        "seconds": args.seconds,
        "baseline_seconds": args.baseline_seconds,
        "threshold": THRESHOLD,
        "baseline_p50_ms": baseline.cases[0].stats.p50_ms,
        "summary": {
            "false_alarms": sum(r["verdict"] == "regressed" for r in same),
            "flipped_same": sum(r["flipped"] for r in same),
            "old_gate_false_alarms": sum(r["old_gate_regressed"] for r in same),
            "caught": sum(r["verdict"] == "regressed" for r in slow),
            "misses": sum(r["verdict"] != "regressed" for r in slow),
            "flipped_slow": sum(r["flipped"] for r in slow),
            "old_gate_caught": sum(r["old_gate_regressed"] for r in slow),
            "same_shift_median": float(np.median(shifts(same))),
            "same_shift_min": min(shifts(same)),
            "same_shift_max": max(shifts(same)),
            "slow_shift_median": float(np.median(shifts(slow))),
            "slow_shift_min": min(shifts(slow)),
            "slow_shift_max": max(shifts(slow)),
            "slow_cpu_shift_median": float(np.median(shifts(slow, "cpu_shift"))),
            "same_cpu_shift_min": min(shifts(same, "cpu_shift")),
            "same_cpu_shift_max": max(shifts(same, "cpu_shift")),
        },
        "total_s": time.perf_counter() - started,
        "runs": runs,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    base = args.out / f"{args.stamp}-cpu-regression-gate"
    base.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    base.with_suffix(".md").write_text(_markdown(doc), encoding="utf-8")
    print(json.dumps(doc["summary"], indent=1))
    print(f"wrote {base}.json and .md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
