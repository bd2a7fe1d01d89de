// Passes every kiln target uses: the memory plan, the entry points, the
// buffers of the bufferized program.
#ifndef KILN_CODEGEN_COMMON_PASSES_TD
#define KILN_CODEGEN_COMMON_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnCopiesToLoops : Pass<"kiln-copies-to-loops", "func::FuncOp"> {
  let summary = "Turn strided memref.copy and linalg.fill on buffers into vectorized parallel loops";
  let description = [{
    Runs on buffers. A strided memref.copy (such as padding, which writes
    into the interior of a larger buffer) would lower to the runtime's
    element-by-element memrefCopy. Instead it becomes a parallel loop nest
    that kiln-cpu-outline-parallel-loops can hand to the thread pool: with
    static shapes and unit-stride rows in both buffers, an `scf.parallel`
    over all but the innermost dimension that copies each row with
    `vector.transfer_read`/`transfer_write` of at most 64 bytes; otherwise a
    `linalg.copy`. Copies between contiguous buffers stay memcpy. A
    `linalg.fill` of a buffer with static unit-stride rows (contiguous or
    not) becomes the same loop nest, storing a broadcast of the value.
  }];
  let dependentDialects = ["linalg::LinalgDialect", "scf::SCFDialect", "vector::VectorDialect"];
}

def KilnDistinctResults : Pass<"kiln-distinct-results", "func::FuncOp"> {
  let summary = "Give every returned tensor a buffer of its own";
  let description = [{
    Runs on tensors, right before bufferization. A value returned more than
    once (a graph output that is also returned through Identity, or the
    empty tensors of zero-size outputs) gets a bufferization.alloc_tensor
    copy for each repeat, so each result has its own buffer when results
    become caller-allocated out-parameters.
  }];
  let dependentDialects = ["bufferization::BufferizationDialect"];
}

