#!/usr/bin/env bash
# pip or uv installing a provisioned environment, on a GPU host with no network: the host's
# own torch and what it requires, repacked from their RECORD files into real wheels
# (tests/fakes/repack_installed.py), are served by the index fake as the per-CUDA index;
# farm-provision makes the same environment (the host's CPython, torch and every
# requirement pinned by version) three times, each in a fresh cache: with pip, with uv,
# and with uv again into the second cache's snapshot (a clone). Then it imports torch from
# each environment and runs a CUDA matmul. Prints each run's phase times (JSON) and the
# package counts.
#
# usage: installer_on_gpu_host.sh BUNDLE_DIR WORK OUTDIR
#   BUNDLE_DIR: bin/farm-provision and lib/ (docker/bundle-libs.sh)
# env: PYTHON (default python3: the interpreter whose installed torch is repacked), UV
# (default: the uv on PATH)
set -uo pipefail
bundle=$(realpath "$1") work=$(realpath -m "$2") out=$(realpath -m "$3")
repo=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON:-$(command -v python3)}
uv=${UV:-$(command -v uv)}
[[ -x $uv ]] || { echo "no uv on this host"; exit 77; }
mkdir -p "$out" "$work"
export LD_LIBRARY_PATH=$bundle/lib
say() { echo "=== $(date -u +%H:%M:%S) $*"; }

say "host: $("$uv" --version), $("$py" -V)"
torch_version=$("$py" -c 'from importlib.metadata import version; print(version("torch"))') || exit 1
pip_version=$("$py" -c 'from importlib.metadata import version; print(version("pip"))') || exit 1
pyver=$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
base=$("$py" -c 'import sys; print(sys._base_executable)')
start=$SECONDS
"$py" "$repo/tests/fakes/repack_installed.py" --out "$work/wheelhouse" --closure torch \
  --closure pip --accept-modified pip >"$out/repack.json" || exit 1
echo "repacked in $((SECONDS - start)) s: $(ls "$work/wheelhouse" | wc -l) wheels, $(du -sm "$work/wheelhouse" | cut -f1) MiB"
rm -f "$work/index.url"
"$py" "$repo/tests/fakes/fake_pyindex.py" --ready-file "$work/index.url" \
  --index "/whl/cu130=$work/wheelhouse" >"$out/index.log" 2>&1 </dev/null &
index_pid=$!
for _ in $(seq 1 200); do [[ -s $work/index.url ]] && break; sleep 0.1; done
index=$(cat "$work/index.url")
reqs=()
while read -r pin; do reqs+=(--requirement "$pin"); done < <("$py" -c '
import json, sys
for w in json.load(open(sys.argv[1]))["wheels"]:
    if w["name"].lower() not in ("torch", "pip"): print("%s==%s" % (w["name"], w["version"]))
' "$out/repack.json")
echo "pins: torch==$torch_version, pip==$pip_version and $(( ${#reqs[@]} / 2 )) requirements"

provision() {  # NAME CACHE [ARGS...]
  local name=$1 cache=$2; shift 2
  mkdir -p "$work/$name"
  local start=$SECONDS
  "$bundle/bin/farm-provision" --cache "$cache" --job-dir "$work/$name" --python "${pyver%.*}" \
    --torch "$torch_version" --index "cu130=$index/whl/cu130/" --index "default=$index/whl/cu130/" --host-python "$pyver=$base" \
    --installer "pip==$pip_version" --glibc "$("$py" -c "import platform; print(platform.libc_ver()[1])")" "${reqs[@]}" "$@" >"$out/$name.json" 2>"$out/$name.err"
  local rc=$?
  echo "$name: exit $rc in $((SECONDS - start)) s: $("$py" -c '
import json, sys
d = json.load(open(sys.argv[1]))
print({k: d.get(k) for k in ("snapshot_built", "python_ms", "snapshot_ms", "clone_ms")}, d.get("error", ""))
' "$out/$name.json" 2>&1)"
  "$work/$name/venv/bin/python" -c '
import torch, time
t = time.time(); x = torch.randn(4096, 4096, device="cuda"); y = (x @ x).sum().item()
print("  torch", torch.__version__, "on", torch.cuda.get_device_name(0), "matmul ok", round(time.time() - t, 2), "s")
' 2>&1 | tail -2
}

say "pip into a fresh cache"
provision pip "$work/cache-pip"
say "uv into a fresh cache"
provision uv "$work/cache-uv" --uv "$uv"
say "uv again: the snapshot is cloned"
provision uv-again "$work/cache-uv" --uv "$uv"
kill "$index_pid" 2>/dev/null
