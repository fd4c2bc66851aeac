/*
 * Tests of the native fence engine in threaded mode (capture/engine_threads.c):
 * real GPU engine threads, the CMP/interrupt thread, CPU waits that block.
 * Nothing here depends on how fast the machine is: waits that must end are
 * waited for without a timeout (a lost wake-up hangs the test, and ctest's
 * timeout fails it), and waits that must not end are checked after the only
 * thing that could end them has been withheld.
 *
 * NF_STRESS_SCALE (default 1) multiplies the stress test's operations (about
 * 40000 per unit); CK_RUN_CASE=stress runs only the stress (bench/engine).
 */
#include "nf_test.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "nftrace/events.h"
#include "nftrace/nfence.h"

/* Events are emitted under the runtime's OS lock: one emit at a time. */
struct rec {
	struct nf_event ev;
	struct nf_log_entry entries[8]; /* LOG_READ: the first entries */
};

struct col {
	struct rec *v;
	size_t n, cap;
};

static int col_emit(void *ctx, const struct nf_event *ev)
{
	struct col *c = ctx;

	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 1024;
		struct rec *v = realloc(c->v, cap * sizeof(*v));
		if (!v)
			return NF_ENOMEM;
		c->v = v;
		c->cap = cap;
	}
	struct rec *r = &c->v[c->n++];
	memset(r, 0, sizeof(*r));
	r->ev = *ev;
	r->ev.str = NULL;
	r->ev.u32s = NULL;
	r->ev.entries = NULL;
	if (ev->id == NF_EV_LOG_READ && ev->entries)
		for (uint64_t i = 0; i < ev->f[NFF_LOG_READ_entry_count] && i < 8; i++)
			r->entries[i] = ev->entries[i];
	return 0;
}

struct env {
	nf_runtime *rt;
	struct col col;
	struct nf_error err;
	uint32_t adapter;
};

