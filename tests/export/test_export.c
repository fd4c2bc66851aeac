/*
 * nftrace export: both formats against the timeline they came from, on every
 * bundled sample (recorded here) and on an imported kernel capture (a
 * trace-cmd file written by tests/kernel's fixture writer).
 *
 * - chrome-json: the file is parsed by a strict JSON parser written here; the
 *   counts of slices, instants, stalls, flows and counters must equal the
 *   timeline's rows, every flow is one "s" and one "f" with its own id, the
 *   "s" inside the releasing signal's slice and the "f" inside the wait's
 *   (or its stall), not before the "s"; slices on one tid nest.
 * - perfetto (argument "perfetto", its own ctest; skipped with a message when
 *   protoc is missing): `protoc --decode` against tests/export's subset of
 *   Perfetto's public format; the same counts, each flow id once as a start
 *   and once as an end, slices of one track nest.
 * - bad input: one line and exit 1 or 2, no file left behind.
 * The expected counts are computed here from the tables with SQL of this
 * test's own, as export.h states the mapping.
 */
/* Paths here are a temporary directory and short names: gcc cannot see
 * that they fit, and a truncated one would only fail the test. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#include "nf_test.h"

#include "contract/export.h"

#include <ctype.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdint.h>
#include <dirent.h>
#include <sys/stat.h>

/*
 * Every .nfs file of samples/ but stress.nfs (a million operations: the benchmark's,
 * bench/export), so a sample added later is covered too.
 */
static char samples[64][128];
static size_t n_samples;

static int cmp_str(const void *a, const void *b)
{
	return strcmp(a, b);
}

static void list_samples(void)
{
	char dir[4096];
	DIR *d;
	struct dirent *de;

	nf_test_source_path(dir, sizeof(dir), "samples");
	d = opendir(dir);
	ck_assert_msg(d != NULL, "%s", dir);
	n_samples = 0;
	while ((de = readdir(d)) != NULL) {
		size_t n = strlen(de->d_name);

		if (n < 5 || strcmp(de->d_name + n - 4, ".nfs") || !strcmp(de->d_name, "stress.nfs") ||
		    n - 4 >= sizeof(samples[0]) || n_samples == sizeof(samples) / sizeof(samples[0]))
			continue;
		memcpy(samples[n_samples], de->d_name, n - 4);
		samples[n_samples++][n - 4] = '\0';
	}
	closedir(d);
	qsort(samples, n_samples, sizeof(samples[0]), cmp_str);
	ck_assert_msg(n_samples >= 10, "only %zu samples found", n_samples);
}

/* ---- expected counts from the timeline ---- */

struct counts {
	long slices, stalls, instants, flows, counters;
};

static long q1(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	long v;

	ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK, "%s: %s", sql,
		      sqlite3_errmsg(db));
	ck_assert(sqlite3_step(st) == SQLITE_ROW);
	v = (long)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

#define S_OF(a) "coalesce(" a ".queued_ns, " a ".observed_ns, " a ".end_ns)"

static sqlite3 *open_db(const char *session)
{
	char path[4200];
	sqlite3 *db;

	snprintf(path, sizeof(path), "%s/.timeline.db", session);
	ck_assert_msg(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK, "%s", path);
	return db;
}

static int has_table(sqlite3 *db, const char *name)
{
	char sql[256];

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '%s'", name);
	return q1(db, sql) > 0;
}

/* What imported captures add (export.h): GPU jobs, vblanks, markers, DMA packets, VSyncs; and
 * the frames analysis: flips and frames. */
struct imported {
	long job_slices, job_instants, job_flows, vblanks, markers, dma_slices, dma_instants, vsyncs;
	long flip_slices, flip_instants, frame_slices, frame_instants;
};

#define J_OF(a) "coalesce(" a ".submitted_ns, " a ".started_ns, " a ".finished_ns)"

static void imported_counts(sqlite3 *db, struct counts *c, struct imported *out)
{
	struct imported im = { 0 };

	if (has_table(db, "jobs")) {
		/* A bounded finish (finished_bound_ns) is no end: such a run is an instant. */
#define J_FIN "finished_ns"
		im.job_slices = q1(db, "SELECT count(*) FROM jobs WHERE submitted_ns IS NOT NULL AND started_ns IS NOT NULL") +
				q1(db, "SELECT count(*) FROM jobs WHERE started_ns IS NOT NULL AND " J_FIN " IS NOT NULL");
		im.job_instants = q1(db, "SELECT count(*) FROM jobs WHERE submitted_ns IS NOT NULL AND started_ns IS NULL") +
				  q1(db, "SELECT count(*) FROM jobs WHERE (started_ns IS NULL) != (" J_FIN " IS NULL)");
#undef J_FIN
		if (has_table(db, "job_deps"))
			im.job_flows = q1(db, "SELECT count(*) FROM job_deps d JOIN jobs a ON a.id = d.dep_job "
					      "JOIN jobs b ON b.id = d.job WHERE " J_OF("a") " IS NOT NULL AND " J_OF("b")
					      " IS NOT NULL");
	}
	if (has_table(db, "vblanks"))
		im.vblanks = q1(db, "SELECT count(*) FROM vblanks WHERE ts_ns IS NOT NULL");
	if (has_table(db, "markers"))
		im.markers = q1(db, "SELECT count(*) FROM markers WHERE ts_ns IS NOT NULL");
	if (has_table(db, "dma_packets")) {
		im.dma_slices = q1(db, "SELECT count(*) FROM dma_packets WHERE start_ns IS NOT NULL AND end_ns IS NOT NULL");
		im.dma_instants = q1(db, "SELECT count(*) FROM dma_packets WHERE start_ns IS NOT NULL AND end_ns IS NULL");
	}
	if (has_table(db, "vsyncs"))
		im.vsyncs = q1(db, "SELECT count(*) FROM vsyncs WHERE ts_ns IS NOT NULL");
	if (has_table(db, "flips")) {
		/* from ready (else queued) to latched; never latched: an instant */
		im.flip_slices = q1(db, "SELECT count(*) FROM flips WHERE coalesce(ready_ns, queued_ns) IS NOT NULL "
					"AND done_ns IS NOT NULL");
		im.flip_instants = q1(db, "SELECT count(*) FROM flips WHERE coalesce(ready_ns, queued_ns) IS NOT NULL "
					  "AND done_ns IS NULL");
		/* from the present to the blank (else GPU done); nothing after the present: an instant */
		im.frame_slices = q1(db, "SELECT count(*) FROM frames WHERE coalesce(screen_ns, ready_ns, present_ns) > present_ns");
		im.frame_instants = q1(db, "SELECT count(*) FROM frames WHERE coalesce(screen_ns, ready_ns, present_ns) <= present_ns");
	}
	c->slices += im.job_slices + im.dma_slices + im.flip_slices + im.frame_slices;
	c->instants += im.job_instants + im.vblanks + im.markers + im.dma_instants + im.vsyncs + im.flip_instants +
		       im.frame_instants;
	c->flows += im.job_flows;
	if (out)
		*out = im;
}

static struct counts expected(const char *session)
{
	sqlite3 *db = open_db(session);
	struct counts c;

	c.stalls = q1(db, "SELECT count(*) FROM fence_ops f WHERE op = 'wait' AND end_ns IS NOT NULL "
			  "AND observed_ns IS NOT NULL AND max(observed_ns, min(" S_OF("f") ", end_ns)) "
			  "< max(" S_OF("f") ", end_ns)");
	c.slices = q1(db, "SELECT count(*) FROM fence_ops f WHERE " S_OF("f") " IS NOT NULL AND end_ns IS NOT NULL") +
		   c.stalls +
		   q1(db, "SELECT count(*) FROM cpu_waits WHERE adapter IS NOT NULL AND start_ns IS NOT NULL "
			  "AND end_ns IS NOT NULL");
	c.instants = q1(db, "SELECT count(*) FROM fence_ops f WHERE " S_OF("f") " IS NOT NULL AND end_ns IS NULL") +
		     q1(db, "SELECT count(*) FROM cpu_waits WHERE adapter IS NOT NULL AND start_ns IS NOT NULL "
			    "AND end_ns IS NULL") +
		     q1(db, "SELECT count(*) FROM cpu_signals WHERE ts_ns IS NOT NULL") +
		     q1(db, "SELECT count(*) FROM anomalies WHERE coalesce(first_ns, last_ns) IS NOT NULL");
	c.flows = q1(db, "SELECT count(*) FROM deps d JOIN fence_ops w ON w.id = d.wait_id "
			 "LEFT JOIN fence_ops s ON s.id = d.signal_id LEFT JOIN cpu_signals c ON c.id = d.cpu_signal "
			 "WHERE " S_OF("w") " IS NOT NULL AND ((d.signal_id IS NOT NULL AND " S_OF("s") " IS NOT NULL) "
			 "OR (d.signal_id IS NULL AND c.ts_ns IS NOT NULL))");
	c.counters = q1(db, "SELECT count(*) FROM anomalies WHERE coalesce(first_ns, last_ns) IS NOT NULL "
			    "AND lost_entries > 0");
	imported_counts(db, &c, NULL);
	sqlite3_close(db);
	return c;
}

