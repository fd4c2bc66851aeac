/*
 * nf_html_report: the interactive HTML report. Reads the timeline database in
 * one read transaction and writes the page streaming:
 *   1. rows: one per hardware queue (grouped by adapter and node in the page),
 *      one per CPU thread (grouped by the process that owns the handles it used);
 *   2. pass 1 over fence_ops counts every operation of the window into its
 *      row's summary bins and into a fine histogram of start times, from which
 *      the detail cut (at most max_ops operations) and the next window are found;
 *   3. pass 2 writes the details of the operations before the cut, each wait
 *      with the signal that released it (deps, merged by wait id) and its stall;
 *      then CPU waits, CPU signals and anomalies before the cut;
 *   4. the rows, the summaries and the page's script (html/report.html).
 * Memory is bounded by the rows, the bins and the handle map, not the session.
 */
#include "contract/html.h"
#include "contract/errors.h"
#include "contract/escape.h"
#include "contract/sattime.h"
#include "contract/timeline.h"
#include "contract/outfile.h"

#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report_html.h"
#include "contract/text.h"

/* Fine histogram of start times, for finding the detail cut. */
#define HIST_BINS 65536
/* Anomalies (lost spans, timestamp marks) written at most. */
#define MAX_ANOMALIES 50000
/* Rows at most (queues + threads). */
#define MAX_ROWS 20000

/* Rows: queues first, then threads (sorted by id), GPU rings (kernel jobs),
 * GPU nodes (ETW DMA packets). */
enum row_kind { ROW_QUEUE, ROW_THREAD, ROW_RING, ROW_NODE };

struct row {
	enum row_kind kind;
	int64_t id;          /* queue handle or thread id */
	int64_t adapter, node, engine;
	int64_t process;     /* threads: its process (kernel_threads, else of a handle it used), -1 unknown */
	int64_t count;       /* rings: jobs on it */
	char name[96];       /* queue name, thread's comm, ring or node name */
	char adapter_name[96];
	char pname[96];      /* threads: the process's name when known; rings: the driver */
	uint32_t *bins;      /* NF_HTML_BINS x 3: waits, signals, CPU waits starting in the bin */
};

struct html {
	sqlite3 *db;
	FILE *f;
	const struct nf_html_options *o;
	struct nf_error *err;
	int64_t t0, t1, session_end;
	int has_duration;
	char source[64], mode[64], seed[32], scenario[96];
	struct row *rows;
	size_t n_rows, n_queues, threads_end;  /* threads are rows [n_queues, threads_end) */
	int is_etw;
	int64_t threads_left_out;  /* threads that only ran, not shown (see nf_html_options) */
	int64_t n_jobs, n_job_deps, n_vblanks, n_markers, n_runs, n_dma, n_vsyncs;
	int64_t n_displays, n_dvblanks, n_flips, n_frames, n_frame_segs; /* the frames' */
	char cut_kinds[128];       /* the extra kinds cut at NF_HTML_MAX_EXTRA, comma-separated */
	/* handle -> process, sorted by handle */
	int64_t (*handles)[2];
	size_t n_handles;
	uint32_t *hist;
	int64_t *hist_id;       /* per histogram bin: lowest and highest operation id in it */
	int64_t lo_id, hi_id;   /* ids of the detailed operations lie in [lo_id, hi_id] */
	int64_t n_ops, n_detail, n_cpu_waits, n_cpu_signals, n_anomalies;
	int64_t cut, next_to;   /* details cover [t0, cut); the next window [cut, next_to) */
	int64_t detail_full;    /* 1 when every operation of the window is detailed */
	char *in_q, *in_f;      /* " AND queue IN (...)" filters or "" */
};

static int sql_fail(struct html *h, const char *what)
{
	return nf_sql_error(h->db, h->err, "%s", what);
}

/* Prepares sql (an sqlite3_mprintf result, freed here; NULL: out of memory)
 * on the page's connection: 0, or an error about reading `what`. */
static int prepare_owned(struct html *h, char *sql, sqlite3_stmt **st, const char *what)
{
	int rc;

	if (!sql)
		return nf_error_set(h->err, NF_ENOMEM, "out of memory");
	rc = sqlite3_prepare_v2(h->db, sql, -1, st, NULL);
	sqlite3_free(sql);
	return rc == SQLITE_OK ? 0 : sql_fail(h, what);
}

/* ---- writing ---- */

static void put(struct html *h, const char *s)
{
	fputs(s, h->f);
}

static void put_i64(struct html *h, int64_t v)
{
	char buf[24], *p = buf + sizeof(buf);
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	*--p = 0;
	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	fputs(p, h->f);
}

/* A value JavaScript holds exactly as a number, else as a decimal string. */
static void put_big(struct html *h, int64_t v)
{
	if (v > ((int64_t)1 << 53) || v < -((int64_t)1 << 53)) {
		fputc('"', h->f);
		put_i64(h, v);
		fputc('"', h->f);
	} else {
		put_i64(h, v);
	}
}

/* A column: its integer, or null. */
static void put_col(struct html *h, sqlite3_stmt *st, int col)
{
	if (sqlite3_column_type(st, col) == SQLITE_NULL)
		put(h, "null");
	else
		put_big(h, sqlite3_column_int64(st, col));
}

/* A time column relative to the window start, or null. */
static void put_time(struct html *h, sqlite3_stmt *st, int col)
{
	if (sqlite3_column_type(st, col) == SQLITE_NULL)
		put(h, "null");
	else
		put_i64(h, nf_time_sub(sqlite3_column_int64(st, col), h->t0));
}

/* A JSON string, safe inside <script> ('<', '>', '&' escaped: no "</script>"
 * or "<!--" appears), every control and what is not UTF-8 escaped. */
static void put_str(struct html *h, const char *s)
{
	s = s ? s : "";
	nf_esc_json(s, strlen(s), NF_ESC_SCRIPT, nf_esc_file_write, h->f);
}

/* A path as one shell word (nf_esc_shell; "./" before a leading '-', so it is
 * no option), as a JSON string. */
static void put_shell_word(struct html *h, const char *path)
{
	char word[4 * 4096 + 16];
	struct nf_esc_buf b = { word, sizeof(word), 0, false };

	word[0] = '\0';
	if (path[0] == '-')
		nf_esc_buf_write(&b, "./", 2);
	nf_esc_shell(path, strlen(path), nf_esc_buf_write, &b);
	put_str(h, b.cut ? "DIR" : word);
}

/* ---- reading ---- */

static void copy_col(char *dst, size_t len, sqlite3_stmt *st, int col)
{
	const unsigned char *t = sqlite3_column_text(st, col);

	snprintf(dst, len, "%s", t ? (const char *)t : "");
}

static int read_meta(struct html *h)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(h->db, "SELECT key, value FROM meta WHERE key IN "
				      "('duration_ns','source','mode','seed','scenario')",
			       -1, &st, NULL) != SQLITE_OK)
		return sql_fail(h, "reading meta");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *key = (const char *)sqlite3_column_text(st, 0);

		if (!key || sqlite3_column_type(st, 1) == SQLITE_NULL)
			continue;
		if (!strcmp(key, "duration_ns") && sqlite3_column_int64(st, 1) > 0) {
			h->session_end = sqlite3_column_int64(st, 1);
			h->has_duration = 1;
		} else if (!strcmp(key, "source")) {
			copy_col(h->source, sizeof(h->source), st, 1);
		} else if (!strcmp(key, "mode")) {
			copy_col(h->mode, sizeof(h->mode), st, 1);
		} else if (!strcmp(key, "seed")) {
			copy_col(h->seed, sizeof(h->seed), st, 1);
		} else if (!strcmp(key, "scenario")) {
			copy_col(h->scenario, sizeof(h->scenario), st, 1);
		}
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return sql_fail(h, "reading meta");
	if (!h->has_duration) {
		static const char sql[] =
			"SELECT max(coalesce((SELECT max(max(coalesce(queued_ns,0), coalesce(observed_ns,0),"
			" coalesce(end_ns,0))) FROM fence_ops), 0),"
			" coalesce((SELECT max(max(start_ns, coalesce(end_ns,0))) FROM cpu_waits), 0),"
			" coalesce((SELECT max(ts_ns) FROM cpu_signals), 0))";

		if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) != SQLITE_OK)
			return sql_fail(h, "finding the session end");
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW)
			h->session_end = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
		if (rc != SQLITE_ROW)
			return sql_fail(h, "finding the session end");
	}
	return 0;
}

