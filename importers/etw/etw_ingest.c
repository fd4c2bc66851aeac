/*
 * Windows ETW events into the timeline (see etw_ingest.h and the "Windows ETW
 * captures" block of schemas/timeline.sql). Handles (contexts, hardware
 * queues, sync objects, adapters) get dense numbers in order of appearance;
 * queue packets are matched by pQueuePacket (kernel addresses are reused, so
 * only while a packet is open), DMA packets by context and submission id, CPU
 * waits by sync object and value. Rows are written as they complete, with ids
 * taken when they started; what is still open is written at finish, then the
 * objects, deps (SQL over the loaded rows) and the counts.
 */
#include "etw_ingest.h"
#include "etw_present.h"
#include "contract/errors.h"
#include "contract/timeline_writer.h"
#include "contract/deps.h"
#include "contract/sattime.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract/anomaly_kinds.h"
#include "contract/capbuf.h"
#include "contract/util_hash.h"
#include "contract/etl.h"

/* Distinct keys in one map at most (a hostile capture cannot exhaust memory). */
#define EW_MAX_KEYS (1u << 22)
/* Packets of one context in flight kept in order at most (past it observed_ns
 * of later waits is unknown). */
#define EW_CTX_RING 4096u
/* Unwaits seen before their wait (records of other CPUs up to this late). */
#define EW_ORPHANS 256u
#define EW_ORPHAN_NS 100000
/* Recent signal packets remembered to group a multi-context signal. */
#define EW_RECENT 256u
#define EW_GROUP_NS 1000000
/* Open CPU waits at most (past it a wait start is kept raw). */
#define EW_MAX_CPU_WAITS 65536u
/* Hardware-queue waits and signals open at once at most (past it one is written at
 * once, end unknown); signals the queue got past, remembered for a late 551/552. */
#define EW_MAX_HW_OPS (1u << 18)
#define EW_PASSED 256u
#define EW_MAX_PROVIDERS 4096u

/* The maps are core's nf_u64map (core/util_hash.h), at most EW_MAX_KEYS keys each. */

/* A growing array of fixed-size items. */
struct ew_vec {
	void *p;
	size_t n, cap, size;
};

static void *ew_vec_push(struct ew_vec *v)
{
	if (nf_array_reserve(&v->p, &v->cap, v->n + 1, v->size, 64, EW_MAX_KEYS))
		return NULL;
	void *it = (char *)v->p + v->n * v->size;

	memset(it, 0, v->size);
	v->n++;
	return it;
}

#define EW_AT(vec, type, i) (&((type *)(vec).p)[i])

/* ---- objects ---- */
enum { K_CONTEXT, K_HWQUEUE };

struct ew_ctx {
	uint64_t handle;
	int kind;
	int64_t adapter;       /* index, -1 unknown */
	int64_t node;          /* -1 unknown */
	int64_t parent;        /* queue of the context (hardware queues), -1 */
	uint64_t device;       /* 0 unknown */
	int64_t start_ns, stop_ns; /* -1 unknown */
	uint32_t *ring;        /* open packets (pool indices) in queued order */
	uint32_t r_head, r_n, r_cap;
	bool ring_full;        /* a packet was not kept: observed_ns unknown until it empties */
	/* Hardware scheduling (see ew_hw_row) */
	bool has_hwq;          /* a context a hardware queue (422-424) belongs to */
	bool sw_packets;       /* queue packets (178/244/245) named it: the OS schedules it */
	uint8_t last_kind;     /* the latest work queued on it and still open: I_NONE, I_DMA, I_WAIT */
	int64_t last_idx;      /* its dmas or hops index */
	int64_t hop_head, hop_tail; /* its open GPU waits and signals, in queued order (-1: none) */
};

enum { I_NONE, I_DMA, I_WAIT };

enum { S_SYNC, S_MONITORED, S_NATIVE };

struct ew_sync {
	uint64_t handle;
	int kind;
	int64_t adapter;
	int64_t created_ns, destroyed_ns; /* -1 unknown */
	uint64_t initial;
	bool has_initial;
	bool sw;               /* a queue packet (244/245) named it */
	bool has_reached;      /* a signal of it completed: reached is the highest value */
	uint64_t reached;
	int64_t wait_head;     /* hardware-queue waits not released yet (hops list, -1: none) */
	int64_t sig_head;      /* hardware-queue signals not completed yet */
};

/* A GPU wait (295) or signal (294) on a hardware queue, open until its end is known. */
enum { H_WAIT, H_SIGNAL };

struct ew_hop {
	bool used;
	uint8_t kind;
	bool released;         /* waits: the fence reached the value, at release_ns (INT64_MIN: before it was queued) */
	uint32_t tid;
	int64_t op_id, queue, fence, event; /* queue and fence: ctxs and syncs indices; event: dxgkrnl_events.id */
	uint64_t value;
	int64_t queued_ns, observed_ns, release_ns, bound_ns; /* -1 unknown */
	int64_t next_wait;     /* the wait queued right after this one on its queue (-1) */
	int64_t next_wait_op;  /* that wait's op_id (the slot is checked to still hold it) */
	int64_t fence_next;    /* the fence's list (wait_head or sig_head) */
	int64_t row_prev, row_next; /* its queue's open list */
};

/* A hardware-queue signal written with its end unknown: a later 551/552 of it is no signal of its own. */
struct ew_passed {
	int64_t fence;
	uint64_t value;
	bool used;
};

struct ew_node {
	int64_t adapter;
	uint32_t node;
	int64_t engine_type;   /* -1 unknown */
	char name[64];
};

enum { P_RENDER, P_WAIT, P_SIGNAL };

struct ew_pkt {
	bool used;
	int kind;
	uint64_t pq;
	int64_t id;            /* queue_packets.id */
	int64_t queue;         /* context index */
	uint32_t ptype, seq, tid;
	bool present;
	int64_t queued_ns;
	/* wait */
	int64_t op_id, fence;
	uint64_t value;
	int64_t observed_ns;   /* -1 unknown */
	int64_t unwait_ns;     /* -1 not yet */
	int64_t aborted_ns;    /* signal packets: AbortQueuePacket's time, -1 none */
	/* signal: n ops from op_id, fences and values */
	uint32_t n;
	int64_t *fences;
	uint64_t *values;
};

struct ew_dma {
	bool used;
	uint64_t key_ctx, key_sub;
	int64_t id, queue, adapter, node;
	uint32_t ptype, seq;
	bool hw;
	int64_t start_ns, isr_ns;  /* isr -1 unknown */
	int64_t next_wait;         /* hardware queues: the wait queued right after it (hops index, -1) */
	int64_t next_wait_op;      /* that wait's op_id */
};

struct ew_cwait {
	int64_t fence, start_ns, op_id, id, adapter;
	uint64_t value;
	uint32_t tid;
};

struct ew_orphan {
	uint64_t pq;
	int64_t ns;
	bool used;
};

struct ew_recent {
	int64_t op_id, fence, ns;
	uint64_t value;
	uint32_t tid;
	bool used;
};

struct ew_count {
	uint32_t provider;
	uint16_t id;
	uint8_t version;
	uint64_t events, mismatches;
};

/* queue_threads, counted as operations are written: (queue, fence, thread). */
struct ew_qt {
	int64_t queue, fence;
	uint32_t tid;
	uint64_t ops;
};

struct ew_qt_table {
	struct ew_qt *t;   /* open addressing; queue 0 marks an empty slot */
	size_t cap, n;
};

#define EW_MAX_QT (1u << 20)

static size_t ew_qt_slot(const struct ew_qt_table *q, int64_t queue, int64_t fence, uint32_t tid)
{
	uint64_t h = ((uint64_t)queue * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)fence * 0xC2B2AE3D27D4EB4Full) ^
		     ((uint64_t)tid * 0x165667B19E3779F9ull);
	size_t i = (size_t)(h >> 20) & (q->cap - 1);

	while (q->t[i].queue && (q->t[i].queue != queue || q->t[i].fence != fence || q->t[i].tid != tid))
		i = (i + 1) & (q->cap - 1);
	return i;
}

/* Counts one operation; queue and fence as written (from 1; fence 0: none). */
static int ew_qt_add(struct ew_qt_table *q, int64_t queue, int64_t fence, uint32_t tid)
{
	if ((q->n + 1) * 2 > q->cap) {
		struct ew_qt_table n = { NULL, q->cap ? q->cap * 2 : 256, 0 };

		if (q->n >= EW_MAX_QT || !(n.t = calloc(n.cap, sizeof(*n.t))))
			return NF_ENOMEM;
		for (size_t i = 0; i < q->cap; i++)
			if (q->t[i].queue)
				n.t[ew_qt_slot(&n, q->t[i].queue, q->t[i].fence, q->t[i].tid)] = q->t[i];
		n.n = q->n;
		free(q->t);
		*q = n;
	}
	size_t i = ew_qt_slot(q, queue, fence, tid);

	if (!q->t[i].queue) {
		q->t[i] = (struct ew_qt){ queue, fence, tid, 0 };
		q->n++;
	}
	q->t[i].ops++;
	return 0;
}

struct ew_proc {
	char name[64];
};

struct ew_run {
	bool known, has_start;
	uint32_t tid;
	int64_t start_ns;
};

enum ew_stmt {
	ES_OP, ES_PACKET, ES_DMA, ES_CWAIT, ES_CSIGNAL, ES_VSYNC, ES_RAW, ES_LOST, ES_GROUP,
	ES_CALIB, ES_RUN, ES_THREAD, ES_THREAD_IF_NONE, ES_PROCESS, ES_DXG, ES_GPU_OP, ES_COUNT
};

static const char *const ew_sql[ES_COUNT] = {
	[ES_OP] = "INSERT INTO fence_ops(id, queue, adapter, op, fence, handle, value, queued_ns, "
		  "observed_ns, end_ns, status, log_seq, epoch, thread) "
		  "VALUES (?1, ?2, ?3, ?4, ?5, NULL, ?6, ?7, ?8, ?9, ?10, NULL, NULL, ?11)",
	[ES_PACKET] = "INSERT INTO queue_packets(id, queue, kind, packet_type, submit_seq, present, "
		      "queued_ns, end_ns, preempted, thread) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
	[ES_DMA] = "INSERT INTO dma_packets(id, adapter, node, queue, packet_type, submission_id, "
		   "queue_seq, start_ns, isr_ns, end_ns, status) "
		   "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
	[ES_CWAIT] = "INSERT INTO cpu_waits(id, thread, adapter, fence, value, start_ns, end_ns, status) "
		     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
	[ES_CSIGNAL] = "INSERT INTO cpu_signals(thread, adapter, fence, value, ts_ns) "
		       "VALUES (?1, ?2, ?3, ?4, ?5)",
	[ES_VSYNC] = "INSERT INTO vsyncs(ts_ns, adapter, target, frame, display) VALUES (?1, ?2, ?3, ?4, ?5)",
	[ES_RAW] = "INSERT INTO etw_events(ts_ns, cpu, process, thread, provider, event_id, version, "
		   "opcode, size) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
	[ES_LOST] = "INSERT INTO anomalies(kind, queue, log, first_ns, last_ns, lost_entries, detail) "
		    "VALUES (?4, NULL, NULL, ?1, ?1, ?2, ?3)", /* ?4: etw_lost */
	[ES_GROUP] = "INSERT INTO temp.etw_sig_group(op, grp) VALUES (?1, ?2)",
	[ES_CALIB] = "INSERT INTO calibrations(adapter, ts_ns, gpu_clock, gpu_frequency, from_cmp, "
		     "residual_ns) VALUES (?1, ?2, ?3, NULL, 0, NULL)",
	[ES_RUN] = "INSERT INTO cpu_runs(thread, cpu, start_ns, end_ns, end_state) VALUES (?1, ?2, ?3, ?4, ?5)",
	[ES_THREAD] = "INSERT OR REPLACE INTO kernel_threads(thread, comm) VALUES (?1, ?2)",
	/* A thread the kernel named keeps its name over its process's. */
	[ES_THREAD_IF_NONE] = "INSERT OR IGNORE INTO kernel_threads(thread, comm) VALUES (?1, ?2)",
	[ES_PROCESS] = "INSERT OR REPLACE INTO etw_processes(process, name) VALUES (?1, ?2)",
	[ES_DXG] = "INSERT INTO dxgkrnl_events(id, ts_ns, cpu, process, thread, event_id, version, fields) "
		   "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
	[ES_GPU_OP] = "INSERT INTO etw_gpu_ops(op, event, end_event, end_bound_ns) VALUES (?1, ?2, ?3, ?4)",
};

