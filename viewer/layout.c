/*
 * The viewer's page layout: reads the session facts (meta), the queues and
 * adapters, and the CPU threads from the timeline database, resolves the time
 * window and places the rows. It decides where things go; render.c and
 * paint.c decide how they look. Tests use the same functions to find boxes in
 * a rendered image.
 */
#include "layout.h"
#include "contract/errors.h"
#include "kernel_rows.h"
#include "etw_rows.h"
#include "contract/timeline.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract/capbuf.h"
#include "contract/text.h"

#define NF_RENDER_MAX_ROWS 4096

static int sql_fail(sqlite3 *db, struct nf_error *err, const char *what)
{
	return nf_sql_error(db, err, "%s", what);
}

const char *const nf_render_legend_labels[NF_RENDER_LEGEND_ITEMS] = {
	"wait",
	"stall (observed \xE2\x86\x92 end)",
	"signal",
	"CPU wait",
	"CPU signal",
	"queued (wait, signal)",
	"signal \xE2\x86\x92 released wait",
	"no end known",
	"end unmatched",
	"op lost",
	"lost span",
	"zero timestamp",
	"repeated timestamp",
	"other anomaly",
};

const char *const nf_render_legend_etw_labels[NF_RENDER_LEGEND_ETW_ITEMS] = {
	"DMA packet (node rows)",
	"VSync",
};

/*
 * The width of a legend label at 11 px DejaVu Sans, estimated from above per
 * character class (its advances: narrow punctuation and i, l, t, f, j, r
 * under 4.6 px; m, M, W under 11 px; other capitals, w and the arrow under
 * 9.6 px; other letters and digits under 7 px).
 */
static double legend_text_w(const char *label)
{
	double w = 0;

	for (const unsigned char *p = (const unsigned char *)label; *p; p++) {
		if ((*p & 0xC0) == 0x80)
			continue;  /* inside a UTF-8 sequence: counted at its lead byte */
		if (strchr(" il.,:;!|'()/[]jtfr", *p))
			w += 4.6;
		else if (*p == 'm' || *p == 'M' || *p == 'W')
			w += 11.0;
		else if ((*p >= 'A' && *p <= 'Z') || *p == 'w' || *p >= 0x80)
			w += 9.6;
		else
			w += 7.0;
	}
	return w;
}

/* Places the legend items left to right, wrapping before the right margin. */
static void place_legend(struct nf_render_layout *lay)
{
	double x = 16, y = NF_RENDER_TITLE_H;
	int n = NF_RENDER_LEGEND_ITEMS + (lay->etw ? NF_RENDER_LEGEND_ETW_ITEMS : 0);

	lay->legend_lines = 1;
	for (int i = 0; i < n; i++) {
		const char *label = i < NF_RENDER_LEGEND_ITEMS ? nf_render_legend_labels[i]
				    : nf_render_legend_etw_labels[i - NF_RENDER_LEGEND_ITEMS];
		double w = 22 + 6 + legend_text_w(label) + 14;

		if (x + w > lay->width - 16 && x > 16) {
			x = 16;
			y += NF_RENDER_LEGEND_H;
			lay->legend_lines++;
		}
		if (i < NF_RENDER_LEGEND_ITEMS) {
			lay->legend_x[i] = x;
			lay->legend_y[i] = y;
		} else {
			lay->legend_etw_x[i - NF_RENDER_LEGEND_ITEMS] = x;
			lay->legend_etw_y[i - NF_RENDER_LEGEND_ITEMS] = y;
		}
		x += w;
	}
}

char *nf_render_in_list(const char *col, const int64_t *v, int n)
{
	size_t cap = strlen(col) + 16 + (size_t)(n > 0 ? n : 0) * 22;
	char *s = malloc(cap);
	size_t len;

	if (!s)
		return NULL;
	s[0] = '\0';
	if (n <= 0)
		return s;
	len = (size_t)snprintf(s, cap, " AND %s IN (", col);
	for (int i = 0; i < n; i++)
		len += (size_t)snprintf(s + len, cap - len, "%s%" PRId64, i ? "," : "", v[i]);
	snprintf(s + len, cap - len, ")");
	return s;
}

/* Copies a text column into a fixed buffer (truncating), "" for NULL. */
static void copy_text(char *dst, size_t len, sqlite3_stmt *st, int col)
{
	const unsigned char *t = sqlite3_column_text(st, col);

	snprintf(dst, len, "%s", t ? (const char *)t : "");
}

