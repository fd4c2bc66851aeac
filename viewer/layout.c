/*
 * The viewer's page layout: reads the session facts (meta), the item kinds
 * and lanes, the queues and adapters, and the CPU threads from the timeline
 * database, checks the selection and resolves its time window, and places the
 * rows. It decides where things go; render.c and paint.c decide how they look.
 * Tests use the same functions to find boxes in a rendered image.
 */
#include "layout.h"
#include "contract/errors.h"
#include "contract/timeline.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract/capbuf.h"
#include "contract/text.h"

#define NF_RENDER_MAX_ROWS 4096

static int sql_fail(sqlite3 *db, struct nf_error *err, const char *what)
{
	return nf_sql_error(db, err, "%s", what);
}

const char *const nf_render_legend_labels[NF_RENDER_LEGEND_ITEMS] = {
	"wait",
	"stall (observed \xE2\x86\x92 end)",
	"signal",
	"CPU wait",
	"CPU signal",
	"queued (wait, signal)",
	"signal \xE2\x86\x92 released wait",
	"no end known",
	"end unmatched",
	"op lost",
	"lost span",
	"zero timestamp",
	"repeated timestamp",
	"other anomaly",
};

/*
 * The width of a legend label at 11 px DejaVu Sans, estimated from above per
 * character class (its advances: narrow punctuation and i, l, t, f, j, r
 * under 4.6 px; m, M, W under 11 px; other capitals, w and the arrow under
 * 9.6 px; other letters and digits under 7 px).
 */
static double legend_text_w(const char *label)
{
	double w = 0;

	for (const unsigned char *p = (const unsigned char *)label; *p; p++) {
		if ((*p & 0xC0) == 0x80)
			continue;  /* inside a UTF-8 sequence: counted at its lead byte */
		if (strchr(" il.,:;!|'()/[]jtfr", *p))
			w += 4.6;
		else if (*p == 'm' || *p == 'M' || *p == 'W')
			w += 11.0;
		else if ((*p >= 'A' && *p <= 'Z') || *p == 'w' || *p >= 0x80)
			w += 9.6;
		else
			w += 7.0;
	}
	return w;
}

/*
 * Places the legend items left to right, wrapping before the right margin:
 * the fixed ones, then one per item kind the timeline has.
 */
static void place_legend(struct nf_render_layout *lay)
{
	double x = 16, y = NF_RENDER_TITLE_H;
	int n = NF_RENDER_LEGEND_ITEMS + lay->n_kinds;

	lay->legend_lines = 1;
	for (int i = 0; i < n; i++) {
		struct nf_render_kind *k = i < NF_RENDER_LEGEND_ITEMS ? NULL : &lay->kinds[i - NF_RENDER_LEGEND_ITEMS];
		const char *label = k ? k->legend : nf_render_legend_labels[i];
		double w = 22 + 6 + legend_text_w(label) + 14;

		if (k && !k->present)
			continue;
		if (x + w > lay->width - 16 && x > 16) {
			x = 16;
			y += NF_RENDER_LEGEND_H;
			lay->legend_lines++;
		}
		if (k) {
			k->legend_x = x;
			k->legend_y = y;
		} else {
			lay->legend_x[i] = x;
			lay->legend_y[i] = y;
		}
		x += w;
	}
}

char *nf_render_in_list(const struct nf_render_options *opts, enum nf_selection_list which, const char *col)
{
	return nf_selection_in(&opts->sel, which, col);
}

/* Copies a text column into a fixed buffer (truncating), "" for NULL. */
static void copy_text(char *dst, size_t len, sqlite3_stmt *st, int col)
{
	const unsigned char *t = sqlite3_column_text(st, col);

	snprintf(dst, len, "%s", t ? (const char *)t : "");
}

static int read_meta(sqlite3 *db, struct nf_render_layout *lay, struct nf_error *err)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(db, "SELECT key, value FROM meta WHERE key IN "
				   "('source','mode','seed','scenario')",
			       -1, &st, NULL) != SQLITE_OK)
		return sql_fail(db, err, "reading meta");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *key = (const char *)sqlite3_column_text(st, 0);

		if (!key || sqlite3_column_type(st, 1) == SQLITE_NULL)
			continue;
		if (strcmp(key, "source") == 0) {
			copy_text(lay->source, sizeof(lay->source), st, 1);
		} else if (strcmp(key, "mode") == 0) {
			copy_text(lay->mode, sizeof(lay->mode), st, 1);
		} else if (strcmp(key, "seed") == 0) {
			copy_text(lay->seed, sizeof(lay->seed), st, 1);
		} else if (strcmp(key, "scenario") == 0) {
			copy_text(lay->scenario, sizeof(lay->scenario), st, 1);
		}
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return sql_fail(db, err, "reading meta");
	return 0;
}