#define OK(call)                                                                      \
	do {                                                                          \
		struct nf_error e_;                                                   \
		nf_error_clear(&e_);                                                  \
		int rc_ = (call);                                                     \
		ck_assert_msg(rc_ == 0, "%s -> %d: %s", #call, rc_, e_.msg);          \
	} while (0)
#define E_ (&e_)

static void env_start_recreating(struct env *e, uint32_t vidsch_caps, uint64_t recreate_ns)
{
	struct nf_runtime_config cfg;
	struct nf_adapter_desc d;

	memset(e, 0, sizeof(*e));
	nf_runtime_config_init(&cfg);
	cfg.mode = NF_MODE_THREADED;
	cfg.log_recreate_interval_ns = recreate_ns;
	cfg.log_read_interval_ns = 0; /* the OS reads on interrupts and at the end */
	cfg.ground_truth = true;
	cfg.sink.ctx = &e->col;
	cfg.sink.emit = col_emit;
	ck_assert_msg(nf_runtime_create(&cfg, &e->rt, &e->err) == 0, "%s", e->err.msg);
	nf_adapter_desc_init(&d);
	d.vidsch_caps = vidsch_caps;
	OK(nf_adapter_create(e->rt, &d, &e->adapter, E_));
}

static void env_start(struct env *e, uint32_t vidsch_caps)
{
	env_start_recreating(e, vidsch_caps, 0);
}

/* Destroys the runtime (joins its threads); the events stay for inspection. */
static void env_end(struct env *e)
{
	nf_runtime_destroy(e->rt);
	e->rt = NULL;
}

static void env_free(struct env *e)
{
	free(e->col.v);
	memset(&e->col, 0, sizeof(e->col));
}

static nf_handle mk_queue(struct env *e, uint32_t node, const char *name)
{
	nf_handle q;

	OK(nf_hwqueue_create(e->rt, e->adapter, node, 0, name, &q, E_));
	return q;
}

static nf_handle mk_fence(struct env *e)
{
	struct nf_fence_desc fd = { NF_FENCE_TYPE_DEFAULT, false, false, 0, 100 };
	nf_handle f;

	OK(nf_fence_create(e->rt, e->adapter, &fd, &f, E_));
	return f;
}

static uint64_t current(struct env *e, nf_handle f, uint64_t *mv)
{
	uint64_t cur, m;

	OK(nf_fence_read(e->rt, f, &cur, &m, E_));
	if (mv)
		*mv = m;
	return cur;
}

/* Waits (yielding) until the GPU has written value into f: no time limit. */
static void spin_until(struct env *e, nf_handle f, uint64_t value)
{
	while (current(e, f, NULL) < value)
		sched_yield();
}

static size_t count_ev(const struct env *e, uint32_t id)
{
	size_t n = 0;

	for (size_t i = 0; i < e->col.n; i++)
		n += e->col.v[i].ev.id == id;
	return n;
}

/* The design's worked example: MonitoredValue 41 with a CPU waiter at 42; the
 * GPU signals 1..41 (no interrupt), then 42 (one interrupt, the waiter wakes). */
START_TEST(test_mv41)
{
	struct env e;
	struct nf_runtime_stats st;
	nf_handle ev;
	uint64_t mv;

	env_start(&e, NF_VIDSCH_NATIVE_GPU_FENCE);
	nf_handle q = mk_queue(&e, 0, "Q"), f = mk_fence(&e);
	OK(nf_cpu_wait_async(e.rt, f, 42, &ev, E_));
	current(&e, f, &mv);
	ck_assert_uint_eq(mv, 41);
	for (uint64_t v = 1; v <= 41; v++)
		OK(nf_queue_signal(e.rt, q, f, v, E_));
	spin_until(&e, f, 41);
	/* Nothing asked for an interrupt: none was raised, the event is not set. */
	struct nf_error err;
	nf_error_clear(&err);
	ck_assert_int_eq(nf_event_wait(e.rt, ev, 0, &err), NF_ETIMEOUT);
	OK(nf_queue_signal(e.rt, q, f, 42, E_));
	OK(nf_event_wait(e.rt, ev, NF_NO_TIMEOUT, E_));
	current(&e, f, &mv);
	ck_assert_uint_eq(mv, UINT64_MAX); /* no waiter left */
	OK(nf_event_close(e.rt, ev, E_));
	OK(nf_runtime_finish(e.rt, E_));
	nf_runtime_get_stats(e.rt, &st);
	ck_assert_uint_eq(st.signals_executed, 42);
	ck_assert_uint_eq(st.interrupts, 1);
	ck_assert_uint_eq(st.interrupts_unneeded, 0);
	ck_assert_uint_eq(st.cpu_wakeups, 1);
	env_end(&e);
	env_free(&e);
}
END_TEST

/* No CPU waiter: many GPU signals on two queues raise no interrupt at all. */
START_TEST(test_no_waiter_no_interrupt)
{
	struct env e;
	struct nf_runtime_stats st;
	const uint64_t n = 20000;

	env_start(&e, NF_VIDSCH_NATIVE_GPU_FENCE | NF_VIDSCH_OPTIMIZED_NATIVE_FENCE_SIGNALED_INTERRUPT);
	nf_handle q0 = mk_queue(&e, 0, "Q0"), q1 = mk_queue(&e, 1, "Q1");
	nf_handle f0 = mk_fence(&e), f1 = mk_fence(&e);
	for (uint64_t v = 1; v <= n; v++) {
		OK(nf_queue_signal(e.rt, q0, f0, v, E_));
		OK(nf_queue_signal(e.rt, q1, f1, v, E_));
	}
	OK(nf_runtime_finish(e.rt, E_));
	nf_runtime_get_stats(e.rt, &st);
	ck_assert_uint_eq(st.signals_executed, 2 * n);
	ck_assert_uint_eq(st.log_entries_written, 2 * n);
	ck_assert_uint_eq(st.interrupts, 0);
	ck_assert_uint_eq(st.interrupts_unneeded, 0);
	ck_assert_uint_eq(current(&e, f0, NULL), n);
	env_end(&e);
	ck_assert_uint_eq(count_ev(&e, NF_EV_FENCE_INTERRUPT), 0);
	ck_assert_uint_eq(count_ev(&e, NF_EV_TRUTH_OP), 2 * n);
	env_free(&e);
}
END_TEST

/* A GPU wait blocks its queue (later work does not run) until another queue's
 * signal reaches the value; the waits log entry ends after the signal. */
START_TEST(test_gpu_wait_blocks_queue)
{
	struct env e;
	struct nf_runtime_stats st;

	env_start(&e, NF_VIDSCH_NATIVE_GPU_FENCE);
	nf_handle qa = mk_queue(&e, 0, "A"), qb = mk_queue(&e, 1, "B");
	nf_handle f = mk_fence(&e), g = mk_fence(&e);
	OK(nf_queue_wait(e.rt, qa, f, 5, E_));
	OK(nf_queue_signal(e.rt, qa, g, 1, E_));
	OK(nf_queue_signal(e.rt, qb, f, 4, E_)); /* not enough */
	spin_until(&e, f, 4);
	OK(nf_runtime_advance(e.rt, 2000000, E_));
	ck_assert_uint_eq(current(&e, g, NULL), 0); /* A is still blocked */
	OK(nf_queue_signal(e.rt, qb, f, 5, E_));
	OK(nf_cpu_wait(e.rt, g, 1, NF_NO_TIMEOUT, E_)); /* A ran on */
	OK(nf_runtime_finish(e.rt, E_));
	nf_runtime_get_stats(e.rt, &st);
	ck_assert_uint_eq(st.waits_unblocked, 1);
	env_end(&e);
	/* The wait's end timestamp is not before the signal of 5 executed. */
	uint64_t wait_end = 0, sig5_end = 0;
	for (size_t i = 0; i < e.col.n; i++) {
		const struct rec *r = &e.col.v[i];
		uint64_t n = r->ev.f[NFF_LOG_READ_entry_count];
		if (r->ev.id != NF_EV_LOG_READ)
			continue;
		for (uint64_t k = 0; k < n && k < 8; k++) {
			const struct nf_log_entry *le = &r->entries[k];
			if (r->ev.f[NFF_LOG_READ_hwqueue] == qa &&
			    r->ev.f[NFF_LOG_READ_log_type] == NF_LOG_WAITS && le->fence_value == 5)
				wait_end = le->fence_end_gpu_timestamp;
			if (r->ev.f[NFF_LOG_READ_hwqueue] == qb &&
			    r->ev.f[NFF_LOG_READ_log_type] == NF_LOG_SIGNALS && le->fence_value == 5)
				sig5_end = le->fence_end_gpu_timestamp;
		}
	}
	env_free(&e);
	ck_assert_uint_gt(sig5_end, 0);
	ck_assert_uint_ge(wait_end, sig5_end);
}
END_TEST

struct waiter_arg {
	struct env *e;
	nf_handle f;
	uint64_t value;
	uint64_t timeout;
	atomic_int done;
	int rc;
};

static void *waiter_main(void *p)
{
	struct waiter_arg *w = p;
	struct nf_error err;

	w->rc = nf_cpu_wait(w->e->rt, w->f, w->value, w->timeout, &err);
	atomic_store(&w->done, 1);
	return NULL;
}

/* A CPU wait really blocks its thread until the value arrives, from the CPU
 * (UpdateCurrentValuesFromCpu) or from the GPU through the interrupt. */
START_TEST(test_cpu_wait_blocks)
{
	struct env e;
	pthread_t t1, t2;

	env_start(&e, NF_VIDSCH_NATIVE_GPU_FENCE);
	nf_handle q = mk_queue(&e, 0, "Q"), f = mk_fence(&e), g = mk_fence(&e);
	struct waiter_arg w1 = { &e, f, 7, NF_NO_TIMEOUT, 0, -1 };
	struct waiter_arg w2 = { &e, g, 3, NF_NO_TIMEOUT, 0, -1 };
	ck_assert_int_eq(pthread_create(&t1, NULL, waiter_main, &w1), 0);
	ck_assert_int_eq(pthread_create(&t2, NULL, waiter_main, &w2), 0);
	/*
	 * Both waiters registered (counted under the OS lock, MonitoredValue
	 * written in the same locked call) before anything is signaled: on a
	 * loaded machine a waiter thread may start late, and g's waiter would
	 * then find 3 already there, with no interrupt to count.
	 */
	for (;;) {
		struct nf_runtime_stats st0;

		nf_runtime_get_stats(e.rt, &st0);
		if (st0.cpu_waits == 2)
			break;
		sched_yield();
	}
	OK(nf_cpu_signal(e.rt, f, 6, E_));
	OK(nf_queue_signal(e.rt, q, g, 2, E_));
	spin_until(&e, g, 2);
	OK(nf_runtime_advance(e.rt, 2000000, E_));
	ck_assert_int_eq(atomic_load(&w1.done), 0); /* 6 < 7: still blocked */
	ck_assert_int_eq(atomic_load(&w2.done), 0); /* 2 < 3: still blocked */
	OK(nf_cpu_signal(e.rt, f, 7, E_));
	pthread_join(t1, NULL);
	ck_assert_int_eq(w1.rc, 0);
	OK(nf_queue_signal(e.rt, q, g, 3, E_));
	pthread_join(t2, NULL);
	ck_assert_int_eq(w2.rc, 0);
	OK(nf_runtime_finish(e.rt, E_));
	struct nf_runtime_stats st;
	nf_runtime_get_stats(e.rt, &st);
	ck_assert_uint_eq(st.cpu_waits, 2);
	ck_assert_uint_eq(st.cpu_wakeups, 2);
	ck_assert_uint_eq(st.interrupts_unneeded, 0);
	ck_assert_uint_ge(st.interrupts, 1); /* g's waiter was woken by the interrupt */
	env_end(&e);
	env_free(&e);
}
END_TEST

/* Timeouts return NF_ETIMEOUT and take the waiter out (MonitoredValue back to
 * UINT64_MAX); the async event times out too, then completes. */
START_TEST(test_timeouts)
{
	struct env e;
	struct nf_error err;
	struct nf_runtime_stats st;
	nf_handle ev;
	uint64_t mv;

	env_start(&e, NF_VIDSCH_NATIVE_GPU_FENCE);
	nf_handle f = mk_fence(&e);
	nf_error_clear(&err);
	ck_assert_int_eq(nf_cpu_wait(e.rt, f, 9, 2000000, &err), NF_ETIMEOUT);
	ck_assert_ptr_nonnull(strstr(err.msg, "timed out"));
	current(&e, f, &mv);
	ck_assert_uint_eq(mv, UINT64_MAX);
	OK(nf_cpu_wait_async(e.rt, f, 3, &ev, E_));
	current(&e, f, &mv);
	ck_assert_uint_eq(mv, 2);
	ck_assert_int_eq(nf_event_wait(e.rt, ev, 1000000, &err), NF_ETIMEOUT);
	OK(nf_cpu_signal(e.rt, f, 3, E_));
	OK(nf_event_wait(e.rt, ev, NF_NO_TIMEOUT, E_));
	OK(nf_event_close(e.rt, ev, E_));
	nf_runtime_get_stats(e.rt, &st);
	ck_assert_uint_eq(st.cpu_timeouts, 1);
	ck_assert_uint_eq(st.cpu_wakeups, 1);
	env_end(&e);
	env_free(&e);
}
END_TEST

/* CurrentValue is written as one 64-bit store: a reader never sees halves of
 * two different values (every value written has equal halves). */
struct tear_arg {
	struct env *e;
	nf_handle f;
	atomic_int stop;
	uint64_t reads, torn;
};

static void *tear_reader(void *p)
{
	struct tear_arg *a = p;

	while (!atomic_load(&a->stop)) {
		uint64_t cur;
		struct nf_error err;
		if (nf_fence_read(a->e->rt, a->f, &cur, NULL, &err) == 0) {
			a->reads++;
			if ((cur >> 32) != (cur & 0xffffffffu))
				a->torn++;
		}
	}
	return NULL;
}

START_TEST(test_current_value_never_torn)
{
	struct env e;
	pthread_t t;

	env_start(&e, NF_VIDSCH_NATIVE_GPU_FENCE);
	nf_handle q0 = mk_queue(&e, 0, "Q0"), q1 = mk_queue(&e, 1, "Q1"), f = mk_fence(&e);
	struct tear_arg a = { &e, f, 0, 0, 0 };
	ck_assert_int_eq(pthread_create(&t, NULL, tear_reader, &a), 0);
	for (uint64_t k = 1; k <= 20000; k++) {
		uint64_t v = (k % 2 ? k : UINT32_MAX - k) * 0x100000001ull;
		OK(nf_queue_signal(e.rt, k % 2 ? q0 : q1, f, v, E_));
	}
	OK(nf_runtime_finish(e.rt, E_));
	atomic_store(&a.stop, 1);
	pthread_join(t, NULL);
	ck_assert_uint_gt(a.reads, 0);
	ck_assert_uint_eq(a.torn, 0);
	env_end(&e);
	env_free(&e);
}
END_TEST

/* A cross-adapter fence signalled on one GPU releases a GPU wait on the other
 * (the OS propagates the value with NotificationOnly). */
START_TEST(test_cross_adapter)
{
	struct env e;
	struct nf_adapter_desc d;
	uint32_t a1;
	nf_handle f0, f1, g, done;

	env_start(&e, NF_VIDSCH_NATIVE_GPU_FENCE);
	nf_adapter_desc_init(&d);
	d.name = "GPU1";
	OK(nf_adapter_create(e.rt, &d, &a1, E_));
	nf_handle q0 = mk_queue(&e, 0, "Q0");
	nf_handle q1;
	OK(nf_hwqueue_create(e.rt, a1, 0, 0, "Q1", &q1, E_));
	struct nf_fence_desc fd = { NF_FENCE_TYPE_DEFAULT, true, true, 0, 100 };
	OK(nf_fence_create(e.rt, e.adapter, &fd, &f0, E_));
	OK(nf_fence_global_handle(e.rt, f0, &g, E_));
	OK(nf_fence_open(e.rt, a1, 200, g, &f1, E_));
	struct nf_fence_desc dd = { NF_FENCE_TYPE_DEFAULT, false, false, 0, 200 };
	OK(nf_fence_create(e.rt, a1, &dd, &done, E_));
	OK(nf_queue_wait(e.rt, q1, f1, 10, E_));
	OK(nf_queue_signal(e.rt, q1, done, 1, E_));
	OK(nf_queue_signal(e.rt, q0, f0, 10, E_));
	OK(nf_cpu_wait(e.rt, done, 1, NF_NO_TIMEOUT, E_));
	OK(nf_runtime_finish(e.rt, E_));
	env_end(&e);
	size_t notif = 0;
	for (size_t i = 0; i < e.col.n; i++) {
		const struct nf_event *ev = &e.col.v[i].ev;
		if (ev->id == NF_EV_UPDATE_CURRENT_VALUES && ev->f[NFF_UPDATE_CURRENT_VALUES_adapter] == a1 &&
		    ev->f[NFF_UPDATE_CURRENT_VALUES_flags] == NF_UPDATE_NOTIFICATION_ONLY)
			notif++;
	}
	env_free(&e);
	ck_assert_uint_ge(notif, 1);
}
END_TEST

/* Queues come and go while the OS recreates every log each 50 us: each engine
 * switches logs between commands, a destroyed queue's engine is joined, and no
 * entry is lost (the OS reads a log before it replaces it). */
START_TEST(test_queue_destroy_while_logs_recreated)
{
	struct env e;
	struct nf_runtime_stats st;
	nf_handle f;
	uint64_t v = 0;

	env_start_recreating(&e, NF_VIDSCH_NATIVE_GPU_FENCE, 50000);
	f = mk_fence(&e);
	for (int round = 0; round < 40; round++) {
		nf_handle q = mk_queue(&e, 0, "Q");
		for (int k = 0; k < 50; k++)
			OK(nf_queue_signal(e.rt, q, f, ++v, E_));
		spin_until(&e, f, v);
		struct nf_error err;
		nf_error_clear(&err);
		int rc;
		/* The engine publishes its progress when it catches up: retry until idle. */
		while ((rc = nf_hwqueue_destroy(e.rt, q, &err)) == NF_ESTATE) {
			nf_error_clear(&err);
			sched_yield();
		}
		ck_assert_msg(rc == 0, "%s", err.msg);
	}
	OK(nf_runtime_finish(e.rt, E_));
	nf_runtime_get_stats(e.rt, &st);
	ck_assert_uint_eq(st.signals_executed, v);
	ck_assert_uint_eq(st.log_entries_written, v);
	ck_assert_uint_eq(st.log_entries_lost, 0);
	env_end(&e);
	ck_assert_uint_ge(count_ev(&e, NF_EV_SET_LOG_BUFFER), 80); /* at least two per queue */
	ck_assert_uint_eq(count_ev(&e, NF_EV_HWQUEUE_STOP), 40);
	env_free(&e);
}
END_TEST

/* ------------------------------------------------------------------ */
/* stress: many queues, fences and CPU threads; no wake-up is lost      */

#define NQ 4

struct stress {
	struct env *e;
	nf_handle q[NQ], f[NQ], cpu_fence;
	uint64_t n;                  /* values per fence */
	atomic_uint_fast64_t cpu_next;
	atomic_int failures;
	atomic_uint_fast64_t waits, timeouts;
	char msg[256];
};

/* Queue i: wait for the ring's previous fence at v-1, signal its fence to v. */
static void *stress_producer(void *p)
{
	struct stress *s = ((void **)p)[0];
	uint32_t i = (uint32_t)(uintptr_t)((void **)p)[1];
	struct nf_error err;

	for (uint64_t v = 1; v <= s->n; v++) {
		if (v > 1 && nf_queue_wait(s->e->rt, s->q[i], s->f[(i + NQ - 1) % NQ], v - 1, &err))
			goto fail;
		if (nf_queue_signal(s->e->rt, s->q[i], s->f[i], v, &err))
			goto fail;
		if (i == 0 && (v % 4) == 0) /* the CPU signals its own fence now and then */
			if (nf_cpu_signal(s->e->rt, s->cpu_fence, atomic_fetch_add(&s->cpu_next, 1) + 1,
					  &err))
				goto fail;
	}
	return NULL;
fail:
	/* The waiters would wait for these values forever: fail the test now. */
	fprintf(stderr, "stress producer %u: %s\n", i, err.msg);
	abort();
}

static void *stress_waiter(void *p)
{
	struct stress *s = ((void **)p)[0];
	uint64_t seed = (uint64_t)(uintptr_t)((void **)p)[1] * 0x9e3779b97f4a7c15ull + 1;
	struct nf_error err;

	for (int k = 0; k < 300; k++) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		uint32_t which = (uint32_t)(seed % (NQ + 1));
		nf_handle f = which < NQ ? s->f[which] : s->cpu_fence;
		uint64_t limit = which < NQ ? s->n : s->n / 4;
		uint64_t v = 1 + (seed >> 8) % limit;
		uint32_t how = (uint32_t)((seed >> 40) % 3);
		int rc;

		atomic_fetch_add(&s->waits, 1);
		if (how == 0) {
			rc = nf_cpu_wait(s->e->rt, f, v, NF_NO_TIMEOUT, &err);
		} else if (how == 1) {
			nf_handle ev;
			rc = nf_cpu_wait_async(s->e->rt, f, v, &ev, &err);
			if (!rc)
				rc = nf_event_wait(s->e->rt, ev, NF_NO_TIMEOUT, &err);
			if (!rc)
				rc = nf_event_close(s->e->rt, ev, &err);
		} else {
			/* A short timeout: either outcome is right, the engine must count it. */
			rc = nf_cpu_wait(s->e->rt, f, v, 20000, &err);
			if (rc == NF_ETIMEOUT) {
				atomic_fetch_add(&s->timeouts, 1);
				rc = 0;
				continue;
			}
		}
		uint64_t cur = 0;
		if (!rc)
			rc = nf_fence_read(s->e->rt, f, &cur, NULL, &err);
		if (rc || cur < v) {
			snprintf(s->msg, sizeof(s->msg), "waiter: value %llu, current %llu: rc %d %.120s",
				 (unsigned long long)v, (unsigned long long)cur, rc, err.msg);
			atomic_fetch_add(&s->failures, 1);
			return NULL;
		}
	}
	return NULL;
}

