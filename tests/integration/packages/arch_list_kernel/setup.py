"""The smallest package that builds a CUDA kernel for exactly the archs its matrix cell asks
(TORCH_CUDA_ARCH_LIST, as torch's build helpers read it): one trivial kernel, so that the
farm's tests get one real wheel per GPU view in seconds, not the example's minutes."""
import os
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


def gencodes(arch_list):
    """"9.0;12.1a" -> -gencode flags for sm_90 and sm_121a (SASS only)."""
    out = []
    for arch in arch_list.replace(" ", ";").split(";"):
        arch = arch.strip().removesuffix("+PTX")
        if not arch:
            continue
        suffix = arch[-1] if arch[-1] in "af" else ""
        major, minor = arch.rstrip("af").split(".")
        sm = major + minor + suffix
        out.append(f"-gencode=arch=compute_{sm},code=sm_{sm}")
    if not out:
        raise SystemExit("arch_list_kernel needs TORCH_CUDA_ARCH_LIST")
    return out


class NvccBuildExt(build_ext):
    def get_ext_filename(self, ext_name):
        return os.path.join(*ext_name.split(".")) + ".so"

    def build_extension(self, ext):
        nvcc = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc")
        out = os.path.abspath(self.get_ext_fullpath(ext.name))
        os.makedirs(os.path.dirname(out), exist_ok=True)
        cmd = [nvcc, "-shared", "-Xcompiler", "-fPIC",
               *gencodes(os.environ.get("TORCH_CUDA_ARCH_LIST", "")), ext.sources[0], "-o", out]
        print(" ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)


setup(name="arch_list_kernel", version="1.0", packages=["arch_list_kernel"],
      ext_modules=[Extension("arch_list_kernel._kernel", sources=["kernel.cu"])],
      cmdclass={"build_ext": NvccBuildExt}, zip_safe=False)
