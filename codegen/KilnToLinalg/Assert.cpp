//===- Assert.cpp - kiln.assert to a guarded call into the runtime --------===//
//
// A failed check calls `kiln_check_failed(message)`; the runtime stores the
// message as the instance's error and unwinds to kiln_model_run, which
// returns nonzero. The message is a NUL-terminated constant global, passed
// as an address so that one declaration serves every message length.
//
//===----------------------------------------------------------------------===//
#include "codegen/KilnToLinalg/Builders.h"
#include "dialects/kiln/KilnDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/DialectConversion.h"

#include <numeric>

using namespace mlir;
using namespace mlir::kiln;

static constexpr llvm::StringLiteral kCheckFailed = "kiln_check_failed";

/// `func.func private @kiln_check_failed(i64)`, declared once per module.
static func::FuncOp checkFailedDecl(OpBuilder &b, ModuleOp module) {
  if (auto f = module.lookupSymbol<func::FuncOp>(kCheckFailed))
    return f;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  auto f = func::FuncOp::create(b, module.getLoc(), kCheckFailed,
                                b.getFunctionType({b.getI64Type()}, {}));
  f.setPrivate();
  return f;
}

/// A private constant global holding `text` and a terminating NUL.
static memref::GlobalOp messageGlobal(OpBuilder &b, ModuleOp module, StringRef text) {
  std::string name;
  for (unsigned n = 0; name.empty() || module.lookupSymbol(name); ++n)
    name = "kiln_check_message_" + std::to_string(n);
  SmallVector<int8_t> bytes(text.begin(), text.end());
  bytes.push_back(0);
  auto type = MemRefType::get({(int64_t)bytes.size()}, b.getI8Type());
  auto init = DenseElementsAttr::get(RankedTensorType::get(type.getShape(), b.getI8Type()),
                                     ArrayRef<int8_t>(bytes));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  return memref::GlobalOp::create(b, module.getLoc(), name, b.getStringAttr("private"), type,
                                  init, /*constant=*/true, /*alignment=*/nullptr);
}

/// if (!ok) kiln_check_failed(message).
static void failIfNot(OpBuilder &b, Location loc, Value ok, StringRef message) {
  auto module = b.getInsertionBlock()->getParentOp()->getParentOfType<ModuleOp>();
  Value failed = arith::XOrIOp::create(b, loc, ok, scalarConst(b, loc, b.getI1Type(), 1));
  func::FuncOp callee = checkFailedDecl(b, module);
  memref::GlobalOp global = messageGlobal(b, module, message);
  auto ifOp = scf::IfOp::create(b, loc, failed, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  Value text = memref::GetGlobalOp::create(b, loc, global.getType(), global.getName());
  Value address = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, text);
  address = arith::IndexCastOp::create(b, loc, b.getI64Type(), address);
  func::CallOp::create(b, loc, callee, ValueRange{address});
}

/// "node 'conv1' (Conv): " for the NameLoc(node, NameLoc(op type)) that the
/// importer gives each op; empty for other locations.
static std::string nodePrefix(Location loc) {
  std::optional<OnnxNode> node = onnxNodeOf(loc);
  if (!node)
    return "";
  std::string prefix = "node '" + node->name.str() + "'";
  if (!node->opType.empty())
    prefix += " (" + node->opType.str() + ")";
  return prefix + ": ";
}

void mlir::kiln::checkAtRunTime(OpBuilder &b, Location loc, Value ok, const Twine &message) {
  failIfNot(b, loc, ok, nodePrefix(loc) + message.str());
}

namespace {
struct AssertLowering : OpConversionPattern<AssertOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(AssertOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value all = adaptor.getCondition();
    auto type = tensorType(all);
    Type i1 = rewriter.getI1Type();
    if (type.getRank() > 0) {
      SmallVector<int64_t> axes(type.getRank());
      std::iota(axes.begin(), axes.end(), 0);
      all = buildReduction(rewriter, loc, all, axes, scalarConst(rewriter, loc, i1, 1),
                           [](OpBuilder &b, Location l, ValueRange a) -> Value {
                             return arith::AndIOp::create(b, l, a[0], a[1]);
                           });
      all = reshapeTo(rewriter, loc, all, RankedTensorType::get({}, i1));
    }
    Value ok = tensor::ExtractOp::create(rewriter, loc, all, ValueRange{});
    failIfNot(rewriter, loc, ok, op.getMessage());
    rewriter.eraseOp(op);
    return success();
  }
};
} // namespace

void mlir::kiln::populateAssertLowering(RewritePatternSet &patterns) {
  patterns.add<AssertLowering>(patterns.getContext());
}
