"""`ortgpu tune` on the H200: ResNet-50 b1/b64 and BERT-base b1/b32, then defaults vs tuned vs bare loop, interleaved.

    python3 benchmarks/h200_tune.py OUT_DIR [--ep cuda] [--budget 50] [--rounds 3] [--duration 1.0] [--work DIR]

1. exports ResNet-50 (torchvision, random weights) and BERT-base (transformers BertModel(BertConfig()), random
   weights, eager attention so ORT's transformer optimizer can fuse it, TorchScript exporter, sequence 128), both
   with a dynamic ``batch`` axis;
2. runs `run_tune` (the library behind `ortgpu tune`) on each of the four cells with ``--budget`` seconds each,
   objective p50, writing OUT_DIR/<cell>/ortgpu.toml (+ the converted model);
3. measures each cell in one process, alternating ``--rounds`` rounds (A B C, then C B A, ...): ORT's CUDA EP
   defaults with numpy in/out (a bare loop), tune's config through `run_bench --config` (what `ortgpu bench
   --config` does), and a bare hand-written loop of the same config (same model file, session and provider
   options, mode), so the speed-up is not the harness's doing;
4. writes OUT_DIR/tune.json and OUT_DIR/tune.md: per cell, the three p50s per round, the speed-up over the
   defaults against the 2.2x target, what tune chose, and the trials with their status and reason.

Budget: 4 x ``--budget`` (default 50 s) + exports (~5 s) + side by side (~60 s): about 5 minutes on one H200.
Needs Optuna on the device (it is not on the image): see docs/tune.md, "On a machine without network".

    # after the ORT pack is unpacked into /tmp/site (see benchmarks/h200_bench_fidelity.py)
    python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
    python3 benchmarks/h200_tune.py $OUT/tune

Dry run without a GPU: ``--ep cpu`` (the built-in demo model at batch 1 and 8 stands in for both models).
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
from bare_loops import bare_times  # noqa: E402

TARGET = 2.2
# Median ms on the lent H200, 2026-11-30 (../shared/tools/ort-gpu-pack.md): defaults, hand-tuned ORT, torch.compile
ANCHORS = {
    "resnet50-b1": (1.28, 0.577, 0.80),
    "resnet50-b64": (13.88, 3.9, 2.82),
    "bert-base-b1": (2.20, 0.511, 0.77),
    "bert-base-b32": (7.24, 1.905, 2.03),
}


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def export_models(work: Path, ep: str) -> dict[str, Path]:
    if ep == "cpu":
        from ortgpu.model.zoo import build_demo_model

        return {"demo": build_demo_model(work / "demo.onnx")}
    import torch
    from h200_bench_fidelity import _export, export_resnet50
    from transformers import BertConfig, BertModel

    resnet = export_resnet50(work / "resnet50.onnx")
    model = BertModel._from_config(BertConfig(), attn_implementation="eager").eval()

    class LastHiddenState(torch.nn.Module):
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids, return_dict=False
            )[0]

    ids = torch.randint(0, model.config.vocab_size, (1, 128), dtype=torch.int64)
    mask = torch.ones(1, 128, dtype=torch.int64)
    types = torch.zeros(1, 128, dtype=torch.int64)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch"} for n in names} | {"last_hidden_state": {0: "batch"}}
    bert = work / "bert-base.onnx"
    # TorchScript exporter first: the graph patterns ORT's transformer optimizer fuses (Attention, SkipLayerNorm)
    _export(LastHiddenState(model), (ids, mask, types), bert, names, ["last_hidden_state"], axes, dynamo_first=False)
    return {"resnet50": resnet, "bert-base": bert}


def cells(models: dict[str, Path], ep: str) -> list[tuple[str, Path, int]]:
    if ep == "cpu":
        return [("demo-b1", models["demo"], 1), ("demo-b8", models["demo"], 8)]
    return [
        ("resnet50-b1", models["resnet50"], 1),
        ("resnet50-b64", models["resnet50"], 64),
        ("bert-base-b1", models["bert-base"], 1),
        ("bert-base-b32", models["bert-base"], 32),
    ]


# ------------------------------------------------------------------------------------------------- measuring


def feeds_for(model: Path, batch: int) -> dict[str, np.ndarray]:
    from ortgpu.model.inputs import InputSpec, make_inputs
    from ortgpu.model.inspect import inspect_model

    return make_inputs(inspect_model(model), InputSpec(batch=batch)).feeds


def bare_defaults(model: Path, ep: str, batch: int, duration: float) -> float:
    """ORT's defaults as a user writes them: a plain session, numpy in/out."""
    import onnxruntime as ort

    providers = ["CPUExecutionProvider"] if ep == "cpu" else ["CUDAExecutionProvider", "CPUExecutionProvider"]
    session = ort.InferenceSession(str(model), providers=providers)
    samples, _ = bare_times(session, "run", feeds_for(model, batch), 30, duration_s=duration)
    del session
    gc.collect()
    return float(np.median(samples)) / 1e6


