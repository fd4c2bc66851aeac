/* nftrace report: draw a session's timeline to PNG, SVG or PDF, or write the interactive HTML page. */
#include "cli.h"
#include "contract/sattime.h"
#include "contract/sessiondir.h"
#include "contract/errors.h"

#include "contract/analysis.h"
#include "contract/html.h"
#include "contract/render.h"
#include "contract/session.h"

#include <errno.h>
#include <inttypes.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>


/* Whether the extension of path (its last component's) is one nf_render draws. */
static int known_output_format(const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *dot = strrchr(slash ? slash + 1 : path, '.');

	return dot && (!strcasecmp(dot, ".png") || !strcasecmp(dot, ".svg") || !strcasecmp(dot, ".pdf") ||
		       !strcasecmp(dot, ".html") || !strcasecmp(dot, ".htm"));
}

/* Whether path names an HTML page (written by nf_html_report, not drawn by nf_render). */
static int is_html(const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *dot = strrchr(slash ? slash + 1 : path, '.');

	return dot && (!strcasecmp(dot, ".html") || !strcasecmp(dot, ".htm"));
}

/*
 * The critical path of operation `op` as overlay marks (ro->marks, malloc'ed:
 * the caller frees *owned), its title in title[], and when no window was asked
 * for, the path's span with a margin on each side.
 */
static int report_path(const char *db, int64_t op, struct nf_render_options *ro,
		       struct nf_render_mark **owned, char *title, size_t title_len, struct nf_error *err)
{
	struct nf_analysis *a = NULL;
	struct nf_cp_path p = { 0 };
	struct nf_render_mark *m;
	int64_t id;
	int rc;

