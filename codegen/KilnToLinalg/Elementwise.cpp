//===- Elementwise.cpp - elementwise kiln ops to linalg.generic -----------===//
//
// Each elementwise kiln op becomes one linalg.generic (operands broadcast by
// indexing maps) whose body is the scalar arith/math op for the element type:
// floats use the ...F ops, integers the signed ...SI/...I ops, i1 the bitwise
// ops.
//
//===----------------------------------------------------------------------===//
#include "codegen/KilnToLinalg/Builders.h"
#include "dialects/kiln/KilnDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {

bool isFloat(Type t) { return isa<FloatType>(t); }

template <typename KilnOp>
struct ElementwiseLowering : OpConversionPattern<KilnOp> {
  using OpConversionPattern<KilnOp>::OpConversionPattern;

  /// Whether the scalar body exists for operands of this element type.
  virtual bool supports(Type operandElement) const { return true; }
  virtual Value scalar(OpBuilder &b, Location loc, KilnOp op, ValueRange args) const = 0;

  LogicalResult matchAndRewrite(KilnOp op, typename KilnOp::Adaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    ValueRange operands = adaptor.getOperands();
    Type et = getElementTypeOrSelf(operands.back().getType());
    if (!supports(et))
      return rewriter.notifyMatchFailure(op, "unsupported element type");
    Value r = buildElementwise(rewriter, op.getLoc(), signlessType(op.getType()),
                               operands, [&](OpBuilder &b, Location l, ValueRange args) {
                                 return scalar(b, l, op, args);
                               });
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// One scalar op for floats, one for signed and one for unsigned integers
/// (void: not available; the unsigned one defaults to the signed one).
template <typename KilnOp, typename FloatOp, typename IntOp = void, typename UIntOp = IntOp>
struct ArithLowering : ElementwiseLowering<KilnOp> {
  using ElementwiseLowering<KilnOp>::ElementwiseLowering;
  bool supports(Type et) const override {
    return isFloat(et) ? !std::is_void_v<FloatOp> : !std::is_void_v<IntOp>;
  }
  Value scalar(OpBuilder &b, Location loc, KilnOp op, ValueRange args) const override {
    if constexpr (!std::is_void_v<FloatOp>)
      if (isFloat(args[0].getType()))
        return FloatOp::create(b, loc, args);
    if constexpr (!std::is_void_v<IntOp>) {
      if (isUnsigned(op->getOperand(0)))
        return UIntOp::create(b, loc, args);
      return IntOp::create(b, loc, args);
    }
    llvm_unreachable("filtered by supports()");
  }
};

template <typename KilnOp, arith::CmpFPredicate fp, arith::CmpIPredicate ip,
          arith::CmpIPredicate up>
struct CompareLowering : ElementwiseLowering<KilnOp> {
  using ElementwiseLowering<KilnOp>::ElementwiseLowering;
  Value scalar(OpBuilder &b, Location loc, KilnOp op, ValueRange a) const override {
    if (isFloat(a[0].getType()))
      return arith::CmpFOp::create(b, loc, fp, a[0], a[1]);
    return arith::CmpIOp::create(b, loc, isUnsigned(op.getLhs()) ? up : ip, a[0], a[1]);
  }
};

/// The identity on unsigned integers (Relu, Abs).
Value unsignedIdentity(Value x) { return x; }

struct ReluLowering : ElementwiseLowering<ReluOp> {
  using ElementwiseLowering::ElementwiseLowering;
  Value scalar(OpBuilder &b, Location loc, ReluOp op, ValueRange a) const override {
    Value zero = scalarConst(b, loc, a[0].getType(), 0);
    if (isFloat(a[0].getType()))
      return arith::MaximumFOp::create(b, loc, a[0], zero);
    if (isUnsigned(op.getInput()))
      return unsignedIdentity(a[0]);
    return arith::MaxSIOp::create(b, loc, a[0], zero);
  }
};

struct AbsLowering : ElementwiseLowering<AbsOp> {
  using ElementwiseLowering::ElementwiseLowering;
  Value scalar(OpBuilder &b, Location loc, AbsOp op, ValueRange a) const override {
    if (isFloat(a[0].getType()))
      return math::AbsFOp::create(b, loc, a[0]);
    if (isUnsigned(op.getInput()))
      return unsignedIdentity(a[0]);
    return math::AbsIOp::create(b, loc, a[0]);
  }
};

struct NegLowering : ElementwiseLowering<NegOp> {
  using ElementwiseLowering::ElementwiseLowering;
  Value scalar(OpBuilder &b, Location loc, NegOp, ValueRange a) const override {
    if (isFloat(a[0].getType()))
      return arith::NegFOp::create(b, loc, a[0]);
    return arith::SubIOp::create(b, loc, scalarConst(b, loc, a[0].getType(), 0), a[0]);
  }
};

struct SignLowering : ElementwiseLowering<SignOp> {
  using ElementwiseLowering::ElementwiseLowering;
  Value scalar(OpBuilder &b, Location loc, SignOp op, ValueRange a) const override {
    Type t = a[0].getType();
    if (isUnsigned(op.getInput()))
      return arith::ExtUIOp::create(
          b, loc, t,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, a[0], scalarConst(b, loc, t, 0)));
    Value zero = scalarConst(b, loc, t, 0), one = scalarConst(b, loc, t, 1),
          minusOne = scalarConst(b, loc, t, -1);
    Value pos, neg;
    if (isFloat(t)) {
      pos = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, a[0], zero);
      neg = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, a[0], zero);
    } else {
      pos = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, a[0], zero);
      neg = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, a[0], zero);
    }
    Value r = arith::SelectOp::create(b, loc, neg, minusOne, zero);
    return arith::SelectOp::create(b, loc, pos, one, r);
  }
};

