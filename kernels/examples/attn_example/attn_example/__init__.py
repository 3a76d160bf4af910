"""attn_example: softmax(Q K^T * scale) V on float32 [B, H, N, D] tensors, CPU or CUDA.

The work happens in _attn_example.so (plain C API, loaded with ctypes; no torch, no numpy).
Inputs are flat sequences of B*H*N*D numbers in [B, H, N, D] order: lists, array('f'),
or any buffer (a float32 buffer is used without copying). Results are array('f').

    import attn_example
    out = attn_example.attention(q, k, v, B, H, N, D, causal=True, device="cuda")

The CPU path accumulates in double and is the reference; the CUDA path needs a GPU whose
architecture is in built_arches() (or reachable from its PTX).
"""
import array
import ctypes
import os

try:
    from ._build_info import BUILD_INFO as _BUILD_INFO
except ImportError:  # a source checkout that was never built
    _BUILD_INFO = {"version": "0.1.0", "arches": [], "torch_cuda_arch_list": "",
                   "nvcc_version": "", "fatbin_compress_all": False}

__version__ = _BUILD_INFO["version"]
__all__ = ["attention", "benchmark", "built_arches", "build_info", "cuda_device_count",
           "cuda_device_info", "supported_head_dims", "AttnError", "CudaUnavailableError",
           "NoKernelImageError", "__version__"]

_LIB_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_attn_example.so")
_ERR_LEN = 1024

# Status codes of csrc/attn_example.h.
OK, INVALID_ARGUMENT, NO_DEVICE, NO_KERNEL_IMAGE, CUDA_ERROR, OUT_OF_MEMORY = range(6)


class AttnError(RuntimeError):
    """A failed library call; .code is the AttnStatus, the message says what failed."""

    def __init__(self, code, message):
        super().__init__(f"{message} (status {code})")
        self.code = code


class CudaUnavailableError(AttnError):
    """No CUDA driver, no device, or a bad device index."""


class NoKernelImageError(AttnError):
    """The library holds no code this GPU can load (its arch is not in built_arches())."""


def _load():
    if not os.path.exists(_LIB_PATH):
        raise ImportError(f"attn_example: {_LIB_PATH} is missing; this is an unbuilt source "
                          "tree. Install the wheel (or build it: TORCH_CUDA_ARCH_LIST=... "
                          "pip wheel .)")
    lib = ctypes.CDLL(_LIB_PATH)
    fp, i, f, s, z = (ctypes.POINTER(ctypes.c_float), ctypes.c_int, ctypes.c_float,
                      ctypes.c_char_p, ctypes.c_size_t)
    sigs = {
        "attn_version": ([], ctypes.c_char_p),
        "attn_forward_cpu": ([fp, fp, fp, fp, i, i, i, i, i, f, i, s, z], i),
        "attn_cuda_device_count": ([ctypes.POINTER(i), s, z], i),
        "attn_cuda_device_info": ([i, s, z, ctypes.POINTER(i), ctypes.POINTER(i), s, z], i),
        "attn_cuda_supports_head_dim": ([i], i),
        "attn_forward_cuda": ([fp, fp, fp, fp, i, i, i, i, i, f, i, s, z], i),
        "attn_benchmark_cuda": ([fp, fp, fp, i, i, i, i, i, f, i, i, i, fp, s, z], i),
    }
    for name, (argtypes, restype) in sigs.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = argtypes, restype
    return lib


_lib = _load()


def _check(code, err):
    if code == OK:
        return
    message = err.value.decode("utf-8", "replace") or "unknown error"
    cls = {NO_DEVICE: CudaUnavailableError, NO_KERNEL_IMAGE: NoKernelImageError}.get(
        code, AttnError)
    raise cls(code, message)


def _floats(x, count, name):
    """A ctypes float pointer over `count` float32 values of x, plus the object keeping
    the memory alive. A C-contiguous float32 buffer is used in place; anything else is
    converted (copied) to array('f')."""
    try:
        view = memoryview(x)
    except TypeError:
        view = None
    if view is not None and view.format in ("f", "<f", "=f") and view.c_contiguous:
        if view.nbytes != 4 * count:
            raise ValueError(f"{name} holds {view.nbytes // 4} floats, expected {count}")
        holder = (ctypes.c_float * count).from_buffer_copy(view) if view.readonly else \
            (ctypes.c_float * count).from_buffer(view)
        return ctypes.cast(holder, ctypes.POINTER(ctypes.c_float)), holder
    if view is not None and view.c_contiguous and view.ndim > 1:
        x = view.cast("B").cast(view.format)  # flatten a multi-dimensional buffer
    elif hasattr(x, "ravel"):
        x = x.ravel()
    arr = array.array("f", x)
    if len(arr) != count:
        raise ValueError(f"{name} holds {len(arr)} values, expected {count} (B*H*N*D)")
    addr, _ = arr.buffer_info()
    return ctypes.cast(addr, ctypes.POINTER(ctypes.c_float)), arr


