/*
 * Session-level entry points of the analyzer: nf_timeline_build() runs the
 * parser over a session into a fresh database file that replaces the old one
 * atomically, nf_timeline_ensure() rebuilds DIR/.timeline.db only when it is
 * missing, stale or of another version (under a lock, so concurrent callers
 * analyse once), and nf_query_run() queries sessions through them.
 */
#include "contract/session.h"
#include "ctf/builder.h"
#include "contract/errors.h"
#include "ctf/pipeline.h"
#include "contract/etwsession.h"
#include "importers_int.h"
#include "kernel/kernel_ingest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- streams of CTF sessions that other importers read ---------------------- */

static int kernel_stream_event(void **state, sqlite3 *db, struct nf_bulk *bulk, int64_t ns,
			       const struct nf_event *ev, struct nf_error *err)
{
	return nf_timeline_kernel_ingest_event((struct nf_timeline_kernel_ingest **)state, db, bulk, ns, ev, err);
}

static int kernel_stream_finish(void *state, struct nf_error *err)
{
	return nf_timeline_kernel_ingest_finish(state, err);
}

static void kernel_stream_destroy(void *state)
{
	nf_timeline_kernel_ingest_destroy(state);
}

static const struct nf_importer_stream streams[] = {
	{ NF_STREAM_KERNEL, kernel_stream_event, kernel_stream_finish, kernel_stream_destroy },
};

const struct nf_importer_stream *nf_importers_stream(enum nf_stream_id stream)
{
	for (size_t i = 0; i < sizeof(streams) / sizeof(streams[0]); i++)
		if (streams[i].stream == stream)
			return &streams[i];
	return NULL;
}

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

/* Records what the session was when this build began (nf_timeline_ensure compares it). */
static int put_session_key(sqlite3 *db, const char *tmp_path, const char *key, struct nf_error *err)
{
	sqlite3_stmt *s = NULL;
	int rc = 0;

	if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO meta(key, value) VALUES ('session_key', ?1)", -1, &s,
			       NULL) != SQLITE_OK ||
	    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC) != SQLITE_OK || sqlite3_step(s) != SQLITE_DONE)
		rc = nf_error_set(err, NF_ESQL, "%s: %s", tmp_path, sqlite3_errmsg(db));
	sqlite3_finalize(s);
	return rc;
}

/* An imported Windows ETW capture: its own reader and mapping, then the key
 * (without it every command would rebuild the timeline). */
