/*
 * The HTML report in headless Chromium. Records the sample program
 * (samples/nfence-sample.c: the CPU runs ahead, GPU signals release a CPU
 * wait), writes its page, and:
 *  - opens it at #selftest: the page zooms with the wheel, pans by dragging,
 *    hovers the first wait released by a GPU signal, clicks it and its signal,
 *    searches the wait's fence and collapses a group, writing what it found
 *    into <pre id="selftest">, read here with --dump-dom and compared with what
 *    the timeline (nftrace query) says;
 *  - screenshots it at three zooms (#view=FROM,TO) and compares each with
 *    the PNGs in tests/html/ref with a tolerance (NF_UPDATE_REF=1 rewrites them).
 * Kernel sessions (samples/kernel/drm-sched.dat) and ETW sessions (a capture
 * of tests/html/html_etl.c): the self-test lists the rows, counts what a draw
 * of the whole window put on the canvas (job boxes, vblank and VSync lines,
 * marker ticks, DMA packets), hovers and clicks a job and the job it depended
 * on, hovers a marker and a DMA packet; a screenshot of each is compared with
 * its reference. `test_html_chromium real` (its own ctest, skipped when
 * ../shared/real-traces is absent) does the same on the real amdgpu trace and
 * Windows capture.
 * Without /usr/bin/chromium (or $NF_CHROMIUM) it says so and exits 77 (skipped).
 */
#include "nf_test.h"
#include "nf_image.h"
#include "html_etl.h"

#include <cairo.h>
#include <stdint.h>

#define SKIP_CODE 77

static char tmpdir[1024];
static const char *chromium;

static void setup(void)
{
	nf_test_tmpdir(tmpdir, sizeof(tmpdir));
}

static void teardown(void)
{
	cairo_debug_reset_static_data();
	if (!getenv("NF_KEEP_TMP"))
		nf_test_rmtree(tmpdir);
}

/* A shell script with its paths as "$1"... and nftrace as "$NF" (nf_test_sh); exit 0 or the test fails. */
static void sh_ok(const char *script, const char *const args[], char *out, size_t len)
{
	char err[4096];
	int rc = nf_test_sh(script, args, out, len, err, sizeof(err));

	ck_assert_msg(rc == 0, "`%.300s` exited %d: %.1500s", script, rc, err);
}

static long long query_int(const char *dir, const char *sql)
{
	char out[4096], err[4096];
	const char *nl;
	int rc = nf_test_nftrace_run(NF_TEST_ARGV("query", "--csv", dir, sql), out, sizeof(out), err,
				     sizeof(err));

	ck_assert_msg(rc == 0, "query %s exited %d: %.1500s", sql, rc, err);
	nl = strchr(out, '\n');
	ck_assert_msg(nl && nl[1], "no result for %s", sql);
	return atoll(nl + 1);
}

/* Records the sample program and writes its page; dir and page are filled. */
static void make_page(char *dir, size_t dlen, char *page, size_t plen)
{
	char out[512];
	const char *bin = getenv("NF_BINARY_DIR");

	ck_assert_msg(bin != NULL, "NF_BINARY_DIR not set (run through ctest)");
	snprintf(dir, dlen, "%s/ns", tmpdir);
	snprintf(page, plen, "%s/ns.html", tmpdir);
	/* Run from the temporary directory as ./nfence-sample: the page names the program as
	 * it was started, and the screenshots must not depend on where the build is. */
	sh_ok("cp \"$1/nfence-sample\" \"$2/\" && cd \"$2\" && \"$NF\" record -o ns -- ./nfence-sample && "
	      "\"$NF\" report ns -o ns.html", NF_TEST_ARGV(bin, tmpdir), out, sizeof(out));
}

/* The value of "key=" in the self-test's output (copied into val), or NULL. */
static const char *st_value(const char *dom, const char *key, char *val, size_t len)
{
	char pat[128];
	const char *p, *e;

	snprintf(pat, sizeof(pat), "\n%s=", key);
	p = strstr(dom, pat);
	if (!p) {  /* the first line follows the tag */
		snprintf(pat, sizeof(pat), ">%s=", key);
		p = strstr(dom, pat);
	}
	if (!p)
		return NULL;
	p += strlen(pat);
	e = p + strcspn(p, "\n<");
	snprintf(val, len, "%.*s", (int)(e - p), p);
	return val;
}

static const char *need(const char *dom, const char *key, char *val, size_t len)
{
	const char *v = st_value(dom, key, val, len);

	ck_assert_msg(v != NULL, "self-test wrote no %s: %.2000s", key, dom);
	return v;
}

