/*
 * End-to-end tests of the nftrace CLI: the log-buffer example goes from
 * scenario to session (read back by the stock babeltrace2), to PNG and SVG, to
 * SQL; and every command refuses bad input with one line and a non-zero exit.
 */
#include "nf_test.h"

#include <stdbool.h>
#include <sys/stat.h>

static char tmp[512], session[600], out[1 << 16], err[1 << 14];

/* Runs nftrace with args (no shell), its output in out and err. */
static int nft(const char *const args[])
{
	return nf_test_nftrace_run(args, out, sizeof(out), err, sizeof(err));
}

static void setup(void)
{
	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(session, sizeof(session), "%s/s", tmp);
	nf_test_record("samples/log-buffer-example.nfs", session, NF_TEST_ARGV("--ground-truth"));
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
	ck_assert_int_eq(nft(NF_TEST_ARGV("info", session)), 0);
	long ours = 0;
	for (char *l = strstr(out, "events:\n"); l && (l = strchr(l, '\n')); l++) {
		unsigned long long n;
		char name[128];
		if (sscanf(l + 1, " %127s %llu", name, &n) == 2)
			ours += (long)n;
	}
	ck_assert_int_gt(ours, 10);
	int st = nf_test_exec(NULL, NF_TEST_ARGV("babeltrace2", session), out, sizeof(out), err,
			      sizeof(err));
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
	int st = nft(NF_TEST_ARGV("query", "--csv", session,
				  "select op, value, queued_ns, end_ns, status from fence_ops order by id"));
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
	st = nf_test_exec(NULL, NF_TEST_ARGV("babeltrace2", session), NULL, 0, err, sizeof(err));
	ck_assert_msg(st == 0, "session unreadable by babeltrace2 after a query: %.1500s", err);
	st = nft(NF_TEST_ARGV("info", session));
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
	int st = nft(NF_TEST_ARGV("report", session, "-o", png));
	ck_assert_msg(st == 0, "report failed: %s", err);
	st = nft(NF_TEST_ARGV("report", session, "-o", svg));
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
	char empty[700], notsession[700], garbage[700], x[700], missing[700], nope[700], file[700];
	int st;

	snprintf(empty, sizeof(empty), "%s/empty.nfs", tmp);
	snprintf(notsession, sizeof(notsession), "%s/notsession", tmp);
	snprintf(garbage, sizeof(garbage), "%s/garbage.nfs", tmp);
	fclose(fopen(empty, "w"));
	mkdir(notsession, 0755);
	FILE *f = fopen(garbage, "w");
	fputs("adapter G caps native\nqueue Q adapter G\nfrobnicate Q\n", f);
	fclose(f);
	snprintf(x, sizeof(x), "%s/x", tmp);
	snprintf(missing, sizeof(missing), "%s/missing.nfs", tmp);
	snprintf(nope, sizeof(nope), "%s/nope", tmp);

	/* record */
	st = nft(NF_TEST_ARGV("record", "-o", x, missing));
	assert_one_line_error(st, 1, "missing.nfs");
	st = nft(NF_TEST_ARGV("record", "-o", x, empty));
	assert_one_line_error(st, 1, "empty.nfs:1:1");
	st = nft(NF_TEST_ARGV("record", "-o", x, garbage));
	assert_one_line_error(st, 1, "garbage.nfs:3:1: unknown statement 'frobnicate'");
	st = nft(NF_TEST_ARGV("record", garbage));
	assert_one_line_error(st, 2, "missing -o");
	/* refuses to overwrite a session */
	char src[1024];
	nf_test_source_path(src, sizeof(src), "samples/log-buffer-example.nfs");
	st = nft(NF_TEST_ARGV("record", "-o", session, src));
	assert_one_line_error(st, 1, "--force");

	/* report */
	snprintf(file, sizeof(file), "%s/a.png", tmp);
	st = nft(NF_TEST_ARGV("report", nope, "-o", file));
	assert_one_line_error(st, 1, "nope");
	snprintf(file, sizeof(file), "%s/a.png", tmp);
	st = nft(NF_TEST_ARGV("report", notsession, "-o", file));
	assert_one_line_error(st, 1, "notsession");
	/* An output format report cannot draw is bad usage (exit 2), refused before
	 * the session is even looked at: the same with a session that does not exist. */
	snprintf(file, sizeof(file), "%s/a.bmp", tmp);
	st = nft(NF_TEST_ARGV("report", session, "-o", file));
	assert_one_line_error(st, 2, "a.bmp");
	ck_assert_msg(strstr(err, "unknown output format") != NULL, "%s", err);
	snprintf(file, sizeof(file), "%s/a.bmp", tmp);
	st = nft(NF_TEST_ARGV("report", nope, "-o", file));
	assert_one_line_error(st, 2, "a.bmp");
	snprintf(file, sizeof(file), "%s/png", tmp);
	st = nft(NF_TEST_ARGV("report", session, "-o", file));
	assert_one_line_error(st, 2, "png");
	snprintf(file, sizeof(file), "%s/a.png", tmp);
	st = nft(NF_TEST_ARGV("report", session, "-o", file, "--from", "banana"));
	assert_one_line_error(st, 2, "banana");

	/* query */
	st = nft(NF_TEST_ARGV("query", session, "select * from no_such_table"));
	assert_one_line_error(st, 1, "no_such_table");
	st = nft(NF_TEST_ARGV("query", session, "selec oops"));
	assert_one_line_error(st, 1, "syntax error");
	st = nft(NF_TEST_ARGV("query", session, "delete from fence_ops"));
	ck_assert_int_eq(st, 1);
	st = nft(NF_TEST_ARGV("query", "--csv", session, "select count(*) from fence_ops"));
	ck_assert_int_eq(st, 0);
	ck_assert_ptr_nonnull(strstr(out, "\n2\n"));
	st = nft(NF_TEST_ARGV("query", empty, "select 1"));
	assert_one_line_error(st, 1, "empty.nfs");

	/* info */
	st = nft(NF_TEST_ARGV("info", notsession));
	assert_one_line_error(st, 1, "notsession");

	/* usage */
	st = nft(NF_TEST_ARGV("frobnicate"));
	assert_one_line_error(st, 2, "frobnicate");
}
END_TEST

