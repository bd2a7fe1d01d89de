/*===- runtime.c - model instances and the intermediate arena -------------===*/
#include "kiln/runtime.h"
#include "device/device.h"
#include "profile.h"
#include "threads.h"
#include "weights.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Intermediates are bump-allocated from one arena per instance. It starts as
 * one block of the size planned at compile time (kiln_model_info's
 * arena_bytes, which holds every statically sized intermediate); buffers of
 * dynamic size or allocated inside loops grow it by chunks during the first
 * runs, and the chunks are merged into one block at the next run, so
 * steady-state runs never call malloc. A GPU model's chunks are device
 * memory, mapped on the host; their headers stay in host memory, since the
 * host writes them at each allocation and the pages under them would
 * otherwise move back and forth between host and GPU at every run. */
typedef struct arena_chunk {
  struct arena_chunk *next;
  size_t size, used;
  unsigned char *data; /* 64-byte aligned */
} arena_chunk;

/* What an instance holds, for kiln_model_memory. */
typedef struct memory_meter {
  uint64_t arena, runtime, peak; /* peak of arena + runtime */
} memory_meter;

static void meter_add(memory_meter *meter, uint64_t *part, int64_t bytes) {
  *part += (uint64_t)bytes;
  if (meter->arena + meter->runtime > meter->peak)
    meter->peak = meter->arena + meter->runtime;
}

typedef struct arena {
  pthread_mutex_t mutex; /* tasks on the pool's threads allocate too */
  memory_meter *meter;
  arena_chunk *chunks;
  size_t high_water; /* bytes requested by the largest run so far */
  size_t in_use;
  kiln_device *device; /* of a GPU model: where chunks are allocated */
} arena;

/* A bound state: output `output` of each run is input `input` of the
 * next; `data` and `shape` are the last run's. */
typedef struct state_binding {
  uint32_t output, input;
  void *data;
  int64_t *shape;
} state_binding;

/* Host memory of kiln_model_alloc_host: the device's page-locked memory,
 * or the C library's where it has none. */
typedef struct host_block {
  void *memory;
  int pinned; /* kiln_device_alloc_host's */
} host_block;

struct kiln_model {
  const kiln_model_info *info;
  int dynamic;
  int64_t *shapes;         /* sizes of every input, then of every output */
  /* kiln_model_run_tensors' buffers of a static model, per generation
   * (host blocks). */
  void **static_outputs[2];
  host_block *host_blocks; /* kiln_model_alloc_host's, not yet freed */
  size_t num_host_blocks;
  /* The intermediates of a run, and a dynamic model's outputs. With bound
   * states runs alternate between the two generations, so that the last
   * run's outputs stay intact while the next run reads them. */
  arena arenas[2];
  unsigned generation;
  state_binding *states;  /* kiln_model_bind_state */
  uint32_t num_states;
  int have_states;        /* a run since binding or reset left the states */
  kiln_device *device;   /* of a GPU model, NULL if it could not be opened */
  char device_error[512]; /* why not */
  void **staged;          /* a GPU model's inputs and outputs in device memory */
  /* Their bytes; of a dynamic model's outputs, the bytes the host read in
   * place after the last run (0: copied out, or none). */
  size_t *staged_bytes;
  /* A dynamic GPU model's outputs, copied to the host behind its kernels:
   * host blocks, kept for the next runs and grown to the largest. */
  void **output_copies;
  size_t *output_copy_bytes;
  /* Those only kernels use are copied straight from and to the caller's
   * buffers (KILN_GPU_DIRECT_COPIES=0: staged like the rest, to compare). */
  int direct_copies;
  int num_threads;
  kiln_pool *pool; /* started by the first run that needs it */
  memory_meter meter;
  kiln_profiler *profiler; /* while profiling (kiln_model_profile_start) */
  int profiling;
  /* A GPU model's profile: one kernel per kernel of its program, timed by
   * the device (no --profile instrumentation). */
  kiln_profile_info gpu_profile;
  kiln_profile_kernel *gpu_kernels;
  const kiln_cpu_variant *variant; /* of a model compiled for several CPUs */
  kiln_weights *weights;    /* of a model with external weights, once mapped */
  /* Why runs fail until it is mended: no CPU variant for this CPU, or no
   * weights for a model with external weights; "" when runs may go. */
  char cannot_run[512];
  char error[512];
};

static _Thread_local arena *current_arena;

/* The run in progress on this thread, for kiln_check_failed. */
typedef struct run_state {
  kiln_model *model;
  jmp_buf unwind;
} run_state;
static _Thread_local run_state *current_run;

static arena_chunk *chunk_new(arena *a, size_t size) {
  size_t bytes = (size + 63) & ~(size_t)63;
  arena_chunk *c = malloc(sizeof *c);
  if (!c)
    return NULL;
  c->data = a->device ? kiln_device_alloc(a->device, bytes ? bytes : 64)
                      : aligned_alloc(64, bytes ? bytes : 64);
  if (!c->data) {
    free(c);
    return NULL;
  }
  c->next = NULL;
  c->size = size;
  c->used = 0;
  meter_add(a->meter, &a->meter->arena, (int64_t)size);
  return c;
}

static void arena_release(arena *a) {
  while (a->chunks) {
    arena_chunk *next = a->chunks->next;
    meter_add(a->meter, &a->meter->arena, -(int64_t)a->chunks->size);
    if (a->device)
      kiln_device_free(a->device, a->chunks->data);
    else
      free(a->chunks->data);
    free(a->chunks);
    a->chunks = next;
  }
}

/* Start of a run: one block big enough for the largest run seen. */
static void arena_reset(arena *a) {
  if (a->chunks && (a->chunks->next || a->chunks->size < a->high_water)) {
    arena_release(a);
  }
  if (!a->chunks && a->high_water)
    a->chunks = chunk_new(a, a->high_water);
  for (arena_chunk *c = a->chunks; c; c = c->next)
    c->used = 0;
  a->in_use = 0;
}

