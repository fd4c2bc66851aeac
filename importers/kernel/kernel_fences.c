/*
 * dma_fence sightings and CPU waits held in memory, written at finish by
 * nf_bulk loads with the operation ids assigned here (kernel_fences.h). The
 * rows are those of kernel_ingest.c's TEMP-table path (ki_finish_signals,
 * ki_finish_waits): the same orders, ids and values.
 */
#include "kernel_fences.h"
#include "contract/deps.h"
#include "contract/errors.h"
#include "contract/timeline_writer.h"
#include "kernel_ingest.h"
#include "contract/util_hash.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void nf_kf_init(struct nf_kfences *m)
{
	const char *v = getenv("NFTRACE_KERNEL_FENCES_IN_MEMORY");
	char *end;
	unsigned long long n;

	memset(m, 0, sizeof(*m));
	m->max = NF_KF_DEFAULT_MAX;
	m->win_of.max_keys = 1u << 16; /* contexts with a window; the fences of others are hashed */
	if (v && *v) {
		errno = 0;
		n = strtoull(v, &end, 10);
		/* At most 2^31 (the slots hold 32-bit indexes, and twice the count). */
		if (!errno && !*end && n <= (1ull << 31))
			m->max = (size_t)n;
	}
}

void nf_kf_free(struct nf_kfences *m)
{
	size_t max = m->max;

	for (size_t i = 0; i < m->nwin; i++)
		free(m->win[i].idx);
	free(m->win);
	nf_u64map_free(&m->win_of);
	free(m->f);
	free(m->slot);
	free(m->w);
	memset(m, 0, sizeof(*m));
	m->max = max;
}

/*
 * The hash is seeded once per process: nf_mix64 can be inverted, so a trace
 * file could otherwise hold seqnos chosen to share their slots and turn every
 * probe into a walk of one long cluster. Only lookups use it: the rows and
 * their order do not depend on the seed.
 */
static uint64_t kf_seed;

static uint64_t kf_seed_get(void)
{
	uint64_t s = __atomic_load_n(&kf_seed, __ATOMIC_RELAXED);

	if (!s) {
		struct timespec a, b;

		clock_gettime(CLOCK_REALTIME, &a);
		clock_gettime(CLOCK_MONOTONIC, &b);
		s = nf_mix64((uint64_t)a.tv_nsec ^ ((uint64_t)a.tv_sec << 20) ^ ((uint64_t)b.tv_nsec << 40) ^
			     ((uint64_t)getpid() << 12) ^ (uint64_t)(uintptr_t)&a) | 1;
		__atomic_store_n(&kf_seed, s, __ATOMIC_RELAXED);
	}
	return s;
}

static uint64_t kf_hash(uint32_t ctx, int64_t seq)
{
	return nf_mix64(((uint64_t)seq ^ kf_seed_get()) * 0x9E3779B97F4A7C15ull + ctx);
}

/*
 * A slot: the fence's index + 1 in its low 32 bits (0: empty), the high 32
 * bits of its hash above, compared before the fence itself is read (a probe
 * that reads m->f is a cache miss: the fences are megabytes).
 */
/* Entries of all windows together at most: 8 per fence held, plus 2^20 (4 bytes each). */
#define KF_WIN_TOTAL(m) (8 * (m)->max + ((size_t)1 << 20))

#define KF_SLOT(h, idx) (((h) & 0xFFFFFFFF00000000ull) | ((uint64_t)(idx) + 1))

/* The slot of fence (ctx, seq) with hash h, or the empty slot where it would go (cap_slot > 0). */
static size_t kf_slot(const struct nf_kfences *m, uint32_t ctx, int64_t seq, uint64_t h)
{
	size_t i = (size_t)h & (m->cap_slot - 1);

	for (; m->slot[i]; i = (i + 1) & (m->cap_slot - 1)) {
		const struct nf_kf_fence *f;

		if ((m->slot[i] ^ h) >> 32)
			continue;
		f = &m->f[(uint32_t)m->slot[i] - 1];
		if (f->ctx == ctx && f->seq == seq)
			break;
	}
	return i;
}

/* The window of context ctx, or NULL. */
static struct nf_kf_window *kf_window(const struct nf_kfences *m, uint32_t ctx)
{
	const uint64_t *wi = m->nwin ? nf_u64map_find(&m->win_of, ctx) : NULL;

	return wi ? &m->win[*wi] : NULL;
}

/* The index of fence (ctx, seq) in m->f, or -1 when it is not held. */
static int64_t kf_find(const struct nf_kfences *m, uint32_t ctx, int64_t seq)
{
	const struct nf_kf_window *w = kf_window(m, ctx);
	size_t i;

	if (w && seq >= w->base && (uint64_t)seq - (uint64_t)w->base < w->len &&
	    w->idx[(uint64_t)seq - (uint64_t)w->base])
		return (int64_t)w->idx[(uint64_t)seq - (uint64_t)w->base] - 1;
	if (!m->n_hashed)
		return -1;
	i = kf_slot(m, ctx, seq, kf_hash(ctx, seq));
	return m->slot[i] ? (int64_t)(uint32_t)m->slot[i] - 1 : -1;
}

