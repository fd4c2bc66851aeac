/*
 * The real amdgpu capture (../shared/real-traces/gpuvis-amdgpu.dat: trace-cmd
 * of 2017, Linux 4.11, 4 CPUs, 3.5 s), which libtracecmd refuses because that
 * trace-cmd stored the saved TGIDs under option id 8 (CPUCOUNT today):
 * - it imports, with every record that `trace-cmd report` prints once the
 *   option is understood (counted independently: this test makes its own
 *   corrected copy in a temporary directory and runs trace-cmd report on it),
 *   and `info` says what was worked around (its import note);
 * - every amdgpu_sched_run_job is a jobs row with a start, and a finish
 *   whenever the file recorded the job's finished fence;
 * - the report of the whole capture shows the rings on top and a few dozen
 *   thread rows at most.
 * Skips (exit 77, with a message) when ../shared is absent (a fresh clone).
 */
#define _GNU_SOURCE /* memmem */
#include "nf_test.h"

#include "layout.h"
#include "viewer.h"
#include "contract/session.h"

#include <sqlite3.h>
#include <sys/stat.h>

#define SKIP_CODE 77
#define OUT_MAX (1 << 20)

static char out[OUT_MAX], errb[65536];
static char real[4096];

/* Runs nftrace with args (no shell), its output in out and errb: the exit status. */
static int nft(const char *const args[])
{
	return nf_test_nftrace_run(args, out, sizeof(out), errb, sizeof(errb));
}

/* A shell script with its paths as "$1"... and nftrace as "$NF" (nf_test_sh). */
static int sh(const char *script, const char *const args[])
{
	return nf_test_sh(script, args, out, sizeof(out), errb, sizeof(errb));
}

/* One number printed by a query (the whole output). */
static long long query_num(const char *session, const char *sql)
{
	ck_assert_msg(nft(NF_TEST_ARGV("query", session, "--csv", sql)) == 0,
		      "query %s: %s", sql, errb);
	const char *nl = strchr(out, '\n');
	ck_assert_ptr_nonnull(nl);
	return atoll(nl + 1);
}

static void import_real(char *tmp, size_t len, char *session, size_t slen)
{
	nf_test_tmpdir(tmp, len);
	snprintf(session, slen, "%s/s", tmp);
	ck_assert_msg(nft(NF_TEST_ARGV("import", real, "-o", session)) == 0, "import: %s%s",
		      out, errb);
}

/*
 * Event lines trace-cmd report prints for file whose event name matches the
 * extended regex name_re. trace-cmd report has printed nothing at all, now and
 * then, while other tests traced live on this machine: a run that gives no line
 * is tried twice more before the count is taken as 0.
 */
static long long tracecmd_lines(const char *file, const char *name_re)
{
	/* $2 is an extended regular expression, spliced into grep's pattern. */
	ck_assert_msg(sh("for i in 1 2 3; do n=$(trace-cmd report -i \"$1\" 2>/dev/null | "
			 "grep -cE '\\[[0-9]{3}\\] +[0-9]+\\.[0-9]+: +'\"$2\"); [ \"$n\" != 0 ] && break; done; "
			 "echo \"${n:-0}\"", NF_TEST_ARGV(file, name_re)) == 0, "trace-cmd report -i %s: %s", file, errb);
	return atoll(out);
}

/*
 * The independent count: a copy of the file whose option 8 (right after the
 * "options  " tag) gets an id trace-cmd does not know, so trace-cmd report
 * skips it; then its event lines, per event name.
 */
static void tracecmd_copy(const char *tmp, char *copy, size_t copy_len)
{
	FILE *f = fopen(real, "rb");
	static const char tag[10] = "options  ";
	size_t len;
	char *buf;

	ck_assert_ptr_nonnull(f);
	fseek(f, 0, SEEK_END);
	len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(len);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, len, f), len);
	fclose(f);
	char *at = memmem(buf, len, tag, sizeof(tag));
	ck_assert_ptr_nonnull(at);
	ck_assert_msg(at[10] == 8 && at[11] == 0, "the first option is not id 8");
	at[10] = (char)0xf0;
	at[11] = 0x7f;
	snprintf(copy, copy_len, "%s/corrected.dat", tmp);
	f = fopen(copy, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
	fclose(f);
	free(buf);
}

