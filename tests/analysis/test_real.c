/*
 * The hang check on the real captures in ../shared/real-traces/ (as far as they
 * import): no finding, and every critical path tiles its latency. Skipped (exit
 * 77, with a message) when the directory is absent, as on a fresh clone.
 */
#include "nf_test.h"

#include "contract/analysis.h"
#include "contract/session.h"

#include <dirent.h>
#include <inttypes.h>
#include <sys/stat.h>

static char tmp[512], out[1 << 16], err[1 << 14];

/* Runs nftrace with args (no shell), its output in out and err: the exit status. */
static int nft(const char *const args[])
{
	return nf_test_nftrace_run(args, out, sizeof(out), err, sizeof(err));
}

static int check_one(const char *dat, int k)
{
	char dir[1024], db[1200];
	struct nf_analysis *a = NULL;
	struct nf_hang_report h;
	struct nf_error e;

	snprintf(dir, sizeof(dir), "%s/s%d", tmp, k);
	if (nft(NF_TEST_ARGV("import", dat, "-o", dir)) != 0) {
		printf("%s: does not import (%.200s), left out\n", dat, err);
		return 0;
	}
	nf_error_clear(&e);
	ck_assert_msg(nf_timeline_ensure(dir, db, sizeof(db), &e) == 0, "%s", e.msg);
	ck_assert_msg(nf_analysis_load_open(db, &a, &e) == 0, "%s", e.msg);
	ck_assert_int_eq(nf_analysis_hangs(a, &h, &e), 0);
	for (size_t i = 0; i < h.n; i++)
		ck_assert_msg(h.f[i].kind == NF_HANG_PENDING, "%s: %s finding", dat, nf_hang_kind_name(h.f[i].kind));
	nf_hang_report_free(&h);
	nf_analysis_destroy(a);
	ck_assert_msg(nft(NF_TEST_ARGV("check", dir)) == 0, "%s: check: %s %s", dat, out, err);
	ck_assert_ptr_null(strstr(out, "hangs and deadlocks"));
	printf("%s: imported, no finding\n", dat);
	return 1;
}

START_TEST(real_traces_have_no_finding)
{
	char base[1024], sub[1200], path[1500];
	static const char *const dirs[] = { "", "public-tracedat/" };
	int imported = 0, k = 0;

	nf_test_source_path(base, sizeof(base), "../shared/real-traces/");
	nf_test_tmpdir(tmp, sizeof(tmp));
	for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++) {
		snprintf(sub, sizeof(sub), "%s%s", base, dirs[d]);
		DIR *dh = opendir(sub);
		struct dirent *de;

		if (!dh)
			continue;
		while ((de = readdir(dh))) {
			size_t n = strlen(de->d_name);

			if (n < 5 || strcmp(de->d_name + n - 4, ".dat"))
				continue;
			snprintf(path, sizeof(path), "%s%s", sub, de->d_name);
			imported += check_one(path, k++);
		}
		closedir(dh);
	}
	nf_test_rmtree(tmp);
	ck_assert_int_gt(imported, 0);
}
END_TEST

int main(void)
{
	char base[1024];
	struct stat st;

	nf_test_source_path(base, sizeof(base), "../shared/real-traces");
	if (stat(base, &st) != 0) {
		printf("SKIP: %s is absent (real captures are not part of the project)\n", base);
		return 77;
	}
	Suite *s = suite_create("analysis-real");
	TCase *tc = tcase_create("real");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, real_traces_have_no_finding);
	suite_add_tcase(s, tc);
	return nf_test_main(s);
}
