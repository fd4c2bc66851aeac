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
#include "contract/etwsession.h"
#include "contract/errors.h"
#include "contract/infile.h"

#include "etw_ingest.h"
#include "contract/etl.h"
#include "contract/sessiondir.h"
#include "nftrace/events.h"
#include "contract/session.h"
#include "timeline_sql.h"
#include "timeline_views_sql.h"

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

/*
 * The caller's interrupt flag during nf_etw_import_interruptible (NULL
 * otherwise): the ingest and the copy look at it so that a SIGINT or SIGTERM
 * stops the import within a few thousand events. Per thread, as the import
 * runs on its caller's thread (nf_timeline_build in between has no room for it).
 */
static __thread volatile int *import_interrupt;

static bool interrupted(void)
{
	return import_interrupt && *import_interrupt;
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
	int fd = nf_infile_open(path, NULL); /* a FIFO: not an ETL, and no wait */
	ssize_t n;

	if (fd < 0)
		return false;
	n = read(fd, head, sizeof(head));
	close(fd);
	return n > 0 && nf_etl_probe(head, (size_t)n);
}

/* ---- DxgKrnl fields by name ---- */

enum slot {
	SL_NONE, SL_ADAPTER, SL_CONTEXT, SL_DEVICE, SL_HWQUEUE, SL_SYNC, SL_PACKET, SL_EVENT,
	SL_PROCESS, SL_VALUE, SL_SUBMISSION, SL_NODE, SL_ENGINE, SL_PTYPE, SL_SEQ, SL_TARGET,
	SL_FRAME, SL_FLAGS, SL_PREEMPTED, SL_PRESENT, SL_NAME, SL_OBJECTS, SL_CPU0, SL_GPU0,
	SL_CPU1, SL_GPU1
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
};

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

static int sql_exec(sqlite3 *db, const char *sql, const char *what, struct nf_error *err)
{
	char *msg = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		nf_error_set(err, NF_ESQL, "timeline: %s: %s", what, msg ? msg : sqlite3_errmsg(db));
		sqlite3_free(msg);
		return NF_ESQL;
	}
	return 0;
}

static int put_meta(sqlite3 *db, const char *key, const char *val, struct nf_error *err)
{
	sqlite3_stmt *s = NULL;
	int rc = 0;

	if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)", -1, &s,
			       NULL) != SQLITE_OK)
		return nf_error_set(err, NF_ESQL, "timeline: meta: %s", sqlite3_errmsg(db));
	sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, val, -1, SQLITE_STATIC);
	if (sqlite3_step(s) != SQLITE_DONE)
		rc = nf_error_set(err, NF_ESQL, "timeline: meta: %s", sqlite3_errmsg(db));
	sqlite3_finalize(s);
	return rc;
}

static int put_meta_i(sqlite3 *db, const char *key, int64_t v, struct nf_error *err)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRId64, v);
	return put_meta(db, key, buf, err);
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

	rc = put_meta_i(db, "schema_version", NF_SCHEMA_VERSION, err);
	rc = rc ? rc : put_meta_i(db, "timeline_version", NF_TIMELINE_VERSION, err);
	rc = rc ? rc : put_meta_i(db, "cpu_frequency", 1000000000, err);
	rc = rc ? rc : put_meta_i(db, "start_ticks", 0, err);
	rc = rc ? rc : put_meta_i(db, "duration_ns", duration, err);
	rc = rc ? rc : put_meta(db, "source", "etw", err);
	rc = rc ? rc : put_meta(db, "mode", "etw-import", err);
	rc = rc ? rc : put_meta(db, "tool_version", NF_VERSION, err);
	rc = rc ? rc : put_meta(db, "host", "unknown (Windows ETW capture)", err);
	rc = rc ? rc : put_meta_i(db, "ground_truth", 0, err);
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
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	snprintf(buf, sizeof(buf), "%ld-%lld.%09ld", (long)getpid(), (long long)now.tv_sec,
		 (long)now.tv_nsec);
	rc = rc ? rc : put_meta(db, "build_id", buf, err);
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
			fill_dx(&s, ev.dxg);
			e.dxgkrnl = 1;
			e.dx = &s.dx;
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
	rc = nf_etwi_finish(s.in, cnt, err);
	rc = rc ? rc : sql_exec(db, nf_timeline_views_sql, "schemas/timeline-views.sql", err);
	rc = rc ? rc : write_meta(db, source ? source : etl, s.lf, cnt, max_ns, err);
	/* The logfile header's pointer size need not be the records' (the gpuvis
	 * capture: a 32-bit header, 64-bit events). */
	rc = rc ? rc : put_meta(db, "etw_record_pointer_sizes", ptr_sizes == 3 ? "4,8" : ptr_sizes == 2 ? "8" :
				ptr_sizes == 1 ? "4" : "", err);
