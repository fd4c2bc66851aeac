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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* What `nftrace diff --help` prints; the options it names are parsed below. */
const char cmd_diff_usage[] =
	"usage: nftrace diff A B [--fail-on EXPR]... [--json | --csv] [--ops] [-o FILE.png]\n"
	"\n"
	"Compares session B with session A (two recordings, two imports, or one of each): per\n"
	"queue (matched by name), CPU thread, GPU ring and frame process, the distributions of\n"
	"stall per GPU wait, wait-to-signal latency, queued to end, CPU wait, GPU job duration\n"
	"and frame time (p50/p90/p99/max and counts), GPU busy, lost entries, anomalies and hang\n"
	"findings by kind, and the critical path of the last operation side by side. A change is\n"
	"a regression or an improvement only when significant (Mann-Whitney U and the\n"
	"percentiles' distribution-free intervals; the output names the test and the samples)\n"
	"and beyond the minimum effect; what one side lacks is said, not compared.\n"
	"\n"
	"  --fail-on EXPR       a budget; exit 1 when exceeded (repeatable). Clauses, separated by ',':\n"
	"                         STAT(METRIC[, SCOPE]) CMP CHANGE   STAT: p50 p90 p99 max count\n"
	"                         METRIC[(SCOPE)] CMP CHANGE         METRIC: busy lost anomalies findings\n"
	"                         regression[(SCOPE)]\n"
	"                       METRIC for STAT: stall latency queued_to_end cpu_wait job frame;\n"
	"                       SCOPE: all, queue=NAME, thread=NAME, ring=NAME, process=NAME, kind=NAME;\n"
	"                       CMP: > >= < <=; CHANGE from A to B: +10% (relative), 2us (ns us ms s), 3\n"
	"                       e.g. 'p99(stall)>+10%, p50(latency, queue=Q1)>2us, findings(kind=deadlock)>0'\n"
	"  --json, --csv        the comparison as one JSON object, or CSV (one line per series and statistic)\n"
	"  --ops                align the waits by (queue name, fence, value, occurrence) and list those\n"
	"                       whose stall or latency changed, most changed first\n"
	"  --ops-limit N        list at most N of them (default 50; 0: all)\n"
	"  --ops-min TIME       a wait changed when it moved by more than TIME (default 0: any change)\n"
	"  -o FILE.png          one page: A's timeline above B's, the changed waits marked (implies --ops)\n"
	"  --from T, --to T     the picture's window (default: 0 to the longer session's end)\n"
	"  --width PX           the picture's width (640..16000)\n"
	"  --alpha P            significance level of the tests (default 0.01)\n"
	"  --min-effect PCT     smallest relative change called a regression (default 5%)\n"
	"  --min-effect-ns TIME smallest absolute change called a regression (default 100ns)\n"
	"\n"
	"Exit status: 0 within budget (or no --fail-on), 1 a budget exceeded (or a series it names\n"
	"cannot be compared, or a session could not be read), 2 bad usage.\n";

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

