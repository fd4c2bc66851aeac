/*
 * nftrace: the command table and main. Each command lives in its own
 * cli/cmd_*.c with its --help text (cmd_*_usage) next to its options; the
 * table gives each its one-line summary; main dispatches, and checks that
 * stdout was written.
 */
#include "cli.h"
#include "contract/errors.h"
#include "contract/escape.h"

#include "contract/kernel.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>

#ifndef NF_VERSION
#define NF_VERSION "0.0.0"
#endif

static const char cmd_help_usage[] =
	"usage: nftrace help [COMMAND]\n";

static const struct nf_command commands[] = {
	{ "record", cmd_record, "record a scenario or a program into a session directory",
	  cmd_record_usage },
	{ "report", cmd_report, "draw a GPUView-style timeline to PNG, SVG, PDF or interactive HTML",
	  cmd_report_usage },
	{ "query", cmd_query, "run SQL over a session's timeline",
	  cmd_query_usage },
	{ "info", cmd_info, "show a session's facts, or the event schema",
	  cmd_info_usage },
	{ "check", cmd_check, "check that a session's logs are whole: lost, zero, repeated, backwards entries",
	  cmd_check_usage },
	{ "import", cmd_import, "convert a trace-cmd file (trace.dat) or a Windows ETW capture (.etl) into a session",
	  cmd_import_usage },
	{ "export", cmd_export, "write a session as a Perfetto trace or Chrome trace JSON",
	  cmd_export_usage },
	{ "critical-path", cmd_critical_path, "why an operation finished when it did: its chain of queues, fences, threads",
	  cmd_critical_path_usage },
	{ "diff", cmd_diff, "what changed between two sessions, with significance; a CI gate (--fail-on)",
	  cmd_diff_usage },
	{ "push", cmd_push, "load sessions into a ClickHouse fleet store (many machines, many sessions)",
	  cmd_push_usage },
	{ "help", cmd_help, "show help for nftrace or one command",
	  cmd_help_usage },
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

const struct nf_command *nf_cli_find(const char *name)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

int nf_cli_usage_error(const char *cmd, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	/* the arguments it quotes are the command line's: shown as text, one line */
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "nftrace %s: ", cmd);
	nf_esc_text_file(stderr, msg, 0);
	fprintf(stderr, " (see 'nftrace %s --help')\n", cmd);
	return NF_EXIT_USAGE;
}

int nf_cli_fail(const char *cmd, const struct nf_error *err)
{
	/* One line whatever the message holds (SQLite quotes bad tokens, newlines
	 * included; babeltrace2 quotes file contents; names from a session): what
	 * is not printable UTF-8 becomes '?' (nf_esc_text). */
	fprintf(stderr, "nftrace %s: ", cmd);
	/* A failed write to stdout (a full disk, a closed pipe) is what to report. */
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fputs("cannot write to standard output\n", stderr);
		return NF_EXIT_FAIL;
	}
	nf_esc_text_file(stderr, err->msg[0] ? err->msg : nf_strerror(err->code), 0);
	fputc('\n', stderr);
	return NF_EXIT_FAIL;
}

static void print_main_usage(FILE *f)
{
	fprintf(f, "usage: nftrace [--version] [--help] COMMAND [ARGS]\n\n"
		   "nftrace captures and analyses GPU native fence logs (WDDM 3.2).\n\nCommands:\n");
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(f, "   %-13s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\nRun 'nftrace COMMAND --help' for a command's options.\n");
}

int nf_cli_common_option(const char *cmd, const char *arg)
{
	if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
		const struct nf_command *c = nf_cli_find(cmd);
		fputs(c ? c->usage : "", stdout);
		return NF_EXIT_OK;
	}
	if (!strcmp(arg, "--version")) {
		printf("nftrace %s\n", NF_VERSION);
		return NF_EXIT_OK;
	}
	return -1;
}

int cmd_help(int argc, char **argv)
{
	if (argc > 1) {
		int r = nf_cli_common_option("help", argv[1]);
		if (r >= 0)
			return r;
		const struct nf_command *c = nf_cli_find(argv[1]);
		if (!c)
			return nf_cli_usage_error("help", "unknown command '%s'", argv[1]);
		fputs(c->usage, stdout);
		return NF_EXIT_OK;
	}
	print_main_usage(stdout);
	return NF_EXIT_OK;
}

int main(int argc, char **argv)
{
	int rc;

	if (argc < 2) {
		print_main_usage(stderr);
		return NF_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("nftrace %s\n", NF_VERSION);
		return NF_EXIT_OK;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		print_main_usage(stdout);
		return NF_EXIT_OK;
	}
	const struct nf_command *c = nf_cli_find(argv[1]);
	if (!c) {
		fprintf(stderr, "nftrace: '%s' is not a command (see 'nftrace --help')\n", argv[1]);
		return NF_EXIT_USAGE;
	}
	/* Kernel tracing left running by a killed `record --kernel` (its
	 * tracefs instance outlives it) stops at the next nftrace command. */
	nf_kernel_remove_stale_instances(NULL);
	/* A file size limit (ulimit -f) is a write error with a message, not a
	 * silent SIGXFSZ death that leaves a partial output. Not for record: the
	 * program it runs would inherit the ignored signal (the CTF writer's
	 * committer ignores it on its own). */
	if (strcmp(c->name, "record") != 0)
		signal(SIGXFSZ, SIG_IGN);
	rc = c->fn(argc - 1, argv + 1);
	/* Output that could not be written is a failure (git.c does the same). */
	if (fflush(stdout) != 0 || ferror(stdout)) {
		if (rc == NF_EXIT_OK) /* else nf_cli_fail said it already: one line */
			fprintf(stderr, "nftrace %s: cannot write to standard output\n", c->name);
		return NF_EXIT_FAIL;
	}
	return rc;
}
