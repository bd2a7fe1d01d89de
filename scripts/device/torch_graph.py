#!/usr/bin/env python3
"""An ONNX model as PyTorch runs it, for the GPU benchmark's baseline.

The GPU machine has PyTorch but maybe not the onnx package, so the graph
travels as data: `export` (here, with onnx) writes the nodes, the inputs
and the small constants as JSON, and the large initializers as an .npz that
models of several batch sizes share. `build` (there) turns that into a
function of its inputs made of one array library's operators: PyTorch's
(`TorchOps`, for eager and torch.compile) or numpy's (`NumpyOps`, which
checks the graph walk against onnxruntime where there is no PyTorch;
`Tf32NumpyOps` rounds the operands of matmuls and convolutions to tf32 as
the tensor cores do, for the expected outputs of --precision=tf32).

The operators are the synthetic benchmark models' (scripts/bench/models.py:
resnet18, bert2): Conv, BatchNormalization, Relu, MaxPool,
GlobalAveragePool, Flatten, Gemm, MatMul, Add, Sub, Mul, Div, Reshape,
Transpose, Softmax, LayerNormalization, Erf. Another is an error naming it.

  torch_graph.py export MODEL.onnx OUT.json [--weights W.npz | --shared-weights W.npz]
  torch_graph.py check OUT.json INPUT.npy... EXPECTED_DIR      (numpy)
  torch_graph.py run [--tf32] OUT.json INPUT.npy... OUTPUT_DIR  (numpy)
"""
import json
import math
import os
import sys

import numpy as np

SMALL = 64  # initializers of at most this many elements travel in the JSON


def export(onnx_path, json_path, weights_path=None, write_weights=True):
    """Writes the graph of `onnx_path` to `json_path` and its large
    initializers to `weights_path`, or only names that file (a model of
    another batch size wrote the same weights there)."""
    import onnx
    from onnx import numpy_helper
    model = onnx.load(onnx_path)
    g = model.graph
    consts, weights = {}, {}
    for init in g.initializer:
        value = numpy_helper.to_array(init)
        if value.size <= SMALL:
            consts[init.name] = {"dtype": str(value.dtype), "shape": list(value.shape),
                                 "data": value.ravel().tolist()}
        else:
            weights[init.name] = value
    nodes = [{"op": n.op_type, "inputs": list(n.input), "outputs": list(n.output),
              "attrs": {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}}
             for n in g.node]
    for node in nodes:  # bytes (string attributes) are not JSON
        node["attrs"] = {k: v.decode() if isinstance(v, bytes) else v for k, v in node["attrs"].items()}
    inputs = [{"name": i.name, "shape": [d.dim_value for d in i.type.tensor_type.shape.dim]}
              for i in g.input if i.name not in consts and i.name not in weights]
    graph = {"inputs": inputs, "outputs": [o.name for o in g.output], "nodes": nodes,
             "consts": consts, "weights": os.path.relpath(weights_path, os.path.dirname(json_path))
             if weights_path else None}
    with open(json_path, "w") as f:
        json.dump(graph, f)
    if weights_path and write_weights:
        np.savez(weights_path, **weights)


def load(json_path):
    """(graph, {name: numpy array} of its initializers)."""
    with open(json_path) as f:
        graph = json.load(f)
    values = {name: np.array(c["data"], dtype=c["dtype"]).reshape(c["shape"])
              for name, c in graph["consts"].items()}
    if graph["weights"]:
        with np.load(os.path.join(os.path.dirname(json_path), graph["weights"])) as w:
            values.update({name: w[name] for name in w.files})
    return graph, values


def symmetric_pads(attrs, rank):
    pads = attrs.get("pads", [0] * (2 * rank))
    if pads[:rank] != pads[rank:]:
        raise ValueError("asymmetric pads %s" % pads)
    return pads[:rank]


