/*
 * Each frame's GPU work: the work queued between its swap chain's previous
 * present and its own (by its process's threads where the capture says which
 * process a thread is, else by any thread), per lane, from the generic tables:
 *
 *  - jobs (Linux kernel sessions): a job runs from started_ns to finished_ns on
 *    its ring (only finishes seen in the trace: a ring-order or
 *    recording-start bound is no measurement) and waits from submitted_ns to
 *    started_ns;
 *  - dma_packets (Windows ETW): a packet runs from start_ns to end_ns on its
 *    context (submitted when its queue packet was queued); the waits are the
 *    wait packets of fence_ops;
 *  - otherwise fence_ops: an operation is in flight on its queue from when the
 *    queue could run it (queued, or the end of the queue's previous operation)
 *    to its end, and a wait stalls it from when the GPU saw it (observed) to
 *    its end; busy is in flight and not stalled.
 *
 * A frame's busy time (MsGPUBusy) is the union over its lanes; its first
 * start is PresentMon's GPU start, and for a frame without a ready time of
 * its own (a marker frame) the last end of its work is its ready time.
 */
#include "frames_int.h"
#include "contract/errors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A frame's busy intervals (disjoint per lane, merged when they touch). */
struct fr_ivl {
	int64_t s, e;
};

struct fr_work {
	struct fr_ivl **iv; /* per frame */
	size_t *n, *cap;
	/* who presents: frames of each process in present order, and all of them */
	struct nf_u64map proc_list;  /* process -> index in lists */
	int32_t **lists;
	size_t *list_n, *list_cap;
	size_t n_lists;
	int32_t *all;
};

struct item {
	struct fr_opt thread, process;
	int64_t submit;
	struct fr_opt start, end;
	int64_t stall;             /* inside [start, end], at its end */
	int32_t lane;
	bool busy;                 /* counts as running (not only a wait) */
	bool track_only;           /* only a candidate for the frame's last operation */
	struct fr_opt op, job;     /* the fence_ops row or job it is */
};

static int lane_index(struct fr_ctx *c, struct fr_opt queue, const char *ring, int32_t *out)
{
	for (size_t i = 0; i < c->n_lanes; i++) {
		const struct fr_lane *l = &c->lanes[i];

		if (queue.known ? (l->queue.known && l->queue.v == queue.v)
				: (!l->queue.known && !strcmp(l->ring, ring ? ring : ""))) {
			*out = (int32_t)i;
			return 0;
		}
	}
	if (fr_grow((void **)&c->lanes, &c->cap_lanes, c->n_lanes + 1, sizeof(*c->lanes)))
		return nf_error_set(c->err, NF_ENOMEM, "out of memory (lanes)");
	struct fr_lane *l = &c->lanes[c->n_lanes];

	memset(l, 0, sizeof(*l));
	l->queue = queue;
	if (queue.known) {
		const char *name = c->an ? nf_analysis_queue_name(c->an, queue.v) : NULL;

		if (name)
			snprintf(l->name, sizeof(l->name), "queue 0x%llx (%.100s)", (unsigned long long)queue.v, name);
		else
			snprintf(l->name, sizeof(l->name), "queue 0x%llx", (unsigned long long)queue.v);
	} else {
		snprintf(l->ring, sizeof(l->ring), "%s", ring ? ring : "");
		snprintf(l->name, sizeof(l->name), "ring %s", ring && *ring ? ring : "(unknown)");
	}
	*out = (int32_t)c->n_lanes++;
	return 0;
}