/* ---- running the CLI ---- */

/* Records samples/NAME.nfs into dir/NAME; its path in session. */
static void record_sample(const char *dir, const char *name, char *session, size_t len)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "samples/%s.nfs", name);
	snprintf(session, len, "%s/%s", dir, name);
	nf_test_record(rel, session, NULL);
}

static void import_kernel(const char *dir, char *session, size_t len)
{
	char out[4096], err[4096], tool[4096], formats[4096], events[4096], dat[4096];
	const char *bin = getenv("NF_BINARY_DIR");
	int rc;

	snprintf(tool, sizeof(tool), "%s/tests/kernel/nf-make-tracedat", bin ? bin : ".");
	nf_test_source_path(formats, sizeof(formats), "samples/kernel/formats");
	nf_test_source_path(events, sizeof(events), "samples/kernel/dma-fence.events");
	snprintf(dat, sizeof(dat), "%s/k.dat", dir);
	snprintf(session, len, "%s/kernel", dir);
	rc = nf_test_exec(NULL, NF_TEST_ARGV(tool, formats, events, dat), out, sizeof(out), err,
			  sizeof(err));
	ck_assert_msg(rc == 0, "kernel fixture: exit %d: %s", rc, err);
	rc = nf_test_nftrace_run(NF_TEST_ARGV("import", dat, "-o", session), out, sizeof(out), err,
				 sizeof(err));
	ck_assert_msg(rc == 0, "kernel fixture: import: exit %d: %s", rc, err);
}

/* nftrace import PATH -o DIR/NAME (a trace-cmd file or an ETW capture). */
static void import_file(const char *dir, const char *path, const char *name, char *session, size_t len)
{
	char out[4096], err[4096];
	int rc;

	snprintf(session, len, "%s/%s", dir, name);
	rc = nf_test_nftrace_run(NF_TEST_ARGV("import", path, "-o", session), out, sizeof(out), err,
				 sizeof(err));
	ck_assert_msg(rc == 0, "import %s: exit %d: %s", path, rc, err);
}

/* The ETW fixture (tests/export/make_etl.c), imported. */
static void import_etl_fixture(const char *dir, char *session, size_t len)
{
	char out[4096], err[4096], etl[4200], tool[4200];
	const char *bin = getenv("NF_BINARY_DIR");
	int rc;

	snprintf(etl, sizeof(etl), "%s/fixture.etl", dir);
	snprintf(tool, sizeof(tool), "%s/tests/export/nf-export-make-etl", bin ? bin : ".");
	rc = nf_test_exec(NULL, NF_TEST_ARGV(tool, etl), out, sizeof(out), err, sizeof(err));
	ck_assert_msg(rc == 0, "ETW fixture: exit %d: %s", rc, err);
	import_file(dir, etl, "etw", session, len);
}

/* nftrace export SESSION -o FILE --format FORMAT OPTS... (opts: NULL or NF_TEST_ARGV(...)). */
static void export_session(const char *session, const char *format, const char *file,
			   const char *const opts[])
{
	const char *argv[16] = { "export", session, "-o", file, "--format", format };
	char out[4096], err[4096];
	size_t n = 6;
	int rc;

	for (size_t i = 0; opts && opts[i]; i++) {
		ck_assert(n < 15);
		argv[n++] = opts[i];
	}
	argv[n] = NULL;
	rc = nf_test_nftrace_run(argv, out, sizeof(out), err, sizeof(err));
	ck_assert_msg(rc == 0, "export %s %s: exit %d: %s", session, format, rc, err);
	ck_assert_msg(strstr(out, file) != NULL, "no summary line: %s", out);
}

/* ---- a strict JSON parser, keeping what the checks need of each event ---- */

struct jev {
	char ph;
	int64_t pid, tid, ts, dur, id, arg_id, arg_cpu, arg_job, arg_frame;
	int has_dur, has_id, has_arg_id, has_arg_cpu, has_arg_job, has_arg_frame, bp_e;
	char name[64];
};

struct jp {
	const char *s, *e;
	struct jev *ev;
	size_t n, cap;
	int meta_ok;
};

static void ws(struct jp *p)
{
	while (p->s < p->e && (*p->s == ' ' || *p->s == '\n' || *p->s == '\r' || *p->s == '\t'))
		p->s++;
}

static int lit(struct jp *p, const char *w)
{
	size_t n = strlen(w);

	if ((size_t)(p->e - p->s) < n || memcmp(p->s, w, n))
		return -1;
	p->s += n;
	return 0;
}

/* A string into buf (truncated to len-1; NULL: skipped). */
static int jstring(struct jp *p, char *buf, size_t len)
{
	size_t k = 0;

	ws(p);
	if (p->s >= p->e || *p->s != '"')
		return -1;
	p->s++;
	while (p->s < p->e && *p->s != '"') {
		char c = *p->s++;

		if ((unsigned char)c < 0x20)
			return -1;
		if (c == '\\') {
			if (p->s >= p->e)
				return -1;
			c = *p->s++;
			if (c == 'u') {
				for (int i = 0; i < 4; i++)
					if (p->s >= p->e || !isxdigit((unsigned char)*p->s++))
						return -1;
				c = '?';
			} else if (!strchr("\"\\/bfnrt", c)) {
				return -1;
			}
		}
		if (buf && k + 1 < len)
			buf[k++] = c;
	}
	if (p->s >= p->e)
		return -1;
	p->s++;
	if (buf)
		buf[k] = '\0';
	return 0;
}

/* A number; *ns gets it times 1000 when it has at most three decimals. */
static int jnumber(struct jp *p, int64_t *v, int64_t *ns)
{
	const char *a;
	int64_t ip = 0, frac = 0;
	int neg = 0, nd = 0;

	ws(p);
	a = p->s;
	if (p->s < p->e && *p->s == '-') {
		neg = 1;
		p->s++;
	}
	if (p->s >= p->e || !isdigit((unsigned char)*p->s))
		return -1;
	if (*p->s == '0' && p->s + 1 < p->e && isdigit((unsigned char)p->s[1]))
		return -1;
	while (p->s < p->e && isdigit((unsigned char)*p->s))
		ip = ip * 10 + (*p->s++ - '0');
	if (p->s < p->e && *p->s == '.') {
		p->s++;
		if (p->s >= p->e || !isdigit((unsigned char)*p->s))
			return -1;
		while (p->s < p->e && isdigit((unsigned char)*p->s)) {
			if (nd < 3)
				frac = frac * 10 + (*p->s - '0');
			nd++;
			p->s++;
		}
	}
	if (p->s < p->e && (*p->s == 'e' || *p->s == 'E'))
		return -1;  /* we never write exponents */
	while (nd < 3) {
		frac *= 10;
		nd++;
	}
	(void)a;
	if (v)
		*v = neg ? -ip : ip;
	if (ns)
		*ns = (neg ? -1 : 1) * (ip * 1000 + frac);
	return 0;
}

static int jvalue(struct jp *p, int depth);

static int jobject_skip(struct jp *p, int depth)
{
	ws(p);
	if (lit(p, "{"))
		return -1;
	ws(p);
	if (!lit(p, "}"))
		return 0;
	for (;;) {
		if (jstring(p, NULL, 0))
			return -1;
		ws(p);
		if (lit(p, ":") || jvalue(p, depth + 1))
			return -1;
		ws(p);
		if (!lit(p, "}"))
			return 0;
		if (lit(p, ","))
			return -1;
	}
}

