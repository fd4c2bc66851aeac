/*
 * The hostile-string set (tests/hostile.h) through every output format.
 * Three fixture sessions carry it: a recorded session whose queues and
 * adapter are named by it (nf_hostile_prog hostile-names, its command line
 * too), a trace-cmd import whose thread names, saved command lines,
 * markers, rings and fence drivers are (tests/kernel/tracedat_writer.c), and
 * an ETW import whose engine (node) names and process image are
 * (tests/cli/etl_fixture.c, with tests/etl/etl_writer.c); the recorded one also under a directory named
 * by it. Every output nftrace makes of them -- PNG, SVG, PDF and HTML
 * reports, Chrome JSON, Perfetto protobuf, every table and view queried as a
 * table, CSV and JSON, critical-path text and JSON, info and check text and
 * JSON, diff (the session against itself) text, JSON and CSV -- is checked by tests/cli/hostile_check.py: well-formed for its
 * format (python3's json and xml parsers, protoc as proto3) and without a
 * raw control character, noncharacter or byte that is not UTF-8.
 * (push and query --clickhouse: tests/push/test_push.sh.)
 */
#include "nf_test.h"
#include "hostile.h"

#include "etl_fixture.h"
#include "tracedat_writer.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

static char tmp[512], out[1 << 16], err[1 << 14];

static int sh(const char *script, const char *const args[])
{
	return nf_test_sh(script, args, out, sizeof(out), err, sizeof(err));
}

static void sh_ok(const char *script, const char *const args[])
{
	int st = sh(script, args);

	ck_assert_msg(st == 0, "%s failed (%d): %.3000s", script, st, err);
}

static void setup(void)
{
	nf_test_tmpdir(tmp, sizeof(tmp));
}

static void teardown(void)
{
	nf_test_rmtree(tmp);
}

/* Checks files (a shell glob under dir, as "$1/GLOB") with hostile_check.py KIND. */
static void check_files(const char *kind, const char *dir, const char *glob)
{
	char py[1024], proto[1024], script[512];

	nf_test_source_path(py, sizeof(py), "tests/cli/hostile_check.py");
	nf_test_source_path(proto, sizeof(proto), "tests/export/perfetto_subset.proto");
	snprintf(script, sizeof(script), "exec python3 \"$2\" \"$3\" --proto \"$4\" \"$1\"/%s", glob);
	int st = sh(script, NF_TEST_ARGV(dir, py, kind, proto));
	ck_assert_msg(st == 0, "%s %s/%s: %s%s", kind, dir, glob, out, err);
}

/* The recorded session: nf_hostile_prog names its queues and second adapter
 * by the set; its command line (the session's source) holds an ESC sequence
 * and a Latin-1 byte. */
static void make_recorded(const char *dir)
{
	char prog[1024];
	const char *bin = getenv("NF_BINARY_DIR");

	snprintf(prog, sizeof(prog), "%s/nf_hostile_prog", bin ? bin : "build");
	int st = nf_test_nftrace_run(NF_TEST_ARGV("record", "-o", dir, "--", prog, "hostile-names",
						  "arg\x1b[31m\xc2\x9b;\xff"), out, sizeof(out), err, sizeof(err));
	ck_assert_msg(st == 0, "record: %s", err);
}

static void hex(char *dst, size_t len, const char *s, size_t max)
{
	size_t n = strlen(s) < max ? strlen(s) : max;

	dst[0] = '\0';
	for (size_t i = 0; i < n && 2 * i + 3 < len; i++)
		sprintf(dst + 2 * i, "%02x", (unsigned char)s[i]);
}

/* The trace-cmd import: per string, a thread (comm, saved cmdline), a
 * marker, a GPU ring with a job, a dma_fence driver. */
