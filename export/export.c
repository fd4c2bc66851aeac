/*
 * nf_export: walks a timeline database (schemas/timeline.sql, read-only, as a
 * user's script would) and hands tracks, slices, instants, flows and counters
 * to a writer of the chosen format (perfetto.c, chrome_json.c). See
 * include/contract/export.h for what is written. This file is the entry: the
 * selection checked and turned into SQL, the passes run in order into the
 * writer, the file written aside and renamed; and the helpers every pass uses
 * (events and their arguments). The passes are in tracks.c, flows.c, ops.c,
 * cpu.c, anomalies.c and items.c (walk.h).
 *
 * Streaming: fence_ops is read once in id order; the flows come from two
 * sorted reads of deps merged with it (by wait for the flow's end, by signal
 * for its start), so nothing per operation is kept. What stays in memory is
 * per queue and thread: its track and, per lane, when the lane's last slice
 * ends (a slice goes to the first lane that is free before it starts, so that
 * slices on one track never overlap without nesting).
 */
#include "walk.h"
#include "contract/errors.h"
#include "contract/outfile.h"
#include "contract/timeline.h"
#include "contract/text.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define XOUT_BUFFER ((size_t)1 << 20)

int sql_fail(struct exporter *x, const char *what)
{
	return nf_sql_error(x->db, x->err, "%s", what);
}

int oom(struct exporter *x)
{
	return nf_error_set(x->err, NF_ENOMEM, "out of memory while exporting");
}

/* Prepares sql (an sqlite3_mprintf result, NULL: out of memory) on db and
 * frees it; 0, or the error named by what (NF_ESQL, NF_ENOMEM). */
int prepare_owned(struct exporter *x, sqlite3 *db, char *sql, sqlite3_stmt **st,
			 const char *what)
{
	int rc;

	if (!sql)
		return oom(x);
	rc = sqlite3_prepare_v2(db, sql, -1, st, NULL);
	sqlite3_free(sql);
	if (rc != SQLITE_OK)
		return nf_sql_error(db, x->err, "%s", what);
	return 0;
}

static size_t __attribute__((unused)) put_dec(char *d, uint64_t v)
{
	char tmp[20];
	size_t n = 0, k = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		d[k++] = tmp[--n];
	return k;
}

/* "PREFIX 0xFENCE" (fence unknown: "?"): few distinct names, so they intern. */
void op_name(char *d, const char *prefix, sqlite3_stmt *st, int fcol)
{
	size_t n = strlen(prefix);

	memcpy(d, prefix, n);
	d[n++] = ' ';
	if (col_null(st, fcol))
		d[n++] = '?';
	else
		n += put_hex(d + n, (uint64_t)sqlite3_column_int64(st, fcol));
	d[n] = '\0';
}

/* A made-up tid for a track of process pid. */
int32_t new_tid(struct exporter *x, int32_t pid)
{
	return pid == PID_CPU ? x->next_tid++ : x->next_small_tid++;
}

int describe(struct exporter *x, const struct nf_xtrack *t)
{
	int ret = x->w->track(x->w, t);

	x->st.tracks++;
	return ret;
}

/*
 * The predicate a row with a time span must pass: FROM, its first time, is
 * known and not after the window; TO, its last, is not before it; its queue
 * and fence (alias a) pass the filters.
 */
static char *span_pred(struct exporter *x, const char *a, const char *from, const char *to)
{
	const struct nf_export_options *o = x->opts;
	char col[32];
	char *q, *f, *s = NULL;

	snprintf(col, sizeof(col), "%s.queue", a);
	q = nf_selection_in(&o->sel, NF_SELECTION_QUEUES, col);
	snprintf(col, sizeof(col), "%s.fence", a);
	f = nf_selection_in(&o->sel, NF_SELECTION_FENCES, col);
	if (q && f)
		s = sqlite3_mprintf(" AND %s IS NOT NULL AND %s <= %lld AND %s >= %lld%s%s", from, from,
				    (long long)x->t1, to, (long long)x->t0, q, f);
	sqlite3_free(q);
	sqlite3_free(f);
	return s;
}

/*
 * The predicate an operation (table alias a) must pass to be written: it has
 * a time; it overlaps the window; its queue and fence pass the filters.
 */
static char *op_pred(struct exporter *x, const char *a)
{
	char from[128], to[128];

	snprintf(from, sizeof(from), "coalesce(%s.queued_ns, %s.observed_ns, %s.end_ns)", a, a, a);
	snprintf(to, sizeof(to), "coalesce(%s.end_ns, %s.queued_ns, %s.observed_ns)", a, a, a);
	return span_pred(x, a, from, to);
}

/*
 * The predicate an item (view items, alias a) must pass: it has a time; it
 * overlaps the window (a bound is no end: not counted); its queue and fence
 * pass the filters.
 */
