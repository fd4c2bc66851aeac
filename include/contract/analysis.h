/*
 * nftrace analysis: why the GPU waited. Over any session's timeline (scenarios,
 * programs, Linux kernel imports; only the generic tables fence_ops, deps,
 * cpu_waits, cpu_signals, queues, fences and kernel_timelines are read, through
 * SQL, and for GPU jobs of Linux kernel sessions jobs and job_deps) it answers
 * three questions:
 *
 *  - the critical path of an operation: the chain of queues, fences and CPU
 *    threads that decided when it finished, as segments in time order whose
 *    durations add up exactly to the operation's latency (end - queued);
 *  - stall blame: per waiting queue (or CPU thread), how much of its stall
 *    time each signaling queue and CPU thread caused, directly (it released the
 *    wait) and through the chain (it held up the one that did);
 *  - hangs and deadlocks: waits never satisfied by the session's end with
 *    their wait-for chains, cycles of waits, waits for a value no signal in the
 *    session reaches, and signals that lower a fence's value.
 *
 * Fence semantics (docs: native-gpu-fence-objects): a fence's value only goes
 * up; a wait for v is satisfied once the value is >= v. Queues run their
 * operations in queued order (fence_ops.id order per queue).
 *
 * It depends on the analyzer (nf_timeline_ensure) and SQLite only.
 */
#ifndef NFTRACE_ANALYSIS_H
#define NFTRACE_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "contract/errors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The loaded timeline: operations, waits and signals in memory. Opaque. */
struct nf_analysis;

/*
 * Loads the timeline database at db_path (schemas/timeline.sql, opened
 * read-only) into memory. On success *out owns the model (free it with
 * nf_analysis_destroy). Returns 0, NF_ENOENT (no such database), NF_EFORMAT
 * (not a timeline database: a table or column is missing), NF_ESQL, NF_ENOMEM.
 */
int nf_analysis_load(const char *db_path, struct nf_analysis **out, struct nf_error *err);

/*
 * Opens the timeline database at db_path for the critical path alone: the
 * small tables (queues, fences, CPU waits and signals) are loaded, and
 * operations, their queues' previous operations and their deps rows are read
 * on demand (rowid lookups; deps rows are usually in the waits' (fence, value) order,
 * which a binary search uses; a scan by wait_id answers when they are not), so one path costs what
 * it visits, not the session's size. Such a model answers nf_analysis_target,
 * nf_analysis_critical_path, nf_analysis_op, nf_analysis_queue_name and
 * nf_analysis_find_queue (the same answers as a loaded model); not stall blame
 * nor hangs (NF_ESTATE). The database stays open until nf_analysis_destroy.
 * Returns 0, NF_ENOENT, NF_EFORMAT, NF_ESQL, NF_ENOMEM.
 */
int nf_analysis_open_lazy(const char *db_path, struct nf_analysis **out, struct nf_error *err);

/*
 * Loads only what nf_analysis_hangs needs, in one pass over the operations with
 * memory that does not grow with the operations that ran: each queue's
 * operations after the last one that ran, the waits on no queue that never
 * ended, the small tables, and each fence's highest signaled value and its
 * signals that ran at a known time (32 bytes each, for the lowered-value
 * check). The hang check gives the same findings as on a loaded model; such a
 * model answers nf_analysis_hangs, nf_analysis_queue_name and
 * nf_analysis_find_queue (the rest: NF_ESTATE or not found).
 * Returns 0, NF_ENOENT, NF_EFORMAT, NF_ESQL, NF_ENOMEM.
 */
int nf_analysis_load_open(const char *db_path, struct nf_analysis **out, struct nf_error *err);

/* Frees the model; NULL is a no-op. */
void nf_analysis_destroy(struct nf_analysis *a);

/* Number of operations (fence_ops rows) loaded. */
size_t nf_analysis_op_count(const struct nf_analysis *a);

