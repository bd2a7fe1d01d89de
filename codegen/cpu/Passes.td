// The CPU strategy (x86-64 and AArch64): direct and im2col convolutions,
// packed and VNNI/AMX matmuls, sparse kernels, schedules, thread outlining.
// Flags are kiln-cpu-*.
#ifndef KILN_CODEGEN_CPU_PASSES_TD
#define KILN_CODEGEN_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnCpuPeelDynamicMatmul : Pass<"kiln-cpu-peel-dynamic-matmul", "func::FuncOp"> {
  let summary = "Split matmuls with one dynamic dimension into loops of static tiles";
  let description = [{
    A `linalg.matmul` whose rows (M) are known only at run time, with K and
    N static, becomes a loop over full tiles of `rows` rows and a loop over
    the remaining rows one at a time; one whose columns (N) are dynamic,
    with M and K static, does the same over tiles of `columns` columns. Each
    iteration is a static matmul on slices, which kiln-cpu-pack-matmul and
    kiln-cpu-schedule turn into register-tiled vector code (constant
    weights are still packed once, at compile time).
  }];
  let options = [
    Option<"rows", "rows", "int64_t", "8", "Rows per full tile of a dynamic M">,
    Option<"columns", "columns", "int64_t", "32", "Columns per full tile of a dynamic N">,
  ];
  let dependentDialects = ["scf::SCFDialect", "tensor::TensorDialect", "arith::ArithDialect"];
}

def KilnCpuVnniMatmul : Pass<"kiln-cpu-vnni-matmul", "func::FuncOp"> {
  let summary = "Compile int8 and bf16 matmuls with constant weights to AVX-512 dot-product kernels";
  let description = [{
    A 2-D widening matmul (`linalg.generic` tagged `kiln.widening_matmul`:
    u8 or i8 rows times constant i8 weights with i32 sums, or bf16 times
    constant bf16 with f32 sums) of static shape becomes an `scf.forall` of
    register tiles. Each tile keeps rows x (1-4) vectors of 16 sums in
    registers and adds a group of k per step with vpdpbusd
    (`llvm.x86.avx512.vpdpbusd.512`, four int8 k) or vdpbf16ps
    (`llvm.x86.avx512bf16.dpbf16ps.512`, two bf16 k), from weights packed at
    compile time into [N/16][K/g][16][g]. On AArch64 with I8MM, USDOT
    (`llvm.aarch64.neon.usdot`, u8 x i8, four k per lane) does the same on
    4-lane registers, SDOT (`llvm.aarch64.neon.sdot`, i8 x i8) without
    I8MM, and AVX-VNNI (vpdpbusd on 256-bit registers, 16 of them) on AVX2
    CPUs. x86 CPUs without VNNI use vpmaddwd (`pmaddwd` = 8 or 16 lanes):
    two k per lane on 16-bit values, A extended by its signedness and the
    weights packed as i16, so the sums are exact. Rows whose signedness the instruction does not read (signed for
    vpdpbusd/USDOT, unsigned for SDOT) are flipped and corrected by a
    constant. With `amx-int8` / `amx-bf16` (and K a whole
    number of groups) the kernel uses AMX tiles instead: each output block
    of up to 32 x 32 becomes a `linalg.generic` tagged `kiln.amx_tile` on
    the block's rows of A and its weight panels, which kiln-cpu-amx-tiles lowers
    to tile instructions after bufferization. `int8`, `bf16`, `usdot`,
    `sdot`, `avxvnni` and the `amx` options say which instructions the target has;
    other widening matmuls are left as they are.
  }];
  let options = [
    Option<"int8", "int8", "bool", "true", "The target has AVX-512 VNNI (vpdpbusd)">,
    Option<"bf16", "bf16", "bool", "true", "The target has AVX512-BF16 (vdpbf16ps)">,
    Option<"usdot", "usdot", "bool", "false", "The target has AArch64 I8MM (USDOT)">,
    Option<"sdot", "sdot", "bool", "false",
           "The target has the AArch64 dot product (SDOT) but not I8MM">,
    Option<"avxvnni", "avxvnni", "bool", "false",
           "The target has AVX-VNNI (vpdpbusd on 256-bit registers) but not AVX-512 VNNI">,
    Option<"amxInt8", "amx-int8", "bool", "false", "The target has AMX-INT8 tiles (tdpbusd)">,
    Option<"amxBf16", "amx-bf16", "bool", "false", "The target has AMX-BF16 tiles (tdpbf16ps)">,
    Option<"pmaddwdLanes", "pmaddwd", "int64_t", "0",
           "The target has no int8 dot product: int8 on vpmaddwd over this many 32-bit lanes "
           "(8: AVX2, 16: AVX512-BW; 0: not used)">,
  ];
  let dependentDialects = ["arith::ArithDialect", "LLVM::LLVMDialect", "scf::SCFDialect",
                           "tensor::TensorDialect", "vector::VectorDialect"];
}

