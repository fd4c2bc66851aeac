/*
 * nf_timeline_run_pipelined (pipeline.h): a ring of batches between the parser
 * thread (producer) and the caller (consumer). Each batch holds items and an
 * arena for their strings and arrays; arena offsets become pointers again on
 * the consumer side.
 */
#include "pipeline.h"
#include "contract/errors.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nftrace/events.h"

#define PB_ITEMS 512
#define PB_RING 8
/*
 * A batch goes out early once its strings and arrays pass this many bytes, and
 * an arena grown past twice that is given back when its batch is reused: the
 * ring holds a few MiB however long the strings and fence arrays are.
 */
#define PB_ARENA_SOFT (1u << 20)
/* A callback's return telling the parser the consumer stopped (never seen by callers). */
#define PIPE_STOPPED 1

enum item_kind { IT_EVENT, IT_ENTRY, IT_FINDING };

struct item {
	enum item_kind kind;
	size_t str_off, u32_off; /* SIZE_MAX: none */
	union {
		struct nf_event ev;
		struct nf_decoded_entry de;
		struct nf_finding fd;
	} u;
};

struct pbatch {
	struct item items[PB_ITEMS];
	size_t n;
	char *arena;
	size_t used, cap;
	bool last;            /* the parser ended after these items */
};

struct pipe {
	pthread_mutex_t mu;
	pthread_cond_t filled, freed;
	struct pbatch *ring;
	unsigned head, count; /* consumer's next batch; batches published and not consumed */
	unsigned tail;        /* producer's batch being filled */
	bool filling;         /* the producer holds ring[tail] */
	bool stopped;         /* the consumer stopped: the producer ends */
	bool done;            /* the producer published its last batch */
	/* a waiting side sleeps until the ring is half full / half empty (see bulk.c) */
	bool cons_waiting, prod_waiting;
	struct nf_parser *p;
	int prc;              /* nf_parser_run's return */
	struct nf_error perr;
};

/* The producer's batch, waiting for a free one; NULL when the consumer stopped. */
static struct pbatch *cur_batch(struct pipe *pp)
{
	struct pbatch *b;

	if (pp->filling)
		return &pp->ring[pp->tail];
	pthread_mutex_lock(&pp->mu);
	if (pp->count == PB_RING) {
		pp->prod_waiting = true;
		while (pp->count > PB_RING / 2 && !pp->stopped)
			pthread_cond_wait(&pp->freed, &pp->mu);
		pp->prod_waiting = false;
	}
	if (pp->stopped) {
		pthread_mutex_unlock(&pp->mu);
		return NULL;
	}
	pthread_mutex_unlock(&pp->mu);
	b = &pp->ring[pp->tail];
	b->n = 0;
	b->used = 0;
	b->last = false;
	if (b->cap > 2 * PB_ARENA_SOFT) {
		free(b->arena);
		b->arena = NULL;
		b->cap = 0;
	}
	pp->filling = true;
	return b;
}

static void publish(struct pipe *pp, bool last)
{
	pp->ring[pp->tail].last = last;
	pthread_mutex_lock(&pp->mu);
	pp->tail = (pp->tail + 1) % PB_RING;
	pp->count++;
	pp->filling = false;
	if (last)
		pp->done = true;
	if (pp->cons_waiting && (pp->count >= PB_RING / 2 || last))
		pthread_cond_signal(&pp->filled);
	pthread_mutex_unlock(&pp->mu);
}

/* Copies len bytes into the batch's arena; sets *off (SIZE_MAX for NULL). */
static int stash(struct pbatch *b, const void *src, size_t len, size_t *off)
{
	if (!src) {
		*off = SIZE_MAX;
		return 0;
	}
	if (len == 0) {
		*off = 0; /* an empty array: any valid place (the arena may not exist yet) */
		if (!b->arena) {
			if (!(b->arena = malloc(4096)))
				return NF_ENOMEM;
			b->cap = 4096;
		}
		return 0;
	}
	if (b->cap - b->used < len) {
		size_t cap = b->cap ? b->cap : 4096;
		char *a;

		while (cap - b->used < len)
			cap *= 2;
		a = realloc(b->arena, cap);
		if (!a)
			return NF_ENOMEM;
		b->arena = a;
		b->cap = cap;
	}
	memcpy(b->arena + b->used, src, len);
	*off = b->used;
	b->used += (len + 7) & ~(size_t)7;
	if (b->used > b->cap)
		b->used = b->cap;
	return 0;
}

/* Takes the next item slot of the producer's batch (publishing full ones). */
static struct item *next_item(struct pipe *pp, struct pbatch **bp)
{
	struct pbatch *b = cur_batch(pp);

	if (!b)
		return NULL;
	*bp = b;
	return &b->items[b->n];
}

static int item_done(struct pipe *pp, struct pbatch *b)
{
	if (++b->n == PB_ITEMS || b->used >= PB_ARENA_SOFT)
		publish(pp, false);
	return 0;
}

static int put_event(void *ctx, const struct nf_event *ev)
{
	struct pipe *pp = ctx;
	struct pbatch *b;
	struct item *it = next_item(pp, &b);
	/* The schema is needed only to find an array's length (few events have one). */
	const struct nf_event_desc *d = ev->u32s ? nf_event_desc(ev->id) : NULL;
	size_t n_u32 = 0;

	if (!it)
		return PIPE_STOPPED;
	it->kind = IT_EVENT;
	it->u.ev = *ev;
	it->u.ev.entries = NULL;
	it->u.ev.str = NULL;
	it->u.ev.u32s = NULL;
	for (uint32_t i = 1; d && ev->u32s && i < d->n_fields && i < NF_EVENT_MAX_FIELDS; i++)
		if (d->fields[i].type == NF_FT_U32SEQ)
			n_u32 = (size_t)ev->f[i - 1];
	if (stash(b, ev->str, ev->str ? strlen(ev->str) + 1 : 0, &it->str_off) ||
	    stash(b, ev->u32s, n_u32 * sizeof(uint32_t), &it->u32_off))
		return NF_ENOMEM;
	return item_done(pp, b);
}

