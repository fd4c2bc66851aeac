/*
 * Tests of `nftrace check` end to end: for every fault sample recorded with
 * --ground-truth under several seeds, the counts check --json reports equal
 * the simulator's own (TruthLog per log epoch, TruthOp per operation), exactly;
 * and bad input (empty or missing directory, truncated files, flipped bytes,
 * another tool's metadata, sizes and counts claiming 2^63 or 2^32 entries, an
 * illegal log) gives one line, a non-zero exit, no crash and no hang.
 */
#include "nf_test.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "contract/ctf.h"
#include "contract/parser.h"

static char tmp[512], out[1 << 17], err[1 << 14];

/* Runs nftrace with args (no shell), its output in out and err: the exit status. */
static int nft(const char *const args[])
{
	return nf_test_nftrace_run(args, out, sizeof(out), err, sizeof(err));
}

#define MAX_LOGS 16

/* What one log should have (truth) or has (check), summed over its epochs. */
struct log_counts {
	uint64_t adapter, hwqueue, log_type;
	uint64_t written, entries, lost, zero, repeated, backwards;
	uint64_t epochs;                                /* TruthLog events / check's epochs */
	uint64_t ops, ops_lost, ops_zero, ops_repeated; /* from TruthOp */
};

struct counts {
	struct log_counts log[MAX_LOGS];
	size_t n;
};

static struct log_counts *counts_log(struct counts *c, uint64_t adapter, uint64_t hwqueue,
				     uint64_t log_type)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->log[i].adapter == adapter && c->log[i].hwqueue == hwqueue &&
		    c->log[i].log_type == log_type)
			return &c->log[i];
	ck_assert_uint_lt(c->n, MAX_LOGS);
	memset(&c->log[c->n], 0, sizeof(c->log[0]));
	c->log[c->n].adapter = adapter;
	c->log[c->n].hwqueue = hwqueue;
	c->log[c->n].log_type = log_type;
	return &c->log[c->n++];
}

/* The simulator's truth, read from the session's truth stream. */
static int truth_event(void *ctx, const struct nf_event *ev)
{
	struct counts *c = ctx;
	struct log_counts *l;

	if (ev->id == NF_EV_TRUTH_LOG) {
		l = counts_log(c, ev->f[NFF_TRUTH_LOG_adapter], ev->f[NFF_TRUTH_LOG_hwqueue],
			       ev->f[NFF_TRUTH_LOG_log_type]);
		l->epochs++; /* one TruthLog per log epoch */
		l->written += ev->f[NFF_TRUTH_LOG_written];
		l->lost += ev->f[NFF_TRUTH_LOG_lost];
		l->zero += ev->f[NFF_TRUTH_LOG_zero_ts];
		l->repeated += ev->f[NFF_TRUTH_LOG_repeated_ts];
	} else if (ev->id == NF_EV_TRUTH_OP) {
		/* op 0 signal (signals log), 1 wait (waits log). */
		l = counts_log(c, ev->f[NFF_TRUTH_OP_adapter], ev->f[NFF_TRUTH_OP_hwqueue],
			       ev->f[NFF_TRUTH_OP_op] == 0 ? NF_LOG_SIGNALS : NF_LOG_WAITS);
		l->ops++;
		if (ev->f[NFF_TRUTH_OP_fate] == 1)
			l->ops_lost++;
		else if (ev->f[NFF_TRUTH_OP_ts_fault] == 1)
			l->ops_zero++;
		else if (ev->f[NFF_TRUTH_OP_ts_fault] == 2)
			l->ops_repeated++;
	}
	return 0;
}

static void read_truth(const char *dir, struct counts *c)
{
	struct nf_parser_callbacks cb = { c, truth_event, NULL, NULL };
	struct nf_parser *p;
	struct nf_error e;

	nf_error_clear(&e);
	memset(c, 0, sizeof(*c));
	ck_assert_msg(nf_parser_open(dir, &p, &e) == 0, "%s", e.msg);
	ck_assert(nf_parser_info(p)->ground_truth);
	ck_assert_msg(nf_parser_run(p, &cb, &e) == 0, "%s", e.msg);
	nf_parser_destroy(p);
}

/*
 * Runs `nftrace check --json DIR` and flattens the JSON with python3's json
 * module (which also proves it is valid JSON). Returns check's exit status.
 */
