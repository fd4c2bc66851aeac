/*
 * nfence: the nftrace native GPU fence runtime.
 *
 * A program links libnfence and gets the whole native-fence engine of the
 * WDDM 3.2 design (Microsoft's driver documentation, "Native GPU fence
 * object"): adapters with their capabilities, hardware queues with native
 * progress fences, native and legacy monitored fences with CurrentValue /
 * MonitoredValue, GPU and CPU waits and signals, the conditional
 * native-fence-signaled interrupt, cross-adapter propagation, and the
 * per-queue wait and signal log buffers laid out as the real OS lays them out.
 * It plays the OS (Dxgkrnl/VidSch), the driver, the GPU engines and the CMP,
 * and emits ETW-like events (schemas/events.def) to a sink.
 *
 * Calls are in the spirit of D3DKMT: handles in, error code out. Every call
 * validates its arguments: a bad handle returns NF_EINVAL with a message in
 * err, never a crash. Times are nanoseconds.
 *
 * What every function below that returns int has in common (each one's own
 * comment adds its codes):
 *   - It returns 0 or a negative NF_E* code (include/nftrace/error.h) and then
 *     fills err, when err is not NULL, with one line (first error wins: clear
 *     err with nf_error_clear() before reusing it). Outputs are written only
 *     on success.
 *   - NF_EINVAL: rt is NULL, a handle is not one of this runtime's (or names
 *     an object of another kind, or one already destroyed), a required
 *     pointer is NULL.
 *   - A runtime whose sink failed keeps that failure: its event sink's
 *     emit returned an error (the recorder: NF_EIO, disk full), and from then
 *     on every call that changes the runtime returns that first code and
 *     message ("event sink failed (...)"). Only close/destroy remain useful.
 *   - NF_ESTATE after nf_runtime_finish() ("runtime already finished") from
 *     every call that changes the runtime; the queries (nf_fence_read,
 *     nf_fence_gpu_va, nf_fence_global_handle, nf_hwqueue_progress_fence,
 *     nf_runtime_now_ns, nf_runtime_get_stats) still answer.
 *   - NF_ESTATE in a process forked after the runtime was created: a runtime
 *     belongs to the process that created it; the child must create its own.
 * Ownership: the runtime copies what the config and descriptors point to
 * (names included) or uses them only during the call; handles are the
 * runtime's and die with it. Nothing a call returns needs to be freed,
 * except the runtime itself (nf_runtime_close or nf_runtime_destroy).
 * Threads: in NF_MODE_DETERMINISTIC a runtime is used by one thread at a
 * time (the caller's, which also runs the simulated GPU inside the calls); in
 * NF_MODE_THREADED every call may come from any thread at any time, except
 * nf_runtime_close/destroy, which must be the last call (no other thread
 * still inside a call but a CPU wait, which then returns NF_EINTR).
 *
 * Modes: NF_MODE_DETERMINISTIC runs on virtual time with a seed and no threads
 * (same inputs, same events, byte for byte); NF_MODE_THREADED runs a GPU engine
 * thread per hardware queue and a CMP/interrupt thread, with CPU waits that
 * block the calling thread and times from CLOCK_MONOTONIC (docs/ARCHITECTURE.md,
 * "The engine"). Every call is thread-safe in threaded mode.
 *
 * Terms: an "event" is a trace record (struct nf_event, schemas/events.def)
 * that the runtime emits to its sink, except in nf_cpu_wait_async,
 * nf_event_wait and nf_event_close, where it is a CPU wait handle: like the
 * Win32 event object D3DKMT signals when a CPU wait is satisfied, a handle
 * the caller waits on and closes (the engine calls it a CPU event).
 * nf_clock_model is the simulated GPU clock of an adapter (frequency, offset,
 * drift, jitter); the analyzer's fit of recorded clocks is another thing
 * (nf_clock_fitted, analyzer/builder.h).
 */
#ifndef NFTRACE_NFENCE_H
#define NFTRACE_NFENCE_H

