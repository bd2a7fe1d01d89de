//===- KernelMath.cpp - math ops the GPU targets lack, rewritten ----------===//
#include "codegen/gpu/KernelMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace {

/// An integer power with a run-time exponent, by squaring: a loop over the
/// exponent's bits. A negative exponent gives 1 for a base of 1, +-1 for
/// -1 and 0 otherwise (math.ipowi's definition).
struct IntegerPowerBySquaring : OpRewritePattern<math::IPowIOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::IPowIOp op, PatternRewriter &rewriter) const override {
    auto type = dyn_cast<IntegerType>(op.getType());
    if (!type)
      return failure(); // vectors are unrolled before kernels are lowered
    Location loc = op.getLoc();
    Value base = op.getLhs(), exponent = op.getRhs();
    auto constant = [&](int64_t v) { return arith::ConstantIntOp::create(rewriter, loc, type, v); };
    Value zero = constant(0), one = constant(1), minusOne = constant(-1);
    Value lb = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value ub = arith::ConstantIndexOp::create(rewriter, loc, type.getWidth());
    Value step = arith::ConstantIndexOp::create(rewriter, loc, 1);
    auto loop = scf::ForOp::create(
        rewriter, loc, lb, ub, step, ValueRange{one, base, exponent},
        [&](OpBuilder &b, Location l, Value, ValueRange acc) {
          Value bit = arith::AndIOp::create(b, l, acc[2], one);
          Value set = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ne, bit, zero);
          Value times = arith::MulIOp::create(b, l, acc[0], acc[1]);
          Value result = arith::SelectOp::create(b, l, set, times, acc[0]);
          Value square = arith::MulIOp::create(b, l, acc[1], acc[1]);
          Value rest = arith::ShRUIOp::create(b, l, acc[2], one);
          scf::YieldOp::create(b, l, ValueRange{result, square, rest});
        });
    Value negative =
        arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::slt, exponent, zero);
    Value odd = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ne,
                                      arith::AndIOp::create(rewriter, loc, exponent, one), zero);
    Value isOne = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq, base, one);
    Value isMinusOne =
        arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq, base, minusOne);
    Value minusOnePower = arith::SelectOp::create(rewriter, loc, odd, minusOne, one);
    Value fraction = arith::SelectOp::create(
        rewriter, loc, isOne, one,
        arith::SelectOp::create(rewriter, loc, isMinusOne, minusOnePower, zero));
    rewriter.replaceOpWithNewOp<arith::SelectOp>(op, negative, fraction, loop.getResult(0));
    return success();
  }
};

} // namespace

void mlir::kiln::populateIntegerPowerBySquaringPattern(RewritePatternSet &patterns) {
  patterns.add<IntegerPowerBySquaring>(patterns.getContext());
}