def bare_config(model: Path, config_path: Path, ep: str, batch: int, duration: float) -> float:
    """The tuned config rebuilt by hand with onnxruntime only: model file, session and provider options, mode."""
    import onnxruntime as ort

    from ortgpu.config import load_config
    from ortgpu.ep import ExecutionProvider

    config = load_config(config_path)
    path = config.model_file_for(model, _sha256(model))
    options = ort.SessionOptions()
    level = {"basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED", "all": "ORT_ENABLE_ALL"}
    options.graph_optimization_level = getattr(
        ort.GraphOptimizationLevel, level[config.session["graph_optimization_level"]]
    )
    options.intra_op_num_threads = int(config.session["intra_op_num_threads"])
    options.inter_op_num_threads = int(config.session["inter_op_num_threads"])
    if config.session["execution_mode"] == "parallel":
        options.execution_mode = ort.ExecutionMode.ORT_PARALLEL
    for name, value in dict(config.session["free_dims"]).items():
        options.add_free_dimension_override_by_name(name, value)
    for name, value in dict(config.session["free_dim_denotations"]).items():
        options.add_free_dimension_override_by_denotation(name, value)
    mode = str(config.run["mode"])
    if ep == "cpu":
        providers: list = ["CPUExecutionProvider"]
    else:
        cuda = config.options_for(ExecutionProvider.CUDA)
        if mode == "cudagraph":
            cuda["enable_cuda_graph"] = "1"
        providers = [("CUDAExecutionProvider", cuda), "CPUExecutionProvider"]
    session = ort.InferenceSession(str(path), options, providers=providers)
    feeds = feeds_for(model, batch)
    outputs = None
    if mode == "cudagraph":
        plain = ort.InferenceSession(str(path), options, providers=providers[-2:] if ep != "cpu" else providers)
        outputs = [(tuple(a.shape), str(a.dtype)) for a in plain.run(None, feeds)]
        del plain
    device = "cpu" if ep == "cpu" else "cuda"
    samples, _ = bare_times(session, mode, feeds, 30, duration_s=duration, device=device, outputs=outputs)
    del session
    gc.collect()
    return float(np.median(samples)) / 1e6


def harness_config(model: Path, config_path: Path, ep: str, batch: int, duration: float) -> float:
    from ortgpu.bench.runner import BenchRequest, run_bench
    from ortgpu.ep import ExecutionProvider

    result = run_bench(
        BenchRequest(
            model, ep=ExecutionProvider.parse(ep), modes=(), batches=(batch,), config=config_path, duration_s=duration
        )
    )
    case = result.cases[0]
    if case.stats is None:
        raise RuntimeError(f"bench --config failed: {case.reason}")
    return case.stats.p50_ms


def _sha256(path: Path) -> str:
    from ortgpu.tune.variants import sha256_file

    return sha256_file(path)


# ------------------------------------------------------------------------------------------------- report