static int resolve_window(struct html *h)
{
	char a[32], b[32];

	const struct nf_html_options *o = h->o;

	if (o->from_ns < -1 || o->to_ns < -1)
		return nf_error_set(h->err, NF_EINVAL, "time window: negative time");
	h->t0 = o->from_ns >= 0 ? o->from_ns : 0;
	h->t1 = o->to_ns >= 0 ? o->to_ns : h->session_end;
	if (o->from_ns >= 0 && o->from_ns >= h->session_end && h->session_end > 0)
	{
		nf_text_duration(a, sizeof(a), o->from_ns);
		nf_text_duration(b, sizeof(b), h->session_end);
		return nf_error_set(h->err, NF_EINVAL,
				    "time window: start %s is not before the session's end (%s)", a, b);
	}
	if (o->to_ns < 0 && h->t1 <= h->t0)
		h->t1 = nf_time_add(h->t0, 1000);  /* an empty session: a 1 µs window */
	if (h->t1 <= h->t0) {
		nf_text_duration(a, sizeof(a), h->t1);
		nf_text_duration(b, sizeof(b), h->t0);
		return nf_error_set(h->err, NF_EINVAL, "time window: end (%s) is not after start (%s)",
				    a, b);
	}
	return 0;
}

/* " AND col IN (a,b,...)" or "" (sqlite3_malloc'd). */
static char *in_list(const char *col, const int64_t *v, int n)
{
	char *s = sqlite3_mprintf("%s", n ? " AND " : ""), *t;

	if (!n)
		return s;
	for (int i = 0; s && i < n; i++) {
		t = sqlite3_mprintf("%s%s%s%lld", s, i ? "," : col, i ? "" : " IN (", (long long)v[i]);
		sqlite3_free(s);
		s = t;
	}
	if (s) {
		t = sqlite3_mprintf("%s)", s);
		sqlite3_free(s);
		s = t;
	}
	return s;
}

/* Each filtered queue and fence must exist: a filter matching nothing is an error. */
static int check_filters(struct html *h)
{
	static const char *const what[2] = { "queue", "fence" };
	static const char *const sql[2] = { "SELECT 1 FROM queues WHERE queue = ?1",
					    "SELECT 1 FROM fences WHERE fence = ?1" };

	for (int k = 0; k < 2; k++) {
		const int64_t *v = k ? h->o->fences : h->o->queues;
		int n = k ? h->o->n_fences : h->o->n_queues;
		sqlite3_stmt *st;

		if (sqlite3_prepare_v2(h->db, sql[k], -1, &st, NULL) != SQLITE_OK)
			return sql_fail(h, "checking the filters");
		for (int i = 0; i < n; i++) {
			int rc;

			sqlite3_reset(st);
			sqlite3_bind_int64(st, 1, v[i]);
			rc = sqlite3_step(st);
			if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
				sqlite3_finalize(st);
				return sql_fail(h, "checking the filters");
			}
			if (rc == SQLITE_DONE) {
				sqlite3_finalize(st);
				return nf_error_set(h->err, NF_ENOENT, "%s 0x%" PRIx64 ": not in the timeline",
						    what[k], (uint64_t)v[i]);
			}
		}
		sqlite3_finalize(st);
	}
	return 0;
}

static int push_row(struct html *h, size_t *cap, const struct row *r)
{
	if (h->n_rows == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		struct row *n;

		/* MAX_ROWS rows, not the power of two below it; the advice fits
		 * the row that did not fit */
		if (h->n_rows >= MAX_ROWS)
			return nf_error_set(h->err, NF_ENOMEM, "more than %d rows; %s", MAX_ROWS,
					    r->kind == ROW_THREAD ? "filter threads (--thread, --process; without --threads all)"
					    : r->kind == ROW_QUEUE ? "filter queues (--queue)"
								   : "narrow the window (--from, --to)");
		if (ncap > MAX_ROWS)
			ncap = MAX_ROWS;
		n = realloc(h->rows, ncap * sizeof(*n));
		if (!n)
			return nf_error_set(h->err, NF_ENOMEM, "out of memory for rows");
		h->rows = n;
		*cap = ncap;
	}
	h->rows[h->n_rows] = *r;
	h->rows[h->n_rows].bins = calloc((size_t)NF_HTML_BINS * 3, sizeof(uint32_t));
	if (!h->rows[h->n_rows].bins)
		return nf_error_set(h->err, NF_ENOMEM, "out of memory for summaries");
	h->n_rows++;
	return 0;
}

/* " OR col = id OR name = 'x'": a selection of threads or processes by name or id (sqlite3_malloc'd). */
static char *select_sql(const char *idcol, const char *namecol, const char *const *v, int n)
{
	char *sql = sqlite3_mprintf("%s", "");

	for (int i = 0; sql && v && i < n; i++) {
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

/*
 * The CPU thread rows, chosen as the static report does (viewer/layout.c):
 * the threads related to the GPU work (CPU waits and signals, queued work;
 * in kernel sessions also job submitters and marker writers), and the
 * threads that only ran with --threads all, when named, or when no thread is
 * related. Sorted by id (find_row searches them).
 */
static int build_thread_rows(struct html *h, size_t *cap)
{
	const struct nf_html_options *o = h->o;
	int filtered = o->n_fences > 0, rc, ret = 0;
	char *tsel = select_sql("t.thread", "k.comm", o->threads, o->n_threads);
	char *psel = select_sql("coalesce(k.process, t.thread)", "p.comm", o->processes, o->n_processes);
	char *sql = NULL;
	sqlite3_stmt *st;

	if (tsel && psel)
		sql = sqlite3_mprintf(
			"WITH rel(thread) AS (SELECT thread FROM cpu_waits WHERE thread IS NOT NULL%s "
			"UNION SELECT thread FROM cpu_signals WHERE thread IS NOT NULL%s "
			"UNION SELECT thread FROM queue_threads WHERE thread IS NOT NULL AND queue IS NOT NULL%s%s%s), "
			"ran(thread) AS (SELECT thread FROM rel%s), "
			"shown(thread) AS (SELECT t.thread FROM ran t LEFT JOIN kernel_threads k ON k.thread = t.thread "
			"LEFT JOIN kernel_threads p ON p.thread = coalesce(k.process, t.thread) WHERE %s "
			"OR t.thread IN (SELECT thread FROM rel) OR NOT EXISTS (SELECT 1 FROM rel)%s%s) "
			"SELECT s.thread, coalesce(k.process, -1), k.comm, p.comm, "
			"(SELECT count(*) FROM ran) - (SELECT count(*) FROM shown) "
			"FROM shown s LEFT JOIN kernel_threads k ON k.thread = s.thread "
			"LEFT JOIN kernel_threads p ON p.thread = k.process ORDER BY s.thread",
			h->in_f, h->in_f, h->in_f, h->in_q,
			filtered ? "" : " UNION SELECT thread FROM jobs WHERE thread IS NOT NULL "
					"UNION SELECT thread FROM markers WHERE thread IS NOT NULL",
			filtered ? "" : " UNION SELECT thread FROM cpu_runs WHERE thread IS NOT NULL",
			o->threads_all && !filtered ? "1" : "0", tsel, psel);
	sqlite3_free(tsel);
	sqlite3_free(psel);
	if ((rc = prepare_owned(h, sql, &st, "reading threads")) < 0)
		return rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct row r = { .kind = ROW_THREAD, .adapter = -1, .node = -1, .engine = -1 };

		r.id = sqlite3_column_int64(st, 0);
		r.process = sqlite3_column_int64(st, 1);
		copy_col(r.name, sizeof(r.name), st, 2);
		copy_col(r.pname, sizeof(r.pname), st, 3);
		h->threads_left_out = sqlite3_column_int64(st, 4);
		if ((ret = push_row(h, cap, &r)) < 0)
			break;
	}
	sqlite3_finalize(st);
	if (ret < 0)
		return ret;
	if (rc != SQLITE_DONE)
		return sql_fail(h, "reading threads");
	return 0;
}

/* The GPU rings of Linux kernel jobs (not with a queue or fence filter, as in the static report). */
static int build_ring_rows(struct html *h, size_t *cap)
{
	sqlite3_stmt *st;
	int rc, ret = 0;

	if (h->o->n_queues || h->o->n_fences)
		return 0;
	if (sqlite3_prepare_v2(h->db, "SELECT driver, coalesce(ring, ''), count(*) FROM jobs GROUP BY 1, 2 "
				      "ORDER BY 1, 2", -1, &st, NULL) != SQLITE_OK)
		return sql_fail(h, "reading GPU rings");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct row r = { .kind = ROW_RING, .adapter = -1, .node = -1, .engine = -1, .process = -1 };

		copy_col(r.pname, sizeof(r.pname), st, 0);
		copy_col(r.name, sizeof(r.name), st, 1);
		r.count = sqlite3_column_int64(st, 2);
		r.id = (int64_t)(h->n_rows - h->threads_end);
		if ((ret = push_row(h, cap, &r)) < 0)
			break;
	}
	sqlite3_finalize(st);
	if (ret < 0)
		return ret;
	return rc == SQLITE_DONE ? 0 : sql_fail(h, "reading GPU rings");
}

