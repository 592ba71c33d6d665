/* tabcl: the compute core of a tabular foundation model on any OpenCL device.
 *
 * This header is the public contract. It needs no OpenCL header; the
 * device-resident variants live in <tabcl/tabcl_cl.h>.
 *
 * Thread safety: every call that takes a tabcl_context may be made from
 * several threads at once on the same context. A tabcl_category_index may be
 * used for lookup and align from several threads at once, and saved (or
 * asked for its columns and codes) while they run: none of these change it.
 * Destroying an object while another thread uses it is the caller's error.
 * tabcl_last_error() is per thread. Calls on one context share its one
 * in-order queue, so their device work runs one call after another; threads
 * that want their device work to overlap use a context each.
 */
#ifndef TABCL_TABCL_H
#define TABCL_TABCL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TABCL_VERSION_MAJOR 0
#define TABCL_VERSION_MINOR 1
#define TABCL_VERSION_PATCH 0
#define TABCL_VERSION_NUMBER \
  (TABCL_VERSION_MAJOR * 10000 + TABCL_VERSION_MINOR * 100 + TABCL_VERSION_PATCH)
#define TABCL_VERSION_STRING "0.1.0"

#if defined(_WIN32) && defined(TABCL_SHARED_BUILD)
#define TABCL_API __declspec(dllexport)
#elif defined(__GNUC__)
#define TABCL_API __attribute__((visibility("default")))
#else
#define TABCL_API
#endif

/* The library's version at run time, as TABCL_VERSION_NUMBER / _STRING.
   They cannot fail. */
TABCL_API unsigned tabcl_version_number(void);
TABCL_API const char *tabcl_version_string(void);

typedef enum tabcl_status {
  TABCL_OK = 0,
  TABCL_INVALID_ARGUMENT = 1,  /* bad sizes, NULL pointers, offsets that decrease, ... */
  TABCL_OUT_OF_MEMORY = 2,     /* host or device */
  TABCL_NO_DEVICE = 3,         /* no OpenCL platform, or no device matches the selector */
  TABCL_BUILD_FAILED = 4,      /* kernel compile failed; tabcl_last_error() holds the log */
  TABCL_UNSUPPORTED = 5,       /* e.g. f64 on a device without fp64 */
  TABCL_TYPE_MISMATCH = 6,     /* reserved for arguments of one call whose element types
                                  differ; no call of this version returns it */
  TABCL_OPENCL_ERROR = 7,      /* any other OpenCL failure; the detail names call and code */
  TABCL_IO_ERROR = 8,
  TABCL_CORRUPT_DATA = 9,      /* a saved index or cache file that fails its checks */
} tabcl_status;

/* The status's name: "TABCL_OK", ...; "TABCL_UNKNOWN_STATUS" for a value
   outside the enum. A static string; it cannot fail. */
TABCL_API const char *tabcl_status_name(tabcl_status s);
/* Detail of the calling thread's last failure; "" when the thread has none.
   The text stays valid until the thread's next tabcl call. */
TABCL_API const char *tabcl_last_error(void);

typedef struct tabcl_context tabcl_context;
typedef struct tabcl_options {
  const char *device;       /* NULL: $TABCL_DEVICE, else the first GPU, else the first device.
                               "P:D" (platform and device index) or a case-insensitive
                               substring of the device or platform name (else, when
                               no name holds it, of the platform's vendor) */
  const char *kernel_dir;   /* NULL: $TABCL_KERNEL_DIR, else the sources built into the library */
  const char *cache_dir;    /* NULL: $TABCL_CACHE_DIR, else $XDG_CACHE_HOME/tabcl or
                               ~/.cache/tabcl; "" turns the disk cache off */
  int64_t max_batch_per_launch; /* 0: from device limits; tests set it low to force slicing */
  const char *tune;         /* NULL: $TABCL_TUNE. Tuning entries "key=value;..." over the
                               built-in table (docs/tuning.md); an entry that does not
                               parse or fit the device fails with TABCL_INVALID_ARGUMENT */
  const char *device_profile; /* NULL: $TABCL_DEVICE_PROFILE; "" none. Plan as if the device
                               had the limits of a GPU family ("amd-rdna3", "amd-cdna",
                               "intel-arc", "intel-gen12", "arm-mali", "qualcomm-adreno",
                               "apple-m"; docs/profiles.md): the device's own
                               limits are clamped down, never raised. An unknown name fails
                               with TABCL_INVALID_ARGUMENT listing the names */
} tabcl_options;

