/*
 * The log summary of a session (nf_log_summary_read, contract in parser.h):
 * reads the whole session through the parser and sums the log replay's
 * entries and findings per hardware queue and log, with where the first of
 * each kind was found and the illegal findings listed up to a bound. Memory
 * is bounded by the number of queues: nothing is kept per event. `nftrace
 * check` (cli/cmd_check.c) prints it, as git keeps fsck.c apart from
 * builtin/fsck.c.
 */
#include "contract/parser.h"
#include "contract/errors.h"

#include "contract/text.h"
#include "contract/util_hash.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The summary and what only building it needs. */
struct logsum_state {
	struct nf_log_summary pub;             /* first: the caller's pointer */
	struct nf_queue_summary *queues;       /* open addressing, power-of-two size */
	size_t cap, used;
	struct nf_queue_summary overflow;
	struct nf_queue_summary **sorted;      /* pub.queues */
	bool oom;
};

static struct nf_queue_summary *logsum_slot(struct nf_queue_summary *tab, size_t cap, uint32_t adapter,
					    uint32_t hwqueue)
{
	size_t mask = cap - 1;
	size_t i = (size_t)nf_mix64((uint64_t)adapter << 32 | hwqueue) & mask;

	for (;; i = (i + 1) & mask)
		if (!tab[i].used || (tab[i].adapter == adapter && tab[i].hwqueue == hwqueue))
			return &tab[i];
}

/* The queue's record; past the bound (or out of memory) the shared overflow bucket. */
static struct nf_queue_summary *logsum_queue(struct logsum_state *s, uint32_t adapter, uint32_t hwqueue)
{
	struct nf_queue_summary *q;

	if (s->queues) {
		q = logsum_slot(s->queues, s->cap, adapter, hwqueue);
		if (q->used)
			return q;
	}
	if (s->used >= NF_LOG_SUMMARY_MAX_QUEUES || s->oom)
		goto overflow;
	if ((s->used + 1) * 2 > s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 16;
		struct nf_queue_summary *nt = calloc(ncap, sizeof(*nt));

		if (!nt) {
			s->oom = true;
			goto overflow;
		}
		for (size_t i = 0; i < s->cap; i++)
			if (s->queues[i].used)
				*logsum_slot(nt, ncap, s->queues[i].adapter, s->queues[i].hwqueue) =
					s->queues[i];
		free(s->queues);
		s->queues = nt;
		s->cap = ncap;
	}
	q = logsum_slot(s->queues, s->cap, adapter, hwqueue);
	q->used = true;
	q->adapter = adapter;
	q->hwqueue = hwqueue;
	s->used++;
	return q;

overflow:
	s->overflow.used = s->overflow.overflow = true;
	return &s->overflow;
}

static struct nf_log_counts *logsum_log(struct logsum_state *s, uint32_t adapter, uint32_t hwqueue,
				   uint64_t log_type)
{
	struct nf_queue_summary *q = logsum_queue(s, adapter, hwqueue);
	size_t slot = log_type == NF_LOG_WAITS ? NF_LOG_SUMMARY_WAITS
		      : log_type == NF_LOG_SIGNALS ? NF_LOG_SUMMARY_SIGNALS : NF_LOG_SUMMARY_OTHER;

	q->log[slot].seen = true;
	return &q->log[slot];
}

static int logsum_event(void *ctx, const struct nf_event *ev)
{
	struct logsum_state *s = ctx;
	struct nf_log_counts *l;

	switch (ev->id) {
	case NF_EV_HWQUEUE_START:
		nf_text_copy_clean(logsum_queue(s, (uint32_t)ev->f[NFF_HWQUEUE_START_adapter],
				       (uint32_t)ev->f[NFF_HWQUEUE_START_hwqueue])->name,
			   sizeof(((struct nf_queue_summary *)0)->name), ev->str);
		break;
	case NF_EV_SET_LOG_BUFFER:
		l = logsum_log(s, (uint32_t)ev->f[NFF_SET_LOG_BUFFER_adapter],
			      (uint32_t)ev->f[NFF_SET_LOG_BUFFER_hwqueue],
			      ev->f[NFF_SET_LOG_BUFFER_log_type]);
		l->capacity = ev->f[NFF_SET_LOG_BUFFER_capacity];
		break;
	case NF_EV_LOG_READ:
		l = logsum_log(s, (uint32_t)ev->f[NFF_LOG_READ_adapter],
			      (uint32_t)ev->f[NFF_LOG_READ_hwqueue], ev->f[NFF_LOG_READ_log_type]);
		l->reads++;
		s->pub.reads++;
		if (l->epochs == 0)
			l->epochs = 1; /* a log read without SetNativeFenceLogBuffer */
		if (l->capacity == 0)
			l->capacity = ev->f[NFF_LOG_READ_capacity];
		break;
	default:
		break;
	}
	return 0;
}

