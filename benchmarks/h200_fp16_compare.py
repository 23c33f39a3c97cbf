"""GPU evidence for `ortgpu fp16` and `ortgpu compare --python`: ResNet-50 and BERT-base on the CUDA EP.

    python benchmarks/h200_fp16_compare.py OUT_DIR [--ep cuda|cpu] [--tiny] [--work DIR]
        [--other-python PY] [--other-env NAME=VALUE ...] [--max-iterations N]

1. Exports ResNet-50 (torchvision, random weights, dynamic batch) and BERT-base (transformers BertModel from its
   config, random weights, dynamic batch/sequence) as benchmarks/h200_check.py does, into --work (or a temporary
   folder) — or reuses resnet50.onnx / bert-base.onnx an earlier step (h200_tune.py) left there.
2. `run_fp16` on each (the library function behind `ortgpu fp16`) on --ep: validated on 2 generated samples
   (ResNet-50 batch 8; BERT batch 8 x 128 tokens, attention mask all ones), keep-list with reasons, parity against
   fp32 (CPU EP), and on a GPU the speed of fp32 and fp16 with IO binding through the bench engine at ResNet-50
   batch 64 and BERT batch 32 (anchors measured by hand on this H200: ResNet-50 9.58 -> 7.20 ms, BERT 6.39 ->
   3.61 ms).
3. `run_compare` with --python (the library function behind `ortgpu compare --python`): side A is this
   interpreter's onnxruntime, side B --other-python (with --other-env set for it, NAME= unsets; default: this
   interpreter with PYTHONPATH unset, so its own site-packages' onnxruntime), on ResNet-50 and
   BERT-base at batch 1, CPU EP on both sides, then ResNet-50 with A on --ep against B on the CPU EP.

Writes OUT_DIR/h200-fp16-compare.json and .md (tables, exact command, environment), each fp16 / compare result as
its versioned JSON envelope, and the compare HTML reports. --tiny uses ortgpu's built-in demo and token models
instead of the exports (a dry run on a machine without torch: `--ep cpu --tiny`). Fully offline.

On the H200 (onnxruntime-gpu 1.31.1 pack on PYTHONPATH, the image's onnxruntime 1.30 CPU build in /opt/torch/.venv):
    python benchmarks/h200_fp16_compare.py OUT --work /tmp/models \
        --other-python /opt/torch/.venv/bin/python --other-env PYTHONPATH=
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ortgpu.atomic import atomic_write_text  # noqa: E402
from ortgpu.results import envelope  # noqa: E402

ANCHORS_MS = {"resnet50": (64, 9.58, 7.20), "bert_base": (32, 6.39, 3.61)}
_SCRUB: list[tuple[str, str]] = []  # (folder, its name): folders named in what is written, not spelled out


def _write(path: Path, text: str) -> None:
    for folder, name in _SCRUB:
        text = text.replace(folder, name)
    atomic_write_text(path, text)


def _environment(ep: str) -> dict[str, Any]:
    if ep == "cuda":
        from h200_check import environment

        return environment()
    import platform

    import onnxruntime as ort

    return {
        "date": time.strftime("%Y-%m-%d"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "onnxruntime": ort.__version__,
        "onnxruntime_providers": ort.get_available_providers(),
        "gpus": [],
    }


def _reuse(folder: Path, *names: str) -> Path | None:
    """A model an earlier step exported into the work folder (h200_tune.py and h200_check.py use these names)."""
    return next((folder / n for n in names if (folder / n).is_file()), None)


def _models(folder: Path, tiny: bool) -> list[dict[str, Any]]:
    from ortgpu.model.inputs import InputSpec

    if tiny:
        from ortgpu.model.zoo import build_demo_model, build_token_model

        return [
            {
                "name": "demo_cnn_transformer",
                "path": build_demo_model(folder / "demo.onnx"),
                "inputs": InputSpec(dims={"batch": 8}),
                "bench_batch": 64,
                "exporter": "ortgpu.model.zoo",
            },
            {
                "name": "tokens",
                "path": build_token_model(folder / "tokens.onnx"),
                "inputs": InputSpec(dims={"batch": 8, "sequence": 128}, ranges={"attention_mask": (1, 1)}),
                "bench_batch": 32,
                "exporter": "ortgpu.model.zoo",
            },
        ]
    from h200_check import export_bert, export_resnet50

    resnet, resnet_exporter = _reuse(folder, "resnet50.onnx"), "reused from the work folder"
    if resnet is None:
        resnet, resnet_exporter = export_resnet50(folder)
    bert, bert_exporter = _reuse(folder, "bert_base_dynamic.onnx", "bert-base.onnx"), "reused from the work folder"
    if bert is None:
        bert, bert_exporter = export_bert(folder, dynamic=True)
    return [
        {
            "name": "resnet50",
            "path": resnet,
            "inputs": InputSpec(dims={"batch": 8}),
            "bench_batch": 64,
            "exporter": resnet_exporter,
        },
        {
            "name": "bert_base",
            "path": bert,
            "inputs": InputSpec(dims={"batch": 8, "sequence": 128}, ranges={"attention_mask": (1, 1)}),
            "bench_batch": 32,
            "exporter": bert_exporter,
        },
    ]


def _fp16(entry: dict[str, Any], ep: str, out: Path, max_iterations: int) -> dict[str, Any]:
    from ortgpu.config import ExecutionProvider
    from ortgpu.fp16 import Fp16Request, run_fp16

    target = Path(entry["path"]).with_suffix(".ortgpu-fp16.onnx")
    started = time.perf_counter()
    result = run_fp16(
        Fp16Request(
            model=Path(entry["path"]),
            output=target,
            ep=ExecutionProvider.parse(ep),
            inputs=entry["inputs"],
            samples=2,
            max_iterations=max_iterations,
            bench_batch=entry["bench_batch"],
            bench_duration_s=1.5,
        )
    )
    wall = time.perf_counter() - started
    _write(out / f"{entry['name']}.fp16.json", json.dumps(envelope("fp16", result), indent=1) + "\n")
    entry["fp16_path"] = target if result.written else None
    speed = result.speed
    return {
        "model": entry["name"],
        "exporter": entry["exporter"],
        "passed": result.passed,
        "verdict": result.verdict,
        "engine": result.engine,
        "engine_reason": result.engine_reason,
        "upcast_nodes": len(result.upcast),
        "keep": [{"node": k.name, "op": k.op_type, "rule": k.rule.value, "why": k.reason} for k in result.keep],
        "attempts": [
            {
                "kept": a.kept,
                "passed": a.passed,
                "failure": a.failures[0] if a.failures else None,
                "added": list(a.added),
            }
            for a in result.attempts
        ],
        "parity": [
            {
                "output": p.name,
                "status": p.status.value,
                "max_abs": p.max_abs,
                "max_rel": p.max_rel,
                "cosine": p.cosine,
                "snr_db": p.snr_db,
                "atol": p.atol,
                "rtol": p.rtol,
                "worst_sample": p.sample,
            }
            for p in result.parity
        ],
        "size_fp32_mib": result.sizes.fp32_bytes / 2**20,
        "size_fp16_mib": result.sizes.fp16_bytes / 2**20,
        "speed": {
            "mode": speed.mode,
            "batch": speed.batch,
            "fp32_p50_ms": speed.fp32_p50_ms,
            "fp16_p50_ms": speed.fp16_p50_ms,
            "speedup": speed.speedup,
            "note": speed.note,
        },
        "wall_s": round(wall, 1),
    }


def _compare(name: str, entry: dict[str, Any], other: str, env: dict[str, str], ep_a: str, out: Path) -> dict[str, Any]:
    from ortgpu.compare import CompareRequest, run_compare
    from ortgpu.config import ExecutionProvider
    from ortgpu.errors import OrtgpuError
    from ortgpu.model.inputs import InputSpec

    spec = entry["inputs"]
    single = InputSpec(dims={**spec.dims, "batch": 1}, ranges=dict(spec.ranges))
    started = time.perf_counter()
    try:
        result = run_compare(
            CompareRequest(
                a=Path(entry["path"]),
                ep_a=ExecutionProvider.parse(ep_a),
                ep_b=ExecutionProvider.CPU,
                python=other,
                python_env=env,
                inputs=single,
                samples=2,
                duration_s=1.5,
                max_regression=0.10,
                report=out / f"{name}.compare.html",
            )
        )
    except OrtgpuError as exc:
        return {"case": name, "error": exc.one_line(), "exit": int(exc.exit_code)}
    _write(out / f"{name}.compare.json", json.dumps(envelope("compare", result), indent=1) + "\n")
    html = out / f"{name}.compare.html"
    if html.is_file():
        _write(html, html.read_text(encoding="utf-8"))
    latency = result.latency
    needs = result.needs
    return {
        "case": name,
        "exit": 0 if result.passed else 1,
        "a": result.a.label,
        "b": result.b.label,
        "a_ort": result.a.ort_version,
        "b_ort": result.b.ort_version,
        "outputs": [
            {"output": p.name, "status": p.status.value, "max_abs": p.max_abs, "cosine": p.cosine, "snr_db": p.snr_db}
            for p in result.outputs
        ],
        "latency": None
        if latency is None
        else {
            "a_p50_ms": latency.a_p50_ms,
            "b_p50_ms": latency.b_p50_ms,
            "delta": latency.delta,
            "regressed": latency.regressed,
            "method": latency.method,
        },
        "needs": None
        if needs is None
        else {
            "error": needs.error,
            "changed": [[r.kind, r.a, r.b] for r in needs.requirements if r.changed],
            "providers_a": needs.providers_a,
            "providers_b": needs.providers_b,
            "needs_added": needs.needs_added,
            "needs_removed": needs.needs_removed,
        },
        "verdict": result.verdict,
        "wall_s": round(time.perf_counter() - started, 1),
    }


def _num(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}g}"


def markdown(doc: dict[str, Any]) -> str:
    env = doc["environment"]
    gpus = ", ".join(f"{g['name']} ({g.get('sm')})" for g in env.get("gpus", [])) or "none"
    lines = [
        "# `ortgpu fp16` and `ortgpu compare --python` on ResNet-50 and BERT-base",
        "",
        f"{env['date']}; GPU {gpus}; driver {env.get('driver')} (CUDA {env.get('driver_cuda')}); onnxruntime "
        f"{env['onnxruntime']} (CUDA build {env.get('onnxruntime_cuda_build')}); torch {env.get('torch')} "
        f"(CUDA {env.get('torch_cuda')}, cuDNN {env.get('torch_cudnn')}); onnx {env.get('onnx')}.",
        "",
        f"Command: `{doc['command']}` ({doc['wall_s']:.0f} s). Random weights; validation on 2 generated samples "
        "(batch 8), fp32 reference on the CPU EP; speed with IO binding through the bench engine.",
        "",
        "## fp16",
        "",
        "| model | passed | engine | kept in fp32 | attempts | output: max abs, cosine, SNR dB | size MiB "
        "| batch | fp32 p50 ms | fp16 p50 ms | speed-up | anchor (by hand) |",
        "|---|---|---|---|---:|---|---|---:|---:|---:|---:|---|",
    ]
    for row in doc["fp16"]:
        kept = ", ".join(f"{k['node']} ({k['rule']})" for k in row["keep"][:8]) or "none"
        if len(row["keep"]) > 8:
            kept += f" +{len(row['keep']) - 8}"
        parity = "; ".join(
            f"{p['output']}: {_num(p['max_abs'])}, {_num(p['cosine'], 6)}, {_num(p['snr_db'])}" for p in row["parity"]
        )
        speed = row["speed"]
        anchor = ANCHORS_MS.get(row["model"])
        anchor_text = f"b{anchor[0]}: {anchor[1]} -> {anchor[2]} ms" if anchor else "–"
        speedup = "–" if speed["speedup"] is None else f"{speed['speedup']:.2f}x"
        lines.append(
            f"| {row['model']} | {row['passed']} | {row['engine']} | {kept} | {len(row['attempts'])} | {parity} "
            f"| {row['size_fp32_mib']:.1f} -> {row['size_fp16_mib']:.1f} | {speed['batch']} "
            f"| {_num(speed['fp32_p50_ms'], 4)} | {_num(speed['fp16_p50_ms'], 4)} | {speedup} | {anchor_text} |"
        )
    lines += [""] + [
        f"- `{r['model']}`: {r['verdict']}" + (f" ({r['speed']['note']})" if r["speed"]["note"] else "")
        for r in doc["fp16"]
    ]
    for row in doc["fp16"]:
        if row["keep"]:
            lines += ["", f"Keep-list of `{row['model']}`:", ""]
            lines += [f"- `{k['node']}` ({k['op']}, {k['rule']}): {k['why']}" for k in row["keep"]]
    lines += [
        "",
        "## compare --python",
        "",
        f"Side A: this interpreter ({doc['this_python']}); side B: `{doc['other_python']}` with "
        f"{doc['other_env'] or 'no environment change'}.",
        "",
        "| case | A | B | exit | outputs: max abs, cosine | p50 A ms | p50 B ms | B vs A | needs changed |",
        "|---|---|---|---:|---|---:|---:|---:|---|",
    ]
    for row in doc["compare"]:
        if "error" in row:
            lines.append(f"| {row['case']} | | | {row['exit']} | error: {row['error']} | | | | |")
            continue
        outputs = "; ".join(f"{o['output']}: {_num(o['max_abs'])}, {_num(o['cosine'], 6)}" for o in row["outputs"])
        lat = row["latency"] or {}
        delta = "–" if lat.get("delta") is None else f"{lat['delta']:+.1%}"
        needs = row["needs"] or {}
        changed = "; ".join(f"{k}: {a} -> {b}" for k, a, b in needs.get("changed", [])) or (
            needs.get("error") or "none"
        )
        lines.append(
            f"| {row['case']} | {row['a']} | {row['b']} | {row['exit']} | {outputs} | {_num(lat.get('a_p50_ms'), 4)} "
            f"| {_num(lat.get('b_p50_ms'), 4)} | {delta} | {changed} |"
        )
    lines += [""] + [f"- `{r['case']}`: {r.get('verdict') or r.get('error')}" for r in doc["compare"]]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--ep", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--tiny", action="store_true", help="built-in small models instead of the exports")
    parser.add_argument(
        "--other-python",
        default=None,
        help="side B of compare --python (default: this interpreter with PYTHONPATH unset, i.e. its own onnxruntime)",
    )
    parser.add_argument("--other-env", action="append", default=None, metavar="NAME=VALUE")
    parser.add_argument("--work", type=Path, help="where models are exported, or reused from (default: a temp folder)")
    parser.add_argument("--max-iterations", type=int, default=4)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    _SCRUB.append((str(args.out), "OUT_DIR"))
    if args.other_python is None:
        args.other_python = sys.executable
        if args.other_env is None:
            args.other_env = ["PYTHONPATH="]
    args.other_env = args.other_env or []
    other_env = dict(item.partition("=")[::2] for item in args.other_env)
    started = time.perf_counter()
    env = _environment(args.ep)
    fp16_rows, compare_rows = [], []
    with tempfile.TemporaryDirectory(prefix="ortgpu-h200-fp16-") as tmp:
        work = Path(tmp)
        _SCRUB.append((tmp, "<temporary folder>"))
        if args.work is not None:
            work = args.work
            work.mkdir(parents=True, exist_ok=True)
            _SCRUB.append((str(work.resolve()), "<work folder>"))
            _SCRUB.append((str(work), "<work folder>"))
        models = _models(work, args.tiny)
        for entry in models:
            print(f"fp16: {entry['name']}", flush=True)
            fp16_rows.append(_fp16(entry, args.ep, args.out, args.max_iterations))
            print(f"  {fp16_rows[-1]['verdict']} ({fp16_rows[-1]['wall_s']} s)", flush=True)
        for entry in models:
            print(f"compare --python: {entry['name']} (cpu / cpu)", flush=True)
            compare_rows.append(
                _compare(f"{entry['name']}-cpu-vs-cpu", entry, args.other_python, other_env, "cpu", args.out)
            )
        if args.ep != "cpu":
            entry = models[0]
            print(f"compare --python: {entry['name']} ({args.ep} / cpu)", flush=True)
            compare_rows.append(
                _compare(f"{entry['name']}-{args.ep}-vs-cpu", entry, args.other_python, other_env, args.ep, args.out)
            )
    command = f"python benchmarks/h200_fp16_compare.py OUT_DIR --ep {args.ep}" + (" --tiny" if args.tiny else "")
    command += " --work WORK_DIR" if args.work is not None else ""
    if args.other_python != sys.executable:
        command += f" --other-python {args.other_python}"
    command += "".join(f" --other-env {item}" for item in args.other_env)
    doc = {
        "command": command,
        "environment": env,
        "this_python": sys.executable,
        "other_python": args.other_python,
        "other_env": ", ".join(args.other_env),
        "fp16": fp16_rows,
        "compare": compare_rows,
        "wall_s": time.perf_counter() - started,
    }
    _write(args.out / "h200-fp16-compare.json", json.dumps(doc, indent=1, default=str) + "\n")
    text = markdown(doc)
    _write(args.out / "h200-fp16-compare.md", text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
