/* Device profiles: plan as if the device had the limits of a named GPU
 * family (TABCL_DEVICE_PROFILE or tabcl_options.device_profile).
 *
 * A profile clamps the real device description DOWN, never up: each limit
 * becomes the smaller of the device's and the family's, and fp64 / fp16
 * are turned off where the family lacks them, never on. Everything that
 * reads the description (the tuning table, every planner, the build
 * options of every program) then sees the clamped values, so a test suite
 * run on PoCL under a profile exercises the plans that family would get.
 * The device's type and vendor stay as they are: the vendor flags select
 * vendor kernels (inline PTX), which must only ever be built for the
 * vendor that runs them.
 *
 * Each row names where its values come from: clinfo (or rocminfo) dumps
 * that users posted in public issue threads, cited as "owner/repo#issue".
 * A value no dump seen gave is marked "no source" and is the conservative
 * (smaller) end of what the family is known to have. */
#include <stdio.h>
#include <string.h>

#include "runtime/internal.h"

#define KiB ((cl_ulong)1 << 10)
#define MiB ((cl_ulong)1 << 20)
#define GiB ((cl_ulong)1 << 30)

typedef struct profile_row {
  const char *name;
  const char *family;          /* what it models, for reports */
  size_t max_wg;               /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
  size_t items[3];             /* CL_DEVICE_MAX_WORK_ITEM_SIZES */
  cl_ulong local_mem;          /* CL_DEVICE_LOCAL_MEM_SIZE */
  cl_ulong max_alloc;          /* CL_DEVICE_MAX_MEM_ALLOC_SIZE */
  cl_ulong global_mem;         /* CL_DEVICE_GLOBAL_MEM_SIZE */
  cl_uint compute_units;
  int fp64, fp16;              /* 0: the family lacks it (turned off); 1: left as the device has it */
  int cl_major, cl_minor;      /* OpenCL C version the family's driver reports */
  size_t wave;                 /* preferred work-group multiple (wave / warp / SIMD width) */
  const char *source;
} profile_row;

