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

#define NF_HANDLE_BASE 0x40000000u
#define NF_HANDLE_STEP 0x40u
#define NF_QUEUE_CAP_MAX (1u << 16)

/* ------------------------------------------------------------------ */
/* small utilities                                                     */

static uint64_t rng_step(uint64_t *state)
{
	/* splitmix64: deterministic from the seed */
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rng_next(struct nf_runtime *rt)
{
	return rng_step(&rt->rng);
}

static double rng_unit(uint64_t *state)
{
	return (double)(rng_step(state) >> 11) * (1.0 / 9007199254740992.0);
}

/* The true time now: virtual (deterministic) or CLOCK_MONOTONIC since start. */
static uint64_t now_ns(const struct nf_runtime *rt)
{
	return rt->threaded ? nf_th_now(rt) : rt->now;
}

/* The CPU thread events name: set by nf_runtime_set_thread (per thread when threaded). */
static uint32_t cur_thread(const struct nf_runtime *rt)
{
	return rt->threaded ? nf_th_thread_id() : rt->thread;
}

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

/* core's capped array growth (from 16, at most UINT32_MAX elements), new
 * elements zeroed. */
static int grow(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
	size_t ncap = *cap;

	if (need <= *cap)
		return 0;
	if (nf_array_reserve(arr, &ncap, need, elem, 16, UINT32_MAX))
		return NF_ENOMEM;
	memset((char *)*arr + (size_t)*cap * elem, 0, (ncap - *cap) * elem);
	*cap = (uint32_t)ncap;
	return 0;
}

static uint64_t cpu_ticks(const struct nf_runtime *rt, uint64_t t_ns)
{
	uint64_t f = rt->cfg.cpu_frequency;

	return rt->cfg.cpu_start_ticks + (t_ns / 1000000000ull) * f +
	       (t_ns % 1000000000ull) * f / 1000000000ull;
}

/* llround without the libm call where that is exact: for 0 <= x < 2^63,
 * x - trunc(x) is computed without rounding, so comparing it with 0.5 rounds
 * halves away from zero as llround does. */
static uint64_t round_ll(double x)
{
	if (x >= 0 && x < 9223372036854775808.0) {
		/* through int64_t: one conversion instruction each way, where
		 * uint64_t needs a test for values past 2^63 (none here) */
		int64_t t = (int64_t)x;
		return (uint64_t)t + (x - (double)t >= 0.5);
	}
	return (uint64_t)llround(x);
}

static uint64_t gpu_ticks(const struct nf_adapter *a, uint64_t t_ns)
{
	return a->desc.gpu_clock.offset + round_ll((double)t_ns * a->gpu_rate);
}

/* ------------------------------------------------------------------ */
/* events                                                              */

/* Which events go to the ground-truth stream (a table: no call per event). */
static const bool nf_ev_truth[NF_EV_COUNT] = {
#define NF_EVENT(ID, NAME, DXG, STREAM, DOC) [NF_EV_##ID] = (STREAM) == NF_STREAM_TRUTH,
#define NF_FIELD(ID, TYPE, NAME, DOC)
#define NF_EVENT_END(ID)
#include "../schemas/events.def"
#undef NF_EVENT
#undef NF_FIELD
#undef NF_EVENT_END
};

/* Emits an event stamped with true time t (the caller's "now"). */
static int emit_at(struct nf_runtime *rt, struct nf_event *ev, uint64_t t)
{
	int rc;

	if (rt->err.code)
		return rt->err.code;
	STAT(rt, events_emitted);
	if (!rt->cfg.sink.emit)
		return 0;
	if (!rt->cfg.ground_truth && ev->id < NF_EV_COUNT && nf_ev_truth[ev->id])
		return 0;
	ev->ts = cpu_ticks(rt, t);
	rc = rt->cfg.sink.emit(rt->cfg.sink.ctx, ev);
	if (rc)
		return nf_error_set(&rt->err, rc, "event sink failed (%s)", nf_strerror(rc));
	return 0;
}

static int emit(struct nf_runtime *rt, struct nf_event *ev)
{
	return emit_at(rt, ev, now_ns(rt));
}

/* Copied from a zero event rather than memset: gcc turns a 160-byte memset
 * into rep stos, whose start-up cost was most of a fence operation's own time;
 * a copy is ten vector moves. */
static const struct nf_event nf_ev_zero;
#define EV_INIT(ev, ID) do { (ev) = nf_ev_zero; (ev).id = NF_EV_##ID; } while (0)

/* ------------------------------------------------------------------ */
/* handles                                                             */

static int handle_new(struct nf_runtime *rt, uint8_t type, uint32_t index, nf_handle *out)
{
	if (rt->n_handles + 1 >= NF_MAX_HANDLES)
		return nf_error_set(&rt->err, NF_ENOMEM, "too many handles (limit %u)", NF_MAX_HANDLES);
	if (grow((void **)&rt->handles, &rt->cap_handles, rt->n_handles + 1, sizeof(*rt->handles)))
		return NF_ENOMEM;
	rt->handles[rt->n_handles].type = type;
	rt->handles[rt->n_handles].index = index;
	*out = NF_HANDLE_BASE + (rt->n_handles + 1) * NF_HANDLE_STEP;
	rt->n_handles++;
	return 0;
}

static int handle_lookup(const struct nf_runtime *rt, nf_handle h, uint8_t type, uint32_t *index)
{
	if (h < NF_HANDLE_BASE + NF_HANDLE_STEP || (h - NF_HANDLE_BASE) % NF_HANDLE_STEP)
		return NF_EINVAL;
	uint32_t slot = (h - NF_HANDLE_BASE) / NF_HANDLE_STEP - 1;
	if (slot >= rt->n_handles || rt->handles[slot].type != type)
		return NF_EINVAL;
	*index = rt->handles[slot].index;
	return 0;
}

static struct nf_queue *queue_get(nf_runtime *rt, nf_handle h, struct nf_error *err)
{
	uint32_t i;

	if (!rt || handle_lookup(rt, h, NF_OBJ_QUEUE, &i) || !rt->queues[i].alive) {
		nf_error_set(err, NF_EINVAL, "invalid hardware queue handle 0x%x", h);
		return NULL;
	}
	return &rt->queues[i];
}

static struct nf_local_fence *local_get(nf_runtime *rt, nf_handle h, struct nf_error *err)
{
	uint32_t i;

	if (!rt || handle_lookup(rt, h, NF_OBJ_LOCAL_FENCE, &i) || !rt->locals[i].alive) {
		nf_error_set(err, NF_EINVAL, "invalid fence handle 0x%x", h);
		return NULL;
	}
	return &rt->locals[i];
}

/* ------------------------------------------------------------------ */
/* the simulation clock: a priority queue of pending events             */

static bool sim_periodic(enum nf_sim_type t)
{
	return t == NF_SIM_CALIBRATE || t == NF_SIM_PERIODIC_READ || t == NF_SIM_RECREATE_LOGS;
}

/* (time, seq) is unique, so the order events come out in does not depend on
 * how the queue is laid out. Bitwise operators: no branch to mispredict. */
static inline bool sim_less(const struct nf_sim_event *a, const struct nf_sim_event *b)
{
	return (a->time < b->time) | ((a->time == b->time) & (a->seq < b->seq));
}

/*
 * Two layouts, the same order out:
 * - while few events are pending (the usual case: a few per queue), a sorted
 *   array, earliest first, from heap_head on. A pop takes the first one (no
 *   sifting). A new event is mostly either the latest of all (a command that
 *   becomes available after the submission latency: appended) or due soon (a
 *   command's end, a woken queue: found from the front, and the few events
 *   before it move down one slot);
 * - past SIM_SORTED_MAX, a 4-ary heap: half the depth of a binary one, and the
 *   four children share two cache lines. Slots past its end hold sentinels
 *   (the largest key), always at least four, so a pop compares all four
 *   children without checking bounds. It goes back to the sorted array when
 *   SIM_SORTED_BACK or fewer events are left.
 */
#define SIM_PAD 4u
#define SIM_SORTED_MAX 64u
#define SIM_SORTED_BACK 16u

static void sim_sentinels(struct nf_sim_event *h, uint32_t from, uint32_t to)
{
	for (uint32_t k = from; k < to; k++) {
		h[k].time = UINT64_MAX;
		h[k].seq = UINT64_MAX;
	}
}

/* Stores a new entry as two 16-byte halves. The entry is often the next one
 * popped, at once, and sim_pop copies it with 16-byte loads: a load that spans
 * several smaller stores cannot be forwarded from them and stalls. */
static inline void sim_store(struct nf_sim_event *dst, uint64_t time, uint64_t seq,
			     enum nf_sim_type type, uint32_t a, uint32_t b, uint32_t c)
{
#ifdef __SSE2__
	_Static_assert(offsetof(struct nf_sim_event, seq) == 8 &&
			       offsetof(struct nf_sim_event, type) == 16 &&
			       offsetof(struct nf_sim_event, a) == 20 &&
			       offsetof(struct nf_sim_event, b) == 24 &&
			       offsetof(struct nf_sim_event, c) == 28 && sizeof(struct nf_sim_event) == 32,
		       "sim_store's layout");
	_mm_storeu_si128((__m128i *)(void *)dst, _mm_set_epi64x((long long)seq, (long long)time));
	_mm_storeu_si128((__m128i *)(void *)&dst->type,
			 _mm_set_epi32((int)c, (int)b, (int)a, (int)type));
#else
	struct nf_sim_event ev = { time, seq, type, a, b, c };
	*dst = ev;
#endif
}

/* The next event (the queue is not empty). */
static inline const struct nf_sim_event *sim_top(const struct nf_runtime *rt)
{
	return &rt->heap[rt->heap_head];
}

static int sim_cmp(const void *x, const void *y)
{
	const struct nf_sim_event *a = x, *b = y;

	return sim_less(a, b) ? -1 : sim_less(b, a) ? 1 : 0;
}

static int sim_push(struct nf_runtime *rt, uint64_t time, enum nf_sim_type type, uint32_t a,
		    uint32_t b, uint32_t c)
{
	uint32_t old_cap = rt->heap_cap, need = rt->heap_len + 1 + SIM_PAD;

	if (grow((void **)&rt->heap, &rt->heap_cap, need < 4 * SIM_SORTED_MAX ? 4 * SIM_SORTED_MAX : need,
		 sizeof(*rt->heap)))
		return nf_error_set(&rt->err, NF_ENOMEM, "out of memory (event heap)");
	if (rt->heap_cap != old_cap)
		sim_sentinels(rt->heap, old_cap, rt->heap_cap);
	uint64_t seq = rt->heap_seq++;
	struct nf_sim_event key = { .time = time, .seq = seq };
	struct nf_sim_event *h = rt->heap;
	uint32_t n = rt->heap_len, i;

	if (!rt->heap_is_heap && n == SIM_SORTED_MAX) {
		/* Too many for the sorted array: earliest first is a valid heap. */
		memmove(h, h + rt->heap_head, (size_t)n * sizeof(*h));
		rt->heap_head = 0;
		sim_sentinels(h, n, rt->heap_cap);
		rt->heap_is_heap = true;
	}
	rt->heap_len++;
	if (rt->heap_is_heap) {
		i = n;
		while (i > 0) {
			uint32_t p = (i - 1) / 4;
			if (!sim_less(&key, &h[p]))
				break;
			h[i] = h[p];
			i = p;
		}
	} else {
		uint32_t head = rt->heap_head, tail = head + n;

		if (tail == rt->heap_cap) {
			memmove(h, h + head, (size_t)n * sizeof(*h));
			rt->heap_head = head = 0;
			tail = n;
		}
		if (n == 0 || sim_less(&h[tail - 1], &key)) {
			i = tail; /* the latest */
		} else {
			uint32_t p = head;

			while (sim_less(&h[p], &key))
				p++;
			if (head > 0 && p - head <= tail - p) {
				/* the events due before it move down one slot */
				for (i = head; i < p; i++)
					h[i - 1] = h[i];
				rt->heap_head = head - 1;
				i = p - 1;
			} else {
				for (i = tail; i > p; i--)
					h[i] = h[i - 1];
				i = p;
			}
		}
	}
	sim_store(&h[i], time, seq, type, a, b, c);
	if (!sim_periodic(type))
		rt->active_sims++;
	return 0;
}

static struct nf_sim_event sim_pop(struct nf_runtime *rt)
{
	struct nf_sim_event *h = rt->heap;

	if (!rt->heap_is_heap) {
		struct nf_sim_event top = h[rt->heap_head];

		if (--rt->heap_len)
			rt->heap_head++;
		else
			rt->heap_head = 0;
		if (!sim_periodic(top.type))
			rt->active_sims--;
		return top;
	}
	struct nf_sim_event top = h[0];
	uint32_t len = --rt->heap_len, i = 0, c;
	struct nf_sim_event last = h[len];

	sim_sentinels(h, len, len + 1);
	while ((c = 4 * i + 1) < len) {
		/* the smallest of the four children, chosen without a branch */
		uint32_t m01 = c + (uint32_t)sim_less(&h[c + 1], &h[c]);
		uint32_t m23 = c + 2 + (uint32_t)sim_less(&h[c + 3], &h[c + 2]);
		uint32_t m = sim_less(&h[m23], &h[m01]) ? m23 : m01;

		if (!sim_less(&h[m], &last))
			break;
		h[i] = h[m];
		i = m;
	}
	if (len)
		h[i] = last;
	if (len <= SIM_SORTED_BACK) {
		/* Few left: back to the sorted array. */
		qsort(h, len, sizeof(*h), sim_cmp);
		rt->heap_is_heap = false;
	}
	if (!sim_periodic(top.type))
		rt->active_sims--;
	return top;
}

static int queue_schedule(struct nf_runtime *rt, struct nf_queue *q, uint64_t at)
{
	if (q->step_scheduled && q->step_at <= at)
		return 0;
	q->step_scheduled = true;
	q->step_at = at;
	return sim_push(rt, at, NF_SIM_QUEUE_STEP, (uint32_t)(q - rt->queues), 0, 0);
}

/* ------------------------------------------------------------------ */
/* fence values                                                        */

/* The OS's 64-bit view of a fence written by a GPU with 32-bit atomics:
 * serial-number arithmetic around the last value it saw. */
static uint64_t extend32(uint64_t last64, uint32_t cur32)
{
	return last64 + (uint64_t)(int64_t)(int32_t)(cur32 - (uint32_t)last64);
}

static bool value_reached(const struct nf_adapter *a, const struct nf_global_fence *g,
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

	return !atomic_load(&g->alive) || value_reached(&rt->adapters[adapter], g, value);
}

/*
 * Writes CurrentValue as the given adapter's GPU (or the OS for it) would: one
 * atomic 64-bit store (never torn; sequentially consistent, so it is the
 * "write" half of the write-then-read-MonitoredValue pairing). A 32-bit GPU
 * writes the low half; the OS's 64-bit view is extended from the last one, in a
 * compare-and-swap loop because several engines may signal one fence at once.
 */
static void fence_write(struct nf_runtime *rt, struct nf_global_fence *g, uint32_t adapter,
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
static int check_window(struct nf_runtime *rt, const struct nf_global_fence *g, uint32_t adapter,
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

static int wake_gpu_waiters(struct nf_runtime *rt, struct nf_global_fence *g, uint32_t adapter);
static int emit_unwait(nf_runtime *rt, const struct nf_cpu_waiter *w, uint64_t current);

/* Releases the CPU waiters the fence's CurrentValue satisfies. */
static int satisfy_cpu_waiters(struct nf_runtime *rt, struct nf_global_fence *g, uint32_t *woken)
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
			rc = emit_unwait(rt, w, g->current);
			STAT(rt, cpu_wakeups);
			if (woken)
				(*woken)++;
			if (w->cpu_event) {
				uint32_t ei;
				if (!handle_lookup(rt, w->cpu_event, NF_OBJ_CPU_EVENT, &ei))
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
static int update_monitored(struct nf_runtime *rt, struct nf_global_fence *g, uint32_t *woken)
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
			int rc = emit(rt, &ev);
			if (rc)
				return rc;
			changed = true;
		}
		if (wmin > atomic_load(&g->wait_min))
			atomic_store(&g->wait_min, wmin);
		/* 4. satisfy what the resampled CurrentValue unblocks. */
		uint32_t before = woken ? *woken : 0, n = 0;
		int rc = satisfy_cpu_waiters(rt, g, &n);
		if (rc)
			return rc;
		if (woken)
			*woken = before + n;
		if (!changed && n == 0)
			return 0;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* log buffers                                                         */

static struct nf_log *queue_log(struct nf_queue *q, uint32_t type)
{
	return &q->logs[type == NF_LOG_WAITS ? 0 : 1];
}

static int log_alloc(struct nf_log *lg, uint32_t type, uint32_t capacity)
{
	free(lg->entries);
	free(lg->truth);
	memset(lg, 0, sizeof(*lg));
	lg->type = type;
	lg->capacity = capacity;
	lg->entries = calloc(capacity, sizeof(*lg->entries));
	lg->truth = calloc(capacity, sizeof(*lg->truth));
	if (!lg->entries || !lg->truth)
		return NF_ENOMEM;
	lg->header.type = type;
	lg->header.number_of_entries = capacity;
	return 0;
}

static int emit_set_log(struct nf_runtime *rt, struct nf_queue *q, struct nf_log *lg)
{
	struct nf_event ev;

	EV_INIT(ev, SET_LOG_BUFFER);
	ev.f[NFF_SET_LOG_BUFFER_adapter] = q->adapter;
	ev.f[NFF_SET_LOG_BUFFER_hwqueue] = q->handle;
	ev.f[NFF_SET_LOG_BUFFER_log_type] = lg->type;
	ev.f[NFF_SET_LOG_BUFFER_epoch] = lg->epoch;
	ev.f[NFF_SET_LOG_BUFFER_capacity] = lg->capacity;
	return emit(rt, &ev);
}

static int emit_truth_op(struct nf_runtime *rt, const struct nf_queue *q, uint32_t log_type,
			 uint32_t epoch, uint64_t seq, const struct nf_truth_slot *t, uint32_t fate)
{
	struct nf_event ev;

	(void)log_type;
	if (!rt->cfg.ground_truth) {
		/* What emit_at does with a truth event nobody asked for, without
		 * filling it first. */
		if (rt->err.code)
			return rt->err.code;
		STAT(rt, events_emitted);
		return 0;
	}
	EV_INIT(ev, TRUTH_OP);
	ev.f[NFF_TRUTH_OP_adapter] = q->adapter;
	ev.f[NFF_TRUTH_OP_hwqueue] = q->handle;
	ev.f[NFF_TRUTH_OP_op] = t->op;
	ev.f[NFF_TRUTH_OP_fence] = t->local;
	ev.f[NFF_TRUTH_OP_value] = t->value;
	ev.f[NFF_TRUTH_OP_queued_ns] = t->queued_ns;
	ev.f[NFF_TRUTH_OP_observed_ns] = t->observed_ns;
	ev.f[NFF_TRUTH_OP_end_ns] = t->end_ns;
	ev.f[NFF_TRUTH_OP_epoch] = epoch;
	ev.f[NFF_TRUTH_OP_seq] = seq;
	ev.f[NFF_TRUTH_OP_fate] = fate;
	ev.f[NFF_TRUTH_OP_ts_fault] = t->ts_fault;
	return emit(rt, &ev);
}

/*
 * The GPU writes a log entry: payload, then FirstFreeEntryIndex (and
 * WraparoundCount when it wraps). Overrun is permitted: an entry the OS never
 * read is overwritten, and the truth stream says so.
 *
 * Threaded mode: the queue's engine thread is the only writer; the OS reads
 * under the queue's log lock, which stands for the flush handshake the OS does
 * with DxgkDdiUpdateNativeFenceLogs before it reads a log.
 */
static int log_write(struct nf_runtime *rt, struct nf_queue *q, struct nf_log *lg,
		     const struct nf_cmd *c, uint64_t observed_ns, uint64_t end_ns)
{
	const struct nf_adapter *a = &rt->adapters[q->adapter];
	uint64_t *rng = rt->threaded ? &q->rng : &rt->rng;
	struct nf_truth_slot lost_truth;
	uint64_t lost_seq = 0;
	uint32_t fault = 0, epoch;
	bool lost = false;
	uint64_t end_ts = gpu_ticks(a, end_ns);

	nf_th_log_lock(rt, q);
	uint64_t seq = lg->written;
	/* FirstFreeEntryIndex is always written % capacity: no division */
	uint32_t slot = lg->header.first_free_entry_index;
	struct nf_log_entry *e = &lg->entries[slot];

	epoch = lg->epoch;
	if (seq >= lg->capacity && seq - lg->capacity >= lg->read_total) {
		/* Overwriting an entry the OS never read. */
		lost = true;
		lost_seq = seq - lg->capacity;
		lost_truth = lg->truth[slot];
		lg->lost++;
		STAT(rt, log_entries_lost);
	}
	if (a->desc.zero_ts_rate > 0 && rng_unit(rng) < a->desc.zero_ts_rate) {
		end_ts = 0; /* a linked adapter of the chain skipped the write */
		fault = 1;
	} else if (a->desc.repeat_ts_rate > 0 && lg->last_end_ts &&
		   rng_unit(rng) < a->desc.repeat_ts_rate) {
		end_ts = lg->last_end_ts;
		fault = 2;
	}
	if (end_ts)
		lg->last_end_ts = end_ts;
	memset(e, 0, sizeof(*e));
	e->fence_value = c->value;
	e->hnative_fence = c->local;
	if (lg->type == NF_LOG_WAITS) {
		e->operation_type = NF_LOG_OP_WAIT_UNBLOCKED;
		e->fence_observed_gpu_timestamp = fault == 1 ? 0 : gpu_ticks(a, observed_ns);
	} else {
		e->operation_type = NF_LOG_OP_SIGNAL_EXECUTED;
	}
	e->fence_end_gpu_timestamp = end_ts;
	struct nf_truth_slot *t = &lg->truth[slot];
	t->queued_ns = c->queued_ns;
	t->observed_ns = observed_ns;
	t->end_ns = end_ns;
	t->value = c->value;
	t->local = c->local;
	t->op = lg->type == NF_LOG_WAITS ? 1 : 0;
	t->ts_fault = fault;
	/* Increment FirstFreeEntryIndex, then a barrier (the interrupt check follows). */
	lg->written++;
	if (slot + 1 == lg->capacity) {
		lg->header.first_free_entry_index = 0;
		lg->header.wraparound_count++; /* (uint32_t)(written / capacity) */
	} else {
		lg->header.first_free_entry_index = slot + 1;
	}
	atomic_thread_fence(memory_order_release);
	nf_th_log_unlock(rt, q);
	STAT(rt, log_entries_written);
	if (!lost)
		return 0;
	nf_th_lock(rt);
	int rc = emit_truth_op(rt, q, lg->type, epoch, lost_seq, &lost_truth, 1);
	nf_th_unlock(rt);
	return rc;
}

static int u32_cmp(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return a < b ? -1 : a > b;
}

/*
 * Optimized interrupt bookkeeping: the OS read a signal entry of global fence
 * gi from q's log. Only fences with CPU waiters (a waiter registered later is
 * satisfied by the resample at registration if the value is already there) and
 * cross-adapter fences (their value goes to the other adapters) are kept. A
 * full list is sorted and deduplicated before it grows, so it stays
 * within twice the number of distinct fences.
 */
static int pend_add(struct nf_runtime *rt, struct nf_queue *q, uint32_t gi)
{
	if (q->n_pend && q->pend[q->n_pend - 1] == gi)
		return 0;
	if (q->n_pend == q->cap_pend) {
		if (q->n_pend >= 64) {
			uint32_t n = 0;

			qsort(q->pend, q->n_pend, sizeof(*q->pend), u32_cmp);
			for (uint32_t i = 0; i < q->n_pend; i++)
				if (!n || q->pend[n - 1] != q->pend[i])
					q->pend[n++] = q->pend[i];
			q->n_pend = n;
		}
		if ((q->n_pend == q->cap_pend || q->n_pend * 2 > q->cap_pend) &&
		    grow((void **)&q->pend, &q->cap_pend, q->cap_pend + 1, sizeof(*q->pend)))
			return nf_error_set(&rt->err, NF_ENOMEM, "out of memory (interrupt bookkeeping)");
	}
	q->pend[q->n_pend++] = gi;
	return 0;
}

/*
 * The OS reads a log (after DxgkDdiUpdateNativeFenceLogs flushed it): read the
 * header word, compare with the cached one, walk the new entries, and flag an
 * overrun when WraparoundCount moved past what it could read. The entries are
 * copied under the log lock and emitted after it.
 * Returns the number of entries lost in *lost_out.
 */
static int log_read(struct nf_runtime *rt, struct nf_queue *q, struct nf_log *lg,
		    uint64_t *lost_out)
{
	uint64_t start, lost = 0, total, header;
	uint32_t n, epoch, capacity, type;
	struct nf_event ev;
	int rc;

	if (lost_out)
		*lost_out = 0;
	nf_th_log_lock(rt, q);
	total = (uint64_t)lg->header.wraparound_count * lg->capacity +
		lg->header.first_free_entry_index;
	start = lg->read_total;
	if (total == lg->read_total) {
		nf_th_log_unlock(rt, q);
		return 0;
	}
	if (total - start > lg->capacity) {
		lost = total - start - lg->capacity;
		start = total - lg->capacity;
	}
	n = (uint32_t)(total - start);
	if (n > rt->scratch_cap) {
		uint32_t cap = rt->scratch_cap;
		void *t = rt->scratch_truth;
		if (grow((void **)&rt->scratch_entries, &rt->scratch_cap, n, sizeof(struct nf_log_entry)) ||
		    grow(&t, &cap, n, sizeof(struct nf_truth_slot))) {
			nf_th_log_unlock(rt, q);
			return nf_error_set(&rt->err, NF_ENOMEM, "out of memory (log read)");
		}
		rt->scratch_truth = t;
	}
	bool want_truth = rt->cfg.ground_truth;
	/* An optimized interrupt wakes the waiters of the fences the OS read
	 * signals of: note them (only on such adapters, only signals). */
	bool want_fences = lg->type == NF_LOG_SIGNALS && rt->adapters[q->adapter].optimized;
	uint32_t last_fence = 0;
	int prc = 0;
	uint32_t slot = (uint32_t)(start % lg->capacity);
	/* Deterministic, and the entries do not wrap: the event points at the log
	 * itself (nothing writes it before the event is emitted), no copy. */
	const struct nf_log_entry *entries =
		!rt->threaded && slot + (uint64_t)n <= lg->capacity ? &lg->entries[slot] : NULL;
	for (uint32_t i = 0; i < n; i++, slot = slot + 1 == lg->capacity ? 0 : slot + 1) {
		const struct nf_log_entry *e = &lg->entries[slot];

		if (!entries)
			rt->scratch_entries[i] = *e;
		if (want_truth)
			rt->scratch_truth[i] = lg->truth[slot];
		if (want_fences && e->hnative_fence != last_fence && !prc) {
			uint32_t li;

			last_fence = e->hnative_fence;
			/* An unknown handle names no fence; an overrun covers it. */
			if (!handle_lookup(rt, e->hnative_fence, NF_OBJ_LOCAL_FENCE, &li) &&
			    (rt->globals[rt->locals[li].global].waiters ||
			     rt->globals[rt->locals[li].global].cross_adapter))
				prc = pend_add(rt, q, rt->locals[li].global);
		}
		/* What the reader sees, in its own terms (ground truth counts). */
		if (e->fence_end_gpu_timestamp == 0) {
			lg->zero_read++;
		} else {
			if (e->fence_end_gpu_timestamp == lg->last_read_ts)
				lg->repeated_read++;
			lg->last_read_ts = e->fence_end_gpu_timestamp;
		}
	}
	header = (uint64_t)lg->header.first_free_entry_index |
		 ((uint64_t)lg->header.wraparound_count << 32);
	epoch = lg->epoch;
	capacity = lg->capacity;
	type = lg->type;
	lg->read_total = total;
	nf_th_log_unlock(rt, q);
	if (prc)
		return prc;

	EV_INIT(ev, LOG_READ);
	ev.f[NFF_LOG_READ_adapter] = q->adapter;
	ev.f[NFF_LOG_READ_hwqueue] = q->handle;
	ev.f[NFF_LOG_READ_log_type] = type;
	ev.f[NFF_LOG_READ_epoch] = epoch;
	ev.f[NFF_LOG_READ_header] = header;
	ev.f[NFF_LOG_READ_capacity] = capacity;
	ev.f[NFF_LOG_READ_first_slot] = start % capacity;
	ev.f[NFF_LOG_READ_entry_count] = n;
	ev.entries = entries ? entries : rt->scratch_entries;
	rc = emit(rt, &ev);
	if (rc)
		return rc;
	if (lost) {
		EV_INIT(ev, LOG_OVERRUN);
		ev.f[NFF_LOG_OVERRUN_adapter] = q->adapter;
		ev.f[NFF_LOG_OVERRUN_hwqueue] = q->handle;
		ev.f[NFF_LOG_OVERRUN_log_type] = type;
		ev.f[NFF_LOG_OVERRUN_epoch] = epoch;
		ev.f[NFF_LOG_OVERRUN_lost] = lost;
		rc = emit(rt, &ev);
		if (rc)
			return rc;
	}
	for (uint32_t i = 0; i < n; i++) {
		rc = emit_truth_op(rt, q, type, epoch, start + i, &rt->scratch_truth[i], 0);
		if (rc)
			return rc;
	}
	STAT(rt, log_reads);
	if (lost_out)
		*lost_out = lost;
	return 0;
}

static int queue_read_logs(struct nf_runtime *rt, struct nf_queue *q, uint64_t *lost)
{
	uint64_t l1 = 0, l2 = 0;
	int rc;

	if (!q->native)
		return 0;
	rc = log_read(rt, q, &q->logs[0], &l1);
	if (!rc)
		rc = log_read(rt, q, &q->logs[1], &l2);
	if (lost)
		*lost += l1 + l2;
	return rc;
}

static int emit_truth_log(struct nf_runtime *rt, struct nf_queue *q, struct nf_log *lg)
{
	struct nf_event ev;

	EV_INIT(ev, TRUTH_LOG);
	ev.f[NFF_TRUTH_LOG_adapter] = q->adapter;
	ev.f[NFF_TRUTH_LOG_hwqueue] = q->handle;
	nf_th_log_lock(rt, q);
	ev.f[NFF_TRUTH_LOG_log_type] = lg->type;
	ev.f[NFF_TRUTH_LOG_epoch] = lg->epoch;
	ev.f[NFF_TRUTH_LOG_written] = lg->written;
	ev.f[NFF_TRUTH_LOG_lost] = lg->lost;
	ev.f[NFF_TRUTH_LOG_zero_ts] = lg->zero_read;
	ev.f[NFF_TRUTH_LOG_repeated_ts] = lg->repeated_read;
	nf_th_log_unlock(rt, q);
	return emit(rt, &ev);
}

/* The OS destroys a queue's logs and recreates them at a new location. It reads
 * what is there first, so recreation loses nothing. */
static int overrun_fallback(struct nf_runtime *rt, uint32_t adapter, uint64_t lost);

static int queue_recreate_logs(struct nf_runtime *rt, struct nf_queue *q)
{
	uint64_t lost = 0;
	int rc = queue_read_logs(rt, q, &lost);

	if (!rc)
		rc = overrun_fallback(rt, q->adapter, lost);

	for (int i = 0; i < 2 && !rc; i++) {
		struct nf_log *lg = &q->logs[i];
		uint32_t epoch = lg->epoch + 1, type = lg->type, cap = lg->capacity;

		rc = emit_truth_log(rt, q, lg);
		if (rc)
			break;
		if (log_alloc(lg, type, cap))
			return nf_error_set(&rt->err, NF_ENOMEM, "out of memory (log buffer)");
		lg->epoch = epoch;
		rc = emit_set_log(rt, q, lg);
	}
	return rc;
}

int nf_eng_recreate_logs(struct nf_runtime *rt, struct nf_queue *q)
{
	return q->alive && q->native ? queue_recreate_logs(rt, q) : 0;
}

/* ------------------------------------------------------------------ */
/* interrupts and the OS's handling of them                             */

static bool fence_has_cpu_need(const struct nf_global_fence *g, uint64_t value)
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
static int propagate_cross_adapter(struct nf_runtime *rt, struct nf_global_fence *g,
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
		int rc = emit(rt, &ev);
		if (!rc)
			rc = wake_gpu_waiters(rt, g, a);
		if (rc)
			return rc;
	}
	return 0;
}

/* The OS evaluates the CPU waiters of one fence: satisfy what CurrentValue
 * unblocks, then the MonitoredValue protocol. */
static int evaluate_fence(struct nf_runtime *rt, struct nf_global_fence *o, uint32_t *woken)
{
	int rc = satisfy_cpu_waiters(rt, o, woken);

	return rc ? rc : update_monitored(rt, o, woken);
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
static int overrun_fallback(struct nf_runtime *rt, uint32_t adapter, uint64_t lost)
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
		return rc ? rc : propagate_cross_adapter(rt, g, q->adapter);
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
		rc = queue_read_logs(rt, o, &lost);
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
				qsort(o->pend, o->n_pend, sizeof(*o->pend), u32_cmp);
			for (uint32_t k = 0; k < o->n_pend && !rc; k++) {
				struct nf_global_fence *f = &rt->globals[o->pend[k]];

				if ((k && o->pend[k] == o->pend[k - 1]) || !atomic_load(&f->alive))
					continue;
				rc = evaluate_fence(rt, f, &woken);
				if (!rc)
					rc = propagate_cross_adapter(rt, f, q->adapter);
			}
			o->n_pend = 0;
		}
	} else {
		rc = evaluate_fence(rt, g, &woken);
	}
	/* The fence named (or, NULL array or overrun, the one that raised it):
	 * its new value goes to the other adapters. */
	if (!rc && (!optimized || lost))
		rc = propagate_cross_adapter(rt, g, q->adapter);
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
	return emit(rt, &ev);
}

