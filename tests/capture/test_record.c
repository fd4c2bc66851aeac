/*
 * Tests of `nftrace record` as a user runs it: a recorder killed by SIGKILL at
 * random points leaves a session that babeltrace2 and our parser read up to
 * its last complete packet, a byte-for-byte prefix of the same recording not
 * killed; SIGINT closes the session cleanly (exit 130); a full disk (a file
 * size limit, a full tmpfs) is one clear error naming the file, and what was
 * written stays readable; every sample records twice to byte-identical
 * sessions that babeltrace2 reads without a warning; `record -- PROGRAM`.
 */
#include "nf_test.h"
#include "contract/record.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>

static char tmp[512], out[1 << 16], err[1 << 14];

/* Runs nftrace with args (no shell), its output in out and err: the exit status. */
static int nft(const char *const args[])
{
	return nf_test_nftrace_run(args, out, sizeof(out), err, sizeof(err));
}

static void setup(void)
{
	nf_test_tmpdir(tmp, sizeof(tmp));
	/* Orphaned grandchildren (a killed recorder's committer process) become
	 * ours, so a test can wait until nothing writes the session any more. */
	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
}

static void teardown(void)
{
	nf_test_rmtree(tmp);
}

static long long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* Writes a copy of samples/stress.nfs with its outer repeat count changed. */
static void stress_variant(const char *path, int outer)
{
	char src[1024];

	nf_test_source_path(src, sizeof(src), "samples/stress.nfs");
	char n[16];

	snprintf(n, sizeof(n), "%d", outer);
	ck_assert_int_eq(nf_test_sh("sed \"s/^repeat 4000 as/repeat $3 as/\" \"$1\" > \"$2\" && "
				    "grep -q \"^repeat $3 as\" \"$2\"",
				    NF_TEST_ARGV(src, path, n), out, sizeof(out), err, sizeof(err)), 0);
}

