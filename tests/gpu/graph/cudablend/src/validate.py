#!/usr/bin/env python3
"""Validates cudablend on a GPU: the CUDA kernel against torch in float64 and against
tritonscale's Triton kernel (the wheel it was built against, installed for validation)."""
import sys

from tritonscale.testing import run


def cases(torch, device):
    import cudablend
    import tritonscale
    out = []
    for n in (1000, (1 << 24) + 7):
        x = torch.randn(n, device=device)
        y = torch.randn(n, device=device)
        ref = 1.5 * x.double() + y.double()
        out.append((f"cuda_n{n}", cudablend.axpy(1.5, x, y), ref,
                    lambda x=x, y=y: cudablend.axpy(1.5, x, y),
                    lambda x=x, y=y: torch.add(y, x, alpha=1.5), 3 * 4 * n))
        out.append((f"cuda_vs_triton_n{n}", cudablend.axpy(1.5, x, y),
                    tritonscale.axpy(1.5, x, y), lambda x=x, y=y: cudablend.axpy(1.5, x, y),
                    lambda x=x, y=y: tritonscale.axpy(1.5, x, y), 3 * 4 * n))
    return out


if __name__ == "__main__":
    sys.exit(run("cudablend", cases, sys.argv[1:]))
