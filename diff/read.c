/*
 * Reading one session for `nftrace diff`: its timeline cut into series, in
 * one pass over each table that holds them (fence_ops, deps, cpu_waits,
 * jobs, frames, anomalies, and the small queues, kernel_threads and
 * cpu_signals), through SQL only. Each queue's share of queue_busy is
 * computed while fence_ops streams, as the view defines it, as long as the
 * queue's operations come in the view's order (queued_ns, id), which is
 * storage order in every timeline we write; otherwise the view answers.
 * What a table does not hold is recorded (has_jobs, has_frames, ...) so the
 * comparison can say what one side lacks.
 */
#include "diff_int.h"

#include "contract/timeline.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract/capbuf.h"
#include "contract/util_hash.h"

/* The series a queue scope has, in this order, per group. */
static const int queue_metrics[] = { DM_STALL, DM_LATENCY, DM_Q2E, DM_BUSY, DM_LOST };
#define N_QM ((int)(sizeof(queue_metrics) / sizeof(queue_metrics[0])))
enum { QM_STALL, QM_LATENCY, QM_Q2E, QM_BUSY, QM_LOST };

/* One fence while the signals stream: is its value, in the order its signals ran,
 * provably never lowered? (may_hang) */
struct fstate {
	bool has_initial, any, cpu, gpu;
	int64_t initial, last_t, last_value;        /* GPU signals, in id order */
	int64_t cpu_last_t, cpu_last_value;           /* CPU signals, in id order */
	bool cpu_any;
};

/* One queue (handle) while fence_ops streams: its share of queue_busy. */
struct qstate {
	int32_t group;
	bool any, any_w, order_bad, logged;
	int64_t last_q, prev_end, in_flight, min_q, max_end;
	int64_t last_obs, prev_wend, stalled;
};

struct reader {
	struct dd_session *s;
	sqlite3 *db;
	struct nf_error *err;
	struct nf_u64map qidx;   /* queue handle -> index into q */
	struct qstate *q;
	size_t n_q, cap_q;
	int32_t *gser;           /* group * N_QM + k -> series index */
	size_t cap_gser;
	int all[DM_N];           /* the scope-all series of each metric, -1 none */
	/* per operation, in storage (id) order; ids NULL while ids are dense */
	int64_t first_id;
	int64_t *ids, *end;
	int32_t *grp, *widx;
	size_t n_op, cap_op;
	struct nf_u64map cpu_sig; /* cpu_signals.id -> ts_ns */
	/* what could make the hang check find something (see may_hang) */
	struct nf_u64map fidx;    /* fence -> index into fs */
	struct fstate *fs;
	size_t n_fs, cap_fs;
	bool busy_bad;
	bool cb_failed;           /* an SQL function's callback ran out of memory */
};

static int sql_fail(struct reader *r, const char *what)
{
	return nf_error_set(r->err, NF_ESQL, "%s: %s: %s", r->s->dir, what, sqlite3_errmsg(r->db));
}

static int nomem(struct reader *r)
{
	return nf_error_set(r->err, NF_ENOMEM, "%s: out of memory reading the timeline", r->s->dir);
}

static int64_t col_i64(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? DD_NONE : sqlite3_column_int64(st, i);
}

static const char *col_text(sqlite3_stmt *st, int i)
{
	return (const char *)sqlite3_column_text(st, i);
}

int dd_series_new(struct dd_session *s, int metric, int scope, const char *name)
{
	struct dd_series *x;

	if (nf_array_reserve((void **)&s->series, &s->cap_series, s->n_series + 1, sizeof(*s->series), 32, 0))
		return NF_ENOMEM;
	x = &s->series[s->n_series];
	memset(x, 0, sizeof(*x));
	x->metric = metric;
	x->scope = scope;
	if (!(x->name = strdup(name)))
		return NF_ENOMEM;
	return (int)s->n_series++;
}

/* Series found by (metric, scope, name): the key's index in names -> series. */
struct keyed {
	struct dd_names names;
	int *idx;
	size_t cap;
};

/* The series of (metric, scope, name), made when new (*is_new says so; may be
 * NULL); its index or NF_ENOMEM. */
static int series_get(struct dd_session *s, struct keyed *keys, int metric, int scope, const char *name,
		      bool *is_new)
{
	size_t before = keys->names.n, len = strlen(name) + 32;
	char *key = malloc(len);
	int k, idx;

	if (!key)
		return NF_ENOMEM;
	snprintf(key, len, "%d/%d/%s", metric, scope, name);
	k = dd_names_get(&keys->names, key);
	free(key);
	if (k < 0)
		return k;
	if (is_new)
		*is_new = keys->names.n != before;
	if (keys->names.n == before)
		return keys->idx[k];
	if (nf_array_reserve((void **)&keys->idx, &keys->cap, (size_t)k + 1, sizeof(*keys->idx), 64, 0) ||
	    (idx = dd_series_new(s, metric, scope, name)) < 0)
		return NF_ENOMEM;
	keys->idx[k] = idx;
	return idx;
}

