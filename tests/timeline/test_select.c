/*
 * The selection on the read side (contract/timeline.h, timeline/select.c),
 * the one every reader and the CLI use: what it refuses (a queue, fence,
 * thread or process that names nothing of the timeline; bad lists and
 * times), the window it resolves (meta's duration or the latest time, a
 * start past the end refused), the SQL predicates it makes, and the CPU
 * thread rows it shows on a small timeline made here from the schema files.
 */
#include <check.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf_test.h"
#include "schema_db.h"
#include "contract/timeline.h"

/*
 * Two queues, two fences; thread 10 waits on the CPU (fence 100), thread 11
 * signals (fence 200), thread 12 queued work on queue 1 (fence 100), thread 13
 * submitted a GPU job, thread 14 wrote a marker, threads 20 and 21 only ran
 * (20 in process 12, named "helper"); meta says the session lasted 5 ms
 * unless duration is 0.
 */
static sqlite3 *make_db(int64_t duration)
{
	sqlite3 *db;
	char sql[256];

	ck_assert_int_eq(sqlite3_open(":memory:", &db), SQLITE_OK);
	exec_schema_file(db, "schemas/timeline.sql");
	if (duration > 0) {
		snprintf(sql, sizeof(sql), "INSERT INTO meta VALUES ('duration_ns', '%" PRId64 "')", duration);
		exec_sql(db, sql);
	}
	exec_sql(db, "INSERT INTO queues (queue, adapter, name) VALUES (1, 0, 'q1'), (2, 0, 'q2');"
		     "INSERT INTO fences (fence) VALUES (100), (200);"
		     "INSERT INTO fence_ops (id, queue, op, fence, value, queued_ns, end_ns, status, thread) VALUES "
		     " (1, 1, 'signal', 100, 1, 1000, 7000000, 'complete', 12);"
		     "INSERT INTO cpu_waits (id, thread, adapter, fence, value, start_ns, end_ns, status) VALUES "
		     " (1, 10, 0, 100, 1, 2000, 3000, 'satisfied');"
		     "INSERT INTO cpu_signals (id, thread, adapter, fence, value, ts_ns) VALUES (1, 11, 0, 200, 1, 2500);"
		     "INSERT INTO queue_threads VALUES (1, 100, 12, 1);"
		     "INSERT INTO jobs (id, driver, ring, thread, submitted_ns) VALUES (1, 'd', 'r', 13, 100);"
		     "INSERT INTO markers (id, ts_ns, thread, text) VALUES (1, 200, 14, 'm');"
		     "INSERT INTO cpu_runs (thread, cpu, start_ns, end_ns, end_state) VALUES (20, 0, 10, 20, 0), "
		     " (21, 1, 10, 20, 0), (10, 0, 30, 40, 1);"
		     "INSERT INTO kernel_threads (thread, comm, process) VALUES (20, 'helper', 12), (12, 'main', 12), "
		     " (21, 'idle-ish', NULL);");
	exec_schema_file(db, "schemas/timeline-views.sql");
	return db;
}

/* The thread rows sel shows: "thread:process:proc:name:proc_name:left_out;"... */
static void threads_of(sqlite3 *db, const struct nf_selection *sel, char *buf, size_t len)
{
	char *sql = nf_selection_threads_sql(sel, "ORDER BY proc, thread != proc, thread");
	sqlite3_stmt *st;
	size_t n = 0;

	ck_assert_ptr_nonnull(sql);
	ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK, "%s", sqlite3_errmsg(db));
	buf[0] = '\0';
	while (sqlite3_step(st) == SQLITE_ROW) {
		const unsigned char *nm = sqlite3_column_text(st, 3), *pn = sqlite3_column_text(st, 4);

		n += (size_t)snprintf(buf + n, len - n, "%lld:%s:%lld:%s:%s:%lld;", (long long)sqlite3_column_int64(st, 0),
				      sqlite3_column_type(st, 1) == SQLITE_NULL ? "-" : (const char *)sqlite3_column_text(st, 1),
				      (long long)sqlite3_column_int64(st, 2), nm ? (const char *)nm : "-",
				      pn ? (const char *)pn : "-", (long long)sqlite3_column_int64(st, 6));
		ck_assert_uint_lt(n, len);
	}
	sqlite3_finalize(st);
	sqlite3_free(sql);
}