#include <stdbool.h>
#include <stdint.h>

#include "nftrace/error.h"
#include "nftrace/events.h"
#include "nftrace/visibility.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nf_runtime nf_runtime;
typedef uint32_t nf_handle;             /* D3DKMT_HANDLE-like; 0 is never valid */
#define NF_NULL_HANDLE 0u
#define NF_NO_TIMEOUT UINT64_MAX

enum nf_mode { NF_MODE_DETERMINISTIC = 0, NF_MODE_THREADED = 1 };

/* DXGK_VIDSCHCAPS bits (real positions). */
#define NF_VIDSCH_NO64BIT_ATOMICS (1u << 5)
#define NF_VIDSCH_NATIVE_GPU_FENCE (1u << 11)
#define NF_VIDSCH_OPTIMIZED_NATIVE_FENCE_SIGNALED_INTERRUPT (1u << 12)
/* DXGK_NATIVE_FENCE_CAPS bits. */
#define NF_NATIVE_FENCE_CAP_MAP_TO_GPU_SYSTEM_PROCESS (1u << 0)
#define NF_MONITORED_VALUE_STRIDE_MAX 56u

/* D3DDDI_NATIVEFENCE_TYPE */
enum { NF_FENCE_TYPE_DEFAULT = 0, NF_FENCE_TYPE_INTRA_GPU = 1 };
/* DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED */
#define NF_INTERRUPT_NATIVE_FENCE_SIGNALED 19u
/* UpdateCurrentValuesFromCpu flags */
#define NF_UPDATE_ALWAYS_SIGNALED (1u << 0)
#define NF_UPDATE_NOTIFICATION_ONLY (1u << 1)

/* A clock: reading(true_ns) = offset + true_ns * frequency * (1 + drift_ppm/1e6) / 1e9. */
struct nf_clock_model {
	uint64_t frequency;   /* ticks per second */
	uint64_t offset;      /* ticks at session time 0 */
	double drift_ppm;     /* rate error against the CPU clock */
	uint64_t jitter_ns;   /* calibration reads are off by up to this much (uniform) */
};

/* What a non-optimized GPU puts in its native-fence-signaled interrupt. */
enum nf_interrupt_payload {
	NF_IRQ_FENCE_ARRAY = 0,         /* the signaled fences with CPU waiters */
	NF_IRQ_NULL_ARRAY = 1,          /* NULL array: the OS scans all native waiters */
	NF_IRQ_NULL_ARRAY_LEGACY = 2,   /* NULL array + EvaluateLegacyMonitoredFences */
	NF_IRQ_OPTIMIZED_NULL_QUEUE = 3,/* optimized cap, but the GPU names no queue: scan the engine */
};

struct nf_adapter_desc {
	const char *name;
	uint32_t vidsch_caps;            /* NF_VIDSCH_* */
	uint32_t native_fence_caps;      /* NF_NATIVE_FENCE_CAP_* */
	uint32_t monitored_value_stride; /* bytes, <= 56 */
	struct nf_clock_model gpu_clock;
	enum nf_interrupt_payload interrupt_payload;
	uint64_t signal_cost_ns;         /* GPU time to execute a signal */
	uint64_t wait_cost_ns;           /* GPU time from a satisfied wait to the next command */
	uint64_t interrupt_latency_ns;   /* interrupt raised -> handled by the OS */
	uint64_t submit_latency_ns;      /* queued on the CPU -> visible to the GPU */
	double zero_ts_rate;             /* probability a log entry gets a zero timestamp (LDA skip) */
	double repeat_ts_rate;           /* probability a log entry repeats the previous timestamp */
	uint32_t log_entries;            /* entries per log, 0: the OS default (64); tracing raises it
	                                  * to tracing_log_entries (nf_log_entries_effective) */
};

