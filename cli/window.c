/* The time window and filters `report` and `export` share, and --timeout (cli.h). */
#include "cli.h"

#include "contract/render.h"

#include <errno.h>
#include <stdlib.h>

void nf_cli_window_init(struct nf_cli_window *w)
{
	w->from_ns = -1;
	w->to_ns = -1;
	w->n_queues = w->n_fences = 0;
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
	struct nf_error err;

	nf_error_clear(&err);
	if (opt == 'F' || opt == 'T') {
		if (nf_parse_duration(arg, opt == 'F' ? &w->from_ns : &w->to_ns, &err))
			return nf_cli_usage_error(cmd, "--%s: %s", opt == 'F' ? "from" : "to", err.msg);
		return 0;
	}
	int64_t *arr = opt == 'q' ? w->queues : w->fences;
	int *n = opt == 'q' ? &w->n_queues : &w->n_fences;

	if (*n >= NF_CLI_MAX_FILTER)
		return nf_cli_usage_error(cmd, "too many filters (limit %d)", NF_CLI_MAX_FILTER);
	if (nf_cli_parse_id(arg, &arr[*n]))
		return nf_cli_usage_error(cmd, "bad %s handle '%s'", opt == 'q' ? "queue" : "fence", arg);
	(*n)++;
	return 0;
}

int nf_cli_timeout_option(const char *cmd, const char *arg, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || *end || !*arg || v < 1 || v > 86400)
		return nf_cli_usage_error(cmd, "--timeout '%s': whole seconds from 1 to 86400", arg);
	*out = v;
	return 0;
}
