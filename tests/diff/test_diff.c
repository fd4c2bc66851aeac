/*
 * Tests of `nftrace diff` (include/contract/diff.h, cli/cmd_diff.c): two
 * recordings of one scenario and seed are "no change"; a scenario whose
 * producer works 20% longer is caught by --fail-on and its aligned view lists
 * exactly the waits that changed; two seeds that only jitter the clock and
 * the timestamps show no significant change; the series' numbers equal SQL
 * computed here; what one side lacks is said (frames, queues); hang findings
 * that appear; the budget language's errors name their column; bad usage is
 * exit 2; hostile queue names are escaped in text, JSON and CSV; the picture.
 * The statistics are checked against values computed by hand.
 */
#include "nf_test.h"

#include "contract/analysis.h"
#include "contract/diff.h"
#include "contract/session.h"

#include "diff_int.h" /* the statistics, checked on their own */

#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>

static char tmp[512];
static char out[1 << 20], err[1 << 14];

static int nft(const char *const args[])
{
	return nf_test_nftrace_run(args, out, sizeof(out), err, sizeof(err));
}

static void setup(void)
{
	nf_test_tmpdir(tmp, sizeof(tmp));
}

static void teardown(void)
{
	nf_test_rmtree(tmp);
}

/* Records REL (a scenario of the source tree) into tmp/NAME with opts. */
static void record(const char *rel, const char *name, const char *const opts[], char *dir, size_t len)
{
	snprintf(dir, len, "%s/%s", tmp, name);
	nf_test_record(rel, dir, opts);
}

static struct nf_diff *run(const char *a, const char *b, bool ops)
{
	struct nf_diff_options o;
	struct nf_diff *d = NULL;
	struct nf_error e;

	nf_error_clear(&e);
	nf_diff_options_init(&o);
	o.ops = ops;
	ck_assert_msg(nf_diff_run(a, b, &o, &d, &e) == 0, "%s", e.msg);
	return d;
}

static const struct nf_diff_row *row(const struct nf_diff *d, const char *metric, const char *scope,
				     const char *name)
{
	const struct nf_diff_row *r;
	size_t n = nf_diff_rows(d, &r);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(r[i].metric, metric) && !strcmp(r[i].scope, scope) && !strcmp(r[i].name, name))
			return &r[i];
	return NULL;
}

/* ---- the statistics ------------------------------------------------------------- */

START_TEST(stats_by_hand)
{
	/* Mann-Whitney U of b against a, computed by hand (midranks of the pooled
	 * 17 samples; ties 5,6,7,8 twice and 12 twice: sum t^3 - t = 30): U_b = 64,
	 * z = (|64 - 36| - 0.5) / sqrt(8 * 9 / 12 * (18 - 30 / 272)) = 2.65433,
	 * p = erfc(z / sqrt 2) = 0.0079465, U_b / 72 = 0.888889 */
	static const int64_t a[] = { 1, 2, 3, 4, 5, 6, 7, 8 }, b[] = { 5, 6, 7, 8, 9, 10, 11, 12, 12 };
	double z, p, g;

	dd_mann_whitney(a, 8, b, 9, &z, &p, &g);
	ck_assert_double_eq_tol(z, 2.6543334, 1e-6);
	ck_assert_double_eq_tol(p, 0.0079465, 1e-6);
	ck_assert_double_eq_tol(g, 64.0 / 72, 1e-12);
	dd_mann_whitney(b, 9, a, 8, &z, &p, &g); /* the other way round: z changes sign */
	ck_assert_double_eq_tol(z, -2.6543334, 1e-6);
	/* every sample equal: nothing to tell apart */
	static const int64_t c[] = { 7, 7, 7 };
	dd_mann_whitney(c, 3, c, 3, &z, &p, &g);
	ck_assert(z == 0 && p == 1 && g == 0.5);

	/* z of alpha 0.01 (two-sided) and 0.05 */
	ck_assert_double_eq_tol(dd_z_two_sided(0.01), 2.5758293, 1e-6);
	ck_assert_double_eq_tol(dd_z_two_sided(0.05), 1.9599640, 1e-6);

	/* ClickHouse's quantileExact: index floor(level * n), n - 1 for 1 */
	ck_assert_uint_eq(dd_quantile_index(100, 0.5), 50);
	ck_assert_uint_eq(dd_quantile_index(100, 0.99), 99);
	ck_assert_uint_eq(dd_quantile_index(200, 0.99), 198);
	ck_assert_uint_eq(dd_quantile_index(7, 0.9), 6);
	ck_assert_uint_eq(dd_quantile_index(7, 1.0), 6);

	/* the median's interval of 0..99 at z 2.5758: ranks floor(50 - 12.88) = 37 and
	 * ceil(50 + 12.88) + 1 = 64 (1-based), values 36 and 63; p99 of 100 samples has
	 * no upper bound (rank ceil(99 + 2.563) + 1 = 103 > 100) */
	int64_t v[100], lo, hi;

	for (int i = 0; i < 100; i++)
		v[i] = i;
	dd_quantile_interval(v, 100, 0.5, dd_z_two_sided(0.01), &lo, &hi);
	ck_assert_int_eq(lo, 36);
	ck_assert_int_eq(hi, 63);
	dd_quantile_interval(v, 100, 0.99, dd_z_two_sided(0.01), &lo, &hi);
	ck_assert_int_eq(lo, 95); /* rank floor(99 - 2.563) = 96, 1-based */
	ck_assert(hi == INT64_MAX);

	/* the radix sort, negative values and duplicates, against insertion order */
	size_t n = 100000;
	int64_t *x = malloc(n * sizeof(*x));
	uint64_t s = 88172645463325252ull;

	ck_assert(x);
	for (size_t i = 0; i < n; i++) {
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		x[i] = (int64_t)(s % 2000001) - 1000000 + (i % 3 ? 0 : INT64_C(1) << 40);
	}
	x[5] = INT64_MIN;
	x[6] = INT64_MAX;
	ck_assert_int_eq(dd_sort(x, n), 0);
	for (size_t i = 1; i < n; i++)
		ck_assert(x[i - 1] <= x[i]);
	ck_assert(x[0] == INT64_MIN && x[n - 1] == INT64_MAX);
	free(x);
}
END_TEST

