#!/usr/bin/python3
"""Builds kernels/examples/attn_example into a wheel with the real pip and nvcc (no GPU, no
package index), checks its name, tags, METADATA and the device code inside its library,
installs it into a fresh virtual environment and checks the CPU path against a tiny
hand-computed attention and the no-GPU behaviour of the CUDA path and validate.py.

Usage: test_attn_example_wheel.py SOURCE_DIR
Exit codes: 0 pass, 1 fail, 77 skipped (the reason is printed).
"""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zipfile

DEBIAN_PYTHON = "/usr/bin/python3"
ARCH_LIST = "8.0;9.0a;12.0a;12.1a"
EXPECTED_ARCHES = ["sm_80", "sm_90a", "sm_120a", "sm_121a"]
EXPECTED_SMS = {80, 90, 120, 121}
LOCAL_LABEL = "cu130"
BUILD_TIMEOUT_S = 900
SKIP = 77


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(SKIP)


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def run(cmd, timeout, **kwargs):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout, **kwargs)
    return proc.returncode, proc.stdout


def must(cmd, timeout, **kwargs):
    code, out = run(cmd, timeout, **kwargs)
    check(code == 0, f"{' '.join(cmd)} exited {code}:\n{out[-4000:]}")
    return out


def preflight():
    cuda = os.environ.get("CUDA_HOME") or "/usr/local/cuda"
    if not os.access(os.path.join(cuda, "bin", "nvcc"), os.X_OK):
        skip(f"no nvcc under {cuda} (set CUDA_HOME)")
    if not os.access(DEBIAN_PYTHON, os.X_OK):
        skip(f"{DEBIAN_PYTHON} is missing")
    code, out = run([DEBIAN_PYTHON, "-c", "import venv, wheel, setuptools, pip"], 60)
    if code != 0:
        skip(f"{DEBIAN_PYTHON} lacks venv/wheel/setuptools/pip: {out.strip()[-300:]}")
    return cuda


# ---- ELF and fatbin inspection (no binutils, no cuobjdump) ----------------------------