/* ETW captures: one DMA packet row per GPU node that has queue rows, named from etw_nodes. */
static int build_node_rows(struct html *h, size_t *cap)
{
	sqlite3_stmt *st;
	int ret = 0;
	size_t nq = h->n_queues;

	if (!h->is_etw)
		return 0;
	if (sqlite3_prepare_v2(h->db, "SELECT name FROM etw_nodes WHERE adapter = ?1 AND node = ?2", -1, &st,
			       NULL) != SQLITE_OK)
		return sql_fail(h, "reading etw_nodes");
	for (size_t i = 0; i < nq && ret == 0; i++) {
		const struct row *q = &h->rows[i];
		struct row r = { .kind = ROW_NODE, .engine = -1, .process = -1 };
		size_t k;

		if (q->node < 0)
			continue;
		for (k = 0; k < i && (h->rows[k].adapter != q->adapter || h->rows[k].node != q->node); k++)
			;
		if (k < i)
			continue;  /* this node already has its row */
		r.adapter = q->adapter;
		r.node = q->node;
		r.id = q->node;
		snprintf(r.adapter_name, sizeof(r.adapter_name), "%s", q->adapter_name);
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, q->adapter);
		sqlite3_bind_int64(st, 2, q->node);
		if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
			copy_col(r.name, sizeof(r.name), st, 0);
		else
			snprintf(r.name, sizeof(r.name), "Node %lld", (long long)q->node);
		ret = push_row(h, cap, &r);
	}
	sqlite3_finalize(st);
	return ret;
}

static int build_rows(struct html *h)
{
	sqlite3_stmt *st;
	char *sql;
	size_t cap = 0;
	int rc, ret = 0;

	/* The dma_fence timelines of GPU jobs' fences are drawn as the jobs' rings
	 * (unless queues are asked for), as in the static report. */
	sql = sqlite3_mprintf("SELECT q.queue, coalesce(q.adapter,-1), coalesce(q.node,-1), "
			      "coalesce(q.engine,-1), q.name, a.name FROM queues q "
			      "LEFT JOIN adapters a ON a.adapter = q.adapter WHERE 1%s%s "
			      "ORDER BY coalesce(q.adapter,-1), coalesce(q.node,-1), q.queue",
			      h->in_q,
			      h->o->n_queues ? "" :
			      " AND q.queue NOT IN (SELECT 4294967296 + context FROM job_timelines "
			      "UNION ALL SELECT 4294967296 + finished_context FROM job_timelines "
			      "UNION ALL SELECT 4294967296 + scheduled_context FROM job_timelines "
			      "WHERE scheduled_context IS NOT NULL)");
	if ((rc = prepare_owned(h, sql, &st, "reading queues")) < 0)
		return rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct row r = { .kind = ROW_QUEUE, .process = -1 };

		r.id = sqlite3_column_int64(st, 0);
		r.adapter = sqlite3_column_int64(st, 1);
		r.node = sqlite3_column_int64(st, 2);
		r.engine = sqlite3_column_int64(st, 3);
		copy_col(r.name, sizeof(r.name), st, 4);
		copy_col(r.adapter_name, sizeof(r.adapter_name), st, 5);
		if ((ret = push_row(h, &cap, &r)) < 0)
			break;
	}
	sqlite3_finalize(st);
	if (ret < 0)
		return ret;
	if (rc != SQLITE_DONE)
		return sql_fail(h, "reading queues");
	h->n_queues = h->n_rows;
	if ((ret = nf_timeline_check_threads(h->db, h->o->threads, h->o->n_threads, h->o->processes,
					     h->o->n_processes, h->err)) < 0 || (ret = build_thread_rows(h, &cap)) < 0)
		return ret;
	h->threads_end = h->n_rows;
	if ((ret = build_ring_rows(h, &cap)) < 0)
		return ret;
	return build_node_rows(h, &cap);
}

/* The row of a queue or thread (rows are sorted by id within each kind? no: by
 * adapter for queues), found by linear-then-cached lookup. */
static int64_t find_row(const struct html *h, enum row_kind kind, int64_t id, size_t *hint)
{
	size_t lo = kind == ROW_QUEUE ? 0 : h->n_queues, hi = kind == ROW_QUEUE ? h->n_queues : h->threads_end;

	if (*hint >= lo && *hint < hi && h->rows[*hint].id == id)
		return (int64_t)*hint;
	if (kind == ROW_THREAD) {  /* threads are sorted by id */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (h->rows[mid].id < id)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < h->threads_end && h->rows[lo].id == id) {
			*hint = lo;
			return (int64_t)lo;
		}
		return -1;
	}
	for (size_t i = lo; i < hi; i++)
		if (h->rows[i].id == id) {
			*hint = i;
			return (int64_t)i;
		}
	return -1;
}

static int load_handles(struct html *h)
{
	sqlite3_stmt *st;
	size_t cap = 0;
	int rc;

	if (sqlite3_prepare_v2(h->db, "SELECT handle, process FROM fence_handles "
				      "WHERE process IS NOT NULL ORDER BY handle",
			       -1, &st, NULL) != SQLITE_OK)
		return sql_fail(h, "reading fence handles");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (h->n_handles == cap) {
			size_t ncap = cap ? cap * 2 : 256;
			int64_t(*n)[2];

			if (ncap > (1u << 24) || !(n = realloc(h->handles, ncap * sizeof(*n)))) {
				sqlite3_finalize(st);
				return nf_error_set(h->err, NF_ENOMEM, "out of memory for fence handles");
			}
			h->handles = n;
			cap = ncap;
		}
		h->handles[h->n_handles][0] = sqlite3_column_int64(st, 0);
		h->handles[h->n_handles][1] = sqlite3_column_int64(st, 1);
		h->n_handles++;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return sql_fail(h, "reading fence handles");
	return 0;
}

static int64_t handle_process(const struct html *h, int64_t handle)
{
	size_t lo = 0, hi = h->n_handles;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (h->handles[mid][0] < handle)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < h->n_handles && h->handles[lo][0] == handle ? h->handles[lo][1] : -1;
}

static int bin_of(const struct html *h, int64_t t, int nbins)
{
	/* in floating point: a window may span most of int64 */
	double b = ((double)t - (double)h->t0) * nbins / ((double)h->t1 - (double)h->t0);

	return b < 0 ? 0 : b >= nbins ? nbins - 1 : (int)b;
}

/* The start of an operation for placing it: queued, else observed, else end. */
#define OP_START "coalesce(queued_ns, observed_ns, end_ns)"
/* In the window: starts in it, or started before and ends (or is open) after t0. */
#define OP_IN_WINDOW                                                                              \
	OP_START " <= ?2 AND coalesce(end_ns, observed_ns, queued_ns) >= ?1"

