/*
 * The native reader (parser/fastread.c) against babeltrace2's graph: for every
 * sample recorded with --ground-truth, a threaded-mode recording, a program
 * recording (nfence-sample) and an imported kernel trace, both paths must
 * deliver the same events (every field, string, sequence and entry), the same
 * decoded entries and findings in the same order, the same stats, and
 * `nftrace check --json` must print the same under both. Damaged copies
 * (truncated, bytes flipped) must fail the same way under both (same code,
 * one line) or read the same, and never crash.
 */
#include "nf_test.h"
#include "prescan.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>

#include "contract/ctf.h"
#include "contract/parser.h"

static char tmp[512], out[1 << 16], errb[1 << 14];

/* Everything a run saw, as text (one line per callback). */
struct trace_text {
	char *buf;
	size_t len;
	FILE *f;
};

static int tt_event(void *ctx, const struct nf_event *ev)
{
	FILE *f = ((struct trace_text *)ctx)->f;
	const struct nf_event_desc *d = nf_event_desc(ev->id);

	fprintf(f, "E %" PRIu32 " %" PRIu64, ev->id, ev->ts);
	for (int i = 0; i < NF_EVENT_MAX_FIELDS; i++)
		fprintf(f, " %" PRIu64, ev->f[i]);
	fprintf(f, " s=%s", ev->str ? ev->str : "(null)");
	for (uint32_t i = 0; d && i < d->n_fields; i++) {
		uint64_t n = i ? ev->f[i - 1] : 0;

		if (d->fields[i].type == NF_FT_U32SEQ)
			for (uint64_t k = 0; k < n; k++)
				fprintf(f, " u%" PRIu32, ev->u32s[k]);
		if (d->fields[i].type == NF_FT_ENTRIES)
			for (uint64_t k = 0; k < n; k++) {
				const struct nf_log_entry *e = &ev->entries[k];

				fprintf(f, " [%" PRIu64 " %" PRIu32 " %" PRIu32 " %" PRIu64 " %" PRIu64
					   " %" PRIu64 " %" PRIu64 "]", e->fence_value, e->hnative_fence,
					e->operation_type, e->reserved0, e->fence_observed_gpu_timestamp,
					e->reserved1, e->fence_end_gpu_timestamp);
			}
	}
	fputc('\n', f);
	return 0;
}

static int tt_entry(void *ctx, const struct nf_decoded_entry *e)
{
	FILE *f = ((struct trace_text *)ctx)->f;

	fprintf(f, "N %" PRIu32 " %" PRIu32 " %" PRIu32 " %" PRIu32 " %" PRIu64 " %" PRIu64
		   " %" PRIu64 " %" PRIu32 " %" PRIu64 " %" PRIu64 " %d\n",
		e->adapter, e->hwqueue, e->log_type, e->epoch, e->seq, e->read_cpu_ts,
		e->entry.fence_value, e->entry.hnative_fence, e->entry.fence_observed_gpu_timestamp,
		e->entry.fence_end_gpu_timestamp, (int)e->ts_class);
	return 0;
}

static int tt_finding(void *ctx, const struct nf_finding *g)
{
	FILE *f = ((struct trace_text *)ctx)->f;

	fprintf(f, "F %d %" PRIu32 " %" PRIu32 " %" PRIu32 " %" PRIu32 " %" PRIu64 " %" PRIu64
		   " %" PRIu64 " %" PRIu64 " %" PRIu64 " %s %" PRIu64 " %" PRIu32 " %" PRIu64 " %s\n",
		(int)g->kind, g->adapter, g->hwqueue, g->log_type, g->epoch, g->count, g->first_seq,
		g->prev_gpu_ts, g->next_gpu_ts, g->cpu_ts, g->stream, g->event_index, g->entry_index,
		g->packet, g->detail);
	return 0;
}

