/*
 * The first picture (`report --first-picture`, nf_render_early): drawn from
 * the build before it loads the operations, it must be the picture of the
 * finished timeline but for what only the dependency merge knows (the links,
 * the late signals) and the subtitle that says so. Each case records a
 * sample and draws the first picture while the timeline is built; then the
 * finished timeline, copied into a second session with its deps rows and the
 * merge's causality anomalies deleted, is drawn the usual way: every pixel
 * outside the subtitle's line must be the same. The timeline built behind the
 * first picture must hold exactly what a build without it holds.
 */
#include "nf_test.h"
#include "nf_image.h"

#include <cairo.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
	const char *sample;  /* samples/<sample>.nfs */
	const char *args;    /* more report options, split by the shell */
} cases[] = {
	{ "log-buffer-example", "--width 800" },                 /* stalls, labels in boxes, an arrow */
	{ "overrun", "--width 800" },                            /* lost spans, lost ops open */
	{ "repeated-timestamps", "--from 2ms --to 2.2ms" },      /* a window; ends unknown */
	{ "cross-adapter-scenario-2b", "--theme dark" },         /* two adapters, CPU waits and signals */
	{ "process-a-b-sharing", "" },                           /* threads of two processes */
	{ "stall-chain", "--width 1200" },                       /* chained stalls */
	{ "lda-zero-timestamps", "" },                           /* zero timestamps */
	{ "clock-drift", "" },                                   /* the clock fit at work */
	{ "deadlock-three-queues", "" },                         /* waits never released */
	{ "wraparound-32bit", "" },
	{ "log-recreated", "" },                                 /* a log's epochs */
	{ "legacy-monitored-fence", "" },                        /* legacy fences, no queued time */
	{ "monitored-value-41", "" },
	{ "optimized-interrupt", "" },
	{ "cross-adapter-scenario-1", "" },
	{ "cross-adapter-scenario-2a", "" },
	{ "hang-never-signaled", "" },
	{ "critical-path-chain", "" },
	{ "deadlock-two-queues", "" },
};

/* The subtitle's line (paint.c: text at y 52 on a 13 px font). */
#define SUB_Y0 38
#define SUB_Y1 60

/* Every row of every table of db, in rowid order, but meta's rows of one build (its id, frames). */
static void dump_db(const char *path, char *out, size_t len)
{
	sqlite3 *db;
	sqlite3_stmt *tabs, *rows;
	size_t n = 0;

	ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table' "
					    "AND name NOT LIKE 'sqlite_%' ORDER BY name", -1, &tabs, NULL), SQLITE_OK);
	out[0] = '\0';
	while (sqlite3_step(tabs) == SQLITE_ROW) {
		char sql[256];
		const char *t = (const char *)sqlite3_column_text(tabs, 0);

		snprintf(sql, sizeof(sql), "SELECT * FROM \"%s\"%s", t,
			 strcmp(t, "meta") == 0 ? " WHERE key NOT IN ('build_id', 'frames_version', "
						  "'frames_marker') ORDER BY key" : "");
		ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &rows, NULL) == SQLITE_OK, "%s", sqlite3_errmsg(db));
		n += (size_t)snprintf(out + n, n < len ? len - n : 0, "== %s\n", t);
		while (sqlite3_step(rows) == SQLITE_ROW) {
			for (int c = 0; c < sqlite3_column_count(rows); c++) {
				const unsigned char *v = sqlite3_column_text(rows, c);

				n += (size_t)snprintf(out + n, n < len ? len - n : 0, "%s|", v ? (const char *)v : "NULL");
			}
			n += (size_t)snprintf(out + n, n < len ? len - n : 0, "\n");
		}
		sqlite3_finalize(rows);
	}
	sqlite3_finalize(tabs);
	sqlite3_close(db);
	ck_assert_msg(n < len, "%s: the dump does not fit the test's buffer", path);
}

static void exec_db(const char *path, const char *sql)
{
	sqlite3 *db;
	char *msg = NULL;

	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK, "%s: %s", path, msg ? msg : "?");
	sqlite3_close(db);
}

#define DUMP_LEN (32u << 20)

