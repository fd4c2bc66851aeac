/*
 * The native fence engine's public API for objects: adapters, hardware queues,
 * the GPU virtual addresses of fence values, fences (create, open, close).
 * Split out of engine.c (issue #27).
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
/* public API: adapters, queues                                        */

int nf_eng_api_adapter_create(nf_runtime *rt, const struct nf_adapter_desc *desc, uint32_t *adapter_out,
		      struct nf_error *err)
{
	int rc = nf_eng_check_rt(rt, err);
	struct nf_adapter *a;
	struct nf_event ev;

	if (rc)
		return rc;
	if (!desc || !adapter_out)
		return nf_error_set(err, NF_EINVAL, "nf_adapter_create: NULL argument");
	if (rt->n_adapters >= NF_MAX_ADAPTERS)
		return nf_error_set(err, NF_ENOMEM, "too many adapters (limit %u)", NF_MAX_ADAPTERS);
	if ((desc->vidsch_caps & NF_VIDSCH_NATIVE_GPU_FENCE) && !rt->cfg.os_native_fence_enabled)
		return nf_error_set(err, NF_EUNSUPP,
				    "adapter '%s' advertises NativeGpuFence but the OS has DXGK_FEATURE_NATIVE_FENCE disabled: adapter initialization fails",
				    desc->name ? desc->name : "");
	if (desc->monitored_value_stride > NF_MONITORED_VALUE_STRIDE_MAX)
		return nf_error_set(err, NF_EINVAL, "monitored value stride %u exceeds %u bytes",
				    desc->monitored_value_stride, NF_MONITORED_VALUE_STRIDE_MAX);
	if (desc->gpu_clock.frequency == 0 || desc->gpu_clock.frequency > 10000000000ull)
		return nf_error_set(err, NF_EINVAL, "GPU clock frequency out of range");
	if (fabs(desc->gpu_clock.drift_ppm) > 10000)
		return nf_error_set(err, NF_EINVAL, "GPU clock drift beyond 10000 ppm");
	if (desc->zero_ts_rate < 0 || desc->zero_ts_rate > 1 || desc->repeat_ts_rate < 0 ||
	    desc->repeat_ts_rate > 1)
		return nf_error_set(err, NF_EINVAL, "timestamp fault rates must be within 0..1");
	if (desc->log_entries > (1u << 20))
		return nf_error_set(err, NF_EINVAL, "log size %u entries exceeds 1048576",
				    desc->log_entries);
	a = &rt->adapters[rt->n_adapters];
	memset(a, 0, sizeof(*a));
	a->desc = *desc;
	snprintf(a->name, sizeof(a->name), "%s", desc->name ? desc->name : "GPU");
	a->desc.name = a->name;
	a->native = (desc->vidsch_caps & NF_VIDSCH_NATIVE_GPU_FENCE) != 0;
	a->optimized = a->native &&
		       (desc->vidsch_caps & NF_VIDSCH_OPTIMIZED_NATIVE_FENCE_SIGNALED_INTERRUPT);
	a->atomics32 = (desc->vidsch_caps & NF_VIDSCH_NO64BIT_ATOMICS) != 0;
	a->log_entries = nf_log_entries_effective(&rt->cfg, desc->log_entries);
	a->gpu_rate = (double)desc->gpu_clock.frequency * (1.0 + desc->gpu_clock.drift_ppm * 1e-6) / 1e9;
	*adapter_out = rt->n_adapters;
	EV_INIT(ev, ADAPTER_START);
	ev.f[NFF_ADAPTER_START_adapter] = rt->n_adapters;
	ev.f[NFF_ADAPTER_START_vidsch_caps] = desc->vidsch_caps;
	ev.f[NFF_ADAPTER_START_native_fence_caps] = desc->native_fence_caps;
	ev.f[NFF_ADAPTER_START_monitored_value_stride] = desc->monitored_value_stride;
	ev.f[NFF_ADAPTER_START_gpu_frequency] = desc->gpu_clock.frequency;
	ev.f[NFF_ADAPTER_START_os_feature_enabled] = rt->cfg.os_native_fence_enabled;
	ev.str = a->name;
	rt->n_adapters++;
	rc = nf_eng_emit(rt, &ev);
	if (!rc)
		rc = nf_eng_calibrate(rt, *adapter_out);
	if (!rc && !rt->threaded) /* threaded: the OS thread calibrates every adapter */
		rc = nf_eng_sim_push(rt, rt->now + rt->cfg.calibration_interval_ns, NF_SIM_CALIBRATE,
			      *adapter_out, 0, 0);
	return nf_eng_fail(rt, rc, err);
}

