/*
 * Each frame's critical path, from the previous frame's present (CPUStart; a
 * swap chain's first frame: its own present) to the blank it was shown at
 * (else its ready time, else its present), as segments that tile that
 * interval exactly, and the one line that says what decided the frame.
 *
 * The GPU part is analysis's walk (nf_analysis_critical_path_since, or
 * nf_analysis_job_path for GPU jobs) back from the operation that ends the
 * frame's work: the present fence's signal (nftrace sessions), else the job
 * or fence operation of the frame that ended last. What no operation of the
 * capture explains is said as such ('gpu': its GPU work; 'cpu': the thread
 * until it presented), and the display's part is the flip waiting for its
 * blank ('display'). Segments hold numbers only (a session's path can have a
 * segment per operation); their words are made for the blame line here and,
 * for readers, by the frame_path view (schemas/timeline.sql).
 */
#include "frames_int.h"
#include "contract/errors.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const fr_kind_name[FK_COUNT] = { "execute", "wait", "queue", "job_wait", "gpu", "display", "cpu" };

struct segs {
	struct fr_seg *v;
	size_t n, cap;
};

static struct fr_seg *seg_add(struct fr_ctx *c, struct segs *s, int64_t start, int64_t end, int kind)
{
	struct fr_seg *g;

	if (s->n == s->cap && fr_grow((void **)&s->v, &s->cap, s->n + 1, sizeof(*s->v))) {
		nf_error_set(c->err, NF_ENOMEM, "out of memory (frame paths)");
		return NULL;
	}
	g = &s->v[s->n++];
	g->start = start;
	g->end = end;
	g->queue = g->thread = g->display = g->op = g->job = g->fence = g->value = FR_NONE;
	g->release_op = g->by_queue = g->by_thread = g->extra = FR_NONE;
	g->ring = -1;
	g->kind = (uint8_t)kind;
	g->sub = 0;
	return g;
}

static void queue_label(const struct fr_ctx *c, int64_t q, char *out, size_t len)
{
	const char *name = nf_analysis_queue_name(c->an, q);

	if (name)
		snprintf(out, len, "queue 0x%" PRIx64 " (%.60s)", (uint64_t)q, name);
	else
		snprintf(out, len, "queue 0x%" PRIx64, (uint64_t)q);
}

static void thread_label(int64_t t, char *out, size_t len)
{
	if (t != FR_NONE)
		snprintf(out, len, "thread %" PRId64, t);
	else
		snprintf(out, len, "a thread the capture does not name");
}

static const char *display_name(const struct fr_ctx *c, int64_t d)
{
	for (size_t i = 0; i < c->n_displays && d != FR_NONE; i++)
		if (c->displays[i].display == d)
			return c->displays[i].name;
	return "?";
}

/* What the segment's actor did, without the actor. */
static void doing_text(const struct fr_ctx *c, const struct fr_seg *g, char *buf, size_t len)
{
	char by[96] = "";

	switch (g->kind) {
	case FK_WAIT:
		if (g->by_queue != FR_NONE) {
			char q[80];

			queue_label(c, g->by_queue, q, sizeof(q));
			snprintf(by, sizeof(by), ", signaled by %s", q);
		} else if (g->by_thread != FR_NONE) {
			snprintf(by, sizeof(by), ", signaled by thread %" PRId64, g->by_thread);
		}
		snprintf(buf, len, "waiting on fence 0x%" PRIx64 " >= %" PRId64 "%s", (uint64_t)g->fence, g->value, by);
		break;
	case FK_EXECUTE:
		if (g->op != FR_NONE)
			snprintf(buf, len, "executing op %" PRId64, g->op);
		else
			snprintf(buf, len, "executing job %" PRId64, g->job);
		break;
	case FK_QUEUE:
		if (g->op != FR_NONE)
			snprintf(buf, len, "running until it queued op %" PRId64, g->op);
		else if (g->job != FR_NONE)
			snprintf(buf, len, "running until it submitted job %" PRId64, g->job);
		else if (g->extra != FR_NONE)
			snprintf(buf, len, "running until it signaled from the CPU (cpu signal %" PRId64 ")", g->extra);
		else
			snprintf(buf, len, "running");
		break;
	default:
		buf[0] = '\0';
	}
}

