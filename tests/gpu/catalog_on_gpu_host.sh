#!/usr/bin/env bash
# Builds the catalog's recipes through the farm on a GPU host (x86_64, no network) and
# records what each one did: its jobs, manifests, validation reports and what the index
# lists. One STEP per call, each meant to finish within 10 minutes; farmd's data and the
# worker's compile cache live in WORK, so a build cut off by the time limit finishes
# sooner when its step runs again.
#
# usage: catalog_on_gpu_host.sh STEP BUNDLE.tar.xz SOURCES_DIR WORK OUTDIR
#   STEP: sage-hopper | sage-blackwell | sageattn3 | flash-attn | flash-attn-3 | triton | index
#         | arrival (the example built by a GPU-less worker, validated by a GPU worker started later)
#   BUNDLE: bin/{farmd,farm-worker,farmctl} and lib/ with their shared libraries.
#   SOURCES_DIR: the source tarballs (one top directory each, submodules filled in):
#     sageattention-d1a57a5.tar.gz  thu-ml/SageAttention d1a57a546c3d395b1ffcbeecc66d81db76f3b4b5
#                                   with NVIDIA/cutlass 4faf1a1568cf1e4ad8ff71846a13e16f2a6a6f6b
#                                   at sageattention3_blackwell/csrc/cutlass
#     flash-attention-v2.8.3.tar.gz Dao-AILab/flash-attention 060c9188beec3a8b62b33a3bfa6d5d2d44975fab
#                                   with csrc/cutlass at dc4817921edda44a549197ff3a9dcf5df0636e7b
#     flash-attention-0251105.tar.gz Dao-AILab/flash-attention 0251105a2fb19d2957484b7f023cd8c115286ced
#                                   with csrc/cutlass at 7127592069c2fe01b041e174ba4345ef9b279671
#   The host needs a python3 with torch (CUDA) and triton, nvcc and nvidia-smi.
# The triton step runs the recipe's validation script against the Triton installed on the
# host (building Triton needs the network).
set -uo pipefail
step=$1 bundle=$2 sources=$(realpath "$3") work=$4 out=$5
repo=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$work" "$out"
work=$(realpath "$work")
[[ -x $work/farm/bin/farmd ]] || { mkdir -p "$work/farm" && tar xJf "$bundle" -C "$work/farm"; }
export LD_LIBRARY_PATH=$work/farm/lib
bin=$work/farm/bin
py=$(command -v python3)
pyver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
torch_site=$("$py" -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))')
ctl=("$bin/farmctl" --server-file "$work/addr" --token-file "$work/data/admin.token")
say() { echo "=== $(date -u +%H:%M:%S) $*"; }

wait_for() {  # FILE SECONDS
  for _ in $(seq 1 $(( $2 * 10 ))); do [[ -s $1 ]] && return 0; sleep 0.1; done
  echo "timed out waiting for $1" >&2; return 1
}

start_farm() {  # [worker env...]: the first worker's environment
  rm -f "$work/addr" "$work/http"
  "$bin/farmd" --data-dir "$work/data" --listen 127.0.0.1:0 --ready-file "$work/addr" \
    --http-listen 127.0.0.1:0 --http-ready-file "$work/http" >>"$out/farmd.log" 2>&1 &
  farmd_pid=$!
  wait_for "$work/addr" 30 || exit 1
  start_worker "${first_worker:-gpu-host}" "$work/worker" "$@"
}

worker_pids=()
start_worker() {  # NAME STATE_DIR [ENV...]; waits until the worker registered
  local name=$1 state=$2; shift 2
  env "$@" "$bin/farm-worker" --server-file "$work/addr" --enroll-token-file "$work/data/enroll.token" \
    --state-dir "$state" --work-dir "$state/work" --name "$name" --python "$py" \
    >>"$out/worker.log" 2>&1 &
  worker_pids+=($!)
  for _ in $(seq 1 120); do "${ctl[@]}" --output json workers | grep -q "\"$name\"" && break; sleep 0.5; done
}

