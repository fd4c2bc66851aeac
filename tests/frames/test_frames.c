/*
 * Tests of the frames module (include/contract/frames.h) and `nftrace frames`
 * on nftrace's own sessions. The samples' answers are computed by hand from
 * the engine's default costs (a command is visible to the GPU 20 us after it
 * was queued, a signal takes 200 ns, a satisfied wait 100 ns) and the
 * display's blanks (blank k of a 60 Hz display made at 0 comes at
 * k * 1e9 / 60 ns, rounded), with a 1 GHz CPU and GPU clock so that every
 * time is an exact nanosecond:
 *
 * frames-60hz.nfs: frame i (0..11) is presented at T(i) = 1 ms + i * 16666667
 * after 4 ms of work on Render: its work runs from T(i) + 20 us, the present's
 * signal ends 4 ms + 200 ns later (ready T(i) + 4020200), and it is shown at
 * blank i + 1.
 *
 * frames-late.nfs: each frame, Compute runs 2 ms of work and signals Sim to
 * i + 1, Render waits for it, runs 4 ms and presents; frame 6 (i = 5, at
 * T(5) = 84333335) has 14 ms of compute: Sim reaches 6 at T(5) + 20 us + 14 ms
 * + 200 ns = 98353535, Render's wait ends 100 ns later, its work 4 ms later
 * and the present's signal at 102353835, after blank 6 (100000000): shown at
 * blank 7 (116666667), late by 2353835 ns, blamed on Render waiting on Sim
 * >= 6, signaled by Compute (its 14020200 ns of work are on the path). The
 * flip queue is FIFO: the frames after it stay a blank behind.
 */
#include "nf_test.h"

#include "contract/frames.h"
#include "contract/session.h"

#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdbool.h>

static char tmp[512];
static char out[1 << 17], err[1 << 14];

static void setup(void)
{
	nf_test_tmpdir(tmp, sizeof(tmp));
}

static void teardown(void)
{
	nf_test_rmtree(tmp);
}

#define T(i) (1000000 + (int64_t)(i) * 16666667)
#define SUBMIT 20000
#define SIGNAL 200
#define WAIT 100

/* Blank k of a 60 Hz display made at 0. */
static int64_t blank(int64_t k)
{
	return (k * 1000000000 + 30) / 60;
}

static void record(const char *name, char *dir, size_t len)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "samples/%s.nfs", name);
	snprintf(dir, len, "%s/%s", tmp, name);
	nf_test_record(rel, dir, NULL);
}

