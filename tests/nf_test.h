/*
 * Helpers shared by the check(3) test programs: temporary directories, paths
 * into the source and build trees, and running the nftrace CLI.
 */
#ifndef NF_TEST_H
#define NF_TEST_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* The directory temporary files go in: $TMPDIR, or /tmp when unset or empty. */
static inline const char *nf_test_tmpbase(void)
{
	const char *base = getenv("TMPDIR");

	return base && *base ? base : "/tmp";
}

/*
 * The directories nf_test_tmpdir made in this process (check forks one per
 * test), removed at exit when still empty: a test that stops before writing
 * anything (a failed assertion, a skip) left an empty nftrace-test-* behind;
 * one with content is kept for a look, and the teardown removes the rest.
 */
#define NF_TEST_MAX_TMPDIRS 32
static struct {
	pid_t pid;
	char path[4096];
} nf_test_tmpdirs[NF_TEST_MAX_TMPDIRS];
static int nf_test_n_tmpdirs;

static inline void nf_test_rmdir_empty(void)
{
	for (int i = 0; i < nf_test_n_tmpdirs; i++)
		if (nf_test_tmpdirs[i].pid == getpid())
			rmdir(nf_test_tmpdirs[i].path); /* fails, as it should, unless empty */
}

/* A fresh directory under nf_test_tmpbase(); the test removes it or leaves it. */
static inline void nf_test_tmpdir(char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/nftrace-test-XXXXXX", nf_test_tmpbase());

	ck_assert_msg(n > 0 && (size_t)n < len, "temporary directory name too long");
	ck_assert_msg(mkdtemp(buf) != NULL, "mkdtemp failed");
	if (nf_test_n_tmpdirs < NF_TEST_MAX_TMPDIRS && strlen(buf) < sizeof(nf_test_tmpdirs[0].path)) {
		if (nf_test_n_tmpdirs == 0)
			atexit(nf_test_rmdir_empty);
		nf_test_tmpdirs[nf_test_n_tmpdirs].pid = getpid();
		strcpy(nf_test_tmpdirs[nf_test_n_tmpdirs].path, buf);
		nf_test_n_tmpdirs++;
	}
}

/* Removes a directory tree made by a test. */
static inline void nf_test_rmtree(const char *dir)
{
	char cmd[4096];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "warning: could not remove %s\n", dir);
}

/* A path in the source tree: NF_SOURCE_DIR/rel (set by ctest). */
static inline void nf_test_source_path(char *buf, size_t len, const char *rel)
{
	const char *src = getenv("NF_SOURCE_DIR");

	snprintf(buf, len, "%s/%s", src ? src : ".", rel);
}

/* The nftrace binary (set by ctest), or "nftrace". */
static inline const char *nf_test_nftrace(void)
{
	const char *p = getenv("NF_NFTRACE");

	return p ? p : "nftrace";
}

/*
 * Runs a shell command, capturing stdout and stderr (each truncated to len-1
 * bytes; the captures are files under nf_test_tmpbase(), removed after).
 * Returns the exit status, or 128+signal when it died of a signal.
 */
static inline int nf_test_run(const char *cmd, char *out, size_t out_len, char *errbuf,
			      size_t err_len)
{
	char outf[4096], errf[4096];
	int fo, fe, st;
	FILE *f;
	size_t n;

	snprintf(outf, sizeof(outf), "%s/nftrace-out-XXXXXX", nf_test_tmpbase());
	snprintf(errf, sizeof(errf), "%s/nftrace-err-XXXXXX", nf_test_tmpbase());
	fo = mkstemp(outf);
	fe = mkstemp(errf);
	ck_assert_msg(fo >= 0 && fe >= 0, "mkstemp in %s failed", nf_test_tmpbase());
	close(fo);
	close(fe);
	size_t need = strlen(cmd) + strlen(outf) + strlen(errf) + 32;
	char *full = malloc(need);
	ck_assert(full != NULL);
	snprintf(full, need, "( %s ) >'%s' 2>'%s' </dev/null", cmd, outf, errf);
	st = system(full);
	free(full);
	if (out && out_len) {
		f = fopen(outf, "r");
		n = f ? fread(out, 1, out_len - 1, f) : 0;
		out[n] = '\0';
		if (f)
			fclose(f);
	}
	if (errbuf && err_len) {
		f = fopen(errf, "r");
		n = f ? fread(errbuf, 1, err_len - 1, f) : 0;
		errbuf[n] = '\0';
		if (f)
			fclose(f);
	}
	unlink(outf);
	unlink(errf);
	if (st == -1)
		return -1;
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	/* system() runs sh: a child killed by a signal shows as 128+sig. */
	return WEXITSTATUS(st);
}

/* Counts the lines of a string. */
static inline int nf_test_count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		if (*s == '\n')
			n++;
	return n;
}

/* Runs a check suite and returns the process exit status. */
static inline int nf_test_main(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif
