#!/usr/bin/env bash
# Runs a build graph through the farm on a GPU host and records what docs/recipes.md
# reports: tritonscale (a Triton-kernel package validated with the host's Triton) built
# first, then cudablend (a CUDA package whose build and validation need tritonscale's wheel)
# consuming the farm's wheel, validated on the GPU; then the same graph again (answered from
# the store) and once more after a change to tritonscale (both rebuilt, a new key).
#
# usage: graph_on_gpu_host.sh BUNDLE.tar.xz OUTDIR
#   BUNDLE: bin/{farmd,farm-worker,farmctl} and lib/ with their shared libraries.
#   The host needs nvidia-smi, nvcc and a python3 with torch (CUDA) and triton.
set -uo pipefail
bundle=$1 out=$(mkdir -p "$2" && realpath "$2")
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
mkdir -p "$work/farm"
tar xJf "$bundle" -C "$work/farm"
export LD_LIBRARY_PATH=$work/farm/lib
bin=$work/farm/bin
py=$(command -v python3)
pyver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' ')
cuda=$(nvcc --version | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p')
step() { echo "=== $(date -u +%H:%M:%S) $*"; }
wait_for() {  # FILE SECONDS
  for _ in $(seq 1 $(( $2 * 10 ))); do [[ -s $1 ]] && return 0; sleep 0.1; done
  echo "timed out waiting for $1" >&2; return 1
}

step "host: Python $pyver, GPU cc $cc, CUDA $cuda"
{ nvidia-smi -L; "$py" -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'; } \
  | tee "$out/host.txt"

# The packages, with this host's Python, CUDA and GPU arch in their matrices.
cp -r "$repo/tests/gpu/graph" "$work/graph"
sed -i "s|python: \\[.*\\]|python: [\"$pyver\"]|" "$work/graph"/*/recipe.yaml
sed -i "s|cuda: \\[.*\\]|cuda: [\"$cuda\"]|; s|arch_lists: \\[.*\\]|arch_lists: [\"$cc\"]|" \
  "$work/graph/cudablend/recipe.yaml"

step "farmd and farm-worker"
"$bin/farmd" --data-dir "$work/data" --listen 127.0.0.1:0 --ready-file "$work/addr" \
  --http-listen 127.0.0.1:0 --http-ready-file "$work/http" >"$out/farmd.log" 2>&1 &
farmd_pid=$!
wait_for "$work/addr" 30 || exit 1
"$bin/farm-worker" --server-file "$work/addr" --enroll-token-file "$work/data/enroll.token" \
  --state-dir "$work/worker" --work-dir "$work/worker/work" --name gpu-host --python "$py" \
  >"$out/worker.log" 2>&1 &
worker_pid=$!
trap 'kill "$worker_pid" "$farmd_pid" 2>/dev/null' EXIT
ctl=("$bin/farmctl" --server-file "$work/addr" --token-file "$work/data/admin.token")
for _ in $(seq 1 120); do
  "${ctl[@]}" --output json workers | grep -q '"gpus"' && break; sleep 0.5
done
"${ctl[@]}" workers | tee "$out/workers.txt"

run_graph() {  # NAME: submit cudablend (and so tritonscale), follow, record show and logs
  local name=$1 start end
  start=$(date +%s.%N)
  timeout 1800 "${ctl[@]}" submit "$work/graph/cudablend/recipe.yaml" --follow \
    >"$out/$name.follow.log" 2>&1
  echo "exit $?"
  end=$(date +%s.%N)
  echo "$name: $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s wall" | tee -a "$out/times.txt"
  local build
  build=$(sed -n 's/^farmctl: build \([0-9]*\) of cudablend submitted.*/\1/p' "$out/$name.follow.log")
  "${ctl[@]}" show "$build" >"$out/$name.show.txt"
  "${ctl[@]}" --output json show "$build" >"$out/$name.show.json"
  cat "$out/$name.show.txt"
  local dep_build
  dep_build=$(sed -n 's/.*requires tritonscale job [0-9]* (build \([0-9]*\).*/\1/p' \
    "$out/$name.show.txt" | head -1)
  [[ -n $dep_build ]] && "${ctl[@]}" show "$dep_build" >"$out/$name.tritonscale.show.txt"
  for job in $("$py" -c 'import json,sys; b=json.load(open(sys.argv[1])); print(" ".join(str(j["id"]) for j in b["jobs"]) + " " + " ".join(str(i["job_id"]) for j in b["jobs"] for i in j.get("inputs", [])))' "$out/$name.show.json"); do
    "${ctl[@]}" logs "$job" >"$out/$name.job$job.log" 2>&1
  done
}

step "the graph: tritonscale, then cudablend against the farm's tritonscale wheel"
run_graph first
step "the same graph again: answered from the store"
run_graph unchanged
step "tritonscale changed: a new wheel, so cudablend builds again with a new key"
sed -i 's/^BLOCK = 1024/BLOCK = 512/' "$work/graph/tritonscale/src/tritonscale/__init__.py"
run_graph changed
"$py" - "$out" <<'PY' | tee "$out/keys.txt"
import json, os, sys
for name in ("first", "unchanged", "changed"):
    b = json.load(open(os.path.join(sys.argv[1], name + ".show.json")))
    for j in b["jobs"]:
        wheels = [a["sha256"][:16] for i in j.get("inputs", []) for a in i.get("artifacts", [])]
        print(name, "cudablend job", j["id"], j["state"], "key", j.get("build_key", "")[:16],
              "consumed", wheels, "attempts", len(j.get("attempts", [])))
PY
step "done: $out"