static int read_meta(sqlite3 *db, struct nf_render_layout *lay, struct nf_error *err)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(db, "SELECT key, value FROM meta WHERE key IN "
				   "('duration_ns','source','mode','seed','scenario')",
			       -1, &st, NULL) != SQLITE_OK)
		return sql_fail(db, err, "reading meta");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *key = (const char *)sqlite3_column_text(st, 0);

		if (!key || sqlite3_column_type(st, 1) == SQLITE_NULL)
			continue;
		if (strcmp(key, "duration_ns") == 0) {
			sqlite3_int64 d = sqlite3_column_int64(st, 1);

			if (d > 0) {
				lay->session_end = d;
				lay->has_duration = 1;
			}
		} else if (strcmp(key, "source") == 0) {
			copy_text(lay->source, sizeof(lay->source), st, 1);
		} else if (strcmp(key, "mode") == 0) {
			copy_text(lay->mode, sizeof(lay->mode), st, 1);
		} else if (strcmp(key, "seed") == 0) {
			copy_text(lay->seed, sizeof(lay->seed), st, 1);
		} else if (strcmp(key, "scenario") == 0) {
			copy_text(lay->scenario, sizeof(lay->scenario), st, 1);
		}
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return sql_fail(db, err, "reading meta");
	return 0;
}

/* Without meta.duration_ns: the last time anything happened (a full scan). */
static int scan_session_end(sqlite3 *db, struct nf_render_layout *lay, struct nf_error *err)
{
	static const char sql[] =
		"SELECT max(coalesce((SELECT max(max(coalesce(queued_ns,0), coalesce(observed_ns,0),"
		" coalesce(end_ns,0))) FROM fence_ops), 0),"
		" coalesce((SELECT max(max(start_ns, coalesce(end_ns,0))) FROM cpu_waits), 0),"
		" coalesce((SELECT max(ts_ns) FROM cpu_signals), 0),"
		" coalesce((SELECT max(max(coalesce(first_ns,0), coalesce(last_ns,0))) FROM anomalies), 0))";
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return sql_fail(db, err, "finding the session end");
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		lay->session_end = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW)
		return sql_fail(db, err, "finding the session end");
	return 0;
}


/* A fence filter naming no fence of the timeline is a user error, as a queue's is. */
static int check_fences(sqlite3 *db, const struct nf_render_options *opts, struct nf_error *err)
{
	sqlite3_stmt *st;
	int ret = 0;

	if (!opts->fences || opts->n_fences <= 0)
		return 0;
	if (sqlite3_prepare_v2(db, "SELECT 1 FROM fences WHERE fence = ?1", -1, &st, NULL) != SQLITE_OK)
		return sql_fail(db, err, "checking --fence");
	for (int i = 0; i < opts->n_fences && ret == 0; i++) {
		int rc;

		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, opts->fences[i]);
		rc = sqlite3_step(st);
		if (rc == SQLITE_DONE)
			ret = nf_error_set(err, NF_ENOENT, "fence 0x%" PRIx64 ": not in the timeline",
					   (uint64_t)opts->fences[i]);
		else if (rc != SQLITE_ROW)
			ret = sql_fail(db, err, "checking --fence");
	}
	sqlite3_finalize(st);
	return ret;
}

static int resolve_window(sqlite3 *db, const struct nf_render_options *opts,
			  struct nf_render_layout *lay, struct nf_error *err)
{
	int rc;

	if (opts->from_ns < -1 || opts->to_ns < -1)
		return nf_error_set(err, NF_EINVAL, "time window: negative time");
	if (!lay->has_duration && (rc = scan_session_end(db, lay, err)) < 0)
		return rc;
	if ((rc = check_fences(db, opts, err)) < 0)
		return rc;
	/* A window after the session's end would draw an empty page: an error, not a picture. */
	if (opts->from_ns >= 0 && lay->session_end > 0 && opts->from_ns >= lay->session_end) {
		char a[32], b[32];

		nf_text_duration(a, sizeof(a), opts->from_ns);
		nf_text_duration(b, sizeof(b), lay->session_end);
		return nf_error_set(err, NF_EINVAL,
				    "time window: start %s is not before the session's end (%s)", a, b);
	}
	lay->t0 = opts->from_ns >= 0 ? opts->from_ns : 0;
	lay->t1 = opts->to_ns >= 0 ? opts->to_ns : lay->session_end;
	if (opts->to_ns < 0 && lay->t1 <= lay->t0)
		lay->t1 = lay->t0 + 1000;  /* an empty session: a 1 µs window */
	if (lay->t1 <= lay->t0)
		return nf_error_set(err, NF_EINVAL,
				    "time window: end (%" PRId64 " ns) is not after start (%" PRId64
				    " ns)", lay->t1, lay->t0);
	return 0;
}

static int push_row(struct nf_render_layout *lay, size_t *cap, const struct nf_render_row *r,
		    struct nf_error *err)
{
	if (lay->n_rows + 1 > NF_RENDER_MAX_ROWS * 3)
		return nf_error_set(err, NF_ENOMEM, "too many rows to draw; filter queues");
	if (nf_array_reserve((void **)&lay->rows, cap, lay->n_rows + 1, sizeof(*lay->rows), 32,
			     NF_RENDER_MAX_ROWS * 3))
		return nf_error_set(err, NF_ENOMEM, "out of memory for rows");
	lay->rows[lay->n_rows++] = *r;
	return 0;
}