/* The session's frames, computed; the database opened read-only. */
static sqlite3 *frames_db(const char *dir)
{
	char db[4200];
	struct nf_error e;
	sqlite3 *d = NULL;

	nf_error_clear(&e);
	ck_assert_msg(nf_frames_ensure(dir, NULL, db, sizeof(db), &e) == 0, "%s", e.msg);
	ck_assert_int_eq(sqlite3_open_v2(db, &d, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	return d;
}

static int64_t q1(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *s = NULL;
	int64_t v = INT64_MIN;

	ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

static double qd(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *s = NULL;
	double v = NAN;

	ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
		v = sqlite3_column_double(s, 0);
	sqlite3_finalize(s);
	return v;
}

static void qtext(sqlite3 *db, const char *sql, char *buf, size_t len)
{
	sqlite3_stmt *s = NULL;

	buf[0] = 0;
	ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
		snprintf(buf, len, "%s", (const char *)sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
}

/* A metric in ms equals ns exactly (doubles of up to 9 significant digits). */
static void ck_ms(double got, int64_t want_ns, const char *what, int frame)
{
	ck_assert_msg(fabs(got - (double)want_ns / 1e6) < 1e-9, "frame %d %s: %.9f ms, want %.9f", frame, what, got,
		      (double)want_ns / 1e6);
}

/* Every frame's path tiles [cpu_start (else present), screen (else ready)] exactly. */
static void check_paths_tile(sqlite3 *db)
{
	sqlite3_stmt *f = NULL, *p = NULL;

	ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT frame, coalesce(cpu_start_ns, present_ns), "
					    "coalesce(CASE status WHEN 'displayed' THEN screen_ns END, ready_ns, present_ns) "
					    "FROM frames", -1, &f, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT start_ns, end_ns FROM frame_path WHERE frame = ?1 ORDER BY seq",
					    -1, &p, NULL), SQLITE_OK);
	while (sqlite3_step(f) == SQLITE_ROW) {
		int64_t frame = sqlite3_column_int64(f, 0), t = sqlite3_column_int64(f, 1), end = sqlite3_column_int64(f, 2);
		int segs = 0;

		sqlite3_bind_int64(p, 1, frame);
		while (sqlite3_step(p) == SQLITE_ROW) {
			ck_assert_msg(sqlite3_column_int64(p, 0) == t, "frame %" PRId64 ": segment %d starts at %lld, want %" PRId64,
				      frame, segs, (long long)sqlite3_column_int64(p, 0), t);
			ck_assert_int_lt(sqlite3_column_int64(p, 0), sqlite3_column_int64(p, 1));
			t = sqlite3_column_int64(p, 1);
			segs++;
		}
		sqlite3_reset(p);
		if (end > t - 0 && segs)
			ck_assert_msg(t == end, "frame %" PRId64 ": path ends at %" PRId64 ", want %" PRId64, frame, t, end);
	}
	sqlite3_finalize(f);
	sqlite3_finalize(p);
}

START_TEST(steady_60hz)
{
	char dir[600], sql[512], text[800];
	sqlite3 *db;

	record("frames-60hz", dir, sizeof(dir));
	db = frames_db(dir);
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM frames"), 12);
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM frames WHERE status = 'displayed'"), 12);
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM frames WHERE late"), 0);
	ck_assert_int_eq(q1(db, "SELECT count(DISTINCT swapchain) FROM frames"), 1);
	qtext(db, "SELECT swapchain FROM frames", text, sizeof(text));
	ck_assert_str_eq(text, "display Monitor");
	for (int i = 0; i < 12; i++) {
		int64_t ready = T(i) + SUBMIT + 4000000 + SIGNAL;

#define F(col) (snprintf(sql, sizeof(sql), "SELECT " col " FROM frames WHERE frame = %d", i + 1), sql)
		ck_assert_int_eq(q1(db, F("present_ns")), T(i));
		ck_assert_int_eq(q1(db, F("ready_ns")), ready);
		ck_assert_int_eq(q1(db, F("screen_ns")), blank(i + 1));
		ck_assert_int_eq(q1(db, F("vblank_seq")), i + 1);
		ck_assert_int_eq(q1(db, F("process")), 100);
		ck_assert_int_eq(q1(db, F("thread")), 1);
		ck_ms(qd(db, F("MsUntilRenderComplete")), ready - T(i), "MsUntilRenderComplete", i + 1);
		ck_ms(qd(db, F("MsUntilDisplayed")), blank(i + 1) - T(i), "MsUntilDisplayed", i + 1);
		ck_ms(qd(db, F("MsGPUBusy")), 4000000 + SUBMIT + SIGNAL, "MsGPUBusy", i + 1);
		ck_ms(qd(db, F("MsGPUWait")), 0, "MsGPUWait", i + 1);
		ck_assert(isnan(qd(db, F("MsInPresentAPI")))); /* no event says when the call returned */
		qtext(db, F("null_reasons"), text, sizeof(text));
		ck_assert_msg(strstr(text, "MsInPresentAPI: no event says when the present call returned"), "%s", text);
		if (i) {
			ck_ms(qd(db, F("MsBetweenPresents")), 16666667, "MsBetweenPresents", i + 1);
			ck_ms(qd(db, F("MsBetweenDisplayChange")), blank(i + 1) - blank(i), "MsBetweenDisplayChange", i + 1);
			ck_ms(qd(db, F("MsGPULatency")), 16666667, "MsGPULatency", i + 1);
			ck_assert_int_eq(q1(db, F("interval_ns")), blank(i + 1) - blank(i));
			ck_assert_int_eq(q1(db, F("cpu_start_ns")), T(i - 1));
		} else {
			ck_assert(isnan(qd(db, F("MsBetweenPresents"))));
			ck_assert_int_eq(q1(db, F("interval_ns")), INT64_MIN);
		}
		ck_assert_int_eq(q1(db, F("late")), 0);
		/* not late: what decided it is its 4 ms of work on Render */
		qtext(db, F("blame"), text, sizeof(text));
		snprintf(sql, sizeof(sql), "4.020 ms queue 0x40000040 (Render) executing op %d", i + 1);
		ck_assert_str_eq(text, sql);
#undef F
	}
	/* frame 2's path: the thread from frame 1's present to its own, Render, the flip */
	sqlite3_stmt *s = NULL;
	ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT start_ns, end_ns, kind, coalesce(queue, -1), coalesce(thread, -1), "
					    "coalesce(op, -1), coalesce(display, -1) FROM frame_path WHERE frame = 2 ORDER BY seq",
					    -1, &s, NULL), SQLITE_OK);
	const int64_t want[3][7] = {
		{ T(0), T(1), 'q', -1, 1, 2, -1 },
		{ T(1), T(1) + 4020200, 'e', 0x40000040, -1, 2, -1 },
		{ T(1) + 4020200, blank(2), 'd', -1, -1, -1, 0 },
	};
	int k = 0;
	while (sqlite3_step(s) == SQLITE_ROW) {
		ck_assert_int_lt(k, 3);
		ck_assert_int_eq(sqlite3_column_int64(s, 0), want[k][0]);
		ck_assert_int_eq(sqlite3_column_int64(s, 1), want[k][1]);
		ck_assert_int_eq(sqlite3_column_text(s, 2)[0], want[k][2]);
		for (int c = 3; c < 7; c++)
			ck_assert_int_eq(sqlite3_column_int64(s, c), want[k][c]);
		k++;
	}
	ck_assert_int_eq(k, 3);
	sqlite3_finalize(s);
	/* the GPU work per queue: Render, one operation, 4020200 ns busy */
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM frame_gpu"), 12);
	ck_assert_int_eq(q1(db, "SELECT busy_ns FROM frame_gpu WHERE frame = 3"), 4020200);
	ck_assert_int_eq(q1(db, "SELECT first_start_ns FROM frame_gpu WHERE frame = 3"), T(2));
	ck_assert_int_eq(q1(db, "SELECT last_end_ns FROM frame_gpu WHERE frame = 3"), T(2) + 4020200);
	check_paths_tile(db);
	sqlite3_close(db);

	/* the command: its summary lines */
	ck_assert_int_eq(nf_test_nftrace_run(NF_TEST_ARGV("frames", dir), out, sizeof(out), err, sizeof(err)), 0);
	ck_assert_msg(strstr(out, "frames: 12 (displayed 12, dropped 0, pending 0)\n"), "%s", out);
	ck_assert_msg(strstr(out, "frame time: p50 16.667 ms, p99 16.667 ms (11 frames with one)\n"), "%s", out);
	ck_assert_msg(strstr(out, "late: 0 ("), "%s", out);
	ck_assert_int_eq(nf_test_count_lines(out), 1 + 12 + 3);
}
END_TEST

