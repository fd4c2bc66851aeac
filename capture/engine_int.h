/*
 * Private structures of the native fence engine (capture/engine*.c only).
 * The public contract is include/nftrace/nfence.h.
 */
#ifndef NF_ENGINE_INT_H
#define NF_ENGINE_INT_H

#include "nftrace/nfence.h"
#include "runtime_owner.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define NF_MAX_ADAPTERS 16u
#define NF_MAX_HANDLES (1u << 22)

enum nf_obj_type { NF_OBJ_FREE = 0, NF_OBJ_QUEUE, NF_OBJ_LOCAL_FENCE, NF_OBJ_GLOBAL_FENCE, NF_OBJ_CPU_EVENT };

enum nf_cmd_type { NF_CMD_WAIT, NF_CMD_SIGNAL, NF_CMD_WORK };

struct nf_cmd {
	enum nf_cmd_type type;
	uint32_t local;          /* local fence handle */
	uint64_t value;
	uint64_t cost_ns;        /* WORK */
	uint64_t queued_ns;      /* true time it was queued */
	uint64_t available_ns;   /* true time the GPU can see it */
	uint32_t global;         /* its global fence index (resolved when queued) */
	bool native;             /* the local fence is native on the queue's adapter */
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
	/* OS side, optimized interrupt (OS lock): the global fences with CPU
	 * waiters named by signal entries the OS read from this queue's log
	 * since the queue's last interrupt update; unsorted, may repeat. */
	uint32_t *pend;
	uint32_t n_pend, cap_pend;

	/* Threaded mode (engine_threads.c): the queue's GPU engine thread. */
	pthread_t thread;
	bool thread_started;
	/* Commands: a single-producer (the OS lock serialises API calls),
	 * single-consumer ring of NF_TH_FIFO_MAX entries in cmds; ring_head
	 * counts commands the engine finished, ring_tail commands queued. */
	_Alignas(64) atomic_uint_fast64_t ring_head; /* written by the engine */
	_Alignas(64) atomic_uint_fast64_t ring_tail; /* written by the producer */
	uint64_t cached_head;          /* the producer's last view of ring_head */
	atomic_bool engine_sleeping;   /* the engine is (about to be) waiting on cv */
	pthread_mutex_t mu;            /* guards stop; cv's mutex */
	pthread_cond_t cv;             /* new command, stop, or new logs */
	bool stop;
	atomic_bool recreate_pending;  /* the OS asked for new log buffers */
	pthread_mutex_t log_mu;        /* the GPU writing a log entry vs the OS reading the log */
	uint64_t rng;                  /* this engine's timestamp-fault draws */
	_Alignas(64) struct nf_runtime_stats stats; /* counted by the engine thread */
	uint32_t wait_global;          /* under gpu_mu: blocked on this fence... */
	uint64_t wait_value;           /* ...reaching this value */
	pthread_cond_t gpu_cv;         /* with gpu_mu: this engine's blocked GPU wait re-checks */
};

struct nf_cpu_waiter {
	uint32_t wait_id;
	uint32_t global;               /* index of the global fence */
	uint32_t local;
	uint32_t adapter;
	uint64_t value;
	uint32_t thread;
	nf_handle cpu_event;           /* async: the CPU event to signal, else 0 */
	bool done;
	int status;                    /* 0 satisfied, 1 timeout, 2 closed */
	uint64_t deadline_ns;
	struct nf_cpu_waiter *next;
};

struct nf_gpu_waiter {             /* a queue blocked on a fence */
	uint32_t queue;                /* queue index */
	uint64_t value;
};

/*
 * CurrentValue, MonitoredValue and wait_min are C11 atomics: in threaded mode
 * the GPU engine threads write CurrentValue and read MonitoredValue without the
 * OS lock (the write-barrier-resample protocol of update_monitored).
 */