static int global_new(nf_runtime *rt, uint32_t adapter, const struct nf_fence_desc *d,
		      uint32_t *gi_out)
{
	if (rt->threaded && rt->n_globals >= rt->cap_globals)
		return nf_error_set(&rt->err, NF_ENOMEM, "too many fences for threaded mode (limit %u)",
				    NF_TH_MAX_GLOBALS);
	if (nf_eng_grow((void **)&rt->globals, &rt->cap_globals, rt->n_globals + 1, sizeof(*rt->globals)))
		return nf_error_set(&rt->err, NF_ENOMEM, "out of memory");
	uint32_t gi = rt->n_globals;
	struct nf_global_fence *g = &rt->globals[gi];
	int rc;

	memset(g, 0, sizeof(*g));
	rc = nf_eng_handle_new(rt, NF_OBJ_GLOBAL_FENCE, gi, &g->handle);
	if (rc)
		return rc;
	rt->n_globals++;
	g->alive = true;
	g->type = d->type;
	g->shared = d->shared;
	g->cross_adapter = d->cross_adapter;
	g->creator_adapter = adapter;
	g->current = d->initial_value;
	g->current32 = (uint32_t)d->initial_value;
	g->wait_min = UINT64_MAX;
	for (uint32_t a = 0; a < NF_MAX_ADAPTERS; a++)
		g->monitored[a] = d->cross_adapter ? 0 : UINT64_MAX;
	*gi_out = gi;
	return 0;
}

/* ------------------------------------------------------------------ */
/* GPU virtual addresses of fence values                               */

/* The index of process's VA space on adapter a (created on first use). */
static int va_space(struct nf_runtime *rt, struct nf_adapter *a, uint32_t process, uint32_t *out)
{
	for (uint32_t i = 0; i < a->n_va_spaces; i++)
		if (a->va_spaces[i].process == process) {
			*out = i;
			return 0;
		}
	if (nf_eng_grow((void **)&a->va_spaces, &a->cap_va_spaces, a->n_va_spaces + 1,
		 sizeof(*a->va_spaces)))
		return nf_error_set(&rt->err, NF_ENOMEM, "out of memory");
	struct nf_va_space *s = &a->va_spaces[a->n_va_spaces];
	memset(s, 0, sizeof(*s));
	s->process = process;
	s->next_va = NF_GPU_VA_BASE;
	*out = a->n_va_spaces++;
	return 0;
}

static int va_page(struct nf_runtime *rt, struct nf_va_space *s, uint64_t *va)
{
	if (s->next_va > NF_GPU_VA_LIMIT - NF_GPU_PAGE_SIZE)
		return nf_error_set(&rt->err, NF_ENOMEM, "GPU virtual address space of process %u is full",
				    s->process);
	*va = s->next_va;
	s->next_va += NF_GPU_PAGE_SIZE;
	return 0;
}

/* Packs one value (CurrentValue or MonitoredValue) of a nonshareable fence
 * into its process's current page, starting a new page (and its system
 * process mapping) when the page is full. */
static int va_pack(struct nf_runtime *rt, struct nf_va_space *ps, struct nf_va_space *ss,
		   uint64_t *page, uint64_t *sys_page, uint32_t *used, uint32_t stride,
		   uint64_t *va, uint64_t *sys_va)
{
	int rc;

	if (!*page || *used + stride > NF_GPU_PAGE_SIZE) {
		rc = va_page(rt, ps, page);
		if (!rc && ss)
			rc = va_page(rt, ss, sys_page);
		if (rc)
			return rc;
		*used = 0;
	}
	*va = *page + *used;
	*sys_va = ss ? *sys_page + *used : 0;
	*used += stride;
	return 0;
}

