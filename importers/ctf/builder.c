/*
 * The timeline builder: turns the parser's stream into the tables of
 * schemas/timeline.sql. Objects (adapters, queues, fences, handles, CPU waits
 * and signals, interrupts, monitored values, truth) are written as they come.
 * Queued GPU operations wait in a FIFO per queue and log until the log entry
 * at their position arrives (FIFO order across log epochs), or a lost span or
 * a later entry shows it never will; finished operations are spilled to a
 * file of fixed-size records in id order (their GPU times still raw, as the
 * clock fit needs every calibration pair). finish() fits the clocks and makes
 * one pass over the spill that writes the fence_ops rows (prepared statement,
 * one transaction) and sorts the signals and completed waits; one merge of
 * the two sorted streams ties every completed wait to the signal that released
 * it and writes its deps row. Memory holds per-queue,
 * per-fence and per-adapter state, the operations still waiting for their
 * entries and bounded sort buffers, never the whole session.
 *
 * This file: create/destroy and the streaming match; builder_resolve.c is
 * finish() (the final resolve pass); builder_int.h what they share.
 */
#include "builder_int.h"
#include "contract/errors.h"
#include "../importers_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>


static const char *const stmt_sql[ST_COUNT] = {
	[ST_ADAPTER] = "INSERT OR REPLACE INTO adapters(adapter, name, vidsch_caps, native_fence, "
		       "gpu_frequency) VALUES (?1, ?2, ?3, ?4, ?5)",
	[ST_QUEUE] = "INSERT OR REPLACE INTO queues(queue, adapter, node, engine, name, start_ns, "
		     "stop_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL)",
	[ST_QUEUE_STOP] = "UPDATE queues SET stop_ns = ?2 WHERE queue = ?1",
	[ST_FENCE] = "INSERT OR IGNORE INTO fences(fence, type, shared, cross_adapter, "
		     "initial_value, created_ns, destroyed_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL)",
	[ST_FENCE_DESTROY] = "UPDATE fences SET destroyed_ns = ?2 WHERE fence = ?1",
	[ST_HANDLE] = "INSERT OR REPLACE INTO fence_handles(handle, fence, adapter, process, native, "
		      "opened_ns, closed_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL)",
	[ST_HANDLE_CLOSE] = "UPDATE fence_handles SET closed_ns = ?2 WHERE handle = ?1",
	[ST_LOST] = "INSERT INTO temp.t_lost(adapter, queue, log, count, prev_gpu, next_gpu, detail) "
		    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
	[ST_CAL] = "INSERT INTO temp.t_cal(adapter, gpu, cpu_ns, freq, from_cmp) "
		   "VALUES (?1, ?2, ?3, ?4, ?5)",
	[ST_CPU_WAIT] = "INSERT OR REPLACE INTO cpu_waits(id, thread, adapter, fence, value, start_ns, "
			"end_ns, status) VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL, 'pending')",
	[ST_CPU_UNWAIT] = "UPDATE cpu_waits SET end_ns = ?2, status = ?3 WHERE id = ?1",
	[ST_CPU_SIGNAL] = "INSERT INTO cpu_signals(id, thread, adapter, fence, value, ts_ns) "
			  "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
	[ST_INTERRUPT] = "INSERT INTO interrupts(ts_ns, adapter, node, engine, queue, optimized, "
			 "fence_count, waiters_woken, needed) "
			 "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
	[ST_MONITORED] = "INSERT INTO monitored_values(ts_ns, adapter, fence, monitored_value, "
			 "current_value) VALUES (?1, ?2, ?3, ?4, ?5)",
	[ST_ANOMALY] = "INSERT INTO anomalies(kind, queue, log, first_ns, last_ns, lost_entries, "
		       "detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
	[ST_TRUTH] = "INSERT INTO truth_ops(queue, adapter, op, fence, value, queued_ns, observed_ns, "
		     "end_ns, log_seq, fate, epoch, ts_fault, handle) "
		     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
	[ST_DISPLAY] = "INSERT OR REPLACE INTO displays(display, adapter, name, crtc, refresh_ns, process) "
		       "VALUES (?1, ?2, ?3, NULL, ?4, ?5)",
	[ST_PRESENT] = "INSERT INTO presents(id, display, process, thread, swapchain, present_ns, "
		       "present_end_ns, queue, op, ready_ns, sync_interval, mode, source) "
		       "VALUES (?1, ?2, ?3, ?4, (SELECT 'display ' || name FROM displays WHERE display = ?2), "
		       "?6, NULL, ?7, NULL, NULL, ?8, 'flip', 'Present')",
	[ST_PRESENT_OP] = "UPDATE presents SET op = ?2 WHERE id = ?1",
	[ST_FLIP] = "INSERT INTO flips(id, display, present, queued_ns, ready_ns, done_ns, vblank_ns, "
		    "vblank_seq, status, detail) VALUES (?1, ?2, ?1, ?3, NULL, NULL, NULL, NULL, 'pending', "
		    "'still in the flip queue when the session ended')",
	[ST_FLIP_DONE] = "UPDATE flips SET done_ns = ?2, vblank_ns = ?2, vblank_seq = ?3, status = ?4, "
			 "detail = ?5 WHERE id = ?1",
	[ST_VBLANK] = "INSERT INTO vblanks(ts_ns, crtc, seq, display) VALUES (?1, NULL, ?2, ?3)",
};

/* Small staging tables: overruns (their times need the clock fit) and the clock. */
static const char staging_sql[] =
	"CREATE TEMP TABLE t_lost(adapter INTEGER, queue INTEGER, log INTEGER, count INTEGER, "
	"  prev_gpu INTEGER, next_gpu INTEGER, detail TEXT);"
	"CREATE TEMP TABLE t_cal(adapter INTEGER, gpu INTEGER, cpu_ns REAL, freq INTEGER, "
	"  from_cmp INTEGER);"
	"CREATE TEMP TABLE t_fit(adapter INTEGER, gpu INTEGER, ns REAL, freq INTEGER);";

int64_t nf_timeline_cpu_ns(uint64_t ticks, uint64_t start_ticks, uint64_t cpu_frequency)
{
	if (cpu_frequency == 0)
		return 0;
	__int128 d = (__int128)ticks - (__int128)start_ticks;

	/* A nanosecond clock (Linux kernel sessions): no 128-bit division per event. */
	if (cpu_frequency == 1000000000)
		return (int64_t)d;
	return (int64_t)(d * 1000000000 / (__int128)cpu_frequency);
}

static long double cpu_ns_exact(const struct nf_timeline_builder *b, uint64_t ticks)
{
	if (b->cpu_frequency == 0)
		return 0;
	long double d = (long double)ticks - (long double)b->start_ticks;

	return d * 1e9L / (long double)b->cpu_frequency;
}


/* A CPU time the timeline can hold: within +-2^62 ns of the session start
 * (beyond, sums and differences of times could overflow). */