/* ------------------------------------------------------------------ */
/* GPU execution                                                       */

static int gpu_waiter_add(struct nf_global_fence *g, uint32_t qi, uint64_t value)
{
	if (grow((void **)&g->gpu_waiters, &g->cap_gpu_waiters, g->n_gpu_waiters + 1,
		 sizeof(*g->gpu_waiters)))
		return NF_ENOMEM;
	g->gpu_waiters[g->n_gpu_waiters].queue = qi;
	g->gpu_waiters[g->n_gpu_waiters].value = value;
	g->n_gpu_waiters++;
	return 0;
}

/* The fence changed on `adapter`: blocked queues of that adapter re-evaluate
 * (threaded: the engine threads blocked on a GPU wait re-read the value). */
static int wake_gpu_waiters(struct nf_runtime *rt, struct nf_global_fence *g, uint32_t adapter)
{
	if (rt->threaded) {
		nf_th_gpu_notify(rt, (uint32_t)(g - rt->globals));
		return 0;
	}
	for (uint32_t i = 0; i < g->n_gpu_waiters;) {
		struct nf_queue *q = &rt->queues[g->gpu_waiters[i].queue];

		if (q->adapter == adapter &&
		    value_reached(&rt->adapters[adapter], g, g->gpu_waiters[i].value)) {
			q->blocked = false;
			g->gpu_waiters[i] = g->gpu_waiters[--g->n_gpu_waiters];
			int rc = queue_schedule(rt, q, rt->now);
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
		if (!fence_has_cpu_need(g, g->current))
			STAT(rt, interrupts_unneeded);
		return sim_push(rt, rt->now + rt->adapters[q->adapter].desc.interrupt_latency_ns,
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
		fence_write(rt, g, q->adapter, c->value);
		EV_INIT(ev, GPU_SIGNAL_LEGACY);
		ev.f[NFF_GPU_SIGNAL_LEGACY_adapter] = q->adapter;
		ev.f[NFF_GPU_SIGNAL_LEGACY_hwqueue] = q->handle;
		ev.f[NFF_GPU_SIGNAL_LEGACY_fence] = c->local;
		ev.f[NFF_GPU_SIGNAL_LEGACY_value] = c->value;
		rc = emit(rt, &ev);
		if (!rc)
			rc = wake_gpu_waiters(rt, g, q->adapter);
		if (!rc && q->native) {
			uint32_t qi = (uint32_t)(q - rt->queues);

			if (rt->threaded)
				nf_th_raise_interrupt(rt, qi, c->global);
			else
				rc = sim_push(rt, rt->now + rt->adapters[q->adapter].desc.interrupt_latency_ns,
					      NF_SIM_INTERRUPT, qi, 0, c->global);
			nf_th_unlock(rt);
			return rc;
		}
		if (!rc)
			rc = satisfy_cpu_waiters(rt, g, NULL);
		if (!rc)
			rc = update_monitored(rt, g, NULL);
		if (!rc && g->cross_adapter)
			rc = propagate_cross_adapter(rt, g, q->adapter);
		nf_th_unlock(rt);
		return rc;
	}
	/* 1. write the new fence value; 2. write the log entry and bump the index. */
	uint64_t t = now_ns(rt);
	fence_write(rt, g, q->adapter, c->value);
	rc = log_write(rt, q, queue_log(q, NF_LOG_SIGNALS), c, t, t);
	if (rc)
		return rc;
	/* Same-adapter GPU waiters see the value in memory at once. */
	rc = wake_gpu_waiters(rt, g, q->adapter);
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
		return log_write(rt, q, queue_log(q, NF_LOG_WAITS), c, observed_ns, now_ns(rt));
	EV_INIT(ev, GPU_WAIT_LEGACY);
	ev.f[NFF_GPU_WAIT_LEGACY_adapter] = q->adapter;
	ev.f[NFF_GPU_WAIT_LEGACY_hwqueue] = q->handle;
	ev.f[NFF_GPU_WAIT_LEGACY_fence] = c->local;
	ev.f[NFF_GPU_WAIT_LEGACY_value] = c->value;
	ev.f[NFF_GPU_WAIT_LEGACY_released] = 1;
	nf_th_lock(rt);
	rc = emit(rt, &ev);
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
			return queue_schedule(rt, q, q->busy_until);
		if (c->available_ns > rt->now)
			return queue_schedule(rt, q, c->available_ns);
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
			if (!g->alive || value_reached(a, g, c->value)) {
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

static int calibrate(struct nf_runtime *rt, uint32_t ai)
{
	struct nf_adapter *a = &rt->adapters[ai];
	struct nf_event ev;
	uint64_t j = a->desc.gpu_clock.jitter_ns;
	int64_t jitter = j ? (int64_t)(rng_next(rt) % (2 * j + 1)) - (int64_t)j : 0;
	uint64_t now = now_ns(rt);
	uint64_t cpu_t = (int64_t)now + jitter < 0 ? 0 : (uint64_t)((int64_t)now + jitter);

	EV_INIT(ev, CALIBRATE_GPU_CLOCK);
	ev.f[NFF_CALIBRATE_GPU_CLOCK_adapter] = ai;
	ev.f[NFF_CALIBRATE_GPU_CLOCK_gpu_frequency] = a->desc.gpu_clock.frequency;
	ev.f[NFF_CALIBRATE_GPU_CLOCK_gpu_clock] = gpu_ticks(a, now);
	ev.f[NFF_CALIBRATE_GPU_CLOCK_cpu_clock] = cpu_ticks(rt, cpu_t);
	/* Alternate the CMP clock and the engine clock (same time base here). */
	ev.f[NFF_CALIBRATE_GPU_CLOCK_from_cmp] = (a->calib_count++ % 2) == 0;
	return emit(rt, &ev);
}

/* The periodic and the final read of every log; an overrun any of them finds
 * makes the OS scan the fences of that adapter. */
static int read_all_logs(struct nf_runtime *rt)
{
	uint64_t lost[NF_MAX_ADAPTERS] = { 0 };
	int rc = 0;

	for (uint32_t i = 0; i < rt->n_queues && !rc; i++)
		if (rt->queues[i].alive)
			rc = queue_read_logs(rt, &rt->queues[i], &lost[rt->queues[i].adapter]);
	for (uint32_t a = 0; a < rt->n_adapters && !rc; a++)
		rc = overrun_fallback(rt, a, lost[a]);
	return rc;
}

int nf_eng_read_all_logs(struct nf_runtime *rt)
{
	return rt->finished ? 0 : read_all_logs(rt);
}

int nf_eng_calibrate_all(struct nf_runtime *rt)
{
	int rc = 0;

	for (uint32_t a = 0; a < rt->n_adapters && !rc && !rt->finished; a++)
		rc = calibrate(rt, a);
	return rc;
}

int nf_eng_sink_failed(struct nf_runtime *rt)
{
	return rt->err.code;
}

static int wait_timeout(struct nf_runtime *rt, uint32_t gi, uint32_t wait_id);

static int sim_dispatch(struct nf_runtime *rt, const struct nf_sim_event *se)
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
		rc = calibrate(rt, se->a);
		if (!rc)
			rc = sim_push(rt, se->time + rt->cfg.calibration_interval_ns, NF_SIM_CALIBRATE,
				      se->a, 0, 0);
		return rc;
	case NF_SIM_PERIODIC_READ:
		rc = read_all_logs(rt);
		if (!rc)
			rc = sim_push(rt, se->time + rt->cfg.log_read_interval_ns,
				      NF_SIM_PERIODIC_READ, 0, 0, 0);
		return rc;
	case NF_SIM_RECREATE_LOGS:
		for (uint32_t i = 0; i < rt->n_queues && !rc; i++)
			if (rt->queues[i].alive && rt->queues[i].native)
				rc = queue_recreate_logs(rt, &rt->queues[i]);
		if (!rc)
			rc = sim_push(rt, se->time + rt->cfg.log_recreate_interval_ns,
				      NF_SIM_RECREATE_LOGS, 0, 0, 0);
		return rc;
	case NF_SIM_WAIT_TIMEOUT:
		return wait_timeout(rt, se->a, se->b);
	}
	return 0;
}

/* The caller's interrupt flag (SIGINT), looked at every 1024 simulation
 * events: one advance may run millions of periodic reads. */
static bool sim_interrupted(const struct nf_runtime *rt, uint32_t *n)
{
	return (++*n & 1023u) == 0 && rt->cfg.interrupt &&
	       __atomic_load_n(rt->cfg.interrupt, __ATOMIC_RELAXED);
}

/* Runs every simulation event up to `until`, then sets the clock there;
 * NF_EINTR (the clock where it stopped) when interrupted. */
static int sim_run_until(struct nf_runtime *rt, uint64_t until)
{
	uint32_t n = 0;

	while (rt->heap_len && sim_top(rt)->time <= until && !rt->err.code) {
		if (sim_interrupted(rt, &n))
			return NF_EINTR;
		struct nf_sim_event se = sim_pop(rt);

		if (se.time > rt->now)
			rt->now = se.time;
		int rc = sim_dispatch(rt, &se);
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
static bool sim_step(struct nf_runtime *rt, int *rc)
{
	*rc = 0;
	if (!rt->active_sims || !rt->heap_len)
		return false;
	struct nf_sim_event se = sim_pop(rt);
	if (se.time > rt->now)
		rt->now = se.time;
	*rc = sim_dispatch(rt, &se);
	return true;
}

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
	    sim_push(rt, cfg->log_read_interval_ns, NF_SIM_PERIODIC_READ, 0, 0, 0))
		goto out_oom;
	if (cfg->log_recreate_interval_ns &&
	    sim_push(rt, cfg->log_recreate_interval_ns, NF_SIM_RECREATE_LOGS, 0, 0, 0))
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

static int check_rt(nf_runtime *rt, struct nf_error *err)
{
	if (!rt)
		return nf_error_set(err, NF_EINVAL, "NULL runtime");
	if (rt->err.code)
		return nf_error_set(err, rt->err.code, "%s", rt->err.msg);
	if (rt->finished)
		return nf_error_set(err, NF_ESTATE, "runtime already finished");
	return 0;
}

static int fail(nf_runtime *rt, int rc, struct nf_error *err)
{
	if (rc && rt->err.code)
		nf_error_set(err, rt->err.code, "%s", rt->err.msg);
	return rc;
}

static int api_runtime_advance(nf_runtime *rt, uint64_t ns, struct nf_error *err)
{
	int rc = check_rt(rt, err);

	if (rc)
		return rc;
	if (ns > UINT64_MAX - rt->now)
		return nf_error_set(err, NF_EINVAL, "time would overflow");
	rc = sim_run_until(rt, rt->now + ns);
	if (rc == NF_EINTR && !rt->err.code)
		return nf_error_set(err, NF_EINTR, "interrupted");
	return fail(rt, rc, err);
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
	int rc = check_rt(rt, err);
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
	while (!rt->threaded && sim_step(rt, &rc)) {
		if (rc)
			return fail(rt, rc, err);
		if (sim_interrupted(rt, &polls))
			return nf_error_set(err, NF_EINTR, "interrupted while the queues drained");
	}
	if (!rc)
		rc = read_all_logs(rt);
	for (uint32_t a = 0; a < rt->n_adapters && !rc; a++)
		rc = calibrate(rt, a);
	for (uint32_t i = 0; i < rt->n_queues && !rc; i++) {
		struct nf_queue *q = &rt->queues[i];

		if (!q->alive)
			continue;
		if (q->native)
			for (int l = 0; l < 2 && !rc; l++)
				rc = emit_truth_log(rt, q, &q->logs[l]);
		if (rc)
			break;
		EV_INIT(ev, HWQUEUE_STOP);
		ev.f[NFF_HWQUEUE_STOP_adapter] = q->adapter;
		ev.f[NFF_HWQUEUE_STOP_hwqueue] = q->handle;
		rc = emit(rt, &ev);
	}
	rt->finished = true;
	return fail(rt, rc, err);
}

/* ------------------------------------------------------------------ */
/* public API: adapters, queues                                        */

static int api_adapter_create(nf_runtime *rt, const struct nf_adapter_desc *desc, uint32_t *adapter_out,
		      struct nf_error *err)
{
	int rc = check_rt(rt, err);
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
	rc = emit(rt, &ev);
	if (!rc)
		rc = calibrate(rt, *adapter_out);
	if (!rc && !rt->threaded) /* threaded: the OS thread calibrates every adapter */
		rc = sim_push(rt, rt->now + rt->cfg.calibration_interval_ns, NF_SIM_CALIBRATE,
			      *adapter_out, 0, 0);
	return fail(rt, rc, err);
}

static int global_new(nf_runtime *rt, uint32_t adapter, const struct nf_fence_desc *d,
		      uint32_t *gi_out)
{
	if (rt->threaded && rt->n_globals >= rt->cap_globals)
		return nf_error_set(&rt->err, NF_ENOMEM, "too many fences for threaded mode (limit %u)",
				    NF_TH_MAX_GLOBALS);
	if (grow((void **)&rt->globals, &rt->cap_globals, rt->n_globals + 1, sizeof(*rt->globals)))
		return nf_error_set(&rt->err, NF_ENOMEM, "out of memory");
	uint32_t gi = rt->n_globals;
	struct nf_global_fence *g = &rt->globals[gi];
	int rc;

	memset(g, 0, sizeof(*g));
	rc = handle_new(rt, NF_OBJ_GLOBAL_FENCE, gi, &g->handle);
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
	if (grow((void **)&a->va_spaces, &a->cap_va_spaces, a->n_va_spaces + 1,
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

	if (grow((void **)&rt->locals, &rt->cap_locals, rt->n_locals + 1, sizeof(*rt->locals)))
		return nf_error_set(&rt->err, NF_ENOMEM, "out of memory");
	lf = &rt->locals[rt->n_locals];
	memset(lf, 0, sizeof(*lf));
	rc = handle_new(rt, NF_OBJ_LOCAL_FENCE, rt->n_locals, &lf->handle);
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
	return emit(rt, &ev);
}

static int api_hwqueue_create(nf_runtime *rt, uint32_t adapter, uint32_t node, uint32_t engine,
		      const char *name, nf_handle *queue_out, struct nf_error *err)
{
	int rc = check_rt(rt, err);
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
	if (grow((void **)&rt->queues, &rt->cap_queues, rt->n_queues + 1, sizeof(*rt->queues)))
		return nf_error_set(err, NF_ENOMEM, "out of memory");
	qi = rt->n_queues;
	q = &rt->queues[qi];
	memset(q, 0, sizeof(*q));
	rc = handle_new(rt, NF_OBJ_QUEUE, qi, &q->handle);
	if (rc)
		return fail(rt, rc, err);
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
		return fail(rt, rc, err);
	q = &rt->queues[qi];
	EV_INIT(ev, HWQUEUE_START);
	ev.f[NFF_HWQUEUE_START_adapter] = adapter;
	ev.f[NFF_HWQUEUE_START_node] = node;
	ev.f[NFF_HWQUEUE_START_engine] = engine;
	ev.f[NFF_HWQUEUE_START_hwqueue] = q->handle;
	ev.f[NFF_HWQUEUE_START_progress_fence] = q->progress_fence;
	ev.str = q->name;
	rc = emit(rt, &ev);
	if (rc)
		return fail(rt, rc, err);
	if (q->native) {
		/* Two logs per queue: DxgkDdiSetNativeFenceLogBuffer twice. */
		for (int l = 0; l < 2 && !rc; l++) {
			if (log_alloc(&q->logs[l], l == 0 ? NF_LOG_WAITS : NF_LOG_SIGNALS,
				      rt->adapters[adapter].log_entries))
				return nf_error_set(err, NF_ENOMEM, "out of memory (log buffer)");
			rc = emit_set_log(rt, q, &q->logs[l]);
		}
	}
	if (!rc && rt->threaded) {
		/* Its GPU engine thread, with its own timestamp-fault draws. */
		q->rng = rng_next(rt);
		rc = nf_th_queue_start(rt, q, err);
		if (rc)
			return rc;
	}
	*queue_out = q->handle;
	return fail(rt, rc, err);
}

static int api_hwqueue_destroy(nf_runtime *rt, nf_handle queue, struct nf_error *err)
{
	int rc = check_rt(rt, err);
	struct nf_queue *q;
	struct nf_event ev;

	if (rc)
		return rc;
	if (!(q = queue_get(rt, queue, err)))
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
	rc = queue_read_logs(rt, q, &lost);
	if (!rc)
		rc = overrun_fallback(rt, q->adapter, lost);
	for (int l = 0; l < 2 && !rc && q->native; l++)
		rc = emit_truth_log(rt, q, &q->logs[l]);
	if (rc)
		return fail(rt, rc, err);
	q->alive = false;
	EV_INIT(ev, HWQUEUE_STOP);
	ev.f[NFF_HWQUEUE_STOP_adapter] = q->adapter;
	ev.f[NFF_HWQUEUE_STOP_hwqueue] = q->handle;
	return fail(rt, emit(rt, &ev), err);
}

static int api_hwqueue_progress_fence(nf_runtime *rt, nf_handle queue, nf_handle *fence_out,
			      struct nf_error *err)
{
	struct nf_queue *q = queue_get(rt, queue, err);

	if (!q || !fence_out)
		return nf_error_set(err, NF_EINVAL, "invalid argument");
	*fence_out = q->progress_fence;
	return 0;
}

/* ------------------------------------------------------------------ */
/* public API: fences                                                  */

static int api_fence_create(nf_runtime *rt, uint32_t adapter, const struct nf_fence_desc *desc,
			    bool legacy_monitored, nf_handle *local_out, struct nf_error *err)
{
	int rc = check_rt(rt, err);
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
	return fail(rt, rc, err);
}

static int api_fence_global_handle(nf_runtime *rt, nf_handle local, nf_handle *global_out,
			   struct nf_error *err)
{
	struct nf_local_fence *lf = local_get(rt, local, err);

	if (!lf || !global_out)
		return NF_EINVAL;
	*global_out = rt->globals[lf->global].handle;
	return 0;
}

static int api_fence_open(nf_runtime *rt, uint32_t adapter, uint32_t process, nf_handle global,
		  nf_handle *local_out, struct nf_error *err)
{
	int rc = check_rt(rt, err);
	uint32_t gi;

	if (rc)
		return rc;
	if (!local_out)
		return nf_error_set(err, NF_EINVAL, "nf_fence_open: NULL output");
	if (adapter >= rt->n_adapters)
		return nf_error_set(err, NF_EINVAL, "no adapter %u", adapter);
	if (handle_lookup(rt, global, NF_OBJ_GLOBAL_FENCE, &gi) || !rt->globals[gi].alive)
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
		rc = update_monitored(rt, g, NULL);
	}
	return fail(rt, rc, err);
}

static int emit_unwait(nf_runtime *rt, const struct nf_cpu_waiter *w, uint64_t current);

static int api_fence_close(nf_runtime *rt, nf_handle local, struct nf_error *err)
{
	int rc = check_rt(rt, err);
	struct nf_local_fence *lf;
	struct nf_global_fence *g;
	struct nf_event ev;

	if (rc)
		return rc;
	if (!(lf = local_get(rt, local, err)))
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
	rc = emit(rt, &ev);
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
					rc = emit_unwait(rt, w, g->current);
			}
		g->waiters = NULL;
		atomic_store(&g->wait_min, UINT64_MAX);
		if (rt->threaded)
			nf_th_cpu_wake(rt);
	}
	return fail(rt, rc, err);
}

static int api_fence_gpu_va(nf_runtime *rt, nf_handle local, struct nf_fence_va *out,
			    struct nf_error *err)
{
	struct nf_local_fence *lf = local_get(rt, local, err);

	if (!lf)
		return NF_EINVAL;
	if (!out)
		return nf_error_set(err, NF_EINVAL, "nf_fence_gpu_va: NULL output");
	*out = lf->va;
	return 0;
}

static int api_fence_read(nf_runtime *rt, nf_handle local, uint64_t *current, uint64_t *monitored,
		  struct nf_error *err)
{
	struct nf_local_fence *lf = local_get(rt, local, err);

	if (!lf)
		return NF_EINVAL;
	const struct nf_global_fence *g = &rt->globals[lf->global];
	if (current)
		*current = atomic_load(&g->current);
	if (monitored)
		*monitored = g->monitored[lf->adapter];
	return 0;
}

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
	return fail(rt, queue_schedule(rt, q, c->available_ns), err);
}

static int queue_fence_op(nf_runtime *rt, nf_handle queue, nf_handle fence, uint64_t value,
			  enum nf_cmd_type type, struct nf_error *err)
{
	int rc = check_rt(rt, err);
	struct nf_queue *q;
	struct nf_local_fence *lf;
	struct nf_event ev;

	if (rc)
		return rc;
	if (!(q = queue_get(rt, queue, err)) || !(lf = local_get(rt, fence, err)))
		return NF_EINVAL;
	if (lf->adapter != q->adapter)
		return nf_error_set(err, NF_EINVAL,
				    "fence handle 0x%x is on adapter %u but queue 0x%x is on adapter %u",
				    fence, lf->adapter, queue, q->adapter);
	if (rt->cfg.max_operations && rt->stats.operations >= rt->cfg.max_operations)
		return nf_error_set(err, NF_ENOMEM, "operation limit of %llu reached",
				    (unsigned long long)rt->cfg.max_operations);
	struct nf_global_fence *g = &rt->globals[lf->global];
	rc = check_window(rt, g, q->adapter, value, err);
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
		rc = emit_at(rt, &ev, now);
	} else if (type == NF_CMD_WAIT) {
		/* Legacy: the OS tracks the wait and holds the queue's later work. */
		EV_INIT(ev, GPU_WAIT_LEGACY);
		ev.f[NFF_GPU_WAIT_LEGACY_adapter] = q->adapter;
		ev.f[NFF_GPU_WAIT_LEGACY_hwqueue] = q->handle;
		ev.f[NFF_GPU_WAIT_LEGACY_fence] = fence;
		ev.f[NFF_GPU_WAIT_LEGACY_value] = value;
		ev.f[NFF_GPU_WAIT_LEGACY_released] = 0;
		rc = emit(rt, &ev);
	}
	if (rc)
		return fail(rt, rc, err);
	return queue_push(rt, q, &c, err);
}

