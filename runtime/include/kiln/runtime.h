/*===- kiln/runtime.h - the kiln runtime C ABI -----------------------------===
 *
 * A compiled model object defines one `const kiln_model_info <name>_info`.
 * The runtime turns it into a runnable instance:
 *
 *   kiln_model *m = kiln_model_create(&mymodel_info);
 *   const void *inputs[] = {x};      // in the order of info->inputs
 *   void *outputs[] = {y};           // caller-allocated, info->outputs sizes
 *   if (kiln_model_run(m, inputs, outputs) != 0) puts(kiln_model_error(m));
 *   kiln_model_destroy(m);
 *
 * Buffers are dense, row-major, of the dtype and shape in the descriptor.
 * Models with dynamic dimensions (-1 in a descriptor's shape) run through
 * kiln_model_run_tensors, which takes each input's shape and returns each
 * output's:
 *
 *   kiln_tensor in[] = {{x, KILN_FLOAT32, 2, (int64_t[]){batch, 784}}};
 *   kiln_tensor out[1];
 *   if (kiln_model_run_tensors(m, in, out) == 0) use(out[0].data, out[0].shape);
 *
 * The runtime has no MLIR or LLVM dependency.
 *===----------------------------------------------------------------------===*/
#ifndef KILN_RUNTIME_H
#define KILN_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_ABI_VERSION 7

/* A dimension whose size is given at run time. */
#define KILN_DYNAMIC (-1)

/* Element types; the values are ONNX TensorProto.DataType codes. */
typedef enum kiln_dtype {
  KILN_FLOAT32 = 1,
  KILN_UINT8 = 2,
  KILN_INT8 = 3,
  KILN_UINT16 = 4,
  KILN_INT16 = 5,
  KILN_INT32 = 6,
  KILN_INT64 = 7,
  KILN_BOOL = 9,
  KILN_FLOAT16 = 10,
  KILN_FLOAT64 = 11,
  KILN_UINT32 = 12,
  KILN_UINT64 = 13,
  KILN_BFLOAT16 = 16
} kiln_dtype;

/* Name, element type and shape of one model input or output. */
typedef struct kiln_tensor_info {
  const char *name;
  int32_t dtype; /* kiln_dtype */
  int32_t rank;
  const int64_t *shape;         /* KILN_DYNAMIC where given at run time */
  const char *const *dim_names; /* NULL, or per dimension its symbolic name
                                   ("batch") or NULL; inputs' dimensions of
                                   one name must have one size */
} kiln_tensor_info;

/* The kernels of a model compiled for a GPU (kiln-compile --target=vulkan).
 * Each kernel's buffers are bound in the order of its arguments: bindings
 * 0, 1, ... of descriptor set 0. */
typedef enum kiln_gpu_api {
  KILN_GPU_VULKAN = 1,
  KILN_GPU_METAL = 2,
  KILN_GPU_CUDA = 3
} kiln_gpu_api;
typedef struct kiln_gpu_kernel {
  const char *name; /* entry point */
  const void *code; /* Vulkan: SPIR-V; Metal: MSL source (NUL-terminated);
                       CUDA: a fatbin (cubins and PTX) */
  uint64_t code_bytes; /* without the NUL */
  uint32_t workgroup_size[3];
  uint32_t num_buffers;
  uint32_t features; /* KILN_GPU_FEATURE_*: what the device must have */
  uint32_t shared_bytes; /* CUDA: the dynamic shared memory a workgroup takes
                            (kernels whose buffers pass 48 KiB); else 0 */
} kiln_gpu_kernel;
/* Vulkan: shaderInt64, shaderInt16, shaderInt8, shaderFloat16, shaderFloat64,
 * storageBuffer16BitAccess, storageBuffer8BitAccess. */
#define KILN_GPU_FEATURE_INT64 1u
#define KILN_GPU_FEATURE_INT16 2u
#define KILN_GPU_FEATURE_INT8 4u
#define KILN_GPU_FEATURE_FLOAT16 8u
#define KILN_GPU_FEATURE_FLOAT64 16u
#define KILN_GPU_FEATURE_STORAGE16 32u
#define KILN_GPU_FEATURE_STORAGE8 64u
/* A buffer of the entry (an input or output) that no host code of the
 * model reads or writes, only kernels: the runtime may keep it where the
 * host cannot reach it (CUDA: device memory), copied there from the
 * caller's input and back into the caller's output. */