START_TEST(test_stress)
{
	struct env e;
	struct stress s;
	const char *scale_s = getenv("NF_STRESS_SCALE");
	uint64_t scale = scale_s ? strtoull(scale_s, NULL, 10) : 1;
	enum { NW = 6 };
	pthread_t prod[NQ], wait[NW];
	void *pargs[NQ][2], *wargs[NW][2];

	if (!scale)
		scale = 1;
	env_start(&e, NF_VIDSCH_NATIVE_GPU_FENCE);
	memset(&s, 0, sizeof(s));
	s.e = &e;
	s.n = 5000 * scale;
	for (uint32_t i = 0; i < NQ; i++) {
		char name[16];
		snprintf(name, sizeof(name), "Q%u", i);
		s.q[i] = mk_queue(&e, i / 2, name);
		s.f[i] = mk_fence(&e);
	}
	s.cpu_fence = mk_fence(&e);
	for (uint32_t i = 0; i < NW; i++) {
		wargs[i][0] = &s;
		wargs[i][1] = (void *)(uintptr_t)(i + 1);
		ck_assert_int_eq(pthread_create(&wait[i], NULL, stress_waiter, wargs[i]), 0);
	}
	for (uint32_t i = 0; i < NQ; i++) {
		pargs[i][0] = &s;
		pargs[i][1] = (void *)(uintptr_t)i;
		ck_assert_int_eq(pthread_create(&prod[i], NULL, stress_producer, pargs[i]), 0);
	}
	for (uint32_t i = 0; i < NQ; i++)
		pthread_join(prod[i], NULL);
	/* Every value is reachable now: every waiter must wake. */
	for (uint32_t i = 0; i < NW; i++)
		pthread_join(wait[i], NULL);
	ck_assert_msg(atomic_load(&s.failures) == 0, "%s", s.msg);
	OK(nf_runtime_finish(e.rt, E_));
	struct nf_runtime_stats st;
	nf_runtime_get_stats(e.rt, &st);
	ck_assert_uint_eq(st.operations, NQ * (2 * s.n - 1));
	ck_assert_uint_eq(st.signals_executed, NQ * s.n);
	ck_assert_uint_eq(st.waits_unblocked, NQ * (s.n - 1));
	ck_assert_uint_eq(st.cpu_waits, atomic_load(&s.waits));
	ck_assert_uint_eq(st.cpu_wakeups + st.cpu_timeouts, st.cpu_waits);
	ck_assert_uint_eq(st.cpu_timeouts, atomic_load(&s.timeouts));
	ck_assert_uint_eq(st.interrupts_unneeded, 0);
	for (uint32_t i = 0; i < NQ; i++)
		ck_assert_uint_eq(current(&e, s.f[i], NULL), s.n);
	env_end(&e);
	env_free(&e);
}
END_TEST

