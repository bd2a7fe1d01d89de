"""How a conformance test's outputs are judged: shared by run.py (here)
and scripts/device/conformance.py (on the GPU machine, which has numpy but
not onnx)."""
import os
import re

import numpy as np

# The seconds one test's executable may run, wherever it runs.
EXECUTABLE_TIMEOUT_S = 60


def sanitize(name):
    """The file name an executable gives output `name` (runtime/src/main.c)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


# One ulp of a bfloat16, relative: ONNX 1.12's Cast data truncates f32 to
# bfloat16, kiln rounds to nearest even.
BF16_RTOL = 2.0 ** -7


def bf16_values(bits):
    """bfloat16 outputs (numpy has none: their .npy holds the bits as
    uint16) as the float32 values they are, so that any NaN matches any
    NaN (CUDA's cvt writes 0x7FFF, the CPU 0x7FC0)."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def mismatch(out_dir, expected, rtol, atol, bf16=()):
    """Why the outputs in `out_dir` differ from `expected` [(name, array)],
    or None where they all match (same shape, dtype, and values within
    rtol/atol, NaN where NaN is expected). Outputs named in `bf16` are
    bfloat16 bits, compared as values within one bfloat16 ulp."""
    for name, want in expected:
        got = np.load(os.path.join(out_dir, sanitize(name) + ".npy"))
        if got.shape != want.shape:
            return f"output '{name}' has shape {got.shape}, expected {want.shape}"
        if got.dtype != want.dtype:
            return f"output '{name}' is {got.dtype}, expected {want.dtype}"
        tolerance = rtol
        if name in bf16:
            got, want, tolerance = bf16_values(got), bf16_values(want), max(rtol, BF16_RTOL)
        if not np.allclose(got, want, rtol=tolerance, atol=atol, equal_nan=True):
            got, want = got.astype(np.float64), want.astype(np.float64)
            nan_apart = np.count_nonzero(np.isnan(got) != np.isnan(want))
            if nan_apart:
                return (f"output '{name}' differs: {nan_apart} elements are NaN in one "
                        "output and a number in the other")
            err = np.nanmax(np.abs(got - want))  # the NaNs are in the same places
            return f"output '{name}' differs (max abs error {err:.3g})"
    return None
