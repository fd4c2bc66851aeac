/*
 * nftrace push: session timelines into ClickHouse over its HTTP interface
 * (libcurl, Native blocks streamed), and SQL over the store. Contract: include/contract/push.h.
 */
#include "contract/push.h"
#include "contract/errors.h"
#include "contract/session.h"

#include "timeline_sql.h"

#include <curl/curl.h>
#include <sqlite3.h>

#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
	char shown[256]; /* URL for messages: no query string (it may hold a password) */
	const char *db;
	const char *sfx; /* "" on one server; "_local" for the shard tables of a cluster */
	FILE *out;       /* answer of a 200 goes here when set */
	int out_failed;
	struct buf errbody;
	long timeout_s;
	/* set: the body of the next POST is streamed (chunked) from this callback */
	size_t (*reader)(char *, size_t, size_t, void *);
	void *reader_ud;
	struct curl_slist *hdrs;
};

/* ---- small buffers ---- */

static int buf_reserve(struct buf *b, size_t more)
{
	if (b->n + more <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < b->n + more)
		cap *= 2;
	unsigned char *p = realloc(b->p, cap);
	if (!p)
		return NF_ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

static int buf_put(struct buf *b, const void *d, size_t n)
{
	if (!n)
		return 0; /* d may be NULL then (an empty answer) */
	if (buf_reserve(b, n))
		return NF_ENOMEM;
	memcpy(b->p + b->n, d, n);
	b->n += n;
	return 0;
}

static int buf_u8(struct buf *b, unsigned v)
{
	unsigned char c = (unsigned char)v;
	return buf_put(b, &c, 1);
}

static int buf_le(struct buf *b, uint64_t v, int bytes)
{
	unsigned char c[8];
	for (int i = 0; i < bytes; i++)
		c[i] = (unsigned char)(v >> (8 * i));
	return buf_put(b, c, (size_t)bytes);
}

/* LEB128, as Native and RowBinary write string lengths and array sizes. */
static int buf_varint(struct buf *b, uint64_t v)
{
	do {
		unsigned c = (unsigned)(v & 0x7f);
		v >>= 7;
		if (buf_u8(b, c | (v ? 0x80u : 0)))
			return NF_ENOMEM;
	} while (v);
	return 0;
}

/* A String value: LEB128 length, then the bytes. */
static int buf_str(struct buf *b, const void *s, size_t n)
{
	return buf_varint(b, n) ? NF_ENOMEM : buf_put(b, s, n);
}

/* ---- schema from the embedded timeline.sql ---- */

static enum col_kind kind_of(const char *decl)
{
	if (decl && strstr(decl, "INT"))
		return COL_INT;
	if (decl && (strstr(decl, "REAL") || strstr(decl, "FLOA") || strstr(decl, "DOUB")))
		return COL_REAL;
	return COL_TEXT;
}

static int load_schema(struct push_schema *s, struct nf_error *err)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *tl = NULL, *ti = NULL;
	char *emsg = NULL;
	int rc = 0;

	memset(s, 0, sizeof(*s));
	if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		rc = nf_error_set(err, NF_ENOMEM, "push: cannot open an in-memory database");
		goto out;
	}
	if (sqlite3_exec(db, nf_timeline_sql, NULL, NULL, &emsg) != SQLITE_OK) {
		rc = nf_error_set(err, NF_ESQL, "push: schemas/timeline.sql: %s", emsg ? emsg : "error");
		goto out;
	}
	if (sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name <> 'meta' "
				   "AND name NOT LIKE 'sqlite%' ORDER BY rowid", -1, &tl, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT name, type FROM pragma_table_info(?1) ORDER BY cid", -1, &ti, NULL) != SQLITE_OK) {
		rc = nf_error_set(err, NF_ESQL, "push: %s", sqlite3_errmsg(db));
		goto out;
	}
	while (sqlite3_step(tl) == SQLITE_ROW) {
		const char *tn = (const char *)sqlite3_column_text(tl, 0);
		struct push_table *t;

		if (s->ntables == PUSH_MAX_TABLES || !tn || strlen(tn) >= PUSH_NAME_MAX) {
			rc = nf_error_set(err, NF_EINVAL, "push: timeline.sql: too many tables or name too long");
			goto out;
		}
		t = &s->tables[s->ntables++];
		strcpy(t->name, tn);
		t->time_col = -1;
		sqlite3_reset(ti);
		sqlite3_bind_text(ti, 1, tn, -1, SQLITE_TRANSIENT);
		while (sqlite3_step(ti) == SQLITE_ROW) {
			const char *cn = (const char *)sqlite3_column_text(ti, 0);
			const char *ct = (const char *)sqlite3_column_text(ti, 1);
			size_t l = cn ? strlen(cn) : 0;

			if (t->ncols == PUSH_MAX_COLS || !l || l >= PUSH_NAME_MAX) {
				rc = nf_error_set(err, NF_EINVAL, "push: timeline.sql: table %s: too many columns", tn);
				goto out;
			}
			strcpy(t->cols[t->ncols].name, cn);
			t->cols[t->ncols].kind = kind_of(ct);
			if (t->time_col < 0 && l > 3 && !strcmp(cn + l - 3, "_ns") &&
			    t->cols[t->ncols].kind == COL_INT)
				t->time_col = t->ncols;
			t->ncols++;
		}
	}
out:
	sqlite3_finalize(tl);
	sqlite3_finalize(ti);
	sqlite3_free(emsg);
	sqlite3_close(db);
	return rc;
}

/* ---- HTTP ---- */