static int read_check(const char *dir, struct counts *c, char *verdict, size_t vlen)
{
	static const char flatten[] =
		"import json,sys\n"
		"d=json.load(open(sys.argv[1]))\n"
		"print(d['verdict'], d['illegal'])\n"
		"for q in d['queues']:\n"
		" for l in q['logs']:\n"
		"  print(q['adapter'], q['hwqueue'], {'waits':1,'signals':2}.get(l['log'],0), l['entries'],"
		" l['lost'], l['zero_timestamp'], l['repeated_timestamp'], l['backwards_timestamp'],"
		" l['epochs'])\n";
	char json[700], py[700];
	unsigned long long illegal;
	int st;

	snprintf(json, sizeof(json), "%s/check.json", tmp);
	snprintf(py, sizeof(py), "%s/flatten.py", tmp);
	FILE *f = fopen(py, "w");
	ck_assert_ptr_nonnull(f);
	fputs(flatten, f);
	ck_assert_int_eq(fclose(f), 0);
	st = nft(NF_TEST_ARGV("check", "--json", dir));
	ck_assert_msg(st == 0 || st == 1, "check died (%d): %.1500s", st, err);
	ck_assert_msg(strlen(out) < sizeof(out) - 1, "check --json outgrew the buffer");
	f = fopen(json, "w");
	ck_assert_ptr_nonnull(f);
	fputs(out, f);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_msg(nf_test_exec(NULL, NF_TEST_ARGV("python3", py, json), out, sizeof(out), err,
				   sizeof(err)) == 0,
		      "check --json is not valid JSON: %.1500s", err);
	memset(c, 0, sizeof(*c));
	char *line = out;
	ck_assert_int_eq(sscanf(line, "%31s %llu", verdict, &illegal), 2);
	(void)vlen;
	while ((line = strchr(line, '\n')) && line[1]) {
		unsigned long long a, q, t, en, lo, z, r, b, ep;
		struct log_counts *l;

		line++;
		ck_assert_int_eq(sscanf(line, "%llu %llu %llu %llu %llu %llu %llu %llu %llu", &a, &q,
					&t, &en, &lo, &z, &r, &b, &ep), 9);
		l = counts_log(c, a, q, t);
		l->entries = en;
		l->lost = lo;
		l->zero = z;
		l->repeated = r;
		l->backwards = b;
		l->epochs = ep;
	}
	return st;
}

static void record(const char *sample, const char *dir, unsigned seed)
{
	char s[16];

	snprintf(s, sizeof(s), "%u", seed);
	nf_test_record(sample, dir, NF_TEST_ARGV("--force", "--ground-truth", "--seed", s));
}

static void setup(void)
{
	nf_test_tmpdir(tmp, sizeof(tmp));
}

static void teardown(void)
{
	nf_test_rmtree(tmp);
}

/* ---- ground truth ---- */

static const char *const fault_samples[] = {
	"overrun", "lda-zero-timestamps", "repeated-timestamps", "log-recreated", "wraparound-32bit",
};
static const unsigned seeds[] = { 1, 7, 20261121 };

