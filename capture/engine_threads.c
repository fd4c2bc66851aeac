/*
 * The native fence engine, threaded mode: the rules stay in engine*.c; this file
 * gives them real threads and real time.
 *
 *   - One GPU engine thread per hardware queue executes the queue's commands in
 *     order. A signal writes CurrentValue (one atomic 64-bit store), writes the
 *     log entry, bumps FirstFreeEntryIndex and evaluates the conditional
 *     interrupt (CurrentValue > MonitoredValue), all without the OS lock. A GPU
 *     wait blocks the engine thread until CurrentValue reaches the value: the
 *     signalling engine wakes it directly, with no CPU (OS) round trip.
 *   - One CMP/interrupt thread receives the interrupts the engines raise and
 *     handles them as the OS does (engine_irq.c: read the logs, wake CPU waiters,
 *     propagate cross-adapter values, update MonitoredValue). It also does the
 *     OS's periodic work: clock calibration, periodic log reads, log
 *     recreation requests.
 *   - CPU waits block the calling thread on a condition variable of the OS
 *     lock, with a CLOCK_MONOTONIC deadline.
 *
 * Locks, in the order they may be taken: the OS lock (every API call, event
 * emission, waiter lists) -> a queue's log lock or command lock, the GPU
 * memory lock, the interrupt lock. Engine threads never hold a lower lock while
 * taking the OS lock.
 *
 * Time: CLOCK_MONOTONIC since the runtime started is the true time; CPU ticks
 * and GPU ticks are derived from it through the configured clock models.
 */
#include "engine_int.h"
#include "contract/errors.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct nf_irq {
	uint32_t queue, global;
};

struct nf_irq_buf {
	struct nf_irq *v;
	uint32_t len, cap;
};

struct nf_threads {
	pthread_mutex_t lock;          /* the OS lock */
	pthread_cond_t cpu_cv;         /* CPU waiters re-check (with lock) */
	pthread_mutex_t gpu_mu;        /* engines blocked on a GPU wait */

	pthread_mutex_t irq_mu;        /* raised interrupts, CMP/interrupt thread state */
	pthread_cond_t irq_cv;
	struct nf_irq_buf pending, spare;
	bool irq_busy;                 /* the interrupt thread is handling a batch */
	bool irq_stop;
	bool irq_oom;
	atomic_bool stopping;          /* the runtime is being destroyed */
	atomic_bool os_urgent;         /* the interrupt thread is waiting for the OS lock */
	bool cpu_release;              /* destroy: CPU waiters give up (OS lock) */
	uint32_t cpu_waiters;          /* threads inside nf_th_cpu_block (OS lock) */
	pthread_t irq_thread;
	bool irq_started;
	uint64_t t0;                   /* CLOCK_MONOTONIC ns at start */
};

