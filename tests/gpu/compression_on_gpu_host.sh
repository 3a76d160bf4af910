#!/usr/bin/env bash
# nvcc's --compress-mode=size on a real package, through the farm on a GPU host, in one
# command of under 8 minutes: starts its own farmd and farm-worker on 127.0.0.1 from the
# binaries in .devbin/ (bin/ and lib/, made by docker/bundle-libs.sh), submits the package's
# catalog recipe for this host's cell twice at once, as it is and with
# `fatbin_compression: size`, on one worker that runs both (--max-jobs 2, compile cache
# off, MAX_JOBS split between them), lets the farm validate both wheels on the GPU, and
# prints the sizes, where the bytes go and the build times side by side.
#
# usage: compression_on_gpu_host.sh SOURCE_TARBALL OUTDIR [ARCH_LIST]   (default 9.0a)
#   SOURCE_TARBALL  the package's source (one top folder), e.g. thu-ml/SageAttention at
#                   d1a57a5; sent with farmctl submit --source-tarball
# env: RECIPE    the catalog recipe (default kernels/sageattention/recipe.yaml); its
#                validation script is sent along
#      BUNDLE    the binaries' folder (default .devbin/ in this checkout)
#      PYTHON    the interpreter with torch (default python3)
#      MAX_JOBS  compile jobs per build (default: half the CPUs)
#      DEADLINE  seconds the builds and validations may take together (default 400)
# Leaves in OUTDIR: host.txt, farmd.log, worker.log, build-{default,size}.{log,json},
# job-{default,size}.log (the build jobs' logs), summary.txt. Exits 0 only when both builds
# succeeded and both wheels validated.
set -uo pipefail
src=$(realpath "${1:?usage: compression_on_gpu_host.sh SOURCE_TARBALL OUTDIR [ARCH_LIST]}")
out=$(realpath -m "${2:?usage: compression_on_gpu_host.sh SOURCE_TARBALL OUTDIR [ARCH_LIST]}")
arch=${3:-9.0a}
repo=$(cd "$(dirname "$0")/../.." && pwd)
recipe=$(realpath "${RECIPE:-$repo/kernels/sageattention/recipe.yaml}")
bundle=$(realpath "${BUNDLE:-$repo/.devbin}")
py=${PYTHON:-$(command -v python3)}
jobs=${MAX_JOBS:-$(( $(nproc) / 2 > 0 ? $(nproc) / 2 : 1 ))}
deadline=${DEADLINE:-400}
bin=$bundle/bin
for b in farmd farm-worker farmctl; do
  [[ -x $bin/$b ]] || { echo "no $bin/$b: bundle the binaries with docker/bundle-libs.sh" >&2; exit 2; }
done
# The bundle's libraries serve the bundle's binaries alone: pip and the builds keep the host's.
# (env execs the binary, so $! below is the daemon's own pid, which the cleanup ends.)
run=(env LD_LIBRARY_PATH="$bundle/lib")
mkdir -p "$out"
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
ctl=("${run[@]}" "$bin/farmctl" --server-file "$work/addr" --token-file "$work/data/admin.token")
step() { echo "=== $(date -u +%H:%M:%S) $*"; }
wait_for() {  # FILE SECONDS
  for _ in $(seq 1 $(( $2 * 10 ))); do [[ -s $1 ]] && return 0; sleep 0.1; done
  echo "timed out waiting for $1" >&2; return 1
}