struct nf_etwi {
	sqlite3 *db;
	struct ew_presents *pres;  /* presents, flips and VSyncs (etw_present.c) */
	sqlite3_stmt *st[ES_COUNT];
	struct nf_u64map ctx_map, hwq_map, sync_map, adapter_map, device_proc, device_adapter, pkt_map, dma_map;
	struct nf_u64map count_map, node_map, proc_map;
	struct nf_u64map thread_proc;  /* thread -> process, from the DxgKrnl events' headers */
	struct ew_vec procs;       /* process names for queue names (struct ew_proc) */
	struct ew_qt_table qt;     /* queue_threads */
	struct ew_vec ctxs, syncs, adapters, nodes, pkts, dmas, cwaits, counts, runs, hops;
	char **providers;
	size_t n_providers;
	size_t pkt_free_hint, dma_free_hint, hop_free_hint;
	int64_t next_dxg;       /* dxgkrnl_events.id of the next decoded DxgKrnl event */
	int64_t cur_dxg;        /* that of the event being handled (-1: none) */
	struct ew_orphan orphans[EW_ORPHANS];
	uint32_t orphan_next;
	struct ew_recent recent[EW_RECENT];
	uint32_t recent_next;
	struct ew_passed passed[EW_PASSED];
	uint32_t passed_next;
	int64_t next_op, next_pkt, next_dma, next_cwait;
	uint64_t events, dxgkrnl, waits, signals, dma_rows, unmatched_unwaits, cpu_signals;
	bool kernel, rundown;
	/* What the capture holds of each CPU's buffers: first and last event, count. */
	struct ew_cpu_span { int64_t first, last; uint64_t n; } *cpu_cov;
	size_t n_cpu_cov;
	int64_t last_ns;
	bool circular;       /* the capture kept each CPU's latest buffers (nf_etwi_logging) */
};

void nf_etwi_logging(struct nf_etwi *e, bool circular)
{
	e->circular = circular;
}

static int ew_sql_err(struct nf_etwi *e, struct nf_error *err, const char *what)
{
	return nf_writer_sql_error(e->db, "ETW capture", what, err);
}

static int ew_oom(struct nf_error *err)
{
	return nf_error_set(err, NF_ENOMEM, "timeline: ETW capture: out of memory (or too many handles)");
}

static int ew_exec(struct nf_etwi *e, const char *sql, struct nf_error *err)
{
	return nf_writer_exec(e->db, "ETW capture", sql, err);
}

static int ew_step(struct nf_etwi *e, enum ew_stmt id, struct nf_error *err)
{
	return nf_writer_step(e->db, e->st[id], "ETW capture", ew_sql[id], err);
}

/* Binds an optional integer: NULL when !has. */
static void ew_bind_opt(sqlite3_stmt *s, int i, bool has, int64_t v)
{
	if (has)
		sqlite3_bind_int64(s, i, v);
	else
		sqlite3_bind_null(s, i);
}

void nf_etwi_destroy(struct nf_etwi *e)
{
	if (!e)
		return;
	ew_presents_destroy(e->pres);
	free(e->cpu_cov);
	for (int i = 0; i < ES_COUNT; i++)
		sqlite3_finalize(e->st[i]);
	for (size_t i = 0; i < e->ctxs.n; i++)
		free(EW_AT(e->ctxs, struct ew_ctx, i)->ring);
	for (size_t i = 0; i < e->pkts.n; i++) {
		free(EW_AT(e->pkts, struct ew_pkt, i)->fences);
		free(EW_AT(e->pkts, struct ew_pkt, i)->values);
	}
	struct nf_u64map *maps[] = { &e->ctx_map, &e->hwq_map, &e->sync_map, &e->adapter_map,
				  &e->device_proc, &e->device_adapter, &e->pkt_map, &e->dma_map, &e->count_map,
				  &e->node_map, &e->proc_map, &e->thread_proc };
	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
		nf_u64map_free(maps[i]);
	struct ew_vec *vecs[] = { &e->ctxs, &e->syncs, &e->adapters, &e->nodes, &e->pkts,
				  &e->dmas, &e->cwaits, &e->counts, &e->runs, &e->procs, &e->hops };
	for (size_t i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++)
		free(vecs[i]->p);
	free(e->qt.t);
	for (size_t i = 0; i < e->n_providers; i++)
		free(e->providers[i]);
	free(e->providers);
	free(e);
}

struct nf_etwi *nf_etwi_create(sqlite3 *db, struct nf_error *err)
{
	struct nf_etwi *e = calloc(1, sizeof(*e));

	if (!e) {
		ew_oom(err);
		return NULL;
	}
	e->db = db;
	{
		struct nf_u64map *maps[] = { &e->ctx_map, &e->hwq_map, &e->sync_map, &e->adapter_map,
					  &e->device_proc, &e->device_adapter, &e->pkt_map, &e->dma_map,
					  &e->count_map, &e->node_map, &e->proc_map, &e->thread_proc };

		for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
			maps[i]->max_keys = EW_MAX_KEYS;
	}
	e->ctxs.size = sizeof(struct ew_ctx);
	e->syncs.size = sizeof(struct ew_sync);
	e->adapters.size = sizeof(uint64_t);
	e->nodes.size = sizeof(struct ew_node);
	e->pkts.size = sizeof(struct ew_pkt);
	e->dmas.size = sizeof(struct ew_dma);
	e->cwaits.size = sizeof(struct ew_cwait);
	e->counts.size = sizeof(struct ew_count);
	e->runs.size = sizeof(struct ew_run);
	e->procs.size = sizeof(struct ew_proc);
	e->hops.size = sizeof(struct ew_hop);
	e->next_op = e->next_pkt = e->next_dma = e->next_cwait = e->next_dxg = 1;
	e->cur_dxg = -1;
	if (ew_exec(e, "CREATE TEMP TABLE etw_sig_group(op INTEGER PRIMARY KEY, grp INTEGER);", err))
		goto fail;
	if (!(e->pres = ew_presents_create(db, err)))
		goto fail;
	for (int i = 0; i < ES_COUNT; i++)
		if (sqlite3_prepare_v3(db, ew_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &e->st[i], NULL) !=
		    SQLITE_OK) {
			ew_sql_err(e, err, ew_sql[i]);
			goto fail;
		}
	return e;
fail:
	nf_etwi_destroy(e);
	return NULL;
}

/* ---- handles -> dense numbers ---- */

static int64_t ew_adapter(struct nf_etwi *e, uint64_t h, struct nf_error *err)
{
	uint64_t *v;

	if (!h)
		return -1;
	if ((v = nf_u64map_find(&e->adapter_map, h)))
		return (int64_t)*v;
	uint64_t *slot = ew_vec_push(&e->adapters);

	if (!slot || nf_u64map_put(&e->adapter_map, h, e->adapters.n - 1)) {
		ew_oom(err);
		return -2;
	}
	*slot = h;
	return (int64_t)(e->adapters.n - 1);
}

/* Context (kind K_CONTEXT) or hardware queue index; -1 for handle 0, -2 on error. */
static int64_t ew_ctx(struct nf_etwi *e, uint64_t h, int kind, struct nf_error *err)
{
	struct nf_u64map *m = kind == K_CONTEXT ? &e->ctx_map : &e->hwq_map;
	uint64_t *v;

	if (!h)
		return -1;
	if ((v = nf_u64map_find(m, h)))
		return (int64_t)*v;
	struct ew_ctx *c = ew_vec_push(&e->ctxs);

	if (!c || nf_u64map_put(m, h, e->ctxs.n - 1)) {
		ew_oom(err);
		return -2;
	}
	c->handle = h;
	c->kind = kind;
	c->adapter = c->node = c->parent = -1;
	c->start_ns = c->stop_ns = -1;
	c->last_idx = c->hop_head = c->hop_tail = -1;
	return (int64_t)(e->ctxs.n - 1);
}

static int64_t ew_sync(struct nf_etwi *e, uint64_t h, struct nf_error *err)
{
	uint64_t *v;

	if (!h)
		return -1;
	if ((v = nf_u64map_find(&e->sync_map, h)))
		return (int64_t)*v;
	struct ew_sync *s = ew_vec_push(&e->syncs);

	if (!s || nf_u64map_put(&e->sync_map, h, e->syncs.n - 1)) {
		ew_oom(err);
		return -2;
	}
	s->handle = h;
	s->kind = S_SYNC;
	s->adapter = -1;
	s->created_ns = s->destroyed_ns = -1;
	s->wait_head = s->sig_head = -1;
	return (int64_t)(e->syncs.n - 1);
}

static struct ew_node *ew_node(struct nf_etwi *e, int64_t adapter, uint32_t node, struct nf_error *err)
{
	uint64_t key = ((uint64_t)(adapter + 1) << 32) | node;
	uint64_t *v = nf_u64map_find(&e->node_map, key);

	if (v)
		return EW_AT(e->nodes, struct ew_node, *v);
	struct ew_node *n = ew_vec_push(&e->nodes);

	if (!n || nf_u64map_put(&e->node_map, key, e->nodes.n - 1)) {
		ew_oom(err);
		return NULL;
	}
	n->adapter = adapter;
	n->node = node;
	n->engine_type = -1;
	return n;
}

/* Ties a context to its adapter and node when they were not known yet. */
static int ew_ctx_place(struct nf_etwi *e, int64_t ci, int64_t adapter, bool has_node, uint32_t node,
			bool authoritative, struct nf_error *err)
{
	struct ew_ctx *c = EW_AT(e->ctxs, struct ew_ctx, ci);

	if (adapter >= 0 && (c->adapter < 0 || authoritative))
		c->adapter = adapter;
	if (has_node && (c->node < 0 || authoritative)) {
		c->node = node;
		if (c->adapter >= 0 && !ew_node(e, c->adapter, node, err))
			return NF_ENOMEM;
	}
	return 0;
}

/* ---- rows ---- */

static int ew_put_op(struct nf_etwi *e, int64_t id, int64_t queue, int64_t adapter, const char *op,
		     int64_t fence, uint64_t value, int64_t queued, int64_t observed, int64_t end,
		     const char *status, bool has_tid, uint32_t tid, struct nf_error *err)
{
	sqlite3_stmt *s = e->st[ES_OP];

	sqlite3_bind_int64(s, 1, id);
	ew_bind_opt(s, 2, queue >= 0, queue + 1);
	ew_bind_opt(s, 3, adapter >= 0, adapter);
	sqlite3_bind_text(s, 4, op, -1, SQLITE_STATIC);
	ew_bind_opt(s, 5, fence >= 0, fence + 1);
	sqlite3_bind_int64(s, 6, (int64_t)value);
	ew_bind_opt(s, 7, queued >= 0, queued);
	ew_bind_opt(s, 8, observed >= 0, observed);
	ew_bind_opt(s, 9, end >= 0, end);
	sqlite3_bind_text(s, 10, status, -1, SQLITE_STATIC);
	ew_bind_opt(s, 11, has_tid, tid);
	if (op[0] == 'w')
		e->waits++;
	else
		e->signals++;
	if (queue >= 0 && has_tid && ew_qt_add(&e->qt, queue + 1, fence + 1, tid))
		return ew_oom(err);
	return ew_step(e, ES_OP, err);
}

static const char *const pkt_kind_name[] = { "render", "wait", "signal" };

static int ew_put_packet(struct nf_etwi *e, const struct ew_pkt *p, int64_t end, bool preempted,
			 struct nf_error *err)
{
	sqlite3_stmt *s = e->st[ES_PACKET];

	sqlite3_bind_int64(s, 1, p->id);
	sqlite3_bind_int64(s, 2, p->queue + 1);
	sqlite3_bind_text(s, 3, pkt_kind_name[p->kind], -1, SQLITE_STATIC);
	ew_bind_opt(s, 4, p->kind == P_RENDER, p->ptype);
	sqlite3_bind_int64(s, 5, p->seq);
	sqlite3_bind_int64(s, 6, p->present);
	sqlite3_bind_int64(s, 7, p->queued_ns);
	ew_bind_opt(s, 8, end >= 0, end);
	sqlite3_bind_int64(s, 9, preempted);
	sqlite3_bind_int64(s, 10, p->tid);
	return ew_step(e, ES_PACKET, err);
}

static int64_t ew_ctx_adapter(const struct nf_etwi *e, int64_t ci)
{
	return ci >= 0 ? EW_AT(e->ctxs, struct ew_ctx, ci)->adapter : -1;
}

/* ---- GPU waits and signals on hardware queues (hardware scheduling) ----
 *
 * With hardware scheduling the OS logs no wait or signal queue packets: a
 * GPU wait is the 295 that queued it and a GPU signal the 294, on the
 * hardware queue (or context) they name (ew_hw_row). A signal ends at the
 * scheduler's 551/552 naming its fence and value. A wait is observed when the
 * work queued before it on its queue completed (the DMA packet's 451, or the
 * wait's end) or at once when none was open, and ends when both it was
 * observed and its fence reached the value (any signal: hardware queue, the
 * scheduler's, a CPU signal, a signal packet), at the later of the two. An
 * operation whose end the capture does not show stays open until later work
 * on its queue completes: it was done by then, so it is written with end_ns
 * NULL, status 'end_unknown' and that moment as etw_gpu_ops.end_bound_ns; one
 * still open at the end is 'pending'. Memory holds the open ones only (at most
 * EW_MAX_HW_OPS).
 */

static struct ew_hop *ew_hop_at(struct nf_etwi *e, int64_t i)
{
	return EW_AT(e->hops, struct ew_hop, i);
}

