/*
 * The native GPU fence engine, deterministic mode: a discrete-event simulation
 * on virtual time of the OS scheduler (VidSch), the kernel-mode driver, the GPU
 * engines and the CMP of the WDDM 3.2 design (Microsoft's driver documentation,
 * "Native GPU fence object"). Hardware
 * queues execute their waits and signals in order; signals write CurrentValue,
 * then a log entry, bump FirstFreeEntryIndex and raise the native fence signaled
 * interrupt only when CurrentValue > MonitoredValue; the OS handles interrupts by
 * reading logs, waking CPU waiters, propagating cross-adapter signals and
 * updating MonitoredValue with the write-barrier-resample protocol.
 *
 * This file holds the runtime (create, finish, close, advance, stats) and the
 * public entry points; the rules are in the engine_*.c files beside it, one
 * per section of what was one file (docs/ARCHITECTURE.md, "The engine").
 */
#include "engine_int.h"
#include "contract/errors.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "contract/capbuf.h"


/* ------------------------------------------------------------------ */
/* public API: runtime                                                 */

void nf_runtime_config_init(struct nf_runtime_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->mode = NF_MODE_DETERMINISTIC;
	cfg->seed = 1;
	cfg->cpu_frequency = 10000000;
	cfg->cpu_start_ticks = 0;
	cfg->os_native_fence_enabled = true;
	cfg->tracing_log_entries = 256;
	cfg->log_read_interval_ns = 1000000;
	cfg->calibration_interval_ns = 10000000;
}

uint32_t nf_log_entries_effective(const struct nf_runtime_config *cfg, uint32_t log_entries)
{
	uint32_t n = log_entries ? log_entries : NF_LOG_DEFAULT_ENTRIES;
	uint32_t t = cfg->tracing_log_entries ? cfg->tracing_log_entries : 256;

	return cfg->tracing && t > n ? t : n;
}

void nf_adapter_desc_init(struct nf_adapter_desc *d)
{
	memset(d, 0, sizeof(*d));
	d->name = "GPU";
	d->vidsch_caps = NF_VIDSCH_NATIVE_GPU_FENCE;
	d->monitored_value_stride = 8;
	d->gpu_clock.frequency = 19200000;
	d->interrupt_payload = NF_IRQ_FENCE_ARRAY;
	d->signal_cost_ns = 200;
	d->wait_cost_ns = 100;
	d->interrupt_latency_ns = 5000;
	d->submit_latency_ns = 20000;
}

