/*
 * Private to the viewer: the rows and boxes that come from Linux kernel events
 * (the kernel tables of schemas/timeline.sql): run bars on the CPU thread rows
 * (which threads get a row is layout.c's choice), arrows from each dma_fence
 * signal to the CPU wait it released, GPU jobs on their ring's row, vblank
 * lines and user-marker ticks. dma_fence timelines are ordinary queues rows
 * and need nothing here.
 */
#ifndef NF_VIEWER_KERNEL_ROWS_H
#define NF_VIEWER_KERNEL_ROWS_H

#include "viewer.h"

/* The name the kernel gave a thread (kernel_threads), into name (empty when
 * none is known or the table is missing). */
void nf_render_kernel_thread_name(sqlite3 *db, int64_t thread, char *name, size_t len);

/* Adds the run bars, the signal -> CPU wait arrows, the kernel's lost events,
 * the jobs, vblanks and markers. Returns 0 or a negative NF_E* code (NF_ESQL,
 * NF_ENOMEM). */
int nf_render_collect_kernel(sqlite3 *db, const struct nf_render_options *opts,
			     const struct nf_render_layout *lay, struct nf_render_scene *s,
			     struct nf_error *err);

#endif
