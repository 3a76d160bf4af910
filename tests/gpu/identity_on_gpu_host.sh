#!/usr/bin/env bash
# One name, one wheel on a GPU host, through the farm (bundle as in run_on_gpu_host.sh):
# the install script picking this GPU's index view for real, SageAttention built twice on
# two workers without the compile cache (same bytes?), and SageAttention for the
# Blackwell GPUs (12.0a, 12.1a) built here, with manifests, waiting for their hardware.
# Phases, so that each fits one command's time; the farm and its state stay under
# FARM_GPU_WORK between phases (daemons started with setsid).
#
# usage: identity_on_gpu_host.sh PHASE BUNDLE.tar.xz SAGEATTENTION.tar.gz OUTDIR
#   PHASE: start | install | sage-a | sage-b | sage-blackwell | report
set -uo pipefail
phase=$1 bundle=$2 sa_tarball=$(realpath "$3") out=$4
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=${FARM_GPU_WORK:-/tmp/farm-gpu}
mkdir -p "$work" "$out"
py=$(command -v python3)
pyver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
torch_site=$("$py" -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))')
# The bundle's libraries serve the bundle's binaries alone: curl, pip and the builds keep
# the host's (the bubblewrap binary the bundle may carry is put on PATH).
lib=$work/farm/lib bin=$work/farm/bin
export PATH=$bin:$PATH
ctl=(env LD_LIBRARY_PATH="$lib" "$bin/farmctl" --server-file "$work/addr" --token-file "$work/data/admin.token")
step() { echo "=== $(date -u +%H:%M:%S) $*"; }
wait_for() {  # FILE SECONDS
  for _ in $(seq 1 $(( $2 * 10 ))); do [[ -s $1 ]] && return 0; sleep 0.1; done
  echo "timed out waiting for $1" >&2; return 1
}
start_worker() {  # NAME [FLAGS...]
  local name=$1; shift
  setsid env LD_LIBRARY_PATH="$lib" "$bin/farm-worker" --server-file "$work/addr" --enroll-token-file "$work/data/enroll.token" \
    --state-dir "$work/$name" --work-dir "$work/$name/work" --name "$name" --python "$py" "$@" \
    >>"$work/$name.log" 2>&1 < /dev/null &
  echo $! >"$work/$name.pid"
}
stop_worker() { [[ -f $work/$1.pid ]] && kill "$(cat "$work/$1.pid")" 2>/dev/null; sleep 2; }
sage_recipe() {  # ARCH_LIST...: the catalog recipe for this host's Python, these arch lists
  local lists; lists=$(printf '"%s", ' "$@"); lists=${lists%, }
  sed -e "s|^env:|env:\n  PYTHONPATH: \"$torch_site\"\n  MAX_JOBS: \"16\"|" \
      -e "s|python: \\[.*\\]|python: [\"$pyver\"]|" -e "s|arch_lists: \\[.*\\]|arch_lists: [$lists]|" \
      -e "s|torch: \\[.*\\]|torch: [\"2.11\"]|" -e "s|cuda: \\[.*\\]|cuda: [\"13.0\"]|" \
      -e "s|platform: \\[.*\\]|platform: [linux_x86_64]|" -e '/^  exclude:/,/^publish:/{/^publish:/!d}' \
      "$repo/kernels/sageattention/recipe.yaml" >"$repo/kernels/sageattention/recipe-gpu-host.yaml"
  echo "$repo/kernels/sageattention/recipe-gpu-host.yaml"
}
show_wheels() {  # BUILD
  "${ctl[@]}" --output json show "$1" | "$py" -c '
import json, sys
b = json.load(sys.stdin)
print("build", b["id"], b["state"])
for j in b["jobs"]:
    for a in j.get("artifacts", []):
        v = a.get("validation", {})
        print(" ", a["filename"], a["sha256"], a.get("size"), v.get("state"), (v.get("message") or "")[:160])
        m = a.get("manifest", {})
        print("    runs on:", " ".join(m.get("runs_on", [])), "missing:", m.get("missing", []))
        print("    images:", sorted({i.get("kind", "") + ":" + i.get("arch", "") for i in m.get("images", [])}))
    for at in j.get("attempts", []):
        print("  attempt", at.get("number"), at.get("cause", ""), at.get("started_at"),
              at.get("finished_at"), "rss", at.get("peak_rss_bytes"), "cache", at.get("compile_cache", {}))'
}

