/*
 * Kernel events into the timeline (see kernel_ingest.h and the kernel block of
 * schemas/timeline.sql): interned strings are kept in memory, sched_switch
 * becomes blocks of cpu_runs as it streams (one open run per CPU; runs.h), dma_fence events are
 * held per (context, seqno) and per wait in memory (kernel_fences.h, up to its
 * bound) or past it staged in TEMP tables, and turned into fence_ops,
 * cpu_waits and deps at finish. Memory is bounded by the number of distinct
 * strings and CPUs and by that bound, never by the number of events.
 */
#include "kernel_ingest.h"
#include "contract/errors.h"
#include "contract/timeline_writer.h"
#include "contract/deps.h"
#include "kernel_fences.h"
#include "kernel_flips.h"
#include "runs.h"
#include "contract/anomaly_kinds.h"
#include "contract/util_hash.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract/anomaly_kinds.h"

/* Interned strings and CPUs kept at most (a corrupt session cannot exhaust memory). */
#define NF_KI_MAX_STRINGS (1u << 22)
#define NF_KI_MAX_CPUS 8192u

enum ki_stmt {
	KS_STR_TIMELINE, KS_FENCE_SEEN, KS_WAIT,
	KS_THREAD, KS_RAW, KS_LOST, KS_GPU, KS_VBLANK, KS_MARKER, KS_TASK, KS_JOBPART, KS_COUNT
};

static const char *const ki_sql[KS_COUNT] = {
	[KS_STR_TIMELINE] = "INSERT OR IGNORE INTO kernel_timelines(queue, context, driver, timeline) "
			    "VALUES (?1 + " NF_WRITER_CONTEXT_BASE_SQL ", ?1, ?2, ?3)",
	/* ?3 init, ?4 emit, ?5 signaled: the first time each was seen is kept. */
	[KS_FENCE_SEEN] = "INSERT INTO temp.k_fences(context, seqno, init_ns, emit_ns, signal_ns, emit_tid) "
			  "VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(context, seqno) DO UPDATE SET "
			  "init_ns = coalesce(init_ns, excluded.init_ns), "
			  "emit_ns = coalesce(emit_ns, excluded.emit_ns), "
			  "signal_ns = coalesce(signal_ns, excluded.signal_ns), "
			  "emit_tid = coalesce(emit_tid, excluded.emit_tid)",
	[KS_WAIT] = "INSERT INTO temp.k_waits(tid, context, seqno, start_ns, end_ns) "
		    "VALUES (?1, ?2, ?3, ?4, ?5)",
	[KS_THREAD] = "INSERT INTO kernel_threads(thread, comm) VALUES (?1, ?2) "
		      "ON CONFLICT(thread) DO UPDATE SET comm = excluded.comm",
	[KS_RAW] = "INSERT INTO kernel_events(ts_ns, cpu, thread, name, fields) VALUES (?1, ?2, ?3, ?4, ?5)",
	[KS_LOST] = "INSERT INTO anomalies(kind, queue, log, first_ns, last_ns, lost_entries, detail) "
		    "VALUES (?4, NULL, NULL, ?1, ?1, ?2, ?3)", /* ?4: kernel_lost */
	/* ?12 the job key: the scheduler's job id when the event names it (kkey below). */
	[KS_GPU] = "INSERT INTO temp.k_gpu(ts, tid, kind, ring, job, context, seqno, fence, dep_context, "
		   "dep_seqno, flags, kkey, folded, dev, client, queue) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
		   "?10, ?11, ?12, ?12 IS NOT NULL, ?13, ?14, ?15)",
	[KS_VBLANK] = "INSERT INTO vblanks(ts_ns, crtc, seq, display) VALUES (?1, ?2, ?3, NULL)",
	[KS_MARKER] = "INSERT INTO markers(ts_ns, thread, cpu, text) VALUES (?1, ?2, ?3, ?4)",
	[KS_JOBPART] = "INSERT INTO temp.k_jobpart(kkey, amd, sched, ring, ring_kind, ring_ts, job, ctx_kind, "
		       "context, seqno, thread, thread_ts, sub, start, done, out, retire, first_ts, xe) VALUES (?1, ?2, "
		       "?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)",
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
	"  flags INTEGER, kkey INTEGER, folded INTEGER, dev TEXT, client INTEGER, queue INTEGER);"
	"CREATE TEMP TABLE k_jobpart(kkey INTEGER, amd INTEGER, sched INTEGER, ring TEXT, ring_kind INTEGER, "
	"  ring_ts INTEGER, job INTEGER, ctx_kind INTEGER, context INTEGER, seqno INTEGER, thread INTEGER, "
	"  thread_ts INTEGER, sub INTEGER, start INTEGER, done INTEGER, out INTEGER, retire INTEGER, "
	"  first_ts INTEGER, xe INTEGER);";

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
	/* comms maps tid to comm_id, as of comms_gen (a switch-out of the same task
	 * under the same name needs no lookup) */
	bool comm_ok;
	uint64_t comm_id, comm_gen;
};

/* The maps are core's nf_u64map (core/util_hash.h), at most this many keys. */
#define NF_KI_MAX_KEYS (1u << 22)

/*
 * GPU jobs are summed up as their events stream: one partial figure per job
 * key (the scheduler's job id) in memory, written to temp.k_jobpart when
 * NF_KI_MAX_OPEN_JOBS are held (a job that spans two writes gets two partial
 * rows, merged at finish) and at finish. Events without a job id are staged in
 * temp.k_gpu and keyed at finish (ki_finish_unkeyed_sql); dependency events are
 * staged too (job_deps). A partial: the driver (amdgpu when an amdgpu event
 * names it, else drm_sched when a scheduler event does, else i915), the ring of
 * the first event of the lowest kind naming one, the fence of the lowest kind
 * naming one (dependencies aside), the thread of the first submission,
 * submitted (amdgpu_cs_ioctl, drm_sched_job, i915_request_add), started
 * (run_job, request_in), finished (drm_sched_process_job, else the last
 * i915_request_out that completed, else the retire).
 * Kinds: 1 amdgpu_cs_ioctl, 2 amdgpu_sched_run_job, 3 drm_sched queue, 4 run,
 * 5 done, 6 dependency, 7 i915 add, 8 submit, 9 in, 10 out, 11 retire.
 */
#define NF_KI_MAX_OPEN_JOBS 65536u

struct ki_jobagg {
	int64_t kkey;
	bool amd, sched, xe;
	char *ring;          /* owned */
	int64_t ring_kind, ring_ts;
	int64_t job;
	bool has_ctx;
	int64_t ctx_kind, context, seqno;
	bool has_thread;
	int64_t thread, thread_ts;
	bool has_sub, has_start, has_done, has_out, has_retire;
	int64_t sub, start, done, out, retire, first_ts;
};

/* Folds partial b into a (same key); ring ownership moves when b's is taken. */
static void ki_agg_merge(struct ki_jobagg *a, struct ki_jobagg *b)
{
	if (b->first_ts < a->first_ts)
		a->first_ts = b->first_ts;
	a->amd |= b->amd;
	a->sched |= b->sched;
	a->xe |= b->xe;
	if (b->ring && (!a->ring || b->ring_kind < a->ring_kind ||
			(b->ring_kind == a->ring_kind && b->ring_ts < a->ring_ts))) {
		free(a->ring);
		a->ring = b->ring;
		b->ring = NULL;
		a->ring_kind = b->ring_kind;
		a->ring_ts = b->ring_ts;
	}
	if (b->job > a->job)
		a->job = b->job;
	if (b->has_ctx && (!a->has_ctx || b->ctx_kind < a->ctx_kind)) {
		a->has_ctx = true;
		a->ctx_kind = b->ctx_kind;
		a->context = b->context;
		a->seqno = b->seqno;
	}
	if (b->has_thread && (!a->has_thread || b->thread_ts < a->thread_ts)) {
		a->has_thread = true;
		a->thread = b->thread;
		a->thread_ts = b->thread_ts;
	}
#define KI_MIN(f) if (b->has_##f && (!a->has_##f || b->f < a->f)) { a->has_##f = true; a->f = b->f; }
	KI_MIN(sub)
	KI_MIN(start)
	KI_MIN(done)
	KI_MIN(retire)
#undef KI_MIN
	if (b->has_out && (!a->has_out || b->out > a->out)) {
		a->has_out = true;
		a->out = b->out;
	}
}

/* Held partials: job id -> index into aggs. */
struct ki_jobs_open {
	struct nf_u64map index;
	struct ki_jobagg *aggs;
	size_t n, cap;
	bool flushed;        /* partials were written to temp.k_jobpart */
	size_t next;         /* ki_jobs_direct_row's place */
	int64_t first_id;    /* jobs.id of aggs[0] there */
};

static void ki_jobs_open_free(struct ki_jobs_open *o)
{
	for (size_t i = 0; i < o->n; i++)
		free(o->aggs[i].ring);
	free(o->aggs);
	nf_u64map_free(&o->index);
}

/*
 * Rows staged for one INSERT ... SELECT from nf_bulk (bulk.h) per batch: the
 * dma_fence sightings, vblanks and markers, which a real capture has by the
 * thousand and a prepared INSERT stepped per row paid SQLite's statement entry,
 * bind and reset on each. Text is copied into the stage's arena.
 */
#define NF_KI_STAGE_ROWS 8192u

struct ki_srow {
	int64_t v[6];
	uint32_t set;        /* bit i: column i is not NULL */
	int text_col;        /* -1: none */
	size_t text_off;
	int text_len;
};

struct ki_stage {
	const char *sql, *what;
	struct ki_srow *rows;
	size_t n, next;
	char *arena;
	size_t alen, acap;
};

/*
 * What the file holds of one CPU's buffer: its spans of whole record (the
 * first from its first record, each lost-events marker closing one and
 * opening the next) and what the file's CPUSTAT says (KernelCpuStat).
 */
