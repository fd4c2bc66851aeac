/*
 * The timeline's items in the page (views item_kinds, lanes, items,
 * item_links), whatever their source: each kind with its words, colours and
 * how it is drawn ("span": boxes on a lane's row, "line": points in time
 * across the rows, "tick": points in time on a thread's row); the items of the
 * window, kind after kind in id order, each as its shape wants it; what each
 * item waited for (its links); and the shown threads' runs (cpu_runs). Each
 * kind, the links and the runs up to NF_HTML_MAX_EXTRA (the page names what
 * was cut).
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

/* Notes a kind cut at NF_HTML_MAX_EXTRA (named in the page). */
static void cut_kind(struct html *h, const char *kind)
{
	size_t n = strlen(h->cut_kinds);

	snprintf(h->cut_kinds + n, sizeof(h->cut_kinds) - n, "%s%s", n ? "," : "", kind);
}

/* A thread's row or -1, from a column that may be NULL. */
static int64_t thread_col(struct html *h, sqlite3_stmt *st, int col, size_t *hint)
{
	if (sqlite3_column_type(st, col) == SQLITE_NULL)
		return -1;
	return find_row(h, ROW_THREAD, sqlite3_column_int64(st, col), hint);
}

/* The item kinds and how each is drawn (from the lanes of its items). */
int load_kinds(struct html *h)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(h->db, "SELECT k.kind, k.noun, k.plural, k.legend, k.colour, "
				      "coalesce(k.edge_colour, k.colour), coalesce(k.wait_colour, k.colour), "
				      "(SELECT min(l.kind = 'display') FROM lanes l WHERE l.item_kind = k.kind) "
				      "FROM item_kinds k ORDER BY k.ord", -1, &st, NULL) != SQLITE_OK)
		return sql_fail(h, "reading item_kinds");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && h->n_kinds < MAX_KINDS) {
		struct hkind *k = &h->kinds[h->n_kinds++];

		memset(k, 0, sizeof(*k));
		copy_col(k->kind, sizeof(k->kind), st, 0);
		copy_col(k->noun, sizeof(k->noun), st, 1);
		copy_col(k->plural, sizeof(k->plural), st, 2);
		copy_col(k->legend, sizeof(k->legend), st, 3);
		copy_col(k->colour, sizeof(k->colour), st, 4);
		copy_col(k->edge, sizeof(k->edge), st, 5);
		copy_col(k->wait, sizeof(k->wait), st, 6);
		k->shape = sqlite3_column_type(st, 7) == SQLITE_NULL ? "tick" : sqlite3_column_int(st, 7) ? "line" : "span";
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : sql_fail(h, "reading item_kinds");
}

static int kind_of(const struct html *h, const char *kind)
{
	for (int i = 0; kind && i < h->n_kinds; i++)
		if (!strcmp(h->kinds[i].kind, kind))
			return i;
	return -1;
}

/* The lane row of a lane's key, or -1 (hint: the last one found). */
static int64_t lane_row(const struct html *h, const char *key, size_t *hint)
{
	if (!key)
		return -1;
	if (*hint >= h->threads_end && *hint < h->n_rows && !strcmp(h->rows[*hint].lane, key))
		return (int64_t)*hint;
	for (size_t i = h->threads_end; i < h->n_rows; i++)
		if (!strcmp(h->rows[i].lane, key)) {
			*hint = i;
			return (int64_t)i;
		}
	return -1;
}

/* Counts an item of kind k written; 0 when the kind is cut (then the item is left out). */
static int take(struct html *h, int k)
{
	struct hkind *hk = &h->kinds[k];

	if (hk->n >= NF_HTML_MAX_EXTRA) {
		if (!hk->cut) {
			hk->cut = 1;
			cut_kind(h, hk->plural);
		}
		return 0;
	}
	hk->n++;
	return 1;
}

/* The items of the window of one shape (where: the rows it takes), each written by put_item. */
static int item_pass(struct html *h, const char *key, const char *where, const char *order,
		     int (*put_item)(struct html *, sqlite3_stmt *, int, int *, size_t *))
{
	char *qf = nf_selection_in(&h->o->sel, NF_SELECTION_QUEUES, "i.queue");
	char *ff = nf_selection_in(&h->o->sel, NF_SELECTION_FENCES, "i.fence");
	char *sql = !qf || !ff ? NULL : sqlite3_mprintf("SELECT i.kind, i.id, i.lane, i.thread, i.queued_ns, i.start_ns, i.end_ns, "
				    "i.bound_ns, i.bound_reason, i.status, i.label, i.fence, i.value, i.detail "
				    "FROM items i JOIN item_kinds k ON k.kind = i.kind LEFT JOIN lanes l ON l.lane = i.lane "
				    "WHERE %s AND coalesce(i.queued_ns, i.start_ns, i.end_ns) <= ?2 AND "
				    "coalesce(i.end_ns, i.bound_ns, i.start_ns, i.queued_ns) >= ?1%s%s ORDER BY %s",
				    where, qf, ff, order);
	sqlite3_stmt *st;
	size_t hint = 0;
	int rc, first = 1, ret = 0;

	sqlite3_free(qf);
	sqlite3_free(ff);
	put(h, key);
	if ((rc = prepare_owned(h, sql, &st, "reading items")) < 0)
		return rc;
	sqlite3_bind_int64(st, 1, h->t0);
	sqlite3_bind_int64(st, 2, h->t1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int k = kind_of(h, (const char *)sqlite3_column_text(st, 0));

		if (k >= 0 && (ret = put_item(h, st, k, &first, &hint)) < 0)
			break;
	}
	sqlite3_finalize(st);
	if (ret < 0)
		return ret;
	return rc == SQLITE_DONE ? 0 : sql_fail(h, "reading items");
}

