/*
 * Reliability holes found by trying to break nftrace, one test (or
 * more) per item; docs/RELIABILITY.md lists them with what is guaranteed now.
 * Each test failed before its fix.
 */
#include "nf_test.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

static char tmp[512], good[600], out[1 << 16], err[1 << 14];

/* Runs nftrace with args (no shell), its output in out and err: the exit status. */
static int nft(const char *const args[])
{
	return nf_test_nftrace_run(args, out, sizeof(out), err, sizeof(err));
}

/* A shell script with its paths as "$1"... and nftrace as "$NF" (nf_test_sh). */
static int sh(const char *script, const char *const args[])
{
	return nf_test_sh(script, args, out, sizeof(out), err, sizeof(err));
}

static void sh_ok(const char *script, const char *const args[])
{
	int st = sh(script, args);
	ck_assert_msg(st == 0, "%s failed (%d): %.1500s", script, st, err);
}

/* nft, failing the test unless nftrace exits 0. */
static void nft_ok(const char *const args[])
{
	int st = nft(args);

	ck_assert_msg(st == 0, "nftrace %s failed (%d): %.1500s", args[0], st, err);
}

static void setup(void)
{
	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(good, sizeof(good), "%s/s", tmp);
	nf_test_record("samples/log-buffer-example.nfs", good, NF_TEST_ARGV("--ground-truth"));
}

static void teardown(void)
{
	nf_test_rmtree(tmp);
}

static bool exists(const char *dir, const char *name)
{
	char p[1200];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return lstat(p, &st) == 0;
}

/* One line naming the directory, exit 1 or 2, nothing on stdout. */
static void refused_one_line(int st, const char *what, const char *name)
{
	ck_assert_msg(st == 1 || st == 2, "%s: exit %d: %s", what, st, err);
	ck_assert_msg(nf_test_count_lines(err) == 1, "%s: not one line: %s", what, err);
	ck_assert_msg(strstr(err, name) != NULL, "%s: does not name %s: %s", what, name, err);
}

/* Outputs written under a file size limit: one line naming the file, exit
 * 1, nothing left behind (they used to die of SIGXFSZ, exit 153, silently,
 * leaving a temporary or a truncated file). */
START_TEST(outputs_under_a_file_size_limit_fail_cleanly)
{
	static const char *const outs[][2] = {
		{ "big.json", "export --format chrome-json" }, { "big.pftrace", "export --format perfetto" },
		{ "big.html", "report" }, { "big.svg", "report" }, { "big.pdf", "report" },
		{ "big.png", "report --width 8000" },
	};
	char src[1024], d[700], o[800];

	nf_test_source_path(src, sizeof(src), "samples/clock-drift.nfs");
	snprintf(d, sizeof(d), "%s/drift", tmp);
	/* the timeline and its frames first, without the limit */
	nft_ok(NF_TEST_ARGV("record", "-o", d, src));
	nft_ok(NF_TEST_ARGV("query", d, "select count(*) from frames"));
	for (size_t i = 0; i < sizeof(outs) / sizeof(outs[0]); i++) {
		struct stat before, after;

		snprintf(o, sizeof(o), "%s/%s", tmp, outs[i][0]);
		/* bash: ulimit -f counts KiB; the command's words ($2) split on purpose */
		static const char limited[] = "ulimit -f 8 && exec \"$NF\" $2 \"$1\" -o \"$3\"";
		int st = nf_test_shell("bash", limited, NF_TEST_ARGV(d, outs[i][1], o), out, sizeof(out),
				       err, sizeof(err));
		refused_one_line(st, outs[i][0], outs[i][0]);
		ck_assert_msg(strstr(err, "large") != NULL, "%s: %s", outs[i][0], err);
		ck_assert_int_eq(sh("ls \"$1\" | grep -c '^big' || true", NF_TEST_ARGV(tmp)), 0);
		ck_assert_msg(!strncmp(out, "0", 1), "%s: left %s", outs[i][0], out);
		/* A previous output of that name outlives a failed write, whole. */
		sh_ok("exec \"$NF\" $2 \"$1\" -o \"$3\"", NF_TEST_ARGV(d, outs[i][1], o));
		ck_assert_int_eq(stat(o, &before), 0);
		refused_one_line(nf_test_shell("bash", limited, NF_TEST_ARGV(d, outs[i][1], o), out,
					       sizeof(out), err, sizeof(err)),
				 outs[i][0], outs[i][0]);
		ck_assert_int_eq(stat(o, &after), 0);
		ck_assert_msg(after.st_size == before.st_size && after.st_ino == before.st_ino,
			      "%s: the previous output was replaced by a failed write", outs[i][0]);
		unlink(o);
	}
}
END_TEST

/* ------------------------------------------------------------------ */
/* 1. record --force replaces only nftrace's own session                */

static int record_force(const char *dir)
{
	char src[1024];

	nf_test_source_path(src, sizeof(src), "samples/log-buffer-example.nfs");
	return nft(NF_TEST_ARGV("record", "--force", "-o", dir, src));
}

START_TEST(force_keeps_a_folder_with_notes_and_metadata)
{
	char d[700];

	snprintf(d, sizeof(d), "%s/notes", tmp);
	sh_ok("mkdir \"$1\" && echo mine > \"$1/notes.txt\" && echo meta > \"$1/metadata\"",
	      NF_TEST_ARGV(d));
	refused_one_line(record_force(d), "notes + metadata", d);
	ck_assert(exists(d, "notes.txt") && exists(d, "metadata"));
}
END_TEST

