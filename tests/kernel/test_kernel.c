/*
 * Kernel events end to end: the dma_fence fixture (samples/kernel/dma-fence.dat,
 * made from samples/kernel/dma-fence.events and this kernel's real format
 * files) imports into the expected fence_ops, deps, cpu_waits, cpu_runs,
 * kernel_events and anomalies rows, and its report draws them; bad trace-cmd
 * files give one clear line and exit 1 without leaving a session; a trace
 * made with `trace-cmd extract` from a private tracefs instance on this
 * machine imports and draws its CPU rows; `nftrace record --kernel` records
 * scheduler events next to a scenario (the live tests skip visibly when
 * tracefs is not writable: test_kernel_extract and test_kernel_record are
 * their own ctests, reported as skipped, exit 77).
 */
#include "nf_test.h"
#include "tracedat_writer.h"

#include "kernel_int.h"
#include "layout.h"
#include "viewer.h"
#include "contract/ctf.h"
#include "contract/render.h"
#include "contract/timeline.h"

#include <cairo.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>

#define OUT_MAX 65536

static char out[OUT_MAX], errb[OUT_MAX];

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

static void fixture_paths(char *formats, size_t flen, char *events, size_t elen, char *dat, size_t dlen)
{
	nf_test_source_path(formats, flen, "samples/kernel/formats");
	nf_test_source_path(events, elen, "samples/kernel/dma-fence.events");
	nf_test_source_path(dat, dlen, "samples/kernel/dma-fence.dat");
}

/* The committed fixture is what the writer makes from its event list. */
START_TEST(test_fixture_regenerates)
{
	char formats[4096], events[4096], dat[4096], tmp[1024], path[4200], why[256];
	size_t a_len, b_len;
	char *text, *a, *b;

	fixture_paths(formats, sizeof(formats), events, sizeof(events), dat, sizeof(dat));
	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(path, sizeof(path), "%s/re.dat", tmp);
	text = nf_tdw_slurp(events, NULL);
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(nf_tdw_write(formats, text, path, NULL, why, sizeof(why)) == 0, "%s", why);
	a = nf_tdw_slurp(dat, &a_len);
	b = nf_tdw_slurp(path, &b_len);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(a_len, b_len);
	ck_assert_msg(memcmp(a, b, a_len) == 0, "samples/kernel/dma-fence.dat is stale: regenerate it "
		      "with nf-make-tracedat samples/kernel/formats samples/kernel/dma-fence.events");
	free(a);
	free(b);
	free(text);
	nf_test_rmtree(tmp);
}
END_TEST

static void import_fixture(char *tmp, size_t len, char *session, size_t slen)
{
	char formats[4096], events[4096], dat[4096];

	fixture_paths(formats, sizeof(formats), events, sizeof(events), dat, sizeof(dat));
	nf_test_tmpdir(tmp, len);
	snprintf(session, slen, "%s/s", tmp);
	ck_assert_int_eq(nft(NF_TEST_ARGV("import", dat, "-o", session)), 0);
	ck_assert_msg(strstr(out, "29 kernel records on 2 CPUs (18 dma_fence, 10 sched, 0 GPU job/vblank, 0 markers, 1 other), "
			      "5 events lost by the kernel") != NULL, "%s", out);
}

/*
 * Runs sql on the session's timeline and compares the rows, as CSV (header,
 * NULL as empty), with expect. The first call goes through `nftrace query`
 * (which builds DIR/.timeline.db); the others read that database in-process,
 * which keeps the test quick under the sanitizers.
 */
static void query(const char *session, const char *sql, const char *expect)
{
	char db[4300];
	sqlite3 *h = NULL;
	sqlite3_stmt *st = NULL;
	size_t n = 0;

	snprintf(db, sizeof(db), "%s/.timeline.db", session);
	if (access(db, F_OK) != 0) {
		ck_assert_int_eq(nft(NF_TEST_ARGV("query", "--csv", session, sql)), 0);
		ck_assert_msg(strcmp(out, expect) == 0, "%s\n--- got:\n%s--- expected:\n%s", sql, out, expect);
		return;
	}
	ck_assert_int_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	ck_assert_msg(sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(h));
	for (int c = 0; c < sqlite3_column_count(st); c++)
		n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%s", c ? "," : "", sqlite3_column_name(st, c));
	n += (size_t)snprintf(out + n, sizeof(out) - n, "\n");
	while (sqlite3_step(st) == SQLITE_ROW && n < sizeof(out) - 256) {
		for (int c = 0; c < sqlite3_column_count(st); c++) {
			const unsigned char *t = sqlite3_column_text(st, c);

			n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%s", c ? "," : "", t ? (const char *)t : "");
		}
		n += (size_t)snprintf(out + n, sizeof(out) - n, "\n");
	}
	sqlite3_finalize(st);
	sqlite3_close(h);
	ck_assert_msg(strcmp(out, expect) == 0, "%s\n--- got:\n%s--- expected:\n%s", sql, out, expect);
}

/* The fixture's dma_fence rows: fence_ops, deps, cpu_waits, queue_threads. */
static void fixture_fence_rows(const char *s)
{
	/* Every fence (context, seqno) is a signal on its timeline; the CPU waits are
	 * wait ops on their thread (queue NULL). Times: ns since the first event. */
	query(s, "SELECT id, queue, op, fence, value, queued_ns, observed_ns, end_ns, status, thread "
		 "FROM fence_ops ORDER BY id",
	      "id,queue,op,fence,value,queued_ns,observed_ns,end_ns,status,thread\n"
	      "1,4294967303,signal,4294967303,1,1000000,,2000000,complete,100\n"
	      "2,4294967303,signal,4294967303,2,1200000,,3000000,complete,100\n"
	      "3,4294967305,signal,4294967305,1,1500000,,2500000,complete,100\n"
	      "4,4294967303,signal,4294967303,3,3500000,,,unsignaled,100\n"
	      "5,,wait,4294967305,1,1600000,1600000,2200000,complete,201\n"
	      "6,,wait,4294967303,2,1800000,1800000,3050000,complete,200\n");
	/* Only the waiter on 7/2 was released by a signal (3.0 ms <= 3.05 ms); the
	 * poller on 9/1 gave up at 2.2 ms, before its signal at 2.5 ms. */
	query(s, "SELECT signal_id, wait_id, cpu_signal, stall_ns, reason FROM deps ORDER BY wait_id",
	      "signal_id,wait_id,cpu_signal,stall_ns,reason\n,5,,600000,timeout\n2,6,,1250000,\n");
	/* The critical path of that wait stops at it and says why. */
	ck_assert_int_eq(nft(NF_TEST_ARGV("critical-path", s, "--op", "5")), 0);
	ck_assert_msg(strstr(out, "released by nothing in the capture (it timed out: its fence signaled only after): "
			      "the path stops here") != NULL, "%s", out);
	ck_assert_int_eq(nft(NF_TEST_ARGV("critical-path", s, "--op", "6")), 0);
	ck_assert_msg(strstr(out, "released by op 2") != NULL && !strstr(out, "stops here"), "%s", out);
	query(s, "SELECT thread, fence, value, start_ns, end_ns, status FROM cpu_waits ORDER BY start_ns",
	      "thread,fence,value,start_ns,end_ns,status\n"
	      "201,4294967305,1,1600000,2200000,timeout\n"
	      "200,4294967303,2,1800000,3050000,satisfied\n");
	/* queue_threads holds the emitting threads of the dma_fence signals, as fence_ops says. */
	query(s, "SELECT queue, fence, thread, ops FROM queue_threads ORDER BY queue, thread",
	      "queue,fence,thread,ops\n4294967303,4294967303,100,3\n4294967305,4294967305,100,1\n");
	query(s, "SELECT count(*) FROM (SELECT queue, fence, thread, count(*) FROM fence_ops "
		 "WHERE thread IS NOT NULL AND queue IS NOT NULL AND queued_ns IS NOT NULL GROUP BY 1, 2, 3 "
		 "EXCEPT SELECT queue, fence, thread, ops FROM queue_threads)", "count(*)\n0\n");
	query(s, "SELECT count(*) FROM (SELECT queue, fence, thread, ops FROM queue_threads EXCEPT "
		 "SELECT queue, fence, thread, count(*) FROM fence_ops WHERE thread IS NOT NULL AND "
		 "queue IS NOT NULL AND queued_ns IS NOT NULL GROUP BY 1, 2, 3)", "count(*)\n0\n");
}

START_TEST(test_fixture_import_rows)
{
	char tmp[1024], s[4200];

	import_fixture(tmp, sizeof(tmp), s, sizeof(s));
	fixture_fence_rows(s);
	query(s, "SELECT queue, context, driver, timeline FROM kernel_timelines ORDER BY queue",
	      "queue,context,driver,timeline\n4294967303,7,nfgpu,gfx\n4294967305,9,nfgpu,compute\n");
	query(s, "SELECT q.queue, q.name, a.name AS adapter FROM queues q JOIN adapters a USING (adapter) "
		 "ORDER BY queue",
	      "queue,name,adapter\n4294967303,nfgpu gfx,Linux kernel dma_fence\n"
	      "4294967305,nfgpu compute,Linux kernel dma_fence\n");
	query(s, "SELECT fence, created_ns FROM fences ORDER BY fence",
	      "fence,created_ns\n4294967303,1000000\n4294967305,1500000\n");
	query(s, "SELECT thread, cpu, start_ns, end_ns, end_state FROM cpu_runs ORDER BY cpu, start_ns",
	      "thread,cpu,start_ns,end_ns,end_state\n"
	      "100,0,0,1550000,1\n201,0,1550000,1650000,2\n100,0,1650000,,\n"
	      "200,1,500000,1850000,2\n201,1,2200000,2300000,1\n200,1,3050000,3400000,16\n");
	query(s, "SELECT thread, comm FROM kernel_threads ORDER BY thread",
	      "thread,comm\n100,render\n200,waiter\n201,poller\n");
	query(s, "SELECT ts_ns, cpu, thread, name, fields FROM kernel_events ORDER BY id",
	      "ts_ns,cpu,thread,name,fields\n"
	      "1600000,0,201,dma_fence:dma_fence_enable_signal,context=9 seqno=1\n"
	      "1800000,1,200,dma_fence:dma_fence_enable_signal,context=7 seqno=2\n"
	      "3000000,1,0,sched:sched_wakeup,comm=waiter pid=200 prio=120 target_cpu=001\n"
	      "3400000,1,200,sched:sched_process_exit,comm=waiter pid=200 prio=120 group_dead=true\n"
	      "3600000,0,100,dma_fence:dma_fence_destroy,context=7 seqno=1\n");
	query(s, "SELECT kind, queue, first_ns, last_ns, lost_entries, detail FROM anomalies",
	      "kind,queue,first_ns,last_ns,lost_entries,detail\n"
	      "kernel_lost,,2500000,2500000,5,CPU 1: the kernel ring buffer lost 5 events before this point\n");
	/* The ready-made queues report names the pseudo-adapter instead of
	 * numbering it 4294967295. */
	ck_assert_int_eq(nft(NF_TEST_ARGV("query", "--csv", s, "--report", "queues")), 0);
	ck_assert_str_eq(out, "queue,name,adapter,adapter_name,ops,waits,signals,lost,stalled_ns,span_ns\n"
			      "4294967303,nfgpu gfx,,Linux kernel dma_fence,3,0,3,0,0,2000000\n"
			      "4294967305,nfgpu compute,,Linux kernel dma_fence,1,0,1,0,0,1000000\n");
	/* The stock babeltrace2 reads the session: the kernel stream is valid CTF. */
	ck_assert_int_eq(sh("babeltrace2 \"$1\" | grep -c 'KernelDmaFence'", NF_TEST_ARGV(s)), 0);
	ck_assert_str_eq(out, "18\n");
	nf_test_rmtree(tmp);
}
END_TEST

/*
 * The dma_fence sightings and waits are held in memory up to a bound
 * (importers/kernel/kernel_fences.h; NFTRACE_KERNEL_FENCES_IN_MEMORY sets it), past it
 * they go to TEMP tables and are written with SQL: the same rows whether the
 * bound is never reached, reached at once (0) or in the middle of the session
 * (after 1, 2 or 3 fences or waits).
 */
