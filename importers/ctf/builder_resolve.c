/*
 * The timeline builder's final resolve pass (nf_timeline_builder_finish):
 * fits the clocks, makes one pass over the spill that writes the fence_ops
 * rows (their GPU times converted now that every calibration pair is known)
 * and sorts the signals and completed waits; one merge of the two sorted
 * streams ties every completed wait to the signal that released it and
 * writes its deps row; then overruns, anomalies, summaries and meta. The
 * streaming part is builder.c; builder_int.h is what they share.
 */
#include "builder_int.h"
#include "contract/errors.h"
#include "../importers_int.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


static const char *const status_name[] = {
	[OS_COMPLETE] = "complete", [OS_LOST] = "lost", [OS_ZERO] = "zero_timestamp",
	[OS_UNMATCHED] = "unmatched", [OS_LEGACY] = "legacy",
	[OS_REPEATED] = "repeated_timestamp",
};

/* ---- finish ---- */

static int write_meta(struct nf_timeline_builder *b, struct nf_error *err)
{
	struct nf_writer_session m = {
		.cpu_frequency = b->cpu_frequency,
		.start_ticks = b->start_ticks,
		.duration_ns = b->any_ts ? ns_of(b, b->max_ts) : 0,
		.source = b->source,
		.mode = b->mode,
		.tool_version = b->tool_version,
		.host = b->host,
		.ground_truth = b->ground_truth != 0,
		.has_seed = true,
		.seed = b->seed,
		.has_recorded_schema = true,
		.recorded_schema = b->schema_version,
	};

	return nf_writer_session_meta(b->db, &m, err);
}

/* Converts a GPU timestamp; *has is false when it is 0 or the adapter has no calibration. */
static int gpu_ns(struct nf_clock_fitted *m, uint32_t adapter, int64_t gpu, int64_t *ns,
		  bool *has, struct nf_error *err)
{
	double d = 0;
	int rc;

	*has = false;
	if (gpu == 0)
		return 0;
	rc = nf_clock_fitted_convert(m, adapter, (uint64_t)gpu, &d, has, err);
	if (rc == 0 && *has) {
		/* A time the model cannot represent stays NULL. */
		if (!(d >= -(double)NF_GPU_TS_MAX && d <= (double)NF_GPU_TS_MAX))
			*has = false;
		else
			*ns = (int64_t)llround(d);
	}
	return rc;
}

static int resolve_overruns(struct nf_timeline_builder *b, struct nf_clock_fitted *m,
			    struct nf_error *err)
{
	sqlite3_stmt *sel = NULL;
	int rc = 0, src;

	if (sqlite3_prepare_v2(b->db,
			       "SELECT adapter, queue, log, count, prev_gpu, next_gpu, detail "
			       "FROM temp.t_lost ORDER BY rowid", -1, &sel, NULL) != SQLITE_OK)
		return nf_tb_sql_err(b, err, "select t_lost");
	while ((src = sqlite3_step(sel)) == SQLITE_ROW) {
		uint32_t adapter = (uint32_t)sqlite3_column_int64(sel, 0);
		int64_t first = 0, last = 0;
		bool hf, hl;

		rc = gpu_ns(m, adapter, sqlite3_column_int64(sel, 4), &first, &hf, err);
		rc = rc ? rc : gpu_ns(m, adapter, sqlite3_column_int64(sel, 5), &last, &hl, err);
		rc = rc ? rc : nf_tb_add_anomaly(b, nf_finding_anomaly_name(NF_FIND_LOST),
					   sqlite3_column_int64(sel, 1), true,
					   log_name((uint32_t)sqlite3_column_int(sel, 2)),
					   hf ? &first : NULL, hl ? &last : NULL,
					   sqlite3_column_int64(sel, 3),
					   (const char *)sqlite3_column_text(sel, 6), err);
		if (rc)
			break;
	}
	if (rc == 0 && src != SQLITE_DONE)
		rc = nf_tb_sql_err(b, err, "read t_lost");
	sqlite3_finalize(sel);
	return rc;
}

/* Inputs of one fence_ops row. */

/* ---- finish: times, dependencies, rows ---- */

/* Every operation reached the spill in id order: the k-th record has id k. */
static bool ops_in_id_order(const struct nf_timeline_builder *b)
{
	return !b->ops_late && nf_spill_count(b->ops) == (uint64_t)b->next_op_id;
}

