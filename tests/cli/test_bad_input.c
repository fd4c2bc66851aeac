/*
 * Table-driven bad-input test of every nftrace command: each bad
 * input is prepared in a fresh directory by a shell snippet, the command runs
 * under a timeout, and the test asserts that it fails with exactly one line on
 * stderr naming the file and what is wrong, exit status 1 or 2, no signal
 * death, no sanitizer report, no hang, nothing on stdout and no output file
 * (or session) left behind half-written.
 *
 * Four tables: bad sessions (crossed with info, report, query, and check when
 * the binary has it), bad scenarios and output directories (record), bad SQL
 * files (query -f) and bad output paths (report). Commands registered later
 * (check, import) are found at run time in `nftrace help`.
 */
#include "nf_test.h"

#include <stdbool.h>
#include <sys/resource.h>
#include <sys/stat.h>

/* Seconds before a case counts as a hang (generous: sanitizer builds are slow). */
#define CASE_TIMEOUT 120
#define CASE_TIMEOUT_S "120"

static char tmp[512], good[600], good_nt[600];
static char cmd[16384], out[1 << 14], err[1 << 14];

/* Runs nftrace with args (no shell), its output in out and err: the exit status. */
static int nft(const char *const args[])
{
	return nf_test_nftrace_run(args, out, sizeof(out), err, sizeof(err));
}
static bool have_check, have_import;

/* A shell prelude every setup snippet gets: G is a good session (with a truth
 * stream), GN one without, N the nftrace binary, flip PATH OFFSET BYTE writes
 * one byte (octal escape, e.g. '\377') in place. */
static const char *prelude =
	"set -e; flip() { printf \"$3\" | dd of=\"$1\" bs=1 seek=\"$2\" conv=notrunc status=none; }; ";

/* ------------------------------------------------------------------ */
/* the tables                                                          */

/* A bad session: setup makes ./b (or the case uses dir instead). */
struct bad_session {
	const char *what;
	const char *setup;
	const char *dir;       /* the session path given (default "b") */
	const char *names;     /* what the error line must name (default: the dir) */
};

/* Copies of the good sessions, trace files only (not a timeline built by an earlier case). */
#define COPY "mkdir b; cp \"$G\"/* b/; "
#define COPYNT "mkdir b; cp \"$GN\"/* b/; "