stop_farm() {
  for pid in "${worker_pids[@]}"; do kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
  kill -TERM "$farmd_pid" 2>/dev/null; wait "$farmd_pid" 2>/dev/null
}

# Lists what /simple/PROJECT/ offers (an error text when it has no page).
index_page() {  # PROJECT
  "$py" -c 'import sys, urllib.request as u
try: print(u.urlopen(sys.argv[1], timeout=10).read().decode())
except Exception as e: print("error:", e)' "http://$(cat "$work/http")/simple/$1/"
}

# Writes <package>/recipe-gpu-host.yaml beside the catalog recipe (patches and the
# validation script resolve as for the catalog one): this host's cell, torch from the
# host's Python, and extra env lines.
host_recipe() {  # PACKAGE ARCH_LISTS(json list) [KEY=VALUE...]
  local package=$1 arches=$2; shift 2
  "$py" - "$repo/kernels/$package/recipe.yaml" "$pyver" "$arches" "$torch_site" "$@" <<'PY'
import re, sys
path, pyver, arches, torch_site, *env = sys.argv[1:]
text = open(path).read()
matrix = (f'matrix:\n  python: ["{pyver}"]\n  torch: ["2.11"]\n  cuda: ["13.0"]\n'
          f'  arch_lists: {arches}\n  platform: [linux_x86_64]\n')
text = re.sub(r"(?ms)^matrix:\n.*?(?=^\S)", matrix, text)
lines = [f'  PYTHONPATH: "{torch_site}"'] + [f'  {k}: "{v}"' for k, v in (e.split("=", 1) for e in env)]
text = re.sub(r"(?m)^env:\n", "env:\n" + "\n".join(lines) + "\n", text) if "\nenv:\n" in text \
    else text.replace("\nbuild:", "\nenv:\n" + "\n".join(lines) + "\nbuild:", 1)
out = path.replace("recipe.yaml", "recipe-gpu-host.yaml")
open(out, "w").write(text)
print(out)
PY
}

# Submits RECIPE with SOURCE, follows it for at most SECONDS and records the build.
build() {  # NAME RECIPE SOURCE SECONDS
  say "$1: submit"
  timeout "$4" "${ctl[@]}" submit "$2" --python "$pyver" --source-tarball "$3" --follow \
    >"$out/$1_build.log" 2>&1
  local rc=$?
  echo "exit $rc"; tail -n $(( rc ? 40 : 6 )) "$out/$1_build.log"
  local id
  id=$("${ctl[@]}" --output json list --limit 1 | "$py" -c \
    'import json,sys; d=json.load(sys.stdin); b=d.get("builds", d) if isinstance(d, dict) else d; print(b[0]["id"])')
  "${ctl[@]}" --output json show "$id" >"$out/$1_build.json"
  "${ctl[@]}" show "$id" | tee "$out/$1_show.txt"
}

if [[ $step == arrival ]]; then
  # The first worker sees no GPU (the CUDA driver honours CUDA_VISIBLE_DEVICES).
  work=$work/arrival; mkdir -p "$work"
  ctl=("$bin/farmctl" --server-file "$work/addr" --token-file "$work/data/admin.token")
  first_worker=cpu-host start_farm CUDA_VISIBLE_DEVICES=-1
else
  start_farm