struct engine_arg {
	struct nf_runtime *rt;
	struct nf_queue *q;
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct timespec abs_time(uint64_t mono)
{
	struct timespec ts = { (time_t)(mono / 1000000000ull), (long)(mono % 1000000000ull) };

	return ts;
}

uint64_t nf_th_now(const struct nf_runtime *rt)
{
	return mono_ns() - rt->th->t0;
}

void nf_th_sleep(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static _Thread_local uint32_t tl_thread;
_Thread_local struct nf_runtime_stats *nf_th_engine_stats __attribute__((tls_model("initial-exec")));

uint32_t nf_th_thread_id(void)
{
	if (!tl_thread)
		tl_thread = (uint32_t)syscall(SYS_gettid);
	return tl_thread;
}

void nf_th_set_thread_id(uint32_t id)
{
	tl_thread = id;
}

/*
 * The OS lock. Mutexes are not fair: a thread calling the API in a tight loop
 * would retake it before the woken interrupt thread runs, and the OS would
 * stop reading logs and waking waiters. The interrupt thread announces itself
 * (os_urgent) and other threads step aside until it has the lock.
 */
void nf_th_lock_threaded(struct nf_runtime *rt)
{
	for (int i = 0; i < 64 && atomic_load_explicit(&rt->th->os_urgent, memory_order_relaxed); i++)
		sched_yield();
	pthread_mutex_lock(&rt->th->lock);
}

static void os_lock_urgent(struct nf_runtime *rt)
{
	atomic_store(&rt->th->os_urgent, true);
	pthread_mutex_lock(&rt->th->lock);
	atomic_store(&rt->th->os_urgent, false);
}

void nf_th_unlock_threaded(struct nf_runtime *rt)
{
	pthread_mutex_unlock(&rt->th->lock);
}

void nf_th_log_lock_threaded(struct nf_queue *q)
{
	pthread_mutex_lock(&q->log_mu);
}

void nf_th_log_unlock_threaded(struct nf_queue *q)
{
	pthread_mutex_unlock(&q->log_mu);
}

/* ------------------------------------------------------------------ */
/* GPU memory: engines blocked on a GPU wait                            */

/*
 * Fence gi changed. The writer stored CurrentValue (seq_cst) before this load
 * of the fence's gpu_blocked (seq_cst); a blocking engine increments it before
 * it re-reads CurrentValue, under gpu_mu. So either the engine sees the new
 * value, or this sees the engine and signals it under gpu_mu, which the engine
 * only releases inside pthread_cond_wait: no wake-up is lost. Only the engines
 * blocked on this fence are woken.
 */
void nf_th_gpu_notify(struct nf_runtime *rt, uint32_t gi)
{
	if (!rt->threaded || atomic_load(&rt->globals[gi].gpu_blocked) == 0)
		return;
	pthread_mutex_lock(&rt->th->gpu_mu);
	for (uint32_t i = 0; i < NF_TH_MAX_QUEUES; i++) {
		struct nf_queue *q = &rt->queues[i];
		if (q->blocked && q->wait_global == gi)
			pthread_cond_signal(&q->gpu_cv);
	}
	pthread_mutex_unlock(&rt->th->gpu_mu);
}

/* Blocks q's engine until its head wait passes. False when the runtime stops. */
static bool gpu_block(struct nf_runtime *rt, struct nf_queue *q, const struct nf_cmd *c)
{
	struct nf_threads *th = rt->th;
	bool passed;

	if (nf_eng_gpu_wait_passes(rt, q->adapter, c->global, c->value))
		return true;
	pthread_mutex_lock(&th->gpu_mu);
	q->wait_global = c->global;
	q->wait_value = c->value;
	q->blocked = true;
	atomic_fetch_add(&rt->globals[c->global].gpu_blocked, 1);
	while (!(passed = nf_eng_gpu_wait_passes(rt, q->adapter, c->global, c->value)) &&
	       !atomic_load(&th->stopping))
		pthread_cond_wait(&q->gpu_cv, &th->gpu_mu);
	atomic_fetch_sub(&rt->globals[c->global].gpu_blocked, 1);
	q->blocked = false;
	pthread_mutex_unlock(&th->gpu_mu);
	return passed;
}

/* ------------------------------------------------------------------ */
/* GPU engine threads                                                  */

/* Runs one command on q's engine. False when the runtime is going away. */
static bool engine_exec(struct nf_runtime *rt, struct nf_queue *q, const struct nf_cmd *c)
{
	switch (c->type) {
	case NF_CMD_WORK:
		nf_th_sleep(c->cost_ns);
		break;
	case NF_CMD_SIGNAL:
		nf_eng_exec_signal(rt, q, c);
		break;
	case NF_CMD_WAIT: {
		uint64_t observed = nf_th_now(rt); /* the GPU saw the wait */
		if (!gpu_block(rt, q, c))
			return false;
		nf_eng_wait_done(rt, q, c, observed);
		break;
	}
	}
	return true;
}

/*
 * The engine's command ring: the producer (an API call, under the OS lock)
 * writes cmds[tail], then publishes tail+1; the engine runs cmds[head] and
 * publishes head+1 once it has finished, so "pending" counts work in flight.
 * Sleeping uses the same store-then-load pairing as GPU waits: the engine
 * sets engine_sleeping then re-reads tail (under mu); the producer publishes
 * tail then reads engine_sleeping and, if set, signals under mu.
 */
static void *engine_main(void *arg)
{
	struct engine_arg ea = *(struct engine_arg *)arg;
	struct nf_runtime *rt = ea.rt;
	struct nf_queue *q = ea.q;
	uint64_t head = atomic_load(&q->ring_head);

	free(arg);
	nf_th_engine_stats = &q->stats;
	for (;;) {
		uint64_t tail = atomic_load(&q->ring_tail);

		if (head == tail) {
			/* An idle engine polls its ring a little before it sleeps. */
			for (int spin = 0; spin < 4000 && atomic_load(&q->ring_tail) == head &&
					   !atomic_load(&q->recreate_pending) &&
					   !atomic_load(&rt->th->stopping);
			     spin++)
				cpu_relax();
			pthread_mutex_lock(&q->mu);
			while (!q->stop && !atomic_load(&q->recreate_pending)) {
				atomic_store(&q->engine_sleeping, true);
				if (atomic_load(&q->ring_tail) != head)
					break;
				pthread_cond_wait(&q->cv, &q->mu);
			}
			atomic_store(&q->engine_sleeping, false);
			bool stop = q->stop;
			pthread_mutex_unlock(&q->mu);
			if (stop)
				break;
			tail = atomic_load(&q->ring_tail);
		}
		/* The OS replaced the log buffers: switch between commands. */
		if (atomic_exchange(&q->recreate_pending, false)) {
			nf_th_lock(rt);
			nf_eng_recreate_logs(rt, q);
			nf_th_unlock(rt);
		}
		/* Finished work is published every 64 commands and when caught up. */
		while (head != tail) {
			if (!engine_exec(rt, q, &q->cmds[head & (NF_TH_FIFO_MAX - 1)]))
				return NULL; /* the runtime is going away */
			head++;
			if (head == tail || (head & 63) == 0)
				atomic_store_explicit(&q->ring_head, head, memory_order_release);
		}
	}
	return NULL;
}

int nf_th_queue_start(struct nf_runtime *rt, struct nf_queue *q, struct nf_error *err)
{
	struct engine_arg *ea = malloc(sizeof(*ea));

	if (!ea) {
		q->alive = false;
		return nf_error_set(err, NF_ENOMEM, "out of memory");
	}
	ea->rt = rt;
	ea->q = q;
	free(q->cmds);
	q->cmds = malloc(NF_TH_FIFO_MAX * sizeof(*q->cmds));
	if (!q->cmds) {
		free(ea);
		q->alive = false;
		return nf_error_set(err, NF_ENOMEM, "out of memory (command ring)");
	}
	q->cmd_cap = NF_TH_FIFO_MAX;
	atomic_init(&q->ring_head, 0);
	atomic_init(&q->ring_tail, 0);
	atomic_init(&q->engine_sleeping, false);
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->cv, NULL);
	pthread_cond_init(&q->gpu_cv, NULL);
	pthread_mutex_init(&q->log_mu, NULL);
	atomic_init(&q->recreate_pending, false);
	q->stop = false;
	int e = pthread_create(&q->thread, NULL, engine_main, ea);
	if (e) {
		free(ea);
		q->alive = false;
		return nf_error_set(err, NF_ENOMEM, "cannot start the engine thread of queue '%s': %s",
				    q->name, strerror(e));
	}
	q->thread_started = true;
	return 0;
}

uint64_t nf_th_queue_pending(struct nf_queue *q)
{
	return atomic_load(&q->ring_tail) - atomic_load(&q->ring_head);
}

static bool quiet(struct nf_runtime *rt);

/*
 * Queues a command on q's ring. Back-pressure: a producer that runs ahead of
 * its engine by NF_TH_FIFO_MAX commands waits for room with the OS lock
 * released (as the UMD waits for ring space). If meanwhile every engine stays
 * idle or blocked on a wait nothing pending can satisfy, with no interrupt in
 * flight, the work that would free the ring can only come from this thread:
 * the call fails instead of waiting forever.
 */
int nf_th_queue_push(struct nf_runtime *rt, struct nf_queue *q, const struct nf_cmd *c,
		     struct nf_error *err)
{
	uint64_t tail = atomic_load_explicit(&q->ring_tail, memory_order_relaxed);
	int quiet_polls = 0;

