/*
 * `nftrace import capture.etl`: small ETW captures made with the ETL test
 * writer (tests/etl/etl_writer.h) go through the import and their timeline
 * rows must be exactly what the events say (both pointer sizes; queue packets,
 * DMA packets, a multi-context signal, an unwait stamped before its wait, CPU
 * waits and signals, VSync, another provider, a lost-events buffer); a damaged
 * capture leaves nothing behind; and on the real capture of
 * ../shared/real-traces (skipped with a message when it is absent) the waits
 * end at their unwaits and 99 % of the waits whose signal is in the capture
 * are tied to it.
 */
#include "nf_test.h"

#include "etl_writer.h"
#include "contract/etl.h"
#include "contract/session.h"
#include "layout.h"

#include <cairo.h>

#include <dirent.h>
#include <math.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <signal.h>
#include <sys/stat.h>

#define OUT_MAX (1 << 20)
static char out[OUT_MAX], errb[OUT_MAX];

/* Runs nftrace with args (no shell), its output in out and errb: the exit status. */
static int nft(const char *const args[])
{
	return nf_test_nftrace_run(args, out, sizeof(out), errb, sizeof(errb));
}

/* A shell script with its paths as "$1"... and nftrace as "$NF" (nf_test_sh). */
static int sh(const char *script, const char *const args[])
{
	return nf_test_sh(script, args, out, sizeof(out), errb, sizeof(errb));
}

/* The rows of sql on the session's timeline, "a|b|c\n" each, NULL as "". */
static char *rows(const char *session, const char *sql)
{
	char db[4300];
	sqlite3 *h = NULL;
	sqlite3_stmt *st = NULL;
	size_t n = 0, cap = 1 << 16;
	char *buf = malloc(cap);

	ck_assert(buf != NULL);
	buf[0] = '\0';
	snprintf(db, sizeof(db), "%s/.timeline.db", session);
	ck_assert_int_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	ck_assert_msg(sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(h));
	while (sqlite3_step(st) == SQLITE_ROW) {
		for (int i = 0; i < sqlite3_column_count(st); i++) {
			const unsigned char *t = sqlite3_column_text(st, i);
			size_t need = (t ? strlen((const char *)t) : 0) + 2;

			if (n + need + 1 > cap) {
				cap = (n + need + 1) * 2;
				buf = realloc(buf, cap);
				ck_assert(buf != NULL);
			}
			n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? "|" : "", t ? (const char *)t : "");
		}
		if (n + 2 > cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			ck_assert(buf != NULL);
		}
		buf[n++] = '\n';
		buf[n] = '\0';
	}
	sqlite3_finalize(st);
	sqlite3_close(h);
	return buf;
}

static void expect_rows(const char *session, const char *sql, const char *expect)
{
	char *got = rows(session, sql);

	ck_assert_msg(strcmp(got, expect) == 0, "%s\n--- got:\n%s--- expected:\n%s", sql, got, expect);
	free(got);
}

/* ---- the fixture ---- */

static const struct nf_etl_guid other_provider = { 0x8f8f13b1, 0x60eb, 0x4b6a,
						   { 0xa4, 0x33, 0xde, 0x86, 0x10, 0x41, 0x15, 0xac } };

enum {
	ADAPTER = 0xA000, CTX_A = 0xC0A, CTX_B = 0xC0B, CTX_C = 0xC0C, SYNC = 0x5000, SYNC2 = 0x5002,
	DEVICE = 0xDE0, EVENT = 0xE0E,
	PQ1 = 0x9001, PQ2 = 0x9002, PQ3 = 0x9003, PQ5 = 0x9005, PQ6 = 0x9006, PQ7 = 0x9007,
	PQ8 = 0x9008, PQ9 = 0x9009,
};

struct fx {
	struct nf_etlw *w;
	unsigned ps;
	uint32_t pid;  /* of the next DxgKrnl events; 0: 4 (System) */
};

static void dxg(struct fx *f, uint16_t id, uint8_t version, uint16_t cpu, uint32_t tid, int64_t ticks,
		struct nf_etlw_buf *b)
{
	struct nf_etlw_event e;

	memset(&e, 0, sizeof(e));
	e.provider = &nf_etl_guid_dxgkrnl;
	e.id = id;
	e.version = version;
	e.pid = f->pid ? f->pid : 4;
	e.tid = tid;
	e.cpu = cpu;
	e.ticks = ticks;
	e.pointer_size = f->ps;
	e.payload = b->p;
	e.size = (uint32_t)b->n;
	ck_assert_int_eq(nf_etlw_event(f->w, &e), 0);
	nf_etlw_buf_free(b);
}

static struct nf_etlw_buf B(const struct fx *f)
{
	struct nf_etlw_buf b;

	memset(&b, 0, sizeof(b));
	b.pointer_size = f->ps;
	return b;
}

static void select_context(struct fx *f, int64_t t, uint64_t ctx, uint32_t node)
{
	struct nf_etlw_buf b = B(f);

	nf_etlw_put_ptr(&b, ADAPTER);
	nf_etlw_put_ptr(&b, ctx);
	nf_etlw_put_u32(&b, node);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_u64(&b, 0);
	nf_etlw_put_u64(&b, 0);
	dxg(f, 23, 0, 0, 0, t, &b);
}

static void render_packet(struct fx *f, int64_t t, uint64_t ctx, uint32_t seq, uint64_t pq)
{
	struct nf_etlw_buf b = B(f);

	nf_etlw_put_ptr(&b, ctx);
	nf_etlw_put_u32(&b, 1);     /* PacketType */
	nf_etlw_put_u32(&b, seq);
	nf_etlw_put_u64(&b, 4096);  /* DmaBufferSize */
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_u32(&b, 1);     /* bPresent */
	nf_etlw_put_ptr(&b, 0xD0D0);
	nf_etlw_put_ptr(&b, pq);
	nf_etlw_put_u64(&b, 0);
	dxg(f, 178, 1, 0, 100, t, &b);
}

static void signal_packet(struct fx *f, int64_t t, uint16_t cpu, uint64_t ctx, uint32_t seq, uint64_t sync,
			  uint64_t value, uint64_t pq)
{
	struct nf_etlw_buf b = B(f);

	nf_etlw_put_ptr(&b, ctx);
	nf_etlw_put_u32(&b, seq);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_u32(&b, 1);
	nf_etlw_put_ptr(&b, sync);
	nf_etlw_put_u64(&b, value);
	nf_etlw_put_ptr(&b, pq);
	dxg(f, 245, 2, cpu, 100, t, &b);
}

static void wait_packet(struct fx *f, int64_t t, uint16_t cpu, uint64_t ctx, uint32_t seq, uint64_t sync,
			uint64_t value, uint64_t pq)
{
	struct nf_etlw_buf b = B(f);

	nf_etlw_put_ptr(&b, ctx);
	nf_etlw_put_u32(&b, seq);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_ptr(&b, sync);
	nf_etlw_put_u64(&b, value);
	nf_etlw_put_ptr(&b, pq);
	dxg(f, 244, 1, cpu, 200, t, &b);
}

static void packet_stop(struct fx *f, int64_t t, uint16_t cpu, uint64_t ctx, uint32_t seq, uint64_t pq)
{
	struct nf_etlw_buf b = B(f);

	nf_etlw_put_ptr(&b, ctx);
	nf_etlw_put_u32(&b, 1);
	nf_etlw_put_u32(&b, seq);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_ptr(&b, pq);
	dxg(f, 180, 1, cpu, 0, t, &b);
}

static void unwait(struct fx *f, int64_t t, uint16_t cpu, uint64_t ctx, uint64_t pq)
{
	struct nf_etlw_buf b = B(f);

	nf_etlw_put_ptr(&b, pq);
	nf_etlw_put_ptr(&b, ctx);
	dxg(f, 238, 0, cpu, 0, t, &b);
}

/* Objects and values as 296/297 carry them: count, pointers, values. */
static void objects(struct nf_etlw_buf *b, uint64_t sync, uint64_t value)
{
	nf_etlw_put_u32(b, 1);
	nf_etlw_put_ptr(b, sync);
	nf_etlw_put_u64(b, value);
}

/* Leaves the CPU signal (296) out of the fixture: deps then take their GPU-only path. */
static bool fixture_no_cpu_signal;

static void write_fixture(const char *path, unsigned ps)
{
	struct nf_etlw_options o;
	struct nf_etlw_buf b;
	struct fx f;

	memset(&o, 0, sizeof(o));
	o.cpus = 2;
	o.perf_freq = 10000000; /* 100 ns per tick */
	o.header_ticks = 1000;
	o.header_pointer_size = ps;
	f.w = nf_etlw_create(&o);
	f.ps = ps;
	f.pid = 0;
	ck_assert(f.w != NULL);
	select_context(&f, 1000, CTX_A, 0);
	select_context(&f, 1010, CTX_B, 1);
	select_context(&f, 1020, CTX_C, 0);
	render_packet(&f, 1100, CTX_A, 1, PQ1);
	signal_packet(&f, 1200, 0, CTX_A, 2, SYNC, 5, PQ2);
	wait_packet(&f, 1300, 1, CTX_B, 1, SYNC, 5, PQ3);
	/* DMA packet 77 of context A: start, interrupt, stop. */
	b = B(&f);
	nf_etlw_put_ptr(&b, CTX_A);
	nf_etlw_put_ptr(&b, CTX_A);
	nf_etlw_put_u32(&b, 1);
	nf_etlw_put_u64(&b, 77);
	nf_etlw_put_u32(&b, 1);
	nf_etlw_put_ptr(&b, 0xD0D0);
	nf_etlw_put_u32(&b, 0);
	dxg(&f, 175, 1, 0, 0, 1400, &b);
	b = B(&f);
	nf_etlw_put_ptr(&b, CTX_A);
	nf_etlw_put_u32(&b, 1);
	nf_etlw_put_u64(&b, 77);
	nf_etlw_put_u32(&b, 1);
	nf_etlw_put_u32(&b, 1);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_u64(&b, 0);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_ptr(&b, 0);
	dxg(&f, 177, 1, 0, 0, 1500, &b);
	b = B(&f);
	nf_etlw_put_ptr(&b, CTX_A);
	nf_etlw_put_u32(&b, 1);
	nf_etlw_put_u64(&b, 77);
	nf_etlw_put_u32(&b, 1);
	nf_etlw_put_u32(&b, 0);
	dxg(&f, 176, 0, 0, 0, 1510, &b);
	packet_stop(&f, 1520, 0, CTX_A, 1, PQ1);
	/* The wait is released 1 us before its signal's stop is stamped. */
	unwait(&f, 1600, 1, CTX_B, PQ3);
	packet_stop(&f, 1610, 0, CTX_A, 2, PQ2);
	packet_stop(&f, 1620, 1, CTX_B, 1, PQ3);
	/* An unwait stamped on CPU 0 1 us before its wait was stamped on CPU 1. */
	unwait(&f, 1690, 0, CTX_B, PQ5);
	wait_packet(&f, 1700, 1, CTX_B, 3, SYNC, 5, PQ5);
	packet_stop(&f, 1710, 1, CTX_B, 3, PQ5);
	/* A CPU wait, the CPU signal that satisfies it, its release. */
	b = B(&f);
	nf_etlw_put_ptr(&b, DEVICE);
	objects(&b, SYNC2, 9);
	nf_etlw_put_ptr(&b, EVENT);
	nf_etlw_put_u32(&b, 0);
	{
		struct nf_etlw_event e;

		memset(&e, 0, sizeof(e));
		e.provider = &nf_etl_guid_dxgkrnl;
		e.id = 297;
		e.pid = 4;
		e.tid = 300;
		e.ticks = 1800;
		e.pointer_size = ps;
		e.payload = b.p;
		e.size = (uint32_t)b.n;
		ck_assert_int_eq(nf_etlw_event(f.w, &e), 0);
		nf_etlw_buf_free(&b);
	}
	if (!fixture_no_cpu_signal) {
		b = B(&f);
		nf_etlw_put_ptr(&b, DEVICE);
		objects(&b, SYNC2, 9);
		dxg(&f, 296, 0, 0, 100, 1900, &b);
	}
	b = B(&f);
	nf_etlw_put_ptr(&b, EVENT);
	nf_etlw_put_u32(&b, 1);
	nf_etlw_put_u64(&b, 9);
	nf_etlw_put_ptr(&b, SYNC2);
	nf_etlw_put_u32(&b, 0);
	dxg(&f, 300, 0, 1, 0, 1950, &b);
	/* VSync, frame 42. */
	b = B(&f);
	nf_etlw_put_ptr(&b, ADAPTER);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_u64(&b, 0);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_u32(&b, 42);
	nf_etlw_put_u64(&b, 0);
	nf_etlw_put_ptr(&b, 0);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_u64(&b, 0);
	dxg(&f, 17, 0, 0, 0, 2000, &b);
	/* A wait on context C for 6, which contexts A and B signal together
	 * (SignalSynchronizationObject2 with two contexts): released by B's
	 * packet, the last to complete. */
	wait_packet(&f, 2050, 1, CTX_C, 1, SYNC, 6, PQ8);
	signal_packet(&f, 2100, 0, CTX_A, 3, SYNC, 6, PQ6);
	signal_packet(&f, 2110, 0, CTX_B, 4, SYNC, 6, PQ7);
	b = B(&f);
	nf_etlw_put_u32(&b, 2);
	nf_etlw_put_ptr(&b, CTX_A);
	nf_etlw_put_ptr(&b, CTX_B);
	nf_etlw_put_u32(&b, 1);
	nf_etlw_put_ptr(&b, SYNC);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_u64(&b, 6);
	dxg(&f, 230, 0, 0, 100, 2120, &b);
	packet_stop(&f, 2200, 0, CTX_A, 3, PQ6);
	unwait(&f, 2300, 1, CTX_C, PQ8);
	packet_stop(&f, 2305, 0, CTX_B, 4, PQ7);
	packet_stop(&f, 2310, 1, CTX_C, 1, PQ8);
	/* Another provider's event. */
	{
		struct nf_etlw_event e;
		uint8_t pay[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };

		memset(&e, 0, sizeof(e));
		e.provider = &other_provider;
		e.id = 7;
		e.version = 1;
		e.opcode = 2;
		e.pid = 500;
		e.tid = 501;
		e.cpu = 1;
		e.ticks = 2400;
		e.pointer_size = ps;
		e.payload = pay;
		e.size = sizeof(pay);
		ck_assert_int_eq(nf_etlw_event(f.w, &e), 0);
	}
	/* A wait never released before the end. */
	wait_packet(&f, 2500, 1, CTX_B, 5, SYNC, 99, PQ9);
	nf_etlw_flag(f.w, 1, 0x2);
	ck_assert_int_eq(nf_etlw_save(f.w, path), 0);
	nf_etlw_destroy(f.w);
}

