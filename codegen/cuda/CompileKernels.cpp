//===- CompileKernels.cpp - GPU kernels to CUDA fatbins -------------------===//
//
// Each gpu.module is lowered on a copy (the original stays for the
// launches) through NVVM to PTX, per chip, by MLIR's NVVM target; the
// toolkit's ptxas and fatbinary make the fatbin the runtime loads.
//
//===----------------------------------------------------------------------===//
#include "codegen/cuda/CudaBackend.h"
#include "codegen/cuda/Passes.h"
#include "codegen/gpu/KernelMath.h"

#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/NVGPUToNVVM/NVGPUToNVVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/CompilationInterfaces.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Threading.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCUDACOMPILEKERNELS
#include "codegen/cuda/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// A temporary file that goes away with it.
struct TempFile {
  SmallString<128> path;
  explicit TempFile(StringRef suffix) {
    if (llvm::sys::fs::createTemporaryFile("kiln-cuda", suffix, path))
      path.clear();
  }
  ~TempFile() {
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }
};

/// Runs a toolkit program; its output (stdout and stderr) goes to `output`.
LogicalResult runTool(StringRef program, ArrayRef<StringRef> args, std::string &output) {
  TempFile log("log");
  std::optional<StringRef> redirects[] = {std::nullopt, log.path.str(), log.path.str()};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(program, args, std::nullopt, redirects, 0, 0, &message);
  if (auto text = llvm::MemoryBuffer::getFile(log.path))
    output = (*text)->getBuffer().str();
  if (!message.empty())
    output += message;
  return success(rc == 0);
}

LogicalResult writeFile(StringRef path, StringRef bytes) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return failure();
  os << bytes;
  return success();
}

/// Gives each kernel argument of a dynamic size (the flat buffers of
/// kiln-gpu-pack-params, which only loads, stores and asynchronous copies
/// use, and the check of where a view starts) a static one, as passing a
/// bare pointer requires: the largest 32-bit count. Nothing reads it;
/// addressing stays the kernel's.
LogicalResult giveFlatBuffersStaticSizes(gpu::GPUModuleOp kernels) {
  for (auto kernel : kernels.getOps<gpu::GPUFuncOp>()) {
    SmallVector<Type> inputs(kernel.getArgumentTypes());
    for (BlockArgument arg : kernel.getArguments()) {
      auto type = dyn_cast<MemRefType>(arg.getType());
      if (!type || type.hasStaticShape())
        continue;
      if (type.getRank() != 1 || !type.getLayout().isIdentity() ||
          !llvm::all_of(arg.getUsers(), [](Operation *user) {
            return isa<memref::LoadOp, memref::StoreOp, nvgpu::DeviceAsyncCopyOp,
                       memref::ExtractAlignedPointerAsIndexOp>(user);
          }))
        return kernel.emitError("kiln-cuda-compile-kernels: kernel argument ")
               << arg.getArgNumber() << " (" << type
               << ") has a dynamic shape used other than by loads, stores and "
                  "asynchronous copies (run "
                  "kiln-gpu-pack-params first)";
      auto bounded = MemRefType::get({std::numeric_limits<int32_t>::max()},
                                     type.getElementType(), type.getLayout(),
                                     type.getMemorySpace());
      arg.setType(bounded);
      inputs[arg.getArgNumber()] = bounded;
    }
    kernel.setFunctionType(FunctionType::get(kernels.getContext(), inputs, {}));
  }
  return success();
}

/// The shared memory a kernel may declare statically; more must be
/// dynamic, which the launch sizes and the kernel opts into
/// (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES).
constexpr int64_t kStaticSharedBytes = 48 * 1024;

/// The most shared memory a workgroup may opt into on `chip` (CUDA's
/// programming guide, "Technical Specifications per Compute Capability");
/// a chip not listed is held to the static 48 KiB.
int64_t maxSharedBytes(StringRef chip) {
  StringRef arch = chip.drop_front(3).take_while(llvm::isDigit); // "sm_90a" -> "90"
  if (arch == "80" || arch == "87")
    return 163 * 1024;
  if (arch == "86" || arch == "89" || arch == "120")
    return 99 * 1024;
  if (arch == "90" || arch == "100")
    return 227 * 1024;
  return kStaticSharedBytes;
}

