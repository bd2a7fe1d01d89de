#!/usr/bin/env python3
"""Attention models written out in ONNX ops, with float64 reference outputs.

usage: attention.py KIND OUT_DIR [--f16-operands | --f16-model]

Writes OUT_DIR/model.onnx, its inputs as OUT_DIR/<input>.npy (pass them in
the order of `inputs.txt`) and OUT_DIR/reference/out.npy, computed in
float64 with a materialized softmax; with --f16-operands, from Q, K and V
rounded to float16, as kernels whose matmuls take f16 operands see them
(--precision=f16 on the tensor cores); with --f16-model, the model itself
is float16 (its inputs, constants and output, as exporters write half
models), the reference computed in float64 from its float16 values and
rounded to float16. Every model computes
  out = Softmax(scale(Q @ K^T) [+ mask]) @ V
with K transposed by a Transpose node, as exported transformers do (but
mma-kt, whose input is K^T):

  long-L     1 x 2 heads x L tokens x 64, scaled by Mul(0.125), plus a
             padding mask input [1, 1, 1, L] that hides the last 96 keys
             (-inf); L = 1024 or 4096 (kind long-1024, long-4096).
  banded     3 heads x 320 tokens x 32, Div by sqrt(32), plus a constant
             [320, 320] mask that hides the keys before each query (-inf):
             the first key blocks of late rows are masked out entirely.
  wide       2 heads, 100 queries x 80 keys, heads of 128 and values of 128.
  mid        2 heads, 37 queries x 98 keys, heads of 96 and values of 96,
             a mask input per head and query [2, 37, 98] (-inf at random).
  too-wide   the same as wide with heads of 160.
  odd        batch [2, 3], 50 queries x 100 keys, head size 24, values 40,
             no scale, no mask: blocks that are not whole vectors.
  mma        2 heads, 96 queries x 80 keys, heads of 16 and values of 24, a
             mask input per head and query [2, 96, 80] (-inf at random):
             on the tensor cores, 2 warps a workgroup, 16 keys a step.
  mma-kt     2 heads, 64 queries x 48 keys, heads of 32 and values of 16,
             scaled, no mask, K^T an input (no Transpose): on the tensor
             cores, the keys staged from K^T.
  mma-narrow 48 queries x 64 keys, heads of 48 and values of 8, scaled, no
             mask: on the tensor cores, 1 warp a workgroup.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def reference(q, k, v, scale, mask):
    s = (q.astype(np.float64) @ np.swapaxes(k.astype(np.float64), -1, -2)) * scale
    if mask is not None:
        s = s + mask.astype(np.float64)
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=-1, keepdims=True)
    return (p @ v.astype(np.float64)).astype(np.float32)


def build(out, batch, lq, lk, d, dv, scale_op, mask, mask_is_input, seed=0, f16_operands=False,
          keys_transposed=False, f16_model=False):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal(batch + [lq, d]).astype(np.float32)
    k = rng.standard_normal(batch + [lk, d]).astype(np.float32)
    v = rng.standard_normal(batch + [lk, dv]).astype(np.float32)
    dtype = np.float16 if f16_model else np.float32
    if f16_model:
        q, k, v = q.astype(dtype), k.astype(dtype), v.astype(dtype)
        mask = None if mask is None else mask.astype(dtype)
    rank = len(batch) + 2
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    if keys_transposed:  # the input is K^T
        nodes = [helper.make_node("MatMul", ["q", "kt"], ["scores"], name="qk")]
        inputs = {"q": q, "kt": np.ascontiguousarray(np.swapaxes(k, -1, -2)), "v": v}
    else:
        nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=perm, name="key_t"),
                 helper.make_node("MatMul", ["q", "kt"], ["scores"], name="qk")]
        inputs = {"q": q, "k": k, "v": v}
    inits = []
    scale, s = 1.0, "scores"
    if scale_op:
        op, c = scale_op
        c = dtype(c)
        scale = float(c) if op == "Mul" else 1.0 / float(c)
        inits.append(numpy_helper.from_array(np.array(c, dtype), "scale"))
        nodes.append(helper.make_node(op, [s, "scale"], ["scaled"], name="scale"))
        s = "scaled"
    if mask is not None:
        if mask_is_input:
            inputs["mask"] = mask
        else:
            inits.append(numpy_helper.from_array(mask, "mask"))
        nodes.append(helper.make_node("Add", [s, "mask"], ["masked"], name="mask"))
        s = "masked"
    nodes += [helper.make_node("Softmax", [s], ["p"], axis=-1, name="softmax"),
              helper.make_node("MatMul", ["p", "v"], ["out"], name="pv")]
    elem = TensorProto.FLOAT16 if f16_model else TensorProto.FLOAT
    info = lambda name, a: helper.make_tensor_value_info(name, elem, list(a.shape))
    rounded = (lambda a: a.astype(np.float16)) if f16_operands else (lambda a: a)
    want = reference(rounded(q), rounded(k), rounded(v), scale, mask).astype(dtype)
    graph = helper.make_graph(nodes, "attention", [info(n, a) for n, a in inputs.items()],
                              [info("out", want)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    os.makedirs(os.path.join(out, "reference"), exist_ok=True)
    onnx.save(model, os.path.join(out, "model.onnx"))
    for name, a in inputs.items():
        np.save(os.path.join(out, f"{name}.npy"), a)
    with open(os.path.join(out, "inputs.txt"), "w") as f:
        f.write(" ".join(os.path.join(out, f"{n}.npy") for n in inputs) + "\n")
    np.save(os.path.join(out, "reference", "out.npy"), want)


def main():
    kind, out = sys.argv[1], sys.argv[2]
    options = sys.argv[3:]
    if options not in ([], ["--f16-operands"], ["--f16-model"]):
        sys.exit(f"attention.py: unknown options {options}")
    f16 = {"f16_operands": options == ["--f16-operands"], "f16_model": options == ["--f16-model"]}
    if kind.startswith("long-"):
        length = int(kind[len("long-"):])
        mask = np.zeros([1, 1, 1, length], np.float32)
        mask[..., -96:] = -np.inf
        build(out, [1, 2], length, length, 64, 64, ("Mul", 0.125), mask, True, **f16)
    elif kind == "banded":
        length = 320
        rows, cols = np.indices([length, length])
        mask = np.where(cols < rows, -np.inf, 0).astype(np.float32)
        build(out, [3], length, length, 32, 32, ("Div", np.sqrt(32)), mask, False, **f16)
    elif kind == "odd":
        build(out, [2, 3], 50, 100, 24, 40, None, None, False, **f16)
    elif kind == "wide":
        build(out, [2], 100, 80, 128, 128, ("Mul", 0.0884), None, False, **f16)
    elif kind == "mid":
        mask = np.where(np.random.default_rng(1).random([2, 37, 98]) < 0.3, -np.inf, 0)
        build(out, [2], 37, 98, 96, 96, ("Mul", 0.102), mask.astype(np.float32), True, **f16)
    elif kind == "mma":
        mask = np.where(np.random.default_rng(2).random([2, 96, 80]) < 0.3, -np.inf, 0)
        build(out, [2], 96, 80, 16, 24, ("Mul", 0.25), mask.astype(np.float32), True, **f16)
    elif kind == "mma-kt":
        build(out, [2], 64, 48, 32, 16, ("Mul", 0.177), None, False, keys_transposed=True, **f16)
    elif kind == "mma-narrow":
        build(out, [1], 48, 64, 48, 8, ("Mul", 0.144), None, False, **f16)
    elif kind == "too-wide":
        build(out, [2], 100, 80, 160, 128, ("Mul", 0.0791), None, False, **f16)
    else:
        sys.exit(f"attention.py: unknown kind '{kind}'")


if __name__ == "__main__":
    main()