/* ---- two recordings of one scenario and seed --------------------------------------- */

START_TEST(same_seed_no_change)
{
	char a[1024], b[1024];
	const struct nf_diff_row *rows;
	const struct nf_diff_op *ops;
	int64_t matched, only_a, only_b;

	record("tests/diff/pipeline.nfs", "a", NULL, a, sizeof(a));
	record("tests/diff/pipeline.nfs", "b", NULL, b, sizeof(b));
	struct nf_diff *d = run(a, b, true);
	size_t n = nf_diff_rows(d, &rows);

	ck_assert_uint_gt(n, 10);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(rows[i].verdict == NF_DIFF_NO_CHANGE, "%s %s %s: verdict %d", rows[i].metric, rows[i].scope,
			      rows[i].name, rows[i].verdict);
	ck_assert_uint_eq(nf_diff_ops(d, &ops, &matched, &only_a, &only_b), 0);
	ck_assert_int_eq(matched, 400);
	ck_assert_int_eq(only_a + only_b, 0);
	/* the series the comparison is about exist */
	ck_assert_ptr_nonnull(row(d, "stall", "queue", "C0"));
	ck_assert_int_eq(row(d, "stall", "queue", "C0")->a.n, 200);
	nf_diff_destroy(d);

	/* the CLI: exit 0 within budget, and says so */
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, b, "--fail-on", "p99(stall)>+10%, regression", "--fail-on",
					  "lost>0, findings>0")),
			 0);
	ck_assert_msg(strstr(out, "verdict: 0 regressions, 0 improvements, 0 no significant change"), "%s", out);
	ck_assert_msg(!strstr(out, "FAIL"), "%s", out);
	ck_assert_msg(strstr(out, "Mann-Whitney U"), "the output names its test");
	/* a session against itself: the same */
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, a, "--fail-on", "regression")), 0);
}
END_TEST

/* ---- one queue's waits 20% longer --------------------------------------------------- */