/* Pass 1: summaries, the histogram of starts, thread -> process. */
static int pass_counts(struct html *h)
{
	sqlite3_stmt *st;
	char *sql;
	size_t qhint = 0, thint = 0;
	int rc;

	sql = sqlite3_mprintf("SELECT queue, op = 'wait', " OP_START ", thread, handle, id "
			      "FROM fence_ops NOT INDEXED WHERE queue IS NOT NULL AND " OP_IN_WINDOW
			      "%s%s",
			      h->in_q, h->in_f);
	if ((rc = prepare_owned(h, sql, &st, "reading operations")) < 0)
		return rc;
	sqlite3_bind_int64(st, 1, h->t0);
	sqlite3_bind_int64(st, 2, h->t1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t r = find_row(h, ROW_QUEUE, sqlite3_column_int64(st, 0), &qhint);
		int64_t start = sqlite3_column_int64(st, 2);

		if (r < 0)
			continue;
		h->n_ops++;
		h->rows[r].bins[bin_of(h, start, NF_HTML_BINS) * 3 + (sqlite3_column_int(st, 1) ? 0 : 1)]++;
		{
			int hb = bin_of(h, start, HIST_BINS);
			int64_t id = sqlite3_column_int64(st, 5);

			h->hist[hb]++;
			if (id < h->hist_id[2 * hb])
				h->hist_id[2 * hb] = id;
			if (id > h->hist_id[2 * hb + 1])
				h->hist_id[2 * hb + 1] = id;
		}
		if (sqlite3_column_type(st, 3) != SQLITE_NULL && sqlite3_column_type(st, 4) != SQLITE_NULL) {
			int64_t t = find_row(h, ROW_THREAD, sqlite3_column_int64(st, 3), &thint);

			if (t >= 0 && h->rows[t].process < 0)
				h->rows[t].process = handle_process(h, sqlite3_column_int64(st, 4));
		}
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return sql_fail(h, "reading operations");

	sql = sqlite3_mprintf("SELECT thread, start_ns FROM cpu_waits WHERE thread IS NOT NULL "
			      "AND start_ns <= ?2 AND coalesce(end_ns, start_ns) >= ?1%s",
			      h->in_f);
	if ((rc = prepare_owned(h, sql, &st, "reading CPU waits")) < 0)
		return rc;
	sqlite3_bind_int64(st, 1, h->t0);
	sqlite3_bind_int64(st, 2, h->t1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t t = find_row(h, ROW_THREAD, sqlite3_column_int64(st, 0), &thint);

		if (t >= 0)
			h->rows[t].bins[bin_of(h, sqlite3_column_int64(st, 1), NF_HTML_BINS) * 3 + 2]++;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return sql_fail(h, "reading CPU waits");
	return 0;
}

/* The time at the start of histogram bin b. */
static int64_t hist_time(const struct html *h, int b)
{
	return nf_time_add(h->t0, nf_time_from_double(((double)h->t1 - (double)h->t0) * b / HIST_BINS));
}

/* The detail cut: whole histogram bins from t0 holding at most max_ops operations. */
static void find_cut(struct html *h, int64_t max_ops)
{
	int64_t sum = 0;
	int b = 0, b2;

	h->lo_id = INT64_MAX;
	h->hi_id = INT64_MIN;
	if (h->n_ops <= max_ops) {
		h->cut = nf_time_add(h->t1, 1); /* saturated: every start is below INT64_MAX but one at it */
		h->detail_full = 1;
		b = HIST_BINS;
	} else {
		while (b < HIST_BINS && sum + h->hist[b] <= max_ops)
			sum += h->hist[b++];
		if (b == 0)
			b = 1;  /* one bin holds more: take it, pass 2 stops at max_ops */
		h->cut = hist_time(h, b);
	}
	for (int k = 0; k < b; k++) {
		if (!h->hist[k])
			continue;
		if (h->hist_id[2 * k] < h->lo_id)
			h->lo_id = h->hist_id[2 * k];
		if (h->hist_id[2 * k + 1] > h->hi_id)
			h->hi_id = h->hist_id[2 * k + 1];
	}
	if (h->detail_full)
		return;
	sum = 0;
	b2 = b;
	while (b2 < HIST_BINS && sum + h->hist[b2] <= max_ops)
		sum += h->hist[b2++];
	if (b2 == b)
		b2 = b + 1;
	h->next_to = b2 >= HIST_BINS ? h->t1 : hist_time(h, b2);
}

/* Pass 2: the details of the operations before the cut. */
static int pass_details(struct html *h, int64_t max_ops)
{
	sqlite3_stmt *st, *dp;
	char *sql;
	size_t qhint = 0, thint = 0;
	int rc, drc;
	int64_t dep_wait = -1;

	sql = sqlite3_mprintf("SELECT id, queue, op = 'wait', fence, value, queued_ns, observed_ns, "
			      "end_ns, status, thread FROM fence_ops WHERE queue IS NOT NULL "
			      "AND " OP_IN_WINDOW " AND " OP_START " < ?3 AND id BETWEEN ?4 AND ?5%s%s",
			      h->in_q, h->in_f);
	if ((rc = prepare_owned(h, sql, &st, "reading operations")) < 0)
		return rc;
	/* Only the deps of the detailed range are sorted (deps has no index by wait_id). */
	if (sqlite3_prepare_v2(h->db, "SELECT wait_id, signal_id, cpu_signal, stall_ns FROM deps "
				      "WHERE wait_id BETWEEN ?1 AND ?2 ORDER BY wait_id",
			       -1, &dp, NULL) != SQLITE_OK) {
		sqlite3_finalize(st);
		return sql_fail(h, "reading deps");
	}
	sqlite3_bind_int64(st, 1, h->t0);
	sqlite3_bind_int64(st, 2, h->t1);
	sqlite3_bind_int64(st, 3, h->cut);
	sqlite3_bind_int64(st, 4, h->lo_id);
	sqlite3_bind_int64(st, 5, h->hi_id);
	sqlite3_bind_int64(dp, 1, h->lo_id);
	sqlite3_bind_int64(dp, 2, h->hi_id);
	drc = SQLITE_ROW;
	put(h, "\"ops\":[");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		int64_t r = find_row(h, ROW_QUEUE, sqlite3_column_int64(st, 1), &qhint);
		int64_t t = -1;
		const unsigned char *status = sqlite3_column_text(st, 8);
		int is_wait = sqlite3_column_int(st, 2);

		if (r < 0)
			continue;
		if (h->n_detail >= max_ops)
			break;
		/* deps is in wait id order, fence_ops in id order: a merge. */
		while (drc == SQLITE_ROW && dep_wait < id) {
			drc = sqlite3_step(dp);
			dep_wait = drc == SQLITE_ROW ? sqlite3_column_int64(dp, 0) : INT64_MAX;
		}
		if (sqlite3_column_type(st, 9) != SQLITE_NULL)
			t = find_row(h, ROW_THREAD, sqlite3_column_int64(st, 9), &thint);
		if (h->n_detail++)
			put(h, ",\n");
		/* [id,row,wait,fence,value,queued,observed,end,status,thread row,signal,cpu signal,stall] */
		fputc('[', h->f);
		put_i64(h, id);
		fputc(',', h->f);
		put_i64(h, r);
		fputc(',', h->f);
		put_i64(h, is_wait);
		fputc(',', h->f);
		put_col(h, st, 3);
		fputc(',', h->f);
		put_col(h, st, 4);
		fputc(',', h->f);
		put_time(h, st, 5);
		fputc(',', h->f);
		put_time(h, st, 6);
		fputc(',', h->f);
		put_time(h, st, 7);
		fputc(',', h->f);
		put_str(h, status ? (const char *)status : "");
		fputc(',', h->f);
		put_i64(h, t);
		if (is_wait && drc == SQLITE_ROW && dep_wait == id) {
			fputc(',', h->f);
			put_col(h, dp, 1);
			fputc(',', h->f);
			put_col(h, dp, 2);
			fputc(',', h->f);
			put_col(h, dp, 3);
		}
		fputc(']', h->f);
	}
	sqlite3_finalize(dp);
	sqlite3_finalize(st);
	put(h, "],\n");
	if ((rc != SQLITE_DONE && rc != SQLITE_ROW) || (drc != SQLITE_ROW && drc != SQLITE_DONE))
		return sql_fail(h, "reading operations");
	if (rc == SQLITE_ROW)
		h->detail_full = 0;
	return 0;
}

static int write_cpu(struct html *h)
{
	sqlite3_stmt *st;
	char *sql;
	size_t thint = 0;
	int rc, first = 1;

	sql = sqlite3_mprintf("SELECT id, thread, fence, value, start_ns, end_ns, status FROM cpu_waits "
			      "WHERE thread IS NOT NULL AND start_ns <= ?2 AND "
			      "coalesce(end_ns, start_ns) >= ?1 AND start_ns < ?3%s ORDER BY id",
			      h->in_f);
	if ((rc = prepare_owned(h, sql, &st, "reading CPU waits")) < 0)
		return rc;
	sqlite3_bind_int64(st, 1, h->t0);
	sqlite3_bind_int64(st, 2, h->t1);
	sqlite3_bind_int64(st, 3, h->cut);
	put(h, "\"cpuWaits\":[");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t t = find_row(h, ROW_THREAD, sqlite3_column_int64(st, 1), &thint);
		const unsigned char *status = sqlite3_column_text(st, 6);

		if (t < 0)
			continue;
		put(h, first ? "[" : ",\n[");
		first = 0;
		h->n_cpu_waits++;
		put_col(h, st, 0);
		fputc(',', h->f);
		put_i64(h, t);
		fputc(',', h->f);
		put_col(h, st, 2);
		fputc(',', h->f);
		put_col(h, st, 3);
		fputc(',', h->f);
		put_time(h, st, 4);
		fputc(',', h->f);
		put_time(h, st, 5);
		fputc(',', h->f);
		put_str(h, status ? (const char *)status : "");
		fputc(']', h->f);
	}
	sqlite3_finalize(st);
	put(h, "],\n");
	if (rc != SQLITE_DONE)
		return sql_fail(h, "reading CPU waits");

	sql = sqlite3_mprintf("SELECT id, thread, fence, value, ts_ns FROM cpu_signals "
			      "WHERE thread IS NOT NULL AND ts_ns >= ?1 AND ts_ns <= ?2 AND ts_ns < ?3%s "
			      "ORDER BY id",
			      h->in_f);
	if ((rc = prepare_owned(h, sql, &st, "reading CPU signals")) < 0)
		return rc;
	sqlite3_bind_int64(st, 1, h->t0);
	sqlite3_bind_int64(st, 2, h->t1);
	sqlite3_bind_int64(st, 3, h->cut);
	first = 1;
	put(h, "\"cpuSignals\":[");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t t = find_row(h, ROW_THREAD, sqlite3_column_int64(st, 1), &thint);

		if (t < 0)
			continue;
		put(h, first ? "[" : ",\n[");
		first = 0;
		h->n_cpu_signals++;
		put_col(h, st, 0);
		fputc(',', h->f);
		put_i64(h, t);
		fputc(',', h->f);
		put_col(h, st, 2);
		fputc(',', h->f);
		put_col(h, st, 3);
		fputc(',', h->f);
		put_time(h, st, 4);
		fputc(']', h->f);
	}
	sqlite3_finalize(st);
	put(h, "],\n");
	if (rc != SQLITE_DONE)
		return sql_fail(h, "reading CPU signals");
	return 0;
}

