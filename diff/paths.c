/*
 * What `nftrace diff` asks the analysis about one session: its hang
 * findings (nf_analysis_hangs: each keyed by what it is about, with queue
 * names instead of handles, so the same finding is recognised in the other
 * session; not asked when the reader saw that none is possible) and the critical path of its last operation (or, on a kernel
 * capture where none finished, of its last GPU job), summed per actor and
 * kind of segment for a side-by-side view.
 */
#include "diff_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract/capbuf.h"

/* "queue NAME" (or "queue 0x..." when unnamed), as the series name queues. */
static void queue_actor(const struct nf_analysis *a, int64_t queue, char *buf, size_t len)
{
	const char *name = nf_analysis_queue_name(a, queue);

	if (name && *name)
		snprintf(buf, len, "queue %s", name);
	else
		snprintf(buf, len, "queue 0x%" PRIx64, (uint64_t)queue);
}

static void wait_actor(const struct nf_analysis *a, const struct nf_wait_ref *w, char *buf, size_t len)
{
	if (w->queue >= 0)
		queue_actor(a, w->queue, buf, len);
	else if (w->thread >= 0)
		snprintf(buf, len, "thread %" PRId64, w->thread);
	else
		snprintf(buf, len, "a CPU thread");
}

static int hangs(struct dd_session *s, struct nf_error *err)
{
	struct nf_analysis *a = NULL;
	struct nf_hang_report rep = { 0 };
	struct nf_error e;
	int all = -1, kind_series[NF_HANG_KINDS];
	int rc;

	for (size_t i = 0; i < s->n_series; i++)
		if (s->series[i].metric == DM_FINDINGS && s->series[i].scope == DS_ALL)
			all = (int)i;
	nf_error_clear(&e);
	/* every wait ended and no fence's value can have gone down: no finding, and no
	 * pass over the operations to find none */
	rc = s->may_hang ? nf_analysis_load_open(s->db, &a, &e) : 0;
	if (!rc && a)
		rc = nf_analysis_hangs(a, &rep, &e);
	if (rc == NF_ENOMEM) {
		nf_analysis_destroy(a);
		return nf_error_set(err, NF_ENOMEM, "%s: %s", s->dir, e.msg);
	}
	if (rc) { /* the hang check could not run: said, not compared */
		snprintf(s->hangs_why, sizeof(s->hangs_why), "the hang check failed: %.120s", e.msg);
		nf_analysis_destroy(a);
		return 0;
	}
	s->hangs_ok = true;
	if (all >= 0)
		s->series[all].has_value = true;
	for (int k = 0; k < NF_HANG_KINDS; k++) {
		kind_series[k] = -1;
		if (k == NF_HANG_PENDING) /* not a finding: the session ended mid-frame */
			continue;
		if ((kind_series[k] = dd_series_new(s, DM_FINDINGS, DS_KIND, nf_hang_kind_name((enum nf_hang_kind)k))) <
		    0)
			goto out_nomem;
		s->series[kind_series[k]].has_value = true;
	}
	for (size_t i = 0; i < rep.n; i++) {
		const struct nf_hang_finding *f = &rep.f[i];
		char who[400], key[600];

		if (f->kind == NF_HANG_PENDING || f->kind >= NF_HANG_KINDS)
			continue;
		if (f->kind == NF_HANG_LOWERED) {
			snprintf(key, sizeof(key), "lowered: fence 0x%" PRIx64 " from %" PRId64 " to %" PRId64,
				 (uint64_t)f->fence, f->prev_value, f->value);
		} else {
			wait_actor(a, &f->wait, who, sizeof(who));
			snprintf(key, sizeof(key), "%s: %s waits fence 0x%" PRIx64 " >= %" PRId64,
				 nf_hang_kind_name(f->kind), who, (uint64_t)f->wait.fence, f->wait.value);
		}
		/* the same finding twice (two waits alike) counts twice, keyed apart */
		for (int dup = 2; dd_names_find(&s->findings, key) >= 0; dup++) {
			size_t l = strlen(key);

			snprintf(key + (l > 580 ? 580 : l), sizeof(key) - (l > 580 ? 580 : l), " #%d", dup);
		}
		if (dd_names_get(&s->findings, key) < 0)
			goto out_nomem;
		s->series[kind_series[f->kind]].value++;
		if (all >= 0)
			s->series[all].value++;
	}
	nf_hang_report_free(&rep);
	nf_analysis_destroy(a);
	return 0;
out_nomem:
	nf_hang_report_free(&rep);
	nf_analysis_destroy(a);
	return nf_error_set(err, NF_ENOMEM, "%s: out of memory", s->dir);
}

static int cp_add(struct dd_session *s, const char *actor, const char *kind, int64_t ns)
{
	size_t cap = s->n_cp;

	for (size_t i = 0; i < s->n_cp; i++)
		if (s->cp[i].kind == kind && !strcmp(s->cp[i].actor, actor)) {
			s->cp[i].ns += ns;
			return 0;
		}
	if (nf_array_reserve((void **)&s->cp, &cap, s->n_cp + 1, sizeof(*s->cp), 0, 0))
		return NF_ENOMEM;
	if (!(s->cp[s->n_cp].actor = strdup(actor)))
		return NF_ENOMEM;
	s->cp[s->n_cp].kind = kind;
	s->cp[s->n_cp].ns = ns;
	s->n_cp++;
	return 0;
}