struct nf_runtime_config {
	enum nf_mode mode;
	uint64_t seed;
	uint64_t cpu_frequency;          /* CPU (QPC-like) ticks per second, default 10 MHz */
	uint64_t cpu_start_ticks;        /* CPU clock value at session time 0 */
	bool os_native_fence_enabled;    /* DXGK_FEATURE_NATIVE_FENCE, default on */
	/* DXGKARGCB_FEATURE_NATIVEFENCE_CAPS_1: fence types the OS supports. Both
	 * off by default, as in Windows 11 24H2 ("not currently supported by the OS"). */
	bool os_support_intra_gpu_fence_type;         /* SupportIntraGpuFenceType */
	bool os_support_optimized_default_fence_type; /* SupportOptimizedDefaultFenceType */
	bool tracing;                    /* tracing on: the OS enlarges smaller logs to tracing_log_entries */
	uint32_t tracing_log_entries;    /* default 256 */
	uint64_t log_read_interval_ns;   /* the OS also reads every log this often; 0: only on interrupts and at the end */
	uint64_t calibration_interval_ns;/* default 10 ms; at most 30 ms */
	uint64_t log_recreate_interval_ns; /* destroy and recreate every log this often; 0: never */
	bool ground_truth;               /* emit TruthOp / TruthLog events */
	uint64_t max_operations;         /* refuse more queued operations than this (0: no limit) */
	struct nf_event_sink sink;       /* where events go; emit may be NULL (no recording); which
	                                  * thread calls emit, and under which lock: events.h */
	/* Optional flag a signal handler sets (another thread sets it with an
	 * atomic store, e.g. __atomic_store_n): once non-zero, threaded advances,
	 * CPU waits and the final drain return NF_EINTR (polled every 20 ms; read
	 * with an atomic load). */
	volatile int *interrupt;
};

/* Fill cfg (or desc) with the defaults: deterministic mode, seed 1, a 10 MHz
 * CPU clock from 0, the OS native fence feature on, tracing off (256 entries
 * when on), a log read every 1 ms, a 10 ms calibration interval, no sink (no
 * recording); an adapter "GPU" with native fences, a stride of 8, a
 * 19.2 MHz GPU clock, the fence-array interrupt payload and small GPU costs.
 * Neither fails; the pointer must not be NULL (it is written through, as by
 * memset). Thread-safe: they touch only *cfg / *desc. */
NF_API void nf_runtime_config_init(struct nf_runtime_config *cfg);
NF_API void nf_adapter_desc_init(struct nf_adapter_desc *desc);

/*
 * Entries per log buffer on an adapter whose desc asks for log_entries: that
 * many (0: NF_LOG_DEFAULT_ENTRIES, the 64 of the 24H2 scheduler) while tracing
 * is off. "When tracing is enabled, the OS first increases the size of the log
 * buffer to prevent overruns": with cfg->tracing the size is raised to
 * tracing_log_entries (0: 256) and never lowered, i.e. the larger of the two.
 * SetNativeFenceLogBuffer's capacity in a session is this value. A pure
 * function of its arguments (cfg must not be NULL); thread-safe.
 */
NF_API uint32_t nf_log_entries_effective(const struct nf_runtime_config *cfg, uint32_t log_entries);

/*
 * Creates a runtime from cfg (copied; cfg->sink.ctx and cfg->interrupt are
 * borrowed: they must outlive the runtime). In threaded mode it starts the
 * CMP/interrupt thread here. *out is set on success and NULL on failure.
 * Returns 0; NF_EINVAL for a NULL out or cfg, an unknown mode, a CPU
 * frequency of 0 or above 10 GHz, or a calibration interval outside
 * 1 ns..30 ms; NF_ENOMEM when memory or a thread cannot be had. The caller
 * owns the runtime and ends it with nf_runtime_close() or
 * nf_runtime_destroy().
 */
NF_API int nf_runtime_create(const struct nf_runtime_config *cfg, nf_runtime **out, struct nf_error *err);