/// `bytes` rounded up to a multiple of 16, the alignment of every workgroup
/// buffer (kiln-gpu-promote-operands', kiln-cuda-mma-sync's).
int64_t roundTo16(int64_t bytes) { return llvm::alignTo(bytes, 16); }

/// The bytes of a static buffer of workgroup memory, rounded to 16.
int64_t sharedBytes(memref::AllocOp alloc) {
  MemRefType type = alloc.getType();
  return roundTo16(type.getNumElements() * llvm::divideCeil(type.getElementTypeBitWidth(), 8));
}

/// Places each allocation of workgroup memory in a kernel (the buffers of
/// kiln-gpu-promote-operands and kiln-cuda-mma-sync) in shared memory (an
/// alloc would become a device malloc): where a kernel's take at most
/// 48 KiB, as workgroup attributions (static shared memory, of the alloc's
/// alignment); otherwise as views, one after another, of the kernel's
/// dynamic shared memory. Returns the dynamic shared memory the module's
/// kernel takes (0: none), which its launches must give it: the kernel
/// table holds it per module, so such a kernel must be its module's only
/// one (as gpu-kernel-outlining makes them).
FailureOr<int64_t> placeSharedBuffers(gpu::GPUModuleOp kernels) {
  WalkResult outside = kernels.walk([](memref::AllocOp alloc) {
    if (!gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(alloc.getType()) ||
        (alloc.getType().hasStaticShape() && alloc->getParentOfType<gpu::GPUFuncOp>()))
      return WalkResult::advance();
    alloc.emitError("kiln-cuda-compile-kernels: workgroup memory must have a static shape, "
                    "in a kernel");
    return WalkResult::interrupt();
  });
  if (outside.wasInterrupted())
    return failure();
  int64_t dynamicBytes = 0;
  auto functions = llvm::to_vector(kernels.getOps<gpu::GPUFuncOp>());
  for (auto kernel : functions) {
    SmallVector<memref::AllocOp> allocs;
    kernel.walk([&](memref::AllocOp alloc) {
      if (gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(alloc.getType()))
        allocs.push_back(alloc);
    });
    int64_t total = 0;
    for (memref::AllocOp alloc : allocs)
      total += sharedBytes(alloc);
    if (total <= kStaticSharedBytes) {
      for (memref::AllocOp alloc : allocs) {
        BlockArgument buffer = kernel.addWorkgroupAttribution(alloc.getType(), alloc.getLoc());
        if (std::optional<uint64_t> alignment = alloc.getAlignment())
          kernel.setWorkgroupAttributionAttr(
              buffer.getArgNumber() - kernel.getFirstWorkgroupAttributionIndex(),
              LLVM::LLVMDialect::getAlignAttrName(),
              IntegerAttr::get(IntegerType::get(alloc.getContext(), 64), *alignment));
        alloc.replaceAllUsesWith(buffer);
        alloc.erase();
      }
      continue;
    }
    if (functions.size() != 1)
      return kernel.emitError("kiln-cuda-compile-kernels: a kernel of more than 48 KiB of "
                              "workgroup memory must be its gpu.module's only one");
    for (memref::AllocOp alloc : allocs)
      if (alloc.getAlignment().value_or(16) > 16)
        return alloc.emitError("kiln-cuda-compile-kernels: workgroup memory past 48 KiB is "
                               "dynamic shared memory, aligned to 16 bytes, not ")
               << *alloc.getAlignment();
    OpBuilder b = OpBuilder::atBlockBegin(&kernel.getBody().front());
    Location loc = kernel.getLoc();
    auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
    Value memory = gpu::DynamicSharedMemoryOp::create(
        b, loc, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), nullptr, workgroup));
    int64_t offset = 0;
    for (memref::AllocOp alloc : allocs) {
      b.setInsertionPoint(alloc);
      Value at = arith::ConstantIndexOp::create(b, alloc.getLoc(), offset);
      alloc.replaceAllUsesWith(
          memref::ViewOp::create(b, alloc.getLoc(), alloc.getType(), memory, at, ValueRange{})
              .getResult());
      offset += sharedBytes(alloc);
      alloc.erase();
    }
    dynamicBytes = std::max(dynamicBytes, total);
  }
  return dynamicBytes;
}

