"""Why was `bench` slower than a bare loop on BERT-base b32 `run` and b1 IO binding? Interleaved rounds, with clocks.

    python3 benchmarks/h200_warmup_fidelity.py OUT_DIR [--ep cuda] [--rounds 4] [--duration 1.0] [--work DIR]

The fidelity run (benchmarks/results/2026-12-01-h200-bench-fidelity.md) found `ortgpu bench` slower than the bare
loop on BERT-base batch 32 `run` (+2.4 to +6.1%) and batch 1 IO binding (+15 to +40%). One candidate: the warm-up
stopped before the GPU reached its clocks (idle 345 MHz, max 1980 MHz). This script alternates, round by round
and in reversed order every other round (A B C D, D C B A, ...), four ways of timing the same cell in one process:

- ``harness-auto``: `run_bench` with the auto warm-up (latency settled and SM clock near max or stable: the fix);
- ``harness-20``: `run_bench` with ``--warmup 20`` (what the fidelity run used);
- ``bare-20``: the hand-written loop of benchmarks/bare_loops.py, 20 warm-up runs;
- ``bare-clocks``: the same loop, warmed until the SM clock is ready (bench's ClockWatch) before timing.

Every way builds its own fresh session (as `bench` does), and NVML's SM clock is read before the warm-up, after
it, and after the timed runs. If the clock explains the gap, ``harness-20`` and ``bare-20`` both carry it when
the clock was low, and ``harness-auto`` / ``bare-clocks`` agree. Per-round numbers go into OUT_DIR/warmup.json
and a table into OUT_DIR/warmup.md. ~1 minute on the H200 (BERT export ~4 s, 2 cells x 4 ways x 4 rounds).

Dry run without a GPU (the demo model instead of BERT, clocks "not read"): ``--ep cpu``.
On the lent H200, after the ORT pack is unpacked (see benchmarks/h200_bench_fidelity.py):

    python3 benchmarks/h200_warmup_fidelity.py $OUT/warmup
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bare_loops import bare_session, bare_times  # noqa: E402

WAYS = ("harness-auto", "harness-20", "bare-20", "bare-clocks")
CELLS = (("run", 32), ("iobinding", 1))  # the measured gaps: BERT-base b32 run, b1 IO binding
WARMUP = 20


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def harness(model: Path, ep: str, mode: str, batch: int, duration: float, warmup: int | None) -> dict:
    from ortgpu.bench.modes import BenchMode
    from ortgpu.bench.runner import BenchRequest, run_bench
    from ortgpu.ep import ExecutionProvider

    result = run_bench(
        BenchRequest(
            model,
            ep=ExecutionProvider.parse(ep),
            modes=(BenchMode(mode),),
            batches=(batch,),
            duration_s=duration,
            warmup=warmup,
        )
    )
    case = result.cases[0]
    if case.stats is None:
        return {"error": case.reason}
    clocks = case.warmup.clocks if case.warmup else None
    return {
        "p50_ms": case.stats.p50_ms,
        "warmup_runs": case.warmup.runs,
        "warmup_s": case.warmup.seconds,
        "settled": case.warmup.settled,
        "clock_before": clocks.before_warmup_mhz if clocks else None,
        "clock_after_warmup": clocks.after_warmup_mhz if clocks else None,
        "clock_after_measure": clocks.after_measurement_mhz if clocks else None,
        "clock_why": clocks.why if clocks else "cpu",
    }


def bare(model: Path, ep: str, mode: str, batch: int, duration: float, wait_clocks: bool) -> dict:
    from ortgpu.bench.clocks import ClockWatch
    from ortgpu.model.inputs import InputSpec, make_inputs
    from ortgpu.model.inspect import inspect_model

    feeds = make_inputs(inspect_model(model), InputSpec(batch=batch)).feeds
    session = bare_session(str(model), ep)
    watch = ClockWatch.for_device(0) if ep != "cpu" else None
    before = watch.read() if watch else None
    warm_runs, started = WARMUP, time.perf_counter()
    if wait_clocks and watch is not None:
        watch.start()
        names = [o.name for o in session.get_outputs()]
        while time.perf_counter() - started < 3.0:  # bench's max warm-up
            window_end = time.perf_counter() + 0.05
            while time.perf_counter() < window_end:
                session.run(names, feeds)
                warm_runs += 1
            if watch.sample():
                break
    waited_s = time.perf_counter() - started
    after_warm = watch.read() if watch else None
    samples, _ = bare_times(session, mode, feeds, WARMUP, duration_s=duration, device="cpu" if ep == "cpu" else "cuda")
    after = watch.read() if watch else None
    del session
    gc.collect()
    return {
        "p50_ms": float(np.median(samples)) / 1e6,
        "warmup_runs": warm_runs,
        "warmup_s": waited_s,  # the clock wait; bare_times then runs its 20 warm-ups
        "settled": True,
        "clock_before": before,
        "clock_after_warmup": after_warm,
        "clock_after_measure": after,
        "clock_why": watch.status()[1] if (watch and wait_clocks) else ("cpu" if watch is None else "not waited"),
    }


def one(way: str, model: Path, ep: str, mode: str, batch: int, duration: float) -> dict:
    if way == "harness-auto":
        return harness(model, ep, mode, batch, duration, None)
    if way == "harness-20":
        return harness(model, ep, mode, batch, duration, WARMUP)
    return bare(model, ep, mode, batch, duration, wait_clocks=way == "bare-clocks")


def markdown(report: dict) -> str:
    lines = [
        f"# bench warm-up vs bare loop, interleaved, on {report['gpu']}",
        "",
        f"Command: `{report['command']}`  ",
        f"ORT {report['ort_version']}, driver {report['driver']}, {report['date']}, total {report['elapsed_s']:.0f} s.",
        "",
        "## Median of round p50s (ms) per way; diff against bare-20",
        "",
        "| cell | " + " | ".join(WAYS) + " |",
        "|---|" + "---|" * len(WAYS),
    ]
    for cell, summary in report["summary"].items():
        base = summary.get("bare-20")
        cells = []
        for way in WAYS:
            value = summary.get(way)
            if value is None:
                cells.append("–")
            elif base and way != "bare-20":
                cells.append(f"{value:.3f} ({(value - base) / base:+.1%})")
            else:
                cells.append(f"{value:.3f}")
        lines.append(f"| {cell} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Every round (p50 ms; SM MHz before warm-up → after warm-up → after timed runs; warm-up runs)",
        "",
        "| cell | round | way | p50 ms | SM clock MHz | warm-up runs | clock status |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in report["rounds"]:
        r = row["result"]
        if "error" in r:
            lines.append(f"| {row['cell']} | {row['round']} | {row['way']} | failed: {r['error']} | | | |")
            continue
        clocks = f"{r['clock_before']} → {r['clock_after_warmup']} → {r['clock_after_measure']}"
        lines.append(
            f"| {row['cell']} | {row['round']} | {row['way']} | {r['p50_ms']:.3f} | {clocks} | "
            f"{r['warmup_runs']} | {r['clock_why']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--ep", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--duration", type=float, default=1.0, help="seconds of timed runs per way and round")
    parser.add_argument("--work", type=Path, help="where the exported model goes (default: a temp folder)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    import onnxruntime as ort

    from ortgpu.host.nvml import query_driver

    work = args.work or Path(tempfile.mkdtemp(prefix="ortgpu-warmup-"))
    work.mkdir(parents=True, exist_ok=True)
    if args.ep == "cuda":
        from h200_bench_fidelity import export_bert

        model = export_bert(work / "bert-base.onnx")
        name = "bert-base"
    else:
        from ortgpu.model.zoo import build_demo_model

        model = build_demo_model(work / "demo.onnx")
        name = "demo"
    driver = query_driver()
    rounds = []
    for mode, batch in CELLS:
        cell = f"{name} b{batch} {mode}"
        for index in range(args.rounds):
            order = WAYS if index % 2 == 0 else tuple(reversed(WAYS))
            for way in order:
                result = one(way, model, args.ep, mode, batch, args.duration)
                rounds.append({"cell": cell, "round": index + 1, "way": way, "result": result})
                log(f"{cell} round {index + 1} {way}: {json.dumps(result)}")
    summary: dict[str, dict[str, float]] = {}
    for row in rounds:
        if "p50_ms" in row["result"]:
            summary.setdefault(row["cell"], {}).setdefault(row["way"], []).append(row["result"]["p50_ms"])
    summary = {cell: {way: statistics.median(v) for way, v in ways.items()} for cell, ways in summary.items()}
    report = {
        "command": "python3 benchmarks/h200_warmup_fidelity.py " + " ".join(sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "gpu": driver.gpus[0].name if driver.gpus else "no GPU (dry run)",
        "driver": driver.version,
        "ort_version": ort.__version__,
        "python": platform.python_version(),
        "settings": {"rounds": args.rounds, "duration_s": args.duration, "warmup": WARMUP, "ep": args.ep},
        "rounds": rounds,
        "summary": summary,
        "elapsed_s": time.perf_counter() - started,
    }
    (args.out / "warmup.json").write_text(json.dumps(report, indent=1, default=str))
    text = markdown(report)
    (args.out / "warmup.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