/*
 * Drains the runtime: lets every queue run until it is idle or blocked for good,
 * does the OS's last read of every log, emits the ground-truth summaries and the
 * stop events. Call it once, before close/destroy, to end a recording cleanly
 * (close/destroy of a runtime created from the environment call it when the
 * program did not). Returns 0; the sink's error (then some stop events may be
 * missing); NF_EINTR when cfg->interrupt was set while the queues drained (the
 * runtime is not finished then: calling again resumes the drain); NF_ESTATE
 * ("runtime already finished") on any call after one that returned 0, and
 * nothing is emitted then; a runtime whose sink failed returns that failure
 * again instead (tests/capture/test_runtime_end.c). After it, the runtime
 * refuses changes (see above). Threaded: takes the OS lock; other threads'
 * calls wait for it and are refused with NF_ESTATE once it is done.
 */
NF_API int nf_runtime_finish(nf_runtime *rt, struct nf_error *err);

/*
 * Ends the runtime and frees everything it owns; rt is invalid afterwards
 * whatever the result. A thread still blocked in a CPU wait or an event wait
 * returns NF_EINTR first. A runtime created from the environment
 * (nf_runtime_create_from_env with NFTRACE_RECORD_DIR) is finished here if
 * the program did not finish it (and it did not fail), and its session is
 * closed. nf_runtime_close returns how that went: 0; the runtime's own first
 * error (its sink's, or the final nf_runtime_finish's); the session's close
 * error (NF_EIO: a packet could not be written, disk full or a file size
 * limit; the message names the file); NF_ESTATE in a process forked after
 * creation (that process's copy is freed, nothing is written: the session
 * stays the parent's). nf_runtime_destroy is the same without the result
 * (`nftrace record -- PROGRAM` still learns a session's failure through its
 * status pipe). NULL: returns 0, a no-op. Must be the runtime's last call.
 */
NF_API void nf_runtime_destroy(nf_runtime *rt);
NF_API int nf_runtime_close(nf_runtime *rt, struct nf_error *err);

/*
 * If NFTRACE_RECORD_DIR is set (nftrace record -- PROGRAM), creates a runtime
 * that records into it: the session directory is created, the CTF writer is
 * the sink (cfg->sink is replaced), NFTRACE_SEED, NFTRACE_MODE (deterministic
 * or threaded) and NFTRACE_GROUND_TRUTH (0 or 1) override cfg, NFTRACE_SOURCE
 * names the source in the session; close/destroy closes the session.
 * Otherwise behaves exactly like nf_runtime_create with cfg. Returns what
 * nf_runtime_create returns, and NF_EINVAL (no session created) when
 * NFTRACE_SEED is not a decimal number of 64 bits, NFTRACE_GROUND_TRUTH not 0
 * or 1, or NFTRACE_MODE not deterministic or threaded; the CTF writer's
 * NF_EEXIST (the directory exists and is not empty), NF_EIO or NF_ENOMEM
 * when the session cannot be started. A runtime used by a process forked
 * after its creation refuses every call with NF_ESTATE.
 */
NF_API int nf_runtime_create_from_env(const struct nf_runtime_config *cfg, nf_runtime **out,
			       struct nf_error *err);

/* Adapters. Creates the next adapter (ordinals from 0, in creation order;
 * desc copied, desc->name too: up to 63 bytes, NULL: "GPU") and emits AdapterStart and its first clock
 * calibration. Returns 0; NF_EINVAL for a NULL argument, a monitored value
 * stride above NF_MONITORED_VALUE_STRIDE_MAX, a GPU clock frequency of 0 or
 * above 10 GHz, a drift beyond 10000 ppm, a timestamp fault rate outside
 * 0..1, a log size above 1048576 entries; NF_ENOMEM beyond 16 adapters or
 * out of memory; NF_EUNSUPP when the adapter advertises NativeGpuFence but
 * the OS has the native fence feature disabled (as the real OS fails init). */