/* Starts `nftrace record -o DIR SCENARIO` with its output thrown away. */
static pid_t spawn_record(const char *dir, const char *scenario)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fd = open("/dev/null", O_RDWR);
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execl(nf_test_nftrace(), "nftrace", "record", "-o", dir, scenario, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Waits until PATH holds at least MIN bytes or PID has exited (then returns false). */
static bool wait_for_bytes(pid_t pid, const char *path, long long min)
{
	const struct timespec ms = { 0, 1000000 };

	for (;;) {
		if (file_size(path) >= min)
			return true;
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return false;
		nanosleep(&ms, NULL);
	}
}

/* Reaps every child and orphan left (the committer finishing its last packets). */
static int reap_all(void)
{
	int n = 0;

	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		n++;
	return n;
}

/* A stream file must be a sequence of whole CTF packets of ours. */
static long walk_packets(const char *path)
{
	FILE *f = fopen(path, "rb");
	long long size = file_size(path), off = 0;
	long n = 0;

	ck_assert_msg(f != NULL, "%s: cannot open", path);
	while (off < size) {
		unsigned char h[72];
		uint32_t magic;
		uint64_t content, packet;

		ck_assert_int_eq(fseeko(f, (off_t)off, SEEK_SET), 0);
		ck_assert_msg(fread(h, 1, sizeof(h), f) == sizeof(h), "%s: torn packet header at %lld", path, off);
		memcpy(&magic, h, 4);
		memcpy(&content, h + 40, 8);
		memcpy(&packet, h + 48, 8);
		ck_assert_msg(magic == 0xC1FC1FC1u, "%s: bad magic at %lld", path, off);
		ck_assert_msg(packet % 8 == 0 && packet / 8 >= sizeof(h) && content <= packet,
			      "%s: bad packet sizes at %lld", path, off);
		ck_assert_msg(off + (long long)(packet / 8) <= size,
			      "%s: packet at %lld runs past the end of the file (%lld bytes)", path, off, size);
		off += (long long)(packet / 8);
		n++;
	}
	fclose(f);
	return n;
}

/* Total of the per-event counts `nftrace info` prints. */
static long info_event_count(const char *dir)
{
	long total = 0;

	int st = nft(NF_TEST_ARGV("info", dir));
	ck_assert_msg(st == 0, "nftrace info %s: exit %d: %.1500s", dir, st, err);
	for (char *l = strstr(out, "events:\n"); l && (l = strchr(l, '\n')); l++) {
		unsigned long long n;
		char name[128];

		if (sscanf(l + 1, " %127s %llu", name, &n) == 2)
			total += (long)n;
	}
	return total;
}

/* babeltrace2 prints the session without a word on stderr; returns its lines. */
static long babeltrace_count(const char *dir)
{
	int st = nf_test_sh("babeltrace2 \"$1\" | wc -l", NF_TEST_ARGV(dir), out, sizeof(out), err,
			    sizeof(err));
	ck_assert_msg(st == 0, "babeltrace2 %s: exit %d: %.1500s", dir, st, err);
	ck_assert_msg(err[0] == '\0', "babeltrace2 %s warned: %.1500s", dir, err);
	return atol(out);
}

/* Whatever a recorder left in DIR is either refused with one clear line, or
 * a whole trace that babeltrace2 and our parser agree on. */
static void assert_session_readable(const char *dir)
{
	char meta[700], events[700];

	snprintf(meta, sizeof(meta), "%s/metadata", dir);
	snprintf(events, sizeof(events), "%s/events", dir);
	if (file_size(events) <= 0) {
		/* Killed before the first packet: nothing to read, and info says so. */
		int st = nft(NF_TEST_ARGV("info", dir));
		ck_assert_msg(st == 1, "info on an empty session: exit %d", st);
		ck_assert_msg(nf_test_count_lines(err) == 1 && strstr(err, dir),
			      "info on an empty session: %.1500s", err);
		return;
	}
	ck_assert_msg(file_size(meta) > 0, "%s: events without metadata", dir);
	ck_assert_int_gt(walk_packets(events), 0);
	long ours = info_event_count(dir);
	ck_assert_int_gt(ours, 0);
	ck_assert_int_eq(babeltrace_count(dir), ours);
}

START_TEST(sigkill_leaves_whole_packets)
{
	char scenario[700], dir[700], events[800];
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	/* Kill points: before anything is written, then at random sizes up to
	 * 12 MB (small enough for babeltrace2 to read back quickly). */
	long long points[4] = { 0, 0, 0, 0 };

	srand(seed);
	for (int i = 1; i < 4; i++)
		points[i] = 1 + (long long)(rand() % (12 << 20));
	snprintf(scenario, sizeof(scenario), "%s/stress.nfs", tmp);
	stress_variant(scenario, 4000);
	/* The same recording, not killed: deterministic, so what a killed one
	 * left must be a prefix of it, byte for byte (no gap, nothing torn). */
	snprintf(dir, sizeof(dir), "%s/whole", tmp);
	ck_assert_int_eq(nft(NF_TEST_ARGV("record", "-o", dir, scenario)), 0);
	for (int i = 0; i < 4; i++) {
		snprintf(dir, sizeof(dir), "%s/kill%d", tmp, i);
		snprintf(events, sizeof(events), "%s/events", dir);
		pid_t pid = spawn_record(dir, scenario);
		bool running = points[i] == 0 || wait_for_bytes(pid, events, points[i]);
		ck_assert_msg(running, "the recording ended before %lld bytes (seed %u)", points[i], seed);
		kill(pid, SIGKILL);
		reap_all();
		assert_session_readable(dir);
		if (file_size(events) > 0) {
			/* The metadata too, but for the end of the recording that
			 * only the whole one has (it tells a cut session from a whole one). */
			char n[32];

			snprintf(n, sizeof(n), "%lld", file_size(events));
			ck_assert_msg(nf_test_sh("cmp -n \"$1\" \"$2\" \"$3/whole/events\" && "
						 "grep -v '^\trecorded_' \"$3/whole/metadata\" | "
						 "cmp \"$4/metadata\" - && ! grep -q recorded_ \"$4/metadata\"",
						 NF_TEST_ARGV(n, events, tmp, dir), out, sizeof(out), err,
						 sizeof(err)) == 0,
				      "killed at %lld bytes (seed %u): not a prefix of the whole recording: %.500s",
				      points[i], seed, out);
		}
	}
	/* check calls it incomplete (no end of recording), and the whole one not. */
	snprintf(dir, sizeof(dir), "%s/kill1", tmp);
	ck_assert_int_eq(nft(NF_TEST_ARGV("check", dir)), 1);
	ck_assert_msg(strstr(out, "verdict: incomplete (no end of recording"), "%.2000s", out);
	nf_test_sh("\"$NF\" check \"$1/whole\"", NF_TEST_ARGV(tmp), out, sizeof(out), err,
		   sizeof(err));
	ck_assert_msg(!strstr(out, "incomplete"), "%.2000s", out);
	/* The analyzer builds its timeline from what a killed recorder left. */
	snprintf(dir, sizeof(dir), "%s/kill1", tmp);
	int st = nft(NF_TEST_ARGV("query", "--csv", dir, "select count(*) > 0 from fence_ops"));
	ck_assert_msg(st == 0 && strstr(out, "\n1\n"), "query on a killed session: exit %d: %.500s %.1000s",
		      st, out, err);
}
END_TEST

START_TEST(sigint_closes_the_session)
{
	char scenario[700], dir[700], events[800];
	int st;

	/* Four times the stress sample: SIGINT comes long before the end. */
	snprintf(scenario, sizeof(scenario), "%s/stress4.nfs", tmp);
	stress_variant(scenario, 16000);
	snprintf(dir, sizeof(dir), "%s/s", tmp);
	snprintf(events, sizeof(events), "%s/events", dir);
	pid_t pid = spawn_record(dir, scenario);
	ck_assert(wait_for_bytes(pid, events, 1 << 20));
	kill(pid, SIGINT);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 130,
		      "an interrupted recording exits with 130, got status 0x%x", st);
	/* The recorder waited for its committer: nothing is left running. */
	ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
	ck_assert_int_eq(errno, ECHILD);
	ck_assert_int_lt(file_size(events), 4LL * 87513382);
	assert_session_readable(dir);

	/* The message, as a user sees it. */
	snprintf(dir, sizeof(dir), "%s/s2", tmp);
	st = nf_test_sh("\"$NF\" record -o \"$1\" \"$2\" & p=$!; while [ ! -s \"$1/events\" ] && kill -0 $p; do sleep 0.01; done; kill -INT $p; wait $p",
			NF_TEST_ARGV(dir, scenario), out, sizeof(out), err, sizeof(err));
	ck_assert_int_eq(st, 130);
	ck_assert_msg(nf_test_count_lines(err) == 1 && strstr(err, "interrupted") && strstr(err, dir),
		      "stderr: %.1500s", err);
	assert_session_readable(dir);
}
END_TEST

