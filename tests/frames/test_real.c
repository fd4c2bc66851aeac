/*
 * Frames of the real captures in ../shared/real-traces/, each checked against a
 * reading of the capture that is not nftrace's: the i915 page flips of
 * igt-i915-flip-2014.dat (and its trace-cmd 7 zstd twin) against
 * `trace-cmd report` (tracecmd_flips.py), the presents, flips and VSyncs of
 * gpuvis-windows.etl against a Python reader of its raw DxgKrnl records
 * (etw_presents.py), the amdgpu captures' SteamVR marker frames against the
 * markers they hold. Skipped (exit 77, with a message) when the directory is
 * absent, as on a fresh clone; a part whose tool (trace-cmd) is missing says so.
 */
#include "nf_test.h"

#include "contract/frames.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <sys/stat.h>

static char tmp[512], out[1 << 18], err[1 << 14];

static void setup(void)
{
	nf_test_tmpdir(tmp, sizeof(tmp));
}

static void teardown(void)
{
	nf_test_rmtree(tmp);
}

static void real(const char *name, char *path, size_t len)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "../shared/real-traces/%s", name);
	nf_test_source_path(path, len, rel);
}

/* Imports a capture into tmp/name and computes its frames; the timeline opened. */
static sqlite3 *import(const char *file, const char *name, const char *marker, char *dir, size_t len)
{
	char path[1024], db[4200];
	struct nf_frames_options o = { marker };
	struct nf_error e;
	sqlite3 *d = NULL;

	real(file, path, sizeof(path));
	snprintf(dir, len, "%s/%s", tmp, name);
	ck_assert_msg(nf_test_nftrace_run(NF_TEST_ARGV("import", path, "-o", dir), out, sizeof(out), err, sizeof(err)) == 0,
		      "%s: %s", file, err);
	nf_error_clear(&e);
	ck_assert_msg(nf_frames_ensure(dir, &o, db, sizeof(db), &e) == 0, "%s", e.msg);
	ck_assert_int_eq(sqlite3_open_v2(db, &d, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	return d;
}

static int64_t q1(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *s = NULL;
	int64_t v = INT64_MIN;

	ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

static bool have_tool(const char *tool)
{
	return nf_test_sh("command -v \"$1\" >/dev/null", NF_TEST_ARGV(tool), NULL, 0, NULL, 0) == 0;
}

/* The flips against trace-cmd report's reading: the same requests in order, each
 * paired with its completion (to the microsecond trace-cmd prints) and vblank. */
static void flips_match_trace_cmd(sqlite3 *db, const char *file)
{
	static const char script[] =
		"python3 \"$1\" \"$2\" > \"$4/flips.json\" && python3 - \"$4/flips.json\" \"$3\" <<'EOF'\n"
		"import json, sqlite3, sys\n"
		"want = json.load(open(sys.argv[1]))\n"
		"db = sqlite3.connect('file:%s?mode=ro' % sys.argv[2], uri=True)\n"
		"got = db.execute('SELECT f.display, f.queued_ns, f.done_ns, f.vblank_seq, p.thread FROM flips f '\n"
		"                 'JOIN presents p ON p.id = f.present ORDER BY f.queued_ns, f.id').fetchall()\n"
		"bad = []\n"
		"if len(got) != len(want['flips']): bad.append('%d flips, trace-cmd %d' % (len(got), len(want['flips'])))\n"
		"vb = db.execute('SELECT count(*) FROM vblanks WHERE display IS NOT NULL').fetchone()[0]\n"
		"if vb != want['vblanks']: bad.append('%d vblanks, trace-cmd %d' % (vb, want['vblanks']))\n"
		"t0 = got[0][1]; u0 = want['flips'][0]['request_us']\n"
		"for g, w in zip(got, want['flips']):\n"
		"    if g[0] != w['plane'] or g[4] != w['thread'] or g[3] != w['seq']: bad.append('%r vs %r' % (g, w))\n"
		"    if abs((g[1] - t0) / 1000 - (w['request_us'] - u0)) > 1: bad.append('request %r vs %r' % (g, w))\n"
		"    if (g[2] is None) != (w['complete_us'] is None) or (g[2] is not None and\n"
		"        abs((g[2] - t0) / 1000 - (w['complete_us'] - u0)) > 1): bad.append('complete %r vs %r' % (g, w))\n"
		"print('\\n'.join(bad[:20]) if bad else 'ok %d' % len(got)); sys.exit(1 if bad else 0)\n"
		"EOF\n";
	char py[1024], path[1024], db_path[4200];

	if (!have_tool("trace-cmd")) {
		printf("%s: trace-cmd is not installed: the flips are not compared with its reading\n", file);
		return;
	}
	nf_test_source_path(py, sizeof(py), "tests/frames/tracecmd_flips.py");
	real(file, path, sizeof(path));
	snprintf(db_path, sizeof(db_path), "%s", sqlite3_db_filename(db, "main"));
	int st = nf_test_sh(script, NF_TEST_ARGV(py, path, db_path, tmp), out, sizeof(out), err, sizeof(err));
	ck_assert_msg(st == 0, "%s: %s %s", file, out, err);
	printf("%s: flips as trace-cmd reads them: %s", file, out);
}

/* The picture: the coverage gaps' labels (CPUs 2-6 begin at 10.5-11.5 s) are
 * not written over the displays' header, whose title runs into the plot. */
static void gap_labels_clear_header(const char *dir)
{
	char svg[700], *text = NULL;
	size_t n = 0;
	double header_y = -1, label_y = -1;

	snprintf(svg, sizeof(svg), "%s/p.svg", dir);
	ck_assert_msg(nf_test_nftrace_run(NF_TEST_ARGV("report", dir, "-o", svg), out, sizeof(out), err, sizeof(err)) == 0,
		      "report: %s", err);
	FILE *f = fopen(svg, "rb");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(getdelim(&text, &n, '\0', f) > 0, 1);
	fclose(f);
	for (char *p = text; (p = strstr(p, "<text ")); p++) {
		char *gt = strchr(p, '>'), *y = strstr(p, " y=\"");

		if (!gt || !y || y > gt)
			continue;
		if (!strncmp(gt + 1, "Displays", 8))
			header_y = atof(y + 4);
		else if (strstr(gt + 1, "not recorded before") && strstr(gt + 1, "not recorded before") < strchr(gt, '<') &&
			 label_y < 0)
			label_y = atof(y + 4);
	}
	free(text);
	ck_assert_msg(header_y > 0 && label_y > 0, "header at %.1f, first gap label at %.1f", header_y, label_y);
	/* the label's box (from 9.5 above its baseline) below the title's descent */
	ck_assert_msg(label_y - 9.5 >= header_y + 4, "gap label at y %.1f over the header title at %.1f", label_y,
		      header_y);
}

static void igt(const char *file, const char *name)
{
	char dir[600];
	sqlite3 *db = import(file, name, NULL, dir, sizeof(dir));

	/* 363 requests, each paired with its completion; 362 with their vblank: plane 2's
	 * only flip completed 3.02 s after it was requested, with no drm_vblank_event after */
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM flips"), 363);
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM flips WHERE queued_ns IS NOT NULL AND done_ns IS NOT NULL "
			     "AND status = 'shown'"), 363);
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM flips WHERE vblank_ns IS NOT NULL"), 362);
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM flips WHERE vblank_ns IS NULL AND display = 2 AND detail LIKE "
			     "'%no drm_vblank_event of crtc 2 within 1 ms%'"), 1);
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM vblanks"), 558);
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM vblanks WHERE display = crtc"), 558);
	ck_assert_int_eq(q1(db, "SELECT max(vblank_ns - done_ns) FROM flips"), 2404); /* 1 to 3 us after completion */
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM displays"), 3);
	/* frames: one per request, per plane; plane 0 and 1 at 60 Hz, none late but plane 2's */
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM frames"), 363);
	ck_assert_int_eq(q1(db, "SELECT count(DISTINCT swapchain) FROM frames"), 3);
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM frames WHERE late"), 1);
	ck_assert_int_eq(q1(db, "SELECT display FROM frames WHERE late"), 2);
	ck_assert_int_eq(q1(db, "SELECT missed_vblanks FROM frames WHERE late"), 181);
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM frames WHERE display < 2 AND abs(interval_ns - 16635000) > 10000"), 0);
	flips_match_trace_cmd(db, file);
	sqlite3_close(db);
	gap_labels_clear_header(dir);
}