static int in_filter(const int64_t *v, int n, int64_t x)
{
	if (!v)
		return 1;
	for (int i = 0; i < n; i++)
		if (v[i] == x)
			return 1;
	return 0;
}

/* A queue row before grouping: what sorts it. */
struct queue_info {
	int64_t queue, adapter, engine, node;
	char name[96], adapter_name[96];
	int n_sub[2];     /* sub-lanes of its wait and signal lanes (the depth pass) */
	int64_t shared;
};

static int cmp_queue(const void *a, const void *b)
{
	const struct queue_info *x = a, *y = b;
	/* Unknown adapters (-1) sort last. */
	uint64_t ax = (uint64_t)x->adapter, ay = (uint64_t)y->adapter;

	if (ax != ay)
		return ax < ay ? -1 : 1;
	/* An engine is (node ordinal, engine ordinal): node first. */
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	if (x->engine != y->engine)
		return x->engine < y->engine ? -1 : 1;
	if (x->queue != y->queue)
		return x->queue < y->queue ? -1 : 1;
	return 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static int add_queue(struct queue_info **qs, size_t *n, size_t *cap, const struct queue_info *q,
		     struct nf_error *err)
{
	if (*n + 1 > NF_RENDER_MAX_ROWS * 2)
		return nf_error_set(err, NF_ENOMEM, "too many queues to draw; filter queues");
	if (nf_array_reserve((void **)qs, cap, *n + 1, sizeof(**qs), 16, NF_RENDER_MAX_ROWS * 2))
		return nf_error_set(err, NF_ENOMEM, "out of memory for queues");
	(*qs)[(*n)++] = *q;
	return 0;
}

static int64_t col_int_or(sqlite3_stmt *st, int col, int64_t dflt)
{
	return sqlite3_column_type(st, col) == SQLITE_NULL ? dflt : sqlite3_column_int64(st, col);
}

/*
 * The queues: the rows of the queues table (the analyzer gives every queue the
 * operations or logs name a row, so fence_ops need not be scanned for them).
 */
static int load_queues(sqlite3 *db, const struct nf_render_options *opts,
		       struct queue_info **out, size_t *n_out, struct nf_error *err)
{
	sqlite3_stmt *st = NULL;
	struct queue_info *qs = NULL, q;
	size_t n = 0, cap = 0;
	int rc, ret = 0;

	/* The dma_fence timelines of GPU jobs' fences are drawn as the jobs' rings
	 * (unless queues are asked for by name). */
	if (sqlite3_prepare_v2(db, opts->queues ? "SELECT q.queue, q.adapter, q.engine, q.node, q.name, a.name "
				   "FROM queues q LEFT JOIN adapters a ON a.adapter = q.adapter"
				   : "SELECT q.queue, q.adapter, q.engine, q.node, q.name, a.name "
				   "FROM queues q LEFT JOIN adapters a ON a.adapter = q.adapter WHERE q.queue NOT IN "
				   "(SELECT 4294967296 + context FROM job_timelines UNION ALL SELECT 4294967296 + "
				   "finished_context FROM job_timelines UNION ALL SELECT 4294967296 + scheduled_context "
				   "FROM job_timelines WHERE scheduled_context IS NOT NULL)",
			       -1, &st, NULL) != SQLITE_OK) {
		ret = sql_fail(db, err, "reading queues");
		goto out_finalize;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		memset(&q, 0, sizeof(q));
		q.queue = sqlite3_column_int64(st, 0);
		q.adapter = col_int_or(st, 1, -1);
		q.engine = col_int_or(st, 2, -1);
		q.node = col_int_or(st, 3, -1);
		copy_text(q.name, sizeof(q.name), st, 4);
		copy_text(q.adapter_name, sizeof(q.adapter_name), st, 5);
		if (!in_filter(opts->queues, opts->n_queues, q.queue))
			continue;
		if ((ret = add_queue(&qs, &n, &cap, &q, err)) < 0)
			goto out_finalize;
	}
	if (rc != SQLITE_DONE) {
		ret = sql_fail(db, err, "reading queues");
		goto out_finalize;
	}
	/* A queue asked for that the timeline does not have is a user error. */
	for (int i = 0; opts->queues && i < opts->n_queues; i++) {
		size_t k;

		for (k = 0; k < n && qs[k].queue != opts->queues[i]; k++)
			;
		if (k == n) {
			ret = nf_error_set(err, NF_ENOENT, "queue 0x%" PRIx64 ": not in the timeline",
					   (uint64_t)opts->queues[i]);
			goto out_finalize;
		}
	}
	if (n)
		qsort(qs, n, sizeof(*qs), cmp_queue);
	*out = qs;
	*n_out = n;
	qs = NULL;
out_finalize:
	free(qs);
	sqlite3_finalize(st);
	return ret;
}

static int place_queue_rows(struct nf_render_layout *lay, const struct queue_info *qs, size_t n,
			    size_t *cap, double *y, struct nf_error *err)
{
	struct nf_render_row r;
	int ret;

	for (size_t i = 0; i < n; i++) {
		const struct queue_info *q = &qs[i];

		if (i == 0 || q->adapter != qs[i - 1].adapter) {
			memset(&r, 0, sizeof(r));
			r.kind = NF_ROW_ADAPTER;
			r.id = q->adapter;
			r.adapter = q->adapter;
			snprintf(r.name, sizeof(r.name), "%s", q->adapter_name);
			r.y = *y;
			r.h = NF_RENDER_ADAPTER_H;
			*y += r.h;
			if ((ret = push_row(lay, cap, &r, err)) < 0)
				return ret;
		}
		if ((q->engine >= 0 || q->node >= 0) &&
		    (i == 0 || q->adapter != qs[i - 1].adapter || q->node != qs[i - 1].node ||
		     q->engine != qs[i - 1].engine)) {
			memset(&r, 0, sizeof(r));
			r.kind = NF_ROW_ENGINE;
			r.id = q->engine;
			r.adapter = q->adapter;
			r.engine = q->engine;
			r.node = q->node;
			r.y = *y;
			r.h = lay->etw ? NF_RENDER_NODE_H : NF_RENDER_ENGINE_H;
			*y += r.h;
			if ((ret = push_row(lay, cap, &r, err)) < 0)
				return ret;
		}
		memset(&r, 0, sizeof(r));
		r.kind = NF_ROW_QUEUE;
		r.id = q->queue;
		r.adapter = q->adapter;
		r.engine = q->engine;
		r.node = q->node;
		snprintf(r.name, sizeof(r.name), "%s", q->name);
		r.n_sub[0] = q->n_sub[0] > 1 ? q->n_sub[0] : 1;
		r.n_sub[1] = q->n_sub[1] > 1 ? q->n_sub[1] : 1;
		r.shared = q->shared;
		lay->shared += q->shared;
		r.y = *y;
		/* Stacked lanes grow the row: 5 px above, 4 between, 5 below. */
		r.h = NF_RENDER_QUEUE_H - 32.0 + r.n_sub[0] * nf_render_sublane_h(r.n_sub[0]) +
		      r.n_sub[1] * nf_render_sublane_h(r.n_sub[1]);
		*y += r.h;
		if ((ret = push_row(lay, cap, &r, err)) < 0)
			return ret;
		lay->n_queues++;
	}
	return 0;
}

/* The GPU rings of Linux kernel jobs, one row each, under a header. */
static int place_ring_rows(sqlite3 *db, const struct nf_render_options *opts, struct nf_render_layout *lay,
			   size_t *cap, double *y, struct nf_error *err)
{
	sqlite3_stmt *st = NULL;
	struct nf_render_row r;
	int rc, ret = 0;

	if (opts->queues || (opts->fences && opts->n_fences > 0))
		return 0;
	if (sqlite3_prepare_v2(db, "SELECT driver, coalesce(ring, ''), count(*) FROM jobs GROUP BY 1, 2 "
				   "ORDER BY 1, 2", -1, &st, NULL) != SQLITE_OK)
		return sql_fail(db, err, "reading GPU rings");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (lay->n_rings == 0) {
			memset(&r, 0, sizeof(r));
			r.kind = NF_ROW_RING_HEAD;
			r.adapter = -1;
			r.y = *y;
			r.h = NF_RENDER_ADAPTER_H;
			*y += r.h;
			if ((ret = push_row(lay, cap, &r, err)) < 0)
				goto out;
		}
		memset(&r, 0, sizeof(r));
		r.kind = NF_ROW_RING;
		r.id = (int64_t)lay->n_rings;
		r.adapter = -1;
		r.engine = sqlite3_column_int64(st, 2); /* jobs on it, for the label */
		copy_text(r.driver, sizeof(r.driver), st, 0);
		copy_text(r.name, sizeof(r.name), st, 1);
		r.y = *y;
		r.h = NF_RENDER_RING_H;
		*y += r.h;
		if ((ret = push_row(lay, cap, &r, err)) < 0)
			goto out;
		lay->n_rings++;
	}
	if (rc != SQLITE_DONE)
		ret = sql_fail(db, err, "reading GPU rings");
out:
	sqlite3_finalize(st);
	return ret;
}

