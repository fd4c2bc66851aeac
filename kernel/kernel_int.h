/*
 * Private to kernel/: the decoder that turns libtraceevent records (from a
 * trace-cmd file, from tracefs ring-buffer pages, or made from ftrace text by
 * kernel/text.c) into the kernel events of
 * schemas/events.def and hands them to the CTF writer, and the loading of
 * ftrace format files into a tep handle.
 */
#ifndef NF_KERNEL_INT_H
#define NF_KERNEL_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <event-parse.h>

#include "contract/ctf.h"
#include "contract/errors.h"
#include "contract/kernel.h"

struct nf_kdecoder;

/* How kernel clock nanoseconds map onto the session's CPU clock ticks:
 * ticks = start_ticks + (ns - origin_ns) * cpu_frequency / 1e9. */
struct nf_kclock_map {
	uint64_t origin_ns;
	uint64_t start_ticks;
	uint64_t cpu_frequency;
};

/*
 * Creates a decoder writing into w (borrowed) with tep (borrowed). Emits
 * KernelTraceStart at start_ticks first. NULL on failure (err filled).
 */
struct nf_kdecoder *nf_kdecoder_create(struct tep_handle *tep, struct nf_ctf_writer *w,
				       const struct nf_kclock_map *map, uint32_t cpus,
				       uint32_t source, const char *clock, const char *where,
				       struct nf_error *err);

/*
 * Decodes one record of cpu (records must come in time order). Lost events the
 * record carries (record->missed_events) come out first as KernelLostEvents.
 * Returns 0, NF_EFORMAT (a record no format describes, or fields outside the
 * record: "where: CPU n, record at offset o: ..."), NF_ENOMEM or NF_EIO.
 */
int nf_kdecoder_record(struct nf_kdecoder *d, struct tep_record *rec, int cpu,
		       struct nf_error *err);

/* Emits a KernelLostEvents for cpu at kernel time ns (count < 0: unknown). */
int nf_kdecoder_lost(struct nf_kdecoder *d, int cpu, uint64_t ns, long long count,
		     struct nf_error *err);

/* A thread's process (from a file's saved TGIDs): a KernelTask event. Returns 0 or the writer's code. */
int nf_kdecoder_task(struct nf_kdecoder *d, uint32_t tid, uint32_t tgid, struct nf_error *err);

/* What a trace file says of one CPU's buffer (a KernelCpuStat event). */
struct nf_kcpu_stat {
	uint32_t cpu;
	uint64_t records;      /* records of the CPU in the file */
	bool has_stat;         /* the CPUSTAT option describes it */
	uint64_t read_events, overrun, dropped;
};

/* Emits a KernelCpuStat after the last record. Returns 0 or the writer's code. */
int nf_kdecoder_cpu_stat(struct nf_kdecoder *d, const struct nf_kcpu_stat *cs, struct nf_error *err);

void nf_kdecoder_get_stats(const struct nf_kdecoder *d, struct nf_kernel_stats *st);

void nf_kdecoder_destroy(struct nf_kdecoder *d);

/* One CPU's ring-buffer sub-buffers, as trace_pipe_raw hands them over. */
struct nf_kpages {
	int fd;                /* trace_pipe_raw (live recording only) */
	unsigned char *pages;  /* n_pages whole sub-buffers */
	size_t n_pages, cap_pages;
	uint64_t dropped;      /* sub-buffers read but not kept (memory bound) */
	uint64_t dropped_ts;   /* timestamp of the first one dropped */
};

/*
 * Decodes the sub-buffers of ncpu CPUs (subbuf bytes each, laid out as the
 * header_page parsed into tep says) with kbuffer, merged across CPUs in time
 * order, through the decoder. A sub-buffer flagged as following lost events
 * gives a KernelLostEvents; dropped ones one of unknown count per CPU.
 * Returns 0 or the decoder's codes.
 */
int nf_kpages_decode(struct nf_kdecoder *d, struct tep_handle *tep, const struct nf_kpages *cpus,
		     int ncpu, size_t subbuf, struct nf_error *err);

/*
 * Loads header_page and the format files of events_dir (a tracefs `events`
 * directory, or a copy of one) into tep: every event of each system named
 * (NULL: every system). Returns 0, NF_ENOENT, NF_EIO, NF_EFORMAT.
 */
int nf_kformats_load(struct tep_handle *tep, const char *events_dir, const char *const *systems,
		     struct nf_error *err);

/* Removes a session directory an import created (its plain files; the
 * directory itself too when rm_dir): kernel/import.c, kernel/text.c. */
void nf_kimport_remove_dir(const char *dir, bool rm_dir);

/* The CTF writer of an imported kernel session (import.c): environment with
 * source path, mode, start first (kernel ns) and note (left out when ""). */
int nf_kimport_writer_create(const char *out_dir, const char *path, const char *mode, uint64_t first,
			     const char *note, struct nf_ctf_writer **w, struct nf_error *err);

/* Ends an import (import.c): decoder destroyed, writer closed, on failure
 * what was written removed (out_dir too when the import made it). */
int nf_kimport_close(struct nf_kdecoder *d, struct nf_ctf_writer *w, int rc, bool created, const char *out_dir,
		     bool existed, struct nf_error *err);

#endif