START_TEST(test_check_refuses_what_matches_nothing)
{
	sqlite3 *db = make_db(5000000);
	struct nf_selection sel = NF_SELECTION_ALL;
	int64_t q[] = { 1, 3 }, f[] = { 200, 0x999 };
	const char *t[] = { "10", "nosuch" }, *p[] = { "helper", "12", "9999" };
	struct nf_error err;

	nf_error_clear(&err);
	ck_assert_int_eq(nf_selection_check(db, &sel, &err), 0);
	sel.queues = q;
	sel.n_queues = 2;
	ck_assert_int_eq(nf_selection_check(db, &sel, &err), NF_ENOENT);
	ck_assert_str_eq(err.msg, "queue 0x3: not in the timeline");
	sel.n_queues = 1;
	sel.fences = f;
	sel.n_fences = 2;
	nf_error_clear(&err);
	ck_assert_int_eq(nf_selection_check(db, &sel, &err), NF_ENOENT);
	ck_assert_str_eq(err.msg, "fence 0x999: not in the timeline");
	sel.n_fences = 1;
	sel.threads = t;
	sel.n_threads = 2;
	nf_error_clear(&err);
	ck_assert_int_eq(nf_selection_check(db, &sel, &err), NF_ENOENT);
	ck_assert_str_eq(err.msg, "thread 'nosuch': not in the timeline");
	sel.n_threads = 1;
	sel.processes = p;
	sel.n_processes = 3;
	nf_error_clear(&err);
	ck_assert_int_eq(nf_selection_check(db, &sel, &err), NF_ENOENT);
	ck_assert_str_eq(err.msg, "process '9999': not in the timeline");
	sel.n_processes = 2;  /* by name and by id */
	nf_error_clear(&err);
	ck_assert_int_eq(nf_selection_check(db, &sel, &err), 0);
	/* A count without its list, a negative time, an end not after the start. */
	sel.fences = NULL;
	nf_error_clear(&err);
	ck_assert_int_eq(nf_selection_check(db, &sel, &err), NF_EINVAL);
	sel.fences = f;
	sel.from_ns = -2;
	nf_error_clear(&err);
	ck_assert_int_eq(nf_selection_check(db, &sel, &err), NF_EINVAL);
	ck_assert_str_eq(err.msg, "time window: negative time");
	sel.from_ns = 2000;
	sel.to_ns = 2000;
	nf_error_clear(&err);
	ck_assert_int_eq(nf_selection_check(db, &sel, &err), NF_EINVAL);
	ck_assert_str_eq(err.msg, "time window: end (2 \xC2\xB5s) is not after start (2 \xC2\xB5s)");
	sqlite3_close(db);
}
END_TEST

START_TEST(test_window)
{
	sqlite3 *db = make_db(5000000);
	struct nf_selection sel = NF_SELECTION_ALL;
	struct nf_window w;
	struct nf_error err;

	nf_error_clear(&err);
	ck_assert_int_eq(nf_selection_window(db, &sel, &w, &err), 0);
	ck_assert_int_eq(w.t0, 0);
	ck_assert_int_eq(w.t1, 5000000);
	ck_assert_int_eq(w.session_end, 5000000);
	ck_assert_int_eq(w.has_duration, 1);
	sel.from_ns = 1000;
	sel.to_ns = 9000000;  /* past the end: allowed, the end is what was asked */
	ck_assert_int_eq(nf_selection_window(db, &sel, &w, &err), 0);
	ck_assert_int_eq(w.t0, 1000);
	ck_assert_int_eq(w.t1, 9000000);
	sel.from_ns = 5000000;
	sel.to_ns = -1;
	ck_assert_int_eq(nf_selection_window(db, &sel, &w, &err), NF_EINVAL);
	ck_assert_str_eq(err.msg, "time window: start 5 ms is not before the session's end (5 ms)");
	sqlite3_close(db);
	/* Without meta's duration: the latest time of the timeline (the signal's end, 7 ms). */
	db = make_db(0);
	sel.from_ns = -1;
	nf_error_clear(&err);
	ck_assert_int_eq(nf_selection_window(db, &sel, &w, &err), 0);
	ck_assert_int_eq(w.session_end, 7000000);
	ck_assert_int_eq(w.has_duration, 0);
	ck_assert_int_eq(w.t1, 7000000);
	sqlite3_close(db);
	/* An empty timeline: a 1 us window. */
	ck_assert_int_eq(sqlite3_open(":memory:", &db), SQLITE_OK);
	exec_schema_file(db, "schemas/timeline.sql");
	ck_assert_int_eq(nf_selection_window(db, &sel, &w, &err), 0);
	ck_assert_int_eq(w.t0, 0);
	ck_assert_int_eq(w.t1, 1000);
	sqlite3_close(db);
}
END_TEST

