/* Internal interfaces shared by tabcl's host code, one header a concern;
 * this one includes them all for the files that use several. Nothing here
 * is public: tests may use it because they link the static library; tools
 * use include/tabcl/tabcl_tools.h instead. */
#ifndef TABCL_INTERNAL_H
#define TABCL_INTERNAL_H

#include "runtime/error.h"
#include "runtime/device.h"
#include "runtime/tune.h"
#include "runtime/workers.h"
#include "runtime/buffer.h"
#include "runtime/context.h"
#include "runtime/program.h"
#include "runtime/slice.h"

#endif
