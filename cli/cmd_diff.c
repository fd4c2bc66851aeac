/*
 * nftrace diff: what changed between two sessions, as a report and as a CI
 * gate (include/contract/diff.h does the work; this file reads the options,
 * prints, and maps the gate to the exit status: 0 within budget, 1 a budget
 * exceeded, 2 bad usage).
 */
#include "cli.h"
#include "contract/escape.h"

#include "contract/diff.h"
#include "contract/render.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { O_FAIL_ON, O_JSON, O_CSV, O_OPS, O_OPS_LIMIT, O_OPS_MIN, O_OUTPUT, O_FROM, O_TO, O_WIDTH, O_ALPHA,
       O_MIN_EFFECT, O_MIN_EFFECT_NS };

static const struct nf_cli_option options[] = {
	[O_FAIL_ON] = { .name = "fail-on", .arg = "EXPR", .flags = NF_OPT_REPEAT,
			.help = "a budget (the grammar above); exit 1 when exceeded (repeatable)" },
	[O_JSON] = { .name = "json", .help = "the comparison as one JSON object" },
	[O_CSV] = { .name = "csv", .help = "the comparison as CSV (one line per series and statistic)" },
	[O_OPS] = { .name = "ops",
		    .help = "align the waits by (queue name, fence, value, occurrence) and list those\n"
			    "whose stall or latency changed, most changed first" },
	[O_OPS_LIMIT] = { .name = "ops-limit", .arg = "N", .help = "list at most N of them (default 50; 0: all)" },
	[O_OPS_MIN] = { .name = "ops-min", .arg = "TIME",
			.help = "a wait changed when it moved by more than TIME (default 0: any change)" },
	[O_OUTPUT] = { .name = "output", .short_name = 'o', .arg = "FILE.png", .complete = NF_COMPLETE_FILE,
		       .exts = "png",
		       .help = "one page: A's timeline above B's, the changed waits marked (implies --ops)" },
	[O_FROM] = { .name = "from", .arg = "T", .help = "the picture's window from T (default 0)" },
	[O_TO] = { .name = "to", .arg = "T", .help = "the picture's window to T (default: the longer session's end)" },
	[O_WIDTH] = { .name = "width", .arg = "PX", .help = "the picture's width (640..16000)" },
	[O_ALPHA] = { .name = "alpha", .arg = "P", .help = "significance level of the tests (default 0.01)" },
	[O_MIN_EFFECT] = { .name = "min-effect", .arg = "PCT",
			   .help = "smallest relative change called a regression (default 5%)" },
	[O_MIN_EFFECT_NS] = { .name = "min-effect-ns", .arg = "TIME",
			      .help = "smallest absolute change called a regression (default 100ns)" },
	{ 0 },
};

struct diff_state {
	struct nf_diff_options opts;
	struct nf_diff_picture_options pic;
	struct nf_diff_gate *gate;
	enum nf_diff_format fmt;
	size_t ops_limit;
};

/* The expression as the user typed it, as text (nf_esc_text), for a message. */
static void clean(char *dst, size_t len, const char *src)
{
	nf_esc_text_buf(dst, len, src, 0);
}

/* A percentage ("5%" or "5") as a fraction: 0, or -1. */
static int parse_pct(const char *s, double *out)
{
	char *end;

	errno = 0;
	double v = strtod(s, &end);

	if (errno || end == s || !isfinite(v) || v < 0 || (*end && strcmp(end, "%")))
		return -1;
	*out = v / 100;
	return 0;
}

