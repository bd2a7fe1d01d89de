/*===- npy.c - NumPy .npy format, version 1.0-3.0 -------------------------===*/
#include "npy.h"
#include "kiln/runtime.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const struct {
  const char *descr;
  int32_t dtype;
} descrs[] = {
    {"<f4", KILN_FLOAT32}, {"<f8", KILN_FLOAT64}, {"<f2", KILN_FLOAT16},
    {"|i1", KILN_INT8},    {"<i2", KILN_INT16},   {"<i4", KILN_INT32},
    {"<i8", KILN_INT64},   {"|u1", KILN_UINT8},   {"<u2", KILN_UINT16},
    {"<u4", KILN_UINT32},  {"<u8", KILN_UINT64},  {"|b1", KILN_BOOL},
};

static const char *descr_of(int32_t dtype) {
  if (dtype == KILN_BFLOAT16) /* .npy has no bfloat16: its bit patterns as uint16 */
    return "<u2";
  for (size_t i = 0; i < sizeof descrs / sizeof descrs[0]; ++i)
    if (descrs[i].dtype == dtype)
      return descrs[i].descr;
  return NULL;
}

/* Finds `'key':` in the header dict and returns the text after it. */
static const char *dict_value(const char *header, const char *key) {
  char pattern[32];
  snprintf(pattern, sizeof pattern, "'%s':", key);
  const char *p = strstr(header, pattern);
  if (!p)
    return NULL;
  p += strlen(pattern);
  while (*p == ' ')
    ++p;
  return p;
}

static int parse_header(const char *header, kiln_npy *out, char *msg, size_t size) {
  const char *descr = dict_value(header, "descr");
  const char *order = dict_value(header, "fortran_order");
  const char *shape = dict_value(header, "shape");
  if (!descr || !order || !shape || *descr != '\'' || *shape != '(') {
    snprintf(msg, size, "malformed .npy header");
    return 1;
  }
  out->dtype = 0;
  for (size_t i = 0; i < sizeof descrs / sizeof descrs[0]; ++i)
    if (strncmp(descr + 1, descrs[i].descr, 3) == 0 && descr[4] == '\'')
      out->dtype = descrs[i].dtype;
  if (!out->dtype) {
    const char *end = strchr(descr + 1, '\'');
    snprintf(msg, size, "unsupported .npy dtype '%.*s' (expected little-endian numeric or bool)",
             end ? (int)(end - descr - 1) : 8, descr + 1);
    return 1;
  }
  if (strncmp(order, "False", 5) != 0) {
    snprintf(msg, size, "Fortran-ordered .npy arrays are not supported");
    return 1;
  }
  out->rank = 0;
  const char *p = shape + 1;
  while (*p && *p != ')') {
    while (*p == ' ' || *p == ',')
      ++p;
    if (*p == ')')
      break;
    char *end;
    long long dim = strtoll(p, &end, 10);
    if (end == p || dim < 0 || out->rank == KILN_NPY_MAX_RANK) {
      snprintf(msg, size, "malformed .npy shape");
      return 1;
    }
    out->shape[out->rank++] = dim;
    p = end;
  }
  return 0;
}

int kiln_npy_read(const char *path, kiln_npy *out, char *msg, size_t size) {
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(msg, size, "cannot open '%s': %s", path, strerror(errno));
    return 1;
  }
  unsigned char preamble[12];
  int rc = 1;
  char *header = NULL;
  if (fread(preamble, 1, 10, f) != 10 || memcmp(preamble, "\x93NUMPY", 6) != 0) {
    snprintf(msg, size, "'%s' is not a .npy file", path);
    goto done;
  }
  size_t header_len = preamble[8] | (preamble[9] << 8);
  if (preamble[6] >= 2) { /* version 2/3: 4-byte header length */
    if (fread(preamble + 10, 1, 2, f) != 2)
      goto truncated;
    header_len |= ((size_t)preamble[10] << 16) | ((size_t)preamble[11] << 24);
  }
  header = calloc(1, header_len + 1);
  if (!header || fread(header, 1, header_len, f) != header_len)
    goto truncated;
  if (parse_header(header, out, msg, size))
    goto done;
  size_t n = 1;
  for (int32_t i = 0; i < out->rank; ++i)
    n *= (size_t)out->shape[i];
  out->bytes = n * kiln_dtype_size(out->dtype);
  out->data = malloc(out->bytes ? out->bytes : 1);
  if (!out->data || fread(out->data, 1, out->bytes, f) != out->bytes)
    goto truncated;
  rc = 0;
  goto done;
