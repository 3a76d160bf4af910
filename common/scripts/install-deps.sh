#!/usr/bin/env bash
# Installs the farm's build and test dependencies from Debian 12 packages. Idempotent: only
# missing packages are installed, so a second run needs no network.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git ccache sqlite3 curl bubblewrap
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libboost1.81-all-dev libboost-json1.81-dev libboost-url1.81-dev
  libcurl4-openssl-dev libsqlite3-dev libpq-dev libspdlog-dev libyaml-cpp-dev libssl-dev
  libarchive-dev libzstd-dev liblz4-dev libgtest-dev libgmock-dev
  python3 python3-venv python3-pip python3-wheel python3-setuptools python3-pytest python3-yaml
  gcc-aarch64-linux-gnu  # aarch64 objects for the wheel platform checks' unit tests
)
# Extra packages for the test suite only (browser, provisioning, containers, network
# namespaces for the multi-host tests).
if [[ "${1:-}" == "--with-test-tools" ]]; then
  PACKAGES+=(chromium chromium-driver python3-selenium ansible-core ansible-lint yamllint
             podman runc debootstrap wrk iproute2 util-linux mount
             qemu-user-static binfmt-support  # the aarch64 worker under emulation
             postgresql)  # the PostgreSQL store tests start a throwaway server
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