static void *arena_alloc(arena *a, size_t size, size_t align) {
  if (align < 64)
    align = 64;
  size = (size + 63) & ~(size_t)63;
  for (arena_chunk *c = a->chunks; c; c = c->next) {
    /* Align the address, not the offset: chunks are only 64-byte aligned. */
    uintptr_t base = (uintptr_t)c->data;
    size_t start = (size_t)(((base + c->used + align - 1) & ~(uintptr_t)(align - 1)) - base);
    if (start + size <= c->size) {
      a->in_use += start + size - c->used;
      c->used = start + size;
      if (a->in_use > a->high_water)
        a->high_water = a->in_use;
      return c->data + start;
    }
  }
  size_t want = size + align;
  if (want < (1u << 20))
    want = 1u << 20;
  arena_chunk *c = chunk_new(a, want);
  if (!c)
    return NULL;
  c->next = a->chunks;
  a->chunks = c;
  return arena_alloc(a, size, align);
}

/* The arena of the run on this thread, for tasks on the pool's workers. */
void *kiln_task_environment(void) { return current_arena; }
void kiln_set_task_environment(void *environment) { current_arena = environment; }

static void *arena_alloc_locked(arena *a, size_t size, size_t align) {
  pthread_mutex_lock(&a->mutex);
  void *p = arena_alloc(a, size, align);
  pthread_mutex_unlock(&a->mutex);
  return p;
}

/* Allocation hooks called by generated code (MLIR's generic memref
 * allocation functions), on the running thread or a pool worker. Outside a
 * run they fall back to malloc. */
void *_mlir_memref_to_llvm_alloc(size_t size) {
  if (current_arena)
    return arena_alloc_locked(current_arena, size, 64);
  return malloc(size);
}

void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t size) {
  if (current_arena)
    return arena_alloc_locked(current_arena, size, alignment);
  return aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
}

void _mlir_memref_to_llvm_free(void *ptr) {
  if (!current_arena)
    free(ptr);
  /* Arena memory is reclaimed wholesale at the next run. */
}

static void set_error(kiln_model *m, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m->error, sizeof m->error, fmt, ap);
  va_end(ap);
}

kiln_model *kiln_model_create(const kiln_model_info *info) {
  return kiln_model_create_with_weights(info, NULL);
}

kiln_model *kiln_model_create_with_weights(const kiln_model_info *info,
                                           const char *weights_path) {
  if (!info || info->abi_version != KILN_ABI_VERSION)
    return NULL;
  char variant_error[512];
  const kiln_cpu_variant *variant =
      kiln_pick_cpu_variant(info, variant_error, sizeof variant_error);
  if (variant)
    info = variant->model;
  kiln_model *m = calloc(1, sizeof *m);
  if (!m)
    return NULL;
  m->info = info;
  m->variant = variant;
  for (int g = 0; g < 2; ++g) {
    m->arenas[g].meter = &m->meter;
    pthread_mutex_init(&m->arenas[g].mutex, NULL);
  }
  m->dynamic = kiln_model_info_is_dynamic(info);
  size_t dims = 1;
  for (uint32_t i = 0; i < info->num_inputs; ++i)
    dims += (size_t)info->inputs[i].rank;
  for (uint32_t i = 0; i < info->num_outputs; ++i)
    dims += (size_t)info->outputs[i].rank;
  m->shapes = calloc(dims, sizeof(int64_t));
  if (!m->shapes) {
    free(m);
    return NULL;
  }
  meter_add(&m->meter, &m->meter.runtime, (int64_t)(dims * sizeof(int64_t)));
  if (info->gpu) {
    m->device = kiln_device_open(info->gpu, m->device_error, sizeof m->device_error);
    m->arenas[0].device = m->arenas[1].device = m->device;
    size_t slots = (size_t)info->num_inputs + info->num_outputs + 1;
    const char *direct = getenv("KILN_GPU_DIRECT_COPIES");
    m->direct_copies = !(direct && strcmp(direct, "0") == 0);
    m->staged = calloc(slots, sizeof(void *));
    m->staged_bytes = calloc(slots, sizeof(size_t));
    m->output_copies = calloc(info->num_outputs + 1, sizeof(void *));
    m->output_copy_bytes = calloc(info->num_outputs + 1, sizeof(size_t));
    if (!m->staged || !m->staged_bytes || !m->output_copies || !m->output_copy_bytes) {
      kiln_model_destroy(m);
      return NULL;
    }
    if (!m->device)
      set_error(m, "%s", m->device_error);
  }
  /* The arena planned at compile time: runs never allocate it. */
  if (info->arena_bytes && (m->device || !info->gpu)) {
    m->arenas[0].high_water = m->arenas[1].high_water = info->arena_bytes;
    m->arenas[0].chunks = chunk_new(&m->arenas[0], info->arena_bytes);
    if (!m->arenas[0].chunks) {
      kiln_model_destroy(m);
      return NULL;
    }
  }
  if (info->external_weights) {
    char why[512];
    m->weights = weights_path
                     ? kiln_weights_open(weights_path, why, sizeof why)
                     : kiln_weights_open_beside_executable(info->external_weights->file_name,
                                                           why, sizeof why);
    if (m->weights && kiln_model_use_weights(m, m->weights) != 0) {
      snprintf(why, sizeof why, "%s", m->error);
      kiln_weights_close(m->weights);
      m->weights = NULL;
    }
    if (!m->weights)
      snprintf(m->cannot_run, sizeof m->cannot_run, "model '%s' has no weights: %s",
               info->name, why);
  }
  m->num_threads = kiln_default_num_threads();
  if (variant_error[0])
    snprintf(m->cannot_run, sizeof m->cannot_run, "%s", variant_error);
  if (m->cannot_run[0])
    set_error(m, "%s", m->cannot_run);
  return m;
}

const char *kiln_model_cpu_variant(const kiln_model *m) {
  return m->variant ? m->variant->cpu : NULL;
}

