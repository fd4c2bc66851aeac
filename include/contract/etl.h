/*
 * nftrace etl: a reader of Windows ETW log files (.etl, as written by xperf,
 * WPR, tracelog or GPUView's log.cmd) without the Windows API, and the
 * decoder of Microsoft-Windows-DxgKrnl payloads from one table
 * (schemas/dxgkrnl.def).
 *
 * The reader walks the file buffer by buffer (WMI_BUFFER_HEADER: its size,
 * offsets and flags) and record by record inside each buffer, for every
 * header type real captures contain: EVENT_HEADER records of manifest and
 * TraceLogging providers (with their extended data), the NT kernel logger's
 * classic SYSTEM / COMPACT / PERFINFO records, and the FULL / INSTANCE /
 * TIMED / WNODE / MESSAGE / ERROR records of classic providers (delivered
 * with their size, unparsed beyond their common fields). It hands the
 * records out in time order: every buffer's records are in time order, and
 * the reader merges the buffers by timestamp, holding only the buffers that
 * overlap the current time in memory (bounded: see NF_ETL_MAX_OPEN_BYTES).
 * Facts about the file format: /work/shared/reference/etw/etl-format.md,
 * summarised in docs/ARCHITECTURE.md (etl/).
 *
 * Everything read from the file is untrusted: a size or offset that lies
 * stops the reader with NF_EFORMAT and a one-line message naming the file,
 * the buffer (index and file offset) and the offset of the record in it.
 */
#ifndef NFTRACE_ETL_H
#define NFTRACE_ETL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "contract/errors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* GUIDs                                                                     */

/* A GUID as Windows defines it (the file stores Data1-3 little-endian). */
struct nf_etl_guid {
	uint32_t data1;
	uint16_t data2, data3;
	uint8_t data4[8];
};

/* Microsoft-Windows-DxgKrnl {802ec45a-1e99-4b83-9920-87c98277ba9d}. */
extern const struct nf_etl_guid nf_etl_guid_dxgkrnl;

#define NF_ETL_GUID_STR 37 /* "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" + NUL */

/* Writes g as lowercase text without braces into out (NF_ETL_GUID_STR bytes). */
void nf_etl_guid_format(const struct nf_etl_guid *g, char out[NF_ETL_GUID_STR]);
/* True when a and b are the same GUID (all 16 bytes equal). */
bool nf_etl_guid_eq(const struct nf_etl_guid *a, const struct nf_etl_guid *b);

/* The name of a provider this library knows ("Microsoft-Windows-DxgKrnl"),
 * or NULL. */
const char *nf_etl_provider_name(const struct nf_etl_guid *g);

/* ------------------------------------------------------------------------ */
/* The logfile header                                                        */

enum nf_etl_clock {
	NF_ETL_CLOCK_QPC = 1,     /* QueryPerformanceCounter ticks at perf_freq per second */
	NF_ETL_CLOCK_SYSTEM = 2,  /* system time, 100 ns units */
	NF_ETL_CLOCK_CYCLES = 3,  /* CPU cycle counter, cpu_mhz MHz */
};

/* What the file says about itself (TRACE_LOGFILE_HEADER, the first record of
 * the first buffer) and what the reader's pass over the buffer headers found. */
struct nf_etl_logfile {
	/* From TRACE_LOGFILE_HEADER. */
	uint32_t buffer_size;      /* bytes per buffer */
	uint8_t version[4];        /* VersionDetail: OS major, minor, sub, sub-minor (10.0.1.5) */
	uint32_t os_build;         /* ProviderVersion: the Windows build (17134, ...) */
	uint32_t cpus;             /* NumberOfProcessors */
	uint32_t pointer_size;     /* the header's PointerSize (4 or 8); the pointer size of
				      each record's payload is the record's own (nf_etl_event) */
	uint32_t header_pointer_size; /* 4 or 8: the logfile header record's own type */
	uint32_t clock_type;       /* enum nf_etl_clock (ReservedFlags) */
	uint64_t perf_freq;        /* PerfFreq, QPC ticks per second */
	uint32_t cpu_mhz;          /* CpuSpeedInMHz */
	uint32_t timer_resolution; /* 100 ns units */
	uint32_t log_file_mode;    /* EVENT_TRACE_* mode bits */
	uint32_t buffers_written;  /* BuffersWritten, as the logger counted them */
	uint32_t events_lost;      /* EventsLost, as the logger counted them */
	uint32_t buffers_lost;     /* BuffersLost, as the logger counted them */
	int64_t start_filetime;    /* StartTime: 100 ns since 1601-01-01 UTC */
	int64_t end_filetime;      /* EndTime (0 when the logger did not close cleanly) */
	int64_t boot_filetime;     /* BootTime */
	char logger_name[128];     /* UTF-8, "" when absent */
	char log_file_name[512];   /* UTF-8, "" when absent */

