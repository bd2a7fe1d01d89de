//===- DynamicEntry.cpp - shapes of dynamic models through the entry -----===//
//
// Bare-pointer calling conventions carry no sizes, and the caller of a model
// with dynamic dimensions cannot allocate its outputs before the run. So the
// sizes travel in an i64 array: inputs' sizes are read from it, and each
// output's sizes are written to it, with the output's address stored in a
// slot of its own.
//
//===----------------------------------------------------------------------===//
#include "codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNDYNAMICENTRY
#include "codegen/Passes.h.inc"
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
    for (Type t : llvm::concat<const Type>(type.getInputs(), type.getResults()))
      if (!isa<MemRefType>(t) || !cast<MemRefType>(t).getLayout().isIdentity()) {
        main.emitError("kiln-dynamic-entry expects identity-layout memrefs, got ") << t;
        return signalPassFailure();
      }
    MLIRContext *ctx = &getContext();
    Location loc = main.getLoc();
    unsigned numInputs = type.getNumInputs(), numOutputs = type.getNumResults();
    int64_t shapeCount = 0;
    SmallVector<int64_t> outputOffsets;
    for (Type t : type.getInputs())
      shapeCount += cast<MemRefType>(t).getRank();
    for (Type t : type.getResults()) {
      outputOffsets.push_back(shapeCount);
      shapeCount += cast<MemRefType>(t).getRank();
    }
    auto i64 = IntegerType::get(ctx, 64);
    if (failed(main.insertArguments(
            {numInputs, numInputs},
            {MemRefType::get({std::max<int64_t>(shapeCount, 1)}, i64),
             MemRefType::get({numOutputs}, i64)},
            {DictionaryAttr::get(ctx), DictionaryAttr::get(ctx)}, {loc, loc})))
      return signalPassFailure();
    Value shapes = main.getArgument(numInputs), slots = main.getArgument(numInputs + 1);

    // Each dynamic input becomes its base pointer, viewed with its sizes.
    Block &entry = main.getBody().front();
    OpBuilder b = OpBuilder::atBlockBegin(&entry);
    int64_t offset = 0;
    for (unsigned i = 0; i < numInputs; ++i) {
      auto memref = cast<MemRefType>(main.getArgument(i).getType());
      if (!memref.hasStaticShape()) {
        DictionaryAttr attrs = main.getArgAttrDict(i);
        if (failed(main.insertArgument(i + 1, MemRefType::get({}, memref.getElementType()),
                                       attrs, loc)))
          return signalPassFailure();
        Value view = viewOf(b, loc, memref, main.getArgument(i + 1), shapes, offset);
        main.getArgument(i).replaceAllUsesWith(view);
        if (failed(main.eraseArgument(i)))
          return signalPassFailure();
      }
      offset += memref.getRank();
    }

    // Results: addresses into the slots, sizes into `shapes`.
    auto ret = cast<func::ReturnOp>(entry.getTerminator());
    b.setInsertionPoint(ret);
    for (auto [j, result] : llvm::enumerate(ret.getOperands())) {
      Value address = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, result);
      storeIndex(b, loc, address, slots, j);
      for (int64_t d = 0; d < cast<MemRefType>(result.getType()).getRank(); ++d)
        storeIndex(b, loc, memref::DimOp::create(b, loc, result, d), shapes,
                   outputOffsets[j] + d);
    }
    func::ReturnOp::create(b, ret.getLoc());
    ret.erase();
    BitVector all(numOutputs, true);
    if (failed(main.eraseResults(all)))
      return signalPassFailure();
    main->setAttr("kiln.dynamic_entry", UnitAttr::get(ctx));
  }
};
} // namespace