static const struct bad_session bad_sessions[] = {
	{ "missing directory", "", "b", NULL },
	{ "empty directory", "mkdir b", NULL, NULL },
	{ "a regular file instead of a directory", "echo hello > b", NULL, NULL },
	{ "a scenario file instead of a directory", "cp \"$NF_SOURCE_DIR/samples/overrun.nfs\" b", NULL, NULL },
	{ "/dev/zero instead of a directory", "", "/dev/zero", NULL },
	{ "/dev/null instead of a directory", "", "/dev/null", NULL },
	{ "metadata missing", COPY "rm b/metadata", NULL, NULL },
	{ "metadata empty", COPY ": > b/metadata", NULL, "b/metadata" },
	{ "metadata truncated in the middle", COPY "truncate -s 3000 b/metadata", NULL, "b/metadata" },
	{ "metadata truncated to its first line", COPY "truncate -s 8 b/metadata", NULL, "b/metadata" },
	{ "metadata is binary garbage", COPY "head -c 4096 /dev/urandom > b/metadata", NULL, "b/metadata" },
	{ "metadata is packetized-magic garbage",
	  COPY "printf '\\127\\035\\321\\165' > b/metadata; head -c 4000 /dev/urandom >> b/metadata", NULL, "b/metadata" },
	{ "metadata is a directory", COPY "rm b/metadata; mkdir b/metadata", NULL, NULL },
	{ "metadata is a FIFO", COPY "rm b/metadata; mkfifo b/metadata", NULL, NULL },
	{ "metadata is a symlink to /dev/zero", COPY "ln -sf /dev/zero b/metadata", NULL, "metadata" },
	{ "metadata from another tool (JSON)", COPY "echo '{\"traceEvents\": []}' > b/metadata", NULL, "b/metadata" },
	{ "metadata from another tool (LTTng-like CTF env)",
	  COPY "sed -i -e 's/domain = \"nftrace\";/domain = \"ust\"; tracer_name = \"lttng-ust\";/' "
	  "-e '/schema_version/d' -e '/cpu_frequency = /d' b/metadata", NULL, NULL },
	{ "metadata with a broken TSDL type", COPY "sed -i 's/uint64_t content_size/uint64_x content_size/' b/metadata", NULL, "b/metadata" },
	{ "huge sparse metadata", COPY "rm b/metadata; truncate -s 64G b/metadata", NULL, "b/metadata" },
	{ "no stream files", COPY "rm b/events b/truth", NULL, NULL },
	{ "only stream is empty", COPYNT ": > b/events", NULL, NULL },
	{ "stream truncated inside the packet header", COPY "truncate -s 100 b/events", NULL, NULL },
	{ "stream truncated inside a packet", COPY "truncate -s 500 b/events", NULL, NULL },
	{ "stream magic flipped", COPY "flip b/events 0 '\\000'", NULL, NULL },
	{ "stream id flipped", COPY "flip b/events 20 '\\007'", NULL, NULL },
	{ "packet content size absurd", COPY "flip b/events 47 '\\177'", NULL, NULL },
	{ "packet size absurd (2^63 bits)", COPY "flip b/events 55 '\\177'", NULL, NULL },
	{ "event id flipped", COPY "flip b/events 73 '\\377'", NULL, NULL },
	{ "stream is binary garbage", COPY "head -c 5000 /dev/urandom > b/events", NULL, NULL },
	{ "stream is a huge sparse file", COPY "rm b/events; truncate -s 100G b/events", NULL, NULL },
	{ "stream is a directory", COPY "rm b/truth; mkdir b/truth", NULL, "truth" },
	{ "stream is a FIFO", COPY "rm b/truth; mkfifo b/truth", NULL, "truth" },
	{ "stream is a symlink to /etc/passwd", COPY "ln -sf /etc/passwd b/truth", NULL, "truth" },
	{ "stream is a symlink to /dev/zero", COPY "ln -sf /dev/zero b/truth", NULL, "truth" },
	{ "metadata is a symlink to another session's", COPY "mkdir other; cp \"$G\"/* other/; ln -sf \"$PWD/other/metadata\" b/metadata",
	  NULL, "metadata" },
	{ "an extra file of another tool in the session", COPY "echo 'notes' > b/README.txt", NULL, "README.txt" },
};

/* A bad scenario for record: setup makes ./x.nfs (or the case names a path). */
struct bad_scenario {
	const char *what;
	const char *setup;
	const char *path;      /* default "x.nfs" */
	const char *out;       /* -o (default "s") */
	const char *names;     /* default: path */
};