START_TEST(test_fixture_fence_memory_bound)
{
	static const char *const bounds[] = { "0", "1", "2", "3", NULL };
	char tmp[1024], s[4200], db[4300], env[64];

	import_fixture(tmp, sizeof(tmp), s, sizeof(s));
	snprintf(db, sizeof(db), "%s/.timeline.db", s);
	for (int i = 0; bounds[i]; i++) {
		snprintf(env, sizeof(env), "NFTRACE_KERNEL_FENCES_IN_MEMORY=%s", bounds[i]);
		unlink(db);
		ck_assert_msg(nf_test_nftrace_env(NF_TEST_ARGV(env), NF_TEST_ARGV("query", s, "SELECT 1"), out,
						  sizeof(out), errb, sizeof(errb)) == 0, "%s: %s", env, errb);
		fixture_fence_rows(s);
		/* A timeline's start: its first sighting. */
		query(s, "SELECT fence, created_ns FROM fences ORDER BY fence",
		      "fence,created_ns\n4294967303,1000000\n4294967305,1500000\n");
	}
	nf_test_rmtree(tmp);
}
END_TEST

/*
 * The live path's decoder (what record --kernel does with the sub-buffers it
 * read from trace_pipe_raw): the fixture's ring-buffer pages, decoded with
 * kbuffer and the format files, give the same timeline as the import through
 * libtracecmd; sub-buffers the reader had to drop are one more lost marker.
 */
START_TEST(test_live_pages_decode)
{
	char formats[4096], events[4096], dat[4096], tmp[1024], s[1100], why[256];
	unsigned char *pages[2] = { NULL, NULL };
	size_t lens[2] = { 0, 0 };
	struct nf_tdw_options o = { 0 };
	struct nf_kpages cpus[2];
	struct nf_ctf_writer *w = NULL;
	struct nf_error err;
	char *text;

	fixture_paths(formats, sizeof(formats), events, sizeof(events), dat, sizeof(dat));
	text = nf_tdw_slurp(events, NULL);
	ck_assert_ptr_nonnull(text);
	o.cpu_pages = pages;
	o.cpu_pages_len = lens;
	o.n_cpu_pages = 2;
	ck_assert_msg(nf_tdw_write(formats, text, NULL, &o, why, sizeof(why)) == 0, "%s", why);
	ck_assert(lens[0] % 4096 == 0 && lens[1] % 4096 == 0 && lens[0] && lens[1]);

	struct tep_handle *tep = tep_alloc();
	ck_assert_ptr_nonnull(tep);
	tep_set_long_size(tep, 8);
	tep_set_page_size(tep, 4096);
	tep_set_cpus(tep, 2);
	nf_error_clear(&err);
	ck_assert_msg(nf_kformats_load(tep, formats, NULL, &err) == 0, "%s", err.msg);

	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(s, sizeof(s), "%s/s", tmp);
	struct nf_ctf_env_entry env[] = {
		{ "domain", false, 0, "nftrace" },
		{ "schema_version", true, NF_SCHEMA_VERSION, NULL },
		{ "source", false, 0, "live pages" },
		{ "cpu_frequency", true, 1000000000, NULL },
		{ "start_ticks", true, 5000000000, NULL },
	};
	struct nf_ctf_writer_options wo = { 0 };
	wo.cpu_frequency = 1000000000u;
	wo.env = env;
	wo.n_env = sizeof(env) / sizeof(env[0]);
	ck_assert_msg(nf_ctf_writer_create(s, &wo, &w, &err) == 0, "%s", err.msg);
	struct nf_kclock_map map = { 5000000000u, 5000000000u, 1000000000u };
	struct nf_kdecoder *d = nf_kdecoder_create(tep, w, &map, 2, 1, "mono", "pages", &err);
	ck_assert_msg(d != NULL, "%s", err.msg);
	memset(cpus, 0, sizeof(cpus));
	for (int c = 0; c < 2; c++) {
		cpus[c].fd = -1;
		cpus[c].pages = pages[c];
		cpus[c].n_pages = lens[c] / 4096;
	}
	cpus[1].dropped = 3;
	cpus[1].dropped_ts = 5003200000u;
	ck_assert_msg(nf_kpages_decode(d, tep, cpus, 2, 4096, &err) == 0, "%s", err.msg);
	struct nf_kernel_stats st;
	nf_kdecoder_get_stats(d, &st);
	ck_assert_uint_eq(st.records, 29);
	ck_assert_uint_eq(st.dma_fence, 18);
	ck_assert_uint_eq(st.lost_records, 2);
	ck_assert_uint_eq(st.lost_events, 5);
	nf_kdecoder_destroy(d);
	ck_assert_msg(nf_ctf_writer_close(w, &err) == 0, "%s", err.msg);
	tep_free(tep);

	query(s, "SELECT id, queue, op, value, queued_ns, end_ns, status, thread FROM fence_ops ORDER BY id",
	      "id,queue,op,value,queued_ns,end_ns,status,thread\n"
	      "1,4294967303,signal,1,1000000,2000000,complete,100\n"
	      "2,4294967303,signal,2,1200000,3000000,complete,100\n"
	      "3,4294967305,signal,1,1500000,2500000,complete,100\n"
	      "4,4294967303,signal,3,3500000,,unsignaled,100\n"
	      "5,,wait,1,1600000,2200000,complete,201\n"
	      "6,,wait,2,1800000,3050000,complete,200\n");
	query(s, "SELECT signal_id, wait_id, stall_ns, reason FROM deps ORDER BY wait_id",
	      "signal_id,wait_id,stall_ns,reason\n,5,600000,timeout\n2,6,1250000,\n");
	query(s, "SELECT count(*) FROM cpu_runs", "count(*)\n6\n");
	/* The dropped sub-buffers are one marker at the first one's timestamp. */
	query(s, "SELECT kind, first_ns, lost_entries FROM anomalies ORDER BY first_ns",
	      "kind,first_ns,lost_entries\nkernel_lost,2500000,5\nkernel_lost,3200000,\n");
	for (int c = 0; c < 2; c++)
		free(pages[c]);
	free(text);
	nf_test_rmtree(tmp);
}
END_TEST

/* The colour of the pixel at (x, y) of an ARGB32 surface, as 0xRRGGBB. */
static uint32_t pixel(cairo_surface_t *img, double x, double y)
{
	int stride = cairo_image_surface_get_stride(img);
	const unsigned char *d = cairo_image_surface_get_data(img);
	uint32_t v;

	memcpy(&v, d + (int)y * stride + (int)x * 4, 4);
	return v & 0xFFFFFFu;
}

