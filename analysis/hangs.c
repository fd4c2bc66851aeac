/*
 * Hangs and deadlocks: the wait-for graph of the waits still open when the
 * session ended. A queue's first open operation blocks the rest of the queue;
 * an open wait points at the blocking waits of the queues holding the signals
 * that could satisfy it. Waits that no chain leads out of can never be
 * satisfied: cycles are deadlocks, roots without any signal are never
 * signaled, the rest are blocked behind them. Also the signals that lower a
 * fence's value.
 */
#include "analysis_int.h"
#include "contract/errors.h"

#include <stdlib.h>
#include <string.h>

struct node {
	struct nf_wait_ref ref;
	int32_t fidx;
	size_t e0, ne;       /* its edges in g->edges */
	bool sat, reached, no_candidates, unknown_initial;
	int32_t scc;         /* deadlock SCC id, AN_NONE */
	/* Tarjan */
	int32_t index, low;
	bool on_stack;
};

struct edge {
	int32_t to;          /* node */
	int32_t signal;      /* op index */
};

struct graph {
	const struct nf_analysis *a;
	struct node *nodes;
	size_t n, cap;
	struct edge *edges;
	size_t ne, cap_e;
	int32_t *node_of_op; /* per op: node index, AN_NONE */
};

const char *nf_hang_kind_name(enum nf_hang_kind kind)
{
	switch (kind) {
	case NF_HANG_DEADLOCK: return "deadlock";
	case NF_HANG_NEVER_SIGNALED: return "never_signaled";
	case NF_HANG_BLOCKED: return "blocked";
	case NF_HANG_LOWERED: return "lowered";
	case NF_HANG_PENDING: return "pending";
	default: return "unknown";
	}
}

static struct nf_wait_ref op_ref(const struct an_op *o)
{
	struct nf_wait_ref r = { o->id, -1, o->qidx != AN_NONE ? o->queue : -1, o->thread, o->fence,
				 o->value, o->has_queued ? o->queued : o->has_observed ? o->observed : -1 };

	return r;
}

static int add_node(struct graph *g, struct nf_wait_ref ref, int32_t fidx)
{
	if (an_grow((void **)&g->nodes, &g->cap, g->n + 1, sizeof(*g->nodes)))
		return NF_ENOMEM;
	memset(&g->nodes[g->n], 0, sizeof(g->nodes[0]));
	g->nodes[g->n].ref = ref;
	g->nodes[g->n].fidx = fidx;
	g->nodes[g->n].scc = AN_NONE;
	g->nodes[g->n].index = AN_NONE;
	g->n++;
	return 0;
}

/* The queue's first operation that did not run, AN_NONE when all ran. */
static int32_t queue_head(const struct an_queue *q)
{
	size_t pos = (size_t)(q->last_done + 1);

	return pos < q->n ? q->ops[pos] : AN_NONE;
}

/* Whether the operation is still to run when the session ended. */
static bool op_open(const struct nf_analysis *a, const struct an_op *o)
{
	if (o->qidx == AN_NONE)
		return !o->done;
	return o->qpos > a->queues[o->qidx].last_done;
}

struct pend_sig {
	int32_t fidx, op;
};

static int pend_cmp(const void *x, const void *y)
{
	const struct pend_sig *p = x, *q = y;

	if (p->fidx != q->fidx)
		return p->fidx < q->fidx ? -1 : 1;
	return p->op < q->op ? -1 : p->op > q->op;
}

struct cw_key {
	int64_t thread, fence, value, start;
};

static int cw_key_cmp(const void *x, const void *y)
{
	const struct cw_key *p = x, *q = y;

	if (p->thread != q->thread)
		return p->thread < q->thread ? -1 : 1;
	if (p->fence != q->fence)
		return p->fence < q->fence ? -1 : 1;
	if (p->value != q->value)
		return p->value < q->value ? -1 : 1;
	return p->start < q->start ? -1 : p->start > q->start;
}

