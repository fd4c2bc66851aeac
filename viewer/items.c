/*
 * The items of the window (timeline view items; their kinds, colours and
 * lanes in the layout), in one pass ordered by lane and start:
 * - an item on a lane with a row is a box there: on a lane of its own on one
 *   of ITEM_LEVELS sub-lanes (items of one lane overlap: one is queued while
 *   another runs), the first whose previous item ended before this one was
 *   queued, else the one that frees first; on a node's header row on one.
 *   Its queued part (queued -> started) is shaded, the rest (started ->
 *   ended) solid; an item whose end the capture lacks (end_known 0, even with
 *   a bound) is a short open stub at its start, so that one item whose end
 *   was never recorded does not look like one lasting the rest of the trace,
 *   with a dashed whisker to its bound when the file proves one; an item
 *   whose start the capture lacks is a tick where it was queued;
 * - a point in time on a 'display' lane is a thin line across every row, one
 *   per pixel column and kind (a short tick at the top of the rows when they
 *   are denser than one per 6 pixels);
 * - a point in time on no lane is a tick on its thread's row.
 */
#include "viewer.h"
#include "contract/errors.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract/capbuf.h"

#define ITEM_LEVELS 3
#define OPEN_STUB_W 10.0

static int fail(sqlite3 *db, struct nf_error *err)
{
	return nf_error_set(err, NF_ESQL, "reading items: %s", sqlite3_errmsg(db));
}

static int oom(struct nf_error *err)
{
	return nf_error_set(err, NF_ENOMEM, "out of memory while drawing");
}

/*
 * An item whose end the capture lacks: a short open box (translucent, dashed,
 * with the "no end known" marker) at its start. Not open to the next item or
 * the edge as an operation of unknown end is.
 */
static int open_stub(struct nf_render_scene *s, int kind, double x, double y0, double y1)
{
	double b = x + OPEN_STUB_W;

	if (nf_render_quads_add(&s->rects[NF_RENDER_KB(kind, NF_KB_OPEN)], x, y0, OPEN_STUB_W, y1 - y0) < 0 ||
	    nf_render_quads_add(&s->dashes, x, y0 + 0.5, b, y0 + 0.5) < 0 ||
	    nf_render_quads_add(&s->dashes, x, y1 - 0.5, b, y1 - 0.5) < 0 ||
	    nf_render_quads_add(&s->dashes, b - 0.5, y0, b - 0.5, y1) < 0 ||
	    nf_render_quads_add(&s->marks[NF_MK_UNMATCHED], x + 0.5, (y0 + y1) / 2.0, 4.0, 0) < 0)
		return NF_ENOMEM;
	return 0;
}

/* The sub-lanes of the lane being read: per level a queued-part and an item accumulator. */
struct span_lanes {
	struct nf_render_lane wl[ITEM_LEVELS], jl[ITEM_LEVELS];
	int64_t free_at[ITEM_LEVELS];
	double stub_x[ITEM_LEVELS];  /* where the level's last open stub was drawn */
	int n_init, levels;
	const struct nf_render_row *row;
};

static int span_flush(struct span_lanes *sp, struct nf_render_scene *s)
{
	for (int i = 0; sp->row && i < sp->levels; i++)
		if (nf_render_lane_flush(&sp->wl[i], s) < 0 || nf_render_lane_flush(&sp->jl[i], s) < 0)
			return NF_ENOMEM;
	sp->row = NULL;
	return 0;
}

/* The vertical extent of level i of a span row. */
static void span_extent(const struct span_lanes *sp, int i, double *y0, double *y1)
{
	const struct nf_render_row *row = sp->row;

	if (row->kind == NF_ROW_LANE) {
		double h = (row->h - 6.0) / ITEM_LEVELS, top = row->y + 3.0 + h * i;

		*y0 = top + 0.5;
		*y1 = top + h - 0.5;
	} else {  /* a node's header row: one level under its label */
		*y0 = row->y + 5;
		*y1 = row->y + row->h - 3;
	}
}

