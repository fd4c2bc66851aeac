/*
 * The viewer's scene and its level of detail. Boxes arrive lane by lane in
 * start order; boxes at least a pixel wide are merged into runs where they
 * overlap, boxes narrower than a pixel add their coverage to the pixel columns
 * they touch and come out as density bands, and edges and markers are kept
 * once per pixel column. So the number of rectangles drawn is bounded by the
 * plot width times the number of lanes, whatever the number of operations.
 */
#include "viewer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "contract/capbuf.h"
#include "contract/util_hash.h"

int nf_render_quads_add(struct nf_render_quads *q, double a, double b, double c, double d)
{
	/* A quad is 4 doubles; at most NF_RENDER_MAX_QUADS. */
	if (nf_array_reserve((void **)&q->v, &q->cap, q->n + 1, 4 * sizeof(*q->v), 64,
			     NF_RENDER_MAX_QUADS))
		return NF_ENOMEM;
	q->v[q->n * 4 + 0] = a;
	q->v[q->n * 4 + 1] = b;
	q->v[q->n * 4 + 2] = c;
	q->v[q->n * 4 + 3] = d;
	q->n++;
	return 0;
}

int nf_render_sub_put(struct nf_render_scene *s, int64_t id, int sub)
{
	/* Full: this op's arrows end at its lane's middle (not an error). */
	if (!nf_u64map_find(&s->subs, (uint64_t)id) && s->subs.n >= NF_RENDER_MAX_SUBS_KEPT)
		return 0;
	return nf_u64map_put(&s->subs, (uint64_t)id, (uint64_t)sub);
}

int nf_render_sub_get(const struct nf_render_scene *s, int64_t id)
{
	const uint64_t *v = nf_u64map_find(&s->subs, (uint64_t)id);

	return v ? (int)*v : -1;
}

static void quads_release(struct nf_render_quads *q)
{
	free(q->v);
	memset(q, 0, sizeof(*q));
}

void nf_render_scene_release(struct nf_render_scene *s)
{
	for (int i = 0; i < NF_RB_COUNT; i++)
		quads_release(&s->rects[i]);
	for (int i = 0; i < NF_MK_COUNT; i++)
		quads_release(&s->marks[i]);
	quads_release(&s->hatch);
	quads_release(&s->dashes);
	quads_release(&s->links);
	quads_release(&s->vsyncs);
	free(s->labels);
	s->labels = NULL;
	nf_u64map_free(&s->subs);
	free(s->depths.queue);
	free(s->depths.n_sub);
	free(s->depths.shared);
	memset(&s->depths, 0, sizeof(s->depths));
	free(s->box_labels);
	s->box_labels = NULL;
	s->n_box_labels = s->cap_box_labels = 0;
	s->n_labels = s->cap_labels = 0;
}

int nf_render_lane_init(struct nf_render_lane *l, const struct nf_render_layout *lay)
{
	memset(l, 0, sizeof(*l));
	l->x0 = lay->plot_x0;
	l->ncols = (int)ceil(lay->plot_x1 - lay->plot_x0);
	l->cover = calloc((size_t)l->ncols, sizeof(*l->cover));
	l->edge = calloc((size_t)l->ncols, 1);
	l->mark = calloc((size_t)l->ncols, 1);
	if (!l->cover || !l->edge || !l->mark) {
		nf_render_lane_release(l);
		return NF_ENOMEM;
	}
	return 0;
}

void nf_render_lane_release(struct nf_render_lane *l)
{
	free(l->cover);
	free(l->edge);
	free(l->mark);
	memset(l, 0, sizeof(*l));
}

void nf_render_lane_reset(struct nf_render_lane *l, double y0, double y1, int rb_fill,
			  int rb_dens, int rb_edge, int rb_open)
{
	memset(l->cover, 0, (size_t)l->ncols * sizeof(*l->cover));
	memset(l->edge, 0, (size_t)l->ncols);
	memset(l->mark, 0, (size_t)l->ncols);
	l->y0 = y0;
	l->y1 = y1;
	l->have_run = 0;
	l->have_open = 0;
	l->have_orun = 0;
	l->rb_fill = rb_fill;
	l->rb_dens = rb_dens;
	l->rb_edge = rb_edge;
	l->rb_open = rb_open;
}

