/*
 * Sessions and their timelines: the importers' table walked for every session
 * directory (contract/session.h, owned by importers/). A session is a
 * directory an importer recognises (a CTF trace nftrace or anything else wrote,
 * a Linux trace converted into one, an imported Windows ETW capture); its
 * timeline is DIR/.timeline.db, built by that importer through the writer and
 * cached until the session changes.
 */
#ifndef NF_CONTRACT_SESSION_H
#define NF_CONTRACT_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "contract/errors.h"
#include "contract/timeline.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Builds DIR/.timeline.db from the session when it is missing, of another
 * schema or timeline version, or built from another state of the session:
 * meta.session_key holds what the session was (names, kinds and sizes of its
 * files, a hash of each file's first and last 64 KiB: the metadata with its
 * UUID, the streams' first and last packets), so files replaced by older
 * copies or grown since are noticed whatever their times say; otherwise
 * leaves it. Safe when several processes ask at once: the check and the build
 * run under an flock on DIR/.timeline.lock, so one builds and the others wait
 * and reuse it; temporaries left by interrupted builds are removed there. On
 * success writes the database path to db_path. Returns 0, NF_ENOENT (no such
 * directory), NF_EINVAL (db_path too short), NF_ESTATE (a recorder still
 * holds the session: DIR/metadata is flocked by its committer), NF_EIO (lock
 * file; a read-only directory whose timeline is missing or stale: a fresh one
 * is used without the lock), or any code of nf_timeline_build().
 */
int nf_timeline_ensure(const char *session_dir, char *db_path, size_t db_path_len,
		       struct nf_error *err);

/*
 * A reader that takes a timeline before its fence operations are loaded
 * (struct nf_early_timeline, contract/timeline.h): a report draws the first
 * picture of a big session from it at once, while the build goes on.
 * ready is called at most once, on the building thread, by a build of at
 * least min_ops fence operations whose tables, but fence_ops and deps, do not
 * depend on the operations' load (today: nftrace's own sessions of native
 * fence logs without presents or a stream of another source); a non-zero
 * return fails the build with that code.
 */
struct nf_early_reader {
	int64_t min_ops;
	int (*ready)(void *ctx, const struct nf_early_timeline *t, struct nf_error *err);
	void *ctx;
	/* Set by nf_timeline_ensure_early when ready was not called: why, in words
	 * (a static string); NULL when it was. */
	const char *why_not;
};

/*
 * nf_timeline_ensure() offering the timeline to r before its operations are
 * loaded, when it builds one (r->ready is not called when the timeline was
 * fresh, or the build is not of such a session). Returns 0 or
 * nf_timeline_ensure()'s codes (NF_ENOENT, NF_EINVAL, NF_ESTATE, NF_EIO, the
 * build's), r->ready's failing the build.
 */
int nf_timeline_ensure_early(const char *session_dir, char *db_path, size_t db_path_len,
			     struct nf_early_reader *r, struct nf_error *err);

/*
 * nf_timeline_ensure(), then takes DIR/.timeline.lock (exclusive flock) for a
 * reader that adds tables of its own to the timeline (blame, frames), so that
 * two processes do not compute them at once. On success *lock_fd holds the
 * lock: release it with nf_timeline_unlock(). Returns 0, nf_timeline_ensure()'s
 * codes, NF_EINVAL (path too long), NF_EIO (the lock file).
 */
int nf_timeline_ensure_locked(const char *session_dir, char *db_path, size_t db_path_len, int *lock_fd,
			      struct nf_error *err);
void nf_timeline_unlock(int lock_fd);

/*
 * Builds the database at db_path from the session, replacing it atomically:
 * the build goes to a temporary file next to db_path that is renamed over it
 * once complete; on failure db_path is untouched and the temporary removed.
 * Returns 0, the parser's codes (NF_ENOENT, NF_EFORMAT, ...), NF_ESQL,
 * NF_ENOMEM or NF_EIO.
 */
int nf_timeline_build(const char *session_dir, const char *db_path, struct nf_error *err);

struct nf_query_options {
	enum nf_query_format format;
	const char *const *sessions; /* session directories; >1: attached as s1, s2, ... */
	size_t n_sessions;
};

/*
 * Runs SQL (one or more statements, in order) read-only against the sessions'
 * timelines (each brought up to date with nf_timeline_ensure() first), writing
 * the rows to out. With one session its tables are reachable unqualified and
 * as s1.<table>; with several, as s1.<table>, s2.<table>, ... (an unqualified
 * name then resolves to the first session that has it).
 * Returns 0 when every statement ran. Only reading is allowed: statements
 * that write, attach or detach, change pragmas or VACUUM are refused with NF_ESQL ("query refused: ..."); bad SQL
 * gives NF_ESQL with SQLite's message. NF_EIO when writing to out fails.
 * Functions that hand out or take process pointers or load code
 * (fts3_tokenizer, fts5, load_extension) are refused by name; table-valued
 * functions (json_each, json_tree) and the read-only pragmas (table_info,
 * index_list, ... also as pragma_table_info(...)) are allowed.
 *
 * Formats: NF_QUERY_TABLE: per statement with columns, a header line, a line
 * of dashes and one line per row, columns left-aligned and separated by two
 * spaces, NULL as empty; result sets separated by a blank line.
 * NF_QUERY_CSV: a header row then the rows, RFC 4180 quoting (fields holding
 * a comma, quote, CR or LF are quoted, quotes doubled), lines end with LF,
 * NULL as an empty field; result sets separated by a blank line. As in JSON,
 * blobs are hexadecimal and reals that are not finite (Inf, NaN) are empty;
 * a NUL byte in text is written as '?'.
 * NF_QUERY_JSON: one array of objects (one per row, of every statement), keys
 * the column names (a name repeated in one statement gets ":2", ":3", ...),
 * integers and reals as numbers (not finite: null), NULL as null, text as
 * strings, blobs as hexadecimal strings.
 */
int nf_query_run(const struct nf_query_options *opts, const char *sql, FILE *out,
		 struct nf_error *err);

/*
 * The name of the source whose session dir is ("ctf", "etw"; a static string),
 * or NULL when no importer takes it (not a session).
 */
const char *nf_session_source(const char *dir);

/* What `nftrace import` made. */
struct nf_import_result {
	const char *importer;  /* the source that took the file ("kernel", "etw"); static */
	char summary[1024];    /* one line: what the file held ("53507 kernel records on 4 CPUs ...") */
	char note[512];        /* what was worked around to read it ("" none) */
};

/*
 * `nftrace import FILE -o DIR`: the importer whose file FILE is (by content,
 * then by name) converts it into a new session built aside DIR and swapped in
 * with its timeline only once both are complete (core/aside.c: a failure, or
 * *interrupt becoming non-zero, leaves DIR exactly as it was and nothing
 * beside it; what a killed import left is removed by the next). DIR may not
 * exist, be empty, or with force hold an nftrace session of only nftrace's
 * files. FILE must be a regular file (a FIFO or a device is refused before it
 * is opened for reading). Returns 0, NF_ENOENT (no such file), NF_EFORMAT
 * (not a file any importer reads, or damaged: the message names FILE and
 * where), NF_EEXIST, NF_EINVAL (DIR an empty name), NF_EINTR, NF_EIO,
 * NF_ESQL, NF_ENOMEM, NF_EUNSUPP.
 */
int nf_import(const char *file, const char *out_dir, bool force, volatile int *interrupt,
	      struct nf_import_result *res, struct nf_error *err);

/*
 * `nftrace info DIR`: the session's facts as its importer tells them, to out
 * (text, or one JSON object with json). Returns 0, NF_ENOENT (not a session
 * any importer takes), or the importer's codes (the parser's, NF_ESQL, ...).
 */
int nf_session_info(const char *dir, bool json, FILE *out, struct nf_error *err);

/*
 * The source's part of `nftrace check DIR`: what its files say of their own
 * wholeness (log bookkeeping for nftrace's sessions, lost buffers and size
 * mismatches for ETW captures ...). The command adds what is the same for
 * every source (the hang and deadlock analysis over the timeline) and the
 * verdict: illegal when illegal > 0, incomplete when incomplete[0], then
 * deadlock and hang, legal_anomalies when legal > 0, else whole.
 */
struct nf_source_check {
	const char *source;       /* the importer's name (static) */
	uint64_t illegal;         /* findings no valid session of this source has */
	char illegal_what[256];   /* the verdict's words for them ("3 findings that no valid session has") */
	char incomplete[512];     /* why the session is incomplete ("" when it is not) */
	uint64_t legal;           /* legal anomalies (entries lost to overruns, lost events ...) */
	char legal_what[512];     /* the verdict's words for them */
	char whole_what[256];     /* the verdict's words when whole ("1234 entries, none lost") */
	char *text;               /* the source's report, lines ending in \n (owned; "" when none) */
	char *json;               /* its JSON members, each starting ",\n  " (owned) */
};

/*
 * Fills c for dir. Returns 0, NF_ENOENT (not a session), or the importer's
 * codes; free c with nf_source_check_free (also after a failure).
 */
int nf_session_check(const char *dir, struct nf_source_check *c, struct nf_error *err);
void nf_source_check_free(struct nf_source_check *c);

#ifdef __cplusplus
}
#endif

#endif