struct nf_global_fence {
	nf_handle handle;
	atomic_bool alive;
	uint32_t type;
	bool shared, cross_adapter;
	bool legacy_monitored;         /* a WDDM 2.x monitored fence: legacy on its creator adapter */
	uint32_t creator_adapter;
	_Atomic uint64_t current;      /* CurrentValue (the OS's 64-bit view), never torn */
	_Atomic uint32_t current32;    /* what a 32-bit GPU wrote */
	_Atomic uint64_t monitored[NF_MAX_ADAPTERS]; /* MonitoredValue, one copy per GPU */
	_Atomic uint64_t wait_min;     /* smallest outstanding CPU-waited value (UINT64_MAX: none) */
	atomic_uint gpu_blocked;       /* threaded: engines blocked on a GPU wait on this fence */
	uint32_t refs;                 /* open local handles */
	uint32_t open_mask;            /* adapters with a local handle */
	uint32_t native_mask;          /* adapters where a local handle is a native fence (the
	                                * others hold it as a legacy monitored fence: no
	                                * MonitoredValue, no UpdateMonitoredValues) */
	struct nf_cpu_waiter *waiters; /* outstanding CPU waiters */
	struct nf_gpu_waiter *gpu_waiters;
	uint32_t n_gpu_waiters, cap_gpu_waiters;
	/* Shareable fences: their own pages, mapped once per adapter into the
	 * system process (MapToGpuSystemProcess). */
	uint64_t sys_cur_va[NF_MAX_ADAPTERS], sys_mon_va[NF_MAX_ADAPTERS];
};

struct nf_local_fence {
	nf_handle handle;
	bool alive;
	uint32_t global;               /* index into globals */
	uint32_t adapter, process;
	bool native;                   /* native fence on this adapter, else legacy monitored fence */
	struct nf_fence_va va;         /* GPU VAs of CurrentValue / MonitoredValue for this open */
};

/* One process's GPU virtual address space on an adapter (process UINT32_MAX:
 * the system (paging) process the CMP uses), and the pages where that
 * process's nonshareable fences pack their values. */
struct nf_va_space {
	uint32_t process;
	uint64_t next_va;              /* next free page */
	uint64_t cur_page, cur_sys_page, mon_page, mon_sys_page; /* packing pages (0: none yet) */
	uint32_t cur_used, mon_used;   /* bytes used in them */
};

/* A CPU event: the wait handle nf_cpu_wait_async returns (nf_event_wait,
 * nf_event_close), not a trace event. */
struct nf_cpu_event {
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
	struct nf_va_space *va_spaces; /* one per process that opened a fence here */
	uint32_t n_va_spaces, cap_va_spaces;
};

enum nf_sim_type {
	NF_SIM_QUEUE_STEP,
	NF_SIM_INTERRUPT,
	NF_SIM_CALIBRATE,
	NF_SIM_PERIODIC_READ,
	NF_SIM_RECREATE_LOGS,
	NF_SIM_WAIT_TIMEOUT,
	NF_SIM_VBLANK,                 /* a = display index; periodic */
};

struct nf_sim_event {
	uint64_t time;
	uint64_t seq;
	enum nf_sim_type type;
	uint32_t a, b;                 /* queue / adapter / waiter ids, by type */
	uint32_t c;                    /* interrupt: the signaled global fence's index */
};

struct nf_handle_slot {
	uint8_t type;
	uint32_t index;
};

/* A flip waiting in a display's flip queue. */
struct nf_flip {
	uint64_t present;              /* the present's number on its display */
	uint64_t value;                /* the present fence value it waits for */
	uint32_t interval;             /* its sync interval */
};

#define NF_MAX_DISPLAYS 16u
#define NF_FLIPS_MAX 65536u

/* A display output with its hardware flip queue (engine_display.c). */
struct nf_display {
	uint32_t adapter;
	char name[64];
	uint32_t num, den;             /* refresh rate num/den Hz */
	uint32_t process;
	nf_handle fence;               /* the swap chain's present fence (local handle) */
	uint32_t global;               /* its global fence index */
	uint64_t start_ns;             /* created; blank k at start + k * den * 1e9 / num */
	uint64_t vblank;               /* blanks so far */
	_Atomic uint64_t next_ns;      /* when the next blank comes (threaded: read by the irq thread) */
	uint64_t presents;             /* presents so far */
	struct nf_flip *flips;         /* FIFO ring of waiting flips */
	uint32_t head, n, cap;
	uint64_t shown;                /* present on screen (0: none yet) */
	uint64_t shown_vblank;         /* the blank it was shown at */
	uint32_t shown_interval;       /* its sync interval */
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
	struct nf_cpu_event *cpu_events;  /* nf_cpu_wait_async's wait handles */
	uint32_t n_cpu_events, cap_cpu_events;
	uint32_t next_wait_id;

