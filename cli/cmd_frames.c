/*
 * nftrace frames: the frames of a session (frames/, include/contract/frames.h)
 * as a table, CSV or JSON, with their time, interval, GPU busy and wait time,
 * time until displayed, whether they were late or dropped and what decided
 * them, then summary lines (frames, p50/p99 frame time, late and dropped).
 */
#include "cli.h"
#include "contract/errors.h"
#include "contract/escape.h"

#include "contract/frames.h"
#include "contract/render.h"
#include "contract/timeline.h"

#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct opts {
	const char *dir, *process, *marker;
	int64_t budget; /* -1: none */
	enum { OUT_TABLE, OUT_CSV, OUT_JSON } out;
};

/* Text from the capture, printable (nf_esc_text: what is not printable UTF-8 is '?'). */
static void put_clean(FILE *f, const char *s)
{
	nf_esc_text_file(f, s ? s : "", 0);
}

/* CSV text, its quotes doubled. */
static int csv_write(void *ctx, const char *p, size_t n)
{
	for (const char *q; (q = memchr(p, '"', n)); n -= (size_t)(q + 1 - p), p = q + 1)
		if (fwrite(p, 1, (size_t)(q + 1 - p), ctx) != (size_t)(q + 1 - p) || fputc('"', ctx) == EOF)
			return -1;
	return fwrite(p, 1, n, ctx) == n ? 0 : -1;
}

/* A CSV field from the capture: as text (nf_esc_text, newlines kept), quoted
 * when it holds , " CR or LF. */
static void put_csv(FILE *f, const char *s)
{
	if (!s)
		return;
	bool quote = strpbrk(s, ",\"\r\n") != NULL;

	if (quote)
		fputc('"', f);
	nf_esc_text(s, strlen(s), NF_ESC_KEEP_NL, csv_write, f);
	if (quote)
		fputc('"', f);
}

