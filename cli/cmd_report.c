/* nftrace report: draw a session's timeline to PNG, SVG or PDF, or write the interactive HTML page. */
#include "cli.h"
#include "contract/sattime.h"
#include "contract/sessiondir.h"
#include "contract/errors.h"

#include "contract/analysis.h"
#include "contract/frames.h"
#include "contract/html.h"
#include "contract/render.h"
#include "contract/session.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>


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
	if (ro->sel.from_ns < 0 && ro->sel.to_ns < 0) {
		/* the path and an eighth around it; saturated (times near 2^63) */
		int64_t span = nf_time_sub(p.end_ns, p.queued_ns), pad = span / 8 + 1;

		ro->sel.from_ns = p.queued_ns > pad ? p.queued_ns - pad : 0;
		ro->sel.to_ns = nf_time_add(p.end_ns, pad);
	}
	ro->marks = m;
	ro->n_marks = (int)p.n;
	ro->path_title = title;
	*owned = m;
	nf_cp_path_free(&p);
	return 0;
}

enum { O_OUTPUT, O_FROM, O_TO, O_QUEUE, O_FENCE, O_WIDTH, O_THEME, O_TITLE, O_MAX_OPS, O_THREADS, O_THREAD,
       O_PROCESS, O_CRITICAL_PATH, O_FIRST_PICTURE };

/* --first-picture auto: sessions of at least this many operations (a smaller one's timeline is built in a second or so). */
#define REPORT_EARLY_MIN_OPS 500000

static const struct nf_cli_option options[] = {
	[O_OUTPUT] = { .name = "output", .short_name = 'o', .arg = "FILE", .flags = NF_OPT_REQUIRED,
		       .complete = NF_COMPLETE_FILE, .exts = "png|svg|pdf|html|htm",
		       .help = "the picture or page to write: its extension says which (.png, .svg,\n"
			       ".pdf, .html); replaced only when complete" },
	NF_CLI_WINDOW_OPTIONS,
	[O_WIDTH] = { .name = "width", .arg = "PX", .help = "picture width in pixels, 640 to 16000 (default 1600)" },
	[O_THEME] = { .name = "theme", .arg = "THEME", .values = "light|dark",
		      .help = "picture colours: light (default) or dark" },
	[O_TITLE] = { .name = "title", .arg = "TEXT", .help = "title (default: the session directory's name)" },
	[O_MAX_OPS] = { .name = "max-ops", .arg = "N",
			.help = "FILE.html: the details of at most N operations (default 100000)" },
	[O_THREADS] = { .name = "threads", .arg = "all", .values = "all",
			.help = "kernel sessions: a row for every thread that ran" },
	[O_THREAD] = { .name = "thread", .arg = "NAME|TID", .flags = NF_OPT_REPEAT,
		       .help = "kernel sessions: also this thread's row (repeatable)" },
	[O_PROCESS] = { .name = "process", .arg = "NAME|PID", .flags = NF_OPT_REPEAT,
			.help = "kernel sessions: also a row for every thread of this process (repeatable)" },
	[O_CRITICAL_PATH] = { .name = "critical-path", .arg = "ID",
			      .help = "draw operation ID's critical path over the rows (pictures only)" },
	[O_FIRST_PICTURE] = { .name = "first-picture", .arg = "WHEN", .values = "auto|always|never",
			      .help = "a session whose timeline is not built yet: draw the picture (.png, .pdf;\n"
				      "no --queue, --fence or --critical-path) before the build loads the\n"
				      "operations, then finish the build: the picture without the links (auto:\n"
				      "sessions of 500000 operations or more; default)" },
	{ 0 },
};

struct report_state {
	struct nf_render_options ro;
	struct nf_cli_window win;       /* ro's selection */
	int64_t cp_op;
	long long max_ops;
	bool drawn;                     /* the first picture was drawn (report_early) */
	double t0;                      /* when the command began (monotonic seconds) */
};

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The title a picture gets: --title, else the session directory's name. */
static const char *report_title(const struct report_state *st, const char *dir)
{
	const char *slash = strrchr(dir, '/');

	if (st->ro.title)
		return st->ro.title;
	return slash && slash[1] ? slash + 1 : dir;
}

