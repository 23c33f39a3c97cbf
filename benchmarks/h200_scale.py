"""`infer` and `bench --devices` on the H200: harness overhead against bare loops, interleaved rounds.

    python3 benchmarks/h200_scale.py OUT_DIR [--ep cuda] [--devices 0] [--batch 64] [--files 160] [--rounds 3]
                                            [--duration 2.0] [--work DIR] [--only infer|ray|bench ...]

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
   one-GPU bare loop). Then ``--ray``: the same infer on Ray Data actors (a local Ray cluster started here with
   ``num_gpus`` = the devices, one actor per GPU), only when ``import ray`` works here, otherwise recorded as
   unavailable. Its rows/s from start to end includes starting the actors and their sessions; its steady rows/s
   (from the first task done to the last) is compared with the bare loop (``--only ray``: a bare loop run before
   and after it);
4. bench vs bench --devices, ``--rounds`` interleaved rounds: ``run_bench`` (mode run, the batch, ``--duration``
   s) in this process against ``run_bench_devices`` on ``--devices`` (one worker process per GPU). Target with one
   device: p50 and samples/s within 3%; with several: the aggregate and the per-GPU spread are recorded;
5. writes OUT_DIR/scale.json and OUT_DIR/scale.md (the exact command, GPU, driver, ORT / CUDA / cuDNN versions).

About 2 minutes on one H200 (export ~10 s, sessions ~5 s each, 3 rounds); ``--only ray`` about 1 minute (Ray
installed by benchmarks/h200_ray_install.sh). Dry run without a GPU: ``--ep cpu`` (the built-in demo model,
batch 8, ``--devices cpu:1``).
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
    marks: list[tuple[float, float]] = []  # (time, fraction of the items done) at each finished task

    def progress(message: str, fraction: float | None = None) -> None:
        if fraction:
            marks.append((time.perf_counter(), fraction))

    result = run_infer(request, progress)
    if result.bad or result.written != result.items:
        raise RuntimeError(f"infer did not write every output: {result.bad[:3]}")
    return {
        "rows_per_s": result.rows_per_s,
        "rows": result.rows,
        "compute_s": result.compute_s,
        "elapsed_s": result.elapsed_s,
        "tasks": result.tasks,
        "steady_rows_per_s": steady(marks, result.rows),
        "replaced": result.replaced,
        "retried": result.retried,
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


def steady(marks: list[tuple[float, float]], rows: int) -> float | None:
    """Rows/s from the first task done to the last: without starting the workers and their sessions."""
    if len(marks) < 2 or marks[-1][0] <= marks[0][0]:
        return None
    return (marks[-1][1] - marks[0][1]) * rows / (marks[-1][0] - marks[0][0])


def ray_section(
    model: Path, config: Path, data: Path, work: Path, ep: str, devices: str, batch: int, bare, rounds: int
) -> dict:
    """The infer on Ray Data actors of a local cluster (``num_gpus`` = the devices), against the bare loop, in
    ``rounds`` rounds on one cluster: bare, Ray, bare, Ray, ..., bare; each Ray round is compared with the mean of
    the bare loops just before and after it (``bare()`` runs one and gives its rows/s)."""
    try:
        import ray
    except ImportError as exc:
        return {"status": f"ray unavailable ({exc})"}
    gpu = ep != "cpu"
    count = len(devices.split(",")) if gpu else int(devices.split(":")[1])
    report: dict = {"ray_version": ray.__version__}
    try:
        import pyarrow

        report["pyarrow_version"] = pyarrow.__version__
        before = bare()
        started = time.perf_counter()
        ray.init(
            num_gpus=count if gpu else 0,
            object_store_memory=2 << 30,  # the rows are task descriptions: small
            include_dashboard=False,
            log_to_driver=False,
            logging_level="ERROR",
        )
        report["init_s"] = time.perf_counter() - started
        report["cluster"] = {k: v for k, v in ray.cluster_resources().items() if k in ("CPU", "GPU")}
        report["rounds"] = []
        for _ in range(max(1, rounds)):
            value = infer_once(model, config, data, work / "out-ray", ep, devices, batch, ray=True)
            after = bare()
            reference = (before + after) / 2
            steady = value.get("steady_rows_per_s")
            report["rounds"].append(
                {
                    **value,
                    "bare_rows_per_s": reference,
                    "steady_ratio": steady / (count * reference) if steady else None,
                }
            )
            before = after
        ray.shutdown()
        first = report["rounds"][0]
        ratios = [r["steady_ratio"] for r in report["rounds"] if r["steady_ratio"]]
        report.update(
            status="ran",
            workers=first.get("workers", []),
            replaced=sum(r.get("replaced", 0) for r in report["rounds"]),
            retried=sum(r.get("retried", 0) for r in report["rounds"]),
            steady_ratio=statistics.median(ratios) if ratios else None,
        )
    except Exception as exc:  # recorded, the rest of the evidence still counts
        report["status"] = f"ray failed: {type(exc).__name__}: {exc}"
    return report


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
        f"- parts: {', '.join(report['parts'])}",
        "",
    ]
    infer = report["infer"]
    if infer["rounds"]:
        lines += [
            "## infer (local workers) vs a bare loop of the same verified session and batch",
            "",
            "| round | ran first | infer rows/s | bare rows/s | ratio |",
            "|---|---|---|---|---|",
        ]
        for i, r in enumerate(infer["rounds"]):
            first = "infer" if i % 2 == 0 else "bare"  # A B, then B A: an even number of rounds balances the order
            lines.append(
                f"| {i + 1} | {first} | {r['infer']['rows_per_s']:,.0f} | {r['bare']['rows_per_s']:,.0f} "
                f"| {r['ratio']:.3f} |"
            )
        lines += [
            "",
            f"median ratio **{infer['median_ratio']:.3f}** (target >= {TARGET_INFER} x {infer['devices']} devices "
            f"of one bare loop): **{'met' if infer['met'] else 'NOT met'}**",
            "",
            *stage_table(report),
        ]
    lines += [*ray_lines(report["ray"]), ""]
    bench = report["bench"]
    if bench["rounds"]:
        lines += [
            "## bench vs bench --devices",
            "",
            "| round | bench p50 ms | --devices p50 ms | bench samples/s | --devices samples/s (sum) | in step |",
            "|---|---|---|---|---|---|",
        ]
        for i, r in enumerate(bench["rounds"]):
            d = r["devices"]
            p50s = ", ".join(f"{v:.3f}" for v in d["p50_ms"] if v is not None)
            lines.append(
                f"| {i + 1} | {r['bench']['p50_ms']:.3f} | {p50s} | {r['bench']['samples_per_s']:,.0f} | "
                f"{d['aggregate_samples_per_s']:,.0f} | {d['synchronised']} |"
            )
        lines += [
            "",
            f"median p50 delta {bench['p50_delta']:+.2%}, samples/s ratio (aggregate / one) "
            f"{bench['throughput_ratio']:.3f}"
            + (
                f": **{'met' if bench['met'] else 'NOT met'}** (within {TARGET_BENCH:.0%})"
                if bench["met"] is not None
                else ""
            ),
            "",
        ]
    lines.append(f"elapsed {report['elapsed_s']:.0f} s")
    return "\n".join(lines) + "\n"


def ray_lines(ray: dict) -> list[str]:
    lines = ["## infer on Ray Data actors (a local cluster here)", ""]
    if ray.get("status") != "ran":
        return [*lines, f"Ray: {ray.get('status')}"]
    workers = ", ".join(
        f"{w['name']} (CUDA_VISIBLE_DEVICES={w['cuda_visible_devices']}, session {w['session_s']:.1f} s)"
        for w in ray.get("workers", [])
    )
    lines += [
        f"Ray {ray['ray_version']} (pyarrow {ray.get('pyarrow_version')}), cluster {ray.get('cluster')}, "
        f"ray.init {ray.get('init_s', 0):.1f} s; actors of the first round: {workers}",
        "",
        "| round | rows | start to end rows/s (actors and sessions included) | steady rows/s (first task done to "
        "last) | bare loop rows/s (before and after) | steady / bare |",
        "|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(ray["rounds"]):
        steady, bare, ratio = r.get("steady_rows_per_s"), r.get("bare_rows_per_s"), r.get("steady_ratio")
        lines.append(
            f"| {i + 1} | {r['rows']:,} | {r['rows_per_s']:,.0f} | {f'{steady:,.0f}' if steady else '-'} | "
            f"{f'{bare:,.0f}' if bare else '-'} | {f'{ratio:.3f}' if ratio else '-'} |"
        )
    if ray.get("steady_ratio"):
        lines += ["", f"median steady / bare: **{ray['steady_ratio']:.3f}**"]
    if ray.get("replaced") or ray.get("retried"):
        lines += ["", f"{ray['replaced']} actors replaced, {ray['retried']} tasks retried"]
    return lines


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
    parser.add_argument(
        "--only",
        nargs="+",
        choices=("infer", "ray", "bench"),
        default=["infer", "ray", "bench"],
        help="the parts to run (default all): infer vs bare loop, infer on Ray, bench vs bench --devices",
    )
    args = parser.parse_args()
    parts = set(args.only)
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
    for index in range(args.rounds if "infer" in parts else 0):
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
    median_ratio = statistics.median(r["ratio"] for r in rounds) if rounds else None

    def bare() -> float:
        return bare_loop(model, config, args.ep, name, sample, batch, files)["rows_per_s"]

    ray_report = (
        ray_section(model, config, data, work, args.ep, devices, batch, bare, args.rounds)
        if "ray" in parts
        else {"status": "not run (--only)"}
    )
    log(
        f"ray: {ray_report['status']}"
        + (f", steady {ray_report['steady_ratio']:.3f} of the bare loop" if ray_report.get("steady_ratio") else "")
    )

    bench_rounds = []
    environment = None
    for index in range(args.rounds if "bench" in parts else 0):
        values = bench_pair(
            model, config, args.ep, devices, batch, args.duration, "bench" if index % 2 == 0 else "devices"
        )
        environment = values.pop("environment")
        bench_rounds.append(values)
        log(
            f"bench round {index + 1}: {values['bench']['samples_per_s']:,.0f} vs --devices "
            f"{values['devices']['aggregate_samples_per_s']:,.0f} samples/s"
        )
    if environment is None:  # no bench part: this process's (ORT loaded by the bare loop's sessions)
        from ortgpu.bench.environment import collect_environment

        environment = collect_environment(args.ep, 0)
    p50_delta = ratio = None
    if bench_rounds:
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
        "parts": sorted(parts),
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
            "met": median_ratio >= TARGET_INFER if median_ratio is not None else None,
        },
        "ray": ray_report,
        "bench": {
            "rounds": bench_rounds,
            "p50_delta": p50_delta,
            "throughput_ratio": ratio,
            "met": (abs(p50_delta) <= TARGET_BENCH and abs(ratio - 1) <= TARGET_BENCH)
            if count == 1 and p50_delta is not None and ratio is not None
            else None,
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
