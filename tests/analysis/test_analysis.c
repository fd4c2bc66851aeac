/*
 * Tests of the analysis module (include/contract/analysis.h) and of the
 * commands built on it (critical-path, check's hangs, query's stall_blame).
 * The samples' answers are computed by hand from the engine's costs (see the
 * comment at the top of each samples/ scenario) and written here; the generic
 * properties (segments tile the latency, blame adds up to the stall) are
 * checked on every bundled sample and kernel fixture, which must also give no
 * hang finding.
 */
#include "nf_test.h"

#include "contract/analysis.h"
#include "contract/render.h"
#include "contract/session.h"

#include "layout.h"           /* the viewer's layout: where a row and a time land */
#include "viewer/nf_image.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdbool.h>

static char tmp[512];
static char out[1 << 16], err[1 << 14];

/* Runs nftrace with args (no shell), its output in out and err: the exit status. */
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

/* Records samples/NAME.nfs into tmp/NAME and returns the session path in dir. */
static void record(const char *name, char *dir, size_t len)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "samples/%s.nfs", name);
	snprintf(dir, len, "%s/%s", tmp, name);
	nf_test_record(rel, dir, NULL);
}

static struct nf_analysis *load(const char *dir)
{
	struct nf_analysis *a = NULL;
	struct nf_error e;
	char db[4200];

	nf_error_clear(&e);
	ck_assert_msg(nf_timeline_ensure(dir, db, sizeof(db), &e) == 0, "%s", e.msg);
	ck_assert_msg(nf_analysis_load(db, &a, &e) == 0, "%s", e.msg);
	return a;
}

static int64_t queue_of(const struct nf_analysis *a, const char *name)
{
	struct nf_error e;
	int64_t q = -1;

	ck_assert_msg(nf_analysis_find_queue(a, name, &q, &e) == 0, "%s", e.msg);
	return q;
}

/* The generic contract: segments tile [queued, end] in time order. */
static void check_tiles(const struct nf_cp_path *p)
{
	int64_t t = p->queued_ns, sum = 0;

	for (size_t i = 0; i < p->n; i++) {
		ck_assert_int_eq(p->segs[i].start_ns, t);
		ck_assert_int_lt(p->segs[i].start_ns, p->segs[i].end_ns);
		sum += p->segs[i].end_ns - p->segs[i].start_ns;
		t = p->segs[i].end_ns;
	}
	ck_assert_int_eq(t, p->end_ns);
	ck_assert_int_eq(sum, p->end_ns - p->queued_ns);
}

struct want_seg {
	enum nf_seg_kind kind;
	const char *queue;   /* queue name, NULL: a thread */
	int64_t thread, op, start, end;
};

/* ---- the hand-computed samples ------------------------------------------------- */

