#!/usr/bin/env bash
# Measures what the worker's compile cache saves: the example package built clean (empty
# cache) against rebuilds after a one-line change to a .cu file, with and without the cache.
#   tests/bench/rebuild_bench.sh BUILD_DIR [ARCH_LIST]
# BUILD_DIR holds farmd, farm-worker and farmctl. Real farmd and farm-worker on 127.0.0.1;
# the example is copied to a temporary directory (kernels/ is never touched). Each figure
# is read from the job's stored attempt: the attempt's start to end, and the build
# command's own time from the job log's timestamps. Prints one table (docs/benchmarks.md).
set -euo pipefail
build=${1:?usage: rebuild_bench.sh BUILD_DIR [ARCH_LIST]}
arch=${2:-9.0;12.0a;12.1a}
repo=$(cd "$(dirname "$0")/../.." && pwd)
farmd=$build/daemon/farmd worker=$build/worker/farm-worker ctl=$build/daemon/cli/farmctl
for b in "$farmd" "$worker" "$ctl"; do [[ -x $b ]] || { echo "missing $b" >&2; exit 1; }; done
command -v ccache >/dev/null || { echo "ccache missing (apt-get install ccache)" >&2; exit 1; }
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

"$farmd" --data-dir "$work/data" --listen 127.0.0.1:0 --ready-file "$work/farmd.addr" \
  >"$work/farmd.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do [[ -s $work/farmd.addr ]] && break; sleep 0.1; done
[[ -s $work/farmd.addr ]] || { echo "farmd did not start" >&2; cat "$work/farmd.log" >&2; exit 1; }
"$worker" --server-file "$work/farmd.addr" --enroll-token-file "$work/data/enroll.token" \
  --state-dir "$work/worker" --work-dir "$work/worker/work" --name bench \
  >"$work/worker.log" 2>&1 &
pids+=($!)
ctl() { "$ctl" --server "$(cat "$work/farmd.addr")" --token-file "$work/data/admin.token" "$@"; }

cp -r "$repo/kernels/examples/attn_example" "$work/example"
cp "$work/example/recipe.yaml" "$work/example/recipe-nocache.yaml"
echo "ccache: false" >>"$work/example/recipe-nocache.yaml"
change=0
one_line_change() {  # a real code change: the preprocessed text differs, so the file misses
  change=$((change + 1))
  echo "static_assert(sizeof(float) == 4, \"change $change\");" \
    >>"$work/example/csrc/attn_cuda.cu"
}

# measure LABEL RECIPE: submits, waits, prints one table row from the stored attempt.
measure() {
  local label=$1 recipe=$2
  ctl --output json submit "$recipe" --arch-list "$arch" --follow --force >"$work/submit.json"
  local id; id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' \
    "$work/submit.json")
  ctl --output json show "$id" >"$work/show.json"
  local job; job=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["jobs"][0]["id"])' \
    "$work/show.json")
  ctl --output json logs "$job" >"$work/log.jsonl"
  python3 - "$label" "$work/show.json" "$work/log.jsonl" <<'EOF'
import datetime, json, sys
label, show, log = sys.argv[1:]
build = json.load(open(show))
job = build["jobs"][0]
if build["state"] != "BUILD_SUCCEEDED":
    sys.exit(f"{label}: build ended {build['state']}")
attempt = job["attempts"][-1]
def t(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
text, lines, pos, dec = open(log).read(), [], 0, json.JSONDecoder()
while text[pos:].strip():  # one JSON object per log line, each over several lines
    obj, end = dec.raw_decode(text, len(text) - len(text[pos:].lstrip()))
    lines.append(obj)
    pos = end
start = next(int(l["time_unix_ms"]) for l in lines if "running the build command" in l["text"])
end = next(int(l["time_unix_ms"]) for l in lines if "build command exited" in l["text"])
cache = attempt.get("compile_cache")
hits = "off" if cache is None else f"{int(cache.get('hits', 0))} / {int(cache.get('misses', 0))}"
print(f"| {label} | {t(attempt['finished_at']) - t(attempt['started_at']):.1f} s "
      f"| {(end - start) / 1000:.1f} s | {hits} |", flush=True)
EOF
}

echo "attn_example, TORCH_CUDA_ARCH_LIST=$arch, $(nproc) cores, $(ccache --version | head -1)"
echo "| Build | Attempt | Build command | Cache hits / misses |"
echo "|---|---|---|---|"
measure "clean (empty cache)" "$work/example/recipe.yaml"
measure "rebuild, no change" "$work/example/recipe.yaml"
one_line_change
measure "rebuild after a one-line .cu change" "$work/example/recipe.yaml"
one_line_change
measure "the same without the cache (ccache: false)" "$work/example/recipe-nocache.yaml"
