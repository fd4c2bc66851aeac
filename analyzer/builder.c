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
 */
#include "builder.h"
#include "bulk.h"
#include "kernel_ingest.h"
#include "spill.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

static const char *const status_name[] = {
	[OS_COMPLETE] = "complete", [OS_LOST] = "lost", [OS_ZERO] = "zero_timestamp",
	[OS_UNMATCHED] = "unmatched", [OS_LEGACY] = "legacy",
	[OS_REPEATED] = "repeated_timestamp",
};

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
	struct u64map thr_fence, thr_nofence;
	uint64_t run_key, run_n;
	bool run_known;
};

#define FENCE_CROSS_ADAPTER 1u

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
#define UNK_SCAN 4096u

/* Sort records of the dependency pass. */
struct sig_rec {  /* a signal whose end is known: GPU op or CPU signal */
	int64_t fence, end, id, value;
	int32_t kind;  /* 0 CPU signal, 1 GPU op (CPU first on equal ends) */
	int32_t pad;
};
struct unk_rec {  /* a GPU signal whose end is unknown */
	int64_t fence, value, id, queued;
};
struct wait_rec { /* a wait that completed */
	int64_t fence, value, id, end, queue, stall;
	int32_t has_fence, has_stall;
};
struct res_rec {  /* a deps row: what released wait wait_id, and a late releaser */
	int64_t wait_id, signal_id, cpu_id, stall;
	int64_t fence, value, end, queue, sig_end;  /* for the causality anomaly */
	int32_t has_stall, late, kind, pad;
	int64_t late_id;  /* the first signal to reach the value, when it ended too late */
};

enum stmt_id {
	ST_ADAPTER, ST_QUEUE, ST_QUEUE_STOP, ST_FENCE, ST_FENCE_DESTROY, ST_HANDLE, ST_HANDLE_CLOSE,
	ST_LOST, ST_CAL, ST_CPU_WAIT, ST_CPU_UNWAIT, ST_CPU_SIGNAL, ST_INTERRUPT, ST_MONITORED,
	ST_ANOMALY, ST_TRUTH, ST_COUNT
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
};

/* Small staging tables: overruns (their times need the clock fit) and the clock. */
static const char staging_sql[] =
	"CREATE TEMP TABLE t_lost(adapter INTEGER, queue INTEGER, log INTEGER, count INTEGER, "
	"  prev_gpu INTEGER, next_gpu INTEGER, detail TEXT);"
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
	bool ops_late;           /* an operation reached the spill out of id order */
	int64_t next_cpu_signal;
	struct u64map handles;   /* local handle -> global fence */
	struct u64map fences;    /* global fence -> FENCE_* flags */
	struct u64map initial;   /* global fence -> initial value */
	struct u64map queues;    /* adapter<<32 | hwqueue -> index into qs */
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
	struct nf_sorter *sigs;  /* signals with a known end (CPU ones while streaming) */
	struct nf_timeline_kernel_ingest *kernel; /* kernel_ingest.c, created at the first kernel event */
	struct nf_bulk *bulk;    /* bulk.c: the big tables load through it */
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

/* A CPU time the timeline can hold: within +-2^62 ns of the session start
 * (beyond, sums and differences of times could overflow). */