struct finisher {
	struct nf_timeline_builder *b;
	struct nf_clock_fitted *m;
	int status_len[sizeof(status_name) / sizeof(status_name[0])];
	struct nf_spill *anoms;  /* causality anomalies found by the row sources, inserted after */
	bool auto_id;            /* the spill holds ids 1, 2, ... in order: SQLite numbers the rows */
	int64_t last_id;
};

/* A causality anomaly found while producing rows (the producer cannot use the connection). */
struct anom_rec {
	int64_t queue, first_ns, last_ns;
	uint32_t log;
	uint32_t pad;
	char detail[240];
};

static int defer_anomaly(struct finisher *f, int64_t queue, uint32_t log, int64_t first_ns,
			 int64_t last_ns, const char *detail, struct nf_error *err)
{
	struct anom_rec a;

	memset(&a, 0, sizeof(a));
	a.queue = queue;
	a.log = log;
	a.first_ns = first_ns;
	a.last_ns = last_ns;
	snprintf(a.detail, sizeof(a.detail), "%s", detail);
	return nf_spill_put(f->anoms, &a, err);
}

/* Inserts the deferred anomalies, in the order they were found, and empties the spill. */
static int flush_anomalies(struct finisher *f, struct nf_error *err)
{
	struct anom_rec a;
	int rc;

	if (nf_spill_count(f->anoms) == 0)
		return 0;
	if ((rc = nf_spill_rewind(f->anoms, err)) != 0)
		return rc;
	while ((rc = nf_spill_get(f->anoms, &a, err)) == 1) {
		rc = nf_tb_add_anomaly(f->b, nf_anomaly_name(NF_ANOMALY_CAUSALITY), a.queue, true, log_name(a.log), &a.first_ns,
				 &a.last_ns, 0, a.detail, err);
		if (rc)
			return rc;
	}
	if (rc)
		return rc;
	nf_spill_destroy(f->anoms);
	f->anoms = nf_spill_create(f->b->spill_dir, sizeof(struct anom_rec), err);
	return f->anoms ? 0 : (err && err->code ? err->code : NF_ENOMEM);
}

/* Fills one deps row, and defers a causality anomaly when the releaser ended late. */
static int put_dep(struct finisher *f, struct nf_bulk_row *row, const struct nf_deps_row *r,
		   struct nf_error *err)
{
	nf_bulk_opt(row, 0, r->signal_id != 0, r->signal_id);
	nf_bulk_int(row, 1, r->wait_id);
	nf_bulk_opt(row, 2, r->cpu_id != 0, r->cpu_id);
	nf_bulk_opt(row, 3, r->has_stall != 0, r->stall);
	if (r->reason)
		nf_bulk_text(row, 4, r->reason, (int)strlen(r->reason));
	if (r->late) {
		char detail[240];
		int64_t end = r->end, sig_end = r->late_end;

		snprintf(detail, sizeof(detail),
			 "wait op %" PRId64 " (fence %" PRId64 " value %" PRId64 ") ends at %" PRId64
			 " ns, but the first signal to reach its value, %s %" PRId64 ", ends at %" PRId64
			 " ns and no signal of unknown end could have released it: no releaser named",
			 r->wait_id, r->fence, r->value, end, r->late_cpu ? "CPU signal" : "signal op",
			 r->late_id, sig_end);
		return defer_anomaly(f, r->queue, NF_LOG_WAITS, end, sig_end, detail, err);
	}
	return 0;
}

/* Moves a record's GPU ticks onto the CPU time base; drops what cannot be converted. */
static int op_times(struct nf_clock_fitted *m, struct op_rec *o, struct nf_error *err)
{
	int64_t ns = 0;
	bool has;
	int rc;

	if (!(o->flags & OPF_GPU))
		return 0;
	o->flags &= (uint16_t)~OPF_GPU;
	if (o->flags & OPF_END) {
		if ((rc = gpu_ns(m, o->adapter, o->end, &ns, &has, err)) != 0)
			return rc;
		o->end = ns;
		if (!has)
			o->flags &= (uint16_t)~OPF_END;
	}
	if (o->flags & OPF_OBS) {
		if ((rc = gpu_ns(m, o->adapter, o->observed, &ns, &has, err)) != 0)
			return rc;
		o->observed = ns;
		if (!has)
			o->flags &= (uint16_t)~OPF_OBS;
	}
	return 0;
}

