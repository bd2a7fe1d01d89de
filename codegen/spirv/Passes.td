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

#endif // KILN_CODEGEN_SPIRV_PASSES_TD
