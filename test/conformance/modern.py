#!/usr/bin/env python3
"""The opset 18-27 conformance suite: one small model per new or changed op.

There is no ONNX backend test data past opset 17 on Debian 12 (libonnx 1.12),
so this writes its own: each case below is a one-node model written with
python3-onnx's helper (which writes any opset number) plus its inputs, and
the expected outputs come from onnxruntime-node 1.30, the reference the e2e
tests use. The layout is the backend test data's (NAME/model.onnx,
NAME/test_data_set_0/{input,output}_N.pb), so run.py runs it like the other
suites. onnxruntime 1.30 runs opsets up to 26; opset 27 cases have no
reference and are not written.

  test/conformance/modern.py OUT_DIR              # every case (run.py does this)
  test/conformance/modern.py --model NAME FILE    # one case's model, no reference
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ORT_RUN = os.path.join(ROOT, "test", "inputs", "ort_run.js")
NODE_PATH = os.path.join(ROOT, ".cache", "npm", "node_modules")

INT4, UINT4 = 22, 21  # TensorProto codes libonnx 1.12 does not name

rng = np.random.default_rng(18)


class In:
    """A graph input fed at run time."""
    def __init__(self, array):
        self.array = np.asarray(array)


class Const:
    """An initializer. `dtype` overrides the stored element type (int4)."""
    def __init__(self, array, dtype=None):
        self.array = np.asarray(array)
        self.dtype = dtype


def rand(*shape, lo=-1.0, hi=1.0, dtype=np.float32):
    return rng.uniform(lo, hi, shape).astype(dtype)


def ints(*shape, lo=-8, hi=8, dtype=np.int32):
    return rng.integers(lo, hi, shape).astype(dtype)


def packed_int4(values, signed):
    """ONNX stores 4-bit integers two per byte, the first in the low nibble."""
    flat = np.asarray(values).astype(np.int64).ravel() & 0xF
    if flat.size % 2:
        flat = np.append(flat, 0)
    return (flat[0::2] | (flat[1::2] << 4)).astype(np.uint8).tobytes()


def initializer(name, c):
    if c.dtype in (INT4, UINT4):
        return onnx.TensorProto(name=name, data_type=c.dtype, dims=c.array.shape,
                                raw_data=packed_int4(c.array, c.dtype == INT4))
    return numpy_helper.from_array(c.array, name)


CASES = {}


def case(name, opset, op, args, outputs=1, out_types=None, **attrs):
    """A one-node model NAME at `opset`. `args` are In, Const or None (an
    omitted optional input); outputs take the first argument's element type
    unless `out_types` (TensorProto codes) says otherwise."""
    names, inputs, inits, feeds = [], [], [], []
    for i, arg in enumerate(args):
        if arg is None:
            names.append("")
            continue
        arg_name = f"{'x' if isinstance(arg, In) else 'c'}{i}"
        names.append(arg_name)
        if isinstance(arg, In):
            code = onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[arg.array.dtype]
            inputs.append(helper.make_tensor_value_info(arg_name, code, arg.array.shape))
            feeds.append(arg.array)
        else:
            inits.append(initializer(arg_name, arg))
    first = next(a for a in args if a is not None)
    default = first.dtype if isinstance(first, Const) and first.dtype else \
        onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[first.array.dtype]
    types = out_types or [default] * outputs
    outs = [f"y{i}" for i in range(outputs)]
    node = helper.make_node(op, names, outs, name=name, **attrs)
    graph = helper.make_graph([node], name, inputs,
                              [helper.make_tensor_value_info(o, t, None) for o, t in zip(outs, types)],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    CASES[name] = (model, feeds)


def define_cases():
    x345 = rand(3, 4, 5, lo=0.1, hi=2.0)
    # Reduce*-18: axes as an input, noop_with_empty_axes; ReduceMax/Min-20: bool.
    for op in ["ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
               "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare"]:
        case(f"{op}_18_axes_input", 18, op, [In(x345), Const(np.array([-1, 0], np.int64))],
             keepdims=0)
    case("ReduceMean_18_noop_empty_axes", 18, "ReduceMean", [In(x345)], noop_with_empty_axes=1)
    case("ReduceSum_18_empty_axes_all", 18, "ReduceSum", [In(x345), Const(np.zeros(0, np.int64))])
    case("ReduceMax_20_bool", 20, "ReduceMax", [In(ints(3, 4, lo=0, hi=2).astype(bool)),
                                                 Const(np.array([1], np.int64))])
    case("ReduceMin_20_bool", 20, "ReduceMin", [In(ints(3, 4, lo=0, hi=2).astype(bool)),
                                                 Const(np.array([0], np.int64))], keepdims=0)
    # Pad-18 axes, Pad-19 wrap.
    x1245 = rand(1, 2, 4, 5)
    case("Pad_18_axes_reflect", 18, "Pad", [In(x1245), Const(np.array([1, 2, 2, 1], np.int64)),
                                             None, Const(np.array([2, -1], np.int64))],
         mode="reflect")
    case("Pad_18_axes_constant", 18, "Pad", [In(x1245), Const(np.array([0, 1, 1, 0], np.int64)),
                                              Const(np.array(1.5, np.float32)),
                                              Const(np.array([1, 3], np.int64))])
    case("Pad_19_wrap", 19, "Pad", [In(rand(3, 5)), Const(np.array([1, 2, 2, 3], np.int64))],
         mode="wrap")
    case("Pad_19_wrap_4d_axes", 19, "Pad", [In(x1245), Const(np.array([3, 1, 2, 4], np.int64)),
                                             None, Const(np.array([2, 3], np.int64))],
         mode="wrap")
    case("Pad_18_negative_crop", 18, "Pad", [In(x1245), Const(np.array([0, 0, -1, 2, 0, 0, 1, -2],
                                                                        np.int64))])
    case("Pad_21_edge", 21, "Pad", [In(x1245), Const(np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64))],
         mode="edge")
    # Split-18 num_outputs (the last chunk is smaller).
    case("Split_18_num_outputs", 18, "Split", [In(rand(2, 7))], outputs=3, axis=1, num_outputs=3)
    # Resize-18/19.
    img = rand(1, 1, 8, 8)
    case("Resize_18_antialias_linear", 18, "Resize",
         [In(img), None, Const(np.array([1, 1, 0.5, 0.5], np.float32))], mode="linear",
         antialias=1)
    case("Resize_18_antialias_cubic", 18, "Resize",
         [In(img), None, Const(np.array([1, 1, 0.6, 0.6], np.float32))], mode="cubic",
         antialias=1)
    case("Resize_18_antialias_cubic_exclude_align", 18, "Resize",
         [In(rand(1, 2, 7, 6)), None, Const(np.array([1, 1, 0.6, 1.5], np.float32))],
         mode="cubic", antialias=1, exclude_outside=1,
         coordinate_transformation_mode="align_corners")
    case("Resize_18_antialias_linear_sizes", 18, "Resize",
         [In(rand(2, 9, 10)), None, None, Const(np.array([2, 4, 13], np.int64))],
         mode="linear", antialias=1, coordinate_transformation_mode="asymmetric")
    case("Resize_18_axes_scales", 18, "Resize",
         [In(img), None, Const(np.array([0.5, 1.5], np.float32))], mode="linear",
         axes=[2, 3])
    case("Resize_18_not_larger", 18, "Resize",
         [In(img), None, None, Const(np.array([4, 6], np.int64))], mode="nearest",
         axes=[2, 3], keep_aspect_ratio_policy="not_larger")
    case("Resize_18_not_smaller", 18, "Resize",
         [In(img), None, None, Const(np.array([4, 6], np.int64))], mode="linear",
         axes=[2, 3], keep_aspect_ratio_policy="not_smaller")
    case("Resize_19_half_pixel_symmetric", 19, "Resize",
         [In(img), None, Const(np.array([1, 1, 1.7, 0.6], np.float32))], mode="linear",
         coordinate_transformation_mode="half_pixel_symmetric")
    # ScatterElements/ScatterND-18: max and min.
    for red in ["max", "min"]:
        case(f"ScatterElements_18_{red}", 18, "ScatterElements",
             [In(rand(3, 4)), Const(np.array([[1, 0, 1], [2, 2, 0]], np.int64)), In(rand(2, 3))],
             axis=0, reduction=red)
        case(f"ScatterND_18_{red}", 18, "ScatterND",
             [In(rand(4, 3)), Const(np.array([[1], [3], [1]], np.int64)), In(rand(3, 3))],
             reduction=red)
    # Pools.
    x177 = rand(1, 2, 7, 7)
    case("LpPool_18_ceil_mode", 18, "LpPool", [In(x177)], kernel_shape=[2, 2], strides=[2, 2],
         ceil_mode=1, p=2)
    case("LpPool_18_dilations", 18, "LpPool", [In(x177)], kernel_shape=[2, 2],
         dilations=[2, 2], p=3)
    case("LpPool_18_1d_pads", 18, "LpPool", [In(rand(1, 3, 9))], kernel_shape=[3], pads=[1, 1],
         p=1)
    case("AveragePool_19_dilations_exclude_pad", 19, "AveragePool", [In(x177)],
         kernel_shape=[2, 3], dilations=[3, 2], pads=[1, 2, 1, 2], strides=[2, 1])
    case("AveragePool_19_dilations", 19, "AveragePool", [In(x177)], kernel_shape=[3, 3],
         dilations=[2, 2], pads=[1, 1, 1, 1])
    case("AveragePool_22_ceil", 22, "AveragePool", [In(x177)], kernel_shape=[2, 2],
         strides=[2, 2], ceil_mode=1)
    # Casts at their new versions (saturate/round_mode only concern float8/4).
    case("Cast_19_saturate", 19, "Cast", [In(rand(2, 3) * 100)], out_types=[TensorProto.INT32],
         to=TensorProto.INT32, saturate=1)
    case("Cast_24_to_float16", 24, "Cast", [In(rand(2, 3))], out_types=[TensorProto.FLOAT16],
         to=TensorProto.FLOAT16)
    # Quantization: int4/uint4 weights, blockwise.
    w = rng.integers(-8, 8, (4, 8))
    case("DequantizeLinear_21_int4_block", 21, "DequantizeLinear",
         [Const(w, INT4), Const(rand(4, 2, lo=0.01, hi=0.1)), None],
         out_types=[TensorProto.FLOAT], axis=1, block_size=4)
    case("DequantizeLinear_21_uint4_block_zp", 21, "DequantizeLinear",
         [Const(w + 8, UINT4), Const(rand(2, 8, lo=0.01, hi=0.1)),
          Const(rng.integers(0, 16, (2, 8)), UINT4)],
         out_types=[TensorProto.FLOAT], axis=0, block_size=2)
    case("DequantizeLinear_21_int8_axis", 21, "DequantizeLinear",
         [In(ints(3, 4, dtype=np.int8)), Const(rand(4, lo=0.01, hi=0.1)),
          Const(ints(4, dtype=np.int8))], out_types=[TensorProto.FLOAT], axis=1)
    # Normalizations.
    x2633 = rand(2, 6, 3, 3)
    case("GroupNormalization_18", 18, "GroupNormalization",
         [In(x2633), Const(rand(3)), Const(rand(3))], num_groups=3, epsilon=1e-5)
    case("GroupNormalization_21", 21, "GroupNormalization",
         [In(x2633), Const(rand(6)), Const(rand(6))], num_groups=2, epsilon=1e-5)
    x234 = rand(2, 3, 8)
    case("RMSNormalization_23", 23, "RMSNormalization", [In(x234), Const(rand(8))], axis=-1)
    case("RMSNormalization_23_axis1", 23, "RMSNormalization", [In(x234), Const(rand(3, 8))],
         axis=1, epsilon=1e-3)
    # Activations.
    xa = rand(3, 5, lo=-4, hi=4)
    case("Mish_18", 18, "Mish", [In(xa)])
    case("Mish_22", 22, "Mish", [In(xa)])
    case("Gelu_20", 20, "Gelu", [In(xa)])
    case("Gelu_20_tanh", 20, "Gelu", [In(xa)], approximate="tanh")
    case("Swish_24", 24, "Swish", [In(xa)], alpha=1.5)
    # Bitwise ops.
    for op in ["BitwiseAnd", "BitwiseOr", "BitwiseXor"]:
        case(f"{op}_18_int32", 18, op, [In(ints(3, 4, lo=-100, hi=100)),
                                        In(ints(4, lo=-100, hi=100))])
        case(f"{op}_18_uint8", 18, op, [In(ints(2, 3, lo=0, hi=255, dtype=np.uint8)),
                                        In(ints(2, 3, lo=0, hi=255, dtype=np.uint8))])
    case("BitwiseNot_18_int32", 18, "BitwiseNot", [In(ints(3, 4, lo=-100, hi=100))])
    case("BitwiseNot_18_uint8", 18, "BitwiseNot", [In(ints(5, lo=0, hi=255, dtype=np.uint8))])
    # Scans, casts of bits.
    xc = rand(2, 5, lo=0.5, hi=1.5)
    case("CumProd_26", 26, "CumProd", [In(xc), Const(np.array(1, np.int64))])
    case("CumProd_26_exclusive_reverse", 26, "CumProd", [In(xc), Const(np.array(-1, np.int32))],
         exclusive=1, reverse=1)
    case("BitCast_26_float_to_int32", 26, "BitCast", [In(rand(2, 3))],
         out_types=[TensorProto.INT32], to=TensorProto.INT32)
    case("BitCast_26_int32_to_float", 26, "BitCast", [In(ints(4, lo=0x3f000000, hi=0x40000000))],
         out_types=[TensorProto.FLOAT], to=TensorProto.FLOAT)
    # Shape ops.
    case("CenterCropPad_18", 18, "CenterCropPad", [In(rand(5, 4, 3)),
                                                  Const(np.array([3, 6, 3], np.int64))])
    case("CenterCropPad_18_axes", 18, "CenterCropPad", [In(rand(2, 7, 4)),
                                                       Const(np.array([4, 5], np.int64))],
         axes=[1, 2])
    case("Col2Im_18", 18, "Col2Im", [In(rand(1, 4, 12)), Const(np.array([4, 5], np.int64)),
                                     Const(np.array([2, 2], np.int64))])
    case("Col2Im_18_strided", 18, "Col2Im", [In(rand(1, 4, 9)), Const(np.array([5, 5], np.int64)),
                                             Const(np.array([2, 2], np.int64))],
         strides=[2, 2], pads=[0, 0, 1, 1])
    case("AffineGrid_20", 20, "AffineGrid", [In(rand(2, 2, 3)), Const(np.array([2, 1, 3, 4],
                                                                             np.int64))])
    case("AffineGrid_20_align_corners", 20, "AffineGrid",
         [In(rand(1, 3, 4)), Const(np.array([1, 1, 2, 3, 4], np.int64))], align_corners=1)
    # Transformer ops.
    q, k, v = rand(1, 2, 4, 8), rand(1, 2, 6, 8), rand(1, 2, 6, 8)
    case("Attention_23", 23, "Attention", [In(q), In(k), In(v)])
    case("Attention_23_causal_scale", 23, "Attention", [In(rand(1, 2, 5, 8)), In(rand(1, 2, 5, 8)),
                                                        In(rand(1, 2, 5, 8))],
         is_causal=1, scale=0.2)
    case("Attention_23_gqa_mask", 23, "Attention",
         [In(rand(1, 4, 3, 8)), In(rand(1, 2, 5, 8)), In(rand(1, 2, 5, 8)), In(rand(3, 5))])
    case("Attention_23_3d", 23, "Attention", [In(rand(2, 4, 16)), In(rand(2, 6, 16)),
                                              In(rand(2, 6, 16))], q_num_heads=2, kv_num_heads=2)
    case("Attention_23_past_bool_mask", 23, "Attention",
         [In(rand(1, 2, 2, 8)), In(rand(1, 2, 3, 8)), In(rand(1, 2, 3, 8)),
          In(ints(2, 5, lo=0, hi=2).astype(bool) | (np.arange(5) == 0)),
          In(rand(1, 2, 2, 8)), In(rand(1, 2, 2, 8))], outputs=3)
    mask = rand(4, 6, lo=-2, hi=0.5)
    case("Attention_23_softcap", 23, "Attention", [In(q), In(k), In(v), In(mask)], softcap=0.7)
    for mode in range(4):
        case(f"Attention_23_qk_output_{mode}", 23, "Attention",
             [In(q), In(k), In(v), In(mask)], outputs=4, qk_matmul_output_mode=mode, softcap=1.5)
    case("Attention_24_nonpad_kv_seqlen", 24, "Attention",
         [In(rand(2, 2, 3, 8)), In(rand(2, 2, 6, 8)), In(rand(2, 2, 6, 8)), None, None, None,
          In(np.array([4, 6], np.int64))])
    cos, sin = rand(8, 4), rand(8, 4)
    case("RotaryEmbedding_23", 23, "RotaryEmbedding",
         [In(rand(1, 2, 3, 8)), Const(cos), Const(sin), Const(np.array([[0, 2, 5]], np.int64))])
    case("RotaryEmbedding_23_interleaved_3d", 23, "RotaryEmbedding",
         [In(rand(1, 3, 16)), Const(cos), Const(sin), Const(np.array([[1, 2, 3]], np.int64))],
         interleaved=1, num_heads=2)
    case("RotaryEmbedding_23_partial_no_ids", 23, "RotaryEmbedding",
         [In(rand(2, 2, 3, 8)), In(rand(2, 3, 2)), In(rand(2, 3, 2))], rotary_embedding_dim=4)
    case("TensorScatter_24", 24, "TensorScatter",
         [In(rand(2, 3, 6, 4)), In(rand(2, 3, 2, 4)), Const(np.array([1, 3], np.int64))],
         axis=-2)
    case("TensorScatter_24_circular", 24, "TensorScatter",
         [In(rand(2, 5, 3)), In(rand(2, 3, 3)), Const(np.array([4, 1], np.int64))], axis=1,
         mode="circular")
    case("TensorScatter_24_no_indices", 24, "TensorScatter", [In(rand(1, 2, 6, 4)),
                                                             In(rand(1, 2, 2, 4))])
    case("DeformConv_19", 19, "DeformConv",
         [In(rand(1, 2, 5, 5)), Const(rand(3, 2, 2, 2)), In(rand(1, 8, 4, 4, lo=-0.6, hi=0.6))])
    case("DeformConv_19_groups_mask_bias", 19, "DeformConv",
         [In(rand(1, 4, 6, 7)), Const(rand(4, 2, 3, 3)), In(rand(1, 36, 3, 2, lo=-1.5, hi=1.5)),
          Const(rand(4)), In(rand(1, 18, 3, 2, lo=0, hi=1))],
         group=2, offset_group=2, strides=[2, 2], pads=[1, 0, 1, 1], dilations=[1, 2])
    # Ops whose version only added element types: the import rule is the same.
    case("Identity_24", 24, "Identity", [In(rand(2, 3))])
    case("Reshape_21", 21, "Reshape", [In(rand(2, 6)), Const(np.array([3, -1], np.int64))])
    case("Flatten_24", 24, "Flatten", [In(rand(2, 3, 4))], axis=2)
    case("Transpose_24", 24, "Transpose", [In(rand(2, 3, 4))], perm=[2, 0, 1])
    case("Squeeze_24", 24, "Squeeze", [In(rand(2, 1, 3)), Const(np.array([1], np.int64))])
    case("Unsqueeze_24", 24, "Unsqueeze", [In(rand(2, 3)), Const(np.array([0, 3], np.int64))])
    case("Shape_21_start_end", 21, "Shape", [In(rand(2, 3, 4))], out_types=[TensorProto.INT64],
         start=1, end=-1)
    case("ConstantOfShape_24", 24, "ConstantOfShape", [Const(np.array([2, 3], np.int64))],
         out_types=[TensorProto.FLOAT],
         value=helper.make_tensor("v", TensorProto.FLOAT, [1], [2.5]))
    case("Conv_22", 22, "Conv", [In(rand(1, 2, 5, 5)), Const(rand(3, 2, 3, 3))], pads=[1, 1, 1, 1])
    case("Softplus_22", 22, "Softplus", [In(xa)])
    case("TopK_24", 24, "TopK", [In(rand(3, 6)), Const(np.array([2], np.int64))], outputs=2,
         out_types=[TensorProto.FLOAT, TensorProto.INT64], axis=1)
    case("IsNaN_20", 20, "IsNaN", [In(np.array([1.0, np.nan, np.inf], np.float32))],
         out_types=[TensorProto.BOOL])
    case("GridSample_22_linear", 22, "GridSample",
         [In(rand(1, 1, 4, 4)), In(rand(1, 3, 3, 2))], mode="linear", align_corners=1)


def generate(out_dir):
    """Writes every case whose reference onnxruntime computes; returns the
    cases it could not (name -> onnxruntime's message)."""
    define_cases()
    os.makedirs(out_dir, exist_ok=True)
    jobs = []
    for name, (model, feeds) in CASES.items():
        case_dir = os.path.join(out_dir, name)
        data_dir = os.path.join(case_dir, "test_data_set_0")
        os.makedirs(data_dir, exist_ok=True)
        onnx.save(model, os.path.join(case_dir, "model.onnx"))
        npys = []
        for i, array in enumerate(feeds):
            with open(os.path.join(data_dir, f"input_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(array).SerializeToString())
            npys.append(os.path.join(data_dir, f"input_{i}.npy"))
            np.save(npys[-1], array)
        jobs.append([os.path.join(case_dir, "model.onnx"), os.path.join(case_dir, "ort")] + npys)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(jobs, f)
    env = dict(os.environ, NODE_PATH=NODE_PATH)
    ran = subprocess.run(["node", ORT_RUN, "--batch", f.name], env=env, capture_output=True,
                         text=True)
    os.unlink(f.name)
    if ran.returncode != 0:
        raise SystemExit(f"modern.py: onnxruntime-node failed: {ran.stderr.strip()}")
    failures = json.loads(ran.stdout)
    for name, (model, _) in CASES.items():
        case_dir = os.path.join(out_dir, name)
        if name in failures:
            with open(os.path.join(case_dir, "no_reference.txt"), "w") as f:
                f.write(failures[name])
            continue
        for i, vi in enumerate(model.graph.output):
            array = np.load(os.path.join(case_dir, "ort", vi.name + ".npy"))
            with open(os.path.join(case_dir, "test_data_set_0", f"output_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(array).SerializeToString())
    return failures


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--model":
        define_cases()
        if sys.argv[2] not in CASES:
            raise SystemExit(f"modern.py: no case '{sys.argv[2]}'")
        onnx.save(CASES[sys.argv[2]][0], sys.argv[3])
        sys.exit(0)
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    missing = generate(sys.argv[1])
    print(f"modern.py: {len(CASES) - len(missing)} cases written, {len(missing)} without a "
          f"reference")
    for name, why in missing.items():
        print(f"  {name}: {why}")