/* The coverage entry of queue in cs, made empty when it has none; NULL when out of memory. */
static struct log_cover *cover_entry(struct cover_set *cs, int64_t queue)
{
	uint64_t *ix = nf_u64map_find(&cs->of, queue);

	if (ix)
		return &cs->v[*ix];
	if (cs->n == cs->cap) {
		size_t nc = cs->cap ? cs->cap * 2 : 16;
		struct log_cover *v = realloc(cs->v, nc * sizeof(*v));

		if (!v)
			return NULL;
		cs->v = v;
		cs->cap = nc;
	}
	if (nf_u64map_put(&cs->of, queue, cs->n))
		return NULL;
	memset(&cs->v[cs->n], 0, sizeof(cs->v[0]));
	cs->v[cs->n].queue = queue;
	return &cs->v[cs->n++];
}

/* Counts a fence_ops row into its queue's coverage (what write_coverage reports). */
static int cover_row(struct cover_set *cs, const struct op_rec *o, struct nf_error *err)
{
	struct log_cover *c = cover_entry(cs, o->queue);
	int l = o->log == NF_LOG_WAITS ? 0 : 1;
	int64_t t;

	if (!c)
		return nf_tb_oom(err);
	c->rows++;
	c->seen[l] = true;
	if (o->flags & OPF_SEQ)
		c->events[l]++;
	if (o->flags & (OPF_QUEUED | OPF_END)) {
		t = o->flags & OPF_QUEUED ? o->queued : o->end;
		if (!c->has_first[l] || t < c->first[l]) {
			c->first[l] = t;
			c->has_first[l] = true;
		}
	}
	return 0;
}

/* A causality anomaly of one operation: it ended before it was queued (beyond the slack). */
static bool ends_before_queued(const struct nf_timeline_builder *b, const struct op_rec *o, char *detail,
			       size_t len)
{
	if (!(o->flags & OPF_END) || !(o->flags & OPF_QUEUED) ||
	    !((double)o->end + b->slack_ns < (double)o->queued))
		return false;
	snprintf(detail, len, "%s op %" PRId64 " ends at %" PRId64 " ns, before it was queued at %" PRId64 " ns",
		 o->log == NF_LOG_WAITS ? "wait" : "signal", o->id, o->end, o->queued);
	return true;
}

/*
 * The one pass over the spilled operations, as nf_bulk's row source: each
 * becomes its fence_ops row (GPU times moved onto the CPU clock), and the
 * signals and completed waits go to the sorts of the dependency merge.
 */
static int ops_row(void *ctx, struct nf_bulk_row *row, struct nf_error *err)
{
	struct finisher *f = ctx;
	struct nf_timeline_builder *b = f->b;
	struct op_rec o;
	char detail[200];
	int rc;

	if ((rc = nf_spill_get(b->ops, &o, err)) != 1)
		return rc;
	if ((rc = op_times(f->m, &o, err)) != 0)
		return rc;
	if (f->auto_id && o.id != ++f->last_id)
		return nf_error_set(err, NF_ESTATE, "timeline: operation %" PRId64
				    " reached the load out of order", o.id);
	if ((rc = cover_row(&b->cover, &o, err)) != 0)
		return rc;
	nf_bulk_int(row, 0, o.id);
	nf_bulk_int(row, 1, o.queue);
	nf_bulk_int(row, 2, o.adapter);
	if (o.log == NF_LOG_WAITS)
		nf_bulk_text(row, 3, "wait", 4);
	else
		nf_bulk_text(row, 3, "signal", 6);
	nf_bulk_opt(row, 4, o.flags & OPF_FENCE, o.fence);
	nf_bulk_int(row, 5, o.handle);
	nf_bulk_int(row, 6, o.value);
	nf_bulk_opt(row, 7, o.flags & OPF_QUEUED, o.queued);
	nf_bulk_opt(row, 8, o.flags & OPF_OBS, o.observed);
	nf_bulk_opt(row, 9, o.flags & OPF_END, o.end);
	nf_bulk_text(row, 10, status_name[o.status], f->status_len[o.status]);
	nf_bulk_opt(row, 11, o.flags & OPF_SEQ, o.seq);
	nf_bulk_opt(row, 12, o.flags & OPF_SEQ, o.epoch);
	nf_bulk_opt(row, 13, o.flags & OPF_THREAD, o.thread);
	if (ends_before_queued(b, &o, detail, sizeof(detail)) &&
	    (rc = defer_anomaly(f, o.queue, o.log, o.end, o.queued, detail, err)) != 0)
		return rc;
	if (o.log == NF_LOG_SIGNALS && (o.flags & OPF_FENCE)) {
		struct nf_deps_signal r = { .fence = o.fence, .value = o.value, .id = o.id,
					    .end_known = (o.flags & OPF_END) != 0, .end = o.end,
					    .queued_known = (o.flags & OPF_QUEUED) != 0, .queued = o.queued };

		rc = nf_deps_signal(b->deps, &r, err);
	} else if (o.log == NF_LOG_WAITS && (o.flags & OPF_END)) {
		bool st = (o.flags & OPF_OBS) != 0;
		struct nf_deps_wait r = { .id = o.id, .has_fence = (o.flags & OPF_FENCE) != 0, .fence = o.fence,
					  .value = o.value, .end = o.end, .queue = o.queue, .has_stall = st,
					  .stall = st ? o.end - o.observed : 0 };

		rc = nf_deps_wait(b->deps, &r, err);
	}
	return rc ? rc : 1;
}