_Static_assert((int)NFF_FENCE_WAIT_QUEUED_value == (int)NFF_FENCE_SIGNAL_QUEUED_value &&
	       (int)NFF_FENCE_WAIT_QUEUED_thread == (int)NFF_FENCE_SIGNAL_QUEUED_thread,
	       "queued events share a layout");

static int api_queue_wait(nf_runtime *rt, nf_handle queue, nf_handle fence, uint64_t value,
		  struct nf_error *err)
{
	return queue_fence_op(rt, queue, fence, value, NF_CMD_WAIT, err);
}

static int api_queue_signal(nf_runtime *rt, nf_handle queue, nf_handle fence, uint64_t value,
		    struct nf_error *err)
{
	return queue_fence_op(rt, queue, fence, value, NF_CMD_SIGNAL, err);
}

static int api_queue_work(nf_runtime *rt, nf_handle queue, uint64_t gpu_ns, struct nf_error *err)
{
	int rc = check_rt(rt, err);
	struct nf_queue *q;

	if (rc)
		return rc;
	if (!(q = queue_get(rt, queue, err)))
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
	int rc = check_rt(rt, err);

	if (rc)
		return rc;
	if (!(*lf_out = local_get(rt, fence, err)))
		return NF_EINVAL;
	if (rt->globals[(*lf_out)->global].type == NF_FENCE_TYPE_INTRA_GPU)
		return nf_error_set(err, NF_EINVAL,
				    "fence 0x%x is INTRA_GPU: CPU waits and signals are not allowed",
				    fence);
	return 0;
}

