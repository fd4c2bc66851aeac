/*
 * The native fence engine's public API for work: GPU waits, signals and work
 * queued on hardware queues, CPU waits, events and CPU signals. Split out of
 * engine.c (issue #27).
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
/* public API: queue work                                              */

static int queue_push(nf_runtime *rt, struct nf_queue *q, const struct nf_cmd *c,
		      struct nf_error *err)
{
	if (rt->threaded)
		return nf_th_queue_push(rt, q, c, err);
	if (q->cmd_count == q->cmd_cap) {
		uint32_t ncap = q->cmd_cap ? q->cmd_cap * 2 : 64;
		struct nf_cmd *n = ncap > NF_QUEUE_CAP_MAX * 64 ? NULL
				   : malloc((size_t)ncap * sizeof(*n));
		if (!n) {
			if (ncap > NF_QUEUE_CAP_MAX * 64)
				return nf_error_set(err, NF_ENOMEM,
						    "queue '%s' holds too many commands (%u): the GPU is blocked or too slow",
						    q->name, q->cmd_count);
			return nf_error_set(err, NF_ENOMEM, "out of memory");
		}
		for (uint32_t i = 0; i < q->cmd_count; i++)
			n[i] = q->cmds[(q->cmd_head + i) % (q->cmd_cap ? q->cmd_cap : 1)];
		free(q->cmds);
		q->cmds = n;
		q->cmd_head = 0;
		q->cmd_cap = ncap;
	}
	q->cmds[(q->cmd_head + q->cmd_count) & (q->cmd_cap - 1)] = *c; /* a power of two */
	q->cmd_count++;
	return nf_eng_fail(rt, nf_eng_queue_schedule(rt, q, c->available_ns), err);
}

static int queue_fence_op(nf_runtime *rt, nf_handle queue, nf_handle fence, uint64_t value,
			  enum nf_cmd_type type, struct nf_error *err)
{
	int rc = nf_eng_check_rt(rt, err);
	struct nf_queue *q;
	struct nf_local_fence *lf;
	struct nf_event ev;

	if (rc)
		return rc;
	if (!(q = nf_eng_queue_get(rt, queue, err)) || !(lf = nf_eng_local_get(rt, fence, err)))
		return NF_EINVAL;
	if (lf->adapter != q->adapter)
		return nf_error_set(err, NF_EINVAL,
				    "fence handle 0x%x is on adapter %u but queue 0x%x is on adapter %u",
				    fence, lf->adapter, queue, q->adapter);
	if (rt->cfg.max_operations && rt->stats.operations >= rt->cfg.max_operations)
		return nf_error_set(err, NF_ENOMEM, "operation limit of %llu reached",
				    (unsigned long long)rt->cfg.max_operations);
	struct nf_global_fence *g = &rt->globals[lf->global];
	rc = nf_eng_check_window(rt, g, q->adapter, value, err);
	if (rc)
		return rc;
	uint64_t now = now_ns(rt);
	struct nf_cmd c = { type, fence, value, 0, now,
			    now + rt->adapters[q->adapter].desc.submit_latency_ns, lf->global,
			    lf->native };
	STAT(rt, operations);
	if (q->native && lf->native) {
		EV_INIT(ev, FENCE_WAIT_QUEUED);
		if (type == NF_CMD_SIGNAL)
			ev.id = NF_EV_FENCE_SIGNAL_QUEUED;
		/* FENCE_WAIT_QUEUED and FENCE_SIGNAL_QUEUED share their layout. */
		ev.f[NFF_FENCE_WAIT_QUEUED_adapter] = q->adapter;
		ev.f[NFF_FENCE_WAIT_QUEUED_hwqueue] = q->handle;
		ev.f[NFF_FENCE_WAIT_QUEUED_fence] = fence;
		ev.f[NFF_FENCE_WAIT_QUEUED_value] = value;
		ev.f[NFF_FENCE_WAIT_QUEUED_thread] = cur_thread(rt);
		rc = nf_eng_emit_at(rt, &ev, now);
	} else if (type == NF_CMD_WAIT) {
		/* Legacy: the OS tracks the wait and holds the queue's later work. */
		EV_INIT(ev, GPU_WAIT_LEGACY);
		ev.f[NFF_GPU_WAIT_LEGACY_adapter] = q->adapter;
		ev.f[NFF_GPU_WAIT_LEGACY_hwqueue] = q->handle;
		ev.f[NFF_GPU_WAIT_LEGACY_fence] = fence;
		ev.f[NFF_GPU_WAIT_LEGACY_value] = value;
		ev.f[NFF_GPU_WAIT_LEGACY_released] = 0;
		rc = nf_eng_emit(rt, &ev);
	}
	if (rc)
		return nf_eng_fail(rt, rc, err);
	return queue_push(rt, q, &c, err);
}

