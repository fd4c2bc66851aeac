/*
 * Tests for parser/reader.c: sessions written with the CTF writer
 * (capture/ctf_writer.c) read back through babeltrace2 (events, fields,
 * sequences, log entries, environment), a hand-written trace whose fields are
 * reordered like another tool might, and bad input (missing directory, no or
 * broken metadata, a foreign trace, truncated and bit-flipped streams), which
 * must give a clean NF_E* code, a message and nothing on stderr.
 */
#include "nf_test.h"
#include "test_parser.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "contract/ctf.h"
#include "contract/parser.h"

#define CPU_HZ 10000000u

/* ---- what a run saw ---- */

struct got_event {
	struct nf_event ev;
	char str[64];
	uint32_t u32s[8];
	struct nf_log_entry entries[8];
};

struct got {
	struct got_event ev[64];
	size_t n_ev;
	struct nf_decoded_entry entries[64];
	size_t n_entries;
	struct nf_finding findings[64];
	char streams[64][32];
	size_t n_findings;
};

static int got_event(void *ctx, const struct nf_event *ev)
{
	struct got *g = ctx;
	struct got_event *e;

	if (g->n_ev >= 64)
		return 0;
	e = &g->ev[g->n_ev++];
	e->ev = *ev;
	if (ev->str)
		snprintf(e->str, sizeof(e->str), "%s", ev->str);
	if (ev->id == NF_EV_FENCE_INTERRUPT && ev->u32s)
		memcpy(e->u32s, ev->u32s,
		       sizeof(uint32_t) * (ev->f[NFF_FENCE_INTERRUPT_signaled_count] < 8 ?
						   ev->f[NFF_FENCE_INTERRUPT_signaled_count] : 8));
	if (ev->id == NF_EV_LOG_READ && ev->entries)
		memcpy(e->entries, ev->entries,
		       sizeof(struct nf_log_entry) * (ev->f[NFF_LOG_READ_entry_count] < 8 ?
							     ev->f[NFF_LOG_READ_entry_count] : 8));
	return 0;
}

static int got_entry(void *ctx, const struct nf_decoded_entry *d)
{
	struct got *g = ctx;

	if (g->n_entries < 64)
		g->entries[g->n_entries++] = *d;
	return 0;
}

static int got_finding(void *ctx, const struct nf_finding *f)
{
	struct got *g = ctx;

	if (g->n_findings < 64) {
		/* The stream name is only valid during the call. */
		snprintf(g->streams[g->n_findings], sizeof(g->streams[0]), "%s", f->stream);
		g->findings[g->n_findings] = *f;
		g->findings[g->n_findings].stream = g->streams[g->n_findings];
		g->n_findings++;
	}
	return 0;
}

/* ---- writing sessions ---- */

static const struct nf_ctf_env_entry test_env[] = {
	{ "tool_version", false, 0, "0.1.0-test" },
	{ "schema_version", true, NF_SCHEMA_VERSION, NULL },
	{ "source", false, 0, "tests/parser \"quoted\"" },
	{ "mode", false, 0, "deterministic" },
	{ "host", false, 0, "testhost" },
	{ "seed", true, 42, NULL },
	{ "cpu_frequency", true, CPU_HZ, NULL },
	{ "start_ticks", true, 5, NULL },
	{ "ground_truth", true, 1, NULL },
};

static struct nf_event ev_make(uint32_t id, uint64_t ts)
{
	struct nf_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.id = id;
	ev.ts = ts;
	return ev;
}

static const uint32_t test_signaled[2] = { 7, 9 };
static struct nf_log_entry test_entries[8];

