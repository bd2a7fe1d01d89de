#!/usr/bin/env python3
"""Re-exports an ONNX model at a newer default-domain opset, as today's
exporters would write it: every node whose signature changed between the
model's opset and the target is rewritten to the target's form, and the IR
version is raised to the one that opset needs.

  upgrade_opset.py IN.onnx OUT.onnx [--opset 21]

The rewrites (subgraphs included):
  Slice < 10, Pad < 11, Clip < 11: attributes become inputs;
  Squeeze, Unsqueeze, Split, ReduceSum < 13, other Reduce* < 18: axes and
  split become inputs; Split gets num_outputs at 18 when it splits evenly;
  Softmax, LogSoftmax, Hardmax < 13 (which flattened the input at `axis`):
  kept when the axis is the last, else Flatten, the op on axis 1, Reshape.
An op whose signature changed in a way not listed is refused by name, so a
model is never silently re-exported with a different meaning.
"""
import argparse
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

# The IR version each opset was released with (onnx/helper.py VERSION_TABLE).
IR_FOR_OPSET = {18: 8, 19: 9, 20: 9, 21: 10, 22: 10, 23: 11, 24: 11, 25: 12, 26: 12, 27: 13}

# Since-versions of default-domain ops whose inputs or attributes changed in
# ways the rewrites below do not cover; a model using one of them at an older
# version is refused.
UNCOVERED = {"Upsample": 10, "Resize": 11, "Scatter": 11, "TopK": 10, "Dropout": 12,
             "BatchNormalization": 9, "Scan": 9, "Reshape": 5, "Add": 7, "Sub": 7, "Mul": 7,
             "Div": 7, "Gemm": 7}

REDUCE = {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
          "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}


def pinned(model):
    """A copy of model whose symbolic input dimensions are 32: with data
    propagation, shape inference then follows shapes computed at run time
    (Shape, Concat, Reshape) and knows every rank (which do not depend on
    the sizes)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for vi in copy.graph.input:
        for d in vi.type.tensor_type.shape.dim:
            if not d.HasField("dim_value"):
                d.dim_value = 32
    return copy


class Upgrader:
    def __init__(self, model, target):
        self.source = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
        self.target = target
        inferred = shape_inference.infer_shapes(pinned(model), data_prop=True)
        self.ranks = {}
        self.types = {}
        for vi in list(inferred.graph.value_info) + list(inferred.graph.input) + \
                list(inferred.graph.output):
            t = vi.type.tensor_type
            self.types[vi.name] = t.elem_type
            if t.HasField("shape"):
                self.ranks[vi.name] = len(t.shape.dim)
        for init in inferred.graph.initializer:
            self.types[init.name] = init.data_type
            self.ranks[init.name] = len(init.dims)
        self.count = 0

    def fresh(self, base):
        self.count += 1
        return f"{base}__opset{self.target}_{self.count}"

    def constant(self, graph, base, values, dtype=np.int64):
        name = self.fresh(base)
        graph.initializer.append(numpy_helper.from_array(np.array(values, dtype), name))
        return name

    def upgrade_graph(self, graph):
        nodes = []
        for node in graph.node:
            for a in node.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    self.upgrade_graph(a.g)
                for g in a.graphs:
                    self.upgrade_graph(g)
            nodes += self.upgrade_node(graph, node)
        del graph.node[:]
        graph.node.extend(nodes)

    def take(self, node, name):
        """Removes attribute `name` from node; its value or None."""
        for i, a in enumerate(node.attribute):
            if a.name == name:
                value = helper.get_attribute_value(a)
                del node.attribute[i]
                return value
        return None

    def set_input(self, node, index, name):
        while len(node.input) < index:
            node.input.append("")
        if len(node.input) == index:
            node.input.append(name)
        else:
            node.input[index] = name

    def upgrade_node(self, graph, node):
        if node.domain not in ("", "ai.onnx"):
            return [node]
        op, src = node.op_type, self.source
        if op in UNCOVERED and src < UNCOVERED[op]:
            sys.exit(f"upgrade_opset: {op} changed at opset {UNCOVERED[op]} in a way this "
                     f"script does not rewrite (node '{node.name}', model opset {src})")
        if op == "Slice" and src < 10:
            for i, attr in enumerate(["starts", "ends", "axes"], start=1):
                values = self.take(node, attr)
                if values is not None:
                    self.set_input(node, i, self.constant(graph, node.name + "_" + attr, values))
        elif op == "Pad" and src < 11:
            pads, value = self.take(node, "pads"), self.take(node, "value")
            self.set_input(node, 1, self.constant(graph, node.name + "_pads", pads))
            if value:
                self.set_input(node, 2, self.scalar_like(graph, node, value))
        elif op == "Clip" and src < 11:
            lo, hi = self.take(node, "min"), self.take(node, "max")
            self.set_input(node, 1, self.scalar_like(graph, node, -3.4028234663852886e38
                                                     if lo is None else lo))
            if hi is not None:
                self.set_input(node, 2, self.scalar_like(graph, node, hi))
        elif (op in ("Squeeze", "Unsqueeze") and src < 13) or \
                (op == "ReduceSum" and src < 13) or (op in REDUCE and self.target >= 18 > src):
            axes = self.take(node, "axes")
            if axes is not None:
                self.set_input(node, 1, self.constant(graph, node.name + "_axes", axes))
        elif op == "Split":
            if src < 13:
                split = self.take(node, "split")
                if split is not None:
                    self.set_input(node, 1, self.constant(graph, node.name + "_split", split))
            if self.target >= 18 > src and (len(node.input) < 2 or not node.input[1]):
                node.attribute.append(helper.make_attribute("num_outputs", len(node.output)))
        elif op in ("Softmax", "LogSoftmax", "Hardmax") and src < 13:
            return self.upgrade_softmax(node)
        return [node]

    def scalar_like(self, graph, node, value):
        """A scalar initializer with the element type of node's input 0."""
        dtype = onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[self.types.get(node.input[0], 1)]
        return self.constant(graph, node.name + "_scalar", value, dtype)

    def upgrade_softmax(self, node):
        axis = self.take(node, "axis")
        axis = 1 if axis is None else axis
        rank = self.ranks.get(node.input[0])
        if rank is not None and axis % rank == rank - 1:
            node.attribute.append(helper.make_attribute("axis", -1))
            return [node]
        # Before 13 the op worked on the input flattened at `axis`.
        x, y = node.input[0], node.output[0]
        shape, flat, out = self.fresh("shape"), self.fresh("flat"), self.fresh("out")
        op = helper.make_node(node.op_type, [flat], [out], name=node.name, axis=1)
        return [helper.make_node("Shape", [x], [shape], name=node.name + "_shape"),
                helper.make_node("Flatten", [x], [flat], name=node.name + "_flatten", axis=axis),
                op,
                helper.make_node("Reshape", [out, shape], [y], name=node.name + "_reshape")]


def upgrade(model, target):
    up = Upgrader(model, target)
    if up.source >= target:
        sys.exit(f"upgrade_opset: the model is at opset {up.source}, not below {target}")
    up.upgrade_graph(model.graph)
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = target
    model.ir_version = max(model.ir_version, IR_FOR_OPSET[target])
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--opset", type=int, default=21, choices=sorted(IR_FOR_OPSET))
    args = parser.parse_args()
    model = upgrade(onnx.load(args.input), args.opset)
    onnx.save(model, args.output)
    print(f"{args.output}: opset {args.opset}, IR {model.ir_version}")


if __name__ == "__main__":
    main()
