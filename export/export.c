/*
 * nf_export: walks a timeline database (schemas/timeline.sql, read-only, as a
 * user's script would) and hands tracks, slices, instants, flows and counters
 * to a writer of the chosen format (perfetto.c, chrome_json.c). See
 * include/contract/export.h for what is written.
 *
 * Streaming: fence_ops is read once in id order; the flows come from two
 * sorted reads of deps merged with it (by wait for the flow's end, by signal
 * for its start), so nothing per operation is kept. What stays in memory is
 * per queue and thread: its track and, per lane, when the lane's last slice
 * ends (a slice goes to the first lane that is free before it starts, so that
 * slices on one track never overlap without nesting).
 */
#include "export_int.h"
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
/* pass_ops: operations without a time were seen, the export is to be made again. */
#define EXPORT_RETRY 1
#define NAME_MAX_LEN 200
/*
 * Process ids we make up (every process of the export is ours: real thread
 * ids appear only as tids in the CPU threads' one), small so that JSON's
 * per-event "pid" stays short. The tids of tracks we make up: in the CPU
 * threads' process above every Linux thread id (pid_max <= 2^22), elsewhere
 * small (unique in the whole file).
 */
#define PID_CPU 1
#define PID_ADAPTER0 16
#define TID_SYNTH0 0x40000000
#define PID_JOBS 2    /* GPU jobs of imported Linux captures */
#define PID_DISPLAY 3 /* vblanks (and VSyncs that name no adapter), flips */
#define PID_FRAMES 4  /* frames, a track per swap chain */

/* The lanes of one queue or thread: lane 0 is its own track, lane k a child. */
struct lane {
	struct nf_xtrack t;
	int64_t end;        /* end of its last slice */
	int used;
};

struct lanes {
	struct lane *v;
	size_t n, cap;
	char *name;          /* the base name ("Q0 0x40000040"), lanes "... #2" */
	char **names;        /* lane names (lane 0 uses name) */
};

struct xadapter {
	int64_t adapter;
	char *name;
	struct nf_xtrack t;
	int described;
};

struct xqueue {
	int64_t queue;
	int64_t adapter;
	int has_adapter;
	char *name;
	struct lanes lanes;
	struct nf_xtrack anom;       /* "anomalies" child, uuid 0 until described */
	struct nf_xtrack counter[3]; /* waits, signals, other logs */
	char *counter_name[3];
	int64_t lost_total[3];
};

struct xthread {
	int64_t thread;
	struct lanes lanes;
};

struct exporter {
	sqlite3 *db;
	/* A second connection for what the main thread reads while the scan of
	 * fence_ops runs on db in the reader thread (deps by signal, thread names). */
	sqlite3 *db2;
	/* A third, the reader thread's for deps while it scans fence_ops (the flows). */
	sqlite3 *db3;
	const struct nf_export_options *opts;
	struct nf_xwriter *w;
	struct nf_export_stats st;
	struct nf_error *err;
	int64_t t0, t1;           /* window, inclusive */
	int filtered;             /* any filter or window given */
	uint64_t next_uuid;
	int32_t next_tid;         /* made-up tids in the CPU threads' process */
	int32_t next_small_tid;   /* made-up tids elsewhere */
	struct xadapter *adapters;
	size_t n_adapters;
	struct xqueue *queues;    /* sorted by queue */
	size_t n_queues, cap_queues;
	struct xthread *threads;  /* sorted by thread */
	size_t n_threads, cap_threads;
	struct nf_xtrack cpu;     /* the "CPU threads" process */
	int cpu_described;
	struct xqueue session;    /* items with no queue and no thread */
	int session_ready;
	sqlite3_stmt *thread_name;
	int check_ends;           /* flows' other ends checked by joins (see flowsrc_open) */
	int force_check;          /* check_ends even unfiltered (the second try, see pass_ops) */
	struct xgroup *groups;    /* tracks of imported items (rings, CRTCs, nodes, targets) */
	size_t n_groups, cap_groups;
	struct nf_xtrack jobs_proc, display_proc, frames_proc;
	int jobs_described, display_described, frames_described;
	int64_t job_flow_base;    /* flow id of job_deps rowid 1 */
	/* SQL predicates from the filters (each "" or " AND ..."). */
	char *op_pred_f, *op_pred_s, *op_pred_w, *cpu_pred_c, *cpu_pred;
};

static int sql_fail(struct exporter *x, const char *what)
{
	return nf_sql_error(x->db, x->err, "%s", what);
}

static int oom(struct exporter *x)
{
	return nf_error_set(x->err, NF_ENOMEM, "out of memory while exporting");
}

/* Prepares sql (an sqlite3_mprintf result, NULL: out of memory) on db and
 * frees it; 0, or the error named by what (NF_ESQL, NF_ENOMEM). */
static int prepare_owned(struct exporter *x, sqlite3 *db, char *sql, sqlite3_stmt **st,
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

static int val_null(sqlite3_value *v)
{
	return sqlite3_value_type(v) == SQLITE_NULL;
}

static int col_null(sqlite3_stmt *st, int col)
{
	return sqlite3_column_type(st, col) == SQLITE_NULL;
}

static int64_t col_or(sqlite3_stmt *st, int col, int64_t dflt)
{
	return col_null(st, col) ? dflt : sqlite3_column_int64(st, col);
}

/* Hexadecimal of v after prefix into d ("0x..."); returns the length. */
static size_t put_hex(char *d, uint64_t v)
{
	static const char hx[] = "0123456789abcdef";
	size_t n = 0;
	int started = 0;

	d[n++] = '0';
	d[n++] = 'x';
	for (int sh = 60; sh >= 0; sh -= 4) {
		unsigned k = (unsigned)(v >> sh) & 15;

		if (k || started || sh == 0) {
			d[n++] = hx[k];
			started = 1;
		}
	}
	return n;
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
static void op_name(char *d, const char *prefix, sqlite3_stmt *st, int fcol)
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
static int32_t new_tid(struct exporter *x, int32_t pid)
{
	return pid == PID_CPU ? x->next_tid++ : x->next_small_tid++;
}

static int describe(struct exporter *x, const struct nf_xtrack *t)
{
	int ret = x->w->track(x->w, t);

	x->st.tracks++;
	return ret;
}

/* ---- tracks ---- */

static int cpu_process(struct exporter *x)
{
	if (x->cpu_described)
		return 0;
	x->cpu_described = 1;
	x->cpu.kind = NF_XT_PROCESS;
	x->cpu.uuid = x->next_uuid++;
	x->cpu.pid = PID_CPU;
	x->cpu.sort = 1000000;
	x->cpu.name = "CPU threads";
	return describe(x, &x->cpu);
}

static struct xadapter *find_adapter(struct exporter *x, int64_t adapter)
{
	for (size_t i = 0; i < x->n_adapters; i++)
		if (x->adapters[i].adapter == adapter)
			return &x->adapters[i];
	return NULL;
}

static int adapter_process(struct exporter *x, struct xadapter *a)
{
	if (a->described)
		return 0;
	a->described = 1;
	a->t.kind = NF_XT_PROCESS;
	a->t.uuid = x->next_uuid++;
	a->t.pid = PID_ADAPTER0 + (int32_t)(a - x->adapters);
	a->t.sort = (int32_t)(a - x->adapters);
	a->t.name = a->name;
	return describe(x, &a->t);
}

static void lanes_release(struct lanes *l)
{
	for (size_t i = 1; i < l->n; i++)
		free(l->names[i]);
	free(l->names);
	free(l->v);
	free(l->name);
	memset(l, 0, sizeof(*l));
}

/* Adds a lane (lane 0: base, as its owner fills it; others: children of lane 0)
 * and describes its track. */
static int lanes_add(struct exporter *x, struct lanes *l, const struct nf_xtrack *base)
{
	struct lane *ln;

	if (l->n == NF_EXPORT_MAX_LANES)
		return nf_error_set(x->err, NF_ENOMEM, "%s: more than %d operations in flight at once",
				    l->name, NF_EXPORT_MAX_LANES);
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 4;
		struct lane *nv = realloc(l->v, ncap * sizeof(*nv));
		char **nn;

		if (!nv)
			return oom(x);
		l->v = nv;
		nn = realloc(l->names, ncap * sizeof(*nn));
		if (!nn)
			return oom(x);
		l->names = nn;
		l->cap = ncap;
	}
	ln = &l->v[l->n];
	memset(ln, 0, sizeof(*ln));
	ln->end = INT64_MIN;
	if (l->n == 0) {
		ln->t = *base;
		ln->t.name = l->name;
		l->names[0] = NULL;
	} else {
		char *nm = malloc(strlen(l->name) + 24);

		if (!nm)
			return oom(x);
		sprintf(nm, "%s #%zu", l->name, l->n + 1);
		l->names[l->n] = nm;
		ln->t.kind = NF_XT_PLAIN;
		ln->t.parent = l->v[0].t.uuid;
		ln->t.pid = l->v[0].t.pid;
		ln->t.tid = new_tid(x, ln->t.pid);
		ln->t.sort = l->v[0].t.sort;
		ln->t.name = nm;
	}
	ln->t.uuid = x->next_uuid++;
	l->n++;
	return describe(x, &ln->t);
}

/*
 * The track for a slice from start to end: the first lane whose last slice
 * ended before start, else a new lane (described now, before its first
 * event). Lane 0 must exist.
 */
static int lanes_pick(struct exporter *x, struct lanes *l, int64_t start, int64_t end,
		      const struct nf_xtrack **out)
{
	size_t i;
	int ret;

	for (i = 0; i < l->n; i++)
		if (l->v[i].end < start)
			break;
	if (i == l->n && (ret = lanes_add(x, l, NULL)) < 0)
		return ret;
	l->v[i].end = end;
	l->v[i].used = 1;
	*out = &l->v[i].t;
	return 0;
}

static struct xqueue *find_queue(struct exporter *x, int64_t queue)
{
	size_t lo = 0, hi = x->n_queues;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->queues[mid].queue == queue)
			return &x->queues[mid];
		if (x->queues[mid].queue < queue)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* A queue the queues table does not list (a damaged timeline): added, sorted. */
static struct xqueue *add_queue(struct exporter *x, int64_t queue)
{
	size_t at = 0;
	struct xqueue *q;
	char nm[64];

	if (x->n_queues == x->cap_queues) {
		size_t ncap = x->cap_queues ? x->cap_queues * 2 : 16;
		struct xqueue *nq = realloc(x->queues, ncap * sizeof(*nq));

		if (!nq)
			return NULL;
		x->queues = nq;
		x->cap_queues = ncap;
	}
	while (at < x->n_queues && x->queues[at].queue < queue)
		at++;
	memmove(&x->queues[at + 1], &x->queues[at], (x->n_queues - at) * sizeof(*q));
	q = &x->queues[at];
	memset(q, 0, sizeof(*q));
	q->queue = queue;
	snprintf(nm, sizeof(nm), "queue 0x%" PRIx64, (uint64_t)queue);
	q->lanes.name = strdup(nm);
	x->n_queues++;
	return q->lanes.name ? q : NULL;
}

/* The queue's lane-0 track as it is first described. */
static int queue_base(struct exporter *x, struct xqueue *q, struct nf_xtrack *t)
{
	struct xadapter *a = q->has_adapter ? find_adapter(x, q->adapter) : NULL;
	int ret;

	memset(t, 0, sizeof(*t));
	t->kind = NF_XT_PLAIN;
	if (a) {
		if ((ret = adapter_process(x, a)) < 0)
			return ret;
		t->parent = a->t.uuid;
		t->pid = a->t.pid;
	} else {
		if ((ret = cpu_process(x)) < 0)
			return ret;
		t->parent = x->cpu.uuid;
		t->pid = PID_CPU;
	}
	t->tid = new_tid(x, t->pid);
	t->sort = (int32_t)(q - x->queues);
	return 0;
}

static int queue_track(struct exporter *x, struct xqueue *q, int64_t start, int64_t end,
		       const struct nf_xtrack **out)
{
	struct nf_xtrack base;
	int ret;

	if (q->lanes.n == 0 &&
	    ((ret = queue_base(x, q, &base)) < 0 || (ret = lanes_add(x, &q->lanes, &base)) < 0))
		return ret;
	return lanes_pick(x, &q->lanes, start, end, out);
}

static struct xthread *get_thread(struct exporter *x, int64_t thread)
{
	size_t lo = 0, hi = x->n_threads;
	struct xthread *t;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->threads[mid].thread == thread)
			return &x->threads[mid];
		if (x->threads[mid].thread < thread)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (x->n_threads == x->cap_threads) {
		size_t ncap = x->cap_threads ? x->cap_threads * 2 : 16;
		struct xthread *nt = realloc(x->threads, ncap * sizeof(*nt));

		if (!nt)
			return NULL;
		x->threads = nt;
		x->cap_threads = ncap;
	}
	memmove(&x->threads[lo + 1], &x->threads[lo], (x->n_threads - lo) * sizeof(*t));
	t = &x->threads[lo];
	memset(t, 0, sizeof(*t));
	t->thread = thread;
	x->n_threads++;
	return t;
}