/* " OR x IN ('a','b') OR x IN (1,2)": a selection of threads or processes by name or id. */
static char *select_sql(const char *idcol, const char *namecol, const char *const *v, int n)
{
	char *sql = sqlite3_mprintf("%s", "");

	for (int i = 0; sql && i < n; i++) {
		char *end = NULL;
		long long id = strtoll(v[i], &end, 10);
		char *next = end && *end == '\0' && end != v[i]
			? sqlite3_mprintf("%s OR %s = %lld", sql, idcol, id)
			: sqlite3_mprintf("%s OR %s = %Q", sql, namecol, v[i]);

		sqlite3_free(sql);
		sql = next;
	}
	return sql;
}

static int place_cpu_rows(sqlite3 *db, const struct nf_render_options *opts,
			  struct nf_render_layout *lay, size_t *cap, double *y, struct nf_error *err)
{
	char *fw = NULL, *fs = NULL, *fq = NULL, *sql = NULL;
	sqlite3_stmt *st = NULL;
	struct nf_render_row r;
	int rc, ret = 0;

	fw = nf_render_in_list("fence", opts->fences, opts->fences ? opts->n_fences : 0);
	fs = nf_render_in_list("fence", opts->fences, opts->fences ? opts->n_fences : 0);
	fq = nf_render_in_list("queue", opts->queues, opts->queues ? opts->n_queues : 0);
	/*
	 * The threads that wait or signal on the CPU, and those that queued GPU
	 * work (FENCE_*_QUEUED: the analyzer's queue_threads, per queue and fence).
	 */
	/*
	 * Kernel sessions add the threads that submitted GPU jobs or wrote
	 * markers; every thread that ran only with threads_all, or when selected
	 * by --thread or --process, or when no thread did any of that (a trace of
	 * the scheduler alone: then every thread is what there is to see). Rows are grouped by process (the thread's
	 * own id when its process is unknown), the process's own thread first.
	 */
	char *tsel = select_sql("t.thread", "k.comm", opts->threads, opts->threads ? opts->n_threads : 0);
	char *psel = select_sql("coalesce(k.process, t.thread)", "p.comm", opts->processes,
				opts->processes ? opts->n_processes : 0);
	int filtered = opts->fences && opts->n_fences > 0;

