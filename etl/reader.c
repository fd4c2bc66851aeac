/*
 * The ETL reader (include/contract/etl.h): opens a file, reads its logfile
 * header, indexes every buffer by its header, then hands the records out
 * merged by timestamp (or in file order), counting them per
 * provider, id and version.
 *
 * The open reads every buffer's header and the head of its first record
 * (whose timestamp orders the merge), not the records: each record is read
 * once, when the merge reaches its buffer, and validated when handed out.
 *
 * Memory: the index holds 32 bytes per non-empty buffer (0.05 % of a file
 * of 64 KiB buffers); the merge holds only the buffers whose time span
 * overlaps the current time (about one per CPU), never more than
 * NF_ETL_MAX_OPEN_BYTES.
 */
#include "contract/etl.h"
#include "contract/errors.h"
#include "contract/infile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "etl_int.h"

#include "contract/capbuf.h"
#include "contract/util_hash.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "etl/ loads little-endian fields with memcpy");

#define BUF_HDR 72u           /* WMI_BUFFER_HEADER */
#define MIN_BUFFER_SIZE 128u  /* a buffer header and one short record */

/* WMI_BUFFER_HEADER fields used. */
#define BH_SIZE 0x00
#define BH_SAVED 0x04
#define BH_TS 0x10
#define BH_CPU 0x28
#define BH_OFFSET 0x30
#define BH_FLAG 0x34
#define BH_TYPE 0x36

#define BF_EVENTS_LOST 0x2
#define BF_BUFFER_LOST 0x4
#define BF_COMPRESSED 0x40

const struct nf_etl_guid nf_etl_guid_dxgkrnl = {
	0x802ec45a, 0x1e99, 0x4b83, {0x99, 0x20, 0x87, 0xc9, 0x82, 0x77, 0xba, 0x9d}};

/* One non-empty buffer of the file. */
struct buf_index {
	uint64_t off;          /* file offset */
	int64_t first_ts;      /* its first record's timestamp */
	uint64_t nr;           /* buffer number in file order */
	uint32_t end;          /* end of records (Offset) */
	uint16_t cpu;
};

/* A buffer being read by the merge. */
struct cursor {
	uint8_t *data;         /* the buffer's bytes (end bytes) */
	uint32_t end;
	uint32_t pos;          /* next record */
	int64_t ts;            /* next record's timestamp */
	int64_t prev_ts;       /* for records without their own timestamp */
	const struct buf_index *bi;
};

struct count_slot {
	uint32_t idx1;         /* index + 1 into counts, 0 empty */
};

struct nf_etl_reader {
	/* Source. */
	int fd;
	const uint8_t *mem;
	char *name;
	unsigned flags;
	struct nf_etl_logfile lf;

	/* Index of the non-empty buffers: in file order, then sorted by first_ts. */
	struct buf_index *idx;
	size_t nidx;
	size_t next_open;      /* next buffer of idx to open */

	/* The merge: a min-heap of cursors by (ts, buffer number). */
	struct cursor **heap;
	size_t nheap, capheap;
	struct cursor *cur_single; /* file order: the one cursor */
	uint64_t open_bytes;
	uint8_t **pool;        /* free buffer memory of lf.buffer_size-capacity */
	size_t npool, cappool;
	uint32_t pool_size;    /* capacity of each pooled buffer */

	/* The record handed out last stays valid until the next call: its
	 * cursor is advanced (and maybe released) lazily. */
	struct cursor *pending;

	/* Counts. */
	struct nf_etl_count *counts;
	size_t ncounts, capcounts;
	struct count_slot *slots;
	size_t nslots;         /* power of two */
	uint64_t overflow;
	struct nf_etl_count *sorted;
	size_t nsorted_cap;
	size_t last_count;     /* the slot of the previous record: most records repeat it */
	bool have_last;

	uint64_t events;
	int failed;            /* sticky error code */
	struct nf_error fail_err;

	struct nf_etl_dxg_record dxg;
};

/* ------------------------------------------------------------------------ */

void nf_etl_guid_format(const struct nf_etl_guid *g, char out[NF_ETL_GUID_STR])
{
	snprintf(out, NF_ETL_GUID_STR, "%08x-%04x-%04x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 g->data1, g->data2, g->data3, g->data4[0], g->data4[1], g->data4[2], g->data4[3],
		 g->data4[4], g->data4[5], g->data4[6], g->data4[7]);
}

bool nf_etl_guid_eq(const struct nf_etl_guid *a, const struct nf_etl_guid *b)
{
	return a->data1 == b->data1 && a->data2 == b->data2 && a->data3 == b->data3 &&
	       memcmp(a->data4, b->data4, 8) == 0;
}

static void guid_load(struct nf_etl_guid *g, const uint8_t *p)
{
	g->data1 = etl_u32(p);
	g->data2 = etl_u16(p + 4);
	g->data3 = etl_u16(p + 6);
	memcpy(g->data4, p + 8, 8);
}

const char *nf_etl_provider_name(const struct nf_etl_guid *g)
{
	if (nf_etl_guid_eq(g, &nf_etl_guid_dxgkrnl))
		return "Microsoft-Windows-DxgKrnl";
	return NULL;
}

const char *nf_etl_kernel_group_name(uint8_t group)
{
	/* The NT kernel logger's event groups (HookId high byte). */
	switch (group) {
	case 0x00: return "EventTrace";
	case 0x01: return "DiskIo";
	case 0x02: return "PageFault";
	case 0x03: return "Process";
	case 0x04: return "FileIo";
	case 0x05: return "Thread";
	case 0x06: return "TcpIp";
	case 0x09: return "Registry";
	case 0x0F: return "PerfInfo";
	case 0x11: return "UdpIp";
	case 0x14: return "Image";
	case 0x15: return "SystemConfig";
	case 0x18: return "StackWalk";
	case 0x1A: return "ALPC";
	default: return NULL;
	}
}