static int build_etw(const char *session_dir, const char *tmp_path, const char *key, struct nf_error *err)
{
	sqlite3 *db = NULL;
	int rc = nf_etw_build_timeline(session_dir, tmp_path, err);

	if (rc || !key)
		return rc;
	if (sqlite3_open_v2(tmp_path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
		rc = nf_error_set(err, NF_ESQL, "%s: %s", tmp_path, db ? sqlite3_errmsg(db) : "cannot open");
	else
		rc = put_session_key(db, tmp_path, key, err);
	if (db && sqlite3_close(db) != SQLITE_OK && rc == 0)
		rc = nf_error_set(err, NF_ESQL, "%s: closing failed", tmp_path);
	return rc;
}

static int build_into(const char *session_dir, const char *tmp_path, const char *key,
		      struct nf_error *err)
{
	struct nf_parser *p = NULL;
	struct nf_timeline_builder *b = NULL;
	sqlite3 *db = NULL;
	int rc;

	if (nf_etw_session_is(session_dir))
		return build_etw(session_dir, tmp_path, key, err);
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
	rc = nf_timeline_run_pipelined(p, &cb, err);
	rc = rc ? rc : nf_timeline_builder_finish(b, err);
	if (!rc && key)
		rc = put_session_key(db, tmp_path, key, err);
	if (rc == NF_ESQL && err && !strstr(err->msg, tmp_path))
		/* disk full and the like: say which file */
		nf_error_prefix(err, "%s", tmp_path);
out_close:
	nf_timeline_builder_destroy(b);
	if (db && sqlite3_close(db) != SQLITE_OK && rc == 0)
		rc = nf_error_set(err, NF_ESQL, "%s: closing failed", tmp_path);
	nf_parser_destroy(p);
	return rc;
}

/*
 * What the session is, for the timeline cache: a 64-bit FNV-1a over the names,
 * kinds and sizes of its visible entries (in name order) and the content of
 * each plain file's first and last 64 KiB (the whole metadata, with its UUID,
 * and every stream's first and last packets, whose headers carry the UUID).
 * Unlike modification times it does not go back in time when older copies
 * replace the files (cp -p, rsync -a, tar x), and it changes when a stream
 * grows. Returns 0, or -1 when the directory cannot be listed.
 */
#define NF_KEY_SPAN (64u * 1024u)

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static uint64_t file_hash(uint64_t h, const char *path, const struct stat *st, unsigned char *buf)
{
	int fd;

	if (!S_ISREG(st->st_mode))
		return h;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return fnv(h, "?", 1);
	for (int part = 0; part < 2; part++) {
		off_t from = part == 0 ? 0 : st->st_size - (off_t)NF_KEY_SPAN;
		size_t got = 0;

		if (part == 1 && st->st_size <= (off_t)NF_KEY_SPAN)
			break;
		if (from < (off_t)NF_KEY_SPAN && part == 1)
			from = NF_KEY_SPAN;
		while (got < NF_KEY_SPAN) {
			ssize_t n = pread(fd, buf + got, NF_KEY_SPAN - got, from + (off_t)got);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			got += (size_t)n;
		}
		h = fnv(h, buf, got);
	}
	close(fd);
	return h;
}

static int session_key(const char *dir, char *key, size_t key_len)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **names = NULL, path[4200];
	size_t n = 0, cap = 0;
	uint64_t h = 0xcbf29ce484222325ull, total = 0;
	unsigned char *buf = NULL;
	int rc = -1;

	if (!d)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 16;
			char **v = realloc(names, nc * sizeof(*v));

			if (!v)
				goto out;
			names = v;
			cap = nc;
		}
		if (!(names[n] = strdup(de->d_name)))
			goto out;
		n++;
	}
	if (n)
		qsort(names, n, sizeof(*names), name_cmp);
	if (!(buf = malloc(NF_KEY_SPAN)))
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		uint64_t meta[2];

		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, names[i]) >= sizeof(path) ||
		    lstat(path, &st) != 0)
			continue;
		meta[0] = (uint64_t)(st.st_mode & S_IFMT);
		meta[1] = (uint64_t)st.st_size;
		total += (uint64_t)st.st_size;
		h = fnv(h, names[i], strlen(names[i]) + 1);
		h = fnv(h, meta, sizeof(meta));
		h = file_hash(h, path, &st, buf);
	}
	snprintf(key, key_len, "1:%zu:%" PRIu64 ":%016" PRIx64, n, total, h);
	rc = 0;
out:
	closedir(d);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(buf);
	return rc;
}

static int build_keyed(const char *session_dir, const char *db_path, const char *key,
		       struct nf_error *err);

int nf_timeline_build(const char *session_dir, const char *db_path, struct nf_error *err)
{
	char key[96];

	return build_keyed(session_dir, db_path,
			   session_key(session_dir, key, sizeof(key)) == 0 ? key : NULL, err);
}

static int build_keyed(const char *session_dir, const char *db_path, const char *key,
		       struct nf_error *err)
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
	rc = build_into(session_dir, tmp, key, err);
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

/* The database is of this schema and timeline version and was built from
 * the session as it is now (its session key). */