static size_t on_data(char *p, size_t sz, size_t n, void *ud)
{
	struct ch *c = ud;
	size_t len = sz * n;
	long code = 0;

	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &code);
	if (code == 200 && c->out) {
		if (fwrite(p, 1, len, c->out) != len) {
			c->out_failed = 1;
			return 0;
		}
		return len;
	}
	if (c->errbody.n < PUSH_ERRBODY_MAX) {
		size_t take = len < PUSH_ERRBODY_MAX - c->errbody.n ? len : PUSH_ERRBODY_MAX - c->errbody.n;
		if (buf_put(&c->errbody, p, take))
			return 0;
	}
	return len;
}

static int valid_db_name(const char *s)
{
	if (!*s || strlen(s) > 64)
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return 0;
	return 1;
}

static int ch_open(struct ch *c, const struct nf_push_options *o, const char *url, struct nf_error *err)
{
	size_t l;

	memset(c, 0, sizeof(*c));
	c->db = o->database ? o->database : "nftrace";
	c->sfx = o->cluster ? "_local" : "";
	c->timeout_s = o->timeout_s > 0 ? o->timeout_s : 600;
	if (!url || (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)))
		return nf_error_set(err, NF_EINVAL, "%s: not an http:// or https:// URL", url ? url : "(none)");
	l = strcspn(url, "?#");
	snprintf(c->shown, sizeof(c->shown), "%.*s", (int)(l < 200 ? l : 200), url);
	if (!valid_db_name(c->db))
		return nf_error_set(err, NF_EINVAL, "database '%.64s': use letters, digits and '_' only", c->db);
	if (o->cluster && !valid_db_name(o->cluster))
		return nf_error_set(err, NF_EINVAL, "cluster '%.64s': use letters, digits and '_' only", o->cluster);
	c->base = malloc(strlen(url) + 4);
	c->curl = curl_easy_init();
	/* no "Expect: 100-continue" round trip before a streamed body */
	c->hdrs = curl_slist_append(NULL, "Expect:");
	if (!c->base || !c->curl || !c->hdrs)
		return nf_error_set(err, NF_ENOMEM, "push: out of memory");
	strcpy(c->base, url);
	if (strchr(url, '?'))
		strcat(c->base, "&");
	else if (l && url[l - 1] == '/')
		strcat(c->base, "?");
	else
		strcat(c->base, "/?");
	return 0;
}

static void ch_close(struct ch *c)
{
	if (c->curl)
		curl_easy_cleanup(c->curl);
	curl_slist_free_all(c->hdrs);
	free(c->base);
	free(c->errbody.p);
}

/*
 * POSTs to the server. With data: sql goes in the URL (an INSERT ... FORMAT
 * RowBinary) and data is the body; without: sql is the body. use_db: add the
 * database parameter (not for CREATE DATABASE).
 */
static int ch_post(struct ch *c, const char *sql, const void *data, size_t n, int use_db,
		   struct nf_error *err)
{
	char *esc = NULL, *url = NULL;
	long code = 0;
	CURLcode cc;
	int rc = 0;

	c->errbody.n = 0;
	c->out_failed = 0;
	if (data || c->reader) {
		esc = curl_easy_escape(c->curl, sql, 0);
		if (!esc)
			return nf_error_set(err, NF_ENOMEM, "push: out of memory");
	}
	size_t ul = strlen(c->base) + 64 + strlen(c->db) + (esc ? strlen(esc) : 0);
	url = malloc(ul);
	if (!url) {
		curl_free(esc);
		return nf_error_set(err, NF_ENOMEM, "push: out of memory");
	}
	snprintf(url, ul, "%s%s%s%s%s", c->base, use_db ? "database=" : "", use_db ? c->db : "",
		 esc ? (use_db ? "&query=" : "query=") : "", esc ? esc : "");
	curl_free(esc);
	curl_easy_setopt(c->curl, CURLOPT_URL, url);
	curl_easy_setopt(c->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, c->hdrs);
	if (c->reader) {
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, NULL);
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)-1);
		curl_easy_setopt(c->curl, CURLOPT_READFUNCTION, c->reader);
		curl_easy_setopt(c->curl, CURLOPT_READDATA, c->reader_ud);
		/* fewer, larger reads and socket writes (curl's default is 64 KiB) */
		curl_easy_setopt(c->curl, CURLOPT_UPLOAD_BUFFERSIZE, (long)PUSH_UPLOAD_BUF);
	} else {
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, data ? data : (const void *)sql);
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(data ? n : strlen(sql)));
	}
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT, c->timeout_s);
	curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	cc = curl_easy_perform(c->curl);
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &code);
	free(url);
	if (c->out_failed)
		return nf_error_set(err, NF_EIO, "writing the answer failed");
	if (cc != CURLE_OK && !(code && code != 200 && cc == CURLE_WRITE_ERROR)) {
		return nf_error_set(err, NF_EIO, "%s: %s", c->shown, curl_easy_strerror(cc));
	}
	if (code != 200) {
		/* ClickHouse's error: "Code: N, e.displayText() = DB::Exception: ...": first line */
		char line[300];
		size_t k = 0;

		for (size_t i = 0; i < c->errbody.n && k + 1 < sizeof(line); i++) {
			unsigned char ch = c->errbody.p[i];
			if (ch == '\n' || ch == '\r')
				break;
			line[k++] = (char)(ch < 0x20 || ch == 0x7f ? '?' : ch);
		}
		line[k] = '\0';
		rc = nf_error_set(err, NF_ESQL, "%s: HTTP %ld: %s", c->shown, code, k ? line : "(no message)");
	}
	return rc;
}