#define KILN_GPU_BUFFER_KERNELS_ONLY 1u
typedef struct kiln_gpu_program {
  uint32_t api; /* kiln_gpu_api */
  uint32_t num_kernels;
  const kiln_gpu_kernel *kernels;
  /* KILN_GPU_BUFFER_* bits per buffer of the entry (inputs, then outputs);
   * NULL: none. */
  const uint8_t *buffer_flags;
} kiln_gpu_program;

/* The kernels of a model compiled with kiln-compile --profile: the groups
 * of ops its code brackets with kiln_profile_begin/end, each named after
 * its ONNX nodes (a kernel may run more than once per run). */
typedef struct kiln_profile_kernel {
  const char *name;  /* "conv1 (Conv)", or "conv1 (Conv) + relu1 (Relu)" */
  uint64_t flops;    /* per run: 2 per multiply-add, 1 per other arithmetic
                        op; 0 where unknown (dynamic shapes) */
  uint64_t bytes;    /* per run: bytes of the statically shaped buffers it
                        reads or writes */
} kiln_profile_kernel;
typedef struct kiln_profile_info {
  uint32_t num_kernels;
  const kiln_profile_kernel *kernels;
} kiln_profile_info;

/* The weights of a model compiled with kiln-compile --weights=external:
 * they live in a weights file (.kw) that the runtime maps read-only. */
typedef struct kiln_external_weights {
  uint64_t fingerprint; /* of the code that reads them: a file fits this
                           model when it carries the same fingerprint */
  uint64_t bytes;       /* of the data */
  uint32_t num_tensors;
  const char *file_name; /* "model.kw": looked for beside the executable */
} kiln_external_weights;

/* A model compiled for several CPUs (kiln-compile --mcpu=x86-64-v3,x86-64-v4
 * or --mcpu=portable): one descriptor per CPU, and what the CPU must have
 * to run it. */
#define KILN_CPU_X86_64_V2 1u      /* SSE4.2, POPCNT, CX16, LAHF */
#define KILN_CPU_X86_64_V3 2u      /* AVX2, FMA, BMI1/2, F16C, LZCNT, MOVBE */
#define KILN_CPU_X86_64_V4 4u      /* AVX-512 F, BW, CD, DQ, VL */
#define KILN_CPU_AARCH64_DOTPROD 8u /* SDOT/UDOT */
#define KILN_CPU_AARCH64_I8MM 16u  /* SMMLA/USMMLA */
struct kiln_model_info;
typedef struct kiln_cpu_variant {
  const char *cpu;   /* "x86-64-v4" */
  uint32_t requires; /* KILN_CPU_* bits */
  const struct kiln_model_info *model; /* the model compiled for that CPU */
} kiln_cpu_variant;

/* Emitted by kiln-compile into the model object (layout is ABI). */
typedef struct kiln_model_info {
  uint32_t abi_version;
  uint32_t reserved;
  const char *name;
  uint32_t num_inputs;
  uint32_t num_outputs;
  const kiln_tensor_info *inputs;
  const kiln_tensor_info *outputs;
  /* buffers: inputs then outputs, one pointer each. shapes: the sizes of
   * every input, then of every output. A model with dynamic dimensions
   * reads its inputs' sizes from `shapes` and writes each output's address
   * (into the run's memory) to its buffer slot and its sizes to `shapes`. */
  void (*entry)(void **buffers, int64_t *shapes);
  /* Bytes of the intermediate buffers' arena, planned at compile time; the
   * instance allocates it when it is created. */
  uint64_t arena_bytes;
  /* NULL for a model that runs on the CPU alone. */
  const kiln_gpu_program *gpu;
  /* Bytes of the model's constants (weights), resident with its code. */
  uint64_t weights_bytes;
  /* NULL unless compiled with --profile. */
  const kiln_profile_info *profile;
  /* NULL when the weights are in the model's code (the default). */
  const kiln_external_weights *external_weights;
  /* A model compiled for several CPUs: its variants, from the least to the
   * most demanding; an instance runs the most demanding one the CPU can.
   * Such a descriptor gives the name, inputs and outputs; its entry is
   * NULL, and each variant's descriptor has the rest. 0 and NULL for a
   * model of one CPU. */
  uint32_t num_variants;
  const kiln_cpu_variant *variants;
} kiln_model_info;

