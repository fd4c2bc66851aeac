/*
 * The critical path of a GPU job (Linux kernel sessions, the jobs and job_deps
 * tables of schemas/timeline.sql): the same backwards walk as path.c does over
 * fence operations, over jobs. From the job's finish: it ran on its ring from
 * its start, or from when the ring finished the job run before it (that job
 * held it back: the walk goes on there); before its start it waited for the
 * scheduler, released by its latest dependency (the walk goes on at the job
 * that dependency belongs to) or, without one, merely queued; before the
 * submission of a job the chain reached, the submitting thread ran; a
 * dependency on a fence no job in the trace owns ends the walk at that
 * fence's signal. Each step
 * is one or two SQL lookups (lazy model), so a path costs what it visits.
 */
#include "analysis_int.h"
#include "contract/errors.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A job as the walk sees it. */
struct jp_job {
	int64_t id, thread, submitted, started, finished;
	bool has_thread, has_submitted, has_started, has_finished;
	bool observed;      /* its finish was seen in the trace (not a ring-order bound) */
	char ring[256];     /* empty: unknown */
	char driver[32];
};

static int jp_sql(const struct nf_analysis *a, struct nf_error *err, const char *what)
{
	return nf_error_set(err, NF_ESQL, "reading %s: %s", what, sqlite3_errmsg(a->db));
}

static bool jp_opt(sqlite3_stmt *s, int col, int64_t *v)
{
	if (sqlite3_column_type(s, col) == SQLITE_NULL)
		return false;
	*v = sqlite3_column_int64(s, col);
	return true;
}

/* Job id into *j: 0, NF_ENOENT, NF_ESQL. */
static int jp_get(const struct nf_analysis *a, int64_t id, struct jp_job *j, struct nf_error *err)
{
	sqlite3_stmt *s = NULL;
	int rc;

	if (sqlite3_prepare_v2(a->db, "SELECT thread, submitted_ns, started_ns, finished_ns, "
			       "coalesce(finish_source IN ('event', 'signaled'), 0), ring, driver FROM jobs WHERE id = ?1",
			       -1, &s, NULL) != SQLITE_OK)
		return jp_sql(a, err, "jobs");
	sqlite3_bind_int64(s, 1, id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		const char *ring = (const char *)sqlite3_column_text(s, 5);
		const char *drv = (const char *)sqlite3_column_text(s, 6);

		memset(j, 0, sizeof(*j));
		j->id = id;
		j->has_thread = jp_opt(s, 0, &j->thread);
		j->has_submitted = jp_opt(s, 1, &j->submitted);
		j->has_started = jp_opt(s, 2, &j->started);
		j->has_finished = jp_opt(s, 3, &j->finished);
		j->observed = sqlite3_column_int(s, 4) != 0;
		/* A name past the buffer is taken as unknown (no ring order) rather than cut. */
		if (ring && strlen(ring) < sizeof(j->ring))
			memcpy(j->ring, ring, strlen(ring) + 1);
		snprintf(j->driver, sizeof(j->driver), "%s", drv ? drv : "");
		rc = 0;
	} else if (rc == SQLITE_DONE) {
		rc = nf_error_set(err, NF_ENOENT, "no job %" PRId64, id);
	} else {
		rc = jp_sql(a, err, "jobs");
	}
	sqlite3_finalize(s);
	return rc;
}

int nf_analysis_job(const struct nf_analysis *a, int64_t id, struct nf_job_info *info, struct nf_error *err)
{
	sqlite3_stmt *s = NULL;
	struct jp_job j;
	int rc;

	if (!a->db)
		return nf_error_set(err, NF_ESTATE, "job paths need a model opened lazily");
	if ((rc = jp_get(a, id, &j, err)))
		return rc;
	memset(info, 0, sizeof(*info));
	info->id = id;
	info->thread = j.has_thread ? j.thread : -1;
	memcpy(info->ring, j.ring, sizeof(info->ring));
	memcpy(info->driver, j.driver, sizeof(info->driver));
	info->job = -1;
	if (sqlite3_prepare_v2(a->db, "SELECT job, finish_source FROM jobs WHERE id = ?1", -1, &s, NULL) != SQLITE_OK)
		return jp_sql(a, err, "jobs");
	sqlite3_bind_int64(s, 1, id);
	if (sqlite3_step(s) == SQLITE_ROW) {
		const char *fs = (const char *)sqlite3_column_text(s, 1);

		if (sqlite3_column_type(s, 0) != SQLITE_NULL)
			info->job = sqlite3_column_int64(s, 0);
		if (fs && strlen(fs) < sizeof(info->finish_source))
			memcpy(info->finish_source, fs, strlen(fs) + 1);
	}
	sqlite3_finalize(s);
	return 0;
}

