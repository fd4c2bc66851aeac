/*
 * ftrace text (`nftrace import FILE.txt`, importers/ftrace_text, kernel/text.c):
 *   - the committed texts samples/kernel/NAME.report.txt (`trace-cmd report`, µs)
 *     and NAME.report-t.txt (`trace-cmd report -t`, ns) are what trace-cmd makes of
 *     the committed .dat fixtures (mode "regenerate": skipped, exit 77, without
 *     trace-cmd);
 *   - each fixture's ns text imports into the same timeline as its .dat: every
 *     table's sorted rows equal, but for what the text does not say (the
 *     differences are asserted to be exactly these): kernel_events.name of the
 *     events the decoder does not know is "?:EVENT" (the text does not name the
 *     system), coverage.detail says there is no CPUSTAT, and meta's mode, source,
 *     build_id and session_key;
 *   - µs text: equal too where the fixture's times are whole µs;
 *   - a tracefs `trace` file (samples/kernel/tracefs-trace.txt, hand-written):
 *     exact rows;
 *   - a line that does not read: exit non-zero, "FILE:LINE:", the session at -o kept;
 *   - mode "real": trace-cmd report -t of the captures in ../shared/real-traces
 *     against their .dat imports, as above (skipped, exit 77, when absent);
 *   - mode "live": this machine's own tracefs `trace` file (a private instance,
 *     sched_switch, sched_wakeup and a marker of ours), as the kernel prints it
 *     today: every line reads, the marker and our thread come out (skipped,
 *     exit 77, when tracefs is not writable).
 */
#include "nf_test.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char out[1 << 16], errb[1 << 16];

static int nft(const char *const args[])
{
	return nf_test_nftrace_run(args, out, sizeof(out), errb, sizeof(errb));
}

