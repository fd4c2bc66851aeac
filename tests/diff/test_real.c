/*
 * `nftrace diff` on the real captures of ../shared/real-traces (skipped, exit
 * 77, when absent): the two gpuvis amdgpu captures against each other (their
 * jobs compared ring by ring, the numbers equal SQL's; what they lack, such
 * as queued times of their fences, never turned into a value), the Windows
 * ETL against itself (no change, every wait aligned), and a kernel capture
 * against the ETL (nothing in common: said, not compared).
 */
#include "nf_test.h"

#include "contract/diff.h"
#include "contract/session.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <sys/stat.h>

static char tmp[512], traces[4200];
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

static void import(const char *file, const char *name, char *dir, size_t len)
{
	char path[4400];

	snprintf(path, sizeof(path), "%s/%s", traces, file);
	snprintf(dir, len, "%s/%s", tmp, name);
	ck_assert_msg(nft(NF_TEST_ARGV("import", path, "-o", dir)) == 0, "import %s: %s", file, err);
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

static sqlite3 *open_db(const char *dir)
{
	char db[4200];
	struct nf_error e;
	sqlite3 *s;

	nf_error_clear(&e);
	ck_assert_msg(nf_timeline_ensure(dir, db, sizeof(db), &e) == 0, "%s", e.msg);
	ck_assert_int_eq(sqlite3_open_v2(db, &s, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	return s;
}

static int64_t sql_int(sqlite3 *s, const char *sql, const char *arg, int64_t arg2)
{
	sqlite3_stmt *st;
	int64_t v = -1;

	ck_assert_msg(sqlite3_prepare_v2(s, sql, -1, &st, NULL) == SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(s));
	if (arg)
		sqlite3_bind_text(st, 1, arg, -1, SQLITE_STATIC);
	if (sqlite3_bind_parameter_count(st) > 1)
		sqlite3_bind_int64(st, 2, arg2);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_type(st, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* Every series the diff reports on one side equals SQL over that side's timeline. */
static void check_side(const struct nf_diff *d, int k, const char *dir)
{
	static const char jobs[] = "FROM jobs WHERE driver || ' ' || coalesce(ring, '?') = ?1 AND started_ns IS NOT "
				   "NULL AND finished_ns IS NOT NULL AND finish_source IN ('event', 'signaled')";
	static const char q2e[] = "FROM fence_ops f JOIN queues q ON q.queue = f.queue WHERE q.name = ?1 AND "
				  "f.queued_ns IS NOT NULL AND f.end_ns IS NOT NULL AND f.status <> 'aborted'";
	const struct nf_diff_row *rows;
	size_t n = nf_diff_rows(d, &rows), checked = 0;
	sqlite3 *s = open_db(dir);
	char sql[600];

	for (size_t i = 0; i < n; i++) {
		const struct nf_diff_row *r = &rows[i];
		const struct nf_diff_side *x = k ? &r->b : &r->a;

		/* nothing compared is made of nothing */
		if (r->verdict != NF_DIFF_NOT_COMPARABLE && r->distribution)
			ck_assert_msg(r->a.n > 0 && r->b.n > 0, "%s %s: compared without samples", r->metric, r->name);
		if (!x->present || !r->distribution || !strcmp(r->scope, "all"))
			continue;
		if (!strcmp(r->metric, "job")) {
			snprintf(sql, sizeof(sql), "SELECT count(*) %s", jobs);
			ck_assert_int_eq(x->n, sql_int(s, sql, r->name, 0));
			snprintf(sql, sizeof(sql), "SELECT finished_ns - started_ns %s ORDER BY 1 LIMIT 1 OFFSET ?2", jobs);
			if (x->n)
				ck_assert_int_eq(x->stat[NF_DIFF_P50], sql_int(s, sql, r->name, x->n / 2));
			checked++;
		} else if (!strcmp(r->metric, "queued_to_end")) {
			snprintf(sql, sizeof(sql), "SELECT count(*) %s", q2e);
			ck_assert_int_eq(x->n, sql_int(s, sql, r->name, 0));
			checked++;
		}
	}
	/* a queue whose operations lack a time has no busy value (not 0) */
	const struct nf_diff_row *b = NULL;

	for (size_t i = 0; i < n; i++)
		if (!strcmp(rows[i].metric, "busy") && !strcmp(rows[i].scope, "all"))
			b = &rows[i];
	if (sql_int(s, "SELECT count(*) FROM fence_ops WHERE queue IS NOT NULL AND queued_ns IS NOT NULL AND end_ns IS "
		       "NOT NULL", NULL, 0) == 0)
		ck_assert_msg(!b || !(k ? b->b.present : b->a.present), "busy given for a session without the times");
	sqlite3_close(s);
	ck_assert_uint_gt(checked, 0);
}

START_TEST(amdgpu_captures)
{
	char a[1024], b[1024];

	import("gpuvis-amdgpu-2017.dat", "amd17", a, sizeof(a));
	import("gpuvis-amdgpu.dat", "amd", b, sizeof(b));
	struct nf_diff *d = run(a, b, false);
	const struct nf_diff_row *rows;
	size_t n = nf_diff_rows(d, &rows);
	bool gfx = false;

	for (size_t i = 0; i < n; i++)
		if (!strcmp(rows[i].metric, "job") && !strcmp(rows[i].scope, "ring") && !strcmp(rows[i].name, "amdgpu gfx")) {
			gfx = true;
			ck_assert(rows[i].tested);
			ck_assert_int_gt(rows[i].a.n, 1000);
			ck_assert_int_gt(rows[i].b.n, 500);
		}
	ck_assert_msg(gfx, "no job series for the amdgpu gfx ring");
	check_side(d, 0, a);
	check_side(d, 1, b);
	nf_diff_destroy(d);
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, b)), 0);
	const char *ring = strstr(out, "\nring amdgpu gfx\n");

	ck_assert_msg(ring && strstr(ring, "\n  job            A "), "%s", out);
	ck_assert_msg(strstr(out, "critical path of the last operation\n  A  job "), "%s", out);
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", a, b, "--json")), 0);
	ck_assert_int_eq(nf_test_json_tool(out, NULL, 0, err, sizeof(err)), 0);
}
END_TEST

START_TEST(etl_against_itself)
{
	char w[1024];
	const struct nf_diff_row *rows;
	const struct nf_diff_op *ops;
	int64_t matched, only_a, only_b;

	import("gpuvis-windows.etl", "w", w, sizeof(w));
	struct nf_diff *d = run(w, w, true);
	size_t n = nf_diff_rows(d, &rows);

	ck_assert_uint_gt(n, 20);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(rows[i].verdict == NF_DIFF_NO_CHANGE, "%s %s: %d", rows[i].metric, rows[i].name,
			      rows[i].verdict);
	ck_assert_uint_eq(nf_diff_ops(d, &ops, &matched, &only_a, &only_b), 0);
	sqlite3 *s = open_db(w);

	ck_assert_int_eq(matched, sql_int(s, "SELECT count(*) FROM fence_ops WHERE op = 'wait' AND queue IS NOT NULL",
					  NULL, 0));
	/* busy: the view's in_flight_not_stalled_ns, summed (the diff computes it as the
	 * operations stream, or asks the view when a queue's come out of its order) */
	for (size_t i = 0; i < n; i++)
		if (!strcmp(rows[i].metric, "busy") && !strcmp(rows[i].scope, "all")) {
			ck_assert_int_eq(rows[i].a.value,
					 sql_int(s, "SELECT sum(in_flight_not_stalled_ns) FROM queue_busy", NULL, 0));
			ck_assert_int_eq(rows[i].a.aux, sql_int(s, "SELECT sum(span_ns) FROM queue_busy", NULL, 0));
			ck_assert_int_gt(rows[i].a.value, 0);
		}
	sqlite3_close(s);
	ck_assert_int_gt(matched, 1000);
	check_side(d, 0, w);
	nf_diff_destroy(d);
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", w, w, "--fail-on", "regression, p99(stall)>+1%, p99(latency)>0")), 0);
}
END_TEST

START_TEST(kernel_against_etl)
{
	char k[1024], w[1024];

	import("gpuvis-amdgpu.dat", "amd", k, sizeof(k));
	import("gpuvis-windows.etl", "w", w, sizeof(w));
	struct nf_diff *d = run(k, w, false);
	const struct nf_diff_row *rows;
	size_t n = nf_diff_rows(d, &rows);

	for (size_t i = 0; i < n; i++) {
		const struct nf_diff_row *r = &rows[i];

		if (!strcmp(r->scope, "all"))
			continue;
		/* no queue, ring or thread is in both: each is said to be in one only */
		if (strcmp(r->scope, "kind"))
			ck_assert_msg(r->verdict == NF_DIFF_NOT_COMPARABLE, "%s %s %s compared", r->metric, r->scope,
				      r->name);
		if (!strcmp(r->metric, "job")) {
			ck_assert_str_eq(r->why, "B has no jobs");
			ck_assert_int_gt(r->a.n, 0);
		}
	}
	nf_diff_destroy(d);
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", k, w)), 0);
	ck_assert_msg(strstr(out, "job            not comparable: B has no jobs"), "%s", out);
	/* a budget on the jobs cannot be checked */
	ck_assert_int_eq(nft(NF_TEST_ARGV("diff", k, w, "--fail-on", "p99(job)>+10%")), 1);
}
END_TEST

int main(void)
{
	struct stat sb;
	const char *src = getenv("NF_SOURCE_DIR");

	snprintf(traces, sizeof(traces), "%s/../shared/real-traces", src ? src : ".");
	if (stat(traces, &sb) != 0) {
		printf("SKIP: %s is absent (real captures are not part of the repository)\n", traces);
		return 77;
	}
	Suite *s = suite_create("diff_real");
	TCase *tc = tcase_create("real");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, amdgpu_captures);
	tcase_add_test(tc, etl_against_itself);
	tcase_add_test(tc, kernel_against_etl);
	suite_add_tcase(s, tc);
	return nf_test_main(s);
}
