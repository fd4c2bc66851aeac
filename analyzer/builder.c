/*
 * The timeline builder: turns the parser's stream into the tables of
 * schemas/timeline.sql. Objects (adapters, queues, fences, handles, CPU waits
 * and signals, interrupts, monitored values, truth) are written as they come.
 * Queued GPU operations, decoded log entries, lost spans and calibration pairs
 * are staged in TEMP tables keyed by each log's running written position, and
 * finish() resolves them: it fits the clocks, matches every queued operation
 * with the entry at its position (FIFO per queue and log, across log epochs),
 * classifies the rest (lost, zero timestamp, unmatched), ties every completed
 * wait to the signal that released it and flags causality violations. Memory
 * holds only per-queue, per-fence and per-adapter state.
 */
#include "builder.h"
#include "kernel_ingest.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "timeline_sql.h"
#include "timeline_views_sql.h"

/* ---- a small open-addressing map, uint64 -> uint64 ---- */

struct u64map {
	uint64_t *keys, *vals;
	uint8_t *used;
	size_t cap, n;
};

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static void map_free(struct u64map *m)
{
	free(m->keys);
	free(m->vals);
	free(m->used);
	memset(m, 0, sizeof(*m));
}

static uint64_t *map_find(const struct u64map *m, uint64_t key)
{
	if (!m->cap)
		return NULL;
	for (size_t i = mix64(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (!m->used[i])
			return NULL;
		if (m->keys[i] == key)
			return &m->vals[i];
	}
}

static int map_grow(struct u64map *m)
{
	struct u64map g = { 0 };

	g.cap = m->cap ? m->cap * 2 : 64;
	g.keys = malloc(g.cap * sizeof(*g.keys));
	g.vals = malloc(g.cap * sizeof(*g.vals));
	g.used = calloc(g.cap, 1);
	if (!g.keys || !g.vals || !g.used) {
		map_free(&g);
		return NF_ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->used[i])
			continue;
		size_t j = mix64(m->keys[i]) & (g.cap - 1);

		while (g.used[j])
			j = (j + 1) & (g.cap - 1);
		g.used[j] = 1;
		g.keys[j] = m->keys[i];
		g.vals[j] = m->vals[i];
		g.n++;
	}
	map_free(m);
	*m = g;
	return 0;
}

/* Inserts or overwrites; returns 0 or NF_ENOMEM. */
static int map_put(struct u64map *m, uint64_t key, uint64_t val)
{
	uint64_t *v = map_find(m, key);

	if (v) {
		*v = val;
		return 0;
	}
	if ((m->n + 1) * 4 > m->cap * 3 && map_grow(m))
		return NF_ENOMEM;
	size_t i = mix64(key) & (m->cap - 1);

	while (m->used[i])
		i = (i + 1) & (m->cap - 1);
	m->used[i] = 1;
	m->keys[i] = key;
	m->vals[i] = val;
	m->n++;
	return 0;
}

/* ---- builder state ---- */

/* One log (waits or signals) of one hardware queue. */
struct log_state {
	uint64_t next_op;     /* operations queued so far: the next one's position */
	uint32_t epoch;       /* current location generation */
	uint64_t base;        /* position of seq 0 of the current epoch */
	uint64_t written;     /* entries known written in the current epoch */
};

struct queue_state {
	struct log_state log[2]; /* [0] waits, [1] signals */
};

struct legacy_wait {
	uint32_t adapter, hwqueue, handle;
	uint64_t value;
	int64_t op_id;
};

#define FENCE_CROSS_ADAPTER 1u

/* t_entries.ts: what the end timestamp is worth. */
enum { TS_OK = 0, TS_ZERO = 1, TS_REPEATED = 2 };

enum stmt_id {
	ST_ADAPTER, ST_QUEUE, ST_QUEUE_STOP, ST_FENCE, ST_FENCE_DESTROY, ST_HANDLE, ST_HANDLE_CLOSE,
	ST_OP, ST_OP_END, ST_ENTRY, ST_LOST, ST_CAL, ST_CPU_WAIT, ST_CPU_UNWAIT, ST_CPU_SIGNAL,
	ST_INTERRUPT, ST_MONITORED, ST_ANOMALY, ST_TRUTH, ST_COUNT
};

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
	[ST_OP] = "INSERT INTO temp.t_ops(id, adapter, queue, log, ord, handle, fence, value, "
		  "queued_ns, observed_ns, end_ns, legacy, thread) "
		  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
	[ST_OP_END] = "UPDATE temp.t_ops SET end_ns = ?2 WHERE id = ?1",
	[ST_ENTRY] = "INSERT INTO temp.t_entries(adapter, queue, log, ord, seq, epoch, handle, fence, "
		     "value, observed_gpu, end_gpu, ts) "
		     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
	[ST_LOST] = "INSERT INTO temp.t_lost(adapter, queue, log, ord_first, count, first_seq, epoch, "
		    "prev_gpu, next_gpu, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
	[ST_CAL] = "INSERT INTO temp.t_cal(adapter, gpu, cpu_ns, freq, from_cmp) "
		   "VALUES (?1, ?2, ?3, ?4, ?5)",
	[ST_CPU_WAIT] = "INSERT OR REPLACE INTO cpu_waits(id, thread, adapter, fence, value, start_ns, "
			"end_ns, status) VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL, 'pending')",
	[ST_CPU_UNWAIT] = "UPDATE cpu_waits SET end_ns = ?2, status = ?3 WHERE id = ?1",
	[ST_CPU_SIGNAL] = "INSERT INTO cpu_signals(thread, adapter, fence, value, ts_ns) "
			  "VALUES (?1, ?2, ?3, ?4, ?5)",
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
};