static char *item_pred(struct exporter *x, const char *a)
{
	char from[128], to[128];

	snprintf(from, sizeof(from), "coalesce(%s.queued_ns, %s.start_ns, %s.end_ns)", a, a, a);
	snprintf(to, sizeof(to), "coalesce(%s.end_ns, %s.start_ns, %s.queued_ns)", a, a, a);
	return span_pred(x, a, from, to);
}

/* The predicate a CPU signal (alias a) must pass: window and fence filter. */
static char *cpu_signal_pred(struct exporter *x, const char *a)
{
	const struct nf_export_options *o = x->opts;
	char col[32];
	char *f, *s = NULL;

	snprintf(col, sizeof(col), "%s.fence", a);
	f = nf_selection_in(&o->sel, NF_SELECTION_FENCES, col);
	if (f)
		s = sqlite3_mprintf(" AND %s.ts_ns IS NOT NULL AND %s.ts_ns >= %lld AND %s.ts_ns <= %lld%s",
				    a, a, (long long)x->t0, a, (long long)x->t1, f);
	sqlite3_free(f);
	return s;
}

/* Writes e on its track: slices and instants counted. */
int emit(struct exporter *x, struct nf_xevent *e)
{
	if (e->instant) {
		x->st.instants++;
	} else {
		x->st.slices++;
		if (e->stall_ts >= 0) {
			x->st.slices++;
			x->st.stalls++;
		}
	}
	x->st.flows += e->n_flows_out;
	return x->w->event(x->w, e);
}

static void exporter_release(struct exporter *x)
{
	for (size_t i = 0; i < x->n_adapters; i++)
		free(x->adapters[i].name);
	free(x->adapters);
	for (size_t i = 0; i < x->n_queues; i++) {
		lanes_release(&x->queues[i].lanes);
		free((char *)x->queues[i].anom.name);
		for (int k = 0; k < 3; k++)
			free(x->queues[i].counter_name[k]);
	}
	free(x->queues);
	for (size_t i = 0; i < x->n_threads; i++)
		lanes_release(&x->threads[i].lanes);
	free(x->threads);
	items_release(x);
	lanes_release(&x->session.lanes);
	free((char *)x->session.anom.name);
	for (int k = 0; k < 3; k++)
		free(x->session.counter_name[k]);
	sqlite3_finalize(x->thread_name);
	sqlite3_free(x->op_pred_f);
	sqlite3_free(x->op_pred_s);
	sqlite3_free(x->op_pred_w);
	sqlite3_free(x->cpu_pred_c);
	sqlite3_free(x->cpu_pred);
	sqlite3_free(x->item_pred_i);
	sqlite3_free(x->item_pred_a);
	sqlite3_free(x->item_pred_b);
}

int nf_export_parse_format(const char *name, enum nf_export_format *out, struct nf_error *err)
{
	if (name && !strcmp(name, "perfetto"))
		*out = NF_EXPORT_PERFETTO;
	else if (name && !strcmp(name, "chrome-json"))
		*out = NF_EXPORT_CHROME_JSON;
	else
		return nf_error_set(err, NF_EINVAL, "unknown format '%s' (perfetto or chrome-json)",
				    name ? name : "");
	return 0;
}

/* Runs the passes into the writer. */
static int export_all(struct exporter *x)
{
	struct nf_window win;
	int ret;

	/* The selection names what the timeline has; a window starts before the session's end. */
	if ((ret = nf_selection_check(x->db, &x->opts->sel, x->err)) < 0 ||
	    (x->opts->sel.from_ns >= 0 && (ret = nf_selection_window(x->db, &x->opts->sel, &win, x->err)) < 0) ||
	    (ret = load_adapters(x)) < 0 || (ret = load_queues(x)) < 0)
		return ret;
	if (has_table(x->db, "threads") &&
	    sqlite3_prepare_v2(x->db2, "SELECT name FROM threads WHERE thread = ?1", -1,
			       &x->thread_name, NULL) != SQLITE_OK)
		return sql_fail(x, "reading threads");
	x->op_pred_f = op_pred(x, "f");
	x->op_pred_s = op_pred(x, "s");
	x->op_pred_w = op_pred(x, "w");
	x->cpu_pred_c = cpu_signal_pred(x, "c");
	x->cpu_pred = nf_selection_in(&x->opts->sel, NF_SELECTION_FENCES, "c.fence");
	x->item_pred_i = item_pred(x, "i");
	x->item_pred_a = item_pred(x, "a");
	x->item_pred_b = item_pred(x, "b");
	if (!x->op_pred_f || !x->op_pred_s || !x->op_pred_w || !x->cpu_pred_c || !x->cpu_pred || !x->item_pred_i ||
	    !x->item_pred_a || !x->item_pred_b)
		return oom(x);
	if ((ret = x->w->begin(x->w)) < 0 || (ret = pass_threads(x)) < 0 ||
	    (ret = pass_ops(x)) != 0 ||
	    (ret = pass_cpu_waits(x)) < 0 || (ret = pass_cpu_signals(x)) < 0 ||
	    (ret = pass_anomalies(x)) < 0 || (ret = items_flows_base(x)) < 0 || (ret = pass_items(x)) < 0 ||
	    (ret = pass_frames(x)) < 0)
		return ret;
	if (x->filtered && x->st.slices + x->st.instants + x->st.counters == 0)
		return nf_error_set(x->err, NF_ENOENT,
				    "nothing to export: no operation, CPU wait, CPU signal, anomaly or item "
				    "matches the window and filters");
	return x->w->end(x->w);
}

