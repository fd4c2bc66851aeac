/*
 * Tests of etl/ (include/contract/etl.h): small ETL files from the test writer
 * (etl_writer.h) read back as exact rows — every header type, both pointer
 * sizes, every clock, buffer flags, the merge by time — every DxgKrnl event of
 * schemas/dxgkrnl.def decoded, size mismatches, and hostile files refused
 * with a message naming the file, the buffer and the offset.
 *
 *   test_etl          the writer-based cases
 *   test_etl real     the real captures in ../shared/real-traces (exit 77
 *                     when absent)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etl_writer.h"
#include "nf_test.h"
#include "contract/etl.h"

static const struct nf_etl_guid guid_a = {0x11223344, 0x5566, 0x7788, {0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x00}};
static const struct nf_etl_guid guid_b = {0x0a0b0c0d, 0x0e0f, 0x1011, {1, 2, 3, 4, 5, 6, 7, 8}};

/* One record as a line of text: the fields a test compares. */
static void row(const struct nf_etl_event *ev, char *out, size_t cap)
{
	char g[NF_ETL_GUID_STR] = "-";
	if (ev->has_guid)
		nf_etl_guid_format(&ev->provider, g);
	int n = snprintf(out, cap, "%s/0x%02x ps%u cpu%u ns=%" PRId64 " %s id=%u v=%u op=%u lvl=%u", 
			 nf_etl_header_kind_name(ev->kind), ev->header_type, ev->pointer_size, ev->cpu,
			 ev->ns, g, ev->id, ev->version, ev->opcode, ev->level);
	if (ev->has_ids)
		n += snprintf(out + n, cap - (size_t)n, " pid=%u tid=%u", ev->pid, ev->tid);
	if (ev->ext_size)
		n += snprintf(out + n, cap - (size_t)n, " ext=%u", ev->ext_size);
	n += snprintf(out + n, cap - (size_t)n, " [%u]", ev->payload_size);
	for (uint32_t i = 0; i < ev->payload_size && i < 12 && (size_t)n + 3 < cap; i++)
		n += snprintf(out + n, cap - (size_t)n, " %02x", ev->payload[i]);
}

/* Reads a whole file (in memory) into rows joined by '\n'. */
static int read_rows(const uint8_t *d, size_t n, unsigned flags, char *out, size_t cap, struct nf_error *err)
{
	struct nf_etl_reader *r;
	int rc = nf_etl_reader_open_mem(d, n, "mem.etl", flags, &r, err);
	if (rc < 0)
		return rc;
	struct nf_etl_event ev;
	size_t o = 0;
	out[0] = '\0';
	while ((rc = nf_etl_reader_next(r, &ev, err)) > 0) {
		char line[512];
		row(&ev, line, sizeof(line));
		o += (size_t)snprintf(out + o, cap - o, "%s\n", line);
		ck_assert(o < cap);
	}
	nf_etl_reader_destroy(r);
	return rc;
}

/* ---- the logfile header ------------------------------------------------- */

START_TEST(test_logfile_header)
{
	/* Both pointer sizes of the header record, every clock type. */
	for (unsigned ps = 4; ps <= 8; ps += 4) {
		for (uint32_t clock = 1; clock <= 3; clock++) {
			struct nf_etlw_options o = {
				.buffer_size = 4096, .cpus = 6, .header_pointer_size = ps, .pointer_size = ps,
				.os_build = 19041, .clock_type = clock, .perf_freq = 3119142, .cpu_mhz = 2400,
				.start_filetime = 132007861845783446, .header_ticks = 5000, .events_lost = 7,
				.buffers_lost = 2, .logger_name = "GPUView Session", .log_file_name = "D:\\x\\merged.etl"};
			struct nf_etlw *w = nf_etlw_create(&o);
			struct nf_etlw_event e = {.provider = &guid_a, .id = 1, .cpu = 3, .ticks = 8000, .pointer_size = ps};
			ck_assert_int_eq(nf_etlw_event(w, &e), 0);
			const uint8_t *d;
			size_t n;
			nf_etlw_finish(w, &d, &n);
			struct nf_etl_reader *r;
			struct nf_error err = {0};
			ck_assert_msg(nf_etl_reader_open_mem(d, n, "h.etl", 0, &r, &err) == 0, "%s", err.msg);
			const struct nf_etl_logfile *lf = nf_etl_reader_logfile(r);
			ck_assert_uint_eq(lf->buffer_size, 4096);
			ck_assert_uint_eq(lf->os_build, 19041);
			ck_assert_uint_eq(lf->version[0], 10);
			ck_assert_uint_eq(lf->cpus, 6);
			ck_assert_uint_eq(lf->pointer_size, ps);
			ck_assert_uint_eq(lf->header_pointer_size, ps);
			ck_assert_uint_eq(lf->clock_type, clock);
			ck_assert_uint_eq(lf->perf_freq, 3119142);
			ck_assert_uint_eq(lf->cpu_mhz, 2400);
			ck_assert_uint_eq(lf->tick_freq, clock == 1 ? 3119142u : clock == 2 ? 10000000u : 2400000000u);
			ck_assert_int_eq(lf->start_filetime, 132007861845783446);
			ck_assert_int_eq(lf->end_filetime, 132007861845783446 + 20000000);
			ck_assert_uint_eq(lf->events_lost, 7);
			ck_assert_uint_eq(lf->buffers_lost, 2);
			ck_assert_str_eq(lf->logger_name, "GPUView Session");
			ck_assert_str_eq(lf->log_file_name, "D:\\x\\merged.etl");
			ck_assert_uint_eq(lf->buffers, 2);
			ck_assert_uint_eq(lf->buffers_written, 2);
			ck_assert_uint_eq(lf->cpus_seen, 4);
			ck_assert_int_eq(lf->start_ticks, 5000);
			ck_assert_int_eq(lf->end_ticks, 5000); /* nothing read yet */
			/* The event at 3000 ticks after the start, exactly. */
			struct nf_etl_event ev;
			int k = 0;
			while (nf_etl_reader_next(r, &ev, &err) > 0)
				if (ev.kind == NF_ETL_HDR_EVENT) {
					int64_t want = clock == 1 ? (int64_t)(3000ull * 1000000000ull / 3119142ull)
						       : clock == 2 ? 300000 : 1250;
					ck_assert_int_eq(ev.ns, want);
					k++;
				}
			ck_assert_int_eq(k, 1);
			ck_assert_int_eq(lf->end_ticks, 8000);
			nf_etl_reader_destroy(r);
			nf_etlw_destroy(w);
		}
	}
}
END_TEST

START_TEST(test_ticks_to_ns_exact)
{
	struct nf_etl_logfile lf = {.tick_freq = 3119142, .start_ticks = 746858886363};
	/* 2.17 s of the gpuvis capture: floor((t - start) * 1e9 / f) without drift. */
	ck_assert_int_eq(nf_etl_ticks_to_ns(&lf, 746865658921), 2171288771);
	ck_assert_int_eq(nf_etl_ticks_to_ns(&lf, 746858886363), 0);
	/* Huge tick counts do not overflow. */
	lf.start_ticks = 0;
	lf.tick_freq = 10000000;
	ck_assert_int_eq(nf_etl_ticks_to_ns(&lf, INT64_MAX / 4), INT64_MAX); /* clamped */
	lf.tick_freq = 1000000000;
	ck_assert_int_eq(nf_etl_ticks_to_ns(&lf, INT64_MAX), INT64_MAX);
	ck_assert_int_eq(nf_etl_ticks_to_ns(&lf, -5), -5);
}
END_TEST

