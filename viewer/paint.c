/*
 * Draws a collected scene with cairo: the title and legend, the row labels
 * grouped by adapter and engine, the boxes (one path and one fill per colour
 * batch), lost spans hatched, operations without an end dashed and open,
 * markers, signal -> wait links, and the time axis with 1/2/5 ticks. Colours
 * follow GPUView: light pink waits, dark pink signals; an item's colours are
 * its kind's (view item_kinds). Nothing here depends on the clock or the
 * environment, so the same scene gives the same bytes.
 */
#include "viewer.h"
#include "contract/errors.h"
#include "contract/escape.h"
#include "svgtext.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define FONT "DejaVu Sans"

struct rgba {
	double r, g, b, a;
};

struct theme {
	struct rgba bg, text, dim, grid, stripe, header, separator;
	struct rgba lost_bg, hatch, link, dash;
};

#define RGB(hex) { ((hex) >> 16 & 0xff) / 255.0, ((hex) >> 8 & 0xff) / 255.0, ((hex) & 0xff) / 255.0, 1.0 }
#define RGBA(hex, al) { ((hex) >> 16 & 0xff) / 255.0, ((hex) >> 8 & 0xff) / 255.0, ((hex) & 0xff) / 255.0, al }

static const struct theme light = {
	RGB(0xFFFFFF), RGB(0x1F2328), RGB(0x656D76), RGB(0xE4E6EA), RGB(0xF6F7F9),
	RGB(0xEEF0F4), RGB(0xC9CED6), RGB(0xFFE3BF), RGBA(0xE8710A, 0.85), RGBA(0x37474F, 0.55),
	RGB(0x7D8590),
};

static const struct theme dark = {
	RGB(0x16181D), RGB(0xE6E8EB), RGB(0x9AA1AC), RGB(0x2A2E36), RGB(0x1C1F25),
	RGB(0x252932), RGB(0x3A3F4A), RGB(0x4A3512), RGBA(0xFFA040, 0.85), RGBA(0xCFD8DC, 0.55),
	RGB(0x9AA1AC),
};

/* The colours of the data, the same in both themes (GPUView's pinks). */
static const struct rgba c_wait = RGB(0xF4B6C2), c_wait_edge = RGB(0xD97F95);
static const struct rgba c_stall = RGB(0xE3748F);
static const struct rgba c_signal = RGB(0xC2185B), c_signal_edge = RGB(0x7B0C38);
static const struct rgba c_cpu = RGB(0xA7BCD1), c_cpu_edge = RGB(0x5E7A96);
/* The display rows (frame_rows.c): a blank, a flip, a late frame's flip or time. */
static const struct rgba c_blank = RGBA(0x1E88E5, 0.45), c_flip = RGB(0x43A047), c_late = RGB(0xE53935);
/* Markers: lost op, zero-timestamp op, repeated-timestamp op, unmatched op (a white
 * circle with a grey outline), zero timestamp, repeated timestamp, other anomaly. */
static const struct rgba c_mark[NF_MK_COUNT] = {
	RGB(0xE8710A), RGB(0x7B1FA2), RGB(0x00897B), RGB(0xFFFFFF), RGB(0x7B1FA2), RGB(0x00897B),
	RGB(0xD32F2F),
};
/* The outline around each marker (the background's colour, except the unmatched op's). */
static const struct rgba c_mark_outline_unmatched = RGB(0x616161);

static void set_colour(cairo_t *cr, struct rgba c)
{
	if (c.a >= 1.0)
		cairo_set_source_rgb(cr, c.r, c.g, c.b);
	else
		cairo_set_source_rgba(cr, c.r, c.g, c.b, c.a);
}

/* c drawn at alpha a over the background, as an opaque colour. */
static struct rgba mix(struct rgba bg, struct rgba c, double a)
{
	struct rgba m = { bg.r + (c.r - bg.r) * a, bg.g + (c.g - bg.g) * a,
			  bg.b + (c.b - bg.b) * a, 1.0 };

	return m;
}

static struct rgba with_alpha(struct rgba c, double a)
{
	c.a = a;
	return c;
}

/* An item kind's colour (which: its fill, edge or queued part's). */
static struct rgba kind_colour(const struct nf_render_kind *k, const double *which)
{
	struct rgba c = { which[0], which[1], which[2], 1.0 };

	(void)k;
	return c;
}

/* The lightest level still shows a lone zero-length box (a legacy signal). */
static const double level_alpha[NF_RENDER_DENSITY_LEVELS] = { 0.5, 0.65, 0.82, 1.0 };

/* The colour of batch b of item kind k (viewer.h, enum nf_render_kb). */
static struct rgba item_colour(const struct theme *th, const struct nf_render_kind *k, int b)
{
	if (b >= NF_KB_WAIT_D && b < NF_KB_WAIT)
		return mix(th->bg, kind_colour(k, k->wait), level_alpha[b - NF_KB_WAIT_D]);
	if (b >= NF_KB_D && b < NF_KB_FILL)
		return mix(th->bg, kind_colour(k, k->colour), level_alpha[b - NF_KB_D]);
	switch (b) {
	case NF_KB_OPEN: return with_alpha(kind_colour(k, k->colour), 0.18);
	case NF_KB_WAIT: return kind_colour(k, k->wait);
	case NF_KB_EDGE: return kind_colour(k, k->edge);
	default: return kind_colour(k, k->colour);
	}
}

static struct rgba rect_colour(const struct theme *th, const struct nf_render_layout *lay, int rb)
{
	if (rb >= NF_RB_COUNT) {
		int k = (rb - NF_RB_COUNT) / NF_KB_COUNT;

		return k < lay->n_kinds ? item_colour(th, &lay->kinds[k], (rb - NF_RB_COUNT) % NF_KB_COUNT) : th->text;
	}

