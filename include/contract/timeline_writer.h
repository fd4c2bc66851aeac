/*
 * The timeline's writer: what every importer builds a timeline through
 * (timeline/writer.c, timeline/bulk.c). A build writes a fresh database file
 * (a temporary the importers' table renames into place once complete):
 * nf_writer_open gives the connection with the build's pragmas,
 * nf_writer_begin its transaction and the tables of schemas/timeline.sql,
 * the importer loads its rows (prepared statements stepped with
 * nf_writer_step, or nf_bulk loads), nf_writer_views makes the indexes and
 * views of schemas/timeline-views.sql once the tables are loaded,
 * nf_writer_session_meta writes the facts every timeline has, and
 * nf_writer_close commits and closes. Errors read
 * "timeline: WHO: WHAT: SQLite's message", WHO naming the importer.
 */
#ifndef NF_CONTRACT_TIMELINE_WRITER_H
#define NF_CONTRACT_TIMELINE_WRITER_H

#include <stdbool.h>
#include <stdint.h>

#include <sqlite3.h>

#include "contract/errors.h"

/*
 * Id spaces, the writer's to give (readers never decode ids: what a queue or an
 * adapter is, is in its row). Handles a source names as they are (native
 * 32-bit handles; ETW's numbering 1, 2, ...) stay below NF_WRITER_CONTEXT_BASE;
 * queues and fences made for a numbered context of a source whose numbers are
 * wider (a Linux dma_fence context c) are NF_WRITER_CONTEXT_BASE + c, above
 * every native handle; NF_WRITER_NO_ADAPTER numbers the adapters row of a
 * source that has no adapters (named for what it is). The _SQL spellings are
 * for SQL text.
 */
#define NF_WRITER_CONTEXT_BASE 4294967296LL
#define NF_WRITER_CONTEXT_BASE_SQL "4294967296"
#define NF_WRITER_NO_ADAPTER 4294967295LL
#define NF_WRITER_NO_ADAPTER_SQL "4294967295"

/*
 * Opens (creating) db_path for a build, one thread using the connection (no
 * mutex), with the build's pragmas: no journal and no syncs (a throwaway
 * file until renamed), temporaries in files, a bounded page cache, 64 KiB
 * pages. Returns 0 with *db open, or NF_ESQL (the message names db_path) with
 * *db NULL.
 */
int nf_writer_open(const char *db_path, sqlite3 **db, struct nf_error *err);

/* Opens the build's transaction and creates the tables of schemas/timeline.sql.
 * Returns 0 or NF_ESQL. */
int nf_writer_begin(sqlite3 *db, const char *who, struct nf_error *err);

/* Creates the indexes and views of schemas/timeline-views.sql (after the
 * load: an index built once is cheaper than one kept up row by row).
 * Returns 0 or NF_ESQL. */
int nf_writer_views(sqlite3 *db, const char *who, struct nf_error *err);

/* Commits the build's transaction. Returns 0 or NF_ESQL. */
int nf_writer_commit(sqlite3 *db, const char *who, struct nf_error *err);

/* Closes db (NULL: a no-op); a failed close is NF_ESQL naming db_path when rc
 * is 0. Returns rc, or that error. */
int nf_writer_close(sqlite3 *db, const char *db_path, int rc, struct nf_error *err);

/* Runs sql (one or more statements). Returns 0, or NF_ESQL ("timeline: WHO: SQLite's message"). */
int nf_writer_exec(sqlite3 *db, const char *who, const char *sql, struct nf_error *err);

/* Steps the prepared statement s to completion, then resets it (its bindings
 * stay: the caller binds every parameter each time, or clears them: clearing
 * costs more than the step of a small insert). Returns 0, or NF_ESQL
 * ("timeline: WHO: WHAT: SQLite's message"). */
int nf_writer_step(sqlite3 *db, sqlite3_stmt *s, const char *who, const char *what, struct nf_error *err);

/* Sets err from db's last error: returns NF_ESQL ("timeline: WHO: WHAT: SQLite's message"). */
int nf_writer_sql_error(sqlite3 *db, const char *who, const char *what, struct nf_error *err);

/* meta(key, value): a fact (replacing one of that key). Returns 0 or NF_ESQL. */
int nf_writer_meta(sqlite3 *db, const char *key, const char *value, struct nf_error *err);
/* The same with an integer value, written in decimal. Returns 0 or NF_ESQL. */
int nf_writer_meta_int(sqlite3 *db, const char *key, int64_t value, struct nf_error *err);

