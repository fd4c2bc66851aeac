/*
 * nftrace report -o FILE.html without a browser: the page is one
 * self-contained file (no network, no external script), holds the details of
 * every operation of the window (or of --max-ops of them, saying where the cut
 * is), escapes what it embeds, gives the same bytes twice, and filters that
 * match nothing are one-line errors leaving no file behind.
 */
#include "nf_test.h"

#include <sys/stat.h>

static char tmpdir[1024];

static void setup(void)
{
	nf_test_tmpdir(tmpdir, sizeof(tmpdir));
}

static void teardown(void)
{
	if (!getenv("NF_KEEP_TMP"))
		nf_test_rmtree(tmpdir);
}

/* Runs nftrace with args (no shell), its stdout in out; fails the test unless it exits 0. */
static void nft_ok(const char *const args[], char *out, size_t len)
{
	char err[4096];
	int rc = nf_test_nftrace_run(args, out, len, err, sizeof(err));

	ck_assert_msg(rc == 0, "nftrace %s exited %d: %.1500s", args[0], rc, err);
}

/* Reads a whole file (malloc'd, NUL-terminated). */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	ck_assert_msg(f != NULL, "%s: cannot open", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	ck_assert(buf != NULL);
	ck_assert_int_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = 0;
	fclose(f);
	if (len)
		*len = (size_t)n;
	return buf;
}

/* The integer after "key": in the page's data. */
static long long data_int(const char *page, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(page, pat);
	ck_assert_msg(p != NULL, "no %s in the page's data", key);
	return atoll(p + strlen(pat));
}

/* One integer from `nftrace query --csv`. */
static long long query_int(const char *dir, const char *sql)
{
	char out[4096];
	const char *nl;

	nft_ok(NF_TEST_ARGV("query", "--csv", dir, sql), out, sizeof(out));
	nl = strchr(out, '\n');
	ck_assert_msg(nl != NULL, "no result for %s", sql);
	return atoll(nl + 1);
}

/* Records the log-buffer example into tmpdir/s; its path in dir. */
static void record_sample(char *dir, size_t len)
{
	snprintf(dir, len, "%s/s", tmpdir);
	nf_test_record("samples/log-buffer-example.nfs", dir, NULL);
}

START_TEST(self_contained_page)
{
	char dir[1200], out[256], page[1300], page2[1300];
	char *a, *b;
	size_t la, lb;

	record_sample(dir, sizeof(dir));
	snprintf(page, sizeof(page), "%s/r.html", tmpdir);
	snprintf(page2, sizeof(page2), "%s/r2.html", tmpdir);
	nft_ok(NF_TEST_ARGV("report", dir, "-o", page), out, sizeof(out));
	nft_ok(NF_TEST_ARGV("report", dir, "-o", page2), out, sizeof(out));
	a = slurp(page, &la);
	b = slurp(page2, &lb);
	ck_assert_msg(la == lb && memcmp(a, b, la) == 0, "two runs gave different pages");
	ck_assert(strncmp(a, "<!DOCTYPE html>", 15) == 0);
	/* Nothing fetched: no URL, no external script, style sheet or image. */
	ck_assert_msg(!strstr(a, "http://") && !strstr(a, "https://"), "the page names a URL");
	ck_assert_msg(!strstr(a, " src=") && !strstr(a, "<link") && !strstr(a, "@import"),
		      "the page loads something");
	ck_assert(strstr(a, "id=\"nfdata\"") != NULL);
	ck_assert(strstr(a, "</html>") != NULL);
	/* Every operation of the session is detailed. */
	ck_assert_int_eq(data_int(a, "nOps"),
			 query_int(dir, "select count(*) from fence_ops where queue is not null"));
	ck_assert_int_eq(data_int(a, "nDetail"), data_int(a, "nOps"));
	ck_assert_int_eq(data_int(a, "detailFull"), 1);
	free(a);
	free(b);
}
END_TEST