/* Opens the selected device: its OpenCL context and in-order queue, its
   description and limits, the tuning in force. Kernels are built later, by
   the first call that needs them. opts == NULL means all defaults.
   Returns TABCL_OK, TABCL_INVALID_ARGUMENT (out NULL; a tuning entry or a
   profile name that does not parse or fit; the message names it),
   TABCL_NO_DEVICE (no platform, or nothing matches the selector; the
   message lists the devices), TABCL_OUT_OF_MEMORY or TABCL_OPENCL_ERROR.
   On failure *out is set to NULL and nothing is left allocated. */
TABCL_API tabcl_status tabcl_context_create(const tabcl_options *opts, tabcl_context **out);
/* Ends the context: joins its host threads and releases the OpenCL objects
   and memory it made (a CPU device first stores its programs in the disk
   cache, as build.store says); commands already enqueued still complete
   (tabcl_cl.h says how for a context on the caller's own queue). Objects
   made on it (indexes, streams, pinned memory) must be destroyed first.
   NULL is fine. */
TABCL_API void tabcl_context_destroy(tabcl_context *ctx);

typedef struct tabcl_stats {
  uint64_t programs_built;          /* compiled from source */
  uint64_t programs_from_cache;     /* loaded as binaries from the disk cache */
  uint64_t kernel_launches;
} tabcl_stats;
/* ctx == NULL or out == NULL: nothing happens (out, if given, is zeroed). */
TABCL_API void tabcl_context_stats(const tabcl_context *ctx, tabcl_stats *out);

/* The selected device's name and its platform's name, for reports; ""
   for a NULL context. Valid until the context is destroyed. */
TABCL_API const char *tabcl_context_device_name(const tabcl_context *ctx);
TABCL_API const char *tabcl_context_platform_name(const tabcl_context *ctx);

/* The OpenCL devices tabcl can select, in the loader's order: platforms as
   clGetPlatformIDs returns them (the order of the ICD files the loader
   reads), devices as each platform lists them. selector is the "P:D" string
   that picks this device; type is one of TABCL_DEVICE_TYPE_*. */
enum {
  TABCL_DEVICE_TYPE_OTHER = 0,
  TABCL_DEVICE_TYPE_GPU = 1,
  TABCL_DEVICE_TYPE_CPU = 2,
  TABCL_DEVICE_TYPE_ACCELERATOR = 3,
};
typedef struct tabcl_device_entry {
  char selector[32];
  char name[256];
  char platform[256];
  int type;
} tabcl_device_entry;
/* Fills out[0, min(cap, count)) and sets *count to the number of devices.
   out may be NULL when cap is 0 (to ask for the count). No platform or no
   device at all is TABCL_NO_DEVICE with *count = 0; count NULL, a negative
   cap or out NULL with cap > 0 is TABCL_INVALID_ARGUMENT; a failed OpenCL
   query is TABCL_OPENCL_ERROR. */
TABCL_API tabcl_status tabcl_devices(tabcl_device_entry *out, int cap, int *count);

/* A string column on the host, Arrow layout (large_utf8 offsets). Labels are
   bytes: no encoding is assumed or checked. */
typedef struct tabcl_strings_view {
  int64_t length;               /* number of labels, >= 0 */
  const int64_t *offsets;       /* length + 1 non-negative, non-decreasing entries;
                                   offsets[0] may be > 0 (a slice) */
  const uint8_t *data;          /* may be NULL only when no label has a byte */
  const uint8_t *validity;      /* bit i (LSB first) set = label i present; NULL = all present */
} tabcl_strings_view;

typedef enum tabcl_code_order {
  TABCL_CODES_BY_POSITION = 0,  /* code = position in the fitted vocabulary; a label that
                                   occurs several times gets its LAST position */
  TABCL_CODES_BY_VALUE = 1,     /* code = rank of the label among the column's distinct
                                   labels, ordered bytewise (memcmp; a prefix sorts first) */
} tabcl_code_order;

typedef struct tabcl_category_index tabcl_category_index;
/* Fits an index of ncols (>= 1) columns, one vocabulary each, on ctx's
   device: labels are hashed and sorted there, and the hash seed raised
   until distinct labels have distinct hashes. Null entries of a vocabulary
   are never matched. The index keeps no pointer into the caller's memory.
   Returns TABCL_OK, TABCL_INVALID_ARGUMENT (NULL arguments, ncols < 1, an
   order outside the enum, a view whose offsets are negative or decrease;
   the message names the column and index), TABCL_OUT_OF_MEMORY (host or
   device; also a buffer larger than the device allows), TABCL_BUILD_FAILED
   or TABCL_OPENCL_ERROR. On failure *out is left as it was. */
