/*
 * The analyzer on recorded sessions (every sample, recorded by the real
 * nftrace with --ground-truth): end_ns against the simulator's true times on
 * clock-drift, every completed wait tied to exactly one signal, the design
 * document's cross-adapter dependencies, lost operations counted as the
 * parser counts lost entries; and, through `nftrace query`, that a query
 * cannot write (ATTACH, writing pragmas, VACUUM INTO) and that concurrent
 * queries and a report on one session all succeed with one analysis.
 */
#include "nf_test.h"

#include "contract/parser.h"
#include "contract/session.h"
#include "pipeline.h"

#include <sqlite3.h>
#include <stdint.h>
#include <sys/stat.h>

static const char *const samples[] = {
	"clock-drift", "cross-adapter-scenario-1", "cross-adapter-scenario-2a",
	"cross-adapter-scenario-2b", "lda-zero-timestamps", "log-buffer-example",
	"log-recreated", "monitored-value-41", "optimized-interrupt", "overrun",
	"process-a-b-sharing", "repeated-timestamps", "wraparound-32bit",
};
#define N_SAMPLES (sizeof(samples) / sizeof(samples[0]))

static char tmp[512], out[1 << 16], errb[1 << 14];

/* Runs nftrace with args (no shell), its output in out and errb: the exit status. */
static int nft(const char *const args[])
{
	return nf_test_nftrace_run(args, out, sizeof(out), errb, sizeof(errb));
}

static void setup(void)
{
	nf_test_tmpdir(tmp, sizeof(tmp));
}

static void teardown(void)
{
	nf_test_rmtree(tmp);
}

/* Records samples/NAME.nfs with --ground-truth into tmp/NAME; path in dir. */
static void record(const char *name, char *dir, size_t len)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "samples/%s.nfs", name);
	snprintf(dir, len, "%s/%s", tmp, name);
	nf_test_record(rel, dir, NF_TEST_ARGV("--ground-truth"));
}

/* Builds the session's timeline and opens it read-only. */
static sqlite3 *open_timeline(const char *dir)
{
	char db_path[1024];
	struct nf_error err;
	sqlite3 *db = NULL;

	nf_error_clear(&err);
	ck_assert_msg(nf_timeline_ensure(dir, db_path, sizeof(db_path), &err) == 0, "%s", err.msg);
	ck_assert_int_eq(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	return db;
}

static int64_t q_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *s = NULL;
	int64_t v = INT64_MIN;

	ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK, "%s: %s", sql,
		      sqlite3_errmsg(db));
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

/* ---- (a) end_ns against the true end on clock-drift ---- */

START_TEST(clock_drift_p99_end_error_within_1us)
{
	char dir[1024];
	sqlite3 *db;

	record("clock-drift", dir, sizeof(dir));
	db = open_timeline(dir);
	/* Every completed operation, joined with its true record by log position. */
	static const char errs[] =
		"CREATE TEMP VIEW e AS SELECT abs(o.end_ns - t.end_ns) AS err FROM fence_ops o "
		"JOIN truth_ops t ON t.queue = o.queue AND t.op = o.op AND t.epoch = o.epoch "
		"AND t.log_seq = o.log_seq WHERE o.status = 'complete' AND t.fate = 'read'";
	ck_assert_int_eq(sqlite3_exec(db, errs, NULL, NULL, NULL), SQLITE_OK);
	int64_t n = q_int(db, "SELECT count(*) FROM e");
	int64_t ops = q_int(db, "SELECT count(*) FROM fence_ops");

	/* 200 rounds of signal, wait, signal: every one completed and compared. */
	ck_assert_int_eq(ops, 600);
	ck_assert_int_eq(n, 600);
	int64_t p99 = q_int(db, "SELECT err FROM e ORDER BY err LIMIT 1 "
				"OFFSET (SELECT count(*) * 99 / 100 FROM e)");

	ck_assert_msg(p99 >= 0 && p99 <= 1000, "p99 |end_ns - true end| = %lld ns", (long long)p99);
	/* The GPU clock runs 150 ppm fast: ignoring that would be 30 us off at the end. */
	int64_t ppm = q_int(db, "SELECT CAST(round(ppm) AS INTEGER) FROM clock_fit");

	ck_assert_msg(ppm >= 145 && ppm <= 155, "fitted drift %lld ppm", (long long)ppm);
	sqlite3_close(db);
}
END_TEST