/* What every timeline's meta says of its session (schemas/timeline.sql, meta). */
struct nf_writer_session {
	uint64_t cpu_frequency;   /* CPU clock, ticks per second */
	uint64_t start_ticks;     /* session start on that clock */
	int64_t duration_ns;      /* last event's time */
	const char *source;       /* the capture's description (scenario, program, file) */
	const char *mode;         /* how it was made ("deterministic", "kernel-import", "etw-import" ...) */
	const char *tool_version; /* the tool that recorded it */
	const char *host;
	bool ground_truth;        /* truth_ops was recorded */
	bool has_seed;            /* seed below is the recording's */
	uint64_t seed;
	bool has_recorded_schema; /* recorded_schema_version below: the schema the session was written with */
	int64_t recorded_schema;
};

/*
 * Writes the facts of s and those of this build: schema_version,
 * timeline_version and build_id (process id and wall-clock time: two builds
 * of one session differ there). Returns 0 or NF_ESQL.
 */
int nf_writer_session_meta(sqlite3 *db, const struct nf_writer_session *s, struct nf_error *err);

/*
 * The deps rows whose wait no signal in the file reaches (reason
 * 'no_signal', contract/deps.h) get the reason the file allows: 'lost' when
 * events or log entries were lost (anomalies lost, kernel_lost, etw_lost)
 * before the wait ended, 'not_covered' when a CPU's record (coverage scopes
 * 'cpu', 'etw_cpu': they exist for the whole capture; a log's spans follow its
 * queue's life) does not hold the whole wait, else otherwise ('not_traced': the source
 * records no such signal; 'timeout' for dma_fences, whose signals are traced).
 * Run after deps, anomalies and coverage are written. Returns 0 or NF_ESQL.
 */
int nf_writer_deps_reasons(sqlite3 *db, const char *who, const char *otherwise, struct nf_error *err);

/*
 * Bulk loading through a virtual table. A prepared INSERT stepped once per
 * row pays SQLite's statement entry, bind and reset work on every row (about
 * half of a bare insert's time); "INSERT INTO t SELECT ... FROM nf_bulk" runs
 * one statement whose virtual-table cursor pulls the rows from a C callback,
 * so the table's own insert path is all that is left per row.
 *
 * nf_bulk is an eponymous virtual table (no CREATE VIRTUAL TABLE needed)
 * with NF_BULK_COLS columns c0..c15; the columns a row does not set are NULL.
 * One source is active per connection at a time (nf_bulk_run sets and clears
 * it). The rows are produced on another thread, a batch ahead of SQLite, so
 * that the callback's own work overlaps the insert: the callback must not use
 * the connection, and only touches state nothing else uses during the run.
 */
#define NF_BULK_COLS 16

/* One row: column i is NULL unless bit i of set is on; text[i] non-NULL makes it TEXT. */
struct nf_bulk_row {
	uint32_t set;
	int64_t v[NF_BULK_COLS];
	const char *text[NF_BULK_COLS]; /* static strings only (not copied) */
	int text_len[NF_BULK_COLS];
};

/*
 * Fills *row (set = 0 on entry) and returns 1, 0 at the end, or a negative
 * NF_E* code with err filled. Runs on the producer thread.
 */
typedef int (*nf_bulk_next_fn)(void *ctx, struct nf_bulk_row *row, struct nf_error *err);

/* The module's state on one connection (owned by the connection). */
struct nf_bulk;

/*
 * Registers the nf_bulk module on db; the state lives until db is closed.
 * Returns NULL with err filled (NF_ESQL, NF_ENOMEM) on failure.
 */
struct nf_bulk *nf_bulk_register(sqlite3 *db, struct nf_error *err);

/*
 * Runs sql (an INSERT ... SELECT ... FROM nf_bulk) on bk's connection with the
 * rows of next(ctx), called on a producer thread when threaded (and a thread
 * can be started), else on this one (the callback may then use the
 * connection for other tables). Returns 0, the callback's error (err filled with
 * it), NF_ENOMEM, or NF_ESQL with err filled ("what: SQLite's message").
 */
int nf_bulk_run(struct nf_bulk *bk, const char *sql, nf_bulk_next_fn next, void *ctx,
		bool threaded, const char *what, struct nf_error *err);

/* Row helpers. */
static inline void nf_bulk_int(struct nf_bulk_row *r, int col, int64_t v)
{
	r->set |= 1u << col;
	r->v[col] = v;
	r->text[col] = 0;
}

static inline void nf_bulk_opt(struct nf_bulk_row *r, int col, int has, int64_t v)
{
	if (has)
		nf_bulk_int(r, col, v);
}

static inline void nf_bulk_text(struct nf_bulk_row *r, int col, const char *s, int len)
{
	r->set |= 1u << col;
	r->text[col] = s;
	r->text_len[col] = len;
}

#endif
