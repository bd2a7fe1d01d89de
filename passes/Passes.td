#ifndef KILN_PASSES_PASSES_TD
#define KILN_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnFoldBatchNorm : Pass<"kiln-fold-batch-norm", "ModuleOp"> {
  let summary = "Fold inference BatchNormalization into the convolution that feeds it";
  let description = [{
    `kiln.batch_norm(kiln.conv(x, W, b), scale, bias, mean, var)` with
    constant f32 weights and parameters, where the convolution has no other
    user, becomes one `kiln.conv(x, W', b')` with, per output channel f,
    s = scale[f] / sqrt(var[f] + epsilon), W'[f] = W[f] * s and
    b'[f] = (b[f] - mean[f]) * s + bias[f] (b = 0 without a bias). The
    batch norm then costs nothing at run time. With `report`, every batch
    norm gets a remark saying whether it was folded and, if not, why.
  }];
  let options = [
    Option<"report", "report", "bool", "false",
           "Emit a remark per batch norm: folded, or the reason it was not">,
  ];
}

def KilnFuseLayerNorm : Pass<"kiln-fuse-layer-norm", "ModuleOp"> {
  let summary = "Fuse a layer norm written out in ops (ReduceMean, Sub, Pow, ...) into kiln.layer_norm";
  let description = [{
    Exporters before opset 17 write LayerNormalization as ops:
    `mean = kiln.reduce_mean(x)`, `c = x - mean`,
    `var = kiln.reduce_mean(c * c)` (or `kiln.pow(c, 2)`), then
    `c / kiln.sqrt(var + eps)` (or `c * kiln.reciprocal(...)`), optionally
    times a scale and plus a bias. Where both means reduce the same
    trailing dimensions of an f32 `x`, keeping them as size 1, eps is a
    one-element f32 constant, the scale and bias have static shapes with at
    most one value per normalized element, and every intermediate feeds
    only the chain, the chain becomes one
    `kiln.layer_norm(x, scale, bias) {axis, epsilon}` (a scale of 1.0 when
    there is none), located at the chain's last op. A scale or bias that
    varies along the other dimensions stays an op after it. With `report`,
    every mean that is centered (`x - mean(x)`) gets a remark saying whether
    it was fused and, if not, why.
  }];
  let options = [
    Option<"report", "report", "bool", "false",
           "Emit a remark per centered mean: fused into a layer norm, or why not">,
  ];
}

def KilnFuseAttention : Pass<"kiln-fuse-attention", "ModuleOp"> {
  let summary = "Fuse MatMul -> scale -> mask -> Softmax -> MatMul into kiln.attention";
  let description = [{
    `kiln.matmul(kiln.softmax(s, axis = last), V)` where s is
    `kiln.matmul(Q, Kt)`, optionally multiplied or divided by a one-element
    f32 constant, then optionally plus an additive mask, becomes one
    `kiln.attention(Q, Kt, V, mask) {scale}`; its lowering never holds more
    than a block of the scores. Q, Kt and V must be f32 of static shape with
    the same batch dimensions; the mask must broadcast over all batch
    dimensions or none, and over the query rows or none; every
    intermediate must have no other user. With `report`, every softmax gets
    a remark saying whether it was fused and, if not, why.
  }];
  let options = [
    Option<"report", "report", "bool", "false",
           "Emit a remark per softmax: fused into an attention kernel, or why not">,
  ];
}

def KilnFuseSiblingMatmuls : Pass<"kiln-fuse-sibling-matmuls", "ModuleOp"> {
  let summary = "Fuse matmuls of one input by constant weights (a transformer's Q, K and V) into one";
  let description = [{
    `kiln.matmul(x, W_i)` for i = 1..n (n >= 2), each W_i a constant [K, N_i]
    matrix of floats of static shape that nothing else uses, x the same
    value of rank 2 or more, in one block, become one
    `kiln.matmul(x, [W_1 ... W_n])`, the weights concatenated along their
    columns at compile time (kiln.concat, folded), and each matmul's users
    read `kiln.slice` of its columns (a view). Where each matmul's only user
    adds a constant bias of one value per column (the same element type,
    nothing else using it), the biases are concatenated too and added once.
    The matmuls of one group all have biases or none, and weights of one
    element type. The fused ops are placed at the first matmul, each
    located at the ops it replaces (a fused location). Runs after the
    passes that rewrite weights per matrix (pruning, int8, 16-bit) and
    before sparsity. With `report`, a remark per group.
  }];
  let options = [
    Option<"report", "report", "bool", "false",
           "Emit a remark per group of matmuls fused into one">,
  ];
}