/* The events of the reference session, in time order. */
static size_t test_events(struct nf_event *out)
{
	size_t n = 0;
	struct nf_event ev;

	ev = ev_make(NF_EV_ADAPTER_START, 100);
	ev.f[NFF_ADAPTER_START_adapter] = 0;
	ev.f[NFF_ADAPTER_START_vidsch_caps] = 1u << 11 | 1u << 12;
	ev.f[NFF_ADAPTER_START_gpu_frequency] = 19200000;
	ev.f[NFF_ADAPTER_START_os_feature_enabled] = 1;
	ev.str = "Test GPU";
	out[n++] = ev;

	ev = ev_make(NF_EV_FENCE_START, 110);
	ev.f[NFF_FENCE_START_adapter] = 0;
	ev.f[NFF_FENCE_START_process] = 1234;
	ev.f[NFF_FENCE_START_fence] = 0x40;
	ev.f[NFF_FENCE_START_global_fence] = 0x80000001u;
	ev.f[NFF_FENCE_START_flags] = 4;
	ev.f[NFF_FENCE_START_initial_value] = UINT64_MAX - 1;
	out[n++] = ev;

	ev = ev_make(NF_EV_SET_LOG_BUFFER, 120);
	ev.f[NFF_SET_LOG_BUFFER_hwqueue] = 3;
	ev.f[NFF_SET_LOG_BUFFER_log_type] = NF_LOG_SIGNALS;
	ev.f[NFF_SET_LOG_BUFFER_capacity] = 4;
	out[n++] = ev;

	for (uint32_t i = 0; i < 8; i++) {
		test_entries[i].fence_value = 1000 + i;
		test_entries[i].hnative_fence = 0x40;
		test_entries[i].operation_type = NF_LOG_OP_SIGNAL_EXECUTED;
		test_entries[i].reserved0 = i == 2 ? 0xdeadbeefcafef00dULL : 0;
		test_entries[i].fence_observed_gpu_timestamp = 5000 + i;
		test_entries[i].reserved1 = 0;
		test_entries[i].fence_end_gpu_timestamp = 6000 + 10 * i;
	}
	/* First read: 3 entries, slots 0..2. */
	ev = ev_make(NF_EV_LOG_READ, 130);
	ev.f[NFF_LOG_READ_hwqueue] = 3;
	ev.f[NFF_LOG_READ_log_type] = NF_LOG_SIGNALS;
	ev.f[NFF_LOG_READ_header] = 3;
	ev.f[NFF_LOG_READ_capacity] = 4;
	ev.f[NFF_LOG_READ_first_slot] = 0;
	ev.f[NFF_LOG_READ_entry_count] = 3;
	ev.entries = test_entries;
	out[n++] = ev;

	ev = ev_make(NF_EV_FENCE_INTERRUPT, 140);
	ev.f[NFF_FENCE_INTERRUPT_hwqueue] = 0xffffffffu;
	ev.f[NFF_FENCE_INTERRUPT_signaled_count] = 2;
	ev.u32s = test_signaled;
	out[n++] = ev;

	/* Second read: written total 9 (wrap 2, index 1), cached 3: 2 lost, 4 read from slot 1. */
	ev = ev_make(NF_EV_LOG_READ, 150);
	ev.f[NFF_LOG_READ_hwqueue] = 3;
	ev.f[NFF_LOG_READ_log_type] = NF_LOG_SIGNALS;
	ev.f[NFF_LOG_READ_header] = (2ull << 32) | 1;
	ev.f[NFF_LOG_READ_capacity] = 4;
	ev.f[NFF_LOG_READ_first_slot] = 1;
	ev.f[NFF_LOG_READ_entry_count] = 4;
	ev.entries = test_entries + 4;
	out[n++] = ev;

	ev = ev_make(NF_EV_TRUTH_OP, 160);
	ev.f[NFF_TRUTH_OP_fence] = 0x40;
	ev.f[NFF_TRUTH_OP_seq] = 3;
	ev.f[NFF_TRUTH_OP_fate] = 1;
	out[n++] = ev;
	return n;
}