/*
 * Places new fence idx (ctx, seq) in its context's window: 0 placed, 1 not
 * (the caller hashes it), NF_ENOMEM. A window grows to a later seqno only
 * while at least about an eighth of it is used (8 (count + 1) + 1024
 * entries): a context's seqnos may be shared with others (every fourth).
 */
static int kf_window_put(struct nf_kfences *m, uint32_t ctx, int64_t seq, size_t idx)
{
	struct nf_kf_window *w = kf_window(m, ctx);
	uint64_t off;

	if (!w) {
		if (m->nwin == m->capwin) {
			size_t ncap = m->capwin ? m->capwin * 2 : 16;
			struct nf_kf_window *nw = realloc(m->win, ncap * sizeof(*nw));

			if (!nw)
				return NF_ENOMEM;
			m->win = nw;
			m->capwin = ncap;
		}
		if (m->win_total + 64 > KF_WIN_TOTAL(m))
			return 1;
		w = &m->win[m->nwin];
		*w = (struct nf_kf_window){ .base = seq, .cap = 64 };
		if (!(w->idx = calloc(w->cap, sizeof(*w->idx))))
			return NF_ENOMEM;
		if (nf_u64map_put(&m->win_of, ctx, m->nwin)) {
			free(w->idx);
			return 1; /* too many contexts for windows: hashed */
		}
		m->nwin++;
		m->win_total += w->cap;
	}
	if (seq < w->base)
		return 1;
	off = (uint64_t)seq - (uint64_t)w->base;
	if (off >= w->len) {
		/* (off itself may be up to 2^64 - 1: compared, never incremented first) */
		if (off >= 8 * ((uint64_t)w->count + 1) + 1024)
			return 1;
		if (off + 1 > w->cap) {
			size_t ncap = w->cap;
			uint32_t *ni;

			while (ncap < off + 1)
				ncap *= 2;
			/* all windows together stay within KF_WIN_TOTAL entries: many
			 * contexts with sparse seqnos are hashed instead */
			if (m->win_total - w->cap + ncap > KF_WIN_TOTAL(m))
				return 1;
			if (!(ni = realloc(w->idx, ncap * sizeof(*ni))))
				return NF_ENOMEM;
			memset(ni + w->cap, 0, (ncap - w->cap) * sizeof(*ni));
			m->win_total += ncap - w->cap;
			w->idx = ni;
			w->cap = ncap;
		}
		w->len = (size_t)off + 1;
	}
	w->idx[off] = (uint32_t)idx + 1;
	w->count++;
	return 0;
}

/* Hashes new fence idx (ctx, seq). Returns 0 or NF_ENOMEM. */
static int kf_hash_put(struct nf_kfences *m, uint32_t ctx, int64_t seq, size_t idx)
{
	uint64_t h = kf_hash(ctx, seq);

	if ((m->n_hashed + 1) * 2 > m->cap_slot) {
		size_t ncap = m->cap_slot ? m->cap_slot * 2 : 1024;
		uint64_t *nsl = calloc(ncap, sizeof(*nsl));

		if (!nsl)
			return NF_ENOMEM;
		for (size_t k = 0; k < m->nf; k++) {
			uint64_t hk;
			size_t j;

			if (!(m->f[k].has & NF_KF_HASHED))
				continue;
			hk = kf_hash(m->f[k].ctx, m->f[k].seq);
			for (j = (size_t)hk & (ncap - 1); nsl[j]; j = (j + 1) & (ncap - 1))
				;
			nsl[j] = KF_SLOT(hk, k);
		}
		free(m->slot);
		m->slot = nsl;
		m->cap_slot = ncap;
	}
	m->slot[kf_slot(m, ctx, seq, h)] = KF_SLOT(h, idx);
	m->n_hashed++;
	m->f[idx].has |= NF_KF_HASHED;
	return 0;
}