START_TEST(late_frame_cross_queue_wait)
{
	char dir[600], sql[512], text[800];
	sqlite3 *db;
	const int64_t shown_at[10] = { 1, 2, 3, 4, 5, 7, 8, 9, 10, 11 }; /* FIFO: a blank behind after frame 6 */

	record("frames-late", dir, sizeof(dir));
	db = frames_db(dir);
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM frames"), 10);
	for (int i = 0; i < 10; i++) {
		int64_t compute = i == 5 ? 14000000 : 2000000;
		int64_t ready = T(i) + SUBMIT + compute + SIGNAL + WAIT + 4000000 + SIGNAL;

#define F(col) (snprintf(sql, sizeof(sql), "SELECT " col " FROM frames WHERE frame = %d", i + 1), sql)
		ck_assert_int_eq(q1(db, F("ready_ns")), ready);
		ck_assert_int_eq(q1(db, F("screen_ns")), blank(shown_at[i]));
		ck_assert_int_eq(q1(db, F("late")), i == 5);
		if (i)
			ck_assert_int_eq(q1(db, F("interval_ns")), blank(shown_at[i]) - blank(shown_at[i - 1]));
		ck_ms(qd(db, F("MsUntilDisplayed")), blank(shown_at[i]) - T(i), "MsUntilDisplayed", i + 1);
		/* busy: Compute from T to its signal, Render's wait until the GPU saw it, then
		 * its work and the present's signal; the wait's stall is Compute's time */
		ck_ms(qd(db, F("MsGPUBusy")), compute + SUBMIT + SIGNAL + 4000000 + SIGNAL, "MsGPUBusy", i + 1);
		ck_ms(qd(db, F("MsGPUWait")), WAIT, "MsGPUWait", i + 1);
#undef F
	}
	ck_assert_int_eq(q1(db, "SELECT missed_vblanks FROM frames WHERE frame = 6"), 1);
	ck_assert_int_eq(q1(db, "SELECT late_ns FROM frames WHERE frame = 6"), 102353835 - 100000000);
	ck_assert_int_eq(q1(db, "SELECT vblank_seq FROM frames WHERE frame = 6"), 7);
	ck_assert_int_eq(q1(db, "SELECT MsBetweenDisplayChange * 1e6 FROM frames WHERE frame = 6"), blank(7) - blank(5));
	/* the blame, in one line and in its columns */
	qtext(db, "SELECT blame FROM frames WHERE frame = 6", text, sizeof(text));
	ck_assert_str_eq(text, "missed its blank by 2.354 ms: 14.020 ms queue 0x40000040 (Render) waiting on fence "
			       "0x400001c0 >= 6, signaled late by queue 0x40000100 (Compute), executing op 16");
	qtext(db, "SELECT blame_kind FROM frames WHERE frame = 6", text, sizeof(text));
	ck_assert_str_eq(text, "wait");
	ck_assert_int_eq(q1(db, "SELECT blame_queue FROM frames WHERE frame = 6"), 0x40000040);
	ck_assert_int_eq(q1(db, "SELECT blame_fence FROM frames WHERE frame = 6"), 0x400001c0);
	ck_assert_int_eq(q1(db, "SELECT blame_value FROM frames WHERE frame = 6"), 6);
	ck_assert_int_eq(q1(db, "SELECT blame_by_queue FROM frames WHERE frame = 6"), 0x40000100);
	ck_assert_int_eq(q1(db, "SELECT blame_ns FROM frames WHERE frame = 6"), 98353535 - 84333335);
	/* the segment it times: Compute executing op 16, the second of the path */
	ck_assert_int_eq(q1(db, "SELECT blame_seq FROM frames WHERE frame = 6"), 1);
	ck_assert_int_eq(q1(db, "SELECT p.end_ns - p.start_ns FROM frames f JOIN frame_path p ON p.frame = f.frame "
				"AND p.seq = f.blame_seq WHERE f.frame = 6"), 98353535 - 84333335);
	/* its path: the thread from frame 5's present, Compute's 14 ms, Render's wait
	 * released by Compute's signal (op 16), Render's work, the flip until blank 7 */
	sqlite3_stmt *s = NULL;
	ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT start_ns, end_ns, kind, coalesce(queue, -1), coalesce(release_op, -1), "
					    "coalesce(by_queue, -1), coalesce(value, -1) FROM frame_path WHERE frame = 6 ORDER BY seq",
					    -1, &s, NULL), SQLITE_OK);
	const int64_t want[5][7] = {
		{ T(4), T(5), 'q', -1, -1, -1, -1 },
		{ T(5), 98353535, 'e', 0x40000100, -1, -1, -1 },
		{ 98353535, 98353635, 'w', 0x40000040, 16, 0x40000100, 6 },
		{ 98353635, 102353835, 'e', 0x40000040, -1, -1, -1 },
		{ 102353835, blank(7), 'd', -1, -1, -1, -1 },
	};
	int k = 0;
	while (sqlite3_step(s) == SQLITE_ROW) {
		ck_assert_int_lt(k, 5);
		ck_assert_int_eq(sqlite3_column_int64(s, 0), want[k][0]);
		ck_assert_int_eq(sqlite3_column_int64(s, 1), want[k][1]);
		ck_assert_int_eq(sqlite3_column_text(s, 2)[0], want[k][2]);
		for (int c = 3; c < 7; c++)
			ck_assert_int_eq(sqlite3_column_int64(s, c), want[k][c]);
		k++;
	}
	ck_assert_int_eq(k, 5);
	sqlite3_finalize(s);
	/* Render's wait in frame 6 stalled from when the GPU saw it to Compute's signal */
	ck_assert_int_eq(q1(db, "SELECT wait_ns FROM frame_gpu WHERE frame = 6 AND queue = 1073741888"),
			 98353535 + WAIT - (T(5) + SUBMIT));
	check_paths_tile(db);
	sqlite3_close(db);

	ck_assert_int_eq(nf_test_nftrace_run(NF_TEST_ARGV("frames", dir), out, sizeof(out), err, sizeof(err)), 0);
	ck_assert_msg(strstr(out, "frame time: p50 16.667 ms, p99 33.333 ms (9 frames with one)\n"), "%s", out);
	ck_assert_msg(strstr(out, "late: 1 ("), "%s", out);
	ck_assert_msg(strstr(out, " LATE "), "%s", out);
	/* --late: by frame time against a budget */
	ck_assert_int_eq(nf_test_nftrace_run(NF_TEST_ARGV("frames", "--late", "20ms", dir), out, sizeof(out), err,
					     sizeof(err)), 0);
	ck_assert_msg(strstr(out, "late: 1 (frame time above 20.000 ms; 1 frame not judged: no frame time)"), "%s", out);
	ck_assert_int_eq(nf_test_nftrace_run(NF_TEST_ARGV("frames", "--late", "10ms", dir), out, sizeof(out), err,
					     sizeof(err)), 0);
	ck_assert_msg(strstr(out, "late: 9 (frame time above 10.000 ms; 1 frame not judged: no frame time)"), "%s", out);
	/* --csv: a header and a row per frame; --json: valid, with the summary */
	ck_assert_int_eq(nf_test_nftrace_run(NF_TEST_ARGV("frames", "--csv", dir), out, sizeof(out), err, sizeof(err)), 0);
	ck_assert_int_eq(nf_test_count_lines(out), 11);
	ck_assert_msg(!strncmp(out, "frame,swapchain,display,seq,", 28), "%s", out);
	ck_assert_msg(strstr(out, "\n6,display Monitor,0,6,100,1,84333335,102353835,116666667,7,33333334,"), "%s", out);
	ck_assert_int_eq(nf_test_nftrace_run(NF_TEST_ARGV("frames", "--json", dir), out, sizeof(out), err, sizeof(err)), 0);
	ck_assert_int_eq(nf_test_json_tool(out, NULL, 0, err, sizeof(err)), 0);
	ck_assert_msg(strstr(out, "\"summary\": {\"frames\": 10, \"displayed\": 10, \"dropped\": 0, \"pending\": 0, \"late\": 1"),
		      "%s", out);
	ck_assert_msg(strstr(out, "\"p99_frame_ns\": 33333334"), "%s", out);
	/* --process: the presenting process, or nothing at all */
	ck_assert_int_eq(nf_test_nftrace_run(NF_TEST_ARGV("frames", "--process", "100", dir), out, sizeof(out), err,
					     sizeof(err)), 0);
	ck_assert_msg(strstr(out, "frames: 10 ("), "%s", out);
	ck_assert_int_eq(nf_test_nftrace_run(NF_TEST_ARGV("frames", "--process", "7", dir), out, sizeof(out), err,
					     sizeof(err)), 1);
	ck_assert_int_eq(nf_test_count_lines(err), 1);
	ck_assert_msg(strstr(err, "--process '7': no such process"), "%s", err);
}
END_TEST

