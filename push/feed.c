/* push/: a table's rows as Native blocks, read on a thread and streamed by INSERT streams (push_int.h). */
#include "push_int.h"

#include <stdlib.h>
#include <string.h>

/*
 * One table's rows streamed as INSERT bodies of Native blocks, read and
 * encoded on a reader thread while the calling thread sends: the reader
 * steps the SELECT and writes each row's values straight into the columns of
 * a free block (fixed-width columns at their place, no per-value growth
 * checks); a full block goes to a queue; curl's read callback copies the
 * queued blocks' pieces (segments: no block is assembled into one buffer) to
 * the socket and gives each block back when sent. So SQLite and the encoder
 * run while the server parses, and memory stays PUSH_NBLOCKS blocks of about
 * PUSH_BLOCK_BYTES. An INSERT ends at the first block boundary past `batch`
 * bytes; blocks never exceed the batch (small batches: small blocks).
 */
#define PUSH_BLOCK_BYTES (2u << 20) /* bytes of one Native block, about (a row may pass it) */
#define PUSH_BLOCK_ROWS 65536       /* rows of one block at most */
#define PUSH_NBLOCKS 3              /* blocks in flight: being filled, queued, being sent */
#define PUSH_SESS_REP (64u << 10)   /* bytes of the repeated session value buffer, about */

struct seg {
	const unsigned char *p;
	size_t n;
};

struct block {
	struct buf col[PUSH_MAX_COLS];   /* values per column of the table */
	struct buf nulls[PUSH_MAX_COLS]; /* null map per column (1: NULL) */
	unsigned char head[20];          /* LEB128 column count, row count */
	size_t rows, text;               /* rows, bytes of the text columns */
	struct seg *segs;
	size_t nseg, segcap, total;      /* segments, their bytes */
	struct block *next;
};

struct feed {
	/* set before the reader starts, read-only after */
	sqlite3 *db;
	sqlite3_stmt *stmt;
	const struct push_table *t;
	size_t rows_cap, block_bytes, fixed_row; /* fixed_row: bytes of a row without its text */
	struct buf sess;                          /* the session value, Native-encoded, repeated */
	size_t sess_one;                          /* bytes of one */
	struct buf colhdr[PUSH_MAX_COLS + 1];     /* name and type per column (0: session) */
	struct block blocks[PUSH_NBLOCKS];
	/* shared, under mu */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct block *free_list, *full_head, *full_tail;
	int done; /* the reader has ended: every row queued, or rc set */
	int stop; /* the sender gave up: the reader ends */
	int rc;   /* the reader's error */
	char msg[200];
	const int *abort; /* atomic, set by another stream that failed: stop */
	uint64_t rows; /* rows read (reader's; read after join) */
	/* the sender's (curl read callback) */
	struct block *cur;
	size_t seg_i, seg_off, sent, batch;
	uint64_t bytes;
};

static void put_le64(unsigned char *p, uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	memcpy(p, &v, 8); /* one store (gcc kept the byte loop below as a loop) */
#else
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
#endif
}

static size_t put_varint(unsigned char *p, uint64_t v)
{
	size_t n = 0;

	do {
		unsigned c = (unsigned)(v & 0x7f);
		v >>= 7;
		p[n++] = (unsigned char)(c | (v ? 0x80u : 0));
	} while (v);
	return n;
}

static int seg_add(struct block *b, const void *p, size_t n)
{
	if (!n)
		return 0;
	if (b->nseg == b->segcap) {
		size_t cap = b->segcap ? 2 * b->segcap : 64;
		struct seg *s = realloc(b->segs, cap * sizeof(*s));
		if (!s)
			return NF_ENOMEM;
		b->segs = s;
		b->segcap = cap;
	}
	b->segs[b->nseg].p = p;
	b->segs[b->nseg++].n = n;
	b->total += n;
	return 0;
}

/* Lists a filled block's pieces in Native order: counts, then per column its
 * name and type, then (Nullable) its null map and its values. */