struct SigmoidLowering : ElementwiseLowering<SigmoidOp> {
  using ElementwiseLowering::ElementwiseLowering;
  bool supports(Type et) const override { return isFloat(et); }
  Value scalar(OpBuilder &b, Location loc, SigmoidOp, ValueRange a) const override {
    Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, a[0]));
    Value one = scalarConst(b, loc, a[0].getType(), 1.0);
    return arith::DivFOp::create(b, loc, one, arith::AddFOp::create(b, loc, one, e));
  }
};

struct ReciprocalLowering : ElementwiseLowering<ReciprocalOp> {
  using ElementwiseLowering::ElementwiseLowering;
  bool supports(Type et) const override { return isFloat(et); }
  Value scalar(OpBuilder &b, Location loc, ReciprocalOp, ValueRange a) const override {
    return arith::DivFOp::create(b, loc, scalarConst(b, loc, a[0].getType(), 1.0), a[0]);
  }
};

struct NotLowering : ElementwiseLowering<NotOp> {
  using ElementwiseLowering::ElementwiseLowering;
  bool supports(Type et) const override { return et.isInteger(); }
  Value scalar(OpBuilder &b, Location loc, NotOp, ValueRange a) const override {
    return arith::XOrIOp::create(b, loc, a[0], scalarConst(b, loc, a[0].getType(), -1));
  }
};

struct ClipLowering : ElementwiseLowering<ClipOp> {
  using ElementwiseLowering::ElementwiseLowering;
  bool supports(Type et) const override { return isFloat(et); }
  Value scalar(OpBuilder &b, Location loc, ClipOp op, ValueRange a) const override {
    Type t = a[0].getType();
    Value lo = scalarConst(b, loc, t, op.getMin().convertToDouble());
    Value hi = scalarConst(b, loc, t, op.getMax().convertToDouble());
    return arith::MinimumFOp::create(b, loc, arith::MaximumFOp::create(b, loc, a[0], lo), hi);
  }
};

struct PowLowering : ElementwiseLowering<PowOp> {
  using ElementwiseLowering::ElementwiseLowering;
  Value scalar(OpBuilder &b, Location loc, PowOp, ValueRange a) const override {
    if (isFloat(a[0].getType()))
      return math::PowFOp::create(b, loc, a[0], a[1]);
    return math::IPowIOp::create(b, loc, a[0], a[1]);
  }
};

/// Integer Mod takes the sign of the divisor (Python); `fmod` (and every
/// float Mod) takes the sign of the dividend (C fmod).
struct ModLowering : ElementwiseLowering<ModOp> {
  using ElementwiseLowering::ElementwiseLowering;
  Value scalar(OpBuilder &b, Location loc, ModOp op, ValueRange a) const override {
    if (isFloat(a[0].getType()))
      return arith::RemFOp::create(b, loc, a[0], a[1]);
    if (isUnsigned(op.getLhs()))
      return arith::RemUIOp::create(b, loc, a[0], a[1]);
    Value r = arith::RemSIOp::create(b, loc, a[0], a[1]);
    if (op.getFmod())
      return r;
    Value zero = scalarConst(b, loc, r.getType(), 0);
    Value nonzero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, r, zero);
    Value rNeg = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, r, zero);
    Value dNeg = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, a[1], zero);
    Value signsDiffer = arith::XOrIOp::create(b, loc, rNeg, dNeg);
    Value fix = arith::AndIOp::create(b, loc, nonzero, signsDiffer);
    return arith::SelectOp::create(b, loc, fix, arith::AddIOp::create(b, loc, r, a[1]), r);
  }
};

struct WhereLowering : ElementwiseLowering<WhereOp> {
  using ElementwiseLowering::ElementwiseLowering;
  Value scalar(OpBuilder &b, Location loc, WhereOp, ValueRange a) const override {
    return arith::SelectOp::create(b, loc, a[0], a[1], a[2]);
  }
};

/// ONNX Cast: float -> int truncates; anything -> bool is "nonzero";
/// bool -> number is 0/1; integer signedness comes from the kiln types.
struct BitcastLowering : ElementwiseLowering<BitcastOp> {
  using ElementwiseLowering::ElementwiseLowering;
  LogicalResult matchAndRewrite(BitcastOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    // Between types of the same signless form (ui8 as i8) it is the value.
    Value input = adaptor.getOperands()[0];
    if (input.getType() == signlessType(op.getType())) {
      rewriter.replaceOp(op, input);
      return success();
    }
    return ElementwiseLowering::matchAndRewrite(op, adaptor, rewriter);
  }
  Value scalar(OpBuilder &b, Location loc, BitcastOp op, ValueRange a) const override {
    Type to = getElementTypeOrSelf(signlessType(op.getType()));
    return arith::BitcastOp::create(b, loc, to, a[0]);
  }
};

