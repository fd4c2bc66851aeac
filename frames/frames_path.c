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
 * blank ('display'). The blame is the longest wait on the path (a queue or a
 * thread waiting on a fence: which fence, which value, who signaled it), else
 * its longest segment.
 */
#include "frames_int.h"
#include "contract/errors.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct segs {
	struct fr_seg *v;
	size_t n, cap;
};

static struct fr_seg *seg_add(struct fr_ctx *c, struct segs *s, int64_t start, int64_t end, const char *kind)
{
	struct fr_seg *g;

	if (fr_grow((void **)&s->v, &s->cap, s->n + 1, sizeof(*s->v))) {
		nf_error_set(c->err, NF_ENOMEM, "out of memory (frame paths)");
		return NULL;
	}
	g = &s->v[s->n++];
	memset(g, 0, sizeof(*g));
	g->start = start;
	g->end = end;
	g->kind = kind;
	return g;
}

static void queue_label(struct fr_ctx *c, int64_t q, char *out, size_t len)
{
	const char *name = nf_analysis_queue_name(c->an, q);

	if (name)
		snprintf(out, len, "queue 0x%" PRIx64 " (%.60s)", (uint64_t)q, name);
	else
		snprintf(out, len, "queue 0x%" PRIx64, (uint64_t)q);
}

static void thread_label(struct fr_opt t, char *out, size_t len)
{
	if (t.known)
		snprintf(out, len, "thread %" PRId64, t.v);
	else
		snprintf(out, len, "a thread the capture does not name");
}

/* analysis's segments of an operation's path, from t0 on. */
static int add_op_path(struct fr_ctx *c, struct segs *s, const struct nf_cp_path *p)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct nf_cp_segment *x = &p->segs[i];
		struct fr_seg *g = seg_add(c, s, x->start_ns, x->end_ns,
					   x->kind == NF_SEG_WAIT ? "wait" : x->kind == NF_SEG_EXECUTE ? "execute" : "queue");
		char who[96];

		if (!g)
			return NF_ENOMEM;
		if (x->on_thread) {
			if (x->thread >= 0)
				g->thread = fr_some(x->thread);
			thread_label(g->thread, who, sizeof(who));
		} else {
			g->queue = fr_some(x->queue);
			queue_label(c, x->queue, who, sizeof(who));
		}
		if (x->op_id >= 0)
			g->op = fr_some(x->op_id);
		if (x->kind == NF_SEG_WAIT) {
			struct nf_op_info ri;

			g->fence = fr_some(x->fence);
			g->value = fr_some(x->value);
			if (x->release_op >= 0) {
				g->release_op = fr_some(x->release_op);
				if (!nf_analysis_op(c->an, x->release_op, &ri)) {
					if (ri.on_queue)
						g->by_queue = fr_some(ri.queue);
					else if (ri.thread >= 0)
						g->by_thread = fr_some(ri.thread);
				}
			} else if (i > 0 && p->segs[i - 1].on_thread && p->segs[i - 1].cpu_signal >= 0 &&
				   p->segs[i - 1].thread >= 0) {
				g->by_thread = fr_some(p->segs[i - 1].thread); /* released by that thread's CPU signal */
			}
			char by[96] = "";

			if (g->by_queue.known) {
				char q[80];

				queue_label(c, g->by_queue.v, q, sizeof(q));
				snprintf(by, sizeof(by), ", signaled by %s", q);
			} else if (g->by_thread.known) {
				snprintf(by, sizeof(by), ", signaled by thread %" PRId64, g->by_thread.v);
			}
			snprintf(g->doing, sizeof(g->doing), "waiting on fence 0x%" PRIx64 " >= %" PRId64 "%s",
				 (uint64_t)x->fence, x->value, by);
		} else if (x->kind == NF_SEG_EXECUTE) {
			snprintf(g->doing, sizeof(g->doing), "executing op %" PRId64, x->op_id);
		} else if (x->op_id >= 0) {
			snprintf(g->doing, sizeof(g->doing), "running until it queued op %" PRId64, x->op_id);
		} else if (x->cpu_signal >= 0) {
			snprintf(g->doing, sizeof(g->doing), "running until it signaled from the CPU (cpu signal %" PRId64 ")",
				 x->cpu_signal);
		} else {
			snprintf(g->doing, sizeof(g->doing), "running");
		}
		snprintf(g->what, sizeof(g->what), "%s %s", who, g->doing);
	}
	return 0;
}

