/*
 * nftrace parser: reads a recorded session (a CTF 1.8 trace directory) and
 * replays the OS's log-buffer bookkeeping, so that every log entry the GPU
 * wrote is either handed over or accounted for as lost. Sessions nftrace wrote
 * at this schema version are decoded natively (parser/fastread.c), every other
 * one through libbabeltrace2's graph; both deliver the same events in the same
 * order. NFTRACE_READER=babeltrace2 in the environment forces the graph.
 *
 * The parser streams: it calls back for every event, every decoded log entry
 * and every finding, in CPU time order, and holds only per-log state (memory
 * bounded by the number of queues, not by the number of events).
 */
#ifndef NFTRACE_PARSER_H
#define NFTRACE_PARSER_H

#include <stdbool.h>
#include <stdint.h>

#include "contract/errors.h"
#include "nftrace/events.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Session facts from the CTF trace environment. Strings are owned by the parser. */
struct nf_session_info {
	/* Strings absent from the environment read as "". */
	const char *tool_version;   /* nftrace version that recorded it */
	int64_t schema_version;     /* NF_SCHEMA_VERSION at record time */
	const char *source;         /* scenario path or command line */
	const char *mode;           /* "deterministic" or "threaded" */
	const char *host;           /* host name */
	uint64_t seed;              /* simulation seed */
	uint64_t cpu_frequency;     /* CPU clock ticks per second */
	uint64_t start_ticks;       /* CPU clock value at session start */
	bool ground_truth;          /* a truth stream was recorded */
	/* nftrace's own sessions: NULL when the recording ended cleanly and every
	 * stream is as long as recorded, else what is missing ("no end of
	 * recording (...)", "events has N of the M bytes recorded"). Always NULL
	 * for traces of other tools (nothing to tell). */
	const char *incomplete;
	const char *import_note;    /* `nftrace import`: what was worked around to read the file ("" none) */
};

/*
 * The largest GPU clock value (timestamps in log entries, calibration pairs)
 * the tools take as a time: 2^62 ticks is millennia at any GPU frequency, and
 * below it every difference of two values fits a signed 64-bit integer. A log
 * entry with a timestamp beyond it is an NF_FIND_OUT_OF_RANGE finding, and
 * the analyzer leaves such times NULL.
 */
#define NF_GPU_TS_MAX (1ull << 62)

/* What the log replay concluded about an entry or a gap. */
enum nf_finding_kind {
	NF_FIND_LOST,               /* entries overwritten before the OS read them (count) */
	NF_FIND_ZERO_TS,            /* an entry with a zero end timestamp (legal: LDA skip) */
	NF_FIND_REPEATED_TS,        /* end timestamp equal to the previous one (legal) */
	NF_FIND_BACKWARDS_TS,       /* end timestamp below the previous one (illegal) */
	NF_FIND_UNKNOWN_FENCE,      /* hNativeFence names no open fence handle */
	NF_FIND_BAD_OPERATION,      /* OperationType does not match the log type */
	NF_FIND_OUT_OF_RANGE,       /* index >= capacity, capacity 0 or absurd, slot out of range */
	NF_FIND_CORRUPT,            /* header went backwards in an epoch, truncated or corrupt packet */
	NF_FIND_NEW_EPOCH,          /* the log was recreated at a new location (not an overrun) */
	NF_FIND_COUNT
};

/* Short stable names: "lost", "zero_timestamp", "repeated_timestamp", ...;
 * "unknown" out of range. A static string, never NULL. */
const char *nf_finding_kind_name(enum nf_finding_kind kind);

/* True for the findings that are illegal (backwards timestamps, unknown
 * fence, bad operation, out of range, corrupt): they make `nftrace check`
 * exit non-zero; false for the legal ones (lost, zero or repeated timestamps,
 * a new epoch). */
bool nf_finding_is_illegal(enum nf_finding_kind kind);

#define NF_PACKET_UNKNOWN UINT64_MAX

struct nf_finding {
	enum nf_finding_kind kind;
	uint32_t adapter, hwqueue, log_type, epoch;
	uint64_t count;            /* entries concerned (lost entries for NF_FIND_LOST, else 1) */
	uint64_t first_seq;        /* first written-sequence position concerned */
	uint64_t prev_gpu_ts;      /* last non-zero end timestamp read before in this epoch (0 if none) */
	uint64_t next_gpu_ts;      /* LOST: first non-zero end timestamp read after the gap;
				      per-entry findings: the entry's own end timestamp (0 if none) */
	uint64_t cpu_ts;           /* CPU ticks of the log read where it was found */
	/* where: */
	const char *stream;        /* stream (file) name */
	uint64_t event_index;      /* index of the event within the session (every
				      event record counts, schema or not) */
	uint32_t entry_index;      /* index of the entry within that LOG_READ event */
	uint64_t packet;           /* the event's packet in its stream: packet_seq_num from
				      the packet context, else the packet's ordinal (from 0);
				      NF_PACKET_UNKNOWN from nf_logreplay_feed alone */
	char detail[160];          /* one line for humans */
};