/* The selection checked against the timeline, and its window resolved. */
static int resolve_window(sqlite3 *db, const struct nf_render_options *opts,
			  struct nf_render_layout *lay, struct nf_error *err)
{
	struct nf_window w;
	int rc;

	if ((rc = nf_selection_check(db, &opts->sel, err)) < 0 ||
	    (rc = nf_selection_window(db, &opts->sel, &w, err)) < 0)
		return rc;
	lay->t0 = w.t0;
	lay->t1 = w.t1;
	lay->session_end = w.session_end;
	lay->has_duration = w.has_duration;
	return 0;
}

static int push_row(struct nf_render_layout *lay, size_t *cap, const struct nf_render_row *r,
		    struct nf_error *err)
{
	if (lay->n_rows + 1 > NF_RENDER_MAX_ROWS * 3)
		return nf_error_set(err, NF_ENOMEM, "too many rows to draw; filter queues");
	if (nf_array_reserve((void **)&lay->rows, cap, lay->n_rows + 1, sizeof(*lay->rows), 32,
			     NF_RENDER_MAX_ROWS * 3))
		return nf_error_set(err, NF_ENOMEM, "out of memory for rows");
	lay->rows[lay->n_rows++] = *r;
	return 0;
}

/* Whether x passes the filter v[0..n) (NULL or none: everything passes). */
static int in_filter(const int64_t *v, int n, int64_t x)
{
	if (!v || n <= 0)
		return 1;
	for (int i = 0; i < n; i++)
		if (v[i] == x)
			return 1;
	return 0;
}

/* A queue row before grouping: what sorts it. */
struct queue_info {
	int64_t queue, adapter, engine, node;
	char name[96], group_label[96], handle[64];
	int n_sub[2];     /* sub-lanes of its wait and signal lanes (the depth pass) */
	int64_t shared;
};