bool nf_analysis_has_jobs(const struct nf_analysis *ca)
{
	sqlite3_stmt *s = NULL;
	bool yes = false;

	if (!ca->db || sqlite3_prepare_v2(ca->db, "SELECT EXISTS (SELECT 1 FROM jobs)", -1, &s, NULL) != SQLITE_OK)
		return false; /* no jobs table: a session of another kind */
	yes = sqlite3_step(s) == SQLITE_ROW && sqlite3_column_int(s, 0) != 0;
	sqlite3_finalize(s);
	return yes;
}

int nf_analysis_job_target(const struct nf_analysis *a, enum nf_cp_target kind, int64_t arg, int64_t *job,
			   struct nf_error *err)
{
	sqlite3_stmt *s = NULL;
	struct jp_job j;
	int rc;

	*job = -1;
	if (!a->db)
		return nf_error_set(err, NF_ESTATE, "job paths need a model opened lazily");
	if (kind == NF_CP_OP) {
		if ((rc = jp_get(a, arg, &j, err)))
			return rc;
		if (!j.has_started || !j.has_finished)
			return nf_error_set(err, NF_ESTATE, "job %" PRId64 " has no %s in the trace: no latency to explain",
					    arg, j.has_started ? "finish" : "start");
		*job = arg;
		return 0;
	}
	if (kind != NF_CP_LAST && kind != NF_CP_AT)
		return nf_error_set(err, NF_EINVAL, "GPU jobs are chosen by id or time, not by queue");
	if (sqlite3_prepare_v2(a->db, "SELECT id FROM jobs WHERE started_ns IS NOT NULL AND finished_ns IS NOT NULL "
			       "AND finish_source IN ('event', 'signaled') AND finished_ns <= ?1 "
			       "ORDER BY finished_ns DESC, id DESC LIMIT 1", -1, &s, NULL) != SQLITE_OK)
		return jp_sql(a, err, "jobs");
	sqlite3_bind_int64(s, 1, kind == NF_CP_AT ? arg : INT64_MAX);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		*job = sqlite3_column_int64(s, 0);
		rc = 0;
	} else if (rc == SQLITE_DONE) {
		rc = nf_error_set(err, NF_ENOENT, kind == NF_CP_AT ? "no GPU job finished by that time"
								 : "no GPU job finished in this session");
	} else {
		rc = jp_sql(a, err, "jobs");
	}
	sqlite3_finalize(s);
	return rc;
}

void nf_job_path_free(struct nf_job_path *path)
{
	free(path->segs);
	memset(path, 0, sizeof(*path));
}

/* Appends a segment (walking backwards: reversed at the end); zero-length ones are dropped. */
static int jp_add(struct nf_job_path *p, size_t *cap, struct nf_job_segment seg, struct nf_error *err)
{
	if (seg.end_ns <= seg.start_ns)
		return 0;
	if (p->n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		struct nf_job_segment *ns = realloc(p->segs, ncap * sizeof(*ns));

		if (!ns)
			return nf_error_set(err, NF_ENOMEM, "out of memory");
		p->segs = ns;
		*cap = ncap;
	}
	p->segs[p->n++] = seg;
	return 0;
}

