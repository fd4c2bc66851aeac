/*
 * The test helpers themselves (tests/nf_test.h): temporary files go under
 * $TMPDIR, and a test's directory left empty is gone once its process exits,
 * while one with content is kept; a command run with an argument list gets
 * each argument as it is (spaces, quotes, no shell), its output, its exit
 * status or its signal.
 */
#include "nf_test.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>

/* Paths written by the forked tests, read by main after the run. */
static struct shared {
	char empty[4096], full[4096];
} *sh;

/* nf_test_run's capture files are under $TMPDIR (they were in /tmp). */
START_TEST(run_captures_under_tmpdir)
{
	char out[4096], cmd[4200];

	snprintf(cmd, sizeof(cmd), "ls '%s'", nf_test_tmpbase());
	ck_assert_int_eq(nf_test_run(cmd, out, sizeof(out), NULL, 0), 0);
	ck_assert_msg(strstr(out, "nftrace-out-") && strstr(out, "nftrace-err-"),
		      "no capture file in %s: %s", nf_test_tmpbase(), out);
}
END_TEST

/* Each argument arrives as it is: no shell splits or expands it. */
START_TEST(exec_passes_arguments_untouched)
{
	char out[4096], err[256];
	const char *odd = "it's a \"dir\" with  spaces $HOME `x` *";

	int st = nf_test_exec(NULL, NF_TEST_ARGV("printf", "[%s]\\n", odd, "", "a;b"), out,
			      sizeof(out), err, sizeof(err));
	ck_assert_int_eq(st, 0);
	ck_assert_str_eq(out, "[it's a \"dir\" with  spaces $HOME `x` *]\n[]\n[a;b]\n");
	ck_assert_str_eq(err, "");
}
END_TEST

/* Exit status, stderr, a signal, a program that is not there, the environment. */
START_TEST(exec_reports_status_signal_and_env)
{
	char out[256], err[256];

	ck_assert_int_eq(nf_test_exec(NULL, NF_TEST_ARGV("sh", "-c", "echo oops >&2; exit 3"), out,
				      sizeof(out), err, sizeof(err)), 3);
	ck_assert_str_eq(out, "");
	ck_assert_str_eq(err, "oops\n");
	ck_assert_int_eq(nf_test_exec(NULL, NF_TEST_ARGV("sh", "-c", "kill -TERM $$"), NULL, 0,
				      NULL, 0), 128 + SIGTERM);
	ck_assert_int_eq(nf_test_exec(NULL, NF_TEST_ARGV("/nonexistent/nf-no-such-program"), NULL,
				      0, err, sizeof(err)), 127);
	ck_assert_ptr_nonnull(strstr(err, "nf-no-such-program"));
	setenv("NF_TEST_GONE", "x", 1);
	ck_assert_int_eq(nf_test_exec(NF_TEST_ARGV("NF_TEST_SET=a b", "NF_TEST_GONE"),
				      NF_TEST_ARGV("sh", "-c", "printf '%s|%s' \"$NF_TEST_SET\" \"${NF_TEST_GONE-unset}\""),
				      out, sizeof(out), NULL, 0), 0);
	ck_assert_str_eq(out, "a b|unset");
	/* stdin is /dev/null: a reader gets end of file at once. */
	ck_assert_int_eq(nf_test_exec(NULL, NF_TEST_ARGV("cat"), out, sizeof(out), NULL, 0), 0);
	ck_assert_str_eq(out, "");
}
END_TEST

/* A script gets its paths as "$1"... and nftrace as "$NF", untouched by quoting. */
START_TEST(sh_takes_paths_as_parameters)
{
	char out[4096];

	ck_assert_int_eq(nf_test_sh("printf '[%s]' \"$1\" \"$2\"; test -n \"$NF\" && echo nf",
				    NF_TEST_ARGV("a 'b' \"c\"", "$(x)"), out, sizeof(out), NULL, 0),
			 0);
	ck_assert_str_eq(out, "[a 'b' \"c\"][$(x)]nf\n");
}
END_TEST

/* A test that makes its directory and writes nothing: it is removed at exit. */
START_TEST(empty_dir_removed_at_exit)
{
	char tmp[4096];

	nf_test_tmpdir(tmp, sizeof(tmp));
	ck_assert_msg(strncmp(tmp, nf_test_tmpbase(), strlen(nf_test_tmpbase())) == 0,
		      "%s not under %s", tmp, nf_test_tmpbase());
	snprintf(sh->empty, sizeof(sh->empty), "%s", tmp);
}
END_TEST

/* One with a file in it stays for a look. */
START_TEST(full_dir_kept)
{
	char tmp[4096], f[4200];
	FILE *fp;

	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(sh->full, sizeof(sh->full), "%s", tmp);
	snprintf(f, sizeof(f), "%s/x", tmp);
	fp = fopen(f, "w");
	ck_assert_ptr_nonnull(fp);
	fclose(fp);
}
END_TEST

int main(void)
{
	char base[4096];
	struct stat st;
	int bad = 0;

	/* A TMPDIR of our own, so what is left in it is ours to see. */
	snprintf(base, sizeof(base), "%s/nftrace-helpers-XXXXXX", nf_test_tmpbase());
	if (!mkdtemp(base) || setenv("TMPDIR", base, 1) != 0)
		return EXIT_FAILURE;
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return EXIT_FAILURE;

	Suite *s = suite_create("nf_test");
	TCase *tc = tcase_create("helpers");

	tcase_add_test(tc, run_captures_under_tmpdir);
	tcase_add_test(tc, exec_passes_arguments_untouched);
	tcase_add_test(tc, exec_reports_status_signal_and_env);
	tcase_add_test(tc, sh_takes_paths_as_parameters);
	tcase_add_test(tc, empty_dir_removed_at_exit);
	tcase_add_test(tc, full_dir_kept);
	suite_add_tcase(s, tc);
	if (nf_test_main(s) != EXIT_SUCCESS)
		bad = 1;
	if (!sh->empty[0] || stat(sh->empty, &st) == 0) {
		fprintf(stderr, "empty test directory '%s' left behind\n", sh->empty);
		bad = 1;
	}
	if (!sh->full[0] || stat(sh->full, &st) != 0) {
		fprintf(stderr, "test directory with content '%s' was removed\n", sh->full);
		bad = 1;
	}
	if (nf_test_exec(NULL, NF_TEST_ARGV("rm", "-rf", "--", base), NULL, 0, NULL, 0) != 0)
		bad = 1;
	return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}
