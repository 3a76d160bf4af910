#!/usr/bin/env bash
# Static checks of the Ansible playbooks:
#   lint.sh yamllint       yamllint --strict over playbooks/ and these test playbooks
#   lint.sh ansible-lint   ansible-lint (production profile) with playbooks/.ansible-lint
#   lint.sh syntax         ansible-playbook --syntax-check on every playbook
# Exits 77 when the tool is not installed (Debian: yamllint, ansible-lint, ansible-core).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
playbooks="$repo/playbooks"

need() {
  if ! command -v "$1" >/dev/null 2>&1; then
    echo "SKIP: $1 is not installed (apt-get install $2)"
    exit 77
  fi
}

case "${1:-}" in
  yamllint)
    need yamllint yamllint
    cd "$playbooks"
    yamllint --strict -c .yamllint . "$here"
    echo "yamllint: ok"
    ;;
  ansible-lint)
    need ansible-lint ansible-lint
    cd "$playbooks"
    # A private home keeps ansible-lint's caches out of the user's.
    export HOME="${TMPDIR:-/tmp}/farm-ansible-lint-$$"
    trap 'rm -rf "$HOME"' EXIT
    ansible-lint --nocolor -p --offline
    ;;
  syntax)
    need ansible-playbook ansible-core
    cd "$playbooks"
    export ANSIBLE_CONFIG="$playbooks/ansible.cfg"
    count=0
    for pb in site.yml coordinator.yml workers.yml; do
      ansible-playbook --syntax-check -i inventories/example/hosts.yml "$pb"
      count=$((count + 1))
    done
    ANSIBLE_ROLES_PATH="$playbooks/roles" ansible-playbook --syntax-check -i localhost, "$here/converge.yml"
    echo "syntax-check: $((count + 1)) playbooks ok"
    ;;
  *)
    echo "usage: $0 yamllint|ansible-lint|syntax" >&2
    exit 2
    ;;
esac
