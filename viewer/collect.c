/*
 * Fills the viewer's scene from the timeline database, streaming: fence
 * operations come in one sequential scan of the table and go through the lane
 * accumulators of their queue's row (all rows' lanes live at once), so memory
 * does not grow with the number of operations. Then CPU waits and
 * signals per thread, anomalies (lost spans and timestamp markers) per queue,
 * and the signal -> wait links of the deps table, deduplicated per pixel (not
 * read further once too dense to draw). Times are never invented: an
 * operation without an end is drawn open until its lane's next operation.
 */
#include "viewer.h"
#include "contract/errors.h"
#include "contract/timeline.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract/anomaly_kinds.h"
#include "contract/capbuf.h"
#include "contract/util_hash.h"

/* Distinct links (by rows and pixel columns) kept at most; the rest are counted. */
#define NF_RENDER_MAX_LINKS 100000
#define NF_RENDER_LINK_SLOTS (1u << 18)

static int sql_fail(sqlite3 *db, struct nf_error *err, const char *what)
{
	return nf_sql_error(db, err, "%s", what);
}

static int oom(struct nf_error *err)
{
	return nf_error_set(err, NF_ENOMEM, "out of memory while drawing");
}

/* Prepares sql built with the filters; binds ?1 = t0 and ?2 = t1. */
static int prepare_window(sqlite3 *db, const struct nf_render_layout *lay, const char *sql,
			  sqlite3_stmt **st, const char *what, struct nf_error *err)
{
	if (!sql)
		return oom(err);
	if (sqlite3_prepare_v2(db, sql, -1, st, NULL) != SQLITE_OK)
		return sql_fail(db, err, what);
	sqlite3_bind_int64(*st, 1, lay->t0);
	sqlite3_bind_int64(*st, 2, lay->t1);
	return 0;
}

static int col_null(sqlite3_stmt *st, int col)
{
	return sqlite3_column_type(st, col) == SQLITE_NULL;
}

/*
 * The lanes of the queue row being streamed: per sub-lane a wait, a stall
 * and a signal accumulator (lanes[0..nw) waits, [nw..2nw) their stalls,
 * [2nw..2nw+ns) signals), and the placement of the two stacks.
 */
struct queue_lanes {
	struct nf_render_lane *lanes;
	int nw, ns;
	struct nf_render_stack sw, ss;
	const struct nf_render_row *row;
};

/* Bytes of accumulators a queue row needs (nf_render_lane: 6 bytes per column). */
static size_t queue_lanes_cost(const struct nf_render_row *row, int ncols)
{
	return (size_t)(2 * row->n_sub[0] + row->n_sub[1]) * 6u * (size_t)ncols;
}

static void queue_lanes_release(struct queue_lanes *q)
{
	for (int i = 0; q->lanes && i < 2 * q->nw + q->ns; i++)
		nf_render_lane_release(&q->lanes[i]);
	free(q->lanes);
	q->lanes = NULL;
	q->nw = q->ns = 0;
	q->row = NULL;
}

static int queue_lanes_flush(struct queue_lanes *q, struct nf_render_scene *s)
{
	int ret;

	if (!q->row)
		return 0;
	for (int i = 0; i < 2 * q->nw + q->ns; i++)
		if ((ret = nf_render_lane_flush(&q->lanes[i], s)) < 0)
			return ret;
	q->row = NULL;
	return 0;
}

static int queue_lanes_start(struct queue_lanes *q, const struct nf_render_layout *lay,
			     const struct nf_render_row *row)
{
	double y0, y1;

	q->nw = row->n_sub[0] > 1 ? row->n_sub[0] : 1;
	q->ns = row->n_sub[1] > 1 ? row->n_sub[1] : 1;
	q->lanes = calloc((size_t)(2 * q->nw + q->ns), sizeof(*q->lanes));
	if (!q->lanes)
		return NF_ENOMEM;
	q->row = row;
	nf_render_stack_reset(&q->sw, lay->max_sub);
	nf_render_stack_reset(&q->ss, lay->max_sub);
	for (int i = 0; i < 2 * q->nw + q->ns; i++) {
		int sig = i >= 2 * q->nw, k = sig ? i - 2 * q->nw : i % q->nw;

		if (nf_render_lane_init(&q->lanes[i], lay) < 0)
			return NF_ENOMEM;
		nf_render_sublane_extent(row, sig ? NF_LANE_SIGNAL : NF_LANE_WAIT, k, &y0, &y1);
		if (sig)
			nf_render_lane_reset(&q->lanes[i], y0, y1, NF_RB_SIGNAL, NF_RB_SIGNAL_D,
					     NF_RB_SIGNAL_EDGE, NF_RB_OPEN_SIGNAL);
		else if (i < q->nw)
			nf_render_lane_reset(&q->lanes[i], y0, y1, NF_RB_WAIT, NF_RB_WAIT_D,
					     NF_RB_WAIT_EDGE, NF_RB_OPEN_WAIT);
		else
			nf_render_lane_reset(&q->lanes[i], y0, y1, NF_RB_STALL, NF_RB_STALL_D,
					     NF_RB_WAIT_EDGE, NF_RB_OPEN_WAIT);
	}
	return 0;
}

static enum nf_render_mk open_marker(const char *status)
{
	if (status && strcmp(status, "lost") == 0)
		return NF_MK_LOST;
	if (status && strcmp(status, "zero_timestamp") == 0)
		return NF_MK_ZERO_OP;
	if (status && strcmp(status, "repeated_timestamp") == 0)
		return NF_MK_REPEAT_OP;
	return NF_MK_UNMATCHED;
}

static int val_null(sqlite3_value *v)
{
	return sqlite3_value_type(v) == SQLITE_NULL;
}

/*
 * One fence operation as the lanes take it, from an SQL row (nf_render_ops_sql)
 * or from an early timeline's row (struct nf_fence_op_row).
 */
struct op_in {
	int64_t queue, start, observed, end, id, thread, fence, value;
	int is_wait, has_start, has_observed, has_end, has_thread, has_fence;
	int with_label;          /* fence and value above are the row's (else looked up by id) */
	const char *status;      /* only when there is no end */
};

/* Box labels kept at most (each needs a box wider than its text). */
#define NF_RENDER_MAX_BOX_LABELS 100000

/* A fence and value label inside a box wide and tall enough (paint.c picks the form that fits). */
static int add_box_label(struct nf_render_scene *s, const struct nf_render_layout *lay, double xa,
			 double xb, double y0, double y1, int on_dark, const struct op_in *op)
{
	struct nf_render_box_label *l;

	if (xa < lay->plot_x0)
		xa = lay->plot_x0;
	if (xb > lay->plot_x1)
		xb = lay->plot_x1;
	/* "0x1=2" at 9 px is about 28 px; a sub-lane under 9 px has no room for text. */
	if (xb - xa < 30.0 || y1 - y0 < 9.0)
		return 0;
	if (s->n_box_labels >= NF_RENDER_MAX_BOX_LABELS) {
		s->box_labels_left_out++;
		return 0;
	}
	if (nf_array_reserve((void **)&s->box_labels, &s->cap_box_labels, s->n_box_labels + 1,
			     sizeof(*s->box_labels), 64, NF_RENDER_MAX_BOX_LABELS))
		return NF_ENOMEM;
	l = &s->box_labels[s->n_box_labels++];
	l->x0 = xa;
	l->x1 = xb;
	l->y0 = y0;
	l->y1 = y1;
	l->on_dark = on_dark;
	l->id = op->id;
	/* From the row itself when it came with them (an early timeline), else by id (label_fences). */
	l->known = op->with_label && op->has_fence;
	l->fence = l->known ? op->fence : 0;
	l->value = l->known ? op->value : 0;
	return 0;
}