static const struct bad_scenario bad_scenarios[] = {
	{ "missing file", "", NULL, NULL, NULL },
	{ "empty file", ": > x.nfs", NULL, NULL, NULL },
	{ "only comments", "printf '# nothing\\n\\n# here\\n' > x.nfs", NULL, NULL, NULL },
	{ "binary garbage", "head -c 3000 /dev/urandom > x.nfs", NULL, NULL, NULL },
	{ "a NUL byte in a line", "printf 'adapter GPU\\nqueue Q\\000 adapter GPU\\n' > x.nfs", NULL, NULL, NULL },
	{ "UTF-8 name", "printf 'adapter G\\303\\251PU\\n' > x.nfs", NULL, NULL, NULL },
	{ "truncated in the middle of a statement",
	  "head -c 560 \"$NF_SOURCE_DIR/samples/log-buffer-example.nfs\" > x.nfs; echo ' adapter' >> x.nfs", NULL, NULL, NULL },
	{ "truncated inside a repeat", "printf 'adapter GPU\\nqueue Q adapter GPU\\nfence F adapter GPU\\nrepeat 3 {\\n signal Q F 1\\n' > x.nfs",
	  NULL, NULL, NULL },
	{ "one line of 1 MiB", "head -c 1048576 /dev/zero | tr '\\000' a > x.nfs", NULL, NULL, NULL },
	{ "huge sparse file", "truncate -s 50G x.nfs", NULL, NULL, NULL },
	{ "/dev/zero (endless)", "", "/dev/zero", NULL, NULL },
	{ "/dev/urandom (endless)", "", "/dev/urandom", NULL, NULL },
	{ "a directory", "mkdir x.nfs", NULL, NULL, NULL },
	{ "a session's CTF metadata (wrong kind)", "cp \"$G/metadata\" x.nfs", NULL, NULL, NULL },
	{ "a CTF stream (wrong kind)", "cp \"$G/events\" x.nfs", NULL, NULL, NULL },
	{ "a number beyond 64 bits", "printf 'adapter GPU gpu_offset 99999999999999999999999\\n' > x.nfs", NULL, NULL, NULL },
	{ "repeat nested too deeply",
	  "for i in 1 2 3 4 5 6 7 8 9; do echo 'repeat 2 {'; done > x.nfs; for i in 1 2 3 4 5 6 7 8 9; do echo '}'; done >> x.nfs",
	  NULL, NULL, NULL },
	{ "too many names", "i=0; while [ $i -lt 4100 ]; do echo \"adapter A$i caps none\"; i=$((i+1)); done > x.nfs", NULL, NULL, NULL },
	{ "an expression with too many terms", "printf 'adapter GPU\\nqueue Q adapter GPU\\nfence F adapter GPU\\nsignal Q F "
	  "1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1\\n' > x.nfs", NULL, NULL, NULL },
	/* Resource bounds: refused before the session is created. */
	{ "nested repeats of 10^9 x 10^9 operations",
	  "printf 'adapter GPU\\nqueue Q adapter GPU\\nfence F adapter GPU\\nrepeat 1000000000 as $a {\\n"
	  " repeat 1000000000 as $i {\\n  signal Q F $a*1000000000+$i+1\\n  advance 1us\\n }\\n}\\n' > x.nfs", NULL, NULL, NULL },
	{ "an empty repeat of 2^64-1 iterations",
	  "printf 'adapter GPU\\nqueue Q adapter GPU\\nrepeat 18446744073709551615 {\\n}\\n' > x.nfs", NULL, NULL, NULL },
	/* Bounds met while running: the session so far is closed, the error names the line. */
	{ "4M signals queued behind waits never satisfied",
	  "printf 'adapter GPU\\nfence F adapter GPU\\nfence G adapter GPU\\nqueue Q1 adapter GPU\\n"
	  "queue Q2 adapter GPU node 1\\nwait Q1 F 1\\nwait Q2 F 1\\nrepeat 2100000 as $i {\\n signal Q1 G $i+1\\n"
	  " signal Q2 G $i+1\\n}\\n' > x.nfs", NULL, "s", "x.nfs:10" },
	{ "a repeat count from a loop variable past 10^8 statements",
	  "printf 'adapter GPU\\nqueue Q adapter GPU\\nrepeat 100 as $a {\\n repeat $a*100000 {\\n  advance 1ns\\n }\\n}\\n' > x.nfs",
	  NULL, "s", "x.nfs:5" },
	{ "tracing log size of 2^32-1 entries",
	  "printf 'os tracing on tracing_log_entries 4294967295\\nadapter GPU\\nqueue Q adapter GPU\\nfence F adapter GPU\\n"
	  "signal Q F 1\\n' > x.nfs", NULL, NULL, NULL },
	{ "log size of 2^32 entries",
	  "printf 'adapter GPU log_entries 4294967296\\nqueue Q adapter GPU\\n' > x.nfs", NULL, NULL, NULL },
	/* Wrong kinds of output directory (the scenario is good). */
	{ "output is a regular file", "cp \"$NF_SOURCE_DIR/samples/overrun.nfs\" x.nfs; echo data > out", NULL, "out", "out" },
	{ "output is /dev/null", "cp \"$NF_SOURCE_DIR/samples/overrun.nfs\" x.nfs", NULL, "/dev/null", "/dev/null" },
	{ "output is a directory of other files",
	  "cp \"$NF_SOURCE_DIR/samples/overrun.nfs\" x.nfs; mkdir out; echo keep > out/mine.txt", NULL, "out", "out" },
	{ "output's parent is missing", "cp \"$NF_SOURCE_DIR/samples/overrun.nfs\" x.nfs", NULL, "no/such/dir", "no/such" },
	{ "output is a symlink to a directory",
	  "cp \"$NF_SOURCE_DIR/samples/overrun.nfs\" x.nfs; mkdir real; ln -s real out", NULL, "out", "out" },
};

/* A bad SQL file for query -f. */
struct bad_sql {
	const char *what;
	const char *setup;
	const char *path;      /* default "q.sql" */
};

