/*
 * The nftrace command-line tool: the command table (nftrace.c), the one
 * option parser every command goes through (options.c), and the helpers
 * every command uses (usage errors, reporting an nf_error).
 *
 * A command is one row of commands[] in nftrace.c (name, flags, summary) and
 * one cli/cmd_NAME.c that defines `const struct nf_cli_cmd cmd_NAME`: its
 * options table, its arguments, its --help text and its prepare/run steps.
 * --help, the man pages (cli/gendoc.c, with cli/doc/NAME.txt) and the bash
 * and zsh completions are all printed from these tables.
 */
#ifndef NF_CLI_H
#define NF_CLI_H

#include "contract/errors.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "contract/timeline.h"

/* Exit codes. */
enum { NF_EXIT_OK = 0, NF_EXIT_FAIL = 1, NF_EXIT_USAGE = 2 };
/* `record` stopped by SIGINT or SIGTERM, session closed cleanly (128 + SIGINT). */
enum { NF_EXIT_INTERRUPTED = 130 };

/* What the shell completes for an option's value or a positional argument. */
enum nf_cli_complete {
	NF_COMPLETE_NONE = 0,   /* free text (a number, a time, SQL): nothing */
	NF_COMPLETE_FILE,       /* a file name (exts: of these extensions, and directories) */
	NF_COMPLETE_DIR,        /* a directory (a session to create) */
	NF_COMPLETE_SESSION,    /* a session directory (one holding metadata or capture.etl) */
	NF_COMPLETE_COMMAND,    /* an nftrace command */
	NF_COMPLETE_PROGRAM,    /* a program and its arguments (after --) */
};

/* Option flags. */
enum {
	NF_OPT_REPEAT = 1u << 0,   /* may be given again: every value is kept (else the last wins) */
	NF_OPT_REQUIRED = 1u << 1, /* missing is a usage error: "missing -o DIR" */
};

/*
 * One option of a command: a row of its options[] table, ended by a row
 * whose name is NULL. Every command also takes -h/--help and --version.
 */
struct nf_cli_option {
	const char *name;       /* long name, without "--" */
	char short_name;        /* one-letter form (-o), or 0 */
	const char *arg;        /* the value's name in help ("DIR"); NULL: a flag, no value */
	const char *values;     /* the only values taken, '|'-separated ("light|dark"): any
				 * other is a usage error, and the shell completes these; or NULL */
	unsigned flags;         /* NF_OPT_* */
	enum nf_cli_complete complete; /* what its value is, for the shell */
	const char *exts;       /* NF_COMPLETE_FILE: the extensions offered ("png|svg"), or NULL: any */
	const char *help;       /* what it does, for --help and the man page ('\n': next line) */
};

/* An option as given on the command line, in the order given. */
struct nf_cli_given {
	int opt;                /* index in the command's options[] */
	const char *value;      /* its value ("" for a flag) */
};

struct nf_cli;

/* A command: defined in its cli/cmd_NAME.c as `const struct nf_cli_cmd cmd_NAME`. */
struct nf_cli_cmd {
	const struct nf_cli_option *options;
	/* Positional arguments: their name in errors ("missing session DIR"),
	 * how many (max -1: any number) and what the shell completes. */
	const char *args;
	int min_args, max_args;
	enum nf_cli_complete args_complete;
	const char *args_exts;
	/* --help: the synopsis (one form per line, without "usage: "; lines that
	 * start with spaces continue the form above) and the description. The
	 * options are listed from options[] after them. */
	const char *synopsis;
	const char *description;
	/* Bytes of c->state the command keeps between its steps (zeroed). */
	size_t state_size;
	/*
	 * Optional: runs after the options are parsed and before the dispatcher
	 * builds the timeline (NF_CMD_TIMELINE): the usage checks (exit 2, so that
	 * nothing is read for a bad command line), what must be read or refused
	 * first, the sessions to build (c->sessions). Returns 0 to go on, else
	 * the exit code (the reason printed).
	 */
	int (*prepare)(struct nf_cli *c);
	/* The work; returns the exit code. */
	int (*run)(struct nf_cli *c);
	/* Optional: frees what prepare kept in c->state, once prepare has run
	 * (whether it, the timeline or run failed or not). */
	void (*finish)(struct nf_cli *c);
};

