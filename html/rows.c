/*
 * The page's rows: one per hardware queue (grouped by adapter and node in the
 * page; a queue whose operations are another lane's items only when asked
 * for), one per CPU thread the selection shows, and one per lane drawn as a
 * row (view lanes: a lane of its own, a node's lane at the head of its
 * queues); which rows exist decides what the passes write.
 */
#include "html_int.h"
#include "contract/errors.h"
#include "contract/sattime.h"
#include "contract/timeline.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int push_row(struct html *h, size_t *cap, const struct row *r)
{
	if (h->n_rows == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		struct row *n;

		/* MAX_ROWS rows, not the power of two below it; the advice fits
		 * the row that did not fit */
		if (h->n_rows >= MAX_ROWS)
			return nf_error_set(h->err, NF_ENOMEM, "more than %d rows; %s", MAX_ROWS,
					    r->kind == ROW_THREAD ? "filter threads (--thread, --process; without --threads all)"
					    : r->kind == ROW_QUEUE ? "filter queues (--queue)"
								   : "narrow the window (--from, --to)");
		if (ncap > MAX_ROWS)
			ncap = MAX_ROWS;
		n = realloc(h->rows, ncap * sizeof(*n));
		if (!n)
			return nf_error_set(h->err, NF_ENOMEM, "out of memory for rows");
		h->rows = n;
		*cap = ncap;
	}
	h->rows[h->n_rows] = *r;
	h->rows[h->n_rows].bins = calloc((size_t)NF_HTML_BINS * 3, sizeof(uint32_t));
	if (!h->rows[h->n_rows].bins)
		return nf_error_set(h->err, NF_ENOMEM, "out of memory for summaries");
	h->n_rows++;
	return 0;
}

/* " OR col = id OR name = 'x'": a selection of threads or processes by name or id (sqlite3_malloc'd). */

/*
 * The CPU thread rows the selection shows (nf_selection_threads_sql, as the
 * static report chooses them), sorted by id (find_row searches them).
 */
static int build_thread_rows(struct html *h, size_t *cap)
{
	char *sql = nf_selection_threads_sql(&h->o->sel, "ORDER BY thread");
	sqlite3_stmt *st;
	int rc, ret = 0;

	if ((rc = prepare_owned(h, sql, &st, "reading threads")) < 0)
		return rc;
	/* Columns: thread, process, proc, name, proc_name, process_name, left_out. */
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct row r = { .kind = ROW_THREAD, .adapter = -1, .node = -1, .engine = -1 };

		r.id = sqlite3_column_int64(st, 0);
		r.process = sqlite3_column_type(st, 1) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 1);
		copy_col(r.name, sizeof(r.name), st, 3);
		copy_col(r.pname, sizeof(r.pname), st, 5);
		h->threads_left_out = sqlite3_column_int64(st, 6);
		if ((ret = push_row(h, cap, &r)) < 0)
			break;
	}
	sqlite3_finalize(st);
	if (ret < 0)
		return ret;
	if (rc != SQLITE_DONE)
		return sql_fail(h, "reading threads");
	return 0;
}

/* The items on each lane of its own in the selection (unfiltered: all of them). */
static int count_lane_items(struct html *h)
{
	char *sql = sqlite3_mprintf("SELECT lane, count(*) FROM items WHERE lane IN (SELECT lane FROM lanes "
				    "WHERE kind = 'engine')%s%s GROUP BY lane", h->in_q, h->in_f);
	sqlite3_stmt *st;
	int rc;

	if ((rc = prepare_owned(h, sql, &st, "reading items")) < 0)
		return rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *key = (const char *)sqlite3_column_text(st, 0);

		for (size_t i = h->threads_end; key && i < h->n_rows; i++)
			if (h->rows[i].own && !strcmp(h->rows[i].lane, key))
				h->rows[i].count = sqlite3_column_int64(st, 1);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : sql_fail(h, "reading items");
}

/*
 * The lanes drawn as rows (view lanes): each lane of its own ('engine'; under
 * a queue or fence filter only when some of its items pass), and each node's
 * lane ('node') whose node has queue rows (drawn at the head of its queues).
 */