static int load_ops(struct finisher *f, struct nf_error *err)
{
	struct nf_timeline_builder *b = f->b;
	int rc;

	/* The text columns' lengths, measured once rather than per row. */
	for (size_t i = 0; i < sizeof(status_name) / sizeof(status_name[0]); i++)
		f->status_len[i] = (int)strlen(status_name[i]);
	if ((rc = nf_spill_rewind(b->ops, err)) != 0)
		return rc;
	/*
	 * When every operation reached the spill in id order (the usual case), the
	 * k-th row has id k and SQLite numbers the rows itself: an explicit key
	 * costs a uniqueness probe per row (about a third of the insert).
	 */
	f->auto_id = ops_in_id_order(b);
	f->last_id = 0;
	return nf_bulk_run(b->bulk, f->auto_id ?
			   "INSERT INTO fence_ops(queue, adapter, op, fence, handle, value, "
			   "queued_ns, observed_ns, end_ns, status, log_seq, epoch, thread) "
			   "SELECT c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13 "
			   "FROM nf_bulk" :
			   "INSERT INTO fence_ops(id, queue, adapter, op, fence, handle, value, "
			   "queued_ns, observed_ns, end_ns, status, log_seq, epoch, thread) "
			   "SELECT c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13 "
			   "FROM nf_bulk", ops_row, f, nf_clock_fitted_detached(f->m),
			   "insert fence_ops", err);
}

/* nf_bulk's row source for deps: the merge, one wait at a time. */
static int deps_row(void *ctx, struct nf_bulk_row *row, struct nf_error *err)
{
	struct finisher *f = ctx;
	struct nf_deps_row r;
	int rc;

	if ((rc = nf_deps_next(f->b->deps, &r, err)) != 1)
		return rc;
	if (r.reason && strcmp(r.reason, "no_signal") == 0)
		f->b->deps_unreleased++;
	rc = put_dep(f, row, &r, err);
	return rc ? rc : 1;
}

/*
 * Loads fence_ops (the rows produced on another thread), sorts the signals
 * and the waits on two threads while the indexes and views are created, then
 * loads deps from the merge (produced on another thread too).
 */
static int resolve(struct nf_timeline_builder *b, struct nf_clock_fitted *m, struct nf_error *err)
{
	struct finisher f = { .b = b, .m = m };
	int rc;

	f.anoms = nf_spill_create(b->spill_dir, sizeof(struct anom_rec), err);
	if (!f.anoms)
		return err && err->code ? err->code : NF_ENOMEM; /* the creator's error */
	rc = load_ops(&f, err);
	rc = rc ? rc : flush_anomalies(&f, err);
	/* the signals sort on a thread while the indexes and views are made */
	if (rc == 0 && (rc = nf_deps_sort_begin(b->deps, err)) == 0) {
		int rc2;

		if (!b->views_made)
			rc = nf_writer_views(b->db, "schemas/timeline-views.sql", err);
		rc2 = nf_deps_sort_end(b->deps, err); /* joins the thread whatever happened */
		rc = rc ? rc : rc2;
	}
	rc = rc ? rc : nf_bulk_run(b->bulk, "INSERT INTO deps(signal_id, wait_id, cpu_signal, stall_ns, reason) "
				   "SELECT c0, c1, c2, c3, c4 FROM nf_bulk", deps_row, &f, true,
				   "insert deps", err);
	rc = rc ? rc : flush_anomalies(&f, err);
	nf_spill_destroy(f.anoms);
	nf_deps_destroy(b->deps);
	b->deps = NULL;
	return rc;
}

