/*===- weights.c - weights files: written, mapped, checked, shared --------===*/
#define _POSIX_C_SOURCE 200809L
#include "weights.h"
#include "kiln/runtime.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h> /* unlink */

uint64_t kiln_weights_checksum(const void *data, uint64_t bytes) {
  const unsigned char *p = data;
  uint64_t sum[8] = {0}, sum_of_sums[8] = {0};
  uint64_t blocks = bytes / 64;
  for (uint64_t i = 0; i < blocks; ++i, p += 64)
    for (int lane = 0; lane < 8; ++lane) {
      uint64_t word;
      memcpy(&word, p + 8 * lane, 8);
      sum[lane] += word;
      sum_of_sums[lane] += sum[lane];
    }
  unsigned char tail[64] = {0};
  memcpy(tail, p, bytes % 64);
  for (int lane = 0; lane < 8; ++lane) {
    uint64_t word;
    memcpy(&word, tail + 8 * lane, 8);
    sum[lane] += word;
    sum_of_sums[lane] += sum[lane];
  }
  uint64_t h = bytes;
  for (int lane = 0; lane < 8; ++lane) {
    h = (h ^ sum[lane]) * 0x100000001b3ull;
    h = (h ^ sum_of_sums[lane]) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  return h;
}

static uint64_t table_checksum(const kiln_weights_header *header,
                               const kiln_weights_entry *entries) {
  uint64_t head = kiln_weights_checksum(header, offsetof(kiln_weights_header, table_checksum));
  return head ^ (kiln_weights_checksum(entries, header->num_tensors * sizeof *entries) * 31);
}

static uint64_t data_offset_for(uint32_t num_tensors) {
  uint64_t end = sizeof(kiln_weights_header) + (uint64_t)num_tensors * sizeof(kiln_weights_entry);
  return (end + KILN_WEIGHTS_PAGE - 1) / KILN_WEIGHTS_PAGE * KILN_WEIGHTS_PAGE;
}

int kiln_weights_write(const char *path, uint64_t fingerprint, uint32_t num_tensors,
                       const kiln_weights_entry *entries, const void *const *data,
                       uint64_t data_bytes, char *error, size_t error_size) {
  kiln_weights_header header = {.version = KILN_WEIGHTS_VERSION,
                                .num_tensors = num_tensors,
                                .fingerprint = fingerprint,
                                .data_offset = data_offset_for(num_tensors),
                                .data_bytes = data_bytes};
  memcpy(header.magic, KILN_WEIGHTS_MAGIC, 8);
  unsigned char *blob = calloc(1, data_bytes ? data_bytes : 1);
  if (!blob) {
    snprintf(error, error_size, "out of memory for %llu bytes of weights",
             (unsigned long long)data_bytes);
    return 1;
  }
  for (uint32_t i = 0; i < num_tensors; ++i)
    memcpy(blob + entries[i].offset, data[i], entries[i].bytes);
  header.data_checksum = kiln_weights_checksum(blob, data_bytes);
  header.table_checksum = table_checksum(&header, entries);

  size_t tmp_size = strlen(path) + 5;
  char *tmp = malloc(tmp_size);
  FILE *f = tmp ? (snprintf(tmp, tmp_size, "%s.tmp", path), fopen(tmp, "wb")) : NULL;
  int failed = !f;
  if (f) {
    static const unsigned char zeros[KILN_WEIGHTS_PAGE];
    uint64_t table_end = sizeof header + (uint64_t)num_tensors * sizeof *entries;
    failed |= fwrite(&header, sizeof header, 1, f) != 1;
    failed |= num_tensors && fwrite(entries, sizeof *entries, num_tensors, f) != num_tensors;
    failed |= fwrite(zeros, 1, header.data_offset - table_end, f) != header.data_offset - table_end;
    failed |= data_bytes && fwrite(blob, 1, data_bytes, f) != data_bytes;
    failed |= fclose(f) != 0;
    failed = failed || rename(tmp, path) != 0;
  }
  if (failed) {
    snprintf(error, error_size, "cannot write %s: %s", path, strerror(errno));
    if (tmp)
      unlink(tmp);
  }
  free(tmp);
  free(blob);
  return failed;
}

/* Checks a header and table read from a file or buffer of `size` bytes. */
static int check_table(const char *what, const kiln_weights_header *header,
                       const kiln_weights_entry *entries, uint64_t size, char *error,
                       size_t error_size) {
  if (header->table_checksum != table_checksum(header, entries)) {
    snprintf(error, error_size, "%s: corrupt weights file (the checksum of its header fails)",
             what);
    return 1;
  }
  if (header->data_offset % KILN_WEIGHTS_PAGE ||
      header->data_offset < data_offset_for(header->num_tensors)) {
    snprintf(error, error_size, "%s: corrupt weights file (data offset %llu)", what,
             (unsigned long long)header->data_offset);
    return 1;
  }
  if (size < header->data_offset || size - header->data_offset < header->data_bytes) {
    snprintf(error, error_size,
             "%s: truncated weights file (%llu bytes; its header says %llu)", what,
             (unsigned long long)size,
             (unsigned long long)(header->data_offset + header->data_bytes));
    return 1;
  }
  for (uint32_t i = 0; i < header->num_tensors; ++i)
    if (entries[i].offset > header->data_bytes ||
        entries[i].bytes > header->data_bytes - entries[i].offset) {
      snprintf(error, error_size, "%s: corrupt weights file (tensor %u lies outside the data)",
               what, i);
      return 1;
    }
  return 0;
}

/* Checks the fixed part of a header; the table follows it in `size` bytes. */
static int check_header(const char *what, const kiln_weights_header *header, uint64_t size,
                        char *error, size_t error_size) {
  if (size < sizeof *header || memcmp(header->magic, KILN_WEIGHTS_MAGIC, 8) != 0) {
    snprintf(error, error_size, "%s: not a kiln weights file", what);
    return 1;
  }
  if (header->version != KILN_WEIGHTS_VERSION) {
    snprintf(error, error_size, "%s: weights file version %u; this runtime reads version %u",
             what, header->version, KILN_WEIGHTS_VERSION);
    return 1;
  }
  if ((size - sizeof *header) / sizeof(kiln_weights_entry) < header->num_tensors) {
    snprintf(error, error_size, "%s: truncated weights file (its table is cut short)", what);
    return 1;
  }
  return 0;
}

int kiln_weights_read_table(const char *path, kiln_weights_header *header,
                            kiln_weights_entry **entries, char *error, size_t error_size) {
  *entries = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(error, error_size, "%s: %s", path, strerror(errno));
    return 1;
  }
  off_t size = fseeko(f, 0, SEEK_END) == 0 ? ftello(f) : -1;
  int failed = size < 0 || fseeko(f, 0, SEEK_SET) != 0 ||
               fread(header, 1, sizeof *header, f) != sizeof *header;
  if (failed)
    snprintf(error, error_size, "%s: not a kiln weights file", path);
  failed = failed || check_header(path, header, (uint64_t)size, error, error_size);
  if (!failed) {
    *entries = calloc(header->num_tensors + 1, sizeof **entries);
    failed = !*entries ||
             fread(*entries, sizeof **entries, header->num_tensors, f) != header->num_tensors ||
             check_table(path, header, *entries, (uint64_t)size, error, error_size);
  }
  fclose(f);
  if (failed) {
    free(*entries);
    *entries = NULL;
  }
  return failed;
}

