/*
 * End-to-end tests of the nftrace CLI: the log-buffer example goes from
 * scenario to session (read back by the stock babeltrace2), to PNG and SVG, to
 * SQL; and every command refuses bad input with one line and a non-zero exit.
 */
#include "nf_test.h"

#include <stdbool.h>
#include <sys/stat.h>

static char tmp[512], session[600], cmd[8192], out[1 << 16], err[1 << 14];

static void record_sample(const char *sample, const char *dir, const char *extra)
{
	char src[1024];

	nf_test_source_path(src, sizeof(src), sample);
	snprintf(cmd, sizeof(cmd), "'%s' record %s -o '%s' '%s'", nf_test_nftrace(), extra, dir, src);
	int st = nf_test_run(cmd, out, sizeof(out), err, sizeof(err));
	ck_assert_msg(st == 0, "record failed (%d): %.1500s", st, err);
}

static void setup(void)
{
	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(session, sizeof(session), "%s/s", tmp);
	record_sample("samples/log-buffer-example.nfs", session, "--ground-truth");
}

static void teardown(void)
{
	nf_test_rmtree(tmp);
}

/* One line on stderr, naming something, and the expected exit status. */
static void assert_one_line_error(int st, int want, const char *must_contain)
{
	ck_assert_msg(st == want, "exit %d, expected %d; stderr: %.1500s", st, want, err);
	ck_assert_msg(nf_test_count_lines(err) == 1, "expected one line on stderr, got: %.1500s", err);
	ck_assert_msg(strstr(err, must_contain) != NULL, "stderr lacks %s: %.1500s", must_contain, err);
}

START_TEST(babeltrace_reads_every_event)
{
	/* Count the events the recorder wrote with our own reader, then with babeltrace2. */
	snprintf(cmd, sizeof(cmd), "'%s' info '%s'", nf_test_nftrace(), session);
	ck_assert_int_eq(nf_test_run(cmd, out, sizeof(out), err, sizeof(err)), 0);
	long ours = 0;
	for (char *l = strstr(out, "events:\n"); l && (l = strchr(l, '\n')); l++) {
		unsigned long long n;
		char name[128];
		if (sscanf(l + 1, " %127s %llu", name, &n) == 2)
			ours += (long)n;
	}
	ck_assert_int_gt(ours, 10);
	snprintf(cmd, sizeof(cmd), "babeltrace2 '%s'", session);
	int st = nf_test_run(cmd, out, sizeof(out), err, sizeof(err));
	ck_assert_msg(st == 0, "babeltrace2 failed: %s", err);
	ck_assert_msg(err[0] == '\0', "babeltrace2 warned: %s", err);
	ck_assert_int_eq(nf_test_count_lines(out), ours);
	ck_assert_ptr_nonnull(strstr(out, "FENCE_WAIT_QUEUED"));
	ck_assert_ptr_nonnull(strstr(out, "FENCE_SIGNAL_QUEUED"));
	ck_assert_ptr_nonnull(strstr(out, "NativeFenceLogRead"));
}
END_TEST

START_TEST(query_returns_the_two_operations)
{
	snprintf(cmd, sizeof(cmd),
		 "'%s' query --csv '%s' \"select op, value, queued_ns, end_ns, status from fence_ops order by id\"",
		 nf_test_nftrace(), session);
	int st = nf_test_run(cmd, out, sizeof(out), err, sizeof(err));
	ck_assert_msg(st == 0, "query failed: %s", err);
	ck_assert_int_eq(nf_test_count_lines(out), 3);
	char op1[16], op2[16], s1[32], s2[32];
	long long v1, v2, q1, q2, e1, e2;
	char *l2 = strchr(out, '\n') + 1;
	ck_assert_int_eq(sscanf(l2, "%15[^,],%lld,%lld,%lld,%31s", op1, &v1, &q1, &e1, s1), 5);
	l2 = strchr(l2, '\n') + 1;
	ck_assert_int_eq(sscanf(l2, "%15[^,],%lld,%lld,%lld,%31s", op2, &v2, &q2, &e2, s2), 5);
	/* The wait (CPUT1 = 100us) was queued first, the signal at CPUT2 = 250us. */
	ck_assert_str_eq(op1, "wait");
	ck_assert_str_eq(op2, "signal");
	ck_assert_int_eq(v1, 1);
	ck_assert_int_eq(v2, 1);
	ck_assert_int_eq(q1, 100000);
	ck_assert_int_eq(q2, 250000);
	ck_assert_str_eq(s1, "complete");
	ck_assert_str_eq(s2, "complete");
	/* One time base: the GPU completions land after queueing, the wait after the
	 * signal that released it, near the simulator's true times (320.2/320.3 us). */
	ck_assert_int_gt(e2, q2);
	ck_assert_int_ge(e1, e2);
	ck_assert_msg(llabs(e2 - 320200) < 1000 && llabs(e1 - 320300) < 1000,
		      "end times %lld %lld far from truth", e1, e2);
	/* The timeline kept beside the trace must not break CTF readers. */
	snprintf(cmd, sizeof(cmd), "babeltrace2 '%s' >/dev/null && '%s' info '%s' >/dev/null",
		 session, nf_test_nftrace(), session);
	st = nf_test_run(cmd, out, sizeof(out), err, sizeof(err));
	ck_assert_msg(st == 0, "session unreadable after a query: %.1500s", err);
}
END_TEST