const char *nf_etl_header_kind_name(int kind)
{
	switch (kind) {
	case NF_ETL_HDR_SYSTEM: return "system";
	case NF_ETL_HDR_COMPACT: return "compact";
	case NF_ETL_HDR_PERFINFO: return "perfinfo";
	case NF_ETL_HDR_EVENT: return "event";
	case NF_ETL_HDR_FULL: return "full";
	case NF_ETL_HDR_INSTANCE: return "instance";
	case NF_ETL_HDR_TIMED: return "timed";
	case NF_ETL_HDR_ERROR: return "error";
	case NF_ETL_HDR_WNODE: return "wnode";
	case NF_ETL_HDR_MESSAGE: return "message";
	default: return "?";
	}
}

size_t nf_etl_utf16_to_utf8(const uint8_t *p, size_t n, char *out, size_t cap)
{
	size_t o = 0;
	if (cap == 0)
		return 0;
	for (size_t i = 0; i + 1 < n; i += 2) {
		uint32_t c = etl_u16(p + i);
		if (c == 0)
			break;
		if (c >= 0xD800 && c <= 0xDBFF && i + 3 < n) {
			uint32_t c2 = etl_u16(p + i + 2);
			if (c2 >= 0xDC00 && c2 <= 0xDFFF) {
				c = 0x10000 + ((c - 0xD800) << 10) + (c2 - 0xDC00);
				i += 2;
			} else {
				c = 0xFFFD;
			}
		} else if (c >= 0xD800 && c <= 0xDFFF) {
			c = 0xFFFD;
		}
		char tmp[4];
		size_t k;
		if (c < 0x80) {
			tmp[0] = (char)c;
			k = 1;
		} else if (c < 0x800) {
			tmp[0] = (char)(0xC0 | (c >> 6));
			tmp[1] = (char)(0x80 | (c & 0x3F));
			k = 2;
		} else if (c < 0x10000) {
			tmp[0] = (char)(0xE0 | (c >> 12));
			tmp[1] = (char)(0x80 | ((c >> 6) & 0x3F));
			tmp[2] = (char)(0x80 | (c & 0x3F));
			k = 3;
		} else {
			tmp[0] = (char)(0xF0 | (c >> 18));
			tmp[1] = (char)(0x80 | ((c >> 12) & 0x3F));
			tmp[2] = (char)(0x80 | ((c >> 6) & 0x3F));
			tmp[3] = (char)(0x80 | (c & 0x3F));
			k = 4;
		}
		if (o + k >= cap)
			break;
		memcpy(out + o, tmp, k);
		o += k;
	}
	out[o] = '\0';
	return o;
}

int64_t nf_etl_ticks_to_ns(const struct nf_etl_logfile *lf, int64_t ticks)
{
	if (lf->tick_freq == 0)
		return 0;
	/* Exact in 64 bits while whole seconds and the remainder's product fit. */
	if (ticks >= lf->start_ticks && lf->tick_freq <= 9000000000u) {
		uint64_t d = (uint64_t)ticks - (uint64_t)lf->start_ticks;
		uint64_t sec = d / lf->tick_freq, rem = d % lf->tick_freq;
		if (sec < 9000000000u)
			return (int64_t)(sec * 1000000000u + rem * 1000000000u / lf->tick_freq);
	}
	__int128 d = (__int128)ticks - (__int128)lf->start_ticks;
	__int128 ns = d * 1000000000 / (__int128)lf->tick_freq;
	if (ns > INT64_MAX)
		return INT64_MAX;
	if (ns < INT64_MIN)
		return INT64_MIN;
	return (int64_t)ns;
}

/* ------------------------------------------------------------------------ */
/* Reading the source                                                        */