/* Reads dir with the given reader; returns the code, text in *tt (caller frees). */
static int read_with(const char *dir, const char *reader, struct trace_text *tt, char *msg,
		     size_t msg_len)
{
	struct nf_parser_callbacks cb = { tt, tt_event, tt_entry, tt_finding };
	struct nf_error e = { 0 };
	struct nf_parser *p = NULL;
	struct nf_parser_stats st;
	int rc;

	if (reader)
		setenv("NFTRACE_READER", reader, 1);
	else
		unsetenv("NFTRACE_READER");
	memset(tt, 0, sizeof(*tt));
	tt->f = open_memstream(&tt->buf, &tt->len);
	ck_assert(tt->f != NULL);
	rc = nf_parser_open(dir, &p, &e);
	if (!rc) {
		const struct nf_session_info *in = nf_parser_info(p);

		fprintf(tt->f, "I %s %" PRId64 " %s %s %s %" PRIu64 " %" PRIu64 " %" PRIu64 " %d\n",
			in->tool_version, in->schema_version, in->source, in->mode, in->host, in->seed,
			in->cpu_frequency, in->start_ticks, (int)in->ground_truth);
		rc = nf_parser_run(p, &cb, &e);
		nf_parser_get_stats(p, &st);
		fprintf(tt->f, "S %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", st.events, st.unknown_events,
			st.discarded_events);
	}
	nf_parser_destroy(p);
	fclose(tt->f);
	snprintf(msg, msg_len, "%s", rc ? e.msg : "");
	unsetenv("NFTRACE_READER");
	return rc;
}

/* The first line where a and b differ, for the failure message. */
static void first_diff(const char *a, const char *b, char *out_, size_t len)
{
	size_t line = 1;
	const char *la = a, *lb = b;

	while (*a && *a == *b) {
		if (*a == '\n') {
			line++;
			la = a + 1;
			lb = b + 1;
		}
		a++;
		b++;
	}
	snprintf(out_, len, "line %zu:\n  fast: %.300s\n  bt2:  %.300s", line, la, lb);
}

/* Both readers must agree on dir: same code, same text; returns the events seen. */
static size_t same_both_ways(const char *dir, bool must_read)
{
	struct trace_text fast, bt;
	char mf[1024], mb[1024], diff[1024];
	int rf = read_with(dir, NULL, &fast, mf, sizeof(mf));
	int rb = read_with(dir, "babeltrace2", &bt, mb, sizeof(mb));
	size_t n = 0;

	if (must_read) {
		ck_assert_msg(rf == 0, "%s: native reader failed: %s", dir, mf);
		ck_assert_msg(rb == 0, "%s: babeltrace2 failed: %s", dir, mb);
	}
	ck_assert_msg(rf == rb, "%s: native reader gave %d (%s), babeltrace2 %d (%s)", dir, rf, mf,
		      rb, mb);
	if (rf == 0) {
		first_diff(fast.buf, bt.buf, diff, sizeof(diff));
		ck_assert_msg(fast.len == bt.len && memcmp(fast.buf, bt.buf, fast.len) == 0,
			      "%s: the readers differ at %s", dir, diff);
	} else {
		/* One line each, both naming the session. */
		ck_assert_msg(!strchr(mf, '\n') && strstr(mf, dir) != NULL, "native message: %s", mf);
		ck_assert_msg(!strchr(mb, '\n') && strstr(mb, dir) != NULL, "bt2 message: %s", mb);
	}
	for (const char *c = fast.buf; c && *c; c++)
		if (*c == 'E' && (c == fast.buf || c[-1] == '\n'))
			n++;
	free(fast.buf);
	free(bt.buf);
	return n;
}

/* `nftrace check --json` prints the same under both readers. */
static void same_check_json(const char *dir)
{
	static char a[1 << 16], b[1 << 16];
	int sa, sb;

	sa = nf_test_nftrace_run(NF_TEST_ARGV("check", "--json", dir), a, sizeof(a), errb,
				 sizeof(errb));
	sb = nf_test_nftrace_env(NF_TEST_ARGV("NFTRACE_READER=babeltrace2"),
				 NF_TEST_ARGV("check", "--json", dir), b, sizeof(b), errb, sizeof(errb));
	ck_assert_msg(sa == sb, "%s: check exits %d (native) and %d (babeltrace2)", dir, sa, sb);
	ck_assert_msg(a[0] == '{' || a[0] == '[', "%s: check --json printed %.200s", dir, a);
	ck_assert_msg(strcmp(a, b) == 0, "%s: check --json differs:\n%.500s\n---\n%.500s", dir, a, b);
}

/* Runs nftrace with args (no shell); what names it when it fails. */
static void nft_ok(const char *what, const char *const args[])
{
	int st = nf_test_nftrace_run(args, out, sizeof(out), errb, sizeof(errb));

	ck_assert_msg(st == 0, "%s failed (%d): %.1500s", what, st, errb);
}

