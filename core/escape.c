/*
 * Untrusted strings where they go: one helper per destination over one UTF-8
 * decoder (include/contract/escape.h). Each helper walks the string once and
 * hands runs of bytes that stay as they are to the writer in one call.
 */
#include "contract/escape.h"

#include <string.h>

size_t nf_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xBF;
	size_t len;
	uint32_t v;

	if (c < 0x80) {
		if (cp)
			*cp = c;
		return 1;
	}
	if (c >= 0xC2 && c <= 0xDF)
		len = 2, v = c & 0x1Fu;
	else if (c >= 0xE0 && c <= 0xEF) /* E0: no overlongs; ED: no surrogates */
		len = 3, v = c & 0x0Fu, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
	else if (c >= 0xF0 && c <= 0xF4) /* F0: no overlongs; F4: nothing past U+10FFFF */
		len = 4, v = c & 0x07u, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
	else
		return 0;
	if (len > n || s[1] < lo || s[1] > hi)
		return 0;
	v = v << 6 | (s[1] & 0x3Fu);
	for (size_t i = 2; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3Fu);
	}
	if (cp)
		*cp = v;
	return len;
}

bool nf_unicode_printable(uint32_t cp)
{
	if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F))
		return false;
	if (cp == 0x2028 || cp == 0x2029)
		return false;
	if ((cp >= 0xFDD0 && cp <= 0xFDEF) || (cp & 0xFFFEu) == 0xFFFEu)
		return false;
	return true;
}

/* What happens to the character at s: its length in *len (1 for a bad byte)
 * and whether it is printable; *cp is its code point (0xFFFD: not UTF-8). */
static bool next_char(const unsigned char *s, size_t n, size_t *len, uint32_t *cp)
{
	size_t l;

	if (s[0] >= 0x20 && s[0] < 0x7F) { /* the common case */
		*len = 1;
		*cp = s[0];
		return true;
	}
	l = nf_utf8_decode(s, n, cp);
	if (!l) {
		*len = 1;
		*cp = 0xFFFD;
		return false;
	}
	*len = l;
	return nf_unicode_printable(*cp);
}

static bool kept_nl(uint32_t cp, unsigned flags)
{
	return (flags & NF_ESC_KEEP_NL) && (cp == '\n' || cp == '\t');
}

/* Flushes the run [*run, end) through w; returns 0 or -1. */
static int flush(const unsigned char **run, const unsigned char *end, nf_esc_write_fn w, void *ctx)
{
	int rc = end > *run ? w(ctx, (const char *)*run, (size_t)(end - *run)) : 0;

	*run = end;
	return rc < 0 ? -1 : 0;
}

int nf_esc_text(const char *str, size_t n, unsigned flags, nf_esc_write_fn w, void *ctx)
{
	const unsigned char *s = (const unsigned char *)str, *end = s + n, *run = s;

	while (s < end) {
		size_t len = 1;
		uint32_t cp;

		if (next_char(s, (size_t)(end - s), &len, &cp) || kept_nl(cp, flags)) {
			s += len;
			continue;
		}
		if (flush(&run, s, w, ctx) || w(ctx, "?", 1) < 0)
			return -1;
		s += len;
		run = s;
	}
	return flush(&run, s, w, ctx);
}

bool nf_esc_text_is_clean(const char *str, unsigned flags)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");
	size_t n = strlen((const char *)s);

	while (n) {
		size_t len;
		uint32_t cp;

		if (!next_char(s, n, &len, &cp) && !kept_nl(cp, flags))
			return false;
		s += len;
		n -= len;
	}
	return true;
}

static int put_u(uint32_t u, nf_esc_write_fn w, void *ctx)
{
	static const char hex[] = "0123456789abcdef";
	char e[6] = { '\\', 'u', hex[u >> 12 & 15], hex[u >> 8 & 15], hex[u >> 4 & 15], hex[u & 15] };

	return w(ctx, e, 6) < 0 ? -1 : 0;
}

/* JSON_TEXT: the input is a JSON text, not a string's contents: its quotes,
 * backslash escapes and whitespace are its own and pass as they are. */
#define JSON_TEXT 0x100u

