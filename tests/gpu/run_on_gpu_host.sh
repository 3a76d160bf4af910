#!/usr/bin/env bash
# Runs the farm on a GPU host from a bundle of binaries and records what docs/ reports:
# the worker's capability probe, the example package and SageAttention built through the
# farm and validated on the GPU, and the arch-manifest parser against cuobjdump over the
# built wheels and PyTorch's own CUDA libraries.
#
# usage: run_on_gpu_host.sh BUNDLE.tar.xz SAGEATTENTION.tar.gz OUTDIR
#   BUNDLE: bin/{farmd,farm-worker,farmctl} and lib/ with their shared libraries.
#   The host needs nvidia-smi, cuobjdump, nvcc and a python3 with torch (CUDA).
set -uo pipefail
bundle=$1 sa_tarball=$(realpath "$2") out=$3
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
mkdir -p "$work/farm" "$out"
tar xJf "$bundle" -C "$work/farm"
export LD_LIBRARY_PATH=$work/farm/lib
bin=$work/farm/bin
py=$(command -v python3)
pyver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
torch_site=$("$py" -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))')
step() { echo "=== $(date -u +%H:%M:%S) $*"; }

wait_for() {  # FILE SECONDS
  for _ in $(seq 1 $(( $2 * 10 ))); do [[ -s $1 ]] && return 0; sleep 0.1; done
  echo "timed out waiting for $1" >&2; return 1
}

