/*
 * Fuzz target for the log replay (parser/logreplay.c), the decoder of log
 * snapshots: the input is read as a program of events (fence handles opened
 * and closed, SetNativeFenceLogBuffer, NativeFenceLogRead with a header word,
 * capacity, first slot and entries, any other event) with small value ranges
 * most of the time, so handles, logs and epochs collide, and raw 32/64-bit
 * values some of the time. The callbacks check what the replay promises:
 * known finding kinds with a count, NUL-terminated details, entries with a
 * timestamp class, at most N entries handed over per read.
 */
#include "contract/parser.h"

#include <stdint.h>
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

/* Mostly small, sometimes any 64-bit value. */
static uint64_t fz_num(struct fz_in *in, uint64_t small)
{
	uint8_t sel = fz_u8(in);

	if (sel < 224)
		return fz_u8(in) % small;
	if (sel < 240)
		return fz_take(in, 4);
	return fz_take(in, 8);
}

struct fz_state {
	uint64_t entries_this_read;
	uint64_t capacity_this_read;
};

static int fz_entry(void *ctx, const struct nf_decoded_entry *e)
{
	struct fz_state *s = ctx;

	if (e->ts_class != NF_FIND_COUNT && e->ts_class != NF_FIND_ZERO_TS &&
	    e->ts_class != NF_FIND_REPEATED_TS && e->ts_class != NF_FIND_BACKWARDS_TS)
		abort();
	if (e->log_type != NF_LOG_WAITS && e->log_type != NF_LOG_SIGNALS)
		abort();
	if (++s->entries_this_read > s->capacity_this_read)
		abort(); /* more entries handed over than the log holds */
	return 0;
}

static int fz_finding(void *ctx, const struct nf_finding *f)
{
	(void)ctx;
	if ((unsigned)f->kind >= NF_FIND_COUNT || f->count == 0 || !f->stream)
		abort();
	if (memchr(f->detail, '\0', sizeof(f->detail)) == NULL || f->detail[0] == '\0')
		abort();
	if (strcmp(nf_finding_kind_name(f->kind), "unknown") == 0)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct nf_log_entry entries[40];
	struct fz_in in = { data, size };
	struct fz_state st = { 0, 0 };
	struct nf_parser_callbacks cb = { &st, NULL, fz_entry, fz_finding };
	struct nf_logreplay *r = nf_logreplay_create(&cb);
	struct nf_error err;
	uint64_t ts = 0;

	if (!r)
		return 0;
	nf_error_clear(&err);
	for (unsigned n = 0; in.left && n < 20000; n++) {
		struct nf_event ev;
		uint64_t wrap;
		uint32_t count;
		int rc;

		memset(&ev, 0, sizeof(ev));
		ts += fz_u8(&in);
		ev.ts = ts;
		switch (fz_u8(&in) % 5) {
		case 0:
		case 1:
			ev.id = in.left && (data[size - in.left] & 1) ? NF_EV_FENCE_STOP : NF_EV_FENCE_START;
			fz_u8(&in);
			ev.f[0] = fz_num(&in, 3);  /* adapter is field 0 of both */
			if (ev.id == NF_EV_FENCE_START)
				ev.f[NFF_FENCE_START_fence] = fz_num(&in, 8);
			else
				ev.f[NFF_FENCE_STOP_fence] = fz_num(&in, 8);
			break;
		case 2:
			ev.id = NF_EV_SET_LOG_BUFFER;
			ev.f[NFF_SET_LOG_BUFFER_adapter] = fz_num(&in, 2);
			ev.f[NFF_SET_LOG_BUFFER_hwqueue] = fz_num(&in, 4);
			ev.f[NFF_SET_LOG_BUFFER_log_type] = fz_num(&in, 4);
			ev.f[NFF_SET_LOG_BUFFER_epoch] = fz_num(&in, 4);
			ev.f[NFF_SET_LOG_BUFFER_capacity] = fz_num(&in, 17);
			break;
		case 3:
			ev.id = NF_EV_LOG_READ;
			ev.f[NFF_LOG_READ_adapter] = fz_num(&in, 2);
			ev.f[NFF_LOG_READ_hwqueue] = fz_num(&in, 4);
			ev.f[NFF_LOG_READ_log_type] = fz_num(&in, 4);
			ev.f[NFF_LOG_READ_epoch] = fz_num(&in, 4);
			ev.f[NFF_LOG_READ_capacity] = fz_num(&in, 17);
			wrap = fz_num(&in, 8); /* two statements: a fixed order of reads */
			ev.f[NFF_LOG_READ_header] = wrap << 32 | fz_num(&in, 17);
			ev.f[NFF_LOG_READ_first_slot] = fz_num(&in, 17);
			count = fz_u8(&in) % 41;
			ev.f[NFF_LOG_READ_entry_count] = count;
			for (uint32_t i = 0; i < count; i++) {
				struct nf_log_entry *e = &entries[i];

				memset(e, 0, sizeof(*e));
				e->fence_value = fz_u8(&in);
				e->hnative_fence = (uint32_t)fz_num(&in, 8);
				e->operation_type = fz_u8(&in) % 3;
				e->fence_end_gpu_timestamp = fz_num(&in, 64);
			}
			/* Sometimes the entries are announced but absent. */
			ev.entries = count && fz_u8(&in) == 0xff ? NULL : entries;
			/* A read hands over at most min(capacity, count) entries. */
			st.capacity_this_read = ev.f[NFF_LOG_READ_capacity] < count
							? ev.f[NFF_LOG_READ_capacity] : count;
			break;
		default:
			ev.id = fz_u8(&in) % NF_EV_COUNT;
			if (ev.id == NF_EV_LOG_READ)
				ev.id = NF_EV_ADAPTER_START;
			for (int i = 0; i < NF_EVENT_MAX_FIELDS; i++)
				ev.f[i] = fz_num(&in, 4);
			/* Sequence fields point at nothing: their lengths must be ignored. */
			break;
		}
		st.entries_this_read = 0;
		rc = nf_logreplay_feed(r, &ev, "fuzz", n, &err);
		if (rc != 0 && rc != NF_ENOMEM)
			abort();
		if (rc)
			break;
	}
	nf_logreplay_destroy(r);
	return 0;
}
