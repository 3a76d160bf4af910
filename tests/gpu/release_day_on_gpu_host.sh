#!/usr/bin/env bash
# Release day on a GPU host with no network, without a person: a schedule watches the
# per-CUDA index for torch >= the host's release; the index (the index fake, serving the
# host's own torch repacked into real wheels by tests/fakes/repack_installed.py) first lists
# everything but torch, then "publishes" torch. The watch's next poll fires a build of
# SageAttention whose matrix follows the index (`torch: ">=X.Y"`), on a worker that
# provisions the cell (Python, torch and pinned build tools through farmd's pull-through
# cache, the host's toolkit), builds for 9.0a and validates the wheel on the GPU.
# Prints the watch's runs, the build, coverage with the time from the release to the
# wheel, and the wheel's torch pin.
#
# usage: release_day_on_gpu_host.sh BUNDLE_DIR SOURCE_TARBALL WORK OUTDIR
#   BUNDLE_DIR: bin/{farmd,farm-worker,farmctl} and lib/ (docker/bundle-libs.sh)
#   SOURCE_TARBALL: thu-ml/SageAttention at d1a57a5 (one top folder)
# env: PYTHON (default python3: the interpreter whose installed torch is repacked)
set -uo pipefail
bundle=$(realpath "$1") src=$(realpath "$2") work=$(realpath -m "$3") out=$(realpath -m "$4")
source "$(dirname "$0")/lib.sh"
trap gpu_stop EXIT
cd "$work"

say "host"
host_facts
host_torch || exit 1
minor=$(echo "$torch_release" | cut -d. -f1,2)

say "repack torch $torch_version, what it requires and the build tools"
repack_host_torch "$work/repacked" || exit 1
# The index lists everything but torch until its release.
mkdir -p "$work/wheelhouse" "$work/unreleased"
mv "$work"/repacked/torch-*.whl "$work/unreleased/" && mv "$work"/repacked/* "$work/wheelhouse/"
trust_host_pip "$work/wheelhouse" || exit 1

say "index fake, farmd (watches poll every 2 s), a provisioning worker"
start_index "$work/wheelhouse" || exit 1
start_farmd --resolver-pip "$farm_pip" --resolver-python "$py" --watch-min-poll-s 1 || exit 1
start_provisioning_worker --provision-installer "$farm_pip" || exit 1

say "the recipe: SageAttention for 9.0a, torch following the index from $minor up"
"$py" - "$repo/kernels/sageattention/recipe.yaml" "$out/repack.json" "$pyver" "$minor" \
  "$work/recipe.yaml" <<'PY'
import json, re, sys
text = open(sys.argv[1]).read()
wheels = json.load(open(sys.argv[2]))["wheels"]
pyver, minor, out = sys.argv[3], sys.argv[4], sys.argv[5]
pins = sorted({"%s==%s" % (w["name"], w["version"]) for w in wheels
               if w["name"].lower() not in ("torch", "pip")})
text = text.replace("system_site_packages: true\n", "")
text = re.sub(r"(?ms)^matrix:.*?(?=^publish:)", (
    "matrix:\n  python: [\"%s\"]\n  torch: \">=%s\"\n  cuda: [\"13.0\"]\n  arch_lists: [\"9.0a\"]\n"
    "  platform: [linux_x86_64]\nenvironment:\n  build_requirements:\n%s\n") % (
        pyver, minor, "\n".join("    - " + p for p in pins)), text)
text = text.replace("  SAGEATTN_SKIP_CUDA_BUILD: \"0\"\n", "  SAGEATTN_SKIP_CUDA_BUILD: \"0\"\n  MAX_JOBS: \"16\"\n")
open(out, "w").write(text)
PY
cp "$repo/kernels/sageattention/validate_sageattention.py" "$work/"
cp "$work/recipe.yaml" "$out/recipe.yaml"
sed -n '/^matrix:/,/^publish:/p' "$work/recipe.yaml" | head -8

"${ctl[@]}" schedules add "$work/recipe.yaml" --source-tarball "$src" \
  --watch-torch ">=$minor" --poll 2 | tee "$out/schedule.txt" || exit 1
sid=$("${ctl[@]}" --output json schedules list | "$py" -c \
  'import json,sys; print(json.load(sys.stdin)["schedules"][0]["id"])')
for _ in $(seq 1 60); do "${ctl[@]}" schedules show "$sid" | grep -q "first poll" && break; sleep 0.5; done
"${ctl[@]}" schedules show "$sid"

say "torch $torch_release is released on the index"
released=$(date -u +%s)
mv "$work"/unreleased/torch-*.whl "$work/wheelhouse/"
build=""
for _ in $(seq 1 60); do
  build=$("${ctl[@]}" --output json schedules show "$sid" | "$py" -c '
import json, sys
runs = json.load(sys.stdin)["schedules"][0].get("recent_runs", [])
print(next((str(r["build_id"]) for r in runs if r.get("build_id")), ""))')
  [[ -n $build ]] && break; sleep 0.5
done
[[ -n $build ]] || { echo "the watch fired nothing"; "${ctl[@]}" schedules show "$sid"; exit 1; }
echo "the watch fired build $build $(( $(date -u +%s) - released )) s after the release"
start=$SECONDS
for _ in $(seq 1 900); do
  state=$("${ctl[@]}" --output json show "$build" | "$py" -c 'import json,sys; print(json.load(sys.stdin)["state"])')
  [[ $state == BUILD_SUCCEEDED || $state == BUILD_FAILED || $state == BUILD_CANCELLED ]] && break
  sleep 1
done
echo "build $build: $state in $((SECONDS - start)) s"
"${ctl[@]}" show "$build" | tee "$out/build.txt"
job=$("${ctl[@]}" --output json show "$build" | "$py" -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["id"])')
"${ctl[@]}" logs "$job" >"$out/job.log" 2>&1
grep -E "farm: (provisions|environment ready|validat)|cosine|TOPS|Requires-Dist" "$out/job.log" | cut -c1-220 | head -20

say "the schedule's runs and coverage"
"${ctl[@]}" schedules show "$sid" | tee "$out/schedule_after.txt"
# Python's urllib, not curl: LD_LIBRARY_PATH points at the bundle's libcurl.
"$py" - "http://$http/api/v1/coverage?package=sageattention" "$out/coverage.json" <<'PY'
import json, sys, urllib.request
body = urllib.request.urlopen(sys.argv[1], timeout=30).read()
open(sys.argv[2], "wb").write(body)
for c in json.loads(body)["cells"]:
    print(c["package"], c["torch"], c["cuda"], c["arch_list"], c["state"],
          "release_to_wheel_seconds", c["release_to_wheel_seconds"])
PY
wheel=$(find "$work/data" -name 'sageattention-*.whl' | head -1)
[[ -n $wheel ]] && unzip -p "$wheel" '*.dist-info/METADATA' | grep -E "^(Name|Version|Requires-Dist)"
[[ $state == BUILD_SUCCEEDED ]]
