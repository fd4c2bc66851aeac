/*
 * Session-level entry points of the analyzer: nf_timeline_build() runs the
 * parser over a session into a fresh database file that replaces the old one
 * atomically, nf_timeline_ensure() rebuilds DIR/.timeline.db only when it is
 * missing, stale or of another version (under a lock, so concurrent callers
 * analyse once), and nf_query_run() queries sessions through them.
 */
#include "builder.h"
#include "pipeline.h"
#include "nftrace/etwsession.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

struct build_ctx {
	struct nf_timeline_builder *b;
	struct nf_error *err;
};

static int cb_event(void *ctx, const struct nf_event *ev)
{
	struct build_ctx *c = ctx;

	return nf_timeline_builder_feed_event(c->b, ev, c->err);
}

static int cb_entry(void *ctx, const struct nf_decoded_entry *e)
{
	struct build_ctx *c = ctx;

	return nf_timeline_builder_feed_entry(c->b, e, c->err);
}

static int cb_finding(void *ctx, const struct nf_finding *f)
{
	struct build_ctx *c = ctx;

	return nf_timeline_builder_feed_finding(c->b, f, c->err);
}

static int build_into(const char *session_dir, const char *tmp_path, struct nf_error *err)
{
	struct nf_parser *p = NULL;
	struct nf_timeline_builder *b = NULL;
	sqlite3 *db = NULL;
	int rc;

	/* An imported Windows ETW capture: its own reader and mapping. */
	if (nf_etw_session_is(session_dir))
		return nf_etw_build_timeline(session_dir, tmp_path, err);
	rc = nf_parser_open(session_dir, &p, err);
	if (rc)
		return rc;
	/* One thread uses this connection: no per-call mutex. */
	if (sqlite3_open_v2(tmp_path, &db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		rc = nf_error_set(err, NF_ESQL, "%s: %s", tmp_path,
				  db ? sqlite3_errmsg(db) : "cannot open");
		goto out_close;
	}
	/*
	 * A throwaway file until renamed: no journal, no syncs, a bounded page
	 * cache (the builder's own buffers are bounded too: peak memory does not
	 * grow with the session); 64 KiB pages load and scan faster than smaller ones.
	 */
	if (sqlite3_exec(db,
			 "PRAGMA page_size = 65536; "
			 "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; "
			 "PRAGMA temp_store = FILE; PRAGMA cache_size = -32768; "
			 "PRAGMA temp.cache_size = -8192;",
			 NULL, NULL, NULL) != SQLITE_OK) {
		rc = nf_error_set(err, NF_ESQL, "%s: %s", tmp_path, sqlite3_errmsg(db));
		goto out_close;
	}
	b = nf_timeline_builder_create(db, nf_parser_info(p), err);
	if (!b) {
		rc = err && err->code ? err->code : NF_ENOMEM;
		goto out_close;
	}
	struct build_ctx ctx = { b, err };
	struct nf_parser_callbacks cb = { &ctx, cb_event, cb_entry, cb_finding };

	/* The parser reads and replays on its own thread while the builder matches. */
	rc = nf_parser_run_pipelined(p, &cb, err);
	rc = rc ? rc : nf_timeline_builder_finish(b, err);
out_close:
	nf_timeline_builder_destroy(b);
	if (db && sqlite3_close(db) != SQLITE_OK && rc == 0)
		rc = nf_error_set(err, NF_ESQL, "%s: closing failed", tmp_path);
	nf_parser_destroy(p);
	return rc;
}

int nf_timeline_build(const char *session_dir, const char *db_path, struct nf_error *err)
{
	size_t n = strlen(db_path);
	char *tmp = malloc(n + 32), *dir = strdup(db_path), *slash;
	int fd, rc;

	if (!tmp || !dir) {
		rc = nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
		goto out_free;
	}
	/*
	 * The build goes to a hidden temporary next to the database: babeltrace2
	 * skips hidden files, so the parser reads the session directory itself
	 * while the database (and the builder's spill files) sit in it.
	 */
	slash = strrchr(dir, '/');
	if (slash) {
		*slash = '\0';
		snprintf(tmp, n + 32, "%s/.%s.tmp.XXXXXX", slash == dir ? "" : dir, slash + 1);
	} else {
		snprintf(tmp, n + 32, ".%s.tmp.XXXXXX", db_path);
	}
	fd = mkstemp(tmp);
	if (fd < 0) {
		rc = nf_error_set(err, NF_EIO, "%s: cannot create: %s", tmp, strerror(errno));
		goto out_free;
	}
	close(fd);
	rc = build_into(session_dir, tmp, err);
	if (rc == 0 && rename(tmp, db_path) != 0)
		rc = nf_error_set(err, NF_EIO, "%s: cannot rename to %s: %s", tmp, db_path,
				  strerror(errno));
	if (rc)
		unlink(tmp);
out_free:
	free(tmp);
	free(dir);
	return rc;
}

/* Newest mtime among the trace files under dir (not the database, not dot files). */
static void newest_trace_mtime(const char *dir, int depth, struct timespec *newest)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d)) != NULL) {
		char path[4096];
		struct stat st;

		if (de->d_name[0] == '.' ||
		    strncmp(de->d_name, NF_TIMELINE_DB_NAME, strlen(NF_TIMELINE_DB_NAME)) == 0)
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path))
			continue;
		if (stat(path, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			if (depth > 0)
				newest_trace_mtime(path, depth - 1, newest);
			continue;
		}
		if (!S_ISREG(st.st_mode))
			continue;
		if (st.st_mtim.tv_sec > newest->tv_sec ||
		    (st.st_mtim.tv_sec == newest->tv_sec && st.st_mtim.tv_nsec > newest->tv_nsec))
			*newest = st.st_mtim;
	}
	closedir(d);
}

