/*
 * The deps rule (contract/deps.h), applied for every importer. Signals and
 * waits are sorted (in memory up to a budget, through temporary files
 * beyond: contract/spill.h), then one forward pass over the two sorted
 * streams answers every wait: waits come in (fence, value) order, so what
 * each wait needs of its fence's signals only moves forward.
 */
#include "contract/deps.h"
#include "contract/spill.h"
#include "contract/util_hash.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define CMP(x, y) ((x) < (y) ? -1 : (x) > (y))
/* Records held in memory per sort before runs go to a file. */
#define SORT_BUDGET (32u << 20)
/* How far the look-ahead over unknown-end signals of one fence reaches. */
#define UNK_SCAN 4096u

struct sig_rec {  /* a signal whose end is known */
	int64_t fence, end, id, value;
	int32_t kind;  /* 0 CPU signal, 1 GPU op (CPU first on equal ends) */
	int32_t pad;
};
struct unk_rec {  /* a GPU signal whose end is unknown (NF_DEPS_LOGGED) */
	int64_t fence, value, id, queued;
};
struct wait_rec {
	int64_t fence, value, id, end, queue, stall;
	int32_t has_fence, has_stall;
};

struct nf_deps {
	enum nf_deps_mode mode;
	double slack_ns;
	struct nf_sorter *sigs, *unk, *waits;
	struct nf_u64map initial;
	pthread_t th;
	bool threaded;
	struct nf_error terr; /* the sorting thread's error */
	/* the pass */
	const struct sig_rec *sg; /* next signal of the stream (NULL at the end) */
	struct sig_rec hit;       /* LOGGED: the signal that first reached runmax */
	bool have_hit, have_cur;
	int64_t runmax, cur;
	struct unk_rec *ub;       /* look-ahead over unknown-end signals */
	size_t u_head, u_n;
	bool u_eof;
	struct sig_rec *cpu;      /* PACKETS: the current fence's CPU signals, by (value, end, id) */
	size_t n_cpu, cap_cpu, cpu_pos;
};

/* LOGGED: by (fence, end, kind, id): the running maximum in end order. */
static int cmp_sig_end(const void *pa, const void *pb)
{
	const struct sig_rec *a = pa, *b = pb;
	int c = CMP(a->fence, b->fence);

	if (!c)
		c = CMP(a->end, b->end);
	if (!c)
		c = CMP(a->kind, b->kind);
	return c ? c : CMP(a->id, b->id);
}

/* PACKETS, ONE_SHOT: by (fence, kind, value, end, id): a fence's CPU signals, then its GPU signals. */
static int cmp_sig_value(const void *pa, const void *pb)
{
	const struct sig_rec *a = pa, *b = pb;
	int c = CMP(a->fence, b->fence);

	if (!c)
		c = CMP(a->kind, b->kind);
	if (!c)
		c = CMP(a->value, b->value);
	if (!c)
		c = CMP(a->end, b->end);
	return c ? c : CMP(a->id, b->id);
}

static int cmp_unk(const void *pa, const void *pb)
{
	const struct unk_rec *a = pa, *b = pb;
	int c = CMP(a->fence, b->fence);

	if (!c)
		c = CMP(a->value, b->value);
	return c ? c : CMP(a->id, b->id);
}

static int cmp_wait(const void *pa, const void *pb)
{
	const struct wait_rec *a = pa, *b = pb;
	int c = CMP(a->has_fence, b->has_fence);

	if (!c)
		c = CMP(a->fence, b->fence);
	if (!c)
		c = CMP(a->value, b->value);
	return c ? c : CMP(a->id, b->id);
}

struct nf_deps *nf_deps_create(enum nf_deps_mode mode, const char *spill_dir, double slack_ns,
			       struct nf_error *err)
{
	struct nf_deps *d = calloc(1, sizeof(*d));

