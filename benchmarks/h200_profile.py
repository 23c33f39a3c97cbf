"""GPU evidence for `ortgpu profile` and `ortgpu inspect`: ResNet-50 and BERT-base, defaults against fp16 / NHWC.

    python benchmarks/h200_profile.py OUT_DIR [--ep cuda|cpu] [--tiny] [--runs 10] [--warmup 5] [--work DIR]

Exports ResNet-50 (torchvision, random weights, batch 8) and BERT-base (transformers BertModel from its config,
random weights, batch 1 x sequence 128) as h200_check.py does, converts each to fp16 with onnxruntime's
float16 converter (keep_io_types=True), and profiles on the EP (default cuda, synchronous launches so node times
include GPU work):

    resnet50: fp32 defaults, fp32 + prefer_nhwc, fp16 defaults, fp16 + prefer_nhwc, fp32 defaults async launches
    bert:     fp32 defaults, fp16 defaults
    cpu_only: ortgpu's Det model (no CUDA kernel): Memcpy and CPU-in-GPU-run numbers and hints

and inspects the fp32 models and the Det model (ORT's CUDA placement from a CUDA session; for the Det model ORT's
kernel registry is asked in a child process as well, to record whether that route works on a GPU machine).
Writes into OUT_DIR:
`<case>.profile.json` (the profile's JSON envelope) and `<case>.txt` (its tables), `<model>-report.html`
(defaults against fp16 + NHWC side by side), `<model>.inspect.json`, `traces/<case>.trace.json` (ORT's raw
chrome traces), `environment.json` and the summary `h200-profile.json` / `h200-profile.md`.
The summary is rewritten after every step, most telling cases first, so a run stopped by a time limit keeps
what finished. About 2 minutes on the H200. `--ep cpu --tiny` is the dry run on a CPU machine: ortgpu's demo
model (it has Conv) stands in for ResNet-50 and a small token model for BERT, nothing is exported. Offline.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from h200_check import environment, export_bert, export_resnet50  # noqa: E402  (after the sys.path lines)

from ortgpu.atomic import atomic_write_text  # noqa: E402
from ortgpu.config import load_config  # noqa: E402
from ortgpu.ep import ExecutionProvider  # noqa: E402
from ortgpu.model.inputs import InputSpec  # noqa: E402
from ortgpu.results import envelope  # noqa: E402

RESNET_BATCH = 8


def to_fp16(path: Path) -> Path:
    """onnxruntime's float16 converter, float32 inputs and outputs kept."""
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16
    from onnxruntime.transformers.onnx_model import OnnxModel

    model = convert_float_to_float16(onnx.load(str(path)), keep_io_types=True)
    # The converter appends the Cast nodes of kept io types at the end; the ONNX checker wants a sorted graph.
    OnnxModel(model).topological_sort()
    out = path.with_name(path.stem + "_fp16.onnx")
    onnx.save(model, str(out))
    return out


def render_text(result: Any) -> str:
    import io

    from rich.console import Console

    from ortgpu.cli.profile import render

    buffer = io.StringIO()
    render(result, Console(file=buffer, width=160, no_color=True, soft_wrap=False))
    return buffer.getvalue()


def summary_row(case: str, result: Any) -> dict[str, Any]:
    run = result.main
    top = next((r for r in run.ops if r.share is not None), None)
    return {
        "case": case,
        "ep": run.ep.value,
        "providers": list(run.providers),
        "provider_options": run.provider_options,
        "gpu_timing": run.gpu_timing.value if run.gpu_timing else None,
        "runs_profiled": run.runs_profiled,
        "warmup_runs": run.warmup_runs,
        "run_mean_ms": run.run_times.mean_us / 1000,
        "run_median_ms": run.run_times.median_us / 1000,
        "node_ms_per_run": run.run_times.node_us_per_run / 1000,
        "node_coverage": run.run_times.node_coverage,
        "top_op": f"{top.op_type} ({top.provider.removesuffix('ExecutionProvider')})" if top else None,
        "top_share": top.share if top else None,
        "provider_share": run.provider_share,
        "memcpy_share": run.memcpy.share,
        "memcpy_nodes": run.memcpy.nodes,
        "cpu_in_gpu_share": run.cpu_in_gpu_share,
        "fusion": f"{run.fusion.original_nodes} -> {run.fusion.optimized_nodes}" if run.fusion.available else None,
        "created": dict(list(run.fusion.created.items())[:6]),
        "kernels_recorded": len(run.kernels),
        "kernels_note": run.kernels_note,
        "hints": [f"{h.kind.value}: {h.message}" for h in run.hints],
        "top_ops": [
            {"op": r.op_type, "provider": r.provider, "ms_per_run": r.per_run_us / 1000, "share": r.share}
            for r in run.ops[:8]
        ],
    }