NF_API int nf_adapter_create(nf_runtime *rt, const struct nf_adapter_desc *desc, uint32_t *adapter_out,
		      struct nf_error *err);

/* Hardware queues: each gets a native progress fence and a waits log and a
 * signals log (DxgkDdiSetNativeFenceLogBuffer twice); emits HwQueueStart and
 * the two SetLogBuffer events; name is copied (up to 63 bytes; NULL or "":
 * "queue"). Threaded: also
 * starts the queue's GPU engine thread. nf_hwqueue_create returns 0; NF_EINVAL
 * (no such adapter, NULL queue_out); NF_ENOMEM (out of memory, a thread that
 * cannot start, more than 256 queues in threaded mode).
 * nf_hwqueue_destroy reads the queue's logs a last time and emits its truth
 * and HwQueueStop; returns 0, NF_EINVAL (bad handle) or NF_ESTATE while the
 * queue still has commands in flight (let it drain: advance, or wait for its
 * progress fence). nf_hwqueue_progress_fence returns 0 or NF_EINVAL (bad
 * handle, NULL fence_out); the fence is the queue's and dies with it. */
NF_API int nf_hwqueue_create(nf_runtime *rt, uint32_t adapter, uint32_t node, uint32_t engine,
		      const char *name, nf_handle *queue_out, struct nf_error *err);
NF_API int nf_hwqueue_destroy(nf_runtime *rt, nf_handle queue, struct nf_error *err);
NF_API int nf_hwqueue_progress_fence(nf_runtime *rt, nf_handle queue, nf_handle *fence_out,
			      struct nf_error *err);

struct nf_fence_desc {
	uint32_t type;           /* NF_FENCE_TYPE_* */
	bool shared;             /* may be opened by other processes */
	bool cross_adapter;      /* may be opened on other adapters (type must be DEFAULT) */
	uint64_t initial_value;
	uint32_t process;        /* creating process id */
};

/* D3DKMTCreateNativeFence: DxgkDdiCreateNativeFence (global) then
 * DxgkDdiOpenNativeFence (this process's local handle); one FenceStart event
 * stands for the pair. Returns 0, NF_ENOMEM, or NF_EINVAL for a bad argument,
 * a cross-adapter fence of a type other than DEFAULT, and an INTRA_GPU fence
 * while the OS lacks SupportIntraGpuFenceType (STATUS_INVALID_PARAMETER, the
 * error the D3DKMTCreateNativeFence page names); NF_EUNSUPP for INTRA_GPU on
 * an adapter without native fences. The local handle is closed with
 * nf_fence_close (or goes with the runtime). */
NF_API int nf_fence_create(nf_runtime *rt, uint32_t adapter, const struct nf_fence_desc *desc,
		    nf_handle *local_out, struct nf_error *err);
/*
 * D3DKMTCreateSynchronizationObject2 with D3DDDI_MONITORED_FENCE: a WDDM 2.x
 * monitored fence instead of a native fence (desc->type must be DEFAULT). On
 * the creating adapter it is a legacy monitored fence even when the adapter
 * has native fences: no log entries, no MonitoredValue. Opened on another
 * native adapter it is a native fence there. Its GPU signal on a native
 * adapter writes the value and raises DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED,
 * after which the OS evaluates the adapter's legacy monitored fence waiters;
 * when the adapter's payload is NF_IRQ_NULL_ARRAY_LEGACY (hardware that cannot
 * tell the two interrupts apart) it raises a native fence signaled interrupt
 * with a NULL array and EvaluateLegacyMonitoredFences instead. A native
 * NULL-array interrupt without that flag does not evaluate legacy waiters.
 * Returns as nf_fence_create (NF_EINVAL also for a type other than DEFAULT).
 */
NF_API int nf_monitored_fence_create(nf_runtime *rt, uint32_t adapter, const struct nf_fence_desc *desc,
			      nf_handle *local_out, struct nf_error *err);
/* The global handle a shared fence is opened by (stands in for the NT handle).
 * Returns 0 or NF_EINVAL (bad local handle, NULL global_out). */
