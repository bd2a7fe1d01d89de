// Metal: the SPIR-V kernels translated to the Metal Shading Language.
// Flags are kiln-metal-*.
#ifndef KILN_CODEGEN_METAL_PASSES_TD
#define KILN_CODEGEN_METAL_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnMetalTranslateKernels : Pass<"kiln-metal-translate-kernels", "ModuleOp"> {
  let summary = "Translate the module's SPIR-V kernels (kiln.gpu_kernels) to Metal Shading Language";
  let description = [{
    After kiln-gpu-embed-kernels. Each kernel of the module attribute
    `kiln.gpu_kernels` is translated by SPIRV-Cross (its C API, linked into
    kiln) to MSL 2.1: its storage buffers become `device` pointers bound to
    `[[buffer(i)]]` in argument order, as the Vulkan kernel's bindings are.
    The dictionary's `spirv` words become `msl`, the source, and its `name`
    the entry point's name in it; the workgroup size stays, since MSL does
    not carry it (the runtime dispatches threadgroups of that size). A
    kernel SPIRV-Cross refuses is an error with its message.
  }];
}

#endif // KILN_CODEGEN_METAL_PASSES_TD
