/* Categorical encoding of a CSV column that already lives on the device,
 * inside an application's own OpenCL context.
 *
 * The "application" here owns the OpenCL context, queue and buffers: it
 * uploads the column into its own buffers, hands them to tabcl through
 * tabcl_context_create_cl, gets the codes in a buffer of its own, and runs
 * its own kernel on them ordered by tabcl's event, all without a copy
 * through host memory in between. The codes are checked against a sort on
 * the host.
 *
 *   example_csv_encode_app_context [file.csv [column]]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CL_TARGET_OPENCL_VERSION 120
#include <tabcl/tabcl_cl.h>

#ifndef EXAMPLE_CSV
#define EXAMPLE_CSV "airports.csv"
#endif

/* ---- reading the column (as in csv_encode.c) ---- */

typedef struct column {
  int64_t length, cap;
  int64_t *offsets;
  uint8_t *data;
  size_t data_cap;
} column;

static int push(column *c, const char *s, size_t n) {
  if (c->length + 2 > c->cap) {
    c->cap = c->cap ? 2 * c->cap : 1024;
    int64_t *o = realloc(c->offsets, (size_t)c->cap * sizeof *o);
    if (!o) return 0;
    c->offsets = o;
    if (c->length == 0) c->offsets[0] = 0;
  }
  size_t at = (size_t)c->offsets[c->length];
  if (at + n > c->data_cap) {
    size_t cap = c->data_cap ? c->data_cap : 4096;
    while (cap < at + n) cap *= 2;
    uint8_t *d = realloc(c->data, cap);
    if (!d) return 0;
    c->data = d;
    c->data_cap = cap;
  }
  if (n) memcpy(c->data + at, s, n);
  c->offsets[++c->length] = (int64_t)(at + n);
  return 1;
}

static long csv_field(const char *line, int want, char *buf, size_t cap) {
  int field = 0, quoted = 0;
  size_t n = 0;
  for (const char *p = line; *p && *p != '\n' && *p != '\r'; p++) {
    if (quoted && *p == '"' && p[1] == '"') {
      if (field == want && n < cap) buf[n++] = '"';
      p++;
    } else if (*p == '"') {
      quoted = !quoted;
    } else if (*p == ',' && !quoted) {
      if (field == want) return (long)n;
      field++;
    } else if (field == want && n < cap) {
      buf[n++] = *p;
    }
  }
  return field == want ? (long)n : -1;
}

static int read_column(const char *path, const char *name, column *col) {
  FILE *f = fopen(path, "r");
  if (!f) {
    perror(path);
    return 0;
  }
  char line[4096], field[1024];
  int which = -1;
  if (fgets(line, sizeof line, f))
    for (int i = 0; which < 0; i++) {
      long n = csv_field(line, i, field, sizeof field);
      if (n < 0) break;
      if ((size_t)n == strlen(name) && !memcmp(field, name, (size_t)n)) which = i;
    }
  int ok = which >= 0;
  while (ok && fgets(line, sizeof line, f)) {
    long n = csv_field(line, which, field, sizeof field);
    ok = push(col, field, n < 0 ? 0 : (size_t)n);
  }
  fclose(f);
  return ok;
}

typedef struct label { const uint8_t *p; size_t n; } label;
static int label_cmp(const void *a, const void *b) {
  const label *x = a, *y = b;
  int c = memcmp(x->p, y->p, x->n < y->n ? x->n : y->n);
  return c ? c : (x->n > y->n) - (x->n < y->n);
}
static label label_at(const column *c, int64_t i) {
  label l = {c->data + c->offsets[i], (size_t)(c->offsets[i + 1] - c->offsets[i])};
  return l;
}

/* ---- the application's own OpenCL ---- */

/* The application's choice of device: the first whose device or platform
   name contains $TABCL_DEVICE when that is set (so the test command runs
   this where it runs the suite), else the first GPU, else the first
   device. tabcl_context_create_cl takes whatever the application chose. */
