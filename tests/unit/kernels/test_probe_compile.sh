#!/usr/bin/env bash
# Compiles kernels/probe/probe.cu for sm_90 with the real nvcc (no GPU needed), checks the
# binary links the CUDA runtime statically, and checks its one-line JSON and exit code:
# without a GPU it must report ok=false with exit 3 (no device), never success.
# Usage: test_probe_compile.sh PROBE_CU. Exit 0 pass, 1 fail, 77 skipped.
set -euo pipefail
probe_cu=$1
nvcc=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
if [[ ! -x $nvcc ]]; then echo "SKIP: no nvcc at $nvcc (set CUDA_HOME)"; exit 77; fi
work=$(mktemp -d "${TMPDIR:-/tmp}/kernels-probe-XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

start=$(date +%s)
"$nvcc" -O2 -std=c++17 -gencode arch=compute_90,code=sm_90 -o "$work/probe" "$probe_cu" \
  || fail "nvcc could not compile $probe_cu for sm_90"
echo "probe compiled for sm_90 in $(( $(date +%s) - start )) s"
if ldd "$work/probe" | grep -q cudart; then fail "probe links a shared CUDA runtime"; fi

set +e
line=$("$work/probe" --device 0)
code=$?
"$work/probe" --device nope >/dev/null 2>&1
usage_code=$?
set -e
echo "probe: exit $code: $line"
[[ $usage_code -eq 2 ]] || fail "a bad --device value exited $usage_code, expected 2"
/usr/bin/python3 - "$line" "$code" <<'PY' || fail "the probe's JSON line is wrong"
import json, os, sys
line, code = sys.argv[1], int(sys.argv[2])
r = json.loads(line)
for key in ("ok", "device", "cc", "max_abs_err", "message"):
    assert key in r, f"missing {key}"
if os.path.exists("/dev/nvidiactl"):
    # A GPU host: sm_90 code either runs (cc 9.x) or fails to load (exit 4).
    assert (code == 0 and r["ok"] and r["max_abs_err"] is not None) or \
        (code == 4 and not r["ok"]), (code, r)
else:
    assert code == 3 and r["ok"] is False and r["max_abs_err"] is None, (code, r)
    assert "cudaGetDeviceCount" in r["message"], r["message"]
PY
echo PASS
