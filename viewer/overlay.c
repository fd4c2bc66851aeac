/*
 * The overlay of `nftrace report --critical-path`: the segments of a path
 * drawn over the rows (a translucent band with a strong outline on the row of
 * the queue or CPU thread it was on, the waits hatched lighter), joined in time
 * order by a line from each segment's end to the next one's start (unless
 * marks_apart: a diff's changed waits stand alone), with the
 * path's title above the rows. Inputs are plain spans (nf_render_mark), so the
 * viewer needs nothing of the analysis that computed them.
 */
#include "svgtext.h"
#include "viewer.h"

#include <math.h>

/* One colour for the path in both themes: a blue that no data colour uses. */
#define OV_R 0.08
#define OV_G 0.40
#define OV_B 0.95

/* The band of a mark on its row: [*y0, *y1), or 0 when the row is not drawn. */
static int mark_band(const struct nf_render_layout *lay, const struct nf_render_mark *m, double *y0,
		     double *y1)
{
	const struct nf_render_row *row = m->on_thread ? nf_render_layout_thread(lay, m->thread)
						       : nf_render_layout_queue(lay, m->queue);

	if (!row)
		return 0;
	if (row->kind == NF_ROW_QUEUE)
		nf_render_lane_extent(row, m->kind == NF_MARK_WAIT ? NF_LANE_WAIT : NF_LANE_SIGNAL, y0, y1);
	else
		nf_render_lane_extent(row, NF_LANE_CPU, y0, y1);
	return 1;
}

void nf_render_paint_overlay(cairo_t *cr, const struct nf_render_options *opts,
			     const struct nf_render_layout *lay, int dark)
{
	double px = 0, py = 0;
	int have_prev = 0;

	if (!opts->marks || opts->n_marks <= 0)
		return;
	cairo_save(cr);
	cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
	for (int i = 0; i < opts->n_marks; i++) {
		const struct nf_render_mark *m = &opts->marks[i];
		double y0, y1, x0, x1;

		if (!mark_band(lay, m, &y0, &y1)) {
			have_prev = 0;
			continue;
		}
		x0 = nf_render_layout_x(lay, m->start_ns);
		x1 = nf_render_layout_x(lay, m->end_ns);
		if (x1 - x0 < 2.0) { /* keep a short segment visible */
			double c = (x0 + x1) / 2;

			x0 = c - 1.0;
			x1 = c + 1.0;
		}
		cairo_rectangle(cr, x0, y0 + 1, x1 - x0, y1 - y0 - 2);
		cairo_set_source_rgba(cr, OV_R, OV_G, OV_B, m->kind == NF_MARK_WAIT ? 0.18 : 0.38);
		cairo_fill_preserve(cr);
		cairo_set_source_rgba(cr, OV_R, OV_G, OV_B, 0.95);
		cairo_set_line_width(cr, 2.0);
		if (m->kind == NF_MARK_WAIT)
			cairo_set_dash(cr, (const double[]){ 5.0, 3.0 }, 2, 0);
		cairo_stroke(cr);
		cairo_set_dash(cr, NULL, 0, 0);
		/* the hand-over from the previous segment */
		if (have_prev && !opts->marks_apart) {
			cairo_move_to(cr, px, py);
			cairo_line_to(cr, x0, (y0 + y1) / 2);
			cairo_set_line_width(cr, 2.5);
			cairo_stroke(cr);
			cairo_arc(cr, x0, (y0 + y1) / 2, 3.0, 0, 2 * M_PI);
			cairo_fill(cr);
		}
		px = x1;
		py = (y0 + y1) / 2;
		have_prev = 1;
	}
	if (opts->path_title) {
		cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
		cairo_set_font_size(cr, 11);
		cairo_move_to(cr, lay->plot_x0 + 6, lay->rows_y0 + 14);
		cairo_set_source_rgba(cr, dark ? 0.55 : OV_R, dark ? 0.75 : OV_G, OV_B, 1.0);
		if (!nf_render_svg_text(cr, lay->plot_x0 + 6, lay->rows_y0 + 14, opts->path_title))
			cairo_show_text(cr, opts->path_title);
	}
	cairo_restore(cr);
}