/* ---- every header type, exact rows -------------------------------------- */

static void put_all_header_types(struct nf_etlw *w)
{
	const uint8_t pl[] = {0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5};
	/* TraceLogging: item 11 (schema: u16 size, tag byte, name) and 12 (traits: u16 size, name). */
	const uint8_t schema[] = {12, 0, 0x00, 'M', 'a', 'r', 'k', 'e', 'r', 0, 'x', 0};
	const uint8_t traits[] = {9, 0, 'S', 't', 'e', 'a', 'm', 'V', 'R', 0};
	const struct nf_etlw_ext ext[] = {{11, schema, sizeof(schema)}, {12, traits, sizeof(traits)}};
	struct nf_etlw_event e64 = {.provider = &guid_a, .id = 7, .version = 1, .level = 4, .opcode = 9,
				    .pid = 10, .tid = 11, .cpu = 1, .ticks = 2000, .pointer_size = 8,
				    .ext = ext, .ext_n = 2, .payload = pl, .size = 5};
	ck_assert_int_eq(nf_etlw_event(w, &e64), 0);
	struct nf_etlw_event e32 = {.provider = &guid_b, .id = 300, .version = 2, .level = 5, .opcode = 1,
				    .pid = 12, .tid = 13, .cpu = 2, .ticks = 2100, .pointer_size = 4,
				    .payload = pl, .size = 9};
	ck_assert_int_eq(nf_etlw_event(w, &e32), 0);
	/* NT kernel logger: a context switch (SYSTEM64), a thread rundown
	 * (SYSTEM32), a process start (COMPACT64/32), perfinfo (64/32). */
	struct nf_etlw_classic c = {.kind = NF_ETL_HDR_SYSTEM, .pointer_size = 8, .hook_id = 0x0524, .version = 2,
				    .pid = 0, .tid = 20, .cpu = 0, .ticks = 2200, .payload = pl, .size = 4};
	ck_assert_int_eq(nf_etlw_classic(w, &c), 0);
	c.pointer_size = 4; c.hook_id = 0x0503; c.version = 3; c.pid = 21; c.tid = 22; c.ticks = 2300; c.cpu = 1;
	ck_assert_int_eq(nf_etlw_classic(w, &c), 0);
	c.kind = NF_ETL_HDR_COMPACT; c.pointer_size = 8; c.hook_id = 0x0301; c.ticks = 2400; c.cpu = 2;
	ck_assert_int_eq(nf_etlw_classic(w, &c), 0);
	c.pointer_size = 4; c.hook_id = 0x0302; c.ticks = 2500;
	ck_assert_int_eq(nf_etlw_classic(w, &c), 0);
	c.kind = NF_ETL_HDR_PERFINFO; c.pointer_size = 8; c.hook_id = 0x0F2E; c.ticks = 2600; c.cpu = 3;
	ck_assert_int_eq(nf_etlw_classic(w, &c), 0);
	c.pointer_size = 4; c.hook_id = 0x0F2F; c.ticks = 2700; c.size = 0;
	ck_assert_int_eq(nf_etlw_classic(w, &c), 0);
	/* Classic (MOF) providers: FULL and INSTANCE headers, 64 and 32. */
	struct nf_etlw_full f = {.kind = NF_ETL_HDR_FULL, .pointer_size = 8, .guid = &guid_b, .class_type = 33,
				 .class_level = 2, .class_version = 4, .pid = 30, .tid = 31, .cpu = 0, .ticks = 2800,
				 .payload = pl, .size = 3};
	ck_assert_int_eq(nf_etlw_full(w, &f), 0);
	f.pointer_size = 4; f.ticks = 2900; f.class_type = 34;
	ck_assert_int_eq(nf_etlw_full(w, &f), 0);
	f.kind = NF_ETL_HDR_INSTANCE; f.pointer_size = 8; f.ticks = 3000; f.class_type = 35;
	ck_assert_int_eq(nf_etlw_full(w, &f), 0);
	f.pointer_size = 4; f.ticks = 3100; f.class_type = 36;
	ck_assert_int_eq(nf_etlw_full(w, &f), 0);
	/* The rarer kinds: TIMED (own timestamp), ERROR, WNODE, MESSAGE (none). */
	uint8_t timed[20] = {20, 0, 0x0C, 0xC0, 0x42, 0, 0, 0};
	int64_t t = 3200;
	memcpy(timed + 8, &t, 8);
	ck_assert_int_eq(nf_etlw_raw(w, 3, timed, sizeof(timed)), 0);
	for (uint8_t ty = 0x0D; ty <= 0x0F; ty++) {
		uint8_t raw[12] = {12, 0, ty, 0xC0, ty, ty, ty, ty};
		ck_assert_int_eq(nf_etlw_raw(w, 3, raw, sizeof(raw)), 0);
	}
}

