/*
 * Kernel rows (see kernel_rows.h; jobs, vblanks and markers further down): each
 * thread's runs from cpu_runs as a thin
 * dark bar along the bottom of its CPU row, under its CPU waits, and the
 * deps of kernel CPU waits (fence_ops 'wait' rows with a thread and no queue)
 * as arrows from the releasing signal's end to the wait's end, and the
 * kernel's lost events as hatched marks on the CPU threads header. A run that was
 * already going when the trace began starts at the session start; one still
 * going at the end lasts to the session end: the trace says no more.
 */
#include "kernel_rows.h"
#include "contract/errors.h"
#include "contract/timeline.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract/anomaly_kinds.h"
#include "contract/capbuf.h"

#define KR_BAR_H 5.0

void nf_render_kernel_thread_name(sqlite3 *db, int64_t thread, char *name, size_t len)
{
	sqlite3_stmt *st = NULL;

	name[0] = '\0';
	if (sqlite3_prepare_v2(db, "SELECT comm FROM kernel_threads WHERE thread = ?1", -1, &st, NULL) !=
	    SQLITE_OK)
		return;
	sqlite3_bind_int64(st, 1, thread);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
		snprintf(name, len, "%s", (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
}

static int kr_fail(sqlite3 *db, struct nf_error *err, const char *what)
{
	return nf_sql_error(db, err, "%s", what);
}

static int kr_runs(sqlite3 *db, const struct nf_render_layout *lay, struct nf_render_scene *s,
		   struct nf_error *err)
{
	static const char sql[] =
		"SELECT thread, start_ns, end_ns FROM cpu_runs WHERE thread IS NOT NULL "
		"AND (end_ns IS NULL OR end_ns >= ?1) AND (start_ns IS NULL OR start_ns <= ?2) "
		"ORDER BY thread, start_ns";
	struct nf_render_lane lane;
	const struct nf_render_row *row = NULL;
	sqlite3_stmt *st = NULL;
	int64_t cur = 0, end_all = lay->session_end > lay->t1 ? lay->t1 : lay->session_end;
	int rc, ret = 0, have_cur = 0;

	if (nf_render_lane_init(&lane, lay) < 0)
		return nf_error_set(err, NF_ENOMEM, "out of memory while drawing");
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		ret = kr_fail(db, err, "reading cpu_runs");
		goto out_release;
	}
	sqlite3_bind_int64(st, 1, lay->t0);
	sqlite3_bind_int64(st, 2, lay->t1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t thread = sqlite3_column_int64(st, 0);
		int64_t a = sqlite3_column_type(st, 1) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 1);
		int64_t b = sqlite3_column_type(st, 2) == SQLITE_NULL ? end_all : sqlite3_column_int64(st, 2);

		if (!have_cur || thread != cur) {
			if (row && nf_render_lane_flush(&lane, s) < 0)
				goto out_oom;
			have_cur = 1;
			cur = thread;
			row = nf_render_layout_thread(lay, thread);
			if (row) {
				double y1 = row->y + row->h - 2.0;

				nf_render_lane_reset(&lane, y1 - KR_BAR_H, y1, NF_RB_CPUWAIT_EDGE,
						     NF_RB_CPUWAIT_D, NF_RB_CPUWAIT_EDGE, NF_RB_OPEN_CPU);
			}
		}
		if (!row || b < a)
			continue;
		if (nf_render_lane_box(&lane, s, nf_render_layout_x(lay, a), nf_render_layout_x(lay, b), 0) < 0)
			goto out_oom;
	}
	if (rc != SQLITE_DONE) {
		ret = kr_fail(db, err, "reading cpu_runs");
		goto out_release;
	}
	if (row && nf_render_lane_flush(&lane, s) < 0)
		goto out_oom;
	goto out_release;
out_oom:
	ret = nf_error_set(err, NF_ENOMEM, "out of memory while drawing");
out_release:
	sqlite3_finalize(st);
	nf_render_lane_release(&lane);
	return ret;
}

