/* vec.h: room for one more item in a caller's growing array (doubling, overflow checked). */
#ifndef CASTOR_UTIL_VEC_H
#define CASTOR_UTIL_VEC_H

#include <stddef.h>

/*
 * Room for item n (0-based) in items, an array of *cap items of size bytes each (NULL with *cap
 * 0 to start). Returns items when it has room, or the array moved to twice the capacity (at least
 * 16 items), *cap updated; NULL when the memory or the size cannot be had, items still the
 * caller's and *cap unchanged. The caller keeps the result (and frees it).
 */
void *vec_grow(void *items, size_t *cap, size_t n, size_t size);

#endif
