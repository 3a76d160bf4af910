"""Builds attn_example: a ctypes-loaded CUDA attention library compiled by nvcc directly.

Environment:
  TORCH_CUDA_ARCH_LIST   required; targets separated by ';' or spaces, e.g. "9.0;12.0a;12.1a"
                         or "8.0 9.0a 12.0+PTX". "X.Y" -> sm_XY, "X.Ya" -> sm_XYa (also "f"),
                         "+PTX" also embeds compute_XY PTX for later GPUs.
  CUDA_HOME / CUDA_PATH  toolkit root (default /usr/local/cuda); nvcc is <root>/bin/nvcc.
  CXX                    host compiler that links the library (default g++).
  MAX_JOBS               how many source files compile at once (default: CPU count).
  NVCC_THREADS           nvcc --threads, i.e. targets compiled in parallel per file (default 1).
  ATTN_EXAMPLE_COMPRESS  "1" adds -Xfatbin -compress-all (compress SASS too, smaller wheel).
  ATTN_EXAMPLE_LOCAL_VERSION  local version label, e.g. "cu130" -> version 0.1.0+cu130.

No torch and no numpy are needed to build or import. The runtime is linked statically
(-cudart static), so the wheel needs only the NVIDIA driver on the target machine.
"""
import concurrent.futures
import os
import pprint
import re
import shlex
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

BASE_VERSION = "0.1.0"
PACKAGE = "attn_example"
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = ["csrc/attn_cuda.cu", "csrc/attn_cpu.cc"]
HEADERS = ["csrc/attn_example.h"]
ARCH_RE = re.compile(r"^(\d+)\.(\d+)([af]?)(\+PTX)?$")


class BuildError(Exception):
    """A configuration or compiler error, reported without a Python traceback."""


def package_version():
    label = os.environ.get("ATTN_EXAMPLE_LOCAL_VERSION", "").strip()
    if not label:
        return BASE_VERSION
    if not re.fullmatch(r"[A-Za-z0-9]+(?:[._-][A-Za-z0-9]+)*", label):
        raise BuildError(f"ATTN_EXAMPLE_LOCAL_VERSION={label!r} is not a PEP 440 local label")
    # PEP 440 normalises a local label to lower case with '.' separators; do it here so the
    # file name and METADATA agree with what installers compute.
    return BASE_VERSION + "+" + re.sub(r"[-_]", ".", label.lower())


def parse_arch_list(text):
    """Returns [(gencode flags, [codes])] for a TORCH_CUDA_ARCH_LIST value."""
    entries = [e for e in re.split(r"[;\s]+", text.strip()) if e]
    if not entries:
        raise BuildError("TORCH_CUDA_ARCH_LIST is empty or unset; set it, e.g. "
                         "TORCH_CUDA_ARCH_LIST='9.0;12.0a;12.1a' (no GPU is needed to build)")
    targets, seen = [], set()
    for entry in entries:
        m = ARCH_RE.match(entry)
        if not m:
            raise BuildError(f"TORCH_CUDA_ARCH_LIST entry {entry!r} is not X.Y, X.Ya, X.Yf "
                             "or X.Y+PTX")
        num = m.group(1) + m.group(2)
        if int(num) < 75:
            raise BuildError(f"compute capability {entry} is below 7.5, which CUDA 13 dropped")
        arch = "compute_" + num + m.group(3)
        codes = ["sm_" + num + m.group(3)]
        if m.group(4):
            codes.append(arch)
        for code in codes:
            if code in seen:
                continue
            seen.add(code)
            targets.append((f"-gencode=arch={arch},code={code}", code))
    return targets


def cuda_home():
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            return os.environ[var]
    return "/usr/local/cuda"


def cudart_dir():
    """The toolkit's library directory holding libcudart_static.a."""
    home = cuda_home()
    candidates = [os.path.join(home, "lib64"), os.path.join(home, "lib")]
    targets = os.path.join(home, "targets")
    if os.path.isdir(targets):
        candidates += [os.path.join(targets, t, "lib") for t in sorted(os.listdir(targets))]
    for path in candidates:
        if os.path.exists(os.path.join(path, "libcudart_static.a")):
            return path
    raise BuildError(f"libcudart_static.a not found under {home}; set CUDA_HOME")


def int_env(name, default):
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    if not value.isdigit() or int(value) < 1:
        raise BuildError(f"{name}={value!r} must be a positive integer")
    return int(value)


def nvcc_version(nvcc):
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise BuildError(f"cannot run {nvcc}: {e}; set CUDA_HOME to the CUDA toolkit") from e
    m = re.search(r"release (\d+\.\d+)", out.stdout)
    return m.group(1) if m else "unknown"