int kiln_model_use_weights(kiln_model *m, kiln_weights *weights) {
  const kiln_external_weights *expected = m->info->external_weights;
  m->error[0] = 0;
  if (!weights) {
    set_error(m, "kiln_model_use_weights: no weights given");
    return 1;
  }
  if (!expected) {
    set_error(m, "model '%s' has its weights in its code (compile it with "
                 "--weights=external to give it others)", m->info->name);
    return 1;
  }
  if (kiln_weights_fingerprint(weights) != expected->fingerprint ||
      kiln_weights_bytes(weights) != expected->bytes) {
    set_error(m, "%s: these weights were written for other code than model '%s' "
                 "(fingerprint %016llx, %llu bytes; the model reads %016llx, %llu bytes): "
                 "recompile, or repack them with kiln-compile --pack-weights",
              kiln_weights_path(weights), m->info->name,
              (unsigned long long)kiln_weights_fingerprint(weights),
              (unsigned long long)kiln_weights_bytes(weights),
              (unsigned long long)expected->fingerprint, (unsigned long long)expected->bytes);
    return 1;
  }
  if (weights != m->weights) {
    kiln_weights_open_again(weights);
    kiln_weights_close(m->weights);
    m->weights = weights;
  }
  m->cannot_run[0] = 0; /* weights were the only reason a model like this could lack */
  return 0;
}

/* Switches to weights just opened (or reports why they could not be). */
static int use_opened_weights(kiln_model *m, kiln_weights *weights, const char *error) {
  if (!weights) {
    set_error(m, "%s", error);
    return 1;
  }
  int failed = kiln_model_use_weights(m, weights);
  kiln_weights_close(weights);
  return failed;
}

int kiln_model_swap_weights(kiln_model *m, const char *path) {
  char error[512];
  return use_opened_weights(m, kiln_weights_open(path, error, sizeof error), error);
}

int kiln_model_swap_weights_buffer(kiln_model *m, const void *data, size_t size) {
  char error[512];
  return use_opened_weights(m, kiln_weights_open_buffer(data, size, error, sizeof error),
                            error);
}

const kiln_weights *kiln_model_weights(const kiln_model *m) { return m->weights; }

const void *kiln_run_weights(void) { return kiln_weights_data(current_run->model->weights); }

int kiln_model_info_is_dynamic(const kiln_model_info *info) {
  for (uint32_t i = 0; i < info->num_inputs + info->num_outputs; ++i) {
    const kiln_tensor_info *t =
        i < info->num_inputs ? &info->inputs[i] : &info->outputs[i - info->num_inputs];
    for (int32_t d = 0; d < t->rank; ++d)
      if (t->shape[d] < 0)
        return 1;
  }
  return 0;
}

int kiln_model_set_num_threads(kiln_model *m, int num_threads) {
  if (num_threads < 0 || num_threads > KILN_MAX_THREADS) {
    set_error(m, "thread count %d is outside 0..%d", num_threads, KILN_MAX_THREADS);
    return 1;
  }
  int wanted = num_threads ? num_threads : kiln_default_num_threads();
  if (wanted != m->num_threads) {
    kiln_pool_destroy(m->pool);
    m->pool = NULL;
    m->num_threads = wanted;
  }
  return 0;
}

int kiln_model_num_threads(const kiln_model *m) { return m->num_threads; }

/* Ends the run on this thread with "<what>: <message>" as its error. */
static void stop_run(const char *what, const char *message) {
  run_state *run = current_run;
  if (!run) {
    fprintf(stderr, "kiln: %s outside kiln_model_run: %s\n", what, message);
    abort();
  }
  set_error(run->model, "%s: %s", what, message);
  longjmp(run->unwind, 1);
}

void kiln_check_failed(const char *message) { stop_run("run-time check failed", message); }

/* The device of the GPU model running on this thread. */
static kiln_device *running_device(void) {
  kiln_device *device = current_run ? current_run->model->device : NULL;
  if (!device)
    stop_run("kiln_gpu_launch", "the running model has no GPU device");
  return device;
}

void kiln_gpu_launch(uint32_t kernel, int64_t grid_x, int64_t grid_y, int64_t grid_z,
                     const kiln_gpu_arg *args) {
  kiln_device *device = running_device();
  int64_t grid[3] = {grid_x, grid_y, grid_z};
  char message[480];
  if (kiln_device_launch(device, kernel, grid, args, message, sizeof message))
    stop_run("GPU launch failed", message);
}

void kiln_gpu_wait(void) {
  kiln_device *device = running_device();
  char message[480];
  if (kiln_device_wait(device, message, sizeof message))
    stop_run("GPU kernels failed", message);
}

const char *kiln_model_device(const kiln_model *m) {
  return m->device ? kiln_device_name(m->device) : NULL;
}

#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#define KILN_ARCH_REQ_XCOMP_PERM 0x1023
#define KILN_XFEATURE_XTILEDATA 18
#endif

static pthread_once_t amx_once = PTHREAD_ONCE_INIT;
static int amx_error; /* errno of the refused request, or 0 */

static void request_amx_once(void) {
#if defined(__x86_64__) && defined(__linux__)
  if (syscall(SYS_arch_prctl, KILN_ARCH_REQ_XCOMP_PERM, KILN_XFEATURE_XTILEDATA) != 0)
    amx_error = errno;
#else
  amx_error = ENOTSUP;
#endif
}

void kiln_request_amx(void) {
  pthread_once(&amx_once, request_amx_once);
  if (amx_error == 0)
    return;
  char message[256];
  snprintf(message, sizeof message,
           "this model uses AMX tiles, which the system did not enable (%s); compile it "
           "for a CPU without AMX, e.g. --mcpu=icelake-server",
           strerror(amx_error));
  kiln_check_failed(message);
}

/* Calls the generated entry; returns nonzero when a check failed. Kept apart
 * from kiln_model_run so that no local of that function lives across the
 * longjmp. */
