/*
 * The GPU operations of the page, in two passes over fence_ops: pass 1 counts
 * every operation of the window into its row's summary bins and a fine
 * histogram of start times (from which the detail cut and the next window are
 * found), pass 2 writes the details of the operations before the cut, each
 * wait with the signal that released it (deps, merged by wait id) and its
 * stall; then the CPU waits and signals before the cut and the anomalies.
 */
#include "html_int.h"
#include "contract/errors.h"
#include "contract/sattime.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bin_of(const struct html *h, int64_t t, int nbins)
{
	/* in floating point: a window may span most of int64 */
	double b = ((double)t - (double)h->t0) * nbins / ((double)h->t1 - (double)h->t0);

	return b < 0 ? 0 : b >= nbins ? nbins - 1 : (int)b;
}

/* The start of an operation for placing it: queued, else observed, else end. */
#define OP_START "coalesce(queued_ns, observed_ns, end_ns)"
/* In the window: starts in it, or started before and ends (or is open) after t0. */
#define OP_IN_WINDOW                                                                              \
	OP_START " <= ?2 AND coalesce(end_ns, observed_ns, queued_ns) >= ?1"

/* Pass 1: summaries, the histogram of starts, thread -> process. */
int pass_counts(struct html *h)
{
	sqlite3_stmt *st;
	char *sql;
	size_t qhint = 0, thint = 0;
	int rc;

	sql = sqlite3_mprintf("SELECT queue, op = 'wait', " OP_START ", thread, handle, id "
			      "FROM fence_ops NOT INDEXED WHERE queue IS NOT NULL AND " OP_IN_WINDOW
			      "%s%s",
			      h->in_q, h->in_f);
	if ((rc = prepare_owned(h, sql, &st, "reading operations")) < 0)
		return rc;
	sqlite3_bind_int64(st, 1, h->t0);
	sqlite3_bind_int64(st, 2, h->t1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t r = find_row(h, ROW_QUEUE, sqlite3_column_int64(st, 0), &qhint);
		int64_t start = sqlite3_column_int64(st, 2);

		if (r < 0)
			continue;
		h->n_ops++;
		h->rows[r].bins[bin_of(h, start, NF_HTML_BINS) * 3 + (sqlite3_column_int(st, 1) ? 0 : 1)]++;
		{
			int hb = bin_of(h, start, HIST_BINS);
			int64_t id = sqlite3_column_int64(st, 5);

			h->hist[hb]++;
			if (id < h->hist_id[2 * hb])
				h->hist_id[2 * hb] = id;
			if (id > h->hist_id[2 * hb + 1])
				h->hist_id[2 * hb + 1] = id;
		}
		if (sqlite3_column_type(st, 3) != SQLITE_NULL && sqlite3_column_type(st, 4) != SQLITE_NULL) {
			int64_t t = find_row(h, ROW_THREAD, sqlite3_column_int64(st, 3), &thint);

			if (t >= 0 && h->rows[t].process < 0)
				h->rows[t].process = handle_process(h, sqlite3_column_int64(st, 4));
		}
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return sql_fail(h, "reading operations");

	sql = sqlite3_mprintf("SELECT thread, start_ns FROM cpu_waits WHERE thread IS NOT NULL "
			      "AND start_ns <= ?2 AND coalesce(end_ns, start_ns) >= ?1%s",
			      h->in_f);
	if ((rc = prepare_owned(h, sql, &st, "reading CPU waits")) < 0)
		return rc;
	sqlite3_bind_int64(st, 1, h->t0);
	sqlite3_bind_int64(st, 2, h->t1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t t = find_row(h, ROW_THREAD, sqlite3_column_int64(st, 0), &thint);

		if (t >= 0)
			h->rows[t].bins[bin_of(h, sqlite3_column_int64(st, 1), NF_HTML_BINS) * 3 + 2]++;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return sql_fail(h, "reading CPU waits");
	return 0;
}

/* The time at the start of histogram bin b. */
static int64_t hist_time(const struct html *h, int b)
{
	return nf_time_add(h->t0, nf_time_from_double(((double)h->t1 - (double)h->t0) * b / HIST_BINS));
}

/* The detail cut: whole histogram bins from t0 holding at most max_ops operations. */
void find_cut(struct html *h, int64_t max_ops)
{
	int64_t sum = 0;
	int b = 0, b2;

	h->lo_id = INT64_MAX;
	h->hi_id = INT64_MIN;
	if (h->n_ops <= max_ops) {
		h->cut = nf_time_add(h->t1, 1); /* saturated: every start is below INT64_MAX but one at it */
		h->detail_full = 1;
		b = HIST_BINS;
	} else {
		while (b < HIST_BINS && sum + h->hist[b] <= max_ops)
			sum += h->hist[b++];
		if (b == 0)
			b = 1;  /* one bin holds more: take it, pass 2 stops at max_ops */
		h->cut = hist_time(h, b);
	}
	for (int k = 0; k < b; k++) {
		if (!h->hist[k])
			continue;
		if (h->hist_id[2 * k] < h->lo_id)
			h->lo_id = h->hist_id[2 * k];
		if (h->hist_id[2 * k + 1] > h->hi_id)
			h->hi_id = h->hist_id[2 * k + 1];
	}
	if (h->detail_full)
		return;
	sum = 0;
	b2 = b;
	while (b2 < HIST_BINS && sum + h->hist[b2] <= max_ops)
		sum += h->hist[b2++];
	if (b2 == b)
		b2 = b + 1;
	h->next_to = b2 >= HIST_BINS ? h->t1 : hist_time(h, b2);
}

/* Pass 2: the details of the operations before the cut. */
int pass_details(struct html *h, int64_t max_ops)
{
	sqlite3_stmt *st, *dp;
	char *sql;
	size_t qhint = 0, thint = 0;
	int rc, drc;
	int64_t dep_wait = -1;

	sql = sqlite3_mprintf("SELECT id, queue, op = 'wait', fence, value, queued_ns, observed_ns, "
			      "end_ns, status, thread FROM fence_ops WHERE queue IS NOT NULL "
			      "AND " OP_IN_WINDOW " AND " OP_START " < ?3 AND id BETWEEN ?4 AND ?5%s%s",
			      h->in_q, h->in_f);
	if ((rc = prepare_owned(h, sql, &st, "reading operations")) < 0)
		return rc;
	/* Only the deps of the detailed range are sorted (deps has no index by wait_id). */
	if (sqlite3_prepare_v2(h->db, "SELECT wait_id, signal_id, cpu_signal, stall_ns FROM deps "
				      "WHERE wait_id BETWEEN ?1 AND ?2 ORDER BY wait_id",
			       -1, &dp, NULL) != SQLITE_OK) {
		sqlite3_finalize(st);
		return sql_fail(h, "reading deps");
	}
	sqlite3_bind_int64(st, 1, h->t0);
	sqlite3_bind_int64(st, 2, h->t1);
	sqlite3_bind_int64(st, 3, h->cut);
	sqlite3_bind_int64(st, 4, h->lo_id);
	sqlite3_bind_int64(st, 5, h->hi_id);
	sqlite3_bind_int64(dp, 1, h->lo_id);
	sqlite3_bind_int64(dp, 2, h->hi_id);
	drc = SQLITE_ROW;
	put(h, "\"ops\":[");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		int64_t r = find_row(h, ROW_QUEUE, sqlite3_column_int64(st, 1), &qhint);
		int64_t t = -1;
		const unsigned char *status = sqlite3_column_text(st, 8);
		int is_wait = sqlite3_column_int(st, 2);

		if (r < 0)
			continue;
		if (h->n_detail >= max_ops)
			break;
		/* deps is in wait id order, fence_ops in id order: a merge. */
		while (drc == SQLITE_ROW && dep_wait < id) {
			drc = sqlite3_step(dp);
			dep_wait = drc == SQLITE_ROW ? sqlite3_column_int64(dp, 0) : INT64_MAX;
		}
		if (sqlite3_column_type(st, 9) != SQLITE_NULL)
			t = find_row(h, ROW_THREAD, sqlite3_column_int64(st, 9), &thint);
		if (h->n_detail++)
			put(h, ",\n");
		/* [id,row,wait,fence,value,queued,observed,end,status,thread row,signal,cpu signal,stall] */
		fputc('[', h->f);
		put_i64(h, id);
		fputc(',', h->f);
		put_i64(h, r);
		fputc(',', h->f);
		put_i64(h, is_wait);
		fputc(',', h->f);
		put_col(h, st, 3);
		fputc(',', h->f);
		put_col(h, st, 4);
		fputc(',', h->f);
		put_time(h, st, 5);
		fputc(',', h->f);
		put_time(h, st, 6);
		fputc(',', h->f);
		put_time(h, st, 7);
		fputc(',', h->f);
		put_str(h, status ? (const char *)status : "");
		fputc(',', h->f);
		put_i64(h, t);
		if (is_wait && drc == SQLITE_ROW && dep_wait == id) {
			fputc(',', h->f);
			put_col(h, dp, 1);
			fputc(',', h->f);
			put_col(h, dp, 2);
			fputc(',', h->f);
			put_col(h, dp, 3);
		}
		fputc(']', h->f);
	}
	sqlite3_finalize(dp);
	sqlite3_finalize(st);
	put(h, "],\n");
	if ((rc != SQLITE_DONE && rc != SQLITE_ROW) || (drc != SQLITE_ROW && drc != SQLITE_DONE))
		return sql_fail(h, "reading operations");
	if (rc == SQLITE_ROW)
		h->detail_full = 0;
	return 0;
}

int write_cpu(struct html *h)
{
	sqlite3_stmt *st;
	char *sql;
	size_t thint = 0;
	int rc, first = 1;

	sql = sqlite3_mprintf("SELECT id, thread, fence, value, start_ns, end_ns, status FROM cpu_waits "
			      "WHERE thread IS NOT NULL AND start_ns <= ?2 AND "
			      "coalesce(end_ns, start_ns) >= ?1 AND start_ns < ?3%s ORDER BY id",
			      h->in_f);
	if ((rc = prepare_owned(h, sql, &st, "reading CPU waits")) < 0)
		return rc;
	sqlite3_bind_int64(st, 1, h->t0);
	sqlite3_bind_int64(st, 2, h->t1);
	sqlite3_bind_int64(st, 3, h->cut);
	put(h, "\"cpuWaits\":[");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t t = find_row(h, ROW_THREAD, sqlite3_column_int64(st, 1), &thint);
		const unsigned char *status = sqlite3_column_text(st, 6);

		if (t < 0)
			continue;
		put(h, first ? "[" : ",\n[");
		first = 0;
		h->n_cpu_waits++;
		put_col(h, st, 0);
		fputc(',', h->f);
		put_i64(h, t);
		fputc(',', h->f);
		put_col(h, st, 2);
		fputc(',', h->f);
		put_col(h, st, 3);
		fputc(',', h->f);
		put_time(h, st, 4);
		fputc(',', h->f);
		put_time(h, st, 5);
		fputc(',', h->f);
		put_str(h, status ? (const char *)status : "");
		fputc(']', h->f);
	}
	sqlite3_finalize(st);
	put(h, "],\n");
	if (rc != SQLITE_DONE)
		return sql_fail(h, "reading CPU waits");

	sql = sqlite3_mprintf("SELECT id, thread, fence, value, ts_ns FROM cpu_signals "
			      "WHERE thread IS NOT NULL AND ts_ns >= ?1 AND ts_ns <= ?2 AND ts_ns < ?3%s "
			      "ORDER BY id",
			      h->in_f);
	if ((rc = prepare_owned(h, sql, &st, "reading CPU signals")) < 0)
		return rc;
	sqlite3_bind_int64(st, 1, h->t0);
	sqlite3_bind_int64(st, 2, h->t1);
	sqlite3_bind_int64(st, 3, h->cut);
	first = 1;
	put(h, "\"cpuSignals\":[");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t t = find_row(h, ROW_THREAD, sqlite3_column_int64(st, 1), &thint);

		if (t < 0)
			continue;
		put(h, first ? "[" : ",\n[");
		first = 0;
		h->n_cpu_signals++;
		put_col(h, st, 0);
		fputc(',', h->f);
		put_i64(h, t);
		fputc(',', h->f);
		put_col(h, st, 2);
		fputc(',', h->f);
		put_col(h, st, 3);
		fputc(',', h->f);
		put_time(h, st, 4);
		fputc(']', h->f);
	}
	sqlite3_finalize(st);
	put(h, "],\n");
	if (rc != SQLITE_DONE)
		return sql_fail(h, "reading CPU signals");
	return 0;
}

