/*
 * nftrace push: sessions' timelines into a ClickHouse fleet store, and SQL over it.
 *
 * One ClickHouse database holds many sessions from many machines. Every table
 * of schemas/timeline.sql except meta becomes a ClickHouse table of the same
 * name and columns, with a leading `session String` column; the ClickHouse
 * types are generated at run time from the embedded timeline.sql (INTEGER ->
 * Nullable(Int64), REAL -> Nullable(Float64), TEXT and others ->
 * Nullable(String)), so schemas/ stays the one source. Tables are MergeTree,
 * PARTITION BY session, ORDER BY (session, its first *_ns column).
 * `sessions` holds one row per complete session: its id, when it was pushed,
 * host, source, tool_version, seed and every meta pair (meta.key, meta.value).
 *
 * A push loads each table with rows into a staging table of its own
 * (_stage_<token>_<table>, same structure; the token is unique to the push)
 * in Native-format INSERTs of about batch_bytes each (ending at the first
 * block past it), over opts->streams connections at once: large tables go in
 * rowid ranges, each stream has a reader thread that reads and encodes blocks
 * (up to 64K rows or 4 MiB, at most a batch) while the stream sends the
 * previous ones, so memory stays about three blocks per stream whatever the
 * batch. Then it stages the `sessions` row the same way, removes the
 * session's row from `sessions`, moves each staged partition over the live
 * one (ALTER TABLE ... REPLACE PARTITION ... FROM; a table without rows:
 * DROP PARTITION), moves the `sessions` row in last, and drops its staging
 * tables. A session's rows count only when it is listed in `sessions`: a
 * push that fails while loading leaves the previous version in place and
 * listed; one that fails while swapping leaves the session unlisted until it
 * is pushed again. Pushing a session again replaces it (never doubles it).
 * Two pushes of one session id at the same time stage apart; each REPLACE is
 * atomic, so the session ends with one push's rows per table (the same rows
 * when both pushed the same timeline) and one `sessions` row. A killed push
 * leaves its staging tables; nf_push_prepare() drops those a day old.
 *
 * On a cluster (opts->cluster): every shard gets the tables as <table>_local
 * (and sessions_local; staging tables are made on the session's shard), and every shard a Distributed table
 * <table> (and sessions) over them, sharding key cityHash64(session). A
 * session goes whole to one shard, the one the key names, through that
 * shard's URL; so a JOIN on session is local to a shard (query with
 * distributed_product_mode = 'local', as nf_push_query() does). DDL runs on
 * each shard URL in turn (no ON CLUSTER: no ZooKeeper needed).
 */
#ifndef NFTRACE_PUSH_H
#define NFTRACE_PUSH_H

#include "contract/errors.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Default batch: bytes of one INSERT body (streamed: memory stays about three 2 MiB blocks per stream). */
#define NF_PUSH_BATCH_BYTES (256u << 20)
/* Default number of INSERT streams (connections, each with a reader thread) of a push. */
#define NF_PUSH_STREAMS 2
/* Longest session id (bytes). */
#define NF_PUSH_ID_MAX 200

struct nf_push_options {
	const char *url;      /* ClickHouse HTTP interface: http://host:8123 (may carry ?user=..&password=..) */
	const char *database; /* database (created when missing); NULL: "nftrace" */
	size_t batch_bytes;   /* bytes per INSERT body; 0: NF_PUSH_BATCH_BYTES (min 4096) */
	long timeout_s;       /* per HTTP request; 0: 600 */
	const char *cluster;  /* NULL: one server (url). Else a cluster name the servers
			       * define in remote_servers: shards[] are their HTTP URLs */
	const char *const *shards; /* the cluster's shards in shard order (replica 1 each) */
	size_t n_shards;
	unsigned streams;     /* INSERT streams at once; 0: NF_PUSH_STREAMS (at most 64) */
	int answer_text;      /* nf_push_query: the answer is shown as text (a terminal's): what is
			       * not printable UTF-8 in it (ESC, OSC, CR, BS, C1 controls, stray
			       * bytes; newlines and tabs kept) becomes '?' (nf_esc_text) */
};