static void span_start(struct span_lanes *sp, const struct nf_render_row *row, int kind)
{
	sp->row = row;
	sp->levels = row->kind == NF_ROW_LANE ? ITEM_LEVELS : 1;
	for (int i = 0; i < sp->levels; i++) {
		double y0, y1;

		span_extent(sp, i, &y0, &y1);
		nf_render_lane_reset(&sp->wl[i], y0, y1, NF_RENDER_KB(kind, NF_KB_WAIT), NF_RENDER_KB(kind, NF_KB_WAIT_D),
				     NF_RENDER_KB(kind, NF_KB_EDGE), NF_RENDER_KB(kind, NF_KB_OPEN));
		nf_render_lane_reset(&sp->jl[i], y0, y1, NF_RENDER_KB(kind, NF_KB_FILL), NF_RENDER_KB(kind, NF_KB_D),
				     NF_RENDER_KB(kind, NF_KB_EDGE), NF_RENDER_KB(kind, NF_KB_OPEN));
		sp->free_at[i] = INT64_MIN;
		sp->stub_x[i] = -1e9;
	}
}

/*
 * One item on the span row: values 3 queued, 4 start, 5 end (NULL: unknown),
 * 7 bound (NULL: none) of the item query. An open item holds its sub-lane only at its start: it
 * does not push the rest of the lane's items aside for the rest of the trace.
 */
static int span_item(struct span_lanes *sp, const struct nf_render_layout *lay, struct nf_render_scene *s,
		     int kind, sqlite3_stmt *st)
{
	int has_sub = sqlite3_column_type(st, 3) != SQLITE_NULL;
	int has_start = sqlite3_column_type(st, 4) != SQLITE_NULL;
	int has_fin = sqlite3_column_type(st, 5) != SQLITE_NULL;
	int64_t sub = sqlite3_column_int64(st, 3), start = sqlite3_column_int64(st, 4);
	int64_t fin = sqlite3_column_int64(st, 5), first = has_sub ? sub : start;
	int lv = 0;

	for (int i = 1; i < sp->levels; i++)
		if (sp->free_at[lv] > first && sp->free_at[i] < sp->free_at[lv])
			lv = i;
	sp->free_at[lv] = has_fin ? fin : has_start ? start : sub;
	s->n_items[kind]++;
	if (has_sub && has_start && sub < start &&
	    nf_render_lane_box(&sp->wl[lv], s, nf_render_layout_x(lay, sub), nf_render_layout_x(lay, start), 0) < 0)
		return NF_ENOMEM;
	if (!has_start) {
		/* When it ran is not in the file (its start_reason says why): a tick
		 * where it was queued, no box that would say how long it ran. */
		double y0, y1;

		span_extent(sp, lv, &y0, &y1);
		if (!has_sub)
			return 0;
		return nf_render_quads_add(&s->rects[NF_RENDER_KB(kind, NF_KB_WAIT)], nf_render_layout_x(lay, sub), y0,
					   1.0, y1 - y0) < 0 ? NF_ENOMEM : 0;
	}
	if (!has_fin) {
		double y0, y1, x = nf_render_layout_x(lay, start);
		int rc;

		span_extent(sp, lv, &y0, &y1);
		/* Stubs closer than their width would merge into one long box: a
		 * start tick instead (zoom in to see each stub). */
		if (x - sp->stub_x[lv] < OPEN_STUB_W + 2.0)
			rc = nf_render_quads_add(&s->rects[NF_RENDER_KB(kind, NF_KB_EDGE)], x, y0, 1.0, y1 - y0) < 0
				? NF_ENOMEM : 0;
		else
			rc = open_stub(s, kind, x, y0, y1);
		if (rc)
			return rc;
		if (x - sp->stub_x[lv] >= OPEN_STUB_W + 2.0)
			sp->stub_x[lv] = x;
		/* A bound the file proves: a dashed whisker to it and a tick at it,
		 * never a box (it ended no later than there). */
		if (sqlite3_column_type(st, 7) != SQLITE_NULL) {
			double xb = nf_render_layout_x(lay, sqlite3_column_int64(st, 7)), ym = (y0 + y1) / 2.0;

			if (xb > x + OPEN_STUB_W &&
			    (nf_render_quads_add(&s->dashes, x + OPEN_STUB_W, ym, xb, ym) < 0 ||
			     nf_render_quads_add(&s->rects[NF_RENDER_KB(kind, NF_KB_EDGE)], xb - 0.5, ym - (y1 - y0) / 4.0,
						 1.0, (y1 - y0) / 2.0) < 0))
				return NF_ENOMEM;
		}
		return 0;
	}
	return nf_render_lane_box(&sp->jl[lv], s, nf_render_layout_x(lay, start), nf_render_layout_x(lay, fin), 1);
}