/*
 * Every queue the operations or logs name gets a queues row, so that readers
 * can take the queues table as the list of queues (without scanning
 * fence_ops): one without a HWQUEUE_START (a damaged or partial session) has
 * only its handle and adapter.
 */
static int add_seen_queues(struct nf_timeline_builder *b, struct nf_error *err)
{
	sqlite3_stmt *s = NULL;
	int rc = 0;

	if (b->n_qs == 0)
		return 0;
	if (sqlite3_prepare_v2(b->db, "INSERT OR IGNORE INTO queues(queue, adapter) VALUES (?1, ?2)",
			       -1, &s, NULL) != SQLITE_OK)
		return nf_tb_sql_err(b, err, "prepare queues");
	for (size_t i = 0; i < b->n_qs && rc == 0; i++) {
		sqlite3_bind_int64(s, 1, b->qs[i].hwqueue);
		sqlite3_bind_int64(s, 2, b->qs[i].adapter);
		if (sqlite3_step(s) != SQLITE_DONE)
			rc = nf_tb_sql_err(b, err, "insert queues");
		sqlite3_reset(s);
	}
	sqlite3_finalize(s);
	return rc;
}

/* Finishes what still waits: operations without entries, unreleased legacy waits. */
static int settle_all(struct nf_timeline_builder *b, struct nf_error *err)
{
	int rc;

	for (size_t i = 0; i < b->n_qs; i++)
		for (int l = 0; l < 2; l++)
			if ((rc = nf_tb_settle_before(b, &b->qs[i].log[l], INT64_MAX, err)) != 0)
				return rc;
	for (size_t i = 0; i < b->n_legacy; i++)
		if ((rc = nf_tb_op_done(b, &b->legacy[i], err)) != 0)
			return rc;
	b->n_legacy = 0;
	return nf_tb_ring_flush(b, err);
}

static int cmp_cover(const void *pa, const void *pb)
{
	const struct log_cover *a = pa, *b = pb;

	return CMP(a->queue, b->queue);
}

/*
 * What the session holds of each queue's logs (the coverage rows): a log is
 * read by the OS from its queue's creation to its destruction (or the end of
 * the session); entries it overwrote before they were read are 'lost'
 * anomalies, not gaps of the coverage.
 */
static int write_coverage(struct nf_timeline_builder *b, struct nf_error *err)
{
	/* One row per queue and log with rows in fence_ops (counted by cover_row
	 * as they were loaded), by queue, waits before signals: what a GROUP BY
	 * over fence_ops gave, without reading the rows back. */
	static const char *const op[2] = { "wait", "signal" };
	sqlite3_stmt *s = NULL;
	int rc = 0;

	if (b->cover.n == 0)
		return 0;
	if (sqlite3_prepare_v2(b->db,
			       "INSERT INTO coverage(scope, id, log, from_ns, to_ns, events, detail) "
			       "SELECT 'log', ?1, ?2 || 's', coalesce(q.start_ns, ?3), coalesce(q.stop_ns, ?4), ?5, "
			       "  'the queue''s ' || ?2 || ' log, read from the queue''s creation' || "
			       "  CASE WHEN q.stop_ns IS NULL THEN ' to the end of the session' ELSE ' to its destruction' END "
			       "FROM (SELECT 1) LEFT JOIN queues q ON q.queue = ?1",
			       -1, &s, NULL) != SQLITE_OK)
		return nf_tb_sql_err(b, err, "coverage");
	/* (the map's indices are stale after: nothing is counted after the coverage is written) */
	qsort(b->cover.v, b->cover.n, sizeof(b->cover.v[0]), cmp_cover);
	sqlite3_bind_int64(s, 4, b->any_ts ? ns_of(b, b->max_ts) : 0);
	for (size_t i = 0; i < b->cover.n && rc == 0; i++) {
		const struct log_cover *c = &b->cover.v[i];

		for (int l = 0; l < 2 && rc == 0; l++) {
			if (!c->seen[l])
				continue;
			sqlite3_bind_int64(s, 1, c->queue);
			sqlite3_bind_text(s, 2, op[l], -1, SQLITE_STATIC);
			if (c->has_first[l])
				sqlite3_bind_int64(s, 3, c->first[l]);
			else
				sqlite3_bind_null(s, 3);
			sqlite3_bind_int64(s, 5, c->events[l]);
			rc = nf_writer_step(b->db, s, "build", "coverage", err);
		}
	}
	sqlite3_finalize(s);
	return rc;
}

