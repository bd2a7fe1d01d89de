#ifndef KILN_OPS_TD
#define KILN_OPS_TD

include "dialects/kiln/KilnDialect.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class Kiln_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kiln_Dialect, mnemonic, !listconcat([Pure], traits)>;

def Kiln_Tensor : RankedTensorOf<[AnyType]>;

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

def Kiln_ConstantOp : Kiln_Op<"constant", [ConstantLike]> {
  let summary = "Tensor constant (weights live in dense_resource blobs)";
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "attr-dict $value `->` type($result)";
  let hasFolder = 1;
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class Kiln_BinaryOp<string mnemonic, list<Trait> traits = []>
    : Kiln_Op<mnemonic, traits> {
  let summary = "Elementwise " # mnemonic # " with numpy-style broadcasting";
  let arguments = (ins Kiln_Tensor:$lhs, Kiln_Tensor:$rhs);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` `(` type($lhs) `,` type($rhs) `)` `->` type($result)";
  let hasVerifier = 1;
}

def Kiln_AddOp : Kiln_BinaryOp<"add", [Commutative]> { let hasFolder = 1; }
def Kiln_SubOp : Kiln_BinaryOp<"sub">;
def Kiln_MulOp : Kiln_BinaryOp<"mul", [Commutative]> { let hasFolder = 1; }
def Kiln_DivOp : Kiln_BinaryOp<"div">;
def Kiln_PowOp : Kiln_BinaryOp<"pow">;
def Kiln_MaxOp : Kiln_BinaryOp<"max", [Commutative]>;
def Kiln_MinOp : Kiln_BinaryOp<"min", [Commutative]>;
def Kiln_ModOp : Kiln_BinaryOp<"mod"> {
  let summary = "Remainder: sign of the divisor (integers), or of the dividend with `fmod`";
  let arguments = (ins Kiln_Tensor:$lhs, Kiln_Tensor:$rhs, UnitAttr:$fmod);
}
// And/Or/Xor: logical on i1, bitwise on integers.
def Kiln_AndOp : Kiln_BinaryOp<"and", [Commutative]>;
def Kiln_OrOp : Kiln_BinaryOp<"or", [Commutative]>;
def Kiln_XorOp : Kiln_BinaryOp<"xor", [Commutative]>;
def Kiln_ShiftLeftOp : Kiln_BinaryOp<"shift_left">;
def Kiln_ShiftRightOp : Kiln_BinaryOp<"shift_right"> {
  let summary = "Logical shift right of unsigned integers with broadcasting";
}

class Kiln_CompareOp<string mnemonic, list<Trait> traits = []>
    : Kiln_BinaryOp<mnemonic, traits> {
  let summary = "Elementwise " # mnemonic # " comparison with broadcasting; i1 result";
}

def Kiln_EqualOp : Kiln_CompareOp<"equal", [Commutative]>;
def Kiln_LessOp : Kiln_CompareOp<"less">;
def Kiln_LessEqualOp : Kiln_CompareOp<"less_equal">;
def Kiln_GreaterOp : Kiln_CompareOp<"greater">;
def Kiln_GreaterEqualOp : Kiln_CompareOp<"greater_equal">;

def Kiln_WhereOp : Kiln_Op<"where"> {
  let summary = "condition ? lhs : rhs, elementwise with three-way broadcasting";
  let arguments = (ins Kiln_Tensor:$condition, Kiln_Tensor:$lhs, Kiln_Tensor:$rhs);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_BitcastOp : Kiln_Op<"bitcast"> {
  let summary = "Each element's bits read as the result's element type (ONNX BitCast)";
  let description = [{ Both element types have the same width of 8 bits or more. }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Kiln_CastOp : Kiln_Op<"cast"> {
  let summary = "Elementwise conversion to the result's element type (ONNX Cast)";
  let description = [{
    Floats to integers truncate toward zero; to bool, nonzero is true;
    integers are treated as signed.
  }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

class Kiln_UnaryOp<string mnemonic, string what>
    : Kiln_Op<mnemonic, [AllTypesMatch<["input", "result"]>]> {
  let summary = what;
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Kiln_ReluOp : Kiln_UnaryOp<"relu", "max(x, 0)">;
def Kiln_SigmoidOp : Kiln_UnaryOp<"sigmoid", "1 / (1 + exp(-x))">;
def Kiln_TanhOp : Kiln_UnaryOp<"tanh", "hyperbolic tangent">;
def Kiln_ExpOp : Kiln_UnaryOp<"exp", "e^x">;
def Kiln_ErfOp : Kiln_UnaryOp<"erf", "Gauss error function">;
def Kiln_SqrtOp : Kiln_UnaryOp<"sqrt", "square root">;
def Kiln_NegOp : Kiln_UnaryOp<"neg", "-x">;
def Kiln_AbsOp : Kiln_UnaryOp<"abs", "|x|">;
def Kiln_CeilOp : Kiln_UnaryOp<"ceil", "round up">;
def Kiln_FloorOp : Kiln_UnaryOp<"floor", "round down">;
def Kiln_RoundOp : Kiln_UnaryOp<"round", "round half to even">;
def Kiln_SignOp : Kiln_UnaryOp<"sign", "-1, 0 or 1">;
def Kiln_LogOp : Kiln_UnaryOp<"log", "natural logarithm">;
def Kiln_ReciprocalOp : Kiln_UnaryOp<"reciprocal", "1 / x">;
def Kiln_SinOp : Kiln_UnaryOp<"sin", "sine">;
def Kiln_CosOp : Kiln_UnaryOp<"cos", "cosine">;
def Kiln_TanOp : Kiln_UnaryOp<"tan", "tangent">;
def Kiln_AsinOp : Kiln_UnaryOp<"asin", "arc sine">;
def Kiln_AcosOp : Kiln_UnaryOp<"acos", "arc cosine">;
def Kiln_AtanOp : Kiln_UnaryOp<"atan", "arc tangent">;
def Kiln_SinhOp : Kiln_UnaryOp<"sinh", "hyperbolic sine">;
def Kiln_CoshOp : Kiln_UnaryOp<"cosh", "hyperbolic cosine">;
def Kiln_AsinhOp : Kiln_UnaryOp<"asinh", "inverse hyperbolic sine">;
def Kiln_AcoshOp : Kiln_UnaryOp<"acosh", "inverse hyperbolic cosine">;
def Kiln_AtanhOp : Kiln_UnaryOp<"atanh", "inverse hyperbolic tangent">;
def Kiln_NotOp : Kiln_UnaryOp<"not", "every bit flipped: logical not of i1, bitwise not of integers">;

def Kiln_ClipOp : Kiln_Op<"clip", [AllTypesMatch<["input", "result"]>]> {
  let summary = "min(max(x, min), max)";
  let arguments = (ins Kiln_Tensor:$input, F32Attr:$min, F32Attr:$max);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Linear algebra and convolution
//===----------------------------------------------------------------------===//

def Kiln_MatMulOp : Kiln_Op<"matmul"> {
  let summary = "numpy.matmul: batched, with broadcasting batch dimensions";
  let description = [{
    The result has the operands' element type, except for the widening
    forms: 8-bit integer operands (each i8 or ui8) with an i32 result, each
    operand extended by its own signedness and products summed in 32 bits;
    or bf16 (or f16) operands with an f32 result, products summed in f32.
  }];
  let arguments = (ins Kiln_Tensor:$lhs, Kiln_Tensor:$rhs);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` `(` type($lhs) `,` type($rhs) `)` `->` type($result)";
  let hasVerifier = 1;
}

def Kiln_SparseMatMulOp : Kiln_Op<"sparse_matmul"> {
  let summary = "x @ W with a constant [K, N] weight W stored as compressed column blocks";
  let description = [{
    W's N columns (the outputs) are grouped into N / B column blocks of
    B = values.dim(1) columns. Column block j keeps its nonzero 1 x B
    pieces, entries offsets[j] to offsets[j + 1] - 1: entry e is the row
    k = indices[e] of W, and values[e] = W[k, j*B : j*B + B]. Rows of a
    column block are in increasing order, and all-zero pieces are left out.
    B = 1 is compressed sparse columns, for unstructured sparsity; B = 16
    ("output-blocked 16x1") holds weights pruned in 16x1 blocks and runs
    vectorized over the block's outputs.

    `input` is f32 [..., K] (K static); the result is f32 [..., N].
    `offsets` is i32 [N / B + 1], from 0 up to the entry count, never
    decreasing; `indices` are i16 (read as unsigned, so K <= 65536) or i32,
    each below K; `values` is f32 [entries, B]. kiln-sparsify forms the op
    from a kiln.matmul with mostly-zero constant weights, and from a 1x1
    kiln.conv as the product of its pixels [H*W, C] by its filter.

    The widening int8 form multiplies uint8 activations by int8 weights
    and sums in 32 bits, like the int8 kiln.matmul it replaces: `input` ui8
    [..., K] (K a multiple of 4), `values` i8 [entries, 64], the result i32
    [..., N]. An entry is 4 rows by 16 outputs ("16x4 blocks"), in the byte
    order of a vpdpbusd operand: with k = indices[e] (a multiple of 4),
    values[e, 4 l + t] = W[k + t, 16 j + l]; `offsets` has N / 16 + 1
    elements.
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_Tensor:$offsets, Kiln_Tensor:$indices,
                   Kiln_Tensor:$values);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_BitmapMatMulOp : Kiln_Op<"bitmap_matmul"> {
  let summary = "x @ W with a constant [K, N] weight W stored as 16-output bitmaps and its nonzeros";
  let description = [{
    W's N columns (the outputs) are grouped into N / 16 column blocks. For
    column block j and row k, bit l of masks[j, k] says whether
    W[k, 16 j + l] is nonzero; the nonzeros follow each other in `values`,
    by column block, then row, then output. The K rows of a column block
    are cut into S segments of K / S rows (the last one takes the rest);
    segment s of column block j starts at starts[j S + s], so that the
    lowering walks the segments side by side, each with its own cursor
    into the values. One bit per weight plus the nonzeros: about half the bytes
    of the dense matrix at 50% sparsity, where compressed indices would
    save nothing. The lowering expands each row's nonzeros back into 16
    lanes (AVX-512 vexpandps).

    `input` is f32 [..., K] (K static); the result is f32 [..., N].
    `starts` is i32 [N / 16 * S + 1] (from 0, each step the bit count of
    the segment's masks, ending at the number of values), `masks` i16
    [N / 16, K], `values` f32 [nonzeros]. kiln-sparsify forms the op.

    The widening int8 form multiplies uint8 activations by int8 weights
    and sums the products in 32 bits, like the int8 kiln.matmul it
    replaces: `input` ui8 [..., K] (K a multiple of 4), `values` i8, the
    result i32. A mask covers 4 rows by the block's 16 outputs, in the
    order of a vpdpbusd operand: bit 4 l + t of masks[j, g] says whether
    W[4 g + t, 16 j + l] is nonzero, so `masks` is i64 [N / 16, K / 4]
    and the segments cut its K / 4 groups of rows. The lowering expands
    each group into 64 bytes (AVX512-VBMI2 vpexpandb) and multiplies them
    by the group's 4 activation bytes (vpdpbusd).
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_Tensor:$starts, Kiln_Tensor:$masks,
                   Kiln_Tensor:$values);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_AttentionOp : Kiln_Op<"attention"> {
  let summary = "softmax(scale * (query @ key_t) + mask) @ value, one row block at a time";
  let description = [{
    Scaled dot-product attention over matrices in the trailing two
    dimensions: `query` [B..., Lq, D], `key_t` [B..., D, Lk] (keys already
    transposed), `value` [B..., Lk, Dv], result [B..., Lq, Dv]; the batch
    dimensions B... are equal. The optional additive `mask` has the
    scores' rank [M..., Mq, Lk], where M... are all 1 or all B... and Mq is
    1 or Lq. Softmax runs along Lk. kiln-fuse-attention forms it from
    MatMul -> (Mul/Div by a constant) -> (Add mask) -> Softmax -> MatMul;
    its lowering never holds more than a block of the [Lq, Lk] scores
    (online softmax, as in flash attention).
  }];
  let arguments = (ins Kiln_Tensor:$query, Kiln_Tensor:$key_t, Kiln_Tensor:$value,
                   Optional<Kiln_Tensor>:$mask, F32Attr:$scale);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat =
      "$query `,` $key_t `,` $value (`,` $mask^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_EinsumOp : Kiln_Op<"einsum"> {
  let summary = "Einstein summation (ONNX Einsum), e.g. \"bij,bjk->bik\"";
  let description = [{
    Letters shared by operands are multiplied; letters missing from the
    output are summed. `...` stands for the leading broadcast dimensions.
    Without `->`, the output holds the letters used once, alphabetically.
  }];
  let arguments = (ins Variadic<Kiln_Tensor>:$inputs, StrAttr:$equation);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, results)";
  let hasVerifier = 1;
}

def Kiln_DynamicQuantizeOp : Kiln_Op<"dynamic_quantize"> {
  let summary = "uint8 quantization with scale and zero point from the data (ONNX DynamicQuantizeLinear)";
  let description = [{
    The range [min(x, 0), max(x, 0)] maps onto [0, 255]:
    scale = (max - min) / 255, zero_point = saturate(round(-min / scale)),
    y = saturate(round(x / scale) + zero_point), rounding half to even. An
    all-zero input has scale 0 and quantizes to the zero point.
  }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$result, Kiln_Tensor:$scale, Kiln_Tensor:$zero_point);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type(results)";
  let hasVerifier = 1;
}

def Kiln_QuantizeOp : Kiln_Op<"quantize"> {
  let summary = "f32 to a quantized type: saturate(round(x / scale) + zero_point)";
  let description = [{
    The result's element type, a `!quant.uniform` per tensor or per axis,
    holds the scale, the zero point and the storage range:
    y = saturate(round_half_even(x / scale) + zero_point) (ONNX
    QuantizeLinear with compile-time parameters). A per-axis type takes the
    scale and zero point of each element's index along its quantized
    dimension.
  }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Kiln_DequantizeOp : Kiln_Op<"dequantize"> {
  let summary = "a quantized type to f32: (q - zero_point) * scale";
  let description = [{
    The inverse of kiln.quantize: the scale and zero point (per tensor or per
    axis) come from the input's `!quant.uniform` element type.
  }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Kiln_StorageCastOp : Kiln_Op<"storage_cast"> {
  let summary = "between a quantized type and its integer storage, bits unchanged";
  let description = [{
    Views 8- or 16-bit integers (ui8/i8, ui16/i16 by the quantized type's
    signedness) as the `!quant.uniform` values they store, or back. A cast of
    a cast back to the original type folds away.
  }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_GemmOp : Kiln_Op<"gemm"> {
  let summary = "alpha * op(A) * op(B) + beta * C (ONNX Gemm)";
  let arguments = (ins Kiln_Tensor:$a, Kiln_Tensor:$b, Optional<Kiln_Tensor>:$c,
                   DefaultValuedAttr<F32Attr, "1.0">:$alpha,
                   DefaultValuedAttr<F32Attr, "1.0">:$beta,
                   DefaultValuedAttr<BoolAttr, "false">:$trans_a,
                   DefaultValuedAttr<BoolAttr, "false">:$trans_b);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$a `,` $b (`,` $c^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_ConvOp : Kiln_Op<"conv"> {
  let summary = "2-D convolution, NCHW input, FCHW filter, grouped";
  let description = [{
    `pads` is [top, left, bottom, right] (zeros of the input's type). With
    `group` = G the input has C = G * filter.dim(1) channels and the filter
    count F is divisible by G. The widening forms (8-bit input and filter,
    each i8 or ui8, i32 result; or bf16 with an f32 result) have no group
    and no bias. With `channels_last` (no group, or depthwise: one group per
    channel and one filter per group) the input is NHWC and the result
    [N, OH, OW, F]; the filter stays FCHW.
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_Tensor:$filter, Optional<Kiln_Tensor>:$bias,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations,
                   DenseI64ArrayAttr:$pads, I64Attr:$group, UnitAttr:$channels_last);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input `,` $filter (`,` $bias^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_BatchNormOp : Kiln_Op<"batch_norm"> {
  let summary = "Inference batch normalization over dimension 1";
  let arguments = (ins Kiln_Tensor:$input, Kiln_Tensor:$scale, Kiln_Tensor:$bias,
                   Kiln_Tensor:$mean, Kiln_Tensor:$variance, F32Attr:$epsilon);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

class Kiln_PoolOp<string mnemonic, string what> : Kiln_Op<mnemonic> {
  let summary = what # " over the spatial dimensions of an NCHW tensor";
  let description = [{ `pads` is [top, left, bottom, right]. }];
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Kiln_MaxPoolOp : Kiln_PoolOp<"max_pool", "2-D max pooling"> {
  let description = [{
    `pads` is [top, left, bottom, right]. With `channels_last` the input and
    result are NHWC.
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$kernel,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$dilations, UnitAttr:$channels_last);
}

def Kiln_MaxPoolIndicesOp : Kiln_Op<"max_pool_indices"> {
  let summary = "Flat NCHW index (i64) of the first maximum in each 2-D max-pool window";
  let description = [{
    Same window attributes as kiln.max_pool; padding is never chosen. With
    `column_major` the spatial part of the index is w * H + h (ONNX
    storage_order = 1).
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$kernel,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$dilations, UnitAttr:$column_major);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Kiln_AveragePoolOp : Kiln_PoolOp<"average_pool", "2-D average pooling"> {
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$kernel,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$dilations, BoolAttr:$count_include_pad);
}

def Kiln_GlobalAveragePoolOp : Kiln_Op<"global_average_pool"> {
  let summary = "Mean over all spatial dimensions, keeping them as size 1";
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

def Kiln_ReshapeOp : Kiln_Op<"reshape"> {
  let summary = "Reinterpret the elements in row-major order with a new shape";
  let description = [{
    A dynamic result dimension takes its size from the input dimension that
    `kept` names for it, or with `kept` -2 from its element of the i64
    `shape` operand (checked to be >= 1 at run time). At most one dynamic
    result dimension keeps -1 (or there is no `kept`): its size is what the
    element count leaves, and the count must divide at run time.
  }];
  let arguments = (ins Kiln_Tensor:$input, Optional<Kiln_Tensor>:$shape,
                       OptionalAttr<DenseI64ArrayAttr>:$kept);
  let results = (outs Kiln_Tensor:$result);
  let builders = [
    OpBuilder<(ins "Type":$result, "Value":$input,
                   CArg<"DenseI64ArrayAttr", "{}">:$kept), [{
      build($_builder, $_state, result, input, Value(), kept);
    }]>
  ];
  let assemblyFormat = [{
    $input (`shape` $shape^)? attr-dict `:` type($input) (`,` type($shape)^)? `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_ShapeOp : Kiln_Op<"shape"> {
  let summary = "The sizes of the input's dimensions, as a 1-D i64 tensor";
  let description = [{
    ONNX Shape of a tensor with dynamic dimensions; folds to a constant
    when the input's shape is static.
  }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_TransposeOp : Kiln_Op<"transpose"> {
  let summary = "Permute dimensions: result.dim(i) = input.dim(perm[i])";
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_ConcatOp : Kiln_Op<"concat"> {
  let summary = "Concatenate tensors along one axis";
  let arguments = (ins Variadic<Kiln_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_SliceOp : Kiln_Op<"slice"> {
  let summary = "Strided slice: result[i] = input[starts + i * steps] per dimension";
  let description = [{
    `starts` and `steps` have one entry per dimension; steps may be negative.
    The result shape gives the number of elements taken per dimension.

    With `ends`, the bounds are ONNX Slice's, resolved against the input's
    size n at run time: negative starts and ends count from the end, both
    are clamped (to [0, n] with a positive step; with a negative one, starts
    to [0, n-1] and ends to [-1, n-1], as onnxruntime does), and each
    dimension takes
    max(0, ceil((end - start) / step)) elements. That form slices dynamic
    dimensions, whose result size is dynamic too.
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$starts, DenseI64ArrayAttr:$steps,
                       OptionalAttr<DenseI64ArrayAttr>:$ends);
  let results = (outs Kiln_Tensor:$result);
  let builders = [
    // Without `ends`: static bounds, the result type gives the counts.
    OpBuilder<(ins "Type":$result, "Value":$input, "ArrayRef<int64_t>":$starts,
                   "ArrayRef<int64_t>":$steps), [{
      build($_builder, $_state, result, input, starts, steps, DenseI64ArrayAttr());
    }]>
  ];
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_GatherOp : Kiln_Op<"gather"> {
  let summary = "ONNX Gather: select slices of `data` along `axis` by integer indices";
  let description = [{
    result.shape = data.shape[:axis] + indices.shape + data.shape[axis+1:].
    Negative indices count from the end. Out-of-range indices are clamped
    (the compiled code never reads out of bounds).
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_Tensor:$indices, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_GatherElementsOp : Kiln_Op<"gather_elements"> {
  let summary = "result[i] = data[i with i[axis] replaced by indices[i]] (ONNX GatherElements)";
  let description = [{
    The result has the shape of `indices`. Negative indices count from the
    end; out-of-range indices are clamped.
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_Tensor:$indices, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_TriluOp : Kiln_Op<"trilu"> {
  let summary = "Keep the upper or lower triangle of the last two dimensions";
  let description = [{
    Element (i, j) is kept when j - i >= k (upper) or j - i <= k (lower);
    `k` is a rank-0 i64 tensor (it may be a run-time value).
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_Tensor:$k, BoolAttr:$upper);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input `,` $k attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_ResizeOp : Kiln_Op<"resize", [AttrSizedOperandSegments]> {
  let summary = "Nearest, (n-)linear or cubic resampling to the result shape (ONNX Resize)";
  let description = [{
    `scales` (one per dimension) maps output to input coordinates through
    `coordinate_mode` (half_pixel, half_pixel_symmetric, pytorch_half_pixel,
    align_corners, asymmetric, tf_half_pixel_for_nn, or tf_crop_and_resize,
    which samples the box `roi` (f32 [starts..., ends...], normalized) and
    gives `extrapolation_value` where a sample falls outside the input);
    `nearest_mode` rounds for
    mode = "nearest" (round_prefer_floor, round_prefer_ceil, floor, ceil).
    mode = "cubic" blends 4 taps per dimension with Keys' kernel of parameter
    `cubic_coeff_a`; with `exclude_outside`, taps outside the input get no
    weight (the rest renormalized), else they repeat the edge.
    With `runtime_scales` (an f32 tensor, one entry per dimension), the
    scales are read from it at run time instead. With `runtime_sizes` (an
    i64 tensor, one entry per dimension: ONNX Resize by `sizes` on dynamic
    shapes), the result has those sizes, read at run time, and each scale
    is the result size over the input size, in f32 as onnxruntime computes
    it.
  }];
  let arguments = (ins Kiln_Tensor:$input, Optional<Kiln_Tensor>:$runtime_scales,
                   Optional<Kiln_Tensor>:$runtime_sizes, Optional<Kiln_Tensor>:$roi,
                   StrAttr:$mode, StrAttr:$coordinate_mode, StrAttr:$nearest_mode,
                   DenseF64ArrayAttr:$scales,
                   DefaultValuedAttr<F64Attr, "-0.75">:$cubic_coeff_a,
                   DefaultValuedAttr<F64Attr, "0.0">:$extrapolation_value,
                   UnitAttr:$exclude_outside);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $input (`scales` `(` $runtime_scales^ `:` type($runtime_scales) `)`)?
    (`sizes` `(` $runtime_sizes^ `:` type($runtime_sizes) `)`)?
    (`roi` `(` $roi^ `:` type($roi) `)`)? attr-dict `:`
    type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Kiln_CumulativeOp : Kiln_Op<"cumulative", [AllTypesMatch<["input", "result"]>]> {
  let summary = "Running sum or product along one axis (ONNX CumSum, CumProd)";
  let description = [{
    `kind` is "sum" or "prod". `exclusive` leaves out the element itself;
    `reverse` runs from the end.
  }];
  let arguments = (ins Kiln_Tensor:$input, StrAttr:$kind, I64Attr:$axis, UnitAttr:$exclusive,
                   UnitAttr:$reverse);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Kiln_GatherNDOp : Kiln_Op<"gather_nd"> {
  let summary = "ONNX GatherND: index tuples (last dim of indices) select slices of data";
  let arguments = (ins Kiln_Tensor:$data, Kiln_Tensor:$indices, I64Attr:$batch_dims);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

class Kiln_ScatterOp<string mnemonic, string what> : Kiln_Op<mnemonic> {
  let summary = what;
  let description = [{
    Updates are applied in order (later ones win, or combine by `reduction`:
    none, add, mul, max, min). Negative indices count from the end;
    out-of-range indices are clamped.
  }];
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$data `,` $indices `,` $updates attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_ScatterElementsOp : Kiln_ScatterOp<"scatter_elements",
    "Write updates into a copy of data at positions with `axis` replaced by indices"> {
  let arguments = (ins Kiln_Tensor:$data, Kiln_Tensor:$indices, Kiln_Tensor:$updates,
                   I64Attr:$axis, StrAttr:$reduction);
}

def Kiln_ScatterNDOp : Kiln_ScatterOp<"scatter_nd",
    "Write update slices into a copy of data at index tuples (last dim of indices)"> {
  let arguments = (ins Kiln_Tensor:$data, Kiln_Tensor:$indices, Kiln_Tensor:$updates,
                   StrAttr:$reduction);
}

def Kiln_GridSampleOp : Kiln_Op<"grid_sample"> {
  let summary = "Sample an NCHW input at normalized grid locations (ONNX GridSample)";
  let description = [{
    grid is [N, Ho, Wo, 2] holding (x, y) in [-1, 1]; the result is
    [N, C, Ho, Wo]. mode: bilinear, nearest or bicubic (Keys' kernel,
    a = -0.75, zeros padding only); padding_mode: zeros, border or
    reflection.
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_Tensor:$grid, StrAttr:$mode,
                   StrAttr:$padding_mode, BoolAttr:$align_corners);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input `,` $grid attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_PadOp : Kiln_Op<"pad"> {
  let summary = "Pad every dimension: constant, reflect, edge or wrap mode";
  let description = [{
    `pads` holds [begin_0, ..., begin_n, end_0, ..., end_n] (non-negative).
    Reflect pads must be smaller than their dimension: at compile time for
    static dimensions, at run time for dynamic ones.
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$pads, StrAttr:$mode,
                   F64Attr:$value);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Kiln_WindowOp : Kiln_Op<"window"> {
  let summary = "Strided window whose origin and steps arrive at run time";
  let description = [{
    result[i] = input[starts + i * steps], per dimension, where `starts` and
    `steps` are i64 tensors with one entry per dimension whose values are
    known only at run time. Positions outside the input read, by `mode`,
    `padding` (a rank-0 tensor; "constant"), the nearest edge ("edge"),
    their mirror image across the edge ("reflect") or the input repeated
    ("wrap"). The result shape is
    static. Slice and Pad import to this op when their offsets are graph
    inputs.
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_Tensor:$starts, Kiln_Tensor:$steps,
                   Kiln_Tensor:$padding, StrAttr:$mode);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_ExpandOp : Kiln_Op<"expand"> {
  let summary = "Broadcast the input to the result shape (numpy rules)";
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_TileOp : Kiln_Op<"tile"> {
  let summary = "Repeat the input along every dimension (result = input.shape * repeats)";
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Normalization and reductions
//===----------------------------------------------------------------------===//

def Kiln_SoftmaxOp : Kiln_Op<"softmax", [AllTypesMatch<["input", "result"]>]> {
  let summary = "exp(x - max) / sum(exp(x - max)) along one axis";
  let arguments = (ins Kiln_Tensor:$input, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Kiln_LogSoftmaxOp : Kiln_Op<"log_softmax", [AllTypesMatch<["input", "result"]>]> {
  let summary = "x - max - log(sum(exp(x - max))) along one axis";
  let arguments = (ins Kiln_Tensor:$input, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Kiln_LayerNormOp : Kiln_Op<"layer_norm"> {
  let summary = "Normalize over the trailing dimensions from `axis`, then scale and shift";
  let arguments = (ins Kiln_Tensor:$input, Kiln_Tensor:$scale, Optional<Kiln_Tensor>:$bias,
                   I64Attr:$axis, F32Attr:$epsilon);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input `,` $scale (`,` $bias^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_ReduceMeanOp : Kiln_Op<"reduce_mean"> {
  let summary = "Arithmetic mean over the given axes";
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$axes, BoolAttr:$keepdims);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Kiln_ReduceOp : Kiln_Op<"reduce"> {
  let summary = "Sum, product, max or min over the given axes";
  let arguments = (ins Kiln_Tensor:$input, StrAttr:$kind, DenseI64ArrayAttr:$axes,
                   BoolAttr:$keepdims);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

class Kiln_ArgOp<string mnemonic, string what> : Kiln_Op<mnemonic> {
  let summary = "Index (i64) of the " # what # " along one axis";
  let arguments = (ins Kiln_Tensor:$input, I64Attr:$axis, BoolAttr:$keepdims,
                   UnitAttr:$select_last_index);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Kiln_ArgMaxOp : Kiln_ArgOp<"arg_max", "maximum">;
def Kiln_ArgMinOp : Kiln_ArgOp<"arg_min", "minimum">;

def Kiln_TopKOp : Kiln_Op<"top_k"> {
  let summary = "The k largest (or smallest) elements along one axis, sorted, with their indices";
  let description = [{
    Along `axis`, the result holds the k largest elements (`largest`) or the
    k smallest, best first; of equal elements the one with the lower index
    comes first. `indices` are their positions (i64) in the input. k is the
    results' size along the axis, or, with the `k` operand (an i64 scalar
    known at run time), the value of `k`: the results' axis is dynamic then.
  }];
  let arguments = (ins Kiln_Tensor:$input, Optional<Kiln_Tensor>:$k, I64Attr:$axis,
                       BoolAttr:$largest);
  let results = (outs Kiln_Tensor:$values, Kiln_Tensor:$indices);
  let builders = [
    OpBuilder<(ins "Type":$values, "Type":$indices, "Value":$input, "int64_t":$axis,
                   "bool":$largest), [{
      build($_builder, $_state, values, indices, input, Value(), axis, largest);
    }]>
  ];
  let assemblyFormat = [{
    $input (`k` $k^)? attr-dict `:` type($input) (`,` type($k)^)? `->` type($values) `,` type($indices)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Ops whose result sizes depend on the data
//===----------------------------------------------------------------------===//

def Kiln_IotaOp : Kiln_Op<"iota"> {
  let summary = "0, 1, ..., count - 1 (i64), for a count known at run time";
  let description = [{
    `count` is an i64 scalar, at least 0 and at most 2^40 (checked at run
    time); the result is i64 of shape [?]. ONNX Range with a run-time limit
    scales and offsets it.
  }];
  let arguments = (ins Kiln_Tensor:$count);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$count attr-dict `:` type($count) `->` type($result)";
  let hasVerifier = 1;
}

def Kiln_NonZeroOp : Kiln_Op<"nonzero"> {
  let summary = "The coordinates of the nonzero (true) elements, one column per element";
  let description = [{
    ONNX NonZero: result[d][j] is coordinate d of the j-th nonzero element
    of `input` in row-major order. The result is i64 of shape
    [rank(input), ?]: how many elements are nonzero is known only after the
    run.
  }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Kiln_UniqueOp : Kiln_Op<"unique"> {
  let summary = "The distinct rows of a 2-D tensor, where each first occurs and how often";
  let description = [{
    The input is N rows of M elements (ONNX Unique flattens or moves its
    axis first). `unique` holds the U distinct rows, in the order of their
    first occurrence, or ascending (lexicographically) with `sorted`;
    `first` the index of each one's first occurrence; `inverse` for every
    input row the position of its row in `unique`; `counts` how many input
    rows equal each. U is known only after the run.
  }];
  let arguments = (ins Kiln_Tensor:$input, BoolAttr:$sorted);
  let results = (outs Kiln_Tensor:$unique, Kiln_Tensor:$first, Kiln_Tensor:$inverse,
                      Kiln_Tensor:$counts);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($unique) `,` type($first) `,` type($inverse) `,` type($counts)
  }];
  let hasVerifier = 1;
}

def Kiln_NonMaxSuppressionOp : Kiln_Op<"non_max_suppression"> {
  let summary = "Greedy non-maximum suppression of boxes, per batch and class (ONNX)";
  let description = [{
    `boxes` is [B, N, 4] (corners y1, x1, y2, x2 in either order, or with
    `center_point_box` x, y, width, height) and `scores` [B, C, N]. For each
    batch and class, boxes are taken in order of decreasing score (the lower
    index first among equal scores), skipping those whose score is not above
    `score_threshold` (when given), and kept unless their intersection over
    union with a box already kept exceeds `iou_threshold`, until
    `max_per_class` are kept. The result lists the kept boxes as rows
    [batch, class, box] (i64), batch by batch and class by class, in the
    order they were kept; its length is known only after the run.
    `max_per_class` (i64) and the thresholds (f32) are scalars.
  }];
  let arguments = (ins Kiln_Tensor:$boxes, Kiln_Tensor:$scores, Kiln_Tensor:$max_per_class,
                       Kiln_Tensor:$iou_threshold, Optional<Kiln_Tensor>:$score_threshold,
                       BoolAttr:$center_point_box);
  let results = (outs Kiln_Tensor:$selected);
  let assemblyFormat = [{
    $boxes `,` $scores `,` $max_per_class `,` $iou_threshold (`score_threshold` $score_threshold^)?
    attr-dict `:` type(operands) `->` type($selected)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Run-time checks
//===----------------------------------------------------------------------===//

// Not Pure: a check must survive dead-code elimination, and it writes the
// instance's error state when it fails.
def Kiln_AssertOp : Op<Kiln_Dialect, "assert", [MemoryEffects<[MemWrite]>]> {
  let summary = "Ends the inference with an error unless every element is true";
  let description = [{
    Emitted where the compiler specialised the model on a fact it cannot
    prove at compile time, e.g. a shape operand whose value only arrives at
    run time. When any element of `condition` (an i1 tensor of any shape) is
    false, the run stops and `kiln_model_run` returns nonzero with `message`
    as the instance's error.
  }];
  let arguments = (ins Kiln_Tensor:$condition, StrAttr:$message);
  let assemblyFormat = "$condition `,` $message attr-dict `:` type($condition)";
  let hasVerifier = 1;
  let hasCanonicalizeMethod = 1;
}

#endif // KILN_OPS_TD