START_TEST(igt_i915_flips)
{
	igt("igt-i915-flip-2014.dat", "igt");
}
END_TEST

START_TEST(igt_i915_flips_v7_zstd)
{
	igt("igt-i915-flip-2014-v7-zstd.dat", "igt7");
}
END_TEST

START_TEST(gpuvis_windows)
{
	char dir[600], py[1024], path[1024], db_path[4200];
	sqlite3 *db = import("gpuvis-windows.etl", "win", NULL, dir, sizeof(dir));

	/* 517 Present (184) events, 332 DWM flips (and the one the capture ends in) */
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM presents WHERE mode = 'composed'"), 517);
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM presents WHERE mode = 'flip'"), 333);
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM flips WHERE status = 'shown' AND vblank_seq IS NOT NULL"), 332);
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM frames"), 850);
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM frames WHERE status = 'displayed'"), 332);
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM vsyncs WHERE display IS NULL"), 0);
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM frames WHERE status = 'unknown' AND null_reasons NOT LIKE "
			     "'%MsUntilDisplayed: %'"), 0);
	/* each frame against the Python reading of the raw records */
	nf_test_source_path(py, sizeof(py), "tests/frames/etw_presents.py");
	real("gpuvis-windows.etl", path, sizeof(path));
	snprintf(db_path, sizeof(db_path), "%s", sqlite3_db_filename(db, "main"));
	int st = nf_test_exec(NULL, NF_TEST_ARGV("python3", py, path, db_path), out, sizeof(out), err, sizeof(err));
	ck_assert_msg(st == 0, "%s %s", out, err);
	ck_assert_str_eq(out, "ok 850\n");
	sqlite3_close(db);
}
END_TEST

