/*
 * Loads a timeline database (schemas/timeline.sql) into the in-memory model the
 * analysis walks: operations per queue in queued order, each fence's signals in
 * the order they ran, each thread's CPU waits in end order, and which signal
 * released each wait. Reads only the generic tables, so every kind of session
 * (scenario, program, kernel import) loads the same way.
 */
#define _GNU_SOURCE /* qsort_r */
#include "analysis_int.h"
#include "contract/errors.h"

#include <sqlite3.h>
#include <stdio.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "contract/capbuf.h"

int an_grow(void **arr, size_t *cap, size_t need, size_t sz)
{
	return nf_array_reserve(arr, cap, need, sz, 8, 0);
}

/* ---- int64 -> int32 map ---------------------------------------------------- */

static int32_t map_get(const struct nf_u64map *m, int64_t k)
{
	const uint64_t *v = nf_u64map_find(m, (uint64_t)k);

	return v ? (int32_t)*v : AN_NONE;
}

static int map_put(struct nf_u64map *m, int64_t k, int32_t v)
{
	return nf_u64map_put(m, (uint64_t)k, (uint64_t)(uint32_t)v);
}

static void map_free(struct nf_u64map *m)
{
	nf_u64map_free(m);
}

/* ---- lookups ----------------------------------------------------------------- */

