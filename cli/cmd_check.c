/*
 * nftrace check: reads a whole session through the parser and says whether
 * its logs are whole. For every hardware queue and each of its logs it counts
 * the entries read, the entries lost to overruns, the zero / repeated /
 * backwards end timestamps and every other finding, with where the first of
 * each kind was found; illegal findings (see nf_finding_is_illegal) are also
 * listed one by one, up to a limit. Memory is bounded by the number of queues:
 * nothing is kept per event.
 */
#include "cli.h"
#include "contract/escape.h"

#include "contract/analysis.h"
#include "contract/session.h"
#include "contract/timeline.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract/text.h"

/* ---- output ---------------------------------------------------------------- */

/* Hang findings listed one by one (pending waits past this are only counted). */
#define CHECK_MAX_PENDING 50u

/* GPU jobs held back by a dependency (nf_analysis_job_blocks): one session's. */
static struct nf_job_blocks check_jobs;

static const char *check_verdict(const struct nf_source_check *c, const struct nf_hang_report *h)
{
	if (c->illegal || h->count[NF_HANG_LOWERED])
		return "illegal";
	if (c->incomplete[0])
		return "incomplete";
	if (h->count[NF_HANG_DEADLOCK])
		return "deadlock";
	if (h->count[NF_HANG_NEVER_SIGNALED] || h->count[NF_HANG_BLOCKED])
		return "hang";
	if (c->legal || check_jobs.n_waiting)
		return "legal_anomalies";
	return "whole";
}


/* "job 5 (drm_sched sdma0, fence 501:2)" */
static void check_job_label(const struct nf_job_waiting *w, char *buf, size_t len)
{
	char fence[48] = "";

	if (w->context >= 0)
		snprintf(fence, sizeof(fence), ", fence %" PRId64 ":%" PRId64, w->context, w->seqno);
	snprintf(buf, len, "job %" PRId64 " (%s %s%s)", w->job, w->driver, w->ring[0] ? w->ring : "ring ?", fence);
}

static void jobs_print_text(void)
{
	const struct nf_job_blocks *b = &check_jobs;
	char j[160], d[64];

	if (!b->events)
		return;
	printf("GPU jobs held back by a dependency (drm_sched_job_unschedulable): %zu time%s, %zu job%s; %zu still "
	       "not started when the trace ended\n", b->events, b->events == 1 ? "" : "s", b->jobs,
	       b->jobs == 1 ? "" : "s", b->n_waiting);
	for (size_t i = 0; i < b->n_waiting; i++) {
		const struct nf_job_waiting *w = &b->waiting[i];

		check_job_label(w, j, sizeof(j));
		if (w->dep_job >= 0)
			snprintf(d, sizeof(d), "of job %" PRId64, w->dep_job);
		else
			snprintf(d, sizeof(d), "of no job in the trace");
		printf("  waiting: %s since %" PRId64 " ns for fence %" PRId64 ":%" PRId64 " %s, %s\n", j,
		       w->since_ns, w->dep_context, w->dep_seqno, d,
		       w->dep_signaled ? "signaled later, and the job was not run after it"
				       : "not signaled in the trace");
	}
}

static void jobs_print_json(void)
{
	const struct nf_job_blocks *b = &check_jobs;

	printf(",\n  \"jobs_unschedulable\": {\"events\": %zu, \"jobs\": %zu, \"waiting\": %zu},\n"
	       "  \"jobs_waiting\": [", b->events, b->jobs, b->n_waiting);
	for (size_t i = 0; i < b->n_waiting; i++) {
		const struct nf_job_waiting *w = &b->waiting[i];

		printf("%s\n    {\"job\": %" PRId64 ", \"since_ns\": %" PRId64 ", \"dep_context\": %" PRId64
		       ", \"dep_seqno\": %" PRId64, i ? "," : "", w->job, w->since_ns, w->dep_context, w->dep_seqno);
		if (w->dep_job >= 0)
			printf(", \"dep_job\": %" PRId64, w->dep_job);
		else
			printf(", \"dep_job\": null");
		printf(", \"dep_signaled\": %s}", w->dep_signaled ? "true" : "false");
	}
	printf("%s]", b->n_waiting ? "\n  " : "");
}


/* ---- hangs and deadlocks (nf_analysis_hangs) ------------------------------------ */

static void hang_queue(const struct nf_analysis *a, int64_t queue, char *buf, size_t len)
{
	const char *name = nf_analysis_queue_name(a, queue);
	char safe[48];

	nf_text_copy_clean(safe, sizeof(safe), name);
	snprintf(buf, len, "queue 0x%" PRIx64 "%s%s%s", (uint64_t)queue, name ? " (" : "",
		 name ? safe : "", name ? ")" : "");
}