/* Runs sql and copies the first line of its answer to ans. */
static int ch_scalar(struct ch *c, const char *sql, char *ans, size_t len, struct nf_error *err)
{
	int rc = ch_post(c, sql, NULL, 0, 0, err); /* no database: it may not exist yet */
	size_t k = 0;

	while (!rc && k + 1 < len && k < c->errbody.n && c->errbody.p[k] != '\n') {
		ans[k] = (char)c->errbody.p[k];
		k++;
	}
	ans[k] = '\0';
	return rc;
}

/* The URLs a push talks to: the shards of a cluster, in shard order, or the one server. */
static const char *const *push_urls(const struct nf_push_options *o, size_t *n)
{
	if (o->cluster && o->n_shards) {
		*n = o->n_shards;
		return o->shards;
	}
	*n = 1;
	return &o->url;
}

/* ---- DDL ---- */

static const char *ch_type(enum col_kind k)
{
	return k == COL_INT ? "Nullable(Int64)" : k == COL_REAL ? "Nullable(Float64)" : "Nullable(String)";
}

static int create_tables(struct ch *c, const struct push_schema *s, const char *cluster,
			 struct nf_error *err)
{
	struct buf q = { 0 };
	char small[512];
	int rc;

	snprintf(small, sizeof(small), "CREATE DATABASE IF NOT EXISTS `%s`", c->db);
	if ((rc = ch_post(c, small, NULL, 0, 0, err)))
		return rc;
	for (int i = 0; i < s->ntables && !rc; i++) {
		const struct push_table *t = &s->tables[i];
		char tail[256];

		q.n = 0;
		rc = buf_put(&q, "CREATE TABLE IF NOT EXISTS `", 28);
		rc = rc ? rc : buf_put(&q, t->name, strlen(t->name));
		rc = rc ? rc : buf_put(&q, c->sfx, strlen(c->sfx));
		rc = rc ? rc : buf_put(&q, "` (session String", 17);
		for (int k = 0; k < t->ncols && !rc; k++) {
			char col[160];
			int l = snprintf(col, sizeof(col), ", `%s` %s", t->cols[k].name, ch_type(t->cols[k].kind));
			rc = buf_put(&q, col, (size_t)l);
		}
		if (t->time_col >= 0)
			snprintf(tail, sizeof(tail), ") ENGINE = MergeTree PARTITION BY session ORDER BY (session, ifNull(`%s`, 0))",
				 t->cols[t->time_col].name);
		else
			snprintf(tail, sizeof(tail), ") ENGINE = MergeTree PARTITION BY session ORDER BY session");
		rc = rc ? rc : buf_put(&q, tail, strlen(tail) + 1);
		if (rc) {
			rc = nf_error_set(err, NF_ENOMEM, "push: out of memory");
			break;
		}
		if ((rc = ch_post(c, (const char *)q.p, NULL, 0, 1, err)))
			break;
		if (cluster) {
			/* the table readers query: over every shard's local table, spread by session */
			snprintf(small, sizeof(small), "CREATE TABLE IF NOT EXISTS `%s` AS `%s_local` ENGINE = "
				 "Distributed(`%s`, `%s`, `%s_local`, cityHash64(session))", t->name, t->name,
				 cluster, c->db, t->name);
			rc = ch_post(c, small, NULL, 0, 1, err);
		}
	}
	free(q.p);
	if (!rc) {
		snprintf(small, sizeof(small), "CREATE TABLE IF NOT EXISTS sessions%s (session String, pushed_at DateTime, "
			 "host String, source String, tool_version String, seed String, rows UInt64, "
			 "meta Nested(key String, value String)) "
			 "ENGINE = MergeTree PARTITION BY session ORDER BY session", c->sfx);
		rc = ch_post(c, small, NULL, 0, 1, err);
	}
	if (!rc && cluster) {
		snprintf(small, sizeof(small), "CREATE TABLE IF NOT EXISTS sessions AS sessions_local ENGINE = "
			 "Distributed(`%s`, `%s`, sessions_local, cityHash64(session))", cluster, c->db);
		rc = ch_post(c, small, NULL, 0, 1, err);
	}
	return rc;
}

/*
 * Staging tables a push left when it was killed (a failed push drops its
 * own): those created more than PUSH_STAGE_STALE_S ago go. A push running
 * that long still has its tables: they are younger, made when it began... or
 * it has run for a day, and then it loses its staged rows and fails.
 */
#define PUSH_STAGE_STALE_S 86400

static int drop_stale_stage(struct ch *c, struct nf_error *err)
{
	char q[320];
	struct buf names = { 0 };
	int rc;

	snprintf(q, sizeof(q), "SELECT name FROM system.tables WHERE database = '%s' AND startsWith(name, '_stage_') "
		 "AND metadata_modification_time < now() - %d FORMAT TSV", c->db, PUSH_STAGE_STALE_S);
	if ((rc = ch_post(c, q, NULL, 0, 0, err)))
		return rc;
	if (buf_put(&names, c->errbody.p, c->errbody.n) || buf_u8(&names, 0))
		rc = nf_error_set(err, NF_ENOMEM, "push: out of memory");
	for (char *line = (char *)names.p, *nl; !rc && line && *line; line = nl) {
		nl = strchr(line, '\n');
		if (nl)
			*nl++ = '\0';
		if (!*line || strchr(line, '`') || strchr(line, '\\') || strlen(line) > 200)
			continue; /* not a name this program made */
		snprintf(q, sizeof(q), "DROP TABLE IF EXISTS `%s`", line);
		rc = ch_post(c, q, NULL, 0, 1, err);
	}
	free(names.p);
	return rc;
}

