//===- StagedMatmul.h - a thread's matmul over staged chunks ----*- C++ -*-===//
//
// What the tensor-core passes (kiln-cuda-mma-sync, kiln-cuda-wgmma) take:
// a thread's contraction as kiln-gpu-promote-operands leaves it, reading
// chunks of both operands from shared memory in a chunk loop, summing
// into a private accumulator. Each pass has the workgroup's warps compute
// the tile with its own instruction; both then write the sums to a
// workgroup buffer of the tile and add each thread's region of it to the
// thread's accumulator, where the op's epilogue finds them as before.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CUDA_STAGEDMATMUL_H
#define KILN_CODEGEN_CUDA_STAGEDMATMUL_H

#include "codegen/gpu/GpuTarget.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::kiln {

constexpr int64_t kWarp = 32;

/// An operand of a thread's contraction: its view of a staged chunk, whose
/// dimension `step` is the reduction's and dimension `position` the tile's
/// rows (A) or columns (B); any other has extent 1 (a batch).
struct StagedOperand {
  mutable memref::SubViewOp view; // (its accessors are not const)
  unsigned step = 0;
  unsigned position = 0;
  unsigned input = 0; ///< its index among the op's inputs

  Value chunk() const { return view.getSource(); }
  OpFoldResult offset() const { return view.getMixedOffsets()[position]; }
  OpFoldResult size() const { return view.getMixedSizes()[position]; }
  /// The chunk's indices of step `k` and row or column `at`.
  SmallVector<Value> indices(Value k, Value at, Value zero) const {
    SmallVector<Value> indices(view.getType().getRank(), zero);
    indices[step] = k;
    indices[position] = at;
    return indices;
  }
  /// Whether the steps of k run along the chunk's lines (a line is a row
  /// of A, a column of B).
  bool stepsAlongLines() const { return step + 1 == view.getType().getRank(); }
};

/// A thread's contraction as kiln-gpu-promote-operands leaves it, which the
/// tensor cores can compute: in the chunk loop of a launch of static block
/// size (a whole number of warps); its first loop the reduction, the others
/// parallel and its output's (batch..., i, j) in order, a private
/// accumulator (f32, or i32 for bytes) of extent 1 along the batch loops;
/// one input A of (k, i), the other B of (k, j) (each possibly with batch
/// loops of extent 1), both views of staged chunks of one element type
/// that the tensor cores take (`a`, `b`: their PTX types), whole along k.
/// A matmul (k, i, j) is one, a convolution's im2col contraction
/// (k, n, f, p) with its filter as A another.
struct StagedMatmul {
  linalg::GenericOp op;
  gpu::LaunchOp launch;
  scf::ForOp chunks;
  scf::IfOp guard;           ///< the op's guard, or null
  StagedOperand a, b;
  NVVM::MMATypes typeA, typeB;
  Type sum;                  ///< f32, or i32 for 8-bit integers
  int64_t perRegister;       ///< operand values per 32-bit register
  int64_t chunk, rows, cols; ///< C and the workgroup's tile
  int64_t threads;           ///< the workgroup's
  bool sumsReplaceChunks;    ///< the sums' buffer is the chunks' after the loop

  bool integer() const { return isa<IntegerType>(sum); }
};

/// `op` as a StagedMatmul for `target` (f32 operands too with `tf32`).
std::optional<StagedMatmul> asStagedMatmul(linalg::GenericOp op, bool tf32,
                                           const GpuTarget &target);

/// The bytes of a buffer of `type` (static), rounded up to 16.
int64_t bytesOf(MemRefType type);

/// The bytes of the workgroup memory `launch` allocates.
int64_t workgroupBytes(gpu::LaunchOp launch);

/// The workgroup buffer that holds `operand`'s staged chunks.
memref::AllocOp bufferOf(const StagedOperand &operand);

/// The workgroup's buffer of the sums (m's tile of f32 or i32), at the
/// start of its launch's body: its own, or where they replace the chunks,
/// one byte buffer that both staged chunks' buffers (`chunks`, allocs)
/// become views of (`chunks` then the views), the sums a view of its start.
Value sumsBuffer(OpBuilder &b, Location loc, StagedMatmul &m, MutableArrayRef<Value> chunks);

/// A thread's private buffer of `shape` sums of type `sum`, zero, made
/// before `m`'s chunk loop (the builder left there).
Value zeroSums(OpBuilder &b, Location loc, StagedMatmul &m, ArrayRef<int64_t> shape, Type sum);

/// After the chunk loop: `storeSums` (each lane's sums to `sums`, the
/// workgroup's buffer; after a barrier where it is the chunks'), a
/// barrier, and each thread's results added to its accumulator (in the
/// guard); `m.op` and its emptied guard go.
void addSumsToAccumulators(OpBuilder &b, Location loc, StagedMatmul &m, Value sums,
                           function_ref<void()> storeSums);

/// Index arithmetic of one lane, built at a fixed point.
struct Lane {
  OpBuilder &b;
  Location loc;
  Value id;                   ///< the lane, 0..31
  Value group, quad;          ///< g = lane / 4, t = lane % 4
  Value warp;                 ///< its warp in its unit (0 for a unit of one warp)
  Value rowOrigin, colOrigin; ///< its warp's (warpgroup's) block in the workgroup's tile
  Value zero;

  /// origin + scale * v + c
  Value at(Value origin, Value v, int64_t scale, int64_t c);
  Value plus(Value v, int64_t c);
  /// origin + f(lane), f an expression of symbol 0, the lane.
  Value at(Value origin, function_ref<AffineExpr(AffineExpr)> f);
};

/// The lane of `m`'s thread, its group and quad, and the origin of the
/// block of `unitRows` x `unitCols` of the tile that the thread's unit
/// (its warp, or warpgroup, of `unitThreads`) owns, the units across the
/// tile's columns first.
Lane laneOf(OpBuilder &b, Location loc, StagedMatmul &m, int64_t unitThreads,
            int64_t unitRows, int64_t unitCols);

} // namespace mlir::kiln

#endif