static int src_read(struct nf_etl_reader *r, uint64_t off, void *dst, size_t n, struct nf_error *err)
{
	if (off > r->lf.file_size || n > r->lf.file_size - off)
		return nf_error_set(err, NF_EFORMAT, "%s: truncated: %zu bytes wanted at offset %llu, the file has %llu",
				    r->name, n, (unsigned long long)off, (unsigned long long)r->lf.file_size);
	if (r->mem) {
		memcpy(dst, r->mem + off, n);
		return 0;
	}
	uint8_t *d = dst;
	while (n > 0) {
		ssize_t k = pread(r->fd, d, n, (off_t)off);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return nf_error_set(err, NF_EIO, "%s: read at offset %llu: %s", r->name,
					    (unsigned long long)off, strerror(errno));
		}
		if (k == 0)
			return nf_error_set(err, NF_EFORMAT, "%s: truncated at offset %llu (the file shrank while read)",
					    r->name, (unsigned long long)off);
		d += k;
		n -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Records                                                                   */

/* Where a record is, for messages. */
struct where {
	const char *name;
	uint64_t buf_nr, buf_off;
};

#define WHERE_FMT "%s: buffer %llu (offset %llu), record at +%u"
#define WHERE_ARGS(w, pos) (w)->name, (unsigned long long)(w)->buf_nr, (unsigned long long)(w)->buf_off, (unsigned)(pos)

/*
 * Parses the record at pos of a buffer whose records end at end. Fills *ev
 * (payload pointers into data) and *len (the record's bytes, rounded up to
 * 8). prev_ts is the timestamp for records that carry none. Returns 0,
 * NF_EFORMAT or NF_EUNSUPP.
 */
static int parse_record(const uint8_t *data, uint32_t end, uint32_t pos, int64_t prev_ts,
			const struct where *w, struct nf_etl_event *ev, uint32_t *len,
			struct nf_error *err)
{
	uint32_t avail = end - pos;
	if (avail < 8)
		return nf_error_set(err, NF_EFORMAT, WHERE_FMT ": %u bytes left, too few for a record header",
				    WHERE_ARGS(w, pos), avail);
	const uint8_t *p = data + pos;
	uint32_t w0 = etl_u32(p);
	uint8_t type = (uint8_t)(w0 >> 16);
	uint8_t marker = (uint8_t)(w0 >> 24);
	uint32_t size, hdr;

	memset(ev, 0, sizeof(*ev));
	ev->header_type = type;
	ev->dxg_verdict = -1;
	if ((marker & 0x80) == 0)
		return nf_error_set(err, NF_EUNSUPP, WHERE_FMT ": not a trace header (first word 0x%08x)",
				    WHERE_ARGS(w, pos), w0);

	switch (type) {
	case 0x01: case 0x02: case 0x03: case 0x04: case 0x10: case 0x11:
		size = etl_u16(p + 4);
		break;
	case 0x12: case 0x13: case 0x0A: case 0x14: case 0x0B: case 0x15:
	case 0x0C: case 0x0D: case 0x0E: case 0x0F:
		size = w0 & 0xFFFF;
		break;
	default:
		return nf_error_set(err, NF_EUNSUPP, WHERE_FMT ": unknown header type 0x%02x",
				    WHERE_ARGS(w, pos), type);
	}
	if (size > avail)
		return nf_error_set(err, NF_EFORMAT, WHERE_FMT ": its size %u runs past the buffer's records end (%u bytes left)",
				    WHERE_ARGS(w, pos), size, avail);

	switch (type) {
	case 0x01: case 0x02: /* SYSTEM32/64 */
	case 0x03: case 0x04: /* COMPACT32/64 */
		hdr = type <= 0x02 ? 32 : 24;
		if (size < hdr)
			goto short_header;
		ev->kind = type <= 0x02 ? NF_ETL_HDR_SYSTEM : NF_ETL_HDR_COMPACT;
		ev->pointer_size = (type == 0x01 || type == 0x03) ? 4 : 8;
		ev->version = (uint16_t)(w0 & 0xFFFF);
		ev->hook_id = etl_u16(p + 6);
		ev->id = ev->hook_id;
		ev->opcode = (uint8_t)ev->hook_id;
		ev->flags = marker;
		ev->has_ids = true;
		ev->tid = etl_u32(p + 8);
		ev->pid = etl_u32(p + 12);
		ev->ticks = etl_i64(p + 16);
		break;
	case 0x10: case 0x11: /* PERFINFO32/64 */
		hdr = 16;
		if (size < hdr)
			goto short_header;
		ev->kind = NF_ETL_HDR_PERFINFO;
		ev->pointer_size = type == 0x10 ? 4 : 8;
		ev->version = (uint16_t)(w0 & 0xFFFF);
		ev->hook_id = etl_u16(p + 6);
		ev->id = ev->hook_id;
		ev->opcode = (uint8_t)ev->hook_id;
		ev->flags = marker;
		ev->ticks = etl_i64(p + 8);
		break;
	case 0x12: case 0x13: { /* EVENT_HEADER32/64 */
		hdr = 80;
		if (size < hdr)
			goto short_header;
		ev->kind = NF_ETL_HDR_EVENT;
		ev->pointer_size = type == 0x12 ? 4 : 8;
		ev->flags = etl_u16(p + 4);
		ev->event_property = etl_u16(p + 6);
		ev->has_ids = true;
		ev->tid = etl_u32(p + 8);
		ev->pid = etl_u32(p + 12);
		ev->ticks = etl_i64(p + 16);
		ev->has_guid = true;
		guid_load(&ev->provider, p + 24);
		ev->id = etl_u16(p + 40);
		ev->version = p[42];
		ev->channel = p[43];
		ev->level = p[44];
		ev->opcode = p[45];
		ev->task = etl_u16(p + 46);
		ev->keyword = etl_u64(p + 48);
		if (ev->flags & 0x0001) { /* extended data items follow the header */
			uint32_t q = hdr;
			for (;;) {
				if (size - q < 8)
					return nf_error_set(err, NF_EFORMAT,
							    WHERE_FMT ": extended data item header at +%u runs past the record's size %u",
							    WHERE_ARGS(w, pos), q, size);
				uint16_t link = etl_u16(p + q + 4);
				uint32_t ds = etl_u16(p + q + 6);
				uint32_t padded = (ds + 7u) & ~7u;
				if (padded > size - q - 8)
					return nf_error_set(err, NF_EFORMAT,
							    WHERE_FMT ": extended data item at +%u (%u bytes) runs past the record's size %u",
							    WHERE_ARGS(w, pos), q, ds, size);
				q += 8 + padded;
				if (!(link & 1))
					break;
			}
			ev->ext = p + hdr;
			ev->ext_size = q - hdr;
			hdr = q;
		}
		break;
	}
	case 0x0A: case 0x14: /* FULL_HEADER32/64: EVENT_TRACE_HEADER */
	case 0x0B: case 0x15: /* INSTANCE32/64: EVENT_INSTANCE_GUID_HEADER */
		hdr = (type == 0x0A || type == 0x14) ? 48 : 72;
		if (size < hdr)
			goto short_header;
		ev->kind = (type == 0x0A || type == 0x14) ? NF_ETL_HDR_FULL : NF_ETL_HDR_INSTANCE;
		ev->pointer_size = (type == 0x0A || type == 0x0B) ? 4 : 8;
		ev->flags = marker;
		ev->opcode = p[4];
		ev->level = p[5];
		ev->version = etl_u16(p + 6);
		ev->has_ids = true;
		ev->tid = etl_u32(p + 8);
		ev->pid = etl_u32(p + 12);
		ev->ticks = etl_i64(p + 16);
		ev->has_guid = true;
		guid_load(&ev->provider, p + 24);
		ev->id = ev->opcode;
		break;
	case 0x0C: /* TIMED: u16 size, u16 marker, u32 event id, i64 timestamp */
		hdr = 16;
		if (size < hdr)
			goto short_header;
		ev->kind = NF_ETL_HDR_TIMED;
		ev->pointer_size = 8;
		ev->id = (uint16_t)etl_u32(p + 4);
		ev->ticks = etl_i64(p + 8);
		break;
	default: /* 0x0D ERROR, 0x0E WNODE, 0x0F MESSAGE: kept whole, unparsed */
		hdr = 4;
		if (size < 8)
			goto short_header;
		ev->kind = type == 0x0D ? NF_ETL_HDR_ERROR : type == 0x0E ? NF_ETL_HDR_WNODE : NF_ETL_HDR_MESSAGE;
		ev->pointer_size = 8;
		ev->ticks = prev_ts;
		break;
	}
	ev->payload = p + hdr;
	ev->payload_size = size - hdr;
	*len = (size + 7u) & ~7u;
	if (*len > avail) /* the last record of a buffer need not be padded */
		*len = avail;
	return 0;

short_header:
	return nf_error_set(err, NF_EFORMAT, WHERE_FMT ": size %u is too small for its header type 0x%02x",
			    WHERE_ARGS(w, pos), size, type);
}

bool nf_etl_ext_next(const struct nf_etl_event *ev, uint32_t *pos, struct nf_etl_ext_item *item)
{
	if (!ev->ext || *pos + 8 > ev->ext_size)
		return false;
	const uint8_t *p = ev->ext + *pos;
	uint16_t link = etl_u16(p + 4);
	uint16_t ds = etl_u16(p + 6);
	uint32_t padded = (ds + 7u) & ~7u;
	if (padded > ev->ext_size - *pos - 8)
		return false;
	item->type = etl_u16(p + 2);
	item->size = ds;
	item->data = p + 8;
	*pos = (link & 1) ? *pos + 8 + padded : ev->ext_size;
	return true;
}

/* Copies a NUL-terminated string at data[off..n) into out. */
static bool copy_cstr(const uint8_t *data, size_t n, size_t off, char *out, size_t cap)
{
	if (off >= n || cap == 0)
		return false;
	size_t k = 0;
	while (off + k < n && data[off + k] != 0)
		k++;
	if (off + k >= n) /* no NUL inside the item */
		return false;
	if (k >= cap)
		k = cap - 1;
	memcpy(out, data + off, k);
	out[k] = '\0';
	return true;
}

bool nf_etl_tracelogging_name(const struct nf_etl_event *ev, char *out, size_t cap)
{
	/* Item 11 (event schema): u16 size, u8 tags, then the event name. */
	uint32_t pos = 0;
	struct nf_etl_ext_item it;
	while (nf_etl_ext_next(ev, &pos, &it)) {
		if (it.type != 11 || it.size < 4)
			continue;
		size_t off = 2;
		/* tags: bytes while the high bit is set, then one more */
		while (off < it.size && (it.data[off] & 0x80))
			off++;
		off++;
		return copy_cstr(it.data, it.size, off, out, cap);
	}
	return false;
}

bool nf_etl_tracelogging_provider(const struct nf_etl_event *ev, char *out, size_t cap)
{
	/* Item 12 (provider traits): u16 size, then the provider name. */
	uint32_t pos = 0;
	struct nf_etl_ext_item it;
	while (nf_etl_ext_next(ev, &pos, &it)) {
		if (it.type != 12 || it.size < 3)
			continue;
		return copy_cstr(it.data, it.size, 2, out, cap);
	}
	return false;
}

/* The timestamp of the record at pos, read from where its header type keeps
 * it, without validating the record (parse_record does that when the record
 * is handed out): for the merge's ordering. Records without a timestamp, and
 * anything unreadable, take prev. */
static int64_t record_ts(const uint8_t *p, uint32_t avail, int64_t prev)
{
	if (avail < 8)
		return prev;
	switch (p[2]) {
	case 0x01: case 0x02: case 0x03: case 0x04: case 0x12: case 0x13:
	case 0x0A: case 0x14: case 0x0B: case 0x15:
		return avail >= 24 ? etl_i64(p + 16) : prev;
	case 0x10: case 0x11: case 0x0C:
		return avail >= 16 ? etl_i64(p + 8) : prev;
	default:
		return prev;
	}
}

/* ------------------------------------------------------------------------ */
/* Open: the logfile header and the index                                    */

/* Parses TRACE_LOGFILE_HEADER from the first record of the first buffer. */
static int read_logfile_header(struct nf_etl_reader *r, const uint8_t *buf, uint32_t end,
			       struct nf_error *err)
{
	struct where w = {r->name, 0, 0};
	struct nf_etl_event ev;
	uint32_t len;
	int rc = parse_record(buf, end, BUF_HDR, 0, &w, &ev, &len, err);
	if (rc < 0) {
		nf_error_prefix(err, "not an ETL file");
		return NF_EFORMAT;
	}
	if (ev.kind != NF_ETL_HDR_SYSTEM || ev.hook_id != 0)
		return nf_error_set(err, NF_EFORMAT,
				    "%s: not an ETL file: the first record (buffer 0, offset %u) is not the logfile header (header type 0x%02x, hook 0x%04x)",
				    r->name, BUF_HDR, ev.header_type, ev.hook_id);
	const uint8_t *p = ev.payload;
	uint32_t n = ev.payload_size;
	unsigned ps = ev.pointer_size;
	/* Fixed part: 56 bytes, two pointers, TIME_ZONE_INFORMATION (172),
	 * padding to 8, BootTime, PerfFreq, StartTime, ReservedFlags, BuffersLost. */
	uint32_t tz = 56 + 2 * ps;
	uint32_t boot = (tz + 172 + 7) & ~7u;
	uint32_t fixed = boot + 32;
	if (n < fixed)
		return nf_error_set(err, NF_EFORMAT,
				    "%s: buffer 0 (offset 0), record at +%u: the logfile header has %u bytes, fewer than its %u fixed bytes",
				    r->name, BUF_HDR, n, fixed);
	struct nf_etl_logfile *lf = &r->lf;
	lf->buffer_size = etl_u32(p + 0);
	memcpy(lf->version, p + 4, 4);
	lf->os_build = etl_u32(p + 8);
	lf->cpus = etl_u32(p + 12);
	lf->end_filetime = etl_i64(p + 16);
	lf->timer_resolution = etl_u32(p + 24);
	lf->log_file_mode = etl_u32(p + 32);
	lf->buffers_written = etl_u32(p + 36);
	lf->pointer_size = etl_u32(p + 44);
	lf->events_lost = etl_u32(p + 48);
	lf->cpu_mhz = etl_u32(p + 52);
	lf->header_pointer_size = ps;
	lf->boot_filetime = etl_i64(p + boot);
	lf->perf_freq = etl_u64(p + boot + 8);
	lf->start_filetime = etl_i64(p + boot + 16);
	lf->clock_type = etl_u32(p + boot + 24);
	lf->buffers_lost = etl_u32(p + boot + 28);
	/* Logger name and file name, NUL-terminated UTF-16, when present. */
	uint32_t q = fixed;
	for (int s = 0; s < 2 && q + 2 <= n; s++) {
		uint32_t e = q;
		while (e + 2 <= n && etl_u16(p + e) != 0)
			e += 2;
		if (s == 0)
			nf_etl_utf16_to_utf8(p + q, e - q, lf->logger_name, sizeof(lf->logger_name));
		else
			nf_etl_utf16_to_utf8(p + q, e - q, lf->log_file_name, sizeof(lf->log_file_name));
		q = e + 2;
	}
	switch (lf->clock_type) {
	case NF_ETL_CLOCK_QPC:
		lf->tick_freq = lf->perf_freq;
		break;
	case NF_ETL_CLOCK_SYSTEM:
		lf->tick_freq = 10000000;
		break;
	case NF_ETL_CLOCK_CYCLES:
		lf->tick_freq = (uint64_t)lf->cpu_mhz * 1000000u;
		break;
	default:
		return nf_error_set(err, NF_EFORMAT,
				    "%s: buffer 0 (offset 0), record at +%u: the logfile header's clock type %u is none of 1 (QPC), 2 (system time), 3 (CPU cycles)",
				    r->name, BUF_HDR, lf->clock_type);
	}
	if (lf->tick_freq == 0)
		return nf_error_set(err, NF_EFORMAT,
				    "%s: buffer 0 (offset 0), record at +%u: the logfile header's clock frequency is 0",
				    r->name, BUF_HDR);
	return 0;
}

static int index_cmp(const void *a, const void *b)
{
	const struct buf_index *x = a, *y = b;
	if (x->first_ts != y->first_ts)
		return x->first_ts < y->first_ts ? -1 : 1;
	return x->nr < y->nr ? -1 : x->nr > y->nr;
}

static int build_index(struct nf_etl_reader *r, struct nf_error *err)
{
	struct nf_etl_logfile *lf = &r->lf;
	uint8_t *data = NULL;
	uint32_t cap = 0;
	size_t capidx = 0;
	uint64_t off = 0, nr = 0;
	bool have_ts = false;
	int rc = 0;
	int64_t min_ts = 0;

	while (off < lf->file_size) {
		uint8_t h[BUF_HDR];
		if (lf->file_size - off < BUF_HDR) {
			rc = nf_error_set(err, NF_EFORMAT,
					  "%s: truncated: buffer %llu at offset %llu has %llu of its %u header bytes",
					  r->name, (unsigned long long)nr, (unsigned long long)off,
					  (unsigned long long)(lf->file_size - off), BUF_HDR);
			goto out;
		}
		rc = src_read(r, off, h, BUF_HDR, err);
		if (rc < 0)
			goto out;
		uint32_t bsize = etl_u32(h + BH_SIZE);
		uint32_t end = etl_u32(h + BH_OFFSET);
		uint16_t flag = etl_u16(h + BH_FLAG);
		if (bsize < MIN_BUFFER_SIZE || bsize > NF_ETL_MAX_BUFFER_SIZE || (bsize & 7)) {
			rc = nf_error_set(err, NF_EFORMAT,
					  "%s: buffer %llu (offset %llu): its size %u is not a buffer size (%u to %u, a multiple of 8)",
					  r->name, (unsigned long long)nr, (unsigned long long)off, bsize,
					  MIN_BUFFER_SIZE, NF_ETL_MAX_BUFFER_SIZE);
			goto out;
		}
		if (bsize > lf->file_size - off) {
			rc = nf_error_set(err, NF_EFORMAT,
					  "%s: truncated: buffer %llu (offset %llu) has %llu of its %u bytes",
					  r->name, (unsigned long long)nr, (unsigned long long)off,
					  (unsigned long long)(lf->file_size - off), bsize);
			goto out;
		}
		if (end < BUF_HDR || end > bsize) {
			rc = nf_error_set(err, NF_EFORMAT,
					  "%s: buffer %llu (offset %llu): its records end (offset field 0x30) at %u, outside the buffer's %u..%u",
					  r->name, (unsigned long long)nr, (unsigned long long)off, end, BUF_HDR, bsize);
			goto out;
		}
		if (flag & BF_COMPRESSED) {
			rc = nf_error_set(err, NF_EUNSUPP,
					  "%s: buffer %llu (offset %llu) is compressed (buffer flag 0x40): compressed ETL files are not supported; "
					  "relog the capture uncompressed on Windows (xperf -merge, or tracerpt -of ETL)",
					  r->name, (unsigned long long)nr, (unsigned long long)off);
			goto out;
		}
		if (flag & BF_EVENTS_LOST)
			lf->buffers_flag_events_lost++;
		if (flag & BF_BUFFER_LOST)
			lf->buffers_flag_buffer_lost++;
		uint16_t cpu = h[BH_CPU];
		if ((uint32_t)cpu + 1 > lf->cpus_seen)
			lf->cpus_seen = (uint32_t)cpu + 1;

		if (end > BUF_HDR) {
			/* Buffer 0 whole (the logfile header), others only the head of
			 * their first record: its timestamp orders the merge. */
			uint32_t want = nr == 0 ? end : (end - BUF_HDR < 24 ? end : BUF_HDR + 24);
			if (want > cap) {
				uint8_t *nd = realloc(data, want);
				if (!nd) {
					rc = nf_error_set(err, NF_ENOMEM, "%s: out of memory reading a buffer", r->name);
					goto out;
				}
				data = nd;
				cap = want;
			}
			rc = src_read(r, off, data, want, err);
			if (rc < 0)
				goto out;
			if (nr == 0) {
				rc = read_logfile_header(r, data, end, err);
				if (rc < 0)
					goto out;
			}
			int64_t first = record_ts(data + BUF_HDR, want - BUF_HDR, etl_i64(h + BH_TS));
			if (nf_array_reserve((void **)&r->idx, &capidx, r->nidx + 1, sizeof(*r->idx), 256, 0)) {
				rc = nf_error_set(err, NF_ENOMEM, "%s: out of memory indexing buffers", r->name);
				goto out;
			}
			r->idx[r->nidx++] = (struct buf_index){off, first, nr, end, cpu};
			if (!have_ts || first < min_ts)
				min_ts = first;
			have_ts = true;
		} else {
			if (nr == 0) {
				rc = nf_error_set(err, NF_EFORMAT,
						  "%s: not an ETL file: buffer 0 (offset 0) holds no record (the logfile header is missing)",
						  r->name);
				goto out;
			}
			lf->empty_buffers++;
		}
		nr++;
		off += bsize;
	}
	lf->buffers = nr;
	lf->start_ticks = min_ts;
	lf->end_ticks = min_ts;
	if (!(r->flags & NF_ETL_FILE_ORDER))
		qsort(r->idx, r->nidx, sizeof(*r->idx), index_cmp);
out:
	free(data);
	return rc;
}

bool nf_etl_probe(const void *head, size_t n)
{
	const uint8_t *h = head;
	if (n < BUF_HDR + 32)
		return false;
	uint32_t bsize = etl_u32(h + BH_SIZE);
	uint32_t end = etl_u32(h + BH_OFFSET);
	if (bsize < MIN_BUFFER_SIZE || bsize > NF_ETL_MAX_BUFFER_SIZE || end < BUF_HDR + 32 || end > bsize)
		return false;
	const uint8_t *p = h + BUF_HDR;
	uint32_t w0 = etl_u32(p);
	uint8_t type = (uint8_t)(w0 >> 16);
	return (w0 >> 24) == 0xC0 && (type == 0x01 || type == 0x02) && etl_u16(p + 6) == 0 &&
	       etl_u16(p + 4) >= 32 + 56;
}

static int open_common(struct nf_etl_reader *r, struct nf_etl_reader **out, struct nf_error *err)
{
	int rc;
	if (r->lf.file_size < BUF_HDR + 32) {
		rc = nf_error_set(err, NF_EFORMAT, "%s: not an ETL file: %llu bytes, too short for a buffer and its logfile header",
				  r->name, (unsigned long long)r->lf.file_size);
		goto out_destroy;
	}
	uint8_t head[BUF_HDR + 32];
	rc = src_read(r, 0, head, sizeof(head), err);
	if (rc < 0)
		goto out_destroy;
	if (!nf_etl_probe(head, sizeof(head))) {
		rc = nf_error_set(err, NF_EFORMAT,
				  "%s: not an ETL file: offset 0 is not an ETW buffer header followed by a logfile header record",
				  r->name);
		goto out_destroy;
	}
	rc = build_index(r, err);
	if (rc < 0)
		goto out_destroy;
	r->pool_size = 0;
	*out = r;
	return 0;
out_destroy:
	nf_etl_reader_destroy(r);
	return rc;
}

static struct nf_etl_reader *reader_new(const char *name, unsigned flags)
{
	struct nf_etl_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->fd = -1;
	r->flags = flags;
	r->name = strdup(name ? name : "(memory)");
	if (!r->name) {
		free(r);
		return NULL;
	}
	return r;
}

int nf_etl_reader_open(const char *path, unsigned flags, struct nf_etl_reader **out, struct nf_error *err)
{
	*out = NULL;
	struct nf_etl_reader *r = reader_new(path, flags);
	if (!r)
		return nf_error_set(err, NF_ENOMEM, "%s: out of memory", path);
	/* a FIFO is refused, not waited on */
	r->fd = nf_infile_open(path, err);
	if (r->fd < 0) {
		int rc = r->fd;
		nf_etl_reader_destroy(r);
		return rc;
	}
	struct stat st;
	if (fstat(r->fd, &st) < 0) {
		nf_etl_reader_destroy(r);
		return nf_error_set(err, NF_EIO, "%s: %s", path, strerror(errno));
	}
	r->lf.file_size = (uint64_t)st.st_size;
	/* Buffers are read about in file order, each once: let the kernel read ahead. */
	(void)posix_fadvise(r->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	return open_common(r, out, err);
}

int nf_etl_reader_open_mem(const void *data, size_t size, const char *name, unsigned flags,
			   struct nf_etl_reader **out, struct nf_error *err)
{
	*out = NULL;
	struct nf_etl_reader *r = reader_new(name, flags);
	if (!r)
		return nf_error_set(err, NF_ENOMEM, "out of memory");
	r->mem = data;
	r->lf.file_size = size;
	return open_common(r, out, err);
}

const struct nf_etl_logfile *nf_etl_reader_logfile(const struct nf_etl_reader *r)
{
	return &r->lf;
}

uint64_t nf_etl_reader_events(const struct nf_etl_reader *r)
{
	return r->events;
}

/* ------------------------------------------------------------------------ */
/* The merge                                                                 */

static void cursor_free(struct nf_etl_reader *r, struct cursor *c)
{
	if (!c)
		return;
	if (c->data) {
		/* Kept for the next buffer opened: at most as many as were
		 * ever open at once, so bounded like them. */
		r->open_bytes -= r->pool_size;
		if (r->npool == r->cappool) {
			size_t nc = r->cappool ? r->cappool * 2 : 16;
			uint8_t **np = realloc(r->pool, nc * sizeof(*np));
			if (np) {
				r->pool = np;
				r->cappool = nc;
			}
		}
		if (r->npool < r->cappool) {
			r->pool[r->npool++] = c->data;
			c->data = NULL;
		}
		free(c->data);
	}
	free(c);
}

/* Opens buffer bi: reads its records into memory. */
static int cursor_open(struct nf_etl_reader *r, const struct buf_index *bi, struct cursor **out,
		       struct nf_error *err)
{
	if (r->pool_size == 0) {
		/* Every pooled buffer holds the largest buffer of the file. */
		uint32_t m = 0;
		for (size_t i = 0; i < r->nidx; i++)
			if (r->idx[i].end > m)
				m = r->idx[i].end;
		r->pool_size = m;
	}
	if (r->open_bytes + r->pool_size > NF_ETL_MAX_OPEN_BYTES)
		return nf_error_set(err, NF_EUNSUPP,
				    "%s: buffer %llu (offset %llu): more than %u MiB of buffers overlap in time; the merge by time would not stay bounded",
				    r->name, (unsigned long long)bi->nr, (unsigned long long)bi->off,
				    NF_ETL_MAX_OPEN_BYTES >> 20);
	struct cursor *c = calloc(1, sizeof(*c));
	if (!c)
		return nf_error_set(err, NF_ENOMEM, "%s: out of memory", r->name);
	if (r->npool > 0) {
		c->data = r->pool[--r->npool];
	} else {
		c->data = malloc(r->pool_size);
		if (!c->data) {
			free(c);
			return nf_error_set(err, NF_ENOMEM, "%s: out of memory for a buffer", r->name);
		}
	}
	r->open_bytes += r->pool_size;
	c->bi = bi;
	c->end = bi->end;
	c->pos = BUF_HDR;
	c->ts = bi->first_ts;
	c->prev_ts = bi->first_ts;
	int rc = src_read(r, bi->off, c->data, bi->end, err);
	if (rc < 0) {
		cursor_free(r, c);
		return rc;
	}
	*out = c;
	return 0;
}

static bool heap_less(const struct cursor *a, const struct cursor *b)
{
	if (a->ts != b->ts)
		return a->ts < b->ts;
	return a->bi->nr < b->bi->nr;
}

static void heap_down(struct nf_etl_reader *r, size_t i)
{
	size_t n = r->nheap;
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		if (l < n && heap_less(r->heap[l], r->heap[m]))
			m = l;
		if (l + 1 < n && heap_less(r->heap[l + 1], r->heap[m]))
			m = l + 1;
		if (m == i)
			return;
		struct cursor *t = r->heap[i];
		r->heap[i] = r->heap[m];
		r->heap[m] = t;
		i = m;
	}
}

static int heap_push(struct nf_etl_reader *r, struct cursor *c, struct nf_error *err)
{
	if (nf_array_reserve((void **)&r->heap, &r->capheap, r->nheap + 1, sizeof(*r->heap), 16, 0))
		return nf_error_set(err, NF_ENOMEM, "%s: out of memory", r->name);
	size_t i = r->nheap++;
	r->heap[i] = c;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!heap_less(r->heap[i], r->heap[p]))
			break;
		struct cursor *t = r->heap[i];
		r->heap[i] = r->heap[p];
		r->heap[p] = t;
		i = p;
	}
	return 0;
}

