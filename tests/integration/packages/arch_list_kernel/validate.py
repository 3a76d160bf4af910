#!/usr/bin/env python3
"""The validation script of a test package (contract: kernels/VALIDATION.md). Its kernel has
no reference to compare with, so it never passes: without a CUDA device it reports
no_device (exit 3: the wheel waits for hardware, which is what the farm's GPU-less tests
need to list it in the index with --index-include-pending); with one, error (exit 4)."""
import argparse
import ctypes
import json
import os

p = argparse.ArgumentParser()
p.add_argument("--device")
p.add_argument("--report")
p.add_argument("--quick", action="store_true")
p.add_argument("--min-cosine", type=float)
p.add_argument("--max-relative-l1", type=float)
args = p.parse_args()
count = ctypes.c_int(0)
try:
    cuda = ctypes.CDLL("libcuda.so.1")
    found = cuda.cuInit(0) == 0 and cuda.cuDeviceGetCount(ctypes.byref(count)) == 0
except OSError:
    found = False
code, state = (4, "error") if found and count.value > 0 else (3, "no_device")
report = {"schema": "farm.validation.v2", "state": state, "exit_code": code, "cases": [],
          "device": args.device,
          "message": "a test package without a numerical check" if code == 4 else "no CUDA device"}
if args.report:
    with open(args.report + ".tmp", "w") as f:
        json.dump(report, f)
    os.replace(args.report + ".tmp", args.report)
raise SystemExit(code)
