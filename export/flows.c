/*
 * Where the export's flows come from, without keeping anything per
 * operation: sorted streams of deps pairs merged with a scan (a cursor), the
 * waits that end a flow as a bitmap over fence_ops ids, and deps read by
 * signal as the few runs the importers wrote it in, merged with a heap
 * instead of sorted.
 */
#include "walk.h"
#include "contract/errors.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int flowbuf_add(struct flowbuf *fb, uint64_t id)
{
	if (fb->n == fb->cap) {
		size_t ncap = fb->cap ? fb->cap * 2 : 16;
		uint64_t *nv = realloc(fb->v, ncap * sizeof(*nv));

		if (!nv)
			return nf_error_set(fb->err, NF_ENOMEM, "out of memory while exporting");
		fb->v = nv;
		fb->cap = ncap;
	}
	fb->v[fb->n++] = id;
	return 0;
}

int cursor_next(struct nf_error *err, struct edge_cursor *c)
{
	int rc = sqlite3_step(c->st);

	if (rc == SQLITE_ROW) {
		int64_t k = sqlite3_column_int64(c->st, 0);

		if (c->started && k < c->key)
			return nf_error_set(err, NF_EFORMAT,
					    "deps: rows out of order (%" PRId64 " after %" PRId64 ")", k,
					    c->key);
		c->started = 1;
		c->key = k;
		c->val = col_or(c->st, 1, 0);
		return 0;
	}
	c->done = 1;
	return rc == SQLITE_DONE ? 0
				 : nf_error_set(err, NF_ESQL, "reading deps: %s", sqlite3_errmsg(c->db));
}

int cursor_open(struct nf_error *err, struct edge_cursor *c, sqlite3 *db, char *sql)
{
	int ret = 0;

	memset(c, 0, sizeof(*c));
	c->db = db;
	if (!sql)
		return nf_error_set(err, NF_ENOMEM, "out of memory while exporting");
	if (sqlite3_prepare_v2(db, sql, -1, &c->st, NULL) != SQLITE_OK)
		ret = nf_error_set(err, NF_ESQL, "reading deps: %s", sqlite3_errmsg(db));
	sqlite3_free(sql);
	return ret ? ret : cursor_next(err, c);
}

/* Skips keys below k; returns 1 when the cursor is at k. */
int cursor_seek(struct nf_error *err, struct edge_cursor *c, int64_t k, int *ret)
{
	while (!c->done && c->key < k)
		if ((*ret = cursor_next(err, c)) < 0)
			return 0;
	return !c->done && c->key == k;
}

/* Collects the values of every pair with key k (the waits a signal released). */
int cursor_collect(struct flowbuf *fb, struct edge_cursor *c, int64_t k)
{
	int ret = 0;

	fb->n = 0;
	if (!cursor_seek(fb->err, c, k, &ret))
		return ret;
	while (!c->done && c->key == k) {
		if ((ret = flowbuf_add(fb, (uint64_t)c->val + 1)) < 0)  /* flow id: wait_id + 1 */
			return ret;
		if ((ret = cursor_next(fb->err, c)) < 0)
			return ret;
	}
	return 0;
}

/*
 * The waits that end a flow, as a bitmap over fence_ops ids (one bit per
 * operation: 1.25 MB for ten million), filled from an unsorted read of deps
 * (its rows are not in wait order, and sorting them costs more than the
 * rest of the export). bits stays NULL when the ids are too sparse for it.
 */
#define RELEASED_MAX_BITS ((int64_t)1 << 33)

int released_has(const struct released *r, int64_t id)
{
	int64_t k = id - r->lo;

	return k >= 0 && k < r->n && (r->bits[k >> 3] >> (k & 7)) & 1;
}

void released_set(struct released *r, int64_t id)
{
	int64_t k = id - r->lo;

	if (k >= 0 && k < r->n)
		r->bits[k >> 3] |= (uint8_t)(1u << (k & 7));
}