static const struct bad_sql bad_sqls[] = {
	{ "missing file", "", NULL },
	{ "empty file", ": > q.sql", NULL },
	{ "binary garbage", "head -c 3000 /dev/urandom > q.sql", NULL },
	{ "a NUL byte inside", "printf 'select 1;\\000select 2;' > q.sql", NULL },
	{ "truncated statement", "printf 'select id, queue from fence_ops where' > q.sql", NULL },
	{ "larger than 1 MiB", "head -c 2000000 /dev/zero | tr '\\000' ' ' > q.sql; echo 'select 1;' >> q.sql", NULL },
	{ "huge sparse file", "truncate -s 10G q.sql", NULL },
	{ "/dev/zero (endless)", "", "/dev/zero" },
	{ "a directory", "mkdir q.sql", NULL },
	{ "a PNG image (wrong kind)", "cp \"$NF_SOURCE_DIR/docs/log-buffer-example.png\" q.sql", NULL },
};

/* A bad output path for report (the session is good). */
struct bad_report_out {
	const char *what;
	const char *setup;
	const char *path;
	const char *names;     /* default: path */
};

static const struct bad_report_out bad_report_outs[] = {
	{ "an existing directory", "mkdir out.png", "out.png", NULL },
	{ "an unknown extension", "", "out.bmp", NULL },
	{ "no extension", "", "out", NULL },
	{ "a missing parent directory", "", "no/such/out.png", "no/such/out.png" },
	{ "a full disk (/dev/full)", "ln -s /dev/full full.png", "full.png", NULL },
	{ "a full disk for SVG (/dev/full)", "ln -s /dev/full full.svg", "full.svg", NULL },
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------ */
/* running one case                                                    */

/* Makes a fresh directory for one case and runs its setup there. The tables
 * are shell text (eval'd); the paths come in as parameters, never quoted in. */
static void case_dir(char *buf, size_t len, const char *tag, size_t i, const char *setup)
{
	snprintf(buf, len, "%s/%s-%zu", tmp, tag, i);
	ck_assert_msg(mkdir(buf, 0755) == 0, "mkdir %s failed", buf);
	if (setup && *setup) {
		snprintf(cmd, sizeof(cmd), "%s %s", prelude, setup);
		int st = nf_test_sh("cd \"$1\" && G=\"$2\" GN=\"$3\" && eval \"$4\"",
				    NF_TEST_ARGV(buf, good, good_nt, cmd), out, sizeof(out), err,
				    sizeof(err));
		ck_assert_msg(st == 0, "setup of %s-%zu failed (%d): %.1500s", tag, i, st, err);
	}
}

/* Runs nftrace in dir under a timeout with args, shell words from the tables (eval'd). */
static int nft_in(const char *dir, const char *args)
{
	return nf_test_sh("cd \"$1\" && eval \"exec timeout -k 5 $2 \\\"\\$NF\\\" $3\"",
			  NF_TEST_ARGV(dir, CASE_TIMEOUT_S, args), out, sizeof(out), err,
			  sizeof(err));
}

/*
 * Runs `nftrace ARGS` in dir under a timeout and asserts the bad-input
 * contract. what names the case in failure messages.
 */
static void expect_one_line_failure(const char *dir, const char *args, const char *names,
				    const char *what)
{
	int st = nft_in(dir, args);

	ck_assert_msg(st != 124 && st != 137, "[%s] nftrace %s: hung (killed after %d s)", what, args,
		      CASE_TIMEOUT);
	ck_assert_msg(st < 128, "[%s] nftrace %s: died of signal %d; stderr: %.1500s", what, args,
		      st - 128, err);
	ck_assert_msg(!strstr(err, "Sanitizer") && !strstr(err, "runtime error:"),
		      "[%s] nftrace %s: sanitizer report: %.3000s", what, args, err);
	ck_assert_msg(st == 1 || st == 2, "[%s] nftrace %s: exit %d, expected 1 or 2; stdout: %.300s stderr: %.1500s",
		      what, args, st, out, err);
	ck_assert_msg(nf_test_count_lines(err) == 1 && err[strlen(err) - 1] == '\n',
		      "[%s] nftrace %s: expected exactly one line on stderr, got: %.1500s", what, args, err);
	ck_assert_msg(strncmp(err, "nftrace ", 8) == 0, "[%s] nftrace %s: error does not start with 'nftrace': %s",
		      what, args, err);
	const char *at = strstr(err, names);
	ck_assert_msg(at != NULL, "[%s] nftrace %s: error does not name '%s': %s", what, args, names, err);
	/* After the name: something that says what is wrong. */
	const char *rest = at + strlen(names);
	ck_assert_msg(strlen(rest) > 8 || (size_t)(at - err) > strlen("nftrace record: ") + 8,
		      "[%s] nftrace %s: error does not say what is wrong: %s", what, args, err);
	ck_assert_msg(out[0] == '\0', "[%s] nftrace %s: printed on stdout despite failing: %.500s", what,
		      args, out);
}

static bool path_exists(const char *dir, const char *rel)
{
	char p[2048];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	return lstat(p, &st) == 0;
}

/* ------------------------------------------------------------------ */
/* tests                                                               */

static void setup_sessions(void)
{
	char src[1024];

	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(good, sizeof(good), "%s/good", tmp);
	snprintf(good_nt, sizeof(good_nt), "%s/good-nt", tmp);
	nf_test_source_path(src, sizeof(src), "samples/log-buffer-example.nfs");
	int st = nf_test_sh("\"$NF\" record --ground-truth -o \"$1\" \"$2\" && \"$NF\" record -o \"$3\" \"$2\"",
			    NF_TEST_ARGV(good, src, good_nt), out, sizeof(out), err, sizeof(err));
	ck_assert_msg(st == 0, "recording the good sessions failed: %s", err);
	/* check and import arrive with other work: use them when registered. */
	ck_assert_int_eq(nft(NF_TEST_ARGV("help")), 0);
	have_check = strstr(out, "   check ") != NULL;
	have_import = strstr(out, "   import ") != NULL;
}

static void teardown_sessions(void)
{
	nf_test_rmtree(tmp);
}

/* The session commands: %s is the session path. */
static const char *const session_cmds[] = {
	"info '%s'",
	"report '%s' -o out.png",
	"query '%s' 'select count(*) from fence_ops'",
	"query --json '%s' '%s' 'select 1'",  /* a good session first, the bad one second */
	"check '%s'",
};

/* Loop index i: session i / (number of commands), command i % that. */
START_TEST(bad_session)
{
	const struct bad_session *c = &bad_sessions[_i / (int)N_OF(session_cmds)];
	size_t k = (size_t)_i % N_OF(session_cmds);
	char dir[1024], args[2048], what[512];

	if (strncmp(session_cmds[k], "check", 5) == 0 && !have_check)
		return;
	case_dir(dir, sizeof(dir), "session", (size_t)_i, c->setup);
	const char *path = c->dir ? c->dir : "b";
	if (k == 3)
		snprintf(args, sizeof(args), session_cmds[k], good, path);
	else
		snprintf(args, sizeof(args), session_cmds[k], path);
	snprintf(what, sizeof(what), "session: %s", c->what);
	expect_one_line_failure(dir, args, c->names ? c->names : path, what);
	/* No picture of a session that could not be read. */
	ck_assert_msg(!path_exists(dir, "out.png"), "[%s] report left out.png behind", what);
}
END_TEST

START_TEST(bad_scenario)
{
	const struct bad_scenario *c = &bad_scenarios[_i];
	char dir[1024], args[2048], what[512];
	const char *path = c->path ? c->path : "x.nfs", *o = c->out ? c->out : "s";

	case_dir(dir, sizeof(dir), "scenario", (size_t)_i, c->setup);
	snprintf(args, sizeof(args), "record -o '%s' '%s'", o, path);
	snprintf(what, sizeof(what), "record: %s", c->what);
	expect_one_line_failure(dir, args, c->names ? c->names : path, what);
	/* A refused scenario leaves no session; an output that was there is untouched. */
	if (!c->out)
		ck_assert_msg(!path_exists(dir, "s"), "[%s] a session was created", what);
	if (c->out && !strcmp(c->out, "out") && path_exists(dir, "out/mine.txt"))
		ck_assert_msg(!path_exists(dir, "out/metadata"), "[%s] wrote into another directory", what);
	if (c->out && !strcmp(c->out, "out") && path_exists(dir, "real"))
		ck_assert_msg(!path_exists(dir, "real/metadata"), "[%s] recorded through a symlink", what);
	/* A bound is a clear error long before memory runs out (what these
	 * scenarios would take without one: from 4.6 GB to far beyond any machine). */
	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	ck_assert_msg(ru.ru_maxrss < 1024L * 1024, "[%s] the recorder took %ld MiB", what, ru.ru_maxrss / 1024);
}
END_TEST

START_TEST(bad_sql_file)
{
	const struct bad_sql *c = &bad_sqls[_i];
	char dir[1024], args[2048], what[512];
	const char *path = c->path ? c->path : "q.sql";

	case_dir(dir, sizeof(dir), "sql", (size_t)_i, c->setup);
	snprintf(args, sizeof(args), "query '%s' -f '%s'", good, path);
	snprintf(what, sizeof(what), "query -f: %s", c->what);
	expect_one_line_failure(dir, args, path, what);
}
END_TEST

START_TEST(bad_report_output)
{
	const struct bad_report_out *c = &bad_report_outs[_i];
	char dir[1024], args[2048], what[512];

	case_dir(dir, sizeof(dir), "report", (size_t)_i, c->setup);
	snprintf(args, sizeof(args), "report '%s' -o '%s'", good, c->path);
	snprintf(what, sizeof(what), "report -o: %s", c->what);
	expect_one_line_failure(dir, args, c->names ? c->names : c->path, what);
}
END_TEST

/* record -- PROGRAM with programs that cannot record: no session is left. */
static const char *const bad_programs[][2] = {
	{ "/nonexistent/prog", "/nonexistent/prog" },
	{ "/tmp", "/tmp" },
	{ "sh -c 'kill -SEGV $$'", "signal 11" },
	{ "true", "recorded nothing" },
};

START_TEST(bad_program)
{
	char dir[1024], args[2048], what[256];

	case_dir(dir, sizeof(dir), "program", (size_t)_i, "");
	snprintf(args, sizeof(args), "record -o s -- %s", bad_programs[_i][0]);
	snprintf(what, sizeof(what), "record -- %s", bad_programs[_i][0]);
	expect_one_line_failure(dir, args, bad_programs[_i][1], what);
	ck_assert_msg(!path_exists(dir, "s/metadata"), "[%s] left a session", what);
}
END_TEST

/* Standard output on a full disk: the output is not silently cut short. */
static const char *const full_stdout_cmds[] = {
	"info '%s'", "check '%s'", "query '%s' 'select * from fence_ops'",
	"query --json '%s' 'select * from fence_ops'", "info --events", "help",
};

START_TEST(full_stdout)
{
	char dir[1024], args[2048], what[512];

	if (strncmp(full_stdout_cmds[_i], "check", 5) == 0 && !have_check)
		return;
	case_dir(dir, sizeof(dir), "stdout", (size_t)_i, "");
	snprintf(args, sizeof(args), full_stdout_cmds[_i], good);
	strncat(args, " >/dev/full", sizeof(args) - strlen(args) - 1);
	snprintf(what, sizeof(what), "stdout on a full disk");
	expect_one_line_failure(dir, args, "standard output", what);
}
END_TEST

/* A path of 4400 characters (beyond PATH_MAX) given to every command: the
 * error keeps the end of the path and says what is wrong. */
static const char *const long_path_cmds[] = {
	"info '%s'", "check '%s'", "query '%s' 'select 1'", "report '%s' -o x.png",
	"report '%s' -o '%s.png'", "record -o '%s' '%s/samples/overrun.nfs'", "query '%s' -f '%s'",
	"import '%s' -o x",
};

START_TEST(long_path)
{
	char dir[1024], path[4500] = "", args[10000], what[128];
	const char *src = getenv("NF_SOURCE_DIR");

	if ((strncmp(long_path_cmds[_i], "check", 5) == 0 && !have_check) ||
	    (strncmp(long_path_cmds[_i], "import", 6) == 0 && !have_import))
		return;
	for (int i = 0; i < 22; i++)
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "%s%0200d", i ? "/" : "", i);
	case_dir(dir, sizeof(dir), "long", (size_t)_i, "");
	if (_i == 4 || _i == 6)
		snprintf(args, sizeof(args), long_path_cmds[_i], good, path);
	else if (_i == 5)
		snprintf(args, sizeof(args), long_path_cmds[_i], path, src ? src : ".");
	else
		snprintf(args, sizeof(args), long_path_cmds[_i], path);
	snprintf(what, sizeof(what), "a 4400-character path (%s)", long_path_cmds[_i]);
	expect_one_line_failure(dir, args, path + strlen(path) - 40, what);
}
END_TEST

