/*
 * The timeline builder's private parts, shared by its files:
 *   builder.c          create/destroy and the stream: objects written as they
 *                      come, queued operations matched to their log entries
 *                      (FIFO per queue and log), finished ones spilled;
 *   builder_resolve.c  finish(): the clock fit, the one pass over the spill
 *                      that writes fence_ops, the merge that ties each wait to
 *                      the signal that released it (deps), the summaries.
 * The maps are core's nf_u64map (core/util_hash.h). Private to analyzer/.
 */
#ifndef NF_ANALYZER_BUILDER_INT_H
#define NF_ANALYZER_BUILDER_INT_H

#include "builder.h"
#include "contract/timeline_writer.h"
#include "contract/spill.h"
#include "contract/deps.h"
#include "contract/anomaly_kinds.h"
#include "contract/util_hash.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

/* ---- builder state ---- */

/* A queued operation or log entry, from the stream to its fence_ops row. */
struct op_rec {
	int64_t id;
	int64_t ord;           /* position in its log's operation sequence (queued ops) */
	int64_t queued;        /* CPU ns */
	int64_t observed, end; /* GPU ticks when OPF_GPU, else CPU ns */
	int64_t value, seq;
	uint32_t adapter, queue, handle, fence, epoch, thread;
	uint16_t flags;
	uint8_t log, status;
	uint32_t spare;        /* explicit padding: spilled records hold no uninitialised bytes */
};

enum {
	OPF_FENCE = 1, OPF_QUEUED = 2, OPF_OBS = 4, OPF_END = 8, OPF_SEQ = 16, OPF_THREAD = 32,
	OPF_GPU = 64,
};

enum op_status { OS_COMPLETE, OS_LOST, OS_ZERO, OS_UNMATCHED, OS_LEGACY, OS_REPEATED };

/* A span of lost positions of one log. */
struct lost_span {
	int64_t first, count, first_seq;
	uint32_t epoch;
};

/* One log (waits or signals) of one hardware queue. */
struct log_state {
	uint64_t next_op;     /* operations queued so far: the next one's position */
	uint32_t epoch;       /* current location generation */
	uint64_t base;        /* position of seq 0 of the current epoch */
	uint64_t written;     /* entries known written in the current epoch */
	/* queued operations waiting for their entry, in position order (a ring) */
	struct op_rec *fifo;
	size_t f_cap, f_head, f_n;
	/* lost spans that may still cover a waiting operation */
	struct lost_span *spans;
	size_t s_n, s_cap;
};

struct queue_state {
	struct log_state log[2]; /* [0] waits, [1] signals (first member: see queue_of) */
	uint32_t adapter, hwqueue;
	/*
	 * The threads that queued work on it: operations per (thread, fence),
	 * keyed thread << 32 | fence (fence known) or thread (unknown), and the
	 * run of equal keys being counted.
	 */
	struct nf_u64map thr_fence, thr_nofence;
	uint64_t run_key, run_n;
	bool run_known;
};

#define FENCE_CROSS_ADAPTER 1u

/*
 * What the fence_ops rows hold of one queue's logs ([0] waits, [1] signals),
 * counted as the rows are loaded: the coverage rows come from it (a GROUP BY
 * over fence_ops was as costly as the load itself).
 */
struct log_cover {
	int64_t queue;
	int64_t events[2];    /* rows with a log position */
	int64_t first[2];     /* the earliest queued (else end) time */
	bool has_first[2], seen[2];
	int64_t rows;         /* fence_ops rows counted, both logs */
};

/* Coverage counted per queue (cover_row): entries, and queue -> index into v. */
struct cover_set {
	struct log_cover *v;
	size_t n, cap;
	struct nf_u64map of;
};

/* Entry timestamp classes. */
enum { TS_OK = 0, TS_ZERO = 1, TS_REPEATED = 2 };

/*
 * Finished operations go to the spill in id order through a reorder ring of
 * this many records; an operation still waiting for its entry when the ring
 * is full is passed over and spilled late (out of order), which is correct,
 * only slower to insert.
 */
#define RING_CAP (1u << 16)
/*
 * Operations waiting for their log entries, at most; beyond it the oldest of a
 * log is settled early (lost or unmatched). Only a session whose logs go
 * unread for this many operations gets there, and then the log overran anyway.
 */
#define MAX_PENDING (1u << 19)
/* Memory of each external sort. */
#define SORT_BUDGET (32u << 20)
/* How many unknown-end signals a wait looks through for its releaser. */

enum stmt_id {
	ST_ADAPTER, ST_QUEUE, ST_QUEUE_STOP, ST_FENCE, ST_FENCE_DESTROY, ST_HANDLE, ST_HANDLE_CLOSE,
	ST_LOST, ST_CAL, ST_CPU_WAIT, ST_CPU_UNWAIT, ST_CPU_SIGNAL, ST_INTERRUPT, ST_MONITORED,
	ST_ANOMALY, ST_TRUTH, ST_DISPLAY, ST_PRESENT, ST_PRESENT_OP, ST_FLIP, ST_FLIP_DONE, ST_VBLANK,
	ST_COUNT
};

struct nf_timeline_builder {
	sqlite3 *db;
	bool in_txn, finished;
	/* session facts (strings owned) */
	char *tool_version, *source, *mode, *host;
	uint64_t seed, cpu_frequency, start_ticks;
	int64_t ns_per_tick;       /* 1e9 / cpu_frequency when that is whole (1 GHz, 10 MHz), else 0 */
	int64_t ticks_inside;      /* with it: ticks from the start well inside NF_GPU_TS_MAX ns */
	int64_t schema_version;
	bool ground_truth;
	uint64_t max_ts;
	bool any_ts;