	struct nf_sim_event *heap;     /* pending sim events (engine_sim.c: nf_eng_sim_push) */
	uint32_t heap_len, heap_cap;
	uint32_t heap_head;            /* sorted: index of the next event */
	uint64_t heap_seq;
	bool heap_is_heap;             /* false: sorted, earliest first; true: a 4-ary heap */
	uint32_t active_sims;          /* pending sim events that are not periodic */

	/* Scratch for emitting LOG_READ / interrupts. */
	struct nf_log_entry *scratch_entries;
	uint32_t scratch_cap;

	/* What the runtime's creator handed it to close at the end (the
	 * session of a runtime created from the environment: runtime_env.c). */
	struct nf_runtime_owner owner;

	bool threaded;                 /* NF_MODE_THREADED */
	struct nf_threads *th;         /* threaded mode state (engine_threads.c) */
	struct nf_truth_slot *scratch_truth; /* scratch_cap slots */

	struct nf_display displays[NF_MAX_DISPLAYS];
	uint32_t n_displays;           /* displays are never destroyed */

	/* Fork detection (engine_fork.c): the process generation it was made in. */
	unsigned fork_gen;
	int pid;
};

/* Fork detection (engine_fork.c): a runtime belongs to the process that
 * created it. nf_fork_watch() notes that process (pthread_atfork counts the
 * forks, so the check costs a load, not a getpid()); nf_fork_check() returns
 * 0, or NF_ESTATE with one clear line in a forked child (and tells the
 * runtime's owner once: `nftrace record`, on its status pipe). */
void nf_fork_watch(struct nf_runtime *rt);
int nf_fork_check(const struct nf_runtime *rt, struct nf_error *err);

/* ------------------------------------------------------------------ */
/* Shared between engine*.c (the rules) and engine_threads.c (threaded mode). */

/* Threaded mode limits: object arrays are allocated once, so the engine threads
 * can hold pointers into them while the API creates more. */
#define NF_TH_MAX_QUEUES 256u
#define NF_TH_MAX_GLOBALS 65536u

/* Internal to libnfence: hidden, so calls between its files are direct, not
 * through the PLT. */
#pragma GCC visibility push(hidden)

/* engine*.c: rules the threads run. Callers hold the OS lock unless noted. */
/* GPU engine thread, no OS lock: executes a signal (native: write value, log
 * entry, conditional interrupt; legacy: takes the OS lock itself). */
int nf_eng_exec_signal(struct nf_runtime *rt, struct nf_queue *q, const struct nf_cmd *c);
/* GPU engine thread, no OS lock: a wait at the head of q was satisfied. */
int nf_eng_wait_done(struct nf_runtime *rt, struct nf_queue *q, const struct nf_cmd *c,
		     uint64_t observed_ns);
/* No lock needed: would a GPU wait on adapter for value on g pass now? */
bool nf_eng_gpu_wait_passes(const struct nf_runtime *rt, uint32_t adapter, uint32_t gi,
			    uint64_t value);
int nf_eng_handle_interrupt(struct nf_runtime *rt, uint32_t qi, uint32_t gi);
int nf_eng_calibrate_all(struct nf_runtime *rt);
int nf_eng_read_all_logs(struct nf_runtime *rt);
/* Called by q's own engine thread, with the OS lock held. */
int nf_eng_recreate_logs(struct nf_runtime *rt, struct nf_queue *q);
int nf_eng_sink_failed(struct nf_runtime *rt);

/* engine_threads.c */
/* Set in each GPU engine thread to its queue's statistics block. */
extern _Thread_local struct nf_runtime_stats *nf_th_engine_stats
	__attribute__((tls_model("initial-exec")));
uint64_t nf_th_now(const struct nf_runtime *rt);       /* ns since the runtime started */
uint32_t nf_th_thread_id(void);                        /* this CPU thread's id for events */
void nf_th_set_thread_id(uint32_t id);
int nf_th_start(struct nf_runtime *rt, struct nf_error *err);
void nf_th_stop(struct nf_runtime *rt);                /* joins every thread */
void nf_th_free(struct nf_runtime *rt);
int nf_th_queue_start(struct nf_runtime *rt, struct nf_queue *q, struct nf_error *err);
void nf_th_queue_stop(struct nf_runtime *rt, struct nf_queue *q);
#define NF_TH_FIFO_MAX 65536u                          /* a power of two */
int nf_th_queue_push(struct nf_runtime *rt, struct nf_queue *q, const struct nf_cmd *c,
		     struct nf_error *err);             /* OS lock held */