static void write_session(const char *dir, const struct nf_ctf_env_entry *env, size_t n_env,
			  uint32_t packet_size, size_t repeat)
{
	struct nf_ctf_writer_options o = {
		.cpu_frequency = CPU_HZ, .truth_stream = true, .packet_size = packet_size,
		.env = env, .n_env = n_env,
	};
	struct nf_ctf_writer *w;
	struct nf_event evs[16];
	struct nf_error err;
	size_t n = test_events(evs);

	nf_error_clear(&err);
	ck_assert_msg(nf_ctf_writer_create(dir, &o, &w, &err) == 0, "%s", err.msg);
	for (size_t r = 0; r < repeat; r++)
		for (size_t i = 0; i < n; i++) {
			struct nf_event ev = evs[i];

			ev.ts += r * 1000;
			ck_assert_int_eq(nf_ctf_writer_emit(w, &ev), 0);
		}
	ck_assert_msg(nf_ctf_writer_close(w, &err) == 0, "%s", err.msg);
}

/* A fresh directory for a session (the writer wants it empty or absent). */
static void session_dir(char *buf, size_t len, char *tmp, size_t tmp_len)
{
	nf_test_tmpdir(tmp, tmp_len);
	snprintf(buf, len, "%s/session", tmp);
}

/* Runs open (+ run when it opened) with stderr captured; returns the first error. */
static int read_session(const char *dir, struct got *g, struct nf_parser_stats *st,
			struct nf_session_info *info, struct nf_error *err, char *stderr_buf,
			size_t stderr_len)
{
	struct nf_parser_callbacks cb = { g, got_event, got_entry, got_finding };
	char errf[4096];
	int fd, saved = dup(2);
	struct nf_parser *p = NULL;
	ssize_t nread;
	int rc;

	snprintf(errf, sizeof(errf), "%s/nftrace-stderr-XXXXXX", nf_test_tmpbase());
	fd = mkstemp(errf);
	ck_assert(fd >= 0 && saved >= 0);
	fflush(stderr);
	dup2(fd, 2);
	nf_error_clear(err);
	rc = nf_parser_open(dir, &p, err);
	if (rc == 0) {
		ck_assert_ptr_nonnull(p);
		if (info)
			*info = *nf_parser_info(p);
		rc = nf_parser_run(p, &cb, err);
		if (st)
			nf_parser_get_stats(p, st);
		if (info) {
			/* Keep the strings past destroy for the checks. */
			static char tv[64], src[64], mode[64], host[64];

			snprintf(tv, sizeof(tv), "%s", info->tool_version);
			snprintf(src, sizeof(src), "%s", info->source);
			snprintf(mode, sizeof(mode), "%s", info->mode);
			snprintf(host, sizeof(host), "%s", info->host);
			info->tool_version = tv;
			info->source = src;
			info->mode = mode;
			info->host = host;
		}
		if (rc == 0) {
			struct nf_error e2;

			nf_error_clear(&e2);
			ck_assert_int_eq(nf_parser_run(p, &cb, &e2), NF_ESTATE);
		}
	} else {
		ck_assert_ptr_null(p);
	}
	nf_parser_destroy(p);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	lseek(fd, 0, SEEK_SET);
	nread = read(fd, stderr_buf, stderr_len - 1);
	stderr_buf[nread > 0 ? nread : 0] = '\0';
	close(fd);
	unlink(errf);
	if (rc)
		ck_assert_int_eq(err->code, rc);
	return rc;
}