/* The ids of C0's waits in session dir, sorted. */
static size_t c0_waits(const char *dir, int64_t *ids, size_t max)
{
	char db[4200];
	struct nf_error e;
	sqlite3 *s;
	sqlite3_stmt *st;
	size_t n = 0;

	nf_error_clear(&e);
	ck_assert_msg(nf_timeline_ensure(dir, db, sizeof(db), &e) == 0, "%s", e.msg);
	ck_assert_int_eq(sqlite3_open_v2(db, &s, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(s,
					    "SELECT f.id FROM fence_ops f JOIN queues q ON q.queue = f.queue "
					    "WHERE q.name = 'C0' AND f.op = 'wait' ORDER BY f.id",
					    -1, &st, NULL),
			 SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW && n < max)
		ids[n++] = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(s);
	return n;
}

static int id_cmp(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

	return a < b ? -1 : a > b;
}

START_TEST(slower_queue_caught)
{
	char a[1024], b[1024];
	const struct nf_diff_op *ops;
	int64_t matched, only_a, only_b, want[256], got[256];

	record("tests/diff/pipeline.nfs", "a", NULL, a, sizeof(a));
	record("tests/diff/pipeline-slow.nfs", "b", NULL, b, sizeof(b));
	struct nf_diff *d = run(a, b, true);

	/* C0's stalls are a regression, C1's (the other pair) unchanged */
	const struct nf_diff_row *c0 = row(d, "stall", "queue", "C0"), *c1 = row(d, "stall", "queue", "C1");

	ck_assert_ptr_nonnull(c0);
	ck_assert_ptr_nonnull(c1);
	ck_assert_int_eq(c0->verdict, NF_DIFF_REGRESSION);
	ck_assert_int_eq(c1->verdict, NF_DIFF_NO_CHANGE);
	ck_assert_int_eq(row(d, "latency", "queue", "C0")->verdict, NF_DIFF_NO_CHANGE);
	ck_assert_int_eq(row(d, "queued_to_end", "queue", "P1")->verdict, NF_DIFF_NO_CHANGE);
	/* P0's work: 50..110us -> 60..132us, so C0's stall p50 80.3us -> 96.3us */
	ck_assert_int_eq(c0->a.stat[NF_DIFF_P50], 80300);
	ck_assert_int_eq(c0->b.stat[NF_DIFF_P50], 96300);
	ck_assert(c0->tested && c0->mw_p < 0.01 && c0->mw_z > 0);

	/* the aligned view lists exactly C0's 200 waits, each about 20% longer */
	size_t n = nf_diff_ops(d, &ops, &matched, &only_a, &only_b);
	size_t nw = c0_waits(a, want, 256);

	ck_assert_uint_eq(nw, 200);
	ck_assert_uint_eq(n, 200);
	ck_assert_int_eq(matched, 400);
	ck_assert_int_eq(only_a + only_b, 0);
	for (size_t i = 0; i < n; i++) {
		ck_assert_str_eq(ops[i].queue, "C0");
		ck_assert_int_eq(ops[i].id_a, ops[i].id_b); /* one deterministic program */
		double r = (double)ops[i].stall_b / (double)ops[i].stall_a;

		ck_assert_msg(r > 1.19 && r < 1.201, "wait %" PRId64 ": stall %" PRId64 " -> %" PRId64, ops[i].id_a,
			      ops[i].stall_a, ops[i].stall_b);
		ck_assert_int_eq(ops[i].latency_a, ops[i].latency_b);
		if (i)
			ck_assert_int_ge(ops[i - 1].stall_b - ops[i - 1].stall_a, ops[i].stall_b - ops[i].stall_a);
		got[i] = ops[i].id_a;
	}
	qsort(got, n, sizeof(*got), id_cmp);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(got[i], want[i]);
	nf_diff_destroy(d);

	/* the CI gate: exit 1, the failing clause names the queue; the other pair is within budget */
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, b, "--fail-on", "p99(stall)>+10%")), 1);
	ck_assert_msg(strstr(out, "FAIL  p99(stall)>+10%: stall queue C0: +19.9%"), "%s", out);
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, b, "--fail-on", "p99(stall, queue=C1)>+10%")), 0);
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, b, "--fail-on", "regression(queue=C0)")), 1);
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, b, "--fail-on", "p50(stall, queue=C0)>25%")), 0);
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, b, "--fail-on", "p50(stall, queue=C0)>15us")), 1);
	/* --ops in text: 200 changed, the most changed first, limited */
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, b, "--ops", "--ops-limit", "3")), 0);
	ck_assert_msg(strstr(out, "400 matched by (queue name, fence, value, occurrence), 0 only in A, 0 only in B; 200 "
				  "changed"),
		      "%s", out);
	ck_assert_msg(strstr(out, "110.3us -> 132.3us"), "%s", out);
	ck_assert_msg(strstr(out, "... 197 more"), "%s", out);
	/* --ops-min: the threshold of a change (C0's waits moved by 12us at least) */
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, b, "--ops", "--ops-min", "30us", "--json")), 0);
	ck_assert_msg(strstr(out, "\"changed\": 0"), "%s", out);
}
END_TEST

/* ---- two seeds that only jitter ------------------------------------------------------- */