	if (tail - q->cached_head >= NF_TH_FIFO_MAX)
		q->cached_head = atomic_load_explicit(&q->ring_head, memory_order_acquire);
	while (tail - q->cached_head >= NF_TH_FIFO_MAX) {
		quiet_polls = quiet(rt) ? quiet_polls + 1 : 0;
		if (quiet_polls >= 50)
			return nf_error_set(err, NF_ENOMEM,
					    "queue '%s' holds %u commands behind a GPU wait that nothing queued can satisfy",
					    q->name, NF_TH_FIFO_MAX);
		nf_th_unlock(rt);
		nf_th_sleep(20000);
		nf_th_lock(rt);
		tail = atomic_load_explicit(&q->ring_tail, memory_order_relaxed);
		q->cached_head = atomic_load_explicit(&q->ring_head, memory_order_acquire);
	}
	q->cmds[tail & (NF_TH_FIFO_MAX - 1)] = *c;
	atomic_store(&q->ring_tail, tail + 1);
	if (atomic_load(&q->engine_sleeping)) {
		pthread_mutex_lock(&q->mu);
		pthread_cond_signal(&q->cv);
		pthread_mutex_unlock(&q->mu);
	}
	return 0;
}

void nf_th_queue_stop(struct nf_runtime *rt, struct nf_queue *q)
{
	(void)rt;
	if (!q->thread_started)
		return;
	pthread_mutex_lock(&q->mu);
	q->stop = true;
	pthread_cond_signal(&q->cv);
	pthread_mutex_unlock(&q->mu);
	pthread_join(q->thread, NULL);
	q->thread_started = false;
}

/* ------------------------------------------------------------------ */
/* the CMP / interrupt thread                                          */

void nf_th_raise_interrupt(struct nf_runtime *rt, uint32_t qi, uint32_t gi)
{
	struct nf_threads *th = rt->th;
	struct nf_irq_buf *b = &th->pending;

	pthread_mutex_lock(&th->irq_mu);
	/* The same queue and fence still pending: one handling covers both. */
	if (!(b->len && b->v[b->len - 1].queue == qi && b->v[b->len - 1].global == gi)) {
		if (b->len == b->cap) {
			uint32_t cap = b->cap ? 2 * b->cap : 64;
			struct nf_irq *v = realloc(b->v, cap * sizeof(*v));
			if (!v) {
				th->irq_oom = true;
				pthread_mutex_unlock(&th->irq_mu);
				return;
			}
			b->v = v;
			b->cap = cap;
		}
		b->v[b->len].queue = qi;
		b->v[b->len].global = gi;
		b->len++;
	}
	pthread_cond_signal(&th->irq_cv);
	pthread_mutex_unlock(&th->irq_mu);
}

static uint64_t next_after(uint64_t due, uint64_t interval, uint64_t now)
{
	if (!interval)
		return UINT64_MAX;
	due += interval;
	return due > now ? due : now + interval;
}

static void *irq_main(void *arg)
{
	struct nf_runtime *rt = arg;
	struct nf_threads *th = rt->th;
	const struct nf_runtime_config *cfg = &rt->cfg;
	uint64_t now = nf_th_now(rt);
	uint64_t next_cal = now + cfg->calibration_interval_ns;
	uint64_t next_read = cfg->log_read_interval_ns ? now + cfg->log_read_interval_ns : UINT64_MAX;
	uint64_t next_new = cfg->log_recreate_interval_ns ? now + cfg->log_recreate_interval_ns
			    : UINT64_MAX;

	pthread_mutex_lock(&th->irq_mu);
	while (!th->irq_stop) {
		uint64_t due = next_cal < next_read ? next_cal : next_read;
		uint64_t next_vblank = nf_eng_next_vblank(rt);
		if (next_new < due)
			due = next_new;
		if (next_vblank < due)
			due = next_vblank;
		if (!th->pending.len && nf_th_now(rt) < due) {
			struct timespec ts = abs_time(th->t0 + due);
			pthread_cond_timedwait(&th->irq_cv, &th->irq_mu, &ts);
			continue;
		}
		/* Take the pending interrupts; engines keep raising into the spare. */
		struct nf_irq_buf batch = th->pending;
		bool oom = th->irq_oom;
		th->pending = th->spare;
		th->pending.len = 0;
		th->spare.v = NULL;
		th->spare.cap = 0;
		th->irq_oom = false;
		th->irq_busy = true;
		pthread_mutex_unlock(&th->irq_mu);

		os_lock_urgent(rt);
		if (oom && !rt->err.code)
			nf_error_set(&rt->err, NF_ENOMEM, "out of memory (interrupt queue)");
		for (uint32_t i = 0; i < batch.len && !rt->finished; i++)
			nf_eng_handle_interrupt(rt, batch.v[i].queue, batch.v[i].global);
		now = nf_th_now(rt);
		if (now >= next_cal) {
			nf_eng_calibrate_all(rt);
			next_cal = next_after(next_cal, cfg->calibration_interval_ns, now);
		}
		if (now >= next_read) {
			nf_eng_read_all_logs(rt);
			next_read = next_after(next_read, cfg->log_read_interval_ns, now);
		}
		if (now >= next_new) {
			nf_th_request_recreate(rt);
			next_new = next_after(next_new, cfg->log_recreate_interval_ns, now);
		}
		/* The displays' vertical blanks that are due, each in turn (a late
		 * thread catches up blank by blank: each blank is an event). */
		for (uint32_t d = 0; d < rt->n_displays && !rt->finished && !rt->err.code; d++)
			while (atomic_load(&rt->displays[d].next_ns) <= now && !rt->finished && !rt->err.code)
				nf_eng_vblank(rt, d);
		nf_th_unlock(rt);

		pthread_mutex_lock(&th->irq_mu);
		batch.len = 0;
		if (th->spare.v == NULL)
			th->spare = batch;
		else
			free(batch.v);
		th->irq_busy = false;
	}
	pthread_mutex_unlock(&th->irq_mu);
	return NULL;
}

void nf_th_timer_changed(struct nf_runtime *rt)
{
	struct nf_threads *th = rt->th;

	pthread_mutex_lock(&th->irq_mu);
	pthread_cond_signal(&th->irq_cv);
	pthread_mutex_unlock(&th->irq_mu);
}

/* The OS destroys and recreates every log: each engine switches to its new
 * buffers between two commands (DxgkDdiSetNativeFenceLogBuffer). */
void nf_th_request_recreate(struct nf_runtime *rt)
{
	for (uint32_t i = 0; i < rt->n_queues; i++) {
		struct nf_queue *q = &rt->queues[i];

		if (!q->alive || !q->native || !q->thread_started)
			continue;
		pthread_mutex_lock(&q->mu);
		atomic_store(&q->recreate_pending, true);
		pthread_cond_signal(&q->cv);
		pthread_mutex_unlock(&q->mu);
	}
}

/* ------------------------------------------------------------------ */
/* CPU waiters                                                         */

void nf_th_cpu_wake(struct nf_runtime *rt)
{
	pthread_cond_broadcast(&rt->th->cpu_cv);
}

/* The caller's flag (a signal handler sets it) is polled this often. */
#define NF_TH_INTR_POLL_NS 20000000ull

bool nf_th_interrupted(const struct nf_runtime *rt)
{
	if (rt->cfg.interrupt && __atomic_load_n(rt->cfg.interrupt, __ATOMIC_RELAXED))
		return true;
	return rt->th && rt->th->cpu_release;
}

bool nf_th_cpu_block(struct nf_runtime *rt, uint64_t deadline)
{
	struct nf_threads *th = rt->th;

	if (nf_th_interrupted(rt))
		return true;
	if (deadline != UINT64_MAX && nf_th_now(rt) >= deadline)
		return false;
	/* A signal handler cannot signal a condition variable: with an interrupt
	 * flag to watch, wake now and then to look at it. */
	uint64_t until = deadline;
	if (rt->cfg.interrupt) {
		uint64_t poll = nf_th_now(rt) + NF_TH_INTR_POLL_NS;
		if (poll < until)
			until = poll;
	}
	th->cpu_waiters++;
	if (until == UINT64_MAX) {
		pthread_cond_wait(&th->cpu_cv, &th->lock);
	} else {
		struct timespec ts = abs_time(th->t0 + until);
		pthread_cond_timedwait(&th->cpu_cv, &th->lock, &ts);
	}
	th->cpu_waiters--;
	return deadline == UINT64_MAX || nf_th_now(rt) < deadline || nf_th_interrupted(rt);
}

/* Destroy: every thread blocked in a CPU wait returns (NF_EINTR) and leaves
 * the OS lock before the runtime goes away. */
void nf_th_release_waiters(struct nf_runtime *rt)
{
	struct nf_threads *th = rt->th;

	if (!th)
		return;
	pthread_mutex_lock(&th->lock);
	th->cpu_release = true;
	pthread_cond_broadcast(&th->cpu_cv);
	while (th->cpu_waiters) {
		pthread_mutex_unlock(&th->lock);
		nf_th_sleep(1000000);
		pthread_mutex_lock(&th->lock);
	}
	pthread_mutex_unlock(&th->lock);
}

int nf_th_advance(struct nf_runtime *rt, uint64_t ns)
{
	uint64_t now0 = nf_th_now(rt);
	/* Saturated: a huge duration is a long wait, not one that wrapped to 0. */
	uint64_t end = ns > UINT64_MAX - now0 ? UINT64_MAX : now0 + ns;

	if (!rt->cfg.interrupt) {
		nf_th_sleep(ns);
		return 0;
	}
	for (;;) {
		if (__atomic_load_n(rt->cfg.interrupt, __ATOMIC_RELAXED))
			return NF_EINTR;
		uint64_t now = nf_th_now(rt);
		if (now >= end)
			return 0;
		nf_th_sleep(end - now < NF_TH_INTR_POLL_NS ? end - now : NF_TH_INTR_POLL_NS);
	}
}

/* ------------------------------------------------------------------ */
/* start, quiesce, stop                                                */

int nf_th_start(struct nf_runtime *rt, struct nf_error *err)
{
	struct nf_threads *th = calloc(1, sizeof(*th));
	pthread_condattr_t ca;

	if (!th)
		return nf_error_set(err, NF_ENOMEM, "out of memory");
	rt->th = th;
	th->t0 = mono_ns();
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&th->lock, NULL);
	pthread_cond_init(&th->cpu_cv, &ca);
	pthread_mutex_init(&th->gpu_mu, NULL);
	pthread_mutex_init(&th->irq_mu, NULL);
	pthread_cond_init(&th->irq_cv, &ca);
	pthread_condattr_destroy(&ca);
	atomic_init(&th->stopping, false);
	int e = pthread_create(&th->irq_thread, NULL, irq_main, rt);
	if (e)
		return nf_error_set(err, NF_ENOMEM, "cannot start the interrupt thread: %s",
				    strerror(e));
	th->irq_started = true;
	return 0;
}