/*
 * The queue a 294/295 naming handle h goes on: a hardware queue (422-424,
 * 450/451), or a context that owns one and that no queue packet named;
 * -1: h is scheduled by the OS (its packets are the operations: the event is
 * the API call behind them), -2 on error.
 */
static int64_t ew_hw_row(struct nf_etwi *e, uint64_t h)
{
	uint64_t *v;

	if (!h)
		return -1;
	if ((v = nf_u64map_find(&e->hwq_map, h)))
		return (int64_t)*v;
	if ((v = nf_u64map_find(&e->ctx_map, h))) {
		const struct ew_ctx *c = EW_AT(e->ctxs, struct ew_ctx, *v);

		if (c->has_hwq && !c->sw_packets)
			return (int64_t)*v;
	}
	return -1;
}

static int64_t ew_hop_new(struct nf_etwi *e, int kind, int64_t row, int64_t fence, uint64_t value,
			  const struct nf_etwi_event *ev, struct nf_error *err)
{
	size_t i;

	for (i = e->hop_free_hint; i < e->hops.n; i++)
		if (!ew_hop_at(e, (int64_t)i)->used)
			break;
	if (i == e->hops.n && e->hops.n >= EW_MAX_HW_OPS)
		return -3; /* too many open: the caller writes it at once */
	if (i == e->hops.n && !ew_vec_push(&e->hops))
		return ew_oom(err);
	e->hop_free_hint = i + 1;
	struct ew_hop *h = ew_hop_at(e, (int64_t)i);
	struct ew_ctx *c = EW_AT(e->ctxs, struct ew_ctx, row);

	memset(h, 0, sizeof(*h));
	h->used = true;
	h->kind = (uint8_t)kind;
	h->op_id = e->next_op++;
	h->queue = row;
	h->fence = fence;
	h->value = value;
	h->tid = ev->tid;
	h->event = e->cur_dxg;
	h->queued_ns = ev->ns;
	h->observed_ns = h->release_ns = h->bound_ns = -1;
	h->next_wait = h->next_wait_op = h->fence_next = h->row_next = -1;
	h->row_prev = c->hop_tail;
	if (c->hop_tail >= 0)
		ew_hop_at(e, c->hop_tail)->row_next = (int64_t)i;
	else
		c->hop_head = (int64_t)i;
	c->hop_tail = (int64_t)i;
	return (int64_t)i;
}

/* Writes op i's rows (fence_ops, etw_gpu_ops) with end (-1 unknown) and frees it. */
static int ew_hop_write(struct nf_etwi *e, int64_t i, int64_t end, int64_t end_event, struct nf_error *err)
{
	struct ew_hop *h = ew_hop_at(e, i);
	struct ew_ctx *c = EW_AT(e->ctxs, struct ew_ctx, h->queue);
	sqlite3_stmt *s = e->st[ES_GPU_OP];
	const char *status = end >= 0 ? "complete" : h->bound_ns >= 0 ? "end_unknown" : "pending";
	int64_t obs = h->kind == H_WAIT && h->observed_ns >= 0 ? h->observed_ns : -1;
	int rc;

	if (obs >= 0 && end >= 0 && obs > end)
		obs = end;
	rc = ew_put_op(e, h->op_id, h->queue, c->adapter, h->kind == H_WAIT ? "wait" : "signal", h->fence,
		       h->value, h->queued_ns, obs, end, status, true, h->tid, err);
	if (rc)
		return rc;
	sqlite3_bind_int64(s, 1, h->op_id);
	ew_bind_opt(s, 2, h->event >= 0, h->event);
	ew_bind_opt(s, 3, end_event >= 0, end_event);
	ew_bind_opt(s, 4, end < 0 && h->bound_ns >= 0, h->bound_ns);
	if ((rc = ew_step(e, ES_GPU_OP, err)))
		return rc;
	/* off its queue's open list */
	if (h->row_prev >= 0)
		ew_hop_at(e, h->row_prev)->row_next = h->row_next;
	else
		c->hop_head = h->row_next;
	if (h->row_next >= 0)
		ew_hop_at(e, h->row_next)->row_prev = h->row_prev;
	else
		c->hop_tail = h->row_prev;
	if (c->last_kind == I_WAIT && c->last_idx == i)
		c->last_kind = I_NONE;
	h->used = false;
	if ((size_t)i < e->hop_free_hint)
		e->hop_free_hint = (size_t)i;
	return 0;
}

/* Unlinks op i from a fence's list (head: the list's head). */
static void ew_fence_unlink(struct nf_etwi *e, int64_t *head, int64_t i)
{
	for (int64_t *p = head; *p >= 0; p = &ew_hop_at(e, *p)->fence_next)
		if (*p == i) {
			*p = ew_hop_at(e, i)->fence_next;
			return;
		}
}

/*
 * Work queued on row at queued completed at end: what was queued before it
 * and is still open was done by then, when the capture does not say: written
 * now, end unknown, with that bound. A wait its fence had not released yet was
 * released by something the capture does not show (no later signal ends it);
 * a signal's 551/552 coming later is no signal of its own (ew_hw_sched_signal).
 */
static int ew_hw_passed(struct nf_etwi *e, int64_t row, int64_t queued, int64_t end, struct nf_error *err)
{
	int64_t i;

	while ((i = EW_AT(e->ctxs, struct ew_ctx, row)->hop_head) >= 0) {
		struct ew_hop *h = ew_hop_at(e, i);
		int rc;

		if (h->queued_ns >= queued)
			break;
		h->bound_ns = end;
		if (h->fence >= 0) {
			struct ew_sync *sy = EW_AT(e->syncs, struct ew_sync, h->fence);

			if (h->kind == H_WAIT && !h->released)
				ew_fence_unlink(e, &sy->wait_head, i);
			else if (h->kind == H_SIGNAL) {
				struct ew_passed *p = &e->passed[e->passed_next++ % EW_PASSED];

				ew_fence_unlink(e, &sy->sig_head, i);
				p->fence = h->fence;
				p->value = h->value;
				p->used = true;
			}
		}
		if ((rc = ew_hop_write(e, i, -1, -1, err)))
			return rc;
	}
	return 0;
}

/*
 * Wait i was observed at t (the work before it completed): it ends when its
 * fence reached the value too. A wait that ends lets the one queued after it
 * be observed, and so on down the queue.
 */
static int ew_hw_observed(struct nf_etwi *e, int64_t i, int64_t op_id, int64_t t, struct nf_error *err)
{
	while (i >= 0) {
		struct ew_hop *h = ew_hop_at(e, i);
		int64_t end, next, next_op, row, q;
		int rc;

		if (!h->used || h->op_id != op_id)
			return 0; /* written already (its queue got past it) */
		if (h->observed_ns < 0)
			h->observed_ns = t > h->queued_ns ? t : h->queued_ns;
		if (!h->released)
			return 0;
		end = h->release_ns > h->observed_ns ? h->release_ns : h->observed_ns;
		next = h->next_wait;
		next_op = h->next_wait_op;
		row = h->queue;
		q = h->queued_ns;
		if ((rc = ew_hop_write(e, i, end, -1, err)) || (rc = ew_hw_passed(e, row, q, end, err)))
			return rc;
		i = next;
		op_id = next_op;
		t = end;
	}
	return 0;
}

/* Fence f (syncs index) reached value at t: the hardware-queue waits it releases. */
static int ew_hw_release(struct nf_etwi *e, int64_t f, uint64_t value, int64_t t, struct nf_error *err)
{
	struct ew_sync *s = EW_AT(e->syncs, struct ew_sync, f);
	int64_t *p = &s->wait_head;

	if (!s->has_reached || value > s->reached) {
		s->has_reached = true;
		s->reached = value;
	}
	while (*p >= 0) {
		int64_t i = *p;
		struct ew_hop *h = ew_hop_at(e, i);
		int rc;

		if (h->value > value) {
			p = &h->fence_next;
			continue;
		}
		*p = h->fence_next;
		h->released = true;
		h->release_ns = t;
		if (h->observed_ns >= 0) {
			if ((rc = ew_hw_observed(e, i, h->op_id, h->observed_ns, err)))
				return rc;
			p = &s->wait_head; /* what ended with it may have left the list */
		}
	}
	return 0;
}

/* Past EW_MAX_HW_OPS open: the operation is written at once, its end unknown ('pending'). */
static int ew_hw_untracked(struct nf_etwi *e, int kind, int64_t row, int64_t f, uint64_t value,
			   const struct nf_etwi_event *ev, struct nf_error *err)
{
	sqlite3_stmt *s = e->st[ES_GPU_OP];
	int64_t id = e->next_op++;
	int rc = ew_put_op(e, id, row, EW_AT(e->ctxs, struct ew_ctx, row)->adapter, kind == H_WAIT ? "wait" : "signal",
			   f, value, ev->ns, -1, -1, "pending", true, ev->tid, err);

	if (rc)
		return rc;
	sqlite3_bind_int64(s, 1, id);
	ew_bind_opt(s, 2, e->cur_dxg >= 0, e->cur_dxg);
	sqlite3_bind_null(s, 3);
	sqlite3_bind_null(s, 4);
	return ew_step(e, ES_GPU_OP, err);
}

/* 295: a wait per fence on the queue it names. Returns 1 when mapped, 0 when not a hardware queue's. */
static int ew_hw_wait(struct nf_etwi *e, const struct nf_etwi_event *ev, struct nf_error *err)
{
	const struct nf_etwi_dx *d = ev->dx;
	int64_t row = ew_hw_row(e, d->context);

	if (row < 0)
		return 0;
	for (uint32_t k = 0; k < d->n_objects; k++) {
		int64_t f = ew_sync(e, d->objects[k], err), i;

		if (f < -1)
			return NF_ENOMEM;
		if ((i = ew_hop_new(e, H_WAIT, row, f, d->values[k], ev, err)) == -3) {
			int rc = ew_hw_untracked(e, H_WAIT, row, f, d->values[k], ev, err);

			if (rc)
				return rc;
			continue;
		}
		if (i < 0)
			return (int)i;
		struct ew_hop *h = ew_hop_at(e, i);
		struct ew_ctx *c = EW_AT(e->ctxs, struct ew_ctx, row);

		/* observed when the work queued before it is done */
		if (c->last_kind == I_DMA) {
			EW_AT(e->dmas, struct ew_dma, c->last_idx)->next_wait = i;
			EW_AT(e->dmas, struct ew_dma, c->last_idx)->next_wait_op = h->op_id;
		} else if (c->last_kind == I_WAIT) {
			ew_hop_at(e, c->last_idx)->next_wait = i;
			ew_hop_at(e, c->last_idx)->next_wait_op = h->op_id;
		} else {
			h->observed_ns = ev->ns;
		}
		c->last_kind = I_WAIT;
		c->last_idx = i;
		if (f >= 0) {
			struct ew_sync *s = EW_AT(e->syncs, struct ew_sync, f);

			if ((s->has_reached && s->reached >= h->value) || (s->has_initial && s->initial >= h->value)) {
				h->released = true;
				h->release_ns = INT64_MIN;
			} else {
				h->fence_next = s->wait_head;
				s->wait_head = i;
			}
		}
		if (h->observed_ns >= 0) {
			int rc = ew_hw_observed(e, i, h->op_id, h->observed_ns, err);

			if (rc)
				return rc;
		}
	}
	return 1;
}

/* 294: a signal per fence on every hardware queue it names. Returns 1 when mapped, 0 when none is one. */
static int ew_hw_signal(struct nf_etwi *e, const struct nf_etwi_event *ev, struct nf_error *err)
{
	const struct nf_etwi_dx *d = ev->dx;
	bool any = false;

	for (uint32_t c = 0; c < d->n_contexts; c++) {
		int64_t row = ew_hw_row(e, d->contexts[c]);

		if (row < 0)
			continue;
		any = true;
		for (uint32_t k = 0; k < d->n_objects; k++) {
			int64_t f = ew_sync(e, d->objects[k], err), i;

			if (f < -1)
				return NF_ENOMEM;
			if ((i = ew_hop_new(e, H_SIGNAL, row, f, d->values[k], ev, err)) == -3) {
				int rc = ew_hw_untracked(e, H_SIGNAL, row, f, d->values[k], ev, err);

				if (rc)
					return rc;
				continue;
			}
			if (i < 0)
				return (int)i;
			if (f >= 0) {
				struct ew_sync *s = EW_AT(e->syncs, struct ew_sync, f);

				ew_hop_at(e, i)->fence_next = s->sig_head;
				s->sig_head = i;
			}
		}
	}
	return any ? 1 : 0;
}

/*
 * 551/552: the scheduler signaled fences. Each ends the hardware-queue signals
 * of that fence and value still open; one that ends none (its 294 is not in
 * the capture) is a signal of its own on no queue, unless the fence's signals
 * are queue packets (their stop is the signal already).
 */
