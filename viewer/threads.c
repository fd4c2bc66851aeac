/*
 * The CPU thread rows besides their waits and signals (viewer.h,
 * nf_render_collect_threads): each thread's runs from cpu_runs as a thin dark
 * bar along the bottom of its row, under its CPU waits; the deps of fence
 * waits made by a thread (fence_ops 'wait' rows with a thread and no queue) as
 * arrows from the releasing signal's end to the wait's end; and the events the
 * recorder lost as hatched marks on the CPU threads header. A run that was
 * already going when the trace began starts at the session start; one still
 * going at the end lasts to the session end: the trace says no more.
 */
#include "viewer.h"
#include "contract/errors.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract/capbuf.h"

#define TR_BAR_H 5.0

static int tr_fail(sqlite3 *db, struct nf_error *err, const char *what)
{
	return nf_error_set(err, NF_ESQL, "%s: %s", what, sqlite3_errmsg(db));
}

static int tr_runs(sqlite3 *db, const struct nf_render_layout *lay, struct nf_render_scene *s,
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
		ret = tr_fail(db, err, "reading cpu_runs");
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

				nf_render_lane_reset(&lane, y1 - TR_BAR_H, y1, NF_RB_CPUWAIT_EDGE,
						     NF_RB_CPUWAIT_D, NF_RB_CPUWAIT_EDGE, NF_RB_OPEN_CPU);
			}
		}
		if (!row || b < a)
			continue;
		if (nf_render_lane_box(&lane, s, nf_render_layout_x(lay, a), nf_render_layout_x(lay, b), 0) < 0)
			goto out_oom;
	}
	if (rc != SQLITE_DONE) {
		ret = tr_fail(db, err, "reading cpu_runs");
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

static int tr_links(sqlite3 *db, const struct nf_render_layout *lay, struct nf_render_scene *s,
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
	 * Without fence waits of threads (every GPU-log session) there is nothing
	 * to join. Each such wait is also a cpu_waits row without an adapter (the
	 * runtime's CPU waits have one), and cpu_waits is small: probing it
	 * costs less than a pass over fence_ops or every dependency.
	 */
	if (sqlite3_prepare_v2(db, "SELECT 1 FROM cpu_waits WHERE adapter IS NULL LIMIT 1", -1, &st,
			       NULL) != SQLITE_OK)
		return tr_fail(db, err, "reading CPU waits");
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	st = NULL;
	if (rc == SQLITE_DONE)
		return 0;
	if (rc != SQLITE_ROW)
		return tr_fail(db, err, "reading CPU waits");
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return tr_fail(db, err, "reading deps of CPU waits");
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
		ret = tr_fail(db, err, "reading deps of CPU waits");
	sqlite3_finalize(st);
	return ret;
}

/*
 * Events the recorder lost (view lost_events: on no queue, per CPU or buffer):
 * a hatched mark across the CPU threads header at the time, with "lost N"
 * next to it, like a log overrun on a queue row.
 */
static int tr_lost(sqlite3 *db, const struct nf_render_layout *lay, struct nf_render_scene *s,
		   struct nf_error *err)
{
	static const char sql[] = "SELECT ts_ns, lost FROM lost_events "
				  "WHERE ts_ns >= ?1 AND ts_ns <= ?2 ORDER BY ts_ns";
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
		return tr_fail(db, err, "reading lost events");
	sqlite3_bind_int64(st, 1, lay->t0);
	sqlite3_bind_int64(st, 2, lay->t1);
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
		ret = tr_fail(db, err, "reading lost events");
	sqlite3_finalize(st);
	return ret;
}

int nf_render_collect_threads(sqlite3 *db, const struct nf_render_options *opts,
			      const struct nf_render_layout *lay, struct nf_render_scene *s,
			      struct nf_error *err)
{
	int ret = 0;

	/* Runs belong to no fence: a fence filter leaves them out. */
	if (opts->sel.n_fences == 0)
		ret = tr_runs(db, lay, s, err);
	ret = ret ? ret : tr_links(db, lay, s, err);
	return ret ? ret : tr_lost(db, lay, s, err);
}
