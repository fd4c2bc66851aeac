/*
 * Perfetto's protobuf trace format, written by hand: a Trace is a sequence of
 * TracePacket fields (number 1), each a TrackDescriptor or a TrackEvent on
 * one trusted packet sequence. Field numbers are those of Perfetto's public
 * protos (protos/perfetto/trace/trace_packet.proto, track_event/track_event.proto, track_descriptor.proto, debug_annotation.proto);
 * tests/export/perfetto_subset.proto lists the ones used here, and the tests
 * decode our files with protoc against it. Event names, categories and
 * annotation names are interned (sent once in a packet's interned_data, then
 * referred to by iid), which halves the file; values are written in full.
 */
#include "export_int.h"

#include <stdlib.h>
#include <string.h>

#include "contract/escape.h"
#include "contract/util_hash.h"

/* Field numbers (Perfetto's public format). */
enum {
	TRACE_PACKET = 1,
	TP_TIMESTAMP = 8,
	TP_SEQUENCE_ID = 10,     /* trusted_packet_sequence_id */
	TP_TRACK_EVENT = 11,
	TP_INTERNED_DATA = 12,
	TP_SEQUENCE_FLAGS = 13,
	TP_TRACK_DESCRIPTOR = 60,
	TD_UUID = 1,
	TD_NAME = 2,
	TD_PROCESS = 3,
	TD_THREAD = 4,
	TD_PARENT_UUID = 5,
	TD_COUNTER = 8,
	PD_PID = 1,
	PD_PROCESS_NAME = 6,
	THD_PID = 1,
	THD_TID = 2,
	THD_THREAD_NAME = 5,
	CD_UNIT = 3,
	TE_CATEGORY_IIDS = 3,
	TE_DEBUG_ANNOTATIONS = 4,
	TE_NAME_IID = 10,
	TE_TYPE = 9,
	TE_TRACK_UUID = 11,
	TE_CATEGORIES = 22,
	TE_NAME = 23,
	TE_COUNTER_VALUE = 30,
	TE_FLOW_IDS = 47,             /* fixed64 */
	TE_TERMINATING_FLOW_IDS = 48, /* fixed64 */
	DA_NAME_IID = 1,
	DA_UINT_VALUE = 3,
	DA_INT_VALUE = 4,
	DA_STRING_VALUE = 6,
	DA_POINTER_VALUE = 7,
	DA_NAME = 10,
	ID_EVENT_CATEGORIES = 1,      /* InternedData: EventCategory {iid = 1, name = 2} */
	ID_EVENT_NAMES = 2,           /* EventName {iid = 1, name = 2} */
	ID_DEBUG_ANNOTATION_NAMES = 3,/* DebugAnnotationName {iid = 1, name = 2} */
	IE_IID = 1,
	IE_NAME = 2,
};

enum { TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4 };
enum { SEQ_INCREMENTAL_STATE_CLEARED = 1, SEQ_NEEDS_INCREMENTAL_STATE = 2 };
enum { UNIT_COUNT = 2 };
enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2 };

#define SEQ_ID 1
#define PB_MAX_DEPTH 8
/* Room kept for a nested message's length: one byte, enough for the small
 * messages that are most of them; a longer one is moved up when closed. */
#define PB_LEN_ROOM 1

/* One packet being built. */
struct pb {
	unsigned char *buf;
	size_t len, cap;
	size_t open[PB_MAX_DEPTH];  /* offsets of the reserved lengths */
	int depth;
	int oom;
};

/*
 * Interned strings of one kind (event names, categories, annotation names):
 * each is sent once, in the interned_data of the first packet that uses it,
 * and referred to by its iid after. At most INTERN_MAX of a kind; past that a
 * string is written in full every time.
 */
#define INTERN_MAX 65536
#define INTERN_SLOTS (2 * INTERN_MAX)

struct intern {
	char **key;       /* INTERN_SLOTS slots, NULL: empty */
	uint32_t *iid;
	uint32_t n;
	/* Strings that are literals (categories, argument names): by address. */
	const char *lit[32];
	uint32_t lit_iid[32];
	int n_lit;
};

/* Event names known by the event's name_key: key -> iid (INTERN_SLOTS slots, key 0: empty). */
struct keyed {
	uint64_t *key;
	uint32_t *iid;
	uint32_t n;
};

