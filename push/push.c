/*
 * nftrace push: session timelines into ClickHouse over its HTTP interface
 * (libcurl, Native blocks streamed), and SQL over the store. Contract: include/nftrace/push.h.
 */
#include "nftrace/push.h"
#include "nftrace/timeline.h"

#include "timeline_sql.h"

#include <curl/curl.h>
#include <sqlite3.h>

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PUSH_ERRBODY_MAX (64u << 10) /* bytes of an error answer kept */
#define PUSH_MAX_COLS 64
#define PUSH_MAX_TABLES 96
#define PUSH_NAME_MAX 64

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
		snprintf(small, sizeof(small), "CREATE TABLE IF NOT EXISTS `_stage_%s` AS `%s%s`", t->name, t->name, c->sfx);
		rc = ch_post(c, small, NULL, 0, 1, err);
		if (!rc && cluster) {
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

#define PUSH_CHUNK (256u << 10) /* bytes encoded ahead of the socket */

/*
 * One table's rows streamed as INSERT bodies: the reader encodes rows from
 * the SELECT into a chunk of about PUSH_CHUNK bytes as curl asks for data,
 * so encoding overlaps the server's parsing and memory stays about one chunk.
 * An INSERT ends at the first row boundary past `batch` bytes.
 */
struct row_stream {
	sqlite3 *db;
	sqlite3_stmt *stmt;
	const struct push_table *t;
	const char *id;
	size_t idlen, batch, sent, pos;
	struct buf rows;    /* the next bytes of the body: whole Native blocks */
	struct buf col[PUSH_MAX_COLS + 1];   /* a block being built: values per column (0: session) */
	struct buf nulls[PUSH_MAX_COLS + 1]; /* and its null map (Nullable columns) */
	size_t brows, bbytes; /* rows and bytes in the block being built */
	int pending; /* a row stepped, not encoded yet */
	int done;    /* the SELECT is exhausted */
	int rc;      /* error inside the reader */
	char msg[200];
	struct nf_push_stats *st;
};

static int stream_step(struct row_stream *rs)
{
	int step = sqlite3_step(rs->stmt);

	if (step == SQLITE_ROW) {
		rs->pending = 1;
		return 0;
	}
	if (step == SQLITE_DONE) {
		rs->done = 1;
		return 0;
	}
	rs->rc = NF_ESQL;
	snprintf(rs->msg, sizeof(rs->msg), "table %s: %s", rs->t->name, sqlite3_errmsg(rs->db));
	return -1;
}

/* Appends the stepped row to the block's columns. */
static int encode_row(struct row_stream *rs)
{
	const struct push_table *t = rs->t;
	sqlite3_stmt *stmt = rs->stmt;
	size_t before = rs->col[0].n;
	int rc = buf_str(&rs->col[0], rs->id, rs->idlen);

	for (int k = 0; k < t->ncols && !rc; k++) {
		struct buf *b = &rs->col[k + 1];
		int null = sqlite3_column_type(stmt, k) == SQLITE_NULL;

		before += b->n;
		rc = buf_u8(&rs->nulls[k + 1], (unsigned)null);
		if (rc)
			break;
		/* a NULL still takes its place in the values: 0 or "" */
		if (t->cols[k].kind == COL_INT) {
			rc = buf_le(b, null ? 0 : (uint64_t)sqlite3_column_int64(stmt, k), 8);
		} else if (t->cols[k].kind == COL_REAL) {
			double d = null ? 0.0 : sqlite3_column_double(stmt, k);
			uint64_t u;
			memcpy(&u, &d, 8);
			rc = buf_le(b, u, 8);
		} else {
			const void *p = null ? (const void *)"" : (const void *)sqlite3_column_text(stmt, k);
			rc = buf_str(b, p ? p : "", null ? 0 : (size_t)sqlite3_column_bytes(stmt, k));
		}
	}
	if (rc) {
		rs->rc = NF_ENOMEM;
		snprintf(rs->msg, sizeof(rs->msg), "push: out of memory");
		return -1;
	}
	size_t after = 0;
	for (int k = 0; k <= t->ncols; k++)
		after += rs->col[k].n;
	rs->bbytes += after - before + (size_t)t->ncols;
	rs->brows++;
	rs->pending = 0;
	rs->st->rows++;
	return 0;
}

/*
 * Moves the block built so far into rs->rows as one Native block: column and
 * row counts, then per column its name, its type and its data (Nullable: the
 * null map, then the values).
 */
static int emit_block(struct row_stream *rs)
{
	const struct push_table *t = rs->t;
	struct buf *o = &rs->rows;
	int rc = buf_varint(o, (uint64_t)t->ncols + 1);

	rc = rc ? rc : buf_varint(o, rs->brows);
	rc = rc ? rc : buf_str(o, "session", 7);
	rc = rc ? rc : buf_str(o, "String", 6);
	rc = rc ? rc : buf_put(o, rs->col[0].p, rs->col[0].n);
	for (int k = 0; k < t->ncols && !rc; k++) {
		const char *ty = ch_type(t->cols[k].kind);

		rc = buf_str(o, t->cols[k].name, strlen(t->cols[k].name));
		rc = rc ? rc : buf_str(o, ty, strlen(ty));
		rc = rc ? rc : buf_put(o, rs->nulls[k + 1].p, rs->nulls[k + 1].n);
		rc = rc ? rc : buf_put(o, rs->col[k + 1].p, rs->col[k + 1].n);
	}
	for (int k = 0; k <= t->ncols; k++)
		rs->col[k].n = rs->nulls[k].n = 0;
	rs->brows = rs->bbytes = 0;
	if (rc) {
		rs->rc = NF_ENOMEM;
		snprintf(rs->msg, sizeof(rs->msg), "push: out of memory");
		return -1;
	}
	return 0;
}

#define PUSH_BLOCK_ROWS 65536

static size_t stream_read(char *p, size_t sz, size_t n, void *ud)
{
	struct row_stream *rs = ud;
	size_t cap = sz * n, out = 0;

	while (out < cap) {
		if (rs->pos < rs->rows.n) {
			size_t k = rs->rows.n - rs->pos < cap - out ? rs->rows.n - rs->pos : cap - out;
			memcpy(p + out, rs->rows.p + rs->pos, k);
			rs->pos += k;
			out += k;
			continue;
		}
		rs->rows.n = rs->pos = 0;
		if (rs->sent >= rs->batch || (rs->done && !rs->pending))
			break; /* end of this INSERT's body */
		while (rs->bbytes < PUSH_CHUNK && rs->sent + rs->bbytes < rs->batch &&
		       rs->brows < PUSH_BLOCK_ROWS) {
			if (!rs->pending && !rs->done && stream_step(rs))
				return CURL_READFUNC_ABORT;
			if (!rs->pending)
				break;
			if (encode_row(rs))
				return CURL_READFUNC_ABORT;
		}
		if (rs->brows && emit_block(rs))
			return CURL_READFUNC_ABORT;
		rs->sent += rs->rows.n;
		rs->st->bytes += rs->rows.n;
	}
	return out;
}

static int push_table(struct ch *c, sqlite3 *db, const struct push_table *t, const char *id,
		      size_t batch, struct nf_push_stats *st, struct nf_error *err)
{
	struct buf sel = { 0 }, ins = { 0 };
	struct row_stream rs = { 0 };
	char q[512];
	int rc = 0;

	snprintf(q, sizeof(q), "ALTER TABLE `_stage_%s` DROP PARTITION '%s'", t->name, id);
	if ((rc = ch_post(c, q, NULL, 0, 1, err)))
		return rc;
	rc = buf_put(&sel, "SELECT ", 7);
	snprintf(q, sizeof(q), "INSERT INTO `_stage_%s` (session", t->name);
	rc = rc ? rc : buf_put(&ins, q, strlen(q));
	for (int k = 0; k < t->ncols && !rc; k++) {
		char col[100];
		int l = snprintf(col, sizeof(col), "%s\"%s\"", k ? ", " : "", t->cols[k].name);
		rc = buf_put(&sel, col, (size_t)l);
		l = snprintf(col, sizeof(col), ", `%s`", t->cols[k].name);
		rc = rc ? rc : buf_put(&ins, col, (size_t)l);
	}
	snprintf(q, sizeof(q), " FROM \"%s\"", t->name);
	rc = rc ? rc : buf_put(&sel, q, strlen(q) + 1);
	rc = rc ? rc : buf_put(&ins, ") FORMAT Native", 16);
	if (rc) {
		rc = nf_error_set(err, NF_ENOMEM, "push: out of memory");
		goto out;
	}
	rs.db = db;
	rs.t = t;
	rs.id = id;
	rs.idlen = strlen(id);
	rs.batch = batch;
	rs.st = st;
	if (sqlite3_prepare_v2(db, (const char *)sel.p, -1, &rs.stmt, NULL) != SQLITE_OK) {
		rc = nf_error_set(err, NF_ESQL, "table %s: %s", t->name, sqlite3_errmsg(db));
		goto out;
	}
	for (;;) {
		struct nf_error e2;

		/* one INSERT per batch; none for an empty table or after the last row */
		if (!rs.pending && !rs.done && stream_step(&rs)) {
			rc = nf_error_set(err, rs.rc, "%s", rs.msg);
			break;
		}
		if (!rs.pending)
			break;
		rs.sent = 0;
		nf_error_clear(&e2);
		c->reader = stream_read;
		c->reader_ud = &rs;
		rc = ch_post(c, (const char *)ins.p, NULL, 0, 1, &e2);
		c->reader = NULL;
		st->batches++;
		if (rs.rc) {
			rc = nf_error_set(err, rs.rc, "%s", rs.msg);
			break;
		}
		if (rc) {
			rc = nf_error_set(err, e2.code, "%s", e2.msg);
			break;
		}
	}
out:
	sqlite3_finalize(rs.stmt);
	free(rs.rows.p);
	for (int k = 0; k <= PUSH_MAX_COLS; k++) {
		free(rs.col[k].p);
		free(rs.nulls[k].p);
	}
	free(sel.p);
	free(ins.p);
	return rc;
}

static const char *meta_get(char **keys, char **vals, int n, const char *k)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(keys[i], k))
			return vals[i];
	return "";
}