int32_t an_op_index(const struct nf_analysis *a, int64_t id)
{
	size_t lo = 0, hi = a->n_ops;

	/* ids are dense from the first one in every timeline the analyzer writes */
	if (a->n_ops && id >= a->ops[0].id && (uint64_t)(id - a->ops[0].id) < a->n_ops &&
	    a->ops[id - a->ops[0].id].id == id)
		return (int32_t)(id - a->ops[0].id);

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a->ops[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < a->n_ops && a->ops[lo].id == id ? (int32_t)lo : AN_NONE;
}

static int32_t csig_index(const struct nf_analysis *a, int64_t id)
{
	size_t lo = 0, hi = a->n_csigs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a->csigs[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < a->n_csigs && a->csigs[lo].id == id ? (int32_t)lo : AN_NONE;
}

int32_t an_fence_index(const struct nf_analysis *a, int64_t fence)
{
	return map_get(&a->fmap, fence);
}

int32_t an_thread_index(const struct nf_analysis *a, int64_t thread)
{
	return map_get(&a->tmap, thread);
}

bool an_release_time(const struct nf_analysis *a, int32_t rel_op, int32_t rel_cpu, int64_t *t)
{
	if (rel_op != AN_NONE && a->ops[rel_op].has_end) {
		*t = a->ops[rel_op].end;
		return true;
	}
	if (rel_cpu != AN_NONE && a->csigs[rel_cpu].has_ts) {
		*t = a->csigs[rel_cpu].ts;
		return true;
	}
	return false;
}

int nf_analysis_op(const struct nf_analysis *a, int64_t id, struct nf_op_info *info)
{
	int32_t i = an_get_op(a, id);

	if (i == AN_NONE)
		return NF_ENOENT;
	info->is_signal = a->ops[i].is_signal;
	info->on_queue = a->ops[i].qidx != AN_NONE;
	info->queue = a->ops[i].queue;
	info->fence = a->ops[i].fence;
	info->value = a->ops[i].value;
	info->thread = a->ops[i].thread;
	return 0;
}

int nf_analysis_foreach_op(const struct nf_analysis *a, int (*fn)(void *ctx, const struct nf_op_row *row),
			   void *ctx)
{
	if (a->lazy || a->open_only)
		return NF_ESTATE;
	for (size_t i = 0; i < a->n_ops; i++) {
		const struct an_op *o = &a->ops[i];
		struct nf_op_row r = { o->id, o->queue, o->fence, o->value, o->has_queued ? o->queued : -1,
				       o->has_observed ? o->observed : -1, o->has_end ? o->end : -1,
				       o->has_thread ? o->thread : -1, o->is_signal, o->qidx != AN_NONE };
		int rc = fn(ctx, &r);

		if (rc)
			return rc;
	}
	return 0;
}

size_t nf_analysis_op_count(const struct nf_analysis *a)
{
	return a->n_ops;
}

const char *nf_analysis_queue_name(const struct nf_analysis *a, int64_t queue)
{
	int32_t q = map_get(&a->qmap, queue);

	return q == AN_NONE ? NULL : a->queues[q].name;
}

int nf_analysis_find_queue(const struct nf_analysis *a, const char *text, int64_t *queue,
			   struct nf_error *err)
{
	char *end;
	long long v = strtoll(text, &end, 0);

	if (*text && !*end && map_get(&a->qmap, v) != AN_NONE) {
		*queue = v;
		return 0;
	}
	size_t found = 0;
	int64_t first = -1, second = -1;

	for (size_t i = 0; i < a->n_queues; i++) {
		if (a->queues[i].name && !strcmp(a->queues[i].name, text)) {
			if (found++ == 0)
				first = a->queues[i].queue;
			else if (found == 2)
				second = a->queues[i].queue;
		}
	}
	if (found == 1) {
		*queue = first;
		return 0;
	}
	if (found > 1)
		return nf_error_set(err, NF_EINVAL,
				    "%zu hardware queues are named '%s' (0x%" PRIx64 ", 0x%" PRIx64
				    "%s): name one by its handle", found, text, (uint64_t)first, (uint64_t)second,
				    found > 2 ? ", ..." : "");
	return nf_error_set(err, NF_ENOENT, "no hardware queue '%s' in the timeline", text);
}

/* ---- loading ----------------------------------------------------------------- */

static int32_t queue_add(struct nf_analysis *a, int64_t queue, const char *name, int *rc)
{
	int32_t q = map_get(&a->qmap, queue);

	if (q != AN_NONE)
		return q;
	if (an_grow((void **)&a->queues, &a->cap_queues, a->n_queues + 1, sizeof(*a->queues)) ||
	    map_put(&a->qmap, queue, (int32_t)a->n_queues)) {
		*rc = NF_ENOMEM;
		return AN_NONE;
	}
	struct an_queue *nq = &a->queues[a->n_queues];
	memset(nq, 0, sizeof(*nq));
	nq->queue = queue;
	nq->last_done = AN_NONE;
	if (name && !(nq->name = strdup(name))) {
		*rc = NF_ENOMEM;
		return AN_NONE;
	}
	return (int32_t)a->n_queues++;
}

static int32_t fence_add(struct nf_analysis *a, int64_t fence, int *rc)
{
	int32_t f = map_get(&a->fmap, fence);

	if (f != AN_NONE)
		return f;
	if (an_grow((void **)&a->fences, &a->cap_fences, a->n_fences + 1, sizeof(*a->fences)) ||
	    map_put(&a->fmap, fence, (int32_t)a->n_fences)) {
		*rc = NF_ENOMEM;
		return AN_NONE;
	}
	memset(&a->fences[a->n_fences], 0, sizeof(a->fences[0]));
	a->fences[a->n_fences].fence = fence;
	a->fences[a->n_fences].done_max_op = -1;
	a->fences[a->n_fences].src_queue = -1;
	return (int32_t)a->n_fences++;
}

static int32_t thread_add(struct nf_analysis *a, int64_t thread, int *rc)
{
	int32_t t = map_get(&a->tmap, thread);

	if (t != AN_NONE)
		return t;
	if (an_grow((void **)&a->threads, &a->cap_threads, a->n_threads + 1, sizeof(*a->threads)) ||
	    map_put(&a->tmap, thread, (int32_t)a->n_threads)) {
		*rc = NF_ENOMEM;
		return AN_NONE;
	}
	memset(&a->threads[a->n_threads], 0, sizeof(a->threads[0]));
	a->threads[a->n_threads].thread = thread;
	return (int32_t)a->n_threads++;
}

static int sql_fail(sqlite3 *db, const char *what, struct nf_error *err)
{
	const char *m = sqlite3_errmsg(db);

	if (strstr(m, "no such table") || strstr(m, "no such column"))
		return nf_error_set(err, NF_EFORMAT, "not a timeline database (%s: %s)", what, m);
	return nf_error_set(err, NF_ESQL, "%s: %s", what, m);
}

static int count_rows(sqlite3 *db, const char *table, size_t *n, struct nf_error *err)
{
	char sql[128];
	sqlite3_stmt *s = NULL;

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", table);
	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
		return sql_fail(db, table, err);
	*n = sqlite3_step(s) == SQLITE_ROW ? (size_t)sqlite3_column_int64(s, 0) : 0;
	sqlite3_finalize(s);
	return 0;
}

#define COL_NULL(s, i) (sqlite3_column_type((s), (i)) == SQLITE_NULL)

static int load_queues_fences(sqlite3 *db, struct nf_analysis *a, struct nf_error *err)
{
	sqlite3_stmt *s = NULL;
	int rc = 0, src;

	if (sqlite3_prepare_v2(db, "SELECT queue, name FROM queues WHERE queue IS NOT NULL ORDER BY queue",
			       -1, &s, NULL) != SQLITE_OK)
		return sql_fail(db, "queues", err);
	while (!rc && (src = sqlite3_step(s)) == SQLITE_ROW)
		queue_add(a, sqlite3_column_int64(s, 0), (const char *)sqlite3_column_text(s, 1), &rc);
	sqlite3_finalize(s);
	if (rc)
		return nf_error_set(err, rc, "out of memory loading queues");
	if (sqlite3_prepare_v2(db,
			       "SELECT fence, initial_value, fence IN (SELECT queue FROM kernel_timelines) "
			       "FROM fences WHERE fence IS NOT NULL", -1, &s, NULL) != SQLITE_OK)
		return sql_fail(db, "fences", err);
	while (!rc && (src = sqlite3_step(s)) == SQLITE_ROW) {
		int32_t f = fence_add(a, sqlite3_column_int64(s, 0), &rc);

		if (f == AN_NONE)
			break;
		a->fences[f].known = true;
		a->fences[f].has_initial = !COL_NULL(s, 1);
		a->fences[f].initial = sqlite3_column_int64(s, 1);
		a->fences[f].kernel = sqlite3_column_int(s, 2) != 0;
	}
	sqlite3_finalize(s);
	if (rc)
		return nf_error_set(err, rc, "out of memory loading fences");
	return 0;
}

/* The columns of OP_COLUMNS, in order, into *o (indexes left to the caller). */
#define OP_COLUMNS "id, queue, op, fence, value, queued_ns, observed_ns, end_ns, status, thread"

void an_op_from_row(struct an_op *o, sqlite3_stmt *s)
{
	const char *op = (const char *)sqlite3_column_text(s, 2);
	const char *st;

	memset(o, 0, sizeof(*o));
	o->id = sqlite3_column_int64(s, 0);
	o->is_signal = op && !strcmp(op, "signal");
	o->fence = sqlite3_column_int64(s, 3);
	o->has_value = !COL_NULL(s, 4);
	o->value = sqlite3_column_int64(s, 4);
	o->has_queued = !COL_NULL(s, 5);
	o->queued = sqlite3_column_int64(s, 5);
	o->has_observed = !COL_NULL(s, 6);
	o->observed = sqlite3_column_int64(s, 6);
	o->has_end = !COL_NULL(s, 7);
	o->end = sqlite3_column_int64(s, 7);
	st = (const char *)sqlite3_column_text(s, 8);
	o->done = o->has_end || (st && strcmp(st, "unmatched") && strcmp(st, "unsignaled") && strcmp(st, "pending"));
	o->has_thread = !COL_NULL(s, 9);
	o->thread = o->has_thread ? sqlite3_column_int64(s, 9) : -1;
	o->prev = o->rel_op = o->rel_cpu = AN_NONE;
	o->qidx = o->fidx = AN_NONE;
	o->queue = -1;
}

static int load_ops(sqlite3 *db, struct nf_analysis *a, struct nf_error *err)
{
	sqlite3_stmt *s = NULL;
	size_t n = 0;
	int rc, src;

	if ((rc = count_rows(db, "fence_ops", &n, err)))
		return rc;
	a->ops = calloc(n ? n : 1, sizeof(*a->ops));
	if (!a->ops)
		return nf_error_set(err, NF_ENOMEM, "out of memory for %zu operations", n);
	if (sqlite3_prepare_v2(db,
			       "SELECT " OP_COLUMNS " FROM fence_ops ORDER BY id", -1, &s, NULL) != SQLITE_OK)
		return sql_fail(db, "fence_ops", err);
	while ((src = sqlite3_step(s)) == SQLITE_ROW && a->n_ops < n) {
		struct an_op *o = &a->ops[a->n_ops];

		an_op_from_row(o, s);
		if (!COL_NULL(s, 1)) {
			o->queue = sqlite3_column_int64(s, 1);
			o->qidx = queue_add(a, o->queue, NULL, &rc);
		}
		if (!COL_NULL(s, 3))
			o->fidx = fence_add(a, o->fence, &rc);
		if (rc)
			break;
		a->n_ops++;
	}
	sqlite3_finalize(s);
	if (rc)
		return nf_error_set(err, rc, "out of memory loading operations");
	if (src != SQLITE_DONE && src != SQLITE_ROW)
		return sql_fail(db, "fence_ops", err);
	/* Per queue, in id (queued) order: the previous operation with an end. */
	for (size_t i = 0; i < a->n_ops; i++) {
		struct an_op *o = &a->ops[i];
		struct an_queue *q;

		if (o->qidx == AN_NONE)
			continue;
		q = &a->queues[o->qidx];
		if (an_grow((void **)&q->ops, &q->cap, q->n + 1, sizeof(*q->ops)))
			return nf_error_set(err, NF_ENOMEM, "out of memory for queue operations");
		o->qpos = (int32_t)q->n;
		q->ops[q->n++] = (int32_t)i;
	}
	for (size_t qi = 0; qi < a->n_queues; qi++) {
		struct an_queue *q = &a->queues[qi];
		int32_t prev = AN_NONE;

		for (size_t k = 0; k < q->n; k++) {
			struct an_op *o = &a->ops[q->ops[k]];

			o->prev = prev;
			o->prev_known = true;
			if (o->has_end)
				prev = q->ops[k];
			if (o->done)
				q->last_done = (int32_t)k;
		}
	}
	return 0;
}

static int load_cpu(sqlite3 *db, struct nf_analysis *a, struct nf_error *err)
{
	sqlite3_stmt *s = NULL;
	size_t n = 0;
	int rc = 0;

	if ((rc = count_rows(db, "cpu_signals", &n, err)))
		return rc;
	a->csigs = calloc(n ? n : 1, sizeof(*a->csigs));
	if (!a->csigs)
		return nf_error_set(err, NF_ENOMEM, "out of memory for CPU signals");
	if (sqlite3_prepare_v2(db, "SELECT id, thread, fence, value, ts_ns FROM cpu_signals ORDER BY id",
			       -1, &s, NULL) != SQLITE_OK)
		return sql_fail(db, "cpu_signals", err);
	while (!rc && a->n_csigs < n && sqlite3_step(s) == SQLITE_ROW) {
		struct an_csig *c = &a->csigs[a->n_csigs];

		c->id = sqlite3_column_int64(s, 0);
		c->has_thread = !COL_NULL(s, 1);
		c->thread = c->has_thread ? sqlite3_column_int64(s, 1) : -1;
		c->fence = sqlite3_column_int64(s, 2);
		c->value = sqlite3_column_int64(s, 3);
		c->has_ts = !COL_NULL(s, 4);
		c->ts = sqlite3_column_int64(s, 4);
		c->fidx = COL_NULL(s, 2) ? AN_NONE : fence_add(a, c->fence, &rc);
		a->n_csigs++;
	}
	sqlite3_finalize(s);
	if (rc)
		return nf_error_set(err, rc, "out of memory loading CPU signals");

	if ((rc = count_rows(db, "cpu_waits", &n, err)))
		return rc;
	a->cwaits = calloc(n ? n : 1, sizeof(*a->cwaits));
	if (!a->cwaits)
		return nf_error_set(err, NF_ENOMEM, "out of memory for CPU waits");
	if (sqlite3_prepare_v2(db,
			       "SELECT id, thread, fence, value, start_ns, end_ns, status, adapter IS NULL FROM cpu_waits "
			       "ORDER BY id", -1, &s, NULL) != SQLITE_OK)
		return sql_fail(db, "cpu_waits", err);
	while (!rc && a->n_cwaits < n && sqlite3_step(s) == SQLITE_ROW) {
		struct an_cwait *w = &a->cwaits[a->n_cwaits];
		const char *st = (const char *)sqlite3_column_text(s, 6);

		w->id = sqlite3_column_int64(s, 0);
		w->has_thread = !COL_NULL(s, 1);
		w->thread = w->has_thread ? sqlite3_column_int64(s, 1) : -1;
		w->fence = sqlite3_column_int64(s, 2);
		w->value = sqlite3_column_int64(s, 3);
		w->has_start = !COL_NULL(s, 4);
		w->start = sqlite3_column_int64(s, 4);
		w->has_end = !COL_NULL(s, 5);
		w->end = sqlite3_column_int64(s, 5);
		w->satisfied = w->has_end && (!st || !strcmp(st, "satisfied"));
		w->as_op = sqlite3_column_int(s, 7) != 0;
		w->fidx = COL_NULL(s, 2) ? AN_NONE : fence_add(a, w->fence, &rc);
		w->rel_op = w->rel_cpu = AN_NONE;
		a->n_cwaits++;
	}
	sqlite3_finalize(s);
	if (rc)
		return nf_error_set(err, rc, "out of memory loading CPU waits");

	return 0;
}

static int load_deps(sqlite3 *db, struct nf_analysis *a, struct nf_error *err)
{
	sqlite3_stmt *s = NULL;
	int src;

	if (sqlite3_prepare_v2(db, "SELECT signal_id, wait_id, cpu_signal FROM deps", -1, &s, NULL) !=
	    SQLITE_OK)
		return sql_fail(db, "deps", err);
	while ((src = sqlite3_step(s)) == SQLITE_ROW) {
		int32_t w = an_op_index(a, sqlite3_column_int64(s, 1));

		if (COL_NULL(s, 1) || w == AN_NONE)
			continue;
		a->ops[w].has_dep = true;
		if (!COL_NULL(s, 0))
			a->ops[w].rel_op = an_op_index(a, sqlite3_column_int64(s, 0));
		if (!COL_NULL(s, 2))
			a->ops[w].rel_cpu = csig_index(a, sqlite3_column_int64(s, 2));
	}
	sqlite3_finalize(s);
	if (src != SQLITE_DONE)
		return sql_fail(db, "deps", err);
	return 0;
}

static int sig_cmp(const void *x, const void *y)
{
	const struct an_sig *a = x, *b = y;

	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	/* GPU signals before CPU signals at one time, then by id order */
	if (a->cpu != b->cpu)
		return a->cpu ? 1 : -1;
	return a->id < b->id ? -1 : a->id > b->id;
}

int an_add_sig(struct an_fence *f, int64_t t, int64_t value, int32_t op, int32_t csig, int64_t id, bool cpu)
{
	if (an_grow((void **)&f->sigs, &f->cap, f->n + 1, sizeof(*f->sigs)))
		return NF_ENOMEM;
	f->sigs[f->n++] = (struct an_sig){ t, value, id, op, csig, cpu };
	return 0;
}

void an_sort_sigs(struct nf_analysis *a)
{
	for (size_t fi = 0; fi < a->n_fences; fi++)
		if (a->fences[fi].n > 1)
			qsort(a->fences[fi].sigs, a->fences[fi].n, sizeof(a->fences[fi].sigs[0]), sig_cmp);
}

int32_t an_queue_add(struct nf_analysis *a, int64_t queue, int *rc)
{
	return queue_add(a, queue, NULL, rc);
}

int32_t an_fence_add(struct nf_analysis *a, int64_t fence, int *rc)
{
	return fence_add(a, fence, rc);
}

int an_load_small(sqlite3 *db, struct nf_analysis *a, struct nf_error *err)
{
	int rc = load_queues_fences(db, a, err);

	return rc ? rc : load_cpu(db, a, err);
}

static int cwait_cmp_end(const void *x, const void *y, void *ctx)
{
	const struct nf_analysis *a = ctx;
	const struct an_cwait *p = &a->cwaits[*(const int32_t *)x], *q = &a->cwaits[*(const int32_t *)y];

	if (p->end != q->end)
		return p->end < q->end ? -1 : 1;
	return p->id < q->id ? -1 : p->id > q->id;
}

/* The first signal of the fence (in time order) reaching value by time end. */
static void first_reaching(const struct an_fence *f, int64_t value, int64_t end, int32_t *op,
			   int32_t *csig)
{
	size_t lo = 0, hi = f->n;

	*op = *csig = AN_NONE;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->prefix_max[mid] < value)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < f->n && f->sigs[lo].t <= end) {
		*op = f->sigs[lo].op;
		*csig = f->sigs[lo].csig;
	}
}

