/*
 * Arithmetic on times (ns, int64) that saturates or refuses, never wraps
 * (contract of core; static inline, nothing to link). Times come from
 * captures and timelines that may hold anything up to +-2^63: a sum or a
 * difference that does not fit is INT64_MAX or INT64_MIN (the saturating
 * forms, for drawing and exporting), or is refused (nf_time_span, for a
 * duration that must be exact).
 */
#ifndef NFTRACE_SATTIME_H
#define NFTRACE_SATTIME_H

#include <stdbool.h>
#include <stdint.h>

/* a + b, saturated: INT64_MAX or INT64_MIN when the sum does not fit. */
static inline int64_t nf_time_add(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* a - b, saturated: INT64_MAX or INT64_MIN when the difference does not fit. */
static inline int64_t nf_time_sub(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_sub_overflow(a, b, &r))
		return b < 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/*
 * The duration end - start into *dur: returns true when it fits in an
 * int64 and is not negative, false otherwise (*dur is then 0: the caller
 * treats the span as unknown or refuses it).
 */
static inline bool nf_time_span(int64_t start, int64_t end, int64_t *dur)
{
	if (end < start || __builtin_sub_overflow(end, start, dur)) {
		*dur = 0;
		return false;
	}
	return true;
}

/*
 * A time in floating point (a computed position or a product) as an int64,
 * saturated; NaN is 0. Returns the nearest int64 toward zero within range.
 */
static inline int64_t nf_time_from_double(double v)
{
	if (v != v)
		return 0;
	if (v >= 9223372036854775807.0)
		return INT64_MAX;
	if (v <= -9223372036854775808.0)
		return INT64_MIN;
	return (int64_t)v;
}

#endif