/* The thread's lanes, lane 0 (its own track) described on first use. */
static int thread_ensure(struct exporter *x, int64_t thread, struct xthread **out)
{
	struct xthread *t = get_thread(x, thread);
	struct nf_xtrack base;
	int ret;

	if (!t)
		return oom(x);
	*out = t;
	if (t->lanes.n == 0) {
		char nm[NAME_MAX_LEN + 64];
		const unsigned char *comm = NULL;

		if ((ret = cpu_process(x)) < 0)
			return ret;
		if (x->thread_name) {
			sqlite3_reset(x->thread_name);
			sqlite3_bind_int64(x->thread_name, 1, thread);
			if (sqlite3_step(x->thread_name) == SQLITE_ROW)
				comm = sqlite3_column_text(x->thread_name, 0);
		}
		if (comm)
			snprintf(nm, sizeof(nm), "%.*s %" PRId64, NAME_MAX_LEN, (const char *)comm, thread);
		else
			snprintf(nm, sizeof(nm), "thread %" PRId64, thread);
		free(t->lanes.name);
		if (!(t->lanes.name = strdup(nm)))
			return oom(x);
		memset(&base, 0, sizeof(base));
		base.parent = x->cpu.uuid;
		base.pid = PID_CPU;
		/* A real thread id is a thread track; one that does not fit is a plain one. */
		if (thread > 0 && thread < TID_SYNTH0) {
			base.kind = NF_XT_THREAD;
			base.tid = (int32_t)thread;
			base.parent = 0;
		} else {
			base.kind = NF_XT_PLAIN;
			base.tid = x->next_tid++;
		}
		base.sort = (int32_t)(thread > 0 && thread < INT32_MAX ? thread : INT32_MAX);
		if ((ret = lanes_add(x, &t->lanes, &base)) < 0)
			return ret;
	}
	return 0;
}

static int thread_track(struct exporter *x, int64_t thread, int64_t start, int64_t end,
			const struct nf_xtrack **out)
{
	struct xthread *t;
	int ret = thread_ensure(x, thread, &t);

	return ret < 0 ? ret : lanes_pick(x, &t->lanes, start, end, out);
}

/* The "session" track (items with neither queue nor thread): lane 0 made. */
static int session_ensure(struct exporter *x)
{
	struct nf_xtrack base;
	int ret;

	if (!x->session_ready) {
		x->session_ready = 1;
		if (!(x->session.lanes.name = strdup("session")))
			return oom(x);
	}
	if (x->session.lanes.n == 0) {
		if ((ret = cpu_process(x)) < 0)
			return ret;
		memset(&base, 0, sizeof(base));
		base.kind = NF_XT_PLAIN;
		base.parent = x->cpu.uuid;
		base.pid = PID_CPU;
		base.tid = x->next_tid++;
		base.sort = -1;
		if ((ret = lanes_add(x, &x->session.lanes, &base)) < 0)
			return ret;
	}
	return 0;
}

static int session_track(struct exporter *x, int64_t start, int64_t end, const struct nf_xtrack **out)
{
	int ret = session_ensure(x);

	return ret < 0 ? ret : lanes_pick(x, &x->session.lanes, start, end, out);
}

/* ---- loading the small tables ---- */

static int load_adapters(struct exporter *x)
{
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	int rc, ret = 0;

	if (sqlite3_prepare_v2(x->db, "SELECT adapter, name FROM adapters ORDER BY adapter", -1, &st,
			       NULL) != SQLITE_OK)
		return sql_fail(x, "reading adapters");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct xadapter *a;
		char dflt[48];

		if (x->n_adapters == cap) {
			size_t ncap = cap ? cap * 2 : 8;
			struct xadapter *na = realloc(x->adapters, ncap * sizeof(*na));

			if (!na) {
				ret = oom(x);
				goto out;
			}
			x->adapters = na;
			cap = ncap;
		}
		a = &x->adapters[x->n_adapters];
		memset(a, 0, sizeof(*a));
		a->adapter = sqlite3_column_int64(st, 0);
		snprintf(dflt, sizeof(dflt), "adapter %" PRId64, a->adapter);
		if (sqlite3_column_text(st, 1)) {
			char nm[NAME_MAX_LEN + 64];

			snprintf(nm, sizeof(nm), "%.*s (adapter %" PRId64 ")", NAME_MAX_LEN,
				 (const char *)sqlite3_column_text(st, 1), a->adapter);
			a->name = strdup(nm);
		} else {
			a->name = strdup(dflt);
		}
		if (!a->name) {
			ret = oom(x);
			goto out;
		}
		x->n_adapters++;
	}
	if (rc != SQLITE_DONE)
		ret = sql_fail(x, "reading adapters");
out:
	sqlite3_finalize(st);
	return ret;
}

/* Whether the database has a table (tables other helpers may add or drop). */
static int has_table(sqlite3 *db, const char *name)
{
	sqlite3_stmt *st;
	int yes;

	if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?1",
			       -1, &st, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	yes = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return yes;
}

static int load_queues(struct exporter *x)
{
	const struct nf_export_options *o = x->opts;
	int kt = has_table(x->db, "kernel_timelines");
	sqlite3_stmt *st = NULL;
	int rc, ret = 0;
	const char *sql = kt ? "SELECT q.queue, q.adapter, q.name, k.driver, k.timeline, k.context "
			       "FROM queues q LEFT JOIN kernel_timelines k ON k.queue = q.queue "
			       "ORDER BY q.queue"
			     : "SELECT queue, adapter, name, NULL, NULL, NULL FROM queues ORDER BY queue";

	if (sqlite3_prepare_v2(x->db, sql, -1, &st, NULL) != SQLITE_OK)
		return sql_fail(x, "reading queues");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t queue = sqlite3_column_int64(st, 0);
		struct xqueue *q;
		char nm[2 * NAME_MAX_LEN + 96];

		if (!(q = add_queue(x, queue))) {
			ret = oom(x);
			goto out;
		}
		q->has_adapter = !col_null(st, 1);
		q->adapter = sqlite3_column_int64(st, 1);
		if (!col_null(st, 5))  /* a dma_fence context: driver, timeline, context */
			snprintf(nm, sizeof(nm), "%.*s %.*s (context %" PRId64 ")", NAME_MAX_LEN,
				 sqlite3_column_text(st, 3) ? (const char *)sqlite3_column_text(st, 3) : "?",
				 NAME_MAX_LEN,
				 sqlite3_column_text(st, 4) ? (const char *)sqlite3_column_text(st, 4) : "?",
				 (int64_t)sqlite3_column_int64(st, 5));
		else if (sqlite3_column_text(st, 2))
			snprintf(nm, sizeof(nm), "%.*s 0x%" PRIx64, NAME_MAX_LEN,
				 (const char *)sqlite3_column_text(st, 2), (uint64_t)queue);
		else
			snprintf(nm, sizeof(nm), "queue 0x%" PRIx64, (uint64_t)queue);
		free(q->lanes.name);
		if (!(q->lanes.name = strdup(nm))) {
			ret = oom(x);
			goto out;
		}
	}
	if (rc != SQLITE_DONE) {
		ret = sql_fail(x, "reading queues");
		goto out;
	}
	/* A queue asked for that the timeline does not have is a user error. */
	for (int i = 0; o->queues && i < o->n_queues; i++)
		if (!find_queue(x, o->queues[i])) {
			ret = nf_error_set(x->err, NF_ENOENT, "queue 0x%" PRIx64 ": not in the timeline",
					   (uint64_t)o->queues[i]);
			goto out;
		}
out:
	sqlite3_finalize(st);
	return ret;
}

/* ---- filters ---- */