/*
 * The fence and value of each labelled box, by id (a rowid lookup each): the
 * scan does not read them for every operation, only the few wide enough to
 * carry a label need them.
 */
static int label_fences(sqlite3 *db, struct nf_render_scene *s, struct nf_error *err)
{
	sqlite3_stmt *st;

	if (!s->n_box_labels || s->needs_stacking || s->early)  /* none, collected again, or known */
		return 0;
	if (sqlite3_prepare_v2(db, "SELECT fence, value FROM fence_ops WHERE id = ?1", -1, &st, NULL) != SQLITE_OK)
		return sql_fail(db, err, "reading labels");
	for (size_t i = 0; i < s->n_box_labels; i++) {
		struct nf_render_box_label *l = &s->box_labels[i];
		int rc;

		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, l->id);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW && !col_null(st, 0) && !col_null(st, 1)) {
			l->fence = sqlite3_column_int64(st, 0);
			l->value = sqlite3_column_int64(st, 1);
			l->known = 1;
		} else if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
			sqlite3_finalize(st);
			return sql_fail(db, err, "reading labels");
		}
	}
	sqlite3_finalize(st);
	return 0;
}

/*
 * One fence operation of a queue: it goes to the sub-lane the stack gives it
 * (its stall with it).
 */
static int add_op(struct queue_lanes *q, const struct nf_render_layout *lay,
		  struct nf_render_scene *s, const struct op_in *op)
{
	int is_wait = op->is_wait, has_end = op->has_end, k;
	struct nf_render_lane *lane;
	int64_t start, end;
	double xa, xb;
	int ret;

	if (is_wait)
		s->n_waits++;
	else
		s->n_signals++;
	if (!op->has_start) {
		s->n_unplaced++;
		return 0;
	}
	start = op->start;
	end = has_end ? op->end : start;
	nf_render_op_span(lay, start, has_end, end, &xa, &xb);
	k = nf_render_stack_place(is_wait ? &q->sw : &q->ss, xa, xb);
	if (k >= (is_wait ? q->nw : q->ns)) {
		/* More depth than the layout has: drawn on its last sub-lane, collected again. */
		s->needs_stacking = 1;
		k = (is_wait ? q->nw : q->ns) - 1;
	}
	lane = is_wait ? &q->lanes[k] : &q->lanes[2 * q->nw + k];
	/* (an early scene draws no links, the sub-lanes' only reader) */
	if ((is_wait ? q->nw : q->ns) > 1 && !s->early && (ret = nf_render_sub_put(s, op->id, k)) < 0)
		return ret;
	if (!has_end) {
		s->n_open++;
		return nf_render_lane_open(lane, s, xa, open_marker(op->status));
	}
	if ((ret = nf_render_lane_box(lane, s, xa, xb, 1)) < 0)
		return ret;
	if ((ret = add_box_label(s, lay, xa, xb, lane->y0, lane->y1, !is_wait, op)) < 0)
		return ret;
	if (is_wait && op->has_observed) {
		int64_t obs = op->observed;

		if (obs < start)
			obs = start;
		if (obs < end &&
		    (ret = nf_render_lane_box(&q->lanes[q->nw + k], s, nf_render_layout_x(lay, obs),
					      nf_render_layout_x(lay, end), 0)) < 0)
			return ret;
	}
	return 0;
}

/* Lane memory kept live at once; beyond it the queues are read in batches. */
#define NF_RENDER_LANE_BUDGET ((size_t)64 << 20)

/*
 * The queue rows of the layout, sorted by handle; lanes for the batch of
 * queues [b0, b1) being read.
 */
struct queue_map {
	int64_t *queue;
	const struct nf_render_row **row;  /* per queue (sorted like queue) */
	struct queue_lanes *lanes;
	size_t n, b0, b1;
	/* CPU thread rows, sorted, and per thread and pixel column what it queued
	 * there: bit 0 a GPU wait, bit 1 a GPU signal. */
	int64_t *thread;
	uint8_t *queued;
	size_t n_threads;
	int ncols;
	double x0;
};

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static struct queue_lanes *queue_map_find(const struct queue_map *m, int64_t queue)
{
	size_t lo = m->b0, hi = m->b1;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->queue[mid] == queue)
			return &m->lanes[mid - m->b0];
		if (m->queue[mid] < queue)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static void queue_map_release_batch(struct queue_map *m)
{
	for (size_t i = m->b0; m->lanes && i < m->b1; i++)
		queue_lanes_release(&m->lanes[i - m->b0]);
}

static void queue_map_release(struct queue_map *m)
{
	queue_map_release_batch(m);
	free(m->lanes);
	free(m->queue);
	free(m->row);
	free(m->thread);
	free(m->queued);
	memset(m, 0, sizeof(*m));
}

static uint8_t *queue_map_thread(const struct queue_map *m, int64_t thread)
{
	size_t lo = 0, hi = m->n_threads;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->thread[mid] == thread)
			return &m->queued[mid * (size_t)m->ncols];
		if (m->thread[mid] < thread)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int queue_map_build(struct queue_map *m, const struct nf_render_layout *lay)
{
	size_t k = 0;

	memset(m, 0, sizeof(*m));
	for (size_t i = 0; i < lay->n_rows; i++)
		k += lay->rows[i].kind == NF_ROW_QUEUE;
	m->queue = calloc(k ? k : 1, sizeof(*m->queue));
	m->row = calloc(k ? k : 1, sizeof(*m->row));
	m->lanes = calloc(k ? k : 1, sizeof(*m->lanes));
	if (!m->queue || !m->row || !m->lanes)
		return NF_ENOMEM;
	for (size_t i = 0; i < lay->n_rows; i++)
		if (lay->rows[i].kind == NF_ROW_QUEUE)
			m->queue[m->n++] = lay->rows[i].id;
	qsort(m->queue, m->n, sizeof(*m->queue), cmp_i64);
	for (size_t i = 0; i < m->n; i++)
		m->row[i] = nf_render_layout_queue(lay, m->queue[i]);
	m->ncols = (int)ceil(lay->plot_x1 - lay->plot_x0);
	m->x0 = lay->plot_x0;
	m->thread = calloc(lay->n_threads ? lay->n_threads : 1, sizeof(*m->thread));
	m->queued = calloc((lay->n_threads ? lay->n_threads : 1) * (size_t)m->ncols, 1);
	if (!m->thread || !m->queued)
		return NF_ENOMEM;
	for (size_t i = 0; i < lay->n_rows; i++)
		if (lay->rows[i].kind == NF_ROW_CPU && m->n_threads < lay->n_threads)
			m->thread[m->n_threads++] = lay->rows[i].id;
	qsort(m->thread, m->n_threads, sizeof(*m->thread), cmp_i64);
	return 0;
}