uint64_t nf_th_queue_pending(struct nf_queue *q);      /* queued, not yet finished */
/* The OS lock and a queue's log lock: no-ops when deterministic (inline, so
 * that costs a test, not a call); the threaded halves are in engine_threads.c. */
void nf_th_lock_threaded(struct nf_runtime *rt);
void nf_th_unlock_threaded(struct nf_runtime *rt);
void nf_th_log_lock_threaded(struct nf_queue *q);
void nf_th_log_unlock_threaded(struct nf_queue *q);
static inline void nf_th_lock(struct nf_runtime *rt)
{
	if (rt && rt->threaded)
		nf_th_lock_threaded(rt);
}
static inline void nf_th_unlock(struct nf_runtime *rt)
{
	if (rt && rt->threaded)
		nf_th_unlock_threaded(rt);
}
static inline void nf_th_log_lock(struct nf_runtime *rt, struct nf_queue *q)
{
	if (rt->threaded)
		nf_th_log_lock_threaded(q);
}
static inline void nf_th_log_unlock(struct nf_runtime *rt, struct nf_queue *q)
{
	if (rt->threaded)
		nf_th_log_unlock_threaded(q);
}
void nf_th_gpu_notify(struct nf_runtime *rt, uint32_t gi); /* fence gi changed in memory */
void nf_th_raise_interrupt(struct nf_runtime *rt, uint32_t qi, uint32_t gi);
void nf_th_cpu_wake(struct nf_runtime *rt);            /* CPU waiters re-check (OS lock held) */
/* Blocks the calling CPU thread on the OS lock's condition until woken or
 * deadline (ns since start, UINT64_MAX: none). Returns false at the deadline. */
bool nf_th_cpu_block(struct nf_runtime *rt, uint64_t deadline);
/* The caller's interrupt flag is set, or the runtime is being destroyed: CPU
 * waits give up with NF_EINTR (OS lock held). */
bool nf_th_interrupted(const struct nf_runtime *rt);
void nf_th_release_waiters(struct nf_runtime *rt);     /* OS lock not held */
/* Threaded advance: sleeps ns, NF_EINTR early when the interrupt flag is set. */
int nf_th_advance(struct nf_runtime *rt, uint64_t ns);
int nf_th_quiesce(struct nf_runtime *rt);              /* OS lock not held; NF_EINTR */
void nf_th_sleep(uint64_t ns);
void nf_th_request_recreate(struct nf_runtime *rt);   /* OS lock held */

/* ---- shared between the engine's files (engine*.c), split from engine.c ---- */

#define NF_HANDLE_BASE 0x40000000u
#define NF_HANDLE_STEP 0x40u
#define NF_QUEUE_CAP_MAX (1u << 16)

/*
 * Statistics. Deterministic, and threaded under the OS lock: rt->stats. A GPU
 * engine thread counts into its own queue's block (single writer, relaxed
 * stores, so nf_runtime_get_stats can read it while it runs, and no cache line
 * is shared with the API threads).
 */
#define STAT(rt, f)                                                                   \
	do {                                                                          \
		struct nf_runtime_stats *s_ = nf_th_engine_stats;                     \
		if (s_)                                                               \
			__atomic_store_n(&s_->f, s_->f + 1, __ATOMIC_RELAXED);        \
		else                                                                  \
			(rt)->stats.f++;                                              \
	} while (0)

/* engine_sim.c: a zero event that EV_INIT copies (see there). */
extern const struct nf_event nf_eng_ev_zero;
#define EV_INIT(ev, ID) do { (ev) = nf_eng_ev_zero; (ev).id = NF_EV_##ID; } while (0)

/* engine_sim.c */
uint64_t nf_eng_rng_next(struct nf_runtime *rt);
double nf_eng_rng_unit(uint64_t *state);
int nf_eng_grow_to(void **arr, uint32_t *cap, uint32_t need, size_t elem);
static inline int nf_eng_grow(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
	return __builtin_expect(need <= *cap, 1) ? 0 : nf_eng_grow_to(arr, cap, need, elem);
}
uint64_t nf_eng_gpu_ticks(const struct nf_adapter *a, uint64_t t_ns);
int nf_eng_emit_at(struct nf_runtime *rt, struct nf_event *ev, uint64_t t);
int nf_eng_emit(struct nf_runtime *rt, struct nf_event *ev);
int nf_eng_handle_new(struct nf_runtime *rt, uint8_t type, uint32_t index, nf_handle *out);
int nf_eng_handle_lookup(const struct nf_runtime *rt, nf_handle h, uint8_t type, uint32_t *index);
struct nf_queue *nf_eng_queue_get(nf_runtime *rt, nf_handle h, struct nf_error *err);
struct nf_local_fence *nf_eng_local_get(nf_runtime *rt, nf_handle h, struct nf_error *err);
int nf_eng_sim_push(struct nf_runtime *rt, uint64_t time, enum nf_sim_type type, uint32_t a,
		    uint32_t b, uint32_t c);