static char *in_sql(const char *col, const int64_t *v, int n)
{
	size_t cap = strlen(col) + 32 + (size_t)(n > 0 ? n : 0) * 22, len;
	char *s = malloc(cap);

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

/*
 * The predicate an operation (table alias a) must pass to be written: it has
 * a time; it overlaps the window; its queue and fence pass the filters.
 */
static char *op_pred(struct exporter *x, const char *a)
{
	const struct nf_export_options *o = x->opts;
	char col[32];
	char *q, *f, *s = NULL;

	snprintf(col, sizeof(col), "%s.queue", a);
	q = in_sql(col, o->queues, o->queues ? o->n_queues : 0);
	snprintf(col, sizeof(col), "%s.fence", a);
	f = in_sql(col, o->fences, o->fences ? o->n_fences : 0);
	if (q && f)
		s = sqlite3_mprintf(" AND coalesce(%s.queued_ns, %s.observed_ns, %s.end_ns) IS NOT NULL"
				    " AND coalesce(%s.queued_ns, %s.observed_ns, %s.end_ns) <= %lld"
				    " AND coalesce(%s.end_ns, %s.queued_ns, %s.observed_ns) >= %lld%s%s",
				    a, a, a, a, a, a, (long long)x->t1, a, a, a, (long long)x->t0, q, f);
	free(q);
	free(f);
	return s;
}

/* The predicate a CPU signal (alias a) must pass: window and fence filter. */
static char *cpu_signal_pred(struct exporter *x, const char *a)
{
	const struct nf_export_options *o = x->opts;
	char col[32];
	char *f, *s = NULL;

	snprintf(col, sizeof(col), "%s.fence", a);
	f = in_sql(col, o->fences, o->fences ? o->n_fences : 0);
	if (f)
		s = sqlite3_mprintf(" AND %s.ts_ns IS NOT NULL AND %s.ts_ns >= %lld AND %s.ts_ns <= %lld%s",
				    a, a, (long long)x->t0, a, (long long)x->t1, f);
	free(f);
	return s;
}

/* ---- the passes ---- */

/*
 * Flow ids collected for one signal, and where errors go: the main thread's
 * for the CPU signals' pass, the reader thread's own for fence_ops (the two
 * threads never share one).
 */
struct flowbuf {
	struct nf_error *err;
	uint64_t *v;
	size_t n, cap;
};

static int flowbuf_add(struct flowbuf *fb, uint64_t id)
{
	if (fb->n == fb->cap) {
		size_t ncap = fb->cap ? fb->cap * 2 : 16;
		uint64_t *nv = realloc(fb->v, ncap * sizeof(*nv));

		if (!nv)
			return nf_error_set(fb->err, NF_ENOMEM, "out of memory while exporting");
		fb->v = nv;
		fb->cap = ncap;
	}
	fb->v[fb->n++] = id;
	return 0;
}

/* A sorted stream of (key, value) pairs from deps, merged with a scan. */
struct edge_cursor {
	sqlite3 *db;
	sqlite3_stmt *st;
	int done, started;
	int64_t key, val;
};

static int cursor_next(struct nf_error *err, struct edge_cursor *c)
{
	int rc = sqlite3_step(c->st);

	if (rc == SQLITE_ROW) {
		int64_t k = sqlite3_column_int64(c->st, 0);

		if (c->started && k < c->key)
			return nf_error_set(err, NF_EFORMAT,
					    "deps: rows out of order (%" PRId64 " after %" PRId64 ")", k,
					    c->key);
		c->started = 1;
		c->key = k;
		c->val = col_or(c->st, 1, 0);
		return 0;
	}
	c->done = 1;
	return rc == SQLITE_DONE ? 0
				 : nf_error_set(err, NF_ESQL, "reading deps: %s", sqlite3_errmsg(c->db));
}

static int cursor_open(struct nf_error *err, struct edge_cursor *c, sqlite3 *db, char *sql)
{
	int ret = 0;

	memset(c, 0, sizeof(*c));
	c->db = db;
	if (!sql)
		return nf_error_set(err, NF_ENOMEM, "out of memory while exporting");
	if (sqlite3_prepare_v2(db, sql, -1, &c->st, NULL) != SQLITE_OK)
		ret = nf_error_set(err, NF_ESQL, "reading deps: %s", sqlite3_errmsg(db));
	sqlite3_free(sql);
	return ret ? ret : cursor_next(err, c);
}

/* Skips keys below k; returns 1 when the cursor is at k. */
static int cursor_seek(struct nf_error *err, struct edge_cursor *c, int64_t k, int *ret)
{
	while (!c->done && c->key < k)
		if ((*ret = cursor_next(err, c)) < 0)
			return 0;
	return !c->done && c->key == k;
}

/* Collects the values of every pair with key k (the waits a signal released). */
static int cursor_collect(struct flowbuf *fb, struct edge_cursor *c, int64_t k)
{
	int ret = 0;

	fb->n = 0;
	if (!cursor_seek(fb->err, c, k, &ret))
		return ret;
	while (!c->done && c->key == k) {
		if ((ret = flowbuf_add(fb, (uint64_t)c->val + 1)) < 0)  /* flow id: wait_id + 1 */
			return ret;
		if ((ret = cursor_next(fb->err, c)) < 0)
			return ret;
	}
	return 0;
}

static void arg_int(struct nf_xevent *e, const char *key, int64_t v)
{
	e->args[e->n_args++] = (struct nf_xarg){ .key = key, .type = NF_XA_INT, .i = v };
}

static void arg_hex(struct nf_xevent *e, const char *key, int64_t v)
{
	e->args[e->n_args++] = (struct nf_xarg){ .key = key, .type = NF_XA_HEX, .i = v };
}

static void arg_str(struct nf_xevent *e, const char *key, const char *s)
{
	e->args[e->n_args++] = (struct nf_xarg){ .key = key, .type = NF_XA_STR, .s = s };
}

/* Writes e on its track: slices and instants counted. */
static int emit(struct exporter *x, struct nf_xevent *e)
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

/*
 * The waits that end a flow, as a bitmap over fence_ops ids (one bit per
 * operation: 1.25 MB for ten million), filled from an unsorted read of deps
 * (its rows are not in wait order, and sorting them costs more than the
 * rest of the export). bits stays NULL when the ids are too sparse for it.
 */
#define RELEASED_MAX_BITS ((int64_t)1 << 33)

struct released {
	uint8_t *bits;
	int64_t lo, n;
};

static int released_has(const struct released *r, int64_t id)
{
	int64_t k = id - r->lo;

	return k >= 0 && k < r->n && (r->bits[k >> 3] >> (k & 7)) & 1;
}

static void released_set(struct released *r, int64_t id)
{
	int64_t k = id - r->lo;

	if (k >= 0 && k < r->n)
		r->bits[k >> 3] |= (uint8_t)(1u << (k & 7));
}

/* Sizes r over fence_ops' ids, read on db (bits NULL: no operations, or too sparse). */
static int released_alloc(struct exporter *x, sqlite3 *db, struct released *r)
{
	sqlite3_stmt *st = NULL;
	int ret = 0;

	memset(r, 0, sizeof(*r));
	if (sqlite3_prepare_v2(db, "SELECT min(id), max(id) FROM fence_ops", -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW) {
		ret = nf_error_set(x->err, NF_ESQL, "reading fence_ops: %s", sqlite3_errmsg(db));
		goto out;
	}
	if (col_null(st, 0))
		goto out;  /* no operations: an empty bitmap would do, the cursor too */
	r->lo = sqlite3_column_int64(st, 0);
	if (sqlite3_column_int64(st, 1) - r->lo >= RELEASED_MAX_BITS - 1)
		goto out;
	r->n = sqlite3_column_int64(st, 1) - r->lo + 1;
	if (!(r->bits = calloc((size_t)(r->n + 7) / 8, 1)))
		ret = oom(x);
out:
	sqlite3_finalize(st);
	return ret;
}

/* Sets the bits of sql's first column (wait ids), read on db; sql stays the caller's. */
static int released_fill(struct exporter *x, sqlite3 *db, struct released *r, const char *sql)
{
	sqlite3_stmt *st = NULL;
	int rc, ret = 0;

	if (!sql)
		return oom(x);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return nf_error_set(x->err, NF_ESQL, "reading deps: %s", sqlite3_errmsg(db));
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		released_set(r, sqlite3_column_int64(st, 0));
	if (rc != SQLITE_DONE)
		ret = nf_error_set(x->err, NF_ESQL, "reading deps: %s", sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return ret;
}

/*
 * deps by signal without sorting it. The analyzer writes deps as a few runs
 * each in signal order (one per group it matched), so a first read of the
 * rows' signal ids in storage order finds where each run starts, and the
 * export then reads every run by rowid range at once and merges them with a
 * heap of one head per run: no sort, memory per run. With more than
 * RUNS_MAX runs (or a deps table without rowids) sqlite sorts instead.
 */
#define RUNS_MAX 4096

struct edge {
	int64_t s, w;
};

struct run {
	sqlite3_stmt *st;
	struct edge head;
};

struct sig_runs {
	struct run *r;
	int *heap;    /* indices of runs with a head, smallest head first */
	size_t n, n_heap;
	sqlite3 *db;
};

static int edge_lt(const struct edge *a, const struct edge *b)
{
	return a->s < b->s || (a->s == b->s && a->w < b->w);
}

static int run_lt(const struct sig_runs *m, int a, int b)
{
	return edge_lt(&m->r[a].head, &m->r[b].head);
}

static void runs_sift_down(struct sig_runs *m, size_t i)
{
	for (;;) {
		size_t c = 2 * i + 1;
		int t;

		if (c >= m->n_heap)
			return;
		if (c + 1 < m->n_heap && run_lt(m, m->heap[c + 1], m->heap[c]))
			c++;
		if (!run_lt(m, m->heap[c], m->heap[i]))
			return;
		t = m->heap[i];
		m->heap[i] = m->heap[c];
		m->heap[c] = t;
		i = c;
	}
}

static void sig_runs_close(struct sig_runs *m)
{
	for (size_t i = 0; m->r && i < m->n; i++)
		sqlite3_finalize(m->r[i].st);
	free(m->r);
	free(m->heap);
	memset(m, 0, sizeof(*m));
}

/* Steps run i to its next row; 1 when it has one, 0 at its end. */
static int run_next(struct nf_error *err, struct sig_runs *m, size_t i)
{
	int rc = sqlite3_step(m->r[i].st);

	if (rc == SQLITE_ROW) {
		m->r[i].head = (struct edge){ sqlite3_column_int64(m->r[i].st, 0),
					      sqlite3_column_int64(m->r[i].st, 1) };
		return 1;
	}
	return rc == SQLITE_DONE ? 0 : nf_error_set(err, NF_ESQL, "reading deps: %s", sqlite3_errmsg(m->db));
}

/*
 * Finds deps' runs (on db) and opens one read per run. In the same read,
 * when rel has bits, it marks the waits that end a flow as the unfiltered
 * export takes them: every wait with a releasing signal, and those released
 * by a CPU signal that cpu_ok (bound to the CPU signal's id) returns a row
 * for. Returns 1 when the merge is ready (and rel filled), 0 when sqlite
 * should sort instead (too many runs, no rowid: rel then is to be filled by
 * the caller), or an error.
 */
/* The read of deps that finds its runs (nf_export_dep, inside sqlite's scan). */
struct runs_scan {
	struct released *rel;
	sqlite3_stmt *cpu_ok;
	int64_t *start;
	size_t n;
	struct edge prev;
	int too_many;   /* more than RUNS_MAX runs: the scan was stopped */
	int cpu_rc;     /* cpu_ok's failure (SQLITE_OK: none) */
};

/* Values: rowid, signal_id, wait_id, cpu_signal of one deps row. */
static void dep_sink(sqlite3_context *ctx, int argc, sqlite3_value **v)
{
	struct runs_scan *rs = sqlite3_user_data(ctx);
	struct edge e;

	(void)argc;
	sqlite3_result_null(ctx);
	if (val_null(v[1])) {
		/* Released from the CPU: a flow when its CPU signal is written. */
		if (rs->rel->bits && !val_null(v[3]) && !val_null(v[2])) {
			int rc;

			sqlite3_reset(rs->cpu_ok);
			sqlite3_bind_int64(rs->cpu_ok, 1, sqlite3_value_int64(v[3]));
			if ((rc = sqlite3_step(rs->cpu_ok)) == SQLITE_ROW) {
				released_set(rs->rel, sqlite3_value_int64(v[2]));
			} else if (rc != SQLITE_DONE) {
				rs->cpu_rc = rc;
				sqlite3_result_error(ctx, "reading cpu_signals", -1);
			}
		}
		return;
	}
	e = (struct edge){ sqlite3_value_int64(v[1]), sqlite3_value_int64(v[2]) };
	if (rs->rel->bits && !val_null(v[2]))
		released_set(rs->rel, e.w);
	if (rs->n == 0 || edge_lt(&e, &rs->prev)) {
		if (rs->n == RUNS_MAX) {
			rs->too_many = 1;
			sqlite3_result_error(ctx, "too many runs", -1);
			return;
		}
		rs->start[rs->n++] = sqlite3_value_int64(v[0]);
	}
	rs->prev = e;
}

static int sig_runs_open(struct exporter *x, struct sig_runs *m, sqlite3 *db, struct released *rel,
			 sqlite3_stmt *cpu_ok)
{
	sqlite3_stmt *st = NULL;
	int64_t *start = NULL;
	size_t n = 0;
	struct runs_scan rs;
	int rc, ret = 0;

	memset(m, 0, sizeof(*m));
	memset(&rs, 0, sizeof(rs));
	m->db = db;
	if (!(start = malloc(RUNS_MAX * sizeof(*start))))
		return oom(x);
	rs.rel = rel;
	rs.cpu_ok = cpu_ok;
	rs.start = start;
	rs.cpu_rc = SQLITE_OK;
	if (sqlite3_create_function(db, "nf_export_dep", 4, SQLITE_UTF8 | SQLITE_DIRECTONLY, &rs, dep_sink,
				    NULL, NULL) != SQLITE_OK) {
		ret = nf_error_set(x->err, NF_ESQL, "reading deps: %s", sqlite3_errmsg(db));
		goto out;
	}
	if (sqlite3_prepare_v2(db, "SELECT count(nf_export_dep(rowid, signal_id, wait_id, cpu_signal)) FROM deps",
			       -1, &st, NULL) != SQLITE_OK)
		goto out;  /* ret 0, no rowid: let sqlite sort */
	rc = sqlite3_step(st);
	if (rs.too_many)
		goto out;  /* ret 0: sort instead */
	if (rs.cpu_rc != SQLITE_OK) {
		ret = nf_error_set(x->err, NF_ESQL, "reading cpu_signals: %s", sqlite3_errstr(rs.cpu_rc));
		goto out;
	}
	if (rc != SQLITE_ROW) {
		ret = nf_error_set(x->err, NF_ESQL, "reading deps: %s", sqlite3_errmsg(db));
		goto out;
	}
	n = rs.n;
	m->r = calloc(n ? n : 1, sizeof(*m->r));
	m->heap = calloc(n ? n : 1, sizeof(*m->heap));
	if (!m->r || !m->heap) {
		ret = oom(x);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (sqlite3_prepare_v2(db, "SELECT signal_id, wait_id FROM deps WHERE rowid >= ?1 AND "
					   "rowid < ?2 AND signal_id IS NOT NULL",
				       -1, &m->r[i].st, NULL) != SQLITE_OK) {
			ret = nf_error_set(x->err, NF_ESQL, "reading deps: %s", sqlite3_errmsg(db));
			goto out;
		}
		m->n++;
		sqlite3_bind_int64(m->r[i].st, 1, start[i]);
		sqlite3_bind_int64(m->r[i].st, 2, i + 1 < n ? start[i + 1] : INT64_MAX);
		if ((ret = run_next(x->err, m, i)) < 0)
			goto out;
		if (ret == 1)
			m->heap[m->n_heap++] = (int)i;
	}
	for (size_t i = m->n_heap / 2; i-- > 0;)
		runs_sift_down(m, i);
	ret = 1;
out:
	sqlite3_finalize(st);
	/* The function points at this frame: gone with it. */
	sqlite3_create_function(db, "nf_export_dep", 4, SQLITE_UTF8, NULL, NULL, NULL, NULL);
	free(start);
	if (ret != 1)
		sig_runs_close(m);
	return ret;
}

/* The waits signal k released (fb), from the merge of the runs. */
static int sig_runs_collect(struct flowbuf *fb, struct sig_runs *m, int64_t k)
{
	int ret;

	fb->n = 0;
	while (m->n_heap) {
		int i = m->heap[0];
		struct edge e = m->r[i].head;

		if (e.s > k)
			return 0;
		if (e.s == k && (ret = flowbuf_add(fb, (uint64_t)e.w + 1)) < 0)
			return ret;
		/* (e.s < k: a signal that is not written) */
		if ((ret = run_next(fb->err, m, (size_t)i)) < 0)
			return ret;
		if (ret == 0)
			m->heap[0] = m->heap[--m->n_heap];
		runs_sift_down(m, 0);
	}
	return 0;
}

/* One fence_ops row as the reader thread hands it over, with its flows. */
struct oprec {
	int64_t id, queue, fence, value, start, obs, end, thread;
	uint8_t has_queue, is_wait, has_fence, has_value, has_obs, has_end, has_thread;
	uint8_t flow_in;        /* a wait that ends a flow (id + 1) */
	uint32_t out_off, n_out; /* a signal's flows: in its block's flow ids */
	char status[32];  /* the schema's statuses are short words; longer is cut */
};

/* What the main thread works on, for one pass over fence_ops. */
struct op_ctx {
	struct exporter *x;
	int64_t last_id;
};

/* One fence operation: its track (lane), name, args and flows, written. */
static int op_row(struct op_ctx *oc, const struct oprec *r, const uint64_t *flows)
{
	struct exporter *x = oc->x;
	int64_t start = r->start, end = start;
	struct nf_xevent e;
	char name[64];
	size_t n;
	int ret = 0;

	if (r->id <= oc->last_id)
		return nf_error_set(x->err, NF_EFORMAT, "fence_ops: not read in id order");
	oc->last_id = r->id;
	e.track = NULL;
	e.name_key = 0;
	e.stall_ts = -1;
	e.instant = !r->has_end;
	e.n_args = 0;
	e.flows_out = NULL;
	e.n_flows_out = 0;
	e.flow_in = 0;
	e.flows_in = NULL;
	e.n_flows_in = 0;
	if (!e.instant) {
		end = r->end;
		if (end < start) {  /* completed before queued: a causality anomaly, kept as is */
			int64_t t = end;

			end = start;
			start = t;
		}
		if (r->is_wait && r->has_obs) {
			int64_t obs = r->obs;

			if (obs < start)
				obs = start;
			if (obs < end)
				e.stall_ts = obs;
		}
	}
	if (r->has_queue) {
		struct xqueue *q = find_queue(x, r->queue);

		if (!q && !(q = add_queue(x, r->queue)))
			return oom(x);
		ret = queue_track(x, q, start, end, &e.track);
	} else if (r->has_thread) {
		ret = thread_track(x, r->thread, start, end, &e.track);
	} else {
		ret = session_track(x, start, end, &e.track);
	}
	if (ret < 0)
		return ret;
	/* "wait 0xFENCE": few distinct names, so they intern. */
	n = r->is_wait ? 5 : 7;
	memcpy(name, r->is_wait ? "wait " : "signal ", n);
	if (!r->has_fence)
		name[n++] = '?';
	else
		n += put_hex(name + n, (uint64_t)r->fence);
	name[n] = '\0';
	e.ts = start;
	e.end = end;
	e.name = name;
	e.name_key = r->has_fence && (uint64_t)r->fence < ((uint64_t)1 << 62)
			     ? ((uint64_t)r->fence << 1 | r->is_wait) + 1
			     : 0;
	e.cat = r->is_wait ? "wait" : "signal";
	arg_int(&e, "id", r->id);
	if (r->has_fence)
		arg_hex(&e, "fence", r->fence);
	if (r->has_value)
		arg_int(&e, "value", r->value);
	arg_str(&e, "status", r->status);
	if (r->has_thread)
		arg_int(&e, "thread", r->thread);
	if (r->flow_in)
		e.flow_in = (uint64_t)r->id + 1;
	e.flows_out = r->n_out ? flows + r->out_off : NULL;
	e.n_flows_out = r->n_out;
	return emit(x, &e);
}

/*
 * Where the flows of fence_ops rows come from, read by the reader thread on
 * a connection of its own (db3): the waits that end one (a bitmap, else deps
 * sorted by wait) and, per signal, the waits it released (deps merged from
 * its sorted runs, else sorted by sqlite).
 */
struct flowsrc {
	struct released rel;
	struct edge_cursor by_wait, by_signal;
	struct sig_runs runs;
	int use_runs;
};

/*
 * The reader thread: sqlite scans fence_ops and hands each row to
 * nf_export_op (an SQL function of ours, called inside the scan, cheaper than
 * stepping out per row), which copies it into blocks of a small ring with
 * its flows; the main thread takes whole blocks, places and encodes them.
 * The two overlap, so an export costs about the larger of the scan and the
 * encoding, not their sum. Each thread uses its own connections.
 */
#define PIPE_BLOCK 2048
#define PIPE_DEPTH 8

struct pipe {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct oprec *rec;        /* PIPE_DEPTH blocks of PIPE_BLOCK */
	size_t fill[PIPE_DEPTH];  /* records in each published block */
	uint64_t *fl[PIPE_DEPTH]; /* each block's flow ids (oprec.out_off) */
	size_t fl_n[PIPE_DEPTH], fl_cap[PIPE_DEPTH];
	uint64_t produced, consumed;
	size_t cur;               /* records in the block being filled (reader only) */
	int done, stop, rc;
	char errmsg[256];
	sqlite3 *db;
	sqlite3_stmt *st;
	struct flowsrc *fs;       /* (reader only) */
	uint64_t skipped;         /* rows without any time, left out (reader only) */
	struct flowbuf fb;        /* one signal's flows (reader only) */
	struct nf_error ferr;     /* the reader's errors reading flows */
};

/* Publishes the block being filled; waits for a free one. -1: stop. */
static int pipe_publish(struct pipe *pp, int last)
{
	int stop;

	pthread_mutex_lock(&pp->mu);
	pp->fill[pp->produced % PIPE_DEPTH] = pp->cur;
	pp->produced++;
	pp->cur = 0;
	pthread_cond_broadcast(&pp->cv);
	while (!last && !pp->stop && pp->produced - pp->consumed >= PIPE_DEPTH)
		pthread_cond_wait(&pp->cv, &pp->mu);
	stop = pp->stop;
	pthread_mutex_unlock(&pp->mu);
	return stop ? -1 : 0;
}

/* r's flows: whether it ends one (a wait), the ones it starts (a signal). */
static int op_flows(struct pipe *pp, size_t blk, struct oprec *r)
{
	struct flowsrc *fs = pp->fs;
	int ret = 0;

	r->flow_in = 0;
	r->out_off = 0;
	r->n_out = 0;
	if (r->is_wait) {
		r->flow_in = (uint8_t)(fs->rel.bits ? released_has(&fs->rel, r->id)
						    : cursor_seek(&pp->ferr, &fs->by_wait, r->id, &ret));
		return ret;
	}
	if ((ret = fs->use_runs ? sig_runs_collect(&pp->fb, &fs->runs, r->id)
				: cursor_collect(&pp->fb, &fs->by_signal, r->id)) < 0 ||
	    pp->fb.n == 0)
		return ret;
	if (pp->fl_cap[blk] - pp->fl_n[blk] < pp->fb.n) {
		size_t ncap = pp->fl_cap[blk] ? pp->fl_cap[blk] : 4096;
		uint64_t *nv;

		while (ncap - pp->fl_n[blk] < pp->fb.n)
			ncap *= 2;
		if (ncap > UINT32_MAX || !(nv = realloc(pp->fl[blk], ncap * sizeof(*nv))))
			return nf_error_set(&pp->ferr, NF_ENOMEM, "out of memory while exporting");
		pp->fl[blk] = nv;
		pp->fl_cap[blk] = ncap;
	}
	memcpy(pp->fl[blk] + pp->fl_n[blk], pp->fb.v, pp->fb.n * sizeof(*pp->fb.v));
	r->out_off = (uint32_t)pp->fl_n[blk];
	r->n_out = (uint32_t)pp->fb.n;
	pp->fl_n[blk] += pp->fb.n;
	return 0;
}

/*
 * Values: 0 id, 1 queue, 2 op, 3 fence, 4 value, 5 queued, 6 observed, 7 end,
 * 8 status, 9 thread: the columns as stored, the rest done here (cheaper than
 * in sqlite's program). A row without any time is not written.
 */
static void op_sink(sqlite3_context *ctx, int argc, sqlite3_value **v)
{
	struct pipe *pp = sqlite3_user_data(ctx);
	struct oprec *r;
	const unsigned char *status;
	size_t blk;

	(void)argc;
	if (val_null(v[5]) && val_null(v[6]) && val_null(v[7])) {
		pp->skipped++;
		sqlite3_result_null(ctx);
		return;
	}
	if (pp->cur == PIPE_BLOCK && pipe_publish(pp, 0) < 0) {
		sqlite3_result_error(ctx, "export stopped", -1);
		return;
	}
	blk = pp->produced % PIPE_DEPTH;
	if (pp->cur == 0)
		pp->fl_n[blk] = 0;
	r = &pp->rec[blk * PIPE_BLOCK + pp->cur++];
	r->id = sqlite3_value_int64(v[0]);
	r->has_queue = !val_null(v[1]);
	r->queue = sqlite3_value_int64(v[1]);
	{
		const unsigned char *op = sqlite3_value_text(v[2]);

		r->is_wait = (uint8_t)(op && !strcmp((const char *)op, "wait"));
	}
	r->has_fence = !val_null(v[3]);
	r->fence = sqlite3_value_int64(v[3]);
	r->has_value = !val_null(v[4]);
	r->value = sqlite3_value_int64(v[4]);
	r->has_obs = !val_null(v[6]);
	r->obs = sqlite3_value_int64(v[6]);
	r->has_end = !val_null(v[7]);
	r->end = sqlite3_value_int64(v[7]);
	r->start = !val_null(v[5]) ? sqlite3_value_int64(v[5]) : r->has_obs ? r->obs : r->end;
	status = sqlite3_value_text(v[8]);
	{
		size_t n = status ? strnlen((const char *)status, sizeof(r->status) - 1) : 0;

		memcpy(r->status, status ? (const char *)status : "", n);
		r->status[n] = '\0';
	}
	r->has_thread = !val_null(v[9]);
	r->thread = sqlite3_value_int64(v[9]);
	if (op_flows(pp, blk, r) < 0) {
		sqlite3_result_error(ctx, pp->ferr.msg, -1);
		return;
	}
	sqlite3_result_null(ctx);
}

static void *pipe_main(void *arg)
{
	struct pipe *pp = arg;
	int rc;

	while ((rc = sqlite3_step(pp->st)) == SQLITE_ROW)
		;
	pthread_mutex_lock(&pp->mu);
	pp->rc = rc;
	if (rc != SQLITE_DONE)
		snprintf(pp->errmsg, sizeof(pp->errmsg), "%s", sqlite3_errmsg(pp->db));
	pthread_mutex_unlock(&pp->mu);
	pipe_publish(pp, 1);
	pthread_mutex_lock(&pp->mu);
	pp->done = 1;
	pthread_cond_broadcast(&pp->cv);
	pthread_mutex_unlock(&pp->mu);
	return NULL;
}

/* The main thread's side: every published block through op_row. */
static int pipe_consume(struct pipe *pp, struct op_ctx *oc)
{
	int ret = 0;

	for (;;) {
		size_t idx, n;

		pthread_mutex_lock(&pp->mu);
		while (pp->consumed == pp->produced && !pp->done)
			pthread_cond_wait(&pp->cv, &pp->mu);
		if (pp->consumed == pp->produced) {
			pthread_mutex_unlock(&pp->mu);
			return 0;
		}
		idx = pp->consumed % PIPE_DEPTH;
		n = pp->fill[idx];
		pthread_mutex_unlock(&pp->mu);
		for (size_t i = 0; i < n && ret == 0; i++)
			ret = op_row(oc, &pp->rec[idx * PIPE_BLOCK + i], pp->fl[idx]);
		pthread_mutex_lock(&pp->mu);
		pp->consumed++;
		if (ret < 0)
			pp->stop = 1;
		pthread_cond_broadcast(&pp->cv);
		pthread_mutex_unlock(&pp->mu);
		if (ret < 0)
			return ret;
	}
}

static void flowsrc_close(struct flowsrc *fs)
{
	sqlite3_finalize(fs->by_wait.st);
	sqlite3_finalize(fs->by_signal.st);
	sig_runs_close(&fs->runs);
	free(fs->rel.bits);
	memset(fs, 0, sizeof(*fs));
}

/*
 * The flows' sources on db. check_ends: some flow's other end may not be
 * written (a filter, or operations without a time), so each is checked by a
 * join; else every deps row with a written end is a flow, and one read of
 * deps finds both the waits that end one and its sorted runs.
 */
static int flowsrc_open(struct exporter *x, struct flowsrc *fs, sqlite3 *db, int check_ends)
{
	char *sql, *sorted;
	int ret;

	memset(fs, 0, sizeof(*fs));
	if ((ret = released_alloc(x, db, &fs->rel)) < 0)
		return ret;
	if (!check_ends) {
		sqlite3_stmt *cpu_ok = NULL;

		sql = sqlite3_mprintf("SELECT 1 FROM cpu_signals c WHERE c.id = ?1%s", x->cpu_pred_c);
		if (!sql)
			return oom(x);
		ret = sqlite3_prepare_v2(db, sql, -1, &cpu_ok, NULL);
		sqlite3_free(sql);
		if (ret != SQLITE_OK)
			return nf_error_set(x->err, NF_ESQL, "reading cpu_signals: %s", sqlite3_errmsg(db));
		ret = sig_runs_open(x, &fs->runs, db, &fs->rel, cpu_ok);
		sqlite3_finalize(cpu_ok);
		if (ret < 0)
			return ret;
		fs->use_runs = ret == 1;
	}
	/* Waits whose releaser is written: joined only when some may not be. */
	if (check_ends)
		sql = sqlite3_mprintf(
			"SELECT d.wait_id, 0 FROM deps d LEFT JOIN fence_ops s ON s.id = d.signal_id "
			"WHERE (d.signal_id IS NOT NULL AND s.id IS NOT NULL%s) OR (d.signal_id IS NULL "
			"AND d.cpu_signal IS NOT NULL AND EXISTS (SELECT 1 FROM cpu_signals c "
			"WHERE c.id = d.cpu_signal%s))",
			x->op_pred_s, x->cpu_pred_c);
	else
		sql = sqlite3_mprintf(
			"SELECT d.wait_id, 0 FROM deps d WHERE d.signal_id IS NOT NULL OR "
			"(d.cpu_signal IS NOT NULL AND EXISTS (SELECT 1 FROM cpu_signals c "
			"WHERE c.id = d.cpu_signal%s))",
			x->cpu_pred_c);
	if (!sql)
		return oom(x);
	if (!fs->rel.bits) {
		/* Ids too sparse for a bitmap: the same rows sorted by wait, merged. */
		sorted = sqlite3_mprintf("SELECT * FROM (%s) ORDER BY 1", sql);
		sqlite3_free(sql);
		if ((ret = cursor_open(x->err, &fs->by_wait, db, sorted)) < 0)
			return ret;
	} else {
		ret = fs->use_runs ? 0 : released_fill(x, db, &fs->rel, sql);
		sqlite3_free(sql);
		if (ret < 0)
			return ret;
	}
	if (fs->use_runs)
		return 0;
	if (check_ends)
		sql = sqlite3_mprintf("SELECT d.signal_id, d.wait_id FROM deps d JOIN fence_ops w "
				      "ON w.id = d.wait_id WHERE d.signal_id IS NOT NULL%s "
				      "ORDER BY d.signal_id, d.wait_id",
				      x->op_pred_w);
	else
		sql = sqlite3_mprintf("SELECT signal_id, wait_id FROM deps WHERE signal_id IS NOT NULL "
				      "ORDER BY signal_id, wait_id");
	return cursor_open(x->err, &fs->by_signal, db, sql);
}

/*
 * fence_ops, in id order. Each operation goes to its queue's lanes (kernel
 * waits without a queue: their thread's), with its flows: the waits it
 * released (deps by signal_id) and the signal that released it (deps by
 * wait_id), each only when the other end is written too. Unfiltered, the
 * pass assumes every operation has a time (then every deps row is a flow
 * whose two ends are written, and no join is needed); the scan counts the
 * rows without one, and when there are any the pass returns EXPORT_RETRY:
 * the export is made again with x->force_check (flows checked by joins).
 */
static int pass_ops(struct exporter *x)
{
	struct flowsrc fs;
	struct op_ctx oc = { x, INT64_MIN };
	struct pipe pp;
	pthread_t th;
	char *sql;
	int rc, ret;

	memset(&fs, 0, sizeof(fs));
	memset(&pp, 0, sizeof(pp));
	x->check_ends = x->filtered || x->force_check;
	if ((ret = flowsrc_open(x, &fs, x->db3, x->check_ends)) < 0)
		goto out;
	pp.db = x->db;
	pp.fs = &fs;
	pp.fb.err = &pp.ferr;
	nf_error_clear(&pp.ferr);
	if (!(pp.rec = malloc(sizeof(*pp.rec) * PIPE_BLOCK * PIPE_DEPTH))) {
		ret = oom(x);
		goto out;
	}
	if (sqlite3_create_function(x->db, "nf_export_op", 10, SQLITE_UTF8 | SQLITE_DIRECTONLY, &pp,
				    op_sink, NULL, NULL) != SQLITE_OK) {
		ret = sql_fail(x, "reading fence_ops");
		goto out;
	}
	/* In rowid (= id) order: a plain scan of the table (unfiltered, with no
	 * condition at all: rows without a time are left out by nf_export_op). */
	sql = sqlite3_mprintf("SELECT count(nf_export_op(f.id, f.queue, f.op, f.fence, f.value, "
			      "f.queued_ns, f.observed_ns, f.end_ns, f.status, f.thread)) FROM fence_ops f%s%s",
			      x->filtered ? " WHERE 1" : "", x->filtered ? x->op_pred_f : "");
	if (!sql) {
		ret = oom(x);
		goto out;
	}
	rc = sqlite3_prepare_v2(x->db, sql, -1, &pp.st, NULL);
	sqlite3_free(sql);
	if (rc != SQLITE_OK) {
		ret = sql_fail(x, "reading fence_ops");
		goto out;
	}
	pthread_mutex_init(&pp.mu, NULL);
	pthread_cond_init(&pp.cv, NULL);
	if (pthread_create(&th, NULL, pipe_main, &pp) != 0) {
		ret = nf_error_set(x->err, NF_ENOMEM, "cannot start the reader thread");
	} else {
		ret = pipe_consume(&pp, &oc);
		pthread_join(th, NULL);
		if (ret == 0 && pp.ferr.code)
			ret = nf_error_set(x->err, pp.ferr.code, "%s", pp.ferr.msg);
		else if (ret == 0 && pp.rc != SQLITE_DONE)
			ret = nf_error_set(x->err, NF_ESQL, "reading fence_ops: %s", pp.errmsg);
		x->st.skipped = x->filtered ? 0 : pp.skipped;
		if (ret == 0 && pp.skipped && !x->check_ends)
			ret = EXPORT_RETRY;  /* some signal may not be written: again, with joins */
	}
	pthread_cond_destroy(&pp.cv);
	pthread_mutex_destroy(&pp.mu);
out:
	sqlite3_finalize(pp.st);
	free(pp.rec);
	for (int i = 0; i < PIPE_DEPTH; i++)
		free(pp.fl[i]);
	free(pp.fb.v);
	/* The function points at this frame: gone with it. */
	sqlite3_create_function(x->db, "nf_export_op", 10, SQLITE_UTF8, NULL, NULL, NULL, NULL);
	flowsrc_close(&fs);
	return ret;
}

/*
 * A track for every CPU thread the timeline names, first: those that queued
 * GPU work (queue_threads, within the queue and fence filters) and, for
 * kernel captures, those sched_switch saw run (cpu_runs, when no fence filter
 * is given: runs belong to no fence), so each has its track and name even
 * when nothing of it is drawn.
 */
static int pass_threads(struct exporter *x)
{
	const struct nf_export_options *o = x->opts;
	char *qf = in_sql("queue", o->queues, o->queues ? o->n_queues : 0);
	char *ff = in_sql("fence", o->fences, o->fences ? o->n_fences : 0);
	int runs = o->n_fences == 0 && has_table(x->db, "cpu_runs");
	sqlite3_stmt *st = NULL;
	char *sql = NULL;
	int rc, ret = 0;

	if (qf && ff)
		sql = sqlite3_mprintf("SELECT thread FROM queue_threads WHERE thread IS NOT NULL%s%s%s "
				      "ORDER BY 1",
				      qf, ff, runs ? " UNION SELECT thread FROM cpu_runs WHERE thread IS NOT NULL" : "");
	free(qf);
	free(ff);
	if ((ret = prepare_owned(x, x->db, sql, &st, "reading queue_threads")) < 0)
		return ret;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct xthread *t;

		if ((ret = thread_ensure(x, sqlite3_column_int64(st, 0), &t)) < 0)
			break;
	}
	if (ret == 0 && rc != SQLITE_DONE)
		ret = sql_fail(x, "reading queue_threads");
	sqlite3_finalize(st);
	return ret;
}

/* cpu_waits (but the dma_fence waits, written as their fence_ops rows). */
static int pass_cpu_waits(struct exporter *x)
{
	sqlite3_stmt *st = NULL;
	char *sql, name[96];
	int rc, ret = 0;

	sql = sqlite3_mprintf("SELECT c.id, c.thread, c.fence, c.value, c.start_ns, c.end_ns, c.status "
			      "FROM cpu_waits c WHERE c.adapter IS NOT NULL AND c.start_ns IS NOT NULL "
			      "AND c.start_ns <= %lld AND coalesce(c.end_ns, c.start_ns) >= %lld%s "
			      "ORDER BY c.start_ns, c.id",
			      (long long)x->t1, (long long)x->t0, x->cpu_pred);
	if ((ret = prepare_owned(x, x->db, sql, &st, "reading cpu_waits")) < 0)
		return ret;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct nf_xevent e;
		int64_t start = sqlite3_column_int64(st, 4), end = col_or(st, 5, start);
		const char *status = (const char *)sqlite3_column_text(st, 6);

		memset(&e, 0, sizeof(e));
		e.stall_ts = -1;
		e.instant = col_null(st, 5);
		if (end < start)
			end = start;
		ret = col_null(st, 1) ? session_track(x, start, end, &e.track)
				      : thread_track(x, sqlite3_column_int64(st, 1), start, end, &e.track);
		if (ret < 0)
			break;
		op_name(name, "cpu wait", st, 2);
		e.ts = start;
		e.end = end;
		e.name = name;
		e.cat = "cpu_wait";
		arg_int(&e, "cpu wait id", sqlite3_column_int64(st, 0));
		if (!col_null(st, 2))
			arg_hex(&e, "fence", sqlite3_column_int64(st, 2));
		if (!col_null(st, 3))
			arg_int(&e, "value", sqlite3_column_int64(st, 3));
		arg_str(&e, "status", status ? status : "");
		if ((ret = emit(x, &e)) < 0)
			break;
	}
	if (ret == 0 && rc != SQLITE_DONE)
		ret = sql_fail(x, "reading cpu_waits");
	sqlite3_finalize(st);
	return ret;
}

/* cpu_signals: instants on their thread, with the flows to the waits they released. */
static int pass_cpu_signals(struct exporter *x)
{
	struct flowbuf fb = { x->err, NULL, 0, 0 };
	struct edge_cursor by_cpu;
	sqlite3_stmt *st = NULL;
	char *sql, name[96];
	int rc, ret;

	if (x->check_ends)
		sql = sqlite3_mprintf("SELECT d.cpu_signal, d.wait_id FROM deps d JOIN fence_ops w "
				      "ON w.id = d.wait_id WHERE d.signal_id IS NULL AND "
				      "d.cpu_signal IS NOT NULL%s ORDER BY d.cpu_signal, d.wait_id",
				      x->op_pred_w);
	else
		sql = sqlite3_mprintf("SELECT cpu_signal, wait_id FROM deps WHERE signal_id IS NULL AND "
				      "cpu_signal IS NOT NULL ORDER BY cpu_signal, wait_id");
	if ((ret = cursor_open(x->err, &by_cpu, x->db, sql)) < 0)
		goto out;
	sql = sqlite3_mprintf("SELECT c.id, c.thread, c.fence, c.value, c.ts_ns FROM cpu_signals c "
			      "WHERE 1%s ORDER BY c.id",
			      x->cpu_pred_c);
	if (!sql) {
		ret = oom(x);
		goto out;
	}
	rc = sqlite3_prepare_v2(x->db, sql, -1, &st, NULL);
	sqlite3_free(sql);
	if (rc != SQLITE_OK) {
		ret = sql_fail(x, "reading cpu_signals");
		goto out;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct nf_xevent e;
		int64_t id = sqlite3_column_int64(st, 0), ts = sqlite3_column_int64(st, 4);

		memset(&e, 0, sizeof(e));
		e.stall_ts = -1;
		e.instant = 1;
		ret = col_null(st, 1) ? session_track(x, ts, ts, &e.track)
				      : thread_track(x, sqlite3_column_int64(st, 1), ts, ts, &e.track);
		if (ret < 0)
			goto out;
		op_name(name, "cpu signal", st, 2);
		e.ts = e.end = ts;
		e.name = name;
		e.cat = "cpu_signal";
		arg_int(&e, "cpu signal id", id);
		if (!col_null(st, 2))
			arg_hex(&e, "fence", sqlite3_column_int64(st, 2));
		if (!col_null(st, 3))
			arg_int(&e, "value", sqlite3_column_int64(st, 3));
		if ((ret = cursor_collect(&fb, &by_cpu, id)) < 0)
			goto out;
		e.flows_out = fb.v;
		e.n_flows_out = fb.n;
		if ((ret = emit(x, &e)) < 0)
			goto out;
	}
	ret = rc == SQLITE_DONE ? 0 : sql_fail(x, "reading cpu_signals");
out:
	sqlite3_finalize(st);
	sqlite3_finalize(by_cpu.st);
	free(fb.v);
	return ret;
}

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
static int pass_anomalies(struct exporter *x)
{
	const struct nf_export_options *o = x->opts;
	sqlite3_stmt *st = NULL;
	char *qf = in_sql("queue", o->queues, o->queues ? o->n_queues : 0), *sql = NULL;
	int rc, ret = 0;

	if (!qf)
		return oom(x);
	sql = sqlite3_mprintf("SELECT id, kind, queue, log, coalesce(first_ns, last_ns), last_ns, "
			      "lost_entries, detail FROM anomalies WHERE coalesce(first_ns, last_ns) "
			      "IS NOT NULL AND coalesce(first_ns, last_ns) <= %lld "
			      "AND coalesce(last_ns, first_ns) >= %lld%s "
			      "ORDER BY queue, log, coalesce(first_ns, last_ns), id",
			      (long long)x->t1, (long long)x->t0, qf);
	free(qf);
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

/* ---- imported captures: GPU jobs, vblanks, markers (Linux), DMA packets, VSyncs (ETW) ---- */

/*
 * A track of imported items, found by what it stands for: a ring's jobs (and
 * the jobs waiting to run on it), a CRTC's vblanks, an ETW node's DMA
 * packets, a VSync target. Few of them: a linear search.
 */
enum { GK_RING, GK_RING_WAIT, GK_CRTC, GK_NODE, GK_VSYNC, GK_FLIP, GK_FRAME };

struct xgroup {
	int kind;
	int64_t k1, k2;
	char *ks;            /* a ring's name ("" when unknown) */
	struct lanes lanes;
};

/* A process of our own (GPU jobs, display), described on first use. */
static int own_process(struct exporter *x, struct nf_xtrack *t, int *described, int32_t pid,
		       int32_t sort, const char *name)
{
	if (*described)
		return 0;
	*described = 1;
	t->kind = NF_XT_PROCESS;
	t->uuid = x->next_uuid++;
	t->pid = pid;
	t->sort = sort;
	t->name = name;
	return describe(x, t);
}

/* The group's track for an item from start to end (lanes when they overlap). */
static int group_track(struct exporter *x, int kind, int64_t k1, int64_t k2, const char *ks,
		       const char *name, const struct nf_xtrack *parent, int64_t start, int64_t end,
		       const struct nf_xtrack **out)
{
	struct xgroup *g = NULL;
	int ret;

	for (size_t i = 0; i < x->n_groups && !g; i++) {
		struct xgroup *c = &x->groups[i];

		if (c->kind == kind && c->k1 == k1 && c->k2 == k2 && !strcmp(c->ks, ks ? ks : ""))
			g = c;
	}
	if (!g) {
		struct nf_xtrack base;

		if (x->n_groups == x->cap_groups) {
			size_t ncap = x->cap_groups ? x->cap_groups * 2 : 16;
			struct xgroup *ng = realloc(x->groups, ncap * sizeof(*ng));

			if (!ng)
				return oom(x);
			x->groups = ng;
			x->cap_groups = ncap;
		}
		g = &x->groups[x->n_groups];
		memset(g, 0, sizeof(*g));
		g->kind = kind;
		g->k1 = k1;
		g->k2 = k2;
		g->ks = strdup(ks ? ks : "");
		g->lanes.name = strdup(name);
		x->n_groups++;
		if (!g->ks || !g->lanes.name)
			return oom(x);
		memset(&base, 0, sizeof(base));
		base.kind = NF_XT_PLAIN;
		base.parent = parent->uuid;
		base.pid = parent->pid;
		base.tid = new_tid(x, base.pid);
		base.sort = (int32_t)x->n_groups;
		if ((ret = lanes_add(x, &g->lanes, &base)) < 0)
			return ret;
	}
	return lanes_pick(x, &g->lanes, start, end, out);
}

static void groups_release(struct exporter *x)
{
	for (size_t i = 0; i < x->n_groups; i++) {
		free(x->groups[i].ks);
		lanes_release(&x->groups[i].lanes);
	}
	free(x->groups);
}

/* Imported items belong to no queue or fence: a --queue or --fence filter leaves them out. */
static int imported_wanted(struct exporter *x, const char *table)
{
	return x->opts->n_queues == 0 && x->opts->n_fences == 0 && has_table(x->db, table);
}

/* A job is written when it has a time and overlaps the window (alias a). */
static char *job_pred(struct exporter *x, const char *a)
{
	return sqlite3_mprintf("coalesce(%s.submitted_ns, %s.started_ns, %s.finished_ns) IS NOT NULL "
			       "AND coalesce(%s.submitted_ns, %s.started_ns, %s.finished_ns) <= %lld "
			       "AND coalesce(%s.finished_ns, %s.started_ns, %s.submitted_ns) >= %lld",
			       a, a, a, a, a, a, (long long)x->t1, a, a, a, (long long)x->t0);
}

static void job_args(struct nf_xevent *e, sqlite3_stmt *st)
{
	arg_int(e, "job id", sqlite3_column_int64(st, 0));
	if (!col_null(st, 1))
		arg_str(e, "driver", (const char *)sqlite3_column_text(st, 1));
	if (!col_null(st, 3))
		arg_int(e, "job", sqlite3_column_int64(st, 3));
	if (!col_null(st, 4))
		arg_int(e, "context", sqlite3_column_int64(st, 4));
	if (!col_null(st, 5))
		arg_int(e, "seqno", sqlite3_column_int64(st, 5));
	if (!col_null(st, 6))
		arg_int(e, "thread", sqlite3_column_int64(st, 6));
	if (!col_null(st, 7))
		arg_int(e, "process", sqlite3_column_int64(st, 7));
	arg_str(e, "status", col_null(st, 11) ? "" : (const char *)sqlite3_column_text(st, 11));
	if (!col_null(st, 12))
		arg_str(e, "finish source", (const char *)sqlite3_column_text(st, 12));
	/* A ring-order or recording-start finish is a bound, not a time the trace
	 * shows: the run is drawn as the viewer and the page draw it (unfinished),
	 * the bound an arg. */
	if (!col_null(st, 13))
		arg_int(e, "finished no later than ns", sqlite3_column_int64(st, 13));
	if (!col_null(st, 14))
		arg_str(e, "bound source", (const char *)sqlite3_column_text(st, 14));
}

/*
 * jobs: per ring, a track "RING jobs" with each job's run (started ..
 * finished) and a track "RING waiting" with its wait to run (submitted ..
 * started); a time missing makes that part an instant at the time known (a
 * ring-order finish, jobs.finish_source, is a bound: an arg, not an end).
 * job_deps rows whose two jobs are written are flows (id: job_flow_base +
 * the row's rowid), from the dependency's run to the job's wait (its run
 * when it has no submit time).
 */
static int pass_jobs(struct exporter *x)
{
	struct flowbuf fout = { x->err, NULL, 0, 0 }, fbin = { x->err, NULL, 0, 0 };
	struct edge_cursor by_dep, by_job;
	sqlite3_stmt *st = NULL;
	char *pa = NULL, *pb = NULL, *sql;
	int rc, ret = 0;

	memset(&by_dep, 0, sizeof(by_dep));
	memset(&by_job, 0, sizeof(by_job));
	if (!imported_wanted(x, "jobs"))
		return 0;
	if (!(pa = job_pred(x, "a")) || !(pb = job_pred(x, "b"))) {
		ret = oom(x);
		goto out;
	}
	if (has_table(x->db, "job_deps")) {
		const char *q = "SELECT d.%s, d.rowid + %lld FROM job_deps d JOIN jobs a ON a.id = d.dep_job "
				"JOIN jobs b ON b.id = d.job WHERE %s AND %s ORDER BY 1, 2";

		if ((ret = cursor_open(x->err, &by_dep, x->db2,
				       sqlite3_mprintf(q, "dep_job", (long long)x->job_flow_base - 1, pa, pb))) < 0 ||
		    (ret = cursor_open(x->err, &by_job, x->db3,
				       sqlite3_mprintf(q, "job", (long long)x->job_flow_base - 1, pa, pb))) < 0)
			goto out;
	} else {
		by_dep.done = by_job.done = 1;
	}
	sql = sqlite3_mprintf("SELECT a.id, a.driver, a.ring, a.job, a.context, a.seqno, a.thread, a.process, "
			      "a.submitted_ns, a.started_ns, a.finished_ns, a.status, a.finish_source, a.finished_bound_ns, "
			      "a.bound_source FROM jobs a WHERE %s "
			      "ORDER BY a.id",
			      pa);
	if (!sql) {
		ret = oom(x);
		goto out;
	}
	rc = sqlite3_prepare_v2(x->db, sql, -1, &st, NULL);
	sqlite3_free(sql);
	if (rc != SQLITE_OK) {
		ret = sql_fail(x, "reading jobs");
		goto out;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		const char *ring = col_null(st, 2) ? "" : (const char *)sqlite3_column_text(st, 2);
		int has_sub = !col_null(st, 8), has_start = !col_null(st, 9), has_fin = !col_null(st, 10);
		int64_t sub = sqlite3_column_int64(st, 8), start = sqlite3_column_int64(st, 9);
		int64_t done = sqlite3_column_int64(st, 10);
		int has_run = has_start || has_fin, has_wait = has_sub;
		char nm[NAME_MAX_LEN + 32];
		struct nf_xevent e;

		if ((ret = own_process(x, &x->jobs_proc, &x->jobs_described, PID_JOBS, 999000, "GPU jobs")) < 0 ||
		    (ret = cursor_collect(&fout, &by_dep, id)) < 0 || (ret = cursor_collect(&fbin, &by_job, id)) < 0)
			goto out;
		if (has_wait) {
			int64_t a = sub, b = has_start ? start : sub;

			if (b < a) {
				a = b;
				b = sub;
			}
			memset(&e, 0, sizeof(e));
			e.stall_ts = -1;
			e.instant = !has_start;
			snprintf(nm, sizeof(nm), "%.*s waiting", NAME_MAX_LEN, *ring ? ring : "ring ?");
			if ((ret = group_track(x, GK_RING_WAIT, 0, 0, ring, nm, &x->jobs_proc, a, b, &e.track)) < 0)
				goto out;
			e.ts = a;
			e.end = b;
			e.name = has_start ? "job wait" : "job queued";
			e.cat = "job";
			job_args(&e, st);
			if (!has_run) {
				e.flows_out = fout.v;
				e.n_flows_out = fout.n;
			}
			e.flows_in = fbin.v;
			e.n_flows_in = fbin.n;
			if ((ret = emit(x, &e)) < 0)
				goto out;
		}
		if (has_run) {
			int64_t a = has_start ? start : done, b = has_fin ? done : a;

			if (b < a) {
				a = b;
				b = start;
			}
			memset(&e, 0, sizeof(e));
			e.stall_ts = -1;
			e.instant = !(has_start && has_fin);
			snprintf(nm, sizeof(nm), "%.*s jobs", NAME_MAX_LEN, *ring ? ring : "ring ?");
			if ((ret = group_track(x, GK_RING, 0, 0, ring, nm, &x->jobs_proc, a, b, &e.track)) < 0)
				goto out;
			e.ts = a;
			e.end = b;
			e.name = *ring ? ring : "job";
			e.cat = "job";
			job_args(&e, st);
			e.flows_out = fout.v;
			e.n_flows_out = fout.n;
			if (!has_wait) {
				e.flows_in = fbin.v;
				e.n_flows_in = fbin.n;
			}
			if ((ret = emit(x, &e)) < 0)
				goto out;
		}
	}
	if (rc != SQLITE_DONE)
		ret = sql_fail(x, "reading jobs");
out:
	sqlite3_finalize(st);
	sqlite3_finalize(by_dep.st);
	sqlite3_finalize(by_job.st);
	sqlite3_free(pa);
	sqlite3_free(pb);
	free(fout.v);
	free(fbin.v);
	return ret;
}

/* vblanks: an instant per row on its CRTC's track (process "Display"). */
static int pass_vblanks(struct exporter *x)
{
	sqlite3_stmt *st = NULL;
	char *sql;
	int rc, ret = 0;

	if (!imported_wanted(x, "vblanks"))
		return 0;
	sql = sqlite3_mprintf("SELECT ts_ns, crtc, seq FROM vblanks WHERE ts_ns IS NOT NULL AND ts_ns >= %lld "
			      "AND ts_ns <= %lld ORDER BY ts_ns",
			      (long long)x->t0, (long long)x->t1);
	if ((ret = prepare_owned(x, x->db, sql, &st, "reading vblanks")) < 0)
		return ret;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t ts = sqlite3_column_int64(st, 0), crtc = col_or(st, 1, -1);
		struct nf_xevent e;
		char nm[64];

		memset(&e, 0, sizeof(e));
		e.stall_ts = -1;
		e.instant = 1;
		if (crtc >= 0)
			snprintf(nm, sizeof(nm), "CRTC %" PRId64 " vblanks", crtc);
		else
			snprintf(nm, sizeof(nm), "vblanks");
		if ((ret = own_process(x, &x->display_proc, &x->display_described, PID_DISPLAY, 999001,
				       "Display")) < 0 ||
		    (ret = group_track(x, GK_CRTC, crtc, 0, NULL, nm, &x->display_proc, ts, ts, &e.track)) < 0)
			break;
		e.ts = e.end = ts;
		e.name = "vblank";
		e.cat = "vblank";
		if (!col_null(st, 1))
			arg_int(&e, "crtc", crtc);
		if (!col_null(st, 2))
			arg_int(&e, "seq", sqlite3_column_int64(st, 2));
		if ((ret = emit(x, &e)) < 0)
			break;
	}
	if (ret == 0 && rc != SQLITE_DONE)
		ret = sql_fail(x, "reading vblanks");
	sqlite3_finalize(st);
	return ret;
}

/* markers: an instant per row on the thread that wrote it, named by its text. */
static int pass_markers(struct exporter *x)
{
	sqlite3_stmt *st = NULL;
	char *sql;
	int rc, ret = 0;

	if (!imported_wanted(x, "markers"))
		return 0;
	sql = sqlite3_mprintf("SELECT id, ts_ns, thread, cpu, text FROM markers WHERE ts_ns IS NOT NULL "
			      "AND ts_ns >= %lld AND ts_ns <= %lld ORDER BY id",
			      (long long)x->t0, (long long)x->t1);
	if ((ret = prepare_owned(x, x->db, sql, &st, "reading markers")) < 0)
		return ret;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t ts = sqlite3_column_int64(st, 1);
		const char *text = col_null(st, 4) ? "" : (const char *)sqlite3_column_text(st, 4);
		struct nf_xevent e;
		char nm[NAME_MAX_LEN + 1];

		memset(&e, 0, sizeof(e));
		e.stall_ts = -1;
		e.instant = 1;
		ret = col_null(st, 2) ? session_track(x, ts, ts, &e.track)
				      : thread_track(x, sqlite3_column_int64(st, 2), ts, ts, &e.track);
		if (ret < 0)
			break;
		/* The text as the name (cut at NAME_MAX_LEN bytes, not inside a UTF-8
		 * sequence); whole in the args. */
		if (snprintf(nm, sizeof(nm), "%s", *text ? text : "marker") >= (int)sizeof(nm)) {
			size_t n = sizeof(nm) - 1;  /* text[n]: the first byte left out */

			while (n > 0 && ((unsigned char)text[n] & 0xc0) == 0x80)
				n--;
			nm[n] = '\0';
		}
		e.ts = e.end = ts;
		e.name = nm;
		e.cat = "marker";
		arg_int(&e, "marker id", sqlite3_column_int64(st, 0));
		if (!col_null(st, 3))
			arg_int(&e, "cpu", sqlite3_column_int64(st, 3));
		arg_str(&e, "text", text);
		if ((ret = emit(x, &e)) < 0)
			break;
	}
	if (ret == 0 && rc != SQLITE_DONE)
		ret = sql_fail(x, "reading markers");
	sqlite3_finalize(st);
	return ret;
}