static int build_lane_rows(struct html *h, size_t *cap)
{
	sqlite3_stmt *st;
	size_t first = h->n_rows, nq = h->n_queues;
	int rc, ret = 0;

	if (sqlite3_prepare_v2(h->db, "SELECT l.lane, l.kind, l.grp, l.label, l.what, l.adapter, l.node, k.noun "
				      "FROM lanes l JOIN item_kinds k ON k.kind = l.item_kind "
				      "WHERE l.kind IN ('engine', 'node') ORDER BY l.ord", -1, &st, NULL) != SQLITE_OK)
		return sql_fail(h, "reading lanes");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct row r = { .kind = ROW_LANE, .engine = -1, .process = -1 };
		const char *kind = (const char *)sqlite3_column_text(st, 1);
		size_t k;

		r.own = kind && !strcmp(kind, "engine");
		r.adapter = sqlite3_column_type(st, 5) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 5);
		r.node = sqlite3_column_type(st, 6) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 6);
		if (!r.own) {  /* a node's lane: only with its node's queues */
			if (r.node < 0)
				continue;
			for (k = 0; k < nq && (h->rows[k].adapter != r.adapter || h->rows[k].node != r.node); k++)
				;
			if (k == nq)
				continue;
		}
		r.id = (int64_t)(h->n_rows - h->threads_end);
		if (r.own)
			copy_col(r.group, sizeof(r.group), st, 2);
		copy_col(r.name, sizeof(r.name), st, 3);
		copy_col(r.pname, sizeof(r.pname), st, 4);
		copy_col(r.noun, sizeof(r.noun), st, 7);
		if ((ret = push_row(h, cap, &r)) < 0)
			break;
		if (!(h->rows[h->n_rows - 1].lane = strdup((const char *)sqlite3_column_text(st, 0)))) {
			ret = nf_error_set(h->err, NF_ENOMEM, "out of memory for rows");
			break;
		}
	}
	sqlite3_finalize(st);
	if (ret < 0)
		return ret;
	if (rc != SQLITE_DONE)
		return sql_fail(h, "reading lanes");
	if ((ret = count_lane_items(h)) < 0)
		return ret;
	/* Under a filter, a lane of its own none of whose items pass is left out. */
	if (h->o->sel.n_queues > 0 || h->o->sel.n_fences > 0) {
		size_t o = first;

		for (size_t i = first; i < h->n_rows; i++) {
			if (h->rows[i].own && h->rows[i].count == 0) {
				free(h->rows[i].lane);
				free(h->rows[i].bins);
				continue;
			}
			h->rows[o] = h->rows[i];
			h->rows[o].id = (int64_t)(o - h->threads_end);
			o++;
		}
		h->n_rows = o;
	}
	return 0;
}

int build_rows(struct html *h)
{
	sqlite3_stmt *st;
	char *sql, *qf = nf_selection_in(&h->o->sel, NF_SELECTION_QUEUES, "q.queue");
	size_t cap = 0;
	int rc, ret = 0;

	/* Queues drawn as another lane's items (queue_labels.hidden) only when asked for. */
	sql = qf ? sqlite3_mprintf("SELECT q.queue, coalesce(q.adapter,-1), coalesce(q.node,-1), "
				   "coalesce(q.engine,-1), q.name, l.group_label FROM queues q "
				   "JOIN queue_labels l ON l.queue = q.queue WHERE 1%s%s "
				   "ORDER BY coalesce(q.adapter,-1), coalesce(q.node,-1), q.queue",
				   qf, h->o->sel.n_queues ? "" : " AND NOT l.hidden") : NULL;
	sqlite3_free(qf);
	if ((rc = prepare_owned(h, sql, &st, "reading queues")) < 0)
		return rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct row r = { .kind = ROW_QUEUE, .process = -1 };

		r.id = sqlite3_column_int64(st, 0);
		r.adapter = sqlite3_column_int64(st, 1);
		r.node = sqlite3_column_int64(st, 2);
		r.engine = sqlite3_column_int64(st, 3);
		copy_col(r.name, sizeof(r.name), st, 4);
		copy_col(r.group, sizeof(r.group), st, 5);
		if ((ret = push_row(h, &cap, &r)) < 0)
			break;
	}
	sqlite3_finalize(st);
	if (ret < 0)
		return ret;
	if (rc != SQLITE_DONE)
		return sql_fail(h, "reading queues");
	h->n_queues = h->n_rows;
	if ((ret = build_thread_rows(h, &cap)) < 0)
		return ret;
	h->threads_end = h->n_rows;
	return build_lane_rows(h, &cap);
}