/* The KILN_CPU_* bits of the CPU this process runs on. */
uint32_t kiln_cpu_features(void);
/* The variant of a model compiled for several CPUs that an instance runs:
 * the one named by KILN_CPU_VARIANT when set, else the most demanding one
 * this CPU can run. NULL, with a message, when there is none (or the
 * variant asked for needs what the CPU lacks); NULL without a message for
 * a model with one variant. */
const kiln_cpu_variant *kiln_pick_cpu_variant(const struct kiln_model_info *info, char *error,
                                              size_t error_size);

/* Whether any input or output has a dynamic dimension. */
int kiln_model_info_is_dynamic(const kiln_model_info *info);

/* A tensor given to or returned by kiln_model_run_tensors. */
typedef struct kiln_tensor {
  void *data;
  int32_t dtype; /* kiln_dtype */
  int32_t rank;
  const int64_t *shape;
} kiln_tensor;

typedef struct kiln_model kiln_model;

/* Returns NULL if the descriptor's ABI version is not supported. A model
 * compiled for a GPU opens its device here; when there is none, the
 * instance is still returned, kiln_model_error says why at once, and every
 * run fails with that message. */
kiln_model *kiln_model_create(const kiln_model_info *info);
/* kiln_model_create, reading the weights of a model compiled with
 * kiln-compile --weights=external from `weights_path` (NULL: the default,
 * see kiln_model_swap_weights). */
kiln_model *kiln_model_create_with_weights(const kiln_model_info *info,
                                           const char *weights_path);
/* Runs one inference of a model without dynamic dimensions on
 * caller-allocated buffers. Returns 0 on success. Not reentrant per
 * instance; use one instance per thread. */
int kiln_model_run(kiln_model *model, const void *const *inputs, void *const *outputs);
/* Runs one inference of any model on inputs whose dtype, rank and sizes are
 * checked against the descriptors (dynamic sizes: any size >= 0, one size
 * per dimension name). On success each outputs[i] is filled in: its data
 * and shape belong to the instance and stay valid until its next run or
 * its destruction. Returns 0 on success. */
int kiln_model_run_tensors(kiln_model *model, const kiln_tensor *inputs, kiln_tensor *outputs);
void kiln_model_destroy(kiln_model *model);
/* Memory for a run's inputs and outputs that this instance's device copies
 * from and to fastest: on CUDA page-locked host memory, which the GPU
 * reads and writes by DMA (from pageable memory the driver first copies
 * each transfer into a buffer of its own); elsewhere, and when the driver
 * has no page-locked memory left, 64-byte aligned memory of the C library.
 * NULL when out of memory. It belongs to the instance: freed by
 * kiln_model_free_host, or at the latest by kiln_model_destroy
 * (kiln_model_free_host ignores the outputs kiln_model_run_tensors
 * returns, which the instance keeps). */
void *kiln_model_alloc_host(kiln_model *model, size_t bytes);
void kiln_model_free_host(kiln_model *model, void *memory);

/* Stateful models (a recurrent state, a decoder's KV cache): after
 * kiln_model_bind_state(m, "present_k", "past_k"), each run of
 * kiln_model_run_tensors takes input past_k from the last run's output
 * present_k, where it lies (no copy), and ignores the caller's tensor for
 * it; the first run after binding or kiln_model_reset_states takes the
 * caller's (the initial state). The output and the input must have one
 * dtype and rank, and agree where both sizes are fixed. With states bound,
 * runs alternate between two sets of intermediate memory, so that a run
 * never writes over the states it reads (twice the arena). Returns 0, or
 * nonzero with kiln_model_error. kiln_model_run refuses a model with bound
 * states. */
int kiln_model_bind_state(kiln_model *model, const char *output, const char *input);
void kiln_model_reset_states(kiln_model *model);
const kiln_model_info *kiln_model_get_info(const kiln_model *model);
/* Message of the last failed call on this instance ("" if none). */
const char *kiln_model_error(const kiln_model *model);

/* Threads one inference of this instance may use (the caller's included).
 * 0 picks the default: KILN_NUM_THREADS when set to a count, else the CPUs
 * this process may run on. Worker threads start at the next run, wait for
 * the next parallel loop spinning for 50 us and then asleep, and end with
 * kiln_model_destroy. Returns 0 on
 * success, nonzero (with kiln_model_error) for a count outside 0..1024. */
