/* Device discovery, selection and the limits the library slices by. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>
#include <unistd.h>

#include "runtime/internal.h"

#define MAX_PLATFORMS 32
#define MAX_DEVICES 64

static tabcl_status info_str(cl_device_id d, cl_device_info what, const char *name, char *buf,
                             size_t cap) {
  size_t got = 0;
  cl_int err = TABCL_CL(clGetDeviceInfo(d, what, cap - 1, buf, &got));
  if (err != CL_SUCCESS) {
    buf[0] = '\0';
    return tabcl__cl_fail(err, "clGetDeviceInfo", name);
  }
  buf[got < cap ? got : cap - 1] = '\0';
  return TABCL_OK;
}

#define QUERY(what, var)                                                          \
  do {                                                                            \
    cl_int e_ = TABCL_CL(clGetDeviceInfo(d, what, sizeof(var), &(var), NULL));    \
    if (e_ != CL_SUCCESS) return tabcl__cl_fail(e_, "clGetDeviceInfo", #what);   \
  } while (0)

static int contains_nocase(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  if (n == 0) return 1;
  for (; *hay; hay++) {
    size_t i = 0;
    while (i < n && hay[i] &&
           tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
      i++;
    if (i == n) return 1;
  }
  return 0;
}

int tabcl__device_impl(const char *platform_name, const char *vendor, cl_device_type type) {
  if (contains_nocase(platform_name, "portable computing language") ||
      contains_nocase(vendor, "pocl"))
    return TABCL__IMPL_POCL;
  if (contains_nocase(platform_name, "rusticl")) return TABCL__IMPL_RUSTICL;
  /* Intel's GPU runtimes share the vendor string: only its CPU device */
  if ((type & CL_DEVICE_TYPE_CPU) && contains_nocase(platform_name, "intel") &&
      contains_nocase(vendor, "intel"))
    return TABCL__IMPL_INTEL_CPU;
  return TABCL__IMPL_OTHER;
}