case $phase in
start)
  step "bundle, farmd with the index, worker-a"
  rm -rf "$work/farm" && mkdir -p "$work/farm" && tar xJf "$bundle" -C "$work/farm"
  { nvidia-smi -L; nvcc --version | tail -1; "$py" -c 'import torch; print("torch", torch.__version__)';
    LD_LIBRARY_PATH=$lib bwrap --version; } 2>&1 | tee "$out/host.txt"
  setsid env LD_LIBRARY_PATH="$lib" "$bin/farmd" --data-dir "$work/data" --listen 127.0.0.1:0 --ready-file "$work/addr" \
    --http-listen 127.0.0.1:0 --http-ready-file "$work/http" >>"$work/farmd.log" 2>&1 < /dev/null &
  wait_for "$work/addr" 30 || exit 1
  wait_for "$work/http" 30 || exit 1
  start_worker worker-a --sandbox bwrap
  for _ in $(seq 1 120); do "${ctl[@]}" --output json workers | grep -q '"gpus"' && break; sleep 0.5; done
  "${ctl[@]}" workers
  ;;
install)
  step "example for two arch lists in one build, then the install script on this GPU"
  sed -e "s|python: \\[.*\\]|python: [\"$pyver\"]|" \
      -e 's|arch_lists: \[.*\]|arch_lists: ["9.0;12.0a;12.1a", "12.1a"]|' \
      "$repo/kernels/examples/attn_example/recipe.yaml" >"$repo/kernels/examples/attn_example/recipe-gpu-host.yaml"
  timeout 400 "${ctl[@]}" submit "$repo/kernels/examples/attn_example/recipe-gpu-host.yaml" \
    --follow >"$out/example_build.log" 2>&1; echo "submit exit $?"; tail -3 "$out/example_build.log"
  show_wheels 1 | tee "$out/example_wheels.txt"
  http=$(cat "$work/http")
  rm -rf "$work/venv" && "$py" -m venv "$work/venv"
  curl -fsS "http://$http/install" -o "$work/install.py"
  "$work/venv/bin/python" "$work/install.py" attn-example --farm "http://$http" 2>&1 | tee "$out/install.txt"
  echo "install exit ${PIPESTATUS[0]}"
  "$work/venv/bin/python" -m pip list 2>/dev/null | grep -i attn | tee -a "$out/install.txt"
  "$work/venv/bin/python" -c 'import attn_example, sys; print("imported", attn_example.__file__)' 2>&1 \
    | tee -a "$out/install.txt"
  ;;
sage-a)
  step "SageAttention 9.0a on worker-a (compile cache on, cold)"
  recipe=$(sage_recipe 9.0a)
  timeout 560 "${ctl[@]}" submit "$recipe" --source-tarball "$sa_tarball" --follow \
    >"$out/sage_a.log" 2>&1; echo "submit exit $?"; tail -4 "$out/sage_a.log"
  ;;
sage-b)
  step "SageAttention 9.0a again on worker-b: own work dir, no compile cache"
  stop_worker worker-a
  start_worker worker-b --sandbox bwrap --no-ccache
  recipe=$(sage_recipe 9.0a)
  timeout 560 "${ctl[@]}" submit "$recipe" --source-tarball "$sa_tarball" --force --follow \
    >"$out/sage_b.log" 2>&1; echo "submit exit $?"; tail -4 "$out/sage_b.log"
  ;;
sage-blackwell)
  step "SageAttention 12.0a and 12.1a (RTX 5090, GB10) built here"
  stop_worker worker-b
  start_worker worker-a --sandbox bwrap
  recipe=$(sage_recipe 12.0a 12.1a)
  timeout 580 "${ctl[@]}" submit "$recipe" --source-tarball "$sa_tarball" --follow \
    >"$out/sage_blackwell.log" 2>&1; echo "submit exit $?"; tail -4 "$out/sage_blackwell.log"
  ;;
report)
  for b in $("${ctl[@]}" --output json list | "$py" -c 'import json,sys; print(" ".join(str(b["id"]) for b in json.load(sys.stdin)["builds"]))'); do
    show_wheels "$b"
  done 2>&1 | tee "$out/wheels.txt"
  http=$(cat "$work/http")
  curl -fsS "http://$http/simple/" -H 'Accept: application/vnd.pypi.simple.v1+json' >"$out/directory.json"
  for v in $(ls "$work"/*.log); do tail -n 5 "$v"; done >"$out/daemon_tails.txt" 2>&1
  grep -h "sandbox\|WITHOUT" "$work"/worker-*.log | head -5
  ;;
esac