START_TEST(selftest_in_chromium)
{
	char dir[1200], page[1200], v[512], want[128], sql[512];
	static char dom[1 << 20];
	long long wait, signal, fence, n;

	make_page(dir, sizeof(dir), page, sizeof(page));
	sh_ok("timeout 120 \"$1\" --headless --no-sandbox --disable-gpu --hide-scrollbars "
	      "--no-first-run --disable-crash-reporter --user-data-dir=\"$2/profile\" "
	      "--window-size=1400,700 --virtual-time-budget=10000 --dump-dom \"file://$3#selftest\"",
	      NF_TEST_ARGV(chromium, tmpdir, page), dom, sizeof(dom));
	ck_assert_msg(strstr(dom, "selftest=done"), "the self-test did not finish: %.3000s",
		      strstr(dom, "id=\"selftest\"") ? strstr(dom, "id=\"selftest\"") : dom);

	/* zoom: ten wheel steps in narrow the view; pan: a 100 px drag moves it 100 px */
	ck_assert(atoll(need(dom, "zoom.span_after", v, sizeof(v))) * 5 <
		  atoll(need(dom, "zoom.span_before", v, sizeof(v))));
	ck_assert_msg(atof(need(dom, "pan.shift_px", v, sizeof(v))) > 99.0 && atof(v) < 101.0,
		      "pan moved %s px", v);
	/* hover: the first wait released by a GPU signal, with every field */
	wait = query_int(dir, "select min(d.wait_id) from deps d join fence_ops w on w.id = d.wait_id "
			      "where d.signal_id is not null and w.queue is not null");
	signal = query_int(dir, "select signal_id from deps where wait_id = (select min(d.wait_id) "
				"from deps d join fence_ops w on w.id = d.wait_id "
				"where d.signal_id is not null and w.queue is not null)");
	snprintf(want, sizeof(want), "op:%lld", wait);
	ck_assert_str_eq(need(dom, "hover.item", v, sizeof(v)), want);
	ck_assert_str_eq(need(dom, "hover.has_fields", v, sizeof(v)), "1");
	/* click the wait: its releasing signal; click the signal: the wait among those it released */
	snprintf(want, sizeof(want), "wait #%lld", wait);
	ck_assert_str_eq(need(dom, "click.selected", v, sizeof(v)), want);
	snprintf(want, sizeof(want), "signal #%lld", signal);
	ck_assert_str_eq(need(dom, "click.related", v, sizeof(v)), want);
	ck_assert_str_eq(need(dom, "click2.selected", v, sizeof(v)), want);
	snprintf(want, sizeof(want), "wait #%lld", wait);
	need(dom, "click2.related", v, sizeof(v));
	ck_assert_msg(strstr(v, want) != NULL, "signal's related '%s' lacks '%s'", v, want);
	/* search the wait's fence: every operation and CPU wait with it as fence, value or id */
	snprintf(sql, sizeof(sql), "select fence from fence_ops where id = %lld", wait);
	fence = query_int(dir, sql);
	snprintf(sql, sizeof(sql),
		 "select (select count(*) from fence_ops where queue is not null and "
		 "(fence = %lld or value = %lld or id = %lld)) + (select count(*) from cpu_waits "
		 "where fence = %lld or value = %lld)",
		 fence, fence, fence, fence, fence);
	n = query_int(dir, sql);
	ck_assert_msg(n > 0, "nothing to find");
	snprintf(want, sizeof(want), "0x%llx", fence);
	ck_assert_str_eq(need(dom, "search.query", v, sizeof(v)), want);
	ck_assert_int_eq(atoll(need(dom, "search.matches", v, sizeof(v))), n);
	ck_assert_str_eq(need(dom, "search.in_view", v, sizeof(v)), "1");
	/* collapse: the first group's rows leave the page */
	ck_assert_int_lt(atoll(need(dom, "collapse.entries_after", v, sizeof(v))),
			 atoll(need(dom, "collapse.entries_before", v, sizeof(v))));
	/* the CPU wait released by a GPU signal is linked (an arrow) */
	ck_assert_int_ge(atoll(need(dom, "cpu.links", v, sizeof(v))),
			 query_int(dir, "select count(*) from cpu_waits where status = 'satisfied'"));
	ck_assert_int_ge(atoll(need(dom, "cpu.links", v, sizeof(v))), 1);
	need(dom, "perf.first_paint_ms", v, sizeof(v));
	need(dom, "perf.zoom_ms_max", v, sizeof(v));
}
END_TEST

/* Pixels differing by more than 48 in a channel, over all pixels. */
static double differing(const struct nf_image *a, const struct nf_image *b)
{
	long n = 0;

	for (int y = 0; y < a->h; y++)
		for (int x = 0; x < a->w; x++)
			n += !nf_image_near(nf_image_pixel(a, x, y), nf_image_pixel(b, x, y), 48);
	return (double)n / ((double)a->w * a->h);
}

