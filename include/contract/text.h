/*
 * Private utility tier (core/, not installed): copying a string from a
 * session (untrusted) into a fixed buffer meant for a terminal, cleaned by
 * nf_esc_text (contract/escape.h: controls, noncharacters and bytes that are
 * not UTF-8 as '?') and cut to the buffer at a character boundary. Used by
 * the log summary (parser/logsum.c) and `nftrace check` (cli/cmd_check.c).
 * And one way to write a duration in error lines (viewer, html, export).
 */
#ifndef NF_CORE_TEXT_H
#define NF_CORE_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "contract/errors.h"
#include "contract/escape.h"

/* Copies src (NULL: "") into dst[len], always NUL-terminated when len > 0. */
static inline void nf_text_copy_clean(char *dst, size_t len, const char *src)
{
	nf_esc_text_buf(dst, len, src, 0);
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