	if (!d) {
		nf_error_set(err, NF_ENOMEM, "timeline: deps: out of memory");
		return NULL;
	}
	d->mode = mode;
	d->slack_ns = slack_ns;
	d->sigs = nf_sorter_create(spill_dir, sizeof(struct sig_rec), SORT_BUDGET,
				   mode == NF_DEPS_LOGGED ? cmp_sig_end : cmp_sig_value, err);
	d->unk = d->sigs ? nf_sorter_create(spill_dir, sizeof(struct unk_rec), SORT_BUDGET, cmp_unk, err) : NULL;
	d->waits = d->unk ? nf_sorter_create(spill_dir, sizeof(struct wait_rec), SORT_BUDGET, cmp_wait, err) : NULL;
	if (!d->waits) {
		nf_deps_destroy(d);
		return NULL;
	}
	nf_error_clear(&d->terr);
	return d;
}

void nf_deps_destroy(struct nf_deps *d)
{
	if (!d)
		return;
	if (d->threaded)
		pthread_join(d->th, NULL);
	nf_sorter_destroy(d->sigs);
	nf_sorter_destroy(d->unk);
	nf_sorter_destroy(d->waits);
	nf_u64map_free(&d->initial);
	free(d->ub);
	free(d->cpu);
	free(d);
}

int nf_deps_initial(struct nf_deps *d, int64_t fence, int64_t value, struct nf_error *err)
{
	if (nf_u64map_find(&d->initial, (uint64_t)fence))
		return 0; /* the first creation's holds */
	if (nf_u64map_put(&d->initial, (uint64_t)fence, (uint64_t)value))
		return nf_error_set(err, NF_ENOMEM, "timeline: deps: out of memory");
	return 0;
}

int nf_deps_signal(struct nf_deps *d, const struct nf_deps_signal *s, struct nf_error *err)
{
	if (s->end_known) {
		struct sig_rec r = { s->fence, s->end, s->id, s->value, s->cpu ? 0 : 1, 0 };

		return nf_sorter_add(d->sigs, &r, err);
	}
	if (d->mode != NF_DEPS_LOGGED || s->cpu)
		return 0; /* only native logs name a signal of unknown end */
	struct unk_rec r = { s->fence, s->value, s->id, s->queued_known ? s->queued : INT64_MIN };

	return nf_sorter_add(d->unk, &r, err);
}

int nf_deps_wait(struct nf_deps *d, const struct nf_deps_wait *w, struct nf_error *err)
{
	struct wait_rec r = { w->fence, w->value, w->id, w->end, w->queue, w->has_stall ? w->stall : 0,
			      w->has_fence, w->has_stall };

	return nf_sorter_add(d->waits, &r, err);
}

static void *sort_main(void *arg)
{
	struct nf_deps *d = arg;

	if (nf_sorter_sort(d->sigs, &d->terr) == 0)
		nf_sorter_sort(d->unk, &d->terr);
	return NULL;
}

int nf_deps_sort_begin(struct nf_deps *d, struct nf_error *err)
{
	if (pthread_create(&d->th, NULL, sort_main, d) == 0) {
		d->threaded = true;
		return 0;
	}
	sort_main(d); /* no thread: here */
	if (d->terr.code) {
		if (err)
			*err = d->terr;
		return d->terr.code;
	}
	return 0;
}

static int next_sig(struct nf_deps *d, struct nf_error *err)
{
	const void *p;
	int rc = nf_sorter_next(d->sigs, &p, err);

	if (rc < 0)
		return rc;
	d->sg = rc ? p : NULL;
	return 0;
}

int nf_deps_sort_end(struct nf_deps *d, struct nf_error *err)
{
	int rc = nf_sorter_sort(d->waits, err);

	if (d->threaded) {
		pthread_join(d->th, NULL);
		d->threaded = false;
	}
	if (rc == 0 && d->terr.code) {
		rc = d->terr.code;
		if (err)
			*err = d->terr;
	}
	if (rc)
		return rc;
	if (d->mode == NF_DEPS_LOGGED && !(d->ub = malloc(UNK_SCAN * sizeof(*d->ub))))
		return nf_error_set(err, NF_ENOMEM, "timeline: deps: out of memory");
	return next_sig(d, err);
}

