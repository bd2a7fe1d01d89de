//===- EmitEntryPoint.cpp - uniform C-ABI entry for a compiled model ------===//
#include "codegen/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNEMITENTRYPOINT
#include "codegen/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

namespace {
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
