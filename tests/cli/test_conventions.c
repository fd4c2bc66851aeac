/*
 * One way to write a handle and one CLI convention, end to end on
 * the log-buffer example and the overrun sample:
 *  - handles in hex where people read them (the query table view, --report
 *    tables, the views' *_hex columns), integers where programs read them
 *    (CSV, JSON); options take both forms;
 *  - a filter matching nothing (--fence, --queue, --from past the end) is a
 *    one-line error with exit 1, for pictures as for the HTML page;
 *  - -h on every command; info --json; check's GPU timestamps carry a unit.
 */
#include "nf_test.h"

static char tmpdir[1024];

static void setup(void)
{
	nf_test_tmpdir(tmpdir, sizeof(tmpdir));
}

static void teardown(void)
{
	if (!getenv("NF_KEEP_TMP"))
		nf_test_rmtree(tmpdir);
}

/* Runs nftrace with args (no shell), its stdout in out; fails the test unless it exits 0. */
static void nft_ok(const char *const args[], char *out, size_t len)
{
	char err[4096];
	int rc = nf_test_nftrace_run(args, out, len, err, sizeof(err));

	ck_assert_msg(rc == 0, "nftrace %s exited %d: %.1500s", args[0], rc, err);
}

/* Records samples/SAMPLE with seed 7 into tmpdir/NAME; its path in dir. */
static void record(const char *sample, const char *name, char *dir, size_t len)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "samples/%s", sample);
	snprintf(dir, len, "%s/%s", tmpdir, name);
	nf_test_record(rel, dir, NF_TEST_ARGV("--seed", "7"));
}

START_TEST(handles_hex_for_people_integers_for_programs)
{
	char dir[1200], out[8192], a_png[1300], b_png[1300];

	record("log-buffer-example.nfs", "s", dir, sizeof(dir));
	/* the table view */
	nft_ok(NF_TEST_ARGV("query", dir,
			    "select id, queue, fence, handle from fence_ops order by id limit 1"),
	       out, sizeof(out));
	ck_assert_msg(strstr(out, "0x4000") && !strstr(out, "10737"), "table view: %s", out);
	/* --report tables */
	nft_ok(NF_TEST_ARGV("query", dir, "--report", "queues"), out, sizeof(out));
	ck_assert_msg(strstr(out, "\n0x4000") && !strstr(out, "10737"), "--report queues: %s", out);
	/* CSV and JSON: integers */
	nft_ok(NF_TEST_ARGV("query", "--csv", dir,
			    "select queue, fence from fence_ops order by id limit 1"),
	       out, sizeof(out));
	ck_assert_msg(strstr(out, "\n10737") && !strstr(out, "0x"), "CSV: %s", out);
	nft_ok(NF_TEST_ARGV("query", "--json", dir, "select queue from fence_ops order by id limit 1"),
	       out, sizeof(out));
	ck_assert_msg(strstr(out, "\"queue\": 10737") != NULL, "JSON: %s", out);
	/* the views' hex text columns, equal to the integers */
	nft_ok(NF_TEST_ARGV("query", "--csv", dir,
			    "select count(*) from queue_summary "
			    "where queue_hex = printf('0x%x', queue); select count(*) from queues"),
	       out, sizeof(out));
	{
		long a, b;

		ck_assert_msg(sscanf(out, "count(*)\n%ld\n\ncount(*)\n%ld", &a, &b) == 2 ||
				      sscanf(out, "count(*)\n%ld\ncount(*)\n%ld", &a, &b) == 2,
			      "views: %s", out);
		ck_assert_int_eq(a, b);
		ck_assert_int_gt(a, 0);
	}
	/* options take both forms: the same picture for 0x... and decimal */
	snprintf(a_png, sizeof(a_png), "%s/a.png", tmpdir);
	snprintf(b_png, sizeof(b_png), "%s/b.png", tmpdir);
	nft_ok(NF_TEST_ARGV("report", dir, "-o", a_png, "--queue", "0x40000040"), out, sizeof(out));
	nft_ok(NF_TEST_ARGV("report", dir, "-o", b_png, "--queue", "1073741888"), out, sizeof(out));
	ck_assert_msg(nf_test_exec(NULL, NF_TEST_ARGV("cmp", a_png, b_png), out, sizeof(out), NULL,
				   0) == 0, "--queue 0x40000040 and 1073741888 differ: %s", out);
}
END_TEST