static void check_fixture_rows(const char *s, unsigned ps)
{
	expect_rows(s, "SELECT value FROM meta WHERE key IN ('source', 'etw_lacks', 'duration_ns') ORDER BY key",
		    "150000\nkernel,rundown\netw\n");
	expect_rows(s, "SELECT queue, adapter, node, engine, name FROM queues ORDER BY queue",
		    "1|0|0||Node 0 context 0xc0a\n"
		    "2|0|1||Node 1 context 0xc0b\n"
		    "3|0|0||Node 0 context 0xc0c\n");
	expect_rows(s, "SELECT queue, handle, kind, adapter, node FROM etw_contexts ORDER BY queue",
		    "1|0xc0a|context|0|0\n2|0xc0b|context|0|1\n3|0xc0c|context|0|0\n");
	expect_rows(s, "SELECT adapter, name FROM adapters", "0|Adapter 0xa000\n");
	expect_rows(s, "SELECT adapter, node, name FROM etw_nodes ORDER BY node", "0|0|Node 0\n0|1|Node 1\n");
	expect_rows(s, "SELECT f.fence, e.handle, e.kind FROM fences f JOIN etw_sync_objects e USING (fence) "
		       "ORDER BY fence", "1|0x5000|sync_object\n2|0x5002|sync_object\n");
	expect_rows(s, "SELECT id, queue, adapter, op, fence, value, queued_ns, observed_ns, end_ns, status, thread "
		       "FROM fence_ops ORDER BY id",
		    "1|1|0|signal|1|5|20000||61000|complete|100\n"
		    "2|2|0|wait|1|5|30000|30000|60000|complete|200\n"
		    "3|2|0|wait|1|5|70000|70000|70000|complete|200\n"
		    "4|||wait|2|9|80000|80000|95000|complete|300\n"
		    "5|3|0|wait|1|6|105000|105000|130000|complete|200\n"
		    "6|1|0|signal|1|6|110000||120000|complete|100\n"
		    "7|2|0|signal|1|6|111000||130500|complete|100\n"
		    "8|2|0|wait|1|99|150000|150000||pending|200\n");
	expect_rows(s, "SELECT wait_id, signal_id, cpu_signal, stall_ns FROM deps ORDER BY wait_id",
		    "2|1||30000\n3|1||0\n4||1|15000\n5|7||25000\n");
	expect_rows(s, "SELECT id, queue, kind, packet_type, submit_seq, present, queued_ns, end_ns, preempted, thread "
		       "FROM queue_packets ORDER BY id",
		    "1|1|render|1|1|1|10000|52000|0|100\n"
		    "2|1|signal||2|0|20000|61000|0|100\n"
		    "3|2|wait||1|0|30000|60000|0|200\n"
		    "4|2|wait||3|0|70000|70000|0|200\n"
		    "5|3|wait||1|0|105000|130000|0|200\n"
		    "6|1|signal||3|0|110000|120000|0|100\n"
		    "7|2|signal||4|0|111000|130500|0|100\n"
		    "8|2|wait||5|0|150000||0|200\n");
	expect_rows(s, "SELECT id, adapter, node, queue, packet_type, submission_id, queue_seq, start_ns, isr_ns, "
		       "end_ns, status FROM dma_packets", "1|0|0|1|1|77|1|40000|50000|51000|complete\n");
	expect_rows(s, "SELECT id, thread, adapter, fence, value, start_ns, end_ns, status FROM cpu_waits",
		    "1|300||2|9|80000|95000|satisfied\n");
	expect_rows(s, "SELECT id, thread, adapter, fence, value, ts_ns FROM cpu_signals", "1|100||2|9|90000\n");
	expect_rows(s, "SELECT id, ts_ns, adapter, target, frame FROM vsyncs", "1|100000|0|0|42\n");
	/* The logfile header's records, then what no table takes: 230 (the API
	 * call behind the signal packets) and the other provider's event. */
	expect_rows(s, "SELECT provider, event_id FROM etw_events WHERE provider LIKE 'kernel:%' ORDER BY id",
		    "kernel:EventTrace|0\nkernel:EventTrace|80\n");
	expect_rows(s, "SELECT ts_ns, cpu, process, thread, provider, event_id, version, opcode, size "
		       "FROM etw_events WHERE provider NOT LIKE 'kernel:%' ORDER BY id",
		    ps == 8 ? "112000|0|4|100|802ec45a-1e99-4b83-9920-87c98277ba9d|230|0|0|44\n"
			      "140000|1|500|501|8f8f13b1-60eb-4b6a-a433-de86104115ac|7|1|2|8\n"
			    : "112000|0|4|100|802ec45a-1e99-4b83-9920-87c98277ba9d|230|0|0|32\n"
			      "140000|1|500|501|8f8f13b1-60eb-4b6a-a433-de86104115ac|7|1|2|8\n");
	expect_rows(s, "SELECT event_id, events, size_mismatches FROM etw_counts "
		       "WHERE name = 'Microsoft-Windows-DxgKrnl' ORDER BY event_id",
		    "17|1|0\n23|3|0\n175|1|0\n176|1|0\n177|1|0\n178|1|0\n180|7|0\n230|1|0\n238|3|0\n"
		    "244|4|0\n245|3|0\n296|1|0\n297|1|0\n300|1|0\n");
	expect_rows(s, "SELECT kind, lost_entries, detail FROM anomalies",
		    "etw_lost|1|1 buffers flagged 'events lost'\n");
	/* Every DxgKrnl event came from the System process (4): no thread named. */
	expect_rows(s, "SELECT count(*) FROM kernel_threads", "0\n");
	expect_rows(s, "SELECT queue, fence, thread, ops FROM queue_threads ORDER BY queue, fence, thread",
		    "1|1|100|2\n2|1|100|1\n2|1|200|3\n3|1|200|1\n");
}

static void import_fixture(unsigned ps, char *tmp, size_t tlen, char *session, size_t slen)
{
	char etl[4200];

	nf_test_tmpdir(tmp, tlen);
	snprintf(etl, sizeof(etl), "%s/fixture.etl", tmp);
	snprintf(session, slen, "%s/s", tmp);
	write_fixture(etl, ps);
	ck_assert_msg(nft(NF_TEST_ARGV("import", etl, "-o", session)) == 0, "%s", errb);
}

START_TEST(test_fixture_rows_64)
{
	char tmp[1024], s[1100];

	import_fixture(8, tmp, sizeof(tmp), s, sizeof(s));
	check_fixture_rows(s, 8);
	expect_rows(s, "SELECT value FROM meta WHERE key = 'etw_pointer_size'", "8\n");
	nf_test_rmtree(tmp);
}
END_TEST

START_TEST(test_fixture_rows_32)
{
	char tmp[1024], s[1100];

	import_fixture(4, tmp, sizeof(tmp), s, sizeof(s));
	check_fixture_rows(s, 4);
	expect_rows(s, "SELECT value FROM meta WHERE key = 'etw_pointer_size'", "4\n");
	expect_rows(s, "SELECT value FROM meta WHERE key = 'etw_record_pointer_sizes'", "4\n");
	nf_test_rmtree(tmp);
}
END_TEST

/* The capture in the session is its own copy, never a hard link to the
 * user's original: writing into the session leaves the original as it was. */
START_TEST(test_capture_is_a_copy)
{
	char tmp[1024], etl[1100], s[1100], cap[1200];
	struct stat a, b;

	import_fixture(8, tmp, sizeof(tmp), s, sizeof(s));
	snprintf(etl, sizeof(etl), "%s/fixture.etl", tmp);
	snprintf(cap, sizeof(cap), "%s/capture.etl", s);
	ck_assert_int_eq(stat(etl, &a), 0);
	ck_assert_int_eq(stat(cap, &b), 0);
	ck_assert(a.st_ino != b.st_ino || a.st_dev != b.st_dev);
	ck_assert_int_eq((int)a.st_nlink, 1);
	ck_assert_int_eq((long long)b.st_size, (long long)a.st_size);
	ck_assert_int_eq(sh("echo other > \"$1\"", NF_TEST_ARGV(cap)), 0);
	ck_assert_int_eq(stat(etl, &b), 0);
	ck_assert_int_eq((long long)b.st_size, (long long)a.st_size);
	nf_test_rmtree(tmp);
}
END_TEST

/* True when path exists (any kind). */
static bool exists(const char *fmt, const char *dir)
{
	char path[4200];
	struct stat st;

	snprintf(path, sizeof(path), fmt, dir);
	return lstat(path, &st) == 0;
}

/*
 * import --force replaces nftrace sessions only (a recorded CTF one, an
 * imported ETW one) and refuses anything else, in one line, with nothing in it
 * touched; record --force (and so the trace-cmd import, which prepares its
 * directory the same way) replaces an ETW session.
 */
START_TEST(test_force_replaces_sessions_only)
{
	char tmp[1024], etl[1100], d[1100], nfs[4200];

	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(etl, sizeof(etl), "%s/fixture.etl", tmp);
	write_fixture(etl, 8);
	snprintf(d, sizeof(d), "%s/L", tmp);
	/* Someone's folder with a file named metadata and a subdirectory. */
	ck_assert_int_eq(sh("mkdir -p \"$1/sub\" && echo m > \"$1/metadata\" && echo p > \"$1/chan0\"",
			 NF_TEST_ARGV(d)), 0);
	ck_assert_int_eq(nft(NF_TEST_ARGV("import", "--force", etl, "-o", d)), 1);
	ck_assert_msg(nf_test_count_lines(errb) == 1 && strstr(errb, "not an nftrace session"), "%s", errb);
	ck_assert(exists("%s/metadata", d) && exists("%s/chan0", d) && exists("%s/sub", d));
	/* A folder holding a capture.etl and a user's file. */
	snprintf(d, sizeof(d), "%s/U", tmp);
	ck_assert_int_eq(sh("mkdir \"$1\" && cp \"$2\" \"$1/capture.etl\" && echo n > \"$1/notes.txt\"",
			 NF_TEST_ARGV(d, etl)), 0);
	ck_assert_int_eq(nft(NF_TEST_ARGV("import", "--force", etl, "-o", d)), 1);
	ck_assert_msg(nf_test_count_lines(errb) == 1 && strstr(errb, "notes.txt"), "%s", errb);
	ck_assert(exists("%s/notes.txt", d) && exists("%s/capture.etl", d) && !exists("%s/.timeline.db", d));
	/* An ETW session with a user's file in it is refused too. */
	snprintf(d, sizeof(d), "%s/E", tmp);
	ck_assert_int_eq(nft(NF_TEST_ARGV("import", etl, "-o", d)), 0);
	ck_assert_int_eq(sh("echo n > \"$1/notes.txt\"", NF_TEST_ARGV(d)), 0);
	ck_assert_int_eq(nft(NF_TEST_ARGV("import", "--force", etl, "-o", d)), 1);
	ck_assert(exists("%s/notes.txt", d) && exists("%s/capture.etl", d));
	/* A clean ETW session is replaced; a damaged capture leaves the old one whole. */
	ck_assert_int_eq(sh("rm \"$1/notes.txt\"", NF_TEST_ARGV(d)), 0);
	ck_assert_msg(nft(NF_TEST_ARGV("import", "--force", etl, "-o", d)) == 0, "%s", errb);
	ck_assert_int_eq(sh("head -c 20000 \"$1\" > \"$2/cut.etl\"", NF_TEST_ARGV(etl, tmp)), 0);
	ck_assert_int_eq(sh("\"$NF\" import --force \"$1/cut.etl\" -o \"$2\"", NF_TEST_ARGV(tmp,
			 d)), 1);
	ck_assert(exists("%s/capture.etl", d) && exists("%s/capture.source", d));
	check_fixture_rows(d, 8);
	ck_assert_int_eq(sh("ls -d \"$1\"/*.old-* \"$1\"/*.import-* 2>/dev/null | grep -q .",
			 NF_TEST_ARGV(tmp)), 1);
	/* record --force replaces the ETW session, import --force the recorded one. */
	nf_test_source_path(nfs, sizeof(nfs), "samples/hang-never-signaled.nfs");
	ck_assert_msg(nft(NF_TEST_ARGV("record", "--force", "-o", d, nfs)) == 0, "%s", errb);
	ck_assert(exists("%s/metadata", d) && !exists("%s/capture.etl", d));
	ck_assert_msg(nft(NF_TEST_ARGV("import", "--force", etl, "-o", d)) == 0, "%s", errb);
	ck_assert(!exists("%s/metadata", d) && exists("%s/capture.etl", d));
	check_fixture_rows(d, 8);
	nf_test_rmtree(tmp);
}
END_TEST