_Static_assert((int)NFF_FENCE_WAIT_QUEUED_value == (int)NFF_FENCE_SIGNAL_QUEUED_value &&
	       (int)NFF_FENCE_WAIT_QUEUED_thread == (int)NFF_FENCE_SIGNAL_QUEUED_thread,
	       "queued events share a layout");

int nf_eng_api_queue_wait(nf_runtime *rt, nf_handle queue, nf_handle fence, uint64_t value,
		  struct nf_error *err)
{
	return queue_fence_op(rt, queue, fence, value, NF_CMD_WAIT, err);
}

int nf_eng_api_queue_signal(nf_runtime *rt, nf_handle queue, nf_handle fence, uint64_t value,
		    struct nf_error *err)
{
	return queue_fence_op(rt, queue, fence, value, NF_CMD_SIGNAL, err);
}

int nf_eng_api_queue_work(nf_runtime *rt, nf_handle queue, uint64_t gpu_ns, struct nf_error *err)
{
	int rc = nf_eng_check_rt(rt, err);
	struct nf_queue *q;

	if (rc)
		return rc;
	if (!(q = nf_eng_queue_get(rt, queue, err)))
		return NF_EINVAL;
	uint64_t now = now_ns(rt);
	struct nf_cmd c = { NF_CMD_WORK, 0, 0, gpu_ns, now,
			    now + rt->adapters[q->adapter].desc.submit_latency_ns, 0, false };
	return queue_push(rt, q, &c, err);
}

/* ------------------------------------------------------------------ */
/* public API: CPU waits and signals                                   */

static int cpu_fence(nf_runtime *rt, nf_handle fence, struct nf_local_fence **lf_out,
		     struct nf_error *err)
{
	int rc = nf_eng_check_rt(rt, err);

	if (rc)
		return rc;
	if (!(*lf_out = nf_eng_local_get(rt, fence, err)))
		return NF_EINVAL;
	if (rt->globals[(*lf_out)->global].type == NF_FENCE_TYPE_INTRA_GPU)
		return nf_error_set(err, NF_EINVAL,
				    "fence 0x%x is INTRA_GPU: CPU waits and signals are not allowed",
				    fence);
	return 0;
}

int nf_eng_emit_unwait(nf_runtime *rt, const struct nf_cpu_waiter *w, uint64_t current)
{
	struct nf_event ev;

	EV_INIT(ev, CPU_UNWAIT);
	ev.f[NFF_CPU_UNWAIT_adapter] = w->adapter;
	ev.f[NFF_CPU_UNWAIT_fence] = w->local;
	ev.f[NFF_CPU_UNWAIT_value] = w->value;
	ev.f[NFF_CPU_UNWAIT_thread] = w->thread;
	ev.f[NFF_CPU_UNWAIT_wait_id] = w->wait_id;
	ev.f[NFF_CPU_UNWAIT_status] = (uint64_t)w->status;
	ev.f[NFF_CPU_UNWAIT_current_value] = current;
	return nf_eng_emit(rt, &ev);
}

/* Registers a CPU waiter: VidSch tracks it, then the MonitoredValue protocol. */
static int waiter_add(nf_runtime *rt, struct nf_local_fence *lf, uint64_t value,
		      struct nf_cpu_waiter *w, nf_handle cpu_event, uint64_t timeout_ns, bool async)
{
	struct nf_global_fence *g = &rt->globals[lf->global];
	struct nf_event ev;
	int rc;

