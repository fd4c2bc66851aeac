/*
 * nftrace viewer: draws a session's timeline the way GPUView draws native
 * fences (a row per hardware queue, light pink waits, dark pink signals) with
 * cairo, to PNG, SVG or PDF. It reads the timeline through the SQL schema only.
 */
#ifndef NFTRACE_RENDER_H
#define NFTRACE_RENDER_H

#include <stdint.h>

#include "contract/errors.h"
#include "contract/timeline.h"

#ifdef __cplusplus
extern "C" {
#endif

enum nf_render_theme { NF_THEME_LIGHT, NF_THEME_DARK };

/* Page widths nf_render accepts (pixels; points for SVG and PDF). */
#define NF_RENDER_MIN_WIDTH 640
#define NF_RENDER_MAX_WIDTH 16000

/*
 * A span to draw over the picture (the segments of a critical path): on the
 * row of a hardware queue or a CPU thread, from start_ns to end_ns.
 */
enum nf_render_mark_kind { NF_MARK_WAIT, NF_MARK_EXECUTE, NF_MARK_QUEUE };

struct nf_render_mark {
	enum nf_render_mark_kind kind;
	int on_thread;             /* 0: on queue's row, 1: on thread's row */
	int64_t queue, thread;
	int64_t start_ns, end_ns;
};

struct nf_render_options {
	const char *output;        /* file; format from its extension: .png .svg .pdf */
	const char *title;         /* session name shown in the title, may be NULL */
	int width;                 /* pixels (points for PDF), 0: default */
	/* The window, the queue and fence filters and the CPU thread rows
	 * (contract/timeline.h: by default only the threads that wait, signal,
	 * queued work or own an item get a row, grouped under their process; a
	 * line says how many were left out). */
	struct nf_selection sel;
	enum nf_render_theme theme;
	/* Overlay: spans drawn over the rows in order, joined by a line from each
	 * span's end to the next one's start (a critical path); NULL: none. A span
	 * whose row is not drawn is left out. path_title labels it (may be NULL). */
	const struct nf_render_mark *marks;
	int n_marks;
	const char *path_title;
	int marks_apart;           /* 1: the spans are separate marks, not joined (a diff's
				      changed waits); 0: a path, joined in order */
};

/*
 * Renders the timeline database at db_path (schemas/timeline.sql, opened
 * read-only) to opts->output. Rows: the lanes of their own (timeline view
 * lanes: a GPU ring's jobs, each item on one of three sub-lanes, its queued
 * part shaded), then one per hardware queue grouped by adapter and engine (a
 * node's lane, its items, on the engine's header row), then one per CPU thread
 * (see sel); items that are points in time as lines across the rows or ticks
 * on their thread's row; boxes from queued to end time, open (dashed, until
 * the lane's next operation starts or to the window's right edge) when the end
 * is unknown, an item of unknown end a short open stub; lost spans hatched;
 * signal -> wait arrows. Colours and legend words of items come from the view
 * item_kinds. The same database and options give the same bytes. On failure
 * no output file is left behind.
 * Returns 0, or NF_EINVAL (unknown output extension, bad window, width outside
 * 640..16000, bad filter), NF_ENOENT (no database, output directory missing,
 * a filtered queue, fence, thread or process not in the timeline), NF_EFORMAT
 * (not a timeline database), NF_ESQL, NF_EIO (the output cannot be written),
 * NF_ENOMEM (including too many rows for one page).
 */
int nf_render(const char *db_path, const struct nf_render_options *opts, struct nf_error *err);

/*
 * The same picture drawn from a timeline before its operations are loaded
 * (struct nf_early_timeline, contract/timeline.h) to a .png or .pdf: the
 * operations come from t->each_op; every row, box, marker and label is the
 * one nf_render draws from the finished timeline, but what the dependency
 * merge finds (the signal -> wait links, its causality anomalies), not known
 * yet, which the subtitle says. When t->parallel, the two halves of the
 * queues are drawn on two threads (each_op called on both at once). name
 * (the timeline's, for messages). opts with no selection or overlay: the whole session. Returns
 * nf_render's codes (NF_EINVAL for another format).
 */
int nf_render_early(const struct nf_early_timeline *t, const char *name, const struct nf_render_options *opts,
		    struct nf_error *err);

/*
 * Parses a time as a user types it ("12.5ms", "300us", "300µs", "2s", "1500ns",
 * "42") into nanoseconds; a bare number is nanoseconds. Signs, spaces, other
 * units, trailing junk, sub-nanosecond precision and overflow are refused.
 * Returns 0 or NF_EINVAL (then *ns_out is untouched).
 */
int nf_parse_duration(const char *text, int64_t *ns_out, struct nf_error *err);

#ifdef __cplusplus
}
#endif

#endif
