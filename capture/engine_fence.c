/*
 * The native fence engine: fence values. CurrentValue writes, the 32-bit
 * window, CPU waiters satisfied by a value and the MonitoredValue update with
 * the write-barrier-resample protocol. Split out of engine.c (issue #27).
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
/* fence values                                                        */

/* The OS's 64-bit view of a fence written by a GPU with 32-bit atomics:
 * serial-number arithmetic around the last value it saw. */
static uint64_t extend32(uint64_t last64, uint32_t cur32)
{
	return last64 + (uint64_t)(int64_t)(int32_t)(cur32 - (uint32_t)last64);
}

bool nf_eng_value_reached(const struct nf_adapter *a, const struct nf_global_fence *g,
			  uint64_t value)
{
	if (a->atomics32)
		return (int32_t)(atomic_load(&g->current32) - (uint32_t)value) >= 0;
	return atomic_load(&g->current) >= value;
}

bool nf_eng_gpu_wait_passes(const struct nf_runtime *rt, uint32_t adapter, uint32_t gi,
			    uint64_t value)
{
	const struct nf_global_fence *g = &rt->globals[gi];

	return !atomic_load(&g->alive) || nf_eng_value_reached(&rt->adapters[adapter], g, value);
}

/*
 * Writes CurrentValue as the given adapter's GPU (or the OS for it) would: one
 * atomic 64-bit store (never torn; sequentially consistent, so it is the
 * "write" half of the write-then-read-MonitoredValue pairing). A 32-bit GPU
 * writes the low half; the OS's 64-bit view is extended from the last one, in a
 * compare-and-swap loop because several engines may signal one fence at once.
 */
void nf_eng_fence_write(struct nf_runtime *rt, struct nf_global_fence *g, uint32_t adapter,
			uint64_t value)
{
	if (!rt->threaded) {
		/* Deterministic: one thread, no other side to order the stores
		 * with, so no locked instruction (the same values). */
		uint64_t v = rt->adapters[adapter].atomics32
			     ? extend32(atomic_load_explicit(&g->current, memory_order_relaxed),
					(uint32_t)value)
			     : value;

		atomic_store_explicit(&g->current32, (uint32_t)value, memory_order_relaxed);
		atomic_store_explicit(&g->current, v, memory_order_relaxed);
		return;
	}
	if (rt->adapters[adapter].atomics32) {
		uint64_t old = atomic_load(&g->current);

		atomic_store(&g->current32, (uint32_t)value);
		while (!atomic_compare_exchange_weak(&g->current, &old,
						     extend32(old, (uint32_t)value)))
			;
	} else {
		atomic_store(&g->current32, (uint32_t)value);
		atomic_store(&g->current, value);
	}
}

/* Values must stay within UINT32_MAX/2 of the last signaled value on a
 * 32-bit GPU, or the serial-number comparison would be ambiguous. */
int nf_eng_check_window(struct nf_runtime *rt, const struct nf_global_fence *g, uint32_t adapter,
			uint64_t value, struct nf_error *err)
{
	if (!rt->adapters[adapter].atomics32)
		return 0;
	uint64_t d = value > g->current ? value - g->current : g->current - value;
	if (d > UINT32_MAX / 2)
		return nf_error_set(err, NF_EINVAL,
				    "fence value %llu is more than UINT32_MAX/2 from the last signaled value %llu on an adapter without 64-bit atomics",
				    (unsigned long long)value, (unsigned long long)g->current);
	return 0;
}

static uint64_t min_waiter_value(const struct nf_global_fence *g)
{
	uint64_t m = UINT64_MAX;

	for (const struct nf_cpu_waiter *w = g->waiters; w; w = w->next)
		if (!w->done && w->value < m)
			m = w->value;
	return m;
}


