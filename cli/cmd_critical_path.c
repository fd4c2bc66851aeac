/*
 * nftrace critical-path: why an operation finished when it did. Prints the
 * chain of queues, fences and CPU threads (nf_analysis_critical_path) as
 * segments in time order whose durations add up to the operation's latency.
 */
#include "cli.h"
#include "contract/errors.h"
#include "contract/escape.h"
#include "contract/sattime.h"

#include "contract/analysis.h"
#include "contract/render.h"
#include "contract/session.h"
#include "contract/timeline.h"

#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "queue 0x40000040 (QA)" or "thread 7" into buf. */
static void actor_label(const struct nf_analysis *a, const struct nf_cp_segment *s, char *buf,
			size_t len)
{
	if (s->on_thread) {
		if (s->thread >= 0)
			snprintf(buf, len, "thread %" PRId64, s->thread);
		else
			snprintf(buf, len, "CPU (thread unknown)");
		return;
	}
	const char *name = nf_analysis_queue_name(a, s->queue);
	char clean[256];

	/* names come from the session: what is not printable UTF-8 (C0, DEL, C1
	 * such as U+009B CSI, noncharacters, stray bytes) is '?' on the terminal */
	snprintf(buf, len, "queue 0x%" PRIx64 "%s%s%s", (uint64_t)s->queue, name ? " (" : "",
		 name ? nf_esc_text_buf(clean, sizeof(clean), name, 0) : "", name ? ")" : "");
}

static void op_label(const struct nf_analysis *a, int64_t id, char *buf, size_t len)
{
	struct nf_op_info oi;

	if (nf_analysis_op(a, id, &oi)) {
		snprintf(buf, len, "op %" PRId64, id);
		return;
	}
	snprintf(buf, len, "op %" PRId64 " (%s fence 0x%" PRIx64 " %s %" PRId64 ")", id,
		 oi.is_signal ? "signal" : "wait", (uint64_t)oi.fence, oi.is_signal ? "to" : ">=",
		 oi.value);
}

/*
 * Why the path cannot go back past a wait that nothing in the capture released
 * (deps.reason, read from the timeline: the walk follows only what the file
 * shows, and says where it stops). NULL when a signal released it.
 */
static sqlite3 *reason_db;
static sqlite3_stmt *reason_st;

static const char *release_unknown(const struct nf_cp_segment *s)
{
	static const struct {
		const char *reason, *text;
	} texts[] = {
		{ "not_traced", "no signal of it is in the capture" },
		{ "not_covered", "the capture does not cover the whole wait" },
		{ "lost", "events were lost before it ended" },
		{ "timeout", "it timed out: its fence signaled only after" },
		{ "causality", "the first signal to reach it ended after it" },
		{ "initial_value", "the fence's initial value already reached it" },
		{ "unknown_fence", "its fence is not in the session" },
	};
	const unsigned char *r;

	if (s->kind != NF_SEG_WAIT || s->release_op >= 0 || s->cpu_wait >= 0 || s->op_id < 0 || !reason_st)
		return NULL;
	sqlite3_reset(reason_st);
	sqlite3_bind_int64(reason_st, 1, s->op_id);
	if (sqlite3_step(reason_st) != SQLITE_ROW || !(r = sqlite3_column_text(reason_st, 0)))
		return NULL;
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		if (!strcmp((const char *)r, texts[i].reason))
			return texts[i].text;
	return NULL;
}

static void doing_label(const struct nf_analysis *a, const struct nf_cp_segment *s, char *buf,
			size_t len)
{
	char op[160];
	const char *unknown;

	switch (s->kind) {
	case NF_SEG_WAIT:
		if (s->release_op >= 0)
			snprintf(op, sizeof(op), ", released by op %" PRId64, s->release_op);
		else if ((unknown = release_unknown(s)) != NULL)
			snprintf(op, sizeof(op), ", released by nothing in the capture (%s): the path stops here",
				 unknown);
		else
			snprintf(op, sizeof(op), "%s", "");
		snprintf(buf, len, "waiting on fence 0x%" PRIx64 " >= %" PRId64 " (%s %" PRId64 ")%s",
			 (uint64_t)s->fence, s->value, s->cpu_wait >= 0 ? "cpu wait" : "op",
			 s->cpu_wait >= 0 ? s->cpu_wait : s->op_id, op);
		break;
	case NF_SEG_EXECUTE:
		op_label(a, s->op_id, op, sizeof(op));
		snprintf(buf, len, "executing %s", op);
		break;
	case NF_SEG_QUEUE:
		if (s->op_id >= 0) {
			op_label(a, s->op_id, op, sizeof(op));
			snprintf(buf, len, "running until it queued %s", op);
		} else if (s->cpu_signal >= 0) {
			snprintf(buf, len, "running until its CPU signal %" PRId64, s->cpu_signal);
		} else {
			snprintf(buf, len, "running");
		}
		break;
	}
}