/* import (when registered): inputs that are not trace.dat files. */
static const struct bad_sql bad_imports[] = {
	{ "missing file", "", "x.dat" },
	{ "empty file", ": > x.dat", "x.dat" },
	{ "binary garbage", "head -c 5000 /dev/urandom > x.dat", "x.dat" },
	{ "a trace.dat magic then garbage", "printf '\\027\\010\\104tracing6\\000' > x.dat; head -c 3000 /dev/urandom >> x.dat", "x.dat" },
	{ "huge sparse file", "truncate -s 20G x.dat", "x.dat" },
	{ "/dev/zero (endless)", "", "/dev/zero" },
	{ "a directory", "mkdir x.dat", "x.dat" },
	{ "a CTF session (wrong kind)", "mkdir x.dat; cp \"$G\"/* x.dat/", "x.dat" },
};

START_TEST(bad_import)
{
	const struct bad_sql *c = &bad_imports[_i];
	char dir[1024], args[2048], what[512];

	if (!have_import)
		return;
	case_dir(dir, sizeof(dir), "import", (size_t)_i, c->setup);
	snprintf(args, sizeof(args), "import -o s '%s'", c->path);
	snprintf(what, sizeof(what), "import: %s", c->what);
	expect_one_line_failure(dir, args, c->path, what);
	ck_assert_msg(!path_exists(dir, "s/metadata"), "[%s] a session was created", what);
}
END_TEST