struct nf_sim_event nf_eng_sim_pop(struct nf_runtime *rt);
int nf_eng_queue_schedule(struct nf_runtime *rt, struct nf_queue *q, uint64_t at);

/* engine_fence.c */
bool nf_eng_value_reached(const struct nf_adapter *a, const struct nf_global_fence *g,
			  uint64_t value);
void nf_eng_fence_write(struct nf_runtime *rt, struct nf_global_fence *g, uint32_t adapter,
			uint64_t value);
int nf_eng_check_window(struct nf_runtime *rt, const struct nf_global_fence *g, uint32_t adapter,
			uint64_t value, struct nf_error *err);
int nf_eng_satisfy_cpu_waiters(struct nf_runtime *rt, struct nf_global_fence *g, uint32_t *woken);
int nf_eng_update_monitored(struct nf_runtime *rt, struct nf_global_fence *g, uint32_t *woken);

/* engine_log.c */
struct nf_log *nf_eng_queue_log(struct nf_queue *q, uint32_t type);
int nf_eng_log_alloc(struct nf_log *lg, uint32_t type, uint32_t capacity);
int nf_eng_emit_set_log(struct nf_runtime *rt, struct nf_queue *q, struct nf_log *lg);
int nf_eng_log_write(struct nf_runtime *rt, struct nf_queue *q, struct nf_log *lg,
		     const struct nf_cmd *c, uint64_t observed_ns, uint64_t end_ns);
int nf_eng_u32_cmp(const void *x, const void *y);
int nf_eng_queue_read_logs(struct nf_runtime *rt, struct nf_queue *q, uint64_t *lost);
int nf_eng_emit_truth_log(struct nf_runtime *rt, struct nf_queue *q, struct nf_log *lg);
int nf_eng_queue_recreate_logs(struct nf_runtime *rt, struct nf_queue *q);

/* engine_irq.c */
bool nf_eng_fence_has_cpu_need(const struct nf_global_fence *g, uint64_t value);
int nf_eng_propagate_cross_adapter(struct nf_runtime *rt, struct nf_global_fence *g,
				   uint32_t from_adapter);
int nf_eng_overrun_fallback(struct nf_runtime *rt, uint32_t adapter, uint64_t lost);

/* engine_exec.c */
int nf_eng_wake_gpu_waiters(struct nf_runtime *rt, struct nf_global_fence *g, uint32_t adapter);
int nf_eng_calibrate(struct nf_runtime *rt, uint32_t ai);
int nf_eng_read_logs_now(struct nf_runtime *rt);
int nf_eng_sim_dispatch(struct nf_runtime *rt, const struct nf_sim_event *se);
bool nf_eng_sim_interrupted(const struct nf_runtime *rt, uint32_t *n);
int nf_eng_sim_run_until(struct nf_runtime *rt, uint64_t until);
bool nf_eng_sim_step(struct nf_runtime *rt, int *rc);

/* engine_objects.c */
int nf_eng_api_adapter_create(nf_runtime *rt, const struct nf_adapter_desc *desc, uint32_t *adapter_out,
		      struct nf_error *err);
int nf_eng_api_hwqueue_create(nf_runtime *rt, uint32_t adapter, uint32_t node, uint32_t engine,
		      const char *name, nf_handle *queue_out, struct nf_error *err);
int nf_eng_api_hwqueue_destroy(nf_runtime *rt, nf_handle queue, struct nf_error *err);
int nf_eng_api_hwqueue_progress_fence(nf_runtime *rt, nf_handle queue, nf_handle *fence_out,
			      struct nf_error *err);
int nf_eng_api_fence_create(nf_runtime *rt, uint32_t adapter, const struct nf_fence_desc *desc,
			    bool legacy_monitored, nf_handle *local_out, struct nf_error *err);