fi
trap stop_farm EXIT
case $step in
  sage-hopper)
    build sage_hopper "$(host_recipe sageattention '["9.0a"]' MAX_JOBS=16)" \
      "$sources/sageattention-d1a57a5.tar.gz" 560 ;;
  sage-blackwell)  # no such GPU here: built with a matching manifest, waiting for hardware
    build sage_blackwell "$(host_recipe sageattention '["12.0a", "12.1a"]' MAX_JOBS=16)" \
      "$sources/sageattention-d1a57a5.tar.gz" 560 ;;
  sageattn3)  # the patch takes 12.0a from the arch list; an H100 cannot validate it
    build sageattn3 "$(host_recipe sageattn3 '["12.0a"]')" "$sources/sageattention-d1a57a5.tar.gz" 560 ;;
  flash-attn)  # Hopper only; run again until the build succeeds (the compile cache keeps the work)
    build flash_attn "$(host_recipe flash-attn '["9.0"]' FLASH_ATTN_HEAD_DIMS=128 MAX_JOBS=16)" \
      "$sources/flash-attention-v2.8.3.tar.gz" 560 ;;
  flash-attn-3)  # head dim 128 only, without FP8 and the optional features
    reduced=()
    for f in HDIM64 HDIM96 HDIM192 HDIM256 HDIMDIFF64 HDIMDIFF192 FP8 SPLIT PAGEDKV APPENDKV \
             LOCAL SOFTCAP PACKGQA CLUSTER SM80 VARLEN; do
      reduced+=("FLASH_ATTENTION_DISABLE_$f=TRUE")
    done
    build flash_attn_3 "$(host_recipe flash-attn-3 '["9.0a"]' "${reduced[@]}")" \
      "$sources/flash-attention-0251105.tar.gz" 560 ;;
  triton)
    say "triton: the recipe's validation script against the installed Triton"
    "$py" -c 'import triton; print("triton", triton.__version__, triton.__file__)' | tee "$out/triton.txt"
    timeout 300 "$py" "$repo/kernels/triton/validate_triton.py" --device cuda:0 \
      --report "$out/triton_validation.json" >>"$out/triton.txt" 2>&1
    echo "exit $?" | tee -a "$out/triton.txt"
    "$py" -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["state"], r["message"])
for c in r["cases"]: print(" ", c["name"], c.get("cosine"), c.get("relative_l1"), c.get("throughput"),
                          c.get("throughput_unit"), "baseline", c.get("baseline_throughput"), c["passed"])' \
      "$out/triton_validation.json" | tee -a "$out/triton.txt" ;;
  index)  # what the pip index offers: only validated wheels
    http=$(cat "$work/http")
    for project in sageattention sageattn3 flash-attn flash-attn-3; do
      echo "--- /simple/$project/"; index_page "$project"
    done | tee "$out/index.txt"
    "${ctl[@]}" list | tee -a "$out/index.txt" ;;
  arrival)  # a GPU-less worker builds 9.0;12.0a; a GPU worker that arrives later validates
    "${ctl[@]}" workers | tee "$out/arrival.txt"
    sed -e "s|python: \\[.*\\]|python: [\"$pyver\"]|" -e 's|arch_lists: \[.*\]|arch_lists: ["9.0;12.0a"]|' \
      "$repo/kernels/examples/attn_example/recipe.yaml" >"$repo/kernels/examples/attn_example/recipe-gpu-host.yaml"
    say "arrival: build on the GPU-less worker"
    timeout 300 "${ctl[@]}" submit "$repo/kernels/examples/attn_example/recipe-gpu-host.yaml" \
      --python "$pyver" --arch-list "9.0;12.0a" --follow >"$out/arrival_build.log" 2>&1
    echo "exit $?" | tee -a "$out/arrival.txt"
    { "${ctl[@]}" show 1; echo "--- /simple/attn-example/ before"; index_page attn-example; } \
      | tee -a "$out/arrival.txt"
    say "arrival: a GPU worker registers"
    start_worker gpu-arrives "$work/worker2"
    for _ in $(seq 1 240); do
      "${ctl[@]}" --output json show 1 | "$py" -c 'import json, sys
jobs = json.load(sys.stdin).get("jobs", [])
sys.exit(0 if any(j.get("kind") == "JOB_VALIDATE" and j.get("state") in ("JOB_SUCCEEDED", "JOB_FAILED")
                  for j in jobs) else 1)' && break; sleep 1
    done
    { "${ctl[@]}" workers; "${ctl[@]}" show 1; echo "--- /simple/attn-example/ after"
      index_page attn-example; } | tee -a "$out/arrival.txt"
    "${ctl[@]}" --output json show 1 >"$out/arrival_build.json" ;;
  *) echo "unknown step $step" >&2; exit 2 ;;
esac
say "done"
