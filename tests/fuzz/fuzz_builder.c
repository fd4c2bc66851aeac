/*
 * Fuzz target for the timeline builder (importers/ctf/builder.c, clock.c) with
 * absurd but well-formed values (edges of every field's type, where sums and
 * products overflowed): the input is read as a program of
 * items the parser could deliver, in its order (events of any kind with every
 * field within its type, decoded log entries, findings), whose numbers are
 * mostly taken from the edges: 0, 1, 2^31, 2^32-1, 2^53, 2^62 +-1, 2^63 +-1,
 * 2^64-1, with CPU timestamps that never go back (log positions and counts
 * stay below 2^52, as the log replay guarantees). The session's clock
 * (frequency, start) is absurd too. Under UBSan a signed overflow is a crash;
 * after finish() the target checks what the builder promises: every GPU time
 * it wrote is within +-2^62 ns or NULL, and no calibration row holds a clock
 * beyond NF_GPU_TS_MAX.
 */
#include "builder.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fz_in {
	const uint8_t *p;
	size_t left;
};

static uint64_t fz_take(struct fz_in *in, unsigned bytes)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < bytes && in->left; i++, in->left--)
		v |= (uint64_t)*in->p++ << (8 * i);
	return v;
}

static uint8_t fz_u8(struct fz_in *in)
{
	return (uint8_t)fz_take(in, 1);
}

/* An edge value most of the time, a small one or any 64-bit value else. */
static uint64_t fz_absurd(struct fz_in *in)
{
	static const uint64_t edges[] = {
		0, 1, 2, 3, 7, 1ull << 31, (1ull << 32) - 1, 1ull << 32, 1ull << 53,
		(1ull << 62) - 1, 1ull << 62, (1ull << 62) + 1, (1ull << 63) - 1, 1ull << 63,
		(1ull << 63) + 1, UINT64_MAX - 1, UINT64_MAX, 19200000, 1000000000,
	};
	uint8_t sel = fz_u8(in);

	if (sel < 128)
		return edges[sel % (sizeof(edges) / sizeof(edges[0]))];
	if (sel < 224)
		return fz_u8(in) % 8;
	return fz_take(in, 8);
}

/*
 * Log positions and counts: the log replay never delivers one at or beyond
 * 2^52 (a WraparoundCount of 2^32 times a capacity of at most 2^20), so the
 * edges are those below it.
 */
static uint64_t fz_seq(struct fz_in *in)
{
	static const uint64_t edges[] = { 0, 1, 2, 63, 64, (1ull << 20) - 1, 1ull << 20,
					  (1ull << 32) - 1, 1ull << 32, 1ull << 51, (1ull << 52) - 1 };
	uint8_t sel = fz_u8(in);

	if (sel < 128)
		return edges[sel % (sizeof(edges) / sizeof(edges[0]))];
	if (sel < 224)
		return fz_u8(in) % 8;
	return fz_take(in, 8) & ((1ull << 52) - 1);
}

/* Handles and ordinals: few, so that queues, fences and logs meet. */
static uint64_t fz_small(struct fz_in *in)
{
	return fz_u8(in) % 4;
}

static const char *const fz_strings[] = { "", "Q", "\xc2\x9b[31m", "\xff\xfe", "GPU 0" };