static bool cpu_time_ok(const struct nf_timeline_builder *b, uint64_t ticks)
{
	/* A whole number of ns a tick and a time well inside the bound: no long double work per event. */
	if (b->ns_per_tick) {
		__int128 d = (__int128)ticks - (__int128)b->start_ticks;

		if (d > -(__int128)b->ticks_inside && d < (__int128)b->ticks_inside)
			return true;
	}
	long double ns = cpu_ns_exact(b, ticks);

	return ns >= -(long double)NF_GPU_TS_MAX && ns <= (long double)NF_GPU_TS_MAX;
}

int nf_tb_sql_err(struct nf_timeline_builder *b, struct nf_error *err, const char *what)
{
	return nf_writer_sql_error(b->db, "build", what, err);
}

/* Steps a prepared insert/update to completion and resets it. */
static int step_done(struct nf_timeline_builder *b, enum stmt_id id, struct nf_error *err)
{
	sqlite3_stmt *s = b->st[id];
	int src = sqlite3_step(s);

	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	if (src != SQLITE_DONE)
		return nf_tb_sql_err(b, err, stmt_sql[id]);
	return 0;
}

static char *dup_str(const char *s)
{
	return strdup(s ? s : "");
}

int nf_tb_exec_sql(struct nf_timeline_builder *b, const char *sql, struct nf_error *err,
		    const char *what)
{
	return nf_writer_exec(b->db, what, sql, err);
}


struct nf_timeline_builder *nf_timeline_builder_create(sqlite3 *db,
							const struct nf_session_info *info,
							struct nf_error *err)
{
	struct nf_timeline_builder *b = calloc(1, sizeof(*b));
	const char *file;

	if (!b) {
		nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
		return NULL;
	}
	b->db = db;
	b->tool_version = dup_str(info->tool_version);
	b->source = dup_str(info->source);
	b->mode = dup_str(info->mode);
	b->host = dup_str(info->host);
	b->ring = malloc(RING_CAP * sizeof(*b->ring));
	b->ready = calloc(RING_CAP, 1);
	/* Temporary files go next to the database (the session), else to TMPDIR. */
	file = sqlite3_db_filename(db, "main");
	b->spill_dir = dup_str(file);
	if (!b->tool_version || !b->source || !b->mode || !b->host || !b->ring || !b->ready ||
	    !b->spill_dir) {
		nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
		goto out_free;
	}
	char *slash = strrchr(b->spill_dir, '/');

	if (slash)
		*(slash == b->spill_dir ? slash + 1 : slash) = '\0';
	else
		b->spill_dir[0] = '\0';
	b->ring_base = 1;
	b->seed = info->seed;
	b->cpu_frequency = info->cpu_frequency;
	b->start_ticks = info->start_ticks;
	b->schema_version = info->schema_version;
	b->ground_truth = info->ground_truth;
	b->slack_ns = NF_TIMELINE_CAUSALITY_SLACK_NS;
	if (b->cpu_frequency == 0) {
		nf_error_set(err, NF_EFORMAT, "timeline: session has no CPU clock frequency");
		goto out_free;
	}
	if (b->cpu_frequency <= 1000000000 && 1000000000 % b->cpu_frequency == 0) {
		b->ns_per_tick = (int64_t)(1000000000 / b->cpu_frequency);
		b->ticks_inside = NF_GPU_TS_MAX / 2 / b->ns_per_tick;
	}
	b->ops = nf_spill_create(b->spill_dir, sizeof(struct op_rec), err);
	if (!b->ops)
		goto out_free;
	b->deps = nf_deps_create(NF_DEPS_LOGGED, b->spill_dir, b->slack_ns, err);
	if (!b->deps)
		goto out_free;
	b->bulk = nf_bulk_register(db, err);
	if (!b->bulk)
		goto out_free;
	if (nf_writer_begin(db, "schemas/timeline.sql", err))
		goto out_free;
	b->in_txn = true;
	if (nf_tb_exec_sql(b, staging_sql, err, "staging tables"))
		goto out_free;
	for (int i = 0; i < ST_COUNT; i++) {
		if (sqlite3_prepare_v2(db, stmt_sql[i], -1, &b->st[i], NULL) != SQLITE_OK) {
			nf_tb_sql_err(b, err, stmt_sql[i]);
			goto out_free;
		}
	}
	return b;
out_free:
	nf_timeline_builder_destroy(b);
	return NULL;
}

