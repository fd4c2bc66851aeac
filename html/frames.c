/*
 * The frames (nftrace frames) for the page's display rows, frame-time plot
 * and frame paths, read through the views display_blanks, display_flips,
 * display_frames and frame_path_lanes (schemas/timeline-views.sql) and the
 * displays table: no source is named here.
 */
#include "html_int.h"

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

/* Notes a kind cut at NF_HTML_MAX_EXTRA (named in the page). */
static void cut_note(struct html *h, const char *kind)
{
	size_t n = strlen(h->cut_kinds);

	snprintf(h->cut_kinds + n, sizeof(h->cut_kinds) - n, "%s%s", n ? "," : "", kind);
}

/* A lane row by its lanes.lane key, or -1. */
static int64_t lane_row(const struct html *h, const char *lane)
{
	for (size_t i = h->threads_end; lane && i < h->n_rows; i++)
		if (h->rows[i].kind == ROW_LANE && h->rows[i].lane && !strcmp(h->rows[i].lane, lane))
			return (int64_t)i;
	return -1;
}

/*
 * One statement's rows (bound to the window: ?1, ?2), at most
 * NF_HTML_MAX_EXTRA of them, each column by its kind ('i' integer or null,
 * 't' time, 's' text, 'q' queue row, 'h' thread row, 'l' lane row; a row is
 * -1 when none): "key":[[...],...]; flat: "key":[a,b,a,b,...].
 */
static int write_table(struct html *h, const char *key, const char *sql, const char *cols, int flat)
{
	sqlite3_stmt *st;
	size_t qhint = 0, thint = 0;
	int64_t n = 0;
	int rc;

	put(h, "\"");
	put(h, key);
	put(h, "\":[");
	if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) != SQLITE_OK)
		return sql_fail(h, key);
	sqlite3_bind_int64(st, 1, h->t0);
	sqlite3_bind_int64(st, 2, h->t1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (n >= NF_HTML_MAX_EXTRA) {
			cut_note(h, key);
			break;
		}
		put(h, n++ ? (flat ? "," : ",\n[") : (flat ? "" : "["));
		for (int c = 0; cols[c]; c++) {
			int is_row = cols[c] == 'q' || cols[c] == 'h' || cols[c] == 'l';

			if (c)
				fputc(',', h->f);
			if (sqlite3_column_type(st, c) == SQLITE_NULL && !is_row)
				put(h, "null");
			else if (cols[c] == 't')
				put_time(h, st, c);
			else if (cols[c] == 's')
				put_str(h, (const char *)sqlite3_column_text(st, c));
			else if (cols[c] == 'q')
				put_i64(h, sqlite3_column_type(st, c) == SQLITE_NULL ? -1
					   : find_row(h, ROW_QUEUE, sqlite3_column_int64(st, c), &qhint));
			else if (cols[c] == 'h')
				put_i64(h, sqlite3_column_type(st, c) == SQLITE_NULL ? -1
					   : find_row(h, ROW_THREAD, sqlite3_column_int64(st, c), &thint));
			else if (cols[c] == 'l')
				put_i64(h, lane_row(h, (const char *)sqlite3_column_text(st, c)));
			else
				put_col(h, st, c);
		}
		if (!flat)
			fputc(']', h->f);
	}
	sqlite3_finalize(st);
	put(h, "],\n");
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : sql_fail(h, key);
}

/*
 * The display rows' data, as the static report draws them: "displays"
 * [display, name, frames] with a flip or frame in the window (-1: the frames no
 * display shows, named by their swap chain); "dblanks" flat [t, display];
 * "flips" [display, from (ready, else queued), to (latched; null: never),
 * status, frame, late]; "frames" whose present is in the window [frame,
 * display (-1), present, ready, screen, interval, late (null: not judged),
 * status, swap chain, process, blame, MsGPUBusy, MsGPUWait, MsUntilDisplayed
 * (the three in ns), missed blanks, late_ns, blame_seq, blame_ns, refresh
 * period, its queues' waits (frame_gpu)]; "framePath" their critical paths
 * [frame, start, end, kind, queue row, thread row, lane row, what], in order.
 * None with a queue or fence filter (the static report's rule).
 */
int write_frames(struct html *h)
{
	int ret;

	if (h->o->sel.n_queues > 0 || h->o->sel.n_fences > 0) {
		put(h, "\"displays\":[],\"dblanks\":[],\"flips\":[],\"frames\":[],\"framePath\":[],\n");
		return 0;
	}
	if ((ret = write_table(h, "displays",
			       "SELECT id, name, n FROM ("
			       "SELECT d.display AS id, coalesce(d.name, '') AS name, "
			       "  (SELECT count(*) FROM display_frames f WHERE f.display = d.display) AS n "
			       "FROM displays d WHERE EXISTS (SELECT 1 FROM display_flips l WHERE l.display = d.display "
			       "  AND coalesce(l.done_ns, l.queued_ns) >= ?1 AND l.queued_ns <= ?2) "
			       "OR EXISTS (SELECT 1 FROM display_frames f WHERE f.display = d.display "
			       "  AND f.present_ns BETWEEN ?1 AND ?2) "
			       "UNION ALL SELECT -1, CASE WHEN count(DISTINCT swapchain) = 1 THEN min(swapchain) "
			       "  ELSE count(DISTINCT swapchain) || ' swap chains' END, count(*) FROM display_frames "
			       "  WHERE display IS NULL AND present_ns BETWEEN ?1 AND ?2 HAVING count(*) > 0) "
			       "ORDER BY id = -1, id",
			       "isi", 0)) < 0 ||
	    (ret = write_table(h, "dblanks", "SELECT ts_ns, display FROM display_blanks WHERE ts_ns BETWEEN ?1 AND ?2 "
					     "ORDER BY ts_ns", "ti", 1)) < 0 ||
	    (ret = write_table(h, "flips",
			       "SELECT display, coalesce(ready_ns, queued_ns), done_ns, status, frame, late "
			       "FROM display_flips WHERE display IS NOT NULL AND coalesce(ready_ns, queued_ns) IS NOT NULL "
			       "AND coalesce(ready_ns, queued_ns) <= ?2 AND coalesce(done_ns, ?2) >= ?1 "
			       "ORDER BY display, coalesce(ready_ns, queued_ns), id",
			       "ittsii", 0)) < 0 ||
	    (ret = write_table(h, "frames",
			       "SELECT frame, coalesce(display, -1), present_ns, ready_ns, screen_ns, interval_ns, late, "
			       "status, swapchain, process, blame, MsGPUBusy * 1e6, MsGPUWait * 1e6, MsUntilDisplayed * 1e6, "
			       "missed_blanks, late_ns, blame_seq, blame_ns, refresh_ns, "
			       "(SELECT sum(wait_ns) FROM frame_gpu g WHERE g.frame = f.frame) FROM display_frames f "
			       "WHERE present_ns BETWEEN ?1 AND ?2 ORDER BY frame",
			       "iitttiissisiiiiiiiii", 0)) < 0)
		return ret;
	return write_table(h, "framePath",
			   "SELECT p.frame, p.start_ns, p.end_ns, p.kind, p.queue, p.thread, p.lane, p.what "
			   "FROM display_frames f JOIN frame_path_lanes p ON p.frame = f.frame "
			   "WHERE f.present_ns BETWEEN ?1 AND ?2 ORDER BY p.frame, p.seq",
			   "ittsqhls", 0);
}