START_TEST(seeds_jitter_no_significant_change)
{
	char a[1024], b[1024];
	const struct nf_diff_row *rows;
	size_t jittered = 0;

	record("tests/diff/jitter.nfs", "s1", NF_TEST_ARGV("--seed", "1"), a, sizeof(a));
	record("tests/diff/jitter.nfs", "s2", NF_TEST_ARGV("--seed", "2"), b, sizeof(b));
	struct nf_diff *d = run(a, b, false);
	size_t n = nf_diff_rows(d, &rows);

	for (size_t i = 0; i < n; i++) {
		if (!rows[i].distribution)
			continue;
		ck_assert_msg(rows[i].verdict == NF_DIFF_NOT_SIGNIFICANT || rows[i].verdict == NF_DIFF_NO_CHANGE,
			      "%s %s %s: verdict %d (p %g)", rows[i].metric, rows[i].scope, rows[i].name, rows[i].verdict,
			      rows[i].mw_p);
		jittered += rows[i].verdict == NF_DIFF_NOT_SIGNIFICANT;
	}
	/* the seed did change what was measured (else this tests nothing) */
	ck_assert_uint_ge(jittered, 4);
	ck_assert_int_ne(row(d, "anomalies", "kind", "zero_timestamp")->a.value,
			 row(d, "anomalies", "kind", "zero_timestamp")->b.value);
	nf_diff_destroy(d);
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, b, "--fail-on", "regression, p99(stall)>+10%, p50(latency)>10%")),
			 0);
}
END_TEST

/* ---- the numbers, against SQL ----------------------------------------------------------- */

/* The value at floor(level * n) of the sorted stalls of queue `name` (n from SQL). */
static int64_t sql_quantile(sqlite3 *s, const char *name, double level, int64_t *n_out)
{
	sqlite3_stmt *st;
	int64_t n = 0, v = -1;
	const char *from = "FROM deps d JOIN fence_ops f ON f.id = d.wait_id JOIN queues q ON q.queue = f.queue "
			   "WHERE q.name = ?1 AND d.stall_ns IS NOT NULL";
	char sql[512];

	snprintf(sql, sizeof(sql), "SELECT count(*) %s", from);
	ck_assert_int_eq(sqlite3_prepare_v2(s, sql, -1, &st, NULL), SQLITE_OK);
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	snprintf(sql, sizeof(sql), "SELECT d.stall_ns %s ORDER BY d.stall_ns LIMIT 1 OFFSET ?2", from);
	ck_assert_int_eq(sqlite3_prepare_v2(s, sql, -1, &st, NULL), SQLITE_OK);
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, level < 1 ? (int64_t)(level * (double)n) : n - 1);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	*n_out = n;
	return v;
}