START_TEST(file_size_limit_is_a_clear_error)
{
	char src[1024], dir[700], events[800];
	int st;

	nf_test_source_path(src, sizeof(src), "samples/stress.nfs");
	/* The stream file hits a 2 MiB limit: EFBIG (SIGXFSZ ignored, as the
	 * committer does anyway), one line naming the file, exit 1. */
	for (int ignore = 0; ignore < 2; ignore++) {
		snprintf(dir, sizeof(dir), "%s/fsize%d", tmp, ignore);
		snprintf(events, sizeof(events), "%s/events", dir);
		st = nf_test_sh(ignore ? "trap '' XFSZ; ulimit -f 2048; exec \"$NF\" record -o \"$1\" \"$2\""
				       : "ulimit -f 2048; exec \"$NF\" record -o \"$1\" \"$2\"",
				NF_TEST_ARGV(dir, src), out, sizeof(out), err, sizeof(err));
		ck_assert_msg(st == 1, "exit %d: %.1500s", st, err);
		ck_assert_msg(nf_test_count_lines(err) == 1, "stderr: %.1500s", err);
		ck_assert_msg(strstr(err, events) && strstr(err, "File too large"), "stderr: %.1500s", err);
		ck_assert_int_le(file_size(events), 2048LL * 1024);
		assert_session_readable(dir);
	}
	/* A limit below the metadata's size: the metadata itself is refused. */
	snprintf(dir, sizeof(dir), "%s/fsize-meta", tmp);
	st = nf_test_sh("trap '' XFSZ; ulimit -f 2; exec \"$NF\" record -o \"$1\" \"$2\"",
			NF_TEST_ARGV(dir, src), out, sizeof(out), err, sizeof(err));
	ck_assert_msg(st == 1 && nf_test_count_lines(err) == 1, "exit %d: %.1500s", st, err);
	ck_assert_msg(strstr(err, "metadata") && strstr(err, "File too large"), "stderr: %.1500s", err);
	snprintf(events, sizeof(events), "%s/metadata", dir);
	ck_assert_int_eq(file_size(events), -1); /* never a half-written metadata file */
	/* A really full disk: a 1 MiB tmpfs, where the machine lets us mount one
	 * (root, not in a locked-down container); the session is copied out
	 * before the unmount, and read back from the copy. */
	char mnt[700], copy[700];
	snprintf(mnt, sizeof(mnt), "%s/mnt", tmp);
	snprintf(copy, sizeof(copy), "%s/full-copy", tmp);
	mkdir(mnt, 0755);
	st = nf_test_sh("mount -t tmpfs -o size=1m nftrace-test \"$1\" 2>/dev/null || exit 77; "
		"\"$NF\" record -o \"$1/s\" \"$2\"; rc=$?; cp -r \"$1/s\" \"$3\"; umount \"$1\"; exit $rc", NF_TEST_ARGV(mnt, src, copy), out, sizeof(out), err, sizeof(err));
	if (st == 77) {
		fprintf(stderr, "note: cannot mount a tmpfs here; the ENOSPC case was not tested\n");
	} else {
		snprintf(events, sizeof(events), "%s/s/events", mnt);
		ck_assert_msg(st == 1 && nf_test_count_lines(err) == 1, "exit %d: %.1500s", st, err);
		ck_assert_msg(strstr(err, events) && strstr(err, "No space left on device"),
			      "stderr: %.1500s", err);
		assert_session_readable(copy);
		/* A directory nobody may write to, even root: a read-only mount. */
		st = nf_test_sh("mount -t tmpfs -o ro,size=1m nftrace-test \"$1\" || exit 77; "
			"\"$NF\" record -o \"$1/s\" \"$2\"; rc=$?; umount \"$1\"; exit $rc", NF_TEST_ARGV(mnt, src), out, sizeof(out), err, sizeof(err));
		ck_assert_msg(st == 1 && nf_test_count_lines(err) == 1 && strstr(err, mnt) &&
			      strstr(err, "Read-only file system"), "exit %d: %.1500s", st, err);
	}
	/* An unwritable place for the session. */
	st = nft(NF_TEST_ARGV("record", "-o", "/proc/nftrace-session", src));
	ck_assert_msg(st == 1 && nf_test_count_lines(err) == 1 && strstr(err, "/proc/nftrace-session"),
		      "exit %d: %.1500s", st, err);
}
END_TEST

