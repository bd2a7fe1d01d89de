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
    attribution of its kernel, shared memory of the alloc's alignment, or
    where a kernel's pass 48 KiB (the most PTX declares statically), a view
    of its dynamic shared memory, `extern .shared .b8 __dynamic_shmem__0[]`,
    one after another, the module's `kiln.shared_bytes` saying how much its
    launches give (such a kernel alone in its module); each
    static private array moves to the kernel's start, the only place
    LLVM's SROA makes an alloca registers; each
    floating-point op may be contracted, so that a multiply and an add are
    one fma, as nvcc's default) to LLVM IR, linked with the toolkit's
    libdevice for math, and
    translated to PTX once per chip of `chips` (PTX ISA 8.0). ptxas
    assembles each PTX to a cubin (-O3) and fatbinary packs the cubins and
    the first chip's PTX (which the driver compiles for newer GPUs) into a
    fatbin. The modules compile in parallel, on the context's threads.
    The gpu.module stays, for the launches, with `kiln.cuda` (the fatbin),
    `kiln.ptx` (the first chip's PTX) and `kiln.registers` (the most
    registers per thread ptxas used for a chip), which
    kiln-gpu-embed-kernels takes. ptxas and fatbinary are the toolkit's
    (`toolkit`, else $CUDA_HOME or /usr/local/cuda, else the PATH); a
    missing tool, more shared memory than a chip gives a workgroup (163
    KiB on sm_80, 227 on sm_90), or ptxas refusing a kernel (too many
    registers for a chip), is an error naming the kernel's module.
  }];
  let options = [
    ListOption<"chips", "chips", "std::string",
               "NVIDIA architectures to compile for, the first also as PTX (default: sm_80, sm_90a)">,
    Option<"toolkit", "toolkit", "std::string", /*default=*/"\"\"",
           "The CUDA toolkit's folder (ptxas, fatbinary, nvvm/libdevice)">,
  ];
  let dependentDialects = ["NVVM::NVVMDialect", "LLVM::LLVMDialect", "gpu::GPUDialect"];
}

def KilnCudaAttentionMma : Pass<"kiln-cuda-attention-mma", "func::FuncOp"> {
  let summary = "Attention whose scores would be large as one kernel on the tensor cores (mma.sync)";
  let description = [{
    Before kiln-gpu-attention-rows, for models whose matmuls run in 16 bits
    (`--precision=f16|bf16`: `type` f16 or bf16) and for half models' own
    attention (`type` empty: Q, K and V widened from one 16-bit type, read
    before their widening, exactly). A kiln.attention whose scores would
    take more than `max-scores-bytes` (0: every one), of heads of at most
    128 values
    (the query's and the value's, each padded to 16 and 8), becomes one
    kernel of flash attention on the tensor cores: an scf.forall over
    workgroups (a batch entry and a block of 16W query rows, W = 4 warps, or
    2 or 1 where the queries are a multiple of 32 or 16 only, else the
    fewest that cover them) holding an scf.forall over the block's 32W
    threads. Sizes that are not whole blocks, steps of keys, k steps of 16
    or tiles of 8 values are padded: a padding query row or value column is
    read at the operand's last (arith.minui) and never written out (the
    result is a slice of the padded one), a padding key's score is -inf, a
    padding step of D reads 0. Warp w holds rows 16w .. 16w + 15 as A
    fragments of `nvvm.mma.sync` m16n8k16 (`type`: f16 or bf16, f32 sums;
    query, keys, values and the weights P rounded to it, nearest even). An
    scf.for over the keys, 32 a step (16 where the keys are a multiple of
    16 only, or 16 at most), carries each lane's running maxima and sums of
    its two rows and its 4 results per 8 value columns. Each step, the
    block's threads copy its keys and values, rounded, into two workgroup
    buffers (memref.alloc in #gpu.address_space<workgroup>, [K][D + 8] and
    [K][Dv + 8], the keys from K where K^T is its transpose, as
    kiln-gpu-attention-rows reads them); after a gpu.barrier, the B
    fragments come from them by `nvgpu.ldmatrix` (transposed for V), and a
    second gpu.barrier ends the step. S = Q K^T by mma, scaled and masked
    in f32; each row's maximum over the
    lane's scores, then over its quad (`gpu.shuffle xor` 1 and 2); alpha =
    exp(m - m'), p = exp(s - m') (with -inf maxima taken as 0); the C
    fragments of P as the A fragment of the next mma, O = O alpha + P V.
    After the loop the lanes of a quad add their sums, and each lane inserts
    its O / l into the block seen as [W, 2, 8, Dv / 8, 4, 2]. Fragment
    layouts are PTX ISA 8.0's. Other attention is left to
    kiln-gpu-attention-rows; with `report-placement`, a "placement:" remark
    says which one each took and, for a large one left, why.
  }];
  let dependentDialects = ["NVVM::NVVMDialect", "LLVM::LLVMDialect", "affine::AffineDialect",
                           "arith::ArithDialect", "gpu::GPUDialect", "math::MathDialect",
                           "memref::MemRefDialect", "nvgpu::NVGPUDialect", "scf::SCFDialect",
                           "tensor::TensorDialect", "vector::VectorDialect"];
  let options = [
    Option<"maxScoresBytes", "max-scores-bytes", "int64_t", "64 << 20",
           "Make one kernel of attention whose scores would take more bytes than this">,
    Option<"type", "type", "std::string", "\"\"",
           "The mma's operand type: f16 or bf16 (Q, K, V and P rounded to it), or "
           "empty: only attention whose Q, K and V are 16-bit values of one type "
           "(a half model's), in that type">,
    Option<"reportPlacement", "report-placement", "bool", "false",
           "Emit a 'placement:' remark per large attention: on the tensor cores, or why not">,
  ];
}