START_TEST(force_keeps_an_lttng_trace)
{
	char d[700];

	/* An LTTng-like CTF trace: metadata of another tool, per-CPU streams. */
	snprintf(d, sizeof(d), "%s/lttng", tmp);
	sh_ok("mkdir \"$1\" && printf '/* CTF 1.8 */\\ntrace { major = 1; minor = 8; };\\n"
	      "env { domain = \"kernel\"; tracer_name = \"lttng-modules\"; };\\n' > \"$1/metadata\" && "
	      "head -c 4096 /dev/urandom > \"$1/channel0_0\" && head -c 4096 /dev/urandom > \"$1/channel0_1\"",
	      NF_TEST_ARGV(d));
	refused_one_line(record_force(d), "lttng", d);
	ck_assert(exists(d, "metadata") && exists(d, "channel0_0") && exists(d, "channel0_1"));
}
END_TEST

START_TEST(force_with_a_subfolder_removes_nothing)
{
	char sub[700];

	/* Our own session, plus a subfolder: refused before any file goes. */
	snprintf(sub, sizeof(sub), "%s/sub", good);
	ck_assert_int_eq(mkdir(sub, 0755), 0);
	refused_one_line(record_force(good), "subfolder", "sub");
	ck_assert(exists(good, "metadata") && exists(good, "events") && exists(good, "truth"));
}
END_TEST

START_TEST(force_with_a_foreign_file_in_our_session_removes_nothing)
{
	sh_ok("echo mine > \"$1/notes.txt\"", NF_TEST_ARGV(good));
	refused_one_line(record_force(good), "foreign file", "notes.txt");
	ck_assert(exists(good, "notes.txt") && exists(good, "metadata") && exists(good, "events"));
}
END_TEST

START_TEST(force_replaces_our_own_session_and_its_timeline)
{
	nft_ok(NF_TEST_ARGV("query", good, "select 1"));
	ck_assert(exists(good, ".timeline.db") && exists(good, "truth"));
	ck_assert_int_eq(record_force(good), 0);
	/* Replaced: recorded without --ground-truth, so no truth any more. */
	ck_assert(exists(good, "metadata") && exists(good, "events") && !exists(good, "truth"));
	ck_assert(!exists(good, ".timeline.db"));
}
END_TEST

START_TEST(force_refuses_metadata_that_is_a_link_to_ours)
{
	char d[700];

	snprintf(d, sizeof(d), "%s/linked", tmp);
	sh_ok("mkdir \"$1\" && ln -s \"$2/metadata\" \"$1/metadata\"", NF_TEST_ARGV(d, good));
	refused_one_line(record_force(d), "metadata link", d);
	ck_assert(exists(d, "metadata") && exists(good, "metadata"));
}
END_TEST


/* ------------------------------------------------------------------ */
/* 2, 4: record -- PROGRAM                                               */

static const char *prog(void)
{
	static char p[1024];
	const char *bin = getenv("NF_BINARY_DIR");

	snprintf(p, sizeof(p), "%s/nf_hostile_prog", bin ? bin : ".");
	return p;
}

/* The runtime's close error (file size limit) is the command's error: the
 * program exits 0, but its session lost every packet. */
START_TEST(program_under_a_file_size_limit_fails)
{
	char d[700];

	snprintf(d, sizeof(d), "%s/fsize", tmp);
	/* bash: ulimit -f counts KiB. 64 KiB holds the metadata, not the events. */
	int st = nf_test_shell("bash", "ulimit -f 64 && exec \"$NF\" record -o \"$1\" -- \"$2\" ops 3000",
			       NF_TEST_ARGV(d, prog()), out, sizeof(out), err, sizeof(err));
	refused_one_line(st, "ulimit -f 64", "events");
	ck_assert_msg(strstr(err, "write failed") != NULL, "%s", err);
	ck_assert_msg(!strstr(out, "recorded"), "reported success: %s", out);
	/* Without the limit, the same program records. */
	nft_ok(NF_TEST_ARGV("record", "--force", "-o", d, "--", prog(), "ops", "3000"));
	nft_ok(NF_TEST_ARGV("check", d));
}
END_TEST

static const char async_pending_scenario[] =
	"session seed 1\n"
	"adapter GPU caps native gpu_frequency 19.2MHz\n"
	"queue Q adapter GPU node 0 engine 0\n"
	"fence F adapter GPU initial 0\n"
	"cpu_wait_async W F 5\n"
	"cpu_wait_async W2 F 1\n"
	"signal Q F 1\n"
	"advance 1ms\n";

/* A cpu_wait_async still pending when the runtime is destroyed: its waiter
 * was freed through the fence, then read through the event (ASan, memcheck). */
/* The session of a pending async wait is whole; check calls the wait for a
 * value no signal reaches a hang (exit 1), nothing else. */
static void check_only_hang(const char *d)
{
	int st;

	st = nft(NF_TEST_ARGV("check", d));
	ck_assert_msg(st == 1 && strstr(out, "verdict: hang") && !strstr(out, "incomplete"),
		      "check %s: exit %d: %.1500s %.500s", d, st, out, err);
}

