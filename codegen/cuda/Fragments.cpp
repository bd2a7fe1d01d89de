//===- Fragments.cpp - a lane's registers of staged chunks ----------------===//
#include "codegen/cuda/Fragments.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::kiln;

Value mlir::kiln::packWord(OpBuilder &b, Location loc, ArrayRef<Value> values) {
  unsigned bits = values[0].getType().getIntOrFloatBitWidth();
  Value word;
  for (auto [e, value] : llvm::enumerate(values)) {
    Value v = value;
    if (!isa<IntegerType>(v.getType()))
      v = arith::BitcastOp::create(b, loc, b.getIntegerType(bits), v);
    v = arith::ExtUIOp::create(b, loc, b.getI32Type(), v);
    if (e > 0)
      v = arith::ShLIOp::create(b, loc, v,
                                arith::ConstantIntOp::create(b, loc, b.getI32Type(), bits * e));
    word = word ? arith::OrIOp::create(b, loc, word, v).getResult() : v;
  }
  return word;
}

Value mlir::kiln::packRegister(OpBuilder &b, Location loc, ArrayRef<Value> values) {
  Value word = packWord(b, loc, values);
  if (values[0].getType().isF16()) // f16 operands are <2 x half>
    return LLVM::BitcastOp::create(b, loc, VectorType::get({2}, b.getF16Type()), word);
  return word;
}

Value mlir::kiln::loadRegister(Lane &l, int64_t perRegister, const StagedOperand &operand,
                               Value k, Value at) {
  if (perRegister > 1 && operand.stepsAlongLines()) {
    Type element = cast<MemRefType>(operand.chunk().getType()).getElementType();
    Value values = vector::LoadOp::create(l.b, l.loc, VectorType::get({perRegister}, element),
                                          operand.chunk(), operand.indices(k, at, l.zero),
                                          /*nontemporal=*/false, llvm::Align(4));
    if (element.isF16()) // f16 operands are <2 x half>
      return values;
    return LLVM::BitcastOp::create(l.b, l.loc, l.b.getI32Type(), values);
  }
  SmallVector<Value> values;
  for (int64_t e = 0; e < perRegister; ++e)
    values.push_back(memref::LoadOp::create(l.b, l.loc, operand.chunk(),
                                            operand.indices(l.plus(k, e), at, l.zero)));
  if (perRegister == 1) // tf32
    return NVVM::ConvertFloatToTF32Op::create(l.b, l.loc, l.b.getI32Type(), values[0],
                                              NVVM::FPRoundingMode::RNA,
                                              NVVM::SaturationMode::NONE, false);
  return packRegister(l.b, l.loc, values);
}

bool mlir::kiln::readableWithLdmatrix(const StagedOperand &operand) {
  auto chunk = operand.chunk().getDefiningOp<memref::SubViewOp>();
  MemRefType type = chunk.getType(), buffer = chunk.getSourceType();
  auto [strides, offset] = buffer.getStridesAndOffset();
  std::optional<int64_t> lastOffset = getConstantIntValue(chunk.getMixedOffsets().back());
  int64_t last = type.getRank() - 1;
  return type.getElementTypeBitWidth() == 16 &&
         (operand.position == last || operand.step == last) && strides.back() == 1 &&
         lastOffset && *lastOffset % 8 == 0 &&
         llvm::all_of(ArrayRef(strides).drop_back(), [](int64_t s) { return s % 8 == 0; });
}

namespace {
/// A 32-bit register of two 16-bit values (<2 x half> for f16, as mma.sync
/// takes them).
Value asRegister(OpBuilder &b, Location loc, Value pair) {
  if (cast<VectorType>(pair.getType()).getElementType().isF16())
    return pair;
  return LLVM::BitcastOp::create(b, loc, b.getI32Type(), pair);
}
} // namespace

SmallVector<Value> mlir::kiln::ldmatrix(Lane &l, const StagedOperand &operand, int64_t count,
                                        Value step, Value at, BlockFn stepBlock,
                                        BlockFn atBlock) {
  return ldmatrix(l, operand.chunk(), operand.step, operand.position, count, step, at, stepBlock,
                  atBlock);
}

SmallVector<Value> mlir::kiln::ldmatrix(Lane &l, Value buffer, unsigned stepDim, unsigned atDim,
                                        int64_t count, Value step, Value at, BlockFn stepBlock,
                                        BlockFn atBlock) {
  auto type = cast<MemRefType>(buffer.getType());
  bool linesAreSteps = atDim + 1 == type.getRank();
  Value k = l.at(step, [&](AffineExpr lane) {
    AffineExpr first = stepBlock(lane.floorDiv(8)) * 8;
    return linesAreSteps ? first + lane % 8 : first;
  });
  Value x = l.at(at, [&](AffineExpr lane) {
    AffineExpr first = atBlock(lane.floorDiv(8)) * 8;
    return linesAreSteps ? first : first + lane % 8;
  });
  SmallVector<Value> indices(type.getRank(), l.zero);
  indices[stepDim] = k;
  indices[atDim] = x;
  auto matrices = nvgpu::LdMatrixOp::create(
      l.b, l.loc, VectorType::get({count, 2}, type.getElementType()), buffer, indices,
      /*transpose=*/linesAreSteps, count);
  SmallVector<Value> regs;
  for (int64_t r = 0; r < count; ++r)
    regs.push_back(asRegister(
        l.b, l.loc, vector::ExtractOp::create(l.b, l.loc, matrices, ArrayRef<int64_t>{r})));
  return regs;
}

SmallVector<Value> mlir::kiln::ldmatrix16x16(Lane &l, const StagedOperand &operand, Value at,
                                             Value step) {
  return ldmatrix(
      l, operand, 4, step, at, [](AffineExpr j) { return j.floorDiv(2); },
      [](AffineExpr j) { return j % 2; });
}

void mlir::kiln::accumulateTile(OpBuilder &b, Location loc, Value sums, Value tile,
                                function_ref<Value(ValueRange c)> mma) {
  auto index = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  SmallVector<Value> c;
  for (int64_t e = 0; e < 4; ++e)
    c.push_back(memref::LoadOp::create(b, loc, sums, ValueRange{tile, index(e)}));
  Value d = mma(c);
  for (int64_t e = 0; e < 4; ++e)
    memref::StoreOp::create(b, loc, LLVM::ExtractValueOp::create(b, loc, d, ArrayRef<int64_t>{e}),
                            sums, ValueRange{tile, index(e)});
}
