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
  let arguments = (ins Kiln_Tensor:$lhs, Kiln_Tensor:$rhs);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` `(` type($lhs) `,` type($rhs) `)` `->` type($result)";
  let hasVerifier = 1;
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
    `pads` is [top, left, bottom, right]. With `group` = G the input has
    C = G * filter.dim(1) channels and the filter count F is divisible by G.
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_Tensor:$filter, Optional<Kiln_Tensor>:$bias,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations,
                   DenseI64ArrayAttr:$pads, I64Attr:$group);
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
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$kernel,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$dilations);
}

def Kiln_AveragePoolOp : Kiln_PoolOp<"average_pool", "2-D average pooling"> {
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$kernel,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                   BoolAttr:$count_include_pad);
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
  let summary = "Reinterpret the elements in row-major order with a new static shape";
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

#endif // KILN_OPS_TD
