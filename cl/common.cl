// Shared by every tabcl program; prepended by the host before the program's
// own source. The host also defines, from the device's capabilities:
//   TABCL_HAS_FP64, TABCL_VENDOR_NVIDIA/AMD/INTEL, TABCL_IS_CPU,
//   TABCL_MAX_WG (max work-group size), TABCL_LOCAL_MEM (bytes).
#ifndef TABCL_HAS_FP64
#define TABCL_HAS_FP64 0
#endif
#if TABCL_HAS_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

typedef ulong u64;
typedef uint u32;
typedef uchar u8;