/* ---- the early reader (contract/session.h, nf_timeline_ensure_early) ---- */

void nf_timeline_builder_set_early(struct nf_timeline_builder *b, struct nf_early_reader *r)
{
	b->early = r;
}

struct early_impl {
	struct nf_timeline_builder *b;
	struct nf_clock_fitted *m;
	int64_t anomalies;   /* the anomalies' largest rowid before the reader */
	int64_t n_ops;
	bool parallel;       /* m is detached: calls may run at once, each with a model of its own */
	pthread_mutex_t mu;  /* what follows, between calls at once */
	int in_flight;       /* calls running */
	int64_t merged;      /* rows of the queues whose counts are in b->cover */
	bool counted;        /* every queue's: the coverage rows are written */
};

/* What one pass counted of its queues' rows: their coverage, and their anomalies (a spill of anom_rec). */
struct early_count {
	struct cover_set cover;
	struct nf_spill *anoms;
};

static void early_count_free(struct early_count *c)
{
	nf_u64map_free(&c->cover.of);
	free(c->cover.v);
	nf_spill_destroy(c->anoms);
	memset(c, 0, sizeof(*c));
}

/* Forgets what the passes counted and wrote for the reader: the load does it again. */
static int early_forget(struct early_impl *e, struct nf_error *err)
{
	char sql[96];

	e->b->cover.n = 0;
	nf_u64map_free(&e->b->cover.of);
	snprintf(sql, sizeof(sql), "DELETE FROM anomalies WHERE rowid > %" PRId64 "; "
		 "DELETE FROM coverage WHERE scope = 'log'", e->anomalies);
	return nf_tb_exec_sql(e->b, sql, err, "after the early reader");
}

/*
 * One pass over the spill: the records of the queues [lo, hi], each as ops_row
 * makes its row (GPU times converted: only those of the pass's queues), to fn
 * when there is one, and counted into c when there is one.
 */
static int early_pass(struct early_impl *e, struct nf_clock_fitted *m, int64_t lo, int64_t hi,
		      int (*fn)(void *ctx, const struct nf_fence_op_row *op), void *ctx,
		      struct early_count *c, struct nf_error *err)
{
	struct nf_timeline_builder *b = e->b;
	struct nf_spill_reader *rd = nf_spill_reader_open(b->ops, err);
	struct op_rec o;
	char detail[200];
	int rc = rd ? 0 : (err && err->code ? err->code : NF_ENOMEM);

	while (rc == 0 && (rc = nf_spill_reader_get(rd, &o, err)) == 1) {
		struct nf_fence_op_row r;

		rc = 0;
		if (o.queue < lo || o.queue > hi)
			continue;
		if ((rc = op_times(m, &o, err)) != 0)
			break;
		if (c) {
			if ((rc = cover_row(&c->cover, &o, err)) != 0)
				break;
			if (ends_before_queued(b, &o, detail, sizeof(detail))) {
				struct anom_rec a = { .queue = o.queue, .first_ns = o.end, .last_ns = o.queued,
						      .log = o.log };

				snprintf(a.detail, sizeof(a.detail), "%s", detail);
				if (!c->anoms && !(c->anoms = nf_spill_create(b->spill_dir, sizeof(a), err)))
					rc = err && err->code ? err->code : NF_ENOMEM;
				if (rc || (rc = nf_spill_put(c->anoms, &a, err)) != 0)
					break;
			}
		}
		if (!fn)
			continue;
		r.id = o.id;
		r.queue = o.queue;
		r.is_wait = o.log == NF_LOG_WAITS;
		r.has_fence = (o.flags & OPF_FENCE) != 0;
		r.fence = o.fence;
		r.value = o.value;
		r.has_queued = (o.flags & OPF_QUEUED) != 0;
		r.queued_ns = o.queued;
		r.has_observed = (o.flags & OPF_OBS) != 0;
		r.observed_ns = o.observed;
		r.has_end = (o.flags & OPF_END) != 0;
		r.end_ns = o.end;
		r.has_thread = (o.flags & OPF_THREAD) != 0;
		r.thread = o.thread;
		r.status = status_name[o.status];
		if ((rc = fn(ctx, &r)) != 0)
			break;
	}
	nf_spill_reader_close(rd);
	return rc;
}

