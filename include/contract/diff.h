/*
 * nftrace diff: what changed between two sessions (`nftrace diff A B`).
 *
 * Any two sessions (recordings, ETW or trace.dat imports, or a recording
 * against an import) are read through their timelines only
 * (nf_timeline_ensure, then SQL over schemas/timeline.sql; the analysis for
 * hangs and critical paths), with no source named: what a table holds is
 * compared, what one side lacks is said ("not comparable: A has no jobs").
 *
 * Series. Each session is cut into series: a metric over a scope.
 *   distributions (one sample per item, nanoseconds):
 *     stall          per GPU wait with a known stall: deps.stall_ns (observed -> end)
 *     latency        wait-to-signal latency, per GPU wait released by a signal whose
 *                    time is known: the wait's end_ns minus the releasing signal's
 *                    end_ns (a GPU signal) or ts_ns (a CPU signal): how long after its
 *                    signal the wait let its queue go on
 *     queued_to_end  per operation on a queue with both times known and a status other
 *                    than 'aborted': end_ns - queued_ns
 *     cpu_wait       per CPU wait satisfied with a known end: cpu_waits end_ns - start_ns
 *     job            per GPU job started and finished as the file shows it
 *                    (finish_source 'event' or 'signaled'; a bound is no duration):
 *                    jobs finished_ns - started_ns
 *     frame          per frame with an interval (include/contract/frames.h, computed
 *                    when missing): frames interval_ns; none when the table is empty or
 *                    has no interval_ns column
 *   values (one number per session):
 *     busy           queue_busy's in_flight_not_stalled_ns (in flight, not held by a
 *                    wait), summed over the queues of a scope; aux: their span_ns
 *     lost           log entries lost: anomalies 'lost', sum(lost_entries)
 *     anomalies      anomalies rows (scope kind = the anomaly kind)
 *     findings       hang findings (nf_analysis_hangs: deadlock, never_signaled,
 *                    blocked, lowered; pending waits are not findings)
 *   scopes: "all" (the whole session), "queue" (queues matched by name: the
 *   queues of one session sharing a name are pooled; a queue without a name is
 *   "0x<handle>"), "thread" (kernel_threads.comm when named, else "thread N"),
 *   "ring" ("driver ring"), "process" (frames), "kind".
 *
 * Significance. For distributions present on both sides, two stated tests:
 * the Mann-Whitney U test (two-sided, normal approximation, tie-corrected,
 * continuity-corrected) and, per percentile, the distribution-free 1 - alpha
 * confidence interval of each side's percentile from its order statistics
 * (binomial, normal approximation); a percentile changed significantly when
 * the two intervals do not overlap. Percentiles are ClickHouse's quantileExact:
 * the sorted samples' element at index floor(level * n) (0-based), max at
 * n - 1. A series is a regression (improvement) when a percentile (p50, p90,
 * p99) changed significantly, or the U test is significant with the p50 moved,
 * upward (downward) by more than both minimum effects (relative and
 * absolute); both samples identical: no change; otherwise no significant
 * change. Every metric here is worse when larger. Values have no test.
 *
 * Libraries never print: the caller writes the result with nf_diff_write.
 */
#ifndef NFTRACE_DIFF_H
#define NFTRACE_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "contract/errors.h"

