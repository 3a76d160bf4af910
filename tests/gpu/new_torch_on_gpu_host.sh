#!/usr/bin/env bash
# A new torch proven without a rebuild, on a GPU host with no network (docs/coverage.md):
# the stable-ABI example is built once through the farm for the host's torch (a provisioned
# environment locked from the host's torch, repacked into real wheels and served by the
# index fake as /whl/cu130/) and validated on the GPU. A torch watch then follows the
# index; a newer torch appears there, and farmd, with no person, queues a validation-only
# job of the existing wheel in a provisioned environment of the new release, which the
# worker runs on the GPU. Prints the times (submit to validated wheel, release to proof)
# and what coverage, the proofs and the job's log say.
#
# The host has one torch and no network, so the "new" release is a stand-in: the host's
# torch repacked again under the next minor version (its METADATA, dist-info and
# torch/version.py say so; every other byte is the host's). It proves the farm's path on a
# real GPU, not the ABI compatibility of two different torch builds.
#
# usage: new_torch_on_gpu_host.sh BUNDLE_DIR WORK OUTDIR
#   BUNDLE_DIR: bin/{farmd,farm-worker,farmctl} and lib/ (docker/bundle-libs.sh)
# env: PYTHON (default python3: the interpreter whose installed torch is repacked)
set -uo pipefail
bundle=$(realpath "$1") work=$(realpath -m "$2") out=$(realpath -m "$3")
source "$(dirname "$0")/lib.sh"
trap gpu_stop EXIT
chmod 0755 "$work"
cd "$work"

say "host"
host_facts
host_torch || exit 1
minor=$(echo "$torch_release" | cut -d. -f1,2)
next="${minor%%.*}.$((${minor#*.} + 1)).0"

say "repack torch $torch_version and the build tools; torch $next as a stand-in, held back"
repack_host_torch "$work/wheelhouse" || exit 1
trust_host_pip "$work/wheelhouse" || exit 1
mkdir -p "$work/unreleased"
"$py" - "$(ls "$work"/wheelhouse/torch-*.whl)" "$torch_release" "$next" "$work/unreleased" <<'PY' || exit 1
import base64, csv, hashlib, io, os, sys, zipfile
src, old, new, out_dir = sys.argv[1:]
name = os.path.basename(src).replace(old, new, 1)
old_info, new_info = "torch-%s.dist-info/" % old, "torch-%s.dist-info/" % new
rows = []
with zipfile.ZipFile(src) as zin, zipfile.ZipFile(os.path.join(out_dir, name), "w") as zout:
    for info in zin.infolist():
        data = zin.read(info)
        arc = info.filename.replace(old_info, new_info, 1)
        if arc.endswith(".dist-info/RECORD"):
            continue
        if arc == new_info + "METADATA" or arc == "torch/version.py":
            data = data.replace(old.encode(), new.encode())
        zi = zipfile.ZipInfo(arc, info.date_time)
        zi.external_attr = info.external_attr
        zout.writestr(zi, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append([arc, "sha256=" + digest, str(len(data))])
    rows.append([new_info + "RECORD", "", ""])
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(rows)
    zout.writestr(zipfile.ZipInfo(new_info + "RECORD", (2020, 1, 1, 0, 0, 0)), text.getvalue())
print("stand-in:", name)
PY

say "index fake, farmd (the farm's pip resolves; watches poll every 2 s), a provisioning worker"
start_index "$work/wheelhouse" || exit 1
start_farmd --resolver-pip "$farm_pip" --resolver-python "$py" --watch-min-poll-s 1 || exit 1
start_provisioning_worker --provision-installer "$farm_pip" || exit 1

say "the recipe: the stable-ABI example for one cell, torch $torch_release, 9.0a"
cp -r "$repo/kernels/examples/stable_abi_example" "$work/src"
"$py" - "$work/src/recipe.yaml" "$pyver" "$minor" "$torch_release" <<'PY'
import re, sys
path, pyver, minor, torch = sys.argv[1:]
text = open(path).read().replace("system_site_packages: true\n", "")
text = re.sub(r"(?ms)^matrix:.*?(?=^torch_abi:)", (
    "matrix:\n  python: [\"%s\"]\n  torch: [\"%s\"]\n  cuda: [\"13.0\"]\n  arch_lists: [\"9.0a\"]\n"
    "  platform: [linux_x86_64]\nenvironment:\n  torch: {\"%s\": \"%s\"}\n"
    "  build_requirements: [\"setuptools>=64\", \"wheel\", \"ninja\", \"packaging\"]\n")
    % (pyver, minor, minor, torch), text)
text = text.replace("timeout: 1800\n", "timeout: 1800\nenv:\n  MAX_JOBS: \"16\"\n")
open(path, "w").write(text)
PY
sed -n '/^matrix:/,/^validation:/p' "$work/src/recipe.yaml"

say "submit: resolve, provision, build, validate on the GPU"
start=$SECONDS
timeout 420 "${ctl[@]}" submit "$work/src/recipe.yaml" --follow >"$out/build.log" 2>&1
rc=$?
echo "build: exit $rc in $((SECONDS - start)) s"
grep -E "farm: (environment ready|validat)|passed|cosine" "$out/build.log" | cut -c1-220 | head -12
((rc == 0)) || { tail -40 "$out/build.log"; exit 1; }

say "a torch watch on the index, from $minor up"
"${ctl[@]}" schedules add "$work/src/recipe.yaml" --watch-torch ">=$minor" --poll 2 | tee "$out/schedule.txt" || exit 1
sid=$("${ctl[@]}" --output json schedules list | "$py" -c \
  'import json,sys; print(json.load(sys.stdin)["schedules"][0]["id"])')
for _ in $(seq 1 60); do "${ctl[@]}" schedules show "$sid" | grep -q "first poll" && break; sleep 0.5; done

say "torch $next is released on the index"
released=$SECONDS
mv "$work"/unreleased/torch-*.whl "$work/wheelhouse/"
proof=""
for _ in $(seq 1 480); do
  proof=$("${ctl[@]}" --output json show 1 | "$py" -c '
import json, sys
for job in json.load(sys.stdin)["jobs"]:
    for p in job.get("torch_proofs", []):
        if p["cell"]["torch"] == sys.argv[1] and p["state"] != "PROOF_PENDING":
            print(p["state"], p.get("job_id", ""), p.get("detail", ""))' "${next%.*}")
  [[ -n $proof ]] && break
  sleep 1
done
echo "release to proof: $((SECONDS - released)) s: ${proof:-none within 8 minutes}"
"${ctl[@]}" show 1 | tee "$out/build_after.txt"
job=$(echo "$proof" | cut -d' ' -f2)
[[ -n $job ]] && "${ctl[@]}" logs "$job" >"$out/proof_job.log" 2>&1 &&
  grep -E "farm: (environment ready|validat)|torch|passed|cosine|GB/s" "$out/proof_job.log" | cut -c1-220 | head -20
"${ctl[@]}" --output json list | "$py" -c 'import json,sys; print("builds:", len(json.load(sys.stdin).get("builds", [])))'
"${ctl[@]}" schedules show "$sid" | tee "$out/schedule_after.txt"
# Python's urllib, not curl: LD_LIBRARY_PATH points at the bundle's libcurl.
"$py" - "http://$http/api/v1/coverage?package=stable-abi-example" <<'PY'
import json, sys, urllib.request
for c in json.loads(urllib.request.urlopen(sys.argv[1], timeout=30).read())["cells"]:
    print(c["torch"], c["cuda"], c["arch_list"], c["state"], "-", c.get("cause", ""))
PY
[[ $proof == PROOF_PASSED* ]]
