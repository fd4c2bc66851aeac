/*
 * The timeline's read side: one SQLite database per session on the CPU clock
 * (schemas/timeline.sql), whatever the source, read by the viewer, the HTML
 * page, the export, the analyses and `nftrace query`. Readers include this
 * header only: building a timeline is the importers' (contract/session.h),
 * writing one the writer's (contract/timeline_writer.h).
 */
#ifndef NFTRACE_TIMELINE_H
#define NFTRACE_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "contract/errors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The database file inside a session directory. */
/* Hidden, so CTF readers (babeltrace2) do not take it for a stream file. */
#define NF_TIMELINE_DB_NAME ".timeline.db"

/* The lock file nf_timeline_ensure() takes inside a session directory. */
#define NF_TIMELINE_LOCK_NAME ".timeline.lock"

/*
 * Version of schemas/timeline.sql and of the analysis; stored as
 * meta.timeline_version next to meta.schema_version (NF_SCHEMA_VERSION). A
 * database with another value of either is rebuilt by nf_timeline_ensure().
 */
#define NF_TIMELINE_VERSION 17 /* 5: deps never names a releaser that ended past the slack; 6: GPU jobs, vblanks, markers; 7: Windows ETW captures, views' *_hex columns; 8: queue_busy in_flight/stalled, clock_fit ppm_stderr, os_overrun_flag rows lose their lost_entries; 9: cpu_runs is a view over cpu_run_blocks (a row per 1024 runs of a thread); 10: anomalies kind 'overrun' is 'lost', as in nftrace check (schemas/anomalies.def); 11: jobs.finish_source 'recording_start', meta kernel_all_cpus_from_ns; 12: unknown stays unknown: jobs.start_reason, finish_reason, finished_bound_ns, bound_source (finished_ns never a bound), status 'unknown'; deps.reason (a row per ended wait); the coverage table; 13: dxgkrnl_events, dxgkrnl_names, etw_gpu_ops: DxgKrnl payload fields and hardware-queue GPU waits and signals; jobs.device, client_id; job_unschedulable; 14: displays, presents, flips, frames, frame_gpu, frame_path (frame_path_blocks); vblanks.display, vsyncs.display; 15: the readers' views item_kinds, lanes, items, item_links, queue_labels, threads, lost_events, and the display rows' display_blanks, display_flips, display_frames, frame_path_lanes; 16: coverage_gaps (what the capture does not cover, for the readers to shade); 17: its words for a CPU without CPUSTAT, "quiet or not recorded" */

enum nf_query_format { NF_QUERY_TABLE, NF_QUERY_CSV, NF_QUERY_JSON };

/*
 * Runs SQL read-only against the timeline databases db_paths[0..n) (attached
 * as s1, s2, ... when n > 1), writing rows to out in format; the rules of
 * nf_query_run() (contract/session.h), which calls it once the sessions'
 * timelines are up to date. Returns 0, NF_ESQL, NF_EIO or NF_ENOMEM.
 */
int nf_query_run_dbs(const char *const *db_paths, size_t n, enum nf_query_format format,
		     const char *sql, FILE *out, struct nf_error *err);

/*
 * The SQL of a ready-made report, run with nf_query_run() like any query:
 * "stalls" (the 20 longest GPU wait stalls with the signal that ended each),
 * "queues" (per hardware queue: operations, lost ones, time stalled in waits,
 * span), "lost" (every span of a log whose entries were lost, per queue).
 * Returns a static string, or NULL for an unknown name.
 */
const char *nf_query_report_sql(const char *name);

/* The report names, separated by '|' ("stalls|queues|lost"), for usage text. */
#define NF_QUERY_REPORTS "stalls|queues|lost"

struct sqlite3;

/*
 * Opens the timeline database at path for reading, as the report, the HTML
 * page and the export read it: read-only, without SQLite's mutexes (one
 * thread uses the connection at a time), checked to hold the tables of
 * schemas/timeline.sql, and inside one read transaction (every pass sees the
 * same snapshot). Returns 0 with *db open (the caller closes it), or, with
 * *db NULL: NF_ENOENT (no such file), NF_EIO (cannot stat it), NF_ESQL
 * (SQLite cannot open it, or BEGIN failed), NF_EFORMAT (not a timeline
 * database); the message names path.
 */
