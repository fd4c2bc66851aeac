/*
 * The aligned view of `nftrace diff --ops`: for sessions of one
 * deterministic program or scenario, each GPU wait of A is matched with B's
 * by (queue name, fence, value, occurrence), the occurrence counting the
 * waits alike in id order; the matched waits whose stall or wait-to-signal
 * latency moved (by more than ops_min_ns) are kept, most changed first.
 */
#define _GNU_SOURCE /* qsort_r */
#include "diff_int.h"

#include <stdlib.h>
#include <string.h>

/* By (queue name, fence, value, id); rank: each queue scope's place by name. */
static int wait_cmp(const void *x, const void *y, void *rank)
{
	const struct dd_wait *a = x, *b = y;
	const int32_t *sort_rank = rank;
	int32_t ra = sort_rank[a->group], rb = sort_rank[b->group];

	if (ra != rb)
		return ra < rb ? -1 : 1;
	if (a->fence != b->fence)
		return a->fence < b->fence ? -1 : 1;
	if (a->value != b->value)
		return a->value < b->value ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

static int name_cmp(const void *x, const void *y, void *names)
{
	const struct dd_names *m = names;

	return strcmp(m->keys[*(const int32_t *)x], m->keys[*(const int32_t *)y]);
}

/* Sorts s's waits by (queue name, fence, value, id) and numbers the occurrences. */
static int order_waits(struct dd_session *s)
{
	size_t ng = s->queue_names.n;
	int32_t *by = malloc((ng + 1) * sizeof(*by)), *rank = malloc((ng + 1) * sizeof(*rank));

	if (!by || !rank) {
		free(by);
		free(rank);
		return NF_ENOMEM;
	}
	for (size_t g = 0; g < ng; g++)
		by[g] = (int32_t)g;
	qsort_r(by, ng, sizeof(*by), name_cmp, &s->queue_names);
	for (size_t k = 0; k < ng; k++)
		rank[by[k]] = (int32_t)k;
	if (s->n_waits)
		qsort_r(s->waits, s->n_waits, sizeof(*s->waits), wait_cmp, rank);
	for (size_t i = 0; i < s->n_waits; i++) {
		const struct dd_wait *p = i ? &s->waits[i - 1] : NULL, *w = &s->waits[i];

		s->waits[i].occ = p && p->group == w->group && p->fence == w->fence && p->value == w->value ? p->occ + 1 : 0;
	}
	free(by);
	free(rank);
	return 0;
}

static int key_cmp(const struct dd_session *sa, const struct dd_wait *a, const struct dd_session *sb,
		   const struct dd_wait *b)
{
	int c = strcmp(sa->queue_names.keys[a->group], sb->queue_names.keys[b->group]);

	if (c)
		return c;
	if (a->fence != b->fence)
		return a->fence < b->fence ? -1 : 1;
	if (a->value != b->value)
		return a->value < b->value ? -1 : 1;
	return a->occ < b->occ ? -1 : a->occ > b->occ;
}

/* |b - a|, -1 when one side is unknown, 0 when both are (or equal). */
static int64_t moved(int64_t a, int64_t b)
{
	if (a == DD_NONE && b == DD_NONE)
		return 0;
	if (a == DD_NONE || b == DD_NONE)
		return -1;
	return b > a ? b - a : a - b;
}

static int op_cmp(const void *x, const void *y)
{
	const struct nf_diff_op *a = x, *b = y;
	int64_t sa = moved(a->stall_a, a->stall_b), sb = moved(b->stall_a, b->stall_b);
	int64_t la = moved(a->latency_a, a->latency_b), lb = moved(b->latency_a, b->latency_b);
	int c;

	if (sa != sb)
		return sa > sb ? -1 : 1;
	if (la != lb)
		return la > lb ? -1 : 1;
	if ((c = strcmp(a->queue, b->queue)))
		return c;
	if (a->fence != b->fence)
		return a->fence < b->fence ? -1 : 1;
	if (a->value != b->value)
		return a->value < b->value ? -1 : 1;
	return a->occurrence < b->occurrence ? -1 : a->occurrence > b->occurrence;
}

static bool changed(int64_t a, int64_t b, int64_t min_ns)
{
	int64_t m = moved(a, b);

	return m < 0 || m > min_ns;
}

int dd_align(struct nf_diff *d, struct nf_error *err)
{
	struct dd_session *sa = &d->s[0], *sb = &d->s[1];
	size_t i = 0, j = 0, cap = 0;

	if (order_waits(sa) || order_waits(sb))
		return nf_error_set(err, NF_ENOMEM, "out of memory aligning the operations");
	while (i < sa->n_waits || j < sb->n_waits) {
		int c = i >= sa->n_waits ? 1 : j >= sb->n_waits ? -1 : key_cmp(sa, &sa->waits[i], sb, &sb->waits[j]);

		if (c < 0) {
			d->only_a++;
			i++;
			continue;
		}
		if (c > 0) {
			d->only_b++;
			j++;
			continue;
		}
		const struct dd_wait *a = &sa->waits[i++], *b = &sb->waits[j++];

		d->matched++;
		if (!changed(a->stall, b->stall, d->opts.ops_min_ns) &&
		    !changed(a->latency, b->latency, d->opts.ops_min_ns))
			continue;
		if (d->n_ops == cap) {
			size_t ncap = cap ? cap * 2 : 256;
			struct nf_diff_op *n = realloc(d->ops, ncap * sizeof(*n));

			if (!n)
				return nf_error_set(err, NF_ENOMEM, "out of memory aligning the operations");
			d->ops = n;
			cap = ncap;
		}
		struct nf_diff_op *o = &d->ops[d->n_ops++];

		o->queue = sa->queue_names.keys[a->group];
		o->fence = a->fence;
		o->value = a->value;
		o->occurrence = a->occ;
		o->id_a = a->id;
		o->id_b = b->id;
		o->queue_a = a->queue;
		o->queue_b = b->queue;
		o->start_a = a->start;
		o->end_a = a->end;
		o->start_b = b->start;
		o->end_b = b->end;
		o->stall_a = a->stall;
		o->stall_b = b->stall;
		o->latency_a = a->latency;
		o->latency_b = b->latency;
	}
	if (d->n_ops)
		qsort(d->ops, d->n_ops, sizeof(*d->ops), op_cmp);
	return 0;
}