static int ew_hw_sched_signal(struct nf_etwi *e, const struct nf_etwi_event *ev, struct nf_error *err)
{
	const struct nf_etwi_dx *d = ev->dx;

	for (uint32_t k = 0; k < d->n_objects; k++) {
		int64_t f = ew_sync(e, d->objects[k], err);
		bool ended = false;
		int rc;

		if (f < -1)
			return NF_ENOMEM;
		if (f < 0)
			continue;
		for (int64_t *p = &EW_AT(e->syncs, struct ew_sync, f)->sig_head; *p >= 0;) {
			int64_t i = *p;
			struct ew_hop *h = ew_hop_at(e, i);

			if (h->value != d->values[k] || h->queued_ns > ev->ns) {
				p = &h->fence_next;
				continue;
			}
			*p = h->fence_next;
			int64_t row = h->queue, q = h->queued_ns;

			if ((rc = ew_hop_write(e, i, ev->ns, e->cur_dxg, err)) ||
			    (rc = ew_hw_passed(e, row, q, ev->ns, err)))
				return rc;
			ended = true;
			p = &EW_AT(e->syncs, struct ew_sync, f)->sig_head; /* the list may have changed */
		}
		for (uint32_t j = 0; !ended && j < EW_PASSED; j++)
			if (e->passed[j].used && e->passed[j].fence == f && e->passed[j].value == d->values[k]) {
				e->passed[j].used = false; /* the late record of a signal written already */
				ended = true;
			}
		if (!ended && !EW_AT(e->syncs, struct ew_sync, f)->sw) {
			sqlite3_stmt *s = e->st[ES_GPU_OP];
			int64_t id = e->next_op++;

			rc = ew_put_op(e, id, -1, EW_AT(e->syncs, struct ew_sync, f)->adapter, "signal", f, d->values[k],
				       -1, -1, ev->ns, "complete", false, 0, err);
			if (rc)
				return rc;
			sqlite3_bind_int64(s, 1, id);
			sqlite3_bind_null(s, 2);
			sqlite3_bind_int64(s, 3, e->cur_dxg);
			sqlite3_bind_null(s, 4);
			if ((rc = ew_step(e, ES_GPU_OP, err)))
				return rc;
		}
		if ((rc = ew_hw_release(e, f, d->values[k], ev->ns, err)))
			return rc;
	}
	return 0;
}

/* 450 on a hardware queue: the latest work queued on it. */
static void ew_hw_dma_queued(struct nf_etwi *e, int64_t dma)
{
	struct ew_dma *m = EW_AT(e->dmas, struct ew_dma, dma);
	struct ew_ctx *c = EW_AT(e->ctxs, struct ew_ctx, m->queue);

	m->next_wait = m->next_wait_op = -1;
	c->last_kind = I_DMA;
	c->last_idx = dma;
}

/* 451: a hardware queue's DMA packet completed at t. */
static int ew_hw_dma_done(struct nf_etwi *e, int64_t dma, int64_t t, struct nf_error *err)
{
	struct ew_dma *m = EW_AT(e->dmas, struct ew_dma, dma);
	struct ew_ctx *c = EW_AT(e->ctxs, struct ew_ctx, m->queue);
	int64_t next = m->next_wait, next_op = m->next_wait_op, row = m->queue;
	int rc;

	if (c->last_kind == I_DMA && c->last_idx == dma)
		c->last_kind = I_NONE;
	m->next_wait = -1;
	if ((rc = ew_hw_passed(e, row, m->start_ns, t, err)))
		return rc;
	return next >= 0 ? ew_hw_observed(e, next, next_op, t, err) : 0;
}

/* At the end: what is still open, with end_ns NULL. */
static int ew_hw_finish(struct nf_etwi *e, struct nf_error *err)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < e->hops.n; i++)
		if (ew_hop_at(e, (int64_t)i)->used)
			rc = ew_hop_write(e, (int64_t)i, -1, -1, err);
	return rc;
}

/* ---- queue packets ---- */

static struct ew_pkt *ew_pkt_open(struct nf_etwi *e, uint64_t pq, size_t *idx, struct nf_error *err)
{
	size_t i;

	for (i = e->pkt_free_hint; i < e->pkts.n; i++)
		if (!EW_AT(e->pkts, struct ew_pkt, i)->used)
			break;
	if (i == e->pkts.n && !ew_vec_push(&e->pkts)) {
		ew_oom(err);
		return NULL;
	}
	e->pkt_free_hint = i + 1;
	struct ew_pkt *p = EW_AT(e->pkts, struct ew_pkt, i);

	free(p->fences);
	free(p->values);
	memset(p, 0, sizeof(*p));
	p->used = true;
	p->pq = pq;
	p->observed_ns = p->unwait_ns = p->aborted_ns = -1;
	p->fence = -1;
	if (nf_u64map_put(&e->pkt_map, pq, i)) {
		p->used = false;
		ew_oom(err);
		return NULL;
	}
	*idx = i;
	return p;
}

static void ew_pkt_release(struct nf_etwi *e, size_t i)
{
	struct ew_pkt *p = EW_AT(e->pkts, struct ew_pkt, i);

	p->used = false;
	free(p->fences);
	free(p->values);
	p->fences = NULL;
	p->values = NULL;
	if (i < e->pkt_free_hint)
		e->pkt_free_hint = i;
}

/* Appends packet i to its context's in-flight ring; true when it is the head. */
static bool ew_ring_push(struct ew_ctx *c, size_t i)
{
	if (c->r_n == c->r_cap) {
		/* Grown by doubling (most contexts have a few packets in flight), up
		 * to EW_CTX_RING; past that a packet is not kept. */
		uint32_t ncap = c->r_cap ? c->r_cap * 2 : 16;
		uint32_t *nr = ncap <= EW_CTX_RING ? malloc(ncap * sizeof(*nr)) : NULL;

		if (!nr) {
			c->ring_full = true;
			return false;
		}
		for (uint32_t k = 0; k < c->r_n; k++)
			nr[k] = c->ring[(c->r_head + k) % c->r_cap];
		free(c->ring);
		c->ring = nr;
		c->r_cap = ncap;
		c->r_head = 0;
	}
	c->ring[(c->r_head + c->r_n) % c->r_cap] = (uint32_t)i;
	c->r_n++;
	return c->r_n == 1 && !c->ring_full;
}

/* Removes packet i from its context's ring; a wait that becomes the head was
 * observed now. */
static void ew_ring_remove(struct nf_etwi *e, struct ew_ctx *c, size_t i, int64_t ns)
{
	uint32_t k;

	for (k = 0; k < c->r_n; k++)
		if (c->ring[(c->r_head + k) % c->r_cap] == i)
			break;
	if (k == c->r_n)
		return;
	for (uint32_t j = k; j > 0; j--)
		c->ring[(c->r_head + j) % c->r_cap] = c->ring[(c->r_head + j - 1) % c->r_cap];
	c->r_head = (c->r_head + 1) % c->r_cap;
	c->r_n--;
	if (c->r_n == 0) {
		c->ring_full = false;
		return;
	}
	if (k == 0 && !c->ring_full) {
		struct ew_pkt *h = EW_AT(e->pkts, struct ew_pkt, c->ring[c->r_head]);

		if (h->kind == P_WAIT && h->observed_ns < 0)
			h->observed_ns = ns > h->queued_ns ? ns : h->queued_ns;
	}
}

/* Ends wait packet p at ns (its unwait or abort). */
static int ew_wait_end(struct nf_etwi *e, struct ew_pkt *p, int64_t ns, const char *status,
		       struct nf_error *err)
{
	int64_t obs = p->observed_ns;

	if (obs > ns)
		obs = ns;
	p->unwait_ns = ns;
	return ew_put_op(e, p->op_id, p->queue, ew_ctx_adapter(e, p->queue), "wait", p->fence,
			 p->value, p->queued_ns, obs, ns, status, true, p->tid, err);
}

static int ew_queue_packet(struct nf_etwi *e, const struct nf_etwi_event *ev, int kind,
			   struct nf_error *err)
{
	const struct nf_etwi_dx *d = ev->dx;
	int64_t ci = ew_ctx(e, d->context, K_CONTEXT, err);
	size_t i;
	int rc;

	if (ci < -1)
		return NF_ENOMEM;
	if (ci < 0 || !d->packet)
		return 0; /* no context or packet: nothing to tie it to */
	EW_AT(e->ctxs, struct ew_ctx, ci)->sw_packets = true;
	uint64_t *old = nf_u64map_find(&e->pkt_map, d->packet);

	if (old) {
		/* The address was reused: the earlier packet's stop was not seen. */
		struct ew_pkt *op = EW_AT(e->pkts, struct ew_pkt, *old);

		rc = ew_put_packet(e, op, op->unwait_ns, false, err);
		if (rc == 0 && op->kind == P_WAIT && op->unwait_ns < 0)
			rc = ew_put_op(e, op->op_id, op->queue, ew_ctx_adapter(e, op->queue), "wait",
				       op->fence, op->value, op->queued_ns, -1, -1, "pending", true,
				       op->tid, err);
		for (uint32_t k = 0; rc == 0 && op->kind == P_SIGNAL && k < op->n; k++)
			rc = ew_put_op(e, op->op_id + k, op->queue, ew_ctx_adapter(e, op->queue), "signal",
				       op->fences[k], op->values[k], op->queued_ns, -1, -1, "pending",
				       true, op->tid, err);
		if (rc)
			return rc;
		ew_ring_remove(e, EW_AT(e->ctxs, struct ew_ctx, op->queue), *old, ev->ns);
		ew_pkt_release(e, *old);
		nf_u64map_del(&e->pkt_map, d->packet);
	}
	struct ew_pkt *p = ew_pkt_open(e, d->packet, &i, err);

	if (!p)
		return NF_ENOMEM;
	p->kind = kind;
	p->id = e->next_pkt++;
	p->queue = ci;
	p->ptype = d->packet_type;
	p->seq = d->seq;
	p->tid = ev->tid;
	p->present = d->present;
	p->queued_ns = ev->ns;
	if (kind == P_WAIT) {
		p->op_id = e->next_op++;
		p->fence = ew_sync(e, d->sync, err);
		if (p->fence < -1)
			return NF_ENOMEM;
		if (p->fence >= 0)
			EW_AT(e->syncs, struct ew_sync, p->fence)->sw = true;
		p->value = d->value;
	} else if (kind == P_SIGNAL && d->n_objects) {
		p->n = d->n_objects;
		p->op_id = e->next_op;
		e->next_op += p->n;
		p->fences = malloc(p->n * sizeof(*p->fences));
		p->values = malloc(p->n * sizeof(*p->values));
		if (!p->fences || !p->values)
			return ew_oom(err);
		for (uint32_t k = 0; k < p->n; k++) {
			p->fences[k] = ew_sync(e, d->objects[k], err);
			if (p->fences[k] < -1)
				return NF_ENOMEM;
			if (p->fences[k] >= 0)
				EW_AT(e->syncs, struct ew_sync, p->fences[k])->sw = true;
			p->values[k] = d->values[k];
			struct ew_recent *r = &e->recent[e->recent_next++ % EW_RECENT];

			r->used = true;
			r->op_id = p->op_id + k;
			r->fence = p->fences[k];
			r->value = p->values[k];
			r->ns = ev->ns;
			r->tid = ev->tid;
		}
	}
	if (kind == P_RENDER && d->present && (rc = ew_presents_packet(e->pres, ev->tid, p->id, p->seq, ev->ns, err)))
		return rc;
	if (ew_ring_push(EW_AT(e->ctxs, struct ew_ctx, ci), i) && kind == P_WAIT)
		p->observed_ns = ev->ns;
	if (kind == P_WAIT) {
		/* An unwait stamped on another CPU a little before this wait ends it. */
		for (uint32_t k = 0; k < EW_ORPHANS; k++) {
			struct ew_orphan *o = &e->orphans[k];

			if (o->used && o->pq == d->packet && nf_time_sub(ev->ns, o->ns) <= EW_ORPHAN_NS) {
				o->used = false;
				if (e->unmatched_unwaits)
					e->unmatched_unwaits--;
				if (p->observed_ns < 0)
					p->observed_ns = ev->ns;
				return ew_wait_end(e, p, ev->ns, "complete", err);
			}
		}
	}
	return 0;
}

static int ew_unwait(struct nf_etwi *e, const struct nf_etwi_event *ev, bool abort, struct nf_error *err)
{
	uint64_t *v = nf_u64map_find(&e->pkt_map, ev->dx->packet);

	if (v) {
		struct ew_pkt *p = EW_AT(e->pkts, struct ew_pkt, *v);

		if (p->kind == P_WAIT && p->unwait_ns < 0)
			return ew_wait_end(e, p, ev->ns, abort ? "aborted" : "complete", err);
		/* An aborted signal packet signals nothing: its stop says so. */
		if (abort && p->kind == P_SIGNAL && p->aborted_ns < 0)
			p->aborted_ns = ev->ns;
		return 0;
	}
	if (abort)
		return 0;
	/* Its wait may come from another CPU's buffer a little later. */
	struct ew_orphan *o = &e->orphans[e->orphan_next++ % EW_ORPHANS];

	o->used = true;
	o->pq = ev->dx->packet;
	o->ns = ev->ns;
	e->unmatched_unwaits++;
	return 0;
}

