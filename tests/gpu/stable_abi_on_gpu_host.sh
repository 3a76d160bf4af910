#!/usr/bin/env bash
# The stable-ABI example on a GPU host, without the farm: builds
# kernels/examples/stable_abi_example with pip against the host's torch, prints the wheel's
# tags, METADATA and the torch symbols its library imports (a stable-ABI build imports only
# the C shim: no mangled c10::/at::/torch:: symbol, no Python symbol), installs it into a
# clean venv that sees the host's torch and runs its validation there.
#
# usage: stable_abi_on_gpu_host.sh OUTDIR [ARCH_LIST]   (default 9.0a)
# env:   PYTHON (default python3: the interpreter with torch), MAX_JOBS (default 8),
#        FARMCTL (optional: a farmctl binary; `farmctl inspect` is then run on the wheel)
# Leaves in OUTDIR: build.log, wheel.txt, symbols.txt, report.json, validate.log, the wheel.
set -euo pipefail
out=$(realpath -m "$1"); arch=${2:-9.0a}
repo=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON:-$(command -v python3)}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
step() { echo "=== $(date -u +%H:%M:%S) $*"; }

step "host"
{ nvidia-smi -L; nvcc --version | tail -1; "$py" -V
  "$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'; } 2>&1 | tee "$out/host.txt"

step "build for TORCH_CUDA_ARCH_LIST=$arch"
cp -r "$repo/kernels/examples/stable_abi_example" "$work/src"
start=$(date +%s.%N)
( cd "$work/src" && TORCH_CUDA_ARCH_LIST=$arch MAX_JOBS=${MAX_JOBS:-8} \
    "$py" -m pip wheel . -v --no-build-isolation --no-deps --no-index -w "$work/dist" ) \
  >"$out/build.log" 2>&1 || { tail -60 "$out/build.log"; exit 1; }
echo "build: $(echo "$(date +%s.%N) - $start" | "$py" -c 'print(round(eval(input()), 1))') s"
wheel=$(ls "$work/dist"/*.whl)
cp "$wheel" "$out/"

step "the wheel: tags and METADATA"
"$py" - "$wheel" <<'PY' | tee "$out/wheel.txt"
import sys, zipfile
path = sys.argv[1]
print("file:", path.rsplit("/", 1)[-1])
with zipfile.ZipFile(path) as z:
    for name in z.namelist():
        if name.endswith(".dist-info/WHEEL") or name.endswith(".dist-info/METADATA"):
            print("--- " + name)
            print(z.read(name).decode().split("\n\n")[0])
    print("--- files")
    for info in z.infolist():
        print("%10d  %s" % (info.file_size, info.filename))
PY

step "what the library imports"
"$py" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$wheel" "$work/unpacked"
so=$(ls "$work"/unpacked/stable_abi_example/_C*.so)
{ echo "library: ${so##*/}"
  echo "undefined symbols from torch's C++ namespaces (a stable-ABI build has none):"
  nm -D --undefined-only "$so" | c++filt | grep -E ' (c10|at|torch)::' || echo "  none"
  echo "undefined Python symbols (an abi3 library that needs no Python API has none):"
  nm -D --undefined-only "$so" | grep -E ' _?Py' || echo "  none"
  echo "C shim functions it calls:"
  nm -D --undefined-only "$so" | grep -oE '(aoti_torch|torch)_[A-Za-z0-9_]+' | sort -u | sed 's/^/  /'
  echo "libraries it needs:"; readelf -d "$so" | grep NEEDED | sed 's/^/  /'; } | tee "$out/symbols.txt"
if [[ -n ${FARMCTL:-} ]]; then step "farmctl inspect"; "$FARMCTL" inspect "$wheel" --arch-list "$arch" | tee "$out/inspect.txt"; fi

step "install into a clean venv that sees the host's torch"
"$py" -m venv "$work/venv"
site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
vsite=$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$site" >"$vsite/host-torch.pth"
# pip resolves the wheel's own requirement (torch>=floor) against the host's torch.
"$work/venv/bin/python" -m pip install --no-index --no-cache-dir "$wheel" 2>&1 | tail -3

step "validation"
cd "$work"
set +e
"$work/venv/bin/python" "$repo/kernels/examples/stable_abi_example/validate.py" --device cuda:0 \
  --report "$out/report.json" --min-cosine 0.9999 --max-relative-l1 0.001 >"$out/validate.log" 2>&1
rc=$?
set -e
"$py" - "$out/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(r["state"], "-", r["message"])
for c in r["cases"]:
    print("  %-16s passed=%s cosine=%s rel_l1=%s GB/s=%s baseline=%s" % (
        c["name"], c["passed"], c.get("cosine"), c.get("relative_l1"),
        c.get("throughput") and round(c["throughput"], 1),
        c.get("baseline_throughput") and round(c["baseline_throughput"], 1)))
PY
exit $rc