START_TEST(check_matches_ground_truth)
{
	const char *name = fault_samples[_i];
	uint64_t lost = 0, zero = 0, repeated = 0, epochs = 0;

	for (size_t s = 0; s < sizeof(seeds) / sizeof(seeds[0]); s++) {
		char sample[256], dir[700], verdict[32];
		struct counts truth, got;
		int st;

		snprintf(sample, sizeof(sample), "samples/%s.nfs", name);
		snprintf(dir, sizeof(dir), "%s/%s-%u", tmp, name, seeds[s]);
		record(sample, dir, seeds[s]);
		read_truth(dir, &truth);
		st = read_check(dir, &got, verdict, sizeof(verdict));
		/* Every fault sample is legal: lost, zero and repeated are what real logs do. */
		ck_assert_msg(st == 0, "%s seed %u: check exit %d (%s)", name, seeds[s], st, verdict);
		ck_assert_str_ne(verdict, "illegal");
		ck_assert_uint_gt(truth.n, 0);
		for (size_t i = 0; i < truth.n; i++) {
			const struct log_counts *t = &truth.log[i];
			const struct log_counts *g = counts_log(&got, t->adapter, t->hwqueue, t->log_type);

			ck_assert_msg(g->entries + g->lost == t->written && g->lost == t->lost &&
					      g->zero == t->zero && g->repeated == t->repeated &&
					      g->backwards == 0,
				      "%s seed %u queue 0x%" PRIx64 " log %" PRIu64
				      ": check says %" PRIu64 " read + %" PRIu64 " lost, %" PRIu64 " zero, %" PRIu64
				      " repeated, %" PRIu64 " backwards; truth: %" PRIu64 " written, %" PRIu64
				      " lost, %" PRIu64 " zero, %" PRIu64 " repeated",
				      name, seeds[s], t->hwqueue, t->log_type, g->entries, g->lost, g->zero,
				      g->repeated, g->backwards, t->written, t->lost, t->zero, t->repeated);
			/* log-recreated: every recreation is a new epoch, none an overrun. */
			ck_assert_msg(g->epochs == t->epochs, "%s seed %u queue 0x%" PRIx64 " log %" PRIu64
				      ": %" PRIu64 " epochs, truth %" PRIu64, name, seeds[s], t->hwqueue,
				      t->log_type, g->epochs, t->epochs);
			/* The per-operation truth tells the same story. */
			ck_assert_uint_eq(t->ops, t->written);
			ck_assert_uint_eq(t->ops_lost, t->lost);
			ck_assert_uint_eq(t->ops_zero, t->zero);
			ck_assert_uint_eq(t->ops_repeated, t->repeated);
			lost += t->lost;
			zero += t->zero;
			repeated += t->repeated;
			epochs = t->epochs > epochs ? t->epochs : epochs;
		}
		/* No log check reports that the truth does not know. */
		for (size_t i = 0; i < got.n; i++) {
			const struct log_counts *g = &got.log[i];
			bool known = false;

			for (size_t k = 0; k < truth.n; k++)
				known |= truth.log[k].adapter == g->adapter &&
					 truth.log[k].hwqueue == g->hwqueue &&
					 truth.log[k].log_type == g->log_type;
			ck_assert_msg(known || (g->entries == 0 && g->lost == 0),
				      "%s: check reports a log the truth has not", name);
		}
		nf_test_rmtree(dir);
	}
	/* Each sample shows the fault it is named after. */
	if (!strcmp(name, "overrun"))
		ck_assert_uint_gt(lost, 0);
	if (!strcmp(name, "lda-zero-timestamps"))
		ck_assert_uint_gt(zero, 0);
	if (!strcmp(name, "repeated-timestamps"))
		ck_assert_uint_gt(repeated, 0);
	if (!strcmp(name, "log-recreated"))
		ck_assert_uint_gt(epochs, 1);
}
END_TEST

START_TEST(check_text_summary)
{
	char dir[700];

	snprintf(dir, sizeof(dir), "%s/o", tmp);
	record("samples/overrun.nfs", dir, 3);
	int st = nft(NF_TEST_ARGV("check", dir));
	ck_assert_msg(st == 0, "exit %d: %s", st, err);
	ck_assert_str_eq(err, "");
	ck_assert_ptr_nonnull(strstr(out, "signals"));
	ck_assert_ptr_nonnull(strstr(out, "lost ("));
	ck_assert_ptr_nonnull(strstr(out, "first in stream events, packet "));
	ck_assert_ptr_nonnull(strstr(out, "verdict: legal anomalies only"));
	/* Usage errors exit 2. */
	ck_assert_int_eq(nft(NF_TEST_ARGV("check")), 2);
	ck_assert_int_eq(nft(NF_TEST_ARGV("check", "--bogus", dir)), 2);
	ck_assert_int_eq(nft(NF_TEST_ARGV("check", "--help")), 0);
	ck_assert_ptr_nonnull(strstr(out, "Illegal (exit 1)"));
}
END_TEST

/* ---- bad input ---- */

