/*
 * The display rows: per display (schemas/timeline.sql, displays), its
 * vertical blanks as ticks (the display_vblanks view), its flips as boxes
 * from when each entered the flip queue to when it was latched (a late frame's
 * in red, a dropped one in grey) and every frame's boundary (its present) as a
 * line across the row; one more row for the frames no display shows (user
 * marker frames, composed presents), a late one's time marked in red. Read
 * from the generic tables the frames analysis fills (nftrace frames): no
 * source is named here.
 */
#include "viewer.h"
#include "contract/errors.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fr_fail(sqlite3 *db, struct nf_error *err, const char *what)
{
	return nf_error_set(err, NF_ESQL, "%s: %s", what, sqlite3_errmsg(db));
}

int nf_render_place_display_rows(sqlite3 *db, const struct nf_render_options *opts, struct nf_render_layout *lay,
				 size_t *cap, double *y,
				 int (*push)(struct nf_render_layout *, size_t *, const struct nf_render_row *,
					     struct nf_error *),
				 struct nf_error *err)
{
	/* the displays with a flip or a frame in the window, then frames of no display */
	static const char sql[] =
		"SELECT id, name, n FROM ("
		"SELECT d.display AS id, coalesce(d.name, '') AS name, "
		"  (SELECT count(*) FROM frames f WHERE f.display = d.display) AS n "
		"FROM displays d WHERE EXISTS (SELECT 1 FROM flips l WHERE l.display = d.display "
		"  AND coalesce(l.done_ns, l.queued_ns) >= ?1 AND l.queued_ns <= ?2) "
		"OR EXISTS (SELECT 1 FROM frames f WHERE f.display = d.display AND f.present_ns BETWEEN ?1 AND ?2) "
		"UNION ALL SELECT -1, CASE WHEN count(DISTINCT swapchain) = 1 THEN min(swapchain) "
		"  ELSE count(DISTINCT swapchain) || ' swap chains' END, count(*) FROM frames WHERE display IS NULL "
		"  AND present_ns BETWEEN ?1 AND ?2 HAVING count(*) > 0) ORDER BY id = -1, id";
	struct nf_render_row r;
	sqlite3_stmt *st = NULL;
	int rc, ret = 0;

	if (opts->queues || (opts->fences && opts->n_fences > 0))
		return 0;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return fr_fail(db, err, "reading displays");
	sqlite3_bind_int64(st, 1, lay->t0);
	sqlite3_bind_int64(st, 2, lay->t1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 1);

		if (lay->n_displays == 0) {
			memset(&r, 0, sizeof(r));
			r.kind = NF_ROW_DISPLAY_HEAD;
			r.adapter = -1;
			r.y = *y;
			r.h = NF_RENDER_ADAPTER_H;
			*y += r.h;
			if ((ret = push(lay, cap, &r, err)) < 0)
				goto out;
		}
		memset(&r, 0, sizeof(r));
		r.kind = NF_ROW_DISPLAY;
		r.id = sqlite3_column_int64(st, 0);
		r.adapter = -1;
		r.engine = sqlite3_column_int64(st, 2); /* frames on it, for the label */
		snprintf(r.name, sizeof(r.name), "%s", name ? name : "");
		r.y = *y;
		r.h = NF_RENDER_DISPLAY_H;
		*y += r.h;
		if ((ret = push(lay, cap, &r, err)) < 0)
			goto out;
		lay->n_displays++;
	}
	if (rc != SQLITE_DONE)
		ret = fr_fail(db, err, "reading displays");
out:
	sqlite3_finalize(st);
	return ret;
}

/* A label's centre kept inside the plot (about 6 px a character at its size). */
static double label_centre(const struct nf_render_layout *lay, double x, const char *text)
{
	double half = (double)strlen(text) * 3.0 + 4.0;

	if (x + half > lay->plot_x1)
		x = lay->plot_x1 - half;
	if (x - half < lay->plot_x0)
		x = lay->plot_x0 + half;
	return x;
}

static double xt(const struct nf_render_layout *lay, int64_t t)
{
	if (t < lay->t0)
		t = lay->t0;
	if (t > lay->t1)
		t = lay->t1;
	return lay->plot_x0 + (double)(t - lay->t0) * (lay->plot_x1 - lay->plot_x0) / (double)(lay->t1 - lay->t0);
}

static const struct nf_render_row *row_of(const struct nf_render_layout *lay, int64_t display)
{
	for (size_t i = 0; i < lay->n_rows; i++)
		if (lay->rows[i].kind == NF_ROW_DISPLAY && lay->rows[i].id == display)
			return &lay->rows[i];
	return NULL;
}

