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
 * Without /usr/bin/chromium (or $NF_CHROMIUM) it says so and exits 77 (skipped).
 */
#include "nf_test.h"
#include "nf_image.h"

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

int main(void)
{
	Suite *s;
	TCase *tc;

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
	s = suite_create("html_chromium");
	tc = tcase_create("page");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, selftest_in_chromium);
	tcase_add_test(tc, screenshots_at_zooms);
	suite_add_tcase(s, tc);
	return nf_test_main(s);
}