/* nftrace record --mode threaded writes a valid session that nftrace and
 * babeltrace2 read. */
START_TEST(test_record_threaded_session)
{
	char dir[256], session[300], out[8192], errb[4096];

	nf_test_tmpdir(dir, sizeof(dir));
	snprintf(session, sizeof(session), "%s/s", dir);
	nf_test_record("samples/log-buffer-example.nfs", session, NF_TEST_ARGV("--mode", "threaded"));
	ck_assert_msg(nf_test_nftrace_run(NF_TEST_ARGV("info", session), out, sizeof(out), errb,
					  sizeof(errb)) == 0, "%s", errb);
	ck_assert_ptr_nonnull(strstr(out, "threaded"));
	ck_assert_msg(nf_test_nftrace_run(NF_TEST_ARGV("check", session), out, sizeof(out), errb,
					  sizeof(errb)) == 0, "%s%s", out, errb);
	ck_assert_ptr_nonnull(strstr(out, "none lost"));
	ck_assert_msg(nf_test_nftrace_run(NF_TEST_ARGV("query", session,
						       "select count(*) from fence_ops where op = 'wait'"),
					  out, sizeof(out), errb, sizeof(errb)) == 0, "%s", errb);
	ck_assert_msg(nf_test_sh("babeltrace2 \"$1/s\" | grep -c NativeFenceLogRead",
		      NF_TEST_ARGV(dir), out, sizeof(out), errb, sizeof(errb)) == 0, "%s", errb);
	ck_assert_int_ge(atoi(out), 2);
	nf_test_rmtree(dir);
}
END_TEST