TABCL_API tabcl_status tabcl_category_index_fit(tabcl_context *ctx, int ncols,
                                                const tabcl_strings_view *vocabularies,
                                                tabcl_code_order order,
                                                tabcl_category_index **out);
/* Releases the index's device and host memory; NULL is fine. */
TABCL_API void tabcl_category_index_destroy(tabcl_category_index *idx);
/* The fitted column count; 0 for a NULL index. */
TABCL_API int tabcl_category_index_columns(const tabcl_category_index *idx);
/* BY_POSITION: the vocabulary's length; BY_VALUE: its number of distinct labels.
   -1 for a NULL index or a column out of range. */
TABCL_API int64_t tabcl_category_index_codes(const tabcl_category_index *idx, int col);

/* codes[c][i]: the fitted code of queries[c] label i, or -1 when the label is
   null or not in column c's vocabulary. ncols equals the fitted column count;
   codes[c] holds queries[c].length int32 (it may be NULL for an empty column).
   The index is not changed. Returns TABCL_OK, TABCL_INVALID_ARGUMENT (NULL
   arguments, ncols not the index's, a bad view; the message names the
   column and index), TABCL_OUT_OF_MEMORY, TABCL_BUILD_FAILED or
   TABCL_OPENCL_ERROR. On failure no code is written. */
TABCL_API tabcl_status tabcl_category_index_lookup(tabcl_category_index *idx, int ncols,
                                                   const tabcl_strings_view *queries,
                                                   int32_t *const *codes);

/* A dictionary-encoded column: its own categories and codes into them. */
typedef struct tabcl_dictionary_view {
  tabcl_strings_view categories;
  int64_t length;
  const int32_t *codes;         /* -1 = missing; any other value outside
                                   [0, categories.length) is TABCL_INVALID_ARGUMENT */
} tabcl_dictionary_view;
/* codes[c][i]: the fitted code of inputs[c].categories[inputs[c].codes[i]], or
   -1 (a missing code, a null category or one not in the vocabulary); codes[c]
   holds inputs[c].length int32. The index is not changed. Returns TABCL_OK,
   TABCL_INVALID_ARGUMENT (as lookup, and a code outside [-1,
   categories.length), naming the column and row), TABCL_OUT_OF_MEMORY,
   TABCL_BUILD_FAILED or TABCL_OPENCL_ERROR. On failure no code is written. */
TABCL_API tabcl_status tabcl_category_index_align(tabcl_category_index *idx, int ncols,
                                                  const tabcl_dictionary_view *inputs,
                                                  int32_t *const *codes);

/* The saved state is the vocabularies and the code order; hashes are rebuilt
   on load. Saving is atomic: a failure never leaves a partial file at path.
   A truncated, extended or altered file is TABCL_CORRUPT_DATA; a path that
   cannot be read or written (missing, a directory, no such folder) is
   TABCL_IO_ERROR.
   save writes the index to path, replacing a file there; the index is not
   changed. Returns TABCL_OK, TABCL_INVALID_ARGUMENT (NULL arguments),
   TABCL_IO_ERROR (also a full disk: the old file stays as it was),
   TABCL_OUT_OF_MEMORY or TABCL_OPENCL_ERROR (reading the labels back).
   load reads a saved file and fits it again on ctx's device. Returns
   TABCL_OK, TABCL_INVALID_ARGUMENT, TABCL_IO_ERROR, TABCL_CORRUPT_DATA, or
   any status of tabcl_category_index_fit. On failure *out is left as it
   was. */
TABCL_API tabcl_status tabcl_category_index_save(const tabcl_category_index *idx,
                                                 const char *path);
TABCL_API tabcl_status tabcl_category_index_load(tabcl_context *ctx, const char *path,
                                                 tabcl_category_index **out);

typedef enum tabcl_dtype { TABCL_F32 = 0, TABCL_F16 = 1, TABCL_BF16 = 2, TABCL_F64 = 3 } tabcl_dtype;
typedef enum tabcl_mask_kind {
  TABCL_MASK_NONE = 0,
  TABCL_MASK_BOOL = 1,          /* uint8, nonzero = may attend */
  TABCL_MASK_ADD = 2,           /* same dtype as q, added to the scaled scores */
} tabcl_mask_kind;