START_TEST(screenshots_at_zooms)
{
	static const struct {
		const char *hash, *ref;
	} views[] = {
		{ "", "nfence-sample-whole.png" },
		{ "#view=0,600000", "nfence-sample-600us.png" },
		{ "#view=140000,200000&select=2", "nfence-sample-60us-selected.png" },
	};
	char dir[1200], page[1200], out[512], shot[1300], ref[2048], rel[256];

	make_page(dir, sizeof(dir), page, sizeof(page));
	for (size_t i = 0; i < sizeof(views) / sizeof(views[0]); i++) {
		struct nf_image a, b;
		double d;
		long ink = 0;

		snprintf(shot, sizeof(shot), "%s/shot%zu.png", tmpdir, i);
		sh_ok("timeout 120 \"$1\" --headless --no-sandbox --disable-gpu --hide-scrollbars "
		      "--no-first-run --disable-crash-reporter --user-data-dir=\"$2/profile\" "
		      "--window-size=1400,700 --virtual-time-budget=5000 --screenshot=\"$3\" \"file://$4$5\"",
		      NF_TEST_ARGV(chromium, tmpdir, shot, page, views[i].hash), out, sizeof(out));
		snprintf(rel, sizeof(rel), "tests/html/ref/%s", views[i].ref);
		nf_test_source_path(ref, sizeof(ref), rel);
		if (getenv("NF_UPDATE_REF")) {
			sh_ok("cp \"$1\" \"$2\"", NF_TEST_ARGV(shot, ref), out, sizeof(out));
		}
		nf_image_load(&a, shot);
		ck_assert_int_eq(a.w, 1400);
		ck_assert_int_eq(a.h, 700);
		for (int y = 0; y < a.h; y++)
			for (int x = 0; x < a.w; x++)
				ink += !nf_image_near(nf_image_pixel(&a, x, y), 0xFFFFFF, 8);
		ck_assert_msg(ink > (long)a.w * a.h / 20, "%s: nearly blank (%ld px)", views[i].ref, ink);
		ck_assert_msg(access(ref, R_OK) == 0,
			      "%s missing: run with NF_UPDATE_REF=1 to create it from %s", ref, shot);
		nf_image_load(&b, ref);
		ck_assert_int_eq(b.w, a.w);
		ck_assert_int_eq(b.h, a.h);
		d = differing(&a, &b);
		ck_assert_msg(d < 0.005, "%s: %.2f%% of pixels differ from the reference (kept: %s)",
			      views[i].ref, d * 100.0, shot);
		cairo_surface_destroy(a.sf);
		cairo_surface_destroy(b.sf);
	}
}
END_TEST

/* Imports file into tmpdir/name, writes tmpdir/name.html; page filled. */
static void import_page(const char *file, const char *name, char *dir, size_t dlen, char *page, size_t plen)
{
	char out[1024];

	snprintf(dir, dlen, "%s/%s", tmpdir, name);
	snprintf(page, plen, "%s/%s.html", tmpdir, name);
	/* Imported by its base name from its folder: the page names the file as given, and the
	 * screenshots must not depend on where the sources are. */
	sh_ok("cd \"$(dirname \"$1\")\" && \"$NF\" import \"$(basename \"$1\")\" -o \"$2\" --force >/dev/null && "
	      "\"$NF\" report \"$2\" -o \"$3\" --title \"$4\"",
	      NF_TEST_ARGV(file, dir, page, name), out, sizeof(out));
}

/* The page at #selftest in Chromium: its self-test's output in dom. */
static void run_selftest(const char *page, char *dom, size_t len)
{
	sh_ok("timeout 120 \"$1\" --headless --no-sandbox --disable-gpu --hide-scrollbars "
	      "--no-first-run --disable-crash-reporter --user-data-dir=\"$2/profile\" "
	      "--window-size=1400,900 --virtual-time-budget=20000 --dump-dom \"file://$3#selftest\"",
	      NF_TEST_ARGV(chromium, tmpdir, page), dom, len);
	ck_assert_msg(strstr(dom, "selftest=done"), "the self-test did not finish: %.3000s",
		      strstr(dom, "id=\"selftest\"") ? strstr(dom, "id=\"selftest\"") : dom);
	if (getenv("NF_SHOW_SELFTEST")) {
		const char *p = strstr(dom, "id=\"selftest\"");

		fprintf(stderr, "%.4000s\n", p ? p : dom);
	}
}