/* ---- (b) every completed wait tied to exactly one signal ---- */

START_TEST(every_completed_wait_has_one_releaser)
{
	const char *name = samples[_i];
	char dir[1024];
	sqlite3 *db;

	record(name, dir, sizeof(dir));
	db = open_timeline(dir);
	int64_t waits = q_int(db, "SELECT count(*) FROM fence_ops WHERE op = 'wait' "
				  "AND end_ns IS NOT NULL");

	ck_assert_msg(waits > 0 || strcmp(name, "log-buffer-example") != 0, "%s: no waits", name);
	/* One deps row per completed wait, none for anything else. */
	ck_assert_msg(q_int(db, "SELECT count(*) FROM fence_ops w WHERE w.op = 'wait' AND "
				"w.end_ns IS NOT NULL AND (SELECT count(*) FROM deps d "
				"WHERE d.wait_id = w.id) != 1") == 0,
		      "%s: a completed wait without exactly one deps row", name);
	ck_assert_msg(q_int(db, "SELECT count(*) FROM deps") == waits, "%s: deps rows", name);
	/* queue_threads says who queued what where, as fence_ops does (both ways). */
	ck_assert_msg(q_int(db, "SELECT count(*) FROM (SELECT queue, fence, thread, count(*) "
				"FROM fence_ops WHERE thread IS NOT NULL AND queue IS NOT NULL AND "
				"queued_ns IS NOT NULL GROUP BY 1, 2, 3 EXCEPT "
				"SELECT queue, fence, thread, ops FROM queue_threads)") == 0 &&
		      q_int(db, "SELECT count(*) FROM (SELECT queue, fence, thread, ops FROM "
				"queue_threads EXCEPT SELECT queue, fence, thread, count(*) FROM fence_ops "
				"WHERE thread IS NOT NULL AND queue IS NOT NULL AND queued_ns IS NOT NULL "
				"GROUP BY 1, 2, 3)") == 0 &&
		      q_int(db, "SELECT count(*) FROM queue_threads") > 0,
		      "%s: queue_threads differs from fence_ops", name);
	/* Each names one releaser, unless the fence started at or above the value. */
	ck_assert_msg(q_int(db, "SELECT count(*) FROM deps d JOIN fence_ops w ON w.id = d.wait_id "
				"JOIN fences f ON f.fence = w.fence "
				"WHERE (d.signal_id IS NULL) = (d.cpu_signal IS NULL) "
				"AND f.initial_value < w.value") == 0,
		      "%s: a wait released by none or by two", name);
	/* The releaser signals the same fence to a value at or above the wait's. */
	ck_assert_msg(q_int(db, "SELECT count(*) FROM deps d JOIN fence_ops w ON w.id = d.wait_id "
				"JOIN fence_ops s ON s.id = d.signal_id "
				"WHERE s.op != 'signal' OR s.fence != w.fence OR s.value < w.value") == 0,
		      "%s: a GPU releaser of another fence or a lower value", name);
	ck_assert_msg(q_int(db, "SELECT count(*) FROM deps d JOIN fence_ops w ON w.id = d.wait_id "
				"JOIN cpu_signals c ON c.id = d.cpu_signal "
				"WHERE c.fence != w.fence OR c.value < w.value") == 0,
		      "%s: a CPU releaser of another fence or a lower value", name);
	/* Simulated sessions are causal: no wait ends before its releaser. */
	ck_assert_msg(q_int(db, "SELECT count(*) FROM anomalies WHERE kind = 'causality'") == 0,
		      "%s: causality anomalies", name);
	sqlite3_close(db);
}
END_TEST

/* ---- the design document's cross-adapter tables ---- */

/*
 * Each scenario: the waiting adapter waits for 10 then 20 from the GPU and
 * from the CPU; 10 is signaled from the other adapter's queue, 20 from the CPU
 * on the other adapter's handle. Expected, per wait: (waiting adapter, value,
 * status, releasing queue's adapter or -1 for a CPU signal, the CPU signal's
 * adapter).
 */