/* Without CPU signals, deps are computed without looking for them: the CPU
 * wait has no releaser in the capture, the GPU waits the same ones. */
START_TEST(test_fixture_no_cpu_signal)
{
	char tmp[1024], s[1100];

	fixture_no_cpu_signal = true;
	import_fixture(8, tmp, sizeof(tmp), s, sizeof(s));
	fixture_no_cpu_signal = false;
	expect_rows(s, "SELECT wait_id, signal_id, cpu_signal, stall_ns FROM deps ORDER BY wait_id",
		    "2|1||30000\n3|1||0\n4|||15000\n5|7||25000\n");
	expect_rows(s, "SELECT count(*) FROM cpu_signals", "0\n");
	nf_test_rmtree(tmp);
}
END_TEST

/* info, check, report and query on the fixture: what they say of it. */
START_TEST(test_fixture_commands)
{
	char tmp[1024], s[1100];

	import_fixture(8, tmp, sizeof(tmp), s, sizeof(s));
	ck_assert_msg(nft(NF_TEST_ARGV("info", s)) == 0, "%s", errb);
	ck_assert_msg(strstr(out, "OS build:       17134") && strstr(out, "CPUs:           2") &&
		      strstr(out, "Microsoft-Windows-DxgKrnl 29") && strstr(out, "lacks:          kernel,rundown"),
		      "%s", out);
	/* --json before or after the directory: one JSON object with the same facts. */
	ck_assert_msg(nft(NF_TEST_ARGV("info", "--json", s)) == 0, "%s", errb);
	ck_assert_msg(out[0] == '{' && nf_test_count_lines(out) == 1 && strstr(out, "\"kind\": \"etw\"") &&
		      strstr(out, "\"os_build\": 17134") && strstr(out, "\"cpus\": 2") &&
		      strstr(out, "\"lacks\": [\"kernel\", \"rundown\"]") &&
		      strstr(out, "\"name\": \"Microsoft-Windows-DxgKrnl\", \"events\": 29,") &&
		      strstr(out, "\"buffers_flagged\": 1}"), "%s", out);
	{
		static char first[OUT_MAX];

		snprintf(first, sizeof(first), "%s", out);
		ck_assert_msg(nft(NF_TEST_ARGV("info", s, "--json")) == 0, "%s", errb);
		ck_assert_str_eq(out, first);
	}
	ck_assert_msg(nft(NF_TEST_ARGV("check", s)) == 0, "%s%s", out, errb);
	ck_assert_msg(strstr(out, "GPU waits never released: 1 of 4") &&
		      strstr(out, "1 buffers flagged lost") && strstr(out, "verdict: legal anomalies only (") &&
		      strstr(out, "0 never signaled, 0 blocked, 0 lowered signals, 1 pending at the end"), "%s", out);
	ck_assert_msg(nft(NF_TEST_ARGV("check", "--json", s)) == 0, "%s", errb);
	ck_assert_msg(strstr(out, "\"verdict\": \"legal_anomalies\"") &&
		      strstr(out, "\"waits_never_released\": 1") && strstr(out, "\"pending\": 1}"), "%s", out);
	ck_assert_msg(sh("\"$NF\" report \"$1\" -o \"$2/r.png\"", NF_TEST_ARGV(s, tmp)) == 0, "%s",
		      errb);
	ck_assert_msg(nft(NF_TEST_ARGV("query", "--csv", s, "SELECT count(*) FROM deps")) == 0,
		      "%s",
		      errb);
	ck_assert_str_eq(out, "count(*)\n4\n");
	nf_test_rmtree(tmp);
}
END_TEST

/* The timeline of an ETW session is built once: later commands find it
 * current (meta.session_key) and read it; analyses' tables (stall_blame) stay. */