/* Expects open or run to fail cleanly with `code` and silently. */
static void expect_error(const char *dir, int code, const char *needle)
{
	static struct got g;
	struct nf_error err;
	char serr[4096];
	int rc;

	memset(&g, 0, sizeof(g));
	rc = read_session(dir, &g, NULL, NULL, &err, serr, sizeof(serr));
	ck_assert_msg(rc == code, "%s: got %d (%s), expected %d", dir, rc, err.msg, code);
	ck_assert_ptr_nonnull(strstr(err.msg, dir));
	if (needle)
		ck_assert_msg(strstr(err.msg, needle) != NULL, "'%s' not in '%s'", needle, err.msg);
	ck_assert_msg(serr[0] == '\0', "the library printed: %s", serr);
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(data, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

static size_t file_size(const char *path)
{
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	return (size_t)st.st_size;
}

/* ---- round trip ---- */

START_TEST(reader_round_trip)
{
	static struct got g;
	struct nf_event want[16];
	size_t n_want = test_events(want);
	struct nf_parser_stats st;
	struct nf_session_info info;
	struct nf_error err;
	char tmp[512], dir[600], serr[4096];
	int rc;

	memset(&g, 0, sizeof(g));
	session_dir(dir, sizeof(dir), tmp, sizeof(tmp));
	write_session(dir, test_env, sizeof(test_env) / sizeof(test_env[0]), 0, 1);
	rc = read_session(dir, &g, &st, &info, &err, serr, sizeof(serr));
	ck_assert_msg(rc == 0, "%s", err.msg);
	ck_assert_str_eq(serr, "");

	ck_assert_str_eq(info.tool_version, "0.1.0-test");
	ck_assert_int_eq(info.schema_version, NF_SCHEMA_VERSION);
	ck_assert_str_eq(info.source, "tests/parser \"quoted\"");
	ck_assert_str_eq(info.mode, "deterministic");
	ck_assert_str_eq(info.host, "testhost");
	ck_assert_uint_eq(info.seed, 42);
	ck_assert_uint_eq(info.cpu_frequency, CPU_HZ);
	ck_assert_uint_eq(info.start_ticks, 5);
	ck_assert(info.ground_truth);

	ck_assert_uint_eq(st.events, n_want);
	ck_assert_uint_eq(st.unknown_events, 0);
	ck_assert_uint_eq(g.n_ev, n_want);
	for (size_t i = 0; i < n_want; i++) {
		const struct nf_event *e = &g.ev[i].ev;
		const struct nf_event_desc *d;

		size_t j = i;

		ck_assert_uint_eq(e->id, want[j].id);
		ck_assert_uint_eq(e->ts, want[j].ts);
		d = nf_event_desc(e->id);
		for (uint32_t f = 0; f < d->n_fields; f++)
			if (d->fields[f].type != NF_FT_STR && d->fields[f].type != NF_FT_U32SEQ &&
			    d->fields[f].type != NF_FT_ENTRIES)
				ck_assert_msg(e->f[f] == want[j].f[f], "event %zu field %s: %" PRIu64
					      " != %" PRIu64, i, d->fields[f].name, e->f[f], want[j].f[f]);
		if (e->id == NF_EV_ADAPTER_START)
			ck_assert_str_eq(g.ev[i].str, "Test GPU");
		if (e->id == NF_EV_FENCE_INTERRUPT) {
			ck_assert_uint_eq(g.ev[i].u32s[0], 7);
			ck_assert_uint_eq(g.ev[i].u32s[1], 9);
		}
		if (e->id == NF_EV_LOG_READ)
			ck_assert_int_eq(memcmp(g.ev[i].entries, want[j].entries,
						want[j].f[NFF_LOG_READ_entry_count] *
							sizeof(struct nf_log_entry)), 0);
	}

	/* The replay: 3 entries, then 2 lost, then 4 more at positions 5..8. */
	ck_assert_uint_eq(g.n_entries, 7);
	for (size_t i = 0; i < 7; i++) {
		ck_assert_uint_eq(g.entries[i].seq, i < 3 ? i : i + 2);
		ck_assert_uint_eq(g.entries[i].hwqueue, 3);
		ck_assert_uint_eq(g.entries[i].log_type, NF_LOG_SIGNALS);
		ck_assert_int_eq(g.entries[i].ts_class, NF_FIND_COUNT);
	}
	ck_assert_uint_eq(g.entries[2].entry.reserved0, 0xdeadbeefcafef00dULL);
	ck_assert_uint_eq(g.entries[3].read_cpu_ts, 150);
	ck_assert_uint_eq(g.n_findings, 2);
	ck_assert_int_eq(g.findings[0].kind, NF_FIND_NEW_EPOCH);
	ck_assert_int_eq(g.findings[1].kind, NF_FIND_LOST);
	ck_assert_uint_eq(g.findings[1].count, 2);
	ck_assert_uint_eq(g.findings[1].first_seq, 3);
	ck_assert_uint_eq(g.findings[1].prev_gpu_ts, 6020);
	ck_assert_uint_eq(g.findings[1].next_gpu_ts, 6040);
	ck_assert_str_eq(g.findings[1].stream, "events");
	ck_assert_uint_eq(g.findings[1].cpu_ts, 150);
	ck_assert_uint_eq(g.findings[1].event_index, 5);
	nf_test_rmtree(tmp);
}
END_TEST

/* Many packets: every event comes back, in order. */
START_TEST(reader_many_packets)
{
	static struct got g;
	struct nf_parser_stats st;
	struct nf_error err;
	char tmp[512], dir[600], serr[4096];

	memset(&g, 0, sizeof(g));
	session_dir(dir, sizeof(dir), tmp, sizeof(tmp));
	write_session(dir, test_env, sizeof(test_env) / sizeof(test_env[0]), 4096, 300);
	ck_assert_int_eq(read_session(dir, &g, &st, NULL, &err, serr, sizeof(serr)), 0);
	ck_assert_uint_eq(st.events, 300 * 7);
	/* Findings name their packet: packet_seq_num, from 0, never decreasing. */
	ck_assert_uint_gt(g.n_findings, 1);
	ck_assert_uint_eq(g.findings[0].packet, 0);
	for (size_t i = 1; i < g.n_findings; i++)
		ck_assert_uint_ge(g.findings[i].packet, g.findings[i - 1].packet);
	ck_assert_msg(g.findings[g.n_findings - 1].packet > 0, "all findings in packet 0");
	nf_test_rmtree(tmp);
}
END_TEST

/* A trace another tool wrote: fields reordered, an extra field, an unknown event. */
static const char foreign_order_meta[] =
	"/* CTF 1.8 */\n"
	"typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
	"typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
	"trace { major = 1; minor = 8; byte_order = le;\n"
	"  packet.header := struct { uint32_t magic; uint32_t stream_id; }; };\n"
	"env { cpu_frequency = 1000; schema_version = 1; tool_version = \"other\"; };\n"
	"clock { name = c; freq = 1000; };\n"
	"typealias integer { size = 64; align = 8; signed = false; map = clock.c.value; } := ts_t;\n"
	"stream { id = 0; event.header := struct { uint32_t id; ts_t timestamp; }; };\n"
	"event { name = \"MonitoredFenceStart\"; id = 0; stream_id = 0;\n"
	"  fields := struct { uint64_t initial_value; uint32_t extra; uint32_t fence; uint32_t adapter; }; };\n"
	"event { name = \"SomethingElse\"; id = 1; stream_id = 0; fields := struct { uint32_t x; }; };\n";

static size_t put32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4);
	return 4;
}