/* One try of nf_export; *retry set (nothing written) when it is to be made with force_check. */
static int export_once(const char *db_path, const struct nf_export_options *opts,
		       struct nf_export_stats *stats, struct nf_error *err, int force_check, int *retry)
{
	struct exporter x;
	struct nf_xout out;
	struct nf_outfile of = { 0 };
	int ret;

	*retry = 0;
	memset(&x, 0, sizeof(x));
	memset(&out, 0, sizeof(out));
	x.opts = opts;
	x.err = err;
	x.force_check = force_check;
	x.next_uuid = 1;
	x.next_tid = TID_SYNTH0;
	x.next_small_tid = 1;
	x.t0 = opts->sel.from_ns >= 0 ? opts->sel.from_ns : INT64_MIN;
	x.t1 = opts->sel.to_ns >= 0 ? opts->sel.to_ns : INT64_MAX;
	x.filtered = opts->sel.from_ns >= 0 || opts->sel.to_ns >= 0 || opts->sel.n_queues > 0 || opts->sel.n_fences > 0;
	if ((ret = nf_timeline_open_read(db_path, &x.db, err)) < 0 || (ret = nf_timeline_open_read(db_path, &x.db2, err)) < 0 ||
	    (ret = nf_timeline_open_read(db_path, &x.db3, err)) < 0)
		goto out_release;
	out.buf = malloc(XOUT_BUFFER);
	out.cap = XOUT_BUFFER;
	if (!out.buf) {
		ret = oom(&x);
		goto out_release;
	}
	/* Written beside the name and renamed over it when complete (a device or
	 * a pipe in place): a failure leaves the previous file as it was. */
	if ((ret = nf_outfile_open(&of, opts->output, err)) < 0)
		goto out_release;
	out.f = of.f;
	x.w = opts->format == NF_EXPORT_CHROME_JSON ? nf_export_chrome_create(&out)
						     : nf_export_perfetto_create(&out);
	if (!x.w) {
		ret = oom(&x);
		goto out_close;
	}
	/* The file written on a thread of its own while the next buffer fills. */
	nf_xout_start(&out);
	ret = export_all(&x);
	if (ret == 0)
		nf_xout_flush(&out);
	nf_xout_stop(&out);
	if (ret == EXPORT_RETRY) {
		*retry = 1;
		ret = 0;
		goto out_close;  /* the file is not kept */
	}
	if (ret == NF_EIO || out.failed) {
		nf_error_clear(err);
		ret = nf_error_set(err, NF_EIO, "%s: write failed after %" PRIu64 " bytes: %s",
				   opts->output, out.written, strerror(out.err_no ? out.err_no : EIO));
	}
out_close:
	if (x.w)
		x.w->destroy(x.w);
	{
		int crc = nf_outfile_close(&of, ret == 0 && !*retry, err);

		if (ret == 0 && !*retry)
			ret = crc;
	}
out_release:
	x.st.bytes = out.written;
	if (stats)
		*stats = x.st;
	free(out.buf);
	exporter_release(&x);
	sqlite3_close(x.db3);
	sqlite3_close(x.db2);
	sqlite3_close(x.db);
	return ret;
}

int nf_export(const char *db_path, const struct nf_export_options *opts,
	      struct nf_export_stats *stats, struct nf_error *err)
{
	int retry, ret;

	if (!db_path || !opts || !opts->output || !*opts->output)
		return nf_error_set(err, NF_EINVAL, "export: no database or no output file");
	if (opts->sel.n_queues < 0 || (opts->sel.n_queues > 0 && !opts->sel.queues) || opts->sel.n_fences < 0 ||
	    (opts->sel.n_fences > 0 && !opts->sel.fences))
		return nf_error_set(err, NF_EINVAL, "export: bad queue or fence filter");
	if (opts->sel.from_ns < -1 || opts->sel.to_ns < -1)
		return nf_error_set(err, NF_EINVAL, "time window: negative time");
	if (opts->sel.from_ns >= 0 && opts->sel.to_ns >= 0 && opts->sel.to_ns <= opts->sel.from_ns)
		return nf_error_set(err, NF_EINVAL, "time window: end (%" PRId64
				    " ns) is not after start (%" PRId64 " ns)", opts->sel.to_ns, opts->sel.from_ns);
	ret = export_once(db_path, opts, stats, err, 0, &retry);
	if (ret == 0 && retry)
		ret = export_once(db_path, opts, stats, err, 1, &retry);
	return ret;
}