START_TEST(pending_async_wait_at_the_end)
{
	static const char *const modes[] = { "deterministic", "threaded" };
	char sc[700], d[700];
	FILE *f;

	snprintf(sc, sizeof(sc), "%s/async.nfs", tmp);
	f = fopen(sc, "w");
	ck_assert_ptr_nonnull(f);
	fputs(async_pending_scenario, f);
	fclose(f);
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		snprintf(d, sizeof(d), "%s/async%zu", tmp, i);
		nft_ok(NF_TEST_ARGV("record", "--mode", modes[i], "-o", d, sc));
		check_only_hang(d);
	}
	snprintf(d, sizeof(d), "%s/async-prog", tmp);
	nft_ok(NF_TEST_ARGV("record", "-o", d, "--", prog(), "async-pending"));
	check_only_hang(d);
}
END_TEST


/* ------------------------------------------------------------------ */
/* 6. the timeline cache is keyed on what the session is                 */

static void query_count(const char *dir, char *res, size_t len)
{
	nft_ok(NF_TEST_ARGV("query", "--csv", dir, "select count(*) from fence_ops"));
	snprintf(res, len, "%.60s", out);
}

START_TEST(cache_follows_files_replaced_by_older_copies)
{
	char other[700], a[64], b[64], c[64];

	snprintf(other, sizeof(other), "%s/other", tmp);
	nf_test_record("samples/overrun.nfs", other, NF_TEST_ARGV("--ground-truth"));
	query_count(good, a, sizeof(a));
	query_count(other, b, sizeof(b));
	ck_assert_str_ne(a, b);
	/* Older copies of another session's files over this one's, timestamps
	 * kept (cp -p, rsync -a, tar x): its timeline is now newer than them. */
	sh_ok("touch -d '2001-01-01' \"$1\"/metadata \"$1\"/events \"$1\"/truth && "
		"cp -p \"$1\"/metadata \"$1\"/events \"$1\"/truth \"$2\"/", NF_TEST_ARGV(other, good));
	query_count(good, c, sizeof(c));
	ck_assert_str_eq(c, b);
	/* And back, by the same means. */
	nf_test_record("samples/log-buffer-example.nfs", other,
		       NF_TEST_ARGV("--ground-truth", "--force"));
	sh_ok("touch -d '2001-01-01' \"$1\"/metadata \"$1\"/events \"$1\"/truth && "
		"cp -p \"$1\"/metadata \"$1\"/events \"$1\"/truth \"$2\"/", NF_TEST_ARGV(other, good));
	query_count(good, c, sizeof(c));
	ck_assert_str_eq(c, a);
}
END_TEST

START_TEST(cache_refuses_a_session_being_recorded)
{
	char d[700];

	snprintf(d, sizeof(d), "%s/live", tmp);
	/* The program records into d and sleeps, its recorder holding the
	 * session, until SIGTERM ends it cleanly. */
	int st = sh("cd \"$1\" && NFTRACE_RECORD_DIR=\"$2\" \"$3\" sleep > ready.txt & pid=$!; "
		"cd \"$1\"; i=0; while ! grep -q ready ready.txt 2>/dev/null && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; "
		"\"$NF\" query --csv \"$2\" 'select count(*) from fence_ops'; echo \"query=$?\"; "
		"kill -TERM $pid; wait $pid; echo \"prog=$?\"", NF_TEST_ARGV(tmp, d, prog()));
	ck_assert_msg(st == 0, "exit %d: %s", st, err);
	ck_assert_msg(strstr(out, "query=1") && strstr(out, "prog=0"), "%s / %s", out, err);
	ck_assert_msg(nf_test_count_lines(err) == 1 && strstr(err, "being recorded") && strstr(err, d),
		      "%s", err);
	/* Once the recording has ended, the whole session. */
	char c[64];
	query_count(d, c, sizeof(c));
	ck_assert_str_eq(c, "count(*)\n2\n");
}
END_TEST

START_TEST(cache_removes_temporaries_of_interrupted_builds)
{
	char c[64];

	sh_ok("head -c 100000 /dev/zero > \"$1/..timeline.db.tmp.AbC123\"", NF_TEST_ARGV(good));
	query_count(good, c, sizeof(c));
	ck_assert(!exists(good, "..timeline.db.tmp.AbC123"));
}
END_TEST


/* ------------------------------------------------------------------ */
/* 8. check: incomplete and mixed sessions                                */

START_TEST(check_calls_a_session_cut_at_a_packet_boundary_incomplete)
{
	char d[700];

	/* 20000 operations: several 256 KiB packets; keep the first. */
	snprintf(d, sizeof(d), "%s/cut", tmp);
	nft_ok(NF_TEST_ARGV("record", "-o", d, "--", prog(), "ops", "20000"));
	sh_ok("test $(stat -c %s \"$1/events\") -gt 524288 && truncate -s 262144 \"$1/events\"",
	      NF_TEST_ARGV(d));
	ck_assert_int_eq(nft(NF_TEST_ARGV("check", d)), 1);
	ck_assert_msg(strstr(out, "verdict: incomplete (events has 262144 of the "), "%s", out);
	ck_assert_int_eq(nft(NF_TEST_ARGV("check", "--json", d)), 1);
	ck_assert_msg(strstr(out, "\"verdict\": \"incomplete\"") && strstr(out, "\"incomplete\": \"events has"),
		      "%s", out);
}
END_TEST