/* What the SQL function nf_render_op (registered for one batch) works on. */
struct op_sink {
	struct queue_map *m;
	const struct nf_render_layout *lay;
	struct nf_render_scene *s;
};

/* An operation into its queue's lanes, and a tick on the row of the thread that queued it. */
static int sink_op(struct op_sink *k, const struct op_in *op)
{
	struct queue_lanes *q = queue_map_find(k->m, op->queue);
	uint8_t *cols;

	if (!q)
		return 0;
	if (add_op(q, k->lay, k->s, op) < 0)
		return NF_ENOMEM;
	if (op->has_thread && (cols = queue_map_thread(k->m, op->thread))) {
		double c = floor(nf_render_layout_x(k->lay, op->start) - k->m->x0);

		if (c >= 0 && c < k->m->ncols)
			cols[(int)c] |= (uint8_t)(op->is_wait ? 1 : 2);
	}
	return 0;
}

/*
 * Called by sqlite for every row of the scan, inside its own loop: cheaper
 * than handing each row back through sqlite3_step and reading its columns.
 * Values (see nf_render_ops_sql): 0 queue, 1 is a wait, 2 start (queued, else
 * observed, else end time), 3 observed, 4 end, 5 status (only when there is no
 * end), 6 the thread that queued it (only with a queued time), 9 id. The SQL
 * does the coalescing so that each row costs few value reads.
 */
static void op_sink_fn(sqlite3_context *ctx, int argc, sqlite3_value **v)
{
	struct op_sink *k = sqlite3_user_data(ctx);
	struct op_in op;

	(void)argc;
	memset(&op, 0, sizeof(op));
	op.queue = sqlite3_value_int64(v[0]);
	op.is_wait = sqlite3_value_int(v[1]) != 0;
	op.has_start = !val_null(v[2]);
	op.start = op.has_start ? sqlite3_value_int64(v[2]) : 0;
	op.has_observed = !val_null(v[3]);
	op.observed = op.has_observed ? sqlite3_value_int64(v[3]) : 0;
	op.has_end = !val_null(v[4]);
	op.end = op.has_end ? sqlite3_value_int64(v[4]) : 0;
	op.status = op.has_end ? NULL : (const char *)sqlite3_value_text(v[5]);
	op.has_thread = !val_null(v[6]);
	op.thread = op.has_thread ? sqlite3_value_int64(v[6]) : 0;
	op.id = sqlite3_value_int64(v[9]);
	if (sink_op(k, &op) < 0)
		sqlite3_result_error_nomem(ctx);
	else
		sqlite3_result_null(ctx);
}

/*
 * The same for a row of an early timeline (struct nf_early_timeline): the
 * filters of nf_render_ops_sql applied here, the window (each_op hands the
 * batch's queues; a report of the early timeline has no queue or fence filter).
 */
struct early_sink {
	struct op_sink *k;
	const struct nf_render_layout *lay;
	int64_t q0, q1;
};

static int early_op_fn(void *ctx, const struct nf_fence_op_row *r)
{
	struct early_sink *e = ctx;
	struct op_in op;

	if (r->has_end && r->end_ns < e->lay->t0)
		return 0;
	memset(&op, 0, sizeof(op));
	op.has_start = r->has_queued || r->has_observed || r->has_end;
	op.start = r->has_queued ? r->queued_ns : r->has_observed ? r->observed_ns : r->end_ns;
	if ((op.has_start ? op.start : e->lay->t0) > e->lay->t1)
		return 0;
	op.queue = r->queue;
	op.is_wait = r->is_wait;
	op.has_observed = r->has_observed;
	op.observed = r->observed_ns;
	op.has_end = r->has_end;
	op.end = r->end_ns;
	op.status = r->has_end ? NULL : r->status;
	op.has_thread = r->has_queued && r->has_thread;
	op.thread = r->thread;
	op.id = r->id;
	op.with_label = 1;
	op.has_fence = r->has_fence;
	op.fence = r->fence;
	op.value = r->value;
	return sink_op(e->k, &op);
}

/*
 * On each CPU thread's row, a short tick along its top where it queued GPU
 * waits (light) and signals (dark), one per pixel column, runs merged.
 */
static int emit_queued(const struct queue_map *m, const struct nf_render_layout *lay,
		       struct nf_render_scene *s)
{
	for (size_t i = 0; i < lay->n_rows; i++) {
		const struct nf_render_row *r = &lay->rows[i];
		const uint8_t *cols;

		if (r->kind != NF_ROW_CPU || !(cols = queue_map_thread(m, r->id)))
			continue;
		for (int bit = 0; bit < 2; bit++) {
			for (int c = 0; c < m->ncols;) {
				int e = c + 1;

				if (!(cols[c] & (1 << bit))) {
					c++;
					continue;
				}
				while (e < m->ncols && (cols[e] & (1 << bit)))
					e++;
				/* 2 px wide so that a lone one shows; signals drawn over waits. */
				if (nf_render_quads_add(&s->rects[bit ? NF_RB_QUEUED_SIGNAL
								      : NF_RB_QUEUED_WAIT],
							m->x0 + c - 0.5, r->y + 1.0,
							(double)(e - c) + 1.0, 4.5) < 0)
					return NF_ENOMEM;
				c = e;
			}
		}
	}
	return 0;
}

/* Reads the operations of the queues [m->b0, m->b1) and flushes their lanes. */
static int collect_ops_batch(sqlite3 *db, const struct nf_render_layout *lay,
			     struct nf_render_scene *s, struct queue_map *m, struct op_sink *sink,
			     sqlite3_stmt *st, struct nf_error *err)
{
	int rc, ret;

	for (size_t i = m->b0; i < m->b1; i++)
		if (queue_lanes_start(&m->lanes[i - m->b0], lay, m->row[i]) < 0)
			return oom(err);
	if (s->early) {
		struct early_sink e = { sink, lay, m->queue[m->b0], m->queue[m->b1 - 1] };

		if ((ret = s->early->each_op(s->early->impl, e.q0, e.q1, early_op_fn, &e, err)) < 0)
			return ret == NF_ENOMEM && !err->msg[0] ? oom(err) : ret;
	} else {
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 3, m->queue[m->b0]);
		sqlite3_bind_int64(st, 4, m->queue[m->b1 - 1]);
		while ((rc = sqlite3_step(st)) == SQLITE_ROW)
			;
		if (rc == SQLITE_NOMEM)
			return oom(err);
		if (rc != SQLITE_DONE)
			return sql_fail(db, err, "reading fence_ops");
	}
	/* Flushed in the layout's row order, whatever order the rows came in. */
	for (size_t i = 0; i < lay->n_rows; i++) {
		struct queue_lanes *q;

		if (lay->rows[i].kind != NF_ROW_QUEUE || !(q = queue_map_find(m, lay->rows[i].id)))
			continue;
		/* What the lanes needed (m->queue is sorted like s->depths.queue). */
		{
			size_t k = (size_t)(q - m->lanes) + m->b0;

			s->depths.queue[k] = m->queue[k];
			s->depths.n_sub[k][0] = q->sw.n > 0 ? q->sw.n : 1;
			s->depths.n_sub[k][1] = q->ss.n > 0 ? q->ss.n : 1;
			s->depths.shared[k] = q->sw.shared + q->ss.shared;
		}
		if ((ret = queue_lanes_flush(q, s)) < 0)
			return oom(err);
	}
	return 0;
}