/* Exit 1, nothing on stdout, exactly one line on stderr naming the session. */
static void expect_one_line(const char *dir, const char *needle)
{
	/* timeout: a hang fails the test instead of stalling it (exit 124). */
	int st = nf_test_exec(NULL, NF_TEST_ARGV("timeout", "120", nf_test_nftrace(), "check", dir),
			      out, sizeof(out), err, sizeof(err));
	ck_assert_msg(st == 1, "%s: exit %d, stderr %.1500s", dir, st, err);
	ck_assert_msg(nf_test_count_lines(err) == 1, "not one line: %.1500s", err);
	ck_assert_msg(strstr(err, dir) != NULL, "the message does not name %s: %.1500s", dir, err);
	if (needle)
		ck_assert_msg(strstr(err, needle) != NULL, "'%s' not in: %.1500s", needle, err);
	ck_assert_msg(out[0] == '\0', "stdout on failure: %.500s", out);
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(data, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

static unsigned char *read_whole(const char *path, size_t *len)
{
	struct stat st;
	unsigned char *b;
	FILE *f;

	ck_assert_int_eq(stat(path, &st), 0);
	*len = (size_t)st.st_size;
	b = malloc(*len + 1);
	ck_assert_ptr_nonnull(b);
	f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fread(b, 1, *len, f), *len);
	fclose(f);
	return b;
}

/* ---- the library function behind `check`: nf_log_summary_read ---- */

/* Independent counts: the parser's own callbacks, summed here. */
struct indep {
	uint64_t entries, reads, total[NF_FIND_COUNT], illegal;
};

static int indep_event(void *ctx, const struct nf_event *ev)
{
	if (ev->id == NF_EV_LOG_READ)
		((struct indep *)ctx)->reads++;
	return 0;
}

static int indep_entry(void *ctx, const struct nf_decoded_entry *e)
{
	(void)e;
	((struct indep *)ctx)->entries++;
	return 0;
}

static int indep_finding(void *ctx, const struct nf_finding *f)
{
	struct indep *c = ctx;

	c->total[f->kind] += f->kind == NF_FIND_LOST ? f->count : 1;
	c->illegal += nf_finding_is_illegal(f->kind);
	return 0;
}

START_TEST(log_summary_matches_the_parser)
{
	static const char *const samples[] = { "overrun", "lda-zero-timestamps", "log-recreated" };
	char dir[700], src[300];

	for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
		struct nf_log_summary *sum = NULL;
		struct nf_parser *p = NULL;
		struct indep c = { 0 };
		struct nf_parser_callbacks cb = { &c, indep_event, indep_entry, indep_finding };
		struct nf_error e;
		uint64_t per_queue[NF_FIND_COUNT] = { 0 }, entries = 0;

		snprintf(dir, sizeof(dir), "%s/%s", tmp, samples[i]);
		snprintf(src, sizeof(src), "samples/%s.nfs", samples[i]);
		record(src, dir, 5);
		nf_error_clear(&e);
		ck_assert_int_eq(nf_parser_open(dir, &p, &e), 0);
		ck_assert_int_eq(nf_parser_run(p, &cb, &e), 0);
		nf_parser_destroy(p);

		ck_assert_int_eq(nf_log_summary_read(dir, &sum, &e), 0);
		ck_assert_ptr_nonnull(sum);
		ck_assert_uint_eq(sum->entries, c.entries);
		ck_assert_uint_eq(sum->reads, c.reads);
		ck_assert_uint_eq(sum->illegal, c.illegal);
		ck_assert_uint_gt(sum->stats.events, 0);
		ck_assert_ptr_null(sum->incomplete);
		ck_assert_uint_gt(sum->n_queues, 0);
		for (int k = 0; k < NF_FIND_COUNT; k++)
			ck_assert_uint_eq(sum->total[k], c.total[k]);
		/* Sorted by (adapter, hwqueue), no overflow bucket; the per-log
		 * counts add up to the totals. */
		for (size_t q = 0; q < sum->n_queues; q++) {
			const struct nf_queue_summary *qs = sum->queues[q];

			ck_assert(!qs->overflow);
			if (q)
				ck_assert(((uint64_t)sum->queues[q - 1]->adapter << 32 | sum->queues[q - 1]->hwqueue) <
					  ((uint64_t)qs->adapter << 32 | qs->hwqueue));
			for (int l = 0; l < NF_LOG_SUMMARY_LOGS; l++) {
				entries += qs->log[l].entries;
				for (int k = 0; k < NF_FIND_COUNT; k++)
					per_queue[k] += qs->log[l].count[k];
			}
		}
		ck_assert_uint_eq(entries, c.entries);
		for (int k = 0; k < NF_FIND_COUNT; k++)
			ck_assert_uint_eq(per_queue[k], c.total[k]);
		if (i == 0) /* overrun.nfs loses entries */
			ck_assert_uint_gt(sum->total[NF_FIND_LOST], 0);
		nf_log_summary_destroy(sum);
	}
	nf_log_summary_destroy(NULL);
}
END_TEST