static int kr_links(sqlite3 *db, const struct nf_render_layout *lay, struct nf_render_scene *s,
		    struct nf_error *err)
{
	static const char sql[] =
		"SELECT sg.queue, sg.end_ns, w.thread, w.end_ns FROM deps d "
		"JOIN fence_ops w ON w.id = d.wait_id JOIN fence_ops sg ON sg.id = d.signal_id "
		"WHERE w.queue IS NULL AND w.thread IS NOT NULL AND sg.end_ns IS NOT NULL "
		"AND w.end_ns IS NOT NULL AND max(sg.end_ns, w.end_ns) >= ?1 AND min(sg.end_ns, w.end_ns) <= ?2";
	sqlite3_stmt *st = NULL;
	int rc, ret = 0;

	/*
	 * Without kernel CPU waits (every GPU-log session) there is nothing to
	 * join. Each kernel wait is also a cpu_waits row without an adapter (the
	 * runtime's CPU waits have one), and cpu_waits is small: probing it
	 * costs less than a pass over fence_ops or every dependency.
	 */
	if (sqlite3_prepare_v2(db, "SELECT 1 FROM cpu_waits WHERE adapter IS NULL LIMIT 1", -1, &st,
			       NULL) != SQLITE_OK)
		return kr_fail(db, err, "reading CPU waits");
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	st = NULL;
	if (rc == SQLITE_DONE)
		return 0;
	if (rc != SQLITE_ROW)
		return kr_fail(db, err, "reading CPU waits");
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return kr_fail(db, err, "reading deps of CPU waits");
	sqlite3_bind_int64(st, 1, lay->t0);
	sqlite3_bind_int64(st, 2, lay->t1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const struct nf_render_row *from = nf_render_layout_queue(lay, sqlite3_column_int64(st, 0));
		const struct nf_render_row *to = nf_render_layout_thread(lay, sqlite3_column_int64(st, 2));
		double fy0, fy1, ty0, ty1;

		if (!from || !to)
			continue;
		nf_render_lane_extent(from, NF_LANE_SIGNAL, &fy0, &fy1);
		nf_render_lane_extent(to, NF_LANE_CPU, &ty0, &ty1);
		s->n_links++;
		if (nf_render_quads_add(&s->links, nf_render_layout_x(lay, sqlite3_column_int64(st, 1)),
					(fy0 + fy1) / 2.0, nf_render_layout_x(lay, sqlite3_column_int64(st, 3)),
					(ty0 + ty1) / 2.0) < 0) {
			ret = nf_error_set(err, NF_ENOMEM, "out of memory while drawing");
			break;
		}
	}
	if (!ret && rc != SQLITE_DONE)
		ret = kr_fail(db, err, "reading deps of CPU waits");
	sqlite3_finalize(st);
	return ret;
}

/*
 * Events the kernel ring buffer lost (anomalies 'kernel_lost', per CPU, no
 * queue): a hatched mark across the CPU threads header at the time, with
 * "lost N" next to it, like a log overrun on a queue row.
 */
static int kr_lost(sqlite3 *db, const struct nf_render_layout *lay, struct nf_render_scene *s,
		   struct nf_error *err)
{
	static const char sql[] = "SELECT first_ns, lost_entries FROM anomalies WHERE kind = ?3 "
				  "AND first_ns >= ?1 AND first_ns <= ?2 ORDER BY first_ns";
	const struct nf_render_row *head = NULL;
	sqlite3_stmt *st = NULL;
	double label_end = 0.0;
	int rc, ret = 0;

