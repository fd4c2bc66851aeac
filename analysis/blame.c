/*
 * Stall blame: each wait's stall window [observed, end] walked like a critical
 * path, its segments charged to the queue or CPU thread they are on; the
 * releaser's share is direct, everyone further back is the chain. Also writes
 * the result into the session's timeline as the stall_blame table
 * (schemas/analysis.sql) on demand.
 */
#include "analysis_int.h"
#include "contract/errors.h"

#include "contract/session.h"

#include "analysis_sql.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

static int row_cmp(const void *x, const void *y)
{
	const struct nf_blame_row *p = x, *q = y;
	const int64_t kp[6] = { p->queue, p->thread, p->fence, p->by_queue, p->by_thread, p->by_fence };
	const int64_t kq[6] = { q->queue, q->thread, q->fence, q->by_queue, q->by_thread, q->by_fence };

	for (int i = 0; i < 6; i++)
		if (kp[i] != kq[i])
			return kp[i] < kq[i] ? -1 : 1;
	return 0;
}

/* Rows keyed by (queue, thread, fence, by_queue, by_thread) in an open-addressing table. */
struct blame_tab {
	struct nf_blame_row *rows;
	size_t n, cap;
	int32_t *slots;
	size_t nslots;
};

static uint64_t blame_hash(const struct nf_blame_row *r)
{
	const int64_t k[6] = { r->queue, r->thread, r->fence, r->by_queue, r->by_thread, r->by_fence };
	uint64_t h = 0;

	/* core's mixer over each field in turn (the slots only index rows, kept
	 * in insertion order, so the hash never shows in the output) */
	for (int i = 0; i < 6; i++)
		h = nf_mix64(h ^ (uint64_t)k[i]);
	return h;
}

static int blame_add(struct blame_tab *t, const struct nf_blame_row *r)
{
	if ((t->n + 1) * 2 > t->nslots) {
		size_t ns = t->nslots ? t->nslots * 2 : 256;
		int32_t *sl = malloc(ns * sizeof(*sl));

		if (!sl)
			return NF_ENOMEM;
		for (size_t i = 0; i < ns; i++)
			sl[i] = AN_NONE;
		for (size_t i = 0; i < t->n; i++) {
			size_t j = (size_t)blame_hash(&t->rows[i]) & (ns - 1);

			while (sl[j] != AN_NONE)
				j = (j + 1) & (ns - 1);
			sl[j] = (int32_t)i;
		}
		free(t->slots);
		t->slots = sl;
		t->nslots = ns;
	}
	size_t j = (size_t)blame_hash(r) & (t->nslots - 1);
	for (; t->slots[j] != AN_NONE; j = (j + 1) & (t->nslots - 1)) {
		struct nf_blame_row *x = &t->rows[t->slots[j]];

		if (!row_cmp(x, r)) {
			x->direct_ns += r->direct_ns;
			x->chain_ns += r->chain_ns;
			x->waits += r->waits;
			return 0;
		}
	}
	if (an_grow((void **)&t->rows, &t->cap, t->n + 1, sizeof(*t->rows)))
		return NF_ENOMEM;
	t->rows[t->n] = *r;
	t->slots[j] = (int32_t)t->n++;
	return 0;
}

int nf_analysis_stall_blame(const struct nf_analysis *a, struct nf_blame_row **rows_out, size_t *n_out,
			    struct nf_error *err)
{
	struct blame_tab tab = { 0 };
	struct nf_blame_row local[16];
	int rc = 0;

	if (a->lazy || a->open_only)
		return nf_error_set(err, NF_ESTATE, "%s needs a loaded model (nf_analysis_load)", "stall blame");
	*rows_out = NULL;
	*n_out = 0;
	for (size_t i = 0; i < a->n_ops; i++) {
		const struct an_op *o = &a->ops[i];
		struct nf_cp_segment *segs = NULL;
		size_t ns = 0, nl = 0;
		int64_t rq = -1, rt = -1;

		if (o->is_signal || !o->has_dep || !o->has_observed || !o->has_end || o->end <= o->observed)
			continue;
		rc = an_walk_window(a, (int32_t)i, o->observed, &segs, &ns, err);
		if (rc)
			goto out_fail;
		/* the releaser: the queue (or thread) of the releasing signal */
		if (o->rel_op != AN_NONE) {
			const struct an_op *s = &a->ops[o->rel_op];

			if (s->qidx != AN_NONE)
				rq = s->queue;
			else
				rt = s->thread;
		} else if (o->rel_cpu != AN_NONE) {
			rt = a->csigs[o->rel_cpu].thread;
		}
		for (size_t k = 0; k < ns; k++) {
			const struct nf_cp_segment *s = &segs[k];
			int64_t bq = s->on_thread ? -1 : s->queue, bt = s->on_thread ? s->thread : -1;
			int64_t bf = s->via_fence >= 0 ? s->via_fence : o->fence;
			bool own_tail = s->kind == NF_SEG_WAIT && s->op_id == o->id;
			bool direct;
			size_t j;

			if (own_tail && (rq >= 0 || rt >= 0)) {
				bq = rq;
				bt = rt;
			}
			direct = own_tail || (rq >= 0 ? bq == rq : (rt >= 0 && bq < 0 && bt == rt));
			for (j = 0; j < nl; j++)
				if (local[j].by_queue == bq && local[j].by_thread == bt && local[j].by_fence == bf)
					break;
			if (j == nl) {
				if (nl == sizeof(local) / sizeof(local[0])) {
					j = nl - 1; /* more than 16 actors in one window: the last absorbs the rest */
				} else {
					local[nl++] = (struct nf_blame_row){
						o->qidx != AN_NONE ? o->queue : -1,
						o->qidx != AN_NONE ? -1 : o->thread,
						o->fence, bq, bt, bf, 0, 0, 1 };
				}
			}
			if (direct)
				local[j].direct_ns += s->end_ns - s->start_ns;
			else
				local[j].chain_ns += s->end_ns - s->start_ns;
		}
		free(segs);
		for (size_t j = 0; j < nl; j++) {
			if (blame_add(&tab, &local[j])) {
				rc = nf_error_set(err, NF_ENOMEM, "out of memory for stall blame");
				goto out_fail;
			}
		}
	}
	free(tab.slots);
	if (tab.n)
		qsort(tab.rows, tab.n, sizeof(*tab.rows), row_cmp);
	*rows_out = tab.rows;
	*n_out = tab.n;
	return 0;
out_fail:
	free(tab.slots);
	free(tab.rows);
	return rc;
}