static int work_init(struct fr_ctx *c, struct fr_work *w)
{
	memset(w, 0, sizeof(*w));
	w->iv = calloc(c->n_frames ? c->n_frames : 1, sizeof(*w->iv));
	w->n = calloc(c->n_frames ? c->n_frames : 1, sizeof(*w->n));
	w->cap = calloc(c->n_frames ? c->n_frames : 1, sizeof(*w->cap));
	w->all = malloc((c->n_frames ? c->n_frames : 1) * sizeof(*w->all));
	if (!w->iv || !w->n || !w->cap || !w->all)
		return nf_error_set(c->err, NF_ENOMEM, "out of memory (frames' GPU work)");
	for (size_t i = 0; i < c->n_frames; i++) {
		const struct fr_frame *f = &c->frames[i];
		uint64_t *li;

		w->all[i] = (int32_t)i;
		if (!f->process.known)
			continue;
		li = nf_u64map_find(&w->proc_list, (uint64_t)f->process.v);
		if (!li) {
			size_t k = w->n_lists;

			if (nf_u64map_put(&w->proc_list, (uint64_t)f->process.v, k))
				return nf_error_set(c->err, NF_ENOMEM, "out of memory (frames' GPU work)");
			int32_t **nl = realloc(w->lists, (k + 1) * sizeof(*nl));
			size_t *nn = realloc(w->list_n, (k + 1) * sizeof(*nn));
			if (nl)
				w->lists = nl;
			if (nn)
				w->list_n = nn;
			size_t *nc = realloc(w->list_cap, (k + 1) * sizeof(*nc));
			if (nc)
				w->list_cap = nc;
			if (!nl || !nn || !nc)
				return nf_error_set(c->err, NF_ENOMEM, "out of memory (frames' GPU work)");
			w->lists[k] = NULL;
			w->list_n[k] = w->list_cap[k] = 0;
			w->n_lists++;
			li = nf_u64map_find(&w->proc_list, (uint64_t)f->process.v);
		}
		size_t k = (size_t)*li;
		if (fr_grow((void **)&w->lists[k], &w->list_cap[k], w->list_n[k] + 1, sizeof(int32_t)))
			return nf_error_set(c->err, NF_ENOMEM, "out of memory (frames' GPU work)");
		w->lists[k][w->list_n[k]++] = (int32_t)i;
	}
	return 0;
}

static void work_free(struct fr_ctx *c, struct fr_work *w)
{
	for (size_t i = 0; i < c->n_frames && w->iv; i++)
		free(w->iv[i]);
	free(w->iv);
	free(w->n);
	free(w->cap);
	for (size_t k = 0; k < w->n_lists; k++)
		free(w->lists[k]);
	free(w->lists);
	free(w->list_n);
	free(w->list_cap);
	free(w->all);
	nf_u64map_free(&w->proc_list);
}

/* The frame whose present is the first at or after t among list[0..n), -1 none. */
static int32_t frame_after(const struct fr_ctx *c, const int32_t *list, size_t n, int64_t t)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->frames[list[mid]].present_ns < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n ? list[lo] : -1;
}

static int32_t attribute(const struct fr_ctx *c, const struct fr_work *w, const struct item *it)
{
	struct fr_opt proc = it->process;

	if (!proc.known && it->thread.known) {
		const uint64_t *p = nf_u64map_find(&c->thread_process, (uint64_t)it->thread.v);

		if (p)
			proc = fr_some((int64_t)*p);
	}
	if (proc.known && w->n_lists) {
		const uint64_t *li = nf_u64map_find(&w->proc_list, (uint64_t)proc.v);

		if (!li)
			return -1; /* another process's work */
		return frame_after(c, w->lists[*li], w->list_n[*li], it->submit);
	}
	return frame_after(c, w->all, c->n_frames, it->submit);
}

static int add_interval(struct fr_ctx *c, struct fr_work *w, int32_t fi, int64_t s, int64_t e)
{
	size_t n = w->n[fi];

	if (e <= s)
		return 0;
	if (n && s <= w->iv[fi][n - 1].e && s >= w->iv[fi][n - 1].s) {
		if (e > w->iv[fi][n - 1].e)
			w->iv[fi][n - 1].e = e;
		return 0;
	}
	if (fr_grow((void **)&w->iv[fi], &w->cap[fi], n + 1, sizeof(struct fr_ivl)))
		return nf_error_set(c->err, NF_ENOMEM, "out of memory (frames' GPU work)");
	w->iv[fi][n] = (struct fr_ivl){ s, e };
	w->n[fi] = n + 1;
	return 0;
}

