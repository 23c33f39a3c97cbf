#!/usr/bin/env bash
# `ortgpu infer --ray` on the lent H200, as one short call: install Ray Data from tools/ray-pack's chunks, then the
# Ray part of h200_scale.py (one actor on the GPU, against a bare loop of the same session and batch). Run from the
# project root on the device, on a machine where an earlier call of this lease unpacked the ONNX Runtime GPU pack
# into /tmp/site (h200_session.sh / h200_all.sh do; or carry .carry here too when it fits):
#   bash benchmarks/h200_ray_scale.sh OUTDIR CHUNK_DIR...        (~1.5 min: install ~20 s, export ~15 s, Ray ~40 s)
# Writes OUTDIR/install.log, OUTDIR/scale-ray.log and OUTDIR/scale-ray/scale.json + scale.md.
set -u
out=${1:?usage: h200_ray_scale.sh OUTDIR CHUNK_DIR...}; shift
mkdir -p "$out" /tmp/site /tmp/models
if ls .carry/ort/onnxruntime_gpu-1.31.1-sm90*.tar.xz >/dev/null 2>&1; then
  tar -xJf .carry/ort/onnxruntime_gpu-1.31.1-sm90*.tar.xz -C /tmp/site || exit 1
fi
[ -d /tmp/site/onnxruntime ] || {
  echo "h200_ray_scale: no ONNX Runtime GPU pack in /tmp/site: run this after a call that unpacked it" >&2; exit 3; }
TARGET=/tmp/site timeout 120 bash benchmarks/h200_ray_install.sh "$@" > "$out/install.log" 2>&1
rc=$?; tail -3 "$out/install.log"; [ $rc -eq 0 ] || { echo "h200_ray_scale: Ray install failed (exit $rc)"; exit 1; }
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1 COLUMNS=160
NV=$(python3 -c 'import nvidia;print(list(nvidia.__path__)[0])')
export LD_LIBRARY_PATH=$NV/cu13/lib:$NV/cudnn/lib:${LD_LIBRARY_PATH:-}
timeout 240 python3 benchmarks/h200_scale.py "$out/scale-ray" --only ray --work /tmp/models > "$out/scale-ray.log" 2>&1
echo "h200_scale --only ray: exit $?"
cat "$out/scale-ray/scale.md" 2>/dev/null || tail -30 "$out/scale-ray.log"