/* ---- the stall_blame table ------------------------------------------------- */

/* Version of schemas/analysis.sql and of the blame: kept as meta.analysis_version;
 * a stall_blame of another version is computed again. */
#define AN_BLAME_VERSION 2

static int has_table(sqlite3 *db, bool *yes)
{
	sqlite3_stmt *s = NULL;
	int rc;

	if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master m, meta v WHERE m.type = 'table' AND "
			       "m.name = 'stall_blame' AND v.key = 'analysis_version' AND v.value = ?1",
			       -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int(s, 1, AN_BLAME_VERSION);
	rc = sqlite3_step(s);
	*yes = rc == SQLITE_ROW;
	sqlite3_finalize(s);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

static void bind_opt(sqlite3_stmt *s, int i, int64_t v)
{
	if (v < 0)
		sqlite3_bind_null(s, i);
	else
		sqlite3_bind_int64(s, i, v);
}

static int write_blame(sqlite3 *db, const char *db_path, struct nf_error *err)
{
	struct nf_analysis *a = NULL;
	struct nf_blame_row *rows = NULL;
	sqlite3_stmt *ins = NULL;
	size_t n = 0;
	int rc;

	rc = nf_analysis_load(db_path, &a, err);
	if (!rc)
		rc = nf_analysis_stall_blame(a, &rows, &n, err);
	nf_analysis_destroy(a);
	if (rc)
		return rc;
	char version[96];

	snprintf(version, sizeof(version), "INSERT OR REPLACE INTO meta(key, value) VALUES "
		 "('analysis_version', '%d')", AN_BLAME_VERSION);
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(db, "DROP TABLE IF EXISTS stall_blame", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(db, nf_analysis_sql, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(db, version, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db,
			       "INSERT INTO stall_blame(queue, thread, fence, by_queue, by_thread, by_fence, "
			       "direct_ns, chain_ns, stall_ns, waits) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
			       -1, &ins, NULL) != SQLITE_OK) {
		rc = nf_error_set(err, NF_ESQL, "%s: writing stall_blame: %s", db_path, sqlite3_errmsg(db));
		goto out_rollback;
	}
	for (size_t i = 0; i < n; i++) {
		const struct nf_blame_row *r = &rows[i];

		bind_opt(ins, 1, r->queue);
		bind_opt(ins, 2, r->thread);
		sqlite3_bind_int64(ins, 3, r->fence);
		bind_opt(ins, 4, r->by_queue);
		bind_opt(ins, 5, r->by_thread);
		sqlite3_bind_int64(ins, 6, r->by_fence);
		sqlite3_bind_int64(ins, 7, r->direct_ns);
		sqlite3_bind_int64(ins, 8, r->chain_ns);
		sqlite3_bind_int64(ins, 9, r->direct_ns + r->chain_ns);
		sqlite3_bind_int64(ins, 10, r->waits);
		if (sqlite3_step(ins) != SQLITE_DONE) {
			rc = nf_error_set(err, NF_ESQL, "%s: writing stall_blame: %s", db_path,
					  sqlite3_errmsg(db));
			goto out_rollback;
		}
		sqlite3_reset(ins);
	}
	sqlite3_finalize(ins);
	free(rows);
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		return nf_error_set(err, NF_ESQL, "%s: writing stall_blame: %s", db_path, sqlite3_errmsg(db));
	return 0;
out_rollback:
	sqlite3_finalize(ins);
	free(rows);
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

int nf_analysis_ensure_blame(const char *session_dir, char *db_path, size_t db_path_len,
			     struct nf_error *err)
{
	sqlite3 *db = NULL;
	bool have = false;
	int fd, rc;

	if ((rc = nf_timeline_ensure_locked(session_dir, db_path, db_path_len, &fd, err)))
		return rc;
	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		rc = nf_error_set(err, NF_ESQL, "%s: %s", db_path, db ? sqlite3_errmsg(db) : "cannot open");
		goto out_unlock;
	}
	sqlite3_busy_timeout(db, 10000);
	if (has_table(db, &have)) {
		rc = nf_error_set(err, NF_ESQL, "%s: %s", db_path, sqlite3_errmsg(db));
		goto out_unlock;
	}
	if (!have)
		rc = write_blame(db, db_path, err);
out_unlock:
	sqlite3_close(db);
	nf_timeline_unlock(fd);
	return rc;
}
