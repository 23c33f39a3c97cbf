"""GPU evidence for `ortgpu check`: ResNet-50, BERT-base and a model with a CPU-only op on the CUDA EP.

    python benchmarks/h200_check.py OUT_DIR

Exports ResNet-50 (torchvision, random weights, dynamic batch) and BERT-base (transformers BertModel built from
its config with random weights, eager attention, batch 1 x sequence 128: once with fixed shapes, once with
dynamic batch/sequence) to ONNX in a temporary folder, builds ortgpu's CPU-only-op model, then runs
`python -m ortgpu check MODEL --ep cuda --json` on each (ResNet-50 also with TF32 off) and writes into OUT_DIR:
one `<case>.check.json` per run (the check's own JSON, exit code and stderr), `environment.json`, and
`h200-check.json` / `h200-check.md` (the summary table). Fully offline: no weights or files are downloaded.
Needs torch, torchvision, transformers, onnx, onnxruntime-gpu and ortgpu's dependencies.

With ORTGPU_PACKAGE set to a folder holding libonnxruntime.so (an extracted GPU release, or the full GPU pack:
see tools/ort-gpu-pack.md), ResNet-50 is also checked through that library's C API
(`ortgpu check --package $ORTGPU_PACKAGE --ep cuda --json`), and its outputs are compared with the wheel's.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from ortgpu.atomic import atomic_write_text  # noqa: E402  (after the sys.path line above)

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing may be fetched: weights are random, configs built in code
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

SEQUENCE = 128


PACKAGE_ENV = "ORTGPU_PACKAGE"


@dataclass
class Case:
    name: str
    model: Path
    flags: list[str] = field(default_factory=list)
    expect: str = ""  # what the run should show, for the summary
    package: Path | None = None  # run through this C library (--package) instead of the wheel


def package_folder() -> tuple[Path | None, str | None]:
    """$ORTGPU_PACKAGE when it is a folder holding libonnxruntime.so, else None and why it is not used."""
    value = os.environ.get(PACKAGE_ENV)
    if not value:
        return None, f"{PACKAGE_ENV} is not set: no run through a package's C library"
    folder = Path(value)
    if not folder.is_dir():
        return None, f"{PACKAGE_ENV}={value} is not a folder"
    if not any(folder.rglob("libonnxruntime.so*")):
        return None, f"{PACKAGE_ENV}={value} holds no libonnxruntime.so (the --minimal GPU pack drops it)"
    return folder, None


def _export(model: Any, args: tuple[Any, ...], path: Path, inputs: list[str], outputs: list[str],
            dynamic_axes: dict[str, dict[int, str]] | None) -> str:  # fmt: skip
    """torch.onnx.export with the TorchScript exporter (opset 17); the dynamo exporter if that one is gone."""
    import torch

    common = {"input_names": inputs, "output_names": outputs, "opset_version": 17, "dynamic_axes": dynamic_axes}
    try:
        torch.onnx.export(model, args, str(path), do_constant_folding=True, dynamo=False, **common)
        return "torchscript"
    except TypeError:  # a torch without the dynamo switch: its only exporter is the TorchScript one
        torch.onnx.export(model, args, str(path), do_constant_folding=True, **common)
        return "torchscript"
    except (RuntimeError, NotImplementedError, ImportError) as exc:
        print(f"TorchScript exporter failed ({type(exc).__name__}: {exc}); trying dynamo", file=sys.stderr)
        torch.onnx.export(model, args, str(path), dynamo=True, **common)
        return "dynamo"


def export_resnet50(folder: Path) -> tuple[Path, str]:
    import torch
    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None).eval()
    path = folder / "resnet50.onnx"
    with torch.no_grad():
        exporter = _export(
            model,
            (torch.randn(1, 3, 224, 224),),
            path,
            ["image"],
            ["logits"],
            {"image": {0: "batch"}, "logits": {0: "batch"}},
        )
    return path, exporter


def export_bert(folder: Path, dynamic: bool) -> tuple[Path, str]:
    import torch
    from transformers import BertConfig, BertModel

    class Outputs(torch.nn.Module):
        """BertModel returning a plain tuple, which every exporter takes."""

        def __init__(self, bert: Any) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> tuple[Any, Any]:
            out = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids, return_dict=False
            )
            return out[0], out[1]

    torch.manual_seed(0)
    try:
        config = BertConfig(attn_implementation="eager")  # bert-base: 12 layers, hidden 768, 12 heads
    except TypeError:
        config = BertConfig()
    model = Outputs(BertModel(config)).eval()
    ids = torch.randint(0, config.vocab_size, (1, SEQUENCE), dtype=torch.int64)
    mask = torch.ones(1, SEQUENCE, dtype=torch.int64)
    types = torch.zeros(1, SEQUENCE, dtype=torch.int64)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = None
    if dynamic:
        axes = {n: {0: "batch", 1: "sequence"} for n in names}
        axes.update({"last_hidden_state": {0: "batch", 1: "sequence"}, "pooler_output": {0: "batch"}})
    path = folder / ("bert_base_dynamic.onnx" if dynamic else "bert_base.onnx")
    with torch.no_grad():
        exporter = _export(model, (ids, mask, types), path, names, ["last_hidden_state", "pooler_output"], axes)
    return path, exporter


def environment() -> dict[str, Any]:
    import onnxruntime as ort

    from ortgpu.host.nvml import query_driver

    driver = query_driver()
    info: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "onnxruntime": ort.__version__,
        "onnxruntime_providers": ort.get_available_providers(),
        "driver": driver.version,
        "driver_cuda": driver.cuda_driver_version,
        "gpus": [{"name": g.name, "sm": g.sm, "memory_bytes": g.memory_total_bytes} for g in driver.gpus],
    }
    try:
        from onnxruntime.capi import build_and_package_info

        info["onnxruntime_cuda_build"] = getattr(build_and_package_info, "cuda_version", None)
    except ImportError:
        info["onnxruntime_cuda_build"] = None
    for module in ("torch", "torchvision", "transformers", "onnx"):
        try:
            info[module] = __import__(module).__version__
        except ImportError:
            info[module] = None
    try:
        import torch

        info["torch_cuda"] = torch.version.cuda
        info["torch_cudnn"] = torch.backends.cudnn.version()
    except ImportError:
        pass
    return info


def run_check(case: Case, out: Path) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    package = ["--package", str(case.package)] if case.package is not None else []
    command = [sys.executable, "-m", "ortgpu", "check", str(case.model), "--ep", "cuda", "--json", *package]
    command += [flag.replace("OUT/", f"{out}/") for flag in case.flags]
    shown = ["--package", f"${PACKAGE_ENV}"] if package else []
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=540, check=False)
    record: dict[str, Any] = {
        "case": case.name,
        "command": "ortgpu check " + " ".join([case.model.name, "--ep", "cuda", "--json", *shown, *case.flags]),
        "exit_code": proc.returncode,
        "wall_s": time.perf_counter() - started,
        "stderr": proc.stderr[-4000:],
        "expect": case.expect,
    }
    try:
        record["check"] = json.loads(proc.stdout)
    except json.JSONDecodeError:
        record["check"] = None
        record["stdout"] = proc.stdout[-4000:]
    atomic_write_text(out / f"{case.name}.check.json", json.dumps(record, indent=1) + "\n")
    return record


def _row(record: dict[str, Any]) -> dict[str, Any]:
    doc = record.get("check") or {}
    result = doc.get("result")
    if result is None:
        error = (doc.get("error") or {}).get("message") or record.get("stderr", "").strip()[-300:]
        return {"case": record["case"], "exit": record["exit_code"], "error": error}
    placement = result.get("placement") or {}
    parity = result.get("parity") or {}
    outputs = parity.get("outputs") or []
    package = result.get("package") or {}
    return {
        "case": record["case"],
        "exit": record["exit_code"],
        "ran_through": f"C library {package['ort_version']} (C API {package['api_version']})"
        if package
        else f"onnxruntime wheel {result.get('ort_version')}",
        "providers": result.get("providers"),
        "placement": placement.get("compute_per_provider"),
        "memcpy": placement.get("memcpy_count"),
        "off_ep": [f"{n['op_type']} ({n['name']}) {n.get('reason')}" for n in placement.get("off_requested", [])],
        "off_reasons": placement.get("off_reasons"),
        "parity": parity.get("status"),
        "max_abs": {o["name"]: o.get("max_abs") for o in outputs},
        "cosine": {o["name"]: o.get("cosine") for o in outputs},
        "tolerance": {o["name"]: [o.get("precision"), o.get("atol"), o.get("rtol")] for o in outputs},
        "creation_ms": 1000 * result["timings"]["creation_s"],
        "first_run_ms": 1000 * result["timings"]["first_run_s"],
        "warm_median_ms": 1000 * (result["timings"]["warm_median_s"] or 0.0),
        "gpu_memory_mib": None
        if result["gpu_memory"]["used_bytes"] is None
        else result["gpu_memory"]["used_bytes"] / 2**20,
        "verdict": result.get("verdict"),
    }


def compare_saved(wheel: Path, package: Path) -> dict[str, Any]:
    """The package run's outputs against the wheel run's, output by output (both saved with --save-outputs)."""
    import numpy as np

    if not (wheel.is_file() and package.is_file()):
        return {"compared": False, "reason": "an outputs file is missing (a run failed)"}
    outputs: dict[str, Any] = {}
    with np.load(wheel, allow_pickle=False) as a, np.load(package, allow_pickle=False) as b:
        for name in sorted(set(a.files) & set(b.files)):
            x, y = a[name].astype(np.float64).ravel(), b[name].astype(np.float64).ravel()
            norms = float(np.linalg.norm(x) * np.linalg.norm(y))
            outputs[name] = {
                "max_abs": float(np.max(np.abs(x - y))) if x.size else 0.0,
                "cosine": float(np.dot(x, y) / norms) if norms else None,
                "identical": bool(np.array_equal(x, y)),
            }
    return {"compared": True, "outputs": outputs}


def markdown(env: dict[str, Any], rows: list[dict[str, Any]], cases: list[Case], exporters: dict[str, str],
             package_note: str | None = None, package_vs_wheel: dict[str, Any] | None = None) -> str:  # fmt: skip
    gpus = ", ".join(f"{g['name']} ({g['sm']})" for g in env.get("gpus", [])) or "none seen by NVML"
    lines = [
        "# `ortgpu check` on the CUDA EP: ResNet-50, BERT-base, a CPU-only op",
        "",
        f"{env['date']}; GPU {gpus}; driver {env.get('driver')} (CUDA {env.get('driver_cuda')}); onnxruntime "
        f"{env['onnxruntime']} (built for CUDA {env.get('onnxruntime_cuda_build')}); torch {env.get('torch')} "
        f"(CUDA {env.get('torch_cuda')}, cuDNN {env.get('torch_cudnn')}), transformers {env.get('transformers')}.",
        "",
        "Command: `python benchmarks/h200_check.py OUT_DIR`. Exporters: "
        + ", ".join(f"{k}: {v}" for k, v in exporters.items())
        + ". Random weights.",
        "",
        "| case | ran through | exit | compute nodes per EP | Memcpy | off the EP | parity | max abs | creation ms "
        "| first run ms | warm median ms | GPU MiB |",
        "|---|---|---:|---|---:|---|---|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['case']} | | {row['exit']} | error: {row['error']} | | | | | | | | |")
            continue
        off = "; ".join(row["off_ep"][:6]) + (" ..." if len(row["off_ep"]) > 6 else "") or "none"
        max_abs = ", ".join(f"{k} {v:.3g}" for k, v in row["max_abs"].items() if v is not None) or "–"
        memory = "–" if row["gpu_memory_mib"] is None else f"{row['gpu_memory_mib']:.0f}"
        lines.append(
            f"| {row['case']} | {row['ran_through']} | {row['exit']} | {row['placement']} | {row['memcpy']} | {off} "
            f"| {row['parity']} | {max_abs} | {row['creation_ms']:.0f} | {row['first_run_ms']:.1f} "
            f"| {row['warm_median_ms']:.2f} | {memory} |"
        )
    lines += ["", "What each case should show:", ""]
    for case in cases:
        flags = (["--package", f"${PACKAGE_ENV}"] if case.package is not None else []) + case.flags
        lines.append(f"- `{case.name}` (`{' '.join(flags) or 'no flags'}`): {case.expect}")
    lines += ["", "Verdicts:", ""]
    lines += [f"- `{r['case']}`: {r.get('verdict') or r.get('error')}" for r in rows]
    if package_note:
        lines += ["", f"Package run: {package_note}."]
    if package_vs_wheel and package_vs_wheel.get("compared"):
        lines += ["", "ResNet-50 outputs through the package's C library against the wheel's (same inputs):", ""]
        for name, numbers in package_vs_wheel["outputs"].items():
            cosine = "–" if numbers["cosine"] is None else f"{numbers['cosine']:.8f}"
            lines.append(
                f"- `{name}`: max abs {numbers['max_abs']:.3g}, cosine {cosine}, identical: {numbers['identical']}"
            )
    elif package_vs_wheel:
        lines += ["", f"Package outputs not compared with the wheel's: {package_vs_wheel.get('reason')}."]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    env = environment()
    atomic_write_text(out / "environment.json", json.dumps(env, indent=1) + "\n")

    from ortgpu.model.zoo import build_cpu_only_op_model

    exporters: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="ortgpu-h200-") as tmp:
        folder = Path(tmp)
        resnet, exporters["resnet50"] = export_resnet50(folder)
        bert, exporters["bert_base"] = export_bert(folder, dynamic=False)
        bert_dynamic, exporters["bert_base_dynamic"] = export_bert(folder, dynamic=True)
        cpu_only = build_cpu_only_op_model(folder / "cpu_only_op.onnx")
        mask = ["--range", "attention_mask=1,1"]
        package, package_note = package_folder()
        cases = [
            Case("resnet50", resnet, ["--strict-placement", "--warm-runs", "20", "--save-outputs",
                                      "OUT/resnet50.wheel.npz"],
                 "every compute node on CUDA (exit 0 under --strict-placement), parity within the TF32 defaults"),
            Case("resnet50-no-tf32", resnet, ["--ep-option", "use_tf32=0", "--warm-runs", "20"],
                 "same placement; TF32 off, so the tighter fp32-on-GPU tolerances apply"),
            Case("bert-base", bert, [*mask, "--strict-placement", "--warm-runs", "20"],
                 "fixed shapes: shape arithmetic constant-folded, every compute node on CUDA"),
            Case("bert-base-dynamic", bert_dynamic,
                 [*mask, "--dim", "batch=1", "--dim", f"sequence={SEQUENCE}", "--warm-runs", "20"],
                 "dynamic batch/sequence: ORT may keep small shape computations on CPU on purpose "
                 "(listed as cpu-preferred), parity within tolerance"),
            Case("cpu-only-op", cpu_only, ["--warm-runs", "20"],
                 "Det has no CUDA kernel: listed off the EP as no-kernel, Memcpy nodes > 0, exit 0"),
            Case("cpu-only-op-strict", cpu_only, ["--strict-placement"],
                 "the same model under --strict-placement: exit 1 naming Det"),
        ]  # fmt: skip
        if package is not None:
            cases.insert(1, Case(
                "resnet50-package", resnet,
                ["--strict-placement", "--warm-runs", "20", "--save-outputs", "OUT/resnet50.package.npz"],
                "the same through the package's own C library (C API, child process): every compute node on "
                "CUDA, parity against the CPU EP of that library, outputs matching the wheel's",
                package=package,
            ))  # fmt: skip
        records = [run_check(case, out) for case in cases]
    rows = [_row(r) for r in records]
    package_vs_wheel = (
        compare_saved(out / "resnet50.wheel.npz", out / "resnet50.package.npz") if package is not None else None
    )
    summary = {
        "environment": env,
        "exporters": exporters,
        "cases": rows,
        "package_note": package_note,
        "package_vs_wheel": package_vs_wheel,
    }
    atomic_write_text(out / "h200-check.json", json.dumps(summary, indent=1) + "\n")
    atomic_write_text(out / "h200-check.md", markdown(env, rows, cases, exporters, package_note, package_vs_wheel))
    for row in rows:
        print(f"{row['case']}: exit {row['exit']}: {row.get('verdict') or row.get('error')}")
    if package_note:
        print(package_note)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