static const char *kind_name(enum nf_seg_kind k)
{
	return k == NF_SEG_WAIT ? "wait" : k == NF_SEG_EXECUTE ? "execute" : "queue";
}

/* A JSON string (nf_esc_json: UTF-8 kept as it is, controls escaped). */
static void json_str(const char *str)
{
	nf_esc_json_file(stdout, str, 0);
}

static void json_opt(const char *key, int64_t v)
{
	if (v < 0)
		printf(", \"%s\": null", key);
	else
		printf(", \"%s\": %" PRId64, key, v);
}

static void print_json(const struct nf_analysis *a, const struct nf_cp_path *p)
{
	printf("{\"op\": %" PRId64 ", \"queued_ns\": %" PRId64 ", \"end_ns\": %" PRId64
	       ", \"latency_ns\": %" PRId64 ", \"segments\": [",
	       p->op_id, p->queued_ns, p->end_ns, nf_time_sub(p->end_ns, p->queued_ns));
	for (size_t i = 0; i < p->n; i++) {
		const struct nf_cp_segment *s = &p->segs[i];
		char doing[512];

		doing_label(a, s, doing, sizeof(doing));
		printf("%s\n  {\"on\": \"%s\"", i ? "," : "", s->on_thread ? "thread" : "queue");
		json_opt("queue", s->on_thread ? -1 : s->queue);
		printf(", \"name\": ");
		if (!s->on_thread && nf_analysis_queue_name(a, s->queue))
			json_str(nf_analysis_queue_name(a, s->queue));
		else
			printf("null");
		json_opt("thread", s->on_thread ? s->thread : -1);
		printf(", \"kind\": \"%s\"", kind_name(s->kind));
		json_opt("op", s->op_id);
		json_opt("cpu_wait", s->cpu_wait);
		json_opt("cpu_signal", s->cpu_signal);
		json_opt("fence", s->fence);
		json_opt("value", s->kind == NF_SEG_WAIT ? s->value : -1);
		json_opt("release_op", s->release_op);
		json_opt("via_fence", s->via_fence);
		printf(", \"start_ns\": %" PRId64 ", \"end_ns\": %" PRId64 ", \"duration_ns\": %" PRId64
		       ", \"doing\": ", s->start_ns, s->end_ns, nf_time_sub(s->end_ns, s->start_ns));
		json_str(doing);
		putchar('}');
	}
	printf("%s]}\n", p->n ? "\n" : "");
}

static void print_text(const struct nf_analysis *a, const struct nf_cp_path *p)
{
	char what[160], on[128], doing[512];
	struct nf_cp_segment self = { 0 };

	op_label(a, p->op_id, what, sizeof(what));
	self.queue = -1;
	{
		struct nf_op_info oi;

		if (!nf_analysis_op(a, p->op_id, &oi)) {
			self.on_thread = !oi.on_queue;
			self.queue = oi.queue;
			self.thread = oi.thread;
		}
	}
	actor_label(a, &self, on, sizeof(on));
	printf("critical path of %s on %s\n", what, on);
	printf("queued at %" PRId64 " ns, ended at %" PRId64 " ns: latency %" PRId64 " ns in %zu segment%s\n",
	       p->queued_ns, p->end_ns, nf_time_sub(p->end_ns, p->queued_ns), p->n, p->n == 1 ? "" : "s");
	printf("%14s %14s %14s  %-28s %s\n", "start_ns", "end_ns", "duration_ns", "on", "doing");
	for (size_t i = 0; i < p->n; i++) {
		const struct nf_cp_segment *s = &p->segs[i];

		actor_label(a, s, on, sizeof(on));
		doing_label(a, s, doing, sizeof(doing));
		printf("%14" PRId64 " %14" PRId64 " %14" PRId64 "  %-28s %s\n", s->start_ns, s->end_ns,
		       nf_time_sub(s->end_ns, s->start_ns), on, doing);
	}
}

