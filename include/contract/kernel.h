/*
 * nftrace kernel: Linux kernel events (dma_fence, GPU scheduler, sched_switch,
 * sched_wakeup, anything else) in an nftrace session, in the `kernel` stream
 * (schemas/events.def). Two sources: a trace-cmd file (`nftrace import`,
 * read with libtracecmd) and a live private tracefs instance (`nftrace record
 * --kernel`). Both are decoded with libtraceevent from the event format
 * descriptions that came with the data, never from this machine's.
 */
#ifndef NFTRACE_KERNEL_H
#define NFTRACE_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "contract/errors.h"

#ifdef __cplusplus
extern "C" {
#endif

struct nf_kernel_stats {
	uint64_t records;       /* kernel records read */
	uint64_t dma_fence;     /* dma_fence events */
	uint64_t sched;         /* sched_switch and sched_wakeup */
	uint64_t raw;           /* other events, kept as KernelRaw */
	uint64_t gpu;           /* GPU job and vblank events (KernelGpuJob, KernelVblank) */
	uint64_t markers;       /* ftrace:print user markers (KernelMarker) */
	uint64_t lost_records;  /* KernelLostEvents written */
	uint64_t lost_events;   /* events the kernel counted as lost (unknown counts excluded) */
	uint64_t before_start;  /* records older than the session start (dropped) */
	uint32_t cpus;          /* CPUs in the trace */
	char note[512];         /* import: what was worked around to read the file ("" none);
				   also in the session environment ("import_note", shown by info) */
};

/* The one-line summary `nftrace import` prints of st: "N WHAT on C CPUs (... dma_fence,
 * ... sched, ...), L events lost by the kernel" (what: "kernel records", "ftrace text
 * lines of events"), into buf. */
void nf_kernel_stats_summary(const struct nf_kernel_stats *st, const char *what, char *buf, size_t len);

/* Whether path starts like a trace-cmd file ("\027\010\104tracing"): false for
 * anything unreadable. */
bool nf_kernel_file_is(const char *path);

/*
 * Converts a trace-cmd file (trace.dat, version 6 or 7, every buffer instance
 * in it) into the session directory out_dir (missing or empty: replacing a
 * session is the importers' table's, which builds aside and swaps): a CTF
 * trace whose CPU clock is the trace's clock in nanoseconds, starting at its
 * first event. Stops with NF_EINTR when *interrupt (NULL: never) becomes
 * non-zero (looked at every 4096 records). A version 6 file whose option 8
 * holds the saved TGIDs of the trace-cmd of 2017 (not the CPU count later
 * versions store there, which libtracecmd expects) is read anyway: the TGIDs
 * become KernelTask events and libtracecmd reads an unnamed corrected copy in
 * $TMPDIR (or /tmp); st->note says so. Returns 0, NF_ENOENT (no such file),
 * NF_EFORMAT (not a trace-cmd file, unsupported version, truncated, a damaged
 * option, no event formats, a record no format describes: the message names
 * the file and where), NF_EEXIST (out_dir not empty), NF_EINTR, NF_EIO (also:
 * the corrected copy could not be made), NF_ENOMEM. On failure the files it
 * wrote in out_dir are removed.
 */
int nf_kernel_import(const char *trace_dat, const char *out_dir, volatile int *interrupt,
		     struct nf_kernel_stats *st, struct nf_error *err);

/*
 * ftrace text: what `trace-cmd report` prints (with or without -t) and what
 * tracefs' `trace` (or trace_pipe) file gives, one event a line. Whether path
 * reads as one (by content: its first lines that are not blank are a
 * trace-cmd report header, a tracefs header or an event line; no NUL byte).
 */
bool nf_kernel_text_file_is(const char *path);
/* Whether path is named like one (.txt, .report). */
bool nf_kernel_text_file_named(const char *path);

/*
 * Converts ftrace text into the session directory out_dir, as
 * nf_kernel_import does a trace-cmd file: the same kernel stream, decoded by
 * the same decoder (kernel/text.c makes a record of each line). Every line is
 * read before anything is written: a line that does not read as a header, a
 * lost-events line or an event line, or that goes back in time, is NF_EFORMAT
 * "FILE:LINE: what is wrong". The text has no CPUSTAT (each CPU's coverage
 * starts at its first line); its CPU count is the header's (cpus=N, #P:N) or
 * else the highest CPU seen plus one; st->note (and the session's import_note)
 * says the timestamps' resolution and what was assumed.
 */
int nf_kernel_import_text(const char *path, const char *out_dir, volatile int *interrupt,
			  struct nf_kernel_stats *st, struct nf_error *err);

/* The events recorded when none are named: dma_fence, gpu_scheduler (when the
 * kernel has it), sched:sched_switch, sched:sched_wakeup. */
#define NF_KERNEL_DEFAULT_EVENTS "dma_fence,gpu_scheduler?,sched:sched_switch,sched:sched_wakeup"

struct nf_kernel_trace_options {
	const char *tracefs;    /* tracefs mount point; NULL: /sys/kernel/tracing */
	const char *events;     /* comma-separated "system", "system:event"; a trailing
				   '?' makes one optional; NULL: NF_KERNEL_DEFAULT_EVENTS */
	uint32_t buffer_kb;     /* ring buffer per CPU, 0: 4096 KiB */
};

struct nf_kernel_trace;

/*
 * Creates the private tracefs instance nftrace-<pid> (the global buffer is
 * left alone), sets its trace_clock to `mono` (CLOCK_MONOTONIC) and enables
 * the events, then starts a thread that drains every CPU's trace_pipe_raw
 * into memory while the workload runs. *origin_ns gets CLOCK_MONOTONIC just
 * before tracing began: the moment that maps to the session's start.
 * Instances nftrace-<pid> left by nftrace processes that died are removed.
 * Returns 0, NF_EUNSUPP (no tracefs, or not writable: the message says
 * which), NF_ENOENT (a named event the kernel does not have), NF_EIO,
 * NF_ENOMEM. Nothing is left in tracefs on failure.
 */
int nf_kernel_trace_start(const struct nf_kernel_trace_options *o, struct nf_kernel_trace **out,
			  uint64_t *origin_ns, struct nf_error *err);

/*
 * Stops tracing, drains what is left, and appends the `kernel` stream to the
 * session in session_dir (written by the recorder while tracing ran), mapping
 * origin_ns to the session's start_ticks. Returns 0, NF_EFORMAT (session or
 * ring-buffer data unreadable), NF_EIO, NF_ENOMEM.
 */
int nf_kernel_trace_finish(struct nf_kernel_trace *t, const char *session_dir,
			   struct nf_kernel_stats *st, struct nf_error *err);

/* Stops the reader if it runs and removes the tracefs instance; NULL is a no-op. */
void nf_kernel_trace_destroy(struct nf_kernel_trace *t);

/*
 * Removes what killed `record --kernel` runs left in tracefs (NULL:
 * /sys/kernel/tracing): every instances/nftrace-<pid> whose process is gone,
 * tracing and events turned off first. Nothing happens when tracefs is not
 * there or not writable (not root). nftrace runs it before every command.
 */
void nf_kernel_remove_stale_instances(const char *tracefs);

/*
 * Where tracefs is mounted (/proc/self/mounts; /sys/kernel/tracing when it is
 * one of several), into buf. Returns 0, or -1 when it is not mounted (or the
 * path does not fit in len).
 */
int nf_kernel_tracefs_find(char *buf, size_t len);

struct nf_record_options;
struct nf_record_result;

/*
 * `nftrace record --kernel EVENTS`: starts the kernel trace (EVENTS as in
 * nf_kernel_trace_options.events; NULL or "default": the defaults) in the
 * tracefs mounted at tracefs (NULL: /sys/kernel/tracing), runs the
 * recorder (nf_record_scenario, or nf_record_program when ro->argv is set),
 * then appends the kernel stream to the session. The session's start
 * (start_ticks) is the moment tracing began; the runtime's own events keep
 * its clock (virtual time in deterministic mode: only the origin is shared).
 * Returns 0, the trace's codes (NF_EUNSUPP when tracefs is not writable: no
 * session is written then), the recorder's, or NF_EINTR (interrupted; the
 * session and its kernel events were kept).
 */
int nf_kernel_record(const struct nf_record_options *ro, const char *events, const char *tracefs,
		     struct nf_record_result *res, struct nf_kernel_stats *kst, struct nf_error *err);

#ifdef __cplusplus
}
#endif

#endif
