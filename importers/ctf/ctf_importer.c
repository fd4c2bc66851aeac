/*
 * The CTF importer: sessions nftrace recorded or converted (a Linux trace
 * becomes one with a kernel stream) and any other CTF trace. Its timeline is
 * built by the parser (parser/, on its own thread) feeding the builder
 * (builder.c, builder_resolve.c); `info` counts the events through the
 * parser, `check` replays the OS's log bookkeeping (nf_log_summary_read).
 */
#include "builder.h"
#include "pipeline.h"
#include "../importers_int.h"
#include "contract/errors.h"
#include "contract/escape.h"
#include "contract/parser.h"
#include "contract/timeline_writer.h"
#include "nftrace/events.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the timeline ---- */

struct build_ctx {
	struct nf_timeline_builder *b;
	struct nf_error *err;
	uint64_t n;
};

static int cb_event(void *ctx, const struct nf_event *ev)
{
	struct build_ctx *c = ctx;

	if ((++c->n & 4095) == 0 && nf_importers_interrupted())
		return nf_error_set(c->err, NF_EINTR, "timeline: interrupted");
	return nf_timeline_builder_feed_event(c->b, ev, c->err);
}

static int cb_entry(void *ctx, const struct nf_decoded_entry *e)
{
	struct build_ctx *c = ctx;

	return nf_timeline_builder_feed_entry(c->b, e, c->err);
}

static int cb_finding(void *ctx, const struct nf_finding *f)
{
	struct build_ctx *c = ctx;

	return nf_timeline_builder_feed_finding(c->b, f, c->err);
}

static int ctf_build(const char *session_dir, const char *db_path, const char *key, struct nf_error *err)
{
	struct nf_parser *p = NULL;
	struct nf_timeline_builder *b = NULL;
	sqlite3 *db = NULL;
	int rc;

	rc = nf_parser_open(session_dir, &p, err);
	if (rc)
		return rc;
	if ((rc = nf_writer_open(db_path, &db, err)))
		goto out_close;
	b = nf_timeline_builder_create(db, nf_parser_info(p), err);
	if (!b) {
		rc = err && err->code ? err->code : NF_ENOMEM;
		goto out_close;
	}
	nf_timeline_builder_set_early(b, nf_importers_early());
	struct build_ctx ctx = { b, err, 0 };
	struct nf_parser_callbacks cb = { &ctx, cb_event, cb_entry, cb_finding };

	/* The parser reads and replays on its own thread while the builder matches. */
	rc = nf_timeline_run_pipelined(p, &cb, err);
	rc = rc ? rc : nf_timeline_builder_finish(b, err);
	if (rc == 0 && key)
		rc = nf_writer_meta(db, "session_key", key, err);
	if (rc == NF_ESQL && err && !strstr(err->msg, db_path))
		/* disk full and the like: say which file */
		nf_error_prefix(err, "%s", db_path);
out_close:
	nf_timeline_builder_destroy(b);
	rc = nf_writer_close(db, db_path, rc, err);
	nf_parser_destroy(p);
	return rc;
}

/* Every path no other importer takes: the parser says what is wrong with one
 * that is no CTF trace (missing, not a directory, no metadata ...). */
static bool ctf_session_is(const char *dir)
{
	(void)dir;
	return true;
}

/* ---- info ---- */

struct info_counts {
	uint64_t per_event[NF_EV_COUNT];
	uint64_t entries, findings[NF_FIND_COUNT];
	uint64_t first_ts, last_ts;
	bool any;
};

static int count_event(void *ctx, const struct nf_event *ev)
{
	struct info_counts *c = ctx;

	if (ev->id < NF_EV_COUNT)
		c->per_event[ev->id]++;
	if (!c->any)
		c->first_ts = ev->ts;
	c->last_ts = ev->ts;
	c->any = true;
	return 0;
}

static int count_entry(void *ctx, const struct nf_decoded_entry *e)
{
	(void)e;
	((struct info_counts *)ctx)->entries++;
	return 0;
}

