/*
 * Private utility tier (core/, not installed): copying a string from a
 * session (untrusted) into a fixed buffer meant for a terminal, with control
 * characters (C0, DEL, UTF-8 C1 such as U+009B CSI: nf_text_control_len)
 * replaced by '?' and the copy cut to the buffer. Used by the log summary
 * (parser/logsum.c) and `nftrace check` (cli/cmd_check.c). And one way to
 * write a duration in error lines (viewer, html, export).
 */
#ifndef NF_CORE_TEXT_H
#define NF_CORE_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "contract/errors.h"

/* Copies src (NULL: "") into dst[len], always NUL-terminated when len > 0. */
static inline void nf_text_copy_clean(char *dst, size_t len, const char *src)
{
	size_t o = 0;

	/* C1 controls (U+009B CSI) too: two bytes become one '?'. */
	for (const char *p = src ? src : ""; *p && o + 1 < len;) {
		int n = nf_text_control_len(p);

		dst[o++] = n ? '?' : *p;
		p += n ? n : 1;
	}
	if (len)
		dst[o] = '\0';
}

/*
 * A duration for people, as report's and export's error lines write it: the
 * largest unit it reaches (s, ms, µs, else ns), three decimals at most,
 * trailing zeros dropped: "10 s", "1.25 ms", "4.935 ms", "0 ns".
 */
static inline void nf_text_duration(char *buf, size_t len, int64_t ns)
{
	static const struct {
		int64_t size;
		const char *unit;
	} units[] = { { 1000000000, "s" }, { 1000000, "ms" }, { 1000, "\xC2\xB5s" }, { 1, "ns" } };
	int64_t a = ns < 0 ? -ns : ns;
	size_t u = 0, n;

	if (!len)
		return;
	while (u < 3 && a < units[u].size)
		u++;
	snprintf(buf, len, "%.3f", (double)ns / (double)units[u].size);
	n = strlen(buf);
	while (n > 1 && buf[n - 1] == '0')
		buf[--n] = 0;
	if (n > 1 && buf[n - 1] == '.')
		buf[--n] = 0;
	snprintf(buf + n, len - n, " %s", units[u].unit);
}

#endif
