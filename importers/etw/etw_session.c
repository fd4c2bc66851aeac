/*
 * ETW sessions (include/contract/etwsession.h): `nftrace import capture.etl`
 * copies the capture into a session directory made under a temporary name
 * and builds its timeline there (reading the whole capture), then renames it
 * into place; the analyzer rebuilds the timeline of such a session from the
 * copy. Here the ETL reader's records (etl/) become the ingest's events
 * (etw_ingest.c): DxgKrnl fields are picked by their names in
 * schemas/dxgkrnl.def, the NT kernel logger's context switches and
 * process/thread records decoded from their fixed layouts.
 */
#define _GNU_SOURCE /* copy_file_range */
#include "etw_session.h"
#include "contract/errors.h"
#include "contract/infile.h"

#include "etw_ingest.h"
#include "contract/etl.h"
#include "contract/sessiondir.h"
#include "nftrace/events.h"
#include "contract/session.h"
#include "../importers_int.h"
#include "etw_report.h"
#include "contract/timeline_writer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef NF_VERSION
#define NF_VERSION "unknown"
#endif

static bool interrupted(void)
{
	return nf_importers_interrupted();
}

bool nf_etw_session_is(const char *dir)
{
	char path[PATH_MAX];
	struct stat st;

	if ((size_t)snprintf(path, sizeof(path), "%s/metadata", dir) >= sizeof(path))
		return false;
	if (lstat(path, &st) == 0)
		return false;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, NF_ETW_CAPTURE_NAME) >= sizeof(path))
		return false;
	return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

bool nf_etw_file_is(const char *path)
{
	unsigned char head[512];
	/* O_NONBLOCK: opening a FIFO does not wait for a writer */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	ssize_t n = -1;

	if (fd < 0)
		return false;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		n = read(fd, head, sizeof(head));
	close(fd);
	return n > 0 && nf_etl_probe(head, (size_t)n);
}

/* By its name: a damaged capture still gets the ETL reader's message. */
static bool etw_file_named(const char *path)
{
	size_t len = strlen(path);

	return len > 4 && !strcasecmp(path + len - 4, ".etl");
}

/* ---- DxgKrnl fields by name ---- */

enum slot {
	SL_NONE, SL_ADAPTER, SL_CONTEXT, SL_DEVICE, SL_HWQUEUE, SL_SYNC, SL_PACKET, SL_EVENT,
	SL_PROCESS, SL_VALUE, SL_SUBMISSION, SL_NODE, SL_ENGINE, SL_PTYPE, SL_SEQ, SL_TARGET,
	SL_FRAME, SL_FLAGS, SL_PREEMPTED, SL_PRESENT, SL_NAME, SL_OBJECTS, SL_CPU0, SL_GPU0,
	SL_CPU1, SL_GPU1, SL_HWND, SL_SOURCE, SL_LAYER, SL_FLIP_FENCE, SL_REDIRECTED, SL_INTERVAL
};

static const struct {
	const char *name;
	enum slot slot;
} slot_names[] = {
	{ "pDxgAdapter", SL_ADAPTER }, { "hAdapter", SL_ADAPTER },
	{ "hContext", SL_CONTEXT }, { "hDevice", SL_DEVICE }, { "hHwQueue", SL_HWQUEUE },
	{ "hSyncObject", SL_SYNC }, { "VidSchSyncObject", SL_SYNC }, { "Object", SL_SYNC },
	{ "pQueuePacket", SL_PACKET }, { "QueuePacket", SL_PACKET },
	{ "hAsyncEvent", SL_EVENT }, { "Event", SL_EVENT }, { "hProcessId", SL_PROCESS },
	{ "FenceValue", SL_VALUE }, { "FenceValues", SL_VALUE }, { "MonitoredFenceValue", SL_VALUE },
	{ "ProgressFenceValue", SL_VALUE }, { "InitialValue", SL_VALUE },
	{ "uliSubmissionId", SL_SUBMISSION }, { "uliCompletionId", SL_SUBMISSION },
	{ "NodeOrdinal", SL_NODE }, { "EngineType", SL_ENGINE }, { "PacketType", SL_PTYPE },
	{ "SubmitSequence", SL_SEQ }, { "ulQueueSubmitSequence", SL_SEQ },
	{ "VidPnTargetId", SL_TARGET }, { "FrameNumber", SL_FRAME }, { "Flags", SL_FLAGS },
	{ "bPreempted", SL_PREEMPTED }, { "bPresent", SL_PRESENT }, { "FriendlyName", SL_NAME },
	{ "ObjectArray", SL_OBJECTS }, { "SyncObjects", SL_OBJECTS },
	{ "VidSchSyncObjectArray", SL_OBJECTS },
	{ "CpuTimestamp0", SL_CPU0 }, { "GpuTimestamp0", SL_GPU0 },
	{ "CpuTimestamp1", SL_CPU1 }, { "GpuTimestamp1", SL_GPU1 },
	/* presents and flips */
	{ "hwnd", SL_HWND }, { "VidPnSourceId", SL_SOURCE }, { "LayerIndex", SL_LAYER },
	{ "FlipFenceId", SL_FLIP_FENCE }, { "bRedirectedPresent", SL_REDIRECTED },
	{ "FlipInterval", SL_INTERVAL },
};