static int count_finding(void *ctx, const struct nf_finding *f)
{
	struct info_counts *c = ctx;

	if (f->kind < NF_FIND_COUNT)
		c->findings[f->kind] += f->kind == NF_FIND_LOST ? f->count : 1;
	return 0;
}


/* The same facts as one JSON object, for scripts (integers, durations in ns). */
static void print_json(FILE *out, const char *dir, const struct nf_session_info *in, const struct info_counts *c)
{
	int first = 1;

	fputs("{\"session\": ", out);
	nf_imp_put_json(out, dir);
	fputs(", \"source\": ", out);
	nf_imp_put_json(out, in->source);
	fputs(", \"tool_version\": ", out);
	nf_imp_put_json(out, in->tool_version ? in->tool_version : "");
	fprintf(out, ", \"schema\": %lld, \"mode\": ", (long long)in->schema_version);
	nf_imp_put_json(out, in->mode ? in->mode : "");
	fprintf(out, ", \"seed\": %llu, \"cpu_frequency_hz\": %llu, \"duration_ns\": %llu, "
	       "\"ground_truth\": %s, \"import_note\": ",
	       (unsigned long long)in->seed, (unsigned long long)in->cpu_frequency,
	       c->any && in->cpu_frequency
		       ? (unsigned long long)((double)(c->last_ts - in->start_ticks) * 1e9 /
					      (double)in->cpu_frequency)
		       : 0ULL,
	       in->ground_truth ? "true" : "false");
	nf_imp_put_json(out, in->import_note ? in->import_note : "");
	fprintf(out, ", \"log_entries\": {\"read\": %llu, \"lost\": %llu}, \"events\": {",
	       (unsigned long long)c->entries, (unsigned long long)c->findings[NF_FIND_LOST]);
	for (uint32_t i = 0; i < NF_EV_COUNT; i++)
		if (c->per_event[i]) {
			fputs(first ? "" : ", ", out);
			first = 0;
			nf_imp_put_json(out, nf_event_desc(i)->name);
			fprintf(out, ": %llu", (unsigned long long)c->per_event[i]);
		}
	fputs("}}\n", out);
}


/* `nftrace info DIR`: the session's facts and its events counted by the parser. */
static int ctf_info(const char *dir, bool json, FILE *out, struct nf_error *err)
{
	struct nf_parser *p = NULL;
	struct info_counts c;

	memset(&c, 0, sizeof(c));
	if (nf_parser_open(dir, &p, err))
		return err->code;
	const struct nf_session_info *in = nf_parser_info(p);
	struct nf_parser_callbacks cb = { &c, count_event, count_entry, count_finding };
	if (nf_parser_run(p, &cb, err)) {
		nf_parser_destroy(p);
		return err->code;
	}
	if (json) {
		print_json(out, dir, in, &c);
		nf_parser_destroy(p);
		return 0;
	}
	fputs("session:        ", out);
	nf_imp_put_clean(out, dir);
	fputc('\n', out);
	fputs("source:         ", out);
	nf_imp_put_clean(out, in->source);
	fputc('\n', out);
	fputs("recorded by:    nftrace ", out);
	nf_imp_put_clean(out, in->tool_version ? in->tool_version : "?");
	fprintf(out, " (schema %lld)\nmode:           ", (long long)in->schema_version);
	nf_imp_put_clean(out, in->mode ? in->mode : "?");
	fprintf(out, ", seed %llu\n", (unsigned long long)in->seed);
	fprintf(out, "cpu clock:      %llu Hz\n", (unsigned long long)in->cpu_frequency);
	fprintf(out, "duration:       %.6f s\n", c.any && in->cpu_frequency
		       ? (double)(c.last_ts - in->start_ticks) / (double)in->cpu_frequency : 0.0);
	fprintf(out, "ground truth:   %s\n", in->ground_truth ? "yes" : "no");
	if (in->import_note && in->import_note[0]) {
		fputs("import note:    ", out);
		nf_imp_put_clean(out, in->import_note);
		fputc('\n', out);
	}
	fprintf(out, "log entries:    %llu read, %llu lost\n", (unsigned long long)c.entries,
	       (unsigned long long)c.findings[NF_FIND_LOST]);
	fprintf(out, "events:\n");
	for (uint32_t i = 0; i < NF_EV_COUNT; i++)
		if (c.per_event[i])
			fprintf(out, "  %-40s %llu\n", nf_event_desc(i)->name, (unsigned long long)c.per_event[i]);
	nf_parser_destroy(p);
	return 0;
}


