/*
 * Private to parser/: the pre-scan of a session's stream files (prescan.c),
 * run by nf_parser_open before babeltrace2 reads anything.
 */
#ifndef NF_PARSER_PRESCAN_H
#define NF_PARSER_PRESCAN_H

#include "nftrace/error.h"

/*
 * When DIR/metadata is nftrace's own (this schema version), checks every
 * stream file's packets and events against the schema's layout. Returns 0 (or
 * 0 at once for other metadata), NF_EFORMAT with "file: packet at offset N:
 * what is wrong" (truncated, corrupt, sizes or sequence lengths beyond the
 * packet), or NF_EIO / NF_ENOENT when a file cannot be read.
 */
int nf_prescan_session(const char *dir, struct nf_error *err);

#endif