static long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

START_TEST(report_png_and_svg)
{
	char png[700], svg[700];

	snprintf(png, sizeof(png), "%s/r.png", tmp);
	snprintf(svg, sizeof(svg), "%s/r.svg", tmp);
	snprintf(cmd, sizeof(cmd), "'%s' report '%s' -o '%s' && '%s' report '%s' -o '%s'",
		 nf_test_nftrace(), session, png, nf_test_nftrace(), session, svg);
	int st = nf_test_run(cmd, out, sizeof(out), err, sizeof(err));
	ck_assert_msg(st == 0, "report failed: %s", err);
	ck_assert_int_gt(file_size(png), 1000);
	ck_assert_int_gt(file_size(svg), 1000);
	FILE *f = fopen(png, "rb");
	unsigned char sig[8];
	ck_assert(f && fread(sig, 1, 8, f) == 8);
	fclose(f);
	ck_assert(memcmp(sig, "\x89PNG\r\n\x1a\n", 8) == 0);
	f = fopen(svg, "r");
	ck_assert(f && fread(out, 1, 200, f) > 0);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(out, "<svg"));
}
END_TEST

/* Bad input to each command: one line naming what is wrong, non-zero exit. */
START_TEST(bad_inputs)
{
	char empty[700], notsession[700], garbage[700];
	const char *nf = nf_test_nftrace();
	int st;

	snprintf(empty, sizeof(empty), "%s/empty.nfs", tmp);
	snprintf(notsession, sizeof(notsession), "%s/notsession", tmp);
	snprintf(garbage, sizeof(garbage), "%s/garbage.nfs", tmp);
	fclose(fopen(empty, "w"));
	mkdir(notsession, 0755);
	FILE *f = fopen(garbage, "w");
	fputs("adapter G caps native\nqueue Q adapter G\nfrobnicate Q\n", f);
	fclose(f);

	/* record */
	snprintf(cmd, sizeof(cmd), "'%s' record -o '%s/x' '%s/missing.nfs'", nf, tmp, tmp);
	st = nf_test_run(cmd, out, sizeof(out), err, sizeof(err));
	assert_one_line_error(st, 1, "missing.nfs");
	snprintf(cmd, sizeof(cmd), "'%s' record -o '%s/x' '%s'", nf, tmp, empty);
	st = nf_test_run(cmd, out, sizeof(out), err, sizeof(err));
	assert_one_line_error(st, 1, "empty.nfs:1:1");
	snprintf(cmd, sizeof(cmd), "'%s' record -o '%s/x' '%s'", nf, tmp, garbage);
	st = nf_test_run(cmd, out, sizeof(out), err, sizeof(err));
	assert_one_line_error(st, 1, "garbage.nfs:3:1: unknown statement 'frobnicate'");
	snprintf(cmd, sizeof(cmd), "'%s' record '%s'", nf, garbage);
	st = nf_test_run(cmd, out, sizeof(out), err, sizeof(err));
	assert_one_line_error(st, 2, "missing -o");
	/* refuses to overwrite a session */
	char src[1024];
	nf_test_source_path(src, sizeof(src), "samples/log-buffer-example.nfs");
	snprintf(cmd, sizeof(cmd), "'%s' record -o '%s' '%s'", nf, session, src);
	st = nf_test_run(cmd, out, sizeof(out), err, sizeof(err));
	assert_one_line_error(st, 1, "--force");

	/* report */
	snprintf(cmd, sizeof(cmd), "'%s' report '%s/nope' -o '%s/a.png'", nf, tmp, tmp);
	st = nf_test_run(cmd, out, sizeof(out), err, sizeof(err));
	assert_one_line_error(st, 1, "nope");
	snprintf(cmd, sizeof(cmd), "'%s' report '%s' -o '%s/a.png'", nf, notsession, tmp);
	st = nf_test_run(cmd, out, sizeof(out), err, sizeof(err));
	assert_one_line_error(st, 1, "notsession");
	/* An output format report cannot draw is bad usage (exit 2), refused before
	 * the session is even looked at: the same with a session that does not exist. */
	snprintf(cmd, sizeof(cmd), "'%s' report '%s' -o '%s/a.bmp'", nf, session, tmp);
	st = nf_test_run(cmd, out, sizeof(out), err, sizeof(err));
	assert_one_line_error(st, 2, "a.bmp");
	ck_assert_msg(strstr(err, "unknown output format") != NULL, "%s", err);
	snprintf(cmd, sizeof(cmd), "'%s' report '%s/nope' -o '%s/a.bmp'", nf, tmp, tmp);
	st = nf_test_run(cmd, out, sizeof(out), err, sizeof(err));
	assert_one_line_error(st, 2, "a.bmp");
	snprintf(cmd, sizeof(cmd), "'%s' report '%s' -o '%s/png'", nf, session, tmp);
	st = nf_test_run(cmd, out, sizeof(out), err, sizeof(err));
	assert_one_line_error(st, 2, "png");
	snprintf(cmd, sizeof(cmd), "'%s' report '%s' -o '%s/a.png' --from banana", nf, session, tmp);
	st = nf_test_run(cmd, out, sizeof(out), err, sizeof(err));
	assert_one_line_error(st, 2, "banana");

	/* query */
	snprintf(cmd, sizeof(cmd), "'%s' query '%s' 'select * from no_such_table'", nf, session);
	st = nf_test_run(cmd, out, sizeof(out), err, sizeof(err));
	assert_one_line_error(st, 1, "no_such_table");
	snprintf(cmd, sizeof(cmd), "'%s' query '%s' 'selec oops'", nf, session);
	st = nf_test_run(cmd, out, sizeof(out), err, sizeof(err));
	assert_one_line_error(st, 1, "syntax error");
	snprintf(cmd, sizeof(cmd), "'%s' query '%s' 'delete from fence_ops'", nf, session);
	st = nf_test_run(cmd, out, sizeof(out), err, sizeof(err));
	ck_assert_int_eq(st, 1);
	snprintf(cmd, sizeof(cmd), "'%s' query --csv '%s' 'select count(*) from fence_ops'", nf, session);
	st = nf_test_run(cmd, out, sizeof(out), err, sizeof(err));
	ck_assert_int_eq(st, 0);
	ck_assert_ptr_nonnull(strstr(out, "\n2\n"));
	snprintf(cmd, sizeof(cmd), "'%s' query '%s' 'select 1'", nf, empty);
	st = nf_test_run(cmd, out, sizeof(out), err, sizeof(err));
	assert_one_line_error(st, 1, "empty.nfs");

	/* info */
	snprintf(cmd, sizeof(cmd), "'%s' info '%s'", nf, notsession);
	st = nf_test_run(cmd, out, sizeof(out), err, sizeof(err));
	assert_one_line_error(st, 1, "notsession");

	/* usage */
	snprintf(cmd, sizeof(cmd), "'%s' frobnicate", nf);
	st = nf_test_run(cmd, out, sizeof(out), err, sizeof(err));
	assert_one_line_error(st, 2, "frobnicate");
}
END_TEST

