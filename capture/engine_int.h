/*
 * Private structures of the native fence engine (capture/engine*.c only).
 * The public contract is include/nftrace/nfence.h.
 */
#ifndef NF_ENGINE_INT_H
#define NF_ENGINE_INT_H

#include "nftrace/nfence.h"

#include <stdbool.h>
#include <stdint.h>

#define NF_MAX_ADAPTERS 16u
#define NF_MAX_HANDLES (1u << 22)

enum nf_obj_type { NF_OBJ_FREE = 0, NF_OBJ_QUEUE, NF_OBJ_LOCAL_FENCE, NF_OBJ_GLOBAL_FENCE, NF_OBJ_EVENT };

enum nf_cmd_type { NF_CMD_WAIT, NF_CMD_SIGNAL, NF_CMD_WORK };

struct nf_cmd {
	enum nf_cmd_type type;
	uint32_t local;          /* local fence handle */
	uint64_t value;
	uint64_t cost_ns;        /* WORK */
	uint64_t queued_ns;      /* true time it was queued */
	uint64_t available_ns;   /* true time the GPU can see it */
};

/* Ground truth kept beside each log slot until the entry is read or lost. */
struct nf_truth_slot {
	uint64_t queued_ns, observed_ns, end_ns, value;
	uint32_t local, op, ts_fault;
};

struct nf_log {
	uint32_t type;                 /* NF_LOG_WAITS / NF_LOG_SIGNALS */
	uint32_t epoch;
	uint32_t capacity;
	struct nf_log_header header;   /* as the GPU maintains it */
	struct nf_log_entry *entries;  /* capacity entries */
	struct nf_truth_slot *truth;   /* capacity slots */
	uint64_t written;              /* total written this epoch */
	uint64_t read_total;           /* OS's cached total (wrap*N+index) */
	uint64_t last_end_ts;          /* last non-zero end timestamp written */
	uint64_t last_read_ts;         /* last non-zero end timestamp the OS read */
	uint64_t lost, zero_read, repeated_read;
};

struct nf_queue {
	nf_handle handle;
	uint32_t adapter, node, engine;
	char name[64];
	nf_handle progress_fence;
	bool alive;
	bool native;                   /* adapter runs native fences: logs exist */
	struct nf_cmd *cmds;           /* FIFO ring */
	uint32_t cmd_head, cmd_count, cmd_cap;
	bool head_started;             /* head command is executing */
	bool head_observed;            /* head wait has been observed */
	uint64_t head_observed_ns;     /* when the GPU observed the head wait */
	uint64_t busy_until;           /* head finishes at */
	bool blocked;                  /* head wait not yet satisfied */
	bool step_scheduled;
	uint64_t step_at;
	struct nf_log logs[2];         /* [0] waits, [1] signals */
};

struct nf_cpu_waiter {
	uint32_t wait_id;
	uint32_t global;               /* index of the global fence */
	uint32_t local;
	uint32_t adapter;
	uint64_t value;
	uint32_t thread;
	nf_handle event;               /* async: event to signal, else 0 */
	bool done;
	int status;                    /* 0 satisfied, 1 timeout, 2 closed */
	uint64_t deadline_ns;
	struct nf_cpu_waiter *next;
};

struct nf_gpu_waiter {             /* a queue blocked on a fence */
	uint32_t queue;                /* queue index */
	uint64_t value;
};

struct nf_global_fence {
	nf_handle handle;
	bool alive;
	uint32_t type;
	bool shared, cross_adapter;
	uint32_t creator_adapter;
	uint64_t current;              /* CurrentValue (the OS's 64-bit view) */
	uint32_t current32;            /* what a 32-bit GPU wrote */
	uint64_t monitored[NF_MAX_ADAPTERS]; /* MonitoredValue, one copy per GPU */
	uint32_t refs;                 /* open local handles */
	uint32_t open_mask;            /* adapters with a local handle */
	struct nf_cpu_waiter *waiters; /* outstanding CPU waiters */
	struct nf_gpu_waiter *gpu_waiters;
	uint32_t n_gpu_waiters, cap_gpu_waiters;
};

struct nf_local_fence {
	nf_handle handle;
	bool alive;
	uint32_t global;               /* index into globals */
	uint32_t adapter, process;
	bool native;                   /* native fence on this adapter, else legacy monitored fence */
};

struct nf_event_obj {
	bool alive;
	bool signaled;
	struct nf_cpu_waiter *waiter;
};

struct nf_adapter {
	struct nf_adapter_desc desc;
	char name[64];
	bool native;
	bool optimized;
	bool atomics32;
	uint32_t log_entries;
	uint32_t calib_count;
	double gpu_rate;               /* GPU ticks per true ns */
};

enum nf_sim_type {
	NF_SIM_QUEUE_STEP,
	NF_SIM_INTERRUPT,
	NF_SIM_CALIBRATE,
	NF_SIM_PERIODIC_READ,
	NF_SIM_RECREATE_LOGS,
	NF_SIM_WAIT_TIMEOUT,
};

struct nf_sim_event {
	uint64_t time;
	uint64_t seq;
	enum nf_sim_type type;
	uint32_t a, b;                 /* queue / adapter / waiter ids, by type */
	uint64_t c;                    /* interrupt: signaled global fence index + 1 */
};

struct nf_handle_slot {
	uint8_t type;
	uint32_t index;
};

struct nf_runtime {
	struct nf_runtime_config cfg;
	struct nf_error err;           /* sticky: a failed sink stops the runtime */
	uint64_t now;                  /* true time, ns */
	uint32_t thread;
	uint64_t rng;
	struct nf_runtime_stats stats;
	bool finished;

	struct nf_adapter adapters[NF_MAX_ADAPTERS];
	uint32_t n_adapters;

	struct nf_handle_slot *handles;
	uint32_t n_handles, cap_handles;

	struct nf_queue *queues;
	uint32_t n_queues, cap_queues;
	struct nf_global_fence *globals;
	uint32_t n_globals, cap_globals;
	struct nf_local_fence *locals;
	uint32_t n_locals, cap_locals;
	struct nf_event_obj *events;
	uint32_t n_events, cap_events;
	uint32_t next_wait_id;

	struct nf_sim_event *heap;
	uint32_t heap_len, heap_cap;
	uint64_t heap_seq;
	uint32_t active_sims;          /* pending sim events that are not periodic */

	/* Scratch for emitting LOG_READ / interrupts. */
	struct nf_log_entry *scratch_entries;
	uint32_t scratch_cap;

	/* Owned recorder when created from the environment. */
	void *owned_writer;
};

#endif
