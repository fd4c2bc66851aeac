/*
 * Private to parser/: the pre-scan of a session's stream files (prescan.c),
 * run by nf_parser_open before babeltrace2 reads anything.
 */
#ifndef NF_PARSER_PRESCAN_H
#define NF_PARSER_PRESCAN_H

#include "nftrace/error.h"

#include <stdbool.h>

/* Is DIR/metadata nftrace's own, at this schema version: the whole text the
 * CTF writer generates, where only the UUID, the environment's values, the
 * clock's frequency and offset and the truth stream's presence vary? The
 * pre-scan and the native reader (fastread.c) only take such sessions;
 * babeltrace2 reads every other one in a child first (reader.c). */
bool nf_prescan_metadata_is_ours(const char *dir);

/*
 * When DIR/metadata is nftrace's own (this schema version), checks every
 * stream file's packets and events against the schema's layout. Returns 0 (or
 * 0 at once for other metadata), NF_EFORMAT with "file: packet at offset N:
 * what is wrong" (truncated, corrupt, sizes or sequence lengths beyond the
 * packet), or NF_EIO / NF_ENOENT when a file cannot be read.
 */
int nf_prescan_session(const char *dir, struct nf_error *err);

#endif
