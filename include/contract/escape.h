/*
 * Untrusted strings where they go (contract of core/escape.c). A string from
 * a capture, a session, a timeline file, a server or the command line may
 * hold anything: control characters (C0, DEL, C1 such as U+009B CSI, ESC
 * and OSC sequences), Unicode noncharacters, line separators, bytes that are
 * not UTF-8 (overlong forms, surrogates, code points past U+10FFFF, Latin-1),
 * quotes and markup. Each destination has one helper, and only it writes
 * such a string there:
 *
 *   destination                                          helper
 *   terminal, cairo text (PNG/SVG/PDF), PDF metadata,    nf_esc_text
 *     protobuf string fields
 *   JSON (query, check, info, critical-path, Chrome      nf_esc_json
 *     JSON; NF_ESC_SCRIPT inside an HTML <script>)
 *   HTML text and attributes, SVG/XML                    nf_esc_xml
 *   a word of shell text (a command to paste)            nf_esc_shell
 *   an SQL string literal (NF_ESC_BACKSLASH: ClickHouse) nf_esc_sql
 *
 * What a helper writes is valid UTF-8 and holds no raw control character
 * (but the newlines and tabs NF_ESC_KEEP_NL keeps). Each writes through a
 * callback, so the same helper serves a FILE (nf_esc_file_write), a
 * fixed buffer (struct nf_esc_buf) or a module's own output buffer.
 * Libraries never print: these only format.
 */
#ifndef NFTRACE_ESCAPE_H
#define NFTRACE_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where a helper writes: returns 0, or -1 to stop (the helper then returns -1). */
typedef int (*nf_esc_write_fn)(void *ctx, const char *p, size_t n);

/* Flags of the helpers. */
#define NF_ESC_KEEP_NL 1u    /* text, xml: keep '\n' and '\t' (multi-line values) */
#define NF_ESC_SCRIPT 2u     /* json: also '<', '>', '&' as \u escapes (inside <script>) */
#define NF_ESC_BACKSLASH 4u  /* sql: '\' is an escape character (ClickHouse): doubled */

/*
 * Decodes the well-formed UTF-8 sequence (RFC 3629) at s, n bytes available
 * (n > 0): returns its length (1 to 4) with the code point in *cp (cp may be
 * NULL), or 0 when s does not start one (a stray continuation byte, an
 * overlong form, a surrogate, a code point past U+10FFFF, a sequence cut by
 * n).
 */
size_t nf_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);

/*
 * Whether code point cp is shown as itself: returns false for controls (C0,
 * DEL, C1), noncharacters (U+FDD0..U+FDEF and U+xFFFE/U+xFFFF of every
 * plane; cairo refuses them) and the line and paragraph separators U+2028,
 * U+2029 (line breaks to JavaScript); true for every other code point.
 */
bool nf_unicode_printable(uint32_t cp);

/*
 * Plain text (terminal, cairo, PDF metadata, protobuf strings): s[0..n) with
 * every character that is not printable (nf_unicode_printable) and every
 * byte that is not UTF-8 written as '?' (one per character, one per bad
 * byte). flags: NF_ESC_KEEP_NL. Returns 0, or -1 when w did.
 */
int nf_esc_text(const char *s, size_t n, unsigned flags, nf_esc_write_fn w, void *ctx);

/*
 * Whether s (NUL-terminated) is written by nf_esc_text unchanged with these
 * flags: returns true when it is (callers then use it as it is).
 */
bool nf_esc_text_is_clean(const char *s, unsigned flags);

/*
 * A JSON string with its quotes: '"' and '\' escaped, \n \r \t \b \f as
 * such, other controls, U+2028, U+2029 and noncharacters as \u escapes
 * (surrogate pairs above U+FFFF), each byte that is not UTF-8 as \ufffd.
 * flags: NF_ESC_SCRIPT. Returns 0, or -1 when w did.
 */
int nf_esc_json(const char *s, size_t n, unsigned flags, nf_esc_write_fn w, void *ctx);

/*
 * A JSON text already made (SQLite's json_object over capture strings) as a
 * value: its syntax passes as it is, and inside it each byte that is not
 * UTF-8 becomes \ufffd, and DEL, C1 controls, noncharacters, U+2028 and U+2029
 * their \u escapes, as nf_esc_json writes them. flags: NF_ESC_SCRIPT.
 * Returns 0, or -1 when w did.
 */
int nf_esc_json_text(const char *s, size_t n, unsigned flags, nf_esc_write_fn w, void *ctx);

/*
 * Whether the NUL-terminated s is its own JSON string body with flags 0
 * (printable ASCII without '"' or '\\': nf_esc_json would write it as it
 * is); *len gets its length when it is. A writer's fast path for the short
 * names every event carries: one scan instead of strlen and the escaper.
 */
bool nf_esc_json_plain(const char *s, size_t *len);

/*
 * Text for HTML or XML (SVG), in an element or an attribute value: & < > " '
 * as entities, what nf_esc_text replaces as '?'. flags: NF_ESC_KEEP_NL.
 * Returns 0, or -1 when w did.
 */
int nf_esc_xml(const char *s, size_t n, unsigned flags, nf_esc_write_fn w, void *ctx);

/*
 * One word of POSIX shell text that stands for s exactly: s itself when it
 * is not empty and only of letters, digits and _ . / : = @ % + , -; else
 * single-quoted ('it'\''s'); when s holds a character that is not printable
 * or a byte that is not UTF-8, $'...' with those bytes as \xHH (POSIX.1-2024,
 * bash, zsh), so no control character is written raw. A leading '-' is the
 * caller's to guard (an option to the command it is passed to). Returns 0,
 * or -1 when w did.
 */
int nf_esc_shell(const char *s, size_t n, nf_esc_write_fn w, void *ctx);

/*
 * An SQL string literal with its quotes: '\'' doubled, and '\' doubled with
 * NF_ESC_BACKSLASH (ClickHouse, where it escapes). Other bytes are written as
 * they are (the literal holds s exactly). Returns 0, or -1 when w did.
 */
int nf_esc_sql(const char *s, size_t n, unsigned flags, nf_esc_write_fn w, void *ctx);

/* An nf_esc_write_fn for a FILE * (ctx): returns 0, or -1 when fwrite wrote less. */
int nf_esc_file_write(void *ctx, const char *p, size_t n);

/*
 * A fixed buffer to write into (ctx: struct nf_esc_buf *): p[0..len) gets
 * what fits, cut at a UTF-8 character boundary, always NUL-terminated when
 * len > 0; cut says something did not fit (what follows it is dropped).
 */
struct nf_esc_buf {
	char *p;
	size_t len;
	size_t used; /* bytes written, not counting the NUL */
	bool cut;
};

/* The nf_esc_write_fn of struct nf_esc_buf: returns 0 always (a cut is recorded in cut). */
int nf_esc_buf_write(void *ctx, const char *p, size_t n);

/*
 * nf_esc_text of src (NULL: "") into dst[len] (NUL-terminated when len > 0,
 * cut at a character boundary): returns dst, for use in an argument list.
 */
char *nf_esc_text_buf(char *dst, size_t len, const char *src, unsigned flags);

/* nf_esc_text of s (NULL: "") to f: returns 0, or -1 on a write error. */
int nf_esc_text_file(FILE *f, const char *s, unsigned flags);

/* nf_esc_json of s (NULL: "") to f: returns 0, or -1 on a write error. */
int nf_esc_json_file(FILE *f, const char *s, unsigned flags);

#ifdef __cplusplus
}
#endif

#endif
