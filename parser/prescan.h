/*
 * Private to parser/: the pre-scan of a session's stream files (prescan.c),
 * run by nf_parser_open before babeltrace2 reads anything.
 */
#ifndef NF_PARSER_PRESCAN_H
#define NF_PARSER_PRESCAN_H

#include "contract/ctf_meta.h"
#include "contract/errors.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Is DIR/metadata nftrace's own, at this schema version: the whole text the
 * CTF writer generates, where only the UUID, the environment's values, the
 * clock's frequency and offset and the truth stream's presence vary? The
 * pre-scan and the native reader (fastread.c) only take such sessions;
 * babeltrace2 reads every other one in a child first (reader.c). */
bool nf_prescan_metadata_is_ours(const char *dir);

/* The variable parts of nftrace's own metadata. */
#define NF_PRESCAN_ENV_MAX 256
struct nf_prescan_meta {
	uint64_t freq, offset;   /* the CPU clock: frequency (Hz) and offset (cycles) */
	bool truth;              /* the truth stream class is defined */
	size_t n_env;            /* the environment, in the file's order */
	struct nf_ctf_env_entry env[NF_PRESCAN_ENV_MAX];
	char keys[NF_PRESCAN_ENV_MAX][65];
	char *vals;              /* the string values (env[].sval point here) */
	size_t used;
	unsigned char uuid[16];  /* the trace UUID: every packet header carries it */
};

/*
 * The same test, keeping what was read: NULL when DIR/metadata is not ours
 * (or cannot be read, or memory is short), else its parts, freed with
 * nf_prescan_meta_free().
 */
struct nf_prescan_meta *nf_prescan_metadata_load(const char *dir);
void nf_prescan_meta_free(struct nf_prescan_meta *mt);

/*
 * When DIR/metadata is nftrace's own (this schema version), checks every
 * stream file's packets and events against the schema's layout. Returns 0 (or
 * 0 at once for other metadata), NF_EFORMAT with "file: packet at offset N:
 * what is wrong" (truncated, corrupt, sizes or sequence lengths beyond the
 * packet), or NF_EIO / NF_ENOENT when a file cannot be read.
 */
int nf_prescan_session(const char *dir, struct nf_error *err);

/*
 * Whether an own session is whole as a recording (capture/ctf_writer.c writes
 * `recorded_NAME_bytes` into the environment when it closes the session):
 * writes "" to out when every stream is at least as long as recorded, else
 * what is missing ("no end of recording (...)", "events has N of M bytes").
 */
void nf_prescan_completeness(const char *dir, const struct nf_prescan_meta *mt, char *out,
			     size_t len);

#endif