/* A JSON string (nf_esc_json: UTF-8 kept, controls escaped), or null. */
static void put_json_str(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	nf_esc_json_file(f, s, 0);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted v[0..n). */
static int64_t pct(const int64_t *v, size_t n, double p)
{
	size_t k = (size_t)ceil(p / 100.0 * (double)n);

	return v[k ? k - 1 : 0];
}

enum col {
	C_FRAME, C_SWAP, C_PRESENT, C_FRAME_NS, C_BUSY, C_WAIT, C_UNTIL, C_STATUS, C_LATE, C_MISSED,
	C_LATE_NS, C_BLAME, C_PROCESS, C_THREAD, C_SCREEN, C_READY, C_BETWEEN, C_CHANGE, C_INAPI,
	C_RENDER, C_VBLANK, C_REASONS, C_DISPLAY, C_SEQ, C_WAITS, C_COUNT
};

static const char frames_sql[] =
	"SELECT frame, swapchain, present_ns, interval_ns, MsGPUBusy, MsGPUWait, MsUntilDisplayed, status, late, "
	"missed_vblanks, late_ns, blame, process, thread, screen_ns, ready_ns, MsBetweenPresents, "
	"MsBetweenDisplayChange, MsInPresentAPI, MsUntilRenderComplete, vblank_seq, null_reasons, display, seq, g.w "
	"FROM frames LEFT JOIN (SELECT frame AS gf, sum(wait_ns) AS w FROM frame_gpu GROUP BY frame) g ON g.gf = frame "
	"WHERE (?1 IS NULL OR process IN (SELECT value FROM json_each(?1))) ORDER BY frame";

/* The processes --process names: an id, or every process the capture names so. */
static int resolve_process(sqlite3 *db, const char *text, char **json, struct nf_error *err)
{
	static const char sql[] =
		"SELECT json_group_array(p) FROM (SELECT ?1 + 0 AS p WHERE ?1 GLOB '[0-9]*' AND ?1 NOT GLOB '*[^0-9]*' "
		"UNION SELECT process FROM kernel_threads WHERE comm = ?1 AND process IS NOT NULL "
		"UNION SELECT thread FROM kernel_threads WHERE comm = ?1 AND process IS NULL)";
	static const char sql_etw[] = "SELECT json_group_array(process) FROM etw_processes WHERE name = ?1";
	sqlite3_stmt *s = NULL;
	int rc = 0;

	*json = NULL;
	for (int pass = 0; pass < 2 && !*json; pass++) {
		if (sqlite3_prepare_v2(db, pass ? sql_etw : sql, -1, &s, NULL) != SQLITE_OK) {
			if (pass) /* no etw_processes: not an ETW timeline */
				break;
			return nf_error_set(err, NF_ESQL, "--process: %s", sqlite3_errmsg(db));
		}
		sqlite3_bind_text(s, 1, text, -1, SQLITE_STATIC);
		if (sqlite3_step(s) == SQLITE_ROW) {
			const char *j = (const char *)sqlite3_column_text(s, 0);

			if (j && strcmp(j, "[]") && !(*json = strdup(j)))
				rc = nf_error_set(err, NF_ENOMEM, "out of memory");
		}
		sqlite3_finalize(s);
		s = NULL;
	}
	if (!rc && *json) { /* a filter that selects no frame is an error, as report's are */
		if (sqlite3_prepare_v2(db, "SELECT EXISTS (SELECT 1 FROM frames WHERE process IN "
				       "(SELECT value FROM json_each(?1)))", -1, &s, NULL) != SQLITE_OK)
			return nf_error_set(err, NF_ESQL, "--process: %s", sqlite3_errmsg(db));
		sqlite3_bind_text(s, 1, *json, -1, SQLITE_STATIC);
		if (sqlite3_step(s) != SQLITE_ROW || !sqlite3_column_int(s, 0)) {
			free(*json);
			*json = NULL;
		}
		sqlite3_finalize(s);
	}
	if (!rc && !*json)
		rc = nf_error_set(err, NF_ENOENT, "--process '%s': no such process presents in the timeline", text);
	return rc;
}

static void put_ms_ns(FILE *f, sqlite3_stmt *s, int col, int width)
{
	if (sqlite3_column_type(s, col) == SQLITE_NULL)
		fprintf(f, "%*s", width, "-");
	else
		fprintf(f, "%*.3f", width, (double)sqlite3_column_int64(s, col) / 1e6);
}

static void put_ms(FILE *f, sqlite3_stmt *s, int col, int width)
{
	if (sqlite3_column_type(s, col) == SQLITE_NULL)
		fprintf(f, "%*s", width, "-");
	else
		fprintf(f, "%*.3f", width, sqlite3_column_double(s, col));
}

/* late: 1, 0, or -1 unknown; with a budget, by frame time. */
static int late_of(const struct opts *o, sqlite3_stmt *s)
{
	if (o->budget >= 0)
		return sqlite3_column_type(s, C_FRAME_NS) == SQLITE_NULL ? -1
			: sqlite3_column_int64(s, C_FRAME_NS) > o->budget;
	return sqlite3_column_type(s, C_LATE) == SQLITE_NULL ? -1 : sqlite3_column_int(s, C_LATE) != 0;
}

static void json_num(FILE *f, const char *key, sqlite3_stmt *s, int col, bool real)
{
	fprintf(f, ", \"%s\": ", key);
	if (sqlite3_column_type(s, col) == SQLITE_NULL)
		fputs("null", f);
	else if (real)
		fprintf(f, "%.6f", sqlite3_column_double(s, col));
	else
		fprintf(f, "%" PRId64, (int64_t)sqlite3_column_int64(s, col));
}

static int run(const struct opts *o, sqlite3 *db, struct nf_error *err)
{
	sqlite3_stmt *s = NULL;
	char *procs = NULL;
	int64_t *ft = NULL;
	size_t n_ft = 0, cap = 0, n = 0, late = 0, dropped = 0, pending = 0, displayed = 0, late_unknown = 0;
	int rc = 0, src;

	if (o->process && (rc = resolve_process(db, o->process, &procs, err)) != 0)
		return rc;
	if (sqlite3_prepare_v2(db, frames_sql, -1, &s, NULL) != SQLITE_OK) {
		free(procs);
		return nf_error_set(err, NF_ESQL, "reading frames: %s", sqlite3_errmsg(db));
	}
	if (procs)
		sqlite3_bind_text(s, 1, procs, -1, SQLITE_STATIC);
	if (o->out == OUT_TABLE)
		printf("%6s %-24s %12s %10s %9s %9s %9s %10s %-9s %-5s  %s\n", "frame", "swapchain", "time_ms", "frame_ms",
		       "gpu_busy", "gpu_idle", "waits", "until_disp", "status", "late", "blame");
	else if (o->out == OUT_CSV)
		printf("frame,swapchain,display,seq,process,thread,present_ns,ready_ns,screen_ns,vblank_seq,interval_ns,"
		       "MsBetweenPresents,MsInPresentAPI,MsUntilRenderComplete,MsUntilDisplayed,MsBetweenDisplayChange,"
		       "MsGPUBusy,MsGPUWait,wait_ns,status,late,missed_vblanks,late_ns,blame\n");
	else
		printf("{\"frames\": [");
	while ((src = sqlite3_step(s)) == SQLITE_ROW) {
		const char *sc = (const char *)sqlite3_column_text(s, C_SWAP);
		const char *st = (const char *)sqlite3_column_text(s, C_STATUS);
		const char *bl = (const char *)sqlite3_column_text(s, C_BLAME);
		int lt = late_of(o, s);

		n++;
		late += lt == 1;
		late_unknown += lt < 0;
		dropped += st && !strcmp(st, "dropped");
		pending += st && !strcmp(st, "pending");
		displayed += st && !strcmp(st, "displayed");
		if (sqlite3_column_type(s, C_FRAME_NS) != SQLITE_NULL) {
			int64_t *nf = n_ft == cap ? realloc(ft, (cap = cap ? cap * 2 : 256) * sizeof(*ft)) : ft;

			if (!nf) {
				rc = nf_error_set(err, NF_ENOMEM, "out of memory");
				break;
			}
			ft = nf;
			ft[n_ft++] = sqlite3_column_int64(s, C_FRAME_NS);
		}
		if (o->out == OUT_TABLE) {
			char scb[25];

			snprintf(scb, sizeof(scb), "%s", sc ? sc : "");
			printf("%6" PRId64 " ", (int64_t)sqlite3_column_int64(s, C_FRAME));
			put_clean(stdout, scb);
			printf("%*s", 24 - (int)strlen(scb), "");
			put_ms_ns(stdout, s, C_PRESENT, 13);
			put_ms_ns(stdout, s, C_FRAME_NS, 11);
			put_ms(stdout, s, C_BUSY, 10);
			put_ms(stdout, s, C_WAIT, 10);
			put_ms_ns(stdout, s, C_WAITS, 10);
			put_ms(stdout, s, C_UNTIL, 11);
			printf(" %-9s %-5s  ", st ? st : "", lt < 0 ? "-" : lt ? "LATE" : "");
			put_clean(stdout, bl ? bl : "-");
			putchar('\n');
		} else if (o->out == OUT_CSV) {
			static const int cols[] = { C_FRAME, -1, C_DISPLAY, C_SEQ, C_PROCESS, C_THREAD, C_PRESENT, C_READY,
						    C_SCREEN, C_VBLANK, C_FRAME_NS, C_BETWEEN, C_INAPI, C_RENDER, C_UNTIL,
						    C_CHANGE, C_BUSY, C_WAIT, C_WAITS, -2, -3, C_MISSED, C_LATE_NS, -4 };

			for (size_t k = 0; k < sizeof(cols) / sizeof(cols[0]); k++) {
				int col = cols[k];

				if (k)
					putchar(',');
				if (col == -1)
					put_csv(stdout, sc);
				else if (col == -2)
					put_csv(stdout, st);
				else if (col == -3)
					printf("%s", lt < 0 ? "" : lt ? "1" : "0");
				else if (col == -4)
					put_csv(stdout, bl);
				else if (sqlite3_column_type(s, col) == SQLITE_FLOAT)
					printf("%.6f", sqlite3_column_double(s, col));
				else if (sqlite3_column_type(s, col) != SQLITE_NULL)
					printf("%" PRId64, (int64_t)sqlite3_column_int64(s, col));
			}
			putchar('\n');
		} else {
			printf("%s\n  {\"frame\": %" PRId64 ", \"swapchain\": ", n > 1 ? "," : "",
			       (int64_t)sqlite3_column_int64(s, C_FRAME));
			put_json_str(stdout, sc);
			json_num(stdout, "display", s, C_DISPLAY, false);
			json_num(stdout, "seq", s, C_SEQ, false);
			json_num(stdout, "process", s, C_PROCESS, false);
			json_num(stdout, "thread", s, C_THREAD, false);
			json_num(stdout, "present_ns", s, C_PRESENT, false);
			json_num(stdout, "ready_ns", s, C_READY, false);
			json_num(stdout, "screen_ns", s, C_SCREEN, false);
			json_num(stdout, "vblank_seq", s, C_VBLANK, false);
			json_num(stdout, "interval_ns", s, C_FRAME_NS, false);
			json_num(stdout, "MsBetweenPresents", s, C_BETWEEN, true);
			json_num(stdout, "MsInPresentAPI", s, C_INAPI, true);
			json_num(stdout, "MsUntilRenderComplete", s, C_RENDER, true);
			json_num(stdout, "MsUntilDisplayed", s, C_UNTIL, true);
			json_num(stdout, "MsBetweenDisplayChange", s, C_CHANGE, true);
			json_num(stdout, "MsGPUBusy", s, C_BUSY, true);
			json_num(stdout, "MsGPUWait", s, C_WAIT, true);
			json_num(stdout, "wait_ns", s, C_WAITS, false);
			printf(", \"status\": ");
			put_json_str(stdout, st);
			printf(", \"late\": %s", lt < 0 ? "null" : lt ? "true" : "false");
			json_num(stdout, "missed_vblanks", s, C_MISSED, false);
			json_num(stdout, "late_ns", s, C_LATE_NS, false);
			printf(", \"blame\": ");
			put_json_str(stdout, bl);
			printf(", \"null_reasons\": ");
			put_json_str(stdout, (const char *)sqlite3_column_text(s, C_REASONS));
			putchar('}');
		}
	}
	if (!rc && src != SQLITE_DONE)
		rc = nf_error_set(err, NF_ESQL, "reading frames: %s", sqlite3_errmsg(db));
	sqlite3_finalize(s);
	free(procs);
	if (!rc) {
		qsort(ft, n_ft, sizeof(*ft), cmp_i64);
		char budget[64];

		if (o->budget >= 0)
			snprintf(budget, sizeof(budget), "frame time above %.3f ms", (double)o->budget / 1e6);
		else
			snprintf(budget, sizeof(budget), "shown a blank or more after the one it was due at");
		if (o->out == OUT_TABLE) {
			printf("frames: %zu (displayed %zu, dropped %zu, pending %zu)\n", n, displayed, dropped, pending);
			if (!n && !o->process)
				printf("(the session has no presents; --frame-marker REGEX makes frames of the user markers "
				       "whose text matches)\n");
			if (n_ft)
				printf("frame time: p50 %.3f ms, p99 %.3f ms (%zu frames with one)\n", (double)pct(ft, n_ft, 50) / 1e6,
				       (double)pct(ft, n_ft, 99) / 1e6, n_ft);
			else
				printf("frame time: none (no frame has a previous one on its swap chain)\n");
			if (late_unknown)
				printf("late: %zu (%s; %zu frame%s not judged: %s), dropped: %zu\n", late, budget,
				       late_unknown, late_unknown == 1 ? "" : "s",
				       o->budget >= 0 ? "no frame time" : "no frame time or no refresh period: see null_reasons",
				       dropped);
			else
				printf("late: %zu (%s), dropped: %zu\n", late, budget, dropped);
		} else if (o->out == OUT_JSON) {
			printf("%s], \"summary\": {\"frames\": %zu, \"displayed\": %zu, \"dropped\": %zu, \"pending\": %zu, "
			       "\"late\": %zu, \"late_unknown\": %zu, \"late_budget_ns\": ",
			       n ? "\n" : "", n, displayed, dropped, pending, late, late_unknown);
			if (o->budget >= 0)
				printf("%" PRId64, o->budget);
			else
				printf("null");
			if (n_ft)
				printf(", \"p50_frame_ns\": %" PRId64 ", \"p99_frame_ns\": %" PRId64 "}}\n", pct(ft, n_ft, 50),
				       pct(ft, n_ft, 99));
			else
				printf(", \"p50_frame_ns\": null, \"p99_frame_ns\": null}}\n");
		}
	}
	free(ft);
	return rc;
}

enum { O_PROCESS, O_LATE, O_MARKER, O_CSV, O_JSON };

static const struct nf_cli_option options[] = {
	[O_PROCESS] = { .name = "process", .arg = "NAME|PID",
			.help = "only the frames of this process (an id, or a name the capture gives)" },
	[O_LATE] = { .name = "late", .arg = "BUDGET",
		     .help = "late means a frame time above BUDGET (16.7ms) instead of a missed blank" },
	[O_MARKER] = { .name = "frame-marker", .arg = "REGEX",
		       .help = "also frames delimited by the user markers whose text matches this POSIX extended\n"
			       "regular expression (trace_marker / ftrace print, as SteamVR's\n"
			       "'\\[Compositor\\] Present\\(\\) Begin'); kept for later commands ('' forgets it)" },
	[O_CSV] = { .name = "csv", .help = "the rows as CSV with a header line (times in ns, metrics in ms)" },
	[O_JSON] = { .name = "json", .help = "one JSON object: the frames and the summary" },
	{ 0 },
};

/* The options into st (usage errors exit 2 before any timeline is built). */
static int frames_prepare(struct nf_cli *c)
{
	struct opts *o = c->state;
	struct nf_error err;
	const char *v;

	nf_error_clear(&err);
	o->budget = -1;
	o->out = OUT_TABLE;
	if (nf_cli_has(c, O_CSV) && nf_cli_has(c, O_JSON))
		return nf_cli_usage_error("frames", "give one of --csv, --json");
	if (nf_cli_has(c, O_CSV))
		o->out = OUT_CSV;
	else if (nf_cli_has(c, O_JSON))
		o->out = OUT_JSON;
	if ((v = nf_cli_get(c, O_LATE)) && nf_parse_duration(v, &o->budget, &err))
		return nf_cli_usage_error("frames", "--late: %s", err.msg);
	o->process = nf_cli_get(c, O_PROCESS);
	o->marker = nf_cli_get(c, O_MARKER);
	o->dir = c->args[0];
	return 0;
}

static int frames_run(struct nf_cli *c)
{
	struct opts *o = c->state;
	struct nf_frames_options fo = { .frame_marker = o->marker };
	struct nf_error err;
	sqlite3 *db = NULL;
	char path[NF_CLI_PATH_MAX];
	int rc;

	nf_error_clear(&err);
	rc = nf_frames_ensure(o->dir, &fo, path, sizeof(path), &err);
	if (!rc)
		rc = nf_timeline_open_read(path, &db, &err);
	if (!rc)
		rc = run(o, db, &err);
	sqlite3_close(db);
	if (rc)
		return nf_cli_fail("frames", &err);
	return NF_EXIT_OK;
}

const struct nf_cli_cmd cmd_frames = {
	.options = options,
	.args = "session DIR",
	.min_args = 1,
	.max_args = 1,
	.args_complete = NF_COMPLETE_SESSION,
	.synopsis = "nftrace frames DIR [--process NAME|PID] [--late BUDGET] [--frame-marker REGEX] [--csv | --json]\n",
	.description =
		"The frames of a session, one row per present (per swap chain, in present order):\n"
		"when it was presented, its frame time (between display changes when shown, else\n"
		"between presents), its GPU busy time (PresentMon's MsGPUBusy) and idle time (MsGPUWait),\n"
		"the time its queues stalled in waits (waits), the time until it was displayed, whether\n"
		"it was late (shown one or more blanks after the one it was due at) or dropped, and what\n"
		"decided it: the longest wait on its critical path, with its queue, fence, value and who\n"
		"signaled it (frame_path holds the whole path). Then: frames, p50/p99 frame time, late and\n"
		"dropped counts. The frames are computed once and kept in the timeline (tables frames,\n"
		"frame_gpu, frame_path; PresentMon's metric names; nftrace-timeline(5)).\n",
	.state_size = sizeof(struct opts),
	.prepare = frames_prepare,
	.run = frames_run,
};
