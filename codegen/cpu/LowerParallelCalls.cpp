//===- LowerParallelCalls.cpp - task calls become thread-pool dispatches --===//
//
// `llvm.call @task(0, n, captures...)`, where @task was outlined by
// kiln-cpu-outline-parallel-loops, becomes
//
//   ctx = {captures...}                       (a stack struct)
//   kiln_parallel_for(@task_thunk, &ctx, n)
//
// and `@task_thunk(ctx, begin, end)` loads the captures and calls @task on
// [begin, end). The runtime runs the sub-ranges on its threads (runtime.c).
//
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCPULOWERPARALLELCALLS
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

static constexpr llvm::StringLiteral kDispatch = "kiln_parallel_for";

/// `void kiln_parallel_for(void (*)(void *, int64_t, int64_t), void *, int64_t)`.
static LLVM::LLVMFuncOp getOrDeclareDispatch(ModuleOp module) {
  if (auto f = module.lookupSymbol<LLVM::LLVMFuncOp>(kDispatch))
    return f;
  MLIRContext *ctx = module.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i64 = IntegerType::get(ctx, 64);
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  return LLVM::LLVMFuncOp::create(
      b, module.getLoc(), kDispatch,
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptr, ptr, i64}));
}

/// `@<task>_thunk(ptr ctx, i64 begin, i64 end)`: unpacks `captures` and calls `task`.
static LLVM::LLVMFuncOp buildThunk(LLVM::LLVMFuncOp task, LLVM::LLVMStructType captures) {
  MLIRContext *ctx = task.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i64 = IntegerType::get(ctx, 64);
  OpBuilder b(task);
  b.setInsertionPointAfter(task);
  Location loc = task.getLoc();
  auto thunk = LLVM::LLVMFuncOp::create(
      b, loc, (task.getName() + "_thunk").str(),
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptr, i64, i64}),
      LLVM::Linkage::Internal);
  Block *body = thunk.addEntryBlock(b);
  b.setInsertionPointToStart(body);
  SmallVector<Value> args{body->getArgument(1), body->getArgument(2)};
  for (auto [i, type] : llvm::enumerate(captures.getBody())) {
    Value field = LLVM::GEPOp::create(b, loc, ptr, captures, body->getArgument(0),
                                      ArrayRef<LLVM::GEPArg>{0, (int32_t)i});
    args.push_back(LLVM::LoadOp::create(b, loc, type, field));
  }
  LLVM::CallOp::create(b, loc, task, args);
  LLVM::ReturnOp::create(b, loc, ValueRange{});
  return thunk;
}

/// Replaces `call` (of a parallel task) with the packing and the dispatch.
static void lowerCall(LLVM::CallOp call, LLVM::LLVMFuncOp task, LLVM::LLVMFuncOp dispatch) {
  MLIRContext *ctx = call.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto captureValues = call.getArgOperands().drop_front(2);
  SmallVector<Type> fieldTypes(captureValues.getTypes());
  auto captures = LLVM::LLVMStructType::getLiteral(ctx, fieldTypes);
  LLVM::LLVMFuncOp thunk = buildThunk(task, captures);

  Location loc = call.getLoc();
  auto caller = call->getParentOfType<LLVM::LLVMFuncOp>();
  OpBuilder b = OpBuilder::atBlockBegin(&caller.getBody().front());
  Value one = LLVM::ConstantOp::create(b, loc, b.getI64Type(), 1);
  Value frame = LLVM::AllocaOp::create(b, loc, ptr, captures, one);

  b.setInsertionPoint(call);
  for (auto [i, v] : llvm::enumerate(captureValues)) {
    Value field = LLVM::GEPOp::create(b, loc, ptr, captures, frame,
                                      ArrayRef<LLVM::GEPArg>{0, (int32_t)i});
    LLVM::StoreOp::create(b, loc, v, field);
  }
  Value fn = LLVM::AddressOfOp::create(b, loc, thunk);
  LLVM::CallOp::create(b, loc, dispatch, ValueRange{fn, frame, call.getArgOperands()[1]});
  call.erase();
}

namespace {
struct KilnLowerParallelCallsPass
    : mlir::kiln::impl::KilnCpuLowerParallelCallsBase<KilnLowerParallelCallsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<LLVM::CallOp, LLVM::LLVMFuncOp>> calls;
    module.walk([&](LLVM::CallOp call) {
      auto callee = call.getCallee();
      auto task = callee ? module.lookupSymbol<LLVM::LLVMFuncOp>(*callee) : nullptr;
      if (task && task->hasAttr("kiln.parallel_task"))
        calls.push_back({call, task});
    });
    if (calls.empty())
      return;
    LLVM::LLVMFuncOp dispatch = getOrDeclareDispatch(module);
    for (auto [call, task] : calls) {
      if (call.getArgOperands().size() < 2) {
        call.emitError("kiln-cpu-lower-parallel-calls: a parallel task takes (begin, end, captures...)");
        return signalPassFailure();
      }
      task.setLinkage(LLVM::Linkage::Internal);
      lowerCall(call, task, dispatch);
    }
  }
};
} // namespace