void nf_timeline_builder_destroy(struct nf_timeline_builder *b)
{
	if (!b)
		return;
	for (int i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(b->st[i]);
	if (b->in_txn)
		sqlite3_exec(b->db, "ROLLBACK", NULL, NULL, NULL);
	for (int i = 0; i < NF_STREAM_COUNT; i++)
		if (b->other[i])
			b->other[i]->destroy(b->other_state[i]);
	nf_u64map_free(&b->handles);
	nf_u64map_free(&b->fences);
	nf_u64map_free(&b->queues);
	nf_u64map_free(&b->cover.of);
	free(b->cover.v);
	nf_u64map_free(&b->presents);
	for (size_t i = 0; i < b->n_qs; i++) {
		for (int l = 0; l < 2; l++) {
			free(b->qs[i].log[l].fifo);
			free(b->qs[i].log[l].spans);
		}
		nf_u64map_free(&b->qs[i].thr_fence);
		nf_u64map_free(&b->qs[i].thr_nofence);
	}
	free(b->qs);
	free(b->legacy);
	free(b->ring);
	free(b->ready);
	nf_spill_destroy(b->ops);
	nf_deps_destroy(b->deps);
	free(b->spill_dir);
	free(b->tool_version);
	free(b->source);
	free(b->mode);
	free(b->host);
	free(b);
}

static struct log_state *log_for(struct nf_timeline_builder *b, uint32_t adapter,
				 uint32_t hwqueue, uint32_t log_type)
{
	uint64_t key = (uint64_t)adapter << 32 | hwqueue;
	uint64_t *idx = nf_u64map_find(&b->queues, key);

	if (!idx) {
		if (b->n_qs == b->cap_qs) {
			size_t cap = b->cap_qs ? b->cap_qs * 2 : 16;
			struct queue_state *q = realloc(b->qs, cap * sizeof(*q));

			if (!q)
				return NULL;
			b->qs = q;
			b->cap_qs = cap;
		}
		memset(&b->qs[b->n_qs], 0, sizeof(b->qs[0]));
		b->qs[b->n_qs].adapter = adapter;
		b->qs[b->n_qs].hwqueue = hwqueue;
		if (nf_u64map_put(&b->queues, key, b->n_qs))
			return NULL;
		idx = nf_u64map_find(&b->queues, key);
		b->n_qs++;
	}
	return &b->qs[*idx].log[log_type == NF_LOG_SIGNALS ? 1 : 0];
}

/*
 * A log recreated at a new location restarts its written sequence at 0, but
 * the GPU's operations go on in order: the new epoch's seq 0 follows what the
 * old epoch had written.
 */
static void log_advance(struct log_state *ls, uint32_t epoch)
{
	if (epoch > ls->epoch) {
		ls->base += ls->written;
		ls->written = 0;
		ls->epoch = epoch;
	}
}

static void log_saw(struct log_state *ls, uint64_t written)
{
	if (written > ls->written)
		ls->written = written;
}

static int64_t global_of(const struct nf_timeline_builder *b, uint32_t handle, bool *known)
{
	uint64_t *g = nf_u64map_find(&b->handles, handle);

	*known = g != NULL;
	return g ? (int64_t)*g : 0;
}

static void bind_fence(sqlite3_stmt *s, int col, const struct nf_timeline_builder *b,
		       uint32_t handle)
{
	bool known;
	int64_t g = global_of(b, handle, &known);

	if (known)
		sqlite3_bind_int64(s, col, g);
	else
		sqlite3_bind_null(s, col);
}

static void bind_text(sqlite3_stmt *s, int col, const char *t)
{
	if (t)
		sqlite3_bind_text(s, col, t, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(s, col);
}


int nf_tb_add_anomaly(struct nf_timeline_builder *b, const char *kind, int64_t queue,
		       bool has_queue, const char *log, const int64_t *first_ns,
		       const int64_t *last_ns, int64_t lost, const char *detail,
		       struct nf_error *err)
{
	sqlite3_stmt *s = b->st[ST_ANOMALY];

	sqlite3_bind_text(s, 1, kind, -1, SQLITE_STATIC);
	if (has_queue)
		sqlite3_bind_int64(s, 2, queue);
	bind_text(s, 3, log);
	if (first_ns)
		sqlite3_bind_int64(s, 4, *first_ns);
	if (last_ns)
		sqlite3_bind_int64(s, 5, *last_ns);
	sqlite3_bind_int64(s, 6, lost);
	bind_text(s, 7, detail);
	return step_done(b, ST_ANOMALY, err);
}

/* ---- operations: matching while streaming ---- */

int nf_tb_oom(struct nf_error *err)
{
	return nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
}

/* Hands a finished operation to the spill, in id order through the ring. */
int nf_tb_op_done(struct nf_timeline_builder *b, const struct op_rec *o, struct nf_error *err)
{
	int rc;

	if (o->id < b->ring_base) {
		b->ops_late = true;
		return nf_spill_put(b->ops, o, err); /* late: its place was passed over */
	}
	/* Full ring: pass over what still waits, so that o fits. */
	while (o->id >= b->ring_base + (int64_t)RING_CAP) {
		size_t i = (size_t)b->ring_base % RING_CAP;

		if (b->ready[i]) {
			b->ready[i] = 0;
			if ((rc = nf_spill_put(b->ops, &b->ring[i], err)) != 0)
				return rc;
		}
		b->ring_base++;
	}
	size_t i = (size_t)o->id % RING_CAP;

	if (o->id == b->ring_base) {
		/* The next in id order (the usual case): spilled at once, not copied through the ring. */
		if ((rc = nf_spill_put(b->ops, o, err)) != 0)
			return rc;
		b->ring_base++;
	} else {
		b->ring[i] = *o;
		b->ready[i] = 1;
	}
	for (i = (size_t)b->ring_base % RING_CAP; b->ready[i]; i = (size_t)b->ring_base % RING_CAP) {
		b->ready[i] = 0;
		if ((rc = nf_spill_put(b->ops, &b->ring[i], err)) != 0)
			return rc;
		b->ring_base++;
	}
	return 0;
}

/* Spills what is left in the ring, in id order. */
int nf_tb_ring_flush(struct nf_timeline_builder *b, struct nf_error *err)
{
	for (; b->ring_base <= b->next_op_id; b->ring_base++) {
		size_t i = (size_t)b->ring_base % RING_CAP;

		if (b->ready[i]) {
			int rc;

			b->ready[i] = 0;
			if ((rc = nf_spill_put(b->ops, &b->ring[i], err)) != 0)
				return rc;
		}
	}
	return 0;
}

static void op_fence(const struct nf_timeline_builder *b, struct op_rec *o)
{
	bool known;
	int64_t g = global_of(b, o->handle, &known);

	if (known) {
		o->fence = (uint32_t)g;
		o->flags |= OPF_FENCE;
	}
}

static int fifo_push(struct log_state *ls, const struct op_rec *o)
{
	if (ls->f_n == ls->f_cap) {
		size_t cap = ls->f_cap ? ls->f_cap * 2 : 64;
		struct op_rec *a = malloc(cap * sizeof(*a));

		if (!a)
			return NF_ENOMEM;
		for (size_t i = 0; i < ls->f_n; i++)
			a[i] = ls->fifo[(ls->f_head + i) % ls->f_cap];
		free(ls->fifo);
		ls->fifo = a;
		ls->f_cap = cap;
		ls->f_head = 0;
	}
	ls->fifo[(ls->f_head + ls->f_n) % ls->f_cap] = *o;
	ls->f_n++;
	return 0;
}

static struct op_rec *fifo_front(struct log_state *ls)
{
	return ls->f_n ? &ls->fifo[ls->f_head] : NULL;
}

static void fifo_pop(struct log_state *ls)
{
	ls->f_head = (ls->f_head + 1) % ls->f_cap;
	ls->f_n--;
}

/* An operation whose entry never came: lost inside a lost span, else unmatched. */
static void classify_missing(struct log_state *ls, struct op_rec *o)
{
	size_t drop = 0;

	/* Operations leave in position order: spans wholly before o are done. */
	while (drop < ls->s_n && ls->spans[drop].first + ls->spans[drop].count <= o->ord)
		drop++;
	if (drop) {
		memmove(ls->spans, ls->spans + drop, (ls->s_n - drop) * sizeof(*ls->spans));
		ls->s_n -= drop;
	}
	o->status = OS_UNMATCHED;
	if (ls->s_n && ls->spans[0].first <= o->ord) {
		o->status = OS_LOST;
		o->flags |= OPF_SEQ;
		o->seq = ls->spans[0].first_seq + (o->ord - ls->spans[0].first);
		o->epoch = ls->spans[0].epoch;
	}
}

/* Finishes the waiting operations of a log placed before position `before`. */
int nf_tb_settle_before(struct nf_timeline_builder *b, struct log_state *ls, int64_t before,
			 struct nf_error *err)
{
	struct op_rec *f;

	while ((f = fifo_front(ls)) != NULL && f->ord < before) {
		struct op_rec o = *f;
		int rc;

		fifo_pop(ls);
		b->pending--;
		classify_missing(ls, &o);
		if ((rc = nf_tb_op_done(b, &o, err)) != 0)
			return rc;
	}
	return 0;
}

/* Takes the entry's times and status (GPU ticks, converted at the end). */
static void apply_entry(struct op_rec *o, const struct nf_decoded_entry *e)
{
	const struct nf_log_entry *x = &e->entry;
	int ts = e->ts_class == NF_FIND_ZERO_TS || x->fence_end_gpu_timestamp == 0 ? TS_ZERO
		 : e->ts_class == NF_FIND_REPEATED_TS ? TS_REPEATED : TS_OK;

	o->flags |= OPF_SEQ | OPF_GPU;
	o->seq = (int64_t)e->seq;
	o->epoch = e->epoch;
	if (ts == TS_ZERO) {
		o->status = OS_ZERO;
		return;
	}
	if (ts == TS_REPEATED) {
		/* The GPU repeated the previous entry's end: this end is unknown. */
		o->status = OS_REPEATED;
	} else {
		o->status = OS_COMPLETE;
		/* Beyond NF_GPU_TS_MAX (an out_of_range finding): no time, NULL. */
		if (x->fence_end_gpu_timestamp <= NF_GPU_TS_MAX) {
			o->end = (int64_t)x->fence_end_gpu_timestamp;
			o->flags |= OPF_END;
		}
	}
	if (o->log == NF_LOG_WAITS && x->fence_observed_gpu_timestamp != 0 &&
	    x->fence_observed_gpu_timestamp <= NF_GPU_TS_MAX) {
		o->observed = (int64_t)x->fence_observed_gpu_timestamp;
		o->flags |= OPF_OBS;
	}
}

/* The queue a log belongs to (log[] is the queue state's first member). */
static struct queue_state *queue_of(struct log_state *ls, uint32_t log_type)
{
	return (struct queue_state *)(void *)(ls - (log_type == NF_LOG_SIGNALS ? 1 : 0));
}

/* Adds the run being counted to its map. */
static int flush_thread_run(struct queue_state *q)
{
	struct nf_u64map *m = q->run_known ? &q->thr_fence : &q->thr_nofence;
	uint64_t *v;

	if (!q->run_n)
		return 0;
	v = nf_u64map_find(m, q->run_key);
	if (v)
		*v += q->run_n;
	else if (nf_u64map_put(m, q->run_key, q->run_n))
		return NF_ENOMEM;
	q->run_n = 0;
	return 0;
}

/* One more operation queued on q by o's thread, on o's fence. */
static int count_thread(struct queue_state *q, const struct op_rec *o)
{
	bool known = (o->flags & OPF_FENCE) != 0;
	uint64_t key = (uint64_t)o->thread << 32 | (known ? o->fence : 0);

	if (q->run_n && (q->run_key != key || q->run_known != known) && flush_thread_run(q))
		return NF_ENOMEM;
	q->run_key = key;
	q->run_known = known;
	q->run_n++;
	return 0;
}

/*
 * queue_threads: for each queue, the threads that queued work on it, per fence,
 * with the number of operations (the viewer's CPU thread rows come from it).
 */
int nf_tb_write_queue_threads(struct nf_timeline_builder *b, struct nf_error *err)
{
	sqlite3_stmt *s = NULL;
	int rc = 0;

	if (b->n_qs == 0)
		return 0;
	if (sqlite3_prepare_v2(b->db, "INSERT INTO queue_threads(queue, fence, thread, ops) "
				      "VALUES (?1, ?2, ?3, ?4)", -1, &s, NULL) != SQLITE_OK)
		return nf_tb_sql_err(b, err, "prepare queue_threads");
	for (size_t i = 0; i < b->n_qs && rc == 0; i++) {
		struct queue_state *q = &b->qs[i];

		if (flush_thread_run(q)) {
			rc = nf_tb_oom(err);
			break;
		}
		for (int known = 1; known >= 0 && rc == 0; known--) {
			const struct nf_u64map *m = known ? &q->thr_fence : &q->thr_nofence;

			for (size_t k = 0; k < m->cap && rc == 0; k++) {
				if (!m->used[k])
					continue;
				sqlite3_bind_int64(s, 1, q->hwqueue);
				if (known)
					sqlite3_bind_int64(s, 2, (int64_t)(m->keys[k] & 0xffffffffu));
				else
					sqlite3_bind_null(s, 2);
				sqlite3_bind_int64(s, 3, (int64_t)(m->keys[k] >> 32));
				sqlite3_bind_int64(s, 4, (int64_t)m->vals[k]);
				if (sqlite3_step(s) != SQLITE_DONE)
					rc = nf_tb_sql_err(b, err, "insert queue_threads");
				sqlite3_reset(s);
			}
		}
	}
	sqlite3_finalize(s);
	return rc;
}

static int on_queued(struct nf_timeline_builder *b, const struct nf_event *ev, uint32_t log_type,
		     struct nf_error *err)
{
	/* FENCE_WAIT_QUEUED and FENCE_SIGNAL_QUEUED share their field layout. */
	uint32_t adapter = (uint32_t)ev->f[NFF_FENCE_WAIT_QUEUED_adapter];
	uint32_t hwqueue = (uint32_t)ev->f[NFF_FENCE_WAIT_QUEUED_hwqueue];
	struct log_state *ls = log_for(b, adapter, hwqueue, log_type);
	struct op_rec o = { 0 };

	if (!ls)
		return nf_tb_oom(err);
	o.id = ++b->next_op_id;
	o.ord = (int64_t)ls->next_op++;
	o.adapter = adapter;
	o.queue = hwqueue;
	o.log = (uint8_t)log_type;
	o.handle = (uint32_t)ev->f[NFF_FENCE_WAIT_QUEUED_fence];
	o.value = (int64_t)ev->f[NFF_FENCE_WAIT_QUEUED_value];
	o.queued = ns_of(b, ev->ts);
	o.thread = (uint32_t)ev->f[NFF_FENCE_WAIT_QUEUED_thread];
	o.flags = OPF_QUEUED | OPF_THREAD;
	op_fence(b, &o);
	if (count_thread(queue_of(ls, log_type), &o))
		return nf_tb_oom(err);
	if (b->pending >= MAX_PENDING) {
		/* Bounded memory: the oldest waiting operation of this log gives up. */
		struct op_rec *f = fifo_front(ls);
		int rc;

		if (f && (rc = nf_tb_settle_before(b, ls, f->ord + 1, err)) != 0)
			return rc;
	}
	if (fifo_push(ls, &o))
		return nf_tb_oom(err);
	b->pending++;
	if (b->present_armed && log_type == NF_LOG_SIGNALS)
		return nf_tb_present_op(b, hwqueue, o.handle, o.value, o.id, err);
	return 0;
}

static int on_legacy_wait(struct nf_timeline_builder *b, const struct nf_event *ev,
			  struct nf_error *err)
{
	uint32_t adapter = (uint32_t)ev->f[NFF_GPU_WAIT_LEGACY_adapter];
	uint32_t hwqueue = (uint32_t)ev->f[NFF_GPU_WAIT_LEGACY_hwqueue];
	uint32_t handle = (uint32_t)ev->f[NFF_GPU_WAIT_LEGACY_fence];
	int64_t value = (int64_t)ev->f[NFF_GPU_WAIT_LEGACY_value];
	int64_t now = ns_of(b, ev->ts);
	struct op_rec o = { 0 };

	if (ev->f[NFF_GPU_WAIT_LEGACY_released]) {
		for (size_t i = 0; i < b->n_legacy; i++) {
			struct op_rec *w = &b->legacy[i];

			if (w->adapter != adapter || w->queue != hwqueue || w->handle != handle ||
			    w->value != value)
				continue;
			o = *w;
			o.end = now;
			o.flags |= OPF_END;
			memmove(w, w + 1, (b->n_legacy - i - 1) * sizeof(*w));
			b->n_legacy--;
			return nf_tb_op_done(b, &o, err);
		}
	}
	if (!log_for(b, adapter, hwqueue, NF_LOG_WAITS)) /* its queue gets a queues row */
		return nf_tb_oom(err);
	o.id = ++b->next_op_id;
	o.adapter = adapter;
	o.queue = hwqueue;
	o.log = NF_LOG_WAITS;
	o.handle = handle;
	o.value = value;
	o.status = OS_LEGACY;
	op_fence(b, &o);
	if (ev->f[NFF_GPU_WAIT_LEGACY_released]) {
		/* Released without a queued record (it began before the session). */
		o.end = now;
		o.flags |= OPF_END;
		return nf_tb_op_done(b, &o, err);
	}
	o.queued = o.observed = now;
	o.flags |= OPF_QUEUED | OPF_OBS;
	if (b->n_legacy == b->cap_legacy) {
		size_t cap = b->cap_legacy ? b->cap_legacy * 2 : 16;
		struct op_rec *n = realloc(b->legacy, cap * sizeof(*n));

		if (!n)
			return nf_tb_oom(err);
		b->legacy = n;
		b->cap_legacy = cap;
	}
	b->legacy[b->n_legacy++] = o;
	return 0;
}

static int on_legacy_signal(struct nf_timeline_builder *b, const struct nf_event *ev,
			    struct nf_error *err)
{
	struct op_rec o = { 0 };

	o.id = ++b->next_op_id;
	o.adapter = (uint32_t)ev->f[NFF_GPU_SIGNAL_LEGACY_adapter];
	o.queue = (uint32_t)ev->f[NFF_GPU_SIGNAL_LEGACY_hwqueue];
	if (!log_for(b, o.adapter, o.queue, NF_LOG_SIGNALS)) /* its queue gets a queues row */
		return nf_tb_oom(err);
	o.log = NF_LOG_SIGNALS;
	o.handle = (uint32_t)ev->f[NFF_GPU_SIGNAL_LEGACY_fence];
	o.value = (int64_t)ev->f[NFF_GPU_SIGNAL_LEGACY_value];
	o.status = OS_LEGACY;
	o.queued = o.end = ns_of(b, ev->ts);
	o.flags = OPF_QUEUED | OPF_END;
	op_fence(b, &o);
	return nf_tb_op_done(b, &o, err);
}

static int on_fence_start(struct nf_timeline_builder *b, const struct nf_event *ev,
			  struct nf_error *err)
{
	uint32_t flags = (uint32_t)ev->f[NFF_FENCE_START_flags];
	uint32_t global = (uint32_t)ev->f[NFF_FENCE_START_global_fence];
	uint32_t handle = (uint32_t)ev->f[NFF_FENCE_START_fence];
	int64_t now = ns_of(b, ev->ts);
	uint64_t *known = nf_u64map_find(&b->fences, global);
	uint64_t fflags = (flags & 2u) ? FENCE_CROSS_ADAPTER : 0;
	sqlite3_stmt *s = b->st[ST_FENCE];
	int rc;

	if (known)
		fflags |= *known;
	/* The first creation's initial value holds, as in the fences table. */
	if (!known &&
	    (rc = nf_deps_initial(b->deps, global, (int64_t)ev->f[NFF_FENCE_START_initial_value], err)))
		return rc;
	if (nf_u64map_put(&b->fences, global, fflags) || nf_u64map_put(&b->handles, handle, global))
		return nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
	sqlite3_bind_int64(s, 1, global);
	sqlite3_bind_int64(s, 2, (int64_t)ev->f[NFF_FENCE_START_type]);
	sqlite3_bind_int(s, 3, (flags & 1u) != 0);
	sqlite3_bind_int(s, 4, (flags & 2u) != 0);
	sqlite3_bind_int64(s, 5, (int64_t)ev->f[NFF_FENCE_START_initial_value]);
	sqlite3_bind_int64(s, 6, now);
	rc = step_done(b, ST_FENCE, err);
	if (rc)
		return rc;
	s = b->st[ST_HANDLE];
	sqlite3_bind_int64(s, 1, handle);
	sqlite3_bind_int64(s, 2, global);
	sqlite3_bind_int64(s, 3, (int64_t)ev->f[NFF_FENCE_START_adapter]);
	sqlite3_bind_int64(s, 4, (int64_t)ev->f[NFF_FENCE_START_process]);
	sqlite3_bind_int(s, 5, (flags & 4u) != 0);
	sqlite3_bind_int64(s, 6, now);
	return step_done(b, ST_HANDLE, err);
}

static int on_interrupt(struct nf_timeline_builder *b, const struct nf_event *ev,
			struct nf_error *err)
{
	sqlite3_stmt *s = b->st[ST_INTERRUPT];
	uint32_t hwqueue = (uint32_t)ev->f[NFF_FENCE_INTERRUPT_hwqueue];
	uint32_t woken = (uint32_t)ev->f[NFF_FENCE_INTERRUPT_waiters_woken];
	uint64_t count = ev->f[NFF_FENCE_INTERRUPT_signaled_count];
	bool optimized = ev->f[NFF_FENCE_INTERRUPT_optimized] != 0;
	bool needed = woken > 0;

	for (uint64_t i = 0; !needed && ev->u32s && i < count; i++) {
		uint64_t *fl = nf_u64map_find(&b->fences, ev->u32s[i]);

		needed = fl && (*fl & FENCE_CROSS_ADAPTER);
	}
	sqlite3_bind_int64(s, 1, ns_of(b, ev->ts));
	sqlite3_bind_int64(s, 2, (int64_t)ev->f[NFF_FENCE_INTERRUPT_adapter]);
	sqlite3_bind_int64(s, 3, (int64_t)ev->f[NFF_FENCE_INTERRUPT_node]);
	sqlite3_bind_int64(s, 4, (int64_t)ev->f[NFF_FENCE_INTERRUPT_engine]);
	if (optimized && hwqueue != UINT32_MAX)
		sqlite3_bind_int64(s, 5, hwqueue);
	sqlite3_bind_int(s, 6, optimized);
	sqlite3_bind_int64(s, 7, (int64_t)count);
	sqlite3_bind_int64(s, 8, woken);
	sqlite3_bind_int(s, 9, needed);
	return step_done(b, ST_INTERRUPT, err);
}

static int on_log_read(struct nf_timeline_builder *b, const struct nf_event *ev,
		       struct nf_error *err)
{
	uint64_t header = ev->f[NFF_LOG_READ_header];
	uint64_t capacity = ev->f[NFF_LOG_READ_capacity];
	uint64_t index = header & 0xffffffffu, wrap = header >> 32;
	struct log_state *ls = log_for(b, (uint32_t)ev->f[NFF_LOG_READ_adapter],
				       (uint32_t)ev->f[NFF_LOG_READ_hwqueue],
				       (uint32_t)ev->f[NFF_LOG_READ_log_type]);

	if (!ls)
		return nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
	log_advance(ls, (uint32_t)ev->f[NFF_LOG_READ_epoch]);
	/* Only a sane header says how much the epoch has written. */
	if (capacity > 0 && capacity <= (1u << 24) && index < capacity)
		log_saw(ls, wrap * capacity + index);
	return 0;
}

static int on_truth(struct nf_timeline_builder *b, const struct nf_event *ev,
		    struct nf_error *err)
{
	sqlite3_stmt *s = b->st[ST_TRUTH];
	uint32_t handle = (uint32_t)ev->f[NFF_TRUTH_OP_fence];

	sqlite3_bind_int64(s, 1, (int64_t)ev->f[NFF_TRUTH_OP_hwqueue]);
	sqlite3_bind_int64(s, 2, (int64_t)ev->f[NFF_TRUTH_OP_adapter]);
	sqlite3_bind_text(s, 3, ev->f[NFF_TRUTH_OP_op] ? "wait" : "signal", -1, SQLITE_STATIC);
	bind_fence(s, 4, b, handle);
	sqlite3_bind_int64(s, 5, (int64_t)ev->f[NFF_TRUTH_OP_value]);
	sqlite3_bind_int64(s, 6, (int64_t)ev->f[NFF_TRUTH_OP_queued_ns]);
	sqlite3_bind_int64(s, 7, (int64_t)ev->f[NFF_TRUTH_OP_observed_ns]);
	sqlite3_bind_int64(s, 8, (int64_t)ev->f[NFF_TRUTH_OP_end_ns]);
	sqlite3_bind_int64(s, 9, (int64_t)ev->f[NFF_TRUTH_OP_seq]);
	sqlite3_bind_text(s, 10, ev->f[NFF_TRUTH_OP_fate] ? "lost" : "read", -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 11, (int64_t)ev->f[NFF_TRUTH_OP_epoch]);
	sqlite3_bind_int64(s, 12, (int64_t)ev->f[NFF_TRUTH_OP_ts_fault]);
	sqlite3_bind_int64(s, 13, handle);
	return step_done(b, ST_TRUTH, err);
}

int nf_timeline_builder_feed_event(struct nf_timeline_builder *b, const struct nf_event *ev,
				   struct nf_error *err)
{
	const uint64_t *f = ev->f;
	int64_t now = ns_of(b, ev->ts);
	sqlite3_stmt *s;

	if (b->finished)
		return nf_error_set(err, NF_ESTATE, "timeline: builder already finished");
	if (!cpu_time_ok(b, ev->ts)) {
		/* An event the CPU clock cannot place (its tick count, start and
		 * frequency give a time beyond 2^62 ns): a finding, not a row with
		 * an impossible time. */
		char detail[200];
		const struct nf_event_desc *d = nf_event_desc(ev->id);

		snprintf(detail, sizeof(detail),
			 "%s at CPU tick %" PRIu64 " is beyond 2^62 ns from the session start: left out",
			 d ? d->name : "an event", ev->ts);
		return nf_tb_add_anomaly(b, nf_finding_anomaly_name(NF_FIND_OUT_OF_RANGE), 0, false, NULL,
					 NULL, NULL, 0, detail, err);
	}
	if (ev->id != NF_EV_TRUTH_OP && ev->id != NF_EV_TRUTH_LOG &&
	    (!b->any_ts || ev->ts > b->max_ts)) {
		b->max_ts = ev->ts;
		b->any_ts = true;
	}
	if (ev->id < NF_EV_COUNT && nf_event_desc(ev->id)->stream != NF_STREAM_EVENTS &&
	    nf_event_desc(ev->id)->stream != NF_STREAM_TRUTH) {
		enum nf_stream_id stream = nf_event_desc(ev->id)->stream;

		if (!b->other[stream] && !(b->other[stream] = nf_importers_stream(stream)))
			return 0; /* no importer reads that stream: its events stay in the trace only */
		return b->other[stream]->event(&b->other_state[stream], b->db, b->bulk, now, ev, err);
	}
	switch (ev->id) {
	case NF_EV_ADAPTER_START: {
		uint32_t caps = (uint32_t)f[NFF_ADAPTER_START_vidsch_caps];

		s = b->st[ST_ADAPTER];
		sqlite3_bind_int64(s, 1, (int64_t)f[NFF_ADAPTER_START_adapter]);
		bind_text(s, 2, ev->str);
		sqlite3_bind_int64(s, 3, caps);
		sqlite3_bind_int(s, 4, (caps & (1u << 11)) && f[NFF_ADAPTER_START_os_feature_enabled]);
		sqlite3_bind_int64(s, 5, (int64_t)f[NFF_ADAPTER_START_gpu_frequency]);
		return step_done(b, ST_ADAPTER, err);
	}
	case NF_EV_HWQUEUE_START:
		s = b->st[ST_QUEUE];
		sqlite3_bind_int64(s, 1, (int64_t)f[NFF_HWQUEUE_START_hwqueue]);
		sqlite3_bind_int64(s, 2, (int64_t)f[NFF_HWQUEUE_START_adapter]);
		sqlite3_bind_int64(s, 3, (int64_t)f[NFF_HWQUEUE_START_node]);
		sqlite3_bind_int64(s, 4, (int64_t)f[NFF_HWQUEUE_START_engine]);
		bind_text(s, 5, ev->str);
		sqlite3_bind_int64(s, 6, now);
		return step_done(b, ST_QUEUE, err);
	case NF_EV_HWQUEUE_STOP:
		sqlite3_bind_int64(b->st[ST_QUEUE_STOP], 1, (int64_t)f[NFF_HWQUEUE_STOP_hwqueue]);
		sqlite3_bind_int64(b->st[ST_QUEUE_STOP], 2, now);
		return step_done(b, ST_QUEUE_STOP, err);
	case NF_EV_FENCE_START:
		return on_fence_start(b, ev, err);
	case NF_EV_FENCE_STOP: {
		int rc;

		sqlite3_bind_int64(b->st[ST_HANDLE_CLOSE], 1, (int64_t)f[NFF_FENCE_STOP_fence]);
		sqlite3_bind_int64(b->st[ST_HANDLE_CLOSE], 2, now);
		rc = step_done(b, ST_HANDLE_CLOSE, err);
		if (rc || !f[NFF_FENCE_STOP_global_destroyed])
			return rc;
		sqlite3_bind_int64(b->st[ST_FENCE_DESTROY], 1,
				   (int64_t)f[NFF_FENCE_STOP_global_fence]);
		sqlite3_bind_int64(b->st[ST_FENCE_DESTROY], 2, now);
		return step_done(b, ST_FENCE_DESTROY, err);
	}
	case NF_EV_SET_LOG_BUFFER: {
		struct log_state *ls = log_for(b, (uint32_t)f[NFF_SET_LOG_BUFFER_adapter],
					       (uint32_t)f[NFF_SET_LOG_BUFFER_hwqueue],
					       (uint32_t)f[NFF_SET_LOG_BUFFER_log_type]);

		if (!ls)
			return nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
		log_advance(ls, (uint32_t)f[NFF_SET_LOG_BUFFER_epoch]);
		return 0;
	}
	case NF_EV_FENCE_WAIT_QUEUED:
		return on_queued(b, ev, NF_LOG_WAITS, err);
	case NF_EV_FENCE_SIGNAL_QUEUED:
		return on_queued(b, ev, NF_LOG_SIGNALS, err);
	case NF_EV_GPU_WAIT_LEGACY:
		return on_legacy_wait(b, ev, err);
	case NF_EV_GPU_SIGNAL_LEGACY:
		return on_legacy_signal(b, ev, err);
	case NF_EV_CPU_WAIT:
		s = b->st[ST_CPU_WAIT];
		sqlite3_bind_int64(s, 1, (int64_t)f[NFF_CPU_WAIT_wait_id]);
		sqlite3_bind_int64(s, 2, (int64_t)f[NFF_CPU_WAIT_thread]);
		sqlite3_bind_int64(s, 3, (int64_t)f[NFF_CPU_WAIT_adapter]);
		bind_fence(s, 4, b, (uint32_t)f[NFF_CPU_WAIT_fence]);
		sqlite3_bind_int64(s, 5, (int64_t)f[NFF_CPU_WAIT_value]);
		sqlite3_bind_int64(s, 6, now);
		return step_done(b, ST_CPU_WAIT, err);
	case NF_EV_CPU_UNWAIT: {
		static const char *const status[] = { "satisfied", "timeout", "closed" };
		uint64_t st = f[NFF_CPU_UNWAIT_status];

		s = b->st[ST_CPU_UNWAIT];
		sqlite3_bind_int64(s, 1, (int64_t)f[NFF_CPU_UNWAIT_wait_id]);
		sqlite3_bind_int64(s, 2, now);
		sqlite3_bind_text(s, 3, st < 3 ? status[st] : "unknown", -1, SQLITE_STATIC);
		return step_done(b, ST_CPU_UNWAIT, err);
	}
	case NF_EV_CPU_SIGNAL: {
		bool known;
		int64_t fence = global_of(b, (uint32_t)f[NFF_CPU_SIGNAL_fence], &known);
		int64_t id = ++b->next_cpu_signal;
		int rc;

		s = b->st[ST_CPU_SIGNAL];
		sqlite3_bind_int64(s, 1, id);
		sqlite3_bind_int64(s, 2, (int64_t)f[NFF_CPU_SIGNAL_thread]);
		sqlite3_bind_int64(s, 3, (int64_t)f[NFF_CPU_SIGNAL_adapter]);
		bind_fence(s, 4, b, (uint32_t)f[NFF_CPU_SIGNAL_fence]);
		sqlite3_bind_int64(s, 5, (int64_t)f[NFF_CPU_SIGNAL_value]);
		sqlite3_bind_int64(s, 6, now);
		rc = step_done(b, ST_CPU_SIGNAL, err);
		if (rc == 0 && known) {
			struct nf_deps_signal r = { .fence = fence, .value = (int64_t)f[NFF_CPU_SIGNAL_value],
						    .id = id, .cpu = true, .end_known = true, .end = now };

			rc = nf_deps_signal(b->deps, &r, err);
		}
		return rc;
	}
	case NF_EV_UPDATE_MONITORED_VALUES:
		s = b->st[ST_MONITORED];
		sqlite3_bind_int64(s, 1, now);
		sqlite3_bind_int64(s, 2, (int64_t)f[NFF_UPDATE_MONITORED_VALUES_adapter]);
		sqlite3_bind_int64(s, 3, (int64_t)f[NFF_UPDATE_MONITORED_VALUES_global_fence]);
		/* Two's complement: UINT64_MAX is stored as -1. */
		sqlite3_bind_int64(s, 4, (int64_t)f[NFF_UPDATE_MONITORED_VALUES_monitored_value]);
		sqlite3_bind_int64(s, 5, (int64_t)f[NFF_UPDATE_MONITORED_VALUES_current_value]);
		return step_done(b, ST_MONITORED, err);
	case NF_EV_FENCE_INTERRUPT:
		return on_interrupt(b, ev, err);
	case NF_EV_CALIBRATE_GPU_CLOCK: {
		/* A pair the clock model cannot use (a clock beyond NF_GPU_TS_MAX,
		 * a CPU time or frequency out of range) is a finding, not a pair. */
		long double cns = cpu_ns_exact(b, f[NFF_CALIBRATE_GPU_CLOCK_cpu_clock]);

		if (f[NFF_CALIBRATE_GPU_CLOCK_gpu_clock] > NF_GPU_TS_MAX ||
		    f[NFF_CALIBRATE_GPU_CLOCK_gpu_frequency] > NF_GPU_TS_MAX ||
		    !(cns >= -(long double)NF_GPU_TS_MAX && cns <= (long double)NF_GPU_TS_MAX)) {
			char detail[200];

			snprintf(detail, sizeof(detail),
				 "adapter %" PRIu64 ": calibration pair (GPU clock %" PRIu64 ", CPU clock %" PRIu64
				 ", frequency %" PRIu64 ") beyond 2^62: not used",
				 f[NFF_CALIBRATE_GPU_CLOCK_adapter], f[NFF_CALIBRATE_GPU_CLOCK_gpu_clock],
				 f[NFF_CALIBRATE_GPU_CLOCK_cpu_clock], f[NFF_CALIBRATE_GPU_CLOCK_gpu_frequency]);
			return nf_tb_add_anomaly(b, nf_finding_anomaly_name(NF_FIND_OUT_OF_RANGE), 0, false,
						 NULL, &now, &now, 0, detail, err);
		}
	}
		s = b->st[ST_CAL];
		sqlite3_bind_int64(s, 1, (int64_t)f[NFF_CALIBRATE_GPU_CLOCK_adapter]);
		sqlite3_bind_int64(s, 2, (int64_t)f[NFF_CALIBRATE_GPU_CLOCK_gpu_clock]);
		sqlite3_bind_double(s, 3,
				    (double)cpu_ns_exact(b, f[NFF_CALIBRATE_GPU_CLOCK_cpu_clock]));
		sqlite3_bind_int64(s, 4, (int64_t)f[NFF_CALIBRATE_GPU_CLOCK_gpu_frequency]);
		sqlite3_bind_int(s, 5, f[NFF_CALIBRATE_GPU_CLOCK_from_cmp] != 0);
		return step_done(b, ST_CAL, err);
	case NF_EV_LOG_READ:
		return on_log_read(b, ev, err);
	case NF_EV_LOG_OVERRUN: {
		char detail[160];
		int64_t lost = (int64_t)f[NFF_LOG_OVERRUN_lost];

		snprintf(detail, sizeof(detail),
			 "the OS flagged %" PRId64 " lost entries (adapter %" PRIu64 ", epoch %" PRIu64 ")",
			 lost, f[NFF_LOG_OVERRUN_adapter], f[NFF_LOG_OVERRUN_epoch]);
		/* The replay's 'lost' rows count these entries; the flag repeats the
		 * count in its detail only, so that sum(lost_entries) counts each once. */
		return nf_tb_add_anomaly(b, nf_anomaly_name(NF_ANOMALY_OS_OVERRUN_FLAG),
					 (int64_t)f[NFF_LOG_OVERRUN_hwqueue], true,
					 log_name((uint32_t)f[NFF_LOG_OVERRUN_log_type]), &now, &now, 0,
					 detail, err);
	}
	case NF_EV_TRUTH_OP:
		return on_truth(b, ev, err);
	case NF_EV_DISPLAY_START:
	case NF_EV_PRESENT:
	case NF_EV_DISPLAY_FLIP:
	case NF_EV_VSYNC:
		return nf_tb_display_event(b, ev, now, err);
	default:
		return 0;
	}
}

int nf_timeline_builder_feed_entry(struct nf_timeline_builder *b,
				   const struct nf_decoded_entry *e, struct nf_error *err)
{
	struct log_state *ls = log_for(b, e->adapter, e->hwqueue, e->log_type);
	struct op_rec *f, o;
	int64_t at;
	int rc;

	if (b->finished)
		return nf_error_set(err, NF_ESTATE, "timeline: builder already finished");
	if (!ls)
		return nf_tb_oom(err);
	log_advance(ls, e->epoch);
	if (e->epoch < ls->epoch)
		return 0; /* a stale epoch: its place in the sequence is unknown */
	log_saw(ls, e->seq + 1);
	at = (int64_t)(ls->base + e->seq);
	/* Entries come in position order: what waits before this one never got its entry. */
	if ((rc = nf_tb_settle_before(b, ls, at, err)) != 0)
		return rc;
	f = fifo_front(ls);
	if (f && f->ord == at) {
		o = *f;
		fifo_pop(ls);
		b->pending--;
		if (e->entry.hnative_fence != o.handle || (int64_t)e->entry.fence_value != o.value) {
			char detail[240];

			o.status = OS_UNMATCHED;
			snprintf(detail, sizeof(detail),
				 "log entry at seq %" PRIu64 " (epoch %" PRIu32 ") holds handle %" PRIu32
				 " value %" PRIu64 " but op %" PRId64 " queued handle %" PRIu32
				 " value %" PRId64, e->seq, e->epoch, e->entry.hnative_fence,
				 e->entry.fence_value, o.id, o.handle, o.value);
			rc = nf_tb_add_anomaly(b, nf_finding_anomaly_name(NF_FIND_CORRUPT), o.queue, true,
					       log_name(e->log_type), NULL, NULL, 0, detail, err);
			if (rc)
				return rc;
		} else {
			apply_entry(&o, e);
		}
		return nf_tb_op_done(b, &o, err);
	}
	if (at < (int64_t)ls->next_op)
		return 0; /* a position delivered twice: the first entry won */
	/* An entry no queued event accounts for still is an operation. */
	memset(&o, 0, sizeof(o));
	o.id = ++b->next_op_id;
	o.adapter = e->adapter;
	o.queue = e->hwqueue;
	o.log = (uint8_t)e->log_type;
	o.handle = e->entry.hnative_fence;
	o.value = (int64_t)e->entry.fence_value;
	op_fence(b, &o);
	apply_entry(&o, e);
	return nf_tb_op_done(b, &o, err);
}

int nf_timeline_builder_feed_finding(struct nf_timeline_builder *b, const struct nf_finding *fd,
				     struct nf_error *err)
{
	struct log_state *ls = log_for(b, fd->adapter, fd->hwqueue, fd->log_type);
	char detail[320];
	const char *kind = nf_finding_anomaly_name((unsigned)fd->kind);

	if (b->finished)
		return nf_error_set(err, NF_ESTATE, "timeline: builder already finished");
	if (!ls)
		return nf_tb_oom(err);
	log_advance(ls, fd->epoch);
	if (!kind)
		return 0; /* NEW_EPOCH: handled by log_advance */
	snprintf(detail, sizeof(detail), "%s (adapter %" PRIu32 ", epoch %" PRIu32 ", %s event %"
		 PRIu64 " entry %" PRIu32 ")", fd->detail, fd->adapter, fd->epoch,
		 fd->stream ? fd->stream : "?", fd->event_index, fd->entry_index);
	if (fd->kind == NF_FIND_LOST) {
		sqlite3_stmt *s = b->st[ST_LOST];
		struct lost_span sp;
		int rc;

		if (fd->epoch < ls->epoch)
			return 0;
		log_saw(ls, fd->first_seq + fd->count);
		sp.first = (int64_t)(ls->base + fd->first_seq);
		sp.count = (int64_t)fd->count;
		sp.first_seq = (int64_t)fd->first_seq;
		sp.epoch = fd->epoch;
		if (ls->s_n == ls->s_cap) {
			size_t cap = ls->s_cap ? ls->s_cap * 2 : 4;
			struct lost_span *n = realloc(ls->spans, cap * sizeof(*n));

			if (!n)
				return nf_tb_oom(err);
			ls->spans = n;
			ls->s_cap = cap;
		}
		ls->spans[ls->s_n++] = sp;
		/* The operations up to the end of the span will get no entry. */
		if ((rc = nf_tb_settle_before(b, ls, sp.first + sp.count, err)) != 0)
			return rc;
		sqlite3_bind_int64(s, 1, fd->adapter);
		sqlite3_bind_int64(s, 2, fd->hwqueue);
		sqlite3_bind_int64(s, 3, fd->log_type);
		sqlite3_bind_int64(s, 4, (int64_t)fd->count);
		sqlite3_bind_int64(s, 5, (int64_t)fd->prev_gpu_ts);
		sqlite3_bind_int64(s, 6, (int64_t)fd->next_gpu_ts);
		sqlite3_bind_text(s, 7, detail, -1, SQLITE_TRANSIENT);
		return step_done(b, ST_LOST, err);
	}
	int64_t at = ns_of(b, fd->cpu_ts);
	bool at_ok = cpu_time_ok(b, fd->cpu_ts);

	return nf_tb_add_anomaly(b, kind, fd->hwqueue, true, log_name(fd->log_type), at_ok ? &at : NULL,
			   at_ok ? &at : NULL, 0, detail, err);
}
