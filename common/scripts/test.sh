#!/usr/bin/env bash
# Installs the dependencies, builds everything and runs the whole test suite with ctest.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
"$repo/common/scripts/install-deps.sh" --with-test-tools
"$repo/common/scripts/build.sh"
cd "${FARM_BUILD_DIR:-$repo/build}"
ctest --output-on-failure --timeout 1200 -j 2
