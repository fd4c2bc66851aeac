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

struct nf_record_options {
	const char *out_dir;        /* session directory to create */
	const char *scenario;       /* scenario file (or NULL with argv) */
	char *const *argv;          /* program and arguments (record -- PROGRAM) */
	bool seed_set;
	uint64_t seed;
	enum nf_mode mode;
	bool ground_truth;
	bool force;                 /* replace an existing session */
	bool progress;              /* print a progress line (the CLI sets it on a tty) */
	volatile int *interrupted;  /* set asynchronously (SIGINT): finish cleanly */
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
 * is an nftrace session or empty). */
int nf_record_prepare_dir(const char *dir, bool force, struct nf_error *err);

#ifdef __cplusplus
}
#endif

#endif