def KilnQuantizeDynamic : Pass<"kiln-quantize-dynamic", "ModuleOp"> {
  let summary = "Run matmuls with constant weights in int8, activations quantized at run time";
  let description = [{
    A `kiln.matmul` (or a `kiln.gemm` without trans_a) whose right operand
    is a constant f32 [K, N] matrix computes in int8:
      - the weights become int8, symmetric per column:
        ws[n] = max_k |W[k, n]| / 127, Wq = round(W / ws), at compile time;
      - the activations are quantized per tensor at run time
        (`kiln.dynamic_quantize`: uint8, scale xs, zero point xz);
      - a widening `kiln.matmul` (u8 x i8 -> i32) gives
        acc = sum_k Xq Wq, and y = (acc - xz * colsum(Wq)) * xs * ws
        (times alpha, plus beta * C for a Gemm).
    Other matmuls stay in f32. With `report`, each matmul and gemm gets a
    remark saying whether it was quantized and, if not, why.
  }];
  let options = [
    Option<"report", "report", "bool", "false",
           "Emit a remark per matmul/gemm: quantized, or the reason it was not">,
  ];
}

def KilnQuantizeStatic : Pass<"kiln-quantize-static", "ModuleOp"> {
  let summary = "Run matmuls with constant weights in int8, activations quantized as calibrated";
  let description = [{
    As kiln-quantize-dynamic, for each `kiln.matmul` / `kiln.gemm` that carries
    `kiln.activation_range = array<f32: min, max>` (set by kiln-compile from
    calibration data): the activations are quantized to uint8 with the scale
    and zero point that map [min(min, 0), max(max, 0)] onto [0, 255],
    fixed at compile time, instead of at run time. Ops without a range, or
    whose range is [0, 0], stay f32.
  }];
  let options = [
    Option<"report", "report", "bool", "false",
           "Emit a remark per matmul/gemm: quantized (with its scale and zero point), or why not">,
  ];
}

def KilnFuseQdq : Pass<"kiln-fuse-qdq", "ModuleOp"> {
  let summary = "Run the Conv/MatMul/Gemm ops of QDQ graphs on their int8 values";
  let description = [{
    A `kiln.conv` (group 1, static shape), `kiln.matmul` or `kiln.gemm` whose
    activations are a DequantizeLinear of 8-bit values (per tensor:
    `kiln.mul(kiln.sub(kiln.cast(q), zero_point), scale)` with constant
    scale and zero point) and whose weights are a DequantizeLinear of
    constant int8 values with zero zero points (per output channel or per
    tensor) becomes the int8 product of kiln-quantize-static on `q` itself
    and the model's int8 weights and scales: a widening `kiln.matmul` /
    `kiln.conv`, minus zero point times the weights' column sums, times
    activation scale times weight scale. The dequantize-float-quantize of
    the graph as written is gone; the QuantizeLinear producing `q` stays.
  }];
  let options = [
    Option<"report", "report", "bool", "false",
           "Emit a remark per op that reads a DequantizeLinear: fused, or why not">,
  ];
}

def KilnChannelsLast : Pass<"kiln-channels-last", "ModuleOp"> {
  let summary = "Run widening (int8, bf16) convolutions and the ops between them in NHWC";
  let description = [{
    Each widening `kiln.conv` of static shape becomes
    `to_nchw(conv{channels_last}(to_nhwc(x)))` (`kiln.transpose`), and each
    `to_nchw` moves down through the ops that work in either layout:
    elementwise ops of one or two operands (a per-channel [C, 1, 1] operand
    becomes [1, 1, 1, C]; another NCHW operand gets a `to_nhwc`), constant
    `kiln.pad` (pads permuted) and `kiln.max_pool` (`channels_last`). Where
    it meets the next convolution's `to_nhwc` the two fold away. A chain of
    convolutions then keeps its activations NHWC: the im2col of each reads
    runs of contiguous channels, and the product needs no copy back.
  }];
}