START_TEST(numbers_equal_sql)
{
	static const char *const queues[] = { "Q0", "Q1", "Q2" };
	static const double levels[] = { 0.5, 0.9, 0.99, 1.0 };
	char a[1024], b[1024], db[4200];
	struct nf_error e;
	sqlite3 *s;

	record("tests/diff/jitter.nfs", "s1", NF_TEST_ARGV("--seed", "1"), a, sizeof(a));
	record("tests/diff/jitter.nfs", "s3", NF_TEST_ARGV("--seed", "3"), b, sizeof(b));
	struct nf_diff *d = run(a, b, false);

	nf_error_clear(&e);
	ck_assert_int_eq(nf_timeline_ensure(b, db, sizeof(db), &e), 0);
	ck_assert_int_eq(sqlite3_open_v2(db, &s, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	for (size_t q = 0; q < 3; q++) {
		const struct nf_diff_row *r = row(d, "stall", "queue", queues[q]);
		int64_t n = 0;

		if (!r) { /* Q0 only signals */
			sql_quantile(s, queues[q], 0.5, &n);
			ck_assert_int_eq(n, 0);
			continue;
		}
		for (int k = 0; k < 4; k++)
			ck_assert_int_eq(r->b.stat[k], sql_quantile(s, queues[q], levels[k], &n));
		ck_assert_int_eq(r->b.n, n);
	}
	sqlite3_close(s);
	/* busy: queue_busy's in_flight_not_stalled_ns, summed */
	ck_assert_int_eq(nft(NF_TEST_ARGV("query", "--csv", b,
					  "SELECT sum(in_flight_not_stalled_ns), sum(span_ns) FROM queue_busy")),
			 0);
	int64_t busy, span;

	ck_assert_int_eq(sscanf(strchr(out, '\n') + 1, "%" SCNd64 ",%" SCNd64, &busy, &span), 2);
	ck_assert_int_eq(row(d, "busy", "all", "")->b.value, busy);
	ck_assert_int_eq(row(d, "busy", "all", "")->b.aux, span);
	nf_diff_destroy(d);
}
END_TEST

/* ---- what one side lacks ----------------------------------------------------------------- */

static void sql_exec(const char *dir, const char *sql)
{
	char db[4200];
	sqlite3 *s;

	snprintf(db, sizeof(db), "%s/%s", dir, NF_TIMELINE_DB_NAME);
	ck_assert_int_eq(sqlite3_open(db, &s), SQLITE_OK);
	ck_assert_msg(sqlite3_exec(s, sql, NULL, NULL, NULL) == SQLITE_OK, "%s", sqlite3_errmsg(s));
	sqlite3_close(s);
}

START_TEST(lacks_said_not_invented)
{
	char a[1024], b[1024], c[1024];

	record("tests/diff/pipeline.nfs", "a", NULL, a, sizeof(a));
	record("tests/diff/pipeline.nfs", "b", NULL, b, sizeof(b));
	record("samples/stall-chain.nfs", "c", NULL, c, sizeof(c));
	/* frames (another module's table): compared only where both sides have it */
	/* (the query computes the frames: none, these sessions present nothing) */
	ck_assert_int_eq(nft(NF_TEST_ARGV("query", a, "select count(*) from frames")), 0);
	ck_assert_int_eq(nft(NF_TEST_ARGV("query", b, "select count(*) from frames")), 0);
	sql_exec(b, "CREATE TABLE IF NOT EXISTS frames (id INTEGER PRIMARY KEY, process INTEGER, interval_ns INTEGER);"
		    "INSERT INTO frames (process, interval_ns) VALUES (7, 16000000), (7, 17000000), (7, NULL)");
	struct nf_diff *d = run(a, b, false);
	const struct nf_diff_row *f = row(d, "frame", "all", "");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(f->verdict, NF_DIFF_NOT_COMPARABLE);
	ck_assert_str_eq(f->why, "A has no frames");
	ck_assert(!f->a.present || f->a.n == 0);
	ck_assert_int_eq(f->b.n, 2);
	nf_diff_destroy(d);
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, b)), 0);
	ck_assert_msg(strstr(out, "frame          not comparable: A has no frames (B: 2 samples)"), "%s", out);
	/* a budget on it cannot be checked: that fails, with the reason */
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, b, "--fail-on", "p99(frame)>+10%")), 1);
	ck_assert_msg(strstr(out, "cannot check: frame (all) cannot be compared: A has no frames"), "%s", out);
	/* both have frames: compared */
	sql_exec(a, "CREATE TABLE IF NOT EXISTS frames (id INTEGER PRIMARY KEY, process INTEGER, interval_ns INTEGER);"
		    "INSERT INTO frames (process, interval_ns) VALUES (7, 16000000), (7, 17000000)");
	d = run(a, b, false);
	ck_assert_int_eq(row(d, "frame", "process", "7")->verdict, NF_DIFF_NO_CHANGE);
	nf_diff_destroy(d);
	/* frames without the column read: said */
	sql_exec(a, "DROP TABLE frames; CREATE TABLE frames (id INTEGER PRIMARY KEY, t INTEGER)");
	d = run(a, b, false);
	ck_assert_str_eq(row(d, "frame", "all", "")->why, "A's frames table has no interval_ns column");
	nf_diff_destroy(d);

	/* two programs: the queues of each are only in it, nothing compared between them */
	d = run(a, c, false);
	const struct nf_diff_row *q = row(d, "stall", "queue", "C0");

	ck_assert_int_eq(q->verdict, NF_DIFF_NOT_COMPARABLE);
	ck_assert_str_eq(q->why, "B has no queue of that name");
	ck_assert_int_eq(row(d, "stall", "queue", "Q3")->verdict, NF_DIFF_NOT_COMPARABLE);
	ck_assert_ptr_null(row(d, "cpu_wait", "all", "")); /* neither has CPU waits: no row at all */
	nf_diff_destroy(d);
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, c)), 0);
	ck_assert_msg(strstr(out, "queue C0\n  only in A: stall 200 samples"), "%s", out);
	/* a budget on a queue one side lacks fails; on one neither has is bad usage */
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, c, "--fail-on", "p50(stall, queue=C0)>1%")), 1);
	ck_assert_msg(strstr(out, "cannot check: stall queue C0 cannot be compared: B has no queue of that name"), "%s",
		      out);
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, c, "--fail-on", "p50(stall, queue=nosuch)>1%")), 2);
	ck_assert_msg(strstr(err, "no queue named 'nosuch' in either session") && nf_test_count_lines(err) == 1, "%s",
		      err);
}
END_TEST

/* ---- hang findings that appear ---------------------------------------------------------- */