START_TEST(log_summary_errors)
{
	struct nf_log_summary *sum = (struct nf_log_summary *)&sum;
	struct nf_error e;
	char dir[700];

	nf_error_clear(&e);
	snprintf(dir, sizeof(dir), "%s/missing", tmp);
	ck_assert_int_eq(nf_log_summary_read(dir, &sum, &e), NF_ENOENT);
	ck_assert_ptr_null(sum);
	ck_assert_msg(strstr(e.msg, "no such directory") != NULL, "%s", e.msg);
	snprintf(dir, sizeof(dir), "%s/empty", tmp);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	nf_error_clear(&e);
	ck_assert_int_eq(nf_log_summary_read(dir, &sum, &e), NF_EFORMAT);
	ck_assert_ptr_null(sum);
}
END_TEST

START_TEST(check_empty_and_missing_dir)
{
	char dir[700];

	snprintf(dir, sizeof(dir), "%s/empty", tmp);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	expect_one_line(dir, "not an nftrace session");
	snprintf(dir, sizeof(dir), "%s/missing", tmp);
	expect_one_line(dir, "no such directory");
}
END_TEST

START_TEST(check_truncated_files)
{
	char dir[700], path[800];
	unsigned char *b;
	size_t len;

	snprintf(dir, sizeof(dir), "%s/t", tmp);
	record("samples/overrun.nfs", dir, 1);
	snprintf(path, sizeof(path), "%s/events", dir);
	b = read_whole(path, &len);
	/* The stream cut in the middle of a packet, in its header, then empty. */
	const size_t cuts[] = { len / 2 + 13, 30, 3, 0 };
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		ck_assert_int_eq(truncate(path, (off_t)cuts[i]), 0);
		expect_one_line(dir, NULL);
	}
	write_file(path, b, len);
	free(b);
	/* The metadata cut in half, then empty. */
	snprintf(path, sizeof(path), "%s/metadata", dir);
	b = read_whole(path, &len);
	ck_assert_int_eq(truncate(path, (off_t)(len / 2)), 0);
	expect_one_line(dir, NULL);
	ck_assert_int_eq(truncate(path, 0), 0);
	expect_one_line(dir, NULL);
	free(b);
}
END_TEST

/* Bytes flipped all over the stream: a clean read (exit 0, or 1 with findings) or one line. */
START_TEST(check_flipped_bytes)
{
	char dir[700], path[800];
	unsigned char *orig;
	uint32_t rng = 12345;
	size_t len;
	int errors = 0;

	snprintf(dir, sizeof(dir), "%s/f", tmp);
	record("samples/overrun.nfs", dir, 2);
	snprintf(path, sizeof(path), "%s/events", dir);
	orig = read_whole(path, &len);
	for (int round = 0; round < 16; round++) {
		unsigned char *m = malloc(len);

		ck_assert_ptr_nonnull(m);
		memcpy(m, orig, len);
		for (int k = 0; k < 1 + round % 8; k++) {
			rng = rng * 1103515245u + 12345u;
			m[(rng >> 8) % len] ^= (unsigned char)(1u + (rng >> 24) % 255u);
		}
		write_file(path, m, len);
		free(m);
		int st = nf_test_exec(NULL, NF_TEST_ARGV("timeout", "60", nf_test_nftrace(),
				      "check", dir), out, sizeof(out), err, sizeof(err));
		ck_assert_msg(st == 0 || st == 1, "round %d: exit %d: %.1500s", round, st, err);
		ck_assert_msg(nf_test_count_lines(err) <= 1, "round %d: %.1500s", round, err);
		if (err[0]) {
			errors++;
			ck_assert_int_eq(st, 1);
			ck_assert_ptr_nonnull(strstr(err, dir));
		} else {
			ck_assert_ptr_nonnull(strstr(out, "verdict: "));
			/* Illegal findings, hangs and deadlocks, and only those, make it exit 1. */
			ck_assert_int_eq(st == 1, strstr(out, "verdict: illegal") != NULL ||
							  strstr(out, "verdict: deadlock") != NULL ||
							  strstr(out, "verdict: hang") != NULL);
		}
	}
	ck_assert_int_gt(errors, 0);
	free(orig);
}
END_TEST

