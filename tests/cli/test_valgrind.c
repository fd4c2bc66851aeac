/*
 * Valgrind memcheck over a whole run: record -> check -> report ->
 * query on the smallest sample, then import -> report -> query of a kernel
 * trace, each command under `valgrind --leak-check=full --error-exitcode=99`,
 * failing on any memory error or definite leak. Suppressed: only fontconfig's
 * process-lifetime caches (tests/valgrind.supp). Skipped visibly (ctest "Skipped", exit 77) when
 * valgrind is not installed or the build uses sanitizers (their runtimes and
 * valgrind cannot share a process).
 */
#include "nf_test.h"

static char tmp[512], out[1 << 14], err[1 << 16];

/* Runs nftrace with args (no shell), its output in out and err: the exit status. */
static int nft(const char *const args[])
{
	return nf_test_nftrace_run(args, out, sizeof(out), err, sizeof(err));
}

/*
 * Runs `nftrace ARGS` in tmp under memcheck and asserts it is clean. args are
 * shell words (eval'd); a path they need is "$4", given as path (or NULL).
 */
static void memcheck(const char *args, const char *path)
{
	char supp[1024];

	nf_test_source_path(supp, sizeof(supp), "tests/valgrind.supp");
	int st = nf_test_sh("cd \"$1\" && eval \"exec valgrind -q --leak-check=full "
			    "--show-leak-kinds=definite --errors-for-leak-kinds=definite "
			    "--error-exitcode=99 --child-silent-after-fork=no "
			    "--suppressions=\\\"\\$2\\\" \\\"\\$NF\\\" $3\"",
			    NF_TEST_ARGV(tmp, supp, args, path ? path : ""), out, sizeof(out), err,
			    sizeof(err));
	ck_assert_msg(st == 0, "memcheck: nftrace %s: exit %d\n%.8000s", args, st, err);
	ck_assert_msg(!strstr(err, "=="), "memcheck: nftrace %s reported:\n%.8000s", args, err);
}

START_TEST(record_check_report_query_are_clean)
{
	char src[1024];

	nf_test_source_path(src, sizeof(src), "samples/log-buffer-example.nfs");
	memcheck("record --ground-truth -o s \"$4\"", src);
	ck_assert_int_eq(nft(NF_TEST_ARGV("help")), 0);
	static char help[sizeof(out)];
	snprintf(help, sizeof(help), "%s", out);
	if (strstr(help, "   check "))
		memcheck("check s", NULL);
	memcheck("report s -o s.png", NULL);
	memcheck("report s -o s.svg --from 100us --to 1ms", NULL);
	memcheck("query --csv s 'select id, op, queue, value, queued_ns, end_ns from fence_ops'", NULL);
	ck_assert_msg(strstr(out, "queued_ns") != NULL, "query printed: %s", out);
	memcheck("info s", NULL);
	/* The kernel import path too, when the command is there. */
	if (strstr(help, "   import ")) {
		char dat[1024];

		nf_test_source_path(dat, sizeof(dat), "tests/kernel/corpus/import/dma-fence.dat");
		memcheck("import \"$4\" -o k", dat);
		memcheck("report k -o k.png", NULL);
		memcheck("query --json k 'select * from fence_ops'", NULL);
	}
	/* A cpu_wait_async still pending at the end (its waiter was once read
	 * after being freed when the runtime was destroyed). */
	ck_assert_int_eq(nf_test_sh("cd \"$1\" && printf 'adapter GPU caps native\\n"
				    "queue Q adapter GPU node 0 engine 0\\nfence F adapter GPU initial 0\\n"
				    "cpu_wait_async W F 5\\nadvance 1ms\\n' > async.nfs",
				    NF_TEST_ARGV(tmp), out, sizeof(out), err, sizeof(err)), 0);
	memcheck("record -o async async.nfs", NULL);
	/* An error path too: a corrupt stream. */
	ck_assert_int_eq(nf_test_sh("cd \"$1\" && mkdir b && cp s/* b/ && truncate -s 100 b/events",
				    NF_TEST_ARGV(tmp), out, sizeof(out), err, sizeof(err)), 0);
	int st = nf_test_sh("cd \"$1\" && valgrind -q --leak-check=full --show-leak-kinds=definite "
			    "--errors-for-leak-kinds=definite --error-exitcode=99 \"$NF\" query b 'select 1'",
			    NF_TEST_ARGV(tmp), out, sizeof(out), err, sizeof(err));
	ck_assert_msg(st == 1 && nf_test_count_lines(err) == 1,
		      "memcheck on a corrupt session: exit %d\n%.8000s", st, err);
}
END_TEST

static void setup(void)
{
	nf_test_tmpdir(tmp, sizeof(tmp));
}

static void teardown(void)
{
	nf_test_rmtree(tmp);
}

int main(void)
{
#ifdef NF_TEST_SANITIZED
	printf("SKIP: sanitizer build (valgrind cannot run ASan/TSan binaries)\n");
	return 77;
#endif
	if (system("valgrind --version >/dev/null 2>&1") != 0) {
		printf("SKIP: valgrind is not installed\n");
		return 77;
	}
	Suite *s = suite_create("valgrind");
	TCase *tc = tcase_create("valgrind");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, record_check_report_query_are_clean);
	suite_add_tcase(s, tc);
	return nf_test_main(s);
}
