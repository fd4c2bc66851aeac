/*
 * The escaping helpers of core/escape.c (include/contract/escape.h), each run
 * over the whole hostile-string set (tests/hostile.h): what they write is
 * valid UTF-8 with no raw control character, and what it stands for is read
 * back by the destination's own reader (python3's json and xml parsers,
 * bash and dash, SQLite) as the string, or its cleaned form.
 */
#include "nf_test.h"
#include "hostile.h"

#include "contract/escape.h"
#include "contract/sattime.h"

#include <sqlite3.h>
#include <stdint.h>

struct grow {
	char *p;
	size_t n, cap;
};

static int grow_write(void *ctx, const char *p, size_t n)
{
	struct grow *g = ctx;

	if (g->n + n + 1 > g->cap) {
		g->cap = (g->n + n + 1) * 2;
		g->p = realloc(g->p, g->cap);
		ck_assert_ptr_nonnull(g->p);
	}
	memcpy(g->p + g->n, p, n);
	g->n += n;
	g->p[g->n] = '\0';
	return 0;
}

/* Valid UTF-8 whose every character is printable (newline and tab when allowed). */
static void assert_clean(const char *what, const char *out, size_t n, bool nl)
{
	const unsigned char *s = (const unsigned char *)out;

	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t l = nf_utf8_decode(s + i, n - i, &cp);

		ck_assert_msg(l > 0, "%s: byte %zu (0x%02x) of the output is not UTF-8", what, i, s[i]);
		ck_assert_msg(nf_unicode_printable(cp) || (nl && (cp == '\n' || cp == '\t')),
			      "%s: raw U+%04X at byte %zu of the output", what, (unsigned)cp, i);
		i += l;
	}
}

/* The string with what nf_esc_text replaces replaced, computed here apart. */
static void expected_text(const char *s, bool nl, struct grow *g)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s);

	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t l = nf_utf8_decode(u + i, n - i, &cp);

		if (!l)
			grow_write(g, "?", 1), i++;
		else if (!nf_unicode_printable(cp) && !(nl && (cp == '\n' || cp == '\t')))
			grow_write(g, "?", 1), i += l;
		else
			grow_write(g, s + i, l), i += l;
	}
	if (!g->p)
		grow_write(g, "", 0);
}

