/* nftrace import: convert a trace-cmd file (trace.dat) or a Windows ETW capture (.etl) into a
 * session directory; which one is told by the file's content. */
#include "cli.h"

#include "contract/session.h"

#include <getopt.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static volatile int import_interrupted;

static void on_signal(int sig)
{
	import_interrupted = sig;
}

/* What `nftrace import --help` prints; the options it names are parsed below. */
const char cmd_import_usage[] =
	"usage: nftrace import TRACE.DAT|CAPTURE.ETL -o DIR [--force]\n"
	"\n"
	"A Windows ETW capture (.etl: told by its content, or taken as one by its name; from xperf,\n"
	"WPR or GPUView's log.cmd) is copied into DIR and read without the Windows API:\n"
	"Microsoft-Windows-DxgKrnl contexts and hardware queues become queues, sync objects\n"
	"fences, wait and signal queue packets fence_ops (tied wait <- signal in deps), CPU waits\n"
	"cpu_waits, DMA packets dma_packets, VSyncs vsyncs, other events etw_events\n"
	"(schemas/timeline.sql).\n"
	"\n"
	"Reads a trace-cmd file (versions 6 and 7, every buffer instance in it) with libtracecmd and\n"
	"decodes its events with libtraceevent from the formats stored in the file. dma_fence events\n"
	"become fences on per-timeline rows, waits and signals (fence_ops, deps), sched_switch CPU\n"
	"thread rows (cpu_runs), other events raw rows (kernel_events), lost events anomalies.\n"
	"The session's clock is the trace's clock in nanoseconds from its first event.\n"
	"\n"
	"The new session is built beside DIR and takes its place only once complete: a file\n"
	"that cannot be read, Ctrl-C (exit 130) or SIGTERM leave DIR as it was.\n"
	"\n"
	"  -o, --output DIR   session directory to create\n"
	"  --force            replace an existing session in DIR\n";

int cmd_import(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
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
		return nf_cli_usage_error("import", "missing TRACE.DAT or CAPTURE.ETL");
	if (optind + 1 < argc)
		return nf_cli_usage_error("import", "unexpected argument '%s'", argv[optind + 1]);
	nf_error_clear(&err);
	/* SIGINT/SIGTERM stop the import, which then removes its temporary
	 * session and leaves DIR as it was. */
	struct sigaction sa = { 0 };
	struct nf_import_result res;
	int rc;

	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	rc = nf_import(argv[optind], out, force, &import_interrupted, &res, &err);
	if (rc == NF_EINTR) {
		fprintf(stderr, "nftrace import: interrupted; %s left as it was\n", out);
		return NF_EXIT_INTERRUPTED;
	}
	if (rc)
		return nf_cli_fail("import", &err);
	printf("imported %s into %s: %s\n", argv[optind], out, res.summary);
	if (res.note[0])
		printf("worked around: %s\n", res.note);
	return NF_EXIT_OK;
}
