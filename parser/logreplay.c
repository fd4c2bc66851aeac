/*
 * The OS consumer's log-buffer bookkeeping, replayed from a recorded session.
 * For every (adapter, hardware queue, log type) it keeps what the real
 * scheduler keeps: the epoch (location generation), the capacity, the cached
 * total of entries written (WraparoundCount*N + FirstFreeEntryIndex) and the
 * last non-zero end timestamp; it also tracks which local fence handles are
 * open, or closed recently enough that a log not read since may still name
 * them (the GPU wrote the entry before the close, the OS read it after). Each NativeFenceLogRead event is checked against that state: the
 * entries it carries get their place in the written sequence, gaps become
 * exact "lost" counts, and anything inconsistent becomes a finding rather than
 * an error. Memory is bounded by the number of logs and of fence handles in use,
 * never by the number of events, and no allocation is sized from input fields.
 */
#include "contract/parser.h"
#include "contract/errors.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract/anomaly_kinds.h"
#include "contract/util_hash.h"

/* Bounds on what a session may make us hold. */
#define NF_LOGREPLAY_MAX_LOGS 65536u
#define NF_LOGREPLAY_MAX_FENCES (1u << 22)
#define NF_LOGREPLAY_MAX_CAPACITY (1u << 20)

struct nf_log_state {
	uint32_t adapter, hwqueue, log_type; /* the key; log_type 0 marks a free slot */
	uint32_t epoch;
	uint64_t capacity;     /* 0 until known */
	uint64_t cached_total; /* wrap*N + index at the last good read */
	uint64_t last_ts;      /* last non-zero end timestamp read in this epoch */
	uint64_t since;        /* CPU ticks of the last read (or of the epoch's start) */
};

struct fence_slot {
	uint64_t key;       /* adapter << 32 | local handle */
	uint64_t closed_at; /* CPU ticks of the stop that closed it (opens == 0) */
	uint32_t opens;     /* open local handles with this value */
	bool used;          /* false marks a free slot */
};

struct nf_logreplay {
	struct nf_parser_callbacks cb;
	struct nf_log_state *logs; /* open addressing, power-of-two size */
	size_t logs_cap, logs_used;
	struct fence_slot *fences;
	size_t fences_cap, fences_used;
};

/* Finding names and legality come from schemas/anomalies.def (core's
 * anomaly_kinds.h); enum nf_finding_kind in parser.h must follow its order. */