struct act_key {
	int64_t thread, t;
};

static int act_cmp(const void *x, const void *y)
{
	const struct act_key *p = x, *q = y;

	if (p->thread != q->thread)
		return p->thread < q->thread ? -1 : 1;
	return p->t < q->t ? -1 : p->t > q->t;
}

/* Whether the thread did something strictly between start and end. */
static bool acted_between(const void *acts_v, size_t n, int64_t thread, int64_t start, int64_t end)
{
	const struct act_key *acts = acts_v;
	size_t lo = 0, hi = n;

	while (lo < hi) { /* first action of the thread after start */
		size_t mid = lo + (hi - lo) / 2;

		if (acts[mid].thread < thread || (acts[mid].thread == thread && acts[mid].t <= start))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && acts[lo].thread == thread && acts[lo].t < end;
}

static int index_threads(struct nf_analysis *a, struct nf_error *err);

static int index_signals(struct nf_analysis *a, struct nf_error *err)
{
	for (size_t i = 0; i < a->n_ops; i++) {
		struct an_op *o = &a->ops[i];
		struct an_fence *f;

		if (!o->is_signal || o->fidx == AN_NONE || !o->done || !o->has_value)
			continue;
		f = &a->fences[o->fidx];
		if (!f->any_done || o->value > f->done_max) {
			f->done_max = o->value;
			f->done_max_op = o->id;
		}
		f->any_done = true;
		if (o->has_end && an_add_sig(f, o->end, o->value, (int32_t)i, AN_NONE, o->id, false))
			return nf_error_set(err, NF_ENOMEM, "out of memory indexing signals");
	}
	for (size_t i = 0; i < a->n_csigs; i++) {
		struct an_csig *c = &a->csigs[i];
		struct an_fence *f;

		if (c->fidx == AN_NONE)
			continue;
		f = &a->fences[c->fidx];
		if (!f->any_done || c->value > f->done_max) {
			f->done_max = c->value;
			f->done_max_op = -1;
		}
		f->any_done = true;
		if (c->has_ts && an_add_sig(f, c->ts, c->value, AN_NONE, (int32_t)i, c->id, true))
			return nf_error_set(err, NF_ENOMEM, "out of memory indexing signals");
	}
	for (size_t fi = 0; fi < a->n_fences; fi++) {
		struct an_fence *f = &a->fences[fi];

		if (!f->n)
			continue;
		qsort(f->sigs, f->n, sizeof(*f->sigs), sig_cmp);
		f->prefix_max = malloc(f->n * sizeof(*f->prefix_max));
		if (!f->prefix_max)
			return nf_error_set(err, NF_ENOMEM, "out of memory indexing signals");
		for (size_t k = 0; k < f->n; k++)
			f->prefix_max[k] = k && f->prefix_max[k - 1] > f->sigs[k].value ? f->prefix_max[k - 1]
											 : f->sigs[k].value;
	}
	/* What each thread did at a known time (queued an operation, signaled from the
	 * CPU): a CPU wait during which its thread did something did not block it
	 * (an asynchronous wait), so it never stands on a critical path. */
	struct act_key *acts = NULL;
	size_t nacts = 0, capacts = 0;
	struct nf_u64map waiting = { 0 }; /* threads with a satisfied CPU wait: only theirs count */

	for (size_t i = 0; i < a->n_cwaits; i++)
		if (a->cwaits[i].satisfied && a->cwaits[i].has_thread &&
		    map_put(&waiting, a->cwaits[i].thread, 0)) {
			map_free(&waiting);
			return nf_error_set(err, NF_ENOMEM, "out of memory indexing threads");
		}
	for (size_t i = 0; waiting.n && i < a->n_ops + a->n_csigs; i++) {
		int64_t th, t;

		if (i < a->n_ops) {
			if (!a->ops[i].has_thread || !a->ops[i].has_queued || a->ops[i].qidx == AN_NONE)
				continue;
			th = a->ops[i].thread;
			t = a->ops[i].queued;
		} else {
			const struct an_csig *c = &a->csigs[i - a->n_ops];

			if (!c->has_thread || !c->has_ts)
				continue;
			th = c->thread;
			t = c->ts;
		}
		if (map_get(&waiting, th) == AN_NONE)
			continue;
		if (an_grow((void **)&acts, &capacts, nacts + 1, sizeof(*acts))) {
			free(acts);
			map_free(&waiting);
			return nf_error_set(err, NF_ENOMEM, "out of memory indexing threads");
		}
		acts[nacts++] = (struct act_key){ th, t };
	}
	map_free(&waiting);
	/* operations come in queued order: often sorted already */
	for (size_t i = 1; i < nacts; i++) {
		if (act_cmp(&acts[i - 1], &acts[i]) > 0) {
			qsort(acts, nacts, sizeof(*acts), act_cmp);
			break;
		}
	}
	/* CPU waits: their releasing signal, whether they blocked their thread */
	for (size_t i = 0; i < a->n_cwaits; i++) {
		struct an_cwait *w = &a->cwaits[i];

		if (!w->satisfied || !w->has_thread)
			continue;
		if (w->fidx != AN_NONE)
			first_reaching(&a->fences[w->fidx], w->value, w->end, &w->rel_op, &w->rel_cpu);
		w->blocking = !(w->has_start && acted_between(acts, nacts, w->thread, w->start, w->end)) &&
			      !(w->rel_cpu != AN_NONE && a->csigs[w->rel_cpu].has_thread &&
				a->csigs[w->rel_cpu].thread == w->thread);
		w->info_known = true;
	}
	free(acts);
	for (size_t i = 0; i < a->n_ops; i++)
		a->ops[i].prev_known = a->ops[i].rel_known = true;
	return index_threads(a, err);
}

/* Each thread's satisfied CPU waits, in end order. */
static int index_threads(struct nf_analysis *a, struct nf_error *err)
{
	for (size_t i = 0; i < a->n_cwaits; i++) {
		struct an_cwait *w = &a->cwaits[i];
		struct an_thread *t;
		int rc = 0;
		int32_t ti;

		if (!w->satisfied || !w->has_thread)
			continue;
		ti = thread_add(a, w->thread, &rc);
		if (rc)
			return nf_error_set(err, rc, "out of memory indexing CPU waits");
		t = &a->threads[ti];
		if (an_grow((void **)&t->waits, &t->cap, t->n + 1, sizeof(*t->waits)))
			return nf_error_set(err, NF_ENOMEM, "out of memory indexing CPU waits");
		t->waits[t->n++] = (int32_t)i;
	}
	for (size_t ti = 0; ti < a->n_threads; ti++)
		qsort_r(a->threads[ti].waits, a->threads[ti].n, sizeof(int32_t), cwait_cmp_end, a);
	return 0;
}

int nf_analysis_load(const char *db_path, struct nf_analysis **out, struct nf_error *err)
{
	struct nf_analysis *a;
	sqlite3 *db = NULL;
	struct stat st;
	int rc;

	*out = NULL;
	if (stat(db_path, &st) != 0)
		return nf_error_set(err, NF_ENOENT, "%s: no timeline database", db_path);
	/* one thread uses this connection: no mutexes on every column read */
	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		rc = nf_error_set(err, NF_ESQL, "%s: %s", db_path, db ? sqlite3_errmsg(db) : "cannot open");
		sqlite3_close(db);
		return rc;
	}
	a = calloc(1, sizeof(*a));
	if (!a) {
		sqlite3_close(db);
		return nf_error_set(err, NF_ENOMEM, "out of memory");
	}
	rc = sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK ? sql_fail(db, db_path, err) : 0;
	if (!rc)
		rc = load_queues_fences(db, a, err);
	if (!rc)
		rc = load_ops(db, a, err);
	if (!rc)
		rc = load_cpu(db, a, err);
	if (!rc)
		rc = load_deps(db, a, err);
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	sqlite3_close(db);
	if (!rc)
		rc = index_signals(a, err);
	if (rc) {
		nf_error_prefix(err, "%s", db_path);
		nf_analysis_destroy(a);
		return rc;
	}
	*out = a;
	return 0;
}