def run_node(ops, node, args, shape_of):
    """The outputs of ONNX node `node` on `args` with library `ops`;
    `shape_of(name)` is a constant input's value as a list of ints
    (Reshape's shape)."""
    op, a = node["op"], node["attrs"]
    if op == "Conv":
        return ops.conv2d(args[0], args[1], args[2] if len(args) > 2 else None,
                          a.get("strides", [1, 1]), symmetric_pads(a, 2),
                          a.get("dilations", [1, 1]), a.get("group", 1))
    if op == "BatchNormalization":
        return ops.batch_norm(*args[:5], a.get("epsilon", 1e-5))
    if op == "MaxPool":
        return ops.max_pool2d(args[0], a["kernel_shape"], a.get("strides", [1, 1]),
                              symmetric_pads(a, 2))
    if op == "GlobalAveragePool":
        return ops.global_avg_pool(args[0])
    if op == "Flatten":
        return ops.flatten(args[0], a.get("axis", 1))
    if op == "Gemm":
        x, w = args[0], args[1]
        if a.get("transA", 0):
            x = ops.transpose2d(x)
        if a.get("transB", 0):
            w = ops.transpose2d(w)
        y = ops.matmul(x, w) * a.get("alpha", 1.0)
        return y + args[2] * a.get("beta", 1.0) if len(args) > 2 else y
    if op == "MatMul":
        return ops.matmul(args[0], args[1])
    if op in ("Add", "Sub", "Mul", "Div"):
        x, y = args
        return {"Add": lambda: x + y, "Sub": lambda: x - y, "Mul": lambda: x * y,
                "Div": lambda: x / y}[op]()
    if op == "Relu":
        return ops.relu(args[0])
    if op == "Erf":
        return ops.erf(args[0])
    if op == "Reshape":
        return ops.reshape(args[0], shape_of(node["inputs"][1]))
    if op == "Transpose":
        return ops.permute(args[0], a["perm"])
    if op == "Softmax":
        return ops.softmax(args[0], a.get("axis", -1))
    if op == "LayerNormalization":
        if a.get("axis", -1) != -1:
            raise ValueError("LayerNormalization over axis %d" % a["axis"])
        return ops.layer_norm(args[0], args[1], args[2], a.get("epsilon", 1e-5))
    raise ValueError("no %s in the benchmark's PyTorch graph" % op)


def build(graph, values, ops):
    """A function of the graph's inputs (in order) returning its outputs,
    and the constants as `ops` holds them (to keep alive, or register)."""
    tensors = {name: ops.constant(v) for name, v in values.items()}
    # Integer constants as Python lists, so that the function torch.compile
    # traces computes no shape with numpy.
    shapes = {name: [int(d) for d in v.ravel()] for name, v in values.items()
              if v.dtype.kind in "iu" and v.size <= SMALL}

    def forward(*inputs):
        env = dict(tensors)
        env.update(zip((i["name"] for i in graph["inputs"]), inputs))
        for node in graph["nodes"]:
            args = [env[name] for name in node["inputs"] if name]
            env[node["outputs"][0]] = run_node(ops, node, args, shapes.__getitem__)
        return [env[name] for name in graph["outputs"]]

    return forward, tensors


class NumpyOps:
    """The operators in numpy (float32), for checking the graph walk."""

    constant = staticmethod(lambda v: v)
    relu = staticmethod(lambda x: np.maximum(x, 0))
    erf = staticmethod(np.vectorize(math.erf, otypes=[np.float32]))
    matmul = staticmethod(np.matmul)
    reshape = staticmethod(lambda x, s: x.reshape(s))
    permute = staticmethod(lambda x, p: x.transpose(p))
    transpose2d = staticmethod(lambda x: x.T)
    flatten = staticmethod(lambda x, axis: x.reshape(int(np.prod(x.shape[:axis])), -1))
    global_avg_pool = staticmethod(lambda x: x.mean(axis=(2, 3), keepdims=True))

    @staticmethod
    def softmax(x, axis):
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)

    @staticmethod
    def layer_norm(x, scale, bias, eps):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + eps) * scale + bias

    @staticmethod
    def batch_norm(x, scale, bias, mean, var, eps):
        c = (1, -1, 1, 1)
        return (x - mean.reshape(c)) / np.sqrt(var.reshape(c) + eps) * scale.reshape(c) + \
            bias.reshape(c)

    @staticmethod
    def _windows(x, k, stride, pad, fill):
        """[N, C, OH, OW, KH, KW] views of x padded with `fill`."""
        x = np.pad(x, ((0, 0), (0, 0), (pad[0],) * 2, (pad[1],) * 2), constant_values=fill)
        n, c, h, w = x.shape
        oh, ow = (h - k[0]) // stride[0] + 1, (w - k[1]) // stride[1] + 1
        s = x.strides
        return np.lib.stride_tricks.as_strided(
            x, (n, c, oh, ow, k[0], k[1]),
            (s[0], s[1], s[2] * stride[0], s[3] * stride[1], s[2], s[3]))

    @classmethod
    def max_pool2d(cls, x, k, stride, pad):
        return cls._windows(x, k, stride, pad, -np.inf).max(axis=(4, 5))

    @classmethod
    def conv2d(cls, x, w, b, stride, pad, dilation, group):
        if dilation != [1, 1] or group != 1:
            raise ValueError("numpy conv2d: dilation or groups")
        win = cls._windows(x, w.shape[2:], stride, pad, 0.0)
        y = np.einsum("nchwij,fcij->nfhw", win, w, optimize=True)
        return y + b.reshape(1, -1, 1, 1) if b is not None else y


