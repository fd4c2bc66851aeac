/*
 * The analyzer's ingest of Linux kernel events (the `kernel` stream written by
 * `nftrace import` and `nftrace record --kernel`) into the kernel tables of
 * schemas/timeline.sql and, for dma_fences, into queues, fences, fence_ops,
 * cpu_waits and deps. The builder hands over every kernel event; what needs
 * later events (a fence's signal, a wait's end) is held in memory
 * (kernel_fences.h; past its bound staged in TEMP tables) and written at
 * finish, after the builder has written its own operations.
 */
#ifndef NF_ANALYZER_KERNEL_INGEST_H
#define NF_ANALYZER_KERNEL_INGEST_H

#include <stdint.h>

#include <sqlite3.h>

#include "contract/errors.h"
#include "contract/timeline_writer.h"
#include "nftrace/events.h"

/* Queue and fence numbers of dma_fence context c: NF_KERNEL_TIMELINE_BASE + c
 * (the writer's id space for numbered contexts). */
#define NF_KERNEL_TIMELINE_BASE NF_WRITER_CONTEXT_BASE

struct nf_timeline_kernel_ingest;

/*
 * Takes one kernel event at ns (nanoseconds since the session start), inside
 * the builder's transaction on db. Creates *ki at the first call. Returns 0,
 * NF_ESQL, NF_ENOMEM or NF_EFORMAT (a string id used before its KernelString).
 */
struct nf_bulk;

/* Runs (sched_switch) go into cpu_run_blocks, a row per 1024 runs of a thread
 * (runs.h); dma_fence sightings, vblanks and markers are loaded through bulk
 * (bulk.h) in batches when it is not NULL, else one INSERT each. */
int nf_timeline_kernel_ingest_event(struct nf_timeline_kernel_ingest **ki, sqlite3 *db, struct nf_bulk *bulk, int64_t ns,
			   const struct nf_event *ev, struct nf_error *err);

/* Writes what was staged (open runs, fences, waits, deps). NULL: nothing to do.
 * Returns 0, NF_ESQL or NF_ENOMEM. */
int nf_timeline_kernel_ingest_finish(struct nf_timeline_kernel_ingest *ki, struct nf_error *err);

/* Frees; NULL is a no-op. Does not touch the database. */
void nf_timeline_kernel_ingest_destroy(struct nf_timeline_kernel_ingest *ki);

#endif