static int add_label(struct nf_render_scene *s, double x, double y, const char *text, struct nf_error *err)
{
	if (s->n_labels == s->cap_labels) {
		size_t ncap = s->cap_labels ? s->cap_labels * 2 : 16;
		struct nf_render_label *n = ncap > 1000000 ? NULL : realloc(s->labels, ncap * sizeof(*n));

		if (!n)
			return nf_error_set(err, NF_ENOMEM, "out of memory while drawing");
		s->labels = n;
		s->cap_labels = ncap;
	}
	s->labels[s->n_labels].x = x;
	s->labels[s->n_labels].y = y;
	snprintf(s->labels[s->n_labels].text, sizeof(s->labels[0].text), "%s", text);
	s->n_labels++;
	return 0;
}

static int add(struct nf_render_scene *s, int rb, double x, double y, double w, double h, struct nf_error *err)
{
	if (nf_render_quads_add(&s->rects[rb], x, y, w, h) < 0)
		return nf_error_set(err, NF_ENOMEM, "out of memory while drawing");
	return 0;
}

/* A flip to draw: its display, ready/queued -> latched, its colour, its frame. */
struct flip {
	int64_t display, t0, t1, frame, late_ns;
	int rb, slot;
	bool shared; /* overlaps a neighbour in its display's queue: drawn in a half */
};

int nf_render_collect_frames(sqlite3 *db, const struct nf_render_layout *lay, struct nf_render_scene *s,
			     struct nf_error *err)
{
	static const char blanks[] =
		"SELECT display, ts_ns FROM display_vblanks WHERE ts_ns BETWEEN ?1 AND ?2";
	/* each flip from when it could be shown (its frame's work done; else queued) to when it
	 * was latched, with whether its frame was late */
	static const char flips[] =
		"SELECT l.display, coalesce(l.ready_ns, l.queued_ns), coalesce(l.done_ns, ?2), l.status, "
		"coalesce(f.late, 0), f.frame, f.late_ns, f.missed_vblanks "
		"FROM flips l LEFT JOIN frames f ON f.present = l.present "
		"WHERE coalesce(l.ready_ns, l.queued_ns) IS NOT NULL "
		"AND coalesce(l.ready_ns, l.queued_ns) <= ?2 AND coalesce(l.done_ns, ?2) >= ?1 "
		"ORDER BY l.display, coalesce(l.ready_ns, l.queued_ns), l.rowid";
	static const char frames[] =
		"SELECT coalesce(f.display, -1), f.present_ns, coalesce(f.late, 0), f.prev, l.present IS NOT NULL "
		"FROM (SELECT display, present_ns, late, present, lag(present_ns) OVER "
		"      (PARTITION BY swapchain, display ORDER BY frame) AS prev FROM frames) f "
		"LEFT JOIN (SELECT DISTINCT present FROM flips WHERE present IS NOT NULL) l ON l.present = f.present "
		"WHERE f.present_ns BETWEEN ?1 AND ?2 OR (f.late AND f.prev <= ?2 AND f.present_ns >= ?1)";
	sqlite3_stmt *st = NULL;
	struct flip *fl = NULL;
	size_t nf = 0, capf = 0;
	double label_x = 0;
	int64_t label_display = INT64_MIN;
	int rc, ret = 0;

