/*
 * The model the hang check needs, read in one pass with memory that does not
 * grow with the operations that ran: per queue only the operations after its
 * last one that ran (the open tail), the threads' waits that never ended, and
 * per fence the highest value signaled; the signals of a fence signaled from
 * several queues (or the CPU) are read again in a second pass and sorted by
 * time for the lowered-value check (a fence signaled from one queue is checked
 * in queue order as the operations stream by, nothing kept).
 */
#include "analysis_int.h"
#include "contract/errors.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A queue's open tail while the operations stream in. */
struct tail {
	struct an_op *ops;
	size_t n, cap;
};

/*
 * A signal that ran, for the lowered-value check. A fence signaled from one
 * queue only runs its signals in queue (id) order: each is compared with the
 * one before as it streams by, nothing kept. Once a second queue (or the CPU)
 * signals it, its signals are kept and sorted by time, and a second pass
 * reads them (see collect_multi).
 */
static int stream_sig(struct nf_analysis *a, struct an_fence *f, const struct an_op *o)
{
	if (!f->multi_src && f->src_queue >= 0 && f->src_queue != o->queue)
		f->multi_src = true;
	if (f->multi_src)
		return 0;
	f->src_queue = o->queue;
	int64_t prev = f->have_last ? f->last_value : f->initial;
	if ((f->have_last || f->has_initial) && o->value < prev) {
		struct nf_hang_finding x;

		if (an_grow((void **)&a->low, &a->cap_low, a->n_low + 1, sizeof(*a->low)))
			return NF_ENOMEM;
		memset(&x, 0, sizeof(x));
		x.kind = NF_HANG_LOWERED;
		x.wait.op_id = x.wait.cpu_wait = x.wait.queue = x.wait.thread = -1;
		x.fence = f->fence;
		x.value = o->value;
		x.ns = o->end;
		x.op_id = o->id;
		x.cpu_signal = -1;
		x.prev_value = prev;
		x.prev_ns = f->have_last ? f->last_t : -1;
		x.prev_op = f->have_last ? f->last_id : -1;
		x.prev_cpu_signal = -1;
		a->low[a->n_low++] = x;
	}
	f->have_last = true;
	f->last_value = o->value;
	f->last_t = o->end;
	f->last_id = o->id;
	return 0;
}

/* Second pass: the signals of the fences signaled from several queues, and the
 * streamed findings of those fences dropped (they are found again in order). */
static int collect_multi(sqlite3 *db, struct nf_analysis *a, struct nf_error *err)
{
	sqlite3_stmt *s = NULL;
	size_t k = 0, n_multi = 0;
	int src;

	for (size_t i = 0; i < a->n_fences; i++)
		n_multi += a->fences[i].multi_src;
	if (!n_multi)
		return 0;
	for (size_t i = 0; i < a->n_low; i++) {
		int32_t f = an_fence_index(a, a->low[i].fence);

		if (f == AN_NONE || !a->fences[f].multi_src)
			a->low[k++] = a->low[i];
	}
	a->n_low = k;
	if (sqlite3_prepare_v2(db,
			       "SELECT id, fence, value, end_ns FROM fence_ops WHERE op = 'signal' AND "
			       "end_ns IS NOT NULL AND value IS NOT NULL AND fence IS NOT NULL AND "
			       "status NOT IN ('unmatched', 'unsignaled') ORDER BY id", -1, &s, NULL) != SQLITE_OK)
		return nf_error_set(err, NF_ESQL, "reading fence_ops: %s", sqlite3_errmsg(db));
	while ((src = sqlite3_step(s)) == SQLITE_ROW) {
		int32_t fi = an_fence_index(a, sqlite3_column_int64(s, 1));

		if (fi == AN_NONE || !a->fences[fi].multi_src || a->fences[fi].kernel)
			continue;
		if (an_add_sig(&a->fences[fi], sqlite3_column_int64(s, 3), sqlite3_column_int64(s, 2), AN_NONE,
			       AN_NONE, sqlite3_column_int64(s, 0), false)) {
			sqlite3_finalize(s);
			return nf_error_set(err, NF_ENOMEM, "out of memory reading signals");
		}
	}
	sqlite3_finalize(s);
	if (src != SQLITE_DONE)
		return nf_error_set(err, NF_ESQL, "reading fence_ops: %s", sqlite3_errmsg(db));
	return 0;
}