START_TEST(chain_three_queues_two_adapters_cpu_thread)
{
	/* samples/critical-path-chain.nfs: times in its header comment */
	static const struct want_seg want[] = {
		{ NF_SEG_EXECUTE, "D1", -1, 3, 10000, 130200 },
		{ NF_SEG_WAIT, NULL, 2, -1, 130200, 135200 },
		{ NF_SEG_EXECUTE, "I1", -1, 4, 135200, 205400 },
		{ NF_SEG_WAIT, "D2", -1, 1, 205400, 210500 },
		{ NF_SEG_EXECUTE, "D2", -1, 2, 210500, 210700 },
	};
	struct nf_cp_path p;
	struct nf_error e;
	char dir[1024];
	int64_t op;

	record("critical-path-chain", dir, sizeof(dir));
	struct nf_analysis *a = load(dir);
	ck_assert_int_eq(nf_analysis_target(a, NF_CP_LAST, 0, &op, &e), 0);
	ck_assert_int_eq(op, 2);
	ck_assert_int_eq(nf_analysis_critical_path(a, op, &p, &e), 0);
	ck_assert_int_eq(p.queued_ns, 10000);
	ck_assert_int_eq(p.end_ns, 210700);
	ck_assert_uint_eq(p.n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < p.n; i++) {
		const struct nf_cp_segment *s = &p.segs[i];

		ck_assert_msg(s->kind == want[i].kind, "segment %zu kind %d", i, s->kind);
		ck_assert_int_eq(s->on_thread, want[i].queue == NULL);
		if (want[i].queue)
			ck_assert_int_eq(s->queue, queue_of(a, want[i].queue));
		else
			ck_assert_int_eq(s->thread, want[i].thread);
		if (want[i].op >= 0)
			ck_assert_int_eq(s->op_id, want[i].op);
		ck_assert_int_eq(s->start_ns, want[i].start);
		ck_assert_int_eq(s->end_ns, want[i].end);
	}
	/* the thread's wait is on fence A for 1, released by D1's op 3; D2's by I1's op 4 */
	ck_assert_int_eq(p.segs[1].value, 1);
	ck_assert_int_eq(p.segs[1].release_op, 3);
	ck_assert_int_eq(p.segs[3].release_op, 4);
	check_tiles(&p);
	nf_cp_path_free(&p);

	/* --at and --queue choose the same way */
	ck_assert_int_eq(nf_analysis_target(a, NF_CP_AT, 210600, &op, &e), 0);
	ck_assert_int_eq(op, 1);
	ck_assert_int_eq(nf_analysis_target(a, NF_CP_QUEUE, queue_of(a, "D1"), &op, &e), 0);
	ck_assert_int_eq(op, 3);
	ck_assert_int_eq(nf_analysis_target(a, NF_CP_OP, 99, &op, &e), NF_ENOENT);

	/* stall blame of D2's wait [30us, 210.5us]: I1 direct (its 70.2us and D2's 5.1us
	 * after the signal), D1 100.2us and thread 2 5us through the chain */
	struct nf_blame_row *rows;
	size_t n;
	int64_t d1 = queue_of(a, "D1"), d2 = queue_of(a, "D2"), i1 = queue_of(a, "I1");
	int seen = 0;

	ck_assert_int_eq(nf_analysis_stall_blame(a, &rows, &n, &e), 0);
	ck_assert_uint_eq(n, 3);
	for (size_t i = 0; i < n; i++) {
		ck_assert_int_eq(rows[i].queue, d2);
		ck_assert_int_eq(rows[i].waits, 1);
		/* through X (op 1's fence) for I1 and thread 2, through A (op 3's) for D1 */
		struct nf_op_info w1, s3;
		ck_assert_int_eq(nf_analysis_op(a, 1, &w1), 0);
		ck_assert_int_eq(nf_analysis_op(a, 3, &s3), 0);
		if (rows[i].by_queue == i1) {
			ck_assert_int_eq(rows[i].direct_ns, 75300);
			ck_assert_int_eq(rows[i].chain_ns, 0);
			ck_assert_int_eq(rows[i].by_fence, w1.fence);
			seen |= 1;
		} else if (rows[i].by_queue == d1) {
			ck_assert_int_eq(rows[i].direct_ns, 0);
			ck_assert_int_eq(rows[i].chain_ns, 100200);
			ck_assert_int_eq(rows[i].by_fence, s3.fence);
			seen |= 2;
		} else {
			ck_assert_int_eq(rows[i].by_queue, -1);
			ck_assert_int_eq(rows[i].by_thread, 2);
			ck_assert_int_eq(rows[i].chain_ns, 5000);
			ck_assert_int_eq(rows[i].by_fence, w1.fence);
			seen |= 4;
		}
	}
	ck_assert_int_eq(seen, 7);
	free(rows);

	struct nf_hang_report h;
	ck_assert_int_eq(nf_analysis_hangs(a, &h, &e), 0);
	ck_assert_uint_eq(h.n, 0);
	nf_hang_report_free(&h);
	nf_analysis_destroy(a);

	/* the CLI: text adds up, JSON parses */
	ck_assert_int_eq(nft(NF_TEST_ARGV("critical-path", dir)), 0);
	ck_assert_ptr_nonnull(strstr(out, "latency 200700 ns in 5 segments"));
	ck_assert_ptr_nonnull(strstr(out, "thread 2"));
	ck_assert_int_eq(nf_test_sh("\"$NF\" critical-path \"$1\" --queue I1 --json | python3 -c 'import json,sys; d=json.load(sys.stdin); "
		"print(d[\"op\"], sum(s[\"duration_ns\"] for s in d[\"segments\"]), d[\"latency_ns\"])'", NF_TEST_ARGV(dir), out, sizeof(out), err, sizeof(err)), 0);
	ck_assert_str_eq(out, "4 70200 70200\n");
}
END_TEST

START_TEST(stall_chain_blame)
{
	/* samples/stall-chain.nfs: Q3 waits on Q2, which waits on Q1 */
	struct nf_blame_row *rows;
	struct nf_error e;
	char dir[1024];
	size_t n;

	record("stall-chain", dir, sizeof(dir));
	struct nf_analysis *a = load(dir);
	int64_t q1 = queue_of(a, "Q1"), q2 = queue_of(a, "Q2"), q3 = queue_of(a, "Q3");

	ck_assert_int_eq(nf_analysis_stall_blame(a, &rows, &n, &e), 0);
	ck_assert_uint_eq(n, 3);
	for (size_t i = 0; i < n; i++) {
		const struct nf_blame_row *r = &rows[i];

		if (r->queue == q2) {
			ck_assert_int_eq(r->by_queue, q1);
			ck_assert_int_eq(r->direct_ns, 100300);
			ck_assert_int_eq(r->chain_ns, 0);
		} else {
			ck_assert_int_eq(r->queue, q3);
			if (r->by_queue == q2) {
				ck_assert_int_eq(r->direct_ns, 30400);
				ck_assert_int_eq(r->chain_ns, 0);
			} else {
				ck_assert_int_eq(r->by_queue, q1);
				ck_assert_int_eq(r->direct_ns, 0);
				ck_assert_int_eq(r->chain_ns, 100200);
			}
		}
	}
	free(rows);
	nf_analysis_destroy(a);

	/* the same through the stall_blame table, as the issue asks it */
	ck_assert_int_eq(nft(NF_TEST_ARGV("query", dir, "--csv",
			 "select q.name, b.name, s.by_fence = (select fence from fence_ops where id = 4), "
			 "s.direct_ns, s.chain_ns, s.stall_ns, s.waits "
			 "from stall_blame s join queues q on q.queue = s.queue join queues b on b.queue = s.by_queue "
			 "order by stall_ns desc limit 10")), 0);
	/* Q1 held both up through F1 (op 4's fence); Q2 held Q3 up through F2 */
	ck_assert_str_eq(out, "name,name,s.by_fence = (select fence from fence_ops where id = 4),direct_ns,chain_ns,stall_ns,waits\n"
			      "Q2,Q1,1,100300,0,100300,1\n"
			      "Q3,Q1,1,0,100200,100200,1\n"
			      "Q3,Q2,0,30400,0,30400,1\n");
	/* a stall_blame of another analysis version (an older nftrace) is computed again */
	{
		char db[1400];
		sqlite3 *sdb;

		snprintf(db, sizeof(db), "%s/.timeline.db", dir);
		ck_assert_int_eq(sqlite3_open(db, &sdb), SQLITE_OK);
		ck_assert_int_eq(sqlite3_exec(sdb, "UPDATE meta SET value = '1' WHERE key = 'analysis_version';"
					      "DELETE FROM stall_blame", NULL, NULL, NULL), SQLITE_OK);
		sqlite3_close(sdb);
		ck_assert_int_eq(nft(NF_TEST_ARGV("query", dir, "--csv",
				 "select count(*) from stall_blame")), 0);
		ck_assert_str_eq(out, "count(*)\n3\n");
	}
	/* per waiting queue the rows add up to its waits' stall in deps */
	ck_assert_int_eq(nft(NF_TEST_ARGV("query", dir, "--csv",
			 "select (select sum(stall_ns) from stall_blame) = "
			 "(select sum(stall_ns) from deps where stall_ns > 0)")), 0);
	ck_assert_ptr_nonnull(strstr(out, "\n1\n"));
}
END_TEST

