//===- AttentionRows.h - what decides attention's form on GPUs --*- C++ -*-===//
#ifndef KILN_CODEGEN_GPU_ATTENTIONROWS_H
#define KILN_CODEGEN_GPU_ATTENTIONROWS_H

#include "dialects/kiln/KilnDialect.h"

namespace mlir::kiln {

/// The bytes of `op`'s scores, N x Lq x Lk floats (batch times heads,
/// queries, keys), were they written out: above the pipeline's limit
/// (`--gpu-attention`), attention is one kernel.
int64_t attentionScoresBytes(AttentionOp op);

/// Element [at..., row, col] of `t`, as f32 (a 16-bit one widened).
Value elementAsF32(OpBuilder &b, Location loc, Value t, ValueRange at, Value row, Value col);

/// An attention's keys as its one-kernel forms read them: K^T [B..., D, Lk]
/// as the op has it or, where that is a kiln.transpose of K [B..., Lk, D]
/// swapping the last two dimensions (as exporters write attention), K
/// itself: no transposed copy is written out, and the D values of a key
/// are contiguous. Either before its widening (AttentionOperands).
struct KeysOperand {
  Value source;
  bool isKeys; ///< source is K, not K^T

  static KeysOperand of(AttentionOp op);
  /// K^T's element (d, j) at batch entry `at`, as f32.
  Value element(OpBuilder &b, Location loc, ValueRange at, Value d, Value j) const;
};

/// One attention's operands as its one-kernel forms read them, and their
/// sizes: query [B..., Lq, D], keys (KeysOperand), value [B..., Lk, Dv],
/// mask [1 or B..., 1 or Lq, Lk] (each batch dimension 1 or the batch's).
/// Where an operand is a kiln.cast widening a 16-bit tensor to f32 (a half
/// model's attention, kiln-fuse-attention), the kernels read that tensor
/// and widen each value: no widened copy is written.
struct AttentionOperands {
  Value query;
  KeysOperand keys;
  Value value, mask;
  float scale;
  SmallVector<int64_t> batch = {}; ///< B...
  int64_t lq = 0, d = 0, lk = 0, dv = 0;
  /// The op's only reader where that rounds the result to 16 bits (a half
  /// model's output, kiln-fuse-attention): the kernel writes the rounded
  /// values in its place. Null otherwise.
  mutable CastOp rounding = {}; // (its accessors are not const)

  static AttentionOperands of(AttentionOp op);
  /// The element type the kernel writes: f32, or the rounding's.
  Type resultType() const;
  /// The mask's element at `indices` of the scores, as f32.
  Value maskAt(OpBuilder &b, Location loc, ValueRange indices) const;
  /// The 16-bit type that Q, K and V all are, or null.
  Type halfType() const;
};

/// Replaces `op` (and `a`'s rounding of it) by the kernel that `build`
/// makes in its place, then erases the widenings and the transpose that
/// the kernel read through if nothing else reads them.
void replaceAttention(AttentionOp op, const AttentionOperands &a,
                      function_ref<Value(OpBuilder &, Location)> build);

} // namespace mlir::kiln

#endif