/* Anomalies of the window (all of them, not only before the cut: they are few). */
static int write_anomalies(struct html *h)
{
	sqlite3_stmt *st;
	char *sql;
	size_t qhint = 0;
	int rc, first = 1;

	sql = sqlite3_mprintf("SELECT kind, queue, log, first_ns, last_ns, lost_entries, detail "
			      "FROM anomalies WHERE queue IS NOT NULL AND "
			      "coalesce(last_ns, first_ns) >= ?1 AND coalesce(first_ns, last_ns) <= ?2%s "
			      "ORDER BY id",
			      h->in_q);
	if ((rc = prepare_owned(h, sql, &st, "reading anomalies")) < 0)
		return rc;
	sqlite3_bind_int64(st, 1, h->t0);
	sqlite3_bind_int64(st, 2, h->t1);
	put(h, "\"anomalies\":[");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t r = find_row(h, ROW_QUEUE, sqlite3_column_int64(st, 1), &qhint);
		const unsigned char *s;

		if (r < 0)
			continue;
		if (h->n_anomalies >= MAX_ANOMALIES) {
			h->n_anomalies++;
			continue;
		}
		put(h, first ? "[" : ",\n[");
		first = 0;
		h->n_anomalies++;
		s = sqlite3_column_text(st, 0);
		put_str(h, s ? (const char *)s : "");
		fputc(',', h->f);
		put_i64(h, r);
		fputc(',', h->f);
		s = sqlite3_column_text(st, 2);
		put_str(h, s ? (const char *)s : "");
		fputc(',', h->f);
		put_time(h, st, 3);
		fputc(',', h->f);
		put_time(h, st, 4);
		fputc(',', h->f);
		put_col(h, st, 5);
		fputc(',', h->f);
		s = sqlite3_column_text(st, 6);
		put_str(h, s ? (const char *)s : "");
		fputc(']', h->f);
	}
	sqlite3_finalize(st);
	put(h, "],\n");
	if (rc != SQLITE_DONE)
		return sql_fail(h, "reading anomalies");
	return 0;
}

/* ---- kernel and ETW rows ---- */

/* Notes a kind cut at NF_HTML_MAX_EXTRA (named in the page). */
static void cut_kind(struct html *h, const char *kind)
{
	size_t n = strlen(h->cut_kinds);

	snprintf(h->cut_kinds + n, sizeof(h->cut_kinds) - n, "%s%s", n ? "," : "", kind);
}

/* The ring row of (driver, ring), or -1. */
static int64_t ring_row(const struct html *h, const char *driver, const char *ring)
{
	for (size_t i = h->threads_end; i < h->n_rows; i++)
		if (h->rows[i].kind == ROW_RING && !strcmp(h->rows[i].pname, driver) && !strcmp(h->rows[i].name, ring))
			return (int64_t)i;
	return -1;
}

/* The DMA packet row of (adapter, node), or -1. */
static int64_t node_row(const struct html *h, int64_t adapter, int64_t node)
{
	for (size_t i = h->threads_end; i < h->n_rows; i++)
		if (h->rows[i].kind == ROW_NODE && h->rows[i].adapter == adapter && h->rows[i].node == node)
			return (int64_t)i;
	return -1;
}

/* A thread's row or -1, from a column that may be NULL. */
static int64_t thread_col(struct html *h, sqlite3_stmt *st, int col, size_t *hint)
{
	if (sqlite3_column_type(st, col) == SQLITE_NULL)
		return -1;
	return find_row(h, ROW_THREAD, sqlite3_column_int64(st, col), hint);
}

/*
 * Jobs on their rings: [id, ring row, scheduler job, context, seqno, thread
 * row, submitted, started, finished, status], and their dependencies
 * [job, dep job, dep context, dep seqno, 'finished'|'scheduled', reported].
 */