/* nf_early_reader's ready: the picture, from the timeline before its operations are loaded. */
static int report_early(void *ctx, const struct nf_early_timeline *t, struct nf_error *err)
{
	struct nf_cli *c = ctx;
	struct report_state *st = c->state;
	struct nf_render_options ro = st->ro;
	int rc;

	ro.sel = st->win.sel;
	ro.title = report_title(st, c->args[0]);
	if ((rc = nf_render_early(t, c->args[0], &ro, err)) != 0)
		return rc;
	st->drawn = true;
	fprintf(stderr, "nftrace report: %s: drawn in %.1f s, before the timeline was complete (without links: "
		"report again for them); building the timeline of %" PRId64 " operations for the next commands\n",
		ro.output, now_s() - st->t0, t->n_ops);
	return 0;
}

/*
 * A picture of a session whose timeline is missing or stale, drawn while the
 * timeline is built (nf_timeline_ensure_early); the dispatcher then finds it
 * built. Returns 0 (drawn or not: st->drawn) or the exit code.
 */
static int report_first_picture(struct nf_cli *c)
{
	struct report_state *st = c->state;
	const char *when = nf_cli_get(c, O_FIRST_PICTURE), *ext = strrchr(st->ro.output, '.');
	struct nf_early_reader r = { REPORT_EARLY_MIN_OPS, report_early, c, NULL };
	char db[NF_CLI_PATH_MAX];
	struct nf_error err;
	int rc;

	if (when && !strcmp(when, "never"))
		return 0;
	if (when && !strcmp(when, "always"))
		r.min_ops = 0;
	/* the operations are drawn whole: no filter of them, no overlay; not an SVG (its
	 * tooltips read the operations' rows) */
	if (!ext || !(strcasecmp(ext, ".png") == 0 || strcasecmp(ext, ".pdf") == 0) || st->cp_op >= 0 ||
	    st->win.sel.n_queues || st->win.sel.n_fences) {
		if (when && !strcmp(when, "always"))
			return nf_cli_usage_error("report", "--first-picture always: draws .png or .pdf pictures "
						  "without --queue, --fence or --critical-path");
		return 0;
	}
	nf_error_clear(&err);
	rc = nf_timeline_ensure_early(c->args[0], db, sizeof(db), &r, &err);
	/* a read-only session: the dispatcher builds a timeline elsewhere, then the picture is drawn */
	if (rc == NF_EIO && !st->drawn)
		return 0;
	if (rc)
		return nf_cli_fail("report", &err);
	if (!st->drawn && r.min_ops == 0)
		fprintf(stderr, "nftrace report: no first picture: %s; drawn from the timeline\n",
			r.why_not ? r.why_not : "the picture was not drawn");
	return 0;
}

/* Usage checks, before the session is read or its timeline built. */
static int report_prepare(struct nf_cli *c)
{
	struct report_state *st = c->state;
	struct nf_render_options *ro = &st->ro;
	const char *v;
	long long width = 0;
	int r;

	st->cp_op = -1;
	st->t0 = now_s();
	if ((r = nf_cli_window(c, O_FROM, &st->win)) ||
	    (r = nf_cli_window_threads(c, O_THREADS, O_THREAD, O_PROCESS, &st->win)))
		return r;
	if ((r = nf_cli_int(c, O_WIDTH, NF_RENDER_MIN_WIDTH, NF_RENDER_MAX_WIDTH, &width)))
		return r;
	ro->width = (int)width;
	if ((r = nf_cli_int(c, O_MAX_OPS, 1, NF_HTML_MAX_MAX_OPS, &st->max_ops)))
		return r;
	if ((v = nf_cli_get(c, O_THEME)))
		ro->theme = !strcmp(v, "dark") ? NF_THEME_DARK : NF_THEME_LIGHT;
	ro->title = nf_cli_get(c, O_TITLE);
	if ((v = nf_cli_get(c, O_CRITICAL_PATH)) && nf_cli_parse_id(v, &st->cp_op))
		return nf_cli_usage_error("report", "bad operation id '%s' for --critical-path", v);
	ro->output = nf_cli_get(c, O_OUTPUT);
	if (!known_output_format(ro->output))
		return nf_cli_usage_error("report", "-o %s: unknown output format (use .png, .svg, .pdf or .html)",
					  ro->output);
	if (is_html(ro->output) && (nf_cli_has(c, O_WIDTH) || nf_cli_has(c, O_THEME)))
		return nf_cli_usage_error("report", "--%s applies to pictures, not to -o %s",
					  nf_cli_has(c, O_WIDTH) ? "width" : "theme", ro->output);
	if (!is_html(ro->output) && st->max_ops)
		return nf_cli_usage_error("report", "--max-ops applies to -o FILE.html only");
	if (is_html(ro->output) && st->cp_op >= 0)
		return nf_cli_usage_error("report", "--critical-path applies to pictures, not to -o %s", ro->output);
	/* an output inside the session would be read as part of it: refused
	 * before its timeline is built */
	struct nf_error err;

	nf_error_clear(&err);
	if (nf_session_output_check(c->args[0], ro->output, &err))
		return nf_cli_fail("report", &err);
	return report_first_picture(c);
}