/* A valid CTF trace written by another tool (LTTng-like metadata). */
START_TEST(check_other_tool)
{
	char dir[700], path[800];
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
		"event { name = \"sched_switch\"; id = 0; stream_id = 0; fields := struct { uint32_t x; }; };\n";
	unsigned char stream[4 + 4 + 4 + 8 + 4];
	uint32_t magic = 0xc1fc1fc1u, zero = 0, x = 5;
	uint64_t ts = 1;

	snprintf(dir, sizeof(dir), "%s/lttng", tmp);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/metadata", dir);
	write_file(path, meta, strlen(meta));
	memcpy(stream, &magic, 4);
	memcpy(stream + 4, &zero, 4);
	memcpy(stream + 8, &zero, 4);
	memcpy(stream + 12, &ts, 8);
	memcpy(stream + 20, &x, 4);
	snprintf(path, sizeof(path), "%s/channel0_0", dir);
	write_file(path, stream, sizeof(stream));
	/* babeltrace2 reads it; we say it is not ours. */
	expect_one_line(dir, "not an nftrace session");
	/* Our stream file next to foreign metadata. */
	snprintf(dir, sizeof(dir), "%s/mixed", tmp);
	record("samples/overrun.nfs", dir, 1);
	snprintf(path, sizeof(path), "%s/metadata", dir);
	write_file(path, meta, strlen(meta));
	expect_one_line(dir, NULL);
}
END_TEST

/* The first packet's context claims 2^63-bit packet and content sizes. */
START_TEST(check_packet_claims_2_63)
{
	char dir[700], path[800];
	unsigned char *b;
	size_t len;
	uint64_t huge = 1ull << 63;

	snprintf(dir, sizeof(dir), "%s/p", tmp);
	record("samples/overrun.nfs", dir, 1);
	snprintf(path, sizeof(path), "%s/events", dir);
	b = read_whole(path, &len);
	/* packet.header: magic, uuid[16], stream_id = 24 bytes; context: begin, end,
	 * content_size, packet_size. */
	ck_assert_uint_gt(len, 56);
	memcpy(b + 40, &huge, 8);
	memcpy(b + 48, &huge, 8);
	write_file(path, b, len);
	expect_one_line(dir, NULL);
	/* Content larger than the packet. */
	memcpy(b + 48, &(uint64_t){ 4096 }, 8);
	write_file(path, b, len);
	expect_one_line(dir, NULL);
	free(b);
}
END_TEST

/* ---- sessions written by hand with the CTF writer ---- */

static const struct nf_ctf_env_entry test_env[] = {
	{ "tool_version", false, 0, "test" },
	{ "schema_version", true, NF_SCHEMA_VERSION, NULL },
	{ "cpu_frequency", true, 10000000, NULL },
};

static struct nf_log_entry hand_entries[4];

static void write_hand_session(const char *dir, const struct nf_event *evs, size_t n)
{
	struct nf_ctf_writer_options o = {
		.cpu_frequency = 10000000, .env = test_env,
		.n_env = sizeof(test_env) / sizeof(test_env[0]),
	};
	struct nf_ctf_writer *w;
	struct nf_error e;

	nf_error_clear(&e);
	ck_assert_msg(nf_ctf_writer_create(dir, &o, &w, &e) == 0, "%s", e.msg);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(nf_ctf_writer_emit(w, &evs[i]), 0);
	ck_assert_msg(nf_ctf_writer_close(w, &e) == 0, "%s", e.msg);
}

/* Fence 0x40 open, waits log of queue 3 with 4 entries, then one read. */
static size_t hand_events(struct nf_event *ev, uint64_t header, uint64_t capacity, uint32_t count)
{
	size_t n = 0;

	memset(ev, 0, 3 * sizeof(*ev));
	ev[n].id = NF_EV_FENCE_START;
	ev[n].ts = 10;
	ev[n].f[NFF_FENCE_START_fence] = 0x40;
	n++;
	ev[n].id = NF_EV_SET_LOG_BUFFER;
	ev[n].ts = 20;
	ev[n].f[NFF_SET_LOG_BUFFER_hwqueue] = 3;
	ev[n].f[NFF_SET_LOG_BUFFER_log_type] = NF_LOG_WAITS;
	ev[n].f[NFF_SET_LOG_BUFFER_capacity] = 4;
	n++;
	ev[n].id = NF_EV_LOG_READ;
	ev[n].ts = 30;
	ev[n].f[NFF_LOG_READ_hwqueue] = 3;
	ev[n].f[NFF_LOG_READ_log_type] = NF_LOG_WAITS;
	ev[n].f[NFF_LOG_READ_header] = header;
	ev[n].f[NFF_LOG_READ_capacity] = capacity;
	ev[n].f[NFF_LOG_READ_entry_count] = count;
	ev[n].entries = hand_entries;
	n++;
	for (uint32_t i = 0; i < 4; i++) {
		memset(&hand_entries[i], 0, sizeof(hand_entries[i]));
		hand_entries[i].fence_value = 0x1122334455667700ull + i;
		hand_entries[i].hnative_fence = 0x40;
		hand_entries[i].operation_type = NF_LOG_OP_WAIT_UNBLOCKED;
		hand_entries[i].fence_end_gpu_timestamp = 1000 + 10 * i;
	}
	return n;
}

