/* The session environment written into every trace (see session_env.h). */
#include "session_env.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef NF_VERSION
#define NF_VERSION "0.0.0"
#endif

int nf_session_writer_create(const char *dir, const struct nf_runtime_config *cfg,
			     const char *source, struct nf_ctf_writer **out, struct nf_error *err)
{
	char host[256] = "unknown";

	if (gethostname(host, sizeof(host) - 1) != 0)
		snprintf(host, sizeof(host), "unknown");
	host[sizeof(host) - 1] = '\0';
	/* Deterministic sessions must not depend on the machine: leave the host out. */
	const char *h = cfg->mode == NF_MODE_DETERMINISTIC ? "deterministic" : host;
	struct nf_ctf_env_entry env[] = {
		{ "domain", false, 0, "nftrace" },
		{ "tool_version", false, 0, NF_VERSION },
		{ "schema_version", true, NF_SCHEMA_VERSION, NULL },
		{ "source", false, 0, source },
		{ "mode", false, 0, cfg->mode == NF_MODE_THREADED ? "threaded" : "deterministic" },
		{ "host", false, 0, h },
		{ "seed", true, (int64_t)cfg->seed, NULL },
		{ "cpu_frequency", true, (int64_t)cfg->cpu_frequency, NULL },
		{ "start_ticks", true, (int64_t)cfg->cpu_start_ticks, NULL },
		{ "ground_truth", true, cfg->ground_truth, NULL },
	};
	struct nf_ctf_writer_options o = { 0 };

	o.cpu_frequency = cfg->cpu_frequency;
	o.truth_stream = cfg->ground_truth;
	o.env = env;
	o.n_env = sizeof(env) / sizeof(env[0]);
	return nf_ctf_writer_create(dir, &o, out, err);
}