/* The hang check on a model of open operations (what check uses) finds the same as
 * on the loaded model. */
static void same_hangs(const char *db, const struct nf_analysis *full)
{
	struct nf_analysis *op = NULL;
	struct nf_hang_report h1, h2;
	struct nf_error e;

	nf_error_clear(&e);
	ck_assert_msg(nf_analysis_load_open(db, &op, &e) == 0, "%s", e.msg);
	ck_assert_int_eq(nf_analysis_hangs(full, &h1, &e), 0);
	ck_assert_int_eq(nf_analysis_hangs(op, &h2, &e), 0);
	ck_assert_uint_eq(h1.n, h2.n);
	for (size_t i = 0; i < h1.n; i++) {
		ck_assert_int_eq(h1.f[i].kind, h2.f[i].kind);
		ck_assert_int_eq(h1.f[i].wait.op_id, h2.f[i].wait.op_id);
		ck_assert_int_eq(h1.f[i].wait.cpu_wait, h2.f[i].wait.cpu_wait);
		ck_assert_uint_eq(h1.f[i].n_edges, h2.f[i].n_edges);
		for (size_t k = 0; k < h1.f[i].n_edges; k++) {
			ck_assert_int_eq(h1.f[i].edges[k].signal_op, h2.f[i].edges[k].signal_op);
			ck_assert_int_eq(h1.f[i].edges[k].to.op_id, h2.f[i].edges[k].to.op_id);
		}
		ck_assert_int_eq(h1.f[i].op_id, h2.f[i].op_id);
		ck_assert_int_eq(h1.f[i].value, h2.f[i].value);
		ck_assert_int_eq(h1.f[i].prev_op, h2.f[i].prev_op);
	}
	nf_hang_report_free(&h1);
	nf_hang_report_free(&h2);
	/* it answers the hang check only */
	struct nf_blame_row *rows;
	size_t n;
	int64_t t;
	ck_assert_int_eq(nf_analysis_stall_blame(op, &rows, &n, &e), NF_ESTATE);
	ck_assert_int_eq(nf_analysis_target(op, NF_CP_LAST, 0, &t, &e), NF_ESTATE);
	nf_analysis_destroy(op);
}

static void same_hangs_dir(const char *dir, const struct nf_analysis *full)
{
	char db[1400];

	snprintf(db, sizeof(db), "%s/.timeline.db", dir);
	same_hangs(db, full);
}

/* Edge from op `from` through signal op `sig` to the blocking wait op `to`. */
static bool has_edge(const struct nf_hang_finding *f, int64_t from, int64_t sig, int64_t to)
{
	for (size_t k = 0; k < f->n_edges; k++)
		if (f->edges[k].from.op_id == from && f->edges[k].signal_op == sig &&
		    f->edges[k].to.op_id == to)
			return true;
	return false;
}

static void expect_check(const char *dir, int status, const char *verdict)
{
	int st = nft(NF_TEST_ARGV("check", dir));
	ck_assert_msg(st == status, "check exit %d: %s %s", st, out, err);
	ck_assert_msg(strstr(out, verdict) != NULL, "'%s' not in %s", verdict, out);
	ck_assert_int_eq(nf_test_sh("\"$NF\" check --json \"$1\" | python3 -m json.tool >/dev/null",
			 NF_TEST_ARGV(dir), out, sizeof(out), err, sizeof(err)), 0);
}

START_TEST(deadlock_two_queues)
{
	struct nf_hang_report h;
	struct nf_error e;
	char dir[1024];

	record("deadlock-two-queues", dir, sizeof(dir));
	struct nf_analysis *a = load(dir);
	ck_assert_int_eq(nf_analysis_hangs(a, &h, &e), 0);
	ck_assert_uint_eq(h.n, 1);
	ck_assert_int_eq(h.f[0].kind, NF_HANG_DEADLOCK);
	ck_assert_uint_eq(h.f[0].n_edges, 2);
	ck_assert(has_edge(&h.f[0], 1, 4, 3)); /* QA's op 1 needs op 4, behind QB's op 3 */
	ck_assert(has_edge(&h.f[0], 3, 2, 1)); /* QB's op 3 needs op 2, behind QA's op 1 */
	ck_assert_int_eq(h.f[0].edges[0].from.since_ns, 10000);
	nf_hang_report_free(&h);
	same_hangs_dir(dir, a);
	nf_analysis_destroy(a);
	/* was "verdict: whole", exit 0 */
	expect_check(dir, 1, "verdict: deadlock");
	nft(NF_TEST_ARGV("check", "--json", dir));
	ck_assert_ptr_nonnull(strstr(out, "\"verdict\": \"deadlock\""));
	ck_assert_ptr_nonnull(strstr(out, "\"deadlock\": 1"));
}
END_TEST