/* The slots of one table event's fields, looked up once. */
struct slot_map {
	bool done;
	uint8_t slot[NF_ETL_DXG_MAX_FIELDS];
};

static enum slot slot_of(const char *name)
{
	for (size_t i = 0; i < sizeof(slot_names) / sizeof(slot_names[0]); i++)
		if (!strcasecmp(slot_names[i].name, name))
			return slot_names[i].slot;
	return SL_NONE;
}

struct sess {
	struct nf_etwi *in;
	const struct nf_etl_logfile *lf;
	struct slot_map *maps;   /* [NF_DXG_EV_COUNT] */
	struct nf_etwi_dx dx;
	char name[128];
	char kname[256];
	char *json;              /* the payload of the DxgKrnl event being handed over */
	size_t jn, jcap;
	char wtext[4096];        /* a WSTR field as UTF-8 */
};

static uint32_t rd32(const uint8_t *p);

/* ---- every payload field as JSON (dxgkrnl_events.fields) ---- */

/* The largest JSON object kept: a payload is at most 64 KiB, a BIN field
 * twice that as hex, a pointer array 20 bytes an element. */
#define JSON_MAX (1u << 21)

static bool j_room(struct sess *s, size_t need)
{
	if (s->jn + need <= s->jcap)
		return true;
	size_t ncap = s->jcap ? s->jcap : 1024;

	while (ncap < s->jn + need)
		ncap *= 2;
	if (ncap > JSON_MAX)
		return false;
	char *n = realloc(s->json, ncap);

	if (!n)
		return false;
	s->json = n;
	s->jcap = ncap;
	return true;
}

static void j_raw(struct sess *s, const char *p, size_t n)
{
	memcpy(s->json + s->jn, p, n);
	s->jn += n;
}

/* A signed decimal (values as the timeline stores them: 64-bit two's complement). */
static void j_int(struct sess *s, int64_t v)
{
	char b[24];
	size_t k = sizeof(b);
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	do {
		b[--k] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		b[--k] = '-';
	j_raw(s, b + k, sizeof(b) - k);
}

/* A pointer as the other ETW tables write handles: "0x" lowercase hex, quoted. */
static void j_hex(struct sess *s, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char b[20];
	size_t k = sizeof(b);

	b[--k] = '"';
	do {
		b[--k] = digits[v & 15];
		v >>= 4;
	} while (v);
	b[--k] = 'x';
	b[--k] = '0';
	b[--k] = '"';
	j_raw(s, b + k, sizeof(b) - k);
}

/* A string from the capture (untrusted), escaped for JSON. */
static bool j_str(struct sess *s, const char *t)
{
	static const char digits[] = "0123456789abcdef";
	size_t n = strlen(t);

	if (!j_room(s, n * 6 + 2))
		return false;
	s->json[s->jn++] = '"';
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)t[i];

		if (c == '"' || c == '\\') {
			s->json[s->jn++] = '\\';
			s->json[s->jn++] = (char)c;
		} else if (c < 0x20 || c == 0x7f) {
			j_raw(s, "\\u00", 4);
			s->json[s->jn++] = digits[c >> 4];
			s->json[s->jn++] = digits[c & 15];
		} else {
			s->json[s->jn++] = (char)c;
		}
	}
	s->json[s->jn++] = '"';
	return true;
}

/*
 * Every field of a decoded record as one JSON object, by the manifest's field
 * names (schemas/dxgkrnl.def): integers as numbers (64-bit two's complement,
 * as the timeline stores values), BOOL 0/1, pointers as "0x..." text like the
 * other ETW tables' handles, arrays as arrays, GUIDs and strings as text, BIN
 * as hex text. Fields the record's version lacks are left out. False when out
 * of memory (the event then has no fields).
 */