struct xa_dep {
	int64_t wait_adapter, value;
	const char *status;
	int64_t sig_adapter, cpu_adapter;
};

static void check_cross_adapter(const char *name, const struct xa_dep *exp, size_t n,
				int64_t cpu_wait_adapter)
{
	char dir[1024], sql[1024];
	sqlite3 *db;

	record(name, dir, sizeof(dir));
	db = open_timeline(dir);
	ck_assert_int_eq(q_int(db, "SELECT count(*) FROM fence_ops WHERE op = 'wait'"), (int64_t)n);
	for (size_t i = 0; i < n; i++) {
		snprintf(sql, sizeof(sql),
			 "SELECT count(*) FROM fence_ops w JOIN deps d ON d.wait_id = w.id "
			 "LEFT JOIN fence_ops s ON s.id = d.signal_id "
			 "LEFT JOIN cpu_signals c ON c.id = d.cpu_signal "
			 "WHERE w.op = 'wait' AND w.adapter = %lld AND w.value = %lld "
			 "AND w.status = '%s' AND coalesce(s.adapter, -1) = %lld "
			 "AND coalesce(c.adapter, -1) = %lld AND w.end_ns IS NOT NULL "
			 "AND (s.end_ns IS NULL OR s.end_ns <= w.end_ns) "
			 "AND (c.ts_ns IS NULL OR c.ts_ns <= w.end_ns)",
			 (long long)exp[i].wait_adapter, (long long)exp[i].value, exp[i].status,
			 (long long)exp[i].sig_adapter, (long long)exp[i].cpu_adapter);
		ck_assert_msg(q_int(db, sql) == 1, "%s: wait for %lld not released as described",
			      name, (long long)exp[i].value);
	}
	/* The CPU waiters of the waiting adapter are released too, after the signal. */
	snprintf(sql, sizeof(sql),
		 "SELECT count(*) FROM cpu_waits WHERE adapter = %lld AND status = 'satisfied' "
		 "AND value IN (10, 20)", (long long)cpu_wait_adapter);
	ck_assert_int_eq(q_int(db, sql), 2);
	ck_assert_int_eq(q_int(db, "SELECT count(*) FROM cpu_waits c WHERE c.value = 10 AND "
				   "c.end_ns < (SELECT min(end_ns) FROM fence_ops WHERE op = 'signal' "
				   "AND value = 10) - 2000"), 0);
	sqlite3_close(db);
}

START_TEST(cross_adapter_scenario_1)
{
	/* Both native: iGPU (1) waits, dGPU (0) signals; propagated to the iGPU. */
	static const struct xa_dep exp[] = {
		{ 1, 10, "complete", 0, -1 },
		{ 1, 20, "complete", -1, 0 },
	};

	check_cross_adapter("cross-adapter-scenario-1", exp, 2, 1);
}
END_TEST

START_TEST(cross_adapter_scenario_2a)
{
	/* The iGPU (1) has no native fences: its waits are monitored-fence (legacy) waits. */
	static const struct xa_dep exp[] = {
		{ 1, 10, "legacy", 0, -1 },
		{ 1, 20, "legacy", -1, 0 },
	};

	check_cross_adapter("cross-adapter-scenario-2a", exp, 2, 1);
}
END_TEST

START_TEST(cross_adapter_scenario_2b)
{
	/* The dGPU (0) waits natively; the iGPU (1) signals from its software queue. */
	static const struct xa_dep exp[] = {
		{ 0, 10, "complete", 1, -1 },
		{ 0, 20, "complete", -1, 1 },
	};

	check_cross_adapter("cross-adapter-scenario-2b", exp, 2, 0);
	/* ... and the iGPU's signal is the OS-handled (legacy) one. */
}
END_TEST

/* ---- (c) lost operations = the parser's lost entries ---- */

struct lost_count {
	uint64_t lost;
};

static int count_finding(void *ctx, const struct nf_finding *f)
{
	struct lost_count *c = ctx;

	if (f->kind == NF_FIND_LOST)
		c->lost += f->count;
	return 0;
}

