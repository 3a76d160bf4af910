"""The Triton kernel behind tritonscale.axpy (compiled by Triton for the device at first
use)."""
import torch
import triton
import triton.language as tl

from tritonscale import BLOCK


@triton.jit
def _axpy_kernel(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + y, mask=mask)


def axpy(alpha, x, y):
    assert x.is_cuda and x.shape == y.shape and x.dtype == y.dtype
    x, y = x.contiguous(), y.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    _axpy_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, alpha, n, BLOCK=BLOCK)
    return out