/* The OS maps a native fence's values for a new local handle (create or open). */
static int fence_map(struct nf_runtime *rt, struct nf_global_fence *g, struct nf_local_fence *lf)
{
	struct nf_adapter *a = &rt->adapters[lf->adapter];
	bool sys = (a->desc.native_fence_caps & NF_NATIVE_FENCE_CAP_MAP_TO_GPU_SYSTEM_PROCESS) != 0;
	uint32_t pi, si = 0;
	int rc;

	memset(&lf->va, 0, sizeof(lf->va));
	if (!lf->native)
		return 0;
	lf->va.current_in_vram = g->type == NF_FENCE_TYPE_INTRA_GPU;
	lf->va.monitored_in_vram = g->type == NF_FENCE_TYPE_INTRA_GPU ||
				   rt->cfg.os_support_optimized_default_fence_type;
	rc = va_space(rt, a, UINT32_MAX, &si);
	if (!rc)
		rc = va_space(rt, a, lf->process, &pi);
	if (rc)
		return rc;
	struct nf_va_space *ps = &a->va_spaces[pi], *ss = sys ? &a->va_spaces[si] : NULL;
	if (!g->shared && !g->cross_adapter) {
		uint32_t stride = 8 + a->desc.monitored_value_stride;

		lf->va.stride = stride;
		rc = va_pack(rt, ps, ss, &ps->cur_page, &ps->cur_sys_page, &ps->cur_used, stride,
			     &lf->va.current_gpu_va, &lf->va.current_system_gpu_va);
		if (!rc)
			rc = va_pack(rt, ps, ss, &ps->mon_page, &ps->mon_sys_page, &ps->mon_used, stride,
				     &lf->va.monitored_gpu_va, &lf->va.monitored_system_gpu_va);
		return rc;
	}
	/* Shareable: pages of its own, mapped into each opening process; the
	 * system process maps the one storage once per adapter. */
	lf->va.stride = NF_GPU_PAGE_SIZE;
	rc = va_page(rt, ps, &lf->va.current_gpu_va);
	if (!rc)
		rc = va_page(rt, ps, &lf->va.monitored_gpu_va);
	if (!rc && ss && !g->sys_cur_va[lf->adapter]) {
		rc = va_page(rt, ss, &g->sys_cur_va[lf->adapter]);
		if (!rc)
			rc = va_page(rt, ss, &g->sys_mon_va[lf->adapter]);
	}
	if (ss) {
		lf->va.current_system_gpu_va = g->sys_cur_va[lf->adapter];
		lf->va.monitored_system_gpu_va = g->sys_mon_va[lf->adapter];
	}
	return rc;
}

static int local_new(nf_runtime *rt, uint32_t gi, uint32_t adapter, uint32_t process, bool opened,
		     nf_handle *out)
{
	struct nf_global_fence *g;
	struct nf_local_fence *lf;
	struct nf_event ev;
	int rc;

	if (nf_eng_grow((void **)&rt->locals, &rt->cap_locals, rt->n_locals + 1, sizeof(*rt->locals)))
		return nf_error_set(&rt->err, NF_ENOMEM, "out of memory");
	lf = &rt->locals[rt->n_locals];
	memset(lf, 0, sizeof(*lf));
	rc = nf_eng_handle_new(rt, NF_OBJ_LOCAL_FENCE, rt->n_locals, &lf->handle);
	if (rc)
		return rc;
	rt->n_locals++;
	g = &rt->globals[gi];
	lf->alive = true;
	lf->global = gi;
	lf->adapter = adapter;
	lf->process = process;
	lf->native = rt->adapters[adapter].native &&
		     !(g->legacy_monitored && adapter == g->creator_adapter);
	rc = fence_map(rt, g, lf);
	if (rc)
		return rc;
	g->refs++;
	g->open_mask |= 1u << adapter;
	if (lf->native)
		g->native_mask |= 1u << adapter;
	*out = lf->handle;
	EV_INIT(ev, FENCE_START);
	ev.f[NFF_FENCE_START_adapter] = adapter;
	ev.f[NFF_FENCE_START_process] = process;
	ev.f[NFF_FENCE_START_fence] = lf->handle;
	ev.f[NFF_FENCE_START_global_fence] = g->handle;
	ev.f[NFF_FENCE_START_type] = g->type;
	ev.f[NFF_FENCE_START_flags] = (g->shared ? 1u : 0u) | (g->cross_adapter ? 2u : 0u) |
				      (lf->native ? 4u : 0u) | (opened ? 8u : 0u);
	ev.f[NFF_FENCE_START_initial_value] = g->current;
	return nf_eng_emit(rt, &ev);
}

