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
#include "contract/etwsession.h"
#include "contract/parser.h"
#include "contract/session.h"
#include "contract/timeline.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/text.h"

/* ---- output ---------------------------------------------------------------- */

static const char *const check_log_names[NF_LOG_SUMMARY_LOGS] = { "other", "waits", "signals" };

static uint64_t check_other(const struct nf_log_counts *l)
{
	return l->count[NF_FIND_UNKNOWN_FENCE] + l->count[NF_FIND_BAD_OPERATION] +
	       l->count[NF_FIND_OUT_OF_RANGE] + l->count[NF_FIND_CORRUPT];
}

/* Hang findings listed one by one (pending waits past this are only counted). */
#define CHECK_MAX_PENDING 50u

static const char *check_verdict(const struct nf_log_summary *s, const struct nf_hang_report *h)
{
	if (s->illegal || h->count[NF_HANG_LOWERED])
		return "illegal";
	if (s->incomplete)
		return "incomplete";
	if (h->count[NF_HANG_DEADLOCK])
		return "deadlock";
	if (h->count[NF_HANG_NEVER_SIGNALED] || h->count[NF_HANG_BLOCKED])
		return "hang";
	if (s->total[NF_FIND_LOST] || s->total[NF_FIND_ZERO_TS] || s->total[NF_FIND_REPEATED_TS])
		return "legal_anomalies";
	return "whole";
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

static void check_print_text(const char *dir, const struct nf_log_summary *s,
			     const struct nf_analysis *a, const struct nf_hang_report *h, const char *timeline_note)
{
	struct nf_queue_summary *const *qs = s->queues;
	const struct nf_parser_stats *st = &s->stats;
	size_t nq = s->n_queues;
	const char *verdict = check_verdict(s, h);

	char tb[4200], nb[13];

	printf("session %s: %" PRIu64 " events (%" PRIu64 " not in the schema, %" PRIu64
	       " discarded by the recorder), %" PRIu64 " log reads\n",
	       nf_esc_text_buf(tb, sizeof(tb), dir, 0), st->events, st->unknown_events, st->discarded_events, s->reads);
	printf("%-10s %-7s %-12s %-8s %6s %9s %9s %6s %8s %9s %6s\n", "queue", "adapter", "name",
	       "log", "epochs", "entries", "lost", "zero", "repeated", "backwards", "other");
	for (size_t i = 0; i < nq; i++) {
		const struct nf_queue_summary *q = qs[i];
		char hq[16];

		if (q->overflow)
			snprintf(hq, sizeof(hq), "(more)");
		else
			snprintf(hq, sizeof(hq), "0x%08" PRIx32, q->hwqueue);
		for (int t = NF_LOG_SUMMARY_WAITS; t < NF_LOG_SUMMARY_LOGS + NF_LOG_SUMMARY_WAITS; t++) {
			const struct nf_log_counts *l = &q->log[t % NF_LOG_SUMMARY_LOGS];

			if (!l->seen)
				continue;
			printf("%-10s %-7" PRIu32 " %-12.12s %-8s %6" PRIu64 " %9" PRIu64 " %9" PRIu64
			       " %6" PRIu64 " %8" PRIu64 " %9" PRIu64 " %6" PRIu64 "\n",
			       hq, q->overflow ? 0 : q->adapter,
			       /* 12 bytes at most, not cut inside a character */
			       nf_esc_text_buf(nb, sizeof(nb), q->name[0] ? q->name : "-", 0),
			       check_log_names[t % NF_LOG_SUMMARY_LOGS], l->epochs, l->entries,
			       l->count[NF_FIND_LOST], l->count[NF_FIND_ZERO_TS],
			       l->count[NF_FIND_REPEATED_TS], l->count[NF_FIND_BACKWARDS_TS],
			       check_other(l));
		}
	}
	/* Where the legal anomalies start, per log (illegal ones are listed below). */
	for (size_t i = 0; i < nq; i++) {
		const struct nf_queue_summary *q = qs[i];

		for (int t = 0; t < NF_LOG_SUMMARY_LOGS; t++) {
			const struct nf_log_counts *l = &q->log[t];
			static const enum nf_finding_kind kinds[] = {
				NF_FIND_LOST, NF_FIND_ZERO_TS, NF_FIND_REPEATED_TS
			};

			for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
				const struct nf_log_where *w = &l->first[kinds[k]];

				if (!w->set)
					continue;
				printf("  queue 0x%08" PRIx32 " %s: %s",
				       q->hwqueue, check_log_names[t], nf_finding_kind_name(kinds[k]));
				if (kinds[k] == NF_FIND_LOST)
					printf(" (%" PRIu64 " entries in %" PRIu64 " gaps)",
					       l->count[NF_FIND_LOST], l->lost_spans);
				printf(", first in stream %s, packet %" PRIu64 ", event #%" PRIu64 ", entry %" PRIu32,
				       nf_esc_text_buf(tb, sizeof(tb), w->stream, 0), w->packet, w->event_index, w->entry_index);
				if (kinds[k] == NF_FIND_LOST && w->prev_gpu_ts)
					printf(" (%" PRIu64 " entries between GPU timestamps %" PRIu64 " and %" PRIu64 " ticks)",
					       w->count, w->prev_gpu_ts, w->next_gpu_ts);
				else if (kinds[k] == NF_FIND_LOST)
					printf(" (%" PRIu64 " entries before GPU timestamp %" PRIu64 " ticks)", w->count,
					       w->next_gpu_ts);
				putchar('\n');
			}
		}
	}
	if (s->illegal) {
		printf("illegal findings (%" PRIu64 "):\n", s->illegal);
		for (size_t i = 0; i < s->n_listed; i++) {
			const struct nf_finding *f = &s->listed[i].f;

			printf("  %s packet %" PRIu64 " event #%" PRIu64 " entry %" PRIu32 ": queue 0x%08" PRIx32
			       " log %" PRIu32 " epoch %" PRIu32 ": %s: ",
			       nf_esc_text_buf(tb, sizeof(tb), f->stream, 0), f->packet, f->event_index, f->entry_index,
			       f->hwqueue, f->log_type, f->epoch, nf_finding_kind_name(f->kind));
			nf_esc_text_file(stdout, f->detail, 0);
			putchar('\n');
		}
		if (s->not_listed)
			printf("  ... and %" PRIu64 " more\n", s->not_listed);
	}
	hang_print_text(a, h);
	if (timeline_note[0])
		printf("timeline findings: %s\n", nf_esc_text_buf(tb, sizeof(tb), timeline_note, 0));
	if (!strcmp(verdict, "illegal"))
		printf("verdict: illegal (%" PRIu64 " findings that no valid session has)\n",
		       s->illegal + h->count[NF_HANG_LOWERED]);
	else if (!strcmp(verdict, "incomplete"))
		printf("verdict: incomplete (%s)\n", nf_esc_text_buf(tb, sizeof(tb), s->incomplete, 0));
	else if (!strcmp(verdict, "deadlock"))
		printf("verdict: deadlock (%zu cycle%s of waits waiting for each other, %zu more waits "
		       "never satisfied)\n", h->count[NF_HANG_DEADLOCK], h->count[NF_HANG_DEADLOCK] == 1 ? "" : "s",
		       h->count[NF_HANG_NEVER_SIGNALED] + h->count[NF_HANG_BLOCKED]);
	else if (!strcmp(verdict, "hang"))
		printf("verdict: hang (%zu waits can never be satisfied)\n",
		       h->count[NF_HANG_NEVER_SIGNALED] + h->count[NF_HANG_BLOCKED]);
	else if (!strcmp(verdict, "legal_anomalies"))
		printf("verdict: legal anomalies only (%" PRIu64 " lost, %" PRIu64 " zero, %" PRIu64
		       " repeated timestamps)\n", s->total[NF_FIND_LOST], s->total[NF_FIND_ZERO_TS],
		       s->total[NF_FIND_REPEATED_TS]);
	else
		printf("verdict: whole (%" PRIu64 " entries, none lost)\n", s->entries);
}

