/* Status names and the per-thread detail of the last failure. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "runtime/internal.h"

#define TABCL_ERROR_CAP 16384

/* Per thread, so that concurrent callers never see each other's detail. */
static _Thread_local char last_error[TABCL_ERROR_CAP];

unsigned tabcl_version_number(void) { return TABCL_VERSION_NUMBER; }
const char *tabcl_version_string(void) { return TABCL_VERSION_STRING; }

const char *tabcl_status_name(tabcl_status s) {
  switch (s) {
    case TABCL_OK: return "TABCL_OK";
    case TABCL_INVALID_ARGUMENT: return "TABCL_INVALID_ARGUMENT";
    case TABCL_OUT_OF_MEMORY: return "TABCL_OUT_OF_MEMORY";
    case TABCL_NO_DEVICE: return "TABCL_NO_DEVICE";
    case TABCL_BUILD_FAILED: return "TABCL_BUILD_FAILED";
    case TABCL_UNSUPPORTED: return "TABCL_UNSUPPORTED";
    case TABCL_TYPE_MISMATCH: return "TABCL_TYPE_MISMATCH";
    case TABCL_OPENCL_ERROR: return "TABCL_OPENCL_ERROR";
    case TABCL_IO_ERROR: return "TABCL_IO_ERROR";
    case TABCL_CORRUPT_DATA: return "TABCL_CORRUPT_DATA";
  }
  return "TABCL_UNKNOWN_STATUS";
}

const char *tabcl_last_error(void) { return last_error; }

void tabcl__clear_error(void) { last_error[0] = '\0'; }

tabcl_status tabcl__fail(tabcl_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return s;
}

void tabcl__append_error(const char *text) {
  size_t used = strlen(last_error);
  if (text && used + 1 < sizeof last_error)
    snprintf(last_error + used, sizeof last_error - used, "%s", text);
}

const char *tabcl__cl_error_name(cl_int err) {
  switch (err) {
#define N(x) case x: return #x;
    N(CL_SUCCESS) N(CL_DEVICE_NOT_FOUND) N(CL_DEVICE_NOT_AVAILABLE) N(CL_COMPILER_NOT_AVAILABLE)
    N(CL_MEM_OBJECT_ALLOCATION_FAILURE) N(CL_OUT_OF_RESOURCES) N(CL_OUT_OF_HOST_MEMORY)
    N(CL_PROFILING_INFO_NOT_AVAILABLE) N(CL_MEM_COPY_OVERLAP) N(CL_IMAGE_FORMAT_MISMATCH)
    N(CL_IMAGE_FORMAT_NOT_SUPPORTED) N(CL_BUILD_PROGRAM_FAILURE) N(CL_MAP_FAILURE)
    N(CL_MISALIGNED_SUB_BUFFER_OFFSET) N(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    N(CL_COMPILE_PROGRAM_FAILURE) N(CL_LINKER_NOT_AVAILABLE) N(CL_LINK_PROGRAM_FAILURE)
    N(CL_DEVICE_PARTITION_FAILED) N(CL_KERNEL_ARG_INFO_NOT_AVAILABLE) N(CL_INVALID_VALUE)
    N(CL_INVALID_DEVICE_TYPE) N(CL_INVALID_PLATFORM) N(CL_INVALID_DEVICE) N(CL_INVALID_CONTEXT)
    N(CL_INVALID_QUEUE_PROPERTIES) N(CL_INVALID_COMMAND_QUEUE) N(CL_INVALID_HOST_PTR)
    N(CL_INVALID_MEM_OBJECT) N(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR) N(CL_INVALID_IMAGE_SIZE)
    N(CL_INVALID_SAMPLER) N(CL_INVALID_BINARY) N(CL_INVALID_BUILD_OPTIONS) N(CL_INVALID_PROGRAM)
    N(CL_INVALID_PROGRAM_EXECUTABLE) N(CL_INVALID_KERNEL_NAME) N(CL_INVALID_KERNEL_DEFINITION)
    N(CL_INVALID_KERNEL) N(CL_INVALID_ARG_INDEX) N(CL_INVALID_ARG_VALUE) N(CL_INVALID_ARG_SIZE)
    N(CL_INVALID_KERNEL_ARGS) N(CL_INVALID_WORK_DIMENSION) N(CL_INVALID_WORK_GROUP_SIZE)
    N(CL_INVALID_WORK_ITEM_SIZE) N(CL_INVALID_GLOBAL_OFFSET) N(CL_INVALID_EVENT_WAIT_LIST)
    N(CL_INVALID_EVENT) N(CL_INVALID_OPERATION) N(CL_INVALID_GL_OBJECT) N(CL_INVALID_BUFFER_SIZE)
    N(CL_INVALID_MIP_LEVEL) N(CL_INVALID_GLOBAL_WORK_SIZE) N(CL_INVALID_PROPERTY)
    N(CL_INVALID_IMAGE_DESCRIPTOR) N(CL_INVALID_COMPILER_OPTIONS) N(CL_INVALID_LINKER_OPTIONS)
    N(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef N
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
  }
  return "CL_UNKNOWN_ERROR";
}

tabcl_status tabcl__cl_fail(cl_int err, const char *call, const char *what) {
  tabcl_status s = TABCL_OPENCL_ERROR;
  /* CL_MAP_FAILURE: the region could not be mapped into the host's address
     space, which is host memory running out. */
  if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
      err == CL_OUT_OF_HOST_MEMORY || err == CL_INVALID_BUFFER_SIZE || err == CL_MAP_FAILURE)
    s = TABCL_OUT_OF_MEMORY;
  return tabcl__fail(s, "%s failed: %s (%d)%s%s", call, tabcl__cl_error_name(err), (int)err,
                     what ? " while " : "", what ? what : "");
}