static int add_item(struct fr_ctx *c, struct fr_work *w, const struct item *it)
{
	int32_t fi = attribute(c, w, it);
	struct fr_frame *f;
	uint64_t key, *slot;
	struct fr_lane_acc *a;

	if (fi < 0)
		return 0;
	f = &c->frames[fi];
	if (it->end.known && it->op.known && (!f->last_op.known || it->end.v >= f->last_op_end)) {
		f->last_op = it->op;
		f->last_op_end = it->end.v;
	}
	if (it->end.known && it->job.known && (!f->last_job.known || it->end.v >= f->last_job_end)) {
		f->last_job = it->job;
		f->last_job_end = it->end.v;
	}
	if (it->track_only)
		return 0;
	key = (uint64_t)fi << 24 | (uint64_t)it->lane;
	slot = nf_u64map_find(&c->acc_map, key);
	if (!slot) {
		if (fr_grow((void **)&c->accs, &c->cap_accs, c->n_accs + 1, sizeof(*c->accs)) ||
		    nf_u64map_put(&c->acc_map, key, c->n_accs))
			return nf_error_set(c->err, NF_ENOMEM, "out of memory (frames' GPU work)");
		a = &c->accs[c->n_accs++];
		memset(a, 0, sizeof(*a));
		a->frame = fi;
		a->lane = it->lane;
		a->first_start = INT64_MAX;
		a->last_end = INT64_MIN;
	} else {
		a = &c->accs[*slot];
	}
	a->items++;
	f->items++;
	if (!it->start.known)
		return 0;
	if (it->start.v < a->first_start)
		a->first_start = it->start.v;
	if (!f->gpu_start.known || it->start.v < f->gpu_start.v)
		f->gpu_start = it->start;
	f->any_work = true;
	if (!it->end.known)
		return 0;
	if (it->end.v > a->last_end)
		a->last_end = it->end.v;
	if (it->end.v > f->last_end)
		f->last_end = it->end.v;
	a->timed++;
	f->timed++;
	if (!c->has_jobs)
		a->waits++;
	a->wait += it->stall;
	if (!it->busy)
		return 0;
	int64_t be = it->end.v - it->stall;

	if (be > it->start.v) {
		a->busy += be - it->start.v;
		return add_interval(c, w, fi, it->start.v, be);
	}
	return 0;
}

/* jobs: a ring's jobs, busy from start to a finish seen in the trace. */
static int from_jobs(struct fr_ctx *c, struct fr_work *w)
{
	static const char sql[] =
		"SELECT ring, thread, process, submitted_ns, started_ns, finished_ns, "
		"coalesce(finish_source IN ('event', 'signaled'), 0), id FROM jobs "
		"WHERE coalesce(submitted_ns, started_ns) IS NOT NULL ORDER BY coalesce(submitted_ns, started_ns), id";
	sqlite3_stmt *s = NULL;
	int rc = 0, src;

	if (sqlite3_prepare_v2(c->db, sql, -1, &s, NULL) != SQLITE_OK)
		return fr_sql(c, "reading jobs");
	while (!rc && (src = sqlite3_step(s)) == SQLITE_ROW) {
		struct item it = { 0 };
		const char *ring = (const char *)sqlite3_column_text(s, 0);
		int64_t sub = 0, st = 0, fin = 0;

		it.thread = fr_col(s, 1, &sub) ? fr_some(sub) : fr_none;
		it.process = fr_col(s, 2, &sub) ? fr_some(sub) : fr_none;
		bool has_sub = fr_col(s, 3, &sub), has_st = fr_col(s, 4, &st), has_fin = fr_col(s, 5, &fin);

		it.submit = has_sub ? sub : st;
		it.start = has_st ? fr_some(st) : fr_none;
		it.end = has_fin && sqlite3_column_int(s, 6) ? fr_some(fin) : fr_none;
		it.job = fr_some(sqlite3_column_int64(s, 7));
		it.busy = true;
		/* the job's wait to run is its own, before its start: kept apart */
		rc = lane_index(c, fr_none, ring ? ring : "", &it.lane);
		if (!rc)
			rc = add_item(c, w, &it);
		if (!rc && has_sub && has_st && st > sub) {
			int32_t fi = attribute(c, w, &it);

			if (fi >= 0) {
				uint64_t *slot = nf_u64map_find(&c->acc_map, (uint64_t)fi << 24 | (uint64_t)it.lane);

				if (slot) {
					c->accs[*slot].wait += st - sub;
					c->accs[*slot].waits++;
				}
				c->frames[fi].wait_ns += st - sub;
			}
		}
	}
	sqlite3_finalize(s);
	if (rc)
		return rc;
	return src == SQLITE_DONE ? 0 : fr_sql(c, "reading jobs");
}

