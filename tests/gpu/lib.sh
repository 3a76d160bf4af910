# What the farm's GPU-host scripts share (sourced, never run): the bundle's binaries, the
# host's torch repacked into real wheels and served by the index fake as the per-CUDA index,
# and bounded waits. A script sets bundle, work and out (absolute paths) and sources this
# file; it gets repo, py, bin, ctl (farmctl with the farm's address and admin token) and
# LD_LIBRARY_PATH pointing at the bundle's libraries. Every process it starts goes into
# $work/pids, which gpu_stop ends.
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
py=${PYTHON:-$(command -v python3)}
mkdir -p "$out" "$work"
bin=$bundle/bin
export LD_LIBRARY_PATH=$bundle/lib
ctl=("$bin/farmctl" --server-file "$work/addr" --token-file "$work/data/admin.token")

say() { echo "=== $(date -u +%H:%M:%S) $*"; }

wait_for() {  # FILE SECONDS: until FILE is not empty
  for _ in $(seq 1 $(($2 * 10))); do [[ -s $1 ]] && return 0; sleep 0.1; done
  echo "timed out waiting for $1" >&2
  return 1
}

# The GPUs, the Python and its torch, into $out/host.txt too.
host_facts() {
  { nvidia-smi -L; "$py" -V
    "$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'; } 2>&1 |
    tee "$out/host.txt"
}

# Sets torch_version (2.11.0+cu130), torch_release (2.11.0) and pyver (3.12) of $py.
host_torch() {
  torch_version=$("$py" -c 'from importlib.metadata import version; print(version("torch"))') ||
    return 1
  torch_release=${torch_version%%+*}
  pyver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
}

# repack_host_torch DIR: the host's torch, what it requires and the build tools it has, as
# real wheels in DIR (tests/fakes/repack_installed.py); the report in $out/repack.json.
repack_host_torch() {
  local dir=$1 closures=(--closure torch) tool start=$SECONDS
  for tool in pip setuptools wheel ninja packaging; do
    "$py" -c "from importlib.metadata import version; version('$tool')" 2>/dev/null &&
      closures+=(--closure "$tool")
  done
  "$py" "$repo/tests/fakes/repack_installed.py" --out "$dir" "${closures[@]}" \
    --accept-modified pip >"$out/repack.json" || return 1
  echo "repacked in $((SECONDS - start)) s: $(ls "$dir" | wc -l) wheels, $(du -sm "$dir" | cut -f1) MiB"
}

# trust_host_pip WHEELHOUSE: the farm's pip (it resolves and installs every lock) is the
# host's own, trusted as installed by the host's admin: moved out of the index into
# $work/trusted; sets farm_pip.
trust_host_pip() {
  mkdir -p "$work/trusted"
  mv "$1"/pip-*.whl "$work/trusted/" || return 1
  farm_pip=$(ls "$work"/trusted/pip-*.whl)
  chmod 0644 "$farm_pip"
  chmod 0755 "$work/trusted"
}

# start_index WHEELHOUSE: the index fake serving WHEELHOUSE as /whl/cu130/; sets index.
start_index() {
  setsid "$py" "$repo/tests/fakes/fake_pyindex.py" --ready-file "$work/index.url" \
    --index "/whl/cu130=$1" >"$out/index.log" 2>&1 </dev/null &
  echo $! >>"$work/pids"
  wait_for "$work/index.url" 20 || { cat "$out/index.log"; return 1; }
  index=$(cat "$work/index.url")
}

# start_farmd [FLAGS...]: farmd with its dashboard, pulling the index through; sets http.
start_farmd() {
  setsid "$bin/farmd" --data-dir "$work/data" --listen 127.0.0.1:0 --ready-file "$work/addr" \
    --http-listen 127.0.0.1:0 --http-ready-file "$work/http" \
    --upstream-index "cu130=$index/whl/cu130/" "$@" >"$out/farmd.log" 2>&1 </dev/null &
  echo $! >>"$work/pids"
  wait_for "$work/addr" 30 && wait_for "$work/http" 30 || { tail -20 "$out/farmd.log"; return 1; }
  http=$(cat "$work/http")
}

# start_provisioning_worker [FLAGS...]: a worker named gpu-host that makes each cell's
# environment itself (--provision, no --python); returns once farmd lists it.
start_provisioning_worker() {
  setsid "$bin/farm-worker" --server-file "$work/addr" --enroll-token-file "$work/data/enroll.token" \
    --state-dir "$work/worker" --work-dir "$work/worker/work" --name gpu-host --provision \
    "$@" >"$out/worker.log" 2>&1 </dev/null &
  echo $! >>"$work/pids"
  for _ in $(seq 1 120); do "${ctl[@]}" workers 2>/dev/null | grep -q gpu-host && return 0; sleep 0.5; done
  echo "the worker did not register" >&2
  return 1
}

gpu_stop() { [[ -f $work/pids ]] && xargs -r kill <"$work/pids" 2>/dev/null; }
