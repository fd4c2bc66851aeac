/*
 * Private to the viewer (and its tests): where everything goes on the page.
 * The layout is computed from the timeline database and the render options
 * only, without cairo, so that a test can ask where a queue's row or a time
 * lands and check the pixels of a rendered PNG there. Rows: the GPU rings of
 * Linux kernel jobs first, then one row per hardware queue grouped by adapter
 * and engine, then one row per CPU thread (kernel sessions: grouped by process).
 */
#ifndef NF_VIEWER_LAYOUT_H
#define NF_VIEWER_LAYOUT_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "contract/errors.h"
#include "contract/render.h"

#define NF_RENDER_DEFAULT_WIDTH 1600
#define NF_RENDER_MAX_HEIGHT 30000

/* Horizontal geometry, in pixels (points for SVG and PDF). */
#define NF_RENDER_LABEL_W 250.0   /* label column left of the plot */
#define NF_RENDER_MARGIN_R 28.0   /* right of the plot */

/* Vertical geometry. */
#define NF_RENDER_TITLE_H 66.0
#define NF_RENDER_LEGEND_H 24.0  /* per line of the legend */
#define NF_RENDER_ADAPTER_H 28.0
#define NF_RENDER_ENGINE_H 20.0
#define NF_RENDER_QUEUE_H 46.0
#define NF_RENDER_CPU_H 28.0
#define NF_RENDER_RING_H 30.0
#define NF_RENDER_PROC_H 18.0
#define NF_RENDER_NODE_H 30.0    /* a node row with its DMA packets (ETW captures) */
#define NF_RENDER_DISPLAY_H 48.0 /* a display row: blanks, flips, frame boundaries */
#define NF_RENDER_AXIS_H 50.0

/*
 * The legend: its labels in order (paint.c draws a swatch for each) and where
 * they go; placed here, with a generous width estimate, so that the rows
 * start below however many lines it takes.
 */
#define NF_RENDER_LEGEND_ITEMS 14
extern const char *const nf_render_legend_labels[NF_RENDER_LEGEND_ITEMS];
/* Two more for imported ETW captures (lay->etw): DMA packets and VSyncs. */
#define NF_RENDER_LEGEND_ETW_ITEMS 2
extern const char *const nf_render_legend_etw_labels[NF_RENDER_LEGEND_ETW_ITEMS];

enum nf_render_row_kind {
	NF_ROW_ADAPTER,   /* header of an adapter group */
	NF_ROW_ENGINE,    /* header of an engine within an adapter */
	NF_ROW_QUEUE,     /* one hardware queue: a wait lane over a signal lane */
	NF_ROW_CPU_HEAD,  /* header of the CPU threads */
	NF_ROW_CPU,       /* one CPU thread */
	NF_ROW_RING_HEAD, /* header of the GPU rings (Linux kernel jobs) */
	NF_ROW_RING,      /* one GPU ring: its jobs */
	NF_ROW_PROC,      /* a process, above its threads' rows */
	NF_ROW_DISPLAY_HEAD, /* header of the displays (frames, frame_rows.c) */
	NF_ROW_DISPLAY,   /* one display: its blanks, flips and frames; id -1: frames no display
			     shows (user marker frames, composed presents) */
};

/* The lanes of a row: where boxes of each kind are drawn. */
enum nf_render_lane_kind { NF_LANE_WAIT, NF_LANE_SIGNAL, NF_LANE_CPU };

struct nf_render_row {
	enum nf_render_row_kind kind;
	int64_t id;          /* queue handle, thread id, adapter or engine ordinal */
	int64_t adapter;     /* adapter ordinal, -1 unknown */
	int64_t engine, node;
	char name[96];       /* queue name, adapter name, ring, process name ("" if unknown) */
	char driver[16];     /* NF_ROW_RING: the driver (amdgpu, drm_sched, i915) */
	double y, h;         /* top edge and height */
	/* NF_ROW_QUEUE: sub-lanes of the wait [0] and signal [1] lanes (at least 1):
	 * operations that overlap in time are stacked, one per sub-lane, as GPUView
	 * stacks packets by queue depth; shared: operations deeper than the cap that
	 * share a sub-lane with another (the row says so). */
	int n_sub[2];
	int64_t shared;
};