static int cmp_queue(const void *a, const void *b)
{
	const struct queue_info *x = a, *y = b;
	/* Unknown adapters (-1) sort last. */
	uint64_t ax = (uint64_t)x->adapter, ay = (uint64_t)y->adapter;

	if (ax != ay)
		return ax < ay ? -1 : 1;
	/* An engine is (node ordinal, engine ordinal): node first. */
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	if (x->engine != y->engine)
		return x->engine < y->engine ? -1 : 1;
	if (x->queue != y->queue)
		return x->queue < y->queue ? -1 : 1;
	return 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static int add_queue(struct queue_info **qs, size_t *n, size_t *cap, const struct queue_info *q,
		     struct nf_error *err)
{
	if (*n + 1 > NF_RENDER_MAX_ROWS * 2)
		return nf_error_set(err, NF_ENOMEM, "too many queues to draw; filter queues");
	if (nf_array_reserve((void **)qs, cap, *n + 1, sizeof(**qs), 16, NF_RENDER_MAX_ROWS * 2))
		return nf_error_set(err, NF_ENOMEM, "out of memory for queues");
	(*qs)[(*n)++] = *q;
	return 0;
}

static int64_t col_int_or(sqlite3_stmt *st, int col, int64_t dflt)
{
	return sqlite3_column_type(st, col) == SQLITE_NULL ? dflt : sqlite3_column_int64(st, col);
}

/* '#RRGGBB' into rgb (0..1 each); 0, or -1 when t is not one (rgb untouched). */
static int parse_colour(const unsigned char *t, double rgb[3])
{
	unsigned v[3];

	if (!t || t[0] != '#' || strlen((const char *)t) != 7)
		return -1;
	for (int i = 0; i < 3; i++) {
		v[i] = 0;
		for (int k = 1 + 2 * i; k < 3 + 2 * i; k++) {
			int c = t[k];

			if (c >= '0' && c <= '9')
				v[i] = v[i] * 16 + (unsigned)(c - '0');
			else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
				v[i] = v[i] * 16 + (unsigned)((c | 0x20) - 'a' + 10);
			else
				return -1;
		}
	}
	for (int i = 0; i < 3; i++)
		rgb[i] = v[i] / 255.0;
	return 0;
}

/*
 * The item kinds (view item_kinds, in their order): their words and colours,
 * and whether the timeline has items of each (then the legend shows it). How
 * each is drawn follows from its lanes (load_lanes); a kind on no lane is a
 * tick on its thread's row.
 */
static int load_kinds(sqlite3 *db, struct nf_render_layout *lay, struct nf_error *err)
{
	sqlite3_stmt *st = NULL, *any = NULL;
	int rc, ret = 0;

	if (sqlite3_prepare_v2(db, "SELECT kind, noun, plural, legend, colour, edge_colour, wait_colour "
				   "FROM item_kinds ORDER BY ord", -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT 1 FROM items WHERE kind = ?1 LIMIT 1", -1, &any, NULL) != SQLITE_OK) {
		ret = sql_fail(db, err, "reading item_kinds");
		goto out;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && lay->n_kinds < NF_RENDER_MAX_KINDS) {
		struct nf_render_kind *k = &lay->kinds[lay->n_kinds];

		memset(k, 0, sizeof(*k));
		copy_text(k->kind, sizeof(k->kind), st, 0);
		copy_text(k->noun, sizeof(k->noun), st, 1);
		copy_text(k->plural, sizeof(k->plural), st, 2);
		copy_text(k->legend, sizeof(k->legend), st, 3);
		if (parse_colour(sqlite3_column_text(st, 4), k->colour) < 0)
			k->colour[0] = k->colour[1] = k->colour[2] = 0.5;
		memcpy(k->edge, k->colour, sizeof(k->edge));
		memcpy(k->wait, k->colour, sizeof(k->wait));
		parse_colour(sqlite3_column_text(st, 5), k->edge);
		parse_colour(sqlite3_column_text(st, 6), k->wait);
		k->shape = NF_SHAPE_TICK;
		sqlite3_reset(any);
		sqlite3_bind_text(any, 1, k->kind, -1, SQLITE_STATIC);
		if ((rc = sqlite3_step(any)) != SQLITE_ROW && rc != SQLITE_DONE) {
			ret = sql_fail(db, err, "reading items");
			goto out;
		}
		k->present = rc == SQLITE_ROW;
		lay->n_kinds++;
	}
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		ret = sql_fail(db, err, "reading item_kinds");
out:
	sqlite3_finalize(any);
	sqlite3_finalize(st);
	return ret;
}

/* Items per lane of their own in the selection (unfiltered: all of them). */
static int count_lane_items(sqlite3 *db, const struct nf_render_options *opts, struct nf_render_layout *lay,
			    int kind, struct nf_error *err)
{
	char *qf = nf_render_in_list(opts, NF_SELECTION_QUEUES, "queue");
	char *ff = nf_render_in_list(opts, NF_SELECTION_FENCES, "fence");
	char *sql = qf && ff ? sqlite3_mprintf("SELECT lane, count(*) FROM items WHERE kind = ?1 AND lane IS NOT NULL%s%s "
					       "GROUP BY lane", qf, ff) : NULL;
	sqlite3_stmt *st = NULL;
	int rc, ret = 0;

	if (!sql) {
		ret = nf_error_set(err, NF_ENOMEM, "out of memory for a query");
		goto out;
	}
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		ret = sql_fail(db, err, "reading items");
		goto out;
	}
	sqlite3_bind_text(st, 1, lay->kinds[kind].kind, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int l = nf_render_layout_lane(lay, (const char *)sqlite3_column_text(st, 0));

		if (l >= 0)
			lay->lanes[l].items = sqlite3_column_int64(st, 1);
	}
	if (rc != SQLITE_DONE)
		ret = sql_fail(db, err, "reading items");
out:
	sqlite3_finalize(st);
	sqlite3_free(sql);
	sqlite3_free(qf);
	sqlite3_free(ff);
	return ret;
}

/*
 * The lanes (view lanes, in their order). Each sets how its kind's items are
 * drawn: boxes on an 'engine' lane's own row or a 'node' lane's header row,
 * lines across the rows for a 'display' lane's points in time.
 */
static int load_lanes(sqlite3 *db, const struct nf_render_options *opts, struct nf_render_layout *lay,
		      struct nf_error *err)
{
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	int rc, ret = 0, counted[NF_RENDER_MAX_KINDS] = { 0 };

	if (sqlite3_prepare_v2(db, "SELECT lane, kind, item_kind, grp, label, what, adapter, node FROM lanes "
				   "ORDER BY ord", -1, &st, NULL) != SQLITE_OK)
		return sql_fail(db, err, "reading lanes");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *kind = (const char *)sqlite3_column_text(st, 1);
		const unsigned char *key = sqlite3_column_text(st, 0);
		struct nf_render_lane_info *l;

		if (!key || !kind)
			continue;
		if (nf_array_reserve((void **)&lay->lanes, &cap, lay->n_lanes + 1, sizeof(*lay->lanes), 16,
				     NF_RENDER_MAX_ROWS)) {
			ret = nf_error_set(err, NF_ENOMEM, "too many lanes to draw");
			goto out;
		}
		l = &lay->lanes[lay->n_lanes];
		memset(l, 0, sizeof(*l));
		if (!(l->key = strdup((const char *)key))) {
			ret = nf_error_set(err, NF_ENOMEM, "out of memory for lanes");
			goto out;
		}
		lay->n_lanes++;
		l->kind = nf_render_layout_kind(lay, (const char *)sqlite3_column_text(st, 2));
		l->own = !strcmp(kind, "engine");
		l->node_lane = !strcmp(kind, "node");
		l->display = !strcmp(kind, "display");
		copy_text(l->grp, sizeof(l->grp), st, 3);
		copy_text(l->label, sizeof(l->label), st, 4);
		copy_text(l->what, sizeof(l->what), st, 5);
		l->adapter = col_int_or(st, 6, -1);
		l->node = col_int_or(st, 7, -1);
		if (l->kind >= 0)
			lay->kinds[l->kind].shape = l->display ? NF_SHAPE_LINE : NF_SHAPE_SPAN;
	}
	if (rc != SQLITE_DONE) {
		ret = sql_fail(db, err, "reading lanes");
		goto out;
	}
	for (size_t i = 0; i < lay->n_lanes; i++) {
		int k = lay->lanes[i].kind;

		if (lay->lanes[i].own && k >= 0 && !counted[k]) {
			counted[k] = 1;
			if ((ret = count_lane_items(db, opts, lay, k, err)) < 0)
				goto out;
		}
	}
out:
	sqlite3_finalize(st);
	return ret;
}