/* The characters of a JSON string (or, with JSON_TEXT, of a JSON text) through w. */
static int esc_json_chars(const unsigned char *s, const unsigned char *end, unsigned flags, nf_esc_write_fn w,
			  void *ctx)
{
	const unsigned char *run = s;
	bool text = flags & JSON_TEXT;

	while (s < end) {
		unsigned char c = *s;
		const char *short_esc = NULL;
		size_t len = 1;
		uint32_t cp = c;
		int rc;

		/* printable ASCII, the common case, as itself (what next_char says of it) */
		if (c >= 0x20 && c < 0x7f && ((c != '"' && c != '\\') || text) &&
		    !((flags & NF_ESC_SCRIPT) && (c == '<' || c == '>' || c == '&'))) {
			s++;
			continue;
		}
		if (text && (c == '\n' || c == '\r' || c == '\t')) {
			s++;
			continue;
		}
		if (c == '"')
			short_esc = "\\\"";
		else if (c == '\\')
			short_esc = "\\\\";
		else if ((flags & NF_ESC_SCRIPT) && (c == '<' || c == '>' || c == '&'))
			; /* as \u00XX below */
		else if (next_char(s, (size_t)(end - s), &len, &cp)) {
			s += len;
			continue;
		} else if (c == '\n')
			short_esc = "\\n";
		else if (c == '\r')
			short_esc = "\\r";
		else if (c == '\t')
			short_esc = "\\t";
		else if (c == '\b')
			short_esc = "\\b";
		else if (c == '\f')
			short_esc = "\\f";
		if (flush(&run, s, w, ctx))
			return -1;
		if (short_esc)
			rc = w(ctx, short_esc, 2) < 0 ? -1 : 0;
		else if (cp > 0xFFFF) /* a noncharacter of another plane: a surrogate pair */
			rc = put_u(0xD800 + ((cp - 0x10000) >> 10), w, ctx) ||
			     put_u(0xDC00 + ((cp - 0x10000) & 0x3FF), w, ctx) ? -1 : 0;
		else
			rc = put_u(cp, w, ctx); /* 0xFFFD for a byte that is not UTF-8 */
		if (rc)
			return -1;
		s += len;
		run = s;
	}
	return flush(&run, s, w, ctx);
}

int nf_esc_json(const char *str, size_t n, unsigned flags, nf_esc_write_fn w, void *ctx)
{
	const unsigned char *s = (const unsigned char *)str;

	if (w(ctx, "\"", 1) < 0 || esc_json_chars(s, s + n, flags & ~JSON_TEXT, w, ctx))
		return -1;
	return w(ctx, "\"", 1) < 0 ? -1 : 0;
}

bool nf_esc_json_plain(const char *str, size_t *len)
{
	const unsigned char *s = (const unsigned char *)str, *p = s;

	/* the printable-ASCII case of esc_json_chars, flags 0 */
	while (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\')
		p++;
	*len = (size_t)(p - s);
	return !*p;
}

int nf_esc_json_text(const char *str, size_t n, unsigned flags, nf_esc_write_fn w, void *ctx)
{
	const unsigned char *s = (const unsigned char *)str;

	return esc_json_chars(s, s + n, flags | JSON_TEXT, w, ctx);
}

int nf_esc_xml(const char *str, size_t n, unsigned flags, nf_esc_write_fn w, void *ctx)
{
	const unsigned char *s = (const unsigned char *)str, *end = s + n, *run = s;

	while (s < end) {
		const char *e = NULL;
		size_t len = 1;
		uint32_t cp;

		switch (*s) {
		case '&': e = "&amp;"; break;
		case '<': e = "&lt;"; break;
		case '>': e = "&gt;"; break;
		case '"': e = "&quot;"; break;
		case '\'': e = "&#39;"; break;
		default:
			if (next_char(s, (size_t)(end - s), &len, &cp) || kept_nl(cp, flags)) {
				s += len;
				continue;
			}
			e = "?";
		}
		if (flush(&run, s, w, ctx) || w(ctx, e, strlen(e)) < 0)
			return -1;
		s += len;
		run = s;
	}
	return flush(&run, s, w, ctx);
}

static bool shell_safe(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("_./:=@%+,-", c));
}