/* One operation as a loaded model holds it (a fence_ops row); -1 for a time
 * or thread the row does not have. */
struct nf_op_row {
	int64_t id, queue, fence, value, queued_ns, observed_ns, end_ns, thread;
	bool is_signal, on_queue;
};

/*
 * Calls fn(ctx, row) for every operation of a loaded model (nf_analysis_load),
 * in id order, until fn returns non-zero (which is returned). Returns 0, fn's
 * value, or NF_ESTATE for a lazy model or one of open operations (they do not
 * hold every operation). The row is valid during the call only.
 */
int nf_analysis_foreach_op(const struct nf_analysis *a, int (*fn)(void *ctx, const struct nf_op_row *row),
			   void *ctx);

/* One operation's facts (a fence_ops row), for printing. */
struct nf_op_info {
	bool is_signal;
	bool on_queue;       /* false: a CPU thread's wait recorded as an operation */
	int64_t queue, fence, value, thread; /* thread -1 when unknown */
};

/* Fills *info for operation id: 0, or NF_ENOENT. */
int nf_analysis_op(const struct nf_analysis *a, int64_t id, struct nf_op_info *info);

/* ---- critical path -------------------------------------------------------- */

enum nf_cp_target { NF_CP_LAST, NF_CP_OP, NF_CP_AT, NF_CP_QUEUE };

/*
 * Chooses the operation to explain: NF_CP_LAST the last operation to finish
 * (largest end_ns, then largest id; arg unused); NF_CP_OP the operation with
 * id arg; NF_CP_AT the last operation to finish at or before time arg (ns);
 * NF_CP_QUEUE the last operation to finish on hardware queue arg.
 * Only operations with both queued_ns and end_ns known have a latency to
 * explain. Writes the fence_ops id to *op_id. Returns 0, NF_ENOENT (no such
 * operation / queue / none finished by then; the message says which), NF_ESTATE
 * (the operation never finished or was never seen queued: no latency),
 * NF_EINVAL (unknown kind), NF_ESQL (a lazy model's lookup failed).
 * A lazy model finds the last operation of a queue by reading the queue's
 * operations backwards from the newest (a queue finishes its operations in
 * order); the last of the session as the latest of every queue's last (and
 * with CPU waits or kernel timelines, whose order is not the queue's, by a
 * scan); the last by a time by a scan.
 */
int nf_analysis_target(const struct nf_analysis *a, enum nf_cp_target kind, int64_t arg,
		       int64_t *op_id, struct nf_error *err);

/* What an actor was doing during a segment. */
enum nf_seg_kind {
	NF_SEG_WAIT,    /* waiting on fence >= value (a queue's GPU wait or a thread's CPU wait) */
	NF_SEG_EXECUTE, /* a queue executing: its work and the operation op_id (from queued or
			   from the end of the queue's previous operation) */
	NF_SEG_QUEUE,   /* the work waited for the CPU to queue it: the thread ran until it
			   queued op_id (or signaled from the CPU: cpu_signal) */
};

struct nf_cp_segment {
	enum nf_seg_kind kind;
	bool on_thread;      /* actor: false a hardware queue (queue), true a CPU thread (thread) */
	int64_t queue;       /* hardware queue handle (when !on_thread) */
	int64_t thread;      /* CPU thread id (when on_thread; -1 when unknown) */
	int64_t op_id;       /* fence_ops.id the segment is about, -1 if none */
	int64_t cpu_wait;    /* cpu_waits.id of a thread's wait, -1 if none */
	int64_t cpu_signal;  /* cpu_signals.id a QUEUE segment ended with, -1 if none */
	int64_t fence, value;/* NF_SEG_WAIT: what was waited for (-1 otherwise) */
	int64_t release_op;  /* NF_SEG_WAIT: the signal op that released it, -1 if a CPU signal or none */
	int64_t via_fence;   /* the fence through which the path came to this segment: the fence of
				the last wait it went back through (-1: none yet, the target's own) */
	int64_t start_ns, end_ns;
};