/* Every sample, recorded twice with ground truth: byte-identical sessions
 * that babeltrace2 prints without a warning, event for event as our parser
 * counts them. The stress sample is recorded (without ground truth) and
 * compared whole, but read back at 1/100 of its size, with ground truth
 * (babeltrace2 takes seconds on the whole). */
START_TEST(every_sample_is_deterministic_and_readable)
{
	char samples[1024], src[1400], a[900], b[900];
	DIR *d;
	struct dirent *de;
	int n = 0;

	nf_test_source_path(samples, sizeof(samples), "samples");
	d = opendir(samples);
	ck_assert(d != NULL);
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);

		if (len < 5 || strcmp(de->d_name + len - 4, ".nfs"))
			continue;
		snprintf(src, sizeof(src), "%s/%s", samples, de->d_name);
		snprintf(a, sizeof(a), "%s/%.*s-a", tmp, (int)(len - 4), de->d_name);
		snprintf(b, sizeof(b), "%s/%.*s-b", tmp, (int)(len - 4), de->d_name);
		/* The stress sample without ground truth: the truth stream would
		 * double its size, and every other sample checks that stream. */
		bool stress = !strcmp(de->d_name, "stress.nfs");
		for (int i = 0; i < 2; i++) {
			int st = stress ? nft(NF_TEST_ARGV("record", "--mode", "deterministic", "-o",
							   i ? b : a, src))
					: nft(NF_TEST_ARGV("record", "--ground-truth", "--mode", "deterministic",
							   "-o", i ? b : a, src));
			ck_assert_msg(st == 0, "%s: exit %d: %.1500s", de->d_name, st, err);
		}
		ck_assert_msg(nf_test_sh(stress ? "diff -r \"$1\" \"$2\" && test -s \"$1/events\" && ! test -s \"$1/truth\""
					 : "diff -r \"$1\" \"$2\" && test -s \"$1/events\" && test -s \"$1/truth\"",
					 NF_TEST_ARGV(a, b), out, sizeof(out), err, sizeof(err)) == 0,
			      "%s: two deterministic recordings differ: %.1500s", de->d_name, out);
		/* The environment names the source and each adapter's capabilities and clock. */
		ck_assert_msg(nf_test_sh("grep -q \"source = \\\".*$2\\\";\" \"$1/metadata\" && "
					 "grep -q 'adapter0_vidsch_caps = [0-9]' \"$1/metadata\" && "
					 "grep -q 'adapter0_gpu_frequency = [1-9]' \"$1/metadata\" && "
					 "grep -q 'log_read_interval_ns = ' \"$1/metadata\"",
					 NF_TEST_ARGV(a, de->d_name), out, sizeof(out), err, sizeof(err)) == 0,
			      "%s: two deterministic recordings differ: %.1500s", de->d_name, out);
		if (stress) {
			ck_assert_int_eq(nf_test_sh("rm -rf \"$1\" \"$2\"", NF_TEST_ARGV(a, b), out,
					 sizeof(out), err, sizeof(err)), 0);
			snprintf(src, sizeof(src), "%s/stress-small.nfs", tmp);
			stress_variant(src, 40);
			ck_assert_int_eq(nft(NF_TEST_ARGV("record", "--ground-truth", "-o", a,
					 src)), 0);
		}
		long ours = info_event_count(a);
		ck_assert_int_gt(ours, 0);
		ck_assert_int_eq(babeltrace_count(a), ours);
		ck_assert_int_eq(nf_test_sh("rm -rf \"$1\" \"$2\"", NF_TEST_ARGV(a, b), out,
				 sizeof(out), err, sizeof(err)), 0);
		n++;
	}
	closedir(d);
	ck_assert_int_ge(n, 14);
}
END_TEST