static int ew_packet_stop(struct nf_etwi *e, const struct nf_etwi_event *ev, struct nf_error *err)
{
	uint64_t *v = nf_u64map_find(&e->pkt_map, ev->dx->packet);
	int rc = 0;

	if (!v)
		return 0;
	size_t i = *v;
	struct ew_pkt *p = EW_AT(e->pkts, struct ew_pkt, i);
	int64_t end = p->kind == P_WAIT && p->unwait_ns >= 0 ? p->unwait_ns : ev->ns;

	if (p->kind == P_WAIT && p->unwait_ns < 0)
		rc = ew_wait_end(e, p, ev->ns, "complete", err);
	for (uint32_t k = 0; rc == 0 && p->kind == P_SIGNAL && k < p->n; k++) {
		rc = ew_put_op(e, p->op_id + k, p->queue, ew_ctx_adapter(e, p->queue), "signal",
			       p->fences[k], p->values[k], p->queued_ns, -1,
			       p->aborted_ns >= 0 ? p->aborted_ns : ev->ns,
			       p->aborted_ns >= 0 ? "aborted" : "complete", true, p->tid, err);
		/* the fence reached the value: hardware-queue waits on it may end */
		if (rc == 0 && p->aborted_ns < 0 && p->fences[k] >= 0)
			rc = ew_hw_release(e, p->fences[k], p->values[k], ev->ns, err);
	}
	rc = rc ? rc : ew_put_packet(e, p, end, ev->dx->preempted, err);
	if (rc)
		return rc;
	ew_ring_remove(e, EW_AT(e->ctxs, struct ew_ctx, p->queue), i, ev->ns);
	ew_pkt_release(e, i);
	nf_u64map_del(&e->pkt_map, ev->dx->packet);
	return 0;
}

/* SignalSynchronizationObject2 / FromGpu with several contexts: the signal
 * packets it made (one per context, same object and value, just before on the
 * same thread) signal the object together: grouped for deps. */
static int ew_signal_group(struct nf_etwi *e, const struct nf_etwi_event *ev, struct nf_error *err)
{
	const struct nf_etwi_dx *d = ev->dx;

	if (d->n_contexts < 2)
		return 0;
	for (uint32_t k = 0; k < d->n_objects; k++) {
		uint64_t *fv = nf_u64map_find(&e->sync_map, d->objects[k]);
		int64_t members[NF_ETWI_MAX_ARRAY], grp = -1;
		uint32_t n = 0;

		if (!fv)
			continue;
		for (uint32_t j = 1; j <= EW_RECENT && n < d->n_contexts; j++) {
			struct ew_recent *r = &e->recent[(e->recent_next - j) % EW_RECENT];

			if (!r->used || r->tid != ev->tid || nf_time_sub(ev->ns, r->ns) > EW_GROUP_NS)
				continue;
			if (r->fence != (int64_t)*fv || r->value != d->values[k])
				continue;
			members[n++] = r->op_id;
			r->used = false;
			if (grp < 0 || r->op_id < grp)
				grp = r->op_id;
		}
		for (uint32_t j = 0; n > 1 && j < n; j++) {
			sqlite3_bind_int64(e->st[ES_GROUP], 1, members[j]);
			sqlite3_bind_int64(e->st[ES_GROUP], 2, grp);
			int rc = ew_step(e, ES_GROUP, err);

			if (rc)
				return rc;
		}
	}
	return 0;
}

/* ---- DMA packets ---- */

static uint64_t ew_dma_key(uint64_t ctx, uint64_t sub)
{
	return ctx ^ (sub * 0x9E3779B97F4A7C15ull) ^ (sub >> 29);
}

static int ew_dma_start(struct nf_etwi *e, const struct nf_etwi_event *ev, bool hw, struct nf_error *err)
{
	const struct nf_etwi_dx *d = ev->dx;
	uint64_t h = hw ? d->hwqueue : d->context;
	uint64_t sub = hw ? d->value : d->submission; /* hardware queues: ProgressFenceValue */
	int64_t ci = ew_ctx(e, h, hw ? K_HWQUEUE : K_CONTEXT, err);
	size_t i;

	if (ci < -1)
		return NF_ENOMEM;
	if (ci < 0)
		return 0;
	uint64_t key = ew_dma_key(h, sub);
	uint64_t *old = nf_u64map_find(&e->dma_map, key);

	if (old) {
		i = *old; /* a start again: the first one's stop was not seen; keep the latest */
	} else {
		for (i = e->dma_free_hint; i < e->dmas.n; i++)
			if (!EW_AT(e->dmas, struct ew_dma, i)->used)
				break;
		if (i == e->dmas.n && !ew_vec_push(&e->dmas))
			return ew_oom(err);
		e->dma_free_hint = i + 1;
		if (nf_u64map_put(&e->dma_map, key, i))
			return ew_oom(err);
	}
	struct ew_dma *m = EW_AT(e->dmas, struct ew_dma, i);
	struct ew_ctx *c = EW_AT(e->ctxs, struct ew_ctx, ci);

	memset(m, 0, sizeof(*m));
	m->used = true;
	m->key_ctx = h;
	m->key_sub = sub;
	m->id = e->next_dma++;
	m->queue = ci;
	m->adapter = c->adapter;
	m->node = c->node;
	m->ptype = d->packet_type;
	m->seq = d->seq;
	m->hw = hw;
	m->start_ns = ev->ns;
	m->isr_ns = -1;
	m->next_wait = -1;
	if (hw)
		ew_hw_dma_queued(e, (int64_t)i);
	return 0;
}

static int ew_dma_put(struct nf_etwi *e, struct ew_dma *m, int64_t end, const char *status,
		      struct nf_error *err)
{
	sqlite3_stmt *s = e->st[ES_DMA];
	const struct ew_ctx *c = EW_AT(e->ctxs, struct ew_ctx, m->queue);
	int64_t adapter = m->adapter >= 0 ? m->adapter : c->adapter;
	int64_t node = m->node >= 0 ? m->node : c->node;

	sqlite3_bind_int64(s, 1, m->id);
	ew_bind_opt(s, 2, adapter >= 0, adapter);
	ew_bind_opt(s, 3, node >= 0, node);
	sqlite3_bind_int64(s, 4, m->queue + 1);
	ew_bind_opt(s, 5, !m->hw, m->ptype);
	sqlite3_bind_int64(s, 6, (int64_t)m->key_sub);
	ew_bind_opt(s, 7, !m->hw, m->seq);
	sqlite3_bind_int64(s, 8, m->start_ns);
	ew_bind_opt(s, 9, m->isr_ns >= 0, m->isr_ns);
	ew_bind_opt(s, 10, end >= 0, end);
	sqlite3_bind_text(s, 11, status, -1, SQLITE_STATIC);
	e->dma_rows++;
	return ew_step(e, ES_DMA, err);
}

/* 176 (stop), 177 (completion interrupt), 451 (hardware queue completion). */
static int ew_dma_end(struct nf_etwi *e, const struct nf_etwi_event *ev, bool hw, bool isr,
		      struct nf_error *err)
{
	const struct nf_etwi_dx *d = ev->dx;
	uint64_t h = hw ? d->hwqueue : d->context;
	uint64_t sub = hw ? d->value : d->submission;
	uint64_t key = ew_dma_key(h, sub);
	uint64_t *v = nf_u64map_find(&e->dma_map, key);

	if (!v)
		return 0;
	size_t i = *v;
	struct ew_dma *m = EW_AT(e->dmas, struct ew_dma, i);

	if (m->key_ctx != h || m->key_sub != sub)
		return 0;
	if (isr) {
		if (m->isr_ns < 0)
			m->isr_ns = ev->ns;
		return 0;
	}
	int rc = hw ? ew_hw_dma_done(e, (int64_t)i, ev->ns, err) : 0;

	m = EW_AT(e->dmas, struct ew_dma, i);
	rc = rc ? rc : ew_dma_put(e, m, ev->ns, d->preempted ? "preempted" : "complete", err);

	m->used = false;
	if (i < e->dma_free_hint)
		e->dma_free_hint = i;
	nf_u64map_del(&e->dma_map, key);
	return rc;
}

/* ---- CPU waits and signals ---- */

static int ew_cpu_wait(struct nf_etwi *e, const struct nf_etwi_event *ev, struct nf_error *err)
{
	const struct nf_etwi_dx *d = ev->dx;

	for (uint32_t k = 0; k < d->n_objects; k++) {
		int64_t f = ew_sync(e, d->objects[k], err);

		if (f < -1)
			return NF_ENOMEM;
		if (f < 0 || e->cwaits.n >= EW_MAX_CPU_WAITS)
			continue;
		struct ew_cwait *w = ew_vec_push(&e->cwaits);

		if (!w)
			return ew_oom(err);
		w->fence = f;
		w->value = d->values[k];
		w->start_ns = ev->ns;
		w->tid = ev->tid;
		w->op_id = e->next_op++;
		w->id = e->next_cwait++;
		w->adapter = EW_AT(e->syncs, struct ew_sync, f)->adapter;
	}
	return 0;
}

static int ew_cwait_put(struct nf_etwi *e, const struct ew_cwait *w, int64_t end, struct nf_error *err)
{
	sqlite3_stmt *s = e->st[ES_CWAIT];
	const char *status = end >= 0 ? "satisfied" : "pending";

	sqlite3_bind_int64(s, 1, w->id);
	sqlite3_bind_int64(s, 2, w->tid);
	ew_bind_opt(s, 3, w->adapter >= 0, w->adapter);
	sqlite3_bind_int64(s, 4, w->fence + 1);
	sqlite3_bind_int64(s, 5, (int64_t)w->value);
	sqlite3_bind_int64(s, 6, w->start_ns);
	ew_bind_opt(s, 7, end >= 0, end);
	sqlite3_bind_text(s, 8, status, -1, SQLITE_STATIC);
	int rc = ew_step(e, ES_CWAIT, err);

	return rc ? rc : ew_put_op(e, w->op_id, -1, w->adapter, "wait", w->fence, w->value, w->start_ns,
				   w->start_ns, end, end >= 0 ? "complete" : "pending", true, w->tid, err);
}

static int ew_cpu_unwait(struct nf_etwi *e, const struct nf_etwi_event *ev, struct nf_error *err)
{
	const struct nf_etwi_dx *d = ev->dx;

	for (uint32_t k = 0; k < d->n_objects; k++) {
		uint64_t *fv = nf_u64map_find(&e->sync_map, d->objects[k]);

		if (!fv)
			continue;
		for (size_t j = 0; j < e->cwaits.n; j++) {
			struct ew_cwait *w = EW_AT(e->cwaits, struct ew_cwait, j);

			if (w->fence != (int64_t)*fv || w->value != d->values[k])
				continue;
			int rc = ew_cwait_put(e, w, ev->ns, err);

			if (rc)
				return rc;
			memmove(w, w + 1, (e->cwaits.n - j - 1) * sizeof(*w));
			e->cwaits.n--;
			break;
		}
	}
	return 0;
}

static int ew_cpu_signal(struct nf_etwi *e, const struct nf_etwi_event *ev, struct nf_error *err)
{
	const struct nf_etwi_dx *d = ev->dx;
	int64_t adapter = ew_adapter(e, d->adapter, err);

	if (adapter < -1)
		return NF_ENOMEM;
	for (uint32_t k = 0; k < d->n_objects; k++) {
		int64_t f = ew_sync(e, d->objects[k], err);
		sqlite3_stmt *s = e->st[ES_CSIGNAL];

		if (f < -1)
			return NF_ENOMEM;
		if (f < 0)
			continue;
		if (adapter < 0)
			adapter = EW_AT(e->syncs, struct ew_sync, f)->adapter;
		sqlite3_bind_int64(s, 1, ev->tid);
		ew_bind_opt(s, 2, adapter >= 0, adapter);
		sqlite3_bind_int64(s, 3, f + 1);
		sqlite3_bind_int64(s, 4, (int64_t)d->values[k]);
		sqlite3_bind_int64(s, 5, ev->ns);
		e->cpu_signals++;
		int rc = ew_step(e, ES_CSIGNAL, err);

		if (rc || (rc = ew_hw_release(e, f, d->values[k], ev->ns, err)))
			return rc;
	}
	return 0;
}

/* ---- lifetimes and rundown ---- */

static int ew_fence_life(struct nf_etwi *e, const struct nf_etwi_event *ev, int kind, int what,
			 struct nf_error *err)
{
	const struct nf_etwi_dx *d = ev->dx;
	int64_t f = ew_sync(e, d->sync, err), a = ew_adapter(e, d->adapter, err);

	if (f < -1 || a < -1)
		return NF_ENOMEM;
	if (f < 0)
		return 0;
	struct ew_sync *s = EW_AT(e->syncs, struct ew_sync, f);