	if (fw && fs && fq && tsel && psel)
		sql = sqlite3_mprintf("WITH rel(thread) AS (SELECT thread FROM cpu_waits WHERE thread IS NOT NULL%s "
				      "UNION SELECT thread FROM cpu_signals WHERE thread IS NOT NULL%s "
				      "UNION SELECT thread FROM queue_threads WHERE thread IS NOT NULL "
				      "AND queue IS NOT NULL%s%s%s), "
				      "ran(thread) AS (SELECT thread FROM rel%s), "
				      "shown(thread) AS (SELECT t.thread FROM ran t LEFT JOIN kernel_threads k "
				      "ON k.thread = t.thread LEFT JOIN kernel_threads p ON p.thread = "
				      "coalesce(k.process, t.thread) WHERE %s OR t.thread IN (SELECT thread FROM rel) "
				      "OR NOT EXISTS (SELECT 1 FROM rel)%s%s) "
				      "SELECT s.thread, coalesce(k.process, s.thread) AS proc, p.comm, "
				      "(SELECT count(*) FROM ran) - (SELECT count(*) FROM shown) "
				      "FROM shown s LEFT JOIN kernel_threads k ON k.thread = s.thread "
				      "LEFT JOIN kernel_threads p ON p.thread = coalesce(k.process, s.thread) "
				      "ORDER BY proc, s.thread != proc, s.thread",
				      fw, fs, fw, fq,
				      filtered ? "" : " UNION SELECT thread FROM jobs WHERE thread IS NOT NULL "
						      "UNION SELECT thread FROM markers WHERE thread IS NOT NULL",
				      filtered ? "" : " UNION SELECT thread FROM cpu_runs WHERE thread IS NOT NULL",
				      opts->threads_all && !filtered ? "1" : "0", tsel, psel);
	sqlite3_free(tsel);
	sqlite3_free(psel);
	if (!sql) {
		ret = nf_error_set(err, NF_ENOMEM, "out of memory for a query");
		goto out_free;
	}
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		ret = sql_fail(db, err, "reading CPU threads");
		goto out_free;
	}
	int64_t last_proc = -1;
	int any_proc = 0;

	{
		sqlite3_stmt *pst = NULL;

		if (sqlite3_prepare_v2(db, "SELECT 1 FROM kernel_threads WHERE process IS NOT NULL LIMIT 1", -1, &pst,
				       NULL) == SQLITE_OK)
			any_proc = sqlite3_step(pst) == SQLITE_ROW;
		sqlite3_finalize(pst);
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		lay->threads_left_out = (size_t)sqlite3_column_int64(st, 3);
		if (lay->n_threads == 0) {
			memset(&r, 0, sizeof(r));
			r.kind = NF_ROW_CPU_HEAD;
			r.adapter = -1;
			r.y = *y;
			r.h = NF_RENDER_ADAPTER_H;
			*y += r.h;
			if ((ret = push_row(lay, cap, &r, err)) < 0)
				goto out_free;
		}
		/* A process header above its threads (when the file said which is whose). */
		if (any_proc && (lay->n_threads == 0 || sqlite3_column_int64(st, 1) != last_proc)) {
			last_proc = sqlite3_column_int64(st, 1);
			memset(&r, 0, sizeof(r));
			r.kind = NF_ROW_PROC;
			r.id = last_proc;
			r.adapter = -1;
			copy_text(r.name, sizeof(r.name), st, 2);
			r.y = *y;
			r.h = NF_RENDER_PROC_H;
			*y += r.h;
			if ((ret = push_row(lay, cap, &r, err)) < 0)
				goto out_free;
		}
		memset(&r, 0, sizeof(r));
		r.kind = NF_ROW_CPU;
		r.id = sqlite3_column_int64(st, 0);
		nf_render_kernel_thread_name(db, r.id, r.name, sizeof(r.name));
		r.adapter = -1;
		r.y = *y;
		r.h = NF_RENDER_CPU_H;
		*y += r.h;
		if ((ret = push_row(lay, cap, &r, err)) < 0)
			goto out_free;
		lay->n_threads++;
	}
	if (rc != SQLITE_DONE)
		ret = sql_fail(db, err, "reading CPU threads");
