/*===- main.c - command-line driver linked into compiled executables ------===*/
#define _POSIX_C_SOURCE 200809L
#include "kiln/runtime.h"
#include "npy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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
          "       %s --bench N [--threads T] [--json FILE] [--baseline FILE|EXE]\n"
          "          [--input NAME=FILE.npy]...\n\n"
          "Runs the compiled model '%s' (kiln ABI %u).\n\n"
          "  --input NAME=FILE.npy  value of input NAME (inputs may also be given\n"
          "                         positionally, in the order listed below)\n"
          "  --output-dir DIR       write DIR/<output>.npy per output (characters\n"
          "                         outside [A-Za-z0-9_.-] in names become '_');\n"
          "                         without it, outputs are summarized on stdout.\n"
          "                         .npy has no bfloat16: such tensors are read and\n"
          "                         written as uint16 bit patterns\n"
          "  --bench N              time N runs after a warm-up and print p50/p90/p99\n"
          "                         latency in milliseconds and the instance's peak\n"
          "                         memory; inputs not given are random (inputs with\n"
          "                         dynamic dimensions must be given)\n"
          "  --rounds R             split the N runs into R rounds (default 1, or 5\n"
          "                         with --baseline); the gate compares the median\n"
          "                         of the rounds' p50\n"
          "  --json FILE            with --bench: also write the figures to FILE\n"
          "  --baseline FILE|EXE    with --bench: fail (exit 3) when p50 is more than\n"
          "                         --max-regression above the baseline's: a JSON\n"
          "                         file from --json, or an earlier build of the model\n"
          "                         (an executable), timed in rounds alternating\n"
          "                         with this one on the same inputs\n"
          "  --max-regression P%%    the gate's threshold (default 5%%)\n"
          "  --profile FILE         time every kernel (a CPU model compiled with\n"
          "                         kiln-compile --profile, or any CUDA model: its\n"
          "                         kernels' GPU time): write a Chrome trace to\n"
          "                         FILE (chrome://tracing, Perfetto) and print the\n"
          "                         time, share, GFLOP/s and bytes of each kernel\n"
          "  --bind-state OUT=IN    feed output OUT of each run to input IN of the\n"
          "                         next, in place (a recurrent state, a KV cache)\n"
          "  --stream DIR           run the steps DIR/0, DIR/1, ... in order, each\n"
          "                         folder holding <input>.npy per input (bound\n"
          "                         states: in DIR/0 only); print each step's\n"
          "                         latency; with --output-dir, write OUT/<step>/\n"
          "  --weights FILE         read the weights from FILE (a model compiled with\n"
          "                         kiln-compile --weights=external; default: the\n"
          "                         file named below, beside this executable)\n"
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
                 "N-th; by default the first); its inputs and outputs are copied from and to "
                 "page-locked memory (KILN_CUDA_PINNED=0: pageable)\n",
            info->gpu->num_kernels);
  else if (info->gpu)
    fprintf(out, "Device: its %u kernels run on a Vulkan device (KILN_VULKAN_DEVICE=N picks "
                 "the N-th; by default the first discrete GPU, else integrated, else any)\n",
            info->gpu->num_kernels);
  if (info->num_variants) {
    fprintf(out, "CPU variants:");
    for (uint32_t i = 0; i < info->num_variants; ++i)
      fprintf(out, "%s %s", i ? "," : "", info->variants[i].cpu);
    char error[512];
    const kiln_cpu_variant *v = kiln_pick_cpu_variant(info, error, sizeof error);
    if (v)
      fprintf(out, "; this CPU runs %s (KILN_CPU_VARIANT=NAME picks another)\n", v->cpu);
    else
      fprintf(out, "; %s\n", error);
  }
  if (info->external_weights) {
    double bytes = (double)info->external_weights->bytes;
    int mib = bytes >= 1048576;
    fprintf(out, "Weights: %.1f %s in %s beside this executable (or --weights FILE)\n",
            bytes / (mib ? 1048576.0 : 1024.0), mib ? "MiB" : "KiB",
            info->external_weights->file_name);
  }
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