static int emit_unwait(nf_runtime *rt, const struct nf_cpu_waiter *w, uint64_t current)
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
	return emit(rt, &ev);
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
	rc = emit(rt, &ev);
	if (rc)
		return rc;
	w->next = g->waiters;
	g->waiters = w;
	/* Write MonitoredValue, barrier, resample CurrentValue, satisfy. */
	return update_monitored(rt, g, NULL);
}

static void waiter_unlink(struct nf_global_fence *g, struct nf_cpu_waiter *w)
{
	for (struct nf_cpu_waiter **pp = &g->waiters; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			return;
		}
}

static int wait_timeout(struct nf_runtime *rt, uint32_t gi, uint32_t wait_id)
{
	struct nf_global_fence *g = &rt->globals[gi];

	for (struct nf_cpu_waiter *w = g->waiters; w; w = w->next)
		if (w->wait_id == wait_id && !w->done) {
			w->done = true;
			w->status = 1;
			STAT(rt, cpu_timeouts);
			waiter_unlink(g, w);
			int rc = emit_unwait(rt, w, g->current);
			if (!rc)
				rc = update_monitored(rt, g, NULL);
			return rc;
		}
	return 0;
}

static int api_cpu_wait(nf_runtime *rt, nf_handle fence, uint64_t value, uint64_t timeout_ns,
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
			rc = wait_timeout(rt, gi, w.wait_id);
			if (rc)
				goto out_unlink;
		}
	}
	/* Deterministic: run the world until satisfied or the deadline. */
	uint32_t polls = 0;
	while (!w.done) {
		if (sim_interrupted(rt, &polls)) {
			rc = NF_EINTR;
			goto out_unlink;
		}
		if (!rt->heap_len || sim_top(rt)->time > deadline || !rt->active_sims) {
			if (deadline == UINT64_MAX) {
				waiter_unlink(&rt->globals[gi], &w);
				update_monitored(rt, &rt->globals[gi], NULL);
				return nf_error_set(err, NF_ESTATE,
						    "CPU wait on fence 0x%x for %llu can never be satisfied: no GPU work is pending",
						    fence, (unsigned long long)value);
			}
			rc = sim_run_until(rt, deadline);
			if (rc)
				goto out_unlink;
			if (!w.done) {
				rc = wait_timeout(rt, gi, w.wait_id);
				if (rc)
					goto out_unlink;
			}
			break;
		}
		struct nf_sim_event se = sim_pop(rt);
		if (se.time > rt->now)
			rt->now = se.time;
		rc = sim_dispatch(rt, &se);
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
	return fail(rt, rc, err);
}