/* Each fault sample shows the fault it is named after, as `nftrace check`
 * counts it from the recorded log reads. */
START_TEST(fault_samples_show_their_fault)
{
	static const struct { const char *sample, *pattern; } cases[] = {
		{ "overrun", "verdict: legal anomalies only ([1-9][0-9]* lost," },
		{ "lda-zero-timestamps", "verdict: legal anomalies only (0 lost, [1-9][0-9]* zero," },
		{ "repeated-timestamps", "verdict: legal anomalies only (0 lost, 0 zero, [1-9][0-9]* repeated" },
		{ "log-recreated", "^0x[0-9a-f]* *0 *Q0 *signals *[2-9] " },
	};
	char src[1024], dir[700];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(src, sizeof(src), "%s/samples/%s.nfs", getenv("NF_SOURCE_DIR") ? getenv("NF_SOURCE_DIR") : ".",
			 cases[i].sample);
		snprintf(dir, sizeof(dir), "%s/%s", tmp, cases[i].sample);
		int st = nf_test_sh("\"$NF\" record -o \"$1\" \"$2\" >/dev/null && \"$NF\" check \"$1\" | grep -q \"$3\"",
				    NF_TEST_ARGV(dir, src, cases[i].pattern), out, sizeof(out), err,
				    sizeof(err));
		ck_assert_msg(st == 0, "%s does not show its fault (%s): %.1500s", cases[i].sample,
			      cases[i].pattern, err);
	}
}
END_TEST

