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
#define NF_TIMELINE_DB_NAME "timeline.db"

/*
 * Builds DIR/timeline.db from the session when it is missing, older than the
 * trace, or of another schema version; otherwise leaves it. Safe when several
 * processes ask at once (one builds, the others wait and reuse it).
 * On success writes the database path to db_path.
 */
int nf_timeline_ensure(const char *session_dir, char *db_path, size_t db_path_len,
		       struct nf_error *err);

/* Builds the database at db_path from the session, replacing it atomically. */
int nf_timeline_build(const char *session_dir, const char *db_path, struct nf_error *err);

enum nf_query_format { NF_QUERY_TABLE, NF_QUERY_CSV, NF_QUERY_JSON };

struct nf_query_options {
	enum nf_query_format format;
	const char *const *sessions; /* session directories; >1: attached as s1, s2, ... */
	size_t n_sessions;
};

/*
 * Runs SQL (one or more statements) read-only against the sessions' timelines,
 * writing the rows to out. Statements that would write are refused (NF_ESQL).
 */
int nf_query_run(const struct nf_query_options *opts, const char *sql, FILE *out,
		 struct nf_error *err);

#ifdef __cplusplus
}
#endif

#endif