/* SteamVR's compositor writes "[Compositor] Present() Begin" once per frame. */
static void amdgpu(const char *file, const char *name, int64_t want_frames)
{
	char dir[600];
	sqlite3 *db = import(file, name, "\\[Compositor\\] Present\\(\\) Begin", dir, sizeof(dir));

	ck_assert_int_eq(q1(db, "SELECT count(*) FROM markers WHERE text = '[Compositor] Present() Begin'"), want_frames);
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM frames"), want_frames);
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM frames f JOIN markers m ON m.id = f.marker "
			     "WHERE m.ts_ns = f.present_ns AND m.thread = f.thread"), want_frames);
	/* every frame's time is the next marker's minus its own */
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM frames a JOIN frames b ON b.frame = a.frame + 1 "
			     "WHERE b.interval_ns != b.present_ns - a.present_ns"), 0);
	/* the frames whose jobs ran while every CPU recorded have their GPU busy time */
	ck_assert_int_gt(q1(db, "SELECT count(*) FROM frames WHERE MsGPUBusy > 0"), 0);
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM frames WHERE MsGPUBusy IS NULL AND null_reasons NOT LIKE '%MsGPUBusy: %'"), 0);
	/* two CRTCs: no refresh period to judge lateness by, and the reason says so */
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM frames WHERE late IS NOT NULL"), 0);
	ck_assert_int_eq(q1(db, "SELECT count(*) FROM frames WHERE null_reasons LIKE '%late: no refresh period to judge "
			     "by: the frame names no display and the capture has 2%'"), want_frames);
	sqlite3_close(db);
	/* the marker is kept: a later command without --frame-marker shows the same frames */
	ck_assert_int_eq(nf_test_nftrace_run(NF_TEST_ARGV("frames", "--late", "11.2ms", dir), out, sizeof(out), err,
					     sizeof(err)), 0);
	char want[64];
	snprintf(want, sizeof(want), "frames: %" PRId64 " (", want_frames);
	ck_assert_msg(strstr(out, want), "%s", out);
}

START_TEST(amdgpu_marker_frames)
{
	amdgpu("gpuvis-amdgpu.dat", "amd", 250);
	amdgpu("gpuvis-amdgpu-2017.dat", "amd17", 1089);
}
END_TEST

int main(void)
{
	char base[1024];
	struct stat st;

	nf_test_source_path(base, sizeof(base), "../shared/real-traces");
	if (stat(base, &st) != 0) {
		printf("SKIP: %s is absent (real captures are not part of the project)\n", base);
		return 77;
	}
	Suite *s = suite_create("frames-real");
	TCase *tc = tcase_create("real");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, igt_i915_flips);
	tcase_add_test(tc, igt_i915_flips_v7_zstd);
	tcase_add_test(tc, gpuvis_windows);
	tcase_add_test(tc, amdgpu_marker_frames);
	suite_add_tcase(s, tc);
	return nf_test_main(s);
}
