//===- AttentionRows.h - what decides attention's form on GPUs --*- C++ -*-===//
#ifndef KILN_CODEGEN_GPU_ATTENTIONROWS_H
#define KILN_CODEGEN_GPU_ATTENTIONROWS_H

#include "dialects/kiln/KilnDialect.h"

namespace mlir::kiln {

/// The bytes of `op`'s scores, N x Lq x Lk floats (batch times heads,
/// queries, keys), were they written out: above the pipeline's limit
/// (`--gpu-attention`), attention is one kernel.
int64_t attentionScoresBytes(AttentionOp op);

} // namespace mlir::kiln

#endif