/* The count of kind in a "draw.whole" list "a:1,b:2" (0 when absent). */
static long long drawn(const char *dom, const char *kind)
{
	char v[1024], pat[64];
	const char *p;

	need(dom, "draw.whole", v, sizeof(v));
	snprintf(pat, sizeof(pat), "%s:", kind);
	for (p = v; (p = strstr(p, pat)) != NULL; p++)
		if (p == v || p[-1] == ',')
			return atoll(p + strlen(pat));
	return 0;
}

/* A screenshot of page+hash compared with tests/html/ref/ref (NF_UPDATE_REF=1 rewrites it). */
static void shot_matches(const char *page, const char *hash, const char *refname, int w, int h)
{
	char out[512], shot[1300], ref[2048], rel[256], size[32];
	struct nf_image a, b;
	long ink = 0;
	double d;

	snprintf(shot, sizeof(shot), "%s/%s", tmpdir, refname);
	snprintf(size, sizeof(size), "%d,%d", w, h);
	sh_ok("timeout 120 \"$1\" --headless --no-sandbox --disable-gpu --hide-scrollbars "
	      "--no-first-run --disable-crash-reporter --user-data-dir=\"$2/profile\" "
	      "--window-size=\"$3\" --virtual-time-budget=5000 --screenshot=\"$4\" \"file://$5$6\"",
	      NF_TEST_ARGV(chromium, tmpdir, size, shot, page, hash), out, sizeof(out));
	snprintf(rel, sizeof(rel), "tests/html/ref/%s", refname);
	nf_test_source_path(ref, sizeof(ref), rel);
	if (getenv("NF_UPDATE_REF")) {
		sh_ok("cp \"$1\" \"$2\"", NF_TEST_ARGV(shot, ref), out, sizeof(out));
	}
	nf_image_load(&a, shot);
	ck_assert_int_eq(a.w, w);
	ck_assert_int_eq(a.h, h);
	for (int y = 0; y < a.h; y++)
		for (int x = 0; x < a.w; x++)
			ink += !nf_image_near(nf_image_pixel(&a, x, y), 0xFFFFFF, 8);
	ck_assert_msg(ink > (long)a.w * a.h / 20, "%s: nearly blank (%ld px)", refname, ink);
	ck_assert_msg(access(ref, R_OK) == 0, "%s missing: run with NF_UPDATE_REF=1 to create it from %s", ref, shot);
	nf_image_load(&b, ref);
	ck_assert_int_eq(b.w, a.w);
	ck_assert_int_eq(b.h, a.h);
	d = differing(&a, &b);
	ck_assert_msg(d < 0.005, "%s: %.2f%% of pixels differ from the reference (kept: %s)", refname, d * 100.0, shot);
	cairo_surface_destroy(a.sf);
	cairo_surface_destroy(b.sf);
}

/* samples/kernel/drm-sched.events: two rings, jobs 11..14, 12 after 11, 14 after 12's scheduled fence. */
START_TEST(kernel_session)
{
	char dat[2048], dir[1200], page[1300], v[2048];
	static char dom[1 << 20];

	nf_test_source_path(dat, sizeof(dat), "samples/kernel/drm-sched.dat");
	import_page(dat, "drm-sched", dir, sizeof(dir), page, sizeof(page));
	run_selftest(page, dom, sizeof(dom));
	ck_assert_str_eq(need(dom, "rows.kinds", v, sizeof(v)), "lane:2,thread:3");
	/* the rings' lanes on top, then the threads by process */
	ck_assert_str_eq(need(dom, "rows.display", v, sizeof(v)),
			 "[GPU jobs]|amdgpu gfx_0.0.0|drm_sched sdma0|[CPU threads]|[process unknown]|"
			 "kworker/u64:2 (thread 90)|app (thread 500)|app-render (thread 501)");
	ck_assert_int_eq(atoll(need(dom, "items.job", v, sizeof(v))), query_int(dir, "select count(*) from jobs"));
	ck_assert_int_eq(atoll(need(dom, "items.links", v, sizeof(v))), 3);
	ck_assert_int_eq(atoll(need(dom, "items.vblank", v, sizeof(v))), 3);
	ck_assert_int_eq(atoll(need(dom, "items.marker", v, sizeof(v))), 2);
	/* what the whole window's draw put on the canvas: every job, vblank and marker (all apart) */
	ck_assert_int_eq(drawn(dom, "job"), 4);
	ck_assert_int_eq(drawn(dom, "vblank"), 3);
	ck_assert_int_eq(drawn(dom, "marker"), 2);
	ck_assert_int_ge(drawn(dom, "run"), 1);
	/* job #2 (scheduler job 12) depended on job #1; job #4 on job #2 */
	ck_assert_str_eq(need(dom, "link.expect", v, sizeof(v)), "job #2 after job #1");
	ck_assert_str_eq(need(dom, "link.hover", v, sizeof(v)), "job:2");
	ck_assert_str_eq(need(dom, "link.hover_fields", v, sizeof(v)), "1");
	ck_assert_str_eq(need(dom, "link.click.selected", v, sizeof(v)), "job #2");
	ck_assert_str_eq(need(dom, "link.click.related", v, sizeof(v)), "job #1,job #4");
	ck_assert_str_eq(need(dom, "link.click.arrows", v, sizeof(v)), "2");
	ck_assert_str_eq(need(dom, "link.click2.selected", v, sizeof(v)), "job #1");
	ck_assert_str_eq(need(dom, "link.click2.related", v, sizeof(v)), "job #2");
	/* the marker thread 500 wrote at 0.9 ms (a point on its thread's row) */
	ck_assert_str_eq(need(dom, "tick.hover", v, sizeof(v)), "marker:1");
	ck_assert_str_eq(need(dom, "tick.text", v, sizeof(v)), "frame_1_begin");
	ck_assert_str_eq(need(dom, "tick.row", v, sizeof(v)), "app (thread 500)");
	shot_matches(page, "", "drm-sched-whole.png", 1400, 700);
	shot_matches(page, "#view=800000,3200000&select=job:2", "drm-sched-job2-selected.png", 1400, 700);
}
END_TEST

