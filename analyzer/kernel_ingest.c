/*
 * Kernel events into the timeline (see kernel_ingest.h and the kernel block of
 * schemas/timeline.sql): interned strings are kept in memory, sched_switch
 * becomes cpu_runs as it streams (one open run per CPU), dma_fence events are
 * staged per (context, seqno) and per wait in TEMP tables and turned into
 * fence_ops, cpu_waits and deps at finish. Memory is bounded by the number of
 * distinct strings and CPUs, never by the number of events.
 */
#include "kernel_ingest.h"
#include "bulk.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/util_hash.h"

/* Interned strings and CPUs kept at most (a corrupt session cannot exhaust memory). */
#define NF_KI_MAX_STRINGS (1u << 22)
#define NF_KI_MAX_CPUS 8192u

enum ki_stmt {
	KS_STR_TIMELINE, KS_FENCE_SEEN, KS_WAIT, KS_RUN,
	KS_THREAD, KS_RAW, KS_LOST, KS_GPU, KS_VBLANK, KS_MARKER, KS_TASK, KS_COUNT
};

static const char *const ki_sql[KS_COUNT] = {
	[KS_STR_TIMELINE] = "INSERT OR IGNORE INTO kernel_timelines(queue, context, driver, timeline) "
			    "VALUES (?1 + 4294967296, ?1, ?2, ?3)",
	/* ?3 init, ?4 emit, ?5 signaled: the first time each was seen is kept. */
	[KS_FENCE_SEEN] = "INSERT INTO temp.k_fences(context, seqno, init_ns, emit_ns, signal_ns, emit_tid) "
			  "VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(context, seqno) DO UPDATE SET "
			  "init_ns = coalesce(init_ns, excluded.init_ns), "
			  "emit_ns = coalesce(emit_ns, excluded.emit_ns), "
			  "signal_ns = coalesce(signal_ns, excluded.signal_ns), "
			  "emit_tid = coalesce(emit_tid, excluded.emit_tid)",
	[KS_WAIT] = "INSERT INTO temp.k_waits(tid, context, seqno, start_ns, end_ns) "
		    "VALUES (?1, ?2, ?3, ?4, ?5)",
	[KS_RUN] = "INSERT INTO cpu_runs(thread, cpu, start_ns, end_ns, end_state) VALUES (?1, ?2, ?3, ?4, ?5)",
	[KS_THREAD] = "INSERT INTO kernel_threads(thread, comm) VALUES (?1, ?2) "
		      "ON CONFLICT(thread) DO UPDATE SET comm = excluded.comm",
	[KS_RAW] = "INSERT INTO kernel_events(ts_ns, cpu, thread, name, fields) VALUES (?1, ?2, ?3, ?4, ?5)",
	[KS_LOST] = "INSERT INTO anomalies(kind, queue, log, first_ns, last_ns, lost_entries, detail) "
		    "VALUES ('kernel_lost', NULL, NULL, ?1, ?1, ?2, ?3)",
	[KS_GPU] = "INSERT INTO temp.k_gpu(ts, tid, kind, ring, job, context, seqno, fence, dep_context, "
		   "dep_seqno, flags) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
	[KS_VBLANK] = "INSERT INTO vblanks(ts_ns, crtc, seq) VALUES (?1, ?2, ?3)",
	[KS_MARKER] = "INSERT INTO markers(ts_ns, thread, cpu, text) VALUES (?1, ?2, ?3, ?4)",
	/* A saved cmdline name never replaces one the sched events gave. */
	[KS_TASK] = "INSERT INTO kernel_threads(thread, process, comm) VALUES (?1, ?2, ?3) "
		    "ON CONFLICT(thread) DO UPDATE SET process = coalesce(excluded.process, process), "
		    "comm = coalesce(comm, excluded.comm)",
};

static const char ki_staging_sql[] =
	"CREATE TEMP TABLE k_fences(context INTEGER, seqno INTEGER, init_ns INTEGER, emit_ns INTEGER, "
	"  signal_ns INTEGER, emit_tid INTEGER, op_id INTEGER, PRIMARY KEY(context, seqno)) WITHOUT ROWID;"
	"CREATE TEMP TABLE k_waits(tid INTEGER, context INTEGER, seqno INTEGER, start_ns INTEGER, "
	"  end_ns INTEGER);"
	"CREATE TEMP TABLE k_gpu(ts INTEGER, tid INTEGER, kind INTEGER, ring TEXT, job INTEGER, "
	"  context INTEGER, seqno INTEGER, fence INTEGER, dep_context INTEGER, dep_seqno INTEGER, "
	"  flags INTEGER, kkey TEXT);";

/* A CPU wait that has started and not ended yet (kept in memory: few at a time). */
struct ki_wait {
	int64_t tid, ctx, seq, start_ns;
};

/* Open waits kept at most; past it a start is written as a wait that never ended. */
#define NF_KI_MAX_OPEN_WAITS 65536u

struct ki_cpu {
	bool known;          /* a sched_switch was seen on this CPU */
	bool has_start;      /* the running task's start is known */
	uint32_t tid;        /* task running */
	int64_t start_ns;
};

/* The maps are core's nf_u64map (core/util_hash.h), at most this many keys. */
#define NF_KI_MAX_KEYS (1u << 22)

/* A run waiting in the batch (see ki_run_flush). */
struct ki_run {
	int64_t tid, cpu, start_ns, end_ns, state;
	bool has_start, has_end;
};

/* Runs batched before one bulk load (a bound on memory: ~1.5 MB). */
#define NF_KI_RUN_BATCH 32768u

struct nf_timeline_kernel_ingest {
	sqlite3 *db;
	struct nf_bulk *bulk;    /* NULL: runs are inserted one by one */
	struct ki_run *runs;
	size_t n_runs, run_next;
	struct nf_u64map comms;     /* thread -> KernelString id of the comm last written */
	struct nf_u64map contexts;  /* dma_fence contexts already in kernel_timelines */
	sqlite3_stmt *st[KS_COUNT];
	char **strings;      /* [id] -> text, id from 1 */
	size_t n_strings;
	struct ki_cpu *cpus;
	size_t n_cpus;
	struct ki_wait *waits;   /* open waits, in start order */
	size_t n_waits, cap_waits;
	bool finished;
};