static int api_cpu_wait_async(nf_runtime *rt, nf_handle fence, uint64_t value, nf_handle *event_out,
		      struct nf_error *err)
{
	struct nf_local_fence *lf;
	int rc = cpu_fence(rt, fence, &lf, err);
	nf_handle eh = 0;

	if (rc)
		return rc;
	if (!event_out)
		return nf_error_set(err, NF_EINVAL, "nf_cpu_wait_async: NULL output");
	if (grow((void **)&rt->cpu_events, &rt->cap_cpu_events, rt->n_cpu_events + 1,
		 sizeof(*rt->cpu_events)))
		return nf_error_set(err, NF_ENOMEM, "out of memory");
	struct nf_cpu_waiter *w = malloc(sizeof(*w));
	if (!w)
		return nf_error_set(err, NF_ENOMEM, "out of memory");
	rc = handle_new(rt, NF_OBJ_CPU_EVENT, rt->n_cpu_events, &eh);
	if (rc) {
		free(w);
		return fail(rt, rc, err);
	}
	struct nf_cpu_event *eo = &rt->cpu_events[rt->n_cpu_events++];
	eo->alive = true;
	eo->waiter = w;
	rc = waiter_add(rt, lf, value, w, eh, NF_NO_TIMEOUT, true);
	if (rc)
		return fail(rt, rc, err);
	if (w->done)
		eo->signaled = true;
	*event_out = eh;
	return 0;
}