	if (rb >= NF_RB_CPUWAIT_D && rb < NF_RB_CPUWAIT)
		return mix(th->bg, c_cpu, level_alpha[rb - NF_RB_CPUWAIT_D]);
	if (rb >= NF_RB_WAIT_D && rb < NF_RB_WAIT)
		return mix(th->bg, c_wait, level_alpha[rb - NF_RB_WAIT_D]);
	if (rb >= NF_RB_STALL_D && rb < NF_RB_STALL)
		return mix(th->bg, c_stall, level_alpha[rb - NF_RB_STALL_D]);
	/* Signals stay dark at every density: a light pink band would read as waits. */
	if (rb >= NF_RB_SIGNAL_D && rb < NF_RB_SIGNAL)
		return mix(th->bg, c_signal, 0.78 + 0.22 * level_alpha[rb - NF_RB_SIGNAL_D]);
	switch (rb) {
	case NF_RB_STRIPE: return th->stripe;
	case NF_RB_LOST_BG: return th->lost_bg;
	case NF_RB_CPUWAIT: return c_cpu;
	case NF_RB_WAIT: return c_wait;
	case NF_RB_STALL: return c_stall;
	case NF_RB_SIGNAL: return c_signal;
	case NF_RB_OPEN_WAIT: return with_alpha(c_wait, 0.3);
	case NF_RB_OPEN_SIGNAL: return with_alpha(c_signal, 0.12);
	case NF_RB_OPEN_CPU: return with_alpha(c_cpu, 0.4);
	case NF_RB_CPUWAIT_EDGE: return c_cpu_edge;
	case NF_RB_WAIT_EDGE: return c_wait_edge;
	case NF_RB_SIGNAL_EDGE: return c_signal_edge;
	case NF_RB_CPU_TICK: return c_signal;
	case NF_RB_QUEUED_WAIT: return c_wait_edge;
	case NF_RB_QUEUED_SIGNAL: return c_signal;
	case NF_RB_BLANK: return c_blank;
	case NF_RB_FLIP: return c_flip;
	case NF_RB_FLIP_LATE: return c_late;
	case NF_RB_FLIP_DROP: return with_alpha(th->dim, 0.5);
	case NF_RB_FRAME_EDGE: return th->text;
	case NF_RB_FRAME_LATE: return c_late;
	default: return th->text;
	}
}

static void fill_quads(cairo_t *cr, const struct nf_render_quads *q, struct rgba c)
{
	if (!q->n)
		return;
	for (size_t i = 0; i < q->n; i++) {
		const double *v = &q->v[i * 4];

		cairo_rectangle(cr, v[0], v[1], v[2], v[3]);
	}
	set_colour(cr, c);
	cairo_fill(cr);
}

static void font(cairo_t *cr, double size, int bold)
{
	cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL,
			       bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
	cairo_set_font_size(cr, size);
}

/*
 * Text from a session (queue names, an imported capture's strings) or the command
 * line (a title from a directory name) need not be UTF-8, and cairo refuses
 * the whole drawing for one bad byte or noncharacter: what is not printable
 * UTF-8 is drawn as '?' (nf_esc_text). Returns s when it is clean, else buf.
 */
static const char *utf8_clean(const char *s, char *buf, size_t len)
{
	if (nf_esc_text_is_clean(s, 0))
		return s;
	return nf_esc_text_buf(buf, len, s, 0);
}

static double text_width(cairo_t *cr, const char *s)
{
	cairo_text_extents_t e;
	char buf[1024];

	cairo_text_extents(cr, utf8_clean(s, buf, sizeof(buf)), &e);
	return e.x_advance;
}

enum align { LEFT, CENTRE, RIGHT };

/* Draws s with its baseline at y; returns the advance. */
static double text(cairo_t *cr, double x, double y, const char *s, enum align al, struct rgba c)
{
	double w = text_width(cr, s);

	if (al == CENTRE)
		x -= w / 2.0;
	else if (al == RIGHT)
		x -= w;
	char buf[1024];

	set_colour(cr, c);
	/* An SVG page gets the string as a <text> element (svgtext.h). */
	if (nf_render_svg_text(cr, x, y, utf8_clean(s, buf, sizeof(buf))))
		return w;
	cairo_move_to(cr, x, y);
	cairo_show_text(cr, utf8_clean(s, buf, sizeof(buf)));
	return w;
}

/* Copies s into buf, cut at a UTF-8 boundary with "…" so that it fits in maxw. */
static void ellipsize(cairo_t *cr, const char *s, double maxw, char *buf, size_t len)
{
	size_t n;

	snprintf(buf, len, "%s", s);
	if (text_width(cr, buf) <= maxw)
		return;
	n = strlen(buf);
	while (n > 0) {
		n--;
		while (n > 0 && ((unsigned char)buf[n] & 0xC0) == 0x80)
			n--;
		if (n + 4 > len)
			continue;
		memcpy(buf + n, "\xE2\x80\xA6", 4);
		if (text_width(cr, buf) <= maxw)
			return;
	}
}

/* Formats a time exactly, in the largest unit it reaches ("12.5 ms", "5.00005 s", "42 ns"). */
static void fmt_duration(char *buf, size_t len, int64_t ns)
{
	static const struct {
		int64_t div;
		int digits;
		const char *unit;
	} u[] = { { 1000000000, 9, "s" }, { 1000000, 6, "ms" }, { 1000, 3, "\xC2\xB5s" } };
	uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;

	for (size_t i = 0; i < 3; i++) {
		if (a >= (uint64_t)u[i].div) {
			char frac[16];
			int n = u[i].digits;

			snprintf(frac, sizeof(frac), "%0*" PRIu64, n, a % (uint64_t)u[i].div);
			while (n > 0 && frac[n - 1] == '0')
				frac[--n] = '\0';
			snprintf(buf, len, "%s%" PRIu64 "%s%s %s", ns < 0 ? "-" : "",
				 a / (uint64_t)u[i].div, n ? "." : "", frac, u[i].unit);
			return;
		}
	}
	snprintf(buf, len, "%" PRId64 " ns", ns);
}

/* Appends "text" to a " · "-separated list. */
static void append(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t len, const char *fmt, ...)
{
	size_t n = strlen(buf);
	va_list ap;

	if (n && n + 5 < len) {
		memcpy(buf + n, " \xC2\xB7 ", 5);
		n += 4;
		buf[n] = '\0';
	}
	va_start(ap, fmt);
	vsnprintf(buf + n, len - n, fmt, ap);
	va_end(ap);
}

