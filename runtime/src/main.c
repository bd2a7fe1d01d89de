/*===- main.c - command-line driver linked into compiled executables ------===*/
#define _POSIX_C_SOURCE 200809L
#include "kiln/runtime.h"
#include "npy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

extern const kiln_model_info kiln_main_model;

static const char *prog;

/* "name dtype [N, 3, 224, 224]": a dynamic dimension shows its name, or '?'. */
static void print_tensor(FILE *out, const kiln_tensor_info *t, const int64_t *shape) {
  fprintf(out, "  %-24s %-8s [", t->name, kiln_dtype_name(t->dtype));
  for (int32_t i = 0; i < t->rank; ++i) {
    const char *name = t->dim_names ? t->dim_names[i] : NULL;
    if (i)
      fprintf(out, ", ");
    if (shape[i] >= 0)
      fprintf(out, "%lld", (long long)shape[i]);
    else
      fprintf(out, "%s", name ? name : "?");
  }
  fprintf(out, "]\n");
}

static void usage(FILE *out) {
  const kiln_model_info *info = &kiln_main_model;
  fprintf(out,
          "usage: %s [--input NAME=FILE.npy]... [FILE.npy]... [--output-dir DIR]\n"
          "       %s --bench N [--threads T] [--input NAME=FILE.npy]...\n\n"
          "Runs the compiled model '%s' (kiln ABI %u).\n\n"
          "  --input NAME=FILE.npy  value of input NAME (inputs may also be given\n"
          "                         positionally, in the order listed below)\n"
          "  --output-dir DIR       write DIR/<output>.npy per output (characters\n"
          "                         outside [A-Za-z0-9_.-] in names become '_');\n"
          "                         without it, outputs are summarized on stdout.\n"
          "                         .npy has no bfloat16: such tensors are read and\n"
          "                         written as uint16 bit patterns\n"
          "  --bench N              time N runs after a warm-up and print p50/p90/p99\n"
          "                         latency in milliseconds; inputs not given are\n"
          "                         random (inputs with dynamic dimensions must be\n"
          "                         given)\n"
          "  --threads T            threads per inference (default: KILN_NUM_THREADS\n"
          "                         when set, else every CPU this process may use)\n"
          "  --help                 this text\n\nInputs:\n",
          prog, prog, info->name, info->abi_version);
  for (uint32_t i = 0; i < info->num_inputs; ++i)
    print_tensor(out, &info->inputs[i], info->inputs[i].shape);
  fprintf(out, "Outputs:\n");
  for (uint32_t i = 0; i < info->num_outputs; ++i)
    print_tensor(out, &info->outputs[i], info->outputs[i].shape);
  if (info->gpu && info->gpu->api == KILN_GPU_METAL)
    fprintf(out, "Device: its %u kernels run on the Metal device (the system's default)\n",
            info->gpu->num_kernels);
  else if (info->gpu && info->gpu->api == KILN_GPU_CUDA)
    fprintf(out, "Device: its %u kernels run on an NVIDIA GPU (KILN_CUDA_DEVICE=N picks the "
                 "N-th; by default the first)\n",
            info->gpu->num_kernels);
  else if (info->gpu)
    fprintf(out, "Device: its %u kernels run on a Vulkan device (KILN_VULKAN_DEVICE=N picks "
                 "the N-th; by default the first discrete GPU, else integrated, else any)\n",
            info->gpu->num_kernels);
  if (kiln_model_info_is_dynamic(info))
    fprintf(out, "Named or '?' dimensions take their size from the input files.\n");
}

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

static int fail(const char *fmt, const char *arg) {
  fprintf(stderr, "%s: error: ", prog);
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n");
  return 1;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int input_index(const char *name) {
  for (uint32_t i = 0; i < kiln_main_model.num_inputs; ++i)
    if (strcmp(kiln_main_model.inputs[i].name, name) == 0)
      return (int)i;
  return -1;
}

static void sanitize(char *s) {
  for (; *s; ++s)
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
          *s == '_' || *s == '.' || *s == '-'))
      *s = '_';
}

/* Random values for a static input (floats in [0, 1); integers 0, which is
 * always a valid index). */