/* The adapter's process, else the "Display" one (an ETW row naming no adapter). */
static int adapter_or_display(struct exporter *x, sqlite3_stmt *st, int col, const struct nf_xtrack **out)
{
	struct xadapter *a = col_null(st, col) ? NULL : find_adapter(x, sqlite3_column_int64(st, col));
	int ret;

	if (a) {
		if ((ret = adapter_process(x, a)) < 0)
			return ret;
		*out = &a->t;
		return 0;
	}
	if ((ret = own_process(x, &x->display_proc, &x->display_described, PID_DISPLAY, 999001,
			       "Display")) < 0)
		return ret;
	*out = &x->display_proc;
	return 0;
}

/*
 * dma_packets (ETW): per adapter and node, a track "NODE DMA packets" with
 * each packet from start to end (pending: an instant at its start). With
 * --queue, the packets of those queues.
 */
static int pass_dma_packets(struct exporter *x)
{
	const struct nf_export_options *o = x->opts;
	int nodes = has_table(x->db, "etw_nodes");
	char *qf, *sql;
	sqlite3_stmt *st = NULL;
	int rc, ret = 0;

	if (o->n_fences > 0 || !has_table(x->db, "dma_packets"))
		return 0;
	if (!(qf = in_sql("d.queue", o->queues, o->queues ? o->n_queues : 0)))
		return oom(x);
	sql = sqlite3_mprintf("SELECT d.id, d.adapter, d.node, d.queue, d.packet_type, d.submission_id, "
			      "d.queue_seq, d.start_ns, d.isr_ns, d.end_ns, d.status, %s FROM dma_packets d "
			      "WHERE d.start_ns IS NOT NULL AND d.start_ns <= %lld AND coalesce(d.end_ns, "
			      "d.start_ns) >= %lld%s ORDER BY d.id",
			      nodes ? "(SELECT n.name FROM etw_nodes n WHERE n.adapter = d.adapter AND n.node = d.node)"
				    : "NULL",
			      (long long)x->t1, (long long)x->t0, qf);
	free(qf);
	if ((ret = prepare_owned(x, x->db, sql, &st, "reading dma_packets")) < 0)
		return ret;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t start = sqlite3_column_int64(st, 7), end = col_or(st, 9, start);
		int64_t node = col_or(st, 2, -1);
		const struct nf_xtrack *proc;
		struct nf_xevent e;
		char nm[NAME_MAX_LEN + 64];

		memset(&e, 0, sizeof(e));
		e.stall_ts = -1;
		e.instant = col_null(st, 9);
		if (end < start)
			end = start;
		if (!col_null(st, 11))
			snprintf(nm, sizeof(nm), "%.*s DMA packets", NAME_MAX_LEN, (const char *)sqlite3_column_text(st, 11));
		else if (node >= 0)
			snprintf(nm, sizeof(nm), "Node %" PRId64 " DMA packets", node);
		else
			snprintf(nm, sizeof(nm), "DMA packets");
		if ((ret = adapter_or_display(x, st, 1, &proc)) < 0 ||
		    (ret = group_track(x, GK_NODE, col_or(st, 1, -1), node, NULL, nm, proc, start, end, &e.track)) < 0)
			break;
		e.ts = start;
		e.end = end;
		e.name = "dma packet";
		e.cat = "dma";
		arg_int(&e, "dma packet id", sqlite3_column_int64(st, 0));
		if (!col_null(st, 3))
			arg_hex(&e, "queue", sqlite3_column_int64(st, 3));
		if (!col_null(st, 4))
			arg_int(&e, "packet type", sqlite3_column_int64(st, 4));
		if (!col_null(st, 5))
			arg_int(&e, "submission id", sqlite3_column_int64(st, 5));
		if (!col_null(st, 6))
			arg_int(&e, "queue seq", sqlite3_column_int64(st, 6));
		if (!col_null(st, 8))
			arg_int(&e, "isr_ns", sqlite3_column_int64(st, 8));
		arg_str(&e, "status", col_null(st, 10) ? "" : (const char *)sqlite3_column_text(st, 10));
		if ((ret = emit(x, &e)) < 0)
			break;
	}
	if (ret == 0 && rc != SQLITE_DONE)
		ret = sql_fail(x, "reading dma_packets");
	sqlite3_finalize(st);
	return ret;
}

