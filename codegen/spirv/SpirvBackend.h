//===- SpirvBackend.h - models whose kernels go through SPIR-V --*- C++ -*-===//
#ifndef KILN_CODEGEN_SPIRV_SPIRVBACKEND_H
#define KILN_CODEGEN_SPIRV_SPIRVBACKEND_H

#include "codegen/Pipeline.h"

namespace mlir::kiln {

/// Whether `target` names a GPU target whose kernels go through SPIR-V:
/// Vulkan (vulkan, vulkan-lavapipe, vulkan-nvidia) or Metal (metal).
bool isSpirvTarget(llvm::StringRef target);

/// The backend of `--target=vulkan*` and `--target=metal`: kernels through
/// the shared GPU pipeline to SPIR-V (for Metal then to MSL); host code for
/// this machine's CPU (Vulkan) or arm64 macOS (Metal), `cpu` as --mcpu.
FailureOr<std::unique_ptr<TargetBackend>> createSpirvBackend(llvm::StringRef target,
                                                             llvm::StringRef cpu,
                                                             std::string &error);

} // namespace mlir::kiln

#endif
