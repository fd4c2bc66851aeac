/*
 * The diff module's private declarations: a session cut into series (a
 * metric over a scope, with its samples or its value), the statistics and
 * tests over sorted samples, the string map that pools scopes by name, and
 * the result's layout. Only diff/ includes this.
 */
#ifndef NF_DIFF_INT_H
#define NF_DIFF_INT_H

#include "contract/analysis.h"
#include "contract/diff.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* NULL in an int64_t column kept in memory. */
#define DD_NONE INT64_MIN

/* Metrics: distributions first (samples), then values (one number). */
enum dd_metric {
	DM_STALL,
	DM_LATENCY,
	DM_Q2E,
	DM_CPU_WAIT,
	DM_JOB,
	DM_FRAME,
	DM_BUSY,
	DM_LOST,
	DM_ANOMALIES,
	DM_FINDINGS,
	DM_N
};
#define DM_N_DIST DM_BUSY

enum dd_scope { DS_ALL, DS_QUEUE, DS_THREAD, DS_RING, DS_PROCESS, DS_KIND, DS_N };

extern const char *const dd_metric_names[DM_N];
extern const char *const dd_scope_names[DS_N];

/* The metric named text (length len), or -1. */
int dd_metric_find(const char *text, size_t len);
/* The scope named text (length len), or -1. */
int dd_scope_find(const char *text, size_t len);

/* ---- a string -> index map (scopes pooled by name, actors, finding keys) ---- */

struct dd_names {
	char **keys;     /* owned, by index */
	size_t n, cap;   /* keys */
	int32_t *slots;  /* open addressing: index + 1, 0 empty */
	size_t n_slots;
};

/* The index of key (added when new; the map copies it): >= 0, or NF_ENOMEM. */
int dd_names_get(struct dd_names *m, const char *key);
/* The index of key, or -1. */
int dd_names_find(const struct dd_names *m, const char *key);
void dd_names_free(struct dd_names *m);

/* ---- series ---------------------------------------------------------------- */

struct dd_session;

struct dd_series {
	int metric;          /* enum dd_metric */
	int scope;           /* enum dd_scope */
	char *name;          /* owned; "" for all */
	int members;         /* queues or threads pooled under name */
	int64_t *v;          /* distributions: samples (sorted once read) */
	size_t n, cap;
	int64_t value, aux;  /* values */
	bool has_value;      /* values: known (busy: some operation had both times; lost of a
				queue: it has a log; findings: the hang check ran) */
};

/* A new series of s (name copied); its index, or NF_ENOMEM. */
int dd_series_new(struct dd_session *s, int metric, int scope, const char *name);
/* Appends x to the series' samples: 0 or NF_ENOMEM. */
int dd_series_push(struct dd_series *s, int64_t x);

/* Time spent on the critical path by one actor doing one kind of thing. */
struct dd_cp_part {
	char *actor;         /* owned: "queue NAME", "thread NAME", "ring NAME" */
	const char *kind;    /* static: "wait", "execute", "queue", "dependency", ... */
	int64_t ns;
};

/* A wait for the aligned view (nf_diff_options.ops). */
struct dd_wait {
	int32_t group;       /* queue scope (index into the session's queue names) */
	int64_t occ;         /* occurrence among (group, fence, value), in id order */
	int64_t fence, value, id, queue, start, end, stall, latency;
};

struct dd_session {
	const char *dir;
	char db[4200];
	bool want_ops;
	/* meta */
	char *source, *seed, *mode;
	int64_t duration_ns, ops;
	/* what the timeline holds */
	bool has_jobs, has_cpu_waits, has_frames, frames_usable;
	/* series; queue scopes by name (index = group) */
	struct dd_series *series;
	size_t n_series, cap_series;
	struct dd_names queue_names;
	/* hangs */
	bool may_hang;             /* the hang check could find something (read.c says when) */
	struct dd_names findings;  /* finding keys ("deadlock: queue Q1 waits ...") */
	bool hangs_ok;
	char hangs_why[160];
	/* the critical path of the last operation (or job) */
	bool cp_ok;
	char cp_what[320], cp_why[200];
	int64_t cp_latency;
	struct dd_cp_part *cp;
	size_t n_cp;
	/* aligned waits */
	struct dd_wait *waits;
	size_t n_waits, cap_waits;
	/* the reader thread's outcome */
	int rc;
	struct nf_error err;
};

