#ifndef KILN_CODEGEN_PASSES_TD
#define KILN_CODEGEN_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertKilnToLinalg : Pass<"kiln-convert-to-linalg", "ModuleOp"> {
  let summary = "Lower kiln graph ops to linalg, tensor, arith and math on tensors";
  let description = [{
    Every kiln op becomes destination-style linalg (named ops for matmul, conv
    and pooling so that the CPU schedule can match them, linalg.generic for
    elementwise ops and reductions) plus tensor reshapes and slices. Weights
    stay dense_resource blobs on arith.constant. A kiln.assert becomes an
    scf.if that calls the runtime's `kiln_check_failed` with its message.

    The lowering is the same for every target: convolutions stay named
    linalg convolutions (a widening one, 8-bit or bf16 operands, is a
    linalg.generic that extends each operand). A target's strategy for them
    (im2col, direct convolution, ...) runs before this pass and leaves
    nothing for it to do. A kiln.attention is an online softmax over blocks
    of queries by keys, whose sizes the target picks; with a key block of 0
    it is unfused (batch matmul, row reductions, batch matmul) for targets
    that distribute those themselves.
  }];
  let options = [
    Option<"attentionQueryBlock", "attention-query-block", "int64_t", "128",
           "Most query rows of one attention task (a divisor of the rows is taken)">,
    Option<"attentionKeyBlock", "attention-key-block", "int64_t", "256",
           "Most keys of one attention block (a divisor of the keys is taken); 0: "
           "no blocks, the whole score matrix">,
    Option<"attentionHalfMatmuls", "attention-half-matmuls", "bool", "false",
           "Unfused (a key block of 0), a half model's attention (Q, K^T and V "
           "widened from one 16-bit type) multiplies the 16-bit values, P "
           "rounded to them, f32 sums: the matmuls of 16-bit operands that the "
           "target's tensor cores take">,
  ];
  let dependentDialects = ["linalg::LinalgDialect", "tensor::TensorDialect",
                           "arith::ArithDialect", "math::MathDialect", "scf::SCFDialect",
                           "memref::MemRefDialect", "func::FuncDialect",
                           "vector::VectorDialect"];
}

def KilnFuseElementwise : Pass<"kiln-fuse-elementwise", "ModuleOp"> {
  let summary = "Fuse elementwise linalg ops and fold reshapes, keeping contractions named";
  let description = [{
    First, each tree of single-use elementwise producers (all-parallel
    generics with a permutation result map, reading neither their output nor
    linalg.index) is fused into its root in one step: every body is cloned
    once, leaves are deduplicated by (value, indexing map), and splat
    constants become scalars, so that compile time is linear in the graph
    (upstream's pairwise pattern re-clones the growing body per node). A
    fused body stops at 256 operations: LLVM's loop vectorizer is quadratic
    in a loop body's length. Then upstream elementwise fusion (producer/
    consumer fusion of linalg.generic, reshape folding by expansion, constant
    folding) handles the rest, except that no fusion
    touches a named structured op such as linalg.matmul or linalg.fill:
    folding a reshape into a matmul would turn it into a linalg.generic that
    the CPU schedule no longer recognizes, leaving a scalar loop nest. A
    producer that other ops use too is fused (computed again in each
    consumer) only when it is a single elementwise op; anything larger, such
    as a LayerNormalization's normalize step, is computed once. With
    `report`, each decision on an elementwise producer and consumer gets a
    `fusion:` remark at the producer (kiln-cpu-fuse-epilogues reports what
    happens to the consumers of matmuls and convolutions). With
    `keep-contractions`, no producer is fused into a generic that sums
    products over reduction loops (a quantized matmul or convolution), so
    that it stays one the GPU pipeline tiles as a matmul; the producer
    (the previous layer's requantization) is then computed once per
    value, not once per output that reads it.
  }];
  let options = [
    Option<"report", "report", "bool", "false", "Emit a `fusion:` remark per decision">,
    Option<"keepContractions", "keep-contractions", "bool", "false",
           "Fuse nothing into a contraction or convolution (the GPU pipeline: it tiles "
           "those as matmuls, and a producer fused into one is computed again for every "
           "output it feeds)">,
  ];
  let dependentDialects = ["linalg::LinalgDialect", "tensor::TensorDialect",
                           "affine::AffineDialect"];
}

#endif // KILN_CODEGEN_PASSES_TD