	rc = nf_analysis_open_lazy(db, &a, err);
	if (!rc)
		rc = nf_analysis_target(a, NF_CP_OP, op, &id, err);
	if (!rc)
		rc = nf_analysis_critical_path(a, id, &p, err);
	nf_analysis_destroy(a);
	if (rc) {
		nf_error_prefix(err, "--critical-path %" PRId64, op);
		return rc;
	}
	m = calloc(p.n ? p.n : 1, sizeof(*m));
	if (!m) {
		nf_cp_path_free(&p);
		return nf_error_set(err, NF_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < p.n; i++) {
		const struct nf_cp_segment *s = &p.segs[i];

		m[i].kind = s->kind == NF_SEG_WAIT ? NF_MARK_WAIT
			    : s->kind == NF_SEG_EXECUTE ? NF_MARK_EXECUTE : NF_MARK_QUEUE;
		m[i].on_thread = s->on_thread;
		m[i].queue = s->queue;
		m[i].thread = s->thread;
		m[i].start_ns = s->start_ns;
		m[i].end_ns = s->end_ns;
	}
	snprintf(title, title_len, "critical path of op %" PRId64 ": latency %" PRId64 " ns, %zu segment%s",
		 op, nf_time_sub(p.end_ns, p.queued_ns), p.n, p.n == 1 ? "" : "s");
	if (ro->from_ns < 0 && ro->to_ns < 0) {
		/* the path and an eighth around it; saturated (times near 2^63) */
		int64_t span = nf_time_sub(p.end_ns, p.queued_ns), pad = span / 8 + 1;

		ro->from_ns = p.queued_ns > pad ? p.queued_ns - pad : 0;
		ro->to_ns = nf_time_add(p.end_ns, pad);
	}
	ro->marks = m;
	ro->n_marks = (int)p.n;
	ro->path_title = title;
	*owned = m;
	nf_cp_path_free(&p);
	return 0;
}

/* What `nftrace report --help` prints; the options it names are parsed below. */
const char cmd_report_usage[] =
	"usage: nftrace report DIR -o FILE.{png,svg,pdf} [--from T] [--to T] [--queue Q]... [--fence F]...\n"
	"                      [--width PX] [--theme light|dark] [--title TEXT] [--critical-path ID]\n"
	"       nftrace report DIR -o FILE.html [--from T] [--to T] [--queue Q]... [--fence F]...\n"
	"                      [--title TEXT] [--max-ops N] [--threads all] [--thread T]... [--process P]...\n"
	"\n"
	"Draws one row per hardware queue: light pink waits, dark pink signals, each box from\n"
	"when it was queued on the CPU to when the GPU completed it. Times accept units: 12.5ms.\n"
	"Operations that overlap on a queue are stacked one per sub-lane (queue depth, up to\n"
	"24; the page says how many share beyond it), with their fence and value where it fits.\n"
	"Linux kernel sessions: GPU rings on top (jobs: submitted -> started shaded, started ->\n"
	"finished solid), vblank lines, user markers on their thread's row; CPU rows for the\n"
	"threads that submitted GPU work, waited on fences or wrote markers, by process:\n"
	"  --threads all        a row for every thread that ran\n"
	"  --thread NAME|TID    also this thread (repeatable)\n"
	"  --process NAME|PID   also every thread of this process (repeatable)\n"
	"--critical-path ID draws operation ID's critical path (see 'nftrace critical-path') over\n"
	"the rows in blue, segment by segment (waits dashed), each joined to the next; without\n"
	"--from/--to the window is the path's span with a margin.\n"
	"FILE.html is one self-contained interactive page (wheel zoom, drag pan, hover details,\n"
	"wait <-> signal highlighting, search); it holds the details of at most --max-ops\n"
	"operations (default 100000) and summaries of the whole window, and names the --from/--to\n"
	"to use for the rest. It has the rows of the pictures: kernel sessions' rings, jobs (click:\n"
	"the jobs it depended on and those that depended on it), vblanks, markers and the same\n"
	"thread rows (--threads, --thread, --process); ETW sessions' DMA packets per node, VSyncs.\n";

int cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "from", required_argument, NULL, 'F' },
		{ "to", required_argument, NULL, 'T' },
		{ "queue", required_argument, NULL, 'q' },
		{ "fence", required_argument, NULL, 'f' },
		{ "width", required_argument, NULL, 'w' },
		{ "theme", required_argument, NULL, 't' },
		{ "title", required_argument, NULL, 'n' },
		{ "max-ops", required_argument, NULL, 'm' },
		{ "threads", required_argument, NULL, 'A' },
		{ "thread", required_argument, NULL, 'R' },
		{ "process", required_argument, NULL, 'P' },
		{ "critical-path", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct nf_render_options ro = { 0 };
	struct nf_cli_window win;
	const char *threads[NF_CLI_MAX_FILTER], *procs[NF_CLI_MAX_FILTER];
	struct nf_error err;
	struct nf_render_mark *marks = NULL;
	char db[4200], path_title[160];
	int64_t cp_op = -1;
	int opt, rc, width_set = 0, theme_set = 0;
	long long max_ops = 0;
	char *end;

	nf_cli_window_init(&win);
	nf_error_clear(&err);
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'o': ro.output = optarg; break;
		case 'F':
		case 'T':
		case 'q':
		case 'f': {
			int r = nf_cli_window_option("report", opt, optarg, &win);

			if (r)
				return r;
			break;
		}
		case 'w':
			errno = 0;
			long w = strtol(optarg, &end, 10);
			if (errno || *end || w < NF_RENDER_MIN_WIDTH || w > NF_RENDER_MAX_WIDTH)
				return nf_cli_usage_error("report", "--width must be between %d and %d",
							  NF_RENDER_MIN_WIDTH, NF_RENDER_MAX_WIDTH);
			ro.width = (int)w;
			width_set = 1;
			break;
		case 'm':
			errno = 0;
			max_ops = strtoll(optarg, &end, 10);
			if (errno || *end || !*optarg || max_ops < 1 || max_ops > NF_HTML_MAX_MAX_OPS)
				return nf_cli_usage_error("report", "--max-ops must be between 1 and %d",
							  NF_HTML_MAX_MAX_OPS);
			break;
		case 't':
			if (!strcmp(optarg, "light"))
				ro.theme = NF_THEME_LIGHT;
			else if (!strcmp(optarg, "dark"))
				ro.theme = NF_THEME_DARK;
			else
				return nf_cli_usage_error("report", "unknown --theme '%s' (light or dark)", optarg);
			theme_set = 1;
			break;
		case 'n': ro.title = optarg; break;
		case 'A':
			if (strcmp(optarg, "all"))
				return nf_cli_usage_error("report", "--threads takes 'all' (use --thread NAME|TID for one)");
			ro.threads_all = 1;
			break;
		case 'R':
		case 'P': {
			const char **arr = opt == 'R' ? threads : procs;
			int *n = opt == 'R' ? &ro.n_threads : &ro.n_processes;

			if (*n >= NF_CLI_MAX_FILTER)
				return nf_cli_usage_error("report", "too many filters (limit %d)", NF_CLI_MAX_FILTER);
			if (!*optarg)
				return nf_cli_usage_error("report", "--%s needs a name or id", opt == 'R' ? "thread" : "process");
			arr[(*n)++] = optarg;
			break;
		}
		case 'c':
			if (nf_cli_parse_id(optarg, &cp_op))
				return nf_cli_usage_error("report", "bad operation id '%s' for --critical-path", optarg);
			break;
		case 'h': return nf_cli_common_option("report", "--help");
		case 'V': return nf_cli_common_option("report", "--version");
		case ':': return nf_cli_usage_error("report", "option '%s' needs a value", argv[optind - 1]);
		default: return nf_cli_usage_error("report", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return nf_cli_usage_error("report", "missing session DIR");
	if (optind + 1 < argc)
		return nf_cli_usage_error("report", "unexpected argument '%s'", argv[optind + 1]);
	if (!ro.output)
		return nf_cli_usage_error("report", "missing -o FILE");
	/* Checked here, before the session is read or its timeline built. */
	if (!known_output_format(ro.output))
		return nf_cli_usage_error("report", "-o %s: unknown output format (use .png, .svg, .pdf or .html)",
					  ro.output);
	if (is_html(ro.output) && (width_set || theme_set))
		return nf_cli_usage_error("report", "--%s applies to pictures, not to -o %s",
					  width_set ? "width" : "theme", ro.output);
	if (!is_html(ro.output) && max_ops)
		return nf_cli_usage_error("report", "--max-ops applies to -o FILE.html only");
	if (is_html(ro.output) && cp_op >= 0)
		return nf_cli_usage_error("report", "--critical-path applies to pictures, not to -o %s", ro.output);
	if (win.from_ns >= 0 && win.to_ns >= 0 && win.to_ns <= win.from_ns)
		return nf_cli_usage_error("report", "--to must be after --from");
	ro.from_ns = win.from_ns;
	ro.to_ns = win.to_ns;
	ro.n_queues = win.n_queues;
	ro.n_fences = win.n_fences;
	ro.queues = win.n_queues ? win.queues : NULL;
	ro.fences = win.n_fences ? win.fences : NULL;
	ro.threads = ro.n_threads ? threads : NULL;
	ro.processes = ro.n_processes ? procs : NULL;
	const char *dir = argv[optind];
	if (!ro.title) {
		const char *slash = strrchr(dir, '/');
		ro.title = slash && slash[1] ? slash + 1 : dir;
	}
	if (nf_session_output_check(dir, ro.output, &err) || nf_timeline_ensure(dir, db, sizeof(db), &err))
		return nf_cli_fail("report", &err);
	if (is_html(ro.output)) {
		struct nf_html_options ho = { 0 };

		ho.output = ro.output;
		ho.title = ro.title;
		ho.session = dir;
		ho.from_ns = ro.from_ns;
		ho.to_ns = ro.to_ns;
		ho.queues = ro.queues;
		ho.n_queues = ro.n_queues;
		ho.fences = ro.fences;
		ho.n_fences = ro.n_fences;
		ho.max_ops = max_ops;
		ho.threads_all = ro.threads_all;
		ho.threads = ro.threads;
		ho.n_threads = ro.n_threads;
		ho.processes = ro.processes;
		ho.n_processes = ro.n_processes;
		if (nf_html_report(db, &ho, &err))
			return nf_cli_fail("report", &err);
		return NF_EXIT_OK;
	}
	if (cp_op >= 0 && report_path(db, cp_op, &ro, &marks, path_title, sizeof(path_title), &err)) {
		free(marks);
		return nf_cli_fail("report", &err);
	}
	rc = nf_render(db, &ro, &err);
	free(marks);
	if (rc)
		return nf_cli_fail("report", &err);
	return NF_EXIT_OK;
}
