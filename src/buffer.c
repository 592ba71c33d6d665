/* Device buffers and blocking transfers. */
#include <stdatomic.h>
#include <string.h>

#include "internal.h"

static atomic_long live_mems;

long tabcl__mem_live(void) { return atomic_load(&live_mems); }

tabcl_status tabcl__buffer_create(tabcl_context *ctx, cl_mem_flags flags, size_t bytes,
                                  void *host, cl_mem *out, const char *what) {
  *out = NULL;
  /* OpenCL forbids zero-size buffers (PoCL answers CL_INVALID_BUFFER_SIZE);
     empty inputs are valid here, so they get a small placeholder. */
  size_t n = bytes ? bytes : 16;
  if ((cl_ulong)n > ctx->info.max_mem_alloc_size)
    return tabcl__fail(TABCL_OUT_OF_MEMORY,
                       "%s needs %zu bytes in one buffer; %s allows at most %llu", what, bytes,
                       ctx->info.name, (unsigned long long)ctx->info.max_mem_alloc_size);
  if (!bytes) {
    flags &= ~(cl_mem_flags)(CL_MEM_COPY_HOST_PTR | CL_MEM_USE_HOST_PTR);
    host = NULL;
  }
  cl_int err = CL_SUCCESS;
  cl_mem m = NULL;
  if (tabcl__fault_cl()) err = CL_MEM_OBJECT_ALLOCATION_FAILURE;
  else m = clCreateBuffer(ctx->cl, flags, n, host, &err);
  if (err != CL_SUCCESS) return tabcl__cl_fail(err, "clCreateBuffer", what);
  atomic_fetch_add(&live_mems, 1);
  *out = m;
  return TABCL_OK;
}

tabcl_status tabcl__buffer_window(tabcl_context *ctx, cl_mem parent, size_t offset, size_t bytes,
                                  size_t unit, cl_mem *out, size_t *skip, const char *what) {
  *out = NULL;
  *skip = 0;
  /* A sub-buffer must start on the device's base address alignment (given
     in bits); a multiple of unit as well, so that skip counts whole elements. */
  size_t align = ctx->info.mem_base_addr_align_bits / 8;
  if (align < unit) align = unit;
  const size_t origin = offset / align * align;
  cl_buffer_region r = {origin, offset + (bytes ? bytes : unit) - origin};
  cl_int err = CL_SUCCESS;
  cl_mem m = NULL;
  if (tabcl__fault_cl()) err = CL_OUT_OF_RESOURCES;
  else m = clCreateSubBuffer(parent, 0, CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
  if (err != CL_SUCCESS) return tabcl__cl_fail(err, "clCreateSubBuffer", what);
  atomic_fetch_add(&live_mems, 1);
  *out = m;
  *skip = offset - origin;
  return TABCL_OK;
}

void tabcl__buffer_release(cl_mem m) {
  if (!m) return;
  atomic_fetch_sub(&live_mems, 1);
  clReleaseMemObject(m);
}

tabcl_status tabcl__write(tabcl_context *ctx, cl_mem m, size_t offset, size_t bytes,
                          const void *src) {
  if (!bytes) return TABCL_OK;
  cl_int err = TABCL_CL(clEnqueueWriteBuffer(ctx->queue, m, CL_TRUE, offset, bytes, src, 0, NULL, NULL));
  return err == CL_SUCCESS ? TABCL_OK : tabcl__cl_fail(err, "clEnqueueWriteBuffer", NULL);
}

tabcl_status tabcl__read(tabcl_context *ctx, cl_mem m, size_t offset, size_t bytes, void *dst) {
  if (!bytes) return TABCL_OK;
  cl_int err = TABCL_CL(clEnqueueReadBuffer(ctx->queue, m, CL_TRUE, offset, bytes, dst, 0, NULL, NULL));
  return err == CL_SUCCESS ? TABCL_OK : tabcl__cl_fail(err, "clEnqueueReadBuffer", NULL);
}

tabcl_status tabcl__fill_zero(tabcl_context *ctx, cl_mem m, size_t bytes) {
  if (!bytes) return TABCL_OK;
  static const cl_uchar zero = 0;
  cl_int err = TABCL_CL(clEnqueueFillBuffer(ctx->queue, m, &zero, 1, 0, bytes, 0, NULL, NULL));
  return err == CL_SUCCESS ? TABCL_OK : tabcl__cl_fail(err, "clEnqueueFillBuffer", NULL);
}

tabcl_status tabcl__finish(tabcl_context *ctx) {
  cl_int err = TABCL_CL(clFinish(ctx->queue));
  return err == CL_SUCCESS ? TABCL_OK : tabcl__cl_fail(err, "clFinish", NULL);
}
