/*
 * What the ETW importer tells of its sessions (etw_report.h): the summary
 * read back from the timeline, printed for `nftrace info`, and the source's
 * part of `nftrace check`.
 */
#include "etw_report.h"
#include "etw_session.h"
#include "../importers_int.h"
#include "contract/errors.h"
#include "contract/etl.h"
#include "contract/session.h"

#include <inttypes.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


void nf_etw_summary_free(struct nf_etw_summary *s)
{
	if (!s)
		return;
	free(s->providers);
	s->providers = NULL;
	s->n_providers = 0;
}

static void col_text(sqlite3_stmt *s, int i, char *out, size_t cap)
{
	const unsigned char *t = sqlite3_column_text(s, i);

	snprintf(out, cap, "%s", t ? (const char *)t : "");
}

int nf_etw_summary_read(const char *dir, struct nf_etw_summary *out, struct nf_error *err)
{
	char db_path[PATH_MAX];
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!nf_etw_session_is(dir))
		return nf_error_set(err, NF_EFORMAT, "%s: not an ETW session (no %s)", dir, NF_ETW_CAPTURE_NAME);
	rc = nf_timeline_ensure(dir, db_path, sizeof(db_path), err);
	if (rc)
		return rc;
	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		rc = nf_error_set(err, NF_ESQL, "%s: %s", db_path, db ? sqlite3_errmsg(db) : "cannot open");
		goto out;
	}
	static const char q[] =
		"SELECT (SELECT value FROM meta WHERE key = 'etw_file'), "
		"(SELECT value FROM meta WHERE key = 'etw_os_build'), "
		"(SELECT value FROM meta WHERE key = 'etw_pointer_size') || ' bytes (logfile header); records: ' || "
		"coalesce((SELECT value FROM meta WHERE key = 'etw_record_pointer_sizes'), '?'), "
		"(SELECT value FROM meta WHERE key = 'etw_cpus'), "
		"(SELECT value FROM meta WHERE key = 'etw_clock'), "
		"(SELECT value FROM meta WHERE key = 'etw_clock_frequency'), "
		"(SELECT value FROM meta WHERE key = 'etw_start_time'), "
		"(SELECT value FROM meta WHERE key = 'duration_ns'), "
		"(SELECT value FROM meta WHERE key = 'etw_buffers'), "
		"(SELECT value FROM meta WHERE key = 'etw_buffers_lost'), "
		"(SELECT value FROM meta WHERE key = 'etw_events_lost'), "
		"(SELECT value FROM meta WHERE key = 'etw_buffers_flagged_lost'), "
		"(SELECT value FROM meta WHERE key = 'etw_events'), "
		"(SELECT value FROM meta WHERE key = 'etw_lacks'), "
		"(SELECT count(*) FROM queues), (SELECT count(*) FROM fences), "
		"(SELECT count(*) FROM fence_ops WHERE op = 'wait' AND queue IS NOT NULL), "
		"(SELECT count(*) FROM fence_ops WHERE op = 'signal'), "
		"(SELECT count(*) FROM cpu_waits), "
		"(SELECT count(*) FROM deps WHERE signal_id IS NOT NULL OR cpu_signal IS NOT NULL), "
		"(SELECT count(*) FROM dma_packets), (SELECT count(*) FROM vsyncs), "
		"(SELECT count(*) FROM fence_ops WHERE op = 'wait' AND queue IS NOT NULL AND status = 'pending'), "
		"(SELECT count(*) FROM cpu_waits WHERE status = 'pending'), "
		"(SELECT value FROM meta WHERE key = 'etw_unmatched_unwaits'), "
		"(SELECT coalesce(sum(size_mismatches), 0) FROM etw_counts)";
	if (sqlite3_prepare_v2(db, q, -1, &s, NULL) != SQLITE_OK || sqlite3_step(s) != SQLITE_ROW) {
		rc = nf_error_set(err, NF_ESQL, "%s: %s", db_path, sqlite3_errmsg(db));
		goto out;
	}
	col_text(s, 0, out->source, sizeof(out->source));
	out->os_build = sqlite3_column_int64(s, 1);
	out->pointer_size = sqlite3_column_int64(s, 2);
	col_text(s, 2, out->pointer_sizes, sizeof(out->pointer_sizes));
	out->cpus = sqlite3_column_int64(s, 3);
	col_text(s, 4, out->clock, sizeof(out->clock));
	out->clock_frequency = sqlite3_column_int64(s, 5);
	col_text(s, 6, out->start_time, sizeof(out->start_time));
	out->duration_ns = sqlite3_column_int64(s, 7);
	out->buffers = sqlite3_column_int64(s, 8);
	out->buffers_lost = sqlite3_column_int64(s, 9);
	out->events_lost = sqlite3_column_int64(s, 10);
	out->lost_flag_buffers = sqlite3_column_int64(s, 11);
	out->events = sqlite3_column_int64(s, 12);
	col_text(s, 13, out->lacks, sizeof(out->lacks));
	out->queues = sqlite3_column_int64(s, 14);
	out->fences = sqlite3_column_int64(s, 15);
	out->waits = sqlite3_column_int64(s, 16);
	out->signals = sqlite3_column_int64(s, 17);
	out->cpu_waits = sqlite3_column_int64(s, 18);
	out->deps = sqlite3_column_int64(s, 19);
	out->dma_packets = sqlite3_column_int64(s, 20);
	out->vsyncs = sqlite3_column_int64(s, 21);
	out->waits_pending = sqlite3_column_int64(s, 22);
	out->cpu_waits_pending = sqlite3_column_int64(s, 23);
	out->waits_unmatched_unwaits = sqlite3_column_int64(s, 24);
	out->size_mismatches = sqlite3_column_int64(s, 25);
	sqlite3_finalize(s);
	s = NULL;
	/* Which mismatched events are fence-related: the table says. */
	if (sqlite3_prepare_v2(db, "SELECT event_id, size_mismatches FROM etw_counts "
			       "WHERE name = 'Microsoft-Windows-DxgKrnl' AND size_mismatches > 0", -1, &s,
			       NULL) != SQLITE_OK) {
		rc = nf_error_set(err, NF_ESQL, "%s: %s", db_path, sqlite3_errmsg(db));
		goto out;
	}
	while (sqlite3_step(s) == SQLITE_ROW) {
		const struct nf_etl_dxg_event_info *ei =
			nf_etl_dxg_event_info((uint16_t)sqlite3_column_int(s, 0));

		if (ei && (ei->flags & NF_DXG_FENCE))
			out->fence_size_mismatches += sqlite3_column_int64(s, 1);
	}
	sqlite3_finalize(s);
	s = NULL;
	if (sqlite3_prepare_v2(db, "SELECT provider, coalesce(max(name), ''), sum(events), sum(size_mismatches) "
			       "FROM etw_counts GROUP BY provider ORDER BY sum(events) DESC, provider", -1, &s,
			       NULL) != SQLITE_OK) {
		rc = nf_error_set(err, NF_ESQL, "%s: %s", db_path, sqlite3_errmsg(db));
		goto out;
	}
	while (sqlite3_step(s) == SQLITE_ROW) {
		struct nf_etw_provider_count *np = realloc(out->providers, (out->n_providers + 1) * sizeof(*np));

		if (!np) {
			rc = nf_error_set(err, NF_ENOMEM, "info: out of memory");
			goto out;
		}
		out->providers = np;
		np += out->n_providers++;
		col_text(s, 0, np->provider, sizeof(np->provider));
		col_text(s, 1, np->name, sizeof(np->name));
		np->events = (uint64_t)sqlite3_column_int64(s, 2);
		np->size_mismatches = (uint64_t)sqlite3_column_int64(s, 3);
	}
