/*
 * Tests of the native fence engine (capture/engine*.c) against the rules of the
 * WDDM 3.2 design (Microsoft's driver documentation, "Native GPU fence object";
 * "spec:" below names its sections): every test runs
 * a deterministic runtime whose sink collects the events into an array, then
 * asserts on the exact events emitted. Each test breaks if its rule breaks.
 */
#include "nf_test.h"

#include <stdint.h>

#include "nftrace/events.h"
#include "nftrace/nfence.h"

/* One collected event, with deep copies of its variable-length parts. */
struct rec {
	struct nf_event ev;
	struct nf_log_entry *entries;
	uint32_t *u32s;
	uint32_t n_entries, n_u32s;
};

struct col {
	struct rec *v;
	size_t n, cap;
};

struct env {
	nf_runtime *rt;
	struct col col;
	struct nf_error err;
	struct nf_runtime_config cfg;
};

static struct env E, E2;

static int col_emit(void *ctx, const struct nf_event *ev)
{
	struct col *c = ctx;
	struct rec *r;

	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 256;
		struct rec *v = realloc(c->v, cap * sizeof(*v));
		if (!v)
			return NF_ENOMEM;
		c->v = v;
		c->cap = cap;
	}
	r = &c->v[c->n++];
	memset(r, 0, sizeof(*r));
	r->ev = *ev;
	r->ev.str = NULL;
	r->ev.u32s = NULL;
	r->ev.entries = NULL;
	if (ev->id == NF_EV_LOG_READ && ev->entries) {
		r->n_entries = (uint32_t)ev->f[NFF_LOG_READ_entry_count];
		r->entries = malloc(r->n_entries * sizeof(*r->entries) + 1);
		if (!r->entries)
			return NF_ENOMEM;
		memcpy(r->entries, ev->entries, r->n_entries * sizeof(*r->entries));
	}
	if (ev->id == NF_EV_FENCE_INTERRUPT && ev->u32s) {
		r->n_u32s = (uint32_t)ev->f[NFF_FENCE_INTERRUPT_signaled_count];
		r->u32s = malloc(r->n_u32s * sizeof(*r->u32s) + 1);
		if (!r->u32s)
			return NF_ENOMEM;
		memcpy(r->u32s, ev->u32s, r->n_u32s * sizeof(*r->u32s));
	}
	return 0;
}

/* A config whose sink collects into e; only the OS reads on interrupts and at the end. */
static void env_config(struct env *e)
{
	memset(e, 0, sizeof(*e));
	nf_runtime_config_init(&e->cfg);
	e->cfg.log_read_interval_ns = 0;
	e->cfg.ground_truth = true;
	e->cfg.sink.ctx = &e->col;
	e->cfg.sink.emit = col_emit;
}

static void env_start(struct env *e)
{
	int rc = nf_runtime_create(&e->cfg, &e->rt, &e->err);

	ck_assert_msg(rc == 0, "nf_runtime_create: %s", e->err.msg);
}

static void env_end(struct env *e)
{
	struct nf_runtime_stats st;

	if (!e->rt)
		return;
	nf_runtime_get_stats(e->rt, &st);
	/* The conditional interrupt never fires without a waiter that needs it. */
	ck_assert_uint_eq(st.interrupts_unneeded, 0);
	nf_runtime_destroy(e->rt);
	e->rt = NULL;
	for (size_t i = 0; i < e->col.n; i++) {
		free(e->col.v[i].entries);
		free(e->col.v[i].u32s);
	}
	free(e->col.v);
	e->col.v = NULL;
	e->col.n = e->col.cap = 0;
}