struct nf_push_stats {
	uint64_t rows;    /* rows loaded (all tables, sessions row excluded) */
	uint64_t bytes;   /* INSERT body bytes sent (Native blocks) */
	uint64_t batches; /* INSERT requests */
	unsigned tables;  /* tables pushed */
};

/*
 * The session id of a session directory: the last component of its path
 * (trailing slashes ignored). Returns 0, or NF_EINVAL when it is empty,
 * longer than NF_PUSH_ID_MAX, holds a control character, quote or
 * backslash, or makes a lock table name ClickHouse cannot store (it names
 * files by the table: letters, digits and '_' as they are, every other byte
 * as %XX, in 255 bytes with ".sql.tmp"): checked before anything is sent.
 */
int nf_push_session_id(const char *session_dir, char *id, size_t id_len, struct nf_error *err);

/*
 * Creates the database, the tables and `sessions` when missing (on a
 * cluster: on every shard, after checking that the server knows the cluster
 * with as many shards as URLs given), and drops staging tables older than a
 * day (left by killed pushes). Returns 0, NF_EINVAL (bad
 * database or cluster name: [A-Za-z0-9_] only, a URL that is not http:// or
 * https://, a shard count that does not match), NF_EIO (server unreachable, or the
 * connection broke: message names the URL), NF_ESQL (the server answered with
 * an error: its first line), NF_ENOMEM.
 */
int nf_push_prepare(const struct nf_push_options *opts, struct nf_error *err);

/*
 * Pushes one session (its timeline built with nf_timeline_ensure() when
 * missing or stale) as described above; nf_push_prepare() must have run.
 * stats may be NULL. Returns 0, nf_timeline_ensure()'s codes for a directory
 * that is not a readable session (message names it), NF_EINVAL (bad session
 * id), NF_EIO, NF_ESQL (as nf_push_prepare(); the message names the session),
 * NF_ETIMEOUT (another push of the same session kept its swap lock, the table
 * `_lock_<session>`, for 15 minutes past the time it would have gone stale),
 * NF_ENOMEM. Pushes of one session from several processes or machines at once
 * are safe: each loads its own staging tables, and their swaps into the live
 * tables take turns (a lock older than 2 minutes (or than the request timeout
 * and a minute, when longer; NFTRACE_PUSH_LOCK_STALE_S seconds when set) is a
 * killed push's and is taken over; a push drops only the lock holding its own
 * token).
 */
int nf_push_session(const struct nf_push_options *opts, const char *session_dir,
		    struct nf_push_stats *stats, struct nf_error *err);

/*
 * Runs one SQL statement on the server (database opts->database, "nftrace"
 * when NULL) and copies the answer to out in `format` (a ClickHouse output
 * format name: PrettyCompactNoEscapes, CSVWithNames, JSON, ...; NULL: the
 * server's default), streaming it. Returns 0, NF_EINVAL (bad URL or
 * database name), NF_EIO (unreachable, broken connection, writing out
 * failed), NF_ESQL (the server's error, first line), NF_ENOMEM. Runs with
 * distributed_product_mode = 'local' (JOINs of Distributed tables on session
 * stay on each shard; no effect on one server) and 64-bit integers unquoted
 * in JSON formats, and with wait_end_of_query = 1: the server holds the
 * answer until the query has ended (in memory, then in a temporary file of
 * its own), so an error met after the first rows is NF_ESQL with nothing
 * written to out, never rows followed by the error's text; the answer
 * arrives when the query has ended.
 */
int nf_push_query(const struct nf_push_options *opts, const char *sql, const char *format,
		  FILE *out, struct nf_error *err);

#ifdef __cplusplus
}
#endif

#endif