static int table_exists(struct reader *r, const char *name, bool *yes)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(r->db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1", -1, &st,
			       NULL) != SQLITE_OK)
		return sql_fail(r, "sqlite_master");
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	*yes = rc == SQLITE_ROW;
	sqlite3_finalize(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : sql_fail(r, "sqlite_master");
}

/* ---- meta ------------------------------------------------------------------------ */

static int read_meta(struct reader *r)
{
	struct dd_session *s = r->s;
	sqlite3_stmt *st;
	int rc;

	s->duration_ns = -1;
	if (sqlite3_prepare_v2(r->db, "SELECT key, value FROM meta WHERE key IN ('source', 'seed', 'mode', 'duration_ns')",
			       -1, &st, NULL) != SQLITE_OK)
		return sql_fail(r, "meta");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *k = col_text(st, 0), *v = col_text(st, 1);

		if (!k || !v)
			continue;
		if (!strcmp(k, "duration_ns")) {
			s->duration_ns = sqlite3_column_int64(st, 1);
		} else {
			char **dst = !strcmp(k, "source") ? &s->source : !strcmp(k, "mode") ? &s->mode : &s->seed;

			free(*dst);
			if (!(*dst = strdup(v))) {
				sqlite3_finalize(st);
				return nomem(r);
			}
		}
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return sql_fail(r, "meta");
	if ((!s->source && !(s->source = strdup(""))) || (!s->seed && !(s->seed = strdup(""))) ||
	    (!s->mode && !(s->mode = strdup(""))))
		return nomem(r);
	return 0;
}

/* ---- queues ----------------------------------------------------------------------- */

/* The queue at handle (added with its scope when unseen): index into r->q, or NF_ENOMEM. */
static int queue_add(struct reader *r, int64_t handle, const char *name)
{
	struct dd_session *s = r->s;
	char key[64];
	uint64_t *found = nf_u64map_find(&r->qidx, (uint64_t)handle);
	int g;

	if (found)
		return (int)*found;
	if (!name || !*name) {
		snprintf(key, sizeof(key), "0x%" PRIx64, (uint64_t)handle);
		name = key;
	}
	size_t before = s->queue_names.n;

	if ((g = dd_names_get(&s->queue_names, name)) < 0)
		return g;
	if (s->queue_names.n != before) { /* a new scope: its series */
		if (nf_array_reserve((void **)&r->gser, &r->cap_gser, (size_t)(g + 1) * N_QM, sizeof(*r->gser), 64, 0))
			return NF_ENOMEM;
		for (int k = 0; k < N_QM; k++) {
			int idx = dd_series_new(s, queue_metrics[k], DS_QUEUE, name);

			if (idx < 0)
				return idx;
			r->gser[g * N_QM + k] = idx;
		}
	}
	for (int k = 0; k < N_QM; k++)
		s->series[r->gser[g * N_QM + k]].members++;
	if (nf_array_reserve((void **)&r->q, &r->cap_q, r->n_q + 1, sizeof(*r->q), 16, 0) ||
	    nf_u64map_put(&r->qidx, (uint64_t)handle, r->n_q))
		return NF_ENOMEM;
	memset(&r->q[r->n_q], 0, sizeof(r->q[0]));
	r->q[r->n_q].group = g;
	return (int)r->n_q++;
}

static int read_queues(struct reader *r)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(r->db, "SELECT queue, name FROM queues WHERE queue IS NOT NULL ORDER BY queue", -1, &st,
			       NULL) != SQLITE_OK)
		return sql_fail(r, "queues");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (queue_add(r, sqlite3_column_int64(st, 0), col_text(st, 1)) < 0) {
			sqlite3_finalize(st);
			return nomem(r);
		}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : sql_fail(r, "queues");
}

/* ---- fence_ops ---------------------------------------------------------------------- */