#define NF_FINDING(id, name, illegal, row, doc)                                     \
	_Static_assert((int)NF_FIND_##id == (int)NF_FINDING_POS_##id,               \
		       "enum nf_finding_kind follows schemas/anomalies.def: " #id);
#define NF_ANOMALY(id, name, doc)
#include "../schemas/anomalies.def"
#undef NF_FINDING
#undef NF_ANOMALY
_Static_assert((int)NF_FIND_COUNT == (int)NF_FINDING_POS_COUNT,
	       "enum nf_finding_kind has one entry per NF_FINDING of schemas/anomalies.def");

const char *nf_finding_kind_name(enum nf_finding_kind kind)
{
	const struct nf_finding_kind_info *i = nf_finding_kind_info((unsigned)kind);

	return i ? i->name : "unknown";
}

bool nf_finding_is_illegal(enum nf_finding_kind kind)
{
	const struct nf_finding_kind_info *i = nf_finding_kind_info((unsigned)kind);

	return i && i->illegal;
}

struct nf_logreplay *nf_logreplay_create(const struct nf_parser_callbacks *cb)
{
	struct nf_logreplay *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	if (cb)
		r->cb = *cb;
	return r;
}

void nf_logreplay_destroy(struct nf_logreplay *r)
{
	if (!r)
		return;
	free(r->logs);
	free(r->fences);
	free(r);
}

static size_t log_hash(uint32_t adapter, uint32_t hwqueue, uint32_t log_type, size_t mask)
{
	uint64_t h = nf_mix64(((uint64_t)adapter << 32 | hwqueue) ^ ((uint64_t)log_type << 61));

	return (size_t)h & mask;
}

static struct nf_log_state *log_slot(struct nf_log_state *tab, size_t cap, uint32_t adapter,
					uint32_t hwqueue, uint32_t log_type)
{
	size_t mask = cap - 1, i = log_hash(adapter, hwqueue, log_type, mask);

	for (;; i = (i + 1) & mask) {
		struct nf_log_state *s = &tab[i];

		if (s->log_type == 0 || (s->adapter == adapter && s->hwqueue == hwqueue &&
					 s->log_type == log_type))
			return s;
	}
}

/* Finds or adds the state of a log; log_type must be non-zero. NULL: ENOMEM. */
static struct nf_log_state *logreplay_log(struct nf_logreplay *r, uint32_t adapter,
					     uint32_t hwqueue, uint32_t log_type,
					     struct nf_error *err)
{
	struct nf_log_state *s;

	if (r->logs) {
		s = log_slot(r->logs, r->logs_cap, adapter, hwqueue, log_type);
		if (s->log_type != 0)
			return s;
	}
	if (r->logs_used >= NF_LOGREPLAY_MAX_LOGS) {
		nf_error_set(err, NF_ENOMEM, "more than %u logs in one session", NF_LOGREPLAY_MAX_LOGS);
		return NULL;
	}
	/* Keep the load factor at or below one half. */
	if ((r->logs_used + 1) * 2 > r->logs_cap) {
		size_t ncap = r->logs_cap ? r->logs_cap * 2 : 16;
		struct nf_log_state *nt = calloc(ncap, sizeof(*nt));

		if (!nt) {
			nf_error_set(err, NF_ENOMEM, "out of memory for log state");
			return NULL;
		}
		for (size_t i = 0; i < r->logs_cap; i++)
			if (r->logs[i].log_type != 0)
				*log_slot(nt, ncap, r->logs[i].adapter, r->logs[i].hwqueue,
					     r->logs[i].log_type) = r->logs[i];
		free(r->logs);
		r->logs = nt;
		r->logs_cap = ncap;
	}
	s = log_slot(r->logs, r->logs_cap, adapter, hwqueue, log_type);
	memset(s, 0, sizeof(*s));
	s->adapter = adapter;
	s->hwqueue = hwqueue;
	s->log_type = log_type;
	r->logs_used++;
	return s;
}

static struct fence_slot *fence_slot(struct fence_slot *tab, size_t cap, uint64_t key)
{
	size_t mask = cap - 1, i = (size_t)nf_mix64(key) & mask;

	for (;; i = (i + 1) & mask)
		if (!tab[i].used || tab[i].key == key)
			return &tab[i];
}

/*
 * Is the handle good for an entry written since `since`? An open handle is; a
 * closed one too if it closed after `since`: the GPU may have written the entry
 * while it was open and the OS read it only after the close.
 */
static bool fence_known(const struct nf_logreplay *r, uint32_t adapter, uint32_t handle,
			   uint64_t since)
{
	const struct fence_slot *f;

	if (!r->fences)
		return false;
	f = fence_slot(r->fences, r->fences_cap, (uint64_t)adapter << 32 | handle);
	return f->used && (f->opens != 0 || f->closed_at >= since);
}

/* The oldest read time any log may still check a closed handle against. */
static uint64_t oldest_since(const struct nf_logreplay *r)
{
	uint64_t m = UINT64_MAX;

	for (size_t i = 0; i < r->logs_cap; i++)
		if (r->logs[i].log_type != 0 && r->logs[i].since < m)
			m = r->logs[i].since;
	return m;
}

/* Rebuilds the handle table at ncap slots, dropping handles closed before `keep_after`. */
static int fence_rehash(struct nf_logreplay *r, size_t ncap, uint64_t keep_after,
			   struct nf_error *err)
{
	struct fence_slot *nt = calloc(ncap, sizeof(*nt));
	size_t used = 0;

	if (!nt)
		return nf_error_set(err, NF_ENOMEM, "out of memory for fence handles");
	for (size_t i = 0; i < r->fences_cap; i++) {
		const struct fence_slot *f = &r->fences[i];

		if (!f->used || (f->opens == 0 && f->closed_at < keep_after))
			continue;
		*fence_slot(nt, ncap, f->key) = *f;
		used++;
	}
	free(r->fences);
	r->fences = nt;
	r->fences_cap = ncap;
	r->fences_used = used;
	return 0;
}

static int fence_open(struct nf_logreplay *r, uint32_t adapter, uint32_t handle,
			 struct nf_error *err)
{
	uint64_t key = (uint64_t)adapter << 32 | handle;
	struct fence_slot *s;
	int rc;

	if (r->fences) {
		s = fence_slot(r->fences, r->fences_cap, key);
		if (s->used) {
			if (s->opens < UINT32_MAX)
				s->opens++;
			return 0;
		}
	}
	if ((r->fences_used + 1) * 2 > r->fences_cap) {
		/* Forget handles no log can still need, then grow if still full. */
		size_t ncap = r->fences_cap ? r->fences_cap : 64;

		rc = fence_rehash(r, ncap, oldest_since(r), err);
		if (rc)
			return rc;
		if ((r->fences_used + 1) * 2 > r->fences_cap) {
			if (r->fences_used >= NF_LOGREPLAY_MAX_FENCES)
				return nf_error_set(err, NF_ENOMEM, "more than %u fence handles in use",
						    NF_LOGREPLAY_MAX_FENCES);
			rc = fence_rehash(r, r->fences_cap * 2, 0, err);
			if (rc)
				return rc;
		}
	}
	s = fence_slot(r->fences, r->fences_cap, key);
	s->used = true;
	s->key = key;
	s->opens = 1;
	s->closed_at = 0;
	r->fences_used++;
	return 0;
}

/* Closes one opening of a handle; at zero it is remembered as closed at `ts`. */
static void fence_close(struct nf_logreplay *r, uint32_t adapter, uint32_t handle, uint64_t ts)
{
	struct fence_slot *s;

	if (!r->fences)
		return;
	s = fence_slot(r->fences, r->fences_cap, (uint64_t)adapter << 32 | handle);
	if (!s->used || s->opens == 0)
		return;
	if (--s->opens == 0)
		s->closed_at = ts;
}

/* What one LOG_READ event is being checked in (for findings). */
struct nf_read_ctx {
	struct nf_logreplay *r;
	const struct nf_event *ev;
	const char *stream;
	uint64_t event_index;
	uint32_t adapter, hwqueue, log_type, epoch;
	struct nf_error *err;
};

static int emit_finding(const struct nf_read_ctx *c, enum nf_finding_kind kind,
			   uint64_t count, uint64_t first_seq, uint64_t prev_ts, uint64_t next_ts,
			   uint32_t entry_index, const char *fmt, ...)
	__attribute__((format(printf, 8, 9)));

static int emit_finding(const struct nf_read_ctx *c, enum nf_finding_kind kind,
			   uint64_t count, uint64_t first_seq, uint64_t prev_ts, uint64_t next_ts,
			   uint32_t entry_index, const char *fmt, ...)
{
	struct nf_finding f;
	va_list ap;
	int rc;

	if (!c->r->cb.finding)
		return 0;
	memset(&f, 0, sizeof(f));
	f.kind = kind;
	f.adapter = c->adapter;
	f.hwqueue = c->hwqueue;
	f.log_type = c->log_type;
	f.epoch = c->epoch;
	f.count = count;
	f.first_seq = first_seq;
	f.prev_gpu_ts = prev_ts;
	f.next_gpu_ts = next_ts;
	f.cpu_ts = c->ev->ts;
	f.stream = c->stream ? c->stream : "";
	f.event_index = c->event_index;
	f.entry_index = entry_index;
	f.packet = NF_PACKET_UNKNOWN; /* the reader knows it (see reader.c) */
	va_start(ap, fmt);
	vsnprintf(f.detail, sizeof(f.detail), fmt, ap);
	va_end(ap);
	rc = c->r->cb.finding(c->r->cb.ctx, &f);
	if (rc != 0)
		nf_error_set(c->err, rc, "stopped by the finding callback (code %d)", rc);
	return rc;
}

static const char *log_type_name(uint32_t log_type)
{
	return log_type == NF_LOG_WAITS ? "waits" : log_type == NF_LOG_SIGNALS ? "signals" : "?";
}

/* Starts a new epoch of a log (SetNativeFenceLogBuffer, or a read that shows one). */
static void log_reset(struct nf_log_state *s, uint32_t epoch, uint64_t capacity,
			 uint64_t since)
{
	s->since = since;
	s->epoch = epoch;
	s->capacity = capacity;
	s->cached_total = 0;
	s->last_ts = 0;
}

static bool capacity_ok(uint64_t capacity)
{
	return capacity != 0 && capacity <= NF_LOGREPLAY_MAX_CAPACITY;
}

static int feed_set_log_buffer(struct nf_read_ctx *c)
{
	const struct nf_event *ev = c->ev;
	uint64_t capacity = ev->f[NFF_SET_LOG_BUFFER_capacity];
	struct nf_log_state *s;

	if (c->log_type != NF_LOG_WAITS && c->log_type != NF_LOG_SIGNALS)
		return emit_finding(c, NF_FIND_OUT_OF_RANGE, 1, 0, 0, 0, 0,
				       "SetNativeFenceLogBuffer: log type %" PRIu32 " is neither 1 (waits) nor 2 (signals)",
				       c->log_type);
	if (!capacity_ok(capacity))
		return emit_finding(c, NF_FIND_OUT_OF_RANGE, 1, 0, 0, 0, 0,
				       "SetNativeFenceLogBuffer: capacity %" PRIu64 " outside 1..%u",
				       capacity, NF_LOGREPLAY_MAX_CAPACITY);
	s = logreplay_log(c->r, c->adapter, c->hwqueue, c->log_type, c->err);
	if (!s)
		return NF_ENOMEM;
	log_reset(s, c->epoch, capacity, c->ev->ts);
	return emit_finding(c, NF_FIND_NEW_EPOCH, 1, 0, 0, 0, 0,
			       "%s log of queue %" PRIu32 " (adapter %" PRIu32 ") at epoch %" PRIu32 ", %" PRIu64 " entries",
			       log_type_name(c->log_type), c->hwqueue, c->adapter, c->epoch, capacity);
}

/* The first non-zero end timestamp among the entries, 0 if none. */
static uint64_t first_nonzero_ts(const struct nf_log_entry *e, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (e[i].fence_end_gpu_timestamp != 0)
			return e[i].fence_end_gpu_timestamp;
	return 0;
}

/* Checks one delivered entry and hands it over. */
static int deliver_entry(struct nf_read_ctx *c, struct nf_log_state *s,
			    const struct nf_log_entry *e, uint64_t seq, uint32_t i)
{
	struct nf_logreplay *r = c->r;
	struct nf_decoded_entry d;
	uint32_t want_op = c->log_type == NF_LOG_WAITS ? NF_LOG_OP_WAIT_UNBLOCKED
						       : NF_LOG_OP_SIGNAL_EXECUTED;
	uint64_t ts = e->fence_end_gpu_timestamp, prev = s->last_ts;
	int rc;

	memset(&d, 0, sizeof(d));
	d.ts_class = NF_FIND_COUNT;
	if (e->operation_type != want_op) {
		rc = emit_finding(c, NF_FIND_BAD_OPERATION, 1, seq, prev, ts, i,
				     "entry %" PRIu64 ": OperationType %" PRIu32 " in a %s log (expected %" PRIu32 ")",
				     seq, e->operation_type, log_type_name(c->log_type), want_op);
		if (rc)
			return rc;
	}
	if (!fence_known(r, c->adapter, e->hnative_fence, s->since)) {
		rc = emit_finding(c, NF_FIND_UNKNOWN_FENCE, 1, seq, prev, ts, i,
				     "entry %" PRIu64 ": hNativeFence 0x%" PRIx32 " was not an open fence handle on adapter %" PRIu32 " since the last read",
				     seq, e->hnative_fence, c->adapter);
		if (rc)
			return rc;
	}
	if (ts > NF_GPU_TS_MAX || e->fence_observed_gpu_timestamp > NF_GPU_TS_MAX) {
		bool end = ts > NF_GPU_TS_MAX;

		rc = emit_finding(c, NF_FIND_OUT_OF_RANGE, 1, seq, prev, ts, i,
				     "entry %" PRIu64 ": %s GPU timestamp %" PRIu64 " is beyond 2^62 (no GPU clock reaches it)",
				     seq, end ? "end" : "observed",
				     end ? ts : e->fence_observed_gpu_timestamp);
		if (rc)
			return rc;
		if (end)
			ts = 0; /* not a time: neither compared with nor kept as the last one */
	}
	if (ts == 0 && e->fence_end_gpu_timestamp != 0) {
		rc = 0;
	} else if (ts == 0) {
		d.ts_class = NF_FIND_ZERO_TS;
		rc = emit_finding(c, NF_FIND_ZERO_TS, 1, seq, prev, ts, i,
				     "entry %" PRIu64 ": zero end timestamp", seq);
	} else if (prev != 0 && ts == prev) {
		d.ts_class = NF_FIND_REPEATED_TS;
		rc = emit_finding(c, NF_FIND_REPEATED_TS, 1, seq, prev, ts, i,
				     "entry %" PRIu64 ": end timestamp %" PRIu64 " repeats the previous one",
				     seq, ts);
	} else if (ts < prev) {
		d.ts_class = NF_FIND_BACKWARDS_TS;
		rc = emit_finding(c, NF_FIND_BACKWARDS_TS, 1, seq, prev, ts, i,
				     "entry %" PRIu64 ": end timestamp %" PRIu64 " is below the previous %" PRIu64,
				     seq, ts, prev);
	} else {
		rc = 0;
	}
	if (rc)
		return rc;
	if (ts != 0)
		s->last_ts = ts;
	if (!r->cb.entry)
		return 0;
	d.adapter = c->adapter;
	d.hwqueue = c->hwqueue;
	d.log_type = c->log_type;
	d.epoch = c->epoch;
	d.seq = seq;
	d.read_cpu_ts = c->ev->ts;
	d.entry = *e;
	rc = r->cb.entry(r->cb.ctx, &d);
	if (rc != 0)
		nf_error_set(c->err, rc, "stopped by the entry callback (code %d)", rc);
	return rc;
}

static int feed_log_read(struct nf_read_ctx *c)
{
	const struct nf_event *ev = c->ev;
	uint64_t header = ev->f[NFF_LOG_READ_header];
	uint64_t capacity = ev->f[NFF_LOG_READ_capacity];
	uint64_t first_slot = ev->f[NFF_LOG_READ_first_slot];
	uint64_t count = ev->f[NFF_LOG_READ_entry_count];
	uint64_t index = header & 0xffffffffu, wrap = header >> 32;
	uint64_t total, fresh, expect, lost, start;
	char why[96] = "";
	struct nf_log_state *s;
	int rc;

	if (c->log_type != NF_LOG_WAITS && c->log_type != NF_LOG_SIGNALS)
		return emit_finding(c, NF_FIND_OUT_OF_RANGE, 1, 0, 0, 0, 0,
				       "log read: log type %" PRIu32 " is neither 1 (waits) nor 2 (signals)",
				       c->log_type);
	if (!capacity_ok(capacity))
		return emit_finding(c, NF_FIND_OUT_OF_RANGE, 1, 0, 0, 0, 0,
				       "log read: NumberOfEntries %" PRIu64 " outside 1..%u",
				       capacity, NF_LOGREPLAY_MAX_CAPACITY);
	if (index >= capacity)
		return emit_finding(c, NF_FIND_OUT_OF_RANGE, 1, 0, 0, 0, 0,
				       "log read: FirstFreeEntryIndex %" PRIu64 " >= NumberOfEntries %" PRIu64,
				       index, capacity);
	if (first_slot >= capacity)
		return emit_finding(c, NF_FIND_OUT_OF_RANGE, 1, 0, 0, 0, 0,
				       "log read: first slot %" PRIu64 " >= NumberOfEntries %" PRIu64,
				       first_slot, capacity);

	s = logreplay_log(c->r, c->adapter, c->hwqueue, c->log_type, c->err);
	if (!s)
		return NF_ENOMEM;
	if (s->capacity == 0) {
		/* No SetNativeFenceLogBuffer seen: the log predates the session. */
		log_reset(s, c->epoch, capacity, 0);
	} else if (c->epoch != s->epoch) {
		/* A read from another location generation than the last one set. */
		bool forward = c->epoch > s->epoch;

		rc = emit_finding(c, forward ? NF_FIND_NEW_EPOCH : NF_FIND_CORRUPT, 1, 0, 0, 0, 0,
				     "log read at epoch %" PRIu32 " while the log is at epoch %" PRIu32 "%s",
				     c->epoch, s->epoch,
				     forward ? " (no SetNativeFenceLogBuffer seen)" : "");
		if (rc)
			return rc;
		log_reset(s, c->epoch, capacity, s->since);
	} else if (capacity != s->capacity) {
		rc = emit_finding(c, NF_FIND_CORRUPT, 1, s->cached_total, s->last_ts, 0, 0,
				     "log read: NumberOfEntries %" PRIu64 " but the log has %" PRIu64 " in this epoch",
				     capacity, s->capacity);
		if (rc)
			return rc;
		/* Positions from the old capacity mean nothing now: resync. */
		s->capacity = capacity;
		s->cached_total = wrap * capacity + index;
		s->since = ev->ts;
		return 0;
	}

	/* wrap < 2^32 and capacity <= 2^20: total fits easily in 64 bits. */
	total = wrap * capacity + index;
	if (total < s->cached_total) {
		rc = emit_finding(c, NF_FIND_CORRUPT, 1, total, s->last_ts, 0, 0,
				     "log read: header went back from %" PRIu64 " to %" PRIu64 " entries written",
				     s->cached_total, total);
		s->cached_total = total;
		s->since = ev->ts;
		return rc;
	}
	fresh = total - s->cached_total;
	expect = fresh < capacity ? fresh : capacity;
	lost = fresh - expect;
	start = total - expect;
	if (count != expect)
		snprintf(why, sizeof(why), "%" PRIu64 " entries read but the header says %" PRIu64 " are new",
			 count, expect);
	else if (count > 0 && first_slot != start % capacity)
		snprintf(why, sizeof(why), "first slot %" PRIu64 " but the first new entry is in slot %" PRIu64,
			 first_slot, start % capacity);
	else if (count > 0 && !ev->entries)
		snprintf(why, sizeof(why), "%" PRIu64 " entries announced but none recorded", count);
	/* The header alone says how many were overwritten, whatever the entries. */
	if (lost > 0) {
		rc = emit_finding(c, NF_FIND_LOST, lost, s->cached_total, s->last_ts,
				     why[0] ? 0 : first_nonzero_ts(ev->entries, (uint32_t)count), 0,
				     "%" PRIu64 " entries overwritten before the OS read them (positions %" PRIu64 "..%" PRIu64 ")",
				     lost, s->cached_total, s->cached_total + lost - 1);
		if (rc)
			return rc;
	}
	if (why[0]) {
		/* Entries whose places are unknown are not handed over; resync. */
		s->cached_total = total;
		s->since = ev->ts;
		return emit_finding(c, NF_FIND_CORRUPT, 1, start, s->last_ts, 0, 0,
				       "log read: %s", why);
	}
	s->cached_total = total;
	for (uint32_t i = 0; i < (uint32_t)count; i++) {
		rc = deliver_entry(c, s, &ev->entries[i], start + i, i);
		if (rc)
			return rc;
	}
	s->since = ev->ts;
	return 0;
}

int nf_logreplay_feed(struct nf_logreplay *r, const struct nf_event *ev, const char *stream,
		      uint64_t event_index, struct nf_error *err)
{
	struct nf_read_ctx c = {
		.r = r, .ev = ev, .stream = stream, .event_index = event_index, .err = err,
	};

	switch (ev->id) {
	case NF_EV_FENCE_START:
		return fence_open(r, (uint32_t)ev->f[NFF_FENCE_START_adapter],
				     (uint32_t)ev->f[NFF_FENCE_START_fence], err);
	case NF_EV_FENCE_STOP:
		fence_close(r, (uint32_t)ev->f[NFF_FENCE_STOP_adapter],
			       (uint32_t)ev->f[NFF_FENCE_STOP_fence], ev->ts);
		return 0;
	case NF_EV_SET_LOG_BUFFER:
		c.adapter = (uint32_t)ev->f[NFF_SET_LOG_BUFFER_adapter];
		c.hwqueue = (uint32_t)ev->f[NFF_SET_LOG_BUFFER_hwqueue];
		c.log_type = (uint32_t)ev->f[NFF_SET_LOG_BUFFER_log_type];
		c.epoch = (uint32_t)ev->f[NFF_SET_LOG_BUFFER_epoch];
		return feed_set_log_buffer(&c);
	case NF_EV_LOG_READ:
		c.adapter = (uint32_t)ev->f[NFF_LOG_READ_adapter];
		c.hwqueue = (uint32_t)ev->f[NFF_LOG_READ_hwqueue];
		c.log_type = (uint32_t)ev->f[NFF_LOG_READ_log_type];
		c.epoch = (uint32_t)ev->f[NFF_LOG_READ_epoch];
		return feed_log_read(&c);
	default:
		return 0;
	}
}