/* "queue 0x40000040 (QA) op 1 waits fence 0x40000180 >= 1 (queued at 10000 ns)" */
static void hang_wait(const struct nf_analysis *a, const struct nf_wait_ref *w, char *buf, size_t len)
{
	char who[96];

	if (w->queue >= 0)
		hang_queue(a, w->queue, who, sizeof(who));
	else
		snprintf(who, sizeof(who), "thread %" PRId64, w->thread);
	if (w->op_id >= 0)
		snprintf(buf, len, "%s op %" PRId64 " waits fence 0x%" PRIx64 " >= %" PRId64 " (%s at %" PRId64 " ns)",
			 who, w->op_id, (uint64_t)w->fence, w->value, w->queue >= 0 ? "queued" : "since",
			 w->since_ns);
	else
		snprintf(buf, len, "%s CPU wait %" PRId64 " waits fence 0x%" PRIx64 " >= %" PRId64
			 " (since %" PRId64 " ns)", who, w->cpu_wait, (uint64_t)w->fence, w->value, w->since_ns);
}

static void hang_edge_text(const struct nf_analysis *a, const struct nf_hang_edge *e)
{
	char from[256], to[256], sq[96];

	hang_wait(a, &e->from, from, sizeof(from));
	hang_wait(a, &e->to, to, sizeof(to));
	hang_queue(a, e->signal_queue, sq, sizeof(sq));
	printf("    %s;\n      its signal op %" PRId64 " (to %" PRId64 ") on %s is queued behind: %s\n", from,
	       e->signal_op, e->signal_value, sq, to);
}

static void hang_print_text(const struct nf_analysis *a, const struct nf_hang_report *h)
{
	size_t pending = 0;
	char w[256];

	if (!h->n)
		return;
	printf("hangs and deadlocks: %zu deadlock%s, %zu never signaled, %zu blocked, %zu lowered signal%s, "
	       "%zu pending at the end\n",
	       h->count[NF_HANG_DEADLOCK], h->count[NF_HANG_DEADLOCK] == 1 ? "" : "s",
	       h->count[NF_HANG_NEVER_SIGNALED], h->count[NF_HANG_BLOCKED], h->count[NF_HANG_LOWERED],
	       h->count[NF_HANG_LOWERED] == 1 ? "" : "s", h->count[NF_HANG_PENDING]);
	for (size_t i = 0; i < h->n; i++) {
		const struct nf_hang_finding *f = &h->f[i];

		switch (f->kind) {
		case NF_HANG_DEADLOCK:
			printf("  deadlock: %zu wait%s for each other, none can ever be satisfied:\n", f->n_edges,
			       f->n_edges == 1 ? " waits" : "s wait");
			for (size_t k = 0; k < f->n_edges; k++)
				hang_edge_text(a, &f->edges[k]);
			break;
		case NF_HANG_NEVER_SIGNALED:
			hang_wait(a, &f->wait, w, sizeof(w));
			printf("  never signaled: %s: no signal in the session reaches %" PRId64, w, f->wait.value);
			if (f->value >= 0 && f->op_id >= 0)
				printf(" (highest: %" PRId64 " by op %" PRId64 ")", f->value, f->op_id);
			else if (f->value >= 0)
				printf(" (highest: %" PRId64 ")", f->value);
			else
				printf(" (none signals the fence)");
			putchar('\n');
			break;
		case NF_HANG_BLOCKED:
		case NF_HANG_PENDING:
			if (f->kind == NF_HANG_PENDING && pending++ >= CHECK_MAX_PENDING) {
				continue;
			}
			hang_wait(a, &f->wait, w, sizeof(w));
			if (f->kind == NF_HANG_BLOCKED)
				printf("  blocked: %s can never be satisfied, through:\n", w);
			else
				printf("  pending: %s was still waiting when the session ended, and a signal queued in the session can still satisfy it%s\n",
				       w, f->n_edges ? ", through:" : "");
			for (size_t k = 0; k < f->n_edges; k++)
				hang_edge_text(a, &f->edges[k]);
			break;
		case NF_HANG_LOWERED:
			printf("  lowered: fence 0x%" PRIx64 " signaled to %" PRId64 " at %" PRId64 " ns by %s %" PRId64
			       ", below %" PRId64, (uint64_t)f->fence, f->value, f->ns,
			       f->op_id >= 0 ? "op" : "CPU signal", f->op_id >= 0 ? f->op_id : f->cpu_signal,
			       f->prev_value);
			if (f->prev_op >= 0 || f->prev_cpu_signal >= 0)
				printf(" set by %s %" PRId64 " at %" PRId64 " ns", f->prev_op >= 0 ? "op" : "CPU signal",
				       f->prev_op >= 0 ? f->prev_op : f->prev_cpu_signal, f->prev_ns);
			else
				printf(" (its initial value)");
			printf(" (a monitored fence never goes back)\n");
			break;
		default:
			break;
		}
	}
	if (pending > CHECK_MAX_PENDING)
		printf("  ... and %zu more pending\n", pending - CHECK_MAX_PENDING);
}

