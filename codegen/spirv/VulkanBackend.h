//===- VulkanBackend.h - models whose kernels run on Vulkan -----*- C++ -*-===//
#ifndef KILN_CODEGEN_SPIRV_VULKANBACKEND_H
#define KILN_CODEGEN_SPIRV_VULKANBACKEND_H

#include "codegen/Pipeline.h"

namespace mlir::kiln {

/// Whether `target` names a Vulkan GPU target (vulkan, vulkan-lavapipe, ...).
bool isVulkanTarget(llvm::StringRef target);

/// The backend of `--target=vulkan*`: kernels through the shared GPU
/// pipeline to SPIR-V, host code for this machine's CPU (`cpu` as --mcpu).
FailureOr<std::unique_ptr<TargetBackend>> createVulkanBackend(llvm::StringRef target,
                                                              llvm::StringRef cpu,
                                                              std::string &error);

} // namespace mlir::kiln

#endif