struct nf_cp_path {
	int64_t op_id;                 /* the target */
	int64_t queued_ns, end_ns;     /* its latency is end_ns - queued_ns */
	struct nf_cp_segment *segs;    /* in time order, contiguous: segs[0].start_ns == queued_ns,
					  segs[i].end_ns == segs[i+1].start_ns, last end == end_ns */
	size_t n;
};

/*
 * Walks backwards from the end of operation op_id to when it was queued:
 * while an operation waited, to the signal that released it (deps; for a CPU
 * wait, the first signal of its fence to reach the value) and its queue or
 * thread; while a queue was busy with earlier work, to that work; when work
 * waited for the CPU to queue it, to the CPU thread that queued it (and
 * through that thread's CPU waits). Zero-length steps are dropped and
 * neighbouring segments of the same actor and kind are merged. On success
 * *path owns the segments (nf_cp_path_free). Returns 0, NF_ENOENT (no such
 * operation), NF_ESTATE (it has no queued_ns or end_ns), NF_EFORMAT (the
 * timeline's times loop back so no path converges), NF_ENOMEM.
 */
int nf_analysis_critical_path(const struct nf_analysis *a, int64_t op_id, struct nf_cp_path *path,
			      struct nf_error *err);

/* Frees path->segs and clears *path; safe on a cleared path. */
void nf_cp_path_free(struct nf_cp_path *path);

/*
 * The same walk from the end of operation op_id back to t0 instead of its
 * queued time (a frame's path from the previous frame's present): when t0
 * is before the operation was queued, the walk goes on through the thread
 * that queued it (and its CPU waits) down to t0. path->queued_ns is t0; the
 * segments tile [t0, end] exactly. t0 at or after the end gives no segments.
 * Returns 0, NF_ENOENT (no such operation), NF_ESTATE (it has no end), NF_EFORMAT
 * (times loop back), NF_ENOMEM.
 */
int nf_analysis_critical_path_since(const struct nf_analysis *a, int64_t op_id, int64_t t0,
				    struct nf_cp_path *path, struct nf_error *err);

/* ---- critical path of a GPU job (Linux kernel sessions: jobs, job_deps) ---- */

enum nf_job_seg_kind {
	NF_JSEG_EXECUTE, /* on its ring: the job ran (from its start, or from when the ring
			    finished the job run before it, which held it back) */
	NF_JSEG_DEP,     /* on its ring: started by the scheduler after dep_job released it
			    (job_deps: dep_job's finished fence, or its scheduled fence) */
	NF_JSEG_QUEUED,  /* on its ring: submitted, waiting to be run (no dependency in the trace
			    explains the wait) */
	NF_JSEG_SUBMIT,  /* on the submitting thread: running until it submitted the job */
	NF_JSEG_FENCE,   /* on its ring: submitted, waiting for a dependency fence that no job in
			    the trace owns (dep_context:dep_seqno) until it signaled (dep_signal);
			    what signaled it is not followed */
};

struct nf_job_segment {
	enum nf_job_seg_kind kind;
	int64_t job;         /* jobs.id the segment is about */
	int64_t thread;      /* NF_JSEG_SUBMIT: the submitting thread (-1 unknown) */
	int64_t dep_job;     /* NF_JSEG_DEP: the job whose fence released it (else -1) */
	bool dep_scheduled;  /* NF_JSEG_DEP: released by dep_job's scheduled fence (its start) */
	int64_t start_ns, end_ns;
	/* NF_JSEG_DEP with dep_job -1, NF_JSEG_FENCE: the fence (job_deps) and its signal
	 * (fence_ops.id of the dma_fence signal); -1 otherwise */
	int64_t dep_context, dep_seqno, dep_signal;
};

