//===- EmitEntryPoint.cpp - uniform C-ABI entry for a compiled model ------===//
#include "codegen/common/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNEMITENTRYPOINT
#include "codegen/common/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

namespace {

/// Whether the module uses AMX tiles (the intrinsics of the amx dialect's
/// lowering: llvm.x86.tileloadd64.internal, ...).
bool usesAmxTiles(ModuleOp module) {
  return module
      .walk([](LLVM::CallIntrinsicOp call) {
        return call.getIntrin().starts_with("llvm.x86.tile") ? WalkResult::interrupt()
                                                             : WalkResult::advance();
      })
      .wasInterrupted();
}

struct KilnEmitEntryPointPass
    : mlir::kiln::impl::KilnEmitEntryPointBase<KilnEmitEntryPointPass> {
  using KilnEmitEntryPointBase::KilnEmitEntryPointBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<LLVM::LLVMFuncOp>("main");
    if (!main) {
      module.emitError("kiln-emit-entry-point expects an llvm.func @main");
      return signalPassFailure();
    }
    MLIRContext *ctx = &getContext();
    auto ptrType = LLVM::LLVMPointerType::get(ctx);
    for (Type t : main.getFunctionType().getParams())
      if (t != ptrType) {
        main.emitError("kiln-emit-entry-point expects bare-pointer memref arguments, got ")
            << t;
        return signalPassFailure();
      }
    // @main becomes a private implementation detail of this model.
    std::string mainName = symbolPrefix + "_main";
    main.setSymName(mainName);
    main.setLinkage(LLVM::Linkage::Internal);

    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    Location loc = main.getLoc();
    auto voidType = LLVM::LLVMVoidType::get(ctx);
    auto entry = LLVM::LLVMFuncOp::create(
        b, loc, symbolPrefix + "_entry",
        LLVM::LLVMFunctionType::get(voidType, {ptrType, ptrType}));
    Block *body = entry.addEntryBlock(b);
    b.setInsertionPointToStart(body);
    if (usesAmxTiles(module)) {
      // Tile data must be enabled for the process first (kiln_request_amx).
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(module.getBody());
      auto request = LLVM::LLVMFuncOp::create(b, loc, "kiln_request_amx",
                                              LLVM::LLVMFunctionType::get(voidType, {}));
      b.setInsertionPointToStart(body);
      LLVM::CallOp::create(b, loc, request, ValueRange{});
    }
    Value buffers = body->getArgument(0), shapes = body->getArgument(1);
    auto slot = [&](unsigned i) -> Value {
      return LLVM::GEPOp::create(b, loc, ptrType, ptrType, buffers,
                                 ArrayRef<LLVM::GEPArg>{(int32_t)i});
    };
    // A dynamic @main (kiln-dynamic-entry) takes its inputs, the shapes and
    // the output slots; a static one takes every input and output buffer.
    bool dynamic = main->hasAttr("kiln.dynamic_entry");
    unsigned pointers = main.getNumArguments() - (dynamic ? 2 : 0);
    SmallVector<Value> args;
    for (unsigned i = 0; i < pointers; ++i)
      args.push_back(LLVM::LoadOp::create(b, loc, ptrType, slot(i)));
    if (dynamic) {
      args.push_back(shapes);
      args.push_back(slot(pointers));
    }
    LLVM::CallOp::create(b, loc, main, args);
    LLVM::ReturnOp::create(b, loc, ValueRange{});
  }
};
} // namespace
