/*
 * The importers' own contract (private to importers/): what the table in
 * importers.c knows of each source folder, and what one importer may ask of
 * the table instead of naming another importer (no importer includes
 * another: scripts/check-includes.sh).
 */
#ifndef NF_IMPORTERS_INT_H
#define NF_IMPORTERS_INT_H

#include <stdint.h>

#include <sqlite3.h>

#include "contract/errors.h"
#include "nftrace/events.h"

struct nf_bulk;

/*
 * A handler for the events of one stream of a CTF session that another
 * importer owns: the CTF importer reads the session and hands over every
 * event of that stream (today: the Linux kernel importer's `kernel` stream,
 * written by `nftrace import FILE.dat` and `record --kernel`). *state is NULL
 * at the first event; the handler makes it. Calls happen inside the CTF
 * importer's transaction on db; finish runs after the CTF importer has
 * written its own operations, before its meta and commit.
 */
struct nf_importer_stream {
	enum nf_stream_id stream;
	int (*event)(void **state, sqlite3 *db, struct nf_bulk *bulk, int64_t ns,
		     const struct nf_event *ev, struct nf_error *err);
	int (*finish)(void *state, struct nf_error *err);
	void (*destroy)(void *state);
};

/* The handler of stream's events, or NULL when no importer takes them. */
const struct nf_importer_stream *nf_importers_stream(enum nf_stream_id stream);

#endif