static int block_finish(struct feed *f, struct block *b)
{
	const struct push_table *t = f->t;
	size_t h = put_varint(b->head, (uint64_t)t->ncols + 1);
	int rc;

	h += put_varint(b->head + h, b->rows);
	b->nseg = b->total = 0;
	rc = seg_add(b, b->head, h);
	rc = rc ? rc : seg_add(b, f->colhdr[0].p, f->colhdr[0].n);
	for (size_t left = b->rows * f->sess_one; left && !rc;) {
		size_t k = left < f->sess.n ? left : f->sess.n;
		rc = seg_add(b, f->sess.p, k);
		left -= k;
	}
	for (int k = 0; k < t->ncols && !rc; k++) {
		rc = seg_add(b, f->colhdr[k + 1].p, f->colhdr[k + 1].n);
		rc = rc ? rc : seg_add(b, b->nulls[k].p, b->rows);
		if (t->cols[k].kind != COL_TEXT)
			b->col[k].n = 8 * b->rows; /* written in place by encode_row */
		rc = rc ? rc : seg_add(b, b->col[k].p, b->col[k].n);
	}
	return rc;
}

/* Appends the stepped row to block b: values written in place, the fixed
 * columns' room reserved when the block was started. */
static int encode_row(struct feed *f, struct block *b)
{
	const struct push_table *t = f->t;
	sqlite3_stmt *stmt = f->stmt;
	size_t r = b->rows;

	for (int k = 0; k < t->ncols; k++) {
		struct buf *c = &b->col[k];
		/* one column lookup per value: the row's own sqlite3_value (the
		 * connection is this thread's alone while it reads, so the value's
		 * lack of a mutex does not matter), then its type and content */
		sqlite3_value *v = sqlite3_column_value(stmt, k);
		int null = sqlite3_value_type(v) == SQLITE_NULL;

		b->nulls[k].p[r] = (unsigned char)null;
		/* a NULL still takes its place in the values: 0 or "" */
		switch (t->cols[k].kind) {
		case COL_INT:
			put_le64(c->p + 8 * r, null ? 0 : (uint64_t)sqlite3_value_int64(v));
			break;
		case COL_REAL: {
			double d = null ? 0.0 : sqlite3_value_double(v);
			uint64_t u;
			memcpy(&u, &d, 8);
			put_le64(c->p + 8 * r, u);
			break;
		}
		default: {
			const unsigned char *s = null ? NULL : sqlite3_value_text(v);
			size_t n = s ? (size_t)sqlite3_value_bytes(v) : 0;

			if (nf_push_buf_reserve(c, n + 10))
				return NF_ENOMEM;
			c->n += put_varint(c->p + c->n, n);
			if (n)
				memcpy(c->p + c->n, s, n);
			c->n += n;
			b->text += n + 1;
			break;
		}
		}
	}
	b->rows++;
	return 0;
}

/* Empties block b for rows_cap rows: the fixed columns sized once. */
static int block_start(struct feed *f, struct block *b)
{
	const struct push_table *t = f->t;

	b->rows = b->text = 0;
	for (int k = 0; k < t->ncols; k++) {
		b->col[k].n = b->nulls[k].n = 0;
		if (nf_push_buf_reserve(&b->nulls[k], f->rows_cap) ||
		    (t->cols[k].kind != COL_TEXT && nf_push_buf_reserve(&b->col[k], 8 * f->rows_cap)))
			return NF_ENOMEM;
	}
	return 0;
}

static void feed_fail(struct feed *f, int rc, const char *msg)
{
	pthread_mutex_lock(&f->mu);
	if (!f->rc) {
		f->rc = rc;
		snprintf(f->msg, sizeof(f->msg), "%s", msg);
	}
	pthread_mutex_unlock(&f->mu);
}

