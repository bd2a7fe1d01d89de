//===- CudaBackend.h - models whose kernels run on NVIDIA GPUs --*- C++ -*-===//
#ifndef KILN_CODEGEN_CUDA_CUDABACKEND_H
#define KILN_CODEGEN_CUDA_CUDABACKEND_H

#include "codegen/Pipeline.h"
#include "codegen/gpu/GpuTarget.h"

namespace mlir::kiln {

/// Whether `target` names a CUDA target: cuda, cuda-sm80, cuda-sm90a.
bool isCudaTarget(llvm::StringRef target);

/// The CUDA toolkit's folder: `option`, else $CUDA_HOME, /usr/local/cuda,
/// or the folder above the PATH's ptxas; empty if none has ptxas.
std::string findCudaToolkit(llvm::StringRef option);
/// "no CUDA toolkit (ptxas) in ...; pass --cuda-toolkit=DIR".
std::string cudaToolkitMissing(llvm::StringRef option);

/// The passes that put `gpu`'s staged matmuls on its tensor cores
/// (mma.sync; with the options, mma.sp and wgmma), after
/// kiln-gpu-promote-operands: CUDA's, and vulkan-lavapipe-sm80's, whose
/// kernels then emulate them.
void addTensorCorePasses(OpPassManager &pm, const GpuTarget &gpu, const PipelineOptions &options);

/// The pass that makes `gpu`'s large attention one kernel on the tensor
/// cores (mma.sync), before kiln-gpu-attention-rows: CUDA's and
/// vulkan-lavapipe-sm80's. With --precision=f16|bf16 every attention's,
/// else a half model's (its Q, K and V 16-bit already).
void addTensorCoreAttention(OpPassManager &pm, const GpuTarget &gpu,
                            const PipelineOptions &options);

/// The backend of `--target=cuda*`: kernels through the shared GPU pipeline
/// to NVVM, PTX and a fatbin of sm_80 and sm_90a cubins plus PTX; host code
/// for this machine's CPU, `cpu` as --mcpu.
FailureOr<std::unique_ptr<TargetBackend>> createCudaBackend(llvm::StringRef target,
                                                            llvm::StringRef cpu,
                                                            std::string &error);

} // namespace mlir::kiln

#endif
