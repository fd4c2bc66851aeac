/*
 * Tests for parser/logreplay.c: synthetic SetNativeFenceLogBuffer, fence and
 * NativeFenceLogRead events fed straight into the log replay, table-driven,
 * checking exact lost counts, epochs, timestamp classes and every kind of
 * malformed read.
 */
#include "nf_test.h"
#include "test_parser.h"

#include "contract/parser.h"

/* The tables below leave trailing fields zero on purpose. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#define FENCE 0x40u
#define CAP 8u

/* What the callbacks saw. */
struct seen {
	uint64_t kinds[NF_FIND_COUNT + 1];
	uint64_t lost_total;
	struct nf_finding first_lost;
	struct nf_finding last;
	uint64_t entries;
	uint64_t seqs[256];
	uint64_t ts_class[NF_FIND_COUNT + 1];
	int stop_finding; /* non-zero: the finding callback returns it */
};

static int on_finding(void *ctx, const struct nf_finding *f)
{
	struct seen *s = ctx;

	ck_assert_int_lt(f->kind, NF_FIND_COUNT);
	ck_assert_ptr_nonnull(f->stream);
	ck_assert_str_eq(f->stream, "events");
	ck_assert_uint_gt(strlen(f->detail), 0);
	ck_assert_ptr_null(strchr(f->detail, '\n'));
	s->kinds[f->kind]++;
	if (f->kind == NF_FIND_LOST) {
		if (s->kinds[NF_FIND_LOST] == 1)
			s->first_lost = *f;
		s->lost_total += f->count;
	} else {
		ck_assert_uint_eq(f->count, 1);
	}
	s->last = *f;
	return s->stop_finding;
}

static int on_entry(void *ctx, const struct nf_decoded_entry *e)
{
	struct seen *s = ctx;

	if (s->entries < 256)
		s->seqs[s->entries] = e->seq;
	s->entries++;
	s->ts_class[e->ts_class]++;
	return 0;
}

/* CPU time of the events the helpers make; the table runner advances it. */
static uint64_t now;

static struct nf_logreplay *replay_new(struct seen *s)
{
	struct nf_parser_callbacks cb = { s, NULL, on_entry, on_finding };
	struct nf_logreplay *r;

	memset(s, 0, sizeof(*s));
	now = 1;
	r = nf_logreplay_create(&cb);
	ck_assert_ptr_nonnull(r);
	return r;
}

static int feed(struct nf_logreplay *r, const struct nf_event *ev)
{
	struct nf_error err;
	int rc;

	nf_error_clear(&err);
	rc = nf_logreplay_feed(r, ev, "events", 7, &err);
	if (rc)
		ck_assert_int_eq(err.code, rc);
	return rc;
}

static void fence_event(struct nf_logreplay *r, uint32_t id, uint32_t adapter, uint32_t fence)
{
	struct nf_event ev = { .id = id, .ts = now };

	if (id == NF_EV_FENCE_START) {
		ev.f[NFF_FENCE_START_adapter] = adapter;
		ev.f[NFF_FENCE_START_fence] = fence;
	} else {
		ev.f[NFF_FENCE_STOP_adapter] = adapter;
		ev.f[NFF_FENCE_STOP_fence] = fence;
	}
	ck_assert_int_eq(feed(r, &ev), 0);
}

static void set_log(struct nf_logreplay *r, uint32_t q, uint32_t type, uint32_t epoch, uint64_t cap)
{
	struct nf_event ev = { .id = NF_EV_SET_LOG_BUFFER, .ts = now };

	ev.f[NFF_SET_LOG_BUFFER_adapter] = 0;
	ev.f[NFF_SET_LOG_BUFFER_hwqueue] = q;
	ev.f[NFF_SET_LOG_BUFFER_log_type] = type;
	ev.f[NFF_SET_LOG_BUFFER_epoch] = epoch;
	ev.f[NFF_SET_LOG_BUFFER_capacity] = cap;
	ck_assert_int_eq(feed(r, &ev), 0);
}

/* One step of a table case. */
struct step {
	char op;            /* 'S' set log, 'R' read, 'F' open fence, 'f' close fence */
	uint32_t epoch;
	uint64_t header;    /* wrap << 32 | index */
	uint64_t cap;
	uint32_t first_slot, count;
	uint64_t ts[8];     /* end timestamps of the entries (count <= 8 uses these) */
	uint64_t ts0;       /* else entry i gets ts0 + 10 i */
	uint32_t fence;     /* 0: FENCE */
	uint32_t bad_op;    /* 1: the wrong OperationType */
};

