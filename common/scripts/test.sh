#!/usr/bin/env bash
# Installs the dependencies, builds everything and runs the whole test suite with ctest.
#
# The suite runs on a build with AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer
# (build-asan/): unit tests and the integration tests drive instrumented binaries, and any
# report (a crash, a leak at exit, undefined behaviour) fails the test that saw it. One
# instrumented build instead of a plain one plus a sanitized one, compiled in unity batches
# (FARM_FAST_BUILD), keeps the suite inside its time on a 2-core machine.
# FARM_SANITIZE=thread builds with ThreadSanitizer (build-tsan/); FARM_SANITIZE=none tests
# the plain optimised build (build/) that quickstart.sh uses.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
# Where the time goes, printed at the end (the suite has 30 minutes on two cores).
start=$SECONDS
"$repo/common/scripts/install-deps.sh" --with-test-tools
deps_s=$((SECONDS - start))
sanitize=${FARM_SANITIZE:-address,undefined}
[[ $sanitize == none ]] && sanitize=""
export FARM_SANITIZE=$sanitize  # the integration harness stops daemons gently when set
case "$sanitize" in
  "") suffix="" ;;
  thread) suffix="-tsan" ;;
  *) suffix="-asan" ;;
esac
build=${FARM_BUILD_DIR:-$repo/build$suffix}
FARM_BUILD_DIR=$build FARM_CMAKE_ARGS="-DFARM_BUILD_TESTS=ON -DFARM_FAST_BUILD=ON -DFARM_UNIT_TEST_PER_EXECUTABLE=ON -DFARM_SANITIZE=$sanitize" "$repo/common/scripts/build.sh"
build_s=$((SECONDS - start - deps_s))
# Reports go to stderr (the test's output, or the daemon's log that the integration
# harness reads); the first one ends the process with a failure.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:${UBSAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$repo/common/scripts/lsan.supp:print_suppressions=0:${LSAN_OPTIONS:-}"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:${TSAN_OPTIONS:-}"
cd "$build"
# Four tests per core: most of a test's time is spent waiting on the processes it drives
# (leases, heartbeats, polls, kills). The whole suite uses about 1,000 s of CPU (user 692 s,
# system 322 s); three at a time on two cores it took 1,741 s, six at a time 1,434 s on the
# same loaded machine, and in CI six at a time still left the cores half idle (975 s). At
# most sixteen, so a large machine's memory is not the limit.
jobs=$(($(nproc) * 4))
((jobs > 16)) && jobs=16
rc=0
ctest --output-on-failure --timeout 1200 -j "${FARM_TEST_JOBS:-$jobs}" ${FARM_CTEST_ARGS:-} || rc=$?
echo "test: done in $((SECONDS - start)) s: dependencies $deps_s s, build $build_s s," \
  "suite $((SECONDS - start - deps_s - build_s)) s (exit $rc)"
exit $rc