def _device_index(device):
    """None for the CPU, else the CUDA device index of "cuda", "cuda:N" or N."""
    if isinstance(device, int):
        return device
    text = str(device).strip().lower()
    if text == "cpu":
        return None
    if text == "cuda":
        return 0
    if text.startswith("cuda:") and text[5:].isdigit():
        return int(text[5:])
    raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:N', got {device!r}")


def _shape(B, H, N, D):
    dims = [int(d) for d in (B, H, N, D)]
    if min(dims) <= 0:
        raise ValueError(f"B, H, N, D must be positive, got {dims}")
    return dims, dims[0] * dims[1] * dims[2] * dims[3]


def attention(q, k, v, B, H, N, D, causal=False, device="cpu", scale=None, threads=0):
    """softmax(q k^T * scale) v for [B, H, N, D] inputs; returns array('f') of B*H*N*D.

    scale defaults to 1/sqrt(D). causal hides key j from query i when j > i. device is
    "cpu" (double-accumulation reference, `threads` workers, 0 = all cores), "cuda" or
    "cuda:N". Raises ValueError on bad shapes, CudaUnavailableError without a usable GPU,
    NoKernelImageError when this build has no code for the GPU, AttnError otherwise.
    """
    (B, H, N, D), count = _shape(B, H, N, D)
    qp, qh = _floats(q, count, "q")
    kp, kh = _floats(k, count, "k")
    vp, vh = _floats(v, count, "v")
    out = array.array("f", bytes(4 * count))
    op = ctypes.cast(out.buffer_info()[0], ctypes.POINTER(ctypes.c_float))
    err = ctypes.create_string_buffer(_ERR_LEN)
    s = float(scale) if scale else 0.0
    index = _device_index(device)
    if index is None:
        code = _lib.attn_forward_cpu(qp, kp, vp, op, B, H, N, D, int(bool(causal)), s,
                                     int(threads), err, _ERR_LEN)
    else:
        code = _lib.attn_forward_cuda(qp, kp, vp, op, B, H, N, D, int(bool(causal)), s,
                                      index, err, _ERR_LEN)
    del qh, kh, vh  # the buffers must outlive the call above
    _check(code, err)
    return out


def benchmark(q, k, v, B, H, N, D, causal=False, device="cuda", scale=None, warmup=5,
              iters=20):
    """Kernel-only times in milliseconds of `iters` launches (CUDA events), after `warmup`
    untimed launches, on inputs copied to the GPU once. Raises like attention()."""
    (B, H, N, D), count = _shape(B, H, N, D)
    index = _device_index(device)
    if index is None:
        raise ValueError("benchmark() times the CUDA kernel; device must be cuda[:N]")
    qp, qh = _floats(q, count, "q")
    kp, kh = _floats(k, count, "k")
    vp, vh = _floats(v, count, "v")
    times = (ctypes.c_float * int(iters))()
    err = ctypes.create_string_buffer(_ERR_LEN)
    code = _lib.attn_benchmark_cuda(qp, kp, vp, B, H, N, D, int(bool(causal)),
                                    float(scale) if scale else 0.0, index, int(warmup),
                                    int(iters), times, err, _ERR_LEN)
    del qh, kh, vh
    _check(code, err)
    return list(times)


def cuda_device_count():
    """Number of usable CUDA devices; 0 without a driver or device (never raises)."""
    count = ctypes.c_int(0)
    err = ctypes.create_string_buffer(_ERR_LEN)
    if _lib.attn_cuda_device_count(ctypes.byref(count), err, _ERR_LEN) != OK:
        return 0
    return count.value


def cuda_device_info(device="cuda:0"):
    """{"name", "major", "minor", "compute_capability": "9.0"} of a CUDA device."""
    index = _device_index(device)
    if index is None:
        raise ValueError("cuda_device_info() needs a CUDA device")
    name = ctypes.create_string_buffer(256)
    major, minor = ctypes.c_int(0), ctypes.c_int(0)
    err = ctypes.create_string_buffer(_ERR_LEN)
    _check(_lib.attn_cuda_device_info(index, name, 256, ctypes.byref(major),
                                      ctypes.byref(minor), err, _ERR_LEN), err)
    return {"name": name.value.decode("utf-8", "replace"), "major": major.value,
            "minor": minor.value, "compute_capability": f"{major.value}.{minor.value}"}


def supported_head_dims():
    """Head dimensions D the CUDA kernel accepts (the CPU path takes any D)."""
    return [d for d in range(1, 257) if _lib.attn_cuda_supports_head_dim(d)]


def built_arches():
    """GPU codes this build holds, e.g. ["sm_90a", "sm_120a", "compute_120"]."""
    return list(_BUILD_INFO["arches"])


def build_info():
    """How this build was made: version, arches, TORCH_CUDA_ARCH_LIST, nvcc version."""
    return dict(_BUILD_INFO)
