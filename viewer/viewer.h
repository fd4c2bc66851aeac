/*
 * Private to the viewer: the scene, i.e. everything to draw gathered into
 * batches (one per colour and shape) so that each is one cairo path and one
 * fill, and the per-lane level-of-detail accumulator that merges what is
 * narrower than a pixel into density bands. collect.c fills the scene from
 * the database, paint.c draws it with cairo.
 */
#ifndef NF_VIEWER_VIEWER_H
#define NF_VIEWER_VIEWER_H

#include <cairo.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "contract/util_hash.h"

/* A growing list of 4-double items: rectangles, segments or markers. */
struct nf_render_quads {
	double *v;
	size_t n, cap;
};

/* Upper bound on items in one batch (a guard, never reached by a sane page). */
#define NF_RENDER_MAX_QUADS (64u * 1024u * 1024u)

/* Density levels for merged sub-pixel boxes, lightest first. */
#define NF_RENDER_DENSITY_LEVELS 4

/* Rectangle batches, drawn in this order (back to front). */
enum nf_render_rb {
	NF_RB_STRIPE,        /* alternate row background */
	NF_RB_LOST_BG,       /* lost span background (hatched over later) */
	NF_RB_OPEN_WAIT,     /* open-ended regions (translucent, under the boxes) */
	NF_RB_OPEN_SIGNAL,
	NF_RB_OPEN_CPU,
	/* (here: each item kind's NF_KB_OPEN) */
	NF_RB_CPUWAIT_D,     /* + level: density bands */
	NF_RB_CPUWAIT = NF_RB_CPUWAIT_D + NF_RENDER_DENSITY_LEVELS,
	NF_RB_WAIT_D,
	NF_RB_WAIT = NF_RB_WAIT_D + NF_RENDER_DENSITY_LEVELS,
	NF_RB_STALL_D,
	NF_RB_STALL = NF_RB_STALL_D + NF_RENDER_DENSITY_LEVELS,
	NF_RB_SIGNAL_D,
	NF_RB_SIGNAL = NF_RB_SIGNAL_D + NF_RENDER_DENSITY_LEVELS,
	NF_RB_CPUWAIT_EDGE,  /* box edges */
	NF_RB_WAIT_EDGE,
	NF_RB_SIGNAL_EDGE,
	NF_RB_CPU_TICK,      /* CPU signals */
	NF_RB_QUEUED_WAIT,   /* on a CPU thread's row: it queued a GPU wait here */
	NF_RB_QUEUED_SIGNAL, /* ... a GPU signal */
	NF_RB_BLANK,         /* a display's vertical blank, on its row */
	NF_RB_FLIP,          /* a flip on its display's row: queued -> latched */
	NF_RB_FLIP_LATE,     /* ... of a late frame */
	NF_RB_FLIP_DROP,     /* ... dropped (never shown) */
	NF_RB_FRAME_EDGE,    /* a frame's boundary (its present) */
	NF_RB_FRAME_LATE,    /* a late frame no flip shows: its time, marked */
	/* (then each item kind's batches but NF_KB_OPEN, kind after kind) */
	NF_RB_COUNT
};

/*
 * The batches of one item kind (layout's kinds; colours from item_kinds), at
 * NF_RENDER_KB(kind, batch) in the scene's rects.
 */
enum nf_render_kb {
	NF_KB_OPEN,          /* an item of unknown end: a short open stub */
	NF_KB_WAIT_D,        /* its queued part (queued -> started, shaded): density */
	NF_KB_WAIT = NF_KB_WAIT_D + NF_RENDER_DENSITY_LEVELS,
	NF_KB_D,             /* the item (started -> ended): density */
	NF_KB_FILL = NF_KB_D + NF_RENDER_DENSITY_LEVELS,
	NF_KB_EDGE,
	NF_KB_TICK,          /* a point in time on its thread's row */
	NF_KB_COUNT
};
#define NF_RENDER_KB(kind, b) (NF_RB_COUNT + (kind) * NF_KB_COUNT + (b))
#define NF_RENDER_RECTS (NF_RB_COUNT + NF_RENDER_MAX_KINDS * NF_KB_COUNT)

