/* cl-regs: what NVIDIA's compiler makes of a kernel, for developers.
 *
 * Usage: cl-regs FILE.cl KERNEL "BUILD OPTIONS"...
 *
 * Builds cl/common.cl followed by FILE.cl on the first GPU of the first
 * platform (else its first device), once per option string (after the device defines the library
 * passes; NVIDIA's -cl-nv-verbose is added on NVIDIA), and prints the
 * compiler's register and spill lines and the kernel's work-group limit.
 * Run from the project root. Register counts decide how many work-groups
 * share an SM, and NVIDIA's OpenCL offers no other way to read them. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  if (fseek(f, 0, SEEK_END) == 0) {
    long n = ftell(f);
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) != NULL) {
      if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
      } else {
        buf[n] = 0;
      }
    }
  }
  fclose(f);
  return buf;
}

static int report(cl_context ctx, cl_device_id dev, int nvidia, const char *src[2],
                  const char *kname, const char *user) {
  char opts[4096];
  snprintf(opts, sizeof opts,
           "-cl-std=CL1.2 -DTABCL_HAS_FP64=1 -DTABCL_VENDOR_NVIDIA=%d -DTABCL_VENDOR_AMD=0 "
           "-DTABCL_VENDOR_INTEL=0 -DTABCL_IS_CPU=0 -DTABCL_MAX_WG=1024 -DTABCL_LOCAL_MEM=49152%s %s",
           nvidia, nvidia ? " -cl-nv-verbose" : "", user);
  cl_int err;
  cl_program p = clCreateProgramWithSource(ctx, 2, src, NULL, &err);
  if (err != CL_SUCCESS) {
    printf("== %s: clCreateProgramWithSource failed (%d)\n", user, err);
    return 1;
  }
  cl_int built = clBuildProgram(p, 1, &dev, opts, NULL, NULL);
  printf("== %s: build %s (%d)\n", user, built == CL_SUCCESS ? "ok" : "FAILED", built);
  size_t n = 0;
  if (clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) == CL_SUCCESS && n > 0) {
    char *log = malloc(n + 1);
    if (log && clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, n, log, NULL) == CL_SUCCESS) {
      log[n] = 0;
      for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n"))
        if (built != CL_SUCCESS || strstr(line, "Used") || strstr(line, "spill"))
          printf("   %s\n", line);
    }
    free(log);
  }
  if (built == CL_SUCCESS) {
    cl_kernel k = clCreateKernel(p, kname, &err);
    size_t wg = 0;
    if (err != CL_SUCCESS)
      printf("   clCreateKernel(%s) failed (%d)\n", kname, err);
    else if (clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL) ==
             CL_SUCCESS)
      printf("   %s: at most %zu work-items a group\n", kname, wg);
    if (err == CL_SUCCESS) clReleaseKernel(k);
  }
  clReleaseProgram(p);
  return built != CL_SUCCESS;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: cl-regs FILE.cl KERNEL \"BUILD OPTIONS\"...\n");
    return 2;
  }
  const char *src[2] = {slurp("cl/common.cl"), slurp(argv[1])};
  if (!src[0] || !src[1]) {
    fprintf(stderr, "cl-regs: cannot read cl/common.cl or %s (run from the project root)\n",
            argv[1]);
    return 2;
  }
  cl_platform_id pl;
  cl_device_id dev;
  char vendor[256] = "";
  cl_int err = clGetPlatformIDs(1, &pl, NULL);
  if (err == CL_SUCCESS && clGetDeviceIDs(pl, CL_DEVICE_TYPE_GPU, 1, &dev, NULL) != CL_SUCCESS)
    err = clGetDeviceIDs(pl, CL_DEVICE_TYPE_ALL, 1, &dev, NULL);
  if (err == CL_SUCCESS) err = clGetDeviceInfo(dev, CL_DEVICE_VENDOR, sizeof vendor, vendor, NULL);
  if (err != CL_SUCCESS) {
    fprintf(stderr, "cl-regs: no OpenCL device found (%d)\n", err);
    return 1;
  }
  cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  if (err != CL_SUCCESS) {
    fprintf(stderr, "cl-regs: clCreateContext failed (%d)\n", err);
    return 1;
  }
  const int nvidia = strstr(vendor, "NVIDIA") != NULL;
  int failed = 0;
  for (int i = 3; i < argc; i++) failed |= report(ctx, dev, nvidia, src, argv[2], argv[i]);
  clReleaseContext(ctx);
  free((void *)src[0]);
  free((void *)src[1]);
  return failed;
}