int cmd_diff(int argc, char **argv)
{
	struct nf_diff_options opts;
	struct nf_diff_picture_options pic = { .from_ns = -1, .to_ns = -1 };
	struct nf_diff_gate *gate = NULL;
	struct nf_diff *d = NULL;
	enum nf_diff_format fmt = NF_DIFF_TEXT;
	const char *dirs[2] = { NULL, NULL };
	size_t ops_limit = 50;
	struct nf_error err;
	bool failed = false;
	int rc;

	nf_error_clear(&err);
	nf_diff_options_init(&opts);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if ((rc = nf_cli_common_option("diff", a)) >= 0) {
			nf_diff_gate_destroy(gate);
			return rc;
		}
		bool takes = !strcmp(a, "--fail-on") || !strcmp(a, "--ops-limit") || !strcmp(a, "--ops-min") ||
			     !strcmp(a, "-o") || !strcmp(a, "--output") || !strcmp(a, "--from") || !strcmp(a, "--to") ||
			     !strcmp(a, "--width") || !strcmp(a, "--alpha") || !strcmp(a, "--min-effect") ||
			     !strcmp(a, "--min-effect-ns");

		if (takes && !v) {
			rc = nf_cli_usage_error("diff", "option '%s' needs a value", a);
			goto out;
		}
		if (!strcmp(a, "--json") || !strcmp(a, "--csv")) {
			enum nf_diff_format f = a[2] == 'j' ? NF_DIFF_JSON : NF_DIFF_CSV;

			if (fmt != NF_DIFF_TEXT && fmt != f) {
				rc = nf_cli_usage_error("diff", "give one of --json, --csv");
				goto out;
			}
			fmt = f;
		} else if (!strcmp(a, "--ops")) {
			opts.ops = true;
		} else if (!strcmp(a, "--fail-on")) {
			char shown[512];

			if (nf_diff_gate_parse(v, &gate, &err)) {
				clean(shown, sizeof(shown), v);
				rc = err.code == NF_ENOMEM ? nf_cli_fail("diff", &err)
							   : nf_cli_usage_error("diff", "--fail-on '%s': %s", shown, err.msg);
				goto out;
			}
			i++;
		} else if (!strcmp(a, "--ops-limit")) {
			int64_t n;

			if (nf_cli_parse_id(v, &n)) {
				rc = nf_cli_usage_error("diff", "--ops-limit: bad count '%s'", v);
				goto out;
			}
			ops_limit = (size_t)n;
			i++;
		} else if (!strcmp(a, "--ops-min") || !strcmp(a, "--min-effect-ns") || !strcmp(a, "--from") ||
			   !strcmp(a, "--to")) {
			int64_t *dst = a[2] == 'o' ? &opts.ops_min_ns : a[2] == 'm' ? &opts.min_effect_ns
								   : a[2] == 'f' ? &pic.from_ns : &pic.to_ns;

			if (nf_parse_duration(v, dst, &err)) {
				rc = nf_cli_usage_error("diff", "%s: %s", a, err.msg);
				goto out;
			}
			i++;
		} else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
			pic.output = v;
			opts.ops = true;
			i++;
		} else if (!strcmp(a, "--width")) {
			int64_t w;

			if (nf_cli_parse_id(v, &w) || w < 640 || w > 16000) {
				rc = nf_cli_usage_error("diff", "--width: '%s' is not a width from 640 to 16000", v);
				goto out;
			}
			pic.width = (int)w;
			i++;
		} else if (!strcmp(a, "--alpha")) {
			char *end;

			errno = 0;
			opts.alpha = strtod(v, &end);
			if (errno || end == v || *end || !(opts.alpha > 0 && opts.alpha < 0.5)) {
				rc = nf_cli_usage_error("diff", "--alpha: '%s' is not a level between 0 and 0.5", v);
				goto out;
			}
			i++;
		} else if (!strcmp(a, "--min-effect")) {
			if (parse_pct(v, &opts.min_effect)) {
				rc = nf_cli_usage_error("diff", "--min-effect: '%s' is not a percentage (5%%)", v);
				goto out;
			}
			i++;
		} else if (a[0] == '-' && a[1]) {
			rc = nf_cli_usage_error("diff", "unknown option '%s'", a);
			goto out;
		} else if (!dirs[0] || !dirs[1]) {
			dirs[dirs[0] ? 1 : 0] = a;
		} else {
			rc = nf_cli_usage_error("diff", "unexpected argument '%s' (give two sessions)", a);
			goto out;
		}
	}
	if (!dirs[1]) {
		rc = nf_cli_usage_error("diff", "give two sessions: nftrace diff A B");
		goto out;
	}
	if (pic.output) {
		const char *dot = strrchr(pic.output, '.');

		if (!dot || strchr(dot, '/') || strcasecmp(dot, ".png")) {
			rc = nf_cli_usage_error("diff", "-o: the picture is a PNG (FILE.png), not '%s'", pic.output);
			goto out;
		}
	}
	if (pic.from_ns >= 0 && pic.to_ns >= 0 && pic.to_ns <= pic.from_ns) {
		rc = nf_cli_usage_error("diff", "--to must be after --from");
		goto out;
	}
	if (nf_diff_run(dirs[0], dirs[1], &opts, &d, &err)) {
		rc = nf_cli_fail("diff", &err);
		goto out;
	}
	if (gate && nf_diff_gate_check(gate, d, &failed, &err)) {
		rc = err.code == NF_ENOENT ? nf_cli_usage_error("diff", "%s", err.msg) : nf_cli_fail("diff", &err);
		goto out;
	}
	if (pic.output && nf_diff_picture(d, &pic, &err)) {
		rc = nf_cli_fail("diff", &err);
		goto out;
	}
	if (nf_diff_write(d, gate, fmt, ops_limit, stdout, &err)) {
		rc = nf_cli_fail("diff", &err);
		goto out;
	}
	rc = failed ? NF_EXIT_FAIL : NF_EXIT_OK;
out:
	nf_diff_destroy(d);
	nf_diff_gate_destroy(gate);
	return rc;
}
