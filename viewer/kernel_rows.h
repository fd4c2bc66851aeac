/*
 * Private to the viewer: the rows and boxes that come from Linux kernel events
 * (the kernel tables of schemas/timeline.sql): a CPU thread row for every
 * thread sched_switch saw run, with a bar where it ran, and arrows from each
 * dma_fence signal to the CPU wait it released. dma_fence timelines are
 * ordinary queues rows and need nothing here.
 */
#ifndef NF_VIEWER_KERNEL_ROWS_H
#define NF_VIEWER_KERNEL_ROWS_H

#include "viewer.h"

/* " UNION SELECT thread FROM cpu_runs ..." to add to the CPU threads query, or
 * "" when operations are filtered by fence (runs belong to no fence). */
const char *nf_render_kernel_threads_sql(const struct nf_render_options *opts);

/* The name the kernel gave a thread (kernel_threads), into name (empty when
 * none is known or the table is missing). */
void nf_render_kernel_thread_name(sqlite3 *db, int64_t thread, char *name, size_t len);

/* Adds the run bars and the signal -> CPU wait arrows. Returns 0 or a negative
 * NF_E* code (NF_ESQL, NF_ENOMEM). */
int nf_render_collect_kernel(sqlite3 *db, const struct nf_render_options *opts,
			     const struct nf_render_layout *lay, struct nf_render_scene *s,
			     struct nf_error *err);

#endif