/* The other kernel fixtures: i915's rings (samples/kernel/i915.events: four jobs on rcs0 and
 * vcs1, one never started) and dma-fence's timelines, CPU waits and the one a signal released. */
START_TEST(kernel_fixtures)
{
	char dat[2048], dir[1200], page[1300], v[2048];
	static char dom[1 << 20];

	nf_test_source_path(dat, sizeof(dat), "samples/kernel/i915.dat");
	import_page(dat, "i915", dir, sizeof(dir), page, sizeof(page));
	run_selftest(page, dom, sizeof(dom));
	ck_assert_str_eq(need(dom, "rows.kinds", v, sizeof(v)), "lane:2,thread:2");
	ck_assert_str_eq(need(dom, "rows.display", v, sizeof(v)),
			 "[GPU jobs]|i915 rcs0|i915 vcs1|[CPU threads]|[process unknown]|game (thread 600)|decoder (thread 601)");
	ck_assert_int_eq(drawn(dom, "job"), query_int(dir, "select count(*) from jobs"));
	nf_test_source_path(dat, sizeof(dat), "samples/kernel/dma-fence.dat");
	import_page(dat, "dma-fence", dir, sizeof(dir), page, sizeof(page));
	run_selftest(page, dom, sizeof(dom));
	ck_assert_str_eq(need(dom, "rows.kinds", v, sizeof(v)), "queue:2,thread:3");
	ck_assert_int_eq(drawn(dom, "cpuwait"), query_int(dir, "select count(*) from cpu_waits"));
	ck_assert_int_eq(drawn(dom, "op"), query_int(dir, "select count(*) from fence_ops where queue is not null"));
	ck_assert_int_eq(atoll(need(dom, "runs", v, sizeof(v))), query_int(dir, "select count(*) from cpu_runs"));
	ck_assert_int_ge(drawn(dom, "run"), 1);
	ck_assert_int_eq(atoll(need(dom, "cpu.links", v, sizeof(v))),
			 query_int(dir, "select count(*) from cpu_waits where status = 'satisfied'"));
}
END_TEST

/* tests/html/html_etl.c: nodes 0 and 1, DMA packets 77, 78 (node 0) and 90 (node 1), two VSyncs. */
START_TEST(etw_session)
{
	char etl[1200], dir[1200], page[1300], v[2048];
	static char dom[1 << 20];

	snprintf(etl, sizeof(etl), "%s/f.etl", tmpdir);
	ck_assert_int_eq(html_etl_write(etl), 0);
	import_page(etl, "etw", dir, sizeof(dir), page, sizeof(page));
	run_selftest(page, dom, sizeof(dom));
	ck_assert_str_eq(need(dom, "rows.kinds", v, sizeof(v)), "lane:2,queue:2,thread:2");
	need(dom, "rows.display", v, sizeof(v));
	ck_assert_msg(strstr(v, "[node 0 \xC2\xB7 Node 0]|Node 0 \xC2\xB7 DMA packets|0x1 Node 0 context 0xc0a|"
			     "[node 1 \xC2\xB7 Node 1]|Node 1 \xC2\xB7 DMA packets|0x2 Node 1 context 0xc0b") != NULL,
		      "rows: %s", v);
	ck_assert_int_eq(atoll(need(dom, "items.dma", v, sizeof(v))), 3);
	ck_assert_int_eq(atoll(need(dom, "items.vsync", v, sizeof(v))), 2);
	ck_assert_int_eq(drawn(dom, "dma"), 3);
	ck_assert_int_eq(drawn(dom, "vsync"), 2);
	/* the first item, on its node's lane row */
	ck_assert_str_eq(need(dom, "item.hover", v, sizeof(v)), "dma:1");
	ck_assert_str_eq(need(dom, "item.row", v, sizeof(v)), "Node 0 \xC2\xB7 DMA packets");
	/* the wait on context B and the signal that released it, as for any session */
	ck_assert_str_eq(need(dom, "click.related", v, sizeof(v)), "signal #1");
	shot_matches(page, "", "etw-fixture-whole.png", 1400, 700);
}
END_TEST