static void json_str(const char *str);

static void json_opt(const char *key, int64_t v)
{
	if (v < 0)
		printf(", \"%s\": null", key);
	else
		printf(", \"%s\": %" PRId64, key, v);
}

static void json_wait(const char *key, const struct nf_wait_ref *w)
{
	printf("\"%s\": {\"op\": ", key);
	if (w->op_id >= 0)
		printf("%" PRId64, w->op_id);
	else
		printf("null");
	json_opt("cpu_wait", w->cpu_wait);
	json_opt("queue", w->queue);
	json_opt("thread", w->thread);
	printf(", \"fence\": %" PRId64 ", \"value\": %" PRId64, w->fence, w->value);
	json_opt("since_ns", w->since_ns);
	putchar('}');
}

static void hang_print_json(const struct nf_hang_report *h)
{
	size_t pending = 0, listed = 0;

	printf(",\n  \"hangs\": {");
	for (int k = 0; k < NF_HANG_KINDS; k++)
		printf("%s\"%s\": %zu", k ? ", " : "", nf_hang_kind_name((enum nf_hang_kind)k), h->count[k]);
	printf("},\n  \"hang_findings\": [");
	for (size_t i = 0; i < h->n; i++) {
		const struct nf_hang_finding *f = &h->f[i];

		if (f->kind == NF_HANG_PENDING && pending++ >= CHECK_MAX_PENDING)
			continue;
		printf("%s\n    {\"kind\": \"%s\", ", listed++ ? "," : "", nf_hang_kind_name(f->kind));
		if (f->kind == NF_HANG_LOWERED) {
			printf("\"fence\": %" PRId64 ", \"value\": %" PRId64 ", \"ns\": %" PRId64, f->fence, f->value,
			       f->ns);
			json_opt("op", f->op_id);
			json_opt("cpu_signal", f->cpu_signal);
			printf(", \"prev_value\": %" PRId64, f->prev_value);
			json_opt("prev_ns", f->prev_ns);
			json_opt("prev_op", f->prev_op);
			json_opt("prev_cpu_signal", f->prev_cpu_signal);
			putchar('}');
			continue;
		}
		json_wait("wait", &f->wait);
		if (f->kind == NF_HANG_NEVER_SIGNALED) {
			json_opt("highest_value", f->value);
			json_opt("highest_op", f->op_id);
		}
		printf(", \"edges\": [");
		for (size_t k = 0; k < f->n_edges; k++) {
			const struct nf_hang_edge *e = &f->edges[k];

			printf("%s{", k ? ", " : "");
			json_wait("from", &e->from);
			printf(", \"signal_op\": %" PRId64 ", \"signal_queue\": %" PRId64 ", \"signal_value\": %" PRId64
			       ", ", e->signal_op, e->signal_queue, e->signal_value);
			json_wait("to", &e->to);
			putchar('}');
		}
		printf("]}");
	}
	printf("%s]", listed ? "\n  " : "");
}

/* A JSON string (nf_esc_json: UTF-8 kept, controls escaped). */
static void json_str(const char *str)
{
	nf_esc_json_file(stdout, str, 0);
}

/* What every timeline says of the check: its coverage, its out_of_range anomalies. */
static int read_timeline_facts(const char *db_path, struct nf_coverage *cov, int64_t *out_of_range,
			       struct nf_error *err)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int rc = nf_timeline_open_read(db_path, &db, err);

	if (rc)
		return rc;
	rc = nf_timeline_coverage(db, cov, err);
	if (rc == 0) {
		if (sqlite3_prepare_v2(db, "SELECT count(*) FROM anomalies WHERE kind = 'out_of_range'", -1, &st, NULL) !=
			    SQLITE_OK || sqlite3_step(st) != SQLITE_ROW)
			rc = nf_sql_error(db, err, "%s", db_path);
		else
			*out_of_range = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return rc;
}