START_TEST(check_calls_a_killed_recording_incomplete)
{
	char d[700];

	snprintf(d, sizeof(d), "%s/killed", tmp);
	sh("cd \"$1\" && NFTRACE_RECORD_DIR=\"$2\" \"$3\" sleep 20000 > ready.txt & pid=$!; "
	   "cd \"$1\"; i=0; while ! grep -q ready ready.txt 2>/dev/null && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; "
	   /* the committer finishes the session after its recorder died, holding
	    * metadata's lock until then: wait for it as a user would */
	   "kill -KILL $pid; wait $pid; flock -s -w 300 \"$2/metadata\" true; \"$NF\" check \"$2\"; echo \"check=$?\"",
	   NF_TEST_ARGV(tmp, d, prog()));
	ck_assert_msg(strstr(out, "verdict: incomplete (no end of recording") && strstr(out, "check=1"),
		      "%s / %s", out, err);
	/* The whole recording is not. */
	ck_assert_int_eq(nft(NF_TEST_ARGV("check", good)), 0);
	ck_assert_msg(strstr(out, "verdict: whole"), "%s", out);
}
END_TEST

START_TEST(check_refuses_metadata_and_events_of_two_recordings)
{
	static const char *const cmds[] = { "check", "info", "query" };
	char other[700];

	snprintf(other, sizeof(other), "%s/other", tmp);
	nf_test_record("samples/log-buffer-example.nfs", other,
		       NF_TEST_ARGV("--ground-truth", "--seed", "9"));
	sh_ok("cp \"$1/events\" \"$2/events\"", NF_TEST_ARGV(other, good));
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		refused_one_line(i == 2 ? nft(NF_TEST_ARGV(cmds[i], good, "select 1"))
					: nft(NF_TEST_ARGV(cmds[i], good)),
				 cmds[i], "another recording");
}
END_TEST


/* ------------------------------------------------------------------ */
/* 7. out-of-range timestamps                                            */

/* A GPU clock near 2^63 (every log timestamp and calibration beyond 2^62):
 * findings, NULL times, no signed overflow (UBSan in the sanitizer run). */
START_TEST(gpu_clock_near_2_63_gives_findings_and_null_times)
{
	char sc[700], d[700];

	snprintf(sc, sizeof(sc), "%s/big.nfs", tmp);
	snprintf(d, sizeof(d), "%s/big", tmp);
	char src[1024];
	nf_test_source_path(src, sizeof(src), "samples/log-buffer-example.nfs");
	sh_ok("sed 's/gpu_offset 1000000/gpu_offset 9223372036854775000/' \"$1\" > \"$2\" && "
	      "grep -q 'gpu_offset 9223372036854775000' \"$2\"", NF_TEST_ARGV(src, sc));
	nft_ok(NF_TEST_ARGV("record", "-o", d, sc));
	ck_assert_int_eq(nft(NF_TEST_ARGV("check", d)), 1);
	ck_assert_msg(strstr(out, "out_of_range: entry 0: end GPU timestamp 922337203685478") &&
		      !strstr(out, "verdict: whole"), "%s", out);
	ck_assert_msg(!strstr(err, "runtime error"), "%s", err);
	nft_ok(NF_TEST_ARGV("query", "--csv", d,
			    "select count(*), count(end_ns), count(observed_ns) from fence_ops; "
			    "select count(*) from anomalies where kind = 'out_of_range' and detail like "
			    "'%calibration pair%'"));
	ck_assert_msg(strstr(out, "2,0,0\n") && !strstr(out, "\n0\n"), "%s", out);
	ck_assert_msg(err[0] == '\0', "%s", err);
}
END_TEST


/* ------------------------------------------------------------------ */
/* 5. huge advance / at / latencies                                       */

/* One advance of almost an hour of session time with a read every
 * nanosecond: SIGINT and SIGTERM stop it (exit 130, the session closed). */
START_TEST(huge_advance_stops_on_sigint_and_sigterm)
{
	static const char *const sigs[] = { "INT", "TERM" };
	char sc[700], d[700];

	snprintf(sc, sizeof(sc), "%s/spin.nfs", tmp);
	sh_ok("printf 'os log_read_interval 1ns\\nadvance 3599s\\n' > \"$1\"", NF_TEST_ARGV(sc));
	for (size_t i = 0; i < 2; i++) {
		snprintf(d, sizeof(d), "%s/spin%zu", tmp, i);
		sh("timeout -s KILL 60 \"$NF\" record -o \"$1\" \"$2\" & p=$!; sleep 1; kill -$3 $p; wait $p; echo \"exit=$?\"",
		   NF_TEST_ARGV(d, sc, sigs[i]));
		ck_assert_msg(strstr(out, "exit=130"), "SIG%s: %s / %s", sigs[i], out, err);
		ck_assert_msg(strstr(err, "closed cleanly"), "SIG%s: %s", sigs[i], err);
	}
}
END_TEST

/* Beyond an hour of session time, and latencies beyond a second: refused
 * with one line (they ran for ever, filling the disk). */