/* "job 12 (amdgpu gfx, job id 4455)" into buf; names cleaned of control bytes. */
static void job_label(const struct nf_analysis *a, int64_t id, char *buf, size_t len)
{
	struct nf_job_info ji;
	struct nf_error e;
	char jid[48] = "";

	nf_error_clear(&e);
	if (nf_analysis_job(a, id, &ji, &e)) {
		snprintf(buf, len, "job %" PRId64, id);
		return;
	}
	if (ji.job >= 0)
		snprintf(jid, sizeof(jid), ", job id %" PRId64, ji.job);
	char raw[512];

	/* driver and ring names come from the capture: shown as text (nf_esc_text) */
	snprintf(raw, sizeof(raw), "job %" PRId64 " (%s %s%s)", id, ji.driver, ji.ring[0] ? ji.ring : "ring ?", jid);
	nf_esc_text_buf(buf, len, raw, 0);
}

static void job_on(const struct nf_analysis *a, const struct nf_job_segment *s, char *buf, size_t len)
{
	struct nf_job_info ji;
	struct nf_error e;

	nf_error_clear(&e);
	if (s->kind == NF_JSEG_SUBMIT) {
		if (s->thread >= 0)
			snprintf(buf, len, "thread %" PRId64, s->thread);
		else
			snprintf(buf, len, "CPU (thread unknown)");
		return;
	}
	char raw[512];

	if (nf_analysis_job(a, s->job, &ji, &e) || !ji.ring[0])
		snprintf(raw, sizeof(raw), "ring ?");
	else
		snprintf(raw, sizeof(raw), "ring %s", ji.ring);
	nf_esc_text_buf(buf, len, raw, 0); /* the ring's name comes from the capture */
}

static const char *job_kind_name(enum nf_job_seg_kind k)
{
	return k == NF_JSEG_EXECUTE ? "execute" : k == NF_JSEG_DEP ? "dependency" : k == NF_JSEG_QUEUED ? "queued"
		: k == NF_JSEG_FENCE ? "fence" : "submit";
}

static void job_doing(const struct nf_analysis *a, const struct nf_job_segment *s, char *buf, size_t len)
{
	char j[400], d[400];

	job_label(a, s->job, j, sizeof(j));
	switch (s->kind) {
	case NF_JSEG_EXECUTE:
		snprintf(buf, len, "executing %s", j);
		break;
	case NF_JSEG_DEP:
		if (s->dep_job < 0) {
			snprintf(buf, len, "%s waiting to run until fence %" PRId64 ":%" PRId64 " signaled (op %" PRId64 ")",
				 j, s->dep_context, s->dep_seqno, s->dep_signal);
			break;
		}
		job_label(a, s->dep_job, d, sizeof(d));
		snprintf(buf, len, "%s waiting to run until %s %s", j, d, s->dep_scheduled ? "started" : "finished");
		break;
	case NF_JSEG_FENCE:
		snprintf(buf, len, "%s submitted, waiting for fence %" PRId64 ":%" PRId64 " of no job in the trace",
			 j, s->dep_context, s->dep_seqno);
		break;
	case NF_JSEG_QUEUED:
		snprintf(buf, len, "%s submitted, waiting to run", j);
		break;
	case NF_JSEG_SUBMIT:
		snprintf(buf, len, "running until it submitted %s", j);
		break;
	}
}

static void print_job_text(const struct nf_analysis *a, const struct nf_job_path *p)
{
	char what[400], on[300], doing[1000];
	struct nf_job_info ji;
	struct nf_error e;

	nf_error_clear(&e);
	job_label(a, p->job, what, sizeof(what));
	printf("critical path of %s", what);
	if (!nf_analysis_job(a, p->job, &ji, &e) && ji.thread >= 0)
		printf(" submitted by thread %" PRId64, ji.thread);
	printf("\nsubmitted at %" PRId64 " ns, finished at %" PRId64 " ns: latency %" PRId64 " ns in %zu segment%s\n",
	       p->submitted_ns, p->end_ns, nf_time_sub(p->end_ns, p->submitted_ns), p->n, p->n == 1 ? "" : "s");
	printf("%14s %14s %14s  %-28s %s\n", "start_ns", "end_ns", "duration_ns", "on", "doing");
	for (size_t i = 0; i < p->n; i++) {
		const struct nf_job_segment *s = &p->segs[i];

		job_on(a, s, on, sizeof(on));
		job_doing(a, s, doing, sizeof(doing));
		printf("%14" PRId64 " %14" PRId64 " %14" PRId64 "  %-28s %s\n", s->start_ns, s->end_ns,
		       nf_time_sub(s->end_ns, s->start_ns), on, doing);
	}
}