/* The 'node' lane of an engine header row (adapter -1: none known), or -1. */
static int node_lane(const struct nf_render_layout *lay, int64_t adapter, int64_t node)
{
	for (size_t i = 0; i < lay->n_lanes; i++)
		if (lay->lanes[i].node_lane && lay->lanes[i].adapter == adapter && lay->lanes[i].node == node && node >= 0)
			return (int)i;
	return -1;
}

/*
 * The queues: the rows of the queues table (the importers give every queue the
 * operations or logs name a row, so fence_ops need not be scanned for them),
 * named and grouped as the view queue_labels says; a queue whose operations
 * are another lane's items (queue_labels.hidden) only when asked for.
 */
static int load_queues(sqlite3 *db, const struct nf_render_options *opts,
		       struct queue_info **out, size_t *n_out, struct nf_error *err)
{
	sqlite3_stmt *st = NULL;
	struct queue_info *qs = NULL, q;
	size_t n = 0, cap = 0;
	int rc, ret = 0;

	if (sqlite3_prepare_v2(db, "SELECT q.queue, q.adapter, q.engine, q.node, q.name, l.group_label, l.handle "
				   "FROM queues q JOIN queue_labels l ON l.queue = q.queue WHERE ?1 OR NOT l.hidden",
			       -1, &st, NULL) != SQLITE_OK) {
		ret = sql_fail(db, err, "reading queues");
		goto out_finalize;
	}
	sqlite3_bind_int(st, 1, opts->sel.n_queues > 0);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		memset(&q, 0, sizeof(q));
		q.queue = sqlite3_column_int64(st, 0);
		q.adapter = col_int_or(st, 1, -1);
		q.engine = col_int_or(st, 2, -1);
		q.node = col_int_or(st, 3, -1);
		copy_text(q.name, sizeof(q.name), st, 4);
		copy_text(q.group_label, sizeof(q.group_label), st, 5);
		copy_text(q.handle, sizeof(q.handle), st, 6);
		if (!in_filter(opts->sel.queues, opts->sel.n_queues, q.queue))
			continue;
		if ((ret = add_queue(&qs, &n, &cap, &q, err)) < 0)
			goto out_finalize;
	}
	if (rc != SQLITE_DONE) {
		ret = sql_fail(db, err, "reading queues");
		goto out_finalize;
	}
	if (n)
		qsort(qs, n, sizeof(*qs), cmp_queue);
	*out = qs;
	*n_out = n;
	qs = NULL;
out_finalize:
	free(qs);
	sqlite3_finalize(st);
	return ret;
}

static int place_queue_rows(struct nf_render_layout *lay, const struct queue_info *qs, size_t n,
			    size_t *cap, double *y, struct nf_error *err)
{
	struct nf_render_row r;
	int ret;

	for (size_t i = 0; i < n; i++) {
		const struct queue_info *q = &qs[i];

		if (i == 0 || q->adapter != qs[i - 1].adapter) {
			memset(&r, 0, sizeof(r));
			r.kind = NF_ROW_ADAPTER;
			r.id = q->adapter;
			r.adapter = q->adapter;
			r.lane = -1;
			snprintf(r.name, sizeof(r.name), "%s", q->group_label);
			r.y = *y;
			r.h = NF_RENDER_ADAPTER_H;
			*y += r.h;
			if ((ret = push_row(lay, cap, &r, err)) < 0)
				return ret;
		}
		if ((q->engine >= 0 || q->node >= 0) &&
		    (i == 0 || q->adapter != qs[i - 1].adapter || q->node != qs[i - 1].node ||
		     q->engine != qs[i - 1].engine)) {
			memset(&r, 0, sizeof(r));
			r.kind = NF_ROW_ENGINE;
			r.id = q->engine;
			r.adapter = q->adapter;
			r.engine = q->engine;
			r.node = q->node;
			r.lane = node_lane(lay, q->adapter, q->node);
			r.y = *y;
			r.h = r.lane >= 0 ? NF_RENDER_NODE_H : NF_RENDER_ENGINE_H;
			*y += r.h;
			if ((ret = push_row(lay, cap, &r, err)) < 0)
				return ret;
		}
		memset(&r, 0, sizeof(r));
		r.kind = NF_ROW_QUEUE;
		r.id = q->queue;
		r.adapter = q->adapter;
		r.engine = q->engine;
		r.node = q->node;
		r.lane = -1;
		snprintf(r.name, sizeof(r.name), "%s", q->name);
		snprintf(r.handle, sizeof(r.handle), "%s", q->handle);
		r.n_sub[0] = q->n_sub[0] > 1 ? q->n_sub[0] : 1;
		r.n_sub[1] = q->n_sub[1] > 1 ? q->n_sub[1] : 1;
		r.shared = q->shared;
		lay->shared += q->shared;
		r.y = *y;
		/* Stacked lanes grow the row: 5 px above, 4 between, 5 below. */
		r.h = NF_RENDER_QUEUE_H - 32.0 + r.n_sub[0] * nf_render_sublane_h(r.n_sub[0]) +
		      r.n_sub[1] * nf_render_sublane_h(r.n_sub[1]);
		*y += r.h;
		if ((ret = push_row(lay, cap, &r, err)) < 0)
			return ret;
		lay->n_queues++;
	}
	return 0;
}