START_TEST(huge_times_are_refused)
{
	static const struct { const char *text, *what; } cases[] = {
		{ "advance 18446744073709551615\\n", "past 1 hour" },
		{ "at 18446744073709551615\\n", "past 1 hour" },
		{ "advance 1800s\\nadvance 1801s\\n", "past 1 hour" },
		{ "adapter G caps native irq_latency 18446744073709551615\\n", "irq_latency must be at most 1s" },
		{ "adapter G caps native submit_latency 2s\\n", "submit_latency must be at most 1s" },
		/* Settings the engine refused only once the session existed (a
		 * directory with only its metadata was left). */
		{ "adapter G caps native stride 57\\n", "stride must be at most 56 bytes" },
		{ "adapter G caps native gpu_frequency 18446744073709551615\\n", "gpu_frequency must be between" },
		{ "adapter A1\\nadapter A2\\nadapter A3\\nadapter A4\\nadapter A5\\nadapter A6\\n"
		  "adapter A7\\nadapter A8\\nadapter A9\\nadapter A10\\nadapter A11\\nadapter A12\\n"
		  "adapter A13\\nadapter A14\\nadapter A15\\nadapter A16\\nadapter A17\\n", "too many adapters" },
		/* A start no reader could take in nanoseconds. */
		{ "session cpu_start 9223372036854000000\\n", "beyond 2^62 ns" },
	};
	char sc[700], d[700];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(sc, sizeof(sc), "%s/t%zu.nfs", tmp, i);
		snprintf(d, sizeof(d), "%s/t%zu", tmp, i);
		int st = sh("printf \"$1\" > \"$2\" && exec timeout -s KILL 60 \"$NF\" record -o \"$3\" \"$2\"",
			    NF_TEST_ARGV(cases[i].text, sc, d));
		refused_one_line(st, cases[i].text, cases[i].what);
		if (i >= 5)
			ck_assert_msg(access(d, F_OK) != 0, "%s: left a session directory", cases[i].text);
	}
}
END_TEST

/* A threaded runtime asked to advance 2^64-1 ns waits (it returned at once:
 * the end time wrapped around). */
START_TEST(threaded_advance_of_2_64_waits)
{
	char d[700];

	snprintf(d, sizeof(d), "%s/adv", tmp);
	sh("NFTRACE_RECORD_DIR=\"$1\" NFTRACE_MODE=threaded timeout 2 \"$2\" advance-max; echo \"exit=$?\"; "
		"grep -c 'mode = \"threaded\"' \"$1/metadata\"", NF_TEST_ARGV(d, prog()));
	ck_assert_msg(strstr(out, "exit=124\n1\n"), "%s / %s", out, err);
}
END_TEST


/* ------------------------------------------------------------------ */
/* 3. a program that forks after creating its runtime                    */

START_TEST(fork_after_runtime_creation_is_refused_clearly)
{
	char d[700];

	snprintf(d, sizeof(d), "%s/fork", tmp);
	int st = nft(NF_TEST_ARGV("record", "-o", d, "--", prog(), "fork", "10000"));
	ck_assert_msg(st == 1, "exit %d: %s", st, err);
	/* The program says what its child was told; nftrace's own line too. */
	const char *last = strstr(err, "nftrace record: ");
	ck_assert_msg(last && strstr(last, "forked from it, must create its own") &&
			      nf_test_count_lines(last) == 1, "%s", err);
	/* The parent's events are whole: its 5000 signals and 5000 waits. */
	nft_ok(NF_TEST_ARGV("query", "--csv", d, "select count(*) from fence_ops"));
	ck_assert_str_eq(out, "count(*)\n10000\n");
}
END_TEST


/* ------------------------------------------------------------------ */
/* 10. C1 controls from a session never reach the terminal                */

static void assert_no_c1(const char *what, const char *text)
{
	for (const unsigned char *u = (const unsigned char *)text; *u; u++)
		ck_assert_msg(!(u[0] == 0xc2 && u[1] >= 0x80 && u[1] <= 0x9f) && u[0] != 0x1b && u[0] != 0x07,
			      "%s: a control character at offset %zu: %s", what, (size_t)(u - (const unsigned char *)text),
			      text);
}

START_TEST(c1_controls_are_shown_as_question_marks)
{
	static const char *const cmds[] = { "check", "info", "query" };
	char d[700];

	snprintf(d, sizeof(d), "%s/c1", tmp);
	nft_ok(NF_TEST_ARGV("record", "-o", d, "--", prog(), "c1-names", "3"));
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		const char *args = cmds[i];

		if (i == 2)
			nft(NF_TEST_ARGV(cmds[i], d, "select name from queues"));
		else
			nft(NF_TEST_ARGV(cmds[i], d));
		assert_no_c1(args, out);
		assert_no_c1(args, err);
		if (i != 1)
			ck_assert_msg(strstr(out, i == 0 ? "C1?31mred?0;" : "C1?31mred?0;title?"), "%s: %s", args, out);
	}
	/* An error line quoting a C1 control (SQLite quotes the bad token). */
	ck_assert_int_eq(nft(NF_TEST_ARGV("query", d, "select x\302\233y from queues")), 1);
	assert_no_c1("error line", err);
	ck_assert_msg(nf_test_count_lines(err) == 1 && strstr(err, "x?y"), "%s", err);
}
END_TEST


/* ------------------------------------------------------------------ */
/* 9. the authorizer; smaller query items                                 */