tabcl_status tabcl__device_query(cl_platform_id p, cl_device_id d, tabcl__device_desc *info) {
  tabcl_status s;
  memset(info, 0, sizeof *info);
  if ((s = info_str(d, CL_DEVICE_NAME, "CL_DEVICE_NAME", info->name, sizeof info->name)) ||
      (s = info_str(d, CL_DEVICE_VENDOR, "CL_DEVICE_VENDOR", info->vendor, sizeof info->vendor)) ||
      (s = info_str(d, CL_DRIVER_VERSION, "CL_DRIVER_VERSION", info->driver_version,
                    sizeof info->driver_version)) ||
      (s = info_str(d, CL_DEVICE_VERSION, "CL_DEVICE_VERSION", info->device_version,
                    sizeof info->device_version)) ||
      (s = info_str(d, CL_DEVICE_OPENCL_C_VERSION, "CL_DEVICE_OPENCL_C_VERSION",
                    info->opencl_c_version, sizeof info->opencl_c_version)))
    return s;
  size_t got = 0;
  cl_int err = TABCL_CL(clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof info->platform_name - 1,
                                          info->platform_name, &got));
  if (err != CL_SUCCESS) return tabcl__cl_fail(err, "clGetPlatformInfo", "CL_PLATFORM_NAME");
  info->platform_name[got < sizeof info->platform_name ? got : sizeof info->platform_name - 1] =
      '\0';

  QUERY(CL_DEVICE_TYPE, info->type);
  QUERY(CL_DEVICE_MAX_COMPUTE_UNITS, info->compute_units);
  QUERY(CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, info->max_work_item_dims);
  size_t sizes[16] = {0};
  cl_uint dims = info->max_work_item_dims > 16 ? 16 : info->max_work_item_dims;
  err = TABCL_CL(clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, dims * sizeof(size_t), sizes,
                                 NULL));
  if (err != CL_SUCCESS)
    return tabcl__cl_fail(err, "clGetDeviceInfo", "CL_DEVICE_MAX_WORK_ITEM_SIZES");
  for (int i = 0; i < 3; i++) info->max_work_item_sizes[i] = i < (int)dims ? sizes[i] : 1;
  QUERY(CL_DEVICE_MAX_WORK_GROUP_SIZE, info->max_work_group_size);
  QUERY(CL_DEVICE_LOCAL_MEM_SIZE, info->local_mem_size);
  QUERY(CL_DEVICE_MAX_MEM_ALLOC_SIZE, info->max_mem_alloc_size);
  QUERY(CL_DEVICE_GLOBAL_MEM_SIZE, info->global_mem_size);
  QUERY(CL_DEVICE_ADDRESS_BITS, info->address_bits);
  QUERY(CL_DEVICE_MEM_BASE_ADDR_ALIGN, info->mem_base_addr_align_bits);

  char ext[8192];
  if ((s = info_str(d, CL_DEVICE_EXTENSIONS, "CL_DEVICE_EXTENSIONS", ext, sizeof ext))) return s;
  cl_device_fp_config fp64 = 0;
  err = clGetDeviceInfo(d, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp64, &fp64, NULL);
  if (err != CL_SUCCESS) fp64 = 0; /* optional query on 1.x devices without fp64 */
  info->has_fp64 = fp64 != 0 || strstr(ext, "cl_khr_fp64") != NULL;
  info->has_fp16 = strstr(ext, "cl_khr_fp16") != NULL;
  cl_device_fp_config fp32 = 0;
  QUERY(CL_DEVICE_SINGLE_FP_CONFIG, fp32);
  info->has_fma = (fp32 & CL_FP_FMA) != 0;
  info->has_subgroups = strstr(ext, "cl_khr_subgroups") != NULL ||
                        strstr(ext, "cl_intel_subgroups") != NULL;
  info->is_gpu = (info->type & CL_DEVICE_TYPE_GPU) != 0;
  info->is_cpu = (info->type & CL_DEVICE_TYPE_CPU) != 0;
  /* Vendor paths are GPU paths: a CPU runtime reports its CPU's maker
     ("AuthenticAMD", "GenuineIntel"), which says nothing about the kernels. */
  info->is_nvidia = info->is_gpu && contains_nocase(info->vendor, "nvidia");
  info->is_amd = info->is_gpu && contains_nocase(info->vendor, "advanced micro");
  info->is_intel = info->is_gpu && contains_nocase(info->vendor, "intel");
  info->impl = tabcl__device_impl(info->platform_name, info->vendor, info->type);
  /* The architecture the tuning table keys by: NVIDIA's compute
     capability (an optional query: absent, the key is ""), AMD's device
     name, which is the gfx target ("gfx1100"). */
  if (info->is_nvidia && strstr(ext, "cl_nv_device_attribute_query")) {
    cl_uint major = 0, minor = 0;
    if (clGetDeviceInfo(d, 0x4000 /* CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV */, sizeof major,
                        &major, NULL) == CL_SUCCESS &&
        clGetDeviceInfo(d, 0x4001 /* CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV */, sizeof minor,
                        &minor, NULL) == CL_SUCCESS)
      snprintf(info->arch, sizeof info->arch, "sm_%u%u", major, minor);
  } else if (info->is_amd) {
    snprintf(info->arch, sizeof info->arch, "%.63s", info->name);
  }
  if (sscanf(info->device_version, "OpenCL %d.%d", &info->cl_major, &info->cl_minor) != 2)
    info->cl_major = 1, info->cl_minor = 2;
  /* A good default until a kernel tells the truth (program.c refines it). */
  info->preferred_wg_multiple = info->is_nvidia ? 32 : info->is_amd ? 64 : info->is_gpu ? 16 : 8;
  return TABCL_OK;
}

typedef struct dev_entry {
  cl_platform_id p;
  cl_device_id d;
  int pi, di;
  char name[256], platform[256], vendor[256]; /* vendor: the platform's */
  cl_device_type type;
} dev_entry;