step "host"
{ nvidia-smi -L; nvcc --version | tail -1; "$py" -V
  "$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  echo "cpus $(nproc), MAX_JOBS $jobs per build, arch list $arch"; } 2>&1 | tee "$out/host.txt"
nvcc --help | grep -q -- '--compress-mode' ||
  { echo "this nvcc has no --compress-mode (CUDA 12.8 or later is needed)" >&2; exit 1; }
pyver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
torch_site=$("$py" -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))') || exit 1
torch_minor=$("$py" -c 'import torch; print(".".join(torch.__version__.split("+")[0].split(".")[:2]))')
cuda=$(nvcc --version | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p')

step "recipes: the catalog's for this host's cell, as it is and compressed for size"
# Written beside a copy of the recipe's validation script, which farmctl sends along.
mkdir -p "$work/recipes"
cp "$(dirname "$recipe")"/*.py "$work/recipes/" 2>/dev/null
for mode in default size; do
  sed -e "s|^env:|env:\n  PYTHONPATH: \"$torch_site\"\n  MAX_JOBS: \"$jobs\"|" \
      -e "s|^  python: \\[.*\\]|  python: [\"$pyver\"]|" -e "s|^  arch_lists: \\[.*\\]|  arch_lists: [\"$arch\"]|" \
      -e "s|^  torch: \\[.*\\]|  torch: [\"$torch_minor\"]|" -e "s|^  cuda: \\[.*\\]|  cuda: [\"$cuda\"]|" \
      -e "s|^  platform: \\[.*\\]|  platform: [linux_$(uname -m)]|" -e '/^  exclude:/,/^[a-z]/{/^[a-z]/!d}' \
      "$recipe" >"$work/recipes/$mode.yaml"
  [[ $mode == size ]] && printf 'fatbin_compression: size\n' >>"$work/recipes/$mode.yaml"
done
diff "$work/recipes/default.yaml" "$work/recipes/size.yaml"

step "farmd and farm-worker on 127.0.0.1"
"${run[@]}" "$bin/farmd" --data-dir "$work/data" --listen 127.0.0.1:0 --ready-file "$work/addr" \
  --http-listen 127.0.0.1:0 --http-ready-file "$work/http" >"$out/farmd.log" 2>&1 </dev/null &
pids+=($!)
wait_for "$work/addr" 30 || exit 1
"${run[@]}" "$bin/farm-worker" --server-file "$work/addr" --enroll-token-file "$work/data/enroll.token" \
  --state-dir "$work/worker" --work-dir "$work/worker/work" --name gpu-host --python "$py" \
  --max-jobs 2 --no-ccache >"$out/worker.log" 2>&1 </dev/null &
pids+=($!)
# Submitted once the worker's probe found the GPU, so that each build job validates its wheel.
for _ in $(seq 1 120); do "${ctl[@]}" --output json workers 2>/dev/null | grep -q '"gpus"' && break; sleep 0.5; done
"${ctl[@]}" workers

step "both builds at once (deadline ${deadline} s)"
declare -A submit_pid
for mode in default size; do
  timeout "$deadline" "${ctl[@]}" --output json submit "$work/recipes/$mode.yaml" \
    --source-tarball "$src" --follow >"$out/build-$mode.json" 2>"$out/build-$mode.log" &
  submit_pid[$mode]=$!
done
for mode in default size; do
  wait "${submit_pid[$mode]}"; echo "submit ($mode) exit $?"
done

step "summary"
"${ctl[@]}" --output json list >"$work/list.json"
"$py" - "$work/list.json" "$out" "${ctl[@]}" <<'PY' | tee "$out/summary.txt"
import json, subprocess, sys
out, ctl = sys.argv[2], sys.argv[3:]
builds = json.load(open(sys.argv[1])).get("builds", [])
mib = lambda n: "%.2f MiB" % (int(n) / 1048576.0)


def farmctl(*args):
    return subprocess.run(ctl + ["--output", "json"] + list(args), capture_output=True, text=True).stdout


def build_seconds(job_id, mode):
    """From the worker's own log lines: the build command's start to its exit. Keeps the
    job's log as OUTDIR/job-MODE.log."""
    start = end = None
    kept = open("%s/job-%s.log" % (out, mode), "w")
    for line in farmctl("logs", str(job_id)).splitlines():
        try:
            x = json.loads(line)
        except ValueError:
            continue
        text, ms = x.get("text", ""), int(x.get("time_unix_ms", 0))
        kept.write(text + "\n")
        if text.startswith("farm: running the build command"):
            start = ms
        elif text.startswith("farm: build command exited") and start is not None:
            end = ms
    return (end - start) / 1000.0 if start is not None and end is not None else float("nan")


rows = {}
for b in builds:
    show = json.loads(farmctl("show", str(b["id"])))
    mode = "size" if show.get("recipe", {}).get("fatbin_compression") else "default"
    json.dump(show, open("%s/build-%s.json" % (out, mode), "w"), indent=1)
    for job in show.get("jobs", []):
        if job.get("kind") == "JOB_VALIDATE":
            continue
        detail = (job.get("attempts") or [{}])[-1].get("detail", "")
        seconds = build_seconds(job["id"], mode)
        for a in job.get("artifacts", []):
            m, v = a.get("manifest", {}), a.get("validation", {})
            im = m.get("images", [])
            rows[mode] = dict(build=show["id"], state=show["state"], wheel=a["filename"],
                              size=int(a["size"]), images=len(im),
                              code=sum(int(i.get("compressed_bytes", 0)) for i in im),
                              fatbin=sum(int(i.get("fatbin_bytes", 0)) for i in im),
                              unpacked=sum(int(i.get("uncompressed_bytes", 0)) for i in im),
                              packed=bool(im) and all(i.get("compressed") for i in im),
                              seconds=seconds, validation=v.get("state", "?"),
                              message=(v.get("message") or "")[:240])
        if not job.get("artifacts"):
            print("build %s (%s) %s, job %s %s: %s" % (show["id"], mode, show["state"], job["id"],
                                                      job.get("state"), detail[-600:]))
print("| nvcc | wheel | device code in the wheel | in the fatbinaries | unpacked | images "
      "| build command | validation |")
print("|---|---|---|---|---|---|---|---|")
ok = True
for mode in ("default", "size"):
    r = rows.get(mode)
    if not r:
        print("| %s | no wheel | | | | | | |" % mode)
        ok = False
        continue
    print("| %s | %s | %s | %s | %s | %d%s | %.0f s | %s |" % (
        "--compress-mode=size" if mode == "size" else "default", mib(r["size"]), mib(r["code"]),
        mib(r["fatbin"]), mib(r["unpacked"]), r["images"], " (compressed)" if r["packed"] else "",
        r["seconds"], r["validation"]))
    ok = ok and r["validation"] == "VALIDATION_PASSED"
for mode in ("default", "size"):
    if mode in rows:
        r = rows[mode]
        print("%s: build %s %s: %s, %d bytes\n  validation: %s" % (
            mode, r["build"], r["state"], r["wheel"], r["size"], r["message"]))
if "default" in rows and "size" in rows:
    d, s = rows["default"], rows["size"]
    print("saving: wheel %.1f%% (%s), device code in the wheel %.1f%%; build command %+.0f s" % (
        100.0 * (d["size"] - s["size"]) / d["size"], mib(d["size"] - s["size"]),
        100.0 * (d["code"] - s["code"]) / d["code"] if d["code"] else 0.0,
        s["seconds"] - d["seconds"]))
print("both built and validated" if ok else "NOT both built and validated")
sys.exit(0 if ok else 1)
PY
rc=${PIPESTATUS[0]}
step "done"
exit "$rc"
