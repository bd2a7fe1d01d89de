//===- EmbedKernels.cpp - GPU kernels into the host module ----------------===//
//
// The host code of a GPU model is compiled like a CPU model's; what makes
// it a GPU model is this pass: launches become calls of the runtime, which
// owns the device, and the kernels travel in the object (as SPIR-V, MSL or
// a CUDA fatbin: whatever code the target put on their gpu.modules).
//
//===----------------------------------------------------------------------===//
#include "codegen/gpu/Passes.h"
#include "codegen/gpu/DeviceBuffers.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNGPUEMBEDKERNELS
#include "codegen/gpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// Must match KILN_GPU_ARG_* in runtime/include/kiln/runtime.h.
constexpr int64_t kArgConstant = 1;
constexpr int64_t kArgParams = 2;
constexpr int64_t kArgMaybeConstant = 4;
/// Fields of one kiln_gpu_arg: address, bytes, flags.
constexpr int64_t kArgFields = 3;

bool containsLaunch(Operation *op) {
  return op->walk([](gpu::LaunchFuncOp) { return WalkResult::interrupt(); }).wasInterrupted();
}

/// Calls `wait` before each op of `block` that touches a buffer the
/// kernels use (`device`, by root) while launches may be queued (`pending`:
/// on entry). Returns whether they may be queued at its end.
bool placeWaits(Block &block, bool pending, func::FuncOp wait, const DenseSet<Value> &device) {
  for (Operation &op : block) {
    if (isa<gpu::LaunchFuncOp>(op)) {
      pending = true;
      continue;
    }
    if (containsLaunch(&op)) {
      // A loop that launches: its body may start with the previous
      // iteration's launches queued.
      for (Region &region : op.getRegions())
        for (Block &inner : region)
          placeWaits(inner, /*pending=*/true, wait, device);
      pending = true;
      continue;
    }
    if (pending && touchesDeviceBuffers(&op, device)) {
      OpBuilder b(&op);
      func::CallOp::create(b, op.getLoc(), wait, ValueRange{});
      pending = false;
    }
  }
  return pending;
}

/// Whether only kernels can reach `buffer`: each use of it, through views,
/// is a launch's argument or asks for a size. Any other use may touch it
/// (a load, a copy) or let its address escape (into a slot, a loop's or
/// branch's result, a call), after which anything may.
bool onlyKernelsUse(Value buffer) {
  return llvm::all_of(buffer.getUses(), [](OpOperand &use) {
    Operation *user = use.getOwner();
    if (isa<gpu::LaunchFuncOp, memref::DimOp>(user))
      return true;
    if (auto meta = dyn_cast<memref::ExtractStridedMetadataOp>(user))
      return onlyKernelsUse(meta.getBaseBuffer());
    auto view = dyn_cast<ViewLikeOpInterface>(user);
    return view && view.getViewSource() == use.get() &&
           llvm::all_of(user->getResults(), [](Value result) {
             return !isa<MemRefType>(result.getType()) || onlyKernelsUse(result);
           });
  });
}

/// The buffers of the model's entry `main` (its inputs, then outputs: the
/// arguments before a dynamic entry's shapes and output slots) that only
/// kernels read and write, by argument number.
SmallVector<int32_t> kernelsOnlyBuffers(func::FuncOp main) {
  unsigned buffers = main.getNumArguments() - (main->hasAttr("kiln.dynamic_entry") ? 2 : 0);
  SmallVector<int32_t> indices;
  for (BlockArgument arg : main.getArguments().take_front(buffers))
    if (isa<MemRefType>(arg.getType()) && onlyKernelsUse(arg))
      indices.push_back(arg.getArgNumber());
  return indices;
}

/// The runtime function `name` of `type`, declared once.
func::FuncOp runtimeFunction(ModuleOp module, StringRef name, FunctionType type) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  auto func = func::FuncOp::create(b, module.getLoc(), name, type);
  func.setPrivate();
  return func;
}

