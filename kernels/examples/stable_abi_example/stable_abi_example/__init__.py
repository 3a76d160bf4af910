"""stable_abi_example: torch.ops.stable_abi_example.scaled_add(a, b, alpha) = a + alpha * b
for float32 tensors on the CPU and on CUDA, from a library built against torch's stable
ABI. The library has no Python module init: loading it registers the op with torch."""
import glob
import os

import torch

_HERE = os.path.dirname(os.path.abspath(__file__))
_LIBRARIES = sorted(glob.glob(os.path.join(_HERE, "_C*.so")))
if len(_LIBRARIES) != 1:
    raise ImportError(f"stable_abi_example: expected one _C*.so in {_HERE}, found {_LIBRARIES}")
LIBRARY = _LIBRARIES[0]
torch.ops.load_library(LIBRARY)

try:
    from importlib.metadata import version as _version

    __version__ = _version("stable_abi_example")
except Exception:  # noqa: BLE001 - not installed (a source tree on sys.path)
    __version__ = "0.1.0"


def scaled_add(a, b, alpha=1.0):
    """a + alpha * b, computed by the library (CPU or CUDA by the tensors' device).

    The arguments are checked here, before the op: the library checks them again, but an
    error thrown inside a torch extension's kernel has been seen to crash the process
    instead of raising (torch 2.11.0 wheels with an extension built by Ubuntu 24.04's
    GCC 13), so callers get a ValueError from Python for what they can get wrong.
    """
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        raise TypeError("scaled_add: a and b must be tensors")
    if a.dtype != torch.float32 or b.dtype != torch.float32:
        raise ValueError(f"scaled_add: a and b must be float32, got {a.dtype} and {b.dtype}")
    if a.shape != b.shape:
        raise ValueError(f"scaled_add: a and b differ in shape: {tuple(a.shape)} vs {tuple(b.shape)}")
    if a.device != b.device:
        raise ValueError(f"scaled_add: a and b are on {a.device} and {b.device}")
    return torch.ops.stable_abi_example.scaled_add(a.contiguous(), b.contiguous(), float(alpha))
