/* The time window and filters `report` and `export` share (cli.h). */
#include "cli.h"

#include "contract/render.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

int nf_cli_window(const struct nf_cli *c, int from, struct nf_cli_window *w)
{
	struct nf_selection all = NF_SELECTION_ALL, *sel = &w->sel;
	struct nf_error err;
	const char *v;

	*sel = all;
	sel->queues = w->queues;
	sel->fences = w->fences;
	sel->threads = w->threads;
	sel->processes = w->processes;
	nf_error_clear(&err);
	for (int k = 0; k < 2; k++)
		if ((v = nf_cli_get(c, from + k)) && nf_parse_duration(v, k ? &sel->to_ns : &sel->from_ns, &err))
			return nf_cli_usage_error(c->name, "--%s: %s", k ? "to" : "from", err.msg);
	for (int k = 0; k < 2; k++) {
		int64_t *arr = k ? w->fences : w->queues;
		int *n = k ? &sel->n_fences : &sel->n_queues, pos = 0;

		while ((v = nf_cli_next(c, from + 2 + k, &pos))) {
			if (*n >= NF_CLI_MAX_FILTER)
				return nf_cli_usage_error(c->name, "too many filters (limit %d)", NF_CLI_MAX_FILTER);
			if (nf_cli_parse_id(v, &arr[*n]))
				return nf_cli_usage_error(c->name, "bad %s handle '%s'", k ? "fence" : "queue", v);
			(*n)++;
		}
	}
	if (sel->from_ns >= 0 && sel->to_ns >= 0 && sel->to_ns <= sel->from_ns)
		return nf_cli_usage_error(c->name, "--to must be after --from");
	return 0;
}

int nf_cli_window_threads(const struct nf_cli *c, int threads, int thread, int process, struct nf_cli_window *w)
{
	struct nf_selection *sel = &w->sel;
	const char *v;

	sel->threads_all = nf_cli_has(c, threads);
	for (int k = 0; k < 2; k++) {
		const char **arr = k ? w->processes : w->threads;
		int *n = k ? &sel->n_processes : &sel->n_threads, pos = 0;

		while ((v = nf_cli_next(c, k ? process : thread, &pos))) {
			if (*n >= NF_CLI_MAX_FILTER)
				return nf_cli_usage_error(c->name, "too many filters (limit %d)", NF_CLI_MAX_FILTER);
			if (!*v)
				return nf_cli_usage_error(c->name, "--%s needs a name or id", k ? "process" : "thread");
			arr[(*n)++] = v;
		}
	}
	return 0;
}
