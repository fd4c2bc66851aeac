/*
 * nftrace report -o FILE.html without a browser: the page is one
 * self-contained file (no network, no external script), holds the details of
 * every operation of the window (or of --max-ops of them, saying where the cut
 * is), escapes what it embeds, gives the same bytes twice, and filters that
 * match nothing are one-line errors leaving no file behind. Kernel sessions
 * (samples/kernel/drm-sched.dat) carry their rings, jobs, job deps, vblanks,
 * markers and runs; ETW sessions (a capture of tests/html/html_etl.c) their
 * DMA packet node rows and VSyncs. `test_html real` (its own ctest, skipped
 * when ../shared/real-traces is absent): the real amdgpu trace and its thread
 * rows chosen as the static report chooses them (--threads all, --thread,
 * --process).
 */
#include "nf_test.h"
#include "html_etl.h"

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
		{ "--thread", "nosuch", "thread 'nosuch': not in the timeline", 1 },
		{ "--thread", "999999", "thread '999999': not in the timeline", 1 },
		{ "--process", "nosuch", "process 'nosuch': not in the timeline", 1 },
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
	/* The static report refuses the same thread filters (it once drew without them). */
	snprintf(page, sizeof(page), "%s/bad.png", tmpdir);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc;

		if (strcmp(cases[i].opt, "--thread") && strcmp(cases[i].opt, "--process"))
			continue;
		rc = nf_test_nftrace_run(NF_TEST_ARGV("report", dir, "-o", page, cases[i].opt, cases[i].val), out,
					 sizeof(out), err, sizeof(err));
		ck_assert_msg(rc == 1 && strstr(err, cases[i].needle) && nf_test_count_lines(err) == 1,
			      "png %s %s: exit %d, stderr %s", cases[i].opt, cases[i].val, rc, err);
		ck_assert_msg(stat(page, &sb) != 0, "%s: a picture was left behind", cases[i].opt);
	}
}
END_TEST

/* Imports a file into tmpdir/NAME and writes its page tmpdir/NAME.html (opt val: a report option). */
static char *import_page(const char *file, const char *name, const char *opt, const char *val,
			 char *dir, size_t dlen)
{
	char out[1024], page[1300];

	snprintf(dir, dlen, "%s/%s", tmpdir, name);
	snprintf(page, sizeof(page), "%s/%s.html", tmpdir, name);
	nft_ok(NF_TEST_ARGV("import", file, "-o", dir, "--force"), out, sizeof(out));
	if (opt)
		nft_ok(NF_TEST_ARGV("report", dir, "-o", page, opt, val), out, sizeof(out));
	else
		nft_ok(NF_TEST_ARGV("report", dir, "-o", page), out, sizeof(out));
	return slurp(page, NULL);
}

