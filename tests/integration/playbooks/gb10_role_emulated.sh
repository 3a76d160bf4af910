#!/usr/bin/env bash
# The gb10 role inside an arm64 Debian root under qemu-user: ansible-playbook runs there
# (-c local, so Ansible's own facts say aarch64) against a throwaway prefix, twice.
#   - syntax check, then a first run that builds and installs Triton, then SageAttention
#     with --no-deps, from local git repositories that stand in for the pinned commits
#     (tiny packages recording the environment they were built with: the notes' settings);
#   - the second run reports changed=0 and builds nothing;
#   - SageAttention's dependency on a newer Triton did not replace the pinned one;
#   - the role refuses an x86_64 host (run natively here).
#   tests/integration/playbooks/gb10_role_emulated.sh [ROOT]
# ROOT defaults to $FARM_AARCH64_ROOT (tests/bench/make_aarch64_root.sh). Exits 77 with the
# reason when binfmt, root, the arm64 root or Ansible is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
root=${1:-${FARM_AARCH64_ROOT:-}}

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
check() { local what=$1; shift; if "$@"; then echo "ok: $what"; else fail "$what"; fi; }

[[ $(id -u) -eq 0 ]] || skip "running inside the arm64 root needs root (chroot, mounts)"
[[ -n $root && -x $root/usr/bin/python3 ]] || skip "no arm64 root (tests/bench/make_aarch64_root.sh)"
"$repo/tests/bench/binfmt_check.sh" >/dev/null 2>&1 || skip "$("$repo/tests/bench/binfmt_check.sh" 2>&1 | tail -1)"
[[ -x $root/usr/bin/ansible-playbook && -x $root/usr/bin/git ]] \
  || skip "the arm64 root lacks ansible-core or git (make it again with tests/bench/make_aarch64_root.sh)"
command -v git >/dev/null || skip "git is not installed"

