/*
 * The analyzer's ingest of a Windows ETW capture into the timeline (the
 * "Windows ETW captures" block of schemas/timeline.sql). etw_session.c reads
 * the file with etl/ and hands every event over in time order, DxgKrnl ones
 * already decoded into struct nf_etwi_dx (only the fields the mapping uses);
 * this file matches queue packets, DMA packets and CPU waits, writes rows as
 * they complete and, at finish, the objects, the deps and the counts. Memory
 * is bounded by what is in flight and by the number of distinct handles,
 * never by the number of events.
 */
#ifndef NF_ANALYZER_ETW_INGEST_H
#define NF_ANALYZER_ETW_INGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "contract/errors.h"

/* Elements of one event's arrays kept at most (more: the event is counted as
 * malformed and kept raw). */
#define NF_ETWI_MAX_ARRAY 64u

/* The DxgKrnl fields the mapping uses; what an event lacks stays 0. */
struct nf_etwi_dx {
	uint64_t adapter;      /* pDxgAdapter / hAdapter */
	uint64_t context;      /* hContext (the first one for multi-context events) */
	uint64_t device;       /* hDevice */
	uint64_t hwqueue;      /* hHwQueue */
	uint64_t sync;         /* hSyncObject / VidSchSyncObject / Object */
	uint64_t packet;       /* pQueuePacket / QueuePacket */
	uint64_t event;        /* hAsyncEvent / Event (CPU waits) */
	uint64_t process;      /* hProcessId (device rundown) */
	uint64_t parent;       /* ParentDxgHwQueue's context: hContext of 422-424 */
	uint64_t value;        /* FenceValue / ProgressFenceValue / InitialValue */
	uint64_t submission;   /* uliSubmissionId / uliCompletionId */
	uint64_t cpu_ts[2], gpu_ts[2]; /* SchedulingLog pairs (CPU in ns since start) */
	uint32_t node;         /* NodeOrdinal */
	uint32_t engine_type;  /* NodeMetadata EngineType */
	uint32_t packet_type;  /* PacketType */
	uint32_t seq;          /* SubmitSequence / ulQueueSubmitSequence */
	uint32_t target;       /* VidPnTargetId */
	uint32_t frame;        /* FrameNumber */
	uint32_t flags;
	bool preempted, present, has_node;
	const char *name;      /* NodeMetadata FriendlyName (UTF-8), or NULL */
	/* presents and flips (etw_present.c) */
	uint64_t hwnd;         /* Blit's window */
	uint64_t flip_fence;   /* VSyncDPC's FlipFenceId (the flip's submit sequence in its high half) */
	uint32_t source, layer;/* VidPnSourceId, LayerIndex */
	uint32_t interval;     /* FlipInterval */
	bool has_source, has_interval, redirected;
	/* Arrays: ObjectArray / SyncObjects, with FenceValue(s); hContext[]. */
	uint32_t n_objects, n_contexts;
	uint64_t objects[NF_ETWI_MAX_ARRAY], values[NF_ETWI_MAX_ARRAY];
	uint64_t contexts[NF_ETWI_MAX_ARRAY];
};

/* One event of the capture. */
struct nf_etwi_event {
	int64_t ns;            /* since the capture's start */
	uint32_t cpu;
	bool has_ids;          /* pid and tid known (not a PERFINFO header) */
	uint32_t pid, tid;
	char provider[40];     /* GUID text, lower case */
	const char *provider_name; /* known name or NULL */
	uint16_t id;
	uint8_t version, opcode;
	uint32_t size;         /* payload bytes */
	/* DxgKrnl: 1 decoded into dx, 0 not a mapped event, -1 size mismatch. */
	int dxgkrnl;
	const struct nf_etwi_dx *dx;
	/* DxgKrnl decoded: every payload field as a JSON object (dxgkrnl_events.fields), else NULL. */
	const char *fields;
	size_t fields_len;
	/* Classic kernel events decoded by the caller (NULL otherwise). */
	enum { NF_ETWI_K_NONE, NF_ETWI_K_CSWITCH, NF_ETWI_K_THREAD, NF_ETWI_K_PROCESS } kind;
	uint32_t k_new_tid, k_old_tid, k_old_state; /* CSWITCH */
	uint32_t k_tid, k_pid;                      /* THREAD / PROCESS */
	const char *k_name;                          /* thread or image name, UTF-8 */
};

struct nf_etwi;

/* Creates the ingest writing into db (the timeline schema already made, a
 * transaction open). NULL on failure with err set (NF_ESQL, NF_ENOMEM). */
struct nf_etwi *nf_etwi_create(sqlite3 *db, struct nf_error *err);

/* Takes one event (in time order, give or take the few microseconds records
 * of different CPUs can be out of order). Returns 0, NF_ESQL or NF_ENOMEM. */
int nf_etwi_event(struct nf_etwi *e, const struct nf_etwi_event *ev, struct nf_error *err);

/* How the capture was logged: circular (EVENT_TRACE_FILE_MODE_CIRCULAR or
 * BUFFERING_MODE: each CPU's oldest buffers overwritten, its record begins at
 * its first event) or not (every buffer kept). Call before nf_etwi_finish. */
void nf_etwi_logging(struct nf_etwi *e, bool circular);

/* Lost events or buffers the reader reported: an 'etw_lost' anomaly. */
int nf_etwi_lost(struct nf_etwi *e, int64_t ns, uint64_t count, const char *detail,
		 struct nf_error *err);

struct nf_etwi_counts {
	uint64_t events, dxgkrnl, waits, signals, deps, dma_packets, unmatched_unwaits;
	bool kernel, rundown; /* the capture had NT kernel events / DxgKrnl rundown */
};

/* Writes what is still open, the objects, deps and counts. Returns 0, NF_ESQL
 * or NF_ENOMEM. */
int nf_etwi_finish(struct nf_etwi *e, struct nf_etwi_counts *c, struct nf_error *err);

/* Frees; NULL is a no-op. Does not touch the database. */
void nf_etwi_destroy(struct nf_etwi *e);

#endif
