/* Real text in SVG pages: see svgtext.h. */
#include "svgtext.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../core/capbuf.h"

struct nf_svg_tip {
	double x, y, w, h;
	char *s;
};

struct nf_svg_text {
	double x, y, size;
	int bold;
	double r, g, b, a;
	char *s;
};

/* More strings than a page ever has: a guard, the page is refused beyond it. */
#define NF_SVG_MAX_TEXTS 200000

static const cairo_user_data_key_t svg_key;

void nf_render_svg_attach(cairo_t *cr, struct nf_svg_texts *list)
{
	cairo_set_user_data(cr, &svg_key, list, NULL);
}

int nf_render_svg_text(cairo_t *cr, double x, double y, const char *s)
{
	struct nf_svg_texts *l = cairo_get_user_data(cr, &svg_key);
	struct nf_svg_text *t;
	cairo_matrix_t fm;
	double r = 0, g = 0, b = 0, a = 1;

	if (!l)
		return 0;
	if (nf_array_reserve((void **)&l->v, &l->cap, l->n + 1, sizeof(*l->v), 256, NF_SVG_MAX_TEXTS)) {
		l->failed = 1;
		return 1;
	}
	t = &l->v[l->n];
	if (!(t->s = strdup(s))) {
		l->failed = 1;
		return 1;
	}
	cairo_user_to_device(cr, &x, &y);
	cairo_get_font_matrix(cr, &fm);
	cairo_pattern_get_rgba(cairo_get_source(cr), &r, &g, &b, &a);
	t->x = x;
	t->y = y;
	t->size = fm.xx;
	t->bold = cairo_toy_font_face_get_weight(cairo_get_font_face(cr)) == CAIRO_FONT_WEIGHT_BOLD;
	t->r = r;
	t->g = g;
	t->b = b;
	t->a = a;
	l->n++;
	return 1;
}

static int put_escaped(FILE *f, const char *s)
{
	for (; *s; s++) {
		const char *e = *s == '&' ? "&amp;" : *s == '<' ? "&lt;" : *s == '>' ? "&gt;" : NULL;

		if (e ? fputs(e, f) == EOF : fputc(*s, f) == EOF)
			return -1;
	}
	return 0;
}

int nf_render_svg_write(FILE *f, const struct nf_svg_texts *l)
{
	if (fputs("<g font-family=\"DejaVu Sans, Verdana, sans-serif\" xml:space=\"preserve\">\n",
		  f) == EOF)
		return -1;
	for (size_t i = 0; i < l->n; i++) {
		const struct nf_svg_text *t = &l->v[i];

		if (fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"%.2f\"%s fill=\"#%02x%02x%02x\"",
			    t->x, t->y, t->size, t->bold ? " font-weight=\"bold\"" : "",
			    (unsigned)(t->r * 255 + 0.5), (unsigned)(t->g * 255 + 0.5),
			    (unsigned)(t->b * 255 + 0.5)) < 0)
			return -1;
		if (t->a < 1.0 && fprintf(f, " fill-opacity=\"%.3f\"", t->a) < 0)
			return -1;
		if (fputc('>', f) == EOF || put_escaped(f, t->s) < 0 || fputs("</text>\n", f) == EOF)
			return -1;
	}
	if (fputs("</g>\n<g fill=\"#000\" fill-opacity=\"0\">\n", f) == EOF)
		return -1;
	for (size_t i = 0; i < l->n_tips; i++) {
		const struct nf_svg_tip *t = &l->tips[i];

		if (fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\"><title>",
			    t->x, t->y, t->w, t->h) < 0 ||
		    put_escaped(f, t->s) < 0 || fputs("</title></rect>\n", f) == EOF)
			return -1;
	}
	return fputs("</g>\n", f) == EOF ? -1 : 0;
}

/* A time for a tooltip: "1.234567 ms" (ns precision kept), or "unknown". */
static void tip_time(char *buf, size_t len, sqlite3_stmt *st, int col)
{
	if (sqlite3_column_type(st, col) == SQLITE_NULL)
		snprintf(buf, len, "unknown");
	else
		snprintf(buf, len, "%.6f ms", (double)sqlite3_column_int64(st, col) / 1e6);
}