void nf_analysis_destroy(struct nf_analysis *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n_queues; i++) {
		free(a->queues[i].name);
		free(a->queues[i].ops);
	}
	for (size_t i = 0; i < a->n_fences; i++) {
		free(a->fences[i].sigs);
		free(a->fences[i].prefix_max);
	}
	for (size_t i = 0; i < a->n_threads; i++)
		free(a->threads[i].waits);
	sqlite3_finalize(a->st_op);
	sqlite3_finalize(a->st_prev);
	sqlite3_finalize(a->st_dep);
	sqlite3_finalize(a->st_dep_scan);
	sqlite3_finalize(a->st_first_sig);
	sqlite3_finalize(a->st_acted);
	sqlite3_close(a->db);
	map_free(&a->opmap);
	free(a->low);
	free(a->ops);
	free(a->queues);
	free(a->fences);
	free(a->csigs);
	free(a->cwaits);
	free(a->threads);
	map_free(&a->qmap);
	map_free(&a->fmap);
	map_free(&a->tmap);
	free(a);
}

/* ---- the lazy model: operations loaded on demand ------------------------------ */

static bool lazy_fail(struct nf_analysis *a, int code, const char *what)
{
	if (!a->lazy_rc) {
		a->lazy_rc = code;
		snprintf(a->lazy_msg, sizeof(a->lazy_msg), "%s: %s", what,
			 code == NF_ENOMEM ? "out of memory" : sqlite3_errmsg(a->db));
	}
	return false;
}

