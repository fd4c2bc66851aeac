/*
 * nftrace recorder: runs a scenario through the runtime (or a program that
 * links it) and writes the session directory (CTF trace + environment).
 *
 * Every function returns 0 or a negative NF_E* code and fills err (may be
 * NULL) with one line naming the file or program; it never prints (progress
 * goes to the caller's callback) and never exits. opts and what it points to
 * are borrowed for the call; res is the caller's and is written (zeroed
 * first) whatever the result. Two calls may run at once in one process only
 * on different out_dirs; nf_record_program forks (the NFTRACE_* variables
 * are set in the child only) and waits for its child.
 */
#ifndef NFTRACE_RECORD_H
#define NFTRACE_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "contract/errors.h"
#include "nftrace/nfence.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a recording has done so far (the progress callback's argument). */
struct nf_record_progress {
	uint64_t operations;
	uint64_t events;
	uint64_t bytes;
	uint64_t lost_entries;
	bool done;                  /* the last call: the run is over */
};

struct nf_record_options {
	const char *out_dir;        /* session directory to create */
	const char *scenario;       /* scenario file (or NULL with argv) */
	char *const *argv;          /* program and arguments (record -- PROGRAM) */
	bool seed_set;
	uint64_t seed;
	enum nf_mode mode;
	bool ground_truth;
	bool force;                 /* replace an existing session */
	/* Called now and then during a scenario run, and once with done set at
	 * the end (the CLI prints a progress line on a tty; the library never
	 * prints). NULL: no calls. */
	void (*progress)(void *ctx, const struct nf_record_progress *p);
	void *progress_ctx;
	/* Set asynchronously (SIGINT): any phase stops, the session is closed
	 * cleanly and the call returns NF_EINTR. With a program, a value that is
	 * a signal number (SIGINT, SIGTERM) is forwarded to it unless it ends by
	 * itself within 200 ms (Ctrl-C reaches it directly; a signal sent to
	 * nftrace alone does not), and its session is then the recording. */
	volatile int *interrupted;
	/* Called once the recording is closed (finished, or interrupted and
	 * closed cleanly), with the directory holding it (the session, or the
	 * temporary that replaces it), before it replaces anything; a non-zero
	 * return fails the recording (the previous session is kept). err is
	 * NULL after an interruption. `record --kernel` appends the kernel
	 * stream here. NULL: none. */
	int (*before_commit)(void *ctx, const char *dir, struct nf_error *err);
	void *before_commit_ctx;
};

struct nf_record_result {
	uint64_t operations;
	uint64_t events;
	uint64_t bytes;
	uint64_t lost_entries;
	bool interrupted;
};

/* Records a scenario (opts->scenario) into opts->out_dir, mode, seed and
 * ground truth from opts (the seed and settings of the scenario's `session`
 * line apply unless opts->seed_set). Returns 0; NF_EINTR when
 * opts->interrupted was set (the session is closed cleanly and holds what was
 * recorded up to then; res->interrupted is set); the scenario's NF_ENOENT,
 * NF_EIO, NF_EFORMAT (file, line and what is wrong) or NF_ENOMEM;
 * nf_aside_begin's codes (out_dir refused: contract/sessiondir.h);
 * any code of the runtime calls the scenario makes (nfence.h: NF_EINVAL,
 * NF_EUNSUPP, NF_ETIMEOUT, NF_ESTATE, ...); NF_EIO when the session cannot
 * be written (the writer's message: file and offset; disk full, a file size
 * limit), also at its close; before_commit's code. A session that replaces
 * another (force) is recorded beside it and swapped in when complete or
 * interrupted: a failed run keeps the previous session as it was. Without
 * one to replace, a failed run leaves the session written up to the
 * failure. */
int nf_record_scenario(const struct nf_record_options *opts, struct nf_record_result *res,
		       struct nf_error *err);

/* Runs opts->argv with NFTRACE_RECORD_DIR set so the runtime it links records
 * into opts->out_dir (or the temporary that replaces it, as for a scenario;
 * NFTRACE_SEED, NFTRACE_MODE, NFTRACE_GROUND_TRUTH and NFTRACE_SOURCE from
 * opts; NFTRACE_STATUS_FD, a pipe on which the runtime reports a recording
 * that failed), and waits for it. A program that cannot run or records
 * nothing leaves a session it would replace as it was. Returns 0; NF_EINVAL
 * with no program; nf_aside_begin's codes; NF_ENOENT when the program
 * cannot be run; NF_EIO when pipe/fork/waitpid fail, when the program exits
 * non-zero or is killed (its status in the message), or when its runtime
 * reported that the session could not be written (that message: the
 * writer's close error, a sink failure, a forked child's use of the
 * runtime); NF_EINTR when the program was stopped by SIGINT/SIGTERM or
 * opts->interrupted (what it recorded is the session; res->interrupted);
 * NF_EFORMAT when the program recorded nothing (no
 * nf_runtime_create_from_env). Of res only interrupted is set: the counts
 * stay 0 (they are in the session). */
int nf_record_program(const struct nf_record_options *opts, struct nf_record_result *res,
		      struct nf_error *err);

/* For the trace-cmd import (the recorder itself builds aside, above).
 * Prepares out_dir: refuses an existing one unless force (and then only when it
 * is an nftrace session or empty). An nftrace session is a CTF one or an
 * imported ETW one holding only nftrace's files (nf_session_dir_check,
 * include/contract/sessiondir.h); its files are removed, anything else refuses
 * the whole replacement before a file is touched. Returns 0 (dir is absent
 * or empty now; it is not created), NF_EEXIST (dir is a file, a non-empty
 * directory without force, or with force something other than an nftrace
 * session: nothing is removed), NF_EIO (dir cannot be examined or a file of
 * the session cannot be removed), NF_EINVAL (dir is empty: ""). */
int nf_record_prepare_dir(const char *dir, bool force, struct nf_error *err);

#ifdef __cplusplus
}
#endif

#endif