START_TEST(help_and_version_on_every_command)
{
	static const char *const cmds[] = { "record", "report", "query", "info", "help" };

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		ck_assert_int_eq(nft(NF_TEST_ARGV(cmds[i], "--help")), 0);
		ck_assert_msg(strstr(out, "usage: nftrace") != NULL, "%s --help: %s", cmds[i], out);
		ck_assert_int_eq(nft(NF_TEST_ARGV(cmds[i], "--version")), 0);
		ck_assert_ptr_nonnull(strstr(out, "nftrace "));
	}
}
END_TEST

START_TEST(events_doc_matches_schema)
{
	char doc[1024];
	static char want[1 << 16];

	nf_test_source_path(doc, sizeof(doc), "schemas/events.md");
	FILE *f = fopen(doc, "r");
	ck_assert_msg(f != NULL, "cannot open %s", doc);
	size_t n = fread(want, 1, sizeof(want) - 1, f);
	want[n] = '\0';
	fclose(f);
	ck_assert_int_eq(nft(NF_TEST_ARGV("info", "--events")), 0);
	ck_assert_msg(n < sizeof(want) - 1 && strlen(out) < sizeof(out) - 1, "events.md outgrew the test's buffers");
	ck_assert_msg(strcmp(out, want) == 0,
		      "schemas/events.md is stale; regenerate with nftrace info --events > schemas/events.md");
}
END_TEST

START_TEST(deterministic_sessions_are_identical)
{
	char a[700];

	snprintf(a, sizeof(a), "%s/again", tmp);
	nf_test_record("samples/log-buffer-example.nfs", a, NF_TEST_ARGV("--ground-truth"));
	static const char *const files[] = { "metadata", "events", "truth" };
	for (size_t i = 0; i < 3; i++) {
		char x[800], y[800];

		snprintf(x, sizeof(x), "%s/%s", session, files[i]);
		snprintf(y, sizeof(y), "%s/%s", a, files[i]);
		ck_assert_msg(nf_test_exec(NULL, NF_TEST_ARGV("cmp", x, y), out, sizeof(out), err,
					   sizeof(err)) == 0, "%s differs: %s", files[i], out);
	}
}
END_TEST

/*
 * A session under a directory whose name has spaces, quotes and shell
 * characters: every command takes the path as it is, and an error names it.
 */
START_TEST(odd_path_names)
{
	char dir[1024], s[1100], png[1100], bad[1100];

	snprintf(dir, sizeof(dir), "%s/it's a \"quoted\" dir $HOME;`x` *", tmp);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	snprintf(s, sizeof(s), "%s/s 1", dir);
	snprintf(png, sizeof(png), "%s/r 'x'.png", dir);
	nf_test_record("samples/log-buffer-example.nfs", s, NF_TEST_ARGV("--seed", "3"));
	ck_assert_msg(nft(NF_TEST_ARGV("info", s)) == 0, "info: %.1500s", err);
	ck_assert_ptr_nonnull(strstr(out, "events:"));
	ck_assert_msg(nft(NF_TEST_ARGV("check", s)) == 0, "check: %.1500s", err);
	ck_assert_msg(nft(NF_TEST_ARGV("query", "--csv", s, "select count(*) from fence_ops")) == 0,
		      "query: %.1500s", err);
	ck_assert_ptr_nonnull(strstr(out, "\n2\n"));
	ck_assert_msg(nft(NF_TEST_ARGV("report", s, "-o", png)) == 0, "report: %.1500s", err);
	ck_assert_int_gt(file_size(png), 1000);
	/* A missing session under the same directory: one line that names it whole. */
	snprintf(bad, sizeof(bad), "%s/none", dir);
	assert_one_line_error(nft(NF_TEST_ARGV("info", bad)), 1, bad);
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
	tcase_add_test(tc, odd_path_names);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return nf_test_main(cli_suite());
}