/* vsyncs (ETW): an instant per row on its adapter's "VSync target N" track. */
static int pass_vsyncs(struct exporter *x)
{
	sqlite3_stmt *st = NULL;
	char *sql;
	int rc, ret = 0;

	if (!imported_wanted(x, "vsyncs"))
		return 0;
	sql = sqlite3_mprintf("SELECT id, ts_ns, adapter, target, frame FROM vsyncs WHERE ts_ns IS NOT NULL "
			      "AND ts_ns >= %lld AND ts_ns <= %lld ORDER BY id",
			      (long long)x->t0, (long long)x->t1);
	if ((ret = prepare_owned(x, x->db, sql, &st, "reading vsyncs")) < 0)
		return ret;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t ts = sqlite3_column_int64(st, 1), target = col_or(st, 3, -1);
		const struct nf_xtrack *proc;
		struct nf_xevent e;
		char nm[64];

		memset(&e, 0, sizeof(e));
		e.stall_ts = -1;
		e.instant = 1;
		if (target >= 0)
			snprintf(nm, sizeof(nm), "VSync target %" PRId64, target);
		else
			snprintf(nm, sizeof(nm), "VSyncs");
		if ((ret = adapter_or_display(x, st, 2, &proc)) < 0 ||
		    (ret = group_track(x, GK_VSYNC, col_or(st, 2, -1), target, NULL, nm, proc, ts, ts, &e.track)) < 0)
			break;
		e.ts = e.end = ts;
		e.name = "vsync";
		e.cat = "vsync";
		arg_int(&e, "vsync id", sqlite3_column_int64(st, 0));
		if (!col_null(st, 4))
			arg_int(&e, "frame", sqlite3_column_int64(st, 4));
		if ((ret = emit(x, &e)) < 0)
			break;
	}
	if (ret == 0 && rc != SQLITE_DONE)
		ret = sql_fail(x, "reading vsyncs");
	sqlite3_finalize(st);
	return ret;
}

