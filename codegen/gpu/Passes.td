// The GPU pipeline shared by Vulkan, Metal and CUDA: linalg on tensors
// tiled to workgroups and threads, then kernels. Flags are kiln-gpu-*.
#ifndef KILN_CODEGEN_GPU_PASSES_TD
#define KILN_CODEGEN_GPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnGpuAttentionRows : Pass<"kiln-gpu-attention-rows", "func::FuncOp"> {
  let summary = "Attention whose scores would be large as one kernel, a thread per query row";
  let description = [{
    Before kiln-convert-kiln-to-linalg, which lowers kiln.attention for GPU
    targets unfused: its scores (N x Lq x Lk floats) written out between
    two batch matmuls. A kiln.attention whose scores would take more than
    `max-scores-bytes` (0: every one) becomes one kernel instead: an
    scf.forall over workgroups (a batch entry and a block of 64 query rows)
    holding an scf.forall over the block's threads, a thread per row (the
    last block partial). Each thread reads its query row, then walks the
    keys (read from K itself where K^T is a kiln.transpose of it that
    swaps the last two dimensions; the transpose goes if nothing else
    reads it) with flash attention's online softmax, the running maximum
    m, sum l and weighted values acc carried by an scf.for as scalars. An
    operand that is a kiln.cast widening a 16-bit tensor (a half model's)
    is read before the cast, each value widened (arith.extf), and a
    result whose only reader rounds it to 16 bits is written rounded in
    that reader's place:
    s = scale * q.k_j + mask, m' = max(m, s), alpha = exp(m - m'),
    p = exp(s - m'), l' = l alpha + p, acc' = acc alpha + p v_j (with -inf
    maxima taken as 0); it writes acc / l. A step of the loop takes 4 keys
    (2 where the head sizes leave fewer registers, or where the keys are
    not a multiple of 4; 1 for heads of more than 192 values in all): 4
    independent dot products in flight, one rescaling by alpha per step.
    The batch dimensions are loops of the grid, so the kernel writes the
    op's result in place. The scores never exist, so the
    memory is the inputs and the output at any sequence length. A thread
    holds D + Dv values: heads of more than 256 in all stay unfused.
    With `report-placement`, a "placement:" remark per kiln.attention: one
    kernel, or unfused and why (small scores, heads too large).
  }];
  let dependentDialects = ["affine::AffineDialect", "arith::ArithDialect", "gpu::GPUDialect",
                           "math::MathDialect", "scf::SCFDialect", "tensor::TensorDialect"];
  let options = [
    Option<"maxScoresBytes", "max-scores-bytes", "int64_t", "64 << 20",
           "Make one kernel of attention whose scores would take more bytes than this">,
    Option<"reportPlacement", "report-placement", "bool", "false",
           "Emit a 'placement:' remark per attention: one kernel, or unfused and why">,
  ];
}