int nf_analysis_load_open(const char *db_path, struct nf_analysis **out, struct nf_error *err)
{
	struct nf_analysis *a;
	struct tail *tails = NULL, loose = { 0 }; /* loose: waits on no queue that did not end */
	size_t cap_tails = 0;
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	struct stat st;
	int rc = 0, src;

	*out = NULL;
	if (stat(db_path, &st) != 0)
		return nf_error_set(err, NF_ENOENT, "%s: no timeline database", db_path);
	a = calloc(1, sizeof(*a));
	if (!a)
		return nf_error_set(err, NF_ENOMEM, "out of memory");
	a->open_only = true;
	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		rc = nf_error_set(err, NF_ESQL, "%s", db ? sqlite3_errmsg(db) : "cannot open");
		goto out;
	}
	sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
	rc = an_load_small(db, a, err);
	if (rc)
		goto out;
	for (size_t i = 0; i < a->n_csigs; i++) /* signaled from the CPU: kept and sorted */
		if (a->csigs[i].fidx != AN_NONE)
			a->fences[a->csigs[i].fidx].multi_src = true;
	if (sqlite3_prepare_v2(db, "SELECT " AN_OP_COLUMNS " FROM fence_ops ORDER BY id", -1, &s, NULL) !=
	    SQLITE_OK) {
		rc = nf_error_set(err, NF_EFORMAT, "not a timeline database (fence_ops: %s)", sqlite3_errmsg(db));
		goto out;
	}
	while ((src = sqlite3_step(s)) == SQLITE_ROW) {
		struct an_op o;
		struct tail *t;

		an_op_from_row(&o, s);
		if (sqlite3_column_type(s, 1) != SQLITE_NULL) {
			o.queue = sqlite3_column_int64(s, 1);
			o.qidx = an_queue_add(a, o.queue, &rc);
		}
		if (sqlite3_column_type(s, 3) != SQLITE_NULL)
			o.fidx = an_fence_add(a, o.fence, &rc);
		if (rc)
			break;
		if (o.is_signal && o.done && o.has_value && o.fidx != AN_NONE) {
			struct an_fence *f = &a->fences[o.fidx];

			if (!f->any_done || o.value > f->done_max) {
				f->done_max = o.value;
				f->done_max_op = o.id;
			}
			f->any_done = true;
			if (o.has_end && !f->kernel && (rc = stream_sig(a, f, &o)))
				break;
		}
		if (o.qidx == AN_NONE) {
			if (o.done || o.is_signal)
				continue;
			t = &loose;
		} else {
			if (a->n_queues > cap_tails) {
				size_t old = cap_tails;

				if (an_grow((void **)&tails, &cap_tails, a->n_queues, sizeof(*tails))) {
					rc = NF_ENOMEM;
					break;
				}
				memset(tails + old, 0, (cap_tails - old) * sizeof(*tails));
			}
			t = &tails[o.qidx];
			if (o.done) { /* everything queued before it ran too */
				t->n = 0;
				continue;
			}
		}
		if (an_grow((void **)&t->ops, &t->cap, t->n + 1, sizeof(*t->ops))) {
			rc = NF_ENOMEM;
			break;
		}
		t->ops[t->n++] = o;
	}
	if (rc) {
		nf_error_set(err, rc, "out of memory reading the operations");
		goto out;
	}
	if (src != SQLITE_DONE) {
		rc = nf_error_set(err, NF_ESQL, "reading fence_ops: %s", sqlite3_errmsg(db));
		goto out;
	}
	rc = collect_multi(db, a, err);
	if (rc)
		goto out;
	for (size_t i = 0; i < a->n_csigs; i++) {
		const struct an_csig *c = &a->csigs[i];
		struct an_fence *f;

		if (c->fidx == AN_NONE)
			continue;
		f = &a->fences[c->fidx];
		if (!f->any_done || c->value > f->done_max) {
			f->done_max = c->value;
			f->done_max_op = -1;
		}
		f->any_done = true;
		if (c->has_ts && !f->kernel && an_add_sig(f, c->ts, c->value, AN_NONE, (int32_t)i, c->id, true)) {
			rc = nf_error_set(err, NF_ENOMEM, "out of memory reading the CPU signals");
			goto out;
		}
	}
	an_sort_sigs(a);
	/* the open operations, queue by queue, then the loose waits */
	size_t total = loose.n;
	for (size_t q = 0; q < a->n_queues && q < cap_tails; q++)
		total += tails[q].n;
	a->ops = calloc(total ? total : 1, sizeof(*a->ops));
	if (!a->ops) {
		rc = nf_error_set(err, NF_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t q = 0; q < a->n_queues; q++) {
		struct an_queue *aq = &a->queues[q];
		const struct tail *t = q < cap_tails ? &tails[q] : NULL;

		aq->last_done = AN_NONE; /* only open operations are kept */
		if (!t || !t->n)
			continue;
		aq->ops = malloc(t->n * sizeof(*aq->ops));
		if (!aq->ops) {
			rc = nf_error_set(err, NF_ENOMEM, "out of memory");
			goto out;
		}
		aq->cap = t->n;
		for (size_t k = 0; k < t->n; k++) {
			a->ops[a->n_ops] = t->ops[k];
			a->ops[a->n_ops].qpos = (int32_t)k;
			aq->ops[aq->n++] = (int32_t)a->n_ops++;
		}
	}
	for (size_t k = 0; k < loose.n; k++)
		a->ops[a->n_ops++] = loose.ops[k];
	for (size_t i = 0; i < a->n_ops; i++)
		a->ops[i].prev_known = a->ops[i].rel_known = true;
out:
	sqlite3_finalize(s);
	if (db) {
		sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
		sqlite3_close(db);
	}
	for (size_t q = 0; q < cap_tails; q++)
		free(tails[q].ops);
	free(tails);
	free(loose.ops);
	if (rc) {
		nf_error_prefix(err, "%s", db_path);
		nf_analysis_destroy(a);
		return rc;
	}
	*out = a;
	return 0;
}
