#!/usr/bin/env python3
"""Exact outputs of make_models.py's quantized_matmul model, in numpy.

usage: quantized_matmul_ref.py MODEL.onnx INPUT.npy OUT_DIR

The integer products are summed in int64, the rest in float32 in ONNX's
order, so y1.npy and y2.npy are what an exact runtime computes. The
reference where onnxruntime's is not: without VNNI, its u8 x s8 kernels
(vpmaddubsw) saturate pairs of products at 16 bits."""
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

f32 = np.float32
model_path, input_path, out = sys.argv[1:4]
params = {i.name: numpy_helper.to_array(i) for i in onnx.load(model_path).graph.initializer}
x = np.load(input_path).astype(f32)
wq = params["wq"].astype(np.int64)

# DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul(x scale) -> Mul(w scales)
lo, hi = min(f32(0), x.min()), max(f32(0), x.max())
scale = f32((hi - lo) / f32(255))
zero = np.clip(np.rint(-lo / scale), 0, 255)
xq = np.clip(np.rint(x / scale) + zero, 0, 255).astype(np.int64)
y1 = ((xq - int(zero)) @ wq).astype(f32) * scale * params["ws"]

# QuantizeLinear -> QLinearMatMul (requantized by a_scale * b_scale / y_scale)
# -> DequantizeLinear
a_scale, a_zero = f32(params["as"]), int(params["az"])
y_scale, y_zero = f32(params["ys"]), int(params["yz"])
xq2 = np.clip(np.rint(x / a_scale) + a_zero, 0, 255).astype(np.int64)
acc = (xq2 - a_zero) @ (wq - int(params["wz"]))
multiplier = f32(a_scale * f32(params["ws0"])) / y_scale
yq = np.clip(np.rint(acc.astype(f32) * multiplier) + y_zero, 0, 255)
y2 = (yq - y_zero).astype(f32) * y_scale

os.makedirs(out, exist_ok=True)
np.save(os.path.join(out, "y1.npy"), y1.astype(f32))
np.save(os.path.join(out, "y2.npy"), y2.astype(f32))