def KilnGpuNormalizeRows : Pass<"kiln-gpu-normalize-rows", "func::FuncOp"> {
  let summary = "Softmax, LogSoftmax and LayerNormalization over long rows as one kernel, a workgroup per row";
  let description = [{
    Before kiln-convert-kiln-to-linalg, which lowers a kiln.softmax,
    kiln.log_softmax or kiln.layer_norm to two row reductions and an
    elementwise op (on GPU targets, each a kernel; where the rows are few,
    kiln-gpu-split-reductions splits each reduction in two more). One
    along its last dimension, of f32 rows of at least `min-row` and at
    most 32768 values (longer rows are better spread over the GPU by split
    reductions), a layer norm's scale and bias of static shapes, becomes
    one kernel instead: an scf.forall over workgroups, one per row (the
    leading dimensions, static or not), each of T threads (a quarter of
    the row's length, a power of two from 32 to 128). For each of the op's
    two row statistics (the maximum, then the sum of exp(x - max); the
    mean, then the mean of (x - mean)^2), an scf.forall over the threads
    combines the terms of columns t, t + T, ... into a partial, written to
    a workgroup buffer (`bufferization.alloc_tensor` in workgroup memory);
    each later thread loop starts by combining the T partials. The last
    writes the outputs of columns t, t + T, ... (a strided slice of the
    row). kiln-gpu-map-forall puts a barrier between the thread loops.
    A kiln.attention that kiln-gpu-attention-rows left unfused, over at
    least `min-row` keys, becomes its scores q kt (a kiln.matmul), their
    softmax as such a kernel (reading scale * s + mask) and the
    probabilities times v (a kiln.matmul). With `report-placement`, a
    "placement:" remark per op: one kernel, or why not.
  }];
  let dependentDialects = ["affine::AffineDialect", "arith::ArithDialect",
                           "bufferization::BufferizationDialect", "gpu::GPUDialect",
                           "math::MathDialect", "scf::SCFDialect", "tensor::TensorDialect"];
  let options = [
    Option<"minRowLength", "min-row", "int64_t", "128",
           "Make one kernel of rows of at least this many values">,
    Option<"reportPlacement", "report-placement", "bool", "false",
           "Emit a 'placement:' remark per op: one kernel, or why not">,
  ];
}

def KilnGpuConvAsMatmul : Pass<"kiln-gpu-conv-as-matmul", "func::FuncOp"> {
  let summary = "Rewrite NCHW convolutions as matmuls of their filter and receptive fields, for the GPU";
  let description = [{
    Before kiln-gpu-distribute. A convolution tiled like any other op
    gives each thread one output, reading its receptive field and the
    filter from global memory with no reuse between threads. Each
    `linalg.conv_2d_nchw_fchw`, or linalg.generic of its loops and maps (a
    widening convolution: bf16 operands summed in f32, its strides and
    dilations read off its input map), of static shapes whose filter has
    more than one input channel or tap, becomes:
    - its receptive fields, [N, C, KH, KW, OH, OW]: a copy of the input, a
      linalg.generic whose input map carries the strides and dilations,
      into a tensor.empty (a buffer of its own by
      kiln-gpu-unshare-empty-tensors, after CSE), marked `kiln.gpu.computed_on_read`: no kernel writes it out; the
      matmul's kernel computes each element where it reads it (as it
      stages a chunk in shared memory: an implicit GEMM), from the input
      (kiln-gpu-compute-on-read). A pointwise convolution (a 1x1 filter,
      stride 1, no padding) reads its input as its fields, no copy;
    - a contraction of the fields, collapsed to [N, C*KH*KW, OH*OW], with
      the filter, collapsed to [F, C*KH*KW], into the output collapsed to
      [N, F, OH*OW], with the convolution's own body (register tiles and
      shared memory: kiln-gpu-private-accumulators,
      kiln-gpu-promote-operands), expanded back to [N, F, OH, OW]. An
      output that is a bias broadcast into a tensor.empty (parallel
      loops whose inputs do not read OH or OW) is rebuilt on the
      collapsed shape, so that the contraction's init is that op, which
      kiln-gpu-distribute fuses into its tiles.
    Grouped and depthwise convolutions, dynamic shapes and 1x1
    single-channel filters stay direct.
  }];
  let dependentDialects = ["linalg::LinalgDialect", "tensor::TensorDialect",
                           "bufferization::BufferizationDialect"];
}

def KilnGpuReadThroughPadding : Pass<"kiln-gpu-read-through-padding", "func::FuncOp"> {
  let summary = "Let the GPU's ops read a padded tensor's source, not a padded copy of it";
  let description = [{
    After kiln-gpu-conv-as-matmul, before kiln-gpu-distribute. A padded
    tensor (a tensor.pad of a constant, a whole tensor inserted with
    unit strides into a linalg.fill, or a slice of either: a chunk of a
    batch) costs the GPU a kernel for the fill,
    one for the copy of the interior, and where several consumers share
    one fill, copies of it that bufferization adds. Each linalg op on
    tensors that reads such a tensor as an input (the receptive fields
    of a padded convolution, a padded pooling window), named ops
    generalized first, reads the source instead: its body computes the
    input map's indices from its loops (linalg.index), less the low
    padding, and takes `tensor.extract` of the source there, or the pad
    value where an index falls outside the source (the read itself
    clamped into it). Dimensions without padding read as they are.
    Contractions keep their operands: those go through shared memory
    and the tensor cores whole (kiln-gpu-promote-operands). The fill and
    the insert are left to canonicalization, which erases them when
    nothing else reads them.
  }];
  let dependentDialects = ["linalg::LinalgDialect", "tensor::TensorDialect",
                           "arith::ArithDialect"];
}

