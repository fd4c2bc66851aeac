/*
 * GPU jobs held back by a dependency (the job_unschedulable table of
 * schemas/timeline.sql, from drm_sched_job_unschedulable): counted for
 * `nftrace check`, with the jobs that had not started when the trace ended.
 * Plain SQL over the timeline: no model is loaded.
 */
#include "analysis_int.h"
#include "contract/errors.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

/* Jobs still waiting listed at most (the rest are counted in jobs). */
#define JB_MAX_LISTED 10000u

void nf_job_blocks_free(struct nf_job_blocks *b)
{
	free(b->waiting);
	memset(b, 0, sizeof(*b));
}

/* A name from the capture, kept whole or not at all (control bytes as '?'). */
static void jb_text(char *out, size_t cap, const char *t)
{
	size_t n = t ? strlen(t) : 0;

	out[0] = '\0';
	if (n >= cap)
		return;
	for (size_t i = 0; i < n; i++)
		out[i] = (unsigned char)t[i] < 0x20 || t[i] == 0x7f ? '?' : t[i];
	out[n] = '\0';
}

static int jb_fail(sqlite3 *db, struct nf_error *err)
{
	return nf_error_set(err, NF_ESQL, "reading job_unschedulable: %s", sqlite3_errmsg(db));
}

int nf_analysis_job_blocks(const char *db_path, struct nf_job_blocks *out, struct nf_error *err)
{
	/* per job held back: its last block; waiting when it never started after it */
	static const char counts[] = "SELECT count(*), count(DISTINCT job) FROM job_unschedulable";
	static const char waiting[] =
		"SELECT u.job, u.ts_ns, u.dep_context, u.dep_seqno, u.dep_job, "
		"  coalesce((SELECT 1 FROM jobs d WHERE d.id = u.dep_job AND d.finish_source IN ('event', 'signaled') "
		"    AND d.finished_ns > u.ts_ns), (SELECT 1 FROM fence_ops o WHERE o.queue = 4294967296 + u.dep_context "
		"    AND o.op = 'signal' AND o.value = u.dep_seqno AND o.end_ns > u.ts_ns), 0), "
		"  j.driver, j.ring, j.context, j.seqno "
		"FROM job_unschedulable u JOIN jobs j ON j.id = u.job "
		"WHERE u.ts_ns = (SELECT max(v.ts_ns) FROM job_unschedulable v WHERE v.job = u.job) "
		"  AND (j.started_ns IS NULL OR j.started_ns < u.ts_ns) GROUP BY u.job ORDER BY u.job";
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	size_t cap = 0;
	int rc = 0, src;

	memset(out, 0, sizeof(*out));
	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		rc = nf_error_set(err, NF_ENOENT, "%s: %s", db_path, db ? sqlite3_errmsg(db) : "cannot open");
		goto out;
	}
	if (sqlite3_prepare_v2(db, counts, -1, &s, NULL) != SQLITE_OK) {
		/* a timeline without the table (an older one, or no GPU jobs): none */
		goto out;
	}
	if (sqlite3_step(s) == SQLITE_ROW) {
		out->events = (size_t)sqlite3_column_int64(s, 0);
		out->jobs = (size_t)sqlite3_column_int64(s, 1);
	}
	sqlite3_finalize(s);
	s = NULL;
	if (!out->events)
		goto out;
	if (sqlite3_prepare_v2(db, waiting, -1, &s, NULL) != SQLITE_OK) {
		rc = jb_fail(db, err);
		goto out;
	}
	while ((src = sqlite3_step(s)) == SQLITE_ROW && out->n_waiting < JB_MAX_LISTED) {
		struct nf_job_waiting *w;

		if (an_grow((void **)&out->waiting, &cap, out->n_waiting + 1, sizeof(*out->waiting))) {
			rc = nf_error_set(err, NF_ENOMEM, "out of memory for the jobs held back");
			goto out;
		}
		w = &out->waiting[out->n_waiting++];
		w->job = sqlite3_column_int64(s, 0);
		w->since_ns = sqlite3_column_int64(s, 1);
		w->dep_context = sqlite3_column_int64(s, 2);
		w->dep_seqno = sqlite3_column_int64(s, 3);
		w->dep_job = sqlite3_column_type(s, 4) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 4);
		w->dep_signaled = sqlite3_column_int(s, 5) != 0;
		jb_text(w->driver, sizeof(w->driver), (const char *)sqlite3_column_text(s, 6));
		jb_text(w->ring, sizeof(w->ring), (const char *)sqlite3_column_text(s, 7));
		w->context = sqlite3_column_type(s, 8) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 8);
		w->seqno = sqlite3_column_type(s, 9) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 9);
	}
	if (src != SQLITE_ROW && src != SQLITE_DONE)
		rc = jb_fail(db, err);
out:
	sqlite3_finalize(s);
	sqlite3_close(db);
	if (rc)
		nf_job_blocks_free(out);
	return rc;
}