def KilnCpuAmxTiles : Pass<"kiln-cpu-amx-tiles", "func::FuncOp"> {
  let summary = "Lower the `kiln.amx_tile` products of kiln-cpu-vnni-matmul to AMX tile instructions";
  let description = [{
    Each buffer-semantics `linalg.generic` tagged `kiln.amx_tile` (rows of A
    [M][K], weight panels [N/16][K/g][16 * g], output [M][N], M and N at most
    32) becomes AMX code: the output's 16 x 16 accumulator tiles are loaded,
    a loop over K multiplies 16-row tiles of A (64 bytes of k per row) by
    16 x 16 tiles of B (one panel's next 64-byte rows) with tdpbusd /
    tdpbssd (int8, signedness from the body's extensions) or tdpbf16ps,
    and the accumulators are stored back. Partial tiles (rows or k) get
    tile shapes of their own.
  }];
  let dependentDialects = ["amx::AMXDialect", "arith::ArithDialect", "scf::SCFDialect"];
}

def KilnCpuDirectConv : Pass<"kiln-cpu-direct-conv", "ModuleOp"> {
  let summary = "Compute channels-last convolutions in register tiles straight from their input";
  let description = [{
    Rewrites each static f32 channels-last `kiln.conv` (no group) whose
    filter is a constant, and whose output rows split into register tiles
    of at least half the register rows, as an `scf.forall` of register
    tiles: rows neighbouring output pixels of one output row by cols output
    channels. A tile starts from the bias and, per filter row, accumulates
    each input value of its pixels' windows (broadcast) times a row of the
    filter, packed at compile time into panels [F/cols][KH*KW*C][cols].
    No receptive-field matrix is built. Other convolutions are left to
    kiln-convert-to-linalg.

    Tasks run over (image row, pixel tile, channel panel) when the packed
    filter fits in `resident-filter-bytes`, so that neighbouring tasks share
    their input; over (channel panel, image row, pixel tile) otherwise, so
    that a panel of a large filter is read from memory once
    (kiln-cpu-prefetch-weights then prefetches it ahead of the K loop).
  }];
  let options = [
    Option<"vectorWidth", "vector-width", "int64_t", "16",
           "f32 lanes of the widest vector register (16 = AVX-512, 8 = AVX2, 4 = NEON)">,
    Option<"residentFilterBytes", "resident-filter-bytes", "int64_t", "1048576",
           "Largest packed filter that is expected to stay in cache across tasks">,
  ];
  let dependentDialects = ["scf::SCFDialect", "tensor::TensorDialect", "vector::VectorDialect",
                           "arith::ArithDialect", "ub::UBDialect"];
}

def KilnCpuConvAsMatmul : Pass<"kiln-cpu-conv-as-matmul", "ModuleOp"> {
  let summary = "Rewrite kiln.conv as matmuls: im2col, receptive-field rows, depthwise vectors";
  let description = [{
    Runs after kiln-cpu-direct-conv, on the convolutions it leaves:
    - NCHW, one group, batch 1: filter [F, C*KH*KW] x im2col [C*KH*KW,
      OH*OW] (no copy for a 1x1 stride-1 window); with sizes known at run
      time, the same per image in a loop over the batch.
    - channels-last, one group (static shapes): the receptive fields as rows
      [N*OH*OW, KH*KW*C], copied in vectors of at most 64 bytes per run of
      contiguous channels, times the filter relaid out at compile time as
      [KH*KW*C, F], into the bias.
    - channels-last depthwise: per output pixel and vector of channels, the
      bias plus an FMA per tap.
    - widening (8-bit operands with an i32 result, bf16 with f32; static):
      one widening matmul of the receptive fields, for kiln-cpu-vnni-matmul.
    Other convolutions (NCHW batches of static shape, grouped ones) are left
    to kiln-convert-to-linalg.
  }];
  let dependentDialects = ["linalg::LinalgDialect", "tensor::TensorDialect",
                           "arith::ArithDialect", "scf::SCFDialect", "vector::VectorDialect"];
}

def KilnCpuSparseMatmul : Pass<"kiln-cpu-sparse-matmul", "ModuleOp"> {
  let summary = "Compute kiln.sparse_matmul and kiln.bitmap_matmul as vector loops";
  let description = [{
    Each `kiln.sparse_matmul` becomes an `scf.forall` over its column blocks
    (tasks spread over threads); the input is viewed as [M, K]. A task with
    B > 1 outputs per block walks its nonzero entries once per 4 rows:
    x[m, k] broadcast times the entry's B values, multiply-added into a
    B-lane accumulator per row. A task of B = 1 (one output column) walks
    them `vector-width` at a time per row: x[m, k] gathered at the entries'
    row indices times their values, the last partial group masked, the
    lanes summed at the end; over at least a vector of rows, the input is
    transposed once and each entry's value multiplies whole vectors of
    rows. A `kiln.bitmap_matmul` runs like 16x1 blocks over every row k:
    its 16 weights are expanded from the packed values (a read-only buffer
    of them) by the row's mask. The int8 form expands 64 bytes per mask (4
    rows by 16 outputs) and sums them with x[m, 4g .. 4g+4) by vpdpbusd
    (an LLVM intrinsic call: AVX512-VNNI and -VBMI2 targets only, which
    kiln-sparsify checks before it forms the op).
  }];
  let options = [
    Option<"vectorWidth", "vector-width", "int64_t", "16",
           "f32 lanes of a gather (16 = AVX-512, 8 = AVX2, 4 = NEON)">,
  ];
  let dependentDialects = ["scf::SCFDialect", "tensor::TensorDialect", "vector::VectorDialect",
                           "arith::ArithDialect", "ub::UBDialect", "linalg::LinalgDialect",
                           "math::MathDialect", "bufferization::BufferizationDialect",
                           "LLVM::LLVMDialect"];
}

def KilnCpuPackMatmul : Pass<"kiln-cpu-pack-matmul", "ModuleOp"> {
  let summary = "Rewrite static matmuls as contractions on operands packed into register panels";
  let description = [{
    Chooses each static `linalg.matmul`'s register tile (mr rows x nr
    columns, as kiln-cpu-schedule would) and rewrites it as a
    `linalg.contract` over (column panel, row panel, k, row, column): B
    packed into [N/nr][K][nr] and a constant A into [M/mr][K][mr], so that
    the K loop of a tile reads contiguous memory. Constant operands are
    packed at compile time; a non-constant B with more than one panel is
    packed by a linalg.generic copy. C is a view [M/mr][mr][N/nr][nr] of the
    original. The contraction is tagged `kiln.packed` and
    `kiln.tile = array<i64: mr, nr>` for kiln-cpu-schedule.
  }];
  let options = [
    Option<"vectorWidth", "vector-width", "int64_t", "16",
           "f32 lanes of the widest vector register (16 = AVX-512, 8 = AVX2, 4 = NEON)">,
  ];
  let dependentDialects = ["linalg::LinalgDialect", "tensor::TensorDialect",
                           "arith::ArithDialect"];
}