int nf_kf_sight(struct nf_kfences *m, uint32_t ctx, int64_t seq, uint32_t kind, int64_t ns, uint32_t tid)
{
	int64_t found = kf_find(m, ctx, seq);
	struct nf_kf_fence *f;
	int rc;

	if (found >= 0) {
		f = &m->f[found];
	} else {
		if (m->nf >= m->max)
			return 1;
		if (m->nf == m->capf) {
			size_t ncap = m->capf ? m->capf * 2 : 1024;
			struct nf_kf_fence *nfs = realloc(m->f, ncap * sizeof(*nfs));

			if (!nfs)
				return NF_ENOMEM;
			m->f = nfs;
			m->capf = ncap;
		}
		m->f[m->nf] = (struct nf_kf_fence){ .ctx = ctx, .seq = seq };
		rc = kf_window_put(m, ctx, seq, m->nf);
		if (rc == 1)
			rc = kf_hash_put(m, ctx, seq, m->nf);
		if (rc)
			return rc;
		f = &m->f[m->nf++];
	}
	/* The first time each was seen is kept (the TEMP path's coalesce). */
	if (kind == NF_KF_INIT && !(f->has & NF_KF_INIT))
		f->init = ns;
	if (kind == NF_KF_EMIT && !(f->has & NF_KF_EMIT)) {
		f->emit = ns;
		if (!(f->has & NF_KF_TID)) {
			f->tid = tid;
			f->has |= NF_KF_TID;
		}
	}
	if (kind == NF_KF_SIGNAL && !(f->has & NF_KF_SIGNAL))
		f->signal = ns;
	f->has |= kind;
	return 0;
}

int nf_kf_wait(struct nf_kfences *m, uint32_t tid, uint32_t ctx, int64_t seq, bool has_start, int64_t start,
	       bool has_end, int64_t end)
{
	if (m->nw >= m->max)
		return 1;
	if (m->nw == m->capw) {
		size_t ncap = m->capw ? m->capw * 2 : 1024;
		struct nf_kf_wait *nw = realloc(m->w, ncap * sizeof(*nw));

		if (!nw)
			return NF_ENOMEM;
		m->w = nw;
		m->capw = ncap;
	}
	m->w[m->nw++] = (struct nf_kf_wait){ .seq = seq, .start = has_start ? start : 0, .end = has_end ? end : 0,
					     .ctx = ctx, .tid = tid, .has_start = has_start, .has_end = has_end };
	return 0;
}

static int kf_sql_err(sqlite3 *db, struct nf_error *err, const char *what)
{
	return nf_error_set(err, NF_ESQL, "timeline: kernel events: %s: %s", what, sqlite3_errmsg(db));
}

int nf_kf_write_starts(struct nf_kfences *m, sqlite3 *db, struct nf_error *err)
{
	struct nf_u64map min = { 0 };
	sqlite3_stmt *ins = NULL;
	int rc = 0;

	for (size_t i = 0; i < m->nf; i++) {
		const struct nf_kf_fence *f = &m->f[i];
		int64_t t = f->has & NF_KF_INIT ? f->init : f->has & NF_KF_EMIT ? f->emit : f->signal;
		uint64_t *v = nf_u64map_find(&min, f->ctx);

		if (v) {
			if (t < (int64_t)*v)
				*v = (uint64_t)t;
		} else if (nf_u64map_put(&min, f->ctx, (uint64_t)t)) {
			rc = nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
			goto out;
		}
	}
	if (sqlite3_exec(db, "CREATE TEMP TABLE k_fstart(context INTEGER PRIMARY KEY, start_ns INTEGER)", NULL, NULL,
			 NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "INSERT INTO temp.k_fstart(context, start_ns) VALUES (?1, ?2)", -1, &ins, NULL) !=
		    SQLITE_OK) {
		rc = kf_sql_err(db, err, "dma_fence timelines");
		goto out;
	}
	for (size_t i = 0; i < min.cap && !rc; i++) {
		if (!min.used[i])
			continue;
		sqlite3_bind_int64(ins, 1, (int64_t)min.keys[i]);
		sqlite3_bind_int64(ins, 2, (int64_t)min.vals[i]);
		if (sqlite3_step(ins) != SQLITE_DONE)
			rc = kf_sql_err(db, err, "dma_fence timelines");
		sqlite3_reset(ins);
	}
out:
	sqlite3_finalize(ins);
	nf_u64map_free(&min);
	return rc;
}

/* A signal's place in the signal order: coalesce(emit, init, signal), context, seqno. */
struct kf_sig {
	int64_t key, seq;
	uint32_t ctx, idx;
};