int nf_timeline_open_read(const char *path, struct sqlite3 **db, struct nf_error *err);

/*
 * One fence_ops row as a build produces it: the columns of schemas/
 * timeline.sql's fence_ops that a reader of every operation needs, each
 * has_* false where the column is NULL.
 */
struct nf_fence_op_row {
	int64_t id, queue, fence, value, queued_ns, observed_ns, end_ns, thread;
	bool is_wait;            /* op = 'wait' (else 'signal') */
	bool has_fence, has_queued, has_observed, has_end, has_thread;
	const char *status;      /* fence_ops.status */
};

/*
 * A timeline before its fence operations are loaded: what a build of a big
 * session offers a reader that draws a first picture at once, instead of
 * after the load (contract/session.h, nf_timeline_ensure_early). db is the
 * build's connection, inside its transaction: every table and view holds what
 * the finished timeline will, except fence_ops and deps (empty: each_op
 * hands fence_ops' rows instead), the causality anomalies the dependency
 * merge finds (the links from signals to the waits they released are not
 * known yet) and, until the reader's calls of each_op have returned, the
 * coverage rows and the anomalies read from the operations (a reader reads
 * the operations first). each_op calls fn for every fence_ops row of the
 * queues lo to hi (INT64_MIN, INT64_MAX: all) in id order (the table's
 * storage order), stopping at fn's first non-zero return, which it returns;
 * it may be called again. Valid during the reader's call only.
 */
struct nf_early_timeline {
	struct sqlite3 *db;
	int (*each_op)(void *impl, int64_t lo, int64_t hi,
		       int (*fn)(void *ctx, const struct nf_fence_op_row *op), void *ctx,
		       struct nf_error *err);
	void *impl;
	int64_t n_ops;           /* fence_ops rows */
	/*
	 * each_op may run on several threads at once, each call reading every
	 * row and handing its queues' (a reader splits the rows' work, not the
	 * read); the calls count the operations into the tables above and write
	 * them through db on their threads, so the reader does not use db while
	 * calls run. Else one call at a time.
	 */
	bool parallel;
};

/*
 * The one way a module reports an SQLite failure on db (the readers, the
 * writer, the importers, the analyses, push): sets err to NF_ESQL with the
 * message fmt formatted, then ": " and SQLite's last message on db ("out of
 * memory" when db is NULL). Returns NF_ESQL, for `return nf_sql_error(...)`.
 */