static int write_jobs(struct html *h)
{
	sqlite3_stmt *st;
	size_t thint = 0;
	int rc, first = 1, any_ring = 0;
	int64_t lo = INT64_MAX, hi = INT64_MIN;

	for (size_t i = h->threads_end; i < h->n_rows; i++)
		any_ring |= h->rows[i].kind == ROW_RING;
	put(h, "\"jobs\":[");
	if (any_ring) {
		/* A bound on a finish (jobs.finished_bound_ns) is not a time the trace
		 * shows: the job is drawn as one whose finish is unknown and the bound
		 * goes beside it for the tooltip. */
		if (sqlite3_prepare_v2(h->db, "SELECT id, driver, coalesce(ring, ''), job, context, seqno, thread, "
					      "submitted_ns, started_ns, finished_ns, status, finished_bound_ns, "
					      "coalesce(bound_source, finish_source) FROM jobs "
					      "WHERE coalesce(submitted_ns, started_ns, finished_ns) <= ?2 AND "
					      "coalesce(finished_ns, finished_bound_ns, started_ns, submitted_ns) >= ?1 ORDER BY id",
				       -1, &st, NULL) != SQLITE_OK)
			return sql_fail(h, "reading jobs");
		sqlite3_bind_int64(st, 1, h->t0);
		sqlite3_bind_int64(st, 2, h->t1);
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			const char *d = (const char *)sqlite3_column_text(st, 1);
			const char *r = (const char *)sqlite3_column_text(st, 2);
			const unsigned char *status = sqlite3_column_text(st, 10);
			int64_t row = ring_row(h, d ? d : "", r ? r : "");

			if (row < 0)
				continue;
			if (h->n_jobs >= NF_HTML_MAX_EXTRA) {
				cut_kind(h, "jobs");
				break;
			}
			put(h, first ? "[" : ",\n[");
			first = 0;
			h->n_jobs++;
			if (sqlite3_column_int64(st, 0) < lo)
				lo = sqlite3_column_int64(st, 0);
			if (sqlite3_column_int64(st, 0) > hi)
				hi = sqlite3_column_int64(st, 0);
			put_col(h, st, 0);
			fputc(',', h->f);
			put_i64(h, row);
			for (int c = 3; c <= 5; c++) {
				fputc(',', h->f);
				put_col(h, st, c);
			}
			fputc(',', h->f);
			put_i64(h, thread_col(h, st, 6, &thint));
			for (int c = 7; c <= 9; c++) {
				fputc(',', h->f);
				put_time(h, st, c);
			}
			fputc(',', h->f);
			put_str(h, status ? (const char *)status : "");
			fputc(',', h->f);
			put_time(h, st, 11);
			fputc(',', h->f);
			put_str(h, sqlite3_column_type(st, 12) == SQLITE_NULL ? "" : (const char *)sqlite3_column_text(st, 12));
			fputc(']', h->f);
		}
		sqlite3_finalize(st);
		if (rc != SQLITE_DONE && rc != SQLITE_ROW)
			return sql_fail(h, "reading jobs");
	}
	put(h, "],\n\"jobDeps\":[");
	first = 1;
	if (h->n_jobs) {
		if (sqlite3_prepare_v2(h->db, "SELECT job, dep_job, dep_context, dep_seqno, dep_fence, ts_ns "
					      "FROM job_deps WHERE job BETWEEN ?1 AND ?2 ORDER BY job, ts_ns",
				       -1, &st, NULL) != SQLITE_OK)
			return sql_fail(h, "reading job_deps");
		sqlite3_bind_int64(st, 1, lo);
		sqlite3_bind_int64(st, 2, hi);
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			const unsigned char *which = sqlite3_column_text(st, 4);

			if (h->n_job_deps >= NF_HTML_MAX_EXTRA) {
				cut_kind(h, "job deps");
				break;
			}
			put(h, first ? "[" : ",\n[");
			first = 0;
			h->n_job_deps++;
			for (int c = 0; c < 4; c++) {
				put_col(h, st, c);
				fputc(',', h->f);
			}
			if (which)
				put_str(h, (const char *)which);
			else
				put(h, "null");
			fputc(',', h->f);
			put_time(h, st, 5);
			fputc(']', h->f);
		}
		sqlite3_finalize(st);
		if (rc != SQLITE_DONE && rc != SQLITE_ROW)
			return sql_fail(h, "reading job_deps");
	}
	put(h, "],\n");
	return 0;
}

/*
 * Points in time of the window, flattened: "key":[t, a, b, ...] with the
 * given integer columns after the time (column 0, relative to t0).
 */
static int write_points(struct html *h, const char *key, const char *sql, int ncols, int64_t *n,
			const char *what)
{
	sqlite3_stmt *st;
	int rc;

	put(h, "\"");
	put(h, key);
	put(h, "\":[");
	if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) != SQLITE_OK)
		return sql_fail(h, what);
	sqlite3_bind_int64(st, 1, h->t0);
	sqlite3_bind_int64(st, 2, h->t1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (*n >= NF_HTML_MAX_EXTRA) {
			cut_kind(h, key);
			break;
		}
		if ((*n)++)
			fputc(',', h->f);
		put_time(h, st, 0);
		for (int c = 1; c < ncols; c++) {
			fputc(',', h->f);
			put_col(h, st, c);
		}
	}
	sqlite3_finalize(st);
	put(h, "],\n");
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : sql_fail(h, what);
}

/* User markers on their threads' rows: [id, thread row, at, text (up to 200 bytes)]. */
static int write_markers(struct html *h)
{
	sqlite3_stmt *st;
	size_t thint = 0;
	int rc, first = 1;

	put(h, "\"markers\":[");
	if (sqlite3_prepare_v2(h->db, "SELECT id, thread, ts_ns, substr(text, 1, 200) FROM markers "
				      "WHERE thread IS NOT NULL AND ts_ns BETWEEN ?1 AND ?2 ORDER BY ts_ns, id",
			       -1, &st, NULL) != SQLITE_OK)
		return sql_fail(h, "reading markers");
	sqlite3_bind_int64(st, 1, h->t0);
	sqlite3_bind_int64(st, 2, h->t1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t t = thread_col(h, st, 1, &thint);
		const unsigned char *text = sqlite3_column_text(st, 3);

		if (t < 0)
			continue;
		if (h->n_markers >= NF_HTML_MAX_EXTRA) {
			cut_kind(h, "markers");
			break;
		}
		put(h, first ? "[" : ",\n[");
		first = 0;
		h->n_markers++;
		put_col(h, st, 0);
		fputc(',', h->f);
		put_i64(h, t);
		fputc(',', h->f);
		put_time(h, st, 2);
		fputc(',', h->f);
		put_str(h, text ? (const char *)text : "");
		fputc(']', h->f);
	}
	sqlite3_finalize(st);
	put(h, "],\n");
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : sql_fail(h, "reading markers");
}

/*
 * When the shown threads ran (cpu_runs), flattened [thread row, start, end,
 * cpu, ...]; a run going on at the window's start starts there, one going on
 * at its end ends there. Not with a fence filter (as the static report).
 */
static int write_runs(struct html *h)
{
	sqlite3_stmt *st;
	size_t thint = 0;
	int rc;
	int64_t end_all = h->session_end < h->t1 ? h->session_end : h->t1;

	put(h, "\"runs\":[");
	if (!h->o->n_fences) {
		if (sqlite3_prepare_v2(h->db, "SELECT thread, start_ns, end_ns, cpu FROM cpu_runs WHERE thread IS NOT NULL "
					      "AND (end_ns IS NULL OR end_ns >= ?1) AND (start_ns IS NULL OR start_ns <= ?2) "
					      "ORDER BY thread, start_ns",
				       -1, &st, NULL) != SQLITE_OK)
			return sql_fail(h, "reading cpu_runs");
		sqlite3_bind_int64(st, 1, h->t0);
		sqlite3_bind_int64(st, 2, h->t1);
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			int64_t t = thread_col(h, st, 0, &thint);
			int64_t a = sqlite3_column_type(st, 1) == SQLITE_NULL ? h->t0 : sqlite3_column_int64(st, 1);
			int64_t b = sqlite3_column_type(st, 2) == SQLITE_NULL ? end_all : sqlite3_column_int64(st, 2);

			if (t < 0 || b < a)
				continue;
			if (h->n_runs >= NF_HTML_MAX_EXTRA) {
				cut_kind(h, "runs");
				break;
			}
			if (h->n_runs++)
				fputc(',', h->f);
			put_i64(h, t);
			fputc(',', h->f);
			put_i64(h, nf_time_sub(a < h->t0 ? h->t0 : a, h->t0));
			fputc(',', h->f);
			put_i64(h, nf_time_sub(b, h->t0));
			fputc(',', h->f);
			put_col(h, st, 3);
		}
		sqlite3_finalize(st);
		if (rc != SQLITE_DONE && rc != SQLITE_ROW)
			return sql_fail(h, "reading cpu_runs");
	}
	put(h, "],\n");
	return 0;
}

/* DMA packets on their nodes' rows: [id, node row, queue row, packet type, submission, start, isr, end, status]. */
static int write_dma(struct html *h)
{
	sqlite3_stmt *st;
	char *sql;
	size_t qhint = 0;
	int rc, first = 1;

	put(h, "\"dma\":[");
	if (h->is_etw) {
		sql = sqlite3_mprintf("SELECT id, coalesce(adapter, -1), coalesce(node, -1), queue, packet_type, "
				      "submission_id, start_ns, isr_ns, end_ns, status FROM dma_packets "
				      "WHERE start_ns <= ?2 AND (end_ns IS NULL OR end_ns >= ?1)%s ORDER BY id",
				      h->in_q);
		if ((rc = prepare_owned(h, sql, &st, "reading dma_packets")) < 0)
			return rc;
		sqlite3_bind_int64(st, 1, h->t0);
		sqlite3_bind_int64(st, 2, h->t1);
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			int64_t r = node_row(h, sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2));
			int64_t q = sqlite3_column_type(st, 3) == SQLITE_NULL ? -1
				    : find_row(h, ROW_QUEUE, sqlite3_column_int64(st, 3), &qhint);
			const unsigned char *status = sqlite3_column_text(st, 9);

			if (r < 0)
				continue;
			if (h->n_dma >= NF_HTML_MAX_EXTRA) {
				cut_kind(h, "DMA packets");
				break;
			}
			put(h, first ? "[" : ",\n[");
			first = 0;
			h->n_dma++;
			put_col(h, st, 0);
			fputc(',', h->f);
			put_i64(h, r);
			fputc(',', h->f);
			put_i64(h, q);
			fputc(',', h->f);
			put_col(h, st, 4);
			fputc(',', h->f);
			put_col(h, st, 5);
			for (int c = 6; c <= 8; c++) {
				fputc(',', h->f);
				put_time(h, st, c);
			}
			fputc(',', h->f);
			put_str(h, status ? (const char *)status : "");
			fputc(']', h->f);
		}
		sqlite3_finalize(st);
		if (rc != SQLITE_DONE && rc != SQLITE_ROW)
			return sql_fail(h, "reading dma_packets");
	}
	put(h, "],\n");
	return 0;
}