/* Runs check on a hand session; expects exit 1 with `kind` among the findings. */
static void expect_illegal(const char *dir, const char *kind)
{
	int st = nft(NF_TEST_ARGV("check", dir));
	ck_assert_msg(st == 1, "exit %d: %.1500s %.1500s", st, out, err);
	ck_assert_str_eq(err, "");
	ck_assert_ptr_nonnull(strstr(out, "verdict: illegal"));
	ck_assert_msg(strstr(out, kind) != NULL, "no %s in %.2000s", kind, out);
	/* Where: stream, packet (the only one: packet_seq_num 0), event, entry. */
	ck_assert_msg(strstr(out, "events packet 0 event #2 entry") != NULL, "%.2000s", out);
	st = nft(NF_TEST_ARGV("check", "--json", dir));
	ck_assert_msg(st == 1, "exit %d: %.1500s", st, err);
	st = nf_test_json_tool(out, out, sizeof(out), err, sizeof(err));
	ck_assert_msg(st == 0, "invalid JSON: %.1500s", err);
	ck_assert_ptr_nonnull(strstr(out, "\"verdict\": \"illegal\""));
	ck_assert_ptr_nonnull(strstr(out, kind));
}

START_TEST(check_whole_and_backwards)
{
	struct nf_event ev[3];
	char dir[700];
	size_t n;

	/* Whole: 4 entries written, 4 read (header: wrap 1, index 0). */
	snprintf(dir, sizeof(dir), "%s/whole", tmp);
	n = hand_events(ev, 1ull << 32, 4, 4);
	write_hand_session(dir, ev, n);
	int st = nft(NF_TEST_ARGV("check", dir));
	ck_assert_msg(st == 0, "exit %d: %.1500s", st, err);
	ck_assert_ptr_nonnull(strstr(out, "verdict: whole (4 entries, none lost)"));

	/* The third entry's end timestamp goes back in time: never legal. */
	snprintf(dir, sizeof(dir), "%s/backwards", tmp);
	n = hand_events(ev, 1ull << 32, 4, 4);
	hand_entries[2].fence_end_gpu_timestamp = 5;
	write_hand_session(dir, ev, n);
	expect_illegal(dir, "backwards_timestamp");

	/* An operation type that does not belong in a waits log. */
	snprintf(dir, sizeof(dir), "%s/badop", tmp);
	n = hand_events(ev, 1ull << 32, 4, 4);
	hand_entries[1].operation_type = NF_LOG_OP_SIGNAL_EXECUTED;
	write_hand_session(dir, ev, n);
	expect_illegal(dir, "bad_operation");
}
END_TEST


/* A calibration pair beyond the clock's range is left out of the timeline (an
 * out_of_range anomaly): the session is not whole, whatever its logs say. */
START_TEST(check_out_of_range_pair)
{
	struct nf_event ev[4];
	char dir[700];
	size_t n;
	int st;

	snprintf(dir, sizeof(dir), "%s/oor", tmp);
	n = hand_events(ev, 1ull << 32, 4, 4);
	memset(&ev[n], 0, sizeof(ev[n]));
	ev[n].id = NF_EV_CALIBRATE_GPU_CLOCK;
	ev[n].ts = 40;
	ev[n].f[NFF_CALIBRATE_GPU_CLOCK_gpu_clock] = 1ull << 63;
	ev[n].f[NFF_CALIBRATE_GPU_CLOCK_gpu_frequency] = 1000000;
	ev[n].f[NFF_CALIBRATE_GPU_CLOCK_cpu_clock] = 40;
	n++;
	write_hand_session(dir, ev, n);
	st = nft(NF_TEST_ARGV("check", dir));
	ck_assert_msg(st == 0, "exit %d: %.1500s", st, err);
	ck_assert_msg(strstr(out, "verdict: legal anomalies only") && strstr(out, "1 left out of range of a clock"),
		      "%.2000s", out);
	st = nft(NF_TEST_ARGV("check", "--json", dir));
	ck_assert_msg(st == 0, "exit %d: %.1500s", st, err);
	ck_assert_msg(strstr(out, "\"verdict\": \"legal_anomalies\"") && strstr(out, "\"out_of_range\": 1"), "%.2000s", out);
	st = nf_test_json_tool(out, out, sizeof(out), err, sizeof(err));
	ck_assert_msg(st == 0, "invalid JSON: %.1500s", err);
}
END_TEST