#define HDR(wrap, index) (((uint64_t)(wrap) << 32) | (index))

static int read_log(struct nf_logreplay *r, uint32_t type, const struct step *st)
{
	struct nf_event ev = { .id = NF_EV_LOG_READ, .ts = now };
	struct nf_log_entry *e = calloc(st->count ? st->count : 1, sizeof(*e));
	int rc;

	ck_assert_ptr_nonnull(e);
	for (uint32_t i = 0; i < st->count; i++) {
		e[i].hnative_fence = st->fence ? st->fence : FENCE;
		e[i].operation_type = (type == NF_LOG_WAITS) ^ st->bad_op;
		e[i].fence_value = i + 1;
		e[i].fence_end_gpu_timestamp = st->ts0 ? st->ts0 + 10u * i : st->ts[i];
	}
	ev.f[NFF_LOG_READ_adapter] = 0;
	ev.f[NFF_LOG_READ_hwqueue] = 3;
	ev.f[NFF_LOG_READ_log_type] = type;
	ev.f[NFF_LOG_READ_epoch] = st->epoch;
	ev.f[NFF_LOG_READ_header] = st->header;
	ev.f[NFF_LOG_READ_capacity] = st->cap;
	ev.f[NFF_LOG_READ_first_slot] = st->first_slot;
	ev.f[NFF_LOG_READ_entry_count] = st->count;
	ev.entries = e;
	rc = feed(r, &ev);
	free(e);
	return rc;
}

struct replay_case {
	const char *name;
	uint32_t log_type;
	struct step steps[8];
	/* expectations */
	uint64_t kinds[NF_FIND_COUNT];
	uint64_t lost;
	uint64_t lost_first_seq, lost_prev_ts, lost_next_ts;
	uint64_t entries;
	uint64_t first_seq, last_seq; /* of the delivered entries, when any */
};

#define W NF_LOG_WAITS
#define SG NF_LOG_SIGNALS
#define K(kind, n) [NF_FIND_##kind] = (n)