static long long tracecmd_count(const char *tmp, const char *event)
{
	char copy[4200];

	tracecmd_copy(tmp, copy, sizeof(copy));
	long long n = tracecmd_lines(copy, event);

	unlink(copy);
	return n;
}

/*
 * From trace-cmd report of the corrected copy: microseconds from the first
 * event line to the latest first line of a CPU (when every CPU is recording).
 */
static long long tracecmd_all_cpus_from_us(const char *tmp)
{
	char copy[4200];

	tracecmd_copy(tmp, copy, sizeof(copy));
	ck_assert_msg(sh("trace-cmd report -i \"$1\" 2>/dev/null | awk 'match($0, /\\[[0-9][0-9][0-9]\\] +[0-9]+\\.[0-9]+:/) { "
			 "f = substr($0, RSTART, RLENGTH); c = substr(f, 2, 3); sub(/^\\[[0-9]+\\] +/, \"\", f); sub(/:$/, \"\", f); "
			 "if (t0 == \"\") t0 = f; if (!(c in first)) first[c] = f } "
			 "END { m = 0; for (c in first) if (first[c] - t0 > m) m = first[c] - t0; printf \"%.0f\\n\", m * 1e6 }'",
			 NF_TEST_ARGV(copy)) == 0, "trace-cmd report -i %s: %s", copy, errb);
	unlink(copy);
	return atoll(out);
}

START_TEST(test_every_record_imported)
{
	char tmp[1024], session[1200];

	import_real(tmp, sizeof(tmp), session, sizeof(session));
	static char imported[OUT_MAX];
	memcpy(imported, out, sizeof(imported));
	long long all = tracecmd_count(tmp, "[a-z_]+:");
	ck_assert_msg(all > 50000, "trace-cmd report printed %lld events", all);
	char want[128];
	snprintf(want, sizeof(want), ": %lld kernel records on 4 CPUs", all);
	ck_assert_msg(strstr(imported, want), "import says: %s (trace-cmd report: %lld)", imported, all);
	ck_assert_msg(strstr(imported, "import note: option 8 at offset"), "%s", imported);
	/* Each kind is its own event in the session, as many as trace-cmd prints. */
	static const struct { const char *ours, *theirs; } kinds[] = {
		{ "KernelSchedSwitch", "sched_switch:" },
		{ "KernelDmaFenceSignaled", "dma_fence_signaled:" },
		{ "KernelGpuJob", "amdgpu_(cs_ioctl|sched_run_job):" },
		{ "KernelVblank", "drm_vblank_event:" },
		{ "KernelMarker", "print:" },
		{ "KernelRaw", "amdgpu_(vm_flush|ttm_bo_move):" },
	};
	long long theirs[6];

	for (size_t i = 0; i < 6; i++)
		theirs[i] = tracecmd_count(tmp, kinds[i].theirs);
	ck_assert_msg(nft(NF_TEST_ARGV("info", session)) == 0, "%s", errb);
	ck_assert_msg(strstr(out, "import note:    option 8") && strstr(out, "saved TGIDs"), "%s", out);
	for (size_t i = 0; i < 6; i++) {
		char line[128];

		snprintf(line, sizeof(line), "  %-40s %lld\n", kinds[i].ours, theirs[i]);
		ck_assert_msg(theirs[i] > 0 && strstr(out, line), "%s: trace-cmd report prints %lld; info:\n%s",
			      kinds[i].ours, theirs[i], out);
	}
	/* And in the timeline: markers and vblanks one row each, the rest kept raw. */
	ck_assert_int_eq(query_num(session, "select count(*) from markers"), theirs[4]);
	ck_assert_int_eq(query_num(session, "select count(*) from vblanks"), theirs[3]);
	ck_assert_int_eq(query_num(session, "select count(*) from kernel_events"), theirs[5]);
	nf_test_rmtree(tmp);
}
END_TEST

