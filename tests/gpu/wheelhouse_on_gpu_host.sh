#!/usr/bin/env bash
# The GPU host's own torch as an upstream index, without the network: repacks the host
# Python's installed torch and everything it requires into real wheels from their RECORD
# files (tests/fakes/repack_installed.py: the installed bytes, each checked against its
# RECORD hash), serves them with the index fake as PyTorch's per-CUDA index (/whl/cu130/),
# installs torch from it with pip into a clean venv, checks that torch imports there and
# computes on the GPU, and compares every installed file of torch with the host's.
# The provisioner and farmd's pull-through cache can then be pointed at the printed URL.
#
# usage: wheelhouse_on_gpu_host.sh OUTDIR [--serve SECONDS]
#   --serve: keep the index up that long after the check (for a worker or farmd to use).
# env:   PYTHON (default python3: the interpreter with torch), LABEL (default cu130).
# Leaves in OUTDIR: host.txt, repack.json, pip.log, check.txt, identity.txt, counters.json.
set -uo pipefail
out=$(realpath -m "$1"); serve=0
[[ ${2:-} == --serve ]] && serve=${3:?--serve needs seconds}
repo=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON:-$(command -v python3)}
label=${LABEL:-cu130}
mkdir -p "$out"
work=$(mktemp -d)
index_pid=
cleanup() { [[ -n $index_pid ]] && kill "$index_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
step() { echo "=== $(date -u +%H:%M:%S) $*"; }
now() { date +%s.%N; }
since() { "$py" -c 'import sys, time; print("%.1f" % (time.time() - float(sys.argv[1])))' "$1"; }

step "host"
{ nvidia-smi -L; "$py" -V
  "$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'; } 2>&1 | tee "$out/host.txt"
torch_version=$("$py" -c 'from importlib.metadata import version; print(version("torch"))') || exit 1

step "repack torch $torch_version and what it requires from their RECORD files"
start=$(now)
"$py" "$repo/tests/fakes/repack_installed.py" --out "$work/wheelhouse" --closure torch \
  >"$out/repack.json"
repack_rc=$?
echo "repack: exit $repack_rc in $(since "$start") s"
"$py" - "$out/repack.json" "$work/wheelhouse" <<'PY'
import json, os, sys
s = json.load(open(sys.argv[1]))
size = sum(os.path.getsize(os.path.join(sys.argv[2], f)) for f in os.listdir(sys.argv[2]))
print("wheels: %d, files: %d, installed bytes: %.0f MiB, wheelhouse: %.0f MiB, repack %.1f s"
      % (len(s["wheels"]), s["total_files"], s["total_bytes"] / 2**20, size / 2**20, s["seconds"]))
for w in sorted(s["wheels"], key=lambda w: -w["bytes"])[:8]:
    print("  %-70s %6d files %7.0f MiB" % (w["file"], w["files"], w["bytes"] / 2**20))
for r in s["refused"]:
    print("  refused %s: %s" % (r["name"], r["reason"]))
if s["missing"]:
    print("  required but not installed (markers not evaluated):", ", ".join(s["missing"]))
PY

step "serve it as /whl/$label/"
"$py" "$repo/tests/fakes/fake_pyindex.py" --ready-file "$work/index.url" \
  --index "/whl/$label=$work/wheelhouse" >"$out/index.log" 2>&1 &
index_pid=$!
for _ in $(seq 1 200); do [[ -s $work/index.url ]] && break; sleep 0.1; done
[[ -s $work/index.url ]] || { echo "the index did not start"; cat "$out/index.log"; exit 1; }
url=$(cat "$work/index.url")/whl/$label/
echo "index: $url"

step "pip install torch==$torch_version from it into a clean venv"
"$py" -m venv "$work/venv" || exit 1
start=$(now)
"$work/venv/bin/python" -m pip install --no-cache-dir --disable-pip-version-check \
  --index-url "$url" "torch==$torch_version" >"$out/pip.log" 2>&1
pip_rc=$?
echo "pip: exit $pip_rc in $(since "$start") s"
tail -3 "$out/pip.log"
"$py" - "${url%/whl/*}/_control/counters" "$out/counters.json" <<'PY'
import json, sys, urllib.request
c = json.load(urllib.request.urlopen(sys.argv[1], timeout=30))
json.dump(c, open(sys.argv[2], "w"), indent=1)
files = {k: v for k, v in c.items() if k.startswith("file:")}
print("index served %d files (%d fetched more than once), %d requests"
      % (len(files), sum(v > 1 for v in files.values()), c.get("requests", 0)))
PY

(( pip_rc == 0 )) || { echo "pip failed: $out/pip.log"; exit 1; }

step "torch in the clean venv"
"$work/venv/bin/python" - >"$out/check.txt" 2>&1 <<'PY'
import torch
print("torch", torch.__version__, "from", torch.__file__)
print("cuda available:", torch.cuda.is_available(), "cuda", torch.version.cuda)
a = torch.randn(1024, 1024, device="cuda")
print("matmul on", torch.cuda.get_device_name(0), "max |a@I - a| =",
      (a @ torch.eye(1024, device="cuda") - a).abs().max().item())
PY
check_rc=$?
cat "$out/check.txt"

step "every installed file of torch, the host's and the clean venv's"
hashes='import json, sys; from importlib import metadata; d = metadata.distribution("torch")
skip = ("/INSTALLER", "/RECORD", "/REQUESTED", "/direct_url.json")
print(json.dumps({str(f): f.hash.value for f in d.files
                  if f.hash and not str(f).startswith("../../../bin/") and not str(f).endswith(skip)}))'
"$py" -c "$hashes" >"$work/host.json" && "$work/venv/bin/python" -c "$hashes" >"$work/venv.json"
"$py" - "$work/host.json" "$work/venv.json" <<'PY' | tee "$out/identity.txt"
import json, sys
host, venv = (json.load(open(p)) for p in sys.argv[1:3])
differ = sorted(p for p in host if venv.get(p) != host[p])
extra = sorted(set(venv) - set(host))
print("%d files compared: %d differ or are missing, %d only in the venv" % (len(host), len(differ), len(extra)))
for p in (differ + extra)[:10]:
    print("  ", p)
PY

if (( serve > 0 )); then step "serving $url for $serve s"; sleep "$serve"; fi
(( repack_rc == 0 && pip_rc == 0 && check_rc == 0 )) || exit 1
grep -q " 0 differ or are missing, 0 only" "$out/identity.txt" || exit 1
