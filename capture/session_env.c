/* The session environment written into every trace (see session_env.h). */
#include "session_env.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef NF_VERSION
#define NF_VERSION "0.0.0"
#endif

#define NF_ENV_MAX_ADAPTERS 16
#define NF_ENV_PER_ADAPTER 10

int nf_session_writer_create(const char *dir, const struct nf_runtime_config *cfg,
			     const char *source, const struct nf_adapter_desc *const *adapters,
			     size_t n_adapters, struct nf_ctf_writer **out, struct nf_error *err)
{
	char host[256] = "unknown";
	char keys[NF_ENV_MAX_ADAPTERS][NF_ENV_PER_ADAPTER][40];
	char rates[NF_ENV_MAX_ADAPTERS][3][32]; /* drift, zero_ts, repeat_ts */
	struct nf_ctf_env_entry env[16 + NF_ENV_MAX_ADAPTERS * NF_ENV_PER_ADAPTER];
	size_t n = 0, na = n_adapters < NF_ENV_MAX_ADAPTERS ? n_adapters : NF_ENV_MAX_ADAPTERS;

	if (gethostname(host, sizeof(host) - 1) != 0)
		snprintf(host, sizeof(host), "unknown");
	host[sizeof(host) - 1] = '\0';
	/* Deterministic sessions must not depend on the machine: leave the host out. */
	const char *h = cfg->mode == NF_MODE_DETERMINISTIC ? "deterministic" : host;
#define ENV_S(k, v) env[n++] = (struct nf_ctf_env_entry){ (k), false, 0, (v) }
#define ENV_I(k, v) env[n++] = (struct nf_ctf_env_entry){ (k), true, (int64_t)(v), NULL }
	ENV_S("domain", "nftrace");
	ENV_S("tool_version", NF_VERSION);
	ENV_I("schema_version", NF_SCHEMA_VERSION);
	ENV_S("source", source);
	ENV_S("mode", cfg->mode == NF_MODE_THREADED ? "threaded" : "deterministic");
	ENV_S("host", h);
	ENV_I("seed", cfg->seed);
	ENV_I("cpu_frequency", cfg->cpu_frequency);
	ENV_I("start_ticks", cfg->cpu_start_ticks);
	ENV_I("ground_truth", cfg->ground_truth);
	/* The OS side's fault knobs. */
	ENV_I("tracing", cfg->tracing);
	ENV_I("tracing_log_entries", cfg->tracing_log_entries);
	ENV_I("log_read_interval_ns", cfg->log_read_interval_ns);
	ENV_I("calibration_interval_ns", cfg->calibration_interval_ns);
	ENV_I("recreate_logs_ns", cfg->log_recreate_interval_ns);
	if (adapters)
		ENV_I("adapters", n_adapters);
	/* Each adapter known in advance: its capabilities and its GPU clock. */
	for (size_t i = 0; i < na; i++) {
		const struct nf_adapter_desc *a = adapters[i];
		static const char *const names[NF_ENV_PER_ADAPTER] = {
			"name", "vidsch_caps", "native_fence_caps", "gpu_frequency", "gpu_offset",
			"drift_ppm", "jitter_ns", "zero_ts_rate", "repeat_ts_rate", "log_entries",
		};

		for (int k = 0; k < NF_ENV_PER_ADAPTER; k++)
			snprintf(keys[i][k], sizeof(keys[i][k]), "adapter%zu_%s", i, names[k]);
		snprintf(rates[i][0], sizeof(rates[i][0]), "%.3f", a->gpu_clock.drift_ppm);
		snprintf(rates[i][1], sizeof(rates[i][1]), "%.6f", a->zero_ts_rate);
		snprintf(rates[i][2], sizeof(rates[i][2]), "%.6f", a->repeat_ts_rate);
		ENV_S(keys[i][0], a->name ? a->name : "");
		ENV_I(keys[i][1], a->vidsch_caps);
		ENV_I(keys[i][2], a->native_fence_caps);
		ENV_I(keys[i][3], a->gpu_clock.frequency);
		ENV_I(keys[i][4], a->gpu_clock.offset);
		ENV_S(keys[i][5], rates[i][0]);
		ENV_I(keys[i][6], a->gpu_clock.jitter_ns);
		ENV_S(keys[i][7], rates[i][1]);
		ENV_S(keys[i][8], rates[i][2]);
		ENV_I(keys[i][9], a->log_entries);
	}
#undef ENV_S
#undef ENV_I
	struct nf_ctf_writer_options o = { 0 };

	o.cpu_frequency = cfg->cpu_frequency;
	o.truth_stream = cfg->ground_truth;
	o.env = env;
	o.n_env = n;
	return nf_ctf_writer_create(dir, &o, out, err);
}