	memset(w, 0, sizeof(*w));
	w->wait_id = rt->next_wait_id++;
	w->global = lf->global;
	w->local = lf->handle;
	w->adapter = lf->adapter;
	w->value = value;
	w->thread = cur_thread(rt);
	w->cpu_event = cpu_event;
	STAT(rt, cpu_waits);
	EV_INIT(ev, CPU_WAIT);
	ev.f[NFF_CPU_WAIT_adapter] = lf->adapter;
	ev.f[NFF_CPU_WAIT_fence] = lf->handle;
	ev.f[NFF_CPU_WAIT_value] = value;
	ev.f[NFF_CPU_WAIT_thread] = cur_thread(rt);
	ev.f[NFF_CPU_WAIT_wait_id] = w->wait_id;
	ev.f[NFF_CPU_WAIT_timeout_ns] = timeout_ns;
	ev.f[NFF_CPU_WAIT_async] = async;
	rc = nf_eng_emit(rt, &ev);
	if (rc)
		return rc;
	w->next = g->waiters;
	g->waiters = w;
	/* Write MonitoredValue, barrier, resample CurrentValue, satisfy. */
	return nf_eng_update_monitored(rt, g, NULL);
}

static void waiter_unlink(struct nf_global_fence *g, struct nf_cpu_waiter *w)
{
	for (struct nf_cpu_waiter **pp = &g->waiters; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			return;
		}
}

int nf_eng_wait_timeout(struct nf_runtime *rt, uint32_t gi, uint32_t wait_id)
{
	struct nf_global_fence *g = &rt->globals[gi];

	for (struct nf_cpu_waiter *w = g->waiters; w; w = w->next)
		if (w->wait_id == wait_id && !w->done) {
			w->done = true;
			w->status = 1;
			STAT(rt, cpu_timeouts);
			waiter_unlink(g, w);
			int rc = nf_eng_emit_unwait(rt, w, g->current);
			if (!rc)
				rc = nf_eng_update_monitored(rt, g, NULL);
			return rc;
		}
	return 0;
}

int nf_eng_api_cpu_wait(nf_runtime *rt, nf_handle fence, uint64_t value, uint64_t timeout_ns,
		struct nf_error *err)
{
	struct nf_local_fence *lf;
	struct nf_cpu_waiter w;
	int rc = cpu_fence(rt, fence, &lf, err);

	if (rc)
		return rc;
	uint32_t gi = lf->global;
	rc = waiter_add(rt, lf, value, &w, 0, timeout_ns, false);
	if (rc)
		goto out_unlink; /* it may be linked already: never leave it behind */
	uint64_t now = now_ns(rt);
	uint64_t deadline = timeout_ns == NF_NO_TIMEOUT || timeout_ns > UINT64_MAX - now
			    ? UINT64_MAX : now + timeout_ns;
	/* Threaded: this thread really blocks; the interrupt thread, a CPU signal
	 * or the MonitoredValue resample marks it done and wakes it. */
	while (rt->threaded && !w.done) {
		if (nf_th_interrupted(rt)) {
			waiter_unlink(&rt->globals[gi], &w);
			return nf_error_set(err, NF_EINTR, "CPU wait on fence 0x%x for %llu interrupted",
					    fence, (unsigned long long)value);
		}
		if (!nf_th_cpu_block(rt, deadline) && !w.done) {
			rc = nf_eng_wait_timeout(rt, gi, w.wait_id);
			if (rc)
				goto out_unlink;
		}
	}
	/* Deterministic: run the world until satisfied or the deadline. */
	uint32_t polls = 0;
	while (!w.done) {
		if (nf_eng_sim_interrupted(rt, &polls)) {
			rc = NF_EINTR;
			goto out_unlink;
		}
		if (!rt->heap_len || sim_top(rt)->time > deadline || !rt->active_sims) {
			if (deadline == UINT64_MAX) {
				waiter_unlink(&rt->globals[gi], &w);
				nf_eng_update_monitored(rt, &rt->globals[gi], NULL);
				return nf_error_set(err, NF_ESTATE,
						    "CPU wait on fence 0x%x for %llu can never be satisfied: no GPU work is pending",
						    fence, (unsigned long long)value);
			}
			rc = nf_eng_sim_run_until(rt, deadline);
			if (rc)
				goto out_unlink;
			if (!w.done) {
				rc = nf_eng_wait_timeout(rt, gi, w.wait_id);
				if (rc)
					goto out_unlink;
			}
			break;
		}
		struct nf_sim_event se = nf_eng_sim_pop(rt);
		if (se.time > rt->now)
			rt->now = se.time;
		rc = nf_eng_sim_dispatch(rt, &se);
		if (rc)
			goto out_unlink;
	}
	waiter_unlink(&rt->globals[gi], &w);
	if (w.status == 1)
		return nf_error_set(err, NF_ETIMEOUT, "CPU wait on fence 0x%x for %llu timed out",
				    fence, (unsigned long long)value);
	if (w.status == 2)
		return nf_error_set(err, NF_ESTATE, "fence 0x%x was destroyed during the wait", fence);
	return 0;
out_unlink:
	/* A failure (the event sink's, say) while waiting: the waiter lives on
	 * this stack, so it must not stay linked to the fence. */
	waiter_unlink(&rt->globals[gi], &w);
	if (rc == NF_EINTR && !rt->err.code)
		return nf_error_set(err, NF_EINTR, "CPU wait on fence 0x%x for %llu interrupted", fence,
				    (unsigned long long)value);
	return nf_eng_fail(rt, rc, err);
}