int nf_sql_error(struct sqlite3 *db, struct nf_error *err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * The selection: what of a timeline a reader shows (the picture, the HTML
 * page, the export) and the CLI's --from, --to, --queue, --fence, --threads,
 * --thread and --process. Declared once here; timeline/select.c checks it
 * against a timeline and turns it into SQL, for every reader alike.
 *
 * Rules every reader follows:
 * - a queue filter keeps the fence operations, anomalies and items of those
 *   queues (items.queue), a fence filter the fence operations, CPU waits and
 *   signals and items of those fences (items.fence); an item tied to no queue
 *   or no fence is left out by that filter;
 * - CPU thread rows: the threads that wait or signal on the CPU, queued GPU
 *   work (within the filters) or, unfiltered, own an item (submitted a job,
 *   wrote a marker); every thread that only ran with threads_all, or when
 *   named by threads (id or name) or processes (id or name), or when no thread
 *   did any of that (a trace of the scheduler alone);
 * - a queue, fence, thread or process that names nothing of the timeline is an
 *   error, as is a window that does not start before the session's end.
 */
struct nf_selection {
	int64_t from_ns, to_ns;         /* time window; -1: session start / end */
	const int64_t *queues;          /* only these queues (NULL or none: all) */
	int n_queues;
	const int64_t *fences;          /* only these fences (NULL or none: all) */
	int n_fences;
	int threads_all;                /* a row for every CPU thread that ran */
	const char *const *threads;     /* also these threads: id or task name */
	int n_threads;
	const char *const *processes;   /* also every thread of these processes: id or name */
	int n_processes;
};

/* No window, no filter. */
#define NF_SELECTION_ALL { -1, -1, NULL, 0, NULL, 0, 0, NULL, 0, NULL, 0 }

/*
 * Checks sel against the timeline db: counts not negative (and a list for a
 * positive count), times not below -1, an end after the start when both are
 * given, and every queue, fence, thread and process it names in the timeline
 * (a thread by id or kernel_threads name; a process by id, a thread's id, or
 * name). Returns 0, NF_EINVAL ("bad queue or fence filter", "time window:
 * ..."), NF_ENOENT ("queue 0x12: not in the timeline", "thread 'X': not in
 * the timeline", naming the first that matches nothing) or NF_ESQL.
 */
int nf_selection_check(struct sqlite3 *db, const struct nf_selection *sel, struct nf_error *err);

/* The window a reader draws: [t0, t1] within the session [0, session_end]. */
struct nf_window {
	int64_t t0, t1;          /* from_ns, else 0; to_ns, else the session's end */
	int64_t session_end;     /* meta duration_ns, else the latest time of the timeline */
	int has_duration;        /* session_end is meta's duration_ns */
};

/*
 * Resolves sel's window on db into *w: the session's end (meta duration_ns,
 * else the latest time of its operations, CPU waits and signals and
 * anomalies; 0 when empty), t0 = from_ns or 0, t1 = to_ns or the session's
 * end (an empty session: a 1 us window). Returns 0, NF_EINVAL (a negative
 * time; a start at or after the session's end, "time window: start 10 s is
 * not before the session's end (1.25 ms)"; an end not after the start) or
 * NF_ESQL.
 */
int nf_selection_window(struct sqlite3 *db, const struct nf_selection *sel, struct nf_window *w,
			struct nf_error *err);

/* Which list of a selection a predicate tests. */
enum nf_selection_list { NF_SELECTION_QUEUES, NF_SELECTION_FENCES };

/*
 * The predicate " AND col IN (v0,v1,...)" for sel's queues or fences, or ""
 * when that list is empty. Returns a string the caller frees with
 * sqlite3_free(), or NULL when out of memory.
 */
char *nf_selection_in(const struct nf_selection *sel, enum nf_selection_list which, const char *col);

/*
 * The SQL of the CPU thread rows sel shows (the rules above), one row per
 * thread: thread, process (NULL: unknown), proc (the process, else the
 * thread's own id: what the thread's row is grouped under), name (its task
 * name, NULL: none), proc_name (proc's name), process_name (the process's
 * name, NULL when the process is unknown), left_out (threads that ran and are
 * not shown, the same on every row); ordered by order_by (an ORDER BY clause
 * over those columns, or ""). Returns a string the caller frees with
 * sqlite3_free(), or NULL when out of memory.
 */
char *nf_selection_threads_sql(const struct nf_selection *sel, const char *order_by);

/* One span of the coverage table (schemas/timeline.sql). */
struct nf_coverage_span {
	char scope[16];        /* 'cpu', 'etw_cpu', 'log' */
	int64_t id;            /* the CPU or the queue */
	char log[16];          /* 'waits'/'signals' for a log, else "" */
	bool has_from;         /* false: the file holds nothing of the scope */
	int64_t from_ns, to_ns;
	bool has_events;
	int64_t events;
	char detail[256];
};

/* What a timeline says it covers. */
struct nf_coverage {
	struct nf_coverage_span *spans; /* in scope, id, log, from order */
	size_t n;
	size_t cpus;           /* CPU scopes ('cpu', 'etw_cpu') */
	bool whole;            /* every CPU scope is recorded from whole_from_ns to the end */
	int64_t whole_from_ns; /* the latest start of a CPU scope's last span */
	int64_t end_ns;        /* the latest end of a span */
};

/*
 * Reads the coverage table of db. A timeline without CPU scopes (nftrace's
 * own sessions: logs only) has whole false and cpus 0. Returns 0, NF_ESQL or
 * NF_ENOMEM; free c with nf_coverage_free (also after a failure).
 */
int nf_timeline_coverage(struct sqlite3 *db, struct nf_coverage *c, struct nf_error *err);
void nf_coverage_free(struct nf_coverage *c);

#ifdef __cplusplus
}
#endif

#endif
