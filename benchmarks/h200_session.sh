#!/usr/bin/env bash
# One lent-H200 call for the new commands' evidence (tune, fp16/compare, profile, infer/devices, install doctor,
# doctor speed), each step time-boxed so a call cut short still returns what finished; steps whose script is not
# in this tree are skipped. Run from the project root on the device:
#   bash benchmarks/h200_session.sh "$OUT" STEP...   (carry: [".carry", ".whl"])
# steps: install tune warmup pytest-gpu profile fp16 scale scale-ray doctor-speed cudagraph
# .carry/ort holds the minimal onnxruntime-gpu 1.31.1 sm_90 pack (../shared/tools/ort-gpu-pack --minimal),
# .whl the pure-Python wheels the image lacks (pyelftools, pefile, optuna, colorlog).
set -u
out=${1:?usage: h200_session.sh OUTDIR STEP...}; shift
steps=" $* "
res=$out/r; mkdir -p "$res" /tmp/site /tmp/models
log=$out/log.txt; : > "$log"
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS
  [[ $steps == *" $name "* ]] || return 0
  timeout "$limit" "$@" > "$res/$name.log" 2>&1; local rc=$?
  echo "$(date -u +%T) step $name: exit $rc in $((SECONDS - t0)) s" | tee -a "$log"; }
have() { [ -f "$1" ] || { echo "$(date -u +%T) skip: $1 not in this tree" | tee -a "$log"; return 1; }; }
tar -xJf .carry/ort/onnxruntime_gpu-1.31.1-sm90*.tar.xz -C /tmp/site || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >> "$log" 2>&1
NV=$(python3 -c 'import nvidia;print(list(nvidia.__path__)[0])')
base_ld=${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv >> "$log" 2>&1
python3 -m pip list --format=freeze > "$res/pip-list.txt" 2>&1  # what the image has (packing Ray for it)
# install: the [gpu] extra's situation — nvidia-* CUDA 13 / cuDNN 9 wheels importable, LD_LIBRARY_PATH without them
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1 COLUMNS=160
have benchmarks/h200_install.sh && step install 120 bash benchmarks/h200_install.sh "$res/install"
export LD_LIBRARY_PATH=$NV/cu13/lib:$NV/cudnn/lib:$base_ld
have benchmarks/h200_tune.py && step tune 420 python3 benchmarks/h200_tune.py "$res/tune" --budget ${TUNE_BUDGET:-45} --work /tmp/models
have benchmarks/h200_warmup_fidelity.py && step warmup 150 python3 benchmarks/h200_warmup_fidelity.py "$res/warmup" --rounds 3 --work /tmp/models
have benchmarks/h200_fp16_compare.py && step fp16 240 python3 benchmarks/h200_fp16_compare.py "$res/fp16" --work /tmp/models
have benchmarks/h200_profile.py && step profile 150 python3 benchmarks/h200_profile.py "$res/profile" --work /tmp/models
have benchmarks/h200_scale.py && step scale 200 python3 benchmarks/h200_scale.py "$res/scale" --rounds 4 --duration 2.0 --work /tmp/models --only infer bench
# infer --ray: needs Ray in /tmp/site (benchmarks/h200_ray_install.sh in an earlier call of this lease)
have benchmarks/h200_scale.py && step scale-ray 180 python3 benchmarks/h200_scale.py "$res/scale-ray" --only ray --work /tmp/models
have benchmarks/h200_doctor_speed.sh && step doctor-speed 90 bash benchmarks/h200_doctor_speed.sh "$res/doctor-speed"
step pytest-gpu 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests
tar -czf "$out/results.tar.gz" -C "$res" --exclude="*.onnx" --exclude="*.data" --exclude="*.onnx.data" . && echo "packed $(du -h "$out/results.tar.gz" | cut -f1)" | tee -a "$log"
