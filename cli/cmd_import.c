/* nftrace import: convert a trace-cmd file (trace.dat) into a session directory. */
#include "cli.h"

#include "nftrace/kernel.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int cmd_import(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct nf_kernel_stats st;
	struct nf_error err;
	const char *out = NULL;
	bool force = false;
	int opt;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'o': out = optarg; break;
		case 'f': force = true; break;
		case 'h': return nf_cli_common_option("import", "--help");
		case 'V': return nf_cli_common_option("import", "--version");
		case ':': return nf_cli_usage_error("import", "option '%s' needs a value", argv[optind - 1]);
		default: return nf_cli_usage_error("import", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (!out)
		return nf_cli_usage_error("import", "missing -o DIR");
	if (optind >= argc)
		return nf_cli_usage_error("import", "missing TRACE.DAT");
	if (optind + 1 < argc)
		return nf_cli_usage_error("import", "unexpected argument '%s'", argv[optind + 1]);
	nf_error_clear(&err);
	if (nf_kernel_import(argv[optind], out, force, &st, &err))
		return nf_cli_fail("import", &err);
	printf("imported %s into %s: %" PRIu64 " kernel records on %u CPUs (%" PRIu64 " dma_fence, %" PRIu64
	       " sched, %" PRIu64 " GPU job/vblank, %" PRIu64 " markers, %" PRIu64 " other), %" PRIu64
	       " events lost by the kernel\n",
	       argv[optind], out, st.records, st.cpus, st.dma_fence, st.sched, st.gpu, st.markers, st.raw,
	       st.lost_events);
	if (st.note[0])
		printf("worked around: %s\n", st.note);
	return NF_EXIT_OK;
}
