#!/usr/bin/env bash
# How long `ortgpu doctor` takes on the lent H200, end to end as a user runs it (a fresh `python3 -m ortgpu doctor
# --json` each time): 5 cold runs (the page cache dropped before each, when this machine lets us), 5 warm runs, and
# 5 warm runs with --quick. Target: under 2 s warm. Run from the project root on the device, carrying .carry and
# .whl as for h200_all.sh (the onnxruntime-gpu 1.31.1 pack and the pure-Python wheels):
#   bash benchmarks/h200_doctor_speed.sh OUTDIR          # about 1-2 minutes
# Without .carry it uses the onnxruntime already importable (a dry run on any machine, GPU or not) and leaves the
# page cache alone (DROP_CACHES=1 forces the drop; it needs root and affects the whole machine).
# Writes OUTDIR/doctor-speed.json (every run: wall time, the doctor's own duration, verdict, which session model
# the child ran and how long it took) and OUTDIR/doctor-speed.md (the table, the exact command, GPU, driver,
# ORT / CUDA / cuDNN versions).
set -u
out=${1:?usage: h200_doctor_speed.sh OUTDIR}
mkdir -p "$out"
if [ -d .carry/ort ]; then
  mkdir -p /tmp/site
  [ -d /tmp/site/onnxruntime ] || tar -xJf .carry/ort/onnxruntime_gpu-1.31.1-sm90*.tar.xz -C /tmp/site || exit 1
  ls .whl/*.whl > /dev/null 2>&1 && python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site \
    .whl/*.whl > /dev/null 2>&1
  export PYTHONPATH=/tmp/site:$PWD/src DROP_CACHES=${DROP_CACHES:-1}
else
  export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH}
fi
OUT="$out" python3 - <<'EOF'
import json, os, platform, statistics, subprocess, sys, time
from pathlib import Path

out = Path(os.environ["OUT"])
RUNS = 5


def drop_caches() -> bool:
    if os.environ.get("DROP_CACHES") != "1":
        return False
    try:
        subprocess.run(["sync"], check=False)
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def one(extra: list[str]) -> dict:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "ortgpu", "doctor", "--json", *extra], capture_output=True, text=True)
    wall = time.perf_counter() - started
    row = {"wall_s": round(wall, 3), "exit": proc.returncode}
    try:
        result = json.loads(proc.stdout)["result"]
    except (ValueError, KeyError):
        row["error"] = (proc.stderr or proc.stdout)[-400:]
        return row
    load = next((c for c in result["checks"] if c["id"] == "load.attempt"), {})
    row.update(
        doctor_s=round(result["duration_s"], 3),
        verdict=result["verdict"],
        load_status=load.get("status"),
        load_mode=load.get("details", {}).get("mode"),
        load_s=load.get("details", {}).get("duration_s"),
    )
    return row


runs = {"cold": [], "warm": [], "quick": []}
dropped = []
for _ in range(RUNS):
    dropped.append(drop_caches())
    runs["cold"].append(one([]))
for _ in range(RUNS):
    runs["warm"].append(one([]))
for _ in range(RUNS):
    runs["quick"].append(one(["--quick"]))


def sh(command: list[str]) -> str:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "(not available)"


last = json.loads(subprocess.run([sys.executable, "-m", "ortgpu", "doctor", "--json"], capture_output=True,
                                 text=True).stdout or "{}").get("result", {})
mapped = [m.get("path") for m in last.get("mapped", [])]
doc = {
    "command": "bash benchmarks/h200_doctor_speed.sh OUTDIR",
    "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    "gpu": sh(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,compute_cap", "--format=csv,noheader"]),
    "python": platform.python_version(),
    "ort": (last.get("ort") or {}).get("version"),
    "ort_build": (last.get("requirements") or {}).get("cuda_build"),
    "mapped_cuda_files": mapped,
    "page_cache_dropped": dropped,
    "runs": runs,
}
summary = {}
for name, rows in runs.items():
    walls = [r["wall_s"] for r in rows if "wall_s" in r]
    own = [r["doctor_s"] for r in rows if "doctor_s" in r]
    summary[name] = {
        "median_wall_s": statistics.median(walls) if walls else None,
        "max_wall_s": max(walls) if walls else None,
        "median_doctor_s": statistics.median(own) if own else None,
    }
doc["summary"] = summary
(out / "doctor-speed.json").write_text(json.dumps(doc, indent=1) + "\n")
lines = [
    "# `ortgpu doctor` end-to-end time",
    "",
    f"Command: `{doc['command']}` ({doc['date_utc']}). GPU: {doc['gpu']}. Python {doc['python']}, onnxruntime "
    f"{doc['ort']}. Page cache dropped before the cold runs: {'yes' if all(dropped) else 'no (not asked, or not permitted)'}.",
    "",
    "| runs | median wall | max wall | doctor's own time (median) | load attempt (last run) |",
    "|---|---|---|---|---|",
]
for name, rows in runs.items():
    s = summary[name]
    last_row = rows[-1]
    load = f"{last_row.get('load_status')}: {last_row.get('load_mode')} ({last_row.get('load_s')} s)"
    lines.append(f"| {name} x{len(rows)} | {s['median_wall_s']} s | {s['max_wall_s']} s | {s['median_doctor_s']} s "
                 f"| {load} |")
lines += ["", f"Verdict: {runs['warm'][-1].get('verdict')}", "", "CUDA files the session mapped (last run):", ""]
lines += [f"- `{p}`" for p in mapped] or ["- (none)"]
(out / "doctor-speed.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
