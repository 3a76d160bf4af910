#!/usr/bin/env bash
# Environment locks on a GPU host with no network (docs/environments.md, "Locks"): the host's
# own torch and everything it requires, repacked from their RECORD files into real wheels
# (tests/fakes/repack_installed.py), are served by the index fake as the per-CUDA index
# (/whl/cu130/, PEP 503 pages with PEP 658 metadata); farmd reads it through its pull-through
# cache. The recipe is SageAttention's with NO dependency list: its environment names torch
# and four unpinned build tools. farmd resolves the cell's lock with pip at submit; a worker
# started with --provision and no --python installs exactly that lock (the host's pip,
# repacked, is the farm's installer), builds for 9.0a and validates on the GPU. A second
# submission resolves again through farmd's warm cache. Prints the resolution times, the
# lock's size and what the worker did.
#
# usage: lock_on_gpu_host.sh BUNDLE_DIR SOURCE_TARBALL WORK OUTDIR
#   BUNDLE_DIR: bin/{farmd,farm-worker,farmctl} and lib/ (docker/bundle-libs.sh)
#   SOURCE_TARBALL: thu-ml/SageAttention at d1a57a5 (one top folder)
# env: PYTHON (default python3: the interpreter whose installed torch is repacked)
set -uo pipefail
bundle=$(realpath "$1") src=$(realpath "$2") work=$(realpath -m "$3") out=$(realpath -m "$4")
source "$(dirname "$0")/lib.sh"
chmod 0755 "$work"
cd "$work"
say "host"
host_facts
{ command -v uv; uv --version; } 2>&1 | tee -a "$out/host.txt"
host_torch || exit 1

say "repack torch $torch_version, what it requires, the build tools and pip"
repack_host_torch "$work/wheelhouse" || exit 1
trust_host_pip "$work/wheelhouse" || exit 1

say "the index fake serves it as /whl/cu130/; farmd pulls it through; a provisioning worker"
start_index "$work/wheelhouse" || exit 1
start_farmd --resolver-pip "$farm_pip" --resolver-python "$py" || exit 1
start_provisioning_worker --provision-installer "$farm_pip" || exit 1

say "the recipe: SageAttention for one cell, no dependency list"
"$py" - "$repo/kernels/sageattention/recipe.yaml" "$pyver" "$torch_release" "$work/recipe.yaml" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
pyver, torch, out = sys.argv[2], sys.argv[3], sys.argv[4]
minor = ".".join(torch.split(".")[:2])
text = text.replace("system_site_packages: true\n", "")
text = re.sub(r"(?ms)^matrix:.*?(?=^publish:)", (
    "matrix:\n  python: [\"%s\"]\n  torch: [\"%s\"]\n  cuda: [\"13.0\"]\n  arch_lists: [\"9.0a\"]\n"
    "  platform: [linux_x86_64]\nenvironment:\n  torch: {\"%s\": \"%s\"}\n"
    "  build_requirements: [\"setuptools>=64\", \"wheel\", \"ninja\", \"packaging\"]\n")
    % (pyver, minor, minor, torch), text)
text = text.replace("  SAGEATTN_SKIP_CUDA_BUILD: \"0\"\n", "  SAGEATTN_SKIP_CUDA_BUILD: \"0\"\n  MAX_JOBS: \"16\"\n")
open(out, "w").write(text)
PY
cp "$repo/kernels/sageattention/validate_sageattention.py" "$work/"
sed -n '/^matrix:/,/^publish:/p' "$work/recipe.yaml" | head -10

say "first submission: resolve (farmd's cache cold), provision, build, validate"
start=$SECONDS
timeout 500 "${ctl[@]}" submit "$work/recipe.yaml" --source-tarball "$src" --follow >"$out/first.log" 2>&1
rc=$?
echo "first: exit $rc in $((SECONDS - start)) s"
grep -E "farm: (provisions|environment ready|provision snapshot|validation)|passed" "$out/first.log" | cut -c1-240 | head -12
(( rc == 0 )) || tail -30 "$out/first.log"
"${ctl[@]}" lock 1 --save "$out/pylock.toml" 2>&1 | tail -2
grep -c '^\[\[packages\]\]' "$out/pylock.toml"

say "second submission: resolved again through farmd's warm cache, answered from the store"
start=$SECONDS
"${ctl[@]}" submit "$work/recipe.yaml" --source-tarball "$src" >"$out/second.log" 2>&1
echo "second submit: exit $? in $((SECONDS - start)) s"
"${ctl[@]}" show 2 | grep -E "answered|environment" | head -4
grep -h "locked .* resolution" "$out/farmd.log"
"$py" - "$index/_control/counters" <<'PY'
import json, sys, urllib.request
c = json.load(urllib.request.urlopen(sys.argv[1], timeout=30))
meta = sum(v for k, v in c.items() if k.endswith(".metadata"))
whl = {k: v for k, v in c.items() if k.startswith("file:") and k.endswith(".whl")}
print("upstream index: %d wheels served (%d more than once), %d metadata files, %d requests"
      % (len(whl), sum(v > 1 for v in whl.values()), meta, c.get("requests", 0)))
PY
gpu_stop
exit $rc