/* A job's path (jobpath.c), cut at t0; before its submission, the submitting thread. */
static int add_job_path(struct fr_ctx *c, struct segs *s, int64_t job, int64_t t0, int64_t *end)
{
	struct nf_job_path p;
	struct nf_job_info ji;
	int rc = nf_analysis_job_path(c->an, job, &p, c->err);

	if (rc)
		return rc;
	*end = p.end_ns;
	if (p.submitted_ns > t0 && !nf_analysis_job(c->an, job, &ji, c->err)) {
		struct fr_seg *g = seg_add(c, s, t0, p.submitted_ns, "queue");

		if (!g) {
			nf_job_path_free(&p);
			return NF_ENOMEM;
		}
		if (ji.thread >= 0)
			g->thread = fr_some(ji.thread);
		g->job = fr_some(job);
		snprintf(g->what, sizeof(g->what), "%s running until it submitted job %" PRId64,
			 ji.thread >= 0 ? "its thread" : "a thread the capture does not name", job);
		if (ji.thread >= 0)
			snprintf(g->what, sizeof(g->what), "thread %" PRId64 " running until it submitted job %" PRId64,
				 ji.thread, job);
	}
	for (size_t i = 0; i < p.n; i++) {
		const struct nf_job_segment *x = &p.segs[i];
		int64_t st = x->start_ns < t0 ? t0 : x->start_ns;
		struct nf_job_info xi;
		const char *kind = x->kind == NF_JSEG_EXECUTE ? "execute" : x->kind == NF_JSEG_SUBMIT ? "queue"
											: "job_wait";
		struct fr_seg *g;

		if (x->end_ns <= st)
			continue;
		if (!(g = seg_add(c, s, st, x->end_ns, kind))) {
			rc = NF_ENOMEM;
			break;
		}
		g->job = fr_some(x->job);
		if (nf_analysis_job(c->an, x->job, &xi, c->err)) {
			rc = c->err->code;
			break;
		}
		snprintf(g->ring, sizeof(g->ring), "%.63s", xi.ring);
		switch (x->kind) {
		case NF_JSEG_EXECUTE:
			snprintf(g->what, sizeof(g->what), "ring %.60s executing job %" PRId64, xi.ring, x->job);
			break;
		case NF_JSEG_DEP:
			snprintf(g->what, sizeof(g->what), "job %" PRId64 " waiting to run until job %" PRId64 " %s",
				 x->job, x->dep_job, x->dep_scheduled ? "was scheduled" : "finished");
			break;
		case NF_JSEG_QUEUED:
			snprintf(g->what, sizeof(g->what), "job %" PRId64 " queued on ring %.60s, waiting to run",
				 x->job, xi.ring);
			break;
		case NF_JSEG_SUBMIT:
			if (x->thread >= 0)
				g->thread = fr_some(x->thread);
			snprintf(g->what, sizeof(g->what), "thread %" PRId64 " running until it submitted job %" PRId64,
				 x->thread, x->job);
			break;
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

static bool same_actor(const struct fr_seg *g, struct fr_opt queue, struct fr_opt thread)
{
	return queue.known ? g->queue.known && g->queue.v == queue.v : thread.known && g->thread.known && g->thread.v == thread.v;
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
	char d[32], prefix[96] = "", tail[160] = "";

	for (int pass = 0; pass < 3 && best < 0; pass++)
		for (size_t i = 0; i < f->n_path; i++) {
			const struct fr_seg *g = &f->path[i];
			bool cpu_frame = (g->thread.known || !strcmp(g->kind, "cpu")) && !g->queue.known &&
					 g->end <= f->present_ns;
			bool ok = pass == 0 ? strcmp(g->kind, "display") != 0 && !cpu_frame
				  : pass == 1 ? strcmp(g->kind, "display") != 0 : true;

			if (ok && (best < 0 || g->end - g->start > f->path[best].end - f->path[best].start))
				best = (int32_t)i;
		}
	f->blame_seg = best;
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
	if (strcmp(g->kind, "wait") != 0 && strcmp(g->kind, "display") != 0) {
		/* the wait this segment's actor released, further on the path */
		for (size_t k = (size_t)best + 1; k < f->n_path; k++) {
			const struct fr_seg *w = &f->path[k];

			if (strcmp(w->kind, "wait") != 0)
				continue;
			if (!same_actor(g, w->by_queue, w->by_thread))
				break;
			char who[96], by[96];
			int64_t wq = w->op.known ? op_queued(c, w->op.v) : -1;
			int64_t sq = w->release_op.known ? op_queued(c, w->release_op.v) : -1;

			if (w->queue.known)
				queue_label(c, w->queue.v, who, sizeof(who));
			else
				thread_label(w->thread, who, sizeof(who));
			if (w->by_queue.known)
				queue_label(c, w->by_queue.v, by, sizeof(by));
			else
				snprintf(by, sizeof(by), "thread %" PRId64, w->by_thread.v);
			if (wq >= 0 && sq > wq) {
				/* the signal was queued after the wait: the CPU thread that queued it was late */
				for (int32_t j = best; j >= 0; j--)
					if (!strcmp(f->path[j].kind, "queue") && f->path[j].thread.known) {
						snprintf(tail, sizeof(tail), ", itself queued late by thread %" PRId64
							 " (%.3f ms after the wait)", f->path[j].thread.v, (double)(sq - wq) / 1e6);
						break;
					}
			}
			snprintf(f->blame, sizeof(f->blame), "%s%s %s waiting on fence 0x%" PRIx64 " >= %" PRId64
				 ", signaled late by %s, %.150s%s", prefix, d, who, (uint64_t)w->fence.v, w->value.v, by,
				 g->doing[0] ? g->doing : g->what, tail);
			f->blame_seg = (int32_t)k;
			f->blame_ns = dur;
			return;
		}
	}
	f->blame_ns = dur;
	snprintf(f->blame, sizeof(f->blame), "%s%s %s", prefix, d, g->what);
}

static int frame_path(struct fr_ctx *c, struct fr_frame *f)
{
	struct segs s = { 0 };
	int64_t t0 = f->cpu_start.known ? f->cpu_start.v : f->present_ns;
	bool shown = !strcmp(f->status, "displayed") && f->screen.known;
	int64_t t_end = shown ? f->screen.v : f->ready.known ? f->ready.v : f->present_ns;
	int64_t cur = t0;
	int rc = 0;

	if (t_end <= t0)
		return 0;
	if (f->op.known) {
		struct nf_cp_path p;

		rc = nf_analysis_critical_path_since(c->an, f->op.v, t0, &p, c->err);
		if (rc == NF_ESTATE) { /* its signal never ended: no path through it */
			nf_error_clear(c->err);
			rc = 0;
		} else if (!rc) {
			rc = add_op_path(c, &s, &p);
			if (p.n)
				cur = p.end_ns;
			nf_cp_path_free(&p);
		}
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
		struct nf_cp_path p;

		rc = nf_analysis_critical_path_since(c->an, f->last_op.v, t0, &p, c->err);
		if (rc == NF_ESTATE) {
			nf_error_clear(c->err);
			rc = 0;
		} else if (!rc) {
			rc = add_op_path(c, &s, &p);
			if (p.n)
				cur = p.end_ns;
			nf_cp_path_free(&p);
		}
	}
	if (rc)
		goto out;
	if (cur == t0) {
		/* nothing of the capture's operations: the thread until it presented */
		int64_t e = f->present_ns < t_end ? f->present_ns : t_end;

		if (e > cur) {
			struct fr_seg *g = seg_add(c, &s, cur, e, "cpu");
			char who[64];

			if (!g) {
				rc = NF_ENOMEM;
				goto out;
			}
			g->thread = f->thread;
			thread_label(f->thread, who, sizeof(who));
			snprintf(g->what, sizeof(g->what), "%s until it %s", who,
				 f->marker.known ? "wrote the frame's marker" : "presented");
			cur = e;
		}
	}
	if (f->ready.known && f->ready.v > cur && cur < t_end) {
		int64_t e = f->ready.v < t_end ? f->ready.v : t_end;
		struct fr_seg *g = seg_add(c, &s, cur, e, "gpu");

		if (!g) {
			rc = NF_ENOMEM;
			goto out;
		}
		g->queue = f->queue;
		snprintf(g->what, sizeof(g->what), "GPU work of the frame until it was done (the capture has no fence operation or job on it)");
		cur = e;
	}
	if (shown && t_end > cur) {
		struct fr_seg *g = seg_add(c, &s, cur, t_end, "display");
		const char *dn = NULL;

		if (!g) {
			rc = NF_ENOMEM;
			goto out;
		}
		g->display = f->display;
		for (size_t i = 0; i < c->n_displays && f->display.known; i++)
			if (c->displays[i].display == f->display.v)
				dn = c->displays[i].name;
		if (f->vblank_seq.known)
			snprintf(g->what, sizeof(g->what), "the flip waiting for blank %" PRId64 " of display %.60s",
				 f->vblank_seq.v, dn ? dn : "?");
		else
			snprintf(g->what, sizeof(g->what), "the flip waiting to be latched on display %.60s", dn ? dn : "?");
		cur = t_end;
	}
	/* what a path walked past the frame's end is cut there (a ready time after its blank) */
	for (size_t i = 0; i < s.n; i++)
		if (s.v[i].end > t_end)
			s.v[i].end = t_end;
	size_t k = 0;
	for (size_t i = 0; i < s.n; i++)
		if (s.v[i].end > s.v[i].start)
			s.v[k++] = s.v[i];
	s.n = k;
	f->path = s.v;
	f->n_path = s.n;
	s.v = NULL;
	blame_line(c, f);
out:
	free(s.v);
	return rc;
}

int fr_paths(struct fr_ctx *c)
{
	int rc = 0;

	if (c->n_frames && !c->an && nf_analysis_open_lazy(c->db_path, &c->an, c->err))
		return c->err->code;
	for (size_t i = 0; i < c->n_frames && !rc; i++)
		rc = frame_path(c, &c->frames[i]);
	return rc;
}