START_TEST(help_and_version_on_every_command)
{
	static const char *const cmds[] = { "record", "report", "query", "info", "help" };

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		snprintf(cmd, sizeof(cmd), "'%s' %s --help", nf_test_nftrace(), cmds[i]);
		ck_assert_int_eq(nf_test_run(cmd, out, sizeof(out), err, sizeof(err)), 0);
		ck_assert_msg(strstr(out, "usage: nftrace") != NULL, "%s --help: %s", cmds[i], out);
		snprintf(cmd, sizeof(cmd), "'%s' %s --version", nf_test_nftrace(), cmds[i]);
		ck_assert_int_eq(nf_test_run(cmd, out, sizeof(out), err, sizeof(err)), 0);
		ck_assert_ptr_nonnull(strstr(out, "nftrace "));
	}
}
END_TEST

START_TEST(events_doc_matches_schema)
{
	char doc[1024];

	nf_test_source_path(doc, sizeof(doc), "schemas/events.md");
	snprintf(cmd, sizeof(cmd), "'%s' info --events | diff -u '%s' -", nf_test_nftrace(), doc);
	int st = nf_test_run(cmd, out, sizeof(out), err, sizeof(err));
	ck_assert_msg(st == 0, "schemas/events.md is stale; regenerate with nftrace info --events > schemas/events.md: %.1500s", out);
}
END_TEST

START_TEST(deterministic_sessions_are_identical)
{
	char a[700];

	snprintf(a, sizeof(a), "%s/again", tmp);
	record_sample("samples/log-buffer-example.nfs", a, "--ground-truth");
	snprintf(cmd, sizeof(cmd), "cmp '%s/metadata' '%s/metadata' && cmp '%s/events' '%s/events' && cmp '%s/truth' '%s/truth'",
		 session, a, session, a, session, a);
	ck_assert_int_eq(nf_test_run(cmd, out, sizeof(out), err, sizeof(err)), 0);
}
END_TEST

static Suite *cli_suite(void)
{
	Suite *s = suite_create("cli");
	TCase *tc = tcase_create("cli");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, babeltrace_reads_every_event);
	tcase_add_test(tc, query_returns_the_two_operations);
	tcase_add_test(tc, report_png_and_svg);
	tcase_add_test(tc, bad_inputs);
	tcase_add_test(tc, help_and_version_on_every_command);
	tcase_add_test(tc, events_doc_matches_schema);
	tcase_add_test(tc, deterministic_sessions_are_identical);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return nf_test_main(cli_suite());
}