/* nftrace query [FMT] GOOD SQL (fmt "": the table view). */
static int query(const char *fmt, const char *sql)
{
	return fmt[0] ? nft(NF_TEST_ARGV("query", fmt, good, sql)) : nft(NF_TEST_ARGV("query", good, sql));
}

START_TEST(fts3_tokenizer_and_pointer_functions_are_refused)
{
	static const char *const sqls[] = {
		"select hex(fts3_tokenizer('simple'))",
		"select fts3_tokenizer('simple', x'4141414141414141')",
		"select FTS3_Tokenizer('porter')",
		"select fts5(NULL)",
		"select load_extension('/nonexistent')",
	};

	for (size_t i = 0; i < sizeof(sqls) / sizeof(sqls[0]); i++) {
		refused_one_line(query("--csv", sqls[i]), sqls[i], "query refused: function");
		ck_assert_msg(out[0] == '\0', "%s: printed %s", sqls[i], out);
	}
	/* What stays allowed: pure and read-only functions, table-valued ones. */
	ck_assert_int_eq(query("--csv", "select abs(-1), length(hex(randomblob(4))), typeof(date('now'))"), 0);
	ck_assert_str_eq(out, "abs(-1),length(hex(randomblob(4))),typeof(date('now'))\n1,8,text\n");
	ck_assert_int_eq(query("--csv", "select value from json_each('[7,8]')"), 0);
	ck_assert_str_eq(out, "value\n7\n8\n");
	ck_assert_int_eq(query("--csv", "select name from pragma_table_info('queues') limit 1"), 0);
	ck_assert_str_eq(out, "name\nqueue\n");
	/* Pragmas that change anything stay refused, before or while running. */
	refused_one_line(query("", "pragma writable_schema = 1"), "writable_schema", "query refused");
	refused_one_line(query("", "select * from pragma_journal_mode"), "pragma_journal_mode", "query refused");
}
END_TEST

START_TEST(query_output_formats_hold_absurd_values)
{
	/* JSON: no key twice in an object. */
	ck_assert_int_eq(query("--json", "select 1 as a, 2 as a"), 0);
	ck_assert_str_eq(out, "[\n  {\"a\": 1, \"a:2\": 2}\n]\n");
	/* CSV as JSON: blobs hexadecimal, Inf empty (null), a NUL as '?'. */
	ck_assert_int_eq(query("--csv", "select x'00ff41' as b, 1e999 as i, char(65, 0, 66) as t"), 0);
	ck_assert_str_eq(out, "b,i,t\n00ff41,,A?B\n");
	ck_assert_int_eq(query("--json", "select 1e999 as i"), 0);
	ck_assert_str_eq(out, "[\n  {\"i\": null}\n]\n");
	/* Two SQL arguments: a usage error (2), not a missing session (1). */
	ck_assert_int_eq(nft(NF_TEST_ARGV("query", good, "select 1", "select 2")), 2);
	ck_assert_msg(nf_test_count_lines(err) == 1 && strstr(err, "is SQL, not a session DIR"), "%s", err);
}
END_TEST


/* ------------------------------------------------------------------ */
/* 12. signals sent to nftrace alone reach the program                    */

START_TEST(sigterm_and_sigint_to_nftrace_reach_the_program)
{
	static const char *const sigs[] = { "TERM", "INT" };
	char d[700];

	for (size_t i = 0; i < 2; i++) {
		snprintf(d, sizeof(d), "%s/sig%zu", tmp, i);
		/* kill names nftrace's pid only (not its group): before, it waited
		 * for a program that sleeps for ever. */
		/* $4: ready0.txt, ready1.txt */
		sh("cd \"$1\" && rm -f \"$4\"; \"$NF\" record -o \"$2\" -- \"$3\" sleep 100 > \"$4\" & p=$!; "
		   "i=0; while ! grep -q ready \"$4\" 2>/dev/null && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; "
		   "( sleep 30; c=$(pgrep -P $p); kill -KILL $p 2>/dev/null; [ -n \"$c\" ] && kill -KILL $c ) & w=$!; "
		   "kill -$5 $p; wait $p; echo \"exit=$?\"; kill $w 2>/dev/null",
		   NF_TEST_ARGV(tmp, d, prog(), i ? "ready1.txt" : "ready0.txt", sigs[i]));
		ck_assert_msg(strstr(out, "exit=130") && strstr(err, "closed cleanly"), "SIG%s: %s / %s", sigs[i],
			      out, err);
		nft(NF_TEST_ARGV("check", d));
		ck_assert_msg(!strstr(out, "incomplete"), "SIG%s: %s", sigs[i], out);
	}
}
END_TEST

/* A program that ran and exited 127 is not "cannot run program". */
START_TEST(program_exiting_127_ran)
{
	char d[700];

	snprintf(d, sizeof(d), "%s/e127", tmp);
	refused_one_line(nft(NF_TEST_ARGV("record", "-o", d, "--", prog(), "exit127")), "exit 127",
			 "program exited with status 127");
	refused_one_line(sh("\"$NF\" record -o \"$1/missing\" -- \"$1/no-such-program\"",
			 NF_TEST_ARGV(tmp)), "missing program",
			 "cannot run program: No such file or directory");
}
END_TEST


/* ------------------------------------------------------------------ */
/* 13. bad environment values are refused                                 */

