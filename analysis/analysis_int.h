/*
 * nftrace analysis, private: the in-memory model of a timeline that the
 * critical path, stall blame and hang check walk (loaded by model.c).
 */
#ifndef NF_ANALYSIS_INT_H
#define NF_ANALYSIS_INT_H

#include "contract/analysis.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

#include "contract/util_hash.h"

/* An index into one of the model's arrays, or NONE. */
#define AN_NONE (-1)

/* One fence_ops row. */
struct an_op {
	int64_t id, queue, fence, value, queued, observed, end, thread;
	int32_t qidx;      /* index in a->queues, AN_NONE when queue is NULL (a thread's wait) */
	int32_t qpos;      /* position in its queue's operations */
	int32_t fidx;      /* index in a->fences, AN_NONE when the fence is NULL */
	int32_t prev;      /* the queue's previous operation with a known end, AN_NONE */
	int32_t rel_op;    /* the signal that released this wait (deps), AN_NONE */
	int32_t rel_cpu;   /* the CPU signal that released it (deps), AN_NONE */
	bool is_signal, has_queued, has_observed, has_end, has_thread, has_value;
	bool has_dep;      /* a deps row names this wait (it was released) */
	bool prev_known, rel_known; /* lazy model: prev / rel_op, rel_cpu, has_dep looked up */
	bool done;         /* it ran: a status other than 'unmatched' / 'unsignaled', or an end */
};

struct an_queue {
	int64_t queue;
	char *name;        /* NULL when the queues table has none */
	int32_t *ops;      /* its operations in queued (id) order */
	size_t n, cap;
	int32_t last_done; /* position of its last operation that ran, AN_NONE if none */
};

/* A signal of a fence that ran at a known time: a GPU signal or a CPU signal. */
struct an_sig {
	int64_t t, value;
	int64_t id;        /* fence_ops.id, or cpu_signals.id when cpu */
	int32_t op, csig;  /* indexes: one of them is AN_NONE (both in a model of open operations) */
	bool cpu;
};

struct an_fence {
	int64_t fence, initial;
	bool has_initial, kernel, known; /* known: a fences row exists */
	struct an_sig *sigs; /* in time order */
	size_t n, cap;
	int64_t *prefix_max; /* prefix_max[i] = max value of sigs[0..i] */
	int64_t done_max;    /* highest value of any signal that ran (even at an unknown time) */
	int64_t done_max_op; /* the first operation (id order) to signal it, -1: a CPU signal */
	bool any_done;
	/* model of open operations: where its signals came from, and the lowered-value
	 * check of a fence signaled from one queue only, done in queue (id) order */
	int64_t src_queue;   /* the one signaling queue; -1 none yet */
	bool multi_src;      /* signaled from several queues or from the CPU: sorted in sigs */
	bool have_last;
	int64_t last_value, last_t, last_id;
};

struct an_csig {
	int64_t id, thread, fence, value, ts;
	int32_t fidx;
	bool has_ts, has_thread;
};

struct an_cwait {
	int64_t id, thread, fence, value, start, end;
	int32_t fidx;
	int32_t rel_op, rel_cpu; /* the first signal of the fence to reach the value, by end */
	bool has_start, has_end, has_thread, satisfied;
	bool as_op;        /* adapter NULL: a kernel wait, also a fence_ops row on no queue */
	bool info_known;   /* rel_op, rel_cpu and blocking computed (lazily in a lazy model) */
	bool blocking;     /* it blocked its thread: the thread did nothing meanwhile and did not
			      release it itself (else an asynchronous wait) */
};

struct an_thread {
	int64_t thread;
	int32_t *waits;    /* satisfied CPU waits with an end, in end order */
	size_t n, cap;
};

