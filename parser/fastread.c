/*
 * The native reader: for sessions whose metadata nftrace generated at this
 * schema version (capture/ctf_writer.c), decode the CTF packets directly
 * instead of going through babeltrace2's graph (~0.5 s per million entries).
 *
 * Layout (all little endian, byte aligned, no padding between fields):
 *   packet header   magic u32, uuid[16], stream_id u32
 *   packet context  timestamp_begin, timestamp_end, content_size (bits),
 *                   packet_size (bits), events_discarded, packet_seq_num (u64)
 *   event header    id u32, timestamp u64 (CPU clock cycles)
 *   payload         the schema's fields in order: u8/u16/u32/u64, strings
 *                   NUL-terminated, sequences right after their length field
 *                   (u32 elements or 48-byte DXGK_NATIVE_FENCE_LOG_ENTRY).
 *
 * Order: every stream file is a stream (no stream instance id), and the
 * events of all streams are merged the way filter.utils.muxer 2.0 does:
 * by nanoseconds from origin (converted exactly as babeltrace2 does, through
 * a double), ties broken by stream class id, then by stream id, which
 * source.ctf.fs assigns in the order of the files' paths. Like the muxer,
 * a time going backwards within a stream (packet beginning, events, packet
 * end) is an error. Only the current packet of each stream is mapped, and
 * what a large packet's reading left behind is handed back every few MiB.
 */
#include "fastread.h"
#include "contract/errors.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "contract/capbuf.h"

#define NF_FR_MAGIC 0xc1fc1fc1u
#define NF_FR_HDR_SIZE 72u
#define NF_FR_EV_HDR_SIZE 12u
#define NF_FR_RELEASE_STEP (4u << 20)

struct nf_fr_stream {
	char *path;
	const char *name;            /* base name, for findings */
	int fd;
	uint64_t size;
	uint32_t class_id;
	bool class_known;
	size_t order;                /* stream id: rank of the path */
	/* the mapped packet */
	const unsigned char *map;
	size_t map_len;
	uint64_t map_off;            /* file offset of map[0] */
	uint64_t released;           /* pages before this offset were handed back */
	uint64_t pkt_off, pkt_bytes, content_end, pos, seq_num, n_packets;
	int64_t ts_end_ns;
	bool in_packet;
	uint64_t disc_prev;
	int64_t last_ns;             /* last time of this stream's messages */
	bool have_last;
	/* the next event */
	bool has_head, done;
	int64_t head_ns;
	uint32_t head_id;
	uint64_t head_ts;
};

struct nf_fr {
	const char *dir;
	const struct nf_fr_trace *tr;
	const struct nf_fr_sink *sink;
	struct nf_error *err;
	int64_t base_ns;
	size_t page;
	struct nf_fr_stream *s;
	size_t n;
	uint64_t index;              /* events delivered (the session's event index) */
	uint32_t *u32s;
	size_t cap_u32s;
	struct nf_log_entry *entries;
	size_t cap_entries;
};

