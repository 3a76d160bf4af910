#!/usr/bin/env python3
"""The worker's folders include only their own headers and those of lower folders.

ORDER, lowest first, is the order docs/ARCHITECTURE.md gives: a file in a folder may
include headers of its own folder and of the folders before it, never of one after it,
so that no two folders include each other. Usage: folder_order_test.py WORKER_DIR.
Exits 1 naming each include that goes up, 0 when there is none.
"""
import pathlib
import re
import sys

ORDER = ["env", "config", "client", "exec", "probe", "cache", "job", "validate", "attempt", "agent"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"worker/([a-z_]+)/', re.M)


def main(worker_dir):
    root = pathlib.Path(worker_dir)
    folders = sorted(p.name for p in root.iterdir() if p.is_dir())
    unknown = [f for f in folders if f not in ORDER]
    if unknown:
        print(f"folder_order_test: folders without a place in ORDER: {', '.join(unknown)}")
        return 1
    rank = {name: i for i, name in enumerate(ORDER)}
    upward = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in (".h", ".cc", ".in") or not path.is_file():
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            for match in INCLUDE.finditer(text):
                target = match.group(1)
                if target in rank and rank[target] > rank[folder]:
                    line = text.count("\n", 0, match.start()) + 1
                    upward.append(f"{path}:{line}: {folder}/ includes {target}/, a higher folder")
    for u in upward:
        print(u)
    return 1 if upward else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "worker"))
