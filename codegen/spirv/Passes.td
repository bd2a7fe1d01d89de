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

def KilnSpirvPackParams : Pass<"kiln-spirv-pack-params", "ModuleOp"> {
  let summary = "Pass kernels' scalars, and the shapes of dynamic buffers, in one params buffer";
  let description = [{
    A Vulkan kernel's arguments are storage buffers. After the kernels are
    outlined and their views folded into loads and stores, each kernel with
    scalar arguments (index, integers, f16, bf16, f32, f64) or
    with buffers of dynamic sizes, strides or offset gets one last argument
    `params`, a memref<N x i32>, and:
    - each scalar argument becomes a word of it (two for 64 bits, low
      first);
    - each buffer of dynamic shape or layout, or with an offset into its
      buffer, becomes a flat 1-D buffer (memref<? x T>, from its buffer's
      start to its last element) and 1 + 2 x rank words: its offset, sizes
      and strides; the kernel's loads and stores of it are linearized with
      them, and its memref.dim queries read its sizes.
    Each launch fills a `memref.alloca` marked `kiln.params` with those
    words (kiln-spirv-embed-kernels passes it by value). Static buffers are
    passed as they are. A scalar of another type, a non-constant
    memref.dim, or a dynamic buffer used by anything but loads, stores and
    dims is an error.
  }];
  let dependentDialects = ["arith::ArithDialect", "memref::MemRefDialect"];
}

def KilnSpirvEmbedKernels : Pass<"kiln-spirv-embed-kernels", "ModuleOp"> {
  let summary = "Serialize SPIR-V kernels into the module and launch them through the runtime";
  let description = [{
    Host side of a Vulkan model, after kiln-spirv-convert-gpu:
    - every gpu.launch_func becomes a call of the runtime's
      `kiln_gpu_launch(kernel, grid x, y, z, args)`, `args` an array of
      {address, bytes, flags} per memref argument on the stack (flags
      KILN_GPU_ARG_CONSTANT for a memref.get_global or a reshape of one:
      the runtime copies a constant to the device once;
      KILN_GPU_ARG_MAYBE_CONSTANT for a branch's result that is a constant
      in some branches only; KILN_GPU_ARG_PARAMS for
      kiln-spirv-pack-params' stack array: copied at each launch);
    - before host code that may read or write a buffer the kernels use
      after a launch (a load, a store, a copy, a linalg op, a call other
      than kiln_check_failed), a call of `kiln_gpu_wait()` lets the queued
      kernels finish; inside loops that launch, conservatively at each
      iteration. Host code on other buffers (the shapes of a dynamic
      model) runs while the kernels do;
    - each launched kernel's spirv.module is serialized and the binaries go
      to the module attribute `kiln.gpu_kernels`, one dictionary per kernel
      index (name, spirv words, workgroup_size, buffers, features: the
      KILN_GPU_FEATURE_* bits of the capabilities it uses that a device may
      lack: 64-, 16-, 8-bit integers, f16, f64, 16- and 8-bit storage), from
      which the
      object's kiln_gpu_program is emitted; gpu.module and spirv.module ops
      are erased.
    Kernel arguments must be memrefs: whole buffers, or views with static
    sizes, strides and offset (passed as their buffer's aligned pointer,
    the offset applied by the kernel).
  }];
  let dependentDialects = ["func::FuncDialect", "memref::MemRefDialect", "arith::ArithDialect",
                           "LLVM::LLVMDialect"];
}

#endif // KILN_CODEGEN_SPIRV_PASSES_TD
