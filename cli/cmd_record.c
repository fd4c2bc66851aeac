/* nftrace record: run a scenario or a program and write a session directory. */
#include "cli.h"

#include "contract/escape.h"
#include "contract/kernel.h"
#include "contract/record.h"

#include <errno.h>
#include <getopt.h>
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

/* What `nftrace record --help` prints; the options it names are parsed below. */
const char cmd_record_usage[] =
	"usage: nftrace record -o DIR [--seed N] [--mode deterministic|threaded] [--ground-truth] [--force]\n"
	"                      [--kernel EVENTS] SCENARIO\n"
	"       nftrace record -o DIR [options] -- PROGRAM [ARGS...]\n"
	"\n"
	"Runs SCENARIO (a scenario file, see schemas/scenario.md) through the native fence\n"
	"runtime, or runs PROGRAM (which links libnfence), and writes a CTF 1.8 session to DIR.\n"
	"\n"
	"  -o, --output DIR   session directory to create\n"
	"  --seed N           simulation seed (default: the scenario's, else 1)\n"
	"  --mode MODE        deterministic (default) or threaded\n"
	"  --ground-truth     also record the simulator's true times (truth stream)\n"
	"  --force            replace an existing session in DIR\n"
	"  --kernel EVENTS    also record Linux kernel events in a private tracefs instance while it\n"
	"                     runs (root): comma-separated system or system:event, '?' after one makes\n"
	"                     it optional; 'default' = dma_fence,gpu_scheduler?,sched:sched_switch,\n"
	"                     sched:sched_wakeup. The session starts when tracing began.\n"
	"\n"
	"A killed recorder (even kill -9) leaves a session readable up to its last whole packet.\n"
	"SIGINT/SIGTERM closes the session cleanly and exits 130; a full disk is a one-line error\n"
	"naming the file, exit 1. A progress line shows on a terminal only.\n";

int cmd_record(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "seed", required_argument, NULL, 's' },
		{ "mode", required_argument, NULL, 'm' },
		{ "ground-truth", no_argument, NULL, 'g' },
		{ "force", no_argument, NULL, 'f' },
		{ "kernel", required_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct nf_record_options o = { 0 };
	struct nf_record_result res;
	struct nf_kernel_stats kst;
	const char *kernel = NULL;
	struct nf_error err;
	int dashdash = argc, opt, rc;
	char *end;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			dashdash = i;
			break;
		}
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(dashdash, argv, ":o:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'o': o.out_dir = optarg; break;
		case 's':
			errno = 0;
			o.seed = strtoull(optarg, &end, 0);
			if (errno || *end || !*optarg || optarg[0] == '-')
				return nf_cli_usage_error("record", "bad --seed '%s'", optarg);
			o.seed_set = true;
			break;
		case 'm':
			if (!strcmp(optarg, "deterministic"))
				o.mode = NF_MODE_DETERMINISTIC;
			else if (!strcmp(optarg, "threaded"))
				o.mode = NF_MODE_THREADED;
			else
				return nf_cli_usage_error("record", "unknown --mode '%s' (deterministic or threaded)", optarg);
			break;
		case 'g': o.ground_truth = true; break;
		case 'f': o.force = true; break;
		case 'k': kernel = optarg; break;
		case 'h': return nf_cli_common_option("record", "--help");
		case 'V': return nf_cli_common_option("record", "--version");
		case ':': return nf_cli_usage_error("record", "option '%s' needs a value", argv[optind - 1]);
		default: return nf_cli_usage_error("record", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (!o.out_dir)
		return nf_cli_usage_error("record", "missing -o DIR");
	if (dashdash < argc) {
		if (optind < dashdash)
			return nf_cli_usage_error("record", "give either a SCENARIO or -- PROGRAM, not both");
		if (dashdash + 1 >= argc)
			return nf_cli_usage_error("record", "no program after --");
		o.argv = argv + dashdash + 1;
	} else {
		if (optind >= argc)
			return nf_cli_usage_error("record", "missing SCENARIO");
		if (optind + 1 < argc)
			return nf_cli_usage_error("record", "unexpected argument '%s'", argv[optind + 1]);
		o.scenario = argv[optind];
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
		rc = nf_kernel_record(&o, kernel, &res, &kst, &err);
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