START_TEST(utf8_decoder_edges)
{
	static const struct {
		const char *s;
		size_t len;
		uint32_t cp;
	} cases[] = {
		{ "A", 1, 'A' }, { "\xc2\x80", 2, 0x80 }, { "\xdf\xbf", 2, 0x7FF }, { "\xe0\xa0\x80", 3, 0x800 },
		{ "\xed\x9f\xbf", 3, 0xD7FF }, { "\xee\x80\x80", 3, 0xE000 }, { "\xef\xbf\xbf", 3, 0xFFFF },
		{ "\xf0\x90\x80\x80", 4, 0x10000 }, { "\xf4\x8f\xbf\xbf", 4, 0x10FFFF },
		/* refused: overlongs, surrogates, past U+10FFFF, stray and cut bytes */
		{ "\xc0\x80", 0, 0 }, { "\xc1\xbf", 0, 0 }, { "\xe0\x9f\xbf", 0, 0 }, { "\xf0\x8f\xbf\xbf", 0, 0 },
		{ "\xed\xa0\x80", 0, 0 }, { "\xed\xbf\xbf", 0, 0 }, { "\xf4\x90\x80\x80", 0, 0 },
		{ "\xf5\x80\x80\x80", 0, 0 }, { "\xff", 0, 0 }, { "\x80", 0, 0 }, { "\xe2\x82", 0, 0 },
		{ "\xe2\x28\xa1", 0, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t cp = 0;
		size_t l = nf_utf8_decode((const unsigned char *)cases[i].s, strlen(cases[i].s), &cp);

		ck_assert_msg(l == cases[i].len, "case %zu: length %zu, want %zu", i, l, cases[i].len);
		if (l)
			ck_assert_uint_eq(cp, cases[i].cp);
	}
	ck_assert(!nf_unicode_printable(0x9B) && !nf_unicode_printable(0x7F) && !nf_unicode_printable(0));
	ck_assert(!nf_unicode_printable(0xFDD0) && !nf_unicode_printable(0xFDEF) && !nf_unicode_printable(0x1FFFF));
	ck_assert(!nf_unicode_printable(0x10FFFE) && !nf_unicode_printable(0x10FFFF));
	ck_assert(!nf_unicode_printable(0x2028) && !nf_unicode_printable(0x2029));
	ck_assert(!nf_unicode_printable(0xFFFE) && !nf_unicode_printable(0xFFFF) && !nf_unicode_printable(0x1F));
	ck_assert(!nf_unicode_printable(0x80) && !nf_unicode_printable(0x9F) && nf_unicode_printable(0xA0));
	ck_assert(nf_unicode_printable(0xFDCF) && nf_unicode_printable(0xFFFD) && nf_unicode_printable(0xE9));
}
END_TEST

START_TEST(text_cleans_every_hostile_string)
{
	for (size_t i = 0; i < NF_HOSTILE_N; i++)
		for (unsigned nl = 0; nl < 2; nl++) {
			const char *s = nf_hostile_set[i].s;
			struct grow g = { 0 }, want = { 0 };

			grow_write(&g, "", 0);
			ck_assert_int_eq(nf_esc_text(s, strlen(s), nl ? NF_ESC_KEEP_NL : 0, grow_write, &g), 0);
			assert_clean(nf_hostile_set[i].what, g.p, g.n, nl);
			expected_text(s, nl, &want);
			ck_assert_msg(!strcmp(g.p, want.p), "%s: '%s', want '%s'", nf_hostile_set[i].what, g.p, want.p);
			ck_assert(nf_esc_text_is_clean(s, nl ? NF_ESC_KEEP_NL : 0) == !strcmp(s, g.p));
			free(g.p);
			free(want.p);
		}
	/* what is kept is kept byte for byte */
	char buf[64];
	ck_assert_str_eq(nf_esc_text_buf(buf, sizeof(buf), "caf\xc3\xa9 \xf0\x9f\x98\x80 ok", 0),
			 "caf\xc3\xa9 \xf0\x9f\x98\x80 ok");
	ck_assert_str_eq(nf_esc_text_buf(buf, sizeof(buf), "a\x1b[2Jb\xc2\x9b" "c\xef\xbf\xbe", 0), "a?[2Jb?c?");
	ck_assert_str_eq(nf_esc_text_buf(buf, sizeof(buf), NULL, 0), "");
	ck_assert_str_eq(nf_esc_text_buf(buf, sizeof(buf), "\xe2\x80\xa8\xe2\x80\xa9\xef\xb7\x90\xf0\x9f\xbf\xbf\xed\xa0\x80", 0),
			 "???????");
	ck_assert_str_eq(nf_esc_text_buf(buf, sizeof(buf), "a\nb\tc\rd", NF_ESC_KEEP_NL), "a\nb\tc?d");
	ck_assert_str_eq(nf_esc_text_buf(buf, sizeof(buf), "a\nb\tc\rd", 0), "a?b?c?d");
	/* cut at a character boundary, never inside one */
	ck_assert_str_eq(nf_esc_text_buf(buf, 6, "abcd\xc3\xa9xyz", 0), "abcd");
	ck_assert_str_eq(nf_esc_text_buf(buf, 7, "abcd\xc3\xa9xyz", 0), "abcd\xc3\xa9");
	ck_assert_str_eq(nf_esc_text_buf(buf, 1, "abc", 0), "");
}
END_TEST

/* Decodes the JSON string literal at j (strict: only JSON's escapes, no raw
 * control); returns the bytes it stands for (UTF-8), or NULL when invalid. */
static char *json_decode(const char *j, size_t *len)
{
	struct grow g = { 0 };
	const char *p = j;

	grow_write(&g, "", 0);
	if (*p++ != '"')
		goto bad;
	while (*p != '"') {
		unsigned char c = (unsigned char)*p;

		if (!c || c < 0x20)
			goto bad;
		if (c != '\\') {
			grow_write(&g, p++, 1);
			continue;
		}
		p++;
		const char *simple = strchr("\"\\/bfnrt", *p);
		if (*p && simple) {
			static const char to[] = "\"\\/\b\f\n\r\t";
			grow_write(&g, &to[simple - "\"\\/bfnrt"], 1);
			p++;
			continue;
		}
		if (*p != 'u')
			goto bad;
		uint32_t u = 0;
		for (int k = 1; k <= 4; k++) {
			char h = p[k];
			if (!((h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F')))
				goto bad;
			u = u * 16 + (uint32_t)(h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
		}
		p += 5;
		if (u >= 0xD800 && u <= 0xDBFF) { /* a pair */
			uint32_t lo = 0;
			if (p[0] != '\\' || p[1] != 'u')
				goto bad;
			for (int k = 2; k <= 5; k++)
				lo = lo * 16 + (uint32_t)(p[k] <= '9' ? p[k] - '0' : (p[k] | 0x20) - 'a' + 10);
			if (lo < 0xDC00 || lo > 0xDFFF)
				goto bad;
			p += 6;
			u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
		} else if (u >= 0xDC00 && u <= 0xDFFF) {
			goto bad;
		}
		char e[4];
		size_t k;
		if (u < 0x80)
			e[0] = (char)u, k = 1;
		else if (u < 0x800)
			e[0] = (char)(0xC0 | u >> 6), e[1] = (char)(0x80 | (u & 0x3F)), k = 2;
		else if (u < 0x10000)
			e[0] = (char)(0xE0 | u >> 12), e[1] = (char)(0x80 | (u >> 6 & 0x3F)),
			e[2] = (char)(0x80 | (u & 0x3F)), k = 3;
		else
			e[0] = (char)(0xF0 | u >> 18), e[1] = (char)(0x80 | (u >> 12 & 0x3F)),
			e[2] = (char)(0x80 | (u >> 6 & 0x3F)), e[3] = (char)(0x80 | (u & 0x3F)), k = 4;
		grow_write(&g, e, k);
	}
	if (p[1])
		goto bad;
	*len = g.n;
	return g.p;
bad:
	free(g.p);
	return NULL;
}

/* The string with each byte that is not UTF-8 as U+FFFD (what JSON keeps). */
static void expected_json(const char *s, struct grow *g)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s);

	grow_write(g, "", 0);
	for (size_t i = 0; i < n;) {
		size_t l = nf_utf8_decode(u + i, n - i, NULL);

		if (!l)
			grow_write(g, "\xef\xbf\xbd", 3), i++;
		else
			grow_write(g, s + i, l), i += l;
	}
}

START_TEST(json_keeps_every_hostile_string_as_data)
{
	struct grow all = { 0 };
	char out[1 << 14], err[4096];

	grow_write(&all, "[", 1);
	for (size_t i = 0; i < NF_HOSTILE_N; i++)
		for (unsigned script = 0; script < 2; script++) {
			const char *s = nf_hostile_set[i].s;
			struct grow g = { 0 }, want = { 0 };
			size_t dn;

			ck_assert_int_eq(nf_esc_json(s, strlen(s), script ? NF_ESC_SCRIPT : 0, grow_write, &g), 0);
			/* printable ASCII escapes around printable UTF-8 only */
			assert_clean(nf_hostile_set[i].what, g.p, g.n, false);
			if (script)
				ck_assert_msg(!strpbrk(g.p, "<>&"), "%s: %s", nf_hostile_set[i].what, g.p);
			char *d = json_decode(g.p, &dn);
			ck_assert_msg(d != NULL, "%s: not a JSON string: %s", nf_hostile_set[i].what, g.p);
			expected_json(s, &want);
			ck_assert_msg(dn == want.n && !memcmp(d, want.p, dn), "%s: reads back as '%s'",
				      nf_hostile_set[i].what, d);
			if (nf_hostile_set[i].valid_utf8)
				ck_assert_msg(dn == strlen(s) && !memcmp(d, s, dn), "%s: not lossless",
					      nf_hostile_set[i].what);
			/* nf_esc_json_plain (the writers' fast path) says plain only when
			 * nf_esc_json writes the string as it is, between quotes, and
			 * always then for ASCII (UTF-8 beyond it goes the slow way) */
			if (!script) {
				size_t pn;
				bool plain = nf_esc_json_plain(s, &pn), ascii = true;
				bool as_is = g.n == strlen(s) + 2 && !memcmp(g.p + 1, s, strlen(s));

				for (const char *c = s; *c; c++)
					ascii = ascii && (unsigned char)*c < 0x80;
				ck_assert_msg(as_is || !plain, "%s: plain, yet escaped", nf_hostile_set[i].what);
				ck_assert_msg(!ascii || plain == as_is, "%s: nf_esc_json_plain says %d", nf_hostile_set[i].what, plain);
				ck_assert_msg(!plain || pn == strlen(s), "%s: plain length %zu", nf_hostile_set[i].what, pn);
			}
			grow_write(&all, g.p, g.n);
			grow_write(&all, ",", 1);
			free(d);
			free(g.p);
			free(want.p);
		}
	/* the forms themselves */
	static const char *const golden[][2] = {
		{ "\x1b[1m\xc2\x9b\x7f", "\"\\u001b[1m\\u009b\\u007f\"" },
		{ "\xe2\x80\xa8\xe2\x80\xa9", "\"\\u2028\\u2029\"" },
		{ "\xef\xbf\xbe\xf0\x9f\xbf\xbf", "\"\\ufffe\\ud83f\\udfff\"" },
		{ "caf\xe9\xc0\xaf", "\"caf\\ufffd\\ufffd\\ufffd\"" },
		{ "caf\xc3\xa9\n\"\\", "\"caf\xc3\xa9\\n\\\"\\\\\"" },
	};
	for (size_t i = 0; i < sizeof(golden) / sizeof(golden[0]); i++) {
		struct grow g = { 0 };

		nf_esc_json(golden[i][0], strlen(golden[i][0]), 0, grow_write, &g);
		ck_assert_str_eq(g.p, golden[i][1]);
		free(g.p);
	}
	/* the fast path's edges: every printable ASCII byte but '"' and '\\' is plain */
	{
		static const char *const plain[] = { "", "wait 0x6", "Q0 0x40000040 #2", " !#$%&'()*+,-./09:;<=>?@AZ[]^_`az{|}~" };
		static const char *const not_plain[] = { "a\"b", "a\\b", "tab\t", "del\x7f", "caf\xc3\xa9", "\x01" };
		size_t pn;

		for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
			ck_assert_msg(nf_esc_json_plain(plain[i], &pn) && pn == strlen(plain[i]), "'%s'", plain[i]);
		for (size_t i = 0; i < sizeof(not_plain) / sizeof(not_plain[0]); i++)
			ck_assert_msg(!nf_esc_json_plain(not_plain[i], &pn), "'%s'", not_plain[i]);
	}
	/* a JSON text (an item's detail from SQLite's json_object): its syntax and
	 * escapes as they are, the raw bytes inside cleaned as nf_esc_json does */
	static const char *const text[][2] = {
		{ "{\"text\":\"a\x7f\xed\xa0\x80" "b\\\"c\"}", "{\"text\":\"a\\u007f\\ufffd\\ufffd\\ufffdb\\\"c\"}" },
		{ "{\"n\":[1, 2],\"s\":\"</script>\\u0001\xe2\x80\xa8\"}", "{\"n\":[1, 2],\"s\":\"\\u003c/script\\u003e\\u0001\\u2028\"}" },
	};
	for (size_t i = 0; i < sizeof(text) / sizeof(text[0]); i++) {
		struct grow g = { 0 };

		ck_assert_int_eq(nf_esc_json_text(text[i][0], strlen(text[i][0]), NF_ESC_SCRIPT, grow_write, &g), 0);
		ck_assert_str_eq(g.p, text[i][1]);
		grow_write(&all, g.p, g.n);
		grow_write(&all, ",", 1);
		free(g.p);
	}
	all.p[all.n - 1] = ']';
	/* and Python's json, which refuses what JSON does not allow */
	int st = nf_test_json_tool(all.p, out, sizeof(out), err, sizeof(err));
	ck_assert_msg(st == 0, "python3 json refused the strings: %s", err);
	free(all.p);
}
END_TEST

START_TEST(xml_is_well_formed_for_every_hostile_string)
{
	struct grow doc = { 0 };
	char out[1 << 15], err[4096];

	grow_write(&doc, "<r>", 3);
	for (size_t i = 0; i < NF_HOSTILE_N; i++) {
		const char *s = nf_hostile_set[i].s;
		struct grow g = { 0 }, want = { 0 };

		grow_write(&g, "", 0);
		ck_assert_int_eq(nf_esc_xml(s, strlen(s), 0, grow_write, &g), 0);
		assert_clean(nf_hostile_set[i].what, g.p, g.n, false);
		ck_assert_msg(!strpbrk(g.p, "<>\"'"), "%s: %s", nf_hostile_set[i].what, g.p);
		/* every '&' starts one of the five entities */
		for (const char *a = strchr(g.p, '&'); a; a = strchr(a + 1, '&'))
			ck_assert_msg(!strncmp(a, "&amp;", 5) || !strncmp(a, "&lt;", 4) || !strncmp(a, "&gt;", 4) ||
					      !strncmp(a, "&quot;", 6) || !strncmp(a, "&#39;", 5),
				      "%s: %s", nf_hostile_set[i].what, g.p);
		/* as an element's text and as an attribute value */
		grow_write(&doc, "<t a=\"", 6);
		grow_write(&doc, g.p, g.n);
		grow_write(&doc, "\">", 2);
		grow_write(&doc, g.p, g.n);
		grow_write(&doc, "</t>", 4);
		expected_text(s, false, &want);
		free(g.p);
		free(want.p);
	}
	grow_write(&doc, "</r>", 4);
	char path[600];
	snprintf(path, sizeof(path), "%s/nftrace-xml-XXXXXX", nf_test_tmpbase());
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, doc.p, doc.n), (ssize_t)doc.n);
	close(fd);
	/* Python's parser reads each <t> back as the cleaned string, text and attribute */
	static const char check[] =
		"import sys, xml.dom.minidom as m\n"
		"d = m.parse(sys.argv[1])\n"
		"for t in d.getElementsByTagName('t'):\n"
		"    v = ''.join(c.data for c in t.childNodes)\n"
		"    assert v == t.getAttribute('a'), (v, t.getAttribute('a'))\n"
		"    sys.stdout.write(v.encode('utf-8').hex() + '\\n')\n";
	int st = nf_test_exec(NULL, NF_TEST_ARGV("python3", "-c", check, path), out, sizeof(out), err,
			      sizeof(err));
	unlink(path);
	ck_assert_msg(st == 0, "python3 refused the XML: %s", err);
	char *line = out;
	for (size_t i = 0; i < NF_HOSTILE_N; i++) {
		struct grow want = { 0 };
		char hex[4096] = "";
		char *nl = strchr(line, '\n');

		ck_assert_ptr_nonnull(nl);
		*nl = '\0';
		expected_text(nf_hostile_set[i].s, false, &want);
		for (size_t k = 0; k < want.n && 2 * k + 2 < sizeof(hex); k++)
			sprintf(hex + 2 * k, "%02x", (unsigned char)want.p[k]);
		ck_assert_msg(!strcmp(line, hex), "%s: read back as %s, want %s", nf_hostile_set[i].what, line, hex);
		line = nl + 1;
		free(want.p);
	}
	free(doc.p);
}
END_TEST

/* Runs `SHELL -c 'printf %s WORD'` and compares what it prints with s. */
static void shell_round_trip(const char *shell, const char *what, const char *s, const char *word)
{
	char script[8192], out[8192], err[2048];
	size_t n = strlen(s);

	snprintf(script, sizeof(script), "printf %%s %s", word);
	int st = nf_test_exec(NULL, NF_TEST_ARGV(shell, "-c", script), out, sizeof(out), err, sizeof(err));
	ck_assert_msg(st == 0, "%s %s: exit %d: %s", shell, what, st, err);
	/* nf_test_exec keeps the output as text: compare what it holds */
	ck_assert_msg(strlen(out) == n && !memcmp(out, s, n), "%s %s: printed '%s' for '%s' (word %s)", shell,
		      what, out, s, word);
}

START_TEST(shell_words_stand_for_every_hostile_string)
{
	for (size_t i = 0; i < NF_HOSTILE_N; i++) {
		const char *s = nf_hostile_set[i].s;
		struct grow g = { 0 };

		grow_write(&g, "", 0);
		ck_assert_int_eq(nf_esc_shell(s, strlen(s), grow_write, &g), 0);
		assert_clean(nf_hostile_set[i].what, g.p, g.n, false);
		shell_round_trip("bash", nf_hostile_set[i].what, s, g.p);
		if (g.p[0] != '$') /* dash has no $'...' */
			shell_round_trip("dash", nf_hostile_set[i].what, s, g.p);
		free(g.p);
	}
	struct grow g = { 0 };
	grow_write(&g, "", 0);
	nf_esc_shell("out/s-1.dat", 11, grow_write, &g);
	ck_assert_str_eq(g.p, "out/s-1.dat");
	g.n = 0;
	nf_esc_shell("", 0, grow_write, &g);
	ck_assert_str_eq(g.p, "''");
	g.n = 0;
	nf_esc_shell("it's", 4, grow_write, &g);
	ck_assert_str_eq(g.p, "'it'\\''s'");
	free(g.p);
}
END_TEST

START_TEST(sql_literals_hold_every_hostile_string)
{
	sqlite3 *db;

	ck_assert_int_eq(sqlite3_open(":memory:", &db), SQLITE_OK);
	for (size_t i = 0; i < NF_HOSTILE_N; i++) {
		const char *s = nf_hostile_set[i].s;
		struct grow g = { 0 }, q = { 0 };
		sqlite3_stmt *st;

		grow_write(&g, "", 0);
		ck_assert_int_eq(nf_esc_sql(s, strlen(s), 0, grow_write, &g), 0);
		grow_write(&q, "SELECT CAST(", 12);
		grow_write(&q, g.p, g.n);
		grow_write(&q, " AS BLOB)", 9);
		ck_assert_msg(sqlite3_prepare_v2(db, q.p, -1, &st, NULL) == SQLITE_OK, "%s: %s",
			      nf_hostile_set[i].what, sqlite3_errmsg(db));
		ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
		ck_assert_msg((size_t)sqlite3_column_bytes(st, 0) == strlen(s) &&
				      !memcmp(sqlite3_column_blob(st, 0), s, strlen(s)),
			      "%s: SQLite reads another string", nf_hostile_set[i].what);
		sqlite3_finalize(st);
		free(g.p);
		free(q.p);
	}
	sqlite3_close(db);
	struct grow g = { 0 };
	grow_write(&g, "", 0);
	nf_esc_sql("a'b\\c", 5, NF_ESC_BACKSLASH, grow_write, &g);
	ck_assert_str_eq(g.p, "'a''b\\\\c'");
	free(g.p);
}
END_TEST

START_TEST(times_saturate_or_refuse)
{
	int64_t d = 7;

	ck_assert(nf_time_add(INT64_MAX, 1) == INT64_MAX && nf_time_add(INT64_MIN, -1) == INT64_MIN);
	ck_assert(nf_time_add(INT64_MAX, INT64_MIN) == -1 && nf_time_add(5, -7) == -2);
	ck_assert(nf_time_sub(INT64_MAX, INT64_MIN) == INT64_MAX && nf_time_sub(INT64_MIN, INT64_MAX) == INT64_MIN);
	ck_assert(nf_time_sub(INT64_MIN, 1) == INT64_MIN && nf_time_sub(0, INT64_MIN) == INT64_MAX);
	ck_assert(nf_time_sub(10, 3) == 7);
	ck_assert(!nf_time_span(INT64_MIN, INT64_MAX, &d) && d == 0);
	ck_assert(!nf_time_span(5, 4, &d) && d == 0);
	ck_assert(nf_time_span(-5, INT64_MAX - 5, &d) && d == INT64_MAX);
	ck_assert(nf_time_span(3, 3, &d) && d == 0);
	ck_assert(nf_time_from_double(1e300) == INT64_MAX && nf_time_from_double(-1e300) == INT64_MIN);
	ck_assert(nf_time_from_double(0.0 / 0.0) == 0 && nf_time_from_double(-2.5) == -2);
}
END_TEST

static Suite *escape_suite(void)
{
	Suite *s = suite_create("escape");
	TCase *tc = tcase_create("escape");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, utf8_decoder_edges);
	tcase_add_test(tc, text_cleans_every_hostile_string);
	tcase_add_test(tc, json_keeps_every_hostile_string_as_data);
	tcase_add_test(tc, xml_is_well_formed_for_every_hostile_string);
	tcase_add_test(tc, shell_words_stand_for_every_hostile_string);
	tcase_add_test(tc, sql_literals_hold_every_hostile_string);
	tcase_add_test(tc, times_saturate_or_refuse);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return nf_test_main(escape_suite());
}