START_TEST(test_predicates)
{
	struct nf_selection sel = NF_SELECTION_ALL;
	int64_t q[] = { 1, 0x40000040 }, q0[1] = { 0 };
	char *s;

	s = nf_selection_in(&sel, NF_SELECTION_QUEUES, "queue");
	ck_assert_str_eq(s, "");
	sqlite3_free(s);
	sel.queues = q0;  /* a list with no entry selects everything */
	s = nf_selection_in(&sel, NF_SELECTION_QUEUES, "queue");
	ck_assert_str_eq(s, "");
	sqlite3_free(s);
	sel.queues = q;
	sel.n_queues = 2;
	s = nf_selection_in(&sel, NF_SELECTION_QUEUES, "w.queue");
	ck_assert_str_eq(s, " AND w.queue IN (1,1073741888)");
	sqlite3_free(s);
	s = nf_selection_in(&sel, NF_SELECTION_FENCES, "fence");
	ck_assert_str_eq(s, "");
	sqlite3_free(s);
}
END_TEST

START_TEST(test_thread_rows)
{
	sqlite3 *db = make_db(5000000);
	struct nf_selection sel = NF_SELECTION_ALL;
	const char *t[] = { "helper" }, *p[] = { "12" };
	int64_t f[] = { 100 };
	char buf[1024];

	/* Related threads only: CPU waits and signals, queued work, items' owners; 2 only ran. */
	threads_of(db, &sel, buf, sizeof(buf));
	ck_assert_str_eq(buf, "10:-:10:-:-:2;11:-:11:-:-:2;12:12:12:main:main:2;13:-:13:-:-:2;14:-:14:-:-:2;");
	sel.threads_all = 1;
	threads_of(db, &sel, buf, sizeof(buf));
	ck_assert_str_eq(buf, "10:-:10:-:-:0;11:-:11:-:-:0;12:12:12:main:main:0;20:12:12:helper:main:0;"
			      "13:-:13:-:-:0;14:-:14:-:-:0;21:-:21:idle-ish:idle-ish:0;");
	sel.threads_all = 0;
	sel.threads = t;  /* by name */
	sel.n_threads = 1;
	threads_of(db, &sel, buf, sizeof(buf));
	ck_assert_str_eq(buf, "10:-:10:-:-:1;11:-:11:-:-:1;12:12:12:main:main:1;20:12:12:helper:main:1;"
			      "13:-:13:-:-:1;14:-:14:-:-:1;");
	sel.n_threads = 0;
	sel.processes = p;  /* every thread of process 12 */
	sel.n_processes = 1;
	threads_of(db, &sel, buf, sizeof(buf));
	ck_assert_str_eq(buf, "10:-:10:-:-:1;11:-:11:-:-:1;12:12:12:main:main:1;20:12:12:helper:main:1;"
			      "13:-:13:-:-:1;14:-:14:-:-:1;");
	/* A fence filter: the threads of that fence, no item owners, no runs. */
	sel.n_processes = 0;
	sel.fences = f;
	sel.n_fences = 1;
	threads_of(db, &sel, buf, sizeof(buf));
	ck_assert_str_eq(buf, "10:-:10:-:-:0;12:12:12:main:main:0;");
	sqlite3_close(db);
}
END_TEST

static Suite *select_suite(void)
{
	Suite *s = suite_create("timeline selection");
	TCase *tc = tcase_create("selection");

	tcase_add_test(tc, test_check_refuses_what_matches_nothing);
	tcase_add_test(tc, test_window);
	tcase_add_test(tc, test_predicates);
	tcase_add_test(tc, test_thread_rows);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return nf_test_main(select_suite());
}