def KilnCudaMmaSync : Pass<"kiln-cuda-mma-sync", "func::FuncOp"> {
  let summary = "Compute matmuls staged in shared memory on the tensor cores (mma.sync)";
  let description = [{
    After kiln-gpu-promote-operands. A thread's contraction in the chunk
    loop of a gpu.launch whose block is a whole number of warps, its loops
    (k, batch..., i, j) with an output of (batch..., i, j) and inputs of
    (k, i) and (k, j) in either order (batch loops of extent 1 in the
    chunks and the accumulator: a convolution's im2col contraction, its
    filter holding the rows), reading whole chunks of f16 or bf16 (one
    type; with `tf32`, f32) from shared memory and summing into a private
    f32 accumulator (a widening matmul: `--precision=bf16`, 16-bit models;
    `--precision=tf32`), whose workgroup tile is a whole number of 16x8
    tiles that the warps can share evenly in blocks, and whose chunk is a
    whole number of the instruction's K steps (16; 8 for tf32), becomes
    warp code:
    - each lane zeroes a private buffer of 4 f32 per tile of its warp's
      block before the chunk loop;
    - per K steps of a chunk, each lane loads its fragments of A (per row
      of tiles) and B (per column of tiles) from the chunks, two 16-bit
      values per 32-bit register (or one f32 rounded to tf32 by
      `nvvm.convert.float.to.tf32` rna; 16-bit ones by `nvgpu.ldmatrix`
      x4 where the chunk's lines are 16-byte aligned: without transpose
      where a line holds steps of k (a row of A, a column of B), with it
      where it holds rows or columns; one per A fragment, one per two B
      fragments), and the warp issues one
      `nvvm.mma.sync` m16n8k16 (m16n8k8 for tf32; row, col, f32 sums) per
      tile of its block, in every thread (the op's guard left behind);
    - after the loop, the lanes store their sums to a workgroup buffer of
      the tile (f32), a barrier, and each thread (in the op's guard) adds
      its region of it to the last two dimensions of its accumulator,
      where the ops after the loop read it as before. Where that buffer
      does not fit in the target's shared memory beside the staged
      chunks, it takes their place: every workgroup buffer of the launch
      becomes a `memref.view` of one i8 buffer, the sums a view of its
      start, stored after a barrier (every warp done with the last chunk).
    Fragment layouts are PTX ISA 8.0's for mma.m16n8k16 and m16n8k8. A
    warp's block is as wide (in columns of tiles) as the tiling allows, so
    that one A fragment serves several mma.
  }];
  let options = [
    Option<"targetName", "target", "std::string", "\"cuda\"",
           "CUDA target whose shared memory the chunks and the sums must fit (as kiln-gpu-distribute's)">,
    Option<"tf32", "tf32", "bool", "false",
           "f32 matmuls too: operands rounded to tf32 (cvt.rna), mma.sync m16n8k8 (--precision=tf32)">,
    Option<"report", "report", "bool", "false",
           "Emit a `placement:` remark per matmul on the tensor cores: the type and a warp's block">,
  ];
  let dependentDialects = ["NVVM::NVVMDialect", "LLVM::LLVMDialect", "gpu::GPUDialect",
                           "affine::AffineDialect", "arith::ArithDialect", "linalg::LinalgDialect",
                           "memref::MemRefDialect", "nvgpu::NVGPUDialect", "scf::SCFDialect",
                           "vector::VectorDialect"];
}

def KilnCudaMmaSparse : Pass<"kiln-cuda-mma-sparse", "ModuleOp"> {
  let summary = "Compute staged 16-bit matmuls of 2:4-sparse constant weights on the tensor cores (mma.sp)";
  let description = [{
    After kiln-gpu-promote-operands, before kiln-cuda-wgmma and
    kiln-cuda-mma-sync (which take what this pass leaves). A thread's
    contraction as kiln-cuda-mma-sync takes it (see there), of f16 or bf16
    operands summed in f32, one of whose operands (the weight) is staged
    from a constant `memref.global` (read through reshapes before the
    launch, through same-rank subviews inside it, by cp.async or by loads
    that the staging stores) with at most two nonzeros in every group of
    four steps of k (-0 counts as zero), whose chunk and reduction are
    whole blocks of 32 steps, whose tile is a whole number of mma.sp
    tiles (16 along the weight's rows or columns, 8 along the other
    operand's) that the warps share evenly, and whose weight's rows or
    columns are whole tiles, becomes warp code:
    - the weight is laid out anew in a new constant global of its type
      (one per weight and view; the old one goes where nothing else reads
      it), read by the launch in its place: each 32 steps of a line along
      k become the 16 kept values, two per group in order (where a group
      has fewer nonzeros, zeros fill in), at steps 0-15; at steps 16 and
      17 the 16-bit metadata of groups 0-3 and 4-7, group j's two
      positions (2 bits each, the lower first) at bits 4j; zeros at
      18-31. The staging copies it as it copied the dense weight, but
      each cp.async whose first step is 18-31 of its block is skipped
      (those steps are never read);
    - per 32 steps of a chunk, each lane loads the compressed 16x16 block
      of the weight for each of its warp's tiles along it (as an
      m16n8k16's A fragment: `nvgpu.ldmatrix` x4 where the chunk allows),
      the metadata register (rows g and g + 8 of the half of the groups
      that lane % 2 names: sparsity selector 0), and the other operand's
      32x8 blocks (4 registers, steps 8r on); the warp issues one
      `nvvm.mma.sp.sync` m16n8k32 (f32 sums) per tile of its block;
    - after the loop, each lane's sums go to the workgroup's buffer of the
      tile, transposed where the weight holds the tile's columns (a
      MatMul's B: mma.sp's tile is 16 of the weight's by 8 of the other
      operand's), and each thread adds its region to its accumulator, as
      kiln-cuda-mma-sync does.
    With `report`, a `placement:` remark per matmul it takes, and per
    matmul with a constant weight it does not take, why.
  }];
  let options = [
    Option<"targetName", "target", "std::string", "\"cuda\"",
           "CUDA target whose shared memory the chunks and the sums must fit (as kiln-gpu-distribute's)">,
    Option<"report", "report", "bool", "false",
           "Emit a `placement:` remark per matmul with a constant weight: on mma.sp, or why not">,
  ];
  let dependentDialects = ["NVVM::NVVMDialect", "LLVM::LLVMDialect", "gpu::GPUDialect",
                           "affine::AffineDialect", "arith::ArithDialect", "linalg::LinalgDialect",
                           "memref::MemRefDialect", "nvgpu::NVGPUDialect", "scf::SCFDialect",
                           "vector::VectorDialect"];
}

def KilnCudaWgmma : Pass<"kiln-cuda-wgmma", "func::FuncOp"> {
  let summary = "Compute 16-bit matmuls staged in shared memory on sm_90a's tensor cores (wgmma)";
  let description = [{
    After kiln-gpu-promote-operands, before kiln-cuda-mma-sync (which
    takes what this pass leaves), for a target with wgmma (cuda-sm90a). A
    thread's contraction as kiln-cuda-mma-sync takes it (see there), of
    f16 or bf16 operands summed in f32, whose launch is a whole number of
    warpgroups (128 threads) that share the tile's rows in bands of a
    multiple of 64, whose tile has at most 256 columns (a multiple of 8)
    and whose chunk is a multiple of 16 steps, staged by 16-byte
    cp.async runs or single stores into views of whole chunks, becomes
    warpgroup code:
    - each operand's buffer is replaced by one of core matrices (8 lines
      of 16 bytes, 128 contiguous bytes; k along a line where the chunk
      held k along its lines, K-major, else the rows or columns,
      MN-major and read transposed), the staging's stores moved to their
      places; 16-byte gaps between groups of core matrices keep 8
      consecutive threads' runs in different banks;
    - per chunk, each thread fences the async proxy
      (`fence.proxy.async.shared::cta`) and the workgroup meets at a
      barrier; then `nvvm.wgmma.fence.aligned`, per 16 steps and band of
      64 rows one `nvvm.wgmma.mma_async` m64nNk16 (N the tile's columns,
      f32 sums in the thread's registers, both operands from shared
      memory by descriptors: no swizzle, leading byte offset between core
      matrices along k, stride byte offset along the rows or columns),
      and `nvvm.wgmma.commit.group.sync.aligned`;
    - where kiln-gpu-promote-operands staged the chunks in more than
      one buffer (cp.async, several in flight: the copies of a later
      chunk start in the loop into the buffer the previous chunk held;
      or two buffers: the next chunk, loaded into registers before the
      op, stored into the other after it, then a barrier), the chunk's
      wgmma stay in flight: `nvvm.wgmma.wait.group.sync.aligned 1` (the
      previous chunk's done), a barrier (in every warpgroup), and only
      then those copies (moved there from before the wgmma) or stores
      (the barrier after them goes: the next chunk's fence and barrier
      order them before its wgmma); after the loop, `wait.group 0`.
      With one buffer, `wait.group 0` ends each chunk, before the next
      chunk's stores;
    - after the chunk loop, the threads store their sums to a workgroup
      buffer of the tile (as kiln-cuda-mma-sync does: in the chunks'
      place where it does not fit beside them) and each adds its region
      to its accumulator.
    Accumulator layout: register d of a thread of warp w (of its
    warpgroup), lane group g and quad q holds row 16 w + g + 8 ((d % 4) / 2),
    column 8 (d / 4) + 2 q + d % 2 of its band of 64 rows. A kernel with
    wgmma compiles for sm_90a only (kiln-cuda-compile-kernels).
  }];
  let options = [
    Option<"targetName", "target", "std::string", "\"cuda-sm90a\"",
           "CUDA target (one with wgmma) whose shared memory the chunks and the sums must fit">,
    Option<"overlap", "overlap", "bool", "true",
           "Keep a chunk's wgmma in flight while the next is staged, where the chunks have more than one buffer (false: wait_group 0 each chunk)">,
    Option<"report", "report", "bool", "false",
           "Emit a `placement:` remark per matmul on the tensor cores: wgmma's shape and a warpgroup's band">,
  ];
  let dependentDialects = ["NVVM::NVVMDialect", "LLVM::LLVMDialect", "gpu::GPUDialect",
                           "affine::AffineDialect", "arith::ArithDialect", "linalg::LinalgDialect",
                           "memref::MemRefDialect", "nvgpu::NVGPUDialect", "scf::SCFDialect"];
}

#endif // KILN_CODEGEN_CUDA_PASSES_TD