out_free:
	sqlite3_finalize(st);
	sqlite3_free(sql);
	free(fq);
	free(fs);
	free(fw);
	return ret;
}

/* The depth pass for the queues (sorted by handle for it, then back in row order). */
static int queue_depths(sqlite3 *db, const struct nf_render_options *opts, struct nf_render_layout *lay,
			struct queue_info *qs, size_t nq, int cap, int flat, const struct nf_render_depths *known,
			struct nf_error *err)
{
	int64_t *h = NULL, *shared = NULL;
	int(*n_sub)[2] = NULL;
	int ret = 0;

	if (flat) {  /* one sub-lane each, no pass (see nf_render_layout_build_flat) */
		for (size_t i = 0; i < nq; i++) {
			qs[i].n_sub[0] = qs[i].n_sub[1] = 1;
			qs[i].shared = 0;
		}
		return 0;
	}
	if (known && known->cap == cap) {  /* a flat scene's pass found them: no pass */
		for (size_t i = 0; i < nq; i++) {
			int64_t *f = known->n ? bsearch(&qs[i].queue, known->queue, known->n, sizeof(int64_t), cmp_i64)
					      : NULL;
			size_t k = f ? (size_t)(f - known->queue) : 0;

			qs[i].n_sub[0] = f ? known->n_sub[k][0] : 1;
			qs[i].n_sub[1] = f ? known->n_sub[k][1] : 1;
			qs[i].shared = f ? known->shared[k] : 0;
		}
		return 0;
	}
	if (nq == 0)
		return 0;
	h = malloc(nq * sizeof(*h));
	shared = calloc(nq, sizeof(*shared));
	n_sub = calloc(nq, sizeof(*n_sub));
	if (!h || !shared || !n_sub) {
		ret = nf_error_set(err, NF_ENOMEM, "out of memory for queues");
		goto out;
	}
	/* The rows are sorted by adapter and engine; the pass wants handles sorted. */
	for (size_t i = 0; i < nq; i++)
		h[i] = qs[i].queue;
	qsort(h, nq, sizeof(*h), cmp_i64);
	if ((ret = nf_render_collect_depths(db, opts, lay, h, nq, cap, n_sub, shared, err)) < 0)
		goto out;
	for (size_t i = 0; i < nq; i++) {
		int64_t *f = bsearch(&qs[i].queue, h, nq, sizeof(*h), cmp_i64);
		size_t k = (size_t)(f - h);

		qs[i].n_sub[0] = n_sub[k][0];
		qs[i].n_sub[1] = n_sub[k][1];
		qs[i].shared = shared[k];
	}
out:
	free(h);
	free(shared);
	free(n_sub);
	return ret;
}

/* Places every row for sub-lane cap `cap`; on success the page's height is known. */
static int place_rows(sqlite3 *db, const struct nf_render_options *opts, struct nf_render_layout *lay,
		      struct queue_info *qs, size_t nq, int cap, int flat, const struct nf_render_depths *known,
		      struct nf_error *err)
{
	size_t rcap = 0;
	double y;
	int ret;

	free(lay->rows);
	lay->rows = NULL;
	lay->n_rows = lay->n_queues = lay->n_threads = lay->n_rings = lay->n_displays = 0;
	lay->threads_left_out = 0;
	lay->shared = 0;
	lay->max_sub = cap;
	lay->flat = flat;
	if ((ret = queue_depths(db, opts, lay, qs, nq, cap, flat, known, err)) < 0)
		return ret;
	y = NF_RENDER_TITLE_H + NF_RENDER_LEGEND_H * lay->legend_lines + 10.0;
	lay->rows_y0 = y;
	if ((ret = nf_render_place_display_rows(db, opts, lay, &rcap, &y, push_row, err)) < 0 ||
	    (ret = place_ring_rows(db, opts, lay, &rcap, &y, err)) < 0 ||
	    (ret = place_queue_rows(lay, qs, nq, &rcap, &y, err)) < 0 ||
	    (ret = nf_timeline_check_threads(db, opts->threads, opts->threads ? opts->n_threads : 0, opts->processes,
					     opts->processes ? opts->n_processes : 0, err)) < 0 ||
	    (ret = place_cpu_rows(db, opts, lay, &rcap, &y, err)) < 0 ||
	    (lay->etw && (ret = nf_render_etw_node_names(db, lay, err)) < 0))
		return ret;
	if (lay->n_rows == 0)
		y += NF_RENDER_QUEUE_H;  /* room for "nothing to draw" */
	lay->rows_y1 = y;
	lay->axis_y = y + 6.0;
	lay->height = lay->axis_y + NF_RENDER_AXIS_H;
	return 0;
}

