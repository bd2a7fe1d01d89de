//===- DynamicEntry.cpp - shapes of dynamic models through the entry -----===//
//
// Bare-pointer calling conventions carry no sizes, and the caller of a model
// with dynamic dimensions cannot allocate its outputs before the run. So the
// sizes travel in an i64 array: inputs' sizes are read from it, and each
// output's sizes are written to it, with the output's address stored in a
// slot of its own.
//
//===----------------------------------------------------------------------===//
#include "codegen/common/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNDYNAMICENTRY
#include "codegen/common/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

static bool isStaticMemref(Type t) {
  auto m = dyn_cast<MemRefType>(t);
  return m && m.hasStaticShape();
}

/// An i64 element of `array` as an index, or a store of `v` into it.
static Value loadIndex(OpBuilder &b, Location loc, Value array, int64_t at) {
  Value i = arith::ConstantIndexOp::create(b, loc, at);
  Value v = memref::LoadOp::create(b, loc, array, ValueRange{i});
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
}

static void storeIndex(OpBuilder &b, Location loc, Value v, Value array, int64_t at) {
  Value i = arith::ConstantIndexOp::create(b, loc, at);
  Value x = arith::IndexCastOp::create(b, loc, b.getI64Type(), v);
  memref::StoreOp::create(b, loc, x, array, ValueRange{i});
}

/// A row-major view of `type` at the base pointer `base` (a rank-0 memref),
/// with the dynamic sizes read from `shapes` starting at `offset`.
static Value viewOf(OpBuilder &b, Location loc, MemRefType type, Value base, Value shapes,
                    int64_t offset) {
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> sizes(rank), strides(rank);
  SmallVector<int64_t> staticStrides(rank);
  OpFoldResult stride = b.getIndexAttr(1);
  for (int64_t d = rank - 1; d >= 0; --d) {
    sizes[d] = type.isDynamicDim(d) ? OpFoldResult(loadIndex(b, loc, shapes, offset + d))
                                    : OpFoldResult(b.getIndexAttr(type.getDimSize(d)));
    strides[d] = stride;
    auto constant = getConstantIntValue(stride);
    staticStrides[d] = constant ? *constant : ShapedType::kDynamic;
    auto sizeConstant = getConstantIntValue(sizes[d]);
    if (constant && sizeConstant)
      stride = b.getIndexAttr(*constant * *sizeConstant);
    else
      stride = arith::MulIOp::create(b, loc, getValueOrCreateConstantIndexOp(b, loc, stride),
                                     getValueOrCreateConstantIndexOp(b, loc, sizes[d]))
                   .getResult();
  }
  auto viewType = MemRefType::get(type.getShape(), type.getElementType(),
                                  StridedLayoutAttr::get(b.getContext(), 0, staticStrides));
  Value view = memref::ReinterpretCastOp::create(b, loc, viewType, base, b.getIndexAttr(0),
                                                 sizes, strides);
  return memref::CastOp::create(b, loc, type, view);
}

/// Replaces each dynamic input of `main` by its base pointer, viewed with
/// the sizes read from `shapes` (inputs' sizes come first, in order).
static LogicalResult viewDynamicInputs(func::FuncOp main, unsigned numInputs, Value shapes) {
  Location loc = main.getLoc();
  OpBuilder b = OpBuilder::atBlockBegin(&main.getBody().front());
  int64_t offset = 0;
  for (unsigned i = 0; i < numInputs; ++i) {
    auto memref = cast<MemRefType>(main.getArgument(i).getType());
    if (!memref.hasStaticShape()) {
      DictionaryAttr attrs = main.getArgAttrDict(i);
      if (failed(main.insertArgument(i + 1, MemRefType::get({}, memref.getElementType()), attrs,
                                     loc)))
        return failure();
      Value view = viewOf(b, loc, memref, main.getArgument(i + 1), shapes, offset);
      main.getArgument(i).replaceAllUsesWith(view);
      if (failed(main.eraseArgument(i)))
        return failure();
    }
    offset += memref.getRank();
  }
  return success();
}

/// Returns each result of `main` by storing its address into its slot and
/// its sizes into `shapes` from `offset` on; `main` then returns nothing.
static LogicalResult returnThroughSlots(func::FuncOp main, Value shapes, Value slots,
                                        int64_t offset) {
  Location loc = main.getLoc();
  auto ret = cast<func::ReturnOp>(main.getBody().front().getTerminator());
  OpBuilder b(ret);
  for (auto [j, result] : llvm::enumerate(ret.getOperands())) {
    Value address = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, result);
    storeIndex(b, loc, address, slots, j);
    for (int64_t d = 0; d < cast<MemRefType>(result.getType()).getRank(); ++d)
      storeIndex(b, loc, memref::DimOp::create(b, loc, result, d), shapes, offset++);
  }
  func::ReturnOp::create(b, ret.getLoc());
  ret.erase();
  return main.eraseResults(BitVector(main.getNumResults(), true));
}

namespace {
struct KilnDynamicEntryPass
    : mlir::kiln::impl::KilnDynamicEntryBase<KilnDynamicEntryPass> {
  void runOnOperation() override {
    auto main = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!main || main.isExternal())
      return;
    FunctionType type = main.getFunctionType();
    if (llvm::all_of(type.getInputs(), isStaticMemref) &&
        llvm::all_of(type.getResults(), isStaticMemref))
      return;
    int64_t inputDims = 0, allDims = 0;
    for (Type t : llvm::concat<const Type>(type.getInputs(), type.getResults())) {
      auto memref = dyn_cast<MemRefType>(t);
      if (!memref || !memref.getLayout().isIdentity()) {
        main.emitError("kiln-dynamic-entry expects identity-layout memrefs, got ") << t;
        return signalPassFailure();
      }
      allDims += memref.getRank();
    }
    for (Type t : type.getInputs())
      inputDims += cast<MemRefType>(t).getRank();

    MLIRContext *ctx = &getContext();
    Location loc = main.getLoc();
    unsigned numInputs = type.getNumInputs();
    auto i64 = IntegerType::get(ctx, 64);
    auto shapesType = MemRefType::get({std::max<int64_t>(allDims, 1)}, i64);
    auto slotsType = MemRefType::get({(int64_t)type.getNumResults()}, i64);
    if (failed(main.insertArguments({numInputs, numInputs}, {shapesType, slotsType},
                                    {DictionaryAttr::get(ctx), DictionaryAttr::get(ctx)},
                                    {loc, loc})))
      return signalPassFailure();
    Value shapes = main.getArgument(numInputs), slots = main.getArgument(numInputs + 1);
    if (failed(viewDynamicInputs(main, numInputs, shapes)) ||
        failed(returnThroughSlots(main, shapes, slots, inputDims)))
      return signalPassFailure();
    main->setAttr("kiln.dynamic_entry", UnitAttr::get(ctx));
  }
};
} // namespace