static int api_event_wait(nf_runtime *rt, nf_handle event, uint64_t timeout_ns, struct nf_error *err)
{
	int rc = check_rt(rt, err);
	uint32_t ei;

	if (rc)
		return rc;
	if (handle_lookup(rt, event, NF_OBJ_CPU_EVENT, &ei) || !rt->cpu_events[ei].alive)
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
		if (sim_interrupted(rt, &polls))
			return nf_error_set(err, NF_EINTR, "wait on event 0x%x interrupted", event);
		if (!rt->heap_len || sim_top(rt)->time > deadline || !rt->active_sims) {
			if (deadline == UINT64_MAX)
				return nf_error_set(err, NF_ESTATE,
						    "event 0x%x can never be signalled: no GPU work is pending",
						    event);
			rc = sim_run_until(rt, deadline);
			if (rc == NF_EINTR && !rt->err.code)
				return nf_error_set(err, NF_EINTR, "wait on event 0x%x interrupted", event);
			if (rc)
				return fail(rt, rc, err);
			if (!rt->cpu_events[ei].signaled)
				return nf_error_set(err, NF_ETIMEOUT, "wait on event 0x%x timed out", event);
			break;
		}
		struct nf_sim_event se = sim_pop(rt);
		if (se.time > rt->now)
			rt->now = se.time;
		rc = sim_dispatch(rt, &se);
		if (rc)
			return fail(rt, rc, err);
	}
	return 0;
}

