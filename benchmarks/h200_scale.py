"""`infer` and `bench --devices` on the H200: harness overhead against bare loops, interleaved rounds.

    python3 benchmarks/h200_scale.py OUT_DIR [--ep cuda] [--devices 0] [--batch 64] [--files 160] [--rounds 3]
                                            [--duration 2.0] [--work DIR]

1. exports ResNet-50 (torchvision, random weights, dynamic ``batch``; the export of h200_bench_fidelity.py) and
   writes ``ortgpu.toml`` with ``[inputs] shapes`` at the batch, so every verified session (infer's workers and
   the bare loop alike) is warmed up, cuDNN algorithms chosen, at the shape it will run;
2. writes a dataset: ``--files`` .npz files of ``--batch`` rows each (hard links of one file: the page cache
   holds one copy, every read still copies the bytes);
3. infer vs bare loop, ``--rounds`` interleaved rounds (A B, then B A, ...): ``run_infer`` (what `ortgpu infer
   MODEL --inputs DIR --out OUT --config ortgpu.toml --devices D` does: one local worker process per GPU,
   reading, running, writing outputs, manifest) against a bare loop of the same verified session and batch in
   this process (``ortgpu.load`` + ``session.run`` on one batch already in memory, as many runs as the dataset
   has batches). Target: infer >= 95% of the bare loop's rows/s (with several devices: of devices x the
   one-GPU bare loop). Then ``--ray``: the same infer on Ray Data actors, only when ``import ray`` works here;
   otherwise recorded as unavailable;
4. bench vs bench --devices, ``--rounds`` interleaved rounds: ``run_bench`` (mode run, the batch, ``--duration``
   s) in this process against ``run_bench_devices`` on ``--devices`` (one worker process per GPU). Target with one
   device: p50 and samples/s within 3%; with several: the aggregate and the per-GPU spread are recorded;
5. writes OUT_DIR/scale.json and OUT_DIR/scale.md (the exact command, GPU, driver, ORT / CUDA / cuDNN versions).

About 2 minutes on one H200 (export ~10 s, sessions ~5 s each, 3 rounds). Dry run without a GPU: ``--ep cpu``
(the built-in demo model, batch 8, ``--devices cpu:1``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

TARGET_INFER = 0.95
TARGET_BENCH = 0.03


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def export_model(work: Path, ep: str) -> tuple[Path, str, tuple[int, ...]]:
    """The model, its input name and one sample's shape."""
    if ep == "cpu":
        from ortgpu.model.zoo import build_demo_model

        return build_demo_model(work / "demo.onnx"), "image", (3, 32, 32)
    from h200_bench_fidelity import export_resnet50

    return export_resnet50(work / "resnet50.onnx"), "input", (3, 224, 224)


def write_config(work: Path, name: str, shape: tuple[int, ...]) -> Path:
    path = work / "ortgpu.toml"
    dims = "x".join(str(d) for d in shape)
    path.write_text(f'[inputs]\nshapes = {{ {name} = "{dims}" }}\n')
    return path


def write_dataset(work: Path, name: str, sample: tuple[int, ...], batch: int, files: int) -> Path:
    folder = work / "dataset"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    first = folder / "b00000.npz"
    np.savez(first, **{name: rng.standard_normal((batch, *sample)).astype(np.float32)})
    for i in range(1, files):
        os.link(first, folder / f"b{i:05d}.npz")
    return folder


