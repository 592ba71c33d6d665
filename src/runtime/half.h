/* The 16-bit floats tabcl stores (f16, IEEE binary16; bf16, the high half
 * of an f32) converted to and from f32 on the host, and elements of any
 * tabcl_dtype read and written as double. The one host copy of these
 * conversions: the library's device checks, the tests, the fuzz targets
 * and tabcl-bench all use it. The kernels' own conversions are in cl/. */
#ifndef TABCL_RUNTIME_HALF_H
#define TABCL_RUNTIME_HALF_H

#include <stddef.h>
#include <stdint.h>

#include "tabcl/tabcl.h"

/* Round to nearest, ties to even, as the kernels' vstore_half_rte:
   subnormal results kept, values from 65520 up become infinity, a NaN
   stays a NaN of the same sign (quiet, its payload dropped). */
uint16_t tabcl__f32_to_f16(float f);
/* Exact, subnormals included; a NaN keeps its payload. */
float tabcl__f16_to_f32(uint16_t h);
/* Round to nearest, ties to even (f32's exponent range, so only values
   rounding past bf16's largest become infinity); a NaN stays a NaN with the
   top of its payload and the quiet bit set, as cl/common.cl's f32_to_bf16. */
uint16_t tabcl__f32_to_bf16(float f);
/* Exact: the 16 bits become the high half of an f32. */
float tabcl__bf16_to_f32(uint16_t h);

/* Element i of p, an array of dtype dt: f32 and f64 as they are, f16 and
   bf16 rounded through f32 as above (a double is narrowed to f32 first). */
void tabcl__store_elem(void *p, size_t i, tabcl_dtype dt, double x);
double tabcl__load_elem(const void *p, size_t i, tabcl_dtype dt);

#endif