NF_API int nf_fence_global_handle(nf_runtime *rt, nf_handle local, nf_handle *global_out,
			   struct nf_error *err);
/* D3DKMTOpenNativeFenceFromNTHandle: a new local handle for process on adapter.
 * On an adapter without native fences, the fence is opened as a legacy
 * monitored fence. Emits FenceStart (opened). Returns 0; NF_EINVAL (NULL
 * local_out, no such adapter, a global handle that names no fence, a fence
 * that is not shared, another adapter for a fence that is not cross-adapter);
 * NF_ENOMEM. */
NF_API int nf_fence_open(nf_runtime *rt, uint32_t adapter, uint32_t process, nf_handle global,
		  nf_handle *local_out, struct nf_error *err);
/* D3DKMTDestroySynchronizationObject: close the local handle; the global fence is
 * destroyed with its last local handle (FenceStop; CPU waiters on it return
 * NF_ESTATE, "destroyed during the wait"). Returns 0 or NF_EINVAL (bad
 * handle, already closed). */
NF_API int nf_fence_close(nf_runtime *rt, nf_handle local, struct nf_error *err);

/*
 * Where CurrentValue and MonitoredValue live for this handle, as the OS maps
 * them (DXGKARG_CREATENATIVEFENCE / OPENNATIVEFENCE): GPU VAs in the opening
 * process's address space; nonshareable fences of one process pack their
 * values in shared 4 KiB pages, one value every 8 + monitored_value_stride
 * bytes (the caps' padding); shareable and cross-adapter fences get pages of
 * their own. With DXGK_NATIVE_FENCE_CAP_MAP_TO_GPU_SYSTEM_PROCESS the same
 * storage is also mapped into the adapter's system process for the CMP
 * (CurrentValueSystemProcessGpuVa, MonitoredValueSystemProcessGpuVa); else 0.
 */
#define NF_GPU_PAGE_SIZE 4096u
#define NF_GPU_VA_BASE 0x100000000ull      /* first VA handed out in each space */
#define NF_GPU_VA_LIMIT 0x800000000000ull  /* one past the last */
struct nf_fence_va {
	uint64_t current_gpu_va;
	uint64_t monitored_gpu_va;
	uint64_t current_system_gpu_va;
	uint64_t monitored_system_gpu_va;
	uint32_t stride;          /* bytes between packed values; NF_GPU_PAGE_SIZE: own page */
	/* Where the storage is (D3DKMTCreateNativeFence's table): DEFAULT keeps
	 * both in system memory, except MonitoredValue in VRAM when the OS has
	 * SupportOptimizedDefaultFenceType (the optimized DEFAULT type); INTRA_GPU
	 * keeps both in VRAM; CurrentValue of a cross-adapter fence is always in
	 * system memory. */
	bool current_in_vram;
	bool monitored_in_vram;
};
/* Fills *out for the local handle. Returns 0 or NF_EINVAL (bad handle, NULL out). */
NF_API int nf_fence_gpu_va(nf_runtime *rt, nf_handle local, struct nf_fence_va *out,
		    struct nf_error *err);

/* Reads CurrentValue (never torn) and this handle's adapter's MonitoredValue;
 * either pointer may be NULL. Emits nothing. Returns 0 or NF_EINVAL (bad
 * handle). */
NF_API int nf_fence_read(nf_runtime *rt, nf_handle local, uint64_t *current, uint64_t *monitored,
		  struct nf_error *err);

/* Work the UMD records on a queue, at the current CPU time, by the current thread:
 * emits FENCE_WAIT_QUEUED / FENCE_SIGNAL_QUEUED (queue_work emits nothing;
 * it occupies the GPU for gpu_ns). The GPU executes them later, in queue
 * order (deterministic: inside later calls that move time; threaded: on the
 * queue's engine thread). Returns 0; NF_EINVAL (bad queue or fence handle, a
 * fence on another adapter than the queue, on an adapter without 64-bit
 * atomics a value more than UINT32_MAX/2 from the fence's last signaled
 * value); NF_ENOMEM (cfg->max_operations reached, out of memory, a queue
 * holding too many commands behind a GPU wait nothing queued can satisfy:
 * deterministic, over 4194304; threaded, 65536). */