/*
 * Every amdgpu_sched_run_job is a job with its start; it has its finish
 * whenever the file holds its finished fence's signal (641 jobs, 'signaled').
 * 52 jobs' signals are not in the file: CPU 1's record begins at 1.172814271 s
 * (trace-cmd report's first CPU 1 line; its CPUSTAT says its buffer was cut),
 * every one of the 52 started before it and every signaled job after it. Their
 * finishes are unknown ('not_covered'), never a value. 51 of them have a job run
 * later on their ring whose signal is in the file, and a ring's fences signal
 * in run order (checked here), which proves they finished within the trace:
 * before that moment, from which every signal is in the file (finished_bound_ns
 * 'recording_start'). The only sdma0 job has no such proof: no bound.
 * Scheduled and finished fences are told apart from the data.
 */
START_TEST(test_every_run_job_is_a_job)
{
	char tmp[1024], session[1200];

	import_real(tmp, sizeof(tmp), session, sizeof(session));
	long long runs = tracecmd_count(tmp, "amdgpu_sched_run_job:");
	long long ioctls = tracecmd_count(tmp, "amdgpu_cs_ioctl:");

	ck_assert_int_gt(runs, 600);
	ck_assert_int_eq(query_num(session, "select count(*) from jobs where started_ns is not null"), runs);
	ck_assert_int_eq(query_num(session, "select count(*) from jobs where submitted_ns is not null"), ioctls);
	ck_assert_int_eq(query_num(session, "select count(*) from jobs where driver = 'amdgpu' and ring in "
				   "('gfx', 'sdma0', 'sdma1')"), query_num(session, "select count(*) from jobs"));
	/* A finish is missing only when no signal of the finished fence is in the file. */
	ck_assert_int_eq(query_num(session, "select count(*) from jobs j where finished_ns is null and exists "
				   "(select 1 from fence_ops o where o.op = 'signal' and o.end_ns is not null and "
				   "o.fence = 4294967296 + j.context and o.value = j.seqno)"), 0);
	ck_assert_int_eq(query_num(session, "select count(*) from jobs where status = 'complete' and "
				   "finish_source = 'signaled' and started_ns <= finished_ns"), runs - 52);
	/* The rule ring_order rests on holds in this file: signaled finishes in run order per ring. */
	ck_assert_int_eq(query_num(session, "select count(*) from (select finished_ns f, lead(finished_ns) over "
				   "(partition by ring order by started_ns, id) nf from jobs where finish_source = "
				   "'signaled') where nf < f"), 0);
	/* The moment every CPU records: the latest first line of a CPU in trace-cmd report. */
	long long from_us = tracecmd_all_cpus_from_us(tmp);
	ck_assert_int_eq(query_num(session, "select value from meta where key = 'kernel_all_cpus_from_ns'"),
			 1172814271);
	ck_assert_msg(llabs(from_us - 1172814) <= 1, "trace-cmd report: every CPU recording from %lld us", from_us);
	ck_assert_int_eq(query_num(session, "select count(*) from coverage where scope = 'cpu'"), 4);
	ck_assert_int_eq(query_num(session, "select max(from_ns) from coverage where scope = 'cpu'"), 1172814271);
	/* The 52: started, finish unknown because not covered, never a finish. */
	ck_assert_int_eq(query_num(session, "select count(*) from jobs where status = 'unfinished' and "
				   "finished_ns is null and finish_reason = 'not_covered' and started_ns < 1172814271"), 52);
	ck_assert_int_eq(query_num(session, "select count(*) from jobs where finish_source = 'signaled' and "
				   "started_ns < 1172814271"), 0);
	ck_assert_int_eq(query_num(session, "select count(*) from jobs where bound_source = 'recording_start' and "
				   "finished_bound_ns = 1172814271"), 51);
	ck_assert_int_eq(query_num(session, "select count(*) from jobs j where bound_source = 'recording_start' and "
				   "(select min(l.finished_ns) from jobs l where l.ring = j.ring and l.finish_source = "
				   "'signaled' and (l.started_ns, l.id) > (j.started_ns, j.id)) > 1172814271"), 51);
	ck_assert_int_eq(query_num(session, "select count(*) from jobs where ring = 'sdma0' and "
				   "finished_bound_ns is null and finish_reason = 'not_covered'"), 1);
	/* No finish is ever a bound. */
	ck_assert_int_eq(query_num(session, "select count(*) from jobs where finished_ns is not null and "
				   "finish_source not in ('event', 'signaled')"), 0);
	/* Every amdgpu_sched_run_job is a job with a start. */
	ck_assert_int_eq(query_num(session, "select count(*) from jobs where started_ns is not null"), runs);
	/* The scheduled fence is context - 1: it signals at the run, the finished one later. */
	ck_assert_int_eq(query_num(session, "select count(*) from job_timelines where scheduled_context = "
				   "context - 1 and finished_context = context"),
			 query_num(session, "select count(*) from job_timelines"));
	ck_assert_int_eq(query_num(session, "select count(*) from jobs j join fence_ops o on o.fence = "
				   "4294967296 + j.sched_context and o.value = j.seqno and o.op = 'signal' "
				   "where o.end_ns < j.started_ns or o.end_ns > j.started_ns + 100000"), 0);
	/* Submitters are threads of their process (the saved TGIDs). */
	ck_assert_int_eq(query_num(session, "select count(*) from jobs where thread is not null and process is null"), 0);
	nf_test_rmtree(tmp);
}
END_TEST

