/*
 * The nftrace command-line tool: shared declarations of the command table and
 * the helpers every command uses (usage errors, reporting an nf_error).
 */
#ifndef NF_CLI_H
#define NF_CLI_H

#include "nftrace/error.h"

/* Exit codes. */
enum { NF_EXIT_OK = 0, NF_EXIT_FAIL = 1, NF_EXIT_USAGE = 2 };
/* `record` stopped by SIGINT or SIGTERM, session closed cleanly (128 + SIGINT). */
enum { NF_EXIT_INTERRUPTED = 130 };

struct nf_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
	const char *usage;      /* full usage text printed by --help */
};

int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_query(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_critical_path(int argc, char **argv);
int cmd_push(int argc, char **argv);
int cmd_help(int argc, char **argv);

const struct nf_cmd *nf_cli_find(const char *name);

/* Prints "nftrace CMD: message" on stderr and returns NF_EXIT_USAGE. */
int nf_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "nftrace CMD: err->msg" on stderr and returns NF_EXIT_FAIL. */
int nf_cli_fail(const char *cmd, const struct nf_error *err);
/* Handles --help / -h / --version for a command; returns -1 when not one of them. */
int nf_cli_common_option(const char *cmd, const char *arg);

#endif
