/*
 * Private to the viewer: real text in SVG pages. cairo's SVG surface draws
 * glyphs as paths, so a page could not be searched (Ctrl-F), copied from or
 * read by a screen reader. When render.c draws an SVG it attaches a text list
 * to the cairo context; paint.c's text() then records each string (device
 * position, size, weight, colour) instead of drawing it, and render.c writes
 * them as <text> elements, with the <title> tooltips of the operations, into
 * the page cairo produced. Other formats draw text with cairo as before.
 */
#ifndef NF_VIEWER_SVGTEXT_H
#define NF_VIEWER_SVGTEXT_H

#include <cairo.h>
#include <sqlite3.h>
#include <stdio.h>

#include "layout.h"

struct nf_svg_text;  /* one string */
struct nf_svg_tip;   /* one operation's tooltip */

/* Tooltips written at most; the page says how many operations got none. */
#define NF_SVG_MAX_TIPS 20000

/* The text of one SVG page; owned by render.c. */
struct nf_svg_texts {
	struct nf_svg_text *v;
	size_t n, cap;
	struct nf_svg_tip *tips;
	size_t n_tips, cap_tips;
	int64_t tips_left_out;   /* operations wide enough that got no tooltip (over the cap) */
	int failed;        /* an allocation failed: the page is refused (NF_ENOMEM) */
};

/*
 * Reads the operations of the window drawn at least 2 px wide (at most
 * NF_SVG_MAX_TIPS) and keeps for each its box on the page and a <title>:
 * kind, id, queue, fence, value, queued / observed / end times, status.
 * Returns 0, NF_ESQL or NF_ENOMEM.
 */
int nf_render_svg_tips(sqlite3 *db, const struct nf_render_options *opts,
		       const struct nf_render_layout *lay, struct nf_svg_texts *list,
		       struct nf_error *err);

/* Attaches list to cr: text() on cr records instead of drawing. */
void nf_render_svg_attach(cairo_t *cr, struct nf_svg_texts *list);

/*
 * Records s (UTF-8, already cleaned) with its baseline's left end at user
 * (x, y) in cr's current font and source colour when cr has a list attached.
 * Returns 1 when recorded (the caller draws nothing), 0 when cr draws text itself.
 */
int nf_render_svg_text(cairo_t *cr, double x, double y, const char *s);

/* Writes the recorded strings as <text> elements, then the tooltips as
 * transparent <rect> elements holding a <title>. Returns 0 or -1 (write error). */
int nf_render_svg_write(FILE *f, const struct nf_svg_texts *list);

void nf_render_svg_release(struct nf_svg_texts *list);

#endif
