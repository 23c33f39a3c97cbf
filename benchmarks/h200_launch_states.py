"""Why do launch-bound batch-1 runs flip between two speeds? ORT's CPU thread pool settings, round by round.

    python3 benchmarks/h200_launch_states.py OUT_DIR [--rounds 6] [--duration 1.0]

ResNet-50 (torchvision, random weights, batch 1) on the CUDA EP, bare loops only (benchmarks/bare_loops.py), in
modes run and iobinding, with three session setups alternated round by round: ORT's defaults; one intra-op
thread; the intra-op pool's spinning turned off (`session.intra_op.allow_spinning=0`). If the spinning pool
competes with the thread that launches the kernels, the second and third setups lose the slow state.
Writes OUT_DIR/launch-states.json and .md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bare_loops import bare_times  # noqa: E402
from h200_capi import export_resnet50  # noqa: E402

SETUPS = {
    "defaults": {},
    "intra_op_num_threads=1": {"threads": 1},
    "allow_spinning=0": {"config": {"session.intra_op.allow_spinning": "0"}},
}


def session(model: str, setup: dict) -> ort.InferenceSession:
    options = ort.SessionOptions()
    if "threads" in setup:
        options.intra_op_num_threads = setup["threads"]
    for key, value in setup.get("config", {}).items():
        options.add_session_config_entry(key, value)
    sess = ort.InferenceSession(model, options, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    if sess.get_providers()[0] != "CUDAExecutionProvider":
        raise SystemExit(f"CUDA EP not active: {sess.get_providers()}")
    return sess


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--duration", type=float, default=1.0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    model = Path("/tmp/models/resnet50.onnx")
    export_resnet50(model)
    feeds = {
        ort.InferenceSession(str(model)).get_inputs()[0].name: np.random.default_rng(0)
        .standard_normal((1, 3, 224, 224))
        .astype(np.float32)
    }
    sessions = {name: session(str(model), setup) for name, setup in SETUPS.items()}
    rounds: dict[str, dict[str, list[float]]] = {m: {s: [] for s in SETUPS} for m in ("run", "iobinding")}
    for _ in range(args.rounds):
        for mode in rounds:
            for name, sess in sessions.items():
                ns, _wall = bare_times(sess, mode, feeds, warmup=20, duration_s=args.duration, device="cuda")
                rounds[mode][name].append(float(np.percentile(ns, 50)) / 1e6)
    doc = {"ort": ort.__version__, "rounds": rounds, "duration_s": args.duration}
    (args.out / "launch-states.json").write_text(json.dumps(doc, indent=1) + "\n")
    lines = ["| mode | setup | median of round p50s (ms) | min | max | rounds (ms) |", "|---|---|---|---|---|---|"]
    for mode, by_setup in rounds.items():
        for name, values in by_setup.items():
            lines.append(
                f"| {mode} | {name} | {statistics.median(values):.3f} | {min(values):.3f} | {max(values):.3f} | "
                + ", ".join(f"{v:.2f}" for v in values)
                + " |"
            )
    (args.out / "launch-states.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