START_TEST(test_every_header_type_rows)
{
	struct nf_etlw_options o = {.buffer_size = 4096, .perf_freq = 10000000, .header_ticks = 1000};
	struct nf_etlw *w = nf_etlw_create(&o);
	put_all_header_types(w);
	const uint8_t *d;
	size_t n;
	nf_etlw_finish(w, &d, &n);
	static char got[16384];
	struct nf_error err = {0};
	ck_assert_msg(read_rows(d, n, 0, got, sizeof(got), &err) == 0, "%s", err.msg);
	const char *want =
		"system/0x02 ps8 cpu0 ns=0 - id=0 v=2 op=0 lvl=0 pid=200 tid=100 [344] 00 10 00 00 0a 00 01 05 ee 42 00 00\n"
		"system/0x02 ps8 cpu0 ns=0 - id=80 v=2 op=80 lvl=0 pid=200 tid=100 [48] 00 00 00 00 00 00 00 00 00 00 00 00\n"
		"event/0x13 ps8 cpu1 ns=100000 11223344-5566-7788-99aa-bbccddeeff00 id=7 v=1 op=9 lvl=4 pid=10 tid=11 ext=48 [5] de ad be ef 01\n"
		"event/0x12 ps4 cpu2 ns=110000 0a0b0c0d-0e0f-1011-0102-030405060708 id=300 v=2 op=1 lvl=5 pid=12 tid=13 [9] de ad be ef 01 02 03 04 05\n"
		"system/0x02 ps8 cpu0 ns=120000 - id=1316 v=2 op=36 lvl=0 pid=0 tid=20 [4] de ad be ef\n"
		"system/0x01 ps4 cpu1 ns=130000 - id=1283 v=3 op=3 lvl=0 pid=21 tid=22 [4] de ad be ef\n"
		"compact/0x04 ps8 cpu2 ns=140000 - id=769 v=3 op=1 lvl=0 pid=21 tid=22 [4] de ad be ef\n"
		"compact/0x03 ps4 cpu2 ns=150000 - id=770 v=3 op=2 lvl=0 pid=21 tid=22 [4] de ad be ef\n"
		"perfinfo/0x11 ps8 cpu3 ns=160000 - id=3886 v=3 op=46 lvl=0 [4] de ad be ef\n"
		"perfinfo/0x10 ps4 cpu3 ns=170000 - id=3887 v=3 op=47 lvl=0 [0]\n"
		"full/0x14 ps8 cpu0 ns=180000 0a0b0c0d-0e0f-1011-0102-030405060708 id=33 v=4 op=33 lvl=2 pid=30 tid=31 [3] de ad be\n"
		"full/0x0a ps4 cpu0 ns=190000 0a0b0c0d-0e0f-1011-0102-030405060708 id=34 v=4 op=34 lvl=2 pid=30 tid=31 [3] de ad be\n"
		"instance/0x15 ps8 cpu0 ns=200000 0a0b0c0d-0e0f-1011-0102-030405060708 id=35 v=4 op=35 lvl=2 pid=30 tid=31 [3] de ad be\n"
		"instance/0x0b ps4 cpu0 ns=210000 0a0b0c0d-0e0f-1011-0102-030405060708 id=36 v=4 op=36 lvl=2 pid=30 tid=31 [3] de ad be\n"
		"timed/0x0c ps8 cpu3 ns=220000 - id=66 v=0 op=0 lvl=0 [4] 00 00 00 00\n"
		"error/0x0d ps8 cpu3 ns=220000 - id=0 v=0 op=0 lvl=0 [8] 0d 0d 0d 0d 00 00 00 00\n"
		"wnode/0x0e ps8 cpu3 ns=220000 - id=0 v=0 op=0 lvl=0 [8] 0e 0e 0e 0e 00 00 00 00\n"
		"message/0x0f ps8 cpu3 ns=220000 - id=0 v=0 op=0 lvl=0 [8] 0f 0f 0f 0f 00 00 00 00\n";
	ck_assert_str_eq(got, want);

	/* File order: the same records (header buffer, then the buffers by CPU). */
	static char got2[16384];
	ck_assert_msg(read_rows(d, n, NF_ETL_FILE_ORDER, got2, sizeof(got2), &err) == 0, "%s", err.msg);
	ck_assert_int_eq(nf_test_count_lines(got2), 18);
	ck_assert_str_ne(got2, got);

	/* Extended data: the TraceLogging event and provider names. */
	struct nf_etl_reader *r;
	ck_assert(nf_etl_reader_open_mem(d, n, "x.etl", 0, &r, &err) == 0);
	struct nf_etl_event ev;
	int seen = 0;
	while (nf_etl_reader_next(r, &ev, &err) > 0) {
		if (ev.kind != NF_ETL_HDR_EVENT || ev.ext_size == 0)
			continue;
		char name[64], prov[64];
		ck_assert(nf_etl_tracelogging_name(&ev, name, sizeof(name)));
		ck_assert_str_eq(name, "Marker");
		ck_assert(nf_etl_tracelogging_provider(&ev, prov, sizeof(prov)));
		ck_assert_str_eq(prov, "SteamVR");
		uint32_t pos = 0;
		struct nf_etl_ext_item it;
		int k = 0;
		while (nf_etl_ext_next(&ev, &pos, &it))
			ck_assert_uint_eq(it.type, k++ == 0 ? 11 : 12);
		ck_assert_int_eq(k, 2);
		seen++;
	}
	ck_assert_int_eq(seen, 1);
	/* Counts: one entry per key, kernel records first. */
	const struct nf_etl_count *c;
	uint64_t overflow = 1;
	size_t nc = nf_etl_reader_counts(r, &c, &overflow);
	ck_assert_uint_eq(overflow, 0);
	ck_assert_uint_eq(nc, 16); /* ERROR, WNODE and MESSAGE share (no GUID, id 0, v0) */
	ck_assert(!c[0].has_guid);
	ck_assert_uint_eq(nf_etl_reader_events(r), 18);
	nf_etl_reader_destroy(r);
	nf_etlw_destroy(w);
}
END_TEST

/* ---- the merge by time -------------------------------------------------- */

START_TEST(test_merge_by_time)
{
	/* 3 CPUs, small buffers (many per CPU), interleaved timestamps: the file
	 * order is buffer after buffer as they fill, the output is by time. */
	struct nf_etlw_options o = {.buffer_size = 1024, .perf_freq = 3119142, .header_ticks = 100};
	struct nf_etlw *w = nf_etlw_create(&o);
	uint8_t pl[16] = {0};
	for (uint32_t i = 0; i < 600; i++) {
		uint16_t cpu = (uint16_t)((i * 7) % 3);
		memcpy(pl, &i, 4);
		struct nf_etlw_event e = {.provider = &guid_a, .id = (uint16_t)(i % 5), .cpu = cpu,
					  .ticks = 1000 + (int64_t)i * 3 + (cpu == 2 ? 1 : 0), .payload = pl,
					  .size = cpu == 1 ? 16 : 8};
		ck_assert_int_eq(nf_etlw_event(w, &e), 0);
	}
	const uint8_t *d;
	size_t n;
	nf_etlw_finish(w, &d, &n);
	ck_assert_uint_gt(nf_etlw_buffers(w), 50);
	struct nf_etl_reader *r;
	struct nf_error err = {0};
	ck_assert_msg(nf_etl_reader_open_mem(d, n, "m.etl", 0, &r, &err) == 0, "%s", err.msg);
	struct nf_etl_event ev;
	int64_t prev = INT64_MIN;
	uint32_t next = 0;
	int rc;
	while ((rc = nf_etl_reader_next(r, &ev, &err)) > 0) {
		ck_assert_int_ge(ev.ticks, prev);
		prev = ev.ticks;
		if (ev.kind != NF_ETL_HDR_EVENT)
			continue;
		uint32_t i;
		memcpy(&i, ev.payload, 4);
		ck_assert_uint_eq(i, next); /* written in time order: read back in that order */
		ck_assert_uint_eq(ev.cpu, (i * 7) % 3);
		ck_assert_int_eq(ev.ns, (int64_t)((uint64_t)(ev.ticks - 100) * 1000000000ull / 3119142ull));
		next++;
	}
	ck_assert_int_eq(rc, 0);
	ck_assert_uint_eq(next, 600);
	nf_etl_reader_destroy(r);
	nf_etlw_destroy(w);
}
END_TEST

/* ---- lost events and buffers ------------------------------------------- */

START_TEST(test_lost_flags)
{
	struct nf_etlw_options o = {.buffer_size = 1024, .events_lost = 5, .buffers_lost = 3};
	struct nf_etlw *w = nf_etlw_create(&o);
	struct nf_etlw_event e = {.provider = &guid_a, .id = 1, .cpu = 0, .ticks = 2000};
	ck_assert_int_eq(nf_etlw_event(w, &e), 0);
	nf_etlw_flag(w, 0, 0x2);       /* events lost */
	e.cpu = 1;
	ck_assert_int_eq(nf_etlw_event(w, &e), 0);
	nf_etlw_flag(w, 1, 0x2 | 0x4); /* both */
	e.cpu = 2;
	ck_assert_int_eq(nf_etlw_event(w, &e), 0);
	nf_etlw_flag(w, 2, 0x4);       /* buffer lost */
	nf_etlw_flag(w, 3, 0x2);       /* an empty buffer that says events were lost */
	const uint8_t *d;
	size_t n;
	nf_etlw_finish(w, &d, &n);
	struct nf_etl_reader *r;
	struct nf_error err = {0};
	ck_assert_msg(nf_etl_reader_open_mem(d, n, "l.etl", 0, &r, &err) == 0, "%s", err.msg);
	const struct nf_etl_logfile *lf = nf_etl_reader_logfile(r);
	ck_assert_uint_eq(lf->buffers, 5);
	ck_assert_uint_eq(lf->empty_buffers, 1);
	ck_assert_uint_eq(lf->buffers_flag_events_lost, 3);
	ck_assert_uint_eq(lf->buffers_flag_buffer_lost, 2);
	ck_assert_uint_eq(lf->events_lost, 5);
	ck_assert_uint_eq(lf->buffers_lost, 3);
	nf_etl_reader_destroy(r);
	nf_etlw_destroy(w);
}
END_TEST

/* ---- hostile files ------------------------------------------------------ */

