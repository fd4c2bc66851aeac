/*
 * nftrace ETW sessions: a Windows ETW capture (.etl, from xperf, WPR or
 * GPUView's log.cmd) turned into an nftrace session. The session directory
 * holds the capture (NF_ETW_CAPTURE_NAME: always a copy of the imported file,
 * never a hard link, so writing into the session cannot change the original)
 * and its timeline
 * (.timeline.db, schemas/timeline.sql, the "Windows ETW captures" block); the
 * analyzer rebuilds the timeline from the copy like any other session's, so
 * `query`, `report`, `info` and `check` work on it. Reading the file is
 * etl/'s (include/contract/etl.h); this is the mapping into the timeline.
 */
#ifndef NFTRACE_ETWSESSION_H
#define NFTRACE_ETWSESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "contract/errors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The capture inside an ETW session directory. */
#define NF_ETW_CAPTURE_NAME "capture.etl"
/* Beside it: the path it was imported from (one line), for `info`. */
#define NF_ETW_SOURCE_NAME "capture.source"

/* True when dir is an ETW session: it holds NF_ETW_CAPTURE_NAME and no CTF
 * metadata. */
bool nf_etw_session_is(const char *dir);

/* True when the file starts like an ETL (its first buffer's header record is
 * an ETW logfile header): `nftrace import` dispatches on it. False for
 * anything unreadable. */
bool nf_etw_file_is(const char *path);

struct nf_etw_import_stats {
	uint64_t events;       /* records read */
	uint64_t dxgkrnl;      /* Microsoft-Windows-DxgKrnl events */
	uint64_t waits;        /* fence_ops waits (queue packets and CPU waits) */
	uint64_t signals;      /* fence_ops signals */
	uint64_t deps;         /* waits tied to the signal that released them */
	uint64_t dma_packets;  /* dma_packets rows */
	uint32_t cpus;         /* CPUs of the capture */
};

/*
 * Imports the capture etl_path into a new session directory out_dir: links
 * (same filesystem) or copies it there and builds the timeline from it. The directory is made
 * under a temporary name beside out_dir and renamed into place only once the
 * whole capture was read, so a failed import leaves nothing behind. Refuses
 * an existing non-empty out_dir unless force, and then only when it is an
 * nftrace session holding only nftrace's files (nf_session_dir_check,
 * include/contract/sessiondir.h), checked before anything is touched; the old
 * session is renamed aside, the new one in, and only then the old one removed
 * (put back if the rename fails). Returns 0, NF_ENOENT (no
 * such file), NF_EFORMAT (not an ETL, truncated, a buffer or record that
 * lies, compressed: the message names the file, the buffer and the offset),
 * NF_EUNSUPP, NF_EEXIST, NF_EIO, NF_ESQL or NF_ENOMEM.
 */
int nf_etw_import(const char *etl_path, const char *out_dir, bool force,
		  struct nf_etw_import_stats *st, struct nf_error *err);

/*
 * nf_etw_import that stops when *interrupt becomes non-zero (set by the
 * caller's SIGINT/SIGTERM handler; NULL: never): it is looked at every 4096
 * events, between 64 MiB chunks of the copy and before the new session
 * replaces anything. Returns NF_EINTR then, with the temporary directory
 * removed and out_dir as it was; otherwise as nf_etw_import.
 */
int nf_etw_import_interruptible(const char *etl_path, const char *out_dir, bool force,
				volatile int *interrupt, struct nf_etw_import_stats *st,
				struct nf_error *err);

/*
 * Builds the timeline database db_path from the ETW session session_dir (the
 * analyzer's nf_timeline_build() calls it for such sessions): every table of
 * the ETW block, the indexes and views, and meta. Returns 0, the reader's
 * codes (NF_EFORMAT, NF_EUNSUPP, NF_EIO, NF_ENOMEM) or NF_ESQL.
 */
int nf_etw_build_timeline(const char *session_dir, const char *db_path, struct nf_error *err);

/* One line of `info`: a provider with its events. */
struct nf_etw_provider_count {
	char provider[40];     /* GUID text */
	char name[64];         /* known name, else "" */
	uint64_t events;
	uint64_t size_mismatches;
};

/* What `info` and `check` tell of an ETW session (read from its timeline). */
struct nf_etw_summary {
	char source[512];       /* the imported file's path */
	int64_t os_build;       /* Windows build number (ProviderVersion) */
	int64_t pointer_size;   /* logfile header's pointer size (4 or 8) */
	char pointer_sizes[80]; /* "4 bytes (logfile header); records: 8" */
	int64_t cpus;
	char clock[16];         /* 'qpc', 'system', 'cycles' */
	int64_t clock_frequency;
	char start_time[40];    /* capture start, UTC, ISO 8601 */
	int64_t duration_ns;
	int64_t buffers, buffers_lost, events_lost, lost_flag_buffers;
	int64_t events;         /* every record */
	char lacks[128];        /* what the capture has not (meta etw_lacks) */
	/* Timeline counts. */
	int64_t queues, fences, waits, signals, cpu_waits, deps, dma_packets, vsyncs;
	int64_t waits_pending;     /* GPU waits never released before the end */
	int64_t cpu_waits_pending; /* CPU waits never released */
	int64_t waits_unmatched_unwaits; /* unwaits whose wait packet is not in the capture */
	int64_t size_mismatches;   /* DxgKrnl events of a size no layout has */
	int64_t fence_size_mismatches; /* ... of them, fence-related events (dxgkrnl.def) */
	struct nf_etw_provider_count *providers; /* by events, most first */
	size_t n_providers;
};

/*
 * Brings the timeline of the ETW session dir up to date (nf_timeline_ensure)
 * and reads the summary. Free it with nf_etw_summary_free. Returns 0,
 * nf_timeline_ensure()'s codes, NF_EFORMAT (not an ETW session), NF_ESQL or
 * NF_ENOMEM.
 */
int nf_etw_summary_read(const char *dir, struct nf_etw_summary *s, struct nf_error *err);
void nf_etw_summary_free(struct nf_etw_summary *s);

#ifdef __cplusplus
}
#endif

#endif