static int build_nodes(struct graph *g, struct cw_key **keys_out, size_t *nk_out)
{
	const struct nf_analysis *a = g->a;
	struct cw_key *keys = NULL;
	size_t nk = 0, capk = 0;

	/* the blocking wait of every stuck queue */
	for (size_t qi = 0; qi < a->n_queues; qi++) {
		int32_t h = queue_head(&a->queues[qi]);

		if (h == AN_NONE || a->ops[h].is_signal || a->ops[h].fidx == AN_NONE)
			continue;
		g->node_of_op[h] = (int32_t)g->n;
		if (add_node(g, op_ref(&a->ops[h]), a->ops[h].fidx))
			return NF_ENOMEM;
	}
	/* CPU waits still waiting */
	for (size_t i = 0; i < a->n_cwaits; i++) {
		const struct an_cwait *w = &a->cwaits[i];
		struct nf_wait_ref r = { -1, w->id, -1, w->thread, w->fence, w->value,
					 w->has_start ? w->start : -1 };

		if (w->has_end || w->fidx == AN_NONE)
			continue;
		if (add_node(g, r, w->fidx) ||
		    an_grow((void **)&keys, &capk, nk + 1, sizeof(*keys))) {
			free(keys);
			return NF_ENOMEM;
		}
		keys[nk++] = (struct cw_key){ w->thread, w->fence, w->value, r.since_ns };
	}
	if (nk)
		qsort(keys, nk, sizeof(*keys), cw_key_cmp);
	/* threads' waits recorded only as operations (not also as cpu_waits rows) */
	for (size_t i = 0; i < a->n_ops; i++) {
		const struct an_op *o = &a->ops[i];
		struct nf_wait_ref r;
		struct cw_key k;

		if (o->qidx != AN_NONE || o->is_signal || o->done || o->fidx == AN_NONE)
			continue;
		r = op_ref(o);
		k = (struct cw_key){ o->thread, o->fence, o->value, r.since_ns };
		if (nk && bsearch(&k, keys, nk, sizeof(*keys), cw_key_cmp))
			continue;
		g->node_of_op[i] = (int32_t)g->n;
		if (add_node(g, r, o->fidx)) {
			free(keys);
			return NF_ENOMEM;
		}
	}
	*keys_out = keys;
	*nk_out = nk;
	return 0;
}

static int build_edges(struct graph *g)
{
	const struct nf_analysis *a = g->a;
	struct pend_sig *ps = NULL;
	size_t nps = 0, capps = 0;

	for (size_t i = 0; i < a->n_ops; i++) {
		const struct an_op *o = &a->ops[i];

		if (!o->is_signal || o->fidx == AN_NONE || !o->has_value || !op_open(a, o))
			continue;
		if (an_grow((void **)&ps, &capps, nps + 1, sizeof(*ps))) {
			free(ps);
			return NF_ENOMEM;
		}
		ps[nps++] = (struct pend_sig){ o->fidx, (int32_t)i };
	}
	if (nps)
		qsort(ps, nps, sizeof(*ps), pend_cmp);
	for (size_t ni = 0; ni < g->n; ni++) {
		struct node *nd = &g->nodes[ni];
		const struct an_fence *f = &a->fences[nd->fidx];
		int64_t v = nd->ref.value;
		size_t lo = 0, hi = nps, cand = 0;

		nd->e0 = g->ne;
		nd->reached = (f->has_initial && f->initial >= v) || (f->any_done && f->done_max >= v);
		nd->unknown_initial = !f->has_initial;
		if (nd->reached) {
			nd->sat = true;
			continue;
		}
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (ps[mid].fidx < nd->fidx)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t k = lo; k < nps && ps[k].fidx == nd->fidx; k++) {
			const struct an_op *s = &a->ops[ps[k].op];
			int32_t h;

			if (s->value < v)
				continue;
			cand++;
			if (s->qidx == AN_NONE) {
				nd->sat = true; /* a signal not on a queue: nothing seen blocks it */
				continue;
			}
			h = queue_head(&a->queues[s->qidx]);
			if (h == AN_NONE || g->node_of_op[h] == AN_NONE) {
				nd->sat = true; /* its queue is still running (its first open op is no wait) */
				continue;
			}
			if (an_grow((void **)&g->edges, &g->cap_e, g->ne + 1, sizeof(*g->edges))) {
				free(ps);
				return NF_ENOMEM;
			}
			g->edges[g->ne++] = (struct edge){ g->node_of_op[h], ps[k].op };
		}
		nd->ne = g->ne - nd->e0;
		nd->no_candidates = cand == 0;
		if (!cand && nd->unknown_initial)
			nd->sat = true; /* it may have been signaled before the session began */
	}
	free(ps);
	/* satisfiable: any edge to a satisfiable wait (to a fixpoint) */
	for (bool changed = true; changed;) {
		changed = false;
		for (size_t ni = 0; ni < g->n; ni++) {
			struct node *nd = &g->nodes[ni];

			if (nd->sat)
				continue;
			for (size_t e = nd->e0; e < nd->e0 + nd->ne; e++) {
				if (g->nodes[g->edges[e].to].sat) {
					nd->sat = changed = true;
					break;
				}
			}
		}
	}
	return 0;
}