/* A good file of 4 buffers of 1024 bytes: header, then CPUs 0, 1, 2. */
static uint8_t *good_file(size_t *n)
{
	struct nf_etlw_options o = {.buffer_size = 1024};
	struct nf_etlw *w = nf_etlw_create(&o);
	uint8_t pl[24] = {1, 2, 3};
	for (uint16_t cpu = 0; cpu < 3; cpu++) {
		struct nf_etlw_event e = {.provider = &nf_etl_guid_dxgkrnl, .id = 999, .cpu = cpu,
					  .ticks = 2000 + cpu, .payload = pl, .size = sizeof(pl)};
		ck_assert_int_eq(nf_etlw_event(w, &e), 0);
		e.ticks += 10;
		ck_assert_int_eq(nf_etlw_event(w, &e), 0);
	}
	const uint8_t *d;
	nf_etlw_finish(w, &d, n);
	ck_assert_uint_eq(*n, 4096);
	uint8_t *copy = malloc(*n);
	memcpy(copy, d, *n);
	nf_etlw_destroy(w);
	return copy;
}

/* Opens and reads d to its end; returns the first error code (0 if none)
 * and its message in msg. */
static int try_read(const uint8_t *d, size_t n, char *msg, size_t cap)
{
	struct nf_etl_reader *r;
	struct nf_error err = {0};
	int rc = nf_etl_reader_open_mem(d, n, "bad.etl", NF_ETL_DECODE_DXGKRNL, &r, &err);
	if (rc == 0) {
		struct nf_etl_event ev;
		while ((rc = nf_etl_reader_next(r, &ev, &err)) > 0)
			;
		/* After an error the reader repeats it; the counts stay readable. */
		if (rc < 0)
			ck_assert_int_eq(nf_etl_reader_next(r, &ev, &err), rc);
		const struct nf_etl_count *c;
		uint64_t total = 0;
		size_t nc = nf_etl_reader_counts(r, &c, NULL);
		for (size_t i = 0; i < nc; i++)
			total += c[i].events;
		ck_assert_uint_eq(total, nf_etl_reader_events(r));
		nf_etl_reader_destroy(r);
	}
	snprintf(msg, cap, "%s", err.msg);
	return rc;
}

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }

struct hostile {
	const char *what;
	int code;
	const char *msg[3]; /* substrings the message must hold */
};

START_TEST(test_hostile_files)
{
	size_t n;
	uint8_t *g = good_file(&n);
	char msg[NF_ERROR_MSG_MAX];
	ck_assert_int_eq(try_read(g, n, msg, sizeof(msg)), 0);

	static const struct hostile cases[] = {
		{"truncated in a buffer", NF_EFORMAT, {"bad.etl", "truncated: buffer 2 (offset 2048)", "1000 of its 1024"}},
		{"truncated in a buffer header", NF_EFORMAT, {"bad.etl", "truncated: buffer 3 at offset 3072", "40 of its 72"}},
		{"buffer size lies (huge)", NF_EFORMAT, {"bad.etl", "buffer 2 (offset 2048)", "its size 2147483648"}},
		{"buffer size lies (small)", NF_EFORMAT, {"bad.etl", "buffer 1 (offset 1024)", "its size 64"}},
		{"buffer size lies (past the end)", NF_EFORMAT, {"bad.etl", "truncated: buffer 3 (offset 3072)", "of its 2048"}},
		{"records end lies", NF_EFORMAT, {"bad.etl", "buffer 1 (offset 1024)", "records end (offset field 0x30) at 5000"}},
		{"event size runs past its buffer", NF_EFORMAT, {"bad.etl", "buffer 2 (offset 2048), record at +176", "size 4000 runs past"}},
		{"event size below its header", NF_EFORMAT, {"bad.etl", "buffer 1 (offset 1024), record at +72", "too small for its header type 0x13"}},
		{"unknown header type", NF_EUNSUPP, {"bad.etl", "buffer 3 (offset 3072), record at +72", "unknown header type 0x42"}},
		{"not a trace header", NF_EUNSUPP, {"bad.etl", "buffer 3 (offset 3072), record at +176", "not a trace header"}},
		{"extended data runs past", NF_EFORMAT, {"bad.etl", "buffer 1 (offset 1024), record at +72", "extended data item"}},
		{"compressed", NF_EUNSUPP, {"bad.etl", "buffer 2 (offset 2048)", "compressed"}},
		{"not an ETL (text)", NF_EFORMAT, {"bad.etl", "not an ETL file", ""}},
		{"not an ETL (too short)", NF_EFORMAT, {"bad.etl", "not an ETL file", "100 bytes"}},
		{"bad clock type", NF_EFORMAT, {"bad.etl", "buffer 0 (offset 0), record at +72", "clock type 9"}},
		{"the earliest record lies (nothing read before the error)", NF_EFORMAT,
		 {"bad.etl", "buffer 1 (offset 1024), record at +72", "too small for its header type 0x13"}},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t *b = malloc(n);
		memcpy(b, g, n);
		size_t len = n;
		switch (i) {
		case 0: len = 2048 + 1000; break;
		case 1: len = 3072 + 40; break;
		case 2: put32(b + 2048, 0x80000000u); break;
		case 3: put32(b + 1024, 64); break;
		case 4: put32(b + 3072, 2048); break;
		case 5: put32(b + 1024 + 0x30, 5000); break;
		case 6: put16(b + 2048 + 176, 4000); break; /* the second record's size */
		case 7: put16(b + 1024 + 72, 40); break;
		case 8: b[3072 + 72 + 2] = 0x42; break;
		case 9: b[3072 + 176 + 3] = 0x00; break;
		case 10: /* claims extended data: the payload's bytes read as an item of 5000 bytes */
			put16(b + 1024 + 72 + 4, 1);
			put16(b + 1024 + 72 + 80 + 6, 5000);
			break;
		case 11: b[2048 + 0x34] |= 0x40; break;
		case 12: memcpy(b, "this is a text file, not a capture\n", 35); memset(b + 35, 'x', n - 35); break;
		case 13: len = 100; memset(b, 0, 100); break;
		case 14: { /* ReservedFlags of the logfile header: 8 bytes before BuffersLost */
			uint32_t hdr_payload = 72 + 32;
			uint32_t boot = (56 + 16 + 172 + 7) & ~7u;
			put32(b + hdr_payload + boot + 24, 9);
			break;
		}
		case 15: { /* stamped before the logfile header, so the merge reads it first */
			int64_t early = 1;
			memcpy(b + 1024 + 72 + 16, &early, 8);
			put16(b + 1024 + 72, 40);
			break;
		}
		}
		int rc = try_read(b, len, msg, sizeof(msg));
		ck_assert_msg(rc == cases[i].code, "%s: code %d, want %d (%s)", cases[i].what, rc, cases[i].code, msg);
		for (int k = 0; k < 3; k++)
			ck_assert_msg(strstr(msg, cases[i].msg[k]) != NULL, "%s: message \"%s\" lacks \"%s\"",
				      cases[i].what, msg, cases[i].msg[k]);
		ck_assert_msg(strchr(msg, '\n') == NULL, "%s: one line", cases[i].what);
		free(b);
	}
	free(g);
}
END_TEST