int nf_push_prepare(const struct nf_push_options *opts, struct nf_error *err)
{
	struct push_schema *s = malloc(sizeof(*s));
	struct ch c;
	int rc;

	if (!s)
		return nf_error_set(err, NF_ENOMEM, "push: out of memory");
	size_t n;
	const char *const *urls = push_urls(opts, &n);

	rc = load_schema(s, err);
	for (size_t i = 0; i < n && !rc; i++) {
		rc = ch_open(&c, opts, urls[i], err);
		if (!rc && opts->cluster) {
			/* each URL must be that shard of the cluster, as the server knows it */
			char q[256], ans[64];

			snprintf(q, sizeof(q), "SELECT count() FROM system.clusters WHERE cluster = '%s' AND replica_num = 1",
				 opts->cluster);
			rc = ch_scalar(&c, q, ans, sizeof(ans), err);
			if (!rc && strtoull(ans, NULL, 10) != n)
				rc = nf_error_set(err, NF_EINVAL, "%s: cluster '%s' has %s shards there, %zu URLs given "
						  "(give one --clickhouse URL per shard, in shard order)",
						  c.shown, opts->cluster, ans, n);
		}
		rc = rc ? rc : create_tables(&c, s, opts->cluster, err);
		rc = rc ? rc : drop_stale_stage(&c, err);
		ch_close(&c);
	}
	free(s);
	return rc;
}

/* ---- push ---- */

int nf_push_session_id(const char *dir, char *id, size_t id_len, struct nf_error *err)
{
	size_t l = strlen(dir);
	const char *b;

	while (l > 1 && dir[l - 1] == '/')
		l--;
	b = dir + l;
	while (b > dir && b[-1] != '/')
		b--;
	size_t n = (size_t)(dir + l - b);
	if (!n || (n == 1 && *b == '.') || (n == 2 && !strncmp(b, "..", 2)) || *b == '/')
		return nf_error_set(err, NF_EINVAL, "%s: no session name in this path (give the directory by its name)", dir);
	if (n > NF_PUSH_ID_MAX || n >= id_len)
		return nf_error_set(err, NF_EINVAL, "%s: session name longer than %d bytes", dir, NF_PUSH_ID_MAX);
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)b[i];
		if (ch < 0x20 || ch == 0x7f || ch == '\'' || ch == '\\' || ch == '`')
			return nf_error_set(err, NF_EINVAL, "%s: session name holds a control character, quote or backslash", dir);
	}
	memcpy(id, b, n);
	id[n] = '\0';
	return 0;
}

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
#define PUSH_UNIT_ROWS (1 << 20)    /* rowids per unit of a large table at most (units go to streams in turn) */

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

			if (buf_reserve(c, n + 10))
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
		if (buf_reserve(&b->nulls[k], f->rows_cap) ||
		    (t->cols[k].kind != COL_TEXT && buf_reserve(&b->col[k], 8 * f->rows_cap)))
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
		rc = buf_str(&f->sess, id, idlen);
	rc = rc ? rc : buf_str(&f->colhdr[0], "session", 7);
	rc = rc ? rc : buf_str(&f->colhdr[0], "String", 6);
	for (int k = 0; k < t->ncols && !rc; k++) {
		const char *ty = ch_type(t->cols[k].kind);

		rc = buf_str(&f->colhdr[k + 1], t->cols[k].name, strlen(t->cols[k].name));
		rc = rc ? rc : buf_str(&f->colhdr[k + 1], ty, strlen(ty));
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
	rc = buf_put(&sel, "SELECT ", 7);
	snprintf(q, sizeof(q), "INSERT INTO `_stage_%s_%s` (session", tok, t->name);
	rc = rc ? rc : buf_put(&ins, q, strlen(q));
	for (int k = 0; k < t->ncols && !rc; k++) {
		char col[100];
		int l = snprintf(col, sizeof(col), "%s\"%s\"", k ? ", " : "", t->cols[k].name);
		rc = buf_put(&sel, col, (size_t)l);
		l = snprintf(col, sizeof(col), ", `%s`", t->cols[k].name);
		rc = rc ? rc : buf_put(&ins, col, (size_t)l);
	}
	/* no ORDER BY: the table's own (rowid) order, no sort; a range is a
	 * seek on the rowid b-tree */
	if (u->hi >= u->lo)
		snprintf(q, sizeof(q), " FROM \"%s\" WHERE rowid BETWEEN %lld AND %lld", t->name,
			 (long long)u->lo, (long long)u->hi);
	else
		snprintf(q, sizeof(q), " FROM \"%s\"", t->name);
	rc = rc ? rc : buf_put(&sel, q, strlen(q) + 1);
	rc = rc ? rc : buf_put(&ins, ") FORMAT Native", 16);
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
		rc = ch_post(c, (const char *)ins.p, NULL, 0, 1, &e2);
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
static void *stream_run(void *ud)
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
	rc = ch_open(&c, S->opts, S->url, &err);
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
	ch_close(&c);
	sqlite3_close(db);
	if (f)
		feed_free(f);
	free(f);
	return NULL;
}

static const char *meta_get(char **keys, char **vals, int n, const char *k)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(keys[i], k))
			return vals[i];
	return "";
}

#define PUSH_META_MAX 256