/* Peeks the timestamp of the record at c->pos (c->pos < c->end). */
static void cursor_peek(struct cursor *c)
{
	c->ts = record_ts(c->data + c->pos, c->end - c->pos, c->prev_ts);
}

/* Advances the cursor handed out last; drops it from the heap at its end. */
static void settle_pending(struct nf_etl_reader *r)
{
	struct cursor *c = r->pending;
	if (!c)
		return;
	r->pending = NULL;
	bool single = c == r->cur_single;
	if (c->pos < c->end) {
		cursor_peek(c);
		if (!single)
			heap_down(r, 0);
		return;
	}
	if (single) {
		r->cur_single = NULL;
	} else {
		r->heap[0] = r->heap[--r->nheap];
		if (r->nheap > 0)
			heap_down(r, 0);
	}
	cursor_free(r, c);
}

/* ------------------------------------------------------------------------ */
/* Counts                                                                    */

static uint64_t count_hash(const struct nf_etl_event *ev)
{
	/* core's mixer over each part of the key (the slots only index counts,
	 * kept in first-seen order, so the hash never shows in the output) */
	uint64_t h = nf_mix64(ev->provider.data1);

	h = nf_mix64(h ^ ((uint64_t)ev->provider.data2 << 16 | ev->provider.data3));
	h = nf_mix64(h ^ etl_u64(ev->provider.data4));
	return nf_mix64(h ^ ((uint64_t)ev->id << 17 | (uint64_t)ev->version << 1 | ev->has_guid));
}