/* ---- check: the log summary as text and JSON ---- */

static const char *const check_log_names[NF_LOG_SUMMARY_LOGS] = { "other", "waits", "signals" };

static uint64_t check_other(const struct nf_log_counts *l)
{
	return l->count[NF_FIND_UNKNOWN_FENCE] + l->count[NF_FIND_BAD_OPERATION] +
	       l->count[NF_FIND_OUT_OF_RANGE] + l->count[NF_FIND_CORRUPT];
}


static void check_print_text(FILE *out, const char *dir, const struct nf_log_summary *s)
{
	struct nf_queue_summary *const *qs = s->queues;
	const struct nf_parser_stats *st = &s->stats;
	size_t nq = s->n_queues;

	fputs("session ", out);
	nf_imp_put_clean(out, dir);
	fprintf(out, ": %" PRIu64 " events (%" PRIu64 " not in the schema, %" PRIu64
	       " discarded by the recorder), %" PRIu64 " log reads\n",
	       st->events, st->unknown_events, st->discarded_events, s->reads);
	fprintf(out, "%-10s %-7s %-12s %-8s %6s %9s %9s %6s %8s %9s %6s\n", "queue", "adapter", "name",
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
			fprintf(out, "%-10s %-7" PRIu32 " %-12.12s %-8s %6" PRIu64 " %9" PRIu64 " %9" PRIu64
			       " %6" PRIu64 " %8" PRIu64 " %9" PRIu64 " %6" PRIu64 "\n",
			       hq, q->overflow ? 0 : q->adapter,
			       /* 12 bytes at most, cut at a character's boundary (nf_esc_text) */
			       nf_esc_text_buf((char[13]){ 0 }, 13, q->name[0] ? q->name : "-", 0),
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
				fprintf(out, "  queue 0x%08" PRIx32 " %s: %s",
				       q->hwqueue, check_log_names[t], nf_finding_kind_name(kinds[k]));
				if (kinds[k] == NF_FIND_LOST)
					fprintf(out, " (%" PRIu64 " entries in %" PRIu64 " gaps)",
					       l->count[NF_FIND_LOST], l->lost_spans);
				fprintf(out, ", first in stream %s, packet %" PRIu64 ", event #%" PRIu64 ", entry %" PRIu32,
				       w->stream, w->packet, w->event_index, w->entry_index);
				if (kinds[k] == NF_FIND_LOST && w->prev_gpu_ts)
					fprintf(out, " (%" PRIu64 " entries between GPU timestamps %" PRIu64 " and %" PRIu64 " ticks)",
					       w->count, w->prev_gpu_ts, w->next_gpu_ts);
				else if (kinds[k] == NF_FIND_LOST)
					fprintf(out, " (%" PRIu64 " entries before GPU timestamp %" PRIu64 " ticks)", w->count,
					       w->next_gpu_ts);
				fputc('\n', out);
			}
		}
	}
	if (s->illegal) {
		fprintf(out, "illegal findings (%" PRIu64 "):\n", s->illegal);
		for (size_t i = 0; i < s->n_listed; i++) {
			const struct nf_finding *f = &s->listed[i].f;

			fprintf(out, "  %s packet %" PRIu64 " event #%" PRIu64 " entry %" PRIu32 ": queue 0x%08" PRIx32
			       " log %" PRIu32 " epoch %" PRIu32 ": %s: %s\n",
			       f->stream, f->packet, f->event_index, f->entry_index, f->hwqueue, f->log_type,
			       f->epoch, nf_finding_kind_name(f->kind), f->detail);
		}
		if (s->not_listed)
			fprintf(out, "  ... and %" PRIu64 " more\n", s->not_listed);
	}
}

