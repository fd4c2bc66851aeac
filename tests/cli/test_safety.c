/*
 * Safety and resource bounds of the nftrace CLI:
 * - symbolic links planted in a session are not followed: a .timeline.db link
 *   is replaced, never written through; a .timeline.lock link is refused and
 *   its target never created; a link to another session's fresh timeline is
 *   not read; record --force removes links, not their targets;
 * - files are created with safe permissions under umask 022, 077 and 000;
 * - sessions written with the CTF writer that claim absurd sizes (log capacity
 *   2^32 and 2^63, a header word claiming 2^63 entries written, 70000 logs)
 *   are read in bounded memory, with a finding or a one-line error, never by
 *   allocating what they claim.
 */
#include "nf_test.h"

#include "contract/ctf.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>

static char tmp[512], good[600], out[1 << 15], err[1 << 14];

/* Runs nftrace with args (no shell), its output in out and err: the exit status. */
static int nft(const char *const args[])
{
	return nf_test_nftrace_run(args, out, sizeof(out), err, sizeof(err));
}

/* nft, failing the test unless nftrace exits 0. */
static void nft_ok(const char *const args[])
{
	int st = nft(args);

	ck_assert_msg(st == 0, "nftrace %s failed (%d): %.1500s", args[0], st, err);
}

/* A shell script with its paths as "$1"... and nftrace as "$NF" (nf_test_sh); exit 0 or the test fails. */
static void sh_ok(const char *script, const char *const args[])
{
	int st = nf_test_sh(script, args, out, sizeof(out), err, sizeof(err));
	ck_assert_msg(st == 0, "%s failed (%d): %.1500s", script, st, err);
}

/* A command of the tables below: its words, "%s" standing for the session. */
#define NF_MAX_WORDS 8
typedef const char *const words_t[NF_MAX_WORDS];

/* Runs nftrace (under `timeout` when prefix is) with the words of w, "%s" replaced by dir. */
static int nft_words(const char *const prefix[], const words_t w, const char *dir)
{
	const char *argv[NF_MAX_WORDS + 8];
	size_t n = 0;

	for (size_t i = 0; prefix && prefix[i]; i++)
		argv[n++] = prefix[i];
	argv[n++] = nf_test_nftrace();
	for (size_t i = 0; i < NF_MAX_WORDS && w[i]; i++)
		argv[n++] = strcmp(w[i], "%s") ? w[i] : dir;
	argv[n] = NULL;
	return nf_test_exec(NULL, argv, out, sizeof(out), err, sizeof(err));
}

/* The words of w as one line, for messages. */
static const char *words_line(const words_t w, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < NF_MAX_WORDS && w[i] && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? " " : "", w[i]);
	return buf;
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

static void read_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, len - 1, f) : 0;

	buf[n] = '\0';
	if (f)
		fclose(f);
}

/* ------------------------------------------------------------------ */
/* symbolic links                                                      */

START_TEST(timeline_db_link_is_replaced_not_written)
{
	char precious[700], db[700], content[256];
	struct stat st;

	snprintf(precious, sizeof(precious), "%s/precious", tmp);
	snprintf(db, sizeof(db), "%s/.timeline.db", good);
	FILE *f = fopen(precious, "w");
	ck_assert_ptr_nonnull(f);
	fputs("do not touch\n", f);
	fclose(f);
	ck_assert_int_eq(symlink(precious, db), 0);
	nft_ok(NF_TEST_ARGV("query", "--csv", good, "select count(*) from fence_ops"));
	ck_assert_str_eq(out, "count(*)\n2\n");
	read_file(precious, content, sizeof(content));
	ck_assert_str_eq(content, "do not touch\n");
	ck_assert_int_eq(lstat(db, &st), 0);
	ck_assert_msg(S_ISREG(st.st_mode), ".timeline.db is still a link");
}
END_TEST