static void print_job_json(const struct nf_analysis *a, const struct nf_job_path *p)
{
	printf("{\"job\": %" PRId64 ", \"submitted_ns\": %" PRId64 ", \"end_ns\": %" PRId64
	       ", \"latency_ns\": %" PRId64 ", \"segments\": [",
	       p->job, p->submitted_ns, p->end_ns, nf_time_sub(p->end_ns, p->submitted_ns));
	for (size_t i = 0; i < p->n; i++) {
		const struct nf_job_segment *s = &p->segs[i];
		char on[300], doing[1000];

		job_on(a, s, on, sizeof(on));
		job_doing(a, s, doing, sizeof(doing));
		printf("%s\n  {\"on\": ", i ? "," : "");
		json_str(on);
		printf(", \"kind\": \"%s\"", job_kind_name(s->kind));
		json_opt("job", s->job);
		json_opt("thread", s->kind == NF_JSEG_SUBMIT ? s->thread : -1);
		json_opt("dep_job", s->dep_job);
		printf(", \"start_ns\": %" PRId64 ", \"end_ns\": %" PRId64 ", \"duration_ns\": %" PRId64,
		       s->start_ns, s->end_ns, nf_time_sub(s->end_ns, s->start_ns));
		json_opt("dep_context", s->dep_context);
		json_opt("dep_seqno", s->dep_seqno);
		json_opt("dep_signal", s->dep_signal);
		printf(", \"doing\": ");
		json_str(doing);
		putchar('}');
	}
	printf("%s]}\n", p->n ? "\n" : "");
}
enum { O_OP, O_AT, O_QUEUE, O_JOB, O_JSON };

static const struct nf_cli_option options[] = {
	[O_OP] = { .name = "op", .arg = "ID", .help = "operation ID (fence_ops.id)" },
	[O_AT] = { .name = "at", .arg = "TIME", .help = "the last operation to finish by TIME (12.5ms)" },
	[O_QUEUE] = { .name = "queue", .arg = "Q", .help = "the last to finish on hardware queue Q (handle or name)" },
	[O_JOB] = { .name = "job", .arg = "ID", .help = "Linux kernel sessions: GPU job ID (jobs.id)" },
	[O_JSON] = { .name = "json", .help = "the same as one JSON object" },
	{ 0 },
};

struct cp_state {
	enum nf_cp_target kind;
	int64_t arg;
	const char *queue_text;
	bool by_job;
};

/* Which operation (or job): one of --op, --at, --queue, --job. */
static int cp_prepare(struct nf_cli *c)
{
	struct cp_state *st = c->state;
	struct nf_error err;
	const char *v;

	nf_error_clear(&err);
	st->kind = NF_CP_LAST;
	if (nf_cli_count(c, O_OP) + nf_cli_count(c, O_AT) + nf_cli_count(c, O_QUEUE) + nf_cli_count(c, O_JOB) > 1)
		return nf_cli_usage_error("critical-path", "give one of --op, --at, --queue, --job");
	for (int opt = O_OP; opt <= O_JOB; opt += O_JOB - O_OP) {
		char *end;

		if (!(v = nf_cli_get(c, opt)))
			continue;
		errno = 0;
		long long id = strtoll(v, &end, 0);
		if (errno || *end || !*v || id < 0)
			return nf_cli_usage_error("critical-path", "--%s: bad %s id '%s'", opt == O_OP ? "op" : "job",
						  opt == O_OP ? "operation" : "job", v);
		st->kind = NF_CP_OP;
		st->by_job = opt == O_JOB;
		st->arg = id;
	}
	if ((v = nf_cli_get(c, O_AT))) {
		if (nf_parse_duration(v, &st->arg, &err))
			return nf_cli_usage_error("critical-path", "--at: %s", err.msg);
		st->kind = NF_CP_AT;
	}
	if ((v = nf_cli_get(c, O_QUEUE))) {
		st->kind = NF_CP_QUEUE;
		st->queue_text = v;
	}
	return 0;
}