/* One row a profile. */
static const profile_row profiles[] = {
    /* AMD RDNA3 (gfx1100, Radeon RX 7900 XTX) on ROCm's OpenCL. ROCm's
       OpenCL reports a max work-group of 256 (of 1024 the hardware takes)
       with work-items 1024 x 1024 x 1024 and wave 32 on RDNA: clinfo of a
       gfx1012 in ROCm/legacy-rocm-build#1604 ("Max work group size 256",
       "Wavefront width (AMD) 32"). 64 KiB of LDS a work-group: the GROUP
       segment of rocminfo (ROCm/legacy-rocm-build#1040). 96 CUs in
       rocminfo of a 7900 XTX (ollama/ollama#3158); OpenCL's count was not
       in a dump seen: no source, 48 (its WGPs) as the smaller. Global
       24 GiB (the card); max allocation: no source, 4 GiB (conservative). */
    {"amd-rdna3", "AMD RDNA3 GPU (gfx11, ROCm OpenCL)", 256, {1024, 1024, 1024}, 64 * KiB,
     4 * GiB, 24 * GiB, 48, 1, 1, 2, 0, 32,
     "clinfo in ROCm/legacy-rocm-build#1604 (gfx1012); rocminfo in ollama/ollama#3158 (7900 XTX)"},
    /* AMD CDNA (gfx908 MI100 / gfx90a MI200) on ROCm's OpenCL: clinfo of
       an MI100 in CLRX/CLRX-mirror#34 ("Max compute units 120", "Max work
       group size 256", work-items 1024 x 1024 x 1024); wave 64 (GCN and
       CDNA; "Wavefront width (AMD) 64" in ROCm/ROCR-Runtime#180, a gfx9
       clinfo). 64 KiB of LDS (rocminfo GROUP segment, gfx9:
       ROCm/legacy-rocm-build#1040). Global 32 GiB (MI100); max
       allocation: no source, 4 GiB (conservative). */
    {"amd-cdna", "AMD CDNA GPU (MI100/MI200, ROCm OpenCL)", 256, {1024, 1024, 1024}, 64 * KiB,
     4 * GiB, 32 * GiB, 120, 1, 1, 2, 0, 64,
     "clinfo in CLRX/CLRX-mirror#34 (MI100); clinfo in ROCm/ROCR-Runtime#180 (gfx9 wave 64)"},
    /* Intel Arc (Xe-HPG, DG2: A750/A770) on the compute runtime (NEO):
       clinfo of an A750 in openvinotoolkit/openvino#20012 ("Preferred work
       group size multiple 64", sub-groups 8, 16, 32, "double n/a",
       cl_khr_fp16); "OpenCL C 1.2" among the versions in
       intel/compute-runtime#618 (A770). Max work-group 1024 and 64 KiB of
       local memory: not in the excerpts seen (no source; the values NEO
       reports for Xe, kept as the family's). Max allocation 4 GiB - 8 KiB
       as NEO reports without relaxed allocations (intel/compute-runtime#571,
       an Xe iGPU: "Max memory allocation 4294959104"). 512 EUs (A770); no
       source for OpenCL's count, 512. Global 16 GiB. */
    {"intel-arc", "Intel Arc GPU (Xe-HPG, DG2)", 1024, {1024, 1024, 1024}, 64 * KiB,
     4294959104ULL, 16 * GiB, 512, 0, 1, 1, 2, 64,
     "clinfo in openvinotoolkit/openvino#20012 (A750); intel/compute-runtime#618 (A770), #571"},
    /* Intel Gen12 integrated (Xe-LP: Tiger Lake / Alder Lake Iris Xe, UHD
       770): clinfo of an Alder Lake iGPU in intel/compute-runtime#571
       ("Double-precision Floating-point support (n/a)", "Max memory
       allocation 4294959104"), OpenCL C 1.2 (diku-dk/futhark#1901, 0x46a6).
       Max work-group: no source, 512 (the smaller of what Gen9-Gen12 NEO
       reports); local 64 KiB: no source (Intel's SLM a sub-slice). 96 EUs
       (Iris Xe); global: no source, 8 GiB (shared memory; conservative);
       wave: no source, 16 (Xe-LP runs SIMD8, 16 or 32). */
    {"intel-gen12", "Intel Gen12 integrated GPU (Xe-LP)", 512, {512, 512, 512}, 64 * KiB,
     4294959104ULL, 8 * GiB, 96, 0, 1, 1, 2, 16,
     "clinfo in intel/compute-runtime#571 (Alder Lake iGPU); diku-dk/futhark#1901"},
    /* ARM Mali (Bifrost / Valhall) on ARM's driver: clinfo of a Mali-G52
       in ARM-software/ComputeLibrary#999 ("Max work group size 384", work
       items 384 x 384 x 384, 2 compute units, preferred multiple 8) and of
       a Mali-G71 in 96boards-hikey/linux#59 (work items 256 x 256 x 256):
       the smaller of each. 32 KiB of local memory (plaidml/plaidml#39).
       No fp64 on Bifrost and Valhall: "Double-precision Floating-point
       support (n/a)" for a Mali-G610 in hominoids/sgminer-arm#12. Max
       allocation: the G610 reports its whole 7.26 GiB; phones have 2 to
       8 GiB shared: no source for a small one, so 256 MiB, the
       conservative end; global 2 GiB likewise. */
    {"arm-mali", "ARM Mali GPU (Bifrost/Valhall)", 384, {256, 256, 256}, 32 * KiB, 256 * MiB,
     2 * GiB, 2, 0, 1, 2, 0, 8,
     "clinfo in ARM-software/ComputeLibrary#999 (G52), 96boards-hikey/linux#59 (G71), "
     "hominoids/sgminer-arm#12 (G610), plaidml/plaidml#39"},
    /* Qualcomm Adreno (6xx / 7xx) on Qualcomm's driver: clinfo of an
       Adreno 750 in Oblomov/clinfo#92 ("Double-precision Floating-point
       support (n/a)", "Max memory allocation 1073741824", global 5.4 GiB)
       and of an Adreno in BOINC/boinc#3613 ("Local memory size 32768").
       Max work-group: no source in the dumps seen, 1024 (the family's
       usual value; kept within the 256-1024 the issue names). Compute
       units: no source, 2. Wave: no source, 64 (Adreno waves are 64 or
       128 wide). */
    {"qualcomm-adreno", "Qualcomm Adreno GPU (6xx/7xx)", 1024, {1024, 1024, 1024}, 32 * KiB,
     1 * GiB, 4 * GiB, 2, 0, 1, 2, 0, 64,
     "clinfo in Oblomov/clinfo#92 (Adreno 750), BOINC/boinc#3613 (Adreno)"},
    /* Apple M-series on Apple's OpenCL (1.2, frozen): clinfo of an M1 in
       hashcat/hashcat#2976 ("OpenCL C 1.2", 8 compute units); "Max work
       group size 256" and "Local memory size 32 KB" for an M1 Pro in
       GPGPUCourse/GPGPUTasks2025#43; "limited to 1024 MB allocatable in
       one block" of 10922 MB in hashcat/hashcat#2728 (M1). No
       cl_khr_fp64 in the M1 Pro's extensions (GPGPUCourse/GPGPUTasks2025
       #54), nor cl_khr_fp16. Work-items: no source, 256 each. SIMD width
       32 (Apple's GPUs): no OpenCL dump seen. */
    {"apple-m", "Apple M-series GPU (Apple OpenCL 1.2)", 256, {256, 256, 256}, 32 * KiB,
     1 * GiB, 10922 * MiB, 8, 0, 0, 1, 2, 32,
     "clinfo in hashcat/hashcat#2976, #2728 (M1); GPGPUCourse/GPGPUTasks2025#43, #54 (M1 Pro)"},
};
#undef KiB
#undef MiB
#undef GiB