/* Every sample recorded in threaded mode with ground truth: the OS-side replay
 * (nftrace check) finds exactly the lost, zero and repeated entries the engine
 * says it produced (TruthLog), so the threaded log writer and reader agree. */
START_TEST(test_samples_threaded_match_truth)
{
	static const char *samples[] = {
		"overrun", "lda-zero-timestamps", "repeated-timestamps", "log-recreated",
		"wraparound-32bit", "monitored-value-41", "optimized-interrupt",
		"process-a-b-sharing", "cross-adapter-scenario-1", "cross-adapter-scenario-2a",
		"cross-adapter-scenario-2b", "clock-drift", "legacy-monitored-fence",
	};
	char dir[256], session[300], rel[256], out[16384], errb[4096];

	nf_test_tmpdir(dir, sizeof(dir));
	snprintf(session, sizeof(session), "%s/s", dir);
	for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
		unsigned long long tl = 0, tz = 0, tr = 0, cl = 0, cz = 0, cr = 0;

		snprintf(rel, sizeof(rel), "samples/%s.nfs", samples[i]);
		nf_test_record(rel, session,
			       NF_TEST_ARGV("--mode", "threaded", "--ground-truth", "--force"));
		ck_assert_msg(nf_test_sh("babeltrace2 \"$1/s\" | sed -n 's/.*TruthLog: .* lost = "
					 "\\([0-9]*\\), zero_ts = \\([0-9]*\\), repeated_ts = "
					 "\\([0-9]*\\).*/\\1 \\2 \\3/p' "
					 "| awk '{ l += $1; z += $2; r += $3; n++ } END { print n, l, z, r }'",
					 NF_TEST_ARGV(dir), out, sizeof(out), errb, sizeof(errb)) == 0,
			      "%s: %s", samples[i], errb);
		int logs = 0;
		ck_assert_int_eq(sscanf(out, "%d %llu %llu %llu", &logs, &tl, &tz, &tr), 4);
		ck_assert_msg(logs > 0, "%s: no TruthLog events", samples[i]);
		/* The log counts from check's JSON totals: check also judges the fence
		 * values, and threads racing to signal one fence (lda-zero-timestamps'
		 * two queues) can really lower it, which check reports as illegal. */
		nf_test_sh("\"$NF\" check --json \"$1/s\" | python3 -c 'import json,sys; "
			   "t=json.load(sys.stdin)[\"totals\"]; "
			   "print(t[\"lost\"], t[\"zero_timestamp\"], t[\"repeated_timestamp\"], "
			   "t[\"backwards_timestamp\"] + t[\"unknown_fence\"] + t[\"bad_operation\"] + "
			   "t[\"out_of_range\"] + t[\"corrupt\"])'",
			   NF_TEST_ARGV(dir), out, sizeof(out), errb, sizeof(errb));
		unsigned long long bad = 1;
		ck_assert_msg(sscanf(out, "%llu %llu %llu %llu", &cl, &cz, &cr, &bad) == 4, "%s: %s%s",
			      samples[i], out, errb);
		ck_assert_msg(bad == 0, "%s: illegal log findings: %s", samples[i], out);
		ck_assert_msg(cl == tl && cz == tz && cr == tr,
			      "%s: check found %llu lost, %llu zero, %llu repeated; truth %llu, %llu, %llu",
			      samples[i], cl, cz, cr, tl, tz, tr);
	}
	nf_test_rmtree(dir);
}
END_TEST


