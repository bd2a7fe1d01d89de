//===- SerializeKernels.cpp - SPIR-V words onto their gpu.modules ---------===//
#include "codegen/spirv/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Target/SPIRV/Serialization.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNSPIRVSERIALIZEKERNELS
#include "codegen/spirv/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// The KILN_GPU_FEATURE_* bit (runtime/include/kiln/runtime.h) of a
/// capability a device may lack; 0 for those every device has.
int32_t featureOf(spirv::Capability capability) {
  switch (capability) {
  case spirv::Capability::Int64: return 1;
  case spirv::Capability::Int16: return 2;
  case spirv::Capability::Int8: return 4;
  case spirv::Capability::Float16: return 8;
  case spirv::Capability::Float64: return 16;
  case spirv::Capability::StorageBuffer16BitAccess: return 32;
  case spirv::Capability::StorageBuffer8BitAccess: return 64;
  default: return 0;
  }
}

struct KilnSpirvSerializeKernelsPass
    : mlir::kiln::impl::KilnSpirvSerializeKernelsBase<KilnSpirvSerializeKernelsPass> {
  void runOnOperation() override {
    ModuleOp top = getOperation();
    Builder b(&getContext());
    for (auto spirvModule : llvm::to_vector(top.getOps<spirv::ModuleOp>())) {
      std::optional<StringRef> name = spirvModule.getName();
      auto kernels = name && name->starts_with("__spv__")
                         ? top.lookupSymbol<gpu::GPUModuleOp>(name->drop_front(7))
                         : nullptr;
      if (!kernels) {
        spirvModule.emitError("kiln-spirv-serialize-kernels: no gpu.module for this "
                              "spirv.module (kiln-spirv-convert-gpu names it __spv__<module>)");
        return signalPassFailure();
      }
      SmallVector<uint32_t> words;
      if (failed(spirv::serialize(spirvModule, words)))
        return signalPassFailure();
      // spirv-update-vce left the capabilities the kernel really uses.
      int32_t features = 0;
      if (std::optional<spirv::VerCapExtAttr> vce = spirvModule.getVceTriple())
        for (spirv::Capability capability : vce->getCapabilities())
          features |= featureOf(capability);
      auto type = RankedTensorType::get({static_cast<int64_t>(words.size())}, b.getI32Type());
      kernels->setAttr("kiln.spirv", DenseIntElementsAttr::get(type, ArrayRef<uint32_t>(words)));
      kernels->setAttr("kiln.features", b.getI32IntegerAttr(features));
      spirvModule.erase();
    }
  }
};

} // namespace