START_TEST(lost_ops_equal_parser_lost_entries)
{
	const char *name = samples[_i];
	char dir[1024];
	struct nf_parser *p = NULL;
	struct nf_error err;
	struct lost_count c = { 0 };
	struct nf_parser_callbacks cb = { &c, NULL, NULL, count_finding };
	sqlite3 *db;

	record(name, dir, sizeof(dir));
	nf_error_clear(&err);
	ck_assert_msg(nf_parser_open(dir, &p, &err) == 0, "%s", err.msg);
	ck_assert_msg(nf_parser_run(p, &cb, &err) == 0, "%s", err.msg);
	nf_parser_destroy(p);
	db = open_timeline(dir);
	ck_assert_msg(q_int(db, "SELECT count(*) FROM fence_ops WHERE status = 'lost'") ==
			      (int64_t)c.lost,
		      "%s: %lld lost ops, parser %llu lost entries", name,
		      (long long)q_int(db, "SELECT count(*) FROM fence_ops WHERE status = 'lost'"),
		      (unsigned long long)c.lost);
	/* ... and as many as the overrun anomalies say, with no end time invented. */
	ck_assert_int_eq(q_int(db, "SELECT coalesce(sum(lost_entries), 0) FROM anomalies "
				   "WHERE kind = 'lost'"), (int64_t)c.lost);
	ck_assert_int_eq(q_int(db, "SELECT count(*) FROM fence_ops WHERE status = 'lost' "
				   "AND end_ns IS NOT NULL"), 0);
	if (strcmp(name, "overrun") == 0)
		ck_assert_msg(c.lost > 1000, "overrun: only %llu lost", (unsigned long long)c.lost);
	sqlite3_close(db);
}
END_TEST

/* ---- nftrace query cannot write ---- */

static void file_bytes(const char *path, char **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");

	ck_assert_ptr_nonnull(f);
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	*buf = malloc(*len + 1);
	ck_assert_ptr_nonnull(*buf);
	ck_assert_int_eq(fread(*buf, 1, *len, f), *len);
	fclose(f);
}

START_TEST(query_refuses_attach_pragma_writes_and_vacuum_into)
{
	char dir[1024], db_path[1200], other[1200], vac[1200];
	char *before, *after;
	size_t nb, na;
	struct stat st;
	/* before, file (0 none, 1 an attached file, 2 a VACUUM INTO target), after */
	static const struct {
		const char *before;
		int file;
		const char *after;
	} stmts[] = {
		{ "ATTACH '", 1, "' AS x" },
		{ "ATTACH DATABASE 'file:", 1, "?mode=rwc' AS x" },
		{ "PRAGMA journal_mode = DELETE", 0, "" },
		{ "PRAGMA user_version = 7", 0, "" },
		{ "PRAGMA writable_schema = ON", 0, "" },
		{ "PRAGMA query_only = OFF", 0, "" },
		{ "VACUUM INTO '", 2, "'" },
		{ "VACUUM", 0, "" },
		{ "DELETE FROM fence_ops", 0, "" },
		{ "CREATE TABLE t(x)", 0, "" },
	};

	record("log-buffer-example", dir, sizeof(dir));
	ck_assert_int_eq(nft(NF_TEST_ARGV("query", dir, "select count(*) from fence_ops")), 0);
	snprintf(db_path, sizeof(db_path), "%s/%s", dir, NF_TIMELINE_DB_NAME);
	snprintf(other, sizeof(other), "%s/attached.db", tmp);
	snprintf(vac, sizeof(vac), "%s/copy.db", tmp);
	file_bytes(db_path, &before, &nb);
	for (size_t i = 0; i < sizeof(stmts) / sizeof(stmts[0]); i++) {
		char sql[2600];

		snprintf(sql, sizeof(sql), "%s%s%s", stmts[i].before,
			 stmts[i].file == 1 ? other : stmts[i].file == 2 ? vac : "", stmts[i].after);
		ck_assert_msg(nft(NF_TEST_ARGV("query", dir, sql)) == 1,
			      "not refused: %s", sql);
		ck_assert_msg(strstr(errb, "refused") != NULL || strstr(errb, "readonly") != NULL ||
				      strstr(errb, "read-only") != NULL,
			      "%s: %s", sql, errb);
		ck_assert_msg(nf_test_count_lines(errb) == 1, "%s: %s", sql, errb);
		ck_assert_msg(stat(other, &st) != 0, "%s created %s", sql, other);
		ck_assert_msg(stat(vac, &st) != 0, "%s created %s", sql, vac);
	}
	file_bytes(db_path, &after, &na);
	ck_assert_msg(na == nb && memcmp(before, after, nb) == 0, "the database changed");
	free(before);
	free(after);
	/* Reading still works after all that. */
	ck_assert_int_eq(nft(NF_TEST_ARGV("query", "--csv", dir, "select count(*) from fence_ops")),
			 0);
	ck_assert_str_eq(out, "count(*)\n2\n");
}
END_TEST

