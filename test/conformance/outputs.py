"""How a conformance test's outputs are judged: shared by run.py (here)
and scripts/device/conformance.py (on the GPU machine, which has numpy but
not onnx)."""
import os
import re

import numpy as np


def sanitize(name):
    """The file name an executable gives output `name` (runtime/src/main.c)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def mismatch(out_dir, expected, rtol, atol):
    """Why the outputs in `out_dir` differ from `expected` [(name, array)],
    or None where they all match (same shape, dtype, and values within
    rtol/atol, NaN where NaN is expected)."""
    for name, want in expected:
        got = np.load(os.path.join(out_dir, sanitize(name) + ".npy"))
        if got.shape != want.shape:
            return f"output '{name}' has shape {got.shape}, expected {want.shape}"
        if got.dtype != want.dtype:
            return f"output '{name}' is {got.dtype}, expected {want.dtype}"
        if not np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
            err = np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))
            return f"output '{name}' differs (max abs error {err:.3g})"
    return None
