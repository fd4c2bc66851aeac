/*
 * A writer of small ETW log files (.etl) for tests and benchmarks: the
 * logfile header buffer, then per-CPU buffers of records of every header
 * type etl/ reads (EVENT_HEADER 32/64 with extended data, SYSTEM, COMPACT,
 * PERFINFO 32/64, FULL, INSTANCE, and the rarer kinds), with buffer flags.
 * It writes what the format says (etl-format.md), independently of the
 * reader's code, so tests can compare the reader's rows with what was put in.
 *
 * Records are appended to the current buffer of their CPU; a full buffer is
 * flushed to the output in the order buffers fill up (like ETW: file order
 * is not time order). Hostile files are made by writing a good one and
 * patching bytes (nf_etlw_buffer_offset tells where each buffer went).
 */
#ifndef NF_TESTS_ETL_WRITER_H
#define NF_TESTS_ETL_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "contract/etl.h"

struct nf_etlw_options {
	uint32_t buffer_size;      /* bytes per buffer, a multiple of 8, at least 1024; 0: 8192 */
	uint32_t cpus;             /* NumberOfProcessors; 0: 4 */
	unsigned header_pointer_size; /* 4: SYSTEM32 logfile header, 8: SYSTEM64; 0: 8 */
	uint32_t pointer_size;     /* the header's PointerSize field; 0: header_pointer_size */
	uint32_t os_build;         /* 0: 17134 */
	uint32_t clock_type;       /* 0: NF_ETL_CLOCK_QPC */
	uint64_t perf_freq;        /* 0: 10000000 */
	uint32_t cpu_mhz;          /* 0: 3000 */
	int64_t start_filetime;    /* 0: 2019-01-01 00:00:00 UTC */
	int64_t header_ticks;      /* the logfile header record's timestamp; 0: 1000 */
	uint32_t events_lost, buffers_lost;
	const char *logger_name;   /* NULL: "NT Kernel Logger" */
	const char *log_file_name; /* NULL: "C:\\capture.etl" */
};

struct nf_etlw;

/* NULL for a buffer_size the logfile header does not fit, or out of memory. */
struct nf_etlw *nf_etlw_create(const struct nf_etlw_options *o);
void nf_etlw_destroy(struct nf_etlw *w);

/* An EVENT_HEADER record (type 0x13 for pointer_size 8, 0x12 for 4). ext:
 * extended data items (ext_n of them; NULL/0 for none). */
struct nf_etlw_ext {
	uint16_t type;
	const void *data;
	uint16_t size;
};
struct nf_etlw_event {
	const struct nf_etl_guid *provider;
	uint16_t id;
	uint8_t version, channel, level, opcode;
	uint16_t task;
	uint64_t keyword;
	uint32_t pid, tid;
	uint16_t cpu;
	int64_t ticks;
	unsigned pointer_size;     /* 4 or 8; 0: 8 */
	const struct nf_etlw_ext *ext;
	unsigned ext_n;
	const void *payload;
	uint32_t size;
};
/* Returns 0, or -1 when the record cannot fit any buffer. */
int nf_etlw_event(struct nf_etlw *w, const struct nf_etlw_event *e);

/* A classic kernel logger record: kind NF_ETL_HDR_SYSTEM, _COMPACT or
 * _PERFINFO (pid/tid unused for PERFINFO). */
struct nf_etlw_classic {
	int kind;
	unsigned pointer_size;     /* 4 or 8; 0: 8 */
	uint16_t hook_id, version;
	uint32_t pid, tid;
	uint16_t cpu;
	int64_t ticks;
	const void *payload;
	uint32_t size;
};
int nf_etlw_classic(struct nf_etlw *w, const struct nf_etlw_classic *c);

/* A FULL (EVENT_TRACE_HEADER with a GUID) or INSTANCE record; class_type is
 * the opcode byte, class_version the version. */
struct nf_etlw_full {
	int kind;                  /* NF_ETL_HDR_FULL or NF_ETL_HDR_INSTANCE */
	unsigned pointer_size;
	const struct nf_etl_guid *guid;
	uint8_t class_type, class_level;
	uint16_t class_version;
	uint32_t pid, tid;
	uint16_t cpu;
	int64_t ticks;
	const void *payload;
	uint32_t size;
};
int nf_etlw_full(struct nf_etlw *w, const struct nf_etlw_full *f);

/* Raw bytes as a record of header type `type` (for unknown types and lies):
 * the record is the given bytes, padded to 8. */
int nf_etlw_raw(struct nf_etlw *w, uint16_t cpu, const void *bytes, uint32_t size);

/* Sets buffer flag bits (0x2 events lost, 0x4 buffer lost, 0x40 compressed)
 * on the current buffer of cpu (made if none). */
void nf_etlw_flag(struct nf_etlw *w, uint16_t cpu, uint16_t flags);

/* Flushes every partly filled buffer, in CPU order, then returns the file's
 * bytes (owned by w) in *data and *size; the writer takes no more records. */
int nf_etlw_finish(struct nf_etlw *w, const uint8_t **data, size_t *size);
/* nf_etlw_finish, then writes the bytes to path. Returns 0 or -1. */
int nf_etlw_save(struct nf_etlw *w, const char *path);

/* The file offset of buffer i (in file order), after finish; -1 if none. */
int64_t nf_etlw_buffer_offset(const struct nf_etlw *w, uint32_t i);
uint32_t nf_etlw_buffers(const struct nf_etlw *w);

/* Payload building: a growing byte string (aborts on out of memory: tests). */
struct nf_etlw_buf {
	uint8_t *p;
	size_t n, cap;
	unsigned pointer_size;     /* for put_ptr */
};
void nf_etlw_put_u8(struct nf_etlw_buf *b, uint8_t v);
void nf_etlw_put_u16(struct nf_etlw_buf *b, uint16_t v);
void nf_etlw_put_u32(struct nf_etlw_buf *b, uint32_t v);
void nf_etlw_put_u64(struct nf_etlw_buf *b, uint64_t v);
void nf_etlw_put_ptr(struct nf_etlw_buf *b, uint64_t v);
void nf_etlw_put_bytes(struct nf_etlw_buf *b, const void *p, size_t n);
void nf_etlw_put_wstr(struct nf_etlw_buf *b, const char *ascii);
void nf_etlw_buf_free(struct nf_etlw_buf *b);

#endif