/// Makes the lowering's globals of dynamic shared memory (one per
/// gpu.dynamic_shared_memory user, `[0 x i8]` in address space 3) external
/// declarations, as clang declares `extern __shared__ char s[]`: PTX's
/// `.extern .shared .b8 s[]`, the launch's dynamic shared memory. Internal,
/// NVPTX turns one into a variable of its function, of no size, whose
/// accesses LLVM may take as past its end.
void declareDynamicSharedMemory(gpu::GPUModuleOp kernels) {
  for (auto global : kernels.getOps<LLVM::GlobalOp>()) {
    auto array = dyn_cast<LLVM::LLVMArrayType>(global.getGlobalType());
    if (global.getAddrSpace() == 3 && array && array.getNumElements() == 0 &&
        !global.getValueOrNull() && global.getInitializerRegion().empty())
      global.setLinkage(LLVM::Linkage::External);
  }
}

/// Moves each static private array of a kernel (an accumulator, an mma's
/// fragments) to the start of the kernel. LLVM's SROA puts in registers
/// only the allocas of a function's entry block; one after the staging
/// loops (whose control flow splits the block it was in) stayed in local
/// memory, stored and reloaded around the reduction. A static alloca's
/// place does not change what it holds: its contents are undefined
/// wherever it starts.
void hoistPrivateArrays(gpu::GPUModuleOp kernels) {
  for (auto kernel : kernels.getOps<gpu::GPUFuncOp>()) {
    Block &entry = kernel.getBody().front();
    SmallVector<memref::AllocaOp> arrays;
    kernel.walk([&](memref::AllocaOp alloca) {
      if (alloca.getDynamicSizes().empty() && alloca.getSymbolOperands().empty())
        arrays.push_back(alloca);
    });
    for (memref::AllocaOp alloca : llvm::reverse(arrays))
      alloca->moveBefore(&entry, entry.begin());
  }
}

/// Lets LLVM fuse each multiply and add of the kernels into one fma, as
/// nvcc does by default: without `contract`, NVPTX writes mul.rn and add.rn,
/// which ptxas keeps apart, at half the arithmetic throughput.
void allowContraction(gpu::GPUModuleOp kernels) {
  kernels.walk([](arith::ArithFastMathInterface op) {
    arith::FastMathFlagsAttr flags = op.getFastMathFlagsAttr();
    auto contract = arith::FastMathFlagsAttr::get(
        op->getContext(),
        (flags ? flags.getValue() : arith::FastMathFlags::none) | arith::FastMathFlags::contract);
    op->setAttr(op.getFastMathAttrName(), contract);
  });
}

/// One gpu.module compiled: the fatbin, the first chip's PTX, the most
/// registers a thread uses, the dynamic shared memory a launch gives a
/// workgroup.
struct CompiledKernels {
  std::string fatbin, ptx;
  int64_t registers = 0, dynamicSharedBytes = 0;
};