/* q [B, Lq, Hq, D], k and v [B, Lk, Hkv, D], out [B, Lq, Hq, D], contiguous.
   Hq is a multiple of Hkv: query head h reads key/value head h / (Hq / Hkv).
   The mask is [B or 1, Hq or 1, Lq or 1, Lk], contiguous; an extent of 1
   is shared by every batch entry, head or query (the flags below), so a
   key-padding mask is [B, 1, 1, Lk]. causal: query i sees keys j <= i.
   A query row that may attend no key gives zeros: every key masked out by
   a false boolean, by -inf in an additive mask or by causality, or
   kv_len = 0. A zero batch or q_len is a valid call that writes nothing.
   f32, f16 and bf16 are computed with f32 precision, f64 in f64; on an
   NVIDIA GPU that passed the check cl-probe calls sdpa_mma, f32/f16/bf16
   run on tensor cores with operands split so as to keep that precision
   (docs/attention.md; TABCL_SDPA_MMA=0 turns that off). */
typedef struct tabcl_sdpa_desc {
  int64_t batch, q_len, kv_len;
  int32_t q_heads, kv_heads, head_dim; /* head_dim > 256 runs on the CLBlast path, and is
                                          TABCL_UNSUPPORTED in a build without CLBlast */
  tabcl_dtype dtype;            /* of q, k, v, out and an additive mask */
  double scale;                 /* 0: 1 / sqrt(head_dim) */
  int causal;
  tabcl_mask_kind mask;
  int mask_batch_broadcast;     /* mask's batch extent is 1 */
  int mask_head_broadcast;      /* mask's head extent is 1 */
  int mask_query_broadcast;     /* mask's query extent is 1 (0 or 1): [B or 1, Hq or 1, 1, Lk] */
} tabcl_sdpa_desc;
/* out = softmax(scale * q k^T + mask) v for host tensors laid out as above.
   Returns when out is written. Returns TABCL_OK, TABCL_INVALID_ARGUMENT (NULL
   tensors, negative or inconsistent sizes, a dtype or mask kind outside the
   enum; the message names the field), TABCL_UNSUPPORTED (f64 on a device
   without fp64; a head dim over 256 in a build without CLBlast),
   TABCL_OUT_OF_MEMORY, TABCL_BUILD_FAILED or TABCL_OPENCL_ERROR. On failure
   out is left as it was. */
TABCL_API tabcl_status tabcl_sdpa_host(tabcl_context *ctx, const tabcl_sdpa_desc *desc,
                                       const void *q, const void *k, const void *v,
                                       const void *mask, void *out);

/* ---- streaming host data to the device ahead of use ----

   A stream uploads a sequence of items (each one to TABCL_STREAM_MAX_PARTS
   host buffers, e.g. an estimator's cached K and V) into `depth` sets of
   device buffers on a transfer queue of the context, so that the upload of
   item i + 1 runs while item i is in use. Each set is refilled only after
   the event the caller gave back with the item it held (tabcl_stream_next
   and tabcl_stream_done in tabcl_cl.h); a set whose upload failed is never
   handed out. The host buffers are read while the stream lives: they must
   stay valid and unchanged until tabcl_stream_destroy returns. Uploads from
   memory of tabcl_stream_host_alloc (pinned) can overlap computation; from
   ordinary memory a driver may copy synchronously (NVIDIA's does). */
#define TABCL_STREAM_MAX_PARTS 8
typedef struct tabcl_stream tabcl_stream;
typedef struct tabcl_stream_desc {
  int64_t count;            /* items, >= 0 */
  int parts;                /* host buffers per item, 1 .. TABCL_STREAM_MAX_PARTS */
  int depth;                /* sets of device buffers resident at once, 1 .. 64 */
  const void *const *host;  /* count * parts pointers: item i, part p at [i * parts + p];
                               NULL only where that part has 0 bytes */
  const size_t *bytes;      /* count * parts sizes, same order; a part's device buffer
                               is as large as its largest item */
} tabcl_stream_desc;
/* Allocates the device buffers and enqueues the uploads of the first depth
   items. Returns TABCL_OK, TABCL_INVALID_ARGUMENT (NULL arguments, a count,
   parts or depth out of range, a NULL host pointer of a part with bytes),
   TABCL_OUT_OF_MEMORY or TABCL_OPENCL_ERROR. On failure nothing stays
   allocated and *out is left as it was. */
TABCL_API tabcl_status tabcl_stream_create(tabcl_context *ctx, const tabcl_stream_desc *desc,
                                           tabcl_stream **out);
