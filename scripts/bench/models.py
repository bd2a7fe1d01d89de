#!/usr/bin/env python3
"""Writes the synthetic benchmark models (opset 17, random weights, fixed seed).

usage: models.py OUT_DIR
       models.py OUT_DIR --batch N --few-values MODEL...   (the GPU benchmark's)
  mlp         784-1024-1024-10 Gemm+Relu, batch 1
  resnet18    ResNet-18 (Conv+BatchNormalization+Relu, residual Add), 1x3x224x224
  bert2       2 BERT-base encoder layers at 1x128x768 (12 heads, Erf GELU, FFN 3072)
  matmul1024  1024x1024 @ constant 1024x1024
  mobilenet   MobileNet v1 (depthwise 3x3 + pointwise 1x1 Conv+BatchNormalization+Relu), 1x3x224x224
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(2026)


class Graph:
    """Accumulates nodes and initializers with generated unique names."""

    # Weights drawn from 8 values (times the layer's scale) instead of a
    # normal distribution: as fast to compute, but xz packs the files that
    # hold them (model, executables) about 10x, for the GPU machine.
    few_values = False

    def __init__(self):
        self.nodes, self.inits, self.count = [], [], 0

    def name(self, hint):
        self.count += 1
        return f"{hint}_{self.count}"

    def weight(self, hint, shape, scale=None):
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        scale = scale if scale is not None else 1.0 / np.sqrt(fan_in)
        name = self.name(hint)
        values = (rng.choice(np.arange(-7, 8, 2) / 4.0, shape) if Graph.few_values
                  else rng.standard_normal(shape))
        self.inits.append(numpy_helper.from_array((values * scale).astype(np.float32), name))
        return name

    def const(self, hint, values, dtype=np.float32):
        name = self.name(hint)
        self.inits.append(numpy_helper.from_array(np.array(values, dtype=dtype), name))
        return name

    def op(self, op_type, inputs, **attrs):
        out = self.name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out

    def model(self, inputs, outputs):
        graph = helper.make_graph(self.nodes, "bench", inputs, outputs, self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        onnx.checker.check_model(m)
        return m


def tensor(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def mlp():
    g = Graph()
    x = "x"
    for i, (n_in, n_out) in enumerate([(784, 1024), (1024, 1024), (1024, 10)]):
        x = g.op("Gemm", [x, g.weight("w", [n_out, n_in]), g.weight("b", [n_out], 0.01)], transB=1)
        if i < 2:
            x = g.op("Relu", [x])
    g.nodes[-1].output[0] = "y"
    return g.model([tensor("x", [1, 784])], [tensor("y", [1, 10])])


def conv_bn(g, x, c_in, c_out, k, stride, relu=True, group=1):
    y = g.op("Conv", [x, g.weight("conv", [c_out, c_in // group, k, k])], kernel_shape=[k, k],
             strides=[stride, stride], pads=[k // 2] * 4, group=group)
    scale = g.const("bn_scale", rng.uniform(0.5, 1.5, c_out))
    bias = g.const("bn_bias", rng.uniform(-0.1, 0.1, c_out))
    mean = g.const("bn_mean", rng.uniform(-0.1, 0.1, c_out))
    var = g.const("bn_var", rng.uniform(0.5, 1.5, c_out))
    y = g.op("BatchNormalization", [y, scale, bias, mean, var], epsilon=1e-5)
    return g.op("Relu", [y]) if relu else y


def resnet18(batch=1):
    g = Graph()
    x = conv_bn(g, "x", 3, 64, 7, 2)
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c_in = 64
    for c_out, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
        for block in range(2):
            s = stride if block == 0 else 1
            y = conv_bn(g, x, c_in, c_out, 3, s)
            y = conv_bn(g, y, c_out, c_out, 3, 1, relu=False)
            shortcut = x if (s == 1 and c_in == c_out) else conv_bn(g, x, c_in, c_out, 1, s, False)
            x = g.op("Relu", [g.op("Add", [y, shortcut])])
            c_in = c_out
    x = g.op("GlobalAveragePool", [x])
    x = g.op("Flatten", [x])
    g.op("Gemm", [x, g.weight("fc", [1000, 512]), g.weight("fc_b", [1000], 0.01)], transB=1)
    g.nodes[-1].output[0] = "y"
    return g.model([tensor("x", [batch, 3, 224, 224])], [tensor("y", [batch, 1000])])


def mobilenet():
    """MobileNet v1: 95% of its arithmetic is in the pointwise convolutions."""
    g = Graph()
    x = conv_bn(g, "x", 3, 32, 3, 2)
    c_in = 32
    for c_out, stride in [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + \
            [(512, 1)] * 5 + [(1024, 2), (1024, 1)]:
        x = conv_bn(g, x, c_in, c_in, 3, stride, group=c_in)
        x = conv_bn(g, x, c_in, c_out, 1, 1)
        c_in = c_out
    x = g.op("Flatten", [g.op("GlobalAveragePool", [x])])
    g.op("Gemm", [x, g.weight("fc", [1000, 1024]), g.weight("fc_b", [1000], 0.01)], transB=1)
    g.nodes[-1].output[0] = "y"
    return g.model([tensor("x", [1, 3, 224, 224])], [tensor("y", [1, 1000])])


def layer_norm(g, x, d):
    return g.op("LayerNormalization", [x, g.const("ln_g", np.ones(d)), g.const("ln_b", np.zeros(d))],
                axis=-1, epsilon=1e-12)


def encoder_layer(g, x, seq, d=768, heads=12, ffn=3072, batch=1):
    head_dim = d // heads
    split = g.const("heads_shape", [batch, seq, heads, head_dim], np.int64)
    merge = g.const("merge_shape", [batch, seq, d], np.int64)

    def projection(v):
        return g.op("Add", [g.op("MatMul", [v, g.weight("w", [d, d])]), g.weight("b", [d], 0.01)])

    def heads_first(v, perm):
        return g.op("Transpose", [g.op("Reshape", [v, split])], perm=perm)

    q = heads_first(projection(x), [0, 2, 1, 3])
    k = heads_first(projection(x), [0, 2, 3, 1])
    v = heads_first(projection(x), [0, 2, 1, 3])
    scores = g.op("Div", [g.op("MatMul", [q, k]), g.const("sqrt_dk", np.sqrt(head_dim))])
    context = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
    context = g.op("Reshape", [g.op("Transpose", [context], perm=[0, 2, 1, 3]), merge])
    x = layer_norm(g, g.op("Add", [x, projection(context)]), d)

    h = g.op("Add", [g.op("MatMul", [x, g.weight("w1", [d, ffn])]), g.weight("b1", [ffn], 0.01)])
    gelu = g.op("Mul", [g.op("Mul", [h, g.const("half", 0.5)]),
                        g.op("Add", [g.op("Erf", [g.op("Div", [h, g.const("sqrt2", np.sqrt(2))])]),
                                     g.const("one", 1.0)])])
    out = g.op("Add", [g.op("MatMul", [gelu, g.weight("w2", [ffn, d])]), g.weight("b2", [d], 0.01)])
    return layer_norm(g, g.op("Add", [x, out]), d)


def bert2(batch=1):
    g = Graph()
    x = "x"
    for _ in range(2):
        x = encoder_layer(g, x, 128, batch=batch)
    g.nodes[-1].output[0] = "y"
    return g.model([tensor("x", [batch, 128, 768])], [tensor("y", [batch, 128, 768])])


def matmul1024():
    g = Graph()
    g.op("MatMul", ["x", g.weight("w", [1024, 1024])])
    g.nodes[-1].output[0] = "y"
    return g.model([tensor("x", [1024, 1024])], [tensor("y", [1024, 1024])])


def attention4k():
    """Self-attention over 4096 tokens, 2 heads of 64, as exporters write it:
    its scores alone are 128 MiB (kiln fuses it into one flash-style kernel)."""
    g = Graph()
    kt = g.op("Transpose", ["k"], perm=[0, 1, 3, 2])
    scores = g.op("Mul", [g.op("MatMul", ["q", kt]), g.const("scale", 0.125)])
    g.op("MatMul", [g.op("Softmax", [scores], axis=-1), "v"])
    g.nodes[-1].output[0] = "y"
    shape = [1, 2, 4096, 64]
    return g.model([tensor(n, shape) for n in "qkv"], [tensor("y", shape)])


MODELS = {f.__name__: f for f in [mlp, resnet18, bert2, matmul1024, attention4k, mobilenet]}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        print(__doc__.strip(), file=sys.stderr if len(sys.argv) < 2 else sys.stdout)
        sys.exit(2 if len(sys.argv) < 2 else 0)
    unknown = [a for a in sys.argv[2:] if not a.startswith("-") and a not in MODELS
               and not a.isdigit()]
    if unknown:
        sys.exit(f"models.py: no model {', '.join(unknown)} (models: {', '.join(MODELS)})")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    if "--batch" in sys.argv:  # models.py OUT --batch N --few-values MODEL...
        batch = int(sys.argv[sys.argv.index("--batch") + 1])
        Graph.few_values = "--few-values" in sys.argv
        for name in [a for a in sys.argv[2:] if a in MODELS]:
            rng = np.random.default_rng(2026)  # the same weights at every batch
            onnx.save(MODELS[name](batch=batch), os.path.join(out, f"{name}-b{batch}.onnx"))
        sys.exit(0)
    for name, build in MODELS.items():
        path = os.path.join(out, f"{name}.onnx")
        if not os.path.exists(path):
            onnx.save(build(), path)