/* The report: the source's part, the hang findings, the verdict. */
static void check_print_text(const struct nf_source_check *c, const struct nf_coverage *cov,
			     const struct nf_analysis *a, const struct nf_hang_report *h)
{
	const char *verdict = check_verdict(c, h);

	fputs(c->text ? c->text : "", stdout);
	nf_cli_coverage_text(stdout, cov);
	hang_print_text(a, h);
	jobs_print_text();
	if (!strcmp(verdict, "illegal"))
		printf("verdict: illegal (%s, %zu lowered signal%s)\n", c->illegal_what, h->count[NF_HANG_LOWERED],
		       h->count[NF_HANG_LOWERED] == 1 ? "" : "s");
	else if (!strcmp(verdict, "incomplete"))
		printf("verdict: incomplete (%s)\n", nf_esc_text_buf((char[512]){ 0 }, 512, c->incomplete, 0));
	else if (!strcmp(verdict, "deadlock"))
		printf("verdict: deadlock (%zu cycle%s of waits waiting for each other, %zu more waits "
		       "never satisfied)\n", h->count[NF_HANG_DEADLOCK], h->count[NF_HANG_DEADLOCK] == 1 ? "" : "s",
		       h->count[NF_HANG_NEVER_SIGNALED] + h->count[NF_HANG_BLOCKED]);
	else if (!strcmp(verdict, "hang"))
		printf("verdict: hang (%zu waits can never be satisfied)\n",
		       h->count[NF_HANG_NEVER_SIGNALED] + h->count[NF_HANG_BLOCKED]);
	else if (!strcmp(verdict, "legal_anomalies") && c->legal)
		if (check_jobs.n_waiting)
			printf("verdict: legal anomalies only (%s; %zu GPU job%s still held back by a dependency when the "
			       "trace ended)\n", c->legal_what, check_jobs.n_waiting, check_jobs.n_waiting == 1 ? "" : "s");
		else
			printf("verdict: legal anomalies only (%s)\n", c->legal_what);
	else if (!strcmp(verdict, "legal_anomalies"))
		printf("verdict: legal anomalies only (%zu GPU job%s still held back by a dependency when the trace "
		       "ended)\n", check_jobs.n_waiting, check_jobs.n_waiting == 1 ? "" : "s");
	else
		printf("verdict: whole (%s)\n", c->whole_what);
}

static void check_print_json(const char *dir, const struct nf_source_check *c, const struct nf_coverage *cov,
			     int64_t out_of_range, const struct nf_hang_report *h)
{
	printf("{\n  \"session\": ");
	json_str(dir);
	printf(",\n  \"source\": ");
	json_str(c->source);
	printf(",\n  \"verdict\": \"%s\"", check_verdict(c, h));
	fputs(c->json ? c->json : "", stdout);
	printf(",\n  \"out_of_range\": %" PRId64, out_of_range);
	nf_cli_coverage_json(stdout, cov);
	hang_print_json(h);
	jobs_print_json();
	printf("\n}\n");
}

enum { O_JSON };

static const struct nf_cli_option options[] = {
	[O_JSON] = { .name = "json",
		     .help = "the same as one JSON object (verdict: whole, legal_anomalies, hang, deadlock,\n"
			     "incomplete or illegal; hangs: counts per kind; hang_findings: each with its\n"
			     "wait and edges)" },
	{ 0 },
};

struct check_state {
	struct nf_source_check c;
	bool read;
};

/* The logs first (a session that cannot be read is said so by its reader), then the timeline. */
static int check_prepare(struct nf_cli *cli)
{
	struct check_state *st = cli->state;
	struct nf_error err;

	nf_error_clear(&err);
	st->read = true;
	if (nf_session_check(cli->args[0], &st->c, &err))
		return nf_cli_fail("check", &err);
	return 0;
}

/* Hangs and deadlocks over the session's timeline (the dispatcher built it,
 * in a temporary file when the session directory cannot be written). */
