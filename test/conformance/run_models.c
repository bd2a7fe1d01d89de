/*===- run_models.c - the prepared conformance tests in one process -------===
 *
 * The conformance tests compiled for a GPU run on a machine lent for
 * minutes. An executable per test pays for the driver's start and a GPU
 * context each time: about 3 s a test in a 16-way pool on an H100
 * (2026-11-28), so 1100 tests did not fit a call. `run.py --prepare`
 * links this driver with every test's model instead (kiln-compile
 * --emit=object --name SYMBOL) and one runtime, and
 * scripts/device/conformance.py runs the tests in a few such processes:
 * the driver loads once per process, and the first GPU model's instance
 * stays open to the end, so its context (the device's primary one, which
 * every instance shares) is made once too.
 *
 * The plan comes on stdin, a line per test, its fields separated by tabs:
 *
 *   TEST  OUTPUT_DIR  INPUT_NAME=INPUT.npy ...
 *
 * For each, the driver prints "begin TEST", then "ok TEST" (the outputs
 * written to OUTPUT_DIR/<output>.npy) or "error TEST: MESSAGE", each line
 * flushed: a crash belongs to the test that began last. The tests' table
 * is the file run.py generates beside it (kiln_test_names,
 * kiln_test_models, kiln_num_tests).
 *===----------------------------------------------------------------------===*/
#define _POSIX_C_SOURCE 200809L
#include "kiln/runtime.h"
#include "npy.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char *const kiln_test_names[];
extern const kiln_model_info *const kiln_test_models[];
extern const unsigned kiln_num_tests;

static int fail(char *why, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, size, fmt, ap);
  va_end(ap);
  return 1;
}

static const kiln_model_info *find_test(const char *name) {
  for (unsigned i = 0; i < kiln_num_tests; ++i)
    if (strcmp(kiln_test_names[i], name) == 0)
      return kiln_test_models[i];
  return NULL;
}

/* Reads the inputs `NAME=PATH` into `arrays` and `in`, in the model's
 * order. */
static int read_inputs(const kiln_model_info *info, char **fields, int count, kiln_npy *arrays,
                       kiln_tensor *in, char *why, size_t size) {
  for (int f = 0; f < count; ++f) {
    char *eq = strchr(fields[f], '=');
    if (!eq)
      return fail(why, size, "'%s' is not INPUT=FILE.npy", fields[f]);
    *eq = 0;
    uint32_t i = 0;
    while (i < info->num_inputs && strcmp(info->inputs[i].name, fields[f]) != 0)
      ++i;
    if (i == info->num_inputs)
      return fail(why, size, "the model has no input '%s'", fields[f]);
    kiln_npy_free(&arrays[i]);
    if (kiln_npy_read_input(eq + 1, &info->inputs[i], &arrays[i], why, size))
      return 1;
    in[i] = (kiln_tensor){arrays[i].data, arrays[i].dtype, arrays[i].rank, arrays[i].shape};
  }
  for (uint32_t i = 0; i < info->num_inputs; ++i)
    if (!in[i].data)
      return fail(why, size, "no file for input '%s'", info->inputs[i].name);
  return 0;
}

/* Runs instance `m` of `info` on the inputs of `fields` and writes its
 * outputs to `out_dir`. */
static int run_model(kiln_model *m, const kiln_model_info *info, const char *out_dir,
                     char **fields, int count, char *why, size_t size) {
  if (info->gpu && !kiln_model_device(m))
    return fail(why, size, "%s", kiln_model_error(m));
  kiln_npy *arrays = calloc(info->num_inputs + 1, sizeof *arrays);
  kiln_tensor *in = calloc(info->num_inputs + 1, sizeof *in);
  kiln_tensor *out = calloc(info->num_outputs + 1, sizeof *out);
  int rc = !arrays || !in || !out ? fail(why, size, "out of memory")
                                  : read_inputs(info, fields, count, arrays, in, why, size);
  if (!rc && kiln_model_run_tensors(m, in, out))
    rc = fail(why, size, "%s", kiln_model_error(m));
  if (!rc)
    rc = kiln_npy_write_outputs(out_dir, info, out, why, size);
  for (uint32_t i = 0; arrays && i < info->num_inputs; ++i)
    kiln_npy_free(&arrays[i]);
  free(arrays);
  free(in);
  free(out);
  return rc;
}

/* Runs the test of a plan line split into `fields`. The first GPU model's
 * instance is kept in `*kept` (its device's context with it). */
static int run_test(char **fields, int count, kiln_model **kept, char *why, size_t size) {
  if (count < 2)
    return fail(why, size, "a plan line is TEST<tab>OUTPUT_DIR<tab>INPUT=FILE.npy...");
  const kiln_model_info *info = find_test(fields[0]);
  if (!info)
    return fail(why, size, "this runner has no test '%s'", fields[0]);
  kiln_model *m = kiln_model_create(info);
  if (!m)
    return fail(why, size, "model ABI version is not supported by this runtime");
  int rc = run_model(m, info, fields[1], fields + 2, count - 2, why, size);
  if (!*kept && info->gpu && kiln_model_device(m))
    *kept = m;
  else
    kiln_model_destroy(m);
  return rc;
}

int main(int argc, char **argv) {
  if (argc > 1) {
    fprintf(stderr,
            "usage: %s < PLAN\n"
            "Runs the %u tests linked into it that PLAN names, a line each:\n"
            "TEST<tab>OUTPUT_DIR<tab>INPUT=FILE.npy...; prints 'begin TEST', then\n"
            "'ok TEST' or 'error TEST: MESSAGE'.\n",
            argv[0], kiln_num_tests);
    return 2;
  }
  kiln_model *kept = NULL;
  char *line = NULL;
  size_t capacity = 0;
  ssize_t length;
  while ((length = getline(&line, &capacity, stdin)) > 0) {
    if (line[length - 1] == '\n')
      line[--length] = 0;
    char *fields[256];
    int count = 0;
    for (char *field = strtok(line, "\t"); field && count < 256; field = strtok(NULL, "\t"))
      fields[count++] = field;
    if (!count)
      continue;
    printf("begin %s\n", fields[0]);
    fflush(stdout);
    char why[1024];
    if (run_test(fields, count, &kept, why, sizeof why)) {
      for (char *c = why; *c; ++c) /* one line per test */
        if (*c == '\n')
          *c = ' ';
      printf("error %s: %s\n", fields[0], why);
    }
    else
      printf("ok %s\n", fields[0]);
    fflush(stdout);
  }
  free(line);
  kiln_model_destroy(kept);
  return 0;
}