struct pf_writer {
	struct nf_xwriter w;
	struct pb p;
	struct intern names, cats, keys;
	struct keyed by_key;
};

/* A string to send in this packet's interned_data. */
struct fresh {
	unsigned kind;
	uint32_t iid;
	const char *s;
};

static uint32_t hash_str(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

/* The iid of s (0: not interned, write it in full); *is_new when first seen. */
static uint32_t intern_get(struct intern *t, const char *s, int *is_new, int *oom)
{
	uint32_t i;

	*is_new = 0;
	if (!t->key) {
		t->key = calloc(INTERN_SLOTS, sizeof(*t->key));
		t->iid = calloc(INTERN_SLOTS, sizeof(*t->iid));
		if (!t->key || !t->iid) {
			*oom = 1;
			return 0;
		}
	}
	for (i = hash_str(s) & (INTERN_SLOTS - 1); t->key[i]; i = (i + 1) & (INTERN_SLOTS - 1))
		if (!strcmp(t->key[i], s))
			return t->iid[i];
	if (t->n == INTERN_MAX)
		return 0;
	if (!(t->key[i] = strdup(s))) {
		*oom = 1;
		return 0;
	}
	t->iid[i] = ++t->n;
	*is_new = 1;
	return t->iid[i];
}

/* The name's iid by its key (the name read and interned on the key's first use). */
static uint32_t intern_keyed(struct pf_writer *pw, uint64_t key, const char *s, int *is_new, int *oom)
{
	struct keyed *k = &pw->by_key;
	uint32_t i, iid;

	*is_new = 0;
	if (!k->key) {
		k->key = calloc(INTERN_SLOTS, sizeof(*k->key));
		k->iid = calloc(INTERN_SLOTS, sizeof(*k->iid));
		if (!k->key || !k->iid) {
			*oom = 1;
			return 0;
		}
	}
	for (i = (uint32_t)nf_mix64(key) & (INTERN_SLOTS - 1); k->key[i];
	     i = (i + 1) & (INTERN_SLOTS - 1))
		if (k->key[i] == key)
			return k->iid[i];
	iid = intern_get(&pw->names, s, is_new, oom);
	if (iid && k->n < INTERN_MAX) {  /* (past it, or not interned: by the string) */
		k->key[i] = key;
		k->iid[i] = iid;
		k->n++;
	}
	return iid;
}

/* intern_get for a string whose address names it (a literal). */
static uint32_t intern_lit(struct intern *t, const char *s, int *is_new, int *oom)
{
	uint32_t iid;

	*is_new = 0;
	for (int i = 0; i < t->n_lit; i++)
		if (t->lit[i] == s)
			return t->lit_iid[i];
	iid = intern_get(t, s, is_new, oom);
	if (iid && t->n_lit < 32) {
		t->lit[t->n_lit] = s;
		t->lit_iid[t->n_lit++] = iid;
	}
	return iid;
}

static void intern_release(struct intern *t)
{
	for (uint32_t i = 0; t->key && i < INTERN_SLOTS; i++)
		free(t->key[i]);
	free(t->key);
	free(t->iid);
}

static int pb_grow(struct pb *p, size_t n)
{
	size_t ncap;
	unsigned char *nb;

	if (p->cap - p->len >= n)
		return 0;
	ncap = p->cap ? p->cap : 4096;
	while (ncap - p->len < n)
		ncap *= 2;
	nb = realloc(p->buf, ncap);
	if (!nb) {
		p->oom = 1;
		return -1;
	}
	p->buf = nb;
	p->cap = ncap;
	return 0;
}

static size_t varint_put(unsigned char *d, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		d[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	d[n++] = (unsigned char)v;
	return n;
}

static inline void pb_varint(struct pb *p, uint64_t v)
{
	if (p->cap - p->len < 10 && pb_grow(p, 10) < 0)
		return;
	if (v < 0x80) {
		p->buf[p->len++] = (unsigned char)v;
		return;
	}
	p->len += varint_put(p->buf + p->len, v);
}

static inline void pb_tag(struct pb *p, unsigned field, unsigned wt)
{
	pb_varint(p, (uint64_t)field << 3 | wt);
}

static inline void pb_uint(struct pb *p, unsigned field, uint64_t v)
{
	pb_tag(p, field, WT_VARINT);
	pb_varint(p, v);
}

static void pb_fixed64(struct pb *p, unsigned field, uint64_t v)
{
	pb_tag(p, field, WT_I64);
	if (pb_grow(p, 8) < 0)
		return;
	for (int i = 0; i < 8; i++)
		p->buf[p->len++] = (unsigned char)(v >> (8 * i));
}

static int count_write(void *ctx, const char *p, size_t n)
{
	(void)p;
	*(size_t *)ctx += n;
	return 0;
}

static int pb_write(void *ctx, const char *s, size_t n)
{
	struct pb *p = ctx;

	memcpy(p->buf + p->len, s, n);
	p->len += n;
	return 0;
}

/* A string field: proto3 `string`s must be UTF-8, and Perfetto shows them as
 * text: what is not printable UTF-8 is '?' (nf_esc_text; never longer). */
static void pb_string(struct pb *p, unsigned field, const char *s)
{
	size_t n = strlen(s), clean = 0;
	bool is_clean = nf_esc_text_is_clean(s, 0);

	if (!is_clean)
		nf_esc_text(s, n, 0, count_write, &clean);
	pb_tag(p, field, WT_LEN);
	pb_varint(p, is_clean ? n : clean);
	if (pb_grow(p, n) == 0) {
		if (is_clean)
			pb_write(p, s, n);
		else
			nf_esc_text(s, n, 0, pb_write, p);
	}
}

static void pb_open(struct pb *p, unsigned field)
{
	pb_tag(p, field, WT_LEN);
	if (p->depth >= PB_MAX_DEPTH || pb_grow(p, PB_LEN_ROOM) < 0) {
		p->oom = 1;
		return;
	}
	p->open[p->depth++] = p->len;
	p->len += PB_LEN_ROOM;
}

static void pb_close(struct pb *p)
{
	size_t at, body, n;
	unsigned char tmp[10];

	if (p->oom || p->depth == 0)
		return;
	at = p->open[--p->depth];
	body = p->len - at - PB_LEN_ROOM;
	n = varint_put(tmp, body);
	if (n > PB_LEN_ROOM) {
		if (pb_grow(p, n - PB_LEN_ROOM) < 0)
			return;
		memmove(p->buf + at + n, p->buf + at + PB_LEN_ROOM, body);
		p->len += n - PB_LEN_ROOM;
	}
	memcpy(p->buf + at, tmp, n);
}

/* Starts a TracePacket (built in p, written by packet_end). */
static void packet_begin(struct pb *p, int64_t ts, int with_ts)
{
	p->len = 0;
	p->depth = 0;
	/* Perfetto's timestamps are unsigned: a time before the session's
	 * start (only a planted timeline has one) is written as 0, not 2^64 - t */
	if (with_ts)
		pb_uint(p, TP_TIMESTAMP, ts < 0 ? 0 : (uint64_t)ts);
	pb_uint(p, TP_SEQUENCE_ID, SEQ_ID);
}

static int packet_end(struct pf_writer *pw)
{
	struct pb *p = &pw->p;
	unsigned char hdr[11];
	size_t n = 0;

	if (p->oom)
		return NF_ENOMEM;
	hdr[n++] = TRACE_PACKET << 3 | WT_LEN;
	n += varint_put(hdr + n, p->len);
	nf_xout_put(pw->w.out, hdr, n);
	nf_xout_put(pw->w.out, p->buf, p->len);
	return pw->w.out->failed ? NF_EIO : 0;
}

static int pf_begin(struct nf_xwriter *w)
{
	struct pf_writer *pw = (struct pf_writer *)w;

	packet_begin(&pw->p, 0, 0);
	pb_uint(&pw->p, TP_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
	return packet_end(pw);
}

static int pf_track(struct nf_xwriter *w, const struct nf_xtrack *t)
{
	struct pf_writer *pw = (struct pf_writer *)w;
	struct pb *p = &pw->p;

	packet_begin(p, 0, 0);
	pb_open(p, TP_TRACK_DESCRIPTOR);
	pb_uint(p, TD_UUID, t->uuid);
	if (t->parent)
		pb_uint(p, TD_PARENT_UUID, t->parent);
	switch (t->kind) {
	case NF_XT_PROCESS:
		pb_open(p, TD_PROCESS);
		pb_uint(p, PD_PID, (uint64_t)(int64_t)t->pid);
		pb_string(p, PD_PROCESS_NAME, t->name);
		pb_close(p);
		break;
	case NF_XT_THREAD:
		pb_open(p, TD_THREAD);
		pb_uint(p, THD_PID, (uint64_t)(int64_t)t->pid);
		pb_uint(p, THD_TID, (uint64_t)(int64_t)t->tid);
		pb_string(p, THD_THREAD_NAME, t->name);
		pb_close(p);
		break;
	case NF_XT_COUNTER:
		pb_string(p, TD_NAME, t->name);
		pb_open(p, TD_COUNTER);
		pb_uint(p, CD_UNIT, UNIT_COUNT);
		pb_close(p);
		break;
	case NF_XT_PLAIN:
		pb_string(p, TD_NAME, t->name);
		break;
	}
	pb_close(p);
	return packet_end(pw);
}

static void put_args(struct pb *p, const struct nf_xevent *e, const uint32_t *key_iid)
{
	for (int i = 0; i < e->n_args; i++) {
		const struct nf_xarg *a = &e->args[i];

		pb_open(p, TE_DEBUG_ANNOTATIONS);
		if (key_iid[i])
			pb_uint(p, DA_NAME_IID, key_iid[i]);
		else
			pb_string(p, DA_NAME, a->key);
		if (a->type == NF_XA_STR)
			pb_string(p, DA_STRING_VALUE, a->s ? a->s : "");
		else if (a->type == NF_XA_HEX)
			pb_uint(p, DA_POINTER_VALUE, (uint64_t)a->i);
		else if (a->i < 0)
			pb_uint(p, DA_INT_VALUE, (uint64_t)a->i);
		else
			pb_uint(p, DA_UINT_VALUE, (uint64_t)a->i);
		pb_close(p);
	}
}

/* interned_data with the strings first used by this packet. */
static void put_fresh(struct pb *p, const struct fresh *f, int n)
{
	if (!n)
		return;
	pb_open(p, TP_INTERNED_DATA);
	for (int i = 0; i < n; i++) {
		pb_open(p, f[i].kind);
		pb_uint(p, IE_IID, f[i].iid);
		pb_string(p, IE_NAME, f[i].s);
		pb_close(p);
	}
	pb_close(p);
}

static int slice_end(struct pf_writer *pw, uint64_t track, int64_t ts, uint64_t flow_in,
		     const uint64_t *more, size_t n_more)
{
	packet_begin(&pw->p, ts, 1);
	pb_open(&pw->p, TP_TRACK_EVENT);
	pb_uint(&pw->p, TE_TYPE, TYPE_SLICE_END);
	pb_uint(&pw->p, TE_TRACK_UUID, track);
	if (flow_in)
		pb_fixed64(&pw->p, TE_TERMINATING_FLOW_IDS, flow_in);
	for (size_t i = 0; i < n_more; i++)
		pb_fixed64(&pw->p, TE_TERMINATING_FLOW_IDS, more[i]);
	pb_close(&pw->p);
	return packet_end(pw);
}

static int pf_event(struct nf_xwriter *w, const struct nf_xevent *e)
{
	struct pf_writer *pw = (struct pf_writer *)w;
	struct pb *p = &pw->p;
	uint64_t track = e->track->uuid;
	struct fresh fresh[NF_XARGS_MAX + 2];
	uint32_t name_iid, cat_iid = 0, key_iid[NF_XARGS_MAX];
	int n_fresh = 0, is_new, oom = 0, ret;

	name_iid = e->name_key ? intern_keyed(pw, e->name_key, e->name, &is_new, &oom)
			       : intern_get(&pw->names, e->name, &is_new, &oom);
	if (is_new)
		fresh[n_fresh++] = (struct fresh){ ID_EVENT_NAMES, name_iid, e->name };
	if (e->cat) {
		cat_iid = intern_lit(&pw->cats, e->cat, &is_new, &oom);
		if (is_new)
			fresh[n_fresh++] = (struct fresh){ ID_EVENT_CATEGORIES, cat_iid, e->cat };
	}
	for (int i = 0; i < e->n_args; i++) {
		key_iid[i] = intern_lit(&pw->keys, e->args[i].key, &is_new, &oom);
		if (is_new)
			fresh[n_fresh++] = (struct fresh){ ID_DEBUG_ANNOTATION_NAMES, key_iid[i],
							   e->args[i].key };
	}
	if (oom)
		return NF_ENOMEM;
	packet_begin(p, e->ts, 1);
	pb_uint(p, TP_SEQUENCE_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
	put_fresh(p, fresh, n_fresh);
	pb_open(p, TP_TRACK_EVENT);
	pb_uint(p, TE_TYPE, e->instant ? TYPE_INSTANT : TYPE_SLICE_BEGIN);
	pb_uint(p, TE_TRACK_UUID, track);
	if (cat_iid)
		pb_uint(p, TE_CATEGORY_IIDS, cat_iid);
	else if (e->cat)
		pb_string(p, TE_CATEGORIES, e->cat);
	if (name_iid)
		pb_uint(p, TE_NAME_IID, name_iid);
	else
		pb_string(p, TE_NAME, e->name);
	put_args(p, e, key_iid);
	for (size_t i = 0; i < e->n_flows_out; i++)
		pb_fixed64(p, TE_FLOW_IDS, e->flows_out[i]);
	if (e->flow_in && e->instant)
		pb_fixed64(p, TE_TERMINATING_FLOW_IDS, e->flow_in);
	for (size_t i = 0; e->instant && i < e->n_flows_in; i++)
		pb_fixed64(p, TE_TERMINATING_FLOW_IDS, e->flows_in[i]);
	pb_close(p);
	if ((ret = packet_end(pw)) < 0 || e->instant)
		return ret;
	if (e->stall_ts >= 0) {
		uint32_t stall_iid = intern_lit(&pw->names, "stall", &is_new, &oom);

		if (oom)
			return NF_ENOMEM;
		packet_begin(p, e->stall_ts, 1);
		pb_uint(p, TP_SEQUENCE_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
		if (is_new) {
			fresh[0] = (struct fresh){ ID_EVENT_NAMES, stall_iid, "stall" };
			put_fresh(p, fresh, 1);
		}
		pb_open(p, TP_TRACK_EVENT);
		pb_uint(p, TE_TYPE, TYPE_SLICE_BEGIN);
		pb_uint(p, TE_TRACK_UUID, track);
		if (stall_iid)
			pb_uint(p, TE_NAME_IID, stall_iid);
		else
			pb_string(p, TE_NAME, "stall");
		pb_close(p);
		if ((ret = packet_end(pw)) < 0 || (ret = slice_end(pw, track, e->end, 0, NULL, 0)) < 0)
			return ret;
	}
	/* A flow ends on the wait's END: trace_processor links flows in time order,
	 * and the signal (queued, the flow's start) may come after the wait was
	 * queued but not after it ended. */
	return slice_end(pw, track, e->end, e->flow_in, e->flows_in, e->n_flows_in);
}

static int pf_counter(struct nf_xwriter *w, const struct nf_xtrack *t, int64_t ts, int64_t value)
{
	struct pf_writer *pw = (struct pf_writer *)w;
	struct pb *p = &pw->p;

	packet_begin(p, ts, 1);
	pb_open(p, TP_TRACK_EVENT);
	pb_uint(p, TE_TYPE, TYPE_COUNTER);
	pb_uint(p, TE_TRACK_UUID, t->uuid);
	pb_uint(p, TE_COUNTER_VALUE, (uint64_t)value);
	pb_close(p);
	return packet_end(pw);
}

static int pf_end(struct nf_xwriter *w)
{
	(void)w;
	return 0;
}

static void pf_destroy(struct nf_xwriter *w)
{
	struct pf_writer *pw = (struct pf_writer *)w;

	if (!pw)
		return;
	free(pw->p.buf);
	intern_release(&pw->names);
	intern_release(&pw->cats);
	intern_release(&pw->keys);
	free(pw->by_key.key);
	free(pw->by_key.iid);
	free(pw);
}

struct nf_xwriter *nf_export_perfetto_create(struct nf_xout *out)
{
	struct pf_writer *pw = calloc(1, sizeof(*pw));

	if (!pw)
		return NULL;
	pw->w.begin = pf_begin;
	pw->w.track = pf_track;
	pw->w.event = pf_event;
	pw->w.counter = pf_counter;
	pw->w.end = pf_end;
	pw->w.destroy = pf_destroy;
	pw->w.out = out;
	return &pw->w;
}
