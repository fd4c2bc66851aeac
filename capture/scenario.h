/*
 * The scenario language: a small text format describing adapters, queues,
 * fences and timed operations, with loops. A scenario is parsed whole into a
 * program first (errors: "file:line:column: what is wrong"), then run against
 * a runtime. Grammar: schemas/scenario.md.
 */
#ifndef NF_SCENARIO_H
#define NF_SCENARIO_H

#include <stddef.h>
#include <stdint.h>

#include "contract/errors.h"
#include "nftrace/nfence.h"

struct nf_scenario;

/* Session-level settings a scenario may make (applied to the runtime config). */
struct nf_scenario_settings {
	bool has_seed;
	uint64_t seed;
	struct nf_runtime_config cfg; /* defaults, then the scenario's `os`/`session` lines */
};

/* Parses text (name is used in messages). Returns 0 or NF_EFORMAT/NF_ENOMEM. */
int nf_scenario_parse(const char *name, const char *text, size_t len,
		      struct nf_scenario **out, struct nf_error *err);
/* Reads and parses a file. */
int nf_scenario_load(const char *path, struct nf_scenario **out, struct nf_error *err);

/* The runtime configuration the scenario asks for (seed, clocks, logs...). */
void nf_scenario_apply_settings(const struct nf_scenario *s, struct nf_runtime_config *cfg);

/* The adapters the scenario defines, in order: fills up to max pointers
 * (owned by the scenario) and returns how many there are. */
size_t nf_scenario_adapters(const struct nf_scenario *s, const struct nf_adapter_desc **out,
			    size_t max);

/* Runs the scenario against a runtime (then call nf_runtime_finish). */
struct nf_scenario_progress {
	void *ctx;
	/* called now and then with the operations done so far; non-zero stops the run */
	int (*tick)(void *ctx, uint64_t operations);
};
int nf_scenario_run(const struct nf_scenario *s, nf_runtime *rt,
		    const struct nf_scenario_progress *progress, struct nf_error *err);

void nf_scenario_destroy(struct nf_scenario *s);

#endif
