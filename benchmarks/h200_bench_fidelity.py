"""Is `ortgpu bench` telling the truth on a GPU? Fidelity against bare loops, harness overhead, anchor figures.

    python3 benchmarks/h200_bench_fidelity.py OUT_DIR [--rounds 3] [--duration 1.5] [--warmup 20] [--work DIR]

Fully offline, on a machine with onnxruntime-gpu (see ../shared/tools/ort-gpu-pack.md for the H200), torch,
torchvision and transformers:

1. exports ResNet-50 (torchvision, random weights, dynamic batch) and BERT-base (transformers BertModel from its
   default config, random weights, eager attention, sequence 128, dynamic batch) to ONNX;
2. for each model, batch (ResNet-50 1/32/64, BERT 1/32) and mode (run, iobinding, cudagraph), runs
   `ortgpu bench --ep cuda --mode all` and a bare hand-written loop (benchmarks/bare_loops.py) doing the same
   thing timed the same way, in alternating order for ``--rounds`` rounds, and reports each p50 and the
   difference (target: within 3%);
3. measures the per-run harness overhead on the one-node tiny model on the CUDA EP (target: under 10 µs);
4. compares `ortgpu bench` with the anchor figures measured by hand on the same H200 (target: within 5%);
5. runs `ortgpu bench --mode all --batch 1,32 --compare-cpu --report` per model for the side-by-side table.

Writes into OUT_DIR: fidelity.json, fidelity.md, <model>-bench.json and <model>-report.html. Budget: under
6 minutes on one H200 (a 1-round, 0.5 s smoke run took 98 s there).

On the lent H200, with the ORT pack in .carry/ort (one `run` call, carry [".carry"]):

    mkdir -p /tmp/site && tar -xJf .carry/ort/onnxruntime_gpu-1.31.1-sm90*.tar.xz -C /tmp/site \
      && export PYTHONPATH=/tmp/site:$PWD/src || exit 1
    NV=$(python3 -c 'import nvidia;print(list(nvidia.__path__)[0])')
    export LD_LIBRARY_PATH=$NV/cu13/lib:$NV/cudnn/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
    python3 benchmarks/h200_bench_fidelity.py $OUT/fid 2>&1 | tee $OUT/fid.log
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
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
from bare_loops import bare_session, bare_times, output_shapes  # noqa: E402
from harness_overhead import measure_overhead  # noqa: E402

MODES = ("run", "iobinding", "cudagraph")
BATCHES = {"resnet50": (1, 32, 64), "bert-base": (1, 32)}
SIDE_BY_SIDE_BATCHES = "1,32"
FIDELITY_TARGET = 0.03
ANCHOR_TARGET = 0.05
OVERHEAD_TARGET_US = 10.0
# Median ms measured with hand-written loops on the lent H200, 2026-11-30 (../shared/tools/ort-gpu-pack.md,
# "Anchor figures"): ORT CUDA EP defaults with numpy in/out = run; + IO binding = iobinding; + CUDA graph = cudagraph;
# ORT CPU EP, 16 cores = cpu/run. fp32 model, TF32 on (ORT's default).
ANCHORS_MS = {
    ("resnet50", "cuda", "run", 1): 1.28,
    ("resnet50", "cuda", "run", 64): 13.88,
    ("resnet50", "cuda", "iobinding", 1): 1.21,
    ("resnet50", "cuda", "iobinding", 64): 9.58,
    ("resnet50", "cuda", "cudagraph", 1): 0.91,
    ("resnet50", "cuda", "cudagraph", 64): 9.26,
    ("resnet50", "cpu", "run", 1): 9.14,
    ("bert-base", "cuda", "run", 1): 2.20,
    ("bert-base", "cuda", "run", 32): 7.24,
    ("bert-base", "cuda", "iobinding", 1): 2.16,
    ("bert-base", "cuda", "iobinding", 32): 6.39,
    ("bert-base", "cuda", "cudagraph", 1): 1.20,
    ("bert-base", "cuda", "cudagraph", 32): 7.04,
    ("bert-base", "cpu", "run", 1): 32.42,
}


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


# ------------------------------------------------------------------------------------------------- export


def export_resnet50(path: Path) -> Path:
    import torch
    import torchvision

    model = torchvision.models.resnet50(weights=None).eval()
    example = torch.randn(1, 3, 224, 224)
    _export(model, (example,), path, ["input"], ["logits"], {"input": {0: "batch"}, "logits": {0: "batch"}})
    return path


def export_bert(path: Path, sequence: int = 128) -> Path:
    import torch
    from transformers import BertConfig, BertModel

    try:
        model = BertModel._from_config(BertConfig(), attn_implementation="eager")
    except (TypeError, ValueError):  # older transformers: set it on the config
        config = BertConfig()
        config._attn_implementation = "eager"
        model = BertModel(config)
    model.eval()
    log(f"BERT attention implementation: {getattr(model.config, '_attn_implementation', 'unknown')}")

    class LastHiddenState(torch.nn.Module):
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids, return_dict=False
            )[0]

    ids = torch.randint(0, model.config.vocab_size, (1, sequence), dtype=torch.int64)
    mask = torch.ones(1, sequence, dtype=torch.int64)
    types = torch.zeros(1, sequence, dtype=torch.int64)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch"} for n in names} | {"last_hidden_state": {0: "batch"}}
    # dynamo=True first: the TorchScript export of the attention mask leaves ~80 shape nodes and a Memcpy on the
    # CPU, which ORT refuses to capture in a CUDA graph (seen on the H200, ORT 1.31.1, torch 2.11).
    _export(LastHiddenState(model), (ids, mask, types), path, names, ["last_hidden_state"], axes, dynamo_first=True)
    return path


def _export(model, args, path: Path, inputs, outputs, axes, dynamo_first: bool = False) -> None:
    import torch

    order = (True, False) if dynamo_first else (False, True)
    with torch.no_grad():
        for attempt, dynamo in enumerate(order):
            try:
                torch.onnx.export(
                    model,
                    args,
                    str(path),
                    input_names=inputs,
                    output_names=outputs,
                    dynamic_axes=axes,
                    opset_version=18 if dynamo else 17,
                    dynamo=dynamo,
                )
            except Exception as exc:
                if attempt:
                    raise
                log(f"export with dynamo={dynamo} failed ({type(exc).__name__}: {exc}); trying dynamo={not dynamo}")
                continue
            log(f"exported {path.name} with dynamo={dynamo}")
            return


# ------------------------------------------------------------------------------------------------- measuring


def ortgpu_bench(args: list[str]) -> dict:
    """Run `ortgpu bench ... --json` in-process and return its result."""
    from ortgpu.cli.main import main

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(["bench", *args, "--json"])
    text = buffer.getvalue()
    if code not in (0, 1):
        raise RuntimeError(f"ortgpu bench {' '.join(args)} exited {code}: {text[-2000:]}")
    return json.loads(text)["result"]


def ortgpu_round(model: Path, batches: tuple[int, ...], duration: float, warmup: int) -> dict:
    result = ortgpu_bench(
        [
            str(model),
            "--ep",
            "cuda",
            "--mode",
            "all",
            "--batch",
            ",".join(map(str, batches)),
            "--duration",
            str(duration),
            "--warmup",
            str(warmup),
        ]
    )
    out = {}
    for case in result["cases"]:
        if case["status"] != "ok":
            log(f"  ortgpu {case['mode']} b{case['batch']}: {case['status']}: {case['reason']}")
            continue
        out[(case["mode"], case["batch"])] = case["stats"]["p50_ms"]
    return out


def bare_round(model: Path, batches: tuple[int, ...], duration: float, warmup: int) -> dict:
    from ortgpu.model.inputs import InputSpec, make_inputs
    from ortgpu.model.inspect import inspect_model

    info = inspect_model(model)
    out = {}
    plain = bare_session(str(model), "cuda")
    for batch in batches:
        feeds = make_inputs(info, InputSpec(batch=batch)).feeds  # the data ortgpu generates: same seed, same shapes
        for mode in MODES:
            try:
                if mode == "cudagraph":
                    session = bare_session(str(model), "cuda", cuda_graph=True)
                    shapes = output_shapes(plain, feeds)
                else:
                    session, shapes = plain, None
                samples, _ = bare_times(
                    session, mode, feeds, warmup + 1, duration_s=duration, device="cuda", outputs=shapes
                )
            except Exception as exc:  # e.g. ORT refusing graph capture: that case is "not measured", the rest run
                log(f"  bare {mode} b{batch}: failed: {type(exc).__name__}: {str(exc)[:300]}")
                continue
            out[(mode, batch)] = float(np.median(samples)) / 1e6
            if session is not plain:
                del session
                gc.collect()
    del plain
    gc.collect()
    return out


def fidelity(model: Path, name: str, rounds: int, duration: float, warmup: int) -> list[dict]:
    batches = BATCHES[name]
    ortgpu_runs, bare_runs = [], []
    for index in range(rounds):
        order = ("ortgpu", "bare") if index % 2 == 0 else ("bare", "ortgpu")
        for side in order:
            start = time.perf_counter()
            if side == "ortgpu":
                ortgpu_runs.append(ortgpu_round(model, batches, duration, warmup))
            else:
                bare_runs.append(bare_round(model, batches, duration, warmup))
            log(f"  {name} round {index + 1} {side}: {time.perf_counter() - start:.1f} s")
    rows = []
    for batch in batches:
        for mode in MODES:
            ours = [r[(mode, batch)] for r in ortgpu_runs if (mode, batch) in r]
            bare = [r[(mode, batch)] for r in bare_runs if (mode, batch) in r]
            if not ours or not bare:
                rows.append({"model": name, "mode": mode, "batch": batch, "note": "not measured on both sides"})
                continue
            o, b = statistics.median(ours), statistics.median(bare)
            rows.append(
                {
                    "model": name,
                    "mode": mode,
                    "batch": batch,
                    "ortgpu_p50_ms": o,
                    "bare_p50_ms": b,
                    "diff": (o - b) / b,
                    "ortgpu_rounds": ours,
                    "bare_rounds": bare,
                    "within_target": abs(o - b) / b <= FIDELITY_TARGET,
                }
            )
    return rows


def anchors(fidelity_rows: list[dict], side_by_side: dict[str, dict]) -> list[dict]:
    ours: dict[tuple, float] = {}
    for row in fidelity_rows:
        if "ortgpu_p50_ms" in row:
            ours[(row["model"], "cuda", row["mode"], row["batch"])] = row["ortgpu_p50_ms"]
    for name, result in side_by_side.items():
        for case in result["cases"]:
            if case["ep"] == "cpu" and case["status"] == "ok":
                ours[(name, "cpu", case["mode"], case["batch"])] = case["stats"]["p50_ms"]
    rows = []
    for key, anchor in ANCHORS_MS.items():
        value = ours.get(key)
        row = {"model": key[0], "ep": key[1], "mode": key[2], "batch": key[3], "anchor_ms": anchor}
        if value is not None:
            row.update(
                ortgpu_ms=value,
                diff=(value - anchor) / anchor,
                within_target=abs(value - anchor) / anchor <= ANCHOR_TARGET,
            )
        rows.append(row)
    return rows


def markdown(report: dict) -> str:
    lines = [
        f"# ortgpu bench fidelity on {report['gpu']}",
        "",
        f"Command: `{report['command']}`  ",
        f"ORT {report['ort_version']}, driver {report['driver']}, torch {report['torch']}, "
        f"{report['date']}, total {report['elapsed_s']:.0f} s.",
        "",
        "## ortgpu bench vs a bare loop (p50, same session options, same warm-up, same timing)",
        "",
        "| model | batch | mode | ortgpu ms | bare ms | diff | within 3% |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in report["fidelity"]:
        if "diff" in r:
            lines.append(
                f"| {r['model']} | {r['batch']} | {r['mode']} | {r['ortgpu_p50_ms']:.3f} | "
                f"{r['bare_p50_ms']:.3f} | {r['diff']:+.1%} | {'yes' if r['within_target'] else 'NO'} |"
            )
        else:
            lines.append(f"| {r['model']} | {r['batch']} | {r['mode']} | – | – | – | {r['note']} |")
    lines += [
        "",
        "## Harness overhead per run, tiny model, CUDA EP (target < 10 µs)",
        "",
        "| mode | ortgpu p50 µs | bare p50 µs | Δ p50 µs | Δ wall/run µs |",
        "|---|---|---|---|---|",
    ]
    for mode, s in report["overhead"]["modes"].items():
        lines.append(
            f"| {mode} | {s['ortgpu_p50_us']:.2f} | {s['bare_p50_us']:.2f} | {s['p50_overhead_us']:+.2f} | "
            f"{s['wall_overhead_us']:+.2f} |"
        )
    lines += [
        "",
        "## Against the hand-measured anchors (../shared/tools/ort-gpu-pack.md, target within 5%)",
        "",
        "| model | EP | mode | batch | anchor ms | ortgpu ms | diff | within 5% |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in report["anchors"]:
        if "ortgpu_ms" in r:
            lines.append(
                f"| {r['model']} | {r['ep']} | {r['mode']} | {r['batch']} | {r['anchor_ms']:.2f} | "
                f"{r['ortgpu_ms']:.3f} | {r['diff']:+.1%} | {'yes' if r['within_target'] else 'NO'} |"
            )
        else:
            lines.append(
                f"| {r['model']} | {r['ep']} | {r['mode']} | {r['batch']} | {r['anchor_ms']:.2f} | – | – | "
                "not measured |"
            )
    lines += [
        "",
        "## Side by side (ortgpu bench --mode all --batch 1,32 --compare-cpu)",
        "",
        "| model | EP/mode | batch | p50 ms | p95 ms | samples/s | GPU speed-up vs CPU |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, result in report["side_by_side"].items():
        for case in result["cases"]:
            if case["status"] != "ok":
                continue
            s = case["stats"]
            speedup = f"{case['speedup_vs_cpu']:.1f}x" if case.get("speedup_vs_cpu") else "–"
            lines.append(
                f"| {name} | {case['ep']}/{case['mode']} | {case['batch']} | {s['p50_ms']:.3f} | "
                f"{s['p95_ms']:.3f} | {s['throughput']:,.0f} | {speedup} |"
            )
    lines += ["", "Hints ortgpu gave:", ""]
    for name, result in report["side_by_side"].items():
        lines += [f"- {name}: {h['kind']}: {h['message']}" for h in result["hints"]]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=1.5, help="seconds of timed runs per case and side")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--work", type=Path, help="where the exported models go (default: a temp folder)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    import onnxruntime as ort
    import torch

    from ortgpu.host.nvml import query_driver

    if "CUDAExecutionProvider" not in ort.get_available_providers():
        log(f"onnxruntime {ort.__version__} has no CUDA EP: {ort.get_available_providers()}")
        return 3
    driver = query_driver()
    gpu = driver.gpus[0].name if driver.gpus else "unknown GPU"
    log(
        f"onnxruntime {ort.__version__} from {Path(ort.__file__).parent}; {gpu}, driver {driver.version}; "
        f"torch {torch.__version__}; python {platform.python_version()}"
    )
    work = args.work or Path(tempfile.mkdtemp(prefix="ortgpu-fidelity-"))
    work.mkdir(parents=True, exist_ok=True)
    models = {}
    for name, exporter in (("resnet50", export_resnet50), ("bert-base", export_bert)):
        start = time.perf_counter()
        models[name] = exporter(work / f"{name}.onnx")
        from ortgpu.model.inspect import inspect_model

        info = inspect_model(models[name])
        shapes = "; ".join(f"{t.name} {t.dtype} {list(t.shape)}" for t in (*info.inputs, *info.outputs))
        log(f"exported {name} in {time.perf_counter() - start:.1f} s: {info.node_count} nodes; {shapes}")

    log("harness overhead on the tiny model (CUDA EP)")
    overhead = measure_overhead("cuda", rounds=3, iterations=5000, warmup=100)
    for mode, s in overhead["modes"].items():
        log(
            f"  {mode}: ortgpu p50 {s['ortgpu_p50_us']:.2f} µs, bare {s['bare_p50_us']:.2f} µs, "
            f"Δ {s['p50_overhead_us']:+.2f} µs"
        )

    rows = []
    for name, path in models.items():
        log(f"fidelity: {name}")
        rows += fidelity(path, name, args.rounds, args.duration, args.warmup)
    for r in rows:
        if "diff" in r:
            log(
                f"  {r['model']} b{r['batch']} {r['mode']}: ortgpu {r['ortgpu_p50_ms']:.3f} ms, bare "
                f"{r['bare_p50_ms']:.3f} ms, {r['diff']:+.1%}"
            )

    side_by_side = {}
    for name, path in models.items():
        log(f"side by side: {name}")
        side_by_side[name] = ortgpu_bench(
            [
                str(path),
                "--ep",
                "cuda",
                "--mode",
                "all",
                "--batch",
                SIDE_BY_SIDE_BATCHES,
                "--compare-cpu",
                "--duration",
                "1",
                "--save",
                str(args.out / f"{name}-bench.json"),
                "--report",
                str(args.out / f"{name}-report.html"),
            ]
        )

    report = {
        "command": "python3 benchmarks/h200_bench_fidelity.py " + " ".join(sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "gpu": gpu,
        "driver": driver.version,
        "cuda_driver": driver.cuda_driver_version,
        "ort_version": ort.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "settings": {"rounds": args.rounds, "duration_s": args.duration, "warmup": args.warmup},
        "overhead": overhead,
        "fidelity": rows,
        "anchors": anchors(rows, side_by_side),
        "side_by_side": side_by_side,
    }
    report["elapsed_s"] = time.perf_counter() - started
    (args.out / "fidelity.json").write_text(json.dumps(report, indent=1, default=str))
    text = markdown(report)
    (args.out / "fidelity.md").write_text(text)
    print(text)
    log(f"done in {report['elapsed_s']:.0f} s; files in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