/* The session's `sessions` row, into this push's staging table for it. */
static int push_sessions_row(struct ch *c, sqlite3 *db, const char *id, const char *tok, uint64_t nrows,
			     struct nf_error *err)
{
	char *keys[PUSH_META_MAX], *vals[PUSH_META_MAX];
	int n = 0, rc = 0;
	sqlite3_stmt *st = NULL;
	struct buf b = { 0 };

	if (sqlite3_prepare_v2(db, "SELECT key, value FROM meta ORDER BY key", -1, &st, NULL) != SQLITE_OK)
		return nf_error_set(err, NF_ESQL, "meta: %s", sqlite3_errmsg(db));
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (n == PUSH_META_MAX) {
			rc = nf_error_set(err, NF_EFORMAT, "meta: more than %d facts", PUSH_META_MAX);
			break;
		}
		const char *k = (const char *)sqlite3_column_text(st, 0);
		const char *v = (const char *)sqlite3_column_text(st, 1);
		keys[n] = strdup(k ? k : "");
		vals[n] = strdup(v ? v : "");
		if (!keys[n] || !vals[n]) {
			free(keys[n]);
			free(vals[n]);
			rc = nf_error_set(err, NF_ENOMEM, "push: out of memory");
			break;
		}
		n++;
	}
	sqlite3_finalize(st);
	if (!rc) {
		static const char *const facts[] = { "host", "source", "tool_version", "seed" };
		rc = buf_str(&b, id, strlen(id));
		rc = rc ? rc : buf_le(&b, (uint64_t)(uint32_t)time(NULL), 4);
		for (size_t i = 0; i < 4 && !rc; i++) {
			const char *v = meta_get(keys, vals, n, facts[i]);
			rc = buf_str(&b, v, strlen(v));
		}
		rc = rc ? rc : buf_le(&b, nrows, 8);
		/* meta.key and meta.value: two arrays of n strings */
		rc = rc ? rc : buf_varint(&b, (uint64_t)n);
		for (int i = 0; i < n && !rc; i++)
			rc = buf_str(&b, keys[i], strlen(keys[i]));
		rc = rc ? rc : buf_varint(&b, (uint64_t)n);
		for (int i = 0; i < n && !rc; i++)
			rc = buf_str(&b, vals[i], strlen(vals[i]));
		if (rc)
			rc = nf_error_set(err, NF_ENOMEM, "push: out of memory");
		else {
			char q[256];

			snprintf(q, sizeof(q), "INSERT INTO `_stage_%s_sessions` (session, pushed_at, host, source, tool_version, "
				 "seed, rows, `meta.key`, `meta.value`) FORMAT RowBinary", tok);
			rc = ch_post(c, q, b.p, b.n, 1, err);
		}
	}
	for (int i = 0; i < n; i++) {
		free(keys[i]);
		free(vals[i]);
	}
	free(b.p);
	return rc;
}

/* A name for this push's staging tables: unique among pushes running at once
 * (process id, clocks, a counter), so two pushes never share staged rows. */
static void push_token(char tok[17])
{
	static unsigned counter;
	struct timespec a, b;
	uint64_t x;

	clock_gettime(CLOCK_REALTIME, &a);
	clock_gettime(CLOCK_MONOTONIC, &b);
	x = (uint64_t)a.tv_sec * 1000000007u ^ (uint64_t)a.tv_nsec ^ ((uint64_t)getpid() << 40) ^
	    ((uint64_t)b.tv_nsec << 20) ^ __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
	/* splitmix64 finaliser: every input bit moves every output bit */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	snprintf(tok, 17, "%016llx", (unsigned long long)x);
}

/* The units of a session: each non-empty table whole, or in rowid ranges of
 * unit_rows when larger, the largest tables first (so the streams end
 * together). nonempty[i]: table i has rows. */
static int plan_units(sqlite3 *db, const struct push_schema *s, uint64_t unit_rows, struct unit **units,
		      size_t *n, unsigned char *nonempty, struct nf_error *err)
{
	int64_t lo[PUSH_MAX_TABLES], hi[PUSH_MAX_TABLES];
	int order[PUSH_MAX_TABLES], m = 0;
	size_t cap = 0;

	*units = NULL;
	*n = 0;
	for (int i = 0; i < s->ntables; i++) {
		char q[160];
		sqlite3_stmt *st = NULL;

		nonempty[i] = 0;
		snprintf(q, sizeof(q), "SELECT min(rowid), max(rowid) FROM \"%s\"", s->tables[i].name);
		if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW) {
			nf_error_set(err, NF_ESQL, "table %s: %s", s->tables[i].name, sqlite3_errmsg(db));
			sqlite3_finalize(st);
			return NF_ESQL;
		}
		if (sqlite3_column_type(st, 0) != SQLITE_NULL) {
			lo[i] = sqlite3_column_int64(st, 0);
			hi[i] = sqlite3_column_int64(st, 1);
			nonempty[i] = 1;
			order[m++] = i;
		}
		sqlite3_finalize(st);
	}
	/* largest rowid span first (insertion sort: a few dozen tables) */
	for (int a = 1; a < m; a++)
		for (int b = a; b > 0 && (uint64_t)(hi[order[b]] - lo[order[b]]) > (uint64_t)(hi[order[b - 1]] - lo[order[b - 1]]); b--) {
			int tmp = order[b];
			order[b] = order[b - 1];
			order[b - 1] = tmp;
		}
	for (int a = 0; a < m; a++) {
		int i = order[a];
		uint64_t span = (uint64_t)(hi[i] - lo[i]);
		size_t k = span < unit_rows ? 1 : (size_t)(span / unit_rows) + 1;

		if (*n + k > cap) {
			size_t nc = (*n + k) * 2;
			struct unit *u = realloc(*units, nc * sizeof(*u));
			if (!u) {
				free(*units);
				*units = NULL;
				return nf_error_set(err, NF_ENOMEM, "push: out of memory");
			}
			*units = u;
			cap = nc;
		}
		for (size_t j = 0; j < k; j++) {
			struct unit *u = &(*units)[(*n)++];

			u->table = i;
			if (k == 1) {
				u->lo = 1;
				u->hi = 0; /* the whole table */
			} else {
				u->lo = lo[i] + (int64_t)(j * unit_rows);
				u->hi = j + 1 == k ? hi[i] : u->lo + (int64_t)unit_rows - 1;
			}
		}
	}
	return 0;
}

