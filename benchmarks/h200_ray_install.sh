#!/usr/bin/env bash
# Install Ray Data on the lent H200 (no network) from the chunk folders tools/ray-pack made, carried there one per
# call while the machine stays warm. Run from the project root on the device, once every chunk is there:
#   bash benchmarks/h200_ray_install.sh .ray-pack/c1 .ray-pack/c2 ...    (~20 s; TARGET=/tmp/site, PYTHON=python3)
# Joins the wheels cut into pieces (cat, in piece order), checks every wheel of the pack against SHA256SUMS (a
# missing chunk is named), installs them with pip --no-index --no-deps --target TARGET (the folder the other
# device steps put on PYTHONPATH), then checks with PYTHONPATH=TARGET that `import ray, ray.data, pyarrow` works
# and that every distribution Ray and its [data] extra ask for is there in a version they accept (the ones the pack
# left out must come from the image). Exit 0 when all of that holds, 1 otherwise.
set -u
[ $# -ge 1 ] || { echo "usage: h200_ray_install.sh CHUNK_DIR..." >&2; exit 2; }
target=${TARGET:-/tmp/site}
py=${PYTHON:-python3}
stage=$(mktemp -d /tmp/ray-pack.XXXXXX)
trap 'rm -rf "$stage"' EXIT
sums=""
for dir in "$@"; do
  [ -d "$dir" ] || { echo "h200_ray_install: $dir is not a folder (carry it first)" >&2; exit 1; }
  [ -f "$dir/SHA256SUMS" ] && sums=$dir/SHA256SUMS
  for f in "$dir"/*.whl; do [ -e "$f" ] && cp "$f" "$stage/"; done
done
[ -n "$sums" ] || { echo "h200_ray_install: no SHA256SUMS in $* (not tools/ray-pack chunks?)" >&2; exit 1; }
pieces=$(dirname "$sums")/PIECES
while read -r wheel count; do
  [ -n "$wheel" ] || continue
  parts=()
  for ((i = 0; i < count; i++)); do
    part=$(printf '%s.part-%03d' "$wheel" "$i")
    found=""
    for dir in "$@"; do [ -f "$dir/$part" ] && found=$dir/$part; done
    [ -n "$found" ] || { echo "h200_ray_install: $part is missing: carry every chunk tools/ray-pack made" >&2; exit 1; }
    parts+=("$found")
  done
  cat "${parts[@]}" > "$stage/$wheel"
done < "$pieces"
(cd "$stage" && sha256sum --quiet -c "$sums") || {
  echo "h200_ray_install: a wheel is missing or damaged (above): carry every chunk of one tools/ray-pack run" >&2
  exit 1
}
echo "$(ls "$stage"/*.whl | wc -l) wheels, $(du -sh "$stage" | cut -f1): installing into $target"
mkdir -p "$target"
"$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$target" "$stage"/*.whl \
  || exit 1
PYTHONPATH=$target${PYTHONPATH:+:$PYTHONPATH} "$py" - <<'EOF'
import importlib
import importlib.metadata as md
import sys

problems = []
try:
    from packaging.requirements import Requirement

    for text in md.requires("ray") or []:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate({"extra": "data"}):
            continue
        try:
            have = md.version(req.name)
        except md.PackageNotFoundError:
            problems.append(f"{req.name}: missing (ray asks {req.specifier or 'any'}): pack it (drop it from --present)")
            continue
        if req.specifier and not req.specifier.contains(have, prereleases=True):
            problems.append(f"{req.name} {have} here: ray asks {req.specifier}: pack it (drop it from --present)")
except Exception as exc:  # packaging missing, or no ray metadata: the imports below say more
    problems.append(f"cannot check ray's requirements: {type(exc).__name__}: {exc}")
for name in ("ray", "ray.data", "pyarrow"):
    try:
        module = importlib.import_module(name)
    except Exception as exc:
        problems.append(f"import {name}: {type(exc).__name__}: {exc}")
    else:
        print(f"import {name}: {getattr(module, '__version__', '')} {getattr(module, '__file__', '')}")
for line in problems:
    print("problem:", line)
sys.exit(1 if problems else 0)
EOF