#define KILN_MAX_THREADS 1024
int kiln_model_set_num_threads(kiln_model *model, int num_threads);
int kiln_model_num_threads(const kiln_model *model);

/* Called by generated code: runs fn(ctx, begin, end) on disjoint sub-ranges
 * covering [0, n), on the threads of the instance being run. */
typedef void (*kiln_task_fn)(void *ctx, int64_t begin, int64_t end);
void kiln_parallel_for(kiln_task_fn fn, void *ctx, int64_t n);

/* Called by generated code when a run-time check fails (e.g. a shape
 * operand that disagrees with the shape the model was compiled for): the
 * current kiln_model_run stops and returns nonzero with "run-time check
 * failed: <message>" as the error. Only valid on the thread running
 * kiln_model_run, outside parallel loops. */
void kiln_check_failed(const char *message);

/* Called by generated code that uses AMX tiles, at the start of each run:
 * Linux leaves a process's AMX tile data off until it asks for it
 * (arch_prctl ARCH_REQ_XCOMP_PERM, done once), and a tile instruction
 * without it faults. When the system refuses, the run fails with an error
 * (kiln_check_failed) instead. */
void kiln_request_amx(void);

/* The CPU variant the instance runs ("x86-64-v4"), or NULL for a model
 * compiled for one CPU. */
const char *kiln_model_cpu_variant(const kiln_model *model);

/* The device a GPU model's instance runs on ("llvmpipe (CPU, Vulkan 1.3)"),
 * or NULL for a CPU model or when no device could be opened. */
const char *kiln_model_device(const kiln_model *model);

/* Called by generated code of GPU models, on the thread running the model:
 * queues kernel `kernel` of the program on a grid of workgroups, each
 * argument a buffer of the run (arena, inputs, outputs) or a constant of
 * the model (flags KILN_GPU_ARG_CONSTANT: copied to the device at its first
 * use, then kept), or the launch's parameters (KILN_GPU_ARG_PARAMS). kiln_gpu_wait runs what was queued and waits for it,
 * before host code touches the buffers. A failure stops the run. */
typedef struct kiln_gpu_arg {
  const void *data;
  uint64_t bytes;
  uint64_t flags;
} kiln_gpu_arg;
#define KILN_GPU_ARG_CONSTANT 1u
/* A kernel's scalars and shapes (a few words on the caller's stack): copied
 * to device memory at each launch. */
#define KILN_GPU_ARG_PARAMS 2u
/* A model's constant or a buffer of the run, which only the run tells (a
 * branch's result): device memory if it is in it, else a constant. */
#define KILN_GPU_ARG_MAYBE_CONSTANT 4u
void kiln_gpu_launch(uint32_t kernel, int64_t grid_x, int64_t grid_y, int64_t grid_z,
                     const kiln_gpu_arg *args);
void kiln_gpu_wait(void);

/* Bytes of intermediate memory the instance holds after its first run. */
size_t kiln_model_arena_bytes(const kiln_model *model);

/* The memory of an instance, in bytes. `peak` is the most that arena and
 * runtime held at once, plus the weights. */
typedef struct kiln_memory_stats {
  uint64_t arena;   /* intermediates now: the planned arena, and chunks
                       grown by dynamic sizes */
  uint64_t runtime; /* other memory the instance holds now: the outputs of
                       kiln_model_run_tensors, shapes, GPU staging */
  uint64_t weights; /* the model's constants */
  uint64_t peak;
} kiln_memory_stats;
void kiln_model_memory(const kiln_model *model, kiln_memory_stats *stats);

/* Profiling a model compiled with kiln-compile --profile. Between start and
 * stop, every run records when each kernel ran: on the running thread, and
 * on each pool worker that took a share of it. Recording costs two clock
 * reads per kernel and per worker share; a model compiled without --profile
 * has no instrumentation at all. */