/* A threaded runtime with periodic reads every read_ns and the given tracing. */
static void env_start_cfg(struct env *e, uint64_t read_ns, bool tracing)
{
	struct nf_runtime_config cfg;

	memset(e, 0, sizeof(*e));
	nf_runtime_config_init(&cfg);
	cfg.mode = NF_MODE_THREADED;
	cfg.log_read_interval_ns = read_ns;
	cfg.tracing = tracing;
	cfg.tracing_log_entries = 96;
	cfg.ground_truth = true;
	cfg.sink.ctx = &e->col;
	cfg.sink.emit = col_emit;
	ck_assert_msg(nf_runtime_create(&cfg, &e->rt, &e->err) == 0, "%s", e->err.msg);
}

static uint32_t mk_adapter(struct env *e, uint32_t caps, enum nf_interrupt_payload p,
			   uint32_t log_entries)
{
	struct nf_adapter_desc d;
	uint32_t a;

	nf_adapter_desc_init(&d);
	d.vidsch_caps = caps;
	d.interrupt_payload = p;
	d.log_entries = log_entries;
	OK(nf_adapter_create(e->rt, &d, &a, E_));
	return a;
}

static nf_handle mk_fence_on(struct env *e, uint32_t adapter, bool cross, bool legacy)
{
	struct nf_fence_desc fd = { NF_FENCE_TYPE_DEFAULT, cross, cross, 0, 100 };
	nf_handle f;

	if (legacy)
		OK(nf_monitored_fence_create(e->rt, adapter, &fd, &f, E_));
	else
		OK(nf_fence_create(e->rt, adapter, &fd, &f, E_));
	return f;
}

static size_t count_field(const struct env *e, uint32_t id, int field, uint64_t v)
{
	size_t n = 0;

	for (size_t i = 0; i < e->col.n; i++)
		n += e->col.v[i].ev.id == id && e->col.v[i].ev.f[field] == v;
	return n;
}

/*
 * The native fence rules of test_engine.c in threaded mode (the engine threads and the interrupt
 * thread run the same OS code). Waits that must end have no timeout: a lost
 * wake-up hangs and ctest's timeout fails the case.
 * - rule 1: optimized adapter, CPU waiters on F1 and F2, one queue signals
 *   both: every waiter wakes, woken exactly once in all (interrupts and scans);
 * - rule 2: logs of 96 entries (tracing), a waiter on F for 9, F = 9 then 300
 *   signals of G: F's entry may be overwritten before the interrupt or a
 *   periodic read (every 100 us) gets to it (how often depends on the
 *   machine, so it is not asserted), and the waiter wakes either way;
 * - rule 3: INTRA_GPU refused by the 24H2 OS;
 * - rule 4: tracing raises an explicit 12-entry log to 96;
 * - rule 5: no UpdateMonitoredValues for the adapter that opened a
 *   cross-adapter fence as a legacy monitored fence;
 * - rule 6: a legacy monitored fence's waiter on a native adapter wakes
 *   through the monitored fence signaled interrupt (payload null_array).
 */
