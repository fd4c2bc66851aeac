/*
 * nftrace html: an interactive report of a session's timeline in one
 * self-contained HTML file (no network, no external script or font): wheel
 * zoom, drag pan, a time ruler that follows, rows collapsible by adapter, node
 * and process, hover details, wait <-> releasing signal highlighting, a search
 * box, overlapping operations stacked in sub-lanes, arrows to CPU waits. It
 * reads the timeline through the SQL schema only (schemas/timeline.sql) and
 * writes the page streaming, so memory does not grow with the session.
 *
 * Linux kernel sessions (nftrace import trace.dat) add their GPU rings on
 * top (jobs: submitted -> started shaded, started -> finished solid; a job's
 * dependencies highlighted on click), vblank lines, user markers and run bars
 * on the thread rows. Windows ETW sessions add a DMA packet row per GPU node
 * and VSync lines. These are written in full up to NF_HTML_MAX_EXTRA each
 * (the page says when a kind was cut).
 *
 * Level of detail: per-row summaries (operation counts in bins) cover the
 * whole window; the details (one record per operation) cover the window's
 * first max_ops operations, from its start up to a cut time. The page says
 * where the cut is and which --from/--to shows the next part in detail.
 */
#ifndef NFTRACE_HTML_H
#define NFTRACE_HTML_H

#include <stdint.h>

#include "contract/errors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Operations with details in one page unless max_ops says otherwise. */
#define NF_HTML_DEFAULT_MAX_OPS 100000
/* Upper bound accepted for max_ops (the page stays below ~100 MB). */
#define NF_HTML_MAX_MAX_OPS 2000000
/* Jobs, job deps, DMA packets, vblanks, VSyncs, markers and runs written at most, each. */
#define NF_HTML_MAX_EXTRA 500000
/* Summary bins per row over the whole window. */
#define NF_HTML_BINS 2048

struct nf_html_options {
	const char *output;        /* the .html file to write */
	const char *title;         /* shown in the page, may be NULL */
	const char *session;       /* session directory, named in the page's note (may be NULL) */
	int64_t from_ns, to_ns;    /* time window; -1: session start / end */
	const int64_t *queues;     /* only these queues (NULL: all) */
	int n_queues;
	const int64_t *fences;     /* only operations on these fences (NULL: all) */
	int n_fences;
	int64_t max_ops;           /* operations with details, 0: NF_HTML_DEFAULT_MAX_OPS */
	/* CPU thread rows, chosen as the static report chooses them (render.h):
	 * the threads that wait, signal, queued GPU work, submitted GPU jobs or
	 * wrote markers; every thread that only ran (cpu_runs) with threads_all,
	 * or when named by threads (name or id) or processes (name or id). */
	int threads_all;
	const char *const *threads;
	int n_threads;
	const char *const *processes;
	int n_processes;
};

/*
 * Writes the interactive report of the timeline database at db_path (opened
 * read-only, one read transaction) to opts->output. On failure no output file
 * is left behind. The same database and options give the same bytes.
 * Returns 0, or NF_EINVAL (no output, bad window, --from past the session's
 * end, max_ops outside 1..NF_HTML_MAX_MAX_OPS), NF_ENOENT (no database, the
 * output directory missing, a filtered queue or fence not in the timeline, a
 * thread or process filter naming no thread or process of the timeline),
 * NF_EFORMAT (not a timeline database), NF_ESQL, NF_EIO (the output cannot be
 * written), NF_ENOMEM.
 */
int nf_html_report(const char *db_path, const struct nf_html_options *opts, struct nf_error *err);

#ifdef __cplusplus
}
#endif

#endif