static bool count_match(const struct nf_etl_count *c, const struct nf_etl_event *ev)
{
	return c->id == ev->id && c->version == ev->version && c->has_guid == ev->has_guid &&
	       nf_etl_guid_eq(&c->provider, &ev->provider);
}

static int count_grow(struct nf_etl_reader *r, struct nf_error *err)
{
	size_t ns = r->nslots ? r->nslots * 2 : 256;
	struct count_slot *s = calloc(ns, sizeof(*s));
	if (!s)
		return nf_error_set(err, NF_ENOMEM, "%s: out of memory counting events", r->name);
	for (size_t i = 0; i < r->ncounts; i++) {
		struct nf_etl_event k = {0};
		k.id = r->counts[i].id;
		k.version = r->counts[i].version;
		k.has_guid = r->counts[i].has_guid;
		k.provider = r->counts[i].provider;
		size_t j = count_hash(&k) & (ns - 1);
		while (s[j].idx1)
			j = (j + 1) & (ns - 1);
		s[j].idx1 = (uint32_t)i + 1;
	}
	free(r->slots);
	r->slots = s;
	r->nslots = ns;
	return 0;
}

static int count_event(struct nf_etl_reader *r, const struct nf_etl_event *ev, struct nf_error *err)
{
	struct nf_etl_count *c = NULL;
	if (r->have_last && count_match(&r->counts[r->last_count], ev)) {
		c = &r->counts[r->last_count];
	} else {
		if (r->ncounts * 2 >= r->nslots) {
			int rc = count_grow(r, err);
			if (rc < 0)
				return rc;
		}
		size_t j = count_hash(ev) & (r->nslots - 1);
		while (r->slots[j].idx1) {
			struct nf_etl_count *x = &r->counts[r->slots[j].idx1 - 1];
			if (count_match(x, ev)) {
				c = x;
				break;
			}
			j = (j + 1) & (r->nslots - 1);
		}
		if (!c) {
			if (r->ncounts >= NF_ETL_MAX_COUNTS) {
				r->overflow++;
				return 0;
			}
			if (nf_array_reserve((void **)&r->counts, &r->capcounts, r->ncounts + 1,
					     sizeof(*r->counts), 64, NF_ETL_MAX_COUNTS))
				return nf_error_set(err, NF_ENOMEM, "%s: out of memory counting events", r->name);
			c = &r->counts[r->ncounts];
			memset(c, 0, sizeof(*c));
			c->has_guid = ev->has_guid;
			c->provider = ev->provider;
			c->kind = ev->kind;
			c->id = ev->id;
			c->version = ev->version;
			c->min_size = ev->payload_size;
			c->max_size = ev->payload_size;
			r->slots[j].idx1 = (uint32_t)++r->ncounts;
		}
		r->last_count = (size_t)(c - r->counts);
		r->have_last = true;
	}
	c->events++;
	if (ev->payload_size < c->min_size)
		c->min_size = ev->payload_size;
	if (ev->payload_size > c->max_size)
		c->max_size = ev->payload_size;
	switch (ev->dxg_verdict) {
	case NF_ETL_DXG_OK: c->decoded++; break;
	case NF_ETL_DXG_SIZE_MISMATCH: c->size_mismatch++; break;
	case NF_ETL_DXG_UNKNOWN_VERSION: c->unknown_version++; break;
	case NF_ETL_DXG_NOT_IN_TABLE: c->not_in_table++; break;
	default: break;
	}
	return 0;
}