/* Tarjan over the waits that can never be satisfied (iterative, bounded stack). */
static int find_cycles(struct graph *g, int32_t *n_scc)
{
	int32_t *stack = malloc((g->n + 1) * sizeof(*stack));
	struct frame { int32_t v; size_t e; } *call = malloc((g->n + 1) * sizeof(*call));
	int32_t index = 0, sp = 0, ids = 0;

	if (!stack || !call) {
		free(stack);
		free(call);
		return NF_ENOMEM;
	}
	for (size_t root = 0; root < g->n; root++) {
		int32_t cp = 0;

		if (g->nodes[root].sat || g->nodes[root].index != AN_NONE)
			continue;
		call[cp++] = (struct frame){ (int32_t)root, g->nodes[root].e0 };
		g->nodes[root].index = g->nodes[root].low = index++;
		stack[sp++] = (int32_t)root;
		g->nodes[root].on_stack = true;
		while (cp) {
			struct frame *fr = &call[cp - 1];
			struct node *v = &g->nodes[fr->v];

			if (fr->e < v->e0 + v->ne) {
				int32_t w = g->edges[fr->e++].to;
				struct node *wn = &g->nodes[w];

				if (wn->index == AN_NONE) {
					wn->index = wn->low = index++;
					stack[sp++] = w;
					wn->on_stack = true;
					call[cp++] = (struct frame){ w, wn->e0 };
				} else if (wn->on_stack && wn->index < v->low) {
					v->low = wn->index;
				}
				continue;
			}
			if (v->low == v->index) {
				int32_t size = 0, top = sp;
				bool self = false;

				do {
					size++;
					top--;
				} while (stack[top] != fr->v);
				for (size_t e = v->e0; e < v->e0 + v->ne; e++)
					self |= g->edges[e].to == fr->v;
				for (int32_t k = top; k < sp; k++) {
					g->nodes[stack[k]].on_stack = false;
					if (size > 1 || self)
						g->nodes[stack[k]].scc = ids;
				}
				if (size > 1 || self)
					ids++;
				sp = top;
			}
			cp--;
			if (cp) {
				struct node *parent = &g->nodes[call[cp - 1].v];

				if (v->low < parent->low)
					parent->low = v->low;
			}
		}
	}
	free(stack);
	free(call);
	*n_scc = ids;
	return 0;
}

static struct nf_hang_edge make_edge(const struct graph *g, int32_t from, const struct edge *e)
{
	const struct an_op *s = &g->a->ops[e->signal];
	struct nf_hang_edge he = { g->nodes[from].ref, s->id, s->queue, s->value, g->nodes[e->to].ref };

	return he;
}

static int add_finding(struct nf_hang_report *rep, size_t *cap, struct nf_hang_finding f)
{
	if (an_grow((void **)&rep->f, cap, rep->n + 1, sizeof(*rep->f))) {
		free(f.edges);
		return NF_ENOMEM;
	}
	rep->f[rep->n++] = f;
	rep->count[f.kind]++;
	return 0;
}