static void *random_input(const kiln_tensor_info *t, unsigned *seed) {
  size_t n = kiln_tensor_num_elements(t), bytes = n * kiln_dtype_size(t->dtype);
  void *data = calloc(1, bytes ? bytes : 1);
  for (size_t i = 0; data && i < n; ++i) {
    *seed = *seed * 1103515245u + 12345u;
    double u = (double)((*seed >> 8) & 0xffff) / 65536.0;
    switch (t->dtype) {
    case KILN_FLOAT32: ((float *)data)[i] = (float)u; break;
    case KILN_FLOAT64: ((double *)data)[i] = u; break;
    default: break;
    }
  }
  return data;
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int bench(kiln_model *model, long runs, const kiln_tensor *in) {
  const kiln_model_info *info = &kiln_main_model;
  kiln_tensor *out = calloc(info->num_outputs + 1, sizeof(kiln_tensor));
  long warmup = runs / 10 > 1 ? runs / 10 : 1;
  for (long i = 0; i < warmup; ++i)
    if (kiln_model_run_tensors(model, in, out)) {
      free(out);
      return fail("%s", kiln_model_error(model));
    }
  double *times = malloc((size_t)runs * sizeof(double)), total = 0;
  for (long i = 0; i < runs; ++i) {
    double t0 = now_ms();
    kiln_model_run_tensors(model, in, out);
    times[i] = now_ms() - t0;
    total += times[i];
  }
  qsort(times, (size_t)runs, sizeof(double), compare_double);
#define PCT(p) times[(size_t)((runs - 1) * (p) / 100.0 + 0.5)]
  int threads = kiln_model_num_threads(model);
  printf("%s: %ld runs, %d thread%s, arena %zu bytes\n", info->name, runs, threads,
         threads == 1 ? "" : "s", kiln_model_arena_bytes(model));
  if (kiln_model_device(model))
    printf("device: %s\n", kiln_model_device(model));
  printf("latency ms: p50=%.4f p90=%.4f p99=%.4f min=%.4f mean=%.4f\n", PCT(50), PCT(90),
         PCT(99), times[0], total / runs);
  free(times);
  free(out);
  return 0;
}

static void summarize(const kiln_tensor_info *t, const kiln_tensor *value) {
  print_tensor(stdout, t, value->shape);
  size_t n = 1;
  for (int32_t i = 0; i < value->rank; ++i)
    n *= (size_t)value->shape[i];
  size_t shown = n < 16 ? n : 16;
  const void *data = value->data;
  printf("    values:");
  for (size_t i = 0; i < shown; ++i) {
    switch (t->dtype) {
    case KILN_FLOAT32: printf(" %.6g", ((const float *)data)[i]); break;
    case KILN_FLOAT64: printf(" %.6g", ((const double *)data)[i]); break;
    case KILN_INT64: printf(" %lld", (long long)((const int64_t *)data)[i]); break;
    case KILN_INT32: printf(" %d", ((const int32_t *)data)[i]); break;
    default: printf(" ?"); break;
    }
  }
  printf(n > shown ? " ...\n" : "\n");
}

/* What the command line asks for. */
typedef struct {
  const char **paths; /* per input; NULL where none was given */
  const char *output_dir;
  long bench_runs, threads;
} options;

/* 0 to run, 1 after an error, -1 after --help. */
static int parse_args(int argc, char **argv, options *o) {
  const kiln_model_info *info = &kiln_main_model;
  uint32_t positional = 0;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    int has_value = i + 1 < argc;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return -1;
    } else if (!strcmp(a, "--input") && has_value) {
      const char *spec = argv[++i], *eq = strchr(spec, '=');
      if (!eq)
        return fail("--input expects NAME=FILE.npy, got '%s'", spec);
      char name[256];
      snprintf(name, sizeof name, "%.*s", (int)(eq - spec), spec);
      int idx = input_index(name);
      if (idx < 0)
        return fail("the model has no input named '%s' (see --help)", name);
      o->paths[idx] = eq + 1;
    } else if (!strcmp(a, "--output-dir") && has_value) {
      o->output_dir = argv[++i];
    } else if (!strcmp(a, "--bench") && has_value) {
      o->bench_runs = strtol(argv[++i], NULL, 10);
      if (o->bench_runs < 1)
        return fail("--bench expects a positive run count, got '%s'", argv[i]);
    } else if (!strcmp(a, "--threads") && has_value) {
      char *end;
      o->threads = strtol(argv[++i], &end, 10);
      if (*end || o->threads < 1 || o->threads > KILN_MAX_THREADS)
        return fail("--threads expects a count from 1 to " STRINGIFY(KILN_MAX_THREADS) ", got '%s'",
                    argv[i]);
    } else if (a[0] == '-' && a[1] == '-') {
      return fail("unknown or incomplete option '%s' (see --help)", a);
    } else {
      if (positional >= info->num_inputs)
        return fail("too many positional inputs at '%s'", a);
      o->paths[positional++] = a;
    }
  }
  return 0;
}