START_TEST(deadlock_three_queues_across_adapters)
{
	struct nf_hang_report h;
	struct nf_error e;
	char dir[1024];

	record("deadlock-three-queues", dir, sizeof(dir));
	struct nf_analysis *a = load(dir);
	ck_assert_int_eq(nf_analysis_hangs(a, &h, &e), 0);
	ck_assert_uint_eq(h.n, 1);
	ck_assert_int_eq(h.f[0].kind, NF_HANG_DEADLOCK);
	ck_assert_uint_eq(h.f[0].n_edges, 3);
	ck_assert(has_edge(&h.f[0], 1, 6, 5));
	ck_assert(has_edge(&h.f[0], 3, 2, 1));
	ck_assert(has_edge(&h.f[0], 5, 4, 3));
	/* the edges cross adapters: Q1, Q3 on the dGPU, Q2 on the iGPU */
	ck_assert_int_eq(h.f[0].edges[0].from.queue, queue_of(a, "Q1"));
	nf_hang_report_free(&h);
	same_hangs_dir(dir, a);
	nf_analysis_destroy(a);
	expect_check(dir, 1, "verdict: deadlock");
}
END_TEST

START_TEST(hang_signal_never_queued)
{
	struct nf_hang_report h;
	struct nf_error e;
	char dir[1024];

	record("hang-never-signaled", dir, sizeof(dir));
	struct nf_analysis *a = load(dir);
	ck_assert_int_eq(nf_analysis_hangs(a, &h, &e), 0);
	ck_assert_uint_eq(h.n, 2);
	ck_assert_int_eq(h.count[NF_HANG_NEVER_SIGNALED], 1);
	ck_assert_int_eq(h.count[NF_HANG_BLOCKED], 1);
	/* sorted: never signaled first */
	ck_assert_int_eq(h.f[0].kind, NF_HANG_NEVER_SIGNALED);
	ck_assert_int_eq(h.f[0].wait.op_id, 2);
	ck_assert_int_eq(h.f[0].wait.value, 2);
	ck_assert_int_eq(h.f[0].value, 1);  /* highest value signaled ... */
	ck_assert_int_eq(h.f[0].op_id, 1);  /* ... by op 1 */
	ck_assert_int_eq(h.f[1].kind, NF_HANG_BLOCKED);
	ck_assert_int_eq(h.f[1].wait.op_id, 4);
	ck_assert_uint_eq(h.f[1].n_edges, 1);
	ck_assert(has_edge(&h.f[1], 4, 3, 2));
	nf_hang_report_free(&h);
	same_hangs_dir(dir, a);
	nf_analysis_destroy(a);
	expect_check(dir, 1, "verdict: hang");
	nft(NF_TEST_ARGV("check", dir));
	ck_assert_ptr_nonnull(strstr(out, "no signal in the session reaches 2 (highest: 1 by op 1)"));
}
END_TEST

/* ---- hand-made timelines: pending, lowered, unknown initial values -------------- */

static void make_db(const char *path, const char *rows_sql)
{
	char schema[1024];
	sqlite3 *db;
	FILE *f;
	char *sql = malloc(1 << 20);
	size_t n;

	nf_test_source_path(schema, sizeof(schema), "schemas/timeline.sql");
	f = fopen(schema, "r");
	ck_assert_ptr_nonnull(f);
	n = fread(sql, 1, (1 << 20) - 1, f);
	sql[n] = '\0';
	fclose(f);
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK, "%s", sqlite3_errmsg(db));
	ck_assert_msg(sqlite3_exec(db, rows_sql, NULL, NULL, NULL) == SQLITE_OK, "%s", sqlite3_errmsg(db));
	sqlite3_close(db);
	free(sql);
}

START_TEST(pending_is_not_a_hang)
{
	/* Q2 waits F >= 1 (op 2); the signal (op 1) is still running on Q1 when the
	 * session ends: pending. Q3 waits G >= 5 with G's initial value unknown (a
	 * kernel-like timeline) and no signal: maybe signaled before: pending. */
	char path[1024];
	struct nf_analysis *a;
	struct nf_hang_report h;
	struct nf_error e;

	snprintf(path, sizeof(path), "%s/pending.db", tmp);
	make_db(path,
		"INSERT INTO queues(queue, name) VALUES (1, 'Q1'), (2, 'Q2'), (3, 'Q3');"
		"INSERT INTO fences(fence, initial_value) VALUES (10, 0), (20, NULL);"
		"INSERT INTO fence_ops(id, queue, op, fence, value, queued_ns, observed_ns, end_ns, status, thread) VALUES"
		" (1, 1, 'signal', 10, 1, 100, NULL, NULL, 'unmatched', 1),"
		" (2, 2, 'wait', 10, 1, 100, NULL, NULL, 'unmatched', 1),"
		" (3, 3, 'wait', 20, 5, 100, NULL, NULL, 'unmatched', 1);");
	ck_assert_int_eq(nf_analysis_load(path, &a, &e), 0);
	ck_assert_int_eq(nf_analysis_hangs(a, &h, &e), 0);
	ck_assert_uint_eq(h.n, 2);
	ck_assert_int_eq(h.count[NF_HANG_PENDING], 2);
	nf_hang_report_free(&h);
	same_hangs(path, a);
	nf_analysis_destroy(a);

	/* the same with Q1 stuck behind a wait nothing signals: op 2 is blocked */
	snprintf(path, sizeof(path), "%s/blocked.db", tmp);
	make_db(path,
		"INSERT INTO fences(fence, initial_value) VALUES (10, 0), (30, 0);"
		"INSERT INTO fence_ops(id, queue, op, fence, value, queued_ns, observed_ns, end_ns, status, thread) VALUES"
		" (1, 1, 'wait', 30, 1, 90, NULL, NULL, 'unmatched', 1),"
		" (2, 1, 'signal', 10, 1, 100, NULL, NULL, 'unmatched', 1),"
		" (3, 2, 'wait', 10, 1, 100, NULL, NULL, 'unmatched', 1);");
	ck_assert_int_eq(nf_analysis_load(path, &a, &e), 0);
	ck_assert_int_eq(nf_analysis_hangs(a, &h, &e), 0);
	ck_assert_int_eq(h.count[NF_HANG_NEVER_SIGNALED], 1);
	ck_assert_int_eq(h.count[NF_HANG_BLOCKED], 1);
	ck_assert_int_eq(h.count[NF_HANG_PENDING], 0);
	nf_hang_report_free(&h);
	same_hangs(path, a);
	nf_analysis_destroy(a);
}
END_TEST