struct nf_job_path {
	int64_t job;                   /* the target (jobs.id) */
	int64_t submitted_ns, end_ns;  /* its latency is end_ns - submitted_ns (submitted_ns: its
					  start when its submission is not in the trace) */
	struct nf_job_segment *segs;   /* in time order, contiguous from submitted_ns to end_ns */
	size_t n;
};

/*
 * Chooses a job whose latency to explain (lazy model: nf_analysis_open_lazy):
 * NF_CP_LAST the last to finish (largest finished_ns, then id), NF_CP_AT the
 * last to finish at or before arg (ns), NF_CP_OP the job with id arg. Only
 * jobs that started and finished as the trace shows it (finish_source 'event'
 * or 'signaled') are chosen by time; by id any job with a start and a finish.
 * Writes jobs.id to *job. Returns 0, NF_ENOENT (no such job / none finished;
 * the message says which), NF_ESTATE (the job has no start or no finish, or
 * the model was loaded, not opened lazily), NF_EINVAL (NF_CP_QUEUE), NF_ESQL.
 */
int nf_analysis_job_target(const struct nf_analysis *a, enum nf_cp_target kind, int64_t arg, int64_t *job,
			   struct nf_error *err);

/*
 * Walks backwards from job's finish to its submission: while it ran, on its
 * ring; when the ring was still busy with the job run before it on that ring
 * when it started, to that job; while it waited to be run, to the dependency
 * (job_deps) that released it last and that job, or, for a fence no job in the
 * trace owns, to that fence's signal (kernel dma_fence timelines: fence_ops),
 * where the walk stops; when that chain reaches back
 * before a job was submitted, to the thread that submitted it. Only finishes
 * seen in the trace ('event', 'signaled') hold a job back. Zero-length
 * segments are dropped. On success *path owns the segments
 * (nf_job_path_free). Returns 0, NF_ENOENT (no such job), NF_ESTATE (no start
 * or finish; or not a lazy model), NF_EFORMAT (times loop back), NF_ENOMEM,
 * NF_ESQL.
 */
int nf_analysis_job_path(const struct nf_analysis *a, int64_t job, struct nf_job_path *path,
			 struct nf_error *err);

/* Frees path->segs and clears *path; safe on a cleared path. */
void nf_job_path_free(struct nf_job_path *path);

/* A job as printed with its path. */
struct nf_job_info {
	int64_t id;              /* jobs.id */
	int64_t job;             /* the scheduler's job id, -1 none */
	int64_t thread;          /* submitting thread, -1 unknown */
	char ring[256];          /* ring name, "" unknown (or longer than this) */
	char driver[32];
	char finish_source[16];  /* jobs.finish_source, "" none */
};

/* Fills *info for job id: 0, NF_ENOENT, NF_ESTATE (not a lazy model), NF_ESQL. */
int nf_analysis_job(const struct nf_analysis *a, int64_t id, struct nf_job_info *info, struct nf_error *err);

/* Whether the session has GPU jobs (a jobs table with rows); false on a loaded model. */
bool nf_analysis_has_jobs(const struct nf_analysis *a);

/*
 * GPU jobs the scheduler could not run when it picked them, their dependency
 * not signaled yet (job_unschedulable: drm_sched_job_unschedulable, Linux
 * 6.16 on): how often, how many jobs, and the jobs still not started when the
 * trace ended, each with the last dependency it was held back by.
 */
struct nf_job_waiting {
	int64_t job;                    /* jobs.id */
	char driver[16], ring[64];      /* its driver and ring ("" unknown or too long) */
	int64_t context, seqno;         /* its fence (-1 unknown) */
	int64_t since_ns;               /* the last unschedulable event of the job */
	int64_t dep_context, dep_seqno; /* the dependency it named */
	int64_t dep_job;                /* jobs.id of that fence's job, -1 none in the trace */
	bool dep_signaled;              /* that fence signaled in the trace (its job finished, or its
					   dma_fence signal), after since_ns */
};

