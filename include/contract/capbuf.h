/*
 * Private utility tier (core/, not installed, not part of any public API):
 * growing buffers with a maximum size, for anything whose size comes from
 * untrusted input (a session, a trace file, a scenario): git's strbuf
 * invariants plus curl's mandatory limit. Static inline, so the common case
 * (it already fits) costs one comparison where it is called.
 *
 * nf_array_reserve grows an array (of any element size, bytes included) by
 * doubling, never past a maximum count of elements.
 */
#ifndef NF_CORE_CAPBUF_H
#define NF_CORE_CAPBUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "contract/errors.h"

/*
 * Makes room for at least `need` elements of `elem` bytes in *arr (capacity
 * *cap elements): the capacity doubles from `first` (or from *cap) until it
 * holds need, clamped to max (0: no bound but the size of memory). Returns 0
 * (also when it fits already), or NF_ENOMEM when need > max, the size in
 * bytes would overflow, or realloc fails; then *arr and *cap are unchanged.
 * New elements are not initialised.
 */
static inline int nf_array_reserve(void **arr, size_t *cap, size_t need, size_t elem, size_t first,
				   size_t max)
{
	size_t ncap;
	void *n;

	if (need <= *cap)
		return 0;
	if (max && need > max)
		return NF_ENOMEM;
	ncap = *cap ? *cap : (first ? first : 1);
	while (ncap < need)
		ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
	if (max && ncap > max)
		ncap = max;
	if (elem && ncap > SIZE_MAX / elem)
		return NF_ENOMEM;
	n = realloc(*arr, ncap * elem);
	if (!n)
		return NF_ENOMEM;
	*arr = n;
	*cap = ncap;
	return 0;
}

#endif