static void make_kernel(const char *dir)
{
	char formats[1024], dat[700], why[512], h[256], h15[64];
	size_t cap = 1 << 16, n = 0;
	char *ev = malloc(cap);

	ck_assert_ptr_nonnull(ev);
	nf_test_source_path(formats, sizeof(formats), "samples/kernel/formats-drm-sched");
	ev[0] = '\0';
	for (size_t i = 0; i < NF_HOSTILE_N; i++) {
		hex(h, sizeof(h), nf_hostile_set[i].s, 60);
		if (!strchr(nf_hostile_set[i].s, '\n')) /* saved_cmdlines is a line per thread */
			n += (size_t)snprintf(ev + n, cap - n, "cmdline %zu hex:%s\n", 1000 + i, h);
	}
	for (size_t i = 0; i < NF_HOSTILE_N; i++) {
		unsigned long long t = 5000000000ull + i * 100000, pid = 1000 + i;

		hex(h, sizeof(h), nf_hostile_set[i].s, 44);
		hex(h15, sizeof(h15), nf_hostile_set[i].s, 15);
		n += (size_t)snprintf(ev + n, cap - n,
			"0 %llu sched:sched_switch 0 prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=0 "
			"next_comm=hex:%s next_pid=%llu next_prio=120\n"
			"0 %llu ftrace:print %llu ip=0xffffffff81234567 buf=hex:%s\n"
			"0 %llu gpu_scheduler:drm_sched_job %llu entity=0xffff888200000000 fence=0xffff8881%08zx "
			"name=hex:%s id=%zu job_count=1 hw_job_count=0\n"
			"0 %llu gpu_scheduler:drm_run_job %llu entity=0xffff888200000000 fence=0xffff8881%08zx "
			"name=hex:%s id=%zu job_count=0 hw_job_count=1\n"
			"0 %llu dma_fence:dma_fence_signaled %llu driver=hex:%s timeline=t context=%zu seqno=1\n"
			"0 %llu gpu_scheduler:drm_sched_process_job 0 fence=0xffff8881%08zx\n"
			"0 %llu sched:sched_switch %llu prev_comm=hex:%s prev_pid=%llu prev_prio=120 prev_state=1 "
			"next_comm=swapper/0 next_pid=0 next_prio=120\n",
			t, h15, pid, t + 1000, pid, h, t + 2000, pid, i, h, 100 + i, t + 3000, pid, i, h, 100 + i,
			t + 4000, pid, h, 500 + i, t + 5000, i, t + 6000, pid, h15, pid);
		ck_assert(n + 2048 < cap);
	}
	snprintf(dat, sizeof(dat), "%s/hostile.dat", tmp);
	ck_assert_msg(nf_tdw_write(formats, ev, dat, NULL, why, sizeof(why)) == 0, "%s", why);
	free(ev);
	int st = nf_test_nftrace_run(NF_TEST_ARGV("import", dat, "-o", dir), out, sizeof(out), err, sizeof(err));
	ck_assert_msg(st == 0, "import: %s", err);
}

/*
 * The ETW import: nodes (engines) named by the set's well-formed strings
 * (ETW strings are UTF-16) and one by lone surrogates; a process whose image
 * name (bytes) is ESC, C1 and Latin-1 (tests/cli/etl_fixture.c).
 */
static void make_etw(const char *dir)
{
	const char *names[NF_HOSTILE_N];
	struct etl_fixture f = { names, 0, true, "evil\x1b]0;pwned\x07\xc2\x9b" "caf\xe9.exe", 0, 0 };
	char etl[700];

	for (size_t i = 0; i < NF_HOSTILE_N; i++)
		if (nf_hostile_set[i].valid_utf8)
			names[f.n_nodes++] = nf_hostile_set[i].s;
	snprintf(etl, sizeof(etl), "%s/hostile.etl", tmp);
	ck_assert_int_eq(etl_fixture_write(etl, &f), 0);
	int st = nf_test_nftrace_run(NF_TEST_ARGV("import", etl, "-o", dir), out, sizeof(out), err, sizeof(err));
	ck_assert_msg(st == 0, "import: %s", err);
}

/*
 * Every output of session s into dir o (made here), then each checked.
 * extra: report options for this kind of session ("" or "--threads all").
 */
