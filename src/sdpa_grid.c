/* The launch grid shared by the attention kernels that own one query tile
 * of one (batch entry, head) per work-group. */
#include "sdpa.h"

tabcl_status tabcl__sdpa_grid_launch(tabcl_context *ctx, cl_kernel k, const char *kname,
                                     int first_h0, size_t nt, int64_t nb, int hq, int nqt,
                                     cl_uint nwait, const cl_event *wait,
                                     tabcl__sdpa_events *ev) {
  /* Heads and query tiles go in dims 1 and 2, which may be limited to
     65535 groups: larger extents take several launches. */
  const cl_int most = tabcl__sdpa_max_groups_yz;
  tabcl_status s = TABCL_OK;
  for (cl_int qt0 = 0; qt0 < nqt && !s; qt0 += most)
    for (cl_int h0 = 0; h0 < hq && !s; h0 += most) {
      s = TABCL_SET_ARGS_AT(k, kname, first_h0, TABCL_ARG(h0), TABCL_ARG(qt0));
      if (s) break;
      size_t local[3] = {nt, 1, 1};
      size_t global[3] = {nt * (size_t)nb, (size_t)(hq - h0 < most ? hq - h0 : most),
                          (size_t)(nqt - qt0 < most ? nqt - qt0 : most)};
      cl_event e = NULL;
      const int first_launch = qt0 == 0 && h0 == 0;
      s = tabcl__launch(ctx, k, 3, global, local, first_launch ? nwait : 0,
                        first_launch ? wait : NULL, ev ? &e : NULL, kname);
      if (!s) tabcl__sdpa_track(ev, e);
    }
  return s;
}
