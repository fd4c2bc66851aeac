/*
 * The native fence engine: GPU execution (queues running their commands in
 * order) and running the deterministic simulation (dispatching the clock's
 * events, periodic reads and calibrations). Split out of engine.c (issue #27).
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
/* GPU execution                                                       */

static int gpu_waiter_add(struct nf_global_fence *g, uint32_t qi, uint64_t value)
{
	if (nf_eng_grow((void **)&g->gpu_waiters, &g->cap_gpu_waiters, g->n_gpu_waiters + 1,
		 sizeof(*g->gpu_waiters)))
		return NF_ENOMEM;
	g->gpu_waiters[g->n_gpu_waiters].queue = qi;
	g->gpu_waiters[g->n_gpu_waiters].value = value;
	g->n_gpu_waiters++;
	return 0;
}

/* The fence changed on `adapter`: blocked queues of that adapter re-evaluate
 * (threaded: the engine threads blocked on a GPU wait re-read the value). */
int nf_eng_wake_gpu_waiters(struct nf_runtime *rt, struct nf_global_fence *g, uint32_t adapter)
{
	if (rt->threaded) {
		nf_th_gpu_notify(rt, (uint32_t)(g - rt->globals));
		return 0;
	}
	for (uint32_t i = 0; i < g->n_gpu_waiters;) {
		struct nf_queue *q = &rt->queues[g->gpu_waiters[i].queue];

		if (q->adapter == adapter &&
		    nf_eng_value_reached(&rt->adapters[adapter], g, g->gpu_waiters[i].value)) {
			q->blocked = false;
			g->gpu_waiters[i] = g->gpu_waiters[--g->n_gpu_waiters];
			int rc = nf_eng_queue_schedule(rt, q, rt->now);
			if (rc)
				return rc;
			continue;
		}
		i++;
	}
	return 0;
}

static void cmd_pop(struct nf_queue *q)
{
	q->cmd_head = (q->cmd_head + 1) & (q->cmd_cap - 1); /* a power of two */
	q->cmd_count--;
	q->head_started = false;
	q->blocked = false;
	q->head_observed = false;
}

/* The GPU's conditional interrupt after a native signal: raised only when
 * CurrentValue > MonitoredValue (read after the value and log writes). */
static int signal_interrupt(struct nf_runtime *rt, struct nf_queue *q, uint32_t gi)
{
	struct nf_global_fence *g = &rt->globals[gi];
	uint32_t qi = (uint32_t)(q - rt->queues);

	if (!rt->threaded) {
		if (g->current <= g->monitored[q->adapter])
			return 0;
		if (!nf_eng_fence_has_cpu_need(g, g->current))
			STAT(rt, interrupts_unneeded);
		return nf_eng_sim_push(rt, rt->now + rt->adapters[q->adapter].desc.interrupt_latency_ns,
				NF_SIM_INTERRUPT, qi, 0, gi);
	}
	/* Threaded: the OS may be changing MonitoredValue right now. wait_min is
	 * read before and after MonitoredValue (it moves down before it and up
	 * after it), so an interrupt is counted as unneeded only when no waiter
	 * could have asked for it at any point of the check. */
	uint64_t need_before = atomic_load(&g->wait_min);
	uint64_t cur = atomic_load(&g->current);
	if (cur <= atomic_load(&g->monitored[q->adapter]))
		return 0;
	uint64_t need_after = atomic_load(&g->wait_min);
	if (!g->cross_adapter && need_before > cur && need_after > cur)
		STAT(rt, interrupts_unneeded);
	nf_th_raise_interrupt(rt, qi, gi);
	return 0;
}

/*
 * A signal executes on the GPU now. Deterministic: from the simulation;
 * threaded: on the queue's engine thread, without the OS lock (a legacy
 * signal is executed by the OS, so that path takes it).
 */
