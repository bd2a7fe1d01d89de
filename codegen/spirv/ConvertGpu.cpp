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
#include "codegen/gpu/KernelMath.h"

#include "mlir/Conversion/ArithToSPIRV/ArithToSPIRV.h"
#include "mlir/Conversion/ControlFlowToSPIRV/ControlFlowToSPIRV.h"
#include "mlir/Conversion/FuncToSPIRV/FuncToSPIRV.h"
#include "mlir/Conversion/GPUToSPIRV/GPUToSPIRV.h"
#include "mlir/Conversion/MathToSPIRV/MathToSPIRV.h"
#include "mlir/Conversion/MemRefToSPIRV/MemRefToSPIRV.h"
#include "mlir/Conversion/SCFToSPIRV/SCFToSPIRV.h"
#include "mlir/Conversion/VectorToSPIRV/VectorToSPIRV.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/Dialect/SPIRV/Transforms/SPIRVConversion.h"
#include "mlir/IR/Matchers.h"
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
/// Function variables and a workgroup's shared buffers Workgroup ones.
std::optional<spirv::StorageClass> storageClass(Attribute space) {
  if (auto gpuSpace = dyn_cast_if_present<gpu::AddressSpaceAttr>(space)) {
    if (gpuSpace.getValue() == gpu::AddressSpace::Private)
      return spirv::StorageClass::Function;
    if (gpuSpace.getValue() == gpu::AddressSpace::Workgroup)
      return spirv::StorageClass::Workgroup;
  }
  return spirv::mapMemorySpaceToVulkanStorageClass(space);
}

/// min/max of booleans (a ReduceMax of bool): GLSL's UMin/UMax take 8
/// bits and more; on i1 they are `and` and `or`.
template <typename MinMax, typename Logic>
struct BooleanMinMax : OpRewritePattern<MinMax> {
  using OpRewritePattern<MinMax>::OpRewritePattern;
  LogicalResult matchAndRewrite(MinMax op, PatternRewriter &rewriter) const override {
    if (!op.getType().isInteger(1))
      return failure();
    rewriter.replaceOpWithNewOp<Logic>(op, op.getLhs(), op.getRhs());
    return success();
  }
};

/// A compare of an index cast to a wider integer with a constant, or with
/// another such cast, compares the indices instead: in the kernel's 32-bit
/// indices, as sign extension keeps both orders and a constant that fits in
/// 32 bits is exact there. (Trilu's `j - i <= k` is an i64 compare of
/// thread ids.) GPUs run 64-bit integer math as several instructions, and
/// lavapipe (Mesa 22.3) miscompiles a signed 64-bit compare of a
/// sign-extended value with a constant: Trilu on a single row gave zeros.
struct IndexCompareInIndexWidth : OpRewritePattern<arith::CmpIOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::CmpIOp op, PatternRewriter &rewriter) const override {
    if (!op.getLhs().getType().isInteger(64))
      return failure();
    Value lhs = op.getLhs(), rhs = op.getRhs();
    if (!(castIndex(lhs) || castIndex(rhs)) || !(castIndex(lhs) || fitsIn32Bits(lhs)) ||
        !(castIndex(rhs) || fitsIn32Bits(rhs)))
      return failure();
    rewriter.replaceOpWithNewOp<arith::CmpIOp>(op, op.getPredicate(), asIndex(lhs, rewriter),
                                               asIndex(rhs, rewriter));
    return success();
  }

private:
  /// The index that `value` is cast from, or null.
  static Value castIndex(Value value) {
    auto cast = value.getDefiningOp<arith::IndexCastOp>();
    return cast && isa<IndexType>(cast.getIn().getType()) ? cast.getIn() : Value();
  }
  static bool fitsIn32Bits(Value value) {
    APInt constant;
    return matchPattern(value, m_ConstantInt(&constant)) && constant.isSignedIntN(32);
  }
  /// The index cast operand, or the constant as an index.
  static Value asIndex(Value value, PatternRewriter &rewriter) {
    if (Value index = castIndex(value))
      return index;
    APInt constant;
    (void)matchPattern(value, m_ConstantInt(&constant));
    return arith::ConstantIndexOp::create(rewriter, value.getLoc(), constant.getSExtValue());
  }
};

/// Rewrites what GLSL.std.450 and SPIR-V lack: erf and erfc as polynomials
/// (as the CPU computes them), integer powers by squaring, powf with its
/// negative bases (GLSL's Pow is undefined for them), min and max of
/// booleans as logic, floor and ceiling divisions (a computed-on-read
/// operand's indices, delinearized) as divisions and selects; and compares
/// index values in 32 bits (above).
LogicalResult expandMath(gpu::GPUModuleOp module) {
  RewritePatternSet patterns(module.getContext());
  arith::populateCeilFloorDivExpandOpsPatterns(patterns);
  populatePolynomialApproximateErfPattern(patterns);
  populatePolynomialApproximateErfcPattern(patterns);
  math::populateExpansionPatterns(patterns, {"fpowi", "powf"});
  kiln::populateIntegerPowerBySquaringPattern(patterns);
  patterns.add<IndexCompareInIndexWidth,
               BooleanMinMax<arith::MaxUIOp, arith::OrIOp>,
               BooleanMinMax<arith::MaxSIOp, arith::AndIOp>,
               BooleanMinMax<arith::MinUIOp, arith::AndIOp>,
               BooleanMinMax<arith::MinSIOp, arith::OrIOp>>(module.getContext());
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
  cf::populateControlFlowToSPIRVPatterns(types, patterns);
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