/* Drops this push's staging tables (best effort: on a failed push the server
 * may be gone; stale ones are dropped by a later nf_push_prepare()). */
static void drop_stage(struct ch *c, const struct push_schema *s, const unsigned char *made, int made_sessions,
		       const char *tok)
{
	char q[256];

	for (int i = 0; i < s->ntables; i++) {
		struct nf_error e2;

		if (!made[i])
			continue;
		nf_error_clear(&e2);
		snprintf(q, sizeof(q), "DROP TABLE IF EXISTS `_stage_%s_%s`", tok, s->tables[i].name);
		if (ch_post(c, q, NULL, 0, 1, &e2))
			return;
	}
	if (made_sessions) {
		struct nf_error e2;

		nf_error_clear(&e2);
		snprintf(q, sizeof(q), "DROP TABLE IF EXISTS `_stage_%s_sessions`", tok);
		ch_post(c, q, NULL, 0, 1, &e2);
	}
}

/*
 * The swap of two pushes of one session must not overlap: ClickHouse 18.16's
 * REPLACE PARTITION takes the block range it drops before it has cloned the
 * source's parts and commits them after, so two at once can each leave the
 * other's parts live (seen in CI: 7 rows of a table that has 4, with staged
 * tables of many parts). A lock table per session serialises the swaps:
 * CREATE TABLE succeeds for one caller only (the others get code 57, "already
 * exists") and the holder drops it when its swap is done. The lock of a push
 * killed during its swap is older than PUSH_LOCK_STALE_S, or than the
 * request timeout and a minute when that is longer (a swap is a few ALTERs of
 * hard links): a waiter renames it away (one rename wins), checks that it
 * renamed the holder it judged stale (else renames it back) and drops it. The
 * lock holds its push's token: a push drops only its own. A waiter gives up
 * PUSH_LOCK_WAIT_S after a lock would have gone stale.
 */
#define PUSH_LOCK_STALE_S 120
#define PUSH_LOCK_WAIT_S 900

static int ch_code_is(const struct ch *c, const char *code)
{
	size_t l = strlen(code);

	return c->errbody.n > 6 + l && !memcmp(c->errbody.p, "Code: ", 6) && !memcmp(c->errbody.p + 6, code, l) &&
	       !isdigit((unsigned char)c->errbody.p[6 + l]);
}

/* The holder (a push's token) written in lock table `name`: "" when none. */
static int lock_holder(struct ch *c, const char *name, char *ans, size_t len, struct nf_error *err)
{
	char q[512];

	snprintf(q, sizeof(q), "SELECT any(holder) FROM `%s`.`%s` FORMAT TSV", c->db, name);
	return ch_scalar(c, q, ans, len, err);
}

