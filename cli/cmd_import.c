/* nftrace import: convert a trace-cmd file (trace.dat) or a Windows ETW capture (.etl) into a
 * session directory; which one is told by the file's content. */
#include "cli.h"

#include "nftrace/etwsession.h"
#include "nftrace/kernel.h"

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
	struct nf_kernel_stats st;
	struct nf_error err;
	const char *out = nf_cli_get(c, O_OUTPUT);
	bool force = nf_cli_has(c, O_FORCE);
	const char *file = c->args[0];

	nf_error_clear(&err);
	/* An ETL by its content, or by its name (so that a damaged one gets the ETL
	 * reader's message, naming the buffer and offset, not trace-cmd's). */
	size_t len = strlen(file);

	if (nf_etw_file_is(file) || (len > 4 && !strcasecmp(file + len - 4, ".etl"))) {
		struct nf_etw_import_stats est;
		struct sigaction sa = { 0 };
		int rc;

		/* SIGINT/SIGTERM stop the import, which then removes its temporary
		 * session and leaves DIR as it was (the trace-cmd import below keeps
		 * the default action). */
		sa.sa_handler = on_signal;
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		rc = nf_etw_import_interruptible(file, out, force, &import_interrupted, &est, &err);
		if (rc == NF_EINTR) {
			fprintf(stderr, "nftrace import: interrupted; %s left as it was\n", out);
			return NF_EXIT_INTERRUPTED;
		}
		if (rc)
			return nf_cli_fail("import", &err);
		printf("imported %s into %s: %" PRIu64 " ETW events on %u CPUs (%" PRIu64 " DxgKrnl): %" PRIu64
		       " waits, %" PRIu64 " signals, %" PRIu64 " waits tied to their signal, %" PRIu64
		       " DMA packets\n", file, out, est.events, est.cpus, est.dxgkrnl, est.waits,
		       est.signals, est.deps, est.dma_packets);
		return NF_EXIT_OK;
	}
	if (nf_kernel_import(file, out, force, &st, &err))
		return nf_cli_fail("import", &err);
	printf("imported %s into %s: %" PRIu64 " kernel records on %u CPUs (%" PRIu64 " dma_fence, %" PRIu64
	       " sched, %" PRIu64 " GPU job/vblank, %" PRIu64 " markers, %" PRIu64 " other), %" PRIu64
	       " events lost by the kernel\n",
	       file, out, st.records, st.cpus, st.dma_fence, st.sched, st.gpu, st.markers, st.raw,
	       st.lost_events);
	if (st.note[0])
		printf("worked around: %s\n", st.note);
	return NF_EXIT_OK;
}

const struct nf_cli_cmd cmd_import = {
	.options = options,
	.args = "TRACE.DAT or CAPTURE.ETL",
	.min_args = 1,
	.max_args = 1,
	.args_complete = NF_COMPLETE_FILE,
	.args_exts = "dat|etl",
	.synopsis = "nftrace import TRACE.DAT|CAPTURE.ETL -o DIR [--force]\n",
	.description =
		"A Windows ETW capture (.etl: told by its content, or taken as one by its name; from xperf,\n"
		"WPR or GPUView's log.cmd) is copied into DIR and read without the Windows API:\n"
		"Microsoft-Windows-DxgKrnl contexts and hardware queues become queues, sync objects\n"
		"fences, wait and signal queue packets fence_ops (tied wait <- signal in deps), CPU waits\n"
		"cpu_waits, DMA packets dma_packets, VSyncs vsyncs, other events etw_events\n"
		"(nftrace-timeline(5)). Nothing is left behind when the capture cannot be read.\n"
		"\n"
		"Reads a trace-cmd file (versions 6 and 7, every buffer instance in it) with libtracecmd and\n"
		"decodes its events with libtraceevent from the formats stored in the file. dma_fence events\n"
		"become fences on per-timeline rows, waits and signals (fence_ops, deps), sched_switch CPU\n"
		"thread rows (cpu_runs), other events raw rows (kernel_events), lost events anomalies.\n"
		"The session's clock is the trace's clock in nanoseconds from its first event.\n",
	.run = import_run,
};