int nf_eng_api_hwqueue_create(nf_runtime *rt, uint32_t adapter, uint32_t node, uint32_t engine,
		      const char *name, nf_handle *queue_out, struct nf_error *err)
{
	int rc = nf_eng_check_rt(rt, err);
	struct nf_queue *q;
	struct nf_event ev;
	struct nf_fence_desc pd = { 0 };
	uint32_t gi, qi;

	if (rc)
		return rc;
	if (!queue_out)
		return nf_error_set(err, NF_EINVAL, "nf_hwqueue_create: NULL output");
	if (adapter >= rt->n_adapters)
		return nf_error_set(err, NF_EINVAL, "no adapter %u", adapter);
	if (rt->threaded && rt->n_queues >= rt->cap_queues)
		return nf_error_set(err, NF_ENOMEM, "too many hardware queues for threaded mode (limit %u)",
				    NF_TH_MAX_QUEUES);
	if (nf_eng_grow((void **)&rt->queues, &rt->cap_queues, rt->n_queues + 1, sizeof(*rt->queues)))
		return nf_error_set(err, NF_ENOMEM, "out of memory");
	qi = rt->n_queues;
	q = &rt->queues[qi];
	memset(q, 0, sizeof(*q));
	rc = nf_eng_handle_new(rt, NF_OBJ_QUEUE, qi, &q->handle);
	if (rc)
		return nf_eng_fail(rt, rc, err);
	rt->n_queues++;
	q->adapter = adapter;
	q->node = node;
	q->engine = engine;
	q->native = rt->adapters[adapter].native;
	q->alive = true;
	snprintf(q->name, sizeof(q->name), "%s", name && *name ? name : "queue");
	/* The queue's progress fence is a native fence (NativeProgressFence). */
	rc = global_new(rt, adapter, &pd, &gi);
	if (!rc)
		rc = local_new(rt, gi, adapter, 0, false, &q->progress_fence);
	if (rc)
		return nf_eng_fail(rt, rc, err);
	q = &rt->queues[qi];
	EV_INIT(ev, HWQUEUE_START);
	ev.f[NFF_HWQUEUE_START_adapter] = adapter;
	ev.f[NFF_HWQUEUE_START_node] = node;
	ev.f[NFF_HWQUEUE_START_engine] = engine;
	ev.f[NFF_HWQUEUE_START_hwqueue] = q->handle;
	ev.f[NFF_HWQUEUE_START_progress_fence] = q->progress_fence;
	ev.str = q->name;
	rc = nf_eng_emit(rt, &ev);
	if (rc)
		return nf_eng_fail(rt, rc, err);
	if (q->native) {
		/* Two logs per queue: DxgkDdiSetNativeFenceLogBuffer twice. */
		for (int l = 0; l < 2 && !rc; l++) {
			if (nf_eng_log_alloc(&q->logs[l], l == 0 ? NF_LOG_WAITS : NF_LOG_SIGNALS,
				      rt->adapters[adapter].log_entries))
				return nf_error_set(err, NF_ENOMEM, "out of memory (log buffer)");
			rc = nf_eng_emit_set_log(rt, q, &q->logs[l]);
		}
	}
	if (!rc && rt->threaded) {
		/* Its GPU engine thread, with its own timestamp-fault draws. */
		q->rng = nf_eng_rng_next(rt);
		rc = nf_th_queue_start(rt, q, err);
		if (rc)
			return rc;
	}
	*queue_out = q->handle;
	return nf_eng_fail(rt, rc, err);
}

int nf_eng_api_hwqueue_destroy(nf_runtime *rt, nf_handle queue, struct nf_error *err)
{
	int rc = nf_eng_check_rt(rt, err);
	struct nf_queue *q;
	struct nf_event ev;

	if (rc)
		return rc;
	if (!(q = nf_eng_queue_get(rt, queue, err)))
		return NF_EINVAL;
	uint64_t in_flight = rt->threaded ? nf_th_queue_pending(q) : q->cmd_count;
	if (in_flight)
		return nf_error_set(err, NF_ESTATE, "queue 0x%x still has %llu commands in flight",
				    queue, (unsigned long long)in_flight);
	/* Idle: its engine thread has nothing left to do and can go. It may be
	 * about to take the OS lock (to switch to recreated logs), so the join
	 * happens without it; the queue is already gone for other callers. */
	if (rt->threaded) {
		q->alive = false;
		nf_th_unlock(rt);
		nf_th_queue_stop(rt, q);
		nf_th_lock(rt);
	}
	uint64_t lost = 0;
	rc = nf_eng_queue_read_logs(rt, q, &lost);
	if (!rc)
		rc = nf_eng_overrun_fallback(rt, q->adapter, lost);
	for (int l = 0; l < 2 && !rc && q->native; l++)
		rc = nf_eng_emit_truth_log(rt, q, &q->logs[l]);
	if (rc)
		return nf_eng_fail(rt, rc, err);
	q->alive = false;
	EV_INIT(ev, HWQUEUE_STOP);
	ev.f[NFF_HWQUEUE_STOP_adapter] = q->adapter;
	ev.f[NFF_HWQUEUE_STOP_hwqueue] = q->handle;
	return nf_eng_fail(rt, nf_eng_emit(rt, &ev), err);
}