static const char staging_sql[] =
	"CREATE TEMP TABLE t_ops(id INTEGER PRIMARY KEY, adapter INTEGER, queue INTEGER, "
	"  log INTEGER, ord INTEGER, handle INTEGER, fence INTEGER, value INTEGER, "
	"  queued_ns INTEGER, observed_ns INTEGER, end_ns INTEGER, legacy INTEGER, thread INTEGER);"
	"CREATE TEMP TABLE t_entries(adapter INTEGER, queue INTEGER, log INTEGER, ord INTEGER, "
	"  seq INTEGER, epoch INTEGER, handle INTEGER, fence INTEGER, value INTEGER, "
	"  observed_gpu INTEGER, end_gpu INTEGER, ts INTEGER);"
	"CREATE TEMP TABLE t_lost(adapter INTEGER, queue INTEGER, log INTEGER, ord_first INTEGER, "
	"  count INTEGER, first_seq INTEGER, epoch INTEGER, prev_gpu INTEGER, next_gpu INTEGER, "
	"  detail TEXT);"
	"CREATE TEMP TABLE t_cal(adapter INTEGER, gpu INTEGER, cpu_ns REAL, freq INTEGER, "
	"  from_cmp INTEGER);"
	"CREATE TEMP TABLE t_fit(adapter INTEGER, gpu INTEGER, ns REAL, freq INTEGER);";

struct nf_timeline_builder {
	sqlite3 *db;
	bool in_txn, finished;
	/* session facts (strings owned) */
	char *tool_version, *source, *mode, *host;
	uint64_t seed, cpu_frequency, start_ticks;
	int64_t schema_version;
	bool ground_truth;
	uint64_t max_ts;
	bool any_ts;

	sqlite3_stmt *st[ST_COUNT];
	int64_t next_op_id;
	int64_t n_entries;       /* rows in t_entries */
	struct u64map handles;   /* local handle -> global fence */
	struct u64map fences;    /* global fence -> FENCE_* flags */
	struct u64map queues;    /* adapter<<32 | hwqueue -> index into qs */
	struct queue_state *qs;
	size_t n_qs, cap_qs;
	struct legacy_wait *legacy;
	size_t n_legacy, cap_legacy;
	double slack_ns;
	struct nf_kernel_ingest *kernel; /* kernel_ingest.c, created at the first kernel event */
};

int64_t nf_timeline_cpu_ns(uint64_t ticks, uint64_t start_ticks, uint64_t cpu_frequency)
{
	if (cpu_frequency == 0)
		return 0;
	__int128 d = (__int128)ticks - (__int128)start_ticks;

	return (int64_t)(d * 1000000000 / (__int128)cpu_frequency);
}

static long double cpu_ns_exact(const struct nf_timeline_builder *b, uint64_t ticks)
{
	if (b->cpu_frequency == 0)
		return 0;
	long double d = (long double)ticks - (long double)b->start_ticks;

	return d * 1e9L / (long double)b->cpu_frequency;
}

static int64_t ns_of(struct nf_timeline_builder *b, uint64_t ticks)
{
	return nf_timeline_cpu_ns(ticks, b->start_ticks, b->cpu_frequency);
}

static int sql_err(struct nf_timeline_builder *b, struct nf_error *err, const char *what)
{
	return nf_error_set(err, NF_ESQL, "timeline: %s: %s", what, sqlite3_errmsg(b->db));
}

/* Steps a prepared insert/update to completion and resets it. */
static int step_done(struct nf_timeline_builder *b, enum stmt_id id, struct nf_error *err)
{
	sqlite3_stmt *s = b->st[id];
	int src = sqlite3_step(s);

	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	if (src != SQLITE_DONE)
		return sql_err(b, err, stmt_sql[id]);
	return 0;
}

static char *dup_str(const char *s)
{
	return strdup(s ? s : "");
}