/*
 * A sweep over one good session: every stream and the metadata truncated at
 * evenly spaced offsets and with one byte inverted at evenly spaced offsets.
 * Decoding may succeed (a flipped payload byte is still a valid value) or
 * fail, but info and query must end with exit 0 and output, or exit 1 and one
 * line on stderr; never a signal, a sanitizer report or a hang.
 */
enum { SWEEP_FILES = 3, SWEEP_TRUNC = 8, SWEEP_FLIP = 16 };
static const char *const sweep_files[SWEEP_FILES] = { "events", "truth", "metadata" };

static void sweep_one(const char *what, const char *dir, const char *args)
{
	int st = nft_in(dir, args);

	ck_assert_msg(st != 124 && st != 137, "[%s] %s: hung", what, args);
	ck_assert_msg(!strstr(err, "Sanitizer") && !strstr(err, "runtime error:"), "[%s] %s: %.3000s",
		      what, args, err);
	ck_assert_msg(st == 0 || st == 1, "[%s] %s: exit %d: %.1500s", what, args, st, err);
	/* The outcome, for docs/RELIABILITY.md's figures (ctest -V). */
	printf("sweep: %s: %s: %s\n", what, args, st == 0 ? "read" : "refused");
	fflush(stdout);
	if (st == 0)
		ck_assert_msg(out[0] && !err[0], "[%s] %s: exit 0 but stdout %.200s stderr %.500s", what,
			      args, out, err);
	else
		ck_assert_msg(nf_test_count_lines(err) == 1 && !out[0],
			      "[%s] %s: exit 1 but stderr: %.1500s stdout: %.200s", what, args, err, out);
}