/* Marker batches: (x, y, size, 0) drawn as small shapes. */
enum nf_render_mk {
	NF_MK_LOST,          /* open-ended op, status lost (orange diamond) */
	NF_MK_ZERO_OP,       /* open-ended op, status zero_timestamp (purple circle) */
	NF_MK_REPEAT_OP,     /* open-ended op, status repeated_timestamp (teal circle) */
	NF_MK_UNMATCHED,     /* open-ended op, other status (white circle, grey outline) */
	NF_MK_TS_ZERO,       /* zero timestamp anomaly (purple triangle) */
	NF_MK_TS_REPEAT,     /* repeated timestamp anomaly (teal square) */
	NF_MK_BAD,           /* other anomalies (red triangle) */
	NF_MK_COUNT
};

/* A "lost N" label over a lost span. */
struct nf_render_label {
	double x, y;         /* centre of the text baseline */
	char text[32];
};

/* A coverage gap's label (coverage.c), right-aligned at x. */
struct nf_render_gap_label {
	double x, y;
	int whole;      /* a gap of every row (stacked from the rows' top), not one queue's */
	char text[96];
};

/* A fence and value label inside an operation's box (drawn when its text fits). */
struct nf_render_box_label {
	double x0, x1, y0, y1;  /* the visible part of the box */
	int64_t id;             /* the operation (fence_ops.id) */
	int64_t fence, value;   /* looked up by id after the scan; known 0: none */
	int known;
	int on_dark;            /* a signal box: light text */
};

struct nf_render_scene {
	struct nf_render_quads rects[NF_RENDER_RECTS];
	struct nf_render_quads marks[NF_MK_COUNT];
	struct nf_render_quads hatch;     /* lost spans (rectangles) to hatch */
	struct nf_render_quads dashes;    /* open-ended outlines: x0 y0 x1 y1 */
	struct nf_render_quads links;     /* signal end -> wait end: x0 y0 x1 y1 */
	struct nf_render_quads lines[NF_RENDER_MAX_KINDS]; /* per kind, points across the rows: x y0 x y1 */
	struct nf_render_quads gaps;      /* what the capture does not cover: x y w h (coverage.c) */
	struct nf_render_quads gap_edges; /* where each gap's record begins: x y0 x y1 */
	struct nf_render_gap_label *gap_labels;
	size_t n_gap_labels, cap_gap_labels;
	struct nf_render_label *labels;
	size_t n_labels, cap_labels;
	struct nf_render_box_label *box_labels;
	size_t n_box_labels, cap_box_labels;
	int64_t box_labels_left_out;
	/* The sub-lane of each operation on a stacked lane (op id -> sub-lane), so
	 * that arrows end at their own box; at most NF_RENDER_MAX_SUBS_KEPT kept,
	 * the others' arrows end at their lane's middle. */
	struct nf_u64map subs;
	/* A lane needed more sub-lanes than the layout gave it (a flat layout, see
	 * nf_render_layout_build_flat): the scene is to be collected again. */
	int needs_stacking;
	struct nf_render_depths depths;  /* what each queue's lanes needed (collect_ops) */
	/* What was found, for the subtitle. */
	int64_t n_waits, n_signals, n_open, n_cpu_waits, n_cpu_signals;
	int64_t n_lost_spans, lost_entries, n_anomalies, n_links;
	int64_t n_links_merged;  /* links not drawn: too dense to show one by one */
	int links_too_dense;     /* reading stopped: n_links is a lower bound */
	int64_t n_unplaced;  /* operations without any time (nothing to draw) */
	int64_t n_items[NF_RENDER_MAX_KINDS];  /* items drawn, per kind */
	int64_t n_frames, n_late_frames, n_flips; /* frames and flips drawn (frame_rows.c) */
	int64_t n_gaps;      /* coverage gaps drawn */
	/* Set before collecting: the operations come from it, not from fence_ops
	 * (nf_render_early); its links are not known yet. */
	const struct nf_early_timeline *early;
};

#define NF_RENDER_MAX_SUBS_KEPT ((size_t)1 << 19)

int nf_render_quads_add(struct nf_render_quads *q, double a, double b, double c, double d);
/* Records / looks up an operation's sub-lane (-1 when not recorded). */
int nf_render_sub_put(struct nf_render_scene *s, int64_t id, int sub);
int nf_render_sub_get(const struct nf_render_scene *s, int64_t id);
void nf_render_scene_release(struct nf_render_scene *s);

