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
 * A session built aside, then swapped in: the rule of every command that
 * writes a session. A failure or a signal at any moment leaves the previous
 * session exactly as it was, and no temporary behind (the next run removes a
 * dead run's leftovers).
 *
 *   nf_session_aside_begin(&a, "out/s", "record", force, err)
 *   ... write the session into a.target ...
 *   rc ? nf_session_aside_abort(&a) : nf_session_aside_commit(&a, err)
 *
 * When there is nothing to replace (dir absent or an empty directory) the
 * session is written in dir itself (a.target is dir: a killed writer leaves
 * what it wrote, as a recording should). When dir holds a session (only
 * with force, and only one nf_session_dir_check accepts) it is written in
 * DIR.WHAT-XXXXXX beside it (mode 0755 less the umask, held with flock
 * while the writer lives), and commit renames the old session to
 * DIR.old-XXXXXX (the same suffix), the new one to DIR, then removes the
 * old one's files; abort removes the temporary's files. Trailing slashes of
 * dir are ignored (DIR/ is DIR).
 */
#define NF_SESSION_PATH_MAX 4096

struct nf_session_aside {
	char dir[NF_SESSION_PATH_MAX];    /* the session's name, without trailing slashes */
	char target[NF_SESSION_PATH_MAX]; /* where to write it: dir, or the temporary */
	bool replace;                     /* target is a temporary that replaces dir's session */
	enum nf_session_kind old;         /* what dir holds (replace) */
	int lock_fd;                      /* the temporary, flocked; -1 when none */
};

/*
 * Prepares a.target for writing a session named dir (what: a word for the
 * temporary's name, "record" or "import"). First removes the leftovers of
 * dead runs beside dir (DIR.WHAT-XXXXXX and DIR.old-XXXXXX that no live
 * process holds, only nftrace's files in them; a session a killed swap had
 * moved aside is put back when dir is missing). Returns 0; NF_EINVAL (dir
 * empty, or too long); NF_EEXIST (dir is a file, a non-empty directory
 * without force, or not an nftrace session: nothing is touched); NF_EIO
 * (dir cannot be examined, the temporary cannot be made). a is the caller's.
 */
int nf_session_aside_begin(struct nf_session_aside *a, const char *dir, const char *what, bool force,
			   struct nf_error *err);

/*
 * The session in a.target is complete: swaps it in place of dir's (nothing
 * to do when it was written in dir). Returns 0, or NF_EIO (a rename failed:
 * the old session is put back, and the message says where the new one is
 * when it could not be kept). Releases a either way.
 */
int nf_session_aside_commit(struct nf_session_aside *a, struct nf_error *err);

/* The write failed: removes the temporary (nftrace's files in it, then it)
 * and releases a; dir is left as it was. Nothing to do when the session was
 * written in dir itself (what was written stays). Returns nothing. */
void nf_session_aside_abort(struct nf_session_aside *a);

/* Replaces the temporary's path in err's message by dir's, so that an
 * error names the user's session, not a directory that is about to go.
 * Returns nothing: a no-op without a temporary or an error. */
void nf_session_aside_name_errors(const struct nf_session_aside *a, struct nf_error *err);

#ifdef __cplusplus
}
#endif

#endif