int nf_eng_api_cpu_wait_async(nf_runtime *rt, nf_handle fence, uint64_t value, nf_handle *event_out,
		      struct nf_error *err)
{
	struct nf_local_fence *lf;
	int rc = cpu_fence(rt, fence, &lf, err);
	nf_handle eh = 0;

	if (rc)
		return rc;
	if (!event_out)
		return nf_error_set(err, NF_EINVAL, "nf_cpu_wait_async: NULL output");
	if (nf_eng_grow((void **)&rt->cpu_events, &rt->cap_cpu_events, rt->n_cpu_events + 1,
		 sizeof(*rt->cpu_events)))
		return nf_error_set(err, NF_ENOMEM, "out of memory");
	struct nf_cpu_waiter *w = malloc(sizeof(*w));
	if (!w)
		return nf_error_set(err, NF_ENOMEM, "out of memory");
	rc = nf_eng_handle_new(rt, NF_OBJ_CPU_EVENT, rt->n_cpu_events, &eh);
	if (rc) {
		free(w);
		return nf_eng_fail(rt, rc, err);
	}
	struct nf_cpu_event *eo = &rt->cpu_events[rt->n_cpu_events++];
	eo->alive = true;
	eo->waiter = w;
	rc = waiter_add(rt, lf, value, w, eh, NF_NO_TIMEOUT, true);
	if (rc)
		return nf_eng_fail(rt, rc, err);
	if (w->done)
		eo->signaled = true;
	*event_out = eh;
	return 0;
}

int nf_eng_api_event_wait(nf_runtime *rt, nf_handle event, uint64_t timeout_ns, struct nf_error *err)
{
	int rc = nf_eng_check_rt(rt, err);
	uint32_t ei;

	if (rc)
		return rc;
	if (nf_eng_handle_lookup(rt, event, NF_OBJ_CPU_EVENT, &ei) || !rt->cpu_events[ei].alive)
		return nf_error_set(err, NF_EINVAL, "invalid event handle 0x%x", event);
	uint64_t now = now_ns(rt);
	uint64_t deadline = timeout_ns == NF_NO_TIMEOUT || timeout_ns > UINT64_MAX - now
			    ? UINT64_MAX : now + timeout_ns;
	while (rt->threaded && !rt->cpu_events[ei].signaled) {
		if (!rt->cpu_events[ei].alive)
			return nf_error_set(err, NF_ESTATE, "event 0x%x was closed during the wait", event);
		if (nf_th_interrupted(rt))
			return nf_error_set(err, NF_EINTR, "wait on event 0x%x interrupted", event);
		if (!nf_th_cpu_block(rt, deadline) && !rt->cpu_events[ei].signaled)
			return nf_error_set(err, NF_ETIMEOUT, "wait on event 0x%x timed out", event);
	}
	uint32_t polls = 0;
	while (!rt->cpu_events[ei].signaled) {
		if (nf_eng_sim_interrupted(rt, &polls))
			return nf_error_set(err, NF_EINTR, "wait on event 0x%x interrupted", event);
		if (!rt->heap_len || sim_top(rt)->time > deadline || !rt->active_sims) {
			if (deadline == UINT64_MAX)
				return nf_error_set(err, NF_ESTATE,
						    "event 0x%x can never be signalled: no GPU work is pending",
						    event);
			rc = nf_eng_sim_run_until(rt, deadline);
			if (rc == NF_EINTR && !rt->err.code)
				return nf_error_set(err, NF_EINTR, "wait on event 0x%x interrupted", event);
			if (rc)
				return nf_eng_fail(rt, rc, err);
			if (!rt->cpu_events[ei].signaled)
				return nf_error_set(err, NF_ETIMEOUT, "wait on event 0x%x timed out", event);
			break;
		}
		struct nf_sim_event se = nf_eng_sim_pop(rt);
		if (se.time > rt->now)
			rt->now = se.time;
		rc = nf_eng_sim_dispatch(rt, &se);
		if (rc)
			return nf_eng_fail(rt, rc, err);
	}
	return 0;
}