struct ki_cov {
	bool seen;           /* a record of this CPU */
	int64_t from, last;  /* the open span: from its start to the latest record */
	uint64_t records;
	int64_t *spans;      /* closed spans, (from, to) pairs */
	size_t n_spans, cap_spans;
	bool has_stat;       /* a KernelCpuStat came */
	uint64_t file_records, read_events, overrun, dropped;
	bool stat_cpu;       /* its CPUSTAT block was in the file */
};

struct nf_timeline_kernel_ingest {
	sqlite3 *db;
	struct nf_runs *runs;    /* cpu_run_blocks */
	struct nf_bulk *bulk;    /* NULL: staged rows go one INSERT each */
	struct ki_stage fences, vblanks, markers;
	struct nf_u64map comms;     /* thread -> KernelString id of the comm last written */
	uint64_t comms_gen;      /* changes of comms so far */
	struct nf_u64map contexts;  /* dma_fence contexts already in kernel_timelines */
	struct nf_u64map sched_fences; /* drm_sched fence address -> job id of its latest queue event */
	uint64_t gpu_unkeyed;    /* KernelGpuJob events in k_gpu to key at finish */
	struct ki_jobs_open jobs; /* partial job figures held */
	sqlite3_stmt *st[KS_COUNT];
	char **strings;      /* [id] -> text, id from 1 */
	size_t n_strings;
	struct ki_cpu *cpus;
	size_t n_cpus;
	/* What the file holds of each CPU (see ki_finish_coverage). */
	struct ki_cov *cov;      /* [CPU], n_cov of them (grown as CPUs appear) */
	size_t n_cov;
	int64_t end_ns;          /* the latest kernel event: the capture's end */
	bool live;           /* KernelTraceStart says a live tracefs capture (not a file) */
	struct ki_wait *waits;   /* open waits, in start order */
	size_t n_waits, cap_waits;
	uint64_t wait_rows;      /* rows written to temp.k_waits */
	uint64_t gpu_deps;       /* dependency (and unschedulable) events staged in temp.k_gpu */
	uint64_t gpu_xe;         /* xe job events staged in temp.k_gpu (keyed by queue and seqno) */
	uint64_t gpu_dev;        /* staged events naming a device or a DRM client */
	/*
	 * dma_fence sightings and waits held in memory (kernel_fences.h) while
	 * mem; past its bound (or with no bulk) they go to temp.k_fences and
	 * temp.k_waits instead, and finish writes them with SQL.
	 */
	struct nf_kfences kf;
	bool mem;
	bool finished;
	struct nf_kflips flips;  /* i915 page flips, written at finish (kernel_flips.h) */
};

static int ki_sql_err(struct nf_timeline_kernel_ingest *ki, struct nf_error *err, const char *what)
{
	return nf_writer_sql_error(ki->db, "kernel events", what, err);
}

static int ki_exec(struct nf_timeline_kernel_ingest *ki, const char *sql, struct nf_error *err)
{
	return nf_writer_exec(ki->db, "kernel events", sql, err);
}

static int ki_step(struct nf_timeline_kernel_ingest *ki, enum ki_stmt id, struct nf_error *err)
{
	int rc = nf_writer_step(ki->db, ki->st[id], "kernel events", ki_sql[id], err);

	sqlite3_clear_bindings(ki->st[id]); /* the kernel's statements leave optional parameters unbound */
	return rc;
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
	for (size_t c = 0; c < ki->n_cov; c++)
		free(ki->cov[c].spans);
	free(ki->cov);
	free(ki->waits);
	nf_runs_destroy(ki->runs);
	nf_kf_free(&ki->kf);
	free(ki->fences.rows);
	free(ki->fences.arena);
	free(ki->vblanks.rows);
	free(ki->vblanks.arena);
	free(ki->markers.rows);
	free(ki->markers.arena);
	nf_u64map_free(&ki->comms);
	nf_u64map_free(&ki->contexts);
	nf_u64map_free(&ki->sched_fences);
	ki_jobs_open_free(&ki->jobs);
	nf_kflips_free(&ki->flips);
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
	ki->comms.max_keys = ki->contexts.max_keys = ki->sched_fences.max_keys = NF_KI_MAX_KEYS;
	ki->jobs.index.max_keys = NF_KI_MAX_KEYS;
	if (ki_exec(ki, ki_staging_sql, err))
		goto out_free;
	for (int i = 0; i < KS_COUNT; i++)
		if (sqlite3_prepare_v2(db, ki_sql[i], -1, &ki->st[i], NULL) != SQLITE_OK) {
			ki_sql_err(ki, err, ki_sql[i]);
			goto out_free;
		}
	if (!(ki->runs = nf_runs_create(db, err)))
		goto out_free;
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
	ki->comms_gen++;
	sqlite3_bind_int64(ki->st[KS_THREAD], 1, (int64_t)tid);
	sqlite3_bind_text(ki->st[KS_THREAD], 2, comm, -1, SQLITE_TRANSIENT);
	return ki_step(ki, KS_THREAD, err);
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

		if ((rc = nf_runs_add(ki->runs, prev, (int64_t)f[NFF_KERNEL_SCHED_SWITCH_cpu], known,
				      known ? c->start_ns : 0, true, ns, true,
				      (int64_t)f[NFF_KERNEL_SCHED_SWITCH_prev_state], err)))
			return rc;
	}
	bool named = c->comm_ok && c->tid == prev && c->comm_id == f[NFF_KERNEL_SCHED_SWITCH_prev_comm] &&
		     c->comm_gen == ki->comms_gen;

	c->known = true;
	c->has_start = true;
	c->tid = next;
	c->start_ns = ns;
	c->comm_ok = false;
	if ((!named && (rc = ki_thread(ki, prev, f[NFF_KERNEL_SCHED_SWITCH_prev_comm], err))) ||
	    (rc = ki_thread(ki, next, f[NFF_KERNEL_SCHED_SWITCH_next_comm], err)))
		return rc;
	c->comm_ok = true;
	c->comm_id = f[NFF_KERNEL_SCHED_SWITCH_next_comm];
	c->comm_gen = ki->comms_gen;
	return 0;
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

static int ki_mem_spill(struct nf_timeline_kernel_ingest *ki, struct nf_error *err);