	if (!lay->n_displays)
		return 0;
	/* blanks: a thin tick along the top of the row */
	if (sqlite3_prepare_v2(db, blanks, -1, &st, NULL) != SQLITE_OK)
		return fr_fail(db, err, "reading display_vblanks");
	sqlite3_bind_int64(st, 1, lay->t0);
	sqlite3_bind_int64(st, 2, lay->t1);
	while (!ret && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const struct nf_render_row *r = row_of(lay, sqlite3_column_int64(st, 0));

		if (r)
			ret = add(s, NF_RB_BLANK, xt(lay, sqlite3_column_int64(st, 1)) - 0.5, r->y + 3, 1.0, r->h - 6, err);
	}
	if (!ret && rc != SQLITE_DONE)
		ret = fr_fail(db, err, "reading display_vblanks");
	sqlite3_finalize(st);
	st = NULL;
	if (ret)
		return ret;
	/* flips: ready -> latched, in the middle band; flips in the queue at once
	 * (a frame done while the one before waits for its blank) in two halves */
	if (sqlite3_prepare_v2(db, flips, -1, &st, NULL) != SQLITE_OK)
		return fr_fail(db, err, "reading flips");
	sqlite3_bind_int64(st, 1, lay->t0);
	sqlite3_bind_int64(st, 2, lay->t1);
	while (!ret && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *status = (const char *)sqlite3_column_text(st, 3);
		struct flip *f;

		if (sqlite3_column_type(st, 0) == SQLITE_NULL || !row_of(lay, sqlite3_column_int64(st, 0)))
			continue;
		if (nf == capf) {
			size_t ncap = capf ? capf * 2 : 64;
			struct flip *n = ncap > ((size_t)1 << 26) ? NULL : realloc(fl, ncap * sizeof(*n));

			if (!n) {
				ret = nf_error_set(err, NF_ENOMEM, "out of memory while drawing");
				break;
			}
			fl = n;
			capf = ncap;
		}
		f = &fl[nf++];
		f->display = sqlite3_column_int64(st, 0);
		f->t0 = sqlite3_column_int64(st, 1);
		f->t1 = sqlite3_column_int64(st, 2);
		f->rb = status && !strcmp(status, "dropped") ? NF_RB_FLIP_DROP
			: sqlite3_column_int(st, 4) ? NF_RB_FLIP_LATE : NF_RB_FLIP;
		f->frame = sqlite3_column_int64(st, 5);
		f->late_ns = sqlite3_column_type(st, 6) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 6);
		f->slot = 0;
		f->shared = false;
	}
	if (!ret && rc != SQLITE_DONE)
		ret = fr_fail(db, err, "reading flips");
	sqlite3_finalize(st);
	st = NULL;
	/* (ordered by display, then ready time) a flip overlapping the one before
	 * it on its display goes to the other half; both are drawn halved */
	for (size_t i = 1; !ret && i < nf; i++)
		if (fl[i].display == fl[i - 1].display && fl[i].t0 < fl[i - 1].t1) {
			fl[i].slot = !fl[i - 1].slot;
			fl[i].shared = fl[i - 1].shared = true;
		}
	for (size_t i = 0; !ret && i < nf; i++) {
		const struct nf_render_row *r = row_of(lay, fl[i].display);
		double x0 = xt(lay, fl[i].t0), x1 = xt(lay, fl[i].t1);
		double y0 = r->y + 17, h = r->h - 21; /* below the strip of late labels */

		if (x1 - x0 > 4.0)
			x1 -= 1.5; /* a gap: flips latched one after another stay apart */
		else if (x1 - x0 < 1.0)
			x1 = x0 + 1.0;
		if (fl[i].shared) {
			h = (h - 2) / 2;
			y0 += fl[i].slot * (h + 2);
		}
		ret = add(s, fl[i].rb, x0, y0, x1 - x0, h, err);
		s->n_flips++;
		/* its label in the strip above, where it does not run into the last one */
		if (!ret && fl[i].rb == NF_RB_FLIP_LATE &&
		    (fl[i].display != label_display || (x0 + x1) / 2 - label_x > 140)) {
			char text[32];

			if (fl[i].late_ns >= 0)
				snprintf(text, sizeof(text), "frame %lld late %.3f ms", (long long)fl[i].frame,
					 (double)fl[i].late_ns / 1e6);
			else
				snprintf(text, sizeof(text), "frame %lld late", (long long)fl[i].frame);
			label_x = label_centre(lay, (x0 + x1) / 2, text);
			ret = add_label(s, label_x, r->y + 12, text, err);
			label_display = fl[i].display;
		}
	}
	free(fl);
	if (ret)
		return ret;
	/* frames: a boundary at each present; a late frame no flip shows, its time in red */
	if (sqlite3_prepare_v2(db, frames, -1, &st, NULL) != SQLITE_OK)
		return fr_fail(db, err, "reading frames");
	sqlite3_bind_int64(st, 1, lay->t0);
	sqlite3_bind_int64(st, 2, lay->t1);
	while (!ret && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const struct nf_render_row *r = row_of(lay, sqlite3_column_int64(st, 0));
		int64_t t = sqlite3_column_int64(st, 1);
		bool late = sqlite3_column_int(st, 2) != 0;

		if (!r)
			continue;
		if (t >= lay->t0 && t <= lay->t1) {
			ret = add(s, NF_RB_FRAME_EDGE, xt(lay, t) - 0.75, r->y + 2, 1.5, r->h - 4, err);
			s->n_frames++;
		}
		if (!ret && late) {
			s->n_late_frames++;
			if (!sqlite3_column_int(st, 4) && sqlite3_column_type(st, 3) != SQLITE_NULL) {
				double x0 = xt(lay, sqlite3_column_int64(st, 3)), x1 = xt(lay, t);

				ret = add(s, NF_RB_FRAME_LATE, x0, r->y + r->h - 8, x1 - x0 > 1 ? x1 - x0 : 1, 5, err);
			}
		}
	}
	if (!ret && rc != SQLITE_DONE)
		ret = fr_fail(db, err, "reading frames");
	sqlite3_finalize(st);
	return ret;
}