/* Fills `in` (from .npy files read into `arrays`, or random for a
 * benchmark), then benchmarks the model or runs it once and writes or
 * prints its outputs. */
static int run(const options *o, kiln_model *model, kiln_tensor *in, kiln_npy *arrays) {
  const kiln_model_info *info = &kiln_main_model;
  if (kiln_model_set_num_threads(model, (int)o->threads))
    return fail("%s", kiln_model_error(model));
  char msg[512];
  unsigned seed = 42;
  for (uint32_t i = 0; i < info->num_inputs; ++i) {
    const kiln_tensor_info *t = &info->inputs[i];
    if (!o->paths[i]) {
      if (!o->bench_runs)
        return fail("missing input '%s' (give --input NAME=FILE.npy; see --help)", t->name);
      for (int32_t d = 0; d < t->rank; ++d)
        if (t->shape[d] < 0)
          return fail("input '%s' has dynamic dimensions: give its value with --input to "
                      "benchmark",
                      t->name);
      arrays[i].data = random_input(t, &seed); /* freed with the arrays */
      in[i] = (kiln_tensor){arrays[i].data, t->dtype, t->rank, t->shape};
      continue;
    }
    if (kiln_npy_read(o->paths[i], &arrays[i], msg, sizeof msg))
      return fail("%s", msg);
    /* .npy has no bfloat16: bf16 inputs come as uint16 bit patterns. */
    if (t->dtype == KILN_BFLOAT16 && arrays[i].dtype == KILN_UINT16)
      arrays[i].dtype = KILN_BFLOAT16;
    in[i] = (kiln_tensor){arrays[i].data, arrays[i].dtype, arrays[i].rank, arrays[i].shape};
  }
  if (o->bench_runs)
    return bench(model, o->bench_runs, in);
  kiln_tensor *out = calloc(info->num_outputs + 1, sizeof(kiln_tensor));
  double t0 = now_ms();
  int rc = kiln_model_run_tensors(model, in, out) ? fail("%s", kiln_model_error(model)) : 0;
  double elapsed = now_ms() - t0;
  if (!rc && o->output_dir && mkdir(o->output_dir, 0777) != 0 && errno != EEXIST)
    rc = fail("cannot create output directory '%s'", o->output_dir);
  for (uint32_t i = 0; !rc && i < info->num_outputs; ++i) {
    const kiln_tensor_info *t = &info->outputs[i];
    if (!o->output_dir) {
      summarize(t, &out[i]);
      continue;
    }
    char name[256], path[4096];
    snprintf(name, sizeof name, "%s", t->name);
    sanitize(name);
    snprintf(path, sizeof path, "%s/%s.npy", o->output_dir, name);
    if (kiln_npy_write(path, t->dtype, out[i].rank, out[i].shape, out[i].data, msg, sizeof msg))
      rc = fail("%s", msg);
  }
  if (!rc)
    fprintf(stderr, "inference: %.3f ms\n", elapsed);
  free(out);
  return rc;
}

int main(int argc, char **argv) {
  prog = argv[0];
  const kiln_model_info *info = &kiln_main_model;
  options o = {calloc(info->num_inputs + 1, sizeof(char *)), NULL, 0, 0};
  int rc = parse_args(argc, argv, &o);
  if (rc == 0) {
    kiln_model *model = kiln_model_create(info);
    kiln_tensor *in = calloc(info->num_inputs + 1, sizeof(kiln_tensor));
    kiln_npy *arrays = calloc(info->num_inputs + 1, sizeof(kiln_npy));
    if (!model)
      rc = fail("%s", "model ABI version is not supported by this runtime");
    else if (info->gpu && !kiln_model_device(model))
      rc = fail("%s", kiln_model_error(model)); /* no GPU device */
    else
      rc = run(&o, model, in, arrays);
    for (uint32_t i = 0; i < info->num_inputs; ++i)
      kiln_npy_free(&arrays[i]);
    free(arrays);
    free(in);
    if (model)
      kiln_model_destroy(model);
  }
  free(o.paths);
  return rc < 0 ? 0 : rc;
}
