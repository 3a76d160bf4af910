"""A package that compiles its kernel for the archs it chose itself, whatever
TORCH_CUDA_ARCH_LIST says (as packages with a hard-coded -gencode do). The farm's tests use
it to show that a wheel holding archs its cell did not ask for is flagged."""
import os
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# Deliberately not read from TORCH_CUDA_ARCH_LIST.
GENCODE = ["-gencode=arch=compute_75,code=sm_75", "-gencode=arch=compute_90,code=sm_90",
           "-gencode=arch=compute_121,code=sm_121"]


class NvccBuildExt(build_ext):
    def get_ext_filename(self, ext_name):
        return os.path.join(*ext_name.split(".")) + ".so"

    def build_extension(self, ext):
        nvcc = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc")
        out = os.path.abspath(self.get_ext_fullpath(ext.name))
        os.makedirs(os.path.dirname(out), exist_ok=True)
        cmd = [nvcc, "-shared", "-Xcompiler", "-fPIC", *GENCODE, ext.sources[0], "-o", out]
        print(" ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)


setup(name="fixed_arch", version="1.0", packages=["fixed_arch"],
      ext_modules=[Extension("fixed_arch._kernel", sources=["kernel.cu"])],
      cmdclass={"build_ext": NvccBuildExt}, zip_safe=False)