START_TEST(test_fence_rules_threaded)
{
	struct env e;
	struct nf_runtime_stats st;
	struct nf_fence_desc intra = { NF_FENCE_TYPE_INTRA_GPU, false, false, 0, 100 };
	nf_handle ev1, ev2, evf, evl, evo, g, fo, bad = 0;
	struct nf_error err;

	env_start_cfg(&e, 100000, true);
	uint32_t opt = mk_adapter(&e, NF_VIDSCH_NATIVE_GPU_FENCE |
				  NF_VIDSCH_OPTIMIZED_NATIVE_FENCE_SIGNALED_INTERRUPT, NF_IRQ_FENCE_ARRAY, 0);
	uint32_t small = mk_adapter(&e, NF_VIDSCH_NATIVE_GPU_FENCE |
				    NF_VIDSCH_OPTIMIZED_NATIVE_FENCE_SIGNALED_INTERRUPT, NF_IRQ_FENCE_ARRAY, 12);
	uint32_t nul = mk_adapter(&e, NF_VIDSCH_NATIVE_GPU_FENCE, NF_IRQ_NULL_ARRAY, 0);
	uint32_t old = mk_adapter(&e, 0, NF_IRQ_FENCE_ARRAY, 0);
	nf_handle qo, qs, qn;
	OK(nf_hwqueue_create(e.rt, opt, 0, 0, "QO", &qo, E_));
	OK(nf_hwqueue_create(e.rt, small, 0, 0, "QS", &qs, E_));
	OK(nf_hwqueue_create(e.rt, nul, 0, 0, "QN", &qn, E_));

	/* rule 3 */
	nf_error_clear(&err);
	ck_assert_int_eq(nf_fence_create(e.rt, opt, &intra, &bad, &err), NF_EINVAL);
	ck_assert_uint_eq(bad, 0);

	/* rule 1 */
	nf_handle f1 = mk_fence_on(&e, opt, false, false), f2 = mk_fence_on(&e, opt, false, false);
	OK(nf_cpu_wait_async(e.rt, f1, 1, &ev1, E_));
	OK(nf_cpu_wait_async(e.rt, f2, 1, &ev2, E_));
	OK(nf_queue_signal(e.rt, qo, f1, 1, E_));
	OK(nf_queue_signal(e.rt, qo, f2, 1, E_));
	OK(nf_event_wait(e.rt, ev1, NF_NO_TIMEOUT, E_));
	OK(nf_event_wait(e.rt, ev2, NF_NO_TIMEOUT, E_));

	/* rule 2: the small adapter's logs hold 96 entries (tracing): overrun them. */
	nf_handle f = mk_fence_on(&e, small, false, false), gg = mk_fence_on(&e, small, false, false);
	OK(nf_cpu_wait_async(e.rt, f, 9, &evf, E_));
	OK(nf_queue_signal(e.rt, qs, f, 9, E_));
	for (uint64_t v = 1; v <= 300; v++)
		OK(nf_queue_signal(e.rt, qs, gg, v, E_));
	OK(nf_event_wait(e.rt, evf, NF_NO_TIMEOUT, E_));

	/* rule 6 */
	nf_handle l = mk_fence_on(&e, nul, false, true);
	OK(nf_cpu_wait_async(e.rt, l, 3, &evl, E_));
	OK(nf_queue_signal(e.rt, qn, l, 3, E_));
	OK(nf_event_wait(e.rt, evl, NF_NO_TIMEOUT, E_));

	/* rule 5 */
	nf_handle x = mk_fence_on(&e, nul, true, false);
	OK(nf_fence_global_handle(e.rt, x, &g, E_));
	OK(nf_fence_open(e.rt, old, 100, g, &fo, E_));
	OK(nf_cpu_wait_async(e.rt, fo, 4, &evo, E_));
	OK(nf_queue_signal(e.rt, qn, x, 4, E_));
	OK(nf_event_wait(e.rt, evo, NF_NO_TIMEOUT, E_));

	OK(nf_runtime_finish(e.rt, E_));
	nf_runtime_get_stats(e.rt, &st);
	ck_assert_uint_eq(st.interrupts_unneeded, 0);
	ck_assert_uint_eq(st.cpu_wakeups, 5);
	env_end(&e);
	/* rule 1: each of the five waiters woken once. */
	ck_assert_uint_eq(count_field(&e, NF_EV_CPU_UNWAIT, NFF_CPU_UNWAIT_status, 0), 5);
	/* rule 4 */
	ck_assert_uint_eq(count_field(&e, NF_EV_SET_LOG_BUFFER, NFF_SET_LOG_BUFFER_capacity, 96), 6);
	ck_assert_uint_eq(count_field(&e, NF_EV_SET_LOG_BUFFER, NFF_SET_LOG_BUFFER_capacity, 12), 0);
	/* rule 5 and 6: no MonitoredValue on the legacy adapter nor for the legacy fence. */
	ck_assert_uint_eq(count_field(&e, NF_EV_UPDATE_MONITORED_VALUES,
				      NFF_UPDATE_MONITORED_VALUES_adapter, old), 0);
	ck_assert_uint_ge(count_field(&e, NF_EV_GPU_SIGNAL_LEGACY, NFF_GPU_SIGNAL_LEGACY_fence, l), 1);
	env_free(&e);
}
END_TEST

/* Waits (yielding) until a CPU waiter is registered on f (MonitoredValue drops
 * from UINT64_MAX to value - 1). */
static void until_waiting(struct env *e, nf_handle f)
{
	uint64_t mv = UINT64_MAX;

	while (current(e, f, &mv), mv == UINT64_MAX)
		sched_yield();
}

/* Destroying the runtime while a thread is blocked in a CPU wait nothing will
 * satisfy: the waiter returns NF_EINTR before the OS lock goes away (a
 * regression hangs in pthread_join and the case's timeout fails it). */