/*
 * samples/frames-late.nfs: the display row (10 flips, 11 blanks, 10 presents), the frame-time plot
 * (9 intervals); frame 6, late, clicked in the plot: the view from its path's start to its blank,
 * its 5 path segments drawn and listed, Compute's op 16 marked as what made it late, the blame in
 * the info line; its flip hovered on the display row. A screenshot of #frame=6.
 */
START_TEST(frames_session)
{
	char dir[1200], page[1300], v[4096], out[512], src[2048];
	static char dom[1 << 20];

	nf_test_source_path(src, sizeof(src), "samples/frames-late.nfs");
	snprintf(dir, sizeof(dir), "%s/late", tmpdir);
	snprintf(page, sizeof(page), "%s/late.html", tmpdir);
	/* from the temporary directory by its base name: the page names its source as given */
	sh_ok("cp \"$1\" \"$2/frames-late.nfs\" && cd \"$2\" && \"$NF\" record -o late frames-late.nfs >/dev/null && "
	      "\"$NF\" report late -o late.html", NF_TEST_ARGV(src, tmpdir), out, sizeof(out));
	run_selftest(page, dom, sizeof(dom));
	ck_assert_str_eq(need(dom, "rows.kinds", v, sizeof(v)), "display:1,queue:2,thread:1");
	ck_assert_msg(!strncmp(need(dom, "rows.display", v, sizeof(v)), "[Displays]|display Monitor|", 27), "%s", v);
	ck_assert_str_eq(need(dom, "frames.n", v, sizeof(v)), "10");
	ck_assert_str_eq(need(dom, "frames.flips", v, sizeof(v)), "10");
	ck_assert_int_eq(drawn(dom, "flip"), 10);
	ck_assert_int_eq(drawn(dom, "present"), 10);
	ck_assert_int_eq(drawn(dom, "dblank"), 11);
	ck_assert_int_eq(drawn(dom, "plot"), 9);
	ck_assert_str_eq(need(dom, "frames.expect", v, sizeof(v)), "6");
	ck_assert_str_eq(need(dom, "frames.click", v, sizeof(v)), "6");
	/* the view: its path (from 67.67 ms, when the thread started the frame) to its blank (116.67 ms), padded */
	ck_assert_str_eq(need(dom, "frames.view", v, sizeof(v)), "64726668,119606667");
	ck_assert_int_eq(atoll(need(dom, "frames.path_drawn", v, sizeof(v))),
			 query_int(dir, "select count(*) from frame_path where frame = 6"));
	ck_assert_int_eq(atoll(need(dom, "frames.path_listed", v, sizeof(v))), 5);
	need(dom, "frames.blamed", v, sizeof(v));
	ck_assert_msg(strstr(v, "84.33 ms") == v && strstr(v, "queue 0x40000100 (Compute) executing op 16") &&
			      strstr(v, "made it late"),
		      "%s", v);
	need(dom, "frames.info", v, sizeof(v));
	ck_assert_msg(strstr(v, "frame 6 (display Monitor, process 100)") && strstr(v, "LATE by 1 blank") &&
			      strstr(v, "missed its blank by 2.354 ms: 14.020 ms queue 0x40000040 (Render) waiting on fence "
					"0x400001c0 &gt;= 6, signaled late by queue 0x40000100 (Compute), executing op 16"),
		      "%s", v);
	ck_assert_str_eq(need(dom, "frames.hover", v, sizeof(v)), "frame:6");
	shot_matches(page, "#frame=6", "frames-late-frame6.png", 1400, 800);
}
END_TEST

/*
 * Level of detail: a redraw of the whole window of a dense page (samples/stress.nfs at a tenth:
 * 102,400 operations, 100,000 detailed, about three per pixel column of each sub-lane in a 640 px
 * window) looks at no more than two items per pixel column of each sub-lane drawn (one box, or
 * one item standing for the column's sub-pixel items), not at every item in view. The summaries'
 * bars (counts per bin: the group headers' across the whole window) go out as one rectangle per
 * run of neighbouring columns of one height, not one per column: the counts are even here, so
 * the runs are long.
 */