static int ki_sql_err(struct nf_timeline_kernel_ingest *ki, struct nf_error *err, const char *what)
{
	return nf_error_set(err, NF_ESQL, "timeline: kernel events: %s: %s", what,
			    sqlite3_errmsg(ki->db));
}

static int ki_exec(struct nf_timeline_kernel_ingest *ki, const char *sql, struct nf_error *err)
{
	char *msg = NULL;

	if (sqlite3_exec(ki->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		nf_error_set(err, NF_ESQL, "timeline: kernel events: %s", msg ? msg : sqlite3_errmsg(ki->db));
		sqlite3_free(msg);
		return NF_ESQL;
	}
	return 0;
}

static int ki_step(struct nf_timeline_kernel_ingest *ki, enum ki_stmt id, struct nf_error *err)
{
	sqlite3_stmt *s = ki->st[id];
	int rc = sqlite3_step(s);

	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	if (rc != SQLITE_DONE)
		return ki_sql_err(ki, err, ki_sql[id]);
	return 0;
}

void nf_timeline_kernel_ingest_destroy(struct nf_timeline_kernel_ingest *ki)
{
	if (!ki)
		return;
	for (int i = 0; i < KS_COUNT; i++)
		sqlite3_finalize(ki->st[i]);
	for (size_t i = 0; i < ki->n_strings; i++)
		free(ki->strings[i]);
	free(ki->strings);
	free(ki->cpus);
	free(ki->waits);
	free(ki->runs);
	nf_u64map_free(&ki->comms);
	nf_u64map_free(&ki->contexts);
	free(ki);
}

static struct nf_timeline_kernel_ingest *ki_create(sqlite3 *db, struct nf_error *err)
{
	struct nf_timeline_kernel_ingest *ki = calloc(1, sizeof(*ki));

	if (!ki) {
		nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
		return NULL;
	}
	ki->db = db;
	ki->comms.max_keys = ki->contexts.max_keys = NF_KI_MAX_KEYS;
	if (ki_exec(ki, ki_staging_sql, err))
		goto out_free;
	for (int i = 0; i < KS_COUNT; i++)
		if (sqlite3_prepare_v2(db, ki_sql[i], -1, &ki->st[i], NULL) != SQLITE_OK) {
			ki_sql_err(ki, err, ki_sql[i]);
			goto out_free;
		}
	return ki;
out_free:
	nf_timeline_kernel_ingest_destroy(ki);
	return NULL;
}

/* The interned string id, or NULL (0: none; unknown ids read as NULL too). */
static const char *ki_str(const struct nf_timeline_kernel_ingest *ki, uint64_t id)
{
	if (id == 0 || id > ki->n_strings)
		return NULL;
	return ki->strings[id - 1];
}

static int ki_string(struct nf_timeline_kernel_ingest *ki, const struct nf_event *ev, struct nf_error *err)
{
	uint64_t id = ev->f[NFF_KERNEL_STRING_id];
	char *dup;

	/* Ids come in order from 1; a repeated id replaces (a new session part). */
	if (id == 0 || id > (uint64_t)ki->n_strings + 1 || id > NF_KI_MAX_STRINGS)
		return nf_error_set(err, NF_EFORMAT,
				    "timeline: kernel events: KernelString id %" PRIu64
				    " out of order (expected at most %zu)", id, ki->n_strings + 1);
	dup = strdup(ev->str ? ev->str : "");
	if (!dup)
		return nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
	if (id <= ki->n_strings) {
		free(ki->strings[id - 1]);
		ki->strings[id - 1] = dup;
		return 0;
	}
	char **ns = realloc(ki->strings, (ki->n_strings + 1) * sizeof(*ns));
	if (!ns) {
		free(dup);
		return nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
	}
	ki->strings = ns;
	ki->strings[ki->n_strings++] = dup;
	return 0;
}

static struct ki_cpu *ki_cpu(struct nf_timeline_kernel_ingest *ki, uint64_t cpu, struct nf_error *err)
{
	if (cpu >= NF_KI_MAX_CPUS) {
		nf_error_set(err, NF_EFORMAT, "timeline: kernel events: CPU %" PRIu64 " out of range", cpu);
		return NULL;
	}
	if (cpu >= ki->n_cpus) {
		struct ki_cpu *nc = realloc(ki->cpus, (size_t)(cpu + 1) * sizeof(*nc));

		if (!nc) {
			nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
			return NULL;
		}
		memset(nc + ki->n_cpus, 0, (size_t)(cpu + 1 - ki->n_cpus) * sizeof(*nc));
		ki->cpus = nc;
		ki->n_cpus = (size_t)cpu + 1;
	}
	return &ki->cpus[cpu];
}

static void bind_text_or_null(sqlite3_stmt *s, int col, const char *t)
{
	if (t)
		sqlite3_bind_text(s, col, t, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(s, col);
}

/* Names a thread; written only when its name changes (sched events repeat it). */
static int ki_thread(struct nf_timeline_kernel_ingest *ki, uint64_t tid, uint64_t comm_id,
		     struct nf_error *err)
{
	const char *comm = ki_str(ki, comm_id);
	uint64_t *known;

	if (tid == 0 || !comm)
		return 0;
	if ((known = nf_u64map_find(&ki->comms, tid)) && *known == comm_id)
		return 0;
	if (nf_u64map_put(&ki->comms, tid, comm_id))
		return nf_error_set(err, NF_ENOMEM, "timeline: too many kernel threads");
	sqlite3_bind_int64(ki->st[KS_THREAD], 1, (int64_t)tid);
	sqlite3_bind_text(ki->st[KS_THREAD], 2, comm, -1, SQLITE_TRANSIENT);
	return ki_step(ki, KS_THREAD, err);
}

static int ki_run_row(void *ctx, struct nf_bulk_row *row, struct nf_error *err)
{
	struct nf_timeline_kernel_ingest *ki = ctx;
	const struct ki_run *r;

	(void)err;
	if (ki->run_next == ki->n_runs)
		return 0;
	r = &ki->runs[ki->run_next++];
	nf_bulk_int(row, 0, r->tid);
	nf_bulk_int(row, 1, r->cpu);
	nf_bulk_opt(row, 2, r->has_start, r->start_ns);
	nf_bulk_opt(row, 3, r->has_end, r->end_ns);
	nf_bulk_opt(row, 4, r->has_end, r->state);
	return 1;
}

/*
 * The batched runs into cpu_runs by one INSERT ... SELECT from nf_bulk: a
 * prepared INSERT per run paid SQLite's statement entry, bind and reset on
 * each (context switches are most of a real capture's events).
 */
static int ki_run_flush(struct nf_timeline_kernel_ingest *ki, struct nf_error *err)
{
	int rc;

	if (!ki->n_runs)
		return 0;
	ki->run_next = 0;
	rc = nf_bulk_run(ki->bulk, "INSERT INTO cpu_runs(thread, cpu, start_ns, end_ns, end_state) "
			 "SELECT c0, c1, c2, c3, c4 FROM nf_bulk", ki_run_row, ki, false,
			 "timeline: kernel events: cpu_runs", err);
	ki->n_runs = 0;
	return rc;
}

/* One run: batched when bulk loading is available, else inserted now. */
static int ki_run(struct nf_timeline_kernel_ingest *ki, int64_t tid, int64_t cpu, bool has_start, int64_t start,
		  bool has_end, int64_t end, int64_t state, struct nf_error *err)
{
	if (!ki->bulk) {
		sqlite3_stmt *s = ki->st[KS_RUN];

		sqlite3_bind_int64(s, 1, tid);
		sqlite3_bind_int64(s, 2, cpu);
		if (has_start)
			sqlite3_bind_int64(s, 3, start);
		if (has_end) {
			sqlite3_bind_int64(s, 4, end);
			sqlite3_bind_int64(s, 5, state);
		}
		return ki_step(ki, KS_RUN, err);
	}
	if (!ki->runs && !(ki->runs = malloc(NF_KI_RUN_BATCH * sizeof(*ki->runs))))
		return nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
	ki->runs[ki->n_runs++] = (struct ki_run){ tid, cpu, start, end, state, has_start, has_end };
	return ki->n_runs == NF_KI_RUN_BATCH ? ki_run_flush(ki, err) : 0;
}

static int ki_switch(struct nf_timeline_kernel_ingest *ki, int64_t ns, const struct nf_event *ev,
		     struct nf_error *err)
{
	const uint64_t *f = ev->f;
	uint32_t prev = (uint32_t)f[NFF_KERNEL_SCHED_SWITCH_prev_tid];
	uint32_t next = (uint32_t)f[NFF_KERNEL_SCHED_SWITCH_next_tid];
	struct ki_cpu *c = ki_cpu(ki, f[NFF_KERNEL_SCHED_SWITCH_cpu], err);
	int rc;

	if (!c)
		return err->code;
	if (prev != 0) {
		/* The run that ends here; its start is known when we saw it switch in. */
		bool known = c->known && c->has_start && c->tid == prev;

		if ((rc = ki_run(ki, prev, (int64_t)f[NFF_KERNEL_SCHED_SWITCH_cpu], known, known ? c->start_ns : 0,
				 true, ns, (int64_t)f[NFF_KERNEL_SCHED_SWITCH_prev_state], err)))
			return rc;
	}
	c->known = true;
	c->has_start = true;
	c->tid = next;
	c->start_ns = ns;
	if ((rc = ki_thread(ki, prev, f[NFF_KERNEL_SCHED_SWITCH_prev_comm], err)))
		return rc;
	return ki_thread(ki, next, f[NFF_KERNEL_SCHED_SWITCH_next_comm], err);
}

static int ki_raw(struct nf_timeline_kernel_ingest *ki, int64_t ns, uint64_t cpu, uint64_t tid,
		  const char *name, const char *fields, struct nf_error *err)
{
	sqlite3_stmt *s = ki->st[KS_RAW];

	sqlite3_bind_int64(s, 1, ns);
	sqlite3_bind_int64(s, 2, (int64_t)cpu);
	sqlite3_bind_int64(s, 3, (int64_t)tid);
	bind_text_or_null(s, 4, name);
	bind_text_or_null(s, 5, fields);
	return ki_step(ki, KS_RAW, err);
}

static int ki_wakeup(struct nf_timeline_kernel_ingest *ki, int64_t ns, const struct nf_event *ev,
		     struct nf_error *err)
{
	const uint64_t *f = ev->f;
	const char *comm = ki_str(ki, f[NFF_KERNEL_SCHED_WAKEUP_comm]);
	char fields[160];

	snprintf(fields, sizeof(fields), "comm=%s pid=%" PRIu32 " prio=%" PRId32 " target_cpu=%03" PRIu32,
		 comm ? comm : "", (uint32_t)f[NFF_KERNEL_SCHED_WAKEUP_tid],
		 (int32_t)(uint32_t)f[NFF_KERNEL_SCHED_WAKEUP_prio],
		 (uint32_t)f[NFF_KERNEL_SCHED_WAKEUP_target_cpu]);
	int rc = ki_thread(ki, f[NFF_KERNEL_SCHED_WAKEUP_tid], f[NFF_KERNEL_SCHED_WAKEUP_comm], err);
	return rc ? rc : ki_raw(ki, ns, f[NFF_KERNEL_SCHED_WAKEUP_cpu],
				f[NFF_KERNEL_SCHED_WAKEUP_waker], "sched:sched_wakeup", fields, err);
}

/* The dma_fence events share one layout (checked at compile time). */
_Static_assert((int)NFF_KERNEL_DMA_FENCE_SIGNALED_context == (int)NFF_KERNEL_DMA_FENCE_INIT_context &&
	       (int)NFF_KERNEL_DMA_FENCE_WAIT_START_seqno == (int)NFF_KERNEL_DMA_FENCE_INIT_seqno &&
	       (int)NFF_KERNEL_DMA_FENCE_EMIT_tid == (int)NFF_KERNEL_DMA_FENCE_INIT_tid &&
	       (int)NFF_KERNEL_DMA_FENCE_WAIT_END_driver == (int)NFF_KERNEL_DMA_FENCE_INIT_driver &&
	       (int)NFF_KERNEL_DMA_FENCE_DESTROY_timeline == (int)NFF_KERNEL_DMA_FENCE_INIT_timeline,
	       "dma_fence events share their field layout");

/* One row of temp.k_waits: a wait with its start and end when known. */
static int ki_wait_row(struct nf_timeline_kernel_ingest *ki, int64_t tid, int64_t ctx, int64_t seq, bool has_start,
		       int64_t start, bool has_end, int64_t end, struct nf_error *err)
{
	sqlite3_stmt *s = ki->st[KS_WAIT];

	sqlite3_bind_int64(s, 1, tid);
	sqlite3_bind_int64(s, 2, ctx);
	sqlite3_bind_int64(s, 3, seq);
	if (has_start)
		sqlite3_bind_int64(s, 4, start);
	else
		sqlite3_bind_null(s, 4);
	if (has_end)
		sqlite3_bind_int64(s, 5, end);
	else
		sqlite3_bind_null(s, 5);
	return ki_step(ki, KS_WAIT, err);
}

static int ki_fence(struct nf_timeline_kernel_ingest *ki, int64_t ns, const struct nf_event *ev,
		    struct nf_error *err)
{
	const uint64_t *f = ev->f;
	int64_t ctx = (int64_t)(uint32_t)f[NFF_KERNEL_DMA_FENCE_INIT_context];
	int64_t seq = (int64_t)f[NFF_KERNEL_DMA_FENCE_INIT_seqno];
	int64_t tid = (int64_t)(uint32_t)f[NFF_KERNEL_DMA_FENCE_INIT_tid];
	sqlite3_stmt *s;
	int rc;

	if (!nf_u64map_find(&ki->contexts, (uint64_t)ctx)) {
		s = ki->st[KS_STR_TIMELINE];
		sqlite3_bind_int64(s, 1, ctx);
		bind_text_or_null(s, 2, ki_str(ki, f[NFF_KERNEL_DMA_FENCE_INIT_driver]));
		bind_text_or_null(s, 3, ki_str(ki, f[NFF_KERNEL_DMA_FENCE_INIT_timeline]));
		if ((rc = ki_step(ki, KS_STR_TIMELINE, err)))
			return rc;
		if (nf_u64map_put(&ki->contexts, (uint64_t)ctx, 1))
			return nf_error_set(err, NF_ENOMEM, "timeline: too many dma_fence contexts");
	}
	switch (ev->id) {
	case NF_EV_KERNEL_DMA_FENCE_INIT:
	case NF_EV_KERNEL_DMA_FENCE_EMIT:
	case NF_EV_KERNEL_DMA_FENCE_SIGNALED:
		s = ki->st[KS_FENCE_SEEN];
		sqlite3_bind_int64(s, 1, ctx);
		sqlite3_bind_int64(s, 2, seq);
		if (ev->id == NF_EV_KERNEL_DMA_FENCE_INIT)
			sqlite3_bind_int64(s, 3, ns);
		if (ev->id == NF_EV_KERNEL_DMA_FENCE_EMIT) {
			sqlite3_bind_int64(s, 4, ns);
			sqlite3_bind_int64(s, 6, tid);
		}
		if (ev->id == NF_EV_KERNEL_DMA_FENCE_SIGNALED)
			sqlite3_bind_int64(s, 5, ns);
		return ki_step(ki, KS_FENCE_SEEN, err);
	case NF_EV_KERNEL_DMA_FENCE_WAIT_START:
		if (ki->n_waits == NF_KI_MAX_OPEN_WAITS)
			return ki_wait_row(ki, tid, ctx, seq, true, ns, false, 0, err);
		if (ki->n_waits == ki->cap_waits) {
			size_t ncap = ki->cap_waits ? ki->cap_waits * 2 : 64;
			struct ki_wait *nw = realloc(ki->waits, ncap * sizeof(*nw));

			if (!nw)
				return nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
			ki->waits = nw;
			ki->cap_waits = ncap;
		}
		ki->waits[ki->n_waits++] = (struct ki_wait){ tid, ctx, seq, ns };
		return 0;
	case NF_EV_KERNEL_DMA_FENCE_WAIT_END:
		/* The latest open wait of this thread on this fence; none: it began
		 * before the trace did. */
		for (size_t i = ki->n_waits; i-- > 0;) {
			struct ki_wait *w = &ki->waits[i];

			if (w->tid == tid && w->ctx == ctx && w->seq == seq) {
				int64_t start = w->start_ns;

				memmove(w, w + 1, (ki->n_waits - i - 1) * sizeof(*w));
				ki->n_waits--;
				return ki_wait_row(ki, tid, ctx, seq, true, start, true, ns, err);
			}
		}
		return ki_wait_row(ki, tid, ctx, seq, false, 0, true, ns, err);
	default:
		/* enable_signal and destroy: kept as they came. */
		{
			char fields[96];

			snprintf(fields, sizeof(fields), "context=%" PRId64 " seqno=%" PRId64, ctx, seq);
			return ki_raw(ki, ns, f[NFF_KERNEL_DMA_FENCE_INIT_cpu], (uint64_t)tid,
				      ev->id == NF_EV_KERNEL_DMA_FENCE_DESTROY ? "dma_fence:dma_fence_destroy"
									     : "dma_fence:dma_fence_enable_signal",
				      fields, err);
		}
	}
}

int nf_timeline_kernel_ingest_event(struct nf_timeline_kernel_ingest **kip, sqlite3 *db, struct nf_bulk *bulk, int64_t ns,
			   const struct nf_event *ev, struct nf_error *err)
{
	struct nf_timeline_kernel_ingest *ki = *kip;
	const uint64_t *f = ev->f;

	if (!ki) {
		ki = ki_create(db, err);
		if (!ki)
			return err && err->code ? err->code : NF_ENOMEM;
		ki->bulk = bulk;
		*kip = ki;
	}
	if (ki->finished)
		return nf_error_set(err, NF_ESTATE, "timeline: kernel events after finish");
	switch (ev->id) {
	case NF_EV_KERNEL_STRING:
		return ki_string(ki, ev, err);
	case NF_EV_KERNEL_SCHED_SWITCH:
		return ki_switch(ki, ns, ev, err);
	case NF_EV_KERNEL_SCHED_WAKEUP:
		return ki_wakeup(ki, ns, ev, err);
	case NF_EV_KERNEL_DMA_FENCE_INIT:
	case NF_EV_KERNEL_DMA_FENCE_EMIT:
	case NF_EV_KERNEL_DMA_FENCE_ENABLE_SIGNAL:
	case NF_EV_KERNEL_DMA_FENCE_SIGNALED:
	case NF_EV_KERNEL_DMA_FENCE_WAIT_START:
	case NF_EV_KERNEL_DMA_FENCE_WAIT_END:
	case NF_EV_KERNEL_DMA_FENCE_DESTROY:
		return ki_fence(ki, ns, ev, err);
	case NF_EV_KERNEL_LOST: {
		char detail[160];
		sqlite3_stmt *s = ki->st[KS_LOST];

		if (f[NFF_KERNEL_LOST_counted])
			snprintf(detail, sizeof(detail), "CPU %" PRIu64 ": the kernel ring buffer lost %" PRIu64
				 " events before this point", f[NFF_KERNEL_LOST_cpu], f[NFF_KERNEL_LOST_lost]);
		else
			snprintf(detail, sizeof(detail), "CPU %" PRIu64 ": the kernel ring buffer lost events "
				 "before this point (count unknown)", f[NFF_KERNEL_LOST_cpu]);
		sqlite3_bind_int64(s, 1, ns);
		if (f[NFF_KERNEL_LOST_counted])
			sqlite3_bind_int64(s, 2, (int64_t)f[NFF_KERNEL_LOST_lost]);
		else
			sqlite3_bind_null(s, 2);
		sqlite3_bind_text(s, 3, detail, -1, SQLITE_TRANSIENT);
		return ki_step(ki, KS_LOST, err);
	}
	case NF_EV_KERNEL_RAW:
		return ki_raw(ki, ns, f[NFF_KERNEL_RAW_cpu], f[NFF_KERNEL_RAW_tid],
			      ki_str(ki, f[NFF_KERNEL_RAW_name]), ev->str, err);
	case NF_EV_KERNEL_GPU_JOB: {
		sqlite3_stmt *s = ki->st[KS_GPU];
		uint64_t fl = f[NFF_KERNEL_GPU_JOB_flags];

		sqlite3_bind_int64(s, 1, ns);
		sqlite3_bind_int64(s, 2, (int64_t)(uint32_t)f[NFF_KERNEL_GPU_JOB_tid]);
		sqlite3_bind_int64(s, 3, (int64_t)(uint32_t)f[NFF_KERNEL_GPU_JOB_kind]);
		bind_text_or_null(s, 4, ki_str(ki, f[NFF_KERNEL_GPU_JOB_ring]));
		sqlite3_bind_int64(s, 5, (int64_t)f[NFF_KERNEL_GPU_JOB_job]);
		if (fl & 1) {
			sqlite3_bind_int64(s, 6, (int64_t)f[NFF_KERNEL_GPU_JOB_context]);
			sqlite3_bind_int64(s, 7, (int64_t)f[NFF_KERNEL_GPU_JOB_seqno]);
		}
		sqlite3_bind_int64(s, 8, (int64_t)f[NFF_KERNEL_GPU_JOB_fence]);
		if (fl & 4) {
			sqlite3_bind_int64(s, 9, (int64_t)f[NFF_KERNEL_GPU_JOB_dep_context]);
			sqlite3_bind_int64(s, 10, (int64_t)f[NFF_KERNEL_GPU_JOB_dep_seqno]);
		}
		sqlite3_bind_int64(s, 11, (int64_t)fl);
		return ki_step(ki, KS_GPU, err);
	}
	case NF_EV_KERNEL_VBLANK: {
		sqlite3_stmt *s = ki->st[KS_VBLANK];

		sqlite3_bind_int64(s, 1, ns);
		sqlite3_bind_int64(s, 2, (int64_t)(int32_t)(uint32_t)f[NFF_KERNEL_VBLANK_crtc]);
		sqlite3_bind_int64(s, 3, (int64_t)(uint32_t)f[NFF_KERNEL_VBLANK_seq]);
		return ki_step(ki, KS_VBLANK, err);
	}
	case NF_EV_KERNEL_MARKER: {
		sqlite3_stmt *s = ki->st[KS_MARKER];

		sqlite3_bind_int64(s, 1, ns);
		sqlite3_bind_int64(s, 2, (int64_t)(uint32_t)f[NFF_KERNEL_MARKER_tid]);
		sqlite3_bind_int64(s, 3, (int64_t)(uint32_t)f[NFF_KERNEL_MARKER_cpu]);
		bind_text_or_null(s, 4, ev->str ? ev->str : "");
		return ki_step(ki, KS_MARKER, err);
	}
	case NF_EV_KERNEL_TASK: {
		sqlite3_stmt *s = ki->st[KS_TASK];

		sqlite3_bind_int64(s, 1, (int64_t)(uint32_t)f[NFF_KERNEL_TASK_tid]);
		if (f[NFF_KERNEL_TASK_tgid])
			sqlite3_bind_int64(s, 2, (int64_t)(uint32_t)f[NFF_KERNEL_TASK_tgid]);
		bind_text_or_null(s, 3, ki_str(ki, f[NFF_KERNEL_TASK_comm]));
		return ki_step(ki, KS_TASK, err);
	}
	default:
		return 0; /* KernelTraceStart: nothing to store */
	}
}

/* Signals first (their ids are needed by the waits' deps), then waits. */
static const char ki_finish_timelines_sql[] =
	"INSERT OR IGNORE INTO adapters(adapter, name, vidsch_caps, native_fence, gpu_frequency) "
	"SELECT 4294967295, 'Linux kernel dma_fence', NULL, 0, NULL WHERE EXISTS (SELECT 1 FROM kernel_timelines);"
	"INSERT OR IGNORE INTO queues(queue, adapter, node, engine, name, start_ns, stop_ns) "
	"SELECT kt.queue, 4294967295, NULL, NULL, coalesce(kt.driver, '?') || ' ' || coalesce(kt.timeline, '?'), "
	"  (SELECT min(coalesce(init_ns, emit_ns, signal_ns)) FROM temp.k_fences f WHERE f.context = kt.context), "
	"  NULL FROM kernel_timelines kt;"
	"INSERT OR IGNORE INTO fences(fence, type, shared, cross_adapter, initial_value, created_ns, destroyed_ns) "
	"SELECT q.queue, 0, 0, 0, NULL, q.start_ns, NULL FROM queues q JOIN kernel_timelines kt ON kt.queue = q.queue;";

static int ki_finish_signals(struct nf_timeline_kernel_ingest *ki, struct nf_error *err)
{
	sqlite3_stmt *sel = NULL, *ins = NULL, *upd = NULL;
	int rc = 0, src;

	if (sqlite3_prepare_v2(ki->db,
			       "SELECT context, seqno, coalesce(emit_ns, init_ns), signal_ns, emit_tid "
			       "FROM temp.k_fences ORDER BY coalesce(emit_ns, init_ns, signal_ns), context, seqno",
			       -1, &sel, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(ki->db,
			       "INSERT INTO fence_ops(queue, adapter, op, fence, handle, value, queued_ns, "
			       "observed_ns, end_ns, status, log_seq, epoch, thread) VALUES (?1, NULL, "
			       "'signal', ?1, NULL, ?2, ?3, NULL, ?4, ?5, NULL, NULL, ?6)",
			       -1, &ins, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(ki->db, "UPDATE temp.k_fences SET op_id = ?3 WHERE context = ?1 AND seqno = ?2",
			       -1, &upd, NULL) != SQLITE_OK) {
		rc = ki_sql_err(ki, err, "preparing dma_fence signals");
		goto out_finalize;
	}
	while ((src = sqlite3_step(sel)) == SQLITE_ROW) {
		sqlite3_bind_int64(ins, 1, NF_KERNEL_TIMELINE_BASE + sqlite3_column_int64(sel, 0));
		sqlite3_bind_value(ins, 2, sqlite3_column_value(sel, 1));
		sqlite3_bind_value(ins, 3, sqlite3_column_value(sel, 2));
		sqlite3_bind_value(ins, 4, sqlite3_column_value(sel, 3));
		sqlite3_bind_text(ins, 5, sqlite3_column_type(sel, 3) == SQLITE_NULL ? "unsignaled" : "complete",
				  -1, SQLITE_STATIC);
		sqlite3_bind_value(ins, 6, sqlite3_column_value(sel, 4));
		src = sqlite3_step(ins);
		sqlite3_reset(ins);
		if (src != SQLITE_DONE) {
			rc = ki_sql_err(ki, err, "writing dma_fence signals");
			goto out_finalize;
		}
		sqlite3_bind_value(upd, 1, sqlite3_column_value(sel, 0));
		sqlite3_bind_value(upd, 2, sqlite3_column_value(sel, 1));
		sqlite3_bind_int64(upd, 3, sqlite3_last_insert_rowid(ki->db));
		src = sqlite3_step(upd);
		sqlite3_reset(upd);
		if (src != SQLITE_DONE) {
			rc = ki_sql_err(ki, err, "writing dma_fence signals");
			goto out_finalize;
		}
	}
	if (src != SQLITE_DONE) {
		rc = ki_sql_err(ki, err, "reading dma_fence signals");
		goto out_finalize;
	}
	/* Who emitted on each timeline: the queue_threads rows of the signals above. */
	_Static_assert(NF_KERNEL_TIMELINE_BASE == 4294967296LL, "the SQL spells the base out");
	if (sqlite3_exec(ki->db,
			 "INSERT INTO queue_threads(queue, fence, thread, ops) "
			 "SELECT 4294967296 + context, 4294967296 + context, emit_tid, count(*) "
			 "FROM temp.k_fences WHERE emit_tid IS NOT NULL "
			 "AND coalesce(emit_ns, init_ns) IS NOT NULL GROUP BY context, emit_tid",
			 NULL, NULL, NULL) != SQLITE_OK)
		rc = ki_sql_err(ki, err, "writing the threads of dma_fence signals");
out_finalize:
	sqlite3_finalize(upd);
	sqlite3_finalize(ins);
	sqlite3_finalize(sel);
	return rc;
}

/*
 * A wait was released by its fence's signal when the signal came no later than
 * the wait's end; a wait that ended before its fence signaled timed out or was
 * interrupted ('timeout'); one still open at the end is 'pending'.
 */
static int ki_finish_waits(struct nf_timeline_kernel_ingest *ki, struct nf_error *err)
{
	static const char sql[] =
		"SELECT w.tid, w.context, w.seqno, w.start_ns, w.end_ns, f.op_id, f.signal_ns "
		"FROM temp.k_waits w LEFT JOIN temp.k_fences f ON f.context = w.context AND f.seqno = w.seqno "
		"ORDER BY coalesce(w.start_ns, w.end_ns), w.rowid";
	sqlite3_stmt *sel = NULL, *op = NULL, *cw = NULL, *dep = NULL;
	int rc = 0, src;

	if (sqlite3_prepare_v2(ki->db, sql, -1, &sel, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(ki->db,
			       "INSERT INTO fence_ops(queue, adapter, op, fence, handle, value, queued_ns, "
			       "observed_ns, end_ns, status, log_seq, epoch, thread) VALUES (NULL, NULL, "
			       "'wait', ?1, NULL, ?2, ?3, ?3, ?4, ?5, NULL, NULL, ?6)",
			       -1, &op, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(ki->db,
			       "INSERT INTO cpu_waits(thread, adapter, fence, value, start_ns, end_ns, status) "
			       "VALUES (?1, NULL, ?2, ?3, ?4, ?5, ?6)",
			       -1, &cw, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(ki->db,
			       "INSERT INTO deps(signal_id, wait_id, cpu_signal, stall_ns) VALUES (?1, ?2, NULL, ?3)",
			       -1, &dep, NULL) != SQLITE_OK) {
		rc = ki_sql_err(ki, err, "preparing dma_fence waits");
		goto out_finalize;
	}
	while ((src = sqlite3_step(sel)) == SQLITE_ROW) {
		int64_t fence = NF_KERNEL_TIMELINE_BASE + sqlite3_column_int64(sel, 1);
		bool has_start = sqlite3_column_type(sel, 3) != SQLITE_NULL;
		bool has_end = sqlite3_column_type(sel, 4) != SQLITE_NULL;
		bool has_sig = sqlite3_column_type(sel, 6) != SQLITE_NULL;
		int64_t end = sqlite3_column_int64(sel, 4);
		bool released = has_end && has_sig && sqlite3_column_int64(sel, 6) <= end;
		const char *status = !has_end ? "pending" : released ? "satisfied" : "timeout";

		sqlite3_bind_int64(op, 1, fence);
		sqlite3_bind_value(op, 2, sqlite3_column_value(sel, 2));
		sqlite3_bind_value(op, 3, sqlite3_column_value(sel, 3));
		sqlite3_bind_value(op, 4, sqlite3_column_value(sel, 4));
		sqlite3_bind_text(op, 5, has_end ? "complete" : "pending", -1, SQLITE_STATIC);
		sqlite3_bind_value(op, 6, sqlite3_column_value(sel, 0));
		src = sqlite3_step(op);
		sqlite3_reset(op);
		if (src != SQLITE_DONE)
			goto out_sql;
		int64_t wait_id = sqlite3_last_insert_rowid(ki->db);

		sqlite3_bind_value(cw, 1, sqlite3_column_value(sel, 0));
		sqlite3_bind_int64(cw, 2, fence);
		sqlite3_bind_value(cw, 3, sqlite3_column_value(sel, 2));
		sqlite3_bind_value(cw, 4, sqlite3_column_value(sel, 3));
		sqlite3_bind_value(cw, 5, sqlite3_column_value(sel, 4));
		sqlite3_bind_text(cw, 6, status, -1, SQLITE_STATIC);
		src = sqlite3_step(cw);
		sqlite3_reset(cw);
		if (src != SQLITE_DONE)
			goto out_sql;
		if (!released)
			continue;
		sqlite3_bind_value(dep, 1, sqlite3_column_value(sel, 5));
		sqlite3_bind_int64(dep, 2, wait_id);
		if (has_start)
			sqlite3_bind_int64(dep, 3, end - sqlite3_column_int64(sel, 3));
		else
			sqlite3_bind_null(dep, 3);
		src = sqlite3_step(dep);
		sqlite3_reset(dep);
		if (src != SQLITE_DONE)
			goto out_sql;
	}
	if (src != SQLITE_DONE)
		goto out_sql;
	goto out_finalize;
out_sql:
	rc = ki_sql_err(ki, err, "writing dma_fence waits");
out_finalize:
	sqlite3_finalize(dep);
	sqlite3_finalize(cw);
	sqlite3_finalize(op);
	sqlite3_finalize(sel);
	return rc;
}

/*
 * GPU jobs (the jobs block of schemas/timeline.sql): the staged KernelGpuJob
 * events get a job key (the scheduler's job id, else the fence), then one
 * jobs row per key; the scheduled/finished fence rule per job context is
 * decided from the dma_fence signals (job_timelines) and fills in starts and
 * finishes no event gave; then the dependencies.
 * Kinds: 1 amdgpu_cs_ioctl, 2 amdgpu_sched_run_job, 3 drm_sched queue, 4 run,
 * 5 done, 6 dependency, 7 i915 add, 8 submit, 9 in, 10 out, 11 retire.
 */
static const char ki_finish_jobs_sql[] =
	"CREATE INDEX temp.k_gpu_fence ON k_gpu(fence, kind, ts);"
	/* drm_sched before 6.16: a done event names the job by its fence's address. */
	"UPDATE temp.k_gpu SET job = coalesce((SELECT q.job FROM temp.k_gpu q WHERE q.kind = 3 AND "
	"  q.fence = k_gpu.fence AND q.ts <= k_gpu.ts AND q.job != 0 ORDER BY q.ts DESC LIMIT 1), 0) "
	"  WHERE kind = 5 AND job = 0 AND fence != 0 AND context IS NULL;"
	/* Events naming only the fence join the job whose id another event tied to it. */
	"CREATE INDEX temp.k_gpu_ctx ON k_gpu(context, seqno);"
	"UPDATE temp.k_gpu SET job = coalesce((SELECT m.job FROM temp.k_gpu m WHERE m.job != 0 AND "
	"  m.context = k_gpu.context AND m.seqno = k_gpu.seqno LIMIT 1), 0) "
	"  WHERE job = 0 AND context IS NOT NULL AND kind <= 6;"
	"UPDATE temp.k_gpu SET kkey = CASE WHEN job != 0 THEN 'j' || job "
	"  WHEN context IS NOT NULL THEN 'f' || context || ':' || seqno END;"
	"CREATE INDEX temp.k_gpu_key ON k_gpu(kkey, kind, ts);"
	"CREATE TEMP TABLE k_jobs(kkey TEXT PRIMARY KEY, id INTEGER) WITHOUT ROWID;"
	"INSERT INTO jobs(driver, ring, job, context, seqno, thread, submitted_ns, started_ns, finished_ns) "
	"SELECT CASE WHEN max(kind IN (1, 2)) THEN 'amdgpu' WHEN max(kind BETWEEN 3 AND 6) THEN 'drm_sched' "
	"  ELSE 'i915' END, "
	"  (SELECT r.ring FROM temp.k_gpu r WHERE r.kkey = g.kkey AND r.ring IS NOT NULL ORDER BY r.kind, r.ts "
	"   LIMIT 1), "
	"  nullif(max(job), 0), "
	"  (SELECT c.context FROM temp.k_gpu c WHERE c.kkey = g.kkey AND c.context IS NOT NULL AND c.kind != 6 "
	"   ORDER BY c.kind LIMIT 1), "
	"  (SELECT c.seqno FROM temp.k_gpu c WHERE c.kkey = g.kkey AND c.context IS NOT NULL AND c.kind != 6 "
	"   ORDER BY c.kind LIMIT 1), "
	"  (SELECT s.tid FROM temp.k_gpu s WHERE s.kkey = g.kkey AND s.kind IN (1, 3, 7) ORDER BY s.ts LIMIT 1), "
	"  min(CASE WHEN kind IN (1, 3, 7) THEN ts END), "
	"  min(CASE WHEN kind IN (2, 4, 9) THEN ts END), "
	"  coalesce(min(CASE WHEN kind = 5 THEN ts END), max(CASE WHEN kind = 10 AND flags & 2 THEN ts END), "
	"    min(CASE WHEN kind = 11 THEN ts END)) "
	"FROM temp.k_gpu g WHERE kkey IS NOT NULL GROUP BY kkey "
	"ORDER BY coalesce(min(CASE WHEN kind IN (1, 3, 7) THEN ts END), min(ts)), kkey;"
	/* Job key -> row: the key of a row is rebuilt from its job id or fence. */
	"INSERT INTO temp.k_jobs(kkey, id) SELECT CASE WHEN job IS NOT NULL THEN 'j' || job "
	"  ELSE 'f' || context || ':' || seqno END, id FROM jobs;"
	/* Scheduled vs finished, per job context, from the signals. */
	"INSERT INTO job_timelines(context, driver, ring, scheduled_context, finished_context, jobs_prev_first, "
	"  jobs_next_later) "
	"SELECT context, min(driver), min(ring), NULL, context, "
	"  (SELECT count(*) FROM jobs j JOIN temp.k_fences a ON a.context = j.context - 1 AND a.seqno = j.seqno "
	"   JOIN temp.k_fences b ON b.context = j.context AND b.seqno = j.seqno "
	"   WHERE j.context = t.context AND a.signal_ns <= b.signal_ns), "
	"  (SELECT count(*) FROM jobs j JOIN temp.k_fences a ON a.context = j.context AND a.seqno = j.seqno "
	"   JOIN temp.k_fences b ON b.context = j.context + 1 AND b.seqno = j.seqno "
	"   WHERE j.context = t.context AND a.signal_ns <= b.signal_ns) "
	"FROM jobs t WHERE context IS NOT NULL AND driver != 'i915' GROUP BY context;"
	"UPDATE job_timelines SET scheduled_context = CASE WHEN jobs_prev_first >= jobs_next_later "
	"  AND jobs_prev_first > 0 THEN context - 1 WHEN jobs_next_later > 0 THEN context END, "
	"  finished_context = CASE WHEN jobs_prev_first < jobs_next_later THEN context + 1 ELSE context END;"
	/* A context whose own jobs say nothing follows the rule its driver's other contexts decided. */
	"UPDATE job_timelines SET "
	"  scheduled_context = CASE WHEN (SELECT sum(o.jobs_prev_first) - sum(o.jobs_next_later) FROM job_timelines o "
	"    WHERE o.driver = job_timelines.driver) > 0 THEN context - 1 "
	"    WHEN (SELECT sum(o.jobs_next_later) - sum(o.jobs_prev_first) FROM job_timelines o "
	"    WHERE o.driver = job_timelines.driver) > 0 THEN context END, "
	"  finished_context = CASE WHEN (SELECT sum(o.jobs_next_later) - sum(o.jobs_prev_first) FROM job_timelines o "
	"    WHERE o.driver = job_timelines.driver) > 0 THEN context + 1 ELSE context END "
	"  WHERE jobs_prev_first = 0 AND jobs_next_later = 0;"
	"UPDATE jobs SET sched_context = (SELECT t.scheduled_context FROM job_timelines t "
	"  WHERE t.context = jobs.context) WHERE context IS NOT NULL;"
	"UPDATE jobs SET "
	"  started_ns = coalesce(started_ns, (SELECT f.signal_ns FROM temp.k_fences f "
	"    WHERE f.context = jobs.sched_context AND f.seqno = jobs.seqno)), "
	"  finished_ns = coalesce(finished_ns, (SELECT f.signal_ns FROM temp.k_fences f JOIN job_timelines t "
	"    ON t.context = jobs.context WHERE f.context = t.finished_context AND f.seqno = jobs.seqno)) "
	"  WHERE context IS NOT NULL AND driver != 'i915';"
	"UPDATE jobs SET process = (SELECT k.process FROM kernel_threads k WHERE k.thread = jobs.thread), "
	"  status = CASE WHEN started_ns IS NULL THEN 'queued' WHEN finished_ns IS NULL THEN 'unfinished' "
	"  ELSE 'complete' END;"
	"CREATE INDEX jobs_fence ON jobs(context, seqno);"
	"INSERT INTO job_deps(job, dep_context, dep_seqno, dep_job, dep_fence, ts_ns) "
	"SELECT k.id, d.dep_context, d.dep_seqno, coalesce(f.id, s.id), "
	"  CASE WHEN f.id IS NOT NULL THEN 'finished' WHEN s.id IS NOT NULL THEN 'scheduled' END, d.ts "
	"FROM temp.k_gpu d JOIN temp.k_jobs k ON k.kkey = d.kkey "
	"LEFT JOIN jobs f ON f.context = d.dep_context AND f.seqno = d.dep_seqno "
	"LEFT JOIN jobs s ON f.id IS NULL AND s.sched_context = d.dep_context AND s.seqno = d.dep_seqno "
	"WHERE d.kind = 6 AND d.flags & 4 ORDER BY k.id, d.ts;";

int nf_timeline_kernel_ingest_finish(struct nf_timeline_kernel_ingest *ki, struct nf_error *err)
{
	int rc;

	if (!ki)
		return 0;
	if (ki->finished)
		return nf_error_set(err, NF_ESTATE, "timeline: kernel events already finished");
	ki->finished = true;
	/* Waits still going when the trace ended. */
	for (size_t i = 0; i < ki->n_waits; i++) {
		const struct ki_wait *w = &ki->waits[i];

		if ((rc = ki_wait_row(ki, w->tid, w->ctx, w->seq, true, w->start_ns, false, 0, err)))
			return rc;
	}
	ki->n_waits = 0;
	/* Runs still going when the trace ended. */
	for (size_t c = 0; c < ki->n_cpus; c++) {
		const struct ki_cpu *cs = &ki->cpus[c];

		if (!cs->known || cs->tid == 0)
			continue;
		if ((rc = ki_run(ki, cs->tid, (int64_t)c, true, cs->start_ns, false, 0, 0, err)))
			return rc;
	}
	if ((rc = ki_run_flush(ki, err)))
		return rc;
	if ((rc = ki_exec(ki, ki_finish_timelines_sql, err)) ||
	    (rc = ki_finish_signals(ki, err)) || (rc = ki_finish_waits(ki, err)) ||
	    (rc = ki_exec(ki, ki_finish_jobs_sql, err)))
		return rc;
	return ki_exec(ki, "DROP TABLE temp.k_fences; DROP TABLE temp.k_waits; DROP TABLE temp.k_gpu;"
		       "DROP TABLE temp.k_jobs;"
		       "CREATE INDEX cpu_runs_thread ON cpu_runs(thread, start_ns);"
		       "CREATE INDEX kernel_events_ts ON kernel_events(ts_ns);", err);
}