void fr_seg_text(const struct fr_ctx *c, const struct fr_seg *g, char *buf, size_t len)
{
	char who[96], doing[200];

	switch (g->kind) {
	case FK_WAIT: case FK_EXECUTE: case FK_QUEUE:
		if (g->queue != FR_NONE)
			queue_label(c, g->queue, who, sizeof(who));
		else if (g->ring >= 0)
			snprintf(who, sizeof(who), "ring %.60s", c->rings[g->ring]);
		else
			thread_label(g->thread, who, sizeof(who));
		doing_text(c, g, doing, sizeof(doing));
		snprintf(buf, len, "%s %s", who, doing);
		break;
	case FK_JOB_WAIT:
		if (g->extra != FR_NONE)
			snprintf(buf, len, "job %" PRId64 " waiting to run until job %" PRId64 " %s", g->job, g->extra,
				 g->sub ? "was scheduled" : "finished");
		else
			snprintf(buf, len, "job %" PRId64 " queued on ring %.60s, waiting to run", g->job,
				 g->ring >= 0 ? c->rings[g->ring] : "?");
		break;
	case FK_GPU:
		snprintf(buf, len, "GPU work of the frame until it was done (the capture has no fence operation or job on it)");
		break;
	case FK_DISPLAY:
		if (g->extra != FR_NONE)
			snprintf(buf, len, "the flip waiting for blank %" PRId64 " of display %.60s", g->extra,
				 display_name(c, g->display));
		else
			snprintf(buf, len, "the flip waiting to be latched on display %.60s", display_name(c, g->display));
		break;
	case FK_CPU:
		thread_label(g->thread, who, sizeof(who));
		snprintf(buf, len, "%s until it %s", who, g->sub ? "wrote the frame's marker" : "presented");
		break;
	default:
		buf[0] = '\0';
	}
}

/* analysis's segments of an operation's path. */
static int add_op_path(struct fr_ctx *c, struct segs *s, const struct nf_cp_path *p)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct nf_cp_segment *x = &p->segs[i];
		struct fr_seg *g = seg_add(c, s, x->start_ns, x->end_ns,
					   x->kind == NF_SEG_WAIT ? FK_WAIT : x->kind == NF_SEG_EXECUTE ? FK_EXECUTE : FK_QUEUE);

		if (!g)
			return NF_ENOMEM;
		if (x->on_thread) {
			if (x->thread >= 0)
				g->thread = x->thread;
		} else {
			g->queue = x->queue;
		}
		if (x->op_id >= 0)
			g->op = x->op_id;
		if (x->kind == NF_SEG_QUEUE && x->cpu_signal >= 0)
			g->extra = x->cpu_signal;
		if (x->kind == NF_SEG_WAIT) {
			struct nf_op_info ri;

			g->fence = x->fence;
			g->value = x->value;
			if (x->release_op >= 0) {
				g->release_op = x->release_op;
				if (!nf_analysis_op(c->an, x->release_op, &ri)) {
					if (ri.on_queue)
						g->by_queue = ri.queue;
					else if (ri.thread >= 0)
						g->by_thread = ri.thread;
				}
			} else if (i > 0 && p->segs[i - 1].on_thread && p->segs[i - 1].cpu_signal >= 0 &&
				   p->segs[i - 1].thread >= 0) {
				g->by_thread = p->segs[i - 1].thread; /* released by that thread's CPU signal */
			}
		}
	}
	return 0;
}

