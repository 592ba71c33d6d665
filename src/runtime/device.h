/* Devices: their description, selection and profiles (device.c, device_profile.c). */
#ifndef TABCL_RUNTIME_DEVICE_H
#define TABCL_RUNTIME_DEVICE_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <stdint.h>

#include "tabcl/tabcl.h"

/* ---- devices (device.c) ----------------------------------------------- */

/* The device description: everything a planner may read about a device.
   Filled from the OpenCL device (tabcl__device_query); planner tests fill
   it by hand. */
typedef struct tabcl__device_desc {
  char name[256];
  char vendor[256];
  char platform_name[256];
  char driver_version[128];
  char device_version[128];
  char opencl_c_version[128];
  char arch[64];                /* "sm_90" on NVIDIA (cl_nv_device_attribute_query),
                                   the device name on AMD, else "" */
  cl_device_type type;
  cl_uint compute_units;
  cl_uint max_work_item_dims;
  size_t max_work_item_sizes[3];
  size_t max_work_group_size;
  size_t preferred_wg_multiple; /* from a probe kernel; 1 if unknown */
  cl_ulong local_mem_size;
  cl_ulong max_mem_alloc_size;
  cl_ulong global_mem_size;
  cl_uint address_bits;
  cl_uint mem_base_addr_align_bits;
  int has_fp64, has_fp16, has_subgroups;
  int has_fma;                  /* CL_FP_FMA in CL_DEVICE_SINGLE_FP_CONFIG: fma() is an
                                   instruction, not a software routine (Mesa's llvmpipe
                                   says no: its fma() ran 200-350x slower than mad()) */
  int is_gpu, is_cpu, is_nvidia, is_amd, is_intel;
  int impl;                     /* the OpenCL implementation (tabcl__impl) */
  int cl_major, cl_minor;       /* device OpenCL version */
  char profile[32];             /* the device profile clamping these values, "" for none */
  uint64_t loop_limit;          /* loop iterations a work-item may run where measured
                                   (runtime/loop_limit.c); 0: none, or not measured yet.
                                   Never set in a context's own info: an executor plans
                                   with a copy (tabcl__target_with_limit) */
} tabcl__device_desc;

/* The OpenCL implementation that runs a device, told by its platform's
   name and the device's vendor, never by the device's name: CPU runtimes
   name their device after the CPU ("AMD EPYC ..." on PoCL and on Intel's
   runtime alike). The tuning table's vendor rows for CPU devices and the
   default device order read it. */
typedef enum tabcl__impl {
  TABCL__IMPL_OTHER = 0,
  TABCL__IMPL_POCL,      /* platform "Portable Computing Language" */
  TABCL__IMPL_INTEL_CPU, /* Intel's CPU runtime, platform "Intel(R) OpenCL" */
  TABCL__IMPL_RUSTICL,   /* Mesa's rusticl (llvmpipe on a CPU) */
} tabcl__impl;
int tabcl__device_impl(const char *platform_name, const char *vendor, cl_device_type type);

/* Fills info for one device; every query is checked. */
tabcl_status tabcl__device_query(cl_platform_id p, cl_device_id d, tabcl__device_desc *info);

/* Resolves a selector (NULL = defaults) to one device. */
tabcl_status tabcl__device_select(const char *selector, cl_platform_id *p, cl_device_id *d);

/* The one walk of the OpenCL platforms and their devices, which device
   listing and selection share (and cl-probe, through tabcl_tools.h):
   clGetPlatformIDs (at most 32 platforms), then for each platform in that
   order clGetDeviceIDs over every device type (at most 64), handed to visit
   with the platform's index and clGetDeviceIDs's result (n is 0 unless it
   is CL_SUCCESS). A visit that returns a failure ends the walk with it. No
   platform at all is TABCL_NO_DEVICE; *platforms_err (may be NULL) gets
   clGetPlatformIDs's result. */
typedef tabcl_status (*tabcl__platform_visit)(void *arg, int index, cl_platform_id p, cl_int err,
                                              const cl_device_id *devs, int n);
tabcl_status tabcl__platform_walk(tabcl__platform_visit visit, void *arg, cl_int *platforms_err);

/* ---- device profiles (device_profile.c) ------------------------------- */

/* Clamps info down to the limits of the GPU family `name` (a row of the
   table in device_profile.c): limits only go down, fp64/fp16 only off, and
   info->profile names the profile. NULL or "" changes nothing. An unknown
   name is TABCL_INVALID_ARGUMENT listing the names; info is then untouched. */
tabcl_status tabcl__device_profile_apply(const char *name, tabcl__device_desc *info);
int tabcl__device_profile_count(void);
const char *tabcl__device_profile_name(int i);    /* NULL outside [0, count) */
const char *tabcl__device_profile_family(int i);  /* what it models */
const char *tabcl__device_profile_source(int i);  /* the dumps its values come from */


/* The host's online cores, asked of the system once a process (device.c). */
int tabcl__online_cores(void);

#endif
