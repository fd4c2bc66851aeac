/* push/: the store's tables, generated from the embedded schemas/timeline.sql (push_int.h). */
#include "push_int.h"

#include "timeline_sql.h"

#include <stdlib.h>
#include <string.h>

/* ---- schema from the embedded timeline.sql ---- */

static enum col_kind kind_of(const char *decl)
{
	if (decl && strstr(decl, "INT"))
		return COL_INT;
	if (decl && (strstr(decl, "REAL") || strstr(decl, "FLOA") || strstr(decl, "DOUB")))
		return COL_REAL;
	return COL_TEXT;
}

int nf_push_load_schema(struct push_schema *s, struct nf_error *err)
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


/* ---- DDL ---- */

const char *nf_push_ch_type(enum col_kind k)
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
	if ((rc = nf_push_ch_post(c, small, NULL, 0, 0, err)))
		return rc;
	for (int i = 0; i < s->ntables && !rc; i++) {
		const struct push_table *t = &s->tables[i];
		char tail[256];

		q.n = 0;
		rc = nf_push_buf_put(&q, "CREATE TABLE IF NOT EXISTS `", 28);
		rc = rc ? rc : nf_push_buf_put(&q, t->name, strlen(t->name));
		rc = rc ? rc : nf_push_buf_put(&q, c->sfx, strlen(c->sfx));
		rc = rc ? rc : nf_push_buf_put(&q, "` (session String", 17);
		for (int k = 0; k < t->ncols && !rc; k++) {
			char col[160];
			int l = snprintf(col, sizeof(col), ", `%s` %s", t->cols[k].name, nf_push_ch_type(t->cols[k].kind));
			rc = nf_push_buf_put(&q, col, (size_t)l);
		}
		if (t->time_col >= 0)
			snprintf(tail, sizeof(tail), ") ENGINE = MergeTree PARTITION BY session ORDER BY (session, ifNull(`%s`, 0))",
				 t->cols[t->time_col].name);
		else
			snprintf(tail, sizeof(tail), ") ENGINE = MergeTree PARTITION BY session ORDER BY session");
		rc = rc ? rc : nf_push_buf_put(&q, tail, strlen(tail) + 1);
		if (rc) {
			rc = nf_error_set(err, NF_ENOMEM, "push: out of memory");
			break;
		}
		if ((rc = nf_push_ch_post(c, (const char *)q.p, NULL, 0, 1, err)))
			break;
		if (cluster) {
			/* the table readers query: over every shard's local table, spread by session */
			snprintf(small, sizeof(small), "CREATE TABLE IF NOT EXISTS `%s` AS `%s_local` ENGINE = "
				 "Distributed(`%s`, `%s`, `%s_local`, cityHash64(session))", t->name, t->name,
				 cluster, c->db, t->name);
			rc = nf_push_ch_post(c, small, NULL, 0, 1, err);
		}
	}
	free(q.p);
	if (!rc) {
		snprintf(small, sizeof(small), "CREATE TABLE IF NOT EXISTS sessions%s (session String, pushed_at DateTime, "
			 "host String, source String, tool_version String, seed String, rows UInt64, "
			 "meta Nested(key String, value String)) "
			 "ENGINE = MergeTree PARTITION BY session ORDER BY session", c->sfx);
		rc = nf_push_ch_post(c, small, NULL, 0, 1, err);
	}
	if (!rc && cluster) {
		snprintf(small, sizeof(small), "CREATE TABLE IF NOT EXISTS sessions AS sessions_local ENGINE = "
			 "Distributed(`%s`, `%s`, sessions_local, cityHash64(session))", cluster, c->db);
		rc = nf_push_ch_post(c, small, NULL, 0, 1, err);
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
	if ((rc = nf_push_ch_post(c, q, NULL, 0, 0, err)))
		return rc;
	if (nf_push_buf_put(&names, c->errbody.p, c->errbody.n) || nf_push_buf_u8(&names, 0))
		rc = nf_error_set(err, NF_ENOMEM, "push: out of memory");
	for (char *line = (char *)names.p, *nl; !rc && line && *line; line = nl) {
		nl = strchr(line, '\n');
		if (nl)
			*nl++ = '\0';
		if (!*line || strchr(line, '`') || strchr(line, '\\') || strlen(line) > 200)
			continue; /* not a name this program made */
		snprintf(q, sizeof(q), "DROP TABLE IF EXISTS `%s`", line);
		rc = nf_push_ch_post(c, q, NULL, 0, 1, err);
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
	const char *const *urls = nf_push_push_urls(opts, &n);

	rc = nf_push_load_schema(s, err);
	for (size_t i = 0; i < n && !rc; i++) {
		rc = nf_push_ch_open(&c, opts, urls[i], err);
		if (!rc && opts->cluster) {
			/* each URL must be that shard of the cluster, as the server knows it */
			char q[256], ans[64];

			snprintf(q, sizeof(q), "SELECT count() FROM system.clusters WHERE cluster = '%s' AND replica_num = 1",
				 opts->cluster);
			rc = nf_push_ch_scalar(&c, q, ans, sizeof(ans), err);
			if (!rc && strtoull(ans, NULL, 10) != n)
				rc = nf_error_set(err, NF_EINVAL, "%s: cluster '%s' has %s shards there, %zu URLs given "
						  "(give one --clickhouse URL per shard, in shard order)",
						  c.shown, opts->cluster, ans, n);
		}
		rc = rc ? rc : create_tables(&c, s, opts->cluster, err);
		rc = rc ? rc : drop_stale_stage(&c, err);
		nf_push_ch_close(&c);
	}
	free(s);
	return rc;
}
