/*
 * Fuzz target for reading CTF packets: the input becomes the `events` stream
 * file of a session whose metadata is nftrace's own (written once, at start,
 * by the CTF writer into a temporary directory), and the whole reader runs on
 * it: the pre-scan, the native reader (parser/fastread.c) and the log replay,
 * then the same with NFTRACE_READER=babeltrace2 (source.ctf.fs, muxer, field
 * decoding by name). A run either succeeds or fails with NF_EFORMAT (or
 * NF_EIO) and a message naming the session; it must never crash, hang or
 * allocate without bound, and both readers must give the same outcome and
 * the same events.
 *
 * Seeds: with NF_FUZZ_WRITE_SEEDS=DIR set, the target also writes the stream
 * files of its template session (whole, and in small packets) into DIR; that
 * is how tests/fuzz/corpus/ctf/ was made (the uuid comes from the fixed
 * environment below, so the seeds match the metadata). NF_FUZZ_VERBOSE=1
 * prints how each input ended.
 */
#include "contract/ctf.h"
#include "contract/parser.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char fz_dir[256];
static char fz_stream[320];

static const struct nf_ctf_env_entry fz_env[] = {
	{ "tool_version", false, 0, "fuzz" },
	{ "schema_version", true, NF_SCHEMA_VERSION, NULL },
	{ "source", false, 0, "tests/fuzz/fuzz_ctf.c" },
	{ "seed", true, 1, NULL },
	{ "cpu_frequency", true, 10000000, NULL },
	{ "ground_truth", true, 1, NULL },
};

/* A session with some of every kind of field: strings, u32 sequences, entries. */
static int fz_write_template(const char *dir, uint32_t packet_size)
{
	struct nf_ctf_writer_options o = {
		.cpu_frequency = 10000000, .truth_stream = true, .packet_size = packet_size,
		.env = fz_env, .n_env = sizeof(fz_env) / sizeof(fz_env[0]),
	};
	static const uint32_t signaled[3] = { 0x40, 0x44, 0x48 };
	struct nf_log_entry e[4];
	struct nf_ctf_writer *w;
	struct nf_error err;
	struct nf_event ev;
	int rc;

	nf_error_clear(&err);
	if (nf_ctf_writer_create(dir, &o, &w, &err))
		return -1;
	memset(e, 0, sizeof(e));
	for (int i = 0; i < 4; i++) {
		e[i].fence_value = (uint64_t)i + 1;
		e[i].hnative_fence = 0x40;
		e[i].operation_type = NF_LOG_OP_SIGNAL_EXECUTED;
		e[i].fence_end_gpu_timestamp = 1000 + (uint64_t)i * (i == 2 ? 0 : 10);
	}
	for (uint64_t round = 0; round < 3; round++) {
		uint64_t t = 100 + round * 1000;

		memset(&ev, 0, sizeof(ev));
		ev.id = NF_EV_ADAPTER_START;
		ev.ts = t;
		ev.f[NFF_ADAPTER_START_gpu_frequency] = 19200000;
		ev.str = "fuzz adapter";
		nf_ctf_writer_emit(w, &ev);
		memset(&ev, 0, sizeof(ev));
		ev.id = NF_EV_FENCE_START;
		ev.ts = t + 1;
		ev.f[NFF_FENCE_START_fence] = 0x40;
		nf_ctf_writer_emit(w, &ev);
		memset(&ev, 0, sizeof(ev));
		ev.id = NF_EV_SET_LOG_BUFFER;
		ev.ts = t + 2;
		ev.f[NFF_SET_LOG_BUFFER_hwqueue] = 3;
		ev.f[NFF_SET_LOG_BUFFER_log_type] = NF_LOG_SIGNALS;
		ev.f[NFF_SET_LOG_BUFFER_epoch] = (uint32_t)round;
		ev.f[NFF_SET_LOG_BUFFER_capacity] = 4;
		nf_ctf_writer_emit(w, &ev);
		memset(&ev, 0, sizeof(ev));
		ev.id = NF_EV_FENCE_INTERRUPT;
		ev.ts = t + 3;
		ev.f[NFF_FENCE_INTERRUPT_signaled_count] = 3;
		ev.u32s = signaled;
		nf_ctf_writer_emit(w, &ev);
		memset(&ev, 0, sizeof(ev));
		ev.id = NF_EV_LOG_READ;
		ev.ts = t + 4;
		ev.f[NFF_LOG_READ_hwqueue] = 3;
		ev.f[NFF_LOG_READ_log_type] = NF_LOG_SIGNALS;
		ev.f[NFF_LOG_READ_epoch] = (uint32_t)round;
		ev.f[NFF_LOG_READ_header] = (1ull << 32) | 2; /* 6 written, 4 read, 2 lost */
		ev.f[NFF_LOG_READ_capacity] = 4;
		ev.f[NFF_LOG_READ_first_slot] = 2;
		ev.f[NFF_LOG_READ_entry_count] = 4;
		ev.entries = e;
		nf_ctf_writer_emit(w, &ev);
		memset(&ev, 0, sizeof(ev));
		ev.id = NF_EV_TRUTH_OP;
		ev.ts = t + 5;
		ev.f[NFF_TRUTH_OP_fence] = 0x40;
		nf_ctf_writer_emit(w, &ev);
	}
	rc = nf_ctf_writer_close(w, &err);
	return rc ? -1 : 0;
}