/* A Windows ETW capture logs a signal packet's completion after the OS has
 * unwaited the waits it released: deps names the signal although its end is
 * later than the wait's. The critical path still goes through that signal,
 * taken at the wait's end (it used to treat the wait as released by nothing
 * and blame its own queue's wait for the whole stall). */
START_TEST(release_recorded_after_the_wait)
{
	char path[1024];
	struct nf_analysis *a;
	struct nf_cp_path p;
	struct nf_error e;
	bool via_signal = false;

	snprintf(path, sizeof(path), "%s/late.db", tmp);
	make_db(path,
		"INSERT INTO queues(queue, name) VALUES (1, 'Q1'), (2, 'Q2');"
		"INSERT INTO fences(fence, initial_value) VALUES (10, 0);"
		"INSERT INTO fence_ops(id, queue, op, fence, value, queued_ns, observed_ns, end_ns, status, thread) VALUES"
		" (1, 1, 'signal', 10, 1, 100, 100, 1030, 'complete', 1),"
		" (2, 2, 'wait', 10, 1, 100, 150, 1000, 'complete', 1);"
		"INSERT INTO deps(signal_id, wait_id, cpu_signal, stall_ns) VALUES (1, 2, NULL, 850);");
	ck_assert_int_eq(nf_analysis_load(path, &a, &e), 0);
	ck_assert_msg(nf_analysis_critical_path(a, 2, &p, &e) == 0, "%s", e.msg);
	ck_assert_int_eq(p.queued_ns, 100);
	ck_assert_int_eq(p.end_ns, 1000);
	check_tiles(&p);
	for (size_t i = 0; i < p.n; i++)
		if (p.segs[i].op_id == 1 && !p.segs[i].on_thread && p.segs[i].queue == 1 &&
		    p.segs[i].kind == NF_SEG_EXECUTE && p.segs[i].end_ns == 1000)
			via_signal = true;
	ck_assert_msg(via_signal, "the path does not go through signal op 1 on Q1 (%zu segments)", p.n);
	nf_cp_path_free(&p);
	nf_analysis_destroy(a);
}
END_TEST

/* --queue NAME names one queue or none: two queues of one name are an error
 * that says so (it silently took the first). */
START_TEST(queue_name_shared_by_two_queues)
{
	char path[1024];
	struct nf_analysis *a;
	struct nf_error e;
	int64_t q = 0;

	snprintf(path, sizeof(path), "%s/names.db", tmp);
	make_db(path, "INSERT INTO queues(queue, name) VALUES (1, 'gfx'), (2, 'gfx'), (3, 'sdma0');");
	ck_assert_int_eq(nf_analysis_load(path, &a, &e), 0);
	ck_assert_int_eq(nf_analysis_find_queue(a, "sdma0", &q, &e), 0);
	ck_assert_int_eq(q, 3);
	ck_assert_int_eq(nf_analysis_find_queue(a, "0x2", &q, &e), 0);
	ck_assert_int_eq(q, 2);
	/* e is on the stack: clear it, or a stale code keeps the message out (first error wins) */
	nf_error_clear(&e);
	ck_assert_int_eq(nf_analysis_find_queue(a, "gfx", &q, &e), NF_EINVAL);
	ck_assert_msg(strstr(e.msg, "2 hardware queues are named 'gfx'"), "%s", e.msg);
	ck_assert_int_eq(nf_analysis_find_queue(a, "compute", &q, &e), NF_ENOENT);
	nf_analysis_destroy(a);
}
END_TEST

/* A session cut at a packet boundary (as a killed recorder leaves it) ends
 * mid-frame: its open waits are pending, not hangs, and check says whole. */
