/*
 * nftrace html: an interactive report of a session's timeline in one
 * self-contained HTML file (no network, no external script or font): wheel
 * zoom, drag pan, a time ruler that follows, rows collapsible by adapter, node
 * and process, hover details, wait <-> releasing signal highlighting, a search
 * box, overlapping operations stacked in sub-lanes, arrows to CPU waits. It
 * reads the timeline through the SQL schema only (schemas/timeline.sql) and
 * writes the page streaming, so memory does not grow with the session.
 *
 * The items of the timeline (its views lanes, items, item_links: a GPU
 * ring's jobs, a node's DMA packets, vblanks, VSyncs, user markers) are drawn
 * on their lanes' rows (a lane of its own on top, a node's lane at the head of
 * its queues), across the rows (points in time of a display) or on their
 * thread's row, with what each waited for highlighted on click; the threads'
 * run bars (cpu_runs) on their rows. Items, links and runs are written in full
 * up to NF_HTML_MAX_EXTRA each (the page says when a kind was cut).
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
#include "contract/timeline.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Operations with details in one page unless max_ops says otherwise. */
#define NF_HTML_DEFAULT_MAX_OPS 100000
/* Upper bound accepted for max_ops (the page stays below ~100 MB). */
#define NF_HTML_MAX_MAX_OPS 2000000
/* Items (of each kind), item links and runs written at most, each. */
#define NF_HTML_MAX_EXTRA 500000
/* Summary bins per row over the whole window. */
#define NF_HTML_BINS 2048

struct nf_html_options {
	const char *output;        /* the .html file to write */
	const char *title;         /* shown in the page, may be NULL */
	const char *session;       /* session directory, named in the page's note (may be NULL) */
	/* The window, the queue and fence filters and the CPU thread rows, chosen
	 * as the static report chooses them (contract/timeline.h). */
	struct nf_selection sel;
	int64_t max_ops;           /* operations with details, 0: NF_HTML_DEFAULT_MAX_OPS */
};

/*
 * Writes the interactive report of the timeline database at db_path (opened
 * read-only, one read transaction) to opts->output. On failure no output file
 * is left behind. The same database and options give the same bytes.
 * Returns 0, or NF_EINVAL (no output, bad window or filter, --from past the
 * session's end, max_ops outside 1..NF_HTML_MAX_MAX_OPS), NF_ENOENT (no database, the
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