/* The lanes of their own ('engine' lanes), one row each, under their group's header. */
static int place_own_lanes(struct nf_render_layout *lay, size_t *cap, double *y, struct nf_error *err)
{
	struct nf_render_row r;
	const char *grp = NULL;
	int ret;

	for (size_t i = 0; i < lay->n_lanes; i++) {
		const struct nf_render_lane_info *l = &lay->lanes[i];

		/* Under a queue or fence filter, a lane none of whose items pass is left out. */
		if (!l->own || l->items == 0)
			continue;
		if (!grp || strcmp(grp, l->grp)) {
			memset(&r, 0, sizeof(r));
			r.kind = NF_ROW_GROUP;
			r.adapter = -1;
			r.lane = -1;
			snprintf(r.name, sizeof(r.name), "%s", l->grp);
			r.y = *y;
			r.h = NF_RENDER_ADAPTER_H;
			*y += r.h;
			if ((ret = push_row(lay, cap, &r, err)) < 0)
				return ret;
			grp = l->grp;
		}
		memset(&r, 0, sizeof(r));
		r.kind = NF_ROW_LANE;
		r.id = (int64_t)lay->n_own_lanes;
		r.adapter = -1;
		r.lane = (int)i;
		r.y = *y;
		r.h = NF_RENDER_LANE_H;
		*y += r.h;
		if ((ret = push_row(lay, cap, &r, err)) < 0)
			return ret;
		lay->n_own_lanes++;
	}
	return 0;
}

/*
 * The CPU thread rows the selection shows (nf_selection_threads_sql), grouped
 * by process (the thread's own id when its process is unknown), the
 * process's own thread first; a process header above each group when the
 * timeline says whose thread is whose.
 */
static int place_cpu_rows(sqlite3 *db, const struct nf_render_options *opts,
			  struct nf_render_layout *lay, size_t *cap, double *y, struct nf_error *err)
{
	char *sql = nf_selection_threads_sql(&opts->sel, "ORDER BY proc, thread != proc, thread");
	sqlite3_stmt *st = NULL;
	struct nf_render_row r;
	int rc, ret = 0;

	if (!sql) {
		ret = nf_error_set(err, NF_ENOMEM, "out of memory for a query");
		goto out_free;
	}
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		ret = sql_fail(db, err, "reading CPU threads");
		goto out_free;
	}
	int64_t last_proc = -1;
	int any_proc = 0;

	{
		sqlite3_stmt *pst = NULL;

		if (sqlite3_prepare_v2(db, "SELECT 1 FROM threads WHERE process IS NOT NULL LIMIT 1", -1, &pst,
				       NULL) == SQLITE_OK)
			any_proc = sqlite3_step(pst) == SQLITE_ROW;
		sqlite3_finalize(pst);
	}
	/* Columns: thread, process, proc, name, proc_name, process_name, left_out. */
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		lay->threads_left_out = (size_t)sqlite3_column_int64(st, 6);
		if (lay->n_threads == 0) {
			memset(&r, 0, sizeof(r));
			r.kind = NF_ROW_CPU_HEAD;
			r.adapter = -1;
			r.lane = -1;
			r.y = *y;
			r.h = NF_RENDER_ADAPTER_H;
			*y += r.h;
			if ((ret = push_row(lay, cap, &r, err)) < 0)
				goto out_free;
		}
		/* A process header above its threads (when the file said which is whose). */
		if (any_proc && (lay->n_threads == 0 || sqlite3_column_int64(st, 2) != last_proc)) {
			last_proc = sqlite3_column_int64(st, 2);
			memset(&r, 0, sizeof(r));
			r.kind = NF_ROW_PROC;
			r.id = last_proc;
			r.adapter = -1;
			r.lane = -1;
			copy_text(r.name, sizeof(r.name), st, 4);
			r.y = *y;
			r.h = NF_RENDER_PROC_H;
			*y += r.h;
			if ((ret = push_row(lay, cap, &r, err)) < 0)
				goto out_free;
		}
		memset(&r, 0, sizeof(r));
		r.kind = NF_ROW_CPU;
		r.id = sqlite3_column_int64(st, 0);
		copy_text(r.name, sizeof(r.name), st, 3);
		r.adapter = -1;
		r.lane = -1;
		r.y = *y;
		r.h = NF_RENDER_CPU_H;
		*y += r.h;
		if ((ret = push_row(lay, cap, &r, err)) < 0)
			goto out_free;
		lay->n_threads++;
	}
	if (rc != SQLITE_DONE)
		ret = sql_fail(db, err, "reading CPU threads");