static int report_run(struct nf_cli *c)
{
	struct report_state *st = c->state;
	struct nf_render_options ro = st->ro;
	struct nf_render_mark *marks = NULL;
	const char *db = c->db[0], *dir = c->args[0];
	char path_title[160], fdb[NF_CLI_PATH_MAX];
	struct nf_error err;
	int rc;

	if (st->drawn)
		return NF_EXIT_OK;  /* drawn while the timeline was built (report_first_picture) */
	nf_error_clear(&err);
	/* the frames, computed once and kept (the display rows and the frame plot draw them) */
	if (nf_frames_ensure(dir, NULL, fdb, sizeof(fdb), &err))
		return nf_cli_fail("report", &err);
	db = fdb;
	ro.sel = st->win.sel;
	ro.title = report_title(st, dir);
	if (is_html(ro.output)) {
		struct nf_html_options ho = { 0 };

		ho.output = ro.output;
		ho.title = ro.title;
		ho.session = dir;
		ho.sel = ro.sel;
		ho.max_ops = st->max_ops;
		if (nf_html_report(db, &ho, &err))
			return nf_cli_fail("report", &err);
		return NF_EXIT_OK;
	}
	if (st->cp_op >= 0 && report_path(db, st->cp_op, &ro, &marks, path_title, sizeof(path_title), &err)) {
		free(marks);
		return nf_cli_fail("report", &err);
	}
	rc = nf_render(db, &ro, &err);
	free(marks);
	if (rc)
		return nf_cli_fail("report", &err);
	return NF_EXIT_OK;
}

const struct nf_cli_cmd cmd_report = {
	.options = options,
	.args = "session DIR",
	.min_args = 1,
	.max_args = 1,
	.args_complete = NF_COMPLETE_SESSION,
	.synopsis =
		"nftrace report DIR -o FILE.{png,svg,pdf} [--from T] [--to T] [--queue Q]... [--fence F]...\n"
		"               [--width PX] [--theme light|dark] [--title TEXT] [--critical-path ID]\n"
		"               [--first-picture auto|always|never]\n"
		"nftrace report DIR -o FILE.html [--from T] [--to T] [--queue Q]... [--fence F]...\n"
		"               [--title TEXT] [--max-ops N] [--threads all] [--thread T]... [--process P]...\n",
	.description =
		"Draws one row per hardware queue: light pink waits, dark pink signals, each box from\n"
		"when it was queued on the CPU to when the GPU completed it. Times accept units: 12.5ms.\n"
		"Operations that overlap on a queue are stacked one per sub-lane (queue depth, up to\n"
		"24; the page says how many share beyond it), with their fence and value where it fits.\n"
		"Linux kernel sessions: GPU rings on top (jobs: submitted -> started shaded, started ->\n"
		"finished solid), vblank lines, user markers on their thread's row; CPU rows for the\n"
		"threads that submitted GPU work, waited on fences or wrote markers, by process, and\n"
		"those --threads, --thread and --process ask for.\n"
		"\n"
		"--critical-path ID draws operation ID's critical path (see 'nftrace critical-path') over\n"
		"the rows in blue, segment by segment (waits dashed), each joined to the next; without\n"
		"--from/--to the window is the path's span with a margin.\n"
		"\n"
		"FILE.html is one self-contained interactive page (wheel zoom, drag pan, hover details,\n"
		"wait <-> signal highlighting, search); it holds the details of at most --max-ops\n"
		"operations (default 100000) and summaries of the whole window, and names the --from/--to\n"
		"to use for the rest. It has the rows of the pictures: kernel sessions' rings, jobs (click:\n"
		"the jobs it depended on and those that depended on it), vblanks, markers and the same\n"
		"thread rows (--threads, --thread, --process); ETW sessions' DMA packets per node, VSyncs.\n",
	.state_size = sizeof(struct report_state),
	.prepare = report_prepare,
	.run = report_run,
};