/* The value at percentile p of `n` sorted times. */
static double percentile(const double *sorted, long n, double p) {
  return sorted[(size_t)((n - 1) * p / 100.0 + 0.5)];
}

static double median(double *values, long n) {
  qsort(values, (size_t)n, sizeof(double), compare_double);
  return percentile(values, n, 50);
}

/* What the command line asks for. */
typedef struct {
  const char **paths; /* per input; NULL where none was given */
  const char *output_dir, *profile, *json, *baseline, *weights, *stream;
  const char **bindings; /* "OUT=IN" per --bind-state */
  int num_bindings;
  long bench_runs, threads, rounds;
  double max_regression; /* a fraction: 0.05 */
} options;

/* The CPU's name ("AMD EPYC 9R45"), or "unknown". */
static void cpu_name(char *name, size_t size) {
  snprintf(name, size, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f)
    return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    char *colon = strchr(line, ':');
    if (strncmp(line, "model name", 10) == 0 && colon) {
      colon += 2;
      colon[strcspn(colon, "\n")] = 0;
      snprintf(name, size, "%s", colon);
      break;
    }
  }
  fclose(f);
}

/* The "p50" of a file written by --json, or a negative value. */
static double read_json_p50(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  char text[8192];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = 0;
  const char *key = strstr(text, "\"p50\"");
  const char *colon = key ? strchr(key, ':') : NULL;
  return colon ? strtod(colon + 1, NULL) : -1;
}

/* Whether the baseline is an executable (else a JSON file). */
static int is_executable(const char *path) {
  FILE *f = fopen(path, "r");
  int c = f ? fgetc(f) : EOF;
  if (f)
    fclose(f);
  return c != '{' && access(path, X_OK) == 0;
}

/* Runs the baseline executable for `runs` runs on the same inputs and
 * returns its p50 (negative on failure, with a message). */
static double run_baseline(const options *o, long runs) {
  char json[] = "/tmp/kiln-baseline-XXXXXX";
  int fd = mkstemp(json);
  if (fd < 0)
    return fail("cannot create a temporary file for the baseline's figures%s", ""), -1;
  close(fd);
  char count[32], threads[32];
  snprintf(count, sizeof count, "%ld", runs);
  snprintf(threads, sizeof threads, "%ld", o->threads);
  const kiln_model_info *info = &kiln_main_model;
  char bench_flag[] = "--bench", json_flag[] = "--json", threads_flag[] = "--threads",
       input_flag[] = "--input", path[4096];
  snprintf(path, sizeof path, "%s", o->baseline);
  char **argv = calloc(10 + 2 * (size_t)info->num_inputs, sizeof(char *));
  char **specs = calloc(info->num_inputs + 1, sizeof(char *));
  int argc = 0;
  argv[argc++] = path;
  argv[argc++] = bench_flag;
  argv[argc++] = count;
  argv[argc++] = json_flag;
  argv[argc++] = json;
  if (o->threads) {
    argv[argc++] = threads_flag;
    argv[argc++] = threads;
  }
  for (uint32_t i = 0; i < info->num_inputs; ++i) {
    if (!o->paths[i])
      continue; /* random, as here */
    size_t size = strlen(info->inputs[i].name) + strlen(o->paths[i]) + 2;
    specs[i] = malloc(size);
    snprintf(specs[i], size, "%s=%s", info->inputs[i].name, o->paths[i]);
    argv[argc++] = input_flag;
    argv[argc++] = specs[i];
  }
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    freopen("/dev/null", "w", stdout);
    execv(path, argv);
    _exit(127);
  }
  int status = 0;
  double p50 = -1;
  if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
      WEXITSTATUS(status) == 0)
    p50 = read_json_p50(json);
  if (p50 < 0)
    fail("the baseline '%s' failed to run (it must be a kiln executable of the same model)",
         o->baseline);
  unlink(json);
  for (uint32_t i = 0; i < info->num_inputs; ++i)
    free(specs[i]);
  free(specs);
  free(argv);
  return p50;
}