/* An item's first fields, opening its array: id, kind, row, then a comma. */
static void put_head(struct html *h, sqlite3_stmt *st, int k, int64_t r, int *first)
{
	put(h, *first ? "[" : ",\n[");
	*first = 0;
	put_col(h, st, 1);
	fputc(',', h->f);
	put_i64(h, k);
	fputc(',', h->f);
	put_i64(h, r);
	fputc(',', h->f);
}

/* On a lane's row: [id, kind, row, thread row, queued, start, end, bound, bound reason, status, label, fence, value, detail]. */
static int put_span(struct html *h, sqlite3_stmt *st, int k, int *first, size_t *hint)
{
	int64_t r = lane_row(h, (const char *)sqlite3_column_text(st, 2), hint);
	size_t thint = 0;

	if (r < 0 || !take(h, k))
		return 0;
	if (sqlite3_column_int64(st, 1) < h->kinds[k].lo_id || h->kinds[k].n == 1)
		h->kinds[k].lo_id = sqlite3_column_int64(st, 1);
	if (sqlite3_column_int64(st, 1) > h->kinds[k].hi_id || h->kinds[k].n == 1)
		h->kinds[k].hi_id = sqlite3_column_int64(st, 1);
	put_head(h, st, k, r, first);
	put_i64(h, thread_col(h, st, 3, &thint));
	for (int c = 4; c <= 7; c++) {
		fputc(',', h->f);
		put_time(h, st, c);
	}
	for (int c = 8; c <= 10; c++) {
		fputc(',', h->f);
		if (sqlite3_column_type(st, c) == SQLITE_NULL)
			put(h, "null");
		else
			put_str(h, (const char *)sqlite3_column_text(st, c));
	}
	for (int c = 11; c <= 12; c++) {
		fputc(',', h->f);
		put_col(h, st, c);
	}
	fputc(',', h->f);
	put_json(h, (const char *)sqlite3_column_text(st, 13));
	fputc(']', h->f);
	return 0;
}

/* On its thread's row: [id, kind, row, at, label, detail]. */
static int put_tick(struct html *h, sqlite3_stmt *st, int k, int *first, size_t *hint)
{
	int64_t r = thread_col(h, st, 3, hint);

	if (r < 0 || !take(h, k))
		return 0;
	put_head(h, st, k, r, first);
	put_time(h, st, 5);
	fputc(',', h->f);
	put_str(h, sqlite3_column_type(st, 10) == SQLITE_NULL ? "" : (const char *)sqlite3_column_text(st, 10));
	fputc(',', h->f);
	put_json(h, (const char *)sqlite3_column_text(st, 13));
	fputc(']', h->f);
	return 0;
}

/* Across the rows, flattened: at, kind, ... */
static int put_line(struct html *h, sqlite3_stmt *st, int k, int *first, size_t *hint)
{
	(void)hint;
	if (sqlite3_column_type(st, 5) == SQLITE_NULL || !take(h, k))
		return 0;
	if (!*first)
		fputc(',', h->f);
	*first = 0;
	put_time(h, st, 5);
	fputc(',', h->f);
	put_i64(h, k);
	return 0;
}

/*
 * What the written items waited for: "links" [kind, id, dep kind (null: not
 * an item), dep id, what, label, reported at] (the item and the one it waited
 * for are found in the page by kind and id).
 */