static int kf_sig_cmp(const void *pa, const void *pb)
{
	const struct kf_sig *a = pa, *b = pb;

	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	if (a->ctx != b->ctx)
		return a->ctx < b->ctx ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* A wait's place: coalesce(start, end), then arrival. */
struct kf_wo {
	int64_t key;
	uint32_t idx;
	int32_t fence;       /* its fence's index, -1 none */
};

/* temp.k_fences' key order: context, seqno. */
static int kf_key_cmp(const void *pa, const void *pb)
{
	const struct kf_sig *a = pa, *b = pb;

	if (a->ctx != b->ctx)
		return a->ctx < b->ctx ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int kf_wo_cmp(const void *pa, const void *pb)
{
	const struct kf_wo *a = pa, *b = pb;

	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* The state of the nf_bulk sources below. */
struct kf_src {
	const struct nf_kfences *m;
	const struct kf_sig *sig;
	const struct kf_wo *wo;
	const int64_t *op;   /* [fence index] -> its signal's fence_ops id */
	size_t pos, n;
	int64_t next_id;
};

static int kf_signal_row(void *ctx, struct nf_bulk_row *row, struct nf_error *err)
{
	struct kf_src *s = ctx;
	const struct nf_kf_fence *f;

	(void)err;
	if (s->pos == s->n)
		return 0;
	f = &s->m->f[s->sig[s->pos].idx];
	/* c0 (its id) is not written: see kf_check_ids. */
	nf_bulk_int(row, 1, NF_KERNEL_TIMELINE_BASE + f->ctx);
	nf_bulk_int(row, 2, f->seq);
	nf_bulk_opt(row, 3, (f->has & (NF_KF_EMIT | NF_KF_INIT)) != 0, f->has & NF_KF_EMIT ? f->emit : f->init);
	nf_bulk_opt(row, 4, (f->has & NF_KF_SIGNAL) != 0, f->signal);
	if (f->has & NF_KF_SIGNAL)
		nf_bulk_text(row, 5, "complete", 8);
	else
		nf_bulk_text(row, 5, "unsignaled", 10);
	nf_bulk_opt(row, 6, (f->has & NF_KF_TID) != 0, f->tid);
	s->pos++;
	return 1;
}

/* Was wait o released by its fence's signal (the signal no later than the wait's end)? */
static bool kf_released(const struct nf_kfences *m, const struct kf_wo *o)
{
	const struct nf_kf_wait *w = &m->w[o->idx];

	return o->fence >= 0 && nf_deps_one_shot_released(w->has_end, w->end, (m->f[o->fence].has & NF_KF_SIGNAL) != 0,
							   m->f[o->fence].signal);
}

static int kf_wait_op_row(void *ctx, struct nf_bulk_row *row, struct nf_error *err)
{
	struct kf_src *s = ctx;
	const struct nf_kf_wait *w;

	(void)err;
	if (s->pos == s->n)
		return 0;
	w = &s->m->w[s->wo[s->pos].idx];
	nf_bulk_int(row, 1, NF_KERNEL_TIMELINE_BASE + w->ctx);
	nf_bulk_int(row, 2, w->seq);
	nf_bulk_opt(row, 3, w->has_start, w->start);
	nf_bulk_opt(row, 4, w->has_end, w->end);
	if (w->has_end)
		nf_bulk_text(row, 5, "complete", 8);
	else
		nf_bulk_text(row, 5, "pending", 7);
	nf_bulk_int(row, 6, w->tid);
	s->pos++;
	return 1;
}

static int kf_cpu_wait_row(void *ctx, struct nf_bulk_row *row, struct nf_error *err)
{
	struct kf_src *s = ctx;
	const struct nf_kf_wait *w;

	(void)err;
	if (s->pos == s->n)
		return 0;
	w = &s->m->w[s->wo[s->pos].idx];
	nf_bulk_int(row, 0, w->tid);
	nf_bulk_int(row, 1, NF_KERNEL_TIMELINE_BASE + w->ctx);
	nf_bulk_int(row, 2, w->seq);
	nf_bulk_opt(row, 3, w->has_start, w->start);
	nf_bulk_opt(row, 4, w->has_end, w->end);
	if (!w->has_end)
		nf_bulk_text(row, 5, "pending", 7);
	else if (kf_released(s->m, &s->wo[s->pos]))
		nf_bulk_text(row, 5, "satisfied", 9);
	else
		nf_bulk_text(row, 5, "timeout", 7);
	s->pos++;
	return 1;
}

static int kf_dep_row(void *ctx, struct nf_bulk_row *row, struct nf_error *err)
{
	struct kf_src *s = ctx;

	(void)err;
	/* one row per wait that ended (one still open at the end has none) */
	while (s->pos < s->n && !s->m->w[s->wo[s->pos].idx].has_end)
		s->pos++;
	if (s->pos == s->n)
		return 0;
	const struct kf_wo *o = &s->wo[s->pos];
	const struct nf_kf_wait *w = &s->m->w[o->idx];
	bool sig = o->fence >= 0 && (s->m->f[o->fence].has & NF_KF_SIGNAL);
	const char *why = nf_deps_one_shot_reason(w->end, sig, sig ? s->m->f[o->fence].signal : 0);

	if (!why)
		nf_bulk_int(row, 0, s->op[o->fence]);
	else
		nf_bulk_text(row, 3, why, (int)strlen(why));
	nf_bulk_int(row, 1, s->next_id + (int64_t)s->pos);
	nf_bulk_opt(row, 2, w->has_start, w->end - w->start);
	s->pos++;
	return 1;
}

/*
 * The rows go in with the ids SQLite gives (max(id) + 1 each: an explicit id
 * costs a seek per row); this checks they are the ids assigned above, which
 * the deps rows name.
 */
static int kf_check_ids(sqlite3 *db, sqlite3_stmt *max_id, int64_t want, struct nf_error *err)
{
	int64_t got;

	sqlite3_reset(max_id);
	if (sqlite3_step(max_id) != SQLITE_ROW)
		return kf_sql_err(db, err, "reading fence_ops");
	got = sqlite3_column_int64(max_id, 0);
	sqlite3_reset(max_id);
	if (got != want)
		return nf_error_set(err, NF_ESQL, "timeline: kernel events: fence_ops ids end at %lld, not %lld as assigned",
				    (long long)got, (long long)want);
	return 0;
}

/*
 * temp.k_fences for the jobs' SQL, as a virtual table over the fences held
 * (loading them into a TEMP table cost a row insert each, 45 ms at gpu-x100,
 * for a few lookups by (context, seqno) each). It owns the fences once made:
 * they go with the connection (the module's destructor). Read-only; a scan
 * gives the rows in key order (context, seqno), as the TEMP table did.
 */
struct kf_table {
	struct nf_kfences kf;  /* f, slot (no waits) */
	int64_t *op;           /* [index] -> its signal's fence_ops id */
	uint32_t *order;       /* indexes in key order, made at the first scan (lookups need none) */
};

struct kf_vtab {
	sqlite3_vtab base;
	struct kf_table *t;
};

struct kf_cursor {
	sqlite3_vtab_cursor base;
	struct kf_table *t;
	int mode;              /* 3: one row (row); else order[pos..end) */
	int64_t row;
	size_t pos, end;
};

static void kf_table_free(void *p)
{
	struct kf_table *t = p;

	if (!t)
		return;
	nf_kf_free(&t->kf);
	free(t->op);
	free(t->order);
	free(t);
}

static int kf_vt_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
			 char **errmsg)
{
	struct kf_vtab *v;
	int rc;

	(void)argc;
	(void)argv;
	(void)errmsg;
	rc = sqlite3_declare_vtab(db, "CREATE TABLE x(context INTEGER, seqno INTEGER, init_ns INTEGER, "
				      "emit_ns INTEGER, signal_ns INTEGER, emit_tid INTEGER, op_id INTEGER)");
	if (rc != SQLITE_OK)
		return rc;
	if (!(v = sqlite3_malloc(sizeof(*v))))
		return SQLITE_NOMEM;
	memset(v, 0, sizeof(*v));
	v->t = aux;
	*out = &v->base;
	return SQLITE_OK;
}

static int kf_vt_disconnect(sqlite3_vtab *vt)
{
	sqlite3_free(vt);
	return SQLITE_OK;
}

static int kf_vt_best_index(sqlite3_vtab *vt, sqlite3_index_info *info)
{
	double n = (double)((struct kf_vtab *)vt)->t->kf.nf + 1;
	int ic = -1, is = -1;

	for (int i = 0; i < info->nConstraint; i++) {
		const struct sqlite3_index_constraint *c = &info->aConstraint[i];

		if (!c->usable || c->op != SQLITE_INDEX_CONSTRAINT_EQ)
			continue;
		if (c->iColumn == 0)
			ic = i;
		else if (c->iColumn == 1)
			is = i;
	}
	if (ic >= 0 && is >= 0) {
		info->aConstraintUsage[ic].argvIndex = 1;
		info->aConstraintUsage[ic].omit = 1;
		info->aConstraintUsage[is].argvIndex = 2;
		info->aConstraintUsage[is].omit = 1;
		info->idxNum = 3;
		info->estimatedCost = 1;
		info->estimatedRows = 1;
		info->idxFlags = SQLITE_INDEX_SCAN_UNIQUE;
	} else if (ic >= 0) {
		info->aConstraintUsage[ic].argvIndex = 1;
		info->aConstraintUsage[ic].omit = 1;
		info->idxNum = 1;
		info->estimatedCost = n / 4 + 2;
		info->estimatedRows = (sqlite3_int64)(n / 4) + 1;
	} else {
		info->idxNum = 0;
		info->estimatedCost = n * 2;
		info->estimatedRows = (sqlite3_int64)n;
	}
	return SQLITE_OK;
}

static int kf_vt_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out)
{
	struct kf_cursor *c = sqlite3_malloc(sizeof(*c));

	if (!c)
		return SQLITE_NOMEM;
	memset(c, 0, sizeof(*c));
	c->t = ((struct kf_vtab *)vt)->t;
	*out = &c->base;
	return SQLITE_OK;
}

static int kf_vt_close(sqlite3_vtab_cursor *cur)
{
	sqlite3_free(cur);
	return SQLITE_OK;
}

/* An argument as the INTEGER column compares with it: false when nothing can equal it. */
static bool kf_arg(sqlite3_value *v, int64_t *out)
{
	switch (sqlite3_value_numeric_type(v)) {
	case SQLITE_INTEGER:
		*out = sqlite3_value_int64(v);
		return true;
	case SQLITE_FLOAT: {
		double d = sqlite3_value_double(v);

		if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || d != (double)(int64_t)d)
			return false;
		*out = (int64_t)d;
		return true;
	}
	default:
		return false;
	}
}