static bool dx_json(struct sess *s, const struct nf_etl_dxg_record *rec, const struct nf_etl_dxg_event_info *info)
{
	static const char digits[] = "0123456789abcdef";
	bool first = true;

	s->jn = 0;
	if (!j_room(s, 2))
		return false;
	s->json[s->jn++] = '{';
	for (uint32_t i = 0; i < rec->nfields && i < info->nfields; i++) {
		const struct nf_etl_dxg_value *v = &rec->f[i];
		const struct nf_etl_dxg_field_info *fi = &info->fields[i];
		size_t nl = strlen(fi->name);

		if (!v->present)
			continue;
		if (!j_room(s, nl + 48))
			return false;
		if (!first)
			s->json[s->jn++] = ',';
		first = false;
		s->json[s->jn++] = '"';
		j_raw(s, fi->name, nl); /* the table's names: identifiers */
		j_raw(s, "\":", 2);
		switch (fi->type) {
		case NF_DXG_U8: case NF_DXG_U16: case NF_DXG_U32: case NF_DXG_U64: case NF_DXG_BOOL:
			j_int(s, (int64_t)v->u);
			break;
		case NF_DXG_I32:
			j_int(s, (int32_t)(uint32_t)v->u);
			break;
		case NF_DXG_I64:
			j_int(s, (int64_t)v->u);
			break;
		case NF_DXG_PTR:
			j_hex(s, v->u);
			break;
		case NF_DXG_GUID: {
			const uint8_t *g = v->p;
			struct nf_etl_guid guid;
			char text[NF_ETL_GUID_STR];

			guid.data1 = rd32(g);
			guid.data2 = (uint16_t)(g[4] | g[5] << 8);
			guid.data3 = (uint16_t)(g[6] | g[7] << 8);
			memcpy(guid.data4, g + 8, 8);
			nf_etl_guid_format(&guid, text);
			if (!j_str(s, text))
				return false;
			break;
		}
		case NF_DXG_WSTR:
			nf_etl_dxg_wstr(rec, i, s->wtext, sizeof(s->wtext));
			if (!j_str(s, s->wtext))
				return false;
			break;
		case NF_DXG_BIN:
			if (!j_room(s, v->u * 2 + 2))
				return false;
			s->json[s->jn++] = '"';
			for (uint64_t k = 0; k < v->u; k++) {
				s->json[s->jn++] = digits[v->p[k] >> 4];
				s->json[s->jn++] = digits[v->p[k] & 15];
			}
			s->json[s->jn++] = '"';
			break;
		case NF_DXG_PTR_ARRAY: case NF_DXG_U64_ARRAY:
			if (!j_room(s, v->u * 21 + 2))
				return false;
			s->json[s->jn++] = '[';
			for (uint32_t k = 0; k < v->u; k++) {
				if (k)
					s->json[s->jn++] = ',';
				if (fi->type == NF_DXG_PTR_ARRAY)
					j_hex(s, nf_etl_dxg_elem(rec, i, k));
				else
					j_int(s, (int64_t)nf_etl_dxg_elem(rec, i, k));
			}
			s->json[s->jn++] = ']';
			break;
		default:
			j_raw(s, "null", 4);
			break;
		}
	}
	if (!j_room(s, 2))
		return false;
	s->json[s->jn++] = '}';
	s->json[s->jn] = '\0';
	return true;
}