/* `record -- PROGRAM` on the sample program that links the runtime: a
 * session that babeltrace2 and our parser read, the same bytes twice; a
 * program that records nothing, or cannot run, is one clear error. */
START_TEST(record_a_program)
{
	char prog[1024], a[700], b[700];
	const char *bin = getenv("NF_BINARY_DIR");
	int st;

	snprintf(prog, sizeof(prog), "%s/nfence-sample", bin ? bin : ".");
	snprintf(a, sizeof(a), "%s/p1", tmp);
	snprintf(b, sizeof(b), "%s/p2", tmp);
	for (int i = 0; i < 2; i++) {
		st = nft(NF_TEST_ARGV("record", "--ground-truth", "-o", i ? b : a, "--", prog));
		ck_assert_msg(st == 0, "exit %d: %.1500s", st, err);
		ck_assert_msg(strstr(out, "recorded"), "stdout: %.1500s", out);
	}
	ck_assert_msg(nf_test_sh("diff -r \"$1\" \"$2\" && test -s \"$1/truth\"", NF_TEST_ARGV(a, b),
				 out, sizeof(out), err, sizeof(err)) == 0, "%.1500s", out);
	assert_session_readable(a);
	ck_assert_int_eq(nft(NF_TEST_ARGV("info", a)), 0);
	ck_assert_msg(strstr(out, "nfence-sample"), "info does not name the program: %.1500s", out);

	st = nf_test_sh("\"$NF\" record -o \"$1/t\" -- true", NF_TEST_ARGV(tmp), out, sizeof(out),
			err, sizeof(err));
	ck_assert_msg(st == 1 && nf_test_count_lines(err) == 1 && strstr(err, "recorded nothing"),
		      "exit %d: %.1500s", st, err);
	st = nf_test_sh("\"$NF\" record -o \"$1/n\" -- \"$1/no-such-program\"", NF_TEST_ARGV(tmp),
			out, sizeof(out), err, sizeof(err));
	ck_assert_msg(st == 1 && nf_test_count_lines(err) == 1 && strstr(err, "no-such-program"),
		      "exit %d: %.1500s", st, err);
}
END_TEST

/* The progress line shows on a terminal only; --force replaces a session,
 * never a directory that is not one. */