START_TEST(test_open_errors)
{
	struct nf_etl_reader *r = (void *)1;
	struct nf_error err = {0};
	ck_assert_int_eq(nf_etl_reader_open("/nonexistent/x.etl", 0, &r, &err), NF_ENOENT);
	ck_assert_ptr_null(r);
	ck_assert(strstr(err.msg, "/nonexistent/x.etl") != NULL);
	nf_error_clear(&err);
	ck_assert_int_eq(nf_etl_reader_open("/", 0, &r, &err), NF_EFORMAT);
	nf_error_clear(&err);
	/* A real file on disk reads like the same bytes in memory. */
	char dir[256], path[512];
	nf_test_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/a.etl", dir);
	size_t n;
	uint8_t *g = good_file(&n);
	FILE *f = fopen(path, "wb");
	ck_assert(f && fwrite(g, 1, n, f) == n && fclose(f) == 0);
	ck_assert_msg(nf_etl_reader_open(path, 0, &r, &err) == 0, "%s", err.msg);
	struct nf_etl_event ev;
	int k = 0;
	while (nf_etl_reader_next(r, &ev, &err) > 0)
		k++;
	ck_assert_int_eq(k, 8);
	nf_etl_reader_destroy(r);
	nf_etl_reader_destroy(NULL);
	ck_assert(nf_etl_probe(g, n));
	ck_assert(!nf_etl_probe(g, 50));
	uint8_t text[200];
	memset(text, 'x', sizeof(text));
	ck_assert(!nf_etl_probe(text, sizeof(text)));
	free(g);
	nf_test_rmtree(dir);
}
END_TEST

/* ---- DxgKrnl ------------------------------------------------------------ */

/* The value the generic test puts in field i of an event (distinct per field). */
static uint64_t gen_value(int type, uint32_t i, unsigned ps)
{
	switch (type) {
	case NF_DXG_U8: return 0x10 + i;
	case NF_DXG_U16: return 0x1000 + i;
	case NF_DXG_U32: case NF_DXG_I32: return 0x10000000u + i;
	case NF_DXG_BOOL: return i & 1;
	case NF_DXG_PTR: return ps == 4 ? 0x80000000u + i * 16 : 0xffff840500000000ull + i * 16;
	default: return 0x0100000000000000ull + i;
	}
}

/* Builds the payload of event ei at version v with every count 2 and every
 * field its gen_value; returns it in b. */
static void gen_payload(const struct nf_etl_dxg_event_info *ei, uint8_t v, unsigned ps, struct nf_etlw_buf *b)
{
	b->pointer_size = ps;
	for (uint32_t i = 0; i < ei->nfields; i++) {
		const struct nf_etl_dxg_field_info *fi = &ei->fields[i];
		if (fi->since > v)
			continue;
		bool is_count = false;
		for (uint32_t k = i + 1; k < ei->nfields; k++)
			if (ei->fields[k].count_field == (int)i)
				is_count = true;
		uint64_t val = is_count ? 2 : gen_value(fi->type, i, ps);
		switch (fi->type) {
		case NF_DXG_U8: nf_etlw_put_u8(b, (uint8_t)val); break;
		case NF_DXG_U16: nf_etlw_put_u16(b, (uint16_t)val); break;
		case NF_DXG_U32: case NF_DXG_I32: case NF_DXG_BOOL: nf_etlw_put_u32(b, (uint32_t)val); break;
		case NF_DXG_U64: case NF_DXG_I64: nf_etlw_put_u64(b, val); break;
		case NF_DXG_PTR: nf_etlw_put_ptr(b, val); break;
		case NF_DXG_GUID: nf_etlw_put_bytes(b, &guid_a, 16); break;
		case NF_DXG_WSTR: nf_etlw_put_wstr(b, "3D engine"); break;
		case NF_DXG_BIN: nf_etlw_put_bytes(b, "\x01\x02", 2); break;
		case NF_DXG_PTR_ARRAY: nf_etlw_put_ptr(b, 0xA0 + i); nf_etlw_put_ptr(b, 0xB0 + i); break;
		case NF_DXG_U64_ARRAY: nf_etlw_put_u64(b, 0xC0 + i); nf_etlw_put_u64(b, 0xD0 + i); break;
		default: ck_abort_msg("type %d", fi->type);
		}
	}
}

START_TEST(test_dxgkrnl_every_event)
{
	/* Every event of the table, every version it describes plus one newer
	 * (8 trailing bytes), both pointer sizes, written in an ETL and read back
	 * decoded: every field equals what was written. */
	struct nf_etlw_options o = {.buffer_size = 65536};
	struct nf_etlw *w = nf_etlw_create(&o);
	int written = 0;
	int64_t t = 2000;
	for (int e = 1; e < NF_DXG_EV_COUNT; e++) {
		const struct nf_etl_dxg_event_info *ei = nf_etl_dxg_event_info_by_event(e);
		ck_assert_ptr_nonnull(ei);
		ck_assert_ptr_eq(nf_etl_dxg_event_info(ei->id), ei);
		for (unsigned ps = 4; ps <= 8; ps += 4)
			for (int v = ei->min_version; v <= ei->max_version + 1; v++) {
				struct nf_etlw_buf b = {0};
				gen_payload(ei, (uint8_t)v, ps, &b);
				if (v > ei->max_version)
					nf_etlw_put_u64(&b, 0x5555);
				struct nf_etlw_event ev = {.provider = &nf_etl_guid_dxgkrnl, .id = ei->id,
							   .version = (uint8_t)v, .cpu = (uint16_t)(e % 4), .ticks = t++,
							   .pointer_size = ps, .payload = b.p, .size = (uint32_t)b.n};
				ck_assert_int_eq(nf_etlw_event(w, &ev), 0);
				nf_etlw_buf_free(&b);
				written++;
			}
	}
	const uint8_t *d;
	size_t n;
	nf_etlw_finish(w, &d, &n);
	struct nf_etl_reader *r;
	struct nf_error err = {0};
	ck_assert_msg(nf_etl_reader_open_mem(d, n, "dxg.etl", NF_ETL_DECODE_DXGKRNL, &r, &err) == 0, "%s", err.msg);
	struct nf_etl_event ev;
	int decoded = 0;
	while (nf_etl_reader_next(r, &ev, &err) > 0) {
		if (ev.kind != NF_ETL_HDR_EVENT)
			continue;
		ck_assert_msg(ev.dxg_verdict == NF_ETL_DXG_OK, "id %u v%u ps%u: verdict %d", ev.id, ev.version,
			      ev.pointer_size, ev.dxg_verdict);
		const struct nf_etl_dxg_record *rec = ev.dxg;
		const struct nf_etl_dxg_event_info *ei = nf_etl_dxg_event_info(ev.id);
		ck_assert_int_eq(rec->event, ei->event);
		ck_assert_str_eq(rec->name, ei->name);
		ck_assert_uint_eq(rec->trailing, ev.version > ei->max_version ? 8 : 0);
		for (uint32_t i = 0; i < ei->nfields; i++) {
			const struct nf_etl_dxg_field_info *fi = &ei->fields[i];
			const struct nf_etl_dxg_value *val = &rec->f[i];
			ck_assert_int_eq(val->present, fi->since <= ev.version);
			if (!val->present)
				continue;
			bool is_count = false;
			for (uint32_t k = i + 1; k < ei->nfields; k++)
				if (ei->fields[k].count_field == (int)i)
					is_count = true;
			switch (fi->type) {
			case NF_DXG_PTR_ARRAY:
				ck_assert_uint_eq(val->u, 2);
				ck_assert_uint_eq(nf_etl_dxg_elem(rec, i, 0), 0xA0 + i);
				ck_assert_uint_eq(nf_etl_dxg_elem(rec, i, 1), 0xB0 + i);
				ck_assert_uint_eq(nf_etl_dxg_elem(rec, i, 2), 0);
				break;
			case NF_DXG_U64_ARRAY:
				ck_assert_uint_eq(val->u, 2);
				ck_assert_uint_eq(nf_etl_dxg_elem(rec, i, 0), 0xC0 + i);
				ck_assert_uint_eq(nf_etl_dxg_elem(rec, i, 1), 0xD0 + i);
				break;
			case NF_DXG_WSTR: {
				char s[64];
				ck_assert_uint_eq(nf_etl_dxg_wstr(rec, i, s, sizeof(s)), 9);
				ck_assert_str_eq(s, "3D engine");
				break;
			}
			case NF_DXG_BIN:
				ck_assert_uint_eq(val->u, 2);
				ck_assert_mem_eq(val->p, "\x01\x02", 2);
				break;
			case NF_DXG_GUID:
				ck_assert_mem_eq(val->p, &guid_a, 16);
				break;
			default:
				ck_assert_uint_eq(val->u, is_count ? 2 : gen_value(fi->type, i, ev.pointer_size));
			}
		}
		decoded++;
	}
	ck_assert_int_eq(decoded, written);
	/* Counts: every DxgKrnl key decoded, nothing else. */
	const struct nf_etl_count *c;
	size_t nc = nf_etl_reader_counts(r, &c, NULL);
	uint64_t sum = 0;
	for (size_t i = 0; i < nc; i++)
		if (c[i].has_guid) {
			ck_assert_uint_eq(c[i].decoded, c[i].events);
			sum += c[i].decoded;
		}
	ck_assert_uint_eq(sum, (uint64_t)written);
	nf_etl_reader_destroy(r);
	nf_etlw_destroy(w);
}
END_TEST

