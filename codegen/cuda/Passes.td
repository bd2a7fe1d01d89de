// GPU kernels to CUDA fatbins, for NVIDIA GPUs. Flags are kiln-cuda-*.
#ifndef KILN_CODEGEN_CUDA_PASSES_TD
#define KILN_CODEGEN_CUDA_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnCudaCompileKernels : Pass<"kiln-cuda-compile-kernels", "ModuleOp"> {
  let summary = "Compile each gpu.module's kernels to a CUDA fatbin (NVVM, PTX, ptxas, fatbinary)";
  let description = [{
    After kiln-gpu-pack-params, each gpu.module (outlined kernels whose
    arguments are static buffers) is lowered, on a copy, through NVVM
    (convert-gpu-to-nvvm with bare pointers: one kernel parameter per
    buffer; each allocation of workgroup memory becomes a workgroup
    attribution of its kernel, shared memory of the alloc's alignment; each
    floating-point op may be contracted, so that a multiply and an add are
    one fma, as nvcc's default) to LLVM IR, linked with the toolkit's
    libdevice for math, and
    translated to PTX once per chip of `chips` (PTX ISA 8.0). ptxas
    assembles each PTX to a cubin (-O3) and fatbinary packs the cubins and
    the first chip's PTX (which the driver compiles for newer GPUs) into a
    fatbin. The gpu.module stays, for the launches, with `kiln.cuda` (the
    fatbin), `kiln.ptx` (the first chip's PTX) and `kiln.registers` (the
    most registers per thread ptxas used for a chip), which
    kiln-gpu-embed-kernels takes. ptxas and fatbinary are the toolkit's
    (`toolkit`, else $CUDA_HOME or /usr/local/cuda, else the PATH); a
    missing tool, or ptxas refusing a kernel (too many registers or too
    much shared memory for a chip), is an error naming the kernel.
  }];
  let options = [
    ListOption<"chips", "chips", "std::string",
               "NVIDIA architectures to compile for, the first also as PTX (default: sm_80, sm_90a)">,
    Option<"toolkit", "toolkit", "std::string", /*default=*/"\"\"",
           "The CUDA toolkit's folder (ptxas, fatbinary, nvvm/libdevice)">,
  ];
  let dependentDialects = ["NVVM::NVVMDialect", "LLVM::LLVMDialect", "gpu::GPUDialect"];
}

#endif // KILN_CODEGEN_CUDA_PASSES_TD