/* fence_ops, in id (queued) order, from the loaded model; with busy false only
 * the waits' stalls count (the DMA packets say when the GPU ran). */
struct fo_ctx {
	struct fr_ctx *c;
	struct fr_work *w;
	bool busy;
	struct nf_u64map prev_end;  /* queue -> end of its latest operation with an end */
	int64_t last_queue;
	int32_t last_lane;
};

static int fo_row(void *ctx, const struct nf_op_row *r)
{
	struct fo_ctx *x = ctx;
	struct item it = { 0 };
	uint64_t *pe;
	int rc = 0;

	if (!r->on_queue || r->queued_ns < 0)
		return 0;
	if (r->queue != x->last_queue) {
		if ((rc = lane_index(x->c, fr_some(r->queue), NULL, &x->last_lane)))
			return rc;
		x->last_queue = r->queue;
	}
	it.lane = x->last_lane;
	it.thread = r->thread >= 0 ? fr_some(r->thread) : fr_none;
	it.submit = r->queued_ns;
	pe = nf_u64map_find(&x->prev_end, (uint64_t)r->queue);
	int64_t start = pe && (int64_t)*pe > r->queued_ns ? (int64_t)*pe : r->queued_ns;

	it.start = fr_some(start);
	if (r->end_ns >= 0) {
		it.end = fr_some(r->end_ns > start ? r->end_ns : start);
		if (!r->is_signal) {
			int64_t from = r->observed_ns > start ? r->observed_ns : start;

			if (r->end_ns > from)
				it.stall = r->end_ns - from;
		}
		if (!pe || r->end_ns > (int64_t)*pe) {
			if (pe)
				*pe = (uint64_t)r->end_ns;
			else if (nf_u64map_put(&x->prev_end, (uint64_t)r->queue, (uint64_t)r->end_ns))
				return nf_error_set(x->c->err, NF_ENOMEM, "out of memory (queues)");
		}
	}
	it.busy = x->busy;
	it.op = fr_some(r->id);
	it.track_only = !x->busy && r->is_signal;
	return add_item(x->c, x->w, &it);
}

static int from_fence_ops(struct fr_ctx *c, struct fr_work *w, bool busy)
{
	struct fo_ctx x = { c, w, busy, { 0 }, INT64_MIN, -1 };
	int rc = nf_analysis_foreach_op(c->an, fo_row, &x);

	nf_u64map_free(&x.prev_end);
	if (rc == NF_ESTATE)
		return nf_error_set(c->err, NF_ESTATE, "frames: the analysis model holds no operations");
	return rc;
}

