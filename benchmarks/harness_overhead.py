"""What `ortgpu bench` adds per run, measured on a one-node model against a bare hand-written loop.

    python benchmarks/harness_overhead.py [--ep cpu|cuda] [--rounds 5] [--iterations 20000] [--json OUT.json]

For each mode it alternates `run_bench` and `bare_loops.bare_times` on the tiny model (one Add), same warm-up,
same iteration count, intra-op threads 1 on both sides (the pool on every core stalls a 2-core machine), and
reports per round medians: p50 and mean latency of both, their difference, and the wall time per iteration of the
timed loops (what throughput sees). It also times the timing machinery alone (a no-op step).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bare_loops import bare_session, bare_times, output_shapes

from ortgpu.bench.modes import BenchMode
from ortgpu.bench.runner import BenchRequest, run_bench
from ortgpu.bench.wheel import _timed_chunk
from ortgpu.ep import ExecutionProvider
from ortgpu.model.inputs import InputSpec, make_inputs
from ortgpu.model.inspect import inspect_model
from ortgpu.model.zoo import build_tiny_model

__all__ = ["measure_overhead"]


def _null_step_cost(iterations: int) -> dict[str, float]:
    """The timing machinery alone: ortgpu's timed chunk around a no-op call vs an inline pair of clock reads."""
    out = [0] * iterations
    _timed_chunk(lambda: None, out, 0, iterations)
    harness = float(np.median(out))
    clock = time.perf_counter_ns
    bare = [0] * iterations
    for i in range(iterations):
        t0 = clock()
        bare[i] = clock() - t0
    return {"ortgpu_noop_sample_ns": harness, "bare_clock_pair_ns": float(np.median(bare))}


def measure_overhead(ep: str = "cpu", rounds: int = 5, iterations: int = 20000, warmup: int = 200) -> dict:
    """Measure and return the numbers (see the module docstring)."""
    modes = ["run", "iobinding"] + (["cudagraph"] if ep != "cpu" else [])
    device = "cpu" if ep == "cpu" else "cuda"
    results: dict = {"ep": ep, "rounds": rounds, "iterations": iterations, "warmup": warmup, "modes": {}}
    with tempfile.TemporaryDirectory(prefix="ortgpu-overhead-") as tmp:
        model = build_tiny_model(Path(tmp) / "tiny.onnx")
        config = Path(tmp) / "ortgpu.toml"
        config.write_text("[session]\nintra_op_num_threads = 1\n")
        feeds = make_inputs(inspect_model(model), InputSpec(batch=1)).feeds
        for mode in modes:
            rows = []
            for round_index in range(rounds):
                # alternate who goes first, so drift during the run favours neither side
                order = ("ortgpu", "bare") if round_index % 2 == 0 else ("bare", "ortgpu")
                for side in order:
                    if side == "ortgpu":
                        request = BenchRequest(
                            model=model,
                            ep=ExecutionProvider(ep),
                            modes=(BenchMode(mode),),
                            iterations=iterations,
                            warmup=warmup,
                            config=config,
                        )
                        stats = run_bench(request).cases[0].stats
                        continue
                    session = bare_session(str(model), ep, cuda_graph=mode == "cudagraph", intra_op_threads=1)
                    shapes = output_shapes(bare_session(str(model), ep), feeds) if mode == "cudagraph" else None
                    # ortgpu does one first run plus `warmup` runs before timing; the bare loop the same count
                    samples, wall_ns = bare_times(
                        session, mode, feeds, warmup + 1, iterations=iterations, device=device, outputs=shapes
                    )
                rows.append(
                    {
                        "ortgpu_p50_us": stats.p50_ms * 1e3,
                        "bare_p50_us": float(np.median(samples)) / 1e3,
                        "ortgpu_mean_us": stats.mean_ms * 1e3,
                        "bare_mean_us": float(samples.mean()) / 1e3,
                        "ortgpu_wall_per_run_us": stats.wall_s / stats.count * 1e6,
                        "bare_wall_per_run_us": wall_ns / len(samples) / 1e3,
                    }
                )
            summary = {key: statistics.median(r[key] for r in rows) for key in rows[0]}
            summary["p50_overhead_us"] = summary["ortgpu_p50_us"] - summary["bare_p50_us"]
            summary["wall_overhead_us"] = summary["ortgpu_wall_per_run_us"] - summary["bare_wall_per_run_us"]
            summary["rounds"] = rows
            results["modes"][mode] = summary
    results["null_step"] = _null_step_cost(200_000)
    return results


def markdown(results: dict) -> str:
    """The results as a markdown table."""
    lines = [
        "| mode | ortgpu p50 µs | bare p50 µs | Δ p50 µs | ortgpu wall/run µs | bare wall/run µs | Δ wall µs |",
        "|---|---|---|---|---|---|---|",
    ]
    for mode, s in results["modes"].items():
        lines.append(
            f"| {mode} | {s['ortgpu_p50_us']:.2f} | {s['bare_p50_us']:.2f} | {s['p50_overhead_us']:+.2f} | "
            f"{s['ortgpu_wall_per_run_us']:.2f} | {s['bare_wall_per_run_us']:.2f} | {s['wall_overhead_us']:+.2f} |"
        )
    null = results["null_step"]
    lines.append("")
    lines.append(
        f"Timing machinery alone: ortgpu's timed no-op sample {null['ortgpu_noop_sample_ns']:.0f} ns, "
        f"a bare pair of clock reads {null['bare_clock_pair_ns']:.0f} ns (medians)."
    )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ep", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=20000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results = measure_overhead(args.ep, args.rounds, args.iterations, args.warmup)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