/* A shell script with its paths as "$1"... and nftrace as "$NF" (nf_test_sh). */
static void sh_ok(const char *what, const char *script, const char *const args[])
{
	int st = nf_test_sh(script, args, out, sizeof(out), errb, sizeof(errb));

	ck_assert_msg(st == 0, "%s failed (%d): %.1500s", what, st, errb);
}

static void setup(void)
{
	nf_test_tmpdir(tmp, sizeof(tmp));
}

static void teardown(void)
{
	nf_test_rmtree(tmp);
}

START_TEST(test_samples_same)
{
	char sdir[1024], dir[1200];
	struct dirent *de;
	DIR *d;
	int n = 0;

	nf_test_source_path(sdir, sizeof(sdir), "samples");
	d = opendir(sdir);
	ck_assert(d != NULL);
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);

		if (len < 5 || strcmp(de->d_name + len - 4, ".nfs") != 0)
			continue;
		snprintf(dir, sizeof(dir), "%s/%.*s", tmp, (int)(len - 4), de->d_name);
		if (strcmp(de->d_name, "stress.nfs") == 0)
			continue; /* a million operations: stress_small below */
		char src[1400];

		snprintf(src, sizeof(src), "%s/%s", sdir, de->d_name);
		nft_ok(de->d_name, NF_TEST_ARGV("record", "--force", "--ground-truth", "-o", dir, src));
		ck_assert_uint_gt(same_both_ways(dir, true), 0);
		same_check_json(dir);
		n++;
	}
	closedir(d);
	ck_assert_int_ge(n, 10);
}
END_TEST

/* samples/stress.nfs cut to a few rounds (40: several 256 KiB packets per stream). */
static void record_stress_small(const char *dir, int rounds, bool ground_truth)
{
	char src[1024];

	nf_test_source_path(src, sizeof(src), "samples/stress.nfs");
	char n[16];

	snprintf(n, sizeof(n), "%d", rounds);
	sh_ok("stress-small record",
	      "sed \"s/^repeat 4000 as/repeat $1 as/\" \"$2\" >\"$3/stress-small.nfs\" && "
	      "exec \"$NF\" record --force $5 -o \"$4\" \"$3/stress-small.nfs\"",
	      NF_TEST_ARGV(n, src, tmp, dir, ground_truth ? "--ground-truth" : ""));
}

START_TEST(test_stress_small_same)
{
	char dir[1200], path[1300];
	struct stat st;

	snprintf(dir, sizeof(dir), "%s/stress-small", tmp);
	record_stress_small(dir, 40, true);
	snprintf(path, sizeof(path), "%s/events", dir);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_gt(st.st_size, 3 * 256 * 1024); /* several packets */
	ck_assert_uint_gt(same_both_ways(dir, true), 10000);
	same_check_json(dir);
}
END_TEST

/* One 12 MiB packet (the native reader hands back what it read every few MiB),
 * a clock above 1 GHz (distinct ticks, equal nanoseconds: the muxer's tie
 * break) and a clock offset, written with the CTF writer itself. */