START_TEST(dense_page_lod)
{
	char nfs[1200], src[2048], dir[1200], page[1300], out[1024], v[256];
	static char dom[1 << 20];
	long long visited, sublanes, columns, in_view, bin_columns, bin_rects;

	nf_test_source_path(src, sizeof(src), "samples/stress.nfs");
	snprintf(nfs, sizeof(nfs), "%s/dense.nfs", tmpdir);
	snprintf(dir, sizeof(dir), "%s/dense", tmpdir);
	snprintf(page, sizeof(page), "%s/dense.html", tmpdir);
	sh_ok("sed 's/^repeat 4000 as/repeat 400 as/' \"$1\" >\"$2\" && "
	      "\"$NF\" record -o \"$3\" \"$2\" >/dev/null && \"$NF\" report \"$3\" -o \"$4\"",
	      NF_TEST_ARGV(src, nfs, dir, page), out, sizeof(out));
	sh_ok("timeout 200 \"$1\" --headless --no-sandbox --disable-gpu --hide-scrollbars "
	      "--no-first-run --disable-crash-reporter --user-data-dir=\"$2/profile\" "
	      "--window-size=640,600 --virtual-time-budget=60000 --dump-dom \"file://$3#selftest\"",
	      NF_TEST_ARGV(chromium, tmpdir, page), dom, sizeof(dom));
	ck_assert_msg(strstr(dom, "selftest=done"), "the self-test did not finish");
	ck_assert_int_eq(atoll(need(dom, "ops.detailed", v, sizeof(v))), 100000);
	visited = atoll(need(dom, "perf.whole_visited", v, sizeof(v)));
	sublanes = atoll(need(dom, "perf.whole_sublanes", v, sizeof(v)));
	columns = atoll(need(dom, "perf.whole_columns", v, sizeof(v)));
	in_view = atoll(need(dom, "perf.whole_in_view", v, sizeof(v)));
	ck_assert_int_gt(sublanes, 0);
	ck_assert_msg(in_view > sublanes * (2 * columns + 4), "the page is not dense enough to tell: %lld items in view, "
		      "%lld sub-lanes of %lld columns", in_view, sublanes, columns);
	ck_assert_msg(visited <= sublanes * (2 * columns + 4), "the redraw looked at %lld items (%lld in view) for %lld sub-lanes "
		      "of %lld columns", visited, in_view, sublanes, columns);
	bin_columns = atoll(need(dom, "perf.whole_bin_columns", v, sizeof(v)));
	bin_rects = atoll(need(dom, "perf.whole_bin_rects", v, sizeof(v)));
	ck_assert_int_ge(bin_columns, columns);
	ck_assert_msg(bin_rects > 0 && bin_rects * 10 <= bin_columns, "the summaries drew %lld columns in %lld rectangles",
		      bin_columns, bin_rects);
	/* a view inside one summary bin still shows its bars (they start left of the canvas) */
	ck_assert_int_gt(atoll(need(dom, "perf.deep_bin_columns", v, sizeof(v))), 0);
}
END_TEST

static int real_trace(const char *name, char *path, size_t len)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "../shared/real-traces/%s", name);
	nf_test_source_path(path, len, rel);
	return access(path, R_OK) == 0;
}

START_TEST(real_amdgpu)
{
	char dat[2048], dir[1200], page[1300], v[2048], want[128];
	static char dom[1 << 20];

	ck_assert(real_trace("gpuvis-amdgpu.dat", dat, sizeof(dat)));
	import_page(dat, "amdgpu", dir, sizeof(dir), page, sizeof(page));
	run_selftest(page, dom, sizeof(dom));
	need(dom, "rows.kinds", v, sizeof(v));
	snprintf(want, sizeof(want), "lane:%lld,", query_int(dir, "select count(distinct driver || ring) from jobs"));
	ck_assert_msg(strstr(v, want) != NULL, "rows %s lack %s", v, want);
	ck_assert_int_eq(atoll(need(dom, "items.job", v, sizeof(v))), query_int(dir, "select count(*) from jobs"));
	ck_assert_int_eq(atoll(need(dom, "items.vblank", v, sizeof(v))), query_int(dir, "select count(*) from vblanks"));
	ck_assert_int_eq(atoll(need(dom, "items.marker", v, sizeof(v))), query_int(dir, "select count(*) from markers"));
	ck_assert_int_gt(drawn(dom, "job"), 0);
	ck_assert_int_gt(drawn(dom, "vblank"), 0);
	ck_assert_int_gt(drawn(dom, "marker"), 0);
	ck_assert_int_gt(drawn(dom, "run"), 0);
	ck_assert_str_eq(need(dom, "tick.hover", v, sizeof(v)), "marker:1");
	ck_assert_msg(strlen(need(dom, "tick.text", v, sizeof(v))) > 0, "no marker text");
}
END_TEST

