#!/usr/bin/env bash
# Checks that every flag the roles pass to farmd and farm-worker (all optional flags on) is
# one the built binary lists in --help, so a unit never starts a daemon that rejects its
# command line. Needs FARMD and FARM_WORKER (paths of the built binaries); exits 77 without
# them or without ansible-core.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
command -v ansible-playbook >/dev/null || { echo "SKIP: ansible-core is not installed"; exit 77; }
for var in FARMD FARM_WORKER; do
  if [[ ! -x "${!var:-}" ]]; then echo "SKIP: $var does not name a built binary ('${!var:-}')"; exit 77; fi
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/farm-flags.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
ANSIBLE_NOCOLOR=1 ANSIBLE_LOCAL_TEMP="$tmp/a" ansible-playbook -i localhost, -c local \
  -e "argv_out=$tmp/argv.json" "$here/argv.yml" > "$tmp/log" 2>&1 || { cat "$tmp/log" >&2; exit 1; }
status=0
for name in farmd farm-worker; do
  bin=$FARMD; [[ $name == farm-worker ]] && bin=$FARM_WORKER
  help=$("$bin" --help 2>&1 || true)
  flags=$(/usr/bin/python3 -c 'import json,sys; print("\n".join(sorted({a.split("=")[0] for a in json.load(open(sys.argv[1]))[sys.argv[2]] if a.startswith("--")})))' "$tmp/argv.json" "$name")
  for flag in $flags; do
    if grep -qE -- "(^|[^a-z-])${flag}([^a-z-]|$)" <<<"$help"; then
      echo "ok: $name accepts $flag"
    else
      echo "FAIL: the roles pass $flag to $name, which its --help does not list" >&2
      status=1
    fi
  done
done
exit $status
