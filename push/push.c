/*
 * nftrace push: session timelines into ClickHouse over its HTTP interface
 * (libcurl, Native blocks streamed), and SQL over the store. Contract:
 * include/contract/push.h; the pieces: push_int.h.
 */
#include "push_int.h"
#include "contract/session.h"
#include "contract/escape.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
	size_t file_len = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)b[i];
		if (ch < 0x20 || ch == 0x7f || ch == '\'' || ch == '\\' || ch == '`')
			return nf_error_set(err, NF_EINVAL, "%s: session name holds a control character, quote or backslash", dir);
		file_len += isalnum(ch) || ch == '_' ? 1 : 3;
	}
	/* the longest table named by the id, `_lock_ID_stale_TOKEN` (16 hex
	 * digits), as ClickHouse names its file: ID escaped, + ".sql.tmp" */
	if (file_len + 6 + 7 + 16 + 8 > 255)
		return nf_error_set(err, NF_EINVAL, "%s: session name too long for ClickHouse: %zu bytes once escaped "
				    "for a file name (letters, digits and '_' count 1, other bytes 3), at most %d",
				    dir, file_len, 255 - 6 - 7 - 16 - 8);
	memcpy(id, b, n);
	id[n] = '\0';
	return 0;
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
		rc = nf_push_buf_str(&b, id, strlen(id));
		rc = rc ? rc : nf_push_buf_le(&b, (uint64_t)(uint32_t)time(NULL), 4);
		for (size_t i = 0; i < 4 && !rc; i++) {
			const char *v = meta_get(keys, vals, n, facts[i]);
			rc = nf_push_buf_str(&b, v, strlen(v));
		}
		rc = rc ? rc : nf_push_buf_le(&b, nrows, 8);
		/* meta.key and meta.value: two arrays of n strings */
		rc = rc ? rc : nf_push_buf_varint(&b, (uint64_t)n);
		for (int i = 0; i < n && !rc; i++)
			rc = nf_push_buf_str(&b, keys[i], strlen(keys[i]));
		rc = rc ? rc : nf_push_buf_varint(&b, (uint64_t)n);
		for (int i = 0; i < n && !rc; i++)
			rc = nf_push_buf_str(&b, vals[i], strlen(vals[i]));
		if (rc)
			rc = nf_error_set(err, NF_ENOMEM, "push: out of memory");
		else {
			char q[256];

			snprintf(q, sizeof(q), "INSERT INTO `_stage_%s_sessions` (session, pushed_at, host, source, tool_version, "
				 "seed, rows, `meta.key`, `meta.value`) FORMAT RowBinary", tok);
			rc = nf_push_ch_post(c, q, b.p, b.n, 1, err);
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
		if (nf_push_ch_post(c, q, NULL, 0, 1, &e2))
			return;
	}
	if (made_sessions) {
		struct nf_error e2;

		nf_error_clear(&e2);
		snprintf(q, sizeof(q), "DROP TABLE IF EXISTS `_stage_%s_sessions`", tok);
		nf_push_ch_post(c, q, NULL, 0, 1, &e2);
	}
}