static const struct replay_case replay_cases[] = {
	{ "no loss across a wrap", W,
	  { { 'S', 0, 0, CAP },
	    { 'R', 0, HDR(0, 3), CAP, 0, 3, .ts0 = 100 },
	    { 'R', 0, HDR(0, 7), CAP, 3, 4, .ts0 = 200 },
	    { 'R', 0, HDR(1, 2), CAP, 7, 3, .ts0 = 300 } },
	  { K(NEW_EPOCH, 1) }, 0, 0, 0, 0, 10, 0, 9 },
	{ "exactly N new entries is no loss", SG,
	  { { 'S', 0, 0, CAP }, { 'R', 0, HDR(1, 0), CAP, 0, 8, .ts0 = 100 } },
	  { K(NEW_EPOCH, 1) }, 0, 0, 0, 0, 8, 0, 7 },
	{ "overrun by two", W,
	  { { 'S', 0, 0, CAP },
	    { 'R', 0, HDR(0, 3), CAP, 0, 3, .ts0 = 100 },
	    { 'R', 0, HDR(1, 5), CAP, 5, 8, .ts0 = 500 } },
	  { K(NEW_EPOCH, 1), K(LOST, 1) }, 2, 3, 120, 500, 11, 0, 12 },
	{ "overrun by several multiples of N", SG,
	  { { 'S', 0, 0, CAP },
	    { 'R', 0, HDR(0, 1), CAP, 0, 1, .ts0 = 100 },
	    { 'R', 0, HDR(5, 3), CAP, 3, 8, .ts0 = 900 } },
	  { K(NEW_EPOCH, 1), K(LOST, 1) }, 34, 1, 100, 900, 9, 0, 42 },
	{ "overrun on the first read", W,
	  { { 'S', 0, 0, CAP }, { 'R', 0, HDR(2, 0), CAP, 0, 8, .ts0 = 100 } },
	  { K(NEW_EPOCH, 1), K(LOST, 1) }, 8, 0, 0, 100, 8, 8, 15 },
	{ "recreated log is a new epoch, not an overrun", W,
	  { { 'S', 0, 0, CAP },
	    { 'R', 0, HDR(0, 6), CAP, 0, 6, .ts0 = 100 },
	    { 'S', 1, 0, CAP },
	    { 'R', 1, HDR(0, 2), CAP, 0, 2, .ts0 = 50 } },
	  { K(NEW_EPOCH, 2) }, 0, 0, 0, 0, 8, 0, 1 },
	{ "read from a later epoch without SetNativeFenceLogBuffer", W,
	  { { 'S', 0, 0, CAP },
	    { 'R', 0, HDR(0, 6), CAP, 0, 6, .ts0 = 100 },
	    { 'R', 1, HDR(0, 2), CAP, 0, 2, .ts0 = 500 } },
	  { K(NEW_EPOCH, 2) }, 0, 0, 0, 0, 8, 0, 1 },
	{ "read from an older epoch", W,
	  { { 'S', 1, 0, CAP }, { 'R', 0, HDR(0, 2), CAP, 0, 2, .ts0 = 500 } },
	  { K(NEW_EPOCH, 1), K(CORRUPT, 1) }, 0, 0, 0, 0, 2, 0, 1 },
	{ "log older than the session (no SetNativeFenceLogBuffer)", SG,
	  { { 'R', 0, HDR(0, 2), CAP, 0, 2, .ts0 = 500 } },
	  { [NF_FIND_NEW_EPOCH] = 0 }, 0, 0, 0, 0, 2, 0, 1 },
	{ "header went backwards", W,
	  { { 'S', 0, 0, CAP },
	    { 'R', 0, HDR(0, 5), CAP, 0, 5, .ts0 = 100 },
	    { 'R', 0, HDR(0, 3), CAP, 3, 0 },
	    { 'R', 0, HDR(0, 4), CAP, 3, 1, .ts0 = 900 } },
	  { K(NEW_EPOCH, 1), K(CORRUPT, 1) }, 0, 0, 0, 0, 6, 0, 3 },
	{ "wrap count went backwards", W,
	  { { 'S', 0, 0, CAP },
	    { 'R', 0, HDR(2, 0), CAP, 0, 8, .ts0 = 100 },
	    { 'R', 0, HDR(1, 7), CAP, 7, 0 } },
	  { K(NEW_EPOCH, 1), K(LOST, 1), K(CORRUPT, 1) }, 8, 0, 0, 100, 8, 8, 15 },
	{ "zero timestamp is legal and skipped", W,
	  { { 'S', 0, 0, CAP }, { 'R', 0, HDR(0, 4), CAP, 0, 4, { 100, 0, 200, 300 } } },
	  { K(NEW_EPOCH, 1), K(ZERO_TS, 1) }, 0, 0, 0, 0, 4, 0, 3 },
	{ "repeated timestamp is legal", SG,
	  { { 'S', 0, 0, CAP }, { 'R', 0, HDR(0, 3), CAP, 0, 3, { 100, 100, 200 } } },
	  { K(NEW_EPOCH, 1), K(REPEATED_TS, 1) }, 0, 0, 0, 0, 3, 0, 2 },
	{ "repeated across a zero entry", SG,
	  { { 'S', 0, 0, CAP }, { 'R', 0, HDR(0, 3), CAP, 0, 3, { 100, 0, 100 } } },
	  { K(NEW_EPOCH, 1), K(ZERO_TS, 1), K(REPEATED_TS, 1) }, 0, 0, 0, 0, 3, 0, 2 },
	{ "backwards timestamp", W,
	  { { 'S', 0, 0, CAP }, { 'R', 0, HDR(0, 3), CAP, 0, 3, { 100, 200, 150 } } },
	  { K(NEW_EPOCH, 1), K(BACKWARDS_TS, 1) }, 0, 0, 0, 0, 3, 0, 2 },
	{ "backwards across reads and a zero entry", W,
	  { { 'S', 0, 0, CAP },
	    { 'R', 0, HDR(0, 2), CAP, 0, 2, { 100, 200 } },
	    { 'R', 0, HDR(0, 4), CAP, 2, 2, { 0, 150 } } },
	  { K(NEW_EPOCH, 1), K(ZERO_TS, 1), K(BACKWARDS_TS, 1) }, 0, 0, 0, 0, 4, 0, 3 },
	{ "unknown fence", W,
	  { { 'S', 0, 0, CAP }, { 'R', 0, HDR(0, 2), CAP, 0, 2, .ts0 = 100, .fence = 0x99 } },
	  { K(NEW_EPOCH, 1), K(UNKNOWN_FENCE, 2) }, 0, 0, 0, 0, 2, 0, 1 },
	{ "fence closed after the entry was written, before the read", W,
	  { { 'S', 0, 0, CAP }, { 'f' }, { 'R', 0, HDR(0, 1), CAP, 0, 1, .ts0 = 100 } },
	  { K(NEW_EPOCH, 1) }, 0, 0, 0, 0, 1, 0, 0 },
	{ "fence closed before the previous read, named after it", W,
	  { { 'S', 0, 0, CAP },
	    { 'f' },
	    { 'R', 0, HDR(0, 1), CAP, 0, 1, .ts0 = 100 },
	    { 'R', 0, HDR(0, 2), CAP, 1, 1, .ts0 = 200 } },
	  { K(NEW_EPOCH, 1), K(UNKNOWN_FENCE, 1) }, 0, 0, 0, 0, 2, 0, 1 },
	{ "fence closed before the log was set", W,
	  { { 'f' }, { 'S', 0, 0, CAP }, { 'R', 0, HDR(0, 1), CAP, 0, 1, .ts0 = 100 } },
	  { K(NEW_EPOCH, 1), K(UNKNOWN_FENCE, 1) }, 0, 0, 0, 0, 1, 0, 0 },
	{ "fence opened twice stays known after one close", W,
	  { { 'S', 0, 0, CAP }, { 'F' }, { 'f' }, { 'R', 0, HDR(0, 1), CAP, 0, 1, .ts0 = 100 } },
	  { K(NEW_EPOCH, 1) }, 0, 0, 0, 0, 1, 0, 0 },
	{ "wait operation in a signals log", SG,
	  { { 'S', 0, 0, CAP }, { 'R', 0, HDR(0, 1), CAP, 0, 1, .ts0 = 100, .bad_op = 1 } },
	  { K(NEW_EPOCH, 1), K(BAD_OPERATION, 1) }, 0, 0, 0, 0, 1, 0, 0 },
	{ "signal operation in a waits log", W,
	  { { 'S', 0, 0, CAP }, { 'R', 0, HDR(0, 2), CAP, 0, 2, .ts0 = 100, .bad_op = 1 } },
	  { K(NEW_EPOCH, 1), K(BAD_OPERATION, 2) }, 0, 0, 0, 0, 2, 0, 1 },
	{ "capacity zero", W,
	  { { 'R', 0, HDR(0, 0), 0, 0, 0 } },
	  { K(OUT_OF_RANGE, 1) }, 0, 0, 0, 0, 0, 0, 0 },
	{ "header claiming 2^63 entries", W,
	  { { 'S', 0, 0, CAP }, { 'R', 0, HDR(0, 0), 1ull << 63, 0, 0 } },
	  { K(NEW_EPOCH, 1), K(OUT_OF_RANGE, 1) }, 0, 0, 0, 0, 0, 0, 0 },
	{ "SetNativeFenceLogBuffer with an absurd capacity", W,
	  { { 'S', 0, 0, (1u << 20) + 1 } },
	  { K(OUT_OF_RANGE, 1) }, 0, 0, 0, 0, 0, 0, 0 },
	{ "index at capacity", SG,
	  { { 'S', 0, 0, CAP }, { 'R', 0, HDR(0, 8), CAP, 0, 0 } },
	  { K(NEW_EPOCH, 1), K(OUT_OF_RANGE, 1) }, 0, 0, 0, 0, 0, 0, 0 },
	{ "index far beyond capacity", SG,
	  { { 'S', 0, 0, CAP }, { 'R', 0, HDR(0, 0xffffffffu), CAP, 0, 0 } },
	  { K(NEW_EPOCH, 1), K(OUT_OF_RANGE, 1) }, 0, 0, 0, 0, 0, 0, 0 },
	{ "first slot out of range", W,
	  { { 'S', 0, 0, CAP }, { 'R', 0, HDR(0, 1), CAP, 9, 1, .ts0 = 100 } },
	  { K(NEW_EPOCH, 1), K(OUT_OF_RANGE, 1) }, 0, 0, 0, 0, 0, 0, 0 },
	{ "first slot not where the new entries start", W,
	  { { 'S', 0, 0, CAP }, { 'R', 0, HDR(0, 2), CAP, 1, 2, .ts0 = 100 } },
	  { K(NEW_EPOCH, 1), K(CORRUPT, 1) }, 0, 0, 0, 0, 0, 0, 0 },
	{ "fewer entries than the header says", W,
	  { { 'S', 0, 0, CAP },
	    { 'R', 0, HDR(0, 3), CAP, 0, 2, .ts0 = 100 },
	    { 'R', 0, HDR(0, 4), CAP, 3, 1, .ts0 = 200 } },
	  { K(NEW_EPOCH, 1), K(CORRUPT, 1) }, 0, 0, 0, 0, 1, 3, 3 },
	{ "more entries than the header says", SG,
	  { { 'S', 0, 0, CAP }, { 'R', 0, HDR(0, 1), CAP, 0, 2, .ts0 = 100 } },
	  { K(NEW_EPOCH, 1), K(CORRUPT, 1) }, 0, 0, 0, 0, 0, 0, 0 },
	{ "overrun with a bad entry count still counts the loss", W,
	  { { 'S', 0, 0, CAP }, { 'R', 0, HDR(1, 4), CAP, 4, 3, .ts0 = 100 } },
	  { K(NEW_EPOCH, 1), K(LOST, 1), K(CORRUPT, 1) }, 4, 0, 0, 0, 0, 0, 0 },
	{ "capacity changed within an epoch", W,
	  { { 'S', 0, 0, CAP },
	    { 'R', 0, HDR(0, 2), CAP, 0, 2, .ts0 = 100 },
	    { 'R', 0, HDR(0, 5), 16, 2, 3, .ts0 = 200 },
	    { 'R', 0, HDR(0, 7), 16, 5, 2, .ts0 = 300 } },
	  { K(NEW_EPOCH, 1), K(CORRUPT, 1) }, 0, 0, 0, 0, 4, 0, 6 },
	{ "log type neither waits nor signals", 3,
	  { { 'S', 0, 0, CAP }, { 'R', 0, HDR(0, 1), CAP, 0, 1, .ts0 = 100 } },
	  { K(OUT_OF_RANGE, 2) }, 0, 0, 0, 0, 0, 0, 0 },
};

