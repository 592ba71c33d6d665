/* Attention in float64 on the host: the one reference every attention test
 * (test_sdpa, and the reliability tests through rel_common.h) compares the
 * device with. */
#ifndef TABCL_TEST_SDPA_REF_H
#define TABCL_TEST_SDPA_REF_H

#include "tabcl/tabcl.h"

/* out [B, Lq, Hq, D] of the call d on q, k, v and mask as they are stored
   (elements of d->dtype read exactly; a boolean mask as uint8). dead, when
   not NULL, gets one flag per output row (b, i, h), at (b * Lq + i) * Hq + h:
   1 when the row may attend no key, so its output must be zeros. */
void tt_sdpa_reference(const tabcl_sdpa_desc *d, const void *q, const void *k, const void *v,
                       const void *mask, double *out, unsigned char *dead);

#endif