/* The job run just before j on its ring (by start, then id): *prev, or -1. */
static int jp_prev_on_ring(const struct nf_analysis *a, const struct jp_job *j, int64_t *prev, struct nf_error *err)
{
	sqlite3_stmt *s = NULL;
	int rc;

	*prev = -1;
	if (!j->ring[0])
		return 0;
	if (sqlite3_prepare_v2(a->db, "SELECT id FROM jobs WHERE ring = ?1 AND driver = ?2 AND started_ns IS NOT NULL "
			       "AND (started_ns < ?3 OR (started_ns = ?3 AND id < ?4)) ORDER BY started_ns DESC, id DESC "
			       "LIMIT 1", -1, &s, NULL) != SQLITE_OK)
		return jp_sql(a, err, "jobs");
	sqlite3_bind_text(s, 1, j->ring, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, j->driver, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, j->started);
	sqlite3_bind_int64(s, 4, j->id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*prev = sqlite3_column_int64(s, 0);
	rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : jp_sql(a, err, "jobs");
	sqlite3_finalize(s);
	return rc;
}

/* What released a job last (jp_dep). */
struct jp_release {
	int64_t dep;            /* jobs.id, -1: a fence of no job (then signal) or none */
	int64_t at;             /* its release time */
	bool scheduled;         /* dep's scheduled fence (released at its start) */
	int64_t context, seqno; /* the fence (job_deps) */
	int64_t signal;         /* fence_ops.id of a fence of no job's signal, -1 */
};

/*
 * The dependency of job id released last, after lo and no later than hi:
 * a job's fence (finished, or scheduled: released at that job's start) or a
 * fence no job owns, by its dma_fence signal (on the queue kernel_timelines
 * gives its context, schemas/timeline.sql). r->dep and r->signal are -1
 * when none.
 */
static int jp_dep(const struct nf_analysis *a, int64_t id, int64_t lo, int64_t hi, struct jp_release *r,
		  struct nf_error *err)
{
	sqlite3_stmt *s = NULL;
	int rc;

	memset(r, 0, sizeof(*r));
	r->dep = r->signal = -1;
	if (sqlite3_prepare_v2(a->db, "SELECT d.dep_job, d.dep_fence = 'scheduled', CASE WHEN d.dep_fence = 'scheduled' "
			       "THEN j.started_ns WHEN j.finish_source IN ('event', 'signaled') THEN j.finished_ns END AS r, "
			       "d.dep_context, d.dep_seqno, NULL AS sig "
			       "FROM job_deps d JOIN jobs j ON j.id = d.dep_job WHERE d.job = ?1 AND r > ?2 AND r <= ?3 "
			       "UNION ALL "
			       "SELECT NULL, 0, o.end_ns AS r, d.dep_context, d.dep_seqno, o.id "
			       "FROM job_deps d JOIN kernel_timelines k ON k.context = d.dep_context "
			       "JOIN fence_ops o ON o.queue = k.queue AND o.op = 'signal' "
			       "AND o.value = d.dep_seqno WHERE d.job = ?1 AND d.dep_job IS NULL AND o.end_ns > ?2 "
			       "AND o.end_ns <= ?3 "
			       "ORDER BY r DESC, 1 DESC LIMIT 1", -1, &s, NULL) != SQLITE_OK)
		return jp_sql(a, err, "job_deps");
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int64(s, 2, lo);
	sqlite3_bind_int64(s, 3, hi);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		r->dep = sqlite3_column_type(s, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 0);
		r->scheduled = sqlite3_column_int(s, 1) != 0;
		r->at = sqlite3_column_int64(s, 2);
		r->context = sqlite3_column_int64(s, 3);
		r->seqno = sqlite3_column_int64(s, 4);
		r->signal = sqlite3_column_type(s, 5) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 5);
	}
	rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : jp_sql(a, err, "job_deps");
	sqlite3_finalize(s);
	return rc;
}

/* Steps in a row that do not move back in time, at most (jobs of zero length at one
 * instant could otherwise send the walk round in a circle). */
#define JP_MAX_STILL 100000

int nf_analysis_job_path(const struct nf_analysis *a, int64_t job, struct nf_job_path *path,
			 struct nf_error *err)
{
	struct jp_job x, p;
	size_t cap = 0;
	long still = 0;
	int64_t t, lo, prev, last_t = INT64_MAX;
	bool at_start = false;
	int rc;