int nf_eng_api_hwqueue_progress_fence(nf_runtime *rt, nf_handle queue, nf_handle *fence_out,
			      struct nf_error *err)
{
	struct nf_queue *q = nf_eng_queue_get(rt, queue, err);

	if (!q || !fence_out)
		return nf_error_set(err, NF_EINVAL, "invalid argument");
	*fence_out = q->progress_fence;
	return 0;
}

/* ------------------------------------------------------------------ */
/* public API: fences                                                  */

int nf_eng_api_fence_create(nf_runtime *rt, uint32_t adapter, const struct nf_fence_desc *desc,
			    bool legacy_monitored, nf_handle *local_out, struct nf_error *err)
{
	int rc = nf_eng_check_rt(rt, err);
	uint32_t gi;

	if (rc)
		return rc;
	if (!desc || !local_out)
		return nf_error_set(err, NF_EINVAL, "nf_fence_create: NULL argument");
	if (adapter >= rt->n_adapters)
		return nf_error_set(err, NF_EINVAL, "no adapter %u", adapter);
	if (desc->type != NF_FENCE_TYPE_DEFAULT && desc->type != NF_FENCE_TYPE_INTRA_GPU)
		return nf_error_set(err, NF_EINVAL, "unknown native fence type %u", desc->type);
	if (legacy_monitored && desc->type != NF_FENCE_TYPE_DEFAULT)
		return nf_error_set(err, NF_EINVAL, "a legacy monitored fence has no native fence type");
	if (desc->cross_adapter && desc->type != NF_FENCE_TYPE_DEFAULT)
		return nf_error_set(err, NF_EINVAL,
				    "a cross-adapter fence must be of type D3DDDI_NATIVEFENCE_TYPE_DEFAULT");
	if (desc->type == NF_FENCE_TYPE_INTRA_GPU && !rt->adapters[adapter].native)
		return nf_error_set(err, NF_EUNSUPP,
				    "INTRA_GPU fences need an adapter with native fences");
	if (desc->type == NF_FENCE_TYPE_INTRA_GPU && !rt->cfg.os_support_intra_gpu_fence_type)
		return nf_error_set(err, NF_EINVAL,
				    "D3DDDI_NATIVEFENCE_TYPE_INTRA_GPU is not supported by the OS (SupportIntraGpuFenceType is FALSE, as in 24H2): STATUS_INVALID_PARAMETER");
	rc = global_new(rt, adapter, desc, &gi);
	if (!rc) {
		rt->globals[gi].legacy_monitored = legacy_monitored;
		rc = local_new(rt, gi, adapter, desc->process, false, local_out);
	}
	return nf_eng_fail(rt, rc, err);
}

int nf_eng_api_fence_global_handle(nf_runtime *rt, nf_handle local, nf_handle *global_out,
			   struct nf_error *err)
{
	struct nf_local_fence *lf = nf_eng_local_get(rt, local, err);

	if (!lf || !global_out)
		return NF_EINVAL;
	*global_out = rt->globals[lf->global].handle;
	return 0;
}