static int run_entry(kiln_model *m, void **buffers, int64_t *shapes) {
  run_state run = {.model = m};
  run_state *saved = current_run;
  current_run = &run;
  if (setjmp(run.unwind) != 0) {
    current_run = saved;
    return 1;
  }
  m->info->entry(buffers, shapes);
  current_run = saved;
  return 0;
}

/* Bytes of input or output `i` (inputs first) of this run: its sizes are
 * in m->shapes for a dynamic model (outputs' after the run). */
static size_t tensor_bytes(const kiln_model *m, uint32_t i) {
  const kiln_model_info *info = m->info;
  const int64_t *dims = m->shapes;
  for (uint32_t j = 0; j < i; ++j)
    dims += j < info->num_inputs ? info->inputs[j].rank : info->outputs[j - info->num_inputs].rank;
  const kiln_tensor_info *t =
      i < info->num_inputs ? &info->inputs[i] : &info->outputs[i - info->num_inputs];
  size_t n = kiln_dtype_size(t->dtype);
  for (int32_t d = 0; d < t->rank; ++d)
    n *= (size_t)(m->dynamic ? dims[d] : t->shape[d]);
  return n;
}

/* Whether only kernels read and write buffer `i` (inputs, then outputs):
 * no host code of the model touches it. */
static int kernels_only(const kiln_model *m, uint32_t i) {
  const uint8_t *flags = m->info->gpu->buffer_flags;
  return m->direct_copies && flags && (flags[i] & KILN_GPU_BUFFER_KERNELS_ONLY);
}

/* Device memory for buffer `i` of `bytes`: the host's where host code of
 * the model touches it (an input's written from the host, an output's
 * read there), else memory only kernels and copies reach. */
static void *alloc_staged(kiln_model *m, uint32_t i, size_t bytes) {
  if (kernels_only(m, i))
    return kiln_device_alloc_private(m->device, bytes);
  return i < m->info->num_inputs ? kiln_device_alloc_input(m->device, bytes)
                                 : kiln_device_alloc(m->device, bytes);
}

/* A GPU model's kernels read and write device memory: its inputs are copied
 * there, and a static model's outputs are written there. */
static int stage_buffers(kiln_model *m, void **buffers) {
  const kiln_model_info *info = m->info;
  uint32_t slots = m->dynamic ? info->num_inputs : info->num_inputs + info->num_outputs;
  for (uint32_t i = 0; i < slots; ++i) {
    size_t bytes = tensor_bytes(m, i);
    if (m->staged_bytes[i] < bytes || !m->staged[i]) {
      if (m->staged[i])
        kiln_device_free(m->device, m->staged[i]);
      meter_add(&m->meter, &m->meter.runtime, -(int64_t)m->staged_bytes[i]);
      m->staged[i] = alloc_staged(m, i, bytes ? bytes : 1);
      m->staged_bytes[i] = m->staged[i] ? bytes : 0;
      meter_add(&m->meter, &m->meter.runtime, (int64_t)m->staged_bytes[i]);
      if (!m->staged[i]) {
        set_error(m, "out of device memory for %zu bytes of '%s'", bytes,
                  i < info->num_inputs ? info->inputs[i].name
                                       : info->outputs[i - info->num_inputs].name);
        return 1;
      }
    }
    if (i < info->num_inputs && kernels_only(m, i)) {
      kiln_device_copy_in(m->device, m->staged[i], buffers[i], bytes);
    } else if (i < info->num_inputs) {
      memcpy(m->staged[i], buffers[i], bytes);
      kiln_device_touched(m->device, m->staged[i], bytes);
    }
  }
  /* A dynamic model's last outputs that the host read in place are the
   * run's memory again: back to the GPU in bulk, not by the kernels'
   * faults. */
  for (uint32_t i = info->num_inputs; m->dynamic && i < info->num_inputs + info->num_outputs; ++i)
    if (m->staged[i] && m->staged_bytes[i])
      kiln_device_touched(m->device, m->staged[i], m->staged_bytes[i]);
  return 0;
}

/* After a GPU model's run: a static model's outputs are in the caller's
 * buffers (those only kernels write, copied there by the wait) or copied
 * there now; a dynamic model's are where announce_dynamic_output put them. */
static void unstage_outputs(kiln_model *m, void **buffers) {
  const kiln_model_info *info = m->info;
  if (m->dynamic)
    return;
  for (uint32_t i = info->num_inputs; i < info->num_inputs + info->num_outputs; ++i) {
    if (!kernels_only(m, i)) {
      memcpy(buffers[i], m->staged[i], tensor_bytes(m, i));
      kiln_device_touched(m->device, m->staged[i], tensor_bytes(m, i));
    }
  }
}

static void free_host_block(kiln_model *m, void *memory);

/* Host memory for `bytes` of a dynamic GPU model's output `o`, the last
 * run's if it is large enough; NULL when out of memory. */
static void *output_copy(kiln_model *m, uint32_t o, size_t bytes) {
  if (m->output_copies[o] && m->output_copy_bytes[o] >= bytes)
    return m->output_copies[o];
  free_host_block(m, m->output_copies[o]);
  meter_add(&m->meter, &m->meter.runtime, -(int64_t)m->output_copy_bytes[o]);
  m->output_copies[o] = kiln_model_alloc_host(m, bytes);
  m->output_copy_bytes[o] = m->output_copies[o] ? bytes : 0;
  meter_add(&m->meter, &m->meter.runtime, (int64_t)m->output_copy_bytes[o]);
  return m->output_copies[o];
}

/* A dynamic model's output `i` (inputs first) is where the entry left it,
 * of the size it wrote, in memory the model's host code reached. Where the
 * host reads that by copies (CUDA: device memory, or managed memory that
 * would move), it is copied behind the kernels into host memory of the
 * instance, and the caller gets that; else the caller reads it in place. */