static int op_grow(struct reader *r)
{
	size_t cap = r->cap_op, need = r->n_op + 1;

	if (need <= cap)
		return 0;
	size_t ncap = cap ? cap * 2 : 4096;
	int64_t *e = realloc(r->end, ncap * sizeof(*e));

	if (!e)
		return NF_ENOMEM;
	r->end = e;
	int32_t *g = realloc(r->grp, ncap * sizeof(*g));

	if (!g)
		return NF_ENOMEM;
	r->grp = g;
	if (r->ids) {
		int64_t *i = realloc(r->ids, ncap * sizeof(*i));

		if (!i)
			return NF_ENOMEM;
		r->ids = i;
	}
	if (r->s->want_ops) {
		int32_t *w = realloc(r->widx, ncap * sizeof(*w));

		if (!w)
			return NF_ENOMEM;
		r->widx = w;
	}
	r->cap_op = ncap;
	return 0;
}

/* The position of operation id in the per-operation arrays, or -1. */
static ptrdiff_t op_index(const struct reader *r, int64_t id)
{
	if (!r->ids) {
		if (!r->n_op || id < r->first_id || (uint64_t)(id - r->first_id) >= r->n_op)
			return -1;
		return (ptrdiff_t)(id - r->first_id);
	}
	size_t lo = 0, hi = r->n_op;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->n_op && r->ids[lo] == id ? (ptrdiff_t)lo : -1;
}

/* The state of fence f (added when unseen): its index, or NF_ENOMEM. */
static int fence_state(struct reader *r, int64_t f)
{
	uint64_t *k = nf_u64map_find(&r->fidx, (uint64_t)f);

	if (k)
		return (int)*k;
	if (nf_array_reserve((void **)&r->fs, &r->cap_fs, r->n_fs + 1, sizeof(*r->fs), 16, 0) ||
	    nf_u64map_put(&r->fidx, (uint64_t)f, r->n_fs))
		return NF_ENOMEM;
	memset(&r->fs[r->n_fs], 0, sizeof(r->fs[0]));
	return (int)r->n_fs++;
}

/*
 * Whether the hang check (nf_analysis_hangs) could find anything is decided
 * while the tables stream, so a session where it cannot is spared its pass
 * over the operations. It can find a deadlock, a wait never signaled or
 * blocked only from a wait that never ended: an operation not done (no end
 * and status unmatched, unsignaled, pending or none, as the analysis reads
 * it), a CPU wait without an end. It can find a lowered value only where a
 * fence's signals, in the order they ran, go down: that cannot happen when
 * its GPU signals (with an end) come in id order with ends and values never
 * going back and never below its initial value, equal ends carrying equal
 * values, and it has no CPU signals besides (or only CPU signals, alike in
 * their order). Anything else runs the check.
 */
static void signal_seen(struct reader *r, struct fstate *f, int64_t t, int64_t value, bool cpu)
{
	if (cpu) {
		if (f->cpu_any && (t < f->cpu_last_t || value < f->cpu_last_value ||
				   (t == f->cpu_last_t && value != f->cpu_last_value)))
			r->s->may_hang = true;
		if (!f->cpu_any && f->has_initial && value < f->initial)
			r->s->may_hang = true;
		f->cpu_any = f->cpu = true;
		f->cpu_last_t = t;
		f->cpu_last_value = value;
	} else {
		if (f->any && (t < f->last_t || value < f->last_value || (t == f->last_t && value != f->last_value)))
			r->s->may_hang = true;
		if (!f->any && f->has_initial && value < f->initial)
			r->s->may_hang = true;
		f->any = f->gpu = true;
		f->last_t = t;
		f->last_value = value;
	}
	if (f->cpu && f->gpu)
		r->s->may_hang = true;
}

static int read_fences(struct reader *r)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(r->db, "SELECT fence, initial_value FROM fences WHERE fence IS NOT NULL", -1, &st, NULL) !=
	    SQLITE_OK)
		return sql_fail(r, "fences");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int k = fence_state(r, sqlite3_column_int64(st, 0));

		if (k < 0) {
			sqlite3_finalize(st);
			return nomem(r);
		}
		r->fs[k].has_initial = sqlite3_column_type(st, 1) != SQLITE_NULL;
		r->fs[k].initial = sqlite3_column_int64(st, 1);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : sql_fail(r, "fences");
}

static int64_t max64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

/* queue_busy, row by row: the union of [queued, end] in (queued_ns, id) order, and of
 * the waits' [observed, end]; a queue whose rows come out of that order is marked. */
static void busy_add(struct qstate *q, bool wait, int64_t queued, int64_t observed, int64_t end)
{
	if (q->any && queued < q->last_q)
		q->order_bad = true;
	q->last_q = queued;
	q->in_flight += max64(0, end - (q->any ? max64(queued, q->prev_end) : queued));
	q->prev_end = q->any ? max64(q->prev_end, end) : end;
	q->min_q = q->any && q->min_q < queued ? q->min_q : queued;
	q->max_end = q->any ? max64(q->max_end, end) : end;
	q->any = true;
	if (!wait || observed == DD_NONE || end <= observed)
		return;
	if (q->any_w && observed < q->last_obs)
		q->order_bad = true;
	q->last_obs = observed;
	q->stalled += max64(0, end - (q->any_w ? max64(observed, q->prev_wend) : observed));
	q->prev_wend = q->any_w ? max64(q->prev_wend, end) : end;
	q->any_w = true;
}

