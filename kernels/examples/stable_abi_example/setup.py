"""Builds stable_abi_example: one CUDA kernel and its CPU twin registered as the op
torch.ops.stable_abi_example.scaled_add through torch's stable ABI, so one wheel serves
every torch from the floor up (per CUDA major) and, using no Python API, every Python from
3.10 up (cp310-abi3).

Environment:
  TORCH_CUDA_ARCH_LIST     the targets, as torch.utils.cpp_extension reads them ("9.0a").
  FARM_TORCH_STABLE_FLOOR  the torch the build targets, MAJOR.MINOR (default 2.9, the
                           recipe's torch_abi.stable): -DTORCH_TARGET_VERSION, so nothing
                           newer than the floor compiles, and Requires-Dist torch>=floor.
  MAX_JOBS                 parallel compiles (torch's ninja build reads it).

Needs torch >= the floor (with its stable headers) in the build environment, built with
--no-build-isolation. torch.utils.cpp_extension defines Py_LIMITED_API for its minimum
CPython (3.10 for torch 2.11) on a py_limited_api extension; the wheel is tagged for the
same version.
"""
import os
import re

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

FLOOR = os.environ.get("FARM_TORCH_STABLE_FLOOR", "2.9").strip()
m = re.fullmatch(r"(\d+)\.(\d+)", FLOOR)
if not m:
    raise SystemExit(f"FARM_TORCH_STABLE_FLOOR={FLOOR!r} must be MAJOR.MINOR such as 2.9")
TARGET = "0x%02x%02x000000000000" % (int(m.group(1)), int(m.group(2)))
LIMITED_API = "cp310"  # what torch.utils.cpp_extension's Py_LIMITED_API names

STABLE = [f"-DTORCH_TARGET_VERSION={TARGET}", "-DTORCH_STABLE_ONLY"]

setup(
    name="stable_abi_example",
    version="0.1.0",
    description="A CUDA op built once against torch's stable ABI (torch >= %s)" % FLOOR,
    license="Apache-2.0",
    packages=["stable_abi_example"],
    python_requires=">=3.10",
    install_requires=[f"torch>={FLOOR}"],
    ext_modules=[
        CUDAExtension(
            "stable_abi_example._C",
            sources=["csrc/scaled_add.cpp", "csrc/scaled_add_kernel.cu"],
            depends=["csrc/scaled_add.h"],
            # USE_CUDA declares the CUDA part of the C shim (the current stream).
            extra_compile_args={"cxx": ["-O3", "-DUSE_CUDA", "-fvisibility=hidden"] + STABLE,
                                "nvcc": ["-O3"] + STABLE},
            py_limited_api=True,
        )
    ],
    cmdclass={"build_ext": BuildExtension},
    options={"bdist_wheel": {"py_limited_api": LIMITED_API}},
    zip_safe=False,
)
