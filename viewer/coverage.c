/*
 * What the capture does not cover (timeline view coverage_gaps), drawn so
 * that nobody reads an empty stretch as "nothing happened": each gap a
 * translucent grey band over the rows it concerns (every row for a CPU's
 * buffers, its queue's row for a log gap), a dashed line where the record
 * begins, and a label saying whose record is missing until when. Bands add
 * up: where more CPUs were not recorded the grey is darker.
 */
#include "viewer.h"
#include "contract/errors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Labels drawn one under the other at most; the rest are counted in one more. */
#define GAP_LABELS_MAX 4

static int gap_label(struct nf_render_scene *s, double x, double y, int whole, const char *text)
{
	if (s->n_gap_labels == s->cap_gap_labels) {
		size_t n = s->cap_gap_labels ? s->cap_gap_labels * 2 : 8;
		struct nf_render_gap_label *v = realloc(s->gap_labels, n * sizeof(*v));

		if (!v)
			return NF_ENOMEM;
		s->gap_labels = v;
		s->cap_gap_labels = n;
	}
	s->gap_labels[s->n_gap_labels].x = x;
	s->gap_labels[s->n_gap_labels].y = y;
	s->gap_labels[s->n_gap_labels].whole = whole;
	snprintf(s->gap_labels[s->n_gap_labels].text, sizeof(s->gap_labels[0].text), "%s", text);
	s->n_gap_labels++;
	return 0;
}

int nf_render_collect_gaps(sqlite3 *db, const struct nf_render_layout *lay, struct nf_render_scene *s,
			   struct nf_error *err)
{
	/* the gaps ending last first: they are the ones a reader meets at the
	 * left of the first whole stretch */
	static const char sql[] = "SELECT queue, from_ns, to_ns, what FROM coverage_gaps "
				  "WHERE to_ns >= ?1 AND from_ns <= ?2 ORDER BY to_ns DESC, queue, what";
	sqlite3_stmt *st = NULL;
	int64_t more = 0;
	int rc;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return nf_error_set(err, NF_ESQL, "reading coverage gaps: %s", sqlite3_errmsg(db));
	sqlite3_bind_int64(st, 1, lay->t0);
	sqlite3_bind_int64(st, 2, lay->t1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t from = sqlite3_column_int64(st, 1), to = sqlite3_column_int64(st, 2);
		const char *what = (const char *)sqlite3_column_text(st, 3);
		double y0 = lay->rows_y0, y1 = lay->rows_y1;
		double x0 = nf_render_layout_x(lay, from < lay->t0 ? lay->t0 : from);
		double x1 = nf_render_layout_x(lay, to > lay->t1 ? lay->t1 : to);
		char text[sizeof(s->gap_labels[0].text)];

		if (sqlite3_column_type(st, 0) != SQLITE_NULL) {
			const struct nf_render_row *r = nf_render_layout_queue(lay, sqlite3_column_int64(st, 0));

			if (!r)
				continue; /* its queue is not drawn */
			y0 = r->y;
			y1 = r->y + r->h;
		}
		if (nf_render_quads_add(&s->gaps, x0, y0, x1 - x0, y1 - y0) < 0 ||
		    (to <= lay->t1 && nf_render_quads_add(&s->gap_edges, x1, y0, x1, y1) < 0)) {
			sqlite3_finalize(st);
			return nf_error_set(err, NF_ENOMEM, "out of memory while drawing");
		}
		s->n_gaps++;
		if (s->n_gap_labels >= GAP_LABELS_MAX || x1 - x0 < 40.0) {
			more++;
			continue;
		}
		snprintf(text, sizeof(text), "%s before %.6f s", what ? what : "not recorded", (double)to / 1e9);
		if (gap_label(s, x1 - 4.0, y0 + 14.0 + 14.0 * (double)s->n_gap_labels,
			      sqlite3_column_type(st, 0) == SQLITE_NULL, text) < 0) {
			sqlite3_finalize(st);
			return nf_error_set(err, NF_ENOMEM, "out of memory while drawing");
		}
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return nf_error_set(err, NF_ESQL, "reading coverage gaps: %s", sqlite3_errmsg(db));
	if (more && s->n_gap_labels) {
		char text[sizeof(s->gap_labels[0].text)];
		const struct nf_render_gap_label *last = &s->gap_labels[s->n_gap_labels - 1];

		snprintf(text, sizeof(text), "and %lld more gap%s (nftrace info: coverage)", (long long)more,
			 more == 1 ? "" : "s");
		if (gap_label(s, last->x, last->y + 14.0, last->whole, text) < 0)
			return nf_error_set(err, NF_ENOMEM, "out of memory while drawing");
	}
	return 0;
}