/* The reader thread: fills free blocks from the SELECT and queues them. */
static void *feed_reader(void *ud)
{
	struct feed *f = ud;
	int eof = 0;

	while (!eof) {
		struct block *b;
		int step = SQLITE_ROW;

		if (__atomic_load_n(f->abort, __ATOMIC_RELAXED))
			break;
		pthread_mutex_lock(&f->mu);
		while (!f->free_list && !f->stop)
			pthread_cond_wait(&f->cv, &f->mu);
		b = f->stop ? NULL : f->free_list;
		if (b)
			f->free_list = b->next;
		pthread_mutex_unlock(&f->mu);
		if (!b)
			break;
		if (block_start(f, b)) {
			feed_fail(f, NF_ENOMEM, "push: out of memory");
			break;
		}
		while (b->rows < f->rows_cap && b->rows * f->fixed_row + b->text < f->block_bytes &&
		       (step = sqlite3_step(f->stmt)) == SQLITE_ROW) {
			if (encode_row(f, b)) {
				step = SQLITE_NOMEM;
				break;
			}
		}
		if (step != SQLITE_ROW && step != SQLITE_DONE) {
			char m[200];

			snprintf(m, sizeof(m), step == SQLITE_NOMEM ? "push: out of memory" : "table %s: %s",
				 f->t->name, sqlite3_errmsg(f->db));
			feed_fail(f, step == SQLITE_NOMEM ? NF_ENOMEM : NF_ESQL, m);
			break;
		}
		eof = step == SQLITE_DONE;
		f->rows += b->rows;
		if (b->rows && block_finish(f, b)) {
			feed_fail(f, NF_ENOMEM, "push: out of memory");
			break;
		}
		pthread_mutex_lock(&f->mu);
		b->next = NULL;
		if (!b->rows) {
			b->next = f->free_list;
			f->free_list = b;
		} else if (f->full_tail) {
			f->full_tail->next = b;
			f->full_tail = b;
		} else {
			f->full_head = f->full_tail = b;
		}
		pthread_cond_broadcast(&f->cv);
		pthread_mutex_unlock(&f->mu);
	}
	pthread_mutex_lock(&f->mu);
	f->done = 1;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

/* Waits for a queued block or the reader's end: 1 a block is queued, 0 every
 * row was queued and sent, -1 the reader failed (f->rc). */
static int feed_wait(struct feed *f)
{
	int r;

	pthread_mutex_lock(&f->mu);
	while (!f->full_head && !f->done && !f->rc)
		pthread_cond_wait(&f->cv, &f->mu);
	r = f->rc ? -1 : f->full_head ? 1 : 0;
	pthread_mutex_unlock(&f->mu);
	return r;
}

/* curl's read callback: the queued blocks' bytes, until `batch` is passed. */
static size_t feed_send(char *p, size_t sz, size_t n, void *ud)
{
	struct feed *f = ud;
	size_t cap = sz * n, out = 0;

	while (out < cap) {
		if (__atomic_load_n(f->abort, __ATOMIC_RELAXED))
			return CURL_READFUNC_ABORT;
		if (!f->cur) {
			if (f->sent >= f->batch)
				break; /* end of this INSERT's body */
			int w = feed_wait(f);

			if (w < 0)
				return CURL_READFUNC_ABORT;
			if (!w)
				break; /* every row sent */
			pthread_mutex_lock(&f->mu);
			f->cur = f->full_head;
			f->full_head = f->cur->next;
			if (!f->full_head)
				f->full_tail = NULL;
			pthread_mutex_unlock(&f->mu);
			f->seg_i = f->seg_off = 0;
		}
		struct block *b = f->cur;
		while (out < cap && f->seg_i < b->nseg) {
			const struct seg *s = &b->segs[f->seg_i];
			size_t k = s->n - f->seg_off < cap - out ? s->n - f->seg_off : cap - out;

			memcpy(p + out, s->p + f->seg_off, k);
			out += k;
			f->seg_off += k;
			if (f->seg_off == s->n) {
				f->seg_i++;
				f->seg_off = 0;
			}
		}
		if (f->seg_i == b->nseg) {
			f->sent += b->total;
			f->bytes += b->total;
			pthread_mutex_lock(&f->mu);
			b->next = f->free_list;
			f->free_list = b;
			pthread_cond_broadcast(&f->cv);
			pthread_mutex_unlock(&f->mu);
			f->cur = NULL;
		}
	}
	return out;
}

/* Sets up f for table t (reader not started). f's buffers stay from its
 * previous unit (a stream reuses one feed: no allocation per unit). */
static int feed_init(struct feed *f, sqlite3 *db, const struct push_table *t, const char *id, size_t batch)
{
	size_t idlen = strlen(id);
	unsigned char v[10];
	int rc = 0;

	f->stmt = NULL;
	f->free_list = f->full_head = f->full_tail = NULL;
	f->done = f->stop = f->rc = 0;
	f->msg[0] = '\0';
	f->rows = f->bytes = 0;
	f->cur = NULL;
	f->seg_i = f->seg_off = f->sent = 0;
	f->sess.n = 0;
	for (int k = 0; k <= PUSH_MAX_COLS; k++)
		f->colhdr[k].n = 0;
	f->db = db;
	f->t = t;
	f->batch = batch;
	f->block_bytes = batch < PUSH_BLOCK_BYTES ? batch : PUSH_BLOCK_BYTES;
	f->sess_one = put_varint(v, idlen) + idlen;
	f->fixed_row = f->sess_one;
	for (int k = 0; k < t->ncols; k++)
		f->fixed_row += t->cols[k].kind == COL_TEXT ? 1 : 9;
	f->rows_cap = f->block_bytes / f->fixed_row + 1;
	if (f->rows_cap > PUSH_BLOCK_ROWS)
		f->rows_cap = PUSH_BLOCK_ROWS;
	/* the session column: the same value on every row, from one buffer */
	for (size_t i = 0; !rc && (i == 0 || f->sess.n + f->sess_one <= PUSH_SESS_REP); i++)
		rc = nf_push_buf_str(&f->sess, id, idlen);
	rc = rc ? rc : nf_push_buf_str(&f->colhdr[0], "session", 7);
	rc = rc ? rc : nf_push_buf_str(&f->colhdr[0], "String", 6);
	for (int k = 0; k < t->ncols && !rc; k++) {
		const char *ty = nf_push_ch_type(t->cols[k].kind);

		rc = nf_push_buf_str(&f->colhdr[k + 1], t->cols[k].name, strlen(t->cols[k].name));
		rc = rc ? rc : nf_push_buf_str(&f->colhdr[k + 1], ty, strlen(ty));
	}
	for (int i = 0; i < PUSH_NBLOCKS; i++) {
		f->blocks[i].next = f->free_list;
		f->free_list = &f->blocks[i];
	}
	return rc;
}

static void feed_free(struct feed *f)
{
	free(f->sess.p);
	for (int k = 0; k <= PUSH_MAX_COLS; k++)
		free(f->colhdr[k].p);
	for (int i = 0; i < PUSH_NBLOCKS; i++) {
		for (int k = 0; k < PUSH_MAX_COLS; k++) {
			free(f->blocks[i].col[k].p);
			free(f->blocks[i].nulls[k].p);
		}
		free(f->blocks[i].segs);
	}
}


static int push_unit(struct ch *c, sqlite3 *db, struct feed *f, const struct push_table *t,
		     const struct unit *u, const char *id, const char *tok, size_t batch, const int *abort,
		     struct nf_push_stats *st, struct nf_error *err)
{
	struct buf sel = { 0 }, ins = { 0 };
	pthread_t th;
	int started = 0, sync = 0;
	char q[512];
	int rc = 0;

	f->abort = abort;
	rc = nf_push_buf_put(&sel, "SELECT ", 7);
	snprintf(q, sizeof(q), "INSERT INTO `_stage_%s_%s` (session", tok, t->name);
	rc = rc ? rc : nf_push_buf_put(&ins, q, strlen(q));
	for (int k = 0; k < t->ncols && !rc; k++) {
		char col[100];
		int l = snprintf(col, sizeof(col), "%s\"%s\"", k ? ", " : "", t->cols[k].name);
		rc = nf_push_buf_put(&sel, col, (size_t)l);
		l = snprintf(col, sizeof(col), ", `%s`", t->cols[k].name);
		rc = rc ? rc : nf_push_buf_put(&ins, col, (size_t)l);
	}
	/* no ORDER BY: the table's own (rowid) order, no sort; a range is a
	 * seek on the rowid b-tree */
	if (u->hi >= u->lo)
		snprintf(q, sizeof(q), " FROM \"%s\" WHERE rowid BETWEEN %lld AND %lld", t->name,
			 (long long)u->lo, (long long)u->hi);
	else
		snprintf(q, sizeof(q), " FROM \"%s\"", t->name);
	rc = rc ? rc : nf_push_buf_put(&sel, q, strlen(q) + 1);
	rc = rc ? rc : nf_push_buf_put(&ins, ") FORMAT Native", 16);
	rc = rc ? rc : feed_init(f, db, t, id, batch);
	if (rc) {
		rc = nf_error_set(err, NF_ENOMEM, "push: out of memory");
		goto out;
	}
	if (sqlite3_prepare_v2(db, (const char *)sel.p, -1, &f->stmt, NULL) != SQLITE_OK) {
		rc = nf_error_set(err, NF_ESQL, "table %s: %s", t->name, sqlite3_errmsg(db));
		goto out;
	}
	if (pthread_mutex_init(&f->mu, NULL)) {
		rc = nf_error_set(err, NF_ENOMEM, "push: cannot create a lock");
		goto out;
	}
	if (pthread_cond_init(&f->cv, NULL)) {
		pthread_mutex_destroy(&f->mu);
		rc = nf_error_set(err, NF_ENOMEM, "push: cannot create a condition variable");
		goto out;
	}
	sync = 1;
	if (pthread_create(&th, NULL, feed_reader, f)) {
		rc = nf_error_set(err, NF_ENOMEM, "push: cannot start a reader thread");
		goto out;
	}
	started = 1;
	/* one INSERT per batch; none for an empty range or after the last row */
	while (!__atomic_load_n(abort, __ATOMIC_RELAXED) && feed_wait(f) > 0) {
		struct nf_error e2;

		f->sent = 0;
		nf_error_clear(&e2);
		c->reader = feed_send;
		c->reader_ud = f;
		rc = nf_push_ch_post(c, (const char *)ins.p, NULL, 0, 1, &e2);
		c->reader = NULL;
		st->batches++;
		if (rc) {
			rc = nf_error_set(err, e2.code, "%s", e2.msg); /* the reader's error wins below */
			break;
		}
	}
out:
	if (started) {
		pthread_mutex_lock(&f->mu);
		f->stop = 1;
		pthread_cond_broadcast(&f->cv);
		pthread_mutex_unlock(&f->mu);
		pthread_join(th, NULL);
		st->rows += f->rows;
		st->bytes += f->bytes;
		if (f->rc) /* the reader failed: the INSERT was aborted because of it */
			rc = nf_error_set(err, f->rc, "%s", f->msg);
	}
	if (sync) {
		pthread_cond_destroy(&f->cv);
		pthread_mutex_destroy(&f->mu);
	}
	sqlite3_finalize(f->stmt);
	f->stmt = NULL;
	free(sel.p);
	free(ins.p);
	return rc;
}

/* One INSERT stream: units in turn. */
void *nf_push_stream_run(void *ud)
{
	struct streams *S = ud;
	struct nf_push_stats st = { 0 };
	struct nf_error err;
	sqlite3 *db = NULL;
	struct feed *f = calloc(1, sizeof(*f)); /* one per stream, reused by its units */
	struct ch c;
	int rc;

	nf_error_clear(&err);
	/* curl's global setup already ran on the calling thread (its first
	 * curl_easy_init, before any stream started): safe to make handles here */
	rc = nf_push_ch_open(&c, S->opts, S->url, &err);
	if (!rc && !f)
		rc = nf_error_set(&err, NF_ENOMEM, "push: out of memory");
	if (!rc && sqlite3_open_v2(S->dbpath, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
		rc = nf_error_set(&err, NF_EIO, "%s: %s", S->dbpath, db ? sqlite3_errmsg(db) : "cannot open");
	while (!rc && !__atomic_load_n(&S->abort, __ATOMIC_RELAXED)) {
		const struct unit *u = NULL;

		pthread_mutex_lock(&S->mu);
		if (S->next < S->nunits)
			u = &S->units[S->next++];
		pthread_mutex_unlock(&S->mu);
		if (!u)
			break;
		rc = push_unit(&c, db, f, &S->s->tables[u->table], u, S->id, S->tok, S->batch, &S->abort, &st, &err);
	}
	pthread_mutex_lock(&S->mu);
	if (rc && !S->rc) {
		S->rc = rc;
		S->err = err;
	}
	S->st.rows += st.rows;
	S->st.bytes += st.bytes;
	S->st.batches += st.batches;
	pthread_mutex_unlock(&S->mu);
	if (rc)
		__atomic_store_n(&S->abort, 1, __ATOMIC_RELAXED);
	nf_push_ch_close(&c);
	sqlite3_close(db);
	if (f)
		feed_free(f);
	free(f);
	return NULL;
}