static bool meta_matches(const char *db_path, const char *key)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	int found = 0;

	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		goto out;
	if (sqlite3_prepare_v2(db,
			       "SELECT key, value FROM meta WHERE key IN "
			       "('schema_version', 'timeline_version', 'session_key')", -1, &s,
			       NULL) != SQLITE_OK)
		goto out;
	while (sqlite3_step(s) == SQLITE_ROW) {
		const char *k = (const char *)sqlite3_column_text(s, 0);
		const char *t = (const char *)sqlite3_column_text(s, 1);
		long long v = sqlite3_column_int64(s, 1);

		if (k && strcmp(k, "schema_version") == 0 && v == NF_SCHEMA_VERSION)
			found |= 1;
		if (k && strcmp(k, "timeline_version") == 0 && v == NF_TIMELINE_VERSION)
			found |= 2;
		if (k && strcmp(k, "session_key") == 0 && t && strcmp(t, key) == 0)
			found |= 4;
	}
out:
	sqlite3_finalize(s);
	sqlite3_close(db);
	return found == 7;
}

static bool db_is_fresh(const char *db_path, const char *key)
{
	struct stat st;

	/* lstat: a planted symlink is never read nor written through; the
	 * rebuild's rename() replaces the link itself. */
	if (lstat(db_path, &st) != 0 || !S_ISREG(st.st_mode))
		return false;
	return meta_matches(db_path, key);
}

/*
 * A recorder (its committer process) holds an exclusive flock on
 * DIR/metadata until the session files are final (capture/ctf_writer.c). A
 * timeline built meanwhile would describe part of the recording: refuse.
 */
static int check_not_recording(const char *session_dir, struct nf_error *err)
{
	char meta[4200];
	int fd, rc = 0;

	if ((size_t)snprintf(meta, sizeof(meta), "%s/metadata", session_dir) >= sizeof(meta))
		return 0;
	fd = open(meta, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0; /* the parser says what is wrong with it */
	while (flock(fd, LOCK_SH | LOCK_NB) != 0) {
		if (errno == EINTR)
			continue;
		if (errno == EWOULDBLOCK)
			rc = nf_error_set(err, NF_ESTATE,
					  "%s: still being recorded (its recorder holds metadata); query it once the recording has ended",
					  session_dir);
		break;
	}
	close(fd);
	return rc;
}

/* Temporaries of builds that were interrupted (killed, Ctrl-C): no build runs
 * while we hold the lock, so any left is garbage. */
static void remove_stale_temporaries(const char *session_dir)
{
	static const char prefix[] = "." NF_TIMELINE_DB_NAME ".tmp.";
	DIR *d = opendir(session_dir);
	struct dirent *de;
	char path[4200];

	if (!d)
		return;
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, prefix, sizeof(prefix) - 1) == 0 &&
		    (size_t)snprintf(path, sizeof(path), "%s/%s", session_dir, de->d_name) < sizeof(path))
			unlink(path);
	closedir(d);
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
	if ((rc = check_not_recording(session_dir, err)))
		return rc;
	char key[96];
	if (session_key(session_dir, key, sizeof(key)) != 0)
		return nf_error_set(err, NF_EIO, "%s: %s", session_dir, strerror(errno));
	fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0 && (errno == EROFS || errno == EACCES || errno == EPERM)) {
		/* A read-only session (read-only media, another user's files): its
		 * timeline is used when it is fresh; none can be built there. */
		int e = errno;

		if (db_is_fresh(db_path, key))
			return 0;
		return nf_error_set(err, NF_EIO,
				    "%s: cannot build the timeline here (%s); copy the session to a writable place",
				    session_dir, strerror(e));
	}
	if (fd < 0)
		return nf_error_set(err, NF_EIO, "%s: %s", lock_path,
				    errno == ELOOP ? "is a symbolic link (not following it)" : strerror(errno));
	while (flock(fd, LOCK_EX) != 0) {
		if (errno != EINTR) {
			rc = nf_error_set(err, NF_EIO, "%s: lock: %s", lock_path, strerror(errno));
			goto out_close;
		}
	}
	remove_stale_temporaries(session_dir);
	if (!db_is_fresh(db_path, key))
		rc = build_keyed(session_dir, db_path, key, err);
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