	/* The clock: ns = (ticks - start_ticks) * 1e9 / tick_freq, exactly. */
	uint64_t tick_freq;        /* ticks per second of record timestamps (from the clock type) */
	int64_t start_ticks;       /* ns 0: the earliest timestamp of a buffer's first record
				      (each buffer is in time order, so the earliest record) */
	int64_t end_ticks;         /* the latest record timestamp read so far (the
				      capture's last once every record was read) */

	/* Found by the reader's pass over the buffer headers (at open). */
	uint64_t file_size;
	uint64_t buffers;          /* buffers in the file */
	uint64_t empty_buffers;    /* buffers holding no record */
	uint64_t buffers_flag_events_lost; /* buffers flagged "events lost" (0x2) */
	uint64_t buffers_flag_buffer_lost; /* buffers flagged "buffer lost" (0x4) */
	uint32_t cpus_seen;        /* 1 + the highest processor number of a buffer */
};

/* ------------------------------------------------------------------------ */
/* The reader                                                                */

/* Bytes a buffer may have (BufferSize): larger is refused as a lie. */
#define NF_ETL_MAX_BUFFER_SIZE (64u << 20)
/* Bytes of buffers held at once by the time-ordered merge; a file whose
 * buffers overlap in time more than this is refused (NF_EUNSUPP). */
#define NF_ETL_MAX_OPEN_BYTES (128u << 20)
/* Distinct (provider, id, version) counted; further ones go to an overflow count. */
#define NF_ETL_MAX_COUNTS 65536u

enum nf_etl_open_flags {
	/* Records in file order (buffer after buffer) instead of time order:
	 * cheaper, for counting. */
	NF_ETL_FILE_ORDER = 1u << 0,
	/* Decode every Microsoft-Windows-DxgKrnl record with nf_etl_dxg_decode
	 * while reading: nf_etl_event.dxg and .dxg_verdict are set and the
	 * verdicts are counted (nf_etl_count). */
	NF_ETL_DECODE_DXGKRNL = 1u << 1,
};

struct nf_etl_reader;

/*
 * Opens the ETL file at path: reads the logfile header and every buffer's
 * header and the head of its first record (not the records: those are read
 * and checked by nf_etl_reader_next), so the facts in nf_etl_reader_logfile()
 * are known before the first record. flags: enum nf_etl_open_flags. Returns a
 * reader in *out and 0, or NF_ENOENT (no such file), NF_EIO, NF_ENOMEM,
 * NF_EFORMAT (not a regular file; not an ETL; truncated; a buffer whose size
 * or end of records lies; a logfile header that is not one or has an unknown
 * clock: the message names the file, the buffer and the offset), NF_EUNSUPP
 * (a compressed log: a buffer with the compressed flag 0x40, named).
 */
int nf_etl_reader_open(const char *path, unsigned flags, struct nf_etl_reader **out,
		       struct nf_error *err);

/* The same on bytes in memory (for tests and the fuzz target); data is
 * borrowed and must outlive the reader; name is used in messages. Returns
 * 0, NF_EFORMAT, NF_EUNSUPP or NF_ENOMEM as nf_etl_reader_open does (there
 * is no file to be missing or unreadable). */
int nf_etl_reader_open_mem(const void *data, size_t size, const char *name, unsigned flags,
			   struct nf_etl_reader **out, struct nf_error *err);

/* Closes the reader; NULL is a no-op. */
void nf_etl_reader_destroy(struct nf_etl_reader *r);

/* The logfile facts; borrowed, valid until destroy. */
const struct nf_etl_logfile *nf_etl_reader_logfile(const struct nf_etl_reader *r);