START_TEST(test_big_packet_same)
{
	static const struct nf_ctf_env_entry env[] = {
		{ "tool_version", false, 0, "test" },
		{ "schema_version", true, NF_SCHEMA_VERSION, NULL },
		{ "cpu_frequency", true, 3000000000, NULL },
		{ "ground_truth", true, 1, NULL },
	};
	struct nf_ctf_writer_options o = {
		.cpu_frequency = 3000000000u, .clock_offset = 7000000001u, .truth_stream = true,
		.packet_size = 12u << 20, .env = env, .n_env = sizeof(env) / sizeof(env[0]),
	};
	struct nf_log_entry e[8];
	struct nf_ctf_writer *w;
	struct nf_error err = { 0 };
	struct nf_event ev;
	char dir[1200];

	snprintf(dir, sizeof(dir), "%s/big", tmp);
	ck_assert_int_eq(nf_ctf_writer_create(dir, &o, &w, &err), 0);
	memset(e, 0, sizeof(e));
	for (uint64_t i = 0; i < 40000; i++) {
		memset(&ev, 0, sizeof(ev));
		ev.id = NF_EV_LOG_READ;
		ev.ts = 1000 + i * 2; /* 2 ticks: often the same nanosecond */
		ev.f[NFF_LOG_READ_hwqueue] = 1;
		ev.f[NFF_LOG_READ_log_type] = NF_LOG_SIGNALS;
		ev.f[NFF_LOG_READ_header] = ((i * 8 / 64) << 32) | (i * 8 % 64);
		ev.f[NFF_LOG_READ_capacity] = 64;
		ev.f[NFF_LOG_READ_first_slot] = (i * 8 + 56) % 64;
		ev.f[NFF_LOG_READ_entry_count] = 8;
		for (int k = 0; k < 8; k++) {
			e[k].fence_value = i * 8 + (uint64_t)k;
			e[k].fence_end_gpu_timestamp = i * 100 + (uint64_t)k;
		}
		ev.entries = e;
		ck_assert_int_eq(nf_ctf_writer_emit(w, &ev), 0);
		memset(&ev, 0, sizeof(ev));
		ev.id = NF_EV_TRUTH_OP;
		ev.ts = 1001 + i * 2;
		ev.f[NFF_TRUTH_OP_fence] = i;
		ck_assert_int_eq(nf_ctf_writer_emit(w, &ev), 0);
	}
	ck_assert_int_eq(nf_ctf_writer_close(w, &err), 0);
	ck_assert_uint_eq(same_both_ways(dir, true), 80000);
}
END_TEST

START_TEST(test_kernel_import_same)
{
	char src[1024], dir[1200];

	nf_test_source_path(src, sizeof(src), "samples/kernel/dma-fence.dat");
	snprintf(dir, sizeof(dir), "%s/kernel", tmp);
	nft_ok("import", NF_TEST_ARGV("import", "--force", "-o", dir, src));
	ck_assert_uint_gt(same_both_ways(dir, true), 0);
	same_check_json(dir);
}
END_TEST

START_TEST(test_threaded_same)
{
	char src[1024], dir[1200];

	nf_test_source_path(src, sizeof(src), "samples/cross-adapter-scenario-1.nfs");
	snprintf(dir, sizeof(dir), "%s/threaded", tmp);
	nft_ok("threaded record",
	       NF_TEST_ARGV("record", "--force", "--ground-truth", "--mode", "threaded", "-o", dir, src));
	ck_assert_uint_gt(same_both_ways(dir, true), 0);
	same_check_json(dir);
}
END_TEST

START_TEST(test_program_same)
{
	const char *bin = getenv("NF_BINARY_DIR");
	char dir[1200];

	ck_assert(bin != NULL);
	snprintf(dir, sizeof(dir), "%s/program", tmp);
	char prog[1024];

	snprintf(prog, sizeof(prog), "%s/nfence-sample", bin);
	nft_ok("program record", NF_TEST_ARGV("record", "--force", "-o", dir, "--", prog));
	ck_assert_uint_gt(same_both_ways(dir, true), 0);
	same_check_json(dir);
}
END_TEST

/* Copies a session, then damages its events file at `at` (truncate or flip). */
static void damaged_copy(const char *src, const char *dst, long at, bool truncate_it, int xor)
{
	char path[1400];
	struct stat st;
	int fd;

	sh_ok("copy", "rm -rf \"$2\" && cp -r \"$1\" \"$2\"", NF_TEST_ARGV(src, dst));
	snprintf(path, sizeof(path), "%s/events", dst);
	ck_assert_int_eq(stat(path, &st), 0);
	if (at >= st.st_size)
		at = st.st_size - 1;
	if (truncate_it) {
		ck_assert_int_eq(truncate(path, at), 0);
		return;
	}
	fd = open(path, O_RDWR);
	ck_assert(fd >= 0);
	unsigned char c;
	ck_assert_int_eq(pread(fd, &c, 1, at), 1);
	c = (unsigned char)(c ^ xor);
	ck_assert_int_eq(pwrite(fd, &c, 1, at), 1);
	close(fd);
}

/* The events file's first packet size (bytes), from its context. */
static long first_packet_bytes(const char *dir)
{
	char path[1300];
	uint64_t bits = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/events", dir);
	fd = open(path, O_RDONLY);
	ck_assert(fd >= 0);
	ck_assert_int_eq(pread(fd, &bits, 8, 48), 8);
	close(fd);
	return (long)(bits / 8);
}