int nf_push_session(const struct nf_push_options *opts, const char *dir,
		    struct nf_push_stats *stats, struct nf_error *err)
{
	struct nf_push_stats local = { 0 };
	struct push_schema *s = NULL;
	char id[NF_PUSH_ID_MAX + 1], dbpath[4200], q[1024], tok[17], idq[2 * NF_PUSH_ID_MAX + 3];
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
	/* the id as ClickHouse's string literal (checked already: no quote, no backslash) */
	struct nf_esc_buf lit = { idq, sizeof(idq), 0, false };
	nf_esc_sql(id, strlen(id), NF_ESC_BACKSLASH, nf_esc_buf_write, &lit);
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
	if ((rc = nf_push_load_schema(s, err)) || (rc = plan_units(db, s, unit_rows, &units, &nunits, nonempty, err)))
		goto out;
	size_t nurl;
	const char *const *urls = nf_push_push_urls(opts, &nurl);
	const char *url = urls[0];
	if (nurl > 1) {
		/* the shard the Distributed tables' key cityHash64(session) sends it to (weights 1) */
		char ans[64];

		snprintf(q, sizeof(q), "SELECT cityHash64(%s) %% %zu", idq, nurl);
		if ((rc = nf_push_ch_open(&c, opts, url, err)) || (rc = nf_push_ch_scalar(&c, q, ans, sizeof(ans), err)))
			goto out;
		nf_push_ch_close(&c);
		memset(&c, 0, sizeof(c));
		url = urls[strtoull(ans, NULL, 10) % nurl];
	}
	if ((rc = nf_push_ch_open(&c, opts, url, err)))
		goto out;
	/* 1. this push's own staging tables, one per table with rows, and the
	 *    sessions row's; the live version stays whole and listed meanwhile */
	for (int i = 0; i < s->ntables; i++) {
		if (!nonempty[i])
			continue;
		snprintf(q, sizeof(q), "CREATE TABLE `_stage_%s_%s` AS `%s%s`", tok, s->tables[i].name,
			 s->tables[i].name, c.sfx);
		made[i] = 1;
		if ((rc = nf_push_ch_post(&c, q, NULL, 0, 1, err)))
			goto out;
	}
	snprintf(q, sizeof(q), "CREATE TABLE `_stage_%s_sessions` AS sessions%s", tok, c.sfx);
	made_sessions = 1;
	if ((rc = nf_push_ch_post(&c, q, NULL, 0, 1, err)))
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
		while (nth + 1 < nstreams && !pthread_create(&th[nth], NULL, nf_push_stream_run, &S))
			nth++;
		nf_push_stream_run(&S);
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
	 *    again (complete) last; one push of a session at a time (nf_push_swap_lock) */
	if ((rc = nf_push_swap_lock(&c, id, tok, err)))
		goto out;
	locked = 1;
	snprintf(q, sizeof(q), "ALTER TABLE sessions%s DROP PARTITION %s", c.sfx, idq);
	if ((rc = nf_push_ch_post(&c, q, NULL, 0, 1, err)))
		goto out;
	for (int i = 0; i < s->ntables; i++) {
		if (nonempty[i])
			snprintf(q, sizeof(q), "ALTER TABLE `%s%s` REPLACE PARTITION %s FROM `_stage_%s_%s`",
				 s->tables[i].name, c.sfx, idq, tok, s->tables[i].name);
		else
			snprintf(q, sizeof(q), "ALTER TABLE `%s%s` DROP PARTITION %s", s->tables[i].name, c.sfx, idq);
		if ((rc = nf_push_ch_post(&c, q, NULL, 0, 1, err)))
			goto out;
	}
	snprintf(q, sizeof(q), "ALTER TABLE sessions%s REPLACE PARTITION %s FROM `_stage_%s_sessions`", c.sfx, idq, tok);
	if ((rc = nf_push_ch_post(&c, q, NULL, 0, 1, err)))
		goto out;
out:
	/* 4. the staged parts are now shared with the live tables (or the push
	 *    failed): this push's staging tables go */
	/* a request that timed out or broke may still run on the server: then
	 * the lock stays until it is stale */
	if (c.curl && locked && (rc == 0 || rc == NF_ESQL))
		nf_push_swap_unlock(&c, id, tok);
	if (c.curl)
		drop_stage(&c, s, made, made_sessions, tok);
	if (rc)
		nf_error_prefix(err, "%s", dir);
	nf_push_ch_close(&c);
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

	if ((rc = nf_push_ch_open(&c, opts, opts->url, err)) == 0) {
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
		c.out_text = opts->answer_text;
		if (!rc)
			rc = nf_push_ch_post(&c, sql, NULL, 0, 1, err);
		if (!rc && fflush(out))
			rc = nf_error_set(err, NF_EIO, "writing the answer failed");
	}
	nf_push_ch_close(&c);
	return rc;
}
