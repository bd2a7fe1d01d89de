//===- DeviceBuffers.cpp - which host ops touch the kernels' memory -------===//
#include "codegen/gpu/DeviceBuffers.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

Value mlir::kiln::rootBuffer(Value value) {
  while (true) {
    if (auto view = value.getDefiningOp<ViewLikeOpInterface>())
      value = view.getViewSource();
    else if (auto meta = value.getDefiningOp<memref::ExtractStridedMetadataOp>())
      value = meta.getSource(); // its base buffer
    else
      return value;
  }
}

Operation *mlir::kiln::computedOnReadBy(Value value) {
  Value root = rootBuffer(value);
  for (Operation *user : root.getUsers())
    if (user->hasAttr(kComputedOnRead))
      return user;
  return nullptr;
}

/// Whether a buffer with root `root` may be one the kernels use: a root in
/// `deviceBuffers`, or one whose allocation the analysis cannot see (a
/// loop's or branch's result, a loop-carried buffer, a call's result).
static bool mayBeDevice(Value root, const llvm::DenseSet<Value> &deviceBuffers) {
  if (deviceBuffers.contains(root))
    return true;
  if (auto arg = dyn_cast<BlockArgument>(root))
    return !arg.getOwner()->isEntryBlock() ||
           !isa<FunctionOpInterface>(arg.getOwner()->getParentOp());
  Operation *def = root.getDefiningOp();
  return !isa<memref::AllocOp, memref::AllocaOp, memref::GetGlobalOp>(def);
}

bool mlir::kiln::mayAccessBuffers(Operation *op, bool writesOnly,
                                  llvm::function_ref<bool(Value)> watched,
                                  llvm::function_ref<bool(Operation *)> harmless) {
  WalkResult walk = op->walk([&](Operation *inner) {
    auto effects = dyn_cast<MemoryEffectOpInterface>(inner);
    if (!effects) // the walk visits what a loop or branch holds
      return inner->hasTrait<OpTrait::HasRecursiveMemoryEffects>() || harmless(inner)
                 ? WalkResult::advance()
                 : WalkResult::interrupt();
    SmallVector<MemoryEffects::EffectInstance> instances;
    effects.getEffects(instances);
    for (const MemoryEffects::EffectInstance &effect : instances) {
      bool counts = writesOnly ? isa<MemoryEffects::Write>(effect.getEffect())
                               : isa<MemoryEffects::Read, MemoryEffects::Write>(effect.getEffect());
      if (counts && (!effect.getValue() || watched(rootBuffer(effect.getValue()))))
        return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return walk.wasInterrupted();
}

bool mlir::kiln::touchesDeviceBuffers(Operation *op,
                                      const llvm::DenseSet<Value> &deviceBuffers) {
  return mayAccessBuffers(
      op, /*writesOnly=*/false, [&](Value root) { return mayBeDevice(root, deviceBuffers); },
      [](Operation *inner) { // calls may, but kiln_check_failed only ends the run
        auto call = dyn_cast<func::CallOp>(inner);
        return call && call.getCallee() == "kiln_check_failed";
      });
}