static inline uint64_t fr_le(const unsigned char *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

static inline uint64_t fr_le64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static inline uint32_t fr_le32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* babeltrace2's cycles -> ns (bt_util_ns_from_value): a double division. */
static uint64_t fr_ns_from_value(uint64_t freq, uint64_t v)
{
	double d;

	if (freq == UINT64_C(1000000000))
		return v;
	d = 1e9 * (double)v / (double)freq;
	if (d >= (double)UINT64_MAX)
		return UINT64_MAX;
	return (uint64_t)d;
}

/* Nanoseconds from origin, -1 when babeltrace2 would report an overflow. */
static int fr_ns(const struct nf_fr *r, uint64_t cycles, int64_t *out)
{
	uint64_t ns = fr_ns_from_value(r->tr->freq, cycles);

	if (ns >= (uint64_t)INT64_MAX)
		return -1;
	if (r->base_ns > 0 && (int64_t)ns > INT64_MAX - r->base_ns)
		return -1;
	*out = r->base_ns + (int64_t)ns;
	return 0;
}

static const unsigned char *fr_at(const struct nf_fr_stream *s, uint64_t off)
{
	return s->map + (off - s->map_off);
}

static void fr_unmap(struct nf_fr_stream *s)
{
	if (s->map)
		munmap((void *)(uintptr_t)s->map, s->map_len);
	s->map = NULL;
	s->map_len = 0;
}

/* A message of stream s at time ns: it may not go back in time. */
static int fr_time(struct nf_fr *r, struct nf_fr_stream *s, int64_t ns, const char *what,
		      uint64_t at)
{
	if (s->have_last && ns < s->last_ns)
		return nf_error_set(r->err, NF_EFORMAT,
				    "%s: packet at offset %" PRIu64 ": %s at offset %" PRIu64
				    " goes back in time (%" PRId64 " ns after %" PRId64 " ns; corrupt)",
				    s->path, s->pkt_off, what, at, ns, s->last_ns);
	s->last_ns = ns;
	s->have_last = true;
	return 0;
}

static int fr_range(struct nf_fr *r, const struct nf_fr_stream *s, uint64_t at)
{
	return nf_error_set(r->err, NF_EFORMAT,
			    "%s: packet at offset %" PRIu64 ": timestamp at offset %" PRIu64
			    " is out of range in nanoseconds (corrupt)", s->path, s->pkt_off, at);
}

/* Opens the packet at s->pkt_off (the previous one is unmapped). */
static int fr_packet(struct nf_fr *r, struct nf_fr_stream *s)
{
	unsigned char h[NF_FR_HDR_SIZE];
	uint64_t off = s->pkt_off, left = s->size - off, content, packet, disc;
	uint32_t class_id;
	int64_t ns;
	ssize_t got;
	void *m;

	fr_unmap(s);
	if (left < NF_FR_HDR_SIZE)
		return nf_error_set(r->err, NF_EFORMAT,
				    "%s: packet at offset %" PRIu64 ": header cut short (%" PRIu64
				    " of %u bytes; truncated file)", s->path, off, left, NF_FR_HDR_SIZE);
	got = pread(s->fd, h, sizeof(h), (off_t)off);
	if (got < 0)
		return nf_error_set(r->err, NF_EIO, "%s: %s", s->path, strerror(errno));
	if ((size_t)got != sizeof(h))
		return nf_error_set(r->err, NF_EFORMAT,
				    "%s: packet at offset %" PRIu64 ": header cut short (truncated file)",
				    s->path, off);
	if (fr_le(h, 4) != NF_FR_MAGIC)
		return nf_error_set(r->err, NF_EFORMAT,
				    "%s: packet at offset %" PRIu64 ": bad magic 0x%08" PRIx64 " (corrupt)",
				    s->path, off, fr_le(h, 4));
	/* The UUID is not compared: babeltrace2 2.0.4 reads on when it differs. */
	class_id = (uint32_t)fr_le(h + 20, 4);
	if (class_id >= 32 || !(r->tr->stream_classes & (UINT32_C(1) << class_id)) ||
	    (s->class_known && class_id != s->class_id))
		return nf_error_set(r->err, NF_EFORMAT,
				    "%s: packet at offset %" PRIu64 ": stream id %" PRIu32
				    " is not in the metadata or not this stream's (corrupt)",
				    s->path, off, class_id);
	s->class_id = class_id;
	s->class_known = true;
	content = fr_le(h + 40, 8);
	packet = fr_le(h + 48, 8);
	if (packet % 8 || content % 8 || content > packet || content < NF_FR_HDR_SIZE * 8u)
		return nf_error_set(r->err, NF_EFORMAT,
				    "%s: packet at offset %" PRIu64 ": content size %" PRIu64
				    " bits and packet size %" PRIu64 " bits do not fit together (corrupt)",
				    s->path, off, content, packet);
	if (packet / 8 > left)
		return nf_error_set(r->err, NF_EFORMAT,
				    "%s: packet at offset %" PRIu64 " claims %" PRIu64
				    " bytes but the file has %" PRIu64 " left (truncated or corrupt)",
				    s->path, off, packet / 8, left);
	/* Packet beginning: its time may not go back. */
	if (fr_ns(r, fr_le(h + 24, 8), &ns))
		return fr_range(r, s, off + 24);
	if (fr_time(r, s, ns, "packet beginning", off + 24))
		return r->err->code;
	if (fr_ns(r, fr_le(h + 32, 8), &s->ts_end_ns))
		return fr_range(r, s, off + 32);
	/* Discarded events: what the counter grew by since the stream's previous
	 * packet (babeltrace2 2.0.4 reports nothing for a first packet). */
	disc = fr_le(h + 56, 8);
	if (off == 0)
		s->disc_prev = disc;
	if (disc != s->disc_prev) {
		if (r->sink->discarded)
			r->sink->discarded(r->sink->ctx, disc - s->disc_prev);
		s->disc_prev = disc;
	}
	/* Findings name the packet by its ordinal in the stream: babeltrace2 keeps
	 * packet_seq_num out of the packet context it hands over, so the graph
	 * path falls back to the ordinal too (they are equal in an intact file). */
	s->seq_num = s->n_packets++;
	s->pkt_bytes = packet / 8;
	s->content_end = off + content / 8;
	s->pos = off + NF_FR_HDR_SIZE;
	s->map_off = off / r->page * r->page;
	s->map_len = (size_t)(s->content_end - s->map_off);
	m = mmap(NULL, s->map_len, PROT_READ, MAP_PRIVATE, s->fd, (off_t)s->map_off);
	if (m == MAP_FAILED) {
		s->map_len = 0;
		return nf_error_set(r->err, NF_EIO, "%s: cannot map the packet at offset %" PRIu64 ": %s",
				    s->path, off, strerror(errno));
	}
	s->map = m;
	s->released = s->map_off;
	madvise(m, s->map_len, MADV_WILLNEED);
	s->in_packet = true;
	return 0;
}

/* Finds s's next event header (across packets); sets has_head or done. */
static int fr_advance(struct nf_fr *r, struct nf_fr_stream *s)
{
	int rc;

	s->has_head = false;
	for (;;) {
		if (s->in_packet && s->pos < s->content_end) {
			const unsigned char *p;
			uint64_t at = s->pos;

			if (s->content_end - at < NF_FR_EV_HDR_SIZE)
				return nf_error_set(r->err, NF_EFORMAT,
						    "%s: packet at offset %" PRIu64 ": event at offset %" PRIu64
						    " cut short (%" PRIu64 " bytes left in the packet's content)",
						    s->path, s->pkt_off, at, s->content_end - at);
			/* A big packet stays out of our resident set as it is read:
			 * nothing before `at` is referenced any more. */
			if (at - s->released >= NF_FR_RELEASE_STEP) {
				uint64_t upto = at / r->page * r->page;

				madvise((void *)(uintptr_t)fr_at(s, s->released),
					(size_t)(upto - s->released), MADV_DONTNEED);
				s->released = upto;
			}
			p = fr_at(s, at);
			s->head_id = fr_le32(p);
			s->head_ts = fr_le64(p + 4);
			if (fr_ns(r, s->head_ts, &s->head_ns))
				return fr_range(r, s, at + 4);
			if (fr_time(r, s, s->head_ns, "event", at))
				return r->err->code;
			s->has_head = true;
			return 0;
		}
		if (s->in_packet) {
			/* Packet end. */
			if (fr_time(r, s, s->ts_end_ns, "packet end", s->pkt_off + 32))
				return r->err->code;
			s->in_packet = false;
			s->pkt_off += s->pkt_bytes;
		}
		if (s->pkt_off >= s->size) {
			fr_unmap(s);
			s->done = true;
			return 0;
		}
		rc = fr_packet(r, s);
		if (rc)
			return rc;
	}
}

int nf_parser_buf_reserve(void **buf, size_t *cap, size_t n, size_t sz, struct nf_error *err)
{
	if (nf_array_reserve(buf, cap, n, sz, 64, 0))
		return nf_error_set(err, NF_ENOMEM, "out of memory for a sequence of %zu elements", n);
	return 0;
}

/* Decodes s's head event and hands it to the sink; moves s past it. */
static int fr_deliver(struct nf_fr *r, struct nf_fr_stream *s)
{
	const struct nf_event_desc *d = nf_event_desc(s->head_id);
	uint64_t ev_at = s->pos, pos = s->pos + NF_FR_EV_HDR_SIZE, end = s->content_end;
	uint64_t index = r->index++;
	struct nf_event ev;
	int rc;

	if (!d || (uint32_t)d->stream != s->class_id)
		return nf_error_set(r->err, NF_EFORMAT,
				    "%s: packet at offset %" PRIu64 ": event at offset %" PRIu64
				    " has id %" PRIu32 ", not an event of stream %" PRIu32 " (corrupt)",
				    s->path, s->pkt_off, ev_at, s->head_id, s->class_id);
	memset(&ev, 0, sizeof(ev));
	ev.id = s->head_id;
	ev.ts = s->head_ts;
	for (uint32_t i = 0; i < d->n_fields; i++) {
		const struct nf_field_desc *fd = &d->fields[i];
		const unsigned char *p = fr_at(s, pos), *z;
		uint64_t left = end - pos, need, n;

		switch (fd->type) {
		case NF_FT_U8: need = 1; break;
		case NF_FT_U16: need = 2; break;
		case NF_FT_U32: need = 4; break;
		case NF_FT_U64: need = 8; break;
		case NF_FT_STR:
			z = memchr(p, '\0', (size_t)left);
			if (!z)
				return nf_error_set(r->err, NF_EFORMAT,
						    "%s: packet at offset %" PRIu64 ": event %s at offset %" PRIu64
						    ": string '%s' runs past the packet's content",
						    s->path, s->pkt_off, d->name, ev_at, fd->name);
			ev.str = (const char *)p;
			pos += (uint64_t)(z - p) + 1;
			continue;
		case NF_FT_U32SEQ:
		case NF_FT_ENTRIES: {
			uint64_t el = fd->type == NF_FT_U32SEQ ? 4 : NF_LOG_ENTRY_SIZE;

			n = i ? ev.f[i - 1] : 0;
			if (n > left / el)
				return nf_error_set(r->err, NF_EFORMAT,
						    "%s: packet at offset %" PRIu64 ": event %s at offset %" PRIu64
						    ": '%s' claims %" PRIu64 " elements but the packet has room for %" PRIu64,
						    s->path, s->pkt_off, d->name, ev_at, fd->name, n, left / el);
			if (n > NF_READER_MAX_SEQ)
				return nf_error_set(r->err, NF_EFORMAT,
						    "%s: event %" PRIu64 ": field '%s' has %" PRIu64 " elements (limit %u)",
						    r->dir, index, fd->name, n, NF_READER_MAX_SEQ);
			if (fd->type == NF_FT_U32SEQ) {
				rc = nf_parser_buf_reserve((void **)&r->u32s, &r->cap_u32s, (size_t)n,
						   sizeof(*r->u32s), r->err);
				if (rc)
					return rc;
				if (n)
					memcpy(r->u32s, p, (size_t)(n * el));
				ev.u32s = r->u32s;
			} else {
				rc = nf_parser_buf_reserve((void **)&r->entries, &r->cap_entries, (size_t)n,
						   sizeof(*r->entries), r->err);
				if (rc)
					return rc;
				/* struct nf_log_entry is the 48 bytes, little endian. */
				if (n)
					memcpy(r->entries, p, (size_t)(n * el));
				ev.entries = r->entries;
			}
			pos += n * el;
			continue;
		}
		default:
			need = UINT64_MAX;
			break;
		}
		if (need > left)
			return nf_error_set(r->err, NF_EFORMAT,
					    "%s: packet at offset %" PRIu64 ": event %s at offset %" PRIu64
					    ": field '%s' cut short (corrupt or truncated)",
					    s->path, s->pkt_off, d->name, ev_at, fd->name);
		ev.f[i] = fr_le(p, (unsigned)need);
		pos += need;
	}
	s->pos = pos;
	rc = r->sink->event(r->sink->ctx, &ev, s->name, s->seq_num);
	if (rc)
		return rc;
	return fr_advance(r, s);
}

static int fr_cmp_path(const void *a, const void *b)
{
	const struct nf_fr_stream *x = a, *y = b;

	return strcmp(x->path, y->path);
}

/* The stream files: every visible file but the metadata, as babeltrace2 reads them. */
static int fr_open_streams(struct nf_fr *r)
{
	struct dirent *de;
	size_t cap = 0;
	DIR *d = opendir(r->dir);
	int rc = 0;

	if (!d)
		return nf_error_set(r->err, NF_ENOENT, "%s: %s", r->dir, strerror(errno));
	while ((de = readdir(d)) != NULL) {
		size_t len;

		if (de->d_name[0] == '.' || strcmp(de->d_name, "metadata") == 0)
			continue;
		if (r->n == cap) {
			size_t ncap = cap ? cap * 2 : 8;
			struct nf_fr_stream *ns = realloc(r->s, ncap * sizeof(*ns));

			if (!ns) {
				rc = nf_error_set(r->err, NF_ENOMEM, "out of memory");
				break;
			}
			r->s = ns;
			cap = ncap;
		}
		struct nf_fr_stream *s = &r->s[r->n];
		memset(s, 0, sizeof(*s));
		s->fd = -1;
		len = strlen(r->dir) + strlen(de->d_name) + 2;
		s->path = malloc(len);
		if (!s->path) {
			rc = nf_error_set(r->err, NF_ENOMEM, "out of memory");
			break;
		}
		snprintf(s->path, len, "%s/%s", r->dir, de->d_name);
		r->n++;
	}
	closedir(d);
	if (rc)
		return rc;
	qsort(r->s, r->n, sizeof(*r->s), fr_cmp_path);
	for (size_t i = 0; i < r->n; i++) {
		struct nf_fr_stream *s = &r->s[i];
		struct stat st;
		const char *slash = strrchr(s->path, '/');

		s->name = slash ? slash + 1 : s->path;
		s->order = i;
		s->fd = open(s->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (s->fd < 0)
			return nf_error_set(r->err, NF_EIO, "%s: %s", s->path, strerror(errno));
		if (fstat(s->fd, &st) != 0)
			return nf_error_set(r->err, NF_EIO, "%s: %s", s->path, strerror(errno));
		if (!S_ISREG(st.st_mode))
			return nf_error_set(r->err, NF_EFORMAT,
					    "%s: is not a regular file; a session holds plain files only", s->path);
		s->size = (uint64_t)st.st_size;
		if (s->size == 0)
			return nf_error_set(r->err, NF_EFORMAT,
					    "%s: empty stream file (cut before its first packet)", s->path);
	}
	return 0;
}

int nf_fastread_run(const char *dir, const struct nf_fr_trace *tr, const struct nf_fr_sink *sink,
		    struct nf_error *err)
{
	struct nf_fr r = { .dir = dir, .tr = tr, .sink = sink, .err = err };
	int rc;

	r.page = (size_t)sysconf(_SC_PAGESIZE);
	if (tr->freq == 0 || tr->freq == UINT64_MAX || tr->offset_cycles >= tr->freq ||
	    tr->offset_s <= INT64_MIN / INT64_C(1000000000) - 1 ||
	    tr->offset_s >= INT64_MAX / INT64_C(1000000000) - 1)
		return nf_error_set(err, NF_EFORMAT, "%s/metadata: clock offset or frequency out of range", dir);
	r.base_ns = tr->offset_s * INT64_C(1000000000) +
		    (int64_t)fr_ns_from_value(tr->freq, tr->offset_cycles);
	rc = fr_open_streams(&r);
	for (size_t i = 0; !rc && i < r.n; i++)
		rc = fr_advance(&r, &r.s[i]);
	while (!rc) {
		struct nf_fr_stream *best = NULL;

		for (size_t i = 0; i < r.n; i++) {
			struct nf_fr_stream *s = &r.s[i];

			if (!s->has_head)
				continue;
			/* The muxer: earliest time, then stream class id, then stream id. */
			if (!best || s->head_ns < best->head_ns ||
			    (s->head_ns == best->head_ns &&
			     (s->class_id < best->class_id ||
			      (s->class_id == best->class_id && s->order < best->order))))
				best = s;
		}
		if (!best)
			break;
		rc = fr_deliver(&r, best);
	}
	for (size_t i = 0; i < r.n; i++) {
		fr_unmap(&r.s[i]);
		if (r.s[i].fd >= 0)
			close(r.s[i].fd);
		free(r.s[i].path);
	}
	free(r.s);
	free(r.u32s);
	free(r.entries);
	return rc;
}