#define OK(e, call)                                                                   \
	do {                                                                          \
		nf_error_clear(&(e)->err);                                            \
		int rc_ = (call);                                                     \
		ck_assert_msg(rc_ == 0, "%s -> %d: %s", #call, rc_, (e)->err.msg);    \
	} while (0)

#define FAILS(e, code, call)                                                          \
	do {                                                                          \
		nf_error_clear(&(e)->err);                                            \
		int rc_ = (call);                                                     \
		ck_assert_msg(rc_ == (code), "%s -> %d, want %d (%s)", #call, rc_,    \
			      (int)(code), (e)->err.msg);                             \
		ck_assert_msg((e)->err.msg[0] != '\0', "%s: no error message", #call); \
	} while (0)

/* Number of events of id (from index `from`) whose field `field` equals v; field < 0: any. */
static size_t count_where(const struct env *e, uint32_t id, int field, uint64_t v, size_t from)
{
	size_t n = 0;

	for (size_t i = from; i < e->col.n; i++)
		if (e->col.v[i].ev.id == id && (field < 0 || e->col.v[i].ev.f[field] == v))
			n++;
	return n;
}

static size_t count_ev(const struct env *e, uint32_t id)
{
	return count_where(e, id, -1, 0, 0);
}

/* Index of the first event of id at or after from with field == v (field < 0: any), or -1. */
static long find_where(const struct env *e, uint32_t id, int field, uint64_t v, size_t from)
{
	for (size_t i = from; i < e->col.n; i++)
		if (e->col.v[i].ev.id == id && (field < 0 || e->col.v[i].ev.f[field] == v))
			return (long)i;
	return -1;
}

static uint32_t adapter_new(struct env *e, const char *name, uint32_t caps)
{
	struct nf_adapter_desc d;
	uint32_t a = 0;

	nf_adapter_desc_init(&d);
	d.name = name;
	d.vidsch_caps = caps;
	OK(e, nf_adapter_create(e->rt, &d, &a, &e->err));
	return a;
}

static nf_handle queue_new(struct env *e, uint32_t adapter, const char *name)
{
	nf_handle q = 0;

	OK(e, nf_hwqueue_create(e->rt, adapter, 0, 0, name, &q, &e->err));
	return q;
}

static nf_handle fence_new(struct env *e, uint32_t adapter, uint32_t type, bool shared,
			   bool cross, uint64_t initial, uint32_t process)
{
	struct nf_fence_desc d = { type, shared, cross, initial, process };
	nf_handle f = 0;

	OK(e, nf_fence_create(e->rt, adapter, &d, &f, &e->err));
	return f;
}

static uint64_t monitored_of(struct env *e, nf_handle f)
{
	uint64_t cur = 0, mon = 0;

	OK(e, nf_fence_read(e->rt, f, &cur, &mon, &e->err));
	return mon;
}

static uint64_t current_of(struct env *e, nf_handle f)
{
	uint64_t cur = 0, mon = 0;

	OK(e, nf_fence_read(e->rt, f, &cur, &mon, &e->err));
	return cur;
}

/* Does some NativeFenceLogRead of queue q, log type t, hold an entry (op, value, fence)? */
static bool log_has_entry(const struct env *e, nf_handle q, uint32_t type, uint32_t op,
			  uint64_t value, nf_handle fence)
{
	for (size_t i = 0; i < e->col.n; i++) {
		const struct rec *r = &e->col.v[i];

		if (r->ev.id != NF_EV_LOG_READ || r->ev.f[NFF_LOG_READ_hwqueue] != q ||
		    r->ev.f[NFF_LOG_READ_log_type] != type)
			continue;
		for (uint32_t k = 0; k < r->n_entries; k++)
			if (r->entries[k].operation_type == op && r->entries[k].fence_value == value &&
			    r->entries[k].hnative_fence == fence)
				return true;
	}
	return false;
}

#define MS 1000000ull
#define UNWAIT_STATUS NFF_CPU_UNWAIT_status

/* (a) The document's example: CurrentValue 41, a CPU waiter for 42. */
START_TEST(test_monitored_value_41)
{
	struct env *e = &E;
	nf_handle ev = 0;

	env_config(e);
	env_start(e);
	uint32_t a = adapter_new(e, "GPU", NF_VIDSCH_NATIVE_GPU_FENCE);
	nf_handle q = queue_new(e, a, "q");
	nf_handle f = fence_new(e, a, NF_FENCE_TYPE_DEFAULT, false, false, 41, 1);

	ck_assert_uint_eq(monitored_of(e, f), UINT64_MAX);
	OK(e, nf_cpu_wait_async(e->rt, f, 42, &ev, &e->err));
	ck_assert_uint_eq(monitored_of(e, f), 41);   /* smallest waited value - 1 */
	ck_assert_uint_eq(count_where(e, NF_EV_UPDATE_MONITORED_VALUES,
				      NFF_UPDATE_MONITORED_VALUES_monitored_value, 41, 0), 1);

	/* Signals of 41 and lower: CurrentValue > MonitoredValue is false, no interrupt. */
	OK(e, nf_queue_signal(e->rt, q, f, 40, &e->err));
	OK(e, nf_queue_signal(e->rt, q, f, 41, &e->err));
	OK(e, nf_runtime_advance(e->rt, 1 * MS, &e->err));
	ck_assert_uint_eq(count_ev(e, NF_EV_FENCE_INTERRUPT), 0);
	ck_assert_uint_eq(count_ev(e, NF_EV_CPU_UNWAIT), 0);
	FAILS(e, NF_ETIMEOUT, nf_event_wait(e->rt, ev, 0, &e->err));
	ck_assert_uint_eq(monitored_of(e, f), 41);

	/* 42 > 41: one interrupt, the waiter released, MonitoredValue back to "none". */
	OK(e, nf_queue_signal(e->rt, q, f, 42, &e->err));
	OK(e, nf_runtime_advance(e->rt, 1 * MS, &e->err));
	ck_assert_uint_eq(count_ev(e, NF_EV_FENCE_INTERRUPT), 1);
	ck_assert_uint_eq(count_ev(e, NF_EV_CPU_UNWAIT), 1);
	long u = find_where(e, NF_EV_CPU_UNWAIT, -1, 0, 0);
	ck_assert_uint_eq(e->col.v[u].ev.f[UNWAIT_STATUS], 0);
	ck_assert_uint_eq(e->col.v[u].ev.f[NFF_CPU_UNWAIT_value], 42);
	ck_assert_uint_eq(e->col.v[u].ev.f[NFF_CPU_UNWAIT_current_value], 42);
	OK(e, nf_event_wait(e->rt, ev, 0, &e->err));
	ck_assert_uint_eq(monitored_of(e, f), UINT64_MAX);
	ck_assert_uint_eq(current_of(e, f), 42);
	OK(e, nf_event_close(e->rt, ev, &e->err));
	OK(e, nf_runtime_finish(e->rt, &e->err));
	env_end(e);
}
END_TEST

/* (b) INTRA_GPU fences (an OS with SupportIntraGpuFenceType): GPU only, never cross-adapter. */
START_TEST(test_intra_gpu)
{
	struct env *e = &E;
	struct nf_fence_desc cross = { NF_FENCE_TYPE_INTRA_GPU, false, true, 0, 1 };
	nf_handle ev = 0, bad = 0;

	env_config(e);
	e->cfg.os_support_intra_gpu_fence_type = true;
	env_start(e);
	uint32_t a = adapter_new(e, "GPU", NF_VIDSCH_NATIVE_GPU_FENCE);
	adapter_new(e, "GPU2", NF_VIDSCH_NATIVE_GPU_FENCE);
	nf_handle q = queue_new(e, a, "q");
	nf_handle f = fence_new(e, a, NF_FENCE_TYPE_INTRA_GPU, false, false, 0, 1);

	FAILS(e, NF_EINVAL, nf_cpu_wait(e->rt, f, 1, 1000, &e->err));
	FAILS(e, NF_EINVAL, nf_cpu_wait_async(e->rt, f, 1, &ev, &e->err));
	FAILS(e, NF_EINVAL, nf_cpu_signal(e->rt, f, 1, &e->err));
	ck_assert_uint_eq(count_ev(e, NF_EV_CPU_WAIT), 0);
	ck_assert_uint_eq(count_ev(e, NF_EV_CPU_SIGNAL), 0);
	FAILS(e, NF_EINVAL, nf_fence_create(e->rt, a, &cross, &bad, &e->err));
	ck_assert_uint_eq(bad, 0);
	/* The GPU may still use it. */
	OK(e, nf_queue_signal(e->rt, q, f, 1, &e->err));
	OK(e, nf_queue_wait(e->rt, q, f, 1, &e->err));
	OK(e, nf_runtime_finish(e->rt, &e->err));
	ck_assert(log_has_entry(e, q, NF_LOG_WAITS, NF_LOG_OP_WAIT_UNBLOCKED, 1, f));
	env_end(e);
}
END_TEST

/* (c) NativeGpuFence advertised while the OS feature is off: initialization fails. */
START_TEST(test_native_feature_disabled)
{
	struct env *e = &E;
	struct nf_adapter_desc d;
	uint32_t a = 99;

	env_config(e);
	e->cfg.os_native_fence_enabled = false;
	env_start(e);
	nf_adapter_desc_init(&d);
	d.vidsch_caps = NF_VIDSCH_NATIVE_GPU_FENCE;
	FAILS(e, NF_EUNSUPP, nf_adapter_create(e->rt, &d, &a, &e->err));
	ck_assert_uint_eq(count_ev(e, NF_EV_ADAPTER_START), 0);
	/* An adapter without native fences still comes up. */
	d.vidsch_caps = 0;
	OK(e, nf_adapter_create(e->rt, &d, &a, &e->err));
	ck_assert_uint_eq(a, 0);
	env_end(e);
}
END_TEST

/* (d) Process A creates a shared fence, process B opens it; closes in order. */
START_TEST(test_shared_handles)
{
	struct env *e = &E;
	nf_handle g = 0, fb = 0, again = 0;
	uint64_t cur = 0;

	env_config(e);
	env_start(e);
	uint32_t a = adapter_new(e, "GPU", NF_VIDSCH_NATIVE_GPU_FENCE);
	nf_handle q = queue_new(e, a, "q");
	nf_handle fa = fence_new(e, a, NF_FENCE_TYPE_DEFAULT, true, false, 5, 100);

	OK(e, nf_fence_global_handle(e->rt, fa, &g, &e->err));
	OK(e, nf_fence_open(e->rt, a, 200, g, &fb, &e->err));
	ck_assert_uint_ne(fa, fb);
	long s = find_where(e, NF_EV_FENCE_START, NFF_FENCE_START_fence, fb, 0);
	ck_assert_int_ge(s, 0);
	ck_assert_uint_eq(e->col.v[s].ev.f[NFF_FENCE_START_process], 200);
	ck_assert_uint_eq(e->col.v[s].ev.f[NFF_FENCE_START_global_fence], g);
	ck_assert_uint_eq(e->col.v[s].ev.f[NFF_FENCE_START_flags] & 8u, 8u); /* opened */
	OK(e, nf_fence_read(e->rt, fb, &cur, NULL, &e->err));
	ck_assert_uint_eq(cur, 5);

	OK(e, nf_fence_close(e->rt, fa, &e->err));
	long sa = find_where(e, NF_EV_FENCE_STOP, NFF_FENCE_STOP_fence, fa, 0);
	ck_assert_int_ge(sa, 0);
	ck_assert_uint_eq(e->col.v[sa].ev.f[NFF_FENCE_STOP_global_destroyed], 0);
	ck_assert_uint_eq(e->col.v[sa].ev.f[NFF_FENCE_STOP_process], 100);
	/* B's handle still works after A closed. */
	OK(e, nf_cpu_signal(e->rt, fb, 6, &e->err));
	ck_assert_uint_eq(current_of(e, fb), 6);

	OK(e, nf_fence_close(e->rt, fb, &e->err));
	long sb = find_where(e, NF_EV_FENCE_STOP, NFF_FENCE_STOP_fence, fb, 0);
	ck_assert_int_ge(sb, 0);
	ck_assert_uint_eq(e->col.v[sb].ev.f[NFF_FENCE_STOP_global_destroyed], 1);
	ck_assert_uint_eq(count_ev(e, NF_EV_FENCE_STOP), 2);

	size_t before = e->col.n;
	FAILS(e, NF_EINVAL, nf_fence_read(e->rt, fa, &cur, NULL, &e->err));
	FAILS(e, NF_EINVAL, nf_fence_read(e->rt, fb, &cur, NULL, &e->err));
	FAILS(e, NF_EINVAL, nf_fence_close(e->rt, fa, &e->err));
	FAILS(e, NF_EINVAL, nf_fence_close(e->rt, fb, &e->err));
	FAILS(e, NF_EINVAL, nf_fence_open(e->rt, a, 300, g, &again, &e->err));
	FAILS(e, NF_EINVAL, nf_fence_global_handle(e->rt, fb, &g, &e->err));
	FAILS(e, NF_EINVAL, nf_cpu_signal(e->rt, fb, 7, &e->err));
	FAILS(e, NF_EINVAL, nf_cpu_wait(e->rt, fb, 7, 1000, &e->err));
	FAILS(e, NF_EINVAL, nf_queue_signal(e->rt, q, fa, 7, &e->err));
	FAILS(e, NF_EINVAL, nf_queue_wait(e->rt, q, fb, 7, &e->err));
	ck_assert_uint_eq(e->col.n, before); /* refused calls emit nothing */
	OK(e, nf_runtime_finish(e->rt, &e->err));
	env_end(e);
}
END_TEST

/* Closing the last handle releases the CPU waiters with status 2 (fence closed). */
START_TEST(test_close_releases_waiters)
{
	struct env *e = &E;
	nf_handle ev = 0, ev2 = 0;

	env_config(e);
	env_start(e);
	uint32_t a = adapter_new(e, "GPU", NF_VIDSCH_NATIVE_GPU_FENCE);
	nf_handle f = fence_new(e, a, NF_FENCE_TYPE_DEFAULT, false, false, 0, 1);

	OK(e, nf_cpu_wait_async(e->rt, f, 3, &ev, &e->err));
	OK(e, nf_cpu_wait_async(e->rt, f, 4, &ev2, &e->err));
	OK(e, nf_fence_close(e->rt, f, &e->err));
	ck_assert_uint_eq(count_where(e, NF_EV_CPU_UNWAIT, UNWAIT_STATUS, 2, 0), 2);
	ck_assert_uint_eq(count_ev(e, NF_EV_CPU_UNWAIT), 2);
	FAILS(e, NF_ESTATE, nf_event_wait(e->rt, ev, NF_NO_TIMEOUT, &e->err));
	OK(e, nf_event_close(e->rt, ev, &e->err));
	/* ev2 is left open: destroy frees its waiter once. */
	OK(e, nf_runtime_finish(e->rt, &e->err));
	env_end(e);
}
END_TEST

/* (e) Bad handles everywhere: NF_EINVAL with a message, no crash, no event. */
START_TEST(test_bad_handles)
{
	struct env *e = &E;
	nf_handle out = 0;
	uint64_t v = 0;
	uint32_t a;

	env_config(e);
	env_start(e);
	a = adapter_new(e, "GPU", NF_VIDSCH_NATIVE_GPU_FENCE);
	nf_handle q = queue_new(e, a, "q");
	nf_handle f = fence_new(e, a, NF_FENCE_TYPE_DEFAULT, false, false, 0, 1);
	nf_handle g = 0;
	OK(e, nf_fence_global_handle(e->rt, f, &g, &e->err));
	const nf_handle bad_fences[] = { 0, 1, 0x12345678u, 0xFFFFFFFFu, q, g };
	const nf_handle bad_queues[] = { 0, 1, 0x12345678u, 0xFFFFFFFFu, f, g };
	size_t before = e->col.n;

	for (size_t i = 0; i < sizeof(bad_fences) / sizeof(bad_fences[0]); i++) {
		nf_handle h = bad_fences[i];

		FAILS(e, NF_EINVAL, nf_fence_read(e->rt, h, &v, &v, &e->err));
		FAILS(e, NF_EINVAL, nf_fence_global_handle(e->rt, h, &out, &e->err));
		FAILS(e, NF_EINVAL, nf_fence_close(e->rt, h, &e->err));
		FAILS(e, NF_EINVAL, nf_cpu_wait(e->rt, h, 1, 1000, &e->err));
		FAILS(e, NF_EINVAL, nf_cpu_wait_async(e->rt, h, 1, &out, &e->err));
		FAILS(e, NF_EINVAL, nf_cpu_signal(e->rt, h, 1, &e->err));
		FAILS(e, NF_EINVAL, nf_queue_wait(e->rt, q, h, 1, &e->err));
		FAILS(e, NF_EINVAL, nf_queue_signal(e->rt, q, h, 1, &e->err));
		FAILS(e, NF_EINVAL, nf_event_wait(e->rt, h, 0, &e->err));
		FAILS(e, NF_EINVAL, nf_event_close(e->rt, h, &e->err));
	}
	for (size_t i = 0; i < sizeof(bad_queues) / sizeof(bad_queues[0]); i++) {
		nf_handle h = bad_queues[i];

		FAILS(e, NF_EINVAL, nf_queue_wait(e->rt, h, f, 1, &e->err));
		FAILS(e, NF_EINVAL, nf_queue_signal(e->rt, h, f, 1, &e->err));
		FAILS(e, NF_EINVAL, nf_queue_work(e->rt, h, 10, &e->err));
		FAILS(e, NF_EINVAL, nf_hwqueue_progress_fence(e->rt, h, &out, &e->err));
		FAILS(e, NF_EINVAL, nf_hwqueue_destroy(e->rt, h, &e->err));
	}
	/* Only global handles open fences; a local handle or garbage is refused. */
	FAILS(e, NF_EINVAL, nf_fence_open(e->rt, a, 2, f, &out, &e->err));
	FAILS(e, NF_EINVAL, nf_fence_open(e->rt, a, 2, 0, &out, &e->err));
	FAILS(e, NF_EINVAL, nf_fence_open(e->rt, a, 2, 0xdeadbeefu, &out, &e->err));
	FAILS(e, NF_EINVAL, nf_fence_open(e->rt, 7, 2, g, &out, &e->err));
	ck_assert_uint_eq(e->col.n, before);
	/* The runtime is still healthy. */
	OK(e, nf_queue_signal(e->rt, q, f, 1, &e->err));
	OK(e, nf_runtime_finish(e->rt, &e->err));
	ck_assert_uint_eq(current_of(e, f), 1);
	env_end(e);
}
END_TEST

/*
 * (f) The optimized interrupt: HWQueueA signals F1=V1, F1=V2, F2=V3 with no CPU
 * waiter (no interrupt), then a CPU waiter on F2 for V4 and the 4th signal
 * F2=V4. The document has E4 signal V3 again, but a CPU waiter for V3 would be
 * satisfied by the OS's resample when it is registered, so E4 signals a new
 * value to make the interrupt necessary.
 */
static void optimized_scenario(struct env *e, nf_handle *qa_out, nf_handle *f1_out,
			       nf_handle *f2_out, nf_handle *ev_out)
{
	uint32_t a = adapter_new(e, "GPU", NF_VIDSCH_NATIVE_GPU_FENCE |
				 NF_VIDSCH_OPTIMIZED_NATIVE_FENCE_SIGNALED_INTERRUPT);
	nf_handle qa = queue_new(e, a, "HWQueueA");
	nf_handle qb = queue_new(e, a, "HWQueueB"); /* same engine; its log is not read */
	nf_handle f1 = fence_new(e, a, NF_FENCE_TYPE_DEFAULT, false, false, 0, 1);
	nf_handle f2 = fence_new(e, a, NF_FENCE_TYPE_DEFAULT, false, false, 0, 1);
	nf_handle f3 = fence_new(e, a, NF_FENCE_TYPE_DEFAULT, false, false, 0, 1);

	OK(e, nf_queue_signal(e->rt, qb, f3, 1, &e->err));
	OK(e, nf_queue_signal(e->rt, qa, f1, 1, &e->err));
	OK(e, nf_queue_signal(e->rt, qa, f1, 2, &e->err));
	OK(e, nf_queue_signal(e->rt, qa, f2, 3, &e->err));
	OK(e, nf_runtime_advance(e->rt, 1 * MS, &e->err));
	OK(e, nf_cpu_wait_async(e->rt, f2, 4, ev_out, &e->err));
	OK(e, nf_queue_signal(e->rt, qa, f2, 4, &e->err));
	OK(e, nf_runtime_advance(e->rt, 1 * MS, &e->err));
	*qa_out = qa;
	*f1_out = f1;
	*f2_out = f2;
}

START_TEST(test_optimized_interrupt)
{
	struct env *e = &E;
	nf_handle qa, f1, f2, ev;

	env_config(e);
	env_start(e);
	optimized_scenario(e, &qa, &f1, &f2, &ev);

	ck_assert_uint_eq(count_ev(e, NF_EV_FENCE_INTERRUPT), 1);
	long i = find_where(e, NF_EV_FENCE_INTERRUPT, -1, 0, 0);
	const struct nf_event *irq = &e->col.v[i].ev;
	ck_assert_uint_eq(irq->f[NFF_FENCE_INTERRUPT_hwqueue], qa);
	ck_assert_uint_eq(irq->f[NFF_FENCE_INTERRUPT_optimized], 1);
	ck_assert_uint_eq(irq->f[NFF_FENCE_INTERRUPT_waiters_woken], 1);
	/* The waiter was registered after the first three signals: none interrupted. */
	long w = find_where(e, NF_EV_CPU_WAIT, -1, 0, 0);
	ck_assert_int_lt(w, i);
	ck_assert_uint_eq(count_where(e, NF_EV_FENCE_SIGNAL_QUEUED, -1, 0, (size_t)w), 1);

	/* Exactly one read: A's signals log, E1..E4. */
	ck_assert_uint_eq(count_ev(e, NF_EV_LOG_READ), 1);
	long r = find_where(e, NF_EV_LOG_READ, -1, 0, 0);
	const struct rec *rd = &e->col.v[r];
	ck_assert_int_lt(r, i);
	ck_assert_uint_eq(rd->ev.f[NFF_LOG_READ_hwqueue], qa);
	ck_assert_uint_eq(rd->ev.f[NFF_LOG_READ_log_type], NF_LOG_SIGNALS);
	ck_assert_uint_eq(rd->ev.f[NFF_LOG_READ_entry_count], 4);
	ck_assert_uint_eq(rd->ev.f[NFF_LOG_READ_first_slot], 0);
	ck_assert_uint_eq(rd->ev.f[NFF_LOG_READ_header], 4);
	const nf_handle fences[4] = { f1, f1, f2, f2 };
	for (uint32_t k = 0; k < 4; k++) {
		ck_assert_uint_eq(rd->entries[k].fence_value, k + 1);
		ck_assert_uint_eq(rd->entries[k].hnative_fence, fences[k]);
		ck_assert_uint_eq(rd->entries[k].operation_type, NF_LOG_OP_SIGNAL_EXECUTED);
		ck_assert_uint_ne(rd->entries[k].fence_end_gpu_timestamp, 0);
	}
	OK(e, nf_event_wait(e->rt, ev, 0, &e->err));
	OK(e, nf_event_close(e->rt, ev, &e->err));
	OK(e, nf_runtime_finish(e->rt, &e->err));
	env_end(e);
}
END_TEST

/*
 * The interrupt payload modes (spec: "Native fence signaled interrupt"; facts:
 * the payload's pSignaledNativeFenceArray and hHWQueue). Two CPU waiters, on F1
 * and F2 (value 1 each); one queue signals F1=1 then F2=1 back to back (200 ns
 * apart, less than the 5 us interrupt latency), so two interrupts are raised
 * before the OS handles the first. With a fence array the first interrupt
 * names F1 only and the OS satisfies F1's waiter only; with a NULL array the
 * OS scans all outstanding waiters and the first interrupt satisfies both.
 */
static uint32_t adapter_payload(struct env *e, uint32_t caps, enum nf_interrupt_payload p)
{
	struct nf_adapter_desc d;
	uint32_t a = 0;

	nf_adapter_desc_init(&d);
	d.name = "GPU";
	d.vidsch_caps = caps;
	d.interrupt_payload = p;
	OK(e, nf_adapter_create(e->rt, &d, &a, &e->err));
	return a;
}

/* Index of the first event of id in [from, to) with field == v, or -1. */
static long find_before(const struct env *e, uint32_t id, int field, uint64_t v, size_t from,
			size_t to)
{
	long i = find_where(e, id, field, v, from);

	return i >= 0 && (size_t)i < to ? i : -1;
}

static const enum nf_interrupt_payload nonopt_payloads[] = {
	NF_IRQ_FENCE_ARRAY, NF_IRQ_NULL_ARRAY, NF_IRQ_NULL_ARRAY_LEGACY,
};

/* Non-optimized adapter: fence_array, null_array, null_array_legacy. */
START_TEST(test_irq_payload_nonoptimized)
{
	struct env *e = &E;
	enum nf_interrupt_payload p = nonopt_payloads[_i];
	bool null_array = p != NF_IRQ_FENCE_ARRAY;
	nf_handle ev1 = 0, ev2 = 0;

	env_config(e);
	env_start(e);
	uint32_t a = adapter_payload(e, NF_VIDSCH_NATIVE_GPU_FENCE, p);
	nf_handle qa = queue_new(e, a, "qa");
	nf_handle qc = 0;
	OK(e, nf_hwqueue_create(e->rt, a, 0, 1, "qc", &qc, &e->err)); /* another engine */
	nf_handle f1 = fence_new(e, a, NF_FENCE_TYPE_DEFAULT, false, false, 0, 1);
	nf_handle f2 = fence_new(e, a, NF_FENCE_TYPE_DEFAULT, false, false, 0, 1);
	nf_handle f3 = fence_new(e, a, NF_FENCE_TYPE_DEFAULT, false, false, 0, 1);

	/* qc signals F3 with no waiter: no interrupt, but an entry in qc's log. */
	OK(e, nf_queue_signal(e->rt, qc, f3, 1, &e->err));
	OK(e, nf_runtime_advance(e->rt, 1 * MS, &e->err));
	ck_assert_uint_eq(count_ev(e, NF_EV_FENCE_INTERRUPT), 0);
	ck_assert_uint_eq(count_ev(e, NF_EV_LOG_READ), 0);

	OK(e, nf_cpu_wait_async(e->rt, f1, 1, &ev1, &e->err));
	OK(e, nf_cpu_wait_async(e->rt, f2, 1, &ev2, &e->err));
	size_t mark = e->col.n;
	OK(e, nf_queue_signal(e->rt, qa, f1, 1, &e->err));
	OK(e, nf_queue_signal(e->rt, qa, f2, 1, &e->err));
	OK(e, nf_runtime_advance(e->rt, 1 * MS, &e->err));
	size_t end = e->col.n;

	/* Both signals needed an interrupt (each fence had a waiter when signaled). */
	ck_assert_uint_eq(count_where(e, NF_EV_FENCE_INTERRUPT, -1, 0, mark), 2);
	long i1 = find_where(e, NF_EV_FENCE_INTERRUPT, -1, 0, mark);
	long i2 = find_where(e, NF_EV_FENCE_INTERRUPT, -1, 0, (size_t)i1 + 1);
	const struct rec *r1 = &e->col.v[i1], *r2 = &e->col.v[i2];
	for (int k = 0; k < 2; k++) {
		const struct nf_event *irq = k ? &r2->ev : &r1->ev;

		ck_assert_uint_eq(irq->f[NFF_FENCE_INTERRUPT_optimized], 0);
		ck_assert_uint_eq(irq->f[NFF_FENCE_INTERRUPT_hwqueue], UINT32_MAX);
		ck_assert_uint_eq(irq->f[NFF_FENCE_INTERRUPT_fence_array_null], null_array);
		ck_assert_uint_eq(irq->f[NFF_FENCE_INTERRUPT_evaluate_legacy],
				  p == NF_IRQ_NULL_ARRAY_LEGACY);
		ck_assert_uint_eq(irq->f[NFF_FENCE_INTERRUPT_signaled_count], null_array ? 0 : 1);
	}
	ck_assert_uint_eq(r1->n_u32s, null_array ? 0 : 1);
	/* Which waiters the first interrupt satisfied. */
	long u1 = find_where(e, NF_EV_CPU_UNWAIT, NFF_CPU_UNWAIT_fence, f1, mark);
	long u2 = find_where(e, NF_EV_CPU_UNWAIT, NFF_CPU_UNWAIT_fence, f2, mark);
	ck_assert_int_ge(u1, 0);
	ck_assert_int_ge(u2, 0);
	ck_assert_int_lt(u1, i1);
	if (null_array) {
		/* NULL array: the OS scanned all waiters; F2's is satisfied by the first. */
		ck_assert_uint_eq(r1->ev.f[NFF_FENCE_INTERRUPT_waiters_woken], 2);
		ck_assert_uint_eq(r2->ev.f[NFF_FENCE_INTERRUPT_waiters_woken], 0);
		ck_assert_int_lt(u2, i1);
	} else {
		/* The array named F1 only: F2's waiter waits for its own interrupt. */
		ck_assert_uint_eq(r1->ev.f[NFF_FENCE_INTERRUPT_waiters_woken], 1);
		ck_assert_uint_eq(r2->ev.f[NFF_FENCE_INTERRUPT_waiters_woken], 1);
		ck_assert_int_gt(u2, i1);
		ck_assert_int_lt(u2, i2);
	}
	/* Non-optimized: the OS read the logs of every queue of the device before
	 * handling the first interrupt, the other engine's qc included. */
	long rqc = find_before(e, NF_EV_LOG_READ, NFF_LOG_READ_hwqueue, qc, mark, (size_t)i1);
	long ra = find_before(e, NF_EV_LOG_READ, NFF_LOG_READ_hwqueue, qa, mark, (size_t)i1);
	ck_assert_int_ge(rqc, 0);
	ck_assert_int_ge(ra, 0);
	ck_assert(log_has_entry(e, qc, NF_LOG_SIGNALS, NF_LOG_OP_SIGNAL_EXECUTED, 1, f3));
	ck_assert(log_has_entry(e, qa, NF_LOG_SIGNALS, NF_LOG_OP_SIGNAL_EXECUTED, 1, f1));
	ck_assert_uint_le(end, e->col.n);
	OK(e, nf_event_wait(e->rt, ev1, 0, &e->err));
	OK(e, nf_event_wait(e->rt, ev2, 0, &e->err));
	ck_assert_uint_eq(monitored_of(e, f1), UINT64_MAX);
	ck_assert_uint_eq(monitored_of(e, f2), UINT64_MAX);
	OK(e, nf_event_close(e->rt, ev1, &e->err));
	OK(e, nf_event_close(e->rt, ev2, &e->err));
	OK(e, nf_runtime_finish(e->rt, &e->err));
	env_end(e);
}
END_TEST

static const enum nf_interrupt_payload opt_payloads[] = {
	NF_IRQ_FENCE_ARRAY, NF_IRQ_OPTIMIZED_NULL_QUEUE,
};

/*
 * Optimized adapter: the interrupt names the hardware queue whose log the OS
 * scans (fence_array here means "a queue is named"), or no queue
 * (null_queue): the OS scans the logs of every queue of that engine, and
 * satisfies the waiters of every fence whose signal it read there. qa and qb
 * are on engine 0, qc on engine 1.
 */
START_TEST(test_irq_payload_optimized)
{
	struct env *e = &E;
	enum nf_interrupt_payload p = opt_payloads[_i];
	bool null_queue = p == NF_IRQ_OPTIMIZED_NULL_QUEUE;
	nf_handle ev1 = 0, ev2 = 0;

	env_config(e);
	env_start(e);
	uint32_t a = adapter_payload(e, NF_VIDSCH_NATIVE_GPU_FENCE |
				     NF_VIDSCH_OPTIMIZED_NATIVE_FENCE_SIGNALED_INTERRUPT, p);
	nf_handle qa = queue_new(e, a, "qa");
	nf_handle qb = queue_new(e, a, "qb");
	nf_handle qc = 0;
	OK(e, nf_hwqueue_create(e->rt, a, 0, 1, "qc", &qc, &e->err));
	nf_handle f1 = fence_new(e, a, NF_FENCE_TYPE_DEFAULT, false, false, 0, 1);
	nf_handle f2 = fence_new(e, a, NF_FENCE_TYPE_DEFAULT, false, false, 0, 1);
	nf_handle f3 = fence_new(e, a, NF_FENCE_TYPE_DEFAULT, false, false, 0, 1);
	nf_handle f4 = fence_new(e, a, NF_FENCE_TYPE_DEFAULT, false, false, 0, 1);

	/* No waiters: no interrupts, entries in qb's and qc's logs. */
	OK(e, nf_queue_signal(e->rt, qb, f3, 1, &e->err));
	OK(e, nf_queue_signal(e->rt, qc, f4, 1, &e->err));
	OK(e, nf_runtime_advance(e->rt, 1 * MS, &e->err));
	ck_assert_uint_eq(count_ev(e, NF_EV_FENCE_INTERRUPT), 0);

	OK(e, nf_cpu_wait_async(e->rt, f1, 1, &ev1, &e->err));
	OK(e, nf_cpu_wait_async(e->rt, f2, 1, &ev2, &e->err));
	size_t mark = e->col.n;
	OK(e, nf_queue_signal(e->rt, qa, f1, 1, &e->err));
	OK(e, nf_queue_signal(e->rt, qa, f2, 1, &e->err));
	OK(e, nf_runtime_advance(e->rt, 1 * MS, &e->err));
	size_t end = e->col.n;

	ck_assert_uint_eq(count_where(e, NF_EV_FENCE_INTERRUPT, -1, 0, mark), 2);
	long i1 = find_where(e, NF_EV_FENCE_INTERRUPT, -1, 0, mark);
	long i2 = find_where(e, NF_EV_FENCE_INTERRUPT, -1, 0, (size_t)i1 + 1);
	const struct rec *r1 = &e->col.v[i1], *r2 = &e->col.v[i2];
	for (int k = 0; k < 2; k++) {
		const struct nf_event *irq = k ? &r2->ev : &r1->ev;

		ck_assert_uint_eq(irq->f[NFF_FENCE_INTERRUPT_optimized], 1);
		ck_assert_uint_eq(irq->f[NFF_FENCE_INTERRUPT_hwqueue], null_queue ? UINT32_MAX : qa);
		ck_assert_uint_eq(irq->f[NFF_FENCE_INTERRUPT_node], 0);
		ck_assert_uint_eq(irq->f[NFF_FENCE_INTERRUPT_engine], 0);
		ck_assert_uint_eq(irq->f[NFF_FENCE_INTERRUPT_fence_array_null], 1);
		ck_assert_uint_eq(irq->f[NFF_FENCE_INTERRUPT_evaluate_legacy], 0);
		ck_assert_uint_eq(irq->f[NFF_FENCE_INTERRUPT_signaled_count], 0);
	}
	long u1 = find_where(e, NF_EV_CPU_UNWAIT, NFF_CPU_UNWAIT_fence, f1, mark);
	long u2 = find_where(e, NF_EV_CPU_UNWAIT, NFF_CPU_UNWAIT_fence, f2, mark);
	ck_assert_int_ge(u1, 0);
	ck_assert_int_ge(u2, 0);
	ck_assert_int_lt(u1, i1);
	/* Logs read while handling the interrupts (none were read before). */
	long ra = find_before(e, NF_EV_LOG_READ, NFF_LOG_READ_hwqueue, qa, mark, (size_t)i1);
	long rb = find_before(e, NF_EV_LOG_READ, NFF_LOG_READ_hwqueue, qb, 0, end);
	long rqc = find_before(e, NF_EV_LOG_READ, NFF_LOG_READ_hwqueue, qc, 0, end);
	ck_assert_int_ge(ra, 0);
	ck_assert_int_lt(rqc, 0); /* another engine: never scanned by these interrupts */
	if (null_queue) {
		/* No queue named: every queue of engine 0 scanned. */
		ck_assert_int_ge(rb, 0);
		ck_assert_int_lt(rb, i1);
		ck_assert(log_has_entry(e, qb, NF_LOG_SIGNALS, NF_LOG_OP_SIGNAL_EXECUTED, 1, f3));
	} else {
		/* Only qa's log is read. */
		ck_assert_int_lt(rb, 0);
	}
	/* Either way the first interrupt's read holds both signals (F1 and F2):
	 * the OS unblocks the waiters of every fence it read, not only of the
	 * fence whose signal raised the interrupt (it cannot know that one). */
	ck_assert_uint_eq(r1->ev.f[NFF_FENCE_INTERRUPT_waiters_woken], 2);
	ck_assert_uint_eq(r2->ev.f[NFF_FENCE_INTERRUPT_waiters_woken], 0);
	ck_assert_int_lt(u2, i1);
	OK(e, nf_event_wait(e->rt, ev1, 0, &e->err));
	OK(e, nf_event_wait(e->rt, ev2, 0, &e->err));
	OK(e, nf_event_close(e->rt, ev1, &e->err));
	OK(e, nf_event_close(e->rt, ev2, &e->err));
	OK(e, nf_runtime_finish(e->rt, &e->err));
	/* The end-of-session read still finds qc's entry. */
	ck_assert(log_has_entry(e, qc, NF_LOG_SIGNALS, NF_LOG_OP_SIGNAL_EXECUTED, 1, f4));
	env_end(e);
}
END_TEST

/*
 * A legacy monitored fence (an adapter without NativeGpuFence): its GPU signal
 * is a software packet VidSch executes from the CPU, which satisfies the CPU
 * waiters at once; no native fence signaled interrupt is involved (the
 * NULL-array interrupt below only shows it wakes no waiter early). A legacy
 * monitored fence on a native adapter, whose waiters EvaluateLegacyMonitoredFences
 * decides about, is test_evaluate_legacy_flag.
 */
START_TEST(test_legacy_monitored_fence_cpu_wait)
{
	struct env *e = &E;
	nf_handle ev = 0, evn = 0;

	env_config(e);
	env_start(e);
	uint32_t ln = adapter_new(e, "legacyGPU", 0);
	uint32_t na = adapter_payload(e, NF_VIDSCH_NATIVE_GPU_FENCE, NF_IRQ_NULL_ARRAY);
	nf_handle ql = queue_new(e, ln, "legacy-q");
	nf_handle qn = queue_new(e, na, "native-q");
	nf_handle fl = fence_new(e, ln, NF_FENCE_TYPE_DEFAULT, false, false, 0, 1);
	nf_handle fn = fence_new(e, na, NF_FENCE_TYPE_DEFAULT, false, false, 0, 1);

	OK(e, nf_cpu_wait_async(e->rt, fl, 5, &ev, &e->err));
	OK(e, nf_cpu_wait_async(e->rt, fn, 1, &evn, &e->err));
	/* The native adapter's NULL-array interrupt wakes its own waiter only. */
	OK(e, nf_queue_signal(e->rt, qn, fn, 1, &e->err));
	OK(e, nf_runtime_advance(e->rt, 1 * MS, &e->err));
	ck_assert_uint_eq(count_ev(e, NF_EV_FENCE_INTERRUPT), 1);
	long i = find_where(e, NF_EV_FENCE_INTERRUPT, -1, 0, 0);
	ck_assert_uint_eq(e->col.v[i].ev.f[NFF_FENCE_INTERRUPT_adapter], na);
	ck_assert_uint_eq(e->col.v[i].ev.f[NFF_FENCE_INTERRUPT_waiters_woken], 1);
	ck_assert_int_lt(find_where(e, NF_EV_CPU_UNWAIT, NFF_CPU_UNWAIT_fence, fl, 0), 0);
	FAILS(e, NF_ETIMEOUT, nf_event_wait(e->rt, ev, 0, &e->err));
	OK(e, nf_event_wait(e->rt, evn, 0, &e->err));

	/* The legacy signal of 4 satisfies nothing; 5 satisfies the waiter at once. */
	size_t mark = e->col.n;
	OK(e, nf_queue_signal(e->rt, ql, fl, 4, &e->err));
	OK(e, nf_runtime_advance(e->rt, 1 * MS, &e->err));
	ck_assert_uint_eq(count_where(e, NF_EV_GPU_SIGNAL_LEGACY, -1, 0, mark), 1);
	ck_assert_int_lt(find_where(e, NF_EV_CPU_UNWAIT, NFF_CPU_UNWAIT_fence, fl, 0), 0);
	FAILS(e, NF_ETIMEOUT, nf_event_wait(e->rt, ev, 0, &e->err));
	mark = e->col.n;
	OK(e, nf_queue_signal(e->rt, ql, fl, 5, &e->err));
	OK(e, nf_runtime_advance(e->rt, 1 * MS, &e->err));
	long s = find_where(e, NF_EV_GPU_SIGNAL_LEGACY, NFF_GPU_SIGNAL_LEGACY_value, 5, mark);
	long u = find_where(e, NF_EV_CPU_UNWAIT, NFF_CPU_UNWAIT_fence, fl, mark);
	ck_assert_int_ge(s, 0);
	ck_assert_int_gt(u, s);
	ck_assert_uint_eq(e->col.v[u].ev.f[UNWAIT_STATUS], 0);
	ck_assert_uint_eq(e->col.v[u].ev.f[NFF_CPU_UNWAIT_value], 5);
	ck_assert_uint_eq(count_where(e, NF_EV_FENCE_INTERRUPT, -1, 0, mark), 0);
	ck_assert_uint_eq(count_where(e, NF_EV_LOG_READ, NFF_LOG_READ_hwqueue, ql, 0), 0);
	OK(e, nf_event_wait(e->rt, ev, 0, &e->err));
	ck_assert_uint_eq(current_of(e, fl), 5);
	OK(e, nf_event_close(e->rt, ev, &e->err));
	OK(e, nf_event_close(e->rt, evn, &e->err));
	OK(e, nf_runtime_finish(e->rt, &e->err));
	env_end(e);
}
END_TEST

/* (g) Cross-adapter, scenario 1: both adapters native. */
START_TEST(test_cross_adapter_native)
{
	struct env *e = &E;
	nf_handle g = 0, fi = 0, ev = 0;

	env_config(e);
	env_start(e);
	uint32_t dg = adapter_new(e, "dGPU", NF_VIDSCH_NATIVE_GPU_FENCE);
	uint32_t ig = adapter_new(e, "iGPU", NF_VIDSCH_NATIVE_GPU_FENCE);
	nf_handle qd = queue_new(e, dg, "dGPU-q");
	nf_handle qi = queue_new(e, ig, "iGPU-q");
	nf_handle fd = fence_new(e, dg, NF_FENCE_TYPE_DEFAULT, true, true, 0, 1);

	OK(e, nf_fence_global_handle(e->rt, fd, &g, &e->err));
	OK(e, nf_fence_open(e->rt, ig, 1, g, &fi, &e->err));
	ck_assert_uint_eq(monitored_of(e, fd), 0); /* always 0 for a cross-adapter fence */
	ck_assert_uint_eq(monitored_of(e, fi), 0);
	OK(e, nf_queue_wait(e->rt, qi, fi, 10, &e->err));
	OK(e, nf_cpu_wait_async(e->rt, fi, 10, &ev, &e->err));
	ck_assert_uint_eq(monitored_of(e, fi), 0);
	OK(e, nf_runtime_advance(e->rt, 1 * MS, &e->err));
	ck_assert_uint_eq(count_ev(e, NF_EV_UPDATE_CURRENT_VALUES), 0);
	FAILS(e, NF_ETIMEOUT, nf_event_wait(e->rt, ev, 0, &e->err));

	size_t mark = e->col.n;
	OK(e, nf_queue_signal(e->rt, qd, fd, 10, &e->err));
	OK(e, nf_runtime_advance(e->rt, 1 * MS, &e->err));
	long irq = find_where(e, NF_EV_FENCE_INTERRUPT, NFF_FENCE_INTERRUPT_adapter, dg, mark);
	ck_assert_int_ge(irq, 0);
	long u = find_where(e, NF_EV_UPDATE_CURRENT_VALUES, NFF_UPDATE_CURRENT_VALUES_adapter, ig,
			    mark);
	ck_assert_int_ge(u, 0);
	ck_assert_uint_eq(e->col.v[u].ev.f[NFF_UPDATE_CURRENT_VALUES_flags],
			  NF_UPDATE_NOTIFICATION_ONLY);
	ck_assert_uint_eq(e->col.v[u].ev.f[NFF_UPDATE_CURRENT_VALUES_global_fence], g);
	ck_assert_uint_eq(e->col.v[u].ev.f[NFF_UPDATE_CURRENT_VALUES_value], 10);
	/* The CPU-wait column: the waiter on the iGPU handle is released. */
	long w = find_where(e, NF_EV_CPU_UNWAIT, NFF_CPU_UNWAIT_fence, fi, mark);
	ck_assert_int_ge(w, 0);
	ck_assert_uint_eq(e->col.v[w].ev.f[UNWAIT_STATUS], 0);
	OK(e, nf_event_wait(e->rt, ev, 0, &e->err));
	ck_assert(!log_has_entry(e, qi, NF_LOG_WAITS, NF_LOG_OP_WAIT_UNBLOCKED, 10, fi));
	OK(e, nf_runtime_finish(e->rt, &e->err));
	/* The iGPU wait completed: its entry shows in a later read of its waits log. */
	ck_assert(log_has_entry(e, qi, NF_LOG_WAITS, NF_LOG_OP_WAIT_UNBLOCKED, 10, fi));
	ck_assert(log_has_entry(e, qd, NF_LOG_SIGNALS, NF_LOG_OP_SIGNAL_EXECUTED, 10, fd));
	env_end(e);
}
END_TEST

/* (g) Scenario 2a: the iGPU has no native fences and waits on a legacy monitored fence. */
START_TEST(test_cross_adapter_legacy_wait)
{
	struct env *e = &E;
	nf_handle g = 0, fi = 0;

	env_config(e);
	env_start(e);
	uint32_t dg = adapter_new(e, "dGPU", NF_VIDSCH_NATIVE_GPU_FENCE);
	uint32_t ig = adapter_new(e, "iGPU", 0);
	nf_handle qd = queue_new(e, dg, "dGPU-q");
	nf_handle qi = queue_new(e, ig, "iGPU-q");
	nf_handle fd = fence_new(e, dg, NF_FENCE_TYPE_DEFAULT, true, true, 0, 1);

	OK(e, nf_fence_global_handle(e->rt, fd, &g, &e->err));
	OK(e, nf_fence_open(e->rt, ig, 1, g, &fi, &e->err));
	long s = find_where(e, NF_EV_FENCE_START, NFF_FENCE_START_fence, fi, 0);
	ck_assert_uint_eq(e->col.v[s].ev.f[NFF_FENCE_START_flags] & 4u, 0); /* legacy */
	/* The iGPU has no logs. */
	ck_assert_uint_eq(count_where(e, NF_EV_SET_LOG_BUFFER, NFF_SET_LOG_BUFFER_hwqueue, qi, 0), 0);

	OK(e, nf_queue_wait(e->rt, qi, fi, 10, &e->err));
	long w0 = find_where(e, NF_EV_GPU_WAIT_LEGACY, -1, 0, 0);
	ck_assert_int_ge(w0, 0);
	ck_assert_uint_eq(e->col.v[w0].ev.f[NFF_GPU_WAIT_LEGACY_released], 0);
	ck_assert_uint_eq(e->col.v[w0].ev.f[NFF_GPU_WAIT_LEGACY_hwqueue], qi);
	ck_assert_uint_eq(count_ev(e, NF_EV_FENCE_WAIT_QUEUED), 0);
	OK(e, nf_runtime_advance(e->rt, 1 * MS, &e->err));
	ck_assert_uint_eq(count_where(e, NF_EV_GPU_WAIT_LEGACY, NFF_GPU_WAIT_LEGACY_released, 1, 0),
			  0);

	size_t mark = e->col.n;
	OK(e, nf_queue_signal(e->rt, qd, fd, 10, &e->err));
	OK(e, nf_runtime_advance(e->rt, 1 * MS, &e->err));
	long u = find_where(e, NF_EV_UPDATE_CURRENT_VALUES, NFF_UPDATE_CURRENT_VALUES_adapter, ig,
			    mark);
	ck_assert_int_ge(u, 0);
	long w1 = find_where(e, NF_EV_GPU_WAIT_LEGACY, NFF_GPU_WAIT_LEGACY_released, 1, mark);
	ck_assert_int_gt(w1, u);
	ck_assert_uint_eq(e->col.v[w1].ev.f[NFF_GPU_WAIT_LEGACY_value], 10);
	ck_assert_uint_eq(e->col.v[w1].ev.f[NFF_GPU_WAIT_LEGACY_fence], fi);
	OK(e, nf_runtime_finish(e->rt, &e->err));
	env_end(e);
}
END_TEST

/* (g) Scenario 2b: the iGPU (no native fences) signals; the dGPU's native wait completes. */
START_TEST(test_cross_adapter_legacy_signal)
{
	struct env *e = &E;
	nf_handle g = 0, fi = 0;

	env_config(e);
	env_start(e);
	uint32_t dg = adapter_new(e, "dGPU", NF_VIDSCH_NATIVE_GPU_FENCE);
	uint32_t ig = adapter_new(e, "iGPU", 0);
	nf_handle qd = queue_new(e, dg, "dGPU-q");
	nf_handle qi = queue_new(e, ig, "iGPU-q");
	nf_handle fd = fence_new(e, dg, NF_FENCE_TYPE_DEFAULT, true, true, 0, 1);

	OK(e, nf_fence_global_handle(e->rt, fd, &g, &e->err));
	OK(e, nf_fence_open(e->rt, ig, 1, g, &fi, &e->err));
	OK(e, nf_queue_wait(e->rt, qd, fd, 10, &e->err));
	OK(e, nf_runtime_advance(e->rt, 1 * MS, &e->err));
	ck_assert_uint_eq(count_ev(e, NF_EV_GPU_SIGNAL_LEGACY), 0);

	size_t mark = e->col.n;
	OK(e, nf_queue_signal(e->rt, qi, fi, 10, &e->err));
	OK(e, nf_runtime_advance(e->rt, 1 * MS, &e->err));
	long sg = find_where(e, NF_EV_GPU_SIGNAL_LEGACY, -1, 0, mark);
	ck_assert_int_ge(sg, 0);
	ck_assert_uint_eq(e->col.v[sg].ev.f[NFF_GPU_SIGNAL_LEGACY_adapter], ig);
	ck_assert_uint_eq(e->col.v[sg].ev.f[NFF_GPU_SIGNAL_LEGACY_value], 10);
	long u = find_where(e, NF_EV_UPDATE_CURRENT_VALUES, NFF_UPDATE_CURRENT_VALUES_adapter, dg,
			    mark);
	ck_assert_int_gt(u, sg);
	ck_assert_uint_eq(e->col.v[u].ev.f[NFF_UPDATE_CURRENT_VALUES_flags],
			  NF_UPDATE_NOTIFICATION_ONLY);
	ck_assert_uint_eq(current_of(e, fd), 10);
	OK(e, nf_runtime_finish(e->rt, &e->err));
	ck_assert(log_has_entry(e, qd, NF_LOG_WAITS, NF_LOG_OP_WAIT_UNBLOCKED, 10, fd));
	env_end(e);
}
END_TEST

/* (h) Log buffers: 64 entries, typed, and an overrun counted exactly. */
START_TEST(test_log_overrun)
{
	struct env *e = &E;
	const uint64_t burst = 100;

	env_config(e);
	e->cfg.log_read_interval_ns = 25 * MS; /* long: the burst overruns before a read */
	env_start(e);
	uint32_t a = adapter_new(e, "GPU", NF_VIDSCH_NATIVE_GPU_FENCE);
	nf_handle q = queue_new(e, a, "q");
	nf_handle f = fence_new(e, a, NF_FENCE_TYPE_DEFAULT, false, false, 0, 1);

	ck_assert_uint_eq(count_where(e, NF_EV_SET_LOG_BUFFER, NFF_SET_LOG_BUFFER_hwqueue, q, 0), 2);
	long w = find_where(e, NF_EV_SET_LOG_BUFFER, NFF_SET_LOG_BUFFER_log_type, NF_LOG_WAITS, 0);
	long s = find_where(e, NF_EV_SET_LOG_BUFFER, NFF_SET_LOG_BUFFER_log_type, NF_LOG_SIGNALS, 0);
	ck_assert_int_ge(w, 0);
	ck_assert_int_ge(s, 0);
	ck_assert_uint_eq(e->col.v[w].ev.f[NFF_SET_LOG_BUFFER_capacity], NF_LOG_DEFAULT_ENTRIES);
	ck_assert_uint_eq(e->col.v[s].ev.f[NFF_SET_LOG_BUFFER_capacity], NF_LOG_DEFAULT_ENTRIES);
	ck_assert_uint_eq(e->col.v[s].ev.f[NFF_SET_LOG_BUFFER_epoch], 0);

	for (uint64_t v = 1; v <= burst; v++)
		OK(e, nf_queue_signal(e->rt, q, f, v, &e->err));
	OK(e, nf_runtime_advance(e->rt, 1 * MS, &e->err));
	ck_assert_uint_eq(count_ev(e, NF_EV_LOG_READ), 0);
	OK(e, nf_runtime_advance(e->rt, 30 * MS, &e->err)); /* the periodic read */

	ck_assert_uint_eq(count_ev(e, NF_EV_LOG_OVERRUN), 1);
	long o = find_where(e, NF_EV_LOG_OVERRUN, -1, 0, 0);
	ck_assert_uint_eq(e->col.v[o].ev.f[NFF_LOG_OVERRUN_lost], burst - NF_LOG_DEFAULT_ENTRIES);
	ck_assert_uint_eq(e->col.v[o].ev.f[NFF_LOG_OVERRUN_log_type], NF_LOG_SIGNALS);
	long r = find_where(e, NF_EV_LOG_READ, NFF_LOG_READ_log_type, NF_LOG_SIGNALS, 0);
	const struct rec *rd = &e->col.v[r];
	ck_assert_uint_eq(rd->ev.f[NFF_LOG_READ_capacity], NF_LOG_DEFAULT_ENTRIES);
	ck_assert_uint_eq(rd->ev.f[NFF_LOG_READ_entry_count], NF_LOG_DEFAULT_ENTRIES);
	/* header word: index 100 % 64 = 36, wrap 1 */
	ck_assert_uint_eq(rd->ev.f[NFF_LOG_READ_header], (1ull << 32) | 36u);
	ck_assert_uint_eq(rd->entries[0].fence_value, burst - NF_LOG_DEFAULT_ENTRIES + 1);
	ck_assert_uint_eq(rd->entries[63].fence_value, burst);

	OK(e, nf_runtime_finish(e->rt, &e->err));
	long t = find_where(e, NF_EV_TRUTH_LOG, NFF_TRUTH_LOG_log_type, NF_LOG_SIGNALS, 0);
	ck_assert_int_ge(t, 0);
	ck_assert_uint_eq(e->col.v[t].ev.f[NFF_TRUTH_LOG_written], burst);
	ck_assert_uint_eq(e->col.v[t].ev.f[NFF_TRUTH_LOG_lost], burst - NF_LOG_DEFAULT_ENTRIES);
	ck_assert_uint_eq(count_where(e, NF_EV_TRUTH_OP, NFF_TRUTH_OP_fate, 1, 0),
			  burst - NF_LOG_DEFAULT_ENTRIES);
	struct nf_runtime_stats st;
	nf_runtime_get_stats(e->rt, &st);
	ck_assert_uint_eq(st.log_entries_lost, burst - NF_LOG_DEFAULT_ENTRIES);
	env_end(e);
}
END_TEST

/* (h) Log recreation reads first, so it loses nothing. */
START_TEST(test_log_recreate)
{
	struct env *e = &E;
	const uint64_t burst = 100;
	uint64_t read = 0, lost = 0;

	env_config(e);
	e->cfg.log_recreate_interval_ns = 2000;
	env_start(e);
	uint32_t a = adapter_new(e, "GPU", NF_VIDSCH_NATIVE_GPU_FENCE);
	nf_handle q = queue_new(e, a, "q");
	nf_handle f = fence_new(e, a, NF_FENCE_TYPE_DEFAULT, false, false, 0, 1);

	for (uint64_t v = 1; v <= burst; v++)
		OK(e, nf_queue_signal(e->rt, q, f, v, &e->err));
	OK(e, nf_runtime_advance(e->rt, 100000, &e->err));
	OK(e, nf_runtime_finish(e->rt, &e->err));
	for (uint32_t type = NF_LOG_WAITS; type <= NF_LOG_SIGNALS; type++) {
		bool found = false;
		for (size_t i = 0; i < e->col.n; i++) {
			const struct nf_event *ev = &e->col.v[i].ev;
			if (ev->id == NF_EV_SET_LOG_BUFFER && ev->f[NFF_SET_LOG_BUFFER_log_type] == type &&
			    ev->f[NFF_SET_LOG_BUFFER_epoch] == 1)
				found = true;
		}
		ck_assert_msg(found, "no SetNativeFenceLogBuffer epoch 1 for log type %u", type);
	}
	for (size_t i = 0; i < e->col.n; i++) {
		const struct nf_event *ev = &e->col.v[i].ev;
		if (ev->id == NF_EV_LOG_READ && ev->f[NFF_LOG_READ_log_type] == NF_LOG_SIGNALS)
			read += ev->f[NFF_LOG_READ_entry_count];
		if (ev->id == NF_EV_TRUTH_LOG)
			lost += ev->f[NFF_TRUTH_LOG_lost];
	}
	/* More than 64 signals went through, across several epochs, none lost. */
	ck_assert_uint_eq(read, burst);
	ck_assert_uint_eq(lost, 0);
	ck_assert_uint_eq(count_ev(e, NF_EV_LOG_OVERRUN), 0);
	/* The burst spans several epochs: reads happened in at least two of them. */
	long r1 = find_where(e, NF_EV_LOG_READ, NFF_LOG_READ_log_type, NF_LOG_SIGNALS, 0);
	ck_assert_int_ge(r1, 0);
	uint64_t ep = e->col.v[r1].ev.f[NFF_LOG_READ_epoch];
	ck_assert_uint_gt(count_where(e, NF_EV_LOG_READ, NFF_LOG_READ_log_type, NF_LOG_SIGNALS, 0),
			  count_where(e, NF_EV_LOG_READ, NFF_LOG_READ_epoch, ep, 0));
	env_end(e);
}
END_TEST

/* (i) A GPU with 32-bit atomics: waits across 2^32, and the UINT32_MAX/2 window. */
START_TEST(test_atomics32)
{
	struct env *e = &E;
	struct nf_runtime_stats st;

	env_config(e);
	env_start(e);
	uint32_t a = adapter_new(e, "GPU32", NF_VIDSCH_NATIVE_GPU_FENCE | NF_VIDSCH_NO64BIT_ATOMICS);
	uint32_t b = adapter_new(e, "GPU64", NF_VIDSCH_NATIVE_GPU_FENCE);
	nf_handle qs = queue_new(e, a, "signal");
	nf_handle qw = queue_new(e, a, "wait");
	nf_handle qb = queue_new(e, b, "wait64");
	nf_handle f = fence_new(e, a, NF_FENCE_TYPE_DEFAULT, false, false, 0xFFFFFF00ull, 1);
	nf_handle f64 = fence_new(e, b, NF_FENCE_TYPE_DEFAULT, false, false, 0, 1);

	OK(e, nf_queue_wait(e->rt, qw, f, 0x100000000ull, &e->err));
	OK(e, nf_queue_signal(e->rt, qs, f, 0xFFFFFFF0ull, &e->err));
	OK(e, nf_runtime_advance(e->rt, 1 * MS, &e->err));
	nf_runtime_get_stats(e->rt, &st);
	ck_assert_uint_eq(st.waits_unblocked, 0); /* 0xFFFFFFF0 < 2^32 */
	OK(e, nf_queue_signal(e->rt, qs, f, 0x100000010ull, &e->err));
	OK(e, nf_runtime_advance(e->rt, 1 * MS, &e->err));
	nf_runtime_get_stats(e->rt, &st);
	ck_assert_uint_eq(st.waits_unblocked, 1);
	ck_assert_uint_eq(current_of(e, f), 0x100000010ull);

	const uint64_t far = 0x100000010ull + UINT32_MAX / 2 + 1;
	FAILS(e, NF_EINVAL, nf_queue_signal(e->rt, qs, f, far, &e->err));
	FAILS(e, NF_EINVAL, nf_queue_wait(e->rt, qw, f, far, &e->err));
	FAILS(e, NF_EINVAL, nf_cpu_signal(e->rt, f, far, &e->err));
	/* Within the window is fine; a 64-bit GPU has no window at all. */
	OK(e, nf_queue_signal(e->rt, qs, f, far - 1, &e->err));
	OK(e, nf_queue_signal(e->rt, qb, f64, 0x300000000ull, &e->err));
	OK(e, nf_runtime_finish(e->rt, &e->err));
	ck_assert(log_has_entry(e, qw, NF_LOG_WAITS, NF_LOG_OP_WAIT_UNBLOCKED, 0x100000000ull, f));
	env_end(e);
}
END_TEST

/* (j) CPU waits: timeout, and an async wait's event signalled later. */
START_TEST(test_cpu_wait_timeout_and_async)
{
	struct env *e = &E;
	struct nf_runtime_stats st;
	nf_handle ev = 0;

	env_config(e);
	env_start(e);
	uint32_t a = adapter_new(e, "GPU", NF_VIDSCH_NATIVE_GPU_FENCE);
	nf_handle q = queue_new(e, a, "q");
	nf_handle f = fence_new(e, a, NF_FENCE_TYPE_DEFAULT, false, false, 0, 1);

	uint64_t t0 = nf_runtime_now_ns(e->rt);
	FAILS(e, NF_ETIMEOUT, nf_cpu_wait(e->rt, f, 5, 50000, &e->err));
	ck_assert_uint_eq(nf_runtime_now_ns(e->rt), t0 + 50000);
	ck_assert_uint_eq(count_ev(e, NF_EV_CPU_UNWAIT), 1);
	long u = find_where(e, NF_EV_CPU_UNWAIT, -1, 0, 0);
	ck_assert_uint_eq(e->col.v[u].ev.f[UNWAIT_STATUS], 1);
	ck_assert_uint_eq(monitored_of(e, f), UINT64_MAX);
	nf_runtime_get_stats(e->rt, &st);
	ck_assert_uint_eq(st.cpu_timeouts, 1);

	OK(e, nf_cpu_wait_async(e->rt, f, 5, &ev, &e->err));
	ck_assert_uint_eq(monitored_of(e, f), 4);
	FAILS(e, NF_ETIMEOUT, nf_event_wait(e->rt, ev, 1000, &e->err));
	OK(e, nf_queue_signal(e->rt, q, f, 5, &e->err));
	OK(e, nf_event_wait(e->rt, ev, NF_NO_TIMEOUT, &e->err));
	ck_assert_uint_eq(count_ev(e, NF_EV_CPU_UNWAIT), 2);
	long u2 = find_where(e, NF_EV_CPU_UNWAIT, -1, 0, (size_t)u + 1);
	ck_assert_uint_eq(e->col.v[u2].ev.f[UNWAIT_STATUS], 0);
	ck_assert_uint_eq(count_ev(e, NF_EV_FENCE_INTERRUPT), 1);
	OK(e, nf_event_close(e->rt, ev, &e->err));

	/* A blocking wait that the GPU satisfies. */
	OK(e, nf_queue_signal(e->rt, q, f, 6, &e->err));
	OK(e, nf_cpu_wait(e->rt, f, 6, NF_NO_TIMEOUT, &e->err));
	ck_assert_uint_eq(current_of(e, f), 6);
	OK(e, nf_runtime_finish(e->rt, &e->err));
	nf_runtime_get_stats(e->rt, &st);
	ck_assert_uint_eq(st.cpu_wakeups, 2);
	env_end(e);
}
END_TEST

/* (k) The same scenario twice gives the same events, byte for byte. */
static void mixed_scenario(struct env *e)
{
	struct nf_adapter_desc d;
	uint32_t a, b;
	nf_handle qa, f1, f2, ev, g = 0, fo = 0;

	env_config(e);
	e->cfg.log_read_interval_ns = 300000;
	e->cfg.seed = 42;
	env_start(e);
	optimized_scenario(e, &qa, &f1, &f2, &ev);
	nf_adapter_desc_init(&d);
	d.zero_ts_rate = 0.2;
	d.repeat_ts_rate = 0.2;
	d.gpu_clock.jitter_ns = 500;
	d.gpu_clock.drift_ppm = 30;
	OK(e, nf_adapter_create(e->rt, &d, &a, &e->err));
	b = adapter_new(e, "other", NF_VIDSCH_NATIVE_GPU_FENCE);
	nf_handle q = queue_new(e, a, "q");
	nf_handle qb = queue_new(e, b, "qb");
	nf_handle f = fence_new(e, a, NF_FENCE_TYPE_DEFAULT, true, true, 0, 1);
	OK(e, nf_fence_global_handle(e->rt, f, &g, &e->err));
	OK(e, nf_fence_open(e->rt, b, 2, g, &fo, &e->err));
	for (uint64_t v = 1; v <= 200; v++) {
		OK(e, nf_queue_signal(e->rt, q, f, v, &e->err));
		OK(e, nf_queue_wait(e->rt, qb, fo, v, &e->err));
		OK(e, nf_queue_work(e->rt, q, 1000 + v * 7, &e->err));
		if (v % 50 == 0)
			OK(e, nf_cpu_wait(e->rt, f, v, NF_NO_TIMEOUT, &e->err));
	}
	OK(e, nf_runtime_finish(e->rt, &e->err));
}

START_TEST(test_determinism)
{
	mixed_scenario(&E);
	mixed_scenario(&E2);
	ck_assert_uint_gt(E.col.n, 100);
	ck_assert_uint_eq(E.col.n, E2.col.n);
	for (size_t i = 0; i < E.col.n; i++) {
		const struct rec *x = &E.col.v[i], *y = &E2.col.v[i];

		ck_assert_msg(memcmp(&x->ev, &y->ev, sizeof(x->ev)) == 0, "event %zu differs", i);
		ck_assert_uint_eq(x->n_entries, y->n_entries);
		if (x->n_entries)
			ck_assert(memcmp(x->entries, y->entries,
					 x->n_entries * sizeof(*x->entries)) == 0);
		ck_assert_uint_eq(x->n_u32s, y->n_u32s);
		if (x->n_u32s)
			ck_assert(memcmp(x->u32s, y->u32s, x->n_u32s * sizeof(*x->u32s)) == 0);
	}
	env_end(&E);
	env_end(&E2);
}
END_TEST

static struct nf_fence_va va_of(struct env *e, nf_handle f)
{
	struct nf_fence_va va;

	memset(&va, 0xff, sizeof(va));
	OK(e, nf_fence_gpu_va(e->rt, f, &va, &e->err));
	return va;
}

#define PAGE_OF(va) ((va) & ~(uint64_t)(NF_GPU_PAGE_SIZE - 1))

/* Fence value storage: nonshareable fences of one process are packed in 4 KiB
 * pages every 8 + padding (monitored_value_stride) bytes; shareable ones get
 * their own pages in every process that opens them; MapToGpuSystemProcess adds
 * the CMP's mappings of the same storage. */
START_TEST(test_fence_gpu_va)
{
	struct env *e = &E;
	struct nf_adapter_desc d;
	uint32_t a = 0, b = 0;
	nf_handle f[70], sh, shb = 0, g = 0, other;

	env_config(e);
	env_start(e);
	nf_adapter_desc_init(&d);
	d.name = "packed";
	d.monitored_value_stride = 56; /* the OS's maximum: one value per 64 bytes */
	d.native_fence_caps = NF_NATIVE_FENCE_CAP_MAP_TO_GPU_SYSTEM_PROCESS;
	OK(e, nf_adapter_create(e->rt, &d, &a, &e->err));
	b = adapter_new(e, "plain", NF_VIDSCH_NATIVE_GPU_FENCE); /* stride 8, no system mapping */

	for (int i = 0; i < 70; i++)
		f[i] = fence_new(e, a, NF_FENCE_TYPE_DEFAULT, false, false, 0, 100);
	struct nf_fence_va v0 = va_of(e, f[0]);
	ck_assert_uint_eq(v0.stride, 64);
	ck_assert_uint_ge(v0.current_gpu_va, NF_GPU_VA_BASE);
	ck_assert_uint_ne(PAGE_OF(v0.current_gpu_va), PAGE_OF(v0.monitored_gpu_va));
	ck_assert_uint_ne(v0.current_system_gpu_va, 0);
	ck_assert_uint_ne(v0.monitored_system_gpu_va, 0);
	/* 64 fences share a page, value i at offset 64*i, in both mappings. */
	for (int i = 1; i < 64; i++) {
		struct nf_fence_va v = va_of(e, f[i]);
		ck_assert_uint_eq(v.current_gpu_va, v0.current_gpu_va + 64u * (unsigned)i);
		ck_assert_uint_eq(v.monitored_gpu_va, v0.monitored_gpu_va + 64u * (unsigned)i);
		ck_assert_uint_eq(v.current_system_gpu_va, v0.current_system_gpu_va + 64u * (unsigned)i);
	}
	/* The 65th starts new pages. */
	struct nf_fence_va v64 = va_of(e, f[64]);
	ck_assert_uint_ne(PAGE_OF(v64.current_gpu_va), PAGE_OF(v0.current_gpu_va));
	ck_assert_uint_eq(v64.current_gpu_va, PAGE_OF(v64.current_gpu_va));
	ck_assert_uint_ne(PAGE_OF(v64.current_system_gpu_va), PAGE_OF(v0.current_system_gpu_va));

	/* Another process packs into its own pages. */
	other = fence_new(e, a, NF_FENCE_TYPE_DEFAULT, false, false, 0, 200);
	struct nf_fence_va vo = va_of(e, other);
	for (int i = 0; i < 70; i++) {
		struct nf_fence_va v = va_of(e, f[i]);
		ck_assert_uint_ne(PAGE_OF(vo.current_system_gpu_va), PAGE_OF(v.current_system_gpu_va));
	}

	/* Shareable: own pages, in each process that opens it; one system mapping. */
	sh = fence_new(e, a, NF_FENCE_TYPE_DEFAULT, true, false, 0, 100);
	struct nf_fence_va vs = va_of(e, sh);
	ck_assert_uint_eq(vs.stride, NF_GPU_PAGE_SIZE);
	ck_assert_uint_eq(vs.current_gpu_va, PAGE_OF(vs.current_gpu_va));
	ck_assert_uint_eq(vs.monitored_gpu_va, PAGE_OF(vs.monitored_gpu_va));
	nf_handle after = fence_new(e, a, NF_FENCE_TYPE_DEFAULT, false, false, 0, 100);
	struct nf_fence_va va2 = va_of(e, after);
	ck_assert_uint_ne(PAGE_OF(va2.current_gpu_va), PAGE_OF(vs.current_gpu_va));
	ck_assert_uint_ne(PAGE_OF(va2.monitored_gpu_va), PAGE_OF(vs.monitored_gpu_va));
	OK(e, nf_fence_global_handle(e->rt, sh, &g, &e->err));
	OK(e, nf_fence_open(e->rt, a, 300, g, &shb, &e->err));
	struct nf_fence_va vb = va_of(e, shb);
	ck_assert_uint_eq(vb.current_system_gpu_va, vs.current_system_gpu_va);
	ck_assert_uint_eq(vb.monitored_system_gpu_va, vs.monitored_system_gpu_va);
	ck_assert_uint_eq(vb.current_gpu_va, PAGE_OF(vb.current_gpu_va));

	/* Without MapToGpuSystemProcess: no CMP mappings; default stride 8 + 8. */
	nf_handle fb = fence_new(e, b, NF_FENCE_TYPE_DEFAULT, false, false, 0, 100);
	nf_handle fb2 = fence_new(e, b, NF_FENCE_TYPE_DEFAULT, false, false, 0, 100);
	struct nf_fence_va w1 = va_of(e, fb), w2 = va_of(e, fb2);
	ck_assert_uint_eq(w1.current_system_gpu_va, 0);
	ck_assert_uint_eq(w1.monitored_system_gpu_va, 0);
	ck_assert_uint_eq(w1.stride, 16);
	ck_assert_uint_eq(w2.current_gpu_va, w1.current_gpu_va + 16);

	struct nf_fence_va bad;
	FAILS(e, NF_EINVAL, nf_fence_gpu_va(e->rt, 0x1234, &bad, &e->err));
	FAILS(e, NF_EINVAL, nf_fence_gpu_va(e->rt, fb, NULL, &e->err));
	FAILS(e, NF_EINVAL, nf_fence_gpu_va(NULL, fb, &bad, &e->err));
	env_end(e);
}
END_TEST

/*
 * Spec: "Cross-adapter native fences" and "Instructing KMD to
 * update batches of values"): UpdateMonitoredValues is a native-fence DDI. A
 * cross-adapter fence opened on an adapter without native fences is a regular
 * monitored fence there: that adapter gets no UpdateMonitoredValues, while a
 * native adapter that opens the same fence gets its own MonitoredValue copy (0).
 */
START_TEST(test_no_monitored_values_on_legacy_open)
{
	struct env *e = &E;
	nf_handle g = 0, fold = 0, fnew = 0, ev = 0, ev2 = 0;

	env_config(e);
	env_start(e);
	uint32_t dg = adapter_new(e, "dGPU", NF_VIDSCH_NATIVE_GPU_FENCE);
	uint32_t old = adapter_new(e, "oldGPU", 0);
	uint32_t two = adapter_new(e, "secondGPU", NF_VIDSCH_NATIVE_GPU_FENCE);
	nf_handle qd = queue_new(e, dg, "dq");
	nf_handle fd = fence_new(e, dg, NF_FENCE_TYPE_DEFAULT, true, true, 0, 7);

	OK(e, nf_fence_global_handle(e->rt, fd, &g, &e->err));
	OK(e, nf_fence_open(e->rt, old, 7, g, &fold, &e->err));
	OK(e, nf_fence_open(e->rt, two, 7, g, &fnew, &e->err));
	/* CPU waiters on both openings, then the dGPU signals 23 from the GPU. */
	OK(e, nf_cpu_wait_async(e->rt, fold, 23, &ev, &e->err));
	OK(e, nf_cpu_wait_async(e->rt, fnew, 23, &ev2, &e->err));
	OK(e, nf_queue_signal(e->rt, qd, fd, 23, &e->err));
	OK(e, nf_runtime_advance(e->rt, 1 * MS, &e->err));
	OK(e, nf_event_wait(e->rt, ev, 0, &e->err));
	OK(e, nf_event_wait(e->rt, ev2, 0, &e->err));
	OK(e, nf_event_close(e->rt, ev, &e->err));
	OK(e, nf_event_close(e->rt, ev2, &e->err));
	OK(e, nf_fence_close(e->rt, fold, &e->err));
	OK(e, nf_runtime_finish(e->rt, &e->err));

	ck_assert_uint_eq(count_where(e, NF_EV_UPDATE_MONITORED_VALUES,
				      NFF_UPDATE_MONITORED_VALUES_adapter, old, 0), 0);
	long m = find_where(e, NF_EV_UPDATE_MONITORED_VALUES, NFF_UPDATE_MONITORED_VALUES_adapter,
			    two, 0);
	ck_assert_int_ge(m, 0);
	ck_assert_uint_eq(e->col.v[m].ev.f[NFF_UPDATE_MONITORED_VALUES_monitored_value], 0);
	/* The legacy opener still gets the propagated value (no NotificationOnly). */
	long u = find_where(e, NF_EV_UPDATE_CURRENT_VALUES, NFF_UPDATE_CURRENT_VALUES_adapter, old, 0);
	ck_assert_int_ge(u, 0);
	ck_assert_uint_eq(e->col.v[u].ev.f[NFF_UPDATE_CURRENT_VALUES_flags], 0);
	env_end(e);
}
END_TEST

/* An adapter with the given caps, payload, interrupt latency and log size. */
static uint32_t adapter_tuned(struct env *e, uint32_t caps, enum nf_interrupt_payload p,
			      uint64_t irq_latency_ns, uint32_t log_entries)
{
	struct nf_adapter_desc d;
	uint32_t a = 0;

	nf_adapter_desc_init(&d);
	d.name = "GPU";
	d.vidsch_caps = caps;
	d.interrupt_payload = p;
	d.interrupt_latency_ns = irq_latency_ns;
	d.log_entries = log_entries;
	OK(e, nf_adapter_create(e->rt, &d, &a, &e->err));
	return a;
}

#define US 1000ull
#define OPT_CAPS (NF_VIDSCH_NATIVE_GPU_FENCE | NF_VIDSCH_OPTIMIZED_NATIVE_FENCE_SIGNALED_INTERRUPT)

/*
 * Spec: "Example of optimized native fence signaled
 * interrupt"): HWQueueA signals F1 @ V1, F1 @ V2, F2 @ V3, F2 @ V3 (E1..E4) and
 * the interrupt names only HWQueueA; Dxgkrnl reads E1..E4 "and unblocks any
 * waiters waiting on those fences and values". Here V1 = 5, V2 = 6, V3 = 11,
 * with CPU waiters on F1 for 6 and on F2 for 11: E2 raises the interrupt, and
 * when the OS handles it (5 us later) E3 and E4 are in the log too, so the
 * one interrupt unblocks both waiters. _i = 1: a periodic read (every 10 us)
 * reads E1..E4 before the interrupt (100 us latency) is handled; the
 * interrupt's own read finds nothing new, and the OS still unblocks the
 * waiters of the fences read "since the last update".
 */
START_TEST(test_optimized_wakes_every_fence_read)
{
	struct env *e = &E;
	bool periodic = _i == 1;
	nf_handle ev1 = 0, ev2 = 0;

	env_config(e);
	if (periodic)
		e->cfg.log_read_interval_ns = 10 * US;
	env_start(e);
	uint32_t a = adapter_tuned(e, OPT_CAPS, NF_IRQ_FENCE_ARRAY, periodic ? 100 * US : 5 * US, 0);
	nf_handle qa = queue_new(e, a, "HWQueueA");
	nf_handle f1 = fence_new(e, a, NF_FENCE_TYPE_DEFAULT, false, false, 0, 3);
	nf_handle f2 = fence_new(e, a, NF_FENCE_TYPE_DEFAULT, false, false, 0, 3);

	OK(e, nf_cpu_wait_async(e->rt, f1, 6, &ev1, &e->err));
	OK(e, nf_cpu_wait_async(e->rt, f2, 11, &ev2, &e->err));
	size_t mark = e->col.n;
	OK(e, nf_queue_signal(e->rt, qa, f1, 5, &e->err));  /* E1 */
	OK(e, nf_queue_signal(e->rt, qa, f1, 6, &e->err));  /* E2: 6 > 5, interrupt */
	OK(e, nf_queue_signal(e->rt, qa, f2, 11, &e->err)); /* E3 */
	OK(e, nf_queue_signal(e->rt, qa, f2, 11, &e->err)); /* E4 */
	OK(e, nf_runtime_advance(e->rt, 1 * MS, &e->err));

	long i1 = find_where(e, NF_EV_FENCE_INTERRUPT, -1, 0, mark);
	ck_assert_int_ge(i1, 0);
	ck_assert_uint_eq(e->col.v[i1].ev.f[NFF_FENCE_INTERRUPT_hwqueue], qa);
	ck_assert_uint_eq(e->col.v[i1].ev.f[NFF_FENCE_INTERRUPT_waiters_woken], 2);
	long u1 = find_where(e, NF_EV_CPU_UNWAIT, NFF_CPU_UNWAIT_fence, f1, mark);
	long u2 = find_where(e, NF_EV_CPU_UNWAIT, NFF_CPU_UNWAIT_fence, f2, mark);
	ck_assert_int_ge(u1, 0);
	ck_assert_int_ge(u2, 0);
	ck_assert_int_lt(u1, i1);
	ck_assert_int_lt(u2, i1);
	/* Every later interrupt finds nobody left to wake. */
	ck_assert_uint_eq(count_where(e, NF_EV_CPU_UNWAIT, -1, 0, (size_t)i1), 0);
	/* The entries were read before the first interrupt was handled. */
	long r = find_where(e, NF_EV_LOG_READ, NFF_LOG_READ_hwqueue, qa, mark);
	ck_assert_int_ge(r, 0);
	ck_assert_uint_eq(e->col.v[r].ev.f[NFF_LOG_READ_entry_count], 4);
	if (periodic) {
		/* ... by a periodic read: no CPU_UNWAIT there, the interrupt does it. */
		ck_assert_int_lt(r, u1);
		ck_assert_uint_eq(count_where(e, NF_EV_LOG_READ, NFF_LOG_READ_hwqueue, qa, (size_t)r + 1) -
				  count_where(e, NF_EV_LOG_READ, NFF_LOG_READ_hwqueue, qa, (size_t)i1), 0);
	}
	OK(e, nf_event_wait(e->rt, ev1, 0, &e->err));
	OK(e, nf_event_wait(e->rt, ev2, 0, &e->err));
	OK(e, nf_event_close(e->rt, ev1, &e->err));
	OK(e, nf_event_close(e->rt, ev2, &e->err));
	OK(e, nf_runtime_finish(e->rt, &e->err));
	env_end(e);
}
END_TEST

/*
 * Spec: "Log buffer overrun is permitted": "If an overrun
 * occurred ... the OS scans all the fences and determines which waiters were
 * unblocked". Logs of 4 entries; a CPU waiter on F for 9; the queue signals
 * F = 9 (interrupt raised, handled 300 us later) and then G = 1..7 with no
 * waiter, which overwrites F's entry before the OS reads. The periodic read
 * (every 100 us) finds the overrun first: its fallback scan unblocks F's
 * waiter then, before the interrupt. _i: 0 optimized interrupt, 1 fence array.
 */
START_TEST(test_overrun_fallback_on_periodic_read)
{
	struct env *e = &E;
	bool optimized = _i == 0;
	nf_handle ev = 0;

	env_config(e);
	e->cfg.log_read_interval_ns = 100 * US;
	env_start(e);
	uint32_t a = adapter_tuned(e, optimized ? OPT_CAPS : NF_VIDSCH_NATIVE_GPU_FENCE,
				   NF_IRQ_FENCE_ARRAY, 300 * US, 4);
	nf_handle q = queue_new(e, a, "q");
	nf_handle f = fence_new(e, a, NF_FENCE_TYPE_DEFAULT, false, false, 0, 3);
	nf_handle g = fence_new(e, a, NF_FENCE_TYPE_DEFAULT, false, false, 0, 3);

	OK(e, nf_cpu_wait_async(e->rt, f, 9, &ev, &e->err));
	OK(e, nf_queue_signal(e->rt, q, f, 9, &e->err));
	for (uint64_t v = 1; v <= 7; v++)
		OK(e, nf_queue_signal(e->rt, q, g, v, &e->err));
	OK(e, nf_runtime_advance(e->rt, 1 * MS, &e->err));

	long o = find_where(e, NF_EV_LOG_OVERRUN, -1, 0, 0);
	ck_assert_int_ge(o, 0);
	ck_assert_uint_eq(e->col.v[o].ev.f[NFF_LOG_OVERRUN_lost], 4);
	long i = find_where(e, NF_EV_FENCE_INTERRUPT, -1, 0, 0);
	ck_assert_int_gt(i, o);
	long u = find_where(e, NF_EV_CPU_UNWAIT, NFF_CPU_UNWAIT_fence, f, 0);
	ck_assert_int_gt(u, o);
	ck_assert_int_lt(u, i);
	ck_assert_uint_eq(e->col.v[u].ev.f[UNWAIT_STATUS], 0);
	ck_assert_uint_eq(e->col.v[i].ev.f[NFF_FENCE_INTERRUPT_waiters_woken], 0);
	/* F's entry was among the lost ones: the read never named F. */
	ck_assert(!log_has_entry(e, q, NF_LOG_SIGNALS, NF_LOG_OP_SIGNAL_EXECUTED, 9, f));
	OK(e, nf_event_wait(e->rt, ev, 0, &e->err));
	OK(e, nf_event_close(e->rt, ev, &e->err));
	OK(e, nf_runtime_finish(e->rt, &e->err));
	env_end(e);
}
END_TEST

/*
 * D3DKMTCreateNativeFence: INTRA_GPU and the optimized
 * DEFAULT type are "not currently supported by the OS"; the OS announces them
 * with SupportIntraGpuFenceType / SupportOptimizedDefaultFenceType in
 * DXGKARGCB_FEATURE_NATIVEFENCE_CAPS_1). 24H2 defaults: INTRA_GPU creation
 * fails with STATUS_INVALID_PARAMETER (NF_EINVAL) and emits nothing; DEFAULT
 * keeps MonitoredValue in system memory. With the caps on: INTRA_GPU keeps both
 * values in VRAM, DEFAULT gets its MonitoredValue in VRAM (CurrentValue stays
 * in system memory, also for a cross-adapter fence).
 */
START_TEST(test_os_fence_type_caps)
{
	struct env *e = &E;
	struct nf_fence_desc intra = { NF_FENCE_TYPE_INTRA_GPU, false, false, 17, 4 };
	nf_handle f = 0;
	bool on = _i == 1;

	env_config(e);
	e->cfg.os_support_intra_gpu_fence_type = on;
	e->cfg.os_support_optimized_default_fence_type = on;
	env_start(e);
	uint32_t a = adapter_new(e, "GPU", NF_VIDSCH_NATIVE_GPU_FENCE);
	size_t before = e->col.n;
	nf_handle d = fence_new(e, a, NF_FENCE_TYPE_DEFAULT, false, false, 0, 4);
	nf_handle x = fence_new(e, a, NF_FENCE_TYPE_DEFAULT, true, true, 0, 4);
	struct nf_fence_va vd = va_of(e, d), vx = va_of(e, x);
	ck_assert(!vd.current_in_vram);
	ck_assert(!vx.current_in_vram);
	ck_assert(vd.monitored_in_vram == on);
	ck_assert(vx.monitored_in_vram == on);
	if (!on) {
		before = e->col.n;
		FAILS(e, NF_EINVAL, nf_fence_create(e->rt, a, &intra, &f, &e->err));
		ck_assert_ptr_nonnull(strstr(e->err.msg, "SupportIntraGpuFenceType"));
		ck_assert_uint_eq(f, 0);
		ck_assert_uint_eq(e->col.n, before);
	} else {
		OK(e, nf_fence_create(e->rt, a, &intra, &f, &e->err));
		struct nf_fence_va vi = va_of(e, f);
		ck_assert(vi.current_in_vram);
		ck_assert(vi.monitored_in_vram);
		ck_assert_uint_eq(current_of(e, f), 17);
	}
	(void)before;
	OK(e, nf_runtime_finish(e->rt, &e->err));
	env_end(e);
}
END_TEST

/*
 * Spec: "Native fence signaled interrupt": "By default,
 * when KMD raises this interrupt with a NULL pSignaledNativeFenceArray,
 * Dxgkrnl only scans all pending native fence waiters and doesn't scan legacy
 * monitored fence waiters"; hardware that cannot tell the two interrupts apart
 * raises only the native one with EvaluateLegacyMonitoredFences = 1, "which
 * indicates to the OS to scan all waiters". A legacy monitored fence L lives
 * on a native adapter beside a native fence N; CPU waiters on N for 1 and on L
 * for 3; the queue signals N = 1, then L = 3 200 ns later, both before the OS
 * handles N's interrupt (5 us). _i = 0 (null_array): that interrupt wakes N's
 * waiter only; L's waiter waits for its own monitored fence signaled
 * interrupt. _i = 1 (null_array_legacy): L's signal raises a native interrupt
 * too, and the first one, flagged, wakes both.
 */
START_TEST(test_evaluate_legacy_flag)
{
	struct env *e = &E;
	bool flag = _i == 1;
	struct nf_fence_desc d = { NF_FENCE_TYPE_DEFAULT, false, false, 0, 9 };
	nf_handle l = 0, gl = 0, evn = 0, evl = 0;

	env_config(e);
	env_start(e);
	uint32_t a = adapter_payload(e, NF_VIDSCH_NATIVE_GPU_FENCE,
				     flag ? NF_IRQ_NULL_ARRAY_LEGACY : NF_IRQ_NULL_ARRAY);
	nf_handle q = queue_new(e, a, "q");
	nf_handle n = fence_new(e, a, NF_FENCE_TYPE_DEFAULT, false, false, 0, 9);
	OK(e, nf_monitored_fence_create(e->rt, a, &d, &l, &e->err));
	OK(e, nf_fence_global_handle(e->rt, l, &gl, &e->err));
	long st = find_where(e, NF_EV_FENCE_START, NFF_FENCE_START_fence, l, 0);
	ck_assert_int_ge(st, 0);
	ck_assert_uint_eq(e->col.v[st].ev.f[NFF_FENCE_START_flags] & 4u, 0); /* not native */
	struct nf_fence_va va = va_of(e, l);
	ck_assert_uint_eq(va.monitored_gpu_va, 0); /* no MonitoredValue */

	OK(e, nf_cpu_wait_async(e->rt, n, 1, &evn, &e->err));
	OK(e, nf_cpu_wait_async(e->rt, l, 3, &evl, &e->err));
	size_t mark = e->col.n;
	OK(e, nf_queue_signal(e->rt, q, n, 1, &e->err));
	OK(e, nf_queue_signal(e->rt, q, l, 3, &e->err));
	OK(e, nf_runtime_advance(e->rt, 1 * MS, &e->err));

	long i1 = find_where(e, NF_EV_FENCE_INTERRUPT, -1, 0, mark);
	ck_assert_int_ge(i1, 0);
	const struct nf_event *irq = &e->col.v[i1].ev;
	ck_assert_uint_eq(irq->f[NFF_FENCE_INTERRUPT_fence_array_null], 1);
	ck_assert_uint_eq(irq->f[NFF_FENCE_INTERRUPT_evaluate_legacy], flag);
	long un = find_where(e, NF_EV_CPU_UNWAIT, NFF_CPU_UNWAIT_fence, n, mark);
	long ul = find_where(e, NF_EV_CPU_UNWAIT, NFF_CPU_UNWAIT_fence, l, mark);
	long sl = find_where(e, NF_EV_GPU_SIGNAL_LEGACY, NFF_GPU_SIGNAL_LEGACY_fence, l, mark);
	ck_assert_int_ge(un, 0);
	ck_assert_int_ge(ul, 0);
	ck_assert_int_ge(sl, 0);
	ck_assert_int_lt(sl, i1); /* L's value was there when the OS scanned */
	ck_assert_int_lt(un, i1);
	if (flag) {
		ck_assert_uint_eq(irq->f[NFF_FENCE_INTERRUPT_waiters_woken], 2);
		ck_assert_int_lt(ul, i1);
		ck_assert_uint_eq(count_where(e, NF_EV_FENCE_INTERRUPT, -1, 0, mark), 2);
	} else {
		ck_assert_uint_eq(irq->f[NFF_FENCE_INTERRUPT_waiters_woken], 1);
		ck_assert_int_gt(ul, i1);
		/* The monitored fence signaled interrupt is not a native one. */
		ck_assert_uint_eq(count_where(e, NF_EV_FENCE_INTERRUPT, -1, 0, mark), 1);
	}
	ck_assert_uint_eq(e->col.v[ul].ev.f[UNWAIT_STATUS], 0);
	ck_assert_uint_eq(current_of(e, l), 3);
	/* A legacy monitored fence has no MonitoredValue and no log entries. */
	ck_assert_uint_eq(count_where(e, NF_EV_UPDATE_MONITORED_VALUES,
				      NFF_UPDATE_MONITORED_VALUES_global_fence, gl, 0), 0);
	OK(e, nf_event_close(e->rt, evn, &e->err));
	OK(e, nf_event_close(e->rt, evl, &e->err));
	OK(e, nf_runtime_finish(e->rt, &e->err));
	ck_assert(!log_has_entry(e, q, NF_LOG_SIGNALS, NF_LOG_OP_SIGNAL_EXECUTED, 3, l));
	ck_assert(log_has_entry(e, q, NF_LOG_SIGNALS, NF_LOG_OP_SIGNAL_EXECUTED, 1, n));
	env_end(e);
}
END_TEST

/*
 * Spec: "Log buffer overrun is permitted": "when tracing is
 * enabled, the OS first increases the size of the log buffer to prevent
 * overruns in the first place". An adapter's log_entries is the size without
 * tracing; tracing raises it to tracing_log_entries and never lowers it.
 * Tracing at 96 entries: an adapter asking for 12 gets 96 (and 40 signals
 * overrun nothing), one asking for 200 keeps 200, one asking nothing gets 96.
 * Tracing off: 12 stays 12 (and the 40 signals overrun it by 28).
 */
START_TEST(test_tracing_enlarges_logs)
{
	struct env *e = &E;
	bool tracing = _i == 1;
	const uint32_t asked[3] = { 12, 200, 0 };
	const uint32_t want[2][3] = { { 12, 200, NF_LOG_DEFAULT_ENTRIES }, { 96, 200, 96 } };
	nf_handle q[3];

	env_config(e);
	e->cfg.tracing = tracing;
	e->cfg.tracing_log_entries = 96;
	env_start(e);
	for (int k = 0; k < 3; k++) {
		uint32_t a = adapter_tuned(e, NF_VIDSCH_NATIVE_GPU_FENCE, NF_IRQ_FENCE_ARRAY, 5 * US,
					   asked[k]);
		ck_assert_uint_eq(nf_log_entries_effective(&e->cfg, asked[k]), want[tracing][k]);
		q[k] = queue_new(e, a, "q");
		for (uint32_t t = NF_LOG_WAITS; t <= NF_LOG_SIGNALS; t++) {
			long sl = find_where(e, NF_EV_SET_LOG_BUFFER, NFF_SET_LOG_BUFFER_hwqueue, q[k], 0);
			while (sl >= 0 && e->col.v[sl].ev.f[NFF_SET_LOG_BUFFER_log_type] != t)
				sl = find_where(e, NF_EV_SET_LOG_BUFFER, NFF_SET_LOG_BUFFER_hwqueue, q[k],
						(size_t)sl + 1);
			ck_assert_int_ge(sl, 0);
			ck_assert_uint_eq(e->col.v[sl].ev.f[NFF_SET_LOG_BUFFER_capacity], want[tracing][k]);
		}
	}
	nf_handle f = fence_new(e, 0, NF_FENCE_TYPE_DEFAULT, false, false, 0, 2);
	for (uint64_t v = 1; v <= 40; v++)
		OK(e, nf_queue_signal(e->rt, q[0], f, v, &e->err));
	OK(e, nf_runtime_finish(e->rt, &e->err));
	if (tracing) {
		ck_assert_uint_eq(count_ev(e, NF_EV_LOG_OVERRUN), 0);
	} else {
		long o = find_where(e, NF_EV_LOG_OVERRUN, -1, 0, 0);
		ck_assert_int_ge(o, 0);
		ck_assert_uint_eq(e->col.v[o].ev.f[NFF_LOG_OVERRUN_lost], 40 - 12);
	}
	env_end(e);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("engine");
	TCase *tc = tcase_create("rules");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_monitored_value_41);
	tcase_add_test(tc, test_intra_gpu);
	tcase_add_test(tc, test_native_feature_disabled);
	tcase_add_test(tc, test_shared_handles);
	tcase_add_test(tc, test_close_releases_waiters);
	tcase_add_test(tc, test_bad_handles);
	tcase_add_test(tc, test_optimized_interrupt);
	tcase_add_loop_test(tc, test_irq_payload_nonoptimized, 0, 3);
	tcase_add_loop_test(tc, test_irq_payload_optimized, 0, 2);
	tcase_add_test(tc, test_legacy_monitored_fence_cpu_wait);
	tcase_add_test(tc, test_cross_adapter_native);
	tcase_add_test(tc, test_cross_adapter_legacy_wait);
	tcase_add_test(tc, test_cross_adapter_legacy_signal);
	tcase_add_test(tc, test_log_overrun);
	tcase_add_test(tc, test_log_recreate);
	tcase_add_test(tc, test_atomics32);
	tcase_add_test(tc, test_cpu_wait_timeout_and_async);
	tcase_add_test(tc, test_determinism);
	tcase_add_test(tc, test_fence_gpu_va);
	tcase_add_test(tc, test_no_monitored_values_on_legacy_open);
	tcase_add_loop_test(tc, test_optimized_wakes_every_fence_read, 0, 2);
	tcase_add_loop_test(tc, test_overrun_fallback_on_periodic_read, 0, 2);
	tcase_add_loop_test(tc, test_os_fence_type_caps, 0, 2);
	tcase_add_loop_test(tc, test_evaluate_legacy_flag, 0, 2);
	tcase_add_loop_test(tc, test_tracing_enlarges_logs, 0, 2);
	suite_add_tcase(s, tc);
	return nf_test_main(s);
}