static void paint_title(cairo_t *cr, const struct nf_render_options *opts,
			const struct nf_render_layout *lay, const struct nf_render_scene *s,
			const struct theme *th)
{
	char line[512], info[256], fit[512], d0[32], d1[32];
	double w;

	line[0] = '\0';
	info[0] = '\0';
	font(cr, 19, 1);
	w = text(cr, 16, 30, opts->title && *opts->title ? opts->title : "nftrace session", LEFT,
		 th->text);
	if (lay->has_duration) {
		fmt_duration(d0, sizeof(d0), lay->session_end);
		font(cr, 15, 0);
		snprintf(line, sizeof(line), "  %s", d0);
		w += text(cr, 16 + w, 30, line, LEFT, th->dim);
	}
	if (lay->scenario[0])
		append(info, sizeof(info), "scenario %s", lay->scenario);
	if (lay->source[0])
		append(info, sizeof(info), "source %s", lay->source);
	if (lay->mode[0])
		append(info, sizeof(info), "mode %s", lay->mode);
	if (lay->seed[0])
		append(info, sizeof(info), "seed %s", lay->seed);
	font(cr, 12, 0);
	/* On a narrow page the facts are shortened rather than drawn over the title. */
	if (info[0] && lay->width - 32 - (16 + w + 24) > 60) {
		ellipsize(cr, info, lay->width - 32 - (16 + w + 24), fit, sizeof(fit));
		text(cr, lay->width - 16, 30, fit, RIGHT, th->dim);
	}

	line[0] = '\0';
	/* First, so that a narrow page does not cut it off: what the dependency
	 * merge finds (links, causality anomalies) is not known to a first picture. */
	if (s->early)
		append(line, sizeof(line), "first picture: no links or late-signal findings yet");
	fmt_duration(d0, sizeof(d0), lay->t0);
	fmt_duration(d1, sizeof(d1), lay->t1);
	append(line, sizeof(line), "window %s \xE2\x80\x93 %s", d0, d1);
	append(line, sizeof(line), "%zu queue%s", lay->n_queues, lay->n_queues == 1 ? "" : "s");
	if (lay->n_threads)
		append(line, sizeof(line), "%zu CPU thread%s", lay->n_threads,
		       lay->n_threads == 1 ? "" : "s");
	for (int k = 0; k < lay->n_kinds; k++)
		if (s->n_items[k])
			append(line, sizeof(line), "%" PRId64 " %s", s->n_items[k],
			       s->n_items[k] == 1 ? lay->kinds[k].noun : lay->kinds[k].plural);
	if (s->n_frames)
		append(line, sizeof(line), "%" PRId64 " frame%s (%" PRId64 " late)", s->n_frames,
		       s->n_frames == 1 ? "" : "s", s->n_late_frames);
	append(line, sizeof(line), "%" PRId64 " wait%s, %" PRId64 " signal%s", s->n_waits,
	       s->n_waits == 1 ? "" : "s", s->n_signals, s->n_signals == 1 ? "" : "s");
	if (s->n_open)
		append(line, sizeof(line), "%" PRId64 " without an end", s->n_open);
	if (s->n_lost_spans)
		append(line, sizeof(line), "%" PRId64 " lost span%s (%" PRId64 " entries)",
		       s->n_lost_spans, s->n_lost_spans == 1 ? "" : "s", s->lost_entries);
	if (s->n_anomalies - s->n_lost_spans > 0)
		append(line, sizeof(line), "%" PRId64 " other anomalies",
		       s->n_anomalies - s->n_lost_spans);
	if (s->early)
		;  /* unknown: said at the line's start */
	else if (s->links_too_dense)
		append(line, sizeof(line), "links too dense to draw (narrow the window)");
	else if (s->n_links_merged)
		append(line, sizeof(line), "%" PRId64 " links, %" PRId64 " not drawn (too dense)",
		       s->n_links, s->n_links_merged);
	else
		append(line, sizeof(line), "%" PRId64 " link%s", s->n_links,
		       s->n_links == 1 ? "" : "s");
	if (s->n_unplaced)
		append(line, sizeof(line), "%" PRId64 " ops without any time", s->n_unplaced);
	if (lay->shared)
		append(line, sizeof(line), "%" PRId64 " op%s deeper than %d share a sub-lane (narrow "
		       "--from/--to)", lay->shared, lay->shared == 1 ? "" : "s", lay->max_sub);
	ellipsize(cr, line, lay->width - 32, fit, sizeof(fit));
	text(cr, 16, 52, fit, LEFT, th->dim);
}

enum swatch { SW_RECT, SW_STALL, SW_OPEN, SW_HATCH, SW_MARK, SW_MARK2, SW_OPEN_MARK, SW_TICK, SW_QUEUED,
	      SW_LINK };

static void paint_hatch_lines(cairo_t *cr, double x0, double y0, double x1, double y1,
			      const struct theme *th)
{
	/* Diagonal lines every 6 units across the box (clipped by the caller). */
	for (double x = x0 - (y1 - y0); x < x1; x += 6.0) {
		cairo_move_to(cr, x, y1);
		cairo_line_to(cr, x + (y1 - y0), y0);
	}
	set_colour(cr, th->hatch);
	cairo_set_line_width(cr, 1.2);
	cairo_stroke(cr);
}

static void mark_path(cairo_t *cr, int mk, double x, double y, double r)
{
	switch (mk) {
	case NF_MK_LOST: /* diamond */
		cairo_move_to(cr, x, y - r);
		cairo_line_to(cr, x + r, y);
		cairo_line_to(cr, x, y + r);
		cairo_line_to(cr, x - r, y);
		cairo_close_path(cr);
		break;
	case NF_MK_TS_ZERO: /* triangle pointing down into the row */
		cairo_move_to(cr, x - r, y - r * 0.8);
		cairo_line_to(cr, x + r, y - r * 0.8);
		cairo_line_to(cr, x, y + r * 0.9);
		cairo_close_path(cr);
		break;
	case NF_MK_TS_REPEAT: /* square */
		cairo_rectangle(cr, x - r * 0.75, y - r * 0.75, r * 1.5, r * 1.5);
		break;
	case NF_MK_BAD: /* triangle pointing up into the row */
		cairo_move_to(cr, x - r, y + r * 0.8);
		cairo_line_to(cr, x + r, y + r * 0.8);
		cairo_line_to(cr, x, y - r * 0.9);
		cairo_close_path(cr);
		break;
	default: /* circle */
		cairo_new_sub_path(cr);
		cairo_arc(cr, x, y, r * 0.8, 0, 2 * M_PI);
		cairo_close_path(cr);
		break;
	}
}