int nf_eng_api_event_close(nf_runtime *rt, nf_handle event, struct nf_error *err)
{
	uint32_t ei;

	if (!rt || nf_eng_handle_lookup(rt, event, NF_OBJ_CPU_EVENT, &ei) || !rt->cpu_events[ei].alive)
		return nf_error_set(err, NF_EINVAL, "invalid event handle 0x%x", event);
	struct nf_cpu_event *eo = &rt->cpu_events[ei];
	struct nf_cpu_waiter *w = eo->waiter;
	eo->alive = false;
	if (w && !w->done) {
		struct nf_global_fence *g = &rt->globals[w->global];
		w->done = true;
		w->status = 2;
		waiter_unlink(g, w);
		int rc = nf_eng_emit_unwait(rt, w, g->current);
		if (!rc)
			rc = nf_eng_update_monitored(rt, g, NULL);
		free(w);
		eo->waiter = NULL;
		return nf_eng_fail(rt, rc, err);
	}
	free(w);
	eo->waiter = NULL;
	return 0;
}

int nf_eng_api_cpu_signal(nf_runtime *rt, nf_handle fence, uint64_t value, struct nf_error *err)
{
	struct nf_local_fence *lf;
	int rc = cpu_fence(rt, fence, &lf, err);
	struct nf_event ev;

	if (rc)
		return rc;
	struct nf_global_fence *g = &rt->globals[lf->global];
	rc = nf_eng_check_window(rt, g, lf->adapter, value, err);
	if (rc)
		return rc;
	EV_INIT(ev, CPU_SIGNAL);
	ev.f[NFF_CPU_SIGNAL_adapter] = lf->adapter;
	ev.f[NFF_CPU_SIGNAL_fence] = fence;
	ev.f[NFF_CPU_SIGNAL_value] = value;
	ev.f[NFF_CPU_SIGNAL_thread] = cur_thread(rt);
	rc = nf_eng_emit(rt, &ev);
	if (rc)
		return nf_eng_fail(rt, rc, err);
	/* VidSch writes the value through DxgkDdiUpdateCurrentValuesFromCpu. */
	nf_eng_fence_write(rt, g, lf->adapter, value);
	EV_INIT(ev, UPDATE_CURRENT_VALUES);
	ev.f[NFF_UPDATE_CURRENT_VALUES_adapter] = lf->adapter;
	ev.f[NFF_UPDATE_CURRENT_VALUES_global_fence] = g->handle;
	ev.f[NFF_UPDATE_CURRENT_VALUES_value] = value;
	ev.f[NFF_UPDATE_CURRENT_VALUES_flags] = 0;
	rc = nf_eng_emit(rt, &ev);
	if (!rc)
		rc = nf_eng_wake_gpu_waiters(rt, g, lf->adapter);
	if (!rc)
		rc = nf_eng_satisfy_cpu_waiters(rt, g, NULL);
	if (!rc)
		rc = nf_eng_update_monitored(rt, g, NULL);
	if (!rc)
		rc = nf_eng_propagate_cross_adapter(rt, g, lf->adapter);
	return nf_eng_fail(rt, rc, err);
}
