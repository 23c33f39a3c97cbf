"""Where a cold `ortgpu doctor` spends its time on a GPU host: each step of its load child, timed alone after a
page-cache drop and warm, in interleaved rounds.

    python benchmarks/h200_cold_start.py OUTDIR [--rounds 3] [--drop-caches]

Steps (each a fresh Python, timed from inside): start Python; import numpy; import onnxruntime;
onnxruntime.preload_dlls(); a CUDA session of one Add created and run, split into session creation and first run;
plus `python -m ortgpu --version` and `python -m ortgpu doctor --json` end to end. Writes OUTDIR/cold-start.json and
OUTDIR/cold-start.md. On a machine without a GPU the session falls back to the CPU EP (a dry run).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from doctor_ab import _drop_caches as _drop  # the same page-cache drop as the A/B script (root)

_STEPS = r"""
import json, sys, time
t = {"python start": time.perf_counter() - float(sys.argv[1])}
s = time.perf_counter(); import numpy as np; t["import numpy"] = time.perf_counter() - s
s = time.perf_counter(); import onnxruntime as ort; t["import onnxruntime"] = time.perf_counter() - s
s = time.perf_counter()
if hasattr(ort, "preload_dlls"):
    ort.preload_dlls()
t["preload_dlls()"] = time.perf_counter() - s
from ortgpu.host.load_attempt import ADD_MODEL
s = time.perf_counter()
session = ort.InferenceSession(ADD_MODEL, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
t["CUDA session created"] = time.perf_counter() - s
s = time.perf_counter(); session.run(None, {"x": np.ones((1, 8), dtype=np.float32)})
t["first run"] = time.perf_counter() - s
t["providers"] = session.get_providers()[0]
print(json.dumps(t))
"""


def _steps() -> dict:
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _STEPS, repr(time.perf_counter())], capture_output=True, text=True, check=False
    )
    row = json.loads(proc.stdout) if proc.returncode == 0 else {"error": proc.stderr[-300:]}
    row["wall"] = time.perf_counter() - started
    return row


def _cli(*args: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ortgpu", *args], capture_output=True, check=False)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--drop-caches", action="store_true")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    for index in range(args.rounds):
        for kind in ("cold", "warm") if index % 2 == 0 else ("warm", "cold"):
            dropped = _drop() if kind == "cold" and args.drop_caches else False
            row = {"round": index + 1, "kind": kind, "dropped": dropped, **_steps()}
            if kind == "cold" and args.drop_caches:
                _drop()
            row["ortgpu --version"] = _cli("--version")
            if kind == "cold" and args.drop_caches:
                _drop()
            row["doctor end to end"] = _cli("doctor", "--json")
            rows.append(row)
            print(json.dumps(row), flush=True)
    keys = [k for k in rows[0] if k not in ("round", "kind", "dropped", "providers", "error")]
    lines = [
        "# Where a cold `ortgpu doctor` spends its time: the load child's steps alone, cold and warm",
        "",
        f"Command: `python benchmarks/h200_cold_start.py OUTDIR --rounds {args.rounds}"
        + (" --drop-caches`" if args.drop_caches else "`")
        + f" ({time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}). Python {platform.python_version()}.",
        "",
        "| step (seconds, median) | cold | warm |",
        "|---|---|---|",
    ]
    for key in keys:
        med = {
            kind: statistics.median(
                [r[key] for r in rows if r["kind"] == kind and isinstance(r.get(key), float)] or [0.0]
            )
            for kind in ("cold", "warm")
        }
        lines.append(f"| {key} | {med['cold']:.3f} | {med['warm']:.3f} |")
    lines += ["", "Every run: see cold-start.json."]
    (args.out / "cold-start.json").write_text(json.dumps({"rows": rows, "python": platform.python_version()}, indent=1))
    (args.out / "cold-start.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