	memset(path, 0, sizeof(*path));
	if (!a->db)
		return nf_error_set(err, NF_ESTATE, "job paths need a model opened lazily");
	if ((rc = jp_get(a, job, &x, err)))
		return rc;
	if (!x.has_started || !x.has_finished)
		return nf_error_set(err, NF_ESTATE, "job %" PRId64 " has no %s in the trace: no latency to explain",
				    job, x.has_started ? "finish" : "start");
	path->job = job;
	path->end_ns = x.finished;
	lo = x.has_submitted && x.submitted <= x.started ? x.submitted : x.started;
	/* a latency beyond int64 (times planted at its ends): refused, not wrapped */
	if (__builtin_sub_overflow(x.finished, lo, &(int64_t){ 0 }))
		return nf_error_set(err, NF_EFORMAT, "job %" PRId64 ": from %" PRId64 " ns to %" PRId64
				    " ns: a latency beyond 2^63 ns (the timeline holds impossible times)", job, lo,
				    x.finished);
	path->submitted_ns = lo;
	t = x.finished;
	for (;;) {
		still = t < last_t ? 0 : still + 1;
		last_t = t;
		if (still == JP_MAX_STILL || t < lo) {
			rc = nf_error_set(err, NF_EFORMAT, "job %" PRId64 ": the jobs' times loop back (no path)", job);
			goto out_fail;
		}
		if (!at_start) {
			/* Ran on its ring; held back while the ring finished the job before it. */
			int64_t from = x.started;

			if ((rc = jp_prev_on_ring(a, &x, &prev, err)))
				goto out_fail;
			if (prev >= 0 && (rc = jp_get(a, prev, &p, err)))
				goto out_fail;
			if (prev >= 0 && p.observed && p.has_finished && p.finished > x.started && p.finished < t)
				from = p.finished;
			else
				prev = -1;
			if ((rc = jp_add(path, &cap, (struct nf_job_segment){ NF_JSEG_EXECUTE, x.id, -1, -1, false,
									    from > lo ? from : lo, t, -1, -1, -1 }, err)))
				goto out_fail;
			if (from <= lo)
				break;
			t = from;
			if (prev >= 0) {
				x = p;
				continue;
			}
			at_start = true;
			continue;
		}
		/* t is x's start: released by its last dependency, or merely queued. */
		int64_t sub = x.has_submitted && x.submitted <= t ? x.submitted : t;
		struct jp_release rel;

		if ((rc = jp_dep(a, x.id, sub > lo ? sub : lo, t, &rel, err)))
			goto out_fail;
		if (rel.dep >= 0) {
			if ((rc = jp_add(path, &cap, (struct nf_job_segment){ NF_JSEG_DEP, x.id, -1, rel.dep, rel.scheduled,
									    rel.at, t, -1, -1, -1 }, err)) ||
			    (rc = jp_get(a, rel.dep, &x, err)))
				goto out_fail;
			t = rel.at;
			/* A scheduled fence releases at the dependency's start: its wait to run. */
			at_start = rel.scheduled;
			if (!at_start && (!x.has_started || !x.has_finished)) {
				rc = nf_error_set(err, NF_EFORMAT, "job %" PRId64 ": dependency %" PRId64
						  " has no start", job, x.id);
				goto out_fail;
			}
			continue;
		}
		if (rel.signal >= 0) {
			/* a fence of no job in the trace: waiting for it until its signal, then to run */
			if ((rc = jp_add(path, &cap, (struct nf_job_segment){ NF_JSEG_DEP, x.id, -1, -1, false, rel.at, t,
									    rel.context, rel.seqno, rel.signal }, err)) ||
			    (rc = jp_add(path, &cap, (struct nf_job_segment){ NF_JSEG_FENCE, x.id, -1, -1, false,
									    sub > lo ? sub : lo, rel.at, rel.context,
									    rel.seqno, rel.signal }, err)))
				goto out_fail;
		} else if ((rc = jp_add(path, &cap, (struct nf_job_segment){ NF_JSEG_QUEUED, x.id, -1, -1, false,
									   sub > lo ? sub : lo, t, -1, -1, -1 }, err))) {
			goto out_fail;
		}
		if (sub > lo && (rc = jp_add(path, &cap, (struct nf_job_segment){ NF_JSEG_SUBMIT, x.id,
							x.has_thread ? x.thread : -1, -1, false, lo, sub,
							-1, -1, -1 }, err)))
			goto out_fail;
		break;
	}
	/* Walked backwards: into time order. */
	for (size_t i = 0; i < path->n / 2; i++) {
		struct nf_job_segment tmp = path->segs[i];

		path->segs[i] = path->segs[path->n - 1 - i];
		path->segs[path->n - 1 - i] = tmp;
	}
	return 0;
out_fail:
	nf_job_path_free(path);
	return rc;
}
