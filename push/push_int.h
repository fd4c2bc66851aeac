/*
 * Private to push/ (the fleet store, include/contract/push.h): the schema
 * read from the embedded timeline.sql, small growing buffers, one HTTP
 * connection to ClickHouse, and the pieces the session push is made of.
 *   http.c  buffers and the connection (nf_push_ch_open, nf_push_ch_post: one request)
 *   ddl.c   the schema and the tables (nf_push_prepare)
 *   feed.c  a table's rows as Native blocks, streamed by INSERT streams
 *   lock.c  the per-session lock that serialises the swaps
 *   push.c  a session's push (staging, streams, swap) and SQL over the store
 */
#ifndef NF_PUSH_INT_H
#define NF_PUSH_INT_H

#include "contract/push.h"
#include "contract/errors.h"

#include <curl/curl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PUSH_ERRBODY_MAX (64u << 10) /* bytes of an error answer kept */
#define PUSH_MAX_COLS 64
#define PUSH_MAX_TABLES 96
#define PUSH_NAME_MAX 64
#define PUSH_UPLOAD_BUF (1L << 20) /* curl's upload buffer for streamed INSERT bodies */

enum col_kind { COL_INT, COL_REAL, COL_TEXT };

struct push_col {
	char name[PUSH_NAME_MAX];
	enum col_kind kind;
};

struct push_table {
	char name[PUSH_NAME_MAX];
	struct push_col cols[PUSH_MAX_COLS];
	int ncols;
	int time_col; /* first *_ns column, -1 when none */
};

struct push_schema {
	struct push_table tables[PUSH_MAX_TABLES];
	int ntables;
};

struct buf {
	unsigned char *p;
	size_t n, cap;
};

/* One connection to the server, reused across requests (keep-alive). */
struct ch {
	CURL *curl;
	char *base;      /* URL up to and with '?' or '&' ready for parameters */
	char shown[256]; /* URL for messages: no query string, no password (either may hold one) */
	const char *db;
	const char *sfx; /* "" on one server; "_local" for the shard tables of a cluster */
	FILE *out;       /* answer of a 200 goes here when set */
	int out_failed;
	int out_text;    /* out is text to show: cleaned by nf_esc_text (newlines, tabs kept) */
	unsigned char carry[4]; /* out_text: a character cut by the end of a chunk */
	size_t ncarry;
	struct buf errbody;
	long timeout_s;
	/* set: the body of the next POST is streamed (chunked) from this callback */
	size_t (*reader)(char *, size_t, size_t, void *);
	void *reader_ud;
	struct curl_slist *hdrs;
};

#define PUSH_UNIT_ROWS (1 << 20)    /* rowids per unit of a large table at most (units go to streams in turn) */

/* Rows of one table, or of one rowid range of it, pushed by one stream. */
struct unit {
	int table;
	int64_t lo, hi; /* rowids lo..hi; hi < lo: the whole table */
};

/*
 * A push's INSERT streams: each is a thread with its own connection to the
 * server and its own SQLite connection, taking units in turn until none is
 * left or one stream fails (the others stop at once: their INSERT is aborted).
 */
struct streams {
	const struct nf_push_options *opts;
	const struct push_schema *s;
	const char *url, *dbpath, *id, *tok;
	size_t batch;
	const struct unit *units;
	size_t nunits;
	pthread_mutex_t mu;
	size_t next;          /* under mu: the next unit to take */
	int abort;            /* atomic: a stream failed, stop */
	int rc;               /* under mu: the first failure */
	struct nf_error err;  /* and its message */
	struct nf_push_stats st; /* under mu: sums */
};

/* Buffers (http.c): each returns 0, or -1 when out of memory. */
int nf_push_buf_reserve(struct buf *b, size_t more);
int nf_push_buf_put(struct buf *b, const void *d, size_t n);
int nf_push_buf_u8(struct buf *b, unsigned v);
int nf_push_buf_le(struct buf *b, uint64_t v, int bytes);
int nf_push_buf_varint(struct buf *b, uint64_t v);
int nf_push_buf_str(struct buf *b, const void *s, size_t n);

/* The connection (http.c): open (0 or NF_EINVAL, NF_ENOMEM), close, one
 * POST (0, NF_EIO, NF_ESQL, NF_ENOMEM; the answer in c->errbody or c->out),
 * one scalar answer (its first line in ans), the URLs of a push. */
int nf_push_ch_open(struct ch *c, const struct nf_push_options *o, const char *url, struct nf_error *err);
void nf_push_ch_close(struct ch *c);
int nf_push_ch_post(struct ch *c, const char *sql, const void *data, size_t n, int use_db,
		    struct nf_error *err);
int nf_push_ch_scalar(struct ch *c, const char *sql, char *ans, size_t len, struct nf_error *err);
const char *const *nf_push_push_urls(const struct nf_push_options *o, size_t *n);

/* The schema (ddl.c): a column kind's ClickHouse type (static), the tables
 * of timeline.sql (0, NF_ENOMEM, NF_ESQL, NF_EINVAL). */
const char *nf_push_ch_type(enum col_kind k);
int nf_push_load_schema(struct push_schema *s, struct nf_error *err);

/* One INSERT stream (feed.c), a thread's body: ud is a struct streams. Returns NULL. */
void *nf_push_stream_run(void *ud);

/* The session's swap lock (lock.c): take it (0, NF_ETIMEOUT, NF_EIO, NF_ESQL), drop it if ours. */
int nf_push_swap_lock(struct ch *c, const char *id, const char *tok, struct nf_error *err);
void nf_push_swap_unlock(struct ch *c, const char *id, const char *tok);

#endif