/* t->order, when not made yet; false out of memory. */
static bool kf_order(struct kf_table *t)
{
	struct kf_sig *k;

	if (t->order)
		return true;
	k = malloc((t->kf.nf ? t->kf.nf : 1) * sizeof(*k));
	t->order = malloc((t->kf.nf ? t->kf.nf : 1) * sizeof(*t->order));
	if (!k || !t->order) {
		free(k);
		free(t->order);
		t->order = NULL;
		return false;
	}
	for (size_t i = 0; i < t->kf.nf; i++)
		k[i] = (struct kf_sig){ .seq = t->kf.f[i].seq, .ctx = t->kf.f[i].ctx, .idx = (uint32_t)i };
	qsort(k, t->kf.nf, sizeof(*k), kf_key_cmp);
	for (size_t i = 0; i < t->kf.nf; i++)
		t->order[i] = k[i].idx;
	free(k);
	return true;
}

static int kf_vt_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc, sqlite3_value **argv)
{
	struct kf_cursor *c = (struct kf_cursor *)cur;
	struct kf_table *t = c->t;
	int64_t ctx = 0, seq = 0;
	bool ok = true;

	(void)idx_str;
	c->mode = idx;
	c->pos = c->end = 0;
	if (idx >= 1 && (argc < 1 || !kf_arg(argv[0], &ctx) || ctx < 0 || ctx > (int64_t)UINT32_MAX))
		ok = false;
	if (idx == 3) {
		c->row = -1;
		if (ok && argc >= 2 && kf_arg(argv[1], &seq))
			c->row = kf_find(&t->kf, (uint32_t)ctx, seq);
		return SQLITE_OK;
	}
	if (!ok)
		return SQLITE_OK;
	if (!kf_order(t))
		return SQLITE_NOMEM;
	c->end = t->kf.nf;
	if (idx == 1) {
		/* The range of the context in key order. */
		size_t lo = 0, hi = t->kf.nf;

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (t->kf.f[t->order[mid]].ctx < (uint32_t)ctx)
				lo = mid + 1;
			else
				hi = mid;
		}
		c->pos = lo;
		for (hi = t->kf.nf; lo < hi;) {
			size_t mid = lo + (hi - lo) / 2;

			if (t->kf.f[t->order[mid]].ctx <= (uint32_t)ctx)
				lo = mid + 1;
			else
				hi = mid;
		}
		c->end = lo;
	}
	return SQLITE_OK;
}