/* ---- frames (the frames analysis: displays, flips, frames, frame_path) ---- */

/* A ring's row by its name alone (frame_path names rings so), or -1. */
static int64_t ring_row_named(const struct html *h, const char *ring)
{
	for (size_t i = h->threads_end; ring && i < h->n_rows; i++)
		if (h->rows[i].kind == ROW_RING && !strcmp(h->rows[i].name, ring))
			return (int64_t)i;
	return -1;
}

/* One statement's rows as arrays, each column by its kind ('i' integer or
 * null, 't' time, 's' text, 'q' queue row, 'h' thread row, 'r' ring row),
 * at most NF_HTML_MAX_EXTRA of them: "key":[[...],...]. */
static int write_table(struct html *h, const char *key, const char *sql, const char *cols, int64_t *n)
{
	sqlite3_stmt *st;
	size_t qhint = 0, thint = 0;
	int rc;

	put(h, "\"");
	put(h, key);
	put(h, "\":[");
	if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) != SQLITE_OK)
		return sql_fail(h, key);
	sqlite3_bind_int64(st, 1, h->t0);
	sqlite3_bind_int64(st, 2, h->t1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (*n >= NF_HTML_MAX_EXTRA) {
			cut_kind(h, key);
			break;
		}
		put(h, (*n)++ ? ",\n[" : "[");
		for (int c = 0; cols[c]; c++) {
			if (c)
				fputc(',', h->f);
			if (sqlite3_column_type(st, c) == SQLITE_NULL && cols[c] != 'q' && cols[c] != 'h' && cols[c] != 'r')
				put(h, "null");
			else if (cols[c] == 't')
				put_time(h, st, c);
			else if (cols[c] == 's')
				put_str(h, (const char *)sqlite3_column_text(st, c));
			else if (cols[c] == 'q')
				put_i64(h, sqlite3_column_type(st, c) == SQLITE_NULL ? -1
					   : find_row(h, ROW_QUEUE, sqlite3_column_int64(st, c), &qhint));
			else if (cols[c] == 'h')
				put_i64(h, thread_col(h, st, c, &thint));
			else if (cols[c] == 'r')
				put_i64(h, ring_row_named(h, (const char *)sqlite3_column_text(st, c)));
			else
				put_col(h, st, c);
		}
		fputc(']', h->f);
	}
	sqlite3_finalize(st);
	put(h, "],\n");
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : sql_fail(h, key);
}

/*
 * The display rows' data, as the static report draws them: "displays"
 * [display, name, frames] with a flip or frame in the window (-1: the frames no
 * display shows, named by their swap chain); "dvblanks" flat [t, display];
 * "flips" [display, from (ready, else queued), to (latched; null: never),
 * status, frame, late]; "frames" whose present is in the window [frame,
 * display (-1), present, ready, screen, interval, late (null: not judged),
 * status, swap chain, process, blame, MsGPUBusy, MsGPUWait, MsUntilDisplayed
 * (the three in ns), missed blanks, late_ns, blame_seq, blame_ns, refresh
 * period, its queues' waits (frame_gpu)]; "framePath" their critical paths [frame, start,
 * end, kind, queue row, thread row, ring row, what], in order. None with a
 * queue or fence filter (the static report's rule).
 */
static int write_frames(struct html *h)
{
	int ret;

	if (h->o->n_queues || h->o->n_fences) {
		put(h, "\"displays\":[],\"dvblanks\":[],\"flips\":[],\"frames\":[],\"framePath\":[],\n");
		return 0;
	}
	if ((ret = write_table(h, "displays",
			       "SELECT id, name, n FROM ("
			       "SELECT d.display AS id, coalesce(d.name, '') AS name, "
			       "  (SELECT count(*) FROM frames f WHERE f.display = d.display) AS n "
			       "FROM displays d WHERE EXISTS (SELECT 1 FROM flips l WHERE l.display = d.display "
			       "  AND coalesce(l.done_ns, l.queued_ns) >= ?1 AND l.queued_ns <= ?2) "
			       "OR EXISTS (SELECT 1 FROM frames f WHERE f.display = d.display AND f.present_ns BETWEEN ?1 AND ?2) "
			       "UNION ALL SELECT -1, CASE WHEN count(DISTINCT swapchain) = 1 THEN min(swapchain) "
			       "  ELSE count(DISTINCT swapchain) || ' swap chains' END, count(*) FROM frames "
			       "  WHERE display IS NULL AND present_ns BETWEEN ?1 AND ?2 HAVING count(*) > 0) ORDER BY id = -1, id",
			       "isi", &h->n_displays)) < 0 ||
	    (ret = write_points(h, "dvblanks", "SELECT ts_ns, display FROM display_vblanks WHERE ts_ns BETWEEN ?1 AND ?2 "
					       "ORDER BY ts_ns", 2, &h->n_dvblanks, "reading display_vblanks")) < 0 ||
	    (ret = write_table(h, "flips",
			       "SELECT l.display, coalesce(l.ready_ns, l.queued_ns), l.done_ns, l.status, f.frame, "
			       "coalesce(f.late, 0) FROM flips l LEFT JOIN frames f ON f.present = l.present "
			       "WHERE l.display IS NOT NULL AND coalesce(l.ready_ns, l.queued_ns) IS NOT NULL "
			       "AND coalesce(l.ready_ns, l.queued_ns) <= ?2 AND coalesce(l.done_ns, ?2) >= ?1 "
			       "ORDER BY l.display, coalesce(l.ready_ns, l.queued_ns), l.id",
			       "ittsii", &h->n_flips)) < 0 ||
	    (ret = write_table(h, "frames",
			       "SELECT frame, coalesce(display, -1), present_ns, ready_ns, screen_ns, interval_ns, late, "
			       "status, swapchain, process, blame, MsGPUBusy * 1e6, MsGPUWait * 1e6, MsUntilDisplayed * 1e6, "
			       "missed_vblanks, late_ns, blame_seq, blame_ns, refresh_ns, "
			       "(SELECT sum(wait_ns) FROM frame_gpu g WHERE g.frame = frames.frame) FROM frames "
			       "WHERE present_ns BETWEEN ?1 AND ?2 ORDER BY frame",
			       "iitttiissisiiiiiiiii", &h->n_frames)) < 0)
		return ret;
	return write_table(h, "framePath",
			   "SELECT p.frame, p.start_ns, p.end_ns, p.kind, p.queue, p.thread, p.ring, p.what "
			   "FROM frames f JOIN frame_path p ON p.frame = f.frame "
			   "WHERE f.present_ns BETWEEN ?1 AND ?2 ORDER BY p.frame, p.seq",
			   "ittsqhrs", &h->n_frame_segs);
}

static int write_extras(struct html *h)
{
	int ret;

	if ((ret = write_jobs(h)) < 0 ||
	    (ret = write_points(h, "vblanks", "SELECT ts_ns, crtc, seq FROM vblanks WHERE ts_ns BETWEEN ?1 AND ?2 "
					      "ORDER BY ts_ns", 3, &h->n_vblanks, "reading vblanks")) < 0 ||
	    (ret = write_markers(h)) < 0 || (ret = write_runs(h)) < 0 || (ret = write_dma(h)) < 0 ||
	    (ret = write_frames(h)) < 0)
		return ret;
	if (!h->is_etw) {
		put(h, "\"vsyncs\":[],\n");
		return 0;
	}
	return write_points(h, "vsyncs", "SELECT ts_ns, adapter, target, frame FROM vsyncs "
					 "WHERE ts_ns BETWEEN ?1 AND ?2 ORDER BY ts_ns", 4, &h->n_vsyncs,
			    "reading vsyncs");
}