	sqlite3_stmt *st[ST_COUNT];
	int64_t next_op_id;
	bool ops_late;           /* an operation reached the spill out of id order */
	int64_t next_cpu_signal;
	struct nf_u64map handles;   /* local handle -> global fence */
	struct nf_u64map fences;    /* global fence -> FENCE_* flags */
	struct nf_u64map queues;    /* adapter<<32 | hwqueue -> index into qs */
	struct queue_state *qs;
	size_t n_qs, cap_qs;
	struct op_rec *legacy;   /* GPU waits on legacy fences not yet released */
	size_t n_legacy, cap_legacy;
	uint64_t pending;        /* operations in the logs' fifos */
	double slack_ns;

	char *spill_dir;
	struct nf_spill *ops;    /* finished operations, mostly in id order */
	struct op_rec *ring;     /* reorder ring, indexed by id % RING_CAP */
	uint8_t *ready;
	int64_t ring_base;       /* next id the ring hands to the spill */
	struct nf_deps *deps;    /* the deps rule's signals (CPU ones while streaming), waits, initial values */
	/* Events of streams another importer owns (the kernel stream): its handler,
	 * looked up at the first such event, and the state it made. */
	const struct nf_importer_stream *other[NF_STREAM_COUNT];
	void *other_state[NF_STREAM_COUNT];
	struct nf_bulk *bulk;    /* bulk.c: the big tables load through it */
	/* fence_ops rows per queue and log, counted by the load's producer thread */
	struct cover_set cover;
	int64_t deps_unreleased;   /* deps rows with reason 'no_signal' */
	/* display.c: presents (display << 40 | present number -> presents.id) and
	 * the present whose fence signal the next FENCE_SIGNAL_QUEUED is */
	struct nf_u64map presents;
	int64_t next_present;
	bool present_armed;
	uint32_t present_queue, present_handle;
	int64_t present_value, present_row;
	/* nf_timeline_ensure_early's reader, offered the timeline before the load */
	struct nf_early_reader *early;
	bool views_made;           /* the indexes and views were made for the early reader */
};

static inline int64_t ns_of(struct nf_timeline_builder *b, uint64_t ticks)
{
	/* A whole number of ns a tick: the same value as the division, without it. */
	if (b->ns_per_tick)
		return (int64_t)(((__int128)ticks - (__int128)b->start_ticks) * b->ns_per_tick);
	return nf_timeline_cpu_ns(ticks, b->start_ticks, b->cpu_frequency);
}

static inline const char *log_name(uint32_t log_type)
{
	return log_type == NF_LOG_WAITS ? "waits" : log_type == NF_LOG_SIGNALS ? "signals" : NULL;
}

/* Three-way comparison for the sorts. */
#define CMP(a, b) ((a) < (b) ? -1 : (a) > (b) ? 1 : 0)

/* ---- display.c: displays, presents, flips and blanks (schemas/timeline.sql) ---- */

/* DisplayStart, Present, DisplayFlip, VSyncDPC: their rows. 0, NF_ESQL, NF_ENOMEM. */
int nf_tb_display_event(struct nf_timeline_builder *b, const struct nf_event *ev, int64_t now,
			struct nf_error *err);
/* A FENCE_SIGNAL_QUEUED that got operation id op: a present's signal when it is
 * the one the last Present announced. 0 or NF_ESQL. */
int nf_tb_present_op(struct nf_timeline_builder *b, uint32_t hwqueue, uint32_t handle, int64_t value,
		     int64_t op, struct nf_error *err);
/* After fence_ops is written: each present's ready time and its flip's. 0 or NF_ESQL. */
int nf_tb_displays_finish(struct nf_timeline_builder *b, struct nf_error *err);

/* ---- builder.c: shared with builder_resolve.c ---- */

/* Sets err to NF_ESQL with sqlite's message about what; returns NF_ESQL. */
int nf_tb_sql_err(struct nf_timeline_builder *b, struct nf_error *err, const char *what);
/* Runs sql (no rows); 0 or NF_ESQL naming what. */
int nf_tb_exec_sql(struct nf_timeline_builder *b, const char *sql, struct nf_error *err,
		    const char *what);
/* Writes one anomalies row (kind from finding.h); 0 or NF_ESQL. */
int nf_tb_add_anomaly(struct nf_timeline_builder *b, const char *kind, int64_t queue,
		       bool has_queue, const char *log, const int64_t *first_ns,
		       const int64_t *last_ns, int64_t lost, const char *detail,
		       struct nf_error *err);
/* Sets err to the builder's out-of-memory message; returns NF_ENOMEM. */
int nf_tb_oom(struct nf_error *err);
/* Hands a finished operation to the spill, in id order through the ring. */
int nf_tb_op_done(struct nf_timeline_builder *b, const struct op_rec *o, struct nf_error *err);
/* Spills what is left in the reorder ring, in id order. */
int nf_tb_ring_flush(struct nf_timeline_builder *b, struct nf_error *err);
/* Settles (lost or unmatched) the operations of a log waiting before position `before`. */
int nf_tb_settle_before(struct nf_timeline_builder *b, struct log_state *ls, int64_t before,
			 struct nf_error *err);
/* Writes the queue_threads rows counted while streaming. */
int nf_tb_write_queue_threads(struct nf_timeline_builder *b, struct nf_error *err);

#endif