START_TEST(timeline_db_link_to_another_fresh_timeline_is_not_read)
{
	char other[700], db[700], target[800];

	/* Another session (more operations) with its own fresh timeline. */
	snprintf(other, sizeof(other), "%s/other", tmp);
	nf_test_record("samples/overrun.nfs", other, NULL);
	nft_ok(NF_TEST_ARGV("query", "--csv", other, "select count(*) from fence_ops"));
	ck_assert_str_ne(out, "count(*)\n2\n");
	snprintf(db, sizeof(db), "%s/.timeline.db", good);
	snprintf(target, sizeof(target), "%s/.timeline.db", other);
	ck_assert_int_eq(symlink(target, db), 0);
	nft_ok(NF_TEST_ARGV("query", "--csv", good, "select count(*) from fence_ops"));
	ck_assert_str_eq(out, "count(*)\n2\n");
}
END_TEST

START_TEST(lock_link_is_refused_and_target_not_created)
{
	char target[700], lock[700];
	struct stat st;

	snprintf(target, sizeof(target), "%s/created-elsewhere", tmp);
	snprintf(lock, sizeof(lock), "%s/.timeline.lock", good);
	ck_assert_int_eq(symlink(target, lock), 0);
	int st_ = nft(NF_TEST_ARGV("query", good, "select 1"));
	ck_assert_msg(st_ == 1, "exit %d: %s", st_, err);
	ck_assert_int_eq(nf_test_count_lines(err), 1);
	ck_assert_msg(strstr(err, ".timeline.lock") && strstr(err, "symbolic link"), "%s", err);
	ck_assert_msg(lstat(target, &st) != 0, "the lock's target was created");
}
END_TEST

START_TEST(stream_link_is_refused_by_every_reader)
{
	static words_t cmds[] = { { "info", "%s" }, { "check", "%s" }, { "query", "%s", "select 1" },
				  { "report", "%s", "-o", "x.png" } };
	char truth[700], x_png[700];

	snprintf(truth, sizeof(truth), "%s/truth", good);
	ck_assert_int_eq(unlink(truth), 0);
	ck_assert_int_eq(symlink("/etc/passwd", truth), 0);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		char args[1024];

		words_line(cmds[i], args, sizeof(args));
		/* report's x.png: under tmp, not the test's working directory */
		snprintf(x_png, sizeof(x_png), "%s/x.png", tmp);
		int st = i == 3 ? nft(NF_TEST_ARGV("report", good, "-o", x_png))
				: nft_words(NULL, cmds[i], good);
		ck_assert_msg(st == 1, "%s: exit %d: %s", args, st, err);
		ck_assert_msg(nf_test_count_lines(err) == 1 && strstr(err, "truth") &&
				      strstr(err, "symbolic link"),
			      "%s: %s", args, err);
		ck_assert_msg(!strstr(err, "root:"), "%s: leaked the link target's content: %s", args, err);
	}
}
END_TEST

/* The analyzer's own files planted as the wrong kind: a FIFO is replaced or
 * harmless (never blocked on), a directory is one clear error. */
