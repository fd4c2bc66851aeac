/*
 * Fuzz target for the escaping helpers (core/escape.c): any bytes through
 * each destination's helper. What every helper writes is valid UTF-8 with no
 * raw control, noncharacter or line separator (but the newlines and tabs
 * NF_ESC_KEEP_NL keeps); the text helper writes the input unchanged when
 * nf_esc_text_is_clean says so, and never more bytes than it read; the JSON
 * helper's output holds no raw '<' with NF_ESC_SCRIPT; the XML helper's no
 * raw '<', '>' or quote; the SQL literal has every quote doubled.
 */
#include "contract/escape.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct out {
	char *p;
	size_t n, cap;
};

static int out_write(void *ctx, const char *p, size_t n)
{
	struct out *o = ctx;

	if (o->n + n + 1 > o->cap) {
		size_t cap = (o->n + n + 1) * 2;
		char *q = realloc(o->p, cap);

		if (!q)
			abort();
		o->p = q;
		o->cap = cap;
	}
	memcpy(o->p + o->n, p, n);
	o->n += n;
	o->p[o->n] = '\0';
	return 0;
}

/* Valid UTF-8, printable but newline and tab when nl. */
static void check_clean(const struct out *o, int nl)
{
	for (size_t i = 0; i < o->n;) {
		uint32_t cp;
		size_t l = nf_utf8_decode((const unsigned char *)o->p + i, o->n - i, &cp);

		if (!l)
			abort();
		if (!nf_unicode_printable(cp) && !(nl && (cp == '\n' || cp == '\t')))
			abort();
		i += l;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct out o = { 0 };
	unsigned flags = size ? data[0] : 0;

	out_write(&o, "", 0);
	/* text: one '?' at most per byte read, the input itself when clean */
	nf_esc_text(s, size, flags & NF_ESC_KEEP_NL, out_write, &o);
	check_clean(&o, (flags & NF_ESC_KEEP_NL) != 0);
	if (o.n > size)
		abort();
	if (!memchr(s, 0, size)) {
		char *z = malloc(size + 1);

		if (!z)
			abort();
		memcpy(z, s, size);
		z[size] = '\0';
		if (nf_esc_text_is_clean(z, flags & NF_ESC_KEEP_NL) && (o.n != size || memcmp(o.p, s, size)))
			abort();
		free(z);
	}
	o.n = 0;
	nf_esc_json(s, size, flags & NF_ESC_SCRIPT, out_write, &o);
	check_clean(&o, 0);
	if (o.n < 2 || o.p[0] != '"' || o.p[o.n - 1] != '"' || ((flags & NF_ESC_SCRIPT) && memchr(o.p, '<', o.n)))
		abort();
	o.n = 0;
	nf_esc_xml(s, size, flags & NF_ESC_KEEP_NL, out_write, &o);
	check_clean(&o, (flags & NF_ESC_KEEP_NL) != 0);
	if (memchr(o.p, '<', o.n) || memchr(o.p, '>', o.n) || memchr(o.p, '"', o.n) || memchr(o.p, '\'', o.n))
		abort();
	o.n = 0;
	nf_esc_shell(s, size, out_write, &o);
	check_clean(&o, 0);
	o.n = 0;
	nf_esc_sql(s, size, flags & NF_ESC_BACKSLASH, out_write, &o);
	/* the literal: quotes around, inside every quote doubled */
	if (o.n < 2 || o.p[0] != '\'' || o.p[o.n - 1] != '\'')
		abort();
	for (size_t i = 1; i + 1 < o.n; i++)
		if (o.p[i] == '\'' && o.p[++i] != '\'')
			abort();
	free(o.p);
	return 0;
}