/* Anomalies of the window (all of them, not only before the cut: they are few). */
int write_anomalies(struct html *h)
{
	sqlite3_stmt *st;
	char *sql;
	size_t qhint = 0;
	int rc, first = 1;

	sql = sqlite3_mprintf("SELECT kind, queue, log, first_ns, last_ns, lost_entries, detail "
			      "FROM anomalies WHERE queue IS NOT NULL AND "
			      "coalesce(last_ns, first_ns) >= ?1 AND coalesce(first_ns, last_ns) <= ?2%s "
			      "ORDER BY id",
			      h->in_q);
	if ((rc = prepare_owned(h, sql, &st, "reading anomalies")) < 0)
		return rc;
	sqlite3_bind_int64(st, 1, h->t0);
	sqlite3_bind_int64(st, 2, h->t1);
	put(h, "\"anomalies\":[");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t r = find_row(h, ROW_QUEUE, sqlite3_column_int64(st, 1), &qhint);
		const unsigned char *s;

		if (r < 0)
			continue;
		if (h->n_anomalies >= MAX_ANOMALIES) {
			h->n_anomalies++;
			continue;
		}
		put(h, first ? "[" : ",\n[");
		first = 0;
		h->n_anomalies++;
		s = sqlite3_column_text(st, 0);
		put_str(h, s ? (const char *)s : "");
		fputc(',', h->f);
		put_i64(h, r);
		fputc(',', h->f);
		s = sqlite3_column_text(st, 2);
		put_str(h, s ? (const char *)s : "");
		fputc(',', h->f);
		put_time(h, st, 3);
		fputc(',', h->f);
		put_time(h, st, 4);
		fputc(',', h->f);
		put_col(h, st, 5);
		fputc(',', h->f);
		s = sqlite3_column_text(st, 6);
		put_str(h, s ? (const char *)s : "");
		fputc(']', h->f);
	}
	sqlite3_finalize(st);
	put(h, "],\n");
	if (rc != SQLITE_DONE)
		return sql_fail(h, "reading anomalies");
	return 0;
}