char *nf_render_ops_sql(const char *head, const char *tail, const char *qf, const char *ff, int full,
			const char *where)
{
	/* The same WHERE and scan in every pass: the same rows in the same order.
	 * Columns a pass does not use are NULL (each column read costs on 10M rows). */
	return sqlite3_mprintf("SELECT %s queue, op = 'wait', "
			       "coalesce(queued_ns, observed_ns, end_ns), %s, end_ns, %s, %s, %s, %s %s "
			       "FROM fence_ops NOT INDEXED WHERE queue >= ?3 AND queue <= ?4%s%s "
			       "AND (end_ns IS NULL OR end_ns >= ?1) "
			       "AND coalesce(queued_ns, observed_ns, end_ns, ?1) <= ?2%s",
			       head, full ? "observed_ns" : "NULL",
			       full ? "CASE WHEN end_ns IS NULL THEN status END, "
				      "CASE WHEN queued_ns IS NOT NULL THEN thread END"
				    : "NULL, NULL",
			       full == 2 ? "fence, value" : "NULL, NULL", full ? "id" : "NULL",
			       full == 2 ? "queued_ns" : "NULL", tail, qf, ff, where ? where : "");
}

/* The depth pass's state: per queue (sorted handles) its two stacks. */
struct depth_sink {
	const struct nf_render_layout *lay;
	const int64_t *queue;
	size_t n;
	struct nf_render_stack *st;  /* 2 per queue: waits, signals */
};

static void depth_fn(sqlite3_context *ctx, int argc, sqlite3_value **v)
{
	struct depth_sink *k = sqlite3_user_data(ctx);
	int64_t q = sqlite3_value_int64(v[0]), *f;
	int has_end = !val_null(v[4]);
	double xa, xb;

	(void)argc;
	sqlite3_result_null(ctx);
	if (val_null(v[2]) || !(f = bsearch(&q, k->queue, k->n, sizeof(q), cmp_i64)))
		return;
	nf_render_op_span(k->lay, sqlite3_value_int64(v[2]), has_end,
			  has_end ? sqlite3_value_int64(v[4]) : 0, &xa, &xb);
	nf_render_stack_place(&k->st[(size_t)(f - k->queue) * 2 + (sqlite3_value_int(v[1]) ? 0 : 1)],
			      xa, xb);
}

int nf_render_collect_depths(sqlite3 *db, const struct nf_render_options *opts,
			     const struct nf_render_layout *lay, const int64_t *queues, size_t n,
			     int cap, int (*n_sub)[2], int64_t *shared, struct nf_error *err)
{
	struct depth_sink k = { lay, queues, n, NULL };
	char *qf = nf_render_in_list(opts, NF_SELECTION_QUEUES, "queue");
	char *ff = nf_render_in_list(opts, NF_SELECTION_FENCES, "fence");
	char *sql = NULL;
	sqlite3_stmt *st = NULL;
	int ret = 0, rc;

	if (n == 0)
		goto out;
	k.st = calloc(2 * n, sizeof(*k.st));
	if (!qf || !ff || !k.st || !(sql = nf_render_ops_sql("count(nf_render_depth(", "))", qf, ff, 0, NULL))) {
		ret = oom(err);
		goto out;
	}
	for (size_t i = 0; i < 2 * n; i++)
		nf_render_stack_reset(&k.st[i], cap);
	if (sqlite3_create_function(db, "nf_render_depth", 11, SQLITE_UTF8 | SQLITE_DIRECTONLY, &k,
				    depth_fn, NULL, NULL) != SQLITE_OK) {
		ret = sql_fail(db, err, "reading fence_ops");
		goto out;
	}
	if ((ret = prepare_window(db, lay, sql, &st, "reading fence_ops", err)) < 0)
		goto out;
	sqlite3_bind_int64(st, 3, queues[0]);
	sqlite3_bind_int64(st, 4, queues[n - 1]);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		;
	if (rc != SQLITE_DONE) {
		ret = rc == SQLITE_NOMEM ? oom(err) : sql_fail(db, err, "reading fence_ops");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		n_sub[i][0] = k.st[2 * i].n;
		n_sub[i][1] = k.st[2 * i + 1].n;
		shared[i] = k.st[2 * i].shared + k.st[2 * i + 1].shared;
	}
out:
	sqlite3_finalize(st);
	if (k.st)  /* the function points at this frame: gone with it */
		sqlite3_create_function(db, "nf_render_depth", 11, SQLITE_UTF8, NULL, NULL, NULL, NULL);
	sqlite3_free(sql);
	free(k.st);
	sqlite3_free(qf);
	sqlite3_free(ff);
	return ret;
}

/*
 * An early timeline whose each_op may run on two threads at once
 * (nf_early_timeline.parallel) is drawn in two halves of the queues, each
 * thread reading every operation and drawing its own queues' lanes into a
 * scene of its own; the second scene is then added to the first. Each
 * queue's boxes are placed in the same order as on one thread, and a
 * bucket's rectangles are filled as one path, so the picture is the same.
 */
struct ops_half {
	sqlite3 *db;
	const struct nf_render_layout *lay;
	struct nf_render_scene s;
	struct queue_map m;
	struct op_sink sink;
	struct nf_error err;
	int ret;
};

static void *ops_half_main(void *arg)
{
	struct ops_half *h = arg;

	h->ret = collect_ops_batch(h->db, h->lay, &h->s, &h->m, &h->sink, NULL, &h->err);
	return NULL;
}

static int append_quads(struct nf_render_quads *dst, const struct nf_render_quads *src)
{
	for (size_t i = 0; i < src->n; i++) {
		const double *v = &src->v[i * 4];

		if (nf_render_quads_add(dst, v[0], v[1], v[2], v[3]) < 0)
			return NF_ENOMEM;
	}
	return 0;
}

/*
 * Adds what the operations of the other half put in src to dst. Box labels
 * are kept in operation order up to the cap, as one thread would have kept
 * them (each half holds its first ones in that order).
 */
static int merge_half(struct nf_render_scene *dst, const struct nf_render_scene *src)
{
	struct nf_render_box_label *l;
	size_t n, i = 0, j = 0, k = 0;

	for (int b = 0; b < NF_RENDER_RECTS; b++)
		if (append_quads(&dst->rects[b], &src->rects[b]) < 0)
			return NF_ENOMEM;
	for (int b = 0; b < NF_MK_COUNT; b++)
		if (append_quads(&dst->marks[b], &src->marks[b]) < 0)
			return NF_ENOMEM;
	if (append_quads(&dst->hatch, &src->hatch) < 0 || append_quads(&dst->dashes, &src->dashes) < 0)
		return NF_ENOMEM;
	dst->n_waits += src->n_waits;
	dst->n_signals += src->n_signals;
	dst->n_open += src->n_open;
	dst->n_unplaced += src->n_unplaced;
	dst->needs_stacking |= src->needs_stacking;
	n = dst->n_box_labels + src->n_box_labels;
	dst->box_labels_left_out += src->box_labels_left_out;
	if (n > NF_RENDER_MAX_BOX_LABELS) {
		dst->box_labels_left_out += (int64_t)(n - NF_RENDER_MAX_BOX_LABELS);
		n = NF_RENDER_MAX_BOX_LABELS;
	}
	if (n == 0)
		return 0;
	if (!(l = malloc(n * sizeof(*l))))
		return NF_ENOMEM;
	while (k < n) {
		bool from_dst = j == src->n_box_labels ||
				(i < dst->n_box_labels && dst->box_labels[i].id <= src->box_labels[j].id);

		l[k++] = from_dst ? dst->box_labels[i++] : src->box_labels[j++];
	}
	free(dst->box_labels);
	dst->box_labels = l;
	dst->n_box_labels = dst->cap_box_labels = n;
	return 0;
}