int nf_runtime_create(const struct nf_runtime_config *cfg, nf_runtime **out, struct nf_error *err)
{
	struct nf_runtime *rt;

	if (!out)
		return nf_error_set(err, NF_EINVAL, "nf_runtime_create: NULL output");
	*out = NULL;
	if (!cfg)
		return nf_error_set(err, NF_EINVAL, "nf_runtime_create: NULL config");
	if (cfg->mode != NF_MODE_DETERMINISTIC && cfg->mode != NF_MODE_THREADED)
		return nf_error_set(err, NF_EINVAL, "unknown runtime mode %d", (int)cfg->mode);
	if (cfg->cpu_frequency == 0 || cfg->cpu_frequency > 10000000000ull)
		return nf_error_set(err, NF_EINVAL, "CPU clock frequency %llu out of range",
				    (unsigned long long)cfg->cpu_frequency);
	if (cfg->calibration_interval_ns == 0 || cfg->calibration_interval_ns > 30000000)
		return nf_error_set(err, NF_EINVAL,
				    "calibration interval must be between 1 ns and 30 ms");
	rt = calloc(1, sizeof(*rt));
	if (!rt)
		return nf_error_set(err, NF_ENOMEM, "out of memory");
	rt->cfg = *cfg;
	if (!rt->cfg.tracing_log_entries)
		rt->cfg.tracing_log_entries = 256;
	rt->rng = cfg->seed ^ 0x6a09e667f3bcc908ull;
	nf_fork_watch(rt);
	rt->thread = 1;
	rt->next_wait_id = 1;
	if (cfg->mode == NF_MODE_THREADED) {
		/* Engine threads hold pointers into these arrays: allocate them once. */
		rt->threaded = true;
		rt->queues = calloc(NF_TH_MAX_QUEUES, sizeof(*rt->queues));
		rt->globals = calloc(NF_TH_MAX_GLOBALS, sizeof(*rt->globals));
		if (!rt->queues || !rt->globals)
			goto out_oom;
		rt->cap_queues = NF_TH_MAX_QUEUES;
		rt->cap_globals = NF_TH_MAX_GLOBALS;
		int rc = nf_th_start(rt, err);
		if (rc) {
			nf_runtime_destroy(rt);
			return rc;
		}
		*out = rt;
		return 0;
	}
	if (cfg->log_read_interval_ns &&
	    nf_eng_sim_push(rt, cfg->log_read_interval_ns, NF_SIM_PERIODIC_READ, 0, 0, 0))
		goto out_oom;
	if (cfg->log_recreate_interval_ns &&
	    nf_eng_sim_push(rt, cfg->log_recreate_interval_ns, NF_SIM_RECREATE_LOGS, 0, 0, 0))
		goto out_oom;
	*out = rt;
	return 0;
out_oom:
	nf_runtime_destroy(rt);
	return nf_error_set(err, NF_ENOMEM, "out of memory");
}

void nf_runtime_set_owner(nf_runtime *rt, const struct nf_runtime_owner *owner)
{
	rt->owner = *owner;
}

/* Ends what the owner holds (runtime_owner.h): finishes the runtime first
 * unless it is finished or failed, then hands the owner the runtime's own
 * error. Returns the runtime's first error, else the finish's, else the
 * owner's. */
static int close_owner(nf_runtime *rt, struct nf_error *err)
{
	struct nf_error fin;
	int rc = 0;

	if (!rt->owner.close)
		return rt->err.code ? nf_error_set(err, rt->err.code, "%s", rt->err.msg) : 0;
	memset(&fin, 0, sizeof(fin));
	if (!rt->finished && !rt->err.code)
		rc = nf_runtime_finish(rt, &fin);
	const struct nf_error *failure = rt->err.code ? &rt->err : rc ? &fin : NULL;
	if (failure)
		nf_error_set(err, failure->code, "%s", failure->msg);
	int rc2 = rt->owner.close(rt->owner.ctx, failure, err);
	memset(&rt->owner, 0, sizeof(rt->owner));
	return failure ? failure->code : rc2;
}

void nf_runtime_destroy(nf_runtime *rt)
{
	nf_runtime_close(rt, NULL);
}

int nf_runtime_close(nf_runtime *rt, struct nf_error *err)
{
	int rc;

	if (!rt)
		return 0;
	rc = nf_fork_check(rt, err);
	if (rc) {
		/* A forked child: the session, the committer and the engine
		 * threads are the parent's; free this copy's memory only (the
		 * threads' state is left: its locks may be held, the threads
		 * do not exist here). */
		if (rt->owner.abandon)
			rt->owner.abandon(rt->owner.ctx);
		memset(&rt->owner, 0, sizeof(rt->owner));
		rt->th = NULL;
	}
	/* A thread still blocked in a CPU wait returns NF_EINTR first. */
	nf_th_release_waiters(rt);
	if (!rc)
		rc = close_owner(rt, err);
	if (rt->th) {
		nf_th_stop(rt);
		nf_th_free(rt);
	}
	for (uint32_t i = 0; i < rt->n_queues; i++) {
		free(rt->queues[i].cmds);
		free(rt->queues[i].pend);
		for (int l = 0; l < 2; l++) {
			free(rt->queues[i].logs[l].entries);
			free(rt->queues[i].logs[l].truth);
		}
	}
	/* Blocking waiters live in their caller's frame; an async one belongs to
	 * its event (pending or done), which frees it here exactly once. A
	 * fence's list may still hold pending async waiters: they are not freed
	 * through it (that freed them before the event read them). */
	for (uint32_t i = 0; i < rt->n_globals; i++)
		free(rt->globals[i].gpu_waiters);
	for (uint32_t i = 0; i < rt->n_cpu_events; i++)
		free(rt->cpu_events[i].waiter);
	nf_eng_displays_free(rt);
	free(rt->queues);
	free(rt->globals);
	free(rt->locals);
	free(rt->cpu_events);
	free(rt->handles);
	free(rt->heap);
	free(rt->scratch_entries);
	free(rt->scratch_truth);
	for (uint32_t a = 0; a < rt->n_adapters; a++)
		free(rt->adapters[a].va_spaces);
	free(rt);
	return rc;
}