static int announce_dynamic_output(kiln_model *m, uint32_t i, void **buffers) {
  size_t bytes = tensor_bytes(m, i);
  m->staged_bytes[i] = 0;
  buffers[i] = m->staged[i];
  if (!bytes || !m->direct_copies || !kiln_device_read_by_copy(m->device, m->staged[i], bytes)) {
    kiln_device_will_touch(m->device, m->staged[i], bytes);
    m->staged_bytes[i] = bytes;
    return 0;
  }
  const char *name = m->info->outputs[i - m->info->num_inputs].name;
  void *copy = output_copy(m, i - m->info->num_inputs, bytes);
  if (!copy || kiln_device_copy_out(m->device, copy, m->staged[i], bytes)) {
    set_error(m, "out of memory for the host's copy of output '%s' (%zu bytes)", name, bytes);
    return 1;
  }
  buffers[i] = copy;
  return 0;
}

/* Before a GPU model's last wait: the host reads the outputs next (a
 * static model's staged ones, copied out; a dynamic model's from the run's
 * memory, where the entry left them); those only kernels write are copied
 * straight into the caller's buffers, behind the kernels. */
static int announce_host_copies(kiln_model *m, void **buffers) {
  const kiln_model_info *info = m->info;
  for (uint32_t i = info->num_inputs; i < info->num_inputs + info->num_outputs; ++i) {
    if (m->dynamic) {
      if (announce_dynamic_output(m, i, buffers))
        return 1;
    } else if (!kernels_only(m, i)) {
      kiln_device_will_touch(m->device, m->staged[i], tensor_bytes(m, i));
    } else if (kiln_device_copy_out(m->device, buffers[i], m->staged[i], tensor_bytes(m, i))) {
      set_error(m, "out of memory queueing the copy of output '%s'",
                info->outputs[i - info->num_inputs].name);
      return 1;
    }
  }
  return 0;
}

/* Runs the entry on `buffers` (inputs, then outputs or output slots) with
 * the instance's arena and threads. */
static int run_buffers(kiln_model *m, void **buffers) {
  if (m->cannot_run[0]) {
    set_error(m, "%s", m->cannot_run);
    return 1;
  }
  if (m->info->gpu && !m->device) {
    set_error(m, "%s", m->device_error);
    return 1;
  }
  if (m->device && stage_buffers(m, buffers)) {
    /* The inputs' copies already queued read the caller's buffers. */
    char ignored[64];
    kiln_device_wait(m->device, ignored, sizeof ignored);
    return 1;
  }
  if (m->num_threads > 1 && !m->pool)
    m->pool = kiln_pool_create(m->num_threads); /* NULL (no memory): run serially */
  arena *run_arena = &m->arenas[m->generation];
  arena_reset(run_arena);
  arena *saved = current_arena;
  current_arena = run_arena;
  kiln_pool *saved_pool = kiln_pool_enter(m->pool);
  kiln_profiler *saved_profiler = kiln_profiler_enter(m->profiling ? m->profiler : NULL);
  if (m->profiling)
    kiln_profiler_run_begin(m->profiler);
  int failed = run_entry(m, m->device ? m->staged : buffers, m->shapes);
  kiln_profiler_enter(saved_profiler);
  kiln_pool_enter(saved_pool);
  current_arena = saved;
  if (m->device) {
    char message[480];
    if (!failed && announce_host_copies(m, buffers)) {
      kiln_device_cancel_copies_out(m->device);
      failed = 1;
    }
    if (kiln_device_wait(m->device, message, sizeof message) && !failed) {
      set_error(m, "GPU kernels failed: %s", message);
      failed = 1;
    }
    if (!failed)
      unstage_outputs(m, buffers);
  }
  if (m->profiling) /* a GPU model's run ends after its kernels */
    kiln_profiler_run_end(m->profiler);
  return failed;
}

/* An array of `count` pointers, on the stack when small. */
#define POINTERS(name, count)                                                  \
  void *name##_stack[64];                                                      \
  void **name = (count) <= 64 ? name##_stack : malloc((count) * sizeof(void *))

int kiln_model_run(kiln_model *m, const void *const *inputs, void *const *outputs) {
  const kiln_model_info *info = m->info;
  m->error[0] = 0;
  if (m->dynamic || m->num_states) {
    set_error(m, m->dynamic ? "model '%s' has dynamic dimensions; run it with "
                              "kiln_model_run_tensors"
                            : "model '%s' has bound states; run it with kiln_model_run_tensors",
              info->name);
    return 1;
  }
  for (uint32_t i = 0; i < info->num_inputs; ++i)
    if (!inputs[i]) {
      set_error(m, "input %u ('%s') is NULL", i, info->inputs[i].name);
      return 1;
    }
  for (uint32_t i = 0; i < info->num_outputs; ++i)
    if (!outputs[i]) {
      set_error(m, "output %u ('%s') is NULL", i, info->outputs[i].name);
      return 1;
    }
  size_t count = (size_t)info->num_inputs + info->num_outputs;
  POINTERS(buffers, count);
  if (!buffers) {
    set_error(m, "out of memory");
    return 1;
  }
  for (uint32_t i = 0; i < info->num_inputs; ++i)
    buffers[i] = (void *)(uintptr_t)inputs[i]; /* generated code only reads inputs */
  for (uint32_t i = 0; i < info->num_outputs; ++i)
    buffers[info->num_inputs + i] = outputs[i];
  int failed = run_buffers(m, buffers);
  if (buffers != buffers_stack)
    free(buffers);
  return failed;
}

/* Checks the inputs against their descriptors and against each other (one
 * size per dimension name); copies their sizes into m->shapes. */