/* What the capture does not cover (view coverage_gaps): [row or null (every
 * row), from, to, what], in the window; a gap of a queue not drawn is left out. */
int write_gaps(struct html *h)
{
	sqlite3_stmt *st = NULL;
	size_t qhint = 0;
	int rc, first = 1;

	if ((rc = prepare_owned(h, sqlite3_mprintf("SELECT queue, from_ns, to_ns, what FROM coverage_gaps "
						   "WHERE to_ns >= ?1 AND from_ns <= ?2 ORDER BY to_ns DESC, queue, what"),
				&st, "reading coverage gaps")) < 0)
		return rc;
	sqlite3_bind_int64(st, 1, h->t0);
	sqlite3_bind_int64(st, 2, h->t1);
	put(h, "\"gaps\":[");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t r = -1;
		const unsigned char *s = sqlite3_column_text(st, 3);

		if (sqlite3_column_type(st, 0) != SQLITE_NULL &&
		    (r = find_row(h, ROW_QUEUE, sqlite3_column_int64(st, 0), &qhint)) < 0)
			continue;
		put(h, first ? "[" : ",\n[");
		first = 0;
		if (r < 0)
			put(h, "null");
		else
			put_i64(h, r);
		fputc(',', h->f);
		put_time(h, st, 1);
		fputc(',', h->f);
		put_time(h, st, 2);
		fputc(',', h->f);
		put_str(h, s ? (const char *)s : "");
		fputc(']', h->f);
	}
	sqlite3_finalize(st);
	put(h, "],\n");
	if (rc != SQLITE_DONE)
		return sql_fail(h, "reading coverage gaps");
	return 0;
}