int nf_eng_check_rt(nf_runtime *rt, struct nf_error *err)
{
	if (!rt)
		return nf_error_set(err, NF_EINVAL, "NULL runtime");
	if (rt->err.code)
		return nf_error_set(err, rt->err.code, "%s", rt->err.msg);
	if (rt->finished)
		return nf_error_set(err, NF_ESTATE, "runtime already finished");
	return 0;
}

int nf_eng_fail(nf_runtime *rt, int rc, struct nf_error *err)
{
	if (rc && rt->err.code)
		nf_error_set(err, rt->err.code, "%s", rt->err.msg);
	return rc;
}

static int api_runtime_advance(nf_runtime *rt, uint64_t ns, struct nf_error *err)
{
	int rc = nf_eng_check_rt(rt, err);

	if (rc)
		return rc;
	if (ns > UINT64_MAX - rt->now)
		return nf_error_set(err, NF_EINVAL, "time would overflow");
	rc = nf_eng_sim_run_until(rt, rt->now + ns);
	if (rc == NF_EINTR && !rt->err.code)
		return nf_error_set(err, NF_EINTR, "interrupted");
	return nf_eng_fail(rt, rc, err);
}

uint64_t nf_runtime_now_ns(const nf_runtime *rt)
{
	return rt ? now_ns(rt) : 0;
}

void nf_runtime_set_thread(nf_runtime *rt, uint32_t thread)
{
	if (rt && rt->threaded)
		nf_th_set_thread_id(thread);
	else if (rt)
		rt->thread = thread;
}

void nf_runtime_get_stats(const nf_runtime *rt, struct nf_runtime_stats *st)
{
	if (!rt || !st)
		return;
	if (!rt->threaded) {
		*st = rt->stats;
		return;
	}
	/* The OS-side counters under the OS lock, plus every engine's own. */
	nf_th_lock((nf_runtime *)rt);
	*st = rt->stats;
	uint64_t *dst = (uint64_t *)st;
	for (uint32_t q = 0; q < rt->n_queues; q++) {
		const uint64_t *src = (const uint64_t *)&rt->queues[q].stats;
		for (size_t i = 0; i < sizeof(*st) / sizeof(uint64_t); i++)
			dst[i] += __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	}
	nf_th_unlock((nf_runtime *)rt);
}