struct nf_render_layout {
	double width, height;
	double plot_x0, plot_x1;  /* the time area */
	double rows_y0, rows_y1;  /* the rows area */
	double axis_y;            /* top of the time axis */
	int legend_lines;         /* the legend wraps on narrow pages */
	double legend_x[NF_RENDER_LEGEND_ITEMS], legend_y[NF_RENDER_LEGEND_ITEMS];
	double legend_etw_x[NF_RENDER_LEGEND_ETW_ITEMS], legend_etw_y[NF_RENDER_LEGEND_ETW_ITEMS];
	int64_t t0, t1;           /* the time window drawn, t0 < t1 */
	int64_t session_end;      /* end of the session (duration_ns, or the last time seen) */
	int has_duration;         /* session_end came from meta.duration_ns */
	char source[64], mode[64], seed[32], scenario[64];
	int etw;                  /* an imported ETW capture: engine rows are node rows with
				     DMA packets, queues are contexts (etw_rows.c) */
	struct nf_render_row *rows;
	size_t n_rows;
	size_t n_queues, n_threads;
	size_t n_rings;
	size_t n_displays;        /* display rows (frames) */
	size_t threads_left_out;  /* threads that ran but got no row (see nf_render_options) */
	int max_sub;              /* the cap on sub-lanes per lane used for this page */
	int flat;                 /* built by nf_render_layout_build_flat: depths not known */
	int64_t shared;           /* operations that share a sub-lane (sum over rows) */
};

/* The display rows (frame_rows.c), at the top: the displays with flips or
 * frames in the window, and one for frames no display shows; none with a queue
 * or fence filter. push adds a row. Returns 0, NF_ESQL, NF_ENOMEM. */
int nf_render_place_display_rows(sqlite3 *db, const struct nf_render_options *opts, struct nf_render_layout *lay,
				 size_t *cap, double *y,
				 int (*push)(struct nf_render_layout *, size_t *, const struct nf_render_row *,
					     struct nf_error *),
				 struct nf_error *err);

/*
 * Computes the layout for the database and options (see nf_render): the window,
 * the rows and the page size. Returns 0, NF_EINVAL (bad window or width),
 * NF_ENOENT (a filtered queue that is not in the timeline), NF_ENOMEM, NF_ESQL.
 * On success release with nf_render_layout_release().
 */
int nf_render_layout_build(sqlite3 *db, const struct nf_render_options *opts,
			   struct nf_render_layout *lay, struct nf_error *err);

/*
 * Depths found by a scene's pass (per queue handle, sorted: sub-lanes of the
 * wait and signal lanes, operations sharing), at sub-lane cap `cap`.
 */
struct nf_render_depths {
	int64_t *queue;
	int (*n_sub)[2];
	int64_t *shared;
	size_t n;
	int cap;
};

/*
 * nf_render_layout_build with the depths a flat scene already found (used
 * instead of the depth pass while the cap is known->cap). Same returns.
 */
int nf_render_layout_build_known(sqlite3 *db, const struct nf_render_options *opts,
				 struct nf_render_layout *lay, const struct nf_render_depths *known,
				 struct nf_error *err);

/*
 * The same without the depth pass: every queue lane has one sub-lane. The
 * scene's pass then finds whether any lane needs more (scene.needs_stacking);
 * only then is the full layout built and the scene collected again, so a page
 * where nothing overlaps wide enough to stack (a whole large session, where
 * boxes are density) reads the operations once. Same returns.
 */
int nf_render_layout_build_flat(sqlite3 *db, const struct nf_render_options *opts,
				struct nf_render_layout *lay, struct nf_error *err);

/* Frees what the layout holds; safe on a zeroed or released layout. */
void nf_render_layout_release(struct nf_render_layout *lay);

/* The x coordinate of a time (not clamped to the plot). */
double nf_render_layout_x(const struct nf_render_layout *lay, int64_t t);

/* The row of a queue or CPU thread, or NULL when it is not drawn. */
const struct nf_render_row *nf_render_layout_queue(const struct nf_render_layout *lay,
						   int64_t queue);
const struct nf_render_row *nf_render_layout_thread(const struct nf_render_layout *lay,
						    int64_t thread);