def infer_once(model: Path, config: Path, data: Path, out: Path, ep: str, devices: str, batch: int, ray: bool) -> dict:
    from ortgpu.config import ExecutionProvider
    from ortgpu.infer.run import InferRequest, run_infer
    from ortgpu.scale.devices import parse_devices

    shutil.rmtree(out, ignore_errors=True)
    count = len(devices.split(",")) if not devices.startswith("cpu") else int(devices.split(":")[1])
    request = InferRequest(
        model=model,
        inputs=data,
        out=out,
        config=config,
        ep=ExecutionProvider.parse(ep),
        devices=None if ray else parse_devices(devices),
        batch=batch,
        ray=ray,
        workers=count if ray else None,
    )
    result = run_infer(request)
    if result.bad or result.written != result.items:
        raise RuntimeError(f"infer did not write every output: {result.bad[:3]}")
    return {
        "rows_per_s": result.rows_per_s,
        "rows": result.rows,
        "compute_s": result.compute_s,
        "elapsed_s": result.elapsed_s,
        "tasks": result.tasks,
        "stage_s": dict(result.stage_s),
        "workers": [
            {
                "name": w.name,
                "device": w.device_id,
                "cuda_visible_devices": w.cuda_visible_devices,
                "session_s": w.session_s,
            }
            for w in result.workers
        ],
    }


def bare_loop(model: Path, config: Path, ep: str, name: str, sample: tuple[int, ...], batch: int, runs: int) -> dict:
    """The same verified session (ortgpu.load with the same config) and batch, run ``runs`` times back to back."""
    from ortgpu.session import load

    feeds = {name: np.random.default_rng(1).standard_normal((batch, *sample)).astype(np.float32)}
    with load(model, config, ep=ep) as session:
        ort = session.ort
        start = time.perf_counter()
        for _ in range(runs):
            ort.run(None, feeds)
        seconds = time.perf_counter() - start
    return {"rows_per_s": runs * batch / seconds, "rows": runs * batch, "seconds": seconds}


def bench_pair(model: Path, config: Path, ep: str, devices: str, batch: int, duration: float, first: str) -> dict:
    from ortgpu.bench.devices import run_bench_devices
    from ortgpu.bench.modes import BenchMode
    from ortgpu.bench.runner import BenchRequest, run_bench
    from ortgpu.config import ExecutionProvider
    from ortgpu.scale.devices import parse_devices

    request = BenchRequest(
        model=model,
        ep=ExecutionProvider.parse(ep),
        modes=(BenchMode.RUN,),
        batches=(batch,),
        duration_s=duration,
        config=config,
    )
    values: dict = {}
    for side in ("bench", "devices") if first == "bench" else ("devices", "bench"):
        if side == "bench":
            result = run_bench(request)
            stats = result.measured_cases[0].stats
            values["bench"] = {"p50_ms": stats.p50_ms, "samples_per_s": stats.throughput}
            values["environment"] = result.environment
        else:
            result = run_bench_devices(request, parse_devices(devices))
            case = result.cases[0]
            values["devices"] = {
                "p50_ms": list(case.p50_ms),
                "per_worker_samples_per_s": list(case.per_worker),
                "aggregate_samples_per_s": case.throughput,
                "spread": case.spread,
                "synchronised": case.synchronised,
                "start_spread_ms": case.start_spread_ms,
                "gpus": [
                    {
                        "worker": run.slot.label,
                        "cuda_visible_devices": run.result.environment.cuda_visible_devices,
                        "uuid": run.result.environment.gpu.uuid if run.result.environment.gpu else None,
                        "pci_bus": run.result.environment.gpu.pci_bus_id if run.result.environment.gpu else None,
                    }
                    for run in result.runs
                ],
            }
    return values


