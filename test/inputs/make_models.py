#!/usr/bin/env python3
"""Writes the small ONNX test models (and their inputs) used by lit tests.

usage: make_models.py NAME OUT_DIR
NAME is one of the builders below; OUT_DIR receives model.onnx and
input_<i>.npy files. Weights come from a fixed seed, so runs are repeatable.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(1234)


def weight(name, *shape, scale=0.1):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def const(name, values, dtype=np.int64):
    return numpy_helper.from_array(np.array(values, dtype=dtype), name)


def model(nodes, inputs, outputs, inits, opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def tensor(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def relu():
    return model([helper.make_node("Relu", ["x"], ["y"], name="act")],
                 [tensor("x", [2, 3])], [tensor("y", [2, 3])], []), [(2, 3)]


def unsupported():
    return model([helper.make_node("Bernoulli", ["x"], ["y"], name="the_coin")],
                 [tensor("x", [6])], [tensor("y", [6])], []), [(6,)]


def float_mod():
    return model([helper.make_node("Mod", ["x", "x"], ["y"], name="the_mod")],
                 [tensor("x", [2, 3])], [tensor("y", [2, 3])], []), [(2, 3)]


def dynamic():
    """A dynamic batch reaching an op (Hardmax) that needs static shapes."""
    return model([helper.make_node("Relu", ["x"], ["r"], name="act"),
                  helper.make_node("Hardmax", ["r"], ["y"], name="the_hardmax")],
                 [tensor("x", ["N", 3])], [tensor("y", ["N", 3])], []), [(4, 3)]


def mlp():
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h1"], name="fc1", transB=1),
             helper.make_node("Relu", ["h1"], ["a1"], name="relu1"),
             helper.make_node("Gemm", ["a1", "w2", "b2"], ["h2"], name="fc2"),
             helper.make_node("Relu", ["h2"], ["a2"], name="relu2"),
             helper.make_node("Gemm", ["a2", "w3", "b3"], ["logits"], name="fc3", alpha=0.5, beta=2.0)]
    inits = [weight("w1", 64, 32), weight("b1", 64), weight("w2", 64, 48), weight("b2", 48),
             weight("w3", 48, 10), weight("b3", 10)]
    return model(nodes, [tensor("x", [4, 32])], [tensor("logits", [4, 10])], inits), [(4, 32)]


def linear():
    """x[128, 256] @ W[256, 128] + b, Relu: a layer with rows enough for the
    tensor cores' 16-row tiles (--precision=bf16 on CUDA: kiln-cuda-mma-sync),
    then a bias and a Relu."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="matmul"),
             helper.make_node("Add", ["h", "b"], ["z"], name="bias"),
             helper.make_node("Relu", ["z"], ["y"], name="relu")]
    return model(nodes, [tensor("x", [128, 256])], [tensor("y", [128, 128])],
                 [weight("w", 256, 128), weight("b", 128)]), [(128, 256)]


def conv_layer():
    """A 3x3 convolution of 32 to 64 channels on 16x16, with a bias: an
    im2col copy and a matmul on GPUs (the tensor cores with
    --precision=tf32)."""
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", pads=[1, 1, 1, 1])]
    return model(nodes, [tensor("x", [1, 32, 16, 16])], [tensor("y", [1, 64, 16, 16])],
                 [weight("w", 64, 32, 3, 3), weight("b", 64)]), [(1, 32, 16, 16)]


def conv_7x7():
    """A 3x3 convolution of 256 to 256 channels on 8 images of 7x7, then
    Relu (resnet18's last stage, narrower): on GPUs its matmul's 49
    columns are a tile of 32 and a partial one of 17, whose threads have
    tiles of dynamic width."""
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    return model(nodes, [tensor("x", [8, 256, 7, 7])], [tensor("y", [8, 256, 7, 7])],
                 [weight("w", 256, 256, 3, 3, scale=0.02), weight("b", 256)]), [(8, 256, 7, 7)]


def split_k():
    """resnet18's last convolution at batch 1, narrower (256 to 256
    channels on 7x7, bias, Relu), then a classifier of its 12544 features
    to 64: on GPUs both are matmuls of few workgroups and long reductions,
    which --split-k sums in slices."""
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Flatten", ["r"], ["f"], name="flatten"),
             helper.make_node("MatMul", ["f", "fc_w"], ["m"], name="fc"),
             helper.make_node("Add", ["m", "fc_b"], ["y"], name="fc_bias")]
    return model(nodes, [tensor("x", [1, 256, 7, 7])], [tensor("y", [1, 64])],
                 [weight("w", 256, 256, 3, 3, scale=0.02), weight("b", 256),
                  weight("fc_w", 12544, 64, scale=0.01), weight("fc_b", 64)]), [(1, 256, 7, 7)]


def conv_batch():
    """A padded 3x3 convolution of 16 to 2 channels on 8 images of 128x128,
    then Relu: the batch's receptive fields would be 18.9M elements; the
    GPU targets compute them from the input, read through its padding, as
    the matmul stages them (75 MFLOP in all: quick on lavapipe)."""
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    return model(nodes, [tensor("x", [8, 16, 128, 128])], [tensor("y", [8, 2, 128, 128])],
                 [weight("w", 2, 16, 3, 3), weight("b", 2)]), [(8, 16, 128, 128)]


def residual_block():
    """resnet's identity block on 16 channels of 14x14: Conv/Relu/Conv, the
    block's input added back, Relu. Both convolutions' outputs have the
    same shape, so before bufferization their results share a tensor.empty
    (CSE): the second matmul then wrote its results in place over its own
    input, which it reads as it computes its fields (kiln-gpu-compute-on-
    read), unless each use has its own (kiln-gpu-unshare-empty-tensors)."""
    n = helper.make_node
    nodes = [n("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             n("Relu", ["c1"], ["r1"], name="relu1"),
             n("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             n("Add", ["c2", "x"], ["a"], name="add"),
             n("Relu", ["a"], ["y"], name="relu2")]
    return model(nodes, [tensor("x", [1, 16, 14, 14])], [tensor("y", [1, 16, 14, 14])],
                 [weight("w1", 16, 16, 3, 3, scale=0.2), weight("b1", 16),
                  weight("w2", 16, 16, 3, 3, scale=0.2), weight("b2", 16)]), [(1, 16, 14, 14)]


def pooled_conv():
    """resnet's stem tail: MaxPool, then a 3x3 Conv that alone reads it. With
    --precision=f16 on a GPU the pool's result is rounded where the fields
    are computed (kiln-gpu-round-on-read); the rounding, the pool's sole
    elementwise user, was made the pool's epilogue and its kernel, and
    kiln-gpu-compute-on-read then failed: "its output is not a whole buffer
    of its own"."""
    n = helper.make_node
    nodes = [n("MaxPool", ["x"], ["p"], name="pool", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
               strides=[2, 2]),
             n("Conv", ["p", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])]
    return model(nodes, [tensor("x", [1, 16, 28, 28])], [tensor("y", [1, 16, 14, 14])],
                 [weight("w", 16, 16, 3, 3, scale=0.2)]), [(1, 16, 28, 28)]


def conv_stage1():
    """resnet18's first-stage 3x3 convolution (64 to 64 channels, 56x56) on
    16 images, then Relu: receptive fields of 29M elements, which the GPU
    targets never write out (one matmul computes them as it stages them)."""
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    return model(nodes, [tensor("x", [16, 64, 56, 56])], [tensor("y", [16, 64, 56, 56])],
                 [weight("w", 64, 64, 3, 3, scale=0.05), weight("b", 64)]), [(16, 64, 56, 56)]


def matmul(n=4096):
    """A 4096^3 f32 matmul of two inputs (no weights: the GPU benchmark's
    executable stays small)."""
    nodes = [helper.make_node("MatMul", ["a", "b"], ["c"], name="matmul")]
    return model(nodes, [tensor("a", [n, n]), tensor("b", [n, n])], [tensor("c", [n, n])], []), \
        [(n, n), (n, n)]


def matmul_wide():
    """2048x64 @ 64x1024: enough GPU workgroups for 8x8 results per thread
    (128x64 a workgroup: 256), in 268 MFLOP."""
    nodes = [helper.make_node("MatMul", ["a", "b"], ["c"], name="matmul")]
    return model(nodes, [tensor("a", [2048, 64]), tensor("b", [64, 1024])],
                 [tensor("c", [2048, 1024])], []), [(2048, 64), (64, 1024)]


def matmul_small():
    """The benchmark's matmul at 256^3, to check its numerics."""
    return matmul(256)


def matmul_1024():
    """A 1024^3 matmul: enough GPU workgroups for 4x4 results per thread."""
    return matmul(1024)


def half_matmul(m, k, n, elem):
    """An m x k by k x n matmul of two 16-bit inputs (TensorProto `elem`):
    CUDA sums it in f32 on the tensor cores."""
    nodes = [helper.make_node("MatMul", ["a", "b"], ["c"], name="matmul")]
    io = [helper.make_tensor_value_info(x, elem, shape)
          for x, shape in zip("abc", [[m, k], [k, n], [m, n]])]
    return model(nodes, io[:2], io[2:], [])


def matmul_f16():
    """A 256^3 f16 matmul of two inputs, to check the tensor cores' numerics."""
    return half_matmul(256, 256, 256, TensorProto.FLOAT16), [(256, 256), (256, 256)], np.float16


def matmul_f16_long():
    """32x4096 @ 4096x64 in f16: 128 chunks of k, the reduction long enough
    that per-sum loops in kiln-spirv-emulate-warp-matrices ran past
    lavapipe's cap on a shader's loop iterations."""
    return half_matmul(32, 4096, 64, TensorProto.FLOAT16), [(32, 4096), (4096, 64)], np.float16


def matmul_f16_wide():
    """2048x256 @ 256x1024 in f16: enough GPU workgroups for 8x8 results per
    thread (256 of 128x64), so CUDA's tensor cores take it in warps of 32x64
    with the sums in the staged chunks' place; 8 chunks of k, more than are
    in flight at once. To check those numerics."""
    return (half_matmul(2048, 256, 1024, TensorProto.FLOAT16), [(2048, 256), (256, 1024)],
            np.float16)


def matmul_f16_dynamic():
    """A dynamic batch of 128x64 @ 64x64 f16 matmuls: whole GPU tiles (CUDA
    copies their chunks asynchronously) in buffers of dynamic shape."""
    nodes = [helper.make_node("MatMul", ["a", "b"], ["c"], name="matmul")]
    io = [helper.make_tensor_value_info(x, TensorProto.FLOAT16, ["batch", rows, 64])
          for x, rows in zip("abc", [128, 64, 128])]
    return model(nodes, io[:2], io[2:], []), [(3, 128, 64), (3, 64, 64)], np.float16


def gemm_f16():
    """An f16 Linear layer as exporters write it: Gemm(x[128, 256],
    W[128, 256], b[128], transB=1) then Relu, all in f16. CUDA keeps the
    Gemm's operands f16 for the tensor cores and sums in f32."""
    half = lambda t: numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name)
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["z"], name="fc", transB=1),
             helper.make_node("Relu", ["z"], ["y"], name="relu")]
    io = [helper.make_tensor_value_info(x, TensorProto.FLOAT16, shape)
          for x, shape in [("x", [128, 256]), ("y", [128, 128])]]
    return (model(nodes, io[:1], io[1:], [half(weight("w", 128, 256)), half(weight("b", 128))]),
            [(128, 256)], np.float16)