/* A weights file mapped into this process, shared by the instances that use
 * it (and, through the page cache, with other processes). Files of one
 * content share one mapping: opening a file whose header, size and
 * checksums match an open one takes that one. */
struct kiln_weights {
  struct kiln_weights *next;
  int refs;
  void *map; /* NULL for a caller's buffer */
  size_t map_bytes;
  const kiln_weights_header *header;
  const unsigned char *data;
  char path[];
};

static pthread_mutex_t open_files_lock = PTHREAD_MUTEX_INITIALIZER;
static kiln_weights *open_files;

/* Checks a whole weights file or buffer of `size` bytes at `base`. */
static int check_weights(const char *what, const unsigned char *base, uint64_t size,
                         char *error, size_t error_size) {
  const kiln_weights_header *header = (const kiln_weights_header *)base;
  if (check_header(what, header, size, error, error_size) ||
      check_table(what, header, (const kiln_weights_entry *)(header + 1), size, error,
                  error_size))
    return 1;
  if (kiln_weights_checksum(base + header->data_offset, header->data_bytes) !=
      header->data_checksum) {
    snprintf(error, error_size, "%s: corrupt weights file (the checksum of its data fails)",
             what);
    return 1;
  }
  return 0;
}

/* An open file of this content, with one more reference; or NULL. */
static kiln_weights *share_open_file(const kiln_weights_header *header, size_t size) {
  pthread_mutex_lock(&open_files_lock);
  kiln_weights *w = open_files;
  while (w && !(w->map_bytes == size && memcmp(w->header, header, sizeof *header) == 0))
    w = w->next;
  if (w)
    ++w->refs;
  pthread_mutex_unlock(&open_files_lock);
  return w;
}