/* A JSON string (nf_esc_json: UTF-8 kept, controls escaped). */
static void json_str(const char *str)
{
	nf_esc_json_file(stdout, str, 0);
}

static void json_where(const struct nf_log_where *w, bool span)
{
	printf("{\"stream\": ");
	json_str(w->stream);
	printf(", \"packet\": %" PRIu64 ", \"event_index\": %" PRIu64 ", \"entry_index\": %" PRIu32,
	       w->packet, w->event_index, w->entry_index);
	if (span)
		printf(", \"count\": %" PRIu64 ", \"prev_gpu_ts\": %" PRIu64 ", \"next_gpu_ts\": %" PRIu64,
		       w->count, w->prev_gpu_ts, w->next_gpu_ts);
	putchar('}');
}

static void check_print_json(const char *dir, const struct nf_log_summary *s,
			     const struct nf_hang_report *h)
{
	struct nf_queue_summary *const *qs = s->queues;
	const struct nf_parser_stats *st = &s->stats;
	size_t nq = s->n_queues;
	printf("{\n  \"session\": ");
	json_str(dir);
	printf(",\n  \"verdict\": \"%s\",\n  \"events\": %" PRIu64 ",\n  \"unknown_events\": %" PRIu64
	       ",\n  \"discarded_events\": %" PRIu64 ",\n  \"log_reads\": %" PRIu64
	       ",\n  \"entries\": %" PRIu64 ",\n  \"illegal\": %" PRIu64 ",\n  \"incomplete\": ",
	       check_verdict(s, h), st->events, st->unknown_events, st->discarded_events, s->reads,
	       s->entries, s->illegal);
	if (s->incomplete)
		json_str(s->incomplete);
	else
		printf("null");
	printf(",\n  \"totals\": {");
	for (int k = 0; k < NF_FIND_COUNT; k++)
		printf("%s\"%s\": %" PRIu64, k ? ", " : "", nf_finding_kind_name((enum nf_finding_kind)k),
		       s->total[k]);
	printf("},\n  \"queues\": [");
	for (size_t i = 0; i < nq; i++) {
		const struct nf_queue_summary *q = qs[i];
		bool first_log = true;

		printf("%s\n    {\"adapter\": %" PRIu32 ", \"hwqueue\": %" PRIu32 ", \"name\": ",
		       i ? "," : "", q->overflow ? 0 : q->adapter, q->overflow ? 0 : q->hwqueue);
		json_str(q->name);
		printf(", \"more_queues\": %s, \"logs\": [", q->overflow ? "true" : "false");
		for (int t = NF_LOG_SUMMARY_WAITS; t < NF_LOG_SUMMARY_LOGS + NF_LOG_SUMMARY_WAITS; t++) {
			const struct nf_log_counts *l = &q->log[t % NF_LOG_SUMMARY_LOGS];
			bool first_where = true;

			if (!l->seen)
				continue;
			printf("%s\n      {\"log\": \"%s\", \"epochs\": %" PRIu64 ", \"capacity\": %" PRIu64
			       ", \"reads\": %" PRIu64 ", \"entries\": %" PRIu64 ", \"lost_gaps\": %" PRIu64,
			       first_log ? "" : ",", check_log_names[t % NF_LOG_SUMMARY_LOGS], l->epochs,
			       l->capacity, l->reads, l->entries, l->lost_spans);
			first_log = false;
			for (int k = 0; k < NF_FIND_COUNT; k++)
				printf(", \"%s\": %" PRIu64, nf_finding_kind_name((enum nf_finding_kind)k),
				       l->count[k]);
			printf(", \"first\": {");
			for (int k = 0; k < NF_FIND_COUNT; k++) {
				if (!l->first[k].set)
					continue;
				printf("%s\"%s\": ", first_where ? "" : ", ",
				       nf_finding_kind_name((enum nf_finding_kind)k));
				json_where(&l->first[k], k == NF_FIND_LOST);
				first_where = false;
			}
			printf("}}");
		}
		printf("%s]}", first_log ? "" : "\n    ");
	}
	printf("%s],\n  \"findings\": [", nq ? "\n  " : "");
	for (size_t i = 0; i < s->n_listed; i++) {
		const struct nf_finding *f = &s->listed[i].f;

		printf("%s\n    {\"kind\": \"%s\", \"adapter\": %" PRIu32 ", \"hwqueue\": %" PRIu32
		       ", \"log_type\": %" PRIu32 ", \"epoch\": %" PRIu32 ", \"count\": %" PRIu64
		       ", \"first_seq\": %" PRIu64 ", \"prev_gpu_ts\": %" PRIu64 ", \"next_gpu_ts\": %" PRIu64
		       ", \"cpu_ts\": %" PRIu64 ", \"stream\": ",
		       i ? "," : "", nf_finding_kind_name(f->kind), f->adapter, f->hwqueue, f->log_type,
		       f->epoch, f->count, f->first_seq, f->prev_gpu_ts, f->next_gpu_ts, f->cpu_ts);
		json_str(f->stream);
		printf(", \"packet\": %" PRIu64 ", \"event_index\": %" PRIu64 ", \"entry_index\": %" PRIu32
		       ", \"detail\": ", f->packet, f->event_index, f->entry_index);
		json_str(f->detail);
		putchar('}');
	}
	printf("%s],\n  \"findings_not_listed\": %" PRIu64, s->n_listed ? "\n  " : "", s->not_listed);
	hang_print_json(h);
	printf("\n}\n");
}