static int kf_vt_next(sqlite3_vtab_cursor *cur)
{
	struct kf_cursor *c = (struct kf_cursor *)cur;

	if (c->mode == 3)
		c->row = -1;
	else
		c->pos++;
	return SQLITE_OK;
}

static int kf_vt_eof(sqlite3_vtab_cursor *cur)
{
	const struct kf_cursor *c = (const struct kf_cursor *)cur;

	return c->mode == 3 ? c->row < 0 : c->pos >= c->end;
}

static int64_t kf_vt_index(const struct kf_cursor *c)
{
	return c->mode == 3 ? c->row : (int64_t)c->t->order[c->pos];
}

static int kf_vt_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
	const struct kf_cursor *c = (const struct kf_cursor *)cur;
	int64_t i = kf_vt_index(c);
	const struct nf_kf_fence *f = &c->t->kf.f[i];

	switch (col) {
	case 0: sqlite3_result_int64(ctx, f->ctx); break;
	case 1: sqlite3_result_int64(ctx, f->seq); break;
	case 2: if (f->has & NF_KF_INIT) sqlite3_result_int64(ctx, f->init); break;
	case 3: if (f->has & NF_KF_EMIT) sqlite3_result_int64(ctx, f->emit); break;
	case 4: if (f->has & NF_KF_SIGNAL) sqlite3_result_int64(ctx, f->signal); break;
	case 5: if (f->has & NF_KF_TID) sqlite3_result_int64(ctx, f->tid); break;
	case 6: sqlite3_result_int64(ctx, c->t->op[i]); break;
	default: break; /* NULL */
	}
	return SQLITE_OK;
}

static int kf_vt_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid)
{
	*rowid = kf_vt_index((const struct kf_cursor *)cur) + 1;
	return SQLITE_OK;
}