static struct nf_hang_finding blank(enum nf_hang_kind kind)
{
	struct nf_hang_finding f;

	memset(&f, 0, sizeof(f));
	f.kind = kind;
	f.wait.op_id = f.wait.cpu_wait = f.wait.queue = f.wait.thread = -1;
	f.fence = f.value = f.ns = f.op_id = f.cpu_signal = -1;
	f.prev_value = f.prev_ns = f.prev_op = f.prev_cpu_signal = -1;
	return f;
}

/* The chain from node ni: first edges, until a node seen, a root or (pending) a running queue. */
static int chain(const struct graph *g, int32_t ni, bool want_sat, struct nf_hang_finding *f)
{
	size_t cap = 0, guard = 0;

	while (guard++ <= g->n) {
		const struct node *nd = &g->nodes[ni];
		const struct edge *pick = NULL;

		for (size_t e = nd->e0; e < nd->e0 + nd->ne; e++) {
			if (g->nodes[g->edges[e].to].sat == want_sat) {
				pick = &g->edges[e];
				break;
			}
		}
		if (!pick)
			return 0;
		if (an_grow((void **)&f->edges, &cap, f->n_edges + 1, sizeof(*f->edges)))
			return NF_ENOMEM;
		f->edges[f->n_edges++] = make_edge(g, ni, pick);
		if (g->nodes[pick->to].scc != AN_NONE)
			return 0; /* reached a deadlock: reported on its own */
		for (size_t k = 0; k < f->n_edges; k++)
			if (f->edges[k].from.op_id == g->nodes[pick->to].ref.op_id &&
			    f->edges[k].from.cpu_wait == g->nodes[pick->to].ref.cpu_wait)
				return 0;
		ni = pick->to;
	}
	return 0;
}

static int lowered(const struct nf_analysis *a, struct nf_hang_report *rep, size_t *cap)
{
	for (size_t fi = 0; fi < a->n_fences; fi++) {
		const struct an_fence *fe = &a->fences[fi];
		bool have_prev = fe->has_initial;
		int64_t pv = fe->initial, pt = -1;
		int64_t pop = -1, pcs = -1;

		if (fe->kernel)
			continue;
		for (size_t k = 0; k < fe->n; k++) {
			const struct an_sig *s = &fe->sigs[k];

			if (have_prev && s->value < pv && (pt < 0 || s->t > pt)) {
				struct nf_hang_finding f = blank(NF_HANG_LOWERED);

				f.fence = fe->fence;
				f.value = s->value;
				f.ns = s->t;
				f.op_id = s->cpu ? -1 : s->id;
				f.cpu_signal = s->cpu ? s->id : -1;
				f.prev_value = pv;
				f.prev_ns = pt;
				f.prev_op = pop;
				f.prev_cpu_signal = pcs;
				if (add_finding(rep, cap, f))
					return NF_ENOMEM;
			}
			have_prev = true;
			pv = s->value;
			pt = s->t;
			pop = s->cpu ? -1 : s->id;
			pcs = s->cpu ? s->id : -1;
		}
	}
	return 0;
}

static int finding_rank(const struct nf_hang_finding *f)
{
	static const int rank[NF_HANG_KINDS] = { 0, 1, 2, 3, 4 };

	return rank[f->kind];
}

static int finding_cmp(const void *x, const void *y)
{
	const struct nf_hang_finding *p = x, *q = y;

	if (finding_rank(p) != finding_rank(q))
		return finding_rank(p) < finding_rank(q) ? -1 : 1;
	if (p->kind == NF_HANG_LOWERED)
		return p->ns < q->ns ? -1 : p->ns > q->ns;
	if (p->wait.since_ns != q->wait.since_ns)
		return p->wait.since_ns < q->wait.since_ns ? -1 : 1;
	if (p->wait.op_id != q->wait.op_id)
		return p->wait.op_id < q->wait.op_id ? -1 : 1;
	return p->wait.cpu_wait < q->wait.cpu_wait ? -1 : p->wait.cpu_wait > q->wait.cpu_wait;
}