enum { PROFILE_COUNT = (int)(sizeof profiles / sizeof profiles[0]) };

int tabcl__device_profile_count(void) { return PROFILE_COUNT; }

const char *tabcl__device_profile_name(int i) {
  return i >= 0 && i < PROFILE_COUNT ? profiles[i].name : NULL;
}

const char *tabcl__device_profile_source(int i) {
  return i >= 0 && i < PROFILE_COUNT ? profiles[i].source : NULL;
}

const char *tabcl__device_profile_family(int i) {
  return i >= 0 && i < PROFILE_COUNT ? profiles[i].family : NULL;
}

#define CLAMP(field, limit)                      \
  do {                                           \
    if ((limit) < (field)) (field) = (limit);    \
  } while (0)

tabcl_status tabcl__device_profile_apply(const char *name, tabcl__device_desc *info) {
  if (!name || !*name) return TABCL_OK;
  const profile_row *r = NULL;
  for (int i = 0; i < PROFILE_COUNT && !r; i++)
    if (strcmp(profiles[i].name, name) == 0) r = &profiles[i];
  if (!r) {
    char names[512] = "";
    size_t n = 0;
    for (int i = 0; i < PROFILE_COUNT && n < sizeof names; i++)
      n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", i ? ", " : "", profiles[i].name);
    return tabcl__fail(TABCL_INVALID_ARGUMENT,
                       "tabcl_context_create: unknown device profile \"%.64s\"; profiles: %s", name,
                       names);
  }
  tabcl__device_desc d = *info;
  CLAMP(d.max_work_group_size, r->max_wg);
  for (int i = 0; i < 3; i++) CLAMP(d.max_work_item_sizes[i], r->items[i]);
  /* A group cannot be larger than its first dimension allows either way;
     keeping the two consistent spares every planner a second min(). */
  CLAMP(d.max_work_item_sizes[0], d.max_work_group_size);
  CLAMP(d.local_mem_size, r->local_mem);
  CLAMP(d.global_mem_size, r->global_mem);
  CLAMP(d.max_mem_alloc_size, r->max_alloc);
  CLAMP(d.max_mem_alloc_size, d.global_mem_size);
  CLAMP(d.compute_units, r->compute_units);
  if (!r->fp64) d.has_fp64 = 0;
  if (!r->fp16) d.has_fp16 = 0;
  if (r->cl_major < d.cl_major || (r->cl_major == d.cl_major && r->cl_minor < d.cl_minor)) {
    d.cl_major = r->cl_major;
    d.cl_minor = r->cl_minor;
  }
  int cmaj = 0, cmin = 0;
  if (sscanf(d.opencl_c_version, "OpenCL C %d.%d", &cmaj, &cmin) == 2 &&
      (r->cl_major < cmaj || (r->cl_major == cmaj && r->cl_minor < cmin)))
    snprintf(d.opencl_c_version, sizeof d.opencl_c_version, "OpenCL C %d.%d", r->cl_major,
             r->cl_minor);
  /* The wave width is the family's, not a limit: a hint planners may
     round groups to, never above the group limit. */
  if (r->wave) d.preferred_wg_multiple = r->wave < d.max_work_group_size ? r->wave
                                                                          : d.max_work_group_size;
  snprintf(d.profile, sizeof d.profile, "%s", r->name);
  *info = d;
  return TABCL_OK;
}
#undef CLAMP