static int api_runtime_finish(nf_runtime *rt, struct nf_error *err)
{
	int rc = nf_eng_check_rt(rt, err);
	struct nf_event ev;

	if (rc)
		return rc;
	/* Let every queue run until it is idle or blocked for good. */
	if (rt->threaded) {
		nf_th_unlock(rt);
		rc = nf_th_quiesce(rt);
		nf_th_lock(rt);
		if (rc == NF_EINTR)
			return nf_error_set(err, NF_EINTR, "interrupted while the queues drained");
		if (!rc && rt->finished)
			return nf_error_set(err, NF_ESTATE, "runtime already finished");
	}
	uint32_t polls = 0;
	while (!rt->threaded && nf_eng_sim_step(rt, &rc)) {
		if (rc)
			return nf_eng_fail(rt, rc, err);
		if (nf_eng_sim_interrupted(rt, &polls))
			return nf_error_set(err, NF_EINTR, "interrupted while the queues drained");
	}
	if (!rc)
		rc = nf_eng_read_logs_now(rt);
	for (uint32_t a = 0; a < rt->n_adapters && !rc; a++)
		rc = nf_eng_calibrate(rt, a);
	for (uint32_t i = 0; i < rt->n_queues && !rc; i++) {
		struct nf_queue *q = &rt->queues[i];

		if (!q->alive)
			continue;
		if (q->native)
			for (int l = 0; l < 2 && !rc; l++)
				rc = nf_eng_emit_truth_log(rt, q, &q->logs[l]);
		if (rc)
			break;
		EV_INIT(ev, HWQUEUE_STOP);
		ev.f[NFF_HWQUEUE_STOP_adapter] = q->adapter;
		ev.f[NFF_HWQUEUE_STOP_hwqueue] = q->handle;
		rc = nf_eng_emit(rt, &ev);
	}
	rt->finished = true;
	return nf_eng_fail(rt, rc, err);
}

/* ------------------------------------------------------------------ */
/* public API: entry points. In threaded mode each call holds the OS lock
 * (engine threads run beside it; CPU waits release it while they block). */

#define LOCKED(rt, call)                        \
	do {                                    \
		if (nf_fork_check(rt, err))     \
			return NF_ESTATE;       \
		nf_th_lock(rt);                 \
		int rc_ = (call);               \
		nf_th_unlock(rt);               \
		return rc_;                     \
	} while (0)

int nf_runtime_finish(nf_runtime *rt, struct nf_error *err)
{
	LOCKED(rt, api_runtime_finish(rt, err));
}

int nf_runtime_advance(nf_runtime *rt, uint64_t ns, struct nf_error *err)
{
	if (nf_fork_check(rt, err))
		return NF_ESTATE;
	if (rt && rt->threaded) {
		/* Real time: the caller's thread sleeps while the engines run. */
		nf_th_lock(rt);
		int rc = nf_eng_check_rt(rt, err);
		nf_th_unlock(rt);
		if (!rc && nf_th_advance(rt, ns) == NF_EINTR)
			return nf_error_set(err, NF_EINTR, "interrupted");
		return rc;
	}
	return api_runtime_advance(rt, ns, err);
}

int nf_adapter_create(nf_runtime *rt, const struct nf_adapter_desc *desc, uint32_t *adapter_out,
		      struct nf_error *err)
{
	LOCKED(rt, nf_eng_api_adapter_create(rt, desc, adapter_out, err));
}

int nf_hwqueue_create(nf_runtime *rt, uint32_t adapter, uint32_t node, uint32_t engine,
		      const char *name, nf_handle *queue_out, struct nf_error *err)
{
	LOCKED(rt, nf_eng_api_hwqueue_create(rt, adapter, node, engine, name, queue_out, err));
}

int nf_hwqueue_destroy(nf_runtime *rt, nf_handle queue, struct nf_error *err)
{
	LOCKED(rt, nf_eng_api_hwqueue_destroy(rt, queue, err));
}

int nf_hwqueue_progress_fence(nf_runtime *rt, nf_handle queue, nf_handle *fence_out,
			      struct nf_error *err)
{
	LOCKED(rt, nf_eng_api_hwqueue_progress_fence(rt, queue, fence_out, err));
}

int nf_fence_create(nf_runtime *rt, uint32_t adapter, const struct nf_fence_desc *desc,
		    nf_handle *local_out, struct nf_error *err)
{
	LOCKED(rt, nf_eng_api_fence_create(rt, adapter, desc, false, local_out, err));
}

