/*
 * nftrace recorder: runs a scenario through the runtime (or a program that
 * links it) and writes the session directory (CTF trace + environment).
 */
#ifndef NFTRACE_RECORD_H
#define NFTRACE_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "nftrace/error.h"
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
};

struct nf_record_result {
	uint64_t operations;
	uint64_t events;
	uint64_t bytes;
	uint64_t lost_entries;
	bool interrupted;
};

/* Records a scenario into opts->out_dir. */
int nf_record_scenario(const struct nf_record_options *opts, struct nf_record_result *res,
		       struct nf_error *err);

/* Runs opts->argv with NFTRACE_RECORD_DIR set so the runtime it links records
 * into opts->out_dir; fails if the program fails or recorded nothing. */
int nf_record_program(const struct nf_record_options *opts, struct nf_record_result *res,
		      struct nf_error *err);

/* Prepares out_dir: refuses an existing one unless force (and then only when it
 * is an nftrace session or empty). An nftrace session is a CTF one or an
 * imported ETW one holding only nftrace's files (nf_session_dir_check,
 * include/nftrace/sessiondir.h); its files are removed, anything else refuses
 * the whole replacement before a file is touched. */
int nf_record_prepare_dir(const char *dir, bool force, struct nf_error *err);

#ifdef __cplusplus
}
#endif

#endif