struct nf_job_blocks {
	size_t events, jobs;            /* unschedulable events, jobs they held back */
	struct nf_job_waiting *waiting; /* jobs never started after being held back */
	size_t n_waiting;
};

/*
 * Reads the job blocks of the timeline at db_path (a session without the
 * table, or without jobs, has none). Returns 0, NF_ENOENT, NF_ESQL, NF_ENOMEM;
 * free with nf_job_blocks_free.
 */
int nf_analysis_job_blocks(const char *db_path, struct nf_job_blocks *out, struct nf_error *err);
void nf_job_blocks_free(struct nf_job_blocks *b);

/* ---- stall blame ---------------------------------------------------------- */

/*
 * One row of stall_blame (schemas/analysis.sql): stall time of a waiting
 * queue (or thread) on a fence, caused by one queue or thread.
 */
struct nf_blame_row {
	int64_t queue;       /* waiting hardware queue, -1 when a CPU thread waited */
	int64_t thread;      /* waiting thread when queue == -1, else -1 */
	int64_t fence;       /* the fence waited on */
	int64_t by_queue;    /* blamed hardware queue, -1 when a thread is blamed */
	int64_t by_thread;   /* blamed CPU thread, -1 when a queue is blamed (or unknown thread) */
	int64_t by_fence;    /* the fence through which it held the wait up: the waited fence for
				the releaser, further back the fence of the wait the path went
				through to reach it */
	int64_t direct_ns;   /* time on the path of the queue/thread that released the waits */
	int64_t chain_ns;    /* time on the path of those further back in the chain */
	int64_t waits;       /* waits whose stall this row shares */
};

/*
 * For every wait with a known stall (deps.stall_ns > 0: observed and end
 * known) walks its critical path over the stall window [observed_ns, end_ns]
 * and charges each segment's time to the queue or thread it is on (the
 * waiting queue's own last wait segment, after the release, goes to the
 * releaser). For each waiting queue the rows' direct_ns + chain_ns add up to
 * its waits' stall_ns. Rows sorted by (queue, thread, fence, by_queue,
 * by_thread, by_fence). *rows is malloc'ed (free()). Returns 0, NF_EFORMAT, NF_ENOMEM,
 * NF_ESTATE (a model opened for the critical path alone: load it whole).
 */
int nf_analysis_stall_blame(const struct nf_analysis *a, struct nf_blame_row **rows, size_t *n,
			    struct nf_error *err);

/*
 * Makes sure the session's timeline (built with nf_timeline_ensure) has the
 * stall_blame table of schemas/analysis.sql, computing it when missing (under
 * the timeline's lock; a rebuilt timeline loses it and gets it again on the
 * next call). Writes the database path to db_path. Returns 0, any code of
 * nf_timeline_ensure and nf_analysis_load, NF_ESQL, NF_EIO (lock), NF_ENOMEM.
 */
int nf_analysis_ensure_blame(const char *session_dir, char *db_path, size_t db_path_len,
			     struct nf_error *err);

/* ---- hangs and deadlocks ---------------------------------------------------- */

enum nf_hang_kind {
	NF_HANG_DEADLOCK,      /* a cycle of waits: edges[] is the cycle, every edge */
	NF_HANG_NEVER_SIGNALED,/* a wait for a value no signal in the session reaches */
	NF_HANG_BLOCKED,       /* a wait that can never be satisfied: edges[] is its chain to a
				  deadlock or a never-signaled wait */
	NF_HANG_LOWERED,       /* a signal that lowers its fence's value */
	NF_HANG_PENDING,       /* not a finding: a wait still open when the session ended that
				  something queued could still satisfy (edges[]: its chain) */
	NF_HANG_KINDS
};