#define PUSH_META_MAX 256

static int push_sessions_row(struct ch *c, sqlite3 *db, const char *id, uint64_t nrows,
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
		else
			rc = ch_post(c, c->sfx[0] ? "INSERT INTO sessions_local (session, pushed_at, host, source, tool_version, seed, rows, "
				     "`meta.key`, `meta.value`) FORMAT RowBinary" : "INSERT INTO sessions (session, pushed_at, host, source, tool_version, seed, rows, "
				     "`meta.key`, `meta.value`) FORMAT RowBinary", b.p, b.n, 1, err);
	}
	for (int i = 0; i < n; i++) {
		free(keys[i]);
		free(vals[i]);
	}
	free(b.p);
	return rc;
}

int nf_push_session(const struct nf_push_options *opts, const char *dir,
		    struct nf_push_stats *stats, struct nf_error *err)
{
	struct nf_push_stats local = { 0 };
	struct push_schema *s = NULL;
	char id[NF_PUSH_ID_MAX + 1], dbpath[4200], q[512];
	sqlite3 *db = NULL;
	struct ch c;
	size_t batch = opts->batch_bytes ? opts->batch_bytes : NF_PUSH_BATCH_BYTES;
	int rc;

	if (batch < 4096)
		batch = 4096;
	if (!stats)
		stats = &local;
	memset(stats, 0, sizeof(*stats));
	memset(&c, 0, sizeof(c));
	if ((rc = nf_push_session_id(dir, id, sizeof(id), err)))
		return rc;
	if ((rc = nf_timeline_ensure(dir, dbpath, sizeof(dbpath), err)))
		return rc;
	if (sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		rc = nf_error_set(err, NF_EIO, "%s: %s", dbpath, db ? sqlite3_errmsg(db) : "cannot open");
		goto out;
	}
	if (!(s = malloc(sizeof(*s)))) {
		rc = nf_error_set(err, NF_ENOMEM, "push: out of memory");
		goto out;
	}
	if ((rc = load_schema(s, err)))
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
	/* 1. stage every table; the live version stays whole and listed meanwhile */
	for (int i = 0; i < s->ntables; i++) {
		if ((rc = push_table(&c, db, &s->tables[i], id, batch, stats, err)))
			goto out;
		stats->tables++;
	}
	/* 2. unlist, swap each table's partition, list again (complete) last */
	snprintf(q, sizeof(q), "ALTER TABLE sessions%s DROP PARTITION '%s'", c.sfx, id);
	if ((rc = ch_post(&c, q, NULL, 0, 1, err)))
		goto out;
	for (int i = 0; i < s->ntables; i++) {
		snprintf(q, sizeof(q), "ALTER TABLE `%s%s` REPLACE PARTITION '%s' FROM `_stage_%s`",
			 s->tables[i].name, c.sfx, id, s->tables[i].name);
		if ((rc = ch_post(&c, q, NULL, 0, 1, err)))
			goto out;
	}
	if ((rc = push_sessions_row(&c, db, id, stats->rows, err)))
		goto out;
	/* 3. the staged parts are now shared with the live tables: drop the staging copy */
	for (int i = 0; i < s->ntables; i++) {
		snprintf(q, sizeof(q), "ALTER TABLE `_stage_%s` DROP PARTITION '%s'", s->tables[i].name, id);
		if ((rc = ch_post(&c, q, NULL, 0, 1, err)))
			goto out;
	}
out:
	if (rc)
		nf_error_prefix(err, "%s", dir);
	ch_close(&c);
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
			snprintf(nb, l, "%sdistributed_product_mode=local&output_format_json_quote_64bit_integers=0&%s%s%s", c.base,
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
