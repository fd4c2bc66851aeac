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

#include <limits.h>
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

/*
 * What a command that writes a session named dir finds there. Returns 0
 * when dir is absent or an empty directory (write there), the kind (> 0) of
 * the session it would replace (only with force, and only a session
 * nf_session_dir_check accepts), or NF_EINVAL (dir is ""), NF_EEXIST (a
 * file, a non-empty directory without force, not a session), NF_EIO (dir
 * cannot be examined). Touches nothing.
 */
int nf_session_dir_target(const char *dir, bool force, struct nf_error *err);

/*
 * Refuses an output that is a file of the session being read: its folder is
 * session_dir (the same directory, by device and inode, so also through a
 * link or another path) and its name is one nftrace writes in a session
 * (metadata, events, truth, kernel, capture.etl, the timeline and their
 * temporaries). Returns 0, or NF_EINVAL naming output and the session.
 */
int nf_session_output_check(const char *session_dir, const char *output, struct nf_error *err);

/*
 * Build aside, then swap (core/aside.c): how `import` and `record` replace a
 * session directory. nf_aside_begin checks out_dir (missing, empty, or with
 * force an nftrace session holding only nftrace's files: nf_session_dir_check;
 * trailing slashes are ignored), removes what killed runs left beside it
 * (OUT.import-*, OUT.record-* whose lock is free; OUT.old-* once OUT is a
 * session again) and makes the empty directory a->tmp beside it
 * (OUT.<what>-XXXXXX, mode 0777 less the umask), flocked until the commit or
 * the abort. The caller writes the new session into a->tmp, then
 * nf_aside_commit puts it in OUT's place: the old session is renamed aside
 * (OUT.old-XXXXXX), the new one in, and only then the old one's files are
 * removed (it goes back when the second rename fails). nf_aside_abort removes
 * a->tmp and what is in it (call it on any failure or signal: OUT is as it
 * was). Returns 0, NF_EINVAL (empty or too long a name, "/", "."), NF_EEXIST
 * (out_dir exists and is not a directory, or is not empty and not force, or
 * not a session of nftrace's), NF_EIO. nf_aside_commit aborts on failure.
 */
struct nf_aside {
	char out[PATH_MAX];        /* the session directory to replace */
	char tmp[PATH_MAX];        /* the new session being built beside it ("" once committed) */
	enum nf_session_kind old;  /* what out holds that the commit replaces (NONE: nothing, or empty) */
	int lock_fd;               /* tmp, flocked while it is built */
};
/* Checks out_dir and makes a->tmp beside it, as above. Returns 0, NF_EINVAL,
 * NF_EEXIST or NF_EIO. */
int nf_aside_begin(const char *out_dir, bool force, const char *what, struct nf_aside *a,
		   struct nf_error *err);
/* Puts a->tmp in out_dir's place, as above. Returns 0, NF_EINVAL or NF_EIO
 * (then a->tmp is removed and out_dir is as it was). */
int nf_aside_commit(struct nf_aside *a, struct nf_error *err);
/* Removes a->tmp and its files; a no-op once committed, or with NULL. */
void nf_aside_abort(struct nf_aside *a);

#ifdef __cplusplus
}
#endif

#endif