static void fz_copy(const char *from, const char *to)
{
	char buf[65536];
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	size_t n;

	while (in && out && (n = fread(buf, 1, sizeof(buf), in)) > 0)
		fwrite(buf, 1, n, out);
	if (in)
		fclose(in);
	if (out)
		fclose(out);
}

static void fz_cleanup(void)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fz_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "fuzz_ctf: could not remove %s\n", fz_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *base = getenv("TMPDIR");
	const char *seeds = getenv("NF_FUZZ_WRITE_SEEDS");
	char session[300], small[300], path[400], from[400];

	(void)argc;
	(void)argv;
	snprintf(fz_dir, sizeof(fz_dir), "%s/nftrace-fuzz-ctf-XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(fz_dir)) {
		perror("fuzz_ctf: mkdtemp");
		exit(1);
	}
	atexit(fz_cleanup);
	snprintf(session, sizeof(session), "%s/s", fz_dir);
	if (fz_write_template(session, 0) != 0) {
		fprintf(stderr, "fuzz_ctf: cannot write the template session\n");
		exit(1);
	}
	snprintf(fz_stream, sizeof(fz_stream), "%s/events", session);
	if (seeds) {
		snprintf(small, sizeof(small), "%s/small", fz_dir);
		if (fz_write_template(small, 256) != 0)
			exit(1);
		snprintf(path, sizeof(path), "%s/events-whole", seeds);
		fz_copy(fz_stream, path);
		snprintf(from, sizeof(from), "%s/events", small);
		snprintf(path, sizeof(path), "%s/events-small-packets", seeds);
		fz_copy(from, path);
	}
	/* The truth stream stays as written; the input replaces `events`. */
	return 0;
}

/* What a run delivered: count and a hash of every event (both readers must agree). */
struct fz_seen {
	uint64_t n, hash;
};

static void fz_mix(struct fz_seen *s, const void *p, size_t len)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < len; i++)
		s->hash = (s->hash ^ b[i]) * 0x100000001b3ull;
}

static int fz_event(void *ctx, const struct nf_event *ev)
{
	struct fz_seen *seen = ctx;

	seen->n++;
	fz_mix(seen, &ev->id, sizeof(ev->id));
	fz_mix(seen, &ev->ts, sizeof(ev->ts));
	fz_mix(seen, ev->f, sizeof(ev->f));
	if (ev->str)
		fz_mix(seen, ev->str, strlen(ev->str));
	/* Touch what the parser hands over, so ASan sees bad pointers. */
	if (ev->str && strlen(ev->str) > (1u << 30))
		abort();
	if (ev->id == NF_EV_LOG_READ && ev->entries && ev->f[NFF_LOG_READ_entry_count])
		fz_mix(seen, ev->entries, sizeof(*ev->entries) * ev->f[NFF_LOG_READ_entry_count]);
	if (ev->id == NF_EV_FENCE_INTERRUPT && ev->u32s && ev->f[NFF_FENCE_INTERRUPT_signaled_count])
		fz_mix(seen, ev->u32s, sizeof(*ev->u32s) * ev->f[NFF_FENCE_INTERRUPT_signaled_count]);
	return 0;
}

/* Opens and reads the session with one reader (NULL: the default, native for
 * this metadata; "babeltrace2": the graph). */
static int fz_read(const char *session, const char *reader, struct fz_seen *seen,
		   struct nf_error *err)
{
	struct nf_parser_callbacks cb = { seen, fz_event, NULL, NULL };
	struct nf_parser *p = NULL;
	int rc;

	if (reader)
		setenv("NFTRACE_READER", reader, 1);
	else
		unsetenv("NFTRACE_READER");
	memset(seen, 0, sizeof(*seen));
	nf_error_clear(err);
	rc = nf_parser_open(session, &p, err);
	if (rc == 0)
		rc = nf_parser_run(p, &cb, err);
	nf_parser_destroy(p);
	unsetenv("NFTRACE_READER");
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char session[300];
	struct fz_seen fast, bt;
	struct nf_error err, err_bt;
	FILE *f;
	int rc, rc_bt;

	f = fopen(fz_stream, "wb");
	if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
		abort();
	snprintf(session, sizeof(session), "%s/s", fz_dir);
	rc = fz_read(session, NULL, &fast, &err);
	if (getenv("NF_FUZZ_VERBOSE"))
		fprintf(stderr, "fuzz_ctf: %zu bytes: %s\n", size, rc ? err.msg : "read whole");
	if (rc != 0 && (rc != NF_EFORMAT && rc != NF_EIO && rc != NF_ENOMEM))
		abort();
	if (rc != 0 && err.msg[0] == '\0')
		abort();
	/* The native reader and babeltrace2's graph: same outcome, same events. */
	rc_bt = fz_read(session, "babeltrace2", &bt, &err_bt);
	if (rc != rc_bt || (rc == 0 && (fast.n != bt.n || fast.hash != bt.hash))) {
		fprintf(stderr, "fuzz_ctf: readers differ: native %d (%s, %llu events), babeltrace2 %d (%s, %llu events)\n",
			rc, err.msg, (unsigned long long)fast.n, rc_bt, err_bt.msg,
			(unsigned long long)bt.n);
		abort();
	}
	return 0;
}