truncated:
  snprintf(msg, size, "'%s' is truncated", path);
done:
  free(header);
  fclose(f);
  if (rc)
    kiln_npy_free(out);
  return rc;
}

int kiln_npy_write(const char *path, int32_t dtype, int32_t rank, const int64_t *shape,
                   const void *data, char *msg, size_t size) {
  const char *descr = descr_of(dtype);
  if (!descr) {
    snprintf(msg, size, "cannot write dtype %s to .npy", kiln_dtype_name(dtype));
    return 1;
  }
  char dims[256] = "";
  size_t used = 0, n = 1;
  for (int32_t i = 0; i < rank; ++i) {
    used += (size_t)snprintf(dims + used, sizeof dims - used, "%lld,%s", (long long)shape[i],
                             i + 1 < rank ? " " : "");
    n *= (size_t)shape[i];
  }
  if (rank > 1) /* "(2, 3,)" is valid, but numpy writes "(2, 3)" */
    dims[used - 1] = 0;
  char header[512];
  int len = snprintf(header, sizeof header,
                     "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, dims);
  int total = 10 + len + 1;
  int pad = (64 - total % 64) % 64;
  FILE *f = fopen(path, "wb");
  if (!f) {
    snprintf(msg, size, "cannot write '%s': %s", path, strerror(errno));
    return 1;
  }
  unsigned short header_len = (unsigned short)(len + pad + 1);
  unsigned char preamble[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                                (unsigned char)(header_len & 0xff),
                                (unsigned char)(header_len >> 8)};
  size_t bytes = n * kiln_dtype_size(dtype);
  int ok = fwrite(preamble, 1, 10, f) == 10 && fwrite(header, 1, (size_t)len, f) == (size_t)len;
  for (int i = 0; ok && i < pad; ++i)
    ok = fputc(' ', f) != EOF;
  ok = ok && fputc('\n', f) != EOF && fwrite(data, 1, bytes, f) == bytes;
  ok = (fclose(f) == 0) && ok;
  if (!ok) {
    snprintf(msg, size, "error writing '%s'", path);
    return 1;
  }
  return 0;
}

void kiln_npy_free(kiln_npy *npy) {
  free(npy->data);
  npy->data = NULL;
}

void kiln_npy_path(char *path, size_t size, const char *dir, const char *tensor_name) {
  char name[256];
  snprintf(name, sizeof name, "%s", tensor_name);
  for (char *c = name; *c; ++c)
    if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
          *c == '_' || *c == '.' || *c == '-'))
      *c = '_';
  snprintf(path, size, "%s/%s.npy", dir, name);
}

int kiln_npy_read_input(const char *path, const kiln_tensor_info *t, kiln_npy *out, char *msg,
                        size_t size) {
  if (kiln_npy_read(path, out, msg, size))
    return 1;
  if (t->dtype == KILN_BFLOAT16 && out->dtype == KILN_UINT16)
    out->dtype = KILN_BFLOAT16;
  return 0;
}

int kiln_npy_write_outputs(const char *dir, const kiln_model_info *info, const kiln_tensor *out,
                           char *msg, size_t size) {
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    snprintf(msg, size, "cannot create output directory '%s': %s", dir, strerror(errno));
    return 1;
  }
  for (uint32_t i = 0; i < info->num_outputs; ++i) {
    char path[4096];
    kiln_npy_path(path, sizeof path, dir, info->outputs[i].name);
    if (kiln_npy_write(path, info->outputs[i].dtype, out[i].rank, out[i].shape, out[i].data, msg,
                       size))
      return 1;
  }
  return 0;
}