/*
 * The frames (nftrace frames): each flip a slice on its display's "flips"
 * track in the "Display" process, from when it could be shown (its frame's
 * GPU work done, else queued) to when it was latched (not latched: an instant
 * where it could be shown), named "late flip" for a late frame and "dropped
 * flip" for one never shown; each frame a slice on its swap chain's track in
 * the "Frames" process, from its present to its blank (else its GPU work
 * done, else the present), "late frame" when late, with its PresentMon
 * metrics, status and blame in the args. Not with a --queue or --fence filter.
 */
static int pass_frames(struct exporter *x)
{
	sqlite3_stmt *st = NULL;
	char *sql;
	int rc, ret = 0;

	if (!imported_wanted(x, "frames") || !has_table(x->db, "flips"))
		return 0;
	sql = sqlite3_mprintf("SELECT l.id, l.display, coalesce(l.ready_ns, l.queued_ns), l.done_ns, l.status, "
			      "l.vblank_seq, f.frame, coalesce(f.late, 0), l.queued_ns, "
			      "(SELECT d.name FROM displays d WHERE d.display = l.display) FROM flips l "
			      "LEFT JOIN frames f ON f.present = l.present "
			      "WHERE coalesce(l.ready_ns, l.queued_ns) IS NOT NULL AND coalesce(l.ready_ns, l.queued_ns) "
			      "<= %lld AND coalesce(l.done_ns, l.ready_ns, l.queued_ns) >= %lld ORDER BY l.id",
			      (long long)x->t1, (long long)x->t0);
	if ((ret = prepare_owned(x, x->db, sql, &st, "reading flips")) < 0)
		return ret;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t from = sqlite3_column_int64(st, 2), to = col_or(st, 3, from), disp = col_or(st, 1, -1);
		const char *status = col_null(st, 4) ? "" : (const char *)sqlite3_column_text(st, 4);
		struct nf_xevent e;
		char nm[NAME_MAX_LEN + 32];

		memset(&e, 0, sizeof(e));
		e.stall_ts = -1;
		e.instant = col_null(st, 3);
		if (to < from)
			to = from;
		if (!col_null(st, 9))
			snprintf(nm, sizeof(nm), "display %.*s flips", NAME_MAX_LEN, (const char *)sqlite3_column_text(st, 9));
		else
			snprintf(nm, sizeof(nm), "flips");
		if ((ret = own_process(x, &x->display_proc, &x->display_described, PID_DISPLAY, 999001,
				       "Display")) < 0 ||
		    (ret = group_track(x, GK_FLIP, disp, 0, NULL, nm, &x->display_proc, from, to, &e.track)) < 0)
			break;
		e.ts = from;
		e.end = to;
		e.name = !strcmp(status, "dropped") ? "dropped flip" : sqlite3_column_int(st, 7) ? "late flip" : "flip";
		e.cat = "flip";
		arg_int(&e, "flip id", sqlite3_column_int64(st, 0));
		if (!col_null(st, 6))
			arg_int(&e, "frame", sqlite3_column_int64(st, 6));
		arg_str(&e, "status", status);
		if (!col_null(st, 5))
			arg_int(&e, "vblank seq", sqlite3_column_int64(st, 5));
		if (!col_null(st, 8))
			arg_int(&e, "queued_ns", sqlite3_column_int64(st, 8));
		if ((ret = emit(x, &e)) < 0)
			break;
	}
	if (ret == 0 && rc != SQLITE_DONE)
		ret = sql_fail(x, "reading flips");
	sqlite3_finalize(st);
	if (ret)
		return ret;
	sql = sqlite3_mprintf("SELECT frame, swapchain, present_ns, coalesce(screen_ns, ready_ns, present_ns), status, "
			      "late, interval_ns, MsBetweenPresents, MsUntilRenderComplete, MsUntilDisplayed, "
			      "MsGPUBusy, MsGPUWait, process, missed_vblanks, blame FROM frames "
			      "WHERE present_ns <= %lld AND coalesce(screen_ns, ready_ns, present_ns) >= %lld ORDER BY frame",
			      (long long)x->t1, (long long)x->t0);
	if ((ret = prepare_owned(x, x->db, sql, &st, "reading frames")) < 0)
		return ret;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t from = sqlite3_column_int64(st, 2), to = sqlite3_column_int64(st, 3);
		const char *sc = col_null(st, 1) ? "" : (const char *)sqlite3_column_text(st, 1);
		struct nf_xevent e;
		char nm[NAME_MAX_LEN + 32];
		static const char *const ms_key[] = { "MsBetweenPresents", "MsUntilRenderComplete", "MsUntilDisplayed",
						      "MsGPUBusy", "MsGPUWait" };
		char ms[5][32];

		memset(&e, 0, sizeof(e));
		e.stall_ts = -1;
		if (to < from)
			to = from;
		e.instant = to == from;
		snprintf(nm, sizeof(nm), "frames of %.*s", NAME_MAX_LEN, *sc ? sc : "?");
		if ((ret = own_process(x, &x->frames_proc, &x->frames_described, PID_FRAMES, 999002, "Frames")) < 0 ||
		    (ret = group_track(x, GK_FRAME, 0, 0, sc, nm, &x->frames_proc, from, to, &e.track)) < 0)
			break;
		e.ts = from;
		e.end = to;
		e.name = sqlite3_column_int(st, 5) ? "late frame" : "frame";
		e.cat = "frame";
		arg_int(&e, "frame", sqlite3_column_int64(st, 0));
		arg_str(&e, "status", col_null(st, 4) ? "" : (const char *)sqlite3_column_text(st, 4));
		if (!col_null(st, 6))
			arg_int(&e, "interval_ns", sqlite3_column_int64(st, 6));
		/* PresentMon's metrics, in milliseconds as it writes them */
		for (int k = 0; k < 5; k++)
			if (!col_null(st, 7 + k)) {
				snprintf(ms[k], sizeof(ms[k]), "%.4f", sqlite3_column_double(st, 7 + k));
				arg_str(&e, ms_key[k], ms[k]);
			}
		if (!col_null(st, 13))
			arg_int(&e, "missed vblanks", sqlite3_column_int64(st, 13));
		if (!col_null(st, 14))
			arg_str(&e, "blame", (const char *)sqlite3_column_text(st, 14));
		if ((ret = emit(x, &e)) < 0)
			break;
	}
	if (ret == 0 && rc != SQLITE_DONE)
		ret = sql_fail(x, "reading frames");
	sqlite3_finalize(st);
	return ret;
}