static void fill_dx(struct sess *s, const struct nf_etl_dxg_record *rec)
{
	struct nf_etwi_dx *d = &s->dx;
	struct slot_map *m;
	const struct nf_etl_dxg_event_info *info;
	bool values_array = false;

	memset(d, 0, offsetof(struct nf_etwi_dx, objects));
	d->n_objects = d->n_contexts = 0;
	if (rec->event <= 0 || rec->event >= NF_DXG_EV_COUNT)
		return;
	m = &s->maps[rec->event];
	info = nf_etl_dxg_event_info_by_event(rec->event);
	if (!info)
		return;
	if (!m->done) {
		for (uint32_t i = 0; i < info->nfields && i < NF_ETL_DXG_MAX_FIELDS; i++)
			m->slot[i] = (uint8_t)slot_of(info->fields[i].name);
		m->done = true;
	}
	for (uint32_t i = 0; i < rec->nfields && i < info->nfields && i < NF_ETL_DXG_MAX_FIELDS; i++) {
		const struct nf_etl_dxg_value *v = &rec->f[i];
		int type = info->fields[i].type;
		bool arr = type == NF_DXG_PTR_ARRAY || type == NF_DXG_U64_ARRAY;
		uint32_t n = arr ? (uint32_t)(v->u < NF_ETWI_MAX_ARRAY ? v->u : NF_ETWI_MAX_ARRAY) : 0;

		if (!v->present)
			continue;
		switch ((enum slot)m->slot[i]) {
		case SL_ADAPTER: d->adapter = v->u; break;
		case SL_CONTEXT:
			if (arr) {
				d->n_contexts = n;
				for (uint32_t k = 0; k < n; k++)
					d->contexts[k] = nf_etl_dxg_elem(rec, i, k);
				d->context = n ? d->contexts[0] : 0;
			} else {
				d->context = v->u;
				d->contexts[0] = v->u;
				d->n_contexts = 1;
			}
			break;
		case SL_DEVICE: d->device = v->u; break;
		case SL_HWQUEUE: d->hwqueue = v->u; break;
		case SL_SYNC: d->sync = v->u; break;
		case SL_PACKET: d->packet = v->u; break;
		case SL_EVENT: d->event = v->u; break;
		case SL_PROCESS: d->process = v->u; break;
		case SL_VALUE:
			if (arr) {
				values_array = true;
				for (uint32_t k = 0; k < n; k++)
					d->values[k] = nf_etl_dxg_elem(rec, i, k);
				d->value = n ? d->values[0] : 0;
			} else {
				d->value = v->u;
			}
			break;
		case SL_SUBMISSION: d->submission = v->u; break;
		case SL_NODE: d->node = (uint32_t)v->u; d->has_node = true; break;
		case SL_ENGINE: d->engine_type = (uint32_t)v->u; break;
		case SL_PTYPE: d->packet_type = (uint32_t)v->u; break;
		case SL_SEQ: d->seq = (uint32_t)v->u; break;
		case SL_TARGET: d->target = (uint32_t)v->u; break;
		case SL_FRAME: d->frame = (uint32_t)v->u; break;
		case SL_FLAGS: d->flags = (uint32_t)v->u; break;
		case SL_PREEMPTED: d->preempted = v->u != 0; break;
		case SL_PRESENT: d->present = v->u != 0; break;
		case SL_NAME:
			if (type == NF_DXG_WSTR) {
				nf_etl_dxg_wstr(rec, i, s->name, sizeof(s->name));
				d->name = s->name;
			}
			break;
		case SL_OBJECTS:
			if (arr) {
				d->n_objects = n;
				for (uint32_t k = 0; k < n; k++)
					d->objects[k] = nf_etl_dxg_elem(rec, i, k);
			}
			break;
		case SL_CPU0: d->cpu_ts[0] = (uint64_t)nf_etl_ticks_to_ns(s->lf, (int64_t)v->u); break;
		case SL_CPU1: d->cpu_ts[1] = (uint64_t)nf_etl_ticks_to_ns(s->lf, (int64_t)v->u); break;
		case SL_GPU0: d->gpu_ts[0] = v->u; break;
		case SL_GPU1: d->gpu_ts[1] = v->u; break;
		case SL_HWND: d->hwnd = v->u; break;
		case SL_SOURCE: d->source = (uint32_t)v->u; d->has_source = true; break;
		case SL_LAYER: d->layer = (uint32_t)v->u; break;
		case SL_FLIP_FENCE: d->flip_fence = v->u; break;
		case SL_REDIRECTED: d->redirected = v->u != 0; break;
		case SL_INTERVAL: d->interval = (uint32_t)v->u; d->has_interval = true; break;
		case SL_NONE: break;
		}
	}
	/* One value for every object (SignalSynchronizationObject2's FenceValue). */
	if (!values_array)
		for (uint32_t k = 0; k < d->n_objects; k++)
			d->values[k] = d->value;
	/* A single object named by a scalar field (SignalSynchronizationObjectImmediate). */
	if (d->n_objects == 0 && d->sync && (rec->id == 296 || rec->id == 462 || rec->id == 550)) {
		d->objects[0] = d->sync;
		d->values[0] = d->value;
		d->n_objects = 1;
	}
}

/* ---- NT kernel logger records ---- */

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Process start/end/rundown (Process_V3/V4 layouts): the image file name after
 * the SID. Returns false when the record does not have that shape. */
static bool process_name(const struct nf_etl_event *ev, uint32_t *pid, char *out, size_t cap)
{
	const uint8_t *p = ev->payload;
	uint32_t n = ev->payload_size, ps = ev->pointer_size, off;

	/* UniqueProcessKey, ProcessId, ParentId, SessionId, ExitStatus, DirectoryTableBase */
	off = ps + 16 + ps;
	if (ev->version >= 4)
		off += 4; /* Flags */
	if (ev->version < 3 || off + 4 > n)
		return false;
	*pid = rd32(p + ps);
	/* UserSID: a TOKEN_USER (two pointers) then the SID, or one zero word. */
	if (rd32(p + off) == 0 && off + 4 <= n && (off + 2 * ps > n || p[off + 2 * ps] != 1)) {
		off += 4;
	} else {
		off += 2 * ps;
		if (off + 8 > n)
			return false;
		off += 8 + 4u * p[off + 1];
	}
	if (off >= n)
		return false;
	size_t k = 0;

	while (off < n && p[off] && k + 1 < cap) {
		unsigned char c = p[off++];

		out[k++] = (char)(c < 0x20 || c > 0x7e ? '?' : c);
	}
	out[k] = '\0';
	return off < n && k > 0;
}