static void every_output(const char *s, const char *o, const char *extra)
{
	ck_assert_int_eq(mkdir(o, 0755), 0);
	/* the pictures and the page: exit 0 (cairo refused the whole page for one bad name) */
	sh_ok("set -e; for f in png svg pdf html; do \"$NF\" report \"$1\" -o \"$2/r.$f\" $3; done; "
	      "\"$NF\" report \"$1\" -o \"$2/w.svg\" --width 16000 $3",
	      NF_TEST_ARGV(s, o, extra));
	sh_ok("set -e; \"$NF\" export \"$1\" -o \"$2/c.json\" --format chrome-json >/dev/null; "
	      "\"$NF\" export \"$1\" -o \"$2/p.pftrace\" --format perfetto >/dev/null", NF_TEST_ARGV(s, o));
	/* every table and view, in the three formats */
	sh_ok("set -e; \"$NF\" query --csv \"$1\" \"select name from sqlite_master where type in ('table','view') "
	      "and name not like 'sqlite%' order by name\" | tail -n +2 > \"$2/tables\"; "
	      "test -s \"$2/tables\"; while read -r t; do "
	      "\"$NF\" query \"$1\" \"select * from \\\"$t\\\" limit 500\" > \"$2/q-$t.txt\"; "
	      "\"$NF\" query --csv \"$1\" \"select * from \\\"$t\\\" limit 500\" > \"$2/q-$t.csv\"; "
	      "\"$NF\" query --json \"$1\" \"select * from \\\"$t\\\" limit 500\" > \"$2/q-$t.json\"; "
	      "done < \"$2/tables\"", NF_TEST_ARGV(s, o));
	/* info, check (exit 0 or 1: a verdict), critical-path of every wait and the default */
	sh_ok("set -e; \"$NF\" info \"$1\" > \"$2/info.txt\"; \"$NF\" info \"$1\" --json > \"$2/info.json\"; "
	      "\"$NF\" check \"$1\" > \"$2/check.txt\" || [ $? = 1 ]; "
	      "\"$NF\" check \"$1\" --json > \"$2/check.json\" || [ $? = 1 ]; "
	      "\"$NF\" critical-path \"$1\" > \"$2/cp-last.txt\"; \"$NF\" critical-path \"$1\" --json > \"$2/cp-last.json\"; "
	      "for id in $(\"$NF\" query --csv \"$1\" \"select id from fence_ops where op = 'wait' order by id limit 8\" | tail -n +2); do "
	      "\"$NF\" critical-path \"$1\" --op $id > \"$2/cp-$id.txt\"; \"$NF\" critical-path \"$1\" --op $id --json > \"$2/cp-$id.json\"; "
	      "done", NF_TEST_ARGV(s, o));
	/* the session against itself: nftrace diff's text, JSON and CSV */
	sh_ok("set -e; \"$NF\" diff \"$1\" \"$1\" > \"$2/diff.txt\"; \"$NF\" diff \"$1\" \"$1\" --json > \"$2/diff.json\"; "
	      "\"$NF\" diff \"$1\" \"$1\" --csv > \"$2/diff.csv\"", NF_TEST_ARGV(s, o));
	check_files("png", o, "r.png");
	check_files("xml", o, "*.svg");
	check_files("pdf", o, "r.pdf");
	check_files("html", o, "r.html");
	check_files("json", o, "c.json");
	check_files("proto", o, "p.pftrace");
	check_files("text", o, "q-*.txt");
	check_files("text", o, "q-*.csv");
	check_files("json", o, "q-*.json");
	check_files("text", o, "info.txt");
	check_files("json", o, "info.json");
	check_files("text", o, "check.txt");
	check_files("json", o, "check.json");
	check_files("text", o, "cp-*.txt");
	check_files("json", o, "cp-*.json");
	check_files("text", o, "diff.txt");
	check_files("text", o, "diff.csv");
	check_files("json", o, "diff.json");
}

START_TEST(every_output_of_a_recorded_session_is_clean)
{
	char s[700], o[700];

	snprintf(s, sizeof(s), "%s/rec", tmp);
	snprintf(o, sizeof(o), "%s/out", tmp);
	make_recorded(s);
	/* the names are in the session, as they were given */
	sh_ok("\"$NF\" query --json \"$1\" \"select count(*) as n from queues where name like '%</script>%' "
	      "or name like '%onerror%'\"", NF_TEST_ARGV(s));
	ck_assert_msg(strstr(out, "\"n\": 2"), "%s", out);
	every_output(s, o, "");
}
END_TEST

START_TEST(every_output_of_a_trace_cmd_import_is_clean)
{
	char s[700], o[700];

	snprintf(s, sizeof(s), "%s/kern", tmp);
	snprintf(o, sizeof(o), "%s/out", tmp);
	make_kernel(s);
	sh_ok("\"$NF\" query --csv \"$1\" \"select (select count(*) from jobs), (select count(*) from markers), "
	      "(select count(distinct comm) from kernel_threads)\"", NF_TEST_ARGV(s));
	ck_assert_msg(strstr(out, "\n27,27,") != NULL, "%s", out);
	every_output(s, o, "--threads all");
}
END_TEST

START_TEST(every_output_of_an_etw_import_is_clean)
{
	char s[700], o[700];

	snprintf(s, sizeof(s), "%s/etw", tmp);
	snprintf(o, sizeof(o), "%s/out", tmp);
	make_etw(s);
	sh_ok("\"$NF\" query --csv \"$1\" \"select (select count(*) from etw_nodes), (select count(*) from dma_packets), "
	      "(select count(*) from deps where signal_id is not null)\"", NF_TEST_ARGV(s));
	ck_assert_msg(strstr(out, "\n22,22,22") != NULL, "%s", out);
	every_output(s, o, "");
}
END_TEST

static Suite *hostile_suite(void)
{
	Suite *s = suite_create("hostile");
	TCase *tc[3] = { tcase_create("recorded"), tcase_create("kernel"), tcase_create("etw") };

	tcase_add_test(tc[0], every_output_of_a_recorded_session_is_clean);
	tcase_add_test(tc[1], every_output_of_a_trace_cmd_import_is_clean);
	tcase_add_test(tc[2], every_output_of_an_etw_import_is_clean);
	for (int i = 0; i < 3; i++) {
		tcase_add_checked_fixture(tc[i], setup, teardown);
		tcase_set_timeout(tc[i], 600);
		suite_add_tcase(s, tc[i]);
	}
	return s;
}

int main(void)
{
	return nf_test_main(hostile_suite());
}