static const sqlite3_module kf_module = {
	.iVersion = 0,
	.xCreate = kf_vt_connect,
	.xConnect = kf_vt_connect,
	.xBestIndex = kf_vt_best_index,
	.xDisconnect = kf_vt_disconnect,
	.xDestroy = kf_vt_disconnect,
	.xOpen = kf_vt_open,
	.xClose = kf_vt_close,
	.xFilter = kf_vt_filter,
	.xNext = kf_vt_next,
	.xEof = kf_vt_eof,
	.xColumn = kf_vt_column,
	.xRowid = kf_vt_rowid,
};

/*
 * Replaces the (empty) TEMP table temp.k_fences with the virtual table over
 * m's fences, which move to it (m keeps none after); op moves too.
 */
static int kf_make_table(struct nf_kfences *m, int64_t *op, sqlite3 *db, struct nf_error *err)
{
	struct kf_table *t = calloc(1, sizeof(*t));
	char *msg = NULL;
	int rc;

	if (!t) {
		free(op);
		return nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
	}
	t->op = op;
	t->kf = *m;
	t->kf.w = NULL;
	t->kf.nw = t->kf.capw = 0;
	/* m keeps its waits and bound, nothing of the fences. */
	{
		struct nf_kfences rest = { .w = m->w, .nw = m->nw, .capw = m->capw, .max = m->max };

		*m = rest;
	}
	/* On failure SQLite calls the destructor itself. */
	if (sqlite3_create_module_v2(db, "nf_kfences", &kf_module, t, kf_table_free) != SQLITE_OK)
		return kf_sql_err(db, err, "registering nf_kfences");
	rc = sqlite3_exec(db, "DROP TABLE temp.k_fences; CREATE VIRTUAL TABLE temp.k_fences USING nf_kfences",
			  NULL, NULL, &msg);
	if (rc != SQLITE_OK) {
		nf_error_set(err, NF_ESQL, "timeline: kernel events: dma_fence sightings: %s",
			     msg ? msg : sqlite3_errmsg(db));
		sqlite3_free(msg);
		return NF_ESQL;
	}
	return 0;
}

static int u64_cmp(const void *pa, const void *pb)
{
	uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;

	return a < b ? -1 : a > b;
}

/* queue_threads: per (context, emitting thread) of the signals, how many (in that order). */
static int kf_write_threads(const struct nf_kfences *m, sqlite3 *db, struct nf_error *err)
{
	struct nf_u64map count = { 0 };
	uint64_t *keys = NULL, last = 0, *last_n = NULL;
	sqlite3_stmt *ins = NULL;
	size_t n = 0;
	int rc = 0;

	/* Counted in a map (a session has few such pairs), the pairs then sorted. */
	for (size_t i = 0; i < m->nf; i++) {
		uint64_t key;

		if (!(m->f[i].has & NF_KF_TID) || !(m->f[i].has & (NF_KF_EMIT | NF_KF_INIT)))
			continue;
		key = (uint64_t)m->f[i].ctx << 32 | m->f[i].tid;
		if (!last_n || key != last) {
			if (!(last_n = nf_u64map_find(&count, key))) {
				if (nf_u64map_put(&count, key, 0)) {
					rc = nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
					goto out;
				}
				last_n = nf_u64map_find(&count, key);
			}
			last = key;
		}
		(*last_n)++;
	}
	if (!count.n)
		goto out;
	if (!(keys = malloc(count.n * sizeof(*keys)))) {
		rc = nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
		goto out;
	}
	for (size_t i = 0; i < count.cap; i++)
		if (count.used[i])
			keys[n++] = count.keys[i];
	qsort(keys, n, sizeof(*keys), u64_cmp);
	if (sqlite3_prepare_v2(db, "INSERT INTO queue_threads(queue, fence, thread, ops) VALUES (?1, ?1, ?2, ?3)",
			       -1, &ins, NULL) != SQLITE_OK) {
		rc = kf_sql_err(db, err, "writing the threads of dma_fence signals");
		goto out;
	}
	for (size_t i = 0; i < n && !rc; i++) {
		sqlite3_bind_int64(ins, 1, NF_KERNEL_TIMELINE_BASE + (int64_t)(keys[i] >> 32));
		sqlite3_bind_int64(ins, 2, (int64_t)(uint32_t)keys[i]);
		sqlite3_bind_int64(ins, 3, (int64_t)*nf_u64map_find(&count, keys[i]));
		if (sqlite3_step(ins) != SQLITE_DONE)
			rc = kf_sql_err(db, err, "writing the threads of dma_fence signals");
		sqlite3_reset(ins);
	}
out:
	sqlite3_finalize(ins);
	free(keys);
	nf_u64map_free(&count);
	return rc;
}

