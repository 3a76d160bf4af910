#!/usr/bin/env bash
# Measures what the worker's compile cache saves: a package built clean (empty cache)
# against rebuilds after a one-line change to a .cu file, with and without the cache.
#   tests/bench/rebuild_bench.sh BUILD_DIR [ARCH_LIST]
# BUILD_DIR holds farmd, farm-worker and farmctl (a build tree, or a flat bundle directory).
# Real farmd and farm-worker on 127.0.0.1; the package is copied to a temporary directory
# (kernels/ is never touched). Each figure is read from the job's stored attempt: the
# attempt's start to end (build, checks and validation), and the build command's own time
# from the job log's timestamps. Prints one table (docs/benchmarks.md).
#
# The example package is the default. A real extension is measured with:
#   FARM_BENCH_PACKAGE      catalog directory with recipe.yaml (and its validation script)
#   FARM_BENCH_SOURCE_TARBALL  the package's source as a .tar.gz (changed copies are sent)
#   FARM_BENCH_CHANGE_FILES files (relative to the source) to give a one-line change, one
#                           rebuild each (default: csrc/attn_cuda.cu)
#   FARM_BENCH_STEPS        which rows, in order: clean unchanged change nocache (default all)
#   FARM_BENCH_PYTHON       the worker's interpreter; the cell asks for its version
#   FARM_BENCH_RECIPE_ENV   extra "KEY=VALUE" lines for the recipe's env, separated by ';'
#   FARM_BENCH_CCACHE_DIR   the worker's cache, to keep it between runs (default: fresh)
set -euo pipefail
build=${1:?usage: rebuild_bench.sh BUILD_DIR [ARCH_LIST]}
arch=${2:-9.0;12.0a;12.1a}
repo=$(cd "$(dirname "$0")/../.." && pwd)
package=${FARM_BENCH_PACKAGE:-$repo/kernels/examples/attn_example}
tarball=${FARM_BENCH_SOURCE_TARBALL:-}
read -r -a change_files <<<"${FARM_BENCH_CHANGE_FILES:-csrc/attn_cuda.cu}"
read -r -a steps <<<"${FARM_BENCH_STEPS:-clean unchanged change nocache}"
if [[ -x $build/daemon/farmd ]]; then
  farmd=$build/daemon/farmd worker=$build/worker/farm-worker ctl=$build/cli/farmctl
else
  farmd=$build/farmd worker=$build/farm-worker ctl=$build/farmctl
fi
for b in "$farmd" "$worker" "$ctl"; do [[ -x $b ]] || { echo "missing $b" >&2; exit 1; }; done
command -v ccache >/dev/null || { echo "ccache missing (apt-get install ccache)" >&2; exit 1; }
work=$(mktemp -d)
pids=()
cleanup() {
  local rc=$?
  if (( rc != 0 )); then  # say why before the evidence is removed
    for f in "$work"/farmd.log "$work"/worker.log "$work"/log.jsonl; do
      [[ -f $f ]] && { echo "--- tail of $(basename "$f")" >&2; tail -n 40 "$f" >&2; }
    done
  fi
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
  --ccache-dir "${FARM_BENCH_CCACHE_DIR:-$work/ccache}" \
  ${FARM_BENCH_PYTHON:+--python "$FARM_BENCH_PYTHON"} >"$work/worker.log" 2>&1 &
pids+=($!)
cell_python=()
if [[ -n ${FARM_BENCH_PYTHON:-} ]]; then
  cell_python=(--python "$("$FARM_BENCH_PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')")
fi
ctl() { "$ctl" --server "$(cat "$work/farmd.addr")" --token-file "$work/data/admin.token" "$@"; }

cp -r "$package" "$work/example"
src=$work/example
if [[ -n $tarball ]]; then
  src=$work/src
  mkdir -p "$src" && tar xzf "$tarball" -C "$src"
fi
recipe=$work/example/recipe-bench.yaml
{
  IFS=';' read -r -a extra_env <<<"${FARM_BENCH_RECIPE_ENV:-}"
  while IFS= read -r line; do
    printf '%s\n' "$line"
    if [[ $line == env:* ]]; then
      for kv in "${extra_env[@]}"; do printf '  %s: "%s"\n' "${kv%%=*}" "${kv#*=}"; done
    fi
  done <"$work/example/recipe.yaml"
} >"$recipe"
grep -q '^env:' "$recipe" || [[ -z ${FARM_BENCH_RECIPE_ENV:-} ]] ||
  { echo "the recipe has no env: section for FARM_BENCH_RECIPE_ENV" >&2; exit 1; }
cp "$recipe" "$work/example/recipe-nocache.yaml"
echo "ccache: false" >>"$work/example/recipe-nocache.yaml"
change=0
one_line_change() {  # FILE: a real code change; the preprocessed text differs, so it misses
  change=$((change + 1))
  echo "static_assert(sizeof(float) == 4, \"change $change\");" >>"$src/$1"
}

# measure LABEL RECIPE: submits, waits, prints one table row from the stored attempt.
measure() {
  local label=$1 recipe=$2
  local source=()
  if [[ -n $tarball ]]; then  # the current (changed) source, as the farm receives it
    (cd "$src" && tar czf "$work/source.tar.gz" $(ls -A))
    source=(--source-tarball "$work/source.tar.gz")
  fi
  ctl --output json submit "$recipe" --arch-list "$arch" "${source[@]}" \
    "${cell_python[@]}" --follow --force >"$work/submit.json"
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

echo "$(basename "$package"), TORCH_CUDA_ARCH_LIST=$arch, $(nproc) cores, $(ccache --version | head -1)"
echo "| Build | Attempt | Build command | Cache hits / misses |"
echo "|---|---|---|---|"
for step in "${steps[@]}"; do
  case $step in
    clean) measure "clean (empty cache)" "$recipe" ;;
    unchanged) measure "rebuild, no change" "$recipe" ;;
    change)
      for f in "${change_files[@]}"; do
        one_line_change "$f"
        measure "rebuild after a one-line change to $(basename "$f")" "$recipe"
      done ;;
    nocache)
      one_line_change "${change_files[0]}"
      measure "the same without the cache (ccache: false)" "$work/example/recipe-nocache.yaml" ;;
    *) echo "unknown step $step" >&2; exit 1 ;;
  esac
done
