#!/usr/bin/env bash
# One lent-H200 call that produces the GPU evidence of every issue, in priority order, each step time-boxed,
# so a call cut short still returns what finished. Run from the project root on the device:
#   bash benchmarks/h200_all.sh "$OUT" [STEP...]   (carry: [".carry", ".whl"]; steps: demo check capi pytest-gpu
#   fidelity bundle doctor; default all, in that order)
# .carry/ort holds the full onnxruntime-gpu 1.31.1 sm_90 pack (../shared/tools/ort-gpu-pack, with libonnxruntime.so),
# .whl the pure-Python wheels the image lacks (pyelftools, pefile).
set -u
out=${1:?usage: h200_all.sh OUTDIR [STEP...]}; shift
steps=" ${*:-demo check capi pytest-gpu fidelity bundle doctor} "
res=$out/r; mkdir -p "$res" /tmp/site /tmp/models
log=$out/log.txt; : > "$log"
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS
  [[ $steps == *" $name "* ]] || return 0
  timeout "$limit" "$@" > "$res/$name.log" 2>&1; local rc=$?
  echo "$(date -u +%T) step $name: exit $rc in $((SECONDS - t0)) s" | tee -a "$log"; }
tar -xJf .carry/ort/onnxruntime_gpu-1.31.1-sm90*.tar.xz -C /tmp/site || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >> "$log" 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1 COLUMNS=160
NV=$(python3 -c 'import nvidia;print(list(nvidia.__path__)[0])')
export LD_LIBRARY_PATH=$NV/cu13/lib:$NV/cudnn/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv >> "$log" 2>&1
# demo and the GPU tests run beside check/capi (their timings are not the evidence); fidelity runs alone
( step demo 90 python3 -m ortgpu demo
  ORTGPU_PACKAGE=/tmp/site/onnxruntime/capi step pytest-gpu 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests ) &
side=$!
ORTGPU_PACKAGE=/tmp/site/onnxruntime/capi step check 200 python3 benchmarks/h200_check.py "$res/check"
step capi 120 python3 benchmarks/h200_capi.py "$res/capi"
wait $side
step fidelity 300 python3 benchmarks/h200_bench_fidelity.py "$res/fid" --rounds 3 --duration 1.0 --work /tmp/models
# a deployment folder for the installed 1.31.1 wheel with the CUDA/cuDNN libraries it loads, then doctor's verdict
step bundle 180 sh -c "python3 -m ortgpu bundle --providers cuda --out /tmp/bundle --json > $res/bundle.json;
  python3 -m ortgpu doctor --package /tmp/bundle > $res/bundle-doctor.txt 2>&1; echo doctor-package exit \$?;
  cp /tmp/bundle/manifest.json $res/bundle-manifest.json; cp /tmp/bundle/README-bundle.md $res/; du -sh /tmp/bundle"
step doctor 60 sh -c "python3 -m ortgpu doctor > $res/doctor.txt 2>&1; echo doctor exit \$?"
cp ortgpu-demo-report.html "$res/" 2>/dev/null
tar -czf "$out/results.tar.gz" -C "$res" . && echo "packed $(du -h "$out/results.tar.gz" | cut -f1)" | tee -a "$log"