int nf_eng_api_fence_global_handle(nf_runtime *rt, nf_handle local, nf_handle *global_out,
			   struct nf_error *err);
int nf_eng_api_fence_open(nf_runtime *rt, uint32_t adapter, uint32_t process, nf_handle global,
		  nf_handle *local_out, struct nf_error *err);
int nf_eng_api_fence_close(nf_runtime *rt, nf_handle local, struct nf_error *err);
int nf_eng_api_fence_gpu_va(nf_runtime *rt, nf_handle local, struct nf_fence_va *out,
			    struct nf_error *err);
int nf_eng_api_fence_read(nf_runtime *rt, nf_handle local, uint64_t *current, uint64_t *monitored,
		  struct nf_error *err);

/* engine_work.c */
int nf_eng_api_queue_wait(nf_runtime *rt, nf_handle queue, nf_handle fence, uint64_t value,
		  struct nf_error *err);
int nf_eng_api_queue_signal(nf_runtime *rt, nf_handle queue, nf_handle fence, uint64_t value,
		    struct nf_error *err);
int nf_eng_api_queue_work(nf_runtime *rt, nf_handle queue, uint64_t gpu_ns, struct nf_error *err);
int nf_eng_emit_unwait(nf_runtime *rt, const struct nf_cpu_waiter *w, uint64_t current);
int nf_eng_wait_timeout(struct nf_runtime *rt, uint32_t gi, uint32_t wait_id);
int nf_eng_api_cpu_wait(nf_runtime *rt, nf_handle fence, uint64_t value, uint64_t timeout_ns,
		struct nf_error *err);
int nf_eng_api_cpu_wait_async(nf_runtime *rt, nf_handle fence, uint64_t value, nf_handle *event_out,
		      struct nf_error *err);
int nf_eng_api_event_wait(nf_runtime *rt, nf_handle event, uint64_t timeout_ns, struct nf_error *err);
int nf_eng_api_event_close(nf_runtime *rt, nf_handle event, struct nf_error *err);
int nf_eng_api_cpu_signal(nf_runtime *rt, nf_handle fence, uint64_t value, struct nf_error *err);

/* engine.c */
int nf_eng_check_rt(nf_runtime *rt, struct nf_error *err);
int nf_eng_fail(nf_runtime *rt, int rc, struct nf_error *err);

/* engine_display.c: the vertical blank of display d now (OS lock held):
 * the flip queue, DisplayFlip and VSyncDPC events; schedules the next one in
 * deterministic mode. */
int nf_eng_vblank(struct nf_runtime *rt, uint32_t d);
/* The earliest next blank over every display, UINT64_MAX when none (no lock:
 * the irq thread's timer reads it). */
uint64_t nf_eng_next_vblank(const struct nf_runtime *rt);
int nf_eng_api_display_create(nf_runtime *rt, uint32_t adapter, const struct nf_display_desc *desc,
			      uint32_t *display_out, struct nf_error *err);
int nf_eng_api_present(nf_runtime *rt, nf_handle queue, uint32_t display, uint32_t sync_interval,
		       uint64_t *present_id_out, struct nf_error *err);
void nf_eng_displays_free(struct nf_runtime *rt);
/* engine_threads.c: wake the irq thread's timer (a display was created). */
void nf_th_timer_changed(struct nf_runtime *rt);

/* Small helpers every file inlines (engine_sim.c's utilities). */
/* The true time now: virtual (deterministic) or CLOCK_MONOTONIC since start. */
static inline uint64_t now_ns(const struct nf_runtime *rt)
{
	return rt->threaded ? nf_th_now(rt) : rt->now;
}

/* The CPU thread events name: set by nf_runtime_set_thread (per thread when threaded). */
static inline uint32_t cur_thread(const struct nf_runtime *rt)
{
	return rt->threaded ? nf_th_thread_id() : rt->thread;
}

static inline uint64_t cpu_ticks(const struct nf_runtime *rt, uint64_t t_ns)
{
	uint64_t f = rt->cfg.cpu_frequency;

	return rt->cfg.cpu_start_ticks + (t_ns / 1000000000ull) * f +
	       (t_ns % 1000000000ull) * f / 1000000000ull;
}

/* The next event (the queue is not empty). */
static inline const struct nf_sim_event *sim_top(const struct nf_runtime *rt)
{
	return &rt->heap[rt->heap_head];
}


#pragma GCC visibility pop

#endif