def inspect_case(name: str, model: Path, out: Path, ep: ExecutionProvider, registry: bool) -> dict[str, Any]:
    from ortgpu.inspect import InspectRequest, inspect_model_file
    from ortgpu.inspect.graph import infer_shapes, strip_large_tensors
    from ortgpu.inspect.kernels import registry_coverage
    from ortgpu.inspect.registry import RegistryError
    from ortgpu.model.inspect import load_model

    started = time.perf_counter()
    result = inspect_model_file(InspectRequest(model))
    wall = time.perf_counter() - started
    atomic_write_text(out / f"{name}.inspect.json", json.dumps(envelope("inspect", result), indent=1) + "\n")
    kernels = result.kernels
    record: dict[str, Any] = {
        "model": name,
        "wall_s": wall,
        "nodes": result.node_count,
        "kernels_status": kernels.status.value,
        "kernels_source": kernels.source.value if kernels.source else None,
        "kernels_reason": kernels.reason,
        "nodes_on_ep": kernels.nodes_on_ep,
        "nodes_checked": kernels.nodes_checked,
        "memcpy": kernels.memcpy_count,
        "off_ep": [f"{n.op_type} ({n.name}) -> {n.provider or '?'} [{n.reason}]" for n in kernels.off_ep[:10]],
        "kernels_s": kernels.seconds,
    }
    if not registry:
        return record
    # The other route, ORT's kernel registry in a child process: does it answer on a GPU machine?
    _, proto = load_model(model)
    strip_large_tensors(proto)
    provider = ExecutionProvider.CUDA.ort_name if ep.is_gpu else ExecutionProvider.CPU.ort_name
    try:
        answer = registry_coverage(proto, infer_shapes(proto), provider, timeout_s=60.0)
        record["registry"] = {
            "provider": provider,
            "nodes_on_ep": answer.nodes_on_ep,
            "nodes_checked": answer.nodes_checked,
            "off_ep": [f"{n.op_type} ({n.name}): {n.detail}" for n in answer.off_ep[:10]],
            "seconds": answer.seconds,
        }
    except RegistryError as exc:
        record["registry"] = {"provider": provider, "error": str(exc)}
    return record


def markdown(env: dict[str, Any], rows: list[dict[str, Any]], comparisons: dict[str, Any],
             inspected: list[dict[str, Any]], command: str, exporters: dict[str, str]) -> str:  # fmt: skip
    gpus = ", ".join(f"{g['name']} ({g['sm']})" for g in env.get("gpus", [])) or "none seen by NVML"
    lines = [
        "# `ortgpu profile` and `ortgpu inspect`: ResNet-50 and BERT-base, defaults against fp16 / NHWC",
        "",
        f"{env['date']}; GPU {gpus}; driver {env.get('driver')} (CUDA {env.get('driver_cuda')}); onnxruntime "
        f"{env['onnxruntime']} (built for CUDA {env.get('onnxruntime_cuda_build')}); torch {env.get('torch')} "
        f"(CUDA {env.get('torch_cuda')}, cuDNN {env.get('torch_cudnn')}), transformers {env.get('transformers')}.",
        "",
        f"Command: `{command}`. Exporters: "
        + (", ".join(f"{k}: {v}" for k, v in exporters.items()) or "none")
        + ". Random weights. Times are under ORT's profiler (and, with sync timing, CUDA_LAUNCH_BLOCKING=1): "
        "they show where the time goes, `ortgpu bench` measures latency.",
        "",
        "| case | timing | runs | run mean ms | node ms/run (share of run) | top op (share) | Memcpy | CPU EP "
        "| nodes before -> after fusion | kernels recorded |",
        "|---|---|---:|---:|---:|---|---:|---:|---|---:|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['case']} | error: {r['error']} | | | | | | | | |")
            continue
        top = f"{r['top_op']} ({r['top_share']:.0%})" if r["top_op"] else "–"
        lines.append(
            f"| {r['case']} | {r['gpu_timing'] or 'cpu'} | {r['runs_profiled']} | {r['run_mean_ms']:.3f} "
            f"| {r['node_ms_per_run']:.3f} ({r['node_coverage']:.0%}) | {top} | {r['memcpy_share']:.1%} "
            f"| {r['cpu_in_gpu_share']:.1%} | {r['fusion'] or '–'} | {r['kernels_recorded']} |"
        )
    for name, table in comparisons.items():
        lines += ["", f"## {name}: {table['base']} vs {table['other']} (ms per run)", ""]
        lines += [
            "| op type | " + table["base"] + " | share | " + table["other"] + " | share |",
            "|---|---:|---:|---:|---:|",
        ]
        for row in table["rows"][:12]:

            def cell(value: float | None, share: float | None) -> str:
                return (
                    ("–" if value is None else f"{value / 1000:.3f}")
                    + " | "
                    + ("–" if share is None else f"{share:.0%}")
                )

            lines.append(
                f"| {row['op_type']} | {cell(row['base_per_run_us'], row['base_share'])} "
                f"| {cell(row['other_per_run_us'], row['other_share'])} |"
            )
    lines += ["", "## Hints", ""]
    for r in rows:
        for hint in r.get("hints", []):
            lines.append(f"- `{r['case']}`: {hint}")
    kernel_notes = {r["kernels_note"] for r in rows if r.get("kernels_note")}
    lines += [f"- {note}" for note in kernel_notes]
    lines += ["", "## inspect: which nodes the CUDA EP takes", ""]
    for item in inspected:
        lines.append(
            f"- `{item['model']}` ({item['nodes']} nodes, {item['wall_s']:.1f} s): {item['kernels_status']} "
            f"(source: {item['kernels_source'] or '–'}): {item['nodes_on_ep']}/{item['nodes_checked']} on the EP, "
            f"Memcpy {item['memcpy']}; off: {'; '.join(item['off_ep']) or 'none'}; {item['kernels_reason']}"
        )
        registry = item.get("registry")
        if registry is None:
            continue
        if "error" in registry:
            lines.append(f"  - kernel registry ({registry['provider']}): could not be read: {registry['error']}")
        else:
            lines.append(
                f"  - kernel registry ({registry['provider']}): {registry['nodes_on_ep']}/{registry['nodes_checked']} "
                f"nodes have a kernel; without: {'; '.join(registry['off_ep']) or 'none'}"
            )
    return "\n".join(lines) + "\n"