static void kernel_event(struct sess *s, const struct nf_etl_event *ev, struct nf_etwi_event *e)
{
	uint8_t group = (uint8_t)(ev->hook_id >> 8), type = (uint8_t)ev->hook_id;

	if (group == 0x05 && type == 36 && ev->payload_size >= 24) { /* CSwitch */
		e->kind = NF_ETWI_K_CSWITCH;
		e->k_new_tid = rd32(ev->payload);
		e->k_old_tid = rd32(ev->payload + 4);
		e->k_old_state = ev->payload[14];
	} else if (group == 0x05 && type == 72 && ev->payload_size >= 10) { /* Thread SetName */
		size_t k = 0;

		for (uint32_t off = 8; off + 1 < ev->payload_size && k + 1 < sizeof(s->kname); off += 2) {
			uint16_t u = (uint16_t)(ev->payload[off] | ev->payload[off + 1] << 8);

			if (!u)
				break;
			s->kname[k++] = (char)(u < 0x20 || u > 0x7e ? '?' : u); /* ASCII; others as '?' */
		}
		s->kname[k] = '\0';
		if (k) {
			e->kind = NF_ETWI_K_THREAD;
			e->k_pid = rd32(ev->payload);
			e->k_tid = rd32(ev->payload + 4);
			e->k_name = s->kname;
		}
	} else if (group == 0x03 && (type == 1 || type == 2 || type == 3 || type == 4)) {
		uint32_t pid = 0;

		if (process_name(ev, &pid, s->kname, sizeof(s->kname))) {
			e->kind = NF_ETWI_K_PROCESS;
			e->k_pid = pid;
			e->k_name = s->kname;
		}
	}
}

/* ---- building the timeline ---- */

static int put_meta(sqlite3 *db, const char *key, const char *val, struct nf_error *err)
{
	return nf_writer_meta(db, key, val, err);
}

static int put_meta_i(sqlite3 *db, const char *key, int64_t v, struct nf_error *err)
{
	return nf_writer_meta_int(db, key, v, err);
}

static void filetime_iso(int64_t ft, char *out, size_t cap)
{
	/* 100 ns units since 1601-01-01; 11644473600 s to the Unix epoch. */
	time_t t = (time_t)(ft / 10000000 - 11644473600LL);
	struct tm tm;

	if (ft <= 0 || !gmtime_r(&t, &tm) || !strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, cap, "unknown");
}

static int write_meta(sqlite3 *db, const char *source, const struct nf_etl_logfile *lf,
		      const struct nf_etwi_counts *c, int64_t duration, struct nf_error *err)
{
	char buf[160];
	int rc;

	struct nf_writer_session m = {
		.cpu_frequency = 1000000000,
		.start_ticks = 0,
		.duration_ns = duration,
		.source = "etw",
		.mode = "etw-import",
		.tool_version = NF_VERSION,
		.host = "unknown (Windows ETW capture)",
	};

	rc = nf_writer_session_meta(db, &m, err);
	rc = rc ? rc : put_meta(db, "etw_file", source, err);
	rc = rc ? rc : put_meta_i(db, "etw_os_build", lf->os_build, err);
	snprintf(buf, sizeof(buf), "%u.%u", lf->version[0], lf->version[1]);
	rc = rc ? rc : put_meta(db, "etw_os_version", buf, err);
	rc = rc ? rc : put_meta_i(db, "etw_pointer_size", lf->pointer_size, err);
	rc = rc ? rc : put_meta_i(db, "etw_cpus", lf->cpus, err);
	rc = rc ? rc : put_meta(db, "etw_clock", lf->clock_type == NF_ETL_CLOCK_QPC ? "qpc" :
				lf->clock_type == NF_ETL_CLOCK_SYSTEM ? "system" :
				lf->clock_type == NF_ETL_CLOCK_CYCLES ? "cycles" : "unknown", err);
	rc = rc ? rc : put_meta_i(db, "etw_clock_frequency", (int64_t)lf->tick_freq, err);
	filetime_iso(lf->start_filetime, buf, sizeof(buf));
	rc = rc ? rc : put_meta(db, "etw_start_time", buf, err);
	rc = rc ? rc : put_meta_i(db, "etw_buffers", (int64_t)lf->buffers, err);
	rc = rc ? rc : put_meta_i(db, "etw_buffers_lost", lf->buffers_lost, err);
	rc = rc ? rc : put_meta_i(db, "etw_events_lost", lf->events_lost, err);
	rc = rc ? rc : put_meta_i(db, "etw_buffers_flagged_lost",
				  (int64_t)(lf->buffers_flag_events_lost + lf->buffers_flag_buffer_lost), err);
	rc = rc ? rc : put_meta_i(db, "etw_events", (int64_t)c->events, err);
	rc = rc ? rc : put_meta_i(db, "etw_unmatched_unwaits", (int64_t)c->unmatched_unwaits, err);
	rc = rc ? rc : put_meta_i(db, "etw_dxgkrnl_events", (int64_t)c->dxgkrnl, err);
	rc = rc ? rc : put_meta_i(db, "etw_waits", (int64_t)c->waits, err);
	rc = rc ? rc : put_meta_i(db, "etw_signals", (int64_t)c->signals, err);
	rc = rc ? rc : put_meta_i(db, "etw_deps_tied", (int64_t)c->deps, err);
	rc = rc ? rc : put_meta_i(db, "etw_dma_packets", (int64_t)c->dma_packets, err);
	/* Rundown is DxgKrnl's: without DxgKrnl events only that is said. */
	snprintf(buf, sizeof(buf), "%s%s%s", c->kernel ? "" : "kernel,",
		 c->rundown || !c->dxgkrnl ? "" : "rundown,", c->dxgkrnl ? "" : "dxgkrnl,");
	if (buf[0])
		buf[strlen(buf) - 1] = '\0';
	rc = rc ? rc : put_meta(db, "etw_lacks", buf, err);
	return rc;
}