/* Is every queue idle, or blocked on a wait nothing can satisfy any more, with
 * no interrupt pending? (OS lock held; no API call runs meanwhile.) */
static bool quiet(struct nf_runtime *rt)
{
	struct nf_threads *th = rt->th;
	bool ok = true;

	pthread_mutex_lock(&th->irq_mu);
	if (th->pending.len || th->irq_busy)
		ok = false;
	pthread_mutex_unlock(&th->irq_mu);
	if (!ok)
		return false;
	pthread_mutex_lock(&th->gpu_mu);
	for (uint32_t i = 0; i < rt->n_queues && ok; i++) {
		struct nf_queue *q = &rt->queues[i];

		if (!q->alive || !q->thread_started)
			continue;
		uint64_t n = nf_th_queue_pending(q);
		bool pending_new = atomic_load(&q->recreate_pending);
		if (pending_new)
			ok = false;
		else if (n && !(q->blocked &&
				!nf_eng_gpu_wait_passes(rt, q->adapter, q->wait_global, q->wait_value)))
			ok = false;
	}
	pthread_mutex_unlock(&th->gpu_mu);
	return ok;
}

int nf_th_quiesce(struct nf_runtime *rt)
{
	for (;;) {
		if (rt->cfg.interrupt && __atomic_load_n(rt->cfg.interrupt, __ATOMIC_RELAXED))
			return NF_EINTR;
		nf_th_lock(rt);
		int rc = nf_eng_sink_failed(rt);
		bool done = rc || quiet(rt);
		nf_th_unlock(rt);
		if (done)
			return rc;
		nf_th_sleep(100000);
	}
}