def tiny_models(folder: Path) -> tuple[Path, Path]:
    from ortgpu.model.zoo import build_demo_model, build_token_model

    return build_demo_model(folder / "resnet_stand_in.onnx"), build_token_model(folder / "bert_stand_in.onnx")


class Evidence:
    """What has been measured so far; the summary is rewritten after each step, so a run cut short keeps it."""

    def __init__(self, out: Path, env: dict[str, Any], command: str) -> None:
        self.out, self.env, self.command = out, env, command
        self.rows: list[dict[str, Any]] = []
        self.results: dict[str, Any] = {}
        self.comparisons: dict[str, Any] = {}
        self.inspected: list[dict[str, Any]] = []
        self.exporters: dict[str, str] = {}

    def write(self) -> None:
        summary = {
            "environment": self.env,
            "command": self.command,
            "cases": self.rows,
            "comparisons": self.comparisons,
            "inspect": self.inspected,
        }
        atomic_write_text(self.out / "h200-profile.json", json.dumps(summary, indent=1, default=str) + "\n")
        good = [i for i in self.inspected if "error" not in i]
        text = markdown(self.env, self.rows, self.comparisons, good, self.command, self.exporters)
        atomic_write_text(self.out / "h200-profile.md", text)


def profile_case(evidence: Evidence, case: str, model: Path, config: Path | None, inputs: InputSpec,
                 timing: Any, ep: ExecutionProvider, args: argparse.Namespace) -> None:  # fmt: skip
    from ortgpu.profile import ProfileRequest, run_profile

    started = time.perf_counter()
    print(f"profiling {case}", flush=True)
    try:
        result = run_profile(
            ProfileRequest(
                model=model,
                ep=ep,
                config=load_config(config),
                inputs=inputs,
                runs=args.runs,
                warmup=args.warmup,
                trace=evidence.out / "traces" / f"{case}.trace.json",
                gpu_timing=timing,
            )
        )
    except Exception as exc:  # one failed case must not lose the others' evidence
        evidence.rows.append({"case": case, "error": f"{type(exc).__name__}: {exc}"})
        evidence.write()
        return
    evidence.results[case] = result
    out = evidence.out
    atomic_write_text(out / f"{case}.profile.json", json.dumps(envelope("profile", result), indent=1) + "\n")
    atomic_write_text(out / f"{case}.txt", render_text(result))
    evidence.rows.append({**summary_row(case, result), "wall_s": time.perf_counter() - started})
    evidence.write()