START_TEST(replay_table)
{
	const struct replay_case *c = &replay_cases[_i];
	struct seen s;
	struct nf_logreplay *r = replay_new(&s);

	fence_event(r, NF_EV_FENCE_START, 0, FENCE);
	for (int i = 0; i < 8 && c->steps[i].op; i++) {
		const struct step *st = &c->steps[i];

		now = 1000u * (uint64_t)(i + 1);
		switch (st->op) {
		case 'S':
			set_log(r, 3, c->log_type, st->epoch, st->cap);
			break;
		case 'R':
			ck_assert_int_eq(read_log(r, c->log_type, st), 0);
			break;
		case 'F':
			fence_event(r, NF_EV_FENCE_START, 0, FENCE);
			break;
		case 'f':
			fence_event(r, NF_EV_FENCE_STOP, 0, FENCE);
			break;
		}
	}
	for (int k = 0; k < NF_FIND_COUNT; k++)
		ck_assert_msg(s.kinds[k] == c->kinds[k], "%s: %" PRIu64 " %s findings, expected %" PRIu64,
			      c->name, s.kinds[k], nf_finding_kind_name((enum nf_finding_kind)k),
			      c->kinds[k]);
	ck_assert_msg(s.lost_total == c->lost, "%s: lost %" PRIu64 ", expected %" PRIu64, c->name,
		      s.lost_total, c->lost);
	if (c->lost) {
		ck_assert_uint_eq(s.first_lost.first_seq, c->lost_first_seq);
		ck_assert_uint_eq(s.first_lost.prev_gpu_ts, c->lost_prev_ts);
		ck_assert_uint_eq(s.first_lost.next_gpu_ts, c->lost_next_ts);
		ck_assert_uint_gt(s.first_lost.cpu_ts, 1000);
		ck_assert_uint_eq(s.first_lost.event_index, 7);
		ck_assert_uint_eq(s.first_lost.hwqueue, 3);
	}
	ck_assert_msg(s.entries == c->entries, "%s: %" PRIu64 " entries, expected %" PRIu64,
		      c->name, s.entries, c->entries);
	if (c->entries) {
		ck_assert_uint_eq(s.seqs[0], c->first_seq);
		ck_assert_uint_eq(s.seqs[c->entries - 1], c->last_seq);
		/* Delivered positions only move forward within an epoch. */
	}
	ck_assert_uint_eq(s.ts_class[NF_FIND_ZERO_TS], c->kinds[NF_FIND_ZERO_TS]);
	ck_assert_uint_eq(s.ts_class[NF_FIND_REPEATED_TS], c->kinds[NF_FIND_REPEATED_TS]);
	ck_assert_uint_eq(s.ts_class[NF_FIND_BACKWARDS_TS], c->kinds[NF_FIND_BACKWARDS_TS]);
	nf_logreplay_destroy(r);
}
END_TEST