/* A marker's fill and outline, the same on the rows and in the legend. */
static void fill_mark(cairo_t *cr, int mk, const struct theme *th)
{
	set_colour(cr, c_mark[mk]);
	cairo_fill_preserve(cr);
	set_colour(cr, mk == NF_MK_UNMATCHED ? c_mark_outline_unmatched : th->bg);
	cairo_set_line_width(cr, mk == NF_MK_UNMATCHED ? 1.2 : 1.0);
	cairo_stroke(cr);
}

static void paint_marks(cairo_t *cr, const struct nf_render_quads *q, int mk,
			const struct theme *th)
{
	if (!q->n)
		return;
	for (size_t i = 0; i < q->n; i++)
		mark_path(cr, mk, q->v[i * 4], q->v[i * 4 + 1], q->v[i * 4 + 2]);
	fill_mark(cr, mk, th);
}

/* Draws one legend swatch in the 22x12 box at (x, y). */
static void paint_swatch(cairo_t *cr, enum swatch sw, struct rgba c, int mk, double x, double y,
			 const struct theme *th)
{
	switch (sw) {
	case SW_RECT:
		cairo_rectangle(cr, x, y, 22, 12);
		set_colour(cr, c);
		cairo_fill(cr);
		break;
	case SW_STALL:
		cairo_rectangle(cr, x, y, 22, 12);
		set_colour(cr, c_wait);
		cairo_fill(cr);
		cairo_rectangle(cr, x + 9, y, 13, 12);
		set_colour(cr, c_stall);
		cairo_fill(cr);
		break;
	case SW_OPEN:
		cairo_rectangle(cr, x, y, 22, 12);
		set_colour(cr, with_alpha(c_wait, 0.3));
		cairo_fill(cr);
		cairo_rectangle(cr, x, y, 1, 12);
		set_colour(cr, c_wait_edge);
		cairo_fill(cr);
		cairo_move_to(cr, x, y + 0.5);
		cairo_line_to(cr, x + 22, y + 0.5);
		cairo_move_to(cr, x, y + 11.5);
		cairo_line_to(cr, x + 22, y + 11.5);
		cairo_set_dash(cr, (const double[]){ 3.0, 2.0 }, 2, 0);
		cairo_set_line_width(cr, 1.0);
		set_colour(cr, th->dash);
		cairo_stroke(cr);
		cairo_set_dash(cr, NULL, 0, 0);
		break;
	case SW_HATCH:
		cairo_save(cr);
		cairo_rectangle(cr, x, y, 22, 12);
		set_colour(cr, th->lost_bg);
		cairo_fill_preserve(cr);
		cairo_clip(cr);
		paint_hatch_lines(cr, x, y, x + 22, y + 12, th);
		cairo_restore(cr);
		break;
	case SW_MARK:
		mark_path(cr, mk, x + 11, y + 6, 5);
		fill_mark(cr, mk, th);
		break;
	case SW_MARK2: /* an anomaly's marker and the circle of an op it left without an end */
		mark_path(cr, mk, x + 6, y + 6, 5);
		fill_mark(cr, mk, th);
		mark_path(cr, mk == NF_MK_TS_ZERO ? NF_MK_ZERO_OP : NF_MK_REPEAT_OP, x + 17, y + 6, 5);
		fill_mark(cr, mk == NF_MK_TS_ZERO ? NF_MK_ZERO_OP : NF_MK_REPEAT_OP, th);
		break;
	case SW_OPEN_MARK: /* an open band starting with the marker */
		cairo_rectangle(cr, x + 6, y + 1, 16, 10);
		set_colour(cr, with_alpha(c_wait, 0.3));
		cairo_fill(cr);
		mark_path(cr, mk, x + 6, y + 6, 4.5);
		fill_mark(cr, mk, th);
		break;
	case SW_TICK:
		cairo_rectangle(cr, x + 10, y - 1, 2, 14);
		set_colour(cr, c);
		cairo_fill(cr);
		break;
	case SW_QUEUED:
		cairo_rectangle(cr, x + 5, y + 1, 2, 5);
		set_colour(cr, c_wait_edge);
		cairo_fill(cr);
		cairo_rectangle(cr, x + 14, y + 1, 2, 5);
		set_colour(cr, c_signal);
		cairo_fill(cr);
		break;
	case SW_LINK:
		cairo_move_to(cr, x, y + 10);
		cairo_line_to(cr, x + 17, y + 3);
		set_colour(cr, th->link);
		cairo_set_line_width(cr, 1.2);
		cairo_stroke(cr);
		cairo_move_to(cr, x + 22, y + 1);
		cairo_line_to(cr, x + 15, y + 1);
		cairo_line_to(cr, x + 18, y + 7);
		cairo_close_path(cr);
		cairo_fill(cr);
		break;
	}
}

