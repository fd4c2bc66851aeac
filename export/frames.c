/*
 * The frames (nftrace frames; views display_flips and display_frames): each
 * flip a slice on its display's "flips" track in the "Display" process, from
 * when it could be shown (its frame's GPU work done, else queued) to when it
 * was latched (not latched: an instant where it could be shown), named "late
 * flip" for a late frame and "dropped flip" for one never shown; each frame a
 * slice on its swap chain's track in the "Frames" process, from its present
 * to its blank (else its GPU work done, else the present), "late frame" when
 * late, with its PresentMon metrics, status and blame in the args. Not with a
 * --queue or --fence filter. Their tracks are made as the items' lanes are
 * (items.c: group_track), the rows read in the same columns.
 */
#include "walk.h"
#include "contract/errors.h"

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

int pass_frames(struct exporter *x)
{
	static const char *const ms_key[] = { "MsBetweenPresents", "MsUntilRenderComplete", "MsUntilDisplayed",
					      "MsGPUBusy", "MsGPUWait" };
	sqlite3_stmt *st = NULL;
	char *sql;
	int rc, ret = 0;

	if (x->opts->sel.n_queues > 0 || x->opts->sel.n_fences > 0 || !has_table(x->db, "display_flips"))
		return 0;
	/* columns 2 and 10 to 14 as group_track reads them: the display's lane in the Display group */
	sql = sqlite3_mprintf("SELECT l.id, l.display, 'flips ' || coalesce(l.display, ''), "
			      "coalesce(l.ready_ns, l.queued_ns), l.done_ns, l.status, l.blank_seq, l.frame, l.late, "
			      "l.queued_ns, 'display ' || (SELECT d.name FROM displays d WHERE d.display = l.display), "
			      "'flips', NULL, 'Display', 1 FROM display_flips l "
			      "WHERE coalesce(l.ready_ns, l.queued_ns) IS NOT NULL AND coalesce(l.ready_ns, l.queued_ns) "
			      "<= %lld AND coalesce(l.done_ns, l.ready_ns, l.queued_ns) >= %lld ORDER BY l.id",
			      (long long)x->t1, (long long)x->t0);
	if ((ret = prepare_owned(x, x->db, sql, &st, "reading flips")) < 0)
		return ret;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t from = sqlite3_column_int64(st, 3), to = col_or(st, 4, from);
		const char *status = col_null(st, 5) ? "" : (const char *)sqlite3_column_text(st, 5);
		struct nf_xevent e;

		memset(&e, 0, sizeof(e));
		e.stall_ts = -1;
		e.instant = col_null(st, 4);
		if (to < from)
			to = from;
		if ((ret = group_track(x, st, 0, from, to, &e.track)) < 0)
			break;
		e.ts = from;
		e.end = to;
		e.name = !strcmp(status, "dropped") ? "dropped flip" : sqlite3_column_int(st, 8) ? "late flip" : "flip";
		e.cat = "flip";
		arg_int(&e, "flip id", sqlite3_column_int64(st, 0));
		if (!col_null(st, 7))
			arg_int(&e, "frame", sqlite3_column_int64(st, 7));
		arg_str(&e, "status", status);
		if (!col_null(st, 6))
			arg_int(&e, "blank seq", sqlite3_column_int64(st, 6));
		if (!col_null(st, 9))
			arg_int(&e, "queued_ns", sqlite3_column_int64(st, 9));
		if ((ret = emit(x, &e)) < 0)
			break;
	}
	if (ret == 0 && rc != SQLITE_DONE)
		ret = sql_fail(x, "reading flips");
	sqlite3_finalize(st);
	if (ret)
		return ret;
	/* a swap chain's lane in the Frames group (after the Display one) */
	sql = sqlite3_mprintf("SELECT frame, swapchain, 'frames ' || coalesce(swapchain, ''), present_ns, "
			      "coalesce(screen_ns, ready_ns, present_ns), status, late, interval_ns, missed_blanks, "
			      "blame, NULL, 'frames of ' || coalesce(nullif(swapchain, ''), '?'), NULL, 'Frames', 2, "
			      "MsBetweenPresents, MsUntilRenderComplete, MsUntilDisplayed, MsGPUBusy, MsGPUWait "
			      "FROM display_frames "
			      "WHERE present_ns <= %lld AND coalesce(screen_ns, ready_ns, present_ns) >= %lld ORDER BY frame",
			      (long long)x->t1, (long long)x->t0);
	if ((ret = prepare_owned(x, x->db, sql, &st, "reading frames")) < 0)
		return ret;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t from = sqlite3_column_int64(st, 3), to = sqlite3_column_int64(st, 4);
		struct nf_xevent e;
		char ms[5][32];

		memset(&e, 0, sizeof(e));
		e.stall_ts = -1;
		if (to < from)
			to = from;
		e.instant = to == from;
		if ((ret = group_track(x, st, 0, from, to, &e.track)) < 0)
			break;
		e.ts = from;
		e.end = to;
		e.name = sqlite3_column_int(st, 6) ? "late frame" : "frame";
		e.cat = "frame";
		arg_int(&e, "frame", sqlite3_column_int64(st, 0));
		arg_str(&e, "status", col_null(st, 5) ? "" : (const char *)sqlite3_column_text(st, 5));
		if (!col_null(st, 7))
			arg_int(&e, "interval_ns", sqlite3_column_int64(st, 7));
		/* PresentMon's metrics, in milliseconds as it writes them */
		for (int k = 0; k < 5; k++)
			if (!col_null(st, 15 + k)) {
				snprintf(ms[k], sizeof(ms[k]), "%.4f", sqlite3_column_double(st, 15 + k));
				arg_str(&e, ms_key[k], ms[k]);
			}
		if (!col_null(st, 8))
			arg_int(&e, "missed blanks", sqlite3_column_int64(st, 8));
		if (!col_null(st, 9))
			arg_str(&e, "blame", (const char *)sqlite3_column_text(st, 9));
		if ((ret = emit(x, &e)) < 0)
			break;
	}
	if (ret == 0 && rc != SQLITE_DONE)
		ret = sql_fail(x, "reading frames");
	sqlite3_finalize(st);
	return ret;
}