static int layout_build(sqlite3 *db, const struct nf_render_options *opts, struct nf_render_layout *lay,
			int flat, const struct nf_render_depths *known, struct nf_error *err)
{
	struct queue_info *qs = NULL;
	size_t nq = 0;
	int ret, cap = NF_RENDER_MAX_SUB;

	memset(lay, 0, sizeof(*lay));
	if (opts->width != 0 && (opts->width < NF_RENDER_MIN_WIDTH || opts->width > NF_RENDER_MAX_WIDTH))
		return nf_error_set(err, NF_EINVAL, "width %d: must be between %d and %d", opts->width,
				    NF_RENDER_MIN_WIDTH, NF_RENDER_MAX_WIDTH);
	if ((opts->n_queues < 0 || (opts->n_queues > 0 && !opts->queues)) ||
	    (opts->n_fences < 0 || (opts->n_fences > 0 && !opts->fences)))
		return nf_error_set(err, NF_EINVAL, "bad queue or fence filter");
	lay->width = opts->width ? opts->width : NF_RENDER_DEFAULT_WIDTH;
	lay->plot_x0 = NF_RENDER_LABEL_W;
	lay->plot_x1 = lay->width - NF_RENDER_MARGIN_R;
	if ((ret = read_meta(db, lay, err)) < 0 || (ret = resolve_window(db, opts, lay, err)) < 0)
		goto out_release;
	if ((ret = load_queues(db, opts, &qs, &nq, err)) < 0)
		goto out_release;
	lay->etw = strcmp(lay->source, "etw") == 0;
	place_legend(lay);
	/* A page too tall with deep stacks is drawn with fewer sub-lanes (said on the page). */
	while ((ret = place_rows(db, opts, lay, qs, nq, cap, flat, known, err)) == 0 &&
	       lay->height > NF_RENDER_MAX_HEIGHT && cap > 1)
		cap /= 2;
	if (ret < 0)
		goto out_release;
	if (lay->height > NF_RENDER_MAX_HEIGHT) {
		ret = nf_error_set(err, NF_ENOMEM,
				   "%zu queues and %zu CPU threads do not fit on one page; filter queues",
				   lay->n_queues, lay->n_threads);
		goto out_release;
	}
	free(qs);
	return 0;
out_release:
	free(qs);
	nf_render_layout_release(lay);
	return ret;
}

int nf_render_layout_build(sqlite3 *db, const struct nf_render_options *opts,
			   struct nf_render_layout *lay, struct nf_error *err)
{
	return layout_build(db, opts, lay, 0, NULL, err);
}

int nf_render_layout_build_known(sqlite3 *db, const struct nf_render_options *opts,
				 struct nf_render_layout *lay, const struct nf_render_depths *known,
				 struct nf_error *err)
{
	return layout_build(db, opts, lay, 0, known, err);
}

int nf_render_layout_build_flat(sqlite3 *db, const struct nf_render_options *opts,
				struct nf_render_layout *lay, struct nf_error *err)
{
	return layout_build(db, opts, lay, 1, NULL, err);
}

void nf_render_layout_release(struct nf_render_layout *lay)
{
	free(lay->rows);
	lay->rows = NULL;
	lay->n_rows = 0;
}

double nf_render_layout_x(const struct nf_render_layout *lay, int64_t t)
{
	/* in floating point: t may be anywhere in int64 (a planted timeline), not
	 * only in the window */
	double span = (double)lay->t1 - (double)lay->t0;

	return lay->plot_x0 + ((double)t - (double)lay->t0) / span * (lay->plot_x1 - lay->plot_x0);
}

static const struct nf_render_row *find_row(const struct nf_render_layout *lay,
					    enum nf_render_row_kind kind, int64_t id)
{
	for (size_t i = 0; i < lay->n_rows; i++)
		if (lay->rows[i].kind == kind && lay->rows[i].id == id)
			return &lay->rows[i];
	return NULL;
}

const struct nf_render_row *nf_render_layout_queue(const struct nf_render_layout *lay,
						   int64_t queue)
{
	return find_row(lay, NF_ROW_QUEUE, queue);
}

const struct nf_render_row *nf_render_layout_thread(const struct nf_render_layout *lay,
						    int64_t thread)
{
	return find_row(lay, NF_ROW_CPU, thread);
}