/* The operations of every queue (one batch) on two threads; see struct ops_half. */
static int collect_ops_halves(sqlite3 *db, const struct nf_render_layout *lay, struct nf_render_scene *s,
			      struct queue_map *m, struct op_sink *sink, struct nf_error *err)
{
	struct ops_half h;
	pthread_t th;
	bool threaded;
	int ret;

	memset(&h, 0, sizeof(h));
	if (queue_map_build(&h.m, lay) < 0) {
		queue_map_release(&h.m);
		return oom(err);
	}
	h.db = db;
	h.lay = lay;
	h.s.early = s->early;
	h.s.depths = s->depths;  /* shared: each half writes its own queues' entries */
	h.sink = (struct op_sink){ &h.m, lay, &h.s };
	m->b0 = 0;
	m->b1 = h.m.b0 = m->n / 2;
	h.m.b1 = m->n;
	threaded = pthread_create(&th, NULL, ops_half_main, &h) == 0;
	ret = collect_ops_batch(db, lay, s, m, sink, NULL, err);
	if (threaded)
		pthread_join(th, NULL);
	else
		ops_half_main(&h);
	if (ret == 0 && h.ret != 0) {
		ret = h.ret;
		*err = h.err;
	}
	if (ret == 0 && merge_half(s, &h.s) < 0)
		ret = oom(err);
	/* What the second half's threads queued, with the first's (emit_queued reads m). */
	for (size_t i = 0; ret == 0 && i < m->n_threads * (size_t)m->ncols; i++)
		m->queued[i] |= h.m.queued[i];
	queue_map_release_batch(m);
	queue_map_release(&h.m);
	memset(&h.s.depths, 0, sizeof(h.s.depths));
	nf_render_scene_release(&h.s);
	return ret;
}

/*
 * Fence operations, in one sequential pass over the table: reading every row
 * in storage order is several times faster than visiting them in queue order
 * through an index (each index entry costs a table lookup; the analyzer
 * builds none by queue).
 * The rows are handed to nf_render_op, an SQL function of ours, inside
 * sqlite's scan, which costs about half of stepping through them one by one.
 * Each row goes to the lanes of its queue; all lanes are live at once, so
 * memory is bounded by the number of queues times the plot width, not by the
 * number of operations (pages with very many queues at a large width are read
 * in a few passes to stay within NF_RENDER_LANE_BUDGET).
 */
static int collect_ops(sqlite3 *db, const struct nf_render_options *opts,
		       const struct nf_render_layout *lay, struct nf_render_scene *s,
		       const char *qf, const char *ff, struct nf_error *err)
{
	struct queue_map m;
	struct op_sink sink = { &m, lay, s };
	sqlite3_stmt *st = NULL;
	bool halves = false;
	char *sql;
	int ret;

	(void)opts;
	if (queue_map_build(&m, lay) < 0) {
		ret = oom(err);
		goto out_release;
	}
	if (m.n == 0) {
		ret = 0;
		goto out_release;
	}
	s->depths.queue = calloc(m.n, sizeof(*s->depths.queue));
	s->depths.n_sub = calloc(m.n, sizeof(*s->depths.n_sub));
	s->depths.shared = calloc(m.n, sizeof(*s->depths.shared));
	if (!s->depths.queue || !s->depths.n_sub || !s->depths.shared) {
		ret = oom(err);
		goto out_release;
	}
	s->depths.n = m.n;
	s->depths.cap = lay->max_sub;
	if (sqlite3_create_function(db, "nf_render_op", 11, SQLITE_UTF8 | SQLITE_DIRECTONLY, &sink,
				    op_sink_fn, NULL, NULL) != SQLITE_OK) {
		ret = sql_fail(db, err, "reading fence_ops");
		goto out_release;
	}
	sql = nf_render_ops_sql("count(nf_render_op(", "))", qf, ff, 1, NULL);
	ret = prepare_window(db, lay, sql, &st, "reading fence_ops", err);
	sqlite3_free(sql);
	/* Batches of queues whose accumulators (one set per sub-lane) fit the budget;
	 * an early timeline's operations that fit one batch on two threads. */
	if (ret == 0 && s->early && s->early->parallel && m.n >= 2) {
		size_t cost = 0;

		for (size_t i = 0; i < m.n; i++)
			cost += queue_lanes_cost(m.row[i], m.ncols);
		halves = cost <= NF_RENDER_LANE_BUDGET;
		if (halves)
			ret = collect_ops_halves(db, lay, s, &m, &sink, err);
	}
	for (m.b0 = 0; ret == 0 && !halves && m.b0 < m.n; m.b0 = m.b1) {
		size_t cost = queue_lanes_cost(m.row[m.b0], m.ncols);

		for (m.b1 = m.b0 + 1; m.b1 < m.n; m.b1++) {
			cost += queue_lanes_cost(m.row[m.b1], m.ncols);
			if (cost > NF_RENDER_LANE_BUDGET)
				break;
		}
		ret = collect_ops_batch(db, lay, s, &m, &sink, st, err);
		queue_map_release_batch(&m);
	}
	if (ret == 0 && emit_queued(&m, lay, s) < 0)
		ret = oom(err);
out_release:
	sqlite3_finalize(st);
	/* The function points at this frame: gone with it. */
	sqlite3_create_function(db, "nf_render_op", 11, SQLITE_UTF8, NULL, NULL, NULL, NULL);
	queue_map_release(&m);
	return ret;
}

static int collect_cpu_waits(sqlite3 *db, const struct nf_render_layout *lay,
			     struct nf_render_scene *s, const char *ff, struct nf_error *err)
{
	struct nf_render_lane lane;
	const struct nf_render_row *row = NULL;
	sqlite3_stmt *st = NULL;
	char *sql;
	int64_t cur = 0;
	int rc, ret, have_cur = 0;
	double y0, y1;

	if (nf_render_lane_init(&lane, lay) < 0)
		return oom(err);
	sql = sqlite3_mprintf("SELECT thread, start_ns, end_ns FROM cpu_waits "
			      "WHERE thread IS NOT NULL AND start_ns IS NOT NULL%s "
			      "AND (end_ns IS NULL OR end_ns >= ?1) AND start_ns <= ?2 "
			      "ORDER BY thread, start_ns",
			      ff);
	if ((ret = prepare_window(db, lay, sql, &st, "reading cpu_waits", err)) < 0)
		goto out_release;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t thread = sqlite3_column_int64(st, 0), start = sqlite3_column_int64(st, 1);