/// Bytes from the aligned pointer of the memref `value` to the end of its
/// last element (at least one byte per element: booleans are stored as
/// bytes). A strided view must be static: its offset and strides are in
/// the kernel's code.
FailureOr<Value> byteSize(OpBuilder &b, Location loc, Value value) {
  auto type = cast<MemRefType>(value.getType());
  int64_t elementBytes = (type.getElementTypeBitWidth() + 7) / 8;
  if (type.getLayout().isIdentity()) {
    Value bytes = arith::ConstantIndexOp::create(b, loc, elementBytes);
    for (auto [i, extent] : llvm::enumerate(type.getShape())) {
      Value size = ShapedType::isDynamic(extent)
                       ? memref::DimOp::create(b, loc, value, i).getResult()
                       : arith::ConstantIndexOp::create(b, loc, extent).getResult();
      bytes = b.createOrFold<arith::MulIOp>(loc, bytes, size);
    }
    return bytes;
  }
  SmallVector<int64_t> strides;
  int64_t offset;
  if (!type.hasStaticShape() || failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset) || llvm::any_of(strides, ShapedType::isDynamic))
    return failure();
  int64_t last = offset;
  for (auto [size, stride] : llvm::zip(type.getShape(), strides))
    last += (size - 1) * stride;
  return arith::ConstantIndexOp::create(b, loc, (last + 1) * elementBytes).getResult();
}

Value toI64(OpBuilder &b, Location loc, Value index) {
  return b.createOrFold<arith::IndexCastOp>(loc, b.getI64Type(), index);
}

/// Whether `value` is a constant of the model: a memref.get_global or a
/// view of one, always, sometimes (a branch's or select's result that is
/// one in some cases), or never.
enum class Constness { Always, Sometimes, Never };
Constness constness(Value value) {
  value = rootBuffer(value);
  if (value.getDefiningOp<memref::GetGlobalOp>())
    return Constness::Always;
  auto either = [](Value a, Value b) {
    Constness x = constness(a), y = constness(b);
    return x == y ? x : Constness::Sometimes;
  };
  if (auto select = value.getDefiningOp<arith::SelectOp>())
    return either(select.getTrueValue(), select.getFalseValue());
  auto result = dyn_cast<OpResult>(value);
  auto branch = result ? dyn_cast<scf::IfOp>(result.getOwner()) : scf::IfOp();
  if (!branch || branch.getElseRegion().empty())
    return Constness::Never;
  unsigned i = result.getResultNumber();
  return either(branch.thenYield().getOperand(i), branch.elseYield().getOperand(i));
}

/// The kiln_gpu_arg array of `launch` (a stack array made at the entry of
/// `host`, filled before the launch), as a pointer.
FailureOr<Value> launchArguments(OpBuilder &b, func::FuncOp host, gpu::LaunchFuncOp launch) {
  Location loc = launch.getLoc();
  int64_t count = launch.getNumKernelOperands();
  Value args;
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&host.front());
    args = memref::AllocaOp::create(
        b, loc, MemRefType::get({std::max<int64_t>(count, 1), kArgFields}, b.getI64Type()));
  }
  b.setInsertionPoint(launch);
  auto store = [&](Value value, int64_t arg, int64_t field) {
    memref::StoreOp::create(b, loc, value, args,
                            ValueRange{arith::ConstantIndexOp::create(b, loc, arg),
                                       arith::ConstantIndexOp::create(b, loc, field)});
  };
  for (auto [i, operand] : llvm::enumerate(launch.getKernelOperands())) {
    auto type = dyn_cast<MemRefType>(operand.getType());
    if (!type)
      return launch.emitError("kiln-gpu-embed-kernels: kernel argument ")
             << i << " is a " << operand.getType() << ", not a buffer";
    FailureOr<Value> bytes = byteSize(b, loc, operand);
    if (failed(bytes))
      return launch.emitError("kiln-gpu-embed-kernels: kernel argument ")
             << i << " is a view with dynamic sizes, strides or offset (" << type
             << "); a kernel takes a whole buffer or a static view";
    Value address = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, operand);
    store(toI64(b, loc, address), i, 0);
    store(toI64(b, loc, *bytes), i, 1);
    Operation *def = operand.getDefiningOp();
    Constness constant = constness(operand);
    int64_t flags = constant == Constness::Always      ? kArgConstant
                    : constant == Constness::Sometimes ? kArgMaybeConstant
                    : def && def->hasAttr("kiln.params") ? kArgParams
                                                         : 0;
    store(arith::ConstantIntOp::create(b, loc, b.getI64Type(), flags), i, 2);
  }
  Value address = toI64(b, loc, memref::ExtractAlignedPointerAsIndexOp::create(b, loc, args));
  return LLVM::IntToPtrOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext()), address)
      .getResult();
}