/* Reads a session's timeline (s->db already ensured) into its series, sorted.
 * Returns 0 or an NF_E* code (err set). */
int dd_session_read(struct dd_session *s, struct nf_error *err);
/* Its hang findings (series findings, keys in s->findings) and the critical
 * path of its last operation (or GPU job). What the analysis cannot answer is
 * kept as a reason (hangs_why, cp_why), not an error. Returns 0, NF_ENOMEM. */
int dd_session_paths(struct dd_session *s, struct nf_error *err);
void dd_session_free(struct dd_session *s);

/* ---- statistics over sorted samples ------------------------------------------- */

/* Sorts v[0..n) ascending (LSD radix, stable); 0 or NF_ENOMEM. */
int dd_sort(int64_t *v, size_t n);
/* Index of the percentile level (0 < level <= 1) in n sorted samples: floor(level * n),
 * n - 1 for level 1 (ClickHouse's quantileExact). n > 0. */
size_t dd_quantile_index(size_t n, double level);
/* The z of a two-sided level alpha: Phi^-1(1 - alpha / 2). */
double dd_z_two_sided(double alpha);
/* The distribution-free interval of the level's percentile: values at the
 * order statistics around it (DD lo INT64_MIN / hi INT64_MAX when past the ends). */
void dd_quantile_interval(const int64_t *v, size_t n, double level, double z, int64_t *lo, int64_t *hi);
/* Mann-Whitney U of b against a (both sorted): z (> 0: b larger, tie- and
 * continuity-corrected), two-sided p, and U_b / (na nb). z = 0, p = 1 when
 * every sample is equal. */
void dd_mann_whitney(const int64_t *a, size_t na, const int64_t *b, size_t nb, double *z, double *p,
		     double *p_greater);

/* ---- the result ------------------------------------------------------------------ */

struct dd_cp_row {           /* one actor and kind of the two critical paths */
	const char *actor, *kind;
	int64_t a, b;            /* ns; DD_NONE: not on that side's path */
};

struct nf_diff {
	struct nf_diff_options opts;
	struct dd_session s[2];
	struct nf_diff_session info[2];
	struct nf_diff_row *rows;
	size_t n_rows;
	char **owned;                /* strings the rows point to (why) */
	size_t n_owned, cap_owned;
	/* findings that appeared (in B, not in A) and disappeared */
	const char **appeared, **disappeared;
	size_t n_appeared, n_disappeared;
	/* critical paths side by side */
	struct dd_cp_row *cp;
	size_t n_cp;
	/* aligned waits */
	struct nf_diff_op *ops;
	size_t n_ops;
	int64_t matched, only_a, only_b;
};

/* Compares the sessions' series into d->rows; 0 or NF_ENOMEM. */
int dd_compare(struct nf_diff *d, struct nf_error *err);
/* Aligns the sessions' waits into d->ops; 0 or NF_ENOMEM. */
int dd_align(struct nf_diff *d, struct nf_error *err);

/* A duration as people read it: 950ns, 1.234us, 12.35ms, 1.500s. */
void dd_fmt_ns(char *buf, size_t len, int64_t ns);

/* Whether b - a is beyond both minimum effects of the options. */
bool dd_beyond(const struct nf_diff_options *o, int64_t a, int64_t b);

/* The outcome of one gate clause, for the writer. */
struct dd_gate_outcome {
	const char *text;        /* the clause as written (owned by the gate) */
	bool failed;
	char detail[480];        /* what was found: the worst series, its change */
};
/* The gate's outcomes: their number, *out borrowed. */
size_t dd_gate_outcomes(const struct nf_diff_gate *g, const struct dd_gate_outcome **out);

#endif