static int logsum_entry(void *ctx, const struct nf_decoded_entry *e)
{
	struct logsum_state *s = ctx;

	logsum_log(s, e->adapter, e->hwqueue, e->log_type)->entries++;
	s->pub.entries++;
	return 0;
}

static int logsum_finding(void *ctx, const struct nf_finding *f)
{
	struct logsum_state *s = ctx;
	struct nf_log_counts *l = logsum_log(s, f->adapter, f->hwqueue, f->log_type);
	unsigned k = (unsigned)f->kind;

	if (k >= NF_FIND_COUNT)
		return 0;
	if (f->kind == NF_FIND_LOST) {
		l->count[k] += f->count;
		l->lost_spans++;
	} else {
		l->count[k]++;
	}
	s->pub.total[k] += f->kind == NF_FIND_LOST ? f->count : 1;
	if (f->kind == NF_FIND_NEW_EPOCH) {
		l->epochs++;
	}
	if (!l->first[k].set) {
		nf_text_copy_clean(l->first[k].stream, sizeof(l->first[k].stream), f->stream);
		l->first[k].event_index = f->event_index;
		l->first[k].entry_index = f->entry_index;
		l->first[k].packet = f->packet;
		l->first[k].count = f->count;
		l->first[k].prev_gpu_ts = f->prev_gpu_ts;
		l->first[k].next_gpu_ts = f->next_gpu_ts;
		l->first[k].set = true;
	}
	if (nf_finding_is_illegal(f->kind)) {
		s->pub.illegal++;
		if (s->pub.n_listed < NF_LOG_SUMMARY_MAX_LISTED) {
			struct nf_listed_finding *c = &s->pub.listed[s->pub.n_listed++];

			c->f = *f;
			nf_text_copy_clean(c->stream, sizeof(c->stream), f->stream);
			c->f.stream = c->stream;
		} else {
			s->pub.not_listed++;
		}
	}
	return 0;
}

static int logsum_cmp_queue(const void *a, const void *b)
{
	const struct nf_queue_summary *x = *(const struct nf_queue_summary *const *)a;
	const struct nf_queue_summary *y = *(const struct nf_queue_summary *const *)b;

	if (x->adapter != y->adapter)
		return x->adapter < y->adapter ? -1 : 1;
	if (x->hwqueue != y->hwqueue)
		return x->hwqueue < y->hwqueue ? -1 : 1;
	return 0;
}

/* The queues in (adapter, hwqueue) order, the overflow bucket last. NULL: ENOMEM. */
static struct nf_queue_summary **logsum_sorted(struct logsum_state *s, size_t *n)
{
	struct nf_queue_summary **v = malloc((s->used + 1) * sizeof(*v));
	size_t k = 0;

	if (!v)
		return NULL;
	for (size_t i = 0; i < s->cap; i++)
		if (s->queues[i].used)
			v[k++] = &s->queues[i];
	qsort(v, k, sizeof(*v), logsum_cmp_queue);
	if (s->overflow.used)
		v[k++] = &s->overflow;
	*n = k;
	return v;
}

void nf_log_summary_destroy(struct nf_log_summary *sum)
{
	struct logsum_state *s = (struct logsum_state *)sum;

	if (!s)
		return;
	free(s->queues);
	free(s->sorted);
	free((char *)s->pub.incomplete);
	free(s);
}

int nf_log_summary_read(const char *dir, struct nf_log_summary **out, struct nf_error *err)
{
	struct logsum_state *s;
	struct nf_parser *p = NULL;
	const char *incomplete;
	size_t n = 0;
	int rc;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return nf_error_set(err, NF_ENOMEM, "out of memory");
	struct nf_parser_callbacks cb = { s, logsum_event, logsum_entry, logsum_finding };
	rc = nf_parser_open(dir, &p, err);
	if (!rc)
		rc = nf_parser_run(p, &cb, err);
	if (!rc && s->oom)
		rc = nf_error_set(err, NF_ENOMEM, "%s: out of memory for queue summaries", dir);
	if (rc)
		goto out_destroy;
	nf_parser_get_stats(p, &s->pub.stats);
	incomplete = nf_parser_info(p)->incomplete;
	if (incomplete && !(s->pub.incomplete = strdup(incomplete))) {
		rc = nf_error_set(err, NF_ENOMEM, "out of memory");
		goto out_destroy;
	}
	s->sorted = logsum_sorted(s, &n);
	if (!s->sorted) {
		rc = nf_error_set(err, NF_ENOMEM, "out of memory");
		goto out_destroy;
	}
	s->pub.queues = s->sorted;
	s->pub.n_queues = n;
	nf_parser_destroy(p);
	*out = &s->pub;
	return 0;

out_destroy:
	nf_parser_destroy(p);
	nf_log_summary_destroy(&s->pub);
	return rc;
}