/* nftrace diff computes the frames of both sessions and compares their intervals:
 * the steady loop's 11 of 16.667 ms against the late loop's 9 with one of 33.333 ms. */
START_TEST(diff_compares_frame_times)
{
	char a[600], b[600];

	record("frames-60hz", a, sizeof(a));
	record("frames-late", b, sizeof(b));
	ck_assert_int_eq(nf_test_nftrace_run(NF_TEST_ARGV("diff", a, b), out, sizeof(out), err, sizeof(err)), 0);
	ck_assert_msg(strstr(out, "  frame          A       11     16.67ms     16.67ms     16.67ms     16.67ms\n"
				  "                 B        9     16.67ms     33.33ms     33.33ms     33.33ms\n"),
		      "%s", out);
	/* per presenting process too */
	ck_assert_msg(strstr(out, "process 100\n"), "%s", out);
}
END_TEST

/* Sync interval 0: the newest ready flip at a blank, the ones before it dropped. */
START_TEST(dropped_frame)
{
	char scen[600], dir[600], text[800];
	FILE *f;
	sqlite3 *db;

	snprintf(scen, sizeof(scen), "%s/drop.nfs", tmp);
	snprintf(dir, sizeof(dir), "%s/drop", tmp);
	f = fopen(scen, "w");
	ck_assert(f != NULL);
	fputs("session cpu_frequency 1GHz\nadapter GPU gpu_frequency 1GHz\nqueue Q adapter GPU\n"
	      "display D adapter GPU refresh 60Hz\n"
	      "at 1ms\nwork Q 1ms\npresent Q D interval 0\n"
	      "at 5ms\nwork Q 1ms\npresent Q D interval 0\n"
	      "at 20ms\nwork Q 1ms\npresent Q D interval 0\nadvance 20ms\n", f);
	fclose(f);
	ck_assert_int_eq(nf_test_nftrace_run(NF_TEST_ARGV("record", "-o", dir, scen), out, sizeof(out), err, sizeof(err)), 0);
	db = frames_db(dir);
	qtext(db, "SELECT group_concat(status, ',') FROM (SELECT status FROM frames ORDER BY frame)", text, sizeof(text));
	ck_assert_str_eq(text, "dropped,displayed,displayed");
	ck_assert_int_eq(q1(db, "SELECT screen_ns FROM frames WHERE frame = 2"), blank(1));
	ck_assert_int_eq(q1(db, "SELECT screen_ns FROM frames WHERE frame = 3"), blank(2));
	ck_assert_int_eq(q1(db, "SELECT MsUntilDisplayed IS NULL FROM frames WHERE frame = 1"), 1);
	qtext(db, "SELECT null_reasons FROM frames WHERE frame = 1", text, sizeof(text));
	ck_assert_msg(strstr(text, "MsUntilDisplayed: dropped: never shown"), "%s", text);
	qtext(db, "SELECT detail FROM flips WHERE present = 1", text, sizeof(text));
	ck_assert_str_eq(text, "dropped at blank 1: a newer ready flip of sync interval 0 replaced it");
	/* frame 3's display change is from frame 2's, the last one shown */
	ck_assert_int_eq(q1(db, "SELECT interval_ns FROM frames WHERE frame = 3"), blank(2) - blank(1));
	check_paths_tile(db);
	sqlite3_close(db);
	ck_assert_int_eq(nf_test_nftrace_run(NF_TEST_ARGV("frames", dir), out, sizeof(out), err, sizeof(err)), 0);
	ck_assert_msg(strstr(out, "frames: 3 (displayed 2, dropped 1, pending 0)"), "%s", out);
}
END_TEST