static int lost_anomalies(struct nf_etwi *in, const struct nf_etl_logfile *lf, struct nf_error *err)
{
	char d[160];
	int rc = 0;

	if (lf->events_lost) {
		snprintf(d, sizeof(d), "the logger lost %u events (logfile header EventsLost)", lf->events_lost);
		rc = nf_etwi_lost(in, 0, lf->events_lost, d, err);
	}
	if (rc == 0 && lf->buffers_lost) {
		snprintf(d, sizeof(d), "the logger lost %u buffers (logfile header BuffersLost)", lf->buffers_lost);
		rc = nf_etwi_lost(in, 0, lf->buffers_lost, d, err);
	}
	if (rc == 0 && lf->buffers_flag_events_lost) {
		snprintf(d, sizeof(d), "%" PRIu64 " buffers flagged 'events lost'", lf->buffers_flag_events_lost);
		rc = nf_etwi_lost(in, 0, lf->buffers_flag_events_lost, d, err);
	}
	if (rc == 0 && lf->buffers_flag_buffer_lost) {
		snprintf(d, sizeof(d), "%" PRIu64 " buffers flagged 'buffer lost'", lf->buffers_flag_buffer_lost);
		rc = nf_etwi_lost(in, 0, lf->buffers_flag_buffer_lost, d, err);
	}
	return rc;
}

static int ingest(sqlite3 *db, const char *etl, const char *source, struct nf_etwi_counts *cnt,
		  struct nf_error *err)
{
	struct nf_etl_reader *r = NULL;
	struct sess s;
	struct nf_etl_event ev;
	struct nf_etwi_event e;
	int64_t max_ns = 0;
	struct nf_etl_guid last_guid;
	char last_text[NF_ETL_GUID_STR];
	bool have_last = false;
	unsigned ptr_sizes = 0; /* bit 0: 4-byte pointer records seen, bit 1: 8-byte */
	uint64_t n_events = 0;
	int rc;

	memset(&s, 0, sizeof(s));
	memset(&last_guid, 0, sizeof(last_guid));
	rc = nf_etl_reader_open(etl, NF_ETL_DECODE_DXGKRNL, &r, err);
	if (rc)
		return rc;
	s.lf = nf_etl_reader_logfile(r);
	s.maps = calloc(NF_DXG_EV_COUNT, sizeof(*s.maps));
	s.in = s.maps ? nf_etwi_create(db, err) : NULL;
	if (!s.maps) {
		rc = nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
		goto out;
	}
	if (!s.in) {
		rc = err && err->code ? err->code : NF_ENOMEM;
		goto out;
	}
	rc = lost_anomalies(s.in, s.lf, err);
	while (rc == 0 && (rc = nf_etl_reader_next(r, &ev, err)) == 1) {
		memset(&e, 0, offsetof(struct nf_etwi_event, kind));
		e.kind = NF_ETWI_K_NONE;
		e.ns = ev.ns;
		e.cpu = ev.cpu;
		e.has_ids = ev.has_ids;
		e.pid = ev.pid;
		e.tid = ev.tid;
		if (ev.has_guid) {
			/* Formatting a GUID costs more than the rest of the event: once per run
			 * of the same provider. */
			if (!have_last || !nf_etl_guid_eq(&ev.provider, &last_guid)) {
				nf_etl_guid_format(&ev.provider, last_text);
				last_guid = ev.provider;
				have_last = true;
			}
			memcpy(e.provider, last_text, sizeof(last_text));
		} else {
			const char *g = nf_etl_kernel_group_name((uint8_t)(ev.hook_id >> 8));

			snprintf(e.provider, sizeof(e.provider), "kernel:%s", g ? g : "?");
			kernel_event(&s, &ev, &e);
		}
		e.id = ev.id;
		e.version = (uint8_t)ev.version;
		e.opcode = ev.opcode;
		e.size = ev.payload_size;
		if (ev.dxg_verdict == NF_ETL_DXG_OK && ev.dxg) {
			const struct nf_etl_dxg_event_info *info = nf_etl_dxg_event_info_by_event(ev.dxg->event);

			fill_dx(&s, ev.dxg);
			e.dxgkrnl = 1;
			e.dx = &s.dx;
			if (info && !dx_json(&s, ev.dxg, info)) {
				rc = nf_error_set(err, NF_ENOMEM, "%s: out of memory for an event's fields", etl);
				break;
			}
			e.fields = info ? s.json : NULL;
			e.fields_len = info ? s.jn : 0;
		} else if (ev.dxg_verdict == NF_ETL_DXG_SIZE_MISMATCH) {
			e.dxgkrnl = -1;
		}
		if (ev.ns > max_ns)
			max_ns = ev.ns;
		if (ev.has_guid || (ev.hook_id >> 8) != 0) /* not the logfile header's own records */
			ptr_sizes |= ev.pointer_size == 8 ? 2u : 1u;
		rc = nf_etwi_event(s.in, &e, err);
		if (rc == 0 && (++n_events & 4095) == 0 && interrupted())
			rc = nf_error_set(err, NF_EINTR, "%s: interrupted", etl);
	}
	if (rc < 0)
		goto out;
	/* Logging mode constants (Evntrace.h): EVENT_TRACE_FILE_MODE_CIRCULAR
	 * 0x2, EVENT_TRACE_BUFFERING_MODE 0x400 (in memory, circular). */
	nf_etwi_logging(s.in, (s.lf->log_file_mode & 0x402u) != 0);
	rc = nf_etwi_finish(s.in, cnt, err);
	rc = rc ? rc : nf_writer_views(db, "schemas/timeline-views.sql", err);
	rc = rc ? rc : write_meta(db, source ? source : etl, s.lf, cnt, max_ns, err);
	/* The logfile header's pointer size need not be the records' (the gpuvis
	 * capture: a 32-bit header, 64-bit events). */
	rc = rc ? rc : put_meta(db, "etw_record_pointer_sizes", ptr_sizes == 3 ? "4,8" : ptr_sizes == 2 ? "8" :
				ptr_sizes == 1 ? "4" : "", err);
out:
	nf_etwi_destroy(s.in);
	free(s.maps);
	free(s.json);
	nf_etl_reader_destroy(r);
	return rc;
}