/* Releases the CPU waiters the fence's CurrentValue satisfies. */
int nf_eng_satisfy_cpu_waiters(struct nf_runtime *rt, struct nf_global_fence *g, uint32_t *woken)
{
	struct nf_cpu_waiter **pp = &g->waiters;
	bool any = false;
	int rc = 0;

	while (*pp && !rc) {
		struct nf_cpu_waiter *w = *pp;

		if (!w->done && g->current >= w->value) {
			any = true;
			w->done = true;
			w->status = 0;
			rc = nf_eng_emit_unwait(rt, w, g->current);
			STAT(rt, cpu_wakeups);
			if (woken)
				(*woken)++;
			if (w->cpu_event) {
				uint32_t ei;
				if (!nf_eng_handle_lookup(rt, w->cpu_event, NF_OBJ_CPU_EVENT, &ei))
					rt->cpu_events[ei].signaled = true;
			}
		}
		if (w->done) {
			*pp = w->next;
			/* Blocking waiters are owned by their caller's frame; async ones by the event. */
			continue;
		}
		pp = &w->next;
	}
	if (any && rt->threaded)
		nf_th_cpu_wake(rt); /* the blocked CPU threads re-check their waiter */
	return rc;
}

/*
 * The OS's MonitoredValue update on every adapter that has the fence open:
 * write MonitoredValue (DxgkDdiUpdateMonitoredValues), barrier, resample
 * CurrentValue, satisfy the waiters that unblocks; repeat until stable.
 *
 * Why no wake-up is lost (threaded mode, where the GPU does not take the OS
 * lock): the GPU stores CurrentValue then loads MonitoredValue; the OS stores
 * MonitoredValue then loads CurrentValue; all four are sequentially consistent,
 * so at least one side sees the other's store: either the GPU raises the
 * interrupt or the OS's resample satisfies the waiter itself.
 *
 * wait_min (the smallest outstanding waited value) is what the GPU side uses
 * to tell whether an interrupt it raises is needed: it is lowered before
 * MonitoredValue is lowered and raised only after MonitoredValue is raised.
 */
int nf_eng_update_monitored(struct nf_runtime *rt, struct nf_global_fence *g, uint32_t *woken)
{
	for (int round = 0; round < 64; round++) {
		uint64_t wmin = min_waiter_value(g);
		uint64_t mv = g->cross_adapter ? 0 : (wmin == UINT64_MAX ? UINT64_MAX : wmin - 1);
		bool changed = false;

		if (wmin < atomic_load(&g->wait_min))
			atomic_store(&g->wait_min, wmin);
		for (uint32_t a = 0; a < rt->n_adapters; a++) {
			/* UpdateMonitoredValues is a native-fence DDI: an adapter that
			 * holds the fence as a legacy monitored fence gets no call. */
			if (!(g->native_mask & (1u << a)) || atomic_load(&g->monitored[a]) == mv)
				continue;
			struct nf_event ev;

			atomic_store(&g->monitored[a], mv);   /* 1. write MonitoredValue */
			atomic_thread_fence(memory_order_seq_cst); /* 2. barrier */
			EV_INIT(ev, UPDATE_MONITORED_VALUES);
			ev.f[NFF_UPDATE_MONITORED_VALUES_adapter] = a;
			ev.f[NFF_UPDATE_MONITORED_VALUES_global_fence] = g->handle;
			ev.f[NFF_UPDATE_MONITORED_VALUES_monitored_value] = mv;
			ev.f[NFF_UPDATE_MONITORED_VALUES_current_value] =
				atomic_load(&g->current); /* 3. resample */
			int rc = nf_eng_emit(rt, &ev);
			if (rc)
				return rc;
			changed = true;
		}
		if (wmin > atomic_load(&g->wait_min))
			atomic_store(&g->wait_min, wmin);
		/* 4. satisfy what the resampled CurrentValue unblocks. */
		uint32_t before = woken ? *woken : 0, n = 0;
		int rc = nf_eng_satisfy_cpu_waiters(rt, g, &n);
		if (rc)
			return rc;
		if (woken)
			*woken = before + n;
		if (!changed && n == 0)
			return 0;
	}
	return 0;
}
