/* Real text in SVG pages: see svgtext.h. */
#include "svgtext.h"
#include "contract/errors.h"
#include "contract/escape.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "contract/capbuf.h"

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

/* A string (a name from the session, a status read back from the timeline)
 * as XML text: entities, and '?' for what is not printable UTF-8. */
static int put_escaped(FILE *f, const char *s)
{
	return nf_esc_xml(s, strlen(s), 0, nf_esc_file_write, f);
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
static void tip_time(char *buf, size_t len, sqlite3_value *v)
{
	if (sqlite3_value_type(v) == SQLITE_NULL)
		snprintf(buf, len, "unknown");
	else
		snprintf(buf, len, "%.6f ms", (double)sqlite3_value_int64(v) / 1e6);
}

/* What the tips pass's SQL function works on. */
struct tip_sink {
	const struct nf_render_layout *lay;
	struct nf_svg_texts *l;
	struct nf_render_stack *stacks;  /* 2 per layout row: waits, signals */
	const struct nf_render_row *last_row;
	int64_t last_queue;
	int failed;
};

/* One tooltip for an operation's box; returns 0 or -1 (out of memory). */
static int add_tip(struct tip_sink *k, const struct nf_render_row *row, int is_wait, int sub, double x0,
		   double x1, sqlite3_value **v)
{
	struct nf_svg_texts *l = k->l;
	const unsigned char *status = sqlite3_value_text(v[11]);
	char q[32], o[32], e[32], text[512];
	double y0, y1;
	struct nf_svg_tip *t;

	if (l->n_tips >= NF_SVG_MAX_TIPS) {
		l->tips_left_out++;
		return 0;
	}
	if (nf_array_reserve((void **)&l->tips, &l->cap_tips, l->n_tips + 1, sizeof(*l->tips), 256,
			     NF_SVG_MAX_TIPS))
		return -1;
	if (x0 < k->lay->plot_x0)
		x0 = k->lay->plot_x0;
	if (x1 > k->lay->plot_x1)
		x1 = k->lay->plot_x1;
	nf_render_sublane_extent(row, is_wait ? NF_LANE_WAIT : NF_LANE_SIGNAL, sub, &y0, &y1);
	tip_time(q, sizeof(q), v[10]);
	tip_time(o, sizeof(o), v[3]);
	tip_time(e, sizeof(e), v[4]);
	snprintf(text, sizeof(text),
		 "%s #%" PRId64 " · queue 0x%" PRIx64 " · fence 0x%" PRIx64 " = %" PRId64
		 " · queued %s · %s%s%send %s · %s",
		 is_wait ? "wait" : "signal", (int64_t)sqlite3_value_int64(v[9]),
		 (uint64_t)sqlite3_value_int64(v[0]), (uint64_t)sqlite3_value_int64(v[7]),
		 (int64_t)sqlite3_value_int64(v[8]), q, is_wait ? "observed " : "",
		 is_wait ? o : "", is_wait ? " · " : "", e, status ? (const char *)status : "?");
	t = &l->tips[l->n_tips];
	if (!(t->s = strdup(text)))
		return -1;
	t->x = x0;
	t->y = y0;
	t->w = x1 - x0;
	t->h = y1 - y0;
	l->n_tips++;
	return 0;
}

/*
 * Called by sqlite for every operation of the window, inside its scan (as
 * collect.c's nf_render_op): replays the sub-lane placement and keeps a tip
 * for each box with an end at least 2 px wide. Columns: nf_render_ops_sql's,
 * then 11 status.
 */
static void tip_fn(sqlite3_context *ctx, int argc, sqlite3_value **v)
{
	struct tip_sink *k = sqlite3_user_data(ctx);
	int64_t queue = sqlite3_value_int64(v[0]);
	int is_wait = sqlite3_value_int(v[1]) != 0, has_end = sqlite3_value_type(v[4]) != SQLITE_NULL, sub;
	const struct nf_render_row *row;
	double x0, x1;

	(void)argc;
	sqlite3_result_null(ctx);
	if (k->failed || sqlite3_value_type(v[2]) == SQLITE_NULL)
		return;
	if (!k->last_row || queue != k->last_queue) {
		k->last_queue = queue;
		k->last_row = nf_render_layout_queue(k->lay, queue);
	}
	if (!(row = k->last_row))
		return;
	nf_render_op_span(k->lay, sqlite3_value_int64(v[2]), has_end, has_end ? sqlite3_value_int64(v[4]) : 0,
			  &x0, &x1);
	sub = nf_render_stack_place(&k->stacks[2 * (size_t)(row - k->lay->rows) + (is_wait ? 0 : 1)], x0, x1);
	if (has_end && x1 - x0 >= 2.0 && add_tip(k, row, is_wait, sub, x0, x1, v) < 0) {
		k->failed = 1;
		sqlite3_result_error_nomem(ctx);
	}
}

int nf_render_svg_tips(sqlite3 *db, const struct nf_render_options *opts,
		       const struct nf_render_layout *lay, struct nf_svg_texts *l,
		       struct nf_error *err)
{
	char *qf = nf_render_in_list(opts, NF_SELECTION_QUEUES, "queue");
	char *ff = nf_render_in_list(opts, NF_SELECTION_FENCES, "fence");
	/* Every operation of the window in the scene's order, so that the sub-lanes
	 * replayed here are the ones drawn (layout.h); those 2 px wide get a tip. */
	int stacked = 0;
	char *sql;
	struct tip_sink k = { lay, l, NULL, NULL, 0, 0 };
	int64_t qmin = INT64_MAX, qmax = INT64_MIN;
	sqlite3_stmt *st = NULL;
	int rc, ret = 0;

	for (size_t i = 0; i < lay->n_rows; i++)
		stacked |= lay->rows[i].kind == NF_ROW_QUEUE && (lay->rows[i].n_sub[0] > 1 || lay->rows[i].n_sub[1] > 1);
	/* Without stacked rows every box is on sub-lane 0: only those wide enough need
	 * reading (?5: 2 px in ns); else every one, to replay the placement. */
	sql = qf && ff ? nf_render_ops_sql("count(nf_render_tip(", ", status))", qf, ff, 2,
					   stacked ? NULL : " AND end_ns - coalesce(queued_ns, observed_ns) >= ?5")
		       : NULL;
	sqlite3_free(qf);
	sqlite3_free(ff);
	k.stacks = calloc(2 * (lay->n_rows ? lay->n_rows : 1), sizeof(*k.stacks));
	if (!sql || !k.stacks) {
		ret = nf_error_set(err, NF_ENOMEM, "out of memory for tooltips");
		goto out;
	}
	for (size_t i = 0; i < lay->n_rows; i++) {
		nf_render_stack_reset(&k.stacks[2 * i], lay->max_sub);
		nf_render_stack_reset(&k.stacks[2 * i + 1], lay->max_sub);
		if (lay->rows[i].kind == NF_ROW_QUEUE) {
			qmin = lay->rows[i].id < qmin ? lay->rows[i].id : qmin;
			qmax = lay->rows[i].id > qmax ? lay->rows[i].id : qmax;
		}
	}
	if (sqlite3_create_function(db, "nf_render_tip", 12, SQLITE_UTF8 | SQLITE_DIRECTONLY, &k, tip_fn, NULL,
				    NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		ret = nf_error_set(err, NF_ESQL, "reading tooltips: %s", sqlite3_errmsg(db));
		goto out;
	}
	sqlite3_bind_int64(st, 1, lay->t0);
	sqlite3_bind_int64(st, 2, lay->t1);
	sqlite3_bind_int64(st, 3, qmin);
	sqlite3_bind_int64(st, 4, qmax);
	if (!stacked)
		sqlite3_bind_double(st, 5, 2.0 * (double)(lay->t1 - lay->t0) / (lay->plot_x1 - lay->plot_x0));
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		;
	if (k.failed || rc == SQLITE_NOMEM)
		ret = nf_error_set(err, NF_ENOMEM, "out of memory for tooltips");
	else if (rc != SQLITE_DONE)
		ret = nf_error_set(err, NF_ESQL, "reading tooltips: %s", sqlite3_errmsg(db));
out:
	sqlite3_finalize(st);
	/* The function points at this frame: gone with it. */
	sqlite3_create_function(db, "nf_render_tip", 12, SQLITE_UTF8, NULL, NULL, NULL, NULL);
	sqlite3_free(sql);
	free(k.stacks);
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
