/*
 * nftrace events: the in-memory form of every event, generated from
 * schemas/events.def (the single source of truth), and the log-buffer byte
 * layouts of the real OS (DXGK_NATIVE_FENCE_LOG_HEADER / _ENTRY).
 */
#ifndef NFTRACE_EVENTS_H
#define NFTRACE_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "nftrace/visibility.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bump when an event or field is added; stored in every session. */
#define NF_SCHEMA_VERSION 6

enum nf_stream_id {
	NF_STREAM_EVENTS = 0, /* CPU-side ETW-like events and log reads */
	NF_STREAM_TRUTH = 1,  /* simulator ground truth */
	NF_STREAM_KERNEL = 2, /* Linux kernel events (nftrace import, record --kernel) */
	NF_STREAM_COUNT = 3,
};

enum nf_field_type {
	NF_FT_U8, NF_FT_U16, NF_FT_U32, NF_FT_U64, NF_FT_STR, NF_FT_U32SEQ, NF_FT_ENTRIES,
};

/* enum nf_event_id (NF_EV_<ID>, NF_EV_COUNT) and the field indices
 * (NFF_<EVENT>_<field>: the field's slot in nf_event.f[]), generated at build
 * time from schemas/events.def (CMakeLists.txt, nf_gen_event_ids) and
 * installed beside this header. */
#include "nftrace/events_ids.h"

#define NF_EVENT_MAX_FIELDS 16

/* Log types and operations (DXGK_NATIVE_FENCE_LOG_TYPE / _OPERATION). */
enum { NF_LOG_WAITS = 1, NF_LOG_SIGNALS = 2 };
enum { NF_LOG_OP_SIGNAL_EXECUTED = 0, NF_LOG_OP_WAIT_UNBLOCKED = 1 };

#define NF_LOG_HEADER_SIZE 40u
#define NF_LOG_ENTRY_SIZE 48u
#define NF_LOG_DEFAULT_ENTRIES 64u

/* DXGK_NATIVE_FENCE_LOG_ENTRY, byte for byte (48 bytes, little endian). */
struct nf_log_entry {
	uint64_t fence_value;
	uint32_t hnative_fence;
	uint32_t operation_type;
	uint64_t reserved0;
	uint64_t fence_observed_gpu_timestamp;
	uint64_t reserved1;
	uint64_t fence_end_gpu_timestamp;
};

/* DXGK_NATIVE_FENCE_LOG_HEADER (40 bytes). */
struct nf_log_header {
	uint32_t first_free_entry_index;
	uint32_t wraparound_count;
	uint32_t type;
	uint32_t padding;
	uint64_t number_of_entries;
	uint64_t reserved[2];
};

_Static_assert(sizeof(struct nf_log_entry) == NF_LOG_ENTRY_SIZE, "log entry layout");
_Static_assert(sizeof(struct nf_log_header) == NF_LOG_HEADER_SIZE, "log header layout");

/* One event, as the runtime emits it and the parser decodes it. */
struct nf_event {
	uint32_t id;                      /* enum nf_event_id */
	uint64_t ts;                      /* CPU clock ticks */
	uint64_t f[NF_EVENT_MAX_FIELDS];  /* integer fields, by NFF_* index */
	const char *str;                  /* the STR field, if the event has one */
	const uint32_t *u32s;             /* the U32SEQ field (length: field before) */
	const struct nf_log_entry *entries; /* the ENTRIES field (length: field before) */
};

struct nf_field_desc {
	const char *name;
	enum nf_field_type type;
	const char *doc;
};

struct nf_event_desc {
	const char *name;         /* CTF event name */
	uint32_t dxgkrnl_id;      /* the DxgKrnl event it mirrors, 0 if none */
	enum nf_stream_id stream;
	const char *doc;
	const struct nf_field_desc *fields;
	uint32_t n_fields;
};

/* The schema table, indexed by enum nf_event_id: the event's description
 * (static, never freed), or NULL when id >= NF_EV_COUNT. Thread-safe. */
NF_API const struct nf_event_desc *nf_event_desc(uint32_t id);

/* Looks an event up by its CTF name ("FenceSignalQueued"): returns its enum
 * nf_event_id, or -1 when the name is unknown (name must not be NULL).
 * Thread-safe. */
NF_API int nf_event_id_by_name(const char *name);

/* An event sink: where the runtime sends events (the recorder, a test, ...).
 * emit returns 0 or a negative NF_E* code; a failing sink stops the runtime:
 * the call that produced the event, and every later call that changes the
 * runtime, return that code (nfence.h).
 * ev and what it points to (str, u32s, entries) are borrowed for the call
 * only: copy what you keep. Events come in session order, one call at a time,
 * never two at once. Which thread calls emit: in NF_MODE_DETERMINISTIC the
 * thread inside the runtime call that produced the event (the GPU is
 * simulated inside the calls); in NF_MODE_THREADED any of the caller's
 * threads inside a runtime call, a GPU engine thread (log recreation) or the
 * runtime's CMP/interrupt thread (log reads, interrupts, CPU wakeups, clock
 * calibration), always with the runtime's OS lock held. So emit must not call
 * the runtime (it would deadlock) and should return quickly: every API call
 * waits while it runs. ctx is the caller's and must outlive the runtime. */
struct nf_event_sink {
	void *ctx;
	int (*emit)(void *ctx, const struct nf_event *ev);
};

#ifdef __cplusplus
}
#endif

#endif