START_TEST(test_destroy_releases_cpu_waiter)
{
	struct env e;
	pthread_t t;

	env_start(&e, NF_VIDSCH_NATIVE_GPU_FENCE);
	nf_handle f = mk_fence(&e);
	struct waiter_arg w = { &e, f, 5, NF_NO_TIMEOUT, 0, -1 };
	ck_assert_int_eq(pthread_create(&t, NULL, waiter_main, &w), 0);
	until_waiting(&e, f);
	env_end(&e);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(w.rc, NF_EINTR);
	env_free(&e);
}
END_TEST

/* The caller's interrupt flag (a signal handler sets it) stops a CPU wait, a
 * long advance and the final drain with NF_EINTR; the runtime still closes. */
START_TEST(test_interrupt_flag_stops_waits)
{
	static volatile int flag;
	struct nf_runtime_config cfg;
	struct nf_adapter_desc d;
	struct nf_error err;
	struct env e;
	pthread_t t;

	__atomic_store_n(&flag, 0, __ATOMIC_RELAXED);
	memset(&e, 0, sizeof(e));
	nf_runtime_config_init(&cfg);
	cfg.mode = NF_MODE_THREADED;
	cfg.sink.ctx = &e.col;
	cfg.sink.emit = col_emit;
	cfg.interrupt = &flag;
	ck_assert_msg(nf_runtime_create(&cfg, &e.rt, &e.err) == 0, "%s", e.err.msg);
	nf_adapter_desc_init(&d);
	d.vidsch_caps = NF_VIDSCH_NATIVE_GPU_FENCE;
	OK(nf_adapter_create(e.rt, &d, &e.adapter, E_));
	nf_handle q = mk_queue(&e, 0, "Q"), f = mk_fence(&e), g = mk_fence(&e);
	/* Unset, the flag changes nothing. */
	OK(nf_queue_signal(e.rt, q, g, 1, E_));
	OK(nf_cpu_wait(e.rt, g, 1, NF_NO_TIMEOUT, E_));
	OK(nf_runtime_advance(e.rt, 1000000, E_));
	struct waiter_arg w = { &e, f, 5, NF_NO_TIMEOUT, 0, -1 };
	ck_assert_int_eq(pthread_create(&t, NULL, waiter_main, &w), 0);
	until_waiting(&e, f);
	__atomic_store_n(&flag, 1, __ATOMIC_RELAXED);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(w.rc, NF_EINTR);
	/* A minute of real time would outlast the case's timeout. */
	nf_error_clear(&err);
	ck_assert_int_eq(nf_runtime_advance(e.rt, 60000000000ull, &err), NF_EINTR);
	ck_assert_int_eq(err.code, NF_EINTR);
	/* So does the final drain. */
	ck_assert_int_eq(nf_runtime_finish(e.rt, &err), NF_EINTR);
	/* The waiter was taken off the fence: a later signal wakes nobody. */
	__atomic_store_n(&flag, 0, __ATOMIC_RELAXED);
	OK(nf_cpu_signal(e.rt, f, 5, E_));
	env_end(&e);
	ck_assert_uint_gt(count_ev(&e, NF_EV_ADAPTER_START), 0);
	env_free(&e);
}
END_TEST

/* Sets the flag it is given after 200 ms (a signal handler would). */
static void *late_interrupt(void *arg)
{
	struct timespec ts = { 0, 200000000 };

	nanosleep(&ts, NULL);
	__atomic_store_n((volatile int *)arg, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* An advance of 2^64-1 ns is a wait until interrupted (its end time once
 * wrapped around and it returned at once). */
START_TEST(test_advance_of_2_64_waits_until_interrupted)
{
	static volatile int flag;
	struct nf_runtime_config cfg;
	struct nf_error err;
	struct env e;
	pthread_t t;

	__atomic_store_n(&flag, 0, __ATOMIC_RELAXED);
	memset(&e, 0, sizeof(e));
	nf_runtime_config_init(&cfg);
	cfg.mode = NF_MODE_THREADED;
	cfg.sink.ctx = &e.col;
	cfg.sink.emit = col_emit;
	cfg.interrupt = &flag;
	ck_assert_msg(nf_runtime_create(&cfg, &e.rt, &e.err) == 0, "%s", e.err.msg);
	OK(nf_runtime_advance(e.rt, 1000000, E_));
	ck_assert_int_eq(pthread_create(&t, NULL, late_interrupt, (void *)&flag), 0);
	nf_error_clear(&err);
	ck_assert_int_eq(nf_runtime_advance(e.rt, UINT64_MAX, &err), NF_EINTR);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	env_end(&e);
	env_free(&e);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("engine-threaded");
	TCase *tc = tcase_create("threaded");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_mv41);
	tcase_add_test(tc, test_advance_of_2_64_waits_until_interrupted);
	tcase_add_test(tc, test_no_waiter_no_interrupt);
	tcase_add_test(tc, test_gpu_wait_blocks_queue);
	tcase_add_test(tc, test_cpu_wait_blocks);
	tcase_add_test(tc, test_timeouts);
	tcase_add_test(tc, test_current_value_never_torn);
	tcase_add_test(tc, test_cross_adapter);
	tcase_add_test(tc, test_queue_destroy_while_logs_recreated);
	tcase_add_test(tc, test_record_threaded_session);
	tcase_add_test(tc, test_samples_threaded_match_truth);
	tcase_add_test(tc, test_fence_rules_threaded);
	suite_add_tcase(s, tc);
	/* A regression hangs: a short timeout fails it. */
	TCase *intr = tcase_create("interrupt");
	tcase_set_timeout(intr, 20);
	tcase_add_test(intr, test_destroy_releases_cpu_waiter);
	tcase_add_test(intr, test_interrupt_flag_stops_waits);
	suite_add_tcase(s, intr);
	/* Its own case, so bench/engine can run just it: CK_RUN_CASE=stress. */
	TCase *st = tcase_create("stress");
	tcase_set_timeout(st, 600);
	tcase_add_test(st, test_stress);
	suite_add_tcase(s, st);
	return nf_test_main(s);
}