bool an_lazy_failed(const struct nf_analysis *a, struct nf_error *err)
{
	if (!a->lazy_rc)
		return false;
	nf_error_set(err, a->lazy_rc, "%s", a->lazy_msg);
	return true;
}

int32_t an_get_op(const struct nf_analysis *ca, int64_t id)
{
	struct nf_analysis *a = (struct nf_analysis *)ca; /* lazy caches fill */
	int32_t i;
	int src, rc = 0;

	if (!a->lazy)
		return an_op_index(a, id);
	i = map_get(&a->opmap, id);
	if (i != AN_NONE || a->lazy_rc)
		return i;
	sqlite3_reset(a->st_op);
	sqlite3_bind_int64(a->st_op, 1, id);
	src = sqlite3_step(a->st_op);
	if (src == SQLITE_DONE)
		return AN_NONE;
	if (src != SQLITE_ROW) {
		lazy_fail(a, NF_ESQL, "reading fence_ops");
		return AN_NONE;
	}
	if (an_grow((void **)&a->ops, &a->cap_ops, a->n_ops + 1, sizeof(*a->ops))) {
		lazy_fail(a, NF_ENOMEM, "loading an operation");
		return AN_NONE;
	}
	struct an_op *o = &a->ops[a->n_ops];
	an_op_from_row(o, a->st_op);
	if (!COL_NULL(a->st_op, 1)) {
		o->queue = sqlite3_column_int64(a->st_op, 1);
		o->qidx = queue_add(a, o->queue, NULL, &rc);
	}
	if (!COL_NULL(a->st_op, 3))
		o->fidx = fence_add(a, o->fence, &rc);
	sqlite3_reset(a->st_op);
	if (rc || map_put(&a->opmap, id, (int32_t)a->n_ops)) {
		lazy_fail(a, NF_ENOMEM, "loading an operation");
		return AN_NONE;
	}
	return (int32_t)a->n_ops++;
}