int nf_eng_api_fence_open(nf_runtime *rt, uint32_t adapter, uint32_t process, nf_handle global,
		  nf_handle *local_out, struct nf_error *err)
{
	int rc = nf_eng_check_rt(rt, err);
	uint32_t gi;

	if (rc)
		return rc;
	if (!local_out)
		return nf_error_set(err, NF_EINVAL, "nf_fence_open: NULL output");
	if (adapter >= rt->n_adapters)
		return nf_error_set(err, NF_EINVAL, "no adapter %u", adapter);
	if (nf_eng_handle_lookup(rt, global, NF_OBJ_GLOBAL_FENCE, &gi) || !rt->globals[gi].alive)
		return nf_error_set(err, NF_EINVAL, "invalid global fence handle 0x%x", global);
	struct nf_global_fence *g = &rt->globals[gi];
	if (!g->shared && !g->cross_adapter)
		return nf_error_set(err, NF_EINVAL, "fence 0x%x is not shareable", global);
	if (adapter != g->creator_adapter && !g->cross_adapter)
		return nf_error_set(err, NF_EINVAL,
				    "fence 0x%x is not a cross-adapter fence and cannot be opened on adapter %u",
				    global, adapter);
	rc = local_new(rt, gi, adapter, process, true, local_out);
	if (!rc) {
		g = &rt->globals[gi];
		/* This adapter's own MonitoredValue copy. */
		g->monitored[adapter] = UINT64_MAX;
		rc = nf_eng_update_monitored(rt, g, NULL);
	}
	return nf_eng_fail(rt, rc, err);
}


int nf_eng_api_fence_close(nf_runtime *rt, nf_handle local, struct nf_error *err)
{
	int rc = nf_eng_check_rt(rt, err);
	struct nf_local_fence *lf;
	struct nf_global_fence *g;
	struct nf_event ev;

	if (rc)
		return rc;
	if (!(lf = nf_eng_local_get(rt, local, err)))
		return NF_EINVAL;
	g = &rt->globals[lf->global];
	lf->alive = false;
	g->refs--;
	/* Is the fence still open on this adapter through another handle? */
	bool still = false, still_native = false;
	for (uint32_t i = 0; i < rt->n_locals; i++)
		if (rt->locals[i].alive && rt->locals[i].global == lf->global &&
		    rt->locals[i].adapter == lf->adapter) {
			still = true;
			still_native |= rt->locals[i].native;
		}
	if (!still)
		g->open_mask &= ~(1u << lf->adapter);
	if (!still_native)
		g->native_mask &= ~(1u << lf->adapter);
	EV_INIT(ev, FENCE_STOP);
	ev.f[NFF_FENCE_STOP_adapter] = lf->adapter;
	ev.f[NFF_FENCE_STOP_process] = lf->process;
	ev.f[NFF_FENCE_STOP_fence] = lf->handle;
	ev.f[NFF_FENCE_STOP_global_fence] = g->handle;
	ev.f[NFF_FENCE_STOP_global_destroyed] = g->refs == 0;
	rc = nf_eng_emit(rt, &ev);
	if (g->refs == 0) {
		/* DxgkDdiDestroyNativeFence: release the waiters still there (status 2,
		 * fence closed). They leave the list: an async waiter belongs to its
		 * event, which frees it once (nf_event_close or destroy). */
		atomic_store(&g->alive, false);
		nf_th_gpu_notify(rt, (uint32_t)(g - rt->globals)); /* GPU waits on it pass */
		for (struct nf_cpu_waiter *w = g->waiters; w; w = w->next)
			if (!w->done) {
				w->done = true;
				w->status = 2;
				if (!rc)
					rc = nf_eng_emit_unwait(rt, w, g->current);
			}
		g->waiters = NULL;
		atomic_store(&g->wait_min, UINT64_MAX);
		if (rt->threaded)
			nf_th_cpu_wake(rt);
	}
	return nf_eng_fail(rt, rc, err);
}

int nf_eng_api_fence_gpu_va(nf_runtime *rt, nf_handle local, struct nf_fence_va *out,
			    struct nf_error *err)
{
	struct nf_local_fence *lf = nf_eng_local_get(rt, local, err);

	if (!lf)
		return NF_EINVAL;
	if (!out)
		return nf_error_set(err, NF_EINVAL, "nf_fence_gpu_va: NULL output");
	*out = lf->va;
	return 0;
}

int nf_eng_api_fence_read(nf_runtime *rt, nf_handle local, uint64_t *current, uint64_t *monitored,
		  struct nf_error *err)
{
	struct nf_local_fence *lf = nf_eng_local_get(rt, local, err);

	if (!lf)
		return NF_EINVAL;
	const struct nf_global_fence *g = &rt->globals[lf->global];
	if (current)
		*current = atomic_load(&g->current);
	if (monitored)
		*monitored = g->monitored[lf->adapter];
	return 0;
}
