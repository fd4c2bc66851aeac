/*
 * Rendered references of the bundled samples: each case records a sample
 * (deterministic mode, from the source tree so that the title's source path
 * is the same everywhere), draws it with `nftrace report`, and compares the
 * PNG with tests/viewer/ref/<name>.png pixel by pixel with a tolerance (text
 * may antialias a little differently with another FreeType). A regression in
 * what is drawn fails. NF_UPDATE_REF=1 rewrites the references; look at them
 * before committing.
 */
#include "nf_test.h"
#include "nf_image.h"

#include <cairo.h>
#include <stdint.h>

static char tmpdir[1024];

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

static const struct {
	const char *name;    /* reference: tests/viewer/ref/<name>.png */
	const char *sample;  /* samples/<sample>.nfs */
	const char *args;    /* report options, words split by the shell */
} cases[] = {
	/* Waits with their stall, a signal, the arrow between queues. */
	{ "log-buffer-example", "log-buffer-example", "--width 800" },
	/* Lost spans hatched with counts (one from the log's start), lost ops open. */
	{ "overrun", "overrun", "--width 800" },
	/* Zoomed: repeated timestamps leave ends unknown; each op open until the next. */
	{ "repeated-timestamps-zoom", "repeated-timestamps", "--width 800 --from 2ms --to 2.2ms" },
	/* Two adapters, a legacy signal without a queued time, CPU waits and signals. */
	{ "cross-adapter-2b-dark", "cross-adapter-scenario-2b", "--width 800 --theme dark" },
	/* A shared fence between processes, a CPU wait satisfied at once. */
	{ "process-a-b-sharing", "process-a-b-sharing", "--width 800" },
	/* The display row: flips ready -> latched, the late one red and named, two at once halved. */
	{ "frames-late", "frames-late", "--width 800 --from 60ms --to 140ms" },
};

START_TEST(sample_reference)
{
	const char *name = cases[_i].name;
	char out[2048], err[4096], src[4096], png[2048], ref[4200];
	struct nf_image a, b;
	long bad = 0, first_x = -1, first_y = -1;
	int rc;

	nf_test_source_path(src, 4000, "");
	snprintf(png, sizeof(png), "%s/%s.png", tmpdir, name);
	snprintf(ref, sizeof(ref), "%s/tests/viewer/ref/%s.png", src, name);
	/* Recorded from the source tree: the session names samples/NAME.nfs as its source. */
	rc = nf_test_sh("cd \"$1\" && \"$NF\" record -o \"$2/$3\" \"samples/$3.nfs\" && "
			"\"$NF\" report \"$2/$3\" -o \"$4\" $5",
			NF_TEST_ARGV(src, tmpdir, cases[_i].sample, png, cases[_i].args), out,
			sizeof(out), err, sizeof(err));
	ck_assert_msg(rc == 0, "[%s] exit %d: %.1500s", name, rc, err);
	if (getenv("NF_UPDATE_REF")) {
		ck_assert_int_eq(nf_test_exec(NULL, NF_TEST_ARGV("cp", png, ref), NULL, 0, NULL, 0), 0);
	}
	nf_image_load(&a, png);
	nf_image_load(&b, ref);
	ck_assert_msg(a.w == b.w && a.h == b.h, "[%s] %dx%d, reference %dx%d", name, a.w, a.h,
		      b.w, b.h);
	for (int y = 0; y < a.h; y++)
		for (int x = 0; x < a.w; x++)
			if (!nf_image_near(nf_image_pixel(&a, x, y), nf_image_pixel(&b, x, y), 24) && bad++ == 0) {
				first_x = x;
				first_y = y;
			}
	/* A moved box or a missing marker changes hundreds of pixels; AA noise a few. */
	ck_assert_msg(bad <= (long)a.w * a.h / 500,
		      "[%s] %ld pixels differ from %s (first at %ld,%ld); keep the render with "
		      "NF_KEEP_TMP=1 and look, or NF_UPDATE_REF=1 after checking",
		      name, bad, ref, first_x, first_y);
	cairo_surface_destroy(a.sf);
	cairo_surface_destroy(b.sf);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("viewer-samples");
	TCase *tc = tcase_create("references");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, sample_reference, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	suite_add_tcase(s, tc);
	return nf_test_main(s);
}