static int cp_run(struct nf_cli *c)
{
	struct cp_state *st = c->state;
	enum nf_cp_target kind = st->kind;
	const char *dir = c->args[0], *db = c->db[0], *queue_text = st->queue_text;
	struct nf_analysis *a = NULL;
	struct nf_cp_path path = { 0 };
	struct nf_job_path jpath = { 0 };
	struct nf_error err;
	int64_t arg = st->arg, op = 0;
	bool json = nf_cli_has(c, O_JSON), by_job = st->by_job;
	int rc;

	nf_error_clear(&err);
	/* on demand: one path reads what it visits, not the whole session */
	rc = nf_analysis_open_lazy(db, &a, &err);
	/* the reasons of waits nothing released (a failure here only loses the words) */
	if (!rc) {
		if (nf_timeline_open_read(db, &reason_db, &err) == 0 &&
		    sqlite3_prepare_v2(reason_db, "SELECT reason FROM deps WHERE wait_id = ?1", -1, &reason_st, NULL) !=
			    SQLITE_OK)
			reason_st = NULL;
		nf_error_clear(&err);
	}
	if (!rc && queue_text)
		rc = nf_analysis_find_queue(a, queue_text, &arg, &err);
	/* Kernel sessions: a GPU job when asked for one, or when no operation finished
	 * (the usual case of a trace whose fences show no queueing) but a job did. */
	if (!rc && !by_job) {
		rc = nf_analysis_target(a, kind, arg, &op, &err);
		if (rc == NF_ENOENT && (kind == NF_CP_LAST || kind == NF_CP_AT) && nf_analysis_has_jobs(a)) {
			nf_error_clear(&err);
			by_job = true;
			rc = 0;
		}
	}
	if (!rc && by_job) {
		rc = nf_analysis_job_target(a, kind, arg, &op, &err);
		if (!rc)
			rc = nf_analysis_job_path(a, op, &jpath, &err);
		if (rc == NF_ENOENT && kind != NF_CP_OP) {
			nf_error_clear(&err);
			nf_error_set(&err, NF_ENOENT, "no operation and no GPU job finished %s",
				     kind == NF_CP_AT ? "by that time" : "in this session");
		}
	} else if (!rc) {
		rc = nf_analysis_critical_path(a, op, &path, &err);
	}
	if (rc && a && (strncmp(err.msg, dir, strlen(dir)) || err.msg[strlen(dir)] != ':'))
		nf_error_prefix(&err, "%s", dir); /* which session it is about */
	if (rc) {
		nf_analysis_destroy(a);
		return nf_cli_fail("critical-path", &err);
	}
	if (by_job && json)
		print_job_json(a, &jpath);
	else if (by_job)
		print_job_text(a, &jpath);
	else if (json)
		print_json(a, &path);
	else
		print_text(a, &path);
	nf_cp_path_free(&path);
	nf_job_path_free(&jpath);
	nf_analysis_destroy(a);
	sqlite3_finalize(reason_st);
	sqlite3_close(reason_db);
	return NF_EXIT_OK;
}

const struct nf_cli_cmd cmd_critical_path = {
	.options = options,
	.args = "session DIR",
	.min_args = 1,
	.max_args = 1,
	.args_complete = NF_COMPLETE_SESSION,
	.synopsis = "nftrace critical-path DIR [--op ID | --at TIME | --queue Q | --job ID] [--json]\n",
	.description =
		"Explains the latency (queued on the CPU to completed) of one operation: the last one to\n"
		"finish (default), operation ID (fence_ops.id), the last to finish by TIME (12.5ms), or\n"
		"the last to finish on hardware queue Q (handle or name). Walks back from its end: while\n"
		"an operation waited, to the signal that released it (deps) and that signal's queue;\n"
		"while a queue was busy with earlier work, to that work; when work waited for the CPU to\n"
		"queue it, to the CPU thread (and the CPU waits it did). Prints the segments in time\n"
		"order: on which queue or thread, doing what (waiting on fence F >= v, executing,\n"
		"running until it queued the work), start, end and duration in ns; the durations add up\n"
		"to the latency exactly.\n"
		"Linux kernel sessions with GPU jobs: when no operation finished (or with --job ID,\n"
		"jobs.id), the job: on its ring, behind the job run before it, released by its\n"
		"dependency (job_deps: another job, or the signal of a fence no job owns), submitted\n"
		"by its thread.\n",
	.state_size = sizeof(struct cp_state),
	.prepare = cp_prepare,
	.run = cp_run,
};