/*
 * Adds what a whole pass counted to b->cover, but the queues another pass
 * added first, and writes their anomalies (passes at once in the order they
 * end: rowids are not the load's order); once every row is counted, the
 * coverage rows. Called with e->mu held.
 */
static int early_merge(struct early_impl *e, struct early_count *c, struct nf_error *err)
{
	struct nf_timeline_builder *b = e->b;
	struct anom_rec a;
	int rc = 0;

	for (size_t i = 0; i < c->cover.n; i++) {
		struct log_cover *lc = &c->cover.v[i], *to;

		if (nf_u64map_find(&b->cover.of, lc->queue)) {
			lc->rows = -1; /* counted by another pass, which wrote its anomalies */
			continue;
		}
		if (!(to = cover_entry(&b->cover, lc->queue)))
			return nf_tb_oom(err);
		*to = *lc;
		e->merged += lc->rows;
	}
	if (c->anoms && nf_spill_count(c->anoms) > 0) {
		if ((rc = nf_spill_rewind(c->anoms, err)) != 0)
			return rc;
		while ((rc = nf_spill_get(c->anoms, &a, err)) == 1)
			if (c->cover.v[*nf_u64map_find(&c->cover.of, a.queue)].rows >= 0 &&
			    (rc = nf_tb_add_anomaly(b, nf_anomaly_name(NF_ANOMALY_CAUSALITY), a.queue, true,
						    log_name(a.log), &a.first_ns, &a.last_ns, 0, a.detail, err)) != 0)
				break;
		if (rc)
			return rc;
	}
	if (e->merged == e->n_ops) {
		if ((rc = write_coverage(b, err)) != 0)
			return rc;
		e->counted = true;
	}
	return 0;
}

/*
 * struct nf_early_timeline's each_op: the spill again, through a spill reader
 * of its own (and, when calls may run at once, a clock model of its own).
 * Until every queue's rows are counted, a whole pass counts its queues' rows
 * and adds them to what the load would write for the other tables: the
 * coverage rows, and the anomalies of operations that end before they were
 * queued (one pass over the spill fewer than writing them first). When the
 * last call running returns with rows of queues outside every pass's range
 * still uncounted, it counts them itself, so that once the reader's calls
 * return, those tables are whole.
 */
static int early_each_op(void *impl, int64_t lo, int64_t hi,
			 int (*fn)(void *ctx, const struct nf_fence_op_row *op), void *ctx,
			 struct nf_error *err)
{
	struct early_impl *e = impl;
	struct nf_clock_fitted *own = NULL, *m = e->m;
	struct early_count c;
	bool count, rest = false;
	int rc = 0;

	memset(&c, 0, sizeof(c));
	pthread_mutex_lock(&e->mu);
	count = !e->counted;
	e->in_flight++;
	pthread_mutex_unlock(&e->mu);
	if (e->parallel && !(m = own = nf_clock_fitted_share(e->m)))
		rc = nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
	if (rc == 0)
		rc = early_pass(e, m, lo, hi, fn, ctx, count ? &c : NULL, err);
	pthread_mutex_lock(&e->mu);
	e->in_flight--;
	if (rc == 0 && count && !e->counted)
		rc = early_merge(e, &c, err);
	rest = rc == 0 && !e->counted && e->in_flight == 0;
	pthread_mutex_unlock(&e->mu);
	early_count_free(&c);
	if (rest) {
		rc = early_pass(e, m, INT64_MIN, INT64_MAX, NULL, NULL, &c, err);
		pthread_mutex_lock(&e->mu);
		if (rc == 0 && !e->counted)
			rc = early_merge(e, &c, err);
		if (rc == 0 && !e->counted)
			rc = nf_error_set(err, NF_ESTATE, "timeline: %" PRId64 " of %" PRId64
					  " operations counted for the early reader", e->merged, e->n_ops);
		pthread_mutex_unlock(&e->mu);
		early_count_free(&c);
	}
	nf_clock_fitted_destroy(own);
	return rc;
}

/*
 * Why the tables of this build other than fence_ops and deps are not complete
 * before the load, or the reader not wanted (a static string), or NULL when
 * they are: no presents (their ready times come from fence_ops), no stream of
 * another importer (finished after the load), every operation spilled in id
 * order (each_op's order is then the table's), at least min_ops of them.
 */