/* The first flow id of job_deps: above every fence_ops flow (wait id + 1). */
static int job_flows_base(struct exporter *x)
{
	sqlite3_stmt *st;
	int ret = 0;

	if (sqlite3_prepare_v2(x->db, "SELECT coalesce(max(id), 0) FROM fence_ops", -1, &st, NULL) != SQLITE_OK)
		return sql_fail(x, "reading fence_ops");
	if (sqlite3_step(st) == SQLITE_ROW)
		x->job_flow_base = sqlite3_column_int64(st, 0) + 2;
	else
		ret = sql_fail(x, "reading fence_ops");
	sqlite3_finalize(st);
	return ret;
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
	groups_release(x);
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


/*
 * The session's end as report takes it: meta's duration_ns, else the latest
 * time of its operations, CPU waits and signals and anomalies (0: empty).
 */
static int session_end(struct exporter *x, int64_t *end)
{
	static const char scan[] =
		"SELECT max(coalesce((SELECT max(max(coalesce(queued_ns,0), coalesce(observed_ns,0),"
		" coalesce(end_ns,0))) FROM fence_ops), 0),"
		" coalesce((SELECT max(max(start_ns, coalesce(end_ns,0))) FROM cpu_waits), 0),"
		" coalesce((SELECT max(ts_ns) FROM cpu_signals), 0),"
		" coalesce((SELECT max(max(coalesce(first_ns,0), coalesce(last_ns,0))) FROM anomalies), 0))";
	sqlite3_stmt *st;
	int rc;

	*end = 0;
	if (sqlite3_prepare_v2(x->db, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'duration_ns'",
			       -1, &st, NULL) != SQLITE_OK)
		return sql_fail(x, "reading meta");
	if ((rc = sqlite3_step(st)) == SQLITE_ROW && !col_null(st, 0))
		*end = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return sql_fail(x, "reading meta");
	if (*end > 0)
		return 0;
	*end = 0;
	if (sqlite3_prepare_v2(x->db, scan, -1, &st, NULL) != SQLITE_OK)
		return sql_fail(x, "finding the session end");
	if ((rc = sqlite3_step(st)) == SQLITE_ROW)
		*end = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : sql_fail(x, "finding the session end");
}

/* A fence filter naming no fence of the timeline is a user error (as in report). */
static int check_fences(struct exporter *x)
{
	const struct nf_export_options *o = x->opts;
	sqlite3_stmt *st;
	int ret = 0;

	if (!o->fences || o->n_fences <= 0)
		return 0;
	if (sqlite3_prepare_v2(x->db, "SELECT 1 FROM fences WHERE fence = ?1", -1, &st, NULL) != SQLITE_OK)
		return sql_fail(x, "checking --fence");
	for (int i = 0; i < o->n_fences && ret == 0; i++) {
		int rc;

		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, o->fences[i]);
		rc = sqlite3_step(st);
		if (rc == SQLITE_DONE)
			ret = nf_error_set(x->err, NF_ENOENT, "fence 0x%" PRIx64 ": not in the timeline",
					   (uint64_t)o->fences[i]);
		else if (rc != SQLITE_ROW)
			ret = sql_fail(x, "checking --fence");
	}
	sqlite3_finalize(st);
	return ret;
}

