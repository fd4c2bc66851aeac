/*
 * The readers' views of the timeline (schemas/timeline-views.sql: item_kinds,
 * lanes, items, item_links, queue_labels, threads, lost_events), row for row:
 * on the Linux kernel fixtures (samples/kernel/NAME.dat imported by the real
 * `nftrace import`), on a Windows ETW capture written by the ETL test writer
 * (tests/html/html_etl.c), and on a timeline made here from the schema files
 * with the GPU jobs whose finish is only bounded (jobs.finished_bound_ns,
 * bound_source 'ring_order', 'recording_start'), so that an item's unknown end and its
 * bound reach every reader in one place.
 */
#include <check.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nf_test.h"
#include "schema_db.h"
#include "html_etl.h"

#define OUT_MAX (1 << 16)
static char out[OUT_MAX], errb[OUT_MAX];

static int nft(const char *const args[])
{
	return nf_test_nftrace_run(args, out, sizeof(out), errb, sizeof(errb));
}

/* Every row of sql on db, columns joined by '|', rows ended by '\n' (NULL as ""). */
static void rows_of(sqlite3 *db, const char *sql, char *buf, size_t len)
{
	sqlite3_stmt *st;
	size_t n = 0;
	int rc;

	buf[0] = '\0';
	ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		for (int c = 0; c < sqlite3_column_count(st); c++) {
			const unsigned char *t = sqlite3_column_text(st, c);

			n += (size_t)snprintf(buf + n, len - n, "%s%s", c ? "|" : "", t ? (const char *)t : "");
			ck_assert_uint_lt(n, len);
		}
		n += (size_t)snprintf(buf + n, len - n, "\n");
		ck_assert_uint_lt(n, len);
	}
	ck_assert_int_eq(rc, SQLITE_DONE);
	sqlite3_finalize(st);
}

static void expect(sqlite3 *db, const char *sql, const char *want)
{
	static char got[OUT_MAX];

	rows_of(db, sql, got, sizeof(got));
	ck_assert_msg(!strcmp(got, want), "%s\n got:\n%s\n want:\n%s", sql, got, want);
}