static int32_t ring_index(struct fr_ctx *c, const char *ring)
{
	for (size_t i = 0; i < c->n_rings; i++)
		if (!strcmp(c->rings[i], ring))
			return (int32_t)i;
	if (fr_grow((void **)&c->rings, &c->cap_rings, c->n_rings + 1, sizeof(*c->rings))) {
		nf_error_set(c->err, NF_ENOMEM, "out of memory (rings)");
		return -2;
	}
	snprintf(c->rings[c->n_rings], sizeof(c->rings[0]), "%.63s", ring);
	return (int32_t)c->n_rings++;
}

/* A job's path (jobpath.c), cut at t0; before its submission, the submitting thread. */
static int add_job_path(struct fr_ctx *c, struct segs *s, int64_t job, int64_t t0, int64_t *end)
{
	struct nf_job_path p;
	struct nf_job_info ji;
	int rc;

	if (!c->jobs_an && (rc = nf_analysis_open_lazy(c->db_path, &c->jobs_an, c->err)))
		return rc;
	rc = nf_analysis_job_path(c->jobs_an, job, &p, c->err);
	if (rc)
		return rc;
	*end = p.end_ns;
	if (p.submitted_ns > t0 && !nf_analysis_job(c->jobs_an, job, &ji, c->err)) {
		struct fr_seg *g = seg_add(c, s, t0, p.submitted_ns, FK_QUEUE);

		if (!g) {
			nf_job_path_free(&p);
			return NF_ENOMEM;
		}
		if (ji.thread >= 0)
			g->thread = ji.thread;
		g->job = job;
	}
	for (size_t i = 0; i < p.n && !rc; i++) {
		const struct nf_job_segment *x = &p.segs[i];
		int64_t st = x->start_ns < t0 ? t0 : x->start_ns;
		struct nf_job_info xi;
		int kind = x->kind == NF_JSEG_EXECUTE ? FK_EXECUTE : x->kind == NF_JSEG_SUBMIT ? FK_QUEUE : FK_JOB_WAIT;
		struct fr_seg *g;

		if (x->end_ns <= st)
			continue;
		if (!(g = seg_add(c, s, st, x->end_ns, kind))) {
			rc = NF_ENOMEM;
			break;
		}
		g->job = x->job;
		if (nf_analysis_job(c->jobs_an, x->job, &xi, c->err)) {
			rc = c->err->code;
			break;
		}
		if (xi.ring[0] && (g->ring = ring_index(c, xi.ring)) < -1)
			rc = NF_ENOMEM;
		if (x->kind == NF_JSEG_DEP) {
			g->extra = x->dep_job;
			g->sub = x->dep_scheduled;
		} else if (x->kind == NF_JSEG_SUBMIT && x->thread >= 0) {
			g->thread = x->thread;
		}
	}
	nf_job_path_free(&p);
	return rc;
}

static void ms_text(char *out, size_t len, int64_t ns)
{
	snprintf(out, len, "%.3f ms", (double)ns / 1e6);
}