/* Times `runs` runs into `times` (unsorted). */
static int time_runs(kiln_model *model, const kiln_tensor *in, kiln_tensor *out, long runs,
                     double *times) {
  for (long i = 0; i < runs; ++i) {
    double t0 = now_ms();
    if (kiln_model_run_tensors(model, in, out))
      return fail("%s", kiln_model_error(model));
    times[i] = now_ms() - t0;
  }
  return 0;
}

typedef struct {
  double p50, p90, p99, min, mean;
} latency;

static latency summarize_times(double *times, long n) {
  double total = 0;
  for (long i = 0; i < n; ++i)
    total += times[i];
  qsort(times, (size_t)n, sizeof(double), compare_double);
  latency l = {percentile(times, n, 50), percentile(times, n, 90), percentile(times, n, 99),
               times[0], total / n};
  return l;
}

static void write_json(const options *o, kiln_model *model, const latency *l,
                       const double *round_p50, long rounds, double baseline_p50) {
  FILE *f = fopen(o->json, "w");
  if (!f) {
    fail("cannot write '%s'", o->json);
    return;
  }
  char cpu[256];
  cpu_name(cpu, sizeof cpu);
  kiln_memory_stats mem;
  kiln_model_memory(model, &mem);
  fprintf(f, "{\n  \"model\": \"%s\",\n  \"runs\": %ld,\n  \"rounds\": %ld,\n", kiln_main_model.name,
          o->bench_runs, rounds);
  fprintf(f, "  \"threads\": %d,\n  \"cpu\": \"%s\",\n", kiln_model_num_threads(model), cpu);
  if (kiln_model_device(model))
    fprintf(f, "  \"device\": \"%s\",\n", kiln_model_device(model));
  if (kiln_model_cpu_variant(model))
    fprintf(f, "  \"cpu_variant\": \"%s\",\n", kiln_model_cpu_variant(model));
  fprintf(f,
          "  \"latency_ms\": {\"p50\": %.6f, \"p90\": %.6f, \"p99\": %.6f, \"min\": %.6f, "
          "\"mean\": %.6f},\n  \"round_p50_ms\": [",
          l->p50, l->p90, l->p99, l->min, l->mean);
  for (long r = 0; r < rounds; ++r)
    fprintf(f, "%s%.6f", r ? ", " : "", round_p50[r]);
  fprintf(f,
          "],\n  \"memory_bytes\": {\"peak\": %llu, \"arena\": %llu, \"runtime\": %llu, "
          "\"weights\": %llu}",
          (unsigned long long)mem.peak, (unsigned long long)mem.arena,
          (unsigned long long)mem.runtime, (unsigned long long)mem.weights);
  if (baseline_p50 > 0)
    fprintf(f, ",\n  \"baseline\": {\"p50_ms\": %.6f, \"max_regression\": %.4f}",
            baseline_p50, o->max_regression);
  fprintf(f, "\n}\n");
  fclose(f);
}

/* Rounds of o->bench_runs / rounds timed runs, alternating with the
 * baseline executable's when there is one (its first in even rounds). */