struct nf_analysis {
	struct an_op *ops;
	size_t n_ops;
	struct an_queue *queues;
	size_t n_queues, cap_queues;
	struct an_fence *fences;
	size_t n_fences, cap_fences;
	struct an_csig *csigs;
	size_t n_csigs;
	struct an_cwait *cwaits;
	size_t n_cwaits;
	struct an_thread *threads;
	size_t n_threads, cap_threads;
	struct nf_u64map qmap, fmap, tmap;
	/* A lazy model (nf_analysis_open_lazy) loads operations on demand; a model
	 * of open operations (nf_analysis_load_open) holds only what the hang check
	 * needs. */
	bool lazy, open_only;
	sqlite3 *db;
	sqlite3_stmt *st_op, *st_prev, *st_dep, *st_dep_scan, *st_first_sig, *st_acted;
	struct nf_u64map opmap;         /* id -> index */
	int64_t deps_rows;           /* deps rows (rowids 1..deps_rows) */
	bool kernel_timelines;       /* the session has kernel timelines */
	size_t cap_ops;
	int lazy_rc;                 /* first error of a lazy lookup, 0 none */
	/* model of open operations: lowered values found while streaming (fences
	 * signaled from one queue), added to nf_analysis_hangs' findings */
	struct nf_hang_finding *low;
	size_t n_low, cap_low;
	char lazy_msg[NF_ERROR_MSG_MAX];
};

/* Index of the op with this id, AN_NONE when none (ids are sorted; full model only). */
int32_t an_op_index(const struct nf_analysis *a, int64_t id);

/*
 * Accessors that work on both models: a lazy model runs SQL and caches (the
 * model is logically const). After them, an_lazy_failed() says whether a
 * lookup failed (and copies its error into err).
 */
int32_t an_get_op(const struct nf_analysis *a, int64_t id);
int32_t an_op_prev(const struct nf_analysis *a, int32_t o);
void an_op_rel(const struct nf_analysis *a, int32_t o, int32_t *rel_op, int32_t *rel_cpu);
bool an_cwait_blocking(const struct nf_analysis *a, int32_t w);
bool an_lazy_failed(const struct nf_analysis *a, struct nf_error *err);
/* Index of the fence, AN_NONE when unknown. */
int32_t an_fence_index(const struct nf_analysis *a, int64_t fence);
/* Index of the thread, AN_NONE when it has no CPU waits. */
int32_t an_thread_index(const struct nf_analysis *a, int64_t thread);
/* The time a release (signal op or CPU signal) happened: true and *t, or false. */
bool an_release_time(const struct nf_analysis *a, int32_t rel_op, int32_t rel_cpu, int64_t *t);

/*
 * The walk of path.c over a window: segments (time order, malloc'ed) of the
 * path that ends when operation op ends, cut at t0. 0, NF_EFORMAT, NF_ENOMEM.
 */
int an_walk_window(const struct nf_analysis *a, int32_t op, int64_t t0, struct nf_cp_segment **segs,
		   size_t *n, struct nf_error *err);

/* Loads queues, fences, CPU signals and CPU waits (model.c), for the loaders. */
int an_load_small(sqlite3 *db, struct nf_analysis *a, struct nf_error *err);
/* Adds a signal that ran at time t to fence f's list; 0 or NF_ENOMEM. */
int an_add_sig(struct an_fence *f, int64_t t, int64_t value, int32_t op, int32_t csig, int64_t id, bool cpu);
/* Sorts every fence's signals by time (GPU before CPU at one time, then id). */
void an_sort_sigs(struct nf_analysis *a);
/* Registers a queue / fence (model.c); AN_NONE and *rc = NF_ENOMEM on failure. */
int32_t an_queue_add(struct nf_analysis *a, int64_t queue, int *rc);
int32_t an_fence_add(struct nf_analysis *a, int64_t fence, int *rc);
/* Reads a fence_ops row selected as AN_OP_COLUMNS into *o (indexes unset). */
#define AN_OP_COLUMNS "id, queue, op, fence, value, queued_ns, observed_ns, end_ns, status, thread"
void an_op_from_row(struct an_op *o, sqlite3_stmt *s);

/* Grows *arr (elements of size sz) to hold at least need; 0 or NF_ENOMEM. */
int an_grow(void **arr, size_t *cap, size_t need, size_t sz);

#endif