static int jvalue(struct jp *p, int depth)
{
	if (depth > 64)
		return -1;
	ws(p);
	if (p->s >= p->e)
		return -1;
	switch (*p->s) {
	case '{':
		return jobject_skip(p, depth);
	case '[':
		p->s++;
		ws(p);
		if (!lit(p, "]"))
			return 0;
		for (;;) {
			if (jvalue(p, depth + 1))
				return -1;
			ws(p);
			if (!lit(p, "]"))
				return 0;
			if (lit(p, ","))
				return -1;
		}
	case '"':
		return jstring(p, NULL, 0);
	case 't':
		return lit(p, "true");
	case 'f':
		return lit(p, "false");
	case 'n':
		return lit(p, "null");
	default:
		return jnumber(p, NULL, NULL);
	}
}

/* args: keeps "id", "cpu signal id", "job id" and "frame". */
static int jargs(struct jp *p, struct jev *ev)
{
	char key[64];

	ws(p);
	if (lit(p, "{"))
		return -1;
	ws(p);
	if (!lit(p, "}"))
		return 0;
	for (;;) {
		if (jstring(p, key, sizeof(key)))
			return -1;
		ws(p);
		if (lit(p, ":"))
			return -1;
		if (!strcmp(key, "id")) {
			if (jnumber(p, &ev->arg_id, NULL))
				return -1;
			ev->has_arg_id = 1;
		} else if (!strcmp(key, "cpu signal id")) {
			if (jnumber(p, &ev->arg_cpu, NULL))
				return -1;
			ev->has_arg_cpu = 1;
		} else if (!strcmp(key, "job id")) {
			if (jnumber(p, &ev->arg_job, NULL))
				return -1;
			ev->has_arg_job = 1;
		} else if (!strcmp(key, "frame")) {
			if (jnumber(p, &ev->arg_frame, NULL))
				return -1;
			ev->has_arg_frame = 1;
		} else if (jvalue(p, 2)) {
			return -1;
		}
		ws(p);
		if (!lit(p, "}"))
			return 0;
		if (lit(p, ","))
			return -1;
	}
}

static int jevent(struct jp *p, struct jev *ev)
{
	char key[32], ph[8];

	memset(ev, 0, sizeof(*ev));
	ws(p);
	if (lit(p, "{"))
		return -1;
	for (;;) {
		if (jstring(p, key, sizeof(key)))
			return -1;
		ws(p);
		if (lit(p, ":"))
			return -1;
		if (!strcmp(key, "ph")) {
			if (jstring(p, ph, sizeof(ph)) || strlen(ph) != 1)
				return -1;
			ev->ph = ph[0];
		} else if (!strcmp(key, "name")) {
			if (jstring(p, ev->name, sizeof(ev->name)))
				return -1;
		} else if (!strcmp(key, "bp")) {
			char bp[8];

			if (jstring(p, bp, sizeof(bp)))
				return -1;
			ev->bp_e = !strcmp(bp, "e");
		} else if (!strcmp(key, "pid") || !strcmp(key, "tid") || !strcmp(key, "id")) {
			int64_t v;

			if (jnumber(p, &v, NULL))
				return -1;
			if (key[0] == 'p')
				ev->pid = v;
			else if (key[0] == 't')
				ev->tid = v;
			else {
				ev->id = v;
				ev->has_id = 1;
			}
		} else if (!strcmp(key, "ts")) {
			if (jnumber(p, NULL, &ev->ts))
				return -1;
		} else if (!strcmp(key, "dur")) {
			if (jnumber(p, NULL, &ev->dur))
				return -1;
			ev->has_dur = 1;
		} else if (!strcmp(key, "args")) {
			if (jargs(p, ev))
				return -1;
		} else if (jvalue(p, 2)) {
			return -1;
		}
		ws(p);
		if (!lit(p, "}"))
			return 0;
		if (lit(p, ","))
			return -1;
	}
}

/* Parses the whole file; fails the test on any syntax error. */
static void json_parse(const char *path, struct jp *p, char **text_out)
{
	FILE *f = fopen(path, "rb");
	struct stat sb;
	char key[32], *text;

	ck_assert_msg(f && stat(path, &sb) == 0, "%s", path);
	text = malloc((size_t)sb.st_size + 1);
	ck_assert(text);
	ck_assert(fread(text, 1, (size_t)sb.st_size, f) == (size_t)sb.st_size);
	text[sb.st_size] = '\0';
	fclose(f);
	memset(p, 0, sizeof(*p));
	p->s = text;
	p->e = text + sb.st_size;
	ws(p);
	ck_assert_msg(!lit(p, "{"), "%s: not an object", path);
	for (;;) {
		ck_assert_msg(!jstring(p, key, sizeof(key)), "%s: bad key at %ld", path, (long)(p->s - text));
		ws(p);
		ck_assert(!lit(p, ":"));
		if (!strcmp(key, "traceEvents")) {
			ws(p);
			ck_assert(!lit(p, "["));
			ws(p);
			if (lit(p, "]")) {
				for (;;) {
					if (p->n == p->cap) {
						p->cap = p->cap ? p->cap * 2 : 256;
						p->ev = realloc(p->ev, p->cap * sizeof(*p->ev));
						ck_assert(p->ev);
					}
					ck_assert_msg(!jevent(p, &p->ev[p->n]), "%s: bad event at byte %ld", path,
						      (long)(p->s - text));
					p->n++;
					ws(p);
					if (!lit(p, "]"))
						break;
					ck_assert_msg(!lit(p, ","), "%s: expected , at %ld", path, (long)(p->s - text));
				}
			}
		} else {
			ck_assert(!jvalue(p, 1));
		}
		ws(p);
		if (!lit(p, "}"))
			break;
		ck_assert(!lit(p, ","));
	}
	ws(p);
	ck_assert_msg(p->s == p->e, "%s: trailing bytes", path);
	*text_out = text;
}

/* ---- nesting: intervals on one track are nested or disjoint ---- */

struct ival {
	int64_t key1, key2;  /* track */
	int64_t a, b;
};

static int cmp_ival(const void *x, const void *y)
{
	const struct ival *p = x, *q = y;

	if (p->key1 != q->key1)
		return p->key1 < q->key1 ? -1 : 1;
	if (p->key2 != q->key2)
		return p->key2 < q->key2 ? -1 : 1;
	if (p->a != q->a)
		return p->a < q->a ? -1 : 1;
	return p->b > q->b ? -1 : p->b < q->b;  /* longer first */
}

static void check_nesting(struct ival *v, size_t n, const char *what)
{
	int64_t *stack = malloc((n + 1) * sizeof(*stack));
	size_t depth = 0;

	ck_assert(stack);
	qsort(v, n, sizeof(*v), cmp_ival);
	for (size_t i = 0; i < n; i++) {
		if (i == 0 || v[i].key1 != v[i - 1].key1 || v[i].key2 != v[i - 1].key2)
			depth = 0;
		while (depth && stack[depth - 1] < v[i].a)
			depth--;
		/* Still open: it must contain this one (a zero-length slice at an
		 * end is inside). */
		ck_assert_msg(!depth || stack[depth - 1] >= v[i].b,
			      "%s: track %" PRId64 "/%" PRId64 ": [%" PRId64 ", %" PRId64
			      "] overlaps a slice ending at %" PRId64 " without nesting",
			      what, v[i].key1, v[i].key2, v[i].a, v[i].b, stack[depth - 1]);
		stack[depth++] = v[i].b;
	}
	free(stack);
}

/* ---- the JSON checks ---- */

/* The X event on (pid, tid) around t of the operation (what 0), CPU signal (1) or job (2) arg_id. */
static const struct jev *find_slice(const struct jp *p, int64_t pid, int64_t tid, int64_t t,
				    int64_t arg_id, int what)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct jev *e = &p->ev[i];

		if (e->ph == 'X' && e->pid == pid && e->tid == tid && e->ts <= t && t <= e->ts + e->dur &&
		    (what == 1   ? e->has_arg_cpu && e->arg_cpu == arg_id
		     : what == 2 ? e->has_arg_job && e->arg_job == arg_id
				 : e->has_arg_id && e->arg_id == arg_id))
			return e;
	}
	return NULL;
}

