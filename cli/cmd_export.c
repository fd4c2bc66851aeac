/* nftrace export: a session's timeline as a Perfetto trace or Chrome trace JSON. */
#include "cli.h"

#include "nftrace/export.h"
#include "nftrace/render.h"
#include "nftrace/timeline.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT_MAX_FILTER 256

static int parse_id(const char *s, int64_t *out)
{
	char *end;

	errno = 0;
	long long v = strtoll(s, &end, 0);
	if (errno || *end || !*s || v < 0)
		return -1;
	*out = v;
	return 0;
}

int cmd_export(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'm' },
		{ "from", required_argument, NULL, 'F' },
		{ "to", required_argument, NULL, 'T' },
		{ "queue", required_argument, NULL, 'q' },
		{ "fence", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct nf_export_options eo = { 0 };
	struct nf_export_stats st;
	int64_t queues[EXPORT_MAX_FILTER], fences[EXPORT_MAX_FILTER];
	struct nf_error err;
	const char *format = NULL;
	char db[4200];
	int opt;

	eo.from_ns = -1;
	eo.to_ns = -1;
	nf_error_clear(&err);
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'o': eo.output = optarg; break;
		case 'm': format = optarg; break;
		case 'F':
		case 'T':
			if (nf_parse_duration(optarg, opt == 'F' ? &eo.from_ns : &eo.to_ns, &err))
				return nf_cli_usage_error("export", "--%s: %s", opt == 'F' ? "from" : "to", err.msg);
			break;
		case 'q':
		case 'f': {
			int64_t *arr = opt == 'q' ? queues : fences;
			int *n = opt == 'q' ? &eo.n_queues : &eo.n_fences;
			if (*n >= EXPORT_MAX_FILTER)
				return nf_cli_usage_error("export", "too many filters (limit %d)", EXPORT_MAX_FILTER);
			if (parse_id(optarg, &arr[*n]))
				return nf_cli_usage_error("export", "bad %s handle '%s'", opt == 'q' ? "queue" : "fence", optarg);
			(*n)++;
			break;
		}
		case 'h': return nf_cli_common_option("export", "--help");
		case 'V': return nf_cli_common_option("export", "--version");
		case ':': return nf_cli_usage_error("export", "option '%s' needs a value", argv[optind - 1]);
		default: return nf_cli_usage_error("export", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return nf_cli_usage_error("export", "missing session DIR");
	if (optind + 1 < argc)
		return nf_cli_usage_error("export", "unexpected argument '%s'", argv[optind + 1]);
	if (!eo.output)
		return nf_cli_usage_error("export", "missing -o FILE");
	if (!format)
		return nf_cli_usage_error("export", "missing --format perfetto|chrome-json");
	/* Checked here, before the session is read or its timeline built. */
	if (nf_export_parse_format(format, &eo.format, &err))
		return nf_cli_usage_error("export", "--format: %s", err.msg);
	if (eo.from_ns >= 0 && eo.to_ns >= 0 && eo.to_ns <= eo.from_ns)
		return nf_cli_usage_error("export", "--to must be after --from");
	eo.queues = eo.n_queues ? queues : NULL;
	eo.fences = eo.n_fences ? fences : NULL;
	if (nf_timeline_ensure(argv[optind], db, sizeof(db), &err) || nf_export(db, &eo, &st, &err))
		return nf_cli_fail("export", &err);
	printf("%s: %" PRIu64 " slices (%" PRIu64 " stalls), %" PRIu64 " instants, %" PRIu64
	       " flows, %" PRIu64 " counter values, %" PRIu64 " tracks, %" PRIu64 " bytes",
	       eo.output, st.slices, st.stalls, st.instants, st.flows, st.counters, st.tracks, st.bytes);
	if (st.skipped)
		printf(" (%" PRIu64 " operations with no time left out)", st.skipped);
	printf("\n");
	return NF_EXIT_OK;
}