/* Every written entry is either delivered or counted lost, whatever the read pattern. */
START_TEST(replay_accounts_for_every_entry)
{
	struct seen s;
	struct nf_logreplay *r = replay_new(&s);
	uint64_t written = 0, cached = 0, cap = 64, ts = 1;
	uint32_t rng = 12345;

	fence_event(r, NF_EV_FENCE_START, 0, FENCE);
	set_log(r, 3, NF_LOG_SIGNALS, 0, cap);
	for (int i = 0; i < 2000; i++) {
		struct step st = { 'R', 0, 0, 0, 0, 0 };
		uint64_t fresh, expect;

		rng = rng * 1103515245u + 12345u;
		written += (rng >> 16) % 200; /* sometimes far more than the capacity */
		fresh = written - cached;
		expect = fresh < cap ? fresh : cap;
		st.header = HDR(written / cap, written % cap);
		st.cap = cap;
		st.first_slot = (uint32_t)((written - expect) % cap);
		st.count = (uint32_t)expect;
		st.ts0 = ts + (fresh - expect) * 10;
		ts += fresh * 10;
		ck_assert_int_eq(read_log(r, NF_LOG_SIGNALS, &st), 0);
		cached = written;
	}
	ck_assert_uint_eq(s.entries + s.lost_total, written);
	ck_assert_uint_eq(s.kinds[NF_FIND_CORRUPT] + s.kinds[NF_FIND_BACKWARDS_TS] +
				  s.kinds[NF_FIND_REPEATED_TS] + s.kinds[NF_FIND_UNKNOWN_FENCE],
			  0);
	nf_logreplay_destroy(r);
}
END_TEST