/* A log header claiming 2^63 entries (capacity) or all-ones index and wraparound. */
START_TEST(check_header_claims_2_63)
{
	struct nf_event ev[3];
	char dir[700];
	size_t n;

	snprintf(dir, sizeof(dir), "%s/cap", tmp);
	n = hand_events(ev, 1ull << 32, 1ull << 63, 4);
	write_hand_session(dir, ev, n);
	expect_illegal(dir, "out_of_range");

	snprintf(dir, sizeof(dir), "%s/hdr", tmp);
	n = hand_events(ev, UINT64_MAX, 4, 4);
	write_hand_session(dir, ev, n);
	expect_illegal(dir, "out_of_range");

	/* Index in range, WraparoundCount 2^32-1: 2^34 entries claimed, 4 read. */
	snprintf(dir, sizeof(dir), "%s/wrap", tmp);
	n = hand_events(ev, 0xffffffffull << 32, 4, 4);
	write_hand_session(dir, ev, n);
	int st = nft(NF_TEST_ARGV("check", "--json", dir));
	ck_assert_msg(st == 0, "exit %d: %.1500s", st, err);
	st = nf_test_json_tool(out, out, sizeof(out), err, sizeof(err));
	ck_assert_msg(st == 0, "invalid JSON: %.1500s", err);
	/* 4 * (2^32 - 1) written, 4 read: the rest was lost, exactly. */
	char want[64];
	snprintf(want, sizeof(want), "\"lost\": %" PRIu64, (uint64_t)(4 * 0xffffffffull - 4));
	ck_assert_msg(strstr(out, want) != NULL, "no %s in %.3000s", want, out);
}
END_TEST

/* The entry count of a read patched to 2^32-1 with four entries behind it. */
START_TEST(check_entry_count_claims_2_32)
{
	struct nf_event ev[3];
	char dir[700], path[800];
	unsigned char *b, *hit = NULL;
	uint64_t pattern = 0x1122334455667700ull;
	uint32_t huge = UINT32_MAX;
	size_t len, n;

	snprintf(dir, sizeof(dir), "%s/count", tmp);
	n = hand_events(ev, 1ull << 32, 4, 4);
	write_hand_session(dir, ev, n);
	snprintf(path, sizeof(path), "%s/events", dir);
	b = read_whole(path, &len);
	for (size_t i = 4; i + 8 <= len && !hit; i++)
		if (!memcmp(b + i, &pattern, 8))
			hit = b + i;
	ck_assert_ptr_nonnull(hit);
	/* entry_count (uint32) sits right before the 8-aligned entries. */
	ck_assert_uint_eq(*(uint32_t *)(void *)(hit - 4), 4);
	memcpy(hit - 4, &huge, 4);
	write_file(path, b, len);
	free(b);
	/* Refused before anything is sized from it (babeltrace2 would crash on it). */
	expect_one_line(dir, "claims 4294967295 elements");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("check");
	TCase *tc = tcase_create("check");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, check_matches_ground_truth, 0,
			    (int)(sizeof(fault_samples) / sizeof(fault_samples[0])));
	tcase_add_test(tc, check_text_summary);
	tcase_add_test(tc, check_empty_and_missing_dir);
	tcase_add_test(tc, log_summary_matches_the_parser);
	tcase_add_test(tc, log_summary_errors);
	tcase_add_test(tc, check_truncated_files);
	tcase_add_test(tc, check_flipped_bytes);
	tcase_add_test(tc, check_other_tool);
	tcase_add_test(tc, check_packet_claims_2_63);
	tcase_add_test(tc, check_whole_and_backwards);
	tcase_add_test(tc, check_out_of_range_pair);
	tcase_add_test(tc, check_header_claims_2_63);
	tcase_add_test(tc, check_entry_count_claims_2_32);
	suite_add_tcase(s, tc);
	return nf_test_main(s);
}