static int check_inputs(kiln_model *m, const kiln_tensor *inputs) {
  const kiln_model_info *info = m->info;
  int64_t *at = m->shapes;
  for (uint32_t i = 0; i < info->num_inputs; ++i) {
    const kiln_tensor_info *t = &info->inputs[i];
    const kiln_tensor *in = &inputs[i];
    if (!in->data || (in->rank > 0 && !in->shape)) {
      set_error(m, "input %u ('%s') has no data or no shape", i, t->name);
      return 1;
    }
    if (kiln_check_tensor(t, in->dtype, in->rank, in->shape, m->error, sizeof m->error))
      return 1;
    for (int32_t d = 0; d < t->rank; ++d) {
      const char *name = t->dim_names ? t->dim_names[d] : NULL;
      for (uint32_t j = 0; name && j < i; ++j)
        for (int32_t e = 0; info->inputs[j].dim_names && e < info->inputs[j].rank; ++e) {
          const char *other = info->inputs[j].dim_names[e];
          if (other && !strcmp(name, other) && inputs[j].shape[e] != in->shape[d]) {
            set_error(m, "dimension '%s' is %lld in input '%s' but %lld in input '%s'", name,
                      (long long)inputs[j].shape[e], info->inputs[j].name,
                      (long long)in->shape[d], t->name);
            return 1;
          }
        }
      *at++ = in->shape[d];
    }
  }
  return 0;
}

/* The buffers of a static model's outputs for kiln_model_run_tensors, in
 * the current generation; NULL when out of memory. */
static void **static_outputs(kiln_model *m) {
  const kiln_model_info *info = m->info;
  void ***set = &m->static_outputs[m->generation];
  if (*set)
    return *set;
  void **outputs = calloc(info->num_outputs + 1, sizeof(void *));
  int64_t total = 0;
  for (uint32_t i = 0; outputs && i < info->num_outputs; ++i) {
    size_t bytes =
        kiln_tensor_num_elements(&info->outputs[i]) * kiln_dtype_size(info->outputs[i].dtype);
    size_t padded = (bytes + 63) / 64 * 64 + 64;
    outputs[i] = kiln_model_alloc_host(m, padded);
    if (!outputs[i]) { /* all or none: the next run tries again */
      for (uint32_t j = 0; j < i; ++j)
        kiln_model_free_host(m, outputs[j]);
      free(outputs);
      return NULL;
    }
    total += (int64_t)padded;
  }
  if (outputs)
    meter_add(&m->meter, &m->meter.runtime, total);
  return *set = outputs;
}

/* Whether `memory` is one of kiln_model_run_tensors' outputs (a static
 * model's, or a dynamic GPU model's host copies), which the instance keeps
 * for its next runs. */
static int is_run_output(const kiln_model *m, const void *memory) {
  for (int g = 0; g < 2; ++g)
    for (uint32_t i = 0; m->static_outputs[g] && i < m->info->num_outputs; ++i)
      if (m->static_outputs[g][i] == memory)
        return 1;
  for (uint32_t i = 0; m->output_copies && i < m->info->num_outputs; ++i)
    if (m->output_copies[i] == memory)
      return 1;
  return 0;
}

/* The inputs of this run: the caller's, with the last run's states in the
 * slots they are bound to. */
static const kiln_tensor *with_states(kiln_model *m, const kiln_tensor *inputs,
                                      kiln_tensor *merged) {
  if (!m->have_states)
    return inputs;
  memcpy(merged, inputs, m->info->num_inputs * sizeof *merged);
  for (uint32_t i = 0; i < m->num_states; ++i) {
    const state_binding *b = &m->states[i];
    const kiln_tensor_info *t = &m->info->inputs[b->input];
    merged[b->input] = (kiln_tensor){b->data, t->dtype, t->rank, b->shape};
  }
  return merged;
}

int kiln_model_run_tensors(kiln_model *m, const kiln_tensor *inputs, kiln_tensor *outputs) {
  const kiln_model_info *info = m->info;
  m->error[0] = 0;
  /* With states, the inputs with the states in (on the stack when few). */
  kiln_tensor merged_stack[16];
  kiln_tensor *merged = !m->have_states || info->num_inputs <= 16
                            ? merged_stack
                            : malloc(info->num_inputs * sizeof *merged);
  if (!merged) {
    set_error(m, "out of memory");
    return 1;
  }
  inputs = with_states(m, inputs, merged);
  int failed = check_inputs(m, inputs);
  /* States: this run writes the other generation than the last one's. */
  if (m->num_states)
    m->generation ^= 1;
  void **outputs_of_static = failed || m->dynamic ? NULL : static_outputs(m);
  size_t count = (size_t)info->num_inputs + info->num_outputs;
  POINTERS(buffers, count);
  if (!failed && (!buffers || (!m->dynamic && !outputs_of_static))) {
    set_error(m, "out of memory");
    failed = 1;
  }
  if (!failed) {
    for (uint32_t i = 0; i < info->num_inputs; ++i)
      buffers[i] = inputs[i].data;
    int64_t *output_shapes = m->shapes;
    for (uint32_t i = 0; i < info->num_inputs; ++i)
      output_shapes += info->inputs[i].rank;
    int64_t *at = output_shapes;
    for (uint32_t i = 0; i < info->num_outputs; ++i) {
      buffers[info->num_inputs + i] = m->dynamic ? NULL : outputs_of_static[i];
      for (int32_t d = 0; d < info->outputs[i].rank; ++d)
        *at++ = info->outputs[i].shape[d]; /* dynamic models overwrite these */
    }
    failed = run_buffers(m, buffers);
    at = output_shapes;
    for (uint32_t i = 0; !failed && i < info->num_outputs; ++i) {
      outputs[i].data = buffers[info->num_inputs + i];
      outputs[i].dtype = info->outputs[i].dtype;
      outputs[i].rank = info->outputs[i].rank;
      outputs[i].shape = at;
      at += info->outputs[i].rank;
    }
  }
  if (m->num_states && failed)
    m->generation ^= 1; /* the last states stay where they are, unread */
  for (uint32_t i = 0; m->num_states && !failed && i < m->num_states; ++i) {
    state_binding *b = &m->states[i];
    b->data = outputs[b->output].data;
    memcpy(b->shape, outputs[b->output].shape, outputs[b->output].rank * sizeof(int64_t));
  }
  if (m->num_states && !failed)
    m->have_states = 1;
  if (buffers && buffers != buffers_stack)
    free(buffers);
  if (merged != merged_stack)
    free(merged);
  return failed;
}

static void format_shape(char *buf, size_t size, int32_t rank, const int64_t *shape);