void nf_th_stop(struct nf_runtime *rt)
{
	struct nf_threads *th = rt->th;

	if (!th)
		return;
	atomic_store(&th->stopping, true);
	if (th->irq_started) {
		pthread_mutex_lock(&th->irq_mu);
		th->irq_stop = true;
		pthread_cond_signal(&th->irq_cv);
		pthread_mutex_unlock(&th->irq_mu);
		pthread_join(th->irq_thread, NULL);
		th->irq_started = false;
	}
	pthread_mutex_lock(&th->gpu_mu);
	for (uint32_t i = 0; i < rt->n_queues; i++)
		pthread_cond_signal(&rt->queues[i].gpu_cv);
	pthread_mutex_unlock(&th->gpu_mu);
	for (uint32_t i = 0; i < rt->n_queues; i++)
		nf_th_queue_stop(rt, &rt->queues[i]);
}

void nf_th_free(struct nf_runtime *rt)
{
	struct nf_threads *th = rt->th;

	if (!th)
		return;
	for (uint32_t i = 0; i < rt->n_queues; i++) {
		struct nf_queue *q = &rt->queues[i];

		pthread_mutex_destroy(&q->mu);
		pthread_cond_destroy(&q->cv);
		pthread_cond_destroy(&q->gpu_cv);
		pthread_mutex_destroy(&q->log_mu);
	}
	pthread_mutex_destroy(&th->lock);
	pthread_cond_destroy(&th->cpu_cv);
	pthread_mutex_destroy(&th->gpu_mu);
	pthread_mutex_destroy(&th->irq_mu);
	pthread_cond_destroy(&th->irq_cv);
	free(th->pending.v);
	free(th->spare.v);
	free(th);
	rt->th = NULL;
}
