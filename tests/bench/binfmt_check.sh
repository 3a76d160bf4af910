#!/usr/bin/env bash
# Checks that this machine runs aarch64 ELF binaries through qemu-user and binfmt_misc,
# mounting binfmt_misc and enabling Debian's qemu-aarch64 entry when root may. Exit 0 and
# "binfmt: ok (...)" when it works; exit 77 with the reason on the last line otherwise.
set -euo pipefail

reason() { echo "binfmt: $*" >&2; exit 77; }

entry=/proc/sys/fs/binfmt_misc/qemu-aarch64
if [[ ! -e /proc/sys/fs/binfmt_misc/status ]]; then
  [[ $(id -u) -eq 0 ]] || reason "binfmt_misc is not mounted and only root may mount it"
  mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc 2>/dev/null \
    || reason "cannot mount binfmt_misc (the kernel or the container forbids it)"
fi
if [[ ! -e "$entry" ]]; then
  command -v update-binfmts >/dev/null \
    || reason "no qemu-aarch64 entry and no update-binfmts (apt-get install binfmt-support qemu-user-static)"
  [[ -e /usr/share/binfmts/qemu-aarch64 ]] \
    || reason "qemu-user-static is not installed (apt-get install qemu-user-static binfmt-support)"
  update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || reason "update-binfmts --enable qemu-aarch64 failed"
fi
grep -qx enabled "$entry" || reason "the qemu-aarch64 binfmt entry is disabled"
# F (fix binary): the interpreter is opened at registration, so it works inside a chroot
# that has no qemu of its own.
grep -q '^flags: .*F' "$entry" || reason "the qemu-aarch64 entry lacks the F flag; chroots would need their own qemu"
echo "binfmt: ok ($(grep '^interpreter' "$entry"))"