typedef struct kiln_profile_entry {
  const char *name; /* as kiln_profile_kernel */
  uint64_t calls;
  double total_ms;  /* wall time on the running thread, over all calls */
  uint64_t flops;   /* per run, as kiln_profile_kernel */
  uint64_t bytes;
} kiln_profile_entry;
typedef struct kiln_profile_summary {
  uint64_t runs;        /* recorded since start */
  double total_ms;      /* their wall time */
  uint32_t num_kernels; /* entries for kiln_model_profile_kernel */
  uint64_t dropped;     /* trace events not kept (past 1M per thread) */
} kiln_profile_summary;
/* Starts recording (clearing what was recorded). Returns nonzero, with
 * kiln_model_error, for a model compiled without --profile. */
int kiln_model_profile_start(kiln_model *model);
void kiln_model_profile_stop(kiln_model *model);
int kiln_model_profile_summary(kiln_model *model, kiln_profile_summary *summary);
int kiln_model_profile_kernel(kiln_model *model, uint32_t index,
                              kiln_profile_entry *entry);
/* Writes what was recorded as a Chrome trace (chrome://tracing, Perfetto):
 * one "run" event per run and one event per kernel on thread 0 (the running
 * thread), one per worker share on threads 1.. (the pool's workers).
 * Returns nonzero, with kiln_model_error, when the file cannot be written. */
int kiln_model_profile_write_trace(kiln_model *model, const char *path);

/* Weights outside the code (kiln-compile --weights=external). An instance
 * of such a model maps its weights file when it is created: the file named
 * by kiln_external_weights.file_name in the directory of the running
 * executable, or the one given to kiln_model_create_with_weights. When that
 * fails (no file there, a truncated or corrupt file,
 * or one written for other code) the instance is still returned,
 * kiln_model_error says why, and every run fails until weights are given
 * with one of the calls below.
 *
 * A weights file is mapped once per process and shared by every instance
 * that uses it (and, through the page cache, by other processes); its
 * checksums are verified when it is first mapped. kiln_weights_open maps
 * and verifies a file ahead of time; switching an instance to open weights
 * is then a pointer swap. Weights may be switched between runs, never during
 * one. Each call returns 0, or nonzero with a message (kiln_model_error, or
 * `error` for kiln_weights_open). */
typedef struct kiln_weights kiln_weights;
kiln_weights *kiln_weights_open(const char *path, char *error, size_t error_size);
/* The bytes of a weights file in memory, used in place (not copied): they
 * must stay valid, 64-byte aligned, while an instance uses them. */
kiln_weights *kiln_weights_open_buffer(const void *data, size_t size, char *error,
                                       size_t error_size);
void kiln_weights_close(kiln_weights *weights); /* instances keep their own reference */
uint64_t kiln_weights_fingerprint(const kiln_weights *weights);
uint64_t kiln_weights_bytes(const kiln_weights *weights);
const char *kiln_weights_path(const kiln_weights *weights); /* "(buffer)" for a buffer */
/* Switches the instance to `weights` if their fingerprint is the model's;
 * the instance holds a reference until it switches again or is destroyed. */
int kiln_model_use_weights(kiln_model *model, kiln_weights *weights);
/* kiln_weights_open + kiln_model_use_weights + kiln_weights_close. */
int kiln_model_swap_weights(kiln_model *model, const char *path);
int kiln_model_swap_weights_buffer(kiln_model *model, const void *data, size_t size);
/* The weights the instance reads: NULL for embedded weights, or when none
 * could be mapped. */
const kiln_weights *kiln_model_weights(const kiln_model *model);

/* Called by generated code of models with external weights, on the running
 * thread: the data of the instance's weights file. */
const void *kiln_run_weights(void);

/* Called by generated code of models compiled with --profile, on the
 * running thread, around kernel `kernel` of kiln_profile_info. */
void kiln_profile_begin(uint32_t kernel);
void kiln_profile_end(uint32_t kernel);

/* Helpers for descriptors. */
size_t kiln_dtype_size(int32_t dtype);      /* 0 if unknown */
const char *kiln_dtype_name(int32_t dtype); /* "float32", ...; "unknown" */
/* Elements of a descriptor's shape (dynamic dimensions count as 0). */
size_t kiln_tensor_num_elements(const kiln_tensor_info *info);
/* Checks a caller tensor against a descriptor (a dynamic dimension accepts
 * any size); writes a message and returns nonzero on mismatch. */
int kiln_check_tensor(const kiln_tensor_info *expected, int32_t dtype, int32_t rank,
                      const int64_t *shape, char *message, size_t message_size);

#ifdef __cplusplus
}
#endif

#endif /* KILN_RUNTIME_H */