NF_API int nf_queue_wait(nf_runtime *rt, nf_handle queue, nf_handle fence, uint64_t value,
		  struct nf_error *err);
NF_API int nf_queue_signal(nf_runtime *rt, nf_handle queue, nf_handle fence, uint64_t value,
		    struct nf_error *err);
NF_API int nf_queue_work(nf_runtime *rt, nf_handle queue, uint64_t gpu_ns, struct nf_error *err);

/*
 * Displays and presents. A display is one output (a VidPnSource, one plane)
 * with a hardware flip queue, refreshing at refresh_num / refresh_den Hz (a
 * DXGI_RATIONAL: 60/1, 60000/1001): vertical blank k (k = 1, 2, ...) comes
 * k * refresh_den / refresh_num seconds after the display was created, rounded
 * to the nanosecond. nf_display_desc_init fills the defaults ("display", 60/1,
 * process 0); it never fails (desc must not be NULL). nf_display_create makes
 * the display on adapter with its swap chain's present fence (a fence of
 * desc->process on that adapter: native on a native adapter, else a legacy
 * monitored fence; MonitoredFenceStart) and emits DisplayStart; *display_out
 * is its ordinal (from 0). Returns 0; NF_EINVAL (no such adapter, NULL
 * argument, a refresh numerator or denominator of 0, a rate above 1000 Hz or
 * below 1 Hz, a name of 64 bytes or more); NF_ENOMEM (more than 16 displays,
 * out of memory).
 *
 * nf_present presents the frame whose work was queued on queue so far to
 * display, with sync_interval (DXGI's SyncInterval): it emits Present, queues
 * a signal of the display's present fence to the present's number on queue
 * (FENCE_SIGNAL_QUEUED, like nf_queue_signal: the frame is done on the GPU
 * when the queue reaches it) and puts the flip in the display's flip queue.
 * At each vertical blank the display looks at its flip queue in order: with
 * sync_interval 1..4 the first flip is shown (DisplayFlip, shown) once its
 * value is signaled and the flip on screen has been there for its own sync
 * interval (the frame before it stays on screen meanwhile: a late frame);
 * with 0 the newest flip whose value is signaled is shown and the ready ones
 * queued before it are dropped (DisplayFlip, dropped). Every blank emits
 * VSyncDPC. A flip still waiting when the runtime finishes is left pending.
 * *present_id_out (may be NULL) gets the present's number on the display,
 * from 1. Returns 0; NF_EINVAL (bad queue handle, no such display, a queue on
 * another adapter than the display, a sync interval above 4); the errors of
 * nf_queue_signal; NF_ENOMEM (out of memory, more than 65536 flips waiting).
 * Threaded: blanks come from the CMP/interrupt thread on CLOCK_MONOTONIC.
 */
struct nf_display_desc {
	const char *name;        /* copied, at most 63 bytes; NULL: "display" */
	uint32_t refresh_num;    /* refresh rate in Hz = refresh_num / refresh_den */
	uint32_t refresh_den;
	uint32_t process;        /* the presenting process: owner of the present fence */
};
/* Fills the defaults (above); never fails; desc must not be NULL; thread-safe. */
NF_API void nf_display_desc_init(struct nf_display_desc *desc);
/* Makes a display (above). Returns 0, NF_EINVAL or NF_ENOMEM (above), and what
 * every call returns (the header's opening comment). */
NF_API int nf_display_create(nf_runtime *rt, uint32_t adapter, const struct nf_display_desc *desc,
			     uint32_t *display_out, struct nf_error *err);