static int bench(kiln_model *model, const options *o, const kiln_tensor *in) {
  const kiln_model_info *info = &kiln_main_model;
  int baseline_exe = o->baseline && is_executable(o->baseline);
  double baseline_p50 = o->baseline && !baseline_exe ? read_json_p50(o->baseline) : 0;
  if (o->baseline && !baseline_exe && baseline_p50 <= 0)
    return fail("cannot read a p50 from the baseline '%s' (a file written by --json, or a "
                "kiln executable)",
                o->baseline);
  long rounds = o->rounds ? o->rounds : o->baseline ? 5 : 1;
  if (rounds > o->bench_runs)
    rounds = o->bench_runs;
  long per_round = o->bench_runs / rounds, runs = per_round * rounds;
  kiln_tensor *out = calloc(info->num_outputs + 1, sizeof(kiln_tensor));
  double *times = malloc((size_t)runs * sizeof(double));
  double *copy = malloc((size_t)per_round * sizeof(double));
  double *round_p50 = calloc((size_t)rounds, sizeof(double));
  double *base_p50 = calloc((size_t)rounds, sizeof(double));
  long warmup = runs / 10 > 1 ? runs / 10 : 1;
  int rc = time_runs(model, in, out, warmup, times);
  if (!rc && o->profile && kiln_model_profile_start(model)) /* without the warm-up */
    rc = fail("%s", kiln_model_error(model));
  for (long r = 0; !rc && r < rounds; ++r) {
    if (baseline_exe && r % 2 == 0 && (base_p50[r] = run_baseline(o, per_round)) < 0)
      rc = 1;
    double *mine = times + r * per_round;
    if (!rc && !(rc = time_runs(model, in, out, per_round, mine))) {
      memcpy(copy, mine, (size_t)per_round * sizeof(double));
      round_p50[r] = median(copy, per_round);
    }
    if (!rc && baseline_exe && r % 2 == 1 && (base_p50[r] = run_baseline(o, per_round)) < 0)
      rc = 1;
  }
  if (!rc) {
    latency l = summarize_times(times, runs);
    int threads = kiln_model_num_threads(model);
    kiln_memory_stats mem;
    kiln_model_memory(model, &mem);
    printf("%s: %ld runs, %d thread%s, arena %zu bytes\n", info->name, runs, threads,
           threads == 1 ? "" : "s", kiln_model_arena_bytes(model));
    if (kiln_model_device(model))
      printf("device: %s\n", kiln_model_device(model));
    printf("latency ms: p50=%.4f p90=%.4f p99=%.4f min=%.4f mean=%.4f\n", l.p50, l.p90, l.p99,
           l.min, l.mean);
    printf("memory: peak %.2f MiB (arena %.2f, runtime %.2f, weights %.2f)\n",
           mem.peak / 1048576.0, mem.arena / 1048576.0, mem.runtime / 1048576.0,
           mem.weights / 1048576.0);
    double mine = rounds > 1 ? median(round_p50, rounds) : l.p50;
    if (baseline_exe)
      baseline_p50 = median(base_p50, rounds);
    if (o->json)
      write_json(o, model, &l, round_p50, rounds, baseline_p50);
    if (o->baseline) {
      double change = mine / baseline_p50 - 1;
      int regressed = change > o->max_regression;
      printf("regression gate: p50 %.4f ms against the baseline's %.4f ms (%+.1f%%, limit "
             "+%.1f%%, median of %ld round%s%s): %s\n",
             mine, baseline_p50, 100 * change, 100 * o->max_regression, rounds,
             rounds == 1 ? "" : "s", baseline_exe ? " alternating with the baseline" : "",
             regressed ? "REGRESSED" : "ok");
      if (regressed)
        rc = 3;
    }
  }
  free(base_p50);
  free(round_p50);
  free(copy);
  free(times);
  free(out);
  return rc;
}

static int compare_entry_time(const void *a, const void *b) {
  double x = ((const kiln_profile_entry *)a)->total_ms, y = ((const kiln_profile_entry *)b)->total_ms;
  return (x < y) - (x > y);
}

/* Writes the trace and prints each kernel's time per run, share of the
 * run, GFLOP/s and bytes, slowest first. */