static int find_tensor(const kiln_tensor_info *tensors, uint32_t count, const char *name) {
  for (uint32_t i = 0; i < count; ++i)
    if (strcmp(tensors[i].name, name) == 0)
      return (int)i;
  return -1;
}

int kiln_model_bind_state(kiln_model *m, const char *output, const char *input) {
  const kiln_model_info *info = m->info;
  m->error[0] = 0;
  int out = find_tensor(info->outputs, info->num_outputs, output);
  int in = find_tensor(info->inputs, info->num_inputs, input);
  if (out < 0 || in < 0) {
    set_error(m, "model '%s' has no %s '%s'", info->name, out < 0 ? "output" : "input",
              out < 0 ? output : input);
    return 1;
  }
  const kiln_tensor_info *o = &info->outputs[out], *i = &info->inputs[in];
  int fits = o->dtype == i->dtype && o->rank == i->rank;
  for (int32_t d = 0; fits && d < o->rank; ++d)
    fits = o->shape[d] < 0 || i->shape[d] < 0 || o->shape[d] == i->shape[d];
  if (!fits) {
    char os[128], is[128];
    format_shape(os, sizeof os, o->rank, o->shape);
    format_shape(is, sizeof is, i->rank, i->shape);
    set_error(m, "output '%s' (%s %s) cannot be input '%s' (%s %s)", output,
              kiln_dtype_name(o->dtype), os, input, kiln_dtype_name(i->dtype), is);
    return 1;
  }
  for (uint32_t k = 0; k < m->num_states; ++k)
    if (m->states[k].input == (uint32_t)in) {
      set_error(m, "input '%s' is bound to output '%s' already", input,
                info->outputs[m->states[k].output].name);
      return 1;
    }
  if (info->gpu) {
    set_error(m, "states are bound on CPU models; model '%s' runs on a GPU", info->name);
    return 1;
  }
  state_binding *grown = realloc(m->states, (m->num_states + 1) * sizeof *grown);
  int64_t *shape = calloc((size_t)i->rank + 1, sizeof(int64_t));
  if (!grown || !shape) {
    if (grown)
      m->states = grown;
    free(shape);
    set_error(m, "out of memory");
    return 1;
  }
  m->states = grown;
  m->states[m->num_states++] = (state_binding){(uint32_t)out, (uint32_t)in, NULL, shape};
  m->have_states = 0;
  return 0;
}

void kiln_model_reset_states(kiln_model *m) { m->have_states = 0; }

void *kiln_model_alloc_host(kiln_model *m, size_t bytes) {
  if (bytes > SIZE_MAX - 64)
    return NULL;
  host_block *blocks = realloc(m->host_blocks, (m->num_host_blocks + 1) * sizeof *blocks);
  if (!blocks)
    return NULL;
  m->host_blocks = blocks;
  host_block b = {m->device ? kiln_device_alloc_host(m->device, bytes) : NULL, 1};
  if (!b.memory)
    b = (host_block){aligned_alloc(64, (bytes + 63) / 64 * 64 + (bytes ? 0 : 64)), 0};
  if (b.memory)
    m->host_blocks[m->num_host_blocks++] = b;
  return b.memory;
}

static void release_host_block(kiln_model *m, const host_block *b) {
  if (b->pinned)
    kiln_device_free(m->device, b->memory);
  else
    free(b->memory);
}

void kiln_model_free_host(kiln_model *m, void *memory) {
  if (!is_run_output(m, memory)) /* those are the instance's own, not the caller's */
    free_host_block(m, memory);
}

static void free_host_block(kiln_model *m, void *memory) {
  for (size_t i = 0; memory && i < m->num_host_blocks; ++i)
    if (m->host_blocks[i].memory == memory) {
      release_host_block(m, &m->host_blocks[i]);
      m->host_blocks[i] = m->host_blocks[--m->num_host_blocks];
      return;
    }
}

void kiln_model_destroy(kiln_model *m) {
  if (!m)
    return;
  for (int g = 0; g < 2; ++g) {
    arena_release(&m->arenas[g]);
    pthread_mutex_destroy(&m->arenas[g].mutex);
  }
  for (size_t i = 0; i < m->num_host_blocks; ++i) /* before the device they may be of */
    release_host_block(m, &m->host_blocks[i]);
  free(m->host_blocks);
  kiln_device_close(m->device); /* frees the staged buffers too */
  free(m->staged);
  free(m->staged_bytes);
  free(m->output_copies); /* host blocks */
  free(m->output_copy_bytes);
  kiln_pool_destroy(m->pool);
  kiln_profiler_free(m->profiler);
  free(m->gpu_kernels);
  kiln_weights_close(m->weights);
  for (int g = 0; g < 2; ++g) /* their buffers were host blocks */
    free(m->static_outputs[g]);
  for (uint32_t i = 0; i < m->num_states; ++i)
    free(m->states[i].shape);
  free(m->states);
  free(m->shapes);
  free(m);
}

const kiln_model_info *kiln_model_get_info(const kiln_model *m) { return m->info; }
const char *kiln_model_error(const kiln_model *m) { return m->error; }
size_t kiln_model_arena_bytes(const kiln_model *m) {
  return m->arenas[m->generation].high_water;
}

void kiln_model_memory(const kiln_model *m, kiln_memory_stats *stats) {
  stats->arena = m->meter.arena;
  stats->runtime = m->meter.runtime;
  stats->weights = m->weights ? kiln_weights_bytes(m->weights) : m->info->weights_bytes;
  stats->peak = m->meter.peak + stats->weights;
}

/* The kernels a profile of `m` times: those kiln-compile --profile
 * bracketed, or a GPU model's (made now); NULL with the error set. */