START_TEST(findings_appear)
{
	char a[1024], b[1024];

	record("samples/stall-chain.nfs", "a", NULL, a, sizeof(a));
	record("samples/deadlock-two-queues.nfs", "b", NULL, b, sizeof(b));
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, b, "--fail-on", "findings(kind=deadlock)>0", "--json")), 1);
	ck_assert_msg(strstr(out, "\"appeared\": [\"deadlock: queue QA waits fence 0x"), "%s", out);
	ck_assert_msg(strstr(out, "\"clause\": \"findings(kind=deadlock)>0\", \"failed\": true"), "%s", out);
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", b, a, "--fail-on", "findings>0")), 0); /* it disappeared */
	ck_assert_msg(strstr(out, "disappeared: deadlock: queue QA"), "%s", out);
}
END_TEST

/* ---- the budget language ------------------------------------------------------------------ */

START_TEST(gate_errors_name_the_column)
{
	static const struct {
		const char *expr, *want;
	} bad[] = {
		{ "p99(stal)>+10%", "column 5: expected a measured metric" },
		{ "p99(stall)", "column 11: expected a comparison" },
		{ "p99(stall)>", "column 12: expected a threshold" },
		{ "p99(stall)>10xs", "column 14: unknown unit 'xs'" },
		{ "stall>10%", "column 1: 'stall' is measured per item: write p50(stall)" },
		{ "p99(stall, ring=gfx)>1%", "column 12: stall has no ring scope" },
		{ "lost>1ms", "column 7: 'ms' counts: a time unit makes no sense here" },
		{ "p99(stall)>+10% p50(stall)>1%", "column 17: expected ',' or the end" },
		{ "p99(stall, queue='Q1)>1%", "column 18: a quoted name is not closed" },
		{ "", "column 1: expected p50(...)" },
		{ "p99(stall)>1e3", "column 13: unknown unit 'e3'" },
		{ "busy(queue=)>0", "column 12: expected a name" },
		{ "p99 stall)>1%", "column 5: expected '('" },
	};
	struct nf_diff_gate *g = NULL;
	struct nf_error e;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		nf_error_clear(&e);
		ck_assert_msg(nf_diff_gate_parse(bad[i].expr, &g, &e) == NF_EINVAL, "'%s' was accepted", bad[i].expr);
		ck_assert_msg(strstr(e.msg, bad[i].want), "'%s': %s (want %s)", bad[i].expr, e.msg, bad[i].want);
		ck_assert_ptr_null(g);
	}
	nf_error_clear(&e);
	ck_assert_int_eq(nf_diff_gate_parse("p99(stall)>+10%, p50(latency, queue=Q1)>=2us, lost>0, "
					    "findings(kind=deadlock)>0, regression(queue=\"C 0\"), "
					    "count(job, ring='amdgpu gfx')<-5%, max(cpu_wait, all)<=1.5ms, busy(queue=Q-1.a)>3",
					    &g, &e),
			 0);
	nf_diff_gate_destroy(g);

	/* the CLI: exit 2, one line naming the expression and the column */
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", "x", "y", "--fail-on", "p99(stal)>+10%")), 2);
	ck_assert_msg(strstr(err, "nftrace diff: --fail-on 'p99(stal)>+10%': column 5: expected a measured metric"),
		      "%s", err);
	ck_assert_int_eq(nf_test_count_lines(err), 1);
}
END_TEST

/* ---- bad usage ------------------------------------------------------------------------------- */

START_TEST(bad_usage_exit_2)
{
	char a[1024], missing[1100];

	record("tests/diff/pipeline.nfs", "a", NULL, a, sizeof(a));
	snprintf(missing, sizeof(missing), "%s/nosuch", tmp);
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff")), 2);
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a)), 2);
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, a, a)), 2);
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, a, "--bogus")), 2);
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, a, "--json", "--csv")), 2);
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, a, "--fail-on")), 2);
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, a, "--alpha", "0.7")), 2);
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, a, "--min-effect", "five")), 2);
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, a, "--ops-min", "-3us")), 2);
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, a, "-o", "x.svg")), 2);
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, a, "--width", "10")), 2);
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, a, "--from", "2ms", "--to", "1ms")), 2);
	ck_assert_msg(nf_test_count_lines(err) == 1, "%s", err);
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", "--help")), 0);
	ck_assert_msg(strstr(out, "usage: nftrace diff A B"), "%s", out);
	/* a session that is not there: the work failed (1), one line naming it */
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, missing)), 1);
	ck_assert_msg(strstr(err, missing) && nf_test_count_lines(err) == 1, "%s", err);
	ck_assert_str_eq(out, "");
}
END_TEST

/* ---- hostile names ------------------------------------------------------------------------------ */

