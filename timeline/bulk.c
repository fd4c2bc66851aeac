/*
 * The nf_bulk eponymous virtual table: see bulk.h. A forward-only cursor over
 * the active source's rows (no constraints are used: every row is produced).
 * A producer thread fills batches of rows from the callback into a small ring
 * while SQLite consumes them; with no thread, the cursor calls the callback
 * itself.
 */
#include "contract/timeline_writer.h"
#include "contract/errors.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH_ROWS 256
#define RING 16

struct batch {
	struct nf_bulk_row rows[BATCH_ROWS];
	int n;
	bool last;   /* the source ended (or failed) after these rows */
};

struct nf_bulk {
	sqlite3 *db;
	/* the active source, set by nf_bulk_run for one statement */
	nf_bulk_next_fn next;
	void *ctx;
	struct nf_error perr; /* the callback's error (producer side) */
	int rc;               /* the callback's error code, 0 while none */
	/* producer/consumer ring of batches */
	bool threaded;
	pthread_mutex_t mu;
	pthread_cond_t filled, freed;
	struct batch *ring;
	unsigned head, count; /* next batch to consume; batches filled and not yet consumed */
	bool cancel;          /* the consumer stopped early: the producer ends (atomic accesses) */
	bool done;            /* the producer published its last batch */
	/*
	 * Who sleeps: a side that waits sleeps until the ring is half full (or
	 * half empty), so that the two threads wake each other once per half
	 * ring rather than once per batch (each wake-up is a context switch).
	 */
	bool cons_waiting, prod_waiting;
};

struct bulk_vtab {
	sqlite3_vtab base;
	struct nf_bulk *bk;
};

struct bulk_cursor {
	sqlite3_vtab_cursor base;
	struct nf_bulk *bk;
	struct batch *cur;      /* batch being read (threaded), NULL before the first */
	int pos;
	struct nf_bulk_row own; /* the row when there is no producer thread */
	const struct nf_bulk_row *row;
	sqlite3_int64 rowid;
	int eof;
};

static int bulk_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
			sqlite3_vtab **out, char **errmsg)
{
	struct bulk_vtab *t;
	int rc;

	(void)argc;
	(void)argv;
	(void)errmsg;
	rc = sqlite3_declare_vtab(db, "CREATE TABLE x(c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, "
				      "c10, c11, c12, c13, c14, c15)");
	if (rc != SQLITE_OK)
		return rc;
	t = sqlite3_malloc(sizeof(*t));
	if (!t)
		return SQLITE_NOMEM;
	memset(t, 0, sizeof(*t));
	t->bk = aux;
	*out = &t->base;
	return SQLITE_OK;
}

static int bulk_disconnect(sqlite3_vtab *vt)
{
	sqlite3_free(vt);
	return SQLITE_OK;
}

static int bulk_best_index(sqlite3_vtab *vt, sqlite3_index_info *info)
{
	(void)vt;
	info->estimatedCost = 1e9;
	info->estimatedRows = 1000000000;
	return SQLITE_OK;
}

static int bulk_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out)
{
	struct bulk_cursor *c = sqlite3_malloc(sizeof(*c));

	if (!c)
		return SQLITE_NOMEM;
	memset(c, 0, sizeof(*c));
	c->bk = ((struct bulk_vtab *)vt)->bk;
	*out = &c->base;
	return SQLITE_OK;
}

/* Hands the batch being read back to the producer. */
static void release_batch(struct bulk_cursor *c)
{
	struct nf_bulk *bk = c->bk;

	if (!c->cur)
		return;
	pthread_mutex_lock(&bk->mu);
	bk->head = (bk->head + 1) % RING;
	bk->count--;
	if (bk->prod_waiting && bk->count <= RING / 2)
		pthread_cond_signal(&bk->freed);
	pthread_mutex_unlock(&bk->mu);
	c->cur = NULL;
}