/* The row of a GPU ring (jobs.driver, jobs.ring; NULL ring matches ""), or NULL. */
const struct nf_render_row *nf_render_layout_ring(const struct nf_render_layout *lay, const char *driver,
						  const char *ring);

/* The vertical extent [*y0, *y1) of a lane within a row (all its sub-lanes). */
void nf_render_lane_extent(const struct nf_render_row *row, enum nf_render_lane_kind lane,
			   double *y0, double *y1);

/*
 * Sub-lanes. Operations overlapping in time on one lane of a queue are placed
 * first-fit in start order (the order the analyzer stores them per queue and
 * kind), which uses as many sub-lanes as the deepest overlap (interval
 * colouring); at most cap sub-lanes, beyond which an operation shares the
 * sub-lane that frees first and is counted. Boxes narrower than
 * NF_RENDER_STACK_MIN_W at this zoom open none (they are density bands). The layout (depth pass), the
 * scene (collect.c) and the SVG tooltips (svgtext.c) replay the same
 * placement on the same rows in the same order, so they agree.
 */
#define NF_RENDER_MAX_SUB 24
/* Narrower boxes (page px) never open a sub-lane: they share the one freeing first. */
#define NF_RENDER_STACK_MIN_W 3.0

struct nf_render_stack {
	double end[NF_RENDER_MAX_SUB];  /* per sub-lane: the right end of its last box */
	int n, cap;
	int64_t shared;
};

void nf_render_stack_reset(struct nf_render_stack *st, int cap);
/* Places the interval [xa, xb] (page x, xa <= xb); returns its sub-lane. */
int nf_render_stack_place(struct nf_render_stack *st, double xa, double xb);

/*
 * The page interval of a fence operation, from its start (queued, else
 * observed, else end time) and end (has_end 0: open, drawn from the start on):
 * a completion before its start is drawn as it is (swapped).
 */
void nf_render_op_span(const struct nf_render_layout *lay, int64_t start, int has_end, int64_t end,
		       double *xa, double *xb);

/* The vertical extent of sub-lane k of a lane of a queue row (1 px apart when stacked). */
void nf_render_sublane_extent(const struct nf_render_row *row, enum nf_render_lane_kind lane, int k,
			      double *y0, double *y1);
/* The height of one sub-lane when a lane has n of them. */
double nf_render_sublane_h(int n);

/*
 * The depth pass (collect.c): for the queues (sorted handles) the number of
 * sub-lanes their wait and signal lanes need in the window, at most cap, and
 * how many operations share. Returns 0, NF_ESQL or NF_ENOMEM.
 */
int nf_render_collect_depths(sqlite3 *db, const struct nf_render_options *opts,
			     const struct nf_render_layout *lay, const int64_t *queues, size_t n,
			     int cap, int (*n_sub)[2], int64_t *shared, struct nf_error *err);

/*
 * The SQL of the operations of the window in storage order: columns queue,
 * is_wait, start, observed, end, status (NULL unless open), thread (NULL
 * without a queued time), fence, value, id, queued; ?1 = t0, ?2 = t1, queue
 * between ?3 and ?4 (full 0: only queue, is_wait, start and end, the others
 * NULL, for the depth pass; 1: fence, value and queued NULL, for the scene; 2: all); where: more conditions (" AND ...") or NULL. Each of the
 * passes above wraps it; sqlite3_free() it.
 */
char *nf_render_ops_sql(const char *select_head, const char *select_tail, const char *qf,
			const char *ff, int full, const char *where);

/*
 * A "nice" tick step (1, 2 or 5 times a power of ten, in ns) so that the span
 * gets at most max_ticks ticks; and the unit to print it in ("ns", "µs", "ms",
 * "s") with its size in ns.
 */
int64_t nf_render_tick_step(int64_t span_ns, int max_ticks);
const char *nf_render_time_unit(int64_t span_ns, int64_t *unit_ns);

/*
 * Formats " AND col IN (v0,v1,...)" for a filter list (empty string when n is
 * 0). Returns a malloc'd string, or NULL when out of memory.
 */
char *nf_render_in_list(const char *col, const int64_t *v, int n);

#endif