/* The kind of record header. */
enum nf_etl_header_kind {
	NF_ETL_HDR_SYSTEM = 1,   /* 0x01/0x02 SYSTEM32/64: kernel logger, pid/tid, HookId */
	NF_ETL_HDR_COMPACT,      /* 0x03/0x04 COMPACT32/64: as SYSTEM without CPU times */
	NF_ETL_HDR_PERFINFO,     /* 0x10/0x11 PERFINFO32/64: HookId, no pid/tid */
	NF_ETL_HDR_EVENT,        /* 0x12/0x13 EVENT_HEADER: manifest and TraceLogging providers */
	NF_ETL_HDR_FULL,         /* 0x0A/0x14 EVENT_TRACE_HEADER with a GUID (classic/MOF) */
	NF_ETL_HDR_INSTANCE,     /* 0x0B/0x15 EVENT_INSTANCE_HEADER */
	NF_ETL_HDR_TIMED,        /* 0x0C */
	NF_ETL_HDR_ERROR,        /* 0x0D */
	NF_ETL_HDR_WNODE,        /* 0x0E */
	NF_ETL_HDR_MESSAGE,      /* 0x0F WPP message */
};

/* A short name of a header kind ("event", "system", ...), "?" for an
 * unknown kind: a static string, never NULL. */
const char *nf_etl_header_kind_name(int kind);

/* One record. Pointers are borrowed: valid until the next nf_etl_reader_next
 * or destroy. */
struct nf_etl_event {
	int kind;                /* enum nf_etl_header_kind */
	uint8_t header_type;     /* the raw type byte (0x01 .. 0x15) */
	uint8_t pointer_size;    /* 4 or 8: pointers in this record's payload */
	uint16_t cpu;            /* the processor of the buffer holding the record */
	int64_t ticks;           /* raw timestamp, the log's clock */
	int64_t ns;              /* ns since the capture's start (start_ticks); can be
				    slightly negative for a record stamped out of order */

	/* Provider and event. EVENT, FULL, INSTANCE: the record's GUID
	 * (has_guid). SYSTEM, COMPACT, PERFINFO: no GUID; hook_id is the HookId
	 * (group << 8 | type), id = hook_id, opcode = its low byte, version the
	 * record's version. */
	bool has_guid;
	struct nf_etl_guid provider;
	uint16_t id;             /* EVENT: EVENT_DESCRIPTOR.Id; classic: hook_id */
	uint16_t version;        /* EVENT: EVENT_DESCRIPTOR.Version (u8); classic: the
				    header's version field */
	uint8_t channel, level, opcode;
	uint16_t task;
	uint64_t keyword;
	uint16_t hook_id;        /* SYSTEM/COMPACT/PERFINFO only, else 0 */
	uint16_t flags;          /* EVENT: EVENT_HEADER.Flags; classic: the marker/flags byte */
	uint16_t event_property; /* EVENT: EVENT_HEADER.EventProperty */

	bool has_ids;            /* pid/tid present (not PERFINFO) */
	uint32_t pid, tid;

	const uint8_t *payload;  /* the user data, after header and extended data */
	uint32_t payload_size;
	const uint8_t *ext;      /* EVENT only: the extended data items (nf_etl_ext_next) */
	uint32_t ext_size;       /* bytes of extended data, 0 when none */

	/* Where the record is: for messages. */
	uint64_t buffer_index;   /* buffer in file order, from 0 */
	uint64_t file_offset;    /* the record's first byte in the file */

	/* With NF_ETL_DECODE_DXGKRNL, for DxgKrnl EVENT records: the verdict
	 * (enum nf_etl_dxg_verdict) and, when NF_ETL_DXG_OK, the record. For
	 * every other record dxg is NULL and dxg_verdict is -1. */
	int dxg_verdict;
	const struct nf_etl_dxg_record *dxg;
};

/*
 * Reads the next record in time order (merged across buffers by timestamp;
 * ties in file order), or in file order with NF_ETL_FILE_ORDER. Returns 1
 * and fills *ev, 0 at the end of the file, or NF_EFORMAT (a record whose size
 * runs past its buffer's end, an extended data item that does, a header too
 * short for its type; message: file, buffer index and offset, record offset
 * in the buffer), NF_EUNSUPP (an unknown header type, or the merge would hold
 * more than NF_ETL_MAX_OPEN_BYTES), NF_EIO, NF_ENOMEM. After an error the
 * reader only returns that error again.
 */
int nf_etl_reader_next(struct nf_etl_reader *r, struct nf_etl_event *ev, struct nf_error *err);

/* The group name of a kernel logger HookId's group (high byte): "Process",
 * "Thread", "Image", "PerfInfo", "EventTrace", ... or NULL. */
const char *nf_etl_kernel_group_name(uint8_t group);

/* Converts a raw timestamp of this log to ns since its start (exact integer
 * arithmetic, no overflow for any 64-bit tick count). */
int64_t nf_etl_ticks_to_ns(const struct nf_etl_logfile *lf, int64_t ticks);

