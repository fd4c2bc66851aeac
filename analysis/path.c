/*
 * The critical path of an operation and the stall blame built on it. The walk
 * goes backwards in time from the operation's end to a lower bound (its queued
 * time for the critical path, a wait's observed time for blame) and emits one
 * segment per step, so the segments tile the interval exactly.
 */
#include "analysis_int.h"
#include "contract/errors.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* One id from a statement (bound by the caller), AN_NONE-like -1 when none. */
static int64_t lazy_one_id(struct nf_analysis *a, sqlite3_stmt *s, int *rc, struct nf_error *err)
{
	int src = sqlite3_step(s);
	int64_t id = src == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;

	if (src != SQLITE_ROW && src != SQLITE_DONE)
		*rc = nf_error_set(err, NF_ESQL, "reading fence_ops: %s", sqlite3_errmsg(a->db));
	sqlite3_finalize(s);
	return id;
}

/* The lazy model's choice of a target (see nf_analysis_target). */
static int lazy_target(const struct nf_analysis *ca, enum nf_cp_target kind, int64_t arg, int64_t *best_id,
		       struct nf_error *err)
{
	struct nf_analysis *a = (struct nf_analysis *)ca;
	static const char by_queue[] =
		"SELECT id FROM fence_ops WHERE queue = ?1 AND end_ns IS NOT NULL AND queued_ns IS NOT NULL "
		"ORDER BY id DESC LIMIT 1";
	static const char by_end[] =
		"SELECT id FROM fence_ops WHERE end_ns IS NOT NULL AND queued_ns IS NOT NULL AND end_ns <= ?1 "
		"AND (?2 IS NULL OR queue = ?2) ORDER BY end_ns DESC, id DESC LIMIT 1";
	sqlite3_stmt *s = NULL;
	int64_t best_end = 0;
	int rc = 0;

	*best_id = -1;
	/* in-order queues: a queue's last operation to finish is its newest with an end
	 * (kernel timelines may signal out of order: those sessions are scanned) */
	if (kind == NF_CP_AT || (kind == NF_CP_LAST && a->kernel_timelines) ||
	    (kind == NF_CP_QUEUE && a->kernel_timelines)) {
		if (sqlite3_prepare_v2(a->db, by_end, -1, &s, NULL) != SQLITE_OK)
			return nf_error_set(err, NF_ESQL, "reading fence_ops: %s", sqlite3_errmsg(a->db));
		sqlite3_bind_int64(s, 1, kind == NF_CP_AT ? arg : INT64_MAX);
		if (kind == NF_CP_QUEUE)
			sqlite3_bind_int64(s, 2, arg);
		*best_id = lazy_one_id(a, s, &rc, err);
		return rc;
	}
	for (size_t qi = 0; qi < a->n_queues && !rc; qi++) {
		int64_t id;
		int32_t o;

		if (kind == NF_CP_QUEUE && a->queues[qi].queue != arg)
			continue;
		if (sqlite3_prepare_v2(a->db, by_queue, -1, &s, NULL) != SQLITE_OK)
			return nf_error_set(err, NF_ESQL, "reading fence_ops: %s", sqlite3_errmsg(a->db));
		sqlite3_bind_int64(s, 1, a->queues[qi].queue);
		id = lazy_one_id(a, s, &rc, err);
		if (id < 0 || rc)
			continue;
		o = an_get_op(a, id);
		if (an_lazy_failed(a, err))
			return err->code;
		if (o != AN_NONE && (*best_id < 0 || a->ops[o].end > best_end ||
				     (a->ops[o].end == best_end && id > *best_id))) {
			*best_id = id;
			best_end = a->ops[o].end;
		}
	}
	/* Operations on no queue are CPU threads' waits, each also a cpu_waits row with
	 * adapter NULL (schemas/timeline.sql): when one of those ended after the best
	 * queue operation, scan after all. */
	for (size_t i = 0; kind == NF_CP_LAST && !rc && i < a->n_cwaits; i++) {
		if (a->cwaits[i].as_op && a->cwaits[i].has_end && (*best_id < 0 || a->cwaits[i].end > best_end)) {
			if (sqlite3_prepare_v2(a->db, by_end, -1, &s, NULL) != SQLITE_OK)
				return nf_error_set(err, NF_ESQL, "reading fence_ops: %s", sqlite3_errmsg(a->db));
			sqlite3_bind_int64(s, 1, INT64_MAX);
			*best_id = lazy_one_id(a, s, &rc, err);
			break;
		}
	}
	return rc;
}