/*
 * A log entry the replay accepted as newly written, with its place. Entries of
 * a read the replay finds inconsistent (header backwards, wrong count or slot)
 * are not handed over: their places are unknown; the CORRUPT finding says so.
 */
struct nf_decoded_entry {
	uint32_t adapter, hwqueue, log_type, epoch;
	uint64_t seq;              /* position in the written sequence: wrap*N + index */
	uint64_t read_cpu_ts;      /* CPU ticks of the read that delivered it */
	struct nf_log_entry entry; /* the 48 bytes as read */
	enum nf_finding_kind ts_class; /* NF_FIND_COUNT when ok, else ZERO_TS / REPEATED_TS / BACKWARDS_TS */
};

/*
 * Callbacks; any may be NULL. A non-zero return stops the run with that code.
 * For each event the event callback comes first, then the entries and findings
 * the log replay derives from it (for a LOG_READ: the LOST finding, then per
 * entry its findings followed by the entry). Pointers inside the structures
 * passed (nf_event.str, .u32s, .entries, nf_finding.stream) are valid only
 * during the call.
 */
struct nf_parser_callbacks {
	void *ctx;
	int (*event)(void *ctx, const struct nf_event *ev);
	int (*entry)(void *ctx, const struct nf_decoded_entry *entry);
	int (*finding)(void *ctx, const struct nf_finding *finding);
};

struct nf_parser;

/*
 * Opens a session directory and reads its environment (nothing is printed;
 * babeltrace2's logging is turned off). Returns 0, NF_ENOENT (no such
 * directory), NF_EFORMAT (no metadata, metadata or stream babeltrace2 rejects,
 * or an environment without schema_version / cpu_frequency: "not an nftrace
 * session"), NF_EUNSUPP (babeltrace2 plugins missing) or NF_ENOMEM. A session
 * nftrace did not write (or any, with NFTRACE_READER=babeltrace2) is first
 * read whole by babeltrace2 in a child process: when that child crashes or
 * does not finish in time (NFTRACE_BT_TIMEOUT seconds; by default 60 plus 1
 * per MiB), NF_EFORMAT ("DIR: babeltrace2 crashed (SIGSEGV) reading this
 * trace: ...") and nothing runs in this process; NF_EIO if it cannot start.
 */
int nf_parser_open(const char *dir, struct nf_parser **out, struct nf_error *err);

/* Borrowed; valid until nf_parser_destroy(). */
const struct nf_session_info *nf_parser_info(const struct nf_parser *p);

/*
 * Reads the whole session once, calling back in time order. Events whose name
 * is not in the schema are skipped (and counted); schema fields are looked up
 * by name, a missing one reads as 0 (NULL for STR). Returns 0, a callback's
 * code, NF_EFORMAT (the trace could not be decoded: truncated or corrupt
 * stream, time going back within a stream, with the file and offset or
 * babeltrace2's cause; callbacks may have run for what came before),
 * NF_EIO, NF_ENOMEM, or NF_ESTATE when called a second time.
 */
int nf_parser_run(struct nf_parser *p, const struct nf_parser_callbacks *cb,
		  struct nf_error *err);

/* What a run saw, for summaries. */
struct nf_parser_stats {
	uint64_t events;           /* event records read, known or not */
	uint64_t unknown_events;   /* records whose name is not in the schema (skipped) */
	uint64_t discarded_events; /* events the recorder reported as dropped */
};
/* Copies the counts so far into *st; never fails. */
void nf_parser_get_stats(const struct nf_parser *p, struct nf_parser_stats *st);

/* Frees the parser and the strings of its nf_session_info. NULL is a no-op. */
void nf_parser_destroy(struct nf_parser *p);

/*
 * The log replay on its own (no babeltrace2): feed it events in time order and
 * it calls back with entries and findings. The parser uses it; tests and the
 * fuzzer drive it directly.
 *
 * It keeps, per (adapter, hwqueue, log_type), the epoch, the capacity N, the
 * cached total = WraparoundCount*N + FirstFreeEntryIndex and the last non-zero
 * end timestamp, plus the local fence handles (per adapter, from
 * MonitoredFenceStart/Stop). An entry's hNativeFence is known when the handle
 * is open, or was closed after the previous read of that log (or after its
 * SetNativeFenceLogBuffer): the GPU may have written the entry before the
 * close and the OS read it after; otherwise UNKNOWN_FENCE. SetNativeFenceLogBuffer gives a NEW_EPOCH finding
 * and resets the log (never an overrun). A NativeFenceLogRead with header total
 * T after cached total C must carry min(T-C, N) entries starting at slot
 * max(C, T-N) mod N; T-C-N > 0 entries are reported LOST (one finding, exact
 * count, first_seq = C). A read from a later epoch than the last set one is a
 * NEW_EPOCH too, from an earlier epoch CORRUPT; T < C, a wrong entry count or
 * first slot, or a capacity change within an epoch are CORRUPT (the log
 * resyncs to T); capacity 0 or above 2^20, index >= capacity, first slot >= N
 * or a log type other than 1/2 are OUT_OF_RANGE (the read is ignored). A read
 * of a log never set starts it at the read's epoch. Timestamps are compared
 * with the previous non-zero end timestamp of the same log and epoch.
 * Bounds: 65536 logs and 2^22 fence handles in use (then NF_ENOMEM).
 */
