/*
 * The CPU side: a track for every CPU thread the timeline names, the CPU
 * waits as slices on their thread, the CPU signals as instants with the flows
 * to the waits they released.
 */
#include "walk.h"
#include "contract/errors.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * A track for every CPU thread the timeline names, first: those that queued
 * GPU work (queue_threads, within the queue and fence filters) and, for
 * captures that say when threads ran, those that ran (cpu_runs, when no fence filter
 * is given: runs belong to no fence), so each has its track and name even
 * when nothing of it is drawn.
 */
int pass_threads(struct exporter *x)
{
	const struct nf_export_options *o = x->opts;
	char *qf = nf_selection_in(&o->sel, NF_SELECTION_QUEUES, "queue");
	char *ff = nf_selection_in(&o->sel, NF_SELECTION_FENCES, "fence");
	int runs = o->sel.n_fences == 0 && has_table(x->db, "cpu_runs");
	sqlite3_stmt *st = NULL;
	char *sql = NULL;
	int rc, ret = 0;

	if (qf && ff)
		sql = sqlite3_mprintf("SELECT thread FROM queue_threads WHERE thread IS NOT NULL%s%s%s "
				      "ORDER BY 1",
				      qf, ff, runs ? " UNION SELECT thread FROM cpu_runs WHERE thread IS NOT NULL" : "");
	sqlite3_free(qf);
	sqlite3_free(ff);
	if ((ret = prepare_owned(x, x->db, sql, &st, "reading queue_threads")) < 0)
		return ret;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct xthread *t;

		if ((ret = thread_ensure(x, sqlite3_column_int64(st, 0), &t)) < 0)
			break;
	}
	if (ret == 0 && rc != SQLITE_DONE)
		ret = sql_fail(x, "reading queue_threads");
	sqlite3_finalize(st);
	return ret;
}

/* cpu_waits (but the fence waits of threads, adapter NULL: written as their fence_ops rows). */
int pass_cpu_waits(struct exporter *x)
{
	sqlite3_stmt *st = NULL;
	char *sql, name[96];
	int rc, ret = 0;

	sql = sqlite3_mprintf("SELECT c.id, c.thread, c.fence, c.value, c.start_ns, c.end_ns, c.status "
			      "FROM cpu_waits c WHERE c.adapter IS NOT NULL AND c.start_ns IS NOT NULL "
			      "AND c.start_ns <= %lld AND coalesce(c.end_ns, c.start_ns) >= %lld%s "
			      "ORDER BY c.start_ns, c.id",
			      (long long)x->t1, (long long)x->t0, x->cpu_pred);
	if ((ret = prepare_owned(x, x->db, sql, &st, "reading cpu_waits")) < 0)
		return ret;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct nf_xevent e;
		int64_t start = sqlite3_column_int64(st, 4), end = col_or(st, 5, start);
		const char *status = (const char *)sqlite3_column_text(st, 6);

		memset(&e, 0, sizeof(e));
		e.stall_ts = -1;
		e.instant = col_null(st, 5);
		if (end < start)
			end = start;
		ret = col_null(st, 1) ? session_track(x, start, end, &e.track)
				      : thread_track(x, sqlite3_column_int64(st, 1), start, end, &e.track);
		if (ret < 0)
			break;
		op_name(name, "cpu wait", st, 2);
		e.ts = start;
		e.end = end;
		e.name = name;
		e.cat = "cpu_wait";
		arg_int(&e, "cpu wait id", sqlite3_column_int64(st, 0));
		if (!col_null(st, 2))
			arg_hex(&e, "fence", sqlite3_column_int64(st, 2));
		if (!col_null(st, 3))
			arg_int(&e, "value", sqlite3_column_int64(st, 3));
		arg_str(&e, "status", status ? status : "");
		if ((ret = emit(x, &e)) < 0)
			break;
	}
	if (ret == 0 && rc != SQLITE_DONE)
		ret = sql_fail(x, "reading cpu_waits");
	sqlite3_finalize(st);
	return ret;
}

/* cpu_signals: instants on their thread, with the flows to the waits they released. */
int pass_cpu_signals(struct exporter *x)
{
	struct flowbuf fb = { x->err, NULL, 0, 0 };
	struct edge_cursor by_cpu;
	sqlite3_stmt *st = NULL;
	char *sql, name[96];
	int rc, ret;

	if (x->check_ends)
		sql = sqlite3_mprintf("SELECT d.cpu_signal, d.wait_id FROM deps d JOIN fence_ops w "
				      "ON w.id = d.wait_id WHERE d.signal_id IS NULL AND "
				      "d.cpu_signal IS NOT NULL%s ORDER BY d.cpu_signal, d.wait_id",
				      x->op_pred_w);
	else
		sql = sqlite3_mprintf("SELECT cpu_signal, wait_id FROM deps WHERE signal_id IS NULL AND "
				      "cpu_signal IS NOT NULL ORDER BY cpu_signal, wait_id");
	if ((ret = cursor_open(x->err, &by_cpu, x->db, sql)) < 0)
		goto out;
	sql = sqlite3_mprintf("SELECT c.id, c.thread, c.fence, c.value, c.ts_ns FROM cpu_signals c "
			      "WHERE 1%s ORDER BY c.id",
			      x->cpu_pred_c);
	if (!sql) {
		ret = oom(x);
		goto out;
	}
	rc = sqlite3_prepare_v2(x->db, sql, -1, &st, NULL);
	sqlite3_free(sql);
	if (rc != SQLITE_OK) {
		ret = sql_fail(x, "reading cpu_signals");
		goto out;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct nf_xevent e;
		int64_t id = sqlite3_column_int64(st, 0), ts = sqlite3_column_int64(st, 4);

		memset(&e, 0, sizeof(e));
		e.stall_ts = -1;
		e.instant = 1;
		ret = col_null(st, 1) ? session_track(x, ts, ts, &e.track)
				      : thread_track(x, sqlite3_column_int64(st, 1), ts, ts, &e.track);
		if (ret < 0)
			goto out;
		op_name(name, "cpu signal", st, 2);
		e.ts = e.end = ts;
		e.name = name;
		e.cat = "cpu_signal";
		arg_int(&e, "cpu signal id", id);
		if (!col_null(st, 2))
			arg_hex(&e, "fence", sqlite3_column_int64(st, 2));
		if (!col_null(st, 3))
			arg_int(&e, "value", sqlite3_column_int64(st, 3));
		if ((ret = cursor_collect(&fb, &by_cpu, id)) < 0)
			goto out;
		e.flows_out = fb.v;
		e.n_flows_out = fb.n;
		if ((ret = emit(x, &e)) < 0)
			goto out;
	}
	ret = rc == SQLITE_DONE ? 0 : sql_fail(x, "reading cpu_signals");
out:
	sqlite3_finalize(st);
	sqlite3_finalize(by_cpu.st);
	free(fb.v);
	return ret;
}