scratch=$(mktemp -d "$root/tmp/farm-gb10.XXXXXX")
inside=/${scratch#"$root"/}
cleanup() {
  local rc=$?
  if [[ $rc -eq 0 && -z "${KEEP_TMP:-}" ]]; then rm -rf "$scratch"; else echo "kept $scratch"; fi
}
trap cleanup EXIT

# Runs a command inside the root: private mounts of /proc and /dev, then chroot.
in_root() {
  unshare -m --propagation private sh -c \
    'mount -t proc proc "$0/proc" && mount --rbind /dev "$0/dev" && exec chroot "$0" "$@"' \
    "$root" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root LANG=C.UTF-8 \
    ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=false ANSIBLE_LOCAL_TEMP="$inside/tmp" \
    ANSIBLE_REMOTE_TEMP="$inside/tmp" ANSIBLE_ROLES_PATH="$inside/roles" "$@"
}

# A stand-in source tree: package NAME at VERSION whose setup.py records the build
# environment and may declare a dependency; committed, its commit printed.
fake_repo() {
  local name=$1 version=$2 requires=$3 dir=$scratch/src-$1
  mkdir -p "$dir/$name"
  printf 'def sageattn(*args, **kwargs):\n    return None\n' > "$dir/$name/__init__.py"
  cat > "$dir/setup.py" <<PY
import json, os
from setuptools import setup
keys = ("TRITON_PTXAS_PATH", "TORCH_CUDA_ARCH_LIST", "MAX_JOBS", "CMAKE_BUILD_PARALLEL_LEVEL", "CUDA_HOME")
with open(os.path.join("$name", "build_env.json"), "w") as f:
    json.dump({k: os.environ.get(k, "") for k in keys}, f)
setup(name="$name", version="$version", packages=["$name"], package_data={"$name": ["build_env.json"]},
      install_requires=[$requires])
PY
  git -C "$dir" init -q
  git -C "$dir" -c user.name=farm -c user.email=farm@localhost add -A
  git -C "$dir" -c user.name=farm -c user.email=farm@localhost commit -q -m "$name $version"
  git -C "$dir" rev-parse HEAD
}
triton_commit=$(fake_repo triton 3.5.0+git4caa0328 "")
sage_commit=$(fake_repo sageattention 2.2.0 "'triton>=99'")
git -C "$scratch/src-sageattention" update-ref refs/pull/297/head HEAD

prefix=$inside/prefix
mkdir -p "$scratch/prefix/usr/local/cuda/bin" "$scratch/tmp" "$scratch/roles"
printf '#!/bin/sh\necho "ptxas: NVIDIA (R) Ptx optimizing assembler (stand-in)"\n' \
  > "$scratch/prefix/usr/local/cuda/bin/ptxas"
chmod +x "$scratch/prefix/usr/local/cuda/bin/ptxas"
cp -r "$repo/playbooks/roles/gb10" "$scratch/roles/"
cat > "$scratch/gb10.yml" <<'YML'
---
- name: Converge the gb10 role.
  hosts: all
  roles:
    - role: gb10
YML
cat > "$scratch/vars.yml" <<YML
farm_prefix: "$prefix"
farm_manage_packages: false
ansible_python_interpreter: /usr/bin/python3
gb10_python: /usr/bin/python3
gb10_triton_repo: "$inside/src-triton"
gb10_triton_commit: "$triton_commit"
gb10_sageattention_repo: "$inside/src-sageattention"
gb10_sageattention_commit: "$sage_commit"
gb10_pip_extra_args: "--no-index"
YML

recap_changed() { sed -n '/PLAY RECAP/,$p' "$1" | grep -o 'changed=[0-9]*' | cut -d= -f2 | awk '{s+=$1} END {print s+0}'; }
playbook() {
  local log=$1; shift
  if ! in_root ansible-playbook -i localhost, -c local "$inside/gb10.yml" -e "@$inside/vars.yml" "$@" > "$log" 2>&1; then
    tail -n 40 "$log" >&2
    fail "ansible-playbook $* failed inside the arm64 root (log: $log)"
  fi
}

SECONDS=0
playbook "$scratch/syntax.log" --syntax-check
echo "ok: syntax check inside the arm64 root (${SECONDS} s)"
SECONDS=0
playbook "$scratch/run1.log" -v
first=$(recap_changed "$scratch/run1.log")
echo "first run: changed=$first (${SECONDS} s)"
check "the first run built both packages" grep -q 'Build and install SageAttention' "$scratch/run1.log"
check "Ansible's facts say aarch64 (the role's first check passed)" \
  bash -c "grep -A2 'Check that this is an aarch64 host' '$scratch/run1.log' | grep -q '^ok:'"
SECONDS=0
playbook "$scratch/run2.log" -v
second=$(recap_changed "$scratch/run2.log")
echo "second run: changed=$second (${SECONDS} s)"
[[ $second == 0 ]] || { grep -B1 '^changed' "$scratch/run2.log" >&2 || true; fail "second run changed=$second"; }
check "the second run built nothing" bash -c "! grep -A2 'Build and install Triton' '$scratch/run2.log' | grep -q '^changed'"

venv=$scratch/prefix/opt/farm/gb10/venv
site=$(ls -d "$venv"/lib/python3*/site-packages)
env_of() { /usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$site/$1/build_env.json" "$2"; }
for pkg in triton sageattention; do
  check "$pkg built with TRITON_PTXAS_PATH of the toolkit" test "$(env_of $pkg TRITON_PTXAS_PATH)" = "$prefix/usr/local/cuda/bin/ptxas"
  check "$pkg built with TORCH_CUDA_ARCH_LIST=12.1" test "$(env_of $pkg TORCH_CUDA_ARCH_LIST)" = 12.1
  check "$pkg built with MAX_JOBS=20" test "$(env_of $pkg MAX_JOBS)" = 20
  check "$pkg built with CMAKE_BUILD_PARALLEL_LEVEL=20" test "$(env_of $pkg CMAKE_BUILD_PARALLEL_LEVEL)" = 20
done
versions=$(in_root "$prefix/opt/farm/gb10/venv/bin/python" -c \
  'import importlib.metadata as m, platform; print(m.version("triton"), m.version("sageattention"), platform.machine())')
check "the pinned Triton survived SageAttention's dependency (--no-deps), under aarch64" \
  test "$versions" = "3.5.0+git4caa0328 2.2.0 aarch64"
check "the lock records both commits" grep -qx "sageattention=$sage_commit" "$venv/farm-gb10.lock"

# The same role on this x86_64 machine: refused before anything is installed.
if command -v ansible-playbook >/dev/null; then
  native=$(mktemp -d "${TMPDIR:-/tmp}/farm-gb10-x86.XXXXXX")
  if ANSIBLE_ROLES_PATH="$repo/playbooks/roles" ANSIBLE_LOCAL_TEMP="$native" ansible-playbook \
      -i localhost, -c local "$scratch/gb10.yml" -e farm_prefix="$native" > "$native/run.log" 2>&1; then
    fail "the gb10 role ran on an x86_64 host"
  fi
  check "an x86_64 host is refused with the reason" grep -q "The gb10 role is for NVIDIA GB10" "$native/run.log"
  rm -rf "$native"
fi
echo "PASS: the gb10 role converges inside the arm64 root (first changed=$first, second changed=0)"
