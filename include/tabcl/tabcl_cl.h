/* Device-resident variants of tabcl's calls: inputs and outputs stay in
 * cl_mem buffers of the context's OpenCL context and are enqueued on its
 * queue, so a pipeline never leaves the device. Include after an OpenCL
 * header or let this one include <CL/cl.h>. */
#ifndef TABCL_TABCL_CL_H
#define TABCL_TABCL_CL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include "tabcl/tabcl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The OpenCL objects a context uses, so callers can allocate buffers in the
   same context and order work on the same queue. Owned by the context. */
TABCL_API cl_context tabcl_context_cl_context(const tabcl_context *ctx);
TABCL_API cl_command_queue tabcl_context_cl_queue(const tabcl_context *ctx);
TABCL_API cl_device_id tabcl_context_cl_device(const tabcl_context *ctx);

/* ---- categorical index (see tabcl_category_index_lookup) ---- */

/* ---- attention (see tabcl_sdpa_host) ---- */

#ifdef __cplusplus
}
#endif
#endif
