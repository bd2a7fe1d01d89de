//===- ComputeHalfInF32.cpp - f16/bf16 arithmetic carried out in f32 ------===//
//
// An fp16 or bf16 model stores its tensors in 16 bits, but a dot product of
// K terms summed in 16 bits loses about log2(K) bits: a 3x3 convolution over
// 64 channels (K = 576) ends up ~19 ulp from the correctly rounded result.
// onnxruntime computes such ops in f32 and rounds once. So does kiln: every
// op with a 16-bit float result that rounds (sums, products, transcendental
// functions, normalizations) takes its 16-bit operands extended to f32,
// computes in f32 and rounds its results back. Ops that only move, select or
// compare values are exact in any precision and stay as they are. Constant
// operands are extended at compile time.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "dialects/kiln/KilnDialect.h"
#include "passes/Quantization.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCOMPUTEHALFINF32
#include "passes/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// Whether `op`'s results are exact whatever the precision: it moves,
/// selects or compares elements, or rounds to integers.
bool isExact(Operation *op) {
  return llvm::TypeSwitch<Operation *, bool>(op)
      .Case<ConstantOp, CastOp, BitcastOp, StorageCastOp, ReshapeOp, ShapeOp, TransposeOp,
            ConcatOp, SliceOp, GatherOp, GatherElementsOp, GatherNDOp, PadOp, WindowOp, ExpandOp,
            TileOp, TriluOp, WhereOp, ReluOp, NegOp, AbsOp, SignOp, CeilOp, FloorOp, RoundOp,
            MaxOp, MinOp, ClipOp, MaxPoolOp, MaxPoolIndicesOp, TopKOp, ArgMaxOp, ArgMinOp,
            AssertOp>([](Operation *) { return true; })
      .Case<ScatterElementsOp, ScatterNDOp>([](auto scatter) {
        StringRef r = scatter.getReduction();
        return r == "none" || r == "max" || r == "min";
      })
      .Case<ReduceOp>([](ReduceOp reduce) {
        return reduce.getKind() == "max" || reduce.getKind() == "min";
      })
      .Default([](Operation *) { return false; });
}

RankedTensorType withF32(Type t) {
  auto tt = cast<RankedTensorType>(t);
  return RankedTensorType::get(tt.getShape(), Float32Type::get(t.getContext()));
}

/// A kiln.constant of 16-bit floats as an f32 constant; null if its data is
/// not available.
Value widenedConstant(OpBuilder &b, ConstantOp constant) {
  ElementsAttr values = constant.getValue();
  auto type = withF32(constant.getType());
  if (auto dense = dyn_cast<DenseElementsAttr>(values); dense && dense.isSplat()) {
    APFloat v = dense.getSplatValue<APFloat>();
    bool lost;
    v.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lost);
    return ConstantOp::create(b, constant.getLoc(), type, DenseElementsAttr::get(type, v));
  }
  std::optional<ArrayRef<char>> raw = rawElementsData(values);
  if (!raw)
    return {};
  const llvm::fltSemantics &sem = getElementTypeOrSelf(constant.getType()).isF16()
                                      ? APFloat::IEEEhalf()
                                      : APFloat::BFloat();
  std::vector<float> widened(raw->size() / 2);
  for (size_t i = 0; i < widened.size(); ++i) {
    uint16_t bits;
    std::memcpy(&bits, raw->data() + 2 * i, 2);
    widened[i] = APFloat(sem, APInt(16, bits)).convertToFloat();
  }
  return blobConstant(b, constant.getLoc(), type, ArrayRef(widened), "widened");
}

/// 16-bit constants already widened, each once.
using WidenedConstants = DenseMap<Value, Value>;

/// `v` as f32: its constant widened at compile time, else a cast.
Value toF32(OpBuilder &b, Location loc, Value v, WidenedConstants &widened) {
  if (auto constant = v.getDefiningOp<ConstantOp>()) {
    Value &wide = widened[v];
    if (!wide) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(constant);
      wide = widenedConstant(b, constant);
    }
    if (wide)
      return wide;
  }
  return CastOp::create(b, loc, withF32(v.getType()), v);
}

