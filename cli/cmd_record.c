/* nftrace record: run a scenario or a program and write a session directory. */
#include "cli.h"

#include "contract/escape.h"
#include "contract/kernel.h"
#include "contract/record.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile int record_interrupted;

/* The signal's number: `record -- PROGRAM` forwards it to the program. */
static void on_sigint(int sig)
{
	record_interrupted = sig;
}

/* The progress line on a terminal; the recorder only reports numbers. */
static void show_progress(void *ctx, const struct nf_record_progress *p)
{
	(void)ctx;
	if (p->done)
		fprintf(stderr, "\r%*s\r", 78, "");
	else
		fprintf(stderr, "\rrecording: %llu ops, %llu events, %.1f MB, %llu lost entries   ",
			(unsigned long long)p->operations, (unsigned long long)p->events,
			(double)p->bytes / 1e6, (unsigned long long)p->lost_entries);
}

enum { O_OUTPUT, O_SEED, O_MODE, O_GROUND_TRUTH, O_FORCE, O_KERNEL };

static const struct nf_cli_option options[] = {
	[O_OUTPUT] = { .name = "output", .short_name = 'o', .arg = "DIR", .flags = NF_OPT_REQUIRED,
		       .complete = NF_COMPLETE_DIR, .help = "session directory to create" },
	[O_SEED] = { .name = "seed", .arg = "N", .help = "simulation seed (default: the scenario's, else 1)" },
	[O_MODE] = { .name = "mode", .arg = "MODE", .values = "deterministic|threaded",
		     .help = "deterministic (default) or threaded" },
	[O_GROUND_TRUTH] = { .name = "ground-truth",
			     .help = "also record the simulator's true times (truth stream)" },
	[O_FORCE] = { .name = "force", .help = "replace an existing session in DIR" },
	[O_KERNEL] = { .name = "kernel", .arg = "EVENTS",
		       .help = "also record Linux kernel events in a private tracefs instance while it\n"
			       "runs (root): comma-separated system or system:event, '?' after one makes\n"
			       "it optional; 'default' = dma_fence,gpu_scheduler?,sched:sched_switch,\n"
			       "sched:sched_wakeup. The session starts when tracing began." },
	{ 0 },
};

static int record_run(struct nf_cli *c)
{
	struct nf_record_options o = { 0 };
	struct nf_record_result res;
	struct nf_kernel_stats kst;
	const char *kernel = nf_cli_get(c, O_KERNEL), *seed = nf_cli_get(c, O_SEED), *mode = nf_cli_get(c, O_MODE);
	struct nf_error err;
	int rc;

	o.out_dir = nf_cli_get(c, O_OUTPUT);
	if (seed) {
		char *end;

		errno = 0;
		o.seed = strtoull(seed, &end, 0);
		if (errno || *end || !*seed || seed[0] == '-')
			return nf_cli_usage_error("record", "bad --seed '%s'", seed);
		o.seed_set = true;
	}
	o.mode = mode && !strcmp(mode, "threaded") ? NF_MODE_THREADED : NF_MODE_DETERMINISTIC;
	o.ground_truth = nf_cli_has(c, O_GROUND_TRUTH);
	o.force = nf_cli_has(c, O_FORCE);
	if (c->program) {
		if (c->n_args)
			return nf_cli_usage_error("record", "give either a SCENARIO or -- PROGRAM, not both");
		if (!c->n_program)
			return nf_cli_usage_error("record", "no program after --");
		o.argv = c->program;
	} else {
		if (!c->n_args)
			return nf_cli_usage_error("record", "missing SCENARIO");
		o.scenario = c->args[0];
	}
	if (isatty(STDERR_FILENO))
		o.progress = show_progress;
	o.interrupted = &record_interrupted;
	struct sigaction sa = { 0 };
	sa.sa_handler = on_sigint;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	nf_error_clear(&err);
	if (kernel)
		rc = nf_kernel_record(&o, kernel, c->tracefs, &res, &kst, &err);
	else
		rc = o.argv ? nf_record_program(&o, &res, &err) : nf_record_scenario(&o, &res, &err);
	char shown[4200]; /* the directory as text (a name is any bytes) */

	nf_esc_text_buf(shown, sizeof(shown), o.out_dir, 0);
	/* A signal after the recorder's last look at the flag still counts. */
	if (rc == NF_EINTR || (!rc && record_interrupted)) {
		/* 128 + SIGINT, as shells report an interrupted command; the
		 * session is whole up to the interruption. */
		if (o.argv)
			fprintf(stderr, "nftrace record: interrupted; session %s closed cleanly\n", shown);
		else
			fprintf(stderr, "nftrace record: interrupted; session %s closed cleanly (%llu events)\n",
				shown, (unsigned long long)res.events);
		return NF_EXIT_INTERRUPTED;
	}
	if (rc)
		return nf_cli_fail("record", &err);
	if (o.scenario)
		printf("recorded %s: %llu operations, %llu events, %llu bytes, %llu log entries lost\n",
		       shown, (unsigned long long)res.operations, (unsigned long long)res.events,
		       (unsigned long long)res.bytes, (unsigned long long)res.lost_entries);
	else
		printf("recorded %s\n", shown);
	if (kernel)
		printf("kernel: %llu records on %u CPUs (%llu dma_fence, %llu sched, %llu other), "
		       "%llu events lost by the kernel\n", (unsigned long long)kst.records, kst.cpus,
		       (unsigned long long)kst.dma_fence, (unsigned long long)kst.sched,
		       (unsigned long long)kst.raw, (unsigned long long)kst.lost_events);
	return NF_EXIT_OK;
}

const struct nf_cli_cmd cmd_record = {
	.options = options,
	.args = "SCENARIO",
	.min_args = 0,
	.max_args = 1,
	.args_complete = NF_COMPLETE_FILE,
	.args_exts = "nfs",
	.synopsis =
		"nftrace record -o DIR [--seed N] [--mode deterministic|threaded] [--ground-truth] [--force]\n"
		"               [--kernel EVENTS] SCENARIO\n"
		"nftrace record -o DIR [options] -- PROGRAM [ARGS...]\n",
	.description =
		"Runs SCENARIO (a scenario file: the language is schemas/scenario.md, installed in\n"
		"share/doc/nftrace) through the native fence runtime, or runs PROGRAM (which links\n"
		"libnfence), and writes a CTF 1.8 session to DIR.\n"
		"\n"
		"A killed recorder (even kill -9) leaves a session readable up to its last whole packet.\n"
		"SIGINT/SIGTERM closes the session cleanly and exits 130; a full disk is a one-line error\n"
		"naming the file, exit 1. A progress line shows on a terminal only.\n",
	.run = record_run,
};
