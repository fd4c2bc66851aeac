/*
 * The report's SVG in a real browser: records the log-buffer example, draws it
 * to SVG and to PNG with `nftrace report`, has headless Chromium screenshot
 * the SVG, and checks the screenshot: not blank, and the wait (light pink),
 * stall and signal (dark pink) boxes where the PNG has them, at the same
 * size (the SVG is sized in pixels, as --width says); and that the SVG holds
 * real text (<text> elements, searchable) and a <title> tooltip per
 * operation. Without /usr/bin/chromium (or $NF_CHROMIUM)
 * the program says so and exits 77, which ctest reports as skipped.
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

/* Where a colour is: pixel count and bounding box. */
struct found {
	long n;
	int x0, y0, x1, y1;
};

static struct found find_colour(const struct nf_image *im, uint32_t rgb)
{
	struct found f = { 0, im->w, im->h, -1, -1 };

	for (int y = 0; y < im->h; y++)
		for (int x = 0; x < im->w; x++) {
			if (!nf_image_near(nf_image_pixel(im, x, y), rgb, 6))
				continue;
			f.n++;
			if (x < f.x0)
				f.x0 = x;
			if (y < f.y0)
				f.y0 = y;
			if (x > f.x1)
				f.x1 = x;
			if (y > f.y1)
				f.y1 = y;
		}
	return f;
}

/* A shell script with its paths as "$1"... and nftrace as "$NF" (nf_test_sh); exit 0 or the test fails. */
static void sh_ok(const char *script, const char *const args[])
{
	char out[2048], err[4096];
	int rc = nf_test_sh(script, args, out, sizeof(out), err, sizeof(err));

	ck_assert_msg(rc == 0, "`%.300s` exited %d: %.1500s", script, rc, err);
}

/* The viewer's data colours (viewer/paint.c): the same in both themes. */
#define C_WAIT 0xF4B6C2
#define C_STALL 0xE3748F
#define C_SIGNAL 0xC2185B

START_TEST(svg_in_chromium)
{
	char sample[4096];
	char png[2048], svg[2048], shot[2048];
	static const uint32_t colours[] = { C_WAIT, C_STALL, C_SIGNAL };
	static const char *const names[] = { "wait", "stall", "signal" };
	struct nf_image a, b;
	long ink = 0;

	nf_test_source_path(sample, sizeof(sample), "samples/log-buffer-example.nfs");
	snprintf(png, sizeof(png), "%s/r.png", tmpdir);
	snprintf(svg, sizeof(svg), "%s/r.svg", tmpdir);
	snprintf(shot, sizeof(shot), "%s/shot.png", tmpdir);
	sh_ok("\"$NF\" record -o \"$1/s\" \"$2\" && \"$NF\" report \"$1/s\" -o \"$3\" && "
	      "\"$NF\" report \"$1/s\" -o \"$4\"", NF_TEST_ARGV(tmpdir, sample, png, svg));
	/* The page is sized in pixels: no pt-to-px scaling in the browser. */
	{
		FILE *f = fopen(svg, "r");
		static char buf[1 << 20];
		size_t n;

		ck_assert(f != NULL);
		n = fread(buf, 1, sizeof(buf) - 1, f);
		buf[n] = 0;
		fclose(f);
		ck_assert_msg(strstr(buf, "width=\"1600px\"") != NULL, "SVG not sized in px");
		ck_assert_msg(strstr(buf, "<text ") && strstr(buf, ">HWQueueA<"),
			      "SVG without real text (queue names as <text>)");
		ck_assert_msg(strstr(buf, "<title>wait #") && strstr(buf, "<title>signal #"),
			      "SVG without operation tooltips");
	}
	sh_ok("timeout 120 \"$1\" --headless --no-sandbox --disable-gpu --hide-scrollbars "
	      "--no-first-run --disable-crash-reporter --user-data-dir=\"$2/profile\" "
	      "--window-size=2200,450 --screenshot=\"$3\" \"file://$4\"",
	      NF_TEST_ARGV(chromium, tmpdir, shot, svg));

	nf_image_load(&a, png);
	nf_image_load(&b, shot);
	ck_assert_int_eq(b.w, 2200);
	ck_assert_int_eq(b.h, 450);
	/* Not blank: a good part of the page is drawn (text, rows, boxes, axis). */
	for (int y = 0; y < b.h; y++)
		for (int x = 0; x < b.w; x++)
			ink += !nf_image_near(nf_image_pixel(&b, x, y), 0xFFFFFF, 8);
	ck_assert_msg(ink > (long)b.w * b.h / 50, "screenshot nearly blank: %ld drawn pixels", ink);
	for (size_t i = 0; i < 3; i++) {
		struct found p = find_colour(&a, colours[i]), c = find_colour(&b, colours[i]);
		double k = 1.0;

		ck_assert_msg(p.n > 100, "%s colour missing from the PNG (%ld px)", names[i], p.n);
		/* The same area; anti-aliased edges move it a little. */
		ck_assert_msg(c.n > (long)((double)p.n * 0.8) && c.n < (long)((double)p.n * 1.25),
			      "%s: %ld px in Chromium, %ld px in the PNG", names[i], c.n, p.n);
		/* The boxes (the legend swatch included) are where the PNG has them. */
		ck_assert_msg(abs(c.x0 - (int)(p.x0 * k)) <= 3 && abs(c.x1 - (int)(p.x1 * k)) <= 3 &&
				      abs(c.y0 - (int)(p.y0 * k)) <= 3 &&
				      abs(c.y1 - (int)(p.y1 * k)) <= 3,
			      "%s at (%d,%d)-(%d,%d) in Chromium, PNG (%d,%d)-(%d,%d)",
			      names[i], c.x0, c.y0, c.x1, c.y1, p.x0, p.y0, p.x1, p.y1);
	}
	cairo_surface_destroy(a.sf);
	cairo_surface_destroy(b.sf);
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
		printf("SKIPPED: %s is not installed, so the SVG was not checked in a browser "
		       "(apt-get install chromium, or set NF_CHROMIUM)\n",
		       chromium);
		fprintf(stderr, "test_chromium: skipped: no %s\n", chromium);
		return SKIP_CODE;
	}
	s = suite_create("chromium");
	tc = tcase_create("svg");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, svg_in_chromium);
	suite_add_tcase(s, tc);
	return nf_test_main(s);
}