/* Formats a decoded record as "Name f=v ..." (arrays [a,b], strings "..."). */
static void dxg_row(const struct nf_etl_dxg_record *rec, char *out, size_t cap)
{
	const struct nf_etl_dxg_event_info *ei = nf_etl_dxg_event_info_by_event(rec->event);
	int n = snprintf(out, cap, "%s", rec->name);
	for (uint32_t i = 0; i < rec->nfields; i++) {
		const struct nf_etl_dxg_field_info *fi = &ei->fields[i];
		if (!rec->f[i].present)
			continue;
		n += snprintf(out + n, cap - (size_t)n, " %s=", fi->name);
		if (fi->type == NF_DXG_PTR_ARRAY || fi->type == NF_DXG_U64_ARRAY) {
			n += snprintf(out + n, cap - (size_t)n, "[");
			for (uint32_t k = 0; k < rec->f[i].u; k++)
				n += snprintf(out + n, cap - (size_t)n, "%s%" PRIx64, k ? "," : "", nf_etl_dxg_elem(rec, i, k));
			n += snprintf(out + n, cap - (size_t)n, "]");
		} else if (fi->type == NF_DXG_WSTR) {
			char s[64];
			nf_etl_dxg_wstr(rec, i, s, sizeof(s));
			n += snprintf(out + n, cap - (size_t)n, "\"%s\"", s);
		} else if (fi->type == NF_DXG_BIN) {
			for (uint32_t k = 0; k < rec->f[i].u; k++)
				n += snprintf(out + n, cap - (size_t)n, "%02x", rec->f[i].p[k]);
		} else {
			n += snprintf(out + n, cap - (size_t)n, "%" PRIx64, rec->f[i].u);
		}
	}
}

struct dxg_case {
	uint16_t id;
	uint8_t version;
	unsigned ps;
	const char *hex;   /* the payload bytes */
	int verdict;
	const char *want;  /* the decoded row, for NF_ETL_DXG_OK */
};

static size_t unhex(const char *h, uint8_t *out)
{
	size_t n = 0;
	while (h[0] && h[1]) {
		if (h[0] == ' ') {
			h++;
			continue;
		}
		unsigned v;
		sscanf(h, "%2x", &v);
		out[n++] = (uint8_t)v;
		h += 2;
	}
	return n;
}