static int line_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The rows of sql on db, each "a|b|c", sorted, one a line (malloc'd). */
static char *rows(const char *db_path, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	char **v = NULL, *res;
	size_t n = 0, cap = 0, total = 1;

	ck_assert_int_eq(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
	while (sqlite3_step(st) == SQLITE_ROW) {
		char line[8192];
		size_t len = 0;

		for (int i = 0; i < sqlite3_column_count(st); i++) {
			const char *t = (const char *)sqlite3_column_text(st, i);

			len += (size_t)snprintf(line + len, sizeof(line) - len, "%s%s", i ? "|" : "",
						t ? t : "NULL");
			if (len >= sizeof(line))
				len = sizeof(line) - 1;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			v = realloc(v, cap * sizeof(*v));
			ck_assert_ptr_nonnull(v);
		}
		v[n] = strdup(line);
		total += strlen(line) + 1;
		n++;
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	if (n)
		qsort(v, n, sizeof(*v), line_cmp);
	res = malloc(total);
	ck_assert_ptr_nonnull(res);
	res[0] = '\0';
	for (size_t i = 0, off = 0; i < n; i++) {
		off += (size_t)sprintf(res + off, "%s\n", v[i]);
		free(v[i]);
	}
	free(v);
	return res;
}

static long count(const char *db, const char *sql)
{
	char *r = rows(db, sql);
	long n = atol(r);

	free(r);
	return n;
}

static void db_of(char *db, size_t len, const char *session)
{
	snprintf(db, len, "%s/.timeline.db", session);
}

/* Whether the rows of sql are the same in both databases (a message into why). */
static bool same(const char *a, const char *b, const char *sql, const char *table, char *why, size_t wlen)
{
	char *x = rows(a, sql), *y = rows(b, sql);
	bool eq = strcmp(x, y) == 0;

	if (!eq)
		snprintf(why, wlen, "table %s differs\n--- .dat:\n%.3000s--- text:\n%.3000s", table, x, y);
	free(x);
	free(y);
	return eq;
}

/* The one number sql gives on database a with b attached as t. */
static long joined_count(const char *a, const char *b, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	long n;

	ck_assert_int_eq(sqlite3_open_v2(a, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, "ATTACH ?1 AS t", -1, &st, NULL), SQLITE_OK);
	sqlite3_bind_text(st, 1, b, -1, SQLITE_STATIC);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
	ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return n;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0, k;

	if (!f)
		return NULL;
	do {
		if (cap - n < 4096) {
			cap = cap ? cap * 2 : 65536;
			buf = realloc(buf, cap);
			ck_assert_ptr_nonnull(buf);
		}
		k = fread(buf + n, 1, cap - n, f);
		n += k;
	} while (k > 0);
	fclose(f);
	*len = n;
	return buf;
}

/*
 * The timeline of the text session (txt) is that of the .dat session (dat),
 * table by table, but for what the text cannot say. Returns the number of
 * tables compared.
 */
static int compare_sessions(const char *dat, const char *txt)
{
	char a[4200], b[4200], why[8000], sql[512];
	char *ta, *tb, *save = NULL;
	int n = 0;

	db_of(a, sizeof(a), dat);
	db_of(b, sizeof(b), txt);
	ta = rows(a, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'");
	tb = rows(b, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'");
	ck_assert_str_eq(ta, tb);
	for (char *t = strtok_r(ta, "\n", &save); t; t = strtok_r(NULL, "\n", &save)) {
		if (!strcmp(t, "meta")) {
			/* what the session is made of and when the timeline was built */
			snprintf(sql, sizeof(sql), "SELECT * FROM meta WHERE key NOT IN "
				 "('mode', 'source', 'build_id', 'session_key')");
			ck_assert_int_eq(count(b, "SELECT count(*) FROM meta WHERE key = 'mode' AND "
					       "value = 'kernel-text-import'"), 1);
		} else if (!strcmp(t, "kernel_events")) {
			/* the text does not name an event's system: "?" for those the
			 * decoder does not know, the same otherwise */
			snprintf(sql, sizeof(sql), "SELECT id, ts_ns, cpu, thread, substr(name, instr(name, ':')), "
				 "fields FROM kernel_events");
			ck_assert_msg(joined_count(a, b, "SELECT count(*) FROM kernel_events d JOIN t.kernel_events x "
					   "USING (id) WHERE d.name <> x.name AND "
					   "x.name <> '?' || substr(d.name, instr(d.name, ':'))") == 0,
				      "kernel_events: a name differs other than by its system being '?'");
		} else if (!strcmp(t, "coverage")) {
			/* no CPUSTAT in text: a CPU's span starts at its first line, which
			 * is the .dat's too unless CPUSTAT said the buffer was whole */
			snprintf(sql, sizeof(sql), "SELECT scope, id, log, to_ns, events FROM coverage");
			char *x = rows(a, "SELECT scope, id, to_ns, events, CASE WHEN detail LIKE 'CPUSTAT:%' THEN "
				       "'no CPUSTAT for this CPU: whole from its first record' ELSE detail END FROM coverage");
			char *y = rows(b, "SELECT scope, id, to_ns, events, detail FROM coverage");

			ck_assert_msg(!strcmp(x, y), "coverage: details differ other than by CPUSTAT\n%s---\n%s", x, y);
			free(x);
			free(y);
			char *whole = rows(a, "SELECT group_concat(DISTINCT id) FROM coverage WHERE detail LIKE "
					   "'%whole from the start%'"), spans[256];

			whole[strcspn(whole, "\n")] = '\0';
			snprintf(spans, sizeof(spans), "SELECT scope, id, from_ns FROM coverage WHERE id NOT IN (%s)",
				 strcmp(whole, "NULL") ? whole : "-1");
			ck_assert_msg(same(a, b, spans, t, why, sizeof(why)), "%s", why);
			free(whole);
		} else {
			snprintf(sql, sizeof(sql), "SELECT * FROM \"%s\"", t);
		}
		ck_assert_msg(same(a, b, sql, t, why, sizeof(why)), "%s", why);
		n++;
	}
	free(ta);
	free(tb);
	return n;
}

static const char *const fixtures[] = { "dma-fence", "drm-sched", "drm-sched-616", "i915", "xe" };

static void import_ok(const char *file, const char *session)
{
	ck_assert_msg(nft(NF_TEST_ARGV("import", file, "-o", session)) == 0, "import %s: %s", file, errb);
}

/* Each fixture's `trace-cmd report -t` text: the same timeline as its .dat. */
START_TEST(test_text_vs_dat)
{
	char tmp[1024], rel[256], dat[4096], txt[4096], us[4096], sd[1200], st[1200], su[1200];
	const char *name = fixtures[_i];

	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(rel, sizeof(rel), "samples/kernel/%s.dat", name);
	nf_test_source_path(dat, sizeof(dat), rel);
	snprintf(rel, sizeof(rel), "samples/kernel/%s.report-t.txt", name);
	nf_test_source_path(txt, sizeof(txt), rel);
	snprintf(rel, sizeof(rel), "samples/kernel/%s.report.txt", name);
	nf_test_source_path(us, sizeof(us), rel);
	snprintf(sd, sizeof(sd), "%s/dat", tmp);
	snprintf(st, sizeof(st), "%s/txt", tmp);
	snprintf(su, sizeof(su), "%s/us", tmp);
	import_ok(dat, sd);
	import_ok(txt, st);
	ck_assert_msg(strstr(out, "ftrace text: timestamps in ns"), "%s", out);
	ck_assert_int_ge(compare_sessions(sd, st), 10);
	/* the µs text: the same where every time is whole µs, else the same rows rounded */
	import_ok(us, su);
	/* trace-cmd prints (ts + 500) / 1000: 5.002000500 is "5.002001" (dma-fence) */
	ck_assert_msg(strstr(out, "timestamps in µs (each rounded to the nearest µs"), "%s", out);
	if (!strcmp(name, "dma-fence") || !strcmp(name, "i915")) {
		compare_sessions(sd, su);
	} else {
		char a[4200], b[4200];

		db_of(a, sizeof(a), sd);
		db_of(b, sizeof(b), su);
		ck_assert_int_eq(count(a, "SELECT count(*) FROM jobs"), count(b, "SELECT count(*) FROM jobs"));
		ck_assert_int_eq(count(a, "SELECT count(*) FROM fence_ops"), count(b, "SELECT count(*) FROM fence_ops"));
	}
	nf_test_rmtree(tmp);
}
END_TEST

static void expect(const char *session, const char *sql, const char *want)
{
	char db[4200], *got;

	db_of(db, sizeof(db), session);
	got = rows(db, sql);
	ck_assert_msg(!strcmp(got, want), "%s\n--- got:\n%s--- expected:\n%s", sql, got, want);
	free(got);
}

/* Lines from two buffer instances ("inst: " before the task, as trace-cmd
 * report prints a file of several) and the function tracer's "FUNC <-PARENT"
 * lines (event ftrace:function, raw, as a trace.dat keeps them). */
START_TEST(test_instances_and_function_lines)
{
	static const char text[] =
		"cpus=2\n"
		"inst:            bash-100   [001] 5.000001000: sched_switch:         bash:100 [120] S ==> sleep:101 [120]\n"
		"                bash-100   [000] 5.000002000: do_sys_open.isra.0 <-__x64_sys_openat\n"
		"inst:           sleep-101   [001] 5.000003000: sched_switch:         sleep:101 [120] R ==> bash:100 [120]\n";
	char tmp[1024], file[1200], s[1200];
	FILE *f;

	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(file, sizeof(file), "%s/t.txt", tmp);
	snprintf(s, sizeof(s), "%s/s", tmp);
	ck_assert_ptr_nonnull(f = fopen(file, "w"));
	fputs(text, f);
	fclose(f);
	import_ok(file, s);
	ck_assert_msg(strstr(out, "3 ftrace text lines of events on 2 CPUs (0 dma_fence, 2 sched, 0 GPU job/vblank, "
				  "0 markers, 1 other)"), "%s", out);
	expect(s, "SELECT ts_ns, cpu, thread, name, fields FROM kernel_events",
	       "1000|0|100|ftrace:function|do_sys_open.isra.0 <-__x64_sys_openat\n");
	expect(s, "SELECT thread, comm FROM kernel_threads", "100|bash\n101|sleep\n");
	/* "FUNC" with no "<-PARENT" is no line of either kind: refused, not guessed */
	ck_assert_ptr_nonnull(f = fopen(file, "w"));
	fputs("cpus=1\n            bash-100   [000] 5.000001000: sched_swi\n", f);
	fclose(f);
	ck_assert_int_ne(nft(NF_TEST_ARGV("import", file, "-o", s, "--force")), 0);
	ck_assert_msg(strstr(errb, "t.txt:2: no EVENT: name after the timestamp"), "%s", errb);
	nf_test_rmtree(tmp);
}
END_TEST

/* tracefs' own layout: irq-flags column, "#P:N", LOST lines, tracing_mark_write. */
START_TEST(test_tracefs_layout)
{
	char tmp[1024], file[4096], s[1200];

	nf_test_tmpdir(tmp, sizeof(tmp));
	nf_test_source_path(file, sizeof(file), "samples/kernel/tracefs-trace.txt");
	snprintf(s, sizeof(s), "%s/s", tmp);
	import_ok(file, s);
	ck_assert_msg(strstr(out, "13 ftrace text lines of events on 2 CPUs (5 dma_fence, 3 sched, 1 GPU job/vblank, "
				  "2 markers, 2 other), 3 events lost by the kernel"), "%s", out);
	ck_assert_msg(strstr(out, "timestamps in µs"), "%s", out);
	ck_assert_msg(strstr(out, "13 of 16 events written are in the buffer"), "%s", out);
	/* line 23's prev_state "D|W" is no state of the kernel's print format: raw */
	ck_assert_msg(strstr(out, "1 lines of events the decoder knows are in a layout this reader does not know, "
				  "or too long or slow to match "
				  "(the first at line 23)"), "%s", out);
	expect(s, "SELECT ts_ns, thread, cpu, text FROM markers",
	       "1000000|400|1|marker of an unnamed thread\n100000|100|0|frame 1 begin\n");
	expect(s, "SELECT thread, comm FROM kernel_threads", "100|render app\n300|CPU 0/KVM\n");
	/* R+ is the preempted bit (256); the KVM thread's run has no end the text gives */
	expect(s, "SELECT thread, runs FROM cpu_run_blocks", "100|[[0,0,300000,256]]\n300|[[0,0,null,null]]\n");
	expect(s, "SELECT op, fence, value, queued_ns, observed_ns, end_ns, status, thread FROM fence_ops",
	       "signal|4294967303|1|200000|NULL|500000|complete|100\n"
	       "wait|4294967303|1|400000|400000|600000|complete|300\n");
	expect(s, "SELECT thread, value, start_ns, end_ns, status FROM cpu_waits", "300|1|400000|600000|satisfied\n");
	expect(s, "SELECT context, driver, timeline FROM kernel_timelines", "7|nfgpu|gfx ring\n");
	expect(s, "SELECT kind, first_ns, lost_entries, detail FROM anomalies",
	       "kernel_lost|500000|3|CPU 1: the kernel ring buffer lost 3 events before this point\n");
	expect(s, "SELECT scope, id, from_ns, to_ns, events, detail FROM coverage",
	       "cpu|0|0|1000000|8|no CPUSTAT for this CPU: whole from its first record\n"
	       "cpu|1|500000|1000000|5|no CPUSTAT for this CPU: whole from its first record\n");
	expect(s, "SELECT ts_ns, cpu, thread, name, fields FROM kernel_events",
	       "500000|1|0|sched:sched_wakeup|comm=CPU 0/KVM pid=300 prio=120 target_cpu=000\n"
	       "700000|0|300|sched:sched_switch|prev_comm=CPU 0/KVM prev_pid=300 prev_prio=120 prev_state=D|W ==> "
	       "next_comm=swapper/0 next_pid=0 next_prio=120\n"
	       "900000|1|0|?:irq_handler_entry|irq=30 name=amdgpu\n");
	expect(s, "SELECT ts_ns, crtc, seq FROM vblanks", "800000|0|42\n");
	expect(s, "SELECT value FROM meta WHERE key IN ('start_ticks', 'duration_ns')", "1000000\n100000000000\n");
	nf_test_rmtree(tmp);
}
END_TEST

/* A copy of the dma-fence text with line `at` replaced by `with` (NULL: lines at and at+1 swapped). */
static void damaged(const char *path, int at, const char *with)
{
	char src[4096], line[4096], held[4096] = "";
	FILE *in, *o;
	int n = 0;

	nf_test_source_path(src, sizeof(src), "samples/kernel/dma-fence.report-t.txt");
	ck_assert_ptr_nonnull(in = fopen(src, "r"));
	ck_assert_ptr_nonnull(o = fopen(path, "w"));
	while (fgets(line, sizeof(line), in)) {
		n++;
		if (n == at && with)
			fprintf(o, "%s\n", with);
		else if (n == at)
			snprintf(held, sizeof(held), "%s", line);
		else {
			fputs(line, o);
			if (n == at + 1 && held[0])
				fputs(held, o);
		}
	}
	fclose(in);
	fclose(o);
}

START_TEST(test_malformed_line_keeps_session)
{
	char tmp[1024], good[4096], bad[1200], s[1200], kernel[1300], msg[1400];
	size_t a_len, b_len;
	char *a, *b;
	static const struct {
		int line;
		const char *with, *says;
		int err_line;
	} cases[] = {
		{ 7, "          render-100   [000]     5.001200000 dma_fence_init: driver=nfgpu", "no SECONDS.FRACTION: timestamp", 7 },
		{ 9, "this is not ftrace", "not an event line", 9 },
		{ 12, "          render-100   [000]     5001200000: dma_fence_init: driver=nfgpu", "its unit is unknown", 12 },
		{ 5, NULL, "the time goes back", 6 },
		{ 21, "CPU:1 [LOST many EVENTS]", "not an event line", 21 },
	};

	nf_test_tmpdir(tmp, sizeof(tmp));
	nf_test_source_path(good, sizeof(good), "samples/kernel/dma-fence.report-t.txt");
	snprintf(s, sizeof(s), "%s/s", tmp);
	snprintf(bad, sizeof(bad), "%s/bad.txt", tmp);
	snprintf(kernel, sizeof(kernel), "%s/kernel", s);
	import_ok(good, s);
	a = slurp(kernel, &a_len);
	ck_assert_int_eq(nft(NF_TEST_ARGV("query", "--csv", s, "SELECT count(*) FROM fence_ops")), 0);
	static char ops[sizeof(out)];
	memcpy(ops, out, sizeof(out));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		damaged(bad, cases[i].line, cases[i].with);
		ck_assert_int_ne(nft(NF_TEST_ARGV("import", bad, "-o", s, "--force")), 0);
		snprintf(msg, sizeof(msg), "%s:%d: ", bad, cases[i].err_line);
		ck_assert_msg(strstr(errb, msg) && strstr(errb, cases[i].says), "case %zu: %s", i, errb);
		/* the session at -o is as it was */
		b = slurp(kernel, &b_len);
		ck_assert_msg(b && a_len == b_len && !memcmp(a, b, a_len), "case %zu: the old session was touched", i);
		free(b);
		ck_assert_int_eq(nft(NF_TEST_ARGV("query", "--csv", s, "SELECT count(*) FROM fence_ops")), 0);
		ck_assert_str_eq(out, ops);
	}
	free(a);
	nf_test_rmtree(tmp);
}
END_TEST

/* Writes text into a new file at path. */
static void write_text(const char *path, const char *text)
{
	FILE *f;

	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
}

/* Hostile lines: each an exact import or one "FILE:LINE: ..." error, never
 * undefined behaviour (the sanitizer build's "runtime error") nor a session
 * written that does not read back. */
START_TEST(test_hostile_numbers)
{
	static const struct {
		const char *text, *says; /* says NULL: imports */
		int err_line;
	} cases[] = {
		/* INT64_MIN as %lld prints it: read (negating it as a long long was UB) */
		{ "cpus=1\n  a-1 [000] 5.000000001: dma_fence_init: driver=a timeline=b "
		  "context=-9223372036854775808 seqno=1\n", NULL, 0 },
		/* below INT64_MIN: not a number the kernel prints: the line kept raw */
		{ "cpus=1\n  a-1 [000] 5.000000001: dma_fence_init: driver=a timeline=b "
		  "context=-9223372036854775809 seqno=1\n", NULL, 0 },
		/* lost counts that add up past a long long (each alone is read) */
		{ "cpus=1\nCPU:0 [LOST 4611686018427387903 EVENTS]\nCPU:0 [LOST 4611686018427387903 EVENTS]\n"
		  "CPU:0 [LOST 4611686018427387903 EVENTS]\n  a-1 [000] 5.000000001: x: y\n",
		  "lost-event counts that add up to 2^63 or more", 4 },
		/* times are int64 ns in the session: 2^63 ns and later refused at their line */
		{ "cpus=1\n  a-1 [000] 9223372036.854775807: x: y\n", "a timestamp too large", 2 },
		{ "cpus=1\n  a-1 [000] 17999999999.999999999: x: y\n", "a timestamp too large", 2 },
		{ "cpus=1\n  a-1 [000] 9223372036.854775806: x: y\n", NULL, 0 },
		/* a CPU past trace-cmd's "cpus=N": at its line (was "FILE: CPU 3 in the lines ...") */
		{ "cpus=2\n  a-1 [000] 5.000000001: x: y\n  a-1 [003] 5.000000002: x: y\n",
		  "a CPU the header does not have (CPU 3; cpus=2)", 3 },
		{ "cpus=2\nCPU:2 [LOST 1 EVENTS]\n  a-1 [000] 5.000000001: x: y\n",
		  "a CPU the header does not have (CPU 2; cpus=2)", 2 },
	};
	char tmp[1024], file[1200], s[1200], msg[1400];

	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(file, sizeof(file), "%s/t.txt", tmp);
	snprintf(s, sizeof(s), "%s/s", tmp);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		write_text(file, cases[i].text);
		int rc = nft(NF_TEST_ARGV("import", file, "-o", s, "--force"));

		ck_assert_msg(!strstr(errb, "runtime error"), "case %zu: %s", i, errb);
		if (!cases[i].says) {
			ck_assert_msg(rc == 0, "case %zu: %s", i, errb);
			continue;
		}
		snprintf(msg, sizeof(msg), "%s:%d: ", file, cases[i].err_line);
		ck_assert_msg(rc != 0 && strstr(errb, msg) && strstr(errb, cases[i].says), "case %zu: %s", i, errb);
	}
	/* the two contexts: INT64_MIN read, the one below it kept raw (not wrapped) */
	write_text(file, cases[0].text);
	ck_assert_int_eq(nft(NF_TEST_ARGV("import", file, "-o", s, "--force")), 0);
	ck_assert_msg(strstr(out, "(1 dma_fence, 0 sched") && !strstr(out, "layout this reader does not know"), "%s",
		      out);
	write_text(file, cases[1].text);
	ck_assert_int_eq(nft(NF_TEST_ARGV("import", file, "-o", s, "--force")), 0);
	ck_assert_msg(strstr(out, "1 lines of events the decoder knows are in a layout this reader does not know"),
		      "%s", out);
	/* a known event whose fields and text do not fit one record (64 KiB): its
	 * text kept raw, not the import refused */
	{
		size_t big = 40000;
		char *text = malloc(big + 256);

		ck_assert_ptr_nonnull(text);
		int k = snprintf(text, 256, "cpus=1\n  kworker-7 [000] 1.000000000: dma_fence_signaled: driver=d timeline=");
		memset(text + k, 'a', big);
		snprintf(text + k + big, 128, " context=1 seqno=1\n");
		write_text(file, text);
		free(text);
		ck_assert_int_eq(nft(NF_TEST_ARGV("import", file, "-o", s, "--force")), 0);
		ck_assert_msg(strstr(out, "1 lines of events the decoder knows are in a layout this reader does not know, "
					  "or too long or slow to match (the first at line 2)"), "%s", out);
		char db[1300];

		db_of(db, sizeof(db), s);
		ck_assert_int_eq(count(db, "SELECT count(*) FROM kernel_events WHERE name = 'dma_fence:dma_fence_signaled' "
					   "AND length(fields) = 4096"), 1); /* kernel_events.fields' cap */
	}
	nf_test_rmtree(tmp);
}
END_TEST

/* tracefs' "#P:N" is num_online_cpus() when the file was read: a CPU taken
 * offline (or left down: nosmt) keeps its number, and its lines are in the
 * file (they were refused: "CPU 3 in the lines, the header says 2 CPUs"). */
START_TEST(test_tracefs_offline_cpus)
{
	static const char text[] = "# tracer: nop\n"
				   "#\n"
				   "# entries-in-buffer/entries-written: 2/2   #P:2\n"
				   "#\n"
				   "            bash-100     [000] .....   100.000100: x: y\n"
				   "            bash-100     [003] .....   100.000200: x: y\n";
	char tmp[1024], file[1200], s[1200];

	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(file, sizeof(file), "%s/t.txt", tmp);
	snprintf(s, sizeof(s), "%s/s", tmp);
	write_text(file, text);
	import_ok(file, s);
	ck_assert_msg(strstr(out, "2 ftrace text lines of events on 4 CPUs"), "%s", out);
	ck_assert_msg(strstr(out, "#P:2 counts the CPUs online when the file was read, the lines name CPU 3: 4 CPUs"),
		      "%s", out);
	expect(s, "SELECT id, from_ns, events FROM coverage", "0|0|1\n1|NULL|0\n2|NULL|0\n3|100000|1\n");
	nf_test_rmtree(tmp);
}
END_TEST

/* Lines made to be slow: a body two string captures of a template would try
 * every split of (sched_switch: quadratic in the line), the [CPU] column
 * searched behind many ") [0]" (the "(TGID)" looked for back to the line's
 * start). Each was seconds a line; a whole file of them took hours. */
START_TEST(test_hostile_slow_lines)
{
	char tmp[1024], file[1200], s[1200];
	size_t cap = 40 * 70000, n = 0;
	char *text = malloc(cap);
	struct timespec t0, t1;

	ck_assert_ptr_nonnull(text);
	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(file, sizeof(file), "%s/t.txt", tmp);
	snprintf(s, sizeof(s), "%s/s", tmp);
	n += (size_t)snprintf(text + n, cap - n, "cpus=1\n");
	for (int i = 0; i < 16; i++) {
		n += (size_t)snprintf(text + n, cap - n, "  a-1 [000] 5.%09d: sched_switch: ", 2 * i);
		for (int k = 0; k < 4800; k++)
			n += (size_t)snprintf(text + n, cap - n, ":1 [1] R ==> ");
		n += (size_t)snprintf(text + n, cap - n, "\nx");
		for (int k = 0; k < 12000; k++)
			n += (size_t)snprintf(text + n, cap - n, ") [0]");
		n += (size_t)snprintf(text + n, cap - n, "  a-1 [000] 5.%09d: x: y\n", 2 * i + 1);
	}
	write_text(file, text);
	free(text);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	import_ok(file, s);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ck_assert_msg(strstr(out, "32 ftrace text lines of events"), "%s", out);
	ck_assert_msg(strstr(out, "16 lines of events the decoder knows are in a layout"), "%s", out);
	/* before: a minute and more (the sanitizer build several); now well under a second */
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;

	ck_assert_msg(secs < 20, "%.1f s for 32 lines", secs);
	nf_test_rmtree(tmp);
}
END_TEST

/* Mode "regenerate": the committed texts are what trace-cmd 3.1 prints. */
START_TEST(test_regenerate)
{
	char dat[4096], rel[256], txt[4096], tmp[1024], fresh[1200];
	int bad = 0;

	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(fresh, sizeof(fresh), "%s/fresh.txt", tmp);
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++)
		for (int ns = 0; ns < 2; ns++) {
			size_t a_len = 0, b_len = 0;
			char *a, *b;

			snprintf(rel, sizeof(rel), "samples/kernel/%s.dat", fixtures[i]);
			nf_test_source_path(dat, sizeof(dat), rel);
			snprintf(rel, sizeof(rel), "samples/kernel/%s.report%s.txt", fixtures[i], ns ? "-t" : "");
			nf_test_source_path(txt, sizeof(txt), rel);
			if (nf_test_sh(ns ? "trace-cmd report -t \"$1\" > \"$2\"" : "trace-cmd report \"$1\" > \"$2\"",
				       NF_TEST_ARGV(dat, fresh), out, sizeof(out), errb, sizeof(errb)) != 0) {
				printf("FAIL: trace-cmd report %s: %s\n", dat, errb);
				bad = 1;
				continue;
			}
			a = slurp(txt, &a_len);
			b = slurp(fresh, &b_len);
			if (!a || !b || a_len != b_len || memcmp(a, b, a_len)) {
				printf("FAIL: %s is not what `trace-cmd report%s %s` prints: regenerate it\n", txt,
				       ns ? " -t" : "", dat);
				bad = 1;
			}
			free(a);
			free(b);
		}
	nf_test_rmtree(tmp);
	ck_assert_msg(!bad, "a committed text is stale (see above)");
}
END_TEST

/* Mode "real": the real captures' `trace-cmd report -t` against their .dat. */
START_TEST(test_real)
{
	static const char *const files[] = { "gpuvis-amdgpu-2017.dat", "igt-i915-flip-2014.dat",
					     "igt-i915-flip-2014-v7-zstd.dat", "gpuvis-amdgpu.dat" };
	char dir[4096], dat[4300], tmp[1024], txt[1200], sd[1200], st[1200], a[1300], b[1300];

	nf_test_source_path(dir, sizeof(dir), "../shared/real-traces");
	nf_test_tmpdir(tmp, sizeof(tmp));
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(dat, sizeof(dat), "%s/%s", dir, files[i]);
		snprintf(txt, sizeof(txt), "%s/%zu.txt", tmp, i);
		snprintf(sd, sizeof(sd), "%s/%zu-dat", tmp, i);
		snprintf(st, sizeof(st), "%s/%zu-txt", tmp, i);
		if (access(dat, F_OK) != 0) {
			printf("%s: absent, skipped\n", files[i]);
			continue;
		}
		if (nf_test_sh("trace-cmd report -t \"$1\" > \"$2\"", NF_TEST_ARGV(dat, txt), out, sizeof(out), errb,
			       sizeof(errb)) != 0) {
			/* gpuvis-amdgpu.dat: trace-cmd 3.1 refuses its option 8 (README) */
			printf("%s: trace-cmd report refuses it, skipped (%s)\n", files[i], errb);
			continue;
		}
		import_ok(dat, sd);
		import_ok(txt, st);
		db_of(a, sizeof(a), sd);
		db_of(b, sizeof(b), st);
		printf("%s: %ld jobs, %ld fence ops, %ld markers: ", files[i], count(b, "SELECT count(*) FROM jobs"),
		       count(b, "SELECT count(*) FROM fence_ops"), count(b, "SELECT count(*) FROM markers"));
		ck_assert_int_eq(count(a, "SELECT count(*) FROM jobs"), count(b, "SELECT count(*) FROM jobs"));
		ck_assert_int_eq(count(a, "SELECT count(*) FROM fence_ops"), count(b, "SELECT count(*) FROM fence_ops"));
		printf("%d tables the same but for what the text does not say\n", compare_sessions(sd, st));
		fflush(stdout);
	}
	nf_test_rmtree(tmp);
}
END_TEST

/* The live capture: $1 the output file, $2 the marker. A private instance
 * (tracefs mounted first when it is not: root may), removed whatever happens. */
static const char live_script[] =
	"T=/sys/kernel/tracing\n"
	"[ -d $T/instances ] || mount -t tracefs nodev $T 2>/dev/null || exit 77\n"
	"I=$T/instances/nftrace-text-test-$$\n"
	"mkdir $I 2>/dev/null || exit 77\n"
	"trap 'echo 0 > $I/tracing_on; rmdir $I' EXIT\n"
	"echo 1 > $I/events/sched/sched_switch/enable && echo 1 > $I/events/sched/sched_wakeup/enable &&\n"
	"echo 1 > $I/tracing_on || exit 1\n"
	"echo \"$2\" > $I/trace_marker || exit 1\n"
	"sleep 0.05; sleep 0.05\n"
	"echo 0 > $I/tracing_on\n"
	"cat $I/trace > \"$1\"\n";

START_TEST(test_live)
{
	char tmp[1024], file[1200], s[1200], db[1300], marker[64], sql[256];
	int rc;

	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(file, sizeof(file), "%s/trace.txt", tmp);
	snprintf(s, sizeof(s), "%s/s", tmp);
	snprintf(marker, sizeof(marker), "nftrace text test %ld", (long)getpid());
	rc = nf_test_sh(live_script, NF_TEST_ARGV(file, marker), out, sizeof(out), errb, sizeof(errb));
	ck_assert_msg(rc == 0, "the live capture failed (%d): %s", rc, errb);
	import_ok(file, s);
	ck_assert_msg(strstr(out, "ftrace text lines of events on") && strstr(out, "1 markers"), "%s", out);
	db_of(db, sizeof(db), s);
	/* the marker, exactly, from the shell that wrote it */
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM markers WHERE text = '%s'", marker);
	ck_assert_int_eq(count(db, sql), 1);
	/* the two sleeps ran: switches decoded, not left raw, and named threads */
	ck_assert_int_gt(count(db, "SELECT count(*) FROM cpu_run_blocks"), 0);
	ck_assert_int_gt(count(db, "SELECT count(*) FROM kernel_threads WHERE comm = 'sleep'"), 0);
	ck_assert_int_eq(count(db, "SELECT count(*) FROM kernel_events WHERE name LIKE '%sched_switch'"), 0);
	/* the CPUs with lines have their coverage rows */
	ck_assert_int_gt(count(db, "SELECT count(*) FROM coverage WHERE scope = 'cpu'"), 0);
	nf_test_rmtree(tmp);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("ftrace_text");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_text_vs_dat, 0, (int)(sizeof(fixtures) / sizeof(fixtures[0])));
	tcase_add_test(tc, test_tracefs_layout);
	tcase_add_test(tc, test_instances_and_function_lines);
	tcase_add_test(tc, test_malformed_line_keeps_session);
	tcase_add_test(tc, test_hostile_numbers);
	tcase_add_test(tc, test_tracefs_offline_cpus);
	tcase_add_test(tc, test_hostile_slow_lines);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "regenerate")) {
		Suite *s = suite_create("ftrace_text_regenerate");
		TCase *tc = tcase_create("regenerate");

		if (system("command -v trace-cmd >/dev/null 2>&1") != 0) {
			printf("SKIPPED: trace-cmd is not installed\n");
			return 77;
		}
		tcase_add_test(tc, test_regenerate);
		suite_add_tcase(s, tc);
		return nf_test_main(s);
	}
	if (argc > 1 && !strcmp(argv[1], "live")) {
		Suite *s = suite_create("ftrace_text_live");
		TCase *tc = tcase_create("live");

		if (geteuid() != 0) {
			printf("SKIPPED: tracefs instances need root\n");
			return 77;
		}
		tcase_set_timeout(tc, 120);
		tcase_add_test(tc, test_live);
		suite_add_tcase(s, tc);
		return nf_test_main(s);
	}
	if (argc > 1 && !strcmp(argv[1], "real")) {
		Suite *s = suite_create("ftrace_text_real");
		TCase *tc = tcase_create("real");
		char dir[4096];
		const char *src = getenv("NF_SOURCE_DIR");

		snprintf(dir, sizeof(dir), "%s/../shared/real-traces", src ? src : ".");
		if (access(dir, F_OK) != 0) {
			printf("SKIPPED: %s is absent (the real captures live beside the repository, in ../shared)\n", dir);
			return 77;
		}
		if (system("command -v trace-cmd >/dev/null 2>&1") != 0) {
			printf("SKIPPED: trace-cmd is not installed (it makes the texts)\n");
			return 77;
		}
		tcase_set_timeout(tc, 300);
		tcase_add_test(tc, test_real);
		suite_add_tcase(s, tc);
		return nf_test_main(s);
	}
	return nf_test_main(suite());
}
