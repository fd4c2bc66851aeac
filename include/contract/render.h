/*
 * nftrace viewer: draws a session's timeline the way GPUView draws native
 * fences (a row per hardware queue, light pink waits, dark pink signals) with
 * cairo, to PNG, SVG or PDF. It reads the timeline through the SQL schema only.
 */
#ifndef NFTRACE_RENDER_H
#define NFTRACE_RENDER_H

#include <stdint.h>

#include "contract/errors.h"

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
	int64_t from_ns, to_ns;    /* time window; -1: session start / end */
	const int64_t *queues;     /* only these queues (NULL: all) */
	int n_queues;
	const int64_t *fences;     /* only operations on these fences (NULL: all) */
	int n_fences;
	enum nf_render_theme theme;
	/* CPU thread rows of Linux kernel sessions. By default only the threads
	 * that submitted GPU jobs, waited on fences or wrote markers (and, for the
	 * runtime's sessions, waited, signaled or queued work) get a row, grouped
	 * under their process; a line says how many were left out. */
	int threads_all;           /* a row for every thread that ran */
	const char *const *threads;/* also these threads: a thread id or a task name (NULL: none) */
	int n_threads;
	const char *const *processes; /* also every thread of these processes: id or name */
	int n_processes;
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
 * read-only) to opts->output. Rows: the GPU rings of Linux kernel jobs (a
 * box per job: submitted -> started shaded, started -> finished solid), then
 * one per hardware queue grouped by adapter and engine, then one per CPU
 * thread (see threads_all); vblank lines and user-marker ticks; boxes from queued to end time, open
 * (dashed, until the lane's next operation starts or to the window's right
 * edge) when the end is unknown; lost spans
 * hatched; signal -> wait arrows. The same database and options give the same
 * bytes. On failure no output file is left behind.
 * Returns 0, or NF_EINVAL (unknown output extension, bad window, width outside
 * 640..16000, bad filter), NF_ENOENT (no database, output directory missing,
 * a filtered queue not in the timeline), NF_EFORMAT (not a timeline database),
 * NF_ESQL, NF_EIO (the output cannot be written), NF_ENOMEM (including too
 * many rows for one page).
 */
int nf_render(const char *db_path, const struct nf_render_options *opts, struct nf_error *err);

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