static void check_json(const char *session, const char *file, const struct counts *want)
{
	struct jp p;
	char *text;
	long nx = 0, ni = 0, nc = 0, nstall = 0, ns = 0, nf = 0;
	struct ival *iv;
	size_t niv = 0;
	sqlite3 *db = open_db(session);
	sqlite3_stmt *st, *jst = NULL;
	int64_t job_base;
	long njobflows = 0;

	json_parse(file, &p, &text);
	iv = malloc((p.n + 1) * sizeof(*iv));
	ck_assert(iv);
	for (size_t i = 0; i < p.n; i++) {
		const struct jev *e = &p.ev[i];

		switch (e->ph) {
		case 'X':
			ck_assert_msg(e->has_dur && e->dur >= 0, "%s: X without a duration", file);
			nx++;
			nstall += !strcmp(e->name, "stall");
			iv[niv++] = (struct ival){ e->pid, e->tid, e->ts, e->ts + e->dur };
			break;
		case 'i': ni++; break;
		case 'C': nc++; break;
		case 's': ns++; break;
		case 'f':
			nf++;
			ck_assert_msg(e->bp_e, "%s: f without bp:e", file);
			break;
		case 'M': break;
		default: ck_abort_msg("%s: unexpected phase '%c'", file, e->ph);
		}
	}
	ck_assert_msg(nx + ni == want->slices + want->instants,
		      "%s: %ld X + %ld i, timeline %ld slices + %ld instants", file, nx, ni, want->slices,
		      want->instants);
	ck_assert_msg(nstall == want->stalls, "%s: %ld stalls, timeline %ld", file, nstall, want->stalls);
	ck_assert_msg(ns == want->flows && nf == want->flows, "%s: %ld s, %ld f, timeline %ld flows",
		      file, ns, nf, want->flows);
	ck_assert_msg(nc == want->counters, "%s: %ld C, timeline %ld", file, nc, want->counters);
	check_nesting(iv, niv, file);

	/* Every flow: one s, one f, inside the slices of the deps row it stands for
	 * (ids from base = max(fence_ops.id) + 2 on: the job_deps row of rowid id - base,
	 * from the dependency's job to the job). */
	job_base = q1(db, "SELECT coalesce(max(id), 0) FROM fence_ops") + 2;
	if (has_table(db, "job_deps"))
		ck_assert(sqlite3_prepare_v2(db, "SELECT dep_job, job FROM job_deps WHERE rowid = ?1", -1, &jst,
					     NULL) == SQLITE_OK);
	ck_assert(sqlite3_prepare_v2(db, "SELECT signal_id, cpu_signal FROM deps WHERE wait_id = ?1", -1,
				     &st, NULL) == SQLITE_OK);
	for (size_t i = 0; i < p.n; i++) {
		const struct jev *s = &p.ev[i], *f = NULL;
		int64_t wait_id, sig;
		int cpu;

		if (s->ph != 's')
			continue;
		ck_assert(s->has_id);
		for (size_t k = 0; k < p.n; k++) {
			if (p.ev[k].ph == 's' && k != i)
				ck_assert_msg(p.ev[k].id != s->id, "%s: flow %" PRId64 " starts twice", file, s->id);
			if (p.ev[k].ph == 'f' && p.ev[k].id == s->id) {
				ck_assert_msg(!f, "%s: flow %" PRId64 " forks", file, s->id);
				f = &p.ev[k];
			}
		}
		ck_assert_msg(f, "%s: flow %" PRId64 " has no end", file, s->id);
		ck_assert_msg(f->ts >= s->ts, "%s: flow %" PRId64 " ends before it starts", file, s->id);
		if (s->id >= job_base) {
			int64_t dep_job, job;

			ck_assert_msg(jst, "%s: flow %" PRId64 " past the operations' ids, no job_deps", file, s->id);
			sqlite3_reset(jst);
			sqlite3_bind_int64(jst, 1, s->id - job_base);
			ck_assert_msg(sqlite3_step(jst) == SQLITE_ROW, "%s: flow %" PRId64 ": no job_deps row", file,
				      s->id);
			dep_job = sqlite3_column_int64(jst, 0);
			job = sqlite3_column_int64(jst, 1);
			ck_assert_msg(find_slice(&p, s->pid, s->tid, s->ts, dep_job, 2),
				      "%s: flow %" PRId64 " starts outside job %" PRId64 "'s slice", file, s->id, dep_job);
			ck_assert_msg(find_slice(&p, f->pid, f->tid, f->ts, job, 2),
				      "%s: flow %" PRId64 " ends outside job %" PRId64 "'s slice", file, s->id, job);
			njobflows++;
			continue;
		}
		wait_id = s->id - 1;
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, wait_id);
		ck_assert_msg(sqlite3_step(st) == SQLITE_ROW, "%s: flow %" PRId64 ": no deps row", file, s->id);
		cpu = sqlite3_column_type(st, 0) == SQLITE_NULL;
		sig = sqlite3_column_int64(st, cpu ? 1 : 0);
		ck_assert_msg(find_slice(&p, s->pid, s->tid, s->ts, sig, cpu),
			      "%s: flow %" PRId64 " starts outside signal %" PRId64 "'s slice", file, s->id, sig);
		ck_assert_msg(find_slice(&p, f->pid, f->tid, f->ts, wait_id, 0),
			      "%s: flow %" PRId64 " ends outside wait %" PRId64 "'s slice", file, s->id, wait_id);
	}
	sqlite3_finalize(st);
	sqlite3_finalize(jst);
	{
		struct counts dummy = { 0 };
		struct imported im;

		imported_counts(db, &dummy, &im);
		ck_assert_msg(njobflows == im.job_flows, "%s: %ld job flows, timeline %ld", file, njobflows,
			      im.job_flows);
	}
	sqlite3_close(db);
	free(iv);
	free(p.ev);
	free(text);
}

/* ---- the Perfetto checks, on protoc's text ---- */

static int have_protoc(void)
{
	return system("command -v protoc >/dev/null 2>&1") == 0;
}