START_TEST(test_timeline_built_once)
{
	char tmp[1024], s[1100], db[1200];
	struct stat a, b;

	import_fixture(8, tmp, sizeof(tmp), s, sizeof(s));
	snprintf(db, sizeof(db), "%s/.timeline.db", s);
	ck_assert_int_eq(stat(db, &a), 0);
	expect_rows(s, "SELECT count(*) FROM meta WHERE key = 'session_key'", "1\n");
	ck_assert_msg(nft(NF_TEST_ARGV("query", "--csv", s, "SELECT count(*) FROM deps")) == 0,
		      "%s", errb);
	ck_assert_msg(nft(NF_TEST_ARGV("query", "--csv", s,
		      "SELECT count(*) > 0 FROM stall_blame")) == 0,
		      "%s", errb);
	ck_assert_msg(nft(NF_TEST_ARGV("check", s)) == 0, "%s", errb);
	ck_assert_int_eq(stat(db, &b), 0);
	ck_assert(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
	nf_test_rmtree(tmp);
}
END_TEST

/*
 * A wait on a native fence created in the capture (initial value 0) that no
 * signal in the capture reaches: a hang (never signaled), exit 1, in the text
 * and the JSON alike. With a signal of that value queued but not yet run when
 * the capture ends, the same wait is only pending.
 */
static void hang_fixture(const char *path, bool queued_signal)
{
	struct nf_etlw_options o;
	struct nf_etlw_buf b;
	struct fx f;

	memset(&o, 0, sizeof(o));
	o.cpus = 2;
	o.perf_freq = 10000000;
	o.header_ticks = 1000;
	o.header_pointer_size = 8;
	f.w = nf_etlw_create(&o);
	f.ps = 8;
	f.pid = 0;
	ck_assert(f.w != NULL);
	select_context(&f, 1000, CTX_A, 0);
	select_context(&f, 1010, CTX_B, 1);
	b = B(&f); /* NativeFenceStart: SYNC, initial value 0 */
	nf_etlw_put_ptr(&b, ADAPTER);
	nf_etlw_put_ptr(&b, SYNC);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_u64(&b, 0);
	dxg(&f, 542, 0, 0, 0, 1020, &b);
	wait_packet(&f, 1100, 1, CTX_B, 1, SYNC, 7, PQ1);
	if (queued_signal)
		signal_packet(&f, 1200, 0, CTX_A, 1, SYNC, 7, PQ2);
	render_packet(&f, 1300, CTX_A, 2, PQ3);
	packet_stop(&f, 1400, 0, CTX_A, 2, PQ3);
	ck_assert_int_eq(nf_etlw_save(f.w, path), 0);
	nf_etlw_destroy(f.w);
}

START_TEST(test_check_hang)
{
	char tmp[1024], etl[1100], s[1100];

	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(etl, sizeof(etl), "%s/hang.etl", tmp);
	snprintf(s, sizeof(s), "%s/s", tmp);
	hang_fixture(etl, false);
	ck_assert_msg(nft(NF_TEST_ARGV("import", etl, "-o", s)) == 0, "%s", errb);
	expect_rows(s, "SELECT op, value, status, end_ns IS NULL FROM fence_ops WHERE op = 'wait'", "wait|7|pending|1\n");
	ck_assert_int_eq(nft(NF_TEST_ARGV("check", s)), 1);
	ck_assert_msg(strstr(out, "1 never signaled") && strstr(out, "never signaled: queue") &&
		      strstr(out, "verdict: hang (1 waits can never be satisfied)"), "%s", out);
	ck_assert_int_eq(nft(NF_TEST_ARGV("check", "--json", s)), 1);
	ck_assert_msg(strstr(out, "\"verdict\": \"hang\"") && strstr(out, "\"never_signaled\": 1") &&
		      strstr(out, "{\"kind\": \"never_signaled\", \"wait\": {\"op\": "), "%s", out);
	nf_test_rmtree(s);
	hang_fixture(etl, true);
	ck_assert_msg(nft(NF_TEST_ARGV("import", etl, "-o", s)) == 0, "%s", errb);
	ck_assert_msg(nft(NF_TEST_ARGV("check", s)) == 0, "%s%s", out, errb);
	ck_assert_msg(strstr(out, "0 never signaled, 0 blocked, 0 lowered signals, 1 pending at the end") &&
		      strstr(out, "verdict: legal anomalies only ("), "%s", out);
	ck_assert_int_eq(nft(NF_TEST_ARGV("check", "--json", s)), 0);
	ck_assert_msg(strstr(out, "\"verdict\": \"legal_anomalies\"") && strstr(out, "\"pending\": 1}"), "%s", out);
	nf_test_rmtree(tmp);
}
END_TEST

/* ---- DxgKrnl rundown, lifetime and hardware queue events (test_rundown_rows, test_hws_*) ---- */

/* DeviceDCStart (v2): process's device on the adapter. */
static void device_rundown(struct fx *f, int64_t t, uint64_t process, uint64_t device)
{
	struct nf_etlw_buf b = B(f);

	nf_etlw_put_ptr(&b, process);
	nf_etlw_put_ptr(&b, ADAPTER);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_ptr(&b, device);
	for (int k = 0; k < 3; k++)
		nf_etlw_put_u32(&b, 0);
	nf_etlw_put_ptr(&b, 0);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_ptr(&b, 0);
	dxg(f, 29, 2, 0, 0, t, &b);
}

/* NodeMetadata: node of the adapter, its engine type and name. */
static void node_metadata(struct fx *f, int64_t t, uint32_t node, uint32_t engine_type, const char *name)
{
	struct nf_etlw_buf b = B(f);

	nf_etlw_put_ptr(&b, ADAPTER);
	nf_etlw_put_u32(&b, node);
	nf_etlw_put_u32(&b, engine_type);
	nf_etlw_put_wstr(&b, name);
	dxg(f, 250, 0, 0, 0, t, &b);
}

/* ContextDCStart: the device's context on node. */
static void context_rundown(struct fx *f, int64_t t, uint64_t device, uint32_t node, uint64_t ctx)
{
	struct nf_etlw_buf b = B(f);

	nf_etlw_put_ptr(&b, device);
	nf_etlw_put_u32(&b, node);
	for (int k = 0; k < 7; k++)
		nf_etlw_put_u32(&b, 0);
	nf_etlw_put_ptr(&b, ctx);
	nf_etlw_put_ptr(&b, 0);
	nf_etlw_put_ptr(&b, 0);
	dxg(f, 32, 0, 0, 0, t, &b);
}

/* HwQueueStart (422), Stop (423) or DCStart (424): hwq of context ctx. */
static void hwqueue_event(struct fx *f, uint16_t id, int64_t t, uint64_t ctx, uint64_t hwq)
{
	struct nf_etlw_buf b = B(f);

	nf_etlw_put_ptr(&b, ctx);
	nf_etlw_put_ptr(&b, hwq);
	nf_etlw_put_ptr(&b, 0);
	dxg(f, id, 0, 0, 0, t, &b);
}

/* 450 (start) or 451 (done) of progress value `progress` on a hardware queue. */
static void hw_dma(struct fx *f, bool done, int64_t t, uint16_t cpu, uint32_t tid, uint64_t hwq, uint64_t progress)
{
	struct nf_etlw_buf b = B(f);

	nf_etlw_put_ptr(&b, hwq);
	nf_etlw_put_u64(&b, progress);
	if (!done) {
		nf_etlw_put_ptr(&b, 0xD0D0);
		nf_etlw_put_u32(&b, 0);
		nf_etlw_put_u32(&b, 0);
	}
	dxg(f, done ? 451 : 450, 0, cpu, tid, t, &b);
}

/* MonitoredFence (290-293) or NativeFence (542-545) start, info, stop or rundown. */
static void fence_life(struct fx *f, uint16_t id, int64_t t, uint64_t fence, uint64_t initial)
{
	struct nf_etlw_buf b = B(f);

	nf_etlw_put_ptr(&b, ADAPTER);
	nf_etlw_put_ptr(&b, fence);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_u32(&b, 0);
	if (id < 300)
		nf_etlw_put_ptr(&b, 0);
	nf_etlw_put_u64(&b, initial);
	dxg(f, id, 0, 0, 0, t, &b);
}

/* A Process DCStart record (version 4, 64-bit) naming pid. */
static void process_record(struct nf_etlw *w, int64_t ticks, uint32_t pid, const char *image)
{
	struct nf_etlw_classic c;
	struct nf_etlw_buf b;
	static const uint8_t sid[12] = { 1, 1, 0, 0, 0, 0, 0, 5, 18, 0, 0, 0 };

	memset(&b, 0, sizeof(b));
	b.pointer_size = 8;
	nf_etlw_put_ptr(&b, 0xffff800012345678ull); /* UniqueProcessKey */
	nf_etlw_put_u32(&b, pid);                   /* ProcessId */
	nf_etlw_put_u32(&b, 4);                     /* ParentId */
	nf_etlw_put_u32(&b, 1);                     /* SessionId */
	nf_etlw_put_u32(&b, 259);                   /* ExitStatus */
	nf_etlw_put_ptr(&b, 0x1aa000);              /* DirectoryTableBase */
	nf_etlw_put_u32(&b, 0);                     /* Flags */
	nf_etlw_put_ptr(&b, 0xffff800087654321ull); /* TOKEN_USER: the SID's pointer */
	nf_etlw_put_ptr(&b, 0);                     /*   and attributes */
	nf_etlw_put_bytes(&b, sid, sizeof(sid));
	nf_etlw_put_bytes(&b, image, strlen(image) + 1);
	nf_etlw_put_wstr(&b, image);                /* CommandLine */
	memset(&c, 0, sizeof(c));
	c.kind = NF_ETL_HDR_SYSTEM;
	c.hook_id = 0x0303;
	c.version = 4;
	c.ticks = ticks;
	c.payload = b.p;
	c.size = (uint32_t)b.n;
	ck_assert_int_eq(nf_etlw_classic(w, &c), 0);
	nf_etlw_buf_free(&b);
}

/*
 * A capture with DxgKrnl's rundown (adapter, device, nodes, context, hardware
 * queue, monitored and native fences), a hardware queue's DMA packet, a wait
 * released by an immediate CPU-side signal, an aborted wait, a scheduling
 * log's calibration pairs and the lifetimes' ends.
 */
START_TEST(test_rundown_rows)
{
	struct nf_etlw_options o;
	struct nf_etlw_buf b;
	char tmp[1024], etl[1100], s[1100];
	struct fx f;
	enum { HWQ = 0xB0B, MF = 0x6000, NF = 0x7000 };

	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(etl, sizeof(etl), "%s/r.etl", tmp);
	snprintf(s, sizeof(s), "%s/s", tmp);
	memset(&o, 0, sizeof(o));
	o.cpus = 2;
	o.perf_freq = 10000000;
	o.header_ticks = 1000;
	f.w = nf_etlw_create(&o);
	f.ps = 8;
	f.pid = 0;
	ck_assert(f.w != NULL);
	/* AdapterDCStart */
	b = B(&f);
	nf_etlw_put_ptr(&b, 0x1);
	nf_etlw_put_ptr(&b, ADAPTER);
	nf_etlw_put_u32(&b, 1);
	nf_etlw_put_u64(&b, 0);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_u64(&b, 0);
	for (int k = 0; k < 9; k++)
		nf_etlw_put_u32(&b, 0);
	for (int k = 0; k < 4; k++)
		nf_etlw_put_u8(&b, 0);
	for (int k = 0; k < 8; k++)
		nf_etlw_put_u32(&b, 0);
	nf_etlw_put_ptr(&b, 0);
	nf_etlw_put_u64(&b, 0);
	dxg(&f, 26, 0, 0, 0, 1000, &b);
	device_rundown(&f, 1010, 1234, DEVICE);
	process_record(f.w, 1015, 1234, "vrcompositor.exe");
	node_metadata(&f, 1020, 0, 1, "3D");
	node_metadata(&f, 1021, 2, 3, "Copy");
	context_rundown(&f, 1030, DEVICE, 2, CTX_A);         /* the device's context on node 2 */
	hwqueue_event(&f, 424, 1040, CTX_A, HWQ);             /* a hardware queue of that context */
	fence_life(&f, 293, 1050, MF, 10);                    /* MonitoredFenceDCStart, initial 10 */
	fence_life(&f, 542, 1060, NF, 0);                     /* NativeFenceStart, initial 0 */
	hw_dma(&f, false, 1100, 0, 0, HWQ, 5);                /* the queue's DMA packet of progress 5 */
	hw_dma(&f, true, 1200, 1, 0, HWQ, 5);
	/* A wait for the monitored fence at 11, released by an immediate signal. */
	wait_packet(&f, 1300, 0, CTX_A, 1, MF, 11, PQ1);
	b = B(&f);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_ptr(&b, MF);
	nf_etlw_put_u64(&b, 11);
	f.pid = 1234; /* logged by the compositor's thread 700 */
	dxg(&f, 462, 0, 1, 700, 1400, &b);
	f.pid = 0;
	unwait(&f, 1410, 1, CTX_A, PQ1);
	packet_stop(&f, 1420, 1, CTX_A, 1, PQ1);
	/* A wait for the native fence, aborted. */
	wait_packet(&f, 1500, 0, CTX_A, 2, NF, 3, PQ2);
	b = B(&f);
	nf_etlw_put_ptr(&b, PQ2);
	nf_etlw_put_ptr(&b, CTX_A);
	dxg(&f, 361, 0, 0, 0, 1600, &b);
	packet_stop(&f, 1610, 0, CTX_A, 2, PQ2);
	/* A signal packet of the monitored fence to 12, aborted: it releases nothing. */
	signal_packet(&f, 1620, 0, CTX_A, 3, MF, 12, PQ3);
	b = B(&f);
	nf_etlw_put_ptr(&b, PQ3);
	nf_etlw_put_ptr(&b, CTX_A);
	dxg(&f, 361, 0, 0, 0, 1630, &b);
	packet_stop(&f, 1640, 0, CTX_A, 3, PQ3);
	wait_packet(&f, 1645, 0, CTX_A, 4, MF, 12, PQ5);
	unwait(&f, 1647, 0, CTX_A, PQ5);
	/* SchedulingLog: two CPU (QPC ticks) / GPU pairs */
	b = B(&f);
	nf_etlw_put_ptr(&b, ADAPTER);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_u64(&b, 1650);
	nf_etlw_put_u64(&b, 5000);
	nf_etlw_put_u64(&b, 1690);
	nf_etlw_put_u64(&b, 9000);
	nf_etlw_put_u32(&b, 4);
	nf_etlw_put_u32(&b, 0xdeadbeef);
	dxg(&f, 432, 0, 0, 0, 1700, &b);
	fence_life(&f, 544, 1800, NF, 0);                     /* NativeFenceStop, HwQueueStop */
	hwqueue_event(&f, 423, 1900, CTX_A, HWQ);
	ck_assert_int_eq(nf_etlw_save(f.w, etl), 0);
	nf_etlw_destroy(f.w);
	ck_assert_msg(nft(NF_TEST_ARGV("import", etl, "-o", s)) == 0, "%s", errb);
	expect_rows(s, "SELECT value FROM meta WHERE key = 'etw_lacks'", "\n");
	expect_rows(s, "SELECT queue, adapter, node, engine, name, start_ns, stop_ns FROM queues ORDER BY queue",
		    "1|0|2||Copy context 0xc0a (vrcompositor.exe 1234)||\n2|0|2||Copy hwqueue 0xb0b||90000\n");
	expect_rows(s, "SELECT queue, handle, kind, adapter, node, parent, device, process FROM etw_contexts "
		       "ORDER BY queue", "1|0xc0a|context|0|2||0xde0|1234\n2|0xb0b|hwqueue|0|2|1||\n");
	expect_rows(s, "SELECT adapter, node, engine_type, name FROM etw_nodes ORDER BY node",
		    "0|0|1|3D\n0|2|3|Copy\n");
	expect_rows(s, "SELECT f.fence, e.kind, f.initial_value, f.created_ns, f.destroyed_ns FROM fences f "
		       "JOIN etw_sync_objects e USING (fence) ORDER BY fence",
		    "1|monitored_fence|10||\n2|native_fence|0|6000|80000\n");
	expect_rows(s, "SELECT id, adapter, node, queue, packet_type, submission_id, queue_seq, start_ns, isr_ns, "
		       "end_ns, status FROM dma_packets", "1|0|2|2||5||10000||20000|complete\n");
	expect_rows(s, "SELECT id, queue, op, fence, value, queued_ns, observed_ns, end_ns, status FROM fence_ops "
		       "ORDER BY id", "1|1|wait|1|11|30000|30000|41000|complete\n"
				      "2|1|wait|2|3|50000|50000|60000|aborted\n"
				      "3|1|signal|1|12|62000||63000|aborted\n"
				      "4|1|wait|1|12|64500|64500|64700|complete\n");
	expect_rows(s, "SELECT id, thread, adapter, fence, value, ts_ns FROM cpu_signals", "1|700|0|1|11|40000\n");
	/* The wait for 12 is released by nothing in the capture: the aborted
	 * signal does not count. */
	expect_rows(s, "SELECT wait_id, signal_id, cpu_signal, stall_ns FROM deps", "1||1|11000\n4|||200\n");
	expect_rows(s, "SELECT adapter, ts_ns, gpu_clock FROM calibrations ORDER BY ts_ns",
		    "0|65000|5000\n0|69000|9000\n");
	expect_rows(s, "SELECT count(*) FROM etw_events WHERE provider NOT LIKE 'kernel:%'", "0\n");
	expect_rows(s, "SELECT thread, comm FROM kernel_threads", "700|vrcompositor.exe 1234\n");
	nf_test_rmtree(tmp);
}
END_TEST

/* NT kernel logger records: context switches become cpu_runs, process
 * records name processes. */
START_TEST(test_kernel_records)
{
	struct nf_etlw_options o;
	struct nf_etlw_classic c;
	struct nf_etlw_buf b;
	char tmp[1024], etl[1100], s[1100];
	struct nf_etlw *w;
	static const struct { int64_t t; uint32_t new_tid, old_tid; uint8_t state; } sw[] = {
		{ 1000, 10, 0, 0 }, { 1100, 20, 10, 5 }, { 1150, 30, 0, 0 },
	};

	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(etl, sizeof(etl), "%s/k.etl", tmp);
	snprintf(s, sizeof(s), "%s/s", tmp);
	memset(&o, 0, sizeof(o));
	o.cpus = 2;
	o.perf_freq = 10000000;
	o.header_ticks = 1000;
	w = nf_etlw_create(&o);
	ck_assert(w != NULL);
	for (size_t i = 0; i < sizeof(sw) / sizeof(sw[0]); i++) {
		memset(&b, 0, sizeof(b));
		b.pointer_size = 8;
		nf_etlw_put_u32(&b, sw[i].new_tid);
		nf_etlw_put_u32(&b, sw[i].old_tid);
		for (int k = 0; k < 6; k++)
			nf_etlw_put_u8(&b, 0);
		nf_etlw_put_u8(&b, sw[i].state); /* OldThreadState */
		nf_etlw_put_u8(&b, 0);
		nf_etlw_put_u32(&b, 0);
		nf_etlw_put_u32(&b, 0);
		memset(&c, 0, sizeof(c));
		c.kind = NF_ETL_HDR_SYSTEM;
		c.hook_id = 0x0524;
		c.version = 2;
		c.cpu = i == 2 ? 1 : 0;
		c.ticks = sw[i].t;
		c.payload = b.p;
		c.size = (uint32_t)b.n;
		ck_assert_int_eq(nf_etlw_classic(w, &c), 0);
		nf_etlw_buf_free(&b);
	}
	/* Process DCStart (version 4) of pid 77, game.exe. */
	process_record(w, 1200, 77, "game.exe");
	/* Thread SetName: thread 20 of process 77 is "RenderThread". */
	memset(&b, 0, sizeof(b));
	b.pointer_size = 8;
	nf_etlw_put_u32(&b, 77);
	nf_etlw_put_u32(&b, 20);
	nf_etlw_put_wstr(&b, "RenderThread");
	memset(&c, 0, sizeof(c));
	c.kind = NF_ETL_HDR_SYSTEM;
	c.hook_id = 0x0548;
	c.version = 2;
	c.ticks = 1250;
	c.payload = b.p;
	c.size = (uint32_t)b.n;
	ck_assert_int_eq(nf_etlw_classic(w, &c), 0);
	nf_etlw_buf_free(&b);
	ck_assert_int_eq(nf_etlw_save(w, etl), 0);
	nf_etlw_destroy(w);
	ck_assert_msg(nft(NF_TEST_ARGV("import", etl, "-o", s)) == 0, "%s", errb);
	expect_rows(s, "SELECT thread, cpu, start_ns, end_ns, end_state FROM cpu_runs ORDER BY cpu, thread",
		    "10|0|0|10000|5\n20|0|10000||\n30|1|15000||\n");
	expect_rows(s, "SELECT process, name FROM etw_processes", "77|game.exe\n");
	expect_rows(s, "SELECT thread, comm FROM kernel_threads", "20|RenderThread\n");
	expect_rows(s, "SELECT value FROM meta WHERE key = 'etw_lacks'", "dxgkrnl\n");
	ck_assert_msg(nft(NF_TEST_ARGV("info", s)) == 0, "%s", errb);
	ck_assert_msg(strstr(out, "no GPU timeline") != NULL && strstr(out, "kernel:Thread") != NULL, "%s", out);
	nf_test_rmtree(tmp);
}
END_TEST

/* The colour of the pixel at (x, y) of an ARGB32 surface, as 0xRRGGBB. */
static uint32_t pixel(cairo_surface_t *img, double x, double y)
{
	int stride = cairo_image_surface_get_stride(img);
	const unsigned char *d = cairo_image_surface_get_data(img);
	uint32_t v;

	memcpy(&v, d + (int)y * stride + (int)x * 4, 4);
	return v & 0xFFFFFFu;
}

/* The picture: node rows with their DMA packets, context rows, a VSync line. */
START_TEST(test_fixture_report)
{
	char tmp[1024], s[1100], png[1200], db[1200];
	struct nf_render_options ro = { 0 };
	struct nf_render_layout lay;
	struct nf_error err;
	const struct nf_render_row *node0 = NULL, *node1 = NULL;
	sqlite3 *sql;
	double y0, y1;

	import_fixture(8, tmp, sizeof(tmp), s, sizeof(s));
	snprintf(png, sizeof(png), "%s/r.png", tmp);
	ck_assert_msg(nft(NF_TEST_ARGV("report", s, "-o", png)) == 0, "%s", errb);
	snprintf(db, sizeof(db), "%s/.timeline.db", s);
	ck_assert_int_eq(sqlite3_open_v2(db, &sql, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	ro.output = png;
	ro.from_ns = -1;
	ro.to_ns = -1;
	nf_error_clear(&err);
	ck_assert_int_eq(nf_render_layout_build(sql, &ro, &lay, &err), 0);
	ck_assert(lay.etw);
	ck_assert_uint_eq(lay.n_queues, 3);
	for (size_t i = 0; i < lay.n_rows; i++)
		if (lay.rows[i].kind == NF_ROW_ENGINE && lay.rows[i].node == 0)
			node0 = &lay.rows[i];
		else if (lay.rows[i].kind == NF_ROW_ENGINE && lay.rows[i].node == 1)
			node1 = &lay.rows[i];
	ck_assert_ptr_nonnull(node0);
	ck_assert_ptr_nonnull(node1);
	ck_assert_str_eq(node0->name, "Node 0");
	cairo_surface_t *img = cairo_image_surface_create_from_png(png);

	ck_assert_int_eq(cairo_surface_status(img), CAIRO_STATUS_SUCCESS);
	/* DMA packet 77 (40 .. 51 us) is green on node 0's row, and not before. */
	ck_assert_uint_eq(pixel(img, nf_render_layout_x(&lay, 45000), node0->y + node0->h / 2 + 1), 0x4F9D69);
	ck_assert_uint_ne(pixel(img, nf_render_layout_x(&lay, 30000), node0->y + node0->h / 2 + 1), 0x4F9D69);
	/* Context B (queue 2) signals 111 .. 130.5 us: its signal lane is dark pink at 120 us. */
	const struct nf_render_row *q = nf_render_layout_queue(&lay, 2);

	ck_assert_ptr_nonnull(q);
	nf_render_lane_extent(q, NF_LANE_SIGNAL, &y0, &y1);
	ck_assert_uint_eq(pixel(img, nf_render_layout_x(&lay, 120000), (y0 + y1) / 2), 0xC2185B);
	/* The VSync at 100 us: a line across node 1's empty row. */
	double vx = floor(nf_render_layout_x(&lay, 100000));

	ck_assert_uint_ne(pixel(img, vx, node1->y + node1->h / 2), pixel(img, vx + 4, node1->y + node1->h / 2));
	cairo_surface_destroy(img);
	nf_render_layout_release(&lay);
	sqlite3_close(sql);
	nf_test_rmtree(tmp);
}
END_TEST

/* A fence-related DxgKrnl event whose size matches no layout is counted, kept
 * raw, and makes `check` fail; a mismatch of another event only counts. */
START_TEST(test_size_mismatch)
{
	struct nf_etlw_options o;
	struct nf_etlw_buf b;
	char tmp[1024], etl[1100], s[1100];
	struct fx f;

	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(etl, sizeof(etl), "%s/m.etl", tmp);
	snprintf(s, sizeof(s), "%s/s", tmp);
	memset(&o, 0, sizeof(o));
	o.perf_freq = 10000000;
	o.header_ticks = 1000;
	f.w = nf_etlw_create(&o);
	f.ps = 8;
	f.pid = 0;
	ck_assert(f.w != NULL);
	b = B(&f); /* a wait packet 4 bytes short */
	nf_etlw_put_ptr(&b, CTX_A);
	nf_etlw_put_u32(&b, 1);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_ptr(&b, SYNC);
	nf_etlw_put_u64(&b, 5);
	nf_etlw_put_u32(&b, 0x9001);
	dxg(&f, 244, 1, 0, 200, 1100, &b);
	b = B(&f); /* a VSync 8 bytes long */
	nf_etlw_put_u64(&b, 0);
	dxg(&f, 17, 0, 0, 0, 1200, &b);
	ck_assert_int_eq(nf_etlw_save(f.w, etl), 0);
	nf_etlw_destroy(f.w);
	ck_assert_msg(nft(NF_TEST_ARGV("import", etl, "-o", s)) == 0, "%s", errb);
	expect_rows(s, "SELECT event_id, events, size_mismatches FROM etw_counts WHERE name IS NOT NULL "
		       "ORDER BY event_id", "17|1|1\n244|1|1\n");
	expect_rows(s, "SELECT event_id, size FROM etw_events WHERE provider NOT LIKE 'kernel:%' ORDER BY id",
		    "244|36\n17|8\n");
	expect_rows(s, "SELECT count(*) FROM fence_ops", "0\n");
	ck_assert_int_eq(nft(NF_TEST_ARGV("check", s)), 1);
	ck_assert_msg(strstr(out, "DxgKrnl size mismatches:  2 (1 fence-related)") &&
		      strstr(out, "verdict: illegal ("),
		      "%s", out);
	ck_assert_msg(nft(NF_TEST_ARGV("info", s)) == 0 &&
		      strstr(out, "(2 of a size no layout has)"), "%s", out);
	nf_test_rmtree(tmp);
}
END_TEST

/* Only the inputs are in tmp: no session directory nor import temporary. */
static void assert_nothing_left_but(const char *tmp)
{
	DIR *d = opendir(tmp);
	struct dirent *de;

	ck_assert(d != NULL);
	while ((de = readdir(d)))
		ck_assert_msg(strstr(de->d_name, ".import-") == NULL, "left behind: %s/%s", tmp, de->d_name);
	closedir(d);
}

/* Nothing of the output exists after a failed import (nor beside it). */
static void assert_nothing_left(const char *tmp)
{
	DIR *d = opendir(tmp);
	struct dirent *de;

	ck_assert(d != NULL);
	while ((de = readdir(d)))
		ck_assert_msg(strncmp(de->d_name, "s", 1) != 0, "left behind: %s/%s", tmp, de->d_name);
	closedir(d);
}

START_TEST(test_damaged_leaves_nothing)
{
	char tmp[1024], etl[1100], cut[1100], s[1100];
	struct stat st;

	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(etl, sizeof(etl), "%s/fixture.etl", tmp);
	snprintf(cut, sizeof(cut), "%s/cut.etl", tmp);
	snprintf(s, sizeof(s), "%s/s", tmp);
	write_fixture(etl, 8);
	ck_assert_int_eq(stat(etl, &st), 0);
	/* Cut in the middle of the last buffer. */
	char keep[32];
	snprintf(keep, sizeof(keep), "%lld", (long long)st.st_size - 3000);
	ck_assert_int_eq(sh("head -c \"$1\" \"$2\" > \"$3\"", NF_TEST_ARGV(keep, etl, cut)), 0);
	ck_assert_int_eq(nft(NF_TEST_ARGV("import", cut, "-o", s)), 1);
	ck_assert_msg(strstr(errb, "cut.etl") != NULL && nf_test_count_lines(errb) == 1, "%s", errb);
	assert_nothing_left(tmp);
	/* Not an ETL at all, but named like one: the ETL reader's one line. */
	ck_assert_int_eq(sh("head -c 70000 /dev/urandom > \"$1/junk.etl\" && \"$NF\" import \"$1/junk.etl\" -o \"$2\"",
			 NF_TEST_ARGV(tmp, s)), 1);
	ck_assert_msg(strstr(errb, "junk.etl") != NULL && nf_test_count_lines(errb) == 1, "%s", errb);
	assert_nothing_left(tmp);
	/* A compressed capture is refused, saying so. */
	{
		struct nf_etlw_options o;
		struct nf_etlw *w;
		struct nf_etlw_buf b;
		struct nf_etlw_event e;
		char comp[1100];

		memset(&o, 0, sizeof(o));
		w = nf_etlw_create(&o);
		memset(&b, 0, sizeof(b));
		b.pointer_size = 8;
		nf_etlw_put_u64(&b, 1);
		memset(&e, 0, sizeof(e));
		e.provider = &other_provider;
		e.ticks = 2000;
		e.payload = b.p;
		e.size = (uint32_t)b.n;
		ck_assert_int_eq(nf_etlw_event(w, &e), 0);
		nf_etlw_buf_free(&b);
		nf_etlw_flag(w, 0, 0x40);
		snprintf(comp, sizeof(comp), "%s/comp.etl", tmp);
		ck_assert_int_eq(nf_etlw_save(w, comp), 0);
		nf_etlw_destroy(w);
		ck_assert_int_eq(nft(NF_TEST_ARGV("import", comp, "-o", s)), 1);
		ck_assert_msg(strstr(errb, "compressed") != NULL && nf_test_count_lines(errb) == 1, "%s", errb);
		assert_nothing_left(tmp);
	}
	/* An existing non-session directory is refused, and kept. */
	ck_assert_int_eq(mkdir(s, 0755), 0);
	ck_assert_int_eq(sh("touch \"$1/mine\" && \"$NF\" import \"$2\" -o \"$1\" --force",
			 NF_TEST_ARGV(s, etl)), 1);
	ck_assert_msg(strstr(errb, "not an nftrace session") != NULL, "%s", errb);
	ck_assert_int_eq(sh("test -f \"$1/mine\"", NF_TEST_ARGV(s)), 0);
	/* A session is replaced with --force only. */
	ck_assert_int_eq(sh("rm -r \"$1\" && \"$NF\" import \"$2\" -o \"$1\"", NF_TEST_ARGV(s,
			 etl)), 0);
	ck_assert_int_eq(nft(NF_TEST_ARGV("import", etl, "-o", s)), 1);
	ck_assert_int_eq(nft(NF_TEST_ARGV("import", etl, "-o", s, "--force")), 0);
	nf_test_rmtree(tmp);
}
END_TEST

/* A capture of n plain events of another provider (a second or so to import). */
static void big_fixture(const char *path, unsigned n)
{
	struct nf_etlw_options o;
	struct nf_etlw *w;

	memset(&o, 0, sizeof(o));
	o.cpus = 2;
	o.perf_freq = 10000000;
	o.header_ticks = 1000;
	o.header_pointer_size = 8;
	w = nf_etlw_create(&o);
	ck_assert(w != NULL);
	for (unsigned i = 0; i < n; i++) {
		struct nf_etlw_buf b;
		struct nf_etlw_event e;

		memset(&b, 0, sizeof(b));
		b.pointer_size = 8;
		nf_etlw_put_u64(&b, i);
		memset(&e, 0, sizeof(e));
		e.provider = &other_provider;
		e.id = (uint16_t)(1 + i % 7);
		e.pid = 4;
		e.tid = 8;
		e.cpu = (uint16_t)(i & 1);
		e.ticks = 2000 + (int64_t)i;
		e.pointer_size = 8;
		e.payload = b.p;
		e.size = (uint32_t)b.n;
		ck_assert_int_eq(nf_etlw_event(w, &e), 0);
		nf_etlw_buf_free(&b);
	}
	ck_assert_int_eq(nf_etlw_save(w, path), 0);
	nf_etlw_destroy(w);
}

/*
 * An interrupted import (SIGINT or SIGTERM, or the caller's flag) leaves
 * nothing: no DIR.import-XXXXXX, no DIR; an existing session it was to
 * replace stays as it was.
 */
START_TEST(test_interrupted_leaves_nothing)
{
	char tmp[1024], etl[1100], big[1100], s[1100];
	struct nf_import_result ist;
	struct nf_error err;
	volatile int flag = SIGINT;
	int got130 = 0;

	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(etl, sizeof(etl), "%s/fixture.etl", tmp);
	snprintf(big, sizeof(big), "%s/big.etl", tmp);
	snprintf(s, sizeof(s), "%s/s", tmp);
	write_fixture(etl, 8);
	/* In-process, the flag already set: refused before anything stays. */
	nf_error_clear(&err);
	ck_assert_int_eq(nf_import(etl, s, false, &flag, &ist, &err), NF_EINTR);
	ck_assert_msg(strstr(err.msg, "interrupted") != NULL, "%s", err.msg);
	assert_nothing_left_but(tmp);
	assert_nothing_left(tmp);
	/* Replacing a session: the old one stays whole. */
	ck_assert_int_eq(nf_import(etl, s, false, NULL, &ist, &err), 0);
	ck_assert_int_eq(nf_import(etl, s, true, &flag, &ist, &err), NF_EINTR);
	assert_nothing_left_but(tmp);
	check_fixture_rows(s, 8);
	nf_test_rmtree(s);
	/* The command, signalled while it builds the timeline (retried when the
	 * import was done before the signal came). */
	big_fixture(big, 400000);
	for (int round = 0; round < 6 && got130 < 2; round++) {
		const char *sig = round & 1 ? "INT" : "TERM";
		int rc = sh("\"$NF\" import \"$1\" -o \"$2\" & p=$!; i=0; "
			    "while [ $i -lt 4000 ] && ! ls -d \"$2\".import-*/..timeline.db.tmp.* >/dev/null 2>&1; "
			    "do i=$((i+1)); sleep 0.001; done; kill -$3 $p; wait $p",
			    NF_TEST_ARGV(big, s, sig));

		assert_nothing_left_but(tmp);
		if (rc == 0) {
			nf_test_rmtree(s);
			continue;
		}
		ck_assert_msg(rc == 130 && nf_test_count_lines(errb) == 1 && strstr(errb, "interrupted"),
			      "exit %d: %s", rc, errb);
		assert_nothing_left(tmp);
		got130++;
	}
	ck_assert_msg(got130 > 0, "the import always finished before the signal");
	nf_test_rmtree(tmp);
}
END_TEST

/*
 * Damaged captures through the whole import, in-process (so ASan and UBSan
 * watch the ingest too): the fixture with bytes changed at deterministic
 * pseudo-random places, every one either imported or refused with a message,
 * and a refused one leaves no session.
 */
static void hws_fixture(const char *path, unsigned ps, bool hang);

/* Loop 0: the packet capture; 1: the hardware-scheduled one (test_hws_*). */
START_TEST(test_mutations)
{
	char tmp[1024], etl[1100], bad[1100], s[1100];
	struct stat st;
	uint8_t *good;
	uint64_t x = 0x9E3779B97F4A7C15ull;
	int imported = 0, refused = 0;
	FILE *fp;

	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(etl, sizeof(etl), "%s/fixture.etl", tmp);
	snprintf(bad, sizeof(bad), "%s/bad.etl", tmp);
	snprintf(s, sizeof(s), "%s/s", tmp);
	if (_i == 0)
		write_fixture(etl, 8);
	else
		hws_fixture(etl, 8, true);
	ck_assert_int_eq(stat(etl, &st), 0);
	good = malloc((size_t)st.st_size);
	ck_assert(good != NULL);
	fp = fopen(etl, "rb");
	ck_assert(fp && fread(good, 1, (size_t)st.st_size, fp) == (size_t)st.st_size);
	fclose(fp);
	/* The bytes that matter: each buffer's header and its records (the rest
	 * is filler), from the buffer sizes and offsets the file holds. */
	size_t *spots = malloc((size_t)st.st_size * sizeof(*spots)), n_spots = 0;

	ck_assert(spots != NULL);
	for (size_t b = 0; b + 72 <= (size_t)st.st_size;) {
		uint32_t bs = (uint32_t)good[b] | (uint32_t)good[b + 1] << 8 | (uint32_t)good[b + 2] << 16 |
			      (uint32_t)good[b + 3] << 24;
		uint32_t end = (uint32_t)good[b + 0x30] | (uint32_t)good[b + 0x31] << 8 |
			       (uint32_t)good[b + 0x32] << 16 | (uint32_t)good[b + 0x33] << 24;

		if (bs < 72 || b + bs > (size_t)st.st_size)
			break;
		for (size_t k = b; k < b + (end <= bs ? end : bs); k++)
			spots[n_spots++] = k;
		b += bs;
	}
	ck_assert_uint_gt(n_spots, 1000);
	for (int i = 0; i < 150; i++) {
		struct nf_import_result ist;
		struct nf_error err;
		uint8_t *m = malloc((size_t)st.st_size);
		int rc;

		ck_assert(m != NULL);
		memcpy(m, good, (size_t)st.st_size);
		for (int k = 0; k < 1 + i % 4; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			size_t at = spots[x % n_spots];

			m[at] = (uint8_t)(i % 3 == 0 ? m[at] ^ (1u << (x >> 60 & 7)) : (uint8_t)(x >> 56));
		}
		fp = fopen(bad, "wb");
		ck_assert(fp && fwrite(m, 1, (size_t)st.st_size, fp) == (size_t)st.st_size);
		fclose(fp);
		free(m);
		nf_error_clear(&err);
		rc = nf_import(bad, s, true, NULL, &ist, &err);
		if (rc == 0) {
			imported++;
			nf_test_rmtree(s);
		} else {
			refused++;
			ck_assert_msg(err.msg[0] != '\0', "mutation %d: refused without a message", i);
			ck_assert_msg(access(s, F_OK) != 0, "mutation %d: %s left behind", i, s);
		}
		assert_nothing_left_but(tmp);
	}
	fprintf(stderr, "mutations: %d imported, %d refused\n", imported, refused);
	/* Both outcomes happen: the mutations reach what the reader checks and
	 * what it hands on. */
	ck_assert_int_gt(imported, 0);
	ck_assert_int_gt(refused, 0);
	free(spots);
	free(good);
	nf_test_rmtree(tmp);
}
END_TEST

/* ---- the real capture ---- */

static bool real_capture(char *path, size_t len)
{
	nf_test_source_path(path, len, "../shared/real-traces/gpuvis-windows.etl");
	return access(path, R_OK) == 0;
}

/* One wait queue packet and its unwait, as read here from the file. */
struct pair {
	uint64_t pq;
	int64_t wait_ns, unwait_ns;
};

/*
 * Reads the wait packets (244) and unwaits (238) of the capture with the
 * reader itself, pairing them by packet address in time order (an unwait up
 * to 100 us before its wait still ends it), independently of the importer.
 */
static struct pair *read_pairs(const char *etl, size_t *n_out)
{
	struct nf_etl_reader *r = NULL;
	struct nf_etl_event ev;
	struct nf_error err;
	struct pair *p = NULL, *open_w = NULL, *orph = NULL;
	size_t n = 0, no = 0, nr = 0;

	nf_error_clear(&err);
	ck_assert_int_eq(nf_etl_reader_open(etl, NF_ETL_DECODE_DXGKRNL, &r, &err), 0);
	p = calloc(1 << 16, sizeof(*p));
	open_w = calloc(1 << 16, sizeof(*open_w));
	orph = calloc(1 << 16, sizeof(*orph));
	ck_assert(p && open_w && orph);
	while (nf_etl_reader_next(r, &ev, &err) == 1) {
		if (!ev.dxg)
			continue;
		if (ev.id == 244) {
			uint64_t pq = ev.dxg->f[NF_DXGF_WAIT_PACKET_START_pQueuePacket].u;
			size_t k;

			for (k = 0; k < nr; k++)
				if (orph[k].pq == pq && ev.ns - orph[k].unwait_ns <= 100000)
					break;
			if (k < nr) {
				p[n++] = (struct pair){ pq, ev.ns, orph[k].unwait_ns };
				orph[k] = orph[--nr];
				continue;
			}
			for (k = 0; k < no && open_w[k].pq != pq; k++)
				;
			if (k == no)
				no++;
			open_w[k] = (struct pair){ pq, ev.ns, -1 };
		} else if (ev.id == 238) {
			uint64_t pq = ev.dxg->f[NF_DXGF_UNWAIT_QUEUE_PACKET_QueuePacket].u;
			size_t k;

			for (k = 0; k < no && open_w[k].pq != pq; k++)
				;
			if (k < no) {
				p[n++] = (struct pair){ pq, open_w[k].wait_ns, ev.ns };
				open_w[k] = open_w[--no];
			} else if (nr < (1 << 16)) {
				orph[nr++] = (struct pair){ pq, -1, ev.ns };
			}
		}
	}
	nf_etl_reader_destroy(r);
	free(open_w);
	free(orph);
	*n_out = n;
	return p;
}

START_TEST(test_real_capture)
{
	char etl[4096], tmp[1024], s[1100], sql[512];
	struct pair *pairs;
	size_t n_pairs;

	if (!real_capture(etl, sizeof(etl))) {
		fprintf(stderr, "SKIP: %s is absent (real captures live in ../shared/real-traces)\n", etl);
		return;
	}
	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(s, sizeof(s), "%s/w", tmp);
	ck_assert_msg(nft(NF_TEST_ARGV("import", etl, "-o", s)) == 0, "%s", errb);
	ck_assert_msg(nft(NF_TEST_ARGV("info", s)) == 0, "%s", errb);
	ck_assert_msg(strstr(out, "OS build:       17134") && strstr(out, "CPUs:           8") &&
		      strstr(out, "pointer size:   4 bytes (logfile header); records: 8") &&
		      strstr(out, "Microsoft-Windows-DxgKrnl 196500") && strstr(out, "lacks:          kernel,rundown"),
		      "%s", out);
	ck_assert_msg(nft(NF_TEST_ARGV("check", s)) == 0, "%s%s", out, errb);
	ck_assert_msg(strstr(out, "(0 fence-related)") != NULL, "%s", out);
	/* The capture simply ended: its 5 GPU and 3 CPU waits still open are pending, no hang. */
	ck_assert_msg(strstr(out, "GPU waits never released: 5 of") &&
		      strstr(out, "0 never signaled, 0 blocked, 0 lowered signals, 8 pending at the end") &&
		      strstr(out, "verdict: legal anomalies only ("), "%s", out);
	ck_assert_msg(nft(NF_TEST_ARGV("check", "--json", s)) == 0, "%s%s", out, errb);
	ck_assert_msg(strstr(out, "\"verdict\": \"legal_anomalies\"") &&
		      strstr(out, "\"hangs\": {\"deadlock\": 0, \"never_signaled\": 0, \"blocked\": 0, \"lowered\": 0, "
			     "\"pending\": 8}") && strstr(out, "\"hang_findings\": ["), "%s", out);
	ck_assert_msg(sh("\"$NF\" report \"$1\" -o \"$2/w.png\"", NF_TEST_ARGV(s, tmp)) == 0, "%s",
		      errb);
	ck_assert_msg(nft(NF_TEST_ARGV("query", "--report", "stalls", s)) == 0, "%s", errb);
	/* Per event id counts, as an independent reading of the file found them
	 * (a throwaway walker of the buffers, outside the project). */
	expect_rows(s, "SELECT event_id, sum(events) FROM etw_counts WHERE name = 'Microsoft-Windows-DxgKrnl' "
		       "AND event_id IN (17, 23, 175, 176, 177, 178, 180, 238, 244, 245, 294, 297, 300) "
		       "GROUP BY event_id ORDER BY event_id",
		    "17|438\n23|13059\n175|2404\n176|2405\n177|2405\n178|3312\n180|6979\n238|1741\n244|1741\n"
		    "245|1924\n294|810\n297|73\n300|106\n");
	/* 211033 EVENT_HEADER records and the two EventTrace records of the header. */
	expect_rows(s, "SELECT sum(events) FROM etw_counts", "211035\n");
	/* Every wait packet whose unwait is in the capture ends at it. */
	pairs = read_pairs(etl, &n_pairs);
	ck_assert_uint_gt(n_pairs, 1700);
	{
		char db[1200];
		sqlite3 *h = NULL;
		sqlite3_stmt *st = NULL;
		size_t ok = 0;

		snprintf(db, sizeof(db), "%s/.timeline.db", s);
		ck_assert_int_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
		ck_assert_int_eq(sqlite3_prepare_v2(h, "SELECT count(*) FROM fence_ops WHERE op = 'wait' AND "
						    "queue IS NOT NULL AND queued_ns = ?1 AND end_ns = ?2", -1, &st,
						    NULL), SQLITE_OK);
		for (size_t i = 0; i < n_pairs; i++) {
			int64_t end = pairs[i].unwait_ns < pairs[i].wait_ns ? pairs[i].wait_ns : pairs[i].unwait_ns;

			sqlite3_bind_int64(st, 1, pairs[i].wait_ns);
			sqlite3_bind_int64(st, 2, end);
			ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
			if (sqlite3_column_int64(st, 0) >= 1)
				ok++;
			else
				fprintf(stderr, "wait at %" PRId64 " ns: no row ending at its unwait %" PRId64 "\n",
					pairs[i].wait_ns, pairs[i].unwait_ns);
			sqlite3_reset(st);
		}
		sqlite3_finalize(st);
		sqlite3_close(h);
		ck_assert_uint_eq(ok, n_pairs);
	}
	free(pairs);
	/*
	 * deps: of the waits whose satisfying signal is in the capture (a signal
	 * of the same sync object reaching the value, ended by the unwait or at
	 * most 100 us after it, as records of other CPUs can be late), at least
	 * 99 % are tied to such a signal.
	 */
	snprintf(sql, sizeof(sql), "%s",
		 "WITH w AS (SELECT id, fence, value, end_ns FROM fence_ops WHERE op = 'wait' AND end_ns IS NOT NULL), "
		 "sat AS (SELECT w.* FROM w WHERE EXISTS (SELECT 1 FROM fence_ops s WHERE s.op = 'signal' "
		 "  AND s.fence = w.fence AND s.value >= w.value AND s.end_ns <= w.end_ns + 100000)) "
		 "SELECT count(*), sum(EXISTS (SELECT 1 FROM deps d JOIN fence_ops s ON s.id = d.signal_id "
		 "  WHERE d.wait_id = sat.id AND s.fence = sat.fence AND s.value >= sat.value "
		 "  AND s.end_ns <= sat.end_ns + 100000)) FROM sat");
	{
		char *got = rows(s, sql);
		long long total = 0, tied = 0;

		ck_assert_int_eq(sscanf(got, "%lld|%lld", &total, &tied), 2);
		fprintf(stderr, "real capture: %lld of %lld waits with their signal in the capture are tied to it\n",
			tied, total);
		ck_assert_int_gt(total, 1700);
		ck_assert_msg(tied * 100 >= total * 99, "%lld of %lld tied", tied, total);
		free(got);
	}
	/* And the tie is the release: every GPU wait's signal ended within
	 * 100 us of its unwait (none long before: no wait is tied to an older
	 * signal of a value it had not reached). */
	expect_rows(s, "SELECT count(*) FROM deps d JOIN fence_ops w ON w.id = d.wait_id "
		       "JOIN fence_ops s ON s.id = d.signal_id WHERE w.queue IS NOT NULL "
		       "AND abs(s.end_ns - w.end_ns) > 100000", "0\n");
	nf_test_rmtree(tmp);
}
END_TEST

/* ---- hardware scheduling: GPU waits and signals of hardware queues ---- */

/*
 * A capture with hardware scheduling: a context with two hardware queues (A
 * from the rundown, B created), a native fence created (NF, 542 .. 544) and one
 * from the rundown (NF2, 545, at 3), monitored fences created (MF, 290) and from
 * the rundown (CF, 293 .. 292), their information events (291, 543), DMA
 * packets on both queues (450 .. 451), and no wait or
 * signal packets: the waits and signals are 295 and 294, ended by the
 * scheduler's 552 and 551, CPU signals (296, 550, 462) and what the queues
 * did. Handles fit 32 bits, so the same capture is written with 4- and 8-byte
 * pointers. With `hang`, a last wait on A for a value of NF nothing signals.
 * Ticks are 100 ns from 1000 (the start).
 */
enum { HW_CTX = 0xC10, HWQ_A = 0xA10, HWQ_B = 0xB10, NF = 0x7100, NF2 = 0x7200, MF = 0x6100, CF = 0x6200,
       HW_DEV = 0xD10 };

/* 295: hwq waits for fence >= value. */
static void gpu_wait(struct fx *f, int64_t t, uint16_t cpu, uint32_t tid, uint64_t hwq, uint64_t fence, uint64_t value)
{
	struct nf_etlw_buf b = B(f);

	nf_etlw_put_ptr(&b, hwq);
	objects(&b, fence, value);
	dxg(f, 295, 0, cpu, tid, t, &b);
}

/* 294 (version 1): the queues signal fence to value. */
static void gpu_signal(struct fx *f, int64_t t, uint16_t cpu, uint32_t tid, const uint64_t *hwq, uint32_t n,
		       uint64_t fence, uint64_t value)
{
	struct nf_etlw_buf b = B(f);

	nf_etlw_put_u32(&b, n);
	for (uint32_t k = 0; k < n; k++)
		nf_etlw_put_ptr(&b, hwq[k]);
	nf_etlw_put_u32(&b, 0);
	objects(&b, fence, value);
	nf_etlw_put_u32(&b, 0x10);
	dxg(f, 294, 1, cpu, tid, t, &b);
}

/* 550, 551 or 552: the scheduler signals fence to value (VidSch objects, then
 * the Dxg objects, which are other handles). */
static void sched_signal(struct fx *f, uint16_t id, int64_t t, uint64_t fence, uint64_t value)
{
	struct nf_etlw_buf b = B(f);

	nf_etlw_put_u32(&b, 1);
	nf_etlw_put_ptr(&b, fence);
	nf_etlw_put_ptr(&b, fence + 0x8000);
	nf_etlw_put_u64(&b, value);
	nf_etlw_put_u32(&b, 0);
	if (id == 552) {
		nf_etlw_put_u32(&b, 2);
		nf_etlw_put_ptr(&b, 0);
		nf_etlw_put_ptr(&b, 0);
	}
	dxg(f, id, 0, 1, 0, t, &b);
}

static void hws_fixture(const char *path, unsigned ps, bool hang)
{
	struct nf_etlw_options o;
	struct nf_etlw_buf b;
	struct fx f;
	const uint64_t a[] = { HWQ_A }, bq[] = { HWQ_B }, both[] = { HWQ_A, HW_CTX };

	memset(&o, 0, sizeof(o));
	o.cpus = 2;
	o.perf_freq = 10000000;
	o.header_ticks = 1000;
	o.header_pointer_size = ps;
	o.os_build = 22631;
	f.w = nf_etlw_create(&o);
	f.ps = ps;
	f.pid = 0;
	ck_assert(f.w != NULL);
	/* Rundown: the device of process 4242 on the adapter, node 0 "3D", its context, queue A. */
	device_rundown(&f, 1000, 4242, HW_DEV);
	node_metadata(&f, 1001, 0, 1, "3D");
	context_rundown(&f, 1002, HW_DEV, 0, HW_CTX);
	hwqueue_event(&f, 424, 1003, HW_CTX, HWQ_A);
	fence_life(&f, 545, 1005, NF2, 3);  /* a native fence present at the start, at 3 */
	hwqueue_event(&f, 422, 1010, HW_CTX, HWQ_B);
	fence_life(&f, 542, 1020, NF, 0);
	fence_life(&f, 290, 1030, MF, 0);
	fence_life(&f, 293, 1031, CF, 0);  /* a monitored fence present at the start */
	f.pid = 4242;
	/* Cross-queue: A waits for NF 1 behind its DMA packet 1; B signals it after its packet 1. */
	hw_dma(&f, false, 1100, 0, 300, HWQ_A, 1);
	gpu_wait(&f, 1110, 0, 300, HWQ_A, NF, 1);
	hw_dma(&f, false, 1120, 0, 300, HWQ_A, 2);
	hw_dma(&f, false, 1150, 1, 301, HWQ_B, 1);
	gpu_signal(&f, 1160, 1, 301, bq, 1, NF, 1);
	hw_dma(&f, true, 1300, 0, 0, HWQ_A, 1);       /* A reaches the wait */
	hw_dma(&f, true, 1400, 1, 0, HWQ_B, 1);
	sched_signal(&f, 552, 1410, NF, 1);           /* B's signal: the wait ends */
	hw_dma(&f, true, 1600, 0, 0, HWQ_A, 2);
	/* B waits for MF 5, which nothing in the capture signals; B's next packet completes. */
	gpu_wait(&f, 1700, 1, 301, HWQ_B, MF, 5);
	hw_dma(&f, false, 1710, 1, 301, HWQ_B, 2);
	hw_dma(&f, true, 1800, 1, 0, HWQ_B, 2);
	/* A waits for CF 3, signaled from the CPU. */
	gpu_wait(&f, 2000, 0, 300, HWQ_A, CF, 3);
	b = B(&f);
	nf_etlw_put_ptr(&b, HW_DEV);
	objects(&b, CF, 3);
	dxg(&f, 296, 0, 1, 302, 2100, &b);
	/* B waits for MF 7 that A and the context signal together (one 294, two contexts). */
	gpu_wait(&f, 2150, 1, 301, HWQ_B, MF, 7);
	gpu_signal(&f, 2200, 0, 300, both, 2, MF, 7);
	sched_signal(&f, 552, 2300, MF, 7);
	/* A signals NF 2 at once (551); B's later wait for it is satisfied on arrival. */
	gpu_signal(&f, 2400, 0, 300, a, 1, NF, 2);
	sched_signal(&f, 551, 2401, NF, 2);
	gpu_wait(&f, 2500, 1, 301, HWQ_B, NF, 2);
	/* A waits for MF 8, which a 552 signals whose 294 is not in the capture. */
	gpu_wait(&f, 2550, 0, 300, HWQ_A, MF, 8);
	sched_signal(&f, 552, 2600, MF, 8);
	/* CPU signals from the scheduler (550) and immediate ones (462). */
	fence_life(&f, 291, 2690, MF, 0);  /* information events change nothing */
	fence_life(&f, 543, 2691, NF, 0);
	gpu_wait(&f, 2700, 1, 301, HWQ_B, NF, 3);
	sched_signal(&f, 550, 2750, NF, 3);
	gpu_wait(&f, 2800, 0, 300, HWQ_A, MF, 10);
	b = B(&f);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_ptr(&b, MF);
	nf_etlw_put_u64(&b, 10);
	dxg(&f, 462, 0, 0, 300, 2850, &b);
	/* B signals NF 4 and no 551/552 says when; its next packet completes after it. */
	gpu_signal(&f, 2900, 1, 301, bq, 1, NF, 4);
	hw_dma(&f, false, 2910, 1, 301, HWQ_B, 3);
	/* A waits for NF2 2: its initial value already satisfies it. */
	gpu_wait(&f, 2950, 0, 300, HWQ_A, NF2, 2);
	hw_dma(&f, true, 2990, 1, 0, HWQ_B, 3);
	if (hang)
		gpu_wait(&f, 3000, 0, 300, HWQ_A, NF, 99);
	f.pid = 0;
	fence_life(&f, 544, 3100, NF, 0);  /* NativeFenceStop, then CF's stop and B's HwQueueStop */
	fence_life(&f, 292, 3150, CF, 0);
	hwqueue_event(&f, 423, 3200, HW_CTX, HWQ_B);
	ck_assert_int_eq(nf_etlw_save(f.w, path), 0);
	nf_etlw_destroy(f.w);
}

static void import_hws(unsigned ps, bool hang, char *tmp, size_t tlen, char *session, size_t slen)
{
	char etl[1200];

	nf_test_tmpdir(tmp, tlen);
	snprintf(etl, sizeof(etl), "%s/hws.etl", tmp);
	snprintf(session, slen, "%s/s", tmp);
	hws_fixture(etl, ps, hang);
	ck_assert_msg(nft(NF_TEST_ARGV("import", etl, "-o", session)) == 0, "%s", errb);
}

static void check_hws_rows(const char *s, unsigned ps)
{
	char want[256];

	snprintf(want, sizeof(want), "%u\n", ps);
	expect_rows(s, "SELECT value FROM meta WHERE key = 'etw_record_pointer_sizes'", want);
	expect_rows(s, "SELECT queue, adapter, node, name, start_ns, stop_ns FROM queues ORDER BY queue",
		    "1|0|0|3D context 0xc10 (process 4242)||\n"
		    "2|0|0|3D hwqueue 0xa10||\n"
		    "3|0|0|3D hwqueue 0xb10|1000|220000\n");
	expect_rows(s, "SELECT f.fence, e.handle, e.kind, f.initial_value, f.created_ns, f.destroyed_ns FROM fences f "
		       "JOIN etw_sync_objects e USING (fence) ORDER BY fence",
		    "1|0x7200|native_fence|3||\n2|0x7100|native_fence|0|2000|210000\n"
		    "3|0x6100|monitored_fence|0|3000|\n4|0x6200|monitored_fence|0||215000\n");
	/* queue 2 is A, 3 is B; fence 1 NF2, 2 NF, 3 MF, 4 CF */
	expect_rows(s, "SELECT id, queue, op, fence, value, queued_ns, observed_ns, end_ns, status, thread "
		       "FROM fence_ops ORDER BY id",
		    "1|2|wait|2|1|11000|30000|41000|complete|300\n"     /* A behind packet 1, released by B */
		    "2|3|signal|2|1|16000||41000|complete|301\n"
		    "3|3|wait|3|5|70000|70000||end_unknown|301\n"     /* done before B's packet 2 completed */
		    "4|2|wait|4|3|100000|100000|110000|complete|300\n" /* released by the CPU */
		    "5|3|wait|3|7|115000|115000|130000|complete|301\n"
		    "6|2|signal|3|7|120000||130000|complete|300\n"
		    "7|1|signal|3|7|120000||130000|complete|300\n"
		    "8|2|signal|2|2|140000||140100|complete|300\n"
		    "9|3|wait|2|2|150000|150000|150000|complete|301\n" /* satisfied on arrival */
		    "10|2|wait|3|8|155000|155000|160000|complete|300\n"
		    "11||signal|3|8|||160000|complete|\n"
		    "12|3|wait|2|3|170000|170000|175000|complete|301\n"
		    "13|2|wait|3|10|180000|180000|185000|complete|300\n"
		    "14|3|signal|2|4|190000|||end_unknown|301\n"
		    "15|2|wait|1|2|195000|195000|195000|complete|300\n"); /* by NF2's initial value */
	expect_rows(s, "SELECT op, event IS NOT NULL, end_event IS NOT NULL, end_bound_ns FROM etw_gpu_ops ORDER BY op",
		    "1|1|0|\n2|1|1|\n3|1|0|80000\n4|1|0|\n5|1|0|\n6|1|1|\n7|1|1|\n8|1|1|\n9|1|0|\n10|1|0|\n"
		    "11|0|1|\n12|1|0|\n13|1|0|\n14|1|0|199000\n15|1|0|\n");
	/* Each wait tied to what released it: a GPU signal, the CPU, or nothing in the capture. */
	expect_rows(s, "SELECT wait_id, signal_id, cpu_signal, stall_ns FROM deps ORDER BY wait_id",
		    "1|2||11000\n4||1|10000\n5|6||15000\n9|8||0\n10|11||5000\n12||2|5000\n13||3|5000\n15|||0\n");
	expect_rows(s, "SELECT id, thread, fence, value, ts_ns FROM cpu_signals ORDER BY id",
		    "1|302|4|3|110000\n2|0|2|3|175000\n3|300|3|10|185000\n");
	expect_rows(s, "SELECT id, queue, submission_id, start_ns, end_ns, status FROM dma_packets ORDER BY id",
		    "1|2|1|10000|30000|complete\n2|2|2|12000|60000|complete\n3|3|1|15000|40000|complete\n"
		    "4|3|2|71000|80000|complete\n5|3|3|191000|199000|complete\n");
	/* Every payload field of the decoded events, by name. */
	expect_rows(s, "SELECT e.fields FROM dxgkrnl_events e JOIN etw_gpu_ops g ON g.event = e.id WHERE g.op = 5",
		    "{\"hContext\":\"0xb10\",\"ObjectCount\":1,\"ObjectArray\":[\"0x6100\"],\"MonitoredFenceValue\":[7]}\n");
	expect_rows(s, "SELECT e.fields ->> 'ContextCount', e.fields -> 'hContext', e.fields ->> 'InternalFlagsFlags' "
		       "FROM dxgkrnl_events e JOIN etw_gpu_ops g ON g.event = e.id WHERE g.op = 6",
		    "2|[\"0xa10\",\"0xc10\"]|16\n");
	expect_rows(s, "SELECT n.name, e.fields FROM dxgkrnl_events e JOIN dxgkrnl_names n USING (event_id) "
		       "JOIN etw_gpu_ops g ON g.end_event = e.id WHERE g.op = 2",
		    "VidSchiCompleteSignalCommmand|{\"ObjectCount\":1,\"VidSchSyncObjectArray\":[\"0x7100\"],"
		    "\"DxgSyncObjectArray\":[\"0xf100\"],\"FenceValues\":[1],\"AlwaysSignaled\":0,\"Flags\":2,"
		    "\"pCpuEvent\":\"0x0\",\"pGuestCpuEvent\":\"0x0\"}\n");
	expect_rows(s, "SELECT fields FROM dxgkrnl_events WHERE event_id = 250",
		    "{\"pDxgAdapter\":\"0xa000\",\"NodeOrdinal\":0,\"EngineType\":1,\"FriendlyName\":\"3D\"}\n");
	/* Every decoded DxgKrnl event has its row; the mapped ones are not in etw_events. */
	expect_rows(s, "SELECT (SELECT count(*) FROM dxgkrnl_events), (SELECT sum(events) FROM etw_counts "
		       "WHERE name = 'Microsoft-Windows-DxgKrnl'), (SELECT count(*) FROM etw_events "
		       "WHERE event_id IN (294, 295, 551, 552))", "44|44|0\n");
}

/* Loop 0: 8-byte pointers, 1: 4-byte pointers; the same rows. */
START_TEST(test_hws_rows)
{
	char tmp[1024], s[1100];
	unsigned ps = _i == 0 ? 8 : 4;

	import_hws(ps, false, tmp, sizeof(tmp), s, sizeof(s));
	check_hws_rows(s, ps);
	nf_test_rmtree(tmp);
}
END_TEST


/* The critical paths of a cross-queue wait and of a wait released by a signal
 * whose 294 is not in the capture, exactly. */
START_TEST(test_hws_critical_path)
{
	char tmp[1024], s[1100];

	import_hws(8, false, tmp, sizeof(tmp), s, sizeof(s));
	ck_assert_msg(nft(NF_TEST_ARGV("critical-path", s, "--op", "1")) == 0, "%s", errb);
	ck_assert_str_eq(out,
		"critical path of op 1 (wait fence 0x2 >= 1) on queue 0x2 (3D hwqueue 0xa10)\n"
		"queued at 11000 ns, ended at 41000 ns: latency 30000 ns in 2 segments\n"
		"      start_ns         end_ns    duration_ns  on                           doing\n"
		"         11000          16000           5000  thread 301                   running until it queued op 2 "
		"(signal fence 0x2 to 1)\n"
		"         16000          41000          25000  queue 0x3 (3D hwqueue 0xb10) executing op 2 (signal fence "
		"0x2 to 1)\n");
	ck_assert_msg(nft(NF_TEST_ARGV("critical-path", s, "--op", "10")) == 0, "%s", errb);
	ck_assert_msg(strstr(out, "        155000         160000           5000  queue 0x2 (3D hwqueue 0xa10) waiting on "
			     "fence 0x3 >= 8 (op 10), released by op 11\n") != NULL, "%s", out);
	/* the last to finish: released from the CPU (462) */
	ck_assert_msg(nft(NF_TEST_ARGV("critical-path", s)) == 0, "%s", errb);
	ck_assert_msg(strstr(out, "critical path of op 15 (wait fence 0x1 >= 2)") && strstr(out, "in 0 segments") &&
		      nft(NF_TEST_ARGV("critical-path", s, "--op", "13")) == 0 &&
		      strstr(out, "critical path of op 13 (wait fence 0x3 >= 10)") &&
		      strstr(out, "thread 300                   running until its CPU signal 3"), "%s", out);
	nf_test_rmtree(tmp);
}
END_TEST

/* check: the capture is whole; a wait for a value nothing signals is a hang. */
START_TEST(test_hws_check)
{
	char tmp[1024], s[1100];

	import_hws(8, false, tmp, sizeof(tmp), s, sizeof(s));
	ck_assert_msg(nft(NF_TEST_ARGV("check", s)) == 0, "%s%s", out, errb);
	ck_assert_msg(strstr(out, "GPU waits never released: 0 of 9") && strstr(out, "verdict: whole"), "%s", out);
	nf_test_rmtree(tmp);
	import_hws(4, true, tmp, sizeof(tmp), s, sizeof(s));
	expect_rows(s, "SELECT id, queue, value, observed_ns, status FROM fence_ops WHERE id = 16",
		    "16|2|99|200000|pending\n");
	ck_assert_int_eq(nft(NF_TEST_ARGV("check", s)), 1);
	ck_assert_msg(strstr(out, "GPU waits never released: 1 of 10") &&
		      strstr(out, "never signaled: queue 0x2 (3D hwqueue 0xa10) op 16 waits fence 0x2 >= 99") &&
		      strstr(out, "no signal in the session reaches 99 (highest: 4 by op 14)") &&
		      strstr(out, "verdict: hang (1 waits can never be satisfied)"), "%s", out);
	nf_test_rmtree(tmp);
}
END_TEST

/* The picture: the hardware queues' rows carry their waits (stalled part) and signals. */
START_TEST(test_hws_report)
{
	char tmp[1024], s[1100], png[1200], db[1200];
	struct nf_render_options ro = { 0 };
	struct nf_render_layout lay;
	struct nf_error err;
	sqlite3 *sql;
	double y0, y1;

	import_hws(8, false, tmp, sizeof(tmp), s, sizeof(s));
	snprintf(png, sizeof(png), "%s/r.png", tmp);
	ck_assert_msg(nft(NF_TEST_ARGV("report", s, "-o", png)) == 0, "%s", errb);
	snprintf(db, sizeof(db), "%s/.timeline.db", s);
	ck_assert_int_eq(sqlite3_open_v2(db, &sql, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	ro.output = png;
	ro.from_ns = -1;
	ro.to_ns = -1;
	nf_error_clear(&err);
	ck_assert_int_eq(nf_render_layout_build(sql, &ro, &lay, &err), 0);
	ck_assert_uint_eq(lay.n_queues, 3);
	const struct nf_render_row *qa = nf_render_layout_queue(&lay, 2), *qb = nf_render_layout_queue(&lay, 3);

	ck_assert_ptr_nonnull(qa);
	ck_assert_ptr_nonnull(qb);
	ck_assert_str_eq(qa->name, "3D hwqueue 0xa10");
	cairo_surface_t *img = cairo_image_surface_create_from_png(png);

	ck_assert_int_eq(cairo_surface_status(img), CAIRO_STATUS_SUCCESS);
	/* A's wait: queued 11 us, observed 30 us (light pink), stalled to 41 us (darker) */
	nf_render_lane_extent(qa, NF_LANE_WAIT, &y0, &y1);
	ck_assert_uint_eq(pixel(img, nf_render_layout_x(&lay, 25000), (y0 + y1) / 2), 0xF4B6C2);
	ck_assert_uint_eq(pixel(img, nf_render_layout_x(&lay, 38000), (y0 + y1) / 2), 0xE3748F);
	ck_assert_uint_ne(pixel(img, nf_render_layout_x(&lay, 5000), (y0 + y1) / 2), 0xF4B6C2);
	/* B's signal of that fence, queued 16 us, ended 41 us */
	nf_render_lane_extent(qb, NF_LANE_SIGNAL, &y0, &y1);
	ck_assert_uint_eq(pixel(img, nf_render_layout_x(&lay, 30000), (y0 + y1) / 2), 0xC2185B);
	ck_assert_uint_ne(pixel(img, nf_render_layout_x(&lay, 50000), (y0 + y1) / 2), 0xC2185B);
	cairo_surface_destroy(img);
	nf_render_layout_release(&lay);
	sqlite3_close(sql);
	nf_test_rmtree(tmp);
}
END_TEST

static Suite *etw_suite(void)
{
	Suite *s = suite_create("etw_import");
	TCase *tc = tcase_create("etw_import");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_fixture_rows_64);
	tcase_add_test(tc, test_fixture_rows_32);
	tcase_add_test(tc, test_fixture_no_cpu_signal);
	tcase_add_test(tc, test_fixture_commands);
	tcase_add_test(tc, test_damaged_leaves_nothing);
	tcase_add_test(tc, test_kernel_records);
	tcase_add_test(tc, test_rundown_rows);
	tcase_add_loop_test(tc, test_mutations, 0, 2);
	tcase_add_test(tc, test_capture_is_a_copy);
	tcase_add_test(tc, test_timeline_built_once);
	tcase_add_test(tc, test_check_hang);
	tcase_add_test(tc, test_interrupted_leaves_nothing);
	tcase_add_test(tc, test_force_replaces_sessions_only);
	tcase_add_test(tc, test_size_mismatch);
	tcase_add_test(tc, test_fixture_report);
	tcase_add_loop_test(tc, test_hws_rows, 0, 2);
	tcase_add_test(tc, test_hws_critical_path);
	tcase_add_test(tc, test_hws_check);
	tcase_add_test(tc, test_hws_report);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	/* `test_etw_import real`: the real capture only, its own ctest (skips). */
	if (argc > 1 && !strcmp(argv[1], "real")) {
		char etl[4096];

		if (!real_capture(etl, sizeof(etl))) {
			printf("SKIP: %s is absent (real captures live in ../shared/real-traces)\n", etl);
			return 77;
		}
		Suite *s = suite_create("etw_real");
		TCase *tc = tcase_create("etw_real");

		tcase_set_timeout(tc, 600);
		tcase_add_test(tc, test_real_capture);
		suite_add_tcase(s, tc);
		return nf_test_main(s);
	}
	return nf_test_main(etw_suite());
}