START_TEST(bad_environment_values_are_refused)
{
	static const char *const bad[] = { "NFTRACE_SEED=abc", "NFTRACE_SEED=-5", "NFTRACE_SEED=",
					   "NFTRACE_SEED=18446744073709551616", "NFTRACE_MODE=bogus",
					   "NFTRACE_GROUND_TRUTH=xyz", "NFTRACE_GROUND_TRUTH=2" };
	char d[700];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(d, sizeof(d), "%s/env%zu", tmp, i);
		ck_assert_msg(sh("env \"$1\" NFTRACE_RECORD_DIR=\"$2\" \"$3\" ops 3",
			      NF_TEST_ARGV(bad[i], d, prog())) == 1, "%s: accepted: %s", bad[i],
			      err);
		char name[64];
		snprintf(name, sizeof(name), "%.*s", (int)(strchr(bad[i], '=') - bad[i]), bad[i]);
		ck_assert_msg(strstr(err, name), "%s: %s", bad[i], err);
		ck_assert_msg(!exists(d, "metadata"), "%s: a session was made", bad[i]);
	}
	/* Good values still record, with the seed they say. */
	snprintf(d, sizeof(d), "%s/envok", tmp);
	sh_ok("NFTRACE_SEED=4242 NFTRACE_MODE=deterministic NFTRACE_GROUND_TRUTH=1 "
		"NFTRACE_RECORD_DIR=\"$1\" \"$2\" ops 3 && grep -c 'seed = 4242;' \"$1/metadata\"", NF_TEST_ARGV(d, prog()));
	ck_assert_str_eq(out, "1\n");
}
END_TEST


/* ------------------------------------------------------------------ */
/* 11. stale tracefs instances of killed record --kernel runs              */

START_TEST(stale_kernel_instances_are_removed_by_the_next_command)
{
	if (access("/sys/kernel/tracing/instances", W_OK) != 0) {
		printf("SKIP: /sys/kernel/tracing/instances is not writable (needs root and tracefs)\n");
		return;
	}
	/* A pid that is gone, and an instance named after it, tracing on with
	 * an event enabled (what a SIGKILLed record --kernel leaves). */
	/* (Another nftrace running meanwhile, another test's, may be removing it
	 * at the same moment: removed all the same, a moment later; hence the
	 * short wait before calling it left.) */
	sh_ok("sh -c 'exit 0' & p=$!; wait $p; i=/sys/kernel/tracing/instances/nftrace-$p; "
		"mkdir $i && { echo 1 > $i/events/sched/sched_switch/enable; } 2>/dev/null; "
		"\"$NF\" info \"$1\" >/dev/null && "
		"for k in 1 2 3 4 5 6 7 8 9 10; do test -d $i || break; sleep 0.1; done; "
		"if test -d $i; then echo left; rmdir $i 2>/dev/null || true; else echo removed; fi", NF_TEST_ARGV(good));
	ck_assert_str_eq(out, "removed\n");
	/* A live process's instance stays. */
	sh_ok("i=/sys/kernel/tracing/instances/nftrace-$$; mkdir $i && \"$NF\" info \"$1\" >/dev/null; "
		"if test -d $i; then echo kept; rmdir $i 2>/dev/null || true; else echo removed; fi", NF_TEST_ARGV(good));
	ck_assert_str_eq(out, "kept\n");
}
END_TEST


/* A read-only session (read-only media) is queried with its fresh timeline;
 * without one, one line says why. A full disk during the build names the
 * file. Needs root to mount a tmpfs: skipped otherwise. */
START_TEST(read_only_and_full_session_directories)
{
	char m[700], src[1024];

	snprintf(m, sizeof(m), "%s/mnt", tmp);
	nf_test_source_path(src, sizeof(src), "samples/log-buffer-example.nfs");
	if (sh("mkdir \"$1\" && mount -t tmpfs -o size=4m tmpfs \"$1\" && umount \"$1\"",
	    NF_TEST_ARGV(m)) != 0) {
		printf("SKIP: cannot mount a tmpfs (needs root): %s", err);
		return;
	}
	int st = sh("set -e; cd \"$1\"; trap 'umount \"$2\"' EXIT; mount -t tmpfs -o size=4m tmpfs \"$2\"; N=\"$NF\"; "
		"$N record -o \"$2/a\" \"$3\" >/dev/null; $N record -o \"$2/b\" \"$3\" >/dev/null; "
		"$N query --csv \"$2/a\" 'select count(*) from fence_ops' >/dev/null; "
		"mount -o remount,ro \"$2\"; "
		"$N query --csv \"$2/a\" 'select count(*) from fence_ops'; "
		"if $N query \"$2/b\" 'select 1' 2>err.txt; then echo built; else cat err.txt; fi", NF_TEST_ARGV(tmp, m, src));
	ck_assert_msg(st == 0, "exit %d: %s / %s", st, out, err);
	ck_assert_msg(strstr(out, "count(*)\n2\n") && strstr(out, "/b: cannot build the timeline here (Read-only file system)"),
		      "%s", out);
	/* Full: 64 KiB hold the session, not its timeline. */
	st = sh("set -e; cd \"$1\"; trap 'umount \"$2\"' EXIT; mount -t tmpfs -o size=64k tmpfs \"$2\"; N=\"$NF\"; "
		"$N record -o \"$2/a\" \"$3\" >/dev/null; if $N query \"$2/a\" 'select 1' 2>err.txt; then echo built; "
		"else cat err.txt; fi; ls -A \"$2/a\" | tr '\\n' ' '; "
		"if $N record -o \"$2/p\" -- \"$4\" ops 3000 >out.txt 2>err.txt; then echo recorded; else cat err.txt; fi", NF_TEST_ARGV(tmp, m, src, prog()));
	ck_assert_msg(st == 0, "exit %d: %s / %s", st, out, err);
	ck_assert_msg(strstr(out, "/a/..timeline.db.tmp.") && strstr(out, "full"), "%s", out);
	ck_assert_msg(strstr(out, ".timeline.lock events metadata") && !strstr(out, " ..timeline"), "%s", out);
	/* And a program recording onto the full disk fails with the writer's line. */
	ck_assert_msg(strstr(out, "/p/events: write failed after") && strstr(out, "No space left on device") &&
			      !strstr(out, "recorded"), "%s", out);
}
END_TEST