	for (size_t i = 0; i < lay->n_rows && !head; i++)
		if (lay->rows[i].kind == NF_ROW_CPU_HEAD)
			head = &lay->rows[i];
	if (!head)
		return 0;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return kr_fail(db, err, "reading kernel lost events");
	sqlite3_bind_int64(st, 1, lay->t0);
	sqlite3_bind_int64(st, 2, lay->t1);
	sqlite3_bind_text(st, 3, nf_anomaly_name(NF_ANOMALY_KERNEL_LOST), -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		double x = nf_render_layout_x(lay, sqlite3_column_int64(st, 0));
		char text[32];

		s->n_anomalies++;
		if (nf_render_quads_add(&s->rects[NF_RB_LOST_BG], x - 1.5, head->y + 2.0, 3.0, head->h - 4.0) < 0 ||
		    nf_render_quads_add(&s->hatch, x - 1.5, head->y + 2.0, 3.0, head->h - 4.0) < 0) {
			ret = nf_error_set(err, NF_ENOMEM, "out of memory while drawing");
			break;
		}
		if (sqlite3_column_type(st, 1) == SQLITE_NULL)
			snprintf(text, sizeof(text), "lost ?");
		else
			snprintf(text, sizeof(text), "lost %lld", (long long)sqlite3_column_int64(st, 1));
		double w = 6.5 * (double)strlen(text) + 8.0;

		if (x + 4.0 < label_end || x + 4.0 + w > lay->plot_x1)
			continue;
		if (nf_array_reserve((void **)&s->labels, &s->cap_labels, s->n_labels + 1,
				     sizeof(*s->labels), 16, 1000000)) {
			ret = nf_error_set(err, NF_ENOMEM, "out of memory while drawing");
			break;
		}
		/* Labels are centred on x: this one starts just right of the mark. */
		s->labels[s->n_labels].x = x + 4.0 + w / 2.0;
		s->labels[s->n_labels].y = head->y + head->h / 2.0 + 3.5;
		snprintf(s->labels[s->n_labels].text, sizeof(s->labels[0].text), "%s", text);
		s->n_labels++;
		label_end = x + 4.0 + w;
	}
	if (!ret && rc != SQLITE_DONE)
		ret = kr_fail(db, err, "reading kernel lost events");
	sqlite3_finalize(st);
	return ret;
}

/*
 * GPU jobs on their ring's row. Jobs on one ring overlap (the scheduler hands
 * the ring several before the first is done), so each job goes on one of
 * KR_JOB_LEVELS sub-lanes: the first whose previous job (wait included) ended
 * before this one was submitted, else the one that frees first; every job is
 * then its own box at any zoom where it is wider than a pixel. On its sub-lane
 * a job is drawn shaded from submitted to started and solid from started to
 * finished; a job whose finish the trace lacks is open-ended (as an operation
 * of unknown end), and so is one whose finish is only bounded by a later job on
 * its ring or by the start of the whole record (jobs.finish_source 'ring_order',
 * 'recording_start'); one never started an open shaded wait.
 */
#define KR_JOB_LEVELS 3
#define KR_OPEN_STUB_W 10.0

/*
 * A job whose end the trace lacks: a short open box (translucent, dashed, with
 * the "no end known" marker) at its start. Not open to the next job or the
 * edge as an operation of unknown end is: one job whose finish was never
 * recorded would look like a job lasting the rest of the trace.
 */
static int kr_open_stub(struct nf_render_scene *s, double x, double y0, double y1)
{
	double b = x + KR_OPEN_STUB_W;

	if (nf_render_quads_add(&s->rects[NF_RB_OPEN_JOB], x, y0, KR_OPEN_STUB_W, y1 - y0) < 0 ||
	    nf_render_quads_add(&s->dashes, x, y0 + 0.5, b, y0 + 0.5) < 0 ||
	    nf_render_quads_add(&s->dashes, x, y1 - 0.5, b, y1 - 0.5) < 0 ||
	    nf_render_quads_add(&s->dashes, b - 0.5, y0, b - 0.5, y1) < 0 ||
	    nf_render_quads_add(&s->marks[NF_MK_UNMATCHED], x + 0.5, (y0 + y1) / 2.0, 4.0, 0) < 0)
		return NF_ENOMEM;
	return 0;
}

static int kr_jobs(sqlite3 *db, const struct nf_render_layout *lay, struct nf_render_scene *s,
		   struct nf_error *err)
{
	static const char sql[] =
		/* A finish the file does not hold is unknown (its bound, finished_bound_ns, is not a finish). */
		"SELECT driver, coalesce(ring, ''), submitted_ns, started_ns, finished_ns FROM jobs "
		"WHERE coalesce(submitted_ns, started_ns) <= ?2 AND (finished_ns >= ?1 OR "
		"(finished_ns IS NULL AND coalesce(started_ns, submitted_ns) >= ?1)) "
		"ORDER BY driver, coalesce(ring, ''), coalesce(started_ns, submitted_ns), id";
	struct nf_render_lane wl[KR_JOB_LEVELS], jl[KR_JOB_LEVELS];
	int64_t free_at[KR_JOB_LEVELS];
	const struct nf_render_row *row = NULL;
	sqlite3_stmt *st = NULL;
	char cur_d[16] = "", cur_r[96] = "";
	int rc, ret = 0, have = 0, n_init = 0;