START_TEST(filters_matching_nothing_are_errors)
{
	static const char *const exts[] = { "png", "svg", "pdf", "html" };
	static const struct {
		const char *opt, *val, *needle;
	} cases[] = {
		{ "--fence", "0x99", "fence 0x99: not in the timeline" },
		{ "--fence", "99", "fence 0x63: not in the timeline" },
		{ "--queue", "0x1234", "queue 0x1234: not in the timeline" },
		{ "--from", "10s", "start 10 s is not before the session's end" },
	};
	char dir[1200], out[1024], err[2048], path[1300];

	record("log-buffer-example.nfs", "s", dir, sizeof(dir));
	for (size_t e = 0; e < sizeof(exts) / sizeof(exts[0]); e++)
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			int rc;

			snprintf(path, sizeof(path), "%s/o.%s", tmpdir, exts[e]);
			rc = nf_test_nftrace_run(NF_TEST_ARGV("report", dir, "-o", path, cases[i].opt,
							      cases[i].val), out, sizeof(out), err,
						 sizeof(err));
			ck_assert_msg(rc == 1, "%s .%s: exit %d (%s)", cases[i].opt, exts[e], rc, err);
			ck_assert_msg(nf_test_count_lines(err) == 1 && strstr(err, cases[i].needle),
				      "%s .%s: stderr '%s'", cases[i].opt, exts[e], err);
			ck_assert_msg(access(path, F_OK) != 0, "%s .%s: a file was left", cases[i].opt,
				      exts[e]);
		}
	/* export refuses them with report's words (cli/window.c parses both). */
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc;

		snprintf(path, sizeof(path), "%s/o.pftrace", tmpdir);
		rc = nf_test_nftrace_run(NF_TEST_ARGV("export", dir, "-o", path, "--format", "perfetto",
						      cases[i].opt, cases[i].val),
					 out, sizeof(out), err, sizeof(err));
		ck_assert_msg(rc == 1, "export %s: exit %d (%s)", cases[i].opt, rc, err);
		ck_assert_msg(nf_test_count_lines(err) == 1 && strstr(err, cases[i].needle),
			      "export %s: stderr '%s'", cases[i].opt, err);
		ck_assert_msg(access(path, F_OK) != 0, "export %s: a file was left", cases[i].opt);
	}
}
END_TEST

START_TEST(help_json_units)
{
	static const char *const cmds[] = { "record", "report", "query", "info", "check",
					    "import", "export", "critical-path", "push", "help" };
	char dir[1200], out[16384];

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		nft_ok(NF_TEST_ARGV(cmds[i], "-h"), out, sizeof(out));
		/* each command's own text (its synopsis in its cli/cmd_*.c), not another's */
		char want[64];

		snprintf(want, sizeof(want), "usage: nftrace %s ", cmds[i]);
		ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "%s -h: %s", cmds[i], out);
	}
	record("overrun.nfs", "o", dir, sizeof(dir));
	nft_ok(NF_TEST_ARGV("info", "--json", dir), out, sizeof(out));
	ck_assert_msg(out[0] == '{' && strstr(out, "\"duration_ns\": ") &&
			      strstr(out, "\"log_entries\": {\"read\": ") && strstr(out, "\"lost\": 1952"),
		      "info --json: %s", out);
	nft_ok(NF_TEST_ARGV("check", dir), out, sizeof(out));
	ck_assert_msg(strstr(out, " ticks)") && !strstr(out, "GPU time "), "check: %s", out);
}
END_TEST

/* Static pictures: arrows to CPU waits released by GPU signals, honest lost labels. */
START_TEST(static_pictures_tell_more)
{
	char dir[1200], out[256], svg[1300];
	FILE *f;
	static char buf[1 << 20];
	size_t n;

	/* monitored-value-41: three CPU waits, each released by a GPU signal. */
	record("monitored-value-41.nfs", "m", dir, sizeof(dir));
	snprintf(svg, sizeof(svg), "%s/m.svg", tmpdir);
	nft_ok(NF_TEST_ARGV("report", dir, "-o", svg), out, sizeof(out));
	f = fopen(svg, "r");
	ck_assert(f != NULL);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	ck_assert_msg(strstr(buf, " \xC2\xB7 3 links<") != NULL, "the CPU waits' arrows are not counted");
	/* overrun: gaps closer than a pixel share a label that says how many they are. */
	record("overrun.nfs", "o", dir, sizeof(dir));
	snprintf(svg, sizeof(svg), "%s/o.svg", tmpdir);
	nft_ok(NF_TEST_ARGV("report", dir, "-o", svg), out, sizeof(out));
	f = fopen(svg, "r");
	ck_assert(f != NULL);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	ck_assert_msg(strstr(buf, ">lost 976 in 3 gaps<") != NULL && !strstr(buf, ">lost 976<"),
		      "merged lost spans do not say how many gaps they are");
	ck_assert_msg(!strstr(buf, "other anomalies"), "the OS's overrun flags drawn as anomalies");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("conventions");
	TCase *tc = tcase_create("cli");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, handles_hex_for_people_integers_for_programs);
	tcase_add_test(tc, filters_matching_nothing_are_errors);
	tcase_add_test(tc, help_json_units);
	tcase_add_test(tc, static_pictures_tell_more);
	suite_add_tcase(s, tc);
	return nf_test_main(s);
}