		if (!have_cur || thread != cur) {
			if (row && (ret = nf_render_lane_flush(&lane, s)) < 0)
				goto out_oom;
			have_cur = 1;
			cur = thread;
			row = nf_render_layout_thread(lay, thread);
			if (row) {
				nf_render_lane_extent(row, NF_LANE_CPU, &y0, &y1);
				nf_render_lane_reset(&lane, y0, y1, NF_RB_CPUWAIT, NF_RB_CPUWAIT_D,
						     NF_RB_CPUWAIT_EDGE, NF_RB_OPEN_CPU);
			}
		}
		if (!row)
			continue;
		s->n_cpu_waits++;
		if (col_null(st, 2)) {
			if (nf_render_lane_open(&lane, s, nf_render_layout_x(lay, start),
						NF_MK_UNMATCHED) < 0)
				goto out_oom;
			continue;
		}
		if ((ret = nf_render_lane_box(&lane, s, nf_render_layout_x(lay, start),
					      nf_render_layout_x(lay, sqlite3_column_int64(st, 2)),
					      1)) < 0)
			goto out_oom;
	}
	if (rc != SQLITE_DONE) {
		ret = sql_fail(db, err, "reading cpu_waits");
		goto out_release;
	}
	if (row && (ret = nf_render_lane_flush(&lane, s)) < 0)
		goto out_oom;
	ret = 0;
	goto out_release;
out_oom:
	ret = oom(err);
out_release:
	sqlite3_finalize(st);
	sqlite3_free(sql);
	nf_render_lane_release(&lane);
	return ret;
}

/* CPU signals: a tick per pixel column (two pixels wide) on the thread's row. */
static int collect_cpu_signals(sqlite3 *db, const struct nf_render_layout *lay,
			       struct nf_render_scene *s, const char *ff, struct nf_error *err)
{
	sqlite3_stmt *st = NULL;
	const struct nf_render_row *row = NULL;
	char *sql;
	int64_t cur = 0;
	int rc, ret, have_cur = 0;
	double last_col = -1.0;

	sql = sqlite3_mprintf("SELECT thread, ts_ns FROM cpu_signals WHERE thread IS NOT NULL "
			      "AND ts_ns >= ?1 AND ts_ns <= ?2%s ORDER BY thread, ts_ns",
			      ff);
	if ((ret = prepare_window(db, lay, sql, &st, "reading cpu_signals", err)) < 0)
		goto out_free;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t thread = sqlite3_column_int64(st, 0);
		double x, col;

		if (!have_cur || thread != cur) {
			have_cur = 1;
			cur = thread;
			row = nf_render_layout_thread(lay, thread);
			last_col = -1.0;
		}
		if (!row)
			continue;
		s->n_cpu_signals++;
		x = nf_render_layout_x(lay, sqlite3_column_int64(st, 1));
		col = floor(x);
		if (col == last_col)
			continue;
		last_col = col;
		if (nf_render_quads_add(&s->rects[NF_RB_CPU_TICK], col - 0.5, row->y + 3.0, 2.0,
					row->h - 6.0) < 0) {
			ret = oom(err);
			goto out_free;
		}
	}
	if (rc != SQLITE_DONE)
		ret = sql_fail(db, err, "reading cpu_signals");
out_free:
	sqlite3_finalize(st);
	sqlite3_free(sql);
	return ret;
}

/* A merged lost span being built for one lane of one row. */
struct lost_run {
	double x0, x1, y0, y1;
	int64_t entries;
	int64_t gaps;   /* lost spans merged into this run (closer than a pixel) */
	int have;
};

static int add_label(struct nf_render_scene *s, double x, double y, const char *text)
{
	if (s->n_labels == s->cap_labels) {
		size_t ncap = s->cap_labels ? s->cap_labels * 2 : 16;
		struct nf_render_label *n;

		if (ncap > 1000000)
			return NF_ENOMEM;
		n = realloc(s->labels, ncap * sizeof(*n));
		if (!n)
			return NF_ENOMEM;
		s->labels = n;
		s->cap_labels = ncap;
	}
	s->labels[s->n_labels].x = x;
	s->labels[s->n_labels].y = y;
	snprintf(s->labels[s->n_labels].text, sizeof(s->labels[0].text), "%.*s", (int)sizeof(s->labels[0].text) - 1, text);
	s->n_labels++;
	return 0;
}

/* Emits a lost run; its label goes in when it does not overlap the previous one. */
static int lost_run_flush(struct lost_run *r, struct nf_render_scene *s, double *label_end)
{
	char text[64];
	double cx, tw;
	int ret;

	if (!r->have)
		return 0;
	r->have = 0;
	if ((ret = nf_render_quads_add(&s->rects[NF_RB_LOST_BG], r->x0, r->y0, r->x1 - r->x0,
				       r->y1 - r->y0)) < 0 ||
	    (ret = nf_render_quads_add(&s->hatch, r->x0, r->y0, r->x1 - r->x0, r->y1 - r->y0)) < 0)
		return ret;
	/* Spans merged at this zoom say so: one label does not pass for one gap. */
	if (r->gaps > 1)
		snprintf(text, sizeof(text), "lost %lld in %lld gaps", (long long)r->entries,
			 (long long)r->gaps);
	else
		snprintf(text, sizeof(text), "lost %lld", (long long)r->entries);
	cx = (r->x0 + r->x1) / 2.0;
	tw = 6.5 * (double)strlen(text) + 8.0;  /* a generous estimate at 10 px */
	if (cx - tw / 2.0 < *label_end)
		return 0;
	*label_end = cx + tw / 2.0;
	return add_label(s, cx, (r->y0 + r->y1) / 2.0 + 3.5, text);
}

static int collect_anomalies(sqlite3 *db, const struct nf_render_layout *lay,
			     struct nf_render_scene *s, const char *qf, struct nf_error *err)
{
	const char *lost_kind = nf_finding_anomaly_name(NF_FINDING_POS_LOST);
	struct lost_run runs[3];
	sqlite3_stmt *st = NULL;
	const struct nf_render_row *row = NULL;
	char *sql;
	int64_t cur = 0;
	int rc, ret, have_cur = 0;
	double last_col[3] = { -1.0, -1.0, -1.0 }, label_end[3] = { 0, 0, 0 };