static void write_rows(struct html *h)
{
	put(h, "\"rows\":[");
	for (size_t i = 0; i < h->n_rows; i++) {
		const struct row *r = &h->rows[i];
		int first = 1;

		put(h, i ? ",\n{" : "{");
		static const char *const kinds[] = { "queue", "thread", "ring", "node" };

		put(h, "\"kind\":\"");
		put(h, kinds[r->kind]);
		put(h, "\",\"id\":");
		put_big(h, r->id);
		put(h, ",\"adapter\":");
		put_i64(h, r->adapter);
		put(h, ",\"node\":");
		put_i64(h, r->node);
		put(h, ",\"engine\":");
		put_i64(h, r->engine);
		put(h, ",\"process\":");
		put_i64(h, r->process);
		put(h, ",\"name\":");
		put_str(h, r->name);
		put(h, ",\"adapterName\":");
		put_str(h, r->adapter_name);
		if (r->kind == ROW_THREAD || r->kind == ROW_RING) {
			put(h, r->kind == ROW_RING ? ",\"driver\":" : ",\"pname\":");
			put_str(h, r->pname);
		}
		if (r->kind == ROW_RING) {
			put(h, ",\"count\":");
			put_i64(h, r->count);
		}
		/* Summary bins, sparse: [bin, waits, signals, cpu waits]... */
		put(h, ",\"bins\":[");
		for (int b = 0; b < NF_HTML_BINS; b++) {
			const uint32_t *c = &r->bins[b * 3];

			if (!c[0] && !c[1] && !c[2])
				continue;
			put(h, first ? "" : ",");
			first = 0;
			put_i64(h, b);
			for (int k = 0; k < 3; k++) {
				fputc(',', h->f);
				put_i64(h, c[k]);
			}
		}
		put(h, "]}");
	}
	put(h, "],\n");
}

static void write_meta(struct html *h, int64_t max_ops)
{
	put(h, "\"title\":");
	put_str(h, h->o->title ? h->o->title : "nftrace session");
	put(h, ",\"session\":");
	put_str(h, h->o->session ? h->o->session : "DIR");
	/* the note's command: the directory as one shell word, to paste as it is */
	put(h, ",\"sessionShell\":");
	put_shell_word(h, h->o->session ? h->o->session : "DIR");
	put(h, ",\"source\":");
	put_str(h, h->source);
	put(h, ",\"mode\":");
	put_str(h, h->mode);
	put(h, ",\"seed\":");
	put_str(h, h->seed);
	put(h, ",\"scenario\":");
	put_str(h, h->scenario);
	put(h, ",\"t0\":");
	put_i64(h, h->t0);
	put(h, ",\"span\":");
	put_i64(h, nf_time_sub(h->t1, h->t0));
	put(h, ",\"sessionEnd\":");
	put_i64(h, h->session_end);
	put(h, ",\"bins\":");
	put_i64(h, NF_HTML_BINS);
	put(h, ",\"nOps\":");
	put_i64(h, h->n_ops);
	put(h, ",\"nDetail\":");
	put_i64(h, h->n_detail);
	put(h, ",\"maxOps\":");
	put_i64(h, max_ops);
	put(h, ",\"detailFull\":");
	put_i64(h, h->detail_full);
	put(h, ",\"cut\":");
	put_i64(h, nf_time_sub(h->detail_full ? h->t1 : h->cut, h->t0));
	put(h, ",\"nextTo\":");
	put_i64(h, h->detail_full ? 0 : h->next_to);
	put(h, ",\"nAnomalies\":");
	put_i64(h, h->n_anomalies);
	put(h, ",\"etw\":");
	put_i64(h, h->is_etw);
	put(h, ",\"threadsLeftOut\":");
	put_i64(h, h->threads_left_out);
	put(h, ",\"extraCut\":");
	put_str(h, h->cut_kinds);
	put(h, ",\"extraCutAt\":");
	put_i64(h, NF_HTML_MAX_EXTRA);
	put(h, ",\"filters\":{\"queues\":[");
	for (int i = 0; i < h->o->n_queues; i++) {
		put(h, i ? "," : "");
		put_big(h, h->o->queues[i]);
	}
	put(h, "],\"fences\":[");
	for (int i = 0; i < h->o->n_fences; i++) {
		put(h, i ? "," : "");
		put_big(h, h->o->fences[i]);
	}
	put(h, "]}\n");
}

/* The page template is split at its data marker. */
static const char data_marker[] = "/*@NF_DATA@*/";

static int write_page(struct html *h, int64_t max_ops)
{
	const char *mark = strstr(nf_report_html, data_marker);
	int ret;

	if (!mark)
		return nf_error_set(h->err, NF_EFORMAT, "page template without its data marker");
	fwrite(nf_report_html, 1, (size_t)(mark - nf_report_html), h->f);
	put(h, "{");
	if ((ret = pass_details(h, max_ops)) < 0 || (ret = write_cpu(h)) < 0 ||
	    (ret = write_anomalies(h)) < 0 || (ret = write_extras(h)) < 0)
		return ret;
	write_rows(h);
	write_meta(h, max_ops);
	put(h, "}");
	put(h, mark + sizeof(data_marker) - 1);
	return 0;
}

static void html_release(struct html *h)
{
	for (size_t i = 0; i < h->n_rows; i++)
		free(h->rows[i].bins);
	free(h->rows);
	free(h->handles);
	free(h->hist);
	free(h->hist_id);
	sqlite3_free(h->in_q);
	sqlite3_free(h->in_f);
	sqlite3_close(h->db);  /* ends the read transaction */
}

int nf_html_report(const char *db_path, const struct nf_html_options *opts, struct nf_error *err)
{
	struct html h;
	struct nf_outfile of;
	int64_t max_ops;
	int ret;

	if (!db_path || !opts || !opts->output || !*opts->output)
		return nf_error_set(err, NF_EINVAL, "html report: no database or no output file");
	max_ops = opts->max_ops ? opts->max_ops : NF_HTML_DEFAULT_MAX_OPS;
	if (max_ops < 1 || max_ops > NF_HTML_MAX_MAX_OPS)
		return nf_error_set(err, NF_EINVAL, "--max-ops must be between 1 and %d",
				    NF_HTML_MAX_MAX_OPS);
	memset(&h, 0, sizeof(h));
	h.o = opts;
	h.err = err;
	h.in_q = in_list("queue", opts->queues, opts->queues ? opts->n_queues : 0);
	h.in_f = in_list("fence", opts->fences, opts->fences ? opts->n_fences : 0);
	h.hist = calloc(HIST_BINS, sizeof(uint32_t));
	h.hist_id = malloc(2 * HIST_BINS * sizeof(int64_t));
	if (!h.in_q || !h.in_f || !h.hist || !h.hist_id) {
		ret = nf_error_set(err, NF_ENOMEM, "out of memory");
		goto out_release;
	}
	for (int k = 0; k < HIST_BINS; k++) {
		h.hist_id[2 * k] = INT64_MAX;
		h.hist_id[2 * k + 1] = INT64_MIN;
	}
	if ((ret = nf_timeline_open_read(db_path, &h.db, h.err)) < 0)
		goto out_release;
	ret = read_meta(&h);
	h.is_etw = strcmp(h.source, "etw") == 0;
	if (ret < 0 || (ret = resolve_window(&h)) < 0 ||
	    (ret = check_filters(&h)) < 0 || (ret = build_rows(&h)) < 0 ||
	    (ret = load_handles(&h)) < 0 || (ret = pass_counts(&h)) < 0) {
		if (ret != NF_EINVAL && ret != NF_ENOENT)
			nf_error_prefix(err, "%s", db_path);
		goto out_release;
	}
	find_cut(&h, max_ops);
	/* Written beside the name and renamed over it when whole: a failure
	 * leaves the previous page, and no partial one. */
	if ((ret = nf_outfile_open(&of, opts->output, err)) < 0)
		goto out_release;
	h.f = of.f;
	setvbuf(h.f, NULL, _IOFBF, 1 << 20);
	ret = write_page(&h, max_ops);
	if (ret == 0 && ferror(h.f))
		ret = nf_error_set(err, NF_EIO, "%s: write failed: %s", opts->output, strerror(errno));
	{
		int crc = nf_outfile_close(&of, ret == 0, err);

		if (ret == 0)
			ret = crc;
	}
	h.f = NULL;
out_release:
	html_release(&h);
	return ret;
}