START_TEST(first_picture_is_the_timelines)
{
	const char *sample = cases[_i].sample;
	char rel[256], s1[1200], s2[1200], s3[1200], a[1200], b[1200], db1[1300], db2[1300], db3[1300];
	char out[4096], err[8192];
	char *d1 = malloc(DUMP_LEN), *d3 = malloc(DUMP_LEN);
	struct nf_image ia, ib;
	long outside = 0, inside = 0;
	int rc, fx = -1, fy = -1;

	ck_assert_ptr_nonnull(d1);
	ck_assert_ptr_nonnull(d3);
	snprintf(rel, sizeof(rel), "samples/%s.nfs", sample);
	snprintf(s1, sizeof(s1), "%s/s1", tmpdir);
	snprintf(s2, sizeof(s2), "%s/s2", tmpdir);
	snprintf(s3, sizeof(s3), "%s/s3", tmpdir);
	snprintf(a, sizeof(a), "%s/first.png", tmpdir);
	snprintf(b, sizeof(b), "%s/timeline.png", tmpdir);
	snprintf(db1, sizeof(db1), "%s/.timeline.db", s1);
	snprintf(db2, sizeof(db2), "%s/.timeline.db", s2);
	snprintf(db3, sizeof(db3), "%s/.timeline.db", s3);
	nf_test_record(rel, s1, NULL);
	ck_assert_int_eq(nf_test_sh("cp -r \"$1\" \"$2\" && cp -r \"$1\" \"$3\"", NF_TEST_ARGV(s1, s2, s3),
				    NULL, 0, NULL, 0), 0);

	/* The first picture, while the timeline is built. */
	rc = nf_test_sh("\"$NF\" report \"$1\" -o \"$2\" --first-picture always --title T $3",
			NF_TEST_ARGV(s1, a, cases[_i].args), out, sizeof(out), err, sizeof(err));
	ck_assert_msg(rc == 0, "[%s] exit %d: %.2000s", sample, rc, err);
	ck_assert_msg(strstr(err, "before the timeline was complete"), "[%s] not drawn early: %.2000s", sample, err);

	/* The timeline built behind it is the one a build without it makes. */
	rc = nf_test_sh("\"$NF\" query \"$1\" 'SELECT 1' >/dev/null", NF_TEST_ARGV(s3), out, sizeof(out), err,
			sizeof(err));
	ck_assert_msg(rc == 0, "[%s] query exit %d: %.2000s", sample, rc, err);
	dump_db(db1, d1, DUMP_LEN);
	dump_db(db3, d3, DUMP_LEN);
	if (strcmp(d1, d3) != 0) {
		size_t k = 0;

		while (d1[k] && d1[k] == d3[k])
			k++;
		ck_abort_msg("[%s] the timelines differ at byte %zu: ...%.200s... against ...%.200s...", sample, k,
			     d1 + (k > 100 ? k - 100 : 0), d3 + (k > 100 ? k - 100 : 0));
	}

	/* The finished timeline without what the first picture cannot know, drawn as usual. */
	ck_assert_int_eq(nf_test_sh("cp \"$1\" \"$2\"", NF_TEST_ARGV(db1, db2), NULL, 0, NULL, 0), 0);
	/* deps: the merge's links (signal -> wait, CPU signal -> wait, a thread's fence wait); the
	 * links to CPU waits join cpu_waits' satisfied rows with fence_ops (renamed away: the
	 * picture draws a CPU wait from its thread and times only); the merge's anomalies */
	exec_db(db2, "DELETE FROM deps; UPDATE cpu_waits SET status = 'renamed ' || status; "
		     "DELETE FROM anomalies WHERE kind = 'causality' AND detail LIKE '%no releaser named%'");
	rc = nf_test_sh("\"$NF\" report \"$1\" -o \"$2\" --first-picture always --title T $3",
			NF_TEST_ARGV(s2, b, cases[_i].args), out, sizeof(out), err, sizeof(err));
	ck_assert_msg(rc == 0, "[%s] exit %d: %.2000s", sample, rc, err);
	ck_assert_msg(!strstr(err, "before the timeline") && strstr(err, "no first picture: the timeline was built already"),
		      "[%s] drawn early with a timeline, or not said why not: %.2000s", sample, err);

	nf_image_load(&ia, a);
	nf_image_load(&ib, b);
	ck_assert_msg(ia.w == ib.w && ia.h == ib.h, "[%s] %dx%d, from the timeline %dx%d", sample, ia.w, ia.h,
		      ib.w, ib.h);
	for (int y = 0; y < ia.h; y++)
		for (int x = 0; x < ia.w; x++) {
			if (nf_image_pixel(&ia, x, y) == nf_image_pixel(&ib, x, y))
				continue;
			if (y >= SUB_Y0 && y < SUB_Y1) {
				inside++;
			} else if (outside++ == 0) {
				fx = x;
				fy = y;
			}
		}
	ck_assert_msg(outside == 0, "[%s] %ld pixels differ outside the subtitle, the first at (%d, %d)", sample,
		      outside, fx, fy);
	ck_assert_msg(inside > 0, "[%s] the subtitle does not say the links are not known yet", sample);
	cairo_surface_destroy(ia.sf);
	cairo_surface_destroy(ib.sf);
	free(d1);
	free(d3);
}
END_TEST

