"""alpha * x + y by a CUDA kernel in libblend.so, on torch tensors (through ctypes)."""
import ctypes
import os

import tritonscale  # the runtime needs the same tritonscale its build read

_lib = ctypes.CDLL(os.path.join(os.path.dirname(os.path.abspath(__file__)), "libblend.so"))
_lib.cudablend_axpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                ctypes.c_float, ctypes.c_long]
BLOCK = _lib.cudablend_block()
assert BLOCK == tritonscale.BLOCK, f"built with block {BLOCK}, tritonscale has {tritonscale.BLOCK}"


def axpy(alpha, x, y):
    import torch
    assert x.is_cuda and x.dtype == torch.float32 and x.shape == y.shape
    x, y = x.contiguous(), y.contiguous()
    out = torch.empty_like(x)
    err = _lib.cudablend_axpy(x.data_ptr(), y.data_ptr(), out.data_ptr(), alpha, x.numel())
    if err:
        raise RuntimeError(f"cudablend kernel launch failed: CUDA error {err}")
    torch.cuda.synchronize(x.device)
    return out