/* Points across the rows: the pixel columns of each kind (x at a column's middle). */
struct line_cols {
	double *x;
	size_t n, cap;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* One line per pixel column, left to right; a short tick where a neighbour is
 * closer than 6 px (a burst in a long capture is ticks, sparse lines stay). */
static int lines_emit(struct line_cols *c, const struct nf_render_layout *lay, struct nf_render_scene *s, int kind)
{
	struct nf_render_quads *q = &s->lines[kind];
	double last = -1.0;

	if (c->n)
		qsort(c->x, c->n, sizeof(*c->x), cmp_double);
	for (size_t i = 0; i < c->n; i++) {
		if (c->x[i] == last)
			continue;
		last = c->x[i];
		if (nf_render_quads_add(q, last, lay->rows_y0, last, lay->rows_y1) < 0)
			return NF_ENOMEM;
	}
	for (size_t i = 0; i < q->n; i++) {
		double x = q->v[i * 4];

		if ((i > 0 && x - q->v[(i - 1) * 4] < 6.0) || (i + 1 < q->n && q->v[(i + 1) * 4] - x < 6.0))
			q->v[i * 4 + 3] = lay->rows_y0 + 8.0;
	}
	return 0;
}

int nf_render_collect_items(sqlite3 *db, const struct nf_render_options *opts,
			    const struct nf_render_layout *lay, struct nf_render_scene *s,
			    struct nf_error *err)
{
	char *qf = nf_render_in_list(opts, NF_SELECTION_QUEUES, "queue");
	char *ff = nf_render_in_list(opts, NF_SELECTION_FENCES, "fence");
	/* In the window: queued or started by its end, and ended after its start;
	 * an item of unknown end (a bound is no end) only when it started in it. */
	char *sql = qf && ff ? sqlite3_mprintf(
		"SELECT lane, thread, kind, queued_ns, start_ns, end_ns, instant, bound_ns FROM items "
		"WHERE coalesce(queued_ns, start_ns) <= ?2 AND (end_ns >= ?1 OR "
		"(end_ns IS NULL AND coalesce(start_ns, queued_ns) >= ?1))%s%s "
		"ORDER BY lane, CASE WHEN lane IS NULL THEN thread END, coalesce(start_ns, queued_ns), id",
		qf, ff) : NULL;
	struct line_cols lines[NF_RENDER_MAX_KINDS];
	struct span_lanes sp;
	const struct nf_render_row *trow = NULL;
	sqlite3_stmt *st = NULL;
	char *cur_lane = NULL, cur_kind[32] = "";
	int64_t cur_thread = 0;
	int rc, ret = 0, lane = -1, kind = -1, have_thread = 0;
	double last_tick = -1.0;