struct CastLowering : ElementwiseLowering<CastOp> {
  using ElementwiseLowering::ElementwiseLowering;
  Value scalar(OpBuilder &b, Location loc, CastOp op, ValueRange a) const override {
    Value x = a[0];
    Type from = x.getType(), to = getElementTypeOrSelf(signlessType(op.getType()));
    bool fromUnsigned = isUnsigned(op.getInput());
    bool toUnsigned = isUnsigned(op.getResult());
    if (from == to)
      return x;
    if (to.isInteger(1)) {
      Value zero = scalarConst(b, loc, from, 0);
      if (isFloat(from))
        return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, x, zero);
      return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, x, zero);
    }
    unsigned fromWidth = from.getIntOrFloatBitWidth(), toWidth = to.getIntOrFloatBitWidth();
    if (isFloat(from) && isFloat(to))
      return fromWidth < toWidth ? (Value)arith::ExtFOp::create(b, loc, to, x)
                                 : (Value)arith::TruncFOp::create(b, loc, to, x);
    if (isFloat(from))
      return toUnsigned ? (Value)arith::FPToUIOp::create(b, loc, to, x)
                        : (Value)arith::FPToSIOp::create(b, loc, to, x);
    if (isFloat(to))
      return fromUnsigned ? (Value)arith::UIToFPOp::create(b, loc, to, x)
                          : (Value)arith::SIToFPOp::create(b, loc, to, x);
    if (fromWidth < toWidth)
      return fromUnsigned ? (Value)arith::ExtUIOp::create(b, loc, to, x)
                          : (Value)arith::ExtSIOp::create(b, loc, to, x);
    return arith::TruncIOp::create(b, loc, to, x);
  }
};

} // namespace

void mlir::kiln::populateElementwiseLowerings(RewritePatternSet &patterns) {
  using CF = arith::CmpFPredicate;
  using CI = arith::CmpIPredicate;
  patterns.add<
      ArithLowering<AddOp, arith::AddFOp, arith::AddIOp>,
      ArithLowering<SubOp, arith::SubFOp, arith::SubIOp>,
      ArithLowering<MulOp, arith::MulFOp, arith::MulIOp>,
      ArithLowering<DivOp, arith::DivFOp, arith::DivSIOp, arith::DivUIOp>,
      ArithLowering<MaxOp, arith::MaximumFOp, arith::MaxSIOp, arith::MaxUIOp>,
      ArithLowering<MinOp, arith::MinimumFOp, arith::MinSIOp, arith::MinUIOp>,
      ArithLowering<AndOp, void, arith::AndIOp>, ArithLowering<OrOp, void, arith::OrIOp>,
      ArithLowering<XorOp, void, arith::XOrIOp>, ArithLowering<ShiftLeftOp, void, arith::ShLIOp>,
      ArithLowering<ShiftRightOp, void, arith::ShRUIOp>,
      ArithLowering<CeilOp, math::CeilOp>, ArithLowering<FloorOp, math::FloorOp>,
      ArithLowering<RoundOp, math::RoundEvenOp>, ArithLowering<ExpOp, math::ExpOp>,
      ArithLowering<LogOp, math::LogOp>, ArithLowering<SqrtOp, math::SqrtOp>,
      ArithLowering<TanhOp, math::TanhOp>, ArithLowering<ErfOp, math::ErfOp>,
      ArithLowering<SinOp, math::SinOp>, ArithLowering<CosOp, math::CosOp>,
      ArithLowering<TanOp, math::TanOp>, ArithLowering<AsinOp, math::AsinOp>,
      ArithLowering<AcosOp, math::AcosOp>, ArithLowering<AtanOp, math::AtanOp>,
      ArithLowering<SinhOp, math::SinhOp>, ArithLowering<CoshOp, math::CoshOp>,
      ArithLowering<AsinhOp, math::AsinhOp>, ArithLowering<AcoshOp, math::AcoshOp>,
      ArithLowering<AtanhOp, math::AtanhOp>,
      CompareLowering<EqualOp, CF::OEQ, CI::eq, CI::eq>,
      CompareLowering<LessOp, CF::OLT, CI::slt, CI::ult>,
      CompareLowering<LessEqualOp, CF::OLE, CI::sle, CI::ule>,
      CompareLowering<GreaterOp, CF::OGT, CI::sgt, CI::ugt>,
      CompareLowering<GreaterEqualOp, CF::OGE, CI::sge, CI::uge>, ReluLowering, AbsLowering,
      NegLowering,
      SignLowering, SigmoidLowering, ReciprocalLowering, NotLowering, ClipLowering,
      PowLowering, ModLowering, WhereLowering, CastLowering, BitcastLowering>(patterns.getContext());
}