/* Every option read and checked, the gate parsed: before either session is read. */
static int diff_prepare(struct nf_cli *c)
{
	struct diff_state *st = c->state;
	struct nf_diff_options *opts = &st->opts;
	struct nf_diff_picture_options *pic = &st->pic;
	struct nf_error err;
	long long width = 0;
	const char *v;
	int pos = 0, rc;

	nf_error_clear(&err);
	nf_diff_options_init(opts);
	pic->from_ns = pic->to_ns = -1;
	st->fmt = nf_cli_has(c, O_JSON) ? NF_DIFF_JSON : nf_cli_has(c, O_CSV) ? NF_DIFF_CSV : NF_DIFF_TEXT;
	st->ops_limit = 50;
	if (nf_cli_has(c, O_JSON) && nf_cli_has(c, O_CSV))
		return nf_cli_usage_error("diff", "give one of --json, --csv");
	if (c->n_args < 2)
		return nf_cli_usage_error("diff", "give two sessions: nftrace diff A B");
	while ((v = nf_cli_next(c, O_FAIL_ON, &pos)))
		if (nf_diff_gate_parse(v, &st->gate, &err)) {
			char shown[512];

			clean(shown, sizeof(shown), v);
			return err.code == NF_ENOMEM ? nf_cli_fail("diff", &err)
						     : nf_cli_usage_error("diff", "--fail-on '%s': %s", shown, err.msg);
		}
	opts->ops = nf_cli_has(c, O_OPS) || nf_cli_has(c, O_OUTPUT);
	if ((v = nf_cli_get(c, O_OPS_LIMIT))) {
		int64_t n;

		if (nf_cli_parse_id(v, &n))
			return nf_cli_usage_error("diff", "--ops-limit: bad count '%s'", v);
		st->ops_limit = (size_t)n;
	}
	static const struct { int opt; size_t off; } times[] = {
		{ O_OPS_MIN, offsetof(struct diff_state, opts.ops_min_ns) },
		{ O_MIN_EFFECT_NS, offsetof(struct diff_state, opts.min_effect_ns) },
		{ O_FROM, offsetof(struct diff_state, pic.from_ns) },
		{ O_TO, offsetof(struct diff_state, pic.to_ns) },
	};
	for (size_t k = 0; k < sizeof(times) / sizeof(times[0]); k++)
		if ((v = nf_cli_get(c, times[k].opt)) &&
		    nf_parse_duration(v, (int64_t *)((char *)st + times[k].off), &err))
			return nf_cli_usage_error("diff", "--%s: %s", options[times[k].opt].name, err.msg);
	pic->output = nf_cli_get(c, O_OUTPUT);
	if ((rc = nf_cli_int(c, O_WIDTH, 640, 16000, &width)))
		return rc;
	pic->width = (int)width;
	if ((v = nf_cli_get(c, O_ALPHA))) {
		char *end;

		errno = 0;
		opts->alpha = strtod(v, &end);
		if (errno || end == v || *end || !(opts->alpha > 0 && opts->alpha < 0.5))
			return nf_cli_usage_error("diff", "--alpha: '%s' is not a level between 0 and 0.5", v);
	}
	if ((v = nf_cli_get(c, O_MIN_EFFECT)) && parse_pct(v, &opts->min_effect))
		return nf_cli_usage_error("diff", "--min-effect: '%s' is not a percentage (5%%)", v);
	if (pic->output) {
		const char *dot = strrchr(pic->output, '.');

		if (!dot || strchr(dot, '/') || strcasecmp(dot, ".png"))
			return nf_cli_usage_error("diff", "-o: the picture is a PNG (FILE.png), not '%s'", pic->output);
	}
	if (pic->from_ns >= 0 && pic->to_ns >= 0 && pic->to_ns <= pic->from_ns)
		return nf_cli_usage_error("diff", "--to must be after --from");
	c->n_sessions = 2;
	return 0;
}

static int diff_run(struct nf_cli *c)
{
	struct diff_state *st = c->state;
	struct nf_diff *d = NULL;
	struct nf_error err;
	bool failed = false;
	int rc;

	nf_error_clear(&err);
	if (nf_diff_run(c->args[0], c->args[1], &st->opts, &d, &err)) {
		rc = nf_cli_fail("diff", &err);
		goto out;
	}
	if (st->gate && nf_diff_gate_check(st->gate, d, &failed, &err)) {
		rc = err.code == NF_ENOENT ? nf_cli_usage_error("diff", "%s", err.msg) : nf_cli_fail("diff", &err);
		goto out;
	}
	if (st->pic.output && nf_diff_picture(d, &st->pic, &err)) {
		rc = nf_cli_fail("diff", &err);
		goto out;
	}
	if (nf_diff_write(d, st->gate, st->fmt, st->ops_limit, stdout, &err)) {
		rc = nf_cli_fail("diff", &err);
		goto out;
	}
	rc = failed ? NF_EXIT_FAIL : NF_EXIT_OK;
out:
	nf_diff_destroy(d);
	return rc;
}

static void diff_finish(struct nf_cli *c)
{
	struct diff_state *st = c->state;

	nf_diff_gate_destroy(st->gate);
}

const struct nf_cli_cmd cmd_diff = {
	.options = options,
	.args = "sessions A and B",
	.min_args = 0,
	.max_args = 2,
	.args_complete = NF_COMPLETE_SESSION,
	.synopsis = "nftrace diff A B [--fail-on EXPR]... [--json | --csv] [--ops] [-o FILE.png]\n",
	.description =
		"Compares session B with session A (two recordings, two imports, or one of each): per\n"
		"queue (matched by name), CPU thread, GPU ring and frame process, the distributions of\n"
		"stall per GPU wait, wait-to-signal latency, queued to end, CPU wait, GPU job duration\n"
		"and frame time (p50/p90/p99/max and counts), GPU busy, lost entries, anomalies and hang\n"
		"findings by kind, and the critical path of the last operation side by side. A change is\n"
		"a regression or an improvement only when significant (Mann-Whitney U and the\n"
		"percentiles' distribution-free intervals; the output names the test and the samples)\n"
		"and beyond the minimum effect; what one side lacks is said, not compared.\n"
		"\n"
		"--fail-on EXPR: clauses separated by ',', each one of\n"
		"  STAT(METRIC[, SCOPE]) CMP CHANGE   STAT: p50 p90 p99 max count\n"
		"  METRIC[(SCOPE)] CMP CHANGE         METRIC: busy lost anomalies findings\n"
		"  regression[(SCOPE)]\n"
		"METRIC for STAT: stall latency queued_to_end cpu_wait job frame; SCOPE: all, queue=NAME,\n"
		"thread=NAME, ring=NAME, process=NAME, kind=NAME; CMP: > >= < <=; CHANGE from A to B:\n"
		"+10% (relative), 2us (ns us ms s), 3. For example:\n"
		"  'p99(stall)>+10%, p50(latency, queue=Q1)>2us, findings(kind=deadlock)>0'\n"
		"\n"
		"Exit status: 0 within budget (or no --fail-on), 1 a budget exceeded (or a series it names\n"
		"cannot be compared, or a session could not be read), 2 bad usage.\n",
	.state_size = sizeof(struct diff_state),
	.prepare = diff_prepare,
	.run = diff_run,
	.finish = diff_finish,
};