START_TEST(progress_line_and_force)
{
	char scenario[700], dir[700], other[700];
	int st;

	snprintf(scenario, sizeof(scenario), "%s/stress-small.nfs", tmp);
	stress_variant(scenario, 400); /* 102400 operations: at least one progress tick */
	snprintf(dir, sizeof(dir), "%s/s", tmp);
	st = nft(NF_TEST_ARGV("record", "-o", dir, scenario));
	ck_assert_int_eq(st, 0);
	ck_assert_msg(err[0] == '\0', "no terminal, yet stderr says: %.1500s", err);
	ck_assert_msg(strstr(out, "recorded ") && strstr(out, "102400 operations"), "stdout: %.1500s", out);
	/* On a terminal (script(1) gives it one). */
	/* script runs its command with a shell of its own: the paths go to it in the environment. */
	st = nf_test_sh("command -v script >/dev/null || exit 77; export D=\"$1\" S=\"$2\"; "
			"script -qec '\"$NF\" record --force -o \"$D\" \"$S\"' /dev/null",
			NF_TEST_ARGV(dir, scenario), out, sizeof(out), err, sizeof(err));
	if (st == 77) {
		fprintf(stderr, "note: no script(1) here; the progress line on a terminal was not tested\n");
	} else {
		ck_assert_msg(st == 0, "exit %d: %.1500s", st, err);
		ck_assert_msg(strstr(out, "\rrecording: 65536 ops, ") && strstr(out, " lost entries"),
			      "no progress line on a terminal: %.1500s", out);
	}
	assert_session_readable(dir); /* replaced by --force, whole */
	/* --force never empties a directory that is not a session. */
	snprintf(other, sizeof(other), "%s/notes", tmp);
	st = nf_test_sh("mkdir \"$1\" && echo keep > \"$1/notes.txt\" && \"$NF\" record --force -o \"$1\" \"$2\"",
			NF_TEST_ARGV(other, scenario), out, sizeof(out), err, sizeof(err));
	ck_assert_msg(st == 1 && nf_test_count_lines(err) == 1 && strstr(err, "not an nftrace session"),
		      "exit %d: %.1500s", st, err);
	snprintf(other, sizeof(other), "%s/notes/notes.txt", tmp);
	ck_assert_int_eq(file_size(other), 5);
}
END_TEST

/* Waits up to `seconds` for PID to exit; a recorder that ignores its signal is
 * killed and the test fails instead of hanging. */
static int wait_exit(pid_t pid, int seconds)
{
	const struct timespec ms10 = { 0, 10000000 };
	int st = 0;

	for (int i = 0; i < seconds * 100; i++) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			return st;
		nanosleep(&ms10, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	ck_abort_msg("the recorder did not stop within %d s of its signal", seconds);
	return st;
}

/* Threaded mode, a signal during a long advance and during a CPU wait nothing
 * satisfies: the recorder stops at once (a minute's advance would outlast the
 * wait), the statement after does not run, the exit status is 130 and the
 * session is whole. */
START_TEST(threaded_signal_stops_advance_and_cpu_wait)
{
	static const char *const bodies[] = { "advance 60s", "cpu_wait F 5" };
	static const int sigs[] = { SIGINT, SIGTERM };
	char scenario[700], dir[700], meta[800];

	for (int i = 0; i < 2; i++) {
		snprintf(scenario, sizeof(scenario), "%s/t%d.nfs", tmp, i);
		FILE *f = fopen(scenario, "w");
		ck_assert_ptr_nonnull(f);
		fprintf(f, "adapter GPU caps native\nqueue Q adapter GPU node 0 engine 0\n"
			   "fence F adapter GPU initial 0 process 100\nadvance 1ms\n%s\nsignal Q F 1\n",
			bodies[i]);
		fclose(f);
		snprintf(dir, sizeof(dir), "%s/t%d", tmp, i);
		snprintf(meta, sizeof(meta), "%s/metadata", dir);
		pid_t pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			int fd = open("/dev/null", O_RDWR);
			if (fd >= 0) {
				dup2(fd, 0);
				dup2(fd, 1);
				dup2(fd, 2);
			}
			execl(nf_test_nftrace(), "nftrace", "record", "--mode", "threaded", "-o", dir,
			      scenario, (char *)NULL);
			_exit(127);
		}
		/* The session exists: the handler is in place and the run under way
		 * (a signal in any phase must end the same way). */
		const struct timespec ms = { 0, 1000000 };
		while (file_size(meta) < 0 && waitpid(pid, NULL, WNOHANG) == 0)
			nanosleep(&ms, NULL);
		const struct timespec settle = { 0, 200000000 };
		nanosleep(&settle, NULL);
		kill(pid, sigs[i]);
		int st = wait_exit(pid, 20);
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 130,
			      "'%s' then signal %d: status 0x%x, not exit 130", bodies[i], sigs[i], st);
		reap_all();
		assert_session_readable(dir);
		ck_assert_int_eq(nft(NF_TEST_ARGV("info", dir)), 0);
		ck_assert_msg(!strstr(out, "FENCE_SIGNAL_QUEUED"),
			      "'%s': the statement after the interrupted one ran: %.1500s", bodies[i], out);
	}
}
END_TEST

