/*
 * What the ETW importer tells of its sessions: `nftrace info` and the source's
 * part of `nftrace check` (read from the timeline's meta and counts).
 */
#ifndef NF_IMPORTERS_ETW_REPORT_H
#define NF_IMPORTERS_ETW_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "contract/session.h"

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

/* `nftrace info DIR` of an ETW session, to out. Returns 0 or nf_etw_summary_read()'s codes. */
int nf_etw_info(const char *dir, bool json, FILE *out, struct nf_error *err);

/* The ETW part of `nftrace check DIR`. Returns 0, nf_etw_summary_read()'s codes or NF_ENOMEM. */
int nf_etw_check(const char *dir, struct nf_source_check *c, struct nf_error *err);

#endif
