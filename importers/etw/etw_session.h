/*
 * The ETW importer (private to importers/etw/): a Windows ETW capture (.etl,
 * from xperf, WPR or GPUView's log.cmd) turned into an nftrace session. The session directory
 * holds the capture (NF_ETW_CAPTURE_NAME: always a copy of the imported file,
 * never a hard link, so writing into the session cannot change the original)
 * and its timeline
 * (.timeline.db, schemas/timeline.sql, the "Windows ETW captures" block); the
 * analyzer rebuilds the timeline from the copy like any other session's, so
 * `query`, `report`, `info` and `check` work on it. Reading the file is
 * etl/'s (include/contract/etl.h); this is the mapping into the timeline.
 */
#ifndef NF_IMPORTERS_ETW_SESSION_H
#define NF_IMPORTERS_ETW_SESSION_H

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
 * Builds the timeline database db_path from the ETW session session_dir (the
 * analyzer's nf_timeline_build() calls it for such sessions): every table of
 * the ETW block, the indexes and views, and meta (session_key = key unless
 * NULL). Returns 0, the reader's
 * codes (NF_EFORMAT, NF_EUNSUPP, NF_EIO, NF_ENOMEM) or NF_ESQL.
 */
int nf_etw_build_timeline(const char *session_dir, const char *db_path, const char *key, struct nf_error *err);

#ifdef __cplusplus
}
#endif

#endif