static void paint_legend(cairo_t *cr, const struct nf_render_layout *lay, const struct theme *th)
{
	/* The swatches of nf_render_legend_labels (layout.c), in the same order. */
	static const struct {
		enum swatch sw;
		int mk;
	} items[] = {
		{ SW_RECT, 0 },            /* wait */
		{ SW_STALL, 0 },           /* stall */
		{ SW_RECT, 1 },            /* signal */
		{ SW_RECT, 2 },            /* CPU wait */
		{ SW_TICK, 0 },            /* CPU signal */
		{ SW_QUEUED, 0 },          /* queued on the CPU */
		{ SW_LINK, 0 },            /* signal -> released wait */
		{ SW_OPEN, 0 },            /* no end known */
		{ SW_OPEN_MARK, NF_MK_UNMATCHED }, /* its start: no end matched */
		{ SW_OPEN_MARK, NF_MK_LOST },      /* its start: lost in a gap */
		{ SW_HATCH, 0 },           /* lost span */
		{ SW_MARK2, NF_MK_TS_ZERO },   /* zero timestamp */
		{ SW_MARK2, NF_MK_TS_REPEAT }, /* repeated timestamp */
		{ SW_MARK, NF_MK_BAD },    /* other anomaly */
	};
	_Static_assert(sizeof(items) / sizeof(items[0]) == NF_RENDER_LEGEND_ITEMS,
		       "one swatch per legend label");

	font(cr, 11, 0);
	for (size_t i = 0; i < NF_RENDER_LEGEND_ITEMS; i++) {
		int rect = items[i].sw == SW_RECT;
		struct rgba c = rect && items[i].mk == 1 ? c_signal : rect && items[i].mk == 2 ? c_cpu : c_wait;
		double x = lay->legend_x[i], y = lay->legend_y[i];

		paint_swatch(cr, items[i].sw, items[i].sw == SW_TICK ? c_signal : c, items[i].mk, x,
			     y, th);
		text(cr, x + 28, y + 10, nf_render_legend_labels[i], LEFT, th->text);
	}
	/* The item kinds the timeline has: a box (its queued part beside it when it
	 * has one), a line across the rows, or a tick on a thread's row. */
	for (int i = 0; i < lay->n_kinds; i++) {
		const struct nf_render_kind *k = &lay->kinds[i];
		double x = k->legend_x, y = k->legend_y;

		if (!k->present)
			continue;
		if (k->shape == NF_SHAPE_SPAN) {
			if (memcmp(k->wait, k->colour, sizeof(k->wait))) {
				cairo_rectangle(cr, x, y, 22, 12);
				set_colour(cr, kind_colour(k, k->wait));
				cairo_fill(cr);
				cairo_rectangle(cr, x + 9, y, 13, 12);
				set_colour(cr, kind_colour(k, k->colour));
				cairo_fill(cr);
			} else {
				paint_swatch(cr, SW_RECT, kind_colour(k, k->colour), 0, x, y, th);
			}
		} else {
			cairo_rectangle(cr, x + 10, y - 1, k->shape == NF_SHAPE_LINE ? 1 : 1.5,
					k->shape == NF_SHAPE_LINE ? 14 : 10);
			set_colour(cr, kind_colour(k, k->colour));
			cairo_fill(cr);
		}
		text(cr, x + 28, y + 10, k->legend, LEFT, th->text);
	}
}

/* The title a header row shows (ellipsized to the picture's width, in the
 * header's font, which cr must have). */
static void header_title(cairo_t *cr, const struct nf_render_layout *lay, const struct nf_render_row *r,
			 char *fit, size_t len)
{
	char buf[160];

	if (r->kind == NF_ROW_CPU_HEAD && lay->threads_left_out)
		snprintf(buf, sizeof(buf), "CPU threads \xC2\xB7 %zu more that only ran are left out "
			 "(--threads all, --thread NAME|TID, --process NAME|PID show them)",
			 lay->threads_left_out);
	else if (r->kind == NF_ROW_CPU_HEAD)
		snprintf(buf, sizeof(buf), "CPU threads");
	else if (r->kind == NF_ROW_DISPLAY_HEAD)
		snprintf(buf, sizeof(buf), "Displays \xC2\xB7 flips ready \xE2\x86\x92 latched (red: late, grey: dropped) "
			 "\xC2\xB7 blue: blanks \xC2\xB7 black: presents");
	else /* a group of lanes, an adapter (queue_labels.group_label) */
		snprintf(buf, sizeof(buf), "%s", r->name);
	ellipsize(cr, buf, lay->width - 32, fit, len);
}

/* Where a header row's title ends (x), when the box from y to y + h crosses
 * that row; 0 when it crosses none. */
static double header_title_end(cairo_t *cr, const struct nf_render_layout *lay, double y, double h)
{
	char fit[160];

	for (size_t i = 0; i < lay->n_rows; i++) {
		const struct nf_render_row *r = &lay->rows[i];

		if ((r->kind != NF_ROW_ADAPTER && r->kind != NF_ROW_CPU_HEAD && r->kind != NF_ROW_GROUP &&
		     r->kind != NF_ROW_DISPLAY_HEAD) ||
		    y + h <= r->y + 2 || y >= r->y + r->h)
			continue;
		cairo_save(cr);
		font(cr, 13, 1);
		header_title(cr, lay, r, fit, sizeof(fit));
		double end = 12 + text_width(cr, fit);

		cairo_restore(cr);
		return end;
	}
	return 0;
}