/* The pixel column of a device x, clamped to the plot. */
static int column(const struct nf_render_lane *l, double x)
{
	double c = floor(x - l->x0);

	if (c < 0)
		return 0;
	if (c >= l->ncols)
		return l->ncols - 1;
	return (int)c;
}

static void clamp_x(const struct nf_render_lane *l, double *x)
{
	if (*x < l->x0)
		*x = l->x0;
	if (*x > l->x0 + l->ncols)
		*x = l->x0 + l->ncols;
}

/* Emits the merged open-ended run: a translucent band dashed along its top and bottom. */
static int flush_open_run(struct nf_render_lane *l, struct nf_render_scene *s)
{
	double a = l->orun_x0, b = l->orun_x1;
	int ret;

	if (!l->have_orun)
		return 0;
	l->have_orun = 0;
	if ((ret = nf_render_quads_add(&s->rects[l->rb_open], a, l->y0, b - a, l->y1 - l->y0)) < 0 ||
	    (ret = nf_render_quads_add(&s->dashes, a, l->y0 + 0.5, b, l->y0 + 0.5)) < 0 ||
	    (ret = nf_render_quads_add(&s->dashes, a, l->y1 - 0.5, b, l->y1 - 0.5)) < 0)
		return ret;
	/* Open to the window's edge: a dashed end says "goes on, end unknown". */
	if (l->orun_edge &&
	    (ret = nf_render_quads_add(&s->dashes, b - 0.5, l->y0, b - 0.5, l->y1)) < 0)
		return ret;
	return 0;
}

/* Adds the open-ended region [a, b] (device x, clamped) to the open run. */
static int open_region(struct nf_render_lane *l, struct nf_render_scene *s, double a, double b,
		       int to_edge)
{
	int ret;

	clamp_x(l, &a);
	clamp_x(l, &b);
	if (b <= a)
		return 0;
	if (l->have_orun && a <= l->orun_x1 + 0.5) {
		if (b > l->orun_x1)
			l->orun_x1 = b;
		l->orun_edge |= to_edge;
		return 0;
	}
	if ((ret = flush_open_run(l, s)) < 0)
		return ret;
	l->orun_x0 = a;
	l->orun_x1 = b;
	l->orun_edge = to_edge;
	l->have_orun = 1;
	return 0;
}

/*
 * An operation without an end is drawn open from its start until the next
 * operation of the lane starts (the lane's later work shows over it) or, for
 * the last one, to the window's right edge: the end is never invented, and
 * one unknown end does not shade the rest of the lane.
 */
static int close_open(struct nf_render_lane *l, struct nf_render_scene *s, double x)
{
	if (!l->have_open || x <= l->open_x)
		return 0;
	l->have_open = 0;
	return open_region(l, s, l->open_x, x, 0);
}

int nf_render_lane_box(struct nf_render_lane *l, struct nf_render_scene *s, double xa, double xb,
		       int edges)
{
	double w;
	int ret;

	if ((ret = close_open(l, s, xa)) < 0)
		return ret;
	if (xb < l->x0 || xa > l->x0 + l->ncols)
		return 0;
	clamp_x(l, &xa);
	clamp_x(l, &xb);
	w = xb - xa;
	if (w < 1.0) {
		/* Sub-pixel: coverage of the columns it touches; zero-length still shows. */
		double a = xa - l->x0, b = xa - l->x0 + (w > 0.05 ? w : 0.05);
		int c0 = column(l, xa), c1 = column(l, xa + (b - a));

		for (int c = c0; c <= c1; c++) {
			double lo = a > c ? a : c, hi = b < c + 1 ? b : c + 1;

			if (hi > lo)
				l->cover[c] += (float)(hi - lo);
		}
		return 0;
	}
	if (edges && w >= 4.0) {
		l->edge[column(l, xa)] = 1;
		l->edge[column(l, xb - 1.0)] = 1;
	}
	if (l->have_run && xa <= l->run_x1 + 0.5 && xb >= l->run_x0 - 0.5) {
		/* Overlaps the current run (starts arrive nearly sorted): grow it. */
		if (xa < l->run_x0)
			l->run_x0 = xa;
		if (xb > l->run_x1)
			l->run_x1 = xb;
		return 0;
	}
	if (l->have_run &&
	    (ret = nf_render_quads_add(&s->rects[l->rb_fill], l->run_x0, l->y0,
				       l->run_x1 - l->run_x0, l->y1 - l->y0)) < 0)
		return ret;
	l->run_x0 = xa;
	l->run_x1 = xb;
	l->have_run = 1;
	return 0;
}