static int report_profile(kiln_model *model, const char *path) {
  kiln_profile_summary s;
  if (kiln_model_profile_summary(model, &s) || kiln_model_profile_write_trace(model, path))
    return fail("%s", kiln_model_error(model));
  if (!s.runs)
    return 0;
  kiln_profile_entry *entries = calloc(s.num_kernels + 1, sizeof(kiln_profile_entry));
  double kernels_ms = 0;
  for (uint32_t i = 0; i < s.num_kernels; ++i) {
    kiln_model_profile_kernel(model, i, &entries[i]);
    kernels_ms += entries[i].total_ms;
  }
  qsort(entries, s.num_kernels, sizeof(kiln_profile_entry), compare_entry_time);
  double run_ms = s.total_ms / (double)s.runs;
  printf("profile: %llu run%s, %.4f ms per run; trace: %s%s\n", (unsigned long long)s.runs,
         s.runs == 1 ? "" : "s", run_ms, path, s.dropped ? " (events dropped)" : "");
  printf("  %-48s %10s %7s %9s %11s\n", "kernel", "ms/run", "share", "GFLOP/s", "KiB/run");
  for (uint32_t i = 0; i < s.num_kernels; ++i) {
    const kiln_profile_entry *e = &entries[i];
    double ms = e->total_ms / (double)s.runs;
    char gflops[32] = "-", kib[32] = "-"; /* unknown (a GPU kernel's flops) */
    if (e->flops && ms > 0)
      snprintf(gflops, sizeof gflops, "%.2f", (double)e->flops / (ms * 1e6));
    if (e->bytes)
      snprintf(kib, sizeof kib, "%.1f", (double)e->bytes / 1024);
    printf("  %-48s %10.4f %6.1f%% %9s %11s\n", e->name, ms, 100 * ms / run_ms, gflops, kib);
  }
  double outside = (s.total_ms - kernels_ms) / (double)s.runs;
  printf("  %-48s %10.4f %6.1f%%\n", "(between kernels)", outside, 100 * outside / run_ms);
  free(entries);
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
    } else if (!strcmp(a, "--bind-state") && has_value) {
      if (!strchr(argv[i + 1], '='))
        return fail("--bind-state expects OUT=IN (an output, the input it feeds), got '%s'",
                    argv[i + 1]);
      o->bindings[o->num_bindings++] = argv[++i];
    } else if (!strcmp(a, "--stream") && has_value) {
      o->stream = argv[++i];
    } else if (!strcmp(a, "--weights") && has_value) {
      if (!kiln_main_model.external_weights)
        return fail("--weights: model '%s' has its weights in its code (compile it with "
                    "kiln-compile --weights=external)", kiln_main_model.name);
      o->weights = argv[++i];
    } else if (!strcmp(a, "--profile") && has_value) {
      o->profile = argv[++i];
    } else if (!strcmp(a, "--json") && has_value) {
      o->json = argv[++i];
    } else if (!strcmp(a, "--baseline") && has_value) {
      o->baseline = argv[++i];
    } else if (!strcmp(a, "--rounds") && has_value) {
      char *end;
      o->rounds = strtol(argv[++i], &end, 10);
      if (*end || o->rounds < 1)
        return fail("--rounds expects a positive count, got '%s'", argv[i]);
    } else if (!strcmp(a, "--max-regression") && has_value) {
      char *end;
      o->max_regression = strtod(argv[++i], &end) / 100;
      if ((*end && strcmp(end, "%")) || o->max_regression < 0)
        return fail("--max-regression expects a percentage such as 5%%, got '%s'", argv[i]);
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
  if ((o->json || o->baseline || o->rounds) && !o->bench_runs)
    return fail("%s needs --bench N", o->json ? "--json" : o->baseline ? "--baseline" : "--rounds");
  if (o->stream && (o->bench_runs || o->profile))
    return fail("--stream times each step itself: it does not go with %s",
                o->bench_runs ? "--bench" : "--profile");
  for (uint32_t i = 0; o->stream && i < info->num_inputs; ++i)
    if (o->paths[i])
      return fail("--stream reads the inputs from its steps' folders, not from '%s'",
                  o->paths[i]);
  return 0;
}

static int run_once(const options *o, kiln_model *model, const kiln_tensor *in);

