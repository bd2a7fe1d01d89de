#!/usr/bin/env python3
"""Models with an If whose condition is known only at run time, checked
against onnxruntime (the runner is data_dependent.py's).

  runtime_if.py make DIR    # DIR/NAME.onnx and DIR/NAME/setK/<input>.npy
  runtime_if.py check DIR   # compiles each with no flags, runs every input
                            # set through kiln and onnxruntime, compares

The input sets of each model take every branch of its Ifs.
"""
import sys

import numpy as np
from onnx import TensorProto as T, helper as h

import data_dependent as dd

rng = np.random.default_rng(5)


def const(name, values):
    return h.make_node("Constant", [], [name], value=h.make_tensor(
        name, T.INT64, [len(values)], values))


def dim_is_one(tensor, axis, out):
    """Nodes computing out = (Shape(tensor)[axis] == 1), as exporters write
    the guard of `x.squeeze(axis)`."""
    p = f"{out}_"
    return [h.make_node("Shape", [tensor], [p + "shape"]),
            h.make_node("Constant", [], [p + "axis"], value=h.make_tensor(p, T.INT64, [], [axis])),
            h.make_node("Gather", [p + "shape", p + "axis"], [p + "dim"]),
            h.make_node("Constant", [], [p + "one"], value=h.make_tensor(p, T.INT64, [], [1])),
            h.make_node("Equal", [p + "dim", p + "one"], [out])]


def squeeze_or_identity(name, x, axis, out):
    """If(Shape(x)[axis] == 1, Squeeze(x, axis), Identity(x)): the branches
    give different ranks."""
    then = h.make_graph([const(name + "_axes", [axis]),
                         h.make_node("Squeeze", [x, name + "_axes"], [name + "_sq"])],
                        name + "_then", [], [dd.vi(name + "_sq", T.FLOAT, None)])
    other = h.make_graph([h.make_node("Identity", [x], [name + "_id"])], name + "_else", [],
                         [dd.vi(name + "_id", T.FLOAT, None)])
    return dim_is_one(x, axis, name + "_cond") + [
        h.make_node("If", [name + "_cond"], [out], name=name, then_branch=then,
                    else_branch=other)]


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def cases():
    out = {}
    # Branches of different sizes: Concat(x, x) or ReduceMax(x) kept as
    # [1]; the If's output has a dynamic size.
    then = h.make_graph([h.make_node("Concat", ["x", "x"], ["twice"], axis=0)], "then", [],
                        [dd.vi("twice", T.FLOAT, None)])
    other = h.make_graph([h.make_node("ReduceMax", ["x"], ["largest"], keepdims=1)], "else", [],
                         [dd.vi("largest", T.FLOAT, None)])
    out["sizes"] = (dd.model([
        h.make_node("ReduceSum", ["x"], ["sum"], keepdims=0),
        h.make_node("Constant", [], ["zero"], value=h.make_tensor("z", T.FLOAT, [], [0.0])),
        h.make_node("Greater", ["sum", "zero"], ["positive"]),
        h.make_node("If", ["positive"], ["picked"], name="pick", then_branch=then,
                    else_branch=other),
        h.make_node("Neg", ["picked"], ["y"])],
        [dd.vi("x", T.FLOAT, ["n"])], [("y", T.FLOAT)]),
        [{"x": np.abs(f32(5))}, {"x": -np.abs(f32(7))}, {"x": np.abs(f32(2))}])
    # Silero VAD's pattern: x.squeeze(1) guarded by Shape(x)[1] == 1, then a
    # Gemm that only takes the squeezed rank, then the batch axis squeezed
    # the same way when it is 1 and a Reshape that restores [batch, 4].
    w = h.make_tensor("w", T.FLOAT, [8, 4], f32(8, 4).ravel())
    out["squeeze_guards"] = (dd.model(
        squeeze_or_identity("time", "x", 1, "frames") +
        [h.make_node("Gemm", ["frames", "w"], ["proj"], name="proj"),
         h.make_node("Tanh", ["proj"], ["act"])] +
        squeeze_or_identity("batch", "act", 0, "act1") +
        [const("rows", [-1, 4]), h.make_node("Reshape", ["act1", "rows"], ["y"])],
        [dd.vi("x", T.FLOAT, ["b", "t", 8])], [("y", T.FLOAT)], [w]),
        [{"x": f32(1, 1, 8)}, {"x": f32(3, 1, 8)}])
    return out


if __name__ == "__main__":
    commands = {"make": lambda d: dd.make(d, cases()), "check": dd.check}
    if len(sys.argv) != 3 or sys.argv[1] not in commands:
        sys.exit(__doc__)
    sys.exit(commands[sys.argv[1]](sys.argv[2]))