START_TEST(max_ops_cut)
{
	char dir[1200], out[256], page[1300];
	char *a;
	long long n, cut, next;

	record_sample(dir, sizeof(dir));
	n = query_int(dir, "select count(*) from fence_ops where queue is not null");
	ck_assert_msg(n >= 2, "the sample has %lld operations", n);
	snprintf(page, sizeof(page), "%s/r.html", tmpdir);
	nft_ok(NF_TEST_ARGV("report", dir, "-o", page, "--max-ops", "1"), out, sizeof(out));
	a = slurp(page, NULL);
	ck_assert_int_eq(data_int(a, "nOps"), n);
	ck_assert_int_eq(data_int(a, "nDetail"), 1);
	ck_assert_int_eq(data_int(a, "maxOps"), 1);
	ck_assert_int_eq(data_int(a, "detailFull"), 0);
	cut = data_int(a, "cut");
	next = data_int(a, "nextTo");
	ck_assert_msg(cut > 0 && next > cut, "cut %lld, next window to %lld", cut, next);
	/* Only operations starting before the cut are detailed. */
	{
		char sql[512];

		snprintf(sql, sizeof(sql),
			 "select count(*) from fence_ops where queue is not null and "
			 "coalesce(queued_ns, observed_ns, end_ns) < %lld", cut);
		ck_assert_int_le(query_int(dir, sql), 1);
	}
	free(a);
}
END_TEST

START_TEST(embedded_text_escaped)
{
	char dir[1200], out[256], page[1300];
	char *a;

	record_sample(dir, sizeof(dir));
	snprintf(page, sizeof(page), "%s/r.html", tmpdir);
	nft_ok(NF_TEST_ARGV("report", dir, "-o", page, "--title", "</script><b>\"x\\"), out,
	       sizeof(out));
	a = slurp(page, NULL);
	ck_assert_msg(!strstr(a, "</script><b>"), "the title ends the data script");
	ck_assert(strstr(a, "\\u003c/script\\u003e\\u003cb\\u003e\\\"x\\\\") != NULL);
	free(a);
}
END_TEST

/* Filters that match nothing, and bad options: one line, exit 1 (2 for usage), no page. */
START_TEST(errors)
{
	static const struct {
		const char *opt, *val, *needle;
		int rc;
	} cases[] = {
		{ "--fence", "0x99", "fence 0x99: not in the timeline", 1 },
		{ "--fence", "153", "fence 0x99: not in the timeline", 1 },
		{ "--queue", "0x1234", "queue 0x1234: not in the timeline", 1 },
		{ "--from", "10s", "time window: start 10 s is not before the session's end", 1 },
		{ "--max-ops", "0", "--max-ops must be between", 2 },
		{ "--width", "800", "--width applies to pictures", 2 },
	};
	char dir[1200], out[256], err[2048], page[1300];
	struct stat sb;

	record_sample(dir, sizeof(dir));
	snprintf(page, sizeof(page), "%s/bad.html", tmpdir);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc;

		rc = nf_test_nftrace_run(NF_TEST_ARGV("report", dir, "-o", page, cases[i].opt,
						      cases[i].val), out, sizeof(out), err, sizeof(err));
		ck_assert_msg(rc == cases[i].rc, "%s: exit %d, stderr %s", cases[i].opt, rc, err);
		ck_assert_msg(strstr(err, cases[i].needle) != NULL, "%s: stderr '%s' lacks '%s'",
			      cases[i].opt, err, cases[i].needle);
		ck_assert_msg(cases[i].rc == 2 || nf_test_count_lines(err) == 1, "%s: stderr '%s'",
			      cases[i].opt, err);
		ck_assert_msg(stat(page, &sb) != 0, "%s: a page was left behind", cases[i].opt);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("html");
	TCase *tc = tcase_create("page");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, self_contained_page);
	tcase_add_test(tc, max_ops_cut);
	tcase_add_test(tc, embedded_text_escaped);
	tcase_add_test(tc, errors);
	suite_add_tcase(s, tc);
	return nf_test_main(s);
}