struct nf_logreplay;
/* A new log replay calling cb (copied; NULL: no callbacks); the caller's, freed
 * with nf_logreplay_destroy (NULL is a no-op). NULL when out of memory. */
struct nf_logreplay *nf_logreplay_create(const struct nf_parser_callbacks *cb);
/* Returns 0, a callback's code, or NF_ENOMEM. Bad data becomes findings, not errors. */
int nf_logreplay_feed(struct nf_logreplay *r, const struct nf_event *ev,
		      const char *stream, uint64_t event_index, struct nf_error *err);
void nf_logreplay_destroy(struct nf_logreplay *r);

/* ---- the log summary (what `nftrace check` reports) ---------------------- */

/*
 * nf_log_summary_read reads a whole session through the parser and sums, per
 * hardware queue and per log (waits, signals, anything else), the entries
 * read, the log reads and epochs, every finding kind (NF_FIND_LOST counts
 * entries, the others findings) with where the first of each kind was found;
 * illegal findings (nf_finding_is_illegal) are also kept one by one, up to
 * NF_LOG_SUMMARY_MAX_LISTED. Memory is bounded by the number of queues
 * (nothing is kept per event): past NF_LOG_SUMMARY_MAX_QUEUES queues the rest
 * are summed in one bucket (overflow true). Names and streams from the
 * session are copied with control bytes replaced by '?' (they are printed to
 * terminals). The caller prints it (cli/cmd_check.c).
 */
#define NF_LOG_SUMMARY_MAX_QUEUES 4096u
#define NF_LOG_SUMMARY_MAX_LISTED 50u

/* A queue's log slots: the two real log types and everything else. */
enum { NF_LOG_SUMMARY_OTHER, NF_LOG_SUMMARY_WAITS, NF_LOG_SUMMARY_SIGNALS, NF_LOG_SUMMARY_LOGS };

/* Where the first finding of a kind was found. */
struct nf_log_where {
	char stream[32];
	uint64_t event_index, packet;
	uint32_t entry_index;
	uint64_t count, prev_gpu_ts, next_gpu_ts; /* LOST: the first gap and its span */
	bool set;
};

struct nf_log_counts {
	uint64_t reads, entries, epochs, capacity, lost_spans;
	uint64_t count[NF_FIND_COUNT];  /* LOST: entries; others: findings */
	struct nf_log_where first[NF_FIND_COUNT];
	bool seen;                      /* the log appeared in the session */
};

struct nf_queue_summary {
	uint32_t adapter, hwqueue;
	bool used, overflow;            /* overflow: the bucket for queues past the bound */
	char name[48];
	struct nf_log_counts log[NF_LOG_SUMMARY_LOGS];
};

struct nf_listed_finding {
	struct nf_finding f;            /* f.stream points into stream[], f.detail is static */
	char stream[32];
};

struct nf_log_summary {
	/* The queues in (adapter, hwqueue) order, the overflow bucket last. */
	struct nf_queue_summary *const *queues;
	size_t n_queues;
	struct nf_listed_finding listed[NF_LOG_SUMMARY_MAX_LISTED];
	size_t n_listed;
	uint64_t illegal, not_listed;   /* illegal findings; those past the list */
	uint64_t total[NF_FIND_COUNT];  /* over all queues (LOST: entries) */
	uint64_t entries, reads;        /* log entries decoded; log reads */
	struct nf_parser_stats stats;   /* the parser's, after the run */
	const char *incomplete;         /* the parser's info.incomplete (a copy), or NULL */
};

/*
 * Reads the session in dir and fills *out (the caller frees it with
 * nf_log_summary_destroy). Returns 0; or what nf_parser_open and
 * nf_parser_run return (NF_ENOENT, NF_EFORMAT, NF_ENOMEM, NF_EIO ...);
 * NF_ENOMEM when the summary itself runs out of memory ("DIR: out of memory
 * for queue summaries"). *out is NULL on error. Not thread-safe on one
 * summary; separate calls are independent.
 */
int nf_log_summary_read(const char *dir, struct nf_log_summary **out, struct nf_error *err);
/* Frees a summary; NULL is a no-op. */
void nf_log_summary_destroy(struct nf_log_summary *s);

#ifdef __cplusplus
}
#endif

#endif