static int swap_lock(struct ch *c, const char *id, const char *tok, struct nf_error *err)
{
	char q[768], ans[64], lock[NF_PUSH_ID_MAX + 16], stale[NF_PUSH_ID_MAX + 48];
	struct timespec t0, now;
	unsigned nap_ms = 20;
	int rc;

	/* stale: older than any one request of the holder's swap may run (its
	 * timeout) and a margin; NFTRACE_PUSH_LOCK_STALE_S lets tests wait less */
	const char *env = getenv("NFTRACE_PUSH_LOCK_STALE_S");
	long stale_s = c->timeout_s + 60 > PUSH_LOCK_STALE_S ? c->timeout_s + 60 : PUSH_LOCK_STALE_S;

	if (env && *env && strtol(env, NULL, 10) >= 0 && strtol(env, NULL, 10) <= 86400)
		stale_s = strtol(env, NULL, 10);
	snprintf(lock, sizeof(lock), "_lock_%s", id);
	snprintf(stale, sizeof(stale), "_lock_%s_stale_%s", id, tok);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		snprintf(q, sizeof(q), "CREATE TABLE `%s` (holder String) ENGINE = Memory", lock);
		if (!(rc = ch_post(c, q, NULL, 0, 1, err))) {
			/* ours: say so, so that only we drop it (swap_unlock) */
			snprintf(q, sizeof(q), "INSERT INTO `%s` (holder) VALUES ('%s')", lock, tok);
			if ((rc = ch_post(c, q, NULL, 0, 1, err))) {
				struct nf_error e2;

				nf_error_clear(&e2);
				snprintf(q, sizeof(q), "DROP TABLE IF EXISTS `%s`", lock);
				ch_post(c, q, NULL, 0, 1, &e2);
			}
			return rc;
		}
		if (!ch_code_is(c, "57"))
			return rc;
		nf_error_clear(err);
		/* held: by a live push (wait), or by a killed one (take it away) */
		snprintf(q, sizeof(q), "SELECT (SELECT count() FROM system.tables WHERE database = '%s' AND name = '%s' "
			 "AND metadata_modification_time < now() - %ld), (SELECT any(holder) FROM `%s`.`%s`) FORMAT TSV",
			 c->db, lock, stale_s, c->db, lock);
		rc = ch_scalar(c, q, ans, sizeof(ans), err);
		if (rc && !ch_code_is(c, "60"))
			return rc;
		nf_error_clear(err);
		if (!rc && strtoull(ans, NULL, 10) > 0) {
			char was[64], now_h[64];
			const char *tab = strchr(ans, '\t');

			snprintf(was, sizeof(was), "%s", tab ? tab + 1 : "");
			snprintf(q, sizeof(q), "RENAME TABLE `%s` TO `%s`", lock, stale);
			if ((rc = ch_post(c, q, NULL, 0, 1, err))) {
				if (!ch_code_is(c, "60"))
					return rc;
				nf_error_clear(err); /* another waiter took it first: try again */
				continue;
			}
			/* renamed what was judged stale, or a lock made since by someone else */
			if ((rc = lock_holder(c, stale, now_h, sizeof(now_h), err)))
				return rc;
			if (strcmp(now_h, was)) {
				snprintf(q, sizeof(q), "RENAME TABLE `%s` TO `%s`", stale, lock);
				if (!ch_post(c, q, NULL, 0, 1, err))
					continue;
				nf_error_clear(err);
			}
			snprintf(q, sizeof(q), "DROP TABLE IF EXISTS `%s`", stale);
			if ((rc = ch_post(c, q, NULL, 0, 1, err)))
				return rc;
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec > stale_s + PUSH_LOCK_WAIT_S)
			return nf_error_set(err, NF_ETIMEOUT, "%s: another push of session '%s' has held `%s` for "
					    "over %ld s", c->shown, id, lock, stale_s + PUSH_LOCK_WAIT_S);
		struct timespec nap = { 0, (long)nap_ms * 1000000L };
		nanosleep(&nap, NULL);
		if (nap_ms < 200)
			nap_ms *= 2;
	}
}

/* Drops the lock when it is still this push's (tok). */
static void swap_unlock(struct ch *c, const char *id, const char *tok)
{
	char q[512], lock[NF_PUSH_ID_MAX + 16], h[64];
	struct nf_error e2;

	nf_error_clear(&e2);
	snprintf(lock, sizeof(lock), "_lock_%s", id);
	if (lock_holder(c, lock, h, sizeof(h), &e2) || strcmp(h, tok))
		return;
	snprintf(q, sizeof(q), "DROP TABLE IF EXISTS `%s`", lock);
	ch_post(c, q, NULL, 0, 1, &e2);
}

int nf_push_session(const struct nf_push_options *opts, const char *dir,
		    struct nf_push_stats *stats, struct nf_error *err)
{
	struct nf_push_stats local = { 0 };
	struct push_schema *s = NULL;
	char id[NF_PUSH_ID_MAX + 1], dbpath[4200], q[512], tok[17];
	unsigned char nonempty[PUSH_MAX_TABLES] = { 0 }, made[PUSH_MAX_TABLES] = { 0 };
	int made_sessions = 0, locked = 0;
	struct unit *units = NULL;
	size_t nunits = 0;
	sqlite3 *db = NULL;
	struct ch c;
	size_t batch = opts->batch_bytes ? opts->batch_bytes : NF_PUSH_BATCH_BYTES;
	unsigned nstreams = opts->streams ? opts->streams : NF_PUSH_STREAMS;
	int rc;