int nf_analysis_target(const struct nf_analysis *a, enum nf_cp_target kind, int64_t arg,
		       int64_t *op_id, struct nf_error *err)
{
	int32_t best = AN_NONE, q = AN_NONE;

	if (a->open_only)
		return nf_error_set(err, NF_ESTATE, "choosing an operation needs a loaded or lazy model");

	switch (kind) {
	case NF_CP_OP: {
		int32_t i = an_get_op(a, arg);

		if (an_lazy_failed(a, err))
			return err->code;

		if (i == AN_NONE)
			return nf_error_set(err, NF_ENOENT, "no operation with id %" PRId64, arg);
		if (!a->ops[i].has_end || !a->ops[i].has_queued)
			return nf_error_set(err, NF_ESTATE,
					    "operation %" PRId64 " has no %s time: it has no latency to explain",
					    arg, a->ops[i].has_queued ? "end" : "queued");
		*op_id = arg;
		return 0;
	}
	case NF_CP_QUEUE:
		for (size_t i = 0; i < a->n_queues; i++)
			if (a->queues[i].queue == arg)
				q = (int32_t)i;
		if (q == AN_NONE)
			return nf_error_set(err, NF_ENOENT, "no hardware queue 0x%" PRIx64 " in the timeline",
					    (uint64_t)arg);
		break;
	case NF_CP_LAST:
	case NF_CP_AT:
		break;
	default:
		return nf_error_set(err, NF_EINVAL, "unknown critical path target");
	}
	if (a->lazy) {
		int64_t id;
		int rc = lazy_target(a, kind, arg, &id, err);

		if (rc)
			return rc;
		if (id >= 0) {
			*op_id = id;
			return 0;
		}
	}
	for (size_t i = 0; !a->lazy && i < a->n_ops; i++) {
		const struct an_op *o = &a->ops[i];

		if (!o->has_end || !o->has_queued)
			continue;
		if (kind == NF_CP_AT && o->end > arg)
			continue;
		if (kind == NF_CP_QUEUE && o->qidx != q)
			continue;
		if (best == AN_NONE || o->end >= a->ops[best].end)
			best = (int32_t)i;
	}
	if (best == AN_NONE)
		return nf_error_set(err, NF_ENOENT, "%s",
				    kind == NF_CP_AT ? "no operation finished by that time"
				    : kind == NF_CP_QUEUE ? "no operation finished on that queue"
							  : "no operation finished in this session");
	*op_id = a->ops[best].id;
	return 0;
}


/* ---- the walk ---------------------------------------------------------------- */

struct walk {
	const struct nf_analysis *a;
	int64_t t0;
	int64_t via;                /* fence of the last wait the walk went back through, -1 */
	struct nf_cp_segment *segs; /* emitted backwards */
	size_t n, cap;
	int rc;
};

static void emit(struct walk *w, struct nf_cp_segment s)
{
	s.via_fence = w->via;
	if (s.start_ns < w->t0)
		s.start_ns = w->t0;
	if (s.start_ns >= s.end_ns || w->rc)
		return;
	if (an_grow((void **)&w->segs, &w->cap, w->n + 1, sizeof(*w->segs))) {
		w->rc = NF_ENOMEM;
		return;
	}
	w->segs[w->n++] = s;
}

static struct nf_cp_segment seg_queue(enum nf_seg_kind kind, const struct an_op *o, int64_t start,
				      int64_t end)
{
	struct nf_cp_segment s = { kind, false, o->queue, -1, o->id, -1, -1, -1, -1, -1, -1, start, end };

	if (kind == NF_SEG_WAIT) {
		s.fence = o->fence;
		s.value = o->value;
	}
	return s;
}

static struct nf_cp_segment seg_thread(enum nf_seg_kind kind, int64_t thread, int64_t start,
				       int64_t end)
{
	struct nf_cp_segment s = { kind, true, -1, thread, -1, -1, -1, -1, -1, -1, -1, start, end };

	return s;
}