START_TEST(session_cut_mid_frame_is_pending)
{
	char sample[1024], scen[1200], dir[1200], events[1300];
	struct nf_analysis *a;
	struct nf_hang_report h;
	struct nf_error e;
	long cut = -1;

	nf_test_source_path(sample, sizeof(sample), "samples/stress.nfs");
	snprintf(scen, sizeof(scen), "%s/ring.nfs", tmp);
	snprintf(dir, sizeof(dir), "%s/ring", tmp);
	ck_assert_msg(nf_test_sh("sed 's/^repeat 4000 as/repeat 300 as/' \"$1\" > \"$2\" && \"$NF\" record -o \"$3\" \"$2\"",
		      NF_TEST_ARGV(sample, scen, dir), out, sizeof(out), err, sizeof(err)) == 0,
		      "%s", err);
	/* the last packet that starts past the middle: packets start on 4 KiB blocks
	 * with the CTF magic 0xC1FC1FC1 (little endian) */
	snprintf(events, sizeof(events), "%s/events", dir);
	FILE *f = fopen(events, "rb");
	ck_assert_ptr_nonnull(f);
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	for (long off = 4096; off < size; off += 4096) {
		unsigned char m[4];

		fseek(f, off, SEEK_SET);
		if (fread(m, 1, 4, f) == 4 && m[0] == 0xC1 && m[1] == 0x1F && m[2] == 0xFC && m[3] == 0xC1 &&
		    off > size / 2) {
			cut = off;
			break;
		}
	}
	fclose(f);
	ck_assert_msg(cut > 0, "no packet boundary past the middle of %s", events);
	ck_assert_int_eq(truncate(events, cut), 0);
	a = load(dir);
	ck_assert_int_eq(nf_analysis_hangs(a, &h, &e), 0);
	ck_assert_int_gt(h.count[NF_HANG_PENDING], 0);
	ck_assert_uint_eq(h.n, h.count[NF_HANG_PENDING]);
	nf_hang_report_free(&h);
	same_hangs_dir(dir, a);
	nf_analysis_destroy(a);
	/* The cut session has no end of recording: check says incomplete (exit
	 * 1), not hang or deadlock, and lists the open waits as pending. */
	ck_assert_msg(nft(NF_TEST_ARGV("check", dir)) == 1, "%s %s", out, err);
	ck_assert_ptr_nonnull(strstr(out, "pending at the end"));
	ck_assert_msg(strstr(out, "verdict: incomplete") != NULL, "%s", out);
}
END_TEST

START_TEST(lowered_signals)
{
	char path[1024];
	struct nf_analysis *a;
	struct nf_hang_report h;
	struct nf_error e;

	snprintf(path, sizeof(path), "%s/lowered.db", tmp);
	make_db(path,
		"INSERT INTO fences(fence, initial_value) VALUES (10, 0), (11, 7);"
		"INSERT INTO kernel_timelines(queue, context) VALUES (12, 1);"
		"INSERT INTO fences(fence, initial_value) VALUES (12, NULL);"
		"INSERT INTO fence_ops(id, queue, op, fence, value, queued_ns, end_ns, status) VALUES"
		" (1, 1, 'signal', 10, 5, 0, 100, 'complete'),"
		" (2, 1, 'signal', 10, 3, 0, 200, 'complete'),"   /* lowers 5 -> 3 */
		" (3, 1, 'signal', 11, 6, 0, 300, 'complete'),"   /* lowers the initial 7 */
		" (4, 2, 'signal', 12, 9, 0, 100, 'complete'),"   /* a kernel timeline: not checked */
		" (5, 2, 'signal', 12, 8, 0, 200, 'complete');"
		"INSERT INTO cpu_signals(id, thread, fence, value, ts_ns) VALUES (1, 4, 10, 4, 250);");
	ck_assert_int_eq(nf_analysis_load(path, &a, &e), 0);
	ck_assert_int_eq(nf_analysis_hangs(a, &h, &e), 0);
	ck_assert_uint_eq(h.n, 2);
	ck_assert_int_eq(h.count[NF_HANG_LOWERED], 2);
	ck_assert_int_eq(h.f[0].op_id, 2);
	ck_assert_int_eq(h.f[0].prev_op, 1);
	ck_assert_int_eq(h.f[0].prev_value, 5);
	ck_assert_int_eq(h.f[1].op_id, 3);
	ck_assert_int_eq(h.f[1].prev_value, 7);
	ck_assert_int_eq(h.f[1].prev_op, -1);
	nf_hang_report_free(&h);
	same_hangs(path, a);
	nf_analysis_destroy(a);
}
END_TEST

/* ---- every bundled sample: no finding, paths tile, blame adds up ------------------ */