	memset(lines, 0, sizeof(lines));
	memset(&sp, 0, sizeof(sp));
	if (!sql)
		goto out_oom;
	for (; sp.n_init < ITEM_LEVELS; sp.n_init++) {
		if (nf_render_lane_init(&sp.wl[sp.n_init], lay) < 0)
			goto out_oom;
		if (nf_render_lane_init(&sp.jl[sp.n_init], lay) < 0) {
			nf_render_lane_release(&sp.wl[sp.n_init]);
			goto out_oom;
		}
	}
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		ret = fail(db, err);
		goto out;
	}
	sqlite3_bind_int64(st, 1, lay->t0);
	sqlite3_bind_int64(st, 2, lay->t1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *key = (const char *)sqlite3_column_text(st, 0);
		const char *k = (const char *)sqlite3_column_text(st, 2);
		double x;

		if (!k || strncmp(k, cur_kind, sizeof(cur_kind))) {
			snprintf(cur_kind, sizeof(cur_kind), "%s", k ? k : "");
			kind = nf_render_layout_kind(lay, k);
		}
		if (key && (!cur_lane || strcmp(key, cur_lane))) {
			if (span_flush(&sp, s) < 0)
				goto out_oom;
			free(cur_lane);
			if (!(cur_lane = strdup(key)))
				goto out_oom;
			lane = nf_render_layout_lane(lay, key);
			if (lane >= 0 && kind >= 0 && !lay->lanes[lane].display) {
				const struct nf_render_row *row = nf_render_layout_lane_row(lay, lane);

				if (row)
					span_start(&sp, row, kind);
			}
		}
		if (kind < 0)
			continue;
		x = nf_render_layout_x(lay, sqlite3_column_int64(st, 4));
		if (!key || sqlite3_column_int(st, 6) != 0) {
			/* A point in time: across the rows (a display lane), else a tick on its row. */
			const struct nf_render_row *row;

			if (key && lane >= 0 && lay->lanes[lane].display) {
				struct line_cols *c = &lines[kind];

				s->n_items[kind]++;
				if (nf_array_reserve((void **)&c->x, &c->cap, c->n + 1, sizeof(*c->x), 256,
						     NF_RENDER_MAX_QUADS))
					goto out_oom;
				c->x[c->n++] = floor(x) + 0.5;
				continue;
			}
			if (key) {
				row = sp.row;
			} else {
				int64_t thread = sqlite3_column_int64(st, 1);

				if (!have_thread || thread != cur_thread || sqlite3_column_type(st, 1) == SQLITE_NULL) {
					have_thread = 1;
					cur_thread = thread;
					trow = sqlite3_column_type(st, 1) == SQLITE_NULL ? NULL
					       : nf_render_layout_thread(lay, thread);
					last_tick = -1.0;
				}
				row = trow;
			}
			if (!row)
				continue;
			s->n_items[kind]++;
			if (x - last_tick < 1.0)
				continue; /* one tick per pixel column */
			last_tick = x;
			if (nf_render_quads_add(&s->rects[NF_RENDER_KB(kind, NF_KB_TICK)], x - 0.75, row->y + 2.0, 1.5,
						9.0) < 0)
				goto out_oom;
			continue;
		}
		if (sp.row && span_item(&sp, lay, s, kind, st) < 0)
			goto out_oom;
	}
	if (rc != SQLITE_DONE) {
		ret = fail(db, err);
		goto out;
	}
	if (span_flush(&sp, s) < 0)
		goto out_oom;
	for (int k = 0; k < lay->n_kinds; k++)
		if (lines_emit(&lines[k], lay, s, k) < 0)
			goto out_oom;
	goto out;
out_oom:
	ret = oom(err);
out:
	sqlite3_finalize(st);
	sqlite3_free(sql);
	sqlite3_free(qf);
	sqlite3_free(ff);
	free(cur_lane);
	for (int k = 0; k < NF_RENDER_MAX_KINDS; k++)
		free(lines[k].x);
	for (int i = 0; i < sp.n_init; i++) {
		nf_render_lane_release(&sp.wl[i]);
		nf_render_lane_release(&sp.jl[i]);
	}
	return ret;
}