struct KilnCudaCompileKernelsPass
    : mlir::kiln::impl::KilnCudaCompileKernelsBase<KilnCudaCompileKernelsPass> {
  using KilnCudaCompileKernelsBase::KilnCudaCompileKernelsBase;

  void getDependentDialects(DialectRegistry &registry) const override {
    KilnCudaCompileKernelsBase::getDependentDialects(registry);
    NVVM::registerNVVMTargetInterfaceExternalModels(registry);
    registerBuiltinDialectTranslation(registry);
    registerGPUDialectTranslation(registry);
    registerLLVMDialectTranslation(registry);
    registerNVVMDialectTranslation(registry);
  }

  void runOnOperation() override {
    ModuleOp top = getOperation();
    auto modules = llvm::to_vector(top.getOps<gpu::GPUModuleOp>());
    if (modules.empty())
      return;
    kit = findCudaToolkit(toolkit);
    if (kit.empty()) {
      emitError(top.getLoc(), "kiln-cuda-compile-kernels: ") << cudaToolkitMissing(toolkit);
      return signalPassFailure();
    }
    archs.assign(chips.begin(), chips.end());
    if (archs.empty())
      archs = {"sm_80", "sm_90a"};
    loadLoweringDialects();
    // Each module compiles on a copy of its own, in an LLVM context of its
    // own, through ptxas processes of its own: on as many threads as the
    // context allows (--mlir-disable-threading: one). The originals are
    // only read until all are done.
    std::vector<CompiledKernels> compiled(modules.size());
    if (failed(failableParallelForEachN(&getContext(), 0, modules.size(), [&](size_t i) {
          FailureOr<CompiledKernels> one = compile(modules[i]);
          if (failed(one))
            return failure();
          compiled[i] = std::move(*one);
          return success();
        })))
      return signalPassFailure();
    Builder b(&getContext());
    for (auto [kernels, one] : llvm::zip_equal(modules, compiled)) {
      kernels->setAttr("kiln.cuda", b.getStringAttr(one.fatbin));
      kernels->setAttr("kiln.ptx", b.getStringAttr(one.ptx));
      kernels->setAttr("kiln.registers", b.getI32IntegerAttr(one.registers));
      if (one.dynamicSharedBytes)
        kernels->setAttr("kiln.shared_bytes", b.getI32IntegerAttr(one.dynamicSharedBytes));
    }
  }

private:
  std::string kit;
  std::vector<std::string> archs; // `chips`, or the default

  std::string tool(StringRef name) const {
    SmallString<256> path(kit);
    llvm::sys::path::append(path, "bin", name);
    return std::string(path);
  }

  /// The passes that lower a gpu.module, in its holder module, to the LLVM
  /// and NVVM dialects.
  static void addLowering(PassManager &pm) {
    OpPassManager &nested = pm.nest<gpu::GPUModuleOp>();
    nested.addPass(createSCFToControlFlowPass());
    nested.addPass(createConvertNVGPUToNVVMPass()); // ldmatrix
    nested.addPass(createConvertNVVMToLLVMPass());  // wgmma, as inline PTX
    ConvertGpuOpsToNVVMOpsOptions nvvm;
    nvvm.useBarePtrCallConv = true; // one parameter per buffer, as the runtime passes them
    nested.addPass(createConvertGpuOpsToNVVMOps(nvvm));
    nested.addPass(createCanonicalizerPass());
    nested.addPass(createCSEPass());
    nested.addPass(createReconcileUnrealizedCastsPass());
  }

  /// Registers and loads the dialects the lowering creates ops of, as its
  /// pass managers would: done first, so that when the modules compile in
  /// parallel they only find them there (neither may change while threads
  /// use the context).
  void loadLoweringDialects() {
    PassManager pm(&getContext(), ModuleOp::getOperationName());
    addLowering(pm);
    DialectRegistry registry;
    pm.getDependentDialects(registry);
    getContext().appendDialectRegistry(registry);
    for (StringRef name : registry.getDialectNames())
      getContext().getOrLoadDialect(name);
  }

  /// A copy of `kernels` lowered to the LLVM and NVVM dialects, in a module
  /// of its own; `dynamicSharedBytes` what its launches give a workgroup.
  FailureOr<OwningOpRef<ModuleOp>> lowerToNVVM(gpu::GPUModuleOp kernels,
                                               int64_t &dynamicSharedBytes) {
    OwningOpRef<ModuleOp> holder = ModuleOp::create(kernels.getLoc());
    auto copy = kernels.clone();
    holder->getBody()->push_back(copy);
    if (failed(giveFlatBuffersStaticSizes(copy)))
      return failure();
    FailureOr<int64_t> dynamicShared = placeSharedBuffers(copy);
    if (failed(dynamicShared))
      return failure();
    dynamicSharedBytes = *dynamicShared;
    hoistPrivateArrays(copy);
    allowContraction(copy);
    RewritePatternSet math(&getContext());
    kiln::populateIntegerPowerBySquaringPattern(math);
    if (failed(applyPatternsGreedily(copy, std::move(math))))
      return failure();
    PassManager pm(&getContext(), ModuleOp::getOperationName());
    addLowering(pm);
    if (failed(pm.run(*holder)))
      return failure();
    declareDynamicSharedMemory(copy);
    return holder;
  }

  /// PTX of the lowered `kernels` for `chip`.
  FailureOr<std::string> translateToPtx(gpu::GPUModuleOp kernels, StringRef chip) {
    auto target = NVVM::NVVMTargetAttr::get(&getContext(), /*optLevel=*/3,
                                            "nvptx64-nvidia-cuda", chip, "+ptx80");
    gpu::TargetOptions options(kit, {}, {}, {}, gpu::CompilationTarget::Assembly);
    auto serializer = dyn_cast<gpu::TargetAttrInterface>(target);
    if (!serializer)
      return kernels.emitError("kiln-cuda-compile-kernels: MLIR's NVVM target is not "
                               "registered in this tool");
    std::optional<SmallVector<char, 0>> ptx = serializer.serializeToObject(kernels, options);
    if (!ptx)
      return kernels.emitError("kiln-cuda-compile-kernels: no PTX for ") << chip;
    return std::string(ptx->begin(), llvm::find(*ptx, '\0'));
  }

  FailureOr<CompiledKernels> compile(gpu::GPUModuleOp original) {
    CompiledKernels compiled;
    FailureOr<OwningOpRef<ModuleOp>> lowered = lowerToNVVM(original, compiled.dynamicSharedBytes);
    if (failed(lowered))
      return failure();
    auto kernels = *(*lowered)->getOps<gpu::GPUModuleOp>().begin();
    std::vector<std::unique_ptr<TempFile>> files;
    std::vector<std::string> images;
    llvm::Regex usedRegisters("Used ([0-9]+) registers");
    // wgmma (kiln-cuda-wgmma) exists on sm_90a alone: such a module is
    // compiled for the chips of `archs` that have it.
    bool wgmma = false;
    original.walk([&](NVVM::WgmmaMmaAsyncOp) { wgmma = true; });
    SmallVector<StringRef> chips;
    for (StringRef chip : archs)
      if (!wgmma || chip == "sm_90a")
        chips.push_back(chip);
    if (chips.empty())
      return original.emitError("kiln-cuda-compile-kernels: kernel module '")
             << original.getName() << "' uses wgmma, which none of the chips has (sm_90a does)";
    for (StringRef chip : chips) {
      if (compiled.dynamicSharedBytes > maxSharedBytes(chip))
        return original.emitError("kiln-cuda-compile-kernels: kernel module '")
               << original.getName() << "' takes " << compiled.dynamicSharedBytes
               << " bytes of shared memory; " << chip << " gives a workgroup at most "
               << maxSharedBytes(chip);
      FailureOr<std::string> ptx = translateToPtx(kernels, chip);
      if (failed(ptx))
        return failure();
      TempFile *ptxFile = files.emplace_back(std::make_unique<TempFile>("ptx")).get();
      TempFile *cubin = files.emplace_back(std::make_unique<TempFile>("cubin")).get();
      if (failed(writeFile(ptxFile->path, *ptx)))
        return original.emitError("kiln-cuda-compile-kernels: cannot write a temporary file");
      std::string arch = ("-arch=" + chip).str(), output;
      std::string ptxas = tool("ptxas");
      if (failed(runTool(ptxas, {ptxas, arch, "-O3", "-v", ptxFile->path, "-o", cubin->path},
                         output)))
        return original.emitError("kiln-cuda-compile-kernels: ptxas refused kernel module '")
               << original.getName() << "' for " << chip << ":\n" << output;
      StringRef rest = output;
      SmallVector<StringRef> match;
      while (usedRegisters.match(rest, &match)) {
        compiled.registers = std::max<int64_t>(compiled.registers, std::stoll(match[1].str()));
        rest = rest.substr(rest.find(match[0]) + match[0].size());
      }
      StringRef sm = chip.drop_front(3); // "sm_90a" -> "90a"
      images.push_back(("--image3=kind=elf,sm=" + sm + ",file=" + cubin->path).str());
      if (compiled.ptx.empty()) {
        compiled.ptx = *ptx;
        images.push_back(("--image3=kind=ptx,sm=" + sm + ",file=" + ptxFile->path).str());
      }
    }
    TempFile fatbin("fatbin");
    std::string fatbinary = tool("fatbinary"), output;
    std::string create = ("--create=" + fatbin.path).str();
    SmallVector<StringRef> args = {fatbinary, "-64", create};
    args.append(images.begin(), images.end());
    if (failed(runTool(fatbinary, args, output)))
      return original.emitError("kiln-cuda-compile-kernels: fatbinary failed for kernel module '")
             << original.getName() << "':\n" << output;
    auto bytes = llvm::MemoryBuffer::getFile(fatbin.path, /*IsText=*/false);
    if (!bytes)
      return original.emitError("kiln-cuda-compile-kernels: fatbinary wrote no fatbin");
    compiled.fatbin = (*bytes)->getBuffer().str();
    return compiled;
  }
};

} // namespace