out_free:
	sqlite3_finalize(st);
	sqlite3_free(sql);
	return ret;
}

/* The depth pass for the queues (sorted by handle for it, then back in row order). */
static int queue_depths(sqlite3 *db, const struct nf_render_options *opts, struct nf_render_layout *lay,
			struct queue_info *qs, size_t nq, int cap, int flat, const struct nf_render_depths *known,
			struct nf_error *err)
{
	int64_t *h = NULL, *shared = NULL;
	int(*n_sub)[2] = NULL;
	int ret = 0;

	if (flat) {  /* one sub-lane each, no pass (see nf_render_layout_build_flat) */
		for (size_t i = 0; i < nq; i++) {
			qs[i].n_sub[0] = qs[i].n_sub[1] = 1;
			qs[i].shared = 0;
		}
		return 0;
	}
	if (known && known->cap == cap) {  /* a flat scene's pass found them: no pass */
		for (size_t i = 0; i < nq; i++) {
			int64_t *f = known->n ? bsearch(&qs[i].queue, known->queue, known->n, sizeof(int64_t), cmp_i64)
					      : NULL;
			size_t k = f ? (size_t)(f - known->queue) : 0;

			qs[i].n_sub[0] = f ? known->n_sub[k][0] : 1;
			qs[i].n_sub[1] = f ? known->n_sub[k][1] : 1;
			qs[i].shared = f ? known->shared[k] : 0;
		}
		return 0;
	}
	if (nq == 0)
		return 0;
	h = malloc(nq * sizeof(*h));
	shared = calloc(nq, sizeof(*shared));
	n_sub = calloc(nq, sizeof(*n_sub));
	if (!h || !shared || !n_sub) {
		ret = nf_error_set(err, NF_ENOMEM, "out of memory for queues");
		goto out;
	}
	/* The rows are sorted by adapter and engine; the pass wants handles sorted. */
	for (size_t i = 0; i < nq; i++)
		h[i] = qs[i].queue;
	qsort(h, nq, sizeof(*h), cmp_i64);
	if ((ret = nf_render_collect_depths(db, opts, lay, h, nq, cap, n_sub, shared, err)) < 0)
		goto out;
	for (size_t i = 0; i < nq; i++) {
		int64_t *f = bsearch(&qs[i].queue, h, nq, sizeof(*h), cmp_i64);
		size_t k = (size_t)(f - h);

		qs[i].n_sub[0] = n_sub[k][0];
		qs[i].n_sub[1] = n_sub[k][1];
		qs[i].shared = shared[k];
	}
out:
	free(h);
	free(shared);
	free(n_sub);
	return ret;
}

/* Places every row for sub-lane cap `cap`; on success the page's height is known. */
static int place_rows(sqlite3 *db, const struct nf_render_options *opts, struct nf_render_layout *lay,
		      struct queue_info *qs, size_t nq, int cap, int flat, const struct nf_render_depths *known,
		      struct nf_error *err)
{
	size_t rcap = 0;
	double y;
	int ret;

	free(lay->rows);
	lay->rows = NULL;
	lay->n_rows = lay->n_queues = lay->n_threads = lay->n_own_lanes = lay->n_displays = 0;
	lay->threads_left_out = 0;
	lay->shared = 0;
	lay->max_sub = cap;
	lay->flat = flat;
	if ((ret = queue_depths(db, opts, lay, qs, nq, cap, flat, known, err)) < 0)
		return ret;
	y = NF_RENDER_TITLE_H + NF_RENDER_LEGEND_H * lay->legend_lines + 10.0;
	lay->rows_y0 = y;
	if ((ret = nf_render_place_display_rows(db, opts, lay, &rcap, &y, push_row, err)) < 0 ||
	    (ret = place_own_lanes(lay, &rcap, &y, err)) < 0 ||
	    (ret = place_queue_rows(lay, qs, nq, &rcap, &y, err)) < 0 ||
	    (ret = place_cpu_rows(db, opts, lay, &rcap, &y, err)) < 0)
		return ret;
	if (lay->n_rows == 0)
		y += NF_RENDER_QUEUE_H;  /* room for "nothing to draw" */
	lay->rows_y1 = y;
	lay->axis_y = y + 6.0;
	lay->height = lay->axis_y + NF_RENDER_AXIS_H;
	return 0;
}

