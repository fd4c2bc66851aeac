/*
 * nftrace export: writes a session's timeline (schemas/timeline.sql) in the
 * formats other trace viewers open: Perfetto's protobuf trace (Perfetto UI,
 * trace_processor) and the Chrome trace event JSON (chrome://tracing, Perfetto
 * UI). It reads the timeline database through the SQL schema only, the way a
 * user's script would, and streams: memory grows with the number of queues,
 * threads and operations in flight at once on one queue, never with the length
 * of the session.
 *
 * What is written (the same content in both formats):
 * - a process per adapter (adapters), with a track per hardware queue (queues;
 *   for imported Linux captures each dma_fence context is such a queue, named
 *   by its kernel_timelines row); a process "CPU threads" with a thread track
 *   per CPU thread (cpu_waits, cpu_signals, queue_threads, and the fence_ops
 *   rows without a queue: the dma_fence waits of imported captures);
 * - each fence_ops row with a start (queued_ns, else observed_ns, else end_ns)
 *   and an end (end_ns) as a slice from start to end named "wait 0xFENCE" or
 *   "signal 0xFENCE" (category wait or signal), args id, fence, value, status,
 *   thread; a wait with observed_ns before end_ns has a nested slice "stall"
 *   from observed to end. A row with a start and no end (lost, zero or
 *   repeated timestamp, unmatched, unsignaled) is an instant at its start: no
 *   end is invented. Rows with no time at all are left out (counted);
 * - each cpu_waits row with both times as a slice "cpu wait ..." on its
 *   thread (without an end: an instant at its start), each cpu_signals row as
 *   an instant "cpu signal ..."; the cpu_waits rows of imported dma_fence
 *   waits (adapter NULL) are the same waits as their fence_ops rows and are
 *   written once, as the fence_ops row;
 * - one flow per deps row whose releasing signal (fence_ops or cpu_signals) is
 *   written too: flow id = wait_id + 1, from the signal to the wait (a signal
 *   that released several waits starts several flows; a flow never forks). It
 *   starts on the signal's slice (BEGIN, or its instant; JSON "s" at its start)
 *   and ends on the wait's (Perfetto: on the wait's END event; JSON: "f" one
 *   nanosecond before the wait's end, inside it or its stall), because trace
 *   viewers link flow events in time order and a wait is usually queued before
 *   the signal that releases it;
 * - each anomalies row with a time (first_ns, else last_ns) as an instant
 *   named by its kind on its queue's "anomalies" track (the "session" track
 *   when it names no queue), args detail and lost entries;
 * - per queue and log, a counter "QUEUE LOG lost entries": the running total
 *   of lost_entries, one value at each anomalies row with lost_entries > 0.
 * Imported captures add (each only when its table exists; GPU jobs, vblanks,
 * markers and VSyncs belong to no queue or fence, so a --queue or --fence
 * filter leaves them out, and DMA packets are kept by --queue only):
 * - Linux GPU jobs (jobs): a process "GPU jobs" with, per ring, a track
 *   "RING jobs" holding each job's run (started_ns .. finished_ns, named by
 *   its ring, category job) and a track "RING waiting" holding its wait to
 *   run (submitted_ns .. started_ns, "job wait"); a part with one time only
 *   is an instant at it ("job queued" when it never started); args job id,
 *   driver, job, context, seqno, thread, process, status. Each job_deps row
 *   whose two jobs are written is a flow, id = max(fence_ops.id) + 2 + the
 *   row's rowid (above every operation's flow), from the dependency's run
 *   (its wait when it has no run) to the job's wait (its run when it has no
 *   submit time);
 * - vblanks: an instant "vblank" per row on a track "CRTC N vblanks" of a
 *   process "Display"; markers: an instant per row on the thread that wrote
 *   it, named by its text (cut at 200 bytes; whole in the "text" arg);
 * - ETW DMA packets (dma_packets): per adapter and node, a track "NODE DMA
 *   packets" in the adapter's process, each packet a slice from start_ns to
 *   end_ns ("dma packet"; pending: an instant at its start); VSyncs (vsyncs):
 *   an instant "vsync" per row on the adapter's "VSync target N" track.
 * The frames (include/contract/frames.h; the caller computes them, e.g.
 * nf_frames_ensure; none with a --queue or --fence filter):
 * - flips: per display a track "display NAME flips" in the "Display" process,
 *   each flip a slice from when it could be shown (ready_ns, else queued_ns)
 *   to when it was latched (done_ns; never: an instant), named "flip", "late
 *   flip" (its frame late) or "dropped flip"; args flip id, frame, status,
 *   vblank seq, queued_ns;
 * - frames: per swap chain a track "frames of SWAPCHAIN" in a process
 *   "Frames", each frame a slice from its present to the blank it was shown
 *   at (else its GPU work done; neither: an instant), "frame" or "late frame";
 *   args frame, status, interval_ns, PresentMon's MsBetweenPresents,
 *   MsUntilRenderComplete, MsUntilDisplayed, MsGPUBusy, MsGPUWait (strings, in
 *   ms), missed vblanks, blame.
 * A queue or thread whose slices overlap without nesting (operations queued
 * before the previous one ended) gets lanes: child tracks "NAME #2", ... (in
 * JSON, a tid per lane), so that slices on one track always nest.
 * Times are the timeline's nanoseconds since the session start (JSON: "ts"
 * in microseconds with three decimals, exact). Memory: per queue and thread
 * and lane, per run of deps, plus one bit per fence_ops id (the waits that
 * end a flow). The scan of fence_ops and the reading of the flows run on a
 * thread of their own (with their own connections to the database) while the
 * caller's thread encodes, and full output buffers are written by a third.
 * Unfiltered, the export assumes every operation has a time; when the scan
 * finds some that have none, the file is discarded and made again with each
 * flow's ends checked (so such a timeline takes two passes).
 */