/// Clones `op` on f32 operands with f32 results, rounded back to their
/// original 16-bit types.
void computeInF32(Operation *op, WidenedConstants &widened) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  SmallVector<Value> operands;
  for (Value v : op->getOperands())
    operands.push_back(isHalfFloat(v.getType()) ? toF32(b, loc, v, widened) : v);
  SmallVector<Type> types;
  for (Type t : op->getResultTypes())
    types.push_back(isHalfFloat(t) ? withF32(t) : t);
  OperationState state(loc, op->getName(), operands, types, op->getAttrs());
  Operation *wide = b.create(state);
  for (auto [old, result] : llvm::zip(op->getResults(), wide->getResults()))
    old.replaceAllUsesWith(old.getType() == result.getType()
                               ? Value(result)
                               : Value(CastOp::create(b, loc, old.getType(), result)));
  op->erase();
}

/// Whether `op` is a matmul or a Gemm of two 16-bit operands of one type
/// (a Gemm's C may be of either).
bool isHalfMatmul(Operation *op) {
  return isa<MatMulOp, GemmOp>(op) && isHalfFloat(op->getOperand(0).getType()) &&
         getElementTypeOrSelf(op->getOperand(0).getType()) ==
             getElementTypeOrSelf(op->getOperand(1).getType());
}

/// `v`, a matrix, transposed where `transposed` (exact: it stays 16-bit).
Value matrix(OpBuilder &b, Location loc, Value v, bool transposed) {
  return transposed ? createTranspose(b, loc, v, {1, 0}) : v;
}

/// `op` (a matmul, or a Gemm: its operands transposed, then alpha and beta
/// times C in f32) as a widening matmul of its 16-bit operands with an f32
/// result, rounded back once: the products are exact in f32, so this is
/// computeInF32's arithmetic without widening the operands first.
void widenResult(Operation *op, WidenedConstants &widened) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  Value old = op->getResult(0);
  auto gemm = dyn_cast<GemmOp>(op);
  Value lhs = gemm ? matrix(b, loc, gemm.getA(), gemm.getTransA()) : op->getOperand(0);
  Value rhs = gemm ? matrix(b, loc, gemm.getB(), gemm.getTransB()) : op->getOperand(1);
  auto product = MatMulOp::create(b, loc, withF32(old.getType()), lhs, rhs);
  product->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  Value wide = product;
  if (gemm) {
    Value c = gemm.getC();
    if (c && isHalfFloat(c.getType()))
      c = toF32(b, loc, c, widened);
    ConstantWeightMatmul epilogue{op, gemm.getA(), {}, 0, 0, false,
                                  gemm.getAlpha().convertToFloat(),
                                  gemm.getBeta().convertToFloat(), c};
    wide = gemmEpilogue(b, loc, epilogue, wide, /*alphaApplied=*/false);
  }
  old.replaceAllUsesWith(CastOp::create(b, loc, old.getType(), wide));
  op->erase();
}

struct KilnComputeHalfInF32Pass
    : mlir::kiln::impl::KilnComputeHalfInF32Base<KilnComputeHalfInF32Pass> {
  using KilnComputeHalfInF32Base::KilnComputeHalfInF32Base;

  void runOnOperation() override {
    SmallVector<Operation *> rounding;
    getOperation().walk([&](Operation *op) {
      if (op->getDialect() == getContext().getLoadedDialect<KilnDialect>() &&
          op->getNumRegions() == 0 && !isExact(op) &&
          llvm::any_of(op->getResultTypes(), isHalfFloat) &&
          llvm::all_of(op->getOperandTypes(), [](Type t) {
            return isHalfFloat(t) || !isa<FloatType>(getElementTypeOrSelf(t));
          }))
        rounding.push_back(op);
    });
    WidenedConstants widened;
    for (Operation *op : rounding) {
      if (widenMatmuls && isHalfMatmul(op))
        widenResult(op, widened);
      else
        computeInF32(op, widened);
    }
  }
};

} // namespace