START_TEST(analyzer_files_of_the_wrong_kind)
{
	static const struct { const char *make, *name; int want; } cases[] = {
		{ "mkfifo", ".timeline.db", 0 }, { "mkfifo", ".timeline.lock", 0 },
		{ "mkdir", ".timeline.db", 1 }, { "mkdir", ".timeline.lock", 1 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sh_ok("cd \"$1\" && rm -rf .timeline.db .timeline.lock && $2 \"$3\"",
		      NF_TEST_ARGV(good, cases[i].make, cases[i].name));
		int st = nf_test_sh("exec timeout -k 5 120 \"$NF\" query --csv \"$1\" 'select count(*) from fence_ops'",
				    NF_TEST_ARGV(good), out, sizeof(out), err, sizeof(err));
		ck_assert_msg(st == cases[i].want, "%s %s: exit %d: %s", cases[i].make, cases[i].name, st, err);
		if (st == 0)
			ck_assert_str_eq(out, "count(*)\n2\n");
		else
			ck_assert_msg(nf_test_count_lines(err) == 1 && strstr(err, cases[i].name), "%s %s: %s",
				      cases[i].make, cases[i].name, err);
	}
}
END_TEST

START_TEST(record_force_removes_links_not_targets)
{
	char precious[700], link[700], content[256];

	snprintf(precious, sizeof(precious), "%s/precious", tmp);
	snprintf(link, sizeof(link), "%s/events", good);
	FILE *f = fopen(precious, "w");
	ck_assert_ptr_nonnull(f);
	fputs("keep me\n", f);
	fclose(f);
	ck_assert_int_eq(unlink(link), 0);
	ck_assert_int_eq(symlink(precious, link), 0);
	nf_test_record("samples/log-buffer-example.nfs", good, NF_TEST_ARGV("--force"));
	read_file(precious, content, sizeof(content));
	ck_assert_str_eq(content, "keep me\n");
	struct stat st;
	ck_assert_int_eq(lstat(link, &st), 0);
	ck_assert_msg(S_ISREG(st.st_mode), "events is not a fresh plain file");
}
END_TEST

/* ------------------------------------------------------------------ */
/* permissions                                                         */

/* Every file nftrace creates under umask u: at most want for plain files,
 * never group/world-writable. */
static void check_modes(const char *umask_str, unsigned want_file, unsigned want_dir)
{
	char s[700];

	snprintf(s, sizeof(s), "%s/u%s", tmp, umask_str);
	char src[1024];
	nf_test_source_path(src, sizeof(src), "samples/log-buffer-example.nfs");
	sh_ok("umask \"$1\" && \"$NF\" record --ground-truth -o \"$2\" \"$3\" >/dev/null && "
	      "\"$NF\" query \"$2\" 'select 1' >/dev/null && \"$NF\" report \"$2\" -o \"$2.png\" && "
	      "stat -c '%a %n' \"$2\" \"$2\"/* \"$2\"/.timeline.db \"$2\"/.timeline.lock \"$2.png\"",
	      NF_TEST_ARGV(umask_str, s, src));
	for (char *l = out; *l; ) {
		unsigned mode;
		char name[1024];
		char *nl = strchr(l, '\n');

		ck_assert_int_eq(sscanf(l, "%o %1023s", &mode, name), 2);
		bool is_dir = strcmp(name, s) == 0;
		bool is_db = strstr(name, ".timeline.") != NULL;
		if (!strstr(name, ".png") || is_db)
			ck_assert_msg((mode & 022) == 0, "umask %s: %s is group/world-writable (%o)",
				      umask_str, name, mode);
		if (is_dir)
			ck_assert_msg((mode & ~want_dir) == 0, "umask %s: %s is %o, want at most %o", umask_str,
				      name, mode, want_dir);
		else if (!strstr(name, ".png"))
			ck_assert_msg((mode & ~want_file) == 0, "umask %s: %s is %o, want at most %o",
				      umask_str, name, mode, want_file);
		l = nl ? nl + 1 : l + strlen(l);
	}
}

START_TEST(safe_permissions_umask_022)
{
	check_modes("022", 0644, 0755);
}
END_TEST

START_TEST(safe_permissions_umask_077)
{
	check_modes("077", 0600, 0700);
}
END_TEST

START_TEST(safe_permissions_umask_000)
{
	/* Even with no umask: session files 0644, the directory 0755, the timeline
	 * and its lock not writable by others. (The picture is the user's own
	 * output and follows the umask, like any file a tool writes.) */
	check_modes("000", 0644, 0755);
}
END_TEST

/* ------------------------------------------------------------------ */
/* resource bounds: sessions that claim absurd sizes                   */

static const char *crafted_source = "test_safety";

static struct nf_ctf_writer *crafted_writer(const char *dir)
{
	struct nf_ctf_env_entry env[] = {
		{ "domain", false, 0, "nftrace" },
		{ "tool_version", false, 0, "crafted" },
		{ "schema_version", true, NF_SCHEMA_VERSION, NULL },
		{ "source", false, 0, crafted_source },
		{ "mode", false, 0, "deterministic" },
		{ "host", false, 0, "deterministic" },
		{ "seed", true, 1, NULL },
		{ "cpu_frequency", true, 10000000, NULL },
		{ "start_ticks", true, 0, NULL },
		{ "ground_truth", true, 0, NULL },
	};
	struct nf_ctf_writer_options o = { 0 };
	struct nf_ctf_writer *w = NULL;
	struct nf_error e;

	nf_error_clear(&e);
	o.cpu_frequency = 10000000;
	o.env = env;
	o.n_env = sizeof(env) / sizeof(env[0]);
	ck_assert_msg(nf_ctf_writer_create(dir, &o, &w, &e) == 0, "%s", e.msg);
	return w;
}

static void emit_set_log(struct nf_ctf_writer *w, uint64_t ts, uint32_t hwqueue, uint64_t capacity)
{
	struct nf_event ev = { .id = NF_EV_SET_LOG_BUFFER, .ts = ts };

	ev.f[NFF_SET_LOG_BUFFER_adapter] = 0;
	ev.f[NFF_SET_LOG_BUFFER_hwqueue] = hwqueue;
	ev.f[NFF_SET_LOG_BUFFER_log_type] = 2;
	ev.f[NFF_SET_LOG_BUFFER_epoch] = 0;
	ev.f[NFF_SET_LOG_BUFFER_capacity] = capacity;
	ck_assert_int_eq(nf_ctf_writer_emit(w, &ev), 0);
}

static void emit_log_read(struct nf_ctf_writer *w, uint64_t ts, uint32_t hwqueue, uint64_t header,
			  uint64_t capacity, uint32_t first_slot)
{
	struct nf_event ev = { .id = NF_EV_LOG_READ, .ts = ts };

	ev.f[NFF_LOG_READ_adapter] = 0;
	ev.f[NFF_LOG_READ_hwqueue] = hwqueue;
	ev.f[NFF_LOG_READ_log_type] = 2;
	ev.f[NFF_LOG_READ_epoch] = 0;
	ev.f[NFF_LOG_READ_header] = header;
	ev.f[NFF_LOG_READ_capacity] = capacity;
	ev.f[NFF_LOG_READ_first_slot] = first_slot;
	ev.f[NFF_LOG_READ_entry_count] = 0;
	ck_assert_int_eq(nf_ctf_writer_emit(w, &ev), 0);
}

static void close_writer(struct nf_ctf_writer *w)
{
	struct nf_error e;

	nf_error_clear(&e);
	ck_assert_msg(nf_ctf_writer_close(w, &e) == 0, "%s", e.msg);
}

/* Peak RSS of any child so far, in MiB. */
static long children_maxrss_mib(void)
{
	struct rusage ru;

	getrusage(RUSAGE_CHILDREN, &ru);
	return ru.ru_maxrss / 1024;
}

/* Runs check and query on a crafted session: each ends (exit 0, or 1 with one
 * line), none dies, and none takes more than a bounded amount of memory. */
static void read_bounded(const char *dir, const char *what, const char *expect)
{
	static words_t cmds[] = { { "check", "%s" },
				  { "query", "%s", "select kind, detail from anomalies" } };

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		char args[1024];

		words_line(cmds[i], args, sizeof(args));
		int st = nft_words(NF_TEST_ARGV("timeout", "-k", "5", "120"), cmds[i], dir);
		ck_assert_msg(st == 0 || st == 1, "[%s] %s: exit %d: %.1500s", what, args, st, err);
		ck_assert_msg(!strstr(err, "Sanitizer") && !strstr(err, "runtime error:"),
			      "[%s] %s: %.3000s", what, args, err);
		if (st == 1 && strncmp(args, "check", 5) != 0)
			ck_assert_msg(nf_test_count_lines(err) == 1, "[%s] %s: %.1500s", what, args, err);
		/* What the reader made of it: the finding or the bound, said. */
		ck_assert_msg(strstr(out, expect) || strstr(err, expect), "[%s] %s: no '%s' in: %.1500s %.1500s",
			      what, args, expect, out, err);
	}
	/* Generous for sanitizer builds; what these sessions claim would need
	 * hundreds of GiB. */
	ck_assert_msg(children_maxrss_mib() < 1024, "[%s] a reader took %ld MiB", what,
		      children_maxrss_mib());
}

