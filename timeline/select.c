/*
 * The selection (contract/timeline.h, struct nf_selection) on the read side:
 * checking it against a timeline (every queue, fence, thread and process it
 * names must be there; a window must start before the session's end),
 * resolving its window, and turning it into the SQL every reader uses (the
 * queue and fence predicates, the CPU thread rows), so that the picture, the
 * HTML page and the export select alike.
 */
#include "contract/timeline.h"
#include "contract/errors.h"
#include "contract/sattime.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "contract/text.h"

static int sql_fail(sqlite3 *db, struct nf_error *err, const char *what)
{
	return nf_error_set(err, NF_ESQL, "%s: %s", what, sqlite3_errmsg(db));
}

/* Each handle of v[0..n) is a row of sql's ?1, else NF_ENOENT naming it. */
static int check_handles(sqlite3 *db, const char *sql, const char *what, const int64_t *v, int n,
			 struct nf_error *err)
{
	sqlite3_stmt *st;
	int ret = 0;

	if (n <= 0)
		return 0;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return sql_fail(db, err, "checking the filters");
	for (int i = 0; i < n && ret == 0; i++) {
		int rc;

		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, v[i]);
		rc = sqlite3_step(st);
		if (rc == SQLITE_DONE)
			ret = nf_error_set(err, NF_ENOENT, "%s 0x%" PRIx64 ": not in the timeline", what,
					   (uint64_t)v[i]);
		else if (rc != SQLITE_ROW)
			ret = sql_fail(db, err, "checking the filters");
	}
	sqlite3_finalize(st);
	return ret;
}

/*
 * The thread selection (--thread, --process): each of threads[0..n_threads)
 * names a thread of the timeline by id or by name (kernel_threads.comm); each
 * of processes[0..n_processes) a process by id (or a thread's id) or by name.
 */
static int check_threads(sqlite3 *db, const char *const *threads, int n_threads, const char *const *processes,
			 int n_processes, struct nf_error *err)
{
	static const char sql_id[] =
		"SELECT 1 FROM (SELECT thread FROM cpu_runs UNION SELECT thread FROM cpu_waits UNION "
		"SELECT thread FROM cpu_signals UNION SELECT thread FROM queue_threads UNION SELECT thread FROM jobs "
		"UNION SELECT thread FROM markers UNION SELECT thread FROM kernel_threads) WHERE thread = ?1";
	static const char sql_pid[] = "SELECT 1 FROM kernel_threads WHERE process = ?1 OR thread = ?1";
	static const char sql_name[] = "SELECT 1 FROM kernel_threads WHERE comm = ?1";

	for (int k = 0; k < 2; k++) {
		const char *const *v = k ? processes : threads;
		int n = k ? n_processes : n_threads;

		for (int i = 0; v && i < n; i++) {
			char *end = NULL;
			long long id = strtoll(v[i], &end, 10);
			int numeric = end && *end == '\0' && end != v[i];
			sqlite3_stmt *st;
			int rc;

			if (sqlite3_prepare_v2(db, numeric ? (k ? sql_pid : sql_id) : sql_name, -1, &st, NULL) != SQLITE_OK)
				return nf_error_set(err, NF_ESQL, "checking the thread filters: %s", sqlite3_errmsg(db));
			if (numeric)
				sqlite3_bind_int64(st, 1, id);
			else
				sqlite3_bind_text(st, 1, v[i], -1, SQLITE_STATIC);
			rc = sqlite3_step(st);
			sqlite3_finalize(st);
			if (rc != SQLITE_ROW && rc != SQLITE_DONE)
				return nf_error_set(err, NF_ESQL, "checking the thread filters: %s", sqlite3_errmsg(db));
			if (rc == SQLITE_DONE)
				return nf_error_set(err, NF_ENOENT, "%s '%s': not in the timeline", k ? "process" : "thread",
						    v[i]);
		}
	}
	return 0;
}

/* A list and its count agree: no negative count, no count without a list. */
static int list_ok(const void *v, int n)
{
	return n >= 0 && (n == 0 || v);
}

