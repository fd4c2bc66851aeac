/*
 * Test helper: writes trace-cmd files (trace.dat, version 6) from real ftrace
 * format files (samples/kernel/formats, copied from this kernel's tracefs) and
 * a text list of events, building the per-CPU ring-buffer pages the way the
 * kernel lays them out (header_page, header_event). dma_fence events never
 * fire on a machine without a GPU; this is how their fixtures are made.
 *
 * Event list, one per line ('#' starts a comment):
 *   CPU TS_NS SYSTEM:EVENT PID FIELD=VALUE ...   an event (per CPU, TS_NS must not decrease)
 *   lost CPU COUNT                               the CPU's next page starts after COUNT lost events
 *   cmdline PID COMM                             a saved_cmdlines entry
 * Numbers go into number fields, anything into char[N] and __data_loc strings;
 * a value (or a cmdline's COMM) written hex:4142... is those bytes (any but NUL).
 */
#ifndef NF_TEST_TRACEDAT_WRITER_H
#define NF_TEST_TRACEDAT_WRITER_H

#include <stdbool.h>
#include <stddef.h>

struct nf_tdw_options {
	const char *version;    /* version string written, NULL: "6" */
	bool no_formats;        /* write no event formats (a broken file) */
	const char *only_system;/* store only this system's formats, NULL: all */
	unsigned int cpus;      /* CPUs, 0: the highest CPU in the list + 1 */
	/* When set, also hands over each CPU's ring-buffer pages (malloc'd, the
	 * caller frees; NULL and 0 for a CPU without events): what trace_pipe_raw
	 * would give. out_path may then be NULL (no file). */
	unsigned char **cpu_pages;
	size_t *cpu_pages_len;
	unsigned int n_cpu_pages;
	/* CPUSTAT options, one text per CPU as trace-cmd writes them ("CPU: 0\n
	 * entries: 0\noverrun: 0\n...read events: 12\n"); none when 0. */
	const char *const *cpustat;
	unsigned int n_cpustat;
};

/*
 * Writes out_path from the format directory and the event list text (see
 * nf_tdw_options.cpu_pages for the pages alone). Returns
 * 0, or -1 with a one-line reason in why (size why_len).
 */
int nf_tdw_write(const char *formats_dir, const char *events_text, const char *out_path,
		 const struct nf_tdw_options *opts, char *why, size_t why_len);

/* Reads a whole file into a malloc'd NUL-terminated buffer; NULL on failure. */
char *nf_tdw_slurp(const char *path, size_t *len);

#endif