out:
	sqlite3_finalize(s);
	sqlite3_close(db);
	if (rc)
		nf_etw_summary_free(out);
	return rc;
}

/* The ETW summary as one JSON object (integers; durations in ns; lacks as a list). */
static void print_json(FILE *out, const char *dir, const struct nf_etw_summary *es)
{
	char lacks[sizeof(es->lacks)];
	char *tok, *save = NULL;
	int first = 1;

	fputs("{\"session\": ", out);
	nf_imp_put_json(out, dir);
	fputs(", \"kind\": \"etw\", \"mode\": \"etw-import\", \"source\": ", out);
	nf_imp_put_json(out, es->source);
	fprintf(out, ", \"os_build\": %" PRId64 ", \"pointer_size\": %" PRId64 ", \"pointer_sizes\": ", es->os_build,
	       es->pointer_size);
	nf_imp_put_json(out, es->pointer_sizes);
	fprintf(out, ", \"cpus\": %" PRId64 ", \"clock\": ", es->cpus);
	nf_imp_put_json(out, es->clock);
	fprintf(out, ", \"clock_frequency_hz\": %" PRId64 ", \"start_time\": ", es->clock_frequency);
	nf_imp_put_json(out, es->start_time);
	fprintf(out, ", \"duration_ns\": %" PRId64 ", \"buffers\": %" PRId64 ", \"lost\": {\"events\": %" PRId64
	       ", \"buffers\": %" PRId64 ", \"buffers_flagged\": %" PRId64 "}, \"lacks\": [",
	       es->duration_ns, es->buffers, es->events_lost, es->buffers_lost, es->lost_flag_buffers);
	snprintf(lacks, sizeof(lacks), "%s", es->lacks);
	for (tok = strtok_r(lacks, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		fputs(first ? "" : ", ", out);
		first = 0;
		nf_imp_put_json(out, tok);
	}
	fprintf(out, "], \"timeline\": {\"queues\": %" PRId64 ", \"fences\": %" PRId64 ", \"gpu_waits\": %" PRId64
	       ", \"signals\": %" PRId64 ", \"cpu_waits\": %" PRId64 ", \"deps\": %" PRId64
	       ", \"dma_packets\": %" PRId64 ", \"vsyncs\": %" PRId64 "}, \"events\": %" PRId64
	       ", \"providers\": [", es->queues, es->fences, es->waits, es->signals, es->cpu_waits, es->deps,
	       es->dma_packets, es->vsyncs, es->events);
	for (size_t i = 0; i < es->n_providers; i++) {
		fputs(i ? ", {\"provider\": " : "{\"provider\": ", out);
		nf_imp_put_json(out, es->providers[i].provider);
		fputs(", \"name\": ", out);
		nf_imp_put_json(out, es->providers[i].name);
		fprintf(out, ", \"events\": %" PRIu64 ", \"size_mismatches\": %" PRIu64 "}", es->providers[i].events,
		       es->providers[i].size_mismatches);
	}
	fputs("]}\n", out);
}

/* An imported Windows ETW capture: what the file says and what it holds. */
int nf_etw_info(const char *dir, bool json, FILE *out, struct nf_error *err)
{
	struct nf_etw_summary es;

	if (nf_etw_summary_read(dir, &es, err))
		return err->code;
	if (json) {
		print_json(out, dir, &es);
		nf_etw_summary_free(&es);
		return 0;
	}
	fputs("session:        ", out);
	nf_imp_put_clean(out, dir);
	fputc('\n', out);
	fputs("source:         Windows ETW capture ", out);
	nf_imp_put_clean(out, es.source);
	fprintf(out, "\nOS build:       %" PRId64 "\n", es.os_build);
	fprintf(out, "pointer size:   %s\n", es.pointer_sizes);
	fprintf(out, "CPUs:           %" PRId64 "\n", es.cpus);
	fprintf(out, "clock:          %s, %" PRId64 " Hz\n", es.clock, es.clock_frequency);
	fprintf(out, "started:        %s\n", es.start_time);
	fprintf(out, "duration:       %.6f s\n", (double)es.duration_ns / 1e9);
	fprintf(out, "buffers:        %" PRId64 "\n", es.buffers);
	fprintf(out, "lost:           %" PRId64 " events, %" PRId64 " buffers; %" PRId64 " buffers flagged lost\n",
	       es.events_lost, es.buffers_lost, es.lost_flag_buffers);
	fprintf(out, "lacks:          %s\n", es.lacks[0] ? es.lacks : "nothing");
	if (strstr(es.lacks, "kernel"))
		fprintf(out, "                (no NT kernel events: no process or thread names, no context switches)\n");
	if (strstr(es.lacks, "dxgkrnl"))
		fprintf(out, "                (no Microsoft-Windows-DxgKrnl events: no GPU timeline, only raw events)\n");
	if (strstr(es.lacks, "rundown"))
		fprintf(out, "                (no adapter/device/context rundown: contexts are named by node and handle,\n"
		       "                 their node taken from the scheduler's SelectContext events)\n");
	fprintf(out, "timeline:       %" PRId64 " queues, %" PRId64 " fences, %" PRId64 " GPU waits, %" PRId64
	       " signals, %" PRId64 " CPU waits, %" PRId64 " waits tied to their signal, %" PRId64
	       " DMA packets, %" PRId64 " VSyncs\n", es.queues, es.fences, es.waits, es.signals, es.cpu_waits,
	       es.deps, es.dma_packets, es.vsyncs);
	fprintf(out, "events:         %" PRId64 "\n", es.events);
	for (size_t i = 0; i < es.n_providers; i++) {
		fprintf(out, "  %-36s ", es.providers[i].provider);
		nf_imp_put_clean(out, es.providers[i].name[0] ? es.providers[i].name : "-");
		fprintf(out, " %" PRIu64, es.providers[i].events);
		if (es.providers[i].size_mismatches)
			fprintf(out, " (%" PRIu64 " of a size no layout has)", es.providers[i].size_mismatches);
		fputc('\n', out);
	}
	nf_etw_summary_free(&es);
	return 0;
}


/*
 * The ETW part of check: what was lost, DxgKrnl payloads of a size no layout
 * has, waits never released. Illegal: a fence-related event whose size
 * matches no layout (its rows are missing from the timeline); legal
 * anomalies: lost events or buffers, size mismatches, waits still open at
 * the end.
 */
int nf_etw_check(const char *dir, struct nf_source_check *c, struct nf_error *err)
{
	struct nf_etw_summary es;
	char *text = NULL, *json = NULL;
	size_t tn = 0, jn = 0;
	FILE *t, *j;

	if (nf_etw_summary_read(dir, &es, err))
		return err->code;
	t = open_memstream(&text, &tn);
	j = t ? open_memstream(&json, &jn) : NULL;
	if (!t || !j) {
		if (t)
			fclose(t);
		free(text);
		nf_etw_summary_free(&es);
		return nf_error_set(err, NF_ENOMEM, "check: out of memory");
	}
	fputs("session ", t);
	nf_imp_put_clean(t, dir);
	fprintf(t, ": Windows ETW capture, %" PRId64 " events\n", es.events);
	fprintf(t, "lost:                     %" PRId64 " events, %" PRId64 " buffers (logfile header); "
		"%" PRId64 " buffers flagged lost\n", es.events_lost, es.buffers_lost, es.lost_flag_buffers);
	fprintf(t, "DxgKrnl size mismatches:  %" PRId64 " (%" PRId64 " fence-related)\n", es.size_mismatches,
		es.fence_size_mismatches);
	fprintf(t, "GPU waits never released: %" PRId64 " of %" PRId64 " (no end before the capture ended)\n",
		es.waits_pending, es.waits);
	fprintf(t, "CPU waits never released: %" PRId64 " of %" PRId64 "\n", es.cpu_waits_pending, es.cpu_waits);
	fprintf(t, "unwaits without a wait:   %" PRId64 " (their wait packet was queued before the capture)\n",
		es.waits_unmatched_unwaits);
	fprintf(j, ",\n  \"events\": %" PRId64 ",\n"
		"  \"events_lost\": %" PRId64 ",\n  \"buffers_lost\": %" PRId64 ",\n"
		"  \"buffers_flagged_lost\": %" PRId64 ",\n  \"size_mismatches\": %" PRId64 ",\n"
		"  \"fence_size_mismatches\": %" PRId64 ",\n  \"waits_never_released\": %" PRId64 ",\n"
		"  \"cpu_waits_never_released\": %" PRId64 ",\n  \"unwaits_without_wait\": %" PRId64,
		es.events, es.events_lost, es.buffers_lost, es.lost_flag_buffers, es.size_mismatches,
		es.fence_size_mismatches, es.waits_pending, es.cpu_waits_pending, es.waits_unmatched_unwaits);
	fclose(t);
	fclose(j);
	c->text = text;
	c->json = json;
	c->illegal = (uint64_t)es.fence_size_mismatches;
	snprintf(c->illegal_what, sizeof(c->illegal_what),
		 "%" PRId64 " fence-related events whose size matches no layout", es.fence_size_mismatches);
	c->legal = (uint64_t)(es.events_lost + es.buffers_lost + es.lost_flag_buffers + es.size_mismatches +
			      es.waits_pending + es.cpu_waits_pending);
	snprintf(c->legal_what, sizeof(c->legal_what),
		 "%" PRId64 " events and %" PRId64 " buffers lost, %" PRId64 " buffers flagged lost, %" PRId64
		 " size mismatches, %" PRId64 " waits still open when the capture ended",
		 es.events_lost, es.buffers_lost, es.lost_flag_buffers, es.size_mismatches,
		 es.waits_pending + es.cpu_waits_pending);
	snprintf(c->whole_what, sizeof(c->whole_what), "%" PRId64 " events, none lost", es.events);
	nf_etw_summary_free(&es);
	return 0;
}