static cl_device_id pick_device(void) {
  cl_platform_id plats[16];
  cl_uint np = 0;
  if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS) return NULL;
  const char *want = getenv("TABCL_DEVICE");
  cl_device_id first = NULL, gpu = NULL;
  for (cl_uint p = 0; p < np && p < 16; p++) {
    cl_device_id devs[16];
    cl_uint nd = 0;
    if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 16, devs, &nd) != CL_SUCCESS) continue;
    char pname[256] = "";
    clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof pname - 1, pname, NULL);
    for (cl_uint i = 0; i < nd && i < 16; i++) {
      char dname[256] = "";
      cl_device_type type = 0;
      clGetDeviceInfo(devs[i], CL_DEVICE_NAME, sizeof dname - 1, dname, NULL);
      clGetDeviceInfo(devs[i], CL_DEVICE_TYPE, sizeof type, &type, NULL);
      if (want && *want && (strstr(dname, want) || strstr(pname, want))) return devs[i];
      if (!first) first = devs[i];
      if (!gpu && (type & CL_DEVICE_TYPE_GPU)) gpu = devs[i];
    }
  }
  return gpu ? gpu : first;
}

/* The application's own kernel: counts the codes that are -1. */
static const char *count_source =
    "kernel void count_unknown(global const int *codes, global int *count) {\n"
    "  if (codes[get_global_id(0)] < 0) atomic_inc(count);\n"
    "}\n";

