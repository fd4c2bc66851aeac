/*
 * Benchmark driver for the analysis module: on a timeline database, times the
 * hang check as `nftrace check` runs it (the model of open operations, then
 * the check: LOAD is that model's one pass), the stall blame (the loaded
 * model, then the blame: BLAME includes its load), and the critical path of
 * the last operation through the lazy model (what `nftrace critical-path`
 * does), each in wall and CPU seconds (the CPU time is steadier on a shared
 * machine). Prints one line:
 *   OPS LOAD_S HANGS_S BLAME_S PATH_S SEGMENTS FINDINGS BLAME_ROWS LOAD_CPU HANGS_CPU BLAME_CPU PATH_CPU
 * Exit 0, or 1 with a message on stderr.
 */
#include "contract/analysis.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double clk(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now(void)
{
	return clk(CLOCK_MONOTONIC);
}

static double cpu(void)
{
	return clk(CLOCK_PROCESS_CPUTIME_ID);
}

int main(int argc, char **argv)
{
	struct nf_analysis *a = NULL, *lz = NULL;
	struct nf_hang_report h = { 0 };
	struct nf_blame_row *rows = NULL;
	struct nf_cp_path p = { 0 };
	struct nf_error err;
	double t0, t_load, t_hangs, t_blame, t_path, c0, c_load, c_hangs, c_blame, c_path;
	size_t n_rows = 0;
	int64_t op;

	if (argc != 2) {
		fprintf(stderr, "usage: nfb_analysis DIR/.timeline.db\n");
		return 2;
	}
	nf_error_clear(&err);
	t0 = now();
	c0 = cpu();
	if (nf_analysis_open_lazy(argv[1], &lz, &err) || nf_analysis_target(lz, NF_CP_LAST, 0, &op, &err) ||
	    nf_analysis_critical_path(lz, op, &p, &err))
		goto fail;
	t_path = now() - t0;
	c_path = cpu() - c0;
	t0 = now();
	c0 = cpu();
	if (nf_analysis_load_open(argv[1], &a, &err))
		goto fail;
	t_load = now() - t0;
	c_load = cpu() - c0;
	t0 = now();
	c0 = cpu();
	if (nf_analysis_hangs(a, &h, &err))
		goto fail;
	t_hangs = now() - t0;
	c_hangs = cpu() - c0;
	nf_analysis_destroy(a);
	a = NULL;
	t0 = now();
	c0 = cpu();
	if (nf_analysis_load(argv[1], &a, &err) || nf_analysis_stall_blame(a, &rows, &n_rows, &err))
		goto fail;
	t_blame = now() - t0;
	c_blame = cpu() - c0;
	printf("%zu %.3f %.3f %.3f %.3f %zu %zu %zu %.3f %.3f %.3f %.3f\n", nf_analysis_op_count(a), t_load,
	       t_hangs, t_blame, t_path, p.n, h.n, n_rows, c_load, c_hangs, c_blame, c_path);
	free(rows);
	nf_hang_report_free(&h);
	nf_cp_path_free(&p);
	nf_analysis_destroy(a);
	nf_analysis_destroy(lz);
	return 0;
fail:
	fprintf(stderr, "nfb_analysis: %s\n", err.msg);
	nf_cp_path_free(&p);
	nf_analysis_destroy(a);
	nf_analysis_destroy(lz);
	return 1;
}
