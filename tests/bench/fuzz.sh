#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang (AddressSanitizer and
# UndefinedBehaviorSanitizer) into build-fuzz/ and runs each from its seed corpus, then
# prints one table line per target: executions, seconds, coverage (edges and features),
# corpus size and crashes. Crash inputs land in build-fuzz/fuzz/crashes/TARGET/.
#
#   tests/bench/fuzz.sh [TARGET...]     (default: every target)
#   FUZZ_RUNS=1000000        executions per target
#   FUZZ_MAX_SECONDS=900     time bound per target, whichever comes first
#   FUZZ_JOBS=$(nproc)       targets run at once
#   FUZZ_TMPDIR=/dev/shm     where the wheel target writes each input (memory, not disk)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${FARM_FUZZ_BUILD_DIR:-$repo/build-fuzz}
runs=${FUZZ_RUNS:-1000000}
max_seconds=${FUZZ_MAX_SECONDS:-900}
jobs=${FUZZ_JOBS:-$(nproc)}
fuzz_tmp=${FUZZ_TMPDIR:-/dev/shm}
[[ -d "$fuzz_tmp" ]] || fuzz_tmp=${TMPDIR:-/tmp}
all=(recipe cron time_zone fatbin elf_manifest wheel names router provenance)
targets=("${@:-${all[@]}}")

CC=clang CXX=clang++ cmake -S "$repo" -B "$build" -DFARM_FUZZ=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
# The nvcc-built wheel test modules are the ELF, fatbinary and wheel seeds.
extra=()
if cmake --build "$build" --target help | grep -q farm_wheel_test_fatbins; then
  extra=(farm_wheel_test_fatbins)
fi
cmake --build "$build" -j "$(nproc)" --target farm_fuzzers farm_wheel_test_host_only "${extra[@]}"

work=$build/fuzz
rm -rf "$work/seeds"
python3 "$repo/tests/fuzz/make_seeds.py" "$repo" "$build" "$work/seeds"

run_one() {
  local t=$1
  mkdir -p "$work/corpus/$t" "$work/crashes/$t"
  # -rss_limit_mb and -timeout turn runaway memory and hangs into reported crashes.
  TMPDIR=$fuzz_tmp ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$build/tests/fuzz/${t}_fuzz" "$work/corpus/$t" "$work/seeds/$t" \
    -runs="$runs" -max_total_time="$max_seconds" -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$work/crashes/$t/" >"$work/$t.log" 2>&1 || true
}

pids=()
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=($!)
  while (( $(jobs -rp | wc -l) >= jobs )); do sleep 1; done
done
wait "${pids[@]}"

echo "| Target | Executions | Seconds | Exec/s | Edges | Features | Corpus | Crashes |"
echo "|---|---|---|---|---|---|---|---|"
status=0
for t in "${targets[@]}"; do
  log=$work/$t.log
  done_line=$(grep -E '^Done [0-9]+ runs in' "$log" | tail -1 || true)
  execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log" | tail -1)
  seconds=$(echo "$done_line" | sed -nE 's/.* in ([0-9]+) second.*/\1/p')
  cov_line=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1 || true)
  edges=$(echo "$cov_line" | sed -nE 's/.*cov: ([0-9]+).*/\1/p')
  features=$(echo "$cov_line" | sed -nE 's/.*ft: ([0-9]+).*/\1/p')
  corpus=$(echo "$cov_line" | sed -nE 's/.*corp: ([0-9]+\/[0-9]+[a-zA-Z]*).*/\1/p')
  crashes=$(find "$work/crashes/$t" -type f | wc -l)
  rate=$(( ${seconds:-0} > 0 ? ${execs:-0} / seconds : 0 ))
  echo "| $t | ${execs:-?} | ${seconds:-?} | $rate | ${edges:-?} | ${features:-?} | ${corpus:-?} | $crashes |"
  if (( crashes > 0 )) || [[ -z "$done_line" ]]; then
    status=1
    echo "fuzz: $t: see $log" >&2
  fi
done
exit $status