/* Prints a row of what went wrong. */
static int fz_print_row(void *ctx, int n, char **vals, char **names)
{
	(void)ctx;
	for (int i = 0; i < n; i++)
		fprintf(stderr, "%s=%s%s", names[i], vals[i] ? vals[i] : "NULL", i + 1 < n ? " " : "\n");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = { data, size };
	struct nf_session_info info;
	struct nf_error err;
	sqlite3 *db = NULL;
	struct nf_timeline_builder *b;
	uint64_t ts = 0;
	int rc = 0;

	memset(&info, 0, sizeof(info));
	info.tool_version = info.source = info.mode = info.host = "";
	info.schema_version = NF_SCHEMA_VERSION;
	info.cpu_frequency = fz_absurd(&in);
	info.start_ticks = fz_absurd(&in);
	nf_error_clear(&err);
	if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
	    SQLITE_OK)
		abort();
	b = nf_timeline_builder_create(db, &info, &err);
	if (!b) {
		/* A session without a CPU frequency is refused, with a reason. */
		if (!err.code || err.msg[0] == '\0')
			abort();
		sqlite3_close(db);
		return 0;
	}
	for (unsigned n = 0; in.left && n < 256 && rc == 0; n++) {
		uint8_t op = fz_u8(&in);

		/* Time goes on, by a little or by an absurd step (never back). */
		uint64_t step = fz_u8(&in) < 200 ? fz_u8(&in) : fz_absurd(&in);
		ts = ts + step < ts ? UINT64_MAX : ts + step;
		if (op % 4 == 0) {
			struct nf_decoded_entry e;

			memset(&e, 0, sizeof(e));
			e.adapter = (uint32_t)fz_small(&in);
			e.hwqueue = (uint32_t)fz_small(&in);
			e.log_type = fz_u8(&in) & 1 ? NF_LOG_WAITS : NF_LOG_SIGNALS;
			e.epoch = (uint32_t)fz_small(&in);
			e.seq = fz_seq(&in);
			e.read_cpu_ts = ts;
			e.entry.fence_value = fz_absurd(&in);
			e.entry.hnative_fence = (uint32_t)fz_small(&in);
			e.entry.operation_type = e.log_type == NF_LOG_WAITS ? NF_LOG_OP_WAIT_UNBLOCKED
									    : NF_LOG_OP_SIGNAL_EXECUTED;
			e.entry.fence_observed_gpu_timestamp = fz_absurd(&in);
			e.entry.fence_end_gpu_timestamp = fz_absurd(&in);
			static const enum nf_finding_kind cls[] = { NF_FIND_COUNT, NF_FIND_ZERO_TS,
								    NF_FIND_REPEATED_TS, NF_FIND_BACKWARDS_TS };
			e.ts_class = cls[fz_u8(&in) % 4];
			rc = nf_timeline_builder_feed_entry(b, &e, &err);
		} else if (op % 8 == 1) {
			struct nf_finding f;

			memset(&f, 0, sizeof(f));
			f.kind = (enum nf_finding_kind)(fz_u8(&in) % NF_FIND_COUNT);
			f.adapter = (uint32_t)fz_small(&in);
			f.hwqueue = (uint32_t)fz_small(&in);
			f.log_type = fz_u8(&in) & 1 ? NF_LOG_WAITS : NF_LOG_SIGNALS;
			f.epoch = (uint32_t)fz_small(&in);
			f.count = fz_seq(&in) | 1;
			f.first_seq = fz_seq(&in);
			f.prev_gpu_ts = fz_absurd(&in);
			f.next_gpu_ts = fz_absurd(&in);
			f.cpu_ts = ts;
			f.stream = "events";
			f.event_index = n;
			snprintf(f.detail, sizeof(f.detail), "fuzz finding %u", n);
			rc = nf_timeline_builder_feed_finding(b, &f, &err);
		} else {
			/* An event of any kind, every field within its type. */
			struct nf_event ev;
			uint32_t u32s[8];
			struct nf_log_entry entries[8];
			const struct nf_event_desc *d;

			memset(&ev, 0, sizeof(ev));
			ev.id = fz_u8(&in) % NF_EV_COUNT;
			ev.ts = ts;
			d = nf_event_desc(ev.id);
			for (uint32_t i = 0; d && i < d->n_fields && i < NF_EVENT_MAX_FIELDS; i++) {
				uint64_t v = fz_u8(&in) & 1 ? fz_small(&in) : fz_absurd(&in);

				switch (d->fields[i].type) {
				case NF_FT_U8: ev.f[i] = v & 0xff; break;
				case NF_FT_U16: ev.f[i] = v & 0xffff; break;
				case NF_FT_U32: ev.f[i] = v & 0xffffffffu; break;
				case NF_FT_U64: ev.f[i] = v; break;
				case NF_FT_STR: ev.str = fz_strings[fz_u8(&in) % 5]; break;
				case NF_FT_U32SEQ:
					/* Its length is the field before. */
					if (i > 0 && ev.f[i - 1] > 8)
						ev.f[i - 1] = 8;
					for (int k = 0; k < 8; k++)
						u32s[k] = (uint32_t)(fz_u8(&in) & 1 ? fz_small(&in) : fz_absurd(&in));
					ev.u32s = u32s;
					break;
				case NF_FT_ENTRIES:
					if (i > 0 && ev.f[i - 1] > 8)
						ev.f[i - 1] = 8;
					for (int k = 0; k < 8; k++) {
						entries[k].fence_value = fz_absurd(&in);
						entries[k].hnative_fence = (uint32_t)fz_small(&in);
						entries[k].operation_type = fz_u8(&in) & 1;
						entries[k].reserved0 = 0;
						entries[k].fence_observed_gpu_timestamp = fz_absurd(&in);
						entries[k].reserved1 = 0;
						entries[k].fence_end_gpu_timestamp = fz_absurd(&in);
					}
					ev.entries = entries;
					break;
				}
			}
			rc = nf_timeline_builder_feed_event(b, &ev, &err);
		}
	}
	if (rc == 0)
		rc = nf_timeline_builder_finish(b, &err);
	/* An error must say what it is. */
	if (rc && (err.code == 0 || err.msg[0] == '\0')) {
		fprintf(stderr, "fuzz_builder: error %d without a message\n", rc);
		abort();
	}
	if (getenv("FUZZ_BUILDER_VERBOSE") && rc)
		fprintf(stderr, "fuzz_builder: %s\n", err.msg);
	if (rc == 0) {
		sqlite3_stmt *s = NULL;
		const char *check =
			"SELECT (SELECT count(*) FROM fence_ops WHERE abs(end_ns) > 4611686018427387904 "
			"OR abs(observed_ns) > 4611686018427387904) + "
			"(SELECT count(*) FROM calibrations WHERE gpu_clock < 0 OR gpu_clock > 4611686018427387904)";

		if (sqlite3_prepare_v2(db, check, -1, &s, NULL) != SQLITE_OK)
			abort();
		if (sqlite3_step(s) != SQLITE_ROW || sqlite3_column_int64(s, 0) != 0) {
			fprintf(stderr, "fuzz_builder: %lld times beyond 2^62 written\n",
				(long long)sqlite3_column_int64(s, 0));
			sqlite3_exec(db, "SELECT * FROM fence_ops", fz_print_row, NULL, NULL);
			abort(); /* a time the model cannot represent was written */
		}
		sqlite3_finalize(s);
	}
	nf_timeline_builder_destroy(b);
	sqlite3_close(db);
	return 0;
}
