/*
 * Tests for viewer/: builds small timeline databases from schemas/timeline.sql,
 * renders them to PNG, SVG and PDF, and checks the pages: box colours at the
 * places the layout says (the renderer's own layout functions), determinism,
 * time and queue/fence filters, level of detail on a big database, a reference
 * image, nf_parse_duration, and clean errors on bad input.
 */
#include "nf_test.h"
#include "nf_image.h"

#include <cairo.h>
#include <math.h>
#include <sqlite3.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "layout.h"
#include "viewer.h"
#include "contract/render.h"
#include "contract/timeline.h"

#define MS 1000000LL
#define US 1000LL

/* Queue handles of the scenario. */
#define Q3D 0x100
#define QCOMP 0x200

static char tmpdir[1024];

static void setup(void)
{
	nf_test_tmpdir(tmpdir, sizeof(tmpdir));
}

static void teardown(void)
{
	/* Frees cairo's font caches, so that leak checkers see only our own memory. */
	cairo_debug_reset_static_data();
	if (!getenv("NF_KEEP_TMP"))
		nf_test_rmtree(tmpdir);
}

static void path_in_tmp(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmpdir, name);
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	ck_assert_msg(f != NULL, "cannot open %s", path);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	ck_assert_int_ge(n, 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void exec_sql(sqlite3 *db, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		ck_abort_msg("sql failed: %s: %.80s", msg ? msg : "?", sql);
}

static void exec_schema_file(sqlite3 *db, const char *rel)
{
	char path[4096];
	size_t len;
	char *sql;

	nf_test_source_path(path, sizeof(path), rel);
	sql = read_file(path, &len);
	exec_sql(db, sql);
	free(sql);
}

/* Creates an empty timeline at path; returns the open handle. */
static sqlite3 *create_db(const char *path)
{
	sqlite3 *db;

	unlink(path);
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	exec_schema_file(db, "schemas/timeline.sql");
	exec_sql(db, "BEGIN");
	return db;
}

static void finish_db(sqlite3 *db)
{
	exec_sql(db, "COMMIT");
	exec_schema_file(db, "schemas/timeline-views.sql");
	ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}

/*
 * The scenario: two queues on one adapter; on the 3D queue a wait (queued 1 ms,
 * observed 2 ms, end 5 ms) released by a signal on the compute queue (queued
 * 1.5 ms, end 4.9 ms), then a signal 6-7 ms; on the compute queue an early
 * signal 0.2-0.8 ms, a lost wait without an end at 7.5 ms and a lost span of
 * its signal log 8-9 ms (12 entries); a zero timestamp and a backwards
 * timestamp on the 3D queue; a CPU thread that waits 0.5-2.5 ms and signals.
 */
static void make_scenario(const char *path)
{
	sqlite3 *db = create_db(path);

	exec_sql(db,
		 "INSERT INTO meta (key, value) VALUES ('schema_version','1'),('duration_ns','10000000'),"
		 " ('source','test'),('mode','sim'),('seed','7');"
		 "INSERT INTO adapters (adapter, name, vidsch_caps, native_fence, gpu_frequency) VALUES (0, 'Test GPU', 6144, 1, 10000000);"
		 "INSERT INTO queues (queue, adapter, node, engine, name, start_ns, stop_ns) VALUES (256, 0, 0, 0, '3D queue', 0, NULL),"
		 " (512, 0, 1, 1, 'Compute queue', 0, NULL);"
		 "INSERT INTO fences (fence, type, shared, cross_adapter, initial_value, created_ns, destroyed_ns) VALUES (1,0,0,0,0,0,NULL),(2,0,0,0,0,0,NULL),(3,0,0,0,0,0,NULL);"
		 "INSERT INTO fence_ops (id, queue, adapter, op, fence, handle, value, queued_ns, observed_ns, end_ns, status, log_seq) VALUES"
		 " (1, 512, 0, 'signal', 3, 30, 1,  200000, NULL,  800000, 'complete', 0),"
		 " (2, 256, 0, 'wait',   1, 10, 1, 1000000, 2000000, 5000000, 'complete', 0),"
		 " (3, 512, 0, 'signal', 1, 20, 1, 1500000, NULL, 4900000, 'complete', 1),"
		 " (4, 256, 0, 'signal', 2, 11, 1, 6000000, NULL, 7000000, 'complete', 0),"
		 " (5, 512, 0, 'wait',   2, 21, 1, 7500000, NULL, NULL, 'lost', NULL);"
		 "INSERT INTO deps (signal_id, wait_id, cpu_signal, stall_ns) VALUES (3, 2, NULL, 3000000);"
		 "INSERT INTO anomalies (id, kind, queue, log, first_ns, last_ns, lost_entries, detail) VALUES"
		 " (1, 'lost', 512, 'signals', 8000000, 9000000, 12, 'lost 12 entries'),"
		 " (2, 'zero_timestamp', 256, 'waits', 8500000, 8500000, 0, 'zero'),"
		 " (3, 'backwards_timestamp', 256, 'signals', 9000000, 9000000, 0, 'backwards');"
		 "INSERT INTO cpu_waits (id, thread, adapter, fence, value, start_ns, end_ns, status) VALUES (1, 42, 0, 1, 1, 500000, 2500000, 'satisfied');"
		 "INSERT INTO cpu_signals (id, thread, adapter, fence, value, ts_ns) VALUES (1, 42, 0, 2, 1, 3000000);");
	finish_db(db);
}

static struct nf_render_options base_opts(const char *out)
{
	struct nf_render_options o;

	memset(&o, 0, sizeof(o));
	o.output = out;
	o.title = "viewer test";
	o.from_ns = -1;
	o.to_ns = -1;
	return o;
}

static void render_ok(const char *db, const struct nf_render_options *o)
{
	struct nf_error err;
	int rc;

	nf_error_clear(&err);
	rc = nf_render(db, o, &err);
	ck_assert_msg(rc == 0, "nf_render(%s): %d %s", o->output, rc, err.msg);
}

/* The layout the renderer used, from the same database and options. */
static void layout_of(const char *dbpath, const struct nf_render_options *o,
		      struct nf_render_layout *lay)
{
	struct nf_error err;
	sqlite3 *db;

	nf_error_clear(&err);
	ck_assert_int_eq(sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	ck_assert_msg(nf_render_layout_build(db, o, lay, &err) == 0, "layout: %s", err.msg);
	sqlite3_close(db);
}

static uint32_t pixel(const struct nf_image *im, double x, double y)
{
	return nf_image_pixel(im, (int)x, (int)y);
}

#define C_WAIT 0xF4B6C2u
#define C_STALL 0xE3748Fu
#define C_SIGNAL 0xC2185Bu
#define C_CPU 0xA7BCD1u
#define C_WHITE 0xFFFFFFu

/* The pixel at time t in the middle of a lane of a queue's row. */
static uint32_t lane_pixel(const struct nf_image *im, const struct nf_render_layout *lay,
			   int64_t queue, enum nf_render_lane_kind lane, int64_t t)
{
	const struct nf_render_row *row = nf_render_layout_queue(lay, queue);
	double y0, y1;

	ck_assert_ptr_nonnull(row);
	nf_render_lane_extent(row, lane, &y0, &y1);
	/* Near the top: the middle of a wide box holds its fence and value label. */
	return pixel(im, nf_render_layout_x(lay, t), y0 + 2.5);
}

#define ASSERT_COLOUR(got, want) \
	ck_assert_msg(nf_image_near((got), (want), 8), "colour %06X, expected %06X", (got), (want))

START_TEST(scenario_png_colours)
{
	char db[4200], out[4200];
	struct nf_render_options o;
	struct nf_render_layout lay;
	struct nf_image im;
	const struct nf_render_row *cpu;
	uint32_t px;
	double y0, y1;

	path_in_tmp(db, sizeof(db), "t.db");
	path_in_tmp(out, sizeof(out), "t.png");
	make_scenario(db);
	o = base_opts(out);
	render_ok(db, &o);
	layout_of(db, &o, &lay);
	nf_image_load(&im, out);
	ck_assert_int_eq(im.w, 1600);
	ck_assert_int_eq(im.h, (int)lay.height);
	ck_assert_int_eq(lay.t0, 0);
	ck_assert_int_eq(lay.t1, 10 * MS);
	ck_assert_uint_eq(lay.n_queues, 2);
	ck_assert_uint_eq(lay.n_threads, 1);

	/* The wait: light pink before it is observed, the stall after. */
	ASSERT_COLOUR(lane_pixel(&im, &lay, Q3D, NF_LANE_WAIT, 1500 * US), C_WAIT);
	ASSERT_COLOUR(lane_pixel(&im, &lay, Q3D, NF_LANE_WAIT, 3500 * US), C_STALL);
	/* Its signal on the other queue, and the 3D queue's own signal. */
	ASSERT_COLOUR(lane_pixel(&im, &lay, QCOMP, NF_LANE_SIGNAL, 3 * MS), C_SIGNAL);
	ASSERT_COLOUR(lane_pixel(&im, &lay, Q3D, NF_LANE_SIGNAL, 6500 * US), C_SIGNAL);
	ASSERT_COLOUR(lane_pixel(&im, &lay, QCOMP, NF_LANE_SIGNAL, 500 * US), C_SIGNAL);
	/* Nothing where nothing happened (the 3D queue row is not striped). */
	ASSERT_COLOUR(lane_pixel(&im, &lay, Q3D, NF_LANE_WAIT, 5500 * US), C_WHITE);
	ASSERT_COLOUR(lane_pixel(&im, &lay, Q3D, NF_LANE_SIGNAL, 2500 * US), C_WHITE);
	/* The lost wait is open-ended: tinted to the right edge, never solid. */
	px = lane_pixel(&im, &lay, QCOMP, NF_LANE_WAIT, 9800 * US);
	ck_assert_msg(!nf_image_near(px, C_WAIT, 8) && !nf_image_near(px, 0xF6F7F9, 4) && (px >> 16) > (px & 0xFF),
		      "open-ended wait colour %06X", px);
	px = lane_pixel(&im, &lay, QCOMP, NF_LANE_WAIT, 7200 * US);
	ck_assert_msg(nf_image_near(px, 0xF6F7F9, 4), "before the open-ended wait: %06X", px);
	/* The lost span (signals log, 8-9 ms) is hatched: not the plain stripe colour. */
	{
		int tinted = 0;

		for (int64_t t = 8100 * US; t < 8900 * US; t += 20 * US)
			if (!nf_image_near(lane_pixel(&im, &lay, QCOMP, NF_LANE_SIGNAL, t), 0xF6F7F9, 4))
				tinted++;
		ck_assert_int_ge(tinted, 30);
	}
	/* The CPU wait. */
	cpu = nf_render_layout_thread(&lay, 42);
	ck_assert_ptr_nonnull(cpu);
	nf_render_lane_extent(cpu, NF_LANE_CPU, &y0, &y1);
	ASSERT_COLOUR(pixel(&im, nf_render_layout_x(&lay, 1500 * US), (y0 + y1) / 2), C_CPU);
	cairo_surface_destroy(im.sf);
	nf_render_layout_release(&lay);
}
END_TEST

START_TEST(formats_valid_and_deterministic)
{
	static const char *ext[] = { "png", "svg", "pdf", "PNG" };
	char db[4200], a[4200], b[4200], name[64];
	struct nf_render_options o;

	path_in_tmp(db, sizeof(db), "t.db");
	make_scenario(db);
	for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
		size_t la, lb;
		char *da, *db2;

		snprintf(name, sizeof(name), "a.%s", ext[i]);
		path_in_tmp(a, sizeof(a), name);
		snprintf(name, sizeof(name), "b.%s", ext[i]);
		path_in_tmp(b, sizeof(b), name);
		o = base_opts(a);
		render_ok(db, &o);
		o.output = b;
		render_ok(db, &o);
		da = read_file(a, &la);
		db2 = read_file(b, &lb);
		ck_assert_msg(la == lb && memcmp(da, db2, la) == 0, "%s renders differ", ext[i]);
		if (i == 1) {
			ck_assert_ptr_nonnull(strstr(da, "<svg"));
			ck_assert_ptr_nonnull(strstr(da, "</svg>"));
		} else if (i == 2) {
			ck_assert_int_eq(memcmp(da, "%PDF-", 5), 0);
			ck_assert_ptr_nonnull(strstr(da + la - 8, "%%EOF"));
		} else {
			ck_assert_int_eq(memcmp(da, "\x89PNG\r\n\x1a\n", 8), 0);
		}
		free(da);
		free(db2);
	}
}
END_TEST

START_TEST(window_filter)
{
	char db[4200], out[4200];
	struct nf_render_options o;
	struct nf_render_layout lay;
	struct nf_image im;
	const struct nf_render_row *row;
	double y0, y1;
	int pink = 0;

	path_in_tmp(db, sizeof(db), "t.db");
	path_in_tmp(out, sizeof(out), "w.png");
	make_scenario(db);
	o = base_opts(out);
	o.from_ns = 5500 * US;
	o.to_ns = 10 * MS;
	render_ok(db, &o);
	layout_of(db, &o, &lay);
	nf_image_load(&im, out);
	ck_assert_int_eq(lay.t0, 5500 * US);
	/* The wait ended at 5 ms, before the window: no pink anywhere in its lane. */
	row = nf_render_layout_queue(&lay, Q3D);
	nf_render_lane_extent(row, NF_LANE_WAIT, &y0, &y1);
	for (double x = lay.plot_x0 + 1; x < lay.plot_x1 - 1; x++) {
		uint32_t p = pixel(&im, x, (y0 + y1) / 2);

		if (nf_image_near(p, C_WAIT, 8) || nf_image_near(p, C_STALL, 8))
			pink++;
	}
	ck_assert_int_eq(pink, 0);
	/* The 6-7 ms signal is in the window, and wider now. */
	ASSERT_COLOUR(lane_pixel(&im, &lay, Q3D, NF_LANE_SIGNAL, 6500 * US), C_SIGNAL);
	ck_assert_double_gt(nf_render_layout_x(&lay, 7 * MS) - nf_render_layout_x(&lay, 6 * MS),
			    250.0);
	cairo_surface_destroy(im.sf);
	nf_render_layout_release(&lay);
}
END_TEST

START_TEST(queue_and_fence_filters)
{
	char db[4200], out[4200];
	struct nf_render_options o;
	struct nf_render_layout lay;
	struct nf_image im;
	const int64_t q[] = { Q3D }, f[] = { 2 }, bad[] = { 0x999 };
	struct nf_error err;

	path_in_tmp(db, sizeof(db), "t.db");
	path_in_tmp(out, sizeof(out), "f.png");
	make_scenario(db);
	o = base_opts(out);
	o.queues = q;
	o.n_queues = 1;
	render_ok(db, &o);
	layout_of(db, &o, &lay);
	ck_assert_ptr_nonnull(nf_render_layout_queue(&lay, Q3D));
	ck_assert_ptr_null(nf_render_layout_queue(&lay, QCOMP));
	nf_render_layout_release(&lay);

	/* Fence 2 only: the 3D queue's signal stays, the wait on fence 1 goes. */
	o = base_opts(out);
	o.fences = f;
	o.n_fences = 1;
	render_ok(db, &o);
	layout_of(db, &o, &lay);
	nf_image_load(&im, out);
	ASSERT_COLOUR(lane_pixel(&im, &lay, Q3D, NF_LANE_SIGNAL, 6500 * US), C_SIGNAL);
	ASSERT_COLOUR(lane_pixel(&im, &lay, Q3D, NF_LANE_WAIT, 1500 * US), C_WHITE);
	ASSERT_COLOUR(lane_pixel(&im, &lay, QCOMP, NF_LANE_SIGNAL, 3300 * US), 0xF6F7F9);
	cairo_surface_destroy(im.sf);
	nf_render_layout_release(&lay);

	/* A queue that is not in the timeline. */
	o = base_opts(out);
	o.queues = bad;
	o.n_queues = 1;
	nf_error_clear(&err);
	ck_assert_int_eq(nf_render(db, &o, &err), NF_ENOENT);
	ck_assert_ptr_nonnull(strstr(err.msg, "0x999"));
}
END_TEST

START_TEST(dark_theme)
{
	char db[4200], out[4200];
	struct nf_render_options o;
	struct nf_render_layout lay;
	struct nf_image im;
	uint32_t bg;

	path_in_tmp(db, sizeof(db), "t.db");
	path_in_tmp(out, sizeof(out), "d.png");
	make_scenario(db);
	o = base_opts(out);
	o.theme = NF_THEME_DARK;
	o.width = 1000;
	render_ok(db, &o);
	layout_of(db, &o, &lay);
	nf_image_load(&im, out);
	ck_assert_int_eq(im.w, 1000);
	bg = pixel(&im, 2, 2);
	ck_assert_msg((bg & 0xFF) < 0x40, "dark background %06X", bg);
	ASSERT_COLOUR(lane_pixel(&im, &lay, Q3D, NF_LANE_WAIT, 1500 * US), C_WAIT);
	ASSERT_COLOUR(lane_pixel(&im, &lay, QCOMP, NF_LANE_SIGNAL, 3 * MS), C_SIGNAL);
	cairo_surface_destroy(im.sf);
	nf_render_layout_release(&lay);
}
END_TEST

/* Compares a render with tests/viewer/ref/scenario.png (NF_UPDATE_REF=1 rewrites it). */
START_TEST(reference_image)
{
	char db[4200], out[4200], ref[4200];
	struct nf_render_options o;
	struct nf_image a, b;
	long bad = 0;

	path_in_tmp(db, sizeof(db), "t.db");
	path_in_tmp(out, sizeof(out), "r.png");
	nf_test_source_path(ref, sizeof(ref), "tests/viewer/ref/scenario.png");
	make_scenario(db);
	o = base_opts(out);
	render_ok(db, &o);
	if (getenv("NF_UPDATE_REF")) {
		ck_assert_int_eq(nf_test_exec(NULL, NF_TEST_ARGV("cp", out, ref), NULL, 0, NULL, 0), 0);
	}
	nf_image_load(&a, out);
	nf_image_load(&b, ref);
	ck_assert_int_eq(a.w, b.w);
	ck_assert_int_eq(a.h, b.h);
	/* Text may antialias a little differently elsewhere: a per-pixel tolerance. */
	for (int y = 0; y < a.h; y++)
		for (int x = 0; x < a.w; x++)
			if (!nf_image_near(pixel(&a, x, y), pixel(&b, x, y), 16))
				bad++;
	ck_assert_msg(bad <= (long)a.w * a.h / 1000, "%ld pixels differ from %s", bad, ref);
	cairo_surface_destroy(a.sf);
	cairo_surface_destroy(b.sf);
}
END_TEST


/*
 * The CPU running ahead (the issue's nfence-sample window): on queue A 19 waits
 * and on queue B 19 signals, each queued 1 us after the previous and completed
 * 2 us after it, all overlapping in a 100 us window; signal i releases wait i.
 * extra: that many more signals on B, all overlapping (to pass the cap).
 */
#define DEEP_N 19
#define QA 0x40000040
#define QB 0x40000100
static void make_deep(const char *path, int extra)
{
	sqlite3 *db = create_db(path);
	char sql[512];

	exec_sql(db, "INSERT INTO meta (key, value) VALUES ('duration_ns','100000');"
		     "INSERT INTO adapters (adapter, name, vidsch_caps, native_fence, gpu_frequency) VALUES (0,'GPU',0,1,0);"
		     "INSERT INTO queues (queue, adapter, node, engine, name, start_ns, stop_ns) VALUES "
		     "(1073741888,0,0,0,'waiter',0,NULL),(1073742080,0,0,1,'signaler',0,NULL);");
	for (int i = 0; i < DEEP_N + extra; i++) {
		if (i < DEEP_N) {
			snprintf(sql, sizeof(sql),
				 "INSERT INTO fence_ops (id, queue, adapter, op, fence, handle, value, queued_ns, observed_ns, end_ns, status, log_seq) "
				 "VALUES (%d, 1073741888, 0, 'wait', 7, 7, %d, %d, NULL, %d, 'complete', %d);"
				 "INSERT INTO deps (signal_id, wait_id, cpu_signal, stall_ns) VALUES (%d, %d, NULL, 0);",
				 1 + i, 100 + i, 1000 * i, 62000 + 2000 * i, i, 1000 + i, 1 + i);
			exec_sql(db, sql);
		}
		snprintf(sql, sizeof(sql),
			 "INSERT INTO fence_ops (id, queue, adapter, op, fence, handle, value, queued_ns, observed_ns, end_ns, status, log_seq) "
			 "VALUES (%d, 1073742080, 0, 'signal', 7, 7, %d, %d, NULL, %d, 'complete', %d);",
			 1000 + i, 100 + i, 500 + 1000 * i, 60000 + 2000 * i, i);
		exec_sql(db, sql);
	}
	finish_db(db);
}

static size_t count_str(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* Overlapping operations are stacked: each of the 19 boxes of a lane has its own sub-lane. */
START_TEST(stacked_sublanes)
{
	char db[4200], png[4200], svg[4200];
	struct nf_render_options o;
	struct nf_render_layout lay;
	struct nf_image im;
	const struct nf_render_row *ra, *rb;
	char *text;
	size_t len;

	path_in_tmp(db, sizeof(db), "deep.db");
	path_in_tmp(png, sizeof(png), "deep.png");
	path_in_tmp(svg, sizeof(svg), "deep.svg");
	make_deep(db, 0);
	o = base_opts(png);
	render_ok(db, &o);
	layout_of(db, &o, &lay);
	ra = nf_render_layout_queue(&lay, QA);
	rb = nf_render_layout_queue(&lay, QB);
	ck_assert_ptr_nonnull(ra);
	ck_assert_ptr_nonnull(rb);
	ck_assert_int_eq(ra->n_sub[0], DEEP_N);
	ck_assert_int_eq(ra->n_sub[1], 1);
	ck_assert_int_eq(rb->n_sub[1], DEEP_N);
	ck_assert_int_eq(lay.shared, 0);
	ck_assert_double_gt(ra->h, 46.0 + 18 * 8.0);
	nf_image_load(&im, png);
	/* At 59 us every box is open: 19 pink bands, each with the background under it (the gap). */
	for (int k = 0; k < DEEP_N; k++) {
		double y0, y1, x = nf_render_layout_x(&lay, 59000);

		nf_render_sublane_extent(ra, NF_LANE_WAIT, k, &y0, &y1);
		ASSERT_COLOUR(pixel(&im, x, y0 + 1.5), C_WAIT);
		ck_assert_msg(!nf_image_near(pixel(&im, x, y1 + 0.2), C_WAIT, 8), "wait sub-lane %d has no gap below", k);
		nf_render_sublane_extent(rb, NF_LANE_SIGNAL, k, &y0, &y1);
		ASSERT_COLOUR(pixel(&im, x, y0 + 1.5), C_SIGNAL);
		ck_assert_msg(!nf_image_near(pixel(&im, x, y1 + 0.2), C_SIGNAL, 8), "signal sub-lane %d has no gap below", k);
	}
	cairo_surface_destroy(im.sf);

	/* The SVG: a tooltip per box, each at its own height, and a fence/value label in each. */
	o.output = svg;
	render_ok(db, &o);
	text = read_file(svg, &len);
	ck_assert_uint_eq(count_str(text, "<title>wait #"), DEEP_N);
	ck_assert_uint_eq(count_str(text, "<title>signal #"), DEEP_N);
	for (int i = 0; i < DEEP_N; i++) {
		char want[64];

		snprintf(want, sizeof(want), ">fence 0x7 = %d<", 100 + i);
		ck_assert_msg(count_str(text, want) == 2, "label %s: %zu", want, count_str(text, want));
	}
	ck_assert_ptr_nonnull(strstr(text, "stacked: 19 waits, 1 signal deep"));
	free(text);

	/* Each arrow ends at its own wait's box: 19 distinct heights. */
	{
		struct nf_render_scene sc;
		struct nf_error err;
		sqlite3 *h;
		double ys[DEEP_N];
		int n = 0;

		memset(&sc, 0, sizeof(sc));
		nf_error_clear(&err);
		ck_assert_int_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
		ck_assert_msg(nf_render_collect(h, &o, &lay, &sc, &err) == 0, "%s", err.msg);
		ck_assert_int_eq(sc.links.n, DEEP_N);
		for (size_t i = 0; i < sc.links.n; i++) {
			int seen = 0;

			for (int j = 0; j < n; j++)
				seen |= ys[j] == sc.links.v[i * 4 + 3];
			if (!seen)
				ys[n++] = sc.links.v[i * 4 + 3];
		}
		ck_assert_int_eq(n, DEEP_N);
		nf_render_scene_release(&sc);
		sqlite3_close(h);
	}
	nf_render_layout_release(&lay);
}
END_TEST

/* Deeper than the cap: the operations past it share a sub-lane, and the page says so. */
START_TEST(stacked_cap_is_said)
{
	char db[4200], svg[4200];
	struct nf_render_options o;
	struct nf_render_layout lay;
	char *text, want[128];
	size_t len;

	path_in_tmp(db, sizeof(db), "deep40.db");
	path_in_tmp(svg, sizeof(svg), "deep40.svg");
	make_deep(db, 21);  /* 40 overlapping signals */
	o = base_opts(svg);
	render_ok(db, &o);
	layout_of(db, &o, &lay);
	ck_assert_int_eq(lay.max_sub, NF_RENDER_MAX_SUB);
	ck_assert_int_eq(nf_render_layout_queue(&lay, QB)->n_sub[1], NF_RENDER_MAX_SUB);
	ck_assert_int_eq(lay.shared, 40 - NF_RENDER_MAX_SUB);
	text = read_file(svg, &len);
	snprintf(want, sizeof(want), "%d ops deeper than %d share a sub-lane", 40 - NF_RENDER_MAX_SUB,
		 NF_RENDER_MAX_SUB);
	ck_assert_msg(strstr(text, want) != NULL, "no '%s' in the subtitle", want);
	snprintf(want, sizeof(want), "%d ops deeper than %d share<", 40 - NF_RENDER_MAX_SUB, NF_RENDER_MAX_SUB);
	ck_assert_msg(strstr(text, want) != NULL, "no '%s' on the row", want);
	free(text);
	nf_render_layout_release(&lay);
}
END_TEST


/* 110 queues 40 deep would pass the page's height limit at 24 sub-lanes: the cap is halved, and said. */
START_TEST(stacked_cap_halved_on_tall_pages)
{
	char db[4200], svg[4200], sql[512], want[128];
	struct nf_render_options o;
	struct nf_render_layout lay;
	sqlite3 *h;
	char *text;
	size_t len;

	path_in_tmp(db, sizeof(db), "tall.db");
	path_in_tmp(svg, sizeof(svg), "tall.svg");
	h = create_db(db);
	exec_sql(h, "INSERT INTO meta (key, value) VALUES ('duration_ns','100000');"
		    "INSERT INTO adapters (adapter, name, vidsch_caps, native_fence, gpu_frequency) VALUES (0,'GPU',0,1,0);");
	for (int q = 0; q < 110; q++) {
		snprintf(sql, sizeof(sql), "INSERT INTO queues (queue, adapter, node, engine, name, start_ns, stop_ns) "
			 "VALUES (%d,0,0,0,'q%d',0,NULL);", 1000 + q, q);
		exec_sql(h, sql);
		for (int i = 0; i < 40; i++) {
			snprintf(sql, sizeof(sql),
				 "INSERT INTO fence_ops (id, queue, adapter, op, fence, handle, value, queued_ns, observed_ns, end_ns, status, log_seq) "
				 "VALUES (%d,%d,0,'signal',1,1,%d,%d,NULL,%d,'complete',%d);",
				 q * 100 + i + 1, 1000 + q, i, 1000 * i, 60000 + 1000 * i, i);
			exec_sql(h, sql);
		}
	}
	finish_db(h);
	o = base_opts(svg);
	render_ok(db, &o);
	layout_of(db, &o, &lay);
	ck_assert_int_eq(lay.max_sub, NF_RENDER_MAX_SUB / 2);
	ck_assert_double_le(lay.height, NF_RENDER_MAX_HEIGHT);
	ck_assert_int_eq(nf_render_layout_queue(&lay, 1000)->n_sub[1], NF_RENDER_MAX_SUB / 2);
	ck_assert_int_eq(lay.shared, 110 * (40 - NF_RENDER_MAX_SUB / 2));
	text = read_file(svg, &len);
	snprintf(want, sizeof(want), "%d ops deeper than %d share a sub-lane", 110 * (40 - NF_RENDER_MAX_SUB / 2),
		 NF_RENDER_MAX_SUB / 2);
	ck_assert_msg(strstr(text, want) != NULL, "no '%s' in the subtitle", want);
	free(text);
	nf_render_layout_release(&lay);
}
END_TEST

/*
 * The legend matches the drawing: zero and repeated timestamps have their own
 * markers (purple triangle, teal square) and legend entries, as do the circles
 * of operations left without an end; dense and instant signals stay dark.
 */
START_TEST(legend_matches_markers)
{
	char db[4200], png[4200], svg[4200];
	struct nf_render_options o;
	struct nf_render_layout lay;
	struct nf_image im;
	const struct nf_render_row *r;
	sqlite3 *h;
	char *text;
	size_t len;
	double y0, y1;
	int dark = 0, light = 0;

	path_in_tmp(db, sizeof(db), "marks.db");
	path_in_tmp(png, sizeof(png), "marks.png");
	path_in_tmp(svg, sizeof(svg), "marks.svg");
	h = create_db(db);
	exec_sql(h, "INSERT INTO meta (key, value) VALUES ('duration_ns','10000000');"
		    "INSERT INTO adapters (adapter, name, vidsch_caps, native_fence, gpu_frequency) VALUES (0,'GPU',0,1,0);"
		    "INSERT INTO queues (queue, adapter, node, engine, name, start_ns, stop_ns) VALUES (256,0,0,0,'q',0,NULL);"
		    "INSERT INTO anomalies (id, kind, queue, log, first_ns, last_ns, lost_entries, detail) VALUES"
		    " (1,'zero_timestamp',256,'waits',2000000,2000000,0,'z'),"
		    " (2,'repeated_timestamp',256,'signals',6000000,6000000,0,'r');"
		    /* ops without an end: a repeated-timestamp one, a zero one, an unmatched one */
		    "INSERT INTO fence_ops (id, queue, adapter, op, fence, handle, value, queued_ns, observed_ns, end_ns, status, log_seq) VALUES"
		    " (1,256,0,'wait',1,1,1,1000000,NULL,NULL,'zero_timestamp',0),"
		    " (2,256,0,'wait',1,1,2,3000000,NULL,NULL,'repeated_timestamp',1),"
		    " (3,256,0,'wait',1,1,3,5000000,NULL,NULL,'unmatched',2);");
	/* 300 instant signals in 1 ms (about 2 per pixel column: the lightest density level) and
	 * one lone instant signal at 9 ms; both light pink before the fix */
	for (int i = 0; i < 300; i++) {
		char sql[256];

		snprintf(sql, sizeof(sql),
			 "INSERT INTO fence_ops (id, queue, adapter, op, fence, handle, value, queued_ns, observed_ns, end_ns, status, log_seq) "
			 "VALUES (%d,256,0,'signal',2,2,%d,NULL,NULL,%d,'complete',%d);", 10 + i, i, 7000000 + i * 3333, i);
		exec_sql(h, sql);
	}
	exec_sql(h, "INSERT INTO fence_ops (id, queue, adapter, op, fence, handle, value, queued_ns, observed_ns, end_ns, status, log_seq) "
		    "VALUES (9000,256,0,'signal',3,3,1,NULL,NULL,9000000,'complete',0);");
	finish_db(h);
	o = base_opts(png);
	render_ok(db, &o);
	layout_of(db, &o, &lay);
	nf_image_load(&im, png);
	r = nf_render_layout_queue(&lay, 256);
	/* Anomaly markers near the row's top: zero purple, repeated teal. */
	ASSERT_COLOUR(pixel(&im, floor(nf_render_layout_x(&lay, 2000000)) + 0.5, r->y + 3.5), 0x7B1FA2);
	ASSERT_COLOUR(pixel(&im, floor(nf_render_layout_x(&lay, 6000000)) + 0.5, r->y + 4.0), 0x00897B);
	/* Open ops' circles at their start in the wait lane: zero purple, repeated teal, unmatched white. */
	nf_render_lane_extent(r, NF_LANE_WAIT, &y0, &y1);
	ASSERT_COLOUR(pixel(&im, floor(nf_render_layout_x(&lay, 1000000)) + 0.5, (y0 + y1) / 2), 0x7B1FA2);
	ASSERT_COLOUR(pixel(&im, floor(nf_render_layout_x(&lay, 3000000)) + 0.5, (y0 + y1) / 2), 0x00897B);
	ASSERT_COLOUR(pixel(&im, floor(nf_render_layout_x(&lay, 5000000)) + 0.5, (y0 + y1) / 2), C_WHITE);
	/* The dense band and the lone instant signal: dark pink, never the waits' light pink. */
	nf_render_lane_extent(r, NF_LANE_SIGNAL, &y0, &y1);
	for (double x = nf_render_layout_x(&lay, 7000000) + 1; x < nf_render_layout_x(&lay, 7990000); x++) {
		uint32_t p = pixel(&im, x, (y0 + y1) / 2);

		dark += ((p >> 8) & 0xFF) < 0x70;
		light += nf_image_near(p, C_WAIT, 40);
	}
	ck_assert_int_eq(light, 0);
	ck_assert_int_gt(dark, 100);
	{
		uint32_t p = pixel(&im, nf_render_layout_x(&lay, 9000000), (y0 + y1) / 2);

		ck_assert_msg(((p >> 8) & 0xFF) < 0x70 && !nf_image_near(p, C_WAIT, 40), "lone instant signal %06X", p);
	}
	cairo_surface_destroy(im.sf);
	/* Their legend entries (the SVG's text). */
	o.output = svg;
	render_ok(db, &o);
	text = read_file(svg, &len);
	ck_assert_ptr_nonnull(strstr(text, ">zero timestamp<"));
	ck_assert_ptr_nonnull(strstr(text, ">repeated timestamp<"));
	ck_assert_ptr_nonnull(strstr(text, ">end unmatched<"));
	ck_assert_ptr_nonnull(strstr(text, ">op lost<"));
	ck_assert_ptr_null(strstr(text, "zero / repeated"));
	free(text);
	nf_render_layout_release(&lay);
}
END_TEST

/* 200k operations on 4 queues over 1 s: density bands keep the SVG small. */
START_TEST(big_database_level_of_detail)
{
	char db[4200], png[4200], svg[4200];
	struct nf_render_options o;
	sqlite3 *h;
	sqlite3_stmt *ins, *dep;
	struct stat sb;
	struct timespec t0, t1;
	uint64_t rnd = 12345;

	path_in_tmp(db, sizeof(db), "big.db");
	path_in_tmp(png, sizeof(png), "big.png");
	path_in_tmp(svg, sizeof(svg), "big.svg");
	h = create_db(db);
	exec_sql(h, "INSERT INTO meta (key, value) VALUES ('duration_ns','1000000000');"
		    "INSERT INTO adapters (adapter, name, vidsch_caps, native_fence, gpu_frequency) VALUES (0,'Big GPU',0,1,0);"
		    "INSERT INTO queues (queue, adapter, node, engine, name, start_ns, stop_ns) VALUES (1,0,0,0,'q1',0,NULL),(2,0,0,0,'q2',0,NULL),"
		    "(3,0,1,1,'q3',0,NULL),(4,0,1,1,'q4',0,NULL);");
	ck_assert_int_eq(sqlite3_prepare_v2(h, "INSERT INTO fence_ops (id, queue, adapter, op, fence, handle, value, queued_ns, observed_ns, end_ns, status, log_seq) "
						    "VALUES (?1,?2,0,?3,?4,?4,?5,?6,?7,?8,?9,?1)",
					    -1, &ins, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(h, "INSERT INTO deps (signal_id, wait_id, cpu_signal, stall_ns) VALUES (?1,?2,NULL,?3)", -1, &dep,
					    NULL), SQLITE_OK);
	for (int64_t i = 1; i <= 200000; i++) {
		int64_t q = 1 + (i % 4), start = i * 5000, end;
		int wait = (i / 4) % 2 == 0;

		rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
		end = start + (int64_t)(rnd >> 52) * 100 + 200;
		sqlite3_bind_int64(ins, 1, i);
		sqlite3_bind_int64(ins, 2, q);
		sqlite3_bind_text(ins, 3, wait ? "wait" : "signal", -1, SQLITE_STATIC);
		sqlite3_bind_int64(ins, 4, i / 8);
		sqlite3_bind_int64(ins, 5, i);
		sqlite3_bind_int64(ins, 6, start);
		if (wait)
			sqlite3_bind_int64(ins, 7, start + 100);
		else
			sqlite3_bind_null(ins, 7);
		if (i % 997 == 0) {
			sqlite3_bind_null(ins, 8);
			sqlite3_bind_text(ins, 9, "lost", -1, SQLITE_STATIC);
		} else {
			sqlite3_bind_int64(ins, 8, end);
			sqlite3_bind_text(ins, 9, "complete", -1, SQLITE_STATIC);
		}
		ck_assert_int_eq(sqlite3_step(ins), SQLITE_DONE);
		sqlite3_reset(ins);
		if (!wait && i > 4) {
			sqlite3_bind_int64(dep, 1, i);
			sqlite3_bind_int64(dep, 2, i - 4 - (i % 2));
			sqlite3_bind_int64(dep, 3, 100);
			ck_assert_int_eq(sqlite3_step(dep), SQLITE_DONE);
			sqlite3_reset(dep);
		}
	}
	sqlite3_finalize(ins);
	sqlite3_finalize(dep);
	exec_sql(h, "INSERT INTO anomalies (id, kind, queue, log, first_ns, last_ns, lost_entries, detail) "
		    "VALUES (1,'lost',3,'waits',400000000,420000000,77,'x');");
	finish_db(h);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	o = base_opts(png);
	render_ok(db, &o);
	o.output = svg;
	render_ok(db, &o);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ck_assert_int_eq(stat(svg, &sb), 0);
	fprintf(stderr, "big: svg %lld bytes, png+svg in %.2f s\n", (long long)sb.st_size,
		(double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	ck_assert_msg(sb.st_size < 3 * 1024 * 1024, "svg is %lld bytes", (long long)sb.st_size);
	ck_assert_int_eq(stat(png, &sb), 0);
}
END_TEST

START_TEST(parse_duration_table)
{
	static const struct {
		const char *text;
		int ok;
		int64_t ns;
	} cases[] = {
		{ "42", 1, 42 },
		{ "0", 1, 0 },
		{ "1500ns", 1, 1500 },
		{ "300us", 1, 300000 },
		{ "300\xC2\xB5s", 1, 300000 },
		{ "300\xCE\xBCs", 1, 300000 },
		{ "12.5ms", 1, 12500000 },
		{ "0.5ms", 1, 500000 },
		{ ".5s", 1, 500000000 },
		{ "2s", 1, 2000000000 },
		{ "1.000000001s", 1, 1000000001 },
		{ "9223372036854775807", 1, INT64_MAX },
		{ "9223372036s", 1, 9223372036000000000LL },
		{ "", 0, 0 },
		{ "ms", 0, 0 },
		{ "-5ms", 0, 0 },
		{ "+5ms", 0, 0 },
		{ "5 ms", 0, 0 },
		{ " 5ms", 0, 0 },
		{ "5ms ", 0, 0 },
		{ "5msx", 0, 0 },
		{ "5m", 0, 0 },
		{ "5h", 0, 0 },
		{ "1e3", 0, 0 },
		{ "5.", 0, 0 },
		{ "1.2.3ms", 0, 0 },
		{ "1.5ns", 0, 0 },
		{ "0.0000001us", 0, 0 },
		{ "9223372036854775808", 0, 0 },
		{ "9223372037s", 0, 0 },
		{ "99999999999999999999999ms", 0, 0 },
		{ "abc", 0, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct nf_error err;
		int64_t v = -7;
		int rc;

		nf_error_clear(&err);
		rc = nf_parse_duration(cases[i].text, &v, &err);
		if (cases[i].ok) {
			ck_assert_msg(rc == 0, "'%s': %s", cases[i].text, err.msg);
			ck_assert_msg(v == cases[i].ns, "'%s' gave %lld", cases[i].text, (long long)v);
		} else {
			ck_assert_msg(rc == NF_EINVAL, "'%s' accepted (%lld)", cases[i].text,
				      (long long)v);
			ck_assert_int_eq(v, -7);
			ck_assert_msg(err.msg[0] != '\0', "'%s': no message", cases[i].text);
		}
	}
	ck_assert_int_eq(nf_parse_duration(NULL, &(int64_t){ 0 }, NULL), NF_EINVAL);
}
END_TEST

START_TEST(bad_inputs)
{
	char db[4200], out[4200], junk[4200];
	struct nf_render_options o;
	struct nf_error err;
	FILE *f;

	path_in_tmp(db, sizeof(db), "t.db");
	path_in_tmp(out, sizeof(out), "x.png");
	make_scenario(db);

	/* A missing database. */
	o = base_opts(out);
	nf_error_clear(&err);
	ck_assert_int_eq(nf_render("/nonexistent/timeline.db", &o, &err), NF_ENOENT);
	ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/timeline.db"));

	/* An unknown output format. */
	path_in_tmp(out, sizeof(out), "x.bmp");
	o = base_opts(out);
	nf_error_clear(&err);
	ck_assert_int_eq(nf_render(db, &o, &err), NF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "unknown output format (use .png, .svg or .pdf)"));
	o.output = "noextension";
	nf_error_clear(&err);
	ck_assert_int_eq(nf_render(db, &o, &err), NF_EINVAL);

	/* An output that cannot be written, in every format. */
	o.output = "/nonexistent-dir/x.png";
	nf_error_clear(&err);
	ck_assert_int_lt(nf_render(db, &o, &err), 0);
	ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent-dir/x.png"));
	o.output = "/nonexistent-dir/x.pdf";
	nf_error_clear(&err);
	ck_assert_int_lt(nf_render(db, &o, &err), 0);
	path_in_tmp(junk, sizeof(junk), "full.svg");
	if (access("/dev/full", W_OK) == 0 && symlink("/dev/full", junk) == 0) {
		/* A full disk: the write error is seen and reported as I/O. */
		o.output = junk;
		nf_error_clear(&err);
		ck_assert_int_eq(nf_render(db, &o, &err), NF_EIO);
	}

	/* A file that is not a timeline. */
	path_in_tmp(junk, sizeof(junk), "junk.db");
	f = fopen(junk, "w");
	ck_assert_ptr_nonnull(f);
	fputs("this is not sqlite\n", f);
	fclose(f);
	path_in_tmp(out, sizeof(out), "x.png");
	o = base_opts(out);
	nf_error_clear(&err);
	ck_assert_int_lt(nf_render(junk, &o, &err), 0);
	ck_assert_int_ne(err.code, NF_OK);

	/* Bad windows and widths. */
	o = base_opts(out);
	o.from_ns = 5 * MS;
	o.to_ns = 4 * MS;
	nf_error_clear(&err);
	ck_assert_int_eq(nf_render(db, &o, &err), NF_EINVAL);
	o = base_opts(out);
	o.from_ns = -5;
	nf_error_clear(&err);
	ck_assert_int_eq(nf_render(db, &o, &err), NF_EINVAL);
	o = base_opts(out);
	o.width = 10;
	nf_error_clear(&err);
	ck_assert_int_eq(nf_render(db, &o, &err), NF_EINVAL);
	nf_error_clear(&err);
	ck_assert_int_eq(nf_render(db, NULL, &err), NF_EINVAL);
	/* Nothing was left behind by the failures. */
	ck_assert_int_ne(access(out, F_OK), 0);
}
END_TEST

/* An empty timeline (schema only) still renders a page. */
START_TEST(empty_timeline)
{
	char db[4200], out[4200];
	struct nf_render_options o;

	path_in_tmp(db, sizeof(db), "e.db");
	path_in_tmp(out, sizeof(out), "e.svg");
	finish_db(create_db(db));
	o = base_opts(out);
	render_ok(db, &o);
	ck_assert_int_eq(access(out, F_OK), 0);
}
END_TEST

/*
 * The display row of samples/frames-late.nfs (frames computed by nftrace
 * frames), 60-140 ms: frame 5's flip green from its GPU work done (73.7 ms)
 * to its blank (83.3 ms), full height; frame 6's red (late: ready 102.4 ms,
 * latched at 116.7 ms) in the upper half as frame 7's (ready 107.4 ms) is in
 * the queue beside it, in the lower half; a black boundary at each present,
 * a blank tick at each vertical blank; the late frame named above it.
 */
#define C_FLIP 0x43A047u
#define C_LATE 0xE53935u

START_TEST(display_row_late_frame)
{
	char dir[4200], db[4300], png[4200], svg[4200], out[4096], err[4096];
	struct nf_render_options o;
	struct nf_render_layout lay;
	struct nf_image im;
	const struct nf_render_row *d = NULL;
	char *text;
	size_t len;

	path_in_tmp(dir, sizeof(dir), "late");
	path_in_tmp(png, sizeof(png), "late.png");
	path_in_tmp(svg, sizeof(svg), "late.svg");
	nf_test_record("samples/frames-late.nfs", dir, NULL);
	ck_assert_int_eq(nf_test_nftrace_run(NF_TEST_ARGV("frames", dir), out, sizeof(out), err, sizeof(err)), 0);
	snprintf(db, sizeof(db), "%s/%s", dir, NF_TIMELINE_DB_NAME);
	o = base_opts(png);
	o.from_ns = 60 * MS;
	o.to_ns = 140 * MS;
	render_ok(db, &o);
	layout_of(db, &o, &lay);
	ck_assert_uint_eq(lay.n_displays, 1);
	for (size_t i = 0; i < lay.n_rows; i++)
		if (lay.rows[i].kind == NF_ROW_DISPLAY)
			d = &lay.rows[i];
	ck_assert_ptr_nonnull(d);
	ck_assert_int_eq(d->id, 0);
	ck_assert_str_eq(d->name, "Monitor");
	ck_assert_int_eq(d->engine, 10); /* its frames */
	nf_image_load(&im, png);
	double top = d->y + 17, half = (d->h - 21 - 2) / 2;

	/* frame 5: one flip in the queue, full height */
	ASSERT_COLOUR(pixel(&im, nf_render_layout_x(&lay, 78 * MS), top + 2), C_FLIP);
	ASSERT_COLOUR(pixel(&im, nf_render_layout_x(&lay, 78 * MS), top + 2 * half), C_FLIP);
	/* before it was ready: nothing */
	ASSERT_COLOUR(pixel(&im, nf_render_layout_x(&lay, 71 * MS), top + 2), C_WHITE);
	/* frame 6, late, above frame 7's flip */
	ASSERT_COLOUR(pixel(&im, nf_render_layout_x(&lay, 110 * MS), top + 2), C_LATE);
	ASSERT_COLOUR(pixel(&im, nf_render_layout_x(&lay, 110 * MS), top + half + 4), C_FLIP);
	/* only frame 7 after frame 6 was latched, until frame 8 is ready (123.7 ms), above it */
	ASSERT_COLOUR(pixel(&im, nf_render_layout_x(&lay, 121 * MS), top + 2), C_WHITE);
	ASSERT_COLOUR(pixel(&im, nf_render_layout_x(&lay, 121 * MS), top + half + 4), C_FLIP);
	ASSERT_COLOUR(pixel(&im, nf_render_layout_x(&lay, 125 * MS), top + 2), C_FLIP);
	/* frame 6's present (84.333 ms): its boundary, dark, across the row */
	{
		uint32_t px = pixel(&im, nf_render_layout_x(&lay, 84333335) + 0.2, d->y + 5);

		ck_assert_msg((px >> 16) < 0x60 && ((px >> 8) & 0xFF) < 0x60 && (px & 0xFF) < 0x70, "present edge %06X", px);
	}
	cairo_surface_destroy(im.sf);
	/* the SVG names the late frame and how late its GPU work was */
	o.output = svg;
	render_ok(db, &o);
	text = read_file(svg, &len);
	ck_assert_uint_eq(count_str(text, "frame 6 late 2.354 ms"), 1);
	ck_assert_ptr_nonnull(strstr(text, "display Monitor"));
	ck_assert_ptr_nonnull(strstr(text, "5 frames (1 late)"));
	free(text);
	nf_render_layout_release(&lay);
}
END_TEST

static Suite *viewer_suite(void)
{
	Suite *s = suite_create("viewer");
	TCase *tc = tcase_create("render");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, scenario_png_colours);
	tcase_add_test(tc, formats_valid_and_deterministic);
	tcase_add_test(tc, window_filter);
	tcase_add_test(tc, queue_and_fence_filters);
	tcase_add_test(tc, dark_theme);
	tcase_add_test(tc, reference_image);
	tcase_add_test(tc, big_database_level_of_detail);
	tcase_add_test(tc, stacked_sublanes);
	tcase_add_test(tc, stacked_cap_is_said);
	tcase_add_test(tc, stacked_cap_halved_on_tall_pages);
	tcase_add_test(tc, legend_matches_markers);
	tcase_add_test(tc, parse_duration_table);
	tcase_add_test(tc, bad_inputs);
	tcase_add_test(tc, empty_timeline);
	tcase_add_test(tc, display_row_late_frame);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return nf_test_main(viewer_suite());
}
