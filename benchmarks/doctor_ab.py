"""`ortgpu doctor` end to end, two versions of the code side by side in one run, rounds interleaved (A B, B A, ...).

Each round runs, for each side in the round's order: one cold run (the page cache dropped first, where permitted) and
two warm runs, each a fresh `python -m ortgpu doctor --json` with PYTHONPATH naming that side's source folder first.
Every run is reported (wall time, the doctor's own time, the per-probe timings that differ most), then the medians.

    python benchmarks/doctor_ab.py OUTDIR --a old=path/to/old/src --b new=src --rounds 4 [--drop-caches]

Writes OUTDIR/doctor-ab.json and OUTDIR/doctor-ab.md. Any machine: on one without a GPU both sides take the
no-GPU path (a dry run of the script).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

PROBES = ("provider libraries", "onnxruntime import", "load attempt (child)", "waited for load attempt (child)")


def _drop_caches() -> bool:
    try:
        subprocess.run(["sync"], check=False)
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def _one(src: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([src, *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]])
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "ortgpu", "doctor", "--json"], capture_output=True, text=True, env=env, check=False
    )
    row: dict = {"wall_s": round(time.perf_counter() - started, 3), "exit": proc.returncode}
    try:
        result = json.loads(proc.stdout)["result"]
    except (ValueError, KeyError):
        row["error"] = (proc.stderr or proc.stdout)[-300:]
        return row
    row.update(doctor_s=round(result["duration_s"], 3), verdict=result["verdict"])
    row["timings"] = {k: v for k, v in result.get("timings", {}).items() if k in PROBES}
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--a", required=True, help="NAME=SRC: the first side's source folder (holding ortgpu/)")
    parser.add_argument("--b", required=True, help="NAME=SRC: the second side")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--drop-caches", action="store_true", help="drop the page cache before each cold run (root)")
    args = parser.parse_args(argv)
    sides = dict(side.split("=", 1) for side in (args.a, args.b))
    names = list(sides)
    args.out.mkdir(parents=True, exist_ok=True)

    rows: list[dict] = []
    for index in range(args.rounds):
        order = names if index % 2 == 0 else names[::-1]
        for name in order:
            dropped = _drop_caches() if args.drop_caches else False
            rows.append({"round": index + 1, "side": name, "kind": "cold", "dropped": dropped, **_one(sides[name])})
            for _ in range(2):
                rows.append({"round": index + 1, "side": name, "kind": "warm", **_one(sides[name])})
            print(f"round {index + 1} {name}: " + ", ".join(str(r["wall_s"]) for r in rows[-3:]), flush=True)

    def median(side: str, kind: str, key: str) -> float | None:
        values = [r[key] for r in rows if r["side"] == side and r["kind"] == kind and key in r]
        return round(statistics.median(values), 3) if values else None

    summary = {
        side: {kind: {k: median(side, kind, k) for k in ("wall_s", "doctor_s")} for kind in ("cold", "warm")}
        for side in names
    }
    command = "python benchmarks/doctor_ab.py OUTDIR " + " ".join(
        [f"--a {args.a}", f"--b {args.b}", f"--rounds {args.rounds}"] + (["--drop-caches"] if args.drop_caches else [])
    )
    gpu = (
        subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True, text=True
        ).stdout.strip()
        if _has("nvidia-smi")
        else "(no nvidia-smi)"
    )
    doc = {
        "command": command,
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "gpu": gpu,
        "python": platform.python_version(),
        "rows": rows,
        "summary": summary,
    }
    (args.out / "doctor-ab.json").write_text(json.dumps(doc, indent=1) + "\n")
    lines = [
        "# `ortgpu doctor`, two versions side by side (interleaved rounds)",
        "",
        f"Command: `{command}` ({doc['date_utc']}). GPU: {gpu}. Python {doc['python']}.",
        "",
        "| side | cold: median wall | cold: doctor's own | warm: median wall | warm: doctor's own |",
        "|---|---|---|---|---|",
    ]
    for side in names:
        s = summary[side]
        lines.append(
            f"| {side} | {s['cold']['wall_s']} s | {s['cold']['doctor_s']} s | {s['warm']['wall_s']} s "
            f"| {s['warm']['doctor_s']} s |"
        )
    lines += [
        "",
        "Every run, in the order it ran:",
        "",
        "| round | side | kind | wall s | doctor s | " + " | ".join(PROBES) + " | verdict |",
        "|---" * (6 + len(PROBES)) + "|",
    ]
    for r in rows:
        cells = [str(r.get("timings", {}).get(p, "")) for p in PROBES]
        kind = r["kind"] + (" (cache dropped)" if r.get("dropped") else "")
        lines.append(
            f"| {r['round']} | {r['side']} | {kind} | {r['wall_s']} | {r.get('doctor_s', '')} | "
            + " | ".join(cells)
            + f" | {(r.get('verdict') or r.get('error', ''))[:60]} |"
        )
    (args.out / "doctor-ab.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[: 8 + len(names)]))
    return 0


def _has(command: str) -> bool:
    from shutil import which

    return which(command) is not None


if __name__ == "__main__":
    raise SystemExit(main())