static int bulk_close(sqlite3_vtab_cursor *cur)
{
	struct bulk_cursor *c = (struct bulk_cursor *)cur;

	if (c->bk->threaded) {
		release_batch(c);
		pthread_mutex_lock(&c->bk->mu);
		__atomic_store_n(&c->bk->cancel, true, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&c->bk->freed);
		pthread_mutex_unlock(&c->bk->mu);
	}
	sqlite3_free(cur);
	return SQLITE_OK;
}

static int source_failed(struct bulk_cursor *c)
{
	c->eof = 1;
	sqlite3_free(c->base.pVtab->zErrMsg);
	c->base.pVtab->zErrMsg = sqlite3_mprintf("row source failed");
	return SQLITE_ERROR;
}

static int bulk_next(sqlite3_vtab_cursor *cur)
{
	struct bulk_cursor *c = (struct bulk_cursor *)cur;
	struct nf_bulk *bk = c->bk;
	int rc;

	if (c->eof)
		return SQLITE_OK;
	c->rowid++;
	if (!bk->threaded) {
		if (!bk->next) {
			c->eof = 1;
			return SQLITE_OK;
		}
		c->own.set = 0;
		rc = bk->next(bk->ctx, &c->own, &bk->perr);
		if (rc < 0) {
			bk->rc = rc;
			return source_failed(c);
		}
		c->row = &c->own;
		c->eof = rc == 0;
		return SQLITE_OK;
	}
	if (c->cur && ++c->pos < c->cur->n) {
		c->row = &c->cur->rows[c->pos];
		return SQLITE_OK;
	}
	if (c->cur && c->cur->last) {
		c->eof = 1;
		return bk->rc ? source_failed(c) : SQLITE_OK;
	}
	release_batch(c);
	pthread_mutex_lock(&bk->mu);
	if (bk->count == 0) {
		bk->cons_waiting = true;
		while (bk->count < RING / 2 && !bk->done)
			pthread_cond_wait(&bk->filled, &bk->mu);
		bk->cons_waiting = false;
	}
	c->cur = &bk->ring[bk->head];
	pthread_mutex_unlock(&bk->mu);
	c->pos = 0;
	if (c->cur->n == 0) {
		c->eof = 1;
		return bk->rc ? source_failed(c) : SQLITE_OK;
	}
	c->row = &c->cur->rows[0];
	return SQLITE_OK;
}

static int bulk_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc,
		       sqlite3_value **argv)
{
	(void)idx;
	(void)idx_str;
	(void)argc;
	(void)argv;
	return bulk_next(cur);
}

static int bulk_eof(sqlite3_vtab_cursor *cur)
{
	return ((struct bulk_cursor *)cur)->eof;
}

static int bulk_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
	const struct nf_bulk_row *r = ((struct bulk_cursor *)cur)->row;

	if (!r || col < 0 || col >= NF_BULK_COLS || !(r->set & (1u << col)))
		sqlite3_result_null(ctx);
	else if (r->text[col])
		sqlite3_result_text(ctx, r->text[col], r->text_len[col], SQLITE_STATIC);
	else
		sqlite3_result_int64(ctx, r->v[col]);
	return SQLITE_OK;
}

static int bulk_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid)
{
	*rowid = ((struct bulk_cursor *)cur)->rowid;
	return SQLITE_OK;
}

static const sqlite3_module bulk_module = {
	.iVersion = 0,
	.xCreate = NULL, /* eponymous only */
	.xConnect = bulk_connect,
	.xBestIndex = bulk_best_index,
	.xDisconnect = bulk_disconnect,
	.xDestroy = bulk_disconnect,
	.xOpen = bulk_open,
	.xClose = bulk_close,
	.xFilter = bulk_filter,
	.xNext = bulk_next,
	.xEof = bulk_eof,
	.xColumn = bulk_column,
	.xRowid = bulk_rowid,
};