kiln_weights *kiln_weights_open(const char *path, char *error, size_t error_size) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(error, error_size, "%s: %s", path, strerror(errno));
    return NULL;
  }
  kiln_weights_header header;
  off_t size = fseeko(f, 0, SEEK_END) == 0 ? ftello(f) : -1;
  if (size < (off_t)sizeof header || fseeko(f, 0, SEEK_SET) != 0 ||
      fread(&header, sizeof header, 1, f) != 1) {
    snprintf(error, error_size, "%s: not a kiln weights file", path);
    fclose(f);
    return NULL;
  }
  kiln_weights *w = share_open_file(&header, (size_t)size);
  if (w) {
    fclose(f);
    return w;
  }
  void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fileno(f), 0);
  int map_errno = errno;
  fclose(f); /* the mapping stays */
  if (map == MAP_FAILED) {
    snprintf(error, error_size, "%s: cannot map it: %s", path, strerror(map_errno));
    return NULL;
  }
  if (!check_weights(path, map, (uint64_t)size, error, error_size) &&
      !(w = calloc(1, sizeof *w + strlen(path) + 1)))
    snprintf(error, error_size, "out of memory");
  if (!w) {
    munmap(map, (size_t)size);
    return NULL;
  }
  w->refs = 1;
  w->map = map;
  w->map_bytes = (size_t)size;
  w->header = map;
  w->data = (const unsigned char *)map + w->header->data_offset;
  memcpy(w->path, path, strlen(path) + 1);
  pthread_mutex_lock(&open_files_lock);
  w->next = open_files;
  open_files = w;
  pthread_mutex_unlock(&open_files_lock);
  return w;
}

kiln_weights *kiln_weights_open_buffer(const void *data, size_t size, char *error,
                                       size_t error_size) {
  if ((uintptr_t)data % KILN_WEIGHTS_ALIGN) {
    snprintf(error, error_size, "a weights buffer must be aligned to %u bytes",
             KILN_WEIGHTS_ALIGN);
    return NULL;
  }
  if (check_weights("weights buffer", data, size, error, error_size))
    return NULL;
  kiln_weights *w = calloc(1, sizeof *w + sizeof "(buffer)");
  if (!w) {
    snprintf(error, error_size, "out of memory");
    return NULL;
  }
  w->refs = 1;
  w->header = data;
  w->data = (const unsigned char *)data + w->header->data_offset;
  memcpy(w->path, "(buffer)", sizeof "(buffer)");
  return w;
}

void kiln_weights_open_again(kiln_weights *w) {
  pthread_mutex_lock(&open_files_lock);
  ++w->refs;
  pthread_mutex_unlock(&open_files_lock);
}

void kiln_weights_close(kiln_weights *w) {
  if (!w)
    return;
  pthread_mutex_lock(&open_files_lock);
  int last = --w->refs == 0;
  if (last && w->map)
    for (kiln_weights **link = &open_files; *link; link = &(*link)->next)
      if (*link == w) {
        *link = w->next;
        break;
      }
  pthread_mutex_unlock(&open_files_lock);
  if (!last)
    return;
  if (w->map)
    munmap(w->map, w->map_bytes);
  free(w);
}

uint64_t kiln_weights_fingerprint(const kiln_weights *w) { return w->header->fingerprint; }
uint64_t kiln_weights_bytes(const kiln_weights *w) { return w->header->data_bytes; }
const char *kiln_weights_path(const kiln_weights *w) { return w->path; }
const void *kiln_weights_data(const kiln_weights *w) { return w->data; }

#ifdef __APPLE__
int _NSGetExecutablePath(char *buf, uint32_t *size);
#endif

/* The directory of the running executable, with a trailing '/'; "" if it
 * cannot be told. */
static void executable_dir(char *dir, size_t size) {
  dir[0] = 0;
#ifdef __APPLE__
  uint32_t length = (uint32_t)size;
  if (_NSGetExecutablePath(dir, &length) != 0)
    dir[0] = 0;
#else
  ssize_t length = readlink("/proc/self/exe", dir, size - 1);
  dir[length > 0 ? length : 0] = 0;
#endif
  char *slash = strrchr(dir, '/');
  if (slash)
    slash[1] = 0;
  else
    dir[0] = 0;
}

kiln_weights *kiln_weights_open_beside_executable(const char *file_name, char *error,
                                                  size_t error_size) {
  char path[4096];
  executable_dir(path, sizeof path);
  size_t used = strlen(path);
  snprintf(path + used, sizeof path - used, "%s", file_name);
  return kiln_weights_open(path, error, error_size);
}