int32_t an_op_prev(const struct nf_analysis *ca, int32_t o)
{
	struct nf_analysis *a = (struct nf_analysis *)ca;
	int32_t prev = AN_NONE;

	if (a->ops[o].prev_known || a->lazy_rc)
		return a->ops[o].prev;
	if (a->ops[o].qidx != AN_NONE) {
		/* the queue's previous operation with an end: a backward rowid scan */
		sqlite3_reset(a->st_prev);
		sqlite3_bind_int64(a->st_prev, 1, a->ops[o].id);
		sqlite3_bind_int64(a->st_prev, 2, a->ops[o].queue);
		int src = sqlite3_step(a->st_prev);

		if (src == SQLITE_ROW) {
			int64_t id = sqlite3_column_int64(a->st_prev, 0);

			sqlite3_reset(a->st_prev);
			prev = an_get_op(a, id);
		} else if (src != SQLITE_DONE) {
			lazy_fail(a, NF_ESQL, "reading fence_ops");
		}
		sqlite3_reset(a->st_prev);
	}
	if (a->lazy_rc)
		return AN_NONE;
	a->ops[o].prev = prev;
	a->ops[o].prev_known = true;
	return prev;
}

/* The deps row under st_dep (bound to a rowid): its key and columns. */
struct dep_row {
	uint64_t fence, value;
	int64_t wait;
	bool sig_null, cpu_null;
	int64_t sig, cpu;
};