static int layout_build(sqlite3 *db, const struct nf_render_options *opts, struct nf_render_layout *lay,
			int flat, const struct nf_render_depths *known, struct nf_error *err)
{
	struct queue_info *qs = NULL;
	size_t nq = 0;
	int ret, cap = NF_RENDER_MAX_SUB;

	memset(lay, 0, sizeof(*lay));
	if (opts->width != 0 && (opts->width < NF_RENDER_MIN_WIDTH || opts->width > NF_RENDER_MAX_WIDTH))
		return nf_error_set(err, NF_EINVAL, "width %d: must be between %d and %d", opts->width,
				    NF_RENDER_MIN_WIDTH, NF_RENDER_MAX_WIDTH);
	lay->width = opts->width ? opts->width : NF_RENDER_DEFAULT_WIDTH;
	lay->plot_x0 = NF_RENDER_LABEL_W;
	lay->plot_x1 = lay->width - NF_RENDER_MARGIN_R;
	if ((ret = read_meta(db, lay, err)) < 0 || (ret = resolve_window(db, opts, lay, err)) < 0)
		goto out_release;
	if ((ret = load_kinds(db, lay, err)) < 0 || (ret = load_lanes(db, opts, lay, err)) < 0 ||
	    (ret = load_queues(db, opts, &qs, &nq, err)) < 0)
		goto out_release;
	place_legend(lay);
	/* A page too tall with deep stacks is drawn with fewer sub-lanes (said on the page). */
	while ((ret = place_rows(db, opts, lay, qs, nq, cap, flat, known, err)) == 0 &&
	       lay->height > NF_RENDER_MAX_HEIGHT && cap > 1)
		cap /= 2;
	if (ret < 0)
		goto out_release;
	if (lay->height > NF_RENDER_MAX_HEIGHT) {
		ret = nf_error_set(err, NF_ENOMEM,
				   "%zu queues and %zu CPU threads do not fit on one page; filter queues",
				   lay->n_queues, lay->n_threads);
		goto out_release;
	}
	free(qs);
	return 0;
out_release:
	free(qs);
	nf_render_layout_release(lay);
	return ret;
}

int nf_render_layout_build(sqlite3 *db, const struct nf_render_options *opts,
			   struct nf_render_layout *lay, struct nf_error *err)
{
	return layout_build(db, opts, lay, 0, NULL, err);
}

int nf_render_layout_build_known(sqlite3 *db, const struct nf_render_options *opts,
				 struct nf_render_layout *lay, const struct nf_render_depths *known,
				 struct nf_error *err)
{
	return layout_build(db, opts, lay, 0, known, err);
}

int nf_render_layout_build_flat(sqlite3 *db, const struct nf_render_options *opts,
				struct nf_render_layout *lay, struct nf_error *err)
{
	return layout_build(db, opts, lay, 1, NULL, err);
}

void nf_render_layout_release(struct nf_render_layout *lay)
{
	free(lay->rows);
	lay->rows = NULL;
	lay->n_rows = 0;
	for (size_t i = 0; i < lay->n_lanes; i++)
		free(lay->lanes[i].key);
	free(lay->lanes);
	lay->lanes = NULL;
	lay->n_lanes = 0;
}

double nf_render_layout_x(const struct nf_render_layout *lay, int64_t t)
{
	/* in floating point: t may be anywhere in int64 (a planted timeline), not
	 * only in the window */
	double span = (double)lay->t1 - (double)lay->t0;

	return lay->plot_x0 + ((double)t - (double)lay->t0) / span * (lay->plot_x1 - lay->plot_x0);
}

static const struct nf_render_row *find_row(const struct nf_render_layout *lay,
					    enum nf_render_row_kind kind, int64_t id)
{
	for (size_t i = 0; i < lay->n_rows; i++)
		if (lay->rows[i].kind == kind && lay->rows[i].id == id)
			return &lay->rows[i];
	return NULL;
}

const struct nf_render_row *nf_render_layout_queue(const struct nf_render_layout *lay,
						   int64_t queue)
{
	return find_row(lay, NF_ROW_QUEUE, queue);
}

const struct nf_render_row *nf_render_layout_thread(const struct nf_render_layout *lay,
						    int64_t thread)
{
	return find_row(lay, NF_ROW_CPU, thread);
}

int nf_render_layout_lane(const struct nf_render_layout *lay, const char *key)
{
	for (size_t i = 0; key && i < lay->n_lanes; i++)
		if (!strcmp(lay->lanes[i].key, key))
			return (int)i;
	return -1;
}

const struct nf_render_row *nf_render_layout_lane_row(const struct nf_render_layout *lay, int lane)
{
	for (size_t i = 0; lane >= 0 && i < lay->n_rows; i++)
		if ((lay->rows[i].kind == NF_ROW_LANE || lay->rows[i].kind == NF_ROW_ENGINE) && lay->rows[i].lane == lane)
			return &lay->rows[i];
	return NULL;
}