def gemm_f16_2of4():
    """gemm_f16 with its weights pruned 2:4 along k in the file (as NVIDIA's
    ASP leaves a Linear's weight: of every 4 consecutive inputs of an
    output, the 2 largest kept), for CUDA's mma.sp (--cuda-mma-sp)."""
    m, shapes, dtype = gemm_f16()
    w = next(t for t in m.graph.initializer if t.name == "w")
    values = numpy_helper.to_array(w).reshape(128, 64, 4).copy()
    smallest = np.argsort(np.abs(values), axis=-1)[..., :2]
    np.put_along_axis(values, smallest, 0, axis=-1)
    w.CopyFrom(numpy_helper.from_array(values.reshape(128, 256), "w"))
    return m, shapes, dtype


def gemm_2of4(n):
    """An n x n bf16 input times a constant n x n bf16 weight pruned 2:4
    along k, for the GPU benchmark's mma.sp (--cuda-mma-sp) against
    mma.sync on the same weights: each group of 4 steps of a column keeps
    one of the 6 pairs of positions, by a rule (the tensor cores' speed
    does not depend on which), its values 1/16 (the executables pack
    small)."""
    pairs = np.array([[1, 1, 0, 0], [1, 0, 1, 0], [1, 0, 0, 1], [0, 1, 1, 0], [0, 1, 0, 1],
                      [0, 0, 1, 1]], np.float32) / 16
    group, column = np.meshgrid(np.arange(n // 4), np.arange(n), indexing="ij")
    w = pairs[(7 * group + column) % 6].transpose(0, 2, 1).reshape(n, n)  # groups along k
    bits = (w.view(np.uint32) >> 16).astype(np.uint16)  # exact in bf16
    weight = helper.make_tensor("w", TensorProto.BFLOAT16, [n, n], bits.tobytes(), raw=True)
    io = [helper.make_tensor_value_info(x, TensorProto.BFLOAT16, [n, n]) for x in "xy"]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul")]
    return model(nodes, io[:1], io[1:], [weight])


def gemm_benchmarks():
    """The GPU benchmark's 16-bit GEMMs (no inputs: random at run time)."""
    dense = {f"gemm_{name}_{n}": (lambda n=n, elem=elem: (half_matmul(n, n, n, elem), []))
             for name, elem in [("bf16", TensorProto.BFLOAT16), ("f16", TensorProto.FLOAT16)]
             for n in (4096, 8192)}
    return dense | {"gemm_bf16_2of4_4096": lambda: (gemm_2of4(4096), [])}


def amx_shapes():
    """Matmul shapes around AMX's 16-row, 64-byte tiles: 56 rows (a block of
    32, one of 16, then one of 16 overlapping it), K of 64 and 96 (one and
    1.5 int8 tile widths, two and three bf16 ones), N of 96 and 48 (pairs of
    16-column tiles, then single ones)."""
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h1"], name="mm1"),
             helper.make_node("Relu", ["h1"], ["a1"], name="relu1"),
             helper.make_node("MatMul", ["a1", "w2"], ["h2"], name="mm2"),
             helper.make_node("Gemm", ["x2", "w3", "b3"], ["y"], name="fc3", transB=1)]
    inits = [weight("w1", 64, 96), weight("w2", 96, 48), weight("w3", 48, 128),
             weight("b3", 48)]
    return model(nodes, [tensor("x", [1, 56, 64]), tensor("x2", [20, 128])],
                 [tensor("h2", [1, 56, 48]), tensor("y", [20, 48])], inits), [(1, 56, 64), (20, 128)]


def qdq_weight(name, shape, axis):
    """A DequantizeLinear of int8 weights quantized symmetrically per `axis`
    (what quantization tools emit): the node and its three initializers."""
    w = rng.standard_normal(shape).astype(np.float32) * 0.2
    other = tuple(d for d in range(len(shape)) if d != axis)
    scale = (np.abs(w).max(axis=other) / 127).astype(np.float32)
    q = np.round(w / np.expand_dims(scale, other)).astype(np.int8)
    inits = [numpy_helper.from_array(q, name + "_q"), numpy_helper.from_array(scale, name + "_scale"),
             numpy_helper.from_array(np.zeros(shape[axis], np.int8), name + "_zp")]
    node = helper.make_node("DequantizeLinear", [name + "_q", name + "_scale", name + "_zp"], [name],
                            name=name + "_dq", axis=axis)
    return node, inits


def qdq_pair(x, name, scale, zero_point, dtype):
    """QuantizeLinear -> DequantizeLinear of activation `x` (per tensor)."""
    inits = [numpy_helper.from_array(np.array(scale, np.float32), name + "_scale"),
             numpy_helper.from_array(np.array(zero_point, dtype), name + "_zp")]
    nodes = [helper.make_node("QuantizeLinear", [x, name + "_scale", name + "_zp"], [name + "_q"],
                              name=name + "_quantize"),
             helper.make_node("DequantizeLinear", [name + "_q", name + "_scale", name + "_zp"],
                              [name], name=name + "_dequantize")]
    return nodes, inits


def quant_linear():
    """QuantizeLinear -> DequantizeLinear with constant parameters: uint8 per
    tensor, int8 per axis (axis 1, nonzero zero points), uint16 per tensor;
    scales small enough that some values saturate."""
    typed = lambda name, t, shape: helper.make_tensor_value_info(name, t, shape)
    inits = [const("u8_scale", 0.01, np.float32), const("u8_zp", 100, np.uint8),
             const("i8_scale", [0.02, 0.005, 0.04], np.float32), const("i8_zp", [0, -7, 20], np.int8),
             const("u16_scale", 0.0001, np.float32), const("u16_zp", 30000, np.uint16)]
    nodes, outputs = [], []
    for kind, t, axis in [("u8", TensorProto.UINT8, 1), ("i8", TensorProto.INT8, 1),
                          ("u16", TensorProto.UINT16, 1)]:
        params = [kind + "_scale", kind + "_zp"]
        nodes += [helper.make_node("QuantizeLinear", ["x"] + params, ["q_" + kind], axis=axis,
                                   name="quantize_" + kind),
                  helper.make_node("DequantizeLinear", ["q_" + kind] + params, ["y_" + kind],
                                   axis=axis, name="dequantize_" + kind)]
        outputs += [typed("q_" + kind, t, [2, 3, 4, 5]), tensor("y_" + kind, [2, 3, 4, 5])]
    return model(nodes, [tensor("x", [2, 3, 4, 5])], outputs, inits, opset=21), [(2, 3, 4, 5)]


def qdq_cnn():
    """A QDQ model, as quantization tools write them: each Conv/MatMul reads
    DequantizeLinear(QuantizeLinear(activation)) and int8 weights through
    DequantizeLinear (per output channel). Activations are uint8, except
    the MatMul's, which are int8 with a nonzero zero point."""
    nodes, inits = [], []
    for part in [qdq_pair("x", "xq", 0.02, 128, np.uint8), qdq_weight("w1", (8, 3, 3, 3), 0),
                 qdq_weight("w2", (16, 8, 3, 3), 0), qdq_weight("w3", (1024, 10), 1)]:
        nodes += part[0] if isinstance(part[0], list) else [part[0]]
        inits += part[1]
    inits.append(weight("b1", 8))
    nodes += [helper.make_node("Conv", ["xq", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
              helper.make_node("Relu", ["c1"], ["r1"], name="relu1")]
    pair = qdq_pair("r1", "r1q", 0.03, 0, np.uint8)
    nodes += pair[0] + [helper.make_node("Conv", ["r1q", "w2"], ["c2"], name="conv2", strides=[2, 2],
                                         pads=[1, 1, 1, 1])]
    inits += pair[1]
    pair = qdq_pair("c2", "c2q", 0.05, -3, np.int8)
    nodes += pair[0] + [helper.make_node("Reshape", ["c2q", "flat_shape"], ["flat"], name="flatten"),
                        helper.make_node("MatMul", ["flat", "w3"], ["y"], name="fc")]
    inits += pair[1] + [const("flat_shape", [1, 1024])]
    return model(nodes, [tensor("x", [1, 3, 16, 16])], [tensor("y", [1, 10])], inits, opset=13), \
        [(1, 3, 16, 16)]


def conv_integer():
    """DynamicQuantizeLinear + ConvInteger (uint8 data, int8 filter with a
    zero zero point), rescaled to f32 as dynamic quantization tools write it."""
    w = rng.standard_normal((8, 4, 3, 3)).astype(np.float32) * 0.2
    w_scale = np.float32(np.abs(w).max() / 127)
    inits = [numpy_helper.from_array(np.round(w / w_scale).astype(np.int8), "w_q"),
             numpy_helper.from_array(np.array(w_scale, np.float32), "w_scale"),
             numpy_helper.from_array(np.array(0, np.int8), "w_zp")]
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["x_q", "x_scale", "x_zp"], name="dql"),
             helper.make_node("ConvInteger", ["x_q", "w_q", "x_zp", "w_zp"], ["acc"], name="conv",
                              pads=[1, 1, 1, 1]),
             helper.make_node("Cast", ["acc"], ["acc_f"], name="cast", to=TensorProto.FLOAT),
             helper.make_node("Mul", ["x_scale", "w_scale"], ["s"], name="scales"),
             helper.make_node("Mul", ["acc_f", "s"], ["y"], name="rescale")]
    return model(nodes, [tensor("x", [1, 4, 12, 12])], [tensor("y", [1, 8, 12, 12])], inits,
                 opset=13), [(1, 4, 12, 12)]


def qlinear_conv():
    """QuantizeLinear -> QLinearConv (uint8 data, int8 filter per output
    channel, int32 bias, stride 2, padding) -> DequantizeLinear."""
    w = rng.standard_normal((6, 4, 3, 3)).astype(np.float32) * 0.2
    w_scale = (np.abs(w).max(axis=(1, 2, 3)) / 127).astype(np.float32)
    scalar = lambda name, v, t: numpy_helper.from_array(np.array(v, t), name)
    inits = [scalar("x_scale", 0.05, np.float32), scalar("x_zp", 120, np.uint8),
             numpy_helper.from_array(np.round(w / w_scale[:, None, None, None]).astype(np.int8), "w_q"),
             numpy_helper.from_array(w_scale, "w_scale"),
             numpy_helper.from_array(np.zeros(6, np.int8), "w_zp"),
             scalar("y_scale", 0.1, np.float32), scalar("y_zp", 100, np.uint8),
             numpy_helper.from_array(rng.integers(-300, 300, 6).astype(np.int32), "bias")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zp"], ["x_q"], name="quantize"),
             helper.make_node("QLinearConv", ["x_q", "x_scale", "x_zp", "w_q", "w_scale", "w_zp",
                                              "y_scale", "y_zp", "bias"], ["y_q"], name="conv",
                              strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("DequantizeLinear", ["y_q", "y_scale", "y_zp"], ["y"], name="dequantize")]
    return model(nodes, [tensor("x", [1, 4, 11, 11])], [tensor("y", [1, 6, 6, 6])], inits,
                 opset=13), [(1, 4, 11, 11)]


def quantized_matmul():
    """A model that arrives quantized: DynamicQuantizeLinear + MatMulInteger
    (u8 activations with a zero point, int8 weights) rescaled to f32, and
    QuantizeLinear + QLinearMatMul + DequantizeLinear."""
    n = helper.make_node
    wq = rng.integers(-127, 128, (64, 32)).astype(np.int8)
    nodes = [n("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], name="dq"),
             n("MatMulInteger", ["xq", "wq", "xz"], ["acc"], name="mmi"),
             n("Cast", ["acc"], ["accf"], name="to_float", to=TensorProto.FLOAT),
             n("Mul", ["accf", "xs"], ["t"], name="scale_x"),
             n("Mul", ["t", "ws"], ["y1"], name="scale_w"),
             n("QuantizeLinear", ["x", "as", "az"], ["xq2"], name="q"),
             n("QLinearMatMul", ["xq2", "as", "az", "wq", "ws0", "wz", "ys", "yz"], ["yq"],
               name="qmm"),
             n("DequantizeLinear", ["yq", "ys", "yz"], ["y2"], name="dq2")]
    inits = [numpy_helper.from_array(wq, "wq"),
             numpy_helper.from_array((rng.random(32) * 0.01 + 0.001).astype(np.float32), "ws"),
             const("as", 0.02, np.float32), const("az", 128, np.uint8),
             const("ws0", 0.01, np.float32), const("wz", 0, np.int8),
             const("ys", 0.05, np.float32), const("yz", 128, np.uint8)]
    return model(nodes, [tensor("x", [4, 64])], [tensor("y1", [4, 32]), tensor("y2", [4, 32])],
                 inits), [(4, 64)]


def cnn(batch=2, dims=None, count_include_pad=0):
    """Conv/BN/Relu/MaxPool/depthwise+grouped conv/residual Add/AveragePool/
    GlobalAveragePool/Gemm/Softmax. At batch 1 the dense convolutions take
    the im2col + matmul path, at batch 2 the direct one. `dims` names the
    input's dimensions (symbolic ones are dynamic)."""
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "c1w", "c1b"], ["c1"], name="conv1", pads=[1, 1, 1, 1], strides=[2, 2]),
        n("BatchNormalization", ["c1", "bns", "bnb", "bnm", "bnv"], ["bn"], name="bn1", epsilon=1e-3),
        n("Relu", ["bn"], ["r1"], name="relu1"),
        n("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        n("Conv", ["p1", "dww"], ["dw"], name="dwconv", pads=[1, 1, 1, 1], group=16),
        n("Conv", ["p1", "gw", "gb"], ["gc"], name="gconv", group=4, dilations=[1, 1], pads=[0, 0, 0, 0]),
        n("Conv", ["gc", "dilw"], ["gc2"], name="dilated", dilations=[2, 2], pads=[2, 2, 2, 2]),
        n("Add", ["dw", "gc2"], ["res"], name="residual"),
        n("AveragePool", ["res"], ["ap"], name="avg", kernel_shape=[2, 2], strides=[1, 1],
          pads=[0, 0, 1, 1], count_include_pad=count_include_pad),
        n("GlobalAveragePool", ["ap"], ["gap"], name="gap"),
        n("Flatten", ["gap"], ["flat"], name="flatten"),
        n("Gemm", ["flat", "fw", "fb"], ["logits"], name="fc", transB=1),
        n("Softmax", ["logits"], ["probs"], name="softmax"),
    ]
    bnv = numpy_helper.from_array((rng.random(16) + 0.5).astype(np.float32), "bnv")
    inits = [weight("c1w", 16, 3, 3, 3, scale=0.3), weight("c1b", 16), weight("bns", 16),
             weight("bnb", 16), weight("bnm", 16), bnv, weight("dww", 16, 1, 3, 3, scale=0.3),
             weight("gw", 16, 4, 1, 1, scale=0.3), weight("gb", 16),
             weight("dilw", 16, 16, 3, 3, scale=0.1), weight("fw", 5, 16, scale=1.0),
             weight("fb", 5)]
    shape = (batch, 3, 20, 24)
    dims = dims or list(shape)
    return model(nodes, [tensor("x", dims)], [tensor("probs", [dims[0], 5])], inits), [shape]


def cnn_b1():
    return cnn(batch=1)


def cnn_dynamic():
    """cnn with dynamic batch, height and width."""
    return cnn(batch=2, dims=["N", 3, "H", "W"])


def dynamic_add(second="M"):
    """x[N, 3] + y[<second>, 3]: the sizes must agree at run time."""
    return model([helper.make_node("Add", ["x", "y"], ["z"], name="sum")],
                 [tensor("x", ["N", 3]), tensor("y", [second, 3])], [tensor("z", ["N", 3])],
                 []), [(2, 3), (3, 3)]


def dynamic_add_named():
    return dynamic_add(second="N")


def dynamic_rules():
    """Import rules on dynamic sizes: Shape -> Gather -> Concat -> Reshape,
    ConvTranspose (stride 2), Resize (constant scales), Slice of a static
    dimension, ReduceMean and Concat, on x[N, 4, H, W]."""
    n = helper.make_node
    nodes = [n("Shape", ["x"], ["s"], name="shape"),
             n("Gather", ["s", "first"], ["batch"], name="batch"),
             n("Concat", ["batch", "minus_one"], ["spec"], name="spec", axis=0),
             n("Conv", ["x", "cw"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             n("ConvTranspose", ["c", "tw"], ["t"], name="up", strides=[2, 2]),
             n("Resize", ["t", "", "half"], ["r"], name="down", mode="linear"),
             n("Add", ["r", "x"], ["a"], name="residual"),
             n("ReduceMean", ["a"], ["m"], name="mean", axes=[1], keepdims=1),
             n("Slice", ["a", "zero", "two", "one"], ["sl"], name="slice"),
             n("Concat", ["sl", "m"], ["cat"], name="cat", axis=1),
             n("Reshape", ["cat", "spec"], ["f"], name="flatten"),
             n("Softmax", ["f"], ["y"], name="softmax")]
    inits = [const("first", [0]), const("minus_one", [-1]), weight("cw", 8, 4, 3, 3),
             weight("tw", 8, 4, 2, 2),
             numpy_helper.from_array(np.array([1, 1, 0.5, 0.5], np.float32), "half"),
             const("zero", [0]), const("two", [2]), const("one", [1])]
    return model(nodes, [tensor("x", ["N", 4, "H", "W"])], [tensor("y", ["N", None])], inits,
                 opset=13), [(2, 4, 6, 10)]


def dynamic_pad():
    """Pad in every mode on x[N, C, L] with dynamic sizes (as audio models pad
    before an STFT): reflect and wrap along L, edge and constant along C and
    L."""
    n = helper.make_node
    nodes = [n("Pad", ["x", "p_reflect"], ["reflect"], name="reflect", mode="reflect"),
             n("Pad", ["x", "p_edge"], ["edge"], name="edge", mode="edge"),
             n("Pad", ["x", "p_wrap"], ["wrap"], name="wrap", mode="wrap"),
             n("Pad", ["x", "p_edge", "value"], ["constant"], name="constant")]
    inits = [const("p_reflect", [0, 0, 3, 0, 0, 2]), const("p_edge", [0, 1, 2, 0, 2, 1]),
             const("p_wrap", [0, 0, 4, 0, 0, 5]),
             numpy_helper.from_array(np.array(1.5, np.float32), "value")]
    return model(nodes, [tensor("x", ["N", "C", "L"])],
                 [tensor(o, None) for o in ["reflect", "edge", "wrap", "constant"]], inits,
                 opset=19), [(2, 3, 8)]


def dynamic_slice():
    """Slices with constant bounds along the dynamic L of x[N, C, L]: a
    window, bounds counted from the end, reversals and strides both ways,
    and the reflect padding Silero's legacy model builds from them:
    Concat(x[..., 3:0:-1], x, x[..., -2:-5:-1])."""
    n = helper.make_node
    slices = {"window": ([1], [4], [1]), "tail": ([-4], [-1], [1]),
              "reversed": ([-1], [-(2**63) + 1], [-1]), "back2": ([-2], [-(2**63)], [-2]),
              "stride3": ([2], [-2], [3]), "left": ([3], [0], [-1]), "right": ([-2], [-5], [-1])}
    nodes, inits = [], []
    for name, (starts, ends, steps) in slices.items():
        inits += [const(name + "_s", starts), const(name + "_e", ends), const(name + "_st", steps)]
        nodes.append(n("Slice", ["x", name + "_s", name + "_e", "axis2", name + "_st"], [name],
                       name=name))
    nodes.append(n("Concat", ["left", "x", "right"], ["reflect"], name="reflect", axis=2))
    inits.append(const("axis2", [2]))
    outputs = list(slices) + ["reflect"]
    return model(nodes, [tensor("x", ["N", "C", "L"])],
                 [tensor(o, ["N", "C", o + "_L"]) for o in outputs], inits), [(2, 3, 8)]


def dynamic_flatten():
    """Flatten of several dynamic dimensions, as the ONNX version converter
    upgrades Softmax-12 over x[N, C, H, W] at axis 2: Flatten, Softmax over
    the last axis, Reshape back to Shape(x); and a Flatten at axis 0."""
    n = helper.make_node
    nodes = [n("Shape", ["x"], ["shape"], name="shape"),
             n("Flatten", ["x"], ["flat"], name="flatten", axis=2),
             n("Softmax", ["flat"], ["soft"], name="softmax", axis=-1),
             n("Reshape", ["soft", "shape"], ["y"], name="unflatten"),
             n("Flatten", ["x"], ["row"], name="flatten0", axis=0)]
    return model(nodes, [tensor("x", ["N", "C", "H", "W"])],
                 [tensor("y", ["N", "C", "H", "W"]), tensor("row", [1, "NCHW"])], []), \
        [(2, 3, 4, 5)]


def dynamic_resize():
    """Resize by sizes known only at run time on dynamic shapes, as FPN and
    U-Net exports upsample to a skip connection's size: nearest to
    Shape(skip) then Add, linear to the same full sizes, and linear with
    axes [2, 3] and sizes Shape(skip)[2:]."""
    n = helper.make_node
    nodes = [n("Shape", ["skip"], ["skip_shape"], name="skip_shape"),
             n("Slice", ["skip_shape", "two", "four"], ["hw"], name="hw"),
             n("Shape", ["x"], ["x_shape"], name="x_shape"),
             n("Slice", ["x_shape", "zero", "two"], ["nc"], name="nc"),
             n("Concat", ["nc", "hw"], ["sizes"], name="sizes", axis=0),
             n("Resize", ["x", "", "", "sizes"], ["up"], name="nearest", mode="nearest"),
             n("Add", ["up", "skip"], ["merged"], name="merge"),
             n("Resize", ["x", "", "", "sizes"], ["linear"], name="linear", mode="linear"),
             n("Resize", ["x", "", "", "hw"], ["by_axes"], name="by_axes", mode="linear",
               axes=[2, 3])]
    inits = [const("zero", [0]), const("two", [2]), const("four", [4])]
    return model(nodes, [tensor("x", ["N", "C", "H", "W"]), tensor("skip", ["N", "C", "H2", "W2"])],
                 [tensor(o, ["N", "C", "H2", "W2"]) for o in ["merged", "linear", "by_axes"]],
                 inits, opset=18), [(2, 3, 5, 7), (2, 3, 10, 14)]


def recurrent_dynamic():
    """LSTM (bidirectional), GRU (reverse, linear_before_reset) and RNN over
    x[T, N, 5] whose sequence length T and batch N are known only at run
    time, each from an initial state [dirs, N, 8]."""
    n = helper.make_node
    hidden, size = 8, 5
    nodes = [n("LSTM", ["x", "lstm_w", "lstm_r", "lstm_b", "", "h2", "c2"],
               ["lstm_y", "lstm_h", "lstm_c"], name="lstm", hidden_size=hidden,
               direction="bidirectional"),
             n("GRU", ["x", "gru_w", "gru_r", "gru_b", "", "h1"], ["gru_y", "gru_h"], name="gru",
               hidden_size=hidden, direction="reverse", linear_before_reset=1),
             n("RNN", ["x", "rnn_w", "rnn_r", "rnn_b", "", "h1"], ["rnn_y", "rnn_h"], name="rnn",
               hidden_size=hidden)]
    inits = []
    for name, gates, dirs in [("lstm", 4, 2), ("gru", 3, 1), ("rnn", 1, 1)]:
        inits += [weight(name + "_w", dirs, gates * hidden, size, scale=0.4),
                  weight(name + "_r", dirs, gates * hidden, hidden, scale=0.4),
                  weight(name + "_b", dirs, 2 * gates * hidden)]
    inputs = [tensor("x", ["T", "N", size]), tensor("h2", [2, "N", hidden]),
              tensor("c2", [2, "N", hidden]), tensor("h1", [1, "N", hidden])]
    outputs = [tensor(o, None) for o in ["lstm_y", "lstm_h", "lstm_c", "gru_y", "gru_h",
                                         "rnn_y", "rnn_h"]]
    return model(nodes, inputs, outputs, inits, opset=18), \
        [(7, 2, size), (2, 2, hidden), (2, 2, hidden), (1, 2, hidden)]


def recurrent_lengths():
    """LSTM (bidirectional, with peepholes) and GRU (reverse) over x[6, 3, 5]
    with a run-time sequence_lens[3]: shorter rows keep their state and
    output zeros past their length."""
    n = helper.make_node
    hidden, size = 8, 5
    nodes = [n("LSTM", ["x", "lstm_w", "lstm_r", "lstm_b", "lens", "", "", "lstm_p"],
               ["lstm_y", "lstm_h", "lstm_c"], name="lstm", hidden_size=hidden,
               direction="bidirectional"),
             n("GRU", ["x", "gru_w", "gru_r", "gru_b", "lens"], ["gru_y", "gru_h"], name="gru",
               hidden_size=hidden, direction="reverse")]
    inits = [weight("lstm_p", 2, 3 * hidden, scale=0.4)]
    for name, gates, dirs in [("lstm", 4, 2), ("gru", 3, 1)]:
        inits += [weight(name + "_w", dirs, gates * hidden, size, scale=0.4),
                  weight(name + "_r", dirs, gates * hidden, hidden, scale=0.4),
                  weight(name + "_b", dirs, 2 * gates * hidden)]
    lens = helper.make_tensor_value_info("lens", TensorProto.INT32, [3])
    outputs = [tensor("lstm_y", [6, 2, 3, hidden]), tensor("lstm_h", [2, 3, hidden]),
               tensor("lstm_c", [2, 3, hidden]), tensor("gru_y", [6, 1, 3, hidden]),
               tensor("gru_h", [1, 3, hidden])]
    return model(nodes, [tensor("x", [6, 3, size]), lens], outputs, inits, opset=14), \
        [(6, 3, size)]


def mel_weights():
    """MelWeightMatrix with run-time inputs (the declared output [33, 10]
    fixes the sizes) and with constants: 40 mel bins over a 256-point DFT
    at 16 kHz between 20 Hz and 7600 Hz."""
    n = helper.make_node
    nodes = [n("MelWeightMatrix", ["mels", "dft", "rate", "low", "high"], ["runtime"],
               name="runtime"),
             n("MelWeightMatrix", ["c_mels", "c_dft", "c_rate", "c_low", "c_high"], ["constant"],
               name="constant")]
    inits = [const("c_mels", 40), const("c_dft", 256), const("c_rate", 16000),
             numpy_helper.from_array(np.array(20, np.float32), "c_low"),
             numpy_helper.from_array(np.array(7600, np.float32), "c_high")]
    scalar = helper.make_tensor_value_info
    inputs = [scalar("mels", TensorProto.INT64, []), scalar("dft", TensorProto.INT64, []),
              scalar("rate", TensorProto.INT64, []), scalar("low", TensorProto.FLOAT, []),
              scalar("high", TensorProto.FLOAT, [])]
    return model(nodes, inputs, [tensor("runtime", [33, 10]), tensor("constant", [129, 40])],
                 inits), []


def roi_align():
    """RoiAlign on x[2, 3, 12, 16] with run-time boxes and batch indices:
    avg over a 2x2 grid (half_pixel, spatial_scale 0.5, 3x4 bins) and max
    over a 3x3 grid (output_half_pixel, 2x2 bins)."""
    n = helper.make_node
    nodes = [n("RoiAlign", ["x", "rois", "batch"], ["avg"], name="avg", output_height=3,
               output_width=4, sampling_ratio=2, spatial_scale=0.5),
             n("RoiAlign", ["x", "rois", "batch"], ["max"], name="max", mode="max",
               output_height=2, output_width=2, sampling_ratio=3,
               coordinate_transformation_mode="output_half_pixel")]
    rois = helper.make_tensor_value_info("rois", TensorProto.FLOAT, [5, 4])
    batch = helper.make_tensor_value_info("batch", TensorProto.INT64, [5])
    return model(nodes, [tensor("x", [2, 3, 12, 16]), rois, batch],
                 [tensor("avg", [5, 3, 3, 4]), tensor("max", [5, 3, 2, 2])], [], opset=16), \
        [(2, 3, 12, 16)]


def crop_and_resize():
    """Resize with tf_crop_and_resize on x[1, 2, 8, 10]: a run-time roi with a
    box partly outside the input (extrapolation_value 10), linear to 5x7 and
    nearest to 4x1."""
    n = helper.make_node
    nodes = [n("Resize", ["x", "roi", "", "sizes"], ["linear"], name="linear", mode="linear",
               coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=10.0),
             n("Resize", ["x", "roi", "", "small"], ["nearest"], name="nearest",
               coordinate_transformation_mode="tf_crop_and_resize")]
    inits = [const("sizes", [1, 2, 5, 7]), const("small", [1, 2, 4, 1])]
    roi = helper.make_tensor_value_info("roi", TensorProto.FLOAT, [8])
    return model(nodes, [tensor("x", [1, 2, 8, 10]), roi],
                 [tensor("linear", [1, 2, 5, 7]), tensor("nearest", [1, 2, 4, 1])], inits), \
        [(1, 2, 8, 10)]


def conv_transpose_3d():
    """3-D ConvTranspose with groups, strides, dilation, padding and
    output_padding on x[1, 4, 3, 4, 5]; a second one by output_shape."""
    n = helper.make_node
    nodes = [n("ConvTranspose", ["x", "w", "b"], ["y"], name="up", group=2, strides=[2, 1, 2],
               dilations=[1, 2, 1], pads=[1, 0, 1, 0, 1, 0], output_padding=[1, 0, 0]),
             n("ConvTranspose", ["x", "w"], ["sized"], name="sized", group=2, strides=[2, 2, 2],
               output_shape=[6, 8, 9])]
    inits = [weight("w", 4, 3, 2, 3, 3, scale=0.3), weight("b", 6)]
    return model(nodes, [tensor("x", [1, 4, 3, 4, 5])],
                 [tensor("y", [1, 6, 6, 7, 10]), tensor("sized", [1, 6, 6, 8, 9])], inits), \
        [(1, 4, 3, 4, 5)]


def embedding_dynamic():
    """Token embeddings: Gather of ids[batch, seq] from a [50, 16] table, then
    a Gather of one position (a dynamic axis) and a MatMul."""
    n = helper.make_node
    nodes = [n("Gather", ["table", "ids"], ["e"], name="embed"),
             n("Gather", ["e", "last"], ["l"], name="last_token", axis=1),
             n("MatMul", ["l", "w"], ["y"], name="head")]
    inits = [weight("table", 50, 16, scale=1.0), const("last", -1), weight("w", 16, 4)]
    ids = helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "seq"])
    return model(nodes, [ids], [tensor("y", ["batch", 4])], inits), [(2, 7)]


def mlp_dynamic():
    """A Gemm/Relu/MatMul/Softmax MLP over a dynamic batch, with a Reshape
    that keeps the batch (0) and one that infers it (-1)."""
    n = helper.make_node
    nodes = [n("Reshape", ["x", "s1"], ["x2"], name="flatten"),
             n("Gemm", ["x2", "w1", "b1"], ["h1"], name="fc1", transB=1),
             n("Relu", ["h1"], ["a1"], name="relu1"),
             n("MatMul", ["a1", "w2"], ["h2"], name="fc2"),
             n("Reshape", ["h2", "s2"], ["h3"], name="split"),
             n("Softmax", ["h3"], ["p"], name="softmax"),
             n("Transpose", ["p"], ["pt"], name="swap", perm=[0, 2, 1]),
             n("Concat", ["pt", "pt"], ["y"], name="twice", axis=1)]
    inits = [const("s1", [0, -1]), weight("w1", 16, 12), weight("b1", 16), weight("w2", 16, 8),
             const("s2", [-1, 2, 4])]
    return model(nodes, [tensor("x", ["batch", 3, 4])], [tensor("y", ["batch", 8, 2])], inits), [(5, 3, 4)]


def transformer(dynamic=False):
    """One pre-LN encoder layer: 2 heads, d=32, seq 8, Erf-based GELU. With
    `dynamic`, batch and sequence length are dynamic (Reshape copies them)."""
    n = helper.make_node
    s, d, h = 8, 32, 2
    nodes = [n("LayerNormalization", ["x", "ln1s", "ln1b"], ["ln1"], name="ln1", axis=-1, epsilon=1e-5)]
    for p in "qkv":
        nodes += [n("MatMul", ["ln1", f"w{p}"], [f"{p}0"], name=f"proj_{p}"),
                  n("Add", [f"{p}0", f"b{p}"], [f"{p}1"], name=f"bias_{p}"),
                  n("Reshape", [f"{p}1", "heads_shape"], [f"{p}2"], name=f"split_{p}"),
                  n("Transpose", [f"{p}2"], [f"{p}h"], name=f"heads_{p}",
                    perm=[0, 2, 3, 1] if p == "k" else [0, 2, 1, 3])]
    nodes += [
        n("MatMul", ["qh", "kh"], ["scores0"], name="qk"),
        n("Div", ["scores0", "scale"], ["scores"], name="scale"),
        n("Softmax", ["scores"], ["attn"], name="softmax", axis=-1),
        n("MatMul", ["attn", "vh"], ["ctx0"], name="attn_v"),
        n("Transpose", ["ctx0"], ["ctx1"], name="merge_t", perm=[0, 2, 1, 3]),
        n("Reshape", ["ctx1", "model_shape"], ["ctx"], name="merge"),
        n("MatMul", ["ctx", "wo"], ["o0"], name="proj_o"),
        n("Add", ["o0", "x"], ["r1"], name="residual1"),
        n("ReduceMean", ["r1"], ["mu"], name="mean", axes=[-1]),
        n("Sub", ["r1", "mu"], ["xc"], name="center"),
        n("Mul", ["xc", "xc"], ["sq"], name="square"),
        n("ReduceMean", ["sq"], ["var"], name="var", axes=[-1]),
        n("Add", ["var", "eps"], ["vareps"], name="var_eps"),
        n("Sqrt", ["vareps"], ["std"], name="std"),
        n("Div", ["xc", "std"], ["ln2"], name="norm"),
        n("MatMul", ["ln2", "w1"], ["f0"], name="ffn1"),
        n("Div", ["f0", "sqrt2"], ["g0"], name="gelu_div"),
        n("Erf", ["g0"], ["g1"], name="gelu_erf"),
        n("Add", ["g1", "one"], ["g2"], name="gelu_add"),
        n("Mul", ["f0", "g2"], ["g3"], name="gelu_mul"),
        n("Mul", ["g3", "half"], ["g4"], name="gelu_half"),
        n("MatMul", ["g4", "w2"], ["f1"], name="ffn2"),
        n("Add", ["f1", "r1"], ["y"], name="residual2"),
    ]
    scalar = lambda name, v: numpy_helper.from_array(np.array(v, np.float32), name)
    inits = [weight("ln1s", d, scale=1.0), weight("ln1b", d)]
    for p in "qkv":
        inits += [weight(f"w{p}", d, d, scale=0.2), weight(f"b{p}", d)]
    inits += [weight("wo", d, d, scale=0.2), weight("w1", d, 4 * d, scale=0.2),
              weight("w2", 4 * d, d, scale=0.2),
              const("heads_shape", [0, 0, h, d // h] if dynamic else [1, s, h, d // h]),
              const("model_shape", [0, 0, d] if dynamic else [1, s, d]),
              scalar("scale", np.sqrt(d // h)),
              scalar("eps", 1e-5), scalar("sqrt2", np.sqrt(2.0)), scalar("one", 1.0),
              scalar("half", 0.5)]
    dims = ["B", "S", d] if dynamic else [1, s, d]
    return model(nodes, [tensor("x", dims)], [tensor("y", dims)], inits), [(1, s, d)]


def decoder_kv(d=64, h=4):
    """One attention step of a transformer decoder with a KV cache: token x
    [1, 1, d], the cache past_k/past_v [1, h, past, d/h] -> y [1, 1, d] and
    the cache with this token's keys and values appended (present_k/v,
    [1, h, total, d/h]). Inputs: a token and an empty cache (past = 0)."""
    n = helper.make_node
    nodes = []
    for p in "qkv":
        nodes += [n("MatMul", ["x", f"w{p}"], [f"{p}0"], name=f"proj_{p}"),
                  n("Reshape", [f"{p}0", "heads_shape"], [f"{p}1"], name=f"split_{p}"),
                  n("Transpose", [f"{p}1"], [f"{p}h"], name=f"heads_{p}", perm=[0, 2, 1, 3])]
    nodes += [
        n("Concat", ["past_k", "kh"], ["present_k"], name="append_k", axis=2),
        n("Concat", ["past_v", "vh"], ["present_v"], name="append_v", axis=2),
        n("Transpose", ["present_k"], ["kt"], name="keys_t", perm=[0, 1, 3, 2]),
        n("MatMul", ["qh", "kt"], ["scores0"], name="qk"),
        n("Mul", ["scores0", "scale"], ["scores"], name="scale"),
        n("Softmax", ["scores"], ["attn"], name="softmax", axis=-1),
        n("MatMul", ["attn", "present_v"], ["ctx0"], name="attn_v"),
        n("Transpose", ["ctx0"], ["ctx1"], name="merge_t", perm=[0, 2, 1, 3]),
        n("Reshape", ["ctx1", "model_shape"], ["ctx"], name="merge"),
        n("MatMul", ["ctx", "wo"], ["o0"], name="proj_o"),
        n("Add", ["o0", "x"], ["y"], name="residual"),
    ]
    inits = [weight(f"w{p}", d, d, scale=1.6 / np.sqrt(d)) for p in "qkvo"]
    inits += [const("heads_shape", [1, 1, h, d // h]), const("model_shape", [1, 1, d]),
              numpy_helper.from_array(np.array(1 / np.sqrt(d // h), np.float32), "scale")]
    cache = lambda name, dim: helper.make_tensor_value_info(name, TensorProto.FLOAT,
                                                            [1, h, dim, d // h])
    m = model(nodes, [tensor("x", [1, 1, d]), cache("past_k", "past"), cache("past_v", "past")],
              [tensor("y", [1, 1, d]), cache("present_k", "total"),
               cache("present_v", "total")], inits)
    return m, [(1, 1, d), (1, h, 0, d // h), (1, h, 0, d // h)]


def transformer_dynamic():
    return transformer(dynamic=True)


def import_math():
    """Every elementwise importer rule once (opset 17)."""
    n = helper.make_node
    nodes = [
        n("Add", ["x", "row"], ["a"], name="add"),
        n("Sub", ["a", "x"], ["b"], name="sub"),
        n("Mul", ["b", "x"], ["c"], name="mul"),
        n("Div", ["c", "two"], ["d"], name="div"),
        n("Relu", ["d"], ["e"], name="relu"),
        n("Add", ["e", "one"], ["e1"], name="add_one"),
        n("Sqrt", ["e1"], ["f"], name="sqrt"),
        n("Pow", ["f", "two"], ["g"], name="pow"),
        n("Sigmoid", ["g"], ["h"], name="sigmoid"),
        n("Tanh", ["x"], ["i"], name="tanh"),
        n("Exp", ["i"], ["j"], name="exp"),
        n("Erf", ["x"], ["k"], name="erf"),
        n("Neg", ["k"], ["l"], name="neg"),
        n("Clip", ["l", "lo", "hi"], ["m"], name="clip"),
        n("HardSigmoid", ["x"], ["o"], name="hardsigmoid", alpha=0.3, beta=0.4),
        n("Identity", ["o"], ["p"], name="identity"),
        n("Dropout", ["p"], ["q"], name="dropout"),
        n("Add", ["h", "j"], ["r"], name="sum1"),
        n("Add", ["r", "m"], ["s"], name="sum2"),
        n("Add", ["s", "q"], ["y"], name="sum3"),
    ]
    scalar = lambda name, v: numpy_helper.from_array(np.array(v, np.float32), name)
    inits = [weight("row", 5), scalar("two", 2.0), scalar("one", 1.0), scalar("lo", -0.5),
             scalar("hi", 0.25)]
    return model(nodes, [tensor("x", [3, 5])], [tensor("y", [3, 5])], inits), [(3, 5)]


def prelu_opset6():
    """PRelu before opset 7: a 1-D slope holds one value per channel (axis 1)."""
    nodes = [helper.make_node("PRelu", ["x", "slope"], ["y"])]
    return model(nodes, [tensor("x", [2, 3, 4])], [tensor("y", [2, 3, 4])],
                 [weight("slope", 3)], opset=6), [(2, 3, 4)]


def import_nn():
    """Window, normalization and contraction rules, incl. auto_pad and ceil_mode (opset 11)."""
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w"], ["c"], name="conv_same", auto_pad="SAME_UPPER", strides=[2, 2]),
        n("BatchNormalization", ["c", "s", "b", "m", "v"], ["bn"], name="bn"),
        n("MaxPool", ["bn"], ["mp"], name="maxpool_ceil", kernel_shape=[2, 2], strides=[2, 2],
          ceil_mode=1),
        n("AveragePool", ["mp"], ["ap"], name="avgpool_pad", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
          count_include_pad=1),
        n("Reshape", ["ap", "shape3"], ["r3"], name="to_rank3"),
        n("Softmax", ["r3"], ["sm"], name="softmax_v11", axis=1),
        n("ReduceMean", ["sm"], ["rm"], name="reduce_mean", axes=[2], keepdims=0),
        n("MatMul", ["rm", "vec"], ["mv"], name="matvec"),
    ]
    inits = [weight("w", 4, 2, 3, 3, scale=0.3), weight("s", 4), weight("b", 4), weight("m", 4),
             numpy_helper.from_array((rng.random(4) + 0.5).astype(np.float32), "v"),
             const("shape3", [1, 4, -1]), weight("vec", 4)]
    return (model(nodes, [tensor("x", [1, 2, 9, 11])], [tensor("mv", [1])], inits, opset=11),
            [(1, 2, 9, 11)])


def conv_transpose_taps():
    """ConvTransposes whose stride equals their kernel (each output pixel
    takes one tap): 2-D 2x2 stride 2 with a bias, 24 -> 6 channels, and 1-D
    kernel 3 stride 3 without one (opset 11)."""
    n = helper.make_node
    nodes = [n("ConvTranspose", ["x", "w2d", "b2d"], ["y"], name="up2d", strides=[2, 2]),
             n("ConvTranspose", ["z", "w1d"], ["u"], name="up1d", strides=[3])]
    inits = [weight("w2d", 24, 6, 2, 2, scale=0.3), weight("b2d", 6), weight("w1d", 4, 3, 3)]
    return (model(nodes, [tensor("x", [1, 24, 5, 8]), tensor("z", [2, 4, 16])],
                  [tensor("y", [1, 6, 10, 16]), tensor("u", [2, 3, 48])], inits, opset=11),
            [(1, 24, 5, 8), (2, 4, 16)])


def import_tensor():
    """Shape arithmetic that folds at compile time, and data movement (opset 13)."""
    n = helper.make_node
    nodes = [
        n("Shape", ["x"], ["shp"], name="shape"),
        n("Gather", ["shp", "zero"], ["batch"], name="gather_batch", axis=0),
        n("Unsqueeze", ["batch", "axes0"], ["batch1"], name="unsqueeze"),
        n("Cast", ["batch1"], ["batch64"], name="cast", to=TensorProto.INT64),
        n("Slice", ["shp", "starts", "ends"], ["hw"], name="slice_hw"),
        n("Concat", ["batch64", "minus1", "hw"], ["newshape"], name="concat_shape", axis=0),
        n("Reshape", ["x", "newshape"], ["r"], name="reshape"),
        n("Transpose", ["r"], ["t"], name="transpose_default"),
        n("Flatten", ["t"], ["f"], name="flatten", axis=0),
        n("Squeeze", ["f", "axes0"], ["sq0"], name="squeeze"),
        n("Unsqueeze", ["sq0", "axes0"], ["sq"], name="unsqueeze_again"),
        n("Constant", [], ["k"], name="constant",
          value=numpy_helper.from_array(np.full((1, 12), 0.5, np.float32))),
        n("Concat", ["sq", "k"], ["y"], name="concat", axis=0),
    ]
    inits = [const("zero", 0), const("axes0", [0]), const("starts", [2]), const("ends", [4]),
             const("minus1", [-1])]
    return (model(nodes, [tensor("x", [1, 2, 3, 2])], [tensor("y", [2, 12])], inits, opset=13),
            [(1, 2, 3, 2)])


def resize():
    """Resize with compile-time scales/sizes in each supported mode (opset 13)."""
    n = helper.make_node
    f = lambda name, v: numpy_helper.from_array(np.array(v, np.float32), name)
    nodes = [
        n("Resize", ["x", "", "s_up"], ["nearest"], name="nearest_half_pixel", mode="nearest"),
        n("Resize", ["x", "", "", "sz_down"], ["linear_ac"], name="linear_align_corners",
          mode="linear", coordinate_transformation_mode="align_corners"),
        n("Resize", ["x", "", "s_mixed"], ["linear_hp"], name="linear_half_pixel", mode="linear"),
        n("Resize", ["x", "", "s_up"], ["nearest_asym"], name="nearest_asymmetric_ceil",
          mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="ceil"),
        n("Resize", ["x", "", "", "sz_down"], ["linear_pt"], name="linear_pytorch",
          mode="linear", coordinate_transformation_mode="pytorch_half_pixel"),
    ]
    inits = [f("s_up", [1, 1, 2, 1.5]), f("s_mixed", [1, 1, 0.6, 2]),
             const("sz_down", [1, 2, 7, 3])]
    outs = [tensor("nearest", [1, 2, 8, 7]), tensor("linear_ac", [1, 2, 7, 3]),
            tensor("linear_hp", [1, 2, 2, 10]), tensor("nearest_asym", [1, 2, 8, 7]),
            tensor("linear_pt", [1, 2, 7, 3])]
    return model(nodes, [tensor("x", [1, 2, 4, 5])], outs, inits, opset=13), [(1, 2, 4, 5)]


def shape_operands():
    """Shape operands that arrive as graph inputs; the declared outputs fix them."""
    ints = lambda name, n: helper.make_tensor_value_info(name, TensorProto.INT64, [n])
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["reshaped"], name="reshape"),
             helper.make_node("ReduceSum", ["x", "axes"], ["summed"], name="sum"),
             helper.make_node("Unsqueeze", ["x", "new_axes"], ["unsqueezed"], name="unsqueeze")]
    return model(nodes, [tensor("x", [2, 3, 4]), ints("shape", 2), ints("axes", 1), ints("new_axes", 1)],
                 [tensor("reshaped", [4, 6]), tensor("summed", [2, 1, 4]),
                  tensor("unsqueezed", [2, 3, 4, 1])], []), [(2, 3, 4)]


def window_operands():
    """Slice and Pad whose offsets (and pad value) arrive as graph inputs."""
    ints = lambda name, n: helper.make_tensor_value_info(name, TensorProto.INT64, [n])
    nodes = [helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["sliced"], name="slice"),
             helper.make_node("Pad", ["x", "pads", "value"], ["padded"], name="pad")]
    inputs = [tensor("x", [2, 3, 4]), ints("starts", 1), ints("ends", 1), ints("axes", 1), ints("steps", 1),
              ints("pads", 6), tensor("value", [])]
    return model(nodes, inputs, [tensor("sliced", [2, 3, 2]), tensor("padded", [2, 4, 6])], []), [(2, 3, 4)]


def modern():
    """What today's exporters write: IR 10, opset 18 (Split num_outputs,
    ReduceMean with axes as an input), which libonnx 1.12's checker refuses."""
    nodes = [helper.make_node("Split", ["x"], ["a", "b"], name="split", axis=1, num_outputs=2),
             helper.make_node("ReduceMean", ["a", "axes"], ["m"], name="mean", keepdims=1),
             helper.make_node("Sub", ["b", "m"], ["y"], name="centre")]
    m = model(nodes, [tensor("x", [4, 6])], [tensor("y", [4, 3])], [const("axes", [1])], opset=18)
    m.ir_version = 10
    return m, [(4, 6)]


def unsorted():
    """Nodes listed after their consumers, as fp16 converters leave Casts."""
    nodes = [helper.make_node("Mul", ["h", "h"], ["y"], name="square"),
             helper.make_node("Add", ["r", "x"], ["h"], name="residual"),
             helper.make_node("Relu", ["x"], ["r"], name="act")]
    return model(nodes, [tensor("x", [2, 3])], [tensor("y", [2, 3])], []), [(2, 3)]


def relu_with(**fields):
    """relu() with ModelProto fields overridden (ir_version, an opset)."""
    m, shapes = relu()
    for key, value in fields.items():
        if key == "opset":
            m.opset_import[0].version = value
        else:
            setattr(m, key, value)
    return m, shapes


# Malformed models: each must be refused with a located diagnostic.
HOSTILE = {
    "opset99": lambda: relu_with(opset=99),
    "ir14": lambda: relu_with(ir_version=14),
    "no_outputs": lambda: (model([helper.make_node("Relu", ["x"], ["y"], name="act")],
                                 [tensor("x", [2])], [], []), []),
    "huge_input": lambda: (model([helper.make_node("Relu", ["x"], ["y"], name="act")],
                                 [tensor("x", [2**40, 2**40])], [tensor("y", [2**40, 2**40])], []), []),
    "huge_weight": lambda: (model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                                  [tensor("x", [2])], [tensor("y", [2])],
                                  [onnx.TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2**40, 2**20])]), []),
    "cycle": lambda: (model([helper.make_node("Relu", ["x"], ["a"], name="first"),
                             helper.make_node("Add", ["a", "c"], ["b"], name="loop_a"),
                             helper.make_node("Relu", ["b"], ["c"], name="loop_b")],
                            [tensor("x", [2])], [tensor("c", [2])], []), []),
    "undefined_input": lambda: (model([helper.make_node("Add", ["x", "ghost"], ["y"], name="add")],
                                      [tensor("x", [2])], [tensor("y", [2])], []), []),
    "produced_twice": lambda: (model([helper.make_node("Relu", ["x"], ["y"], name="one"),
                                      helper.make_node("Neg", ["x"], ["y"], name="two")],
                                     [tensor("x", [2])], [tensor("y", [2])], []), []),
    "float8_input": lambda: (model([helper.make_node("Cast", ["x"], ["y"], name="cast", to=1)],
                                   [helper.make_tensor_value_info("x", 17, [2])],
                                   [tensor("y", [2])], []), []),
    "unknown_op": lambda: (model([helper.make_node("FrobnicateXYZ", ["x"], ["y"], name="frob")],
                                 [tensor("x", [2])], [tensor("y", [2])], []), []),
    "missing_attribute": lambda: (model([helper.make_node("Cast", ["x"], ["y"], name="cast")],
                                        [tensor("x", [2])], [tensor("y", [2])], []), []),
    "sparse_index_range": lambda: sparse_with(numpy_helper.from_array(
        np.array([1, 8], dtype=np.int64), "w_indices"), [2, 4]),
    "sparse_huge": lambda: sparse_with(numpy_helper.from_array(
        np.array([1, 3], dtype=np.int64), "w_indices"), [2**20, 2**20]),
}


def sparse_with(indices, dims):
    """An Add of x and a sparse initializer 'w' of two values."""
    values = numpy_helper.from_array(np.array([1.0, 2.0], dtype=np.float32), "w")
    m = model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
              [tensor("x", [2, 4])], [tensor("y", [2, 4])], [])
    m.graph.sparse_initializer.append(helper.make_sparse_tensor(values, indices, dims))
    return m, []


def pruned_weight(name, shape, fraction, block=1, outputs_first=False, rows=1):
    """Weights [K, N] (or [N, K] with `outputs_first`) of which the `fraction`
    of smallest |w| are zero: single weights, or pieces of `block`
    neighbouring outputs by `rows` inputs (smallest sum |w| first), as a
    model pruned elsewhere and exported dense has them."""
    w = rng.standard_normal(shape).astype(np.float32) * 0.1
    wk = w.T if outputs_first else w  # [K, N] view
    k, n = wk.shape
    pieces = np.abs(wk).reshape(k // rows, rows, n // block, block).sum(axis=(1, 3))
    order = np.argsort(pieces, axis=None, kind="stable")[:int(fraction * pieces.size)]
    mask = np.ones(pieces.size, dtype=bool)
    mask[order] = False
    mask = np.repeat(mask.reshape(k // rows, n // block), block, axis=1)
    wk *= np.repeat(mask, rows, axis=0)
    return numpy_helper.from_array(w, name)


def sparse_mlp():
    """Matmuls with mostly-zero weights, for kiln-sparsify's kernels:
    fc1 unstructured 90% (compressed columns) with an all-zero and a fully
    dense column; fc2 a Gemm (trans_b, alpha, beta) pruned in 16x1 blocks;
    fc3 95% unstructured with 40 outputs; mm4 a batched 3-D input of 5 rows
    (row groups of 4, then one); mm5 unstructured over 20 rows and 2048
    inputs (vectors of rows of the transposed input, the last one partial;
    deep enough to pay for writing its outputs column by column)."""
    w1 = pruned_weight("w1", (256, 128), 0.9)
    a = numpy_helper.to_array(w1).copy()
    a[:, 0] = 0
    a[:, 1] = rng.standard_normal(256) * 0.1
    w1 = numpy_helper.from_array(a, "w1")
    n = helper.make_node
    nodes = [n("MatMul", ["x", "w1"], ["h1"], name="fc1"),
             n("Relu", ["h1"], ["a1"], name="relu1"),
             n("Gemm", ["a1", "w2", "b2"], ["h2"], name="fc2", transB=1, alpha=0.5, beta=2.0),
             n("Relu", ["h2"], ["a2"], name="relu2"),
             n("MatMul", ["a2", "w3"], ["y"], name="fc3"),
             n("MatMul", ["x2", "w4"], ["y2"], name="mm4"),
             n("MatMul", ["x3", "w5"], ["y3"], name="mm5")]
    inits = [w1, pruned_weight("w2", (64, 128), 0.9, block=16, outputs_first=True),
             weight("b2", 64), pruned_weight("w3", (64, 40), 0.95),
             pruned_weight("w4", (96, 32), 0.9, block=16), pruned_weight("w5", (2048, 24), 0.9)]
    return model(nodes, [tensor("x", [2, 256]), tensor("x2", [2, 5, 96]), tensor("x3", [20, 2048])],
                 [tensor("y", [2, 40]), tensor("y2", [2, 5, 32]), tensor("y3", [20, 24])],
                 inits), [(2, 256), (2, 5, 96), (20, 2048)]


def sparse_initializer():
    """A MatMul whose 90%-zero weights are an ONNX sparse_initializer (COO,
    linear indices), plus a Constant whose sparse_value has [NNZ, rank]
    indices: both densify at import, and the matmul runs sparse."""
    w = numpy_helper.to_array(pruned_weight("w", (128, 64), 0.9))
    flat = np.flatnonzero(w)
    values = numpy_helper.from_array(w.reshape(-1)[flat], "w")
    sparse_w = helper.make_sparse_tensor(values, numpy_helper.from_array(flat.astype(np.int64),
                                                                         "w_indices"), [128, 64])
    b = np.zeros((2, 64), dtype=np.float32)
    b[0, 3], b[1, 60] = 1.5, -2.0
    coords = np.argwhere(b)
    sparse_b = helper.make_sparse_tensor(numpy_helper.from_array(b[b != 0], "b_values"),
                                         numpy_helper.from_array(coords.astype(np.int64),
                                                                 "b_indices"), [2, 64])
    nodes = [helper.make_node("Constant", [], ["b"], name="bias", sparse_value=sparse_b),
             helper.make_node("MatMul", ["x", "w"], ["h"], name="fc"),
             helper.make_node("Add", ["h", "b"], ["y"], name="add")]
    m = model(nodes, [tensor("x", [2, 128])], [tensor("y", [2, 64])], [])
    m.graph.sparse_initializer.append(sparse_w)
    return m, [(2, 128)]


def half_sparse_mlp():
    """Matmuls with half their weights zero, where kiln-sparsify picks
    bitmaps on AVX-512 (at batch 1): fc1 unstructured 50%, fc2 2:4 (per
    output, 2 of every 4 inputs), fc3 with
    K = 66 (4 segments of 16 rows, then 2 more) and an all-zero and a
    fully dense output."""
    def two_of_four(w):
        groups = w.reshape(-1, 4, w.shape[1])
        keep = np.argsort(-np.abs(groups), axis=1, kind="stable")[:, :2, :]
        mask = np.zeros_like(groups, dtype=bool)
        np.put_along_axis(mask, keep, True, axis=1)
        return (groups * mask).reshape(w.shape)
    w2 = two_of_four(rng.standard_normal((64, 32)).astype(np.float32) * 0.1)
    w3 = numpy_helper.to_array(pruned_weight("w3", (66, 16), 0.5)).copy()
    w3[:, 0] = 0
    w3[:, 1] = rng.standard_normal(66) * 0.1
    n = helper.make_node
    nodes = [n("MatMul", ["x", "w1"], ["h1"], name="fc1"),
             n("Relu", ["h1"], ["a1"], name="relu1"),
             n("MatMul", ["a1", "w2"], ["y"], name="fc2"),
             n("MatMul", ["x3", "w3"], ["y3"], name="fc3")]
    inits = [pruned_weight("w1", (128, 64), 0.5), numpy_helper.from_array(w2, "w2"),
             numpy_helper.from_array(w3, "w3")]
    return model(nodes, [tensor("x", [1, 128]), tensor("x3", [1, 66])],
                 [tensor("y", [1, 32]), tensor("y3", [1, 16])], inits), [(1, 128), (1, 66)]


def int8_sparse_mlp():
    """Mostly-zero weights for kiln's int8 sparse kernels (with
    --quantize=int8-dynamic, whose int8 weights keep the zeros): fc1 90%
    unstructured at batch 1 over K = 1024 (bitmaps) with an all-zero block
    of 16 outputs and a fully dense output; fc2 90% unstructured over
    K = 68 (17 groups of 4 rows: 4 segments of 4, then one more); mm3 a
    3-D input of 10 rows pruned in blocks of 16 outputs by 4 inputs (16x4
    blocks: 4 rows at a time, then 2)."""
    w1 = numpy_helper.to_array(pruned_weight("w1", (1024, 64), 0.9)).copy()
    w1[:, 0:16] = 0
    w1[:, 16] = rng.standard_normal(1024) * 0.1
    n = helper.make_node
    nodes = [n("MatMul", ["x", "w1"], ["y"], name="fc1"),
             n("MatMul", ["x2", "w2"], ["y2"], name="fc2"),
             n("MatMul", ["x3", "w3"], ["y3"], name="mm3")]
    inits = [numpy_helper.from_array(w1, "w1"), pruned_weight("w2", (68, 32), 0.9),
             pruned_weight("w3", (128, 48), 0.9, block=16, rows=4)]
    return model(nodes, [tensor("x", [1, 1024]), tensor("x2", [1, 68]), tensor("x3", [2, 5, 128])],
                 [tensor("y", [1, 64]), tensor("y2", [1, 32]), tensor("y3", [2, 5, 48])],
                 inits), [(1, 1024), (1, 68), (2, 5, 128)]


def sparse_pointwise():
    """A MobileNet-style block: 1x1 conv (90% zeros, bias) -> Relu ->
    depthwise 3x3 -> 1x1 conv (90% zeros, no bias), on a 10x10 image (100
    pixels: vectors of rows, the last one partial), with 256 channels: wide
    enough that the sparse kernel pays for the transposes around it."""
    def pruned_filter(name, f, c):
        w = numpy_helper.to_array(pruned_weight(name, (f, c), 0.9))
        return numpy_helper.from_array(w.reshape(f, c, 1, 1), name)
    n = helper.make_node
    nodes = [n("Conv", ["x", "w1", "b1"], ["h1"], name="pw1"),
             n("Relu", ["h1"], ["a1"], name="relu1"),
             n("Conv", ["a1", "dw"], ["h2"], name="dw", group=256, pads=[1, 1, 1, 1]),
             n("Conv", ["h2", "w2"], ["y"], name="pw2")]
    inits = [pruned_filter("w1", 256, 256), weight("b1", 256), weight("dw", 256, 1, 3, 3),
             pruned_filter("w2", 256, 256)]
    return model(nodes, [tensor("x", [1, 256, 10, 10])], [tensor("y", [1, 256, 10, 10])],
                 inits), [(1, 256, 10, 10)]


def prunable_mlp():
    """Four dense Gemm/MatMul layers (K divisible by 4 and 16) for
    --prune: the middle two are pruned, the first and last stay dense."""
    n = helper.make_node
    nodes = [n("Gemm", ["x", "w1", "b1"], ["h1"], name="fc1", transB=1),
             n("Relu", ["h1"], ["a1"], name="relu1"),
             n("MatMul", ["a1", "w2"], ["h2"], name="fc2"),
             n("Relu", ["h2"], ["a2"], name="relu2"),
             n("Gemm", ["a2", "w3", "b3"], ["h3"], name="fc3", transB=1),
             n("Relu", ["h3"], ["a3"], name="relu3"),
             n("MatMul", ["a3", "w4"], ["y"], name="fc4")]
    inits = [weight("w1", 128, 64), weight("b1", 128), weight("w2", 128, 128),
             weight("w3", 64, 128), weight("b3", 64), weight("w4", 64, 10)]
    return model(nodes, [tensor("x", [4, 64])], [tensor("y", [4, 10])], inits), [(4, 64)]


def outlier_mlp():
    """prunable_mlp behind a per-channel scale that makes 4 of its 64 input
    features 20x larger than the rest (as the outlier features of language
    models): what activation-aware pruning keeps and magnitude pruning does
    not see. Inputs are [16, 64] rows."""
    m, _ = prunable_mlp()
    scale = np.ones(64, np.float32)
    scale[[3, 17, 40, 58]] = 20
    g = m.graph
    g.node[0].input[0] = "xs"
    g.node.insert(0, helper.make_node("Mul", ["x", "s"], ["xs"], name="outliers"))
    g.initializer.append(numpy_helper.from_array(scale, "s"))
    g.input[0].type.tensor_type.shape.dim[0].dim_value = 16
    g.output[0].type.tensor_type.shape.dim[0].dim_value = 16
    return m, [(16, 64)]


def dead_channels():
    """A small CNN with a residual block, a depthwise branch, a concat, a
    per-channel scale and a classifier, in which a quarter of the output
    channels of every layer but the classifier are dead (zero filter and
    bias): channel pruning at 0.25 must remove exactly those and compute
    the same function."""
    n = helper.make_node

    def conv(name, out, inp, k, dead, group=1):
        w = (rng.standard_normal((out, inp // group, k, k)) * 0.3).astype(np.float32)
        b = (rng.standard_normal(out) * 0.1).astype(np.float32)
        w[dead], b[dead] = 0, 0
        return [numpy_helper.from_array(w, name + "_w"), numpy_helper.from_array(b, name + "_b")]

    residual = [1, 5, 9, 13]  # dead in the stem and in the block's second conv alike
    inits = (conv("stem", 16, 3, 3, residual) + conv("c1", 16, 16, 3, [0, 2, 4, 6]) +
             conv("c2", 16, 16, 3, residual) + conv("branch", 8, 16, 1, [3, 7]) +
             conv("dw", 8, 8, 3, [3, 7], group=8) + conv("head", 16, 24, 1, [2, 3, 10, 11]) +
             [weight("scale", 1, 24, 1, 1), weight("fc_w", 10, 16), weight("fc_b", 10)])
    pad = {"pads": [1, 1, 1, 1]}
    nodes = [n("Conv", ["x", "stem_w", "stem_b"], ["s"], name="stem", **pad),
             n("Relu", ["s"], ["a"], name="stem_relu"),
             n("Conv", ["a", "c1_w", "c1_b"], ["h1"], name="c1", **pad),
             n("Relu", ["h1"], ["a1"], name="c1_relu"),
             n("Conv", ["a1", "c2_w", "c2_b"], ["h2"], name="c2", **pad),
             n("Add", ["h2", "a"], ["sum"], name="residual"),
             n("Relu", ["sum"], ["r"], name="block_relu"),
             n("Conv", ["a", "branch_w", "branch_b"], ["h3"], name="branch"),
             n("Relu", ["h3"], ["a3"], name="branch_relu"),
             n("Conv", ["a3", "dw_w", "dw_b"], ["h4"], name="dw", group=8, **pad),
             n("Relu", ["h4"], ["a4"], name="dw_relu"),
             n("Concat", ["r", "a4"], ["cat"], name="concat", axis=1),
             n("Mul", ["cat", "scale"], ["scaled"], name="scale"),
             n("Conv", ["scaled", "head_w", "head_b"], ["h5"], name="head"),
             n("Relu", ["h5"], ["a5"], name="head_relu"),
             n("GlobalAveragePool", ["a5"], ["pooled"], name="pool"),
             n("Flatten", ["pooled"], ["flat"], name="flatten"),
             n("Gemm", ["flat", "fc_w", "fc_b"], ["y"], name="fc", transB=1)]
    return model(nodes, [tensor("x", [1, 3, 16, 16])], [tensor("y", [1, 10])], inits), [(1, 3, 16, 16)]



def normalized_rows():
    """Softmax, LogSoftmax and LayerNormalization along rows of 300 and 1000
    values (not multiples of a workgroup's threads; a run-time batch of x),
    and two that stay reductions: along a middle axis, and rows of 64."""
    n = helper.make_node
    nodes = [n("LayerNormalization", ["x", "s300", "b300"], ["ln"], name="ln", axis=-1, epsilon=1e-5),
             n("LayerNormalization", ["y", "s1000"], ["ln_nobias"], name="ln_nobias", axis=1),
             n("Softmax", ["x"], ["sm"], name="sm", axis=-1),
             n("LogSoftmax", ["y"], ["lsm"], name="lsm", axis=-1),
             n("Softmax", ["x"], ["sm_axis1"], name="sm_axis1", axis=1),
             n("Softmax", ["z"], ["sm_short"], name="sm_short", axis=-1)]
    inits = [weight("s300", 300, scale=1.0), weight("b300", 300), weight("s1000", 1000, scale=1.0)]
    outputs = [tensor("ln", ["N", 3, 300]), tensor("ln_nobias", [4, 1000]), tensor("sm", ["N", 3, 300]),
               tensor("lsm", [4, 1000]), tensor("sm_axis1", ["N", 3, 300]), tensor("sm_short", [6, 64])]
    return (model(nodes, [tensor("x", ["N", 3, 300]), tensor("y", [4, 1000]), tensor("z", [6, 64])],
                  outputs, inits), [(2, 3, 300), (4, 1000), (6, 64)])

def written_layer_norms():
    """Layer norms written out in ops, as exporters wrote them before
    LayerNormalization (opset 14): torch.onnx's and Paddle2ONNX's (Pow, Div,
    a scale and a bias) along rows of 300 of a run-time batch; Mul(c, c) and
    a Reciprocal without scale or bias along rows of 1000; and one over the
    last two dimensions with a [4, 16] scale."""
    n = helper.make_node
    nodes = []

    def layer_norm(x, out, axes, eps, pow_form, scale=None, bias=None):
        p = out + "_"
        nodes.extend([n("ReduceMean", [x], [p + "mean"], name=p + "mean", axes=axes),
                      n("Sub", [x, p + "mean"], [p + "c"], name=p + "center")])
        if pow_form:
            nodes.append(n("Pow", [p + "c", "two"], [p + "sq"], name=p + "square"))
        else:
            nodes.append(n("Mul", [p + "c", p + "c"], [p + "sq"], name=p + "square"))
        nodes.extend([n("ReduceMean", [p + "sq"], [p + "var"], name=p + "var", axes=axes),
                      n("Add", [p + "var", eps], [p + "ve"], name=p + "var_eps"),
                      n("Sqrt", [p + "ve"], [p + "std"], name=p + "std")])
        norm = p + "n" if scale or bias else out
        if pow_form:
            nodes.append(n("Div", [p + "c", p + "std"], [norm], name=p + "norm"))
        else:
            nodes.extend([n("Reciprocal", [p + "std"], [p + "inv"], name=p + "inv"),
                          n("Mul", [p + "inv", p + "c"], [norm], name=p + "norm")])
        if scale:
            nodes.append(n("Mul", [norm, scale], [out if not bias else p + "s"], name=p + "scale"))
        if bias:
            nodes.append(n("Add", [p + "s", bias], [out], name=p + "bias"))

    layer_norm("x", "torch_ln", [-1], "eps5", True, "g300", "b300")
    layer_norm("y", "plain_ln", [1], "eps3", False)
    layer_norm("z", "two_axes_ln", [-2, -1], "eps5", True, "g4x16")
    scalar = lambda name, v: numpy_helper.from_array(np.array(v, np.float32), name)
    inits = [weight("g300", 300, scale=1.0), weight("b300", 300), weight("g4x16", 4, 16, scale=1.0),
             scalar("two", 2.0), scalar("eps5", 1e-5), scalar("eps3", 1e-3)]
    outputs = [tensor("torch_ln", ["N", 3, 300]), tensor("plain_ln", [4, 1000]),
               tensor("two_axes_ln", [6, 4, 16])]
    m = model(nodes, [tensor("x", ["N", 3, 300]), tensor("y", [4, 1000]), tensor("z", [6, 4, 16])],
              outputs, inits, opset=14)
    return m, [(2, 3, 300), (4, 1000), (6, 4, 16)]

BUILDERS = {f.__name__: f for f in [modern, conv_7x7, split_k, conv_batch, residual_block, pooled_conv, conv_stage1, matmul, matmul_wide, matmul_small, matmul_1024, matmul_f16, matmul_f16_long, matmul_f16_wide, matmul_f16_dynamic, gemm_f16, gemm_f16_2of4, linear, conv_layer, int8_sparse_mlp, sparse_pointwise, sparse_mlp, half_sparse_mlp, prunable_mlp, outlier_mlp, dead_channels, sparse_initializer, unsorted, relu, unsupported, float_mod, dynamic, resize, mlp, amx_shapes, quant_linear, qdq_cnn, conv_integer, qlinear_conv, quantized_matmul, cnn, cnn_b1, cnn_dynamic, mlp_dynamic, dynamic_pad, dynamic_slice, dynamic_flatten, dynamic_resize, recurrent_dynamic, recurrent_lengths, mel_weights, roi_align, crop_and_resize, conv_transpose_3d, dynamic_add, dynamic_add_named, dynamic_rules, embedding_dynamic, transformer, transformer_dynamic, decoder_kv, normalized_rows, written_layer_norms,
                                        import_math, prelu_opset6, import_nn, conv_transpose_taps, import_tensor,
                                        shape_operands, window_operands]}

if __name__ == "__main__":
    name, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    m, input_shapes, *dtype = (BUILDERS | HOSTILE | gemm_benchmarks())[name]()
    if name not in HOSTILE | {"unsorted": 0} and m.ir_version <= 8 and m.opset_import[0].version <= 17:
        onnx.checker.check_model(m)  # python3-onnx is 1.12 too: it knows up to IR 8, opset 17
    onnx.save(m, os.path.join(out, "model.onnx"))
    for i, shape in enumerate(input_shapes):
        np.save(os.path.join(out, f"input_{i}.npy"), rng.standard_normal(shape).astype(dtype[0] if dtype else np.float32))