out:
	nf_etwi_destroy(s.in);
	free(s.maps);
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

int nf_etw_build_timeline(const char *session_dir, const char *db_path, struct nf_error *err)
{
	char etl[PATH_MAX], source[PATH_MAX];
	struct nf_etwi_counts cnt;
	sqlite3 *db = NULL;
	int rc;

	if ((size_t)snprintf(etl, sizeof(etl), "%s/%s", session_dir, NF_ETW_CAPTURE_NAME) >= sizeof(etl))
		return nf_error_set(err, NF_EINVAL, "%s: path too long", session_dir);
	read_source(session_dir, source, sizeof(source));
	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		rc = nf_error_set(err, NF_ESQL, "%s: %s", db_path, db ? sqlite3_errmsg(db) : "cannot open");
		goto out;
	}
	rc = sql_exec(db, "PRAGMA page_size = 65536; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; "
		      "PRAGMA temp_store = FILE; PRAGMA cache_size = -32768; PRAGMA temp.cache_size = -8192;",
		      "pragmas", err);
	rc = rc ? rc : sql_exec(db, "BEGIN", "begin", err);
	rc = rc ? rc : sql_exec(db, nf_timeline_sql, "schemas/timeline.sql", err);
	rc = rc ? rc : ingest(db, etl, source[0] ? source : NULL, &cnt, err);
	rc = rc ? rc : sql_exec(db, "COMMIT", "commit", err);
out:
	if (db && sqlite3_close(db) != SQLITE_OK && rc == 0)
		rc = nf_error_set(err, NF_ESQL, "%s: closing failed", db_path);
	return rc;
}

/* ---- import ---- */

static int copy_bytes(const char *src, const char *dst, struct nf_error *err);

/* Removes the plain files of dir, then dir (only the temporary session this import made). */
static void remove_dir_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[PATH_MAX];

	if (d) {
		while ((de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) < sizeof(path))
				unlink(path);
		}
		closedir(d);
	}
	rmdir(dir);
}

/*
 * Puts the capture into the session: always a copy of its bytes, never a hard
 * link. A link would share the user's original inode, so anything written to
 * DIR/capture.etl (`cp other.etl DIR/capture.etl`) would overwrite the
 * original. copy_file_range lets the kernel do the copy (a reflink, sharing
 * the blocks, on filesystems that have them: btrfs, XFS).
 */
static int copy_file(const char *src, const char *dst, struct nf_error *err)
{
	return copy_bytes(src, dst, err);
}

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

/*
 * Refuses an existing non-empty out_dir unless force and it is an nftrace
 * session holding only nftrace's files (core/session_dir.c, the recogniser
 * `record --force` uses too); *kind says what is there to replace afterwards
 * (NF_SESSION_NONE: nothing, or an empty directory the rename replaces).
 * Touches nothing.
 */