static size_t put64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, 8);
	return 8;
}

static void write_foreign(const char *dir, const char *meta)
{
	unsigned char buf[256];
	char path[700];
	size_t n = 0;

	ck_assert_int_eq(mkdir(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/metadata", dir);
	write_file(path, meta, strlen(meta));
	n += put32(buf + n, 0xC1FC1FC1u);
	n += put32(buf + n, 0);
	n += put32(buf + n, 0);     /* MonitoredFenceStart */
	n += put64(buf + n, 10);
	n += put64(buf + n, 99);    /* initial_value */
	n += put32(buf + n, 12345); /* extra */
	n += put32(buf + n, 0x44);  /* fence */
	n += put32(buf + n, 2);     /* adapter */
	n += put32(buf + n, 1);     /* SomethingElse */
	n += put64(buf + n, 20);
	n += put32(buf + n, 7);
	snprintf(path, sizeof(path), "%s/stream0", dir);
	write_file(path, buf, n);
}

START_TEST(reader_fields_by_name)
{
	static struct got g;
	struct nf_parser_stats st;
	struct nf_session_info info;
	struct nf_error err;
	char tmp[512], dir[600], serr[4096];
	int rc;

	memset(&g, 0, sizeof(g));
	session_dir(dir, sizeof(dir), tmp, sizeof(tmp));
	write_foreign(dir, foreign_order_meta);
	rc = read_session(dir, &g, &st, &info, &err, serr, sizeof(serr));
	ck_assert_msg(rc == 0, "%s", err.msg);
	ck_assert_str_eq(serr, "");
	ck_assert_str_eq(info.tool_version, "other");
	ck_assert_str_eq(info.host, "");
	ck_assert_uint_eq(info.cpu_frequency, 1000);
	ck_assert_uint_eq(st.events, 2);
	ck_assert_uint_eq(st.unknown_events, 1);
	ck_assert_uint_eq(g.n_ev, 1);
	ck_assert_uint_eq(g.ev[0].ev.id, NF_EV_FENCE_START);
	ck_assert_uint_eq(g.ev[0].ev.ts, 10);
	ck_assert_uint_eq(g.ev[0].ev.f[NFF_FENCE_START_adapter], 2);
	ck_assert_uint_eq(g.ev[0].ev.f[NFF_FENCE_START_fence], 0x44);
	ck_assert_uint_eq(g.ev[0].ev.f[NFF_FENCE_START_initial_value], 99);
	ck_assert_uint_eq(g.ev[0].ev.f[NFF_FENCE_START_process], 0); /* absent */
	nf_test_rmtree(tmp);
}
END_TEST

/* ---- bad input ---- */

START_TEST(reader_missing_dir)
{
	expect_error("/nonexistent/nftrace-session", NF_ENOENT, "no such directory");
}
END_TEST

START_TEST(reader_empty_dir)
{
	char tmp[512];

	nf_test_tmpdir(tmp, sizeof(tmp));
	expect_error(tmp, NF_EFORMAT, "not an nftrace session (no CTF metadata)");
	nf_test_rmtree(tmp);
}
END_TEST

START_TEST(reader_empty_metadata)
{
	char tmp[512], path[600];

	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(path, sizeof(path), "%s/metadata", tmp);
	write_file(path, "", 0);
	expect_error(tmp, NF_EFORMAT, NULL);
	nf_test_rmtree(tmp);
}
END_TEST

START_TEST(reader_garbage_metadata)
{
	char tmp[512], path[600];
	const char junk[] = "/* CTF 1.8 */\ntrace { major = 1; minor = 8; byte_order = le; \n event {{{ ;;; }\n";

	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(path, sizeof(path), "%s/metadata", tmp);
	write_file(path, junk, strlen(junk));
	expect_error(tmp, NF_EFORMAT, NULL);
	nf_test_rmtree(tmp);
}
END_TEST

/* A valid CTF trace from another tool: no nftrace environment. */
START_TEST(reader_other_tool)
{
	char tmp[512], dir[600];
	const char meta[] =
		"/* CTF 1.8 */\n"
		"typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
		"typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
		"trace { major = 1; minor = 8; byte_order = le;\n"
		"  packet.header := struct { uint32_t magic; uint32_t stream_id; }; };\n"
		"env { hostname = \"box\"; domain = \"ust\"; tracer_name = \"lttng-ust\"; };\n"
		"clock { name = c; freq = 1000; };\n"
		"typealias integer { size = 64; align = 8; signed = false; map = clock.c.value; } := ts_t;\n"
		"stream { id = 0; event.header := struct { uint32_t id; ts_t timestamp; }; };\n"
		"event { name = \"MonitoredFenceStart\"; id = 0; stream_id = 0;\n"
		"  fields := struct { uint64_t initial_value; uint32_t extra; uint32_t fence; uint32_t adapter; }; };\n"
		"event { name = \"SomethingElse\"; id = 1; stream_id = 0; fields := struct { uint32_t x; }; };\n";

	session_dir(dir, sizeof(dir), tmp, sizeof(tmp));
	write_foreign(dir, meta);
	expect_error(dir, NF_EFORMAT, "not an nftrace session");
	nf_test_rmtree(tmp);
}
END_TEST

/* Our own writer, but an environment without cpu_frequency. */
START_TEST(reader_env_incomplete)
{
	char tmp[512], dir[600];

	session_dir(dir, sizeof(dir), tmp, sizeof(tmp));
	write_session(dir, test_env, 5, 0, 1); /* up to "host": no cpu_frequency */
	expect_error(dir, NF_EFORMAT, "not an nftrace session");
	nf_test_rmtree(tmp);
}
END_TEST

/* A schema field of the wrong type (a string where an integer belongs). */
START_TEST(reader_wrong_field_type)
{
	char tmp[512], dir[600];
	char meta[sizeof(foreign_order_meta) + 64];
	char *p;

	snprintf(meta, sizeof(meta), "%s", foreign_order_meta);
	p = strstr(meta, "uint32_t fence;");
	ck_assert_ptr_nonnull(p);
	memcpy(p, "string   fence;", 15);
	session_dir(dir, sizeof(dir), tmp, sizeof(tmp));
	write_foreign(dir, meta);
	expect_error(dir, NF_EFORMAT, "fence");
	nf_test_rmtree(tmp);
}
END_TEST

/* Metadata but no stream file (a recorder killed before its first packet). */
START_TEST(reader_no_streams)
{
	char tmp[512], dir[600];

	session_dir(dir, sizeof(dir), tmp, sizeof(tmp));
	write_session(dir, test_env, sizeof(test_env) / sizeof(test_env[0]), 0, 0);
	expect_error(dir, NF_EFORMAT, "no events");
	nf_test_rmtree(tmp);
}
END_TEST

START_TEST(reader_truncated_stream)
{
	char tmp[512], dir[600], path[700];
	size_t size;

	session_dir(dir, sizeof(dir), tmp, sizeof(tmp));
	write_session(dir, test_env, sizeof(test_env) / sizeof(test_env[0]), 4096, 100);
	snprintf(path, sizeof(path), "%s/events", dir);
	size = file_size(path);
	ck_assert_uint_gt(size, 3 * 4096);
	/* Cut the last packet in half: what came before is read, then a clean error. */
	ck_assert_int_eq(truncate(path, (off_t)(size - 2048)), 0);
	expect_error(dir, NF_EFORMAT, NULL);
	/* Cut inside the very first packet header. */
	ck_assert_int_eq(truncate(path, 10), 0);
	expect_error(dir, NF_EFORMAT, NULL);
	nf_test_rmtree(tmp);
}
END_TEST

START_TEST(reader_flipped_magic)
{
	char tmp[512], dir[600], path[700];
	int fd;
	unsigned char b;

	session_dir(dir, sizeof(dir), tmp, sizeof(tmp));
	write_session(dir, test_env, sizeof(test_env) / sizeof(test_env[0]), 0, 1);
	snprintf(path, sizeof(path), "%s/events", dir);
	fd = open(path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, &b, 1, 0), 1);
	b ^= 0xff;
	ck_assert_int_eq(pwrite(fd, &b, 1, 0), 1);
	close(fd);
	expect_error(dir, NF_EFORMAT, NULL);
	nf_test_rmtree(tmp);
}
END_TEST

/* Flip bytes all over the stream: either it reads (values change) or a clean error. */
START_TEST(reader_flipped_bytes)
{
	char tmp[512], dir[600], path[700];
	unsigned char *orig;
	size_t size;
	uint32_t rng = 777;
	int fd;

	session_dir(dir, sizeof(dir), tmp, sizeof(tmp));
	write_session(dir, test_env, sizeof(test_env) / sizeof(test_env[0]), 1024, 20);
	snprintf(path, sizeof(path), "%s/events", dir);
	size = file_size(path);
	orig = malloc(size);
	ck_assert_ptr_nonnull(orig);
	fd = open(path, O_RDONLY);
	ck_assert_int_eq(read(fd, orig, size), (ssize_t)size);
	close(fd);
	for (int round = 0; round < 60; round++) {
		static struct got g;
		unsigned char *m = malloc(size);
		struct nf_error err;
		char serr[4096];
		int rc;

		ck_assert_ptr_nonnull(m);
		memcpy(m, orig, size);
		for (int k = 0; k < 1 + round % 4; k++) {
			rng = rng * 1103515245u + 12345u;
			m[(rng >> 8) % size] ^= (unsigned char)(1u << (rng % 8));
		}
		write_file(path, m, size);
		free(m);
		memset(&g, 0, sizeof(g));
		rc = read_session(dir, &g, NULL, NULL, &err, serr, sizeof(serr));
		ck_assert_msg(rc == 0 || rc == NF_EFORMAT, "round %d: %d %s", round, rc, err.msg);
		if (rc)
			ck_assert_uint_gt(strlen(err.msg), 0);
		ck_assert_msg(serr[0] == '\0', "round %d: the library printed: %s", round, serr);
	}
	free(orig);
	nf_test_rmtree(tmp);
}
END_TEST

/* A callback's non-zero return stops the run with that code. */
static int stop_at_third(void *ctx, const struct nf_event *ev)
{
	int *n = ctx;

	(void)ev;
	return ++*n == 3 ? 17 : 0;
}

START_TEST(reader_callback_stops)
{
	char tmp[512], dir[600];
	struct nf_parser *p;
	struct nf_error err;
	int n = 0;
	struct nf_parser_callbacks cb = { &n, stop_at_third, NULL, NULL };

	session_dir(dir, sizeof(dir), tmp, sizeof(tmp));
	write_session(dir, test_env, sizeof(test_env) / sizeof(test_env[0]), 0, 5);
	nf_error_clear(&err);
	ck_assert_int_eq(nf_parser_open(dir, &p, &err), 0);
	ck_assert_int_eq(nf_parser_run(p, &cb, &err), 17);
	ck_assert_int_eq(n, 3);
	ck_assert_int_eq(err.code, 17);
	nf_parser_destroy(p);
	nf_parser_destroy(NULL);
	nf_test_rmtree(tmp);
}
END_TEST

void add_reader_tests(Suite *s)
{
	TCase *tc = tcase_create("reader");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, reader_round_trip);
	tcase_add_test(tc, reader_many_packets);
	tcase_add_test(tc, reader_fields_by_name);
	tcase_add_test(tc, reader_missing_dir);
	tcase_add_test(tc, reader_empty_dir);
	tcase_add_test(tc, reader_empty_metadata);
	tcase_add_test(tc, reader_garbage_metadata);
	tcase_add_test(tc, reader_other_tool);
	tcase_add_test(tc, reader_env_incomplete);
	tcase_add_test(tc, reader_wrong_field_type);
	tcase_add_test(tc, reader_no_streams);
	tcase_add_test(tc, reader_truncated_stream);
	tcase_add_test(tc, reader_flipped_magic);
	tcase_add_test(tc, reader_flipped_bytes);
	tcase_add_test(tc, reader_callback_stops);
	suite_add_tcase(s, tc);
}
