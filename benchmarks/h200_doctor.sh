#!/usr/bin/env bash
# `ortgpu doctor` on the lent H200, in the three setups the issue asks about. Run from the project root on the
# device (see ../shared/tools/ort-gpu-pack.md; the run carries .carry/ and .whl/):
#   bash benchmarks/h200_doctor.sh OUTDIR
# 1. image:     as the image comes: system CUDA 13.0 + cuDNN 9.14 and the nvidia-* pip packages both present
# 2. pip-first: LD_LIBRARY_PATH naming the nvidia-* pip folders (the pack's recommended line): which copy wins now
# 3. no-driver: the driver hidden from the loader. The image lists it in ld.so.cache and in /lib as well, so
#    LD_LIBRARY_PATH alone cannot hide it: a private mount namespace covers /usr/local/nvidia with an empty
#    tmpfs and the /lib copies with /dev/null (nothing changes outside that one process tree)
# 4. no-nvml:   ORTGPU_NVML_LIBRARY=/nonexistent, the driver libraries left in place
# Writes OUTDIR/doctor-<setup>.txt (the table), .json (--json) for image and no-driver, machine.txt (exit codes,
# GPU, loader cache) and pytest-gpu.txt (the doctor's GPU test).
set -u
out=${1:?usage: h200_doctor.sh OUTDIR}
mkdir -p "$out" /tmp/site
tar -xJf .carry/ort/onnxruntime_gpu-1.31.1-sm90*.tar.xz -C /tmp/site || exit 1
deps=$(ls .whl/*.whl 2>/dev/null | paste -sd:)  # pure-Python wheels import straight from the zip
export PYTHONPATH=/tmp/site:$PWD/src${deps:+:$deps}
export COLUMNS=200
info="$out/machine.txt"
: > "$info"

run() {  # run NAME JSON(yes/no) PREFIX...: PREFIX is prepended to `python3 -m ortgpu doctor`
  local name=$1 json=$2; shift 2
  "$@" python3 -m ortgpu doctor > "$out/doctor-$name.txt" 2>&1
  echo "doctor $name: exit $?" | tee -a "$info"
  [ "$json" = yes ] && "$@" python3 -m ortgpu doctor --json > "$out/doctor-$name.json" 2>> "$info"
  head -1 "$out/doctor-$name.txt"
}

base_ld=${LD_LIBRARY_PATH:-}
echo "LD_LIBRARY_PATH=$base_ld" >> "$info"
nv=$(python3 -c 'import nvidia, sys; print(list(nvidia.__path__)[0])')
run image yes env
run pip-first no env "LD_LIBRARY_PATH=$nv/cu13/lib:$nv/cudnn/lib${base_ld:+:$base_ld}"
hide="mount -t tmpfs none /usr/local/nvidia"
for f in /lib/libcuda.so* /lib/libnvidia-ml.so* /usr/lib/x86_64-linux-gnu/libcuda.so* \
         /usr/lib/x86_64-linux-gnu/libnvidia-ml.so*; do
  [ -f "$f" ] && [ ! -L "$f" ] && hide="$hide && mount --bind /dev/null $f"  # links into /usr/local/nvidia dangle
done
ls -la /lib/libcuda.so* /lib/libnvidia-ml.so* >> "$info" 2>&1
if unshare -rm sh -c "$hide" >> "$info" 2>&1; then
  run no-driver yes unshare -rm sh -c "$hide && exec \"\$@\"" sh
else
  echo "no mount namespace here: no-driver setup skipped" | tee -a "$info"
fi
run no-nvml no env ORTGPU_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv
  python3 --version
  echo "ldconfig -p (driver, CUDA runtime, cuDNN):"
  ldconfig -p | grep -E 'libcuda\.so|libnvidia-ml|libcudnn\.so|libcudart'
} >> "$info" 2>&1
# the GPU test of the doctor (skipped elsewhere): verdict ready, GPU named, CUDA/cuDNN files mapped
python3 -m pytest -q -p no:cacheprovider -m gpu tests/env/test_doctor.py > "$out/pytest-gpu.txt" 2>&1
echo "pytest -m gpu: $(tail -1 "$out/pytest-gpu.txt")" | tee -a "$info"