static int count_cmp(const void *a, const void *b)
{
	const struct nf_etl_count *x = a, *y = b;
	if (x->has_guid != y->has_guid)
		return x->has_guid ? 1 : -1;
	if (x->provider.data1 != y->provider.data1)
		return x->provider.data1 < y->provider.data1 ? -1 : 1;
	if (x->provider.data2 != y->provider.data2)
		return x->provider.data2 < y->provider.data2 ? -1 : 1;
	if (x->provider.data3 != y->provider.data3)
		return x->provider.data3 < y->provider.data3 ? -1 : 1;
	int c = memcmp(x->provider.data4, y->provider.data4, 8);
	if (c)
		return c;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->version < y->version ? -1 : x->version > y->version;
}

size_t nf_etl_reader_counts(struct nf_etl_reader *r, const struct nf_etl_count **out, uint64_t *overflow)
{
	if (overflow)
		*overflow = r->overflow;
	if (r->ncounts > r->nsorted_cap) {
		struct nf_etl_count *s = realloc(r->sorted, r->ncounts * sizeof(*s));
		if (!s) { /* unsorted then, still correct */
			*out = r->counts;
			return r->ncounts;
		}
		r->sorted = s;
		r->nsorted_cap = r->ncounts;
	}
	if (r->ncounts) { /* (qsort and memcpy of nothing would take NULL) */
		memcpy(r->sorted, r->counts, r->ncounts * sizeof(*r->sorted));
		qsort(r->sorted, r->ncounts, sizeof(*r->sorted), count_cmp);
	}
	*out = r->sorted;
	return r->ncounts;
}