static bool meta_matches(const char *db_path)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	int found = 0;

	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		goto out;
	if (sqlite3_prepare_v2(db,
			       "SELECT key, value FROM meta WHERE key IN "
			       "('schema_version', 'timeline_version')", -1, &s, NULL) != SQLITE_OK)
		goto out;
	while (sqlite3_step(s) == SQLITE_ROW) {
		const char *k = (const char *)sqlite3_column_text(s, 0);
		long long v = sqlite3_column_int64(s, 1);

		if (k && strcmp(k, "schema_version") == 0 && v == NF_SCHEMA_VERSION)
			found |= 1;
		if (k && strcmp(k, "timeline_version") == 0 && v == NF_TIMELINE_VERSION)
			found |= 2;
	}
out:
	sqlite3_finalize(s);
	sqlite3_close(db);
	return found == 3;
}

static bool db_is_fresh(const char *session_dir, const char *db_path)
{
	struct timespec newest = { 0, 0 };
	struct stat st;

	/* lstat: a planted symlink is never read nor written through; the
	 * rebuild's rename() replaces the link itself. */
	if (lstat(db_path, &st) != 0 || !S_ISREG(st.st_mode))
		return false;
	newest_trace_mtime(session_dir, 2, &newest);
	if (st.st_mtim.tv_sec < newest.tv_sec ||
	    (st.st_mtim.tv_sec == newest.tv_sec && st.st_mtim.tv_nsec < newest.tv_nsec))
		return false;
	return meta_matches(db_path);
}

int nf_timeline_ensure(const char *session_dir, char *db_path, size_t db_path_len,
		       struct nf_error *err)
{
	char lock_path[4096];
	struct stat st;
	int fd, rc = 0;

	if (stat(session_dir, &st) != 0)
		return nf_error_set(err, NF_ENOENT, "%s: no such session directory", session_dir);
	if (!S_ISDIR(st.st_mode))
		return nf_error_set(err, NF_ENOENT, "%s: not a directory (a session is a directory)",
				    session_dir);
	if ((size_t)snprintf(db_path, db_path_len, "%s/%s", session_dir, NF_TIMELINE_DB_NAME) >=
	    db_path_len)
		return nf_error_set(err, NF_EINVAL, "%s: path too long", session_dir);
	if ((size_t)snprintf(lock_path, sizeof(lock_path), "%s/%s", session_dir,
			     NF_TIMELINE_LOCK_NAME) >= sizeof(lock_path))
		return nf_error_set(err, NF_EINVAL, "%s: path too long", session_dir);
	fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return nf_error_set(err, NF_EIO, "%s: %s", lock_path,
				    errno == ELOOP ? "is a symbolic link (not following it)" : strerror(errno));
	while (flock(fd, LOCK_EX) != 0) {
		if (errno != EINTR) {
			rc = nf_error_set(err, NF_EIO, "%s: lock: %s", lock_path, strerror(errno));
			goto out_close;
		}
	}
	if (!db_is_fresh(session_dir, db_path))
		rc = nf_timeline_build(session_dir, db_path, err);
	flock(fd, LOCK_UN);
out_close:
	close(fd);
	return rc;
}

int nf_query_run(const struct nf_query_options *opts, const char *sql, FILE *out,
		 struct nf_error *err)
{
	char **paths;
	int rc = 0;

	if (!opts || opts->n_sessions == 0)
		return nf_error_set(err, NF_EINVAL, "query: no session given");
	paths = calloc(opts->n_sessions, sizeof(*paths));
	if (!paths)
		return nf_error_set(err, NF_ENOMEM, "query: out of memory");
	for (size_t i = 0; i < opts->n_sessions && rc == 0; i++) {
		size_t len = strlen(opts->sessions[i]) + sizeof(NF_TIMELINE_DB_NAME) + 2;

		paths[i] = malloc(len);
		if (!paths[i])
			rc = nf_error_set(err, NF_ENOMEM, "query: out of memory");
		else
			rc = nf_timeline_ensure(opts->sessions[i], paths[i], len, err);
	}
	if (rc == 0)
		rc = nf_query_run_dbs((const char *const *)paths, opts->n_sessions, opts->format,
				      sql, out, err);
	for (size_t i = 0; i < opts->n_sessions; i++)
		free(paths[i]);
	free(paths);
	return rc;
}