START_TEST(hostile_names_escaped)
{
	char a[1024], b[1024], prog[4200], csv[1200];
	const char *bin = getenv("NF_BINARY_DIR");

	snprintf(prog, sizeof(prog), "%s/tests/diff/nf_diff_hostile", bin ? bin : ".");
	snprintf(a, sizeof(a), "%s/a", tmp);
	snprintf(b, sizeof(b), "%s/b", tmp);
	ck_assert_msg(nft(NF_TEST_ARGV("record", "-o", a, "--", prog)) == 0, "%s", err);
	ck_assert_msg(nft(NF_TEST_ARGV("record", "-o", b, "--", prog, "slow")) == 0, "%s", err);

	/* text: no control byte reaches the terminal, each name on one line */
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, b, "--ops", "--fail-on", "regression")), 1);
	for (const unsigned char *p = (const unsigned char *)out; *p; p++)
		ck_assert_msg(*p >= 0x20 ? *p != 0x7f : *p == '\n', "control byte 0x%02x in the text output", *p);
	ck_assert_msg(!strstr(out, "\xc2\x9b"), "a C1 control in the text output");
	ck_assert_msg(strstr(out, "queue esc?[31mred?[0m"), "%s", out);
	ck_assert_msg(strstr(out, "queue nl?line2,comma\"quote"), "%s", out);

	/* JSON: valid, and the names come back as they were */
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, b, "--json", "--ops")), 0);
	ck_assert_msg(nf_test_json_tool(out, NULL, 0, err, sizeof(err)) == 0, "invalid JSON: %s", err);
	ck_assert_msg(strstr(out, "\"name\": \"esc\\u001b[31mred\\u001b[0m\""), "%s", out);
	ck_assert_msg(strstr(out, "\"name\": \"nl\\nline2,comma\\\"quote\"") ||
			      strstr(out, "\"name\": \"nl\\u000aline2,comma\\\"quote\""),
		      "%s", out);
	ck_assert_msg(strstr(out, "\"name\": \"c1\\u009b31m\""), "%s", out);
	ck_assert_msg(strstr(out, "\"name\": \"bad\\ufffd utf8 \\\\ back\""), "%s", out);

	/* CSV: every record on one line with 12 fields (Python's reader), names cleaned
	 * and no formula */
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, b, "--csv", "--ops")), 0);
	snprintf(csv, sizeof(csv), "%s/out.csv", tmp);
	FILE *f = fopen(csv, "w");

	ck_assert_ptr_nonnull(f);
	fputs(out, f);
	fclose(f);
	ck_assert_msg(nf_test_exec(NULL,
				   NF_TEST_ARGV("python3", "-c",
						"import csv,sys\n"
						"rows=list(csv.reader(open(sys.argv[1], newline='')))\n"
						"assert all(len(r)==12 for r in rows), [r for r in rows if len(r)!=12][:2]\n"
						"assert len(rows)==open(sys.argv[1]).read().count('\\n'), 'a record spans lines'\n"
						"names={r[3] for r in rows}\n"
						"assert 'nl?line2,comma\"quote' in names, names\n"
						"assert '\\'=HYPERLINK(\"http://x\")' in names, names\n"
						"assert not any(n[:1] in '=+-@' and n for n in names), names\n",
						csv),
				   NULL, 0, err, sizeof(err)) == 0,
		      "%s", err);
}
END_TEST

/* ---- the picture ---------------------------------------------------------------------------------- */

START_TEST(picture_two_timelines)
{
	char a[1024], b[1024], png[1200];
	unsigned char head[24];

	record("tests/diff/pipeline.nfs", "a", NULL, a, sizeof(a));
	record("tests/diff/pipeline-slow.nfs", "b", NULL, b, sizeof(b));
	snprintf(png, sizeof(png), "%s/d.png", tmp);
	ck_assert_msg(nft(NF_TEST_ARGV("diff", a, b, "-o", png, "--from", "5.9ms", "--to", "7.3ms", "--width", "1200")) == 0,
		      "%s", err);
	FILE *f = fopen(png, "rb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fread(head, 1, sizeof(head), f), sizeof(head));
	fclose(f);
	ck_assert(!memcmp(head, "\x89PNG\r\n\x1a\n", 8));
	uint32_t w = (uint32_t)head[16] << 24 | (uint32_t)head[17] << 16 | (uint32_t)head[18] << 8 | head[19];
	uint32_t h = (uint32_t)head[20] << 24 | (uint32_t)head[21] << 16 | (uint32_t)head[22] << 8 | head[23];

	ck_assert_uint_eq(w, 1200);
	ck_assert_uint_gt(h, 800); /* two timelines, one above the other */
	/* a failed picture leaves the previous file as it was */
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, b, "-o", png, "--from", "500ms")), 1);
	f = fopen(png, "rb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fread(head, 1, sizeof(head), f), sizeof(head));
	fclose(f);
	ck_assert_uint_eq((uint32_t)head[16] << 24 | (uint32_t)head[17] << 16 | (uint32_t)head[18] << 8 | head[19], 1200);
}
END_TEST


