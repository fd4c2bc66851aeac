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
#ifndef NF_ANALYZER_BULK_H
#define NF_ANALYZER_BULK_H

#include <stdbool.h>
#include <stdint.h>

#include <sqlite3.h>

#include "contract/errors.h"

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