int nf_render_svg_tips(sqlite3 *db, const struct nf_render_options *opts,
		       const struct nf_render_layout *lay, struct nf_svg_texts *l,
		       struct nf_error *err)
{
	double ns_per_px = (double)(lay->t1 - lay->t0) / (lay->plot_x1 - lay->plot_x0);
	char *qf = nf_render_in_list("queue", opts->queues, opts->queues ? opts->n_queues : 0);
	char *ff = nf_render_in_list("fence", opts->fences, opts->fences ? opts->n_fences : 0);
	char *sql = qf && ff ? sqlite3_mprintf(
		"SELECT id, queue, op, fence, value, queued_ns, observed_ns, end_ns, status, "
		"coalesce(queued_ns, observed_ns) FROM fence_ops NOT INDEXED "
		"WHERE queue IS NOT NULL AND end_ns IS NOT NULL AND coalesce(queued_ns, observed_ns) IS NOT NULL "
		"AND end_ns >= ?1 AND coalesce(queued_ns, observed_ns) <= ?2 "
		"AND end_ns - coalesce(queued_ns, observed_ns) >= ?3%s%s", qf, ff) : NULL;
	sqlite3_stmt *st = NULL;
	int rc, ret = 0;

	free(qf);
	free(ff);
	if (!sql)
		return nf_error_set(err, NF_ENOMEM, "out of memory for tooltips");
	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	sqlite3_free(sql);
	if (rc != SQLITE_OK)
		return nf_error_set(err, NF_ESQL, "reading tooltips: %s", sqlite3_errmsg(db));
	sqlite3_bind_int64(st, 1, lay->t0);
	sqlite3_bind_int64(st, 2, lay->t1);
	sqlite3_bind_double(st, 3, 2.0 * ns_per_px);
	while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const struct nf_render_row *row = nf_render_layout_queue(lay, sqlite3_column_int64(st, 1));
		const unsigned char *op = sqlite3_column_text(st, 2), *status = sqlite3_column_text(st, 8);
		int is_wait = op && !strcmp((const char *)op, "wait");
		double x0, x1, y0, y1;
		char q[32], o[32], e[32], text[512];
		struct nf_svg_tip *t;

		if (!row)
			continue;
		if (l->n_tips >= NF_SVG_MAX_TIPS) {
			l->tips_left_out++;
			continue;
		}
		if (l->n_tips == l->cap_tips) {
			size_t ncap = l->cap_tips ? l->cap_tips * 2 : 256;
			struct nf_svg_tip *n = realloc(l->tips, ncap * sizeof(*n));

			if (!n) {
				ret = nf_error_set(err, NF_ENOMEM, "out of memory for tooltips");
				break;
			}
			l->tips = n;
			l->cap_tips = ncap;
		}
		x0 = nf_render_layout_x(lay, sqlite3_column_int64(st, 9));
		x1 = nf_render_layout_x(lay, sqlite3_column_int64(st, 7));
		if (x0 < lay->plot_x0)
			x0 = lay->plot_x0;
		if (x1 > lay->plot_x1)
			x1 = lay->plot_x1;
		nf_render_lane_extent(row, is_wait ? NF_LANE_WAIT : NF_LANE_SIGNAL, &y0, &y1);
		tip_time(q, sizeof(q), st, 5);
		tip_time(o, sizeof(o), st, 6);
		tip_time(e, sizeof(e), st, 7);
		snprintf(text, sizeof(text),
			 "%s #%" PRId64 " · queue 0x%" PRIx64 " · fence 0x%" PRIx64 " = %" PRId64
			 " · queued %s · %s%s%send %s · %s",
			 is_wait ? "wait" : "signal", (int64_t)sqlite3_column_int64(st, 0),
			 (uint64_t)sqlite3_column_int64(st, 1), (uint64_t)sqlite3_column_int64(st, 3),
			 (int64_t)sqlite3_column_int64(st, 4), q, is_wait ? "observed " : "",
			 is_wait ? o : "", is_wait ? " · " : "", e, status ? (const char *)status : "?");
		t = &l->tips[l->n_tips];
		if (!(t->s = strdup(text))) {
			ret = nf_error_set(err, NF_ENOMEM, "out of memory for tooltips");
			break;
		}
		t->x = x0;
		t->y = y0;
		t->w = x1 - x0;
		t->h = y1 - y0;
		l->n_tips++;
	}
	if (ret == 0 && rc != SQLITE_DONE && rc != SQLITE_ROW)
		ret = nf_error_set(err, NF_ESQL, "reading tooltips: %s", sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return ret;
}

void nf_render_svg_release(struct nf_svg_texts *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].s);
	free(l->v);
	for (size_t i = 0; i < l->n_tips; i++)
		free(l->tips[i].s);
	free(l->tips);
	memset(l, 0, sizeof(*l));
}