START_TEST(sweep_truncate_and_flip)
{
	int f = _i / (SWEEP_TRUNC + SWEEP_FLIP), k = _i % (SWEEP_TRUNC + SWEEP_FLIP);
	char dir[1024], path[1200], what[256];
	struct stat st;

	case_dir(dir, sizeof(dir), "sweep", (size_t)_i, COPY);
	snprintf(path, sizeof(path), "%s/b/%s", dir, sweep_files[f]);
	ck_assert_int_eq(stat(path, &st), 0);
	long size = (long)st.st_size;
	if (k < SWEEP_TRUNC) {
		long at = size * k / SWEEP_TRUNC;
		ck_assert_int_eq(truncate(path, at), 0);
		snprintf(what, sizeof(what), "%s truncated to %ld of %ld bytes", sweep_files[f], at, size);
	} else {
		long at = size * (k - SWEEP_TRUNC) / SWEEP_FLIP + 1;
		FILE *fp = fopen(path, "r+b");
		ck_assert_ptr_nonnull(fp);
		ck_assert_int_eq(fseek(fp, at, SEEK_SET), 0);
		int c = fgetc(fp);
		ck_assert_int_eq(fseek(fp, at, SEEK_SET), 0);
		fputc(c ^ 0xff, fp);
		fclose(fp);
		snprintf(what, sizeof(what), "%s byte %ld of %ld inverted", sweep_files[f], at, size);
	}
	sweep_one(what, dir, "info b");
	sweep_one(what, dir, "query --csv b 'select count(*) from fence_ops'");
}
END_TEST