/* Threaded mode: the CMP thread's timer makes the blanks; every present is shown
 * or still pending, at a blank of the display, after its ready time (relative
 * times only: a loaded machine runs the loop late, which changes nothing here). */
START_TEST(threaded_blanks)
{
	char scen[600], dir[600];
	FILE *f;
	sqlite3 *db;

	snprintf(scen, sizeof(scen), "%s/th.nfs", tmp);
	snprintf(dir, sizeof(dir), "%s/th", tmp);
	f = fopen(scen, "w");
	ck_assert(f != NULL);
	fputs("adapter GPU\nqueue Q adapter GPU\ndisplay D adapter GPU refresh 60Hz\n"
	      "repeat 8 {\n  work Q 2ms\n  present Q D\n  advance 16ms\n}\nadvance 50ms\n", f);
	fclose(f);
	ck_assert_int_eq(nf_test_nftrace_run(NF_TEST_ARGV("record", "--mode", "threaded", "-o", dir, scen), out, sizeof(out),
					     err, sizeof(err)), 0);
	db = frames_db(dir);
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM frames"), 8);
	ck_assert_int_ge(q1(db, "SELECT count(*) FROM vblanks WHERE display = 0"), 8);
	/* blanks come in order, one refresh period apart or more (a late timer skips none) */
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM vblanks a JOIN vblanks b ON b.seq = a.seq + 1 WHERE b.ts_ns <= a.ts_ns"), 0);
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM frames WHERE status != 'displayed'"), 0);
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM frames f WHERE screen_ns < ready_ns OR "
			     "NOT EXISTS (SELECT 1 FROM vblanks v WHERE v.ts_ns = f.screen_ns AND v.display = 0)"), 0);
	check_paths_tile(db);
	sqlite3_close(db);
}
END_TEST