/* ---- load: concurrent queries and a report, one analysis ---- */

START_TEST(concurrent_queries_and_report_analyse_once)
{
	char dir[1024];

	record("overrun", dir, sizeof(dir));
	/*
	 * Eight queries and a report start together on a session never analysed:
	 * every one must succeed, and all must read the same build (meta.build_id
	 * names the process and time of the build that wrote the file).
	 */
	ck_assert_int_eq(nf_test_sh("cd \"$1\" && pids=''; for i in 1 2 3 4 5 6 7 8; do "
		"\"$NF\" query --csv \"$2\" \"select value from meta where key = 'build_id'\" "
		">q$i.out 2>q$i.err & pids=\"$pids $!\"; done; "
		"\"$NF\" report \"$2\" -o r.png >r.out 2>r.err & pids=\"$pids $!\"; "
		"fail=0; for p in $pids; do wait $p || fail=$((fail + 1)); done; "
		"echo failed=$fail; cat q*.err r.err; sort q*.out | uniq -c | wc -l; "
		"grep -vc value q*.out | grep -c ':1$'; test -s r.png && echo png", NF_TEST_ARGV(tmp, dir), out, sizeof(out), errb, sizeof(errb)), 0);
	/* no failures, no errors, two distinct lines (header, one id), 8 answers, a picture */
	ck_assert_msg(strcmp(out, "failed=0\n2\n8\npng\n") == 0, "%s", out);
	/* Queries on the built session reuse it: the build id stays. */
	char first[sizeof(out)];

	ck_assert_int_eq(nft(NF_TEST_ARGV("query", "--csv", dir,
			 "select value from meta where key = 'build_id'")), 0);
	memcpy(first, out, sizeof(out));
	ck_assert_int_eq(nf_test_sh("cat \"$1/q1.out\"", NF_TEST_ARGV(tmp), out, sizeof(out), errb,
			 sizeof(errb)), 0);
	ck_assert_str_eq(first, out);
}
END_TEST

/* ---- the session directory around the database ---- */

/*
 * The parser reads the session directory itself: the database, its lock and
 * the build's temporaries are dot files, which babeltrace2 skips. A trace
 * newer than the database is analysed again, with the old database in place;
 * nothing but the database and its lock is left behind.
 */
START_TEST(rebuild_next_to_the_database_leaves_no_temporaries)
{
	static const char q[] = "\"$NF\" query --csv \"$1\" "
				"\"select value from meta where key = 'build_id'\" | tail -n 1";
	char dir[1024], id1[256], id2[256];

	record("overrun", dir, sizeof(dir));
	ck_assert_int_eq(nf_test_sh(q, NF_TEST_ARGV(dir), out, sizeof(out), errb, sizeof(errb)), 0);
	snprintf(id1, sizeof(id1), "%.200s", out);
	ck_assert_int_eq(nf_test_sh(q, NF_TEST_ARGV(dir), out, sizeof(out), errb, sizeof(errb)), 0);
	ck_assert_str_eq(out, id1); /* fresh: reused */
	/* A new mtime alone is the same session (the cache is keyed on what
	 * the session is, not on times: a copy keeps its timeline): reused. */
	ck_assert_int_eq(nf_test_sh("sleep 1.1; touch \"$1/events\"", NF_TEST_ARGV(dir), out,
			 sizeof(out), errb, sizeof(errb)), 0);
	ck_assert_int_eq(nf_test_sh(q, NF_TEST_ARGV(dir), out, sizeof(out), errb, sizeof(errb)), 0);
	ck_assert_str_eq(out, id1);
	/* Recorded again (another seed, so another UUID): rebuilt. */
	char src[1024];
	nf_test_source_path(src, sizeof(src), "samples/overrun.nfs");
	ck_assert_int_eq(nft(NF_TEST_ARGV("record", "--force", "--seed", "2", "--ground-truth",
			 "-o", dir, src)), 0);
	ck_assert_int_eq(nf_test_sh(q, NF_TEST_ARGV(dir), out, sizeof(out), errb, sizeof(errb)), 0);
	snprintf(id2, sizeof(id2), "%.200s", out);
	ck_assert_msg(strcmp(id1, id2) != 0, "not rebuilt after the trace changed: %s", id2);
	ck_assert_int_eq(nft(NF_TEST_ARGV("query", "--csv", dir,
			 "select count(*) from fence_ops where status = 'lost'")), 0);
	ck_assert_str_eq(out, "count(*)\n1952\n");
	ck_assert_int_eq(nf_test_sh("ls -A \"$1\" | sort | tr '\\n' ' '", NF_TEST_ARGV(dir), out,
			 sizeof(out), errb, sizeof(errb)), 0);
	ck_assert_str_eq(out, ".timeline.db .timeline.lock events metadata truth ");
}
END_TEST

