/*
 * An output file that replaces its name only when complete: written to a
 * temporary beside it (NAME.tmp-XXXXXX) and renamed over NAME on success, so a
 * failed or interrupted write (disk full, a file size limit) leaves the
 * previous file as it was and no partial one. A device or a pipe given as the
 * name (/dev/null, /dev/stdout, a FIFO) is written in place: renaming over it
 * would replace the device node. Used by `report` (pictures, HTML) and
 * `export`.
 */
#ifndef NFTRACE_OUTFILE_H
#define NFTRACE_OUTFILE_H

#include <stdbool.h>
#include <stdio.h>

#include "contract/errors.h"

#ifdef __cplusplus
extern "C" {
#endif

struct nf_outfile {
	FILE *f;     /* where to write, between open and close */
	char *tmp;   /* the temporary's name (NULL: written in place) */
	char *path;  /* the final name */
};

/*
 * Opens an output for path. Returns 0 with of->f open for writing,
 * NF_EINVAL (path is a directory), NF_ENOENT (its directory does not exist),
 * NF_EIO (cannot create: the message names path), NF_ENOMEM.
 */
int nf_outfile_open(struct nf_outfile *of, const char *path, struct nf_error *err);

/*
 * Closes the output. With keep, flushes and renames the temporary over the
 * final name; returns 0, or NF_EIO (a write, the close or the rename failed:
 * the message names the final path; nothing is left in its place). Without
 * keep (the writer failed), removes the temporary and returns 0. Safe on an
 * output that was never opened (zeroed).
 */
int nf_outfile_close(struct nf_outfile *of, bool keep, struct nf_error *err);

#ifdef __cplusplus
}
#endif

#endif
