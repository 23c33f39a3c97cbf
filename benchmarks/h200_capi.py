"""ResNet-50 through an ORT package's own C library (ortgpu's C-API runner) and through the Python wheel, compared.

The question: does `check`/`bench --package` measure what a C/C++ application linking libonnxruntime gets, and
does that library agree with the wheel of the same release? One ResNet-50 (torchvision, random weights, exported
here to ONNX opset 17, batch 1) is run:

1. through the C library on the requested EP (default CUDA), in ortgpu's child process: placement of every node
   (ORT's verbose log), first-run time, then `--iterations` timed runs after `--warmup`;
2. through the same C library on the CPU EP: the parity reference of that library;
3. through the onnxruntime wheel in this process on the same EP: the same warm-up and timed runs.

Timed runs: the C path times the `Run` call (outputs copied to the host by ORT, then released), as a C/C++
application pays it; the wheel path times `session.run(None, feeds)` (numpy in, numpy out). Both are host-clock
`perf_counter_ns` around one call, after the device finished (the output copy synchronises).

Usage on the H200, after installing the *full* pack (it keeps libonnxruntime.so) as tools/ort-gpu-pack.md says:
    PYTHONPATH=/tmp/site:$PWD/src python benchmarks/h200_capi.py $OUT
Options: --library PATH (default: capi/ of the installed onnxruntime), --model PATH (default: exported to
/tmp/models/resnet50.onnx), --ep cuda|cpu, --iterations 200, --warmup 20. Writes
`<date>-<gpu>-capi.json` and `.md` into the folder given.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import importlib.util
import json
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

EXPORT = r"""
import sys, torch, torchvision
torch.manual_seed(0)
model = torchvision.models.resnet50(weights=None).eval()
x = torch.randn(1, 3, 224, 224)
names = dict(input_names=["input"], output_names=["logits"],
             dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
try:
    torch.onnx.export(model, (x,), sys.argv[1], opset_version=17, dynamo=False, **names)
    print("torchscript exporter, opset 17")
except Exception as exc:  # torch builds without the TorchScript exporter
    print("torchscript export failed:", repr(exc)[:300])
    torch.onnx.export(model, (x,), sys.argv[1], opset_version=18, dynamo=True, external_data=False, **names)
    print("dynamo exporter, opset 18")
"""


def export_resnet50(path: Path) -> str:
    if path.is_file():
        return "existing file"
    path.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, "-c", EXPORT, str(path)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"export failed: {done.stderr.strip()[-800:]}")
    return done.stdout.strip().splitlines()[-1]


def stats_ms(latencies_ns: list[int] | tuple[int, ...]) -> dict[str, float]:
    values = np.asarray(latencies_ns, dtype=np.float64) / 1e6
    return {
        "n": int(values.size),
        "p50_ms": float(np.percentile(values, 50)),
        "p90_ms": float(np.percentile(values, 90)),
        "p99_ms": float(np.percentile(values, 99)),
        "mean_ms": float(values.mean()),
        "std_ms": float(values.std()),
        "min_ms": float(values.min()),
        "max_ms": float(values.max()),
    }


def parity(a: np.ndarray, b: np.ndarray) -> dict[str, float | bool]:
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return {
        "max_abs": float(np.max(np.abs(a64 - b64))),
        "rel_l2": float(np.linalg.norm(a64 - b64) / max(np.linalg.norm(b64), 1e-30)),
        "top1_equal": bool(np.array_equal(a.argmax(axis=-1), b.argmax(axis=-1))),
    }


def model_input(path: Path, batch: int = 1) -> tuple[str, tuple[int, ...]]:
    """The first input's name and shape, symbolic dims (the batch) set to ``batch``."""
    import onnx

    graph_input = onnx.load(str(path), load_external_data=False).graph.input[0]
    dims = graph_input.type.tensor_type.shape.dim
    return graph_input.name, tuple(d.dim_value if d.HasField("dim_value") else batch for d in dims)


def default_library() -> Path:
    spec = importlib.util.find_spec("onnxruntime")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("no onnxruntime installed: give --library")
    return Path(next(iter(spec.submodule_search_locations))) / "capi"


def wheel_run(model: Path, feeds: dict[str, np.ndarray], ep: str, warmup: int, iterations: int) -> dict[str, Any]:
    import onnxruntime as ort

    providers: list[Any] = ["CPUExecutionProvider"]
    if ep == "cuda":
        providers = [("CUDAExecutionProvider", {"device_id": "0"}), "CPUExecutionProvider"]
    started = time.perf_counter()
    session = ort.InferenceSession(str(model), providers=providers)
    creation_s = time.perf_counter() - started
    active = session.get_providers()
    started = time.perf_counter()
    outputs = session.run(None, feeds)
    first_run_s = time.perf_counter() - started
    for _ in range(warmup):
        session.run(None, feeds)
    clock = time.perf_counter_ns
    latencies = []
    for _ in range(iterations):
        begin = clock()
        session.run(None, feeds)
        latencies.append(clock() - begin)
    return {
        "version": ort.__version__,
        "active_providers": active,
        "session_creation_s": creation_s,
        "first_run_s": first_run_s,
        "latency": stats_ms(latencies),
        "output": outputs[0],
    }


def gpu_facts() -> dict[str, Any]:
    try:
        from ortgpu.host.nvml import query_driver
    except ImportError:
        return {}
    driver = query_driver()
    return {
        "driver": driver.version,
        "cuda_driver_version": driver.cuda_driver_version,
        "gpus": [g.name for g in driver.gpus],
        "error": driver.error,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="folder for the JSON and .md results")
    parser.add_argument("--library", type=Path, default=None, help="libonnxruntime file, folder or archive")
    parser.add_argument("--model", type=Path, default=Path("/tmp/models/resnet50.onnx"))
    parser.add_argument("--ep", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--batch", type=int, default=1, help="batch size (the model's symbolic leading dim)")
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args(argv)

    from ortgpu.capi.runner import run_package_model

    args.out.mkdir(parents=True, exist_ok=True)
    exporter = export_resnet50(args.model)
    library = args.library or default_library()
    model_sha = hashlib.sha256(args.model.read_bytes()).hexdigest()
    input_name, shape = model_input(args.model, args.batch)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    feeds = {input_name: x}

    # check-like: placement from ORT's verbose log (which slows session creation: not timed from this run)
    checked = run_package_model(library, args.model, feeds, args.ep, profile=True, timeout_s=300)
    # bench-like: a fresh session without logging or profiling, then warm-up and timed runs
    capi = run_package_model(
        library,
        args.model,
        feeds,
        args.ep,
        iterations=args.iterations,
        warmup=args.warmup,
        profile=False,
        timeout_s=540,
    )
    capi_cpu = run_package_model(library, args.model, feeds, "cpu", profile=False, timeout_s=300)
    wheel = wheel_run(args.model, feeds, args.ep, args.warmup, args.iterations)

    capi_out = next(iter(capi.outputs.values()))
    placement = checked.placement
    result = {
        "question": "C library (ortgpu C-API runner) vs wheel: same outputs, same speed?",
        "date": datetime.date.today().isoformat(),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": {"platform": platform.platform(), "python": platform.python_version(), **gpu_facts()},
        "model": {
            "name": args.model.stem,
            "path": str(args.model),
            "sha256": model_sha,
            "exporter": exporter,
            "input": list(x.shape),
        },
        "ep": args.ep,
        "warmup": args.warmup,
        "iterations": args.iterations,
        "c_library": {
            "library": str(capi.library),
            "version": capi.ort_version,
            "build_info": capi.build_info,
            "api_version": capi.api_version,
            "provider_options": capi.provider_options,
            "providers_used": list(checked.providers_used),
            "placement": placement.summary() if placement else None,
            "placement_all_on_requested": placement.all_on_requested if placement else None,
            "compute_per_provider": placement.compute_per_provider if placement else None,
            "memcpy_nodes": len(placement.memcpy_nodes) if placement else None,
            "off_requested": [f"{n.op_type} ({n.name})" for n in placement.off_requested] if placement else None,
            "session_creation_s": capi.session_creation_s,
            "provider_setup_s": capi.provider_setup_s,
            "first_run_s": capi.first_run_s,
            "latency": stats_ms(capi.latencies_ns),
            "warnings": [r.one_line() for r in (*checked.log, *capi.log)][:20],
            "parity_check_run_vs_bench_run": parity(next(iter(checked.outputs.values())), capi_out),
        },
        "wheel": {k: v for k, v in wheel.items() if k != "output"},
        "parity": {
            f"c_library_{args.ep}_vs_c_library_cpu": parity(capi_out, next(iter(capi_cpu.outputs.values()))),
            f"wheel_{args.ep}_vs_c_library_{args.ep}": parity(wheel["output"], capi_out),
        },
    }
    result["p50_ratio_c_library_over_wheel"] = result["c_library"]["latency"]["p50_ms"] / wheel["latency"]["p50_ms"]
    result["ortgpu_bench_package"] = bench_package(
        library, args.model, args.ep, args.iterations, args.warmup, args.batch
    )
    gpu = (result["machine"].get("gpus") or ["cpu"])[0].split()[-1].lower() if args.ep == "cuda" else "cpu"
    stem = f"{result['date']}-{gpu}-capi" + (f"-b{args.batch}" if args.batch != 1 else "")
    (args.out / f"{stem}.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (args.out / f"{stem}.md").write_text(markdown(result) + markdown_bench_package(result), encoding="utf-8")
    print(markdown(result) + markdown_bench_package(result))
    return 0


def markdown(r: dict[str, Any]) -> str:
    c, w = r["c_library"], r["wheel"]
    rows = [
        ("ORT version", c["version"], w["version"]),
        ("providers", ", ".join(c["providers_used"]), ", ".join(w["active_providers"])),
        ("session creation (s)", f"{c['session_creation_s']:.3f}", f"{w['session_creation_s']:.3f}"),
        ("first run (ms)", f"{c['first_run_s'] * 1e3:.2f}", f"{w['first_run_s'] * 1e3:.2f}"),
    ]
    for key in ("p50_ms", "p90_ms", "p99_ms", "mean_ms", "min_ms"):
        rows.append((key.replace("_ms", " (ms)"), f"{c['latency'][key]:.3f}", f"{w['latency'][key]:.3f}"))
    lines = [
        f"# {r['model']['name']} {r['model']['input']}, {r['ep']} EP: C library (C-API runner) vs wheel, {r['date']}",
        "",
        f"Machine: {r['machine'].get('gpus')}, driver {r['machine'].get('driver')}, {r['machine']['platform']}.",
        f"Command: `{r['command']}`; {r['warmup']} warm-up runs, {r['iterations']} timed runs.",
        "",
        "| | C library | wheel |",
        "|---|---|---|",
        *[f"| {a} | {b} | {c_} |" for a, b, c_ in rows],
        "",
        f"Placement (C library): {c['placement']}.",
        f"p50 ratio C library / wheel: {r['p50_ratio_c_library_over_wheel']:.3f}.",
        "",
        "| parity | max abs | rel L2 | top-1 equal |",
        "|---|---|---|---|",
    ]
    for name, p in r["parity"].items():
        lines.append(f"| {name} | {p['max_abs']:.3g} | {p['rel_l2']:.3g} | {p['top1_equal']} |")
    return "\n".join(lines) + "\n"


def bench_package(library: Path, model: Path, ep: str, iterations: int, warmup: int, batch: int) -> dict[str, Any]:
    """`ortgpu bench MODEL --package LIBRARY` as a user runs it (its own inputs, same shape), its p50 and more."""
    command = [
        sys.executable, "-m", "ortgpu", "bench", str(model), "--package", str(library), "--ep", ep,
        "--iterations", str(iterations), "--warmup", str(warmup), "--batch", str(batch), "--json",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    shown = " ".join(["ortgpu", *command[3:]])
    if done.returncode != 0:
        return {"command": shown, "exit_code": done.returncode, "error": (done.stderr or done.stdout).strip()[-800:]}
    bench = json.loads(done.stdout)["result"]
    case = bench["cases"][0]
    return {
        "command": shown,
        "exit_code": 0,
        "ort_version": bench["package"]["ort_version"],
        "library": bench["package"]["library"],
        "active_providers": bench["environment"]["active_providers"],
        "session_creation_s": case["cold"]["session_creation_s"],
        "first_run_ms": case["cold"]["first_run_ms"],
        "latency": {k: case["stats"][k] for k in ("count", "p50_ms", "p90_ms", "p99_ms", "mean_ms", "min_ms")},
        "stable": case["stats"]["stable"],
    }


def markdown_bench_package(r: dict[str, Any]) -> str:
    b = r.get("ortgpu_bench_package") or {}
    if b.get("exit_code") != 0:
        return f"\n`{b.get('command')}` failed (exit {b.get('exit_code')}): {b.get('error')}\n"
    c, w = r["c_library"]["latency"], r["wheel"]["latency"]
    return "\n".join(
        [
            "",
            f"`{b['command']}` (ORT {b['ort_version']}, {', '.join(b['active_providers'])}):",
            "",
            "| p50 (ms) | C library (runner) | wheel | ortgpu bench --package |",
            "|---|---|---|---|",
            f"| {r['model']['name']} {r['model']['input']} | {c['p50_ms']:.3f} | {w['p50_ms']:.3f} | "
            f"{b['latency']['p50_ms']:.3f} |",
            "",
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