/* A wait: a GPU wait (fence_ops) on a queue, or a CPU thread's wait. */
struct nf_wait_ref {
	int64_t op_id;       /* fence_ops.id, -1 for a CPU wait known only from cpu_waits */
	int64_t cpu_wait;    /* cpu_waits.id, -1 for a GPU wait */
	int64_t queue;       /* waiting queue, -1 for a CPU thread */
	int64_t thread;      /* waiting thread (CPU waits; -1 unknown) */
	int64_t fence, value;
	int64_t since_ns;    /* when it was queued (GPU) or began (CPU), -1 unknown */
};

/* An edge of the wait-for graph: `from` can only be satisfied by signal_op
 * (fence_ops.id on signal_queue), which is queued behind the wait `to`. */
struct nf_hang_edge {
	struct nf_wait_ref from;
	int64_t signal_op, signal_queue, signal_value;
	struct nf_wait_ref to;
};

struct nf_hang_finding {
	enum nf_hang_kind kind;
	struct nf_wait_ref wait;    /* the wait found (LOWERED: unused, op_id -1) */
	struct nf_hang_edge *edges; /* DEADLOCK: the cycle; BLOCKED/PENDING: the chain */
	size_t n_edges;
	/* NEVER_SIGNALED: the highest value signaled (-1 none) and by which op (-1 none / CPU).
	 * LOWERED: signal (op, or cpu_signal) lowering fence from prev_value (set by prev_op /
	 * prev_cpu_signal at prev_ns) to value at ns. */
	int64_t fence, value, ns, op_id, cpu_signal;
	int64_t prev_value, prev_ns, prev_op, prev_cpu_signal;
};

struct nf_hang_report {
	struct nf_hang_finding *f;  /* sorted: deadlocks, never signaled, blocked, lowered, pending */
	size_t n;
	size_t count[NF_HANG_KINDS];
};

/*
 * Finds hangs and deadlocks. A GPU wait is open when neither it nor a later
 * operation of its queue completed (fence_ops.status other than 'unmatched'
 * or 'unsignaled', or end_ns known); a CPU wait when its end is unknown. The
 * first open operation of a queue blocks the rest. An open wait for F >= v can
 * be satisfied when the session holds a signal of F to a value >= v that is
 * still to run on a queue whose first open operation is not a wait, or one
 * whose blocking wait can itself be satisfied; a fence whose initial value is
 * unknown (NULL: a kernel timeline) may have been signaled before the
 * session, so its waits are never called unreachable. Open waits that can be
 * satisfied are PENDING (the session ended mid-frame); the others are
 * DEADLOCK (each cycle once), NEVER_SIGNALED (the chain's root: no signal
 * reaches the value) or BLOCKED. Signals of a fence in execution order (GPU
 * end_ns, CPU ts_ns; kernel timelines excluded) that set a value below the
 * previous one are LOWERED. *rep owns its findings (nf_hang_report_free).
 * Returns 0, NF_ENOMEM, or NF_ESTATE (a model opened for the critical path
 * alone).
 */
int nf_analysis_hangs(const struct nf_analysis *a, struct nf_hang_report *rep, struct nf_error *err);

/* Frees the findings and clears *rep; safe on a cleared report. */
void nf_hang_report_free(struct nf_hang_report *rep);

/* "deadlock", "never_signaled", "blocked", "lowered", "pending"; "unknown"
 * for any other value. A static string, never NULL. */
const char *nf_hang_kind_name(enum nf_hang_kind kind);

/* Hardware queue name from the queues table, or NULL when it has none. */
const char *nf_analysis_queue_name(const struct nf_analysis *a, int64_t queue);

/* Looks a queue up by number (decimal or 0x hex) or by name: 0 and *queue set,
 * NF_ENOENT (none), NF_EINVAL (several queues have that name: the message names
 * two of their handles). */
int nf_analysis_find_queue(const struct nf_analysis *a, const char *text, int64_t *queue,
			   struct nf_error *err);

#ifdef __cplusplus
}
#endif

#endif