/* ---- ready-made reports ---- */

START_TEST(reports_stalls_queues_lost)
{
	char dir[1024], drift[1024];

	record("overrun", dir, sizeof(dir));
	/* queues: both queues signal 1000 times and lose 976 each (1952 lost in all). */
	ck_assert_int_eq(nft(NF_TEST_ARGV("query", "--csv", dir, "--report", "queues")), 0);
	ck_assert_msg(strncmp(out, "queue,name,adapter,adapter_name,ops,waits,signals,lost,stalled_ns,span_ns\n",
			      74) == 0, "%s", out);
	ck_assert_int_eq(nf_test_count_lines(out), 3);
	ck_assert_msg(strstr(out, ",Q0,0,GPU,1000,0,1000,976,0,") && strstr(out, ",Q1,0,GPU,1000,0,1000,976,0,"),
		      "%s", out);
	/* lost: one row per lost span, summing to the parser's count. */
	ck_assert_int_eq(nf_test_sh("\"$NF\" query --csv \"$1\" --report lost | awk -F, "
		"'NR > 1 { n++; s += $6 } END { print n, s }'", NF_TEST_ARGV(dir), out, sizeof(out), errb, sizeof(errb)), 0);
	ck_assert_str_eq(out, "6 1952\n");
	/* stalls: the 20 longest, longest first, each with the queue of its signal. */
	record("clock-drift", drift, sizeof(drift));
	ck_assert_int_eq(nf_test_sh("\"$NF\" query --csv \"$1\" --report stalls | awk -F, "
		"'NR > 1 { n++; if (p != \"\" && $5 > p) bad++; p = $5; if ($9 != \"Q0\") bad++ } "
		"END { print n, bad + 0 }'", NF_TEST_ARGV(drift), out, sizeof(out), errb, sizeof(errb)), 0);
	ck_assert_str_eq(out, "20 0\n");
	/* Unknown report, or with SQL too: usage errors. */
	ck_assert_int_eq(nft(NF_TEST_ARGV("query", dir, "--report", "nope")), 2);
	ck_assert_msg(strstr(errb, "stalls|queues|lost") != NULL, "%s", errb);
	ck_assert_int_eq(nft(NF_TEST_ARGV("query", dir, drift, "--report", "queues")), 2);
}
END_TEST


/* ---- the parser on its own thread (importers/ctf/pipeline.c) ---- */

/* A running FNV-1a digest of every item and what it points to, and a count. */
struct digest {
	uint64_t h, items, stop_at;
};

static void mix(struct digest *d, const void *p, size_t n)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++) {
		d->h ^= c[i];
		d->h *= 1099511628211ULL;
	}
}

static int dg_stop(struct digest *d)
{
	return ++d->items == d->stop_at ? 42 : 0;
}

