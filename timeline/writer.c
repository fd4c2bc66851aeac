/*
 * The timeline's writer: the one place a timeline database is opened for a
 * build, given its schema and views, its common facts and its SQL error
 * messages (contract/timeline_writer.h). Importers load their rows through it.
 */
#include "contract/timeline_writer.h"
#include "contract/timeline.h"
#include "nftrace/events.h"

#include "timeline_sql.h"
#include "timeline_views_sql.h"

#include <inttypes.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

int nf_writer_sql_error(sqlite3 *db, const char *who, const char *what, struct nf_error *err)
{
	return nf_sql_error(db, err, "timeline: %s: %s", who, what); /* the one format (contract/timeline.h) */
}

int nf_writer_exec(sqlite3 *db, const char *who, const char *sql, struct nf_error *err)
{
	char *msg = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		nf_error_set(err, NF_ESQL, "timeline: %s: %s", who, msg ? msg : sqlite3_errmsg(db));
		sqlite3_free(msg);
		return NF_ESQL;
	}
	return 0;
}

int nf_writer_step(sqlite3 *db, sqlite3_stmt *s, const char *who, const char *what, struct nf_error *err)
{
	int rc = sqlite3_step(s);

	sqlite3_reset(s); /* the bindings stay: a caller binds every parameter, or clears them */
	if (rc != SQLITE_DONE)
		return nf_writer_sql_error(db, who, what, err);
	return 0;
}

int nf_writer_open(const char *db_path, sqlite3 **db, struct nf_error *err)
{
	*db = NULL;
	/* One thread uses this connection: no per-call mutex. */
	if (sqlite3_open_v2(db_path, db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		int rc = nf_error_set(err, NF_ESQL, "%s: %s", db_path, *db ? sqlite3_errmsg(*db) : "cannot open");

		sqlite3_close(*db);
		*db = NULL;
		return rc;
	}
	/*
	 * A throwaway file until renamed: no journal, no syncs, a bounded page
	 * cache (the importers' own buffers are bounded too: peak memory does not
	 * grow with the session); 64 KiB pages load and scan faster than smaller ones.
	 */
	if (sqlite3_exec(*db,
			 "PRAGMA page_size = 65536; "
			 "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; "
			 "PRAGMA temp_store = FILE; PRAGMA cache_size = -32768; "
			 "PRAGMA temp.cache_size = -8192;",
			 NULL, NULL, NULL) != SQLITE_OK) {
		int rc = nf_error_set(err, NF_ESQL, "%s: %s", db_path, sqlite3_errmsg(*db));

		sqlite3_close(*db);
		*db = NULL;
		return rc;
	}
	return 0;
}

int nf_writer_begin(sqlite3 *db, const char *who, struct nf_error *err)
{
	if (nf_writer_exec(db, who, "BEGIN", err))
		return NF_ESQL;
	return nf_writer_exec(db, who, nf_timeline_sql, err);
}

int nf_writer_views(sqlite3 *db, const char *who, struct nf_error *err)
{
	return nf_writer_exec(db, who, nf_timeline_views_sql, err);
}

int nf_writer_commit(sqlite3 *db, const char *who, struct nf_error *err)
{
	return nf_writer_exec(db, who, "COMMIT", err);
}

int nf_writer_close(sqlite3 *db, const char *db_path, int rc, struct nf_error *err)
{
	if (db && sqlite3_close(db) != SQLITE_OK && rc == 0)
		rc = nf_error_set(err, NF_ESQL, "%s: closing failed", db_path);
	return rc;
}

int nf_writer_meta(sqlite3 *db, const char *key, const char *value, struct nf_error *err)
{
	sqlite3_stmt *s = NULL;
	int rc;

	if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)", -1, &s, NULL) !=
	    SQLITE_OK)
		return nf_writer_sql_error(db, "meta", key, err);
	sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, value, -1, SQLITE_STATIC);
	rc = nf_writer_step(db, s, "meta", key, err);
	sqlite3_finalize(s);
	return rc;
}

int nf_writer_meta_int(sqlite3 *db, const char *key, int64_t value, struct nf_error *err)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRId64, value);
	return nf_writer_meta(db, key, buf, err);
}

int nf_writer_session_meta(sqlite3 *db, const struct nf_writer_session *s, struct nf_error *err)
{
	char buf[64];
	struct timespec now;
	int rc;

	rc = nf_writer_meta_int(db, "schema_version", NF_SCHEMA_VERSION, err);
	rc = rc ? rc : nf_writer_meta_int(db, "timeline_version", NF_TIMELINE_VERSION, err);
	if (s->has_recorded_schema)
		rc = rc ? rc : nf_writer_meta_int(db, "recorded_schema_version", s->recorded_schema, err);
	snprintf(buf, sizeof(buf), "%" PRIu64, s->cpu_frequency);
	rc = rc ? rc : nf_writer_meta(db, "cpu_frequency", buf, err);
	snprintf(buf, sizeof(buf), "%" PRIu64, s->start_ticks);
	rc = rc ? rc : nf_writer_meta(db, "start_ticks", buf, err);
	rc = rc ? rc : nf_writer_meta_int(db, "duration_ns", s->duration_ns, err);
	rc = rc ? rc : nf_writer_meta(db, "source", s->source, err);
	rc = rc ? rc : nf_writer_meta(db, "mode", s->mode, err);
	if (s->has_seed) {
		snprintf(buf, sizeof(buf), "%" PRIu64, s->seed);
		rc = rc ? rc : nf_writer_meta(db, "seed", buf, err);
	}
	rc = rc ? rc : nf_writer_meta(db, "tool_version", s->tool_version, err);
	rc = rc ? rc : nf_writer_meta(db, "host", s->host, err);
	rc = rc ? rc : nf_writer_meta_int(db, "ground_truth", s->ground_truth, err);
	/* Which build made this file: tells two analyses of one session apart. */
	clock_gettime(CLOCK_REALTIME, &now);
	snprintf(buf, sizeof(buf), "%ld-%lld.%09ld", (long)getpid(), (long long)now.tv_sec, (long)now.tv_nsec);
	rc = rc ? rc : nf_writer_meta(db, "build_id", buf, err);
	return rc;
}

int nf_writer_deps_reasons(sqlite3 *db, const char *who, const char *otherwise, struct nf_error *err)
{
	static const char sql[] =
		"UPDATE deps SET reason = CASE "
		"  WHEN EXISTS (SELECT 1 FROM anomalies a WHERE a.kind IN ('lost', 'kernel_lost', 'etw_lost') "
		"    AND a.first_ns <= w.end_ns) THEN 'lost' "
		"  WHEN EXISTS (SELECT 1 FROM (SELECT DISTINCT scope, id, log FROM coverage WHERE scope IN ('cpu', 'etw_cpu')) s "
		"    WHERE NOT EXISTS ("
		"    SELECT 1 FROM coverage c WHERE c.scope = s.scope AND c.id IS s.id AND c.log IS s.log "
		"    AND c.from_ns <= coalesce(w.observed_ns, w.queued_ns, w.end_ns) AND c.to_ns >= w.end_ns)) "
		"    THEN 'not_covered' "
		"  ELSE ?1 END "
		"FROM fence_ops w WHERE w.id = deps.wait_id AND deps.reason = 'no_signal'";
	sqlite3_stmt *s = NULL;
	int rc;

	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
		return nf_writer_sql_error(db, who, "deps reasons", err);
	sqlite3_bind_text(s, 1, otherwise, -1, SQLITE_STATIC);
	rc = nf_writer_step(db, s, who, "deps reasons", err);
	sqlite3_finalize(s);
	return rc;
}