START_TEST(bad_usage_and_input)
{
	char dir[600];

	record("frames-60hz", dir, sizeof(dir));
	static const char *const usage[][3] = {
		{ "frames", NULL, NULL }, { "frames", "--late", NULL }, { "frames", "--late", "soon" },
		{ "frames", "--bogus", NULL }, { "frames", "--csv", "--json" },
	};
	for (size_t i = 0; i < sizeof(usage) / sizeof(usage[0]); i++) {
		const char *argv[6] = { usage[i][0], usage[i][1], usage[i][2], NULL };
		size_t n = usage[i][2] ? 3 : usage[i][1] ? 2 : 1;

		argv[n] = i ? dir : NULL;
		ck_assert_msg(nf_test_nftrace_run(argv, out, sizeof(out), err, sizeof(err)) == 2, "case %zu: %s", i, err);
		ck_assert_int_eq(nf_test_count_lines(err), 1);
	}
	/* a bad regular expression: one line, exit 1, the frames kept */
	ck_assert_int_eq(nf_test_nftrace_run(NF_TEST_ARGV("frames", "--frame-marker", "(", dir), out, sizeof(out), err,
					     sizeof(err)), 1);
	ck_assert_int_eq(nf_test_count_lines(err), 1);
	ck_assert_msg(strstr(err, "--frame-marker '('"), "%s", err);
	ck_assert_int_eq(nf_test_nftrace_run(NF_TEST_ARGV("frames", dir), out, sizeof(out), err, sizeof(err)), 0);
	ck_assert_msg(strstr(out, "frames: 12 ("), "%s", out);
	/* no such session */
	char none[700];
	snprintf(none, sizeof(none), "%s/none", tmp);
	ck_assert_int_eq(nf_test_nftrace_run(NF_TEST_ARGV("frames", none), out, sizeof(out), err, sizeof(err)), 1);
	ck_assert_int_eq(nf_test_count_lines(err), 1);
}
END_TEST