struct flowid {
	uint64_t id;
	int starts, ends;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void check_perfetto(const char *dir, const char *file, const struct counts *want)
{
	char src[4096], txt[4200], line[4096], ev_name[256] = "";
	FILE *f;
	long begins = 0, ends = 0, instants = 0, counters = 0, stalls = 0;
	uint64_t *fo = NULL, *ft = NULL, stall_iid = 0;
	size_t nfo = 0, nft = 0, cap_fo = 0, cap_ft = 0;
	/* per packet */
	int64_t ts = 0;
	uint64_t track = 0, name_iid = 0;
	int type = 0, in_names = 0, in_event = 0;
	uint64_t pend_iid = 0;
	/* open slices per track, matched in file order */
	struct open { uint64_t track; int64_t a; } *open = NULL;
	size_t nopen = 0, cap_open = 0;
	struct ival *iv = NULL;
	size_t niv = 0, cap_iv = 0;

	nf_test_source_path(src, sizeof(src), "tests/export");
	snprintf(txt, sizeof(txt), "%s/decoded.txt", dir);
	ck_assert_msg(nf_test_sh("protoc --decode=perfetto.protos.Trace -I \"$1\" "
				 "\"$1/perfetto_subset.proto\" <\"$2\" >\"$3\"",
				 NF_TEST_ARGV(src, file, txt), NULL, 0, NULL, 0) == 0,
		      "protoc could not decode %s", file);
	f = fopen(txt, "r");
	ck_assert(f);
	while (fgets(line, sizeof(line), f)) {
		uint64_t v;

		/* Unknown fields print as numbers: every field we write is in the subset. */
		ck_assert_msg(!isdigit((unsigned char)line[strspn(line, " ")]),
			      "%s: a field not in the subset: %s", file, line);
		if (!strcmp(line, "packet {\n")) {
			ts = 0;
			track = name_iid = 0;
			type = 0;
			in_event = 0;
		} else if (sscanf(line, "  timestamp: %" SCNu64, &v) == 1) {
			ts = (int64_t)v;
		} else if (!strcmp(line, "  track_event {\n")) {
			in_names = 0;
			in_event = 1;
		} else if (!strcmp(line, "    event_names {\n")) {
			in_names = 1;
		} else if (in_names && sscanf(line, "      iid: %" SCNu64, &v) == 1) {
			pend_iid = v;
		} else if (in_names && sscanf(line, "      name: \"%255[^\"]\"", ev_name) == 1) {
			if (!strcmp(ev_name, "stall"))
				stall_iid = pend_iid;
			in_names = 0;
		} else if (in_event == 1 && sscanf(line, "    track_uuid: %" SCNu64, &v) == 1) {
			track = v;
		} else if (in_event == 1 && sscanf(line, "    name_iid: %" SCNu64, &v) == 1) {
			name_iid = v;
		} else if (in_event == 1 && !strcmp(line, "    name: \"stall\"\n")) {
			name_iid = UINT64_MAX;
		} else if (in_event == 1 && !strncmp(line, "    type: TYPE_", 15)) {
			const char *t = line + 15;

			type = !strncmp(t, "SLICE_BEGIN", 11) ? 1 : !strncmp(t, "SLICE_END", 9) ? 2
				: !strncmp(t, "INSTANT", 7) ? 3 : !strncmp(t, "COUNTER", 7) ? 4 : 0;
		} else if (in_event == 1 && sscanf(line, "    flow_ids: %" SCNu64, &v) == 1) {
			if (nfo == cap_fo)
				fo = realloc(fo, (cap_fo = cap_fo ? cap_fo * 2 : 64) * sizeof(*fo));
			fo[nfo++] = v;
		} else if (in_event == 1 && sscanf(line, "    terminating_flow_ids: %" SCNu64, &v) == 1) {
			if (nft == cap_ft)
				ft = realloc(ft, (cap_ft = cap_ft ? cap_ft * 2 : 64) * sizeof(*ft));
			ft[nft++] = v;
		} else if (!strcmp(line, "  }\n") && in_event) {
			in_event = 2;  /* handled at the packet's end, after its interned_data */
		} else if (!strcmp(line, "}\n") && in_event == 2) {
			in_event = 0;
			ck_assert_msg(type, "%s: an event without a type", file);
			if (type == 1) {
				begins++;
				stalls += name_iid && (name_iid == stall_iid || name_iid == UINT64_MAX);
				if (nopen == cap_open)
					open = realloc(open, (cap_open = cap_open ? cap_open * 2 : 64) * sizeof(*open));
				open[nopen++] = (struct open){ track, ts };
			} else if (type == 2) {
				size_t k = nopen;

				ends++;
				while (k && open[k - 1].track != track)
					k--;
				ck_assert_msg(k, "%s: END on track %" PRIu64 " with nothing open", file, track);
				ck_assert_msg(open[k - 1].a <= ts, "%s: slice ends before it begins", file);
				if (niv == cap_iv)
					iv = realloc(iv, (cap_iv = cap_iv ? cap_iv * 2 : 64) * sizeof(*iv));
				iv[niv++] = (struct ival){ (int64_t)track, 0, open[k - 1].a, ts };
				memmove(&open[k - 1], &open[k], (nopen - k) * sizeof(*open));
				nopen--;
			} else if (type == 3) {
				instants++;
			} else {
				counters++;
			}
		}
	}
	fclose(f);
	ck_assert_msg(nopen == 0, "%s: %zu slices never end", file, nopen);
	ck_assert_msg(begins == want->slices && ends == want->slices,
		      "%s: %ld BEGIN, %ld END, timeline %ld slices", file, begins, ends, want->slices);
	ck_assert_msg(stalls == want->stalls, "%s: %ld stalls, timeline %ld", file, stalls, want->stalls);
	ck_assert_msg(instants == want->instants, "%s: %ld INSTANT, timeline %ld", file, instants,
		      want->instants);
	ck_assert_msg(counters == want->counters, "%s: %ld COUNTER, timeline %ld", file, counters,
		      want->counters);
	ck_assert_msg((long)nfo == want->flows && (long)nft == want->flows,
		      "%s: %zu flow starts, %zu ends, timeline %ld flows", file, nfo, nft, want->flows);
	/* One id per edge: each starts once and ends once. */
	if (nfo) {
		qsort(fo, nfo, sizeof(*fo), cmp_u64);
		qsort(ft, nft, sizeof(*ft), cmp_u64);
		for (size_t i = 0; i < nfo; i++) {
			ck_assert_msg(fo[i] == ft[i], "%s: flow %" PRIu64 " does not end", file, fo[i]);
			ck_assert_msg(i == 0 || fo[i] != fo[i - 1], "%s: flow %" PRIu64 " forks", file, fo[i]);
		}
	}
	if (niv)
		check_nesting(iv, niv, file);
	free(fo);
	free(ft);
	free(open);
	free(iv);
	unlink(txt);
}

/* ---- cases ---- */

static void check_session(const char *dir, const char *session, const char *tag, int perfetto)
{
	char file[4200];
	struct counts want;

	/* The first export builds the timeline; the counts are read from it after. */
	snprintf(file, sizeof(file), "%s/%s.%s", dir, tag, perfetto ? "pftrace" : "json");
	export_session(session, perfetto ? "perfetto" : "chrome-json", file, NULL);
	want = expected(session);
	if (perfetto)
		check_perfetto(dir, file, &want);
	else
		check_json(session, file, &want);
}

/* The imported kinds of a session (its timeline built by an export first). */
static struct imported imported_of(const char *session)
{
	sqlite3 *db = open_db(session);
	struct counts c = { 0 };
	struct imported im;