/* One extended data item of an EVENT record. */
struct nf_etl_ext_item {
	uint16_t type;           /* ExtType: 5 related activity, 6 SID, 8 stack trace,
				    11 TraceLogging schema, 12 provider traits, ... */
	uint16_t size;
	const uint8_t *data;
};

/* Iterates ev's extended data items: *pos starts at 0; returns true and
 * fills *item while there is one (the reader checked their bounds). */
bool nf_etl_ext_next(const struct nf_etl_event *ev, uint32_t *pos, struct nf_etl_ext_item *item);

/* For a TraceLogging record (an extended item of type 11): copies the event's
 * name (UTF-8) into out and returns true; false when there is none. The
 * provider's name, from the traits item (type 12): nf_etl_tracelogging_provider. */
bool nf_etl_tracelogging_name(const struct nf_etl_event *ev, char *out, size_t cap);
bool nf_etl_tracelogging_provider(const struct nf_etl_event *ev, char *out, size_t cap);

/* Counts per (provider or kernel group, id, version) of the records read so
 * far, sorted by provider, id, version. */
struct nf_etl_count {
	bool has_guid;           /* false: a kernel logger record (SYSTEM/COMPACT/PERFINFO)
				    or another record without a GUID */
	struct nf_etl_guid provider;
	int kind;                /* the header kind of the first record counted */
	uint16_t id, version;    /* as in nf_etl_event */
	uint64_t events;
	/* With NF_ETL_DECODE_DXGKRNL, DxgKrnl only: records by verdict. */
	uint64_t decoded, size_mismatch, unknown_version, not_in_table;
	uint32_t min_size, max_size; /* payload sizes seen */
};

/* The counts so far (borrowed, valid until the next nf_etl_reader_next or
 * destroy) in *out; returns how many. *overflow (may be NULL) gets the
 * records beyond NF_ETL_MAX_COUNTS distinct keys. */
size_t nf_etl_reader_counts(struct nf_etl_reader *r, const struct nf_etl_count **out,
			    uint64_t *overflow);

/* Records read so far. */
uint64_t nf_etl_reader_events(const struct nf_etl_reader *r);

/* True when the bytes look like the start of an ETL file: a buffer header
 * whose first record is a SYSTEM record with HookId 0 (the logfile header).
 * n: bytes available (at least 96 needed). For `nftrace import`'s dispatch. */
bool nf_etl_probe(const void *head, size_t n);

/* ------------------------------------------------------------------------ */
/* DxgKrnl decoding (schemas/dxgkrnl.def)                                    */

/* Field types of the table. */
enum nf_etl_dxg_type {
	NF_DXG_U8 = 1, NF_DXG_U16, NF_DXG_U32, NF_DXG_U64,
	NF_DXG_I32, NF_DXG_I64,
	NF_DXG_PTR,              /* 4 or 8 bytes by the record's pointer size */
	NF_DXG_BOOL,             /* 4-byte Win32 BOOL */
	NF_DXG_GUID,             /* 16 bytes */
	NF_DXG_WSTR,             /* NUL-terminated UTF-16LE */
	NF_DXG_BIN,              /* bytes; their count is an earlier field */
	NF_DXG_PTR_ARRAY,        /* pointers; their count is an earlier field */
	NF_DXG_U64_ARRAY,        /* u64; their count is an earlier field */
};

/* The events of the table: NF_DXG_EV_<NAME>, and for each the index of
 * each field in nf_etl_dxg_record.f: NF_DXGF_<NAME>_<field> (from 0;
 * NF_DXGF_<NAME>__COUNT fields). */
enum nf_etl_dxg_event {
	NF_DXG_EV_NONE = 0,
#define NF_DXG_EVENT(NAME, id, min_version, max_version, name, flags, doc) NF_DXG_EV_##NAME,
#define NF_DXG_FIELD(NAME, TYPE, field, count, since, doc)
#define NF_DXG_EVENT_END(NAME)
#include "../../schemas/dxgkrnl.def"
#undef NF_DXG_EVENT
#undef NF_DXG_FIELD
#undef NF_DXG_EVENT_END
	NF_DXG_EV_COUNT
};