static int dep_at(struct nf_analysis *a, int64_t rowid, struct dep_row *r)
{
	int src;

	sqlite3_reset(a->st_dep);
	sqlite3_bind_int64(a->st_dep, 1, rowid);
	src = sqlite3_step(a->st_dep);
	if (src == SQLITE_ROW) {
		r->wait = sqlite3_column_int64(a->st_dep, 0);
		r->sig_null = COL_NULL(a->st_dep, 1);
		r->sig = sqlite3_column_int64(a->st_dep, 1);
		r->cpu_null = COL_NULL(a->st_dep, 2);
		r->cpu = sqlite3_column_int64(a->st_dep, 2);
		r->fence = (uint64_t)sqlite3_column_int64(a->st_dep, 3);
		r->value = (uint64_t)sqlite3_column_int64(a->st_dep, 4);
	}
	sqlite3_reset(a->st_dep);
	return src == SQLITE_ROW ? 1 : src == SQLITE_DONE ? 0 : -1;
}

/*
 * The deps row of wait `id` on fence/value. The analyzer writes deps in
 * (fence, value) order of the waits, so a binary search over deps' rowids
 * (each probe joined to its wait for the key) finds it in a few lookups; when
 * that order does not hold (or rowids have gaps) a scan by wait_id answers.
 */
static bool lazy_dep(struct nf_analysis *a, int64_t id, uint64_t fence, uint64_t value, struct dep_row *out)
{
	int64_t lo = 1, hi = a->deps_rows + 1; /* first row with key >= (fence, value) */
	struct dep_row r;
	int got = 1;

	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;

		if ((got = dep_at(a, mid, &r)) <= 0)
			goto scan;
		if (r.fence < fence || (r.fence == fence && r.value < value))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (int64_t k = lo; k <= a->deps_rows; k++) {
		if ((got = dep_at(a, k, &r)) <= 0)
			goto scan;
		if (r.fence != fence || r.value != value)
			break;
		if (r.wait == id) {
			*out = r;
			return true;
		}
	}
scan:
	if (got < 0)
		return lazy_fail(a, NF_ESQL, "reading deps");
	sqlite3_reset(a->st_dep_scan);
	sqlite3_bind_int64(a->st_dep_scan, 1, id);
	int src = sqlite3_step(a->st_dep_scan);

	if (src == SQLITE_ROW) {
		out->wait = id;
		out->sig_null = COL_NULL(a->st_dep_scan, 1);
		out->sig = sqlite3_column_int64(a->st_dep_scan, 1);
		out->cpu_null = COL_NULL(a->st_dep_scan, 2);
		out->cpu = sqlite3_column_int64(a->st_dep_scan, 2);
	}
	sqlite3_reset(a->st_dep_scan);
	if (src != SQLITE_ROW && src != SQLITE_DONE)
		return lazy_fail(a, NF_ESQL, "reading deps");
	return src == SQLITE_ROW;
}

void an_op_rel(const struct nf_analysis *ca, int32_t o, int32_t *rel_op, int32_t *rel_cpu)
{
	struct nf_analysis *a = (struct nf_analysis *)ca;
	struct dep_row d;

	if (!a->ops[o].rel_known && !a->lazy_rc) {
		int32_t ro = AN_NONE, rc = AN_NONE;

		if (!a->ops[o].is_signal && a->ops[o].has_end &&
		    lazy_dep(a, a->ops[o].id, (uint64_t)a->ops[o].fence, (uint64_t)a->ops[o].value, &d)) {
			a->ops[o].has_dep = true;
			if (!d.sig_null)
				ro = an_get_op(a, d.sig);
			if (!d.cpu_null)
				rc = csig_index(a, d.cpu);
		}
		a->ops[o].rel_op = ro;
		a->ops[o].rel_cpu = rc;
		a->ops[o].rel_known = !a->lazy_rc;
	}
	*rel_op = a->ops[o].rel_op;
	*rel_cpu = a->ops[o].rel_cpu;
}