def run(cmd):
    print("  " + shlex.join(cmd), flush=True)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.stdout:
        print(proc.stdout, end="", flush=True)
    if proc.returncode != 0:
        raise BuildError(f"command failed with exit code {proc.returncode}: {cmd[0]} ... "
                         f"{os.path.basename(cmd[-1])}")


class NvccBuildExt(build_ext):
    """Compiles the sources with nvcc and links one shared library, no Python C API."""

    def get_ext_filename(self, ext_name):
        # A ctypes library, not a CPython extension: no ABI suffix in its file name.
        return os.path.join(*ext_name.split(".")) + ".so"

    def build_extension(self, ext):
        try:
            self._build(ext)
        except BuildError as e:
            sys.exit(f"attn_example build error: {e}")

    def _build(self, ext):
        arch_env = os.environ.get("TORCH_CUDA_ARCH_LIST", "")
        targets = parse_arch_list(arch_env)
        nvcc = os.path.join(cuda_home(), "bin", "nvcc")
        version = nvcc_version(nvcc)
        jobs = int_env("MAX_JOBS", os.cpu_count() or 1)
        threads = int_env("NVCC_THREADS", 1)
        compress = os.environ.get("ATTN_EXAMPLE_COMPRESS", "") == "1"
        print(f"attn_example: nvcc {version} ({nvcc}), targets "
              f"{' '.join(c for _, c in targets)}, MAX_JOBS={jobs}, NVCC_THREADS={threads}, "
              f"compress={'all' if compress else 'default'}", flush=True)

        # Only the extern "C" API (ATTN_API) is exported from the library.
        hidden = "-fPIC,-fvisibility=hidden,-fvisibility-inlines-hidden"
        common = ["-O3", "-std=c++17", "-Xcompiler", hidden, "-I" + os.path.join(HERE, "csrc")]
        cuda_flags = [f for f, _ in targets] + ["--threads", str(threads)]
        if compress:
            cuda_flags += ["-Xfatbin", "-compress-all"]
        os.makedirs(self.build_temp, exist_ok=True)
        compiles = []
        for src in ext.sources:
            obj = os.path.join(self.build_temp, os.path.basename(src) + ".o")
            flags = common + (cuda_flags if src.endswith(".cu") else [])
            compiles.append([nvcc] + flags + ["-c", os.path.join(HERE, src), "-o", obj])
        with concurrent.futures.ThreadPoolExecutor(max_workers=min(jobs, len(compiles))) as pool:
            for future in [pool.submit(run, cmd) for cmd in compiles]:
                future.result()

        out = os.path.abspath(self.get_ext_fullpath(ext.name))
        os.makedirs(os.path.dirname(out), exist_ok=True)
        objs = [cmd[-1] for cmd in compiles]
        # Linked by the host compiler, not nvcc: nvcc would add a device-link step whose
        # extra (empty) fatbin names its own default arch. Static runtime: the wheel needs
        # only libcuda from the driver; its symbols stay private so two libraries with
        # different runtimes cannot clash in one process.
        run([os.environ.get("CXX", "g++"), "-shared", "-o", out] + objs +
            ["-L" + cudart_dir(), "-lcudart_static", "-lrt", "-lpthread", "-ldl",
             "-Wl,--exclude-libs,ALL", "-Wl,--no-undefined"])
        self._write_build_info(os.path.dirname(out), targets, version, arch_env, compress)

    def _write_build_info(self, pkg_dir, targets, version, arch_env, compress):
        info = {
            "version": self.distribution.get_version(),
            "arches": [code for _, code in targets],
            "torch_cuda_arch_list": arch_env.strip(),
            "nvcc_version": version,
            "fatbin_compress_all": compress,
        }
        with open(os.path.join(pkg_dir, "_build_info.py"), "w") as f:
            f.write("# Written by setup.py at build time.\n")
            f.write(f"BUILD_INFO = {pprint.pformat(info)}\n")


try:
    VERSION = package_version()
except BuildError as err:
    sys.exit(f"attn_example build error: {err}")

setup(
    name="attn_example",
    version=VERSION,
    description="Example CUDA attention kernel (float32, online softmax) loaded with ctypes",
    license="Apache-2.0",
    packages=[PACKAGE],
    python_requires=">=3.8",
    ext_modules=[Extension(f"{PACKAGE}._attn_example", sources=SOURCES, depends=HEADERS)],
    cmdclass={"build_ext": NvccBuildExt},
    zip_safe=False,
)
