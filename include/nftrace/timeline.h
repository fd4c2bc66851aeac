/*
 * nftrace analyzer: turns a parsed session into one SQLite timeline on the CPU
 * clock (schemas/timeline.sql), with every GPU wait tied to the signal that
 * released it, and answers SQL over it.
 */
#ifndef NFTRACE_TIMELINE_H
#define NFTRACE_TIMELINE_H

#include <stddef.h>
#include <stdio.h>

#include "nftrace/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The database file inside a session directory. */
/* Hidden, so CTF readers (babeltrace2) do not take it for a stream file. */
#define NF_TIMELINE_DB_NAME ".timeline.db"

/* The lock file nf_timeline_ensure() takes inside a session directory. */
#define NF_TIMELINE_LOCK_NAME ".timeline.lock"

/*
 * Version of schemas/timeline.sql and of the analysis; stored as
 * meta.timeline_version next to meta.schema_version (NF_SCHEMA_VERSION). A
 * database with another value of either is rebuilt by nf_timeline_ensure().
 */
#define NF_TIMELINE_VERSION 11 /* 5: deps never names a releaser that ended past the slack; 6: GPU jobs, vblanks, markers; 7: Windows ETW captures, views' *_hex columns; 8: queue_busy in_flight/stalled, clock_fit ppm_stderr, os_overrun_flag rows lose their lost_entries; 9: cpu_runs is a view over cpu_run_blocks (a row per 1024 runs of a thread); 10: anomalies kind 'overrun' is 'lost', as in nftrace check (schemas/anomalies.def); 11: jobs.finish_source 'recording_start', meta kernel_all_cpus_from_ns */

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

enum nf_query_format { NF_QUERY_TABLE, NF_QUERY_CSV, NF_QUERY_JSON };

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
 * The SQL of a ready-made report, run with nf_query_run() like any query:
 * "stalls" (the 20 longest GPU wait stalls with the signal that ended each),
 * "queues" (per hardware queue: operations, lost ones, time stalled in waits,
 * span), "lost" (every span of a log whose entries were lost, per queue).
 * Returns a static string, or NULL for an unknown name.
 */
const char *nf_query_report_sql(const char *name);

/* The report names, separated by '|' ("stalls|queues|lost"), for usage text. */
#define NF_QUERY_REPORTS "stalls|queues|lost"

struct sqlite3;

/*
 * Opens the timeline database at path for reading, as the report, the HTML
 * page and the export read it: read-only, without SQLite's mutexes (one
 * thread uses the connection at a time), checked to hold the tables of
 * schemas/timeline.sql, and inside one read transaction (every pass sees the
 * same snapshot). Returns 0 with *db open (the caller closes it), or, with
 * *db NULL: NF_ENOENT (no such file), NF_EIO (cannot stat it), NF_ESQL
 * (SQLite cannot open it, or BEGIN failed), NF_EFORMAT (not a timeline
 * database); the message names path.
 */
int nf_timeline_open_read(const char *path, struct sqlite3 **db, struct nf_error *err);

/*
 * Checks the thread selection of a report (--thread, --process): each of
 * threads[0..n_threads) names a thread of the timeline by id, or by name
 * (kernel_threads.comm); each of processes[0..n_processes) a process by id
 * (or a thread's id) or by name. A filter that matches nothing is an error,
 * as for queues and fences. NULL lists are empty. Returns 0, NF_ENOENT
 * ("thread 'X': not in the timeline", naming the first that matches nothing)
 * or NF_ESQL.
 */
int nf_timeline_check_threads(struct sqlite3 *db, const char *const *threads, int n_threads,
			      const char *const *processes, int n_processes, struct nf_error *err);

#ifdef __cplusplus
}
#endif

#endif