def KilnReadOnlyInputs : Pass<"kiln-read-only-inputs", "ModuleOp"> {
  let summary = "Mark the model's inputs read-only for bufferization";
  let description = [{
    Runs on tensors, right before One-Shot Bufferize. Every tensor argument
    of a public function (the entry: the model's inputs) gets
    `bufferization.writable = false`, so an op that would update an input
    in place (ScatterND, ScatterElements, an insert into it) writes a copy
    instead. The caller's inputs are const (kiln_model_run), a dynamic
    model's may be bound states the caller reads again, and a GPU keeps a
    copy of its own that only the host's writes reach.
  }];
  let dependentDialects = ["bufferization::BufferizationDialect"];
}

def KilnHoistLoopBuffers : Pass<"kiln-hoist-loop-buffers", "func::FuncOp"> {
  let summary = "Move buffers out of sequential loops; put those of parallel iterations on the stack";
  let description = [{
    Runs after bufferization, before kiln-plan-memory. A statically sized
    `memref.alloc` inside a loop holds data for one iteration only (its
    contents start undefined), unless its address leaves the analysis
    (yielded, returned, freed, cast to a pointer). Such a buffer moves out
    of every enclosing sequential loop (scf.for, scf.while), up to the
    innermost enclosing parallel loop (scf.forall, scf.parallel) or the
    function. At the function's top level, kiln-plan-memory then places it
    in the arena. Inside a parallel loop, iterations run at once on several
    threads, so each needs its own copy: a buffer of at most
    `max-stack-bytes` becomes a `memref.alloca` at the start of the
    iteration, freed when the iteration ends (the loop is an automatic
    allocation scope; see kiln-cpu-loop-alloca-scopes). Before this pass each such buffer was a
    call into the runtime per iteration, and its memory was kept until the
    run ended: a loop over blocks of keys used memory quadratic in the
    sequence length.
  }];
  let options = [
    Option<"maxStackBytes", "max-stack-bytes", "int64_t", "262144",
           "Largest buffer put on a parallel iteration's stack">,
  ];
  let dependentDialects = ["memref::MemRefDialect"];
}

def KilnPlanMemory : Pass<"kiln-plan-memory", "ModuleOp"> {
  let summary = "Pack each function's intermediate buffers into one arena by liveness";
  let description = [{
    Runs after bufferization. Every statically sized `memref.alloc` at the
    top level of a function becomes a `memref.view` at a fixed offset into
    one arena, a single `memref.alloc` of i8 at the start of the function.
    A buffer is live from the first to the last top-level op that uses it
    or a view of it; buffers placed largest first at the lowest offset that
    no buffer with an overlapping lifetime occupies (64-byte aligned), so
    buffers that are never live together share memory. Allocations of
    dynamic size, nested in loops, or whose address leaves the analysis
    (returned, yielded, freed, cast to a pointer) keep their own. The module
    gets `kiln.arena_bytes`, the sum of the arenas, which the runtime
    allocates when a model instance is created. With `report`, each function
    gets a remark with the buffers' total size, the arena's size, the most
    bytes live at once, and how many buffers stayed separate and why.
    Allocations (heap or stack) that are only written, never read (a
    vectorized reduction's initial partial sums, kept in registers by its
    loop), are erased with their writes first.
  }];
  let options = [
    Option<"report", "report", "bool", "false",
           "Emit a `memory:` remark per function with the plan's sizes">,
  ];
  let dependentDialects = ["arith::ArithDialect", "memref::MemRefDialect"];
}

def KilnProfileFlops : Pass<"kiln-profile-flops", "ModuleOp"> {
  let summary = "Count each ONNX node's arithmetic, for the profiler's GFLOP/s";
  let description = [{
    Runs on linalg on tensors (kiln-compile --profile), before tiling hides
    the iteration spaces. Each linalg op with a static iteration space,
    inside loops with constant trip counts, does per iteration the
    arithmetic of its body: 2 per fused multiply-add, 1 per other `arith`
    or `math` op (casts, constants, selects and index arithmetic excluded),
    so a matmul counts 2*M*N*K. The counts are summed per ONNX node (the
    first node of the op's location) into the module's `kiln.node_flops`
    dictionary, which kiln-profile-kernels reads. An op whose count is
    unknown makes its node's count unknown: the node is left out.
  }];
}

def KilnExternalizeWeights : Pass<"kiln-externalize-weights", "ModuleOp"> {
  let summary = "Read @main's constant tensors from the instance's weights file";
  let description = [{
    Runs on buffers (kiln-compile --weights=external). Every constant
    `memref.global` with a tensor value (run-time check messages aside)
    moves out of the code: it gets an offset in the weights data (in the
    order of the globals, each aligned to 64 bytes, or its own alignment if
    larger), and each `memref.get_global` of it becomes a `memref.view` of
    the data at that offset, which `@main` gets from the runtime once, at
    its start: `func.call @kiln_run_weights() : () -> memref<Nxi8>` (the
    weights of the instance being run). The global is erased.

    Constants read outside `@main`, and those whose type a view of bytes
    cannot give (a layout, a dynamic shape, sub-byte or index elements)
    stay in the code. The module's
    `kiln.external_weights` records `bytes` (N), `fingerprint` (a hash of
    the module as printed after the rewrite, so that two models with this
    fingerprint read their weights alike: everything but the values moved
    out is in it) and `tensors`, one dictionary per global: `name` (the
    ONNX node that reads it, or the symbol), `offset` and `value`.
    kiln-compile writes them to the model's weights file.
  }];
  let dependentDialects = ["func::FuncDialect", "memref::MemRefDialect",
                           "arith::ArithDialect"];
}

def KilnProfileKernels : Pass<"kiln-profile-kernels", "ModuleOp"> {
  let summary = "Bracket each kernel of @main with kiln_profile_begin/end calls";
  let description = [{
    Runs on buffers, after kiln-plan-memory (kiln-compile --profile). A
    kernel is a run of consecutive top-level ops of `@main` that read or
    write memory (or whose effects are unknown, such as calls) and come from
    the same ONNX nodes, by their locations; an op without a node joins the
    kernel before it. Pure ops and allocations between kernels stay
    outside. Kernel `i` gets `func.call @kiln_profile_begin(i)` before its
    first op and `@kiln_profile_end(i)` after its last; kernels of the same
    name (a node's ops split by another node's) share their id. The
    module's `kiln.profile` array describes each id: `name` (its nodes,
    "conv1 (Conv) + relu1 (Relu)"), `flops` per run (the sum of its nodes'
    counts in `kiln.node_flops`, each node counted in its first kernel
    only) and `bytes` per run (the sizes of the statically shaped buffers
    its ops use, each buffer once per kernel). kiln-compile emits it as the
    model's kiln_profile_info.
  }];
  let dependentDialects = ["func::FuncDialect", "arith::ArithDialect"];
}

def KilnFlattenEmptyArguments : Pass<"kiln-flatten-empty-arguments", "func::FuncOp"> {
  let summary = "Give zero-element memref arguments the type memref<0xT>";
  let description = [{
    Runs on buffers, before bare-pointer function lowering, which rejects
    shapes such as 3x0x5 (their strides include 0). A zero-element argument
    is never read or written, so the argument becomes memref<0xT> and its
    uses read a zero-byte alloca of the original type instead. The model's
    signature keeps the original shape.
  }];
}

def KilnDynamicEntry : Pass<"kiln-dynamic-entry", "ModuleOp"> {
  let summary = "Pass the shapes of a model with dynamic dimensions through its entry";
  let description = [{
    Runs on buffers, before results become out-parameters. When `@main` has
    a dynamic dimension anywhere, it takes two more arguments: `shapes`
    (memref<Sxi64>: the sizes of every input, then of every output) and
    `outputs` (memref<Rxi64>: one slot per output). A dynamic input becomes
    its base pointer (a rank-0 memref) viewed with the sizes read from
    `shapes`. Each result is returned by storing its address into its slot
    and its sizes into `shapes`; the buffer it points to belongs to the
    run's arena. `@main` is marked `kiln.dynamic_entry`. Static models are
    left alone.
  }];
  let dependentDialects = ["memref::MemRefDialect", "arith::ArithDialect"];
}

def KilnEmitEntryPoint : Pass<"kiln-emit-entry-point", "ModuleOp"> {
  let summary = "Add the C-ABI entry `void <name>_entry(void **buffers, int64_t *shapes)`";
  let description = [{
    Runs on the LLVM dialect after bare-pointer lowering of `@main`. The entry
    loads one pointer per input and per output from `buffers` (inputs first)
    and calls `@main`, so the runtime calls every model the same way. For a
    `@main` marked `kiln.dynamic_entry` it passes the input pointers, then
    `shapes`, then the address of the output slots in `buffers`.
  }];
  let options = [
    Option<"symbolPrefix", "prefix", "std::string", "\"kiln_model\"",
           "Prefix of the generated entry symbol">,
  ];
  let dependentDialects = ["LLVM::LLVMDialect"];
}

#endif