/* The path the capture was imported from (NF_ETW_SOURCE_NAME), "" when unknown. */
static void read_source(const char *dir, char *out, size_t cap)
{
	char path[PATH_MAX];
	FILE *f;
	size_t n = 0;

	out[0] = '\0';
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, NF_ETW_SOURCE_NAME) >= sizeof(path) ||
	    !(f = fopen(path, "r")))
		return;
	n = fread(out, 1, cap - 1, f);
	fclose(f);
	out[n] = '\0';
	out[strcspn(out, "\n")] = '\0';
}

int nf_etw_build_timeline(const char *session_dir, const char *db_path, const char *key, struct nf_error *err)
{
	char etl[PATH_MAX], source[PATH_MAX];
	struct nf_etwi_counts cnt;
	sqlite3 *db = NULL;
	int rc;

	if ((size_t)snprintf(etl, sizeof(etl), "%s/%s", session_dir, NF_ETW_CAPTURE_NAME) >= sizeof(etl))
		return nf_error_set(err, NF_EINVAL, "%s: path too long", session_dir);
	read_source(session_dir, source, sizeof(source));
	rc = nf_writer_open(db_path, &db, err);
	rc = rc ? rc : nf_writer_begin(db, "schemas/timeline.sql", err);
	rc = rc ? rc : ingest(db, etl, source[0] ? source : NULL, &cnt, err);
	if (key)
		rc = rc ? rc : nf_writer_meta(db, "session_key", key, err);
	rc = rc ? rc : nf_writer_commit(db, "commit", err);
	return nf_writer_close(db, db_path, rc, err);
}

/* ---- import ---- */

/*
 * Puts the capture into the session: always a copy of its bytes, never a hard
 * link. A link would share the user's original inode, so anything written to
 * DIR/capture.etl (`cp other.etl DIR/capture.etl`) would overwrite the
 * original. copy_file_range lets the kernel do the copy (a reflink, sharing
 * the blocks, on filesystems that have them: btrfs, XFS).
 */
static int copy_bytes(const char *src, const char *dst, struct nf_error *err)
{
	int in = open(src, O_RDONLY | O_CLOEXEC), out = -1, rc = 0;
	struct stat st;
	char buf[1 << 16];

	if (in < 0)
		return nf_error_set(err, errno == ENOENT ? NF_ENOENT : NF_EIO, "%s: %s", src, strerror(errno));
	if (fstat(in, &st) != 0 || !S_ISREG(st.st_mode)) {
		rc = nf_error_set(err, NF_EFORMAT, "%s: not a regular file", src);
		goto out;
	}
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (out < 0) {
		rc = nf_error_set(err, NF_EIO, "%s: %s", dst, strerror(errno));
		goto out;
	}
	for (;;) {
		/* 64 MiB at a time: an interrupt is seen between them */
		ssize_t n = interrupted() ? (errno = EINTR, -1) : copy_file_range(in, NULL, out, NULL, 1 << 26, 0);

		if (n == 0)
			break;
		if (n > 0)
			continue;
		if (errno == EINTR) {
			rc = nf_error_set(err, NF_EINTR, "%s: interrupted while copying it into %s", src, dst);
			goto out;
		}
		if (errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP) {
			rc = nf_error_set(err, NF_EIO, "%s: copying to %s: %s", src, dst, strerror(errno));
			goto out;
		}
		/* No in-kernel copy here: plain reads and writes. */
		while (!interrupted() && (n = read(in, buf, sizeof(buf))) > 0)
			for (ssize_t w = 0; w < n;) {
				ssize_t k = write(out, buf + w, (size_t)(n - w));

				if (k < 0) {
					rc = nf_error_set(err, NF_EIO, "%s: %s", dst, strerror(errno));
					goto out;
				}
				w += k;
			}
		if (interrupted())
			rc = nf_error_set(err, NF_EINTR, "%s: interrupted while copying it into %s", src, dst);
		else if (n < 0)
			rc = nf_error_set(err, NF_EIO, "%s: %s", src, strerror(errno));
		break;
	}
out:
	if (out >= 0 && close(out) != 0 && rc == 0)
		rc = nf_error_set(err, NF_EIO, "%s: %s", dst, strerror(errno));
	close(in);
	return rc;
}