def tf32(x):
    """`x` rounded to tf32 as cvt.rna.tf32.f32 does: to nearest, ties away
    from zero, 10 bits of mantissa (f32 with the low 13 bits clear)."""
    bits = np.asarray(x, np.float32).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


class Tf32NumpyOps(NumpyOps):
    """NumpyOps whose matmuls and convolutions multiply tf32 roundings of
    their operands and sum in f64 (then f32): kiln's --precision=tf32."""

    @staticmethod
    def matmul(x, y):
        return np.matmul(tf32(x).astype(np.float64), tf32(y).astype(np.float64)).astype(np.float32)

    @classmethod
    def conv2d(cls, x, w, b, stride, pad, dilation, group):
        y = super().conv2d(tf32(x).astype(np.float64), tf32(w).astype(np.float64), None, stride,
                           pad, dilation, group).astype(np.float32)
        return y + b.reshape(1, -1, 1, 1) if b is not None else y


class TorchOps:
    """The operators in PyTorch, on `device`, constants in `dtype`."""

    def __init__(self, device, dtype):
        import torch
        import torch.nn.functional as F
        self.torch, self.F, self.device, self.dtype = torch, F, device, dtype

    def constant(self, v):
        t = self.torch.from_numpy(np.ascontiguousarray(v)).to(self.device)
        return t.to(self.dtype) if t.is_floating_point() else t

    def relu(self, x):
        return self.F.relu(x)

    def erf(self, x):
        return self.torch.erf(x)

    def matmul(self, x, y):
        return self.torch.matmul(x, y)

    def reshape(self, x, shape):
        return x.reshape(shape)

    def permute(self, x, perm):
        return x.permute(*perm)

    def transpose2d(self, x):
        return x.t()

    def flatten(self, x, axis):
        return self.torch.flatten(x, axis)

    def global_avg_pool(self, x):
        return self.F.adaptive_avg_pool2d(x, 1)

    def softmax(self, x, axis):
        return self.torch.softmax(x, dim=axis)

    def layer_norm(self, x, scale, bias, eps):
        return self.F.layer_norm(x, (x.shape[-1],), scale, bias, eps)

    def batch_norm(self, x, scale, bias, mean, var, eps):
        return self.F.batch_norm(x, mean, var, scale, bias, False, 0.0, eps)

    def max_pool2d(self, x, k, stride, pad):
        return self.F.max_pool2d(x, k, stride, pad)

    def conv2d(self, x, w, b, stride, pad, dilation, group):
        return self.F.conv2d(x, w, b, stride, pad, dilation, group)


def run(json_path, input_paths, output_dir, ops=NumpyOps):
    """Runs the graph with `ops` on the inputs; writes OUTPUT.npy per output."""
    graph, values = load(json_path)
    forward, _ = build(graph, values, ops)
    os.makedirs(output_dir, exist_ok=True)
    for name, value in zip(graph["outputs"], forward(*[np.load(p) for p in input_paths])):
        np.save(os.path.join(output_dir, name + ".npy"), value)


def check(json_path, input_paths, expected_dir, rtol=1e-3, atol=1e-4):
    """Runs the graph with numpy on the inputs; None if its outputs match
    the .npy files of `expected_dir` (by output name), else why not."""
    graph, values = load(json_path)
    forward, _ = build(graph, values, NumpyOps)
    outputs = forward(*[np.load(p) for p in input_paths])
    for name, got in zip(graph["outputs"], outputs):
        want = np.load(os.path.join(expected_dir, name + ".npy"))
        if got.shape != want.shape or not np.allclose(got, want, rtol=rtol, atol=atol):
            return "%s: max abs error %.3g" % (name, np.abs(got - want).max())
    return None


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "export":
        flag = next((f for f in ("--weights", "--shared-weights") if f in sys.argv), None)
        weights = sys.argv[sys.argv.index(flag) + 1] if flag else None
        export(sys.argv[2], sys.argv[3], weights, flag == "--weights")
    elif len(sys.argv) >= 5 and sys.argv[1] == "run":
        args = [a for a in sys.argv[2:] if a != "--tf32"]
        run(args[0], args[1:-1], args[-1], Tf32NumpyOps if "--tf32" in sys.argv else NumpyOps)
    elif len(sys.argv) >= 5 and sys.argv[1] == "check":
        why = check(sys.argv[2], sys.argv[3:-1], sys.argv[-1])
        print(why or "ok")
        sys.exit(1 if why else 0)
    else:
        sys.exit(__doc__)
