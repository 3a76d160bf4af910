#!/usr/bin/env bash
# Per-cell environments on a GPU host with no network: the host's own torch, repacked from
# its RECORD files into real wheels (tests/fakes/repack_installed.py), is served by the
# index fake as the upstream per-CUDA index (/whl/cu130/); farmd pulls it through
# (--upstream-index cu130=...), and a worker started with --provision and NO --python makes
# the cell's environment itself: a venv of the host's CPython of the cell's version, torch
# and every requirement pinned by version from the index through farmd, the toolkit the
# probe found for the cell's CUDA. It builds SageAttention for 9.0a in that environment and
# validates the wheel on the GPU; then a second build of the same cell (--force) shows the
# cached snapshot. Prints the environment's log lines and the time of each phase.
# Two steps, each within 10 minutes: `first` leaves the farm running (setsid) in WORK for
# `second`, which stops it.
#
# usage: provision_on_gpu_host.sh first|second BUNDLE_DIR SOURCE_TARBALL WORK OUTDIR
#   BUNDLE_DIR: bin/{farmd,farm-worker,farmctl} and lib/ (docker/bundle-libs.sh)
#   SOURCE_TARBALL: thu-ml/SageAttention at d1a57a5 (one top folder)
# env: PYTHON (default python3: the interpreter whose installed torch is repacked)
set -uo pipefail
step=$1 bundle=$(realpath "$2") src=$(realpath "$3") work=$(realpath -m "$4") out=$(realpath -m "$5")
source "$(dirname "$0")/lib.sh"

build() {  # NAME SECONDS [SUBMIT ARGS...]
  local name=$1 limit=$2; shift 2
  say "$name: submit and follow"
  local start=$SECONDS
  timeout "$limit" "${ctl[@]}" submit "$work/recipe.yaml" --source-tarball "$src" --follow "$@" \
    >"$out/$name.log" 2>&1
  local rc=$?
  echo "$name: exit $rc in $((SECONDS - start)) s"
  grep -E "farm: (provisions|environment ready|provision|build|validat|wheel|label)|requires torch|Requires-Dist" \
    "$out/$name.log" | cut -c1-240 | head -30
  (( rc == 0 )) || tail -40 "$out/$name.log"
  local id
  id=$("${ctl[@]}" --output json list --limit 1 | "$py" -c \
    'import json,sys; d=json.load(sys.stdin); b=d.get("builds", d) if isinstance(d, dict) else d; print(b[0]["id"])')
  "${ctl[@]}" show "$id" | tee "$out/${name}_show.txt"
  return $rc
}

cd "$work"
if [[ $step == first ]]; then
  say "host"
  host_facts
  { nvcc --version | tail -1; command -v python3.12; } 2>&1 | tee -a "$out/host.txt"
  host_torch || exit 1

  say "repack torch $torch_version, what it requires and the build tools"
  repack_host_torch "$work/wheelhouse" || exit 1
  trust_host_pip "$work/wheelhouse" || exit 1

  say "the index fake serves it as /whl/cu130/"
  start_index "$work/wheelhouse" || exit 1

  say "farmd pulls it through; a worker with --provision and no --python"
  start_farmd --resolver-pip "$farm_pip" --resolver-python "$py" || exit 1
  start_provisioning_worker --provision-installer "$farm_pip" || exit 1
  "${ctl[@]}" workers | tee "$out/workers_before.txt"

  say "the recipe: one cell, its environment pinned from the wheelhouse"
  "$py" - "$repo/kernels/sageattention/recipe.yaml" "$out/repack.json" "$pyver" "$torch_release" \
    "$work/recipe.yaml" <<'PY'
import json, re, sys
text = open(sys.argv[1]).read()
wheels = json.load(open(sys.argv[2]))["wheels"]
pyver, torch, out = sys.argv[3], sys.argv[4], sys.argv[5]
pins = sorted({"%s==%s" % (w["name"], w["version"]) for w in wheels if w["name"].lower() not in ("torch", "pip")})
minor = ".".join(torch.split(".")[:2])
text = text.replace("system_site_packages: true\n", "")
text = re.sub(r"(?ms)^matrix:.*?(?=^publish:)", (
    "matrix:\n  python: [\"%s\"]\n  torch: [\"%s\"]\n  cuda: [\"13.0\"]\n  arch_lists: [\"9.0a\"]\n"
    "  platform: [linux_x86_64]\nenvironment:\n  torch: {\"%s\": \"%s\"}\n"
    "  build_requirements:\n%s\n") % (pyver, minor, minor, torch,
                                      "\n".join("    - " + p for p in pins)), text)
text = text.replace("  SAGEATTN_SKIP_CUDA_BUILD: \"0\"\n", "  SAGEATTN_SKIP_CUDA_BUILD: \"0\"\n  MAX_JOBS: \"16\"\n")
open(out, "w").write(text)
PY
  cp "$repo/kernels/sageattention/validate_sageattention.py" "$work/"
  cp "$work/recipe.yaml" "$out/recipe.yaml"
  sed -n '/^matrix:/,/^publish:/p' "$work/recipe.yaml" | head -12

  build first 450
    exit $?
fi

index=$(cat "$work/index.url")
build second 500 --force; second_rc=$?

say "what the farm holds"
"${ctl[@]}" workers | tee "$out/workers_after.txt"
"$py" - "$index/_control/counters" <<'PY'
import json, sys, urllib.request
c = json.load(urllib.request.urlopen(sys.argv[1], timeout=30))
files = {k: v for k, v in c.items() if k.startswith("file:")}
print("upstream index served %d files (%d more than once), %d requests"
      % (len(files), sum(v > 1 for v in files.values()), c.get("requests", 0)))
PY
wheel=$(find "$work/data" -name 'sageattention-*.whl' | head -1)
[[ -n $wheel ]] && unzip -p "$wheel" '*.dist-info/METADATA' | grep -E "^(Name|Version|Requires-Dist)"
grep -h "environment ready" "$out"/first.log "$out"/second.log | cut -c1-240
gpu_stop
exit $second_rc
