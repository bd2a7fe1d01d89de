#!/usr/bin/env python3
"""The accuracy of compiled Exp, Erf and Tanh against float64 references.

usage: math_accuracy.py make OUT_DIR
       math_accuracy.py check OUT_DIR ACTUAL_DIR

`make` writes model.onnx (x -> Exp, Erf, Tanh), input_0.npy (a dense grid
over [-100, 100], finer near 0, plus special values) and reference/<out>.npy
(float64 results rounded to float32). `check` prints, per function, the worst
error in units in the last place (ulp) of the reference and the worst absolute
error, and fails when they exceed the bounds below, or when an infinite or
NaN result differs (a result below the smallest normal float32 may be any
subnormal or zero: the approximations flush them; the sign of zero is not
checked).
"""
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

FUNCTIONS = {"exp": np.exp, "erf": np.vectorize(math.erf), "tanh": np.tanh}
# Bounds in ulps of the reference, where it is a normal float32 (kiln's
# polynomials measured 4-5 ulp on 25 million random inputs; onnxruntime's
# exp and erf 1, its tanh 4), and absolute bounds for erf and tanh.
MAX_ULP = {"exp": 6, "erf": 6, "tanh": 6}
MAX_ABS = {"exp": None, "erf": 4e-7, "tanh": 4e-7}
# Overflow and underflow edges, infinities, NaN, tiny arguments.
SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 88.7, 89.0, -87.3, -103.0, -104.0,
                    1e-30, -1e-30, 1e-45, 9.0, -9.0, 20.0, -20.0], dtype=np.float32)


def inputs():
    grid = np.linspace(-100, 100, 200001, dtype=np.float64)
    fine = np.linspace(-4, 4, 400001, dtype=np.float64)
    return np.concatenate([grid, fine, SPECIAL]).astype(np.float32)


def make(out):
    x = inputs()
    nodes = [helper.make_node(op, ["x"], [name], name=name)
             for op, name in (("Exp", "exp"), ("Erf", "erf"), ("Tanh", "tanh"))]
    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [x.size])
    graph = helper.make_graph(nodes, "math", [vi("x")], [vi(n) for n in FUNCTIONS])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    os.makedirs(os.path.join(out, "reference"), exist_ok=True)
    onnx.save(model, os.path.join(out, "model.onnx"))
    np.save(os.path.join(out, "input_0.npy"), x)
    with np.errstate(over="ignore"):
        for name, f in FUNCTIONS.items():
            np.save(os.path.join(out, "reference", f"{name}.npy"),
                    f(x.astype(np.float64)).astype(np.float32))


def check(out, actual):
    ok = True
    tiny = np.finfo(np.float32).tiny
    for name in FUNCTIONS:
        want = np.load(os.path.join(out, "reference", f"{name}.npy"))
        got = np.load(os.path.join(actual, f"{name}.npy"))
        normal = np.isfinite(want) & (np.abs(want) >= tiny)
        ulp = np.abs(got[normal].astype(np.float64) - want[normal]) / np.spacing(np.abs(want[normal]))
        worst_ulp = float(ulp.max())
        worst_abs = float(np.abs(got[normal].astype(np.float64) - want[normal]).max())
        # Infinities and NaN exactly; subnormal results may flush to zero.
        bad = ~normal & ~((got == want) | (np.isnan(got) & np.isnan(want)) |
                          ((np.abs(want) < tiny) & (np.abs(got) < tiny)))
        close = (not bad.any() and worst_ulp <= MAX_ULP[name] and
                 (MAX_ABS[name] is None or worst_abs <= MAX_ABS[name]))
        print(f"{'OK' if close else 'MISMATCH'} {name}: max_ulp={worst_ulp:.0f} "
              f"(bound {MAX_ULP[name]})" +
              (f" max_abs_err={worst_abs:.3g} (bound {MAX_ABS[name]:g})" if MAX_ABS[name] else ""))
        x = np.load(os.path.join(out, "input_0.npy"))
        for i in np.flatnonzero(bad)[:10]:
            print(f"  {name}({x[i]!r}) = {got[i]!r}, expected {want[i]!r}")
        ok &= close
    return ok


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        sys.exit(0 if check(sys.argv[2], sys.argv[3]) else 1)
