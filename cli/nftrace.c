/*
 * nftrace: the command table. Each row names a command, its file's
 * `struct nf_cli_cmd` (cli/cmd_NAME.c: options, arguments, --help text, its
 * steps), what the dispatcher prepares for it (NF_CMD_*: a session's
 * timeline built and handed over, tracefs, a program after --) and its
 * one-line summary. --help, the man pages and the shell completions are
 * printed from this table (cli/gendoc.c), so they list what the parser takes.
 *
 * Adding a command: a row here, cli/cmd_NAME.c with `const struct nf_cli_cmd
 * cmd_NAME`, its declaration in cli.h, the file in cli/CMakeLists.txt, and
 * cli/doc/NAME.txt (the man page's longer description and examples).
 */
#include "cli.h"
#include "contract/errors.h"
#include "contract/escape.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const struct nf_command nf_commands[] = {
	{ "record", &cmd_record, NF_CMD_TRACEFS | NF_CMD_PROGRAM,
	  "record a scenario or a program into a session directory" },
	{ "report", &cmd_report, NF_CMD_TIMELINE,
	  "draw a GPUView-style timeline to PNG, SVG, PDF or interactive HTML" },
	{ "query", &cmd_query, NF_CMD_TIMELINE,
	  "run SQL over a session's timeline" },
	{ "info", &cmd_info, 0,
	  "show a session's facts, or the event schema" },
	{ "check", &cmd_check, NF_CMD_TIMELINE | NF_CMD_TIMELINE_TEMP,
	  "check that a session's logs are whole: lost, zero, repeated, backwards entries" },
	{ "import", &cmd_import, 0,
	  "convert a trace-cmd file (trace.dat) or a Windows ETW capture (.etl) into a session" },
	{ "export", &cmd_export, NF_CMD_TIMELINE,
	  "write a session as a Perfetto trace or Chrome trace JSON" },
	{ "critical-path", &cmd_critical_path, NF_CMD_TIMELINE,
	  "why an operation finished when it did: its chain of queues, fences, threads" },
	{ "frames", &cmd_frames, NF_CMD_TIMELINE,
	  "the frames of a session: interval, GPU busy/wait, until displayed, late or dropped, and why" },
	{ "diff", &cmd_diff, NF_CMD_TIMELINE,
	  "what changed between two sessions, with significance; a CI gate (--fail-on)" },
	{ "push", &cmd_push, NF_CMD_TIMELINE,
	  "load sessions into a ClickHouse fleet store (many machines, many sessions)" },
	{ "help", &cmd_help, 0,
	  "show help for nftrace or one command" },
};

const size_t nf_n_commands = sizeof(nf_commands) / sizeof(nf_commands[0]);

const struct nf_command *nf_cli_find(const char *name)
{
	for (size_t i = 0; i < nf_n_commands; i++)
		if (!strcmp(nf_commands[i].name, name))
			return &nf_commands[i];
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

void nf_cli_print_main_usage(FILE *f)
{
	fprintf(f, "usage: nftrace [--version] [--help] COMMAND [ARGS]\n\n"
		   "nftrace captures and analyses GPU native fence logs (WDDM 3.2).\n\nCommands:\n");
	for (size_t i = 0; i < nf_n_commands; i++)
		fprintf(f, "   %-13s %s\n", nf_commands[i].name, nf_commands[i].summary);
	fprintf(f, "\nRun 'nftrace COMMAND --help' for a command's options, 'man nftrace-COMMAND' for its manual.\n");
}

/* ---- nftrace help ---------------------------------------------------------- */

static const struct nf_cli_option help_options[] = { { 0 } };

static int help_run(struct nf_cli *c)
{
	const struct nf_command *row;

	if (!c->n_args) {
		nf_cli_print_main_usage(stdout);
		return NF_EXIT_OK;
	}
	if (!(row = nf_cli_find(c->args[0])))
		return nf_cli_usage_error("help", "unknown command '%s'", c->args[0]);
	nf_cli_print_help(stdout, row);
	return NF_EXIT_OK;
}

const struct nf_cli_cmd cmd_help = {
	.options = help_options,
	.args = "COMMAND",
	.min_args = 0,
	.max_args = 1,
	.args_complete = NF_COMPLETE_COMMAND,
	.synopsis = "nftrace help [COMMAND]\n",
	.description = "Shows the commands, or COMMAND's usage and options (what 'nftrace COMMAND --help' shows).\n",
	.run = help_run,
};