/* A window that starts at or after the session's end is an error (as in report). */
static int check_window(struct exporter *x)
{
	int64_t end;
	char a[32], b[32];
	int ret;

	if (x->opts->from_ns < 0)
		return 0;
	if ((ret = session_end(x, &end)) < 0)
		return ret;
	if (end <= 0 || x->opts->from_ns < end)
		return 0;
	nf_text_duration(a, sizeof(a), x->opts->from_ns);
	nf_text_duration(b, sizeof(b), end);
	return nf_error_set(x->err, NF_EINVAL,
			    "time window: start %s is not before the session's end (%s)", a, b);
}

/* Runs the passes into the writer. */
static int export_all(struct exporter *x)
{
	int ret;

	if ((ret = check_fences(x)) < 0 || (ret = check_window(x)) < 0 || (ret = load_adapters(x)) < 0 ||
	    (ret = load_queues(x)) < 0)
		return ret;
	if (has_table(x->db, "kernel_threads") &&
	    sqlite3_prepare_v2(x->db2, "SELECT comm FROM kernel_threads WHERE thread = ?1", -1,
			       &x->thread_name, NULL) != SQLITE_OK)
		return sql_fail(x, "reading kernel_threads");
	x->op_pred_f = op_pred(x, "f");
	x->op_pred_s = op_pred(x, "s");
	x->op_pred_w = op_pred(x, "w");
	x->cpu_pred_c = cpu_signal_pred(x, "c");
	{
		const struct nf_export_options *o = x->opts;
		char *f = in_sql("c.fence", o->fences, o->fences ? o->n_fences : 0);

		x->cpu_pred = f ? sqlite3_mprintf("%s", f) : NULL;
		free(f);
	}
	if (!x->op_pred_f || !x->op_pred_s || !x->op_pred_w || !x->cpu_pred_c || !x->cpu_pred)
		return oom(x);
	if ((ret = x->w->begin(x->w)) < 0 || (ret = pass_threads(x)) < 0 ||
	    (ret = pass_ops(x)) != 0 ||
	    (ret = pass_cpu_waits(x)) < 0 || (ret = pass_cpu_signals(x)) < 0 ||
	    (ret = pass_anomalies(x)) < 0 || (ret = job_flows_base(x)) < 0 || (ret = pass_jobs(x)) < 0 ||
	    (ret = pass_vblanks(x)) < 0 || (ret = pass_markers(x)) < 0 || (ret = pass_dma_packets(x)) < 0 ||
	    (ret = pass_vsyncs(x)) < 0 || (ret = pass_frames(x)) < 0)
		return ret;
	if (x->filtered && x->st.slices + x->st.instants + x->st.counters == 0)
		return nf_error_set(x->err, NF_ENOENT,
				    "nothing to export: no operation, CPU wait, CPU signal or anomaly "
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
	x.t0 = opts->from_ns >= 0 ? opts->from_ns : INT64_MIN;
	x.t1 = opts->to_ns >= 0 ? opts->to_ns : INT64_MAX;
	x.filtered = opts->from_ns >= 0 || opts->to_ns >= 0 || opts->n_queues > 0 || opts->n_fences > 0;
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
	if (opts->n_queues < 0 || (opts->n_queues > 0 && !opts->queues) || opts->n_fences < 0 ||
	    (opts->n_fences > 0 && !opts->fences))
		return nf_error_set(err, NF_EINVAL, "export: bad queue or fence filter");
	if (opts->from_ns < -1 || opts->to_ns < -1)
		return nf_error_set(err, NF_EINVAL, "time window: negative time");
	if (opts->from_ns >= 0 && opts->to_ns >= 0 && opts->to_ns <= opts->from_ns)
		return nf_error_set(err, NF_EINVAL, "time window: end (%" PRId64
				    " ns) is not after start (%" PRId64 " ns)", opts->to_ns, opts->from_ns);
	ret = export_once(db_path, opts, stats, err, 0, &retry);
	if (ret == 0 && retry)
		ret = export_once(db_path, opts, stats, err, 1, &retry);
	return ret;
}