int nf_esc_shell(const char *str, size_t n, nf_esc_write_fn w, void *ctx)
{
	const unsigned char *s = (const unsigned char *)str, *end = s + n;
	bool bare = n > 0, dollar = false;

	for (const unsigned char *p = s; p < end;) {
		size_t len;
		uint32_t cp;

		bare = bare && shell_safe(*p);
		if (!next_char(p, (size_t)(end - p), &len, &cp))
			dollar = true;
		p += len;
	}
	if (bare)
		return w(ctx, str, n) < 0 ? -1 : 0;
	if (!dollar) {
		/* 'it'\''s': inside single quotes nothing is special but the quote */
		const unsigned char *run = s;

		if (w(ctx, "'", 1) < 0)
			return -1;
		for (; s < end; s++) {
			if (*s != '\'')
				continue;
			if (flush(&run, s, w, ctx) || w(ctx, "'\\''", 4) < 0)
				return -1;
			run = s + 1;
		}
		return flush(&run, s, w, ctx) || w(ctx, "'", 1) < 0 ? -1 : 0;
	}
	/* $'...': backslash escapes; every byte of what is not printable as \xHH */
	const unsigned char *run = s;

	if (w(ctx, "$'", 2) < 0)
		return -1;
	while (s < end) {
		size_t len = 1;
		uint32_t cp;
		char e[4 * 4 + 1];
		size_t k = 0;

		if (*s != '\\' && *s != '\'' && next_char(s, (size_t)(end - s), &len, &cp)) {
			s += len;
			continue;
		}
		if (*s == '\\' || *s == '\'') {
			len = 1;
			e[k++] = '\\';
			e[k++] = (char)*s;
		} else {
			static const char hex[] = "0123456789abcdef";

			for (size_t i = 0; i < len; i++) {
				e[k++] = '\\';
				e[k++] = 'x';
				e[k++] = hex[s[i] >> 4];
				e[k++] = hex[s[i] & 15];
			}
		}
		if (flush(&run, s, w, ctx) || w(ctx, e, k) < 0)
			return -1;
		s += len;
		run = s;
	}
	return flush(&run, s, w, ctx) || w(ctx, "'", 1) < 0 ? -1 : 0;
}

int nf_esc_sql(const char *str, size_t n, unsigned flags, nf_esc_write_fn w, void *ctx)
{
	const unsigned char *s = (const unsigned char *)str, *end = s + n, *run = s;

	if (w(ctx, "'", 1) < 0)
		return -1;
	for (; s < end; s++) {
		if (*s != '\'' && !(*s == '\\' && (flags & NF_ESC_BACKSLASH)))
			continue;
		/* the run up to and with it, then it again */
		if (flush(&run, s + 1, w, ctx) || w(ctx, (const char *)s, 1) < 0)
			return -1;
	}
	return flush(&run, s, w, ctx) || w(ctx, "'", 1) < 0 ? -1 : 0;
}

int nf_esc_file_write(void *ctx, const char *p, size_t n)
{
	return fwrite(p, 1, n, (FILE *)ctx) == n ? 0 : -1;
}

int nf_esc_buf_write(void *ctx, const char *p, size_t n)
{
	struct nf_esc_buf *b = ctx;
	size_t room;

	if (b->cut || !b->len) {
		b->cut = b->cut || n > 0;
		return 0;
	}
	room = b->len - 1 - b->used;
	if (n > room) {
		/* not inside a character: back off over continuation bytes */
		size_t k = room;

		while (k > 0 && ((unsigned char)p[k] & 0xC0) == 0x80)
			k--;
		n = k;
		b->cut = true;
	}
	memcpy(b->p + b->used, p, n);
	b->used += n;
	b->p[b->used] = '\0';
	return 0;
}

char *nf_esc_text_buf(char *dst, size_t len, const char *src, unsigned flags)
{
	struct nf_esc_buf b = { dst, len, 0, false };

	if (len)
		dst[0] = '\0';
	src = src ? src : "";
	nf_esc_text(src, strlen(src), flags, nf_esc_buf_write, &b);
	return dst;
}

int nf_esc_text_file(FILE *f, const char *s, unsigned flags)
{
	s = s ? s : "";
	return nf_esc_text(s, strlen(s), flags, nf_esc_file_write, f);
}

int nf_esc_json_file(FILE *f, const char *s, unsigned flags)
{
	s = s ? s : "";
	return nf_esc_json(s, strlen(s), flags, nf_esc_file_write, f);
}