	s->kind = kind;
	if (a >= 0)
		s->adapter = a;
	if (what == 0 || what == 2) { /* start or rundown */
		if (what == 0 || s->created_ns < 0)
			s->created_ns = what == 0 ? ev->ns : s->created_ns;
		s->initial = d->value;
		s->has_initial = true;
		if (what == 2)
			e->rundown = true;
	} else if (what == 1) {
		s->destroyed_ns = ev->ns;
	}
	return 0;
}

/* ---- raw and counts ---- */

static int64_t ew_provider(struct nf_etwi *e, const char *guid, struct nf_error *err)
{
	for (size_t i = e->n_providers; i > 0; i--)
		if (!strcmp(e->providers[i - 1], guid))
			return (int64_t)(i - 1);
	if (e->n_providers >= EW_MAX_PROVIDERS)
		return -1;
	char **np = realloc(e->providers, (e->n_providers + 1) * sizeof(*np));

	if (!np) {
		ew_oom(err);
		return -2;
	}
	e->providers = np;
	if (!(np[e->n_providers] = strdup(guid))) {
		ew_oom(err);
		return -2;
	}
	return (int64_t)e->n_providers++;
}

static int ew_count(struct nf_etwi *e, const struct nf_etwi_event *ev, struct nf_error *err)
{
	int64_t p = ew_provider(e, ev->provider, err);
	if (p < -1)
		return NF_ENOMEM;
	if (p < 0)
		return 0;
	uint64_t key = ((uint64_t)p << 24) | ((uint64_t)ev->id << 8) | ev->version;
	uint64_t *v = nf_u64map_find(&e->count_map, key);
	struct ew_count *c;

	if (v) {
		c = EW_AT(e->counts, struct ew_count, *v);
	} else {
		c = ew_vec_push(&e->counts);
		if (!c || nf_u64map_put(&e->count_map, key, e->counts.n - 1))
			return ew_oom(err);
		c->provider = (uint32_t)p;
		c->id = ev->id;
		c->version = ev->version;
	}
	c->events++;
	if (ev->dxgkrnl < 0)
		c->mismatches++;
	return 0;
}

static int ew_raw(struct nf_etwi *e, const struct nf_etwi_event *ev, struct nf_error *err)
{
	sqlite3_stmt *s = e->st[ES_RAW];

	sqlite3_bind_int64(s, 1, ev->ns);
	sqlite3_bind_int64(s, 2, ev->cpu);
	ew_bind_opt(s, 3, ev->has_ids, ev->pid);
	ew_bind_opt(s, 4, ev->has_ids, ev->tid);
	sqlite3_bind_text(s, 5, ev->provider, -1, SQLITE_STATIC); /* stepped before ev changes */
	sqlite3_bind_int64(s, 6, ev->id);
	sqlite3_bind_int64(s, 7, ev->version);
	sqlite3_bind_int64(s, 8, ev->opcode);
	sqlite3_bind_int64(s, 9, ev->size);
	return ew_step(e, ES_RAW, err);
}

/* ---- kernel events ---- */

#define EW_MAX_CPUS 4096u

/* CSwitch: the old thread's run on this CPU ends, the new one's starts. */
static int ew_cswitch(struct nf_etwi *e, const struct nf_etwi_event *ev, struct nf_error *err)
{
	if (ev->cpu >= EW_MAX_CPUS)
		return 0;
	while (e->runs.n <= ev->cpu)
		if (!ew_vec_push(&e->runs))
			return ew_oom(err);
	struct ew_run *r = EW_AT(e->runs, struct ew_run, ev->cpu);
	sqlite3_stmt *s = e->st[ES_RUN];

	if (ev->k_old_tid != 0) {
		sqlite3_bind_int64(s, 1, ev->k_old_tid);
		sqlite3_bind_int64(s, 2, ev->cpu);
		ew_bind_opt(s, 3, r->known && r->has_start && r->tid == ev->k_old_tid, r->start_ns);
		sqlite3_bind_int64(s, 4, ev->ns);
		sqlite3_bind_int64(s, 5, ev->k_old_state);
		int rc = ew_step(e, ES_RUN, err);

		if (rc)
			return rc;
	}
	r->known = true;
	r->tid = ev->k_new_tid;
	r->has_start = true;
	r->start_ns = ev->ns;
	return 0;
}

static int ew_name(struct nf_etwi *e, const struct nf_etwi_event *ev, struct nf_error *err)
{
	enum ew_stmt id = ev->kind == NF_ETWI_K_THREAD ? ES_THREAD : ES_PROCESS;
	sqlite3_stmt *s = e->st[id];

	if (!ev->k_name || !ev->k_name[0])
		return 0;
	if (ev->kind == NF_ETWI_K_PROCESS) { /* kept for the names of its contexts */
		uint64_t *v = nf_u64map_find(&e->proc_map, ev->k_pid);
		struct ew_proc *p = v ? EW_AT(e->procs, struct ew_proc, *v) : ew_vec_push(&e->procs);

		if (!p || (!v && nf_u64map_put(&e->proc_map, ev->k_pid, e->procs.n - 1)))
			return ew_oom(err);
		snprintf(p->name, sizeof(p->name), "%s", ev->k_name);
	}
	sqlite3_bind_int64(s, 1, ev->kind == NF_ETWI_K_THREAD ? ev->k_tid : ev->k_pid);
	sqlite3_bind_text(s, 2, ev->k_name, -1, SQLITE_TRANSIENT);
	return ew_step(e, id, err);
}

/* ---- one event ---- */

/* Returns 1 when a DxgKrnl event was mapped into a table (not kept raw). */
static int ew_dxgkrnl(struct nf_etwi *e, const struct nf_etwi_event *ev, struct nf_error *err)
{
	const struct nf_etwi_dx *d = ev->dx;
	int64_t a, ci;
	int rc = 0;

	switch (ev->id) {
	case 17: { /* VSyncDPC */
		sqlite3_stmt *s = e->st[ES_VSYNC];

		a = ew_adapter(e, d->adapter, err);
		if (a < -1)
			return NF_ENOMEM;
		sqlite3_bind_int64(s, 1, ev->ns);
		ew_bind_opt(s, 2, a >= 0, a);
		sqlite3_bind_int64(s, 3, d->target);
		sqlite3_bind_int64(s, 4, d->frame);
		int64_t disp = d->has_source ? ew_presents_display(e->pres, d->source, 0, err) : -1;

		if (d->has_source && disp < 0)
			return err->code;
		ew_bind_opt(s, 5, disp >= 0, disp);
		rc = ew_step(e, ES_VSYNC, err);
		break;
	}
	case 23: /* SelectContext: the scheduler ran this context on this node */
		a = ew_adapter(e, d->adapter, err);
		ci = ew_ctx(e, d->context, K_CONTEXT, err);
		if (a < -1 || ci < -1)
			return NF_ENOMEM;
		if (ci >= 0)
			rc = ew_ctx_place(e, ci, a, true, d->node, false, err);
		break;
	case 24: case 25: case 26: /* Adapter */
		if (ew_adapter(e, d->adapter, err) < -1)
			return NF_ENOMEM;
		if (ev->id == 26)
			e->rundown = true;
		break;
	case 27: case 28: case 29: /* Device: which process, which adapter */
		a = ew_adapter(e, d->adapter, err);
		if (a < -1)
			return NF_ENOMEM;
		if (d->device && (nf_u64map_put(&e->device_proc, d->device, d->process) ||
				  (a >= 0 && nf_u64map_put(&e->device_adapter, d->device, (uint64_t)a))))
			return ew_oom(err);
		if (ev->id == 29)
			e->rundown = true;
		break;
	case 30: case 31: case 32: { /* Context */
		ci = ew_ctx(e, d->context, K_CONTEXT, err);
		if (ci < -1)
			return NF_ENOMEM;
		if (ci < 0)
			break;
		struct ew_ctx *c = EW_AT(e->ctxs, struct ew_ctx, ci);
		uint64_t *da = d->device ? nf_u64map_find(&e->device_adapter, d->device) : NULL;

		c->device = d->device;
		rc = ew_ctx_place(e, ci, da ? (int64_t)*da : -1, true, d->node, true, err);
		if (ev->id == 30)
			c->start_ns = ev->ns;
		else if (ev->id == 31)
			c->stop_ns = ev->ns;
		else
			e->rundown = true;
		break;
	}
	case 250: { /* NodeMetadata */
		a = ew_adapter(e, d->adapter, err);
		if (a < -1)
			return NF_ENOMEM;
		struct ew_node *n = ew_node(e, a, d->node, err);

		if (!n)
			return NF_ENOMEM;
		n->engine_type = d->engine_type;
		if (d->name)
			snprintf(n->name, sizeof(n->name), "%s", d->name);
		e->rundown = true;
		break;
	}
	case 422: case 423: case 424: { /* HwQueue */
		int64_t q = ew_ctx(e, d->hwqueue, K_HWQUEUE, err);

		ci = ew_ctx(e, d->context, K_CONTEXT, err);
		if (q < -1 || ci < -1)
			return NF_ENOMEM;
		if (q < 0)
			break;
		struct ew_ctx *h = EW_AT(e->ctxs, struct ew_ctx, q);

		if (ci >= 0) {
			struct ew_ctx *c = EW_AT(e->ctxs, struct ew_ctx, ci);

			c->has_hwq = true;
			h->parent = ci;
			rc = ew_ctx_place(e, q, c->adapter, c->node >= 0, (uint32_t)(c->node >= 0 ? c->node : 0),
					  false, err);
		}
		if (ev->id == 422)
			h->start_ns = ev->ns;
		else if (ev->id == 423)
			h->stop_ns = ev->ns;
		else
			e->rundown = true;
		break;
	}
	case 175: rc = ew_dma_start(e, ev, false, err); break;
	case 176: rc = ew_dma_end(e, ev, false, false, err); break;
	case 177: rc = ew_dma_end(e, ev, false, true, err); break;
	case 450: rc = ew_dma_start(e, ev, true, err); break;
	case 451: rc = ew_dma_end(e, ev, true, false, err); break;
	case 178: rc = ew_queue_packet(e, ev, P_RENDER, err); break;
	case 244: rc = ew_queue_packet(e, ev, P_WAIT, err); break;
	case 245: rc = ew_queue_packet(e, ev, P_SIGNAL, err); break;
	case 180: rc = ew_packet_stop(e, ev, err); break;
	case 238: rc = ew_unwait(e, ev, false, err); break;
	case 361: rc = ew_unwait(e, ev, true, err); break;
	case 295: /* a hardware queue's GPU wait; else the API call behind a wait packet: kept raw */
		return ew_hw_wait(e, ev, err);
	case 294: /* a hardware queue's GPU signal; else the call behind signal packets */
		if ((rc = ew_hw_signal(e, ev, err)) != 0)
			return rc;
		/* fall through */
	case 230: /* the API calls behind signal packets: kept raw too */
		rc = ew_signal_group(e, ev, err);
		return rc ? rc : 0;
	case 551: case 552: rc = ew_hw_sched_signal(e, ev, err); break;
	case 297: rc = ew_cpu_wait(e, ev, err); break;
	case 300: rc = ew_cpu_unwait(e, ev, err); break;
	case 296: case 462: case 550: rc = ew_cpu_signal(e, ev, err); break;
	case 290: case 291: case 292: case 293:
		rc = ew_fence_life(e, ev, S_MONITORED, ev->id == 290 ? 0 : ev->id == 292 ? 1 :
				   ev->id == 293 ? 2 : 3, err);
		break;
	case 542: case 543: case 544: case 545:
		rc = ew_fence_life(e, ev, S_NATIVE, ev->id == 542 ? 0 : ev->id == 544 ? 1 :
				   ev->id == 545 ? 2 : 3, err);
		break;
	case 432: { /* SchedulingLog: CPU/GPU timestamp pairs */
		a = ew_adapter(e, d->adapter, err);
		if (a < -1)
			return NF_ENOMEM;
		for (int k = 0; k < 2 && rc == 0; k++) {
			if (!d->gpu_ts[k])
				continue;
			sqlite3_bind_int64(e->st[ES_CALIB], 1, a);
			sqlite3_bind_int64(e->st[ES_CALIB], 2, (int64_t)d->cpu_ts[k]);
			sqlite3_bind_int64(e->st[ES_CALIB], 3, (int64_t)d->gpu_ts[k]);
			rc = ew_step(e, ES_CALIB, err);
		}
		break;
	}
	default:
		return 0;
	}
	return rc ? rc : 1;
}

