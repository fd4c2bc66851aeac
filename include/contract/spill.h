/*
 * Bounded-memory record streams for the timeline builder: a spill file of
 * fixed-size records written once and read back in order (any number of
 * times), and an external sorter of fixed-size records that sorts in memory
 * up to a budget and merges sorted runs from a temporary file beyond it. Both
 * keep their files unlinked (they vanish when closed or when the process
 * dies) in a directory chosen by the caller.
 */
#ifndef NF_ANALYZER_SPILL_H
#define NF_ANALYZER_SPILL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "contract/errors.h"

/* ---- spill: append, then read back sequentially ---- */

struct nf_spill;

/*
 * Creates an empty spill of records of rec_size bytes (1 to 4 MiB) in dir
 * (NULL or "": the system's temporary directory; its file is made when the
 * records first outgrow memory, so a directory that cannot hold one is
 * reported by nf_spill_put). Returns NULL with err filled (NF_EINVAL,
 * NF_ENOMEM).
 */
struct nf_spill *nf_spill_create(const char *dir, size_t rec_size, struct nf_error *err);
/*
 * Appends one record. 0, NF_EIO (the file cannot be made or written: that
 * and every later call fail), NF_ESTATE (after nf_spill_seal or a rewind).
 */
int nf_spill_put(struct nf_spill *s, const void *rec, struct nf_error *err);
/* Records appended so far. */
uint64_t nf_spill_count(const struct nf_spill *s);
/* Starts reading from the first record (ends writing). 0, NF_EIO or NF_ENOMEM. */
int nf_spill_rewind(struct nf_spill *s, struct nf_error *err);
/* Reads the next record into rec: 1 read, 0 at the end, NF_EIO, NF_ESTATE (no rewind yet). */
int nf_spill_get(struct nf_spill *s, void *rec, struct nf_error *err);
void nf_spill_destroy(struct nf_spill *s);

/*
 * Readers of their own over a sealed spill (its writing ended): any number
 * at once, each used by one thread, each reading every record from the first.
 * Sealing ends writing without starting the spill's own read (an in-flight
 * write is waited for); the spill is not written, rewound or destroyed while
 * a reader is open. 0 or NF_EIO.
 */
int nf_spill_seal(struct nf_spill *s, struct nf_error *err);
struct nf_spill_reader;
/* NULL with err filled (NF_ENOMEM, or NF_ESTATE when the spill is not sealed). */
struct nf_spill_reader *nf_spill_reader_open(struct nf_spill *s, struct nf_error *err);
/* The next record into rec: 1 read, 0 at the end, NF_EIO. */
int nf_spill_reader_get(struct nf_spill_reader *r, void *rec, struct nf_error *err);
void nf_spill_reader_close(struct nf_spill_reader *r);

/* ---- external sort ---- */

typedef int (*nf_sort_cmp)(const void *a, const void *b);

struct nf_sorter;

/*
 * A sorter of records of rec_size bytes ordered by cmp, holding at most
 * mem_budget bytes of records in memory (runs beyond go to a file in dir).
 * Returns NULL with err filled.
 */
struct nf_sorter *nf_sorter_create(const char *dir, size_t rec_size, size_t mem_budget,
				   nf_sort_cmp cmp, struct nf_error *err);
/* Adds one record (before nf_sorter_sort). 0, NF_EIO or NF_ENOMEM. */
int nf_sorter_add(struct nf_sorter *s, const void *rec, struct nf_error *err);
/* Ends adding; the records can then be read in order. 0, NF_EIO or NF_ENOMEM. */
int nf_sorter_sort(struct nf_sorter *s, struct nf_error *err);
/*
 * Borrows the next record in order: 1 (*rec set, valid until the next call),
 * 0 at the end, NF_EIO.
 */
int nf_sorter_next(struct nf_sorter *s, const void **rec, struct nf_error *err);
uint64_t nf_sorter_count(const struct nf_sorter *s);
void nf_sorter_destroy(struct nf_sorter *s);

#endif