START_TEST(real_windows)
{
	char etl[2048], dir[1200], page[1300], v[2048], want[128];
	static char dom[1 << 20];

	ck_assert(real_trace("gpuvis-windows.etl", etl, sizeof(etl)));
	import_page(etl, "windows", dir, sizeof(dir), page, sizeof(page));
	run_selftest(page, dom, sizeof(dom));
	ck_assert_int_eq(atoll(need(dom, "items.dma", v, sizeof(v))),
			 query_int(dir, "select count(*) from dma_packets where node is not null and (adapter, node) in "
					"(select adapter, node from queues)"));
	ck_assert_int_eq(atoll(need(dom, "items.vsync", v, sizeof(v))), query_int(dir, "select count(*) from vsyncs"));
	ck_assert_int_gt(drawn(dom, "dma"), 0);
	ck_assert_int_gt(drawn(dom, "vsync"), 0);
	snprintf(want, sizeof(want), "dma:%lld", query_int(dir, "select min(id) from dma_packets where node is not null "
								 "and (adapter, node) in (select adapter, node from queues)"));
	ck_assert_str_eq(need(dom, "item.hover", v, sizeof(v)), want);
	/* its frames: every one in the page and the plot (those with a frame time or dropped), the
	 * first late one clicked in the plot and hovered on its display row */
	ck_assert_int_eq(atoll(need(dom, "frames.n", v, sizeof(v))), query_int(dir, "select count(*) from frames"));
	ck_assert_int_eq(drawn(dom, "plot"), query_int(dir, "select count(*) from frames where interval_ns is not null"));
	ck_assert_int_eq(drawn(dom, "flip"), query_int(dir, "select count(*) from flips where display is not null and "
							     "coalesce(ready_ns, queued_ns) is not null"));
	snprintf(want, sizeof(want), "%lld", query_int(dir, "select min(frame) from frames where late and interval_ns is not null"));
	ck_assert_str_eq(need(dom, "frames.expect", v, sizeof(v)), want);
	ck_assert_str_eq(need(dom, "frames.click", v, sizeof(v)), want);
	ck_assert_int_ge(atoll(need(dom, "frames.path_drawn", v, sizeof(v))), 1);
	snprintf(want, sizeof(want), "frame:%lld", query_int(dir, "select min(frame) from frames where late and interval_ns is not null"));
	ck_assert_str_eq(need(dom, "frames.hover", v, sizeof(v)), want);
}
END_TEST

int main(int argc, char **argv)
{
	Suite *s;
	TCase *tc;
	int real = argc > 1 && !strcmp(argv[1], "real");

	chromium = getenv("NF_CHROMIUM");
	if (!chromium || !*chromium)
		chromium = "/usr/bin/chromium";
	if (access(chromium, X_OK) != 0) {
		printf("SKIPPED: %s is not installed, so the HTML report was not opened in a browser "
		       "(apt-get install chromium, or set NF_CHROMIUM)\n",
		       chromium);
		fprintf(stderr, "test_html_chromium: skipped: no %s\n", chromium);
		return SKIP_CODE;
	}
	if (real) {  /* `test_html_chromium real`: the real traces only, its own ctest */
		char path[2048];

		/* checked before anything is allocated: a skip leaves nothing for LeakSanitizer */
		if (!real_trace("gpuvis-amdgpu.dat", path, sizeof(path)) ||
		    !real_trace("gpuvis-windows.etl", path, sizeof(path))) {
			printf("SKIP: %s is absent (real traces live in ../shared/real-traces)\n", path);
			return SKIP_CODE;
		}
	}
	s = suite_create("html_chromium");
	tc = tcase_create("page");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	if (real) {
		tcase_add_test(tc, real_amdgpu);
		tcase_add_test(tc, real_windows);
		suite_add_tcase(s, tc);
		return nf_test_main(s);
	}
	tcase_add_test(tc, selftest_in_chromium);
	tcase_add_test(tc, screenshots_at_zooms);
	tcase_add_test(tc, kernel_session);
	tcase_add_test(tc, etw_session);
	tcase_add_test(tc, kernel_fixtures);
	tcase_add_test(tc, dense_page_lod);
	tcase_add_test(tc, frames_session);
	suite_add_tcase(s, tc);
	return nf_test_main(s);
}