/* Imports samples/kernel/NAME.dat into a session under tmp and opens its timeline read-only. */
static sqlite3 *open_kernel_fixture(const char *name, char *tmp, size_t tlen)
{
	char rel[128], dat[4096], s[4200], db[4300];
	sqlite3 *sql;

	nf_test_tmpdir(tmp, tlen);
	snprintf(rel, sizeof(rel), "samples/kernel/%s.dat", name);
	nf_test_source_path(dat, sizeof(dat), rel);
	snprintf(s, sizeof(s), "%s/s", tmp);
	ck_assert_msg(nft(NF_TEST_ARGV("import", dat, "-o", s)) == 0, "%s", errb);
	ck_assert_msg(nft(NF_TEST_ARGV("query", s, "select 1")) == 0, "%s", errb);  /* builds the timeline */
	snprintf(db, sizeof(db), "%s/.timeline.db", s);
	ck_assert_int_eq(sqlite3_open_v2(db, &sql, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	return sql;
}

#define ITEM_COLS "kind, id, lane, thread, queued_ns, start_ns, end_ns, end_known, bound_ns, bound_reason, instant, " \
		  "status, label, queue, fence, value"

/*
 * drm_sched and amdgpu jobs on two rings, three vblanks on two CRTCs, two
 * markers; job 2 waited for job 1's finished fence, job 4 for job 2's
 * scheduled one, job 3 for a fence of no job in the trace; the jobs' fence
 * timelines are hidden queues (drawn as the rings' lanes).
 */
START_TEST(test_kernel_drm_sched)
{
	char tmp[1024];
	sqlite3 *db = open_kernel_fixture("drm-sched", tmp, sizeof(tmp));

	expect(db, "SELECT * FROM lanes ORDER BY ord",
	       "[\"job\",\"amdgpu\",\"gfx_0.0.0\"]|engine|job|GPU jobs|0|amdgpu gfx_0.0.0|jobs|||1\n"
	       "[\"job\",\"drm_sched\",\"sdma0\"]|engine|job|GPU jobs|0|drm_sched sdma0|jobs|||2\n"
	       "[\"vblank\",0]|display|vblank|Display|1|CRTC 0|vblanks|||3\n"
	       "[\"vblank\",1]|display|vblank|Display|1|CRTC 1|vblanks|||4\n");
	expect(db, "SELECT " ITEM_COLS " FROM items ORDER BY kind, id",
	       "job|1|[\"job\",\"amdgpu\",\"gfx_0.0.0\"]|500|1000000|1100000|2000000|1|||0|complete|gfx_0.0.0||4294967597|1\n"
	       "job|2|[\"job\",\"amdgpu\",\"gfx_0.0.0\"]|500|1200000|2050000|3000000|1|||0|complete|gfx_0.0.0||4294967597|2\n"
	       "job|3|[\"job\",\"drm_sched\",\"sdma0\"]|90|1500000|1600000|1900000|1|||0|complete|sdma0|||\n"
	       "job|4|[\"job\",\"amdgpu\",\"gfx_0.0.0\"]|501|2499000|3100000||0|||0|unfinished|gfx_0.0.0||4294967597|3\n"
	       "marker|1||500||900000|900000|1|||1||frame_1_begin|||\n"
	       "marker|2||500||2400000|2400000|1|||1||frame_2_begin|||\n"
	       "vblank|1|[\"vblank\",0]|||500000|500000|1|||1||vblank|||\n"
	       "vblank|2|[\"vblank\",1]|||1000000|1000000|1|||1||vblank|||\n"
	       "vblank|3|[\"vblank\",0]|||2500000|2500000|1|||1||vblank|||\n");
	/* The item's fence is its finished fence's timeline, a row of fences (no id decoded). */
	expect(db, "SELECT count(*) FROM items i JOIN fences f ON f.fence = i.fence", "3\n");
	expect(db, "SELECT detail FROM items WHERE kind = 'job' AND id = 1",
	       "{\"job id\":1,\"driver\":\"amdgpu\",\"job\":11,\"context\":301,\"seqno\":1,\"thread\":500,"
	       "\"process\":null,\"status\":\"complete\",\"finish source\":\"event\",\"finished no later than ns\":null,"
	       "\"bound source\":null}\n");
	expect(db, "SELECT detail FROM items WHERE kind = 'vblank' AND id = 3", "{\"crtc\":0,\"seq\":101}\n");
	expect(db, "SELECT * FROM item_links ORDER BY link",
	       "1|job|2|job|1|finished|fence 301/1|1202000\n"
	       "2|job|3||||fence 77/5|1501000\n"
	       "3|job|4|job|2|scheduled|fence 300/2|2501000\n");
	expect(db, "SELECT * FROM queue_labels ORDER BY queue",
	       "4294967596|drm_sched gfx_0.0.0 (context 300)|hw queue 0x10000012c|1|Linux kernel dma_fence timelines\n"
	       "4294967597|drm_sched gfx_0.0.0 (context 301)|hw queue 0x10000012d|1|Linux kernel dma_fence timelines\n");
	expect(db, "SELECT * FROM threads ORDER BY thread", "90|kworker/u64:2||\n200|gfx_0.0.0||\n500|app||\n501|app-render||\n");
	expect(db, "SELECT count(*) FROM lost_events", "0\n");
	/* Every item kind with its words and colours; every lane's kind is one of them. */
	expect(db, "SELECT kind, ord, noun, plural, colour FROM item_kinds ORDER BY ord",
	       "job|1|job|jobs|#2E7D32\nvblank|2|vblank|vblanks|#1E88E5\nmarker|3|marker|markers|#EF6C00\n"
	       "dma|4|DMA packet|DMA packets|#4F9D69\nvsync|5|VSync|VSyncs|#7E57C2\n");
	expect(db, "SELECT count(*) FROM lanes WHERE item_kind NOT IN (SELECT kind FROM item_kinds)", "0\n");
	/* Every lane an item names is a lane. */
	expect(db, "SELECT count(*) FROM items WHERE lane IS NOT NULL AND lane NOT IN (SELECT lane FROM lanes)", "0\n");
	sqlite3_close(db);
	nf_test_rmtree(tmp);
}
END_TEST

/* i915 requests: two engines' lanes; a request never started has only its queued part. */
START_TEST(test_kernel_i915)
{
	char tmp[1024];
	sqlite3 *db = open_kernel_fixture("i915", tmp, sizeof(tmp));

	expect(db, "SELECT lane, kind, label, what, ord FROM lanes ORDER BY ord",
	       "[\"job\",\"i915\",\"rcs0\"]|engine|i915 rcs0|jobs|1\n[\"job\",\"i915\",\"vcs1\"]|engine|i915 vcs1|jobs|2\n");
	expect(db, "SELECT " ITEM_COLS " FROM items ORDER BY kind, id",
	       "job|1|[\"job\",\"i915\",\"rcs0\"]|600|0|100000|1000000|1|||0|complete|rcs0|||\n"
	       "job|2|[\"job\",\"i915\",\"rcs0\"]|600|200000|1050000|2000000|1|||0|complete|rcs0|||\n"
	       "job|3|[\"job\",\"i915\",\"vcs1\"]|601|400000|600000|900000|1|||0|complete|vcs1|||\n"
	       "job|4|[\"job\",\"i915\",\"vcs1\"]|601|2500000|||0|||0|queued|vcs1|||\n");
	expect(db, "SELECT count(*) FROM item_links", "0\n");
	expect(db, "SELECT * FROM threads ORDER BY thread", "600|game||\n601|decoder||\n");
	sqlite3_close(db);
	nf_test_rmtree(tmp);
}
END_TEST

/* Bare dma_fence timelines: queues of their own (no jobs: not hidden), and the ring buffer's lost events. */
START_TEST(test_kernel_dma_fence)
{
	char tmp[1024];
	sqlite3 *db = open_kernel_fixture("dma-fence", tmp, sizeof(tmp));

	expect(db, "SELECT count(*) FROM lanes", "0\n");
	expect(db, "SELECT count(*) FROM items", "0\n");
	expect(db, "SELECT * FROM queue_labels ORDER BY queue",
	       "4294967303|nfgpu gfx (context 7)|hw queue 0x100000007|0|Linux kernel dma_fence timelines\n"
	       "4294967305|nfgpu compute (context 9)|hw queue 0x100000009|0|Linux kernel dma_fence timelines\n");
	expect(db, "SELECT * FROM lost_events",
	       "2500000|5|kernel_lost|CPU 1: the kernel ring buffer lost 5 events before this point\n");
	expect(db, "SELECT * FROM threads ORDER BY thread", "100|render||\n200|waiter||\n201|poller||\n");
	sqlite3_close(db);
	nf_test_rmtree(tmp);
}
END_TEST

/*
 * The ETW capture of html_etl.h: a lane per GPU node with queues (labelled
 * from the node's name, "Node N" without one) holding its DMA packets, a
 * display lane per VSync target on the adapter; contexts numbered by the
 * importer say where their handle is.
 */
START_TEST(test_etw_capture)
{
	char tmp[1024], etl[1200], s[1200], db[1300];
	sqlite3 *sql;

	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(etl, sizeof(etl), "%s/c.etl", tmp);
	snprintf(s, sizeof(s), "%s/s", tmp);
	ck_assert_int_eq(html_etl_write(etl), 0);
	ck_assert_msg(nft(NF_TEST_ARGV("import", etl, "-o", s)) == 0, "%s", errb);
	ck_assert_msg(nft(NF_TEST_ARGV("query", s, "select 1")) == 0, "%s", errb);
	snprintf(db, sizeof(db), "%s/.timeline.db", s);
	ck_assert_int_eq(sqlite3_open_v2(db, &sql, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	expect(sql, "SELECT * FROM lanes ORDER BY ord",
	       "[\"dma\",0,0]|node|dma|Display|1|Node 0|DMA packets|0|0|1\n"
	       "[\"dma\",0,1]|node|dma|Display|1|Node 1|DMA packets|0|1|2\n"
	       "[\"vsync\",0,0]|display|vsync|Display|1|target 0|VSyncs|0||3\n");
	expect(sql, "SELECT " ITEM_COLS " FROM items ORDER BY kind, id",
	       "dma|1|[\"dma\",0,0]|||40000|51000|1|||0|complete|dma packet|1||\n"
	       "dma|2|[\"dma\",0,0]|||52000|58000|1|||0|complete|dma packet|1||\n"
	       "dma|3|[\"dma\",0,1]|||63000|70000|1|||0|complete|dma packet|2||\n"
	       "vsync|1|[\"vsync\",0,0]|||100000|100000|1|||1||vsync|||\n"
	       "vsync|2|[\"vsync\",0,0]|||116600|116600|1|||1||vsync|||\n");
	/* The packet's context is an argument written as a handle ({"hex": n}). */
	expect(sql, "SELECT detail FROM items WHERE kind = 'dma' AND id = 3",
	       "{\"dma packet id\":3,\"queue\":{\"hex\":2},\"packet type\":1,\"submission id\":90,\"queue seq\":1,"
	       "\"isr_ns\":null,\"status\":\"complete\"}\n");
	expect(sql, "SELECT queue, label, handle, hidden, group_label FROM queue_labels ORDER BY queue",
	       "1|Node 0 context 0xc0a 0x1|queue 1 (etw_contexts)|0|Adapter 0 \xC2\xB7 Adapter 0xa000\n"
	       "2|Node 1 context 0xc0b 0x2|queue 2 (etw_contexts)|0|Adapter 0 \xC2\xB7 Adapter 0xa000\n");
	expect(sql, "SELECT count(*) FROM item_links", "0\n");
	sqlite3_close(sql);
	nf_test_rmtree(tmp);
}
END_TEST

/*
 * Jobs whose finish the file does not hold (issue 28: finished_ns NULL with
 * finish_reason, and maybe a proven bound, finished_bound_ns): the item's end
 * is unknown with the reason, the bound is bound_ns with its words, never an
 * end; a finish in the file is the end.
 */
START_TEST(test_bounded_ends)
{
	sqlite3 *db;

	ck_assert_int_eq(sqlite3_open(":memory:", &db), SQLITE_OK);
	exec_schema_file(db, "schemas/timeline.sql");
	exec_sql(db, "INSERT INTO jobs (id, driver, ring, job, context, seqno, thread, submitted_ns, started_ns, "
		     "finished_ns, status, finish_source, finish_reason, finished_bound_ns, bound_source) VALUES "
		     "(1, 'amdgpu', 'gfx', 10, 7, 1, 5, 100, 200, NULL, 'unfinished', NULL, 'not_traced', 900, 'ring_order'),"
		     "(2, 'amdgpu', 'gfx', 11, 7, 2, 5, 150, 300, NULL, 'unfinished', NULL, 'not_covered', 800, 'recording_start'),"
		     "(3, 'amdgpu', 'gfx', 12, 7, 3, 5, 160, 400, 700, 'complete', 'signaled', NULL, NULL, NULL),"
		     "(4, 'amdgpu', NULL, 13, NULL, NULL, NULL, 170, 500, NULL, 'unfinished', NULL, 'ended', NULL, NULL);");
	exec_schema_file(db, "schemas/timeline-views.sql");
	expect(db, "SELECT id, lane, start_ns, end_ns, end_known, end_reason, bound_ns, bound_reason, status, label "
		   "FROM items ORDER BY id",
	       "1|[\"job\",\"amdgpu\",\"gfx\"]|200||0|not_traced|900|when a job run later on its ring finished|unfinished|gfx\n"
	       "2|[\"job\",\"amdgpu\",\"gfx\"]|300||0|not_covered|800|when every CPU was recording|unfinished|gfx\n"
	       "3|[\"job\",\"amdgpu\",\"gfx\"]|400|700|1||||complete|gfx\n"
	       "4|[\"job\",\"amdgpu\",\"\"]|500||0|ended|||unfinished|job\n");
	expect(db, "SELECT json_extract(detail, '$.\"finished no later than ns\"'), json_extract(detail, '$.\"bound source\"'), "
		   "json_extract(detail, '$.\"finish source\"') FROM items ORDER BY id",
	       "900|ring_order|\n800|recording_start|\n||signaled\n||\n");
	expect(db, "SELECT lane, label FROM lanes ORDER BY ord",
	       "[\"job\",\"amdgpu\",\"\"]|amdgpu ring ?\n[\"job\",\"amdgpu\",\"gfx\"]|amdgpu gfx\n");
	sqlite3_close(db);
}
END_TEST

static Suite *views_suite(void)
{
	Suite *s = suite_create("timeline views");
	TCase *tc = tcase_create("views");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_kernel_drm_sched);
	tcase_add_test(tc, test_kernel_i915);
	tcase_add_test(tc, test_kernel_dma_fence);
	tcase_add_test(tc, test_etw_capture);
	tcase_add_test(tc, test_bounded_ends);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return nf_test_main(views_suite());
}
