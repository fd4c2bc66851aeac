/*
 * nf_parse_duration: reads a time as a user types it on the command line
 * ("12.5ms", "300us", "300µs", "2s", "1500ns", "42") into nanoseconds, with
 * exact decimal arithmetic (no floating point), and refuses anything else:
 * signs, spaces, exponents, unknown units, trailing junk, precision below a
 * nanosecond and values that do not fit in 63 bits.
 */
#include "contract/render.h"
#include "contract/errors.h"

#include <stdint.h>
#include <string.h>

static const struct {
	const char *name;
	int64_t ns;
} units[] = {
	{ "ns", 1 },
	{ "us", 1000 },
	{ "\xC2\xB5s", 1000 },  /* µ MICRO SIGN */
	{ "\xCE\xBCs", 1000 },  /* μ GREEK SMALL LETTER MU */
	{ "ms", 1000000 },
	{ "s", 1000000000 },
};

int nf_parse_duration(const char *text, int64_t *ns_out, struct nf_error *err)
{
	const char *p = text, *int_start, *frac_start = NULL;
	size_t n_int, n_frac = 0;
	int64_t mult = 0, v = 0, frac = 0, scale = 1;

	if (!text || !*text)
		return nf_error_set(err, NF_EINVAL, "empty duration (try 12.5ms, 300us, 2s or 1500ns)");
	if (*p == '-' || *p == '+')
		return nf_error_set(err, NF_EINVAL, "duration '%s': no sign allowed (durations are "
				    "positive)", text);
	int_start = p;
	while (*p >= '0' && *p <= '9')
		p++;
	n_int = (size_t)(p - int_start);
	if (*p == '.') {
		frac_start = ++p;
		while (*p >= '0' && *p <= '9')
			p++;
		n_frac = (size_t)(p - frac_start);
		if (n_frac == 0)
			return nf_error_set(err, NF_EINVAL, "duration '%s': digits expected after '.'",
					    text);
	}
	if (n_int == 0 && n_frac == 0)
		return nf_error_set(err, NF_EINVAL,
				    "duration '%s': not a number (try 12.5ms, 300us, 2s or 1500ns)",
				    text);
	if (*p == '\0') {
		mult = 1;  /* a bare number is nanoseconds */
	} else {
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (strcmp(p, units[i].name) == 0)
				mult = units[i].ns;
		if (!mult)
			return nf_error_set(err, NF_EINVAL,
					    "duration '%s': unknown unit '%s' (use ns, us, ms or s)",
					    text, p);
	}
	for (const char *d = int_start; d < int_start + n_int; d++) {
		int64_t digit = *d - '0';

		if (v > (INT64_MAX - digit) / 10)
			goto out_overflow;
		v = v * 10 + digit;
	}
	if (v > INT64_MAX / mult)
		goto out_overflow;
	v *= mult;
	/* The fraction: its digits must land on whole nanoseconds. */
	for (size_t i = 0; i < n_frac; i++) {
		if (scale > INT64_MAX / 10)
			return nf_error_set(err, NF_EINVAL, "duration '%s': too many decimals", text);
		scale *= 10;
		frac = frac * 10 + (frac_start[i] - '0');
	}
	if (n_frac) {
		/* frac / scale of a unit: mult * frac / scale ns, exactly. */
		int64_t g = mult, s = scale;

		while (g % 10 == 0 && s % 10 == 0) {
			g /= 10;
			s /= 10;
		}
		if (frac % s != 0)
			return nf_error_set(err, NF_EINVAL,
					    "duration '%s': finer than a nanosecond", text);
		frac = frac / s * g;
		if (v > INT64_MAX - frac)
			goto out_overflow;
		v += frac;
	}
	*ns_out = v;
	return 0;
out_overflow:
	return nf_error_set(err, NF_EINVAL, "duration '%s': too large", text);
}