	for (; n_init < KR_JOB_LEVELS; n_init++) {
		if (nf_render_lane_init(&wl[n_init], lay) < 0)
			goto out_oom;
		if (nf_render_lane_init(&jl[n_init], lay) < 0) {
			nf_render_lane_release(&wl[n_init]);
			goto out_oom;
		}
	}
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		ret = kr_fail(db, err, "reading jobs");
		goto out_release;
	}
	sqlite3_bind_int64(st, 1, lay->t0);
	sqlite3_bind_int64(st, 2, lay->t1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *d = (const char *)sqlite3_column_text(st, 0);
		const char *r = (const char *)sqlite3_column_text(st, 1);
		int has_sub = sqlite3_column_type(st, 2) != SQLITE_NULL;
		int has_start = sqlite3_column_type(st, 3) != SQLITE_NULL;
		int has_fin = sqlite3_column_type(st, 4) != SQLITE_NULL;
		int64_t sub = sqlite3_column_int64(st, 2), start = sqlite3_column_int64(st, 3);
		int64_t fin = sqlite3_column_int64(st, 4), first = has_sub ? sub : start;
		int lv = 0;

		d = d ? d : "";
		r = r ? r : "";
		if (!have || strncmp(d, cur_d, sizeof(cur_d) - 1) || strncmp(r, cur_r, sizeof(cur_r) - 1)) {
			for (int i = 0; row && i < KR_JOB_LEVELS; i++)
				if (nf_render_lane_flush(&wl[i], s) < 0 || nf_render_lane_flush(&jl[i], s) < 0)
					goto out_oom;
			have = 1;
			snprintf(cur_d, sizeof(cur_d), "%s", d);
			snprintf(cur_r, sizeof(cur_r), "%s", r);
			row = nf_render_layout_ring(lay, cur_d, cur_r);
			for (int i = 0; row && i < KR_JOB_LEVELS; i++) {
				double h = (row->h - 6.0) / KR_JOB_LEVELS, y0 = row->y + 3.0 + h * i;

				nf_render_lane_reset(&wl[i], y0 + 0.5, y0 + h - 0.5, NF_RB_JOBWAIT, NF_RB_JOBWAIT_D,
						     NF_RB_JOB_EDGE, NF_RB_OPEN_JOB);
				nf_render_lane_reset(&jl[i], y0 + 0.5, y0 + h - 0.5, NF_RB_JOB, NF_RB_JOB_D,
						     NF_RB_JOB_EDGE, NF_RB_OPEN_JOB);
				free_at[i] = INT64_MIN;
			}
		}
		if (!row)
			continue;
		for (int i = 1; i < KR_JOB_LEVELS; i++)
			if (free_at[lv] > first && free_at[i] < free_at[lv])
				lv = i;
		/* An open job holds its sub-lane only at its start: it does not push the
		 * rest of the ring's jobs aside for the rest of the trace. */
		free_at[lv] = has_fin ? fin : has_start ? start : sub;
		s->n_jobs++;
		if (has_sub && has_start && sub < start &&
		    nf_render_lane_box(&wl[lv], s, nf_render_layout_x(lay, sub), nf_render_layout_x(lay, start), 0) < 0)
			goto out_oom;
		if (!has_start || !has_fin) {
			double h = (row->h - 6.0) / KR_JOB_LEVELS, y0 = row->y + 3.0 + h * lv;

			if (kr_open_stub(s, nf_render_layout_x(lay, has_start ? start : sub), y0 + 0.5, y0 + h - 0.5))
				goto out_oom;
			continue;
		}
		if (nf_render_lane_box(&jl[lv], s, nf_render_layout_x(lay, start), nf_render_layout_x(lay, fin), 1) < 0)
			goto out_oom;
	}
	if (rc != SQLITE_DONE) {
		ret = kr_fail(db, err, "reading jobs");
		goto out_release;
	}
	for (int i = 0; row && i < KR_JOB_LEVELS; i++)
		if (nf_render_lane_flush(&wl[i], s) < 0 || nf_render_lane_flush(&jl[i], s) < 0)
			goto out_oom;
	goto out_release;
