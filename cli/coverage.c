/*
 * What a session covers, as `nftrace check` and `nftrace info` print it: from
 * when every CPU is recorded, and each CPU's or log's spans (the coverage table
 * of the timeline, whatever the source).
 */
#include "cli.h"
#include "contract/escape.h"
#include "contract/errors.h"
#include "contract/timeline.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char *scope_word(const char *scope)
{
	return !strcmp(scope, "cpu") ? "CPU" : !strcmp(scope, "etw_cpu") ? "CPU" : "log of queue";
}

void nf_cli_coverage_text(FILE *out, const struct nf_coverage *c)
{
	size_t logs = 0;

	if (c->n == 0) {
		fputs("coverage:                 none recorded\n", out);
		return;
	}
	for (size_t i = 0; i < c->n; i++)
		logs += !strcmp(c->spans[i].scope, "log");
	if (c->cpus) {
		if (c->whole && c->whole_from_ns == 0)
			fprintf(out, "coverage:                 every CPU recorded from the start (%zu CPU%s)\n", c->cpus,
				c->cpus == 1 ? "" : "s");
		else if (c->whole)
			fprintf(out, "coverage:                 every CPU recorded from %.6f s; before it, what a CPU "
				"not yet recording ran is unknown\n", (double)c->whole_from_ns / 1e9);
		else
			fprintf(out, "coverage:                 not every CPU is recorded at any time: what they ran is "
				"unknown\n");
		for (size_t i = 0; i < c->n; i++) {
			const struct nf_coverage_span *v = &c->spans[i];

			if (!strcmp(v->scope, "log"))
				continue;
			if (!v->has_from)
				fprintf(out, "  %s %" PRId64 ": nothing (%s)\n", scope_word(v->scope), v->id, v->detail);
			else
				fprintf(out, "  %s %" PRId64 ": %.6f s to %.6f s (%s)\n", scope_word(v->scope), v->id,
					(double)v->from_ns / 1e9, (double)v->to_ns / 1e9, v->detail);
		}
	}
	if (logs)
		fprintf(out, "coverage:                 each log from its queue's creation (%zu log%s); entries lost "
			"before they were read are 'lost' anomalies\n", logs, logs == 1 ? "" : "s");
}

/* A JSON string (nf_esc_json; the scope names and details are nftrace's). */
static void plain_json(FILE *out, const char *s)
{
	nf_esc_json_file(out, s, 0);
}

void nf_cli_coverage_json(FILE *out, const struct nf_coverage *c)
{
	fputs(",\n  \"coverage\": {\"whole_from_ns\": ", out);
	if (c->whole)
		fprintf(out, "%" PRId64, c->whole_from_ns);
	else
		fputs("null", out);
	fputs(", \"spans\": [", out);
	for (size_t i = 0; i < c->n; i++) {
		const struct nf_coverage_span *v = &c->spans[i];

		fprintf(out, "%s\n    {\"scope\": ", i ? "," : "");
		plain_json(out, v->scope);
		fprintf(out, ", \"id\": %" PRId64 ", \"log\": ", v->id);
		if (v->log[0])
			plain_json(out, v->log);
		else
			fputs("null", out);
		if (v->has_from)
			fprintf(out, ", \"from_ns\": %" PRId64 ", \"to_ns\": %" PRId64, v->from_ns, v->to_ns);
		else
			fputs(", \"from_ns\": null, \"to_ns\": null", out);
		if (v->has_events)
			fprintf(out, ", \"events\": %" PRId64, v->events);
		else
			fputs(", \"events\": null", out);
		fputs(", \"detail\": ", out);
		plain_json(out, v->detail);
		fputc('}', out);
	}
	fprintf(out, "%s]}", c->n ? "\n  " : "");
}