static int dg_event(void *ctx, const struct nf_event *ev)
{
	struct digest *d = ctx;
	const struct nf_event_desc *desc = nf_event_desc(ev->id);

	mix(d, "E", 1);
	mix(d, &ev->id, sizeof(ev->id));
	mix(d, &ev->ts, sizeof(ev->ts));
	mix(d, ev->f, sizeof(ev->f));
	if (ev->str)
		mix(d, ev->str, strlen(ev->str) + 1);
	for (uint32_t i = 1; desc && ev->u32s && i < desc->n_fields; i++)
		if (desc->fields[i].type == NF_FT_U32SEQ)
			mix(d, ev->u32s, (size_t)ev->f[i - 1] * sizeof(uint32_t));
	return dg_stop(d);
}

static int dg_entry(void *ctx, const struct nf_decoded_entry *e)
{
	struct digest *d = ctx;

	mix(d, "N", 1);
	mix(d, e, sizeof(*e));
	return dg_stop(d);
}

static int dg_finding(void *ctx, const struct nf_finding *f)
{
	struct digest *d = ctx;
	struct nf_finding c = *f;

	mix(d, "F", 1);
	c.stream = NULL;
	mix(d, &c, sizeof(c));
	if (f->stream)
		mix(d, f->stream, strlen(f->stream) + 1);
	return dg_stop(d);
}

static int digest_run(const char *dir, bool pipelined, struct digest *d, struct nf_error *err)
{
	struct nf_parser *p = NULL;
	struct nf_parser_callbacks cb = { d, dg_event, dg_entry, dg_finding };
	int rc;

	d->h = 14695981039346656037ULL;
	d->items = 0;
	ck_assert_msg(nf_parser_open(dir, &p, err) == 0, "%s", err->msg);
	rc = pipelined ? nf_timeline_run_pipelined(p, &cb, err) : nf_parser_run(p, &cb, err);
	nf_parser_destroy(p);
	return rc;
}

/*
 * The pipelined parser hands over the very items of the direct one, in the
 * same order (events with their strings and fence arrays, entries, findings
 * with their stream names), on samples with interrupts and overruns; a
 * callback's error stops it with that code.
 */
START_TEST(pipelined_parser_delivers_what_the_parser_does)
{
	/* Fence arrays (interrupts), overruns, zero timestamps; thousands of items in all. */
	static const char *const names[] = { "monitored-value-41", "optimized-interrupt", "overrun",
					     "lda-zero-timestamps" };
	struct nf_error err;
	char dir[1024];
	uint64_t total = 0;

	nf_error_clear(&err);
	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
		struct digest a = { 0, 0, 0 }, b = { 0, 0, 0 };

		record(names[k], dir, sizeof(dir));
		ck_assert_int_eq(digest_run(dir, false, &a, &err), 0);
		ck_assert_int_eq(digest_run(dir, true, &b, &err), 0);
		ck_assert_int_gt(a.items, 10);
		total += a.items;
		ck_assert_int_eq(a.items, b.items);
		ck_assert_msg(a.h == b.h, "%s: items differ", names[k]);
		/* Stopped by the callback past the first batches. */
		b.stop_at = a.items - 3;
		ck_assert_int_eq(digest_run(dir, true, &b, &err), 42);
		ck_assert_int_eq(b.items, a.items - 3);
	}
	ck_assert_int_gt(total, 4 * 512); /* several of the pipeline's batches */
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("analyzer-sessions");
	TCase *tc = tcase_create("sessions");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, clock_drift_p99_end_error_within_1us);
	tcase_add_loop_test(tc, every_completed_wait_has_one_releaser, 0, (int)N_SAMPLES);
	tcase_add_test(tc, cross_adapter_scenario_1);
	tcase_add_test(tc, cross_adapter_scenario_2a);
	tcase_add_test(tc, cross_adapter_scenario_2b);
	tcase_add_loop_test(tc, lost_ops_equal_parser_lost_entries, 0, (int)N_SAMPLES);
	tcase_add_test(tc, query_refuses_attach_pragma_writes_and_vacuum_into);
	tcase_add_test(tc, concurrent_queries_and_report_analyse_once);
	tcase_add_test(tc, reports_stalls_queues_lost);
	tcase_add_test(tc, rebuild_next_to_the_database_leaves_no_temporaries);
	tcase_add_test(tc, pipelined_parser_delivers_what_the_parser_does);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return nf_test_main(suite());
}
