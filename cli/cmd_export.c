/* nftrace export: a session's timeline as a Perfetto trace or Chrome trace JSON. */
#include "cli.h"
#include "contract/escape.h"
#include "contract/sessiondir.h"

#include "contract/export.h"
#include "contract/render.h"
#include "contract/session.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What `nftrace export --help` prints; the options it names are parsed below. */
const char cmd_export_usage[] =
	"usage: nftrace export DIR -o FILE --format perfetto|chrome-json [--from T] [--to T]\n"
	"                      [--queue Q]... [--fence F]...\n"
	"\n"
	"Writes the session's timeline for Perfetto UI (ui.perfetto.dev: Open trace file),\n"
	"trace_processor or chrome://tracing: a process per adapter with a track per hardware\n"
	"queue, a thread track per CPU thread, each GPU wait and signal a slice from queued to\n"
	"end (the stall nested), CPU waits, a flow from each signal to each wait it released,\n"
	"lost spans and anomalies as instants, lost entries per log as counters; for imported\n"
	"captures also GPU jobs per ring (their dependencies as flows), vblanks, markers, ETW\n"
	"DMA packets per node and VSyncs (--fence leaves these out, --queue all but the\n"
	"queue's DMA packets).\n"
	"\n"
	"  -o, --output FILE   file to write (replaced when complete)\n"
	"  --format F          perfetto (protobuf) or chrome-json\n"
	"  --from T, --to T    only what overlaps this window (units as in report: 12.5ms)\n"
	"  --queue Q           only this hardware queue's operations (repeat for more)\n"
	"  --fence F           only operations and CPU waits/signals on this fence (repeat)\n";

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
	struct nf_cli_window win;
	struct nf_error err;
	const char *format = NULL;
	char db[4200];
	int opt;

	nf_cli_window_init(&win);
	nf_error_clear(&err);
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'o': eo.output = optarg; break;
		case 'm': format = optarg; break;
		case 'F':
		case 'T':
		case 'q':
		case 'f': {
			int r = nf_cli_window_option("export", opt, optarg, &win);

			if (r)
				return r;
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
	if (win.from_ns >= 0 && win.to_ns >= 0 && win.to_ns <= win.from_ns)
		return nf_cli_usage_error("export", "--to must be after --from");
	eo.from_ns = win.from_ns;
	eo.to_ns = win.to_ns;
	eo.n_queues = win.n_queues;
	eo.n_fences = win.n_fences;
	eo.queues = win.n_queues ? win.queues : NULL;
	eo.fences = win.n_fences ? win.fences : NULL;
	if (nf_session_output_check(argv[optind], eo.output, &err) ||
	    nf_timeline_ensure(argv[optind], db, sizeof(db), &err) || nf_export(db, &eo, &st, &err))
		return nf_cli_fail("export", &err);
	char shown[4200];

	printf("%s: %" PRIu64 " slices (%" PRIu64 " stalls), %" PRIu64 " instants, %" PRIu64
	       " flows, %" PRIu64 " counter values, %" PRIu64 " tracks, %" PRIu64 " bytes",
	       nf_esc_text_buf(shown, sizeof(shown), eo.output, 0), st.slices, st.stalls, st.instants, st.flows, st.counters, st.tracks, st.bytes);
	if (st.skipped)
		printf(" (%" PRIu64 " operations with no time left out)", st.skipped);
	printf("\n");
	return NF_EXIT_OK;
}