#ifndef NFTRACE_EXPORT_H
#define NFTRACE_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "contract/errors.h"

#ifdef __cplusplus
extern "C" {
#endif

enum nf_export_format {
	NF_EXPORT_PERFETTO,    /* Perfetto protobuf: Trace of TracePacket (TrackDescriptor, TrackEvent) */
	NF_EXPORT_CHROME_JSON, /* Chrome trace event JSON: {"traceEvents":[...]} */
};

struct nf_export_options {
	const char *output;        /* file to write (replaced atomically on success) */
	enum nf_export_format format;
	int64_t from_ns, to_ns;    /* time window, -1: session start / end; an item is written
				    * when it overlaps the window (whole, not clipped) */
	const int64_t *queues;     /* only fence operations, anomalies and counters of these queues
				    * (NULL: all) */
	int n_queues;
	const int64_t *fences;     /* only fence operations, CPU waits and CPU signals on these
				    * fences (NULL: all) */
	int n_fences;
};

/* What an export wrote (for the CLI's summary and the tests). */
struct nf_export_stats {
	uint64_t slices;       /* slices, stalls included */
	uint64_t stalls;       /* nested "stall" slices */
	uint64_t instants;     /* operations without an end, CPU signals, anomalies */
	uint64_t flows;        /* signal -> wait flows */
	uint64_t counters;     /* counter values */
	uint64_t tracks;       /* tracks described (processes, queues, threads, lanes, counters) */
	uint64_t skipped;      /* fence_ops rows with no time at all, not written */
	uint64_t bytes;        /* size of the file written */
};

/* Parses "perfetto" or "chrome-json". Returns 0 or NF_EINVAL. */
int nf_export_parse_format(const char *name, enum nf_export_format *out, struct nf_error *err);

/*
 * Exports the timeline database at db_path (opened read-only) to opts->output
 * in opts->format. The file is written next to its final name and renamed
 * over it when complete: on failure no output is left behind and an existing
 * file of that name is untouched. stats may be NULL.
 * Returns 0, or
 *   NF_EINVAL  no output, a negative filter count, --to not after --from; a
 *              window that starts at or after the session's end (meta
 *              duration_ns, else its latest time), as report refuses it;
 *   NF_ENOENT  no database file; a queue in opts->queues or a fence in
 *              opts->fences that the timeline does not have (as report says
 *              it); filters or a window that match nothing at all;
 *              the output's directory does not exist;
 *   NF_EFORMAT the file is not a timeline database (its tables are missing);
 *   NF_ESQL    a query failed;
 *   NF_EIO     the output cannot be created or written (disk full, ...);
 *   NF_ENOMEM  out of memory, or more than NF_EXPORT_MAX_LANES operations in
 *              flight at once on one queue or thread.
 */
int nf_export(const char *db_path, const struct nf_export_options *opts,
	      struct nf_export_stats *stats, struct nf_error *err);

/* Lanes (overlapping operations at once) one queue or thread may need at most. */
#define NF_EXPORT_MAX_LANES 65536

#ifdef __cplusplus
}
#endif

#endif
