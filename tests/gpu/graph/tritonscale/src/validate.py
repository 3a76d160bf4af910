#!/usr/bin/env python3
"""Validates tritonscale on a GPU: the Triton kernel against torch in float64."""
import sys

from tritonscale.testing import run


def cases(torch, device):
    import tritonscale
    out = []
    for n in (1000, 1 << 20, (1 << 24) + 7):  # ragged, aligned, large and ragged
        x = torch.randn(n, device=device)
        y = torch.randn(n, device=device)
        ref = 1.5 * x.double() + y.double()
        out.append((f"axpy_n{n}", tritonscale.axpy(1.5, x, y), ref,
                    lambda x=x, y=y: tritonscale.axpy(1.5, x, y),
                    lambda x=x, y=y: torch.add(y, x, alpha=1.5), 3 * 4 * n))
    return out


if __name__ == "__main__":
    sys.exit(run("tritonscale", cases, sys.argv[1:]))