static bool cpu_time_ok(const struct nf_timeline_builder *b, uint64_t ticks)
{
	long double ns = cpu_ns_exact(b, ticks);

	return ns >= -(long double)NF_GPU_TS_MAX && ns <= (long double)NF_GPU_TS_MAX;
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

#define CMP(a, b) ((a) < (b) ? -1 : (a) > (b) ? 1 : 0)

static int cmp_sig(const void *pa, const void *pb)
{
	const struct sig_rec *a = pa, *b = pb;
	int c = CMP(a->fence, b->fence);

	if (!c)
		c = CMP(a->end, b->end);
	if (!c)
		c = CMP(a->kind, b->kind);
	return c ? c : CMP(a->id, b->id);
}

static int cmp_unk(const void *pa, const void *pb)
{
	const struct unk_rec *a = pa, *b = pb;
	int c = CMP(a->fence, b->fence);

	if (!c)
		c = CMP(a->value, b->value);
	return c ? c : CMP(a->id, b->id);
}

static int cmp_wait(const void *pa, const void *pb)
{
	const struct wait_rec *a = pa, *b = pb;
	int c = CMP(a->has_fence, b->has_fence);

	if (!c)
		c = CMP(a->fence, b->fence);
	if (!c)
		c = CMP(a->value, b->value);
	return c ? c : CMP(a->id, b->id);
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
	b->ops = nf_spill_create(b->spill_dir, sizeof(struct op_rec), err);
	if (!b->ops)
		goto out_free;
	b->sigs = nf_sorter_create(b->spill_dir, sizeof(struct sig_rec), SORT_BUDGET, cmp_sig, err);
	if (!b->sigs)
		goto out_free;
	b->bulk = nf_bulk_register(db, err);
	if (!b->bulk)
		goto out_free;
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
	nf_timeline_kernel_ingest_destroy(b->kernel);
	map_free(&b->handles);
	map_free(&b->fences);
	map_free(&b->initial);
	map_free(&b->queues);
	for (size_t i = 0; i < b->n_qs; i++) {
		for (int l = 0; l < 2; l++) {
			free(b->qs[i].log[l].fifo);
			free(b->qs[i].log[l].spans);
		}
		map_free(&b->qs[i].thr_fence);
		map_free(&b->qs[i].thr_nofence);
	}
	free(b->qs);
	free(b->legacy);
	free(b->ring);
	free(b->ready);
	nf_spill_destroy(b->ops);
	nf_sorter_destroy(b->sigs);
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
		b->qs[b->n_qs].adapter = adapter;
		b->qs[b->n_qs].hwqueue = hwqueue;
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

/* ---- operations: matching while streaming ---- */

static int oom(struct nf_error *err)
{
	return nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
}

/* Hands a finished operation to the spill, in id order through the ring. */
static int op_done(struct nf_timeline_builder *b, const struct op_rec *o, struct nf_error *err)
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

	b->ring[i] = *o;
	b->ready[i] = 1;
	for (i = (size_t)b->ring_base % RING_CAP; b->ready[i]; i = (size_t)b->ring_base % RING_CAP) {
		b->ready[i] = 0;
		if ((rc = nf_spill_put(b->ops, &b->ring[i], err)) != 0)
			return rc;
		b->ring_base++;
	}
	return 0;
}

/* Spills what is left in the ring, in id order. */
static int ring_flush(struct nf_timeline_builder *b, struct nf_error *err)
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
static int settle_before(struct nf_timeline_builder *b, struct log_state *ls, int64_t before,
			 struct nf_error *err)
{
	struct op_rec *f;

	while ((f = fifo_front(ls)) != NULL && f->ord < before) {
		struct op_rec o = *f;
		int rc;

		fifo_pop(ls);
		b->pending--;
		classify_missing(ls, &o);
		if ((rc = op_done(b, &o, err)) != 0)
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
	struct u64map *m = q->run_known ? &q->thr_fence : &q->thr_nofence;
	uint64_t *v;

	if (!q->run_n)
		return 0;
	v = map_find(m, q->run_key);
	if (v)
		*v += q->run_n;
	else if (map_put(m, q->run_key, q->run_n))
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
static int write_queue_threads(struct nf_timeline_builder *b, struct nf_error *err)
{
	sqlite3_stmt *s = NULL;
	int rc = 0;

	if (b->n_qs == 0)
		return 0;
	if (sqlite3_prepare_v2(b->db, "INSERT INTO queue_threads(queue, fence, thread, ops) "
				      "VALUES (?1, ?2, ?3, ?4)", -1, &s, NULL) != SQLITE_OK)
		return sql_err(b, err, "prepare queue_threads");
	for (size_t i = 0; i < b->n_qs && rc == 0; i++) {
		struct queue_state *q = &b->qs[i];

		if (flush_thread_run(q)) {
			rc = oom(err);
			break;
		}
		for (int known = 1; known >= 0 && rc == 0; known--) {
			const struct u64map *m = known ? &q->thr_fence : &q->thr_nofence;

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
					rc = sql_err(b, err, "insert queue_threads");
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
		return oom(err);
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
		return oom(err);
	if (b->pending >= MAX_PENDING) {
		/* Bounded memory: the oldest waiting operation of this log gives up. */
		struct op_rec *f = fifo_front(ls);
		int rc;

		if (f && (rc = settle_before(b, ls, f->ord + 1, err)) != 0)
			return rc;
	}
	if (fifo_push(ls, &o))
		return oom(err);
	b->pending++;
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
			return op_done(b, &o, err);
		}
	}
	if (!log_for(b, adapter, hwqueue, NF_LOG_WAITS)) /* its queue gets a queues row */
		return oom(err);
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
		return op_done(b, &o, err);
	}
	o.queued = o.observed = now;
	o.flags |= OPF_QUEUED | OPF_OBS;
	if (b->n_legacy == b->cap_legacy) {
		size_t cap = b->cap_legacy ? b->cap_legacy * 2 : 16;
		struct op_rec *n = realloc(b->legacy, cap * sizeof(*n));

		if (!n)
			return oom(err);
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
		return oom(err);
	o.log = NF_LOG_SIGNALS;
	o.handle = (uint32_t)ev->f[NFF_GPU_SIGNAL_LEGACY_fence];
	o.value = (int64_t)ev->f[NFF_GPU_SIGNAL_LEGACY_value];
	o.status = OS_LEGACY;
	o.queued = o.end = ns_of(b, ev->ts);
	o.flags = OPF_QUEUED | OPF_END;
	op_fence(b, &o);
	return op_done(b, &o, err);
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
	/* The first creation's initial value holds, as in the fences table. */
	if ((!known && map_put(&b->initial, global, ev->f[NFF_FENCE_START_initial_value])) ||
	    map_put(&b->fences, global, fflags) || map_put(&b->handles, handle, global))
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
	if (!cpu_time_ok(b, ev->ts)) {
		/* An event the CPU clock cannot place (its tick count, start and
		 * frequency give a time beyond 2^62 ns): a finding, not a row with
		 * an impossible time. */
		char detail[200];
		const struct nf_event_desc *d = nf_event_desc(ev->id);

		snprintf(detail, sizeof(detail),
			 "%s at CPU tick %" PRIu64 " is beyond 2^62 ns from the session start: left out",
			 d ? d->name : "an event", ev->ts);
		return add_anomaly(b, "out_of_range", 0, false, NULL, NULL, NULL, 0, detail, err);
	}
	if (ev->id != NF_EV_TRUTH_OP && ev->id != NF_EV_TRUTH_LOG &&
	    (!b->any_ts || ev->ts > b->max_ts)) {
		b->max_ts = ev->ts;
		b->any_ts = true;
	}
	if (nf_event_desc(ev->id) && nf_event_desc(ev->id)->stream == NF_STREAM_KERNEL)
		return nf_timeline_kernel_ingest_event(&b->kernel, b->db, b->bulk, now, ev, err);
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
			struct sig_rec r = { fence, now, id, (int64_t)f[NFF_CPU_SIGNAL_value], 0, 0 };

			rc = nf_sorter_add(b->sigs, &r, err);
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
			return add_anomaly(b, "out_of_range", 0, false, NULL, &now, &now, 0, detail, err);
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
		/* The replay's 'overrun' rows count these entries; the flag repeats the
		 * count in its detail only, so that sum(lost_entries) counts each once. */
		return add_anomaly(b, "os_overrun_flag", (int64_t)f[NFF_LOG_OVERRUN_hwqueue], true,
				   log_name((uint32_t)f[NFF_LOG_OVERRUN_log_type]), &now, &now, 0,
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
	struct op_rec *f, o;
	int64_t at;
	int rc;

	if (b->finished)
		return nf_error_set(err, NF_ESTATE, "timeline: builder already finished");
	if (!ls)
		return oom(err);
	log_advance(ls, e->epoch);
	if (e->epoch < ls->epoch)
		return 0; /* a stale epoch: its place in the sequence is unknown */
	log_saw(ls, e->seq + 1);
	at = (int64_t)(ls->base + e->seq);
	/* Entries come in position order: what waits before this one never got its entry. */
	if ((rc = settle_before(b, ls, at, err)) != 0)
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
			rc = add_anomaly(b, "corrupt", o.queue, true, log_name(e->log_type), NULL, NULL,
					 0, detail, err);
			if (rc)
				return rc;
		} else {
			apply_entry(&o, e);
		}
		return op_done(b, &o, err);
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
	return op_done(b, &o, err);
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
		return oom(err);
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
				return oom(err);
			ls->spans = n;
			ls->s_cap = cap;
		}
		ls->spans[ls->s_n++] = sp;
		/* The operations up to the end of the span will get no entry. */
		if ((rc = settle_before(b, ls, sp.first + sp.count, err)) != 0)
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

	return add_anomaly(b, kind, fd->hwqueue, true, log_name(fd->log_type), at_ok ? &at : NULL,
			   at_ok ? &at : NULL, 0, detail, err);
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
	/* Which build made this file: tells two analyses of one session apart. */
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	snprintf(buf, sizeof(buf), "%ld-%lld.%09ld", (long)getpid(), (long long)now.tv_sec,
		 (long)now.tv_nsec);
	rc = rc ? rc : put_meta(b, "build_id", buf, err);
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
	if (rc == 0 && *has) {
		/* A time the model cannot represent stays NULL. */
		if (!(d >= -(double)NF_GPU_TS_MAX && d <= (double)NF_GPU_TS_MAX))
			*has = false;
		else
			*ns = (int64_t)llround(d);
	}
	return rc;
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

/* ---- finish: times, dependencies, rows ---- */

struct finisher {
	struct nf_timeline_builder *b;
	struct nf_clock_model *m;
	struct nf_sorter *unk, *waits;
	struct nf_error merr;    /* the sorting thread's error */
	/* the merge's state (merge_begin, merge_next) */
	const struct sig_rec *sg;
	struct sig_rec hit;
	bool have_hit, have_cur;
	int64_t runmax, cur;
	/* look-ahead over the unknown-end signals */
	struct unk_rec *ub;
	size_t u_head, u_n;
	bool u_eof;
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
		rc = add_anomaly(f->b, "causality", a.queue, true, log_name(a.log), &a.first_ns,
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
static int put_dep(struct finisher *f, struct nf_bulk_row *row, const struct res_rec *r,
		   struct nf_error *err)
{
	nf_bulk_opt(row, 0, r->signal_id != 0, r->signal_id);
	nf_bulk_int(row, 1, r->wait_id);
	nf_bulk_opt(row, 2, r->cpu_id != 0, r->cpu_id);
	nf_bulk_opt(row, 3, r->has_stall != 0, r->stall);
	if (r->late) {
		char detail[240];
		int64_t end = r->end, sig_end = r->sig_end;

		snprintf(detail, sizeof(detail),
			 "wait op %" PRId64 " (fence %" PRId64 " value %" PRId64 ") ends at %" PRId64
			 " ns, but the first signal to reach its value, %s %" PRId64 ", ends at %" PRId64
			 " ns and no signal of unknown end could have released it: no releaser named",
			 r->wait_id, r->fence, r->value, end, r->kind ? "signal op" : "CPU signal",
			 r->late_id, sig_end);
		return defer_anomaly(f, r->queue, NF_LOG_WAITS, end, sig_end, detail, err);
	}
	return 0;
}

/* Moves a record's GPU ticks onto the CPU time base; drops what cannot be converted. */
static int op_times(struct nf_clock_model *m, struct op_rec *o, struct nf_error *err)
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
	int rc;

	if ((rc = nf_spill_get(b->ops, &o, err)) != 1)
		return rc;
	if ((rc = op_times(f->m, &o, err)) != 0)
		return rc;
	if (f->auto_id && o.id != ++f->last_id)
		return nf_error_set(err, NF_ESTATE, "timeline: operation %" PRId64
				    " reached the load out of order", o.id);
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
	if ((o.flags & OPF_END) && (o.flags & OPF_QUEUED) &&
	    (double)o.end + b->slack_ns < (double)o.queued) {
		char detail[200];
		int64_t q = o.queued, e = o.end;

		snprintf(detail, sizeof(detail),
			 "%s op %" PRId64 " ends at %" PRId64 " ns, before it was queued at %"
			 PRId64 " ns", o.log == NF_LOG_WAITS ? "wait" : "signal", o.id, e, q);
		if ((rc = defer_anomaly(f, o.queue, o.log, e, q, detail, err)) != 0)
			return rc;
	}
	if (o.log == NF_LOG_SIGNALS && (o.flags & OPF_FENCE)) {
		if (o.flags & OPF_END) {
			struct sig_rec r = { o.fence, o.end, o.id, o.value, 1, 0 };

			rc = nf_sorter_add(b->sigs, &r, err);
		} else {
			struct unk_rec r = { o.fence, o.value, o.id,
					     (o.flags & OPF_QUEUED) ? o.queued : INT64_MIN };

			rc = nf_sorter_add(f->unk, &r, err);
		}
	} else if (o.log == NF_LOG_WAITS && (o.flags & OPF_END)) {
		bool st = (o.flags & OPF_OBS) != 0;
		struct wait_rec r = { o.fence, o.value, o.id, o.end, o.queue,
				      st ? o.end - o.observed : 0,
				      (o.flags & OPF_FENCE) != 0, st };

		rc = nf_sorter_add(f->waits, &r, err);
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
	f->auto_id = !b->ops_late && nf_spill_count(b->ops) == (uint64_t)b->next_op_id;
	f->last_id = 0;
	return nf_bulk_run(b->bulk, f->auto_id ?
			   "INSERT INTO fence_ops(queue, adapter, op, fence, handle, value, "
			   "queued_ns, observed_ns, end_ns, status, log_seq, epoch, thread) "
			   "SELECT c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13 "
			   "FROM nf_bulk" :
			   "INSERT INTO fence_ops(id, queue, adapter, op, fence, handle, value, "
			   "queued_ns, observed_ns, end_ns, status, log_seq, epoch, thread) "
			   "SELECT c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13 "
			   "FROM nf_bulk", ops_row, f, nf_clock_model_detached(f->m),
			   "insert fence_ops", err);
}

/* Appends the next unknown-end signal to the look-ahead: 1, 0 at the end, or an error. */
static int unk_fill(struct finisher *f, struct nf_error *err)
{
	const void *p;
	int rc;

	if (f->u_eof)
		return 0;
	rc = nf_sorter_next(f->unk, &p, err);
	if (rc == 1)
		f->ub[(f->u_head + f->u_n++) % UNK_SCAN] = *(const struct unk_rec *)p;
	else if (rc == 0)
		f->u_eof = true;
	return rc;
}

/*
 * A signal whose end is unknown (zero timestamp, lost entry, unmatched) may be
 * the real releaser: the one of lowest value >= the wait's, not queued after
 * the wait ended. Waits come in (fence, value) order, so the look-ahead only
 * moves forward. Sets *id (0: none).
 */
static int unk_find(struct finisher *f, int64_t fence, int64_t value, int64_t limit,
		    int64_t *id, struct nf_error *err)
{
	int rc;

	*id = 0;
	for (;;) {
		if (f->u_n == 0 && (rc = unk_fill(f, err)) != 1)
			return rc;
		const struct unk_rec *u = &f->ub[f->u_head];

		if (u->fence > fence || (u->fence == fence && u->value >= value))
			break;
		f->u_head = (f->u_head + 1) % UNK_SCAN;
		f->u_n--;
	}
	for (size_t i = 0;; i++) {
		if (i == f->u_n) {
			if (f->u_n == UNK_SCAN)
				return 0;
			if ((rc = unk_fill(f, err)) != 1)
				return rc;
		}
		const struct unk_rec *u = &f->ub[(f->u_head + i) % UNK_SCAN];

		if (u->fence != fence)
			return 0;
		if (u->queued == INT64_MIN || u->queued <= limit) {
			*id = u->id;
			return 0;
		}
	}
}

/*
 * Ties each completed wait to the signal that released it: the first signal
 * of its fence, in end order, to reach a value at or above the wait's (GPU
 * signals and CPU signals alike). Signals come sorted by (fence, end), waits
 * by (fence, value): the running maximum of the signaled values only grows,
 * so one forward pass over both answers every wait. merge_begin() starts the
 * pass over the sorted streams; merge_next() gives the next wait's deps row:
 * 1, 0 at the end, or an error.
 */
static int merge_begin(struct finisher *f, struct nf_error *err)
{
	const void *p;
	int rc = nf_sorter_next(f->b->sigs, &p, err);

	if (rc < 0)
		return rc;
	f->sg = rc ? p : NULL;
	f->have_hit = false;
	f->have_cur = false;
	f->runmax = 0;
	f->cur = 0;
	return 0;
}

static int merge_next(struct finisher *f, struct res_rec *out, struct nf_error *err)
{
	struct nf_timeline_builder *b = f->b;
	const void *p;
	int rc;

	if ((rc = nf_sorter_next(f->waits, &p, err)) != 1)
		return rc;
	const struct wait_rec *w = p;
	struct res_rec r = { w->id, 0, 0, w->stall, w->fence, w->value, w->end, w->queue, 0,
			     w->has_stall, 0, 0, 0, 0 };

	if (w->has_fence) {
		uint64_t *init = map_find(&b->initial, (uint64_t)w->fence);
		bool pre = init && (int64_t)*init >= w->value;

		if (!f->have_cur || w->fence != f->cur) {
			f->cur = w->fence;
			f->have_cur = true;
			f->have_hit = false;
		}
		while (!pre && !(f->have_hit && f->runmax >= w->value)) {
			while (f->sg && f->sg->fence < f->cur) {
				if ((rc = nf_sorter_next(b->sigs, &p, err)) < 0)
					return rc;
				f->sg = rc ? p : NULL;
			}
			if (!f->sg || f->sg->fence != f->cur)
				break;
			if (!f->have_hit || f->sg->value > f->runmax) {
				f->hit = *f->sg;
				f->runmax = f->sg->value;
				f->have_hit = true;
			}
			if ((rc = nf_sorter_next(b->sigs, &p, err)) < 0)
				return rc;
			f->sg = rc ? p : NULL;
		}
		/*
		 * A releaser ends no later than its wait, within the clock
		 * merge's error (slack_ns). The first known signal to reach the
		 * value that ends after the wait is only a fallback: a signal of
		 * unknown end (its entry lost, say) queued in time is the better
		 * candidate. One that ends beyond the slack is never named: with
		 * no candidate left the data contradict themselves (causality
		 * anomaly) and the wait gets no releaser.
		 */
		bool found = !pre && f->have_hit && f->runmax >= w->value;
		bool after = found && f->hit.end > w->end;
		bool late = found && (double)f->hit.end > (double)w->end + b->slack_ns;
		int64_t unk = 0;

		if (!pre && (!found || after) &&
		    (rc = unk_find(f, f->cur, w->value, w->end + (int64_t)b->slack_ns, &unk,
				   err)) != 0)
			return rc;
		if (unk) {
			r.signal_id = unk;
		} else if (found) {
			if (!late && f->hit.kind)
				r.signal_id = f->hit.id;
			else if (!late)
				r.cpu_id = f->hit.id;
			r.late = late;
			r.kind = f->hit.kind;
			r.late_id = f->hit.id;
			r.sig_end = f->hit.end;
		}
	}
	*out = r;
	return 1;
}

/* Sorts the signals (known and unknown ends) on a thread while the caller sorts the waits. */
static void *sort_main(void *arg)
{
	struct finisher *f = arg;
	int rc = nf_sorter_sort(f->b->sigs, &f->merr);

	if (rc == 0)
		nf_sorter_sort(f->unk, &f->merr);
	return NULL;
}

/* nf_bulk's row source for deps: the merge, one wait at a time. */
static int deps_row(void *ctx, struct nf_bulk_row *row, struct nf_error *err)
{
	struct finisher *f = ctx;
	struct res_rec r;
	int rc;

	if ((rc = merge_next(f, &r, err)) != 1)
		return rc;
	rc = put_dep(f, row, &r, err);
	return rc ? rc : 1;
}

/*
 * Loads fence_ops (the rows produced on another thread), sorts the signals
 * and the waits on two threads while the indexes and views are created, then
 * loads deps from the merge (produced on another thread too).
 */
static int resolve(struct nf_timeline_builder *b, struct nf_clock_model *m, struct nf_error *err)
{
	struct finisher f = { .b = b, .m = m };
	pthread_t th;
	int rc = NF_ENOMEM;

	nf_error_clear(&f.merr);
	f.unk = nf_sorter_create(b->spill_dir, sizeof(struct unk_rec), SORT_BUDGET, cmp_unk, err);
	f.waits = f.unk ? nf_sorter_create(b->spill_dir, sizeof(struct wait_rec), SORT_BUDGET,
					   cmp_wait, err) : NULL;
	f.anoms = f.waits ? nf_spill_create(b->spill_dir, sizeof(struct anom_rec), err) : NULL;
	f.ub = malloc(UNK_SCAN * sizeof(*f.ub));
	if (!f.anoms) {
		rc = err && err->code ? err->code : NF_ENOMEM; /* the creator's error */
		goto out;
	}
	if (!f.ub) {
		rc = oom(err);
		goto out;
	}
	rc = load_ops(&f, err);
	rc = rc ? rc : flush_anomalies(&f, err);
	if (rc)
		goto out;
	if (pthread_create(&th, NULL, sort_main, &f) != 0) {
		sort_main(&f); /* no thread: one after the other */
		rc = exec_sql(b, nf_timeline_views_sql, err, "schemas/timeline-views.sql");
		rc = rc ? rc : nf_sorter_sort(f.waits, err);
	} else {
		rc = exec_sql(b, nf_timeline_views_sql, err, "schemas/timeline-views.sql");
		rc = rc ? rc : nf_sorter_sort(f.waits, err);
		pthread_join(th, NULL);
	}
	if (rc == 0 && f.merr.code) {
		rc = f.merr.code;
		if (err)
			*err = f.merr;
	}
	rc = rc ? rc : merge_begin(&f, err);
	rc = rc ? rc : nf_bulk_run(b->bulk, "INSERT INTO deps(signal_id, wait_id, cpu_signal, stall_ns) "
				   "SELECT c0, c1, c2, c3 FROM nf_bulk", deps_row, &f, true,
				   "insert deps", err);
	rc = rc ? rc : flush_anomalies(&f, err);
out:
	free(f.ub);
	nf_sorter_destroy(f.unk);
	nf_sorter_destroy(f.waits);
	nf_spill_destroy(f.anoms);
	nf_sorter_destroy(b->sigs);
	b->sigs = NULL;
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
		return sql_err(b, err, "prepare queues");
	for (size_t i = 0; i < b->n_qs && rc == 0; i++) {
		sqlite3_bind_int64(s, 1, b->qs[i].hwqueue);
		sqlite3_bind_int64(s, 2, b->qs[i].adapter);
		if (sqlite3_step(s) != SQLITE_DONE)
			rc = sql_err(b, err, "insert queues");
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
			if ((rc = settle_before(b, &b->qs[i].log[l], INT64_MAX, err)) != 0)
				return rc;
	for (size_t i = 0; i < b->n_legacy; i++)
		if ((rc = op_done(b, &b->legacy[i], err)) != 0)
			return rc;
	b->n_legacy = 0;
	return ring_flush(b, err);
}

int nf_timeline_builder_finish(struct nf_timeline_builder *b, struct nf_error *err)
{
	struct nf_clock_model *m = NULL;
	int rc;

	if (b->finished)
		return nf_error_set(err, NF_ESTATE, "timeline: builder already finished");
	b->finished = true;
	rc = settle_all(b, err);
	rc = rc ? rc : add_seen_queues(b, err);
	rc = rc ? rc : write_queue_threads(b, err);
	rc = rc ? rc : nf_clock_fit(b->db, 0, err);
	if (rc)
		return rc;
	m = nf_clock_model_create(b->db, err);
	if (!m)
		return err && err->code ? err->code : NF_ENOMEM;
	rc = resolve_overruns(b, m, err);
	rc = rc ? rc : resolve(b, m, err);
	nf_clock_model_destroy(m);
	rc = rc ? rc : nf_timeline_kernel_ingest_finish(b->kernel, err);
	rc = rc ? rc : write_meta(b, err);
	if (rc)
		return rc;
	for (int i = 0; i < ST_COUNT; i++) {
		sqlite3_finalize(b->st[i]);
		b->st[i] = NULL;
	}
	if (exec_sql(b, "DROP TABLE temp.t_lost; DROP TABLE temp.t_cal; DROP TABLE temp.t_fit;",
		     err, "drop staging") ||
	    exec_sql(b, "COMMIT", err, "commit"))
		return NF_ESQL;
	b->in_txn = false;
	return 0;
}