/* Scenario errors of the new statements: one line with file, line and column. */
START_TEST(scenario_errors)
{
	static const char *const cases[][2] = {
		{ "adapter A\ndisplay D adapter A refresh 2000Hz\n", ":2:" },
		{ "adapter A\ndisplay D adapter A refresh 60/0\n", ":2:" },
		{ "adapter A\nqueue Q adapter A\ndisplay D adapter A\npresent Q D interval 5\n", ":4:" },
		{ "adapter A\nadapter B\nqueue Q adapter B\ndisplay D adapter A\npresent Q D\n", ":5:" },
		{ "adapter A\nqueue Q adapter A\npresent Q Q\n", ":3:" },
		{ "adapter A\ndisplay D refresh 60Hz\n", ":2:" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char scen[600], dir[600];
		FILE *f;

		snprintf(scen, sizeof(scen), "%s/bad%zu.nfs", tmp, i);
		snprintf(dir, sizeof(dir), "%s/bad%zu", tmp, i);
		f = fopen(scen, "w");
		ck_assert(f != NULL);
		fputs(cases[i][0], f);
		fclose(f);
		ck_assert_int_eq(nf_test_nftrace_run(NF_TEST_ARGV("record", "-o", dir, scen), out, sizeof(out), err,
						     sizeof(err)), 1);
		ck_assert_int_eq(nf_test_count_lines(err), 1);
		ck_assert_msg(strstr(err, cases[i][1]), "case %zu: %s", i, err);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("frames");
	TCase *tc = tcase_create("frames");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, steady_60hz);
	tcase_add_test(tc, late_frame_cross_queue_wait);
	tcase_add_test(tc, dropped_frame);
	tcase_add_test(tc, diff_compares_frame_times);
	tcase_add_test(tc, threaded_blanks);
	tcase_add_test(tc, bad_usage_and_input);
	tcase_add_test(tc, scenario_errors);
	suite_add_tcase(s, tc);
	return nf_test_main(s);
}
