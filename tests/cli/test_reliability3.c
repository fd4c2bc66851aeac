/*
 * Reliability and security, third round (issue #29): each item of the issue
 * that is tested here failed before its fix; docs/RELIABILITY.md lists them
 * with what is guaranteed now. (The hostile-string set through every output
 * format: test_hostile.c; push and query --clickhouse against a server that
 * misbehaves: the fake one of tests/cli/fake_clickhouse.py.)
 */
#include "nf_test.h"
#include "tracedat_writer.h"
#include "etl_fixture.h"

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

static char tmp[512], good[600], out[1 << 16], err[1 << 14];

static int nft(const char *const args[])
{
	return nf_test_nftrace_run(args, out, sizeof(out), err, sizeof(err));
}

static int sh(const char *script, const char *const args[])
{
	return nf_test_sh(script, args, out, sizeof(out), err, sizeof(err));
}

static void sh_ok(const char *script, const char *const args[])
{
	int st = sh(script, args);

	ck_assert_msg(st == 0, "%s failed (%d): %.2000s / %.2000s", script, st, out, err);
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

/* One line naming what, exit 1 or 2, nothing on stdout. */
static void refused_one_line(int st, const char *what, const char *name)
{
	ck_assert_msg(st == 1 || st == 2, "%s: exit %d: %s", what, st, err);
	ck_assert_msg(nf_test_count_lines(err) == 1, "%s: not one line: %s", what, err);
	ck_assert_msg(strstr(err, name) != NULL, "%s: does not name %s: %s", what, name, err);
}

static const char *hostile_prog(void)
{
	static char p[1024];
	const char *bin = getenv("NF_BINARY_DIR");

	snprintf(p, sizeof(p), "%s/nf_hostile_prog", bin ? bin : "build");
	return p;
}

/* What a session directory holds, to compare before and after: each file's
 * name, inode, size and the hash of its bytes, and no temporary beside it. */
static void fingerprint(const char *dir, char *buf, size_t len)
{
	sh_ok("cd \"$1\" && for f in $(ls -A | sort); do printf '%s %s %s ' \"$f\" \"$(stat -c %i.%s \"$f\")\" "
	      "\"$(md5sum < \"$f\" | cut -c1-32)\"; done; echo; ls -A \"$1/..\" | grep -c '\\.record-' || true",
	      NF_TEST_ARGV(dir));
	ck_assert_msg(strlen(out) < len, "fingerprint too long");
	memcpy(buf, out, strlen(out) + 1);
}

/* ------------------------------------------------------------------ */
/* 1. record --force: a failed recording keeps the session it replaces   */

/* Record --force over the good session (with its timeline built) with
 * args, which fails: the session is as it was, nothing left beside it. */
static void failed_replacement_keeps(const char *what, const char *const args[], const char *name)
{
	char before[4096], after[4096];

	ck_assert_int_eq(nft(NF_TEST_ARGV("query", good, "select 1")), 0);
	fingerprint(good, before, sizeof(before));
	ck_assert_msg(strstr(before, ".timeline.db") && strstr(before, "truth") && strstr(before, "\n0\n"), "%s", before);
	refused_one_line(nft(args), what, name);
	fingerprint(good, after, sizeof(after));
	ck_assert_msg(!strcmp(before, after), "%s: the session changed:\n%s\n%s", what, before, after);
	/* and it still reads */
	ck_assert_int_eq(nft(NF_TEST_ARGV("check", good)), 0);
}

START_TEST(record_force_keeps_the_session_when_the_program_cannot_run)
{
	failed_replacement_keeps("typo", NF_TEST_ARGV("record", "--force", "-o", good, "--", "/typo/prog"),
				 "cannot run program");
	failed_replacement_keeps("true", NF_TEST_ARGV("record", "--force", "-o", good, "--", "/bin/true"),
				 "recorded nothing");
	/* a program that fails after recording, and a scenario that fails half-way */
	failed_replacement_keeps("exit127", NF_TEST_ARGV("record", "--force", "-o", good, "--", hostile_prog(), "exit127"),
				 "exited with status 127");
}
END_TEST

/* A replacement that fails on a full disk (a file size limit) names the
 * session, not the temporary it was written in, and keeps the old one. */
START_TEST(record_force_keeps_the_session_when_the_disk_is_full)
{
	char before[4096], after[4096], src[1024];

	nf_test_source_path(src, sizeof(src), "samples/stress.nfs");
	fingerprint(good, before, sizeof(before));
	int st = nf_test_shell("bash", "ulimit -f 64 && exec \"$NF\" record --force -o \"$1\" \"$2\"",
			       NF_TEST_ARGV(good, src), out, sizeof(out), err, sizeof(err));
	refused_one_line(st, "ulimit", "large");
	ck_assert_msg(strstr(err, good) && !strstr(err, ".record-"), "%s", err);
	fingerprint(good, after, sizeof(after));
	ck_assert_msg(!strcmp(before, after), "the session changed:\n%s\n%s", before, after);
}
END_TEST

/* A good replacement: the new session in place (same directory name, mode
 * 0755 less the umask), the old one's files gone, nothing beside it; also
 * with a trailing slash. */
START_TEST(record_force_replaces_when_complete)
{
	char src[1024];

	nf_test_source_path(src, sizeof(src), "samples/overrun.nfs");
	sh_ok("umask 022; \"$NF\" record --force -o \"$1/\" \"$2\" >/dev/null && stat -c %a \"$1\" && ls -A \"$1\" | tr '\\n' ' ' && "
	      "ls -A \"$1/..\" | grep -c -e '\\.record-' -e '\\.old-' || true", NF_TEST_ARGV(good, src));
	ck_assert_msg(!strcmp(out, "755\nevents metadata 0\n"), "%s", out);
	/* and from a program */
	sh_ok("\"$NF\" record --force -o \"$1\" -- \"$2\" ops 5 >/dev/null && ls -A \"$1\" | tr '\\n' ' '",
	      NF_TEST_ARGV(good, hostile_prog()));
	ck_assert_msg(!strcmp(out, "events metadata "), "%s", out);
}
END_TEST

/* A replacement killed (SIGKILL) while it records: the old session stays,
 * whole; its temporary is removed by the next run. */
START_TEST(a_killed_replacement_leaves_the_session_and_the_next_run_cleans_up)
{
	char before[4096], after[4096];

	fingerprint(good, before, sizeof(before));
	sh_ok("\"$NF\" record --force -o \"$1\" -- \"$2\" sleep 10 > \"$1.out\" 2>&1 & pid=$!; "
	      "for i in $(seq 100); do grep -q ready \"$1.out\" && break; sleep 0.1; done; "
	      "child=$(pgrep -P $pid); kill -9 $pid; wait $pid; kill $child; sleep 0.3; "
	      "ls -A \"$1/..\" | grep -c '\\.record-'", NF_TEST_ARGV(good, hostile_prog()));
	ck_assert_msg(!strcmp(out, "1\n"), "no temporary left by the killed run: %s", out);
	unlink(strcat(strcpy(after, good), ".out"));
	fingerprint(good, after, sizeof(after));
	before[strlen(before) - 2] = after[strlen(after) - 2] = '\0'; /* the temporary counted apart */
	ck_assert_msg(!strcmp(before, after), "the session changed:\n%s\n%s", before, after);
	/* the next run (refused: no --force) removes what the dead one left */
	ck_assert_int_ne(nft(NF_TEST_ARGV("record", "-o", good, "--", "/bin/true")), 0);
	fingerprint(good, after, sizeof(after));
	ck_assert_msg(strstr(after, "\n0\n"), "the temporary is still there: %s", after);
}
END_TEST

/* A run killed between its two renames (the old session aside, the new one
 * not yet in place): the next run puts the old session back. */
START_TEST(a_swap_killed_half_way_is_undone_by_the_next_run)
{
	char before[4096], after[4096], src[1024];

	fingerprint(good, before, sizeof(before));
	nf_test_source_path(src, sizeof(src), "samples/overrun.nfs");
	/* what such a run leaves: S.record-XXXXXX (the new session, complete),
	 * S.old-XXXXXX (the old one), no S */
	sh_ok("\"$NF\" record -o \"$1.record-AbC123\" \"$2\" >/dev/null && mv \"$1\" \"$1.old-XyZ789\"",
	      NF_TEST_ARGV(good, src));
	ck_assert_int_ne(nft(NF_TEST_ARGV("record", "-o", good, src)), 0); /* S is back: exists */
	ck_assert_msg(strstr(err, "already exists"), "%s", err);
	fingerprint(good, after, sizeof(after));
	ck_assert_msg(!strcmp(before, after), "the old session is not back:\n%s\n%s", before, after);
	sh_ok("ls -A \"$1/..\" | grep -c -e '\\.record-' -e '\\.old-' || true", NF_TEST_ARGV(good));
	ck_assert_str_eq(out, "0\n");
}
END_TEST

/* ------------------------------------------------------------------ */
/* 3. an output that is a file of the session being read is refused      */

START_TEST(outputs_that_are_files_of_the_session_are_refused)
{
	static const char *const names[] = { "events", "metadata", "truth", ".timeline.db", "kernel" };
	char before[4096], after[4096], o[1024], link[700];

	ck_assert_int_eq(nft(NF_TEST_ARGV("query", good, "select 1")), 0);
	fingerprint(good, before, sizeof(before));
	snprintf(link, sizeof(link), "%s/link", tmp);
	ck_assert_int_eq(symlink(good, link), 0);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		for (int how = 0; how < 3; how++) {
			/* the session's own path, through a link, through .. */
			if (how == 0)
				snprintf(o, sizeof(o), "%s/%s", good, names[i]);
			else if (how == 1)
				snprintf(o, sizeof(o), "%s/%s", link, names[i]);
			else
				snprintf(o, sizeof(o), "%s/../s/%s", good, names[i]);
			refused_one_line(nft(NF_TEST_ARGV("export", good, "-o", o, "--format", "chrome-json")), o,
					 "is a file of the session");
			refused_one_line(nft(NF_TEST_ARGV("export", good, "-o", o, "--format", "perfetto")), o,
					 "is a file of the session");
		}
	fingerprint(good, after, sizeof(after));
	ck_assert_msg(!strcmp(before, after), "the session changed:\n%s\n%s", before, after);
	/* a picture beside the session's files is a file of the user's */
	snprintf(o, sizeof(o), "%s/events.svg", good);
	ck_assert_int_eq(nft(NF_TEST_ARGV("report", good, "-o", o)), 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* a misbehaving ClickHouse server (tests/cli/fake_clickhouse.py)        */

/*
 * Runs script with a fake server in mode: "$1" its URL's host:port
 * (127.0.0.1:PORT), "$2" its request log, "$3".. args; the server is
 * stopped (by its pid) when the script ends. Returns the script's status.
 */
static int with_fake(const char *mode, const char *script, const char *a3, const char *a4)
{
	char py[1024], log[700], port[700], full[8192];

	nf_test_source_path(py, sizeof(py), "tests/cli/fake_clickhouse.py");
	snprintf(log, sizeof(log), "%s/fake-%s.log", tmp, mode);
	snprintf(port, sizeof(port), "%s/fake-%s.port", tmp, mode);
	snprintf(full, sizeof(full),
		 "PY=$1 MODE=$2 LOG=$3 PORTF=$4 A3=$5 A4=$6; : > \"$LOG\"; "
		 "python3 \"$PY\" \"$MODE\" \"$LOG\" > \"$PORTF\" & srv=$!; trap 'kill $srv' EXIT; "
		 "for i in $(seq 100); do [ -s \"$PORTF\" ] && break; sleep 0.1; done; "
		 "set -- \"127.0.0.1:$(head -1 \"$PORTF\")\" \"$LOG\" \"$A3\" \"$A4\"; %s", script);
	return nf_test_sh(full, NF_TEST_ARGV(py, mode, log, port, a3 ? a3 : "", a4 ? a4 : ""), out, sizeof(out), err,
			  sizeof(err));
}

/* ------------------------------------------------------------------ */
/* 4. import of a FIFO                                                   */

START_TEST(import_of_a_fifo_is_refused_at_once)
{
	static const char *const names[] = { "fifo", "fifo.etl", "fifo.dat" };

	for (size_t i = 0; i < 3; i++) {
		char f[700], o[700];

		snprintf(f, sizeof(f), "%s/%s", tmp, names[i]);
		snprintf(o, sizeof(o), "%s/x%zu", tmp, i);
		ck_assert_int_eq(mkfifo(f, 0644), 0);
		/* a FIFO nobody writes: the import's open or read waited for ever */
		int st = nf_test_shell("sh", "exec timeout 20 \"$NF\" import \"$1\" -o \"$2\"", NF_TEST_ARGV(f, o), out,
				       sizeof(out), err, sizeof(err));
		refused_one_line(st, names[i], "not a regular file");
		ck_assert(access(o, F_OK) != 0);
	}
}
END_TEST

/* ------------------------------------------------------------------ */
/* 5. push: a swap lock that cannot be taken over                        */

START_TEST(push_retries_on_a_lock_it_cannot_take_pause_and_give_up)
{
	/* Every RENAME of the (stale-looking) lock fails as if another waiter
	 * took it: the push looped at once, without pause or end. */
	int st = with_fake("lock-stolen",
			   "start=$(date +%s); NFTRACE_PUSH_LOCK_STALE_S=0 NFTRACE_PUSH_LOCK_WAIT_S=2 "
			   "timeout 30 \"$NF\" push --clickhouse \"http://$1\" \"$3\" 2>\"$3.err\"; rc=$?; "
			   "echo \"rc=$rc s=$(( $(date +%s) - start )) renames=$(grep -c '^RENAME' \"$2\")\"; cat \"$3.err\"",
			   good, NULL);
	ck_assert_msg(st == 0, "%s %s", out, err);
	int rc = -1, secs = -1, renames = -1;
	ck_assert_msg(sscanf(out, "rc=%d s=%d renames=%d", &rc, &secs, &renames) == 3, "%s", out);
	ck_assert_msg(rc == 1 && secs >= 2 && secs < 20, "%s", out);
	ck_assert_msg(renames > 0 && renames < 100, "%d renames in %d s: %s", renames, secs, out);
	ck_assert_msg(strstr(out, "another push of session 's' has held `_lock_s` for over 2 s"), "%s", out);
}
END_TEST

/* ------------------------------------------------------------------ */
/* 9. names that reach a terminal                                        */

START_TEST(clickhouse_answers_reach_the_terminal_cleaned)
{
	char py[1024];

	nf_test_source_path(py, sizeof(py), "tests/cli/hostile_check.py");
	/* each of our formats is text: checked as a terminal's */
	int st = with_fake("hostile",
			   "set -e; for f in --table --csv --json; do "
			   "\"$NF\" query --clickhouse \"http://$1\" $f \"select name from queues\" > \"$4.$f\"; done; "
			   "python3 \"$3\" text \"$4\".--*; "
			   /* the SQL's own FORMAT: as the server sent it (to a file) */
			   "\"$NF\" query --clickhouse \"http://$1\" \"select name from queues FORMAT TSV\" > \"$4.raw\"; "
			   "grep -c \"$(printf '\\033')\" \"$4.raw\"; cat \"$4.--table\"",
			   py, good);
	ck_assert_msg(st == 0, "%s %s", out, err);
	ck_assert_msg(!strncmp(out, "2\n", 2), "the raw answer lost its bytes: %s", out);
	ck_assert_msg(strstr(out, "red?[31mRED?[0m?[2J\ntitle?]0;pwned? link?]8;;http://x/?\\x\n"
				  "cr?OVER bs???X del?\nc1?31m?0;t? nonchar?\nbad?? caf? cut??\n"
				  "good caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80\n"), "%s", out);
}
END_TEST

/* A session directory named with control characters, shown by record,
 * export, info, check and critical-path, and an option's value in a usage
 * error; critical-path with C1 controls in a queue name. */
START_TEST(directory_names_and_c1_reach_no_terminal_raw)
{
	char d[700], py[1024];

	snprintf(d, sizeof(d), "%s/x\x1b]0;pwned\x07\xc2\x9b" "31m\xff", tmp);
	nf_test_source_path(py, sizeof(py), "tests/cli/hostile_check.py");
	sh_ok("set -e; \"$NF\" record -o \"$1\" -- \"$3\" c1-names 3 > \"$4/o.record\"; "
	      "\"$NF\" export \"$1\" -o \"$1.json\" --format chrome-json > \"$4/o.export\"; "
	      "! \"$NF\" report \"$1\" --width \"$(printf '1\\033]0;x\\007')\" -o x.png 2> \"$4/o.usage\"; "
	      "\"$NF\" info \"$1\" > \"$4/o.info\"; \"$NF\" check \"$1\" > \"$4/o.check\"; "
	      "\"$NF\" critical-path \"$1\" --queue 0x40000240 > \"$4/o.cp\"; "
	      "\"$NF\" query \"$1\" 'select name from queues' > \"$4/o.query\"; "
	      "python3 \"$2\" text \"$4\"/o.*; grep -h -e session -e 'queue 0x40000240' \"$4\"/o.info \"$4\"/o.check \"$4\"/o.cp",
	      NF_TEST_ARGV(d, py, hostile_prog(), tmp));
	ck_assert_msg(strstr(out, "/x?]0;pwned??31m?\nsession ") && strstr(out, "/x?]0;pwned??31m?: "), "%s", out);
	ck_assert_msg(strstr(out, "(C1?31mred?0;title?)"), "%s", out);
}
END_TEST

/* ------------------------------------------------------------------ */
/* 6. noncharacters and Latin-1 in the title                             */

/* A directory named with noncharacters (U+FFFE, U+FDD0, U+1FFFF) and a
 * Latin-1 byte, and --title $'\xff': cairo refused the whole picture for the
 * first, the PDF lost its title for the second. */
START_TEST(noncharacters_and_latin1_titles_draw)
{
	char d[700], py[1024];

	snprintf(d, sizeof(d), "%s/n\xef\xbf\xbe\xef\xb7\x90\xf0\x9f\xbf\xbf-caf\xe9", tmp);
	nf_test_source_path(py, sizeof(py), "tests/cli/hostile_check.py");
	ck_assert_int_eq(rename(good, d), 0);
	sh_ok("set -e; for f in png svg pdf html; do \"$NF\" report \"$1\" -o \"$3/t.$f\"; done; "
	      "\"$NF\" report \"$1\" -o \"$3/x.pdf\" --title \"$(printf '\\377')\"; "
	      "python3 \"$2\" png \"$3/t.png\"; python3 \"$2\" xml \"$3/t.svg\"; python3 \"$2\" html \"$3/t.html\"; "
	      "python3 \"$2\" pdf \"$3/t.pdf\" \"$3/x.pdf\"; grep -a -c '/Title' \"$3/x.pdf\"",
	      NF_TEST_ARGV(d, py, tmp));
	ck_assert_str_eq(out, "1\n");
}
END_TEST

/* ------------------------------------------------------------------ */
/* 7. times at the ends of int64                                         */

/* An ETW import of 12 nodes (24 GPU operations) made with etl_fixture.c;
 * early_ticks: an orphan unwait stamped there (0: none), last_ticks: a VSync
 * stamped there (0: none). */
static void make_etw_session(const char *dir, int64_t early_ticks, int64_t last_ticks)
{
	static const char *const names[] = { "3D", "Copy", "Video", "Compute", "e4", "e5",
					     "e6", "e7", "e8", "e9", "e10", "e11" };
	struct etl_fixture f = { names, 12, false, NULL, last_ticks, early_ticks };
	char etl[800];

	snprintf(etl, sizeof(etl), "%s.etl", dir);
	ck_assert_int_eq(etl_fixture_write(etl, &f), 0);
	ck_assert_msg(nft(NF_TEST_ARGV("import", etl, "-o", dir)) == 0, "import: %s", err);
}

/* What a reader made of a session whose times reach the ends of int64:
 * every picture and the page are made, the page details every operation
 * when it says it does, the Chrome JSON has no negative duration and
 * critical-path's segments add up (or it refuses in one line). */
static void readers_hold(const char *s, const char *what, int n_ops)
{
	char nops[16];

	static const char check[] =
		"import json, re, sys\n"
		"page = open(sys.argv[1], encoding='utf-8').read()\n"
		"n = {k: int(re.search('\"%s\":(-?[0-9]+)' % k, page).group(1)) for k in ('nOps', 'nDetail', 'detailFull')}\n"
		"assert n['nOps'] == int(sys.argv[3]) and (n['detailFull'] == 0 or n['nDetail'] == n['nOps']), n\n"
		"ev = json.load(open(sys.argv[2]))['traceEvents']\n"
		"bad = [e for e in ev if e.get('dur', 0) < 0 or e.get('ts', 0) != e.get('ts', 0)]\n"
		"assert not bad, bad[:3]\n"
		"for f in sys.argv[4:]:\n"
		"    cp = json.load(open(f))\n"
		"    assert cp['latency_ns'] >= 0 and all(x['duration_ns'] >= 0 for x in cp['segments']), cp\n"
		"    assert sum(x['duration_ns'] for x in cp['segments']) == cp['latency_ns'], cp\n"
		"print('ok', n)\n";

	snprintf(nops, sizeof(nops), "%d", n_ops);
	int st = sh("set -e; cd \"$1/..\"; for f in png svg pdf html; do \"$NF\" report \"$1\" -o \"$1.$f\"; done; "
		    "\"$NF\" export \"$1\" -o \"$1.json\" --format chrome-json >/dev/null; "
		    "\"$NF\" export \"$1\" -o \"$1.pftrace\" --format perfetto >/dev/null; "
		    "n=0; for id in $(\"$NF\" query --csv \"$1\" 'select id from fence_ops order by id' | tail -n +2); do "
		    "if \"$NF\" critical-path \"$1\" --op $id --json > \"$1.cp$id\" 2>\"$1.cperr\"; then n=$((n+1)); "
		    "else rm \"$1.cp$id\"; test $(wc -l < \"$1.cperr\") = 1; fi; done; "
		    "python3 -c \"$2\" \"$1.html\" \"$1.json\" \"$3\" \"$1\".cp*[0-9]",
		    NF_TEST_ARGV(s, check, nops));
	ck_assert_msg(st == 0, "%s: %s %s", what, out, err);
	ck_assert_msg(!strstr(err, "runtime error"), "%s: %s", what, err);
}

/* One ETW record stamped near 2^63 ticks: the session's duration is
 * INT64_MAX ns (saturated). The HTML page overflowed and detailed 0 of 24
 * operations while saying it detailed all. And one near -2^63, an unwait
 * the importer compared with its wait's time (a signed overflow). */
START_TEST(a_record_near_2_63_saturates_in_every_reader)
{
	char s[700];

	snprintf(s, sizeof(s), "%s/far", tmp);
	make_etw_session(s, INT64_MIN + 1000, INT64_MAX - 1000);
	ck_assert_int_eq(nft(NF_TEST_ARGV("query", "--csv", s, "select value from meta where key = 'duration_ns'")), 0);
	ck_assert_str_eq(out, "value\n9223372036854775807\n");
	readers_hold(s, "near 2^63", 24);
}
END_TEST

/* Times planted in a timeline at both ends of int64: a DMA packet from
 * INT64_MIN to INT64_MAX gave a negative dur in Chrome JSON; an operation
 * queued at INT64_MIN made critical-path overflow. */
START_TEST(times_planted_at_the_ends_of_int64_saturate)
{
	char s[700], db[800];

	snprintf(s, sizeof(s), "%s/ends", tmp);
	make_etw_session(s, 0, 0);
	ck_assert_int_eq(nft(NF_TEST_ARGV("query", s, "select 1")), 0);
	snprintf(db, sizeof(db), "%s/.timeline.db", s);
	sh_ok("python3 -c \"import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
	      "c.execute('UPDATE dma_packets SET start_ns = -9223372036854775808, end_ns = 9223372036854775807 WHERE id = 1'); "
	      "c.execute('UPDATE fence_ops SET queued_ns = -9223372036854775808 WHERE id = 2'); "
	      "c.execute('UPDATE fence_ops SET end_ns = 9223372036854775807 WHERE id = 3'); "
	      "c.commit()\" \"$1\"", NF_TEST_ARGV(db));
	readers_hold(s, "planted ETW", 24);
	/* and a recorded chain: a wait queued at INT64_MIN (critical-path refuses
	 * it in one line), a signal ending at INT64_MAX that others wait behind */
	snprintf(s, sizeof(s), "%s/chain", tmp);
	nf_test_record("samples/critical-path-chain.nfs", s, NULL);
	ck_assert_int_eq(nft(NF_TEST_ARGV("query", s, "select 1")), 0);
	snprintf(db, sizeof(db), "%s/.timeline.db", s);
	sh_ok("python3 -c \"import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
	      "c.execute('UPDATE fence_ops SET queued_ns = -9223372036854775808 WHERE id = 1'); "
	      "c.execute('UPDATE fence_ops SET end_ns = 9223372036854775807 WHERE id = 3'); "
	      "c.commit()\" \"$1\"", NF_TEST_ARGV(db));
	readers_hold(s, "planted chain", 4);
	/* the picture of the path of the signal that ends at INT64_MAX */
	snprintf(db, sizeof(db), "%s/chain-cp.png", tmp);
	ck_assert_msg(nft(NF_TEST_ARGV("report", s, "-o", db, "--critical-path", "3")) == 0, "%s", err);
	ck_assert_int_ne(nft(NF_TEST_ARGV("critical-path", s, "--op", "1")), 0);
	ck_assert_msg(strstr(err, "a latency beyond 2^63 ns"), "%s", err);
}
END_TEST

/* ------------------------------------------------------------------ */
/* 8. strings read back from a timeline file                             */

/* A timeline shipped with its session is used when its session_key matches
 * (whoever ships it can compute that): its strings are as untrusted as a
 * capture's. Statuses, names and meta planted in .timeline.db reach every
 * output cleaned (the SVG tooltips copied status raw: ill-formed XML). */
START_TEST(strings_planted_in_a_timeline_are_untrusted)
{
	char py[1024], db[700], proto[1024];

	nf_test_source_path(py, sizeof(py), "tests/cli/hostile_check.py");
	nf_test_source_path(proto, sizeof(proto), "tests/export/perfetto_subset.proto");
	snprintf(db, sizeof(db), "%s/.timeline.db", good);
	ck_assert_int_eq(nft(NF_TEST_ARGV("query", good, "select 1")), 0);
	sh_ok("python3 -c \"import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
	      "bad = b'\\x1b[31m\\x01\\x08\\r</title><script>x()</script>\\xc2\\x9b\\xef\\xbf\\xbe\\xff\\xed\\xa0\\x80'; "
	      "c.execute('UPDATE fence_ops SET status = CAST(? AS TEXT)', (bad,)); "
	      "c.execute('UPDATE queues SET name = CAST(? AS TEXT)', (bad,)); "
	      "c.execute('UPDATE adapters SET name = CAST(? AS TEXT)', (bad,)); "
	      "c.execute(\\\"UPDATE meta SET value = CAST(? AS TEXT) WHERE key IN ('source', 'mode')\\\", (bad,)); "
	      "c.commit()\" \"$1\"", NF_TEST_ARGV(db));
	/* the planted timeline is the one read (not rebuilt) */
	ck_assert_int_eq(nft(NF_TEST_ARGV("query", "--csv", good, "select count(*) from fence_ops where status like '%script%'")), 0);
	ck_assert_msg(!strcmp(out, "count(*)\n2\n"), "%s", out);
	sh_ok("set -e; cd \"$2\"; for f in png svg pdf html; do \"$NF\" report \"$1\" -o \"p.$f\"; done; "
	      "\"$NF\" export \"$1\" -o p.json --format chrome-json >/dev/null; \"$NF\" export \"$1\" -o p.pftrace --format perfetto >/dev/null; "
	      "\"$NF\" query \"$1\" 'select * from fence_ops' > p.txt; \"$NF\" query --json \"$1\" 'select * from queues' > q.json; "
	      "\"$NF\" critical-path \"$1\" >> p.txt; \"$NF\" critical-path --json \"$1\" > cp.json; "
	      "python3 \"$3\" xml p.svg; python3 \"$3\" html p.html; python3 \"$3\" json p.json q.json cp.json; "
	      "python3 \"$3\" text p.txt; python3 \"$3\" proto --proto \"$4\" p.pftrace; "
	      "python3 \"$3\" png p.png; python3 \"$3\" pdf p.pdf; grep -c '<title>' p.svg",
	      NF_TEST_ARGV(good, tmp, py, proto));
	ck_assert_msg(atoi(out) >= 2, "no tooltip drawn: %s", out);
}
END_TEST

/* ------------------------------------------------------------------ */
/* 10. the HTML page's command to paste                                  */

/* The page's note suggests the command for the next part; pasted into a
 * shell, with the directory named x;touch${IFS}PWNED;#, it ran touch. Read
 * from the page as Chromium shows it (or from its data without Chromium). */
START_TEST(the_html_notes_command_runs_as_written)
{
	static const char check[] =
		"import html, os, re, subprocess, sys\n"
		"nf, page, dom = sys.argv[1:4]\n"
		"if dom != '-':\n"
		"    m = re.search(r'<code>(nftrace report .*?)</code>', open(dom, encoding='utf-8').read())\n"
		"    cmd = html.unescape(m.group(1))\n"
		"else:\n"
		"    import json\n"
		"    m = re.search(r'\"sessionShell\":(\"(?:[^\"\\\\]|\\\\.)*\")', open(page, encoding='utf-8').read())\n"
		"    cmd = 'nftrace report ' + json.loads(m.group(1)) + ' -o next.html --from 0 --to 1ms'\n"
		"print(cmd)\n"
		"r = subprocess.run(['sh', '-c', cmd.replace('nftrace', '\"$NF\"', 1)], env=dict(os.environ, NF=nf))\n"
		"print('rc', r.returncode, 'next', os.path.exists('next.html'), 'pwned', os.path.exists('PWNED'))\n";
	const char *chromium = getenv("NF_CHROMIUM") ? getenv("NF_CHROMIUM") : "/usr/bin/chromium";
	bool have = access(chromium, X_OK) == 0;

	sh_ok("set -e; cd \"$1\"; d='x;touch${IFS}PWNED;#'; \"$NF\" record -o \"$d\" -- \"$2\" ops 300 >/dev/null; "
	      "\"$NF\" report \"$d\" -o page.html --max-ops 10; "
	      "if [ \"$4\" = yes ]; then timeout 120 \"$3\" --headless --no-sandbox --disable-gpu --no-first-run "
	      "--disable-crash-reporter --user-data-dir=\"$1/profile\" --virtual-time-budget=5000 --dump-dom "
	      "\"file://$1/page.html\" > dom.html 2>/dev/null; dom=dom.html; else dom=-; fi; "
	      "python3 -c \"$5\" \"$NF\" page.html $dom",
	      NF_TEST_ARGV(tmp, hostile_prog(), chromium, have ? "yes" : "no", check));
	ck_assert_msg(strstr(out, "nftrace report 'x;touch${IFS}PWNED;#' -o next.html --from "), "%s", out);
	ck_assert_msg(strstr(out, "rc 0 next True pwned False"), "%s %s", out, err);
}
END_TEST

/* ------------------------------------------------------------------ */
/* 11. a ClickHouse URL's password                                       */

START_TEST(clickhouse_passwords_are_not_printed)
{
	/* refused, unreachable, and an HTTP error: every error line names the
	 * server without its password */
	int st = with_fake("error",
			   "for u in \"http://bob:s3cret@$1/\" \"http://bob:s3cret@127.0.0.1:1\" \"http://$1/?user=bob&password=s3cret\" "
			   "\"ftp://bob:s3cret@$1\"; do "
			   "\"$NF\" push --clickhouse \"$u\" \"$3\"; \"$NF\" query --clickhouse \"$u\" 'select 1'; done 2>&1; true",
			   good, NULL);
	ck_assert_msg(st == 0, "%s %s", out, err);
	ck_assert_msg(nf_test_count_lines(out) == 8, "%s", out);
	ck_assert_msg(!strstr(out, "s3cret"), "a password printed:\n%s", out);
	ck_assert_msg(strstr(out, "http://bob:***@127.0.0.1:") && strstr(out, "HTTP 500: Code: 999") &&
			      strstr(out, "Couldn't connect") && strstr(out, "ftp://bob:***@"), "%s", out);
}
END_TEST

/* ------------------------------------------------------------------ */
/* 12. the smaller ones                                                  */

/* A session name ClickHouse cannot make a lock table of (150 '-': each is
 * 3 bytes in its file names) is refused before anything is sent. */
START_TEST(push_checks_session_names_first)
{
	char d[700];

	snprintf(d, sizeof(d), "%s/%s", tmp,
		 "------------------------------------------------------------------------------------------"
		 "------------------------------------------------------------");
	ck_assert_int_eq(rename(good, d), 0);
	int st = with_fake("error", "\"$NF\" push --clickhouse \"http://$1\" \"$3\"; echo \"rc=$? $(wc -l < \"$2\")\"",
			   d, NULL);
	ck_assert_msg(st == 0 && !strcmp(out, "rc=1 0\n"), "%s %s", out, err);
	ck_assert_msg(strstr(err, "session name too long for ClickHouse: 450 bytes"), "%s", err);
}
END_TEST

/* --timeout S bounds each request of push and query --clickhouse. */
START_TEST(push_and_query_timeouts_can_be_set)
{
	int st = with_fake("slow",
			   "start=$(date +%s); \"$NF\" query --timeout 1 --clickhouse \"http://$1\" 'select 1'; a=$?; "
			   "\"$NF\" push --timeout 1 --clickhouse \"http://$1\" \"$3\"; b=$?; "
			   "echo \"$a $b $(( $(date +%s) - start ))\"", good, NULL);
	int a, b, secs;

	ck_assert_msg(st == 0 && sscanf(out, "%d %d %d", &a, &b, &secs) == 3, "%s %s", out, err);
	ck_assert_msg(a == 1 && b == 1 && secs < 15, "%s %s", out, err);
	ck_assert_msg(nf_test_count_lines(err) == 2 && strstr(err, "imeout"), "%s", err);
}
END_TEST

/* The HTML page's row limit, reached with threads, says to filter threads
 * (it said "filter queues"), at the limit it states (it stopped at 16384). */
START_TEST(html_row_limit_names_what_to_filter)
{
	enum { N = 20001 };
	char formats[1024], dat[700], s[700], o[700], why[256];
	size_t cap = (size_t)N * 190, n = 0;
	char *ev = malloc(cap);

	ck_assert_ptr_nonnull(ev);
	nf_test_source_path(formats, sizeof(formats), "samples/kernel/formats");
	for (int i = 0; i < N; i++)
		n += (size_t)snprintf(ev + n, cap - n,
				      "0 %d sched:sched_switch %d prev_comm=t prev_pid=%d prev_prio=120 prev_state=1 "
				      "next_comm=t next_pid=%d next_prio=120\n", 1000 + i, 100 + i, 100 + i, 101 + i);
	snprintf(dat, sizeof(dat), "%s/threads.dat", tmp);
	snprintf(s, sizeof(s), "%s/threads", tmp);
	snprintf(o, sizeof(o), "%s/t.html", tmp);
	ck_assert_msg(nf_tdw_write(formats, ev, dat, NULL, why, sizeof(why)) == 0, "%s", why);
	free(ev);
	ck_assert_msg(nft(NF_TEST_ARGV("import", dat, "-o", s)) == 0, "%s", err);
	refused_one_line(nft(NF_TEST_ARGV("report", s, "-o", o, "--threads", "all")), "threads", "more than 20000 rows");
	ck_assert_msg(strstr(err, "filter threads") && !strstr(err, "queues"), "%s", err);
	ck_assert(access(o, F_OK) != 0);
}
END_TEST

/* trace-cmd import -o "": the directory's name is empty (it said "ctf
 * writer: missing directory"); record -o "" likewise. */
START_TEST(an_empty_output_name_is_named_as_such)
{
	char src[1024], dat[1024];

	nf_test_source_path(src, sizeof(src), "samples/log-buffer-example.nfs");
	nf_test_source_path(dat, sizeof(dat), "samples/kernel/dma-fence.dat");
	refused_one_line(nft(NF_TEST_ARGV("import", dat, "-o", "")), "import", "the output directory is an empty name");
	refused_one_line(nft(NF_TEST_ARGV("record", "-o", "", src)), "record", "the output directory is an empty name");
	ck_assert(!strstr(err, "ctf writer"));
}
END_TEST

/* ------------------------------------------------------------------ */
/* 13. check and the timeline's own findings                             */

/* Calibration pairs beyond 2^62 (the GPU clock crosses it after the last
 * log entry): the timeline records each as out_of_range; check said "whole".
 * (Merged with issue #28's coverage work, which counts them as legal
 * anomalies: never whole.) */
START_TEST(check_calls_calibration_pairs_out_of_range_not_whole)
{
	char sc[700], d[700], src[1024];

	snprintf(sc, sizeof(sc), "%s/cal.nfs", tmp);
	snprintf(d, sizeof(d), "%s/cal", tmp);
	nf_test_source_path(src, sizeof(src), "samples/log-buffer-example.nfs");
	sh_ok("sed 's/gpu_offset 1000000/gpu_offset 4611686018427000000/; s/^advance 1ms/advance 1s/' \"$1\" > \"$2\" && "
	      "\"$NF\" record -o \"$3\" \"$2\" >/dev/null", NF_TEST_ARGV(src, sc, d));
	nft(NF_TEST_ARGV("check", d));
	ck_assert_msg(strstr(out, "verdict: legal anomalies only (") && strstr(out, "99 left out of range of a clock)") &&
			      !strstr(out, "verdict: whole"), "%s", out);
	nft(NF_TEST_ARGV("check", "--json", d));
	ck_assert_msg(strstr(out, "\"verdict\": \"legal_anomalies\"") && strstr(out, "\"out_of_range\": 99"), "%s", out);
	/* a whole session stays whole */
	ck_assert_int_eq(nft(NF_TEST_ARGV("check", good)), 0);
	ck_assert_msg(strstr(out, "verdict: whole"), "%s", out);
}
END_TEST

/* A case of the suite (a ctest of its own, CK_RUN_CASE) with the fixture. */
static TCase *add_case(Suite *s, const char *name)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	suite_add_tcase(s, tc);
	return tc;
}

static Suite *reliability3_suite(void)
{
	Suite *s = suite_create("reliability3");
	TCase *tc = add_case(s, "data");

	tcase_add_test(tc, record_force_keeps_the_session_when_the_program_cannot_run);
	tcase_add_test(tc, record_force_keeps_the_session_when_the_disk_is_full);
	tcase_add_test(tc, record_force_replaces_when_complete);
	tcase_add_test(tc, a_killed_replacement_leaves_the_session_and_the_next_run_cleans_up);
	tcase_add_test(tc, a_swap_killed_half_way_is_undone_by_the_next_run);
	tcase_add_test(tc, outputs_that_are_files_of_the_session_are_refused);
	tc = add_case(s, "hang");
	tcase_add_test(tc, import_of_a_fifo_is_refused_at_once);
	tcase_add_test(tc, push_retries_on_a_lock_it_cannot_take_pause_and_give_up);
	tc = add_case(s, "strings");
	tcase_add_test(tc, clickhouse_answers_reach_the_terminal_cleaned);
	tcase_add_test(tc, directory_names_and_c1_reach_no_terminal_raw);
	tcase_add_test(tc, clickhouse_passwords_are_not_printed);
	tcase_add_test(tc, the_html_notes_command_runs_as_written);
	tcase_add_test(tc, noncharacters_and_latin1_titles_draw);
	tcase_add_test(tc, strings_planted_in_a_timeline_are_untrusted);
	tc = add_case(s, "time");
	tcase_add_test(tc, a_record_near_2_63_saturates_in_every_reader);
	tcase_add_test(tc, times_planted_at_the_ends_of_int64_saturate);
	tc = add_case(s, "small");
	tcase_add_test(tc, push_checks_session_names_first);
	tcase_add_test(tc, push_and_query_timeouts_can_be_set);
	tcase_add_test(tc, html_row_limit_names_what_to_filter);
	tcase_add_test(tc, an_empty_output_name_is_named_as_such);
	tcase_add_test(tc, check_calls_calibration_pairs_out_of_range_not_whole);
	return s;
}

int main(void)
{
	return nf_test_main(reliability3_suite());
}
