/*
 * The rule that ties each wait to the signal that released it (the deps
 * table), stated once and applied by timeline/deps.c for every importer.
 *
 * A wait of fence F for value V that ended at E was released by the first
 * signal of F, in end order, to reach a value at or above V: GPU signals and
 * CPU signals alike (a CPU signal first when two end together), since a
 * fence's value only grows. None was needed when F's initial value already
 * reached V. What each source's files can show differs, so the rule has one
 * mode per kind of evidence:
 *
 * - NF_DEPS_LOGGED (native fence log entries, nftrace's sessions): GPU times
 *   come through the clock merge, so the releaser ends no later than E
 *   within slack_ns. When the first signal to reach V ends later, a signal
 *   of F whose end is unknown (its entry lost, a zero timestamp) may have
 *   been the releaser: the one of lowest value at or above V queued by
 *   E + slack is named instead; with none, no releaser is named and the row
 *   says the first one ended too late (a causality anomaly).
 * - NF_DEPS_PACKETS (Windows ETW queue packets): the OS logs a signal
 *   packet's completion after it unwaited the waits that signal released,
 *   so the releaser may end after E; the releaser is the signal of the
 *   smallest value at or above V (the earliest end among equals; with values
 *   that only grow, the first to reach V), and a CPU signal chosen the same
 *   way when it came before that GPU signal. Signals of unknown end are not
 *   candidates (an aborted packet released nothing); the importer passes a
 *   multi-context signal's last packet only.
 * - NF_DEPS_ONE_SHOT (Linux dma_fence): each value (seqno) of a context is a
 *   fence of its own, signaled once: the wait is released by the signal of
 *   exactly V when it ended no later than E; else the wait ended without it
 *   (a timeout, when that signal is in the file).
 *
 * A wait with no releaser says why (nf_deps_row.reason; the deps table's
 * reason column).
 *
 * Memory is bounded: records beyond a budget are sorted through temporary
 * files in spill_dir.
 */
#ifndef NF_CONTRACT_DEPS_H
#define NF_CONTRACT_DEPS_H

#include <stdbool.h>
#include <stdint.h>

#include "contract/errors.h"

enum nf_deps_mode { NF_DEPS_LOGGED, NF_DEPS_PACKETS, NF_DEPS_ONE_SHOT };

/* A signal: a GPU operation (fence_ops id) or a CPU signal (cpu_signals id). */
struct nf_deps_signal {
	int64_t fence, value, id;
	bool cpu;          /* a cpu_signals row */
	bool end_known;    /* end below is known */
	int64_t end;
	bool queued_known; /* queued below is known (unknown-end GPU signals, NF_DEPS_LOGGED) */
	int64_t queued;
};

/* A wait that ended. */
struct nf_deps_wait {
	int64_t id;        /* fence_ops id */
	bool has_fence;    /* fence below is known (an unknown handle: no releaser) */
	int64_t fence, value, end;
	int64_t queue;     /* for the causality anomaly */
	bool has_stall;
	int64_t stall;     /* the deps row's stall_ns */
};

/* One deps row: what released the wait. */
struct nf_deps_row {
	int64_t wait_id;
	int64_t signal_id;  /* fence_ops id of the releasing GPU signal, 0 none */
	int64_t cpu_id;     /* cpu_signals id of the releasing CPU signal, 0 none */
	bool has_stall;
	int64_t stall;
	/* NF_DEPS_LOGGED: the first signal to reach the value ended past E +
	 * slack and no unknown-end signal could have released the wait. */
	bool late;
	bool late_cpu;      /* ... that signal was a CPU signal */
	int64_t late_id, late_end;
	int64_t fence, value, end, queue; /* the wait's, for the anomaly's text */
	/* Why no releaser is named (NULL when one is): "unknown_fence",
	 * "initial_value", "causality" (late above), "timeout" (NF_DEPS_ONE_SHOT:
	 * its signal ended after the wait), "no_signal" (no signal in the file
	 * reaches the value: nf_writer_deps_reasons says why). A static string. */
	const char *reason;
};

struct nf_deps;

/* Creates a resolver. spill_dir: where records beyond the memory budget go
 * (NULL or "": the system's temporary directory). Returns NULL with err
 * filled (NF_ENOMEM, NF_EIO). */
struct nf_deps *nf_deps_create(enum nf_deps_mode mode, const char *spill_dir, double slack_ns,
			       struct nf_error *err);

/* F's initial value (the first creation's). Returns 0 or NF_ENOMEM. */
int nf_deps_initial(struct nf_deps *d, int64_t fence, int64_t value, struct nf_error *err);
/* Adds a signal, a wait. Return 0, NF_EIO or NF_ENOMEM. */
int nf_deps_signal(struct nf_deps *d, const struct nf_deps_signal *s, struct nf_error *err);
int nf_deps_wait(struct nf_deps *d, const struct nf_deps_wait *w, struct nf_error *err);

/*
 * Sorts what was added: nf_deps_sort_begin starts sorting the signals on a
 * thread (or sorts them here when none can start) so that the caller can do
 * other work meanwhile; nf_deps_sort_end sorts the waits and joins. Both
 * return 0, NF_EIO or NF_ENOMEM (end: also the thread's error).
 */
int nf_deps_sort_begin(struct nf_deps *d, struct nf_error *err);
int nf_deps_sort_end(struct nf_deps *d, struct nf_error *err);

/* The next row (one per wait added), waits in (fence, value, id) order: 1
 * (*row set), 0 at the end, or NF_EIO. Call after nf_deps_sort_end. */
int nf_deps_next(struct nf_deps *d, struct nf_deps_row *row, struct nf_error *err);

/* Frees; NULL is a no-op. */
void nf_deps_destroy(struct nf_deps *d);

/*
 * NF_DEPS_ONE_SHOT for one wait whose fence the caller found by its exact key
 * (a dma_fence's context and seqno): true when its signal released the wait
 * (the wait ended, the fence signaled, no later than the wait's end), false
 * when the wait timed out, was interrupted or is still open.
 */
bool nf_deps_one_shot_released(bool wait_ended, int64_t wait_end, bool signaled, int64_t signal_end);

/* Why such a wait that ended has no releaser: NULL when released, "timeout"
 * (its signal is in the file, after the wait's end), "no_signal". */
const char *nf_deps_one_shot_reason(int64_t wait_end, bool signaled, int64_t signal_end);

#endif
