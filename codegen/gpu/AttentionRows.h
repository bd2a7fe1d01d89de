//===- AttentionRows.h - what decides attention's form on GPUs --*- C++ -*-===//
#ifndef KILN_CODEGEN_GPU_ATTENTIONROWS_H
#define KILN_CODEGEN_GPU_ATTENTIONROWS_H

#include "dialects/kiln/KilnDialect.h"

namespace mlir::kiln {

/// The bytes of `op`'s scores, N x Lq x Lk floats (batch times heads,
/// queries, keys), were they written out: above the pipeline's limit
/// (`--gpu-attention`), attention is one kernel.
int64_t attentionScoresBytes(AttentionOp op);

/// An attention's keys as its one-kernel forms read them: K^T [B..., D, Lk]
/// as the op has it or, where that is a kiln.transpose of K [B..., Lk, D]
/// swapping the last two dimensions (as exporters write attention), K
/// itself: no transposed copy is written out, and the D values of a key
/// are contiguous.
struct KeysOperand {
  Value source;
  bool isKeys; ///< source is K, not K^T

  static KeysOperand of(AttentionOp op);
  /// K^T's element (d, j) at batch entry `at`.
  Value element(OpBuilder &b, Location loc, ValueRange at, Value d, Value j) const;
};

/// One attention's operands as its one-kernel forms read them, and their
/// sizes: query [B..., Lq, D], keys (KeysOperand), value [B..., Lk, Dv],
/// mask [1 or B..., 1 or Lq, Lk] (each batch dimension 1 or the batch's).
struct AttentionOperands {
  Value query;
  KeysOperand keys;
  Value value, mask;
  float scale;
  SmallVector<int64_t> batch = {}; ///< B...
  int64_t lq = 0, d = 0, lk = 0, dv = 0;

  static AttentionOperands of(AttentionOp op);
};

/// Replaces `op` by the kernel that `build` makes in its place, then
/// erases the transpose that `keys` read through if nothing else reads it.
void replaceAttention(AttentionOp op, const KeysOperand &keys,
                      function_ref<Value(OpBuilder &, Location)> build);

} // namespace mlir::kiln

#endif