tabcl_status tabcl__platform_walk(tabcl__platform_visit visit, void *arg, cl_int *platforms_err) {
  cl_platform_id plats[MAX_PLATFORMS];
  cl_uint np = 0;
  cl_int err = TABCL_CL(clGetPlatformIDs(MAX_PLATFORMS, plats, &np));
  if (platforms_err) *platforms_err = err;
  if (err == -1001 || (err == CL_SUCCESS && np == 0))
    return tabcl__fail(TABCL_NO_DEVICE, "no OpenCL platform is installed (is an ICD such as "
                                        "pocl-opencl-icd registered in /etc/OpenCL/vendors?)");
  if (err != CL_SUCCESS) return tabcl__cl_fail(err, "clGetPlatformIDs", NULL);
  if (np > MAX_PLATFORMS) np = MAX_PLATFORMS;
  for (cl_uint i = 0; i < np; i++) {
    cl_device_id devs[MAX_DEVICES];
    cl_uint nd = 0;
    err = TABCL_CL(clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, MAX_DEVICES, devs, &nd));
    if (err != CL_SUCCESS) nd = 0;
    if (nd > MAX_DEVICES) nd = MAX_DEVICES;
    tabcl_status s = visit(arg, (int)i, plats[i], err, devs, (int)nd);
    if (s != TABCL_OK) return s;
  }
  return TABCL_OK;
}

typedef struct dev_list {
  dev_entry *out;
  int *count;
} dev_list;

static tabcl_status list_platform(void *arg, int i, cl_platform_id p, cl_int err,
                                  const cl_device_id *devs, int nd) {
  dev_list *l = arg;
  int *count = l->count;
  if (err == CL_DEVICE_NOT_FOUND) return TABCL_OK;
  if (err != CL_SUCCESS) return tabcl__cl_fail(err, "clGetDeviceIDs", NULL);
  for (int j = 0; j < nd && *count < MAX_DEVICES; j++) {
    dev_entry *e = &l->out[(*count)++];
    e->p = p;
    e->d = devs[j];
    e->pi = i;
    e->di = j;
    e->name[0] = e->platform[0] = e->vendor[0] = '\0';
    cl_int e1 = TABCL_CL(clGetDeviceInfo(devs[j], CL_DEVICE_NAME, sizeof e->name - 1, e->name, NULL));
    cl_int e2 = TABCL_CL(clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof e->platform - 1,
                                           e->platform, NULL));
    cl_int e3 = TABCL_CL(clGetDeviceInfo(devs[j], CL_DEVICE_TYPE, sizeof e->type, &e->type, NULL));
    cl_int e4 = TABCL_CL(clGetPlatformInfo(p, CL_PLATFORM_VENDOR, sizeof e->vendor - 1,
                                           e->vendor, NULL));
    if (e1 != CL_SUCCESS) return tabcl__cl_fail(e1, "clGetDeviceInfo", "CL_DEVICE_NAME");
    if (e2 != CL_SUCCESS) return tabcl__cl_fail(e2, "clGetPlatformInfo", "CL_PLATFORM_NAME");
    if (e3 != CL_SUCCESS) return tabcl__cl_fail(e3, "clGetDeviceInfo", "CL_DEVICE_TYPE");
    if (e4 != CL_SUCCESS) return tabcl__cl_fail(e4, "clGetPlatformInfo", "CL_PLATFORM_VENDOR");
    e->name[sizeof e->name - 1] = e->platform[sizeof e->platform - 1] = '\0';
    e->vendor[sizeof e->vendor - 1] = '\0';
  }
  return TABCL_OK;
}

static tabcl_status enumerate(dev_entry *out, int *count) {
  *count = 0;
  dev_list l = {out, count};
  tabcl_status s = tabcl__platform_walk(list_platform, &l, NULL);
  if (s != TABCL_OK) return s;
  if (*count == 0) return tabcl__fail(TABCL_NO_DEVICE, "OpenCL platforms exist but have no device");
  return TABCL_OK;
}

static int parse_index_pair(const char *s, int *pi, int *di) {
  char *end;
  if (!isdigit((unsigned char)s[0])) return 0;
  long a = strtol(s, &end, 10);
  if (*end != ':' || !isdigit((unsigned char)end[1])) return 0;
  long b = strtol(end + 1, &end, 10);
  if (*end != '\0') return 0;
  *pi = (int)a;
  *di = (int)b;
  return 1;
}

