/*
 * An input file opened as a regular file only (contract of core/infile.c):
 * a FIFO, a device or a directory given where a capture is expected is
 * refused at once instead of blocking the reader (a FIFO's open and read
 * wait for a writer for ever).
 */
#ifndef NFTRACE_INFILE_H
#define NFTRACE_INFILE_H

#include "contract/errors.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Opens path read-only without blocking (O_NONBLOCK, then cleared) and checks
 * that it is a regular file. Returns the descriptor (close-on-exec; the
 * caller closes it), or a negative code: NF_ENOENT (no such file), NF_EIO
 * (cannot open it), NF_EFORMAT ("not a regular file": a FIFO, a device, a
 * directory, a socket); err (may be NULL) names path.
 */
int nf_infile_open(const char *path, struct nf_error *err);

#ifdef __cplusplus
}
#endif

#endif
