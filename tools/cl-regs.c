/* cl-regs: what NVIDIA's compiler makes of a kernel, for developers.
 *
 * Usage: cl-regs FILE.cl KERNEL "BUILD OPTIONS"...
 *
 * Builds FILE.cl as the library builds a program (tabcl__program_source:
 * common.cl in front, each file taken from FILE's folder when it is there,
 * else the copy built into the library) on the device a tabcl context
 * takes by default (TABCL_DEVICE selects another), once per option string,
 * after the device options the library itself passes (and NVIDIA's
 * -cl-nv-verbose there), and prints the compiler's register and spill lines
 * and the kernel's work-group limit. Register
 * counts decide how many work-groups share an SM, and NVIDIA's OpenCL
 * offers no other way to read them. With CL_REGS_SAVE=PREFIX set, each
 * built program's binary (PTX on NVIDIA) is also written to PREFIXi.bin,
 * i counting the option strings from 1, for ptxas and a disassembler or a
 * profiler run through the CUDA driver. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tabcl/tabcl_tools.h"

/* The program's binary for the context's device, to path. */
static void save_binary(cl_program p, const char *path) {
  cl_uint ndev = 0;
  if (clGetProgramInfo(p, CL_PROGRAM_NUM_DEVICES, sizeof ndev, &ndev, NULL) != CL_SUCCESS ||
      ndev != 1) {
    printf("   cannot save %s: the program is not for one device\n", path);
    return;
  }
  size_t n = 0;
  unsigned char *bin = NULL;
  FILE *f = NULL;
  if (clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL) == CL_SUCCESS && n > 0 &&
      (bin = malloc(n)) != NULL &&
      clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) == CL_SUCCESS &&
      (f = fopen(path, "wb")) != NULL && fwrite(bin, 1, n, f) == n)
    printf("   binary: %s (%zu bytes)\n", path, n);
  else
    printf("   cannot save %s\n", path);
  if (f) fclose(f);
  free(bin);
}

static int report(const tabcl_context *ctx, const char *src, const char *kname,
                  const char *user, int index) {
  char dev[1024], opts[4096];
  tabcl__tools_build_options(ctx, dev, sizeof dev);
  const char *verbose = tabcl__tools_is_nvidia(ctx) ? " -cl-nv-verbose" : "";
  snprintf(opts, sizeof opts, "%s%s %s", dev, verbose, user);
  cl_device_id device = tabcl_context_cl_device(ctx);
  cl_int err;
  cl_program p = clCreateProgramWithSource(tabcl_context_cl_context(ctx), 1, &src, NULL, &err);
  if (err != CL_SUCCESS) {
    printf("== %s: clCreateProgramWithSource failed (%d)\n", user, err);
    return 1;
  }
  cl_int built = clBuildProgram(p, 1, &device, opts, NULL, NULL);
  printf("== %s: build %s (%d)\n", user, built == CL_SUCCESS ? "ok" : "FAILED", built);
  size_t n = 0;
  if (clGetProgramBuildInfo(p, device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) == CL_SUCCESS &&
      n > 0) {
    char *log = malloc(n + 1);
    if (log &&
        clGetProgramBuildInfo(p, device, CL_PROGRAM_BUILD_LOG, n, log, NULL) == CL_SUCCESS) {
      log[n] = 0;
      for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n"))
        if (built != CL_SUCCESS || strstr(line, "Used") || strstr(line, "spill"))
          printf("   %s\n", line);
    }
    free(log);
  }
  int failed = built != CL_SUCCESS;
  const char *save = getenv("CL_REGS_SAVE");
  if (!failed && save) {
    char path[4096];
    snprintf(path, sizeof path, "%s%d.bin", save, index);
    save_binary(p, path);
  }
  if (!failed) {
    cl_kernel k = clCreateKernel(p, kname, &err);
    failed = err != CL_SUCCESS;
    size_t wg = 0;
    if (err != CL_SUCCESS)
      printf("   clCreateKernel(%s) failed (%d)\n", kname, err);
    else if (clGetKernelWorkGroupInfo(k, device, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg,
                                      NULL) == CL_SUCCESS)
      printf("   %s: at most %zu work-items a group\n", kname, wg);
    if (err == CL_SUCCESS) clReleaseKernel(k);
  }
  clReleaseProgram(p);
  return failed;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: cl-regs FILE.cl KERNEL \"BUILD OPTIONS\"...\n");
    return 2;
  }
  /* FILE.cl names the program (its base name) and the kernel folder */
  char dir[4096], name[256];
  const char *slash = strrchr(argv[1], '/'), *base = slash ? slash + 1 : argv[1];
  const size_t blen = strlen(base);
  if (blen <= 3 || strcmp(base + blen - 3, ".cl") != 0 || blen - 3 >= sizeof name) {
    fprintf(stderr, "cl-regs: %s is not a .cl file\n", argv[1]);
    return 2;
  }
  snprintf(name, sizeof name, "%.*s", (int)(blen - 3), base);
  snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - argv[1]) : 1, slash ? argv[1] : ".");
  tabcl_options o = {0};
  o.kernel_dir = dir;
  tabcl_context *ctx = NULL;
  char *src = NULL;
  if (tabcl_context_create(&o, &ctx) != TABCL_OK || tabcl__program_source(ctx, name, &src)) {
    fprintf(stderr, "cl-regs: %s\n", tabcl_last_error());
    tabcl_context_destroy(ctx);
    return 1;
  }
  char vendor[256] = "";
  if (clGetDeviceInfo(tabcl_context_cl_device(ctx), CL_DEVICE_VENDOR, sizeof vendor - 1, vendor,
                      NULL) != CL_SUCCESS)
    vendor[0] = '\0';
  printf("device: %s (%s)\n", tabcl_context_device_name(ctx), vendor);
  int failed = 0;
  for (int i = 3; i < argc; i++) failed |= report(ctx, src, argv[2], argv[i], i - 2);
  tabcl__free(src);
  tabcl_context_destroy(ctx);
  return failed;
}