static void check_generic(const char *dir)
{
	struct nf_analysis *a = load(dir);
	struct nf_hang_report h;
	struct nf_blame_row *rows;
	struct nf_error e;
	size_t n, paths = 0;

	ck_assert_int_eq(nf_analysis_hangs(a, &h, &e), 0);
	for (size_t i = 0; i < h.n; i++)
		ck_assert_msg(h.f[i].kind == NF_HANG_PENDING, "%s: finding %s on wait op %" PRId64, dir,
			      nf_hang_kind_name(h.f[i].kind), h.f[i].wait.op_id);
	nf_hang_report_free(&h);
	same_hangs_dir(dir, a);
	/* every finished operation's critical path tiles its latency (the first 2000),
	 * and the lazy model (what the CLI uses) walks the same path */
	char db[4200];
	struct nf_analysis *lz = NULL;
	int64_t t_full, t_lazy;

	snprintf(db, sizeof(db), "%s/.timeline.db", dir);
	ck_assert_int_eq(nf_analysis_open_lazy(db, &lz, &e), 0);
	ck_assert_int_eq(nf_analysis_target(a, NF_CP_LAST, 0, &t_full, &e) == 0,
			 nf_analysis_target(lz, NF_CP_LAST, 0, &t_lazy, &e) == 0);
	if (nf_analysis_target(a, NF_CP_LAST, 0, &t_full, &e) == 0)
		ck_assert_int_eq(t_full, t_lazy);
	for (int64_t id = 1; paths < 2000 && id <= (int64_t)nf_analysis_op_count(a); id++) {
		struct nf_cp_path p, q;
		int64_t t;

		nf_error_clear(&e);
		if (nf_analysis_target(a, NF_CP_OP, id, &t, &e))
			continue;
		nf_error_clear(&e);
		ck_assert_msg(nf_analysis_critical_path(a, id, &p, &e) == 0, "%s op %" PRId64 ": %s", dir, id, e.msg);
		check_tiles(&p);
		nf_error_clear(&e);
		ck_assert_msg(nf_analysis_critical_path(lz, id, &q, &e) == 0, "%s op %" PRId64 " (lazy): %s", dir,
			      id, e.msg);
		ck_assert_msg(p.n == q.n, "%s op %" PRId64 ": lazy path has %zu segments, not %zu", dir, id, q.n, p.n);
		for (size_t k = 0; k < p.n; k++) {
			const struct nf_cp_segment *x = &p.segs[k], *y = &q.segs[k];

			ck_assert_msg(x->kind == y->kind && x->on_thread == y->on_thread && x->queue == y->queue &&
					      x->thread == y->thread && x->op_id == y->op_id &&
					      x->cpu_wait == y->cpu_wait && x->cpu_signal == y->cpu_signal &&
					      x->fence == y->fence && x->value == y->value &&
					      x->release_op == y->release_op && x->via_fence == y->via_fence &&
					      x->start_ns == y->start_ns &&
					      x->end_ns == y->end_ns,
				      "%s op %" PRId64 ": lazy path differs at segment %zu", dir, id, k);
		}
		nf_cp_path_free(&q);
		nf_cp_path_free(&p);
		paths++;
	}
	nf_analysis_destroy(lz);
	ck_assert_int_eq(nf_analysis_stall_blame(a, &rows, &n, &e), 0);
	for (size_t i = 0; i < n; i++) {
		ck_assert_int_ge(rows[i].direct_ns, 0);
		ck_assert_int_ge(rows[i].chain_ns, 0);
		ck_assert_int_gt(rows[i].direct_ns + rows[i].chain_ns, 0);
	}
	free(rows);
	nf_analysis_destroy(a);
	ck_assert_int_eq(nft(NF_TEST_ARGV("query", dir, "--csv",
			 "select coalesce((select sum(stall_ns) from stall_blame), 0) = "
			 "coalesce((select sum(d.stall_ns) from deps d join fence_ops w on w.id = d.wait_id "
			 "where d.stall_ns > 0 and w.observed_ns is not null), 0)")), 0);
	ck_assert_msg(strstr(out, "\n1\n") != NULL, "%s: blame does not add up to the stalls", dir);
	int st = nft(NF_TEST_ARGV("check", dir));
	ck_assert_msg(st == 0, "%s: check exit %d: %s", dir, st, err);
	ck_assert_ptr_null(strstr(out, "hangs and deadlocks"));
}

static const char *const clean_samples[] = {
	"clock-drift", "cross-adapter-scenario-1", "cross-adapter-scenario-2a", "cross-adapter-scenario-2b",
	"lda-zero-timestamps", "log-buffer-example", "log-recreated", "monitored-value-41",
	"optimized-interrupt", "overrun", "process-a-b-sharing", "repeated-timestamps",
	"wraparound-32bit", "critical-path-chain", "stall-chain",
};

START_TEST(no_finding_on_clean_samples)
{
	char dir[1024];

	record(clean_samples[_i], dir, sizeof(dir));
	check_generic(dir);
}
END_TEST

START_TEST(no_finding_on_program_and_kernel)
{
	char dir[1024], bin[1024], src[1024];
	const char *bindir = getenv("NF_BINARY_DIR");
	static const char *const dats[] = { "samples/kernel/dma-fence.dat", "tests/kernel/corpus/import/small.dat",
					     "tests/kernel/corpus/import/dma-fence.dat" };

	snprintf(bin, sizeof(bin), "%s/nfence-sample", bindir ? bindir : ".");
	snprintf(dir, sizeof(dir), "%s/program", tmp);
	ck_assert_msg(nft(NF_TEST_ARGV("record", "-o", dir, "--", bin)) == 0, "%s", err);
	check_generic(dir);
	for (size_t i = 0; i < sizeof(dats) / sizeof(dats[0]); i++) {
		nf_test_source_path(src, sizeof(src), dats[i]);
		snprintf(dir, sizeof(dir), "%s/kernel%zu", tmp, i);
		ck_assert_msg(nft(NF_TEST_ARGV("import", src, "-o", dir)) == 0, "%s: %s", src, err);
		check_generic(dir);
	}
	/* the dma_fence fixture: thread 200's wait, released by the timeline's second fence */
	snprintf(dir, sizeof(dir), "%s/kernel0", tmp);
	ck_assert_int_eq(nft(NF_TEST_ARGV("critical-path", dir)), 0);
	ck_assert_ptr_nonnull(strstr(out, "on thread 200"));
	ck_assert_ptr_nonnull(strstr(out, "released by op 2"));
}
END_TEST