/* auto: a small session's timeline is built first (it takes a moment), its picture has the links. */
START_TEST(auto_builds_small_sessions_first)
{
	char s[1200], png[1200], out[4096], err[8192];
	int rc;

	snprintf(s, sizeof(s), "%s/s", tmpdir);
	snprintf(png, sizeof(png), "%s/a.png", tmpdir);
	nf_test_record("samples/log-buffer-example.nfs", s, NULL);
	rc = nf_test_sh("\"$NF\" report \"$1\" -o \"$2\"", NF_TEST_ARGV(s, png), out, sizeof(out), err,
			sizeof(err));
	ck_assert_msg(rc == 0, "exit %d: %.2000s", rc, err);
	ck_assert_msg(!strstr(err, "before the timeline"), "a small session drawn early: %.2000s", err);
}
END_TEST

/* A PDF first picture: written whole, and the timeline built behind it. */
START_TEST(first_picture_pdf)
{
	char s[1200], pdf[1200], out[4096], err[8192];
	int rc;

	snprintf(s, sizeof(s), "%s/s", tmpdir);
	snprintf(pdf, sizeof(pdf), "%s/a.pdf", tmpdir);
	nf_test_record("samples/overrun.nfs", s, NULL);
	rc = nf_test_sh("\"$NF\" report \"$1\" -o \"$2\" --first-picture always && head -c 5 \"$2\" && "
			"\"$NF\" query \"$1\" 'SELECT count(*) > 0 FROM fence_ops' --csv",
			NF_TEST_ARGV(s, pdf), out, sizeof(out), err, sizeof(err));
	ck_assert_msg(rc == 0, "exit %d: %.2000s", rc, err);
	ck_assert_msg(strstr(err, "before the timeline was complete"), "not drawn early: %.2000s", err);
	ck_assert_msg(strncmp(out, "%PDF-", 5) == 0, "not a PDF: %.100s", out);
	ck_assert_msg(strstr(out, "\n1"), "no operations in the timeline built behind it: %.200s", out);
}
END_TEST

/* A session with presents (their ready times come from the load): drawn from the timeline, and said so. */
START_TEST(first_picture_not_with_presents)
{
	char s[1200], png[1200], out[4096], err[8192];
	int rc;

	snprintf(s, sizeof(s), "%s/s", tmpdir);
	snprintf(png, sizeof(png), "%s/a.png", tmpdir);
	nf_test_record("samples/frames-late.nfs", s, NULL);
	rc = nf_test_sh("\"$NF\" report \"$1\" -o \"$2\" --first-picture always", NF_TEST_ARGV(s, png), out,
			sizeof(out), err, sizeof(err));
	ck_assert_msg(rc == 0, "exit %d: %.2000s", rc, err);
	ck_assert_msg(!strstr(err, "before the timeline") && strstr(err, "no first picture: it has presents"), "%.2000s", err);
	ck_assert_int_eq(nf_test_sh("test -s \"$1\"", NF_TEST_ARGV(png), NULL, 0, NULL, 0), 0);
}
END_TEST

/* What the first picture cannot be: refused before anything is read. */
START_TEST(first_picture_refused)
{
	static const char *const bad[] = { "-o x.svg", "-o x.png --queue 1", "-o x.png --fence 1",
					   "-o x.png --critical-path 1" };
	char s[1200], out[4096], err[8192];

	snprintf(s, sizeof(s), "%s/s", tmpdir);
	nf_test_record("samples/log-buffer-example.nfs", s, NULL);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = nf_test_sh("cd \"$1\" && \"$NF\" report s $2 --first-picture always",
				    NF_TEST_ARGV(tmpdir, bad[i]), out, sizeof(out), err, sizeof(err));

		ck_assert_msg(rc == 2, "[%s] exit %d: %.2000s", bad[i], rc, err);
		ck_assert_msg(strstr(err, "--first-picture always"), "[%s] %.2000s", bad[i], err);
	}
	ck_assert_int_ne(nf_test_sh("test -e \"$1/.timeline.db\"", NF_TEST_ARGV(s), NULL, 0, NULL, 0), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("first_picture");
	TCase *tc = tcase_create("first_picture");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 600);
	/* NF_FIRST_PICTURE_CASES=N: the first N samples only (the ThreadSanitizer run: its
	 * threads are the same on every sample, and a sample there takes seconds). */
	int n_cases = (int)(sizeof(cases) / sizeof(cases[0]));
	const char *only = getenv("NF_FIRST_PICTURE_CASES");

	if (only && atoi(only) > 0 && atoi(only) < n_cases)
		n_cases = atoi(only);
	tcase_add_loop_test(tc, first_picture_is_the_timelines, 0, n_cases);
	tcase_add_test(tc, auto_builds_small_sessions_first);
	tcase_add_test(tc, first_picture_pdf);
	tcase_add_test(tc, first_picture_not_with_presents);
	tcase_add_test(tc, first_picture_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return nf_test_main(suite());
}