static int put_entry(void *ctx, const struct nf_decoded_entry *e)
{
	struct pipe *pp = ctx;
	struct pbatch *b;
	struct item *it = next_item(pp, &b);

	if (!it)
		return PIPE_STOPPED;
	it->kind = IT_ENTRY;
	it->str_off = SIZE_MAX;
	it->u32_off = SIZE_MAX;
	it->u.de = *e;
	return item_done(pp, b);
}

static int put_finding(void *ctx, const struct nf_finding *f)
{
	struct pipe *pp = ctx;
	struct pbatch *b;
	struct item *it = next_item(pp, &b);

	if (!it)
		return PIPE_STOPPED;
	it->kind = IT_FINDING;
	it->u32_off = SIZE_MAX;
	it->u.fd = *f;
	it->u.fd.stream = NULL;
	if (stash(b, f->stream, f->stream ? strlen(f->stream) + 1 : 0, &it->str_off))
		return NF_ENOMEM;
	return item_done(pp, b);
}

static void *produce(void *arg)
{
	struct pipe *pp = arg;
	struct nf_parser_callbacks cb = { pp, put_event, put_entry, put_finding };
	struct pbatch *b;

	pp->prc = nf_parser_run(pp->p, &cb, &pp->perr);
	if (pp->prc == NF_ENOMEM && !pp->perr.code)
		nf_error_set(&pp->perr, NF_ENOMEM, "pipeline: out of memory");
	/* The last batch (maybe empty) says the parser ended, unless nobody listens. */
	if ((b = cur_batch(pp)) != NULL) {
		(void)b;
		publish(pp, true);
	}
	return NULL;
}

/* Hands one item to the callbacks, its pointers back into the batch's arena. */
static int deliver(const struct nf_parser_callbacks *cb, struct pbatch *b, struct item *it)
{
	switch (it->kind) {
	case IT_EVENT: {
		/* A copy: the consumer never writes into the ring's lines, so the producer's
		 * next store there takes them back without a write-back from this core. */
		struct nf_event ev = it->u.ev;

		ev.str = it->str_off == SIZE_MAX ? NULL : b->arena + it->str_off;
		ev.u32s = it->u32_off == SIZE_MAX ? NULL : (const uint32_t *)(const void *)(b->arena + it->u32_off);
		return cb->event ? cb->event(cb->ctx, &ev) : 0;
	}
	case IT_ENTRY:
		return cb->entry ? cb->entry(cb->ctx, &it->u.de) : 0;
	case IT_FINDING:
		it->u.fd.stream = it->str_off == SIZE_MAX ? NULL : b->arena + it->str_off;
		return cb->finding ? cb->finding(cb->ctx, &it->u.fd) : 0;
	}
	return 0;
}

int nf_timeline_run_pipelined(struct nf_parser *p, const struct nf_parser_callbacks *cb,
			    struct nf_error *err)
{
	struct pipe pp;
	pthread_t th;
	int rc = 0;
	bool last = false;

	memset(&pp, 0, sizeof(pp));
	pp.p = p;
	nf_error_clear(&pp.perr);
	pp.ring = calloc(PB_RING, sizeof(*pp.ring));
	if (!pp.ring)
		return nf_error_set(err, NF_ENOMEM, "pipeline: out of memory");
	pthread_mutex_init(&pp.mu, NULL);
	pthread_cond_init(&pp.filled, NULL);
	pthread_cond_init(&pp.freed, NULL);
	if (pthread_create(&th, NULL, produce, &pp) != 0) {
		rc = nf_parser_run(p, cb, err);
		goto out;
	}
	while (!last && rc == 0) {
		struct pbatch *b;

		pthread_mutex_lock(&pp.mu);
		if (pp.count == 0) {
			pp.cons_waiting = true;
			while (pp.count < PB_RING / 2 && !pp.done)
				pthread_cond_wait(&pp.filled, &pp.mu);
			pp.cons_waiting = false;
		}
		b = &pp.ring[pp.head];
		pthread_mutex_unlock(&pp.mu);
		for (size_t i = 0; i < b->n && rc == 0; i++)
			rc = deliver(cb, b, &b->items[i]);
		last = b->last;
		pthread_mutex_lock(&pp.mu);
		pp.head = (pp.head + 1) % PB_RING;
		pp.count--;
		if (rc) {
			pp.stopped = true;
			pthread_cond_broadcast(&pp.freed);
		} else if (pp.prod_waiting && pp.count <= PB_RING / 2) {
			pthread_cond_signal(&pp.freed);
		}
		pthread_mutex_unlock(&pp.mu);
	}
	pthread_join(th, NULL);
	if (rc == 0 && pp.prc != 0) {
		rc = pp.prc;
		if (err)
			*err = pp.perr;
	}
out:
	for (unsigned i = 0; i < PB_RING; i++)
		free(pp.ring[i].arena);
	free(pp.ring);
	pthread_mutex_destroy(&pp.mu);
	pthread_cond_destroy(&pp.filled);
	pthread_cond_destroy(&pp.freed);
	return rc;
}
