// GPU kernels to SPIR-V, for Vulkan (and Metal, through SPIRV-Cross).
// Flags are kiln-spirv-*.
#ifndef KILN_CODEGEN_SPIRV_PASSES_TD
#define KILN_CODEGEN_SPIRV_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnSpirvConvertGpu : Pass<"kiln-spirv-convert-gpu", "ModuleOp"> {
  let summary = "Convert each gpu.module's kernels to a spirv.module for Vulkan";
  let description = [{
    Each gpu.module (outlined kernels whose bodies are loops over memrefs:
    scf, arith, math, memref, vector) gets a spirv.module beside it, named
    `__spv__<module>`, for the Vulkan 1.1 environment: SPIR-V 1.3, Shader
    capability, storage buffers. The gpu.module stays, for the launches
    that name it. Every kernel must carry `known_block_size` (from
    kiln-gpu-map-forall), which becomes its LocalSize; a kernel's memref
    arguments become storage buffers bound at (set 0, binding = argument
    index) and must have static shapes and strides. Anything the
    conversion cannot express is an error on the op at fault.
  }];
  let dependentDialects = ["spirv::SPIRVDialect"];
}

def KilnSpirvSerializeKernels : Pass<"kiln-spirv-serialize-kernels", "ModuleOp"> {
  let summary = "Serialize each kernel's spirv.module onto its gpu.module";
  let description = [{
    After kiln-spirv-convert-gpu (and spirv-lower-abi-attrs,
    spirv-update-vce): each `__spv__<module>` spirv.module is serialized to
    SPIR-V words, which go to its gpu.module as `kiln.spirv` (a tensor of
    i32), with `kiln.features`: the KILN_GPU_FEATURE_* bits of the
    capabilities it uses that a device may lack (64-, 16-, 8-bit integers,
    f16, f64, 16- and 8-bit storage). The spirv.module is erased;
    kiln-gpu-embed-kernels takes the kernels from there.
  }];
}

def KilnSpirvEmulateWarpMatrices
    : Pass<"kiln-spirv-emulate-warp-matrices", "func::FuncOp"> {
  let summary = "Emulate CUDA's warp instructions (cp.async, ldmatrix, mma.sync) with a workgroup's threads";
  let description = [{
    For vulkan-lavapipe-sm80, after the CUDA matrix passes
    (kiln-cuda-mma-sync): each gpu.launch's cp.async becomes a copy at
    once (its commit and wait groups go), and each ldmatrix, mma.sync
    (m16n8k16 of f16 or bf16, m16n8k8 of tf32, m16n8k32 of bytes) and
    cvt.rna.tf32.f32 becomes what PTX ISA 8.0 says it computes: the lanes
    of a warp (32 consecutive threads) store their registers or row
    addresses in a workgroup buffer, meet at a barrier, and each loads
    what its results need. So the kernels the tensor cores would run
    (their fragment layouts, ldmatrix addresses, staging) run on any
    Vulkan device, slowly, and can be checked against a reference. A
    launch's thread count must be a whole number of warps; an NVVM,
    NVGPU or LLVM op it does not know is an error.
  }];
  let dependentDialects = ["affine::AffineDialect", "arith::ArithDialect", "gpu::GPUDialect",
                           "math::MathDialect", "memref::MemRefDialect", "scf::SCFDialect"];
}

#endif // KILN_CODEGEN_SPIRV_PASSES_TD
