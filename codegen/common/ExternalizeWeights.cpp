//===- ExternalizeWeights.cpp - constants read from a weights file --------===//
//
// With --weights=external a model's constants live in a file the runtime
// maps, so that one binary can run other weights of the same architecture
// (a fine-tuned model) without being recompiled. The code reads each
// constant at a fixed offset of the mapped data, which the runtime hands to
// @main at the start of a run.
//
//===----------------------------------------------------------------------===//
#include "codegen/common/Passes.h"
#include "dialects/kiln/KilnDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/xxhash.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNEXTERNALIZEWEIGHTS
#include "codegen/common/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

namespace {

constexpr uint64_t kTensorAlignment = 64; // KILN_WEIGHTS_ALIGN (runtime/src/weights.h)

/// A constant that moves to the weights file.
struct ExternalWeight {
  memref::GlobalOp global;
  ElementsAttr value;
  uint64_t offset = 0;
};

/// Whether `global` is a tensor of the model (not a run-time check's
/// message, which kiln-lower-assert writes as i8 text).
bool isModelConstant(memref::GlobalOp global) {
  return global.getConstant() && global.getInitialValue() &&
         isa<ElementsAttr>(*global.getInitialValue()) &&
         !global.getSymName().starts_with("kiln_check_message_");
}

/// Bytes of one element in the weights data (i1 takes a byte, as in
/// memory); 0 for element types a file cannot hold.
uint64_t elementBytes(Type type) {
  if (type.isInteger(1))
    return 1;
  if (!type.isIntOrFloat() || type.getIntOrFloatBitWidth() % 8 != 0)
    return 0;
  return type.getIntOrFloatBitWidth() / 8;
}

/// Whether `global` can move to the weights file: a tensor of the model
/// (not a run-time check's message), read in @main only, whose type a view
/// of bytes gives. The others stay in the code, where the fingerprint
/// covers their values.
bool canExternalize(memref::GlobalOp global, ArrayRef<memref::GetGlobalOp> reads,
                    func::FuncOp main) {
  MemRefType type = global.getType();
  return isModelConstant(global) && type.getLayout().isIdentity() && type.hasStaticShape() &&
         elementBytes(type.getElementType()) != 0 &&
         llvm::all_of(reads, [&](memref::GetGlobalOp read) {
           return read->getParentOfType<func::FuncOp>() == main;
         });
}

/// "conv1 (Conv)": the ONNX node of the constant, or of its first reader;
/// else its symbol.
std::string weightName(memref::GlobalOp global, ArrayRef<memref::GetGlobalOp> reads) {
  std::optional<kiln::OnnxNode> node = kiln::onnxNodeOf(global.getLoc());
  for (memref::GetGlobalOp read : reads)
    if (!node)
      node = kiln::onnxNodeOf(read.getLoc());
  if (!node)
    return global.getSymName().str();
  return (node->name + " (" + node->opType + ")").str();
}

struct KilnExternalizeWeightsPass
    : mlir::kiln::impl::KilnExternalizeWeightsBase<KilnExternalizeWeightsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main || main.isExternal()) {
      module.emitError("kiln-externalize-weights expects a func.func @main with a body");
      return signalPassFailure();
    }
    llvm::DenseMap<StringAttr, SmallVector<memref::GetGlobalOp>> reads;
    module.walk([&](memref::GetGlobalOp read) { reads[read.getNameAttr().getAttr()].push_back(read); });

    SmallVector<ExternalWeight> weights;
    uint64_t bytes = 0;
    for (auto global : module.getOps<memref::GlobalOp>()) {
      if (canExternalize(global, reads[global.getSymNameAttr()], main))
        weights.push_back(place(global, bytes));
    }
    if (weights.empty())
      return;

    // The views go before @main's first op; the reads are erased after, as
    // the first op may be one of them.
    OpBuilder b = OpBuilder::atBlockBegin(&main.getBody().front());
    Value data = readWeights(b, module, main.getLoc(), bytes);
    SmallVector<Attribute> tensors;
    SmallVector<Value> views;
    for (ExternalWeight &weight : weights) {
      Location loc = weight.global.getLoc();
      Value offset = arith::ConstantIndexOp::create(b, loc, weight.offset);
      views.push_back(memref::ViewOp::create(b, loc, weight.global.getType(), data, offset,
                                             ValueRange{}));
      auto symbol = weight.global.getSymNameAttr();
      tensors.push_back(b.getDictionaryAttr(
          {b.getNamedAttr("name", b.getStringAttr(weightName(weight.global, reads[symbol]))),
           b.getNamedAttr("offset", b.getI64IntegerAttr(weight.offset)),
           b.getNamedAttr("value", weight.value)}));
    }
    for (auto [weight, view] : llvm::zip(weights, views)) {
      for (memref::GetGlobalOp read : reads[weight.global.getSymNameAttr()]) {
        read.replaceAllUsesWith(view);
        read.erase();
      }
      weight.global.erase();
    }
    module->setAttr("kiln.external_weights",
                    b.getDictionaryAttr(
                        {b.getNamedAttr("bytes", b.getI64IntegerAttr(bytes)),
                         b.getNamedAttr("fingerprint", b.getI64IntegerAttr(fingerprint(module))),
                         b.getNamedAttr("tensors", b.getArrayAttr(tensors))}));
  }

  /// Gives `global` its offset after the `bytes` placed so far.
  static ExternalWeight place(memref::GlobalOp global, uint64_t &bytes) {
    MemRefType type = global.getType();
    uint64_t alignment = std::max<uint64_t>(kTensorAlignment, global.getAlignment().value_or(1));
    ExternalWeight weight{global, cast<ElementsAttr>(*global.getInitialValue())};
    weight.offset = llvm::alignTo(bytes, alignment);
    bytes = weight.offset + elementBytes(type.getElementType()) * type.getNumElements();
    return weight;
  }

  /// `%data = func.call @kiln_run_weights() : () -> memref<bytes x i8>`.
  Value readWeights(OpBuilder &b, ModuleOp module, Location loc, uint64_t bytes) {
    auto type = MemRefType::get({(int64_t)bytes}, b.getI8Type());
    auto fnType = b.getFunctionType({}, {type});
    auto callee = module.lookupSymbol<func::FuncOp>("kiln_run_weights");
    if (!callee) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(module.getBody());
      callee = func::FuncOp::create(b, loc, "kiln_run_weights", fnType);
      callee.setPrivate();
    }
    return func::CallOp::create(b, loc, callee, ValueRange{}).getResult(0);
  }

  /// A hash of the module as printed, the moved constants gone (locations
  /// are not printed: a model's file name does not change it).
  static uint64_t fingerprint(ModuleOp module) {
    std::string text;
    llvm::raw_string_ostream os(text);
    module.print(os);
    return llvm::xxh3_64bits(llvm::StringRef(text));
  }
};
} // namespace