def markdown(report: dict) -> str:
    lines = [
        "# `ortgpu infer` and `bench --devices` against bare loops",
        "",
        f"- command: `{report['command']}`",
        f"- date: {report['date']}; GPU: {report['gpu']}; driver {report['driver']} (CUDA {report['cuda_driver']})",
        f"- ONNX Runtime {report['ort_version']} (built with CUDA {report['ort_cuda']}, cuDNN {report['ort_cudnn']}); "
        f"Python {report['python']}; devices `{report['devices']}`; batch {report['batch']}, {report['files']} files",
        "",
        "## infer (local workers) vs a bare loop of the same verified session and batch",
        "",
        "| round | ran first | infer rows/s | bare rows/s | ratio |",
        "|---|---|---|---|---|",
    ]
    for i, r in enumerate(report["infer"]["rounds"]):
        first = "infer" if i % 2 == 0 else "bare"  # A B, then B A: an even number of rounds balances the order
        lines.append(
            f"| {i + 1} | {first} | {r['infer']['rows_per_s']:,.0f} | {r['bare']['rows_per_s']:,.0f} "
            f"| {r['ratio']:.3f} |"
        )
    infer = report["infer"]
    lines += [
        "",
        f"median ratio **{infer['median_ratio']:.3f}** (target >= {TARGET_INFER} x {infer['devices']} devices "
        f"of one bare loop): **{'met' if infer['met'] else 'NOT met'}**",
        "",
        *stage_table(report),
        f"Ray: {report['ray']['status']}"
        + (f", rows/s {report['ray']['rows_per_s']:,.0f}" if report["ray"].get("rows_per_s") else ""),
        "",
        "## bench vs bench --devices",
        "",
        "| round | bench p50 ms | --devices p50 ms | bench samples/s | --devices samples/s (sum) | in step |",
        "|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(report["bench"]["rounds"]):
        d = r["devices"]
        p50s = ", ".join(f"{v:.3f}" for v in d["p50_ms"] if v is not None)
        lines.append(
            f"| {i + 1} | {r['bench']['p50_ms']:.3f} | {p50s} | {r['bench']['samples_per_s']:,.0f} | "
            f"{d['aggregate_samples_per_s']:,.0f} | {d['synchronised']} |"
        )
    bench = report["bench"]
    lines += [
        "",
        f"median p50 delta {bench['p50_delta']:+.2%}, samples/s ratio (aggregate / one) {bench['throughput_ratio']:.3f}"
        + (
            f": **{'met' if bench['met'] else 'NOT met'}** (within {TARGET_BENCH:.0%})"
            if bench["met"] is not None
            else ""
        ),
        "",
        f"elapsed {report['elapsed_s']:.0f} s",
    ]
    return "\n".join(lines) + "\n"


def stage_table(report: dict) -> list[str]:
    """Per-stage ms per task (summed over the workers' tasks / tasks) next to the bare loop's ms per batch.

    read (reader threads) and write (writer threads) overlap the session; ``starved`` is the session thread
    waiting for input, and ``run`` above the bare loop's time is the session slowed by what runs beside it."""
    lines = [
        "## where infer's time goes (ms per task, from the worker)",
        "",
        "| round | read | starved | run | write | infer wall / task | bare / batch |",
        "|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(report["infer"]["rounds"]):
        infer, tasks = r["infer"], max(r["infer"].get("tasks") or 0, 1)
        stages = infer.get("stage_s") or {}
        cells = " | ".join(f"{1e3 * stages.get(k, 0.0) / tasks:.1f}" for k in ("read", "starved", "run", "write"))
        bare = 1e3 * r["bare"]["seconds"] / max(r["bare"]["rows"] / report["batch"], 1)
        lines.append(f"| {i + 1} | {cells} | {1e3 * infer['compute_s'] / tasks:.1f} | {bare:.1f} |")
    return [*lines, ""]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--ep", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--devices", help="default: 0 on cuda, cpu:1 on cpu")
    parser.add_argument("--batch", type=int)
    parser.add_argument("--files", type=int, help="dataset files of --batch rows (default 160 on cuda, 40 on cpu)")
    parser.add_argument(
        "--rounds",
        type=int,
        default=4,
        help="interleaved rounds (A B, B A, ...); keep it even so each side runs first as often",
    )
    parser.add_argument("--duration", type=float, default=2.0, help="bench: timed seconds per side and round")
    parser.add_argument("--work", type=Path)
    args = parser.parse_args()
    gpu = args.ep == "cuda"
    devices = args.devices or ("0" if gpu else "cpu:1")
    batch = args.batch or (64 if gpu else 8)
    files = args.files or (160 if gpu else 40)
    count = len(devices.split(",")) if not devices.startswith("cpu") else int(devices.split(":")[1])
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    import onnxruntime as ort

    from ortgpu.host.nvml import query_driver
    from ortgpu.results import to_jsonable

    driver = query_driver()
    work = args.work or Path(tempfile.mkdtemp(prefix="ortgpu-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    model, name, sample = export_model(work, args.ep)
    config = write_config(work, name, (batch, *sample))
    data = write_dataset(work, name, sample, batch, files)
    log(f"model {model.name}, dataset {files} x {batch} rows, devices {devices}")

    rounds = []
    for index in range(args.rounds):
        values = {}
        order = ("infer", "bare") if index % 2 == 0 else ("bare", "infer")
        for side in order:
            if side == "infer":
                values["infer"] = infer_once(model, config, data, work / "out", args.ep, devices, batch, ray=False)
            else:
                values["bare"] = bare_loop(model, config, args.ep, name, sample, batch, files)
        values["ratio"] = values["infer"]["rows_per_s"] / (count * values["bare"]["rows_per_s"])
        rounds.append(values)
        log(
            f"infer round {index + 1}: {values['infer']['rows_per_s']:,.0f} vs bare "
            f"{values['bare']['rows_per_s']:,.0f} rows/s: {values['ratio']:.3f}"
        )
    median_ratio = statistics.median(r["ratio"] for r in rounds)
    ray_report: dict = {}
    try:
        import ray  # noqa: F401
    except ImportError as exc:
        ray_report = {"status": f"ray unavailable ({exc})"}
    else:
        try:
            import ray as ray_module

            ray_module.init(include_dashboard=False, log_to_driver=False, logging_level="ERROR")
            value = infer_once(model, config, data, work / "out-ray", args.ep, devices, batch, ray=True)
            ray_report = {"status": "ran", **value}
            ray_module.shutdown()
        except Exception as exc:  # recorded, the rest of the evidence still counts
            ray_report = {"status": f"ray failed: {type(exc).__name__}: {exc}"}
    log(f"ray: {ray_report['status']}")

    bench_rounds = []
    environment = None
    for index in range(args.rounds):
        values = bench_pair(
            model, config, args.ep, devices, batch, args.duration, "bench" if index % 2 == 0 else "devices"
        )
        environment = values.pop("environment")
        bench_rounds.append(values)
        log(
            f"bench round {index + 1}: {values['bench']['samples_per_s']:,.0f} vs --devices "
            f"{values['devices']['aggregate_samples_per_s']:,.0f} samples/s"
        )
    p50_delta = statistics.median(
        (statistics.median(v for v in r["devices"]["p50_ms"] if v is not None) - r["bench"]["p50_ms"])
        / r["bench"]["p50_ms"]
        for r in bench_rounds
    )
    ratio = statistics.median(
        r["devices"]["aggregate_samples_per_s"] / r["bench"]["samples_per_s"] for r in bench_rounds
    )
    report = {
        "command": "python3 benchmarks/h200_scale.py " + " ".join(sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "gpu": driver.gpus[0].name if driver.gpus else "no GPU (dry run)",
        "gpus": [g.name for g in driver.gpus],
        "driver": driver.version,
        "cuda_driver": driver.cuda_driver_version,
        "ort_version": ort.__version__,
        "ort_cuda": getattr(environment, "ort_cuda_version", None),
        "ort_cudnn": getattr(environment, "ort_cudnn_version", None),
        "loaded_libraries": list(getattr(environment, "loaded_libraries", ())),
        "python": platform.python_version(),
        "devices": devices,
        "batch": batch,
        "files": files,
        "infer": {
            "rounds": rounds,
            "median_ratio": median_ratio,
            "devices": count,
            "met": median_ratio >= TARGET_INFER,
        },
        "ray": ray_report,
        "bench": {
            "rounds": bench_rounds,
            "p50_delta": p50_delta,
            "throughput_ratio": ratio,
            "met": (abs(p50_delta) <= TARGET_BENCH and abs(ratio - 1) <= TARGET_BENCH) if count == 1 else None,
        },
        "elapsed_s": time.perf_counter() - started,
    }
    (args.out / "scale.json").write_text(json.dumps(to_jsonable(report), indent=1, default=str))
    text = markdown(report)
    (args.out / "scale.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
