/*
 * What an nftrace session directory is, for the commands that replace one
 * (`record --force`, `import --force`): a recorded or imported CTF session
 * (its metadata is the one nftrace's CTF writer generates) or an imported
 * Windows ETW session (capture.etl and the files the import and the analyzer
 * write beside it, no CTF metadata). Anything else -- another tool's trace, a
 * folder that merely holds a file named `metadata` or `capture.etl`, a session
 * with a user's file or a subdirectory in it -- is not replaced.
 */
#ifndef NFTRACE_SESSIONDIR_H
#define NFTRACE_SESSIONDIR_H

#include <stdbool.h>

#include "contract/errors.h"

#ifdef __cplusplus
extern "C" {
#endif

enum nf_session_kind {
	NF_SESSION_NONE = 0, /* not an nftrace session */
	NF_SESSION_CTF,      /* dir/metadata is nftrace's CTF metadata */
	NF_SESSION_ETW,      /* dir/capture.etl, no metadata */
};

/* The kind of dir judged by its marker file alone (no listing). */
enum nf_session_kind nf_session_dir_kind(const char *dir);

/*
 * Checks that dir is an nftrace session holding nothing but the plain files
 * nftrace writes for its kind. Returns the kind (> 0), or NF_EEXIST with one
 * line naming dir and what is wrong (not a session; a file or subdirectory
 * nftrace did not write), or NF_EIO when dir cannot be listed. Touches nothing.
 */
int nf_session_dir_check(const char *dir, struct nf_error *err);

/*
 * Removes the files nftrace wrote in dir (after nf_session_dir_check said it
 * is a session of that kind), never following links or descending; other
 * entries are left. Does not remove dir itself. Returns 0 or NF_EIO (the file
 * and the cause in err).
 */
int nf_session_dir_clear(const char *dir, enum nf_session_kind kind, struct nf_error *err);

#ifdef __cplusplus
}
#endif

#endif