	memset(runs, 0, sizeof(runs));
	/*
	 * A 'lost' span without a first time lost entries from the start of the log
	 * (nothing was read before the gap): its span starts at the session start;
	 * one without a last time runs to the session end (?3).
	 */
	sql = sqlite3_mprintf("SELECT kind, queue, log, f, l, lost_entries FROM ("
			      "SELECT kind, queue, log, lost_entries, CASE WHEN kind = ?4 "
			      "THEN coalesce(first_ns, CASE WHEN last_ns IS NOT NULL THEN 0 END) "
			      "ELSE coalesce(first_ns, last_ns) END AS f, CASE WHEN kind = ?4 "
			      "THEN coalesce(last_ns, CASE WHEN first_ns IS NOT NULL THEN ?3 END) "
			      "ELSE coalesce(last_ns, first_ns) END AS l "
			      "FROM anomalies WHERE queue IS NOT NULL%s) "
			      "WHERE f IS NOT NULL AND l >= ?1 AND f <= ?2 ORDER BY queue, f, l",
			      qf);
	if ((ret = prepare_window(db, lay, sql, &st, "reading anomalies", err)) < 0)
		goto out_free;
	sqlite3_bind_int64(st, 3, lay->session_end > lay->t1 ? lay->session_end : lay->t1);
	sqlite3_bind_text(st, 4, lost_kind, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *kind = (const char *)sqlite3_column_text(st, 0);
		const char *log = (const char *)sqlite3_column_text(st, 2);
		int64_t queue = sqlite3_column_int64(st, 1);
		int64_t first = sqlite3_column_int64(st, 3), last = sqlite3_column_int64(st, 4);
		double x, col;
		int k;

		if (!have_cur || queue != cur) {
			for (k = 0; k < 3; k++)
				if (lost_run_flush(&runs[k], s, &label_end[k]) < 0)
					goto out_oom;
			have_cur = 1;
			cur = queue;
			row = nf_render_layout_queue(lay, queue);
			last_col[0] = last_col[1] = last_col[2] = -1.0;
			label_end[0] = label_end[1] = label_end[2] = 0.0;
		}
		if (!row)
			continue;
		/* The OS's own overrun flag is legal and its entries are the replay's
		 * 'lost' span drawn below: not an "other anomaly" marker. */
		if (kind && strcmp(kind, nf_anomaly_name(NF_ANOMALY_OS_OVERRUN_FLAG)) == 0)
			continue;
		s->n_anomalies++;
		if (kind && strcmp(kind, lost_kind) == 0) {
			struct lost_run *r;
			double x0 = nf_render_layout_x(lay, first), x1 = nf_render_layout_x(lay, last);

			s->n_lost_spans++;
			s->lost_entries += sqlite3_column_int64(st, 5);
			k = log && strcmp(log, "waits") == 0 ? 0 : log && strcmp(log, "signals") == 0 ? 1 : 2;
			r = &runs[k];
			if (x0 < lay->plot_x0)
				x0 = lay->plot_x0;
			if (x1 > lay->plot_x1)
				x1 = lay->plot_x1;
			if (x1 - x0 < 3.0) {  /* never hidden: at least 3 px */
				double c = (x0 + x1) / 2.0;

				x0 = c - 1.5;
				x1 = c + 1.5;
			}
			if (r->have && x0 <= r->x1 + 1.0) {
				if (x1 > r->x1)
					r->x1 = x1;
				r->entries += sqlite3_column_int64(st, 5);
				r->gaps++;
				continue;
			}
			if (lost_run_flush(r, s, &label_end[k]) < 0)
				goto out_oom;
			r->have = 1;
			r->x0 = x0;
			r->x1 = x1;
			r->entries = sqlite3_column_int64(st, 5);
			r->gaps = 1;
			if (k == 2) {
				r->y0 = row->y + 2.0;
				r->y1 = row->y + row->h - 2.0;
			} else {
				nf_render_lane_extent(row, k == 0 ? NF_LANE_WAIT : NF_LANE_SIGNAL,
						      &r->y0, &r->y1);
				r->y0 -= 2.0;
				r->y1 += 2.0;
			}
			continue;
		}
		/* Zero and repeated timestamps each their own marker (the legend tells them apart). */
		k = kind && strcmp(kind, "zero_timestamp") == 0 ? 0
		    : kind && strcmp(kind, "repeated_timestamp") == 0 ? 1 : 2;
		if (first < lay->t0)
			continue;
		x = nf_render_layout_x(lay, first);
		col = floor(x);
		if (col == last_col[k])
			continue;
		last_col[k] = col;
		if (nf_render_quads_add(&s->marks[k == 0 ? NF_MK_TS_ZERO : k == 1 ? NF_MK_TS_REPEAT : NF_MK_BAD],
					col + 0.5, row->y + (k == 2 ? row->h - 4.0 : 4.0), 5.0, 0) < 0)
			goto out_oom;
	}
	if (rc != SQLITE_DONE) {
		ret = sql_fail(db, err, "reading anomalies");
		goto out_free;
	}
	for (int k = 0; k < 3; k++)
		if (lost_run_flush(&runs[k], s, &label_end[k]) < 0)
			goto out_oom;
	ret = 0;
	goto out_free;
out_oom:
	ret = oom(err);
out_free:
	sqlite3_finalize(st);
	sqlite3_free(sql);
	return ret;
}

/* 1 when the table has a row (a failure reads as 1: the real query reports it). */
static int have_rows(sqlite3 *db, const char *table)
{
	char sql[96];
	sqlite3_stmt *st;
	int rc;

	snprintf(sql, sizeof(sql), "SELECT 1 FROM %s LIMIT 1", table);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return 1;
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc != SQLITE_DONE;
}

/* A set of drawn links, keyed by rows and pixel columns. */
struct link_set {
	uint64_t *slot;
	size_t n;
};

/* Returns 1 when the key is new (and adds it), 0 when known, -1 when full. */
static int link_set_add(struct link_set *ls, uint64_t key)
{
	uint64_t k = key + 1;
	size_t i = (size_t)nf_mix64(key) & (NF_RENDER_LINK_SLOTS - 1);

	while (ls->slot[i]) {
		if (ls->slot[i] == k)
			return 0;
		i = (i + 1) & (NF_RENDER_LINK_SLOTS - 1);
	}
	if (ls->n >= NF_RENDER_MAX_LINKS)
		return -1;
	ls->slot[i] = k;
	ls->n++;
	return 1;
}

/* The y an arrow starts or ends at: the op's own sub-lane when known, else the lane's middle. */
static double link_y(const struct nf_render_scene *s, const struct nf_render_row *row,
		     enum nf_render_lane_kind lane, sqlite3_stmt *st, int id_col)
{
	double y0, y1;
	int k = row->kind == NF_ROW_QUEUE && sqlite3_column_type(st, id_col) != SQLITE_NULL
		? nf_render_sub_get(s, sqlite3_column_int64(st, id_col)) : -1;

	if (k >= 0)
		nf_render_sublane_extent(row, lane, k, &y0, &y1);
	else
		nf_render_lane_extent(row, lane, &y0, &y1);
	return (y0 + y1) / 2.0;
}

static int add_link(struct link_set *ls, const struct nf_render_layout *lay,
		    struct nf_render_scene *s, const struct nf_render_row *from, double fy,
		    int64_t from_t, const struct nf_render_row *to, double ty, int64_t to_t)
{
	double x0 = nf_render_layout_x(lay, from_t), x1 = nf_render_layout_x(lay, to_t);
	uint64_t key;
	int r;

	s->n_links++;
	key = ((uint64_t)(from - lay->rows) << 48) | ((uint64_t)(to - lay->rows) << 32) |
	      ((uint64_t)(uint16_t)(int)floor(x0) << 16) | (uint64_t)(uint16_t)(int)floor(x1);
	/* Stacked lanes: arrows to different boxes at the same columns are different arrows. */
	key ^= (uint64_t)(uint32_t)(int)floor(fy) * 0x100000001B3ull ^ (uint64_t)(uint32_t)(int)floor(ty) << 8;
	r = link_set_add(ls, key);
	if (r < 0) {
		s->n_links_merged++;
		return 0;
	}
	if (r == 0)
		return 0;
	return nf_render_quads_add(&s->links, x0, fy, x1, ty);
}

static int collect_links(sqlite3 *db, const struct nf_render_layout *lay,
			 struct nf_render_scene *s, const char *ff, struct nf_error *err)
{
	struct link_set ls = { NULL, 0 };
	sqlite3_stmt *st = NULL;
	char *sql = NULL;
	size_t limit;
	int rc = SQLITE_DONE, ret = 0;