int nf_etwi_event(struct nf_etwi *e, const struct nf_etwi_event *ev, struct nf_error *err)
{
	int rc = ew_count(e, ev, err);

	if (rc)
		return rc;
	e->events++;
	if (ev->cpu < 65536u) {
		if (ev->cpu >= e->n_cpu_cov) {
			size_t n = (size_t)ev->cpu + 1;
			struct ew_cpu_span *v = realloc(e->cpu_cov, n * sizeof(*v));

			if (!v)
				return ew_oom(err);
			memset(v + e->n_cpu_cov, 0, (n - e->n_cpu_cov) * sizeof(*v));
			e->cpu_cov = v;
			e->n_cpu_cov = n;
		}
		struct ew_cpu_span *c = &e->cpu_cov[ev->cpu];

		if (!c->n++)
			c->first = ev->ns;
		c->last = ev->ns;
	}
	if (ev->ns > e->last_ns)
		e->last_ns = ev->ns;
	e->cur_dxg = -1;
	if (ev->dxgkrnl > 0 && ev->fields) {
		sqlite3_stmt *s = e->st[ES_DXG];

		e->cur_dxg = e->next_dxg++;
		sqlite3_bind_int64(s, 1, e->cur_dxg);
		sqlite3_bind_int64(s, 2, ev->ns);
		sqlite3_bind_int64(s, 3, ev->cpu);
		ew_bind_opt(s, 4, ev->has_ids, ev->pid);
		ew_bind_opt(s, 5, ev->has_ids, ev->tid);
		sqlite3_bind_int64(s, 6, ev->id);
		sqlite3_bind_int64(s, 7, ev->version);
		sqlite3_bind_text(s, 8, ev->fields, (int)ev->fields_len, SQLITE_STATIC);
		if ((rc = ew_step(e, ES_DXG, err)))
			return rc;
	}
	if ((rc = ew_presents_event(e->pres, ev, err)))
		return rc;
	if (ev->dxgkrnl > 0 && ev->dx) {
		e->dxgkrnl++;
		/* Whose threads queue GPU work: the CPU thread rows are named by it. */
		if (ev->has_ids && ev->tid && ev->pid && ev->pid != 4) {
			uint64_t *p = nf_u64map_find(&e->thread_proc, ev->tid);

			if (!p || *p != ev->pid) {
				if (nf_u64map_put(&e->thread_proc, ev->tid, ev->pid))
					return ew_oom(err);
			}
		}
		rc = ew_dxgkrnl(e, ev, err);
		if (rc < 0)
			return rc;
		if (rc == 1)
			return 0;
	} else if (ev->dxgkrnl < 0) {
		e->dxgkrnl++;
	}
	switch (ev->kind) {
	case NF_ETWI_K_CSWITCH:
		e->kernel = true;
		return ew_cswitch(e, ev, err);
	case NF_ETWI_K_THREAD:
	case NF_ETWI_K_PROCESS:
		e->kernel = true;
		rc = ew_name(e, ev, err);
		break;
	case NF_ETWI_K_NONE:
		break;
	}
	return rc ? rc : ew_raw(e, ev, err);
}

int nf_etwi_lost(struct nf_etwi *e, int64_t ns, uint64_t count, const char *detail, struct nf_error *err)
{
	sqlite3_bind_int64(e->st[ES_LOST], 1, ns);
	sqlite3_bind_int64(e->st[ES_LOST], 2, (int64_t)count);
	sqlite3_bind_text(e->st[ES_LOST], 3, detail, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(e->st[ES_LOST], 4, nf_anomaly_name(NF_ANOMALY_ETW_LOST), -1, SQLITE_STATIC);
	return ew_step(e, ES_LOST, err);
}

/* ---- finish ---- */

static int ew_finish_open(struct nf_etwi *e, struct nf_error *err)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < e->pkts.n; i++) {
		struct ew_pkt *p = EW_AT(e->pkts, struct ew_pkt, i);

		if (!p->used)
			continue;
		if (p->kind == P_WAIT && p->unwait_ns < 0)
			rc = ew_put_op(e, p->op_id, p->queue, ew_ctx_adapter(e, p->queue), "wait", p->fence,
				       p->value, p->queued_ns, p->observed_ns, -1, "pending", true, p->tid, err);
		for (uint32_t k = 0; rc == 0 && p->kind == P_SIGNAL && k < p->n; k++)
			rc = ew_put_op(e, p->op_id + k, p->queue, ew_ctx_adapter(e, p->queue), "signal",
				       p->fences[k], p->values[k], p->queued_ns, -1, -1, "pending", true,
				       p->tid, err);
		rc = rc ? rc : ew_put_packet(e, p, p->unwait_ns, false, err);
	}
	for (size_t i = 0; rc == 0 && i < e->dmas.n; i++) {
		struct ew_dma *m = EW_AT(e->dmas, struct ew_dma, i);

		if (m->used)
			rc = ew_dma_put(e, m, -1, "pending", err);
	}
	for (size_t i = 0; rc == 0 && i < e->cwaits.n; i++)
		rc = ew_cwait_put(e, EW_AT(e->cwaits, struct ew_cwait, i), -1, err);
	for (size_t i = 0; rc == 0 && i < e->runs.n; i++) {
		struct ew_run *r = EW_AT(e->runs, struct ew_run, i);
		sqlite3_stmt *s = e->st[ES_RUN];

		if (!r->known || r->tid == 0)
			continue;
		sqlite3_bind_int64(s, 1, r->tid);
		sqlite3_bind_int64(s, 2, (int64_t)i);
		ew_bind_opt(s, 3, r->has_start, r->start_ns);
		sqlite3_bind_null(s, 4);
		sqlite3_bind_null(s, 5);
		rc = ew_step(e, ES_RUN, err);
	}
	return rc;
}

static int ew_prepare_exec(struct nf_etwi *e, const char *sql, sqlite3_stmt **s, struct nf_error *err)
{
	if (sqlite3_prepare_v2(e->db, sql, -1, s, NULL) != SQLITE_OK)
		return ew_sql_err(e, err, sql);
	return 0;
}

static int ew_done(struct nf_etwi *e, sqlite3_stmt *s, const char *what, struct nf_error *err)
{
	int rc = sqlite3_step(s);

	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return rc == SQLITE_DONE ? 0 : ew_sql_err(e, err, what);
}

/* The node's name for queue names: NodeMetadata's, else "Node N". */
static void ew_node_name(struct nf_etwi *e, int64_t adapter, int64_t node, char *buf, size_t len)
{
	uint64_t key = ((uint64_t)(adapter + 1) << 32) | (uint32_t)node;
	uint64_t *v = adapter >= 0 && node >= 0 ? nf_u64map_find(&e->node_map, key) : NULL;
	const struct ew_node *n = v ? EW_AT(e->nodes, struct ew_node, *v) : NULL;

	if (n && n->name[0])
		snprintf(buf, len, "%s", n->name);
	else if (node >= 0)
		snprintf(buf, len, "Node %" PRId64, node);
	else
		snprintf(buf, len, "Node ?");
}

