/*
 * The timeline's read side: opening a timeline database as every reader does
 * (read-only, one snapshot), and what a session covers (the coverage table).
 * What a reader selects of it is select.c's.
 */
#include "contract/timeline.h"
#include "contract/errors.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int nf_sql_error(sqlite3 *db, struct nf_error *err, const char *fmt, ...)
{
	char what[NF_ERROR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return nf_error_set(err, NF_ESQL, "%s: %s", what, db ? sqlite3_errmsg(db) : "out of memory");
}

int nf_timeline_open_read(const char *path, sqlite3 **db, struct nf_error *err)
{
	struct stat sb;
	sqlite3_stmt *st;
	int ok, rc;

	*db = NULL;
	if (stat(path, &sb) != 0)
		return nf_error_set(err, errno == ENOENT ? NF_ENOENT : NF_EIO, "%s: %s", path,
				    strerror(errno));
	if (sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		rc = nf_error_set(err, NF_ESQL, "%s: cannot open: %s", path,
				  *db ? sqlite3_errmsg(*db) : "out of memory");
		goto out_close;
	}
	sqlite3_busy_timeout(*db, 10000); /* a blame or frames commit in progress: wait for it */
	/* A timeline file may come with a session from elsewhere (its session_key
	 * is computable by whoever ships it): it cannot be made to write itself
	 * (defensive), the functions registered on this connection are
	 * SQLITE_DIRECTONLY (no view or trigger of its own calls them), and every
	 * string read back is escaped where it goes (contract/escape.h). */
	sqlite3_db_config(*db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
	/* A file that is not a timeline gets a clear message instead of an SQL error. */
	if (sqlite3_prepare_v2(*db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
				    "name IN ('meta','queues','fence_ops','deps','anomalies',"
				    "'cpu_waits','cpu_signals','adapters','fences','fence_handles')",
			       -1, &st, NULL) != SQLITE_OK) {
		rc = nf_error_set(err, NF_EFORMAT, "%s: not a timeline database: %s", path,
				  sqlite3_errmsg(*db));
		goto out_close;
	}
	ok = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 10;
	sqlite3_finalize(st);
	if (!ok) {
		rc = nf_error_set(err, NF_EFORMAT,
				  "%s: not a timeline database (tables of schemas/timeline.sql missing)",
				  path);
		goto out_close;
	}
	if (sqlite3_exec(*db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
		rc = nf_error_set(err, NF_ESQL, "%s: %s", path, sqlite3_errmsg(*db));
		goto out_close;
	}
	return 0;
out_close:
	sqlite3_close(*db);
	*db = NULL;
	return rc;
}

void nf_coverage_free(struct nf_coverage *c)
{
	if (!c)
		return;
	free(c->spans);
	c->spans = NULL;
	c->n = 0;
}

int nf_timeline_coverage(sqlite3 *db, struct nf_coverage *c, struct nf_error *err)
{
	sqlite3_stmt *st = NULL;
	int64_t cur_id = -1;
	char cur_scope[16] = "";
	bool have_cur = false, cur_none = false;
	int64_t cur_last = 0;
	int rc = 0, src;

	memset(c, 0, sizeof(*c));
	if (sqlite3_prepare_v2(db, "SELECT scope, id, coalesce(log, ''), from_ns, to_ns, events, coalesce(detail, '') "
			       "FROM coverage ORDER BY scope, id, log, from_ns IS NULL, from_ns", -1, &st, NULL) != SQLITE_OK)
		return nf_error_set(err, NF_ESQL, "reading coverage: %s", sqlite3_errmsg(db));
	c->whole = true;
	while ((src = sqlite3_step(st)) == SQLITE_ROW) {
		struct nf_coverage_span *v = realloc(c->spans, (c->n + 1) * sizeof(*v));
		const char *scope = (const char *)sqlite3_column_text(st, 0);
		bool cpu;

		if (!v) {
			rc = nf_error_set(err, NF_ENOMEM, "reading coverage: out of memory");
			break;
		}
		c->spans = v;
		v += c->n++;
		memset(v, 0, sizeof(*v));
		snprintf(v->scope, sizeof(v->scope), "%s", scope ? scope : "");
		v->id = sqlite3_column_int64(st, 1);
		snprintf(v->log, sizeof(v->log), "%s", (const char *)sqlite3_column_text(st, 2));
		v->has_from = sqlite3_column_type(st, 3) != SQLITE_NULL;
		v->from_ns = sqlite3_column_int64(st, 3);
		v->to_ns = sqlite3_column_int64(st, 4);
		v->has_events = sqlite3_column_type(st, 5) != SQLITE_NULL;
		v->events = sqlite3_column_int64(st, 5);
		snprintf(v->detail, sizeof(v->detail), "%s", (const char *)sqlite3_column_text(st, 6));
		if (v->has_from && v->to_ns > c->end_ns)
			c->end_ns = v->to_ns;
		cpu = !strcmp(v->scope, "cpu") || !strcmp(v->scope, "etw_cpu");
		if (!cpu)
			continue;
		/* a CPU scope ends with its last span: its start counts */
		if (!have_cur || cur_id != v->id || strcmp(cur_scope, v->scope)) {
			if (have_cur && !cur_none && cur_last > c->whole_from_ns)
				c->whole_from_ns = cur_last;
			if (have_cur && cur_none)
				c->whole = false;
			have_cur = true;
			cur_id = v->id;
			snprintf(cur_scope, sizeof(cur_scope), "%s", v->scope);
			cur_none = false;
			c->cpus++;
		}
		if (!v->has_from)
			cur_none = true;
		else
			cur_last = v->from_ns;
	}
	if (rc == 0 && src != SQLITE_DONE)
		rc = nf_error_set(err, NF_ESQL, "reading coverage: %s", sqlite3_errmsg(db));
	sqlite3_finalize(st);
	if (have_cur && !cur_none && cur_last > c->whole_from_ns)
		c->whole_from_ns = cur_last;
	if (have_cur && cur_none)
		c->whole = false;
	if (!c->cpus)
		c->whole = false;
	return rc;
}