/* ---- the hang check spared only where it cannot find anything ------------------------ */

/* Reads dir with the diff's reader and runs the hang check itself: where the reader says
 * nothing can be found (may_hang false), the check finds nothing. 1 when it may hang. */
static int may_hang_agrees(const char *dir)
{
	struct dd_session s;
	struct nf_analysis *a = NULL;
	struct nf_hang_report rep = { 0 };
	struct nf_error e;
	size_t findings = 0;

	memset(&s, 0, sizeof(s));
	s.dir = dir;
	nf_error_clear(&e);
	ck_assert_msg(nf_timeline_ensure(dir, s.db, sizeof(s.db), &e) == 0, "%s", e.msg);
	ck_assert_msg(dd_session_read(&s, &e) == 0, "%s: %s", dir, e.msg);
	ck_assert_msg(nf_analysis_load_open(s.db, &a, &e) == 0 && nf_analysis_hangs(a, &rep, &e) == 0, "%s: %s", dir,
		      e.msg);
	for (size_t i = 0; i < rep.n; i++)
		findings += rep.f[i].kind != NF_HANG_PENDING;
	ck_assert_msg(s.may_hang || !findings, "%s: %zu findings, but the reader would skip the check", dir, findings);
	int r = s.may_hang;

	nf_hang_report_free(&rep);
	nf_analysis_destroy(a);
	dd_session_free(&s);
	return r;
}

START_TEST(hang_check_spared_only_when_empty)
{
	static const char *const scenarios[] = {
		"samples/clock-drift.nfs", "samples/critical-path-chain.nfs", "samples/cross-adapter-scenario-1.nfs",
		"samples/cross-adapter-scenario-2a.nfs", "samples/cross-adapter-scenario-2b.nfs",
		"samples/deadlock-three-queues.nfs", "samples/deadlock-two-queues.nfs", "samples/hang-never-signaled.nfs",
		"samples/lda-zero-timestamps.nfs", "samples/legacy-monitored-fence.nfs", "samples/log-buffer-example.nfs",
		"samples/log-recreated.nfs", "samples/monitored-value-41.nfs", "samples/optimized-interrupt.nfs",
		"samples/overrun.nfs", "samples/process-a-b-sharing.nfs", "samples/repeated-timestamps.nfs",
		"samples/stall-chain.nfs", "samples/wraparound-32bit.nfs", "tests/diff/pipeline.nfs",
		"tests/diff/jitter.nfs",
	};
	static const char *const captures[] = { "samples/kernel/dma-fence.dat", "samples/kernel/drm-sched.dat",
						"samples/kernel/i915.dat" };
	char dir[1024], src[4096];
	int spared = 0, checked = 0;

	for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
		char name[32];

		snprintf(name, sizeof(name), "s%zu", i);
		record(scenarios[i], name, NULL, dir, sizeof(dir));
		int h = may_hang_agrees(dir);

		if (strstr(scenarios[i], "deadlock") || strstr(scenarios[i], "hang-"))
			ck_assert_msg(h, "%s: a hang sample whose check would be skipped", scenarios[i]);
		spared += !h;
		checked++;
	}
	for (size_t i = 0; i < sizeof(captures) / sizeof(captures[0]); i++) {
		snprintf(dir, sizeof(dir), "%s/k%zu", tmp, i);
		nf_test_source_path(src, sizeof(src), captures[i]);
		ck_assert_msg(nft(NF_TEST_ARGV("import", src, "-o", dir)) == 0, "%s", err);
		may_hang_agrees(dir);
		checked++;
	}
	/* the fast path is taken where it should be (the pipeline, the stall chain) */
	ck_assert_int_ge(spared, 2);
	ck_assert_int_lt(spared, checked);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("diff");
	TCase *tc = tcase_create("diff");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, stats_by_hand);
	tcase_add_test(tc, same_seed_no_change);
	tcase_add_test(tc, slower_queue_caught);
	tcase_add_test(tc, seeds_jitter_no_significant_change);
	tcase_add_test(tc, numbers_equal_sql);
	tcase_add_test(tc, lacks_said_not_invented);
	tcase_add_test(tc, findings_appear);
	tcase_add_test(tc, gate_errors_name_the_column);
	tcase_add_test(tc, bad_usage_exit_2);
	tcase_add_test(tc, hostile_names_escaped);
	tcase_add_test(tc, picture_two_timelines);
	tcase_add_test(tc, hang_check_spared_only_when_empty);
	suite_add_tcase(s, tc);
	return nf_test_main(s);
}