int nf_render_lane_open(struct nf_render_lane *l, struct nf_render_scene *s, double xa,
			enum nf_render_mk mk)
{
	int ret;

	if ((ret = close_open(l, s, xa)) < 0)
		return ret;
	if (xa > l->x0 + l->ncols)
		return 0;
	if (!l->have_open || xa < l->open_x)
		l->open_x = xa;
	l->have_open = 1;
	if (xa >= l->x0) {
		/* Its start and status marker, when the start is in the window. */
		l->edge[column(l, xa)] = 1;
		l->mark[column(l, xa)] |= (uint8_t)(1u << mk);
	}
	return 0;
}

static int density_level(float c)
{
	if (c <= 0.0f)
		return -1;
	if (c < 0.25f)
		return 0;
	if (c < 0.5f)
		return 1;
	if (c < 0.85f)
		return 2;
	return 3;
}

static int flush_open(struct nf_render_lane *l, struct nf_render_scene *s)
{
	double mid = (l->y0 + l->y1) / 2.0;
	int ret;

	if (l->have_open &&
	    (ret = open_region(l, s, l->open_x, l->x0 + l->ncols, 1)) < 0)
		return ret;
	l->have_open = 0;
	if ((ret = flush_open_run(l, s)) < 0)
		return ret;
	for (int c = 0; c < l->ncols; c++) {
		for (int k = NF_MK_LOST; k <= NF_MK_UNMATCHED; k++) {
			if (!(l->mark[c] & (1u << k)))
				continue;
			/* Markers sit on the lane's top edge, one per status and column. */
			if ((ret = nf_render_quads_add(&s->marks[k], l->x0 + c + 0.5,
						       k == NF_MK_LOST ? l->y0 : mid, 4.0, 0)) < 0)
				return ret;
			break;
		}
	}
	return 0;
}

int nf_render_lane_flush(struct nf_render_lane *l, struct nf_render_scene *s)
{
	double h = l->y1 - l->y0;
	int ret, c = 0;

	if (l->have_run &&
	    (ret = nf_render_quads_add(&s->rects[l->rb_fill], l->run_x0, l->y0,
				       l->run_x1 - l->run_x0, h)) < 0)
		return ret;
	l->have_run = 0;
	/* Density bands: runs of columns at the same level become one rectangle. */
	while (c < l->ncols) {
		int lev = density_level(l->cover[c]), e = c + 1;

		while (e < l->ncols && density_level(l->cover[e]) == lev)
			e++;
		/* A lone sub-pixel box (nothing either side) is widened to 2 px to stay visible. */
		int lone = e - c == 1 && (c == 0 || l->cover[c - 1] <= 0.0f) &&
			   (e == l->ncols || l->cover[e] <= 0.0f);

		if (lev >= 0 &&
		    (ret = nf_render_quads_add(&s->rects[l->rb_dens + lev],
					       l->x0 + c - (lone ? 0.5 : 0.0), l->y0,
					       (double)(e - c) + (lone ? 1.0 : 0.0), h)) < 0)
			return ret;
		c = e;
	}
	for (c = 0; c < l->ncols;) {
		int e = c + 1;

		if (!l->edge[c]) {
			c++;
			continue;
		}
		while (e < l->ncols && l->edge[e])
			e++;
		if ((ret = nf_render_quads_add(&s->rects[l->rb_edge], l->x0 + c, l->y0,
					       (double)(e - c), h)) < 0)
			return ret;
		c = e;
	}
	return flush_open(l, s);
}