/* The scene the viewer draws of the whole of session s (release both after). */
static void whole_scene(const char *s, struct nf_render_layout *lay, struct nf_render_scene *sc)
{
	char db[1400];
	struct nf_render_options ro = { 0 };
	struct nf_error err;
	sqlite3 *sql;

	snprintf(db, sizeof(db), "%s/.timeline.db", s);
	ck_assert_int_eq(sqlite3_open_v2(db, &sql, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	ro.output = "x.png";
	ro.sel.from_ns = -1;
	ro.sel.to_ns = -1;
	memset(sc, 0, sizeof(*sc));
	ck_assert_msg(nf_render_layout_build(sql, &ro, lay, &err) == 0, "%s", err.msg);
	ck_assert_msg(nf_render_collect(sql, &ro, lay, sc, &err) == 0, "%s", err.msg);
	sqlite3_close(sql);
}

START_TEST(test_fixture_report)
{
	char tmp[1024], s[4200], png[4300], db[4400];
	struct nf_render_options ro = { 0 };
	struct nf_render_layout lay;
	struct nf_error err;
	sqlite3 *sql;
	double y0, y1;

	import_fixture(tmp, sizeof(tmp), s, sizeof(s));
	snprintf(png, sizeof(png), "%s/r.png", tmp);
	ck_assert_int_eq(nft(NF_TEST_ARGV("report", s, "-o", png)), 0);
	/* Where things are, from the same layout the viewer used. */
	snprintf(db, sizeof(db), "%s/.timeline.db", s);
	ck_assert_int_eq(sqlite3_open_v2(db, &sql, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	ro.output = png;
	ro.sel.from_ns = -1;
	ro.sel.to_ns = -1;
	ck_assert_int_eq(nf_render_layout_build(sql, &ro, &lay, &err), 0);
	ck_assert_uint_eq(lay.n_queues, 2);
	ck_assert_uint_eq(lay.n_threads, 3);
	cairo_surface_t *img = cairo_image_surface_create_from_png(png);
	ck_assert_int_eq(cairo_surface_status(img), CAIRO_STATUS_SUCCESS);
	ck_assert_int_eq(cairo_image_surface_get_width(img), (int)lay.width);

	/* The compute timeline's signal 9/1 (1.5 .. 2.5 ms) is dark pink at 2 ms. */
	const struct nf_render_row *q = nf_render_layout_queue(&lay, 4294967305LL);
	ck_assert_ptr_nonnull(q);
	nf_render_lane_extent(q, NF_LANE_SIGNAL, &y0, &y1);
	ck_assert_uint_eq(pixel(img, nf_render_layout_x(&lay, 2000000), (y0 + y1) / 2), 0xC2185B);
	/* ... and nothing is drawn there before it was emitted. */
	ck_assert_uint_ne(pixel(img, nf_render_layout_x(&lay, 500000), (y0 + y1) / 2), 0xC2185B);
	/* The waiter's CPU wait (1.8 .. 3.05 ms) fills its thread row at 2.5 ms. */
	const struct nf_render_row *w = nf_render_layout_thread(&lay, 200);
	ck_assert_ptr_nonnull(w);
	nf_render_lane_extent(w, NF_LANE_CPU, &y0, &y1);
	ck_assert_uint_eq(pixel(img, nf_render_layout_x(&lay, 2500000), (y0 + y1) / 2), 0xA7BCD1);
	/* Thread 100 ran on CPU 0 until 1.55 ms: the run bar at the row's bottom. */
	const struct nf_render_row *r = nf_render_layout_thread(&lay, 100);
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(pixel(img, nf_render_layout_x(&lay, 1000000), r->y + r->h - 4), 0x5E7A96);
	ck_assert_uint_ne(pixel(img, nf_render_layout_x(&lay, 1600000), r->y + r->h - 4), 0x5E7A96);
	/* The 5 events CPU 1 lost at 2.5 ms: a mark on the CPU threads header. */
	for (size_t i = 0; i < lay.n_rows; i++)
		if (lay.rows[i].kind == NF_ROW_CPU_HEAD) {
			double hy = lay.rows[i].y + lay.rows[i].h / 2;

			ck_assert_uint_ne(pixel(img, nf_render_layout_x(&lay, 2500000), hy),
					  pixel(img, nf_render_layout_x(&lay, 2200000), hy)); /* no grid line there */
		}
	cairo_surface_destroy(img);
	nf_render_layout_release(&lay);
	sqlite3_close(sql);
	nf_test_rmtree(tmp);
}
END_TEST

/* A bad file: exit 1, one line on stderr naming the file and containing what, no session. */
static void expect_bad(const char *tmp, const char *file, const char *what)
{
	char session[4200];
	struct stat st;

	snprintf(session, sizeof(session), "%s/bad-session", tmp);
	ck_assert_int_eq(nft(NF_TEST_ARGV("import", file, "-o", session)), 1);
	ck_assert_msg(nf_test_count_lines(errb) == 1, "expected one line, got: %s", errb);
	ck_assert_msg(strstr(errb, file) != NULL && strstr(errb, what) != NULL,
		      "'%s' not in: %s", what, errb);
	ck_assert_msg(stat(session, &st) != 0 && errno == ENOENT, "a session was left behind");
}

static void write_prefix(const char *src, const char *dst, size_t n)
{
	size_t len;
	char *d = nf_tdw_slurp(src, &len);
	FILE *f = fopen(dst, "wb");

	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(d, 1, n < len ? n : len, f), n < len ? n : len);
	fclose(f);
	free(d);
}

START_TEST(test_bad_files)
{
	char formats[4096], events[4096], dat[4096], tmp[1024], path[4200], why[256];
	struct nf_tdw_options o = { 0 };
	char *text;

	fixture_paths(formats, sizeof(formats), events, sizeof(events), dat, sizeof(dat));
	nf_test_tmpdir(tmp, sizeof(tmp));
	text = nf_tdw_slurp(events, NULL);
	ck_assert_ptr_nonnull(text);

	snprintf(path, sizeof(path), "%s/missing.dat", tmp);
	expect_bad(tmp, path, "No such file");
	snprintf(path, sizeof(path), "%s/empty.dat", tmp);
	write_prefix(dat, path, 0);
	expect_bad(tmp, path, "not a trace-cmd file");
	/* Truncated: in the header, in header_page, in the formats, in the CPU data. */
	static const struct { size_t n; const char *what; } cuts[] = {
		{ 12, "truncated in the file header" },
		{ 100, "truncated in header_page" },
		{ 3000, "truncated in the event formats" },
		{ 9000, "truncated: CPU 0 data" },
		{ 20000, "truncated: CPU 1 data" },
	};
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		snprintf(path, sizeof(path), "%s/cut%zu.dat", tmp, cuts[i].n);
		write_prefix(dat, path, cuts[i].n);
		expect_bad(tmp, path, cuts[i].what);
	}
	/* A version nobody wrote. */
	o.version = "9";
	snprintf(path, sizeof(path), "%s/v9.dat", tmp);
	ck_assert_msg(nf_tdw_write(formats, text, path, &o, why, sizeof(why)) == 0, "%s", why);
	expect_bad(tmp, path, "version 9 is not supported");
	/* No event formats stored. */
	o.version = NULL;
	o.no_formats = true;
	snprintf(path, sizeof(path), "%s/noformats.dat", tmp);
	ck_assert_msg(nf_tdw_write(formats, text, path, &o, why, sizeof(why)) == 0, "%s", why);
	expect_bad(tmp, path, "no event formats");
	/* Formats stored for the sched events only: the dma_fence records have none. */
	o.no_formats = false;
	o.only_system = "sched";
	snprintf(path, sizeof(path), "%s/partial.dat", tmp);
	ck_assert_msg(nf_tdw_write(formats, text, path, &o, why, sizeof(why)) == 0, "%s", why);
	expect_bad(tmp, path, "has no format in the trace");
	free(text);
	nf_test_rmtree(tmp);
}
END_TEST


/* Every file of dir (names, sizes, contents) as one text, to see that a failed run left it as it was. */
static char *dir_fingerprint(const char *dir)
{
	char *cmd = NULL, *res;
	const char *const args[] = { dir, NULL };

	(void)cmd;
	ck_assert_int_eq(sh("cd \"$1\" && for f in $(ls -A | sort); do printf '%s %s ' \"$f\" \"$(wc -c < \"$f\")\"; "
			    "sha1sum < \"$f\"; done", args), 0);
	res = strdup(out);
	ck_assert_ptr_nonnull(res);
	return res;
}

/* What is beside dir: the entries of its parent that start with its name and a dot. */
static void assert_nothing_beside(const char *dir)
{
	const char *const args[] = { dir, NULL };

	ck_assert_int_eq(sh("ls -d \"$1\".* 2>/dev/null | wc -l", args), 0);
	ck_assert_msg(atoi(out) == 0, "left beside %s: %s", dir, out);
}

/*
 * One rule for every import: the new session is built beside DIR and swapped
 * in only once whole. A trace.dat that fails after its header checks, a FIFO,
 * SIGTERM and SIGINT in the middle, a killed import's leftovers: DIR stays as
 * it was, and nothing is left beside it.
 */
START_TEST(test_import_keeps_session)
{
	char formats[4096], events[4096], dat[4096], tmp[1024], sess[1200], bad[1200], fifo[1200], big[1200];
	char left[1300], held[1300], why[256];
	struct nf_tdw_options o = { 0 };
	char *text, *before, *after;

	import_fixture(tmp, sizeof(tmp), sess, sizeof(sess));
	fixture_paths(formats, sizeof(formats), events, sizeof(events), dat, sizeof(dat));
	ck_assert_int_eq(nft(NF_TEST_ARGV("query", sess, "select count(*) from fence_ops")), 0);
	before = dir_fingerprint(sess);
	/* Formats for the sched events only: the dma_fence records fail the import midway. */
	text = nf_tdw_slurp(events, NULL);
	ck_assert_ptr_nonnull(text);
	o.only_system = "sched";
	snprintf(bad, sizeof(bad), "%s/partial.dat", tmp);
	ck_assert_msg(nf_tdw_write(formats, text, bad, &o, why, sizeof(why)) == 0, "%s", why);
	free(text);
	ck_assert_int_eq(nft(NF_TEST_ARGV("import", "--force", bad, "-o", sess)), 1);
	ck_assert_msg(strstr(errb, "has no format in the trace") != NULL, "%s", errb);
	after = dir_fingerprint(sess);
	ck_assert_str_eq(before, after);
	free(after);
	assert_nothing_beside(sess);
	/* A FIFO is refused before it is opened: no wait for a writer. */
	snprintf(fifo, sizeof(fifo), "%s/fifo", tmp);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	ck_assert_int_eq(sh("timeout 20 \"$NF\" import \"$1\" -o \"$2\"", NF_TEST_ARGV(fifo, sess)), 1);
	ck_assert_msg(strstr(errb, "not a regular file") != NULL, "%s", errb);
	/* -o DIR/ is DIR. */
	snprintf(left, sizeof(left), "%s/", sess);
	ck_assert_msg(nft(NF_TEST_ARGV("import", "--force", dat, "-o", left)) == 0, "%s", errb);
	assert_nothing_beside(sess);
	free(before);
	before = dir_fingerprint(sess);
	/* What a killed import left (its lock free) goes at the next import; one
	 * still held (a running import's) stays. */
	snprintf(left, sizeof(left), "%s.import-AbCdEf", sess);
	snprintf(held, sizeof(held), "%s.import-HeLdXx", sess);
	ck_assert_int_eq(mkdir(left, 0755), 0);
	ck_assert_int_eq(mkdir(held, 0755), 0);
	ck_assert_int_eq(sh("echo x > \"$1/events\"", NF_TEST_ARGV(left)), 0);
	int hfd = open(held, O_RDONLY | O_DIRECTORY);

	ck_assert_int_ge(hfd, 0);
	ck_assert_int_eq(flock(hfd, LOCK_EX), 0);
	ck_assert_int_eq(nft(NF_TEST_ARGV("import", "--force", bad, "-o", sess)), 1);
	ck_assert_msg(access(left, F_OK) != 0, "a dead import's %s was not removed", left);
	ck_assert_msg(access(held, F_OK) == 0, "a held %s was removed", held);
	close(hfd);
	rmdir(held);
	/* Signals in the middle of a large import (retried when it finished first). */
	{
		enum { N = 150000 };
		size_t cap = (size_t)N * 120 + 256, len = 0;
		char *ev = malloc(cap);
		int got = 0;

		ck_assert_ptr_nonnull(ev);
		len += (size_t)snprintf(ev + len, cap - len, "cmdline 100 render\n");
		for (int i = 0; i < N; i++)
			len += (size_t)snprintf(ev + len, cap - len,
						"%d %lld dma_fence:dma_fence_emit 100 driver=nfgpu timeline=gfx context=7 "
						"seqno=%d\n", i & 1, 5000000000LL + i * 1000LL, i + 1);
		snprintf(big, sizeof(big), "%s/big.dat", tmp);
		ck_assert_msg(nf_tdw_write(formats, ev, big, NULL, why, sizeof(why)) == 0, "%s", why);
		free(ev);
		for (int round = 0; round < 8 && got < 2; round++) {
			const char *sig = round & 1 ? "INT" : "TERM";
			int rc = sh("\"$NF\" import --force \"$1\" -o \"$2\" & p=$!; i=0; "
				    "while [ $i -lt 4000 ] && ! ls -d \"$2\".import-* >/dev/null 2>&1; "
				    "do i=$((i+1)); sleep 0.001; done; kill -$3 $p; wait $p",
				    NF_TEST_ARGV(big, sess, sig));

			if (rc == 0) /* done before the signal: the big session replaced ours; put it back */
				ck_assert_msg(nft(NF_TEST_ARGV("import", "--force", dat, "-o", sess)) == 0, "%s", errb);
			else {
				ck_assert_msg(rc == 130, "SIG%s: exit %d: %s", sig, rc, errb);
				ck_assert_msg(strstr(errb, "left as it was") != NULL, "%s", errb);
				got++;
				after = dir_fingerprint(sess);
				ck_assert_str_eq(before, after);
				free(after);
			}
			assert_nothing_beside(sess);
		}
		ck_assert_msg(got >= 1, "no signal reached an import in progress");
	}
	free(before);
	nf_test_rmtree(tmp);
}
END_TEST

/* Whether this process can create tracefs instances; says why not on stderr.
 * tracefs not mounted (a fresh machine, CI) is mounted first when we are
 * root, as `record --kernel` and trace-cmd do: the live cases run there. */
static bool tracefs_writable(void)
{
	char dir[256];

	if (access("/sys/kernel/tracing/instances", F_OK) != 0 && geteuid() == 0 &&
	    system("mount -t tracefs nodev /sys/kernel/tracing") == 0)
		fprintf(stderr, "mounted tracefs on /sys/kernel/tracing\n");
	snprintf(dir, sizeof(dir), "/sys/kernel/tracing/instances/nftrace-test-%d", (int)getpid());
	if (mkdir(dir, 0755) != 0) {
		fprintf(stderr, "SKIP: tracefs instances are not writable here (%s: %s)\n", dir,
			strerror(errno));
		return false;
	}
	rmdir(dir);
	return true;
}

/* The report of session dir/s drawn as dir/r.png has CPU thread rows, and
 * their run bars (the run colour at the rows' bottom) are on the page. */
static void assert_report_runs(const char *dir)
{
	char png[1100], db[1100];
	struct nf_render_options ro = { 0 };
	struct nf_render_layout lay;
	struct nf_error err;
	sqlite3 *sql;
	size_t cpu_rows = 0, run_px = 0;

	snprintf(png, sizeof(png), "%s/r.png", dir);
	snprintf(db, sizeof(db), "%s/s/.timeline.db", dir);
	ck_assert_int_eq(sqlite3_open_v2(db, &sql, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	ro.output = png;
	ro.sel.from_ns = -1;
	ro.sel.to_ns = -1;
	ro.sel.threads_all = 1;
	ck_assert_int_eq(nf_render_layout_build(sql, &ro, &lay, &err), 0);
	ck_assert_uint_gt(lay.n_threads, 1);
	cairo_surface_t *img = cairo_image_surface_create_from_png(png);
	ck_assert_int_eq(cairo_surface_status(img), CAIRO_STATUS_SUCCESS);
	ck_assert_int_eq(cairo_image_surface_get_width(img), (int)lay.width);
	for (size_t i = 0; i < lay.n_rows; i++) {
		const struct nf_render_row *r = &lay.rows[i];

		if (r->kind != NF_ROW_CPU)
			continue;
		cpu_rows++;
		for (double x = lay.plot_x0; x < lay.plot_x1 && x < lay.width; x++)
			run_px += pixel(img, x, r->y + r->h - 4) == 0x5E7A96;
	}
	ck_assert_uint_eq(cpu_rows, lay.n_threads);
	ck_assert_msg(run_px > 0, "no run bar drawn in %zu CPU thread rows of %s", cpu_rows, png);
	cairo_surface_destroy(img);
	nf_render_layout_release(&lay);
	sqlite3_close(sql);
}

START_TEST(test_extract_import)
{
	char tmp[1024], inst[256];
	const char *name;

	nf_test_tmpdir(tmp, sizeof(tmp));
	name = strrchr(tmp, '/') + 1;
	snprintf(inst, sizeof(inst), "/sys/kernel/tracing/instances/%s", name);
	/* Scheduler events in a private instance while some processes run, then
	 * `trace-cmd extract`: what users do on machines where record fails. */
	ck_assert_int_eq(sh("mkdir \"$1\" && echo mono > \"$1/trace_clock\" && "
			    "echo 1 > \"$1/events/sched/sched_switch/enable\" && "
			    "echo 1 > \"$1/events/sched/sched_wakeup/enable\" && "
			    "for i in 1 2 3 4 5 6 7 8; do sleep 0.01; done; echo 0 > \"$1/tracing_on\"",
			 NF_TEST_ARGV(inst)), 0);
	int rc = sh("cd \"$1\" && trace-cmd extract -B \"$2\" -o \"$1/x.dat\"", NF_TEST_ARGV(tmp,
		    name));
	rmdir(inst);
	ck_assert_msg(rc == 0, "trace-cmd extract failed: %s", errb);
	ck_assert_int_eq(sh("\"$NF\" import \"$1/x.dat\" -o \"$1/s\"", NF_TEST_ARGV(tmp)), 0);
	/* The sleeps switched: there are runs, and threads with names. */
	ck_assert_int_eq(sh("\"$NF\" query --csv \"$1/s\" \"SELECT count(*) > 0, count(DISTINCT thread) > 1 "
			    "FROM cpu_runs; SELECT count(*) > 0 FROM kernel_threads\"",
			 NF_TEST_ARGV(tmp)), 0);
	ck_assert_msg(strstr(out, "1,1") != NULL, "%s", out);
	/* No GPU work here, so the default rows (threads that submitted, waited or
	 * wrote markers) would be none: ask for every thread that ran. */
	ck_assert_int_eq(sh("\"$NF\" report \"$1/s\" --threads all -o \"$1/r.png\"",
			 NF_TEST_ARGV(tmp)), 0);
	assert_report_runs(tmp);
	ck_assert_int_eq(sh("\"$NF\" query --csv \"$1/s\" \"SELECT count(*) FROM cpu_runs WHERE thread = 0\"",
			 NF_TEST_ARGV(tmp)), 0);
	ck_assert_str_eq(out, "count(*)\n0\n"); /* the idle task is no thread row */
	nf_test_rmtree(tmp);
}
END_TEST

/* No nftrace-<pid> instance of a process that has exited is left in tracefs
 * (others' running recordings may have theirs). */
static void assert_no_instances_left(void)
{
	DIR *d = opendir("/sys/kernel/tracing/instances");
	struct dirent *de;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d))) {
		char *end;
		long pid;

		if (strncmp(de->d_name, "nftrace-", 8))
			continue;
		pid = strtol(de->d_name + 8, &end, 10);
		if (*end || pid <= 0)
			continue;
		ck_assert_msg(kill((pid_t)pid, 0) == 0 || errno != ESRCH, "instance %s left behind",
			      de->d_name);
	}
	closedir(d);
}

/* record --kernel on a machine where tracefs is not mounted mounts it (as
 * trace-cmd's library does): tried in a mount namespace of its own, where
 * tracefs is unmounted first, so the machine's mount is left alone. */
START_TEST(test_record_kernel_mounts_tracefs)
{
	char tmp[1024], scen[4096];

	nf_test_tmpdir(tmp, sizeof(tmp));
	nf_test_source_path(scen, sizeof(scen), "samples/log-buffer-example.nfs");
	if (sh("command -v unshare && unshare -m --propagation private true", NULL) != 0) {
		fprintf(stderr, "SKIP: no private mount namespace here (unshare -m): %s\n", errb);
		nf_test_rmtree(tmp);
		return;
	}
	ck_assert_int_eq(sh("unshare -m --propagation private sh -c 'umount /sys/kernel/tracing && "
			    "! test -e /sys/kernel/tracing/instances && "
			    "\"$NF\" record --kernel sched:sched_switch -o \"$1/s\" \"$2\" && "
			    "grep -c \" /sys/kernel/tracing tracefs \" /proc/self/mounts' sh \"$1\" \"$2\"",
			    NF_TEST_ARGV(tmp, scen)), 0);
	ck_assert_msg(strstr(out, "kernel: ") && strstr(out, "\n1\n"), "%s / %s", out, errb);
	ck_assert_int_eq(sh("\"$NF\" query --csv \"$1/s\" \"SELECT count(*) > 0 AS ran FROM cpu_runs\"",
			    NF_TEST_ARGV(tmp)), 0);
	ck_assert_str_eq(out, "ran\n1\n");
	nf_test_rmtree(tmp);
}
END_TEST

START_TEST(test_record_kernel)
{
	char tmp[1024], scen[4096];
	struct stat st;

	nf_test_tmpdir(tmp, sizeof(tmp));
	nf_test_source_path(scen, sizeof(scen), "samples/log-buffer-example.nfs");
	/* A scenario with scheduler events around it, through a program too. */
	ck_assert_int_eq(sh("\"$NF\" record --kernel sched:sched_switch,sched:sched_wakeup,dma_fence?,nosuch? "
			    "-o \"$1/s\" \"$2\"",
			 NF_TEST_ARGV(tmp, scen)), 0);
	ck_assert_msg(strstr(out, "recorded ") && strstr(out, "kernel: "), "%s", out);
	assert_no_instances_left();
	/* The runtime's events and the kernel's in one session, both streams readable. */
	ck_assert_int_eq(sh("babeltrace2 \"$1/s\" | grep -c -e FENCE_SIGNAL_QUEUED -e KernelTraceStart",
			 NF_TEST_ARGV(tmp)), 0);
	ck_assert_str_eq(out, "2\n");
	ck_assert_int_eq(sh("\"$NF\" query --csv \"$1/s\" \"SELECT count(*) FROM fence_ops WHERE queue < 4294967296; "
			    "SELECT count(*) > 0 AS ran FROM cpu_runs\"",
			 NF_TEST_ARGV(tmp)), 0);
	ck_assert_str_eq(out, "count(*)\n2\n\nran\n1\n");
	ck_assert_int_eq(sh("\"$NF\" report \"$1/s\" -o \"$1/r.png\"", NF_TEST_ARGV(tmp)), 0);
	/* A program linking the runtime: its session gets the kernel stream too. */
	const char *bin = getenv("NF_BINARY_DIR");
	if (bin && sh("test -x \"$1/nfence-sample\"", NF_TEST_ARGV(bin)) == 0) {
		/* The defaults need dma_fence events, which some kernels are built without. */
		const char *evs = access("/sys/kernel/tracing/events/dma_fence", F_OK) == 0 ? "default"
											     : "sched:sched_switch";
		ck_assert_int_eq(sh("\"$NF\" record --kernel \"$1\" -o \"$2/ps\" -- \"$3/nfence-sample\"",
				    NF_TEST_ARGV(evs, tmp, bin)), 0);
		ck_assert_int_eq(sh("\"$NF\" query --csv \"$1/ps\" \"SELECT count(*) > 0 AS ops FROM fence_ops "
				    "WHERE queue < 4294967296; SELECT count(*) > 0 AS ran FROM cpu_runs\"",
				 NF_TEST_ARGV(tmp)), 0);
		ck_assert_str_eq(out, "ops\n1\n\nran\n1\n");
	} else {
		fprintf(stderr, "SKIP: nfence-sample is not built; record --kernel -- PROGRAM not tried\n");
	}
	ck_assert_int_eq(sh("\"$NF\" record --kernel sched:sched_switch -o \"$1/p\" -- sh -c 'sleep 0.05'",
			 NF_TEST_ARGV(tmp)), 1); /* sh records no session: the recorder says so */
	ck_assert_msg(strstr(errb, "recorded nothing") != NULL, "%s", errb);
	assert_no_instances_left();
	/* An event this kernel does not have: one line, no session, no instance. */
	ck_assert_int_eq(sh("\"$NF\" record --kernel sched:nosuch -o \"$1/n\" \"$2\"",
			 NF_TEST_ARGV(tmp, scen)), 1);
	ck_assert_msg(nf_test_count_lines(errb) == 1 && strstr(errb, "has no event 'sched:nosuch'"), "%s", errb);
	ck_assert_int_ne(stat(tmp, &st), -1);
	ck_assert_int_ne(sh("test -e \"$1/n\"", NF_TEST_ARGV(tmp)), 0);
	assert_no_instances_left();
	nf_test_rmtree(tmp);
}
END_TEST

/*
 * Without an argument: the cases that need no kernel tracing (ctest's
 * test_kernel). "extract" and "record": the live cases, each its own ctest
 * (test_kernel_extract, test_kernel_record), which exit 77 (ctest: skipped)
 * with a message when this machine cannot run them.
 */
/*
 * The drm_sched and i915 fixtures (samples/kernel/drm-sched.events and
 * i915.events, with format files written as the kernel prints them for those
 * events in samples/kernel/formats-drm-sched and formats-i915): the committed
 * .dat files are what the writer makes, and they import into exactly these
 * jobs, job_deps and job_timelines rows.
 */
static void gpu_fixture(const char *name, char *tmp, size_t tlen, char *session, size_t slen)
{
	char formats[4096], events[4096], dat[4096], re[1200], rel[256], why[256];
	size_t a_len, b_len;
	char *text, *a, *b;

	snprintf(rel, sizeof(rel), "samples/kernel/formats-%s", name);
	nf_test_source_path(formats, sizeof(formats), rel);
	snprintf(rel, sizeof(rel), "samples/kernel/%s.events", name);
	nf_test_source_path(events, sizeof(events), rel);
	snprintf(rel, sizeof(rel), "samples/kernel/%s.dat", name);
	nf_test_source_path(dat, sizeof(dat), rel);
	nf_test_tmpdir(tmp, tlen);
	snprintf(re, sizeof(re), "%s/re.dat", tmp);
	text = nf_tdw_slurp(events, NULL);
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(nf_tdw_write(formats, text, re, NULL, why, sizeof(why)) == 0, "%s", why);
	a = nf_tdw_slurp(dat, &a_len);
	b = nf_tdw_slurp(re, &b_len);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_msg(a_len == b_len && memcmp(a, b, a_len) == 0, "%s is stale: regenerate it with "
		      "nf-make-tracedat samples/kernel/formats-%s samples/kernel/%s.events %s", dat, name, name, dat);
	free(a);
	free(b);
	free(text);
	snprintf(session, slen, "%s/s", tmp);
	ck_assert_msg(nft(NF_TEST_ARGV("import", dat, "-o", session)) == 0, "%s", errb);
}

static const char jobs_cols[] = "SELECT id, driver, ring, job, context, seqno, sched_context, thread, "
				"submitted_ns, started_ns, finished_ns, status FROM jobs ORDER BY id";

START_TEST(test_drm_sched_fixture_jobs)
{
	char tmp[1024], s[1200];

	gpu_fixture("drm-sched", tmp, sizeof(tmp), s, sizeof(s));
	/* Job 11's done event names it by an address job 14 reuses later: the latest
	 * queued job with that address at the time is job 11. */
	query(s, jobs_cols,
	      "id,driver,ring,job,context,seqno,sched_context,thread,submitted_ns,started_ns,finished_ns,status\n"
	      "1,amdgpu,gfx_0.0.0,11,301,1,300,500,1000000,1100000,2000000,complete\n"
	      "2,amdgpu,gfx_0.0.0,12,301,2,300,500,1200000,2050000,3000000,complete\n"
	      "3,drm_sched,sdma0,13,,,,90,1500000,1600000,1900000,complete\n"
	      "4,amdgpu,gfx_0.0.0,14,301,3,300,501,2499000,3100000,,unfinished\n");
	query(s, "SELECT job, dep_context, dep_seqno, dep_job, dep_fence, ts_ns FROM job_deps ORDER BY job",
	      "job,dep_context,dep_seqno,dep_job,dep_fence,ts_ns\n"
	      "2,301,1,1,finished,1202000\n"
	      "3,77,5,,,1501000\n"
	      "4,300,2,2,scheduled,2501000\n");
	/* Vblanks per CRTC and the markers on their thread (ftrace:print, "char buf[]"). */
	query(s, "SELECT ts_ns, crtc, seq FROM vblanks ORDER BY ts_ns",
	      "ts_ns,crtc,seq\n500000,0,100\n1000000,1,7\n2500000,0,101\n");
	query(s, "SELECT ts_ns, thread, cpu, text FROM markers ORDER BY id",
	      "ts_ns,thread,cpu,text\n900000,500,0,frame_1_begin\n2400000,500,0,frame_2_begin\n");
	/* Context 300's signals come before 301's for the same seqno: 300 is the scheduled fence. */
	query(s, "SELECT * FROM job_timelines",
	      "context,driver,ring,scheduled_context,finished_context,jobs_prev_first,jobs_next_later\n"
	      "301,amdgpu,gfx_0.0.0,300,301,2,0\n");
	/*
	 * The same jobs when the fences are not held in memory (the bound at 0:
	 * temp.k_fences is a TEMP table, not the virtual table over the held
	 * fences, for the jobs' SQL).
	 */
	{
		char db[1300];

		snprintf(db, sizeof(db), "%s/.timeline.db", s);
		unlink(db);
		ck_assert_msg(nf_test_nftrace_env(NF_TEST_ARGV("NFTRACE_KERNEL_FENCES_IN_MEMORY=0"),
						  NF_TEST_ARGV("query", s, "SELECT 1"), out, sizeof(out), errb,
						  sizeof(errb)) == 0, "%s", errb);
		query(s, jobs_cols,
		      "id,driver,ring,job,context,seqno,sched_context,thread,submitted_ns,started_ns,finished_ns,status\n"
		      "1,amdgpu,gfx_0.0.0,11,301,1,300,500,1000000,1100000,2000000,complete\n"
		      "2,amdgpu,gfx_0.0.0,12,301,2,300,500,1200000,2050000,3000000,complete\n"
		      "3,drm_sched,sdma0,13,,,,90,1500000,1600000,1900000,complete\n"
		      "4,amdgpu,gfx_0.0.0,14,301,3,300,501,2499000,3100000,,unfinished\n");
		query(s, "SELECT * FROM job_timelines",
		      "context,driver,ring,scheduled_context,finished_context,jobs_prev_first,jobs_next_later\n"
		      "301,amdgpu,gfx_0.0.0,300,301,2,0\n");
	}
	nf_test_rmtree(tmp);
}
END_TEST

START_TEST(test_i915_fixture_jobs)
{
	char tmp[1024], s[1200];

	gpu_fixture("i915", tmp, sizeof(tmp), s, sizeof(s));
	/* 40/1 was preempted (out, completed=0) and ran again: it finished at its completed out;
	 * 40/2 has no out: its retire. i915 names no dependencies. */
	query(s, jobs_cols,
	      "id,driver,ring,job,context,seqno,sched_context,thread,submitted_ns,started_ns,finished_ns,status\n"
	      "1,i915,rcs0,,40,1,,600,0,100000,1000000,complete\n"
	      "2,i915,rcs0,,40,2,,600,200000,1050000,2000000,complete\n"
	      "3,i915,vcs1,,41,7,,601,400000,600000,900000,complete\n"
	      "4,i915,vcs1,,41,8,,601,2500000,,,queued\n");
	query(s, "SELECT count(*) FROM job_deps", "count(*)\n0\n");
	/* The submitters never ran during the trace: their names are the file's saved cmdlines. */
	query(s, "SELECT thread, comm, process FROM kernel_threads ORDER BY thread",
	      "thread,comm,process\n600,game,\n601,decoder,\n");
	nf_test_rmtree(tmp);
}
END_TEST

/* Writes an event list with the formats of samples/kernel/<formats> and imports it into tmp/s. */
static void import_event_list(const char *formats_rel, const char *events, char *tmp, size_t tlen, char *s,
			      size_t slen)
{
	char formats[4096], dat[1200], why[256];

	nf_test_source_path(formats, sizeof(formats), formats_rel);
	nf_test_tmpdir(tmp, tlen);
	snprintf(dat, sizeof(dat), "%s/list.dat", tmp);
	ck_assert_msg(nf_tdw_write(formats, events, dat, NULL, why, sizeof(why)) == 0, "%s", why);
	snprintf(s, slen, "%s/s", tmp);
	ck_assert_msg(nft(NF_TEST_ARGV("import", dat, "-o", s)) == 0, "%s", errb);
}

/*
 * amdgpu jobs whose finished fence's signal is not in the trace: a ring's
 * fences signal in the order its jobs were run, so the earliest signaled finish
 * of a job run later on the same ring bounds theirs (finish_source
 * 'ring_order'); only finishes seen in the trace bound others (job 20's bound
 * is job 22's finish, not job 21's bound), and a job with no later job on its
 * ring keeps no finish (job 24, the only sdma0 job).
 */
START_TEST(test_ring_order_finish)
{
	static const char events[] =
		"cmdline 500 app\n"
		"0 5000900000 amdgpu:amdgpu_cs_ioctl 500 sched_job_id=20 timeline=gfx context=301 seqno=1 "
		"fence=0xffff888100000001 ring=gfx num_ibs=1\n"
		"0 5000950000 amdgpu:amdgpu_sched_run_job 500 sched_job_id=20 timeline=gfx context=301 seqno=1 "
		"ring=gfx num_ibs=1\n"
		"0 5001000000 amdgpu:amdgpu_cs_ioctl 500 sched_job_id=21 timeline=gfx context=301 seqno=2 "
		"fence=0xffff888100000002 ring=gfx num_ibs=1\n"
		"0 5001010000 amdgpu:amdgpu_cs_ioctl 500 sched_job_id=24 timeline=sdma0 context=401 seqno=1 "
		"fence=0xffff888100000004 ring=sdma0 num_ibs=1\n"
		"0 5001050000 amdgpu:amdgpu_sched_run_job 500 sched_job_id=24 timeline=sdma0 context=401 seqno=1 "
		"ring=sdma0 num_ibs=1\n"
		"0 5001100000 amdgpu:amdgpu_sched_run_job 500 sched_job_id=21 timeline=gfx context=301 seqno=2 "
		"ring=gfx num_ibs=1\n"
		"0 5001200000 amdgpu:amdgpu_cs_ioctl 500 sched_job_id=22 timeline=gfx context=301 seqno=3 "
		"fence=0xffff888100000003 ring=gfx num_ibs=1\n"
		"0 5001300000 amdgpu:amdgpu_sched_run_job 500 sched_job_id=22 timeline=gfx context=301 seqno=3 "
		"ring=gfx num_ibs=1\n"
		"0 5001301000 dma_fence:dma_fence_signaled 500 driver=drm_sched timeline=gfx context=300 seqno=3\n"
		"0 5002000000 dma_fence:dma_fence_signaled 0 driver=drm_sched timeline=gfx context=301 seqno=3\n"
		"0 5002050000 amdgpu:amdgpu_cs_ioctl 500 sched_job_id=23 timeline=gfx context=301 seqno=4 "
		"fence=0xffff888100000005 ring=gfx num_ibs=1\n"
		"0 5002100000 amdgpu:amdgpu_sched_run_job 500 sched_job_id=23 timeline=gfx context=301 seqno=4 "
		"ring=gfx num_ibs=1\n"
		"0 5002101000 dma_fence:dma_fence_signaled 500 driver=drm_sched timeline=gfx context=300 seqno=4\n"
		"0 5002500000 dma_fence:dma_fence_signaled 0 driver=drm_sched timeline=gfx context=301 seqno=4\n";
	char tmp[1024], s[1200];

	/* Times in the rows are since the first event (5.0009 s). */
	import_event_list("samples/kernel/formats-drm-sched", events, tmp, sizeof(tmp), s, sizeof(s));
	/* A bound is never a finish: jobs 20 and 21 finished no later than job 22
	 * (run after them on gfx) at 1.1 ms, a bound in its own column; the capture
	 * covers them (one CPU, from the first event), so their own finish is not
	 * traced. No sdma0 job's finish is in the file: not traced, nothing bounds it. */
	query(s, "SELECT job, ring, started_ns, finished_ns, finish_source, status, finish_reason, finished_bound_ns, "
		 "bound_source FROM jobs ORDER BY id",
	      "job,ring,started_ns,finished_ns,finish_source,status,finish_reason,finished_bound_ns,bound_source\n"
	      "20,gfx,50000,,,unfinished,not_traced,1100000,ring_order\n"
	      "21,gfx,200000,,,unfinished,not_traced,1100000,ring_order\n"
	      "24,sdma0,150000,,,unfinished,not_traced,,\n"
	      "22,gfx,400000,1100000,signaled,complete,,,\n"
	      "23,gfx,1200000,1600000,signaled,complete,,,\n");
	/* Drawn so: jobs 20, 21 and 24 each an open stub (three dashed edges)
	 * and 20 and 21 a dashed whisker to their bound, never a box to it. */
	struct nf_render_layout lay;
	struct nf_render_scene sc;

	whole_scene(s, &lay, &sc);
	ck_assert_int_eq(sc.marks[NF_MK_UNMATCHED].n, 3);
	ck_assert_int_eq(sc.dashes.n, 3 * 3 + 2);
	ck_assert_int_eq(sc.n_gaps, 0);
	nf_render_scene_release(&sc);
	nf_render_layout_release(&lay);
	nf_test_rmtree(tmp);
}
END_TEST

/*
 * Jobs that started before every CPU was recording and whose finish is not in
 * the file: CPU 1's record begins at 1.0 ms and is whole only from its
 * lost-events marker at 1.5 ms (meta kernel_all_cpus_from_ns), so a finish
 * after 1.5 ms would be in the file and theirs is bounded by it
 * ('recording_start'): jobs 30 and 31 (their ring-order bound, job 32's finish
 * at 2.5 ms, is later) and job 33 (alone on sdma0). Job 34 started after
 * 1.5 ms: nothing bounds it. Without a finish of the driver seen after 1.5 ms
 * (job 32's signal removed) the bound is not given.
 */
START_TEST(test_recording_start_finish)
{
#define RS_JOB(cpu, ts, ev, id, ring, ctx, seq, extra)                                                   \
	cpu " " ts " amdgpu:amdgpu_" ev " 500 sched_job_id=" id " timeline=" ring " context=" ctx " seqno=" seq \
	    extra " ring=" ring " num_ibs=1\n"
	static const char head[] =
		"cmdline 500 app\n"
		"0 5000000000 sched:sched_switch 0 prev_comm=swapper prev_pid=0 prev_prio=120 prev_state=0 "
		"next_comm=app next_pid=500 next_prio=120\n"
		RS_JOB("0", "5000100000", "cs_ioctl", "30", "gfx", "301", "1", " fence=0xffff888100000030")
		RS_JOB("0", "5000110000", "sched_run_job", "30", "gfx", "301", "1", "")
		RS_JOB("0", "5000200000", "cs_ioctl", "33", "sdma0", "401", "1", " fence=0xffff888100000033")
		RS_JOB("0", "5000210000", "sched_run_job", "33", "sdma0", "401", "1", "")
		"1 5001000000 sched:sched_switch 0 prev_comm=swapper prev_pid=0 prev_prio=120 prev_state=0 "
		"next_comm=app next_pid=500 next_prio=120\n"
		RS_JOB("0", "5001100000", "cs_ioctl", "31", "gfx", "301", "2", " fence=0xffff888100000031")
		RS_JOB("0", "5001200000", "sched_run_job", "31", "gfx", "301", "2", "")
		"lost 1 3\n"
		"1 5001500000 sched:sched_switch 500 prev_comm=app prev_pid=500 prev_prio=120 prev_state=1 "
		"next_comm=swapper next_pid=0 next_prio=120\n"
		RS_JOB("0", "5001900000", "cs_ioctl", "32", "gfx", "301", "3", " fence=0xffff888100000032")
		RS_JOB("0", "5002000000", "sched_run_job", "32", "gfx", "301", "3", "")
		"0 5002001000 dma_fence:dma_fence_signaled 500 driver=drm_sched timeline=gfx context=300 seqno=3\n";
	static const char signal32[] =
		"1 5002500000 dma_fence:dma_fence_signaled 0 driver=drm_sched timeline=gfx context=301 seqno=3\n";
	static const char tail[] =
		RS_JOB("0", "5002900000", "cs_ioctl", "34", "gfx", "301", "4", " fence=0xffff888100000034")
		RS_JOB("0", "5003000000", "sched_run_job", "34", "gfx", "301", "4", "")
		"0 5003100000 sched:sched_switch 500 prev_comm=app prev_pid=500 prev_prio=120 prev_state=1 "
		"next_comm=swapper next_pid=0 next_prio=120\n";
#undef RS_JOB
	char tmp[1024], formats[4096], dat[1200], s[1200], why[256], events[4096];

	nf_test_source_path(formats, sizeof(formats), "samples/kernel/formats-drm-sched");
	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(events, sizeof(events), "%s%s%s", head, signal32, tail);
	snprintf(dat, sizeof(dat), "%s/rec.dat", tmp);
	ck_assert_msg(nf_tdw_write(formats, events, dat, NULL, why, sizeof(why)) == 0, "%s", why);
	snprintf(s, sizeof(s), "%s/s", tmp);
	ck_assert_msg(nft(NF_TEST_ARGV("import", dat, "-o", s)) == 0, "%s", errb);
	query(s, "SELECT value FROM meta WHERE key = 'kernel_all_cpus_from_ns'", "value\n1500000\n");
	/* 30 and 31 started before every CPU was recording: their finish is not
	 * covered, and bounded by 1.5 ms (tighter than job 32's finish at 2.5 ms,
	 * their ring-order bound); 33, alone on sdma0, started before every CPU
	 * was recording too, and nothing bounds it; 34 was still running at the end */
	query(s, "SELECT job, ring, started_ns, finished_ns, finish_source, status, finish_reason, finished_bound_ns, "
		 "bound_source FROM jobs ORDER BY job",
	      "job,ring,started_ns,finished_ns,finish_source,status,finish_reason,finished_bound_ns,bound_source\n"
	      "30,gfx,110000,,,unfinished,not_covered,1500000,recording_start\n"
	      "31,gfx,1200000,,,unfinished,not_covered,1500000,recording_start\n"
	      "32,gfx,2000000,2500000,signaled,complete,,,\n"
	      "33,sdma0,210000,,,unfinished,not_covered,,\n"
	      "34,gfx,3000000,,,unfinished,ended,,\n");
	query(s, "SELECT scope, id, from_ns, to_ns, events FROM coverage ORDER BY id, from_ns",
	      "scope,id,from_ns,to_ns,events\ncpu,0,0,3100000,13\ncpu,1,1000000,1000000,\ncpu,1,1500000,3100000,\n");
	/* no finish of gfx in the file though the capture covers job 34: the ring's
	 * finishes are not traced; nothing is bounded */
	snprintf(events, sizeof(events), "%s%s", head, tail);
	snprintf(dat, sizeof(dat), "%s/rec2.dat", tmp);
	ck_assert_msg(nf_tdw_write(formats, events, dat, NULL, why, sizeof(why)) == 0, "%s", why);
	snprintf(s, sizeof(s), "%s/s2", tmp);
	ck_assert_msg(nft(NF_TEST_ARGV("import", dat, "-o", s)) == 0, "%s", errb);
	query(s, "SELECT job, finished_ns, finish_source, status, finish_reason, finished_bound_ns FROM jobs ORDER BY job",
	      "job,finished_ns,finish_source,status,finish_reason,finished_bound_ns\n"
	      "30,,,unfinished,not_traced,\n31,,,unfinished,not_traced,\n32,,,unfinished,not_traced,\n"
	      "33,,,unfinished,not_covered,\n34,,,unfinished,not_traced,\n");
	nf_test_rmtree(tmp);
}
END_TEST


/*
 * What the file says of each CPU's buffer decides what is unknown. Job 40 was
 * submitted at 0.1 ms and no run of it is in the file; thread 600 waited on
 * fence 301/3 from 0.5 to 0.9 ms and no signal of it is in the file. CPU 1's
 * first record comes at 2 ms. When the file's CPUSTAT says CPU 1's buffer
 * holds every event read from it (a quiet CPU), every CPU is recorded from the
 * start: job 40 never started before the end ('queued') and the wait timed
 * out. When it says CPU 1 lost its beginning (more events read than held), the
 * file covers every CPU only from 2 ms: job 40's start and the wait's release
 * are unknown ('not_covered'), and check says so.
 */
START_TEST(test_cpustat_coverage)
{
	static const char events[] =
		"cmdline 500 app\n"
		"cmdline 600 waiter\n"
		"0 5000000000 sched:sched_switch 0 prev_comm=swapper prev_pid=0 prev_prio=120 prev_state=0 "
		"next_comm=app next_pid=500 next_prio=120\n"
		"0 5000100000 amdgpu:amdgpu_cs_ioctl 500 sched_job_id=40 timeline=gfx context=301 seqno=1 "
		"fence=0xffff888100000040 ring=gfx num_ibs=1\n"
		"0 5000200000 amdgpu:amdgpu_cs_ioctl 500 sched_job_id=41 timeline=gfx context=301 seqno=2 "
		"fence=0xffff888100000041 ring=gfx num_ibs=1\n"
		"0 5000300000 amdgpu:amdgpu_sched_run_job 500 sched_job_id=41 timeline=gfx context=301 seqno=2 "
		"ring=gfx num_ibs=1\n"
		"0 5000400000 dma_fence:dma_fence_signaled 0 driver=drm_sched timeline=gfx context=301 seqno=2\n"
		"0 5000500000 dma_fence:dma_fence_wait_start 600 driver=drm_sched timeline=gfx context=301 seqno=3\n"
		"0 5000900000 dma_fence:dma_fence_wait_end 600 driver=drm_sched timeline=gfx context=301 seqno=3\n"
		"1 5002000000 sched:sched_switch 0 prev_comm=swapper prev_pid=0 prev_prio=120 prev_state=0 "
		"next_comm=app next_pid=500 next_prio=120\n"
		"0 5003000000 sched:sched_switch 500 prev_comm=app prev_pid=500 prev_prio=120 prev_state=1 "
		"next_comm=swapper next_pid=0 next_prio=120\n";
	static const char cpu0[] = "CPU: 0\nentries: 0\noverrun: 0\ncommit overrun: 0\nbytes: 700\n"
				   "oldest event ts:     5.000000\nnow ts:     5.003000\ndropped events: 0\nread events: 8\n";
	static const char cpu1_whole[] = "CPU: 1\nentries: 0\noverrun: 0\ncommit overrun: 0\nbytes: 100\n"
					 "oldest event ts:     5.002000\nnow ts:     5.003000\ndropped events: 0\nread events: 1\n";
	static const char cpu1_cut[] = "CPU: 1\nentries: 0\noverrun: 0\ncommit overrun: 0\nbytes: 100\n"
				       "oldest event ts:     5.002000\nnow ts:     5.003000\ndropped events: 0\nread events: 50\n";
	const char *whole[] = { cpu0, cpu1_whole }, *cut[] = { cpu0, cpu1_cut };
	char tmp[1024], formats[4096], dat[1200], s[1200], why[256];
	struct nf_tdw_options o = { 0 };

	char drm[4096], fences[4096];

	/* the drm_sched fixture's formats with the dma_fence waits' */
	nf_test_tmpdir(tmp, sizeof(tmp));
	nf_test_source_path(drm, sizeof(drm), "samples/kernel/formats-drm-sched");
	nf_test_source_path(fences, sizeof(fences), "samples/kernel/formats/dma_fence");
	snprintf(formats, sizeof(formats), "%s/formats", tmp);
	ck_assert_int_eq(sh("cp -r \"$1\" \"$3\" && cp -r \"$2/dma_fence_wait_start\" \"$2/dma_fence_wait_end\" "
			    "\"$3/dma_fence/\"", NF_TEST_ARGV(drm, fences, formats)), 0);
	for (int k = 0; k < 2; k++) {
		o.cpustat = k ? cut : whole;
		o.n_cpustat = 2;
		snprintf(dat, sizeof(dat), "%s/c%d.dat", tmp, k);
		ck_assert_msg(nf_tdw_write(formats, events, dat, &o, why, sizeof(why)) == 0, "%s", why);
		snprintf(s, sizeof(s), "%s/s%d", tmp, k);
		ck_assert_msg(nft(NF_TEST_ARGV("import", dat, "-o", s)) == 0, "%s", errb);
		if (k == 0) {
			query(s, "SELECT id, from_ns, to_ns, events FROM coverage ORDER BY id",
			      "id,from_ns,to_ns,events\n0,0,3000000,8\n1,0,3000000,1\n");
			query(s, "SELECT value FROM meta WHERE key = 'kernel_all_cpus_from_ns'", "value\n0\n");
			query(s, "SELECT count(*) FROM coverage_gaps", "count(*)\n0\n");
			query(s, "SELECT job, status, start_reason, finish_reason FROM jobs ORDER BY job",
			      "job,status,start_reason,finish_reason\n40,queued,ended,ended\n41,complete,,\n");
			query(s, "SELECT wait_id, signal_id, reason FROM deps", "wait_id,signal_id,reason\n2,,timeout\n");
			ck_assert_int_eq(nft(NF_TEST_ARGV("check", s)), 0);
			ck_assert_msg(strstr(out, "every CPU recorded from the start (2 CPUs)") &&
				      strstr(out, "verdict: whole"), "%s", out);
		} else {
			query(s, "SELECT id, from_ns, to_ns, events FROM coverage ORDER BY id",
			      "id,from_ns,to_ns,events\n0,0,3000000,8\n1,2000000,3000000,1\n");
			query(s, "SELECT value FROM meta WHERE key = 'kernel_all_cpus_from_ns'", "value\n2000000\n");
			/* what the readers shade: every row, until CPU 1 is recorded */
			query(s, "SELECT queue, from_ns, to_ns, what FROM coverage_gaps",
			      "queue,from_ns,to_ns,what\n,0,2000000,CPU 1 not recorded\n");
			struct nf_render_layout lay;
			struct nf_render_scene sc;

			whole_scene(s, &lay, &sc);
			ck_assert_int_eq(sc.n_gaps, 1);
			ck_assert_uint_eq(sc.n_gap_labels, 1);
			ck_assert_str_eq(sc.gap_labels[0].text, "CPU 1 not recorded before 0.002000 s");
			ck_assert(sc.gaps.v[1] == lay.rows_y0 && sc.gaps.v[1] + sc.gaps.v[3] == lay.rows_y1);
			/* job 40, whose run is not in the file: a tick where it was submitted,
			 * no open stub saying it started */
			ck_assert_int_eq(sc.marks[NF_MK_UNMATCHED].n, 0);
			nf_render_scene_release(&sc);
			nf_render_layout_release(&lay);
			snprintf(dat, sizeof(dat), "%s/c.html", tmp);
			ck_assert_msg(nft(NF_TEST_ARGV("report", s, "-o", dat)) == 0, "%s", errb);
			ck_assert_int_eq(sh("grep -c '\"gaps\":\\[\\[null,0,2000000,\"CPU 1 not recorded\"\\]\\]' \"$1\"",
					    NF_TEST_ARGV(dat)), 0);
			query(s, "SELECT job, status, start_reason, finish_reason FROM jobs ORDER BY job",
			      "job,status,start_reason,finish_reason\n40,unknown,not_covered,not_covered\n41,complete,,\n");
			query(s, "SELECT wait_id, signal_id, reason FROM deps", "wait_id,signal_id,reason\n2,,not_covered\n");
			ck_assert_int_eq(nft(NF_TEST_ARGV("check", s)), 0);
			ck_assert_msg(strstr(out, "every CPU recorded from 0.002000 s") &&
				      strstr(out, "CPU 1: 0.002000 s to 0.003000 s (CPUSTAT: 50 events read, 1 in the file") &&
				      strstr(out, "verdict: legal anomalies only") &&
				      strstr(out, "every CPU recorded only from 0.002000 s"), "%s", out);
			ck_assert_int_eq(nft(NF_TEST_ARGV("check", "--json", s)), 0);
			ck_assert_msg(strstr(out, "\"coverage\": {\"whole_from_ns\": 2000000") &&
				      strstr(out, "\"verdict\": \"legal_anomalies\""), "%s", out);
		}
	}
	nf_test_rmtree(tmp);
}
END_TEST

/*
 * nftrace critical-path on a kernel session with jobs and no queued fence
 * operation: the last job to finish (job 12, row 2) ran from 2.05 ms, after its
 * dependency job 11 (row 1) finished at 2.0 ms, which ran from before job 12
 * was submitted (1.2 ms): three segments adding up to 1.8 ms. --job picks a
 * job; one without a start says so.
 */
START_TEST(test_job_critical_path)
{
	char tmp[1024], s[1200];

	gpu_fixture("drm-sched", tmp, sizeof(tmp), s, sizeof(s));
	ck_assert_msg(nft(NF_TEST_ARGV("critical-path", s)) == 0, "%s", errb);
	ck_assert_msg(strstr(out, "critical path of job 2 (amdgpu gfx_0.0.0, job id 12) submitted by thread 500\n"
			     "submitted at 1200000 ns, finished at 3000000 ns: latency 1800000 ns in 3 segments\n"),
		      "%s", out);
	ck_assert_msg(strstr(out, "1200000        2000000         800000  ring gfx_0.0.0               executing job 1 "
			     "(amdgpu gfx_0.0.0, job id 11)\n"), "%s", out);
	ck_assert_msg(strstr(out, "2000000        2050000          50000  ring gfx_0.0.0               job 2 (amdgpu "
			     "gfx_0.0.0, job id 12) waiting to run until job 1 (amdgpu gfx_0.0.0, job id 11) finished\n"),
		      "%s", out);
	ck_assert_msg(strstr(out, "2050000        3000000         950000  ring gfx_0.0.0               executing job 2 "),
		      "%s", out);
	ck_assert_msg(nft(NF_TEST_ARGV("critical-path", s, "--job", "3", "--json")) == 0, "%s",
		      errb);
	ck_assert_msg(strstr(out, "{\"job\": 3, \"submitted_ns\": 1500000, \"end_ns\": 1900000, \"latency_ns\": 400000, "
			     "\"segments\": [\n  {\"on\": \"ring sdma0\", \"kind\": \"queued\", \"job\": 3, \"thread\": null, "
			     "\"dep_job\": null, \"start_ns\": 1500000, \"end_ns\": 1600000, \"duration_ns\": 100000"), "%s", out);
	/* Job 14 (row 4) never finished: no latency; a job that does not exist is named. */
	ck_assert_int_eq(nft(NF_TEST_ARGV("critical-path", s, "--job", "4")), 1);
	ck_assert_msg(strstr(errb, "job 4 has no finish in the trace"), "%s", errb);
	ck_assert_int_eq(nft(NF_TEST_ARGV("critical-path", s, "--job", "99")), 1);
	ck_assert_msg(strstr(errb, "no job 99"), "%s", errb);
	/* Before any job finished: nothing to explain, said in one line. */
	ck_assert_int_eq(nft(NF_TEST_ARGV("critical-path", s, "--at", "1ms")), 1);
	ck_assert_msg(strstr(errb, "no operation and no GPU job finished by that time"), "%s", errb);
	nf_test_rmtree(tmp);
}
END_TEST

/*
 * Past the analyzer's bounds: more jobs at once than it holds in memory (65536:
 * their partial figures are written and merged at the end) with one job whose
 * submission comes before that write and its run and finish after, and a
 * thread with more runs than one cpu_run_blocks row holds (1024).
 */
START_TEST(test_many_jobs_and_runs)
{
	enum { JOBS = 66000, SWITCHES = 2500 };
	size_t cap = (size_t)JOBS * 200 + SWITCHES * 200 + 4096, len = 0;
	char *ev = malloc(cap);
	char tmp[1024], formats[4096], dat[1200], sess[1200], why[256];
	long long t = 5000000000LL;

	ck_assert_ptr_nonnull(ev);
	len += (size_t)snprintf(ev + len, cap - len, "cmdline 500 app\ncmdline 501 other\n");
	/* Job 1 (context 301/1) is submitted first, by thread 501. */
	len += (size_t)snprintf(ev + len, cap - len, "0 %lld amdgpu:amdgpu_cs_ioctl 501 sched_job_id=1 timeline=gfx "
				"context=301 seqno=1 fence=0xffff888100000001 ring=gfx num_ibs=1\n", t);
	for (int j = 2; j <= JOBS; j++) {
		t += 1000;
		len += (size_t)snprintf(ev + len, cap - len, "0 %lld amdgpu:amdgpu_cs_ioctl 500 sched_job_id=%d "
					"timeline=sdma0 context=401 seqno=%d fence=0xffff888100000002 ring=sdma0 "
					"num_ibs=1\n", t, j, j);
	}
	t += 1000;
	len += (size_t)snprintf(ev + len, cap - len, "0 %lld amdgpu:amdgpu_sched_run_job 500 sched_job_id=1 "
				"timeline=gfx context=301 seqno=1 ring=gfx num_ibs=1\n", t);
	len += (size_t)snprintf(ev + len, cap - len, "0 %lld dma_fence:dma_fence_signaled 500 driver=drm_sched "
				"timeline=gfx context=300 seqno=1\n", t + 10);
	len += (size_t)snprintf(ev + len, cap - len, "0 %lld dma_fence:dma_fence_signaled 0 driver=drm_sched "
				"timeline=gfx context=301 seqno=1\n", t + 5000);
	for (int k = 0; k < SWITCHES; k++) {
		t += 10000;
		len += (size_t)snprintf(ev + len, cap - len, "1 %lld sched:sched_switch 500 prev_comm=app prev_pid=500 "
					"prev_prio=120 prev_state=1 next_comm=other next_pid=501 next_prio=120\n", t);
		len += (size_t)snprintf(ev + len, cap - len, "1 %lld sched:sched_switch 501 prev_comm=other "
					"prev_pid=501 prev_prio=120 prev_state=0 next_comm=app next_pid=500 "
					"next_prio=120\n", t + 4000);
	}
	ck_assert_uint_lt(len, cap - 1);
	nf_test_source_path(formats, sizeof(formats), "samples/kernel/formats-drm-sched");
	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(dat, sizeof(dat), "%s/many.dat", tmp);
	ck_assert_msg(nf_tdw_write(formats, ev, dat, NULL, why, sizeof(why)) == 0, "%s", why);
	free(ev);
	snprintf(sess, sizeof(sess), "%s/s", tmp);
	ck_assert_msg(nft(NF_TEST_ARGV("import", dat, "-o", sess)) == 0, "%s", errb);
	/* Job 1 is one row with its submission (before the write), its run and finish (after). */
	query(sess, "SELECT count(*), count(DISTINCT job) FROM jobs", "count(*),count(DISTINCT job)\n66000,66000\n");
	query(sess, "SELECT id, ring, thread, submitted_ns, started_ns - submitted_ns, finished_ns - started_ns, "
	      "finish_source, status FROM jobs WHERE job = 1",
	      "id,ring,thread,submitted_ns,started_ns - submitted_ns,finished_ns - started_ns,finish_source,status\n"
	      "1,gfx,501,0,66000000,5000,signaled,complete\n");
	/* submitted before CPU 1's record begins (its first switch, after them): where
	 * their run events would be is not covered, so they are not "queued" */
	query(sess, "SELECT count(*) FROM jobs WHERE ring = 'sdma0' AND thread = 500 AND status = 'unknown' "
	      "AND start_reason = 'not_covered' AND finish_reason = 'not_covered'",
	      "count(*)\n65999\n");
	/* 2500 runs of each thread (the first of 500 and the last of 501 open-ended): 3 blocks each. */
	query(sess, "SELECT thread, count(*), sum(start_ns IS NULL), sum(end_ns IS NULL), min(end_ns - start_ns), "
	      "max(end_ns - start_ns) FROM cpu_runs GROUP BY thread ORDER BY thread",
	      "thread,count(*),sum(start_ns IS NULL),sum(end_ns IS NULL),min(end_ns - start_ns),"
	      "max(end_ns - start_ns)\n500,2501,1,1,6000,6000\n501,2500,0,0,4000,4000\n");
	query(sess, "SELECT thread, count(*), sum(n) FROM cpu_run_blocks GROUP BY thread ORDER BY thread",
	      "thread,count(*),sum(n)\n500,3,2501\n501,3,2500\n");
	nf_test_rmtree(tmp);
}
END_TEST


/* Every column of jobs the 6.16 and xe fixtures fill. */
static const char jobs_all_cols[] = "SELECT id, driver, ring, job, context, seqno, sched_context, thread, "
				    "submitted_ns, started_ns, finished_ns, status, finish_source, device, client_id "
				    "FROM jobs ORDER BY id";

/*
 * The GPU scheduler of Linux 6.16 on (samples/kernel/drm-sched-616.events,
 * formats from the kernel's gpu_scheduler_trace.h): jobs named by their
 * finished fence fence_context:fence_seqno, with their device and DRM client;
 * drm_sched_job_add_dep into job_deps (another job's fence, or a fence no job
 * owns), drm_sched_job_unschedulable into job_unschedulable.
 */
START_TEST(test_drm_sched_616_fixture_jobs)
{
	char tmp[1024], s[1200];

	gpu_fixture("drm-sched-616", tmp, sizeof(tmp), s, sizeof(s));
	query(s, jobs_all_cols, "id,driver,ring,job,context,seqno,sched_context,thread,submitted_ns,started_ns,"
	      "finished_ns,status,finish_source,device,client_id\n"
	      "1,drm_sched,gfx_0.0.0,,401,1,400,500,1000000,1100000,2000000,complete,event,0000:03:00.0,7\n"
	      "2,drm_sched,gfx_0.0.0,,401,2,400,500,1200000,2050000,3000000,complete,event,0000:03:00.0,7\n"
	      "3,drm_sched,sdma0,,501,1,500,90,1500000,1600000,1900000,complete,event,0000:03:00.0,0\n"
	      "4,drm_sched,gfx_0.0.0,,401,3,400,501,1700000,3100000,3600000,complete,event,0000:03:00.0,8\n"
	      "5,drm_sched,sdma0,,501,2,500,90,3200000,,,queued,,0000:03:00.0,0\n");
	query(s, "SELECT job, dep_context, dep_seqno, dep_job, dep_fence, ts_ns FROM job_deps ORDER BY job",
	      "job,dep_context,dep_seqno,dep_job,dep_fence,ts_ns\n"
	      "2,401,1,1,finished,1201000\n"
	      "3,77,5,,,1501000\n"
	      "4,501,1,3,finished,1701000\n"
	      "5,77,9,,,3201000\n");
	query(s, "SELECT job, dep_context, dep_seqno, dep_job, dep_fence, ts_ns FROM job_unschedulable ORDER BY ts_ns",
	      "job,dep_context,dep_seqno,dep_job,dep_fence,ts_ns\n"
	      "2,401,1,1,finished,1300000\n"
	      "4,501,1,3,finished,1750000\n"
	      "5,77,9,,,3300000\n");
	query(s, "SELECT * FROM job_timelines ORDER BY context",
	      "context,driver,ring,scheduled_context,finished_context,jobs_prev_first,jobs_next_later\n"
	      "401,drm_sched,gfx_0.0.0,400,401,3,0\n"
	      "501,drm_sched,sdma0,500,501,1,0\n");
	/* every scheduler event is a job event: none is kept raw */
	query(s, "SELECT count(*) FROM kernel_events", "count(*)\n0\n");
	nf_test_rmtree(tmp);
}
END_TEST

/*
 * Critical paths of 6.16 jobs: job 2 behind job 1 (its add_dep), job 3 behind
 * fence 77:5 that no job owns (the walk stops at its signal), job 4 behind job
 * 3 on another ring; `check` lists job 5, held back by a fence nothing
 * signals, still waiting when the trace ended.
 */
START_TEST(test_drm_sched_616_paths_and_check)
{
	char tmp[1024], s[1200];

	gpu_fixture("drm-sched-616", tmp, sizeof(tmp), s, sizeof(s));
	ck_assert_msg(nft(NF_TEST_ARGV("critical-path", s, "--job", "3")) == 0, "%s", errb);
	ck_assert_str_eq(out,
		"critical path of job 3 (drm_sched sdma0) submitted by thread 90\n"
		"submitted at 1500000 ns, finished at 1900000 ns: latency 400000 ns in 3 segments\n"
		"      start_ns         end_ns    duration_ns  on                           doing\n"
		"       1500000        1550000          50000  ring sdma0                   job 3 (drm_sched sdma0) "
		"submitted, waiting for fence 77:5 of no job in the trace\n"
		"       1550000        1600000          50000  ring sdma0                   job 3 (drm_sched sdma0) "
		"waiting to run until fence 77:5 signaled (op 2)\n"
		"       1600000        1900000         300000  ring sdma0                   executing job 3 (drm_sched "
		"sdma0)\n");
	/* op 2 is that fence's dma_fence signal */
	query(s, "SELECT id, queue, op, value, end_ns FROM fence_ops WHERE id = 2",
	      "id,queue,op,value,end_ns\n2,4294967373,signal,5,1550000\n");
	ck_assert_msg(nft(NF_TEST_ARGV("critical-path", s, "--job", "4", "--json")) == 0, "%s", errb);
	ck_assert_msg(strstr(out, "{\"job\": 4, \"submitted_ns\": 1700000, \"end_ns\": 3600000, \"latency_ns\": 1900000, "
			     "\"segments\": [\n  {\"on\": \"ring sdma0\", \"kind\": \"execute\", \"job\": 3, ") &&
		      strstr(out, "\"kind\": \"dependency\", \"job\": 4, \"thread\": null, \"dep_job\": 3, "
			     "\"start_ns\": 1900000, \"end_ns\": 3100000") &&
		      strstr(out, "\"kind\": \"execute\", \"job\": 4, \"thread\": null, \"dep_job\": null, "
			     "\"start_ns\": 3100000, \"end_ns\": 3600000"), "%s", out);
	ck_assert_msg(nft(NF_TEST_ARGV("critical-path", s, "--job", "2")) == 0, "%s", errb);
	ck_assert_msg(strstr(out, "2000000        2050000          50000  ring gfx_0.0.0               job 2 (drm_sched "
			     "gfx_0.0.0) waiting to run until job 1 (drm_sched gfx_0.0.0) finished\n"), "%s", out);
	/* CPU 1's first record is at 1.1 ms and the file has no CPUSTAT: it may
	 * have been quiet, so the gap says so rather than "not recorded" */
	query(s, "SELECT queue, from_ns, to_ns, what FROM coverage_gaps",
	      "queue,from_ns,to_ns,what\n,0,1100000,CPU 1 quiet or not recorded\n");
	ck_assert_msg(nft(NF_TEST_ARGV("check", s)) == 0, "%s%s", out, errb);
	ck_assert_msg(strstr(out, "GPU jobs held back by a dependency (drm_sched_job_unschedulable): 3 times, 3 jobs; "
			     "1 still not started when the trace ended\n"
			     "  waiting: job 5 (drm_sched sdma0, fence 501:2) since 3300000 ns for fence 77:9 of no job "
			     "in the trace, not signaled in the trace\n"
			     "verdict: legal anomalies only (0 lost, 0 zero, 0 repeated timestamps, every CPU recorded "
			     "only from 0.001100 s; 1 GPU job still held back by a dependency when the trace ended)\n"),
		      "%s", out);
	ck_assert_int_eq(nft(NF_TEST_ARGV("check", "--json", s)), 0);
	ck_assert_msg(strstr(out, "\"verdict\": \"legal_anomalies\"") &&
		      strstr(out, "\"jobs_unschedulable\": {\"events\": 3, \"jobs\": 3, \"waiting\": 1}") &&
		      strstr(out, "{\"job\": 5, \"since_ns\": 3300000, \"dep_context\": 77, \"dep_seqno\": 9, "
			     "\"dep_job\": null, \"dep_signaled\": false}"), "%s", out);
	nf_test_rmtree(tmp);
}
END_TEST

/*
 * Intel xe (samples/kernel/xe.events, formats from the kernel's xe_trace.h):
 * jobs on their exec queues' rings, named by their hardware fence, finished at
 * that fence's signal (or its dma_fence signal); the events naming no job are
 * kept raw; a job behind the one before it on its ring.
 */
START_TEST(test_xe_fixture_jobs)
{
	char tmp[1024], s[1200];

	gpu_fixture("xe", tmp, sizeof(tmp), s, sizeof(s));
	query(s, jobs_all_cols, "id,driver,ring,job,context,seqno,sched_context,thread,submitted_ns,started_ns,"
	      "finished_ns,status,finish_source,device,client_id\n"
	      "1,xe,rcs3,,65,1,,700,1002000,1100000,1900000,complete,event,0000:00:02.0,\n"
	      "2,xe,rcs3,,65,2,,700,1202000,1250000,2600000,complete,event,0000:00:02.0,\n"
	      "3,xe,bcs5,,66,1,,700,1502000,1550000,1800000,complete,event,0000:00:02.0,\n"
	      "4,xe,queue 7,,67,1,,700,2002000,2050000,2500000,complete,signaled,0000:00:02.0,\n");
	query(s, "SELECT count(*) FROM job_timelines", "count(*)\n0\n");
	query(s, "SELECT name, count(*) FROM kernel_events GROUP BY name ORDER BY name",
	      "name,count(*)\nxe:xe_hw_fence_create,4\nxe:xe_hw_fence_signal,1\nxe:xe_sched_job_create,4\n"
	      "xe:xe_sched_job_free,1\n");
	query(s, "SELECT fields FROM kernel_events WHERE name = 'xe:xe_hw_fence_signal'",
	      "fields\ndev=0000:00:02.0, ctx=0x0000000000000063, fence=0xffff8883000fffff, seqno=4\n");
	ck_assert_msg(nft(NF_TEST_ARGV("critical-path", s, "--job", "2")) == 0, "%s", errb);
	ck_assert_str_eq(out,
		"critical path of job 2 (xe rcs3) submitted by thread 700\n"
		"submitted at 1202000 ns, finished at 2600000 ns: latency 1398000 ns in 2 segments\n"
		"      start_ns         end_ns    duration_ns  on                           doing\n"
		"       1202000        1900000         698000  ring rcs3                    executing job 1 (xe rcs3)\n"
		"       1900000        2600000         700000  ring rcs3                    executing job 2 (xe rcs3)\n");
	nf_test_rmtree(tmp);
}
END_TEST

/*
 * xe runs its jobs on the GPU scheduler: where the scheduler's 6.16 events of
 * a ring are in the trace too (ring rcs3, the exec queue's name), the jobs are
 * the scheduler's rows only (named by the finished fence other jobs depend
 * on); a ring without them (bcs5) keeps xe's rows. Without xe_hw_fence_create
 * a job has no fence: its events are joined by queue and seqno.
 */
START_TEST(test_xe_with_scheduler)
{
	static const char events[] =
		"cmdline 700 game\n"
		"0 5000000000 xe:xe_exec_queue_create 700 dev=0000:00:02.0 class=0 logical_mask=1 gt_id=0 width=1 "
		"guc_id=3 guc_state=0 flags=0\n"
		"0 5000010000 xe:xe_exec_queue_create 700 dev=0000:00:02.0 class=3 logical_mask=1 gt_id=0 width=1 "
		"guc_id=5 guc_state=0 flags=0\n"
		"0 5001002000 xe:xe_sched_job_exec 700 dev=0000:00:02.0 seqno=1 lrc_seqno=1 guc_id=3 guc_state=0 "
		"flags=0 error=0 fence=0xffff888300000001 batch_addr=0x100000\n"
		"0 5001002500 gpu_scheduler:drm_sched_job_queue 700 name=rcs3 job_count=1 hw_job_count=0 "
		"dev=0000:00:02.0 fence_context=91 fence_seqno=1 client_id=4\n"
		"0 5001502000 xe:xe_sched_job_exec 700 dev=0000:00:02.0 seqno=1 lrc_seqno=1 guc_id=5 guc_state=0 "
		"flags=0 error=0 fence=0xffff888300000b01 batch_addr=0x200000\n"
		"1 5001100000 gpu_scheduler:drm_sched_job_run 710 name=rcs3 job_count=0 hw_job_count=1 "
		"dev=0000:00:02.0 fence_context=91 fence_seqno=1 client_id=4\n"
		"1 5001100500 xe:xe_sched_job_run 710 dev=0000:00:02.0 seqno=1 lrc_seqno=1 guc_id=3 guc_state=1 "
		"flags=0 error=0 fence=0xffff888300000001 batch_addr=0x100000\n"
		"1 5001550000 xe:xe_sched_job_run 710 dev=0000:00:02.0 seqno=1 lrc_seqno=1 guc_id=5 guc_state=1 "
		"flags=0 error=0 fence=0xffff888300000b01 batch_addr=0x200000\n"
		"1 5001800000 xe:xe_hw_fence_signal 0 dev=0000:00:02.0 ctx=66 seqno=1 fence=0xffff888300000b01\n"
		"1 5001900000 xe:xe_hw_fence_signal 0 dev=0000:00:02.0 ctx=65 seqno=1 fence=0xffff888300000001\n"
		"1 5001900100 gpu_scheduler:drm_sched_job_done 0 fence_context=91 fence_seqno=1\n";
	char tmp[1024], s[1200];

	import_event_list("samples/kernel/formats-xe", events, tmp, sizeof(tmp), s, sizeof(s));
	query(s, "SELECT id, driver, ring, context, seqno, thread, submitted_ns, started_ns, finished_ns, "
		 "finish_source, device, client_id FROM jobs ORDER BY id",
	      "id,driver,ring,context,seqno,thread,submitted_ns,started_ns,finished_ns,finish_source,device,client_id\n"
	      "1,drm_sched,rcs3,91,1,700,1002500,1100000,1900100,event,0000:00:02.0,4\n"
	      "2,xe,bcs5,66,1,700,1502000,1550000,1800000,event,0000:00:02.0,\n");
	nf_test_rmtree(tmp);
}
END_TEST

static Suite *kernel_suite(const char *live)
{
	Suite *s = suite_create("kernel");
	TCase *tc;

	if (!live) {
		tc = tcase_create("import");
		/* Generous: under ASan on a busy 2-core machine these take far longer than
		 * the few seconds they need in a normal build; never a timing assertion. */
		tcase_set_timeout(tc, 180);
		tcase_add_test(tc, test_fixture_regenerates);
		tcase_add_test(tc, test_fixture_import_rows);
		tcase_add_test(tc, test_fixture_fence_memory_bound);
		tcase_add_test(tc, test_drm_sched_fixture_jobs);
		tcase_add_test(tc, test_i915_fixture_jobs);
		tcase_add_test(tc, test_drm_sched_616_fixture_jobs);
		tcase_add_test(tc, test_drm_sched_616_paths_and_check);
		tcase_add_test(tc, test_xe_fixture_jobs);
		tcase_add_test(tc, test_xe_with_scheduler);
		tcase_add_test(tc, test_ring_order_finish);
		tcase_add_test(tc, test_recording_start_finish);
		tcase_add_test(tc, test_cpustat_coverage);
		tcase_add_test(tc, test_job_critical_path);
		tcase_add_test(tc, test_many_jobs_and_runs);
		tcase_add_test(tc, test_fixture_report);
		tcase_add_test(tc, test_bad_files);
		tcase_add_test(tc, test_import_keeps_session);
		tcase_add_test(tc, test_live_pages_decode);
	} else {
		tc = tcase_create("live");
		tcase_set_timeout(tc, 300);
		if (!strcmp(live, "extract"))
			tcase_add_test(tc, test_extract_import);
		else {
			tcase_add_test(tc, test_record_kernel);
			tcase_add_test(tc, test_record_kernel_mounts_tracefs);
		}
	}
	suite_add_tcase(s, tc);
	return s;
}

#define SKIP_CODE 77

int main(int argc, char **argv)
{
	const char *live = argc > 1 ? argv[1] : NULL;

	if (live && strcmp(live, "extract") && strcmp(live, "record")) {
		fprintf(stderr, "usage: test_kernel [extract|record]\n");
		return 2;
	}
	if (live && !tracefs_writable()) {
		printf("SKIPPED: live kernel case '%s' not run: tracefs instances are not writable\n", live);
		return SKIP_CODE;
	}
	if (live && !strcmp(live, "extract") && system("command -v trace-cmd >/dev/null 2>&1") != 0) {
		printf("SKIPPED: live kernel case 'extract' not run: trace-cmd is not installed\n");
		fprintf(stderr, "test_kernel: skipped: no trace-cmd\n");
		return SKIP_CODE;
	}
	return nf_test_main(kernel_suite(live));
}