static const kiln_profile_info *profile_info(kiln_model *m) {
  if (m->info->profile)
    return m->info->profile;
  if (!m->info->gpu) {
    set_error(m, "model '%s' was compiled without --profile: it has no kernel timings",
              m->info->name);
    return NULL;
  }
  if (!m->device) {
    set_error(m, "%s", m->device_error);
    return NULL;
  }
  if (!m->gpu_kernels) {
    const kiln_gpu_program *program = m->info->gpu;
    m->gpu_kernels = calloc(program->num_kernels + 1, sizeof *m->gpu_kernels);
    if (!m->gpu_kernels) {
      set_error(m, "out of memory");
      return NULL;
    }
    for (uint32_t i = 0; i < program->num_kernels; ++i)
      m->gpu_kernels[i].name = program->kernels[i].name; /* flops unknown; bytes as they run */
    m->gpu_profile = (kiln_profile_info){program->num_kernels, m->gpu_kernels};
  }
  return &m->gpu_profile;
}

int kiln_model_profile_start(kiln_model *m) {
  const kiln_profile_info *info = profile_info(m);
  if (!info)
    return 1;
  if (!m->profiler)
    m->profiler = kiln_profiler_new(info);
  if (!m->profiler) {
    set_error(m, "out of memory");
    return 1;
  }
  if (m->device && kiln_device_profile(m->device, m->profiler)) {
    kiln_profiler_free(m->profiler);
    m->profiler = NULL;
    set_error(m, "model '%s' runs on %s, whose kernels kiln does not time (it times CUDA's)",
              m->info->name, kiln_device_name(m->device));
    return 1;
  }
  kiln_profiler_clear(m->profiler);
  m->profiling = 1;
  return 0;
}

void kiln_model_profile_stop(kiln_model *m) {
  m->profiling = 0;
  if (m->device)
    kiln_device_profile(m->device, NULL);
}

/* 0 when the instance has a recording; else sets the error. */
static int check_profiled(kiln_model *m) {
  if (m->profiler)
    return 0;
  set_error(m, "nothing was recorded: call kiln_model_profile_start first%s",
            m->info->profile || m->info->gpu ? "" : " (and compile the model with --profile)");
  return 1;
}

int kiln_model_profile_summary(kiln_model *m, kiln_profile_summary *summary) {
  if (check_profiled(m))
    return 1;
  kiln_profiler_summary(m->profiler, summary);
  return 0;
}

int kiln_model_profile_kernel(kiln_model *m, uint32_t index, kiln_profile_entry *entry) {
  if (check_profiled(m))
    return 1;
  uint32_t count = profile_info(m)->num_kernels; /* made by kiln_model_profile_start */
  if (index >= count) {
    set_error(m, "kernel %u is outside the model's %u", index, count);
    return 1;
  }
  kiln_profiler_kernel_entry(m->profiler, index, entry);
  return 0;
}

int kiln_model_profile_write_trace(kiln_model *m, const char *path) {
  if (check_profiled(m))
    return 1;
  FILE *out = fopen(path, "w");
  if (!out) {
    set_error(m, "cannot write the trace '%s': %s", path, strerror(errno));
    return 1;
  }
  int failed = kiln_profiler_write_trace(m->profiler, m->info->name, out);
  if (fclose(out) != 0 || failed) {
    set_error(m, "cannot write the trace '%s': %s", path, strerror(errno));
    return 1;
  }
  return 0;
}

size_t kiln_dtype_size(int32_t dtype) {
  switch (dtype) {
  case KILN_FLOAT32: case KILN_INT32: case KILN_UINT32: return 4;
  case KILN_FLOAT64: case KILN_INT64: case KILN_UINT64: return 8;
  case KILN_FLOAT16: case KILN_BFLOAT16: case KILN_INT16: case KILN_UINT16: return 2;
  case KILN_INT8: case KILN_UINT8: case KILN_BOOL: return 1;
  default: return 0;
  }
}

const char *kiln_dtype_name(int32_t dtype) {
  switch (dtype) {
  case KILN_FLOAT32: return "float32";
  case KILN_FLOAT64: return "float64";
  case KILN_FLOAT16: return "float16";
  case KILN_BFLOAT16: return "bfloat16";
  case KILN_INT8: return "int8";
  case KILN_INT16: return "int16";
  case KILN_INT32: return "int32";
  case KILN_INT64: return "int64";
  case KILN_UINT8: return "uint8";
  case KILN_UINT16: return "uint16";
  case KILN_UINT32: return "uint32";
  case KILN_UINT64: return "uint64";
  case KILN_BOOL: return "bool";
  default: return "unknown";
  }
}

size_t kiln_tensor_num_elements(const kiln_tensor_info *t) {
  size_t n = 1;
  for (int32_t i = 0; i < t->rank; ++i)
    n *= t->shape[i] < 0 ? 0 : (size_t)t->shape[i];
  return n;
}

static void format_shape(char *buf, size_t size, int32_t rank, const int64_t *shape) {
  size_t used = (size_t)snprintf(buf, size, "[");
  for (int32_t i = 0; i < rank && used < size; ++i)
    used += shape[i] < 0 ? (size_t)snprintf(buf + used, size - used, i ? ",?" : "?")
                         : (size_t)snprintf(buf + used, size - used, i ? ",%lld" : "%lld",
                                            (long long)shape[i]);
  if (used < size)
    snprintf(buf + used, size - used, "]");
}

int kiln_check_tensor(const kiln_tensor_info *t, int32_t dtype, int32_t rank,
                      const int64_t *shape, char *msg, size_t size) {
  if (dtype != t->dtype) {
    snprintf(msg, size, "input '%s' must be %s, got %s", t->name, kiln_dtype_name(t->dtype),
             kiln_dtype_name(dtype));
    return 1;
  }
  int same = rank == t->rank;
  for (int32_t i = 0; same && i < rank; ++i)
    same = shape[i] == t->shape[i] || (t->shape[i] < 0 && shape[i] >= 0);
  if (!same) {
    char want[128], got[128];
    format_shape(want, sizeof want, t->rank, t->shape);
    format_shape(got, sizeof got, rank, shape);
    snprintf(msg, size, "input '%s' must have shape %s, got %s", t->name, want, got);
    return 1;
  }
  return 0;
}
