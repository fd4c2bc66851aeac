/*
 * The native fence engine: the native fence signaled interrupt and the OS's
 * handling of it (optimized and fence-array payloads, the overrun fallback,
 * cross-adapter propagation). Split out of engine.c (issue #27).
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
/* interrupts and the OS's handling of them                             */

bool nf_eng_fence_has_cpu_need(const struct nf_global_fence *g, uint64_t value)
{
	if (g->cross_adapter)
		return true;
	for (const struct nf_cpu_waiter *w = g->waiters; w; w = w->next)
		if (!w->done && w->value <= value)
			return true;
	return false;
}

/* Propagates a cross-adapter fence's new value to the other adapters that
 * opened it: DxgkDdiUpdateCurrentValuesFromCpu with NotificationOnly, so their
 * KMD rescans the run list. */
int nf_eng_propagate_cross_adapter(struct nf_runtime *rt, struct nf_global_fence *g,
				   uint32_t from_adapter)
{
	if (!g->cross_adapter)
		return 0;
	for (uint32_t a = 0; a < rt->n_adapters; a++) {
		if (a == from_adapter || !(g->open_mask & (1u << a)))
			continue;
		struct nf_event ev;

		EV_INIT(ev, UPDATE_CURRENT_VALUES);
		ev.f[NFF_UPDATE_CURRENT_VALUES_adapter] = a;
		ev.f[NFF_UPDATE_CURRENT_VALUES_global_fence] = g->handle;
		ev.f[NFF_UPDATE_CURRENT_VALUES_value] = g->current;
		ev.f[NFF_UPDATE_CURRENT_VALUES_flags] =
			rt->adapters[a].native ? NF_UPDATE_NOTIFICATION_ONLY : 0;
		int rc = nf_eng_emit(rt, &ev);
		if (!rc)
			rc = nf_eng_wake_gpu_waiters(rt, g, a);
		if (rc)
			return rc;
	}
	return 0;
}

/* The OS evaluates the CPU waiters of one fence: satisfy what CurrentValue
 * unblocks, then the MonitoredValue protocol. */
static int evaluate_fence(struct nf_runtime *rt, struct nf_global_fence *o, uint32_t *woken)
{
	int rc = nf_eng_satisfy_cpu_waiters(rt, o, woken);

	return rc ? rc : nf_eng_update_monitored(rt, o, woken);
}

/* Does the adapter hold the fence open as a native fence (legacy: or as a
 * legacy monitored fence too)? */
static bool fence_on_adapter(const struct nf_global_fence *o, uint32_t adapter, bool legacy)
{
	return atomic_load(&o->alive) &&
	       ((o->native_mask >> adapter) & 1u || (legacy && (o->open_mask >> adapter) & 1u));
}

/*
 * "If an overrun occurred ... the OS scans all the fences and determines which
 * waiters were unblocked": every native fence of the device (and, when the
 * interrupt asked for it, its legacy monitored fences).
 */
static int scan_device(struct nf_runtime *rt, uint32_t adapter, bool legacy, uint32_t *woken)
{
	int rc = 0;

	for (uint32_t i = 0; i < rt->n_globals && !rc; i++)
		if (fence_on_adapter(&rt->globals[i], adapter, legacy))
			rc = evaluate_fence(rt, &rt->globals[i], woken);
	return rc;
}

/* A read outside an interrupt (periodic, final, before a log is recreated or
 * its queue destroyed) found an overrun: the same fallback scan. */
int nf_eng_overrun_fallback(struct nf_runtime *rt, uint32_t adapter, uint64_t lost)
{
	if (!lost)
		return 0;
	for (uint32_t i = 0; i < rt->n_queues; i++)
		if (rt->queues[i].adapter == adapter)
			rt->queues[i].n_pend = 0; /* the scan covers what they named */
	return scan_device(rt, adapter, false, NULL);
}

/*
 * Handles a native fence signaled interrupt raised by queue qi. gi is the
 * fence whose signal raised it: the OS uses it only where the payload names
 * it (a fence array), never for an optimized interrupt (that names a queue).
 */