static int check_run(struct nf_cli *cli)
{
	struct check_state *st = cli->state;
	struct nf_source_check *c = &st->c;
	const char *dir = cli->args[0], *db = cli->db[0];
	struct nf_coverage cov = { 0 };
	int64_t out_of_range = 0;
	struct nf_analysis *a = NULL;
	struct nf_hang_report hangs = { 0 };
	struct nf_error err;
	int rc;

	nf_error_clear(&err);
	rc = nf_analysis_load_open(db, &a, &err);
	if (!rc)
		rc = nf_analysis_hangs(a, &hangs, &err);
	if (!rc)
		rc = read_timeline_facts(db, &cov, &out_of_range, &err);
	if (!rc)
		rc = nf_analysis_job_blocks(db, &check_jobs, &err);
	if (rc) {
		rc = nf_cli_fail("check", &err);
		goto out_free;
	}
	/* Events beyond the range of a clock are left out of the timeline (an
	 * out_of_range anomaly each: a calibration pair, an event past 2^62 ns):
	 * never whole, even when the logs are. */
	if (out_of_range > 0) {
		size_t len = strlen(c->legal_what);

		c->legal += (uint64_t)out_of_range;
		snprintf(c->legal_what + len, sizeof(c->legal_what) - len, "%s%" PRId64 " left out of range of a clock",
			 len ? ", " : "", out_of_range);
	}
	/* CPUs recorded only from some moment on: what ran before it on them is not in the file. */
	if (cov.cpus && (!cov.whole || cov.whole_from_ns > 0)) {
		size_t len = strlen(c->legal_what);

		c->legal++;
		if (cov.whole)
			snprintf(c->legal_what + len, sizeof(c->legal_what) - len, "%severy CPU recorded only from %.6f s",
				 len ? ", " : "", (double)cov.whole_from_ns / 1e9);
		else
			snprintf(c->legal_what + len, sizeof(c->legal_what) - len, "%sa CPU of which nothing is recorded",
				 len ? ", " : "");
	}
	if (nf_cli_has(cli, O_JSON))
		check_print_json(dir, c, &cov, out_of_range, &hangs);
	else
		check_print_text(c, &cov, a, &hangs);
	rc = strcmp(check_verdict(c, &hangs), "whole") && strcmp(check_verdict(c, &hangs), "legal_anomalies")
		     ? NF_EXIT_FAIL : NF_EXIT_OK;
out_free:
	nf_job_blocks_free(&check_jobs);
	nf_hang_report_free(&hangs);
	nf_analysis_destroy(a);
	nf_coverage_free(&cov);
	return rc;
}

static void check_finish(struct nf_cli *cli)
{
	struct check_state *st = cli->state;

	if (st->read)
		nf_source_check_free(&st->c);
}

const struct nf_cli_cmd cmd_check = {
	.options = options,
	.args = "session DIR",
	.min_args = 1,
	.max_args = 1,
	.args_complete = NF_COMPLETE_SESSION,
	.synopsis = "nftrace check DIR [--json]\n",
	.description =
		"Reads the session and replays the OS's log bookkeeping. Prints, per hardware queue and\n"
		"log (waits, signals), the epochs, the entries read, the entries lost to overruns, the\n"
		"zero, repeated and backwards end timestamps and the other findings, with where the\n"
		"first of each kind was found; illegal findings are listed one by one (the first 50).\n"
		"\n"
		"Legal (exit 0): entries lost to an overrun (wraparound), zero end timestamps (an LDA\n"
		"skipped write), repeated end timestamps, a log recreated at a new location (new epoch).\n"
		"Illegal (exit 1): an end timestamp that goes backwards, an unknown fence handle, an\n"
		"operation type that does not match the log, an index or capacity out of range, a\n"
		"header that goes backwards or a read that does not match it; and a session that\n"
		"cannot be read (truncated or corrupt stream, not a CTF trace): one line on stderr.\n"
		"\n"
		"Hangs and deadlocks (over the session's timeline, built when missing): GPU and CPU waits\n"
		"still open at the end, each with its wait-for chain (the signals that could satisfy it\n"
		"are queued behind which wait). Exit 1 with verdict deadlock: waits in a cycle, each\n"
		"edge listed; verdict hang: a wait for a value no signal in the session reaches (never\n"
		"signaled), or one blocked behind such waits. A signal that lowers a monitored fence's\n"
		"value is illegal. A wait a queued signal can still satisfy (the session ended mid-frame)\n"
		"is listed as pending and changes nothing. GPU jobs the scheduler could not run when it\n"
		"picked them (drm_sched_job_unschedulable, Linux 6.16 on) are counted; one still not\n"
		"started when the trace ended is listed with its dependency (a legal anomaly: the trace\n"
		"may have ended first). A session without its end of recording\n"
		"(recorder killed, files cut) or whose streams belong to another recording: verdict\n"
		"incomplete, exit 1. Verdicts, strongest first: illegal, incomplete, deadlock, hang,\n"
		"legal_anomalies, whole.\n",
	.state_size = sizeof(struct check_state),
	.prepare = check_prepare,
	.run = check_run,
	.finish = check_finish,
};
