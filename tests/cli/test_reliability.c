/*
 * Reliability holes found by trying to break nftrace (issue 18), one test (or
 * more) per item; docs/RELIABILITY.md lists them with what is guaranteed now.
 * Each test failed before its fix.
 */
#include "nf_test.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

static char tmp[512], good[600], cmd[16384], out[1 << 16], err[1 << 14];

static int run(const char *c)
{
	return nf_test_run(c, out, sizeof(out), err, sizeof(err));
}

static void run_ok(const char *c)
{
	int st = run(c);
	ck_assert_msg(st == 0, "%s failed (%d): %.1500s", c, st, err);
}

static void record(const char *dir, const char *sample, const char *extra)
{
	char src[1024];

	nf_test_source_path(src, sizeof(src), sample);
	snprintf(cmd, sizeof(cmd), "'%s' record %s -o '%s' '%s' >/dev/null", nf_test_nftrace(), extra,
		 dir, src);
	run_ok(cmd);
}

static void setup(void)
{
	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(good, sizeof(good), "%s/s", tmp);
	record(good, "samples/log-buffer-example.nfs", "--ground-truth");
}

static void teardown(void)
{
	nf_test_rmtree(tmp);
}

static bool exists(const char *dir, const char *name)
{
	char p[1200];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return lstat(p, &st) == 0;
}

/* One line naming the directory, exit 1 or 2, nothing on stdout. */
static void refused_one_line(int st, const char *what, const char *name)
{
	ck_assert_msg(st == 1 || st == 2, "%s: exit %d: %s", what, st, err);
	ck_assert_msg(nf_test_count_lines(err) == 1, "%s: not one line: %s", what, err);
	ck_assert_msg(strstr(err, name) != NULL, "%s: does not name %s: %s", what, name, err);
}

/* ------------------------------------------------------------------ */
/* 1. record --force replaces only nftrace's own session                */

static int record_force(const char *dir)
{
	char src[1024];

	nf_test_source_path(src, sizeof(src), "samples/log-buffer-example.nfs");
	snprintf(cmd, sizeof(cmd), "'%s' record --force -o '%s' '%s'", nf_test_nftrace(), dir, src);
	return run(cmd);
}

START_TEST(force_keeps_a_folder_with_notes_and_metadata)
{
	char d[700];

	snprintf(d, sizeof(d), "%s/notes", tmp);
	snprintf(cmd, sizeof(cmd), "mkdir '%s' && echo mine > '%s/notes.txt' && echo meta > '%s/metadata'",
		 d, d, d);
	run_ok(cmd);
	refused_one_line(record_force(d), "notes + metadata", d);
	ck_assert(exists(d, "notes.txt") && exists(d, "metadata"));
}
END_TEST

START_TEST(force_keeps_an_lttng_trace)
{
	char d[700];

	/* An LTTng-like CTF trace: metadata of another tool, per-CPU streams. */
	snprintf(d, sizeof(d), "%s/lttng", tmp);
	snprintf(cmd, sizeof(cmd),
		 "mkdir '%s' && printf '/* CTF 1.8 */\\ntrace { major = 1; minor = 8; };\\n"
		 "env { domain = \"kernel\"; tracer_name = \"lttng-modules\"; };\\n' > '%s/metadata' && "
		 "head -c 4096 /dev/urandom > '%s/channel0_0' && head -c 4096 /dev/urandom > '%s/channel0_1'",
		 d, d, d, d);
	run_ok(cmd);
	refused_one_line(record_force(d), "lttng", d);
	ck_assert(exists(d, "metadata") && exists(d, "channel0_0") && exists(d, "channel0_1"));
}
END_TEST

START_TEST(force_with_a_subfolder_removes_nothing)
{
	char sub[700];

	/* Our own session, plus a subfolder: refused before any file goes. */
	snprintf(sub, sizeof(sub), "%s/sub", good);
	ck_assert_int_eq(mkdir(sub, 0755), 0);
	refused_one_line(record_force(good), "subfolder", "sub");
	ck_assert(exists(good, "metadata") && exists(good, "events") && exists(good, "truth"));
}
END_TEST

START_TEST(force_with_a_foreign_file_in_our_session_removes_nothing)
{
	snprintf(cmd, sizeof(cmd), "echo mine > '%s/notes.txt'", good);
	run_ok(cmd);
	refused_one_line(record_force(good), "foreign file", "notes.txt");
	ck_assert(exists(good, "notes.txt") && exists(good, "metadata") && exists(good, "events"));
}
END_TEST

START_TEST(force_replaces_our_own_session_and_its_timeline)
{
	snprintf(cmd, sizeof(cmd), "'%s' query '%s' 'select 1' >/dev/null", nf_test_nftrace(), good);
	run_ok(cmd);
	ck_assert(exists(good, ".timeline.db") && exists(good, "truth"));
	ck_assert_int_eq(record_force(good), 0);
	/* Replaced: recorded without --ground-truth, so no truth any more. */
	ck_assert(exists(good, "metadata") && exists(good, "events") && !exists(good, "truth"));
	ck_assert(!exists(good, ".timeline.db"));
}
END_TEST

START_TEST(force_refuses_metadata_that_is_a_link_to_ours)
{
	char d[700];

	snprintf(d, sizeof(d), "%s/linked", tmp);
	snprintf(cmd, sizeof(cmd), "mkdir '%s' && ln -s '%s/metadata' '%s/metadata'", d, good, d);
	run_ok(cmd);
	refused_one_line(record_force(d), "metadata link", d);
	ck_assert(exists(d, "metadata") && exists(good, "metadata"));
}
END_TEST

static Suite *reliability_suite(void)
{
	Suite *s = suite_create("reliability");
	TCase *tc = tcase_create("force");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	suite_add_tcase(s, tc);
	tcase_add_test(tc, force_keeps_a_folder_with_notes_and_metadata);
	tcase_add_test(tc, force_keeps_an_lttng_trace);
	tcase_add_test(tc, force_with_a_subfolder_removes_nothing);
	tcase_add_test(tc, force_with_a_foreign_file_in_our_session_removes_nothing);
	tcase_add_test(tc, force_replaces_our_own_session_and_its_timeline);
	tcase_add_test(tc, force_refuses_metadata_that_is_a_link_to_ours);
	return s;
}

int main(void)
{
	return nf_test_main(reliability_suite());
}