#define CHECK(err, what)                                         \
  do {                                                           \
    if ((err) != CL_SUCCESS) {                                   \
      fprintf(stderr, "%s failed: %d\n", (what), (int)(err));    \
      return 1;                                                  \
    }                                                            \
  } while (0)

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : EXAMPLE_CSV;
  const char *name = argc > 2 ? argv[2] : "state";
  column col = {0};
  if (!read_column(path, name, &col) || col.length < 2) {
    fprintf(stderr, "could not read column %s of %s\n", name, path);
    return 1;
  }
  const int64_t n = col.length, train = n / 2, bytes = col.offsets[n];

  /* The application's context, queue and buffers. */
  cl_int err = CL_SUCCESS;
  cl_device_id device = pick_device();
  if (!device) {
    fprintf(stderr, "no OpenCL device\n");
    return 1;
  }
  cl_platform_id platform = NULL;
  CHECK(clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof platform, &platform, NULL),
        "clGetDeviceInfo");
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)platform, 0};
  cl_context cl = clCreateContext(props, 1, &device, NULL, NULL, &err);
  CHECK(err, "clCreateContext");
  cl_command_queue queue = clCreateCommandQueue(cl, device, 0, &err);
  CHECK(err, "clCreateCommandQueue");
  /* label bytes padded as tabcl_cl.h asks, so tabcl reads them in place */
  const size_t data_bytes = ((size_t)bytes + 7) / 8 * 8 + 8;
  cl_mem offsets = clCreateBuffer(cl, CL_MEM_READ_ONLY, (size_t)(n + 1) * 8, NULL, &err);
  CHECK(err, "clCreateBuffer");
  cl_mem data = clCreateBuffer(cl, CL_MEM_READ_ONLY, data_bytes, NULL, &err);
  CHECK(err, "clCreateBuffer");
  cl_mem codes = clCreateBuffer(cl, CL_MEM_READ_WRITE, (size_t)n * 4, NULL, &err);
  CHECK(err, "clCreateBuffer");
  cl_mem count = clCreateBuffer(cl, CL_MEM_READ_WRITE, 4, NULL, &err);
  CHECK(err, "clCreateBuffer");
  cl_event uploaded[2];
  const cl_int zero = 0;
  CHECK(clEnqueueFillBuffer(queue, data, &zero, 1, 0, data_bytes, 0, NULL, NULL), "fill");
  CHECK(clEnqueueWriteBuffer(queue, offsets, CL_FALSE, 0, (size_t)(n + 1) * 8, col.offsets, 0,
                             NULL, &uploaded[0]), "write offsets");
  CHECK(clEnqueueWriteBuffer(queue, data, CL_FALSE, 0, (size_t)bytes, col.data, 0, NULL,
                             &uploaded[1]), "write data");
  CHECK(clEnqueueFillBuffer(queue, count, &zero, sizeof zero, 0, 4, 0, NULL, NULL), "fill");

  /* tabcl on the application's objects: it retains them, so the
     application keeps its own references and releases them as it likes. */
  tabcl_context *ctx = NULL;
  tabcl_category_index *idx = NULL;
  tabcl_status s = tabcl_context_create_cl(cl, device, queue, NULL, &ctx);
  /* the training half: the first `train` labels of the same buffers */
  tabcl_strings_cl vocab = {train, col.offsets[train], data, offsets, NULL, 0};
  tabcl_strings_cl all = {n, bytes, data, offsets, NULL, 0};
  cl_event fitted = NULL, looked_up = NULL;
  if (!s) s = tabcl_category_index_fit_cl(ctx, 1, &vocab, TABCL_CODES_BY_VALUE, 2, uploaded,
                                          &fitted, &idx);
  if (!s) s = tabcl_category_index_lookup_cl(idx, 1, &all, &codes, 2, uploaded, &looked_up);
  if (s) {
    fprintf(stderr, "tabcl: %s: %s\n", tabcl_status_name(s), tabcl_last_error());
    return 1;
  }

  /* The application's kernel reads the codes after tabcl's event. */
  cl_program prog = clCreateProgramWithSource(cl, 1, &count_source, NULL, &err);
  CHECK(err, "clCreateProgramWithSource");
  CHECK(clBuildProgram(prog, 1, &device, "", NULL, NULL), "clBuildProgram");
  cl_kernel k = clCreateKernel(prog, "count_unknown", &err);
  CHECK(err, "clCreateKernel");
  CHECK(clSetKernelArg(k, 0, sizeof codes, &codes), "clSetKernelArg");
  CHECK(clSetKernelArg(k, 1, sizeof count, &count), "clSetKernelArg");
  cl_event counted = NULL;
  const size_t global = (size_t)n;
  CHECK(clEnqueueNDRangeKernel(queue, k, 1, NULL, &global, NULL, 1, &looked_up, &counted),
        "clEnqueueNDRangeKernel");
  int32_t *got = malloc((size_t)n * 4), unknown_dev = 0;
  if (!got) return 1;
  CHECK(clEnqueueReadBuffer(queue, codes, CL_TRUE, 0, (size_t)n * 4, got, 1, &looked_up, NULL),
        "read codes");
  CHECK(clEnqueueReadBuffer(queue, count, CL_TRUE, 0, 4, &unknown_dev, 1, &counted, NULL),
        "read count");

  char dname[256] = "";
  clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof dname - 1, dname, NULL);
  printf("application's device: %s\n", dname);
  printf("column %s of %s: %lld rows on the device, %lld categories in the first %lld\n", name,
         path, (long long)n, (long long)tabcl_category_index_codes(idx, 0), (long long)train);

  /* the check, on the host */
  label *sorted = malloc((size_t)train * sizeof *sorted);
  int64_t distinct = 0, unknown = 0, wrong = 0;
  if (!sorted) return 1;
  for (int64_t i = 0; i < train; i++) sorted[i] = label_at(&col, i);
  qsort(sorted, (size_t)train, sizeof *sorted, label_cmp);
  for (int64_t i = 0; i < train; i++)
    if (distinct == 0 || label_cmp(&sorted[distinct - 1], &sorted[i]) != 0)
      sorted[distinct++] = sorted[i];
  for (int64_t i = 0; i < n; i++) {
    label l = label_at(&col, i);
    label *hit = bsearch(&l, sorted, (size_t)distinct, sizeof *sorted, label_cmp);
    int32_t want = hit ? (int32_t)(hit - sorted) : -1;
    unknown += want < 0;
    if (got[i] != want && wrong++ < 5)
      fprintf(stderr, "row %lld: code %d, expected %d\n", (long long)i, got[i], want);
    if (i < 5) printf("  row %lld: %-6.*s -> %d\n", (long long)i, (int)l.n, (const char *)l.p, got[i]);
  }
  printf("the application's kernel counted %d unknown labels (the host: %lld)\n", unknown_dev,
         (long long)unknown);
  int ok = wrong == 0 && unknown_dev == unknown && distinct == tabcl_category_index_codes(idx, 0);
  printf("%s\n", ok ? "codes match the host's sort" : "WRONG codes");

  free(sorted);
  free(got);
  clReleaseEvent(counted);
  clReleaseEvent(looked_up);
  clReleaseEvent(fitted);
  clReleaseEvent(uploaded[0]);
  clReleaseEvent(uploaded[1]);
  clReleaseKernel(k);
  clReleaseProgram(prog);
  tabcl_category_index_destroy(idx);
  tabcl_context_destroy(ctx);   /* the application's objects stay alive */
  clReleaseMemObject(offsets);
  clReleaseMemObject(data);
  clReleaseMemObject(codes);
  clReleaseMemObject(count);
  clReleaseCommandQueue(queue);
  clReleaseContext(cl);
  free(col.offsets);
  free(col.data);
  return ok ? 0 : 1;
}