/* record --kernel appends the kernel stream after the recorder closed the
 * session: the end of the recording is updated, once, and a cut kernel
 * stream is incomplete. Needs a writable tracefs: skipped otherwise. */
START_TEST(check_follows_an_appended_kernel_stream)
{
	char d[700], src[1024];

	if (access("/sys/kernel/tracing/instances", W_OK) != 0) {
		printf("SKIP: /sys/kernel/tracing/instances is not writable (needs root and tracefs)\n");
		return;
	}
	snprintf(d, sizeof(d), "%s/k", tmp);
	nf_test_source_path(src, sizeof(src), "samples/log-buffer-example.nfs");
	sh_ok("\"$NF\" record --kernel default -o \"$1\" \"$2\" >/dev/null && "
		"grep -c recorded_ \"$1/metadata\" && grep -c \"recorded_kernel_bytes = $(stat -c %s \"$1/kernel\");\" \"$1/metadata\" && "
		"\"$NF\" check \"$1\" | tail -n 1", NF_TEST_ARGV(d, src));
	ck_assert_msg(strncmp(out, "3\n1\nverdict: whole", 18) == 0, "%s", out);
	/* The kernel stream gone (its one packet: a cut one is corrupt). */
	sh("rm \"$1/kernel\" && \"$NF\" check \"$1\" | tail -n 1", NF_TEST_ARGV(d));
	ck_assert_msg(strstr(out, "verdict: incomplete (kernel has 0 of the"), "%s", out);
}
END_TEST

static Suite *reliability_suite(void)
{
	Suite *s = suite_create("reliability");
	TCase *tc = tcase_create("force");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	suite_add_tcase(s, tc);
	tcase_add_test(tc, force_keeps_a_folder_with_notes_and_metadata);
	tcase_add_test(tc, force_keeps_an_lttng_trace);
	tcase_add_test(tc, force_with_a_subfolder_removes_nothing);
	tcase_add_test(tc, force_with_a_foreign_file_in_our_session_removes_nothing);
	tcase_add_test(tc, force_replaces_our_own_session_and_its_timeline);
	tcase_add_test(tc, force_refuses_metadata_that_is_a_link_to_ours);
	tc = tcase_create("program");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	suite_add_tcase(s, tc);
	tcase_add_test(tc, program_under_a_file_size_limit_fails);
	tcase_add_test(tc, outputs_under_a_file_size_limit_fail_cleanly);
	tcase_add_test(tc, pending_async_wait_at_the_end);
	tcase_add_test(tc, fork_after_runtime_creation_is_refused_clearly);
	tcase_add_test(tc, c1_controls_are_shown_as_question_marks);
	tcase_add_test(tc, sigterm_and_sigint_to_nftrace_reach_the_program);
	tcase_add_test(tc, program_exiting_127_ran);
	tcase_add_test(tc, bad_environment_values_are_refused);
	tcase_add_test(tc, stale_kernel_instances_are_removed_by_the_next_command);
	tc = tcase_create("cache");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	suite_add_tcase(s, tc);
	tcase_add_test(tc, cache_follows_files_replaced_by_older_copies);
	tcase_add_test(tc, cache_refuses_a_session_being_recorded);
	tcase_add_test(tc, cache_removes_temporaries_of_interrupted_builds);
	tcase_add_test(tc, read_only_and_full_session_directories);
	tc = tcase_create("check");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	suite_add_tcase(s, tc);
	tcase_add_test(tc, check_calls_a_session_cut_at_a_packet_boundary_incomplete);
	tcase_add_test(tc, check_calls_a_killed_recording_incomplete);
	tcase_add_test(tc, check_refuses_metadata_and_events_of_two_recordings);
	tcase_add_test(tc, check_follows_an_appended_kernel_stream);
	tcase_add_test(tc, gpu_clock_near_2_63_gives_findings_and_null_times);
	tc = tcase_create("query");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	suite_add_tcase(s, tc);
	tcase_add_test(tc, fts3_tokenizer_and_pointer_functions_are_refused);
	tcase_add_test(tc, query_output_formats_hold_absurd_values);
	tc = tcase_create("time");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	suite_add_tcase(s, tc);
	tcase_add_test(tc, huge_advance_stops_on_sigint_and_sigterm);
	tcase_add_test(tc, huge_times_are_refused);
	tcase_add_test(tc, threaded_advance_of_2_64_waits);
	return s;
}

int main(void)
{
	return nf_test_main(reliability_suite());
}