/* The producer: fills free batches until the source ends, fails or is cancelled. */
static void *produce(void *arg)
{
	struct nf_bulk *bk = arg;
	unsigned tail = 0;

	for (;;) {
		struct batch *b;
		int rc = 1;

		pthread_mutex_lock(&bk->mu);
		if (bk->count == RING) {
			bk->prod_waiting = true;
			while (bk->count > RING / 2 && !__atomic_load_n(&bk->cancel, __ATOMIC_ACQUIRE))
				pthread_cond_wait(&bk->freed, &bk->mu);
			bk->prod_waiting = false;
		}
		if (__atomic_load_n(&bk->cancel, __ATOMIC_ACQUIRE)) {
			pthread_mutex_unlock(&bk->mu);
			break;
		}
		pthread_mutex_unlock(&bk->mu);
		b = &bk->ring[tail];
		b->n = 0;
		b->last = false;
		while (b->n < BATCH_ROWS) {
			/* SQLite stopped (its own error): no more rows, and no error of ours
			 * to put in front of its. */
			if (__atomic_load_n(&bk->cancel, __ATOMIC_ACQUIRE)) {
				rc = 0;
				break;
			}
			b->rows[b->n].set = 0;
			rc = bk->next(bk->ctx, &b->rows[b->n], &bk->perr);
			if (rc != 1)
				break;
			b->n++;
		}
		/* A source error counts unless SQLite had already stopped on its own. */
		if (rc < 0 && !__atomic_load_n(&bk->cancel, __ATOMIC_ACQUIRE))
			bk->rc = rc;
		b->last = rc != 1;
		pthread_mutex_lock(&bk->mu);
		tail = (tail + 1) % RING;
		bk->count++;
		if (b->last)
			bk->done = true;
		if (bk->cons_waiting && (bk->count >= RING / 2 || b->last))
			pthread_cond_signal(&bk->filled);
		pthread_mutex_unlock(&bk->mu);
		if (b->last)
			break;
	}
	return NULL;
}

static void bulk_free(void *p)
{
	struct nf_bulk *bk = p;

	if (!bk)
		return;
	pthread_mutex_destroy(&bk->mu);
	pthread_cond_destroy(&bk->filled);
	pthread_cond_destroy(&bk->freed);
	free(bk->ring);
	free(bk);
}

struct nf_bulk *nf_bulk_register(sqlite3 *db, struct nf_error *err)
{
	struct nf_bulk *bk = calloc(1, sizeof(*bk));

	if (!bk || !(bk->ring = malloc(RING * sizeof(*bk->ring)))) {
		free(bk);
		nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
		return NULL;
	}
	bk->db = db;
	pthread_mutex_init(&bk->mu, NULL);
	pthread_cond_init(&bk->filled, NULL);
	pthread_cond_init(&bk->freed, NULL);
	/* On failure SQLite calls the destructor itself. */
	if (sqlite3_create_module_v2(db, "nf_bulk", &bulk_module, bk, bulk_free) != SQLITE_OK) {
		nf_error_set(err, NF_ESQL, "timeline: registering nf_bulk: %s", sqlite3_errmsg(db));
		return NULL;
	}
	return bk;
}

int nf_bulk_run(struct nf_bulk *bk, const char *sql, nf_bulk_next_fn next, void *ctx,
		bool threaded, const char *what, struct nf_error *err)
{
	pthread_t th;
	int rc;

	bk->next = next;
	bk->ctx = ctx;
	bk->rc = 0;
	nf_error_clear(&bk->perr);
	bk->head = 0;
	bk->count = 0;
	__atomic_store_n(&bk->cancel, false, __ATOMIC_RELAXED);
	bk->done = false;
	bk->threaded = threaded && pthread_create(&th, NULL, produce, bk) == 0;
	rc = sqlite3_exec(bk->db, sql, NULL, NULL, NULL);
	if (bk->threaded) {
		/* The cursor is closed by now: it cancelled the producer if it stopped early. */
		pthread_mutex_lock(&bk->mu);
		__atomic_store_n(&bk->cancel, true, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&bk->freed);
		pthread_mutex_unlock(&bk->mu);
		pthread_join(th, NULL);
		bk->threaded = false;
	}
	bk->next = NULL;
	bk->ctx = NULL;
	if (bk->rc) {
		if (err)
			*err = bk->perr;
		return bk->rc;
	}
	if (rc != SQLITE_OK)
		return nf_error_set(err, NF_ESQL, "%s: %s", what, sqlite3_errmsg(bk->db));
	return 0;
}