/* Moves the inputs into the instance's host memory, which a GPU copies
 * from fastest (CUDA: page-locked), as a program embedding the model
 * would hold them (kiln_model_alloc_host); freed with the instance. */
static int to_host_memory(kiln_model *model, kiln_tensor *in) {
  for (uint32_t i = 0; i < kiln_main_model.num_inputs; ++i) {
    size_t bytes = kiln_dtype_size(in[i].dtype);
    for (int32_t d = 0; d < in[i].rank; ++d)
      bytes *= (size_t)in[i].shape[d];
    void *copy = kiln_model_alloc_host(model, bytes);
    if (!copy)
      return 1;
    if (bytes) /* an empty .npy may have no data */
      memcpy(copy, in[i].data, bytes);
    in[i].data = copy;
  }
  return 0;
}

/* Fills `in` (from .npy files read into `arrays`, or random for a
 * benchmark), then benchmarks the model or runs it once, profiled if asked. */
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
    if (kiln_npy_read_input(o->paths[i], t, &arrays[i], msg, sizeof msg))
      return fail("%s", msg);
    in[i] = (kiln_tensor){arrays[i].data, arrays[i].dtype, arrays[i].rank, arrays[i].shape};
  }
  if (to_host_memory(model, in))
    return fail("%s", "out of memory for the inputs");
  if (o->profile && kiln_model_profile_start(model))
    return fail("%s", kiln_model_error(model));
  int rc = o->bench_runs ? bench(model, o, in) : run_once(o, model, in);
  if (!rc && o->profile)
    rc = report_profile(model, o->profile);
  return rc;
}

/* Runs the model once and writes or prints its outputs. */
static int run_once(const options *o, kiln_model *model, const kiln_tensor *in) {
  const kiln_model_info *info = &kiln_main_model;
  char msg[512];
  kiln_tensor *out = calloc(info->num_outputs + 1, sizeof(kiln_tensor));
  double t0 = now_ms();
  int rc = kiln_model_run_tensors(model, in, out) ? fail("%s", kiln_model_error(model)) : 0;
  double elapsed = now_ms() - t0;
  if (!rc && o->output_dir && kiln_npy_write_outputs(o->output_dir, info, out, msg, sizeof msg))
    rc = fail("%s", msg);
  for (uint32_t i = 0; !rc && !o->output_dir && i < info->num_outputs; ++i)
    summarize(&info->outputs[i], &out[i]);
  if (!rc)
    fprintf(stderr, "inference: %.3f ms\n", elapsed);
  free(out);
  return rc;
}

/* Binds the states of --bind-state. */
static int bind_states(const options *o, kiln_model *model) {
  for (int i = 0; i < o->num_bindings; ++i) {
    char output[256];
    const char *eq = strchr(o->bindings[i], '=');
    snprintf(output, sizeof output, "%.*s", (int)(eq - o->bindings[i]), o->bindings[i]);
    if (kiln_model_bind_state(model, output, eq + 1))
      return fail("--bind-state: %s", kiln_model_error(model));
  }
  return 0;
}

/* Whether input `i` is fed by a bound state. */
static int is_bound(const options *o, uint32_t i) {
  for (int b = 0; b < o->num_bindings; ++b)
    if (!strcmp(strchr(o->bindings[b], '=') + 1, kiln_main_model.inputs[i].name))
      return 1;
  return 0;
}