/* ---- findings only the timeline has ------------------------------------------- */

/*
 * The timeline's builder checks ranges the log replay does not see: a
 * calibration pair beyond 2^62 (not used), an event the CPU clock cannot
 * place within 2^62 ns (left out). It writes each as an out_of_range anomaly
 * without a queue (the log replay's own findings have one). They are
 * illegal: counted into the summary's illegal findings, so the verdict and
 * the exit status say so, and the first is shown. Returns 0 or a code.
 */
static int timeline_findings(const char *db, struct nf_log_summary *s, char *first, size_t len,
			     struct nf_error *err)
{
	sqlite3 *h = NULL;
	sqlite3_stmt *st = NULL;
	int rc = nf_timeline_open_read(db, &h, err);

	first[0] = '\0';
	if (rc)
		return rc;
	if (sqlite3_prepare_v2(h, "SELECT count(*), (SELECT detail FROM anomalies WHERE kind = 'out_of_range' AND "
				  "queue IS NULL ORDER BY id LIMIT 1) FROM anomalies WHERE kind = 'out_of_range' AND "
				  "queue IS NULL", -1, &st, NULL) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW) {
		rc = nf_sql_error(h, err, "%s: reading anomalies", db);
	} else if (sqlite3_column_int64(st, 0) > 0) {
		uint64_t n = (uint64_t)sqlite3_column_int64(st, 0);

		s->illegal += n;
		s->total[NF_FIND_OUT_OF_RANGE] += n;
		snprintf(first, len, "%" PRIu64 " out_of_range in the timeline, first: %s", n,
			 sqlite3_column_text(st, 1) ? (const char *)sqlite3_column_text(st, 1) : "?");
	}
	sqlite3_finalize(st);
	sqlite3_close(h);
	return rc;
}