static int64_t val_i64(sqlite3_value *v)
{
	return sqlite3_value_type(v) == SQLITE_NULL ? DD_NONE : sqlite3_value_int64(v);
}

/* nf_diff_op(id, queue, op, fence, value, queued_ns, observed_ns, end_ns, status, log_seq),
 * called for each fence_ops row in storage order: an SQL function rather than a
 * statement stepped here, so no row pays the column API's locking. */
static void op_row(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	struct reader *r = sqlite3_user_data(ctx);
	struct dd_session *s = r->s;
	int64_t id = sqlite3_value_int64(argv[0]);
	int64_t queued = val_i64(argv[5]), observed = val_i64(argv[6]), end = val_i64(argv[7]);
	bool wait = sqlite3_value_bytes(argv[2]) == 4; /* 'wait' (else 'signal') */
	bool logged = sqlite3_value_type(argv[9]) != SQLITE_NULL; /* it has a log entry */
	int32_t g = -1;

	(void)argc;
	if (end == DD_NONE && !s->may_hang) {
		/* not done, as the analysis reads it: the hang check could find something */
		const char *st = (const char *)sqlite3_value_text(argv[8]);

		if (!st || !strcmp(st, "unmatched") || !strcmp(st, "unsignaled") || !strcmp(st, "pending"))
			s->may_hang = true;
	}
	if (!wait && end != DD_NONE && !s->may_hang && sqlite3_value_type(argv[3]) != SQLITE_NULL &&
	    sqlite3_value_type(argv[4]) != SQLITE_NULL) {
		int k = fence_state(r, sqlite3_value_int64(argv[3]));

		if (k < 0)
			goto out_nomem;
		signal_seen(r, &r->fs[k], end, sqlite3_value_int64(argv[4]), false);
	}
	if (op_grow(r))
		goto out_nomem;
	if (!r->n_op) {
		r->first_id = id;
	} else if (!r->ids && id != r->first_id + (int64_t)r->n_op) {
		/* not dense after all: keep the ids from here on */
		if (!(r->ids = malloc(r->cap_op * sizeof(*r->ids))))
			goto out_nomem;
		for (size_t i = 0; i < r->n_op; i++)
			r->ids[i] = r->first_id + (int64_t)i;
	}
	if (r->ids)
		r->ids[r->n_op] = id;
	if (sqlite3_value_type(argv[1]) != SQLITE_NULL) {
		int64_t handle = sqlite3_value_int64(argv[1]);
		uint64_t *qi = nf_u64map_find(&r->qidx, (uint64_t)handle);
		int k = qi ? (int)*qi : queue_add(r, handle, NULL);

		if (k < 0)
			goto out_nomem;
		struct qstate *q = &r->q[k];

		g = q->group;
		q->logged |= logged;
		if (queued != DD_NONE && end != DD_NONE) {
			busy_add(q, wait, queued, observed, end);
			/* 'aborted' is the only 7-byte status that is not an end ('pending' has none) */
			bool aborted = sqlite3_value_bytes(argv[8]) == 7 &&
				       !strcmp((const char *)sqlite3_value_text(argv[8]), "aborted");

			if (!aborted && dd_series_push(&s->series[r->gser[g * N_QM + QM_Q2E]], end - queued))
				goto out_nomem;
		}
	}
	r->end[r->n_op] = end;
	r->grp[r->n_op] = g;
	if (s->want_ops) {
		r->widx[r->n_op] = -1;
		if (wait && g >= 0) {
			struct dd_wait *w;

			if (nf_array_reserve((void **)&s->waits, &s->cap_waits, s->n_waits + 1, sizeof(*s->waits), 1024, 0))
				goto out_nomem;
			w = &s->waits[s->n_waits];
			w->group = g;
			w->occ = 0;
			w->fence = val_i64(argv[3]);
			w->value = val_i64(argv[4]);
			w->id = id;
			w->queue = sqlite3_value_int64(argv[1]);
			w->start = observed != DD_NONE ? observed : queued;
			w->end = end;
			w->stall = w->latency = DD_NONE;
			r->widx[r->n_op] = (int32_t)s->n_waits++;
		}
	}
	r->n_op++;
	sqlite3_result_null(ctx);
	return;
out_nomem:
	r->cb_failed = true;
	sqlite3_result_error_nomem(ctx);
}