static int exec_sql(struct nf_timeline_builder *b, const char *sql, struct nf_error *err,
		    const char *what)
{
	char *msg = NULL;

	if (sqlite3_exec(b->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		nf_error_set(err, NF_ESQL, "timeline: %s: %s", what,
			     msg ? msg : sqlite3_errmsg(b->db));
		sqlite3_free(msg);
		return NF_ESQL;
	}
	return 0;
}

struct nf_timeline_builder *nf_timeline_builder_create(sqlite3 *db,
							const struct nf_session_info *info,
							struct nf_error *err)
{
	struct nf_timeline_builder *b = calloc(1, sizeof(*b));

	if (!b) {
		nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
		return NULL;
	}
	b->db = db;
	b->tool_version = dup_str(info->tool_version);
	b->source = dup_str(info->source);
	b->mode = dup_str(info->mode);
	b->host = dup_str(info->host);
	if (!b->tool_version || !b->source || !b->mode || !b->host) {
		nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
		goto out_free;
	}
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
	if (exec_sql(b, "BEGIN", err, "begin"))
		goto out_free;
	b->in_txn = true;
	if (exec_sql(b, nf_timeline_sql, err, "schemas/timeline.sql") ||
	    exec_sql(b, staging_sql, err, "staging tables"))
		goto out_free;
	for (int i = 0; i < ST_COUNT; i++) {
		if (sqlite3_prepare_v2(db, stmt_sql[i], -1, &b->st[i], NULL) != SQLITE_OK) {
			sql_err(b, err, stmt_sql[i]);
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
	nf_kernel_ingest_destroy(b->kernel);
	map_free(&b->handles);
	map_free(&b->fences);
	map_free(&b->queues);
	free(b->qs);
	free(b->legacy);
	free(b->tool_version);
	free(b->source);
	free(b->mode);
	free(b->host);
	free(b);
}

/* The state of one log; NULL on allocation failure. */
static struct log_state *log_for(struct nf_timeline_builder *b, uint32_t adapter,
				 uint32_t hwqueue, uint32_t log_type)
{
	uint64_t key = (uint64_t)adapter << 32 | hwqueue;
	uint64_t *idx = map_find(&b->queues, key);

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
		if (map_put(&b->queues, key, b->n_qs))
			return NULL;
		idx = map_find(&b->queues, key);
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
	uint64_t *g = map_find(&b->handles, handle);

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

static const char *log_name(uint32_t log_type)
{
	return log_type == NF_LOG_WAITS ? "waits" : log_type == NF_LOG_SIGNALS ? "signals" : NULL;
}

static int add_anomaly(struct nf_timeline_builder *b, const char *kind, int64_t queue,
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

static int add_op(struct nf_timeline_builder *b, uint32_t adapter, uint32_t hwqueue,
		  uint32_t log_type, const uint64_t *ord, uint32_t handle, uint64_t value,
		  const int64_t *queued, const int64_t *observed, const int64_t *end, bool legacy,
		  const uint32_t *thread, int64_t *id_out, struct nf_error *err)
{
	sqlite3_stmt *s = b->st[ST_OP];
	int64_t id = ++b->next_op_id;

	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int64(s, 2, adapter);
	sqlite3_bind_int64(s, 3, hwqueue);
	sqlite3_bind_int64(s, 4, log_type);
	if (ord)
		sqlite3_bind_int64(s, 5, (int64_t)*ord);
	sqlite3_bind_int64(s, 6, handle);
	bind_fence(s, 7, b, handle);
	sqlite3_bind_int64(s, 8, (int64_t)value);
	if (queued)
		sqlite3_bind_int64(s, 9, *queued);
	if (observed)
		sqlite3_bind_int64(s, 10, *observed);
	if (end)
		sqlite3_bind_int64(s, 11, *end);
	sqlite3_bind_int(s, 12, legacy);
	if (thread)
		sqlite3_bind_int64(s, 13, *thread);
	if (id_out)
		*id_out = id;
	return step_done(b, ST_OP, err);
}

static int on_queued(struct nf_timeline_builder *b, const struct nf_event *ev, uint32_t log_type,
		     struct nf_error *err)
{
	/* FENCE_WAIT_QUEUED and FENCE_SIGNAL_QUEUED share their field layout. */
	uint32_t adapter = (uint32_t)ev->f[NFF_FENCE_WAIT_QUEUED_adapter];
	uint32_t hwqueue = (uint32_t)ev->f[NFF_FENCE_WAIT_QUEUED_hwqueue];
	uint32_t thread = (uint32_t)ev->f[NFF_FENCE_WAIT_QUEUED_thread];
	struct log_state *ls = log_for(b, adapter, hwqueue, log_type);
	int64_t now = ns_of(b, ev->ts);

	if (!ls)
		return nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
	uint64_t ord = ls->next_op++;

	return add_op(b, adapter, hwqueue, log_type, &ord,
		      (uint32_t)ev->f[NFF_FENCE_WAIT_QUEUED_fence],
		      ev->f[NFF_FENCE_WAIT_QUEUED_value], &now, NULL, NULL, false, &thread, NULL,
		      err);
}

static int on_legacy_wait(struct nf_timeline_builder *b, const struct nf_event *ev,
			  struct nf_error *err)
{
	uint32_t adapter = (uint32_t)ev->f[NFF_GPU_WAIT_LEGACY_adapter];
	uint32_t hwqueue = (uint32_t)ev->f[NFF_GPU_WAIT_LEGACY_hwqueue];
	uint32_t handle = (uint32_t)ev->f[NFF_GPU_WAIT_LEGACY_fence];
	uint64_t value = ev->f[NFF_GPU_WAIT_LEGACY_value];
	int64_t now = ns_of(b, ev->ts);

	if (!ev->f[NFF_GPU_WAIT_LEGACY_released]) {
		struct legacy_wait *w;

		if (b->n_legacy == b->cap_legacy) {
			size_t cap = b->cap_legacy ? b->cap_legacy * 2 : 16;
			struct legacy_wait *n = realloc(b->legacy, cap * sizeof(*n));

			if (!n)
				return nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
			b->legacy = n;
			b->cap_legacy = cap;
		}
		w = &b->legacy[b->n_legacy];
		*w = (struct legacy_wait){ adapter, hwqueue, handle, value, 0 };
		int rc = add_op(b, adapter, hwqueue, NF_LOG_WAITS, NULL, handle, value, &now, &now,
				NULL, true, NULL, &w->op_id, err);

		if (rc == 0)
			b->n_legacy++;
		return rc;
	}
	for (size_t i = 0; i < b->n_legacy; i++) {
		struct legacy_wait *w = &b->legacy[i];

		if (w->adapter != adapter || w->hwqueue != hwqueue || w->handle != handle ||
		    w->value != value)
			continue;
		sqlite3_bind_int64(b->st[ST_OP_END], 1, w->op_id);
		sqlite3_bind_int64(b->st[ST_OP_END], 2, now);
		memmove(w, w + 1, (b->n_legacy - i - 1) * sizeof(*w));
		b->n_legacy--;
		return step_done(b, ST_OP_END, err);
	}
	/* Released without a queued record (it began before the session). */
	return add_op(b, adapter, hwqueue, NF_LOG_WAITS, NULL, handle, value, NULL, NULL, &now,
		      true, NULL, NULL, err);
}

static int on_fence_start(struct nf_timeline_builder *b, const struct nf_event *ev,
			  struct nf_error *err)
{
	uint32_t flags = (uint32_t)ev->f[NFF_FENCE_START_flags];
	uint32_t global = (uint32_t)ev->f[NFF_FENCE_START_global_fence];
	uint32_t handle = (uint32_t)ev->f[NFF_FENCE_START_fence];
	int64_t now = ns_of(b, ev->ts);
	uint64_t *known = map_find(&b->fences, global);
	uint64_t fflags = (flags & 2u) ? FENCE_CROSS_ADAPTER : 0;
	sqlite3_stmt *s = b->st[ST_FENCE];
	int rc;

	if (known)
		fflags |= *known;
	if (map_put(&b->fences, global, fflags) || map_put(&b->handles, handle, global))
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
		uint64_t *fl = map_find(&b->fences, ev->u32s[i]);

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
	if (ev->id != NF_EV_TRUTH_OP && ev->id != NF_EV_TRUTH_LOG &&
	    (!b->any_ts || ev->ts > b->max_ts)) {
		b->max_ts = ev->ts;
		b->any_ts = true;
	}
	if (nf_event_desc(ev->id) && nf_event_desc(ev->id)->stream == NF_STREAM_KERNEL)
		return nf_kernel_ingest_event(&b->kernel, b->db, now, ev, err);
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
		return add_op(b, (uint32_t)f[NFF_GPU_SIGNAL_LEGACY_adapter],
			      (uint32_t)f[NFF_GPU_SIGNAL_LEGACY_hwqueue], NF_LOG_SIGNALS, NULL,
			      (uint32_t)f[NFF_GPU_SIGNAL_LEGACY_fence], f[NFF_GPU_SIGNAL_LEGACY_value],
			      &now, NULL, &now, true, NULL, NULL, err);
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
	case NF_EV_CPU_SIGNAL:
		s = b->st[ST_CPU_SIGNAL];
		sqlite3_bind_int64(s, 1, (int64_t)f[NFF_CPU_SIGNAL_thread]);
		sqlite3_bind_int64(s, 2, (int64_t)f[NFF_CPU_SIGNAL_adapter]);
		bind_fence(s, 3, b, (uint32_t)f[NFF_CPU_SIGNAL_fence]);
		sqlite3_bind_int64(s, 4, (int64_t)f[NFF_CPU_SIGNAL_value]);
		sqlite3_bind_int64(s, 5, now);
		return step_done(b, ST_CPU_SIGNAL, err);
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
	case NF_EV_CALIBRATE_GPU_CLOCK:
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
		return add_anomaly(b, "os_overrun_flag", (int64_t)f[NFF_LOG_OVERRUN_hwqueue], true,
				   log_name((uint32_t)f[NFF_LOG_OVERRUN_log_type]), &now, &now, lost,
				   detail, err);
	}
	case NF_EV_TRUTH_OP:
		return on_truth(b, ev, err);
	default:
		return 0;
	}
}

int nf_timeline_builder_feed_entry(struct nf_timeline_builder *b,
				   const struct nf_decoded_entry *e, struct nf_error *err)
{
	struct log_state *ls = log_for(b, e->adapter, e->hwqueue, e->log_type);
	sqlite3_stmt *s = b->st[ST_ENTRY];

	if (b->finished)
		return nf_error_set(err, NF_ESTATE, "timeline: builder already finished");
	if (!ls)
		return nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
	log_advance(ls, e->epoch);
	if (e->epoch < ls->epoch)
		return 0; /* a stale epoch: its place in the sequence is unknown */
	log_saw(ls, e->seq + 1);
	sqlite3_bind_int64(s, 1, e->adapter);
	sqlite3_bind_int64(s, 2, e->hwqueue);
	sqlite3_bind_int64(s, 3, e->log_type);
	sqlite3_bind_int64(s, 4, (int64_t)(ls->base + e->seq));
	sqlite3_bind_int64(s, 5, (int64_t)e->seq);
	sqlite3_bind_int64(s, 6, e->epoch);
	sqlite3_bind_int64(s, 7, e->entry.hnative_fence);
	bind_fence(s, 8, b, e->entry.hnative_fence);
	sqlite3_bind_int64(s, 9, (int64_t)e->entry.fence_value);
	sqlite3_bind_int64(s, 10, (int64_t)e->entry.fence_observed_gpu_timestamp);
	sqlite3_bind_int64(s, 11, (int64_t)e->entry.fence_end_gpu_timestamp);
	sqlite3_bind_int(s, 12, e->ts_class == NF_FIND_ZERO_TS || e->entry.fence_end_gpu_timestamp == 0
				? TS_ZERO : e->ts_class == NF_FIND_REPEATED_TS ? TS_REPEATED : TS_OK);
	b->n_entries++;
	return step_done(b, ST_ENTRY, err);
}

static const char *finding_kind(enum nf_finding_kind k)
{
	switch (k) {
	case NF_FIND_LOST: return "overrun";
	case NF_FIND_ZERO_TS: return "zero_timestamp";
	case NF_FIND_REPEATED_TS: return "repeated_timestamp";
	case NF_FIND_BACKWARDS_TS: return "backwards_timestamp";
	case NF_FIND_UNKNOWN_FENCE: return "unknown_fence";
	case NF_FIND_BAD_OPERATION: return "bad_operation";
	case NF_FIND_OUT_OF_RANGE: return "out_of_range";
	case NF_FIND_CORRUPT: return "corrupt";
	default: return NULL;
	}
}

int nf_timeline_builder_feed_finding(struct nf_timeline_builder *b, const struct nf_finding *fd,
				     struct nf_error *err)
{
	struct log_state *ls = log_for(b, fd->adapter, fd->hwqueue, fd->log_type);
	char detail[320];
	const char *kind = finding_kind(fd->kind);

	if (b->finished)
		return nf_error_set(err, NF_ESTATE, "timeline: builder already finished");
	if (!ls)
		return nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
	log_advance(ls, fd->epoch);
	if (!kind)
		return 0; /* NEW_EPOCH: handled by log_advance */
	snprintf(detail, sizeof(detail), "%s (adapter %" PRIu32 ", epoch %" PRIu32 ", %s event %"
		 PRIu64 " entry %" PRIu32 ")", fd->detail, fd->adapter, fd->epoch,
		 fd->stream ? fd->stream : "?", fd->event_index, fd->entry_index);
	if (fd->kind == NF_FIND_LOST) {
		sqlite3_stmt *s = b->st[ST_LOST];

		if (fd->epoch < ls->epoch)
			return 0;
		log_saw(ls, fd->first_seq + fd->count);
		sqlite3_bind_int64(s, 1, fd->adapter);
		sqlite3_bind_int64(s, 2, fd->hwqueue);
		sqlite3_bind_int64(s, 3, fd->log_type);
		sqlite3_bind_int64(s, 4, (int64_t)(ls->base + fd->first_seq));
		sqlite3_bind_int64(s, 5, (int64_t)fd->count);
		sqlite3_bind_int64(s, 6, (int64_t)fd->first_seq);
		sqlite3_bind_int64(s, 7, fd->epoch);
		sqlite3_bind_int64(s, 8, (int64_t)fd->prev_gpu_ts);
		sqlite3_bind_int64(s, 9, (int64_t)fd->next_gpu_ts);
		sqlite3_bind_text(s, 10, detail, -1, SQLITE_TRANSIENT);
		return step_done(b, ST_LOST, err);
	}
	int64_t at = ns_of(b, fd->cpu_ts);

	return add_anomaly(b, kind, fd->hwqueue, true, log_name(fd->log_type), &at, &at,
			   0, detail, err);
}

/* ---- finish ---- */

static int put_meta(struct nf_timeline_builder *b, const char *key, const char *val,
		    struct nf_error *err)
{
	sqlite3_stmt *s = NULL;
	int rc = 0;

	if (sqlite3_prepare_v2(b->db, "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)", -1,
			       &s, NULL) != SQLITE_OK)
		return sql_err(b, err, "meta");
	sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, val, -1, SQLITE_STATIC);
	if (sqlite3_step(s) != SQLITE_DONE)
		rc = sql_err(b, err, "meta");
	sqlite3_finalize(s);
	return rc;
}

static int write_meta(struct nf_timeline_builder *b, struct nf_error *err)
{
	char buf[64];
	int rc = 0;

#define META_U(key, v) \
	(snprintf(buf, sizeof(buf), "%" PRIu64, (uint64_t)(v)), put_meta(b, key, buf, err))
#define META_I(key, v) \
	(snprintf(buf, sizeof(buf), "%" PRId64, (int64_t)(v)), put_meta(b, key, buf, err))
	rc = META_I("schema_version", NF_SCHEMA_VERSION);
	rc = rc ? rc : META_I("timeline_version", NF_TIMELINE_VERSION);
	rc = rc ? rc : META_I("recorded_schema_version", b->schema_version);
	rc = rc ? rc : META_U("cpu_frequency", b->cpu_frequency);
	rc = rc ? rc : META_U("start_ticks", b->start_ticks);
	rc = rc ? rc : META_I("duration_ns", b->any_ts ? ns_of(b, b->max_ts) : 0);
	rc = rc ? rc : put_meta(b, "source", b->source, err);
	rc = rc ? rc : put_meta(b, "mode", b->mode, err);
	rc = rc ? rc : META_U("seed", b->seed);
	rc = rc ? rc : put_meta(b, "tool_version", b->tool_version, err);
	rc = rc ? rc : put_meta(b, "host", b->host, err);
	rc = rc ? rc : META_I("ground_truth", b->ground_truth);
#undef META_U
#undef META_I
	return rc;
}

/* Converts a GPU timestamp; *has is false when it is 0 or the adapter has no calibration. */
static int gpu_ns(struct nf_clock_model *m, uint32_t adapter, int64_t gpu, int64_t *ns,
		  bool *has, struct nf_error *err)
{
	double d = 0;
	int rc;

	*has = false;
	if (gpu == 0)
		return 0;
	rc = nf_clock_model_convert(m, adapter, (uint64_t)gpu, &d, has, err);
	if (rc == 0 && *has)
		*ns = (int64_t)llround(d);
	return rc;
}

static void bind_opt(sqlite3_stmt *s, int col, bool has, int64_t v)
{
	if (has)
		sqlite3_bind_int64(s, col, v);
	else
		sqlite3_bind_null(s, col);
}

static int resolve_overruns(struct nf_timeline_builder *b, struct nf_clock_model *m,
			    struct nf_error *err)
{
	sqlite3_stmt *sel = NULL;
	int rc = 0, src;

	if (sqlite3_prepare_v2(b->db,
			       "SELECT adapter, queue, log, count, prev_gpu, next_gpu, detail "
			       "FROM temp.t_lost ORDER BY rowid", -1, &sel, NULL) != SQLITE_OK)
		return sql_err(b, err, "select t_lost");
	while ((src = sqlite3_step(sel)) == SQLITE_ROW) {
		uint32_t adapter = (uint32_t)sqlite3_column_int64(sel, 0);
		int64_t first = 0, last = 0;
		bool hf, hl;

		rc = gpu_ns(m, adapter, sqlite3_column_int64(sel, 4), &first, &hf, err);
		rc = rc ? rc : gpu_ns(m, adapter, sqlite3_column_int64(sel, 5), &last, &hl, err);
		rc = rc ? rc : add_anomaly(b, "overrun", sqlite3_column_int64(sel, 1), true,
					   log_name((uint32_t)sqlite3_column_int(sel, 2)),
					   hf ? &first : NULL, hl ? &last : NULL,
					   sqlite3_column_int64(sel, 3),
					   (const char *)sqlite3_column_text(sel, 6), err);
		if (rc)
			break;
	}
	if (rc == 0 && src != SQLITE_DONE)
		rc = sql_err(b, err, "read t_lost");
	sqlite3_finalize(sel);
	return rc;
}

/* Inputs of one fence_ops row. */
struct op_row {
	int64_t id, adapter, queue, log, handle, value;
	bool has_fence, has_queued, has_observed, has_end, has_seq, has_thread;
	int64_t fence, queued, observed, end, seq, epoch, thread;
	const char *status;
};

struct resolver {
	struct nf_timeline_builder *b;
	struct nf_clock_model *m;
	sqlite3_stmt *ins, *lost;
};

static int write_op(struct resolver *r, const struct op_row *o, struct nf_error *err)
{
	sqlite3_stmt *s = r->ins;
	int src;

	sqlite3_bind_int64(s, 1, o->id);
	sqlite3_bind_int64(s, 2, o->queue);
	sqlite3_bind_int64(s, 3, o->adapter);
	sqlite3_bind_text(s, 4, o->log == NF_LOG_WAITS ? "wait" : "signal", -1, SQLITE_STATIC);
	bind_opt(s, 5, o->has_fence, o->fence);
	sqlite3_bind_int64(s, 6, o->handle);
	sqlite3_bind_int64(s, 7, o->value);
	bind_opt(s, 8, o->has_queued, o->queued);
	bind_opt(s, 9, o->has_observed, o->observed);
	bind_opt(s, 10, o->has_end, o->end);
	sqlite3_bind_text(s, 11, o->status, -1, SQLITE_STATIC);
	bind_opt(s, 12, o->has_seq, o->seq);
	bind_opt(s, 13, o->has_seq, o->epoch);
	bind_opt(s, 14, o->has_thread, o->thread);
	src = sqlite3_step(s);
	sqlite3_reset(s);
	if (src != SQLITE_DONE)
		return sql_err(r->b, err, "insert fence_ops");
	if (o->has_end && o->has_queued && (double)o->end + r->b->slack_ns < (double)o->queued) {
		char detail[200];
		int64_t q = o->queued, e = o->end;

		snprintf(detail, sizeof(detail),
			 "%s op %" PRId64 " ends at %" PRId64 " ns, before it was queued at %" PRId64
			 " ns", o->log == NF_LOG_WAITS ? "wait" : "signal", o->id, e, q);
		return add_anomaly(r->b, "causality", o->queue, true,
				   log_name((uint32_t)o->log), &e, &q, 0, detail, err);
	}
	return 0;
}

/* Fills times and status from the entry columns starting at col. */
static int apply_entry(struct resolver *r, sqlite3_stmt *sel, int col, struct op_row *o,
		       struct nf_error *err)
{
	uint32_t adapter = (uint32_t)o->adapter;
	int rc;

	o->has_seq = true;
	o->seq = sqlite3_column_int64(sel, col);
	o->epoch = sqlite3_column_int64(sel, col + 1);
	switch (sqlite3_column_int(sel, col + 6)) {
	case TS_ZERO:
		o->status = "zero_timestamp";
		return 0;
	case TS_REPEATED:
		/* The GPU repeated the previous entry's end: this end is unknown. */
		o->status = "repeated_timestamp";
		rc = 0;
		break;
	default:
		o->status = "complete";
		rc = gpu_ns(r->m, adapter, sqlite3_column_int64(sel, col + 5), &o->end, &o->has_end,
			    err);
	}
	if (rc == 0 && o->log == NF_LOG_WAITS)
		rc = gpu_ns(r->m, adapter, sqlite3_column_int64(sel, col + 4), &o->observed,
			    &o->has_observed, err);
	return rc;
}

/* Is position ord of a log inside a lost span? Sets the seq it had. */
static int in_lost_span(struct resolver *r, const struct op_row *o, int64_t ord, bool *lost,
			int64_t *seq, int64_t *epoch, struct nf_error *err)
{
	sqlite3_stmt *s = r->lost;
	int src;

	*lost = false;
	sqlite3_bind_int64(s, 1, o->adapter);
	sqlite3_bind_int64(s, 2, o->queue);
	sqlite3_bind_int64(s, 3, o->log);
	sqlite3_bind_int64(s, 4, ord);
	src = sqlite3_step(s);
	if (src == SQLITE_ROW) {
		int64_t first = sqlite3_column_int64(s, 0), count = sqlite3_column_int64(s, 1);

		if (ord < first + count) {
			*lost = true;
			*seq = sqlite3_column_int64(s, 2) + (ord - first);
			*epoch = sqlite3_column_int64(s, 3);
		}
	}
	sqlite3_reset(s);
	if (src != SQLITE_ROW && src != SQLITE_DONE)
		return sql_err(r->b, err, "lost span lookup");
	return 0;
}

static int resolve_ops(struct nf_timeline_builder *b, struct nf_clock_model *m,
		       struct nf_error *err)
{
	static const char join_sql[] =
		"SELECT o.id, o.adapter, o.queue, o.log, o.ord, o.handle, o.fence, o.value, "
		"       o.queued_ns, o.observed_ns, o.end_ns, o.legacy, o.thread, "
		"       e.rowid, e.seq, e.epoch, e.handle, e.value, e.observed_gpu, e.end_gpu, e.ts "
		"FROM temp.t_ops o LEFT JOIN temp.t_entries e "
		"  ON e.adapter = o.adapter AND e.queue = o.queue AND e.log = o.log AND e.ord = o.ord "
		"ORDER BY o.id";
	static const char orphan_sql[] =
		"SELECT e.adapter, e.queue, e.log, e.handle, e.fence, e.value, "
		"       e.seq, e.epoch, e.handle, e.value, e.observed_gpu, e.end_gpu, e.ts "
		"FROM temp.t_entries e WHERE NOT EXISTS (SELECT 1 FROM temp.t_ops o "
		"  WHERE o.adapter = e.adapter AND o.queue = e.queue AND o.log = e.log "
		"  AND o.ord = e.ord) ORDER BY e.rowid";
	struct resolver r = { b, m, NULL, NULL };
	sqlite3_stmt *sel = NULL;
	int64_t last_id = 0, matched = 0;
	int rc = 0, src;

	if (exec_sql(b,
		     "CREATE INDEX temp.t_entries_key ON t_entries(adapter, queue, log, ord);"
		     "CREATE INDEX temp.t_lost_key ON t_lost(adapter, queue, log, ord_first);",
		     err, "staging indexes"))
		return NF_ESQL;
	if (sqlite3_prepare_v2(b->db,
			       "INSERT INTO fence_ops(id, queue, adapter, op, fence, handle, value, "
			       "queued_ns, observed_ns, end_ns, status, log_seq, epoch, thread) "
			       "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
			       -1, &r.ins, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(b->db,
			       "SELECT ord_first, count, first_seq, epoch FROM temp.t_lost "
			       "WHERE adapter = ?1 AND queue = ?2 AND log = ?3 AND ord_first <= ?4 "
			       "ORDER BY ord_first DESC LIMIT 1", -1, &r.lost, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(b->db, join_sql, -1, &sel, NULL) != SQLITE_OK) {
		rc = sql_err(b, err, "prepare resolve");
		goto out;
	}
	while ((src = sqlite3_step(sel)) == SQLITE_ROW) {
		struct op_row o = { 0 };

		o.id = sqlite3_column_int64(sel, 0);
		if (o.id == last_id)
			continue; /* a position delivered twice: the first entry wins */
		last_id = o.id;
		o.adapter = sqlite3_column_int64(sel, 1);
		o.queue = sqlite3_column_int64(sel, 2);
		o.log = sqlite3_column_int64(sel, 3);
		o.handle = sqlite3_column_int64(sel, 5);
		o.has_fence = sqlite3_column_type(sel, 6) != SQLITE_NULL;
		o.fence = sqlite3_column_int64(sel, 6);
		o.value = sqlite3_column_int64(sel, 7);
		o.has_queued = sqlite3_column_type(sel, 8) != SQLITE_NULL;
		o.queued = sqlite3_column_int64(sel, 8);
		o.has_thread = sqlite3_column_type(sel, 12) != SQLITE_NULL;
		o.thread = sqlite3_column_int64(sel, 12);
		if (sqlite3_column_int(sel, 11)) {
			o.status = "legacy";
			o.has_observed = sqlite3_column_type(sel, 9) != SQLITE_NULL;
			o.observed = sqlite3_column_int64(sel, 9);
			o.has_end = sqlite3_column_type(sel, 10) != SQLITE_NULL;
			o.end = sqlite3_column_int64(sel, 10);
		} else if (sqlite3_column_type(sel, 13) != SQLITE_NULL) {
			int64_t eh = sqlite3_column_int64(sel, 16), ev = sqlite3_column_int64(sel, 17);

			matched++;

			if (eh != o.handle || ev != o.value) {
				char detail[240];

				o.status = "unmatched";
				snprintf(detail, sizeof(detail),
					 "log entry at seq %" PRId64 " (epoch %" PRId64 ") holds handle %"
					 PRId64 " value %" PRId64 " but op %" PRId64 " queued handle %"
					 PRId64 " value %" PRId64, (int64_t)sqlite3_column_int64(sel, 14),
					 (int64_t)sqlite3_column_int64(sel, 15), eh, ev, o.id, o.handle, o.value);
				rc = add_anomaly(b, "corrupt", o.queue, true,
						 log_name((uint32_t)o.log), NULL, NULL, 0, detail, err);
			} else {
				rc = apply_entry(&r, sel, 14, &o, err);
			}
		} else {
			bool lost;

			rc = in_lost_span(&r, &o, sqlite3_column_int64(sel, 4), &lost, &o.seq,
					  &o.epoch, err);
			o.has_seq = lost;
			o.status = lost ? "lost" : "unmatched";
		}
		rc = rc ? rc : write_op(&r, &o, err);
		if (rc)
			goto out;
	}
	if (src != SQLITE_DONE) {
		rc = sql_err(b, err, "resolve ops");
		goto out;
	}
	sqlite3_finalize(sel);
	sel = NULL;

	/* Entries no queued event accounts for still are operations. */
	if (matched == b->n_entries)
		goto out; /* the common case: every entry was claimed */
	if (exec_sql(b, "CREATE INDEX temp.t_ops_key ON t_ops(adapter, queue, log, ord)", err,
		     "staging index")) {
		rc = NF_ESQL;
		goto out;
	}
	if (sqlite3_prepare_v2(b->db, orphan_sql, -1, &sel, NULL) != SQLITE_OK) {
		rc = sql_err(b, err, "prepare orphans");
		goto out;
	}
	while ((src = sqlite3_step(sel)) == SQLITE_ROW) {
		struct op_row o = { 0 };

		o.id = ++b->next_op_id;
		o.adapter = sqlite3_column_int64(sel, 0);
		o.queue = sqlite3_column_int64(sel, 1);
		o.log = sqlite3_column_int64(sel, 2);
		o.handle = sqlite3_column_int64(sel, 3);
		o.has_fence = sqlite3_column_type(sel, 4) != SQLITE_NULL;
		o.fence = sqlite3_column_int64(sel, 4);
		o.value = sqlite3_column_int64(sel, 5);
		rc = apply_entry(&r, sel, 6, &o, err);
		rc = rc ? rc : write_op(&r, &o, err);
		if (rc)
			goto out;
	}
	if (src != SQLITE_DONE)
		rc = sql_err(b, err, "resolve orphan entries");
out:
	sqlite3_finalize(sel);
	sqlite3_finalize(r.ins);
	sqlite3_finalize(r.lost);
	return rc;
}

static int resolve_deps(struct nf_timeline_builder *b, struct nf_error *err)
{
	static const char sigs_sql[] =
		"CREATE TEMP TABLE t_sigs AS "
		"SELECT fence, value, end_ns, signal_id, cpu_id, "
		"       max(value) OVER (PARTITION BY fence ORDER BY end_ns, signal_id, cpu_id "
		"                        ROWS UNBOUNDED PRECEDING) AS runmax "
		"FROM (SELECT fence, value, end_ns, id AS signal_id, NULL AS cpu_id FROM fence_ops "
		"      WHERE op = 'signal' AND end_ns IS NOT NULL AND fence IS NOT NULL "
		"      UNION ALL "
		"      SELECT fence, value, ts_ns, NULL, id FROM cpu_signals WHERE fence IS NOT NULL);"
		"CREATE INDEX temp.t_sigs_run ON t_sigs(fence, runmax, end_ns);"
		"CREATE TEMP TABLE t_unk AS SELECT id, fence, value, queued_ns FROM fence_ops "
		"WHERE op = 'signal' AND end_ns IS NULL AND fence IS NOT NULL;"
		"CREATE INDEX temp.t_unk_key ON t_unk(fence, value);";
	static const char waits_sql[] =
		"SELECT w.id, w.queue, w.fence, w.value, w.observed_ns, w.end_ns, f.initial_value "
		"FROM fence_ops w LEFT JOIN fences f ON f.fence = w.fence "
		"WHERE w.op = 'wait' AND w.end_ns IS NOT NULL ORDER BY w.id";
	/*
	 * runmax is the largest value signaled so far in end order, so the first
	 * row whose runmax reaches the wait value is the first signal >= it.
	 */
	static const char find_sql[] =
		"SELECT signal_id, cpu_id, end_ns FROM temp.t_sigs "
		"WHERE fence = ?1 AND runmax >= ?2 ORDER BY runmax, end_ns LIMIT 1";
	/*
	 * A signal whose end is unknown (zero timestamp, lost entry, unmatched)
	 * may be the real releaser: when no known signal fits, it is taken
	 * rather than blaming causality on a later one.
	 */
	static const char unknown_sql[] =
		"SELECT id FROM temp.t_unk WHERE fence = ?1 AND value >= ?2 "
		"AND (queued_ns IS NULL OR queued_ns <= ?3) ORDER BY value, id LIMIT 1";
	sqlite3_stmt *waits = NULL, *find = NULL, *unk = NULL, *ins = NULL;
	int rc = 0, src;

	if (exec_sql(b, sigs_sql, err, "signals"))
		return NF_ESQL;
	if (sqlite3_prepare_v2(b->db, waits_sql, -1, &waits, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(b->db, find_sql, -1, &find, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(b->db, unknown_sql, -1, &unk, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(b->db,
			       "INSERT INTO deps(signal_id, wait_id, cpu_signal, stall_ns) "
			       "VALUES (?1, ?2, ?3, ?4)", -1, &ins, NULL) != SQLITE_OK) {
		rc = sql_err(b, err, "prepare deps");
		goto out;
	}
	while ((src = sqlite3_step(waits)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(waits, 0);
		int64_t queue = sqlite3_column_int64(waits, 1);
		int64_t value = sqlite3_column_int64(waits, 3);
		int64_t end = sqlite3_column_int64(waits, 5);
		bool has_fence = sqlite3_column_type(waits, 2) != SQLITE_NULL;
		bool pre = sqlite3_column_type(waits, 6) != SQLITE_NULL &&
			   sqlite3_column_int64(waits, 6) >= value;
		int fsrc = SQLITE_DONE;

		sqlite3_bind_int64(ins, 2, id);
		if (sqlite3_column_type(waits, 4) != SQLITE_NULL)
			sqlite3_bind_int64(ins, 4, end - sqlite3_column_int64(waits, 4));
		if (has_fence && !pre) {
			sqlite3_bind_int64(find, 1, sqlite3_column_int64(waits, 2));
			sqlite3_bind_int64(find, 2, value);
			fsrc = sqlite3_step(find);
		}
		bool late = fsrc == SQLITE_ROW &&
			    (double)sqlite3_column_int64(find, 2) > (double)end + b->slack_ns;
		int usrc = SQLITE_DONE;

		if (has_fence && !pre && (fsrc == SQLITE_DONE || late)) {
			sqlite3_bind_int64(unk, 1, sqlite3_column_int64(waits, 2));
			sqlite3_bind_int64(unk, 2, value);
			sqlite3_bind_int64(unk, 3, end + (int64_t)b->slack_ns);
			usrc = sqlite3_step(unk);
		}
		if (fsrc != SQLITE_ROW && fsrc != SQLITE_DONE) {
			rc = sql_err(b, err, "find releasing signal");
		} else if (usrc == SQLITE_ROW) {
			sqlite3_bind_int64(ins, 1, sqlite3_column_int64(unk, 0));
		} else if (usrc != SQLITE_DONE) {
			rc = sql_err(b, err, "find releasing signal");
		} else if (fsrc == SQLITE_ROW) {
			int64_t sig_end = sqlite3_column_int64(find, 2);

			sqlite3_bind_value(ins, 1, sqlite3_column_value(find, 0));
			sqlite3_bind_value(ins, 3, sqlite3_column_value(find, 1));
			if (late) {
				char detail[240];
				bool cpu = sqlite3_column_type(find, 1) != SQLITE_NULL;

				snprintf(detail, sizeof(detail),
					 "wait op %" PRId64 " (fence %" PRId64 " value %" PRId64
					 ") ends at %" PRId64 " ns, before its releasing %s %" PRId64
					 " ends at %" PRId64 " ns", id,
					 (int64_t)sqlite3_column_int64(waits, 2), value, end,
					 cpu ? "CPU signal" : "signal op",
					 (int64_t)sqlite3_column_int64(find, cpu ? 1 : 0), sig_end);
				rc = add_anomaly(b, "causality", queue, true, "waits", &end, &sig_end,
						 0, detail, err);
			}
		}
		if (rc == 0 && sqlite3_step(ins) != SQLITE_DONE)
			rc = sql_err(b, err, "insert deps");
		sqlite3_reset(ins);
		sqlite3_clear_bindings(ins);
		sqlite3_reset(find);
		sqlite3_reset(unk);
		if (rc)
			goto out;
	}
	if (src != SQLITE_DONE)
		rc = sql_err(b, err, "list waits");
out:
	sqlite3_finalize(waits);
	sqlite3_finalize(find);
	sqlite3_finalize(unk);
	sqlite3_finalize(ins);
	return rc;
}

int nf_timeline_builder_finish(struct nf_timeline_builder *b, struct nf_error *err)
{
	struct nf_clock_model *m = NULL;
	int rc;

	if (b->finished)
		return nf_error_set(err, NF_ESTATE, "timeline: builder already finished");
	b->finished = true;
	rc = nf_clock_fit(b->db, 0, err);
	if (rc)
		return rc;
	m = nf_clock_model_create(b->db, err);
	if (!m)
		return err && err->code ? err->code : NF_ENOMEM;
	rc = resolve_overruns(b, m, err);
	rc = rc ? rc : resolve_ops(b, m, err);
	nf_clock_model_destroy(m);
	rc = rc ? rc : resolve_deps(b, err);
	rc = rc ? rc : nf_kernel_ingest_finish(b->kernel, err);
	rc = rc ? rc : write_meta(b, err);
	if (rc)
		return rc;
	for (int i = 0; i < ST_COUNT; i++) {
		sqlite3_finalize(b->st[i]);
		b->st[i] = NULL;
	}
	if (exec_sql(b,
		     "DROP TABLE temp.t_ops; DROP TABLE temp.t_entries; DROP TABLE temp.t_lost;"
		     "DROP TABLE temp.t_cal; DROP TABLE temp.t_fit; DROP TABLE temp.t_sigs; DROP TABLE temp.t_unk;",
		     err, "drop staging") ||
	    exec_sql(b, nf_timeline_views_sql, err, "schemas/timeline-views.sql") ||
	    exec_sql(b, "COMMIT", err, "commit"))
		return NF_ESQL;
	b->in_txn = false;
	return 0;
}
