//===- Fragments.h - a lane's registers of staged chunks --------*- C++ -*-===//
//
// How a lane loads its registers of an mma fragment from a staged chunk
// (kiln-cuda-mma-sync, kiln-cuda-mma-sparse): 16-bit values by ldmatrix
// where the chunk allows it, else value by value, packed two 16-bit (four
// 8-bit) values to a 32-bit register, the first in the lowest bits.
//
// ldmatrix (PTX ISA 8.0, section 9.7.13.4.15): an 8x8 block of steps by
// rows (or columns) is one 8x8 matrix. Lane l gives the address of line
// l % 8 of matrix l / 8, and receives steps 2t and 2t + 1 of row (column)
// g = l / 4 (t = l % 4), the low half first: where the chunk's lines are
// rows (a step of k runs along a line), as row g's elements 2t and 2t + 1;
// where they are steps (the rows run along them), by `.trans`, as elements
// [2t][g] and [2t + 1][g].
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CUDA_FRAGMENTS_H
#define KILN_CODEGEN_CUDA_FRAGMENTS_H

#include "codegen/cuda/StagedMatmul.h"

namespace mlir::kiln {

/// Two 16-bit or four 8-bit values as one i32, the first in the lowest
/// bits.
Value packWord(OpBuilder &b, Location loc, ArrayRef<Value> values);

/// The same as a 32-bit register as mma takes it: <2 x half> for f16,
/// else the i32.
Value packRegister(OpBuilder &b, Location loc, ArrayRef<Value> values);

/// One register of `perRegister` values along k from step `k` on, at row
/// (column) `at` of `operand`'s chunk: one 32-bit load where the steps run
/// along the chunk's lines (k a multiple of perRegister, every line on 16
/// bytes), else value by value; one f32 (perRegister 1) is rounded to
/// tf32 (cvt.rna).
Value loadRegister(Lane &l, int64_t perRegister, const StagedOperand &operand, Value k, Value at);

/// Whether `operand`'s chunk can be read with ldmatrix: 16-bit values,
/// its lines either the steps of k or the rows (columns), every line and
/// every 8 of them 16-byte aligned (the buffer is): the buffer's strides
/// but the last multiples of 8, the chunk's offset along the last
/// dimension too.
bool readableWithLdmatrix(const StagedOperand &operand);

/// Which 8x8 block of steps (or of rows, columns) matrix `j` of an
/// ldmatrix holds, as an expression of j.
using BlockFn = function_ref<AffineExpr(AffineExpr j)>;

/// The registers of an ldmatrix of `count` 8x8 matrices from `operand`'s
/// chunk, matrix j the one of steps 8 stepBlock(j) on from `step` and of
/// rows (columns) 8 atBlock(j) on from `at` (an x2 reads lanes 0-15's
/// addresses only).
SmallVector<Value> ldmatrix(Lane &l, const StagedOperand &operand, int64_t count, Value step,
                            Value at, BlockFn stepBlock, BlockFn atBlock);

/// The same from a workgroup `buffer` of 16-bit values whose dimension
/// `stepDim` holds the steps and `atDim` the rows (columns), any other
/// read at 0; rows 16-byte aligned.
SmallVector<Value> ldmatrix(Lane &l, Value buffer, unsigned stepDim, unsigned atDim,
                            int64_t count, Value step, Value at, BlockFn stepBlock,
                            BlockFn atBlock);

/// Lane's 16x16 fragment (an mma's A of m16n8k16) of rows (columns)
/// `at` on, steps `step` on, by one ldmatrix.x4: matrix j holds rows
/// 8 (j % 2) on, steps 8 (j / 2) on, register j.
SmallVector<Value> ldmatrix16x16(Lane &l, const StagedOperand &operand, Value at, Value step);

/// Tile `tile`'s 4 sums in `sums` (a lane's private memref<tiles x 4>)
/// given to `mma` as its C fragment, and the 4 of its D fragment (an LLVM
/// struct) stored back in their place.
void accumulateTile(OpBuilder &b, Location loc, Value sums, Value tile,
                    function_ref<Value(ValueRange c)> mma);

} // namespace mlir::kiln

#endif