START_TEST(log_capacity_of_2_to_the_32)
{
	char dir[700];

	snprintf(dir, sizeof(dir), "%s/cap32", tmp);
	struct nf_ctf_writer *w = crafted_writer(dir);
	emit_set_log(w, 10, 0x40000040, 1ull << 32);
	emit_log_read(w, 20, 0x40000040, (5ull << 32) | 7, 1ull << 32, 0);
	close_writer(w);
	read_bounded(dir, "capacity 2^32", "4294967296 outside 1..1048576");
}
END_TEST

START_TEST(log_capacity_of_2_to_the_63)
{
	char dir[700];

	snprintf(dir, sizeof(dir), "%s/cap63", tmp);
	struct nf_ctf_writer *w = crafted_writer(dir);
	emit_set_log(w, 10, 0x40000040, 1ull << 63);
	emit_log_read(w, 20, 0x40000040, UINT64_MAX, 1ull << 63, UINT32_MAX);
	close_writer(w);
	read_bounded(dir, "capacity 2^63", "9223372036854775808 outside 1..1048576");
}
END_TEST

START_TEST(header_claiming_2_to_the_63_entries)
{
	char dir[700];

	/* WraparoundCount 2^31, capacity 2^20: 2^51 entries claimed written, none read. */
	snprintf(dir, sizeof(dir), "%s/hdr63", tmp);
	struct nf_ctf_writer *w = crafted_writer(dir);
	emit_set_log(w, 10, 0x40000040, 1u << 20);
	emit_log_read(w, 20, 0x40000040, (1ull << 63) | 5, 1u << 20, 0);
	emit_log_read(w, 30, 0x40000040, UINT64_MAX, 1u << 20, 0);
	close_writer(w);
	read_bounded(dir, "header 2^63", "2251799812636677 entries");
}
END_TEST