/// The kernel that `launch` runs, as kiln.gpu_kernels holds it: its name,
/// workgroup size and buffers, and the code its gpu.module carries.
FailureOr<DictionaryAttr> describeKernel(gpu::LaunchFuncOp launch) {
  auto kernel = SymbolTable::lookupNearestSymbolFrom<gpu::GPUFuncOp>(launch, launch.getKernel());
  if (!kernel)
    return launch.emitError("kiln-gpu-embed-kernels: no kernel ") << launch.getKernel();
  std::optional<ArrayRef<int32_t>> size = kernel.getKnownBlockSize();
  if (!size)
    return kernel.emitError("kiln-gpu-embed-kernels: kernel has no known_block_size");
  Builder b(kernel.getContext());
  NamedAttrList fields;
  fields.set("name", b.getStringAttr(kernel.getName()));
  fields.set("workgroup_size", b.getDenseI32ArrayAttr(*size));
  fields.set("buffers", b.getI32IntegerAttr(kernel.getNumArguments()));
  fields.set("features", b.getI32IntegerAttr(0));
  bool hasCode = false;
  for (NamedAttribute attr : kernel->getParentOp()->getAttrs()) {
    StringRef name = attr.getName().getValue();
    if (!name.consume_front("kiln."))
      continue;
    fields.set(name, attr.getValue());
    hasCode |= name != "features";
  }
  if (!hasCode)
    return launch.emitError("kiln-gpu-embed-kernels: kernel ")
           << launch.getKernel()
           << " has no code (run the target's kiln-spirv-serialize-kernels or "
              "kiln-cuda-compile-kernels first)";
  return fields.getDictionary(b.getContext());
}

struct KilnGpuEmbedKernelsPass
    : mlir::kiln::impl::KilnGpuEmbedKernelsBase<KilnGpuEmbedKernelsPass> {
  using KilnGpuEmbedKernelsBase::KilnGpuEmbedKernelsBase;

  void runOnOperation() override {
    ModuleOp top = getOperation();
    MLIRContext *ctx = &getContext();
    OpBuilder b(ctx);
    auto i64 = b.getI64Type();
    func::FuncOp launchFn = runtimeFunction(
        top, "kiln_gpu_launch",
        b.getFunctionType({b.getI32Type(), i64, i64, i64, LLVM::LLVMPointerType::get(ctx)}, {}));
    func::FuncOp waitFn = runtimeFunction(top, "kiln_gpu_wait", b.getFunctionType({}, {}));

    SmallVector<Attribute> kernels;
    llvm::DenseMap<SymbolRefAttr, int32_t> kernelIndex;
    for (auto host : llvm::to_vector(top.getOps<func::FuncOp>())) {
      if (host.isExternal() || !containsLaunch(host))
        continue;
      // (Before launches become calls that take the buffers' addresses.)
      if (host.getSymName() == "main")
        top->setAttr("kiln.gpu_kernels_only_buffers",
                     b.getDenseI32ArrayAttr(kernelsOnlyBuffers(host)));
      DenseSet<Value> device;
      host.walk([&](gpu::LaunchFuncOp launch) {
        for (Value operand : launch.getKernelOperands())
          if (isa<MemRefType>(operand.getType()))
            device.insert(rootBuffer(operand));
      });
      placeWaits(host.front(), /*pending=*/false, waitFn, device);
      SmallVector<gpu::LaunchFuncOp> launches;
      host.walk([&](gpu::LaunchFuncOp launch) { launches.push_back(launch); });
      for (gpu::LaunchFuncOp launch : launches) {
        auto [it, inserted] = kernelIndex.try_emplace(launch.getKernel(), kernels.size());
        if (inserted) {
          FailureOr<DictionaryAttr> kernel = describeKernel(launch);
          if (failed(kernel))
            return signalPassFailure();
          kernels.push_back(*kernel);
        }
        FailureOr<Value> args = launchArguments(b, host, launch);
        if (failed(args))
          return signalPassFailure();
        Location loc = launch.getLoc();
        Value index = arith::ConstantIntOp::create(b, loc, b.getI32Type(), it->second);
        func::CallOp::create(b, loc, launchFn,
                             ValueRange{index, toI64(b, loc, launch.getGridSizeX()),
                                        toI64(b, loc, launch.getGridSizeY()),
                                        toI64(b, loc, launch.getGridSizeZ()), *args});
        launch.erase();
      }
    }
    for (Operation &op : llvm::make_early_inc_range(*top.getBody()))
      if (isa<gpu::GPUModuleOp>(op))
        op.erase();
    top->removeAttr(gpu::GPUDialect::getContainerModuleAttrName());
    if (!kernels.empty())
      top->setAttr("kiln.gpu_kernels", b.getArrayAttr(kernels));
  }
};

} // namespace