/* Command flags: what the dispatcher does for a command before it runs. */
enum {
	/*
	 * The command reads sessions' timelines: after prepare, the timeline of
	 * each of c->sessions (by default its first argument) is built or
	 * reused (nf_timeline_ensure; with c->blame the stall_blame table too)
	 * and its path handed over in c->db[i]. A session that cannot be read is
	 * a one-line error, exit 1, before run.
	 */
	NF_CMD_TIMELINE = 1u << 0,
	/* With NF_CMD_TIMELINE: a session whose directory cannot be written gets
	 * a timeline in a temporary file (removed after run) instead of an error. */
	NF_CMD_TIMELINE_TEMP = 1u << 1,
	/* The command may trace the kernel: c->tracefs is where tracefs is
	 * mounted (NULL when it is not). */
	NF_CMD_TRACEFS = 1u << 2,
	/* "--" ends the options and the words after it are a program to run
	 * (c->program): SIGXFSZ keeps its default action for it. */
	NF_CMD_PROGRAM = 1u << 3,
};

/* A row of the command table (nftrace.c). */
struct nf_command {
	const char *name;
	const struct nf_cli_cmd *cmd;
	unsigned flags;          /* NF_CMD_* */
	const char *summary;     /* one line in `nftrace --help` and the man pages */
};

/* Longest timeline path the dispatcher hands over. */
#define NF_CLI_PATH_MAX 4200

/* One command line being run: what the parser found, and what the dispatcher prepared. */
struct nf_cli {
	const struct nf_command *command;
	const char *name;             /* the command's name (for messages) */
	struct nf_cli_given *given;   /* the options given, in order */
	int n_given;
	char **args;                  /* the positional arguments */
	int n_args;
	char **program;               /* NF_CMD_PROGRAM: the words after "--" (NULL: no "--") */
	int n_program;
	void *state;                  /* the command's own (state_size bytes, zeroed) */
	/* NF_CMD_TIMELINE: prepare may change sessions (default: the first argument). */
	char *const *sessions;
	size_t n_sessions;
	bool blame;                   /* also compute stall_blame (nf_analysis_ensure_blame) */
	char (*db)[NF_CLI_PATH_MAX];  /* db[i]: the timeline of sessions[i] */
	bool *db_temp;                /* db_temp[i]: a temporary file (NF_CMD_TIMELINE_TEMP) */
	/* NF_CMD_TRACEFS */
	const char *tracefs;
	char tracefs_buf[1024];
};

/* The command table (nftrace.c). */
extern const struct nf_command nf_commands[];
extern const size_t nf_n_commands;

/* The row named name, or NULL. */
const struct nf_command *nf_cli_find(const char *name);

/* Each command (cli/cmd_*.c). */
extern const struct nf_cli_cmd cmd_record, cmd_report, cmd_query, cmd_info, cmd_check, cmd_import,
	cmd_export, cmd_critical_path, cmd_frames, cmd_diff, cmd_push, cmd_help;

/*
 * Runs command row c on argv (argv[0] is the command's name): parses the
 * options, prepares what the flags ask for, runs it. Returns the exit code.
 */
int nf_cli_dispatch(const struct nf_command *c, int argc, char **argv);

/* `nftrace --help`: the commands and their summaries. */
void nf_cli_print_main_usage(FILE *f);
/* `nftrace CMD --help`: synopsis, description, options. */
void nf_cli_print_help(FILE *f, const struct nf_command *c);
/* The label of option o in help ("-o, --output DIR"), into buf. */
void nf_cli_option_label(const struct nf_cli_option *o, char *buf, size_t len);

