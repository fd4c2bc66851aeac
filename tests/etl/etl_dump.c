/*
 * nf-etl-dump: prints what etl/ reads from an ETL file, for tests (the
 * count comparison with tests/etl/etl_count.py) and for looking at captures.
 *
 *   nf-etl-dump [--file-order] [--header] [--counts] [--events] [--decode] FILE
 *   nf-etl-dump --table     the reference schemas/dxgkrnl.md, from schemas/dxgkrnl.def
 *
 * --header  the logfile facts, one "key value" per line
 * --counts  one line per (provider, id, version): "provider<TAB>id<TAB>version<TAB>events",
 *           provider a GUID or "kernel" for records without one; with --decode
 *           also decoded, size mismatches, unknown versions, not in table
 * --events  one line per record (time order unless --file-order); with
 *           --decode the DxgKrnl fields by name
 * Exit 0, or 1 with the reader's message on stderr.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "contract/etl.h"

static void print_header(const struct nf_etl_logfile *lf)
{
	printf("buffer_size %u\nos_version %u.%u.%u.%u\nos_build %u\ncpus %u\npointer_size %u\n"
	       "header_pointer_size %u\nclock_type %u\nperf_freq %" PRIu64 "\ncpu_mhz %u\n"
	       "tick_freq %" PRIu64 "\nstart_filetime %" PRId64 "\nend_filetime %" PRId64 "\n"
	       "start_ticks %" PRId64 "\nend_ticks %" PRId64 "\nevents_lost %u\nbuffers_lost %u\n"
	       "buffers_written %u\nbuffers %" PRIu64 "\nempty_buffers %" PRIu64 "\n"
	       "buffers_flag_events_lost %" PRIu64 "\nbuffers_flag_buffer_lost %" PRIu64 "\n"
	       "cpus_seen %u\nlogger_name %s\nlog_file_name %s\n",
	       lf->buffer_size, lf->version[0], lf->version[1], lf->version[2], lf->version[3],
	       lf->os_build, lf->cpus, lf->pointer_size, lf->header_pointer_size, lf->clock_type,
	       lf->perf_freq, lf->cpu_mhz, lf->tick_freq, lf->start_filetime, lf->end_filetime,
	       lf->start_ticks, lf->end_ticks, lf->events_lost, lf->buffers_lost, lf->buffers_written,
	       lf->buffers, lf->empty_buffers, lf->buffers_flag_events_lost,
	       lf->buffers_flag_buffer_lost, lf->cpus_seen, lf->logger_name, lf->log_file_name);
}

static void print_dxg(const struct nf_etl_dxg_record *rec)
{
	const struct nf_etl_dxg_event_info *ei = nf_etl_dxg_event_info_by_event(rec->event);
	printf(" %s", rec->name);
	for (uint32_t i = 0; i < rec->nfields; i++) {
		const struct nf_etl_dxg_field_info *fi = &ei->fields[i];
		if (!rec->f[i].present)
			continue;
		if (fi->type == NF_DXG_PTR_ARRAY || fi->type == NF_DXG_U64_ARRAY) {
			printf(" %s=[", fi->name);
			for (uint32_t k = 0; k < rec->f[i].u; k++)
				printf("%s0x%" PRIx64, k ? "," : "", nf_etl_dxg_elem(rec, i, k));
			printf("]");
		} else if (fi->type == NF_DXG_WSTR) {
			char s[256];
			nf_etl_dxg_wstr(rec, i, s, sizeof(s));
			printf(" %s=\"%s\"", fi->name, s);
		} else if (fi->type == NF_DXG_BIN || fi->type == NF_DXG_GUID) {
			printf(" %s=<%" PRIu64 " bytes>", fi->name, rec->f[i].u);
		} else if (fi->type == NF_DXG_PTR) {
			printf(" %s=0x%" PRIx64, fi->name, rec->f[i].u);
		} else {
			printf(" %s=%" PRIu64, fi->name, rec->f[i].u);
		}
	}
}

/* The DxgKrnl table as markdown (schemas/dxgkrnl.md; a test keeps it current). */
static int print_table(void)
{
	printf("# Microsoft-Windows-DxgKrnl events decoded from ETW captures\n\n"
	       "Generated from `schemas/dxgkrnl.def` by `nf-etl-dump --table` (tests/etl); the test\n"
	       "`etl_dxgkrnl_doc` fails when this file is stale. Provider GUID\n"
	       "`802ec45a-1e99-4b83-9920-87c98277ba9d`. A payload is decoded field by field within its\n"
	       "size; arrays (`ptr[]`, `u64[]`) and `bytes` take their length from the field named in\n"
	       "brackets; `ptr` is 4 or 8 bytes by the record's header type (not the logfile header's\n"
	       "pointer size); `bool` is 4 bytes; `wstr` is NUL-terminated UTF-16LE. A field marked\n"
	       "`since vN` is absent from older versions. The payload must end where the layout does;\n"
	       "otherwise the verdict is a size mismatch and nothing is decoded (a version newer than\n"
	       "the table's may be longer: fields are appended). Fence-related events (F) are those a\n"
	       "size mismatch of which `nftrace check` reports.\n\n");
	printf("| id | versions | event | F | fields | meaning |\n|---|---|---|---|---|---|\n");
	for (int e = 1; e < NF_DXG_EV_COUNT; e++) {
		const struct nf_etl_dxg_event_info *ei = nf_etl_dxg_event_info_by_event(e);
		printf("| %u | %u", ei->id, ei->min_version);
		if (ei->max_version != ei->min_version)
			printf("-%u", ei->max_version);
		printf(" | %s | %s | ", ei->name, ei->flags & NF_DXG_FENCE ? "F" : "");
		for (uint32_t i = 0; i < ei->nfields; i++) {
			const struct nf_etl_dxg_field_info *fi = &ei->fields[i];
			printf("%s%s %s", i ? ", " : "", nf_etl_dxg_type_name(fi->type), fi->name);
			if (fi->count_field >= 0)
				printf("[%s]", ei->fields[fi->count_field].name);
			if (fi->since > ei->min_version)
				printf(" (since v%u)", fi->since);
		}
		printf(" | %s |\n", ei->doc);
	}
	return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--table"))
		return print_table();
	unsigned flags = 0;
	bool header = false, counts = false, events = false, decode = false;
	const char *path = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--file-order"))
			flags |= NF_ETL_FILE_ORDER;
		else if (!strcmp(argv[i], "--header"))
			header = true;
		else if (!strcmp(argv[i], "--counts"))
			counts = true;
		else if (!strcmp(argv[i], "--events"))
			events = true;
		else if (!strcmp(argv[i], "--decode"))
			decode = true;
		else if (argv[i][0] == '-' || path) {
			fprintf(stderr, "usage: nf-etl-dump [--file-order] [--header] [--counts] [--events] [--decode] FILE\n");
			return 2;
		} else
			path = argv[i];
	}
	if (!path) {
		fprintf(stderr, "nf-etl-dump: no file\n");
		return 2;
	}
	if (decode)
		flags |= NF_ETL_DECODE_DXGKRNL;
	struct nf_error err = {0};
	struct nf_etl_reader *r;
	if (nf_etl_reader_open(path, flags, &r, &err) < 0) {
		fprintf(stderr, "nf-etl-dump: %s\n", err.msg);
		return 1;
	}
	if (header)
		print_header(nf_etl_reader_logfile(r));
	struct nf_etl_event ev;
	int rc;
	while ((rc = nf_etl_reader_next(r, &ev, &err)) > 0) {
		if (!events)
			continue;
		char g[NF_ETL_GUID_STR] = "kernel";
		if (ev.has_guid)
			nf_etl_guid_format(&ev.provider, g);
		printf("%" PRId64 " cpu%u %s %s id=%u v=%u op=%u pid=%u tid=%u size=%u", ev.ns, ev.cpu,
		       nf_etl_header_kind_name(ev.kind), g, ev.id, ev.version, ev.opcode, ev.pid, ev.tid,
		       ev.payload_size);
		if (ev.dxg)
			print_dxg(ev.dxg);
		else if (ev.dxg_verdict > 0)
			printf(" verdict=%d", ev.dxg_verdict);
		char name[128];
		if (ev.ext && nf_etl_tracelogging_name(&ev, name, sizeof(name)))
			printf(" tl=%s", name);
		printf("\n");
	}
	if (rc < 0) {
		fprintf(stderr, "nf-etl-dump: %s\n", err.msg);
		nf_etl_reader_destroy(r);
		return 1;
	}
	if (counts) {
		const struct nf_etl_count *c;
		uint64_t overflow;
		size_t n = nf_etl_reader_counts(r, &c, &overflow);
		for (size_t i = 0; i < n; i++) {
			char g[NF_ETL_GUID_STR] = "kernel";
			if (c[i].has_guid)
				nf_etl_guid_format(&c[i].provider, g);
			printf("%s\t%u\t%u\t%" PRIu64, g, c[i].id, c[i].version, c[i].events);
			if (decode)
				printf("\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64, c[i].decoded,
				       c[i].size_mismatch, c[i].unknown_version, c[i].not_in_table);
			printf("\n");
		}
	}
	nf_etl_reader_destroy(r);
	return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
}