static void paint_row_labels(cairo_t *cr, const struct nf_render_layout *lay,
			     const struct theme *th)
{
	char buf[160], fit[160];

	for (size_t i = 0; i < lay->n_rows; i++) {
		const struct nf_render_row *r = &lay->rows[i];

		switch (r->kind) {
		case NF_ROW_ADAPTER:
		case NF_ROW_CPU_HEAD:
		case NF_ROW_GROUP:
		case NF_ROW_DISPLAY_HEAD:
			cairo_rectangle(cr, 0, r->y + 2, lay->width, r->h - 2);
			set_colour(cr, th->header);
			cairo_fill(cr);
			cairo_rectangle(cr, 0, r->y + 2, lay->width, 1);
			set_colour(cr, th->separator);
			cairo_fill(cr);
			font(cr, 13, 1);
			header_title(cr, lay, r, fit, sizeof(fit));
			text(cr, 12, r->y + 20, fit, LEFT, th->text);
			break;
		case NF_ROW_ENGINE:
			font(cr, 11, 0);
			if (r->lane >= 0) /* the node's lane: its items on this row */
				snprintf(buf, sizeof(buf), "%s \xC2\xB7 %s", lay->lanes[r->lane].label,
					 lay->lanes[r->lane].what);
			else if (r->engine < 0)
				snprintf(buf, sizeof(buf), "engine ?");
			else
				snprintf(buf, sizeof(buf), "node %" PRId64 " \xC2\xB7 engine %" PRId64,
					 r->node, r->engine);
			text(cr, 20, r->y + 15, buf, LEFT, th->dim);
			break;
		case NF_ROW_QUEUE:
			font(cr, 12, 1);
			ellipsize(cr, r->name[0] ? r->name : "queue", NF_RENDER_LABEL_W - 44, fit,
				  sizeof(fit));
			text(cr, 32, r->y + 19, fit, LEFT, th->text);
			font(cr, 10.5, 0);
			text(cr, 32, r->y + 35, r->handle, LEFT, th->dim);
			/* Stacked lanes say how deep they go, and when the cap made some share. */
			if ((r->n_sub[0] > 1 || r->n_sub[1] > 1) && r->h >= 56) {
				snprintf(buf, sizeof(buf), "stacked: %d wait%s, %d signal%s deep", r->n_sub[0],
					 r->n_sub[0] == 1 ? "" : "s", r->n_sub[1], r->n_sub[1] == 1 ? "" : "s");
				text(cr, 32, r->y + 50, buf, LEFT, th->dim);
			}
			if (r->shared && r->h >= 70) {
				snprintf(buf, sizeof(buf), "%" PRId64 " op%s deeper than %d share", r->shared,
					 r->shared == 1 ? "" : "s", lay->max_sub);
				text(cr, 32, r->y + 64, buf, LEFT, c_mark[NF_MK_BAD]);
			}
			break;
		case NF_ROW_LANE: {
			const struct nf_render_lane_info *l = &lay->lanes[r->lane];

			font(cr, 12, 1);
			ellipsize(cr, l->label, NF_RENDER_LABEL_W - 44, fit, sizeof(fit));
			text(cr, 20, r->y + 14, fit, LEFT, th->text);
			font(cr, 10, 0);
			snprintf(buf, sizeof(buf), "%" PRId64 " %s", l->items,
				 l->items == 1 && l->kind >= 0 ? lay->kinds[l->kind].noun : l->what);
			text(cr, 20, r->y + 26, buf, LEFT, th->dim);
			break;
		}
		case NF_ROW_DISPLAY:
			font(cr, 12, 1);
			if (r->id >= 0)
				snprintf(buf, sizeof(buf), "display %.80s", r->name[0] ? r->name : "?");
			else
				snprintf(buf, sizeof(buf), "%.80s (no display)", r->name[0] ? r->name : "frames");
			ellipsize(cr, buf, NF_RENDER_LABEL_W - 44, fit, sizeof(fit));
			text(cr, 20, r->y + 22, fit, LEFT, th->text);
			font(cr, 10, 0);
			snprintf(buf, sizeof(buf), "%" PRId64 " frame%s", r->engine, r->engine == 1 ? "" : "s");
			text(cr, 20, r->y + 35, buf, LEFT, th->dim);
			break;
		case NF_ROW_PROC:
			font(cr, 11, 1);
			snprintf(buf, sizeof(buf), "%.60s \xC2\xB7 process %" PRId64, r->name[0] ? r->name : "?", r->id);
			ellipsize(cr, buf, NF_RENDER_LABEL_W - 20, fit, sizeof(fit));
			text(cr, 12, r->y + 13, fit, LEFT, th->dim);
			break;
		case NF_ROW_CPU:
			font(cr, 12, 0);
			if (r->name[0]) /* the thread's name (view threads) */
				snprintf(buf, sizeof(buf), "%.60s (thread %" PRId64 ")", r->name, r->id);
			else
				snprintf(buf, sizeof(buf), "CPU thread %" PRId64, r->id);
			text(cr, 20, r->y + 18, buf, LEFT, th->text);
			break;
		}
	}
}

/* Formats a tick time in unit with as many decimals as the step needs. */
static void fmt_tick(char *buf, size_t len, int64_t t, int64_t step, int64_t unit,
		     const char *uname)
{
	int64_t ip = t / unit, fp = t % unit, scale = unit;
	int dec = 0;

	for (int64_t s = step; s < unit && dec < 9; s *= 10) {
		dec++;
		scale /= 10;
	}
	if (dec == 0)
		snprintf(buf, len, "%" PRId64 " %s", ip, uname);
	else
		snprintf(buf, len, "%" PRId64 ".%0*" PRId64 " %s", ip, dec > 9 ? 9 : dec < 1 ? 1 : dec, fp / scale,
			 uname);
}

static void paint_axis(cairo_t *cr, const struct nf_render_layout *lay, const struct theme *th,
		       int grid)
{
	int64_t span = lay->t1 - lay->t0, unit, step, t, base = 0;
	int max_ticks = (int)((lay->plot_x1 - lay->plot_x0) / 110.0);
	const char *uname = nf_render_time_unit(span, &unit);
	char buf[64], from[48];

	step = nf_render_tick_step(span, max_ticks > 1 ? max_ticks : 2);
	/* The first tick at or after t0. */
	t = lay->t0 / step * step;
	if (t < lay->t0)
		t += step;
	if (grid) {
		for (int64_t g = t; g <= lay->t1; g += step) {
			double x = floor(nf_render_layout_x(lay, g)) + 0.5;

			cairo_move_to(cr, x, lay->rows_y0);
			cairo_line_to(cr, x, lay->rows_y1);
			if (g > INT64_MAX - step)
				break;
		}
		set_colour(cr, th->grid);
		cairo_set_line_width(cr, 1.0);
		cairo_stroke(cr);
		return;
	}
	/* Deep zoom far into a session: label ticks from the window start ("+5 µs"). */
	if (lay->t1 / unit >= 10000)
		base = lay->t0;
	cairo_rectangle(cr, lay->plot_x0, lay->axis_y, lay->plot_x1 - lay->plot_x0, 1);
	set_colour(cr, th->dim);
	cairo_fill(cr);
	font(cr, 11, 0);
	for (; t <= lay->t1; t += step) {
		double x = floor(nf_render_layout_x(lay, t)) + 0.5, w;

		cairo_rectangle(cr, x - 0.5, lay->axis_y, 1, 6);
		set_colour(cr, th->dim);
		cairo_fill(cr);
		fmt_tick(buf + 1, sizeof(buf) - 1, t - base, step, unit, uname);
		buf[0] = '+';
		w = text_width(cr, base ? buf : buf + 1);
		/* Keep the last label on the page. */
		if (x + w / 2 > lay->width - 4)
			x = lay->width - 4 - w / 2;
		text(cr, x, lay->axis_y + 20, base ? buf : buf + 1, CENTRE, th->text);
		if (t > INT64_MAX - step)
			break;
	}
	font(cr, 10.5, 0);
	if (base) {
		fmt_duration(from, sizeof(from), base);
		snprintf(buf, sizeof(buf), "time since %s", from);
	} else {
		snprintf(buf, sizeof(buf), "time since session start");
	}
	text(cr, lay->plot_x0 - 30, lay->axis_y + 20, buf, RIGHT, th->dim);
}