int nf_eng_handle_interrupt(struct nf_runtime *rt, uint32_t qi, uint32_t gi)
{
	struct nf_queue *q = &rt->queues[qi];
	struct nf_adapter *a = &rt->adapters[q->adapter];
	struct nf_global_fence *g = &rt->globals[gi];
	enum nf_interrupt_payload payload = a->desc.interrupt_payload;
	uint32_t woken = 0, fences[1] = { g->handle };
	uint64_t lost = 0;
	bool optimized = a->optimized, scan_engine = false, null_array = false, legacy = false;
	int rc = 0;
	struct nf_event ev;

	STAT(rt, interrupts);
	if (g->legacy_monitored && g->creator_adapter == q->adapter &&
	    payload != NF_IRQ_NULL_ARRAY_LEGACY) {
		/* A legacy monitored fence's GPU signal raised
		 * DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED (no event of its own in
		 * the schema: its CPU_UNWAITs show it): the OS evaluates the
		 * legacy monitored fence waiters of the adapter. */
		for (uint32_t i = 0; i < rt->n_globals && !rc; i++) {
			struct nf_global_fence *o = &rt->globals[i];

			if (o == g || (atomic_load(&o->alive) && ((o->open_mask >> q->adapter) & 1u) &&
				       !((o->native_mask >> q->adapter) & 1u)))
				rc = evaluate_fence(rt, o, NULL);
		}
		return rc ? rc : nf_eng_propagate_cross_adapter(rt, g, q->adapter);
	}
	/* Which logs the OS scans. */
	if (optimized)
		scan_engine = payload == NF_IRQ_OPTIMIZED_NULL_QUEUE;
	else {
		null_array = payload == NF_IRQ_NULL_ARRAY || payload == NF_IRQ_NULL_ARRAY_LEGACY;
		legacy = payload == NF_IRQ_NULL_ARRAY_LEGACY;
	}
	for (uint32_t i = 0; i < rt->n_queues && !rc; i++) {
		struct nf_queue *o = &rt->queues[i];

		if (!o->alive || o->adapter != q->adapter)
			continue;
		if (optimized && !scan_engine && o != q)
			continue;
		if (optimized && scan_engine && (o->node != q->node || o->engine != q->engine))
			continue;
		/* Non-optimized: the OS scans the logs of every queue of the device. */
		rc = nf_eng_queue_read_logs(rt, o, &lost);
	}
	if (rc)
		return rc;
	/*
	 * Whose waiters the OS evaluates: after an overrun every fence of the
	 * device; with a NULL array every native fence with waiters (legacy
	 * monitored fences too with EvaluateLegacyMonitoredFences); with a fence
	 * array the fence named; optimized, the fences whose signals it read from
	 * the scanned queues' logs since their last update (E1..E4, step 5).
	 */
	if (lost || null_array) {
		rc = scan_device(rt, q->adapter, legacy, &woken);
		for (uint32_t i = 0; optimized && i < rt->n_queues; i++)
			if (rt->queues[i].adapter == q->adapter)
				rt->queues[i].n_pend = 0;
	} else if (optimized) {
		for (uint32_t i = 0; i < rt->n_queues && !rc; i++) {
			struct nf_queue *o = &rt->queues[i];

			if (o->adapter != q->adapter || (o != q && !scan_engine) ||
			    (scan_engine && (o->node != q->node || o->engine != q->engine)))
				continue;
			/* In fence order, each once. */
			if (o->n_pend > 1)
				qsort(o->pend, o->n_pend, sizeof(*o->pend), nf_eng_u32_cmp);
			for (uint32_t k = 0; k < o->n_pend && !rc; k++) {
				struct nf_global_fence *f = &rt->globals[o->pend[k]];

				if ((k && o->pend[k] == o->pend[k - 1]) || !atomic_load(&f->alive))
					continue;
				rc = evaluate_fence(rt, f, &woken);
				if (!rc)
					rc = nf_eng_propagate_cross_adapter(rt, f, q->adapter);
			}
			o->n_pend = 0;
		}
	} else {
		rc = evaluate_fence(rt, g, &woken);
	}
	/* The fence named (or, NULL array or overrun, the one that raised it):
	 * its new value goes to the other adapters. */
	if (!rc && (!optimized || lost))
		rc = nf_eng_propagate_cross_adapter(rt, g, q->adapter);
	if (rc)
		return rc;
	EV_INIT(ev, FENCE_INTERRUPT);
	ev.f[NFF_FENCE_INTERRUPT_adapter] = q->adapter;
	ev.f[NFF_FENCE_INTERRUPT_node] = q->node;
	ev.f[NFF_FENCE_INTERRUPT_engine] = q->engine;
	ev.f[NFF_FENCE_INTERRUPT_hwqueue] = optimized && !scan_engine ? q->handle : UINT32_MAX;
	ev.f[NFF_FENCE_INTERRUPT_optimized] = optimized;
	ev.f[NFF_FENCE_INTERRUPT_evaluate_legacy] = legacy;
	ev.f[NFF_FENCE_INTERRUPT_fence_array_null] = optimized || null_array;
	ev.f[NFF_FENCE_INTERRUPT_waiters_woken] = woken;
	ev.f[NFF_FENCE_INTERRUPT_signaled_count] = optimized || null_array ? 0 : 1;
	ev.u32s = fences;
	return nf_eng_emit(rt, &ev);
}