def elf_sections(data):
    check(data[:4] == b"\x7fELF" and data[4] == 2, "not a 64-bit ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab_off, strtab_size = headers[shstrndx][4], headers[shstrndx][5]
    names = data[strtab_off:strtab_off + strtab_size]
    sections = {}
    for name_off, _type, _flags, _addr, offset, size in headers:
        name = names[name_off:names.index(b"\0", name_off)].decode()
        sections[name] = data[offset:offset + size]
    return sections


def needed_libraries(sections):
    dynstr, dynamic = sections[".dynstr"], sections[".dynamic"]
    needed = []
    for i in range(0, len(dynamic), 16):
        tag, val = struct.unpack_from("<qQ", dynamic, i)
        if tag == 0:
            break
        if tag == 1:  # DT_NEEDED
            needed.append(dynstr[val:dynstr.index(b"\0", val)].decode())
    return needed


def fatbin_entries(blob):
    """[(kind, sm)] of every entry of every container in a .nv_fatbin section."""
    entries, pos = [], 0
    while pos + 16 <= len(blob):
        magic, _ver, hsize, fsize = struct.unpack_from("<IHHQ", blob, pos)
        if magic != 0xBA55ED50:
            pos += 8  # alignment padding between containers
            continue
        entry, end = pos + hsize, pos + hsize + fsize
        while entry < end:
            kind, _ev, ehsize, payload = struct.unpack_from("<HHIQ", blob, entry)
            sm, = struct.unpack_from("<I", blob, entry + 28)
            entries.append(("ptx" if kind == 1 else "elf" if kind == 2 else str(kind), sm))
            entry += ehsize + payload
        pos = end
    return entries


# ---- the test steps -------------------------------------------------------------------

def build_wheel(src, work, cuda):
    venv = os.path.join(work, "build-venv")
    must([DEBIAN_PYTHON, "-m", "venv", "--system-site-packages", venv], 120)
    dist = os.path.join(work, "dist")
    env = dict(os.environ, TORCH_CUDA_ARCH_LIST=ARCH_LIST, CUDA_HOME=cuda, MAX_JOBS="2",
               ATTN_EXAMPLE_LOCAL_VERSION=LOCAL_LABEL, PIP_CONFIG_FILE=os.devnull)
    t0 = time.monotonic()
    out = must([os.path.join(venv, "bin", "python"), "-m", "pip", "wheel", src, "-v",
                "--no-build-isolation", "--no-deps", "--no-index", "-w", dist],
               BUILD_TIMEOUT_S, env=env, cwd=work)
    elapsed = time.monotonic() - t0
    print(f"wheel build took {elapsed:.1f} s for TORCH_CUDA_ARCH_LIST={ARCH_LIST}", flush=True)
    check(out.count("-gencode=") >= len(EXPECTED_ARCHES),
          "the build log does not show one -gencode per target")
    wheels = os.listdir(dist)
    check(len(wheels) == 1, f"expected one wheel, got {wheels}")
    return os.path.join(dist, wheels[0])


def check_wheel(path):
    py = subprocess.run([DEBIAN_PYTHON, "-c", "import sys; print('%d%d' % sys.version_info[:2])"],
                        capture_output=True, text=True, check=True).stdout.strip()
    tag = f"cp{py}-cp{py}-linux_x86_64"
    version = f"0.1.0+{LOCAL_LABEL}"
    name = os.path.basename(path)
    check(name == f"attn_example-{version}-{tag}.whl", f"unexpected wheel name {name}")
    with zipfile.ZipFile(path) as z:
        info = f"attn_example-{version}.dist-info"
        meta = z.read(f"{info}/METADATA").decode()
        wheel = z.read(f"{info}/WHEEL").decode()
        so = z.read("attn_example/_attn_example.so")
        record = z.read(f"{info}/RECORD").decode()
    check(re.search(rf"^Version: {re.escape(version)}$", meta, re.M), f"METADATA:\n{meta}")
    check(re.search(rf"^Tag: {tag}$", wheel, re.M), f"WHEEL:\n{wheel}")
    check(re.search(r"^Root-Is-Purelib: false$", wheel, re.M), f"WHEEL:\n{wheel}")
    check("attn_example/_attn_example.so," in record, "RECORD lacks the library")
    sections = elf_sections(so)
    needed = needed_libraries(sections)
    check(not any("cudart" in lib or "libcuda" in lib for lib in needed),
          f"the library must link the CUDA runtime statically, NEEDED: {needed}")
    entries = fatbin_entries(sections.get(".nv_fatbin", b""))
    check({sm for kind, sm in entries if kind == "elf"} == EXPECTED_SMS and
          all(kind == "elf" for kind, _ in entries),
          f"device code {entries}, expected one cubin each for {sorted(EXPECTED_SMS)}")
    print(f"wheel {name}: {len(so)} byte library, cubins {sorted(sm for _, sm in entries)}, "
          f"NEEDED {needed}")


CHECK_INSTALLED = r"""
import array, math, os, sys
import attn_example as a
assert os.path.dirname(a.__file__).startswith(sys.prefix), a.__file__
assert a.__version__ == "0.1.0+cu130", a.__version__
assert a.built_arches() == ["sm_80", "sm_90a", "sm_120a", "sm_121a"], a.built_arches()
assert a.supported_head_dims() == [32, 64, 96, 128], a.supported_head_dims()

# Hand-computed: with scale ln 3, query row 0 scores keys (ln 3, 0) -> weights (3/4, 1/4);
# row 1 scores (0, 0) -> (1/2, 1/2). Causal row 0 sees only key 0.
q = [1, 0, 0, 0]; k = [1, 0, 0, 0]; v = [4, 8, 0, 4]
def close(got, want, tol=1e-6):
    assert len(got) == len(want) and all(abs(g - w) <= tol for g, w in zip(got, want)), (got, want)
out = a.attention(q, k, v, 1, 1, 2, 2, scale=math.log(3))
assert isinstance(out, array.array) and out.typecode == "f"
close(out, [3, 7, 2, 6])
close(a.attention(q, k, v, 1, 1, 2, 2, causal=True, scale=math.log(3)), [4, 8, 2, 6])
# Default scale 1/sqrt(D), two heads, array('f') and bytes-backed buffers as inputs.
e = math.exp(1 / math.sqrt(2))
q2 = array.array("f", [1, 0, 0, 1] * 2)
out = a.attention(q2, memoryview(q2.tobytes()).cast("f"), [1, 2, 3, 4] * 2, 1, 2, 2, 2)
w = [(e + 3) / (e + 1), (2 * e + 4) / (e + 1), (1 + 3 * e) / (e + 1), (2 + 4 * e) / (e + 1)]
close(out, w * 2)
try:
    a.attention(q, k, v[:3], 1, 1, 2, 2)
    raise SystemExit("a short input was accepted")
except ValueError:
    pass
gpu = os.path.exists("/dev/nvidiactl")
if not gpu:
    assert a.cuda_device_count() == 0, a.cuda_device_count()
    try:
        a.attention([0.0] * 64, [0.0] * 64, [0.0] * 64, 1, 1, 2, 32, device="cuda")
        raise SystemExit("the CUDA path ran without a GPU")
    except a.CudaUnavailableError as err:
        print("cuda path without a GPU:", err)
print("installed package ok; gpu present:", gpu)
"""


def check_installed(wheel, src, work):
    venv = os.path.join(work, "run-venv")
    must([DEBIAN_PYTHON, "-m", "venv", venv], 120)
    python = os.path.join(venv, "bin", "python")
    env = dict(os.environ, PIP_CONFIG_FILE=os.devnull)
    must([python, "-m", "pip", "install", "--no-index", "--no-deps", wheel], 300, env=env)
    print(must([python, "-c", CHECK_INSTALLED], 120, cwd=work).strip())
    if os.path.exists("/dev/nvidiactl"):
        print("a GPU is present: the no-device checks of validate.py are skipped")
        return
    report = os.path.join(work, "report.json")
    code, out = run([python, os.path.join(src, "validate.py"), "--device", "cuda:0",
                     "--report", report, "--quick"], 120, cwd=src)
    check(code == 3, f"validate.py without a GPU exited {code}, expected 3:\n{out}")
    import json
    with open(report) as f:
        data = json.load(f)
    check(data["state"] == "no_device" and data["message"].startswith("no cuda device")
          and data["exit_code"] == 3 and data["cases"] == [], f"report: {data}")
    check(data["package"]["version"] == f"0.1.0+{LOCAL_LABEL}", "validate.py imported "
          f"{data['package']} instead of the installed wheel")
    print("validate.py without a GPU: exit 3, state no_device")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    cuda = preflight()
    src_orig = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="kernels-attn-wheel-")
    try:
        # Build a copy: an in-tree pip build writes build/ and *.egg-info next to the source.
        src = os.path.join(work, "src")
        shutil.copytree(src_orig, src, ignore=shutil.ignore_patterns(
            "build", "dist", "*.egg-info", "__pycache__", "_attn_example.so", "_build_info.py"))
        wheel = build_wheel(src, work, cuda)
        check_wheel(wheel)
        check_installed(wheel, src, work)
    except (AssertionError, subprocess.TimeoutExpired) as e:
        print(f"FAIL: {e}")
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