def KilnCpuSchedule : Pass<"kiln-cpu-schedule", "ModuleOp"> {
  let summary = "Tile and vectorize matmul/conv with a transform-dialect schedule";
  let description = [{
    Builds a transform-dialect script for the target (vector width from the
    target CPU features) and applies it in-process: matmuls and convolutions
    are tiled to register-sized blocks and vectorized. Contractions packed by
    kiln-cpu-pack-matmul are tiled one register tile per (column panel, row
    panel) and vectorized the same way. Row reductions (one reduction, over
    the innermost and contiguous dimension of f32 inputs, a multiple of the
    vector width long, with a sum, product, max or min combiner: Softmax's
    and LayerNormalization's) run one row per forall iteration, reduced into
    a vector of partial results by a loop of vector ops and then into the
    result; an operand that keeps the reduced dimension as size 1 is
    collapsed for the vectorizer.
  }];
  let options = [
    Option<"vectorWidth", "vector-width", "int64_t", "16",
           "f32 lanes of the widest vector register (16 = AVX-512, 8 = AVX2, 4 = NEON)">,
  ];
  let dependentDialects = ["transform::TransformDialect", "linalg::LinalgDialect",
                           "scf::SCFDialect", "vector::VectorDialect", "tensor::TensorDialect"];
}

def KilnCpuApproximateMath : Pass<"kiln-cpu-approximate-math"> {
  let summary = "Replace f32 exp, erf and tanh with inline polynomial approximations";
  let description = [{
    Rewrites `math.exp`, `math.erf` and `math.tanh` on f32 (scalars or
    vectors) with upstream's polynomial approximations: bit manipulation,
    FMAs and selects, no calls. The loops around them, Softmax's and GELU's
    among them, then vectorize like any other elementwise loop instead of
    calling libm once per element. Other math functions keep their libm
    calls. test/e2e/math-accuracy.test bounds the approximations' error
    against float64 references.
  }];
  let dependentDialects = ["arith::ArithDialect", "math::MathDialect", "vector::VectorDialect"];
}

def KilnCpuFuseEpilogues : Pass<"kiln-cpu-fuse-epilogues", "func::FuncOp"> {
  let summary = "Apply an elementwise consumer of a tiled matmul or convolution in its register tiles";
  let description = [{
    Runs on tensors after kiln-cpu-schedule and subset hoisting. An
    scf.forall whose every tile is written once, from index 0, by one
    vector.transfer_write (a register tile of a matmul or convolution, with
    the vectors its K loop carried) and whose result, past reshapes, is read
    only by an elementwise linalg.generic (a ReLU, a Clip, a scale, a
    residual Add) gets the generic's scalar body applied to the vectors
    before the write; the generic is erased. Other tensors the generic
    reads at the same elements (a residual) must have the result's shape
    and exist before the tiles: their tiles are read like the result's.
    Scalars the body takes from outside are broadcast. With `report`, each
    such consumer gets a `fusion:` remark at the tiled op, fused or with the
    reason it stays a separate pass.
  }];
  let options = [
    Option<"report", "report", "bool", "false", "Emit a `fusion:` remark per consumer">,
  ];
  let dependentDialects = ["vector::VectorDialect"];
}

def KilnCpuPrefetchWeights : Pass<"kiln-cpu-prefetch-weights", "func::FuncOp"> {
  let summary = "Prefetch large constants ahead of the loops that stream them";
  let description = [{
    Runs after bufferization. A `vector.transfer_read` directly inside an
    `scf.for` that reads a constant global of more than `min-bytes`
    (directly, or through a subview of unit strides) at an index that is
    the loop's induction variable plus loop-invariant terms gets a
    `memref.prefetch` of the same place `distance` iterations ahead (the
    index clamped to its dimension's last), one per cache line of the row it
    reads. Such weights do not stay in cache from one run to the next, and
    the hardware prefetchers restart at every page of the stream.
  }];
  let options = [
    Option<"minBytes", "min-bytes", "int64_t", "1048576",
           "Constants of at most this many bytes are expected to stay in cache">,
    Option<"distance", "distance", "int64_t", "16", "Iterations ahead to prefetch">,
  ];
  let dependentDialects = ["memref::MemRefDialect", "arith::ArithDialect"];
}

def KilnCpuExpandBf16 : Pass<"kiln-cpu-expand-bf16", "ModuleOp"> {
  let summary = "Convert between f32 and bf16 in integer arithmetic, for CPUs without AVX512-BF16";
  let description = [{
    Each `arith.truncf` to bf16 becomes the f32's bits rounded to nearest
    even in i32 arithmetic (NaNs kept quiet), then the upper 16 bits; each
    `arith.extf` from bf16 a shift of its bits into an f32 (scalars and
    vectors alike). Without it, LLVM calls __truncsfbf2 where the CPU has
    no conversion instruction, and Debian 12's libgcc has no such function.
    Nothing else changes.
  }];
  let dependentDialects = ["arith::ArithDialect"];
}

def KilnCpuLoopAllocaScopes : Pass<"kiln-cpu-loop-alloca-scopes", "func::FuncOp"> {
  let summary = "Free the allocas of each loop iteration when it ends";
  let description = [{
    Run right before convert-scf-to-cf. The body of an scf.for, scf.parallel
    or scf.while is an automatic allocation scope: its `memref.alloca`s live
    for one iteration. Lowered to control flow, a body would allocate on the
    stack at every iteration and free nothing until the function returns.
    Each body block holding an alloca starts with `llvm.intr.stacksave` and
    ends, before its terminator, with `llvm.intr.stackrestore`.
    (`memref.alloca_scope` would say the same, but its region must remain
    one block, which convert-scf-to-cf breaks when it lowers loops inside.)
  }];
  let dependentDialects = ["LLVM::LLVMDialect"];
}

def KilnCpuOutlineParallelLoops : Pass<"kiln-cpu-outline-parallel-loops", "ModuleOp"> {
  let summary = "Outline outermost scf.parallel loops into tasks for the runtime's thread pool";
  let description = [{
    Runs on buffers, before loops are lowered to branches. Each outermost
    `scf.parallel` of a function whose estimated work reaches `min-work`
    becomes a private function `@<func>_task<N>(%begin, %end, captures...)`
    that runs the linearized iterations [begin, end) of the loop's leading
    dimensions, tagged `kiln.parallel_task`, and the loop becomes one call of
    it over the whole range. Only the fewest leading dimensions that give
    `min-chunks` iterations are linearized; the rest stay an inner
    `scf.parallel`, so the index arithmetic of the linearization runs once per
    chunk iteration, not once per element. Until `kiln-cpu-lower-parallel-calls` turns that call into a thread-pool
    dispatch, the program is unchanged and serial. Pure view ops and constants
    feeding the body are cloned into it, so captures are plain buffers and
    scalars. Loops that allocate, or carry reductions, stay serial.
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", "32768",
           "Smallest estimated op count (ops x enclosed trip counts) worth a dispatch">,
    Option<"minChunks", "min-chunks", "int64_t", "64",
           "Iterations the distributed leading dimensions should have, for load balance">,
  ];
  let dependentDialects = ["func::FuncDialect", "scf::SCFDialect", "arith::ArithDialect"];
}

def KilnCpuLowerParallelCalls : Pass<"kiln-cpu-lower-parallel-calls", "ModuleOp"> {
  let summary = "Turn calls of kiln.parallel_task functions into kiln_parallel_for dispatches";
  let description = [{
    Runs on the LLVM dialect. A call `@task(0, n, captures...)` becomes: the
    captures stored to a stack struct, and `kiln_parallel_for(@task_thunk,
    &struct, n)`, where the thunk loads the captures and calls the task on the
    sub-range [begin, end) the runtime hands to each thread.
  }];
  let dependentDialects = ["LLVM::LLVMDialect"];
}

#endif // KILN_CODEGEN_CPU_PASSES_TD