tabcl_status tabcl__device_select(const char *selector, cl_platform_id *p, cl_device_id *d) {
  dev_entry devs[MAX_DEVICES];
  int n = 0;
  tabcl_status s = enumerate(devs, &n);
  if (s != TABCL_OK) return s;
  const char *sel = selector;
  if (!sel || !*sel) {
    const char *env = getenv("TABCL_DEVICE");
    if (env && *env) sel = env;
  }
  int pick = -1;
  if (!sel || !*sel) {
    /* DESIGN.md's contract: the first GPU, else the first device. */
    for (int i = 0; i < n && pick < 0; i++)
      if (devs[i].type & CL_DEVICE_TYPE_GPU) pick = i;
    if (pick < 0) pick = 0;
  } else {
    int pi, di;
    if (parse_index_pair(sel, &pi, &di)) {
      for (int i = 0; i < n && pick < 0; i++)
        if (devs[i].pi == pi && devs[i].di == di) pick = i;
    } else {
      for (int i = 0; i < n && pick < 0; i++)
        if (contains_nocase(devs[i].name, sel) || contains_nocase(devs[i].platform, sel)) pick = i;
      /* Only when no name matches, the platform's vendor: PoCL 3.1 names
         its platform "Portable Computing Language" and its devices after
         the CPU, so "pocl" is found only in its vendor, "The pocl project".
         Names go first so that no selector that matched before changes
         device. */
      for (int i = 0; i < n && pick < 0; i++)
        if (contains_nocase(devs[i].vendor, sel)) pick = i;
    }
  }
  if (pick < 0) {
    tabcl__fail(TABCL_NO_DEVICE, "no OpenCL device matches \"%s\"; devices:", sel);
    for (int i = 0; i < n; i++) {
      char line[600];
      snprintf(line, sizeof line, "%s %d:%d %s (%s)", i ? ";" : "", devs[i].pi, devs[i].di,
               devs[i].name, devs[i].platform);
      tabcl__append_error(line);
    }
    return TABCL_NO_DEVICE;
  }
  *p = devs[pick].p;
  *d = devs[pick].d;
  return TABCL_OK;
}

tabcl_status tabcl_devices(tabcl_device_entry *out, int cap, int *count) {
  if (!count) return tabcl__fail(TABCL_INVALID_ARGUMENT, "tabcl_devices: count is NULL");
  if (cap < 0 || (cap > 0 && !out))
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "tabcl_devices: cap is %d and out is %s", cap,
                       out ? "not NULL" : "NULL");
  dev_entry devs[MAX_DEVICES];
  int n = 0;
  tabcl_status s = enumerate(devs, &n);
  if (s != TABCL_OK) {
    *count = 0;
    return s;
  }
  for (int i = 0; i < n && i < cap; i++) {
    tabcl_device_entry *e = &out[i];
    memset(e, 0, sizeof *e);
    snprintf(e->selector, sizeof e->selector, "%d:%d", devs[i].pi, devs[i].di);
    snprintf(e->name, sizeof e->name, "%s", devs[i].name);
    snprintf(e->platform, sizeof e->platform, "%s", devs[i].platform);
    e->type = (devs[i].type & CL_DEVICE_TYPE_GPU)           ? TABCL_DEVICE_TYPE_GPU
              : (devs[i].type & CL_DEVICE_TYPE_CPU)         ? TABCL_DEVICE_TYPE_CPU
              : (devs[i].type & CL_DEVICE_TYPE_ACCELERATOR) ? TABCL_DEVICE_TYPE_ACCELERATOR
                                                            : TABCL_DEVICE_TYPE_OTHER;
  }
  *count = n;
  return TABCL_OK;
}

/* Asked of the system once a process: glibc answers _SC_NPROCESSORS_ONLN by
   reading a file under /sys, too slow for every small call. */
static int online_cores;
static pthread_once_t online_once = PTHREAD_ONCE_INIT;

static void online_init(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  online_cores = n < 1 ? 1 : n > 1024 ? 1024 : (int)n;
}

int tabcl__online_cores(void) {
  pthread_once(&online_once, online_init);
  return online_cores;
}