START_TEST(seventy_thousand_logs)
{
	char dir[700];

	snprintf(dir, sizeof(dir), "%s/logs", tmp);
	struct nf_ctf_writer *w = crafted_writer(dir);
	for (uint32_t q = 0; q < 70000; q++)
		emit_set_log(w, 10 + q, 0x40000000 + q * 64, 1u << 20);
	close_writer(w);
	read_bounded(dir, "70000 logs of 2^20 entries", "logs/events: event #65536: more than 65536 logs");
}
END_TEST

/* A session whose strings are not UTF-8 (a queue name, the source) in a
 * directory whose name is not either: report draws it, query --json stays
 * valid UTF-8 (U+FFFD for the bad bytes). */
START_TEST(foreign_strings_are_drawn_and_escaped)
{
	char dir[700];
	struct nf_event ev = { .id = NF_EV_ADAPTER_START, .ts = 1 };

	snprintf(dir, sizeof(dir), "%s/caf\xe9", tmp);
	/* An escape sequence that would retitle a terminal, in the source. */
	crafted_source = "\x1b]0;pwned\x07 \xff";
	struct nf_ctf_writer *w = crafted_writer(dir);
	ck_assert_int_eq(nf_ctf_writer_emit(w, &ev), 0);
	struct nf_event q = { .id = NF_EV_HWQUEUE_START, .ts = 2 };
	q.f[NFF_HWQUEUE_START_hwqueue] = 0x40000040;
	q.str = "Q\xff\xfe\x01name\xe2\x82";
	ck_assert_int_eq(nf_ctf_writer_emit(w, &q), 0);
	struct nf_event sg = { .id = NF_EV_FENCE_SIGNAL_QUEUED, .ts = 3 };
	sg.f[NFF_FENCE_SIGNAL_QUEUED_hwqueue] = 0x40000040;
	sg.f[NFF_FENCE_SIGNAL_QUEUED_value] = 1;
	ck_assert_int_eq(nf_ctf_writer_emit(w, &sg), 0);
	close_writer(w);
	for (int i = 0; i < 2; i++) {
		char r[700];

		snprintf(r, sizeof(r), "%s/r.%s", tmp, i ? "svg" : "png");
		nft_ok(NF_TEST_ARGV("report", dir, "-o", r));
	}
	nft_ok(NF_TEST_ARGV("query", "--json", dir, "select name from queues"));
	ck_assert_msg(strstr(out, "\"Q\\ufffd\\ufffd\\u0001name\\ufffd\\ufffd\"") != NULL, "%s", out);
	for (const unsigned char *u = (const unsigned char *)out; *u; u++)
		ck_assert_msg(*u < 0x80, "a raw byte 0x%02x in JSON: %s", *u, out);
	/* Text for a terminal (info, the query table) carries no control byte. */
	static words_t tty[] = { { "info", "%s" }, { "query", "%s", "select name from queues" } };
	for (size_t i = 0; i < 2; i++) {
		char args[1024];

		words_line(tty[i], args, sizeof(args));
		ck_assert_msg(nft_words(NULL, tty[i], dir) == 0, "%s: %s", args, err);
		for (const unsigned char *u = (const unsigned char *)out; *u; u++)
			ck_assert_msg(*u >= 0x20 || *u == '\n', "%s: control byte 0x%02x in: %s", args, *u, out);
		ck_assert_msg(strstr(out, i ? "?name" : "]0;pwned"), "%s: %s", args, out);
	}
}
END_TEST

