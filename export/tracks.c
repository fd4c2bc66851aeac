/*
 * The export's tracks: the processes (an adapter's, the CPU threads'), a
 * track per queue and per CPU thread, the "session" track for what has
 * neither, each described to the writer on first use; and the lanes that
 * keep slices on one track nested (a slice that overlaps the track's last one
 * without nesting goes to a child track "NAME #2", ...). The small tables
 * they come from (adapters, queues) are loaded here.
 */
#include "walk.h"
#include "contract/errors.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cpu_process(struct exporter *x)
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

struct xadapter *find_adapter(struct exporter *x, int64_t adapter)
{
	for (size_t i = 0; i < x->n_adapters; i++)
		if (x->adapters[i].adapter == adapter)
			return &x->adapters[i];
	return NULL;
}

int adapter_process(struct exporter *x, struct xadapter *a)
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

void lanes_release(struct lanes *l)
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
int lanes_add(struct exporter *x, struct lanes *l, const struct nf_xtrack *base)
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
int lanes_pick(struct exporter *x, struct lanes *l, int64_t start, int64_t end,
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

struct xqueue *find_queue(struct exporter *x, int64_t queue)
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
struct xqueue *add_queue(struct exporter *x, int64_t queue)
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
int queue_base(struct exporter *x, struct xqueue *q, struct nf_xtrack *t)
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

int queue_track(struct exporter *x, struct xqueue *q, int64_t start, int64_t end,
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
int thread_ensure(struct exporter *x, int64_t thread, struct xthread **out)
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

int thread_track(struct exporter *x, int64_t thread, int64_t start, int64_t end,
			const struct nf_xtrack **out)
{
	struct xthread *t;
	int ret = thread_ensure(x, thread, &t);

	return ret < 0 ? ret : lanes_pick(x, &t->lanes, start, end, out);
}

/* The "session" track (items with neither queue nor thread): lane 0 made. */
int session_ensure(struct exporter *x)
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

int session_track(struct exporter *x, int64_t start, int64_t end, const struct nf_xtrack **out)
{
	int ret = session_ensure(x);

	return ret < 0 ? ret : lanes_pick(x, &x->session.lanes, start, end, out);
}

int load_adapters(struct exporter *x)
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
int has_table(sqlite3 *db, const char *name)
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

/*
 * The queues, each named as the view queue_labels names it (a queue's own
 * name and handle, or what the importer tells of it), the name cut near
 * 2 x NAME_MAX_LEN bytes.
 */
int load_queues(struct exporter *x)
{
	sqlite3_stmt *st = NULL;
	int rc, ret = 0;

	if (sqlite3_prepare_v2(x->db, "SELECT q.queue, q.adapter, l.label FROM queues q "
				      "JOIN queue_labels l ON l.queue = q.queue ORDER BY q.queue",
			       -1, &st, NULL) != SQLITE_OK)
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
		if (sqlite3_column_text(st, 2))
			snprintf(nm, sizeof(nm), "%s", (const char *)sqlite3_column_text(st, 2));
		else
			snprintf(nm, sizeof(nm), "queue 0x%" PRIx64, (uint64_t)queue);
		free(q->lanes.name);
		if (!(q->lanes.name = strdup(nm))) {
			ret = oom(x);
			goto out;
		}
	}
	if (rc != SQLITE_DONE)
		ret = sql_fail(x, "reading queues");
out:
	sqlite3_finalize(st);
	return ret;
}