static int api_event_close(nf_runtime *rt, nf_handle event, struct nf_error *err)
{
	uint32_t ei;

	if (!rt || handle_lookup(rt, event, NF_OBJ_CPU_EVENT, &ei) || !rt->cpu_events[ei].alive)
		return nf_error_set(err, NF_EINVAL, "invalid event handle 0x%x", event);
	struct nf_cpu_event *eo = &rt->cpu_events[ei];
	struct nf_cpu_waiter *w = eo->waiter;
	eo->alive = false;
	if (w && !w->done) {
		struct nf_global_fence *g = &rt->globals[w->global];
		w->done = true;
		w->status = 2;
		waiter_unlink(g, w);
		int rc = emit_unwait(rt, w, g->current);
		if (!rc)
			rc = update_monitored(rt, g, NULL);
		free(w);
		eo->waiter = NULL;
		return fail(rt, rc, err);
	}
	free(w);
	eo->waiter = NULL;
	return 0;
}

static int api_cpu_signal(nf_runtime *rt, nf_handle fence, uint64_t value, struct nf_error *err)
{
	struct nf_local_fence *lf;
	int rc = cpu_fence(rt, fence, &lf, err);
	struct nf_event ev;

	if (rc)
		return rc;
	struct nf_global_fence *g = &rt->globals[lf->global];
	rc = check_window(rt, g, lf->adapter, value, err);
	if (rc)
		return rc;
	EV_INIT(ev, CPU_SIGNAL);
	ev.f[NFF_CPU_SIGNAL_adapter] = lf->adapter;
	ev.f[NFF_CPU_SIGNAL_fence] = fence;
	ev.f[NFF_CPU_SIGNAL_value] = value;
	ev.f[NFF_CPU_SIGNAL_thread] = cur_thread(rt);
	rc = emit(rt, &ev);
	if (rc)
		return fail(rt, rc, err);
	/* VidSch writes the value through DxgkDdiUpdateCurrentValuesFromCpu. */
	fence_write(rt, g, lf->adapter, value);
	EV_INIT(ev, UPDATE_CURRENT_VALUES);
	ev.f[NFF_UPDATE_CURRENT_VALUES_adapter] = lf->adapter;
	ev.f[NFF_UPDATE_CURRENT_VALUES_global_fence] = g->handle;
	ev.f[NFF_UPDATE_CURRENT_VALUES_value] = value;
	ev.f[NFF_UPDATE_CURRENT_VALUES_flags] = 0;
	rc = emit(rt, &ev);
	if (!rc)
		rc = wake_gpu_waiters(rt, g, lf->adapter);
	if (!rc)
		rc = satisfy_cpu_waiters(rt, g, NULL);
	if (!rc)
		rc = update_monitored(rt, g, NULL);
	if (!rc)
		rc = propagate_cross_adapter(rt, g, lf->adapter);
	return fail(rt, rc, err);
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
		int rc = check_rt(rt, err);
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
	LOCKED(rt, api_adapter_create(rt, desc, adapter_out, err));
}