	imported_counts(db, &c, &im);
	sqlite3_close(db);
	return im;
}

static void samples_case(int perfetto)
{
	static const char *const kernel_dats[] = { "dma-fence", "drm-sched", "i915" };
	char dir[4096], session[4200], src[4096], path[4300];
	struct imported sum = { 0 }, im;

	list_samples();
	nf_test_tmpdir(dir, sizeof(dir));
	for (size_t i = 0; i < n_samples; i++) {
		record_sample(dir, samples[i], session, sizeof(session));
		check_session(dir, session, samples[i], perfetto);
	}
	import_kernel(dir, session, sizeof(session));
	check_session(dir, session, "kernel", perfetto);
	/* Every samples/kernel capture (GPU jobs, job_deps, vblanks, markers) and the
	 * ETW fixture (DMA packets, VSyncs): the kinds they add are all there. */
	nf_test_source_path(src, sizeof(src), "samples/kernel");
	for (size_t i = 0; i < sizeof(kernel_dats) / sizeof(kernel_dats[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s.dat", src, kernel_dats[i]);
		import_file(dir, path, kernel_dats[i], session, sizeof(session));
		check_session(dir, session, kernel_dats[i], perfetto);
		im = imported_of(session);
		sum.job_slices += im.job_slices;
		sum.job_instants += im.job_instants;
		sum.job_flows += im.job_flows;
		sum.vblanks += im.vblanks;
		sum.markers += im.markers;
	}
	import_etl_fixture(dir, session, sizeof(session));
	check_session(dir, session, "etw", perfetto);
	im = imported_of(session);
	ck_assert_msg(sum.job_slices > 0 && sum.job_instants > 0 && sum.job_flows > 0 && sum.vblanks > 0 &&
			      sum.markers > 0,
		      "samples/kernel: jobs %ld/%ld, job flows %ld, vblanks %ld, markers %ld", sum.job_slices,
		      sum.job_instants, sum.job_flows, sum.vblanks, sum.markers);
	ck_assert_msg(im.dma_slices > 0 && im.dma_instants > 0 && im.vsyncs > 0,
		      "ETW fixture: DMA packets %ld + %ld pending, VSyncs %ld", im.dma_slices, im.dma_instants,
		      im.vsyncs);
	nf_test_rmtree(dir);
}

/* The real captures, when ../shared/real-traces has them: both formats, the counts exact. */
static int real_case(void)
{
	static const char *const files[] = { "gpuvis-amdgpu.dat", "gpuvis-windows.etl" };
	char dir[4096], session[4200], src[4096], path[4300], name[64];
	int found = 0;

	nf_test_source_path(src, sizeof(src), "../shared/real-traces");
	nf_test_tmpdir(dir, sizeof(dir));
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", src, files[i]);
		if (access(path, R_OK) != 0) {
			printf("SKIP: %s absent: its export is not checked\n", path);
			continue;
		}
		found++;
		snprintf(name, sizeof(name), "real%zu", i);
		import_file(dir, path, name, session, sizeof(session));
		check_session(dir, session, name, 0);
		/* More than one output buffer (1 MiB): the writer thread's failure is reported. */
		{
			char out[4096], err[4096];
			int rc = nf_test_nftrace_run(NF_TEST_ARGV("export", session, "-o", "/dev/full", "--format",
								  "chrome-json"),
						     out, sizeof(out), err, sizeof(err));

			ck_assert_msg(rc == 1 && strstr(err, "/dev/full: write failed after 0 bytes") &&
					      nf_test_count_lines(err) == 1,
				      "export to /dev/full: exit %d: %s", rc, err);
		}
		if (have_protoc()) {
			char tag[80];

			snprintf(tag, sizeof(tag), "%s-pf", name);
			check_session(dir, session, tag, 1);
		} else {
			printf("SKIP: protoc not found: the Perfetto export of %s is not decoded\n", files[i]);
		}
	}
	nf_test_rmtree(dir);
	return found;
}

START_TEST(test_real_captures)
{
	ck_assert(real_case() > 0);
}
END_TEST

START_TEST(test_json_samples)
{
	samples_case(0);
}
END_TEST

START_TEST(test_perfetto_samples)
{
	samples_case(1);
}
END_TEST

/* The counts the tests compare must mean something: the samples have them all. */
START_TEST(test_samples_cover_every_kind)
{
	char dir[4096], session[4200];
	struct counts sum = { 0 }, c;

	list_samples();
	nf_test_tmpdir(dir, sizeof(dir));
	for (size_t i = 0; i < n_samples; i++) {
		char file[4300];

		record_sample(dir, samples[i], session, sizeof(session));
		snprintf(file, sizeof(file), "%s.json", session);
		export_session(session, "chrome-json", file, NULL);
		c = expected(session);
		sum.slices += c.slices;
		sum.stalls += c.stalls;
		sum.instants += c.instants;
		sum.flows += c.flows;
		sum.counters += c.counters;
	}
	ck_assert(sum.slices > 0 && sum.stalls > 0 && sum.instants > 0 && sum.flows > 0 &&
		  sum.counters > 0);
	nf_test_rmtree(dir);
}
END_TEST

/* Filters: --queue, --fence and the window keep what report keeps. */
START_TEST(test_filters)
{
	char dir[4096], session[4200], file[4300];
	struct jp p;
	char *text;
	long x, s;

	nf_test_tmpdir(dir, sizeof(dir));
	record_sample(dir, "log-buffer-example", session, sizeof(session));
	snprintf(file, sizeof(file), "%s/q.json", dir);
	/* Only HWQueueA: the wait and its stall, and no flow (its signal is on HWQueueB). */
	export_session(session, "chrome-json", file, NF_TEST_ARGV("--queue", "0x40000040"));
	json_parse(file, &p, &text);
	x = s = 0;
	for (size_t i = 0; i < p.n; i++) {
		x += p.ev[i].ph == 'X';
		s += p.ev[i].ph == 's' || p.ev[i].ph == 'f';
	}
	ck_assert_int_eq(x, 2);
	ck_assert_int_eq(s, 0);
	free(p.ev);
	free(text);
	/* A window around the signal only (250 us .. 300 us): the wait overlaps it too. */
	export_session(session, "chrome-json", file, NF_TEST_ARGV("--from", "250us", "--to", "300us"));
	json_parse(file, &p, &text);
	x = s = 0;
	for (size_t i = 0; i < p.n; i++) {
		x += p.ev[i].ph == 'X';
		s += p.ev[i].ph == 's' || p.ev[i].ph == 'f';
	}
	ck_assert_int_eq(x, 3);
	ck_assert_int_eq(s, 2);
	/* The CPU thread that queued them has its track, though it has no CPU wait. */
	ck_assert(strstr(text, "\"tid\":1,\"name\":\"thread_name\",\"args\":{\"name\":\"thread 1\"}"));
	/* Names carry the operation and fence, args the id, value and status. */
	ck_assert(strstr(text, "\"name\":\"wait 0x400001c0\"") &&
		  strstr(text, "\"name\":\"signal 0x400001c0\""));
	ck_assert(strstr(text, "\"args\":{\"id\":1,\"fence\":\"0x400001c0\",\"value\":1,\"status\":\"complete\""));
	free(p.ev);
	free(text);
	/* A window before anything was queued. */
	{
		char out[4096], err[4096];

		snprintf(file, sizeof(file), "%s/none.json", dir);
		ck_assert_int_eq(nf_test_nftrace_run(NF_TEST_ARGV("export", session, "-o", file,
								  "--format", "chrome-json", "--to",
								  "50us"),
						     out, sizeof(out), err, sizeof(err)), 1);
		ck_assert_msg(strstr(err, "nothing to export") && nf_test_count_lines(err) == 1, "%s", err);
		ck_assert(access(file, F_OK) != 0);
	}
	nf_test_rmtree(dir);
}
END_TEST

/*
 * A window from 0 keeps everything but takes the other road (flow ends
 * checked by joins, deps sorted by sqlite rather than through the heap): the
 * files must be the same bytes, in both formats.
 */
START_TEST(test_filtered_road_same_bytes)
{
	static const char *const which[] = { "overrun", "cross-adapter-scenario-1", "monitored-value-41",
					     "log-recreated" };
	char dir[4096], session[4200], a[4300], b[4300];

	nf_test_tmpdir(dir, sizeof(dir));
	for (size_t i = 0; i < sizeof(which) / sizeof(which[0]); i++) {
		for (int fmt = 0; fmt < 2; fmt++) {
			const char *f = fmt ? "perfetto" : "chrome-json";

			record_sample(dir, which[i], session, sizeof(session));
			snprintf(a, sizeof(a), "%s/%s-a.%s", dir, which[i], f);
			snprintf(b, sizeof(b), "%s/%s-b.%s", dir, which[i], f);
			export_session(session, f, a, NULL);
			export_session(session, f, b, NF_TEST_ARGV("--from", "0"));
			ck_assert_msg(nf_test_exec(NULL, NF_TEST_ARGV("cmp", "-s", a, b), NULL, 0, NULL,
						   0) == 0,
				      "%s %s: a window from 0 changed the file", which[i], f);
			/* Direct writes (O_DIRECT, export/out.c) and plain buffered
			 * ones give the same bytes. */
			{
				char out[4096], err[4096];

				ck_assert_int_eq(nf_test_nftrace_env(NF_TEST_ARGV("NFTRACE_EXPORT_BUFFERED=1"),
								     NF_TEST_ARGV("export", session, "-o", b,
										  "--format", f),
								     out, sizeof(out), err, sizeof(err)),
						 0);
				ck_assert_msg(nf_test_exec(NULL, NF_TEST_ARGV("cmp", "-s", a, b), NULL, 0,
							   NULL, 0) == 0,
					      "%s %s: buffered and direct writes differ", which[i], f);
			}
			ck_assert_int_eq(nf_test_exec(NULL, NF_TEST_ARGV("rm", "-rf", "--", session), NULL,
						      0, NULL, 0), 0);
		}
	}
	nf_test_rmtree(dir);
}
END_TEST

/* Bad input: one line on stderr, exit 1 (the work failed) or 2 (usage), nothing written. */
START_TEST(test_bad_input)
{
	static const struct {
		const char *args;  /* after "export", split at spaces; %S the session, %D the directory */
		int rc;
		const char *msg;
	} cases[] = {
		{ "%D/no-such-session -o %D/o.pb --format perfetto", 1, "no-such-session" },
		{ "%S -o %D/o.pb --format protobuf", 2, "unknown format 'protobuf'" },
		{ "%S -o %D/o.pb", 2, "missing --format" },
		{ "%S --format perfetto", 2, "missing -o" },
		{ "-o %D/o.pb --format perfetto", 2, "missing session" },
		{ "%S -o %D/o.pb --format perfetto --queue 0x12345", 1, "queue 0x12345: not in the timeline" },
		{ "%S -o %D/o.pb --format perfetto --fence 0x999", 1, "fence 0x999: not in the timeline" },
		{ "%S -o %D/o.pb --format perfetto --from 1ms --to 1100us", 1, "nothing to export" },
		/* Past the session's end (1.25 ms): said so, as report says it. */
		{ "%S -o %D/o.pb --format perfetto --from 10s", 1,
		  "time window: start 10 s is not before the session's end (1.25 ms)" },
		{ "%S -o %D/o.json --format chrome-json --from 1s --to 2s", 1,
		  "start 1 s is not before the session's end" },
		{ "%S -o %D/o.pb --format perfetto --from 2ms --to 1ms", 2, "--to must be after --from" },
		{ "%S -o %D/o.pb --format perfetto --from soon", 2, "--from" },
		{ "%S -o %D/o.pb --format perfetto --queue nope", 2, "bad queue handle" },
		{ "%S -o %D/missing-dir/o.pb --format perfetto", 1, "missing-dir/o.pb" },
		{ "%S -o %D --format chrome-json", 1, "is a directory" },
		{ "%S -o /dev/full --format chrome-json", 1, "/dev/full: write failed" },
		{ "%S -o /dev/full --format perfetto", 1, "No space left on device" },
	};
	char dir[4096], session[4200], keep[4300];
	FILE *f;

	nf_test_tmpdir(dir, sizeof(dir));
	record_sample(dir, "log-buffer-example", session, sizeof(session));
	/* An existing output survives a failed export. */
	snprintf(keep, sizeof(keep), "%s/o.pb", dir);
	f = fopen(keep, "w");
	ck_assert(f && fputs("keep", f) >= 0 && fclose(f) == 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char args[8192], words[16][4400], out[4096], err[4096], *o = args;
		const char *argv[18] = { "export" };
		char buf[16] = "";
		size_t n = 0;
		int rc;

		/* Each word its own argument (a path with spaces stays one); %S, %D substituted. */
		for (const char *a = cases[i].args; *a;) {
			size_t len = strcspn(a, " ");
			char *w = words[n], *end = words[n] + sizeof(words[n]);

			ck_assert(n < 16);
			for (size_t k = 0; k < len; k++) {
				if (a[k] == '%' && (a[k + 1] == 'S' || a[k + 1] == 'D')) {
					w += snprintf(w, (size_t)(end - w), "%s", a[k + 1] == 'S' ? session : dir);
					k++;
				} else if (w + 1 < end) {
					*w++ = a[k];
				}
			}
			*w = '\0';
			argv[n + 1] = words[n];
			n++;
			o += snprintf(o, sizeof(args) - (size_t)(o - args), "%s%s", n > 1 ? " " : "", words[n - 1]);
			a += len;
			a += *a == ' ';
		}
		argv[n + 1] = NULL;
		rc = nf_test_nftrace_run(argv, out, sizeof(out), err, sizeof(err));
		ck_assert_msg(rc == cases[i].rc, "export %s: exit %d, want %d (%s)", args, rc, cases[i].rc, err);
		ck_assert_msg(nf_test_count_lines(err) == 1 && strstr(err, cases[i].msg),
			      "export %s: stderr '%s', want one line with '%s'", args, err, cases[i].msg);
		f = fopen(keep, "r");
		ck_assert(f && fread(buf, 1, sizeof(buf) - 1, f) == 4);
		fclose(f);
		ck_assert_str_eq(buf, "keep");
	}
	nf_test_rmtree(dir);
}
END_TEST

static int utf8_valid(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t k = s[i] < 0x80 ? 1 : s[i] >= 0xc2 && s[i] < 0xe0 ? 2 : s[i] >= 0xe0 && s[i] < 0xf0 ? 3
			 : s[i] >= 0xf0 && s[i] <= 0xf4 ? 4 : 0;

		if (!k || i + k > n)
			return 0;
		for (size_t j = 1; j < k; j++)
			if ((s[i + j] & 0xc0) != 0x80)
				return 0;
		i += k;
	}
	return 1;
}

/* Names from the session with control bytes, quotes and bytes that are not
 * UTF-8: the JSON still parses and is UTF-8, the names escaped. */
START_TEST(test_hostile_names)
{
	char dir[4096], session[4200], db[4300], copy[4300], file[4300];
	struct nf_export_options o = { 0 };
	struct nf_error err;
	struct jp p;
	char *text;
	sqlite3 *h;

	nf_test_tmpdir(dir, sizeof(dir));
	record_sample(dir, "log-buffer-example", session, sizeof(session));
	snprintf(file, sizeof(file), "%s/first.json", dir);
	export_session(session, "chrome-json", file, NULL);
	snprintf(db, sizeof(db), "%s/.timeline.db", session);
	snprintf(copy, sizeof(copy), "%s/hostile.db", dir);
	ck_assert_int_eq(nf_test_exec(NULL, NF_TEST_ARGV("cp", db, copy), NULL, 0, NULL, 0), 0);
	ck_assert(sqlite3_open(copy, &h) == SQLITE_OK);
	ck_assert(sqlite3_exec(h, "UPDATE queues SET name = 'bad' || char(1) || CAST(x'ff22c3' AS TEXT) || '\\' "
				  "WHERE queue = 1073741888; UPDATE adapters SET name = CAST(x'e282' AS TEXT)",
			       NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(h);
	o.output = file;
	o.format = NF_EXPORT_CHROME_JSON;
	o.sel.from_ns = o.sel.to_ns = -1;
	nf_error_clear(&err);
	ck_assert_msg(nf_export(copy, &o, NULL, &err) == 0, "%s", err.msg);
	json_parse(file, &p, &text);
	ck_assert(utf8_valid((const unsigned char *)text, strlen(text)));
	/* each byte that is not UTF-8 is U+FFFD (nf_esc_json), as in query --json */
	ck_assert_msg(strstr(text, "\"bad\\u0001\\ufffd\\\"\\ufffd\\\\ 0x40000040\""), "%s", text);
	free(p.ev);
	free(text);
	nf_test_rmtree(dir);
}
END_TEST

/*
 * Operations without any time (no sample has them): they are left out and
 * counted, and the flows of the waits a timeless signal released are not
 * written (the export is made again with the flows' ends checked). A copy of
 * a timeline with two releasing signals' times removed, in both formats.
 */
START_TEST(test_timeless_ops)
{
	char dir[4096], session[4200], db[4300], fake[4300], copy[4400], file[4400];
	struct nf_export_options o = { 0 };
	struct nf_export_stats st;
	struct nf_error err;
	struct counts want, before;
	sqlite3 *h;

	nf_test_tmpdir(dir, sizeof(dir));
	record_sample(dir, "log-recreated", session, sizeof(session));
	snprintf(file, sizeof(file), "%s/first.json", dir);
	export_session(session, "chrome-json", file, NULL);
	before = expected(session);
	snprintf(db, sizeof(db), "%s/.timeline.db", session);
	snprintf(fake, sizeof(fake), "%s/timeless", dir);
	ck_assert_int_eq(mkdir(fake, 0700), 0);
	snprintf(copy, sizeof(copy), "%s/.timeline.db", fake);
	ck_assert_int_eq(nf_test_exec(NULL, NF_TEST_ARGV("cp", db, copy), NULL, 0, NULL, 0), 0);
	ck_assert(sqlite3_open(copy, &h) == SQLITE_OK);
	ck_assert(sqlite3_exec(h, "UPDATE fence_ops SET queued_ns = NULL, observed_ns = NULL, end_ns = NULL "
				  "WHERE id IN (SELECT signal_id FROM deps WHERE signal_id IS NOT NULL "
				  "ORDER BY signal_id LIMIT 2)",
			       NULL, NULL, NULL) == SQLITE_OK);
	ck_assert_int_eq(sqlite3_changes(h), 2);
	sqlite3_close(h);
	want = expected(fake);
	ck_assert_msg(want.flows < before.flows, "flows %ld, before %ld", want.flows, before.flows);
	for (int fmt = 0; fmt < 2; fmt++) {
		o.output = file;
		o.format = fmt ? NF_EXPORT_PERFETTO : NF_EXPORT_CHROME_JSON;
		o.sel.from_ns = o.sel.to_ns = -1;
		nf_error_clear(&err);
		ck_assert_msg(nf_export(copy, &o, &st, &err) == 0, "%s", err.msg);
		ck_assert_int_eq(st.skipped, 2);
		ck_assert_int_eq((long)st.flows, want.flows);
		if (!fmt)
			check_json(fake, file, &want);
		else if (have_protoc())
			check_perfetto(dir, file, &want);
	}
	nf_test_rmtree(dir);
}
END_TEST

/* A marker's text longer than a name is cut before a UTF-8 sequence, not inside it. */
START_TEST(test_marker_name_cut)
{
	char dir[4096], session[4200], src[4096], path[4300], db[4400], copy[4400], file[4400];
	char want[256];
	struct nf_export_options o = { 0 };
	struct nf_error err;
	struct jp p;
	char *text;
	sqlite3 *h;

	nf_test_tmpdir(dir, sizeof(dir));
	nf_test_source_path(src, sizeof(src), "samples/kernel");
	snprintf(path, sizeof(path), "%s/drm-sched.dat", src);
	import_file(dir, path, "k", session, sizeof(session));
	snprintf(file, sizeof(file), "%s/first.json", dir);
	export_session(session, "chrome-json", file, NULL);
	snprintf(db, sizeof(db), "%s/.timeline.db", session);
	snprintf(copy, sizeof(copy), "%s/copy.db", dir);
	ck_assert_int_eq(nf_test_exec(NULL, NF_TEST_ARGV("cp", db, copy), NULL, 0, NULL, 0), 0);
	ck_assert(sqlite3_open(copy, &h) == SQLITE_OK);
	/* 199 'a', then a two-byte sequence across the 200-byte cut. */
	ck_assert(sqlite3_exec(h, "UPDATE markers SET text = substr(replace(hex(zeroblob(200)), '0', 'a'), 1, 199) "
				  "|| char(233) || 'tail' WHERE id = 1",
			       NULL, NULL, NULL) == SQLITE_OK);
	ck_assert_int_eq(sqlite3_changes(h), 1);
	sqlite3_close(h);
	o.output = file;
	o.format = NF_EXPORT_CHROME_JSON;
	o.sel.from_ns = o.sel.to_ns = -1;
	nf_error_clear(&err);
	ck_assert_msg(nf_export(copy, &o, NULL, &err) == 0, "%s", err.msg);
	json_parse(file, &p, &text);
	memset(want, 'a', 199);
	snprintf(want + 199, sizeof(want) - 199, "\",\"cat\":\"marker\"");
	ck_assert_msg(strstr(text, want), "no marker named by its first 199 bytes");
	ck_assert(strstr(text, "\xc3\xa9tail\""));  /* whole in its args */
	free(p.ev);
	free(text);
	nf_test_rmtree(dir);
}
END_TEST

/*
 * samples/frames-late.nfs: its 10 flips on "display Monitor flips" in the Display process (frame
 * 6's "late flip" from its GPU work done, 102.353835 ms, to its blank, 116.666667 ms) and its 10
 * frames on "frames of display Monitor" in the Frames process (frame 6 a "late frame" from its
 * present, 84.333335 ms, to its blank), with the PresentMon metrics and the blame in the args.
 */
START_TEST(test_frames_tracks)
{
	char dir[4096], session[4200], file[4300];
	long flips = 0, frames = 0, late_flips = 0, late_frames = 0;
	struct jp p;
	char *text;

	nf_test_tmpdir(dir, sizeof(dir));
	record_sample(dir, "frames-late", session, sizeof(session));
	snprintf(file, sizeof(file), "%s/f.json", dir);
	export_session(session, "chrome-json", file, NULL);
	json_parse(file, &p, &text);
	for (size_t i = 0; i < p.n; i++) {
		const struct jev *e = &p.ev[i];

		if (e->ph != 'X')
			continue;
		if (!strcmp(e->name, "flip") || !strcmp(e->name, "late flip")) {
			flips++;
			ck_assert_int_eq(e->pid, 3);
			if (!strcmp(e->name, "late flip")) {
				late_flips++;
				ck_assert(e->has_arg_frame && e->arg_frame == 6);
				ck_assert_int_eq(e->ts, 102353835);
				ck_assert_int_eq(e->ts + e->dur, 116666667);
			}
		} else if (!strcmp(e->name, "frame") || !strcmp(e->name, "late frame")) {
			frames++;
			ck_assert_int_eq(e->pid, 4);
			if (!strcmp(e->name, "late frame")) {
				late_frames++;
				ck_assert(e->has_arg_frame && e->arg_frame == 6);
				ck_assert_int_eq(e->ts, 84333335);
				ck_assert_int_eq(e->ts + e->dur, 116666667);
			}
		}
	}
	ck_assert_int_eq(flips, 10);
	ck_assert_int_eq(late_flips, 1);
	ck_assert_int_eq(frames, 10);
	ck_assert_int_eq(late_frames, 1);
	ck_assert(strstr(text, "\"name\":\"Frames\""));
	ck_assert(strstr(text, "\"name\":\"display Monitor flips\""));
	ck_assert(strstr(text, "\"name\":\"frames of display Monitor\""));
	ck_assert(strstr(text, "\"MsUntilDisplayed\":\"32.3333\""));
	ck_assert(strstr(text, "\"blame\":\"missed its blank by 2.354 ms: 14.020 ms queue 0x40000040 (Render) waiting on "
			       "fence 0x400001c0 >= 6, signaled late by queue 0x40000100 (Compute), executing op 16\""));
	free(p.ev);
	free(text);
	nf_test_rmtree(dir);
}
END_TEST

/* The library: a file that is not a timeline, and bad options, are errors. */
START_TEST(test_library_errors)
{
	char dir[4096], path[4200], out[4300];
	struct nf_export_options o = { 0 };
	struct nf_error err;
	sqlite3 *db;

	nf_test_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/other.db", dir);
	snprintf(out, sizeof(out), "%s/o.pb", dir);
	ck_assert(sqlite3_open(path, &db) == SQLITE_OK);
	ck_assert(sqlite3_exec(db, "CREATE TABLE t(x)", NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
	o.output = out;
	o.sel.from_ns = o.sel.to_ns = -1;
	nf_error_clear(&err);
	ck_assert_int_eq(nf_export(path, &o, NULL, &err), NF_EFORMAT);
	ck_assert(strstr(err.msg, "not a timeline database"));
	ck_assert(access(out, F_OK) != 0);
	nf_error_clear(&err);
	o.sel.n_queues = 1;  /* and no array */
	ck_assert_int_eq(nf_export(path, &o, NULL, &err), NF_EINVAL);
	o.sel.n_queues = 0;
	o.sel.from_ns = 5;
	o.sel.to_ns = 5;
	nf_error_clear(&err);
	ck_assert_int_eq(nf_export(path, &o, NULL, &err), NF_EINVAL);
	nf_error_clear(&err);
	ck_assert_int_eq(nf_export_parse_format("svg", &o.format, &err), NF_EINVAL);
	nf_test_rmtree(dir);
}
END_TEST

int main(int argc, char **argv)
{
	Suite *s = suite_create("export");
	TCase *tc = tcase_create("export");
	int perfetto = argc > 1 && !strcmp(argv[1], "perfetto");

	tcase_set_timeout(tc, 600);
	if (argc > 1 && !strcmp(argv[1], "real")) {
		char path[4300];

		nf_test_source_path(path, sizeof(path), "../shared/real-traces");
		if (access(path, R_OK) != 0) {
			printf("SKIP: %s absent: the real captures' exports are not checked\n", path);
			return 77;
		}
		tcase_add_test(tc, test_real_captures);
	} else if (perfetto) {
		if (!have_protoc()) {
			printf("SKIP: protoc not found (Debian package protobuf-compiler): the Perfetto "
			       "export is not decoded\n");
			return 77;
		}
		tcase_add_test(tc, test_perfetto_samples);
	} else {
		tcase_add_test(tc, test_json_samples);
		tcase_add_test(tc, test_samples_cover_every_kind);
		tcase_add_test(tc, test_filters);
		tcase_add_test(tc, test_filtered_road_same_bytes);
		tcase_add_test(tc, test_bad_input);
		tcase_add_test(tc, test_library_errors);
		tcase_add_test(tc, test_hostile_names);
		tcase_add_test(tc, test_timeless_ops);
		tcase_add_test(tc, test_marker_name_cut);
		tcase_add_test(tc, test_frames_tracks);
	}
	suite_add_tcase(s, tc);
	return nf_test_main(s);
}