int nf_analysis_hangs(const struct nf_analysis *a, struct nf_hang_report *rep, struct nf_error *err)
{
	if (a->lazy)
		return nf_error_set(err, NF_ESTATE, "%s needs a loaded model (nf_analysis_load)", "the hang check");
	struct graph g = { a, NULL, 0, 0, NULL, 0, 0, NULL };
	struct cw_key *keys = NULL;
	size_t nk = 0, cap = 0;
	int32_t n_scc = 0;
	int rc;

	memset(rep, 0, sizeof(*rep));
	g.node_of_op = malloc((a->n_ops ? a->n_ops : 1) * sizeof(*g.node_of_op));
	if (!g.node_of_op)
		return nf_error_set(err, NF_ENOMEM, "out of memory for the hang check");
	for (size_t i = 0; i < a->n_ops; i++)
		g.node_of_op[i] = AN_NONE;
	rc = build_nodes(&g, &keys, &nk);
	free(keys);
	if (!rc)
		rc = build_edges(&g);
	if (!rc)
		rc = find_cycles(&g, &n_scc);
	/* one finding per deadlock: its first wait, every edge inside the cycle */
	for (int32_t c = 0; !rc && c < n_scc; c++) {
		struct nf_hang_finding f = blank(NF_HANG_DEADLOCK);
		size_t ecap = 0;
		bool first = true;

		for (size_t ni = 0; !rc && ni < g.n; ni++) {
			const struct node *nd = &g.nodes[ni];

			if (nd->scc != c)
				continue;
			if (first)
				f.wait = nd->ref;
			first = false;
			for (size_t e = nd->e0; e < nd->e0 + nd->ne; e++) {
				if (g.nodes[g.edges[e].to].scc != c)
					continue;
				if (an_grow((void **)&f.edges, &ecap, f.n_edges + 1, sizeof(*f.edges))) {
					rc = NF_ENOMEM;
					break;
				}
				f.edges[f.n_edges++] = make_edge(&g, (int32_t)ni, &g.edges[e]);
			}
		}
		if (rc)
			free(f.edges);
		else
			rc = add_finding(rep, &cap, f);
	}
	for (size_t ni = 0; !rc && ni < g.n; ni++) {
		const struct node *nd = &g.nodes[ni];
		struct nf_hang_finding f;

		if (nd->scc != AN_NONE)
			continue;
		if (nd->sat) {
			f = blank(NF_HANG_PENDING);
		} else if (nd->no_candidates) {
			const struct an_fence *fe = &a->fences[nd->fidx];

			f = blank(NF_HANG_NEVER_SIGNALED);
			/* the highest value signaled in the session, and by which op */
			if (fe->any_done) {
				f.value = fe->done_max;
				f.op_id = fe->done_max_op;
			}
			f.fence = fe->fence;
		} else {
			f = blank(NF_HANG_BLOCKED);
		}
		f.wait = nd->ref;
		if (f.kind != NF_HANG_NEVER_SIGNALED)
			rc = chain(&g, (int32_t)ni, f.kind == NF_HANG_PENDING, &f);
		if (rc)
			free(f.edges);
		else
			rc = add_finding(rep, &cap, f);
	}
	if (!rc)
		rc = lowered(a, rep, &cap);
	for (size_t i = 0; !rc && i < a->n_low; i++) /* found while a model of open ops streamed */
		rc = add_finding(rep, &cap, a->low[i]);
	free(g.nodes);
	free(g.edges);
	free(g.node_of_op);
	if (rc) {
		nf_hang_report_free(rep);
		return nf_error_set(err, rc, "out of memory for the hang check");
	}
	if (rep->n)
		qsort(rep->f, rep->n, sizeof(*rep->f), finding_cmp);
	return 0;
}

void nf_hang_report_free(struct nf_hang_report *rep)
{
	for (size_t i = 0; i < rep->n; i++)
		free(rep->f[i].edges);
	free(rep->f);
	memset(rep, 0, sizeof(*rep));
}