def KilnGpuTransposeOnRead : Pass<"kiln-gpu-transpose-on-read", "func::FuncOp"> {
  let summary = "Let matmuls read a transposed tensor in place, not a transposed copy";
  let description = [{
    Before kiln-gpu-distribute, on tensors. A linalg.transpose of floats
    (f32, or 16-bit ones: their matmul copies the other operand by
    cp.async and this one through registers), of static
    shape, that nothing reads but contractions
    (linalg.matmul, batch_matmul, ...), as an operand, directly or through
    tensor reshapes, becomes the equivalent linalg.generic marked `kiln.gpu.computed_on_read`:
    no kernel writes the transposed copy; kiln-gpu-compute-on-read turns
    each load the matmul's kernel makes of it (as it stages a chunk) into a
    load of the transpose's input at the permuted indices. A transformer's
    query, key and value heads and the way back (bert2: 8 of 30 kernels at
    batch 1) cost no kernel and no pass over memory. Where the transpose
    moves the innermost dimension (the keys' [B, S, H, D] to [B, H, D, S]),
    kiln-gpu-promote-operands copies the matmul's chunks along the
    source's rows, so adjacent threads still load adjacent values. A
    transpose anything else reads stays a kernel of its own. With
    `report`, a `placement:` remark per transpose read in place.
  }];
  let options = [
    Option<"report", "report", "bool", "false", "Emit a remark per transpose read in place">,
  ];
  let dependentDialects = ["linalg::LinalgDialect"];
}

def KilnGpuRoundOnRead : Pass<"kiln-gpu-round-on-read", "func::FuncOp"> {
  let summary = "Round an activation to 16 bits where the receptive fields read it, not in a kernel";
  let description = [{
    After kiln-gpu-read-through-padding and a canonicalization (which
    drops the padded copies nothing reads any more), before
    kiln-gpu-distribute. With --precision=bf16 or f16, an activation is
    rounded to 16 bits before the convolutions that read it: a linalg.generic of one
    arith.truncf, identity maps, parallel loops, which the GPU runs as a
    kernel of its own, writing a rounded copy that the convolution's
    receptive fields (kiln-gpu-conv-as-matmul, computed where they are
    read) then read. Where every reader of the rounding is such fields
    (as their input, or by tensor.extract in their body after
    kiln-gpu-read-through-padding), it is marked
    `kiln.gpu.computed_on_read` too: kiln-gpu-compute-on-read computes
    the fields where the matmul loads them, then the rounding in those
    loads, and neither copy is written. A rounding that anything else
    reads (a pointwise convolution, which reads its input as its fields,
    with cp.async where it can) stays a kernel, as does one whose fields
    a contraction of 64 or more results per thread reads (kiln-gpu-
    distribute's tiles, by the same options): its threads' sums and the
    next chunk's fields already fill the registers (255 on CUDA), and the
    fields in f32 until they are rounded spilled (resnet18's first stage
    at batch 16, sm_90a).
  }];
  let options = [
    Option<"targetName", "target", "std::string", "\"vulkan\"",
           "GPU target whose tiles apply (as kiln-gpu-distribute's)">,
    Option<"enoughWorkgroups", "enough-workgroups", "int64_t", "256",
           "As kiln-gpu-distribute's">,
    Option<"wideTensorTiles", "wide-tensor-tiles", "bool", "false",
           "As kiln-gpu-distribute's">,
  ];
  let dependentDialects = ["linalg::LinalgDialect", "tensor::TensorDialect"];
}

def KilnGpuSplitReductions : Pass<"kiln-gpu-split-reductions", "func::FuncOp"> {
  let summary = "Split long reductions over few results into partial sums and a short reduction";
  let description = [{
    Before kiln-gpu-distribute, which gives a reduction one thread per
    result, summing its row alone: a layer norm's 128 means of 768 values
    are one workgroup, its threads reading addresses a row apart. A
    linalg op on tensors of static shapes with one reduction loop, which
    indexes only its inputs' last dimension (contiguous), not a
    contraction (those have the matmul tiles; see split-contractions
    below), with fewer than 65536 results, is split (as
    linalg::splitReduction splits, the new loop parallel and inner):
    `ratio` partial sums per result, partial p adding up
    values p, p + ratio, p + 2 ratio, ... (adjacent threads read adjacent
    values), into a tensor with the partials innermost, filled with the
    combiner's neutral element; then a reduction of the partials into the
    op's init. The ratio is the smallest power of two that makes 65536
    partials in all, at most 64, dividing the reduced loop with at least
    8 values per partial. A body whose combiner linalg does not recognize
    stays whole. Sums are added in another order: results may differ in
    the last bits.

    With `split-contractions` (kiln-compile's --split-k), a contraction
    too (a matmul, a convolution as kiln-gpu-conv-as-matmul made it one)
    that would have fewer than 256 workgroups on `target` at 4x4 results
    per thread (a 7x7 convolution of 512 filters and 4608 products each:
    16), of static shapes with one reduction loop, which each input
    indexes by itself or not at all, and 4-byte sums (f32, i32): its
    reduction goes in S consecutive slices, S the smallest power of two
    (at most 16) that gives it 256 workgroups, or the largest whose slices
    stay at least 256 values and a whole number of 32 (the chunks shared
    memory stages).
    Each input's dimension of the reduced loop becomes [S, K / S]
    (tensor.expand_shape); the slices are a new outermost parallel loop,
    a batch of the matmul, summing into partials [S, init...] filled with
    the combiner's neutral element; a reduction over S, innermost, adds
    them into the op's init (a bias, where one was fused), where the
    matmul's epilogue then applies. With `report`, a "placement: " remark
    per split contraction.
  }];
  let options = [
    Option<"targetName", "target", "std::string", "\"vulkan\"",
           "GPU target whose workgroups a contraction is counted in (as kiln-gpu-distribute's)">,
    Option<"splitContractions", "split-contractions", "bool", "false",
           "Also split contractions with too few workgroups (split-K)">,
    Option<"report", "report", "bool", "false",
           "Emit a \"placement: \" remark per split contraction">,
  ];
  let dependentDialects = ["linalg::LinalgDialect", "tensor::TensorDialect",
                           "arith::ArithDialect"];
}

def KilnGpuDistribute : Pass<"kiln-gpu-distribute", "func::FuncOp"> {
  let summary = "Tile linalg ops on tensors to workgroups and threads (scf.forall), fusing producers";
  let description = [{
    Each linalg op that no other linalg op consumes whole (a root, walked
    from the end of the function) is tiled to workgroups: an scf.forall
    mapped to `#gpu.block<linear_dim_*>`, whose tile of the root computes
    the slices of its single-use producers in place (their tiles fused into
    the loop). The root's tile is then tiled again to threads, an scf.forall
    mapped to `#gpu.thread<x/y/z>`, fusing the producers again.

    An elementwise op that only reads a reduction's result (a matmul's
    bias, activation or residual add; through a tensor.expand_shape, such
    as a projection split into heads, it is first collapsed onto the
    reduction's shape) is not a root: each of the reduction's threads
    applies it to the tile of results it holds, in place, reading the op's
    other operands (same element, or broadcast along some loops) at that
    tile. It needs a body of scalar arith and math ops and operands that
    exist before the reduction (side effect free ops that compute them
    after it, and do not depend on it, move before it). One with a result
    of another element type (a rounding to 16 bits) is tiled as the root
    instead, by the reduction's tiles, the reduction fused into them (its
    threads' sums a tensor of their own, private memory after
    bufferization; in a partial tile, a slice of a
    `bufferization.alloc_tensor` of the thread tile's constant bounds,
    since a kernel cannot allocate a buffer of dynamic size), where the
    result's extents are static and nonzero and the threads share a
    workgroup's tile evenly.

    Tiles, for the target's `workgroupThreads` T (four subgroups):
    - a contraction (matmul, batch matmul): 4x4 results per thread, the
      threads as 8 columns by T/8 rows of them; the reduction stays whole in
      each thread (k is tiled later, with shared memory). A static one of
      f32 operands that would have fewer than `enough-workgroups`
      workgroups (a 7x7 convolution of 512 filters: 16) gets 2x2, then 1x1
      results per thread, so that more threads share it; one that would
      have at least that many of 8x8 results per thread gets 8x8 (tiles of
      8T x 64 results: per step of k a thread loads 16 values for 64
      multiply-adds, against 8 for 16 in 4x4). 16-bit operands (CUDA's
      tensor cores) take 8x8 by the same rule and never fewer, byte
      operands keep 4x4: the tensor cores' warp blocks; with `wide-tensor-tiles`,
      a 16-bit one of 8x8 on CUDA gets 8x16 (8T x 128) where it still
      has `enough-workgroups`;
    - any other op: one result per thread. The innermost parallel loop
      (of more than one iteration) goes to thread x, in even tiles of at
      most T; where it is shorter than T, it is whole in the workgroup and
      the next loop out shares the T / n threads left, on thread y, then
      z (a 14x14 map: 7 rows of 14 threads). Every other parallel loop is
      one per workgroup; reductions stay whole in a thread.
    First, data movement becomes linalg ops, so that it runs in kernels
    rather than as host copies: a tensor.pad a fill and an insert_slice,
    and each tensor.insert_slice outside a forall a linalg.copy onto the
    slice of its destination it replaces (bufferized in place), except
    an insert of an op's result computed in place on the same slice of
    the same tensor (a convolution's chunk): bufferized, that is one view
    of one buffer, and the copy folds away. And a
    linalg.fill with several users is cloned for each, so that each
    consumer fuses its own. Ops marked `kiln.gpu.computed_on_read` are
    left to kiln-gpu-compute-on-read. Ops that are already inside a
    forall, ops that are not linalg
    (tensor.pad, scf loops from data-dependent ops), ops without a parallel
    loop (a reduction to a scalar, a 0-d op) and ops the target's kernels
    cannot compute (on Vulkan: exp, log, ... of f64, and bf16 values) are
    left alone: they run on the host (see kiln-gpu-report-placement).
  }];
  let options = [
    Option<"targetName", "target", "std::string", "\"vulkan\"",
           "GPU target whose limits apply (vulkan, vulkan-lavapipe, vulkan-nvidia, "
           "cuda-sm80, cuda-sm90a, metal)">,
    Option<"reportFusion", "report-fusion", "bool", "false",
           "Emit a `fusion:` remark at each reduction followed by an elementwise op: "
           "whether its threads apply it, or why not">,
    Option<"enoughWorkgroups", "enough-workgroups", "int64_t", "256",
           "A static contraction of f32 operands with fewer workgroups than this gets "
           "fewer results per thread (2x2, then 1x1), for more workgroups, and one with "
           "as many of 8x8 results gets 8x8; 0: always 4x4">,
    Option<"wideTensorTiles", "wide-tensor-tiles", "bool", "false",
           "CUDA: a 16-bit contraction of 8x8 results per thread gets 8x16 (128x128 "
           "tiles), its sums in dynamic shared memory (not yet timed)">,
  ];
  let dependentDialects = ["scf::SCFDialect", "tensor::TensorDialect", "affine::AffineDialect",
                           "gpu::GPUDialect", "bufferization::BufferizationDialect"];
}

def KilnGpuUnshareEmptyTensors : Pass<"kiln-gpu-unshare-empty-tensors", "func::FuncOp"> {
  let summary = "Give each use of a tensor.empty one of its own, before bufferization";
  let description = [{
    After kiln-gpu-distribute and CSE, before bufferization. Reshapes
    and slices of a tensor.empty become tensor.empty ops of their own
    (upstream's fold-tensor-empty patterns), then a tensor.empty with
    several uses (CSE merges equal ones, and equal reshapes of them) is
    cloned before each of its users and goes, so that one-shot bufferization gives
    each op that writes one a new buffer instead of writing in place over
    a value that is dead at the tensor level but still read by a kernel
    that computes a buffer on read (kiln-gpu-compute-on-read: a matmul
    reads its convolution's input, not the fields the tensors show). The
    memory plan lets buffers of disjoint lifetimes share memory.
    A clone takes the original's size operands, which dominate every use
    of the original.
  }];
}

def KilnGpuDistributeBuffers : Pass<"kiln-gpu-distribute-buffers", "func::FuncOp"> {
  let summary = "Tile the linalg ops and copies that bufferization made to workgroups and threads";
  let description = [{
    After bufferization, before kiln-gpu-map-forall. Bufferization makes
    ops of its own: a memref.copy where a buffer cannot be written in place,
    linalg.map for some tensor ops. Each memref.copy outside a forall
    becomes a linalg.copy; each linalg op on buffers outside a forall is
    tiled to workgroups and threads by kiln-gpu-distribute's rules (ops
    that rule leaves to the host stay, and ops marked
    `kiln.gpu.computed_on_read`: kiln-gpu-compute-on-read). On the host, each would cost a wait
    for the device and a pass over device memory by the CPU.
  }];
  let options = [
    Option<"targetName", "target", "std::string", "\"vulkan\"",
           "GPU target whose limits apply (as kiln-gpu-distribute's)">,
    Option<"enoughWorkgroups", "enough-workgroups", "int64_t", "256",
           "As kiln-gpu-distribute's: the workgroups below which a static f32 contraction "
           "gets fewer results per thread; 0: always 4x4">,
    Option<"wideTensorTiles", "wide-tensor-tiles", "bool", "false",
           "As kiln-gpu-distribute's: 8x16 results per thread for 16-bit contractions on CUDA">,
  ];
  let dependentDialects = ["scf::SCFDialect", "linalg::LinalgDialect", "affine::AffineDialect",
                           "gpu::GPUDialect", "memref::MemRefDialect"];
}

def KilnGpuMapForall : Pass<"kiln-gpu-map-forall", "func::FuncOp"> {
  let summary = "Map bufferized workgroup and thread scf.forall loops onto gpu.launch";
  let description = [{
    Each scf.forall mapped to `#gpu.block<linear_dim_*>` (from
    kiln-gpu-distribute, after bufferization) becomes one gpu.launch:
    linear dimension 0 is the grid's x, 1 its y, the others share z
    (delinearized); trip counts may be dynamic. A static grid dimension of
    more than 65535 blocks (CUDA's limit on y and z, the least Vulkan
    allows) is launched with 65535, each block looping over the ids it
    stands for (scf.for, step the grid size). The scf.forall loops mapped
    to `#gpu.thread<x/y/z>` inside it use the thread ids; the block's size
    per dimension is the largest static bound of their trip counts (the last
    tile of a dynamic size is partial), and each such loop's body is guarded
    by `thread id < trip count`. Loop steps must be static. A workgroup
    loop holds one thread loop, or several in its body that run in turn
    (kiln-gpu-normalize-rows' steps), a gpu.barrier between them (and
    after the last where the block loops over ids; a dynamic grid
    dimension is then clamped too); they may share workgroup buffers
    (gpu.barrier orders workgroup memory), not pass values through global
    memory. Outside them only views, index arithmetic (every thread runs
    them) and allocations of workgroup memory; the copies that bufferized
    parallel_insert_slice ops leave (a view copied onto itself or onto an
    identical view) are erased first. A workgroup loop with other work
    outside its thread loop (an allocation a fused producer needs per
    workgroup) stays on the host: its loops lose their mapping and it gets
    `kiln.placement`, the reason. Anything else is an error.
  }];
  let dependentDialects = ["gpu::GPUDialect", "scf::SCFDialect", "affine::AffineDialect",
                           "arith::ArithDialect", "memref::MemRefDialect"];
}

def KilnGpuKernelBuffers : Pass<"kiln-gpu-kernel-buffers", "func::FuncOp"> {
  let summary = "Per-thread buffers in gpu.launch bodies become private allocas; copies become linalg.copy";
  let description = [{
    After kiln-gpu-map-forall. Inside a gpu.launch, every thread runs the
    body: a `memref.alloc` there (a temporary that bufferization made for a
    thread's tile, such as a fused producer's result) is each thread's own.
    Each one of static shape becomes a `memref.alloca` in
    `#gpu.address_space<private>` (registers or function-local memory), and
    the views of it follow it into that space. A dynamic size is an error:
    a kernel cannot allocate. An allocation in workgroup memory (a buffer
    the threads share, from kiln-gpu-normalize-rows) stays as it is. Every
    `memref.copy` in a launch becomes a
    `linalg.copy`, which kernels lower to loops like any other linalg op.
  }];
  let dependentDialects = ["gpu::GPUDialect", "linalg::LinalgDialect", "memref::MemRefDialect"];
}

def KilnGpuPrivateAccumulators : Pass<"kiln-gpu-private-accumulators", "func::FuncOp"> {
  let summary = "A thread's reduction accumulates in private memory, its reduced loops outermost";
  let description = [{
    After kiln-gpu-kernel-buffers. A linalg op with reduced loops inside a
    gpu.launch (a thread's tile of a matmul, convolution or row reduction)
    reads and writes its result at every step of the reduction: in global
    memory, as it was bufferized. When the result tile has at most 64
    elements (bounded by constants where its sizes are not), the op
    accumulates into a private buffer of that bound instead (registers,
    once the kernel's loops are unrolled), filled by the linalg.fill that
    initialized the tile if one comes just before it, else copied from the
    tile, and copied back after it. The op is generalized and its reduced
    loops moved outermost: each step of the reduction loads its operands'
    slices once for the whole tile (a 4x4 matmul tile: 8 loads for 16
    FMAs, not 32). Ops whose inputs read their own result are left as
    they are.
  }];
  let dependentDialects = ["gpu::GPUDialect", "linalg::LinalgDialect", "memref::MemRefDialect"];
}

def KilnGpuPromoteOperands : Pass<"kiln-gpu-promote-operands", "func::FuncOp"> {
  let summary = "Stage a thread's matmul operands in shared memory, a chunk of the reduction at a time";
  let description = [{
    After kiln-gpu-private-accumulators. A thread's tile of a contraction
    (a matmul, a batch matmul, a Gemm) reads its rows of A and columns of B
    from global memory, and each of them is read by every thread of the
    workgroup's row or column of tiles. For such an op in a gpu.launch of
    static block size, directly in its body or in its one guard
    (`thread id < trip count`), whose first loop is a reduction, whose
    result is a private accumulator, and whose two inputs are unit-stride
    views of workgroup tiles that no thread id moves, whole along that
    loop, of 32-bit elements (or 16-bit floats and bytes on CUDA, for its
    tensor cores) with constant bounds, this pass:
    - allocates a buffer per input in `#gpu.address_space<workgroup>`,
      16-byte aligned: the tile's bounds with C steps of the reduction,
      for 32-bit elements the reduced dimension outermost (a thread's
      elements for one step are contiguous: vector loads where the
      target has them, and one address per bank; the op's indexing map
      follows), for the tensor cores' 16-bit and 8-bit ones in the
      tile's order (a line is a run of the tile in memory; ldmatrix
      reads either order), its rows padded to an odd number of 16-byte
      lines (so that any 8 consecutive rows start in different banks:
      the copy's stores down a column, CUDA's ldmatrix of 8 lines);
    - walks the reduction C steps at a time (`scf.for`, every thread):
      the threads copy the chunk of both tiles into the buffers together,
      element i by the thread of linear id i mod their count (consecutive
      threads read consecutive elements; for a transpose read in place,
      the tile's dimension that steps along the transpose's source rows
      counts as its innermost: kiln-gpu-compute-on-read then loads
      consecutive addresses), skipping what lies past an edge tile or the
      last chunk; a `gpu.barrier`; the op on the chunk, its
      inputs now views of the buffers (in its guard); a `gpu.barrier`.
    Where a thread copies at most 32 elements of a chunk (C halved until
    it does, down to 8 steps, 16 for 16-bit elements, 32 for bytes: the
    tensor cores' steps), the first chunk is copied before the loop, then
    each iteration loads the thread's elements of the next one into a
    private array (a loop of constant trip count; where the threads copy
    whole rows of the chunk at a time, slot j lies j * threads / R rows
    past slot 0, R the elements of a row, so only the row depends on the
    slot) and runs the op on the current chunk. Where the buffers fit
    twice in half the shared memory, each holds two chunks along a leading
    dimension of 2: the op reads copy (k / C) mod 2, the array goes into
    the other copy, and the threads wait at one `gpu.barrier`; otherwise a
    `gpu.barrier`, the array into the one buffer, a `gpu.barrier`.
    On a target with asynchronous copies (CUDA: cp.async), where every
    chunk of a tile is whole and moves in 16-byte runs (static tile
    sizes, a reduction of a whole number of chunks, the innermost
    dimension contiguous and innermost in the buffer, the other strides
    whole runs), and the other tile is too or is computed where it is
    read (a convolution's receptive fields, a transpose:
    kiln-gpu-compute-on-read, each load computes its element) with at
    most 32 elements of a chunk a thread, each buffer holds S chunks instead, S the most of up to 4
    that fit in the shared memory (a CUDA multiprocessor holds several
    workgroups' 48 KiB; for 16-bit or byte operands whose tile's 4-byte
    sums pass that, as much as the sums take: kiln-cuda-mma-sync moves
    them into the chunks' place after the loop, in dynamic shared memory,
    so more chunks cost no workgroups): the copies of chunks 0 .. S - 2
    start in a loop before the main one (`nvgpu.device_async_copy`, 16 bytes a thread,
    one `nvvm.cp.async.commit.group` per chunk); at chunk i the threads
    wait for all but S - 2 of their groups (`nvvm.cp.async.wait.group`),
    meet at a `gpu.barrier`, start chunk i + S - 1's copies into the copy
    chunk i - 1 held (a group, empty past the end) and run the op on copy
    i mod S. A workgroup whose tiles do not start on 16 bytes (checked
    once, at run time) copies element by element in the same places. A
    tile computed on read has no bytes to copy: before the main loop its
    first chunks are copied element by element; at chunk i each thread loads
    its elements of chunk i + S - 1 into a private array where the other
    tile's copies start, and stores them into their copy after running
    the op (the barrier of chunk i + 1 orders them before any read).
    The ops before the op in its guard leave it (barriers need every
    thread): pure ones and allocas before it, the others (the
    accumulator's fill) in a guard of their own. C is the largest of 8,
    16, 32 whose buffers take at most half the target's shared memory, and
    no larger than a reduction of known length needs; an op whose buffers
    do not fit is left as it is. Each thread accumulates in the same order
    as before.
  }];
  let options = [
    Option<"targetName", "target", "std::string", "\"vulkan\"",
           "GPU target whose shared memory the buffers must fit (as kiln-gpu-distribute's)">,
    Option<"report", "report", "bool", "false",
           "Emit a `placement:` remark per staged op: the buffers' bytes and the chunk">,
    Option<"synchronous", "synchronous", "bool", "false",
           "On any target, stage on the schedule of asynchronous copies, each chunk copied "
           "at once as where a tile does not start on 16 bytes (no cp.async): on CUDA to "
           "time against cp.async, elsewhere to check the schedule">,
  ];
  let dependentDialects = ["gpu::GPUDialect", "scf::SCFDialect", "affine::AffineDialect",
                           "arith::ArithDialect", "memref::MemRefDialect",
                           "nvgpu::NVGPUDialect", "NVVM::NVVMDialect"];
}

def KilnGpuComputeOnRead : Pass<"kiln-gpu-compute-on-read", "func::FuncOp"> {
  let summary = "Compute a marked op's elements where the kernels load them, instead of writing its buffer";
  let description = [{
    After kiln-gpu-promote-operands (and kiln-cuda-mma-sync), before
    memory planning. A linalg.generic marked `kiln.gpu.computed_on_read`
    (kiln-gpu-conv-as-matmul's receptive fields, kiln-gpu-transpose-on-read's
    transposes: kiln-gpu-distribute and kiln-gpu-distribute-buffers left it
    on the host, untiled) is never run. Each load of its buffer, through any views (subviews, reshapes:
    upstream's fold-memref-alias-ops patterns resolve them), becomes its
    body at the load's indices: its inputs' elements at their maps'
    indices, its linalg.index ops the indices themselves. A linalg op that
    reads the buffer (a matmul whose operands were not staged in shared
    memory) becomes loops first. The op, its views and its buffer go.
    Marked ops that read each other (receptive fields of an input that
    kiln-gpu-round-on-read rounds on read) are done readers first: the
    fields' loads become loads of the rounding's buffer, then its body.
    It must write one memref.alloc through an identity map, with parallel
    loops and a body free of side effects but loads, and nothing between
    it and its last reader may write a buffer it reads; otherwise, or
    where a reader is neither a load nor a linalg op, an error.
  }];
  let dependentDialects = ["affine::AffineDialect", "memref::MemRefDialect", "scf::SCFDialect"];
}

def KilnGpuReportPlacement : Pass<"kiln-gpu-report-placement", "func::FuncOp"> {
  let summary = "Say which ops run in GPU kernels and which stay on the host, and why";
  let description = [{
    After kiln-gpu-map-forall; changes nothing. Emits a `placement:` remark
    per gpu.launch, at its root op (the last linalg op in it, whose ONNX
    node the driver names): the grid, the workgroup and the linalg ops the
    kernel computes. And one per op of the host code that reads or writes
    buffers the kernels use (host bookkeeping, such as a dynamic model's
    shapes, says nothing), with the reason it is not a kernel: an op without a parallel
    loop (a 0-d op, a reduction to a scalar), a copy between buffers (a
    slice, a concatenation, a pad), a loop or branch (recurrent or
    data-dependent ops, attention's blocks), or any other op. Host code
    between kernels makes the run wait for the device there. An op marked
    `kiln.gpu.computed_on_read` (a convolution's receptive fields) is
    said to be computed where the kernels read it.
  }];
  let options = [
    Option<"targetName", "target", "std::string", "\"vulkan\"",
           "GPU target whose kernels the reasons are about (as kiln-gpu-distribute's)">,
  ];
  let dependentDialects = ["gpu::GPUDialect"];
}

def KilnGpuNameKernels : Pass<"kiln-gpu-name-kernels", "ModuleOp"> {
  let summary = "Name each outlined kernel after the ONNX node it computes";
  let description = [{
    After gpu-kernel-outlining, which names every kernel `main_kernel` in a
    gpu.module of its own: each launch's module and kernel become
    `k<i>_<node>`, i the launch's index in the module (in order) and node
    the name of the ONNX node of the last linalg op in the kernel (the one
    whose result it writes, as --report=placement names it), its
    characters outside [A-Za-z0-9_] as `_`, at most 48 of them; `k<i>`
    where no node is known. Profilers list kernels by these names, and
    `--dump-kernels` files carry them.
  }];
  let dependentDialects = ["gpu::GPUDialect"];
}

def KilnGpuUnrollPrivateLoops : Pass<"kiln-gpu-unroll-private-loops"> {
  let summary = "Unroll the loops that index a thread's private memory";
  let description = [{
    In kernels, after linalg ops become loops: each scf.for whose induction
    variable indexes private memory (a thread's accumulator), without
    results, of constant start and step, of at most 64 iterations and
    2048 operations unrolled, is unrolled, innermost first, so that every index into the private array
    is a constant and the backend keeps it in registers. A loop whose
    upper bound is dynamic but never passes a constant (a thread's tile of
    a partial workgroup tile, `affine.min(4, ...)` columns) first runs to
    that constant, its body in `scf.if iv < upper bound`. Other loops are
    left as they are.
  }];
  let dependentDialects = ["arith::ArithDialect", "scf::SCFDialect"];
}

def KilnGpuPackParams : Pass<"kiln-gpu-pack-params", "ModuleOp"> {
  let summary = "Pass kernels' scalars, and the shapes of dynamic buffers, in one params buffer";
  let description = [{
    Kernels take buffers only (Vulkan's are storage buffers; CUDA's bare
    pointers), so that a launch passes every kiln_gpu_arg alike. After the kernels are
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
      them, and its memref.dim queries read its sizes. Those the type
      knows (a view's static strides, its static offset) are constants in
      the kernel: its addresses fold to one base and immediate offsets.
    Each launch fills a `memref.alloca` marked `kiln.params` with those
    words (kiln-gpu-embed-kernels passes it by value). Static buffers are
    passed as they are. A scalar of another type, a non-constant
    memref.dim, or a dynamic buffer used by anything but loads, stores and
    dims is an error.
  }];
  let dependentDialects = ["arith::ArithDialect", "memref::MemRefDialect"];
}

def KilnGpuEmbedKernels : Pass<"kiln-gpu-embed-kernels", "ModuleOp"> {
  let summary = "Embed the kernels' code in the module and launch them through the runtime";
  let description = [{
    Host side of a GPU model, after the target has put each kernel's code
    on its gpu.module (kiln-spirv-serialize-kernels, kiln-cuda-compile-kernels):
    - every gpu.launch_func becomes a call of the runtime's
      `kiln_gpu_launch(kernel, grid x, y, z, args)`, `args` an array of
      {address, bytes, flags} per memref argument on the stack (flags
      KILN_GPU_ARG_CONSTANT for a memref.get_global or a reshape of one:
      the runtime copies a constant to the device once;
      KILN_GPU_ARG_MAYBE_CONSTANT for a branch's result that is a constant
      in some branches only; KILN_GPU_ARG_PARAMS for
      kiln-gpu-pack-params' stack array: copied at each launch);
    - before host code that may read or write a buffer the kernels use
      after a launch (a load, a store, a copy, a linalg op, a call other
      than kiln_check_failed), a call of `kiln_gpu_wait()` lets the queued
      kernels finish; inside loops that launch, conservatively at each
      iteration. Host code on other buffers (the shapes of a dynamic
      model) runs while the kernels do;
    - each launched kernel goes to the module attribute `kiln.gpu_kernels`,
      one dictionary per kernel index, from which the object's
      kiln_gpu_program is emitted: name, workgroup_size, buffers, and each
      `kiln.<field>` attribute of its gpu.module as <field> (the code:
      spirv words, a cuda fatbin and its ptx; features, 0 if absent); the
      gpu.modules are erased;
    - the module attribute `kiln.gpu_kernels_only_buffers` lists the
      arguments of `@main` (the model's inputs, then outputs) that only
      kernels can reach: every use, through views, is a launch's argument
      or a memref.dim; a load, a copy, a call, a loop, a branch or a store
      of its address (a dynamic entry's output slot) makes it the host's.
      The runtime keeps those where the host cannot reach them (on CUDA,
      device memory, copied from and to the caller's buffers).
    Kernel arguments must be memrefs: whole buffers, or views with static
    sizes, strides and offset (passed as their buffer's aligned pointer,
    the offset applied by the kernel).
  }];
  let dependentDialects = ["func::FuncDialect", "memref::MemRefDialect", "arith::ArithDialect",
                           "LLVM::LLVMDialect"];
}

#endif // KILN_CODEGEN_GPU_PASSES_TD