/* Counts of the built timeline for the import's summary line. */
static void read_stats(const char *db_path, struct nf_etw_import_stats *st)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;

	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db,
			       "SELECT (SELECT value FROM meta WHERE key = 'etw_events'), "
			       "(SELECT value FROM meta WHERE key = 'etw_dxgkrnl_events'), "
			       "(SELECT value FROM meta WHERE key = 'etw_waits'), "
			       "(SELECT value FROM meta WHERE key = 'etw_signals'), "
			       "(SELECT value FROM meta WHERE key = 'etw_deps_tied'), "
			       "(SELECT value FROM meta WHERE key = 'etw_dma_packets'), "
			       "(SELECT value FROM meta WHERE key = 'etw_cpus')", -1, &s, NULL) == SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW) {
		st->events = (uint64_t)sqlite3_column_int64(s, 0);
		st->dxgkrnl = (uint64_t)sqlite3_column_int64(s, 1);
		st->waits = (uint64_t)sqlite3_column_int64(s, 2);
		st->signals = (uint64_t)sqlite3_column_int64(s, 3);
		st->deps = (uint64_t)sqlite3_column_int64(s, 4);
		st->dma_packets = (uint64_t)sqlite3_column_int64(s, 5);
		st->cpus = (uint32_t)sqlite3_column_int64(s, 6);
	}
	sqlite3_finalize(s);
	sqlite3_close(db);
}

/* The importers' convert: the capture (checked to be an ETL first) and where it came from. */
static int etw_convert(const char *etl_path, const char *tmp, volatile int *interrupt,
		       struct nf_import_result *res, struct nf_error *err)
{
	char cap[PATH_MAX + 32], src[PATH_MAX + 32];
	struct nf_etl_reader *r = NULL;
	FILE *f;
	int rc;

	(void)interrupt; /* the table's nf_importers_interrupted() says it */
	(void)res;
	/* The header first: a file that is not an ETL is refused before anything is copied. */
	rc = nf_etl_reader_open(etl_path, 0, &r, err);
	nf_etl_reader_destroy(r);
	if (rc)
		return rc;
	snprintf(cap, sizeof(cap), "%s/%s", tmp, NF_ETW_CAPTURE_NAME);
	if ((rc = copy_bytes(etl_path, cap, err)))
		return rc;
	snprintf(src, sizeof(src), "%s/%s", tmp, NF_ETW_SOURCE_NAME);
	f = fopen(src, "w");
	if (!f)
		return nf_error_set(err, NF_EIO, "%s: %s", src, strerror(errno));
	if ((fprintf(f, "%s\n", etl_path) < 0) | (fclose(f) != 0))
		return nf_error_set(err, NF_EIO, "%s: cannot write", src);
	return 0;
}

/* The import's summary line, from the built timeline. */
static void etw_imported(const char *db_path, struct nf_import_result *res)
{
	struct nf_etw_import_stats st;

	memset(&st, 0, sizeof(st));
	read_stats(db_path, &st);
	snprintf(res->summary, sizeof(res->summary),
		 "%" PRIu64 " ETW events on %u CPUs (%" PRIu64 " DxgKrnl): %" PRIu64 " waits, %" PRIu64
		 " signals, %" PRIu64 " waits tied to their signal, %" PRIu64 " DMA packets",
		 st.events, st.cpus, st.dxgkrnl, st.waits, st.signals, st.deps, st.dma_packets);
}

const struct nf_importer nf_importer_etw = {
	.name = "etw",
	.session_is = nf_etw_session_is,
	.file_is = nf_etw_file_is,
	.file_named = etw_file_named,
	.build = nf_etw_build_timeline,
	.convert = etw_convert,
	.copied = NF_ETW_CAPTURE_NAME,
	.imported = etw_imported,
	.info = nf_etw_info,
	.check = nf_etw_check,
};