START_TEST(test_dxgkrnl_exact_rows)
{
	/* Payload bytes written by hand, as the gpuvis capture has them (build
	 * 17134, 64-bit) and in 32-bit form, with the rows they decode to. */
	static const struct dxg_case cases[] = {
		/* 244 v1: hContext, SubmitSequence, Flags, hSyncObject, FenceValue, pQueuePacket (40 bytes) */
		{244, 1, 8, "6072f8ef87d6ffff 97040000 00000000 5082c98b0584ffff 1203000000000000 1010ef8f0584ffff",
		 0, "QueuePacketStart244 hContext=ffffd687eff87260 SubmitSequence=497 Flags=0 hSyncObject=ffff84058bc98250 FenceValue=312 pQueuePacket=ffff84058fef1010"},
		/* 244 v2 adds DxgSyncObject */
		{244, 2, 4, "10203040 05000000 01000000 50607080 0900000000000000 a0b0c0d0 e0f00010",
		 0, "QueuePacketStart244 hContext=40302010 SubmitSequence=5 Flags=1 hSyncObject=80706050 FenceValue=9 pQueuePacket=d0c0b0a0 DxgSyncObject=1000f0e0"},
		/* 245 v2, one object (44 bytes) and none (28) */
		{245, 2, 8, "1008fd890584ffff 4d249f00 00000000 01000000 602aef890584ffff 27d23e0001000000 10b03e910584ffff",
		 0, "QueuePacketStart245 hContext=ffff840589fd0810 SubmitSequence=9f244d Flags=0 ObjectCount=1 ObjectArray=[ffff840589ef2a60] FenceValue=[1003ed227] pQueuePacket=ffff8405913eb010"},
		{245, 2, 8, "1008fd890584ffff 4d249f00 00000000 00000000 10b03e910584ffff",
		 0, "QueuePacketStart245 hContext=ffff840589fd0810 SubmitSequence=9f244d Flags=0 ObjectCount=0 ObjectArray=[] FenceValue=[] pQueuePacket=ffff8405913eb010"},
		/* 245 v3, 32-bit, two objects, with DxgSyncObjectArray */
		{245, 3, 4, "01000000 02000000 00000000 02000000 aa000000 bb000000 0500000000000000 0600000000000000 cc000000 dd000000 ee000000",
		 0, "QueuePacketStart245 hContext=1 SubmitSequence=2 Flags=0 ObjectCount=2 ObjectArray=[aa,bb] FenceValue=[5,6] pQueuePacket=cc DxgSyncObjectArray=[dd,ee]"},
		/* 238 */
		{238, 0, 8, "1020ab9e0584ffff 6072f8ef87d6ffff",
		 0, "UnwaitQueuePacket QueuePacket=ffff84059eab2010 hContext=ffffd687eff87260"},
		/* 294 v0: two contexts, one fence (44 bytes) */
		{294, 0, 8, "02000000 507e59dd87d6ffff 701c5d0c88d6ffff 00000000 01000000 309c27890584ffff 60cd310000000000",
		 0, "SignalSynchronizationObjectFromGpu ContextCount=2 hContext=[ffffd687dd597e50,ffffd6880c5d1c70] Flags=0 ObjectCount=1 ObjectArray=[ffff840589279c30] MonitoredFenceValue=[31cd60]"},
		/* 300 v0 (32 bytes) */
		{300, 0, 8, "e01f5e970584ffff 01000000 faee0c0000000000 603df1890584ffff 00000000",
		 0, "UnwaitCpuWaiter Event=ffff8405975e1fe0 WaitConditionCount=1 FenceValues=[ceefa] SyncObjects=[ffff840589f13d60] Flags=0"},
		/* 250 NodeMetadata: a UTF-16 name */
		{250, 0, 8, "00609e890584ffff 02000000 00000000 33004400 0000",
		 0, "NodeMetadata pDxgAdapter=ffff8405899e6000 NodeOrdinal=2 EngineType=0 FriendlyName=\"3D\""},
		/* 432 SchedulingLog: binary of SchedulingLogSize bytes */
		{432, 0, 4, "01000000 00000000 01000000 0a00000000000000 1400000000000000 1e00000000000000 2800000000000000 03000000 abcdef",
		 0, "SchedulingLog hAdapter=1 NodeOrdinal=0 EngineOrdinal=1 CpuTimestamp0=a GpuTimestamp0=14 CpuTimestamp1=1e GpuTimestamp1=28 SchedulingLogSize=3 SchedulingLogData=abcdef"},
		/* 17 VSyncDPC: I64 */
		{17, 0, 8, "00609e890584ffff 04030000 9aaa2a0000000000 00000000 57602e02 ded0e0e4ad000000 0000000000000000 00000000 0000000000000000",
		 0, "VSyncDPC pDxgAdapter=ffff8405899e6000 VidPnTargetId=304 ScannedPhysicalAddress=2aaa9a VidPnSourceId=0 FrameNumber=22e6057 FrameQPCTime=ade4e0d0de hFlipDevice=0 FlipType=0 FlipFenceId=0"},
		/* 24 AdapterStart: U8 fields */
		{24, 0, 4, "01000000 02000000 03000000 0400000000000000 05000000 0600000000000000 07000000 08000000 09000000 0a000000 0b000000 0c000000 0d000000 0e000000 0f000000 10 11 12 13 14000000 15000000 16000000 17000000 18000000 19000000 1a000000 1b000000 1c000000 1d00000000000000",
		 0, "AdapterStart pDeviceObject=1 pDxgAdapter=2 NbVidPnSources=3 HighestAcceptableAddress=4 MaxSlotId=5 ApertureSegmentCommitLimit=6 MaxPointerWidth=7 MaxPointerHeight=8 InterruptMessageNumber=9 NumberOfSwizzlingRanges=a MaxOverlays=b MaxQueuedFlipOnVSync=c PointerCaps=d GammaRampCaps=e PresentationCaps=f AlignmentShift=10 MaxTextureWidthShift=11 MaxTextureHeightShift=12 Reserved=13 FlipCaps=14 SchedulingCaps=15 ReservedMemoryManagementCaps=16 PagingNode=17 NbAsymetricProcessingNodes=18 ReservedTopology=19 NumPowerComponents=1a AdapterType=1b pMiniportContext=1c VirtualGpuLuid=1d"},
		/* Size mismatches: 4 bytes short, 8 bytes long, an array count past
		 * the end, a name without its NUL; older than the table; not in it. */
		{244, 1, 8, "6072f8ef87d6ffff 97040000 00000000 5082c98b0584ffff 1203000000000000 1010ef8f", NF_ETL_DXG_SIZE_MISMATCH, NULL},
		{238, 0, 8, "1020ab9e0584ffff 6072f8ef87d6ffff 0000000000000000", NF_ETL_DXG_SIZE_MISMATCH, NULL},
		{245, 2, 8, "1008fd890584ffff 4d249f00 00000000 ffffffff 602aef890584ffff", NF_ETL_DXG_SIZE_MISMATCH, NULL},
		{250, 0, 8, "00609e890584ffff 02000000 00000000 33004400", NF_ETL_DXG_SIZE_MISMATCH, NULL},
		{244, 0, 8, "6072f8ef87d6ffff", NF_ETL_DXG_UNKNOWN_VERSION, NULL},
		{105, 0, 8, "00000000", NF_ETL_DXG_NOT_IN_TABLE, NULL},
		/* A version newer than the table's: decoded, the rest counted. */
		{238, 1, 4, "01000000 02000000 03000000", NF_ETL_DXG_OK, "UnwaitQueuePacket QueuePacket=1 hContext=2"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t pl[512];
		size_t n = unhex(cases[i].hex, pl);
		struct nf_etl_dxg_record rec;
		int v = nf_etl_dxg_decode(cases[i].id, cases[i].version, pl, (uint32_t)n, cases[i].ps, &rec);
		ck_assert_msg(v == cases[i].verdict, "case %zu (id %u): verdict %d, want %d", i, cases[i].id, v,
			      cases[i].verdict);
		if (v != NF_ETL_DXG_OK)
			continue;
		char got[1024];
		dxg_row(&rec, got, sizeof(got));
		ck_assert_str_eq(got, cases[i].want);
		ck_assert_uint_eq(rec.trailing, cases[i].version > nf_etl_dxg_event_info(cases[i].id)->max_version ? 4 : 0);
	}
	/* The generated constants name the table's fields. */
	ck_assert_int_eq(NF_DXGF_WAIT_PACKET_START_hSyncObject, 3);
	ck_assert_int_eq(NF_DXGF_SIGNAL_PACKET_START_FenceValue, 5);
	ck_assert_str_eq(nf_etl_dxg_event_info(245)->fields[NF_DXGF_SIGNAL_PACKET_START_pQueuePacket].name, "pQueuePacket");
	ck_assert(nf_etl_dxg_event_info(244)->flags & NF_DXG_FENCE);
	ck_assert(!(nf_etl_dxg_event_info(23)->flags & NF_DXG_FENCE));
	/* Pointer sizes other than 4 and 8 are not decoded. */
	struct nf_etl_dxg_record rec;
	ck_assert_int_eq(nf_etl_dxg_decode(238, 0, "12345678", 8, 2, &rec), NF_ETL_DXG_SIZE_MISMATCH);
}
END_TEST

START_TEST(test_dxgkrnl_counts_mismatch)
{
	/* Verdicts are counted per (id, version) by the reader. */
	struct nf_etlw *w = nf_etlw_create(NULL);
	uint8_t pl[48] = {0};
	struct nf_etlw_event e = {.provider = &nf_etl_guid_dxgkrnl, .id = 238, .cpu = 0, .ticks = 2000,
				  .payload = pl, .size = 16};
	ck_assert_int_eq(nf_etlw_event(w, &e), 0);
	e.size = 12; e.ticks++;
	ck_assert_int_eq(nf_etlw_event(w, &e), 0);
	e.size = 24; e.ticks++;
	ck_assert_int_eq(nf_etlw_event(w, &e), 0);
	e.id = 105; e.ticks++;
	ck_assert_int_eq(nf_etlw_event(w, &e), 0);
	e.id = 244; e.version = 0; e.ticks++;
	ck_assert_int_eq(nf_etlw_event(w, &e), 0);
	e.provider = &guid_a; e.id = 238; e.ticks++; /* another provider: not decoded */
	ck_assert_int_eq(nf_etlw_event(w, &e), 0);
	const uint8_t *d;
	size_t n;
	nf_etlw_finish(w, &d, &n);
	struct nf_etl_reader *r;
	struct nf_error err = {0};
	ck_assert(nf_etl_reader_open_mem(d, n, "c.etl", NF_ETL_DECODE_DXGKRNL, &r, &err) == 0);
	struct nf_etl_event ev;
	while (nf_etl_reader_next(r, &ev, &err) > 0)
		if (ev.has_guid && !nf_etl_guid_eq(&ev.provider, &nf_etl_guid_dxgkrnl))
			ck_assert_int_eq(ev.dxg_verdict, -1);
	const struct nf_etl_count *c;
	size_t nc = nf_etl_reader_counts(r, &c, NULL);
	char all[1024];
	size_t o = 0;
	for (size_t i = 0; i < nc; i++) {
		if (!c[i].has_guid)
			continue;
		o += (size_t)snprintf(all + o, sizeof(all) - o, "%08x %u v%u: %" PRIu64 " ok %" PRIu64 " mism %" PRIu64
				      " unkv %" PRIu64 " nit %" PRIu64 " sizes %u-%u\n", c[i].provider.data1, c[i].id, c[i].version,
				      c[i].events, c[i].decoded, c[i].size_mismatch, c[i].unknown_version, c[i].not_in_table,
				      c[i].min_size, c[i].max_size);
	}
	ck_assert_str_eq(all,
			 "11223344 238 v0: 1 ok 0 mism 0 unkv 0 nit 0 sizes 24-24\n"
			 "802ec45a 105 v0: 1 ok 0 mism 0 unkv 0 nit 1 sizes 24-24\n"
			 "802ec45a 238 v0: 3 ok 1 mism 2 unkv 0 nit 0 sizes 12-24\n"
			 "802ec45a 244 v0: 1 ok 0 mism 0 unkv 1 nit 0 sizes 24-24\n");
	nf_etl_reader_destroy(r);
	nf_etlw_destroy(w);
}
END_TEST

/* ---- the real captures -------------------------------------------------- */

START_TEST(test_real_gpuvis)
{
	char path[1024];
	nf_test_source_path(path, sizeof(path), "../shared/real-traces/gpuvis-windows.etl");
	struct nf_etl_reader *r;
	struct nf_error err = {0};
	ck_assert_msg(nf_etl_reader_open(path, NF_ETL_DECODE_DXGKRNL, &r, &err) == 0, "%s", err.msg);
	const struct nf_etl_logfile *lf = nf_etl_reader_logfile(r);
	ck_assert_uint_eq(lf->os_build, 17134);
	ck_assert_uint_eq(lf->cpus, 8);
	ck_assert_uint_eq(lf->header_pointer_size, 4);
	ck_assert_uint_eq(lf->clock_type, NF_ETL_CLOCK_QPC);
	ck_assert_uint_eq(lf->perf_freq, 3119142);
	ck_assert_uint_eq(lf->buffers, 345);
	ck_assert_uint_eq(lf->buffers_flag_events_lost + lf->buffers_flag_buffer_lost, 0);
	ck_assert_str_eq(lf->logger_name, "WinTraceCmdSession");
	struct nf_etl_event ev;
	int rc;
	int64_t prev = INT64_MIN;
	uint64_t backwards = 0, ev64 = 0;
	while ((rc = nf_etl_reader_next(r, &ev, &err)) > 0) {
		if (ev.ns < prev)
			backwards++;
		prev = ev.ns;
		if (ev.kind == NF_ETL_HDR_EVENT && ev.pointer_size == 8)
			ev64++;
	}
	ck_assert_msg(rc == 0, "%s", err.msg);
	ck_assert_uint_eq(backwards, 0);
	ck_assert_uint_eq(nf_etl_reader_events(r), 211035);
	ck_assert_uint_eq(ev64, 211033);
	/* No fence-related event of a size the table does not describe; every
	 * fence-related event id the capture has is decoded. */
	const struct nf_etl_count *c;
	size_t nc = nf_etl_reader_counts(r, &c, NULL);
	uint64_t fence_events = 0, fence_ids = 0;
	for (size_t i = 0; i < nc; i++) {
		if (!c[i].has_guid || !nf_etl_guid_eq(&c[i].provider, &nf_etl_guid_dxgkrnl))
			continue;
		const struct nf_etl_dxg_event_info *ei = nf_etl_dxg_event_info(c[i].id);
		if (!ei)
			continue;
		ck_assert_msg(c[i].size_mismatch == 0 && c[i].unknown_version == 0 && c[i].decoded == c[i].events,
			      "DxgKrnl %u v%u: %" PRIu64 " events, %" PRIu64 " decoded, %" PRIu64 " size mismatches",
			      c[i].id, c[i].version, c[i].events, c[i].decoded, c[i].size_mismatch);
		if (ei->flags & NF_DXG_FENCE) {
			fence_events += c[i].events;
			fence_ids++;
		}
	}
	/* 175-180, 230, 231, 238, 244, 245, 294, 295, 297, 300 are in the capture. */
	ck_assert_uint_eq(fence_ids, 15);
	ck_assert_uint_gt(fence_events, 30000);
	nf_etl_reader_destroy(r);
}
END_TEST

START_TEST(test_real_public)
{
	/* Other providers, TraceLogging, the kernel logger's classic headers:
	 * read to the end (none of them is refused). */
	static const char *files[] = {"AMSITrace.etl", "ShutdownPerfDiagLogger.etl", "lxcore_kernel.etl", "powershell.etl"};
	static const uint64_t records[] = {21, 17078, 4, 114};
	for (size_t i = 0; i < 4; i++) {
		char rel[256], path[1024];
		snprintf(rel, sizeof(rel), "../shared/real-traces/public-etl/%s", files[i]);
		nf_test_source_path(path, sizeof(path), rel);
		struct nf_etl_reader *r;
		struct nf_error err = {0};
		ck_assert_msg(nf_etl_reader_open(path, NF_ETL_DECODE_DXGKRNL, &r, &err) == 0, "%s", err.msg);
		struct nf_etl_event ev;
		int rc;
		uint64_t classic = 0, tl = 0;
		while ((rc = nf_etl_reader_next(r, &ev, &err)) > 0) {
			if (ev.kind == NF_ETL_HDR_SYSTEM || ev.kind == NF_ETL_HDR_PERFINFO)
				classic++;
			char name[64];
			if (nf_etl_tracelogging_name(&ev, name, sizeof(name)))
				tl++;
		}
		ck_assert_msg(rc == 0, "%s", err.msg);
		ck_assert_uint_eq(nf_etl_reader_events(r), records[i]);
		if (i == 1)
			ck_assert_uint_eq(classic, 17078);
		if (i == 0)
			ck_assert_uint_eq(tl, 19);
		nf_etl_reader_destroy(r);
	}
}
END_TEST

static Suite *etl_suite(bool real)
{
	Suite *s = suite_create("etl");
	TCase *tc = tcase_create(real ? "real" : "writer");
	tcase_set_timeout(tc, 120);
	if (real) {
		tcase_add_test(tc, test_real_gpuvis);
		tcase_add_test(tc, test_real_public);
	} else {
		tcase_add_test(tc, test_logfile_header);
		tcase_add_test(tc, test_ticks_to_ns_exact);
		tcase_add_test(tc, test_every_header_type_rows);
		tcase_add_test(tc, test_merge_by_time);
		tcase_add_test(tc, test_lost_flags);
		tcase_add_test(tc, test_hostile_files);
		tcase_add_test(tc, test_open_errors);
		tcase_add_test(tc, test_dxgkrnl_every_event);
		tcase_add_test(tc, test_dxgkrnl_exact_rows);
		tcase_add_test(tc, test_dxgkrnl_counts_mismatch);
	}
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	bool real = argc > 1 && !strcmp(argv[1], "real");
	if (argc > 1 && !real) {
		fprintf(stderr, "usage: test_etl [real]\n");
		return 2;
	}
	if (real) {
		char path[1024];
		nf_test_source_path(path, sizeof(path), "../shared/real-traces/gpuvis-windows.etl");
		if (access(path, R_OK) != 0) {
			printf("SKIPPED: %s is absent (real captures are not part of the project)\n", path);
			return 77;
		}
	}
	return nf_test_main(etl_suite(real));
}