/*
 * One lane of one row while its boxes stream in ordered by start: wide boxes
 * are merged into runs, sub-pixel boxes add coverage to their pixel columns,
 * box edges and markers are kept once per pixel column. Flushing turns all of
 * it into scene rectangles; memory is bounded by the plot width.
 */
struct nf_render_lane {
	double x0;           /* plot left */
	int ncols;           /* plot width in pixel columns */
	double y0, y1;
	float *cover;        /* per column: sum of sub-pixel coverage */
	uint8_t *edge;       /* per column: an edge is drawn */
	uint8_t *mark;       /* per column: bit per open-ended status */
	double run_x0, run_x1;
	int have_run;
	double open_x;       /* start of the open-ended box waiting for the next start */
	int have_open;
	double orun_x0, orun_x1;  /* merged open-ended regions being built */
	int have_orun, orun_edge;
	int rb_fill, rb_dens, rb_edge, rb_open;  /* batches (rb_dens: first level) */
};

int nf_render_lane_init(struct nf_render_lane *l, const struct nf_render_layout *lay);
void nf_render_lane_release(struct nf_render_lane *l);
void nf_render_lane_reset(struct nf_render_lane *l, double y0, double y1, int rb_fill,
			  int rb_dens, int rb_edge, int rb_open);
/* Adds a box [xa, xb] (device x, any order of calls with xa roughly sorted). */
int nf_render_lane_box(struct nf_render_lane *l, struct nf_render_scene *s, double xa, double xb,
		       int edges);
/*
 * Adds an open-ended box from xa (no end known), with a status marker: it is
 * drawn open until the lane's next box or open box starts, or to the right
 * edge when none does.
 */
int nf_render_lane_open(struct nf_render_lane *l, struct nf_render_scene *s, double xa,
			enum nf_render_mk mk);
int nf_render_lane_flush(struct nf_render_lane *l, struct nf_render_scene *s);

/* Their blanks, flips and frames into the scene (frame_rows.c). 0, NF_ESQL, NF_ENOMEM. */
int nf_render_collect_frames(sqlite3 *db, const struct nf_render_layout *lay, struct nf_render_scene *s,
			     struct nf_error *err);

/*
 * What the capture does not cover (view coverage_gaps, coverage.c): grey bands
 * over every row (a CPU's buffers) or a queue's row (its log), an edge where
 * the record begins, labels. Returns 0, NF_ESQL or NF_ENOMEM.
 */
int nf_render_collect_gaps(sqlite3 *db, const struct nf_render_layout *lay, struct nf_render_scene *s,
			   struct nf_error *err);

/* Fills the scene from the database (collect.c). */
int nf_render_collect(sqlite3 *db, const struct nf_render_options *opts,
		      const struct nf_render_layout *lay, struct nf_render_scene *s,
		      struct nf_error *err);

/*
 * The items of the window (timeline view items, items.c): boxes on their
 * lanes' rows, points in time across the rows or on their thread's row.
 * Returns 0, NF_ESQL or NF_ENOMEM.
 */
int nf_render_collect_items(sqlite3 *db, const struct nf_render_options *opts,
			    const struct nf_render_layout *lay, struct nf_render_scene *s,
			    struct nf_error *err);

/*
 * What the CPU thread rows carry besides their waits and signals (threads.c):
 * run bars (cpu_runs), arrows from a GPU signal to the thread's fence wait it
 * released (fence_ops waits on no queue), and the events the recorder lost
 * (view lost_events) on the CPU threads' header. Returns 0, NF_ESQL or
 * NF_ENOMEM.
 */
int nf_render_collect_threads(sqlite3 *db, const struct nf_render_options *opts,
			      const struct nf_render_layout *lay, struct nf_render_scene *s,
			      struct nf_error *err);

/* Draws opts->marks over the plot (overlay.c), inside the plot's clip. */
void nf_render_paint_overlay(cairo_t *cr, const struct nf_render_options *opts,
			     const struct nf_render_layout *lay, int dark);

/* Draws the page (paint.c); returns 0 or NF_EIO with cairo's reason. */
int nf_render_paint(cairo_t *cr, const struct nf_render_options *opts,
		    const struct nf_render_layout *lay, const struct nf_render_scene *s,
		    struct nf_error *err);

#endif
