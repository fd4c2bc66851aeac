/*
 * CPU runs (a thread on a CPU from switch-in to switch-out) written as
 * blocks: one cpu_run_blocks row holds up to NF_RUNS_BLOCK runs of one thread
 * as a JSON array, and the cpu_runs view of schemas/timeline.sql gives one row
 * per run back to any SQL reader. A SQLite row per context switch (and an
 * index over them) cost more than reading the whole session; a block row costs
 * one insert per NF_RUNS_BLOCK runs.
 *
 * Runs of one thread must be added in time order (a thread runs on one CPU at
 * a time, so the order in which its runs end is their order). Memory: the
 * open blocks of the threads seen, at most NF_RUNS_MAX_BYTES of text in all
 * (past it every open block is written).
 */
#ifndef NF_ANALYZER_RUNS_H
#define NF_ANALYZER_RUNS_H

#include <stdbool.h>
#include <stdint.h>

#include <sqlite3.h>

#include "contract/errors.h"

#define NF_RUNS_BLOCK 1024u
#define NF_RUNS_MAX_BYTES (16u << 20)

struct nf_runs;

/* A writer into db's cpu_run_blocks; NULL with err filled (NF_ESQL, NF_ENOMEM). */
struct nf_runs *nf_runs_create(sqlite3 *db, struct nf_error *err);

/*
 * One run of thread tid on cpu; a time or state not known is passed with its
 * has_ flag false (stored as NULL). Returns 0, NF_ENOMEM (also past 2^22
 * threads) or NF_ESQL with err filled.
 */
int nf_runs_add(struct nf_runs *r, int64_t tid, int64_t cpu, bool has_start, int64_t start_ns, bool has_end,
		int64_t end_ns, bool has_state, int64_t state, struct nf_error *err);

/* Writes every open block and indexes the blocks. Returns 0 or NF_ESQL. */
int nf_runs_finish(struct nf_runs *r, struct nf_error *err);

/* Frees; NULL is a no-op. Does not touch the database. */
void nf_runs_destroy(struct nf_runs *r);

#endif