/* The row of a queue or thread (rows are sorted by id within each kind? no: by
 * adapter for queues), found by linear-then-cached lookup. */
int64_t find_row(const struct html *h, enum row_kind kind, int64_t id, size_t *hint)
{
	size_t lo = kind == ROW_QUEUE ? 0 : h->n_queues, hi = kind == ROW_QUEUE ? h->n_queues : h->threads_end;

	if (*hint >= lo && *hint < hi && h->rows[*hint].id == id)
		return (int64_t)*hint;
	if (kind == ROW_THREAD) {  /* threads are sorted by id */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (h->rows[mid].id < id)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < h->threads_end && h->rows[lo].id == id) {
			*hint = lo;
			return (int64_t)lo;
		}
		return -1;
	}
	for (size_t i = lo; i < hi; i++)
		if (h->rows[i].id == id) {
			*hint = i;
			return (int64_t)i;
		}
	return -1;
}

int load_handles(struct html *h)
{
	sqlite3_stmt *st;
	size_t cap = 0;
	int rc;

	if (sqlite3_prepare_v2(h->db, "SELECT handle, process FROM fence_handles "
				      "WHERE process IS NOT NULL ORDER BY handle",
			       -1, &st, NULL) != SQLITE_OK)
		return sql_fail(h, "reading fence handles");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (h->n_handles == cap) {
			size_t ncap = cap ? cap * 2 : 256;
			int64_t(*n)[2];

			if (ncap > (1u << 24) || !(n = realloc(h->handles, ncap * sizeof(*n)))) {
				sqlite3_finalize(st);
				return nf_error_set(h->err, NF_ENOMEM, "out of memory for fence handles");
			}
			h->handles = n;
			cap = ncap;
		}
		h->handles[h->n_handles][0] = sqlite3_column_int64(st, 0);
		h->handles[h->n_handles][1] = sqlite3_column_int64(st, 1);
		h->n_handles++;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return sql_fail(h, "reading fence handles");
	return 0;
}

int64_t handle_process(const struct html *h, int64_t handle)
{
	size_t lo = 0, hi = h->n_handles;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (h->handles[mid][0] < handle)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < h->n_handles && h->handles[lo][0] == handle ? h->handles[lo][1] : -1;
}

void write_rows(struct html *h)
{
	put(h, "\"rows\":[");
	for (size_t i = 0; i < h->n_rows; i++) {
		const struct row *r = &h->rows[i];
		int first = 1;

		put(h, i ? ",\n{" : "{");
		static const char *const kinds[] = { "queue", "thread", "lane" };

		put(h, "\"kind\":\"");
		put(h, kinds[r->kind]);
		put(h, "\",\"id\":");
		put_big(h, r->id);
		put(h, ",\"adapter\":");
		put_i64(h, r->adapter);
		put(h, ",\"node\":");
		put_i64(h, r->node);
		put(h, ",\"engine\":");
		put_i64(h, r->engine);
		put(h, ",\"process\":");
		put_i64(h, r->process);
		put(h, ",\"name\":");
		put_str(h, r->name);
		put(h, ",\"group\":");
		put_str(h, r->group);
		if (r->kind == ROW_THREAD) {
			put(h, ",\"pname\":");
			put_str(h, r->pname);
		}
		if (r->kind == ROW_LANE) {
			put(h, ",\"what\":");
			put_str(h, r->pname);
			put(h, ",\"noun\":");
			put_str(h, r->noun);
			put(h, ",\"count\":");
			put_i64(h, r->count);
			put(h, r->own ? ",\"own\":1" : ",\"own\":0");
		}
		/* Summary bins, sparse: [bin, waits, signals, cpu waits]... */
		put(h, ",\"bins\":[");
		for (int b = 0; b < NF_HTML_BINS; b++) {
			const uint32_t *c = &r->bins[b * 3];

			if (!c[0] && !c[1] && !c[2])
				continue;
			put(h, first ? "" : ",");
			first = 0;
			put_i64(h, b);
			for (int k = 0; k < 3; k++) {
				fputc(',', h->f);
				put_i64(h, c[k]);
			}
		}
		put(h, "]}");
	}
	put(h, "],\n");
}
