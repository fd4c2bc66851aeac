/* Real text in SVG pages: see svgtext.h. */
#include "svgtext.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 256;
		struct nf_svg_text *n;

		if (ncap > NF_SVG_MAX_TEXTS || !(n = realloc(l->v, ncap * sizeof(*n)))) {
			l->failed = 1;
			return 1;
		}
		l->v = n;
		l->cap = ncap;
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
	char *qf = nf_render_in_list("queue", opts->queues, opts->queues ? opts->n_queues : 0);
	char *ff = nf_render_in_list("fence", opts->fences, opts->fences ? opts->n_fences : 0);
	/* Every operation of the window in the scene's order, so that the sub-lanes
	 * replayed here are the ones drawn (layout.h); those 2 px wide get a tip. */
	char *sql = qf && ff ? nf_render_ops_sql("", ", status", qf, ff) : NULL;
	struct nf_render_stack *stacks = calloc(2 * (lay->n_rows ? lay->n_rows : 1), sizeof(*stacks));
	int64_t qmin = INT64_MAX, qmax = INT64_MIN;
	sqlite3_stmt *st = NULL;
	int rc, ret = 0;

	free(qf);
	free(ff);
	if (!sql || !stacks) {
		sqlite3_free(sql);
		free(stacks);
		return nf_error_set(err, NF_ENOMEM, "out of memory for tooltips");
	}
	for (size_t i = 0; i < lay->n_rows; i++) {
		nf_render_stack_reset(&stacks[2 * i], lay->max_sub);
		nf_render_stack_reset(&stacks[2 * i + 1], lay->max_sub);
		if (lay->rows[i].kind == NF_ROW_QUEUE) {
			qmin = lay->rows[i].id < qmin ? lay->rows[i].id : qmin;
			qmax = lay->rows[i].id > qmax ? lay->rows[i].id : qmax;
		}
	}
	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	sqlite3_free(sql);
	if (rc != SQLITE_OK) {
		free(stacks);
		return nf_error_set(err, NF_ESQL, "reading tooltips: %s", sqlite3_errmsg(db));
	}
	sqlite3_bind_int64(st, 1, lay->t0);
	sqlite3_bind_int64(st, 2, lay->t1);
	sqlite3_bind_int64(st, 3, qmin);
	sqlite3_bind_int64(st, 4, qmax);
	/* Columns (nf_render_ops_sql): 0 queue, 1 is_wait, 2 start, 3 observed, 4 end,
	 * 7 fence, 8 value, 9 id, 10 queued, 11 status. */
	while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const struct nf_render_row *row = nf_render_layout_queue(lay, sqlite3_column_int64(st, 0));
		const unsigned char *status = sqlite3_column_text(st, 11);
		int is_wait = sqlite3_column_int(st, 1) != 0, has_end, k;
		double x0, x1, y0, y1;
		char q[32], o[32], e[32], text[512];
		struct nf_svg_tip *t;

		if (!row || sqlite3_column_type(st, 2) == SQLITE_NULL)
			continue;
		has_end = sqlite3_column_type(st, 4) != SQLITE_NULL;
		nf_render_op_span(lay, sqlite3_column_int64(st, 2), has_end, sqlite3_column_int64(st, 4), &x0,
				  &x1);
		k = nf_render_stack_place(&stacks[2 * (size_t)(row - lay->rows) + (is_wait ? 0 : 1)], x0, x1);
		/* Tips for boxes with an end, at least 2 px wide. */
		if (!has_end || x1 - x0 < 2.0)
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
		if (x0 < lay->plot_x0)
			x0 = lay->plot_x0;
		if (x1 > lay->plot_x1)
			x1 = lay->plot_x1;
		nf_render_sublane_extent(row, is_wait ? NF_LANE_WAIT : NF_LANE_SIGNAL, k, &y0, &y1);
		tip_time(q, sizeof(q), st, 10);
		tip_time(o, sizeof(o), st, 3);
		tip_time(e, sizeof(e), st, 4);
		snprintf(text, sizeof(text),
			 "%s #%" PRId64 " · queue 0x%" PRIx64 " · fence 0x%" PRIx64 " = %" PRId64
			 " · queued %s · %s%s%send %s · %s",
			 is_wait ? "wait" : "signal", (int64_t)sqlite3_column_int64(st, 9),
			 (uint64_t)sqlite3_column_int64(st, 0), (uint64_t)sqlite3_column_int64(st, 7),
			 (int64_t)sqlite3_column_int64(st, 8), q, is_wait ? "observed " : "",
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
	free(stacks);
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