int nf_render_layout_kind(const struct nf_render_layout *lay, const char *kind)
{
	for (int i = 0; kind && i < lay->n_kinds; i++)
		if (!strcmp(lay->kinds[i].kind, kind))
			return i;
	return -1;
}

double nf_render_sublane_h(int n)
{
	/* 10 px boxes (with the 1 px gap) hold a 9 px label at every depth up to the cap. */
	return n <= 1 ? 16.0 : n <= 4 ? 13.0 : 11.0;
}

void nf_render_lane_extent(const struct nf_render_row *row, enum nf_render_lane_kind lane,
			   double *y0, double *y1)
{
	int nw = row->n_sub[0] > 1 ? row->n_sub[0] : 1, ns = row->n_sub[1] > 1 ? row->n_sub[1] : 1;
	double hw = nw * nf_render_sublane_h(nw), hs = ns * nf_render_sublane_h(ns);

	switch (lane) {
	case NF_LANE_WAIT:
		*y0 = row->y + 5.0;
		*y1 = *y0 + hw;
		break;
	case NF_LANE_SIGNAL:
		*y0 = row->y + 5.0 + hw + 4.0;
		*y1 = *y0 + hs;
		break;
	case NF_LANE_CPU:
	default:
		*y0 = row->y + 6.0;
		*y1 = row->y + row->h - 6.0;
		break;
	}
}

void nf_render_sublane_extent(const struct nf_render_row *row, enum nf_render_lane_kind lane, int k,
			      double *y0, double *y1)
{
	int n = lane == NF_LANE_WAIT ? row->n_sub[0] : lane == NF_LANE_SIGNAL ? row->n_sub[1] : 1;
	double h;

	nf_render_lane_extent(row, lane, y0, y1);
	if (n <= 1 || lane == NF_LANE_CPU)
		return;
	if (k < 0)
		k = 0;
	if (k >= n)
		k = n - 1;
	h = nf_render_sublane_h(n);
	*y0 += h * k;
	*y1 = *y0 + h - 1.0;  /* a 1 px gap tells stacked boxes apart */
}

void nf_render_stack_reset(struct nf_render_stack *st, int cap)
{
	st->n = 0;
	st->cap = cap < 1 ? 1 : cap > NF_RENDER_MAX_SUB ? NF_RENDER_MAX_SUB : cap;
	st->shared = 0;
}

int nf_render_stack_place(struct nf_render_stack *st, double xa, double xb)
{
	int best = 0;

	for (int k = 0; k < st->n; k++)
		if (st->end[k] <= xa) {
			if (xb > st->end[k])
				st->end[k] = xb;
			return k;
		}
	/* Only boxes a person can see as boxes open a sub-lane: narrower ones are
	 * density at this zoom (one stacked lane of bands per overlap would say
	 * nothing more), and are told apart by zooming in. */
	if (st->n == 0 || (st->n < st->cap && xb - xa >= NF_RENDER_STACK_MIN_W)) {
		st->end[st->n] = xb;
		return st->n++;
	}
	for (int k = 1; k < st->n; k++)
		if (st->end[k] < st->end[best])
			best = k;
	if (xb > st->end[best])
		st->end[best] = xb;
	/* Deeper than the cap: it shares the sub-lane that frees first, counted. */
	if (xb - xa >= NF_RENDER_STACK_MIN_W)
		st->shared++;
	return best;
}

void nf_render_op_span(const struct nf_render_layout *lay, int64_t start, int has_end, int64_t end,
		       double *xa, double *xb)
{
	if (!has_end)
		end = start;
	if (end < start) {
		int64_t t = end;

		end = start;
		start = t;
	}
	*xa = nf_render_layout_x(lay, start);
	*xb = nf_render_layout_x(lay, end);
}

int64_t nf_render_tick_step(int64_t span_ns, int max_ticks)
{
	static const int64_t mult[] = { 1, 2, 5 };
	int64_t p = 1;

	if (span_ns <= 0 || max_ticks <= 0)
		return 1;
	for (;;) {
		for (size_t i = 0; i < 3; i++) {
			int64_t step = p * mult[i];

			if (span_ns / step <= max_ticks)
				return step;
		}
		if (p > INT64_MAX / 10)
			return p;
		p *= 10;
	}
}

const char *nf_render_time_unit(int64_t span_ns, int64_t *unit_ns)
{
	if (span_ns >= 10000000000LL) {
		*unit_ns = 1000000000;
		return "s";
	}
	if (span_ns >= 10000000) {
		*unit_ns = 1000000;
		return "ms";
	}
	if (span_ns >= 10000) {
		*unit_ns = 1000;
		return "µs";
	}
	*unit_ns = 1;
	return "ns";
}
