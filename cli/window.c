/* The time window and filters `report` and `export` share (cli.h). */
#include "cli.h"

#include "contract/render.h"

#include <errno.h>
#include <stdlib.h>

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
	struct nf_error err;
	const char *v;

	w->from_ns = -1;
	w->to_ns = -1;
	w->n_queues = w->n_fences = 0;
	nf_error_clear(&err);
	for (int k = 0; k < 2; k++)
		if ((v = nf_cli_get(c, from + k)) && nf_parse_duration(v, k ? &w->to_ns : &w->from_ns, &err))
			return nf_cli_usage_error(c->name, "--%s: %s", k ? "to" : "from", err.msg);
	for (int k = 0; k < 2; k++) {
		int64_t *arr = k ? w->fences : w->queues;
		int *n = k ? &w->n_fences : &w->n_queues, pos = 0;

		while ((v = nf_cli_next(c, from + 2 + k, &pos))) {
			if (*n >= NF_CLI_MAX_FILTER)
				return nf_cli_usage_error(c->name, "too many filters (limit %d)", NF_CLI_MAX_FILTER);
			if (nf_cli_parse_id(v, &arr[*n]))
				return nf_cli_usage_error(c->name, "bad %s handle '%s'", k ? "fence" : "queue", v);
			(*n)++;
		}
	}
	return 0;
}
