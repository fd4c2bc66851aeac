/*
 * Private to analyzer/: the dma_fence sightings and CPU waits of a kernel
 * session held in memory until finish (kernel_ingest.c), then written as
 * fence_ops (signals, then waits), queue_threads, cpu_waits and deps rows by
 * one nf_bulk load per table (bulk.h), with the operation ids assigned here:
 * a wait's deps row names its signal's id without reading it back.
 *
 * The rows are the ones kernel_ingest.c's TEMP-table path writes (it stages
 * the same sightings in temp.k_fences and temp.k_waits and writes them with
 * SQL at finish); that path stays for sessions with more fences or waits than
 * are held here (nf_kf_sight and nf_kf_wait say "full", the caller moves what
 * is held into the TEMP tables and goes on there). Memory: at most max fences
 * (48 bytes each, plus their contexts' windows, 4 bytes an entry and all
 * windows together at most 8 max + 2^20 entries, or for the fences outside a
 * window an 8-byte slot at most four times over) and max waits (40 bytes each).
 */
#ifndef NF_ANALYZER_KERNEL_FENCES_H
#define NF_ANALYZER_KERNEL_FENCES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "contract/errors.h"
#include "contract/util_hash.h"

struct nf_bulk;

/* Fences and waits held by default (NFTRACE_KERNEL_FENCES_IN_MEMORY overrides). */
#define NF_KF_DEFAULT_MAX (1u << 20)

enum { NF_KF_INIT = 1, NF_KF_EMIT = 2, NF_KF_SIGNAL = 4, NF_KF_TID = 8, NF_KF_HASHED = 16 };

/* A fence (context, seqno) with the first time each sighting was seen. */
struct nf_kf_fence {
	int64_t seq, init, emit, signal;
	uint32_t ctx, tid;   /* tid: the first emit's thread */
	uint32_t has;        /* NF_KF_* */
};

/* A CPU wait, in the order its row was made (its end, or the trace's end). */
struct nf_kf_wait {
	int64_t seq, start, end;
	uint32_t ctx, tid;
	bool has_start, has_end;
};

/*
 * A context's fences by seqno (a dma_fence context numbers its fences in
 * order): idx[seqno - base] is the fence's index + 1 in f, 0 none. A lookup
 * there touches the memory of the fences just seen, where a hash probe was a
 * cache miss each (11% of the x10 dma_fence build's CPU).
 */
struct nf_kf_window {
	int64_t base;
	uint32_t *idx;
	size_t len, cap, count;
};

struct nf_kfences {
	struct nf_kf_fence *f;
	size_t nf, capf;
	struct nf_kf_window *win; /* the windows, and context -> its window */
	size_t nwin, capwin;
	size_t win_total;    /* entries of all windows' idx together (KF_WIN_TOTAL at most) */
	struct nf_u64map win_of;
	uint64_t *slot;      /* the fences outside their window (NF_KF_HASHED): open addressing (KF_SLOT) */
	size_t cap_slot, n_hashed;
	struct nf_kf_wait *w;
	size_t nw, capw;
	size_t max;          /* fences, and waits, held at most */
};

/* Zeroed with the limit: NF_KF_DEFAULT_MAX, or NFTRACE_KERNEL_FENCES_IN_MEMORY when set. */
void nf_kf_init(struct nf_kfences *m);

/* Frees what is held (the struct is zeroed, max kept). */
void nf_kf_free(struct nf_kfences *m);

/*
 * A sighting (one of NF_KF_INIT, NF_KF_EMIT, NF_KF_SIGNAL) of fence (ctx, seq)
 * at ns; an emit's tid is kept with its time. Returns 0, 1 when the fence is
 * new and max fences are held already (nothing kept), or NF_ENOMEM.
 */
int nf_kf_sight(struct nf_kfences *m, uint32_t ctx, int64_t seq, uint32_t kind, int64_t ns, uint32_t tid);

/* A wait's row. Returns 0, 1 when max waits are held already (nothing kept), or NF_ENOMEM. */
int nf_kf_wait(struct nf_kfences *m, uint32_t tid, uint32_t ctx, int64_t seq, bool has_start, int64_t start,
	       bool has_end, int64_t end);

/*
 * temp.k_fstart(context, start_ns): each context's first sighting,
 * min(coalesce(init, emit, signal)), for the queues rows. Returns 0, NF_ENOMEM or NF_ESQL.
 */
int nf_kf_write_starts(struct nf_kfences *m, sqlite3 *db, struct nf_error *err);

/*
 * The rows: a fence_ops signal per fence in coalesce(emit, init, signal),
 * context, seqno order, the queue_threads of the emits, then per wait in
 * coalesce(start, end), arrival order: a fence_ops wait, a cpu_waits row and,
 * when its fence's signal came no later than its end, a deps row. With
 * k_fences, the (empty) TEMP table temp.k_fences is replaced by a read-only
 * virtual table over the fences (context, seqno, init_ns, emit_ns, signal_ns,
 * emit_tid, op_id), for the jobs' SQL: the fences move to it and are freed
 * with the connection (m holds none after). Returns 0, NF_ENOMEM or NF_ESQL
 * with err filled.
 */
int nf_kf_write(struct nf_kfences *m, sqlite3 *db, struct nf_bulk *bk, bool k_fences, struct nf_error *err);

#endif
