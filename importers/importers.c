/*
 * The importers' table and what walks it: which source a session directory
 * or a file is, building a session's timeline into a fresh database file that
 * replaces the old one atomically (nf_timeline_build), rebuilding
 * DIR/.timeline.db only when it is missing, stale or of another version
 * (nf_timeline_ensure, under a lock, so concurrent callers analyse once),
 * `nftrace import` (one rule for every source: build aside, swap in), and the
 * sources' own parts of `info` and `check`. Adding a source is a folder
 * importers/<source>/ defining its struct nf_importer, and one row below.
 */
#include "contract/session.h"
#include "contract/errors.h"
#include "contract/escape.h"
#include "contract/sessiondir.h"
#include "contract/timeline_writer.h"
#include "importers_int.h"

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

/* The sources, in the order they are asked; the CTF importer last: it takes
 * every directory the others do not. */
static const struct nf_importer *const importers[] = {
	&nf_importer_etw,
	&nf_importer_kernel,
	&nf_importer_ftrace_text,
	&nf_importer_ctf,
};

#define N_IMPORTERS (sizeof(importers) / sizeof(importers[0]))

static const struct nf_importer *of_session(const char *dir)
{
	for (size_t i = 0; i < N_IMPORTERS; i++)
		if (importers[i]->session_is && importers[i]->session_is(dir))
			return importers[i];
	return NULL;
}

const char *nf_session_source(const char *dir)
{
	const struct nf_importer *imp = of_session(dir);

	return imp ? imp->name : NULL;
}

const struct nf_importer_stream *nf_importers_stream(enum nf_stream_id stream)
{
	for (size_t i = 0; i < N_IMPORTERS; i++)
		if (importers[i]->stream && importers[i]->stream->stream == stream)
			return importers[i]->stream;
	return NULL;
}

/* The interrupt flag of the import running on this thread (NULL: none). */
static __thread volatile int *import_interrupt;

bool nf_importers_interrupted(void)
{
	return import_interrupt && *import_interrupt;
}

/* The early reader of the ensure running on this thread (NULL: none). */
static __thread struct nf_early_reader *early_reader;

struct nf_early_reader *nf_importers_early(void)
{
	return early_reader;
}

/* Builds the timeline of session_dir into tmp_path with its importer, with
 * what the session was when this build began (nf_timeline_ensure compares
 * it: without it every command would rebuild the timeline). */
static int build_into(const char *session_dir, const char *tmp_path, const char *key,
		      struct nf_error *err)
{
	const struct nf_importer *imp = of_session(session_dir);

	if (!imp || !imp->build)
		return nf_error_set(err, NF_ENOENT, "%s: not a session directory", session_dir);
	if (early_reader)  /* an importer that offers its timeline early says otherwise */
		early_reader->why_not = "this source's timeline is drawn only once built whole";
	return imp->build(session_dir, tmp_path, key, err);
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

int nf_timeline_ensure_early(const char *session_dir, char *db_path, size_t db_path_len,
			     struct nf_early_reader *r, struct nf_error *err)
{
	int rc;

	r->why_not = "the timeline was built already";  /* a build says otherwise */
	early_reader = r;
	rc = nf_timeline_ensure(session_dir, db_path, db_path_len, err);
	early_reader = NULL;
	return rc;
}

int nf_timeline_ensure_locked(const char *session_dir, char *db_path, size_t db_path_len, int *lock_fd,
			      struct nf_error *err)
{
	char lock_path[4096];
	int fd, rc;

