#!/usr/bin/env bash
# Installs the farm's dependencies from Debian 12 packages. Idempotent: only missing
# packages are installed, so a second run needs no network.
#
#   install-deps.sh                     what quickstart.sh needs: build farmd, farm-worker and
#                                       farmctl, and build the example wheel through them
#   install-deps.sh --with-test-tools   also everything the whole test suite and the
#                                       benchmarks need (common/scripts/test.sh)
#
# Every package is named here, recommended ones included: apt runs with
# --no-install-recommends, as a fresh machine's installer of a server would, so a package
# that only "recommends" what the build needs does not bring it (gcc-aarch64-linux-gnu and
# its libc headers). tests/bench/fresh_root.sh proves the lists on a bare Debian 12 root.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git ccache bubblewrap ca-certificates
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  # Beast and Asio are header-only (libboost1.81-dev); JSON and URL are compiled libraries.
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev
  libcurl4-openssl-dev libsqlite3-dev libpq-dev libspdlog-dev libyaml-cpp-dev libssl-dev
  libarchive-dev libzstd-dev liblz4-dev
  libtomlplusplus-dev  # PEP 751 lock files (header only)
  # The worker builds wheels with pip in a venv of the host's Python.
  python3 python3-venv python3-pip python3-wheel python3-setuptools
)
# The whole test suite and the benchmarks.
TEST_PACKAGES=(
  libgtest-dev libgmock-dev python3-pytest python3-yaml sqlite3 curl procps psmisc
  zstd  # the unit tests make .tar.zst sources with the zstd command
  # The independent provenance verifier (tests/support/verify_provenance.py).
  python3-cryptography
  # Python.h: test packages with C extensions (build graphs, repacked wheels) and the
  # relocatable CPython archive the provisioning tests make from this interpreter.
  python3-dev
  # aarch64 objects for the wheel platform checks' unit tests; the C library headers are
  # only recommended by the cross compiler.
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross
  # The dashboard in a real browser, provisioning, containers, network namespaces.
  chromium chromium-driver python3-selenium ansible-core ansible-lint yamllint
  podman runc debootstrap wrk iproute2 util-linux mount
  qemu-user-static binfmt-support  # the aarch64 worker under emulation
  postgresql                       # the PostgreSQL store tests start a throwaway server
  clang-format-14                  # the format check (common/scripts/check-format.sh)
)
if [[ "${1:-}" == "--with-test-tools" ]]; then
  PACKAGES+=("${TEST_PACKAGES[@]}")
elif [[ -n "${1:-}" ]]; then
  echo "install-deps: unknown argument $1 (only --with-test-tools)" >&2
  exit 2
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if (( ${#missing[@]} )); then
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all ${#PACKAGES[@]} packages present"
fi

if [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
  echo "install-deps: warning: no CUDA toolkit at /usr/local/cuda (nvcc is needed to build kernels)" >&2
fi