	/*
	 * More arrows than the page can show one by one hide the boxes under a grey
	 * web: then none is drawn and the subtitle says so (zoom in to see them).
	 * Reading stops as soon as that is known, so a huge session does not pay
	 * for joining every dependency.
	 */
	if (s->early)
		return 0;  /* not known before the timeline's dependency merge */
	limit = (size_t)fmax(64.0, (lay->plot_x1 - lay->plot_x0) / 8.0);
	ls.slot = calloc(NF_RENDER_LINK_SLOTS, sizeof(*ls.slot));
	if (!ls.slot)
		return oom(err);
	for (int pass = 0; pass < 3; pass++) {
		if (pass == 1 && !have_rows(db, "cpu_signals"))
			continue;  /* no CPU signals: no pass over the deps for them */
		if (pass == 2 && !have_rows(db, "cpu_waits"))
			break;
		/* Pass 0: GPU signal -> wait; pass 1: CPU signal -> wait; pass 2: GPU signal
		 * -> the CPU wait it released (the first signal on the wait's fence to reach
		 * its value; fence waits of threads are tied in deps, threads.c). */
		if (pass == 2)
			sql = sqlite3_mprintf(
				"SELECT s.queue, min(s.end_ns), w.thread, w.end_ns, s.id, NULL FROM cpu_waits w "
				"JOIN fence_ops s ON s.fence = w.fence AND s.op = 'signal' "
				"AND s.value >= w.value AND s.end_ns IS NOT NULL AND s.end_ns <= w.end_ns "
				"WHERE w.adapter IS NOT NULL AND w.status = 'satisfied' AND w.thread IS NOT NULL "
				"AND w.end_ns IS NOT NULL AND s.queue IS NOT NULL%s "
				"AND w.end_ns >= ?1 AND w.end_ns <= ?2 GROUP BY w.id",
				ff);
		else if (pass == 0)
			sql = sqlite3_mprintf(
				"SELECT s.queue, s.end_ns, w.queue, w.end_ns, s.id, w.id FROM deps d "
				"JOIN fence_ops w ON w.id = d.wait_id JOIN fence_ops s ON s.id = d.signal_id "
				"WHERE s.end_ns IS NOT NULL AND w.end_ns IS NOT NULL%s "
				"AND max(s.end_ns, w.end_ns) >= ?1 AND min(s.end_ns, w.end_ns) <= ?2",
				ff);
		else
			sql = sqlite3_mprintf(
				"SELECT c.thread, c.ts_ns, w.queue, w.end_ns, NULL, w.id FROM deps d "
				"JOIN fence_ops w ON w.id = d.wait_id JOIN cpu_signals c ON c.id = d.cpu_signal "
				"WHERE d.signal_id IS NULL AND c.ts_ns IS NOT NULL AND w.end_ns IS NOT NULL%s "
				"AND max(c.ts_ns, w.end_ns) >= ?1 AND min(c.ts_ns, w.end_ns) <= ?2",
				ff);
		if ((ret = prepare_window(db, lay, sql, &st, "reading deps", err)) < 0)
			goto out_free;
		while (s->links.n <= limit && (rc = sqlite3_step(st)) == SQLITE_ROW) {
			const struct nf_render_row *from, *to;

			from = pass != 1 ? nf_render_layout_queue(lay, sqlite3_column_int64(st, 0))
					 : nf_render_layout_thread(lay, sqlite3_column_int64(st, 0));
			to = pass == 2 ? nf_render_layout_thread(lay, sqlite3_column_int64(st, 2))
				       : nf_render_layout_queue(lay, sqlite3_column_int64(st, 2));
			if (!from || !to)
				continue;
			/* To a GPU wait's lane, or to a CPU thread's (a CPU wait released by a GPU signal). */
			if (add_link(&ls, lay, s, from,
				     link_y(s, from, pass == 1 ? NF_LANE_CPU : NF_LANE_SIGNAL, st, 4),
				     sqlite3_column_int64(st, 1), to,
				     link_y(s, to, to->kind == NF_ROW_CPU ? NF_LANE_CPU : NF_LANE_WAIT, st, 5),
				     sqlite3_column_int64(st, 3)) < 0) {
				ret = oom(err);
				goto out_free;
			}
		}
		if (s->links.n > limit) {
			/* Too dense: stop reading, the count is a lower bound. */
			s->links_too_dense = 1;
			break;
		}
		if (rc != SQLITE_DONE) {
			ret = sql_fail(db, err, "reading deps");
			goto out_free;
		}
		sqlite3_finalize(st);
		st = NULL;
		sqlite3_free(sql);
		sql = NULL;
	}
	if (s->links_too_dense) {
		s->n_links_merged = s->n_links;
		s->links.n = 0;
	}
out_free:
	sqlite3_finalize(st);
	sqlite3_free(sql);
	free(ls.slot);
	return ret;
}

int nf_render_collect(sqlite3 *db, const struct nf_render_options *opts,
		      const struct nf_render_layout *lay, struct nf_render_scene *s,
		      struct nf_error *err)
{
	char *qf = nf_render_in_list(opts, NF_SELECTION_QUEUES, "queue");
	char *ff = nf_render_in_list(opts, NF_SELECTION_FENCES, "fence");
	char *wff = nf_render_in_list(opts, NF_SELECTION_FENCES, "w.fence");
	char *cff = nf_render_in_list(opts, NF_SELECTION_FENCES, "fence");
	int ret;

	if (!qf || !ff || !wff || !cff) {
		ret = oom(err);
		goto out_free;
	}
	/* Alternate rows get a faint stripe so that the eye can follow a row. */
	for (size_t i = 0, k = 0; i < lay->n_rows; i++) {
		const struct nf_render_row *r = &lay->rows[i];

		if (r->kind != NF_ROW_QUEUE && r->kind != NF_ROW_CPU)
			continue;
		if (k++ % 2 == 1 &&
		    nf_render_quads_add(&s->rects[NF_RB_STRIPE], lay->plot_x0, r->y,
					lay->plot_x1 - lay->plot_x0, r->h) < 0) {
			ret = oom(err);
			goto out_free;
		}
	}
	if ((ret = collect_ops(db, opts, lay, s, qf, ff, err)) < 0 ||
	    (ret = label_fences(db, s, err)) < 0 ||
	    (ret = collect_cpu_waits(db, lay, s, cff, err)) < 0 ||
	    (ret = collect_cpu_signals(db, lay, s, cff, err)) < 0 ||
	    (ret = collect_anomalies(db, lay, s, qf, err)) < 0 ||
	    (ret = collect_links(db, lay, s, wff, err)) < 0 ||
	    (ret = nf_render_collect_threads(db, opts, lay, s, err)) < 0 ||
	    (ret = nf_render_collect_items(db, opts, lay, s, err)) < 0 ||
	    (ret = nf_render_collect_frames(db, lay, s, err)) < 0 ||
	    (ret = nf_render_collect_gaps(db, lay, s, err)) < 0)
		goto out_free;
out_free:
	sqlite3_free(cff);
	sqlite3_free(wff);
	sqlite3_free(ff);
	sqlite3_free(qf);
	return ret;
}