static int check_times(const struct nf_selection *sel, struct nf_error *err)
{
	char a[32], b[32];

	if (sel->from_ns < -1 || sel->to_ns < -1)
		return nf_error_set(err, NF_EINVAL, "time window: negative time");
	if (sel->from_ns >= 0 && sel->to_ns >= 0 && sel->to_ns <= sel->from_ns) {
		nf_text_duration(a, sizeof(a), sel->to_ns);
		nf_text_duration(b, sizeof(b), sel->from_ns);
		return nf_error_set(err, NF_EINVAL, "time window: end (%s) is not after start (%s)", a, b);
	}
	return 0;
}

int nf_selection_check(sqlite3 *db, const struct nf_selection *sel, struct nf_error *err)
{
	int ret;

	if (!list_ok(sel->queues, sel->n_queues) || !list_ok(sel->fences, sel->n_fences) ||
	    !list_ok(sel->threads, sel->n_threads) || !list_ok(sel->processes, sel->n_processes))
		return nf_error_set(err, NF_EINVAL, "bad queue or fence filter");
	if ((ret = check_times(sel, err)) < 0 ||
	    (ret = check_handles(db, "SELECT 1 FROM queues WHERE queue = ?1", "queue", sel->queues, sel->n_queues,
				 err)) < 0 ||
	    (ret = check_handles(db, "SELECT 1 FROM fences WHERE fence = ?1", "fence", sel->fences, sel->n_fences,
				 err)) < 0)
		return ret;
	return check_threads(db, sel->threads, sel->n_threads, sel->processes, sel->n_processes, err);
}

/* The latest time of the timeline's operations, CPU waits and signals and anomalies (0: none). */
static int scan_session_end(sqlite3 *db, int64_t *end, struct nf_error *err)
{
	static const char sql[] =
		"SELECT max(coalesce((SELECT max(max(coalesce(queued_ns,0), coalesce(observed_ns,0),"
		" coalesce(end_ns,0))) FROM fence_ops), 0),"
		" coalesce((SELECT max(max(start_ns, coalesce(end_ns,0))) FROM cpu_waits), 0),"
		" coalesce((SELECT max(ts_ns) FROM cpu_signals), 0),"
		" coalesce((SELECT max(max(coalesce(first_ns,0), coalesce(last_ns,0))) FROM anomalies), 0))";
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return sql_fail(db, err, "finding the session end");
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*end = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : sql_fail(db, err, "finding the session end");
}