/* --stream DIR: runs the steps DIR/0, DIR/1, ... in order. */
static int stream(const options *o, kiln_model *model, kiln_npy *arrays) {
  const kiln_model_info *info = &kiln_main_model;
  kiln_tensor *in = calloc(info->num_inputs + 1, sizeof(kiln_tensor));
  kiln_tensor *out = calloc(info->num_outputs + 1, sizeof(kiln_tensor));
  double *times = NULL;
  long steps = 0;
  int rc = 0;
  char dir[4096], path[4096], msg[512];
  if (o->output_dir && mkdir(o->output_dir, 0777) != 0 && errno != EEXIST)
    rc = fail("cannot create output directory '%s'", o->output_dir);
  for (; !rc; ++steps) {
    snprintf(dir, sizeof dir, "%s/%ld", o->stream, steps);
    if (access(dir, F_OK) != 0)
      break;
    for (uint32_t i = 0; !rc && i < info->num_inputs; ++i) {
      if (steps > 0 && is_bound(o, i))
        continue; /* the last step's state */
      kiln_npy_path(path, sizeof path, dir, info->inputs[i].name);
      kiln_npy_free(&arrays[i]);
      if (kiln_npy_read_input(path, &info->inputs[i], &arrays[i], msg, sizeof msg)) {
        rc = fail("%s", msg);
        break;
      }
      in[i] = (kiln_tensor){arrays[i].data, arrays[i].dtype, arrays[i].rank, arrays[i].shape};
    }
    if (rc)
      break;
    double *grown = realloc(times, (size_t)(steps + 1) * sizeof *times);
    if (!grown) {
      rc = fail("out of memory%s", "");
      break;
    }
    times = grown;
    double t0 = now_ms();
    if (kiln_model_run_tensors(model, in, out)) {
      snprintf(msg, sizeof msg, "step %ld: %s", steps, kiln_model_error(model));
      rc = fail("%s", msg);
      break;
    }
    times[steps] = now_ms() - t0;
    printf("step %ld: %.4f ms\n", steps, times[steps]);
    snprintf(dir, sizeof dir, "%s/%ld", o->output_dir ? o->output_dir : "", steps);
    if (o->output_dir && kiln_npy_write_outputs(dir, info, out, msg, sizeof msg))
      rc = fail("%s", msg);
  }
  if (!rc && steps == 0)
    rc = fail("--stream %s: no steps (folders 0, 1, ... with one <input>.npy per input)",
              o->stream);
  if (!rc) {
    double first = times[0], last = times[steps - 1];
    qsort(times, (size_t)steps, sizeof *times, compare_double);
    printf("stream: %ld steps, ms per step: first=%.4f p50=%.4f p90=%.4f max=%.4f "
           "last=%.4f\n",
           steps, first, percentile(times, steps, 50), percentile(times, steps, 90),
           times[steps - 1], last);
  }
  free(times);
  free(in);
  free(out);
  return rc;
}

int main(int argc, char **argv) {
  prog = argv[0];
  const kiln_model_info *info = &kiln_main_model;
  options o = {.paths = calloc(info->num_inputs + 1, sizeof(char *)),
               .bindings = calloc((size_t)argc, sizeof(char *)),
               .max_regression = 0.05};
  int rc = parse_args(argc, argv, &o);
  if (rc == 0) {
    kiln_model *model = kiln_model_create_with_weights(info, o.weights);
    kiln_tensor *in = calloc(info->num_inputs + 1, sizeof(kiln_tensor));
    kiln_npy *arrays = calloc(info->num_inputs + 1, sizeof(kiln_npy));
    if (!model)
      rc = fail("%s", "model ABI version is not supported by this runtime");
    else if (info->gpu && !kiln_model_device(model))
      rc = fail("%s", kiln_model_error(model)); /* no GPU device */
    else if (info->num_variants && !kiln_model_cpu_variant(model))
      rc = fail("%s", kiln_model_error(model)); /* no variant for this CPU */
    else if (info->external_weights && !kiln_model_weights(model))
      rc = fail("%s", kiln_model_error(model)); /* no weights file, or not this model's */
    else if (bind_states(&o, model))
      rc = 1;
    else if (o.stream)
      rc = kiln_model_set_num_threads(model, (int)o.threads)
               ? fail("%s", kiln_model_error(model))
               : stream(&o, model, arrays);
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
  free(o.bindings);
  return rc < 0 ? 0 : rc;
}