/* report --critical-path: the path's segments are drawn over the rows in blue. */
START_TEST(report_draws_the_path)
{
	char dir[1024], png[1200], plain[1200], db[1200];
	struct nf_render_options o = { 0 };
	struct nf_render_layout lay = { 0 };
	struct nf_image im, im0;
	struct nf_error e;
	sqlite3 *sdb;

	record("critical-path-chain", dir, sizeof(dir));
	snprintf(png, sizeof(png), "%s/path.png", tmp);
	snprintf(plain, sizeof(plain), "%s/plain.png", tmp);
	ck_assert_msg(nft(NF_TEST_ARGV("report", dir, "-o", png, "--critical-path", "2")) == 0,
		      "%s", err);
	/* the same window without the path: the path's span, 1/8 of it (+1 ns) each side */
	ck_assert_msg(nft(NF_TEST_ARGV("report", dir, "-o", plain, "--from", "0", "--to",
		      "235788")) == 0, "%s", err);
	snprintf(db, sizeof(db), "%s/.timeline.db", dir);
	o.output = png;
	o.sel.from_ns = 0;
	o.sel.to_ns = 235788;
	nf_error_clear(&e);
	ck_assert_int_eq(sqlite3_open_v2(db, &sdb, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	ck_assert_msg(nf_render_layout_build(sdb, &o, &lay, &e) == 0, "%s", e.msg);
	sqlite3_close(sdb);
	nf_image_load(&im, png);
	nf_image_load(&im0, plain);
	/* D1 executing op 3 (10 .. 130.2us), I1 executing op 4 (135.2 .. 205.4us) on their
	 * signal lanes, thread 2 waiting (130.2 .. 135.2us): blue over the path, the plain
	 * colours without it */
	static const struct { const char *queue; int64_t thread, t; } at[] = {
		{ "D1", -1, 70000 }, { "I1", -1, 170000 }, { NULL, 2, 132700 },
	};
	struct nf_analysis *a = load(dir);
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		const struct nf_render_row *row = at[i].queue ? nf_render_layout_queue(&lay, queue_of(a, at[i].queue))
							      : nf_render_layout_thread(&lay, at[i].thread);
		double y0, y1;

		ck_assert_ptr_nonnull(row);
		nf_render_lane_extent(row, at[i].queue ? NF_LANE_SIGNAL : NF_LANE_CPU, &y0, &y1);
		int x = (int)nf_render_layout_x(&lay, at[i].t), y = (int)((y0 + y1) / 2);
		uint32_t px = nf_image_pixel(&im, x, y), px0 = nf_image_pixel(&im0, x, y);

		/* the overlay's blue (#1466F2) pulls red down and blue up over any box colour */
		ck_assert_msg((px >> 16 & 0xFF) + 15 < (px0 >> 16 & 0xFF) && (px & 0xFF) >= (px0 & 0xFF),
			      "point %zu: %06X with the path, %06X without", i, px, px0);
	}
	nf_analysis_destroy(a);
	cairo_surface_destroy(im.sf);
	cairo_surface_destroy(im0.sf);
	nf_render_layout_release(&lay);
	/* an operation with no latency: one line, exit 1, no picture */
	ck_assert_int_eq(nf_test_sh("\"$NF\" report \"$1\" -o \"$2/x.png\" --critical-path 77",
			 NF_TEST_ARGV(dir, tmp), out, sizeof(out), err, sizeof(err)), 1);
	ck_assert_int_eq(nf_test_count_lines(err), 1);
	ck_assert_ptr_nonnull(strstr(err, "--critical-path 77"));
}
END_TEST

START_TEST(cli_bad_usage)
{
	static const char *const bad[] = { "", "--op", "--op x DIR", "--op 1 --at 2ms DIR", "--at 5parsecs DIR",
					    "--bogus DIR", "DIR DIR2" };
	char dir[1024];

	record("log-buffer-example", dir, sizeof(dir));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		/* the table's words split by the shell, as typed */
		int st = nf_test_sh("exec \"$NF\" critical-path $1", NF_TEST_ARGV(bad[i]), out,
				    sizeof(out), err, sizeof(err));
		ck_assert_msg(st == 2, "'%s': exit %d", bad[i], st);
		ck_assert_int_eq(nf_test_count_lines(err), 1);
	}
	/* failures of the work: one line naming what, exit 1 */
	static const char *const fail[] = { "--op 99", "--queue NoSuchQueue", "--at 1ns" };
	for (size_t i = 0; i < sizeof(fail) / sizeof(fail[0]); i++) {
		int st = nf_test_sh("exec \"$NF\" critical-path \"$1\" $2", NF_TEST_ARGV(dir, fail[i]),
				    out, sizeof(out), err, sizeof(err));
		ck_assert_msg(st == 1, "'%s': exit %d", fail[i], st);
		ck_assert_int_eq(nf_test_count_lines(err), 1);
		ck_assert_msg(out[0] == '\0', "stdout on failure: %s", out);
	}
	ck_assert_int_eq(nf_test_sh("\"$NF\" critical-path \"$1/none\"", NF_TEST_ARGV(tmp), out,
			 sizeof(out), err, sizeof(err)), 1);
	ck_assert_int_eq(nf_test_count_lines(err), 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("analysis");
	TCase *tc = tcase_create("analysis");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, chain_three_queues_two_adapters_cpu_thread);
	tcase_add_test(tc, stall_chain_blame);
	tcase_add_test(tc, release_recorded_after_the_wait);
	tcase_add_test(tc, queue_name_shared_by_two_queues);
	tcase_add_test(tc, deadlock_two_queues);
	tcase_add_test(tc, deadlock_three_queues_across_adapters);
	tcase_add_test(tc, hang_signal_never_queued);
	tcase_add_test(tc, pending_is_not_a_hang);
	tcase_add_test(tc, lowered_signals);
	tcase_add_test(tc, session_cut_mid_frame_is_pending);
	tcase_add_loop_test(tc, no_finding_on_clean_samples, 0,
			    (int)(sizeof(clean_samples) / sizeof(clean_samples[0])));
	tcase_add_test(tc, no_finding_on_program_and_kernel);
	tcase_add_test(tc, report_draws_the_path);
	tcase_add_test(tc, cli_bad_usage);
	suite_add_tcase(s, tc);
	return nf_test_main(s);
}