/* How many times needle occurs in s. */
static int count_of(const char *s, const char *needle)
{
	int n = 0;

	for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* samples/kernel/drm-sched.events says what each row must be. */
START_TEST(kernel_rows)
{
	char dat[2048], dir[1200];
	char *a;

	nf_test_source_path(dat, sizeof(dat), "samples/kernel/drm-sched.dat");
	a = import_page(dat, "k", NULL, NULL, dir, sizeof(dir));
	/* Thread rows 0..2 (90 kworker, 500 app, 501 app-render, by id), then the rings. */
	ck_assert_int_eq(count_of(a, "\"kind\":\"thread\""), 3);
	ck_assert_msg(strstr(a, "\"kind\":\"thread\",\"id\":500,") && strstr(a, "\"name\":\"app\""), "no row for app (500)");
	ck_assert_msg(strstr(a, "\"kind\":\"ring\",\"id\":0,") &&
		      strstr(a, "\"name\":\"gfx_0.0.0\",\"adapterName\":\"\",\"driver\":\"amdgpu\",\"count\":3"), "no gfx ring");
	ck_assert_msg(strstr(a, "\"name\":\"sdma0\",\"adapterName\":\"\",\"driver\":\"drm_sched\",\"count\":1"), "no sdma0 ring");
	/* The jobs' dma_fence timelines are drawn as the rings, not as queue rows (as the static report). */
	ck_assert_int_eq(count_of(a, "\"kind\":\"queue\""), 0);
	/* Jobs: [id, ring row, job, context, seqno, thread row, submitted, started, finished, status,
	 * bound, finish source]. */
	ck_assert_msg(strstr(a, "\"jobs\":[[1,3,11,301,1,1,1000000,1100000,2000000,\"complete\",null,\"event\"],\n"
				"[2,3,12,301,2,1,1200000,2050000,3000000,\"complete\",null,\"event\"],\n"
				"[3,4,13,null,null,0,1500000,1600000,1900000,\"complete\",null,\"event\"],\n"
				"[4,3,14,301,3,2,2499000,3100000,null,\"unfinished\",null,\"\"]]"), "jobs: %.600s", strstr(a, "\"jobs\""));
	ck_assert_msg(strstr(a, "\"jobDeps\":[[2,1,301,1,\"finished\",1202000],\n[3,null,77,5,null,1501000],\n"
				"[4,2,300,2,\"scheduled\",2501000]]"), "job deps: %.300s", strstr(a, "\"jobDeps\""));
	ck_assert_msg(strstr(a, "\"vblanks\":[500000,0,100,1000000,1,7,2500000,0,101]"), "vblanks");
	ck_assert_msg(strstr(a, "\"markers\":[[1,1,900000,\"frame_1_begin\"],\n[2,1,2400000,\"frame_2_begin\"]]"), "markers");
	ck_assert_int_eq(data_int(a, "threadsLeftOut"), 0);
	ck_assert_int_eq(data_int(a, "etw"), 0);
	free(a);
	/* With a fence filter, no rings (as the static report). */
	a = import_page(dat, "k2", "--fence", "0x10000012d", dir, sizeof(dir));
	ck_assert_int_eq(count_of(a, "\"kind\":\"ring\""), 0);
	ck_assert_msg(strstr(a, "\"jobs\":[]"), "jobs without rings");
	free(a);
}
END_TEST

/* tests/html/html_etl.c says what each row must be. */
START_TEST(etw_rows)
{
	char etl[1200], dir[1200];
	char *a;

	snprintf(etl, sizeof(etl), "%s/f.etl", tmpdir);
	ck_assert_int_eq(html_etl_write(etl), 0);
	a = import_page(etl, "w", NULL, NULL, dir, sizeof(dir));
	ck_assert_int_eq(data_int(a, "etw"), 1);
	/* Queue rows 0 (context A, node 0) and 1 (B, node 1), thread rows 2 and 3 (100 signalled, 200
	 * waited), a DMA packet row per node after them (4, 5). */
	ck_assert_int_eq(count_of(a, "\"kind\":\"queue\""), 2);
	ck_assert_msg(strstr(a, "\"kind\":\"node\",\"id\":0,\"adapter\":0,\"node\":0,") &&
		      strstr(a, "\"kind\":\"node\",\"id\":1,\"adapter\":0,\"node\":1,"), "node rows");
	ck_assert_msg(strstr(a, "\"name\":\"Node 0\",\"adapterName\":\"Adapter 0xa000\""), "node 0's name");
	/* [id, node row, queue row, type, submission, start, isr, end, status], times in ns. */
	ck_assert_int_eq(count_of(a, "\"kind\":\"thread\""), 2);
	ck_assert_msg(strstr(a, "\"dma\":[[1,4,0,1,77,40000,null,51000,\"complete\"],\n"
				"[2,4,0,1,78,52000,null,58000,\"complete\"],\n"
				"[3,5,1,1,90,63000,null,70000,\"complete\"]]"), "dma: %.400s", strstr(a, "\"dma\""));
	ck_assert_msg(strstr(a, "\"vsyncs\":[100000,0,0,42,116600,0,0,43]"), "vsyncs: %.200s", strstr(a, "\"vsyncs\""));
	free(a);
	/* --queue keeps the DMA packets of that queue only. */
	a = import_page(etl, "w2", "--queue", "2", dir, sizeof(dir));
	ck_assert_int_eq(count_of(a, "\"kind\":\"node\""), 1);
	ck_assert_msg(strstr(a, "\"dma\":[[3,") && strstr(a, ",0,1,90,63000,null,70000,\"complete\"]],"), "dma of queue 2: %.300s",
		      strstr(a, "\"dma\""));
	free(a);
}
END_TEST

static int real_trace(const char *name, char *path, size_t len)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "../shared/real-traces/%s", name);
	nf_test_source_path(path, len, rel);
	return access(path, R_OK) == 0;
}