/* Waits for every upload the stream enqueued and every event given back to
   it (destroying a stream with work in flight is allowed and blocks until
   that work ends), then releases its buffers. Buffers of items handed out
   and not given back stay alive for the commands already enqueued on them
   (OpenCL frees a buffer after those finish) but may not be used in new
   commands. NULL is fine. */
TABCL_API void tabcl_stream_destroy(tabcl_stream *st);
/* Items handed out so far (the next one tabcl_stream_next gives); it cannot
   fail. */
TABCL_API int64_t tabcl_stream_position(const tabcl_stream *st);

/* Pinned host memory for stream items: a mapping of a device-visible host
   buffer (CL_MEM_ALLOC_HOST_PTR) of ctx, which drivers copy from directly.
   Free it with tabcl_stream_host_free on the same context, after every
   stream that reads it is destroyed and before the context is. Returns
   TABCL_OK, TABCL_INVALID_ARGUMENT (NULL arguments), TABCL_OUT_OF_MEMORY or
   TABCL_OPENCL_ERROR; on failure *out is left as it was. */
TABCL_API tabcl_status tabcl_stream_host_alloc(tabcl_context *ctx, size_t bytes, void **out);
/* Unmaps and releases memory of tabcl_stream_host_alloc. NULL is fine; a
   pointer tabcl_stream_host_alloc did not give for ctx is
   TABCL_INVALID_ARGUMENT and frees nothing; a failed unmap returns its
   status (TABCL_OPENCL_ERROR, or TABCL_OUT_OF_MEMORY) and keeps the memory. */
TABCL_API tabcl_status tabcl_stream_host_free(tabcl_context *ctx, void *p);

/* The common case: one query batch q [B, Lq, Hq, D] against each of
   `count` estimators' cached K and V in turn, k[i] and v[i] [B, kv_len[i],
   Hkv, D] in host memory (pinned or not), streamed `depth` estimators ahead:
   out[i] [B, Lq, Hq, D] (host memory) = tabcl_sdpa_host(q, k[i], v[i]),
   bit for bit. desc gives everything but the key length, which kv_len
   gives per estimator (kv_len NULL: desc->kv_len for all); desc->mask must
   be TABCL_MASK_NONE. Returns when every output is written: TABCL_OK, or any
   status of tabcl_stream_create and tabcl_sdpa_host (TABCL_INVALID_ARGUMENT
   for a bad descriptor, count or depth, checked before anything is
   enqueued). On failure after that, some outputs may be written. */
TABCL_API tabcl_status tabcl_stream_sdpa_host(tabcl_context *ctx, const tabcl_sdpa_desc *desc,
                                              int count, const int64_t *kv_len, const void *q,
                                              const void *const *k, const void *const *v,
                                              int depth, void *const *out);

/* Self-checks: each kernel family registers one; cl-probe runs them all.
   A check runs on ctx's device, compares with a host reference and returns
   TABCL_OK or the failure (tabcl_last_error() says what differed), or
   TABCL_UNSUPPORTED when what it checks does not exist on that device (a
   vendor path on another vendor's device; the message says so).
   tabcl_selfcheck_run with a NULL ctx or i out of range is
   TABCL_INVALID_ARGUMENT. A check changes nothing but ctx's program cache. */
TABCL_API int tabcl_selfcheck_count(void);   /* the number of checks; cannot fail */
TABCL_API const char *tabcl_selfcheck_name(int i);   /* NULL when out of range */
TABCL_API tabcl_status tabcl_selfcheck_run(tabcl_context *ctx, int i);

/* Kernel programs: the names of the .cl programs the library builds, and a
   way to build one now (cl-probe reports the time and whether it came from
   the disk cache). prepare builds program i with its default options
   (*from_cache 0), loads it from the disk cache (1) or finds it built in
   this context already (-1); from_cache may be NULL.
   Returns TABCL_OK, TABCL_INVALID_ARGUMENT (NULL ctx, i out of range),
   TABCL_BUILD_FAILED (tabcl_last_error() holds the log),
   TABCL_OUT_OF_MEMORY or TABCL_OPENCL_ERROR; a failed build changes
   nothing and is tried again by the next call. */
TABCL_API int tabcl_program_count(void);
TABCL_API const char *tabcl_program_name(int i);     /* NULL when out of range */
TABCL_API tabcl_status tabcl_program_prepare(tabcl_context *ctx, int i, int *from_cache);

#ifdef __cplusplus
}
#endif
#endif