/* dma_packets: GPU execution on each context, submitted when their queue packet was queued. */
static int from_dma(struct fr_ctx *c, struct fr_work *w)
{
	static const char sql[] =
		"SELECT d.queue, d.start_ns, d.end_ns, p.thread, coalesce(p.queued_ns, d.start_ns) "
		"FROM dma_packets d LEFT JOIN queue_packets p ON p.queue = d.queue AND p.submit_seq = d.queue_seq "
		"WHERE d.queue IS NOT NULL AND d.start_ns IS NOT NULL ORDER BY d.id";
	sqlite3_stmt *s = NULL;
	int rc = 0, src;

	if (sqlite3_prepare_v2(c->db, sql, -1, &s, NULL) != SQLITE_OK)
		return fr_sql(c, "reading dma_packets");
	while (!rc && (src = sqlite3_step(s)) == SQLITE_ROW) {
		struct item it = { 0 };
		int64_t v = 0;

		rc = lane_index(c, fr_some(sqlite3_column_int64(s, 0)), NULL, &it.lane);
		it.start = fr_some(sqlite3_column_int64(s, 1));
		it.end = fr_col(s, 2, &v) ? fr_some(v) : fr_none;
		it.thread = fr_col(s, 3, &v) ? fr_some(v) : fr_none;
		it.submit = sqlite3_column_int64(s, 4);
		it.busy = true;
		if (!rc)
			rc = add_item(c, w, &it);
	}
	sqlite3_finalize(s);
	if (rc)
		return rc;
	return src == SQLITE_DONE ? 0 : fr_sql(c, "reading dma_packets");
}

static int cmp_ivl(const void *a, const void *b)
{
	const struct fr_ivl *x = a, *y = b;

	return x->s < y->s ? -1 : x->s > y->s;
}

static int64_t table_rows(struct fr_ctx *c, const char *table)
{
	char sql[96];
	sqlite3_stmt *s = NULL;
	bool has = false;
	int64_t n = 0;

	if (fr_has_table(c->db, table, &has) || !has)
		return 0;
	snprintf(sql, sizeof(sql), "SELECT EXISTS (SELECT 1 FROM %s)", table);
	if (sqlite3_prepare_v2(c->db, sql, -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
		n = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return n;
}

int fr_gpu_work(struct fr_ctx *c)
{
	struct fr_work w;
	int rc;

	if (!c->n_frames)
		return 0;
	/* The whole model in memory: one path per frame reads most operations of a
	 * session, and the lazy model's lookups without an index would scan it
	 * each time. */
	if (!c->an && nf_analysis_load(c->db_path, &c->an, c->err))
		return c->err->code;
	rc = work_init(c, &w);
	c->has_jobs = table_rows(c, "jobs") > 0;
	c->has_dma = table_rows(c, "dma_packets") > 0;
	for (size_t i = 0; i < c->n_frames; i++)
		c->frames[i].last_end = INT64_MIN;
	if (!rc && c->has_jobs)
		rc = from_jobs(c, &w);
	else if (!rc && c->has_dma) {
		rc = from_dma(c, &w);
		rc = rc ? rc : from_fence_ops(c, &w, false);
	} else if (!rc) {
		rc = from_fence_ops(c, &w, true);
	}
	for (size_t i = 0; i < c->n_frames && !rc; i++) {
		struct fr_frame *f = &c->frames[i];
		struct fr_ivl *v = w.iv[i];
		size_t n = w.n[i];
		int64_t busy = 0, cs = 0, ce = INT64_MIN;

		if (n > 1) /* none: v may be NULL, which qsort may not take */
			qsort(v, n, sizeof(*v), cmp_ivl);
		for (size_t k = 0; k < n; k++) {
			if (v[k].s > ce) {
				if (ce > cs)
					busy += ce - cs;
				cs = v[k].s;
				ce = v[k].e;
			} else if (v[k].e > ce) {
				ce = v[k].e;
			}
		}
		if (n && ce > cs)
			busy += ce - cs;
		f->busy_ns = busy;
		if (!f->ready.known && f->marker.known && f->last_end != INT64_MIN)
			f->ready = fr_some(f->last_end);
	}
	for (size_t k = 0; k < c->n_accs && !rc; k++) {
		struct fr_lane_acc *a = &c->accs[k];

		if (!c->has_jobs)
			c->frames[a->frame].wait_ns += a->wait;
	}
	work_free(c, &w);
	return rc;
}