int nf_selection_window(sqlite3 *db, const struct nf_selection *sel, struct nf_window *w, struct nf_error *err)
{
	sqlite3_stmt *st;
	char a[32], b[32];
	int rc, ret;

	memset(w, 0, sizeof(*w));
	if ((ret = check_times(sel, err)) < 0)
		return ret;
	if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'duration_ns'", -1, &st, NULL) != SQLITE_OK)
		return sql_fail(db, err, "reading meta");
	if ((rc = sqlite3_step(st)) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL &&
	    sqlite3_column_int64(st, 0) > 0) {
		w->session_end = sqlite3_column_int64(st, 0);
		w->has_duration = 1;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return sql_fail(db, err, "reading meta");
	if (!w->has_duration && (ret = scan_session_end(db, &w->session_end, err)) < 0)
		return ret;
	/* A window after the session's end would show nothing: an error, not an empty answer. */
	if (sel->from_ns >= 0 && w->session_end > 0 && sel->from_ns >= w->session_end) {
		nf_text_duration(a, sizeof(a), sel->from_ns);
		nf_text_duration(b, sizeof(b), w->session_end);
		return nf_error_set(err, NF_EINVAL, "time window: start %s is not before the session's end (%s)", a,
				    b);
	}
	w->t0 = sel->from_ns >= 0 ? sel->from_ns : 0;
	w->t1 = sel->to_ns >= 0 ? sel->to_ns : w->session_end;
	if (sel->to_ns < 0 && w->t1 <= w->t0)
		w->t1 = nf_time_add(w->t0, 1000); /* an empty session: a 1 µs window */
	if (w->t1 <= w->t0) {
		nf_text_duration(a, sizeof(a), w->t1);
		nf_text_duration(b, sizeof(b), w->t0);
		return nf_error_set(err, NF_EINVAL, "time window: end (%s) is not after start (%s)", a, b);
	}
	return 0;
}

char *nf_selection_in(const struct nf_selection *sel, enum nf_selection_list which, const char *col)
{
	const int64_t *v = which == NF_SELECTION_QUEUES ? sel->queues : sel->fences;
	int n = which == NF_SELECTION_QUEUES ? sel->n_queues : sel->n_fences;
	sqlite3_str *s;

	if (!v || n <= 0)
		return sqlite3_mprintf("%s", "");
	s = sqlite3_str_new(NULL);
	sqlite3_str_appendf(s, " AND %s IN (", col);
	for (int i = 0; i < n; i++)
		sqlite3_str_appendf(s, "%s%lld", i ? "," : "", (long long)v[i]);
	sqlite3_str_appendall(s, ")");
	if (sqlite3_str_errcode(s) != SQLITE_OK) {
		sqlite3_free(sqlite3_str_finish(s));
		return NULL;
	}
	return sqlite3_str_finish(s);
}

/* " OR col = id OR name = 'x'": threads or processes named by id or name (sqlite3_malloc'd). */
static char *select_sql(const char *idcol, const char *namecol, const char *const *v, int n)
{
	char *sql = sqlite3_mprintf("%s", "");

	for (int i = 0; sql && v && i < n; i++) {
		char *end = NULL;
		long long id = strtoll(v[i], &end, 10);
		char *next = end && *end == '\0' && end != v[i]
			? sqlite3_mprintf("%s OR %s = %lld", sql, idcol, id)
			: sqlite3_mprintf("%s OR %s = %Q", sql, namecol, v[i]);

		sqlite3_free(sql);
		sql = next;
	}
	return sql;
}

char *nf_selection_threads_sql(const struct nf_selection *sel, const char *order_by)
{
	int filtered = sel->fences && sel->n_fences > 0;
	char *ff = nf_selection_in(sel, NF_SELECTION_FENCES, "fence");
	char *qf = nf_selection_in(sel, NF_SELECTION_QUEUES, "queue");
	char *tsel = select_sql("t.thread", "k.comm", sel->threads, sel->n_threads);
	char *psel = select_sql("coalesce(k.process, t.thread)", "p.comm", sel->processes, sel->n_processes);
	char *sql = NULL;

	/*
	 * rel: the threads that wait or signal on the CPU, that queued GPU work
	 * (queue_threads, per queue and fence) and, unfiltered, that own an item;
	 * ran: those and, unfiltered, every thread that ran (cpu_runs).
	 */
	if (ff && qf && tsel && psel)
		sql = sqlite3_mprintf(
			"SELECT * FROM (WITH rel(thread) AS (SELECT thread FROM cpu_waits WHERE thread IS NOT NULL%s "
			"UNION SELECT thread FROM cpu_signals WHERE thread IS NOT NULL%s "
			"UNION SELECT thread FROM queue_threads WHERE thread IS NOT NULL AND queue IS NOT NULL%s%s%s), "
			"ran(thread) AS (SELECT thread FROM rel%s), "
			"shown(thread) AS (SELECT t.thread FROM ran t LEFT JOIN kernel_threads k ON k.thread = t.thread "
			"LEFT JOIN kernel_threads p ON p.thread = coalesce(k.process, t.thread) WHERE %s "
			"OR t.thread IN (SELECT thread FROM rel) OR NOT EXISTS (SELECT 1 FROM rel)%s%s) "
			"SELECT s.thread AS thread, k.process AS process, coalesce(k.process, s.thread) AS proc, "
			"k.comm AS name, g.comm AS proc_name, p.comm AS process_name, "
			"(SELECT count(*) FROM ran) - (SELECT count(*) FROM shown) AS left_out "
			"FROM shown s LEFT JOIN kernel_threads k ON k.thread = s.thread "
			"LEFT JOIN kernel_threads g ON g.thread = coalesce(k.process, s.thread) "
			"LEFT JOIN kernel_threads p ON p.thread = k.process) %s",
			ff, ff, ff, qf,
			filtered ? "" : " UNION SELECT thread FROM items WHERE thread IS NOT NULL",
			filtered ? "" : " UNION SELECT thread FROM cpu_runs WHERE thread IS NOT NULL",
			sel->threads_all && !filtered ? "1" : "0", tsel, psel, order_by ? order_by : "");
	sqlite3_free(ff);
	sqlite3_free(qf);
	sqlite3_free(tsel);
	sqlite3_free(psel);
	return sql;
}