/* One row of temp.k_waits: a wait with its start and end when known. */
static int ki_wait_sql(struct nf_timeline_kernel_ingest *ki, int64_t tid, int64_t ctx, int64_t seq, bool has_start,
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

/* A wait's row: held in memory while ki->mem, else one row of temp.k_waits. */
static int ki_wait_row(struct nf_timeline_kernel_ingest *ki, int64_t tid, int64_t ctx, int64_t seq, bool has_start,
		       int64_t start, bool has_end, int64_t end, struct nf_error *err)
{
	int rc;

	ki->wait_rows++;
	if (ki->mem) {
		rc = nf_kf_wait(&ki->kf, (uint32_t)tid, (uint32_t)ctx, seq, has_start, start, has_end, end);
		if (rc < 0)
			return nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
		if (rc == 0)
			return 0;
		if ((rc = ki_mem_spill(ki, err)))
			return rc;
	}
	return ki_wait_sql(ki, tid, ctx, seq, has_start, start, has_end, end, err);
}

static int ki_stage_row(void *ctx, struct nf_bulk_row *row, struct nf_error *err)
{
	struct ki_stage *st = ctx;
	const struct ki_srow *r;

	(void)err;
	if (st->next == st->n)
		return 0;
	r = &st->rows[st->next++];
	for (int c = 0; c < 6; c++)
		if (c == r->text_col)
			nf_bulk_text(row, c, st->arena + r->text_off, r->text_len);
		else if (r->set & (1u << c))
			nf_bulk_int(row, c, r->v[c]);
	return 1;
}

/* The staged rows into their table; none staged after. */
static int ki_stage_flush(struct nf_timeline_kernel_ingest *ki, struct ki_stage *st, struct nf_error *err)
{
	int rc;

	if (!st->n)
		return 0;
	st->next = 0;
	rc = nf_bulk_run(ki->bulk, st->sql, ki_stage_row, st, false, st->what, err);
	st->n = 0;
	st->alen = 0;
	return rc;
}

/* A row for stage st (columns set by the caller through the returned row); NULL out of memory. */
static struct ki_srow *ki_stage_add(struct ki_stage *st)
{
	if (!st->rows && !(st->rows = malloc(NF_KI_STAGE_ROWS * sizeof(*st->rows))))
		return NULL;
	struct ki_srow *r = &st->rows[st->n++];

	r->set = 0;
	r->text_col = -1;
	return r;
}

/* Copies text into st's arena as column col of r; false out of memory. */
static bool ki_stage_text(struct ki_stage *st, struct ki_srow *r, int col, const char *text)
{
	size_t len = strlen(text);

	if (len > (size_t)INT32_MAX)
		len = (size_t)INT32_MAX;
	/* the arena exists once a text is staged, even an empty one: a row's
	 * text is arena + offset (no NULL + 0; fuzz_builder under UBSan) */
	if (!st->arena || st->acap - st->alen < len) {
		size_t ncap = st->acap ? st->acap : 65536;
		char *na;

		while (ncap - st->alen < len)
			ncap *= 2;
		if (!(na = realloc(st->arena, ncap)))
			return false;
		st->arena = na;
		st->acap = ncap;
	}
	if (len)
		memcpy(st->arena + st->alen, text, len);
	r->text_col = col;
	r->text_off = st->alen;
	r->text_len = (int)len;
	st->alen += len;
	return true;
}

static void ki_srow_int(struct ki_srow *r, int col, int64_t v)
{
	r->set |= 1u << col;
	r->v[col] = v;
}

/* Counts the row in; the batch goes in when full. */
static int ki_stage_done(struct nf_timeline_kernel_ingest *ki, struct ki_stage *st, struct nf_error *err)
{
	return st->n == NF_KI_STAGE_ROWS ? ki_stage_flush(ki, st, err) : 0;
}

/*
 * Past the memory bound: every held fence becomes a staged sighting row of
 * temp.k_fences (one row with each first time) and every held wait a row of
 * temp.k_waits, in the order they came; the rest of the session goes there
 * too, and finish writes them with SQL (the same rows either way).
 */
static int ki_mem_spill(struct nf_timeline_kernel_ingest *ki, struct nf_error *err)
{
	const struct nf_kfences *m = &ki->kf;
	int rc;

	ki->mem = false;
	for (size_t i = 0; i < m->nf; i++) {
		const struct nf_kf_fence *f = &m->f[i];
		struct ki_srow *r = ki_stage_add(&ki->fences);

		if (!r)
			return nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
		ki_srow_int(r, 0, f->ctx);
		ki_srow_int(r, 1, f->seq);
		if (f->has & NF_KF_INIT)
			ki_srow_int(r, 2, f->init);
		if (f->has & NF_KF_EMIT)
			ki_srow_int(r, 3, f->emit);
		if (f->has & NF_KF_SIGNAL)
			ki_srow_int(r, 4, f->signal);
		if (f->has & NF_KF_TID)
			ki_srow_int(r, 5, f->tid);
		if ((rc = ki_stage_done(ki, &ki->fences, err)))
			return rc;
	}
	for (size_t i = 0; i < m->nw; i++) {
		const struct nf_kf_wait *w = &m->w[i];

		if ((rc = ki_wait_sql(ki, w->tid, w->ctx, w->seq, w->has_start, w->start, w->has_end, w->end, err)))
			return rc;
	}
	nf_kf_free(&ki->kf);
	return 0;
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
		if (ki->mem) {
			rc = nf_kf_sight(&ki->kf, (uint32_t)ctx, seq, ev->id == NF_EV_KERNEL_DMA_FENCE_INIT ? NF_KF_INIT
					 : ev->id == NF_EV_KERNEL_DMA_FENCE_EMIT ? NF_KF_EMIT : NF_KF_SIGNAL,
					 ns, (uint32_t)tid);
			if (rc < 0)
				return nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
			if (rc == 0)
				return 0;
			if ((rc = ki_mem_spill(ki, err)))
				return rc;
		}
		if (ki->bulk) {
			struct ki_srow *r = ki_stage_add(&ki->fences);

			if (!r)
				return nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
			ki_srow_int(r, 0, ctx);
			ki_srow_int(r, 1, seq);
			ki_srow_int(r, ev->id == NF_EV_KERNEL_DMA_FENCE_INIT ? 2
				    : ev->id == NF_EV_KERNEL_DMA_FENCE_EMIT ? 3 : 4, ns);
			if (ev->id == NF_EV_KERNEL_DMA_FENCE_EMIT)
				ki_srow_int(r, 5, tid);
			return ki_stage_done(ki, &ki->fences, err);
		}
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


static void ki_bind_opt(sqlite3_stmt *s, int col, bool has, int64_t v)
{
	if (has)
		sqlite3_bind_int64(s, col, v);
}

/* One partial into temp.k_jobpart. */
static int ki_jobpart_write(struct nf_timeline_kernel_ingest *ki, const struct ki_jobagg *a, struct nf_error *err)
{
	sqlite3_stmt *s = ki->st[KS_JOBPART];

	sqlite3_bind_int64(s, 1, a->kkey);
	sqlite3_bind_int64(s, 2, a->amd);
	sqlite3_bind_int64(s, 3, a->sched);
	bind_text_or_null(s, 4, a->ring);
	ki_bind_opt(s, 5, a->ring != NULL, a->ring_kind);
	ki_bind_opt(s, 6, a->ring != NULL, a->ring_ts);
	sqlite3_bind_int64(s, 7, a->job);
	ki_bind_opt(s, 8, a->has_ctx, a->ctx_kind);
	ki_bind_opt(s, 9, a->has_ctx, a->context);
	ki_bind_opt(s, 10, a->has_ctx, a->seqno);
	ki_bind_opt(s, 11, a->has_thread, a->thread);
	ki_bind_opt(s, 12, a->has_thread, a->thread_ts);
	ki_bind_opt(s, 13, a->has_sub, a->sub);
	ki_bind_opt(s, 14, a->has_start, a->start);
	ki_bind_opt(s, 15, a->has_done, a->done);
	ki_bind_opt(s, 16, a->has_out, a->out);
	ki_bind_opt(s, 17, a->has_retire, a->retire);
	sqlite3_bind_int64(s, 18, a->first_ts);
	sqlite3_bind_int64(s, 19, a->xe);
	return ki_step(ki, KS_JOBPART, err);
}

/* Every held partial into temp.k_jobpart; none held after. */
static int ki_jobs_flush(struct nf_timeline_kernel_ingest *ki, struct nf_error *err)
{
	struct ki_jobs_open *o = &ki->jobs;
	int rc = 0;

	if (o->n)
		o->flushed = true;
	for (size_t i = 0; i < o->n && !rc; i++)
		rc = ki_jobpart_write(ki, &o->aggs[i], err);
	for (size_t i = 0; i < o->n; i++)
		free(o->aggs[i].ring);
	o->n = 0;
	nf_u64map_free(&o->index); /* keeps its max_keys */
	return rc;
}

/* The partial figure of one event (ring borrowed: copied when kept). */
static void ki_agg_of_event(struct ki_jobagg *e, int64_t key, int64_t kind, int64_t ts, int64_t tid,
			    const char *ring, int64_t job, bool has_ctx, int64_t ctx, int64_t seq, uint64_t fl)
{
	*e = (struct ki_jobagg){ .kkey = key, .first_ts = ts, .job = job };
	e->amd = kind == 1 || kind == 2;
	e->sched = (kind >= 3 && kind <= 6) || kind == 16;
	e->ring = (char *)ring;
	e->ring_kind = kind;
	e->ring_ts = ts;
	if (has_ctx && kind != 6) {
		e->has_ctx = true;
		e->ctx_kind = kind;
		e->context = ctx;
		e->seqno = seq;
	}
	if (kind == 1 || kind == 3 || kind == 7) {
		e->has_thread = e->has_sub = true;
		e->thread = tid;
		e->thread_ts = e->sub = ts;
	}
	if (kind == 2 || kind == 4 || kind == 9) {
		e->has_start = true;
		e->start = ts;
	}
	if (kind == 5) {
		e->has_done = true;
		e->done = ts;
	}
	if (kind == 10 && (fl & 2)) {
		e->has_out = true;
		e->out = ts;
	}
	if (kind == 11) {
		e->has_retire = true;
		e->retire = ts;
	}
}

/* Folds an event of job key `job` into its held partial. */
static int ki_jobs_fold(struct nf_timeline_kernel_ingest *ki, struct ki_jobagg *e, struct nf_error *err)
{
	struct ki_jobs_open *o = &ki->jobs;
	const uint64_t *slot = nf_u64map_find(&o->index, (uint64_t)e->kkey);
	struct ki_jobagg *a;
	int rc;

	if (e->ring && !(e->ring = strdup(e->ring)))
		return nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
	if (slot) {
		ki_agg_merge(&o->aggs[*slot], e);
		free(e->ring);
		return 0;
	}
	if (o->n == NF_KI_MAX_OPEN_JOBS && (rc = ki_jobs_flush(ki, err))) {
		free(e->ring);
		return rc;
	}
	if (o->n == o->cap) {
		size_t ncap = o->cap ? o->cap * 2 : 256;
		struct ki_jobagg *na = realloc(o->aggs, ncap * sizeof(*na));

		if (!na) {
			free(e->ring);
			return nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
		}
		o->aggs = na;
		o->cap = ncap;
	}
	if (nf_u64map_put(&o->index, (uint64_t)e->kkey, o->n)) {
		free(e->ring);
		return nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
	}
	a = &o->aggs[o->n++];
	*a = *e;
	return 0;
}

/* The coverage of CPU c, grown to hold it: NULL when out of memory. */
static struct ki_cov *ki_cov_of(struct nf_timeline_kernel_ingest *ki, size_t c)
{
	if (c >= ki->n_cov) {
		size_t n = c + 1 > ki->n_cov * 2 ? c + 1 : ki->n_cov * 2;
		struct ki_cov *v = realloc(ki->cov, n * sizeof(*v));

		if (!v)
			return NULL;
		memset(v + ki->n_cov, 0, (n - ki->n_cov) * sizeof(*v));
		ki->cov = v;
		ki->n_cov = n;
	}
	return &ki->cov[c];
}

/* A record of CPU c at ns; lost: a lost-events marker (the record before it ends a span). */
static int ki_cov_event(struct nf_timeline_kernel_ingest *ki, size_t c, int64_t ns, bool lost, struct nf_error *err)
{
	struct ki_cov *v = ki_cov_of(ki, c);

	if (!v)
		return nf_error_set(err, NF_ENOMEM, "timeline: kernel events: out of memory");
	if (!v->seen) {
		v->seen = true;
		v->from = v->last = ns;
	} else if (lost) {
		if (v->n_spans + 2 > v->cap_spans) {
			size_t n = v->cap_spans ? v->cap_spans * 2 : 8;
			int64_t *sp = realloc(v->spans, n * sizeof(*sp));

			if (!sp)
				return nf_error_set(err, NF_ENOMEM, "timeline: kernel events: out of memory");
			v->spans = sp;
			v->cap_spans = n;
		}
		v->spans[v->n_spans++] = v->from;
		v->spans[v->n_spans++] = v->last;
		v->from = ns;
	}
	if (!lost)
		v->records++;
	v->last = ns;
	return 0;
}

/* The CPU an event was recorded on; false for events of no CPU (strings, tasks, start). */
static bool ki_event_cpu(const struct nf_event *ev, uint64_t *cpu)
{
	const uint64_t *f = ev->f;

	switch (ev->id) {
	case NF_EV_KERNEL_SCHED_SWITCH: *cpu = f[NFF_KERNEL_SCHED_SWITCH_cpu]; return true;
	case NF_EV_KERNEL_SCHED_WAKEUP: *cpu = f[NFF_KERNEL_SCHED_WAKEUP_cpu]; return true;
	case NF_EV_KERNEL_DMA_FENCE_INIT: *cpu = f[NFF_KERNEL_DMA_FENCE_INIT_cpu]; return true;
	case NF_EV_KERNEL_DMA_FENCE_EMIT: *cpu = f[NFF_KERNEL_DMA_FENCE_EMIT_cpu]; return true;
	case NF_EV_KERNEL_DMA_FENCE_ENABLE_SIGNAL: *cpu = f[NFF_KERNEL_DMA_FENCE_ENABLE_SIGNAL_cpu]; return true;
	case NF_EV_KERNEL_DMA_FENCE_SIGNALED: *cpu = f[NFF_KERNEL_DMA_FENCE_SIGNALED_cpu]; return true;
	case NF_EV_KERNEL_DMA_FENCE_WAIT_START: *cpu = f[NFF_KERNEL_DMA_FENCE_WAIT_START_cpu]; return true;
	case NF_EV_KERNEL_DMA_FENCE_WAIT_END: *cpu = f[NFF_KERNEL_DMA_FENCE_WAIT_END_cpu]; return true;
	case NF_EV_KERNEL_DMA_FENCE_DESTROY: *cpu = f[NFF_KERNEL_DMA_FENCE_DESTROY_cpu]; return true;
	case NF_EV_KERNEL_LOST: *cpu = f[NFF_KERNEL_LOST_cpu]; return true;
	case NF_EV_KERNEL_RAW: *cpu = f[NFF_KERNEL_RAW_cpu]; return true;
	case NF_EV_KERNEL_GPU_JOB: *cpu = f[NFF_KERNEL_GPU_JOB_cpu]; return true;
	case NF_EV_KERNEL_VBLANK: *cpu = f[NFF_KERNEL_VBLANK_cpu]; return true;
	case NF_EV_KERNEL_MARKER: *cpu = f[NFF_KERNEL_MARKER_cpu]; return true;
	case NF_EV_KERNEL_FLIP: *cpu = f[NFF_KERNEL_FLIP_cpu]; return true;
	default: return false;
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
		nf_kf_init(&ki->kf);
		ki->mem = bulk != NULL;
		ki->fences = (struct ki_stage){
			.sql = "INSERT INTO temp.k_fences(context, seqno, init_ns, emit_ns, signal_ns, emit_tid) "
			       "SELECT c0, c1, c2, c3, c4, c5 FROM nf_bulk WHERE true ON CONFLICT(context, seqno) DO UPDATE SET "
			       "init_ns = coalesce(init_ns, excluded.init_ns), "
			       "emit_ns = coalesce(emit_ns, excluded.emit_ns), "
			       "signal_ns = coalesce(signal_ns, excluded.signal_ns), "
			       "emit_tid = coalesce(emit_tid, excluded.emit_tid)",
			.what = "timeline: kernel events: dma_fence sightings" };
		ki->vblanks = (struct ki_stage){ .sql = "INSERT INTO vblanks(ts_ns, crtc, seq) SELECT c0, c1, c2 FROM nf_bulk",
						 .what = "timeline: kernel events: vblanks" };
		ki->markers = (struct ki_stage){
			.sql = "INSERT INTO markers(ts_ns, thread, cpu, text) SELECT c0, c1, c2, c3 FROM nf_bulk",
			.what = "timeline: kernel events: markers" };
		*kip = ki;
	}
	if (ki->finished)
		return nf_error_set(err, NF_ESTATE, "timeline: kernel events after finish");
	if (ns > ki->end_ns)
		ki->end_ns = ns;
	uint64_t cpu;
	if (ki_event_cpu(ev, &cpu)) {
		if (cpu >= NF_KI_MAX_CPUS)
			return nf_error_set(err, NF_EFORMAT, "timeline: kernel events: CPU %" PRIu64 " out of range", cpu);
		/* events come in time order: the first one of a CPU is its earliest */
		int rc = ki_cov_event(ki, (size_t)cpu, ns, ev->id == NF_EV_KERNEL_LOST, err);

		if (rc)
			return rc;
	}
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
		sqlite3_bind_text(s, 4, nf_anomaly_name(NF_ANOMALY_KERNEL_LOST), -1, SQLITE_STATIC);
		return ki_step(ki, KS_LOST, err);
	}
	case NF_EV_KERNEL_CPU_STAT: {
		struct ki_cov *v;

		if (f[NFF_KERNEL_CPU_STAT_cpu] >= NF_KI_MAX_CPUS)
			return nf_error_set(err, NF_EFORMAT, "timeline: kernel events: CPU %" PRIu64 " out of range",
					    f[NFF_KERNEL_CPU_STAT_cpu]);
		if (!(v = ki_cov_of(ki, f[NFF_KERNEL_CPU_STAT_cpu])))
			return nf_error_set(err, NF_ENOMEM, "timeline: kernel events: out of memory");
		v->has_stat = true;
		v->file_records = f[NFF_KERNEL_CPU_STAT_records];
		v->stat_cpu = f[NFF_KERNEL_CPU_STAT_has_stat] != 0;
		v->read_events = f[NFF_KERNEL_CPU_STAT_read_events];
		v->overrun = f[NFF_KERNEL_CPU_STAT_overrun];
		v->dropped = f[NFF_KERNEL_CPU_STAT_dropped];
		return 0;
	}
	case NF_EV_KERNEL_RAW:
		return ki_raw(ki, ns, f[NFF_KERNEL_RAW_cpu], f[NFF_KERNEL_RAW_tid],
			      ki_str(ki, f[NFF_KERNEL_RAW_name]), ev->str, err);
	case NF_EV_KERNEL_GPU_JOB: {
		sqlite3_stmt *s = ki->st[KS_GPU];
		uint64_t fl = f[NFF_KERNEL_GPU_JOB_flags];
		uint64_t kind = (uint32_t)f[NFF_KERNEL_GPU_JOB_kind], job = f[NFF_KERNEL_GPU_JOB_job];
		uint64_t fence = f[NFF_KERNEL_GPU_JOB_fence];

		/* drm_sched before 6.16: a done event names the job by its fence's address,
		 * the address the latest queue event of that job gave (events come in time order). */
		if (kind == 3 && job != 0 && fence != 0 && nf_u64map_put(&ki->sched_fences, fence, job))
			return nf_error_set(err, NF_ENOMEM, "timeline: too many drm_sched fences");
		if (kind == 5 && job == 0 && fence != 0 && !(fl & 1)) {
			const uint64_t *j = nf_u64map_find(&ki->sched_fences, fence);

			job = j ? *j : 0;
		}

		/* Events with a job id are summed up in memory; dependencies are kept
		 * for job_deps, the others keyed at finish. */
		if (job != 0) {
			struct ki_jobagg e;
			int rc;

			ki_agg_of_event(&e, (int64_t)job, (int64_t)kind, ns, (int64_t)(uint32_t)f[NFF_KERNEL_GPU_JOB_tid],
					ki_str(ki, f[NFF_KERNEL_GPU_JOB_ring]), (int64_t)job, fl & 1,
					(int64_t)f[NFF_KERNEL_GPU_JOB_context], (int64_t)f[NFF_KERNEL_GPU_JOB_seqno], fl);
			if ((rc = ki_jobs_fold(ki, &e, err)))
				return rc;
			if (kind != 6)
				return 0;
		} else if ((fl & 1) || (kind >= 12 && kind <= 14 && (fl & 8))) {
			ki->gpu_unkeyed++;
		}
		if (kind >= 12 && kind <= 14 && (fl & 8))
			ki->gpu_xe++;
		sqlite3_bind_int64(s, 1, ns);
		sqlite3_bind_int64(s, 2, (int64_t)(uint32_t)f[NFF_KERNEL_GPU_JOB_tid]);
		sqlite3_bind_int64(s, 3, (int64_t)(uint32_t)f[NFF_KERNEL_GPU_JOB_kind]);
		bind_text_or_null(s, 4, ki_str(ki, f[NFF_KERNEL_GPU_JOB_ring]));
		sqlite3_bind_int64(s, 5, (int64_t)job);
		if (fl & 1)
			sqlite3_bind_int64(s, 6, (int64_t)f[NFF_KERNEL_GPU_JOB_context]);
		/* xe: the seqno on its queue, with or without the fence's context */
		if (fl & 9)
			sqlite3_bind_int64(s, 7, (int64_t)f[NFF_KERNEL_GPU_JOB_seqno]);
		sqlite3_bind_int64(s, 8, (int64_t)f[NFF_KERNEL_GPU_JOB_fence]);
		if (fl & 4) {
			sqlite3_bind_int64(s, 9, (int64_t)f[NFF_KERNEL_GPU_JOB_dep_context]);
			sqlite3_bind_int64(s, 10, (int64_t)f[NFF_KERNEL_GPU_JOB_dep_seqno]);
		}
		sqlite3_bind_int64(s, 11, (int64_t)fl);
		if (job != 0)
			sqlite3_bind_int64(s, 12, (int64_t)job);
		bind_text_or_null(s, 13, ki_str(ki, f[NFF_KERNEL_GPU_JOB_dev]));
		if (fl & 16)
			sqlite3_bind_int64(s, 14, (int64_t)f[NFF_KERNEL_GPU_JOB_client_id]);
		if (fl & 8)
			sqlite3_bind_int64(s, 15, (int64_t)f[NFF_KERNEL_GPU_JOB_queue]);
		if ((kind == 6 || kind == 16) && (fl & 4))
			ki->gpu_deps++;
		if (kind != 15 && (f[NFF_KERNEL_GPU_JOB_dev] || (fl & 16)))
			ki->gpu_dev++;
		return ki_step(ki, KS_GPU, err);
	}
	case NF_EV_KERNEL_VBLANK: {
		sqlite3_stmt *s = ki->st[KS_VBLANK];

		if (ki->bulk) {
			struct ki_srow *r = ki_stage_add(&ki->vblanks);

			if (!r)
				return nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
			ki_srow_int(r, 0, ns);
			ki_srow_int(r, 1, (int64_t)(int32_t)(uint32_t)f[NFF_KERNEL_VBLANK_crtc]);
			ki_srow_int(r, 2, (int64_t)(uint32_t)f[NFF_KERNEL_VBLANK_seq]);
			return ki_stage_done(ki, &ki->vblanks, err);
		}

		sqlite3_bind_int64(s, 1, ns);
		sqlite3_bind_int64(s, 2, (int64_t)(int32_t)(uint32_t)f[NFF_KERNEL_VBLANK_crtc]);
		sqlite3_bind_int64(s, 3, (int64_t)(uint32_t)f[NFF_KERNEL_VBLANK_seq]);
		return ki_step(ki, KS_VBLANK, err);
	}
	case NF_EV_KERNEL_FLIP:
		return nf_kflips_add(&ki->flips, ns, (int64_t)(uint32_t)f[NFF_KERNEL_FLIP_tid],
				     (int32_t)(uint32_t)f[NFF_KERNEL_FLIP_plane], f[NFF_KERNEL_FLIP_obj],
				     (int)f[NFF_KERNEL_FLIP_kind], err);
	case NF_EV_KERNEL_MARKER: {
		sqlite3_stmt *s = ki->st[KS_MARKER];

		if (ki->bulk) {
			struct ki_srow *r = ki_stage_add(&ki->markers);

			if (!r || !ki_stage_text(&ki->markers, r, 3, ev->str ? ev->str : ""))
				return nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
			ki_srow_int(r, 0, ns);
			ki_srow_int(r, 1, (int64_t)(uint32_t)f[NFF_KERNEL_MARKER_tid]);
			ki_srow_int(r, 2, (int64_t)(uint32_t)f[NFF_KERNEL_MARKER_cpu]);
			return ki_stage_done(ki, &ki->markers, err);
		}

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
	case NF_EV_KERNEL_START:
		ki->live = f[NFF_KERNEL_START_source] == 1;
		return 0;
	default:
		return 0;
	}
}

/* Signals first (their ids are needed by the waits' deps), then waits. The
 * queues' start: each context's first sighting, from temp.k_fences, or from
 * temp.k_fstart when the fences were held in memory (kernel_fences.h). */
#define KI_FINISH_TIMELINES_SQL(start_sql)                                                                   \
	"INSERT OR IGNORE INTO adapters(adapter, name, vidsch_caps, native_fence, gpu_frequency) "          \
	"SELECT " NF_WRITER_NO_ADAPTER_SQL ", 'Linux kernel dma_fence', NULL, 0, NULL WHERE EXISTS (SELECT 1 FROM kernel_timelines);" \
	"INSERT OR IGNORE INTO queues(queue, adapter, node, engine, name, start_ns, stop_ns) "              \
	"SELECT kt.queue, " NF_WRITER_NO_ADAPTER_SQL ", NULL, NULL, coalesce(kt.driver, '?') || ' ' || coalesce(kt.timeline, '?'), " \
	"  (" start_sql "), NULL FROM kernel_timelines kt;"                                                  \
	"INSERT OR IGNORE INTO fences(fence, type, shared, cross_adapter, initial_value, created_ns, destroyed_ns) " \
	"SELECT q.queue, 0, 0, 0, NULL, q.start_ns, NULL FROM queues q JOIN kernel_timelines kt ON kt.queue = q.queue;"
static const char ki_finish_timelines_sql[] = KI_FINISH_TIMELINES_SQL(
	"SELECT min(coalesce(init_ns, emit_ns, signal_ns)) FROM temp.k_fences f WHERE f.context = kt.context");
static const char ki_finish_timelines_mem_sql[] = KI_FINISH_TIMELINES_SQL(
	"SELECT f.start_ns FROM temp.k_fstart f WHERE f.context = kt.context");

static int ki_finish_signals(struct nf_timeline_kernel_ingest *ki, struct nf_error *err)
{
	sqlite3_stmt *sel = NULL, *ins = NULL, *upd = NULL;
	int rc = 0, src;

	/* No wait needs a signal's operation id: one INSERT ... SELECT. */
	if (!ki->wait_rows) {
		if ((rc = ki_exec(ki, "INSERT INTO fence_ops(queue, adapter, op, fence, handle, value, queued_ns, "
				  "observed_ns, end_ns, status, log_seq, epoch, thread) "
				  "SELECT " NF_WRITER_CONTEXT_BASE_SQL " + context, NULL, 'signal', " NF_WRITER_CONTEXT_BASE_SQL
				  " + context, NULL, seqno, "
				  "coalesce(emit_ns, init_ns), NULL, signal_ns, "
				  "CASE WHEN signal_ns IS NULL THEN 'unsignaled' ELSE 'complete' END, NULL, NULL, emit_tid "
				  "FROM temp.k_fences ORDER BY coalesce(emit_ns, init_ns, signal_ns), context, seqno", err)))
			return rc;
		goto out_threads;
	}
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
out_threads:
	/* Who emitted on each timeline: the queue_threads rows of the signals above. */
	if (sqlite3_exec(ki->db,
			 "INSERT INTO queue_threads(queue, fence, thread, ops) "
			 "SELECT " NF_WRITER_CONTEXT_BASE_SQL " + context, " NF_WRITER_CONTEXT_BASE_SQL " + context, emit_tid, count(*) "
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
			       "INSERT INTO deps(signal_id, wait_id, cpu_signal, stall_ns, reason) VALUES (?1, ?2, NULL, ?3, ?4)",
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
		bool released = nf_deps_one_shot_released(has_end, end, has_sig, sqlite3_column_int64(sel, 6));
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
		if (!has_end)
			continue; /* one row per wait that ended */
		const char *why = nf_deps_one_shot_reason(end, has_sig, sqlite3_column_int64(sel, 6));

		if (released)
			sqlite3_bind_value(dep, 1, sqlite3_column_value(sel, 5));
		else
			sqlite3_bind_null(dep, 1);
		sqlite3_bind_int64(dep, 2, wait_id);
		if (has_start)
			sqlite3_bind_int64(dep, 3, end - sqlite3_column_int64(sel, 3));
		else
			sqlite3_bind_null(dep, 3);
		if (why)
			sqlite3_bind_text(dep, 4, why, -1, SQLITE_STATIC);
		else
			sqlite3_bind_null(dep, 4);
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
/*
 * Events naming only the fence join the job whose id another event tied to that
 * fence; the rest are keyed by their fence, -(a number per (context, seqno));
 * then each becomes a partial of its own (merged with the others of its key by
 * ki_finish_jobagg). Run only when such events came: amdgpu's all carry the id.
 */
static const char ki_finish_unkeyed_sql[] =
	"CREATE INDEX temp.k_jobpart_ctx ON k_jobpart(context, seqno);"
	"CREATE INDEX temp.k_gpu_ctx ON k_gpu(context, seqno) WHERE job != 0 AND context IS NOT NULL;"
	"UPDATE temp.k_gpu SET job = coalesce((SELECT p.job FROM temp.k_jobpart p WHERE p.context = k_gpu.context "
	"  AND p.seqno = k_gpu.seqno AND p.job != 0 LIMIT 1), (SELECT m.job FROM temp.k_gpu m WHERE m.job != 0 AND "
	"  m.context IS NOT NULL AND m.context = k_gpu.context AND m.seqno = k_gpu.seqno LIMIT 1), 0) "
	"  WHERE job = 0 AND context IS NOT NULL AND (kind <= 6 OR kind = 16);"
	"UPDATE temp.k_gpu SET kkey = job WHERE kkey IS NULL AND job != 0;"
	"CREATE TEMP TABLE k_fkeys(context INTEGER, seqno INTEGER, UNIQUE(context, seqno));"
	"INSERT OR IGNORE INTO temp.k_fkeys(context, seqno) SELECT context, seqno FROM temp.k_gpu "
	"  WHERE kkey IS NULL AND context IS NOT NULL;"
	"UPDATE temp.k_gpu SET kkey = -(SELECT f.rowid FROM temp.k_fkeys f WHERE f.context = k_gpu.context "
	"  AND f.seqno = k_gpu.seqno) WHERE kkey IS NULL AND context IS NOT NULL;"
	"INSERT INTO temp.k_jobpart(kkey, amd, sched, ring, ring_kind, ring_ts, job, ctx_kind, context, seqno, "
	"  thread, thread_ts, sub, start, done, out, retire, first_ts, xe) "
	"SELECT kkey, kind IN (1, 2), kind BETWEEN 3 AND 6 OR kind = 16, ring, CASE WHEN ring IS NOT NULL THEN kind END, "
	"  CASE WHEN ring IS NOT NULL THEN ts END, job, "
	"  CASE WHEN context IS NOT NULL AND kind NOT IN (6, 16) THEN kind END, "
	"  CASE WHEN context IS NOT NULL AND kind NOT IN (6, 16) THEN context END, "
	"  CASE WHEN context IS NOT NULL AND kind NOT IN (6, 16) THEN seqno END, "
	"  CASE WHEN kind IN (1, 3, 7, 12) THEN tid END, CASE WHEN kind IN (1, 3, 7, 12) THEN ts END, "
	"  CASE WHEN kind IN (1, 3, 7, 12) THEN ts END, CASE WHEN kind IN (2, 4, 9, 13) THEN ts END, "
	"  CASE WHEN kind IN (5, 14) THEN ts END, CASE WHEN kind = 10 AND flags & 2 THEN ts END, "
	"  CASE WHEN kind = 11 THEN ts END, ts, kind BETWEEN 12 AND 14 "
	"FROM temp.k_gpu WHERE kkey IS NOT NULL AND folded = 0;";

/*
 * xe (before ki_finish_unkeyed_sql): a job's events are joined by its exec
 * queue's GuC id and its seqno on that queue (a key of their own, far below
 * the fence keys), and its ring is the exec queue's name as xe gives it
 * (rcs3: engine class and GuC id) from any xe_exec_queue_* event of that
 * queue, else "queue N" (its class is not in the trace).
 */
static const char ki_finish_xe_keys_sql[] =
	"CREATE TEMP TABLE k_xkeys(dev TEXT, queue INTEGER, seqno INTEGER, UNIQUE(dev, queue, seqno));"
	"INSERT OR IGNORE INTO temp.k_xkeys(dev, queue, seqno) SELECT coalesce(dev, ''), queue, seqno "
	"  FROM temp.k_gpu WHERE kind BETWEEN 12 AND 14 AND queue IS NOT NULL ORDER BY ts;"
	"UPDATE temp.k_gpu SET kkey = -4611686018427387904 - (SELECT x.rowid FROM temp.k_xkeys x "
	"  WHERE x.dev = coalesce(k_gpu.dev, '') AND x.queue = k_gpu.queue AND x.seqno = k_gpu.seqno) "
	"  WHERE kind BETWEEN 12 AND 14 AND queue IS NOT NULL;"
	"CREATE TEMP TABLE k_xrings(dev TEXT, queue INTEGER, ring TEXT, PRIMARY KEY(dev, queue));"
	"INSERT OR IGNORE INTO temp.k_xrings(dev, queue, ring) SELECT coalesce(dev, ''), queue, ring "
	"  FROM temp.k_gpu WHERE kind = 15 AND ring IS NOT NULL ORDER BY ts;"
	"UPDATE temp.k_gpu SET ring = coalesce((SELECT r.ring FROM temp.k_xrings r WHERE r.dev = coalesce(k_gpu.dev, '') "
	"  AND r.queue = k_gpu.queue), 'queue ' || queue) WHERE kind BETWEEN 12 AND 14 AND queue IS NOT NULL;";

/*
 * xe runs its jobs on the GPU scheduler: where the scheduler's events of a
 * ring (the exec queue's name) are in the trace too, they describe the same
 * jobs, with the finished fence other jobs depend on, and xe's are not
 * written again (after ki_finish_jobagg).
 */
static const char ki_finish_xe_dups_sql[] =
	"CREATE TEMP TABLE k_schedrings(dev TEXT, ring TEXT, PRIMARY KEY(dev, ring));"
	"INSERT OR IGNORE INTO temp.k_schedrings(dev, ring) SELECT coalesce(dev, ''), ring FROM temp.k_gpu "
	"  WHERE kind IN (3, 4) AND ring IS NOT NULL;"
	"DELETE FROM temp.k_jobagg WHERE driver = 'xe' AND EXISTS (SELECT 1 FROM temp.k_xkeys x "
	"  JOIN temp.k_schedrings r ON r.dev = x.dev AND r.ring = k_jobagg.ring "
	"  WHERE x.rowid = -4611686018427387904 - k_jobagg.kkey);";

/* One job's final row into temp.k_jobagg. */
static int ki_jobagg_write(sqlite3_stmt *ins, const struct ki_jobagg *a)
{
	bool fin = a->has_done || a->has_out || a->has_retire;
	int64_t finished = a->has_done ? a->done : a->has_out ? a->out : a->retire;
	int rc;

	sqlite3_bind_int64(ins, 1, a->kkey);
	sqlite3_bind_text(ins, 2, a->amd ? "amdgpu" : a->xe ? "xe" : a->sched ? "drm_sched" : "i915", -1, SQLITE_STATIC);
	bind_text_or_null(ins, 3, a->ring);
	ki_bind_opt(ins, 4, a->job != 0, a->job);
	ki_bind_opt(ins, 5, a->has_ctx, a->context);
	ki_bind_opt(ins, 6, a->has_ctx, a->seqno);
	ki_bind_opt(ins, 7, a->has_thread, a->thread);
	ki_bind_opt(ins, 8, a->has_sub, a->sub);
	ki_bind_opt(ins, 9, a->has_start, a->start);
	ki_bind_opt(ins, 10, fin, finished);
	sqlite3_bind_int64(ins, 11, a->has_sub ? a->sub : a->first_ts);
	rc = sqlite3_step(ins);
	sqlite3_reset(ins);
	sqlite3_clear_bindings(ins);
	return rc == SQLITE_DONE ? 0 : NF_ESQL;
}

static bool ki_col_opt(sqlite3_stmt *s, int col, int64_t *v)
{
	if (sqlite3_column_type(s, col) == SQLITE_NULL)
		return false;
	*v = sqlite3_column_int64(s, col);
	return true;
}

/* The partials of temp.k_jobpart merged per key into temp.k_jobagg (one pass in key order). */
static int ki_finish_jobagg(struct nf_timeline_kernel_ingest *ki, struct nf_error *err)
{
	sqlite3_stmt *sel = NULL, *ins = NULL;
	struct ki_jobagg a = { 0 }, b;
	bool have = false;
	int rc = 0, src;

	if (sqlite3_prepare_v2(ki->db, "SELECT kkey, amd, sched, ring, ring_kind, ring_ts, job, ctx_kind, context, "
			       "seqno, thread, thread_ts, sub, start, done, out, retire, first_ts, xe FROM temp.k_jobpart "
			       "ORDER BY kkey", -1, &sel, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(ki->db, "INSERT INTO temp.k_jobagg(kkey, driver, ring, job, context, seqno, thread, "
			       "submitted, started, finished, ord) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
			       -1, &ins, NULL) != SQLITE_OK) {
		rc = ki_sql_err(ki, err, "preparing GPU jobs");
		goto out;
	}
	while ((src = sqlite3_step(sel)) == SQLITE_ROW) {
		const char *ring = (const char *)sqlite3_column_text(sel, 3);

		b = (struct ki_jobagg){ .kkey = sqlite3_column_int64(sel, 0) };
		b.amd = sqlite3_column_int64(sel, 1) != 0;
		b.sched = sqlite3_column_int64(sel, 2) != 0;
		b.ring_kind = sqlite3_column_int64(sel, 4);
		b.ring_ts = sqlite3_column_int64(sel, 5);
		b.job = sqlite3_column_int64(sel, 6);
		b.has_ctx = ki_col_opt(sel, 7, &b.ctx_kind);
		b.context = sqlite3_column_int64(sel, 8);
		b.seqno = sqlite3_column_int64(sel, 9);
		b.thread = sqlite3_column_int64(sel, 10);
		b.has_thread = ki_col_opt(sel, 11, &b.thread_ts);
		b.has_sub = ki_col_opt(sel, 12, &b.sub);
		b.has_start = ki_col_opt(sel, 13, &b.start);
		b.has_done = ki_col_opt(sel, 14, &b.done);
		b.has_out = ki_col_opt(sel, 15, &b.out);
		b.has_retire = ki_col_opt(sel, 16, &b.retire);
		b.first_ts = sqlite3_column_int64(sel, 17);
		b.xe = sqlite3_column_int64(sel, 18) != 0;
		if (have && b.kkey != a.kkey) {
			if (ki_jobagg_write(ins, &a)) {
				rc = ki_sql_err(ki, err, "writing GPU jobs");
				goto out;
			}
			free(a.ring);
			a.ring = NULL;
			have = false;
		}
		if (ring && !(b.ring = strdup(ring))) {
			rc = nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
			goto out;
		}
		if (!have) {
			a = b;
			have = true;
			continue;
		}
		ki_agg_merge(&a, &b);
		free(b.ring);
	}
	if (src != SQLITE_DONE) {
		rc = ki_sql_err(ki, err, "reading GPU job events");
		goto out;
	}
	if (have && ki_jobagg_write(ins, &a))
		rc = ki_sql_err(ki, err, "writing GPU jobs");
out:
	free(a.ring);
	sqlite3_finalize(ins);
	sqlite3_finalize(sel);
	return rc;
}

/* Job key -> jobs.id, for the dependencies (only when there are any). */
static const char ki_finish_jobids_sql[] =
	"CREATE TEMP TABLE k_jobs(kkey INTEGER PRIMARY KEY, id INTEGER);"
	"INSERT INTO temp.k_jobs(kkey, id) SELECT kkey, coalesce((SELECT max(id) FROM jobs), 0) + "
	"  row_number() OVER (ORDER BY ord, kkey) FROM temp.k_jobagg;";

/* Job rows in submission order (a job's first event when its submission is not in
 * the trace): the same order as k_jobs' ids. */
static const char ki_finish_jobrows_sql[] =
	"INSERT INTO jobs(driver, ring, job, context, seqno, thread, submitted_ns, started_ns, finished_ns, "
	"  finish_source) "
	"SELECT driver, ring, job, context, seqno, thread, submitted, started, finished, "
	"  CASE WHEN finished IS NOT NULL THEN 'event' END FROM temp.k_jobagg ORDER BY ord, kkey;";

/* Submission order of two held jobs (ki_finish_jobs_direct). */
static int ki_job_cmp(const void *pa, const void *pb)
{
	const struct ki_jobagg *a = pa, *b = pb;
	int64_t oa = a->has_sub ? a->sub : a->first_ts, ob = b->has_sub ? b->sub : b->first_ts;

	if (oa != ob)
		return oa < ob ? -1 : 1;
	return a->kkey < b->kkey ? -1 : a->kkey > b->kkey;
}

static int ki_jobs_direct_row(void *ctx, struct nf_bulk_row *row, struct nf_error *err)
{
	struct ki_jobs_open *o = ctx;
	const struct ki_jobagg *a;
	bool fin;

	(void)err;
	if (o->next == o->n)
		return 0;
	a = &o->aggs[o->next++];
	fin = a->has_done || a->has_out || a->has_retire;
	nf_bulk_text(row, 0, a->amd ? "amdgpu" : a->sched ? "drm_sched" : "i915",
		     a->amd ? 6 : a->sched ? 9 : 4);
	if (a->ring)
		nf_bulk_text(row, 1, a->ring, (int)strlen(a->ring));
	nf_bulk_opt(row, 2, a->job != 0, a->job);
	nf_bulk_opt(row, 3, a->has_ctx, a->context);
	nf_bulk_opt(row, 4, a->has_ctx, a->seqno);
	nf_bulk_opt(row, 5, a->has_thread, a->thread);
	nf_bulk_opt(row, 6, a->has_sub, a->sub);
	nf_bulk_opt(row, 7, a->has_start, a->start);
	nf_bulk_opt(row, 8, fin, a->has_done ? a->done : a->has_out ? a->out : a->retire);
	if (fin)
		nf_bulk_text(row, 9, "event", 5);
	return 1;
}

static int ki_jobs_ids_row(void *ctx, struct nf_bulk_row *row, struct nf_error *err)
{
	struct ki_jobs_open *o = ctx;

	(void)err;
	if (o->next == o->n)
		return 0;
	nf_bulk_int(row, 0, o->aggs[o->next].kkey);
	nf_bulk_int(row, 1, o->first_id + (int64_t)o->next);
	o->next++;
	return 1;
}

/*
 * When every job's events were summed up in memory (no partial written, every
 * event with a job id): the jobs rows straight from there, in submission
 * order, without the k_jobpart/k_jobagg round trip. The same rows as
 * ki_finish_jobrows_sql (and k_jobs as ki_finish_jobids_sql).
 */
static int ki_finish_jobs_direct(struct nf_timeline_kernel_ingest *ki, struct nf_error *err)
{
	struct ki_jobs_open *o = &ki->jobs;
	sqlite3_stmt *s = NULL;
	int rc;

	if (o->n) /* aggs is NULL when no job came */
		qsort(o->aggs, o->n, sizeof(*o->aggs), ki_job_cmp);
	if (sqlite3_prepare_v2(ki->db, "SELECT coalesce(max(id), 0) + 1 FROM jobs", -1, &s, NULL) != SQLITE_OK ||
	    sqlite3_step(s) != SQLITE_ROW) {
		sqlite3_finalize(s);
		return ki_sql_err(ki, err, "reading jobs");
	}
	o->first_id = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	o->next = 0;
	if ((rc = nf_bulk_run(ki->bulk, "INSERT INTO jobs(driver, ring, job, context, seqno, thread, submitted_ns, "
			      "started_ns, finished_ns, finish_source) SELECT c0, c1, c2, c3, c4, c5, c6, c7, c8, c9 "
			      "FROM nf_bulk", ki_jobs_direct_row, o, false, "timeline: kernel events: jobs", err)))
		return rc;
	if (!ki->gpu_deps)
		return 0;
	o->next = 0;
	if ((rc = ki_exec(ki, "CREATE TEMP TABLE k_jobs(kkey INTEGER PRIMARY KEY, id INTEGER);", err)))
		return rc;
	return nf_bulk_run(ki->bulk, "INSERT INTO temp.k_jobs(kkey, id) SELECT c0, c1 FROM nf_bulk",
			   ki_jobs_ids_row, o, false, "timeline: kernel events: job ids", err);
}

static const char ki_finish_jobs_sql[] =
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
	"FROM jobs t WHERE context IS NOT NULL AND driver NOT IN ('i915', 'xe') GROUP BY context;"
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
	/* Starts and finishes no event gave, from the job's two fences. */
	"UPDATE jobs SET sched_context = t.scheduled_context, "
	"  started_ns = coalesce(jobs.started_ns, (SELECT f.signal_ns FROM temp.k_fences f "
	"    WHERE f.context = t.scheduled_context AND f.seqno = jobs.seqno)), "
	"  finished_ns = coalesce(jobs.finished_ns, (SELECT f.signal_ns FROM temp.k_fences f "
	"    WHERE f.context = t.finished_context AND f.seqno = jobs.seqno)) "
	"  FROM job_timelines t WHERE t.context = jobs.context AND jobs.driver NOT IN ('i915', 'xe');"
	/* xe: a job's fence is its hardware fence (one per job): its signal, when no
	 * xe_hw_fence_signal was seen */
	"UPDATE jobs SET finished_ns = (SELECT f.signal_ns FROM temp.k_fences f WHERE f.context = jobs.context "
	"  AND f.seqno = jobs.seqno) WHERE driver = 'xe' AND finished_ns IS NULL AND context IS NOT NULL;"
	"UPDATE jobs SET finish_source = 'signaled' WHERE finish_source IS NULL AND finished_ns IS NOT NULL;"
	/*
	 * amdgpu: a ring's fences signal in the order the jobs were run on it
	 * (amdgpu_fence_process signals every seqno up to the one it read), so a job
	 * run later on the same ring that finished bounds the finish of one whose
	 * signal is not in the trace: finished no later than the earliest such
	 * finish ('ring_order'), kept apart from finished_ns. Only finishes seen in
	 * the trace bound others.
	 */
	"UPDATE jobs SET finished_bound_ns = b.bound, bound_source = 'ring_order' FROM ("
	"  SELECT id, min(finished_ns) OVER (PARTITION BY ring "
	"    ORDER BY started_ns DESC, id DESC ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS bound "
	"  FROM jobs WHERE driver = 'amdgpu' AND ring IS NOT NULL AND started_ns IS NOT NULL "
	"  AND EXISTS (SELECT 1 FROM jobs u WHERE u.driver = 'amdgpu' AND u.finished_ns IS NULL "
	"    AND u.started_ns IS NOT NULL)) b "
	"  WHERE jobs.id = b.id AND jobs.finished_ns IS NULL AND b.bound IS NOT NULL;"
	"UPDATE jobs SET process = (SELECT k.process FROM kernel_threads k WHERE k.thread = jobs.thread);"
	"CREATE INDEX jobs_fence ON jobs(context, seqno);"
	/* The job run before another on its ring (critical paths of jobs). */
	"CREATE INDEX jobs_ring ON jobs(ring, started_ns);";

static const char ki_finish_deps_sql[] =
	"INSERT INTO job_deps(job, dep_context, dep_seqno, dep_job, dep_fence, ts_ns) "
	"SELECT k.id, d.dep_context, d.dep_seqno, coalesce(f.id, s.id), "
	"  CASE WHEN f.id IS NOT NULL THEN 'finished' WHEN s.id IS NOT NULL THEN 'scheduled' END, d.ts "
	"FROM temp.k_gpu d JOIN temp.k_jobs k ON k.kkey = d.kkey "
	"LEFT JOIN jobs f ON f.context = d.dep_context AND f.seqno = d.dep_seqno "
	"LEFT JOIN jobs s ON f.id IS NULL AND s.sched_context = d.dep_context AND s.seqno = d.dep_seqno "
	"WHERE d.kind = 6 AND d.flags & 4 ORDER BY k.id, d.ts;"
	/* drm_sched_job_unschedulable: the dependency was not signaled when the scheduler picked the job */
	"INSERT INTO job_unschedulable(job, dep_context, dep_seqno, dep_job, dep_fence, ts_ns) "
	"SELECT k.id, d.dep_context, d.dep_seqno, coalesce(f.id, s.id), "
	"  CASE WHEN f.id IS NOT NULL THEN 'finished' WHEN s.id IS NOT NULL THEN 'scheduled' END, d.ts "
	"FROM temp.k_gpu d JOIN temp.k_jobs k ON k.kkey = d.kkey "
	"LEFT JOIN jobs f ON f.context = d.dep_context AND f.seqno = d.dep_seqno "
	"LEFT JOIN jobs s ON f.id IS NULL AND s.sched_context = d.dep_context AND s.seqno = d.dep_seqno "
	"WHERE d.kind = 16 AND d.flags & 4 ORDER BY k.id, d.ts;";

/* The device and DRM client of each job whose events name them (Linux 6.16 on, xe). */
static const char ki_finish_devices_sql[] =
	"CREATE TEMP TABLE k_jobdev AS SELECT k.id AS id, min(g.dev) AS dev, max(g.client) AS client "
	"  FROM temp.k_gpu g JOIN temp.k_jobs k ON k.kkey = g.kkey "
	"  WHERE g.dev IS NOT NULL OR g.client IS NOT NULL GROUP BY k.id;"
	"UPDATE jobs SET device = d.dev, client_id = d.client FROM temp.k_jobdev d WHERE d.id = jobs.id;"
	"DROP TABLE temp.k_jobdev;";

/*
 * What the file holds of each CPU (the coverage rows) and the moment from which
 * every CPU is recorded (meta kernel_all_cpus_from_ns). A trace-cmd capture's
 * per-CPU buffers can begin at different times (an overwriting buffer, a
 * per-CPU size limit keep each CPU's latest pages), so before that moment an
 * event can be missing; a lost-events marker splits its CPU's record. A CPU
 * begins at the session start when the file's CPUSTAT says its buffer holds
 * every event the recorder read from it and none was overwritten (a CPU that
 * was quiet at first), or when the capture was live (every CPU's buffer starts
 * at once); else at its first record. Every CPU's record ends with the
 * capture.
 */
static int ki_finish_coverage(struct nf_timeline_kernel_ingest *ki, int64_t end, bool *has_from, int64_t *from,
			      struct nf_error *err)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;

	*has_from = false;
	*from = 0;
	if (sqlite3_prepare_v2(ki->db, "INSERT INTO coverage(scope, id, log, from_ns, to_ns, events, detail) "
			       "VALUES ('cpu', ?1, NULL, ?2, ?3, ?4, ?5)", -1, &st, NULL) != SQLITE_OK)
		return ki_sql_err(ki, err, "coverage");
	bool all = true;    /* every CPU has a span */
	bool any = false;
	int64_t latest = 0; /* the latest start of a CPU's last span */

	for (size_t c = 0; c < ki->n_cov && rc == 0; c++) {
		const struct ki_cov *v = &ki->cov[c];
		bool whole = ki->live || (v->has_stat && v->stat_cpu && v->overrun == 0 && v->dropped == 0 &&
					  v->file_records >= v->read_events);
		char detail[240];

		if (!v->seen && !v->has_stat)
			continue;
		any = true;
		if (ki->live)
			snprintf(detail, sizeof(detail), "live capture: every CPU's buffer starts with the recording");
		else if (v->has_stat && v->stat_cpu)
			snprintf(detail, sizeof(detail), "CPUSTAT: %" PRIu64 " events read, %" PRIu64 " in the file, %" PRIu64
				 " overrun, %" PRIu64 " dropped: %s", v->read_events, v->file_records, v->overrun,
				 v->dropped, whole ? "whole from the start" : "cut at the start, whole from its first record");
		else
			snprintf(detail, sizeof(detail), "no CPUSTAT for this CPU: whole from its first record");
		if (!v->seen) {
			/* no record: quiet all along (whole), or cut entirely */
			sqlite3_bind_int64(st, 1, (int64_t)c);
			if (whole) {
				sqlite3_bind_int64(st, 2, 0);
				sqlite3_bind_int64(st, 3, end);
			} else {
				sqlite3_bind_null(st, 2);
				sqlite3_bind_null(st, 3);
				all = false;
			}
			sqlite3_bind_int64(st, 4, 0);
			sqlite3_bind_text(st, 5, detail, -1, SQLITE_TRANSIENT);
			rc = nf_writer_step(ki->db, st, "kernel events", "coverage", err);
			sqlite3_clear_bindings(st);
			continue;
		}
		/* closed spans, then the open one to the capture's end */
		for (size_t i = 0; i <= v->n_spans / 2 && rc == 0; i++) {
			bool last = i == v->n_spans / 2;
			int64_t f = last ? v->from : v->spans[2 * i], t = last ? end : v->spans[2 * i + 1];
			char d2[280];

			if (i == 0 && whole)
				f = 0;
			if (i > 0)
				snprintf(d2, sizeof(d2), "after lost events");
			else
				snprintf(d2, sizeof(d2), "%s", detail);
			sqlite3_bind_int64(st, 1, (int64_t)c);
			sqlite3_bind_int64(st, 2, f);
			sqlite3_bind_int64(st, 3, t);
			if (last && v->n_spans == 0)
				sqlite3_bind_int64(st, 4, (int64_t)v->records);
			else
				sqlite3_bind_null(st, 4);
			sqlite3_bind_text(st, 5, d2, -1, SQLITE_TRANSIENT);
			rc = nf_writer_step(ki->db, st, "kernel events", "coverage", err);
			sqlite3_clear_bindings(st);
			if (last && (f > latest))
				latest = f;
		}
	}
	sqlite3_finalize(st);
	if (rc || !any || !all)
		return rc;
	*has_from = true;
	*from = latest;
	return nf_writer_meta_int(ki->db, "kernel_all_cpus_from_ns", latest, err);
}

/*
 * What the file does not say of a job stays unknown, with its reason
 * (schemas/timeline.sql, jobs). A bound on a finish is proven only by a job
 * run later on its ring that finished ('ring_order'); for such a job that
 * started before every CPU was recording, that moment is a tighter bound
 * ('recording_start': it finished before the capture ended, and a finish after
 * that moment would be in the file).
 */
static int ki_finish_reasons(struct nf_timeline_kernel_ingest *ki, bool has_from, int64_t from, struct nf_error *err)
{
	static const char sql[] =
		/* ?1: every CPU recorded from then (NULL: never every CPU) */
		"UPDATE jobs SET finished_bound_ns = ?1, bound_source = 'recording_start' "
		"WHERE ?1 IS NOT NULL AND finished_ns IS NULL AND bound_source = 'ring_order' AND finished_bound_ns > ?1 "
		"AND started_ns < ?1;"
		"CREATE TEMP TABLE k_lost AS SELECT min(first_ns) AS at FROM anomalies WHERE kind = 'kernel_lost';"
		"CREATE TEMP TABLE k_traced AS SELECT driver, "
		"  max(started_ns IS NOT NULL) AS starts FROM jobs GROUP BY driver;"
		/* a ring whose finishes the file does not hold although it covers one of its jobs */
		"CREATE TEMP TABLE k_ringfin AS SELECT driver, ring, max(finished_ns IS NOT NULL) AS finishes, "
		"  max(?1 IS NOT NULL AND started_ns >= ?1) AS covered FROM jobs GROUP BY driver, ring;"
		"UPDATE jobs SET start_reason = CASE "
		"  WHEN ?1 IS NULL OR coalesce(submitted_ns, finished_ns) IS NULL OR coalesce(submitted_ns, finished_ns) < ?1 "
		"    THEN 'not_covered' "
		"  WHEN (SELECT at FROM temp.k_lost) >= coalesce(submitted_ns, finished_ns) THEN 'lost' "
		"  WHEN NOT (SELECT starts FROM temp.k_traced t WHERE t.driver = jobs.driver) THEN 'not_traced' "
		"  ELSE 'ended' END WHERE started_ns IS NULL;"
		"UPDATE jobs SET finish_reason = CASE "
		"  WHEN started_ns IS NULL THEN start_reason "
		"  WHEN EXISTS (SELECT 1 FROM temp.k_ringfin r WHERE r.driver = jobs.driver AND r.ring IS jobs.ring "
		"    AND NOT r.finishes AND r.covered) THEN 'not_traced' "
		"  WHEN ?1 IS NULL OR started_ns < ?1 THEN 'not_covered' "
		"  WHEN NOT coalesce((SELECT finishes FROM temp.k_ringfin r WHERE r.driver = jobs.driver "
		"    AND r.ring IS jobs.ring), 0) THEN 'not_traced' "
		"  WHEN (SELECT at FROM temp.k_lost) >= started_ns THEN 'lost' "
		/* it finished within the capture (a later job on its ring did), which
		 * covers it: its own finish is not traced */
		"  WHEN bound_source IS NOT NULL THEN 'not_traced' "
		"  ELSE 'ended' END WHERE finished_ns IS NULL;"
		"UPDATE jobs SET status = CASE WHEN started_ns IS NULL THEN "
		"  CASE WHEN start_reason = 'ended' THEN 'queued' ELSE 'unknown' END "
		"  WHEN finished_ns IS NULL THEN 'unfinished' ELSE 'complete' END;"
		"DROP TABLE temp.k_lost; DROP TABLE temp.k_traced; DROP TABLE temp.k_ringfin;";
	const char *tail = sql;
	int rc = 0;

	while (rc == 0 && *tail) {
		sqlite3_stmt *st = NULL;

		if (sqlite3_prepare_v2(ki->db, tail, -1, &st, &tail) != SQLITE_OK)
			return ki_sql_err(ki, err, "jobs' reasons");
		if (!st)
			break;
		if (sqlite3_bind_parameter_count(st) >= 1) {
			if (has_from)
				sqlite3_bind_int64(st, 1, from);
			else
				sqlite3_bind_null(st, 1);
		}
		rc = nf_writer_step(ki->db, st, "kernel events", "jobs' reasons", err);
		sqlite3_finalize(st);
	}
	return rc;
}

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
		if ((rc = nf_runs_add(ki->runs, cs->tid, (int64_t)c, true, cs->start_ns, false, 0, false, 0, err)))
			return rc;
	}
	if ((rc = nf_runs_finish(ki->runs, err)) || (rc = ki_stage_flush(ki, &ki->fences, err)) ||
	    (rc = ki_stage_flush(ki, &ki->vblanks, err)) || (rc = ki_stage_flush(ki, &ki->markers, err)))
		return rc;
	if (ki->mem) {
		/* temp.k_fences is read by the jobs' SQL only: when there are jobs, it
		 * becomes the virtual table over the held fences (kernel_fences.h). */
		bool jobs = ki->jobs.n || ki->jobs.flushed || ki->gpu_unkeyed || ki->gpu_deps;

		if ((rc = nf_kf_write_starts(&ki->kf, ki->db, err)) ||
		    (rc = ki_exec(ki, ki_finish_timelines_mem_sql, err)) ||
		    (rc = nf_kf_write(&ki->kf, ki->db, ki->bulk, jobs, err)))
			return rc;
		nf_kf_free(&ki->kf);
	} else if ((rc = ki_exec(ki, ki_finish_timelines_sql, err)) || (rc = ki_finish_signals(ki, err)) ||
		   (rc = ki_finish_waits(ki, err))) {
		return rc;
	}
	if ((rc = ki_exec(ki, "CREATE TEMP TABLE k_jobagg(kkey INTEGER PRIMARY KEY, driver TEXT, ring TEXT, "
			  "job INTEGER, context INTEGER, seqno INTEGER, thread INTEGER, submitted INTEGER, "
			  "started INTEGER, finished INTEGER, ord INTEGER);", err)))
		return rc;
	if (ki->bulk && !ki->jobs.flushed && !ki->gpu_unkeyed) {
		if ((rc = ki_finish_jobs_direct(ki, err)))
			return rc;
	} else if ((rc = ki_jobs_flush(ki, err)) ||
		   (ki->gpu_xe && (rc = ki_exec(ki, ki_finish_xe_keys_sql, err))) ||
		   (ki->gpu_unkeyed && (rc = ki_exec(ki, ki_finish_unkeyed_sql, err))) ||
		   (rc = ki_finish_jobagg(ki, err)) ||
		   (ki->gpu_xe && (rc = ki_exec(ki, ki_finish_xe_dups_sql, err))) ||
		   ((ki->gpu_deps || ki->gpu_dev) && (rc = ki_exec(ki, ki_finish_jobids_sql, err))) ||
		   (rc = ki_exec(ki, ki_finish_jobrows_sql, err))) {
		return rc;
	}
	bool has_from;
	int64_t from;

	if ((rc = ki_exec(ki, ki_finish_jobs_sql, err)) ||
	    (rc = ki_finish_coverage(ki, ki->end_ns, &has_from, &from, err)) ||
	    (rc = ki_finish_reasons(ki, has_from, from, err)) ||
	    (rc = nf_writer_deps_reasons(ki->db, "kernel events", "timeout", err)) ||
	    (ki->gpu_deps && (rc = ki_exec(ki, ki_finish_deps_sql, err))) ||
	    (ki->gpu_dev && (rc = ki_exec(ki, ki_finish_devices_sql, err))) ||
	    (rc = nf_kflips_write(&ki->flips, ki->db, err)))
		return rc;
	return ki_exec(ki, "DROP TABLE temp.k_fences; DROP TABLE temp.k_waits; DROP TABLE temp.k_gpu;"
		       "DROP TABLE temp.k_jobagg; DROP TABLE temp.k_jobpart; DROP TABLE IF EXISTS temp.k_jobs;"
		       "DROP TABLE IF EXISTS temp.k_xkeys; DROP TABLE IF EXISTS temp.k_xrings;"
		       "DROP TABLE IF EXISTS temp.k_schedrings;"
		       "DROP TABLE IF EXISTS temp.k_fkeys; DROP TABLE IF EXISTS temp.k_fstart;"
		       "CREATE INDEX kernel_events_ts ON kernel_events(ts_ns);", err);
}
