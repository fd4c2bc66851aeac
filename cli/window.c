/* The selection `report` and `export` share (cli.h, struct nf_selection). */
#include "cli.h"

#include "contract/render.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void nf_cli_window_init(struct nf_cli_window *w)
{
	struct nf_selection all = NF_SELECTION_ALL;

	w->sel = all;
	w->sel.queues = w->queues;
	w->sel.fences = w->fences;
	w->sel.threads = w->threads;
	w->sel.processes = w->processes;
}

int nf_cli_parse_id(const char *s, int64_t *out)
{
	char *end;

	errno = 0;
	long long v = strtoll(s, &end, 0);
	if (errno || *end || !*s || v < 0)
		return -1;
	*out = v;
	return 0;
}

int nf_cli_window_option(const char *cmd, int opt, const char *arg, struct nf_cli_window *w)
{
	struct nf_selection *sel = &w->sel;
	struct nf_error err;

	nf_error_clear(&err);
	if (opt == 'F' || opt == 'T') {
		if (nf_parse_duration(arg, opt == 'F' ? &sel->from_ns : &sel->to_ns, &err))
			return nf_cli_usage_error(cmd, "--%s: %s", opt == 'F' ? "from" : "to", err.msg);
		return 0;
	}
	if (opt == 'A') {
		if (strcmp(arg, "all"))
			return nf_cli_usage_error(cmd, "--threads takes 'all' (use --thread NAME|TID for one)");
		sel->threads_all = 1;
		return 0;
	}
	if (opt == 'R' || opt == 'P') {
		const char **arr = opt == 'R' ? w->threads : w->processes;
		int *n = opt == 'R' ? &sel->n_threads : &sel->n_processes;

		if (*n >= NF_CLI_MAX_FILTER)
			return nf_cli_usage_error(cmd, "too many filters (limit %d)", NF_CLI_MAX_FILTER);
		if (!*arg)
			return nf_cli_usage_error(cmd, "--%s needs a name or id", opt == 'R' ? "thread" : "process");
		arr[(*n)++] = arg;
		return 0;
	}
	int64_t *arr = opt == 'q' ? w->queues : w->fences;
	int *n = opt == 'q' ? &sel->n_queues : &sel->n_fences;

	if (*n >= NF_CLI_MAX_FILTER)
		return nf_cli_usage_error(cmd, "too many filters (limit %d)", NF_CLI_MAX_FILTER);
	if (nf_cli_parse_id(arg, &arr[*n]))
		return nf_cli_usage_error(cmd, "bad %s handle '%s'", opt == 'q' ? "queue" : "fence", arg);
	(*n)++;
	return 0;
}