int nf_monitored_fence_create(nf_runtime *rt, uint32_t adapter, const struct nf_fence_desc *desc,
			      nf_handle *local_out, struct nf_error *err)
{
	LOCKED(rt, nf_eng_api_fence_create(rt, adapter, desc, true, local_out, err));
}

int nf_fence_global_handle(nf_runtime *rt, nf_handle local, nf_handle *global_out,
			   struct nf_error *err)
{
	LOCKED(rt, nf_eng_api_fence_global_handle(rt, local, global_out, err));
}

int nf_fence_open(nf_runtime *rt, uint32_t adapter, uint32_t process, nf_handle global,
		  nf_handle *local_out, struct nf_error *err)
{
	LOCKED(rt, nf_eng_api_fence_open(rt, adapter, process, global, local_out, err));
}

int nf_fence_close(nf_runtime *rt, nf_handle local, struct nf_error *err)
{
	LOCKED(rt, nf_eng_api_fence_close(rt, local, err));
}

int nf_fence_read(nf_runtime *rt, nf_handle local, uint64_t *current, uint64_t *monitored,
		  struct nf_error *err)
{
	LOCKED(rt, nf_eng_api_fence_read(rt, local, current, monitored, err));
}

int nf_fence_gpu_va(nf_runtime *rt, nf_handle local, struct nf_fence_va *out,
		    struct nf_error *err)
{
	LOCKED(rt, nf_eng_api_fence_gpu_va(rt, local, out, err));
}

int nf_queue_wait(nf_runtime *rt, nf_handle queue, nf_handle fence, uint64_t value,
		  struct nf_error *err)
{
	LOCKED(rt, nf_eng_api_queue_wait(rt, queue, fence, value, err));
}

int nf_queue_signal(nf_runtime *rt, nf_handle queue, nf_handle fence, uint64_t value,
		    struct nf_error *err)
{
	LOCKED(rt, nf_eng_api_queue_signal(rt, queue, fence, value, err));
}

int nf_queue_work(nf_runtime *rt, nf_handle queue, uint64_t gpu_ns, struct nf_error *err)
{
	LOCKED(rt, nf_eng_api_queue_work(rt, queue, gpu_ns, err));
}

int nf_cpu_wait(nf_runtime *rt, nf_handle fence, uint64_t value, uint64_t timeout_ns,
		struct nf_error *err)
{
	LOCKED(rt, nf_eng_api_cpu_wait(rt, fence, value, timeout_ns, err));
}

int nf_cpu_wait_async(nf_runtime *rt, nf_handle fence, uint64_t value, nf_handle *event_out,
		      struct nf_error *err)
{
	LOCKED(rt, nf_eng_api_cpu_wait_async(rt, fence, value, event_out, err));
}

int nf_event_wait(nf_runtime *rt, nf_handle event, uint64_t timeout_ns, struct nf_error *err)
{
	LOCKED(rt, nf_eng_api_event_wait(rt, event, timeout_ns, err));
}

int nf_event_close(nf_runtime *rt, nf_handle event, struct nf_error *err)
{
	LOCKED(rt, nf_eng_api_event_close(rt, event, err));
}

int nf_cpu_signal(nf_runtime *rt, nf_handle fence, uint64_t value, struct nf_error *err)
{
	LOCKED(rt, nf_eng_api_cpu_signal(rt, fence, value, err));
}

int nf_display_create(nf_runtime *rt, uint32_t adapter, const struct nf_display_desc *desc,
		      uint32_t *display_out, struct nf_error *err)
{
	LOCKED(rt, nf_eng_api_display_create(rt, adapter, desc, display_out, err));
}

int nf_present(nf_runtime *rt, nf_handle queue, uint32_t display, uint32_t sync_interval,
	       uint64_t *present_id_out, struct nf_error *err)
{
	LOCKED(rt, nf_eng_api_present(rt, queue, display, sync_interval, present_id_out, err));
}
