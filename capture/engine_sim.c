/*
 * The native fence engine's plumbing: small utilities, event emission, object
 * handles and the simulation clock (the priority queue of pending events that
 * deterministic mode runs on). Split out of engine.c (issue #27).
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
/* small utilities                                                     */

static uint64_t rng_step(uint64_t *state)
{
	/* splitmix64: deterministic from the seed */
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t nf_eng_rng_next(struct nf_runtime *rt)
{
	return rng_step(&rt->rng);
}

double nf_eng_rng_unit(uint64_t *state)
{
	return (double)(rng_step(state) >> 11) * (1.0 / 9007199254740992.0);
}




/* core's capped array growth (from 16, at most UINT32_MAX elements), new
 * elements zeroed; out of line, so that nf_eng_grow's check, which nearly
 * always passes, inlines (engine_int.h). */
int nf_eng_grow_to(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
	size_t ncap = *cap;

	if (nf_array_reserve(arr, &ncap, need, elem, 16, UINT32_MAX))
		return NF_ENOMEM;
	memset((char *)*arr + (size_t)*cap * elem, 0, (ncap - *cap) * elem);
	*cap = (uint32_t)ncap;
	return 0;
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

uint64_t nf_eng_gpu_ticks(const struct nf_adapter *a, uint64_t t_ns)
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
int nf_eng_emit_at(struct nf_runtime *rt, struct nf_event *ev, uint64_t t)
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

int nf_eng_emit(struct nf_runtime *rt, struct nf_event *ev)
{
	return nf_eng_emit_at(rt, ev, now_ns(rt));
}

/* Copied from a zero event rather than memset: gcc turns a 160-byte memset
 * into rep stos, whose start-up cost was most of a fence operation's own time;
 * a copy is ten vector moves. */
const struct nf_event nf_eng_ev_zero;

/* ------------------------------------------------------------------ */
/* handles                                                             */

int nf_eng_handle_new(struct nf_runtime *rt, uint8_t type, uint32_t index, nf_handle *out)
{
	if (rt->n_handles + 1 >= NF_MAX_HANDLES)
		return nf_error_set(&rt->err, NF_ENOMEM, "too many handles (limit %u)", NF_MAX_HANDLES);
	if (nf_eng_grow((void **)&rt->handles, &rt->cap_handles, rt->n_handles + 1, sizeof(*rt->handles)))
		return NF_ENOMEM;
	rt->handles[rt->n_handles].type = type;
	rt->handles[rt->n_handles].index = index;
	*out = NF_HANDLE_BASE + (rt->n_handles + 1) * NF_HANDLE_STEP;
	rt->n_handles++;
	return 0;
}

int nf_eng_handle_lookup(const struct nf_runtime *rt, nf_handle h, uint8_t type, uint32_t *index)
{
	if (h < NF_HANDLE_BASE + NF_HANDLE_STEP || (h - NF_HANDLE_BASE) % NF_HANDLE_STEP)
		return NF_EINVAL;
	uint32_t slot = (h - NF_HANDLE_BASE) / NF_HANDLE_STEP - 1;
	if (slot >= rt->n_handles || rt->handles[slot].type != type)
		return NF_EINVAL;
	*index = rt->handles[slot].index;
	return 0;
}

struct nf_queue *nf_eng_queue_get(nf_runtime *rt, nf_handle h, struct nf_error *err)
{
	uint32_t i;

	if (!rt || nf_eng_handle_lookup(rt, h, NF_OBJ_QUEUE, &i) || !rt->queues[i].alive) {
		nf_error_set(err, NF_EINVAL, "invalid hardware queue handle 0x%x", h);
		return NULL;
	}
	return &rt->queues[i];
}

struct nf_local_fence *nf_eng_local_get(nf_runtime *rt, nf_handle h, struct nf_error *err)
{
	uint32_t i;

	if (!rt || nf_eng_handle_lookup(rt, h, NF_OBJ_LOCAL_FENCE, &i) || !rt->locals[i].alive) {
		nf_error_set(err, NF_EINVAL, "invalid fence handle 0x%x", h);
		return NULL;
	}
	return &rt->locals[i];
}

/* ------------------------------------------------------------------ */
/* the simulation clock: a priority queue of pending events             */

static bool sim_periodic(enum nf_sim_type t)
{
	return t == NF_SIM_CALIBRATE || t == NF_SIM_PERIODIC_READ || t == NF_SIM_RECREATE_LOGS ||
	       t == NF_SIM_VBLANK;
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


static int sim_cmp(const void *x, const void *y)
{
	const struct nf_sim_event *a = x, *b = y;

	return sim_less(a, b) ? -1 : sim_less(b, a) ? 1 : 0;
}

int nf_eng_sim_push(struct nf_runtime *rt, uint64_t time, enum nf_sim_type type, uint32_t a,
		    uint32_t b, uint32_t c)
{
	uint32_t old_cap = rt->heap_cap, need = rt->heap_len + 1 + SIM_PAD;

	if (nf_eng_grow((void **)&rt->heap, &rt->heap_cap, need < 4 * SIM_SORTED_MAX ? 4 * SIM_SORTED_MAX : need,
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

struct nf_sim_event nf_eng_sim_pop(struct nf_runtime *rt)
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

int nf_eng_queue_schedule(struct nf_runtime *rt, struct nf_queue *q, uint64_t at)
{
	if (q->step_scheduled && q->step_at <= at)
		return 0;
	q->step_scheduled = true;
	q->step_at = at;
	return nf_eng_sim_push(rt, at, NF_SIM_QUEUE_STEP, (uint32_t)(q - rt->queues), 0, 0);
}
