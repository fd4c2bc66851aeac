/*
 * The nftrace command-line tool: shared declarations of the command table and
 * the helpers every command uses (usage errors, reporting an nf_error).
 */
#ifndef NF_CLI_H
#define NF_CLI_H

#include "contract/errors.h"

#include <stdint.h>
#include <stdio.h>

/* Exit codes. */
enum { NF_EXIT_OK = 0, NF_EXIT_FAIL = 1, NF_EXIT_USAGE = 2 };
/* `record` stopped by SIGINT or SIGTERM, session closed cleanly (128 + SIGINT). */
enum { NF_EXIT_INTERRUPTED = 130 };

/* A command of the table in nftrace.c (not the GPU command of capture/engine_int.h). */
struct nf_command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;    /* one line in `nftrace --help` */
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
int cmd_diff(int argc, char **argv);
int cmd_help(int argc, char **argv);

/* Each command's --help text, defined in its cli/cmd_*.c next to its options. */
extern const char cmd_record_usage[];
extern const char cmd_report_usage[];
extern const char cmd_query_usage[];
extern const char cmd_info_usage[];
extern const char cmd_check_usage[];
extern const char cmd_import_usage[];
extern const char cmd_export_usage[];
extern const char cmd_critical_path_usage[];
extern const char cmd_push_usage[];
extern const char cmd_diff_usage[];

const struct nf_command *nf_cli_find(const char *name);

/* Prints "nftrace CMD: message" on stderr (as text: nf_esc_text) and returns NF_EXIT_USAGE. */
int nf_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "nftrace CMD: err->msg" on stderr and returns NF_EXIT_FAIL. */
int nf_cli_fail(const char *cmd, const struct nf_error *err);
/* Handles --help / -h / --version for a command; returns -1 when not one of them. */
int nf_cli_common_option(const char *cmd, const char *arg);

/* The time window and filters report and export share: --from, --to (with
 * units: 12.5ms), --queue and --fence (repeatable; decimal or 0x handles). */
#define NF_CLI_MAX_FILTER 256
struct nf_cli_window {
	int64_t from_ns, to_ns;        /* -1: not given */
	int64_t queues[NF_CLI_MAX_FILTER], fences[NF_CLI_MAX_FILTER];
	int n_queues, n_fences;
};
/* No window, no filter. */
void nf_cli_window_init(struct nf_cli_window *w);
/* Takes option opt ('F' --from, 'T' --to, 'q' --queue, 'f' --fence) and its
 * argument into w: 0, or NF_EXIT_USAGE after printing what is wrong. */
int nf_cli_window_option(const char *cmd, int opt, const char *arg, struct nf_cli_window *w);
struct nf_coverage;
/* What a session covers (cli/coverage.c): lines for check and info, or the
 * "coverage" member of check --json (written after a preceding member). */
void nf_cli_coverage_text(FILE *out, const struct nf_coverage *c);
void nf_cli_coverage_json(FILE *out, const struct nf_coverage *c);

/* A handle or id, decimal or 0x hexadecimal, not negative: 0, or -1. */
int nf_cli_parse_id(const char *s, int64_t *out);
/* --timeout S (whole seconds, 1 to 86400) into *out: 0, or NF_EXIT_USAGE after printing what is wrong. */
int nf_cli_timeout_option(const char *cmd, const char *arg, long *out);

#endif