static int write_links(struct html *h)
{
	sqlite3_stmt *st;
	int rc = SQLITE_DONE, first = 1;

	put(h, "\"links\":[");
	if (sqlite3_prepare_v2(h->db, "SELECT kind, id, dep_kind, dep_id, what, label, ts_ns FROM item_links "
				      "WHERE kind = ?1 AND id BETWEEN ?2 AND ?3 ORDER BY id, ts_ns",
			       -1, &st, NULL) != SQLITE_OK)
		return sql_fail(h, "reading item_links");
	for (int k = 0; k < h->n_kinds && rc == SQLITE_DONE; k++) {
		if (!h->kinds[k].n)
			continue;
		sqlite3_reset(st);
		sqlite3_bind_text(st, 1, h->kinds[k].kind, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, h->kinds[k].lo_id);
		sqlite3_bind_int64(st, 3, h->kinds[k].hi_id);
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			int dk = kind_of(h, (const char *)sqlite3_column_text(st, 2));

			if (h->n_links >= NF_HTML_MAX_EXTRA) {
				cut_kind(h, "item links");
				rc = SQLITE_DONE;
				break;
			}
			put(h, first ? "[" : ",\n[");
			first = 0;
			h->n_links++;
			put_i64(h, k);
			fputc(',', h->f);
			put_col(h, st, 1);
			fputc(',', h->f);
			if (dk < 0)
				put(h, "null");
			else
				put_i64(h, dk);
			fputc(',', h->f);
			put_col(h, st, 3);
			for (int c = 4; c <= 5; c++) {
				fputc(',', h->f);
				if (sqlite3_column_type(st, c) == SQLITE_NULL)
					put(h, "null");
				else
					put_str(h, (const char *)sqlite3_column_text(st, c));
			}
			fputc(',', h->f);
			put_time(h, st, 6);
			fputc(']', h->f);
		}
	}
	sqlite3_finalize(st);
	put(h, "],\n");
	return rc == SQLITE_DONE ? 0 : sql_fail(h, "reading item_links");
}

/*
 * When the shown threads ran (cpu_runs), flattened [thread row, start, end,
 * cpu, ...]; a run going on at the window's start starts there, one going on
 * at its end ends there. Not with a fence filter (as the static report).
 */
static int write_runs(struct html *h)
{
	sqlite3_stmt *st;
	size_t thint = 0;
	int rc;
	int64_t end_all = h->session_end < h->t1 ? h->session_end : h->t1;

	put(h, "\"runs\":[");
	if (!h->o->sel.n_fences) {
		if (sqlite3_prepare_v2(h->db, "SELECT thread, start_ns, end_ns, cpu FROM cpu_runs WHERE thread IS NOT NULL "
					      "AND (end_ns IS NULL OR end_ns >= ?1) AND (start_ns IS NULL OR start_ns <= ?2) "
					      "ORDER BY thread, start_ns",
				       -1, &st, NULL) != SQLITE_OK)
			return sql_fail(h, "reading cpu_runs");
		sqlite3_bind_int64(st, 1, h->t0);
		sqlite3_bind_int64(st, 2, h->t1);
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			int64_t t = thread_col(h, st, 0, &thint);
			int64_t a = sqlite3_column_type(st, 1) == SQLITE_NULL ? h->t0 : sqlite3_column_int64(st, 1);
			int64_t b = sqlite3_column_type(st, 2) == SQLITE_NULL ? end_all : sqlite3_column_int64(st, 2);

			if (t < 0 || b < a)
				continue;
			if (h->n_runs >= NF_HTML_MAX_EXTRA) {
				cut_kind(h, "runs");
				break;
			}
			if (h->n_runs++)
				fputc(',', h->f);
			put_i64(h, t);
			fputc(',', h->f);
			put_i64(h, nf_time_sub(a < h->t0 ? h->t0 : a, h->t0));
			fputc(',', h->f);
			put_i64(h, nf_time_sub(b, h->t0));
			fputc(',', h->f);
			put_col(h, st, 3);
		}
		sqlite3_finalize(st);
		if (rc != SQLITE_DONE && rc != SQLITE_ROW)
			return sql_fail(h, "reading cpu_runs");
	}
	put(h, "],\n");
	return 0;
}

/* "kinds": each item kind with its words, colours, shape and how many the page holds. */
void write_kinds(struct html *h)
{
	put(h, "\"kinds\":[");
	for (int k = 0; k < h->n_kinds; k++) {
		const struct hkind *hk = &h->kinds[k];

		put(h, k ? ",\n{\"kind\":" : "{\"kind\":");
		put_str(h, hk->kind);
		put(h, ",\"noun\":");
		put_str(h, hk->noun);
		put(h, ",\"plural\":");
		put_str(h, hk->plural);
		put(h, ",\"legend\":");
		put_str(h, hk->legend);
		put(h, ",\"colour\":");
		put_str(h, hk->colour);
		put(h, ",\"edge\":");
		put_str(h, hk->edge);
		put(h, ",\"wait\":");
		put_str(h, hk->wait);
		put(h, ",\"shape\":");
		put_str(h, hk->shape);
		put(h, ",\"n\":");
		put_i64(h, hk->n);
		put(h, "}");
	}
	put(h, "],\n");
}

int write_items(struct html *h)
{
	int ret;

	if ((ret = item_pass(h, "\"items\":[", "l.kind IN ('engine', 'node')", "k.ord, i.id", put_span)) < 0 ||
	    (ret = item_pass(h, "],\n\"ticks\":[", "i.lane IS NULL", "k.ord, i.id", put_tick)) < 0 ||
	    (ret = item_pass(h, "],\n\"lines\":[", "l.kind = 'display'", "i.start_ns, k.ord, i.id", put_line)) < 0)
		return ret;
	put(h, "],\n");
	if ((ret = write_links(h)) < 0 || (ret = write_runs(h)) < 0)
		return ret;
	write_kinds(h);
	return 0;
}