def KilnComputeHalfInF32 : Pass<"kiln-compute-half-in-f32", "ModuleOp"> {
  let summary = "Carry out f16/bf16 arithmetic in f32, rounding once per op";
  let description = [{
    Every kiln op with an f16 or bf16 result that rounds (sums, products,
    transcendental functions, normalizations, pooling averages) takes its
    16-bit float operands extended to f32 (constants at compile time),
    computes in f32 and rounds its results back to 16 bits, as onnxruntime
    does: a dot product of K terms summed in 16 bits would lose about
    log2(K) bits. Ops that move, select or compare values (reshape, gather,
    max, where, ...) are exact in any precision and are left alone.
    With `widen-matmuls`, a `kiln.matmul` or `kiln.gemm` of two 16-bit
    operands of one type keeps them and sums in f32 instead (a widening
    matmul, then its result rounded; a Gemm's transposes stay 16-bit, its
    alpha and beta * C are f32): the same arithmetic, for targets whose
    matrix units read 16-bit operands (CUDA's tensor cores).
  }];
  let options = [
    Option<"widenMatmuls", "widen-matmuls", "bool", "false",
           "Matmuls of 16-bit operands keep them and sum in f32 (widening matmuls)">,
  ];
}

def KilnConvertToHalf : Pass<"kiln-convert-to-half", "ModuleOp"> {
  let summary = "Run matmuls and convolutions with constant weights in bf16 or f16, summing in f32";
  let description = [{
    Each `kiln.matmul` / `kiln.gemm` whose right operand is a constant f32
    [K, N] matrix becomes a widening `kiln.matmul` of 16-bit operands (`type`:
    bf16 or f16) with an f32 result: the weights rounded (nearest even) at
    compile time, the activations cast at run time; a Gemm's alpha and
    beta * C follow. Each `kiln.conv` without groups, with a constant f32
    filter and static shapes, likewise becomes a widening 16-bit
    `kiln.conv`, then its bias. An op whose weights do not fit the type (f16
    ends at 65504) stays f32. With `report`, each matmul, gemm and conv gets
    a remark saying whether it was converted and, if not, why.
  }];
  let options = [
    Option<"type", "type", "std::string", "\"bf16\"", "The 16-bit type: bf16 or f16">,
    Option<"report", "report", "bool", "false",
           "Emit a remark per matmul/gemm/conv: converted, or the reason it was not">,
  ];
}

def KilnPrune : Pass<"kiln-prune", "ModuleOp"> {
  let summary = "Zero the least important weights of MatMul, Gemm and Conv";
  let description = [{
    Each `kiln.matmul`, `kiln.gemm` and `kiln.conv` with constant f32
    weights gets its smallest-magnitude weights set to zero. The weights are
    seen as a [K, N] matrix: N outputs (matmul columns, gemm outputs, conv
    filters), K inputs each (a conv's channels times its kernel window).
    `pattern` says what is zeroed:
      - `unstructured`: the `fraction` of the layer's weights of smallest
        |w| (ties: the lower index goes first);
      - `N:M` (e.g. 2:4): of every M consecutive inputs of an output, the
        N of largest |w| stay (K divisible by M);
      - `block:RxC`: the `fraction` of R-output by C-input blocks of
        smallest sum |w| (N divisible by R, K by C).
    Calibration statistics on a layer (set by kiln-compile from
    --calibration-data) make it activation-aware:
      - `kiln.input_norms` (array<f32>: the L2 norm of each input channel
        over the calibration data): Wanda, |w| times the norm of its input
        channel; unstructured pruning then zeros `fraction` of each output's
        weights rather than of the whole layer;
      - `kiln.input_gram` (f32 [K, K]: X^T X of the layer's input rows):
        SparseGPT, inputs pruned in order with the remaining weights
        updated to compensate (unstructured and N:M; block patterns fall
        back to Wanda).
    The pass removes the statistics.

    The first and the last layer (in program order) are left dense unless
    `prune-first-last`, as are the layers whose ONNX node is named in
    `skip`, and depthwise convolutions (one input channel per group).
    kiln-sparsify then decides which pruned layers run sparse. With
    `report`, each layer gets a remark: what was pruned, by which method,
    and the layer's output SQNR predicted from the weights and statistics
    (exact on the calibration data with a Gram matrix), or why not.
  }];
  let options = [
    Option<"fraction", "fraction", "double", "0.5",
           "Fraction of weights (or of blocks) to zero, in [0, 1)">,
    Option<"pattern", "pattern", "std::string", "\"unstructured\"",
           "unstructured, N:M or block:RxC">,
    ListOption<"skip", "skip", "std::string", "ONNX node names of layers to leave dense">,
    Option<"pruneFirstLast", "prune-first-last", "bool", "false",
           "Prune the first and the last layer too">,
    ListOption<"layerFractions", "layer-fractions", "std::string",
               "NODE=FRACTION: the fraction of the layer of that ONNX node (0 leaves it "
               "dense; it applies to the first and last layer too)">,
    Option<"report", "report", "bool", "false",
           "Emit a remark per layer: what was pruned, or the reason it was not">,
  ];
}

def KilnPruneChannels : Pass<"kiln-prune-channels", "ModuleOp"> {
  let summary = "Remove the least important output channels and what reads them";
  let description = [{
    Structured pruning: of each convolution (without groups), gemm and
    matmul with constant weights, the `fraction` of output channels whose
    weights have the smallest L2 norm is removed, with the input channels
    that read them downstream, so that the model gets smaller and runs
    faster on dense kernels. Channels are followed through elementwise ops,
    pooling, depthwise convolutions (which lose the same channels),
    concatenation along channels and [N, C, 1, 1] <-> [N, C] reshapes.
    Channels that an elementwise op of two activations adds together (a
    residual connection) are removed together from every layer that makes
    them, ranked by the sum of their norms, and the fraction applies to each
    such group of layers as a whole. Channels that reach a model output,
    come from a model input, or meet an op that may mix them are kept, as
    are those of the first and last layer (unless `prune-first-last`) and of
    layers named in `skip`. With `report`, each layer gets a remark: how
    many output channels it keeps, or why it keeps them all.
  }];
  let options = [
    Option<"fraction", "fraction", "double", "0.5",
           "Fraction of output channels to remove, in [0, 1)">,
    ListOption<"skip", "skip", "std::string", "ONNX node names of layers to keep whole">,
    Option<"pruneFirstLast", "prune-first-last", "bool", "false",
           "Prune the output channels of the first and the last layer too">,
    Option<"report", "report", "bool", "false",
           "Emit a remark per layer: the channels it keeps">,
  ];
}

def KilnSparsify : Pass<"kiln-sparsify", "ModuleOp"> {
  let summary = "Run matmuls with mostly-zero constant weights as kiln.sparse_matmul";
  let description = [{
    A `kiln.matmul` of f32 with a constant [K, N] right operand, or a
    `kiln.gemm` without trans_a with a constant B (transposed and scaled by
    alpha at compile time; beta * C is added after), becomes a
    `kiln.sparse_matmul` when a cost model predicts that it is at least
    1.25x faster than the dense kernel. The candidates are compressed
    columns (B = 1: 4-byte values and 2-byte row indices per nonzero) and
    output-blocked 16x1 pieces (B = 16, when N is a multiple of 16: 64
    bytes of values and 2 of index per nonzero piece) and, with
    `expand-load`, bitmaps (kiln.bitmap_matmul: a bit per weight and 4
    bytes per nonzero, when N is a multiple of 16). Each kernel's
    predicted time is the larger of its weight traffic and its arithmetic,
    at rates measured with scripts/bench/sparse.py (docs/BENCHMARKS.md):
    the dense kernel streams 4 bytes and does one multiply-add per weight
    and row; the sparse ones do fewer of both, but slower per element. The
    rows M are the product of the input's static leading dimensions (1 when
    one is dynamic). A 1x1 `kiln.conv` of one f32 NCHW image (no stride,
    padding, dilation or groups) with a constant filter [F, C] may become a
    `kiln.sparse_matmul` of its pixels [H*W, C] (compressed columns, the
    image transposed to channels-last, which kiln-channels-last folds
    into the layout of the convolutions around it), then its bias. With
    `int8-bitmaps`, the int8 product that kiln-quantize-dynamic and
    kiln-quantize-static leave (a `kiln.matmul` of ui8 activations by a
    constant i8 [K, N], summed in i32) may become the widening int8
    kiln.bitmap_matmul: a bit per weight and 1 byte per nonzero against
    the dense kernel's byte per weight, and one vpexpandb per 64 weights
    and row. With `report`, each matmul with constant weights gets
    a remark: its sparsity, the kernel chosen and the predicted speedup.
  }];
  let options = [
    Option<"expandLoad", "expand-load", "bool", "false",
           "The target expands packed values into vector lanes in one instruction "
           "(AVX-512): consider bitmaps">,
    Option<"int8Bitmaps", "int8-bitmaps", "bool", "false",
           "The target has vpdpbusd and vpexpandb on 512-bit registers (AVX512-VNNI and "
           "-VBMI2): consider bitmaps for int8 matmuls">,
    Option<"report", "report", "bool", "false",
           "Emit a remark per matmul/gemm with constant weights: sparse or dense, and why">,
  ];
}

#endif