/*
 * nftrace critical-path on the real capture (its dma_fence signals carry no
 * queued time, so no fence operation has a latency): the last job to finish,
 * and each job by --job, explained as contiguous segments adding up to its
 * latency (submission to finish).
 */
START_TEST(test_job_critical_path)
{
	char tmp[1024], session[1200];

	import_real(tmp, sizeof(tmp), session, sizeof(session));
	long long last = query_num(session, "select id from jobs where finish_source in ('event', 'signaled') "
				   "order by finished_ns desc, id desc limit 1");
	long long some = query_num(session, "select id from jobs where finish_source = 'signaled' and "
				   "ring = 'gfx' order by id limit 1 offset 100");
	long long ids[2] = { last, some };

	for (int k = 0; k < 2; k++) {
		char id[32];

		/* The capture lasts 3.5 s: --at 10s is the last job to finish, as with no option. */
		snprintf(id, sizeof(id), "%lld", ids[k]);
		ck_assert_msg(nft(k ? NF_TEST_ARGV("critical-path", session, "--job", id, "--json")
				    : NF_TEST_ARGV("critical-path", session, "--at", "10s", "--json")) == 0,
			      "%s", errb);
		char *p = strstr(out, "\"latency_ns\": ");
		long long lat, sum = 0, prev_end = -1, first = -1, end = -1;
		int n = 0;

		ck_assert_msg(p != NULL, "%s", out);
		lat = atoll(p + 14);
		ck_assert_int_gt(lat, 0);
		char want[64];
		snprintf(want, sizeof(want), "{\"job\": %lld,", ids[k]);
		ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "%s", out);
		for (p = out; (p = strstr(p, "\"start_ns\": ")); n++) {
			long long a = atoll(p + 12), b = atoll(strstr(p, "\"end_ns\": ") + 10);

			ck_assert_msg(prev_end < 0 || a == prev_end, "segments not contiguous: %s", out);
			if (first < 0)
				first = a;
			prev_end = end = b;
			sum += b - a;
			p += 12;
		}
		ck_assert_int_gt(n, 0);
		ck_assert_int_eq(sum, lat);
		ck_assert_int_eq(end - first, lat);
	}
	nf_test_rmtree(tmp);
}
END_TEST