static void json_where(FILE *out, const struct nf_log_where *w, bool span)
{
	fprintf(out, "{\"stream\": ");
	nf_imp_put_json(out, w->stream);
	fprintf(out, ", \"packet\": %" PRIu64 ", \"event_index\": %" PRIu64 ", \"entry_index\": %" PRIu32,
	       w->packet, w->event_index, w->entry_index);
	if (span)
		fprintf(out, ", \"count\": %" PRIu64 ", \"prev_gpu_ts\": %" PRIu64 ", \"next_gpu_ts\": %" PRIu64,
		       w->count, w->prev_gpu_ts, w->next_gpu_ts);
	fputc('}', out);
}

static void check_print_json(FILE *out, const struct nf_log_summary *s)
{
	struct nf_queue_summary *const *qs = s->queues;
	const struct nf_parser_stats *st = &s->stats;
	size_t nq = s->n_queues;
	fprintf(out, ",\n  \"events\": %" PRIu64 ",\n  \"unknown_events\": %" PRIu64
	       ",\n  \"discarded_events\": %" PRIu64 ",\n  \"log_reads\": %" PRIu64
	       ",\n  \"entries\": %" PRIu64 ",\n  \"illegal\": %" PRIu64 ",\n  \"incomplete\": ",
	       st->events, st->unknown_events, st->discarded_events, s->reads,
	       s->entries, s->illegal);
	if (s->incomplete)
		nf_imp_put_json(out, s->incomplete);
	else
		fprintf(out, "null");
	fprintf(out, ",\n  \"totals\": {");
	for (int k = 0; k < NF_FIND_COUNT; k++)
		fprintf(out, "%s\"%s\": %" PRIu64, k ? ", " : "", nf_finding_kind_name((enum nf_finding_kind)k),
		       s->total[k]);
	fprintf(out, "},\n  \"queues\": [");
	for (size_t i = 0; i < nq; i++) {
		const struct nf_queue_summary *q = qs[i];
		bool first_log = true;

		fprintf(out, "%s\n    {\"adapter\": %" PRIu32 ", \"hwqueue\": %" PRIu32 ", \"name\": ",
		       i ? "," : "", q->overflow ? 0 : q->adapter, q->overflow ? 0 : q->hwqueue);
		nf_imp_put_json(out, q->name);
		fprintf(out, ", \"more_queues\": %s, \"logs\": [", q->overflow ? "true" : "false");
		for (int t = NF_LOG_SUMMARY_WAITS; t < NF_LOG_SUMMARY_LOGS + NF_LOG_SUMMARY_WAITS; t++) {
			const struct nf_log_counts *l = &q->log[t % NF_LOG_SUMMARY_LOGS];
			bool first_where = true;

			if (!l->seen)
				continue;
			fprintf(out, "%s\n      {\"log\": \"%s\", \"epochs\": %" PRIu64 ", \"capacity\": %" PRIu64
			       ", \"reads\": %" PRIu64 ", \"entries\": %" PRIu64 ", \"lost_gaps\": %" PRIu64,
			       first_log ? "" : ",", check_log_names[t % NF_LOG_SUMMARY_LOGS], l->epochs,
			       l->capacity, l->reads, l->entries, l->lost_spans);
			first_log = false;
			for (int k = 0; k < NF_FIND_COUNT; k++)
				fprintf(out, ", \"%s\": %" PRIu64, nf_finding_kind_name((enum nf_finding_kind)k),
				       l->count[k]);
			fprintf(out, ", \"first\": {");
			for (int k = 0; k < NF_FIND_COUNT; k++) {
				if (!l->first[k].set)
					continue;
				fprintf(out, "%s\"%s\": ", first_where ? "" : ", ",
				       nf_finding_kind_name((enum nf_finding_kind)k));
				json_where(out, &l->first[k], k == NF_FIND_LOST);
				first_where = false;
			}
			fprintf(out, "}}");
		}
		fprintf(out, "%s]}", first_log ? "" : "\n    ");
	}
	fprintf(out, "%s],\n  \"findings\": [", nq ? "\n  " : "");
	for (size_t i = 0; i < s->n_listed; i++) {
		const struct nf_finding *f = &s->listed[i].f;

		fprintf(out, "%s\n    {\"kind\": \"%s\", \"adapter\": %" PRIu32 ", \"hwqueue\": %" PRIu32
		       ", \"log_type\": %" PRIu32 ", \"epoch\": %" PRIu32 ", \"count\": %" PRIu64
		       ", \"first_seq\": %" PRIu64 ", \"prev_gpu_ts\": %" PRIu64 ", \"next_gpu_ts\": %" PRIu64
		       ", \"cpu_ts\": %" PRIu64 ", \"stream\": ",
		       i ? "," : "", nf_finding_kind_name(f->kind), f->adapter, f->hwqueue, f->log_type,
		       f->epoch, f->count, f->first_seq, f->prev_gpu_ts, f->next_gpu_ts, f->cpu_ts);
		nf_imp_put_json(out, f->stream);
		fprintf(out, ", \"packet\": %" PRIu64 ", \"event_index\": %" PRIu64 ", \"entry_index\": %" PRIu32
		       ", \"detail\": ", f->packet, f->event_index, f->entry_index);
		nf_imp_put_json(out, f->detail);
		fputc('}', out);
	}
	fprintf(out, "%s],\n  \"findings_not_listed\": %" PRIu64, s->n_listed ? "\n  " : "", s->not_listed);
}


