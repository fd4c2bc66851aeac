/* nftrace import: convert a trace-cmd file (trace.dat), ftrace text or a Windows ETW capture (.etl) into a
 * session directory; which one is told by the file's content. */
#include "cli.h"

#include "contract/session.h"

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

enum { O_OUTPUT, O_FORCE };

static const struct nf_cli_option options[] = {
	[O_OUTPUT] = { .name = "output", .short_name = 'o', .arg = "DIR", .flags = NF_OPT_REQUIRED,
		       .complete = NF_COMPLETE_DIR, .help = "session directory to create" },
	[O_FORCE] = { .name = "force", .help = "replace an existing session in DIR" },
	{ 0 },
};

static int import_run(struct nf_cli *c)
{
	const char *file = c->args[0], *out = nf_cli_get(c, O_OUTPUT);
	struct nf_import_result res;
	struct sigaction sa = { 0 };
	struct nf_error err;
	int rc;

	nf_error_clear(&err);
	/* SIGINT/SIGTERM stop the import, which then removes its temporary
	 * session and leaves DIR as it was. */
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	rc = nf_import(file, out, nf_cli_has(c, O_FORCE), &import_interrupted, &res, &err);
	if (rc == NF_EINTR) {
		fprintf(stderr, "nftrace import: interrupted; %s left as it was\n", out);
		return NF_EXIT_INTERRUPTED;
	}
	if (rc)
		return nf_cli_fail("import", &err);
	printf("imported %s into %s: %s\n", file, out, res.summary);
	if (res.note[0])
		printf("import note: %s\n", res.note);
	return NF_EXIT_OK;
}

const struct nf_cli_cmd cmd_import = {
	.options = options,
	.args = "TRACE.DAT, FTRACE.TXT or CAPTURE.ETL",
	.min_args = 1,
	.max_args = 1,
	.args_complete = NF_COMPLETE_FILE,
	.args_exts = "dat|etl|txt|report",
	.synopsis = "nftrace import TRACE.DAT|FTRACE.TXT|CAPTURE.ETL -o DIR [--force]\n",
	.description =
		"A Windows ETW capture (.etl: told by its content, or taken as one by its name; from xperf,\n"
		"WPR or GPUView's log.cmd) is copied into DIR and read without the Windows API:\n"
		"Microsoft-Windows-DxgKrnl contexts and hardware queues become queues, sync objects\n"
		"fences, wait and signal queue packets fence_ops (tied wait <- signal in deps), CPU waits\n"
		"cpu_waits, DMA packets dma_packets, VSyncs vsyncs, other events etw_events\n"
		"(nftrace-timeline(5)).\n"
		"\n"
		"Reads a trace-cmd file (versions 6 and 7, every buffer instance in it) with libtracecmd and\n"
		"decodes its events with libtraceevent from the formats stored in the file. dma_fence events\n"
		"become fences on per-timeline rows, waits and signals (fence_ops, deps), sched_switch CPU\n"
		"thread rows (cpu_runs), other events raw rows (kernel_events), lost events anomalies.\n"
		"The session's clock is the trace's clock in nanoseconds from its first event.\n"
		"\n"
		"ftrace text (what `trace-cmd report [-t]` prints, or tracefs' trace file: told by its\n"
		"content, or taken as one by a .txt/.report name) gives the same rows through the same\n"
		"decoder, but for what text does not say (event systems of raw events, CPUSTAT, sub-µs\n"
		"times without -t: the output's note says the resolution). A line that does not read\n"
		"fails with FILE:LINE.\n"
		"\n"
		"The new session is built beside DIR and takes its place only once complete: a file\n"
		"that cannot be read, Ctrl-C (exit 130) or SIGTERM leave DIR as it was.\n",
	.run = import_run,
};