int nf_kf_write(struct nf_kfences *m, sqlite3 *db, struct nf_bulk *bk, bool k_fences, struct nf_error *err)
{
	struct kf_sig *sig = malloc((m->nf ? m->nf : 1) * sizeof(*sig));
	struct kf_wo *wo = malloc((m->nw ? m->nw : 1) * sizeof(*wo));
	int64_t *op = malloc((m->nf ? m->nf : 1) * sizeof(*op));
	struct kf_src s = { .m = m };
	sqlite3_stmt *st = NULL;
	int64_t base;
	bool sorted = true;
	int rc;

	if (!sig || !wo || !op) {
		rc = nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
		goto out;
	}
	if (sqlite3_prepare_v2(db, "SELECT coalesce(max(id), 0) FROM fence_ops", -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW) {
		rc = kf_sql_err(db, err, "reading fence_ops");
		goto out;
	}
	base = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	/* The signals in their order (most often the order they came in: checked first). */
	for (size_t i = 0; i < m->nf; i++) {
		const struct nf_kf_fence *f = &m->f[i];

		sig[i] = (struct kf_sig){ .key = f->has & NF_KF_EMIT ? f->emit : f->has & NF_KF_INIT ? f->init : f->signal,
					  .seq = f->seq, .ctx = f->ctx, .idx = (uint32_t)i };
		if (i && sorted && kf_sig_cmp(&sig[i - 1], &sig[i]) > 0)
			sorted = false;
	}
	if (!sorted)
		qsort(sig, m->nf, sizeof(*sig), kf_sig_cmp);
	for (size_t i = 0; i < m->nf; i++)
		op[sig[i].idx] = base + 1 + (int64_t)i;
	s.sig = sig;
	s.op = op;
	s.n = m->nf;
	if ((rc = nf_bulk_run(bk, "INSERT INTO fence_ops(id, queue, adapter, op, fence, handle, value, queued_ns, "
			      "observed_ns, end_ns, status, log_seq, epoch, thread) SELECT NULL, c1, NULL, 'signal', c1, "
			      "NULL, c2, c3, NULL, c4, c5, NULL, NULL, c6 FROM nf_bulk",
			      kf_signal_row, &s, false, "timeline: kernel events: dma_fence signals", err)) ||
	    (rc = kf_check_ids(db, st, base + (int64_t)m->nf, err)) || (rc = kf_write_threads(m, db, err)))
		goto out;

	/* The signal order is not needed any more (a scan of temp.k_fences makes its own). */
	free(sig);
	sig = NULL;
	/* The waits in their order, each with its fence. */
	sorted = true;
	for (size_t i = 0; i < m->nw; i++) {
		const struct nf_kf_wait *w = &m->w[i];
		int64_t fi = kf_find(m, w->ctx, w->seq);

		wo[i] = (struct kf_wo){ .key = w->has_start ? w->start : w->end, .idx = (uint32_t)i,
					.fence = (int32_t)fi };
		if (i && sorted && kf_wo_cmp(&wo[i - 1], &wo[i]) > 0)
			sorted = false;
	}
	if (!sorted)
		qsort(wo, m->nw, sizeof(*wo), kf_wo_cmp);
	s.wo = wo;
	s.n = m->nw;
	s.next_id = base + 1 + (int64_t)m->nf;
	s.pos = 0;
	if ((rc = nf_bulk_run(bk, "INSERT INTO fence_ops(id, queue, adapter, op, fence, handle, value, queued_ns, "
			      "observed_ns, end_ns, status, log_seq, epoch, thread) SELECT NULL, NULL, NULL, 'wait', c1, "
			      "NULL, c2, c3, c3, c4, c5, NULL, NULL, c6 FROM nf_bulk",
			      kf_wait_op_row, &s, false, "timeline: kernel events: dma_fence waits", err)) ||
	    (rc = kf_check_ids(db, st, base + (int64_t)(m->nf + m->nw), err)))
		goto out;
	s.pos = 0;
	if ((rc = nf_bulk_run(bk, "INSERT INTO cpu_waits(thread, adapter, fence, value, start_ns, end_ns, status) "
			      "SELECT c0, NULL, c1, c2, c3, c4, c5 FROM nf_bulk",
			      kf_cpu_wait_row, &s, false, "timeline: kernel events: dma_fence CPU waits", err)))
		goto out;
	s.pos = 0;
	if ((rc = nf_bulk_run(bk, "INSERT INTO deps(signal_id, wait_id, cpu_signal, stall_ns, reason) "
			      "SELECT c0, c1, NULL, c2, c3 FROM nf_bulk",
			      kf_dep_row, &s, false, "timeline: kernel events: dma_fence waits' signals", err)))
		goto out;
	if (k_fences) {
		rc = kf_make_table(m, op, db, err);
		op = NULL; /* moved */
	}
out:
	sqlite3_finalize(st);
	free(op);
	free(wo);
	free(sig);
	return rc;
}
