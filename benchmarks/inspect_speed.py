"""How long `ortgpu inspect` takes on a ~500 MB model, as a user runs it: a fresh process each time.

Usage:  python benchmarks/inspect_speed.py [--runs 3] [--size-mb 512] [--work DIR] [--out results.json]

Two models of the same graph (MatMul chain, float32 1024x1024 weights): weights in an external data file, and
weights inside the .onnx. Each is inspected with and without asking ORT for CUDA kernels (on a machine without a
CUDA EP that answer is "not determined"; on a GPU machine it builds a CUDA session, which loads the weights).
The first run of each case is reported apart (cold page cache). Writes nothing outside --work and --out.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _build(folder: Path, size_mb: int) -> dict[str, Path]:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    layers = max(1, size_mb // 4)  # one 1024x1024 float32 weight is 4 MiB
    rng = np.random.default_rng(0)
    nodes, weights, current = [], [], "x"
    for i in range(layers):
        weights.append(numpy_helper.from_array(rng.standard_normal((1024, 1024), dtype=np.float32), f"w{i}"))
        nodes.append(helper.make_node("MatMul", [current, f"w{i}"], [f"h{i}"], name=f"mm{i}"))
        current = f"h{i}"
    graph = helper.make_graph(
        nodes,
        "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 1024])],
        [helper.make_tensor_value_info(current, TensorProto.FLOAT, ["batch", 1024])],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    external = folder / "external.onnx"
    inline = folder / "inline.onnx"
    onnx.save(model, inline)
    onnx.save(model, external, save_as_external_data=True, location="external.data")
    return {"external data": external, "weights inside the .onnx": inline}


def _phases(model: Path) -> dict[str, float]:
    """Where the time of one in-process inspection goes, onnx and onnxruntime already imported."""
    import hashlib

    from ortgpu.inspect import graph
    from ortgpu.model import inspect as model_inspect

    marks = [("start", time.perf_counter())]
    data = model_inspect._read_model_bytes(model)
    marks.append(("read", time.perf_counter()))
    hashlib.sha256(data).hexdigest()
    marks.append(("sha256", time.perf_counter()))
    proto = model_inspect._parse_model(model, data)
    marks.append(("parse", time.perf_counter()))
    model_inspect._check_model(model)
    marks.append(("onnx checker", time.perf_counter()))
    graph.strip_large_tensors(proto)
    marks.append(("strip weights", time.perf_counter()))
    graph.infer_shapes(proto)
    marks.append(("shape inference", time.perf_counter()))
    return {name: round(t - marks[i][1], 3) for i, (name, t) in enumerate(marks[1:])}


def _one_run(model: Path, kernels: bool) -> tuple[float, dict]:
    args = [sys.executable, "-m", "ortgpu", "inspect", str(model), "--json"] + ([] if kernels else ["--no-kernels"])
    started = time.perf_counter()
    proc = subprocess.run(args, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"ortgpu inspect failed with exit {proc.returncode}: {proc.stderr.strip()[-500:]}")
    return wall, json.loads(proc.stdout)["result"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="runs after the first (cold) one, per case")
    parser.add_argument("--size-mb", type=int, default=512, help="weights of the generated model")
    parser.add_argument("--work", type=Path, help="folder for the generated models (default: a temporary one)")
    parser.add_argument("--out", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="ortgpu-inspect-speed-", dir=args.work) as folder:
        models = _build(Path(folder), args.size_mb)
        cases = []
        import onnx  # noqa: F401  (imported before the phases are timed)
        import onnxruntime

        phases = {what: _phases(model) for what, model in models.items()}
        for what, model in models.items():
            files = sum(p.stat().st_size for p in Path(folder).iterdir() if p.stem == model.stem)
            for kernels in (False, True):
                cold, result = _one_run(model, kernels)
                walls, inside = [], []
                for _ in range(args.runs):
                    wall, result = _one_run(model, kernels)
                    walls.append(wall)
                    inside.append(result["elapsed_s"])
                cases.append(
                    {
                        "model": what,
                        "bytes_on_disk": files,
                        "onnx_file_bytes": model.stat().st_size,
                        "kernels": result["kernels"]["status"] if kernels else "not asked (--no-kernels)",
                        "kernels_reason": result["kernels"]["reason"],
                        "cold_wall_s": round(cold, 3),
                        "median_wall_s": round(statistics.median(walls), 3),
                        "median_inside_s": round(statistics.median(inside), 3),
                        "initializer_bytes": result["initializer_bytes"],
                        "nodes": result["node_count"],
                    }
                )
    import onnxruntime

    imports = []
    for _ in range(args.runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import onnx, onnxruntime, ortgpu.cli.main"], check=True)
        imports.append(time.perf_counter() - started)
    figures = {
        "command": f"{Path(sys.executable).name} -m ortgpu inspect MODEL --json [--no-kernels]",
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}",
        "python": platform.python_version(),
        "onnxruntime": onnxruntime.__version__,
        "runs": args.runs,
        "median_import_only_s": round(statistics.median(imports), 3),
        "cases": cases,
        "in_process_phases_s": phases,
    }
    print(json.dumps(figures, indent=2))
    if args.out is not None:
        args.out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
