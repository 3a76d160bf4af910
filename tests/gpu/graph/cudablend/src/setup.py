"""Builds cudablend: libblend.so compiled by nvcc for TORCH_CUDA_ARCH_LIST, with the block
size taken from the installed tritonscale (the build needs the dependency's wheel)."""
import os
import re
import subprocess

import tritonscale
from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))


def gencodes(arch_list):
    flags = []
    for entry in [e for e in re.split(r"[;\s]+", arch_list.strip()) if e]:
        m = re.fullmatch(r"(\d+)\.(\d+)([af]?)(\+PTX)?", entry)
        if not m:
            raise SystemExit(f"cannot read TORCH_CUDA_ARCH_LIST entry {entry!r}")
        cc = m.group(1) + m.group(2) + m.group(3)
        flags += ["-gencode", f"arch=compute_{cc},code=sm_{cc}"]
        if m.group(4):
            flags += ["-gencode", f"arch=compute_{cc},code=compute_{cc}"]
    if not flags:
        raise SystemExit("TORCH_CUDA_ARCH_LIST is empty")
    return flags


class BuildWithNvcc(build_py):
    def run(self):
        with open(os.path.join(HERE, "csrc", "block.h"), "w") as f:
            f.write(f"#define CUDABLEND_BLOCK {tritonscale.BLOCK}\n")
        nvcc = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc")
        lib = os.path.join(HERE, "cudablend", "libblend.so")
        subprocess.check_call([nvcc, "-O2", "-shared", "-Xcompiler", "-fPIC", "-cudart", "static",
                               *gencodes(os.environ.get("TORCH_CUDA_ARCH_LIST", "")),
                               "-o", lib, os.path.join(HERE, "csrc", "blend.cu")])
        super().run()


class BinaryDistribution(Distribution):
    def has_ext_modules(self):  # a platform wheel: it holds a CUDA library
        return True


setup(name="cudablend", version="0.1.0", packages=["cudablend"],
      package_data={"cudablend": ["libblend.so"]}, cmdclass={"build_py": BuildWithNvcc},
      distclass=BinaryDistribution)
