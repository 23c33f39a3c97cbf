#!/usr/bin/env bash
# What `ortgpu[gpu]` gives on the lent H200: the nvidia-* CUDA 13 / cuDNN 9 pip wheels (the image has them, as
# the [gpu] extra installs them) and no LD_LIBRARY_PATH for CUDA: does `ortgpu doctor` reach "GPU ready", and which
# copy of each CUDA/cuDNN library is mapped? Run from the project root on the device (carry [".carry", ".whl"]):
#   bash benchmarks/h200_install.sh OUTDIR            (~1 min; PYTHON=... to use another interpreter)
# Setups, each `ortgpu doctor --json` (+ the table):
#   pip-preload: LD_LIBRARY_PATH cut down to the driver's folder (libcuda / libnvidia-ml): no nvidia-* pip folder,
#                no CUDA toolkit folder. The system CUDA 13.0 / cuDNN 9.14 stay in ld.so.cache: the plain loader
#                would pick them; ortgpu's preload_dlls(directory=...) calls load the pip copies first.
#   pip-only:    the same, with the system CUDA toolkit and cuDNN hidden in a private mount namespace (tmpfs over
#                /usr/local/cuda-*, /dev/null over the system libcudnn* files), so only the pip wheels exist.
# In pip-preload it also runs `ortgpu check --json` on the demo model (ortgpu's own session: its
# `cuda_libraries` says what it preloaded) and `ortgpu --version`. Writes OUTDIR/doctor-<setup>.json/.txt,
# check-pip-preload.json, version.txt, machine.txt, and summary.json + summary.md (the table for the results).
# Locally (no GPU, no .carry) it runs the same steps on the installed ORT as a dry run: "not ready", exit 3.
set -u
out=${1:?usage: h200_install.sh OUTDIR}
mkdir -p "$out"
py=${PYTHON:-python3}
if ls .carry/ort/onnxruntime_gpu-1.31.1-sm90*.tar.xz >/dev/null 2>&1; then
  mkdir -p /tmp/site
  tar -xJf .carry/ort/onnxruntime_gpu-1.31.1-sm90*.tar.xz -C /tmp/site || exit 1
  deps=$(ls .whl/*.whl 2>/dev/null | paste -sd:)  # pure-Python wheels import straight from the zip
  export PYTHONPATH=/tmp/site:$PWD/src${deps:+:$deps}
else
  export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH}
fi
export COLUMNS=200 PYTHONUNBUFFERED=1
info="$out/machine.txt"
{
  echo "date: $(date -u +%FT%TZ)"
  echo "LD_LIBRARY_PATH as the image sets it: ${LD_LIBRARY_PATH:-}"
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv 2>&1
  "$py" --version
  "$py" -c 'import nvidia, sys; print("nvidia-* pip folders:", list(nvidia.__path__))' 2>&1
  ldconfig -p 2>/dev/null | grep -E 'libcudnn\.so|libcudart|libcublasLt' | head -5
} > "$info"

# LD_LIBRARY_PATH with only the folders that hold the driver's user-space libraries
driver_ld=""
IFS=: read -ra parts <<< "${LD_LIBRARY_PATH:-}"
for dir in "${parts[@]}"; do
  if [ -n "$dir" ] && { [ -e "$dir/libcuda.so.1" ] || [ -e "$dir/libnvidia-ml.so.1" ]; }; then
    driver_ld=${driver_ld:+$driver_ld:}$dir
  fi
done
echo "LD_LIBRARY_PATH for both setups: ${driver_ld:-(unset)}" | tee -a "$info"

run_doctor() {  # NAME PREFIX...: `PREFIX python -m ortgpu doctor` with the cut-down LD_LIBRARY_PATH
  local name=$1; shift
  env -u LD_LIBRARY_PATH ${driver_ld:+LD_LIBRARY_PATH=$driver_ld} "$@" "$py" -m ortgpu doctor --json \
    > "$out/doctor-$name.json" 2>> "$info"
  echo "doctor $name: exit $?" | tee -a "$info"
  env -u LD_LIBRARY_PATH ${driver_ld:+LD_LIBRARY_PATH=$driver_ld} "$@" "$py" -m ortgpu doctor \
    > "$out/doctor-$name.txt" 2>&1
  head -1 "$out/doctor-$name.txt"
}

run_doctor pip-preload
env -u LD_LIBRARY_PATH ${driver_ld:+LD_LIBRARY_PATH=$driver_ld} "$py" -m ortgpu --version > "$out/version.txt" 2>&1
model=$(mktemp -d)/ortgpu-demo.onnx
"$py" -c "import sys; from pathlib import Path; from ortgpu.model.zoo import build_demo_model; build_demo_model(Path(sys.argv[1]))" "$model"
env -u LD_LIBRARY_PATH ${driver_ld:+LD_LIBRARY_PATH=$driver_ld} "$py" -m ortgpu check "$model" --json \
  > "$out/check-pip-preload.json" 2>> "$info"
echo "check pip-preload: exit $?" | tee -a "$info"

hide=""
for dir in /usr/local/cuda-*; do
  [ -d "$dir" ] && [ ! -L "$dir" ] && hide="${hide:+$hide && }mount -t tmpfs none $dir"
done
for f in /usr/lib/x86_64-linux-gnu/libcudnn*.so* /lib/x86_64-linux-gnu/libcudnn*.so*; do
  [ -f "$f" ] && [ ! -L "$f" ] && hide="${hide:+$hide && }mount --bind /dev/null $f"
done
if [ -n "$hide" ] && unshare -rm sh -c "$hide" >> "$info" 2>&1; then
  run_doctor pip-only unshare -rm sh -c "$hide && exec \"\$@\"" sh
else
  echo "pip-only skipped: no system CUDA to hide, or no mount namespace here" | tee -a "$info"
fi

"$py" - "$out" <<'EOF'
"""summary.json / summary.md from the doctor and check JSON files."""
import json, sys
from pathlib import Path

out = Path(sys.argv[1])
rows, setups = [], {}
for name in ("pip-preload", "pip-only"):
    path = out / f"doctor-{name}.json"
    try:
        report = json.loads(path.read_text())["result"]
    except (OSError, ValueError, KeyError):
        continue
    plan = report.get("cuda_preload") or {}
    attempt = report.get("load_attempt") or {}
    setups[name] = {
        "ready": report["ready"], "verdict": report["verdict"],
        "preload_calls": [c for c in (attempt.get("preload_calls") or [])], "preload_reason": plan.get("reason"),
        "mapped": [{k: m[k] for k in ("path", "component", "origin", "why")} for m in report.get("mapped", [])],
        "driver": (report.get("driver") or {}).get("version"),
        "driver_cuda": (report.get("driver") or {}).get("cuda_driver_version"),
        "gpus": [g["name"] for g in (report.get("driver") or {}).get("gpus", [])],
        "ort": (report.get("ort") or {}).get("version"), "ort_file": (report.get("ort") or {}).get("module_file"),
        "requirements": {k: (report.get("requirements") or {}).get(k) for k in ("cuda_major", "cudnn_major")},
    }
check = None
try:
    result = json.loads((out / "check-pip-preload.json").read_text())["result"]
    check = {k: result.get(k) for k in ("verdict", "active_ep", "providers", "cuda_libraries", "passed")}
except (OSError, ValueError, KeyError):
    pass
version = (out / "version.txt").read_text().strip() if (out / "version.txt").exists() else ""
(out / "summary.json").write_text(json.dumps({"setups": setups, "check": check, "version": version}, indent=2))
lines = ["# ortgpu[gpu] on the H200: nvidia-* pip CUDA/cuDNN, no CUDA on LD_LIBRARY_PATH", "",
         "Command: `bash benchmarks/h200_install.sh OUT` (see its header).", "", "```", version, "```", ""]
for name, s in setups.items():
    lines += [f"## {name}: {'GPU ready' if s['ready'] else 'not ready'}", "", f"verdict: {s['verdict']}", "",
              f"GPU {', '.join(s['gpus']) or '-'}, driver {s['driver']} (CUDA <= {s['driver_cuda']}), ORT {s['ort']} "
              f"({s['ort_file']}), CUDA {s['requirements']['cuda_major']} / cuDNN {s['requirements']['cudnn_major']}",
              "", "preload: " + ("; ".join(s["preload_calls"]) or f"none ({s['preload_reason']})"), "",
              "| file | component | from | why |", "|---|---|---|---|"]
    lines += [f"| `{m['path']}` | {m['component']} | {m['origin']} | {m['why']} |" for m in s["mapped"]]
    lines.append("")
if check:
    lines += ["## ortgpu check on the demo model (pip-preload)", "", f"{check['verdict']}", "",
              f"active EP {check['active_ep']}; CUDA libraries: {check['cuda_libraries']}", ""]
(out / "summary.md").write_text("\n".join(lines))
print("\n".join(lines[:40]))
EOF