/* The real amdgpu trace: its rings and jobs, and the thread rows of the static report's choice. */
START_TEST(real_amdgpu_threads)
{
	char dat[2048], dir[1200];
	char *a;
	long long jobs, related, all;

	ck_assert(real_trace("gpuvis-amdgpu.dat", dat, sizeof(dat)));
	a = import_page(dat, "r", NULL, NULL, dir, sizeof(dir));
	jobs = query_int(dir, "select count(*) from jobs");
	ck_assert_int_eq(count_of(a, "\"kind\":\"ring\""), query_int(dir, "select count(distinct driver || ring) from jobs"));
	ck_assert_int_eq(count_of(a, "\"jobs\":[[") , 1);
	ck_assert_int_eq(count_of(strstr(a, "\"jobs\":["), "\"complete\",null,") + count_of(strstr(a, "\"jobs\":["), "\"unfinished\",") +
			 count_of(strstr(a, "\"jobs\":["), "\"unknown\",null,\"\"]"), jobs);
	/* A bounded finish is drawn unknown, its bound beside it (the tooltip says it). */
	ck_assert_int_eq(count_of(strstr(a, "\"jobs\":["), ",null,\"unfinished\",1172814271,\"recording_start\"]"),
			 query_int(dir, "select count(*) from jobs where bound_source = 'recording_start'"));
	ck_assert_int_eq(query_int(dir, "select count(*) from jobs where bound_source = 'recording_start'"), 51);
	/* Threads that submitted jobs or wrote markers have rows; those that only ran are counted. */
	related = query_int(dir, "select count(*) from (select thread from cpu_waits where thread is not null union "
				 "select thread from cpu_signals where thread is not null union select thread from queue_threads "
				 "where thread is not null and queue is not null union select thread from jobs where thread is not null "
				 "union select thread from markers where thread is not null)");
	all = query_int(dir, "select count(*) from (select thread from cpu_runs where thread is not null union "
			     "select thread from jobs where thread is not null union select thread from markers where thread is not null "
			     "union select thread from cpu_waits where thread is not null)");
	ck_assert_int_eq(count_of(a, "\"kind\":\"thread\""), related);
	ck_assert_int_eq(data_int(a, "threadsLeftOut"), all - related);
	ck_assert_int_gt(all - related, 0);
	free(a);
	/* --threads all: every thread that ran; --process Xorg: its threads too; --thread 1: that one too. */
	a = import_page(dat, "r2", "--threads", "all", dir, sizeof(dir));
	ck_assert_int_eq(count_of(a, "\"kind\":\"thread\""), all);
	ck_assert_int_eq(data_int(a, "threadsLeftOut"), 0);
	free(a);
	a = import_page(dat, "r3", "--process", "Xorg", dir, sizeof(dir));
	ck_assert_int_eq(count_of(a, "\"kind\":\"thread\""),
			 related + query_int(dir, "select count(distinct r.thread) from cpu_runs r join kernel_threads k on "
						  "k.thread = r.thread join kernel_threads p on p.thread = k.process where p.comm = 'Xorg' "
						  "and r.thread not in (select thread from jobs where thread is not null union "
						  "select thread from markers where thread is not null)"));
	free(a);
}
END_TEST

int main(int argc, char **argv)
{
	Suite *s;
	TCase *tc;

	/* `test_html real`: the real traces only, its own ctest (skips when absent). */
	if (argc > 1 && !strcmp(argv[1], "real")) {
		char path[2048];

		if (!real_trace("gpuvis-amdgpu.dat", path, sizeof(path))) {
			printf("SKIP: %s is absent (real traces live in ../shared/real-traces)\n", path);
			return 77;
		}
		s = suite_create("html_real");
		tc = tcase_create("real");
		tcase_add_checked_fixture(tc, setup, teardown);
		tcase_set_timeout(tc, 300);
		tcase_add_test(tc, real_amdgpu_threads);
		suite_add_tcase(s, tc);
		return nf_test_main(s);
	}
	s = suite_create("html");
	tc = tcase_create("page");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, self_contained_page);
	tcase_add_test(tc, max_ops_cut);
	tcase_add_test(tc, embedded_text_escaped);
	tcase_add_test(tc, errors);
	tcase_add_test(tc, kernel_rows);
	tcase_add_test(tc, etw_rows);
	suite_add_tcase(s, tc);
	return nf_test_main(s);
}