struct progress_log {
	unsigned calls, done_calls;
	bool done_last;
	struct nf_record_progress last;
};

static void log_progress(void *ctx, const struct nf_record_progress *p)
{
	struct progress_log *l = ctx;

	l->calls++;
	l->done_calls += p->done;
	l->done_last = p->done;
	l->last = *p;
}

/* The library: an interrupt the scenario never looked at (a short scenario,
 * set before its first check) still ends the recording as interrupted, with a
 * whole session; progress goes to the caller's callback, ending with `done`. */
START_TEST(record_library_interrupt_and_progress)
{
	char sample[1024], dir[700];
	struct nf_record_options o;
	struct nf_record_result res;
	struct progress_log pl;
	struct nf_error e;
	static volatile int flag;

	nf_test_source_path(sample, sizeof(sample), "samples/monitored-value-41.nfs");
	snprintf(dir, sizeof(dir), "%s/late", tmp);
	memset(&o, 0, sizeof(o));
	o.out_dir = dir;
	o.scenario = sample;
	o.interrupted = &flag;
	flag = 1;
	nf_error_clear(&e);
	ck_assert_int_eq(nf_record_scenario(&o, &res, &e), NF_EINTR);
	ck_assert(res.interrupted);
	assert_session_readable(dir);

	flag = 0;
	memset(&pl, 0, sizeof(pl));
	snprintf(sample, sizeof(sample), "%s/stress1.nfs", tmp);
	stress_variant(sample, 400); /* 102400 operations: several progress ticks */
	snprintf(dir, sizeof(dir), "%s/prog", tmp);
	o.out_dir = dir;
	o.scenario = sample;
	o.progress = log_progress;
	o.progress_ctx = &pl;
	nf_error_clear(&e);
	ck_assert_msg(nf_record_scenario(&o, &res, &e) == 0, "%s", e.msg);
	ck_assert(!res.interrupted);
	ck_assert_uint_ge(pl.calls, 2);
	ck_assert_uint_eq(pl.done_calls, 1);
	ck_assert(pl.done_last);
	ck_assert_uint_eq(pl.last.operations, res.operations);
	ck_assert_uint_eq(pl.last.events, res.events);
	ck_assert_uint_eq(pl.last.bytes, res.bytes);
}
END_TEST

static Suite *record_suite(void)
{
	Suite *s = suite_create("record");
	TCase *faults = tcase_create("faults"), *samples = tcase_create("samples");

	tcase_add_checked_fixture(faults, setup, teardown);
	tcase_set_timeout(faults, 300);
	tcase_add_test(faults, sigkill_leaves_whole_packets);
	tcase_add_test(faults, sigint_closes_the_session);
	tcase_add_test(faults, file_size_limit_is_a_clear_error);
	/* A recorder that ignores its signal fails here rather than hangs. */
	TCase *intr = tcase_create("interrupt");
	tcase_add_checked_fixture(intr, setup, teardown);
	tcase_set_timeout(intr, 60);
	tcase_add_test(intr, threaded_signal_stops_advance_and_cpu_wait);
	tcase_add_test(intr, record_library_interrupt_and_progress);
	suite_add_tcase(s, intr);
	suite_add_tcase(s, faults);
	tcase_add_checked_fixture(samples, setup, teardown);
	tcase_set_timeout(samples, 300);
	tcase_add_test(samples, every_sample_is_deterministic_and_readable);
	tcase_add_test(samples, record_a_program);
	tcase_add_test(samples, fault_samples_show_their_fault);
	tcase_add_test(samples, progress_line_and_force);
	suite_add_tcase(s, samples);
	return s;
}

int main(void)
{
	return nf_test_main(record_suite());
}