/* The latest blocking CPU wait of thread ending in (t0, t] other than `skip`, AN_NONE if none. */
static int32_t thread_wait_before(const struct nf_analysis *a, int64_t thread, int64_t t0, int64_t t,
				  int32_t skip)
{
	int32_t ti = an_thread_index(a, thread);
	const struct an_thread *th;
	size_t lo = 0, hi;

	if (ti == AN_NONE)
		return AN_NONE;
	th = &a->threads[ti];
	hi = th->n;
	while (lo < hi) { /* first wait ending after t */
		size_t mid = lo + (hi - lo) / 2;

		if (a->cwaits[th->waits[mid]].end <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo > 0; lo--) {
		int32_t w = th->waits[lo - 1];

		if (a->cwaits[w].end <= t0)
			return AN_NONE;
		if (w != skip && an_cwait_blocking(a, w))
			return w;
	}
	return AN_NONE;
}

enum walk_state { W_OP, W_THREAD };

/*
 * Walks back from time `end` where operation `start_op` completes, down to t0.
 * Segments come out in time order in w->segs. Operations are copied out of
 * the model before each step: a lazy model grows its arrays as it loads.
 */
/*
 * When the release deps names for a wait ending at cur took effect: its
 * signal's end, or cur when that end was recorded after the wait's. Sessions
 * nftrace records never name such a releaser (the analyzer gives way to a lost
 * candidate or names none), but in a Windows ETW capture the OS logs a signal
 * packet's completion (QueuePacketStop) after it has unwaited the waits it
 * released, tens of microseconds later: the signal still released the wait.
 * Always true: the release is followed either way.
 */
static bool release_at(int64_t *r, int64_t cur)
{
	if (*r > cur)
		*r = cur;
	return true;
}

/*
 * A releaser the walk cannot go back through: a signal on no queue that was
 * never seen queued (Windows ETW: the scheduler's 551/552 whose 294 is not in
 * the capture). Nothing is known of it before its end, so the wait it
 * released is taken as waiting until then, naming it.
 */
static bool dead_end(const struct nf_analysis *a, int32_t rel)
{
	return rel != AN_NONE && a->ops[rel].is_signal && a->ops[rel].qidx == AN_NONE && !a->ops[rel].has_queued;
}

static int walk_run(struct walk *w, int32_t start_op, int64_t end, struct nf_error *err)
{
	const struct nf_analysis *a = w->a;
	enum walk_state st = W_OP;
	int32_t o = start_op, rel_op = AN_NONE, rel_cpu = AN_NONE;
	int64_t cur = end, thread = -1, r;
	int64_t queued_op = -1, queued_csig = -1; /* what the thread queued at cur */
	int32_t last_cw = AN_NONE;                /* the CPU wait just walked through */
	int64_t start_id = a->ops[start_op].id;
	size_t steps = 0;

	/* each step either moves time back or loads an operation: a bound on steps
	 * that grows with what is loaded catches data whose times loop */
	while (cur > w->t0 && !w->rc) {
		if (++steps > 4 * (a->n_ops + a->n_cwaits) + 1024)
			return nf_error_set(err, NF_EFORMAT,
					    "the critical path of operation %" PRId64
					    " does not converge (times loop back)", start_id);
		bool released = false;

		if (st == W_OP) {
			int32_t prev_i = an_op_prev(a, o), orel = AN_NONE, orcpu = AN_NONE;

			an_op_rel(a, o, &orel, &orcpu);
			if (an_lazy_failed(a, err))
				return err->code;
			const struct an_op op = a->ops[o];
			int64_t orel_id = orel != AN_NONE ? a->ops[orel].id : -1;

			if (op.qidx == AN_NONE) {
				/* a thread's wait recorded as an operation (a kernel dma_fence wait) */
				int64_t lo = op.has_queued ? op.queued : op.has_observed ? op.observed : w->t0;
				struct nf_cp_segment s = seg_thread(NF_SEG_WAIT, op.thread, 0, cur);

				s.op_id = op.id;
				s.fence = op.fence;
				s.value = op.value;
				if (an_release_time(a, orel, orcpu, &r) && release_at(&r, cur) && r > lo) {
					s.start_ns = r;
					s.release_op = orel_id;
					emit(w, s);
					cur = r;
					rel_op = orel;
					rel_cpu = orel != AN_NONE ? AN_NONE : orcpu;
					released = true;
					w->via = op.fence;
				} else {
					s.start_ns = lo;
					emit(w, s);
					cur = lo < cur ? lo : cur;
					st = W_THREAD;
					thread = op.thread;
					queued_op = queued_csig = -1;
					continue;
				}
			} else {
				const struct an_op *prev = prev_i != AN_NONE ? &a->ops[prev_i] : NULL;
				bool busy = prev && (!op.has_queued || prev->end > op.queued);
				int64_t ready = busy ? prev->end : op.has_queued ? op.queued : w->t0;

				/* The release deps names, taken no later than the wait's end. */
				bool has_rel = !op.is_signal && an_release_time(a, orel, orcpu, &r) && release_at(&r, cur);
				bool blind = has_rel && dead_end(a, orel);

				/* stalled by its release: the signal came after the wait could start
				 * and after the GPU reached it (else the wait only took its cost) */
				if (has_rel && !blind && r > ready && (!op.has_observed || r > op.observed)) {
					struct nf_cp_segment s = seg_queue(NF_SEG_WAIT, &op, r, cur);

					s.release_op = orel_id;
					emit(w, s);
					cur = r;
					rel_op = orel;
					rel_cpu = orel != AN_NONE ? AN_NONE : orcpu;
					released = true;
					w->via = op.fence;
				} else {
					if (ready > cur)
						ready = cur;
					/* a wait that stalled with no known release: waiting, then
					 * what brought the queue to it */
					if (!op.is_signal && !has_rel && op.has_observed && op.observed > ready &&
					    op.observed < cur) {
						emit(w, seg_queue(NF_SEG_WAIT, &op, op.observed, cur));
						cur = op.observed;
					}
					/* released by a signal the walk cannot follow: waiting from when
					 * it could start until then */
					int64_t from = op.has_observed && op.observed > ready ? op.observed : ready;

					if (blind && r > from && from < cur) {
						struct nf_cp_segment s = seg_queue(NF_SEG_WAIT, &op, from, cur);

						s.release_op = orel_id;
						emit(w, s);
						cur = from;
					}
					emit(w, seg_queue(NF_SEG_EXECUTE, &op, ready, cur));
					cur = ready;
					if (busy) {
						o = prev_i;
					} else {
						st = W_THREAD;
						thread = op.thread;
						queued_op = op.id;
						queued_csig = -1;
					}
					continue;
				}
			}
		} else {
			/* W_THREAD: the thread did something at cur (queued queued_op, signaled queued_csig) */
			int32_t wi = thread >= 0 ? thread_wait_before(a, thread, w->t0, cur, last_cw) : AN_NONE;
			struct nf_cp_segment s = seg_thread(NF_SEG_QUEUE, thread, w->t0, cur);

			if (an_lazy_failed(a, err))
				return err->code;
			s.op_id = queued_op;
			s.cpu_signal = queued_csig;
			if (wi == AN_NONE) {
				emit(w, s);
				cur = w->t0;
				break;
			}
			const struct an_cwait *cw = &a->cwaits[wi];
			last_cw = wi;
			s.start_ns = cw->end;
			emit(w, s);
			cur = cw->end;
			s = seg_thread(NF_SEG_WAIT, thread, 0, cur);
			s.cpu_wait = cw->id;
			s.fence = cw->fence;
			s.value = cw->value;
			queued_op = queued_csig = -1;
			if (dead_end(a, cw->rel_op))
				s.release_op = a->ops[cw->rel_op].id;
			if (!dead_end(a, cw->rel_op) && an_release_time(a, cw->rel_op, cw->rel_cpu, &r) && r <= cur &&
			    (!cw->has_start || r > cw->start)) {
				s.start_ns = r;
				s.release_op = cw->rel_op != AN_NONE ? a->ops[cw->rel_op].id : -1;
				emit(w, s);
				cur = r;
				rel_op = cw->rel_op;
				rel_cpu = cw->rel_op != AN_NONE ? AN_NONE : cw->rel_cpu;
				released = true;
				w->via = cw->fence;
			} else {
				int64_t lo = cw->has_start ? cw->start : w->t0;

				s.start_ns = lo;
				emit(w, s);
				if (lo < cur)
					cur = lo;
				continue;
			}
		}
		if (released) {
			if (rel_op != AN_NONE) {
				st = W_OP;
				o = rel_op;
			} else {
				st = W_THREAD;
				thread = a->csigs[rel_cpu].thread;
				queued_op = -1;
				queued_csig = a->csigs[rel_cpu].id;
			}
		}
	}
	if (w->rc)
		return nf_error_set(err, w->rc, "out of memory for the critical path");
	/* in time order, neighbours of one actor and kind merged */
	struct nf_cp_segment *out = malloc((w->n ? w->n : 1) * sizeof(*out));
	size_t k = 0;

	if (!out)
		return nf_error_set(err, NF_ENOMEM, "out of memory for the critical path");
	for (size_t i = w->n; i-- > 0;) {
		const struct nf_cp_segment *s = &w->segs[i];

		if (k) {
			struct nf_cp_segment *p = &out[k - 1];

			if (p->kind == s->kind && p->on_thread == s->on_thread && p->queue == s->queue &&
			    p->thread == s->thread && p->op_id == s->op_id && p->cpu_wait == s->cpu_wait &&
			    p->cpu_signal == s->cpu_signal && p->via_fence == s->via_fence &&
			    p->end_ns == s->start_ns) {
				p->end_ns = s->end_ns;
				continue;
			}
		}
		out[k++] = *s;
	}
	free(w->segs);
	w->segs = out;
	w->cap = w->n;
	w->n = k;
	return 0;
}

int nf_analysis_critical_path(const struct nf_analysis *a, int64_t op_id, struct nf_cp_path *path,
			      struct nf_error *err)
{
	struct walk w = { a, 0, -1, NULL, 0, 0, 0 };
	int32_t o = an_get_op(a, op_id);
	int rc;

	memset(path, 0, sizeof(*path));
	if (a->open_only)
		return nf_error_set(err, NF_ESTATE, "the critical path needs a loaded or lazy model");
	if (an_lazy_failed(a, err))
		return err->code;
	if (o == AN_NONE)
		return nf_error_set(err, NF_ENOENT, "no operation with id %" PRId64, op_id);
	if (!a->ops[o].has_end || !a->ops[o].has_queued)
		return nf_error_set(err, NF_ESTATE, "operation %" PRId64 " has no %s time: no latency",
				    op_id, a->ops[o].has_queued ? "end" : "queued");
	/* a latency beyond int64 (times planted at its ends): refused, not wrapped */
	if (__builtin_sub_overflow(a->ops[o].end, a->ops[o].queued, &(int64_t){ 0 }))
		return nf_error_set(err, NF_EFORMAT, "operation %" PRId64 ": queued at %" PRId64 " ns, ended at %" PRId64
				    " ns: a latency beyond 2^63 ns (the timeline holds impossible times)",
				    op_id, a->ops[o].queued, a->ops[o].end);
	w.t0 = a->ops[o].queued;
	rc = walk_run(&w, o, a->ops[o].end, err);
	if (rc) {
		free(w.segs);
		return rc;
	}
	path->op_id = op_id;
	path->queued_ns = a->ops[o].queued;
	path->end_ns = a->ops[o].end;
	path->segs = w.segs;
	path->n = w.n;
	return 0;
}

int nf_analysis_critical_path_since(const struct nf_analysis *a, int64_t op_id, int64_t t0,
				    struct nf_cp_path *path, struct nf_error *err)
{
	struct walk w = { a, t0, -1, NULL, 0, 0, 0 };
	int32_t o = an_get_op(a, op_id);
	int rc;

	memset(path, 0, sizeof(*path));
	if (a->open_only)
		return nf_error_set(err, NF_ESTATE, "the critical path needs a loaded or lazy model");
	if (an_lazy_failed(a, err))
		return err->code;
	if (o == AN_NONE)
		return nf_error_set(err, NF_ENOENT, "no operation with id %" PRId64, op_id);
	if (!a->ops[o].has_end)
		return nf_error_set(err, NF_ESTATE, "operation %" PRId64 " has no end time", op_id);
	path->op_id = op_id;
	path->queued_ns = t0;
	path->end_ns = a->ops[o].end;
	if (t0 >= a->ops[o].end)
		return 0;
	rc = walk_run(&w, o, a->ops[o].end, err);
	if (rc) {
		free(w.segs);
		return rc;
	}
	path->segs = w.segs;
	path->n = w.n;
	return 0;
}

void nf_cp_path_free(struct nf_cp_path *path)
{
	free(path->segs);
	memset(path, 0, sizeof(*path));
}

int an_walk_window(const struct nf_analysis *a, int32_t op, int64_t t0, struct nf_cp_segment **segs,
		   size_t *n, struct nf_error *err)
{
	struct walk w = { a, t0, -1, NULL, 0, 0, 0 };
	int rc = walk_run(&w, op, a->ops[op].end, err);

	if (rc) {
		free(w.segs);
		return rc;
	}
	*segs = w.segs;
	*n = w.n;
	return 0;
}