/* Presents to a display (above). Returns 0, NF_EINVAL, NF_ENOMEM (above), and
 * what every call returns (the header's opening comment). */
NF_API int nf_present(nf_runtime *rt, nf_handle queue, uint32_t display, uint32_t sync_interval,
		      uint64_t *present_id_out, struct nf_error *err);

/* CPU waits and signals (not allowed on INTRA_GPU fences: NF_EINVAL).
 * nf_cpu_wait blocks until the fence reaches value (deterministic: virtual
 * time runs inside the call) and returns 0; NF_ETIMEOUT after timeout_ns
 * (NF_NO_TIMEOUT: never; threaded: real time); NF_ESTATE when the fence is
 * destroyed during the wait; NF_EINTR when cfg->interrupt is set or the
 * runtime is closed meanwhile (threaded); NF_EINVAL (bad handle).
 * nf_cpu_wait_async registers the wait and returns at once: *event_out is an
 * event handle, signalled when the fence reaches value; returns 0, NF_EINVAL
 * (bad handle, NULL event_out) or NF_ENOMEM. nf_event_wait waits for it like
 * nf_cpu_wait (0, NF_ETIMEOUT, NF_EINTR, NF_ESTATE when the event is closed
 * during the wait, NF_EINVAL for a bad or closed event). nf_event_close
 * releases the event (a pending wait ends with CpuUnwait): 0 or NF_EINVAL;
 * it still works after nf_runtime_finish. nf_cpu_signal sets the fence's
 * value from the CPU, wakes its waiters and propagates it across adapters:
 * 0 or NF_EINVAL (bad handle, the 32-bit atomics window as for
 * nf_queue_signal). */
NF_API int nf_cpu_wait(nf_runtime *rt, nf_handle fence, uint64_t value, uint64_t timeout_ns,
		struct nf_error *err);
NF_API int nf_cpu_wait_async(nf_runtime *rt, nf_handle fence, uint64_t value, nf_handle *event_out,
		      struct nf_error *err);
NF_API int nf_event_wait(nf_runtime *rt, nf_handle event, uint64_t timeout_ns, struct nf_error *err);
NF_API int nf_event_close(nf_runtime *rt, nf_handle event, struct nf_error *err);
NF_API int nf_cpu_signal(nf_runtime *rt, nf_handle fence, uint64_t value, struct nf_error *err);

/* Time. nf_runtime_advance: deterministic, moves virtual CPU time on by ns
 * and runs the GPU until then; threaded, sleeps ns while the engines run.
 * Returns 0; NF_EINVAL when virtual time would overflow; NF_EINTR when
 * cfg->interrupt is set. nf_runtime_now_ns: the runtime's time in ns (0 for
 * NULL); never fails. nf_runtime_set_thread names the CPU thread that records
 * next (deterministic: for the runtime; threaded: for the calling thread
 * only); NULL is a no-op. */
NF_API int nf_runtime_advance(nf_runtime *rt, uint64_t ns, struct nf_error *err);
NF_API uint64_t nf_runtime_now_ns(const nf_runtime *rt);
NF_API void nf_runtime_set_thread(nf_runtime *rt, uint32_t thread);

struct nf_runtime_stats {
	uint64_t operations;        /* GPU waits and signals queued */
	uint64_t signals_executed;
	uint64_t waits_unblocked;
	uint64_t interrupts;
	uint64_t interrupts_unneeded; /* raised although no waiter needed it (must stay 0) */
	uint64_t cpu_waits, cpu_wakeups, cpu_timeouts;
	uint64_t log_entries_written;
	uint64_t log_entries_lost;
	uint64_t log_reads;
	uint64_t events_emitted;
};
/* Copies the counters into *st (threaded: a consistent snapshot taken under
 * the OS lock). Never fails; NULL rt or st is a no-op. Works after finish. */
NF_API void nf_runtime_get_stats(const nf_runtime *rt, struct nf_runtime_stats *st);

#ifdef __cplusplus
}
#endif

#endif
