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

#include <stddef.h>
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

#ifdef __cplusplus
}
#endif

#endif