/* Open many handles, close every other one: the closed ones must read as unknown. */
START_TEST(replay_fence_set_churn)
{
	struct seen s;
	struct nf_logreplay *r = replay_new(&s);
	const uint32_t n = 4096;
	struct nf_event ev = { .id = NF_EV_LOG_READ, .ts = 5000 };
	struct nf_log_entry *e = calloc(n, sizeof(*e));

	ck_assert_ptr_nonnull(e);
	for (uint32_t h = 1; h <= n; h++)
		fence_event(r, NF_EV_FENCE_START, 1, h * 4);
	for (uint32_t h = 2; h <= n; h += 2)
		fence_event(r, NF_EV_FENCE_STOP, 1, h * 4);
	now = 2;
	{
		struct nf_event set = { .id = NF_EV_SET_LOG_BUFFER, .ts = now };

		set.f[NFF_SET_LOG_BUFFER_adapter] = 1;
		set.f[NFF_SET_LOG_BUFFER_hwqueue] = 9;
		set.f[NFF_SET_LOG_BUFFER_log_type] = NF_LOG_WAITS;
		set.f[NFF_SET_LOG_BUFFER_capacity] = n;
		ck_assert_int_eq(feed(r, &set), 0);
	}
	/* Closing a handle never opened, or twice, changes nothing. */
	fence_event(r, NF_EV_FENCE_STOP, 1, 2 * 4);
	fence_event(r, NF_EV_FENCE_STOP, 0, 1 * 4);
	for (uint32_t i = 0; i < n; i++) {
		e[i].hnative_fence = (i + 1) * 4;
		e[i].operation_type = NF_LOG_OP_WAIT_UNBLOCKED;
		e[i].fence_end_gpu_timestamp = 100 + i;
	}
	ev.f[NFF_LOG_READ_adapter] = 1;
	ev.f[NFF_LOG_READ_hwqueue] = 9;
	ev.f[NFF_LOG_READ_log_type] = NF_LOG_WAITS;
	ev.f[NFF_LOG_READ_header] = HDR(1, 0);
	ev.f[NFF_LOG_READ_capacity] = n;
	ev.f[NFF_LOG_READ_entry_count] = n;
	ev.entries = e;
	ck_assert_int_eq(feed(r, &ev), 0);
	ck_assert_uint_eq(s.entries, n);
	ck_assert_uint_eq(s.kinds[NF_FIND_UNKNOWN_FENCE], n / 2);
	ck_assert_uint_eq(s.kinds[NF_FIND_NEW_EPOCH], 1);
	ck_assert_uint_eq(s.last.kind, NF_FIND_UNKNOWN_FENCE);
	ck_assert_uint_eq(s.last.entry_index, n - 1);
	free(e);
	nf_logreplay_destroy(r);
}
END_TEST