static const char *early_unfit(const struct nf_timeline_builder *b)
{
	if (b->next_present)
		return "it has presents, whose ready times come from the operations' load";
	for (int i = 0; i < NF_STREAM_COUNT; i++)
		if (b->other[i])
			return "it holds another source's events, read after the operations' load";
	if (!ops_in_id_order(b))
		return "its operations were not all logged in id order";
	if ((int64_t)nf_spill_count(b->ops) < b->early->min_ops)
		return "it has too few operations to wait for";
	return NULL;
}

/* The largest rowid of table (0 when empty), into *max. 0 or NF_ESQL. */
static int max_rowid(struct nf_timeline_builder *b, const char *sql, int64_t *max, struct nf_error *err)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(b->db, sql, -1, &st, NULL) != SQLITE_OK)
		return nf_tb_sql_err(b, err, "max rowid");
	rc = sqlite3_step(st);
	*max = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : nf_tb_sql_err(b, err, "max rowid");
}

/*
 * Offers the timeline to the early reader, with what the load would add
 * besides fence_ops and deps: meta, the indexes and views (made once: none
 * is on fence_ops or deps), and from each_op's first pass the coverage rows
 * and the anomalies of operations that end before they were queued. The
 * build's connection has no journal (no ROLLBACK), so the rows written for the
 * reader are deleted after it: the load writes them again, in its order.
 */
static int offer_early(struct nf_timeline_builder *b, struct nf_clock_fitted *m, struct nf_error *err)
{
	struct early_impl impl = { .b = b, .m = m, .parallel = nf_clock_fitted_detached(m),
				   .n_ops = (int64_t)nf_spill_count(b->ops) };
	struct nf_early_timeline t = { b->db, early_each_op, &impl, (int64_t)nf_spill_count(b->ops),
				       impl.parallel };
	int rc, frc;

	if ((rc = max_rowid(b, "SELECT coalesce(max(rowid), 0) FROM anomalies", &impl.anomalies, err)) != 0 ||
	    (rc = nf_spill_seal(b->ops, err)) != 0)
		return rc;
	pthread_mutex_init(&impl.mu, NULL);
	rc = write_meta(b, err);
	rc = rc ? rc : nf_writer_views(b->db, "schemas/timeline-views.sql", err);
	b->views_made = rc == 0;
	rc = rc ? rc : b->early->ready(b->early->ctx, &t, err);
	frc = early_forget(&impl, err);
	pthread_mutex_destroy(&impl.mu);
	return rc ? rc : frc;
}

int nf_timeline_builder_finish(struct nf_timeline_builder *b, struct nf_error *err)
{
	struct nf_clock_fitted *m = NULL;
	int rc;

	if (b->finished)
		return nf_error_set(err, NF_ESTATE, "timeline: builder already finished");
	b->finished = true;
	rc = settle_all(b, err);
	rc = rc ? rc : add_seen_queues(b, err);
	rc = rc ? rc : nf_tb_write_queue_threads(b, err);
	rc = rc ? rc : nf_clock_fit(b->db, 0, err);
	if (rc)
		return rc;
	m = nf_clock_fitted_create(b->db, err);
	if (!m)
		return err && err->code ? err->code : NF_ENOMEM;
	rc = resolve_overruns(b, m, err);
	if (rc == 0 && b->early && b->early->ready && !(b->early->why_not = early_unfit(b)))
		rc = offer_early(b, m, err);
	rc = rc ? rc : resolve(b, m, err);
	nf_clock_fitted_destroy(m);
	rc = rc ? rc : write_coverage(b, err);
	/* only a wait no signal released gets its reason refined */
	if (rc == 0 && b->deps_unreleased > 0)
		rc = nf_writer_deps_reasons(b->db, "build", "not_traced", err);
	rc = rc ? rc : nf_tb_displays_finish(b, err);
	for (int i = 0; i < NF_STREAM_COUNT; i++)
		if (b->other[i])
			rc = rc ? rc : b->other[i]->finish(b->other_state[i], err);
	rc = rc ? rc : write_meta(b, err);
	if (rc)
		return rc;
	for (int i = 0; i < ST_COUNT; i++) {
		sqlite3_finalize(b->st[i]);
		b->st[i] = NULL;
	}
	if (nf_tb_exec_sql(b, "DROP TABLE temp.t_lost; DROP TABLE temp.t_cal; DROP TABLE temp.t_fit;",
		     err, "drop staging") ||
	    nf_writer_commit(b->db, "commit", err))
		return NF_ESQL;
	b->in_txn = false;
	return 0;
}
