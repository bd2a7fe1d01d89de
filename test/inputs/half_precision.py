#!/usr/bin/env python3
"""fp16 models against correctly rounded results: the error per op in ulps.

usage: half_precision.py make OUT_DIR
       half_precision.py check OUT_DIR ACTUAL_DIR

`make` writes model.onnx, a float16 model of the ops whose 16-bit sums lose
precision (a 3x3 Conv over 64 channels, K = 576; a MatMul with K = 1024;
ReduceSum, Softmax and LayerNormalization over 1024 elements), its inputs
input_<i>.npy (float16) and reference/<out>.npy: each op computed in float64
from the same float16 inputs and weights, rounded once to float16. `check`
prints, per output, the worst and mean error in float16 ulps of the
reference, and fails above MAX_ULP (onnxruntime, which computes in float32
and rounds once, is within 1 ulp).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MAX_ULP = 2
H = TensorProto.FLOAT16
rng = np.random.default_rng(16)


def half(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float16)


def build():
    x = half(1, 64, 8, 8)
    w = half(8, 64, 3, 3, scale=0.05)
    a = half(4, 1024)
    b = half(1024, 16, scale=0.03)
    gamma, beta = half(1024), half(1024)
    nodes = [helper.make_node("Conv", ["x", "w"], ["conv"], pads=[1, 1, 1, 1]),
             helper.make_node("MatMul", ["a", "b"], ["matmul"]),
             helper.make_node("ReduceSum", ["a", "axes"], ["reduce_sum"], keepdims=0),
             helper.make_node("Softmax", ["a"], ["softmax"], axis=1),
             helper.make_node("LayerNormalization", ["a", "gamma", "beta"], ["layer_norm"])]
    outputs = {"conv": [1, 8, 8, 8], "matmul": [4, 16], "reduce_sum": [4], "softmax": [4, 1024],
               "layer_norm": [4, 1024]}
    graph = helper.make_graph(
        nodes, "half",
        [helper.make_tensor_value_info("x", H, x.shape), helper.make_tensor_value_info("a", H, a.shape)],
        [helper.make_tensor_value_info(n, H, s) for n, s in outputs.items()],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b"),
         numpy_helper.from_array(np.array([1], np.int64), "axes"),
         numpy_helper.from_array(gamma, "gamma"), numpy_helper.from_array(beta, "beta")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model, [x, a], references(x, w, a, b, gamma, beta)


def references(x, w, a, b, gamma, beta):
    """Each op in float64 from the float16 values."""
    x, w, a, b = (v.astype(np.float64) for v in (x, w, a, b))
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = np.zeros((1, 8, 8, 8))
    for i in range(3):
        for j in range(3):
            conv += np.einsum("nchw,fc->nfhw", padded[:, :, i:i + 8, j:j + 8], w[:, :, i, j])
    e = np.exp(a - a.max(axis=1, keepdims=True))
    mean = a.mean(axis=1, keepdims=True)
    norm = (a - mean) / np.sqrt(((a - mean) ** 2).mean(axis=1, keepdims=True) + 1e-5)
    return {"conv": conv, "matmul": a @ b, "reduce_sum": a.sum(axis=1),
            "softmax": e / e.sum(axis=1, keepdims=True),
            "layer_norm": norm * gamma.astype(np.float64) + beta.astype(np.float64)}


def ulps(got, want):
    """|got - want| in ulps of want (float16; subnormal spacing near zero)."""
    spacing = np.spacing(np.abs(want).astype(np.float16)).astype(np.float64)
    return np.abs(got.astype(np.float64) - want.astype(np.float64)) / spacing


def main():
    mode, out = sys.argv[1], sys.argv[2]
    if mode == "make":
        model, inputs, refs = build()
        os.makedirs(os.path.join(out, "reference"), exist_ok=True)
        onnx.save(model, os.path.join(out, "model.onnx"))
        for i, v in enumerate(inputs):
            np.save(os.path.join(out, f"input_{i}.npy"), v)
        for name, v in refs.items():
            np.save(os.path.join(out, "reference", name + ".npy"), v.astype(np.float16))
        return 0
    ok = True
    for name in sorted(os.listdir(os.path.join(out, "reference"))):
        want = np.load(os.path.join(out, "reference", name))
        got = np.load(os.path.join(sys.argv[3], name))
        if got.dtype != np.float16 or got.shape != want.shape:
            print(f"MISMATCH {name}: {got.dtype} {got.shape}, expected float16 {want.shape}")
            ok = False
            continue
        err = ulps(got, want)
        good = err.max() <= MAX_ULP
        ok &= good
        print(f"{'OK' if good else 'MISMATCH'} {name[:-4]}: max_ulp={err.max():.0f} "
              f"mean_ulp={err.mean():.2f} exact={np.mean(err == 0):.0%} (bound {MAX_ULP})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