#define NF_DXG_EVENT(NAME, id, min_version, max_version, name, flags, doc) \
	enum { NF_DXGF_##NAME##__NONE = -1,
#define NF_DXG_FIELD(NAME, TYPE, field, count, since, doc) NF_DXGF_##NAME##_##field,
#define NF_DXG_EVENT_END(NAME) NF_DXGF_##NAME##__COUNT };
#include "../../schemas/dxgkrnl.def"
#undef NF_DXG_EVENT
#undef NF_DXG_FIELD
#undef NF_DXG_EVENT_END

/* Event flags of the table. */
enum nf_etl_dxg_flags {
	NF_DXG_FENCE = 1u << 0,  /* fence-related: a size mismatch is a finding of `check` */
};

#define NF_ETL_DXG_MAX_FIELDS 32

/* One field's value in a decoded record. */
struct nf_etl_dxg_value {
	bool present;            /* false: the record's version has no such field */
	uint64_t u;              /* integers, pointers (zero-extended), BOOL (0/1 as
				    stored), I32/I64 as their two's complement bits;
				    arrays: element count; WSTR/BIN/GUID: bytes */
	const uint8_t *p;        /* WSTR, BIN, GUID, arrays: the bytes in the payload */
};

/* A decoded DxgKrnl record. p pointers borrow the payload passed to decode. */
struct nf_etl_dxg_record {
	int event;               /* enum nf_etl_dxg_event */
	uint16_t id;
	uint8_t version;
	uint8_t pointer_size;
	const char *name;        /* the manifest's event name ("QueuePacketStart") */
	unsigned flags;          /* enum nf_etl_dxg_flags */
	uint32_t nfields;        /* entries of f used */
	uint32_t trailing;       /* bytes past the layout: only for a version newer
				    than the table's (its fields are a prefix) */
	struct nf_etl_dxg_value f[NF_ETL_DXG_MAX_FIELDS];
};

enum nf_etl_dxg_verdict {
	NF_ETL_DXG_OK = 0,              /* decoded; *out filled */
	NF_ETL_DXG_NOT_IN_TABLE = 1,    /* an id the table does not describe */
	NF_ETL_DXG_UNKNOWN_VERSION = 2, /* older than the table's oldest version of the id */
	NF_ETL_DXG_SIZE_MISMATCH = 3,   /* the payload's size matches no layout: not decoded */
};

/*
 * Decodes the payload of a Microsoft-Windows-DxgKrnl record (id, version,
 * payload, size, the record's pointer size 4 or 8) by schemas/dxgkrnl.def.
 * Fields are read in order; arrays take their count from the earlier field
 * the table names; a field whose `since` version is above the record's
 * version is absent. The payload must end exactly where the layout does (a
 * version newer than the table's newest may be longer: out->trailing).
 * Returns an enum nf_etl_dxg_verdict; *out is filled only for NF_ETL_DXG_OK.
 * Never reads outside [payload, payload + size).
 */
int nf_etl_dxg_decode(uint16_t id, uint8_t version, const void *payload, uint32_t size,
		      unsigned pointer_size, struct nf_etl_dxg_record *out);

/* Element i (< f.u) of an array field of rec (PTR_ARRAY or U64_ARRAY), 0 for
 * anything else. */
uint64_t nf_etl_dxg_elem(const struct nf_etl_dxg_record *rec, unsigned field, uint32_t i);

/* Copies a WSTR field as UTF-8 (invalid units become U+FFFD) into out;
 * returns the bytes written (without the NUL). */
size_t nf_etl_dxg_wstr(const struct nf_etl_dxg_record *rec, unsigned field, char *out,
		       size_t cap);

/* The table's description of an event (NULL for an id not in it) and of its
 * fields: for docs, `info` and generic dumps. */
struct nf_etl_dxg_field_info {
	const char *name;
	int type;                /* enum nf_etl_dxg_type */
	int count_field;         /* arrays, BIN: index of the count field, else -1 */
	uint8_t since;           /* the first version that has the field */
	const char *doc;
};
struct nf_etl_dxg_event_info {
	int event;               /* enum nf_etl_dxg_event */
	uint16_t id;
	uint8_t min_version, max_version;
	const char *name;
	unsigned flags;
	const char *doc;
	uint32_t nfields;
	const struct nf_etl_dxg_field_info *fields;
};
/* The table's description of DxgKrnl event id (static, never freed), or NULL
 * when the table does not describe it. */
const struct nf_etl_dxg_event_info *nf_etl_dxg_event_info(uint16_t id);
/* By enum nf_etl_dxg_event (1 .. NF_DXG_EV_COUNT-1), else NULL. */
const struct nf_etl_dxg_event_info *nf_etl_dxg_event_info_by_event(int event);
/* A name of a type ("u32", "ptr", "ptr[]", ...), "?" for an unknown type: a
 * static string, never NULL. */
const char *nf_etl_dxg_type_name(int type);

#ifdef __cplusplus
}
#endif

#endif