/* Runs "SELECT count(FN(args)) FROM table" with FN calling back into r. */
static int run_pass(struct reader *r, const char *fn, int n_args,
		   void (*cb)(sqlite3_context *, int, sqlite3_value **), const char *sql, const char *what)
{
	sqlite3_stmt *st = NULL;
	int rc;

	r->cb_failed = false;
	if (sqlite3_create_function(r->db, fn, n_args, SQLITE_UTF8 | SQLITE_DIRECTONLY, r, cb, NULL, NULL) != SQLITE_OK)
		return sql_fail(r, what);
	rc = sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) == SQLITE_OK ? sqlite3_step(st) : SQLITE_ERROR;
	if (r->cb_failed)
		rc = nomem(r);
	else if (rc != SQLITE_ROW)
		rc = sql_fail(r, what);
	else
		rc = 0;
	sqlite3_finalize(st);
	/* the function points at r: gone with it */
	sqlite3_create_function(r->db, fn, n_args, SQLITE_UTF8, NULL, NULL, NULL, NULL);
	return rc;
}

static int pass_ops(struct reader *r)
{
	int rc = run_pass(r, "nf_diff_op", 10, op_row,
			  "SELECT count(nf_diff_op(id, queue, op, fence, value, queued_ns, observed_ns, end_ns, status, "
			  "log_seq)) FROM fence_ops",
			  "fence_ops");

	r->s->ops = (int64_t)r->n_op;
	return rc;
}

/* ---- deps ------------------------------------------------------------------------ */

static int read_cpu_signals(struct reader *r)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(r->db, "SELECT id, ts_ns, fence, value FROM cpu_signals WHERE ts_ns IS NOT NULL ORDER BY id",
			       -1, &st, NULL) != SQLITE_OK)
		return sql_fail(r, "cpu_signals");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (nf_u64map_put(&r->cpu_sig, (uint64_t)sqlite3_column_int64(st, 0),
				  (uint64_t)sqlite3_column_int64(st, 1))) {
			sqlite3_finalize(st);
			return nomem(r);
		}
		if (sqlite3_column_type(st, 2) != SQLITE_NULL && sqlite3_column_type(st, 3) != SQLITE_NULL) {
			int k = fence_state(r, sqlite3_column_int64(st, 2));

			if (k < 0) {
				sqlite3_finalize(st);
				return nomem(r);
			}
			signal_seen(r, &r->fs[k], sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 3), true);
		}
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : sql_fail(r, "cpu_signals");
}

/* nf_diff_dep(wait_id, signal_id, cpu_signal, stall_ns), for each deps row. */
static void dep_row(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	struct reader *r = sqlite3_user_data(ctx);
	struct dd_session *s = r->s;
	ptrdiff_t wi = sqlite3_value_type(argv[0]) == SQLITE_NULL ? -1 : op_index(r, sqlite3_value_int64(argv[0]));
	int64_t stall = val_i64(argv[3]), latency = DD_NONE;

	(void)argc;
	sqlite3_result_null(ctx);
	if (wi < 0 || r->grp[wi] < 0) /* CPU waits: cpu_wait, from cpu_waits */
		return;
	int32_t g = r->grp[wi];
	int64_t wend = r->end[wi];

	if (stall != DD_NONE && dd_series_push(&s->series[r->gser[g * N_QM + QM_STALL]], stall))
		goto out_nomem;
	if (wend != DD_NONE) {
		if (sqlite3_value_type(argv[1]) != SQLITE_NULL) {
			ptrdiff_t si = op_index(r, sqlite3_value_int64(argv[1]));

			if (si >= 0 && r->end[si] != DD_NONE)
				latency = wend - r->end[si];
		} else if (sqlite3_value_type(argv[2]) != SQLITE_NULL) {
			uint64_t *ts = nf_u64map_find(&r->cpu_sig, (uint64_t)sqlite3_value_int64(argv[2]));

			if (ts)
				latency = wend - (int64_t)*ts;
		}
	}
	if (latency != DD_NONE && dd_series_push(&s->series[r->gser[g * N_QM + QM_LATENCY]], latency))
		goto out_nomem;
	if (s->want_ops && r->widx[wi] >= 0) {
		s->waits[r->widx[wi]].stall = stall;
		s->waits[r->widx[wi]].latency = latency;
	}
	return;
out_nomem:
	r->cb_failed = true;
	sqlite3_result_error_nomem(ctx);
}

static int pass_deps(struct reader *r)
{
	return run_pass(r, "nf_diff_dep", 4, dep_row,
			"SELECT count(nf_diff_dep(wait_id, signal_id, cpu_signal, stall_ns)) FROM deps", "deps");
}