bool an_cwait_blocking(const struct nf_analysis *ca, int32_t wi)
{
	struct nf_analysis *a = (struct nf_analysis *)ca;
	struct an_cwait *w = &a->cwaits[wi];
	int src;

	if (w->info_known || a->lazy_rc)
		return w->blocking;
	/* the first signal of its fence to reach the value: GPU (SQL) or CPU (in memory) */
	int64_t best_t = 0;
	int32_t best_op = AN_NONE, best_cpu = AN_NONE;

	sqlite3_reset(a->st_first_sig);
	sqlite3_bind_int64(a->st_first_sig, 1, w->fence);
	sqlite3_bind_int64(a->st_first_sig, 2, w->value);
	sqlite3_bind_int64(a->st_first_sig, 3, w->end);
	src = sqlite3_step(a->st_first_sig);
	if (src == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(a->st_first_sig, 0);

		best_t = sqlite3_column_int64(a->st_first_sig, 1);
		sqlite3_reset(a->st_first_sig);
		best_op = an_get_op(a, id);
	} else if (src != SQLITE_DONE) {
		return lazy_fail(a, NF_ESQL, "reading fence_ops");
	}
	sqlite3_reset(a->st_first_sig);
	for (size_t i = 0; i < a->n_csigs; i++) {
		const struct an_csig *c = &a->csigs[i];

		if (c->fence == w->fence && c->value >= w->value && c->has_ts && c->ts <= w->end &&
		    ((best_op == AN_NONE && best_cpu == AN_NONE) || c->ts < best_t)) {
			best_t = c->ts;
			best_cpu = (int32_t)i;
			best_op = AN_NONE;
		}
	}
	w->rel_op = best_op;
	w->rel_cpu = best_cpu;
	/* did its thread queue anything meanwhile? */
	bool acted = false;
	if (w->has_start) {
		sqlite3_reset(a->st_acted);
		sqlite3_bind_int64(a->st_acted, 1, w->thread);
		sqlite3_bind_int64(a->st_acted, 2, w->start);
		sqlite3_bind_int64(a->st_acted, 3, w->end);
		src = sqlite3_step(a->st_acted);
		acted = src == SQLITE_ROW;
		sqlite3_reset(a->st_acted);
		if (src != SQLITE_ROW && src != SQLITE_DONE)
			return lazy_fail(a, NF_ESQL, "reading fence_ops");
		for (size_t i = 0; i < a->n_csigs && !acted; i++)
			acted = a->csigs[i].thread == w->thread && a->csigs[i].has_ts &&
				a->csigs[i].ts > w->start && a->csigs[i].ts < w->end;
	}
	w->blocking = !acted && !(best_cpu != AN_NONE && a->csigs[best_cpu].has_thread &&
				  a->csigs[best_cpu].thread == w->thread);
	w->info_known = !a->lazy_rc;
	return w->blocking;
}

int nf_analysis_open_lazy(const char *db_path, struct nf_analysis **out, struct nf_error *err)
{
	struct nf_analysis *a;
	struct stat st;
	sqlite3_stmt *s = NULL;
	int rc = 0;

	*out = NULL;
	if (stat(db_path, &st) != 0)
		return nf_error_set(err, NF_ENOENT, "%s: no timeline database", db_path);
	a = calloc(1, sizeof(*a));
	if (!a)
		return nf_error_set(err, NF_ENOMEM, "out of memory");
	a->lazy = true;
	if (sqlite3_open_v2(db_path, &a->db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		rc = nf_error_set(err, NF_ESQL, "%s: %s", db_path, a->db ? sqlite3_errmsg(a->db) : "cannot open");
		goto out_fail;
	}
	rc = load_queues_fences(a->db, a, err);
	if (!rc)
		rc = load_cpu(a->db, a, err);
	if (rc)
		goto out_fail;
	if (sqlite3_prepare_v2(a->db, "SELECT " OP_COLUMNS " FROM fence_ops WHERE id = ?1", -1, &a->st_op,
			       NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(a->db,
			       "SELECT id FROM fence_ops WHERE id < ?1 AND queue = ?2 AND end_ns IS NOT NULL "
			       "ORDER BY id DESC LIMIT 1", -1, &a->st_prev, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(a->db,
			       "SELECT d.wait_id, d.signal_id, d.cpu_signal, w.fence, w.value FROM deps d "
			       "JOIN fence_ops w ON w.id = d.wait_id WHERE d.rowid = ?1", -1,
			       &a->st_dep, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(a->db, "SELECT wait_id, signal_id, cpu_signal FROM deps WHERE wait_id = ?1", -1,
			       &a->st_dep_scan, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(a->db,
			       "SELECT id, end_ns FROM fence_ops WHERE fence = ?1 AND op = 'signal' AND value >= ?2 "
			       "AND end_ns IS NOT NULL AND end_ns <= ?3 ORDER BY end_ns, id LIMIT 1", -1,
			       &a->st_first_sig, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(a->db,
			       "SELECT 1 FROM fence_ops WHERE thread = ?1 AND queue IS NOT NULL AND queued_ns > ?2 "
			       "AND queued_ns < ?3 LIMIT 1", -1, &a->st_acted, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(a->db, "SELECT (SELECT max(rowid) FROM deps), "
			       "EXISTS (SELECT 1 FROM kernel_timelines)", -1, &s, NULL) != SQLITE_OK) {
		rc = sql_fail(a->db, db_path, err);
		goto out_fail;
	}
	if (sqlite3_step(s) == SQLITE_ROW) {
		a->deps_rows = sqlite3_column_int64(s, 0);
		a->kernel_timelines = sqlite3_column_int(s, 1) != 0;
	}
	sqlite3_finalize(s);
	rc = index_threads(a, err);
	if (rc)
		goto out_fail;
	*out = a;
	return 0;
out_fail:
	nf_error_prefix(err, "%s", db_path);
	nf_analysis_destroy(a);
	return rc;
}