/* ------------------------------------------------------------------------ */
/* Next                                                                      */

int nf_etl_reader_next(struct nf_etl_reader *r, struct nf_etl_event *ev, struct nf_error *err)
{
	if (r->failed)
		return nf_error_set(err, r->failed, "%s", r->fail_err.msg);
	struct nf_error e2 = {0};
	int rc;
	settle_pending(r);

	struct cursor *c;
	if (r->flags & NF_ETL_FILE_ORDER) {
		if (!r->cur_single) {
			if (r->next_open >= r->nidx)
				return 0;
			rc = cursor_open(r, &r->idx[r->next_open++], &r->cur_single, &e2);
			if (rc < 0)
				goto out_fail;
		}
		c = r->cur_single;
	} else {
		/* Open every buffer that starts no later than the earliest record held. */
		while (r->next_open < r->nidx &&
		       (r->nheap == 0 || r->idx[r->next_open].first_ts <= r->heap[0]->ts)) {
			struct cursor *nc;
			rc = cursor_open(r, &r->idx[r->next_open++], &nc, &e2);
			if (rc < 0)
				goto out_fail;
			rc = heap_push(r, nc, &e2);
			if (rc < 0) {
				cursor_free(r, nc);
				goto out_fail;
			}
		}
		if (r->nheap == 0)
			return 0;
		c = r->heap[0];
	}

	struct where w = {r->name, c->bi->nr, c->bi->off};
	uint32_t len;
	rc = parse_record(c->data, c->end, c->pos, c->prev_ts, &w, ev, &len, &e2);
	if (rc < 0)
		goto out_fail;
	ev->cpu = c->bi->cpu;
	ev->buffer_index = c->bi->nr;
	ev->file_offset = c->bi->off + c->pos;
	ev->ns = nf_etl_ticks_to_ns(&r->lf, ev->ticks);
	if (ev->ticks > r->lf.end_ticks)
		r->lf.end_ticks = ev->ticks;
	c->prev_ts = ev->ticks;
	c->pos += len;
	r->pending = c;

	if ((r->flags & NF_ETL_DECODE_DXGKRNL) && ev->kind == NF_ETL_HDR_EVENT &&
	    nf_etl_guid_eq(&ev->provider, &nf_etl_guid_dxgkrnl)) {
		ev->dxg_verdict = nf_etl_dxg_decode(ev->id, (uint8_t)ev->version, ev->payload, ev->payload_size,
						    ev->pointer_size, &r->dxg);
		ev->dxg = ev->dxg_verdict == NF_ETL_DXG_OK ? &r->dxg : NULL;
	}
	rc = count_event(r, ev, &e2);
	if (rc < 0)
		goto out_fail;
	r->events++;
	return 1;

out_fail:
	r->failed = rc;
	r->fail_err = e2;
	return nf_error_set(err, rc, "%s", e2.msg);
}

void nf_etl_reader_destroy(struct nf_etl_reader *r)
{
	if (!r)
		return;
	if (r->cur_single)
		cursor_free(r, r->cur_single);
	for (size_t i = 0; i < r->nheap; i++)
		cursor_free(r, r->heap[i]);
	for (size_t i = 0; i < r->npool; i++)
		free(r->pool[i]);
	free(r->pool);
	free(r->heap);
	free(r->idx);
	free(r->counts);
	free(r->slots);
	free(r->sorted);
	if (r->fd >= 0)
		close(r->fd);
	free(r->name);
	free(r);
}
