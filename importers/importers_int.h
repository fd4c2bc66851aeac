/*
 * The importers' own contract (private to importers/): what the table in
 * importers.c knows of each source folder, and what one importer may ask of
 * the table instead of naming another importer (no importer includes
 * another: scripts/check-includes.sh).
 */
#ifndef NF_IMPORTERS_INT_H
#define NF_IMPORTERS_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <sqlite3.h>

#include "contract/session.h"

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

/*
 * One source: a row of the table in importers.c. Every callback may be NULL
 * when the source has no such thing (the kernel importer has no session
 * directories of its own: its sessions are CTF sessions with a kernel stream).
 */
struct nf_importer {
	const char *name;  /* "ctf", "kernel", "etw": meta source and check's "source" */
	/* Whether dir is a session of this source (its timeline is built by build). */
	bool (*session_is)(const char *dir);
	/* Whether `nftrace import FILE` is this source's: by content, then (a damaged
	 * file gets the right reader's message) by name. */
	bool (*file_is)(const char *path);
	bool (*file_named)(const char *path);
	/* Builds the timeline of session dir into the database file db_path (a
	 * temporary the table renames into place), with meta session_key = key
	 * when key is not NULL (what the session was: nf_timeline_ensure compares it). */
	int (*build)(const char *dir, const char *db_path, const char *key, struct nf_error *err);
	/* Writes the session converted from file into tmp_dir (made empty and
	 * locked by the table: core/aside.c), stopping with NF_EINTR when
	 * *interrupt (may be NULL) becomes non-zero. copied: the name of a copy
	 * of file the session keeps (messages naming it name file instead), or
	 * NULL. Fills res->summary and res->note (may stay empty). */
	int (*convert)(const char *file, const char *tmp_dir, volatile int *interrupt,
		       struct nf_import_result *res, struct nf_error *err);
	const char *copied;
	/* After the timeline of the converted session was built: completes
	 * res->summary from it (db_path, read-only). */
	void (*imported)(const char *db_path, struct nf_import_result *res);
	/* `nftrace info DIR`: what the session says of itself, to out (text or
	 * one JSON object). */
	int (*info)(const char *dir, bool json, FILE *out, struct nf_error *err);
	/* `nftrace check DIR`: the source's own part (see struct nf_source_check). */
	int (*check)(const char *dir, struct nf_source_check *c, struct nf_error *err);
	/* The events of a stream of CTF sessions this source reads (NULL: none). */
	const struct nf_importer_stream *stream;
};

/* Whether the import or build running on this thread was asked to stop
 * (nf_import's interrupt flag). */
bool nf_importers_interrupted(void);

/* The early reader of the build running on this thread (nf_timeline_ensure_early), or NULL. */
struct nf_early_reader *nf_importers_early(void);

/* The rows of the table (importers/<source>/ each define theirs). */
extern const struct nf_importer nf_importer_ctf;
extern const struct nf_importer nf_importer_kernel;
extern const struct nf_importer nf_importer_etw;
extern const struct nf_importer nf_importer_ftrace_text;

/* A text for a terminal: control characters as '?' (importers' info and check). */
void nf_imp_put_clean(FILE *out, const char *s);
/* A JSON string: quotes, backslash and control bytes escaped. */
void nf_imp_put_json(FILE *out, const char *s);

#endif