int nf_eng_exec_signal(struct nf_runtime *rt, struct nf_queue *q, const struct nf_cmd *c)
{
	int rc;
	struct nf_global_fence *g = &rt->globals[c->global];

	STAT(rt, signals_executed);
	if (!atomic_load(&g->alive))
		return 0; /* destroyed while the signal was in flight */
	if (!q->native || !c->native) {
		/* Without native fences VidSch executes the software signal packet
		 * from the CPU. A legacy monitored fence on a native adapter is
		 * written by the GPU, which raises the monitored fence signaled
		 * interrupt: its waiters wait for the OS to handle that. */
		struct nf_event ev;

		nf_th_lock(rt);
		nf_eng_fence_write(rt, g, q->adapter, c->value);
		EV_INIT(ev, GPU_SIGNAL_LEGACY);
		ev.f[NFF_GPU_SIGNAL_LEGACY_adapter] = q->adapter;
		ev.f[NFF_GPU_SIGNAL_LEGACY_hwqueue] = q->handle;
		ev.f[NFF_GPU_SIGNAL_LEGACY_fence] = c->local;
		ev.f[NFF_GPU_SIGNAL_LEGACY_value] = c->value;
		rc = nf_eng_emit(rt, &ev);
		if (!rc)
			rc = nf_eng_wake_gpu_waiters(rt, g, q->adapter);
		if (!rc && q->native) {
			uint32_t qi = (uint32_t)(q - rt->queues);

			if (rt->threaded)
				nf_th_raise_interrupt(rt, qi, c->global);
			else
				rc = nf_eng_sim_push(rt, rt->now + rt->adapters[q->adapter].desc.interrupt_latency_ns,
					      NF_SIM_INTERRUPT, qi, 0, c->global);
			nf_th_unlock(rt);
			return rc;
		}
		if (!rc)
			rc = nf_eng_satisfy_cpu_waiters(rt, g, NULL);
		if (!rc)
			rc = nf_eng_update_monitored(rt, g, NULL);
		if (!rc && g->cross_adapter)
			rc = nf_eng_propagate_cross_adapter(rt, g, q->adapter);
		nf_th_unlock(rt);
		return rc;
	}
	/* 1. write the new fence value; 2. write the log entry and bump the index. */
	uint64_t t = now_ns(rt);
	nf_eng_fence_write(rt, g, q->adapter, c->value);
	rc = nf_eng_log_write(rt, q, nf_eng_queue_log(q, NF_LOG_SIGNALS), c, t, t);
	if (rc)
		return rc;
	/* Same-adapter GPU waiters see the value in memory at once. */
	rc = nf_eng_wake_gpu_waiters(rt, g, q->adapter);
	if (rc)
		return rc;
	/* 3. the CMP's conditional interrupt: CurrentValue > MonitoredValue. */
	return signal_interrupt(rt, q, c->global);
}

/* A GPU wait at the head of q was satisfied: the waits log entry (native) or the
 * OS releasing the held work (legacy). */
int nf_eng_wait_done(struct nf_runtime *rt, struct nf_queue *q, const struct nf_cmd *c,
		     uint64_t observed_ns)
{
	struct nf_event ev;
	int rc;

	STAT(rt, waits_unblocked);
	if (q->native && c->native)
		return nf_eng_log_write(rt, q, nf_eng_queue_log(q, NF_LOG_WAITS), c, observed_ns, now_ns(rt));
	EV_INIT(ev, GPU_WAIT_LEGACY);
	ev.f[NFF_GPU_WAIT_LEGACY_adapter] = q->adapter;
	ev.f[NFF_GPU_WAIT_LEGACY_hwqueue] = q->handle;
	ev.f[NFF_GPU_WAIT_LEGACY_fence] = c->local;
	ev.f[NFF_GPU_WAIT_LEGACY_value] = c->value;
	ev.f[NFF_GPU_WAIT_LEGACY_released] = 1;
	nf_th_lock(rt);
	rc = nf_eng_emit(rt, &ev);
	nf_th_unlock(rt);
	return rc;
}