/* queued_ns of fence_ops row id, or -1 when unknown. */
static int64_t op_queued(struct fr_ctx *c, int64_t id)
{
	int64_t v = -1;

	if (!c->st_queued &&
	    sqlite3_prepare_v2(c->db, "SELECT queued_ns FROM fence_ops WHERE id = ?1", -1, &c->st_queued, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(c->st_queued, 1, id);
	if (sqlite3_step(c->st_queued) == SQLITE_ROW && sqlite3_column_type(c->st_queued, 0) != SQLITE_NULL)
		v = sqlite3_column_int64(c->st_queued, 0);
	sqlite3_reset(c->st_queued);
	return v;
}

static bool on_actor(const struct fr_seg *g, int64_t queue, int64_t thread)
{
	return queue != FR_NONE ? g->queue == queue : thread != FR_NONE && g->queue == FR_NONE && g->thread == thread;
}

/*
 * The one line. The segment that decided the frame is the longest of its
 * GPU side (from its present on; the thread's time before the present is its
 * CPU frame), else of its whole path but the display's wait, else that wait.
 * Time a queue spent waiting on a fence is on the path as the signaler's
 * time: when the chosen segment is the signaler's, the line names the wait
 * it held up (queue, fence, value), the signaler, and whether the signal was
 * queued after the wait (itself queued late by its thread).
 */
static void blame_line(struct fr_ctx *c, struct fr_frame *f)
{
	int32_t best = -1;
	char d[32], prefix[96] = "", tail[160] = "", what[300];

	for (int pass = 0; pass < 3 && best < 0; pass++)
		for (size_t i = 0; i < f->n_path; i++) {
			const struct fr_seg *g = &f->path[i];
			bool cpu_frame = g->queue == FR_NONE && g->ring < 0 &&
					 (g->kind == FK_QUEUE || g->kind == FK_CPU || g->kind == FK_WAIT) &&
					 g->end <= f->present_ns;
			bool ok = pass == 0 ? g->kind != FK_DISPLAY && !cpu_frame
				  : pass == 1 ? g->kind != FK_DISPLAY : true;

			if (ok && (best < 0 || g->end - g->start > f->path[best].end - f->path[best].start))
				best = (int32_t)i;
		}
	f->blame_seg = best;
	f->blame_long = best;
	if (best < 0)
		return;
	const struct fr_seg *g = &f->path[best];
	int64_t dur = g->end - g->start;

	if (f->late.known && f->late.v && f->late_ns.known) {
		ms_text(d, sizeof(d), f->late_ns.v);
		snprintf(prefix, sizeof(prefix), "missed its blank by %s: ", d);
	} else if (f->late.known && f->late.v && f->missed.known) {
		snprintf(prefix, sizeof(prefix), "late by %" PRId64 " blank%s: ", f->missed.v, f->missed.v == 1 ? "" : "s");
	}
	ms_text(d, sizeof(d), dur);
	f->blame_ns = dur;
	if (g->kind != FK_WAIT && g->kind != FK_DISPLAY) {
		/* the wait this segment's actor released, further on the path */
		for (size_t k = (size_t)best + 1; k < f->n_path; k++) {
			const struct fr_seg *w = &f->path[k];

			if (w->kind != FK_WAIT)
				continue;
			if (!on_actor(g, w->by_queue, w->by_thread))
				break;
			char who[96], by[96], doing[200];
			int64_t wq = w->op != FR_NONE ? op_queued(c, w->op) : -1;
			int64_t sq = w->release_op != FR_NONE ? op_queued(c, w->release_op) : -1;

			if (w->queue != FR_NONE)
				queue_label(c, w->queue, who, sizeof(who));
			else
				thread_label(w->thread, who, sizeof(who));
			if (w->by_queue != FR_NONE)
				queue_label(c, w->by_queue, by, sizeof(by));
			else
				snprintf(by, sizeof(by), "thread %" PRId64, w->by_thread);
			if (wq >= 0 && sq > wq) {
				/* the signal was queued after the wait: the thread that queued it was late */
				for (int32_t j = best; j >= 0; j--)
					if (f->path[j].kind == FK_QUEUE && f->path[j].thread != FR_NONE) {
						snprintf(tail, sizeof(tail), ", itself queued late by thread %" PRId64
							 " (%.3f ms after the wait)", f->path[j].thread, (double)(sq - wq) / 1e6);
						break;
					}
			}
			doing_text(c, g, doing, sizeof(doing));
			if (!doing[0])
				fr_seg_text(c, g, doing, sizeof(doing));
			snprintf(f->blame, sizeof(f->blame), "%s%s %s waiting on fence 0x%" PRIx64 " >= %" PRId64
				 ", signaled late by %s, %.150s%s", prefix, d, who, (uint64_t)w->fence, w->value, by, doing, tail);
			f->blame_seg = (int32_t)k;
			return;
		}
	}
	fr_seg_text(c, g, what, sizeof(what));
	snprintf(f->blame, sizeof(f->blame), "%s%s %s", prefix, d, what);
}

/* The path of an operation from t0; NF_ESTATE (it never ended) gives none. */
static int op_path(struct fr_ctx *c, struct segs *s, int64_t op, int64_t t0, int64_t *cur)
{
	struct nf_cp_path p;
	int rc = nf_analysis_critical_path_since(c->an, op, t0, &p, c->err);

	if (rc == NF_ESTATE) {
		nf_error_clear(c->err);
		return 0;
	}
	if (!rc) {
		rc = add_op_path(c, s, &p);
		if (p.n)
			*cur = p.end_ns;
		nf_cp_path_free(&p);
	}
	return rc;
}

static int frame_path(struct fr_ctx *c, struct fr_frame *f)
{
	struct segs s = { 0 };
	int64_t t0 = f->cpu_start.known ? f->cpu_start.v : f->present_ns;
	bool shown = !strcmp(f->status, "displayed") && f->screen.known;
	int64_t t_end = shown ? f->screen.v : f->ready.known ? f->ready.v : f->present_ns;
	int64_t cur = t0;
	struct fr_seg *g;
	int rc = 0;

	if (t_end <= t0)
		return 0;
	if (f->op.known) {
		rc = op_path(c, &s, f->op.v, t0, &cur);
	} else if (f->last_job.known && c->has_jobs) {
		int64_t end = cur;

		rc = add_job_path(c, &s, f->last_job.v, t0, &end);
		if (rc == NF_ESTATE || rc == NF_ENOENT) {
			nf_error_clear(c->err);
			rc = 0;
			s.n = 0;
		} else if (!rc && s.n) {
			cur = end;
		}
	} else if (f->last_op.known && (!f->ready.known || f->last_op_end <= f->ready.v) && f->last_op_end > t0) {
		rc = op_path(c, &s, f->last_op.v, t0, &cur);
	}
	if (rc)
		goto out;
	if (cur == t0) {
		/* nothing of the capture's operations: the thread until it presented */
		int64_t e = f->present_ns < t_end ? f->present_ns : t_end;

		if (e > cur) {
			if (!(g = seg_add(c, &s, cur, e, FK_CPU))) {
				rc = NF_ENOMEM;
				goto out;
			}
			g->thread = f->thread.known ? f->thread.v : FR_NONE;
			g->sub = f->marker.known;
			cur = e;
		}
	}
	if (f->ready.known && f->ready.v > cur && cur < t_end) {
		int64_t e = f->ready.v < t_end ? f->ready.v : t_end;

		if (!(g = seg_add(c, &s, cur, e, FK_GPU))) {
			rc = NF_ENOMEM;
			goto out;
		}
		g->queue = f->queue.known ? f->queue.v : FR_NONE;
		cur = e;
	}
	if (shown && t_end > cur) {
		if (!(g = seg_add(c, &s, cur, t_end, FK_DISPLAY))) {
			rc = NF_ENOMEM;
			goto out;
		}
		g->display = f->display.known ? f->display.v : FR_NONE;
		g->extra = f->vblank_seq.known ? f->vblank_seq.v : FR_NONE;
		cur = t_end;
	}
	/* what a path walked past the frame's end is cut there (a ready time after its blank) */
	size_t k = 0;
	for (size_t i = 0; i < s.n; i++) {
		if (s.v[i].end > t_end)
			s.v[i].end = t_end;
		if (s.v[i].end > s.v[i].start)
			s.v[k++] = s.v[i];
	}
	s.n = k;
	f->path = s.v;
	f->n_path = s.n;
	s.v = NULL;
	blame_line(c, f);
	if (f->blame_seg >= 0)
		f->blame_at = f->path[f->blame_seg];
	rc = fr_write_path(c, f);
	free(f->path); /* a session's paths can hold a segment per operation: not kept */
	f->path = NULL;
out:
	free(s.v);
	return rc;
}

int fr_paths(struct fr_ctx *c)
{
	int rc = 0;

	if (c->n_frames && !c->an && nf_analysis_load(c->db_path, &c->an, c->err))
		return c->err->code;
	for (size_t i = 0; i < c->n_frames && !rc; i++)
		rc = frame_path(c, &c->frames[i]);
	return rc;
}
