/* The codes a categorical index must give, from a plain host hash table of
 * labels (FNV-1a and linear probing: nothing shared with the library's XXH3
 * or its sorted tables). The one category reference of the tests: the
 * catindex tests and the reliability tests (threads, soak, failure sweep). */
#ifndef TABCL_TEST_CATINDEX_REF_H
#define TABCL_TEST_CATINDEX_REF_H

#include <stddef.h>
#include <stdint.h>

#include "tabcl/tabcl.h"

typedef struct catref_entry {
  const uint8_t *p;
  size_t n;
  int32_t code;
  int used;
} catref_entry;

/* Points into the vocabulary's bytes: the view must outlive it. */
typedef struct catref {
  catref_entry *e;
  size_t cap;
  int64_t ncodes;   /* BY_POSITION: vocabulary length; BY_VALUE: distinct labels */
} catref;

/* The reference for one fitted column: BY_POSITION codes are a label's last
   position, BY_VALUE codes its rank among the distinct labels by bytes (a
   prefix first); null labels are never matched. */
void catref_build(catref *t, const tabcl_strings_view *vocabulary, tabcl_code_order order);
void catref_free(catref *t);
/* The code label i of q must get, or -1 (null or not in the vocabulary). */
int32_t catref_code(const catref *t, const tabcl_strings_view *q, int64_t i);
/* The code row i of an align of d must get: -1 for a missing (-1) input code. */
int32_t catref_align_code(const catref *t, const tabcl_dictionary_view *d, int64_t i);
/* Every code of a lookup of q, or an align of d, into out. */
void catref_lookup(const catref *t, const tabcl_strings_view *q, int32_t *out);
void catref_align(const catref *t, const tabcl_dictionary_view *d, int32_t *out);

#endif