START_TEST(test_damaged_same)
{
	char dir[1200], bad[1300], mf[1024];
	struct trace_text tt;
	/* packet header and context, event headers, timestamps, payload */
	static const long spots[] = { 0, 5, 20, 24, 31, 39, 45, 53, 60, 66, 72, 73, 76, 80, 84,
				      90, 100, 150, 300, 777, 1500, 4000, 9000 };
	long pkt;
	int rc;

	snprintf(dir, sizeof(dir), "%s/orig", tmp);
	record_stress_small(dir, 12, false); /* two packets */
	pkt = first_packet_bytes(dir);
	ck_assert_int_gt(pkt, 4096);
	snprintf(bad, sizeof(bad), "%s/bad", tmp);
	/* in the first packet, then the header and first events of the second */
	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < sizeof(spots) / sizeof(spots[0]); i++) {
			long at = spots[i] + k * pkt;

			if (k == 1 && spots[i] > 100)
				break;

			damaged_copy(dir, bad, at, true, 0);
			same_both_ways(bad, false);
			damaged_copy(dir, bad, at, false, 0x40);
			same_both_ways(bad, false);
			damaged_copy(dir, bad, at, false, 0xff);
			same_both_ways(bad, false);
		}
	/* cut at the packet boundary and one byte either side */
	for (long d = -1; d <= 1; d++) {
		damaged_copy(dir, bad, pkt + d, true, 0);
		same_both_ways(bad, false);
	}
	/* The first event's timestamp (at 72 + 4) pushed far ahead: the second
	 * goes back in time. babeltrace2's muxer refuses it; so does the native
	 * reader, and its message (naming the file and offset) shows that it is
	 * the one reading by default. */
	damaged_copy(dir, bad, 72 + 4 + 5, false, 0x01);
	rc = read_with(bad, NULL, &tt, mf, sizeof(mf));
	free(tt.buf);
	ck_assert_int_eq(rc, NF_EFORMAT);
	ck_assert_msg(strstr(mf, "goes back in time") && strstr(mf, "/events: packet at offset 0"),
		      "%s", mf);
	same_both_ways(bad, false);

	/*
	 * The first packet's content ending at every byte of its first events:
	 * the pre-scan (which checks an event whose fields are all fixed-width
	 * integers in one comparison) refuses exactly what the native reader
	 * refuses, with the same message (naming the event and the field cut
	 * short), and lets through a cut that falls between two events.
	 */
	{
		char path[1400];
		int fd, refused = 0;

		sh_ok("copy", "rm -rf \"$2\" && cp -r \"$1\" \"$2\"", NF_TEST_ARGV(dir, bad));
		snprintf(path, sizeof(path), "%s/events", bad);
		for (uint64_t cut = 72 + 1; cut < 72 + 600; cut++) {
			uint64_t bits = cut * 8;
			struct nf_error e = { 0 };
			int pre;

			fd = open(path, O_RDWR);
			ck_assert(fd >= 0);
			ck_assert_int_eq(pwrite(fd, &bits, 8, 40), 8);
			close(fd);
			pre = nf_prescan_session(bad, &e);
			rc = read_with(bad, NULL, &tt, mf, sizeof(mf));
			free(tt.buf);
			ck_assert_msg(pre == rc, "cut at %" PRIu64 ": pre-scan %d (%s), reader %d (%s)", cut, pre,
				      e.msg, rc, mf);
			if (pre) {
				ck_assert_str_eq(mf, e.msg);
				refused++;
			}
		}
		ck_assert_int_gt(refused, 500);
	}
}
END_TEST

static TCase *tcase(const char *name)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	return tc;
}

/* Three cases, one ctest each (CK_RUN_CASE), so that they run in parallel. */
static Suite *suite(void)
{
	Suite *s = suite_create("fastread");
	TCase *samples = tcase("samples"), *sessions = tcase("sessions"), *damaged = tcase("damaged");

	tcase_add_test(samples, test_samples_same);
	tcase_add_test(sessions, test_stress_small_same);
	tcase_add_test(sessions, test_big_packet_same);
	tcase_add_test(sessions, test_kernel_import_same);
	tcase_add_test(sessions, test_threaded_same);
	tcase_add_test(sessions, test_program_same);
	tcase_add_test(damaged, test_damaged_same);
	suite_add_tcase(s, samples);
	suite_add_tcase(s, sessions);
	suite_add_tcase(s, damaged);
	return s;
}

int main(void)
{
	return nf_test_main(suite());
}