static void paint_links(cairo_t *cr, const struct nf_render_quads *q, const struct theme *th)
{
	if (!q->n)
		return;
	for (size_t i = 0; i < q->n; i++) {
		const double *v = &q->v[i * 4];

		cairo_move_to(cr, v[0], v[1]);
		cairo_line_to(cr, v[2], v[3]);
	}
	set_colour(cr, th->link);
	cairo_set_line_width(cr, 1.1);
	cairo_stroke(cr);
	for (size_t i = 0; i < q->n; i++) {
		const double *v = &q->v[i * 4];
		double dx = v[2] - v[0], dy = v[3] - v[1], len = sqrt(dx * dx + dy * dy);

		if (len < 2.0)
			continue;
		dx /= len;
		dy /= len;
		cairo_move_to(cr, v[2], v[3]);
		cairo_line_to(cr, v[2] - dx * 7 - dy * 3.5, v[3] - dy * 7 + dx * 3.5);
		cairo_line_to(cr, v[2] - dx * 7 + dy * 3.5, v[3] - dy * 7 - dx * 3.5);
		cairo_close_path(cr);
	}
	cairo_fill(cr);
}

/*
 * Fence and value inside the boxes where they fit: the longest of
 * "fence 0x5 = 12", "0x5 = 12", "0x5=12" narrower than the box.
 */
static void paint_box_labels(cairo_t *cr, const struct nf_render_scene *s)
{
	static const struct rgba on_light = RGB(0x5A1025), on_dark = RGB(0xFFFFFF);
	char buf[64];

	font(cr, 9, 0);
	for (size_t i = 0; i < s->n_box_labels; i++) {
		const struct nf_render_box_label *l = &s->box_labels[i];
		double room = l->x1 - l->x0 - 6.0;

		if (!l->known)
			continue;

		for (int form = 0; form < 3; form++) {
			snprintf(buf, sizeof(buf), form == 0 ? "fence 0x%" PRIx64 " = %" PRId64
				 : form == 1 ? "0x%" PRIx64 " = %" PRId64 : "0x%" PRIx64 "=%" PRId64,
				 (uint64_t)l->fence, l->value);
			if (text_width(cr, buf) <= room) {
				text(cr, l->x0 + 3.0, (l->y0 + l->y1) / 2.0 + 3.2, buf, LEFT,
				     l->on_dark ? on_dark : on_light);
				break;
			}
		}
	}
}

/* What the capture does not cover, under everything: translucent bands (they
 * add up where several CPUs were missing) and a dashed edge where each record
 * begins. */
static void paint_gaps(cairo_t *cr, const struct nf_render_scene *s, const struct theme *th)
{
	for (size_t i = 0; i < s->gaps.n; i++) {
		const double *v = &s->gaps.v[i * 4];

		cairo_rectangle(cr, v[0], v[1], v[2], v[3]);
		set_colour(cr, with_alpha(th->dim, 0.12));
		cairo_fill(cr);
	}
	if (!s->gap_edges.n)
		return;
	for (size_t i = 0; i < s->gap_edges.n; i++) {
		const double *v = &s->gap_edges.v[i * 4];

		cairo_move_to(cr, v[0] + 0.5, v[1]);
		cairo_line_to(cr, v[2] + 0.5, v[3]);
	}
	cairo_set_dash(cr, (const double[]){ 5.0, 3.0 }, 2, 0);
	cairo_set_line_width(cr, 1.0);
	set_colour(cr, with_alpha(th->dim, 0.8));
	cairo_stroke(cr);
	cairo_set_dash(cr, NULL, 0, 0);
}

