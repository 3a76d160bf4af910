#!/usr/bin/env bash
# Configures and builds the farm into build/ (or $FARM_BUILD_DIR).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${FARM_BUILD_DIR:-$repo/build}
# FARM_CMAKE_ARGS: more configure arguments, e.g. -DFARM_SANITIZE=address,undefined.
cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${FARM_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j "$(nproc)" "$@"