def report_pair(evidence: Evidence, name: str, base: str, other: str | None) -> None:
    """One HTML report: ``base`` alone, or ``base`` and ``other`` side by side."""
    from ortgpu.profile import ProfileResult, compare_runs
    from ortgpu.profile.report import write_report

    results = evidence.results
    if base not in results or (other is not None and other not in results):
        return
    first = dataclasses.replace(results[base].main, label=f"{base} defaults")
    runs = [first]
    compared: tuple[Any, ...] = ()
    if other is not None:
        second = dataclasses.replace(results[other].main, label=other)
        runs.append(second)
        compared = compare_runs(first, second)
        evidence.comparisons[name] = {
            "base": first.label,
            "other": second.label,
            "rows": [dataclasses.asdict(r) for r in compared],
        }
    path = evidence.out / f"{name}-report.html"
    combined = ProfileResult(
        model=results[base].model,
        model_sha256=results[base].model_sha256,
        model_node_count=results[base].model_node_count,
        ort_version=results[base].ort_version,
        runs=tuple(runs),
        comparison=compared,
        report=path,
    )
    write_report(combined, path)
    evidence.write()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--ep", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--tiny", action="store_true", help="built-in stand-ins instead of exported models")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--work", type=Path, help="folder for the models (default: a temporary one, removed)")
    args = parser.parse_args(argv)
    from ortgpu.model.zoo import build_cpu_only_op_model
    from ortgpu.profile import GpuTiming

    out: Path = args.out
    (out / "traces").mkdir(parents=True, exist_ok=True)
    env = environment()
    atomic_write_text(out / "environment.json", json.dumps(env, indent=1) + "\n")
    ep = ExecutionProvider(args.ep)
    command = "python benchmarks/h200_profile.py OUT_DIR" + (f" --ep {args.ep}" if args.ep != "cuda" else "")
    command += " --tiny" if args.tiny else ""
    evidence = Evidence(out, env, command)
    if args.work is not None:
        args.work.mkdir(parents=True, exist_ok=True)
    sync, launch = GpuTiming.SYNC, GpuTiming.ASYNC
    with tempfile.TemporaryDirectory(prefix="ortgpu-h200-profile-", dir=args.work) as tmp:
        folder = Path(tmp)
        nhwc = folder / "nhwc.toml"
        nhwc.write_text("[ep.cuda]\nprefer_nhwc = true\n", encoding="utf-8")
        cpu_only = build_cpu_only_op_model(folder / "cpu_only_op.onnx")
        if args.tiny:
            resnet, bert = tiny_models(folder)
            resnet_inputs, bert_inputs = InputSpec(dims={"batch": RESNET_BATCH}), InputSpec(dims={"sequence": 16})
        else:
            resnet, evidence.exporters["resnet50"] = export_resnet50(folder)
            bert, evidence.exporters["bert_base"] = export_bert(folder, dynamic=False)
            resnet_inputs = InputSpec(dims={"batch": RESNET_BATCH})
            bert_inputs = InputSpec(ranges={"attention_mask": (1, 1), "token_type_ids": (0, 0)})
        # Most telling first: a run cut short by its time limit keeps the defaults-vs-tuned pairs and the hints.
        resnet16 = to_fp16(resnet)
        profile_case(evidence, "resnet50-fp32", resnet, None, resnet_inputs, sync, ep, args)
        profile_case(evidence, "resnet50-fp16-nhwc", resnet16, nhwc, resnet_inputs, sync, ep, args)
        report_pair(evidence, "resnet50", "resnet50-fp32", "resnet50-fp16-nhwc")
        bert16 = to_fp16(bert)
        profile_case(evidence, "bert-fp32", bert, None, bert_inputs, sync, ep, args)
        profile_case(evidence, "bert-fp16", bert16, None, bert_inputs, sync, ep, args)
        report_pair(evidence, "bert", "bert-fp32", "bert-fp16")
        profile_case(evidence, "cpu-only-op", cpu_only, None, InputSpec(), sync, ep, args)
        report_pair(evidence, "cpu-only-op", "cpu-only-op", None)
        for name, model in (("cpu-only-op", cpu_only), ("resnet50", resnet), ("bert", bert)):
            print(f"inspecting {name}", flush=True)
            try:
                evidence.inspected.append(inspect_case(name, model, out, ep, registry=name == "cpu-only-op"))
            except Exception as exc:  # keep going: the profile evidence is already written
                evidence.inspected.append({"model": name, "error": f"{type(exc).__name__}: {exc}"})
            evidence.write()
        if ep.is_gpu:
            profile_case(evidence, "resnet50-fp32-async", resnet, None, resnet_inputs, launch, ep, args)
        profile_case(evidence, "resnet50-fp32-nhwc", resnet, nhwc, resnet_inputs, sync, ep, args)
        profile_case(evidence, "resnet50-fp16", resnet16, None, resnet_inputs, sync, ep, args)
    for item in evidence.inspected:
        if "error" in item:
            print(f"inspect {item['model']} failed: {item['error']}", file=sys.stderr)
    print((out / "h200-profile.md").read_text(encoding="utf-8"))
    return 0 if all("error" not in r for r in evidence.rows) else 1


if __name__ == "__main__":
    sys.exit(main())