/* A long loop without GPU operations (real time in threaded mode: 100 s)
 * still notices SIGINT and closes the session. */
START_TEST(opless_loop_notices_sigint)
{
	char scen[700], dir[700];

	snprintf(scen, sizeof(scen), "%s/loop.nfs", tmp);
	snprintf(dir, sizeof(dir), "%s/loop", tmp);
	FILE *f = fopen(scen, "w");
	ck_assert_ptr_nonnull(f);
	fputs("adapter GPU\nqueue Q adapter GPU\nrepeat 100000 {\n advance 1ms\n}\n", f);
	fclose(f);
	int st = nf_test_sh("timeout --preserve-status -s INT 2 \"$NF\" record --mode threaded -o \"$1\" \"$2\"",
			    NF_TEST_ARGV(dir, scen), out, sizeof(out), err, sizeof(err));
	ck_assert_msg(st == 130, "exit %d (130 expected): %.1500s", st, err);
}
END_TEST

static Suite *safety_suite(void)
{
	Suite *s = suite_create("safety");
	TCase *tc = tcase_create("safety");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	suite_add_tcase(s, tc);
	tcase_add_test(tc, timeline_db_link_is_replaced_not_written);
	tcase_add_test(tc, timeline_db_link_to_another_fresh_timeline_is_not_read);
	tcase_add_test(tc, lock_link_is_refused_and_target_not_created);
	tcase_add_test(tc, stream_link_is_refused_by_every_reader);
	tcase_add_test(tc, record_force_removes_links_not_targets);
	tcase_add_test(tc, analyzer_files_of_the_wrong_kind);
	tcase_add_test(tc, safe_permissions_umask_022);
	tcase_add_test(tc, safe_permissions_umask_077);
	tcase_add_test(tc, safe_permissions_umask_000);
	/* A second case (ctest test_safety_bounds, CK_RUN_CASE=bounds). */
	tc = tcase_create("bounds");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	suite_add_tcase(s, tc);
	tcase_add_test(tc, log_capacity_of_2_to_the_32);
	tcase_add_test(tc, log_capacity_of_2_to_the_63);
	tcase_add_test(tc, header_claiming_2_to_the_63_entries);
	tcase_add_test(tc, seventy_thousand_logs);
	tcase_add_test(tc, opless_loop_notices_sigint);
	tcase_add_test(tc, foreign_strings_are_drawn_and_escaped);
	return s;
}

int main(void)
{
	return nf_test_main(safety_suite());
}