/* How many cases the tables hold (docs/RELIABILITY.md quotes it). */
START_TEST(count_cases)
{
	size_t n = N_OF(bad_sessions) * (N_OF(session_cmds) - (have_check ? 0 : 1)) + N_OF(bad_scenarios) +
		   N_OF(bad_sqls) + N_OF(bad_report_outs) + (have_import ? N_OF(bad_imports) : 0) +
		   N_OF(full_stdout_cmds) - (have_check ? 0 : 1) + N_OF(long_path_cmds) -
		   (have_check ? 0 : 1) - (have_import ? 0 : 1) + N_OF(bad_programs);

	printf("bad-input cases: %zu (%zu bad sessions x %zu commands, %zu scenarios/outputs, "
	       "%zu SQL files, %zu report outputs, %zu imports, %zu full stdout, %zu long paths, %zu programs), plus a sweep of %d damaged sessions x 2 commands%s%s\n",
	       n, N_OF(bad_sessions), N_OF(session_cmds) - (have_check ? 0 : 1), N_OF(bad_scenarios),
	       N_OF(bad_sqls), N_OF(bad_report_outs), have_import ? N_OF(bad_imports) : (size_t)0,
	       N_OF(full_stdout_cmds) - (have_check ? 0 : 1),
	       N_OF(long_path_cmds) - (have_check ? 0 : 1) - (have_import ? 0 : 1), N_OF(bad_programs),
	       SWEEP_FILES * (SWEEP_TRUNC + SWEEP_FLIP),
	       have_check ? "" : " [check not registered: skipped]",
	       have_import ? "" : " [import not registered: skipped]");
	ck_assert_uint_gt(n, 100);
}
END_TEST

/* Several cases, so ctest runs them as several tests in parallel (CK_RUN_CASE). */
static TCase *new_case(Suite *s, const char *name)
{
	TCase *tc = tcase_create(name);

	tcase_add_unchecked_fixture(tc, setup_sessions, teardown_sessions);
	tcase_set_timeout(tc, 4 * CASE_TIMEOUT);
	suite_add_tcase(s, tc);
	return tc;
}

static Suite *bad_input_suite(void)
{
	Suite *s = suite_create("bad_input");
	TCase *tc = new_case(s, "sessions");

	/* Three parts of the sessions table, so each ctest stays short under ASan. */
	int third = (int)((N_OF(bad_sessions) + 2) / 3 * N_OF(session_cmds));
	int all = (int)(N_OF(bad_sessions) * N_OF(session_cmds));
	tcase_add_test(tc, count_cases);
	tcase_add_loop_test(tc, bad_session, 0, third);
	tc = new_case(s, "sessions2");
	tcase_add_loop_test(tc, bad_session, third, 2 * third);
	tc = new_case(s, "sessions3");
	tcase_add_loop_test(tc, bad_session, 2 * third, all);
	tc = new_case(s, "scenarios");
	tcase_add_loop_test(tc, bad_scenario, 0, (int)N_OF(bad_scenarios));
	/* One case per damaged file (sweep_events, sweep_truth, sweep_metadata). */
	for (int f = 0; f < SWEEP_FILES; f++) {
		static char names[SWEEP_FILES][32];
		snprintf(names[f], sizeof(names[f]), "sweep_%s", sweep_files[f]);
		tc = new_case(s, names[f]);
		tcase_add_loop_test(tc, sweep_truncate_and_flip, f * (SWEEP_TRUNC + SWEEP_FLIP),
				    (f + 1) * (SWEEP_TRUNC + SWEEP_FLIP));
	}
	tc = new_case(s, "files");
	tcase_add_loop_test(tc, bad_sql_file, 0, (int)N_OF(bad_sqls));
	tcase_add_loop_test(tc, bad_report_output, 0, (int)N_OF(bad_report_outs));
	tcase_add_loop_test(tc, bad_import, 0, (int)N_OF(bad_imports));
	tcase_add_loop_test(tc, full_stdout, 0, (int)N_OF(full_stdout_cmds));
	tcase_add_loop_test(tc, long_path, 0, (int)N_OF(long_path_cmds));
	tcase_add_loop_test(tc, bad_program, 0, (int)N_OF(bad_programs));
	return s;
}

int main(void)
{
	return nf_test_main(bad_input_suite());
}