step "host"
"$bin/farm-worker" --probe --work-dir "$work/probe" >"$out/probe.json" 2>"$out/probe.log"
echo "farm-worker --probe exit $?"; cat "$out/probe.log"
{ nvidia-smi -L; nvcc --version | tail -1; "$py" -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'; } \
  > "$out/host.txt" 2>&1
cat "$out/host.txt"

step "farmd and farm-worker"
"$bin/farmd" --data-dir "$work/data" --listen 127.0.0.1:0 --ready-file "$work/addr" \
  --http-listen 127.0.0.1:0 --http-ready-file "$work/http" >"$out/farmd.log" 2>&1 &
wait_for "$work/addr" 30 || exit 1
"$bin/farm-worker" --server-file "$work/addr" --enroll-token-file "$work/data/enroll.token" \
  --state-dir "$work/worker" --work-dir "$work/worker/work" --name gpu-host --python "$py" \
  >"$out/worker.log" 2>&1 &
ctl=("$bin/farmctl" --server-file "$work/addr" --token-file "$work/data/admin.token")
for _ in $(seq 1 120); do
  "${ctl[@]}" --output json workers | grep -q '"gpus"' && break; sleep 0.5
done
"${ctl[@]}" --output json workers >"$out/capabilities.json"
"${ctl[@]}" workers

step "example package through the farm"
# The catalog recipe lists the Pythons it supports; this host offers its own.
sed "s|python: \\[.*\\]|python: [\"$pyver\"]|" "$repo/kernels/examples/attn_example/recipe.yaml" \
  >"$repo/kernels/examples/attn_example/recipe-gpu-host.yaml"
timeout 300 "${ctl[@]}" submit "$repo/kernels/examples/attn_example/recipe-gpu-host.yaml" --python "$pyver" \
  --arch-list "9.0;12.0a;12.1a" --follow --download "$work/wheels" >"$out/attn_example_build.log" 2>&1
echo "exit $?"; tail -4 "$out/attn_example_build.log"
"${ctl[@]}" --output json show 1 >"$out/attn_example_build.json"

step "a wheel for other GPUs only: never validated here"
sed -i 's|arch_lists: \[\(.*\)\]|arch_lists: [\1, "12.0a;12.1a"]|' \
  "$repo/kernels/examples/attn_example/recipe-gpu-host.yaml"
timeout 300 "${ctl[@]}" submit "$repo/kernels/examples/attn_example/recipe-gpu-host.yaml" --python "$pyver" \
  --arch-list "12.0a;12.1a" --follow >"$out/attn_example_blackwell_build.log" 2>&1
echo "exit $?"; tail -3 "$out/attn_example_blackwell_build.log"
"${ctl[@]}" --output json show 2 >"$out/attn_example_blackwell_build.json"

step "SageAttention through the farm"
# Written beside the catalog recipe so farmctl sends its validation script along.
recipe=$repo/kernels/sageattention/recipe-gpu-host.yaml
sed "s|^env:|env:\n  PYTHONPATH: \"$torch_site\"\n  MAX_JOBS: \"16\"|" \
  "$repo/kernels/sageattention/recipe.yaml" >"$recipe"
# The catalog matrix spans Pythons, torch/CUDA pairs and aarch64 (12.1a): this host's cell.
timeout 420 "${ctl[@]}" submit "$recipe" --python "$pyver" --cuda 13.0 --arch-list 9.0a \
  --source-tarball "$sa_tarball" \
  --follow --download "$work/wheels" >"$out/sageattention_build.log" 2>&1
rc=$?; echo "exit $rc"; tail -n $(( rc ? 60 : 4 )) "$out/sageattention_build.log"
"${ctl[@]}" --output json show 3 >"$out/sageattention_build.json"

step "validation by the farm (clean venv, GPU the wheel serves)"
for f in "$out"/*_build.json; do
  "$py" - "$f" <<'PY'
import json, sys
build = json.load(open(sys.argv[1]))
for job in build.get("jobs", []):
    for a in job.get("artifacts", []):
        v = a.get("validation", {})
        print(f"{a['filename']}: {v.get('state')}: {v.get('message')}")
        for c in v.get("cases", []):
            print(f"  {c.get('name')}: cosine {c.get('cosine', 0):.6f} rel_l1 {c.get('relative_l1', 0):.2e} "
                  f"tops {c.get('tops', 0):.1f} baseline {c.get('baseline_tops', 0):.1f} passed {c.get('passed', False)}")
    for at in job.get("attempts", []):
        print(f"  attempt {at.get('number')}: {at.get('cause')} {at.get('detail', '')}")
PY
done 2>&1 | tee "$out/validation_by_farm.txt"
grep -h "probe kernels\|quarantined" "$out/worker.log" | head -5

step "arch manifest against cuobjdump"
compare() {  # SO LABEL
  # cuobjdump's own notes ("No PTX file found") are not images.
  cuobjdump --list-elf --list-ptx "$1" 2>&1 | grep -v '^cuobjdump info' | sed 's/^ *//' \
    | sort >"$work/cuobjdump.txt"
  "$bin/farmctl" inspect "$1" --cuobjdump 2>&1 | sed 's/^ *//' | sort >"$work/farm.txt"
  if diff -q "$work/cuobjdump.txt" "$work/farm.txt" >/dev/null; then verdict=identical;
  else verdict="differs: $(diff "$work/cuobjdump.txt" "$work/farm.txt" | grep -c '^[<>]') lines"; fi
  echo "$2: $(wc -l <"$work/cuobjdump.txt") cuobjdump lines, $(wc -l <"$work/farm.txt") farm lines, $verdict"
  diff "$work/cuobjdump.txt" "$work/farm.txt" | head -20 | sed 's/^/    /'
}
{
  for whl in "$work"/wheels/*.whl; do
    d=$work/unz-$(basename "$whl"); mkdir -p "$d"; (cd "$d" && "$py" -m zipfile -e "$whl" .)
    while read -r so; do compare "$so" "$(basename "$whl"):${so#$d/}"; done < <(find "$d" -name '*.so')
  done
  # FARM_GPU_SKIP_TORCH_LIBS=1 leaves out PyTorch's own libraries (minutes of cuobjdump).
  [[ ${FARM_GPU_SKIP_TORCH_LIBS:-0} == 1 ]] || for lib in libc10_cuda.so libtorch_cuda.so; do
    [[ -f $torch_site/torch/lib/$lib ]] && timeout 200 bash -c "$(declare -f compare); work=$work bin=$bin compare $torch_site/torch/lib/$lib torch/lib/$lib"
  done
} >"$out/manifest_vs_cuobjdump.txt" 2>&1
head -60 "$out/manifest_vs_cuobjdump.txt"
step "done"
