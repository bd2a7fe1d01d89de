//===- ConvertGpu.cpp - gpu.module kernels to spirv.module ----------------===//
//
// Upstream's convert-gpu-to-spirv leaves math ops alone and needs each
// kernel's workgroup size as an attribute of its own; this pass takes the
// size from `known_block_size` and converts math (exp, tanh, ...) through
// GLSL.std.450 too. The conversion runs on a clone of each gpu.module, which
// becomes its spirv.module.
//
//===----------------------------------------------------------------------===//
#include "codegen/spirv/Passes.h"

#include "mlir/Conversion/ArithToSPIRV/ArithToSPIRV.h"
#include "mlir/Conversion/FuncToSPIRV/FuncToSPIRV.h"
#include "mlir/Conversion/GPUToSPIRV/GPUToSPIRV.h"
#include "mlir/Conversion/MathToSPIRV/MathToSPIRV.h"
#include "mlir/Conversion/MemRefToSPIRV/MemRefToSPIRV.h"
#include "mlir/Conversion/SCFToSPIRV/SCFToSPIRV.h"
#include "mlir/Conversion/VectorToSPIRV/VectorToSPIRV.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/Dialect/SPIRV/Transforms/SPIRVConversion.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNSPIRVCONVERTGPU
#include "codegen/spirv/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

namespace {

/// SPIR-V 1.3 shaders over storage buffers, Vulkan's required limits, and
/// the element types of ONNX tensors as they are laid out in memory: 8-,
/// 16- and 64-bit integers, f16 and f64, in storage buffers too. A kernel
/// uses these only where the model does (spirv-update-vce keeps what it
/// uses), and the runtime refuses a kernel whose types the device lacks.
spirv::TargetEnvAttr vulkanTargetEnv(MLIRContext *ctx) {
  using spirv::Capability;
  auto triple = spirv::VerCapExtAttr::get(
      spirv::Version::V_1_3,
      {Capability::Shader, Capability::Int64, Capability::Int16, Capability::Int8,
       Capability::Float16, Capability::Float64, Capability::StorageBuffer16BitAccess,
       Capability::StorageBuffer8BitAccess},
      {spirv::Extension::SPV_KHR_storage_buffer_storage_class,
       spirv::Extension::SPV_KHR_16bit_storage, spirv::Extension::SPV_KHR_8bit_storage},
      ctx);
  return spirv::TargetEnvAttr::get(triple, spirv::getDefaultResourceLimits(ctx),
                                   spirv::ClientAPI::Vulkan);
}

/// Whether a kernel argument of `type` is a buffer the SPIR-V conversion
/// can address: a whole one, or a view with static strides and offset.
bool isAddressable(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref || memref.getLayout().isIdentity())
    return true;
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(memref.getStridesAndOffset(strides, offset)) &&
         !ShapedType::isDynamic(offset) && !llvm::any_of(strides, ShapedType::isDynamic);
}

/// Gives each kernel of `module` its workgroup size as a SPIR-V entry point
/// ABI; a kernel without `known_block_size`, or with a view of dynamic
/// layout as an argument, is an error.
LogicalResult setEntryPoints(gpu::GPUModuleOp module) {
  for (auto func : module.getOps<gpu::GPUFuncOp>()) {
    if (!func.isKernel())
      continue;
    for (auto [i, type] : llvm::enumerate(func.getArgumentTypes()))
      if (!isAddressable(type))
        return func.emitError("kiln-spirv-convert-gpu: kernel argument ")
               << i << " is a view with dynamic strides or offset (" << type
               << "); kernels take whole buffers or static views";
    std::optional<ArrayRef<int32_t>> size = func.getKnownBlockSize();
    if (!size)
      return func.emitError("kiln-spirv-convert-gpu: kernel has no known_block_size");
    func->setAttr(spirv::getEntryPointABIAttrName(),
                  spirv::getEntryPointABIAttr(func.getContext(), *size));
  }
  return success();
}

/// Vulkan's storage classes, but a thread's private buffers (allocas) are
/// Function variables.
std::optional<spirv::StorageClass> storageClass(Attribute space) {
  auto gpuSpace = dyn_cast_if_present<gpu::AddressSpaceAttr>(space);
  if (gpuSpace && gpuSpace.getValue() == gpu::AddressSpace::Private)
    return spirv::StorageClass::Function;
  return spirv::mapMemorySpaceToVulkanStorageClass(space);
}

/// Rewrites the math ops GLSL.std.450 lacks: erf and erfc as polynomials
/// (as the CPU computes them), integer powers as multiplications.
LogicalResult expandMath(gpu::GPUModuleOp module) {
  RewritePatternSet patterns(module.getContext());
  populatePolynomialApproximateErfPattern(patterns);
  populatePolynomialApproximateErfcPattern(patterns);
  math::populateExpansionPatterns(patterns, {"fpowi", "ipowi"});
  return applyPatternsGreedily(module, std::move(patterns));
}

/// Converts `module` (a clone) into a spirv.module in place.
LogicalResult convertModule(gpu::GPUModuleOp module) {
  MLIRContext *ctx = module.getContext();
  if (failed(expandMath(module)))
    return module.emitError("kiln-spirv-convert-gpu: math expansion did not converge");
  spirv::MemorySpaceToStorageClassConverter storage(storageClass);
  spirv::convertMemRefTypesAndAttrs(module, storage);

  spirv::TargetEnvAttr env = spirv::lookupTargetEnvOrDefault(module);
  std::unique_ptr<ConversionTarget> target = SPIRVConversionTarget::get(env);
  SPIRVTypeConverter types(env);
  RewritePatternSet patterns(ctx);
  populateGPUToSPIRVPatterns(types, patterns);
  ScfToSPIRVContext scf;
  populateSCFToSPIRVPatterns(types, scf, patterns);
  arith::populateArithToSPIRVPatterns(types, patterns);
  populateMathToSPIRVPatterns(types, patterns);
  populateMemRefToSPIRVPatterns(types, patterns);
  populateFuncToSPIRVPatterns(types, patterns);
  populateVectorToSPIRVPatterns(types, patterns);
  return applyFullConversion(module, *target, std::move(patterns));
}

struct KilnSpirvConvertGpuPass
    : mlir::kiln::impl::KilnSpirvConvertGpuBase<KilnSpirvConvertGpuPass> {
  using KilnSpirvConvertGpuBase::KilnSpirvConvertGpuBase;

  void runOnOperation() override {
    ModuleOp top = getOperation();
    SmallVector<gpu::GPUModuleOp> modules(top.getOps<gpu::GPUModuleOp>());
    OpBuilder builder(&getContext());
    for (gpu::GPUModuleOp module : modules) {
      if (failed(setEntryPoints(module)))
        return signalPassFailure();
      builder.setInsertionPoint(module);
      auto clone = cast<gpu::GPUModuleOp>(builder.clone(*module));
      if (!spirv::lookupTargetEnv(clone))
        clone->setAttr(spirv::getTargetEnvAttrName(), vulkanTargetEnv(&getContext()));
      if (failed(convertModule(clone)))
        return signalPassFailure();
    }
  }
};

} // namespace