/* ---- busy ------------------------------------------------------------------------ */

static int finish_busy(struct reader *r)
{
	struct dd_session *s = r->s;
	sqlite3_stmt *st;
	int rc;

	for (size_t i = 0; i < r->n_q; i++) {
		r->busy_bad |= r->q[i].order_bad;
		if (r->q[i].logged) /* a queue without a log (a kernel timeline) loses no entries */
			s->series[r->gser[r->q[i].group * N_QM + QM_LOST]].has_value = true;
	}
	if (!r->busy_bad) {
		for (size_t i = 0; i < r->n_q; i++) {
			const struct qstate *q = &r->q[i];
			struct dd_series *b = &s->series[r->gser[q->group * N_QM + QM_BUSY]];

			if (!q->any)
				continue;
			b->has_value = true;
			b->value += q->in_flight - q->stalled;
			b->aux += q->max_end - q->min_q;
		}
		return 0;
	}
	/* a queue out of (queued_ns, id) order: the view, whose windows sort */
	if (sqlite3_prepare_v2(r->db, "SELECT queue, in_flight_not_stalled_ns, span_ns FROM queue_busy", -1, &st,
			       NULL) != SQLITE_OK)
		return sql_fail(r, "queue_busy");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t *qi = nf_u64map_find(&r->qidx, (uint64_t)sqlite3_column_int64(st, 0));

		if (!qi)
			continue;
		struct dd_series *b = &s->series[r->gser[r->q[*qi].group * N_QM + QM_BUSY]];

		b->has_value = true;
		b->value += sqlite3_column_int64(st, 1);
		b->aux += sqlite3_column_int64(st, 2);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : sql_fail(r, "queue_busy");
}

/* ---- cpu_waits, jobs, frames, anomalies -------------------------------------------- */

static int read_cpu_waits(struct reader *r, struct keyed *keys)
{
	struct dd_session *s = r->s;
	struct nf_u64map comm = { 0 }, seen = { 0 };
	struct dd_names comms = { 0 };
	sqlite3_stmt *st = NULL;
	bool has_threads;
	int rc;

	if ((rc = table_exists(r, "kernel_threads", &has_threads)))
		return rc;
	if (has_threads) {
		if (sqlite3_prepare_v2(r->db, "SELECT thread, comm FROM kernel_threads WHERE comm IS NOT NULL", -1, &st,
				       NULL) != SQLITE_OK) {
			rc = sql_fail(r, "kernel_threads");
			goto out;
		}
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			int k = dd_names_get(&comms, col_text(st, 1));

			if (k < 0 || nf_u64map_put(&comm, (uint64_t)sqlite3_column_int64(st, 0), (uint64_t)k))
				goto out_nomem;
		}
		sqlite3_finalize(st);
		st = NULL;
		if (rc != SQLITE_DONE) {
			rc = sql_fail(r, "kernel_threads");
			goto out;
		}
	}
	if (sqlite3_prepare_v2(r->db, "SELECT thread, start_ns, end_ns, status FROM cpu_waits", -1, &st, NULL) !=
	    SQLITE_OK) {
		rc = sql_fail(r, "cpu_waits");
		goto out;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t thread = col_i64(st, 0), start = col_i64(st, 1), end = col_i64(st, 2);
		const char *status = col_text(st, 3);
		uint64_t *cached = thread == DD_NONE ? NULL : nf_u64map_find(&seen, (uint64_t)thread);
		int idx;

		s->has_cpu_waits = true;
		if (end == DD_NONE) /* still waiting: the hang check has something to look at */
			s->may_hang = true;
		if (cached) {
			idx = (int)*cached;
		} else {
			char name[32] = "?";
			uint64_t *c = thread == DD_NONE ? NULL : nf_u64map_find(&comm, (uint64_t)thread);
			bool is_new;

			if (thread != DD_NONE)
				snprintf(name, sizeof(name), "%" PRId64, thread);
			/* a thread by its task name when the timeline has one, else its id */
			idx = series_get(s, keys, DM_CPU_WAIT, DS_THREAD, c ? comms.keys[*c] : name, &is_new);
			if (idx < 0 || (thread != DD_NONE && nf_u64map_put(&seen, (uint64_t)thread, (uint64_t)idx)))
				goto out_nomem;
			s->series[idx].members++;
		}
		if (status && !strcmp(status, "satisfied") && start != DD_NONE && end != DD_NONE &&
		    dd_series_push(&s->series[idx], end - start))
			goto out_nomem;
	}
	rc = rc == SQLITE_DONE ? 0 : sql_fail(r, "cpu_waits");
	goto out;