static int ew_finish_objects(struct nf_etwi *e, struct nf_error *err)
{
	sqlite3_stmt *sa = NULL, *sq = NULL, *sc = NULL, *sf = NULL, *ss = NULL, *sn = NULL;
	char name[256], hex[24], dev[24], nn[80];
	int rc;

	rc = ew_prepare_exec(e, "INSERT INTO adapters(adapter, name) VALUES (?1, ?2)", &sa, err);
	rc = rc ? rc : ew_prepare_exec(e, "INSERT INTO queues(queue, adapter, node, engine, name, start_ns, "
				       "stop_ns) VALUES (?1, ?2, ?3, NULL, ?4, ?5, ?6)", &sq, err);
	rc = rc ? rc : ew_prepare_exec(e, "INSERT INTO etw_contexts(queue, handle, kind, adapter, node, parent, "
				       "device, process) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)", &sc, err);
	rc = rc ? rc : ew_prepare_exec(e, "INSERT INTO fences(fence, type, shared, cross_adapter, "
				       "initial_value, created_ns, destroyed_ns) "
				       "VALUES (?1, NULL, NULL, NULL, ?2, ?3, ?4)", &sf, err);
	rc = rc ? rc : ew_prepare_exec(e, "INSERT INTO etw_sync_objects(fence, handle, kind) VALUES (?1, ?2, ?3)",
				       &ss, err);
	rc = rc ? rc : ew_prepare_exec(e, "INSERT INTO etw_nodes(adapter, node, engine_type, name) "
				       "VALUES (?1, ?2, ?3, ?4)", &sn, err);
	for (size_t i = 0; rc == 0 && i < e->adapters.n; i++) {
		snprintf(name, sizeof(name), "Adapter 0x%" PRIx64, *EW_AT(e->adapters, uint64_t, i));
		sqlite3_bind_int64(sa, 1, (int64_t)i);
		sqlite3_bind_text(sa, 2, name, -1, SQLITE_TRANSIENT);
		rc = ew_done(e, sa, "adapters", err);
	}
	for (size_t i = 0; rc == 0 && i < e->ctxs.n; i++) {
		const struct ew_ctx *c = EW_AT(e->ctxs, struct ew_ctx, i);
		uint64_t *proc = c->device ? nf_u64map_find(&e->device_proc, c->device) : NULL;

		ew_node_name(e, c->adapter, c->node, nn, sizeof(nn));
		snprintf(hex, sizeof(hex), "0x%" PRIx64, c->handle);
		snprintf(dev, sizeof(dev), "0x%" PRIx64, c->device);
		uint64_t *pn = proc ? nf_u64map_find(&e->proc_map, *proc) : NULL;

		if (pn)
			snprintf(name, sizeof(name), "%s %s %s (%s %" PRIu64 ")", nn,
				 c->kind == K_CONTEXT ? "context" : "hwqueue", hex,
				 EW_AT(e->procs, struct ew_proc, *pn)->name, *proc);
		else if (proc)
			snprintf(name, sizeof(name), "%s %s %s (process %" PRIu64 ")", nn,
				 c->kind == K_CONTEXT ? "context" : "hwqueue", hex, *proc);
		else
			snprintf(name, sizeof(name), "%s %s %s", nn,
				 c->kind == K_CONTEXT ? "context" : "hwqueue", hex);
		sqlite3_bind_int64(sq, 1, (int64_t)i + 1);
		ew_bind_opt(sq, 2, c->adapter >= 0, c->adapter);
		ew_bind_opt(sq, 3, c->node >= 0, c->node);
		sqlite3_bind_text(sq, 4, name, -1, SQLITE_TRANSIENT);
		ew_bind_opt(sq, 5, c->start_ns >= 0, c->start_ns);
		ew_bind_opt(sq, 6, c->stop_ns >= 0, c->stop_ns);
		rc = ew_done(e, sq, "queues", err);
		if (rc)
			break;
		sqlite3_bind_int64(sc, 1, (int64_t)i + 1);
		sqlite3_bind_text(sc, 2, hex, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(sc, 3, c->kind == K_CONTEXT ? "context" : "hwqueue", -1, SQLITE_STATIC);
		ew_bind_opt(sc, 4, c->adapter >= 0, c->adapter);
		ew_bind_opt(sc, 5, c->node >= 0, c->node);
		ew_bind_opt(sc, 6, c->parent >= 0, c->parent + 1);
		if (c->device)
			sqlite3_bind_text(sc, 7, dev, -1, SQLITE_TRANSIENT);
		else
			sqlite3_bind_null(sc, 7);
		ew_bind_opt(sc, 8, proc != NULL, proc ? (int64_t)*proc : 0);
		rc = ew_done(e, sc, "etw_contexts", err);
	}
	for (size_t i = 0; rc == 0 && i < e->syncs.n; i++) {
		const struct ew_sync *s = EW_AT(e->syncs, struct ew_sync, i);
		static const char *const kinds[] = { "sync_object", "monitored_fence", "native_fence" };

		sqlite3_bind_int64(sf, 1, (int64_t)i + 1);
		ew_bind_opt(sf, 2, s->has_initial, (int64_t)s->initial);
		ew_bind_opt(sf, 3, s->created_ns >= 0, s->created_ns);
		ew_bind_opt(sf, 4, s->destroyed_ns >= 0, s->destroyed_ns);
		rc = ew_done(e, sf, "fences", err);
		if (rc)
			break;
		snprintf(hex, sizeof(hex), "0x%" PRIx64, s->handle);
		sqlite3_bind_int64(ss, 1, (int64_t)i + 1);
		sqlite3_bind_text(ss, 2, hex, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(ss, 3, kinds[s->kind], -1, SQLITE_STATIC);
		rc = ew_done(e, ss, "etw_sync_objects", err);
	}
	for (size_t i = 0; rc == 0 && i < e->nodes.n; i++) {
		const struct ew_node *n = EW_AT(e->nodes, struct ew_node, i);

		ew_node_name(e, n->adapter, n->node, nn, sizeof(nn));
		ew_bind_opt(sn, 1, n->adapter >= 0, n->adapter);
		sqlite3_bind_int64(sn, 2, n->node);
		ew_bind_opt(sn, 3, n->engine_type >= 0, n->engine_type);
		sqlite3_bind_text(sn, 4, nn, -1, SQLITE_TRANSIENT);
		rc = ew_done(e, sn, "etw_nodes", err);
	}
	sqlite3_finalize(sa);
	sqlite3_finalize(sq);
	sqlite3_finalize(sc);
	sqlite3_finalize(sf);
	sqlite3_finalize(ss);
	sqlite3_finalize(sn);
	return rc;
}

/* queue_threads from the counts kept while the operations were written. */
static int ew_finish_queue_threads(struct nf_etwi *e, struct nf_error *err)
{
	sqlite3_stmt *st = NULL;
	int rc = ew_prepare_exec(e, "INSERT INTO queue_threads(queue, fence, thread, ops) VALUES (?1, ?2, ?3, ?4)",
				 &st, err);

	for (size_t i = 0; rc == 0 && i < e->qt.cap; i++) {
		const struct ew_qt *q = &e->qt.t[i];

		if (!q->queue)
			continue;
		sqlite3_bind_int64(st, 1, q->queue);
		ew_bind_opt(st, 2, q->fence > 0, q->fence);
		sqlite3_bind_int64(st, 3, q->tid);
		sqlite3_bind_int64(st, 4, (int64_t)q->ops);
		rc = ew_done(e, st, "queue_threads", err);
	}
	sqlite3_finalize(st);
	return rc;
}

/* Thread names for the CPU rows: the process's image, or "process N". */
static int ew_finish_threads(struct nf_etwi *e, struct nf_error *err)
{
	char name[96];
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < e->thread_proc.cap; i++) {
		if (!e->thread_proc.used[i])
			continue;
		uint64_t tid = e->thread_proc.keys[i], pid = e->thread_proc.vals[i];
		uint64_t *pn = nf_u64map_find(&e->proc_map, pid);

		if (pn)
			snprintf(name, sizeof(name), "%s %" PRIu64, EW_AT(e->procs, struct ew_proc, *pn)->name, pid);
		else
			snprintf(name, sizeof(name), "process %" PRIu64, pid);
		sqlite3_bind_int64(e->st[ES_THREAD_IF_NONE], 1, (int64_t)tid);
		sqlite3_bind_text(e->st[ES_THREAD_IF_NONE], 2, name, -1, SQLITE_TRANSIENT);
		rc = ew_step(e, ES_THREAD_IF_NONE, err);
	}
	return rc;
}

static int ew_finish_counts(struct nf_etwi *e, struct nf_error *err)
{
	sqlite3_stmt *s = NULL;
	int rc = ew_prepare_exec(e, "INSERT INTO etw_counts(provider, name, event_id, version, events, "
				 "size_mismatches) VALUES (?1, ?2, ?3, ?4, ?5, ?6)", &s, err);

	for (size_t i = 0; rc == 0 && i < e->counts.n; i++) {
		const struct ew_count *c = EW_AT(e->counts, struct ew_count, i);
		const char *p = e->providers[c->provider];

		sqlite3_bind_text(s, 1, p, -1, SQLITE_STATIC);
		if (!strcmp(p, "802ec45a-1e99-4b83-9920-87c98277ba9d"))
			sqlite3_bind_text(s, 2, "Microsoft-Windows-DxgKrnl", -1, SQLITE_STATIC);
		else if (!strcmp(p, "9e814aad-3204-11d2-9a82-006008a86939"))
			sqlite3_bind_text(s, 2, "NT Kernel Logger", -1, SQLITE_STATIC);
		else
			sqlite3_bind_null(s, 2);
		sqlite3_bind_int64(s, 3, c->id);
		sqlite3_bind_int64(s, 4, c->version);
		sqlite3_bind_int64(s, 5, (int64_t)c->events);
		sqlite3_bind_int64(s, 6, (int64_t)c->mismatches);
		rc = ew_done(e, s, "etw_counts", err);
	}
	sqlite3_finalize(s);
	return rc;
}

/*
 * deps: the signals that count are, per group (a multi-context signal) or
 * alone, the last packet to complete, once every packet of the group did.
 * For each wait with an end, the releasing signal is the counted signal of
 * its fence with the smallest value at or above the wait's (earliest end
 * among equals): fence values only grow, so that is the first to reach it; a
 * CPU signal releases it when it came first.
 */
static const char ew_deps_sql[] =
	/* The grouped packets that do not count (few): all but the last of a
	 * finished group, every one of an unfinished group. */
	"CREATE TEMP TABLE etw_sig_skip AS "
	" SELECT op FROM (SELECT g.op, o.end_ns, "
	"   max(o.end_ns) OVER (PARTITION BY g.grp) AS gend, "
	"   count(*) OVER (PARTITION BY g.grp) AS n, "
	"   count(o.end_ns) OVER (PARTITION BY g.grp) AS ne "
	"  FROM temp.etw_sig_group g JOIN fence_ops o ON o.id = g.op) "
	" WHERE n != ne OR end_ns IS NULL OR end_ns != gend;"
	"CREATE TEMP TABLE etw_sig AS SELECT id, fence, value, end_ns FROM fence_ops "
	" WHERE op = 'signal' AND fence IS NOT NULL AND end_ns IS NOT NULL AND status = 'complete' "
	" AND id NOT IN (SELECT op FROM temp.etw_sig_skip);";

/* The rows the deps rule weighs (contract/deps.h, NF_DEPS_PACKETS): the
 * signals that count, the CPU signals, every wait that ended (not aborted). */
static const char ew_deps_sig_sql[] = "SELECT id, fence, value, end_ns FROM temp.etw_sig";
static const char ew_deps_cpu_sql[] =
	"SELECT id, fence, value, ts_ns FROM cpu_signals WHERE fence IS NOT NULL AND ts_ns IS NOT NULL";
static const char ew_deps_wait_sql[] =
	"SELECT id, fence, value, end_ns, end_ns - observed_ns, queue FROM fence_ops "
	"WHERE op = 'wait' AND end_ns IS NOT NULL AND status != 'aborted'";

/*
 * What the capture holds of each CPU's buffers (the coverage rows): from its
 * first event to the capture's end. ETW writes each CPU's events to buffers of
 * their own; a circular or size-limited session keeps each CPU's latest ones,
 * so a CPU's record can begin late; a buffer lost on the way is an etw_lost
 * anomaly.
 */
static int ew_finish_coverage(struct nf_etwi *e, struct nf_error *err)
{
	sqlite3_stmt *st = NULL;
	int rc = ew_prepare_exec(e, "INSERT INTO coverage(scope, id, log, from_ns, to_ns, events, detail) "
				 "VALUES ('etw_cpu', ?1, NULL, ?2, ?3, ?4, ?5)", &st, err);

	for (size_t c = 0; rc == 0 && c < e->n_cpu_cov; c++) {
		if (!e->cpu_cov[c].n)
			continue;
		sqlite3_bind_int64(st, 1, (int64_t)c);
		/* a sequential log keeps every buffer (those lost are anomalies): a CPU
		 * whose first event comes late was quiet, not cut */
		sqlite3_bind_int64(st, 2, e->circular ? e->cpu_cov[c].first : 0);
		sqlite3_bind_text(st, 5, e->circular ? "circular log: the CPU's latest buffers, from its first event"
			: "sequential log: every buffer of the CPU from the start of the capture (lost ones are etw_lost anomalies)",
			-1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, e->last_ns);
		sqlite3_bind_int64(st, 4, (int64_t)e->cpu_cov[c].n);
		rc = ew_done(e, st, "coverage", err);
	}
	sqlite3_finalize(st);
	return rc;
}

/* deps: each ended wait and what released it, by the rule's NF_DEPS_PACKETS mode. */
static int ew_finish_deps(struct nf_etwi *e, struct nf_error *err)
{
	static const char *const sig_sql[2] = { ew_deps_sig_sql, ew_deps_cpu_sql };
	struct nf_deps *d = nf_deps_create(NF_DEPS_PACKETS, NULL, 0, err);
	sqlite3_stmt *st = NULL;
	struct nf_deps_row r;
	int rc = 0, src;

	if (!d)
		return err && err->code ? err->code : NF_ENOMEM;
	for (int k = 0; k < 2 && rc == 0; k++) {
		if ((rc = ew_prepare_exec(e, sig_sql[k], &st, err)))
			break;
		while (rc == 0 && (src = sqlite3_step(st)) == SQLITE_ROW) {
			struct nf_deps_signal sg = { .id = sqlite3_column_int64(st, 0),
						     .fence = sqlite3_column_int64(st, 1),
						     .value = sqlite3_column_int64(st, 2), .cpu = k == 1,
						     .end_known = true, .end = sqlite3_column_int64(st, 3) };

			rc = nf_deps_signal(d, &sg, err);
		}
		if (rc == 0 && src != SQLITE_DONE)
			rc = ew_sql_err(e, err, sig_sql[k]);
		sqlite3_finalize(st);
		st = NULL;
	}
	if (rc == 0 && (rc = ew_prepare_exec(e, ew_deps_wait_sql, &st, err)) == 0) {
		while (rc == 0 && (src = sqlite3_step(st)) == SQLITE_ROW) {
			struct nf_deps_wait w = { .id = sqlite3_column_int64(st, 0),
						  .has_fence = sqlite3_column_type(st, 1) != SQLITE_NULL,
						  .fence = sqlite3_column_int64(st, 1),
						  .value = sqlite3_column_int64(st, 2),
						  .end = sqlite3_column_int64(st, 3),
						  .has_stall = sqlite3_column_type(st, 4) != SQLITE_NULL,
						  .stall = sqlite3_column_int64(st, 4),
						  .queue = sqlite3_column_int64(st, 5) };

			rc = nf_deps_wait(d, &w, err);
		}
		if (rc == 0 && src != SQLITE_DONE)
			rc = ew_sql_err(e, err, ew_deps_wait_sql);
		sqlite3_finalize(st);
		st = NULL;
	}
	rc = rc ? rc : nf_deps_sort_begin(d, err);
	rc = rc ? rc : nf_deps_sort_end(d, err);
	rc = rc ? rc : ew_prepare_exec(e, "INSERT INTO deps(signal_id, wait_id, cpu_signal, stall_ns, reason) "
				       "VALUES (?1, ?2, ?3, ?4, ?5)", &st, err);
	while (rc == 0 && (rc = nf_deps_next(d, &r, err)) == 1) {
		if (r.signal_id)
			sqlite3_bind_int64(st, 1, r.signal_id);
		sqlite3_bind_int64(st, 2, r.wait_id);
		if (r.cpu_id)
			sqlite3_bind_int64(st, 3, r.cpu_id);
		if (r.has_stall)
			sqlite3_bind_int64(st, 4, r.stall);
		if (r.reason)
			sqlite3_bind_text(st, 5, r.reason, -1, SQLITE_STATIC);
		rc = ew_done(e, st, "insert deps", err);
	}
	sqlite3_finalize(st);
	nf_deps_destroy(d);
	return rc;
}

static const char ew_index_sql[] = "CREATE INDEX dma_packets_node ON dma_packets(adapter, node, start_ns);";

/* The names of the DxgKrnl events schemas/dxgkrnl.def decodes, for dxgkrnl_events. */
static int ew_finish_names(struct nf_etwi *e, struct nf_error *err)
{
	sqlite3_stmt *s = NULL;
	int rc = ew_prepare_exec(e, "INSERT OR IGNORE INTO dxgkrnl_names(event_id, name, meaning) VALUES (?1, ?2, ?3)",
				 &s, err);

	for (int ev = 1; rc == 0 && ev < NF_DXG_EV_COUNT; ev++) {
		const struct nf_etl_dxg_event_info *info = nf_etl_dxg_event_info_by_event(ev);

		if (!info)
			continue;
		sqlite3_bind_int64(s, 1, info->id);
		sqlite3_bind_text(s, 2, info->name, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 3, info->doc, -1, SQLITE_STATIC);
		rc = ew_done(e, s, "dxgkrnl_names", err);
	}
	sqlite3_finalize(s);
	return rc;
}

int nf_etwi_finish(struct nf_etwi *e, struct nf_etwi_counts *c, struct nf_error *err)
{
	int rc = ew_finish_open(e, err);

	rc = rc ? rc : ew_hw_finish(e, err);
	rc = rc ? rc : ew_finish_names(e, err);

	rc = rc ? rc : ew_presents_finish(e->pres, err);
	rc = rc ? rc : ew_finish_objects(e, err);
	rc = rc ? rc : ew_finish_counts(e, err);
	rc = rc ? rc : ew_finish_threads(e, err);
	rc = rc ? rc : ew_finish_queue_threads(e, err);
	rc = rc ? rc : ew_exec(e, ew_deps_sql, err);
	rc = rc ? rc : ew_finish_deps(e, err);
	rc = rc ? rc : ew_finish_coverage(e, err);
	rc = rc ? rc : nf_writer_deps_reasons(e->db, "ETW capture", "not_traced", err);
	rc = rc ? rc : ew_exec(e, ew_index_sql, err);
	if (rc)
		return rc;
	memset(c, 0, sizeof(*c));
	c->events = e->events;
	c->dxgkrnl = e->dxgkrnl;
	c->waits = e->waits;
	c->signals = e->signals;
	c->dma_packets = e->dma_rows;
	c->unmatched_unwaits = e->unmatched_unwaits;
	c->kernel = e->kernel;
	c->rundown = e->rundown;
	sqlite3_stmt *st = NULL;

	rc = ew_prepare_exec(e, "SELECT count(*) FROM deps WHERE signal_id IS NOT NULL OR cpu_signal IS NOT NULL",
			     &st, err);
	if (rc == 0 && sqlite3_step(st) == SQLITE_ROW)
		c->deps = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc;
}