	if (batch < 4096)
		batch = 4096;
	if (nstreams > 64)
		nstreams = 64;
	if (!stats)
		stats = &local;
	memset(stats, 0, sizeof(*stats));
	memset(&c, 0, sizeof(c));
	push_token(tok);
	if ((rc = nf_push_session_id(dir, id, sizeof(id), err)))
		return rc;
	if ((rc = nf_timeline_ensure(dir, dbpath, sizeof(dbpath), err)))
		return rc;
	if (sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		rc = nf_error_set(err, NF_EIO, "%s: %s", dbpath, db ? sqlite3_errmsg(db) : "cannot open");
		goto out;
	}
	if (!(s = malloc(sizeof(*s)))) {
		rc = nf_error_set(err, NF_ENOMEM, "push: out of memory");
		goto out;
	}
	/* units of batch/64 rowids: a batch or less for rows of 64 bytes or more
	 * in Native (the large tables'); small batches (tests) split small tables */
	uint64_t unit_rows = batch / 64 < PUSH_UNIT_ROWS ? batch / 64 : PUSH_UNIT_ROWS;
	if ((rc = load_schema(s, err)) || (rc = plan_units(db, s, unit_rows, &units, &nunits, nonempty, err)))
		goto out;
	size_t nurl;
	const char *const *urls = push_urls(opts, &nurl);
	const char *url = urls[0];
	if (nurl > 1) {
		/* the shard the Distributed tables' key cityHash64(session) sends it to (weights 1) */
		char ans[64];

		snprintf(q, sizeof(q), "SELECT cityHash64('%s') %% %zu", id, nurl);
		if ((rc = ch_open(&c, opts, url, err)) || (rc = ch_scalar(&c, q, ans, sizeof(ans), err)))
			goto out;
		ch_close(&c);
		memset(&c, 0, sizeof(c));
		url = urls[strtoull(ans, NULL, 10) % nurl];
	}
	if ((rc = ch_open(&c, opts, url, err)))
		goto out;
	/* 1. this push's own staging tables, one per table with rows, and the
	 *    sessions row's; the live version stays whole and listed meanwhile */
	for (int i = 0; i < s->ntables; i++) {
		if (!nonempty[i])
			continue;
		snprintf(q, sizeof(q), "CREATE TABLE `_stage_%s_%s` AS `%s%s`", tok, s->tables[i].name,
			 s->tables[i].name, c.sfx);
		made[i] = 1;
		if ((rc = ch_post(&c, q, NULL, 0, 1, err)))
			goto out;
	}
	snprintf(q, sizeof(q), "CREATE TABLE `_stage_%s_sessions` AS sessions%s", tok, c.sfx);
	made_sessions = 1;
	if ((rc = ch_post(&c, q, NULL, 0, 1, err)))
		goto out;
	/* 2. the rows, by several INSERT streams at once */
	if (nunits) {
		struct streams S;
		pthread_t th[64];
		unsigned nth = 0;

		memset(&S, 0, sizeof(S));
		S.opts = opts;
		S.s = s;
		S.url = url;
		S.dbpath = dbpath;
		S.id = id;
		S.tok = tok;
		S.batch = batch;
		S.units = units;
		S.nunits = nunits;
		nf_error_clear(&S.err);
		if (pthread_mutex_init(&S.mu, NULL)) {
			rc = nf_error_set(err, NF_ENOMEM, "push: cannot create a lock");
			goto out;
		}
		if (nstreams > nunits)
			nstreams = (unsigned)nunits;
		/* this thread is the first stream; the others run beside it */
		while (nth + 1 < nstreams && !pthread_create(&th[nth], NULL, stream_run, &S))
			nth++;
		stream_run(&S);
		for (unsigned i = 0; i < nth; i++)
			pthread_join(th[i], NULL);
		pthread_mutex_destroy(&S.mu);
		stats->rows = S.st.rows;
		stats->bytes = S.st.bytes;
		stats->batches = S.st.batches;
		if ((rc = S.rc)) {
			*err = S.err;
			goto out;
		}
	}
	stats->tables = (unsigned)s->ntables;
	if ((rc = push_sessions_row(&c, db, id, tok, stats->rows, err)))
		goto out;
	/* 3. unlist, swap each table's partition (or drop it: no rows now), list
	 *    again (complete) last; one push of a session at a time (swap_lock) */
	if ((rc = swap_lock(&c, id, tok, err)))
		goto out;
	locked = 1;
	snprintf(q, sizeof(q), "ALTER TABLE sessions%s DROP PARTITION '%s'", c.sfx, id);
	if ((rc = ch_post(&c, q, NULL, 0, 1, err)))
		goto out;
	for (int i = 0; i < s->ntables; i++) {
		if (nonempty[i])
			snprintf(q, sizeof(q), "ALTER TABLE `%s%s` REPLACE PARTITION '%s' FROM `_stage_%s_%s`",
				 s->tables[i].name, c.sfx, id, tok, s->tables[i].name);
		else
			snprintf(q, sizeof(q), "ALTER TABLE `%s%s` DROP PARTITION '%s'", s->tables[i].name, c.sfx, id);
		if ((rc = ch_post(&c, q, NULL, 0, 1, err)))
			goto out;
	}
	snprintf(q, sizeof(q), "ALTER TABLE sessions%s REPLACE PARTITION '%s' FROM `_stage_%s_sessions`", c.sfx, id, tok);
	if ((rc = ch_post(&c, q, NULL, 0, 1, err)))
		goto out;
out:
	/* 4. the staged parts are now shared with the live tables (or the push
	 *    failed): this push's staging tables go */
	/* a request that timed out or broke may still run on the server: then
	 * the lock stays until it is stale */
	if (c.curl && locked && (rc == 0 || rc == NF_ESQL))
		swap_unlock(&c, id, tok);
	if (c.curl)
		drop_stage(&c, s, made, made_sessions, tok);
	if (rc)
		nf_error_prefix(err, "%s", dir);
	ch_close(&c);
	free(units);
	free(s);
	sqlite3_close(db);
	return rc;
}

int nf_push_query(const struct nf_push_options *opts, const char *sql, const char *format,
		  FILE *out, struct nf_error *err)
{
	struct ch c;
	int rc;

	if ((rc = ch_open(&c, opts, opts->url, err)) == 0) {
		/* default_format applies when the SQL names no FORMAT itself;
		 * distributed_product_mode: JOINs of Distributed tables on session
		 * stay on each shard, where the session's rows all are */
		size_t l = strlen(c.base) + (format ? strlen(format) : 0) + 128;
		char *nb = malloc(l);
		if (!nb) {
			rc = nf_error_set(err, NF_ENOMEM, "push: out of memory");
		} else {
			/* wait_end_of_query: the server holds the answer (beyond 1 MiB
			 * in a file of its own) until the query has ended, so an error
			 * met after the first rows comes as an HTTP error, not as text
			 * after the rows of an HTTP 200 */
			snprintf(nb, l, "%swait_end_of_query=1&distributed_product_mode=local&output_format_json_quote_64bit_integers=0&%s%s%s", c.base,
				 format ? "default_format=" : "", format ? format : "", format ? "&" : "");
			free(c.base);
			c.base = nb;
		}
		c.out = out;
		if (!rc)
			rc = ch_post(&c, sql, NULL, 0, 1, err);
		if (!rc && fflush(out))
			rc = nf_error_set(err, NF_EIO, "writing the answer failed");
	}
	ch_close(&c);
	return rc;
}