/* A path for a temporary timeline of dir under $TMPDIR (or /tmp): 0, or -1. */
static int check_temp_timeline(const char *dir, char *db, size_t len)
{
	const char *base = getenv("TMPDIR");
	int fd;

	(void)dir;
	if ((size_t)snprintf(db, len, "%s/nftrace-check-XXXXXX", base && *base ? base : "/tmp") >= len)
		return -1;
	fd = mkstemp(db);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/*
 * An imported Windows ETW capture: what was lost, DxgKrnl payloads of a size
 * no layout has, waits never released, and the hang analysis every session
 * gets (nf_analysis_hangs over its timeline: waits open at the capture's end
 * that nothing in it can satisfy). The verdict uses the same words as other
 * sessions' (check_verdict): illegal (a fence-related event whose size matches
 * no layout: its rows are missing from the timeline; or a lowered fence),
 * deadlock, hang, legal_anomalies (lost events or buffers, size mismatches,
 * waits still open at the end), whole; exit 1 for illegal, deadlock and hang.
 */
static int check_etw(const char *dir, bool json)
{
	struct nf_etw_summary es;
	struct nf_analysis *a = NULL;
	struct nf_hang_report hangs = { 0 };
	struct nf_error err;
	const char *verdict;
	char db[4200];
	bool tmp_db = false;
	int rc;

	nf_error_clear(&err);
	if (nf_etw_summary_read(dir, &es, &err))
		return nf_cli_fail("check", &err);
	rc = nf_timeline_ensure(dir, db, sizeof(db), &err);
	if (rc == NF_EIO && check_temp_timeline(dir, db, sizeof(db)) == 0) {
		nf_error_clear(&err);
		rc = nf_timeline_build(dir, db, &err);
		tmp_db = true;
	}
	rc = rc ? rc : nf_analysis_load_open(db, &a, &err);
	rc = rc ? rc : nf_analysis_hangs(a, &hangs, &err);
	if (rc) {
		rc = nf_cli_fail("check", &err);
		goto out;
	}
	if (es.fence_size_mismatches > 0 || hangs.count[NF_HANG_LOWERED])
		verdict = "illegal";
	else if (hangs.count[NF_HANG_DEADLOCK])
		verdict = "deadlock";
	else if (hangs.count[NF_HANG_NEVER_SIGNALED] || hangs.count[NF_HANG_BLOCKED])
		verdict = "hang";
	else if (es.events_lost || es.buffers_lost || es.lost_flag_buffers || es.size_mismatches ||
		 es.waits_pending || es.cpu_waits_pending)
		verdict = "legal_anomalies";
	else
		verdict = "whole";
	if (json) {
		printf("{\n  \"session\": ");
		json_str(dir);
		printf(",\n  \"source\": \"etw\",\n"
		       "  \"verdict\": \"%s\",\n  \"events\": %" PRId64 ",\n"
		       "  \"events_lost\": %" PRId64 ",\n  \"buffers_lost\": %" PRId64 ",\n"
		       "  \"buffers_flagged_lost\": %" PRId64 ",\n  \"size_mismatches\": %" PRId64 ",\n"
		       "  \"fence_size_mismatches\": %" PRId64 ",\n  \"waits_never_released\": %" PRId64 ",\n"
		       "  \"cpu_waits_never_released\": %" PRId64 ",\n  \"unwaits_without_wait\": %" PRId64,
		       verdict, es.events, es.events_lost, es.buffers_lost, es.lost_flag_buffers, es.size_mismatches,
		       es.fence_size_mismatches, es.waits_pending, es.cpu_waits_pending,
		       es.waits_unmatched_unwaits);
		hang_print_json(&hangs);
		printf("\n}\n");
	} else {
		fputs("session ", stdout);
		nf_esc_text_file(stdout, dir, 0);
		printf(": Windows ETW capture, %" PRId64 " events\n", es.events);
		printf("lost:                     %" PRId64 " events, %" PRId64 " buffers (logfile header); "
		       "%" PRId64 " buffers flagged lost\n", es.events_lost, es.buffers_lost, es.lost_flag_buffers);
		printf("DxgKrnl size mismatches:  %" PRId64 " (%" PRId64 " fence-related)\n", es.size_mismatches,
		       es.fence_size_mismatches);
		printf("GPU waits never released: %" PRId64 " of %" PRId64 " (no unwait before the capture ended)\n",
		       es.waits_pending, es.waits);
		printf("CPU waits never released: %" PRId64 " of %" PRId64 "\n", es.cpu_waits_pending, es.cpu_waits);
		printf("unwaits without a wait:   %" PRId64 " (their wait packet was queued before the capture)\n",
		       es.waits_unmatched_unwaits);
		hang_print_text(a, &hangs);
		if (!strcmp(verdict, "illegal"))
			printf("verdict: illegal (%" PRId64 " fence-related events whose size matches no layout, "
			       "%zu lowered signal%s)\n", es.fence_size_mismatches, hangs.count[NF_HANG_LOWERED],
			       hangs.count[NF_HANG_LOWERED] == 1 ? "" : "s");
		else if (!strcmp(verdict, "deadlock"))
			printf("verdict: deadlock (%zu cycle%s of waits waiting for each other, %zu more waits "
			       "blocked)\n", hangs.count[NF_HANG_DEADLOCK], hangs.count[NF_HANG_DEADLOCK] == 1 ? "" : "s",
			       hangs.count[NF_HANG_BLOCKED]);
		else if (!strcmp(verdict, "hang"))
			printf("verdict: hang (%zu waits can never be satisfied)\n",
			       hangs.count[NF_HANG_NEVER_SIGNALED] + hangs.count[NF_HANG_BLOCKED]);
		else if (!strcmp(verdict, "legal_anomalies"))
			printf("verdict: legal anomalies only (%" PRId64 " events and %" PRId64 " buffers lost, %" PRId64
			       " buffers flagged lost, %" PRId64 " size mismatches, %" PRId64
			       " waits still open when the capture ended)\n",
			       es.events_lost, es.buffers_lost, es.lost_flag_buffers, es.size_mismatches,
			       es.waits_pending + es.cpu_waits_pending);
		else
			printf("verdict: whole (%" PRId64 " events, none lost)\n", es.events);
	}
	rc = !strcmp(verdict, "whole") || !strcmp(verdict, "legal_anomalies") ? NF_EXIT_OK : NF_EXIT_FAIL;
out:
	nf_hang_report_free(&hangs);
	nf_analysis_destroy(a);
	if (tmp_db)
		unlink(db);
	nf_etw_summary_free(&es);
	return rc;
}

/* What `nftrace check --help` prints; the options it names are parsed below. */
const char cmd_check_usage[] =
	"usage: nftrace check DIR [--json]\n"
	"\n"
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
	"is listed as pending and changes nothing. A session without its end of recording\n"
	"(recorder killed, files cut) or whose streams belong to another recording: verdict\n"
	"incomplete, exit 1. Verdicts, strongest first: illegal, incomplete, deadlock, hang,\n"
	"legal_anomalies, whole.\n"
	"\n"
	"  --json   the same as one JSON object (verdict: whole, legal_anomalies, hang, deadlock,\n"
	"           incomplete or illegal; hangs: counts per kind; hang_findings: each with its wait and edges)\n";

int cmd_check(int argc, char **argv)
{
	struct nf_log_summary *s = NULL;
	struct nf_analysis *a = NULL;
	struct nf_hang_report hangs = { 0 };
	bool tmp_db = false;
	char db[4200];
	struct nf_error err;
	const char *dir = NULL;
	bool json = false;
	int rc;

	for (int i = 1; i < argc; i++) {
		rc = nf_cli_common_option("check", argv[i]);
		if (rc >= 0)
			return rc;
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (argv[i][0] == '-' && argv[i][1])
			return nf_cli_usage_error("check", "unknown option '%s'", argv[i]);
		else if (dir)
			return nf_cli_usage_error("check", "unexpected argument '%s'", argv[i]);
		else
			dir = argv[i];
	}
	if (!dir)
		return nf_cli_usage_error("check", "missing session DIR");

	nf_error_clear(&err);
	if (nf_etw_session_is(dir))
		return check_etw(dir, json);
	rc = nf_log_summary_read(dir, &s, &err);
	if (rc)
		return nf_cli_fail("check", &err);
	/* Hangs and deadlocks: over the session's timeline (built when missing; in a
	 * temporary file when the session directory cannot be written). */
	rc = nf_timeline_ensure(dir, db, sizeof(db), &err);
	if (rc == NF_EIO && check_temp_timeline(dir, db, sizeof(db)) == 0) {
		nf_error_clear(&err);
		rc = nf_timeline_build(dir, db, &err);
		tmp_db = true;
	}
	if (!rc)
		rc = nf_analysis_load_open(db, &a, &err);
	if (!rc)
		rc = nf_analysis_hangs(a, &hangs, &err);
	char tl_first[400];
	if (!rc)
		rc = timeline_findings(db, s, tl_first, sizeof(tl_first), &err);
	if (rc) {
		rc = nf_cli_fail("check", &err);
		goto out_free;
	}
	if (json) {
		check_print_json(dir, s, &hangs);
	} else {
		/* before the verdict, which counts them */
		check_print_text(dir, s, a, &hangs, tl_first);
	}
	rc = strcmp(check_verdict(s, &hangs), "whole") && strcmp(check_verdict(s, &hangs), "legal_anomalies")
		     ? NF_EXIT_FAIL : NF_EXIT_OK;
out_free:
	nf_hang_report_free(&hangs);
	nf_analysis_destroy(a);
	if (tmp_db)
		unlink(db);
	nf_log_summary_destroy(s);
	return rc;
}