#ifdef __cplusplus
extern "C" {
#endif

struct nf_diff_options {
	double alpha;           /* significance level of both tests, 0 < alpha < 0.5 (0.01) */
	double min_effect;      /* minimum relative effect, >= 0 (0.05: 5%) */
	int64_t min_effect_ns;  /* minimum absolute effect, >= 0 (100 ns) */
	bool ops;               /* align the operations (nf_diff_ops) */
	int64_t ops_min_ns;     /* an aligned wait changed when its stall or latency moved by more
				   than this (0: any change) */
};

/* Fills *o with the defaults above (ops off). */
void nf_diff_options_init(struct nf_diff_options *o);

/* The result. Opaque. */
struct nf_diff;

/*
 * Compares session directory b against a (a may equal b): brings both
 * timelines and their frames up to date (nf_frames_ensure, one after the other), then reads
 * them on two threads, each in a few passes over its tables. On success *out
 * owns the result (nf_diff_destroy). Returns 0, NF_EINVAL (bad options), any
 * code of nf_frames_ensure for either session (the message names it),
 * NF_EFORMAT (not a timeline), NF_ESQL, NF_ENOMEM.
 */
int nf_diff_run(const char *a, const char *b, const struct nf_diff_options *opts, struct nf_diff **out,
		struct nf_error *err);

/* Frees the result; NULL is a no-op. */
void nf_diff_destroy(struct nf_diff *d);

enum nf_diff_stat { NF_DIFF_P50, NF_DIFF_P90, NF_DIFF_P99, NF_DIFF_MAX, NF_DIFF_STATS };

enum nf_diff_verdict {
	NF_DIFF_NO_CHANGE,       /* identical samples, or equal values */
	NF_DIFF_NOT_SIGNIFICANT, /* different, not beyond noise or minimum effect */
	NF_DIFF_REGRESSION,      /* something got significantly worse (larger) */
	NF_DIFF_IMPROVEMENT,     /* something got significantly better, nothing worse */
	NF_DIFF_CHANGED,         /* values that differ (one value per session: no test) */
	NF_DIFF_NOT_COMPARABLE,  /* one side lacks it: nf_diff_row.why says what */
};

/* One side of a row. */
struct nf_diff_side {
	bool present;            /* the series exists on this side */
	int members;             /* queues or threads pooled under the scope's name */
	int64_t n;               /* distributions: samples */
	int64_t stat[NF_DIFF_STATS]; /* distributions with n > 0 */
	int64_t lo[3], hi[3];    /* p50/p90/p99 intervals; INT64_MIN / INT64_MAX: unbounded */
	int64_t value, aux;      /* values (busy: aux = span_ns) */
};

/* One series compared. Strings are owned by the result (valid until nf_diff_destroy);
 * name is the session's text, untrusted (escape it for a terminal, JSON, CSV). */
struct nf_diff_row {
	const char *metric;      /* "stall", "latency", ... (static) */
	const char *unit;        /* "ns" or "count" (static) */
	const char *scope;       /* "all", "queue", "thread", "ring", "process", "kind" (static) */
	const char *name;        /* the scope's name, "" for all */
	bool distribution;       /* samples (true) or one value per session (false) */
	struct nf_diff_side a, b;
	bool sig[NF_DIFF_STATS]; /* the stat changed significantly (max: never tested) */
	bool tested;             /* the U test ran (both sides have samples) */
	double mw_z, mw_p;       /* U test: z (> 0: B larger) and two-sided p */
	double p_b_greater;      /* P(B > A) + P(B = A) / 2 from U */
	enum nf_diff_verdict verdict;
	const char *why;         /* NF_DIFF_NOT_COMPARABLE: the reason (e.g. "A has no frames") */
};

/* The rows, in output order (scope all first, then by scope, name, metric):
 * *rows borrowed from d. Returns their number. */
size_t nf_diff_rows(const struct nf_diff *d, const struct nf_diff_row **rows);

/* A session as compared. */
struct nf_diff_session {
	const char *dir;         /* as given */
	const char *source;      /* meta source ("" when absent; untrusted) */
	const char *mode;        /* meta mode ("deterministic", "kernel-import", ...; "" when absent) */
	const char *seed;        /* meta seed ("" when absent; a recording's) */
	int64_t duration_ns;     /* meta duration_ns, -1 when absent */
	int64_t ops;             /* fence_ops rows */
};

/* Session 0 (A) or 1 (B), borrowed from d; NULL for another index. */
const struct nf_diff_session *nf_diff_session(const struct nf_diff *d, int which);

/* An aligned wait (nf_diff_options.ops): the occurrence-th wait (0-based, in
 * id order) on fence >= value on the queues named queue, in both sessions. */
struct nf_diff_op {
	const char *queue;       /* the queue scope's name (owned by d; untrusted) */
	int64_t fence, value, occurrence;
	int64_t id_a, id_b;      /* fence_ops.id */
	int64_t queue_a, queue_b;/* queue handles */
	int64_t start_a, end_a, start_b, end_b; /* observed (else queued) and end; INT64_MIN unknown */
	int64_t stall_a, stall_b, latency_a, latency_b; /* INT64_MIN: unknown */
};

/* The aligned waits that changed, most changed stall first (then latency):
 * *ops borrowed from d. Returns their number (0 without nf_diff_options.ops).
 * The counts: matched waits, waits only in A, only in B (any may be NULL). */
size_t nf_diff_ops(const struct nf_diff *d, const struct nf_diff_op **ops, int64_t *matched, int64_t *only_a,
		   int64_t *only_b);

/* ---- the gate: --fail-on ----------------------------------------------------- */

/*
 * The budget language (README "nftrace diff"): clauses separated by ',' (or
 * given as several expressions), each
 *     STAT '(' METRIC [',' SCOPE] ')' CMP THRESHOLD    STAT: p50 p90 p99 max count
 *     METRIC [ '(' SCOPE ')' ] CMP THRESHOLD            busy lost anomalies findings
 *     'regression' [ '(' SCOPE ')' ]                     any series' verdict
 * SCOPE is 'all' or KEY '=' NAME (KEY: queue thread ring process kind; NAME a
 * word of letters, digits and _ . : # - /, or quoted with ' or "), CMP one of
 * > >= < <=, THRESHOLD a change from A to B: [+|-]NUMBER followed by '%'
 * (relative to A), a time unit (ns us ms s) or nothing (the metric's unit).
 * A clause without a scope checks every series of its metric. A clause fails
 * when the change passes its threshold and, for p50/p90/p99/max, that change
 * is significant (the percentile's intervals apart, or the U test finding B
 * shifted that way; a count needs no test); a series the clause names that
 * one side lacks, or a metric no series of which can be compared, cannot be
 * checked, which fails the clause too (with the reason).
 */
struct nf_diff_gate;

/*
 * Parses text into a gate (appending to *gate when it is not NULL, so several
 * expressions make one gate; *gate owns the clauses: nf_diff_gate_destroy).
 * Returns 0, NF_EINVAL ("column N: what is wrong", the column counted from 1
 * in text), NF_ENOMEM.
 */
int nf_diff_gate_parse(const char *text, struct nf_diff_gate **gate, struct nf_error *err);

/* Frees the gate; NULL is a no-op. */
void nf_diff_gate_destroy(struct nf_diff_gate *gate);

/*
 * Checks every clause against d, keeping each clause's outcome in the gate
 * (for nf_diff_write). *failed is set to true when a clause failed (a change
 * beyond its budget, or a series it names that cannot be compared), false
 * otherwise. Returns 0, NF_ENOENT (a clause's scope names nothing in either
 * session: the message says which), NF_ENOMEM.
 */
int nf_diff_gate_check(struct nf_diff_gate *gate, const struct nf_diff *d, bool *failed, struct nf_error *err);

/* ---- output --------------------------------------------------------------- */

enum nf_diff_format { NF_DIFF_TEXT, NF_DIFF_JSON, NF_DIFF_CSV };

/*
 * Writes d to out: text for a terminal (session strings with control
 * characters as '?'), one JSON object, or CSV (RFC 4180; one line per series
 * and statistic; control characters as '?' and a leading = + - @ of a name
 * guarded with a quote, so no spreadsheet takes it for a formula). gate: NULL,
 * or a gate nf_diff_gate_check ran on (its outcome is written). ops_limit:
 * aligned waits written at most (0: all). Returns 0, NF_EIO (a write failed).
 */
int nf_diff_write(const struct nf_diff *d, const struct nf_diff_gate *gate, enum nf_diff_format format,
		  size_t ops_limit, FILE *out, struct nf_error *err);

/* ---- the picture -------------------------------------------------------------- */

struct nf_diff_picture_options {
	const char *output;      /* a .png file */
	int width;               /* 0: the viewer's default */
	int64_t from_ns, to_ns;  /* -1: 0 and the longer session's end */
	size_t max_marks;        /* changed waits marked at most (0: 500) */
};

/*
 * Draws one PNG page: A's timeline above B's (the viewer, nf_render, over the
 * same window), the aligned waits that changed most marked on both (needs
 * nf_diff_options.ops). The file is replaced only when complete. Returns 0,
 * NF_EINVAL (not .png, bad window or width), NF_ESTATE (d was made without
 * ops), any code of nf_render, NF_EIO, NF_ENOMEM.
 */
int nf_diff_picture(const struct nf_diff *d, const struct nf_diff_picture_options *opts, struct nf_error *err);

#ifdef __cplusplus
}
#endif

#endif