const struct nf_render_row *nf_render_layout_ring(const struct nf_render_layout *lay, const char *driver,
						  const char *ring)
{
	for (size_t i = 0; i < lay->n_rows; i++)
		if (lay->rows[i].kind == NF_ROW_RING && !strcmp(lay->rows[i].driver, driver ? driver : "") &&
		    !strcmp(lay->rows[i].name, ring ? ring : ""))
			return &lay->rows[i];
	return NULL;
}

double nf_render_sublane_h(int n)
{
	/* 10 px boxes (with the 1 px gap) hold a 9 px label at every depth up to the cap. */
	return n <= 1 ? 16.0 : n <= 4 ? 13.0 : 11.0;
}

void nf_render_lane_extent(const struct nf_render_row *row, enum nf_render_lane_kind lane,
			   double *y0, double *y1)
{
	int nw = row->n_sub[0] > 1 ? row->n_sub[0] : 1, ns = row->n_sub[1] > 1 ? row->n_sub[1] : 1;
	double hw = nw * nf_render_sublane_h(nw), hs = ns * nf_render_sublane_h(ns);

	switch (lane) {
	case NF_LANE_WAIT:
		*y0 = row->y + 5.0;
		*y1 = *y0 + hw;
		break;
	case NF_LANE_SIGNAL:
		*y0 = row->y + 5.0 + hw + 4.0;
		*y1 = *y0 + hs;
		break;
	case NF_LANE_CPU:
	default:
		*y0 = row->y + 6.0;
		*y1 = row->y + row->h - 6.0;
		break;
	}
}

void nf_render_sublane_extent(const struct nf_render_row *row, enum nf_render_lane_kind lane, int k,
			      double *y0, double *y1)
{
	int n = lane == NF_LANE_WAIT ? row->n_sub[0] : lane == NF_LANE_SIGNAL ? row->n_sub[1] : 1;
	double h;

	nf_render_lane_extent(row, lane, y0, y1);
	if (n <= 1 || lane == NF_LANE_CPU)
		return;
	if (k < 0)
		k = 0;
	if (k >= n)
		k = n - 1;
	h = nf_render_sublane_h(n);
	*y0 += h * k;
	*y1 = *y0 + h - 1.0;  /* a 1 px gap tells stacked boxes apart */
}

void nf_render_stack_reset(struct nf_render_stack *st, int cap)
{
	st->n = 0;
	st->cap = cap < 1 ? 1 : cap > NF_RENDER_MAX_SUB ? NF_RENDER_MAX_SUB : cap;
	st->shared = 0;
}

int nf_render_stack_place(struct nf_render_stack *st, double xa, double xb)
{
	int best = 0;

	for (int k = 0; k < st->n; k++)
		if (st->end[k] <= xa) {
			if (xb > st->end[k])
				st->end[k] = xb;
			return k;
		}
	/* Only boxes a person can see as boxes open a sub-lane: narrower ones are
	 * density at this zoom (one stacked lane of bands per overlap would say
	 * nothing more), and are told apart by zooming in. */
	if (st->n == 0 || (st->n < st->cap && xb - xa >= NF_RENDER_STACK_MIN_W)) {
		st->end[st->n] = xb;
		return st->n++;
	}
	for (int k = 1; k < st->n; k++)
		if (st->end[k] < st->end[best])
			best = k;
	if (xb > st->end[best])
		st->end[best] = xb;
	/* Deeper than the cap: it shares the sub-lane that frees first, counted. */
	if (xb - xa >= NF_RENDER_STACK_MIN_W)
		st->shared++;
	return best;
}

void nf_render_op_span(const struct nf_render_layout *lay, int64_t start, int has_end, int64_t end,
		       double *xa, double *xb)
{
	if (!has_end)
		end = start;
	if (end < start) {
		int64_t t = end;

		end = start;
		start = t;
	}
	*xa = nf_render_layout_x(lay, start);
	*xb = nf_render_layout_x(lay, end);
}

int64_t nf_render_tick_step(int64_t span_ns, int max_ticks)
{
	static const int64_t mult[] = { 1, 2, 5 };
	int64_t p = 1;

	if (span_ns <= 0 || max_ticks <= 0)
		return 1;
	for (;;) {
		for (size_t i = 0; i < 3; i++) {
			int64_t step = p * mult[i];

			if (span_ns / step <= max_ticks)
				return step;
		}
		if (p > INT64_MAX / 10)
			return p;
		p *= 10;
	}
}

const char *nf_render_time_unit(int64_t span_ns, int64_t *unit_ns)
{
	if (span_ns >= 10000000000LL) {
		*unit_ns = 1000000000;
		return "s";
	}
	if (span_ns >= 10000000) {
		*unit_ns = 1000000;
		return "ms";
	}
	if (span_ns >= 10000) {
		*unit_ns = 1000;
		return "µs";
	}
	*unit_ns = 1;
	return "ns";
}
