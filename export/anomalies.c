/*
 * The anomalies: an instant per row on its queue's "anomalies" track (the
 * session's when it names no queue), and per queue and log a counter of the
 * entries lost so far.
 */
#include "walk.h"
#include "contract/errors.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int log_slot(const char *log)
{
	if (log && !strcmp(log, "waits"))
		return 0;
	if (log && !strcmp(log, "signals"))
		return 1;
	return 2;
}

/* The queue's (or the session's) "anomalies" child track, described on first use. */
static int anomaly_track(struct exporter *x, struct xqueue *q, const struct nf_xtrack **out)
{
	struct nf_xtrack base;
	int ret;

	if (!q->anom.uuid) {
		char nm[NAME_MAX_LEN + 128];

		if (q == &x->session) {
			if ((ret = session_ensure(x)) < 0)
				return ret;
		} else if (q->lanes.n == 0 && ((ret = queue_base(x, q, &base)) < 0 ||
					       (ret = lanes_add(x, &q->lanes, &base)) < 0)) {
			return ret;
		}
		snprintf(nm, sizeof(nm), "%s anomalies", q->lanes.name);
		q->anom.kind = NF_XT_PLAIN;
		q->anom.uuid = x->next_uuid++;
		q->anom.parent = q->lanes.v[0].t.uuid;
		q->anom.pid = q->lanes.v[0].t.pid;
		q->anom.tid = new_tid(x, q->anom.pid);
		q->anom.sort = q->lanes.v[0].t.sort;
		q->anom.name = strdup(nm);
		if (!q->anom.name)
			return oom(x);
		if ((ret = describe(x, &q->anom)) < 0)
			return ret;
	}
	*out = &q->anom;
	return 0;
}

static int counter_track(struct exporter *x, struct xqueue *q, int slot, const char *log,
			 const struct nf_xtrack **out)
{
	struct nf_xtrack *t = &q->counter[slot];
	const struct nf_xtrack *a;
	int ret;

	if (!t->uuid) {
		char nm[NAME_MAX_LEN + 160];

		if ((ret = anomaly_track(x, q, &a)) < 0)
			return ret;
		snprintf(nm, sizeof(nm), "%s %.*s lost entries", q->lanes.name, 64,
			 slot == 0 ? "waits" : slot == 1 ? "signals" : log && *log ? log : "events");
		if (!(q->counter_name[slot] = strdup(nm)))
			return oom(x);
		t->kind = NF_XT_COUNTER;
		t->uuid = x->next_uuid++;
		t->parent = q->lanes.v[0].t.uuid;
		t->pid = q->lanes.v[0].t.pid;
		t->name = q->counter_name[slot];
		if ((ret = describe(x, t)) < 0)
			return ret;
	}
	*out = t;
	return 0;
}

/*
 * anomalies: an instant per row with a time on its queue's anomalies track,
 * and for rows with lost entries the running total on the queue and log's
 * counter (rows in time order per queue and log, so the total only grows).
 */
int pass_anomalies(struct exporter *x)
{
	const struct nf_export_options *o = x->opts;
	sqlite3_stmt *st = NULL;
	char *qf = nf_selection_in(&o->sel, NF_SELECTION_QUEUES, "queue"), *sql = NULL;
	int rc, ret = 0;

	if (!qf)
		return oom(x);
	sql = sqlite3_mprintf("SELECT id, kind, queue, log, coalesce(first_ns, last_ns), last_ns, "
			      "lost_entries, detail FROM anomalies WHERE coalesce(first_ns, last_ns) "
			      "IS NOT NULL AND coalesce(first_ns, last_ns) <= %lld "
			      "AND coalesce(last_ns, first_ns) >= %lld%s "
			      "ORDER BY queue, log, coalesce(first_ns, last_ns), id",
			      (long long)x->t1, (long long)x->t0, qf);
	sqlite3_free(qf);
	if ((ret = prepare_owned(x, x->db, sql, &st, "reading anomalies")) < 0)
		return ret;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct xqueue *q = &x->session;
		const char *kind = (const char *)sqlite3_column_text(st, 1);
		const char *log = (const char *)sqlite3_column_text(st, 3);
		const char *detail = (const char *)sqlite3_column_text(st, 7);
		int64_t ts = sqlite3_column_int64(st, 4), lost = col_or(st, 6, 0);
		struct nf_xevent e;
		char name[128];

		if (!col_null(st, 2)) {
			q = find_queue(x, sqlite3_column_int64(st, 2));
			if (!q && !(q = add_queue(x, sqlite3_column_int64(st, 2)))) {
				ret = oom(x);
				break;
			}
		}
		memset(&e, 0, sizeof(e));
		e.stall_ts = -1;
		e.instant = 1;
		if ((ret = anomaly_track(x, q, &e.track)) < 0)
			break;
		if (lost > 0)
			snprintf(name, sizeof(name), "%.40s: %" PRId64 " lost", kind ? kind : "anomaly", lost);
		else
			snprintf(name, sizeof(name), "%.40s", kind ? kind : "anomaly");
		e.ts = e.end = ts;
		e.name = name;
		e.cat = "anomaly";
		arg_int(&e, "anomaly id", sqlite3_column_int64(st, 0));
		arg_str(&e, "kind", kind ? kind : "");
		if (log)
			arg_str(&e, "log", log);
		if (!col_null(st, 5))
			arg_int(&e, "last_ns", sqlite3_column_int64(st, 5));
		arg_int(&e, "lost entries", lost);
		arg_str(&e, "detail", detail ? detail : "");
		if ((ret = emit(x, &e)) < 0)
			break;
		if (lost > 0) {
			int slot = log_slot(log);
			const struct nf_xtrack *ct = NULL;

			if ((ret = counter_track(x, q, slot, log, &ct)) < 0)
				break;
			q->lost_total[slot] += lost;
			x->st.counters++;
			if ((ret = x->w->counter(x->w, ct, col_or(st, 5, ts), q->lost_total[slot])) < 0)
				break;
		}
	}
	if (ret == 0 && rc != SQLITE_DONE)
		ret = sql_fail(x, "reading anomalies");
	sqlite3_finalize(st);
	return ret;
}