int nf_hwqueue_create(nf_runtime *rt, uint32_t adapter, uint32_t node, uint32_t engine,
		      const char *name, nf_handle *queue_out, struct nf_error *err)
{
	LOCKED(rt, api_hwqueue_create(rt, adapter, node, engine, name, queue_out, err));
}

int nf_hwqueue_destroy(nf_runtime *rt, nf_handle queue, struct nf_error *err)
{
	LOCKED(rt, api_hwqueue_destroy(rt, queue, err));
}

int nf_hwqueue_progress_fence(nf_runtime *rt, nf_handle queue, nf_handle *fence_out,
			      struct nf_error *err)
{
	LOCKED(rt, api_hwqueue_progress_fence(rt, queue, fence_out, err));
}

int nf_fence_create(nf_runtime *rt, uint32_t adapter, const struct nf_fence_desc *desc,
		    nf_handle *local_out, struct nf_error *err)
{
	LOCKED(rt, api_fence_create(rt, adapter, desc, false, local_out, err));
}

int nf_monitored_fence_create(nf_runtime *rt, uint32_t adapter, const struct nf_fence_desc *desc,
			      nf_handle *local_out, struct nf_error *err)
{
	LOCKED(rt, api_fence_create(rt, adapter, desc, true, local_out, err));
}

int nf_fence_global_handle(nf_runtime *rt, nf_handle local, nf_handle *global_out,
			   struct nf_error *err)
{
	LOCKED(rt, api_fence_global_handle(rt, local, global_out, err));
}

int nf_fence_open(nf_runtime *rt, uint32_t adapter, uint32_t process, nf_handle global,
		  nf_handle *local_out, struct nf_error *err)
{
	LOCKED(rt, api_fence_open(rt, adapter, process, global, local_out, err));
}

int nf_fence_close(nf_runtime *rt, nf_handle local, struct nf_error *err)
{
	LOCKED(rt, api_fence_close(rt, local, err));
}

int nf_fence_read(nf_runtime *rt, nf_handle local, uint64_t *current, uint64_t *monitored,
		  struct nf_error *err)
{
	LOCKED(rt, api_fence_read(rt, local, current, monitored, err));
}

int nf_fence_gpu_va(nf_runtime *rt, nf_handle local, struct nf_fence_va *out,
		    struct nf_error *err)
{
	LOCKED(rt, api_fence_gpu_va(rt, local, out, err));
}

int nf_queue_wait(nf_runtime *rt, nf_handle queue, nf_handle fence, uint64_t value,
		  struct nf_error *err)
{
	LOCKED(rt, api_queue_wait(rt, queue, fence, value, err));
}

int nf_queue_signal(nf_runtime *rt, nf_handle queue, nf_handle fence, uint64_t value,
		    struct nf_error *err)
{
	LOCKED(rt, api_queue_signal(rt, queue, fence, value, err));
}

int nf_queue_work(nf_runtime *rt, nf_handle queue, uint64_t gpu_ns, struct nf_error *err)
{
	LOCKED(rt, api_queue_work(rt, queue, gpu_ns, err));
}

int nf_cpu_wait(nf_runtime *rt, nf_handle fence, uint64_t value, uint64_t timeout_ns,
		struct nf_error *err)
{
	LOCKED(rt, api_cpu_wait(rt, fence, value, timeout_ns, err));
}

int nf_cpu_wait_async(nf_runtime *rt, nf_handle fence, uint64_t value, nf_handle *event_out,
		      struct nf_error *err)
{
	LOCKED(rt, api_cpu_wait_async(rt, fence, value, event_out, err));
}

int nf_event_wait(nf_runtime *rt, nf_handle event, uint64_t timeout_ns, struct nf_error *err)
{
	LOCKED(rt, api_event_wait(rt, event, timeout_ns, err));
}

int nf_event_close(nf_runtime *rt, nf_handle event, struct nf_error *err)
{
	LOCKED(rt, api_event_close(rt, event, err));
}

int nf_cpu_signal(nf_runtime *rt, nf_handle fence, uint64_t value, struct nf_error *err)
{
	LOCKED(rt, api_cpu_signal(rt, fence, value, err));
}
