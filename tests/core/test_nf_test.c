/*
 * The test helpers themselves (tests/nf_test.h): temporary files go under
 * $TMPDIR, and a test's directory left empty is gone once its process exits,
 * while one with content is kept.
 */
#include "nf_test.h"

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
	char base[4096], cmd[4200];
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
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (system(cmd) != 0)
		bad = 1;
	return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}