	*lock_fd = -1;
	if ((rc = nf_timeline_ensure(session_dir, db_path, db_path_len, err)))
		return rc;
	if ((size_t)snprintf(lock_path, sizeof(lock_path), "%s/%s", session_dir, NF_TIMELINE_LOCK_NAME) >=
	    sizeof(lock_path))
		return nf_error_set(err, NF_EINVAL, "%s: path too long", session_dir);
	fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return nf_error_set(err, NF_EIO, "%s: %s", lock_path, strerror(errno));
	while (flock(fd, LOCK_EX) != 0) {
		if (errno != EINTR) {
			rc = nf_error_set(err, NF_EIO, "%s: lock: %s", lock_path, strerror(errno));
			close(fd);
			return rc;
		}
	}
	*lock_fd = fd;
	return 0;
}

void nf_timeline_unlock(int lock_fd)
{
	if (lock_fd >= 0) {
		flock(lock_fd, LOCK_UN);
		close(lock_fd);
	}
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


/* ---- nftrace import ---- */

/* The importer whose file path is: by content first, then by name. */
static const struct nf_importer *of_file(const char *path)
{
	for (size_t i = 0; i < N_IMPORTERS; i++)
		if (importers[i]->file_is && importers[i]->file_is(path))
			return importers[i];
	for (size_t i = 0; i < N_IMPORTERS; i++)
		if (importers[i]->file_named && importers[i]->file_named(path))
			return importers[i];
	return NULL;
}

/*
 * A message about the session being built names its temporary directory:
 * say the user's words instead (the copy of the file inside it is the file;
 * anything else in it will be in out_dir).
 */
static void name_user_paths(struct nf_error *err, const char *tmp, const char *copied, const char *file,
			    const char *out_dir)
{
	char from[PATH_MAX + 64], msg[NF_ERROR_MSG_MAX];
	const char *to = file;
	char *at;

	if (!err || !err->code)
		return;
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 0 && !copied)
			continue;
		if (pass == 0)
			snprintf(from, sizeof(from), "%s/%s", tmp, copied);
		else
			snprintf(from, sizeof(from), "%s", tmp), to = out_dir;
		for (int n = 0; n < 4 && (at = strstr(err->msg, from)) != NULL; n++) {
			size_t head = (size_t)(at - err->msg), tl = strlen(to);

			if (head + tl >= sizeof(msg))
				break;
			memcpy(msg, err->msg, head);
			memcpy(msg + head, to, tl);
			snprintf(msg + head + tl, sizeof(msg) - head - tl, "%s", at + strlen(from));
			memcpy(err->msg, msg, sizeof(msg));
		}
	}
}

int nf_import(const char *file, const char *out_dir, bool force, volatile int *interrupt,
	      struct nf_import_result *res, struct nf_error *err)
{
	const struct nf_importer *imp;
	struct nf_aside a;
	struct stat st;
	char db[PATH_MAX + 32];
	volatile int *saved = import_interrupt;
	int rc;

	memset(res, 0, sizeof(*res));
	/* A FIFO or a device would block or never end: only regular files. */
	if (stat(file, &st) != 0)
		return nf_error_set(err, errno == ENOENT ? NF_ENOENT : NF_EIO, "%s: %s", file, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return nf_error_set(err, NF_EFORMAT, "%s: not a regular file (a trace.dat, .etl or ftrace text capture is)", file);
	if (!(imp = of_file(file)) || !imp->convert)
		return nf_error_set(err, NF_EFORMAT,
				    "%s: not a trace-cmd file (no trace-cmd magic at offset 0), a Windows ETW capture (no ETW logfile header) nor ftrace text (trace-cmd report's or tracefs' trace lines)",
				    file);
	res->importer = imp->name;
	if ((rc = nf_aside_begin(out_dir, force, "import", &a, err)))
		return rc;
	import_interrupt = interrupt;
	rc = imp->convert(file, a.tmp, interrupt, res, err);
	if (rc == 0 && nf_importers_interrupted())
		rc = nf_error_set(err, NF_EINTR, "%s: interrupted", file);
	if (rc == 0) {
		snprintf(db, sizeof(db), "%s/%s", a.tmp, NF_TIMELINE_DB_NAME);
		rc = nf_timeline_build(a.tmp, db, err);
	}
	/* the last look before the session replaces anything */
	if (rc == 0 && nf_importers_interrupted())
		rc = nf_error_set(err, NF_EINTR, "%s: interrupted", file);
	import_interrupt = saved;
	if (rc == 0 && imp->imported)
		imp->imported(db, res);
	if (rc) {
		name_user_paths(err, a.tmp, imp->copied, file, a.out);
		nf_aside_abort(&a);
		return rc;
	}
	return nf_aside_commit(&a, err);
}

/* ---- info and check ---- */

int nf_session_info(const char *dir, bool json, FILE *out, struct nf_error *err)
{
	const struct nf_importer *imp = of_session(dir);

	if (!imp || !imp->info)
		return nf_error_set(err, NF_ENOENT, "%s: no such session directory", dir);
	return imp->info(dir, json, out, err);
}

int nf_session_check(const char *dir, struct nf_source_check *c, struct nf_error *err)
{
	const struct nf_importer *imp = of_session(dir);

	memset(c, 0, sizeof(*c));
	if (!imp || !imp->check)
		return nf_error_set(err, NF_ENOENT, "%s: no such session directory", dir);
	c->source = imp->name;
	return imp->check(dir, c, err);
}

void nf_source_check_free(struct nf_source_check *c)
{
	if (!c)
		return;
	free(c->text);
	free(c->json);
	c->text = c->json = NULL;
}

/* The importers' text and JSON for info and check: core/escape.c's helpers. */
void nf_imp_put_clean(FILE *out, const char *s)
{
	nf_esc_text_file(out, s, 0);
}

void nf_imp_put_json(FILE *out, const char *s)
{
	nf_esc_json_file(out, s, 0);
}