/* The height of a PNG (its IHDR). */
static long png_height(const char *path)
{
	unsigned char h[24];
	FILE *f = fopen(path, "rb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fread(h, 1, sizeof(h), f), sizeof(h));
	fclose(f);
	return (long)h[20] << 24 | (long)h[21] << 16 | (long)h[22] << 8 | h[23];
}

/*
 * The report of the whole capture: the rings first (amdgpu gfx, sdma0,
 * sdma1), no job-fence timelines drawn twice, a few dozen thread rows at most
 * (the submitters and the marker writer, under their process), one screen
 * high; --threads all gives the others back.
 */
START_TEST(test_report_shows_what_matters)
{
	char tmp[1024], session[1200], db[4200], png[1300];
	struct nf_render_options ro = { 0 };
	struct nf_render_layout lay;
	struct nf_error err;
	sqlite3 *sql;

	import_real(tmp, sizeof(tmp), session, sizeof(session));
	nf_error_clear(&err);
	ck_assert_int_eq(nf_timeline_ensure(session, db, sizeof(db), &err), 0);
	ck_assert_int_eq(sqlite3_open_v2(db, &sql, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	ro.sel.from_ns = ro.sel.to_ns = -1;
	ck_assert_int_eq(nf_render_layout_build(sql, &ro, &lay, &err), 0);
	/* The rings' lanes (view lanes, kind 'engine') on top, under their group's header. */
	ck_assert_int_eq(lay.rows[0].kind, NF_ROW_GROUP);
	ck_assert_str_eq(lay.rows[0].name, "GPU jobs");
	ck_assert_uint_eq(lay.n_own_lanes, 3);
	ck_assert_int_eq(lay.rows[1].kind, NF_ROW_LANE);
	ck_assert_str_eq(lay.lanes[lay.rows[1].lane].label, "amdgpu gfx");
	ck_assert_str_eq(lay.lanes[lay.rows[2].lane].label, "amdgpu sdma0");
	ck_assert_str_eq(lay.lanes[lay.rows[3].lane].label, "amdgpu sdma1");
	ck_assert_int_eq(lay.lanes[lay.rows[1].lane].items, query_num(session, "select count(*) from jobs where ring = 'gfx'"));
	ck_assert_uint_le(lay.n_threads, 36);
	ck_assert_uint_ge(lay.n_threads, 2);
	ck_assert_uint_gt(lay.threads_left_out, 100);
	ck_assert_ptr_nonnull(nf_render_layout_thread(&lay, 25155)); /* RenderThread: submits, marks */
	for (size_t i = 0; i < lay.n_rows; i++) {
		/* No engine headers without an engine; no dma_fence row for a job context. */
		ck_assert_int_ne(lay.rows[i].kind, NF_ROW_ENGINE);
		ck_assert(!(lay.rows[i].kind == NF_ROW_QUEUE && (lay.rows[i].id == 4294967296LL + 4929 ||
								  lay.rows[i].id == 4294967296LL + 4928)));
	}
	nf_render_layout_release(&lay);
	ro.sel.threads_all = 1;
	ck_assert_int_eq(nf_render_layout_build(sql, &ro, &lay, &err), 0);
	ck_assert_uint_gt(lay.n_threads, 150);
	ck_assert_uint_eq(lay.threads_left_out, 0);
	nf_render_layout_release(&lay);
	sqlite3_close(sql);
	snprintf(png, sizeof(png), "%s/all.png", tmp);
	ck_assert_msg(nft(NF_TEST_ARGV("report", session, "-o", png)) == 0, "%s", errb);
	ck_assert_int_le(png_height(png), 1080);
	/* A 50 ms window: every job in it is drawn, and the page is the same height. */
	ck_assert_msg(nft(NF_TEST_ARGV("report", session, "-o", png, "--from", "2000ms", "--to",
		      "2050ms")) == 0,
		      "%s", errb);
	ck_assert_int_le(png_height(png), 1080);
	ck_assert_int_eq(sqlite3_open_v2(db, &sql, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	struct nf_render_scene sc;

	memset(&sc, 0, sizeof(sc));
	ro.sel.threads_all = 0;
	ro.sel.from_ns = 2000000000;
	ro.sel.to_ns = 2050000000;
	ck_assert_int_eq(nf_render_layout_build(sql, &ro, &lay, &err), 0);
	ck_assert_int_eq(nf_render_collect(sql, &ro, &lay, &sc, &err), 0);
	long long in_window = query_num(session, "select count(*) from jobs where coalesce(submitted_ns, started_ns) "
					"<= 2050000000 and finished_ns >= 2000000000");
	ck_assert_int_gt(in_window, 10);
	ck_assert_int_eq(sc.n_items[nf_render_layout_kind(&lay, "job")], in_window);
	ck_assert_int_gt(sc.n_items[nf_render_layout_kind(&lay, "vblank")], 3);
	ck_assert_int_gt(sc.n_items[nf_render_layout_kind(&lay, "marker")], 10);
	nf_render_scene_release(&sc);
	nf_render_layout_release(&lay);
	sqlite3_close(sql);
	nf_test_rmtree(tmp);
}
END_TEST

/* A damaged copy of the real file: len bytes at off replaced by bytes. */
static void damaged_copy(const char *dst, long off, const void *bytes, size_t len)
{
	FILE *f = fopen(real, "rb");
	size_t n;
	char *buf;

	ck_assert_ptr_nonnull(f);
	fseek(f, 0, SEEK_END);
	n = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(n);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, n, f), n);
	fclose(f);
	if (off < 0) { /* a string to find: replaced where it is */
		char *at = memmem(buf, n, (const char *)bytes, len);

		ck_assert_ptr_nonnull(at);
		memcpy(at, (const char *)bytes + len + 1, len);
	} else {
		memcpy(buf + off, bytes, len);
	}
	f = fopen(dst, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(buf, 1, n, f), n);
	fclose(f);
	free(buf);
}

static void expect_refused(const char *tmp, const char *file, const char *what)
{
	char session[1200];
	struct stat st;

	snprintf(session, sizeof(session), "%s/bad-session", tmp);
	ck_assert_int_eq(nft(NF_TEST_ARGV("import", file, "-o", session)), 1);
	ck_assert_msg(nf_test_count_lines(errb) == 1, "expected one line, got: %s", errb);
	ck_assert_msg(strstr(errb, file) && strstr(errb, what), "'%s' not in: %s", what, errb);
	ck_assert_msg(stat(session, &st) != 0, "a session was left behind");
}

/*
 * Damaged options, CPU data past the end, a format the file lacks: one line
 * naming the file and where, exit 1, no session. The option section of this
 * file's first option, 8, is at 5943649 (after the "options  " tag: id, size, 1047 bytes of
 * TGIDs); the CPU table (offset, size per CPU) at 5945398, after the "flyrecord" tag.
 */
START_TEST(test_damaged_copies_refused)
{
	char tmp[1024], bad[1200];
	static const unsigned char huge[4] = { 0xff, 0xff, 0xff, 0x0f }, four[4] = { 4, 0, 0, 0 };
	static const char tgid_bad[] = "25412 20337\n19610 19610\n\0" "25412 20337\n19610 x9610\n";
	static const char no_fmt[] = "ID: 1252\n\0" "ID: 9252\n";
	long opt = 5943649; /* option 8's id, right after the tag */

	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(bad, sizeof(bad), "%s/bad.dat", tmp);
	/* option 8's size runs past the end of the file */
	damaged_copy(bad, opt + 2, huge, 4);
	expect_refused(tmp, bad, ":5943649: option 8 of 268435455 bytes runs past the end");
	/* option 8 of 4 bytes: a CPU count, "2541" read as a number, not 4 */
	damaged_copy(bad, opt + 2, four, 4);
	expect_refused(tmp, bad, ":5943649: option 8 (CPU count) says");
	/* a TGID line that is not two numbers */
	damaged_copy(bad, -1, tgid_bad, sizeof(tgid_bad) / 2 - 1);
	expect_refused(tmp, bad, "a damaged saved TGIDs line in option 8");
	/* CPU 3's data past the end */
	damaged_copy(bad, 5945398 + 3 * 16, (const unsigned char[8]){ 0, 0, 0x90, 0, 0, 0, 0, 0 }, 8);
	expect_refused(tmp, bad, "truncated: CPU 3 data at offset 9437184");
	/* an unknown option id (CPUSTAT renumbered): skipped, the file still imports */
	damaged_copy(bad, opt + 2 + 4 + 1047, (const unsigned char[2]){ 0x34, 0x12 }, 2);
	ck_assert_msg(sh("\"$NF\" import \"$1\" -o \"$2/ok\"", NF_TEST_ARGV(bad, tmp)) == 0, "%s",
		      errb);
	/* amdgpu_cs_ioctl's format renumbered: its records have none */
	damaged_copy(bad, -1, no_fmt, sizeof(no_fmt) / 2 - 1);
	expect_refused(tmp, bad, "event id 1252 has no format in the trace");
	nf_test_rmtree(tmp);
}
END_TEST

/* Other people's trace.dat files (no GPU events): each imports with every
 * record trace-cmd report prints and builds its timeline; what is not a
 * trace-cmd file is refused in one line. */
START_TEST(test_public_tracedat)
{
	char dir[4096], tmp[1024], session[1200];
	static const char *const files[] = {
		"labsisop-buildroot.dat", "kernel-monitor-framework.dat", "driver.dat", "LabSisOp.dat",
		"LabSisOp_sched_batch.dat", "LabSisOp_sched_other.dat",
	};

	nf_test_source_path(dir, sizeof(dir), "../shared/real-traces/public-tracedat");
	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(session, sizeof(session), "%s/s", tmp);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char want[128];

		char path[4200];

		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		snprintf(want, sizeof(want), ": %lld kernel records on ", tracecmd_lines(path, "[a-zA-Z_0-9]+:"));
		ck_assert_msg(nft(NF_TEST_ARGV("import", path, "-o", session, "--force")) == 0,
			      "%s: %s", files[i], errb);
		ck_assert_msg(strstr(out, want), "%s: trace-cmd report counts%s; import: %s", files[i], want, out);
		ck_assert_int_ge(query_num(session, "select count(*) from meta"), 1);
		if (!strcmp(files[i], "kernel-monitor-framework.dat")) {
			/* Only the scheduler's events: no thread submitted, waited or marked,
			 * so every thread that ran gets its row. */
			char db[4200];
			struct nf_render_options ro = { 0 };
			struct nf_render_layout lay;
			struct nf_error err;
			sqlite3 *sql;

			nf_error_clear(&err);
			ck_assert_int_eq(nf_timeline_ensure(session, db, sizeof(db), &err), 0);
			ck_assert_int_eq(sqlite3_open_v2(db, &sql, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
			ro.sel.from_ns = ro.sel.to_ns = -1;
			ck_assert_int_eq(nf_render_layout_build(sql, &ro, &lay, &err), 0);
			ck_assert_int_eq(query_num(session, "select count(distinct thread) from cpu_runs"),
					 (long long)lay.n_threads);
			ck_assert_uint_gt(lay.n_threads, 1);
			ck_assert_uint_eq(lay.threads_left_out, 0);
			nf_render_layout_release(&lay);
			sqlite3_close(sql);
		}
	}
	for (int i = 0; i < 2; i++) {
		char f[4200];

		snprintf(f, sizeof(f), "%s/%s", dir, i ? "focus_scheduler-not-tracecmd.dat"
						   : "kernel-monitor-framework-appledouble-not-tracecmd.dat");
		expect_refused(tmp, f, "not a trace-cmd file");
	}
	nf_test_rmtree(tmp);
}
END_TEST

/*
 * The first version of gpuvis' capture (2017, 21 s): its per-CPU buffers begin
 * at very different times (CPU 0 from its first record at 0, CPU 2 at 6.2 s,
 * CPU 3 at 13.7 s, CPU 1 at 19.774 s; CPUSTAT says each lost its beginning).
 * No job is "never started" where the file does not cover its start, no finish
 * or duration the file does not show, and the gfx jobs whose finish is in the
 * file keep their exact durations (their finished fence's signal).
 */
START_TEST(test_2017_unknowns)
{
	char tmp[1024], session[1200], file[4096];
	const long long from = 19773981842LL;

	nf_test_source_path(file, sizeof(file), "../shared/real-traces/gpuvis-amdgpu-2017.dat");
	if (access(file, R_OK) != 0) {
		printf("SKIPPED: %s is absent\n", file);
		return;
	}
	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(session, sizeof(session), "%s/s", tmp);
	ck_assert_msg(nft(NF_TEST_ARGV("import", file, "-o", session)) == 0, "import: %s%s", out, errb);
	ck_assert_int_eq(query_num(session, "select value from meta where key = 'kernel_all_cpus_from_ns'"), from);
	ck_assert_int_eq(query_num(session, "select count(*) from coverage where scope = 'cpu' and "
				   "detail like '%cut at the start%'"), 4);
	ck_assert_int_eq(query_num(session, "select from_ns from coverage where scope = 'cpu' and id = 1"), from);
	ck_assert_int_eq(query_num(session, "select from_ns from coverage where scope = 'cpu' and id = 0"), 0);
	/* no job "never started" where the file does not cover its start */
	ck_assert_int_eq(query_num(session, "select count(*) from jobs where status = 'queued'"), 0);
	ck_assert_int_eq(query_num(session, "select count(*) from jobs where status = 'unknown' and "
				   "start_reason = 'not_covered' and coalesce(submitted_ns, 0) < 19773981842"), 11829);
	ck_assert_int_eq(query_num(session, "select count(*) from jobs where status = 'unknown' and ring = 'gfx'"), 11728);
	/* no finish the file does not show: every finish is an event or its fence's signal */
	ck_assert_int_eq(query_num(session, "select count(*) from jobs where finished_ns is not null and "
				   "(finish_source is null or finish_source not in ('event', 'signaled'))"), 0);
	ck_assert_int_eq(query_num(session, "select count(*) from jobs j where finished_ns is not null and "
				   "finished_ns != (select o.end_ns from fence_ops o join job_timelines t on "
				   "t.context = j.context where o.op = 'signal' and o.fence = 4294967296 + "
				   "t.finished_context and o.value = j.seqno)"), 0);
	ck_assert_int_eq(query_num(session, "select count(*) from jobs where ring = 'gfx' and status = 'complete'"), 2756);
	/* the sdma rings: no duration of seconds; a finish shown is tens of microseconds */
	ck_assert_int_eq(query_num(session, "select count(*) from jobs where ring like 'sdma%' and "
				   "finished_ns - started_ns > 51000"), 0);
	ck_assert_int_eq(query_num(session, "select count(*) from jobs where ring = 'sdma0' and finished_ns is not null"), 0);
	/* what bounds a finish is in its own column, proven by a later job on the ring */
	ck_assert_int_eq(query_num(session, "select count(*) from jobs where finished_bound_ns is not null and "
				   "(finished_ns is not null or bound_source is null)"), 0);
	ck_assert_int_eq(nft(NF_TEST_ARGV("check", session)), 0);
	ck_assert_msg(strstr(out, "every CPU recorded from 19.773982 s") != NULL, "%s", out);
	nf_test_rmtree(tmp);
}
END_TEST

static Suite *real_suite(void)
{
	Suite *s = suite_create("real_amdgpu");
	TCase *tc = tcase_create("import");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_every_record_imported);
	tcase_add_test(tc, test_every_run_job_is_a_job);
	tcase_add_test(tc, test_job_critical_path);
	tcase_add_test(tc, test_report_shows_what_matters);
	tcase_add_test(tc, test_damaged_copies_refused);
	tcase_add_test(tc, test_public_tracedat);
	tcase_add_test(tc, test_2017_unknowns);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	nf_test_source_path(real, sizeof(real), "../shared/real-traces/gpuvis-amdgpu.dat");
	if (access(real, R_OK) != 0) {
		printf("SKIPPED: %s is absent (the real captures live beside the repository, in ../shared)\n", real);
		return SKIP_CODE;
	}
	if (system("command -v trace-cmd >/dev/null 2>&1") != 0) {
		printf("SKIPPED: trace-cmd is not installed: the independent count needs it\n");
		return SKIP_CODE;
	}
	return nf_test_main(real_suite());
}