static void paint_data(cairo_t *cr, const struct nf_render_options *opts,
		       const struct nf_render_layout *lay, const struct nf_render_scene *s,
		       const struct theme *th)
{
	cairo_save(cr);
	cairo_rectangle(cr, lay->plot_x0, lay->rows_y0, lay->plot_x1 - lay->plot_x0,
			lay->rows_y1 - lay->rows_y0);
	cairo_clip(cr);
	fill_quads(cr, &s->rects[NF_RB_STRIPE], rect_colour(th, lay, NF_RB_STRIPE));
	paint_gaps(cr, s, th);
	paint_axis(cr, lay, th, 1);
	/* Points in time across the rows, kind after kind, under everything else. */
	for (int k = 0; k < lay->n_kinds; k++) {
		const struct nf_render_quads *q = &s->lines[k];

		if (!q->n)
			continue;
		for (size_t i = 0; i < q->n; i++) {
			const double *v = &q->v[i * 4];

			cairo_move_to(cr, v[0], v[1]);
			cairo_line_to(cr, v[2], v[3]);
		}
		cairo_set_line_width(cr, 1.0);
		set_colour(cr, with_alpha(kind_colour(&lay->kinds[k], lay->kinds[k].colour), 0.45));
		cairo_stroke(cr);
	}
	/* Back to front: lost spans, open regions (items' stubs with them), boxes,
	 * then the items' boxes, kind after kind. */
	for (int rb = NF_RB_LOST_BG; rb < NF_RB_CPUWAIT_D; rb++)
		fill_quads(cr, &s->rects[rb], rect_colour(th, lay, rb));
	for (int k = 0; k < lay->n_kinds; k++)
		fill_quads(cr, &s->rects[NF_RENDER_KB(k, NF_KB_OPEN)], rect_colour(th, lay, NF_RENDER_KB(k, NF_KB_OPEN)));
	for (int rb = NF_RB_CPUWAIT_D; rb < NF_RB_COUNT; rb++)
		fill_quads(cr, &s->rects[rb], rect_colour(th, lay, rb));
	for (int k = 0; k < lay->n_kinds; k++)
		for (int b = NF_KB_OPEN + 1; b < NF_KB_COUNT; b++)
			fill_quads(cr, &s->rects[NF_RENDER_KB(k, b)], rect_colour(th, lay, NF_RENDER_KB(k, b)));
	if (s->hatch.n) {
		double bx0 = lay->plot_x1, by0 = lay->rows_y1, bx1 = lay->plot_x0, by1 = lay->rows_y0;

		cairo_save(cr);
		for (size_t i = 0; i < s->hatch.n; i++) {
			const double *v = &s->hatch.v[i * 4];

			cairo_rectangle(cr, v[0], v[1], v[2], v[3]);
			bx0 = fmin(bx0, v[0]);
			by0 = fmin(by0, v[1]);
			bx1 = fmax(bx1, v[0] + v[2]);
			by1 = fmax(by1, v[1] + v[3]);
		}
		cairo_clip(cr);
		/* One hatch per row band keeps the stroke short on tall pages. */
		for (size_t i = 0; i < s->hatch.n; i++) {
			const double *v = &s->hatch.v[i * 4];

			if (i > 0 && v[1] == s->hatch.v[(i - 1) * 4 + 1])
				continue;
			paint_hatch_lines(cr, bx0, v[1],
					  bx1, v[1] + v[3], th);
		}
		cairo_restore(cr);
	}
	paint_box_labels(cr, s);
	if (s->dashes.n) {
		for (size_t i = 0; i < s->dashes.n; i++) {
			const double *v = &s->dashes.v[i * 4];

			cairo_move_to(cr, v[0], v[1]);
			cairo_line_to(cr, v[2], v[3]);
		}
		cairo_set_dash(cr, (const double[]){ 4.0, 3.0 }, 2, 0);
		cairo_set_line_width(cr, 1.0);
		set_colour(cr, th->dash);
		cairo_stroke(cr);
		cairo_set_dash(cr, NULL, 0, 0);
	}
	paint_links(cr, &s->links, th);
	for (int mk = 0; mk < NF_MK_COUNT; mk++)
		paint_marks(cr, &s->marks[mk], mk, th);
	nf_render_paint_overlay(cr, opts, lay, th == &dark);
	font(cr, 10, 0);
	/* A label of the whole rows' stack over a header's title goes below the
	 * header, and the labels stacked under it with it (igt's display header
	 * was written over); never below the rows. A queue's own labels stay. */
	double dy = 0;

	for (size_t i = 0; i < s->n_gap_labels; i++) {
		const struct nf_render_gap_label *l = &s->gap_labels[i];
		double w = text_width(cr, l->text), x = l->x - w < lay->plot_x0 + 2 ? lay->plot_x0 + 2 + w : l->x;
		double y = l->whole ? l->y + dy : l->y;

		for (int k = 0; l->whole && k < 4; k++) {
			double end = header_title_end(cr, lay, y - 9.5, 13);

			if (end <= 0 || end + 6 <= x - w - 3)
				break;
			const struct nf_render_row *r = NULL;

			for (size_t j = 0; j < lay->n_rows && !r; j++)
				if (y - 9.5 < lay->rows[j].y + lay->rows[j].h && y + 3.5 > lay->rows[j].y + 2)
					r = &lay->rows[j];
			if (!r)
				break;
			if (r->y + r->h + 10.5 + 3.5 > lay->rows_y1)
				break; /* no room below the header: over it, as before */
			dy += r->y + r->h + 10.5 - y;
			y = l->y + dy;
		}
		cairo_rectangle(cr, x - w - 3, y - 9.5, w + 6, 13);
		set_colour(cr, with_alpha(th->bg, 0.85));
		cairo_fill(cr);
		text(cr, x, y, l->text, RIGHT, th->dim);
	}
	font(cr, 10, 1);
	for (size_t i = 0; i < s->n_labels; i++) {
		const struct nf_render_label *l = &s->labels[i];
		double w = text_width(cr, l->text);

		cairo_rectangle(cr, l->x - w / 2 - 3, l->y - 9.5, w + 6, 13);
		set_colour(cr, with_alpha(th->bg, 0.85));
		cairo_fill(cr);
		text(cr, l->x, l->y, l->text, CENTRE, th->text);
	}
	cairo_restore(cr);
}

int nf_render_paint(cairo_t *cr, const struct nf_render_options *opts,
		    const struct nf_render_layout *lay, const struct nf_render_scene *s,
		    struct nf_error *err)
{
	const struct theme *th = opts->theme == NF_THEME_DARK ? &dark : &light;
	cairo_status_t st;

	cairo_set_source_rgb(cr, th->bg.r, th->bg.g, th->bg.b);
	cairo_paint(cr);
	paint_title(cr, opts, lay, s, th);
	paint_legend(cr, lay, th);
	paint_row_labels(cr, lay, th);
	paint_data(cr, opts, lay, s, th);
	/* The plot's left edge and the row separators. */
	cairo_rectangle(cr, lay->plot_x0 - 1, lay->rows_y0, 1, lay->rows_y1 - lay->rows_y0);
	set_colour(cr, th->separator);
	cairo_fill(cr);
	if (lay->n_rows == 0) {
		font(cr, 13, 0);
		text(cr, (lay->plot_x0 + lay->plot_x1) / 2, lay->rows_y0 + 28,
		     "nothing to draw: no queues or CPU threads in this timeline", CENTRE, th->dim);
	}
	paint_axis(cr, lay, th, 0);
	st = cairo_status(cr);
	if (st != CAIRO_STATUS_SUCCESS)
		return nf_error_set(err, NF_EIO, "drawing: %s", cairo_status_to_string(st));
	return 0;
}