START_TEST(replay_log_limit)
{
	/* No callbacks: 65536 findings through ck_assert would only be slow. */
	struct nf_logreplay *r = nf_logreplay_create(NULL);
	struct nf_event ev = { .id = NF_EV_SET_LOG_BUFFER };
	struct nf_error err;
	int rc = 0;
	uint32_t q;

	ck_assert_ptr_nonnull(r);
	ev.f[NFF_SET_LOG_BUFFER_log_type] = NF_LOG_WAITS;
	ev.f[NFF_SET_LOG_BUFFER_capacity] = 64;
	nf_error_clear(&err);
	for (q = 0; q < 70000 && rc == 0; q++) {
		ev.f[NFF_SET_LOG_BUFFER_hwqueue] = q;
		rc = nf_logreplay_feed(r, &ev, "events", q, &err);
	}
	ck_assert_int_eq(rc, NF_ENOMEM);
	ck_assert_uint_eq(q, 65537);
	ck_assert_int_eq(err.code, NF_ENOMEM);
	ck_assert_ptr_nonnull(strstr(err.msg, "logs"));
	/* Existing logs still work. */
	ev.f[NFF_SET_LOG_BUFFER_hwqueue] = 5;
	ck_assert_int_eq(nf_logreplay_feed(r, &ev, "events", 0, NULL), 0);
	nf_logreplay_destroy(r);
}
END_TEST

START_TEST(replay_callback_stops)
{
	struct seen s;
	struct nf_logreplay *r = replay_new(&s);
	struct step st = { 'R', 0, HDR(0, 3), CAP, 0, 3, { 100, 0, 0 } };

	s.stop_finding = 42;
	fence_event(r, NF_EV_FENCE_START, 0, FENCE);
	ck_assert_int_eq(read_log(r, NF_LOG_WAITS, &st), 42);
	ck_assert_uint_eq(s.kinds[NF_FIND_ZERO_TS], 1);
	ck_assert_uint_eq(s.entries, 1);
	nf_logreplay_destroy(r);
	/* No callbacks at all is fine. */
	r = nf_logreplay_create(NULL);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(read_log(r, NF_LOG_WAITS, &st), 0);
	nf_logreplay_destroy(r);
	nf_logreplay_destroy(NULL);
}
END_TEST

START_TEST(finding_names)
{
	static const char *const names[NF_FIND_COUNT] = {
		"lost", "zero_timestamp", "repeated_timestamp", "backwards_timestamp",
		"unknown_fence", "bad_operation", "out_of_range", "corrupt", "new_epoch",
	};
	static const bool illegal[NF_FIND_COUNT] = {
		false, false, false, true, true, true, true, true, false,
	};

	for (int k = 0; k < NF_FIND_COUNT; k++) {
		ck_assert_str_eq(nf_finding_kind_name((enum nf_finding_kind)k), names[k]);
		ck_assert_int_eq(nf_finding_is_illegal((enum nf_finding_kind)k), illegal[k]);
	}
	ck_assert_str_eq(nf_finding_kind_name(NF_FIND_COUNT), "unknown");
}
END_TEST

void add_logreplay_tests(Suite *s)
{
	TCase *tc = tcase_create("logreplay");

	tcase_add_loop_test(tc, replay_table, 0, (int)(sizeof(replay_cases) / sizeof(replay_cases[0])));
	tcase_add_test(tc, replay_accounts_for_every_entry);
	tcase_add_test(tc, replay_fence_set_churn);
	tcase_add_test(tc, replay_log_limit);
	tcase_add_test(tc, replay_callback_stops);
	tcase_add_test(tc, finding_names);
	suite_add_tcase(s, tc);
}