out_nomem:
	rc = nomem(r);
out:
	sqlite3_finalize(st);
	nf_u64map_free(&comm);
	nf_u64map_free(&seen);
	dd_names_free(&comms);
	return rc;
}

static int read_jobs(struct reader *r, struct keyed *keys)
{
	struct dd_session *s = r->s;
	sqlite3_stmt *st;
	bool exists;
	int rc;

	if ((rc = table_exists(r, "jobs", &exists)) || !exists)
		return rc;
	if (sqlite3_prepare_v2(r->db, "SELECT driver, ring, started_ns, finished_ns, finish_source FROM jobs", -1, &st,
			       NULL) != SQLITE_OK)
		return sql_fail(r, "jobs");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *driver = col_text(st, 0), *ring = col_text(st, 1), *src = col_text(st, 4);
		int64_t start = col_i64(st, 2), fin = col_i64(st, 3);
		char name[600];
		bool is_new;
		int idx;

		s->has_jobs = true;
		snprintf(name, sizeof(name), "%.250s %.250s", driver ? driver : "?", ring ? ring : "?");
		if ((idx = series_get(s, keys, DM_JOB, DS_RING, name, &is_new)) < 0)
			goto out_nomem;
		if (is_new)
			s->series[idx].members = 1;
		if (start != DD_NONE && fin != DD_NONE && src && (!strcmp(src, "event") || !strcmp(src, "signaled")) &&
		    dd_series_push(&s->series[idx], fin - start))
			goto out_nomem;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : sql_fail(r, "jobs");
out_nomem:
	sqlite3_finalize(st);
	return nomem(r);
}

static int read_frames(struct reader *r, struct keyed *keys)
{
	struct dd_session *s = r->s;
	bool has_interval = false, has_process = false;
	sqlite3_stmt *st;
	int rc;

	if ((rc = table_exists(r, "frames", &s->has_frames)) || !s->has_frames)
		return rc;
	if (sqlite3_prepare_v2(r->db, "SELECT name FROM pragma_table_info('frames')", -1, &st, NULL) != SQLITE_OK)
		return sql_fail(r, "frames");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *c = col_text(st, 0);

		has_interval |= c && !strcmp(c, "interval_ns");
		has_process |= c && !strcmp(c, "process");
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return sql_fail(r, "frames");
	if (!(s->frames_usable = has_interval))
		return 0;
	/* the table is in every timeline: frames are there when it has a row */
	if (sqlite3_prepare_v2(r->db, "SELECT EXISTS (SELECT 1 FROM frames)", -1, &st, NULL) != SQLITE_OK)
		return sql_fail(r, "frames");
	rc = sqlite3_step(st);
	s->has_frames = rc == SQLITE_ROW && sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW)
		return sql_fail(r, "frames");
	if (!s->has_frames)
		return 0;
	if (sqlite3_prepare_v2(r->db,
			       has_process ? "SELECT process, interval_ns FROM frames"
					   : "SELECT NULL, interval_ns FROM frames",
			       -1, &st, NULL) != SQLITE_OK)
		return sql_fail(r, "frames");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t v = col_i64(st, 1);
		bool is_new;

		if (v == DD_NONE)
			continue;
		if (dd_series_push(&s->series[r->all[DM_FRAME]], v)) {
			sqlite3_finalize(st);
			return nomem(r);
		}
		if (sqlite3_column_type(st, 0) != SQLITE_NULL) {
			/* the process as the table has it: an id, or a name */
			const char *name = col_text(st, 0);
			int idx;

			if (!name || (idx = series_get(s, keys, DM_FRAME, DS_PROCESS, name, &is_new)) < 0 ||
			    dd_series_push(&s->series[idx], v)) {
				sqlite3_finalize(st);
				return nomem(r);
			}
			s->series[idx].members = 1;
		}
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : sql_fail(r, "frames");
}

static int read_anomalies(struct reader *r, struct keyed *keys)
{
	struct dd_session *s = r->s;
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(r->db,
			       "SELECT kind, queue, count(*), coalesce(sum(lost_entries), 0) FROM anomalies "
			       "GROUP BY kind, queue",
			       -1, &st, NULL) != SQLITE_OK)
		return sql_fail(r, "anomalies");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *kind = col_text(st, 0);
		int64_t n = sqlite3_column_int64(st, 2), lost = sqlite3_column_int64(st, 3);
		int idx = series_get(s, keys, DM_ANOMALIES, DS_KIND, kind ? kind : "?", NULL);

		if (idx < 0) {
			sqlite3_finalize(st);
			return nomem(r);
		}
		s->series[idx].value += n;
		s->series[idx].has_value = true;
		s->series[r->all[DM_ANOMALIES]].value += n;
		s->series[r->all[DM_LOST]].value += lost;
		if (sqlite3_column_type(st, 1) != SQLITE_NULL) {
			uint64_t *qi = nf_u64map_find(&r->qidx, (uint64_t)sqlite3_column_int64(st, 1));

			if (qi) {
				s->series[r->gser[r->q[*qi].group * N_QM + QM_LOST]].value += lost;
				s->series[r->gser[r->q[*qi].group * N_QM + QM_LOST]].has_value = true;
			}
		}
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : sql_fail(r, "anomalies");
}