/* ---- NF_DEPS_LOGGED: the running maximum in end order ---- */

/* Appends the next unknown-end signal to the look-ahead: 1, 0 at the end, or an error. */
static int unk_fill(struct nf_deps *d, struct nf_error *err)
{
	const void *p;
	int rc;

	if (d->u_eof)
		return 0;
	rc = nf_sorter_next(d->unk, &p, err);
	if (rc == 1)
		d->ub[(d->u_head + d->u_n++) % UNK_SCAN] = *(const struct unk_rec *)p;
	else if (rc == 0)
		d->u_eof = true;
	return rc;
}

/*
 * A signal whose end is unknown (zero timestamp, lost entry, unmatched) may be
 * the real releaser: the one of lowest value >= the wait's, not queued after
 * the wait ended. Waits come in (fence, value) order, so the look-ahead only
 * moves forward. Sets *id (0: none).
 */
static int unk_find(struct nf_deps *d, int64_t fence, int64_t value, int64_t limit, int64_t *id,
		    struct nf_error *err)
{
	int rc;

	*id = 0;
	for (;;) {
		if (d->u_n == 0 && (rc = unk_fill(d, err)) != 1)
			return rc;
		const struct unk_rec *u = &d->ub[d->u_head];

		if (u->fence > fence || (u->fence == fence && u->value >= value))
			break;
		d->u_head = (d->u_head + 1) % UNK_SCAN;
		d->u_n--;
	}
	for (size_t i = 0;; i++) {
		if (i == d->u_n) {
			if (d->u_n == UNK_SCAN)
				return 0;
			if ((rc = unk_fill(d, err)) != 1)
				return rc;
		}
		const struct unk_rec *u = &d->ub[(d->u_head + i) % UNK_SCAN];

		if (u->fence != fence)
			return 0;
		if (u->queued == INT64_MIN || u->queued <= limit) {
			*id = u->id;
			return 0;
		}
	}
}

static int logged_next(struct nf_deps *d, const struct wait_rec *w, struct nf_deps_row *r, struct nf_error *err)
{
	int rc;

	uint64_t *init = nf_u64map_find(&d->initial, (uint64_t)w->fence);
	bool pre = init && (int64_t)*init >= w->value;

	while (!pre && !(d->have_hit && d->runmax >= w->value)) {
		while (d->sg && d->sg->fence < d->cur)
			if ((rc = next_sig(d, err)))
				return rc;
		if (!d->sg || d->sg->fence != d->cur)
			break;
		if (!d->have_hit || d->sg->value > d->runmax) {
			d->hit = *d->sg;
			d->runmax = d->sg->value;
			d->have_hit = true;
		}
		if ((rc = next_sig(d, err)))
			return rc;
	}
	/*
	 * A releaser ends no later than its wait, within the clock merge's error
	 * (slack). The first known signal to reach the value that ends after the
	 * wait is only a fallback: a signal of unknown end (its entry lost, say)
	 * queued in time is the better candidate. One that ends beyond the slack
	 * is never named: with no candidate left the data contradict themselves
	 * (a causality anomaly) and the wait gets no releaser.
	 */
	bool found = !pre && d->have_hit && d->runmax >= w->value;
	bool after = found && d->hit.end > w->end;
	bool late = found && (double)d->hit.end > (double)w->end + d->slack_ns;
	int64_t unk = 0;

	if (!pre && (!found || after) &&
	    (rc = unk_find(d, d->cur, w->value, w->end + (int64_t)d->slack_ns, &unk, err)) != 0)
		return rc;
	if (unk) {
		r->signal_id = unk;
	} else if (found) {
		if (!late && d->hit.kind)
			r->signal_id = d->hit.id;
		else if (!late)
			r->cpu_id = d->hit.id;
		r->late = late;
		r->late_cpu = d->hit.kind == 0;
		r->late_id = d->hit.id;
		r->late_end = d->hit.end;
		if (late)
			r->reason = "causality";
	} else {
		r->reason = pre ? "initial_value" : "no_signal";
	}
	return 1;
}