static const char *seg_kind(enum nf_seg_kind k)
{
	return k == NF_SEG_WAIT ? "wait" : k == NF_SEG_EXECUTE ? "execute" : "queue";
}

static const char *job_seg_kind(enum nf_job_seg_kind k)
{
	return k == NF_JSEG_EXECUTE ? "execute" : k == NF_JSEG_DEP ? "dependency" : k == NF_JSEG_QUEUED ? "queued"
												 : "submit";
}

static int op_path(struct dd_session *s, struct nf_analysis *a, int64_t op, struct nf_error *e)
{
	struct nf_cp_path p = { 0 };
	struct nf_op_info oi;
	char actor[400];
	int rc;

	if ((rc = nf_analysis_critical_path(a, op, &p, e)))
		return rc;
	if (!nf_analysis_op(a, op, &oi)) {
		if (oi.on_queue)
			queue_actor(a, oi.queue, actor, sizeof(actor));
		else
			snprintf(actor, sizeof(actor), "thread %" PRId64, oi.thread);
		snprintf(s->cp_what, sizeof(s->cp_what), "op %" PRId64 " (%s on %.250s)", op, oi.is_signal ? "signal" : "wait",
			 actor);
	} else {
		snprintf(s->cp_what, sizeof(s->cp_what), "op %" PRId64, op);
	}
	s->cp_latency = p.end_ns - p.queued_ns;
	for (size_t i = 0; i < p.n && !rc; i++) {
		const struct nf_cp_segment *g = &p.segs[i];

		if (!g->on_thread)
			queue_actor(a, g->queue, actor, sizeof(actor));
		else if (g->thread >= 0)
			snprintf(actor, sizeof(actor), "thread %" PRId64, g->thread);
		else
			snprintf(actor, sizeof(actor), "a CPU thread");
		rc = cp_add(s, actor, seg_kind(g->kind), g->end_ns - g->start_ns);
	}
	nf_cp_path_free(&p);
	return rc;
}

static int job_path(struct dd_session *s, struct nf_analysis *a, struct nf_error *e)
{
	struct nf_job_path p = { 0 };
	struct nf_job_info ji;
	char actor[400];
	int64_t job;
	int rc;

	if ((rc = nf_analysis_job_target(a, NF_CP_LAST, 0, &job, e)) || (rc = nf_analysis_job_path(a, job, &p, e)))
		return rc;
	if (!nf_analysis_job(a, job, &ji, e))
		snprintf(s->cp_what, sizeof(s->cp_what), "job %" PRId64 " (%s %s)", job, ji.driver,
			 ji.ring[0] ? ji.ring : "?");
	else
		snprintf(s->cp_what, sizeof(s->cp_what), "job %" PRId64, job);
	s->cp_latency = p.end_ns - p.submitted_ns;
	for (size_t i = 0; i < p.n && !rc; i++) {
		const struct nf_job_segment *g = &p.segs[i];

		if (g->kind == NF_JSEG_SUBMIT)
			snprintf(actor, sizeof(actor), "thread %" PRId64, g->thread);
		else if (!nf_analysis_job(a, g->job, &ji, e) && ji.ring[0])
			snprintf(actor, sizeof(actor), "ring %s %s", ji.driver, ji.ring);
		else
			snprintf(actor, sizeof(actor), "ring ?");
		rc = cp_add(s, actor, job_seg_kind(g->kind), g->end_ns - g->start_ns);
	}
	nf_job_path_free(&p);
	return rc;
}

static int critical_path(struct dd_session *s, struct nf_error *err)
{
	struct nf_analysis *a = NULL;
	struct nf_error e;
	int64_t op;
	int rc;

	nf_error_clear(&e);
	rc = nf_analysis_open_lazy(s->db, &a, &e);
	if (!rc) {
		rc = nf_analysis_target(a, NF_CP_LAST, 0, &op, &e);
		if (!rc) {
			rc = op_path(s, a, op, &e);
		} else if ((rc == NF_ENOENT || rc == NF_ESTATE) && nf_analysis_has_jobs(a)) {
			nf_error_clear(&e);
			rc = job_path(s, a, &e);
		}
	}
	nf_analysis_destroy(a);
	if (rc == NF_ENOMEM)
		return nf_error_set(err, NF_ENOMEM, "%s: %s", s->dir, e.msg[0] ? e.msg : "out of memory");
	if (rc) {
		snprintf(s->cp_why, sizeof(s->cp_why), "%.190s", e.msg[0] ? e.msg : nf_strerror(rc));
		for (size_t i = 0; i < s->n_cp; i++)
			free(s->cp[i].actor);
		s->n_cp = 0;
		return 0;
	}
	s->cp_ok = true;
	return 0;
}

int dd_session_paths(struct dd_session *s, struct nf_error *err)
{
	int rc = hangs(s, err);

	return rc ? rc : critical_path(s, err);
}