/* ---- the scope all, sorting ----------------------------------------------------------- */

static int finish_series(struct reader *r)
{
	struct dd_session *s = r->s;

	/* each distribution's scope all holds every sample of its other scopes
	 * (frames: filled while read, every frame has one) */
	for (int m = 0; m < DM_N_DIST; m++) {
		struct dd_series *all = &s->series[r->all[m]];

		if (m == DM_FRAME)
			continue;
		for (size_t i = 0; i < s->n_series; i++) {
			const struct dd_series *x = &s->series[i];

			if (x->metric != m || x->scope == DS_ALL || !x->n)
				continue;
			if (nf_array_reserve((void **)&all->v, &all->cap, all->n + x->n, sizeof(*all->v), 256, 0))
				return nomem(r);
			memcpy(all->v + all->n, x->v, x->n * sizeof(*x->v));
			all->n += x->n;
			all->members++;
		}
	}
	for (size_t i = 0; i < s->n_series; i++) {
		struct dd_series *x = &s->series[i];

		if (x->metric == DM_BUSY && x->scope == DS_QUEUE && x->has_value) {
			s->series[r->all[DM_BUSY]].value += x->value;
			s->series[r->all[DM_BUSY]].aux += x->aux;
			s->series[r->all[DM_BUSY]].has_value = true;
		}
		if (x->metric < DM_N_DIST && dd_sort(x->v, x->n))
			return nomem(r);
	}
	return 0;
}

int dd_session_read(struct dd_session *s, struct nf_error *err)
{
	struct reader r = { .s = s, .err = err };
	struct keyed keys = { 0 };
	int rc;

	if ((rc = nf_timeline_open_read(s->db, &r.db, err)))
		return rc;
	for (int m = 0; m < DM_N; m++) {
		if ((r.all[m] = dd_series_new(s, m, DS_ALL, "")) < 0) {
			rc = nomem(&r);
			goto out;
		}
		/* counts of the whole session (findings: once the hang check ran) */
		s->series[r.all[m]].has_value = m == DM_LOST || m == DM_ANOMALIES;
	}
	if ((rc = read_meta(&r)) || (rc = read_queues(&r)) || (rc = read_fences(&r)) || (rc = read_cpu_signals(&r)) ||
	    (rc = pass_ops(&r)) || (rc = pass_deps(&r)))
		goto out;
	/* the per-operation arrays are not needed past deps */
	free(r.ids);
	free(r.end);
	free(r.grp);
	free(r.widx);
	r.ids = r.end = NULL;
	r.grp = r.widx = NULL;
	nf_u64map_free(&r.cpu_sig);
	nf_u64map_free(&r.fidx);
	free(r.fs);
	r.fs = NULL;
	if ((rc = finish_busy(&r)) || (rc = read_cpu_waits(&r, &keys)) || (rc = read_jobs(&r, &keys)) ||
	    (rc = read_frames(&r, &keys)) || (rc = read_anomalies(&r, &keys)) || (rc = finish_series(&r)))
		goto out;
out:
	sqlite3_close(r.db);
	free(r.ids);
	free(r.end);
	free(r.grp);
	free(r.widx);
	free(r.q);
	free(r.gser);
	nf_u64map_free(&r.qidx);
	nf_u64map_free(&r.cpu_sig);
	nf_u64map_free(&r.fidx);
	free(r.fs);
	dd_names_free(&keys.names);
	free(keys.idx);
	return rc;
}

void dd_session_free(struct dd_session *s)
{
	for (size_t i = 0; i < s->n_series; i++) {
		free(s->series[i].name);
		free(s->series[i].v);
	}
	free(s->series);
	dd_names_free(&s->queue_names);
	dd_names_free(&s->findings);
	for (size_t i = 0; i < s->n_cp; i++)
		free(s->cp[i].actor);
	free(s->cp);
	free(s->waits);
	free(s->source);
	free(s->seed);
	free(s->mode);
	memset(s, 0, sizeof(*s));
}