/* ---- reading the parsed options (index: the option's row in options[]) ---- */

/* The last value given for option opt ("" for a flag), or NULL when not given. */
const char *nf_cli_get(const struct nf_cli *c, int opt);
/* Whether option opt was given. */
bool nf_cli_has(const struct nf_cli *c, int opt);
/* How many times option opt was given. */
int nf_cli_count(const struct nf_cli *c, int opt);
/*
 * The values of option opt in the order given: start with *pos = 0; returns
 * the next value, or NULL when there is none left.
 */
const char *nf_cli_next(const struct nf_cli *c, int opt, int *pos);
/*
 * Option opt's value as an integer from min to max (decimal); absent: *out
 * untouched. 0, or NF_EXIT_USAGE after "--NAME must be between MIN and MAX".
 */
int nf_cli_int(const struct nf_cli *c, int opt, long long min, long long max, long long *out);

/* Prints "nftrace CMD: message (see 'nftrace CMD --help')" on stderr, the message as
 * text (nf_esc_text: one line, printable UTF-8), and returns NF_EXIT_USAGE. */
int nf_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "nftrace CMD: err->msg" on stderr and returns NF_EXIT_FAIL. */
int nf_cli_fail(const char *cmd, const struct nf_error *err);

/* The selection report and export share (struct nf_selection, contract/timeline.h):
 * --from, --to (with units: 12.5ms), --queue and --fence (repeatable; decimal
 * or 0x handles), and report's --threads all, --thread and --process. */
#define NF_CLI_MAX_FILTER 256
struct nf_cli_window {
	struct nf_selection sel;   /* what the options select; its lists point into the arrays below */
	int64_t queues[NF_CLI_MAX_FILTER], fences[NF_CLI_MAX_FILTER];
	const char *threads[NF_CLI_MAX_FILTER], *processes[NF_CLI_MAX_FILTER];
};
/* The options[] rows of the window's four options, in a command's table. */
#define NF_CLI_WINDOW_OPTIONS                                                                          \
	{ .name = "from", .arg = "T",                                                                    \
	  .help = "start of the time window (units: 12.5ms, 3s; default: the session's start)" },         \
	{ .name = "to", .arg = "T", .help = "end of the time window (default: the session's end)" },      \
	{ .name = "queue", .arg = "Q", .flags = NF_OPT_REPEAT,                                           \
	  .help = "only this hardware queue (handle, decimal or 0x; repeat for more)" },                  \
	{ .name = "fence", .arg = "F", .flags = NF_OPT_REPEAT,                                           \
	  .help = "only what is on this fence (handle; repeat for more)" }
/*
 * Reads the window from options from, from+1, from+2, from+3 (--from, --to,
 * --queue, --fence, as NF_CLI_WINDOW_OPTIONS puts them) into w->sel, starting
 * from no window and no filter (sel's lists point into w: w stays where it
 * is): 0, or NF_EXIT_USAGE after printing what is wrong (also for --to not
 * after --from).
 */
int nf_cli_window(const struct nf_cli *c, int from, struct nf_cli_window *w);
/*
 * Adds report's thread options to w->sel: --threads all (option threads, its
 * presence), --thread (option thread) and --process (option process),
 * repeatable: 0, or NF_EXIT_USAGE after printing what is wrong.
 */
int nf_cli_window_threads(const struct nf_cli *c, int threads, int thread, int process, struct nf_cli_window *w);
struct nf_coverage;
/* What a session covers (cli/coverage.c): lines for check and info, or the
 * "coverage" member of check --json (written after a preceding member). */
void nf_cli_coverage_text(FILE *out, const struct nf_coverage *c);
void nf_cli_coverage_json(FILE *out, const struct nf_coverage *c);

/* A handle or id, decimal or 0x hexadecimal, not negative: 0, or -1. */
int nf_cli_parse_id(const char *s, int64_t *out);

#endif
