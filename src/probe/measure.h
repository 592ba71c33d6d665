/* Device ceilings (measure.c), used by cl-probe and tabcl-bench: the timer
 * check, copy bandwidth and FMA throughput are declared in the tools'
 * interface, include/tabcl/tabcl_tools.h, which is what the tools see. */
#ifndef TABCL_MEASURE_H
#define TABCL_MEASURE_H
#include "runtime/internal.h"
#include "tabcl/tabcl_tools.h"

/* Wall-clock seconds, monotonic. */
double tabcl__wall_seconds(void);
#endif