def markdown(report: dict) -> str:
    lines = [
        f"# `ortgpu tune` on {report['gpu']}",
        "",
        f"Command: `{report['command']}`  ",
        f"ORT {report['ort_version']}, driver {report['driver']}, CUDA {report['cuda_driver']}, Optuna "
        f"{report['optuna']}, {report['date']}, total {report['elapsed_s']:.0f} s; tune budget "
        f"{report['budget_s']:.0f} s per cell, objective p50.",
        "",
        "## Side by side (median of per-round p50s, ms; interleaved rounds in one process)",
        "",
        "| cell | ORT defaults | tune's config (bench --config) | bare loop, same config | speed-up | ≥ 2.2x | "
        "anchors: defaults / hand-tuned / torch.compile |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, cell in report["cells"].items():
        if "error" in cell:
            lines.append(f"| {name} | failed: {cell['error']} | | | | | |")
            continue
        anchor = ANCHORS.get(name)
        anchors = " / ".join(f"{a:.3g}" for a in anchor) if anchor else "–"
        lines.append(
            f"| {name} | {cell['defaults_ms']:.3f} | {cell['tuned_ms']:.3f} | {cell['bare_tuned_ms']:.3f} | "
            f"{cell['speedup']:.2f}x | {'yes' if cell['speedup'] >= TARGET else 'NO'} | {anchors} |"
        )
    lines += ["", "## What tune chose and the trials", ""]
    for name, cell in report["cells"].items():
        if "error" in cell:
            continue
        lines += [f"### {name}", "", f"best: {cell['best']}  ", f"rounds (defaults, tuned, bare): {cell['rounds']}", ""]
        lines += ["| # | status | p50 ms | params / reason |", "|---|---|---|---|"]
        for t in cell["trials"]:
            value = f"{t['value']:.3f}" if isinstance(t.get("value"), (int, float)) else "–"
            detail = json.dumps(t["params"]) + (f" — {t['reason']}" if t.get("reason") else "")
            lines.append(f"| {t['number']} | {t['status']} | {value} | {detail.replace('|', '/')} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--ep", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--budget", type=float, default=50.0, help="tune seconds per cell")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=1.0, help="timed seconds per side and round")
    parser.add_argument("--work", type=Path)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    import onnxruntime as ort
    import optuna

    from ortgpu.ep import ExecutionProvider
    from ortgpu.host.nvml import query_driver
    from ortgpu.results import to_jsonable
    from ortgpu.tune import Objective, TuneRequest, run_tune

    driver = query_driver()
    work = args.work or Path(tempfile.mkdtemp(prefix="ortgpu-tune-"))
    work.mkdir(parents=True, exist_ok=True)
    models = export_models(work, args.ep)
    log(f"models: {', '.join(f'{k} {v.stat().st_size / 2**20:.0f} MiB' for k, v in models.items())}")
    report_cells: dict[str, dict] = {}
    configs: dict[str, Path] = {}
    for name, model, batch in cells(models, args.ep):
        log(f"tune {name}")
        try:
            result = run_tune(
                TuneRequest(
                    model,
                    args.out / name,
                    ep=ExecutionProvider.parse(args.ep),
                    objective=Objective.P50,
                    batches=(batch,),
                    budget_s=args.budget,
                    measure_s=0.6,
                    max_warmup_s=1.5,
                ),
                lambda message, fraction=None, name=name: log(f"  {name}: {message}"),
            )
        except Exception as exc:  # one cell failing must not lose the others
            report_cells[name] = {"error": f"{type(exc).__name__}: {exc}"}
            log(f"  {name} failed: {exc}")
            continue
        report_cells[name] = {
            "best": to_jsonable(result.best.params) if result.best else None,
            "tune_speedup": result.speedup,
            "trials": to_jsonable(result.trials),
            "notes": list(result.notes),
        }
        if result.config_path is not None:
            configs[name] = result.config_path
        log(
            f"  {name}: best {result.best.value if result.best else None} ms, {result.speedup}x, "
            f"{len(result.trials)} trials"
        )
    for name, model, batch in cells(models, args.ep):
        if name not in configs:
            report_cells.setdefault(name, {})["error"] = report_cells.get(name, {}).get("error", "no config found")
            continue
        rounds = []
        for index in range(args.rounds):
            sides = ("defaults", "tuned", "bare") if index % 2 == 0 else ("bare", "tuned", "defaults")
            values = {}
            for side in sides:
                if side == "defaults":
                    values[side] = bare_defaults(model, args.ep, batch, args.duration)
                elif side == "tuned":
                    values[side] = harness_config(model, configs[name], args.ep, batch, args.duration)
                else:
                    values[side] = bare_config(model, configs[name], args.ep, batch, args.duration)
            rounds.append((values["defaults"], values["tuned"], values["bare"]))
            log(f"  {name} round {index + 1}: {values}")
        cell = report_cells[name]
        cell["rounds"] = rounds
        cell["defaults_ms"] = statistics.median(r[0] for r in rounds)
        cell["tuned_ms"] = statistics.median(r[1] for r in rounds)
        cell["bare_tuned_ms"] = statistics.median(r[2] for r in rounds)
        cell["speedup"] = cell["defaults_ms"] / cell["tuned_ms"]
        cell["config"] = configs[name].read_text()
    report = {
        "command": "python3 benchmarks/h200_tune.py " + " ".join(sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "gpu": driver.gpus[0].name if driver.gpus else "no GPU (dry run)",
        "driver": driver.version,
        "cuda_driver": driver.cuda_driver_version,
        "ort_version": ort.__version__,
        "optuna": optuna.__version__,
        "python": platform.python_version(),
        "budget_s": args.budget,
        "cells": report_cells,
        "elapsed_s": time.perf_counter() - started,
    }
    (args.out / "tune.json").write_text(json.dumps(report, indent=1, default=str))
    text = markdown(report)
    (args.out / "tune.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