/* Sizes r over fence_ops' ids, read on db (bits NULL: no operations, or too sparse). */
int released_alloc(struct exporter *x, sqlite3 *db, struct released *r)
{
	sqlite3_stmt *st = NULL;
	int ret = 0;

	memset(r, 0, sizeof(*r));
	if (sqlite3_prepare_v2(db, "SELECT min(id), max(id) FROM fence_ops", -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW) {
		ret = nf_error_set(x->err, NF_ESQL, "reading fence_ops: %s", sqlite3_errmsg(db));
		goto out;
	}
	if (col_null(st, 0))
		goto out;  /* no operations: an empty bitmap would do, the cursor too */
	r->lo = sqlite3_column_int64(st, 0);
	if (sqlite3_column_int64(st, 1) - r->lo >= RELEASED_MAX_BITS - 1)
		goto out;
	r->n = sqlite3_column_int64(st, 1) - r->lo + 1;
	if (!(r->bits = calloc((size_t)(r->n + 7) / 8, 1)))
		ret = oom(x);
out:
	sqlite3_finalize(st);
	return ret;
}

/* Sets the bits of sql's first column (wait ids), read on db; sql stays the caller's. */
int released_fill(struct exporter *x, sqlite3 *db, struct released *r, const char *sql)
{
	sqlite3_stmt *st = NULL;
	int rc, ret = 0;

	if (!sql)
		return oom(x);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return nf_error_set(x->err, NF_ESQL, "reading deps: %s", sqlite3_errmsg(db));
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		released_set(r, sqlite3_column_int64(st, 0));
	if (rc != SQLITE_DONE)
		ret = nf_error_set(x->err, NF_ESQL, "reading deps: %s", sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return ret;
}

/*
 * deps by signal without sorting it. The analyzer writes deps as a few runs
 * each in signal order (one per group it matched), so a first read of the
 * rows' signal ids in storage order finds where each run starts, and the
 * export then reads every run by rowid range at once and merges them with a
 * heap of one head per run: no sort, memory per run. With more than
 * RUNS_MAX runs (or a deps table without rowids) sqlite sorts instead.
 */
#define RUNS_MAX 4096

static int edge_lt(const struct edge *a, const struct edge *b)
{
	return a->s < b->s || (a->s == b->s && a->w < b->w);
}

static int run_lt(const struct sig_runs *m, int a, int b)
{
	return edge_lt(&m->r[a].head, &m->r[b].head);
}

static void runs_sift_down(struct sig_runs *m, size_t i)
{
	for (;;) {
		size_t c = 2 * i + 1;
		int t;

		if (c >= m->n_heap)
			return;
		if (c + 1 < m->n_heap && run_lt(m, m->heap[c + 1], m->heap[c]))
			c++;
		if (!run_lt(m, m->heap[c], m->heap[i]))
			return;
		t = m->heap[i];
		m->heap[i] = m->heap[c];
		m->heap[c] = t;
		i = c;
	}
}

void sig_runs_close(struct sig_runs *m)
{
	for (size_t i = 0; m->r && i < m->n; i++)
		sqlite3_finalize(m->r[i].st);
	free(m->r);
	free(m->heap);
	memset(m, 0, sizeof(*m));
}

/* Steps run i to its next row; 1 when it has one, 0 at its end. */
static int run_next(struct nf_error *err, struct sig_runs *m, size_t i)
{
	int rc = sqlite3_step(m->r[i].st);

	if (rc == SQLITE_ROW) {
		m->r[i].head = (struct edge){ sqlite3_column_int64(m->r[i].st, 0),
					      sqlite3_column_int64(m->r[i].st, 1) };
		return 1;
	}
	return rc == SQLITE_DONE ? 0 : nf_error_set(err, NF_ESQL, "reading deps: %s", sqlite3_errmsg(m->db));
}

/*
 * Finds deps' runs (on db) and opens one read per run. In the same read,
 * when rel has bits, it marks the waits that end a flow as the unfiltered
 * export takes them: every wait with a releasing signal, and those released
 * by a CPU signal that cpu_ok (bound to the CPU signal's id) returns a row
 * for. Returns 1 when the merge is ready (and rel filled), 0 when sqlite
 * should sort instead (too many runs, no rowid: rel then is to be filled by
 * the caller), or an error.
 */
/* The read of deps that finds its runs (nf_export_dep, inside sqlite's scan). */
struct runs_scan {
	struct released *rel;
	sqlite3_stmt *cpu_ok;
	int64_t *start;
	size_t n;
	struct edge prev;
	int too_many;   /* more than RUNS_MAX runs: the scan was stopped */
	int cpu_rc;     /* cpu_ok's failure (SQLITE_OK: none) */
};

/* Values: rowid, signal_id, wait_id, cpu_signal of one deps row. */
static void dep_sink(sqlite3_context *ctx, int argc, sqlite3_value **v)
{
	struct runs_scan *rs = sqlite3_user_data(ctx);
	struct edge e;

	(void)argc;
	sqlite3_result_null(ctx);
	if (val_null(v[1])) {
		/* Released from the CPU: a flow when its CPU signal is written. */
		if (rs->rel->bits && !val_null(v[3]) && !val_null(v[2])) {
			int rc;

			sqlite3_reset(rs->cpu_ok);
			sqlite3_bind_int64(rs->cpu_ok, 1, sqlite3_value_int64(v[3]));
			if ((rc = sqlite3_step(rs->cpu_ok)) == SQLITE_ROW) {
				released_set(rs->rel, sqlite3_value_int64(v[2]));
			} else if (rc != SQLITE_DONE) {
				rs->cpu_rc = rc;
				sqlite3_result_error(ctx, "reading cpu_signals", -1);
			}
		}
		return;
	}
	e = (struct edge){ sqlite3_value_int64(v[1]), sqlite3_value_int64(v[2]) };
	if (rs->rel->bits && !val_null(v[2]))
		released_set(rs->rel, e.w);
	if (rs->n == 0 || edge_lt(&e, &rs->prev)) {
		if (rs->n == RUNS_MAX) {
			rs->too_many = 1;
			sqlite3_result_error(ctx, "too many runs", -1);
			return;
		}
		rs->start[rs->n++] = sqlite3_value_int64(v[0]);
	}
	rs->prev = e;
}

int sig_runs_open(struct exporter *x, struct sig_runs *m, sqlite3 *db, struct released *rel,
			 sqlite3_stmt *cpu_ok)
{
	sqlite3_stmt *st = NULL;
	int64_t *start = NULL;
	size_t n = 0;
	struct runs_scan rs;
	int rc, ret = 0;

	memset(m, 0, sizeof(*m));
	memset(&rs, 0, sizeof(rs));
	m->db = db;
	if (!(start = malloc(RUNS_MAX * sizeof(*start))))
		return oom(x);
	rs.rel = rel;
	rs.cpu_ok = cpu_ok;
	rs.start = start;
	rs.cpu_rc = SQLITE_OK;
	if (sqlite3_create_function(db, "nf_export_dep", 4, SQLITE_UTF8 | SQLITE_DIRECTONLY, &rs, dep_sink,
				    NULL, NULL) != SQLITE_OK) {
		ret = nf_error_set(x->err, NF_ESQL, "reading deps: %s", sqlite3_errmsg(db));
		goto out;
	}
	if (sqlite3_prepare_v2(db, "SELECT count(nf_export_dep(rowid, signal_id, wait_id, cpu_signal)) FROM deps",
			       -1, &st, NULL) != SQLITE_OK)
		goto out;  /* ret 0, no rowid: let sqlite sort */
	rc = sqlite3_step(st);
	if (rs.too_many)
		goto out;  /* ret 0: sort instead */
	if (rs.cpu_rc != SQLITE_OK) {
		ret = nf_error_set(x->err, NF_ESQL, "reading cpu_signals: %s", sqlite3_errstr(rs.cpu_rc));
		goto out;
	}
	if (rc != SQLITE_ROW) {
		ret = nf_error_set(x->err, NF_ESQL, "reading deps: %s", sqlite3_errmsg(db));
		goto out;
	}
	n = rs.n;
	m->r = calloc(n ? n : 1, sizeof(*m->r));
	m->heap = calloc(n ? n : 1, sizeof(*m->heap));
	if (!m->r || !m->heap) {
		ret = oom(x);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (sqlite3_prepare_v2(db, "SELECT signal_id, wait_id FROM deps WHERE rowid >= ?1 AND "
					   "rowid < ?2 AND signal_id IS NOT NULL",
				       -1, &m->r[i].st, NULL) != SQLITE_OK) {
			ret = nf_error_set(x->err, NF_ESQL, "reading deps: %s", sqlite3_errmsg(db));
			goto out;
		}
		m->n++;
		sqlite3_bind_int64(m->r[i].st, 1, start[i]);
		sqlite3_bind_int64(m->r[i].st, 2, i + 1 < n ? start[i + 1] : INT64_MAX);
		if ((ret = run_next(x->err, m, i)) < 0)
			goto out;
		if (ret == 1)
			m->heap[m->n_heap++] = (int)i;
	}
	for (size_t i = m->n_heap / 2; i-- > 0;)
		runs_sift_down(m, i);
	ret = 1;
out:
	sqlite3_finalize(st);
	/* The function points at this frame: gone with it. */
	sqlite3_create_function(db, "nf_export_dep", 4, SQLITE_UTF8, NULL, NULL, NULL, NULL);
	free(start);
	if (ret != 1)
		sig_runs_close(m);
	return ret;
}

/* The waits signal k released (fb), from the merge of the runs. */
int sig_runs_collect(struct flowbuf *fb, struct sig_runs *m, int64_t k)
{
	int ret;

	fb->n = 0;
	while (m->n_heap) {
		int i = m->heap[0];
		struct edge e = m->r[i].head;

		if (e.s > k)
			return 0;
		if (e.s == k && (ret = flowbuf_add(fb, (uint64_t)e.w + 1)) < 0)
			return ret;
		/* (e.s < k: a signal that is not written) */
		if ((ret = run_next(fb->err, m, (size_t)i)) < 0)
			return ret;
		if (ret == 0)
			m->heap[0] = m->heap[--m->n_heap];
		runs_sift_down(m, 0);
	}
	return 0;
}