out_oom:
	ret = nf_error_set(err, NF_ENOMEM, "out of memory while drawing");
out_release:
	sqlite3_finalize(st);
	for (int i = 0; i < n_init; i++) {
		nf_render_lane_release(&wl[i]);
		nf_render_lane_release(&jl[i]);
	}
	return ret;
}

/* Vblanks: a thin line across every row; user markers: a tick on their thread's row. */
static int kr_vblanks_markers(sqlite3 *db, const struct nf_render_layout *lay, struct nf_render_scene *s,
			      struct nf_error *err)
{
	sqlite3_stmt *st = NULL;
	int rc, ret = 0;

	if (sqlite3_prepare_v2(db, "SELECT ts_ns FROM vblanks WHERE ts_ns BETWEEN ?1 AND ?2 ORDER BY ts_ns", -1,
			       &st, NULL) != SQLITE_OK)
		return kr_fail(db, err, "reading vblanks");
	sqlite3_bind_int64(st, 1, lay->t0);
	sqlite3_bind_int64(st, 2, lay->t1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		double x = nf_render_layout_x(lay, sqlite3_column_int64(st, 0));

		s->n_vblanks++;
		if (nf_render_quads_add(&s->rects[NF_RB_VBLANK], x - 0.5, lay->rows_y0, 1.0,
					lay->rows_y1 - lay->rows_y0) < 0) {
			sqlite3_finalize(st);
			return nf_error_set(err, NF_ENOMEM, "out of memory while drawing");
		}
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return kr_fail(db, err, "reading vblanks");
	if (sqlite3_prepare_v2(db, "SELECT ts_ns, thread FROM markers WHERE ts_ns BETWEEN ?1 AND ?2 "
				   "ORDER BY thread, ts_ns", -1, &st, NULL) != SQLITE_OK)
		return kr_fail(db, err, "reading markers");
	sqlite3_bind_int64(st, 1, lay->t0);
	sqlite3_bind_int64(st, 2, lay->t1);
	const struct nf_render_row *row = NULL;
	int64_t cur = 0;
	int have = 0;
	double last_x = -1.0;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t thread = sqlite3_column_int64(st, 1);
		double x = nf_render_layout_x(lay, sqlite3_column_int64(st, 0));

		if (!have || thread != cur) {
			have = 1;
			cur = thread;
			row = nf_render_layout_thread(lay, thread);
			last_x = -1.0;
		}
		if (!row)
			continue;
		s->n_markers++;
		if (x - last_x < 1.0)
			continue; /* one tick per pixel column */
		last_x = x;
		if (nf_render_quads_add(&s->rects[NF_RB_MARKER], x - 0.75, row->y + 2.0, 1.5, 9.0) < 0) {
			ret = nf_error_set(err, NF_ENOMEM, "out of memory while drawing");
			break;
		}
	}
	if (!ret && rc != SQLITE_DONE)
		ret = kr_fail(db, err, "reading markers");
	sqlite3_finalize(st);
	return ret;
}

int nf_render_collect_kernel(sqlite3 *db, const struct nf_render_options *opts,
			     const struct nf_render_layout *lay, struct nf_render_scene *s,
			     struct nf_error *err)
{
	int ret = 0;

	if (!opts->fences || opts->n_fences == 0)
		ret = kr_runs(db, lay, s, err);
	ret = ret ? ret : kr_links(db, lay, s, err);
	ret = ret ? ret : kr_lost(db, lay, s, err);
	if (!ret && lay->n_rings)
		ret = kr_jobs(db, lay, s, err);
	return ret ? ret : kr_vblanks_markers(db, lay, s, err);
}