static int queue_step(struct nf_runtime *rt, struct nf_queue *q)
{
	const struct nf_adapter *a = &rt->adapters[q->adapter];

	q->step_scheduled = false;
	while (q->alive && q->cmd_count && !rt->err.code) {
		struct nf_cmd *c = &q->cmds[q->cmd_head];
		int rc;

		if (q->busy_until > rt->now)
			return nf_eng_queue_schedule(rt, q, q->busy_until);
		if (c->available_ns > rt->now)
			return nf_eng_queue_schedule(rt, q, c->available_ns);
		if (q->head_started) {
			/* The head finished executing now. */
			if (c->type == NF_CMD_SIGNAL)
				rc = nf_eng_exec_signal(rt, q, c);
			else if (c->type == NF_CMD_WAIT)
				rc = nf_eng_wait_done(rt, q, c, q->head_observed_ns);
			else
				rc = 0;
			if (rc)
				return rc;
			cmd_pop(q);
			continue;
		}
		/* Start the head command. */
		switch (c->type) {
		case NF_CMD_WORK:
			q->head_started = true;
			q->busy_until = rt->now + c->cost_ns;
			break;
		case NF_CMD_SIGNAL:
			q->head_started = true;
			q->busy_until = rt->now + a->desc.signal_cost_ns;
			break;
		case NF_CMD_WAIT: {
			struct nf_global_fence *g = &rt->globals[c->global];

			if (!q->head_observed) {
				/* The GPU acknowledged the wait and queued it on hardware. */
				q->head_observed = true;
				q->head_observed_ns = rt->now;
			}
			if (!g->alive || nf_eng_value_reached(a, g, c->value)) {
				q->head_started = true;
				q->blocked = false;
				q->busy_until = rt->now + a->desc.wait_cost_ns;
				break;
			}
			if (!q->blocked) {
				q->blocked = true;
				if (gpu_waiter_add(g, (uint32_t)(q - rt->queues), c->value))
					return nf_error_set(&rt->err, NF_ENOMEM, "out of memory");
			}
			return 0; /* woken by wake_gpu_waiters */
		}
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* running the simulation                                              */

int nf_eng_calibrate(struct nf_runtime *rt, uint32_t ai)
{
	struct nf_adapter *a = &rt->adapters[ai];
	struct nf_event ev;
	uint64_t j = a->desc.gpu_clock.jitter_ns;
	int64_t jitter = j ? (int64_t)(nf_eng_rng_next(rt) % (2 * j + 1)) - (int64_t)j : 0;
	uint64_t now = now_ns(rt);
	uint64_t cpu_t = (int64_t)now + jitter < 0 ? 0 : (uint64_t)((int64_t)now + jitter);

	EV_INIT(ev, CALIBRATE_GPU_CLOCK);
	ev.f[NFF_CALIBRATE_GPU_CLOCK_adapter] = ai;
	ev.f[NFF_CALIBRATE_GPU_CLOCK_gpu_frequency] = a->desc.gpu_clock.frequency;
	ev.f[NFF_CALIBRATE_GPU_CLOCK_gpu_clock] = nf_eng_gpu_ticks(a, now);
	ev.f[NFF_CALIBRATE_GPU_CLOCK_cpu_clock] = cpu_ticks(rt, cpu_t);
	/* Alternate the CMP clock and the engine clock (same time base here). */
	ev.f[NFF_CALIBRATE_GPU_CLOCK_from_cmp] = (a->calib_count++ % 2) == 0;
	return nf_eng_emit(rt, &ev);
}

/* The periodic and the final read of every log; an overrun any of them finds
 * makes the OS scan the fences of that adapter. */
int nf_eng_read_logs_now(struct nf_runtime *rt)
{
	uint64_t lost[NF_MAX_ADAPTERS] = { 0 };
	int rc = 0;

	for (uint32_t i = 0; i < rt->n_queues && !rc; i++)
		if (rt->queues[i].alive)
			rc = nf_eng_queue_read_logs(rt, &rt->queues[i], &lost[rt->queues[i].adapter]);
	for (uint32_t a = 0; a < rt->n_adapters && !rc; a++)
		rc = nf_eng_overrun_fallback(rt, a, lost[a]);
	return rc;
}

int nf_eng_read_all_logs(struct nf_runtime *rt)
{
	return rt->finished ? 0 : nf_eng_read_logs_now(rt);
}

int nf_eng_calibrate_all(struct nf_runtime *rt)
{
	int rc = 0;

	for (uint32_t a = 0; a < rt->n_adapters && !rc && !rt->finished; a++)
		rc = nf_eng_calibrate(rt, a);
	return rc;
}

int nf_eng_sink_failed(struct nf_runtime *rt)
{
	return rt->err.code;
}


int nf_eng_sim_dispatch(struct nf_runtime *rt, const struct nf_sim_event *se)
{
	int rc = 0;

	switch (se->type) {
	case NF_SIM_QUEUE_STEP: {
		struct nf_queue *q = &rt->queues[se->a];
		if (q->step_scheduled && q->step_at != se->time)
			return 0; /* superseded by an earlier step */
		return queue_step(rt, q);
	}
	case NF_SIM_INTERRUPT:
		return nf_eng_handle_interrupt(rt, se->a, (uint32_t)se->c);
	case NF_SIM_CALIBRATE:
		rc = nf_eng_calibrate(rt, se->a);
		if (!rc)
			rc = nf_eng_sim_push(rt, se->time + rt->cfg.calibration_interval_ns, NF_SIM_CALIBRATE,
				      se->a, 0, 0);
		return rc;
	case NF_SIM_PERIODIC_READ:
		rc = nf_eng_read_logs_now(rt);
		if (!rc)
			rc = nf_eng_sim_push(rt, se->time + rt->cfg.log_read_interval_ns,
				      NF_SIM_PERIODIC_READ, 0, 0, 0);
		return rc;
	case NF_SIM_RECREATE_LOGS:
		for (uint32_t i = 0; i < rt->n_queues && !rc; i++)
			if (rt->queues[i].alive && rt->queues[i].native)
				rc = nf_eng_queue_recreate_logs(rt, &rt->queues[i]);
		if (!rc)
			rc = nf_eng_sim_push(rt, se->time + rt->cfg.log_recreate_interval_ns,
				      NF_SIM_RECREATE_LOGS, 0, 0, 0);
		return rc;
	case NF_SIM_WAIT_TIMEOUT:
		return nf_eng_wait_timeout(rt, se->a, se->b);
	case NF_SIM_VBLANK:
		return nf_eng_vblank(rt, se->a);
	}
	return 0;
}

/* The caller's interrupt flag (SIGINT), looked at every 1024 simulation
 * events: one advance may run millions of periodic reads. */
bool nf_eng_sim_interrupted(const struct nf_runtime *rt, uint32_t *n)
{
	return (++*n & 1023u) == 0 && rt->cfg.interrupt &&
	       __atomic_load_n(rt->cfg.interrupt, __ATOMIC_RELAXED);
}

/* Runs every simulation event up to `until`, then sets the clock there;
 * NF_EINTR (the clock where it stopped) when interrupted. */
int nf_eng_sim_run_until(struct nf_runtime *rt, uint64_t until)
{
	uint32_t n = 0;

	while (rt->heap_len && sim_top(rt)->time <= until && !rt->err.code) {
		if (nf_eng_sim_interrupted(rt, &n))
			return NF_EINTR;
		struct nf_sim_event se = nf_eng_sim_pop(rt);

		if (se.time > rt->now)
			rt->now = se.time;
		int rc = nf_eng_sim_dispatch(rt, &se);
		if (rc)
			return rc;
	}
	if (rt->err.code)
		return rt->err.code;
	if (until > rt->now)
		rt->now = until;
	return 0;
}

/* Runs the next simulation event; false when nothing but periodic work is left. */
bool nf_eng_sim_step(struct nf_runtime *rt, int *rc)
{
	*rc = 0;
	if (!rt->active_sims || !rt->heap_len)
		return false;
	struct nf_sim_event se = nf_eng_sim_pop(rt);
	if (se.time > rt->now)
		rt->now = se.time;
	*rc = nf_eng_sim_dispatch(rt, &se);
	return true;
}