/* ---- NF_DEPS_PACKETS, NF_DEPS_ONE_SHOT: by value ---- */

/* Moves the stream to the current fence's CPU signals, keeps them, and stops at its first GPU signal. */
static int value_fence(struct nf_deps *d, struct nf_error *err)
{
	int rc;

	d->n_cpu = d->cpu_pos = 0;
	while (d->sg && d->sg->fence < d->cur)
		if ((rc = next_sig(d, err)))
			return rc;
	while (d->sg && d->sg->fence == d->cur && d->sg->kind == 0) {
		if (d->n_cpu == d->cap_cpu) {
			size_t nc = d->cap_cpu ? d->cap_cpu * 2 : 64;
			struct sig_rec *v = realloc(d->cpu, nc * sizeof(*v));

			if (!v)
				return nf_error_set(err, NF_ENOMEM, "timeline: deps: out of memory");
			d->cpu = v;
			d->cap_cpu = nc;
		}
		d->cpu[d->n_cpu++] = *d->sg;
		if ((rc = next_sig(d, err)))
			return rc;
	}
	return 0;
}

static int value_next(struct nf_deps *d, const struct wait_rec *w, struct nf_deps_row *r, struct nf_error *err)
{
	int rc;

	/* the GPU signals of the fence from the first of value >= the wait's */
	while (d->sg && d->sg->fence == d->cur && d->sg->value < w->value)
		if ((rc = next_sig(d, err)))
			return rc;
	while (d->cpu_pos < d->n_cpu && d->cpu[d->cpu_pos].value < w->value)
		d->cpu_pos++;
	const struct sig_rec *g = d->sg && d->sg->fence == d->cur ? d->sg : NULL;
	const struct sig_rec *c = d->cpu_pos < d->n_cpu ? &d->cpu[d->cpu_pos] : NULL;

	if (d->mode == NF_DEPS_ONE_SHOT) {
		/* the signal of exactly this value, no later than the wait's end */
		bool mine = g && g->value == w->value;

		if (!(r->reason = nf_deps_one_shot_reason(w->end, mine, mine ? g->end : 0)))
			r->signal_id = g->id;
		return 1;
	}
	if (c && (!g || c->end < g->end))
		r->cpu_id = c->id;
	else if (g)
		r->signal_id = g->id;
	else
		r->reason = "no_signal";
	return 1;
}

int nf_deps_next(struct nf_deps *d, struct nf_deps_row *r, struct nf_error *err)
{
	{
		const void *p;
		int rc = nf_sorter_next(d->waits, &p, err);

		if (rc != 1)
			return rc;
		const struct wait_rec *w = p;

		memset(r, 0, sizeof(*r));
		r->wait_id = w->id;
		r->has_stall = w->has_stall;
		r->stall = w->stall;
		r->fence = w->fence;
		r->value = w->value;
		r->end = w->end;
		r->queue = w->queue;
		if (!w->has_fence) {
			r->reason = "unknown_fence";
			return 1;
		}
		if (!d->have_cur || w->fence != d->cur) {
			d->cur = w->fence;
			d->have_cur = true;
			d->have_hit = false;
			if (d->mode != NF_DEPS_LOGGED && (rc = value_fence(d, err)))
				return rc;
		}
		return d->mode == NF_DEPS_LOGGED ? logged_next(d, w, r, err) : value_next(d, w, r, err);
	}
}

bool nf_deps_one_shot_released(bool wait_ended, int64_t wait_end, bool signaled, int64_t signal_end)
{
	return wait_ended && signaled && signal_end <= wait_end;
}

const char *nf_deps_one_shot_reason(int64_t wait_end, bool signaled, int64_t signal_end)
{
	if (nf_deps_one_shot_released(true, wait_end, signaled, signal_end))
		return NULL;
	return signaled ? "timeout" : "no_signal";
}