static int check_out_dir(const char *out_dir, bool force, enum nf_session_kind *kind, struct nf_error *err)
{
	struct stat st;
	DIR *d;
	struct dirent *de;
	bool empty = true;
	int rc;

	*kind = NF_SESSION_NONE;
	if (lstat(out_dir, &st) != 0)
		return errno == ENOENT ? 0 : nf_error_set(err, NF_EIO, "%s: %s", out_dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return nf_error_set(err, NF_EEXIST, "%s: exists and is not a directory", out_dir);
	if (!(d = opendir(out_dir)))
		return nf_error_set(err, NF_EIO, "%s: %s", out_dir, strerror(errno));
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			empty = false;
	closedir(d);
	if (empty)
		return 0;
	if (!force)
		return nf_error_set(err, NF_EEXIST, "%s: already exists (use --force to replace the session)",
				    out_dir);
	if ((rc = nf_session_dir_check(out_dir, err)) < 0)
		return rc;
	*kind = (enum nf_session_kind)rc;
	return 0;
}

/*
 * Puts the complete new session tmp in place of out_dir. An old session is
 * first renamed aside (so its files are never missing: on failure it goes
 * back), then its own files are removed; an empty out_dir is replaced by the
 * rename itself.
 */
static int swap_in(const char *tmp, const char *out_dir, enum nf_session_kind old, struct nf_error *err)
{
	char aside[PATH_MAX];
	struct nf_error e2;

	if (old == NF_SESSION_NONE) {
		if (rename(tmp, out_dir) != 0)
			return nf_error_set(err, NF_EIO, "%s: cannot rename %s to it: %s", out_dir, tmp,
					    strerror(errno));
		return 0;
	}
	if ((size_t)snprintf(aside, sizeof(aside), "%s.old-XXXXXX", out_dir) >= sizeof(aside))
		return nf_error_set(err, NF_EINVAL, "%s: path too long", out_dir);
	if (!mkdtemp(aside))
		return nf_error_set(err, NF_EIO, "%s: cannot create a directory beside it: %s", out_dir,
				    strerror(errno));
	/* rename onto the empty directory aside replaces it */
	if (rename(out_dir, aside) != 0) {
		int e = errno;

		rmdir(aside);
		return nf_error_set(err, NF_EIO, "%s: cannot move the old session aside: %s", out_dir, strerror(e));
	}
	if (rename(tmp, out_dir) != 0) {
		int e = errno;

		if (rename(aside, out_dir) != 0)
			return nf_error_set(err, NF_EIO, "%s: cannot rename %s to it (%s); the old session is in %s",
					    out_dir, tmp, strerror(e), aside);
		return nf_error_set(err, NF_EIO, "%s: cannot rename %s to it: %s", out_dir, tmp, strerror(e));
	}
	nf_error_clear(&e2);
	if (nf_session_dir_clear(aside, old, &e2) == 0)
		rmdir(aside);
	return 0;
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

static int import(const char *etl_path, const char *out_dir, bool force, struct nf_etw_import_stats *st,
		  struct nf_error *err);

int nf_etw_import(const char *etl_path, const char *out_dir, bool force, struct nf_etw_import_stats *st,
		  struct nf_error *err)
{
	return nf_etw_import_interruptible(etl_path, out_dir, force, NULL, st, err);
}

int nf_etw_import_interruptible(const char *etl_path, const char *out_dir, bool force,
				volatile int *interrupt, struct nf_etw_import_stats *st, struct nf_error *err)
{
	volatile int *saved = import_interrupt;
	int rc;

	import_interrupt = interrupt;
	rc = import(etl_path, out_dir, force, st, err);
	import_interrupt = saved;
	return rc;
}

static int import(const char *etl_path, const char *out_dir, bool force, struct nf_etw_import_stats *st,
		  struct nf_error *err)
{
	char tmp[PATH_MAX], cap[PATH_MAX + 32], db[PATH_MAX + 32];
	struct nf_etl_reader *r = NULL;
	enum nf_session_kind old;
	int rc;

	memset(st, 0, sizeof(*st));
	/* The header first: a file that is not an ETL is refused before anything is made. */
	rc = nf_etl_reader_open(etl_path, 0, &r, err);
	nf_etl_reader_destroy(r);
	if (rc)
		return rc;
	if ((rc = check_out_dir(out_dir, force, &old, err)))
		return rc;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.import-XXXXXX", out_dir) >= sizeof(tmp))
		return nf_error_set(err, NF_EINVAL, "%s: path too long", out_dir);
	if (!mkdtemp(tmp))
		return nf_error_set(err, NF_EIO, "%s: cannot create a directory beside it: %s", out_dir,
				    strerror(errno));
	snprintf(cap, sizeof(cap), "%s/%s", tmp, NF_ETW_CAPTURE_NAME);
	snprintf(db, sizeof(db), "%s/%s", tmp, NF_TIMELINE_DB_NAME);
	rc = copy_file(etl_path, cap, err);
	if (rc == 0) {
		char src[PATH_MAX + 32];
		FILE *f;

		snprintf(src, sizeof(src), "%s/%s", tmp, NF_ETW_SOURCE_NAME);
		f = fopen(src, "w");
		if (!f)
			rc = nf_error_set(err, NF_EIO, "%s: %s", src, strerror(errno));
		else if ((fprintf(f, "%s\n", etl_path) < 0) | (fclose(f) != 0))
			rc = nf_error_set(err, NF_EIO, "%s: cannot write", src);
	}
	rc = rc ? rc : nf_timeline_build(tmp, db, err);
	/* the last look before the session replaces anything */
	if (rc == 0 && interrupted())
		rc = nf_error_set(err, NF_EINTR, "%s: interrupted", etl_path);
	rc = rc ? rc : swap_in(tmp, out_dir, old, err);
	if (rc) {
		remove_dir_files(tmp);
		return rc;
	}
	snprintf(db, sizeof(db), "%s/%s", out_dir, NF_TIMELINE_DB_NAME);
	read_stats(db, st);
	return 0;
}

/* ---- summary for info and check ---- */

void nf_etw_summary_free(struct nf_etw_summary *s)
{
	if (!s)
		return;
	free(s->providers);
	s->providers = NULL;
	s->n_providers = 0;
}

static void col_text(sqlite3_stmt *s, int i, char *out, size_t cap)
{
	const unsigned char *t = sqlite3_column_text(s, i);

	snprintf(out, cap, "%s", t ? (const char *)t : "");
}

int nf_etw_summary_read(const char *dir, struct nf_etw_summary *out, struct nf_error *err)
{
	char db_path[PATH_MAX];
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!nf_etw_session_is(dir))
		return nf_error_set(err, NF_EFORMAT, "%s: not an ETW session (no %s)", dir, NF_ETW_CAPTURE_NAME);
	rc = nf_timeline_ensure(dir, db_path, sizeof(db_path), err);
	if (rc)
		return rc;
	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		rc = nf_error_set(err, NF_ESQL, "%s: %s", db_path, db ? sqlite3_errmsg(db) : "cannot open");
		goto out;
	}
	static const char q[] =
		"SELECT (SELECT value FROM meta WHERE key = 'etw_file'), "
		"(SELECT value FROM meta WHERE key = 'etw_os_build'), "
		"(SELECT value FROM meta WHERE key = 'etw_pointer_size') || ' bytes (logfile header); records: ' || "
		"coalesce((SELECT value FROM meta WHERE key = 'etw_record_pointer_sizes'), '?'), "
		"(SELECT value FROM meta WHERE key = 'etw_cpus'), "
		"(SELECT value FROM meta WHERE key = 'etw_clock'), "
		"(SELECT value FROM meta WHERE key = 'etw_clock_frequency'), "
		"(SELECT value FROM meta WHERE key = 'etw_start_time'), "
		"(SELECT value FROM meta WHERE key = 'duration_ns'), "
		"(SELECT value FROM meta WHERE key = 'etw_buffers'), "
		"(SELECT value FROM meta WHERE key = 'etw_buffers_lost'), "
		"(SELECT value FROM meta WHERE key = 'etw_events_lost'), "
		"(SELECT value FROM meta WHERE key = 'etw_buffers_flagged_lost'), "
		"(SELECT value FROM meta WHERE key = 'etw_events'), "
		"(SELECT value FROM meta WHERE key = 'etw_lacks'), "
		"(SELECT count(*) FROM queues), (SELECT count(*) FROM fences), "
		"(SELECT count(*) FROM fence_ops WHERE op = 'wait' AND queue IS NOT NULL), "
		"(SELECT count(*) FROM fence_ops WHERE op = 'signal'), "
		"(SELECT count(*) FROM cpu_waits), "
		"(SELECT count(*) FROM deps WHERE signal_id IS NOT NULL OR cpu_signal IS NOT NULL), "
		"(SELECT count(*) FROM dma_packets), (SELECT count(*) FROM vsyncs), "
		"(SELECT count(*) FROM fence_ops WHERE op = 'wait' AND queue IS NOT NULL AND status = 'pending'), "
		"(SELECT count(*) FROM cpu_waits WHERE status = 'pending'), "
		"(SELECT value FROM meta WHERE key = 'etw_unmatched_unwaits'), "
		"(SELECT coalesce(sum(size_mismatches), 0) FROM etw_counts)";
	if (sqlite3_prepare_v2(db, q, -1, &s, NULL) != SQLITE_OK || sqlite3_step(s) != SQLITE_ROW) {
		rc = nf_error_set(err, NF_ESQL, "%s: %s", db_path, sqlite3_errmsg(db));
		goto out;
	}
	col_text(s, 0, out->source, sizeof(out->source));
	out->os_build = sqlite3_column_int64(s, 1);
	out->pointer_size = sqlite3_column_int64(s, 2);
	col_text(s, 2, out->pointer_sizes, sizeof(out->pointer_sizes));
	out->cpus = sqlite3_column_int64(s, 3);
	col_text(s, 4, out->clock, sizeof(out->clock));
	out->clock_frequency = sqlite3_column_int64(s, 5);
	col_text(s, 6, out->start_time, sizeof(out->start_time));
	out->duration_ns = sqlite3_column_int64(s, 7);
	out->buffers = sqlite3_column_int64(s, 8);
	out->buffers_lost = sqlite3_column_int64(s, 9);
	out->events_lost = sqlite3_column_int64(s, 10);
	out->lost_flag_buffers = sqlite3_column_int64(s, 11);
	out->events = sqlite3_column_int64(s, 12);
	col_text(s, 13, out->lacks, sizeof(out->lacks));
	out->queues = sqlite3_column_int64(s, 14);
	out->fences = sqlite3_column_int64(s, 15);
	out->waits = sqlite3_column_int64(s, 16);
	out->signals = sqlite3_column_int64(s, 17);
	out->cpu_waits = sqlite3_column_int64(s, 18);
	out->deps = sqlite3_column_int64(s, 19);
	out->dma_packets = sqlite3_column_int64(s, 20);
	out->vsyncs = sqlite3_column_int64(s, 21);
	out->waits_pending = sqlite3_column_int64(s, 22);
	out->cpu_waits_pending = sqlite3_column_int64(s, 23);
	out->waits_unmatched_unwaits = sqlite3_column_int64(s, 24);
	out->size_mismatches = sqlite3_column_int64(s, 25);
	sqlite3_finalize(s);
	s = NULL;
	/* Which mismatched events are fence-related: the table says. */
	if (sqlite3_prepare_v2(db, "SELECT event_id, size_mismatches FROM etw_counts "
			       "WHERE name = 'Microsoft-Windows-DxgKrnl' AND size_mismatches > 0", -1, &s,
			       NULL) != SQLITE_OK) {
		rc = nf_error_set(err, NF_ESQL, "%s: %s", db_path, sqlite3_errmsg(db));
		goto out;
	}
	while (sqlite3_step(s) == SQLITE_ROW) {
		const struct nf_etl_dxg_event_info *ei =
			nf_etl_dxg_event_info((uint16_t)sqlite3_column_int(s, 0));

		if (ei && (ei->flags & NF_DXG_FENCE))
			out->fence_size_mismatches += sqlite3_column_int64(s, 1);
	}
	sqlite3_finalize(s);
	s = NULL;
	if (sqlite3_prepare_v2(db, "SELECT provider, coalesce(max(name), ''), sum(events), sum(size_mismatches) "
			       "FROM etw_counts GROUP BY provider ORDER BY sum(events) DESC, provider", -1, &s,
			       NULL) != SQLITE_OK) {
		rc = nf_error_set(err, NF_ESQL, "%s: %s", db_path, sqlite3_errmsg(db));
		goto out;
	}
	while (sqlite3_step(s) == SQLITE_ROW) {
		struct nf_etw_provider_count *np = realloc(out->providers, (out->n_providers + 1) * sizeof(*np));

		if (!np) {
			rc = nf_error_set(err, NF_ENOMEM, "info: out of memory");
			goto out;
		}
		out->providers = np;
		np += out->n_providers++;
		col_text(s, 0, np->provider, sizeof(np->provider));
		col_text(s, 1, np->name, sizeof(np->name));
		np->events = (uint64_t)sqlite3_column_int64(s, 2);
		np->size_mismatches = (uint64_t)sqlite3_column_int64(s, 3);
	}
out:
	sqlite3_finalize(s);
	sqlite3_close(db);
	if (rc)
		nf_etw_summary_free(out);
	return rc;
}
