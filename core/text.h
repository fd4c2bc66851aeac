/*
 * Private utility tier (core/, not installed): copying a string from a
 * session (untrusted) into a fixed buffer meant for a terminal, with control
 * characters (C0, DEL, UTF-8 C1 such as U+009B CSI: nf_text_control_len)
 * replaced by '?' and the copy cut to the buffer. Used by the log summary
 * (parser/logsum.c) and `nftrace check` (cli/cmd_check.c).
 */
#ifndef NF_CORE_TEXT_H
#define NF_CORE_TEXT_H

#include <stddef.h>

#include "nftrace/error.h"

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

#endif