/* ---- check ---- */

/*
 * The log bookkeeping of check: per hardware queue and log the epochs, the
 * entries read and lost, the zero, repeated and backwards end timestamps and
 * the other findings, with where the first of each kind was found; illegal
 * findings listed one by one (the first 50).
 */
static int ctf_check(const char *dir, struct nf_source_check *c, struct nf_error *err)
{
	struct nf_log_summary *s = NULL;
	char *text = NULL, *json = NULL;
	size_t tn = 0, jn = 0;
	FILE *t = NULL, *j = NULL;
	int rc = nf_log_summary_read(dir, &s, err);

	if (rc)
		return rc;
	if (!(t = open_memstream(&text, &tn)) || !(j = open_memstream(&json, &jn))) {
		if (t)
			fclose(t);
		free(text);
		nf_log_summary_destroy(s);
		return nf_error_set(err, NF_ENOMEM, "check: out of memory");
	}
	check_print_text(t, dir, s);
	check_print_json(j, s);
	fclose(t);
	fclose(j);
	c->text = text;
	c->json = json;
	c->illegal = s->illegal;
	snprintf(c->illegal_what, sizeof(c->illegal_what), "%" PRIu64 " findings that no valid session has",
		 s->illegal);
	if (s->incomplete)
		snprintf(c->incomplete, sizeof(c->incomplete), "%s", s->incomplete);
	c->legal = s->total[NF_FIND_LOST] + s->total[NF_FIND_ZERO_TS] + s->total[NF_FIND_REPEATED_TS];
	snprintf(c->legal_what, sizeof(c->legal_what),
		 "%" PRIu64 " lost, %" PRIu64 " zero, %" PRIu64 " repeated timestamps", s->total[NF_FIND_LOST],
		 s->total[NF_FIND_ZERO_TS], s->total[NF_FIND_REPEATED_TS]);
	if (s->reads)
		snprintf(c->whole_what, sizeof(c->whole_what), "%" PRIu64 " entries, none lost", s->entries);
	else
		snprintf(c->whole_what, sizeof(c->whole_what), "%" PRIu64 " events, no native fence log",
			 s->stats.events);
	nf_log_summary_destroy(s);
	return 0;
}

const struct nf_importer nf_importer_ctf = {
	.name = "ctf",
	.session_is = ctf_session_is,
	.build = ctf_build,
	.info = ctf_info,
	.check = ctf_check,
};
